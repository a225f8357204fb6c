"""CPU kernels for segment reductions, fused gather + reduce, gather and scatter.

The public functions here are the ``"segment"`` kernel family of the registry
(:func:`arrow_sparse._backend.get_kernel`; the CUDA twins in ``kernels/cuda/segment.py``
have the same signatures). The sorted kernels live in this module; the fused,
unsorted and scatter kernels in :mod:`._segment_gather`; the LLVM IR they use in
:mod:`._segment_ir`. Conventions shared by every kernel (the public module checks
all of it first):

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
- Float max/min are IEEE 754-2019 ``maximum``/``minimum`` (``_segment_ir.take_max``,
  LLVM's ``llvm.maximum``): NaN propagates like numpy, and ``-0.0 < +0.0``, so
  ``max(-0.0, 0.0)`` is ``0.0`` and ``min(-0.0, 0.0)`` is ``-0.0`` whatever order the
  values are combined in (vector lanes, threads, parts: the CUDA twins agree bit for
  bit). Integers compare and select.
- Kernels that read indices (the fused ones, the unsorted ones) check their range as
  they read them and return the position of the first one out of range, or -1.

Every sorted and fused kernel is a :func:`~._jit.parallel_kernel` over row blocks:
:func:`~._jit.run` gives each kernel thread one block of rows, the blocks balanced by
values and rows (:func:`~._jit.balanced_bounds`), or a run of chunks of rows for the
less used 2-D kernels; a small input is one block on the calling thread. The fused
kernels cut their rows into many blocks balanced by ids and rows (``_shared_blocks``:
16 per thread), which the kernel threads take in turn through an atomic counter
(``_g.take_block``, so no thread goes back to Python between blocks): their random row
reads cost what their cache misses cost, so equal id counts are not equal times. Each
row is still reduced by one thread, in order. The fused float
sum/mean (``embedding_bag``'s common case) also splits a bag longer than ``_g.PIECE``
ids into pieces, whatever the thread count, so one long bag is shared by the threads
too; its sum is then the pieces' float64 sums added in order (each piece summed as a
bag is: runs of 4 rows in the table's dtype added into float64). The unsorted kernels
split a large input into one contiguous part per thread, each with its own partial
results, combined in part order afterwards. The scatters are serial: their rows are
written in index order, which defines duplicates.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _segment_gather as _g
from . import _segment_sorted as _s
from ._jit import balanced_bounds, kernel, parallel_kernel, run, threads_for
from ._segment_gather import MODE_MAX, MODE_MEAN
from ._segment_ir import NVEC


# ------------------------------------------------------------------ segment ids
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


_SUM_1D = parallel_kernel(_s.sum_1d)
_SUM_2D = parallel_kernel(_s.sum_2d)
_SUM_2D_FLOAT = parallel_kernel(_s.sum_2d_float)
_SUM_1D_FLOAT = parallel_kernel(_s.sum_1d_float)
_EXTREME_1D_FLOAT = parallel_kernel(_s.extreme_1d_float)
_EXTREME_1D = parallel_kernel(_s.extreme_1d)
_EXTREME_2D = parallel_kernel(_s.extreme_2d)
_ARG_EXTREME_2D = parallel_kernel(_s.arg_extreme_2d)
_PROD_2D = parallel_kernel(_s.prod_2d)
_LOGSUMEXP_2D = parallel_kernel(_s.logsumexp_2d)
_GATHER_REDUCE = parallel_kernel(_g.gather_reduce_shared)
_GATHER_SUM_FAST = parallel_kernel(_g.gather_sum_fast_shared)
_GATHER_SUM_PIECES = parallel_kernel(_g.gather_sum_pieces_shared)
_SCATTER_SUM_PARTS = parallel_kernel(_g.scatter_sum_parts)
_SCATTER_SUM_COMBINE = parallel_kernel(_g.scatter_sum_combine)
_SCATTER_EXTREME_PARTS = parallel_kernel(_g.scatter_extreme_parts)
_SCATTER_EXTREME_COMBINE = parallel_kernel(_g.scatter_extreme_combine)

_NONE_U8 = np.empty(0, dtype=np.uint8)
_NO_WEIGHTS = {np.dtype(t): np.empty(0, dtype=t) for t in (np.int64, np.uint64, np.float64)}


def _no_weights(zero: np.generic) -> np.ndarray:
    """Return the empty weights of an unweighted call, of the accumulator's dtype.

    A float64 placeholder would make Numba unify an int64 accumulator with the
    (never taken) weighted branch's float64, and round integer sums above 2**53.
    """
    return _NO_WEIGHTS[zero.dtype]


_NONE_I64 = np.empty(0, dtype=np.int64)
_NO_PARTIAL = np.empty((0, 0))


def _work(values: np.ndarray, num_rows: int) -> int:
    return values.size + num_rows


#: What a row costs by itself (loop set-up, combining lanes, the store), in values.
_ROW_COST = 16


#: What a bag costs by itself in a fused kernel, in gathered rows.
_ID_COST = 1


def _blocks(work: int, offsets: np.ndarray, row_cost: int = _ROW_COST) -> np.ndarray:
    """Row blocks for ``work``: one per kernel thread, balanced by values and rows.

    One block, every row, when the work is small (:func:`~._jit.threads_for`).
    """
    threads = threads_for(work)
    if threads == 1:
        return np.array([0, len(offsets) - 1], np.int64)
    return balanced_bounds(offsets, 0, len(offsets) - 1, threads, row_cost)


#: Blocks per kernel thread of the fused gather kernels (:func:`_shared_blocks`).
_SHARED_BLOCKS_PER_THREAD = 16

#: The least work (gathered elements) of one such block, so that a block's own cost
#: (a kernel call, about 2 µs) stays below 1% of it.
_SHARED_BLOCK_WORK = 1 << 20


def _shared_blocks(work: int, offsets: np.ndarray, row_cost: int = _ID_COST) -> np.ndarray:
    """Row blocks for ``work`` that the kernel threads take in turn (:func:`_run_shared`).

    ``_SHARED_BLOCKS_PER_THREAD`` per thread, each at least ``_SHARED_BLOCK_WORK``
    elements (at least one per thread), balanced by ids and rows as :func:`_blocks`.
    The random row reads of a fused gather take as long as the cache misses they meet,
    not as many ids as they read: a thread whose ids miss more, or that the machine
    runs less, takes fewer blocks instead of keeping the others waiting. One block,
    every row, when the work is small.
    """
    threads = threads_for(work)
    if threads == 1:
        return np.array([0, len(offsets) - 1], np.int64)
    nblocks = max(threads, min(threads * _SHARED_BLOCKS_PER_THREAD, work // _SHARED_BLOCK_WORK))
    return balanced_bounds(offsets, 0, len(offsets) - 1, nblocks, row_cost)


def _run_shared(fn: Any, work: int, nblocks: int, *args: Any) -> None:
    """Run the ``_g.*_shared`` kernel ``fn(*args, taken, lo, hi)`` over ``nblocks`` blocks.

    One call per kernel thread (:func:`~._jit.run`); the calls take the blocks in turn
    through the counter ``taken``, in compiled code.
    """
    run(fn, work, nblocks, *args, np.zeros(1, np.int64))


def _run_shared_blocks(fn: Any, work: int, bounds: np.ndarray, *args: Any) -> None:
    """Run the block kernel ``fn(*args)`` over its blocks, the threads taking them in turn."""
    _run_shared(fn, work, len(bounds) - 1, *args)


def _run_blocks(fn: Any, work: int, bounds: np.ndarray, *args: Any) -> None:
    """Run the block kernel ``fn(*args)`` over its blocks (``bounds`` is among ``args``)."""
    run(fn, work, len(bounds) - 1, *args)


def _chunks(out: np.ndarray) -> int:
    """Chunks of rows of the 2-D kernels that split rows evenly (``_s._CHUNKS`` at most)."""
    return min(out.shape[0], _s._CHUNKS)


def _first_bad(bad: np.ndarray) -> int:
    """Return the first out-of-range position the blocks (in row order) reported, or -1."""
    found = bad[bad >= 0]
    return int(found[0]) if len(found) else -1


def _width(arr: np.ndarray) -> int:
    return int(np.prod(arr.shape[1:], dtype=np.int64)) if arr.ndim > 1 else 1


def _as_2d(arr: np.ndarray) -> np.ndarray:
    return arr.reshape(len(arr), _width(arr))


def _head_vectors(values: np.ndarray, offsets: np.ndarray) -> int:
    """64-byte vectors a 1-D row kernel reads whatever the row's length (1 to 4).

    One more than the mean row needs, so that most rows of a skewed length
    distribution (geometric, say) end inside them without a mispredicted branch.
    """
    num_rows = max(len(offsets) - 1, 1)
    mean = (int(offsets[-1]) - int(offsets[0])) / num_rows
    return min(4, 1 + math.ceil(mean * values.itemsize / 64))


# --------------------------------------------------------------------- public kernels
def sorted_sum(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
               vmask: np.ndarray | None, weights: np.ndarray | None,
               woffsets: np.ndarray | None, mean: bool, zero: np.generic, min_count: int,
               empty: np.generic, out: np.ndarray, counts: np.ndarray | None) -> None:
    """Sum (``mean``: divided by the count) of each row into ``out`` (see module docstring)."""
    valid_u8 = _NONE_U8 if valid is None else valid
    work = _work(values, len(out))
    line = 64 // values.itemsize  # values per 64-byte vector
    bounds = _blocks(work, offsets)
    if (values.ndim == 2 and values.dtype.kind == "f" and vmask is None and weights is None
            and counts is None and values.shape[1] >= line):
        _run_blocks(_SUM_2D_FLOAT, work, bounds, values, offsets, valid_u8, mean, min_count,
                    empty, out, bounds, line, NVEC * line)
        return
    if (values.ndim == 1 and values.dtype.kind == "f" and valid is None and vmask is None
            and weights is None and counts is None):
        _run_blocks(_SUM_1D_FLOAT, work, bounds, values, offsets, mean, min_count, empty, out,
                    bounds, _head_vectors(values, offsets))
        return
    _run_blocks(_SUM_1D if values.ndim == 1 else _SUM_2D, work, bounds, values, offsets,
                valid_u8, _NONE_U8 if vmask is None else vmask,
                _no_weights(zero) if weights is None else weights,
                offsets if woffsets is None else woffsets, mean, zero, min_count, empty, out,
                _NONE_I64 if counts is None else counts, bounds, _head_vectors(values, offsets))


def sorted_extreme(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                   vmask: np.ndarray | None, is_max: bool, init: np.generic, min_count: int,
                   empty: np.generic, out: np.ndarray, counts: np.ndarray | None) -> None:
    """Max (``is_max``) or min of each row; ``init`` is the dtype's lowest (highest) value."""
    args = (values, offsets, _NONE_U8 if valid is None else valid,
            _NONE_U8 if vmask is None else vmask, is_max, init, min_count, empty, out,
            _NONE_I64 if counts is None else counts)
    work = _work(values, len(out))
    if values.ndim == 2:
        run(_EXTREME_2D, work, _chunks(out), *args)
        return
    nvec = _head_vectors(values, offsets)
    bounds = _blocks(work, offsets)
    if values.dtype.kind == "f" and valid is None and vmask is None and counts is None:
        _run_blocks(_EXTREME_1D_FLOAT, work, bounds, values, offsets, is_max, init, min_count,
                    empty, out, bounds, nvec)
        return
    _run_blocks(_EXTREME_1D, work, bounds, *args, bounds, nvec)


def sorted_arg_extreme(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                       vmask: np.ndarray | None, is_max: bool, min_count: int, empty: int,
                       out: np.ndarray, counts: np.ndarray | None) -> None:
    """Position within the row of the first max (min) of each column; 2-D only."""
    run(_ARG_EXTREME_2D, _work(values, len(out)), _chunks(out),
        values, offsets, _NONE_U8 if valid is None else valid,
        _NONE_U8 if vmask is None else vmask, is_max, min_count, np.int64(empty), out,
        _NONE_I64 if counts is None else counts)


def sorted_prod(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                vmask: np.ndarray | None, one: np.generic, min_count: int, empty: np.generic,
                out: np.ndarray, counts: np.ndarray | None) -> None:
    """Product of each row; ``one`` fixes the accumulator dtype; 2-D only."""
    run(_PROD_2D, _work(values, len(out)), _chunks(out),
        values, offsets, _NONE_U8 if valid is None else valid,
        _NONE_U8 if vmask is None else vmask, one, min_count, empty, out,
        _NONE_I64 if counts is None else counts)


def sorted_logsumexp(values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                     vmask: np.ndarray | None, min_count: int, empty: np.generic,
                     out: np.ndarray, counts: np.ndarray | None) -> None:
    """Numerically stable log-sum-exp of each row (float64 inside); 2-D only."""
    run(_LOGSUMEXP_2D, 4 * _work(values, len(out)), _chunks(out),
        values, offsets, _NONE_U8 if valid is None else valid,
        _NONE_U8 if vmask is None else vmask, np.float64(0), min_count, empty, out,
        _NONE_I64 if counts is None else counts)


def gather_reduce(data: np.ndarray, indices: np.ndarray, offsets: np.ndarray,
                  valid: np.ndarray | None, vmask: np.ndarray | None,
                  weights: np.ndarray | None, woffsets: np.ndarray | None, mode: int,
                  zero: np.generic, lowest: np.generic, min_count: int, empty: np.generic,
                  out: np.ndarray, counts: np.ndarray | None) -> int:
    """Reduce ``data[indices[i]]`` per row (``mode``: MODE_SUM, MODE_MEAN or MODE_MAX).

    Returns the position of the first index the rows read that lies outside
    ``[0, len(data))``, or -1; ``out`` is then incomplete.
    """
    work = (int(offsets[-1]) - int(offsets[0])) * data.shape[1] + len(out)
    line = max(1, 64 // data.itemsize)  # elements per 64-byte cache line
    valid_u8 = _NONE_U8 if valid is None else valid
    woffs = offsets if woffsets is None else woffsets
    if (mode != MODE_MAX and vmask is None and counts is None and data.dtype.kind == "f"
            and data.shape[1] >= line and isinstance(zero, np.float64)
            and (weights is None or weights.dtype.kind == "f")):
        return _gather_sum(data, indices, offsets, valid, valid_u8,
                           _no_weights(zero) if weights is None else weights, woffs,
                           mode == MODE_MEAN, min_count, empty, line, out, work)
    bounds = _shared_blocks(work, offsets)
    bad = np.empty(len(bounds) - 1, np.int64)
    _run_shared_blocks(_GATHER_REDUCE, work, bounds, data, indices, offsets, valid_u8,
                       _NONE_U8 if vmask is None else vmask,
                       _no_weights(zero) if weights is None else weights, woffs, mode, zero,
                       lowest, min_count, empty, out, _NONE_I64 if counts is None else counts,
                       bounds, bad)
    return _first_bad(bad)


def _gather_sum(data: np.ndarray, indices: np.ndarray, offsets: np.ndarray,
                valid: np.ndarray | None, valid_u8: np.ndarray, weights: np.ndarray,
                woffsets: np.ndarray, mean: bool, min_count: int, empty: np.generic, line: int,
                out: np.ndarray, work: int) -> int:
    """Run the fast case of :func:`gather_reduce`, split by ids (see ``_g.gather_sum_fast``).

    A bag longer than ``_g.PIECE`` ids is cut into pieces of ``PIECE`` ids, whatever the
    number of threads: ``gather_sum_pieces`` sums the pieces (the threads taking them in
    turn), then the bags are cut into blocks by ids + bags (:func:`_shared_blocks`), a
    long bag costing one per piece (it only adds its pieces' sums).
    """
    lengths = np.diff(offsets)
    long = lengths > _g.PIECE
    if valid is not None:
        long &= valid.view(bool)
    if not long.any():
        bounds = _shared_blocks(work, offsets)
        bad = np.empty(len(bounds) - 1, np.int64)
        _run_shared_blocks(_GATHER_SUM_FAST, work, bounds, data, indices, offsets, valid_u8,
                           weights, woffsets, mean, min_count, empty, line, NVEC * line,
                           _NONE_I64, _NO_PARTIAL, out, bounds, bad)
        return _first_bad(bad)
    bags = np.flatnonzero(long)
    npieces = (lengths[bags] + (_g.PIECE - 1)) // _g.PIECE
    pbag = np.repeat(bags, npieces).astype(np.int64)
    first = np.cumsum(npieces) - npieces  # each long bag's first piece
    pstart = (offsets[:-1][pbag].astype(np.int64)
              + _g.PIECE * (np.arange(len(pbag)) - np.repeat(first, npieces)))
    partial = np.empty((len(pbag), out.shape[1]))
    pbad = np.empty(len(pbag), np.int64)
    _run_shared(_GATHER_SUM_PIECES, int(lengths[bags].sum()) * out.shape[1], len(pbag), data,
                indices, offsets, weights, woffsets, pstart, pbag, line, NVEC * line, partial,
                pbad)
    cost = lengths.copy()
    cost[bags] = npieces
    bounds = _shared_blocks(work, _offsets_of(cost))
    bad = np.empty(len(bounds) - 1, np.int64)
    _run_shared_blocks(_GATHER_SUM_FAST, work, bounds, data, indices, offsets, valid_u8,
                       weights, woffsets, mean, min_count, empty, line, NVEC * line, pbag,
                       partial, out, bounds, bad)
    found = [x for x in (_first_bad(pbad), _first_bad(bad)) if x >= 0]
    return min(found) if found else -1


def _offsets_of(lengths: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _scatter_parts(values: np.ndarray, num_segments: int) -> int:
    """Parts of an unsorted reduction: one per kernel thread, or one.

    One part per thread when the input is large and the per-thread partial results
    are no bigger than the values; one part otherwise.
    """
    parts = threads_for(values.size)
    if parts > 1 and parts * num_segments * _width(values) * 8 <= values.nbytes:
        return parts
    return 1


def scatter_sum(values: np.ndarray, ids: np.ndarray, vmask: np.ndarray | None,
                weights: np.ndarray | None, mean: bool, zero: np.generic, min_count: int,
                empty: np.generic, out: np.ndarray, counts: np.ndarray | None) -> int:
    """``out[s] = sum(weights[i] * values[i] for ids[i] == s)`` (``mean``: / count).

    ``values`` and ``out`` are 1-D or 2-D alike. Returns the position of the first id
    outside ``[0, len(out))``, or -1; ``out`` is then incomplete.
    """
    parts = _scatter_parts(values, len(out))
    counting = mean or min_count > 0 or counts is not None
    vals, target = _as_2d(values), _as_2d(out)
    acc = np.empty((parts,) + target.shape, zero.dtype)
    cnt = np.empty((parts, len(out) if counting else 0), np.int64)
    bad = np.empty(parts, np.int64)
    run(_SCATTER_SUM_PARTS, values.size, parts, vals, ids, _NONE_U8 if vmask is None else vmask,
        _no_weights(zero) if weights is None else weights, zero, acc, cnt, bad)
    first = _first_bad(bad)
    if first < 0:
        run(_SCATTER_SUM_COMBINE, values.size, parts, acc, cnt, mean, min_count, empty, target,
            _NONE_I64 if counts is None else counts)
    return first


def scatter_extreme(values: np.ndarray, ids: np.ndarray, vmask: np.ndarray | None,
                    is_max: bool, init: np.generic, min_count: int, empty: np.generic,
                    out: np.ndarray, counts: np.ndarray | None) -> int:
    """``out[s] = max(values[i] for ids[i] == s)`` (or min), NaN propagating.

    ``init`` is the dtype's lowest (highest) value; otherwise as :func:`scatter_sum`.
    """
    parts = _scatter_parts(values, len(out))
    vals, target = _as_2d(values), _as_2d(out)
    acc = np.empty((parts,) + target.shape, vals.dtype)
    cnt = np.empty((parts, len(out)), np.int64)
    bad = np.empty(parts, np.int64)
    run(_SCATTER_EXTREME_PARTS, values.size, parts, vals, ids,
        _NONE_U8 if vmask is None else vmask, is_max, init, acc, cnt, bad)
    first = _first_bad(bad)
    if first < 0:
        run(_SCATTER_EXTREME_COMBINE, values.size, parts, acc, cnt, is_max, min_count, empty,
            target, _NONE_I64 if counts is None else counts)
    return first


def scatter_assign(data: np.ndarray, indices: np.ndarray, slices: np.ndarray) -> None:
    """``data[indices[i]] = slices[i]`` in order (last write wins); 2-D views."""
    _g.scatter_assign_rows(data, indices, slices)


def scatter_weighted_sum(data: np.ndarray, w0: float, indices: np.ndarray,
                         slices: np.ndarray, w1: float) -> None:
    """Scale each listed row by ``w0`` per occurrence, then add ``w1 * slices[i]``; 2-D views."""
    _g.scatter_weighted_sum_rows(data, np.float64(w0), indices, slices, np.float64(w1))


def sorted_ids_to_offsets(ids: np.ndarray, num_segments: int) -> np.ndarray:
    """int64 offsets (``num_segments + 1``) of checked, sorted segment ids."""
    offsets = np.empty(num_segments + 1, dtype=np.int64)
    _ids_to_offsets(ids, offsets)
    return offsets
