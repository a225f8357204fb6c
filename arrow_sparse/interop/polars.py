"""Polars interop: ``to_polars`` / ``from_polars`` through Arrow's buffers.

Polars stores every list with 64-bit offsets (Arrow ``large_list``) and imports and
exports Arrow memory without copying it where the layouts agree. So values move
between a :class:`~arrow_sparse.Jagged` and a Polars ``List`` column without a copy;
only int32 offsets (Arrow ``list``) are widened to int64 once, on the way in.
Polars is imported on first use (``ModuleNotFoundError`` with an install hint when it
is missing); importing this module does not import it.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pyarrow as pa

from .._optional import import_optional
from ..errors import ArrowSparseKeyError, ArrowSparseTypeError
from ..jagged import Jagged
from ..keyed import KeyedJagged
from ._common import (
    check_list_array,
    from_frame,
    loaded,
    type_name,
)

__all__ = ["from_polars", "to_polars"]


def __dir__() -> list[str]:
    """List the public names (``__all__``), not the names the module imports."""
    return sorted(__all__)


def to_polars(data: Jagged | KeyedJagged | pa.Table | pa.RecordBatch, *,
              name: str = "") -> Any:
    """Convert to a Polars Series (``List``) or DataFrame through Arrow.

    Parameters
    ----------
    data
        A :class:`~arrow_sparse.Jagged` (-> Series), a
        :class:`~arrow_sparse.KeyedJagged` (-> DataFrame, one list column per key), or
        a ``pyarrow.Table`` / ``RecordBatch`` (-> DataFrame of all its columns).
    name
        Name of the Series made from a Jagged (a str). Not allowed for the others.

    Returns
    -------
    polars.Series or polars.DataFrame
        ``List(T)`` columns (``List(Array(T, D))`` for ``[N, D]`` values, nested
        ``List`` for nested Jaggeds). A KeyedJagged's columns are named as
        :meth:`KeyedJagged.to_arrow` names them (``str(key)``, then
        ``str(key) + "_weights"``). Chunks of a Table are kept as Polars chunks
        (``rechunk=False``: no copy; call ``rechunk()`` yourself if you want one).

    Raises
    ------
    TypeError
        Another kind of input, or a ``name`` that is not a str / a ``name`` for a frame.
    ModuleNotFoundError
        Polars is not installed.

    See Also
    --------
    from_polars : The inverse.
    Jagged.to_arrow, KeyedJagged.to_arrow : The Arrow arrays Polars imports.

    Notes
    -----
    The values buffer is shared, not copied: Polars wraps the Arrow buffers of
    :meth:`Jagged.to_arrow`. int64 offsets are shared too; int32 offsets are widened
    to int64 (one copy of ``rows + 1`` offsets, made by Polars, since every Polars
    list is a ``large_list``). Booleans are packed into bits (a copy). Null rows and
    null elements stay null.

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> s = asp.to_polars(j, name="ids")
    >>> s.dtype
    List(Int64)
    >>> s.to_list()
    [[1, 2, 3], [2, 4, 6, 7], None, [3, 6]]
    >>> kj = asp.KeyedJagged.from_dict({"a": [[1, 2], None], "b": [[3], [4, 5]]})
    >>> asp.to_polars(kj).columns
    ['a', 'b']
    """
    func = "to_polars"
    if not isinstance(name, str):
        msg = f"{func}: name must be a str, got {type_name(name)}"
        raise ArrowSparseTypeError(msg)
    if isinstance(data, Jagged):
        arr = data.to_arrow()
        pl = import_optional("polars", "polars")
        return pl.from_arrow(arr, rechunk=False).alias(name)
    if isinstance(data, KeyedJagged):
        table: pa.Table | pa.RecordBatch = data.to_arrow()
    elif isinstance(data, (pa.Table, pa.RecordBatch)):
        table = data
    else:
        msg = (f"{func}: data must be a Jagged, KeyedJagged, pyarrow.Table or "
               f"pyarrow.RecordBatch, got {type_name(data)}")
        raise ArrowSparseTypeError(msg)
    if name != "":
        msg = f"{func}: name applies to a Jagged (a Series) only, not to {type_name(data)}"
        raise ArrowSparseTypeError(msg)
    pl = import_optional("polars", "polars")
    return pl.from_arrow(table, rechunk=False)


def from_polars(data: Any, column: Any = None, *,
                weights: Any = None) -> Jagged | KeyedJagged:
    """Read a Polars list column as a Jagged, or list columns as a KeyedJagged.

    Parameters
    ----------
    data
        A ``polars.Series`` or ``polars.DataFrame`` of ``List`` columns of numbers.
    column
        For a DataFrame: one column name (-> a Jagged), a list of names (-> a
        KeyedJagged with those keys, in that order), or None (-> a KeyedJagged of every
        column except the weights columns). Must be None for a Series.
    weights
        For a KeyedJagged: ``{key column: weights column}``, the weights columns holding
        one number per value (see :meth:`KeyedJagged.from_dict`).

    Returns
    -------
    Jagged or KeyedJagged
        A Series (or one column) gives a Jagged with int64 offsets (Polars lists are
        ``large_list``); several columns give a KeyedJagged keyed by column name.

    Raises
    ------
    TypeError
        Not a Polars Series / DataFrame, a column that is not a ``List`` of numbers
        (``Array``, strings, ...), or a name that is not hashable.
    KeyError
        A name that is not a column (also an ``IndexError``, as elsewhere).
    ValueError
        A name selected twice, ``column`` / ``weights`` given for a Series, or weights
        for a key that is not selected.

    See Also
    --------
    to_polars : The inverse.
    Jagged.from_arrow, KeyedJagged.from_dict : What the Arrow columns go through.

    Notes
    -----
    A one-chunk column is read without a copy: ``Series.to_arrow()`` exports Polars'
    own buffers and :meth:`Jagged.from_arrow` wraps them (values and int64 offsets).
    A column with several chunks is rechunked by Polars first (one copy; call
    ``rechunk()`` beforehand to choose when). A KeyedJagged gathers the values of its
    keys into one key-major buffer (a copy). Null rows stay null rows (a Jagged's
    ``validity``; in a KeyedJagged, empty rows marked in ``validity``).

    Examples
    --------
    >>> import polars as pl
    >>> s = pl.Series("ids", [[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> asp.from_polars(s)
    Jagged([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]], dtype=int64, offsets=int64)
    >>> df = pl.DataFrame({"ids": [[1, 2], [3]], "scores": [[0.5, 1.0], [2.0]]})
    >>> asp.from_polars(df, ["ids"], weights={"ids": "scores"}).weights
    array([0.5, 1. , 2. ])
    """
    pl = loaded("polars")
    return from_frame("from_polars", "polars", data, column, weights,
                      series_type=None if pl is None else pl.Series,
                      frame_type=None if pl is None else pl.DataFrame,
                      series_to_arrow=_series_to_arrow, column_to_arrow=_column_to_arrow)


def _column_to_arrow(func: str, df: Any, name: Hashable) -> pa.Array:
    """Read column ``name`` of a Polars DataFrame as an Arrow list array."""
    if not isinstance(name, str) or name not in df.columns:
        msg = f"{func}: {name!r} is not a column (columns: {df.columns!r})"
        raise ArrowSparseKeyError(msg)
    return _series_to_arrow(func, df.get_column(name), f"column {name!r}")


def _series_to_arrow(func: str, series: Any, what: str) -> pa.Array:
    """Export a Polars Series of lists to Arrow (Polars' own buffers; several chunks: one copy)."""
    arr = series.to_arrow()
    check_list_array(func, what, arr)
    return arr
