"""CUDA launchers of the fused sparse unsorted segment reductions (``sparse_unsorted.cu``).

Each launcher takes the array module ``xp``, then the parameters and the semantics of
its CPU twin in :mod:`arrow_sparse.kernels.cpu.sparse_unsorted`: atomics into an
accumulator (``gather_scatter_add`` / ``gather_scatter_extreme``), then
``gather_scatter_finish`` writes the output. Arrays are device arrays (CuPy), or numpy
arrays when the emulator stands in for the GPU in tests. For host arrays the position
of the first segment id or index out of range is found on the host before the launch
and returned, as the CPU kernels return it; device arrays return -1 and the kernels
record the position in the device error word.

Template axes: ``T`` the data type, ``A`` the accumulator (the C type of the CPU
kernel's ``zero``), ``U`` the storage of a max/min (``int`` for 8/16-bit data),
``Out`` the output type, ``I`` the index and segment id type.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from . import error_buffer
from ._launch import (
    DTYPE_TO_CTYPE,
    FLOAT_CTYPES,
    INDEX_CTYPES,
    VALUE_CTYPES,
    as_index,
    as_mask,
    back,
    into,
    launch,
    name_expression,
)

__all__ = ["gather_scatter_extreme", "gather_scatter_sum"]

#: No device-only launchers in this family.
DEVICE_ONLY: tuple[str, ...] = ()

_FAMILY = "sparse_unsorted"
_INTS = tuple(c for c in VALUE_CTYPES if c not in FLOAT_CTYPES)
_UNSIGNED = tuple(c for c in _INTS if c.startswith("unsigned"))
_LL, _ULL, _DBL = "long long", "unsigned long long", "double"
#: (T, A, Out) of sums and means: any T into double (float or double out); integers
#: into long long; unsigned integers into unsigned long long.
_SUM_TRIPLES = ([(t, _DBL, o) for t in VALUE_CTYPES for o in FLOAT_CTYPES]
                + [(t, _LL, _LL) for t in _INTS] + [(t, _ULL, _ULL) for t in _UNSIGNED])
#: Storage type of a max/min accumulator: 8/16-bit integers are widened to int.
_STORAGE = {t: ("int" if t in ("signed char", "short", "unsigned char", "unsigned short")
                else t) for t in VALUE_CTYPES}

NAME_EXPRESSIONS: list[str] = [
    *(name_expression("gather_scatter_add", t, a, i)
      for t, a in sorted({(t, a) for t, a, _ in _SUM_TRIPLES}) for i in INDEX_CTYPES),
    *(name_expression("gather_scatter_extreme", t, _STORAGE[t], i)
      for t in VALUE_CTYPES for i in INDEX_CTYPES),
    *(name_expression("gather_scatter_finish", a, o)
      for a, o in sorted({(a, o) for _, a, o in _SUM_TRIPLES}
                         | {(_STORAGE[t], t) for t in VALUE_CTYPES})),
]
_NAMES = frozenset(NAME_EXPRESSIONS)
_I32, _I64 = np.int32, np.int64
_U8 = np.dtype(np.uint8)


def _c(dtype: Any) -> str:
    dtype = np.dtype(dtype)
    return DTYPE_TO_CTYPE.get(_U8 if dtype.kind == "b" else dtype, str(dtype))


def _name(func: str, kernel: str, *dtypes: Any) -> str:
    """Name expression of ``kernel`` for ``dtypes``; ``NotImplementedError`` if none exists."""
    name = name_expression(kernel, *(_c(d) for d in dtypes))
    if name not in _NAMES:
        kinds = ", ".join(str(np.dtype(d)) for d in dtypes)
        msg = f"{func}: no cuda kernel for {kinds}"
        raise NotImplementedError(msg)
    return name


def _first_bad(indices: Any, imask: Any, ids: Any, num_rows: int, num_segments: int) -> int:
    """Host arrays: the first position whose segment id, or non-null index, is out of range."""
    bad = (ids < 0) | (ids >= num_segments)
    wrong = (indices < 0) | (indices >= num_rows)
    if imask is not None and imask.shape[0]:
        wrong &= imask.astype(bool)
    bad |= wrong
    return int(np.argmax(bad)) if bool(bad.any()) else -1


def _ids(xp: ModuleType, indices: Any, ids: Any) -> tuple[Any, Any]:
    """Return the indices and segment ids in one index type (the kernels take one ``I``)."""
    wide = indices.dtype != ids.dtype or indices.dtype not in (np.int32, np.int64)
    return as_index(xp, indices, int64=wide), as_index(xp, ids, int64=wide)


def _inputs(xp: ModuleType, data: Any, indices: Any, imask: Any, ids: Any,
            out: Any) -> tuple[Any, Any, Any, int]:
    """Convert what both launchers read: ``(indices, ids, table, first bad position)``.

    Indices and ids in one index type, the table C-contiguous (booleans as bytes), and
    the first host position out of range, or -1 (also for device arrays: the kernels
    check those as they read them).
    """
    indices, ids = _ids(xp, indices, ids)
    bad = (_first_bad(indices, imask, ids, data.shape[0], out.shape[0]) if xp is np
           else -1)
    table = xp.ascontiguousarray(data)
    return indices, ids, table.view(np.uint8) if table.dtype.kind == "b" else table, bad


def _finish(xp: ModuleType, acc: Any, cnt: Any, mean: bool, min_count: int, empty: Any,
            out: Any, counts: Any) -> None:
    target = into(xp, out, copy=False)
    name = _name("gather_scatter_finish", "gather_scatter_finish", acc.dtype, target.dtype)
    num_segments, width = out.shape[0], out.shape[1]
    empty = (_U8 if target.dtype.kind == "b" else target.dtype).type(empty)
    launch(_FAMILY, name, num_segments * width,
           (acc, cnt, _I32(bool(mean)), _I64(min_count), empty, _I64(num_segments),
            _I64(width), target))
    back(out, target)
    if counts is not None and counts.shape[0]:
        counts[...] = cnt


def gather_scatter_sum(xp: ModuleType, data: Any, indices: Any, imask: Any, ids: Any,
                       weights: Any, mean: bool, zero: Any, min_count: int, empty: Any,
                       out: Any, counts: Any) -> int:
    """``out[s] = sum(weights[i] * data[indices[i]] for ids[i] == s)`` (``mean``: / count)."""
    func = "gather_scatter_sum"
    indices, ids, table, bad = _inputs(xp, data, indices, imask, ids, out)
    if bad >= 0:
        return bad
    num_rows, width = data.shape
    num_segments = out.shape[0]
    acc_dtype = np.dtype(zero.dtype)
    name = _name(func, "gather_scatter_add", table.dtype, acc_dtype, indices.dtype)
    num = indices.shape[0]
    acc = xp.zeros(num_segments * width, dtype=acc_dtype)
    cnt = xp.zeros(num_segments, dtype=np.int64)
    if weights is None or weights.shape[0] == 0:
        w, weighted = xp.empty(0, dtype=acc_dtype), _I32(0)
    else:
        w, weighted = xp.ascontiguousarray(weights, dtype=acc_dtype), _I32(1)
    mask, masked = as_mask(xp, imask)
    launch(_FAMILY, name, num * width,
           (table, indices, mask, masked, ids, w, weighted, _I64(num), _I64(width),
            _I64(num_rows), _I64(num_segments), acc, cnt, _I32(1), error_buffer()))
    _finish(xp, acc, cnt, mean, min_count, empty, out, counts)
    return -1


def gather_scatter_extreme(xp: ModuleType, data: Any, indices: Any, imask: Any, ids: Any,
                           is_max: bool, init: Any, min_count: int, empty: Any, out: Any,
                           counts: Any) -> int:
    """``out[s] = max(data[indices[i]] for ids[i] == s)`` (or min), NaN propagating."""
    func = "gather_scatter_extreme"
    indices, ids, table, bad = _inputs(xp, data, indices, imask, ids, out)
    if bad >= 0:
        return bad
    num_rows, width = data.shape
    num_segments = out.shape[0]
    wide = np.dtype(np.int32) if _STORAGE.get(_c(table.dtype)) == "int" else table.dtype
    name = _name(func, func, table.dtype, wide, indices.dtype)
    num = indices.shape[0]
    acc = xp.full(num_segments * width, init, dtype=wide)
    cnt = xp.zeros(num_segments, dtype=np.int64)
    mask, masked = as_mask(xp, imask)
    launch(_FAMILY, name, num * width,
           (table, indices, mask, masked, ids, _I32(bool(is_max)), _I64(num), _I64(width),
            _I64(num_rows), _I64(num_segments), acc, cnt, error_buffer()))
    _finish(xp, acc, cnt, False, min_count, empty, out, counts)
    return -1
