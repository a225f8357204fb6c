"""CUDA launchers of the segment kernels (``segment.cu``).

Each launcher has the signature and the semantics of its CPU twin in
:mod:`arrow_sparse.kernels.cpu.segment`: it picks the template instantiation from the
dtypes, sizes the grid and packs the arguments with explicit C types. Arrays are
device arrays (CuPy), or numpy arrays when the emulator stands in for the GPU in tests.

Template axes: ``T`` the values (table) type, ``A`` the accumulator (the C type of the
CPU kernel's ``zero``: ``double``, ``long long`` or ``unsigned long long``), ``Out`` the
output type, ``O`` the offsets type and ``I`` the ids type. Only the ``(T, A, Out)``
combinations :mod:`arrow_sparse.segment` can produce are instantiated. Bool arrays are
passed as ``uint8``; weights are converted to ``A`` here (exactly the CPU kernel's
``zero + w``); ids of other integer types are widened to int64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._backend import array_module
from . import load_module
from ._launch import (
    DTYPE_TO_CTYPE,
    INDEX_CTYPES,
    VALUE_CTYPES,
    grid_1d,
    name_expression,
    name_expressions,
)

__all__ = ["gather_reduce", "scatter_assign", "scatter_extreme", "scatter_sum",
           "scatter_weighted_sum", "sorted_arg_extreme", "sorted_extreme",
           "sorted_ids_to_offsets", "sorted_logsumexp", "sorted_prod", "sorted_sum"]

_FLOATS = ("float", "double")
_INTS = tuple(c for c in VALUE_CTYPES if c not in _FLOATS)
_UNSIGNED = tuple(c for c in _INTS if c.startswith("unsigned"))
_LL, _ULL, _DBL = "long long", "unsigned long long", "double"

#: (T, A, Out) of sums and means, plain or weighted: any T into double (float or double
#: out); integers into long long; unsigned integers into unsigned long long.
_SUM_TRIPLES = ([(t, _DBL, o) for t in VALUE_CTYPES for o in _FLOATS]
                + [(t, _LL, _LL) for t in _INTS]
                + [(t, _ULL, _ULL) for t in _UNSIGNED])
#: (T, A, Out) of products: the output dtype of a sum of T, unweighted.
_PROD_TRIPLES = ([("float", _DBL, "float"), ("double", _DBL, "double")]
                 + [(t, _LL, _LL) for t in _INTS if t != _ULL] + [(_ULL, _ULL, _ULL)])
#: (T, A, Out) of the fused reductions: the sums plus the integer max (out is T).
_GATHER_TRIPLES = _SUM_TRIPLES + [(t, _LL, t) for t in _INTS if t not in (_LL, _ULL)]
#: Storage type of scatter_extreme's output: 8/16-bit integers are widened to int.
_EXTREME_STORAGE = {t: ("int" if t in ("signed char", "short", "unsigned char",
                                       "unsigned short") else t) for t in VALUE_CTYPES}

NAME_EXPRESSIONS: list[str] = [
    *(name_expression("sorted_sum", *tao, o)
      for tao in _SUM_TRIPLES for o in INDEX_CTYPES),
    *name_expressions("sorted_extreme", VALUE_CTYPES, INDEX_CTYPES),
    *name_expressions("sorted_arg_extreme", VALUE_CTYPES, INDEX_CTYPES),
    *(name_expression("sorted_prod", *tao, o) for tao in _PROD_TRIPLES for o in INDEX_CTYPES),
    *(name_expression("sorted_logsumexp", t, "float" if t == "float" else _DBL, o)
      for t in VALUE_CTYPES for o in INDEX_CTYPES),
    *(name_expression("gather_reduce", *tao, o, i)
      for tao in _GATHER_TRIPLES for o in INDEX_CTYPES for i in INDEX_CTYPES),
    *(name_expression("scatter_add", t, a, i)
      for t, a, o in _SUM_TRIPLES if o != "float" for i in INDEX_CTYPES),
    *(name_expression("scatter_extreme", t, _EXTREME_STORAGE[t], i)
      for t in VALUE_CTYPES for i in INDEX_CTYPES),
    *(name_expression("scatter_finish", a, o)
      for a, o in sorted({(a, o) for _, a, o in _SUM_TRIPLES}
                         | {(_EXTREME_STORAGE[t], t) for t in VALUE_CTYPES})),
    *name_expressions("scatter_claim", INDEX_CTYPES),
    *name_expressions("scatter_assign_rows", VALUE_CTYPES, INDEX_CTYPES),
    *name_expressions("scatter_weighted_sum_runs", _FLOATS, INDEX_CTYPES),
    *name_expressions("ids_to_offsets", INDEX_CTYPES),
]
_NAMES = frozenset(NAME_EXPRESSIONS)

_I32 = np.int32
_I64 = np.int64
_U8 = np.dtype(np.uint8)


# ----------------------------------------------------------------------------- helpers
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


def _launch(name: str, work: int, args: tuple[Any, ...]) -> None:
    if work <= 0:
        return
    grid, block = grid_1d(work)
    load_module("segment").get_function(name)(grid, block, args)


def _arr(xp: Any, a: Any) -> Any:
    """C-contiguous, bool viewed as uint8 (what the kernels read)."""
    a = xp.ascontiguousarray(a)
    return a.view(np.uint8) if a.dtype.kind == "b" else a


def _mask(xp: Any, mask: Any) -> tuple[Any, Any]:
    """``(uint8 mask, present flag)``: an absent or empty mask means no nulls."""
    if mask is None or mask.shape[0] == 0:
        return xp.empty(0, dtype=np.uint8), _I32(0)
    return _arr(xp, mask), _I32(1)


def _ids(xp: Any, ids: Any) -> Any:
    """int32 / int64 ids as they are, any other integer type widened to int64."""
    if np.dtype(ids.dtype) in (np.dtype(np.int32), np.dtype(np.int64)):
        return xp.ascontiguousarray(ids)
    return xp.ascontiguousarray(ids, dtype=np.int64)


def _weights(xp: Any, weights: Any, acc: np.dtype) -> tuple[Any, Any]:
    if weights is None or weights.shape[0] == 0:
        return xp.empty(0, dtype=acc), _I32(0)
    return xp.ascontiguousarray(_arr(xp, weights), dtype=acc), _I32(1)


def _woffsets(xp: Any, woffsets: Any) -> tuple[Any, Any]:
    if woffsets is None:
        return xp.empty(0, dtype=np.int64), _I32(0)
    return xp.ascontiguousarray(woffsets, dtype=np.int64), _I32(1)


def _counts(xp: Any, counts: Any) -> tuple[Any, Any]:
    if counts is None or counts.shape[0] == 0:
        return xp.empty(0, dtype=np.int64), _I32(0)
    return counts, _I32(1)


def _width(out: Any) -> int:
    return int(np.prod(out.shape[1:], dtype=np.int64))


def _into(xp: Any, out: Any, dtype: Any = None) -> Any:
    """Return a C-contiguous array to launch into: ``out`` or a temporary (copied back)."""
    dtype = out.dtype if dtype is None else np.dtype(dtype)
    if out.flags.c_contiguous and np.dtype(out.dtype) == dtype:
        return out.view(np.uint8) if out.dtype.kind == "b" else out
    return xp.ascontiguousarray(out, dtype=dtype)


def _back(out: Any, target: Any) -> None:
    if target is not out and not (out.dtype.kind == "b" and target.base is out):
        out[...] = target.reshape(out.shape).astype(out.dtype, copy=False)


def _scalar(dtype: Any, x: Any) -> Any:
    dtype = np.dtype(dtype)
    return (_U8 if dtype.kind == "b" else dtype).type(x)


# -------------------------------------------------------------------- sorted reductions
def sorted_sum(values: Any, offsets: Any, valid: Any, vmask: Any, weights: Any,
               woffsets: Any, mean: bool, zero: Any, min_count: int, empty: Any, out: Any,
               counts: Any) -> None:
    """Sum (``mean``: divided by the count) of each row into ``out`` (see the CPU kernel)."""
    func = "sorted_sum"
    xp = array_module(func, values, offsets, out)
    acc = np.dtype(zero.dtype)
    name = _name(func, func, values.dtype, acc, out.dtype, offsets.dtype)
    vals = _arr(xp, values)
    target = _into(xp, out)
    rows, width = out.shape[0], _width(out)
    w, weighted = _weights(xp, weights, acc)
    wo, has_woff = _woffsets(xp, woffsets)
    va, vm = _mask(xp, valid), _mask(xp, vmask)
    cnt, want = _counts(xp, counts)
    _launch(name, rows * width,
            (vals, xp.ascontiguousarray(offsets), va[0], _I32(1 - va[1]), vm[0], vm[1],
             w, weighted, wo, has_woff, _I32(values.ndim == 1 and not weighted),
             _I32(bool(mean)), acc.type(zero), _I64(min_count), _scalar(target.dtype, empty),
             _I64(rows), _I64(width), target, cnt, want))
    _back(out, target)


def sorted_extreme(values: Any, offsets: Any, valid: Any, vmask: Any, is_max: bool,
                   init: Any, min_count: int, empty: Any, out: Any, counts: Any) -> None:
    """Max (``is_max``) or min of each row; ``init`` is the dtype's lowest (highest) value."""
    func = "sorted_extreme"
    xp = array_module(func, values, offsets, out)
    name = _name(func, func, values.dtype, offsets.dtype)
    vals = _arr(xp, values)
    target = _into(xp, out, vals.dtype)
    rows, width = out.shape[0], _width(out)
    va, vm = _mask(xp, valid), _mask(xp, vmask)
    cnt, want = _counts(xp, counts)
    _launch(name, rows * width,
            (vals, xp.ascontiguousarray(offsets), va[0], _I32(1 - va[1]), vm[0], vm[1],
             _I32(bool(is_max)), _I32(values.ndim == 1), _scalar(vals.dtype, init),
             _I64(min_count), _scalar(vals.dtype, empty), _I64(rows), _I64(width), target,
             cnt, want))
    _back(out, target)


def sorted_arg_extreme(values: Any, offsets: Any, valid: Any, vmask: Any, is_max: bool,
                       min_count: int, empty: int, out: Any, counts: Any) -> None:
    """Position within the row of the first max (min) of each column; 2-D only."""
    func = "sorted_arg_extreme"
    xp = array_module(func, values, offsets, out)
    name = _name(func, func, values.dtype, offsets.dtype)
    target = _into(xp, out, np.int64)
    rows, width = out.shape[0], _width(out)
    va, vm = _mask(xp, valid), _mask(xp, vmask)
    cnt, want = _counts(xp, counts)
    _launch(name, rows * width,
            (_arr(xp, values), xp.ascontiguousarray(offsets), va[0], _I32(1 - va[1]), vm[0],
             vm[1], _I32(bool(is_max)), _I64(min_count), _I64(empty), _I64(rows),
             _I64(width), target, cnt, want))
    _back(out, target)


def sorted_prod(values: Any, offsets: Any, valid: Any, vmask: Any, one: Any, min_count: int,
                empty: Any, out: Any, counts: Any) -> None:
    """Product of each row; ``one`` fixes the accumulator dtype; 2-D only."""
    func = "sorted_prod"
    xp = array_module(func, values, offsets, out)
    acc = np.dtype(one.dtype)
    name = _name(func, func, values.dtype, acc, out.dtype, offsets.dtype)
    target = _into(xp, out)
    rows, width = out.shape[0], _width(out)
    va, vm = _mask(xp, valid), _mask(xp, vmask)
    cnt, want = _counts(xp, counts)
    _launch(name, rows * width,
            (_arr(xp, values), xp.ascontiguousarray(offsets), va[0], _I32(1 - va[1]), vm[0],
             vm[1], acc.type(one), _I64(min_count), _scalar(target.dtype, empty), _I64(rows),
             _I64(width), target, cnt, want))
    _back(out, target)


def sorted_logsumexp(values: Any, offsets: Any, valid: Any, vmask: Any, min_count: int,
                     empty: Any, out: Any, counts: Any) -> None:
    """Numerically stable log-sum-exp of each row (float64 inside); 2-D only."""
    func = "sorted_logsumexp"
    xp = array_module(func, values, offsets, out)
    name = _name(func, func, values.dtype, out.dtype, offsets.dtype)
    target = _into(xp, out)
    rows, width = out.shape[0], _width(out)
    va, vm = _mask(xp, valid), _mask(xp, vmask)
    cnt, want = _counts(xp, counts)
    _launch(name, rows * width,
            (_arr(xp, values), xp.ascontiguousarray(offsets), va[0], _I32(1 - va[1]), vm[0],
             vm[1], _I64(min_count), _scalar(target.dtype, empty), _I64(rows), _I64(width),
             target, cnt, want))
    _back(out, target)


# ---------------------------------------------------------------- fused gather + reduce
def _block_cols(data: Any, vmask: Any, weights: Any, mode: int, zero: Any, counts: Any,
                width: int) -> int:
    """Leading columns the CPU twin sums in blocks of 4 ids in the table's dtype.

    Mirrors the fast-path test of ``kernels.cpu.segment.gather_reduce`` (a float table,
    plain sum/mean, at least one 64-byte line wide): whole 64-byte lines of columns go
    through its vector path, the remaining columns through the float64 loop.
    """
    if (mode == 2 or vmask is not None or weights is not None or counts is not None
            or np.dtype(data.dtype).kind != "f" or not isinstance(zero, np.float64)):
        return 0
    line = max(1, 64 // np.dtype(data.dtype).itemsize)
    return 0 if width < line else width // line * line


def gather_reduce(data: Any, indices: Any, offsets: Any, valid: Any, vmask: Any,
                  weights: Any, woffsets: Any, mode: int, zero: Any, lowest: Any,
                  min_count: int, empty: Any, out: Any, counts: Any) -> int:
    """Reduce ``data[indices[i]]`` per row (``mode``: 0 sum, 1 mean, 2 max).

    Returns the position of the first id out of range (checked before the launch) or -1.
    """
    func = "gather_reduce"
    xp = array_module(func, data, indices, offsets, out)
    acc = np.dtype(zero.dtype)
    ids = _ids(xp, indices)
    bad = _first_bad_id(xp, ids, offsets, valid, vmask, data.shape[0])
    if bad >= 0:
        return bad
    name = _name(func, func, data.dtype, acc, out.dtype, offsets.dtype, ids.dtype)
    target = _into(xp, out)
    rows, width = out.shape[0], _width(out)
    w, weighted = _weights(xp, weights, acc)
    wo, has_woff = _woffsets(xp, woffsets)
    va, vm = _mask(xp, valid), _mask(xp, vmask)
    cnt, want = _counts(xp, counts)
    _launch(name, rows * width,
            (_arr(xp, data), ids, xp.ascontiguousarray(offsets), va[0], _I32(1 - va[1]),
             vm[0], vm[1], w, weighted, wo, has_woff, _I32(mode),
             _I64(_block_cols(data, vmask, weights, mode, zero, counts, width)), acc.type(zero),
             acc.type(lowest), _I64(min_count), _scalar(target.dtype, empty), _I64(rows),
             _I64(width), target, cnt, want))
    _back(out, target)
    return -1


# ----------------------------------------------------------------------------- scatters
def _first_bad_id(xp: Any, ids: Any, offsets: Any, valid: Any, vmask: Any, bound: int) -> int:
    """Check on the host the ids the rows read: the first outside ``[0, bound)``, or -1.

    The CPU kernels check as they read; here it runs before the launch. Null rows and
    null ids are not checked, as there.
    """
    start, stop = int(offsets[0]), int(offsets[-1])
    used = ids[start:stop]
    if not len(used) or (int(used.min()) >= 0 and int(used.max()) < bound):
        return -1
    bad = (used < 0) | (used >= bound)
    if vmask is not None:
        bad &= xp.asarray(vmask[start:stop]).astype(bool)
    if valid is not None:
        bad &= xp.repeat(xp.asarray(valid).astype(bool), xp.diff(offsets).astype(np.int64))
    return start + int(xp.argmax(bad)) if bool(bad.any()) else -1


def _first_bad_segment(xp: Any, ids: Any, num_segments: int) -> int:
    """Return the first segment id outside ``[0, num_segments)``, or -1 (a host check)."""
    if not len(ids) or (int(ids.min()) >= 0 and int(ids.max()) < num_segments):
        return -1
    return int(xp.argmax((ids < 0) | (ids >= num_segments)))


def _finish_scatter(xp: Any, acc: Any, counts: Any, counting: bool, mean: bool,
                    min_count: int, empty: Any, out: Any) -> None:
    """Launch scatter_finish: ``out`` from the accumulator and the counts."""
    target = _into(xp, out)
    name = _name("scatter_finish", "scatter_finish", acc.dtype, target.dtype)
    num, width = out.shape[0], _width(out)
    _launch(name, num * width,
            (acc, counts, _I32(counting), _I32(bool(mean)), _I64(min_count),
             _scalar(target.dtype, empty), _I64(num), _I64(width), target))
    _back(out, target)


def scatter_sum(values: Any, ids: Any, vmask: Any, weights: Any, mean: bool, zero: Any,
                min_count: int, empty: Any, out: Any, counts: Any) -> int:
    """``out[s] = sum(weights[i] * values[i] for ids[i] == s)`` (``mean``: / count).

    Atomics into an accumulator of ``zero``'s dtype (scatter_add), then scatter_finish.
    """
    func = "scatter_sum"
    xp = array_module(func, values, ids, out)
    ids = _ids(xp, ids)
    num_segments = out.shape[0]
    bad = _first_bad_segment(xp, ids, num_segments)
    if bad >= 0:
        return bad
    acc_dtype = np.dtype(zero.dtype)
    name = _name(func, "scatter_add", values.dtype, acc_dtype, ids.dtype)
    num, width = values.shape[0], _width(out)
    acc = xp.zeros(num_segments * width, dtype=acc_dtype)
    counting = mean or min_count > 0 or counts is not None
    cnt = xp.zeros(num_segments if counting else 0, dtype=np.int64)
    w, weighted = _weights(xp, weights, acc_dtype)
    vm = _mask(xp, vmask)
    _launch(name, num * width,
            (_arr(xp, values), ids, vm[0], vm[1], w, weighted, _I64(num), _I64(width), acc,
             cnt, _I32(counting)))
    _finish_scatter(xp, acc, cnt, counting, mean, min_count, empty, out)
    if counts is not None:
        counts[...] = cnt
    return -1


def scatter_extreme(values: Any, ids: Any, vmask: Any, is_max: bool, init: Any,
                    min_count: int, empty: Any, out: Any, counts: Any) -> int:
    """``out[s] = max(values[i] for ids[i] == s)`` (or min), NaN propagating, by atomics."""
    func = "scatter_extreme"
    xp = array_module(func, values, ids, out)
    ids = _ids(xp, ids)
    num_segments = out.shape[0]
    bad = _first_bad_segment(xp, ids, num_segments)
    if bad >= 0:
        return bad
    vals = _arr(xp, values)
    wide = np.dtype(np.int32) if _EXTREME_STORAGE.get(_c(vals.dtype)) == "int" else vals.dtype
    name = _name(func, func, vals.dtype, wide, ids.dtype)
    num, width = values.shape[0], _width(out)
    acc = xp.full(num_segments * width, init, dtype=wide)
    cnt = xp.zeros(num_segments, dtype=np.int64)
    vm = _mask(xp, vmask)
    _launch(name, num * width,
            (vals, ids, vm[0], vm[1], _I32(bool(is_max)), _I64(num), _I64(width), acc, cnt))
    _finish_scatter(xp, acc, cnt, True, False, min_count, empty, out)
    if counts is not None:
        counts[...] = cnt
    return -1


def _claim(xp: Any, idx: Any, num_rows: int) -> Any:
    """Return the last position of each row in ``idx`` (-1 for rows it does not list)."""
    last = xp.full(num_rows, -1, dtype=np.int64)
    _launch(_name("scatter", "scatter_claim", idx.dtype), idx.shape[0],
            (idx, _I64(idx.shape[0]), last))
    return last


def scatter_assign(data: Any, indices: Any, slices: Any) -> None:
    """``data[indices[i]] = slices[i]`` in order (last write wins); 2-D views."""
    func = "scatter_assign"
    xp = array_module(func, data, indices, slices)
    idx = _ids(xp, indices)
    name = _name(func, "scatter_assign_rows", data.dtype, idx.dtype)
    num, width = idx.shape[0], _width(data)
    if num == 0 or width == 0:
        return
    last = _claim(xp, idx, data.shape[0])
    target = _into(xp, data)
    _launch(name, num * width,
            (target, idx, _arr(xp, xp.asarray(slices, dtype=data.dtype)), last, _I64(num),
             _I64(width)))
    _back(data, target)


def scatter_weighted_sum(data: Any, w0: float, indices: Any, slices: Any, w1: float) -> None:
    """Scale each listed row by ``w0`` per occurrence, then add ``w1 * slices[i]``; 2-D views.

    The indices are sorted stably on the device (``argsort``) so that each row's
    occurrences form one run, which one thread applies in index order: linear work
    however far apart the repeats are.
    """
    func = "scatter_weighted_sum"
    xp = array_module(func, data, indices, slices)
    idx = _ids(xp, indices)
    name = _name(func, "scatter_weighted_sum_runs", data.dtype, idx.dtype)
    num, width = idx.shape[0], _width(data)
    if num == 0 or width == 0:
        return
    order = xp.argsort(idx, kind="stable").astype(np.int64, copy=False)
    target = _into(xp, data)
    _launch(name, num * width,
            (target, np.float64(w0), xp.ascontiguousarray(idx[order]), order,
             xp.ascontiguousarray(slices, dtype=data.dtype), np.float64(w1), _I64(num),
             _I64(width)))
    _back(data, target)


def sorted_ids_to_offsets(ids: Any, num_segments: int) -> Any:
    """int64 offsets (``num_segments + 1``) of checked, sorted segment ids."""
    func = "sorted_ids_to_offsets"
    xp = array_module(func, ids)
    idx = _ids(xp, ids)
    offsets = xp.empty(num_segments + 1, dtype=np.int64)
    _launch(_name(func, "ids_to_offsets", idx.dtype), num_segments + 1,
            (idx, _I64(idx.shape[0]), _I64(num_segments), offsets))
    return offsets
