"""CPU kernels for embedding tables: lookups, the sparse backward and fused optimizer steps.

Conventions (the public module ``arrow_sparse.embedding`` checks all of it first):

- ``table`` is ``[V, D]`` and writable where it is updated; ``out`` may be a strided
  view (a column block of a wider matrix, for ``maplookup(strategy="concat")``).
- ``ids`` are int64 and already bounds-checked.
- The optimizer kernels take a *coalesced* gradient: ``rows`` unique (sorted) int64
  and ``values[len(rows), D]`` of the table's dtype. Since every row is written by one
  iteration only, splitting the rows over threads is race-free and the result does not
  depend on the number of threads.
- ``coalesce_sorted`` sums gradient rows in the order of a stable sort, so duplicates are
  added in input order: deterministic, whatever the thread count.
- ``bag_max`` pools bags by their maximum and keeps, per bag and column, the id that
  gave it (the argmax); ``coalesce_max`` sends each gradient element of a max-pooled bag
  to that id only. ``read`` is a uint8 mask of the id positions a bag reads (empty: all).

Every kernel is a :func:`~._jit.parallel_kernel` over a range of rows, run by
:func:`~._jit.run` on one thread or split over the kernel threads by the amount of
work. ``coalesce_sorted`` and ``weights_grad`` run over blocks of runs (bags) whose cuts
follow the element count (:func:`_element_blocks`), so a hot id's long run or a long
bag does not leave the other threads idle. Inside a thread pool of its own the caller
sets Numba's thread count of each pool thread to 1 (``numba.set_num_threads`` is per
thread), so its kernels run there alone.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import balanced_bounds, kernel, parallel_kernel, run, threads_for
from ._segment_gather import prefetch_row

#: How many ids ahead ``bag_max`` prefetches table rows (random rows miss every cache).
PREFETCH = 64

__all__ = [
    "adagrad_rows",
    "bag_max",
    "coalesce_max",
    "coalesce_sorted",
    "ftrl_rows",
    "lookup_rows",
    "rowwise_adagrad_rows",
    "sgd_rows",
    "sort_ids",
    "weights_grad",
]


# ------------------------------------------------------------------------------ forward
def _lookup_rows(table, ids, out, col, lo, hi):  # pragma: no cover
    """``out[i, col:col + dim] = table[ids[i]]`` for ``i`` in ``[lo, hi)``.

    An element loop at unsigned positions: no negative-index wraparound and no row
    views per id (a slice assigned an array also compiles for seconds).
    """
    dim = np.uint64(table.shape[1])
    c = np.uint64(col)
    for i in range(lo, hi):
        r = np.uint64(ids[i])
        at = np.uint64(i)
        for d in range(dim):
            out[at, c + d] = table[r, d]


def _bag_max(table, ids, offsets, read, out, argmax, lo, hi):  # pragma: no cover
    """Max-pool bags ``b`` in ``[lo, hi)``: ``out[b, d]`` and the id that gave it.

    Bag ``b`` reads ``ids[offsets[b]:offsets[b + 1]]`` (positions with ``read`` 0 skipped
    when ``read`` is not empty). The max is IEEE ``maximum`` (as ``take_max`` of the
    segment kernels: NaN wins, ``+0.0`` beats ``-0.0``); ``argmax[b, d]`` is the id at
    the first position that holds it. An empty bag gives 0 and -1.

    The first id read fills the row; each later one is compared without branches (a
    select), so the loop over the columns vectorises, and rows are prefetched
    ``PREFETCH`` ids ahead. Zeros compare equal there, so a column whose max came out
    ``-0.0`` is looked at again for a later ``+0.0`` (rare: a max of exactly zero).
    """
    dim = table.shape[1]
    masked = len(read) > 0
    for b in range(lo, hi):
        row = out[b]
        arg = argmax[b]
        first = True
        start = offsets[b]
        stop = offsets[b + 1]
        for j in range(start, stop):
            prefetch_row(table, ids, j + PREFETCH)
            if masked and read[j] == 0:
                continue
            r = ids[j]
            src = table[r]
            if first:
                for d in range(dim):
                    row[d] = src[d]
                    arg[d] = r
                first = False
                continue
            for d in range(dim):
                x = src[d]
                m = row[d]
                take = (x > m) | ((x != x) & (m == m))
                row[d] = x if take else m
                arg[d] = r if take else arg[d]
        if first:  # nothing read: an empty bag
            for d in range(dim):
                row[d] = 0
                arg[d] = -1
            continue
        for d in range(dim):
            if row[d] == 0 and math.copysign(1.0, row[d]) < 0:  # -0.0: is there a +0.0?
                for j in range(start, stop):
                    if masked and read[j] == 0:
                        continue
                    x = table[ids[j], d]
                    if x == 0 and math.copysign(1.0, x) > 0:
                        row[d] = x
                        arg[d] = ids[j]
                        break


# ----------------------------------------------------------------------------- backward
@kernel
def _split_sorted_keys(keys, shift, order, rows, starts):  # pragma: no cover
    """Unpack sorted ``id << shift | position`` keys: positions, distinct ids, run starts.

    Returns the number of distinct ids ``u``; ``starts[u]`` is set to ``len(keys)``.
    """
    mask = (np.int64(1) << shift) - 1
    u = 0
    prev = np.int64(-1)
    for j in range(len(keys)):
        k = keys[j]
        i = k >> shift
        order[j] = k & mask
        if i != prev:
            rows[u] = i
            starts[u] = j
            u += 1
            prev = i
    starts[u] = len(keys)
    return u


def _coalesce_sorted(grad_out, order, bag, scale, starts, out, lo, hi):  # pragma: no cover
    """Sum the gradient rows of each run ``u`` of equal ids, ``u`` in ``[lo, hi)``.

    ``order`` is a stable argsort of the ids; run ``u`` is ``order[starts[u]:starts[u + 1]]``.
    Id ``p`` contributes ``scale[p] * grad_out[bag[p]]`` (``scale`` empty means 1).
    """
    dim = grad_out.shape[1]
    weighted = len(scale) > 0
    for u in range(lo, hi):
        for d in range(dim):
            out[u, d] = 0
        for q in range(starts[u], starts[u + 1]):
            p = order[q]
            b = bag[p]
            if weighted:
                s = scale[p]
                for d in range(dim):
                    out[u, d] += s * grad_out[b, d]
            else:
                for d in range(dim):
                    out[u, d] += grad_out[b, d]


def _coalesce_max(grad_out, order, bag, rows, argmax, starts, out, credits, lo,
                  hi):  # pragma: no cover
    """Sum the gradient of max-pooled bags for the runs ``u`` in ``[lo, hi)`` of equal ids.

    Run ``u`` (id ``rows[u]``) is ``order[starts[u]:starts[u + 1]]``, in input order, so
    the positions of one bag are adjacent in it: each bag of the run is visited once, and
    ``grad_out[b, d]`` is added where ``argmax[b, d]`` is the run's id. ``credits[u]``
    counts the elements ``(b, d)`` given to the run.
    """
    dim = grad_out.shape[1]
    for u in range(lo, hi):
        r = rows[u]
        for d in range(dim):
            out[u, d] = 0
        c = 0
        prev = -1
        acc = out[u]
        for q in range(starts[u], starts[u + 1]):
            b = bag[order[q]]
            if b == prev:
                continue  # the id again in the same bag: that bag is done
            prev = b
            won = argmax[b]
            n = 0
            for d in range(dim):  # count first: a bag that gave the id nothing is skipped
                n += won[d] == r
            if n:
                c += n
                g = grad_out[b]
                for d in range(dim):  # a select, not a branch: the loop vectorises
                    acc[d] = acc[d] + g[d] if won[d] == r else acc[d]
        credits[u] = c


def _weights_grad(table, ids, offsets, grad_out, mean, out, lo, hi):  # pragma: no cover
    """Gradient of each id's per-sample weight: ``<grad_out[bag], table[id]>``.

    Bag ``b`` (in ``[lo, hi)``) holds ``ids[offsets[b]:offsets[b + 1]]``; ``mean``
    divides by the bag's size.
    """
    dim = table.shape[1]
    for b in range(lo, hi):
        first = offsets[b]
        last = offsets[b + 1]
        scale = 1.0 / (last - first) if mean and last > first else 1.0
        for j in range(first, last):
            r = ids[j]
            acc = 0.0
            for d in range(dim):
                acc += table[r, d] * grad_out[b, d]
            out[j] = acc * scale


_coalesce_runs = kernel(_coalesce_sorted)
_weights_grad_bags = kernel(_weights_grad)


def _coalesce_blocks(grad_out, order, bag, scale, starts, out, bounds, lo,
                     hi):  # pragma: no cover
    """``_coalesce_sorted`` over the runs ``[bounds[b], bounds[b + 1])`` of blocks ``[lo, hi)``."""
    for b in range(lo, hi):
        _coalesce_runs(grad_out, order, bag, scale, starts, out, bounds[b], bounds[b + 1])


def _weights_grad_blocks(table, ids, offsets, grad_out, mean, out, bounds, lo,
                         hi):  # pragma: no cover
    """``_weights_grad`` over the bags ``[bounds[b], bounds[b + 1])`` of blocks ``[lo, hi)``."""
    for b in range(lo, hi):
        _weights_grad_bags(table, ids, offsets, grad_out, mean, out, bounds[b], bounds[b + 1])


def _element_blocks(starts: np.ndarray, work: int) -> np.ndarray:
    """Cut the runs (bags) ``[starts[u], starts[u + 1])`` into one block per kernel thread.

    Block ``b`` starts at the first run that begins at or after ``b / parts`` of the
    elements (plus one per run, so that many empty runs are shared too): the cuts
    follow the element count, never the run count, so a few long runs (Zipf-hot ids,
    heavy-tailed bags) do not land on one thread. A run is never split.
    """
    runs = len(starts) - 1
    parts = min(threads_for(work), runs)
    if parts <= 1:
        return np.array([0, runs], np.int64)
    return balanced_bounds(starts, 0, runs, parts, 1)


# --------------------------------------------------------------------------- optimizers
def _sgd_rows(table, rows, values, lr, lo, hi):  # pragma: no cover
    """``table[r] -= lr * g`` for the gradient rows ``u`` in ``[lo, hi)``."""
    dim = table.shape[1]
    for u in range(lo, hi):
        r = rows[u]
        for d in range(dim):
            table[r, d] -= lr * values[u, d]


def _adagrad_rows(table, state, rows, values, lr, eps, lo, hi):  # pragma: no cover
    """``state[r] += g**2; table[r] -= lr * g / (sqrt(state[r]) + eps)``, ``u`` in [lo, hi)."""
    dim = table.shape[1]
    for u in range(lo, hi):
        r = rows[u]
        for d in range(dim):
            g = values[u, d]
            s = state[r, d] + g * g
            state[r, d] = s
            table[r, d] -= lr * g / (math.sqrt(s) + eps)


def _rowwise_adagrad_rows(table, state, rows, values, lr, eps, lo, hi):  # pragma: no cover
    """``state[r] += mean(g**2); table[r] -= lr * g / (sqrt(state[r]) + eps)``.

    For the gradient rows ``u`` in ``[lo, hi)``.
    """
    dim = table.shape[1]
    for u in range(lo, hi):
        r = rows[u]
        sq = 0.0
        for d in range(dim):
            g = values[u, d]
            sq += g * g
        s = state[r] + (sq / dim if dim else 0.0)
        state[r] = s
        step = lr / (math.sqrt(s) + eps)
        for d in range(dim):
            table[r, d] -= step * values[u, d]


@kernel
def _sign(x):  # pragma: no cover
    return 0.0 if x == 0 else (-1.0 if x < 0 else 1.0)


def _ftrl_rows(table, z, n, rows, values, alpha, beta, l1, l2, lo, hi):  # pragma: no cover
    """Caffe2's ``SparseFtrl`` (``ftrl_compute`` of ``caffe2/sgd/ftrl_op.cc``) per element."""
    dim = table.shape[1]
    inv_alpha = 1.0 / alpha
    for u in range(lo, hi):
        r = rows[u]
        for d in range(dim):
            g = values[u, d]
            w = table[r, d]
            n_old = n[r, d]
            n_new = n_old + g * g
            sigma = (math.sqrt(n_new) - math.sqrt(n_old)) * inv_alpha
            zz = z[r, d] + g - sigma * w
            n[r, d] = n_new
            z[r, d] = zz
            if abs(zz) > l1:
                table[r, d] = (l1 * _sign(zz) - zz) / ((beta + math.sqrt(n_new)) * inv_alpha + l2)
            else:
                table[r, d] = 0.0


# ------------------------------------------------------------------ public kernels
_KERNELS = {name: parallel_kernel(fn) for name, fn in (
    ("lookup_rows", _lookup_rows), ("bag_max", _bag_max), ("coalesce_max", _coalesce_max),
    ("coalesce_sorted", _coalesce_blocks), ("sgd_rows", _sgd_rows),
    ("adagrad_rows", _adagrad_rows), ("rowwise_adagrad_rows", _rowwise_adagrad_rows),
    ("ftrl_rows", _ftrl_rows), ("weights_grad", _weights_grad_blocks))}


def lookup_rows(table: np.ndarray, ids: np.ndarray, out: np.ndarray, col: int = 0) -> None:
    """``out[i, col:col + dim] = table[ids[i]]`` (``out`` may be wider than the table)."""
    run(_KERNELS["lookup_rows"], ids.size * table.shape[1], len(ids), table, ids, out, col)


def bag_max(table: np.ndarray, ids: np.ndarray, offsets: np.ndarray, read: np.ndarray | None,
            out: np.ndarray, argmax: np.ndarray) -> None:
    """Max-pool bags into ``out[bags, dim]`` and their argmax ids into ``argmax`` (int64)."""
    mask = np.empty(0, np.uint8) if read is None else read.view(np.uint8)
    run(_KERNELS["bag_max"], (int(offsets[-1]) - int(offsets[0])) * table.shape[1] + len(out),
        len(offsets) - 1, table, ids, offsets, mask, out, argmax)


def coalesce_max(grad_out: np.ndarray, order: np.ndarray, bag: np.ndarray, rows: np.ndarray,
                 argmax: np.ndarray, starts: np.ndarray, out: np.ndarray,
                 credits: np.ndarray) -> None:
    """Sum ``grad_out[b, d]`` into each run's row where ``argmax[b, d]`` is the run's id."""
    run(_KERNELS["coalesce_max"], len(order) * grad_out.shape[1], len(starts) - 1,
        grad_out, order, bag, rows, argmax, starts, out, credits)


def sort_ids(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stable sort of int64 ids ``>= 0``: ``(order, distinct ids, run starts)``.

    Run ``u`` of equal ids is ``order[starts[u]:starts[u + 1]]``, in input order. Ids and
    positions are packed into one ``id << shift | position`` key, so an unstable sort of
    unique keys (numpy's SIMD sort, ~5x faster than a stable argsort of int64) is a
    stable sort of the ids; a stable argsort is the fallback for ids too large to pack.
    """
    n = len(ids)
    shift = max(n - 1, 1).bit_length()
    if n and int(ids.max()) < 1 << (62 - shift):
        keys = (ids << np.int64(shift)) | np.arange(n, dtype=np.int64)
        keys.sort()
        order = np.empty(n, dtype=np.int64)
        rows = np.empty(n, dtype=np.int64)
        starts = np.empty(n + 1, dtype=np.int64)
        u = _split_sorted_keys(keys, np.int64(shift), order, rows, starts)
        return order, rows[:u], starts[:u + 1]
    order = np.argsort(ids, kind="stable").astype(np.int64, copy=False)
    ordered = ids[order]
    starts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1 if n else ordered[:0]
    starts = np.concatenate(([0], starts, [n])).astype(np.int64) if n else \
        np.zeros(1, dtype=np.int64)
    return order, ordered[starts[:-1]], starts


def coalesce_sorted(grad_out: np.ndarray, order: np.ndarray, bag: np.ndarray,
                    scale: np.ndarray, starts: np.ndarray, out: np.ndarray) -> None:
    """Sum ``scale[p] * grad_out[bag[p]]`` over each run ``order[starts[u]:starts[u+1]]``.

    The runs are split over the kernel threads by element count (:func:`_element_blocks`).
    """
    work = len(order) * grad_out.shape[1]
    bounds = _element_blocks(starts, work)
    run(_KERNELS["coalesce_sorted"], work, len(bounds) - 1, grad_out, order, bag, scale,
        starts, out, bounds)


def weights_grad(table: np.ndarray, ids: np.ndarray, offsets: np.ndarray,
                 grad_out: np.ndarray, mean: bool, out: np.ndarray) -> None:
    """``out[j] = <grad_out[bag of j], table[ids[j]]>`` (divided by the bag size if ``mean``).

    The bags are split over the kernel threads by id count (:func:`_element_blocks`).
    """
    work = len(ids) * table.shape[1]
    bounds = _element_blocks(offsets, work)
    run(_KERNELS["weights_grad"], work, len(bounds) - 1, table, ids, offsets, grad_out, mean,
        out, bounds)


def sgd_rows(table: np.ndarray, rows: np.ndarray, values: np.ndarray, lr: float) -> None:
    """In place SGD on the rows of a coalesced gradient."""
    run(_KERNELS["sgd_rows"], values.size, len(rows), table, rows, values, lr)


def adagrad_rows(table: np.ndarray, state: np.ndarray, rows: np.ndarray, values: np.ndarray,
                 lr: float, eps: float) -> None:
    """In place Adagrad (``torch.optim.Adagrad``) on the rows of a coalesced gradient."""
    run(_KERNELS["adagrad_rows"], values.size, len(rows), table, state, rows, values, lr, eps)


def rowwise_adagrad_rows(table: np.ndarray, state: np.ndarray, rows: np.ndarray,
                         values: np.ndarray, lr: float, eps: float) -> None:
    """In place row-wise Adagrad (FBGEMM) on the rows of a coalesced gradient."""
    run(_KERNELS["rowwise_adagrad_rows"], values.size, len(rows), table, state, rows, values,
        lr, eps)


def ftrl_rows(table: np.ndarray, z: np.ndarray, n: np.ndarray, rows: np.ndarray,
              values: np.ndarray, alpha: float, beta: float, l1: float, l2: float) -> None:
    """In place Caffe2 ``SparseFtrl`` on the rows of a coalesced gradient."""
    run(_KERNELS["ftrl_rows"], values.size, len(rows), table, z, n, rows, values, alpha, beta,
        l1, l2)
