"""CPU kernels of the fused gather + reduce, the unsorted reductions and the scatters.

Private to :mod:`.segment`, whose public functions choose and call them; the
conventions (masks, weights, ``zero``, ``counts``, ``min_count``, NaN) are in its
docstring. Kernels that read indices check them as they go: each parallel block
writes the position of the first index it finds out of range into ``bad`` (``-1``:
none) and stops, and the caller raises before any result is used.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ._jit import kernel
from ._segment_ir import (
    inline,
    prefetch_row,
    sum_row_vector_into,
    sum_rows_into,
    weighted_rows_into,
)

#: ``gather_reduce`` modes.
MODE_SUM, MODE_MEAN, MODE_MAX = 0, 1, 2

#: How many indices ahead the fused kernels prefetch table rows.
PREFETCH = 8


@inline
def _first_out_of_range(indices, start, stop, bound):  # pragma: no cover
    # The first j in [start, stop) with indices[j] outside [0, bound), else -1.
    for j in range(start, stop):
        i = indices[j]
        if i < 0 or i >= bound:
            return j
    return -1


# ------------------------------------------------------------- fused gather + reduce
def gather_sum_fast(data, indices, offsets, valid, weights, woffsets, mean, min_count,
                    empty, line, group, out, bounds, bad):  # pragma: no cover
    # gather_reduce for a float table, sum/mean, no null ids. Unweighted: runs of BLOCK
    # ids are summed in registers in the table's dtype and accumulated in float64
    # registers (sum_rows_into); weighted: each row is scaled and added in float64
    # (weighted_rows_into). Rows PREFETCH ids ahead are prefetched. Row r's ids are
    # bounds-checked just before they are used (they are then read from L1).
    width = out.shape[1]
    bound = data.shape[0]
    all_valid = valid.shape[0] == 0
    weighted = weights.shape[0] != 0
    for b in prange(bounds.shape[0] - 1):
        acc = np.zeros(width)
        bad[b] = -1
        for r in range(bounds[b], bounds[b + 1]):
            for d in range(width):
                acc[d] = 0.0
            n = 0
            if all_valid or valid[r] != 0:
                start = offsets[r]
                stop = offsets[r + 1]
                j = _first_out_of_range(indices, start, stop, bound)
                if j >= 0:
                    bad[b] = j
                    break
                n = stop - start
                shift = woffsets[r] - start if weighted else 0
                col = 0
                ahead = PREFETCH  # the first pass over the row's ids prefetches
                while col + group <= width:
                    if weighted:
                        weighted_rows_into(data, indices, weights, shift, start, stop, col,
                                           acc, ahead)
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
                  lowest, min_count, empty, out, counts, bounds, bad):  # pragma: no cover
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
    for b in prange(bounds.shape[0] - 1):
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
def scatter_sum(values, ids, vmask, weights, mean, zero, min_count, empty, out, counts,
                acc, cnt, bad):  # pragma: no cover
    # values [N, W], out [S, W]. Part p of P = acc.shape[0] adds the values of its
    # contiguous share of the input, in input order, into its own accumulators acc[p]
    # (and counts cnt[p]: cnt has no columns when no counts are needed); then each
    # segment adds its P partial sums in part order and writes out. A segment id
    # outside [0, S) stops its part (bad[p] = its position) before it is used.
    num = values.shape[0]
    num_segments = out.shape[0]
    width = out.shape[1]
    parts = acc.shape[0]
    masked = vmask.shape[0] != 0
    weighted = weights.shape[0] != 0
    counting = cnt.shape[1] != 0
    share = (num + parts - 1) // parts
    for p in prange(parts):
        acc[p] = zero  # zeroed by the thread that uses it (first touch)
        cnt[p] = 0
        bad[p] = -1
        mine = acc[p]
        for i in range(p * share, min(num, (p + 1) * share)):
            s = ids[i]
            if s < 0 or s >= num_segments:  # checked under null values too
                bad[p] = i
                break
            if masked and vmask[i] == 0:
                continue
            if counting:
                cnt[p, s] += 1
            if weighted:
                w = zero + weights[i]
                for d in range(width):
                    mine[s, d] += w * values[i, d]
            elif width == 1:
                mine[s, 0] += values[i, 0]
            else:
                for d in range(width):
                    mine[s, d] += values[i, d]
    for p in range(parts):
        if bad[p] >= 0:
            return bad[p]
    want_counts = counts.shape[0] != 0
    for q in prange(parts):
        for s in range(q * num_segments // parts, (q + 1) * num_segments // parts):
            c = 0
            if counting:
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
    return -1


def scatter_extreme(values, ids, vmask, is_max, init, min_count, empty, out, counts, acc,
                    cnt, bad):  # pragma: no cover
    # As scatter_sum, with NaN-propagating max (min) partials that start at init.
    num = values.shape[0]
    num_segments = out.shape[0]
    width = out.shape[1]
    parts = acc.shape[0]
    masked = vmask.shape[0] != 0
    share = (num + parts - 1) // parts
    for p in prange(parts):
        acc[p] = init
        cnt[p] = 0
        bad[p] = -1
        mine = acc[p]
        for i in range(p * share, min(num, (p + 1) * share)):
            s = ids[i]
            if s < 0 or s >= num_segments:  # checked under null values too
                bad[p] = i
                break
            if masked and vmask[i] == 0:
                continue
            cnt[p, s] += 1
            for d in range(width):
                x = values[i, d]
                m = mine[s, d]
                if is_max:
                    mine[s, d] = x if (x > m or x != x) else m
                else:
                    mine[s, d] = x if (x < m or x != x) else m
    for p in range(parts):
        if bad[p] >= 0:
            return bad[p]
    want_counts = counts.shape[0] != 0
    for q in prange(parts):
        for s in range(q * num_segments // parts, (q + 1) * num_segments // parts):
            c = 0
            for p in range(parts):
                c += cnt[p, s]
            if want_counts:
                counts[s] = c
            for d in range(width):
                m = acc[0, s, d]
                for p in range(1, parts):
                    x = acc[p, s, d]
                    if is_max:
                        m = x if (x > m or x != x) else m
                    else:
                        m = x if (x < m or x != x) else m
                out[s, d] = empty if c < min_count else m
    return -1


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
