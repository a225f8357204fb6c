"""Shared machinery of the feature transforms (private).

A column's scalar elements as a :class:`_Leaf` (numbers, or an Arrow string leaf read
from its offsets and data buffers), and the element-wise map that replaces the leaf
values of any list nesting while sharing the input's offsets and validity buffers.
Used by ``transforms.py`` and ``vocabulary.py``.

Device inputs (CuPy arrays, a :class:`~arrow_sparse.Jagged` on the device) hold numbers
only: strings live in Arrow's host buffers. Their leaves are CuPy arrays, the kernels
those of :func:`_kernel` for CuPy, and an element-wise map replaces the whole values
buffer of the Jagged (the values outside the rows' range too), so that it reads no
offsets back.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa

from .. import _arrow
from .. import _validate as v
from .._backend import array_module, device_checks, module_of
from ..errors import ArrowSparseTypeError
from ..jagged import Jagged


# ----------------------------------------------------------------------- leaves
class _Leaf:
    """The scalar elements of a column, at logical positions: numbers or Arrow strings."""

    __slots__ = ("kind", "desc", "values", "offsets", "data", "_mask", "_source")

    def __init__(self, kind: str, desc: str, *, values: Any = None, offsets: Any = None,
                 data: Any = None, mask: np.ndarray | None = None,
                 source: pa.Array | None = None) -> None:
        self.kind = kind          # "int", "float", "bool" or "bytes"
        self.desc = desc          # type name for messages
        self.values = values      # numbers: 1-D numpy
        self.offsets = offsets    # bytes: offsets (len + 1) and the data buffer
        self.data = data
        self._mask = mask
        self._source = source     # Arrow array whose validity is read on demand

    def validity(self) -> np.ndarray | None:
        if self._source is not None:
            return _arrow.validity_of(self._source)
        return self._mask


def _numpy_leaf(values: np.ndarray, mask: np.ndarray | None) -> _Leaf:
    """Wrap numpy (or CuPy) values as a leaf; N-D values are flattened (a mask repeats per row)."""
    xp = module_of(values)
    width = int(np.prod(values.shape[1:])) if values.ndim > 1 else 1
    flat = xp.ascontiguousarray(values).reshape(-1)
    if mask is not None and width != 1:
        mask = xp.repeat(mask, width)
    kind = {"i": "int", "u": "int", "f": "float", "b": "bool"}[values.dtype.kind]
    return _Leaf(kind, f"dtype {values.dtype}", values=flat, mask=mask)


def _arrow_leaf(func: str, a: pa.Array) -> tuple[_Leaf, pa.Array]:
    """Wrap a primitive or string Arrow array as a leaf (views are cast: one copy)."""
    t = a.type
    if pa.types.is_string_view(t):
        a = a.cast(pa.large_string())
    elif pa.types.is_binary_view(t):
        a = a.cast(pa.large_binary())
    t = a.type
    desc = f"Arrow type {t}"
    if _arrow.is_binary_type(t):
        offsets, data = _arrow.binary_buffers(func, "values", a)
        return _Leaf("bytes", desc, offsets=offsets, data=data, source=a), a
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        kind = "int" if pa.types.is_integer(t) else "float" if pa.types.is_floating(t) else "bool"
        if pa.types.is_float16(t):
            msg = f"{func}: values of Arrow type halffloat are not supported; cast to float32"
            raise ArrowSparseTypeError(msg)
        return _Leaf(kind, desc, values=_arrow.primitive_values(func, a), source=a), a
    hint = "; decode it first (pyarrow.compute.dictionary_decode)" \
        if pa.types.is_dictionary(t) else ""
    msg = f"{func}: values of Arrow type {t} are not supported{hint}"
    raise ArrowSparseTypeError(msg)


def _not_a_column(func: str, arg: str, x: Any, what: str) -> ArrowSparseTypeError:
    got = f"Arrow type {x.type}" if isinstance(x, (pa.Array, pa.ChunkedArray)) \
        else type(x).__name__
    return ArrowSparseTypeError(f"{func}: {arg} must be {what}, got {got}")


def _per_chunk(func: str, x: pa.ChunkedArray, one: Any) -> pa.ChunkedArray:
    """Apply ``one`` chunk by chunk; the result type comes from an empty chunk."""
    chunks = [one(c) for c in x.chunks]
    out_type = chunks[0].type if chunks else one(pa.array([], type=x.type)).type
    return pa.chunked_array(chunks, type=out_type)


# ------------------------------------------------------------ element-wise maps
class _ElementOp:
    """Computes int64 results for leaf positions ``[start, stop)``.

    ``out`` is a numpy or a CuPy array, like the leaf: ``compute`` picks its kernels
    with ``module_of(out)``.
    """

    keep_nulls = True

    def check(self, func: str, leaf: _Leaf) -> None:
        raise NotImplementedError

    def compute(self, leaf: _Leaf, start: int, stop: int, out: np.ndarray) -> None:
        raise NotImplementedError


def _map_elements(func: str, x: Any, op: _ElementOp) -> Any:
    back = _arrow.like_series(x)  # a Polars / pandas Series comes back as one
    return back(_map_elements_arrow(func, _arrow.as_arrow(x), op))


def _map_elements_arrow(func: str, x: Any, op: _ElementOp) -> Any:
    xp = array_module(func, values=x)
    if xp is not np:
        result = _map_device(func, x, op, xp)
        device_checks(func, xp)
        return result
    if isinstance(x, Jagged):
        return _map_jagged(func, x, op, 0, x.num_rows)
    if isinstance(x, pa.ChunkedArray):
        return _per_chunk(func, x, lambda c: _map_arrow(func, c, op, 0, len(c)))
    if isinstance(x, pa.Array):
        return _map_arrow(func, x, op, 0, len(x))
    if isinstance(x, np.ndarray) and x.dtype.kind in "OSU" or isinstance(x, str):
        msg = (f"{func}: values must be numeric numpy arrays; pass strings as an Arrow "
               "array (pa.array(...)), got " + (f"dtype {x.dtype}" if isinstance(x, np.ndarray)
                                              else "str"))
        raise ArrowSparseTypeError(msg)
    if not isinstance(x, (np.ndarray, list, tuple, range)):
        raise _not_a_column(func, "values", x, "an Arrow array, a Jagged or a numpy array")
    values = v.as_values_array(func, "values", x, min_ndim=0)
    leaf = _numpy_leaf(values.reshape(-1), None)
    op.check(func, leaf)
    out = _int64_buffer(values.size, 0)[1]
    op.compute(leaf, 0, values.size, out)
    return out.reshape(values.shape)


def _map_device(func: str, x: Any, op: _ElementOp, xp: ModuleType) -> Any:
    """Map a CuPy array or a Jagged on the device (nothing read back)."""
    if isinstance(x, Jagged):
        return _map_device_jagged(func, x, op, xp)
    values = v.as_values_array(func, "values", x, min_ndim=0, device=True)
    leaf = _numpy_leaf(values.reshape(-1), None)
    op.check(func, leaf)
    out = xp.empty(values.size, dtype=np.int64)
    op.compute(leaf, 0, values.size, out)
    return out.reshape(values.shape)


def _map_device_jagged(func: str, j: Jagged, op: _ElementOp, xp: ModuleType) -> Jagged:
    """Every leaf value of a device Jagged mapped; offsets and validity are shared."""
    if isinstance(j.values, Jagged):
        return Jagged._trusted(_map_device_jagged(func, j.values, op, xp), j.offsets,
                               j.validity)
    values = j.values
    leaf = _numpy_leaf(values, j.values_validity)
    op.check(func, leaf)
    out = xp.empty(values.size, dtype=np.int64)
    op.compute(leaf, 0, values.size, out)
    keep = j.values_validity if op.keep_nulls else None
    return Jagged._trusted(out.reshape(values.shape), j.offsets, j.validity, keep)


def _map_jagged(func: str, j: Jagged, op: _ElementOp, start: int, stop: int) -> Jagged:
    """Rows ``[start, stop)`` of ``j`` mapped (earlier rows' values are zeros)."""
    whole = start == 0 and stop == j.num_rows
    offsets = j.offsets if whole else j.offsets[:stop + 1]
    validity = j.validity if whole or j.validity is None else j.validity[:stop]
    lo, hi = int(j.offsets[start]), int(j.offsets[stop])
    if isinstance(j.values, Jagged):
        child = _map_jagged(func, j.values, op, lo, hi)
        return Jagged(child, offsets, validity, validate=False)
    values = j.values[:hi]
    leaf = _numpy_leaf(values, None if j.values_validity is None else j.values_validity[:hi])
    op.check(func, leaf)
    width = leaf.values.size // hi if hi else 1
    out = _int64_buffer(values.size, lo * width)[1].reshape(values.shape)
    op.compute(leaf, lo * width, hi * width, out.reshape(-1))
    keep = j.values_validity[:hi] if op.keep_nulls and j.values_validity is not None else None
    return Jagged(out, offsets, validity, values_validity=keep, validate=False)


def _map_arrow(func: str, a: pa.Array, op: _ElementOp, start: int, stop: int) -> pa.Array:
    """Map logical rows ``[start, stop)`` of ``a``.

    The result has length ``stop`` and shares ``a``'s offsets and validity buffers
    (same ``offset``).
    """
    t = a.type
    null_count = a.null_count if stop == len(a) else -1
    if _arrow.is_list_type(t):
        level = _arrow.list_level(func, "values", a)
        a, t, offs = level.array, level.array.type, level.offsets
        child = _map_arrow(func, level.child, op, int(offs[start]), int(offs[stop]))
        field = t.value_field.with_type(child.type)
        new_type = pa.large_list(field) if isinstance(t, pa.LargeListType) else pa.list_(field)
        buffers = a.buffers()[:2]
        if buffers[1] is None:
            buffers[1] = pa.py_buffer(np.zeros(a.offset + stop + 1, dtype=offs.dtype))
        return pa.Array.from_buffers(new_type, stop, buffers, null_count=null_count,
                                     offset=a.offset, children=[child])
    if isinstance(t, pa.FixedSizeListType):
        size = t.list_size
        child = _map_arrow(func, a.values, op, (a.offset + start) * size,
                           (a.offset + stop) * size)
        new_type = pa.list_(t.value_field.with_type(child.type), size)
        return pa.Array.from_buffers(new_type, stop, a.buffers()[:1], null_count=null_count,
                                     offset=a.offset, children=[child])
    if pa.types.is_nested(t):
        msg = f"{func}: values of Arrow type {t} are not supported; pass list columns"
        raise ArrowSparseTypeError(msg)
    leaf, a = _arrow_leaf(func, a)
    op.check(func, leaf)
    buffer, full = _int64_buffer(a.offset + stop, a.offset + start)
    op.compute(leaf, start, stop, full[a.offset:])
    validity = a.buffers()[0] if op.keep_nulls and a.null_count else None
    return pa.Array.from_buffers(pa.int64(), stop, [validity, buffer],
                                 null_count=-1 if validity is not None else 0, offset=a.offset)


def _int64_buffer(size: int, zeros: int) -> tuple[pa.Buffer, np.ndarray]:
    """Allocate ``size`` int64 (the first ``zeros`` zeroed): an Arrow buffer and its view.

    Allocated from Arrow's memory pool, which reuses freed memory: a pipeline that
    transforms batch after batch does not page-fault a fresh buffer each time.
    """
    buffer = pa.allocate_buffer(8 * size)
    view = np.frombuffer(buffer, dtype=np.int64)
    view[:zeros] = 0
    return buffer, view
