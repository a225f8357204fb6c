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
- Float max/min are IEEE 754-2019 ``maximum``/``minimum`` as in the segment family:
  NaN propagates and ``-0.0 < +0.0``, so the result does not depend on the order
  the rows are combined in.

A large input is split into one contiguous part per thread, each with its own partial
results (when they are no bigger than the gathered rows), combined in part order
afterwards; small inputs run on one thread.
"""

from __future__ import annotations

import numpy as np
from numba import get_num_threads, njit, prange

from ._jit import CACHE, PARALLEL_THRESHOLD, parallel_kernel

__all__ = ["gather_scatter_extreme", "gather_scatter_sum"]


@njit(cache=CACHE, nogil=True, inline="always")
def _take_max(x, m):  # pragma: no cover
    # The update of a max: NaN propagates, of two equal values +0.0 wins.
    if x != x:
        return x
    if m != m or x < m:
        return m
    if x > m or not np.signbit(x):
        return x
    return m


@njit(cache=CACHE, nogil=True, inline="always")
def _take_min(x, m):  # pragma: no cover
    # The update of a min: NaN propagates, of two equal values -0.0 wins.
    if x != x:
        return x
    if m != m or x > m:
        return m
    if x < m or np.signbit(x):
        return x
    return m


@njit(cache=CACHE, nogil=True, inline="always")
def _first_bad(bad):  # pragma: no cover
    # Parts are contiguous and in order: the first part that failed has the first position.
    for p in range(bad.shape[0]):
        if bad[p] >= 0:
            return bad[p]
    return -1


def _gather_scatter_sum(data, indices, imask, ids, weights, mean, zero, min_count, empty,
                        out, counts, acc, cnt, bad):  # pragma: no cover
    num = indices.shape[0]
    num_rows = data.shape[0]
    num_segments = out.shape[0]
    width = out.shape[1]
    parts = acc.shape[0]
    masked = imask.shape[0] != 0
    weighted = weights.shape[0] != 0
    share = (num + parts - 1) // parts
    for p in prange(parts):
        mine = acc[p]
        tally = cnt[p]
        mine[:] = zero  # zeroed by the thread that uses it (first touch)
        tally[:] = 0
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
    first = _first_bad(bad)
    if first >= 0:
        return first
    want_counts = counts.shape[0] != 0
    for q in prange(parts):
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
    return -1


def _gather_scatter_extreme(data, indices, imask, ids, is_max, init, min_count, empty, out,
                            counts, acc, cnt, bad):  # pragma: no cover
    num = indices.shape[0]
    num_rows = data.shape[0]
    num_segments = out.shape[0]
    width = out.shape[1]
    parts = acc.shape[0]
    masked = imask.shape[0] != 0
    share = (num + parts - 1) // parts
    for p in prange(parts):
        mine = acc[p]
        tally = cnt[p]
        mine[:] = init
        tally[:] = 0
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
                    mine[s, d] = _take_max(data[r, d], mine[s, d])
            else:
                for d in range(width):
                    mine[s, d] = _take_min(data[r, d], mine[s, d])
    first = _first_bad(bad)
    if first >= 0:
        return first
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
                    m = _take_max(acc[p, s, d], m) if is_max else _take_min(acc[p, s, d], m)
                out[s, d] = empty if c < min_count else m
    return -1


_SUM = parallel_kernel(_gather_scatter_sum)
_EXTREME = parallel_kernel(_gather_scatter_extreme)

_NO_MASK = np.empty(0, np.uint8)
_NO_COUNTS = np.empty(0, np.int64)


def _parts(data: np.ndarray, num: int, num_segments: int) -> tuple[int, int]:
    """Pick the twin (0 serial, 1 parallel) and its number of parts.

    One part per thread when the gathered rows are many and the per-thread partial
    results are no bigger than them; one part otherwise.
    """
    parts = get_num_threads()
    width = data.shape[1]
    if num * width >= PARALLEL_THRESHOLD and parts > 1 and parts * num_segments <= num:
        return 1, parts
    return 0, 1


def gather_scatter_sum(data: np.ndarray, indices: np.ndarray, imask: np.ndarray | None,
                       ids: np.ndarray, weights: np.ndarray | None, mean: bool,
                       zero: np.generic, min_count: int, empty: np.generic, out: np.ndarray,
                       counts: np.ndarray | None) -> int:
    """``out[s] = sum(weights[i] * data[indices[i]] for ids[i] == s)`` (``mean``: / count).

    Returns the first position whose segment id or index is out of range, or -1.
    """
    twin, parts = _parts(data, len(indices), len(out))
    acc = np.empty((parts,) + out.shape, zero.dtype)
    cnt = np.empty((parts, len(out)), np.int64)
    no_weights = np.empty(0, zero.dtype)
    return int(_SUM[twin](
        data, indices, _NO_MASK if imask is None else imask, ids,
        no_weights if weights is None else weights, mean, zero, min_count, empty, out,
        _NO_COUNTS if counts is None else counts, acc, cnt, np.empty(parts, np.int64)))


def gather_scatter_extreme(data: np.ndarray, indices: np.ndarray, imask: np.ndarray | None,
                           ids: np.ndarray, is_max: bool, init: np.generic, min_count: int,
                           empty: np.generic, out: np.ndarray,
                           counts: np.ndarray | None) -> int:
    """``out[s] = max(data[indices[i]] for ids[i] == s)`` (or min), NaN propagating.

    ``init`` is the data dtype's lowest (highest) value; otherwise as
    :func:`gather_scatter_sum`.
    """
    twin, parts = _parts(data, len(indices), len(out))
    acc = np.empty((parts,) + out.shape, data.dtype)
    cnt = np.empty((parts, len(out)), np.int64)
    return int(_EXTREME[twin](
        data, indices, _NO_MASK if imask is None else imask, ids, is_max, init, min_count,
        empty, out, _NO_COUNTS if counts is None else counts, acc, cnt,
        np.empty(parts, np.int64)))
