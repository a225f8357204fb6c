"""CPU kernels of the fused gather + reduce, the unsorted reductions and the scatters.

Private to :mod:`.segment`, whose public functions choose and call them; the
conventions (masks, weights, ``zero``, ``counts``, ``min_count``, NaN) are in its
docstring. The LLVM IR the fused kernels use is here too: ``prefetch_row`` hints a
table row's cache lines ahead of use, ``sum_rows_into`` / ``sum_row_vector_into`` /
``weighted_rows_into`` sum gathered rows in registers. The fused kernels' ``*_shared`` twins let
the kernel threads take their blocks in turn (``take_block``, an atomic counter).
Kernels that read indices check
them as they go: each parallel block writes the position of the first index it finds
out of range into ``bad`` (``-1``: none) and stops, and the caller raises before any
result is used.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._jit import kernel
from ._segment_ir import NVEC, float_table, inline, prefetch_fn, splat, take_max, take_min

#: Rows summed in the table's dtype before they are added into float64 (fast path).
BLOCK = 4

#: ``gather_reduce`` modes.
MODE_SUM, MODE_MEAN, MODE_MAX = 0, 1, 2

#: How many indices ahead the fused kernels prefetch table rows (each row's lines are
#: hinted; further ahead, the hinted lines were evicted again before use on a heavy-tailed
#: [1M, 64] float32 workload).
PREFETCH = 32

#: The fast sum/mean path splits a bag longer than this many ids (a multiple of BLOCK)
#: into pieces of this many ids, whatever the number of threads: the pieces are summed
#: apart (in parallel) and their float64 sums added in order.
PIECE = 1 << 14

#: How many values ahead the unsorted kernels prefetch the partial results they update
#: (random updates of a table that misses L2).
SCATTER_PREFETCH = 32


# ---------------------------------------------------------- gathered table rows
def _prefetch_row_codegen(write: bool, first_line: bool = False):  # pragma: no cover
    def codegen(context, builder, signature, args):
        table = context.make_array(signature.args[0])(context, builder, args[0])
        ids = context.make_array(signature.args[1])(context, builder, args[1])
        j = context.cast(builder, args[2], signature.args[2], types.intp)
        _emit_prefetch_row(context, builder, signature.args[0], table, ids, j, write,
                           first_line)
        return context.get_dummy_value()

    return codegen


@intrinsic
def prefetch_row(typingctx, data, indices, j):  # pragma: no cover
    """Prefetch every cache line of ``data[indices[j]]`` (if ``j`` and the row exist).

    A row need not start on a cache line (numpy aligns to 16 bytes), so the lines from
    its first to its last byte are all hinted. ``llvm.prefetch`` never faults.
    """
    if not (isinstance(data, types.Array) and data.ndim == 2 and data.layout == "C"):
        return None
    return types.void(data, indices, j), _prefetch_row_codegen(False)


@intrinsic
def prefetch_row_to_write(typingctx, data, indices, j):  # pragma: no cover
    """Prefetch ``data[indices[j]]`` as ``prefetch_row`` does, with the intent to write.

    The lines arrive exclusive, so a read-modify-write of the row does not wait for a
    second coherence transaction.
    """
    if not (isinstance(data, types.Array) and data.ndim == 2 and data.layout == "C"):
        return None
    return types.void(data, indices, j), _prefetch_row_codegen(True)


@intrinsic
def prefetch_item_to_write(typingctx, data, indices, j):  # pragma: no cover
    """Prefetch, to write, the cache line of ``data[indices[j]]`` (1-D ``data``)."""
    if not (isinstance(data, types.Array) and data.ndim == 1 and data.layout == "C"):
        return None
    return types.void(data, indices, j), _prefetch_row_codegen(True, True)


def _emit_prefetch_row(context, builder, table_t, table, ids, j, write: bool = False,
                       first_line: bool = False):  # pragma: no cover
    """IR of ``prefetch_row``: hint the lines of ``table[ids[j]]`` if both exist."""
    intp = context.get_value_type(types.intp)
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    fn = prefetch_fn(builder)
    num_ids = builder.extract_value(ids.shape, 0)
    with builder.if_then(builder.icmp_unsigned("<", j, num_ids), likely=True):
        row = builder.load(builder.gep(ids.data, [j]))
        row = builder.sext(row, intp) if row.type.width < intp.width else row
        num_rows = builder.extract_value(table.shape, 0)
        with builder.if_then(builder.icmp_unsigned("<", row, num_rows), likely=True):
            base = builder.gep(builder.bitcast(table.data, i8p),
                               [builder.mul(row, builder.extract_value(table.strides, 0))])
            if first_line:
                builder.call(fn, [base, i32(int(write)), i32(3), i32(1)])
                return
            size = ir.Constant(intp, context.get_abi_sizeof(context.get_value_type(table_t.dtype)))
            nbytes = builder.mul(builder.extract_value(table.shape, 1), size)
            with cgutils.for_range_slice(builder, ir.Constant(intp, 0), nbytes,
                                         ir.Constant(intp, 64), intp=intp) as (off, _):
                builder.call(fn, [builder.gep(base, [off]), i32(int(write)), i32(3), i32(1)])
            last = builder.sub(nbytes, ir.Constant(intp, 1))
            with builder.if_then(builder.icmp_signed(">=", last, ir.Constant(intp, 0))):
                builder.call(fn, [builder.gep(base, [last]), i32(int(write)), i32(3), i32(1)])


def _sum_rows_codegen(nvec: int, weighted: bool):  # pragma: no cover
    """Code generator of the gathered-row sums (``nvec`` vectors; ``weighted``)."""

    def codegen(context, builder, signature, args):
        if weighted:
            data_t, idx_t, w_t, shift_t, first_t, last_t, col_t, acc_t, ahead_t = signature.args
            data_a, idx_a, w_a, shift_a, first_a, last_a, col_a, acc_a, ahead_a = args
            weights = context.make_array(w_t)(context, builder, w_a)
            shift = context.cast(builder, shift_a, shift_t, types.intp)
        else:
            data_t, idx_t, first_t, last_t, col_t, acc_t, ahead_t = signature.args
            data_a, idx_a, first_a, last_a, col_a, acc_a, ahead_a = args
        table = context.make_array(data_t)(context, builder, data_a)
        ids = context.make_array(idx_t)(context, builder, idx_a)
        accs = context.make_array(acc_t)(context, builder, acc_a)
        intp = context.get_value_type(types.intp)
        first = context.cast(builder, first_a, first_t, types.intp)
        last = context.cast(builder, last_a, last_t, types.intp)
        col = context.cast(builder, col_a, col_t, types.intp)
        ahead = context.cast(builder, ahead_a, ahead_t, types.intp)
        elt = context.get_value_type(data_t.dtype)
        size = context.get_abi_sizeof(elt)
        lanes = 64 // size
        vec = ir.VectorType(elt, lanes)
        vec64 = ir.VectorType(ir.DoubleType(), lanes)
        # float64 accumulators for the whole call, and one run's sums in the table dtype;
        # all allocas are promoted to registers.
        totals, sums, acc_at = [], [], []
        for b in range(nvec):
            at = builder.gep(accs.data, [builder.add(col, ir.Constant(intp, lanes * b))])
            at = builder.bitcast(at, vec64.as_pointer())
            total = cgutils.alloca_once(builder, vec64)
            builder.store(builder.load(at, align=8), total)
            totals.append(total)
            sums.append(cgutils.alloca_once(builder, vec))
            acc_at.append(at)
        base = builder.bitcast(table.data, ir.IntType(8).as_pointer())
        stride = builder.extract_value(table.strides, 0)
        col_bytes = builder.mul(col, ir.Constant(intp, size))

        def row_vectors(i):
            with builder.if_then(builder.icmp_signed(">", ahead, ir.Constant(intp, 0))):
                _emit_prefetch_row(context, builder, data_t, table, ids, builder.add(i, ahead))
            row = builder.load(builder.gep(ids.data, [i]))
            row = builder.sext(row, intp) if row.type.width < intp.width else row
            start = builder.add(builder.mul(row, stride), col_bytes)
            for b in range(nvec):
                at = builder.gep(base, [builder.add(start, ir.Constant(intp, 64 * b))])
                yield b, builder.load(builder.bitcast(at, vec.as_pointer()), align=size)

        if weighted:  # every row in float64: w * x is exact for float32 w and x
            with cgutils.for_range_slice(builder, first, last, ir.Constant(intp, 1),
                                         intp=intp) as (i, _):
                w = builder.load(builder.gep(weights.data, [builder.add(i, shift)]))
                w = context.cast(builder, w, w_t.dtype, types.float64)
                wv = splat(builder, w, lanes)
                for b, value in row_vectors(i):
                    if size == 4:
                        value = builder.fpext(value, vec64)
                    total = totals[b]
                    builder.store(builder.fadd(builder.load(total), builder.fmul(wv, value)),
                                  total)
        else:
            with cgutils.for_range_slice(builder, first, last, ir.Constant(intp, BLOCK),
                                         intp=intp) as (run, _):
                run_end = builder.add(run, ir.Constant(intp, BLOCK))
                run_end = builder.select(builder.icmp_signed("<", run_end, last), run_end, last)
                for slot in sums:
                    builder.store(ir.Constant(vec, None), slot)
                with cgutils.for_range_slice(builder, run, run_end, ir.Constant(intp, 1),
                                             intp=intp) as (i, _):
                    for b, value in row_vectors(i):
                        builder.store(builder.fadd(builder.load(sums[b]), value), sums[b])
                for total, slot in zip(totals, sums, strict=True):
                    run_sum = builder.load(slot)
                    if size == 4:
                        run_sum = builder.fpext(run_sum, vec64)
                    builder.store(builder.fadd(builder.load(total), run_sum), total)
        for total, at in zip(totals, acc_at, strict=True):
            builder.store(builder.load(total), at, align=8)
        return context.get_dummy_value()

    return codegen


def _sum_rows_typing(data, acc):  # pragma: no cover
    return (float_table(data) and isinstance(acc, types.Array)
            and acc.dtype == types.float64)


@intrinsic
def sum_rows_into(typingctx, data, indices, first, last, col, acc, ahead):  # pragma: no cover
    """``acc[col:col+G] += sum(data[indices[i], col:col+G] for i in range(first, last))``.

    ``data`` is a C-contiguous float32/float64 table, ``acc`` float64, and
    ``G = NVEC * 64 // data.itemsize`` (64 float32 or 32 float64 columns). Runs of
    ``BLOCK`` rows (from ``first``) are summed in the table's dtype, each run's sum is
    added to float64 accumulators, all in registers, and ``acc`` is written once. With
    ``ahead > 0`` each step also prefetches the row ``ahead`` positions later.
    """
    if not _sum_rows_typing(data, acc):
        return None
    sig = types.void(data, indices, first, last, col, acc, ahead)
    return sig, _sum_rows_codegen(NVEC, False)


@intrinsic
def sum_row_vector_into(typingctx, data, indices, first, last, col, acc,
                        ahead):  # pragma: no cover
    """As ``sum_rows_into`` for one 64-byte vector: 16 float32 or 8 float64 columns."""
    if not _sum_rows_typing(data, acc):
        return None
    return types.void(data, indices, first, last, col, acc, ahead), _sum_rows_codegen(1, False)


@intrinsic
def weighted_rows_into(typingctx, data, indices, weights, shift, first, last, col, acc,
                       ahead):  # pragma: no cover
    """``acc[col:col+G] += sum(weights[i + shift] * data[indices[i], col:col+G])``.

    As ``sum_rows_into`` (``G`` columns, accumulators in registers, prefetching) but
    every row is scaled by its weight and added in float64 (no runs in the table's
    dtype). ``weights`` are float32 or float64.
    """
    if not (_sum_rows_typing(data, acc) and isinstance(weights, types.Array)
            and weights.dtype in (types.float32, types.float64)):
        return None
    sig = types.void(data, indices, weights, shift, first, last, col, acc, ahead)
    return sig, _sum_rows_codegen(NVEC, True)


@inline
def _first_out_of_range(indices, start, stop, bound):  # pragma: no cover
    # The first j in [start, stop) with indices[j] outside [0, bound), else -1.
    for j in range(start, stop):
        i = indices[j]
        if i < 0 or i >= bound:
            return j
    return -1


# ------------------------------------------------------------- fused gather + reduce
@inline
def _sum_ids_into(data, indices, weights, shift, start, stop, line, group, acc):  # pragma: no cover
    # acc[:] += the rows data[indices[i]] (times weights[i + shift]) for i in [start, stop),
    # as gather_sum_fast describes; rows PREFETCH ids ahead are prefetched.
    width = acc.shape[0]
    weighted = weights.shape[0] != 0
    col = 0
    ahead = PREFETCH  # the first pass over the ids prefetches
    while col + group <= width:
        if weighted:
            weighted_rows_into(data, indices, weights, shift, start, stop, col, acc, ahead)
        else:
            sum_rows_into(data, indices, start, stop, col, acc, ahead)
        col += group
        ahead = 0
    while not weighted and col + line <= width:
        sum_row_vector_into(data, indices, start, stop, col, acc, ahead)
        col += line
        ahead = 0
    if col < width:  # the last columns, in float64 one row at a time
        for i in range(start, stop):
            row = indices[i]
            w = weights[i + shift] if weighted else 1.0
            for d in range(col, width):
                acc[d] += w * data[row, d]


def gather_sum_pieces(data, indices, offsets, weights, woffsets, pstart, pbag, line, group,
                      partial, bad, lo, hi):  # pragma: no cover
    # The pieces of the bags longer than PIECE ids (gather_sum_fast's fast case): piece p
    # (in [lo, hi)) of bag r = pbag[p] is ids[pstart[p]:min(pstart[p] + PIECE,
    # offsets[r + 1])]; its float64 sum (BLOCK runs from pstart[p], as gather_sum_fast)
    # goes to partial[p]. bad[p]: the first id of the piece out of range, or -1.
    bound = data.shape[0]
    weighted = weights.shape[0] != 0
    for p in range(lo, hi):
        acc = partial[p]
        acc[:] = 0.0
        r = pbag[p]
        start = pstart[p]
        stop = min(start + PIECE, offsets[r + 1])
        bad[p] = _first_out_of_range(indices, start, stop, bound)
        if bad[p] >= 0:
            continue
        shift = woffsets[r] - offsets[r] if weighted else 0
        _sum_ids_into(data, indices, weights, shift, start, stop, line, group, acc)


def gather_sum_fast(data, indices, offsets, valid, weights, woffsets, mean, min_count,
                    empty, line, group, pbag, partial, out, bounds, bad, lo,
                    hi):  # pragma: no cover
    # gather_reduce for a float table, sum/mean, no null ids. Unweighted: runs of BLOCK
    # ids are summed in registers in the table's dtype and accumulated in float64
    # registers (sum_rows_into); weighted: each row is scaled and added in float64
    # (weighted_rows_into). Rows PREFETCH ids ahead are prefetched. Row r's ids are
    # bounds-checked just before they are used (they are then read from L1). A bag
    # longer than PIECE ids (when pbag, the bag of each piece, is not empty) adds its
    # pieces' float64 sums partial[k] (gather_sum_pieces, already run and checked) in order.
    width = out.shape[1]
    bound = data.shape[0]
    all_valid = valid.shape[0] == 0
    weighted = weights.shape[0] != 0
    pieces = pbag.shape[0] != 0
    for b in range(lo, hi):
        acc = np.zeros(width)
        bad[b] = -1
        for r in range(bounds[b], bounds[b + 1]):
            for d in range(width):
                acc[d] = 0.0
            n = 0
            if all_valid or valid[r] != 0:
                start = offsets[r]
                stop = offsets[r + 1]
                n = stop - start
                if pieces and n > PIECE:
                    k = np.searchsorted(pbag, r)
                    while k < pbag.shape[0] and pbag[k] == r:
                        for d in range(width):
                            acc[d] += partial[k, d]
                        k += 1
                else:
                    j = _first_out_of_range(indices, start, stop, bound)
                    if j >= 0:
                        bad[b] = j
                        break
                    shift = woffsets[r] - start if weighted else 0
                    _sum_ids_into(data, indices, weights, shift, start, stop, line, group,
                                  acc)
            if n < min_count:
                for d in range(width):
                    out[r, d] = empty
            elif mean:
                for d in range(width):
                    out[r, d] = acc[d] / n
            else:
                for d in range(width):
                    out[r, d] = acc[d]


def gather_reduce(data, indices, offsets, valid, vmask, weights, woffsets, mode, zero,
                  lowest, min_count, empty, out, counts, bounds, bad, lo,
                  hi):  # pragma: no cover
    # Row r reduces data[indices[i]] (times its weight) for i in offsets[r]:offsets[r+1]
    # without materialising the gathered rows: each is added into a scratch row. Table
    # rows are prefetched PREFETCH ids ahead (random rows miss every cache level).
    width = out.shape[1]
    bound = data.shape[0]
    all_valid = valid.shape[0] == 0
    masked = vmask.shape[0] != 0
    weighted = weights.shape[0] != 0
    want_counts = counts.shape[0] != 0
    is_max = mode == MODE_MAX
    plain = not (masked or weighted or is_max)
    for b in range(lo, hi):
        acc = np.full(width, zero)
        bad[b] = -1
        for r in range(bounds[b], bounds[b + 1]):
            init = lowest if is_max else zero
            for d in range(width):
                acc[d] = init
            n = 0
            if all_valid or valid[r] != 0:
                start = offsets[r]
                stop = offsets[r + 1]
                if masked:  # null ids are neither read nor checked
                    j = -1
                    for i in range(start, stop):
                        if vmask[i] != 0 and (indices[i] < 0 or indices[i] >= bound):
                            j = i
                            break
                else:
                    j = _first_out_of_range(indices, start, stop, bound)
                if j >= 0:
                    bad[b] = j
                    break
                head = start
                if plain:
                    # Four rows per pass: a quarter of the scratch-row traffic. Each pair
                    # of float32 values adds exactly in float64.
                    while head + 4 <= stop:
                        for k in range(4):
                            prefetch_row(data, indices, head + PREFETCH + k)
                        i0 = indices[head]
                        i1 = indices[head + 1]
                        i2 = indices[head + 2]
                        i3 = indices[head + 3]
                        for d in range(width):
                            acc[d] += (((zero + data[i0, d]) + data[i1, d])
                                       + ((zero + data[i2, d]) + data[i3, d]))
                        head += 4
                    n = stop - start
                shift = woffsets[r] - start if weighted else 0
                for i in range(head, stop):
                    prefetch_row(data, indices, i + PREFETCH)
                    if masked and vmask[i] == 0:
                        continue
                    if not plain:
                        n += 1
                    row = indices[i]
                    if weighted:
                        w = zero + weights[i + shift]
                        if is_max:
                            for d in range(width):
                                acc[d] = take_max(w * data[row, d], acc[d])
                        else:
                            for d in range(width):
                                acc[d] += w * data[row, d]
                    elif is_max:
                        for d in range(width):
                            acc[d] = take_max(data[row, d], acc[d])
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


# ------------------------------------------------- the fused kernels' blocks, shared out
@intrinsic
def take_block(typingctx, taken):  # pragma: no cover
    """Add one to ``taken[0]`` (int64) atomically; return the value it had.

    The kernel threads of one call share one such counter: each takes its next block
    with it, in compiled code, without going back to Python (and the GIL) in between.
    """
    if not (isinstance(taken, types.Array) and taken.ndim == 1
            and taken.dtype == types.int64):
        return None

    def codegen(context, builder, signature, args):
        counter = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.atomic_rmw("add", counter.data, ir.Constant(ir.IntType(64), 1),
                                  "monotonic")

    return types.int64(taken), codegen


_gather_sum_fast_block = inline(gather_sum_fast)
_gather_sum_pieces_block = inline(gather_sum_pieces)
_gather_reduce_block = inline(gather_reduce)


def gather_sum_fast_shared(data, indices, offsets, valid, weights, woffsets, mean, min_count,
                           empty, line, group, pbag, partial, out, bounds, bad, taken, lo,
                           hi):  # pragma: no cover
    # gather_sum_fast over the blocks of bounds, taken in turn through the counter taken
    # (zero at the start of the call) by every caller: one call per kernel thread, its
    # part [lo, hi) unused. Each block is still reduced whole, in order, by one thread.
    b = take_block(taken)
    while b < bounds.shape[0] - 1:
        _gather_sum_fast_block(data, indices, offsets, valid, weights, woffsets, mean,
                               min_count, empty, line, group, pbag, partial, out, bounds,
                               bad, b, b + 1)
        b = take_block(taken)


def gather_sum_pieces_shared(data, indices, offsets, weights, woffsets, pstart, pbag, line,
                             group, partial, bad, taken, lo, hi):  # pragma: no cover
    # gather_sum_pieces over its pieces, taken in turn as gather_sum_fast_shared does.
    p = take_block(taken)
    while p < pbag.shape[0]:
        _gather_sum_pieces_block(data, indices, offsets, weights, woffsets, pstart, pbag,
                                 line, group, partial, bad, p, p + 1)
        p = take_block(taken)


def gather_reduce_shared(data, indices, offsets, valid, vmask, weights, woffsets, mode, zero,
                         lowest, min_count, empty, out, counts, bounds, bad, taken, lo,
                         hi):  # pragma: no cover
    # gather_reduce over the blocks of bounds, taken in turn as gather_sum_fast_shared does.
    b = take_block(taken)
    while b < bounds.shape[0] - 1:
        _gather_reduce_block(data, indices, offsets, valid, vmask, weights, woffsets, mode,
                             zero, lowest, min_count, empty, out, counts, bounds, bad, b, b + 1)
        b = take_block(taken)


# ------------------------------------------------------------------ unsorted (scatter)
@inline
def _scatter_part(mine, tally, values, ids, vmask, weights, zero, lo, hi):  # pragma: no cover
    # Add values[lo:hi] (times their weights) into mine[ids[i]] and count them into
    # tally (if it has room), in order; return the first position whose id is outside
    # [0, len(mine)) (checked under null values too), or -1. One loop per case, so
    # that the hot loop has no loop-invariant branch.
    num_segments = mine.shape[0]
    width = mine.shape[1]
    masked = vmask.shape[0] != 0
    counting = tally.shape[0] != 0
    if weights.shape[0] != 0 or masked or counting or width != 1:
        for i in range(lo, hi):
            prefetch_row_to_write(mine, ids, i + SCATTER_PREFETCH)
            s = ids[i]
            if s < 0 or s >= num_segments:
                return i
            if masked and vmask[i] == 0:
                continue
            if counting:
                tally[s] += 1
            if weights.shape[0] != 0:
                w = zero + weights[i]
                for d in range(width):
                    mine[s, d] += w * values[i, d]
            else:
                for d in range(width):
                    mine[s, d] += values[i, d]
    else:  # the plain 1-D sum, on 1-D views (2-D indexing costs a third more here)
        flat = mine.reshape(num_segments)
        column = values.reshape(values.shape[0])
        for i in range(lo, hi):
            prefetch_item_to_write(flat, ids, i + SCATTER_PREFETCH)
            s = ids[i]
            if s < 0 or s >= num_segments:
                return i
            flat[s] += column[i]
    return -1


def scatter_sum_parts(values, ids, vmask, weights, zero, acc, cnt, bad, lo,
                      hi):  # pragma: no cover
    # values [N, W]. Part p (in [lo, hi)) of P = acc.shape[0] adds the values of its
    # contiguous share of the input, in input order, into its own accumulators acc[p]
    # (and counts cnt[p]: cnt has no columns when no counts are needed). A segment id
    # outside [0, S) stops its part (bad[p] = its position) before it is used.
    num = values.shape[0]
    parts = acc.shape[0]
    share = (num + parts - 1) // parts
    for p in range(lo, hi):
        acc[p] = zero  # zeroed by the thread that uses it (first touch)
        cnt[p] = 0
        bad[p] = _scatter_part(acc[p], cnt[p], values, ids, vmask, weights, zero, p * share,
                               min(num, (p + 1) * share))


def scatter_sum_combine(acc, cnt, mean, min_count, empty, out, counts, lo,
                        hi):  # pragma: no cover
    # out [S, W]: each segment adds its P partial sums in part order and writes out;
    # share q (in [lo, hi)) of the P shares of the segments.
    num_segments = out.shape[0]
    width = out.shape[1]
    parts = acc.shape[0]
    counting = cnt.shape[1] != 0
    want_counts = counts.shape[0] != 0
    if not counting:  # a plain sum: one flat loop over the output elements
        size = num_segments * width
        flat_acc = acc.reshape(parts, size)
        flat_out = out.reshape(size)
        for q in range(lo, hi):
            for e in range(q * size // parts, (q + 1) * size // parts):
                total = flat_acc[0, e]
                for p in range(1, parts):
                    total += flat_acc[p, e]
                flat_out[e] = total
        return
    for q in range(lo, hi):
        for s in range(q * num_segments // parts, (q + 1) * num_segments // parts):
            c = 0
            for p in range(parts):
                c += cnt[p, s]
            if want_counts:
                counts[s] = c
            for d in range(width):
                total = acc[0, s, d]
                for p in range(1, parts):
                    total += acc[p, s, d]
                if c < min_count:
                    out[s, d] = empty
                elif mean:
                    out[s, d] = total / c
                else:
                    out[s, d] = total


def scatter_extreme_parts(values, ids, vmask, is_max, init, acc, cnt, bad, lo,
                          hi):  # pragma: no cover
    # As scatter_sum_parts, with NaN-propagating max (min) partials that start at init.
    num = values.shape[0]
    num_segments = acc.shape[1]
    width = acc.shape[2]
    parts = acc.shape[0]
    masked = vmask.shape[0] != 0
    share = (num + parts - 1) // parts
    for p in range(lo, hi):
        acc[p] = init
        cnt[p] = 0
        bad[p] = -1
        mine = acc[p]
        for i in range(p * share, min(num, (p + 1) * share)):
            prefetch_row_to_write(mine, ids, i + SCATTER_PREFETCH)
            s = ids[i]
            if s < 0 or s >= num_segments:  # checked under null values too
                bad[p] = i
                break
            if masked and vmask[i] == 0:
                continue
            cnt[p, s] += 1
            if is_max:
                for d in range(width):
                    mine[s, d] = take_max(values[i, d], mine[s, d])
            else:
                for d in range(width):
                    mine[s, d] = take_min(values[i, d], mine[s, d])


def scatter_extreme_combine(acc, cnt, is_max, min_count, empty, out, counts, lo,
                            hi):  # pragma: no cover
    # As scatter_sum_combine for the max (min) partials.
    num_segments = out.shape[0]
    width = out.shape[1]
    parts = acc.shape[0]
    want_counts = counts.shape[0] != 0
    for q in range(lo, hi):
        for s in range(q * num_segments // parts, (q + 1) * num_segments // parts):
            c = 0
            for p in range(parts):
                c += cnt[p, s]
            if want_counts:
                counts[s] = c
            for d in range(width):
                m = acc[0, s, d]
                for p in range(1, parts):
                    m = take_max(acc[p, s, d], m) if is_max else take_min(acc[p, s, d], m)
                out[s, d] = empty if c < min_count else m


# ------------------------------------------------------------------------ scatters
@kernel
def scatter_assign_rows(data, indices, slices):  # pragma: no cover
    # In index order, so the last write to a repeated index wins.
    width = data.shape[1]
    for i in range(indices.shape[0]):
        row = indices[i]
        for d in range(width):
            data[row, d] = slices[i, d]


@kernel
def scatter_weighted_sum_rows(data, w0, indices, slices, w1):  # pragma: no cover
    # Caffe2's ScatterWeightedSumOp, loop for loop: first every occurrence of an index
    # scales its row by w0 (a row listed k times is scaled k times; skipped when w0 is
    # 1, which changes nothing), then every slice adds w1 * slices[i] into its row, in
    # index order. Each step is computed in float64 and rounded to data's dtype.
    width = data.shape[1]
    if w0 != 1.0:
        for i in range(indices.shape[0]):
            row = indices[i]
            for d in range(width):
                data[row, d] = w0 * data[row, d]
    for i in range(indices.shape[0]):
        row = indices[i]
        for d in range(width):
            data[row, d] = data[row, d] + w1 * slices[i, d]
