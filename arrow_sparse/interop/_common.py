"""Checks and helpers shared by the interop modules (no optional import here)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Mapping
from types import ModuleType
from typing import Any

import pyarrow as pa

from .. import _arrow
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged
from ..keyed import KeyedJagged


def loaded(name: str) -> ModuleType | None:
    """Return the module ``name`` if something already imported it, else None.

    An object can only be a pandas / Polars / torch object if that library is already
    imported, so a type check needs no import (and raises no ``ModuleNotFoundError``).
    """
    return sys.modules.get(name)


def type_name(x: Any) -> str:
    """``module.Class`` of ``x`` for error messages (just ``Class`` for builtins)."""
    cls = type(x)
    module = cls.__module__.partition(".")[0]
    return cls.__name__ if module == "builtins" else f"{module}.{cls.__name__}"


def torch_tensor(func: str, torch: Any, array: Any, what: str = "values") -> Any:
    """Share a numpy array with torch through DLPack (no copy); ``what`` names it in errors."""
    try:
        return torch.from_dlpack(array)
    except (BufferError, RuntimeError, TypeError) as exc:
        msg = f"{func}: {what} of dtype {array.dtype} cannot be shared with torch ({exc})"
        raise ArrowSparseTypeError(msg) from None


def check_label(func: str, arg: str, x: Any) -> Hashable:
    """Check a column label or name: anything hashable."""
    try:
        hash(x)
    except TypeError:
        msg = f"{func}: {arg} must be a hashable column label, got {type_name(x)}"
        raise ArrowSparseTypeError(msg) from None
    label: Hashable = x
    return label


def check_list_array(func: str, what: str, arr: pa.Array | pa.ChunkedArray) -> None:
    """Raise ``TypeError`` unless ``arr`` is an Arrow list / large_list / list_view array."""
    if not _arrow.is_list_type(arr.type):
        msg = f"{func}: {what} must hold lists, got Arrow type {arr.type}"
        raise ArrowSparseTypeError(msg)


def select_columns(func: str, labels: list[Hashable], column: Any,
                   weights: Any) -> tuple[list[Hashable], dict[Hashable, Hashable]]:
    """Resolve ``column=None | [labels]`` and ``weights={key: label}`` against ``labels``.

    Returns the key columns (in order) and the weights mapping. Every label must be
    present exactly once in ``labels``; ``None`` selects every column that is not a
    weights column.
    """
    if weights is None:
        wmap: dict[Hashable, Hashable] = {}
    elif isinstance(weights, Mapping):
        wmap = {check_label(func, "weights key", k): check_label(func, f"weights[{k!r}]", w)
                for k, w in weights.items()}
    else:
        msg = (f"{func}: weights must be a mapping {{key column: weights column}}, "
               f"got {type_name(weights)}")
        raise ArrowSparseTypeError(msg)
    if column is None:
        taken = set(wmap.values())
        keys = [label for label in labels if label not in taken]
    else:
        keys = [check_label(func, "column", c) for c in column]
    for i, key in enumerate(keys):
        if key in keys[:i]:
            msg = f"{func}: column {key!r} is selected twice"
            raise ArrowSparseValueError(msg)
    for key in wmap:
        if key not in keys:
            msg = f"{func}: weights names {key!r}, which is not a selected column"
            raise ArrowSparseValueError(msg)
    return keys, wmap


def keyed_from_arrow_columns(columns: dict[Hashable, pa.Array | pa.ChunkedArray],
                             weights: dict[Hashable, pa.Array | pa.ChunkedArray]) -> KeyedJagged:
    """Build a KeyedJagged keyed by the column labels (kept as they are, not made strings)."""
    return KeyedJagged.from_dict(columns, weights=weights or None)


def frame_source(func: str, data: Any,
                 name_given: bool) -> pa.Array | pa.Table | pa.RecordBatch:
    """Return what ``to_pandas`` / ``to_polars`` convert: a Jagged's Arrow array, or a table.

    A Jagged gives its list array (a Series); a KeyedJagged its table (a frame, one list
    column per key) and a Table or RecordBatch itself. ``name_given``: a name applies
    to a Series only.
    """
    if isinstance(data, Jagged):
        return data.to_arrow()
    if isinstance(data, KeyedJagged):
        table: pa.Table | pa.RecordBatch = data.to_arrow()
    elif isinstance(data, (pa.Table, pa.RecordBatch)):
        table = data
    else:
        msg = (f"{func}: data must be a Jagged, KeyedJagged, pyarrow.Table or "
               f"pyarrow.RecordBatch, got {type_name(data)}")
        raise ArrowSparseTypeError(msg)
    if name_given:
        msg = f"{func}: name applies to a Jagged (a Series) only, not to {type_name(data)}"
        raise ArrowSparseTypeError(msg)
    return table


def from_frame(func: str, library: str, data: Any, column: Any, weights: Any, *,
               series_type: type | None, frame_type: type | None,
               series_to_arrow: Callable[[str, Any, str], pa.Array | pa.ChunkedArray],
               column_to_arrow: Callable[[str, Any, Hashable], pa.Array | pa.ChunkedArray]
               ) -> Jagged | KeyedJagged:
    """``from_pandas`` / ``from_polars``: a Series or one column -> Jagged, columns -> KeyedJagged.

    ``series_type`` / ``frame_type`` are the library's classes (None when it is not
    imported: then ``data`` cannot be one of them); the two readers turn a Series, or a
    column of a frame, into an Arrow list array.
    """
    if series_type is not None and isinstance(data, series_type):
        if column is not None or weights is not None:
            msg = f"{func}: column and weights apply to a DataFrame, not to a Series"
            raise ArrowSparseValueError(msg)
        return Jagged._from_arrow(func, "data", series_to_arrow(func, data,
                                                                 f"series {data.name!r}"))
    if frame_type is None or not isinstance(data, frame_type):
        msg = f"{func}: data must be a {library} Series or DataFrame, got {type_name(data)}"
        raise ArrowSparseTypeError(msg)
    if column is not None and not isinstance(column, list):
        if weights is not None:
            msg = f"{func}: weights apply to several columns (a KeyedJagged), not to one"
            raise ArrowSparseValueError(msg)
        label = check_label(func, "column", column)
        return Jagged._from_arrow(func, "column", column_to_arrow(func, data, label))
    keys, wmap = select_columns(func, list(data.columns), column, weights)
    return keyed_from_arrow_columns({k: column_to_arrow(func, data, k) for k in keys},
                                    {k: column_to_arrow(func, data, w) for k, w in wmap.items()})
