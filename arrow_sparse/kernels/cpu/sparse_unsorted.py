"""CPU kernels of the fused sparse unsorted segment reductions (family ``"sparse_unsorted"``).

Caffe2's ``SparseUnsortedSegment*``: row ``indices[i]`` of a table is reduced into
output row ``segment_ids[i]``, the ids in any order, in one pass that never
materialises the gathered rows. The public functions here are the family's registry
keys (:func:`arrow_sparse._backend.get_kernel`; the CUDA twins in
``kernels/cuda/sparse_unsorted.py`` take the same arguments). Conventions (the public
module checks everything else first):

- ``data`` is the C-contiguous table ``[V, W]``; ``out`` is ``[S, W]``.
- ``indices`` and ``ids`` are int32 or int64, one per gathered row; ``imask`` is an
  empty array (no nulls) or a uint8 mask over ``indices`` (0 = a null index, skipped).
- ``weights`` is empty (unweighted) or one weight per index, of the accumulator dtype.
- ``zero`` is a scalar of the accumulator dtype (float64, int64 or uint64).
- A segment with fewer than ``min_count`` non-null indices is written as ``empty``;
  ``counts`` is empty or receives each segment's number of non-null indices.
- Segment ids are checked against ``[0, S)`` as they are read (under null indices too),
  then non-null indices against ``[0, V)``; a kernel returns the first position that
  fails, or -1 (``out`` is then incomplete).
- Float max/min are IEEE 754-2019 ``maximum``/``minimum`` as in the segment family
  (its ``take_max``/``take_min``): NaN propagates and ``-0.0 < +0.0``, so the result
  does not depend on the order the rows are combined in.

A large input is split into one contiguous part per kernel thread, each with its own
partial results (when they are no bigger than the gathered rows), combined in part
order afterwards by the unsorted segment reductions' combine kernels; small inputs run
on one thread. Each phase is one serial kernel over a range of parts (``_jit.run``
splits it over the kernel threads).
"""

from __future__ import annotations

import numpy as np

from ._jit import parallel_kernel, run, threads_for
from ._segment_gather import scatter_extreme_combine, scatter_sum_combine
from ._segment_ir import take_max, take_min

__all__ = ["gather_scatter_extreme", "gather_scatter_sum"]


def _sum_parts(data, indices, imask, ids, weights, zero, acc, cnt, bad, lo,
               hi):  # pragma: no cover
    # Part p of the gathered rows into its own partials acc[p], cnt[p]; bad[p] is the
    # first position of the part whose segment id or index is out of range, or -1.
    num = indices.shape[0]
    num_rows = data.shape[0]
    num_segments = acc.shape[1]
    width = acc.shape[2]
    parts = acc.shape[0]
    masked = imask.shape[0] != 0
    weighted = weights.shape[0] != 0
    share = (num + parts - 1) // parts
    for p in range(lo, hi):
        mine = acc[p]
        tally = cnt[p]
        for s in range(num_segments):  # zeroed by the thread that uses it (first touch)
            tally[s] = 0
            for d in range(width):
                mine[s, d] = zero
        bad[p] = -1
        for i in range(p * share, min(num, (p + 1) * share)):
            s = ids[i]
            if s < 0 or s >= num_segments:
                bad[p] = i
                break
            if masked and imask[i] == 0:
                continue
            r = indices[i]
            if r < 0 or r >= num_rows:
                bad[p] = i
                break
            tally[s] += 1
            if weighted:
                w = zero + weights[i]
                for d in range(width):
                    mine[s, d] += w * data[r, d]
            else:
                for d in range(width):
                    mine[s, d] += data[r, d]


def _extreme_parts(data, indices, imask, ids, is_max, init, acc, cnt, bad, lo,
                   hi):  # pragma: no cover
    # As _sum_parts, for max (min).
    num = indices.shape[0]
    num_rows = data.shape[0]
    num_segments = acc.shape[1]
    width = acc.shape[2]
    parts = acc.shape[0]
    masked = imask.shape[0] != 0
    share = (num + parts - 1) // parts
    for p in range(lo, hi):
        mine = acc[p]
        tally = cnt[p]
        for s in range(num_segments):
            tally[s] = 0
            for d in range(width):
                mine[s, d] = init
        bad[p] = -1
        for i in range(p * share, min(num, (p + 1) * share)):
            s = ids[i]
            if s < 0 or s >= num_segments:
                bad[p] = i
                break
            if masked and imask[i] == 0:
                continue
            r = indices[i]
            if r < 0 or r >= num_rows:
                bad[p] = i
                break
            tally[s] += 1
            if is_max:
                for d in range(width):
                    mine[s, d] = take_max(data[r, d], mine[s, d])
            else:
                for d in range(width):
                    mine[s, d] = take_min(data[r, d], mine[s, d])


_SUM_PARTS = parallel_kernel(_sum_parts)
_SUM_COMBINE = parallel_kernel(scatter_sum_combine)
_EXTREME_PARTS = parallel_kernel(_extreme_parts)
_EXTREME_COMBINE = parallel_kernel(scatter_extreme_combine)

_NO_MASK = np.empty(0, np.uint8)
_NO_COUNTS = np.empty(0, np.int64)


def _parts(data: np.ndarray, num: int, num_segments: int) -> int:
    """Pick the number of parts.

    One per kernel thread when the gathered rows are many and the per-thread partial
    results are no bigger than them; one otherwise.
    """
    parts = threads_for(num * data.shape[1])
    if parts > 1 and parts * num_segments <= num:
        return parts
    return 1


def _first_bad_part(bad: np.ndarray) -> int:
    # Parts are contiguous and in order: the first part that failed has the first position.
    failed = np.flatnonzero(bad >= 0)
    return int(bad[failed[0]]) if len(failed) else -1


def gather_scatter_sum(data: np.ndarray, indices: np.ndarray, imask: np.ndarray | None,
                       ids: np.ndarray, weights: np.ndarray | None, mean: bool,
                       zero: np.generic, min_count: int, empty: np.generic, out: np.ndarray,
                       counts: np.ndarray | None) -> int:
    """``out[s] = sum(weights[i] * data[indices[i]] for ids[i] == s)`` (``mean``: / count).

    Returns the first position whose segment id or index is out of range, or -1.
    """
    parts = _parts(data, len(indices), len(out))
    work = len(indices) * data.shape[1]
    acc = np.empty((parts,) + out.shape, zero.dtype)
    cnt = np.empty((parts, len(out)), np.int64)
    bad = np.empty(parts, np.int64)
    no_weights = np.empty(0, zero.dtype)
    run(_SUM_PARTS, work, parts, data, indices, _NO_MASK if imask is None else imask, ids,
        no_weights if weights is None else weights, zero, acc, cnt, bad)
    first = _first_bad_part(bad)
    if first < 0:
        run(_SUM_COMBINE, work, parts, acc, cnt, mean, min_count, empty, out,
            _NO_COUNTS if counts is None else counts)
    return first


def gather_scatter_extreme(data: np.ndarray, indices: np.ndarray, imask: np.ndarray | None,
                           ids: np.ndarray, is_max: bool, init: np.generic, min_count: int,
                           empty: np.generic, out: np.ndarray,
                           counts: np.ndarray | None) -> int:
    """``out[s] = max(data[indices[i]] for ids[i] == s)`` (or min), NaN propagating.

    ``init`` is the data dtype's lowest (highest) value; otherwise as
    :func:`gather_scatter_sum`.
    """
    parts = _parts(data, len(indices), len(out))
    work = len(indices) * data.shape[1]
    acc = np.empty((parts,) + out.shape, data.dtype)
    cnt = np.empty((parts, len(out)), np.int64)
    bad = np.empty(parts, np.int64)
    run(_EXTREME_PARTS, work, parts, data, indices, _NO_MASK if imask is None else imask, ids,
        is_max, init, acc, cnt, bad)
    first = _first_bad_part(bad)
    if first < 0:
        run(_EXTREME_COMBINE, work, parts, acc, cnt, is_max, min_count, empty, out,
            _NO_COUNTS if counts is None else counts)
    return first
