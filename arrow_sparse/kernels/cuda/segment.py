"""CUDA launchers of the segment kernels (``segment.cu``).

Each launcher takes the array module ``xp``, then the parameters and the semantics of
its CPU twin in :mod:`arrow_sparse.kernels.cpu.segment`: it picks the template
instantiation from the dtypes, sizes the grid and packs the arguments with explicit C
types. Arrays are device arrays (CuPy), or numpy arrays when the emulator stands in
for the GPU in tests.

Template axes: ``T`` the values (table) type, ``A`` the accumulator (the C type of the
CPU kernel's ``zero``: ``double``, ``long long`` or ``unsigned long long``), ``Out`` the
output type, ``O`` the offsets type and ``I`` the ids type. Only the ``(T, A, Out)``
combinations :mod:`arrow_sparse.segment` can produce are instantiated. Bool arrays are
passed as ``uint8``; weights are converted to ``A`` here (exactly the CPU kernel's
``zero + w``); ids of other integer types are widened to int64.

Every kernel re-checks the rows, indices and segment ids it relies on and records a
violation in the device error word (:func:`arrow_sparse.kernels.cuda.error_buffer`),
which the public operation raises. The launchers that return the position of the first
index out of range (``gather_reduce``, ``scatter_sum``, ``scatter_extreme``, as their
CPU twins do) find it on the host for host arrays (the emulator) and return -1 for
device arrays, whose positions only the error word reports: finding it on the host
would read device data back. :data:`DEVICE_ONLY` launchers have no CPU twin:
``check_null_weights`` (the host checks null weights with numpy) and ``gather_rows``
(the host gathers with ``numpy.take``).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from . import _launch, error_buffer
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
    name_expressions,
    nothing,
)

__all__ = ["gather_reduce", "scatter_assign", "scatter_extreme", "scatter_sum",
           "scatter_weighted_sum", "sorted_arg_extreme", "sorted_extreme",
           "sorted_ids_to_offsets", "sorted_logsumexp", "sorted_prod", "sorted_sum"]

#: Device-only launchers (no CPU twin), see the module docstring.
DEVICE_ONLY = ("check_null_weights", "gather_rows")

_INTS = tuple(c for c in VALUE_CTYPES if c not in FLOAT_CTYPES)
_UNSIGNED = tuple(c for c in _INTS if c.startswith("unsigned"))
_LL, _ULL, _DBL = "long long", "unsigned long long", "double"

#: (T, A, Out) of sums and means, plain or weighted: any T into double (float or double
#: out); integers into long long; unsigned integers into unsigned long long.
_SUM_TRIPLES = ([(t, _DBL, o) for t in VALUE_CTYPES for o in FLOAT_CTYPES]
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

#: (T, A) of the piece kernels: their partials are in A, whatever the output type.
_SUM_PAIRS = sorted({(t, a) for t, a, _ in _SUM_TRIPLES})
_GATHER_PAIRS = sorted({(t, a) for t, a, _ in _GATHER_TRIPLES})

NAME_EXPRESSIONS: list[str] = [
    *(name_expression("sorted_sum", *tao, o)
      for tao in _SUM_TRIPLES for o in INDEX_CTYPES),
    *(name_expression("sorted_sum_pieces", *ta, o) for ta in _SUM_PAIRS for o in INDEX_CTYPES),
    *name_expressions("sorted_extreme", VALUE_CTYPES, INDEX_CTYPES),
    *name_expressions("sorted_arg_extreme", VALUE_CTYPES, INDEX_CTYPES),
    *(name_expression("sorted_prod", *tao, o) for tao in _PROD_TRIPLES for o in INDEX_CTYPES),
    *(name_expression("sorted_logsumexp", t, "float" if t == "float" else _DBL, o)
      for t in VALUE_CTYPES for o in INDEX_CTYPES),
    *(name_expression("gather_reduce", *tao, o, i)
      for tao in _GATHER_TRIPLES for o in INDEX_CTYPES for i in INDEX_CTYPES),
    *(name_expression("gather_reduce_pieces", *ta, o, i)
      for ta in _GATHER_PAIRS for o in INDEX_CTYPES for i in INDEX_CTYPES),
    *(name_expression("scatter_add", t, a, i)
      for t, a, o in _SUM_TRIPLES if o != "float" for i in INDEX_CTYPES),
    *(name_expression("scatter_extreme", t, _EXTREME_STORAGE[t], i)
      for t in VALUE_CTYPES for i in INDEX_CTYPES),
    *(name_expression("scatter_finish", a, o)
      for a, o in sorted({(a, o) for _, a, o in _SUM_TRIPLES}
                         | {(_EXTREME_STORAGE[t], t) for t in VALUE_CTYPES})),
    *name_expressions("scatter_claim", INDEX_CTYPES),
    *name_expressions("scatter_assign_rows", VALUE_CTYPES, INDEX_CTYPES),
    *name_expressions("scatter_weighted_sum_runs", FLOAT_CTYPES, INDEX_CTYPES),
    *name_expressions("ids_to_offsets", INDEX_CTYPES),
    *name_expressions("check_null_weights", INDEX_CTYPES),
    *name_expressions("gather_rows", VALUE_CTYPES, INDEX_CTYPES),
]
_NAMES = frozenset(NAME_EXPRESSIONS)

_I32 = np.int32
_I64 = np.int64
_U8 = np.dtype(np.uint8)
_INT64 = np.dtype(np.int64)


# ----------------------------------------------------------------------------- helpers
def _c(dtype: Any) -> str:
    dtype = np.dtype(dtype)
    return DTYPE_TO_CTYPE.get(_U8 if dtype.kind == "b" else dtype, str(dtype))


_NAME_MEMO: dict[tuple[str, tuple[Any, ...]], str] = {}


def _name(func: str, kernel: str, *dtypes: Any) -> str:
    """Name expression of ``kernel`` for ``dtypes``; ``NotImplementedError`` if none exists.

    Memoised by the dtypes: after the first call of a variant it costs one lookup.
    """
    name = _NAME_MEMO.get((kernel, dtypes))
    if name is not None:
        return name
    name = name_expression(kernel, *(_c(d) for d in dtypes))
    if name in _NAMES:
        _NAME_MEMO[(kernel, dtypes)] = name
    else:
        kinds = ", ".join(str(np.dtype(d)) for d in dtypes)
        msg = f"{func}: no cuda kernel for {kinds}"
        raise NotImplementedError(msg)
    return name


def _arr(xp: ModuleType, a: Any) -> Any:
    """C-contiguous, bool viewed as uint8 (what the kernels read)."""
    a = xp.ascontiguousarray(a)
    return a.view(np.uint8) if a.dtype.kind == "b" else a


def _weights(xp: ModuleType, weights: Any, acc: np.dtype) -> tuple[Any, Any, Any]:
    """``(weights in A, weighted flag, number of weights)``."""
    if weights is None or weights.shape[0] == 0:
        return nothing(xp, acc), _I32(0), _I64(0)
    return (xp.ascontiguousarray(_arr(xp, weights), dtype=acc), _I32(1),
            _I64(weights.shape[0]))


def _woffsets(xp: ModuleType, woffsets: Any) -> tuple[Any, Any]:
    if woffsets is None:
        return nothing(xp, _INT64), _I32(0)
    return xp.ascontiguousarray(woffsets, dtype=np.int64), _I32(1)


def _counts(xp: ModuleType, counts: Any) -> tuple[Any, Any]:
    if counts is None or counts.shape[0] == 0:
        return nothing(xp, _INT64), _I32(0)
    return counts, _I32(1)


def _width(out: Any) -> int:
    return int(np.prod(out.shape[1:], dtype=np.int64))


def _pieces(xp: ModuleType, num: int, width: int, acc: np.dtype, split: bool
            ) -> tuple[Any, Any, Any, int]:
    """``(piece, parts, pcounts, chunks)`` of a kernel that splits long segments.

    ``num`` positions in chunks of ``_launch.PIECE``; one allocation holds the partials
    (``[chunks, width]`` of the accumulator ``acc``, 8 bytes) and their counts. Without
    ``split`` (or without positions) piece is 0 and the arrays are empty.
    """
    piece = _launch.PIECE if split else 0
    chunks = -(-num // piece) if piece else 0
    buffer = xp.empty(chunks * (width + 1), dtype=np.int64)
    return (_I64(piece), buffer[:chunks * width].view(acc), buffer[chunks * width:], chunks)


def _scalar(dtype: Any, x: Any) -> Any:
    dtype = np.dtype(dtype)
    return (_U8 if dtype.kind == "b" else dtype).type(x)


def _rows(xp: ModuleType, offsets: Any, valid: Any, vmask: Any) -> tuple[Any, ...]:
    """Pack the row arguments of a sorted kernel: offsets, valid, all_valid, vmask, masked."""
    return (xp.ascontiguousarray(offsets), *as_mask(xp, valid, all_valid=True),
            *as_mask(xp, vmask))


def _weighted_rows(xp: ModuleType, offsets: Any, valid: Any, vmask: Any, weights: Any,
                   woffsets: Any, acc: np.dtype) -> tuple[tuple[Any, ...], Any, Any]:
    """Pack the rows and their weights as the sums and the gather reductions take them.

    ``((offsets, row validity, all valid, value mask, masked, weights in A, weighted,
    weight offsets, has them), weighted, number of weights)``.
    """
    w, weighted, num_weights = _weights(xp, weights, acc)
    wo, has_woff = _woffsets(xp, woffsets)
    return (*_rows(xp, offsets, valid, vmask), w, weighted, wo, has_woff), weighted, num_weights


# -------------------------------------------------------------------- sorted reductions
def sorted_sum(xp: ModuleType, values: Any, offsets: Any, valid: Any, vmask: Any, weights: Any,
               woffsets: Any, mean: bool, zero: Any, min_count: int, empty: Any, out: Any,
               counts: Any) -> None:
    """Sum (``mean``: divided by the count) of each row into ``out`` (see the CPU kernel).

    2-D values split rows longer than ``PIECE`` values (``sorted_sum_pieces``, launched
    first); 1-D rows are read by one thread each.
    """
    func = "sorted_sum"
    acc = np.dtype(zero.dtype)
    name = _name(func, func, values.dtype, acc, out.dtype, offsets.dtype)
    target = into(xp, out)
    rows, width = out.shape[0], _width(out)
    row_args, weighted, num_weights = _weighted_rows(xp, offsets, valid, vmask, weights,
                                                     woffsets, acc)
    cnt, want = _counts(xp, counts)
    vals = _arr(xp, values)
    lanes4 = _I32(values.ndim == 1 and not weighted)
    piece, parts, pcounts, chunks = _pieces(xp, values.shape[0], width, acc,
                                            values.ndim == 2 and rows * width > 0)
    if chunks:
        launch("segment", _name(func, "sorted_sum_pieces", values.dtype, acc, offsets.dtype),
               chunks * width,
               (vals, *row_args, lanes4, acc.type(zero), _I64(rows), _I64(width),
                _I64(values.shape[0]), num_weights, piece, _I64(chunks), parts, pcounts,
                error_buffer()))
    launch("segment", name, rows * width,
           (vals, *row_args, lanes4, _I32(bool(mean)), acc.type(zero), _I64(min_count),
            _scalar(target.dtype, empty), _I64(rows), _I64(width), _I64(values.shape[0]),
            num_weights, piece, parts, pcounts, target, cnt, want, error_buffer()))
    back(out, target)


def sorted_extreme(xp: ModuleType, values: Any, offsets: Any, valid: Any, vmask: Any, is_max: bool,
                   init: Any, min_count: int, empty: Any, out: Any, counts: Any) -> None:
    """Max (``is_max``) or min of each row; ``init`` is the dtype's lowest (highest) value."""
    func = "sorted_extreme"
    name = _name(func, func, values.dtype, offsets.dtype)
    vals = _arr(xp, values)
    target = into(xp, out, vals.dtype)
    rows, width = out.shape[0], _width(out)
    cnt, want = _counts(xp, counts)
    launch("segment", name, rows * width,
           (vals, *_rows(xp, offsets, valid, vmask), _I32(bool(is_max)),
            _scalar(vals.dtype, init), _I64(min_count), _scalar(vals.dtype, empty),
            _I64(rows), _I64(width), _I64(values.shape[0]), target, cnt, want,
            error_buffer()))
    back(out, target)


def sorted_arg_extreme(xp: ModuleType, values: Any, offsets: Any, valid: Any, vmask: Any,
                       is_max: bool, min_count: int, empty: int, out: Any, counts: Any) -> None:
    """Position within the row of the first max (min) of each column; 2-D only."""
    func = "sorted_arg_extreme"
    name = _name(func, func, values.dtype, offsets.dtype)
    target = into(xp, out, np.int64)
    rows, width = out.shape[0], _width(out)
    cnt, want = _counts(xp, counts)
    launch("segment", name, rows * width,
           (_arr(xp, values), *_rows(xp, offsets, valid, vmask), _I32(bool(is_max)),
            _I64(min_count), _I64(empty), _I64(rows), _I64(width), _I64(values.shape[0]),
            target, cnt, want, error_buffer()))
    back(out, target)


def sorted_prod(xp: ModuleType, values: Any, offsets: Any, valid: Any, vmask: Any, one: Any,
                min_count: int, empty: Any, out: Any, counts: Any) -> None:
    """Product of each row; ``one`` fixes the accumulator dtype; 2-D only."""
    func = "sorted_prod"
    acc = np.dtype(one.dtype)
    name = _name(func, func, values.dtype, acc, out.dtype, offsets.dtype)
    target = into(xp, out)
    rows, width = out.shape[0], _width(out)
    cnt, want = _counts(xp, counts)
    launch("segment", name, rows * width,
           (_arr(xp, values), *_rows(xp, offsets, valid, vmask), acc.type(one),
            _I64(min_count), _scalar(target.dtype, empty), _I64(rows), _I64(width),
            _I64(values.shape[0]), target, cnt, want, error_buffer()))
    back(out, target)


def sorted_logsumexp(xp: ModuleType, values: Any, offsets: Any, valid: Any, vmask: Any,
                     min_count: int, empty: Any, out: Any, counts: Any) -> None:
    """Numerically stable log-sum-exp of each row (float64 inside); 2-D only."""
    func = "sorted_logsumexp"
    name = _name(func, func, values.dtype, out.dtype, offsets.dtype)
    target = into(xp, out)
    rows, width = out.shape[0], _width(out)
    cnt, want = _counts(xp, counts)
    launch("segment", name, rows * width,
           (_arr(xp, values), *_rows(xp, offsets, valid, vmask), _I64(min_count),
            _scalar(target.dtype, empty), _I64(rows), _I64(width), _I64(values.shape[0]),
            target, cnt, want, error_buffer()))
    back(out, target)


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


def gather_reduce(xp: ModuleType, data: Any, indices: Any, offsets: Any, valid: Any, vmask: Any,
                  weights: Any, woffsets: Any, mode: int, zero: Any, lowest: Any,
                  min_count: int, empty: Any, out: Any, counts: Any) -> int:
    """Reduce ``data[indices[i]]`` per row (``mode``: 0 sum, 1 mean, 2 max).

    Bags longer than ``PIECE`` ids are split by elements: ``gather_reduce_pieces``
    reduces their later pieces first. Returns the position of the first id out of range
    (host arrays: checked before the launch) or -1 (device arrays: the kernel records it
    in the error word).
    """
    func = "gather_reduce"
    acc = np.dtype(zero.dtype)
    ids = as_index(xp, indices)
    if xp is np:
        bad = _first_bad_id(ids, offsets, valid, vmask, data.shape[0])
        if bad >= 0:
            return bad
    name = _name(func, func, data.dtype, acc, out.dtype, offsets.dtype, ids.dtype)
    target = into(xp, out)
    rows, width = out.shape[0], _width(out)
    row_args, _, num_weights = _weighted_rows(xp, offsets, valid, vmask, weights, woffsets,
                                              acc)
    cnt, want = _counts(xp, counts)
    table = _arr(xp, data)
    block = _I64(_block_cols(data, vmask, weights, mode, zero, counts, width))
    num_ids = ids.shape[0]
    piece, parts, pcounts, chunks = _pieces(xp, num_ids, width, acc, rows * width > 0)
    if chunks:
        launch("segment", _name(func, "gather_reduce_pieces", data.dtype, acc, offsets.dtype,
                                ids.dtype), chunks * width,
               (table, ids, *row_args, _I32(mode), block, acc.type(zero), acc.type(lowest),
                _I64(rows), _I64(width), _I64(data.shape[0]), _I64(num_ids), num_weights,
                piece, _I64(chunks), parts, pcounts, error_buffer()))
    launch("segment", name, rows * width,
           (table, ids, *row_args, _I32(mode), block, acc.type(zero), acc.type(lowest),
            _I64(min_count), _scalar(target.dtype, empty), _I64(rows), _I64(width),
            _I64(data.shape[0]), _I64(num_ids), num_weights, piece, parts, pcounts, target,
            cnt, want, error_buffer()))
    back(out, target)
    return -1


# ----------------------------------------------------------------------------- scatters
def _first_bad_id(ids: Any, offsets: Any, valid: Any, vmask: Any, bound: int) -> int:
    """Check host ids the rows read: the first outside ``[0, bound)``, or -1.

    The CPU kernels check as they read; here it runs before the launch. Null rows and
    null ids are not checked, as there.
    """
    start, stop = int(offsets[0]), int(offsets[-1])
    used = ids[start:stop]
    if not len(used) or (int(used.min()) >= 0 and int(used.max()) < bound):
        return -1
    bad = (used < 0) | (used >= bound)
    if vmask is not None:
        bad &= vmask[start:stop].astype(bool)
    if valid is not None:
        bad &= np.repeat(valid.astype(bool), np.diff(offsets).astype(np.int64))
    return start + int(np.argmax(bad)) if bool(bad.any()) else -1


def _scatter_ids(xp: ModuleType, ids: Any, num_segments: int) -> tuple[Any, int]:
    """Segment ids as the scatter kernels read them, and the first bad one.

    The first host id outside ``[0, num_segments)``, or -1 (also for device ids: the
    kernels check those as they read them).
    """
    ids = as_index(xp, ids)
    return ids, _first_bad_segment(ids, num_segments) if xp is np else -1


def _first_bad_segment(ids: Any, num_segments: int) -> int:
    """Return the first host segment id outside ``[0, num_segments)``, or -1."""
    if not len(ids) or (int(ids.min()) >= 0 and int(ids.max()) < num_segments):
        return -1
    return int(np.argmax((ids < 0) | (ids >= num_segments)))


def _finish_scatter(xp: ModuleType, acc: Any, counts: Any, counting: bool, mean: bool,
                    min_count: int, empty: Any, out: Any, counts_out: Any) -> None:
    """Launch scatter_finish: ``out`` from the accumulator and the counts.

    The counts are copied into ``counts_out`` when it is given.
    """
    target = into(xp, out)
    name = _name("scatter_finish", "scatter_finish", acc.dtype, target.dtype)
    num, width = out.shape[0], _width(out)
    launch("segment", name, num * width,
           (acc, counts, _I32(counting), _I32(bool(mean)), _I64(min_count),
            _scalar(target.dtype, empty), _I64(num), _I64(width), target))
    back(out, target)
    if counts_out is not None:
        counts_out[...] = counts


def scatter_sum(xp: ModuleType, values: Any, ids: Any, vmask: Any, weights: Any, mean: bool,
                zero: Any, min_count: int, empty: Any, out: Any, counts: Any) -> int:
    """``out[s] = sum(weights[i] * values[i] for ids[i] == s)`` (``mean``: / count).

    Atomics into an accumulator of ``zero``'s dtype (scatter_add), then scatter_finish.
    Returns the first id out of range (host arrays) or -1, as :func:`gather_reduce`.
    """
    func = "scatter_sum"
    num_segments = out.shape[0]
    ids, bad = _scatter_ids(xp, ids, num_segments)
    if bad >= 0:
        return bad
    acc_dtype = np.dtype(zero.dtype)
    name = _name(func, "scatter_add", values.dtype, acc_dtype, ids.dtype)
    num, width = values.shape[0], _width(out)
    acc = xp.zeros(num_segments * width, dtype=acc_dtype)
    counting = mean or min_count > 0 or counts is not None
    cnt = xp.zeros(num_segments if counting else 0, dtype=np.int64)
    w, weighted, _ = _weights(xp, weights, acc_dtype)
    vm = as_mask(xp, vmask)
    launch("segment", name, num * width,
           (_arr(xp, values), ids, vm[0], vm[1], w, weighted, _I64(num), _I64(width),
            _I64(num_segments), acc, cnt, _I32(counting), error_buffer()))
    _finish_scatter(xp, acc, cnt, counting, mean, min_count, empty, out, counts)
    return -1


def scatter_extreme(xp: ModuleType, values: Any, ids: Any, vmask: Any, is_max: bool, init: Any,
                    min_count: int, empty: Any, out: Any, counts: Any) -> int:
    """``out[s] = max(values[i] for ids[i] == s)`` (or min), NaN propagating, by atomics."""
    func = "scatter_extreme"
    num_segments = out.shape[0]
    ids, bad = _scatter_ids(xp, ids, num_segments)
    if bad >= 0:
        return bad
    vals = _arr(xp, values)
    wide = np.dtype(np.int32) if _EXTREME_STORAGE.get(_c(vals.dtype)) == "int" else vals.dtype
    name = _name(func, func, vals.dtype, wide, ids.dtype)
    num, width = values.shape[0], _width(out)
    acc = xp.full(num_segments * width, init, dtype=wide)
    cnt = xp.zeros(num_segments, dtype=np.int64)
    vm = as_mask(xp, vmask)
    launch("segment", name, num * width,
           (vals, ids, vm[0], vm[1], _I32(bool(is_max)), _I64(num), _I64(width),
            _I64(num_segments), acc, cnt, error_buffer()))
    _finish_scatter(xp, acc, cnt, True, False, min_count, empty, out, counts)
    return -1


def _claim(xp: ModuleType, idx: Any, num_rows: int) -> Any:
    """Return the last position of each row in ``idx`` (-1 for rows it does not list)."""
    last = xp.full(num_rows, -1, dtype=np.int64)
    launch("segment", _name("scatter", "scatter_claim", idx.dtype), idx.shape[0],
           (idx, _I64(idx.shape[0]), _I64(num_rows), last, error_buffer()))
    return last


def scatter_assign(xp: ModuleType, data: Any, indices: Any, slices: Any) -> None:
    """``data[indices[i]] = slices[i]`` in order (last write wins); 2-D views."""
    func = "scatter_assign"
    idx = as_index(xp, indices)
    name = _name(func, "scatter_assign_rows", data.dtype, idx.dtype)
    num, width = idx.shape[0], _width(data)
    if num == 0 or width == 0:
        return
    last = _claim(xp, idx, data.shape[0])
    target = into(xp, data)
    launch("segment", name, num * width,
           (target, idx, _arr(xp, xp.asarray(slices, dtype=data.dtype)), last, _I64(num),
            _I64(data.shape[0]), _I64(width)))
    back(data, target)


def scatter_weighted_sum(xp: ModuleType, data: Any, w0: float, indices: Any, slices: Any, w1: float
                         ) -> None:
    """Scale each listed row by ``w0`` per occurrence, then add ``w1 * slices[i]``; 2-D views.

    The indices are sorted stably on the device (``argsort``) so that each row's
    occurrences form one run, which one thread applies in index order: linear work
    however far apart the repeats are.
    """
    func = "scatter_weighted_sum"
    idx = as_index(xp, indices)
    name = _name(func, "scatter_weighted_sum_runs", data.dtype, idx.dtype)
    num, width = idx.shape[0], _width(data)
    if num == 0 or width == 0:
        return
    order = xp.argsort(idx, kind="stable").astype(np.int64, copy=False)
    target = into(xp, data)
    launch("segment", name, num * width,
           (target, np.float64(w0), xp.ascontiguousarray(idx[order]), order,
            xp.ascontiguousarray(slices, dtype=data.dtype), np.float64(w1), _I64(num),
            _I64(data.shape[0]), _I64(width), error_buffer()))
    back(data, target)


def sorted_ids_to_offsets(xp: ModuleType, ids: Any, num_segments: int) -> Any:
    """int64 offsets (``num_segments + 1``) of checked, sorted segment ids."""
    func = "sorted_ids_to_offsets"
    idx = as_index(xp, ids)
    offsets = xp.empty(num_segments + 1, dtype=np.int64)
    launch("segment", _name(func, "ids_to_offsets", idx.dtype), num_segments + 1,
           (idx, _I64(idx.shape[0]), _I64(num_segments), offsets))
    return offsets


# --------------------------------------------------------------------- device-only
def check_null_weights(xp: ModuleType, woffsets: Any, valid: Any, wvalid: Any,
                       num_weights: int) -> None:
    """Record the first null weight (``wvalid[i] == 0``) of a valid row in the error word.

    ``woffsets`` are the weights' row offsets (int32 or int64, ``rows + 1``), ``valid``
    the rows' bool mask or None.
    """
    func = "check_null_weights"
    rows = woffsets.shape[0] - 1
    launch("segment", _name(func, func, woffsets.dtype), rows,
           (xp.ascontiguousarray(woffsets), *as_mask(xp, valid, all_valid=True),
            _arr(xp, wvalid), _I64(rows), _I64(num_weights), error_buffer()))


def gather_rows(xp: ModuleType, data: Any, indices: Any) -> Any:
    """``data[indices]`` on the device (rows of a ``[V, ...]`` array; 1-D indices).

    An index outside ``[0, V)`` is recorded in the error word and gives a zero row.
    """
    func = "gather_rows"
    idx = as_index(xp, indices)
    table = _arr(xp, data)
    name = _name(func, func, table.dtype, idx.dtype)
    num, width = idx.shape[0], _width(data)
    out = xp.empty((num, *data.shape[1:]), dtype=table.dtype)
    launch("segment", name, num * width,
           (table, idx, _I64(num), _I64(data.shape[0]), _I64(width), out, error_buffer()))
    return out.view(np.bool_) if data.dtype.kind == "b" else out
