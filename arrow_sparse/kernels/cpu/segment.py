"""CPU kernels for segment reductions, fused gather + reduce, gather and scatter.

Conventions shared by every kernel here (the public module checks all of it first):

- ``values`` / ``data`` are C-contiguous, 1-D ``[N]`` or 2-D ``[N, D]`` (N-D values
  are viewed as 2-D by the caller). Only the sum and max/min families have 1-D
  variants; the others take 1-D values as ``[N, 1]``.
- ``offsets`` are int32 or int64, ``rows + 1`` long, and may start above zero.
- ``valid`` is a uint8 row mask and ``vmask`` a uint8 mask over the values' first
  axis (0 = null); an empty array means "no nulls". Null rows are reduced as empty
  rows (their offsets range is never read); null values are skipped.
- ``weights`` is empty (unweighted) or holds one weight per value: value ``i`` of row
  ``r`` uses ``weights[i - offsets[r] + woffsets[r]]``.
- ``zero`` is a scalar of the accumulator dtype (int64, uint64 or float64): every
  accumulator starts from it, so one Python-side choice fixes the accumulator.
- ``counts`` is empty or receives the number of non-null values of each row.
- A row with fewer than ``min_count`` non-null values is written as ``empty``.
- Max/min propagate NaN like numpy: ``x if (x > m or x != x) else m`` keeps a NaN once
  one is seen, and compiles to compare + blend without fast-math.

Every sorted and fused kernel is a :func:`~._jit.parallel_kernel` pair (prange over
rows, or over chunks of rows when a per-thread scratch row is needed);
:func:`~._jit.pick` runs the serial twin for small inputs. Scatter kernels are
serial: their output rows are written in input order, which defines duplicates.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from ._jit import kernel, parallel_kernel, pick

#: Rows per scratch chunk of the 2-D kernels is ``rows / _CHUNKS`` (at least 1).
_CHUNKS = 256

#: ``gather_reduce`` modes.
MODE_SUM, MODE_MEAN, MODE_MAX = 0, 1, 2

#: How many indices ahead ``gather_reduce`` prefetches table rows.
_PREFETCH = 16


# ----------------------------------------------------------------------------- helpers
@kernel
def _sum_range(values, start, stop, zero):  # pragma: no cover
    # Four independent accumulators: a long segment is not bound by one chain of
    # dependent adds. The lane of value i is (i - start) % 4, so results do not
    # depend on the machine.
    s0 = zero
    s1 = zero
    s2 = zero
    s3 = zero
    i = start
    while i + 4 <= stop:
        s0 += values[i]
        s1 += values[i + 1]
        s2 += values[i + 2]
        s3 += values[i + 3]
        i += 4
    while i < stop:
        s0 += values[i]
        i += 1
    return (s0 + s1) + (s2 + s3)


@kernel
def _max_range(values, start, stop, lowest):  # pragma: no cover
    m0 = lowest
    m1 = lowest
    i = start
    while i + 2 <= stop:
        x0 = values[i]
        x1 = values[i + 1]
        m0 = x0 if (x0 > m0 or x0 != x0) else m0
        m1 = x1 if (x1 > m1 or x1 != x1) else m1
        i += 2
    if i < stop:
        x0 = values[i]
        m0 = x0 if (x0 > m0 or x0 != x0) else m0
    return m1 if (m1 > m0 or m1 != m1) else m0


@kernel
def _min_range(values, start, stop, highest):  # pragma: no cover
    m0 = highest
    m1 = highest
    i = start
    while i + 2 <= stop:
        x0 = values[i]
        x1 = values[i + 1]
        m0 = x0 if (x0 < m0 or x0 != x0) else m0
        m1 = x1 if (x1 < m1 or x1 != x1) else m1
        i += 2
    if i < stop:
        x0 = values[i]
        m0 = x0 if (x0 < m0 or x0 != x0) else m0
    return m1 if (m1 < m0 or m1 != m1) else m0


@kernel
def _chunk_bounds(c, nchunks, num_rows):  # pragma: no cover
    return c * num_rows // nchunks, (c + 1) * num_rows // nchunks


# ------------------------------------------------------------------- sorted: sum family
def _sum_1d(values, offsets, valid, vmask, weights, woffsets, mean, zero, min_count,
            empty, out, counts):  # pragma: no cover
    num_rows = out.shape[0]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    weighted = weights.shape[0] != 0
    want_counts = counts.shape[0] != 0
    for r in prange(num_rows):
        acc = zero
        n = 0
        if all_valid or valid[r] != 0:
            start = offsets[r]
            stop = offsets[r + 1]
            if weighted:
                shift = woffsets[r] - start
                for i in range(start, stop):
                    if not masked or vmask[i] != 0:
                        acc += (zero + weights[i + shift]) * values[i]
                        n += 1
            elif masked:
                for i in range(start, stop):
                    if vmask[i] != 0:
                        acc += values[i]
                        n += 1
            else:
                acc = _sum_range(values, start, stop, zero)
                n = stop - start
        if want_counts:
            counts[r] = n
        if n < min_count:
            out[r] = empty
        elif mean:
            out[r] = acc / n
        else:
            out[r] = acc


def _sum_2d(values, offsets, valid, vmask, weights, woffsets, mean, zero, min_count,
            empty, out, counts):  # pragma: no cover
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    weighted = weights.shape[0] != 0
    want_counts = counts.shape[0] != 0
    nchunks = min(num_rows, _CHUNKS)
    for c in prange(nchunks):
        acc = np.full(width, zero)
        first, last = _chunk_bounds(c, nchunks, num_rows)
        for r in range(first, last):
            for d in range(width):
                acc[d] = zero
            n = 0
            if all_valid or valid[r] != 0:
                start = offsets[r]
                stop = offsets[r + 1]
                shift = woffsets[r] - start if weighted else 0
                for i in range(start, stop):
                    if masked and vmask[i] == 0:
                        continue
                    n += 1
                    if weighted:
                        w = zero + weights[i + shift]
                        for d in range(width):
                            acc[d] += w * values[i, d]
                    else:
                        for d in range(width):
                            acc[d] += values[i, d]
            if want_counts:
                counts[r] = n
            if n < min_count:
                for d in range(width):
                    out[r, d] = empty
            elif mean:
                for d in range(width):
                    out[r, d] = acc[d] / n
            else:
                for d in range(width):
                    out[r, d] = acc[d]


# ---------------------------------------------------------------- sorted: max/min family
def _extreme_1d(values, offsets, valid, vmask, is_max, init, min_count, empty, out,
                counts):  # pragma: no cover
    num_rows = out.shape[0]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    want_counts = counts.shape[0] != 0
    for r in prange(num_rows):
        m = init
        n = 0
        if all_valid or valid[r] != 0:
            start = offsets[r]
            stop = offsets[r + 1]
            if masked:
                for i in range(start, stop):
                    if vmask[i] != 0:
                        x = values[i]
                        n += 1
                        if is_max:
                            m = x if (x > m or x != x) else m
                        else:
                            m = x if (x < m or x != x) else m
            else:
                n = stop - start
                if is_max:
                    m = _max_range(values, start, stop, init)
                else:
                    m = _min_range(values, start, stop, init)
        if want_counts:
            counts[r] = n
        out[r] = empty if n < min_count else m


def _extreme_2d(values, offsets, valid, vmask, is_max, init, min_count, empty, out,
                counts):  # pragma: no cover
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    want_counts = counts.shape[0] != 0
    nchunks = min(num_rows, _CHUNKS)
    for c in prange(nchunks):
        acc = np.full(width, init)
        first, last = _chunk_bounds(c, nchunks, num_rows)
        for r in range(first, last):
            for d in range(width):
                acc[d] = init
            n = 0
            if all_valid or valid[r] != 0:
                for i in range(offsets[r], offsets[r + 1]):
                    if masked and vmask[i] == 0:
                        continue
                    n += 1
                    if is_max:
                        for d in range(width):
                            x = values[i, d]
                            m = acc[d]
                            acc[d] = x if (x > m or x != x) else m
                    else:
                        for d in range(width):
                            x = values[i, d]
                            m = acc[d]
                            acc[d] = x if (x < m or x != x) else m
            if want_counts:
                counts[r] = n
            if n < min_count:
                for d in range(width):
                    out[r, d] = empty
            else:
                for d in range(width):
                    out[r, d] = acc[d]


# ------------------------------------------------------------ sorted: argmax/argmin, 2-D
def _arg_extreme_2d(values, offsets, valid, vmask, is_max, min_count, empty, out,
                    counts):  # pragma: no cover
    # out[r, d]: position within row r of its first max (min) in column d; the first
    # NaN wins, as numpy.argmax does.
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    want_counts = counts.shape[0] != 0
    nchunks = min(num_rows, _CHUNKS)
    for c in prange(nchunks):
        best = np.empty(width, values.dtype)
        first, last = _chunk_bounds(c, nchunks, num_rows)
        for r in range(first, last):
            n = 0
            if all_valid or valid[r] != 0:
                start = offsets[r]
                for i in range(start, offsets[r + 1]):
                    if masked and vmask[i] == 0:
                        continue
                    pos = i - start
                    if n == 0:
                        for d in range(width):
                            best[d] = values[i, d]
                            out[r, d] = pos
                    else:
                        for d in range(width):
                            x = values[i, d]
                            m = best[d]
                            if m == m and (x != x or (x > m if is_max else x < m)):
                                best[d] = x
                                out[r, d] = pos
                    n += 1
            if want_counts:
                counts[r] = n
            if n < min_count or n == 0:
                for d in range(width):
                    out[r, d] = empty


# ------------------------------------------------------------------- sorted: prod, 2-D
def _prod_2d(values, offsets, valid, vmask, one, min_count, empty, out,
             counts):  # pragma: no cover
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    want_counts = counts.shape[0] != 0
    nchunks = min(num_rows, _CHUNKS)
    for c in prange(nchunks):
        acc = np.full(width, one)
        first, last = _chunk_bounds(c, nchunks, num_rows)
        for r in range(first, last):
            for d in range(width):
                acc[d] = one
            n = 0
            if all_valid or valid[r] != 0:
                for i in range(offsets[r], offsets[r + 1]):
                    if masked and vmask[i] == 0:
                        continue
                    n += 1
                    for d in range(width):
                        acc[d] *= values[i, d]
            if want_counts:
                counts[r] = n
            if n < min_count:
                for d in range(width):
                    out[r, d] = empty
            else:
                for d in range(width):
                    out[r, d] = acc[d]


# -------------------------------------------------------------- sorted: logsumexp, 2-D
def _logsumexp_2d(values, offsets, valid, vmask, zero, min_count, empty, out,
                  counts):  # pragma: no cover
    # Stable: m = max(x), result = m + log(sum(exp(x - m))), in float64. A column whose
    # max is +-inf gives that infinity, a NaN gives NaN.
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    want_counts = counts.shape[0] != 0
    nchunks = min(num_rows, _CHUNKS)
    for c in prange(nchunks):
        mx = np.full(width, zero)
        acc = np.full(width, zero)
        first, last = _chunk_bounds(c, nchunks, num_rows)
        for r in range(first, last):
            n = 0
            for d in range(width):
                mx[d] = -np.inf
                acc[d] = zero
            if all_valid or valid[r] != 0:
                start = offsets[r]
                stop = offsets[r + 1]
                for i in range(start, stop):
                    if masked and vmask[i] == 0:
                        continue
                    n += 1
                    for d in range(width):
                        x = zero + values[i, d]
                        m = mx[d]
                        mx[d] = x if (x > m or x != x) else m
                for i in range(start, stop):
                    if masked and vmask[i] == 0:
                        continue
                    for d in range(width):
                        m = mx[d]
                        if np.isfinite(m):
                            acc[d] += np.exp((zero + values[i, d]) - m)
            if want_counts:
                counts[r] = n
            if n < min_count:
                for d in range(width):
                    out[r, d] = empty
            else:
                for d in range(width):
                    m = mx[d]
                    out[r, d] = m + np.log(acc[d]) if np.isfinite(m) else m


# ------------------------------------------------------------- fused gather + reduce
@intrinsic
def _prefetch(typingctx, data, row, col):  # pragma: no cover
    """Hint the CPU to load ``data[row, col]``'s cache line (``llvm.prefetch``; never faults)."""
    sig = types.void(data, row, col)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = [context.cast(builder, a, t, types.intp)
               for a, t in zip(args[1:], signature.args[1:], strict=True)]
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        # read, high temporal locality (into L1), data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@kernel
def _prefetch_row(data, indices, j, line):  # pragma: no cover
    # Prefetch every cache line of the table row that position j will read.
    if j < indices.shape[0]:
        row = indices[j]
        if 0 <= row < data.shape[0]:
            for col in range(0, data.shape[1], line):
                _prefetch(data, row, col)


def _gather_reduce(data, indices, offsets, valid, vmask, weights, woffsets, mode, zero,
                   lowest, min_count, empty, line, out, counts):  # pragma: no cover
    # Row r reduces data[indices[i]] (times its weight) for i in offsets[r]:offsets[r+1]
    # without materialising the gathered rows: each is added into a scratch row. Table
    # rows are prefetched _PREFETCH ids ahead (random rows miss every cache level).
    num_rows = out.shape[0]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    weighted = weights.shape[0] != 0
    want_counts = counts.shape[0] != 0
    is_max = mode == MODE_MAX
    plain = not (masked or weighted or is_max)
    nchunks = min(num_rows, _CHUNKS)
    for c in prange(nchunks):
        acc = np.full(width, zero)
        first, last = _chunk_bounds(c, nchunks, num_rows)
        for r in range(first, last):
            init = lowest if is_max else zero
            for d in range(width):
                acc[d] = init
            n = 0
            if all_valid or valid[r] != 0:
                start = offsets[r]
                stop = offsets[r + 1]
                head = start
                if plain:
                    # Four rows per pass: a quarter of the scratch-row traffic. Each pair
                    # of float32 values adds exactly in float64.
                    while head + 4 <= stop:
                        for k in range(4):
                            _prefetch_row(data, indices, head + _PREFETCH + k, line)
                        a = indices[head]
                        b = indices[head + 1]
                        e = indices[head + 2]
                        f = indices[head + 3]
                        for d in range(width):
                            acc[d] += (((zero + data[a, d]) + data[b, d])
                                       + ((zero + data[e, d]) + data[f, d]))
                        head += 4
                    n = stop - start
                shift = woffsets[r] - start if weighted else 0
                for i in range(head, stop):
                    _prefetch_row(data, indices, i + _PREFETCH, line)
                    if masked and vmask[i] == 0:
                        continue
                    if not plain:
                        n += 1
                    row = indices[i]
                    if weighted:
                        w = zero + weights[i + shift]
                        if is_max:
                            for d in range(width):
                                x = w * data[row, d]
                                m = acc[d]
                                acc[d] = x if (x > m or x != x) else m
                        else:
                            for d in range(width):
                                acc[d] += w * data[row, d]
                    elif is_max:
                        for d in range(width):
                            x = data[row, d]
                            m = acc[d]
                            acc[d] = x if (x > m or x != x) else m
                    else:
                        for d in range(width):
                            acc[d] += data[row, d]
            if want_counts:
                counts[r] = n
            if n < min_count:
                for d in range(width):
                    out[r, d] = empty
            elif mode == MODE_MEAN:
                for d in range(width):
                    out[r, d] = acc[d] / n
            else:
                for d in range(width):
                    out[r, d] = acc[d]


# ------------------------------------------------------------------ unsorted (scatter)
@kernel
def _scatter_add(values, ids, vmask, weights, zero, acc, counts):  # pragma: no cover
    # acc[S, D] starts at zero; values are added in input order.
    masked = vmask.shape[0] != 0
    weighted = weights.shape[0] != 0
    width = acc.shape[1]
    for i in range(values.shape[0]):
        if masked and vmask[i] == 0:
            continue
        s = ids[i]
        counts[s] += 1
        if weighted:
            w = zero + weights[i]
            for d in range(width):
                acc[s, d] += w * values[i, d]
        else:
            for d in range(width):
                acc[s, d] += values[i, d]


@kernel
def _scatter_extreme(values, ids, vmask, is_max, out, counts):  # pragma: no cover
    # out[S, D] starts at the lowest (highest) value of its dtype.
    masked = vmask.shape[0] != 0
    width = out.shape[1]
    for i in range(values.shape[0]):
        if masked and vmask[i] == 0:
            continue
        s = ids[i]
        counts[s] += 1
        if is_max:
            for d in range(width):
                x = values[i, d]
                m = out[s, d]
                out[s, d] = x if (x > m or x != x) else m
        else:
            for d in range(width):
                x = values[i, d]
                m = out[s, d]
                out[s, d] = x if (x < m or x != x) else m


@kernel
def _scatter_assign(data, indices, slices):  # pragma: no cover
    # In index order, so the last write to a repeated index wins.
    width = data.shape[1]
    for i in range(indices.shape[0]):
        row = indices[i]
        for d in range(width):
            data[row, d] = slices[i, d]


@kernel
def _scatter_weighted_sum(data, w0, indices, slices, w1):  # pragma: no cover
    # data[idx] = w0 * data[idx] + w1 * slices[i], in index order (Caffe2's loop): a
    # repeated index is scaled by w0 once per occurrence. Computed in float64.
    width = data.shape[1]
    for i in range(indices.shape[0]):
        row = indices[i]
        for d in range(width):
            data[row, d] = w0 * data[row, d] + w1 * slices[i, d]


@kernel
def _ids_to_offsets(ids, offsets):  # pragma: no cover
    # ids are sorted and in [0, len(offsets) - 1): offsets[k] = first i with ids[i] >= k.
    num_segments = offsets.shape[0] - 1
    k = 0
    for i in range(ids.shape[0]):
        s = ids[i]
        while k <= s:
            offsets[k] = i
            k += 1
    while k <= num_segments:
        offsets[k] = ids.shape[0]
        k += 1


_SUM_1D = parallel_kernel(_sum_1d)
_SUM_2D = parallel_kernel(_sum_2d)
_EXTREME_1D = parallel_kernel(_extreme_1d)
_EXTREME_2D = parallel_kernel(_extreme_2d)
_ARG_EXTREME_2D = parallel_kernel(_arg_extreme_2d)
_PROD_2D = parallel_kernel(_prod_2d)
_LOGSUMEXP_2D = parallel_kernel(_logsumexp_2d)
_GATHER_REDUCE = parallel_kernel(_gather_reduce)

_NONE_U8 = np.empty(0, dtype=np.uint8)
_NONE_F64 = np.empty(0, dtype=np.float64)
_NONE_I64 = np.empty(0, dtype=np.int64)


def _work(values: np.ndarray, num_rows: int) -> int:
    return values.size + num_rows


# --------------------------------------------------------------------- public kernels
def sorted_sum(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
               vmask: np.ndarray | None, weights: np.ndarray | None,
               woffsets: np.ndarray | None, mean: bool, zero: np.generic, min_count: int,
               empty: np.generic, out: np.ndarray, counts: np.ndarray | None) -> None:
    """Sum (``mean``: divided by the count) of each row into ``out`` (see module docstring)."""
    pair = _SUM_1D if values.ndim == 1 else _SUM_2D
    pick(pair, _work(values, len(out)))(
        values, offsets, _NONE_U8 if valid is None else valid,
        _NONE_U8 if vmask is None else vmask, _NONE_F64 if weights is None else weights,
        offsets if woffsets is None else woffsets, mean, zero, min_count, empty, out,
        _NONE_I64 if counts is None else counts)


def sorted_extreme(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                   vmask: np.ndarray | None, is_max: bool, init: np.generic, min_count: int,
                   empty: np.generic, out: np.ndarray, counts: np.ndarray | None) -> None:
    """Max (``is_max``) or min of each row; ``init`` is the dtype's lowest (highest) value."""
    pair = _EXTREME_1D if values.ndim == 1 else _EXTREME_2D
    pick(pair, _work(values, len(out)))(
        values, offsets, _NONE_U8 if valid is None else valid,
        _NONE_U8 if vmask is None else vmask, is_max, init, min_count, empty, out,
        _NONE_I64 if counts is None else counts)


def sorted_arg_extreme(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                       vmask: np.ndarray | None, is_max: bool, min_count: int, empty: int,
                       out: np.ndarray, counts: np.ndarray | None) -> None:
    """Position within the row of the first max (min) of each column; 2-D only."""
    pick(_ARG_EXTREME_2D, _work(values, len(out)))(
        values, offsets, _NONE_U8 if valid is None else valid,
        _NONE_U8 if vmask is None else vmask, is_max, min_count, np.int64(empty), out,
        _NONE_I64 if counts is None else counts)


def sorted_prod(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                vmask: np.ndarray | None, one: np.generic, min_count: int, empty: np.generic,
                out: np.ndarray, counts: np.ndarray | None) -> None:
    """Product of each row; ``one`` fixes the accumulator dtype; 2-D only."""
    pick(_PROD_2D, _work(values, len(out)))(
        values, offsets, _NONE_U8 if valid is None else valid,
        _NONE_U8 if vmask is None else vmask, one, min_count, empty, out,
        _NONE_I64 if counts is None else counts)


def sorted_logsumexp(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                     vmask: np.ndarray | None, min_count: int, empty: np.generic,
                     out: np.ndarray, counts: np.ndarray | None) -> None:
    """Numerically stable log-sum-exp of each row (float64 inside); 2-D only."""
    pick(_LOGSUMEXP_2D, 4 * _work(values, len(out)))(
        values, offsets, _NONE_U8 if valid is None else valid,
        _NONE_U8 if vmask is None else vmask, np.float64(0), min_count, empty, out,
        _NONE_I64 if counts is None else counts)


def gather_reduce(data: np.ndarray, indices: np.ndarray, offsets: np.ndarray,
                  valid: np.ndarray | None, vmask: np.ndarray | None,
                  weights: np.ndarray | None, woffsets: np.ndarray | None, mode: int,
                  zero: np.generic, lowest: np.generic, min_count: int, empty: np.generic,
                  out: np.ndarray, counts: np.ndarray | None) -> None:
    """Reduce ``data[indices[i]]`` per row (``mode``: MODE_SUM, MODE_MEAN or MODE_MAX)."""
    work = (int(offsets[-1]) - int(offsets[0])) * data.shape[1] + len(out)
    line = max(1, 64 // data.itemsize)  # elements per 64-byte cache line
    pick(_GATHER_REDUCE, work)(
        data, indices, offsets, _NONE_U8 if valid is None else valid,
        _NONE_U8 if vmask is None else vmask, _NONE_F64 if weights is None else weights,
        offsets if woffsets is None else woffsets, mode, zero, lowest, min_count, empty,
        line, out, _NONE_I64 if counts is None else counts)


def scatter_add(values: np.ndarray, ids: np.ndarray, vmask: np.ndarray | None,
                weights: np.ndarray | None, zero: np.generic, acc: np.ndarray,
                counts: np.ndarray) -> None:
    """``acc[ids[i]] += weights[i] * values[i]`` and count, in input order."""
    _scatter_add(values, ids, _NONE_U8 if vmask is None else vmask,
                 _NONE_F64 if weights is None else weights, zero, acc, counts)


def scatter_extreme(values: np.ndarray, ids: np.ndarray, vmask: np.ndarray | None,
                    is_max: bool, out: np.ndarray, counts: np.ndarray) -> None:
    """``out[ids[i]] = max(out[ids[i]], values[i])`` (or min), NaN propagating."""
    _scatter_extreme(values, ids, _NONE_U8 if vmask is None else vmask, is_max, out, counts)


def scatter_assign(data: np.ndarray, indices: np.ndarray, slices: np.ndarray) -> None:
    """``data[indices[i]] = slices[i]`` in order (last write wins); 2-D views."""
    _scatter_assign(data, indices, slices)


def scatter_weighted_sum(data: np.ndarray, w0: float, indices: np.ndarray,
                         slices: np.ndarray, w1: float) -> None:
    """``data[idx] = w0 * data[idx] + w1 * slices[i]`` in index order; 2-D views."""
    _scatter_weighted_sum(data, np.float64(w0), indices, slices, np.float64(w1))


def sorted_ids_to_offsets(ids: np.ndarray, num_segments: int) -> np.ndarray:
    """int64 offsets (``num_segments + 1``) of checked, sorted segment ids."""
    offsets = np.empty(num_segments + 1, dtype=np.int64)
    _ids_to_offsets(ids, offsets)
    return offsets
