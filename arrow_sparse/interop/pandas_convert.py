"""pandas conversions: list columns as ``pd.ArrowDtype``, never Python objects.

Kept apart from :mod:`arrow_sparse.interop.pandas` so that ``arrow_sparse`` can export
:func:`to_pandas` / :func:`from_pandas` without importing pandas (or registering the
``sparse_lists`` accessors, which importing :mod:`arrow_sparse.interop.pandas` does).
pandas is imported on the first call.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import pyarrow as pa

from .._optional import import_optional
from ..errors import ArrowSparseKeyError, ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged
from ..keyed import KeyedJagged
from ._common import (
    check_label,
    check_list_array,
    frame_source,
    from_frame,
    loaded,
)

__all__ = ["from_pandas", "to_pandas"]


def __dir__() -> list[str]:
    """List the public names (``__all__``), not the names the module imports."""
    return sorted(__all__)


def to_pandas(data: Jagged | KeyedJagged | pa.Table | pa.RecordBatch, *,
              name: Hashable = None) -> Any:
    """Convert to a pandas Series or DataFrame whose columns are ``pd.ArrowDtype``.

    Parameters
    ----------
    data
        A :class:`~arrow_sparse.Jagged` (-> Series), a
        :class:`~arrow_sparse.KeyedJagged` (-> DataFrame, one list column per key), or
        a ``pyarrow.Table`` / ``RecordBatch`` (-> DataFrame of all its columns).
    name
        Name of the Series made from a Jagged. Not allowed for the other inputs.

    Returns
    -------
    pandas.Series or pandas.DataFrame
        List columns have dtype ``pd.ArrowDtype(list<T>)`` (``large_list<T>`` for
        int64 offsets): the Arrow arrays themselves, not Python lists. A KeyedJagged's
        columns are named and ordered as :meth:`KeyedJagged.to_arrow` names them
        (``str(key)``, then ``str(key) + "_weights"`` when it has weights). The index
        is a ``RangeIndex`` (or the index a Table's pandas metadata records).

    Raises
    ------
    TypeError
        Another kind of input, or an unhashable ``name`` / a ``name`` for a frame.
    ModuleNotFoundError
        pandas is not installed.

    See Also
    --------
    from_pandas : The inverse.
    Jagged.to_arrow, KeyedJagged.to_arrow : The Arrow arrays the columns wrap.

    Notes
    -----
    Zero-copy: the Series / columns wrap the Arrow buffers of
    :meth:`Jagged.to_arrow` (the Jagged's own values and offsets), so no value is
    copied; a KeyedJagged's offsets are rebuilt per key, as ``to_arrow`` does.
    Booleans are packed into bits (a copy), as in Arrow. Null rows stay null (``<NA>``)
    and null elements stay null elements.

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> s = asp.to_pandas(j, name="ids")
    >>> s
    0      [1 2 3]
    1    [2 4 6 7]
    2         <NA>
    3        [3 6]
    Name: ids, dtype: list<item: int64>[pyarrow]
    >>> kj = asp.KeyedJagged.from_dict({"a": [[1, 2], None], "b": [[3], [4, 5]]})
    >>> asp.to_pandas(kj).dtypes
    a    list<item: int64>[pyarrow]
    b    list<item: int64>[pyarrow]
    dtype: object
    """
    func = "to_pandas"
    if isinstance(data, Jagged):
        name = check_label(func, "name", name)
    source = frame_source(func, data, not isinstance(data, Jagged) and name is not None)
    pd = import_optional("pandas", "pandas")
    if isinstance(source, pa.Array):
        return pd.Series(pd.arrays.ArrowExtensionArray(source), name=name, copy=False)
    return source.to_pandas(types_mapper=pd.ArrowDtype)


def from_pandas(data: Any, column: Any = None, *,
                weights: Any = None) -> Jagged | KeyedJagged:
    """Read a pandas list column as a Jagged, or list columns as a KeyedJagged.

    Parameters
    ----------
    data
        A ``pandas.Series`` or ``pandas.DataFrame`` of lists: ``pd.ArrowDtype`` list
        columns (zero-copy) or object columns holding lists / numpy arrays (one
        conversion, a copy).
    column
        For a DataFrame: one column label (-> a Jagged), a list of labels (-> a
        KeyedJagged with those keys, in that order), or None (-> a KeyedJagged of every
        column except the weights columns). Must be None for a Series.
    weights
        For a KeyedJagged: ``{key column: weights column}``, the weights columns holding
        one number per value (see :meth:`KeyedJagged.from_dict`).

    Returns
    -------
    Jagged or KeyedJagged
        A Series (or a single column) gives a Jagged; several columns a KeyedJagged
        whose keys are the column labels, unchanged. Rows follow the frame's
        positional order; the index is not kept.

    Raises
    ------
    TypeError
        Not a Series / DataFrame, a column that does not hold lists of numbers, or an
        unhashable label.
    KeyError
        A label that is not a column (also an ``IndexError``, as elsewhere).
    ValueError
        A label that names several columns or is selected twice, ``column`` /
        ``weights`` given for a Series, or weights for a key that is not selected.

    See Also
    --------
    to_pandas : The inverse.
    Jagged.from_arrow, KeyedJagged.from_dict : What the Arrow columns go through.

    Notes
    -----
    A ``pd.ArrowDtype`` column is an Arrow array already: its buffers are wrapped
    with no copy (one chunk; several chunks are concatenated once). An object column
    of Python lists is converted once with ``pyarrow.array(series, from_pandas=True)``
    (``None`` and ``NaN`` become null rows): a copy, with no Python-level loop of ours.
    A KeyedJagged gathers the values of its keys into one key-major buffer (a copy,
    as :meth:`KeyedJagged.from_dict` does). Null rows stay null rows (a Jagged's
    ``validity``; in a KeyedJagged, empty rows marked in ``validity``).

    Examples
    --------
    >>> import pandas as pd
    >>> s = pd.Series(pd.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]],
    ...                        dtype=pd.ArrowDtype(pa.list_(pa.int64()))))
    >>> asp.from_pandas(s)
    Jagged([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]], dtype=int64, offsets=int32)
    >>> df = pd.DataFrame({"ids": [[1, 2], [3]], "scores": [[0.5, 1.0], [2.0]]})
    >>> asp.from_pandas(df, "ids")
    Jagged([[1, 2], [3]], dtype=int64, offsets=int32)
    >>> asp.from_pandas(df, ["ids"], weights={"ids": "scores"}).weights
    array([0.5, 1. , 2. ])
    """
    pd = loaded("pandas")
    return from_frame("from_pandas", "pandas", data, column, weights,
                      series_type=None if pd is None else pd.Series,
                      frame_type=None if pd is None else pd.DataFrame,
                      series_to_arrow=_series_to_arrow, column_to_arrow=_column_to_arrow)


def _column_to_arrow(func: str, df: Any, label: Hashable) -> pa.Array | pa.ChunkedArray:
    """Column ``label`` of ``df`` as an Arrow list array (zero-copy for ArrowDtype)."""
    try:
        loc = df.columns.get_loc(label)
    except (KeyError, TypeError):  # TypeError: e.g. a label of the wrong type for a typed Index
        msg = f"{func}: {label!r} is not a column (columns: {list(df.columns)!r})"
        raise ArrowSparseKeyError(msg) from None
    if not isinstance(loc, int):
        msg = f"{func}: the label {label!r} names several columns; rename them first"
        raise ArrowSparseValueError(msg)
    return _series_to_arrow(func, df.iloc[:, loc], f"column {label!r}")


def _series_to_arrow(func: str, series: Any, what: str) -> pa.Array | pa.ChunkedArray:
    """Read a Series of lists as Arrow: its own array for ArrowDtype, else one copy."""
    pd = import_optional("pandas", "pandas")
    dtype = series.dtype
    if not isinstance(dtype, pd.ArrowDtype) and dtype != np.dtype(object):
        msg = (f"{func}: {what} has dtype {dtype}; expected lists "
               "(a pd.ArrowDtype list column, or an object column of lists)")
        raise ArrowSparseTypeError(msg)
    try:
        arr = pa.array(series, from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        msg = f"{func}: {what} could not be read as lists ({exc})"
        raise ArrowSparseTypeError(msg) from None
    check_list_array(func, what, arr)
    return arr
