"""Row selection on Arrow list arrays whose elements a :class:`Jagged` cannot hold.

Strings, binary and other non-numeric lists (``list<string>``, ``list<binary>``,
``list<list<string>>``, ...) move through the Arrow offsets: the new rows' offsets
are computed with numpy, the element ids they cover with the same kernel the numeric
path uses, and the child array is gathered with ``pyarrow.Array.take``, which works for
every Arrow type. Private: the public functions live in :mod:`arrow_sparse.elementwise`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _arrow
from .. import _validate as v
from .._backend import get_kernel
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ._args import _INT32_MAX, _is_list_array

#: Forms of input the take path answers in (as ``_as_jagged``'s kinds).
ARROW_KINDS = ("arrow", "chunked", "arrow_values")


def _leaf_type(t: pa.DataType) -> pa.DataType:
    while _arrow.is_list_type(t) or isinstance(t, pa.FixedSizeListType):
        t = t.value_type
    return t


def _is_number_type(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_null(t))


def non_numeric(x: Any) -> bool:
    """Whether ``x`` is an Arrow array (or ChunkedArray) of anything but numbers."""
    return isinstance(x, (pa.Array, pa.ChunkedArray)) and not _is_number_type(x.type)


def take_only(data: Any, offsets: Any = None) -> bool:
    """Whether ``data`` holds non-numeric Arrow elements (rows then move by ``take``).

    An Arrow list array (or ChunkedArray of lists) whose leaf type is not a number, or
    a non-numeric, non-list Arrow array given with ``offsets=``.
    """
    if offsets is None:
        return _is_list_array(data) and not _is_number_type(_leaf_type(data.type))
    return non_numeric(data) and not _is_list_array(data)


def _plain(func: str, arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One checked ``list``/``large_list`` array: chunks joined, list views copied to lists.

    Every level is checked, strings included: ``pyarrow.Array.take`` and
    ``pyarrow.compute`` read through the inner offsets, and crashed on string offsets
    that go backwards.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = _arrow.as_one_array(arr)
    _arrow.check_nested(func, "data", arr)
    return _arrow.list_level(func, "data", arr).array


def as_list_array(func: str, data: Any, offsets: Any) -> tuple[pa.Array, str]:
    """Read ``data`` (see :func:`take_only`) as one list array; give the form to answer in."""
    if offsets is None:
        kind = "chunked" if isinstance(data, pa.ChunkedArray) else "arrow"
        return _plain(func, data), kind
    values = _arrow.as_one_array(data) if isinstance(data, pa.ChunkedArray) else data
    _arrow.check_nested(func, "data", values)
    offs = v.check_offsets(func, "offsets", offsets, len(values))
    cls = pa.LargeListArray if offs.dtype == np.int64 else pa.ListArray
    return cls.from_arrays(pa.array(offs), values), "arrow_values"


def finish(arr: pa.Array, kind: str) -> Any:
    """Answer in the form of the input: an Arrow list array, one chunk, or values + offsets."""
    if kind == "chunked":
        return pa.chunked_array([arr])
    if kind == "arrow_values":
        return arr.values, pa.array(_arrow.offsets_view(arr))
    return arr


def parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """Return the offsets (a view, ``len + 1`` long) and row validity of a list array."""
    return _arrow.offsets_view(arr), _arrow.validity_of(arr)


def _build(like: pa.Array, offsets: np.ndarray, child: pa.Array,
           validity: np.ndarray | None) -> pa.Array:
    """Build a list array of ``like``'s kind (list or large_list) from new parts."""
    large = isinstance(like.type, pa.LargeListType)
    cls = pa.LargeListArray if large else pa.ListArray
    offs = pa.array(offsets.astype(np.int64 if large else np.int32, copy=False))
    mask = None if validity is None or validity.all() else pa.array(~validity)
    list_type = (pa.large_list if large else pa.list_)(like.type.value_field.with_type(child.type))
    return cls.from_arrays(offs, child, type=list_type, mask=mask)


def take_ranges(func: str, arr: pa.Array, starts: np.ndarray, lengths: np.ndarray,
                validity: np.ndarray | None) -> pa.Array:
    """Row ``i`` of the result: elements ``[starts[i], starts[i] + lengths[i])`` of ``arr``."""
    out_offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    total = int(out_offsets[-1])
    if isinstance(arr.type, pa.ListType) and total > _INT32_MAX:
        msg = (f"{func}: the result holds {total} elements, too many for int32 offsets "
               "(Arrow list); use large_list (int64 offsets)")
        raise ArrowSparseValueError(msg)
    elements = get_kernel("elementwise", "ranges_to_indices")(
        starts.astype(np.int64, copy=False), out_offsets)
    child = arr.values.take(pa.array(elements))
    return _build(arr, out_offsets, child, validity)


def unique(func: str, arr: pa.Array) -> pa.Array:
    """Each innermost row's distinct non-null elements, ascending (Arrow's sort order)."""
    offsets, validity = parts(arr)
    lo, hi = int(offsets[0]), int(offsets[-1])
    child = arr.values.slice(lo, hi - lo)
    rebased = offsets - offsets[0]
    if _arrow.is_list_type(child.type):  # nested: the innermost lists
        return _build(arr, rebased, unique(func, _plain(func, child)), validity)
    if isinstance(child.type, pa.FixedSizeListType) or not _orderable(child.type):
        msg = f"{func}: rows must hold scalars, got Arrow elements of type {child.type}"
        raise ArrowSparseTypeError(msg)
    rows = np.repeat(np.arange(len(arr)), np.diff(rebased))
    keep = np.asarray(child.is_valid())
    if validity is not None:
        keep &= validity[rows]
    picked = np.flatnonzero(keep)
    values, rows = child.take(pa.array(picked)), rows[picked]
    order = pc.sort_indices(pa.table({"row": rows, "value": values}),
                            sort_keys=[("row", "ascending"), ("value", "ascending")])
    values, rows = values.take(order), rows[np.asarray(order)]
    first = np.ones(len(rows), dtype=bool)
    if len(rows) > 1:
        same = np.asarray(pc.equal(values.slice(1), values.slice(0, len(values) - 1)))
        first[1:] = (rows[1:] != rows[:-1]) | ~same
    counts = np.bincount(rows[first], minlength=len(arr))
    new_offsets = np.zeros(len(arr) + 1, dtype=np.int64)
    np.cumsum(counts, out=new_offsets[1:])
    return _build(arr, new_offsets, values.filter(pa.array(first)), validity)


def _orderable(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or pa.types.is_string_view(t) or pa.types.is_binary_view(t)
            or pa.types.is_temporal(t) or pa.types.is_decimal(t) or _is_number_type(t))


def repeat(func: str, x: Any, like: pa.Array) -> pa.Array:
    """Every element of row ``r`` of ``like`` (down to the leaves) replaced by ``x[r]``.

    ``x`` is any Arrow array (or 1-D numpy) with one entry per row; the result has
    ``like``'s rows, levels and validity with ``x``'s type at the leaves.
    """
    if isinstance(x, pa.ChunkedArray):
        x = _arrow.as_one_array(x)
    if not isinstance(x, pa.Array):
        arr = v.as_values_array(func, "x", x)
        if arr.ndim != 1:
            msg = (f"{func}: x must hold one value per row (1-D) when like holds "
                   f"non-numeric elements, got shape {arr.shape}")
            raise ArrowSparseValueError(msg)
        x = pa.array(arr)
    if len(x) != len(like):
        msg = f"{func}: x has {len(x)} rows but like has {len(like)}"
        raise ArrowSparseValueError(msg)
    levels = []
    node, comp = like, None
    while _arrow.is_list_type(node.type):
        node = _plain(func, node)
        offsets, validity = parts(node)
        levels.append((node, offsets - offsets[0], validity))
        comp = (offsets if comp is None else offsets[comp]) - offsets[0]
        node = node.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    assert comp is not None
    rows = np.repeat(np.arange(len(like)), np.diff(comp))
    child = x.take(pa.array(rows))
    for level, offsets, validity in reversed(levels):
        child = _build(level, offsets, child, validity)
    return child
