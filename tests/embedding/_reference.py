"""Loop oracles of the embedding operations: the executable specification of each.

Each works on numpy tables and Python lists of bags (a bag is a list of ids), with loops a
reader can check by eye against the formulas of ``docs/embedding.md``; the tests compare
the public functions (and the kernels) with them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np


def ref_lookup(table: np.ndarray, bags: list[list[int]], mode: str = "sum",
               weights: list[list[float]] | None = None) -> np.ndarray:
    """Pooled rows ``[len(bags), dim]`` (float64): an empty bag gives zeros in every mode."""
    out = np.zeros((len(bags), table.shape[1]), np.float64)
    pool: Callable[..., Any] = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode]
    for b, bag in enumerate(bags):
        rows = [table[i] * (1.0 if weights is None else weights[b][j])
                for j, i in enumerate(bag)]
        if rows:
            out[b] = pool(rows, axis=0)
    return out


def ref_backward(grad_out: np.ndarray, bags: list[list[int]], num_embeddings: int,
                 mode: str = "sum", weights: list[list[float]] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The coalesced gradient of :func:`ref_lookup`: sorted distinct rows, their sums."""
    dense = np.zeros((num_embeddings, grad_out.shape[1]), np.float64)
    for b, bag in enumerate(bags):
        for j, i in enumerate(bag):
            s = 1.0 if weights is None else weights[b][j]
            if mode == "mean":
                s /= len(bag)
            dense[i] += s * grad_out[b]
    rows = np.array(sorted({i for bag in bags for i in bag}), dtype=np.int64)
    return rows, dense[rows] if len(rows) else np.zeros((0, grad_out.shape[1]))


def ref_piecewise_sum(rows: np.ndarray, piece: int) -> np.ndarray:
    """The device's sum of one run's gradient rows (in run order), in their dtype.

    A run of at most ``piece`` rows is the CPU's left-to-right sum. A longer one is cut
    into pieces of ``piece`` rows from its start, each summed left to right from 0, and
    the first piece's sum then takes each later piece's sum in order (``coalesce_sorted``
    and ``train_rows`` in ``embedding.cu``); every step rounds to the dtype.
    """
    def seq(block: np.ndarray) -> np.ndarray:
        acc = np.zeros(rows.shape[1:], rows.dtype)
        for row in block:
            acc = (acc + row).astype(rows.dtype)
        return acc

    acc = seq(rows[:piece])
    for start in range(piece, len(rows), piece):
        acc = (acc + seq(rows[start:start + piece])).astype(rows.dtype)
    return acc


def ref_sgd(table: np.ndarray, rows: Any, values: Any, lr: float) -> None:
    for r, g in zip(rows, values, strict=True):
        table[r] -= lr * g


def ref_adagrad(table: np.ndarray, state: np.ndarray, rows: Any, values: Any, lr: float,
                eps: float) -> None:
    for r, g in zip(rows, values, strict=True):
        state[r] += g * g
        table[r] -= lr * g / (np.sqrt(state[r]) + eps)


def ref_rowwise_adagrad(table: np.ndarray, state: np.ndarray, rows: Any, values: Any,
                        lr: float, eps: float) -> None:
    for r, g in zip(rows, values, strict=True):
        state[r] += np.mean(g * g)
        table[r] -= lr * g / (np.sqrt(state[r]) + eps)


def ref_ftrl(w: np.ndarray, z: np.ndarray, n: np.ndarray, rows: Any, values: Any,
             alpha: float, beta: float, l1: float, l2: float) -> None:
    """Caffe2's FTRL-proximal, one weight at a time."""
    for r, grow in zip(rows, values, strict=True):
        for d, g in enumerate(grow):
            n_new = n[r, d] + g * g
            sigma = (math.sqrt(n_new) - math.sqrt(n[r, d])) / alpha
            z[r, d] += g - sigma * w[r, d]
            n[r, d] = n_new
            zz = z[r, d]
            w[r, d] = ((l1 * np.sign(zz) - zz) / ((beta + math.sqrt(n_new)) / alpha + l2)
                       if abs(zz) > l1 else 0.0)


def ref_bag_ids(ids: list[int], offsets: list[int], valid: list[bool] | None,
                vmask: list[bool] | None, woffsets: list[int] | None,
                wvalid: list[bool] | None, bound: int) -> tuple[list[Any], ...]:
    """Plain loops of what the ``bag_ids`` kernel computes, and the errors it must record."""
    n, num_bags = len(ids), len(offsets) - 1
    bag, key, wpos, count = [-1] * n, [bound] * n, [-1] * n, [0] * num_bags
    errors: list[tuple[int, str]] = []
    for b in range(num_bags):
        lo, hi = offsets[b], offsets[b + 1]
        same = woffsets is None or hi - lo == woffsets[b + 1] - woffsets[b]
        if not same:
            errors.append((b, "same bag lengths"))
        if valid is not None and not valid[b]:
            continue
        for j in range(lo, hi):
            if vmask is not None and not vmask[j]:
                continue
            count[b] += 1
            if not 0 <= ids[j] < bound:
                errors.append((j, "ids out of range"))
                continue
            bag[j], key[j] = b, ids[j]
            if woffsets is None:
                wpos[j] = j
            elif same:
                p = woffsets[b] + j - lo
                if wvalid is not None and not wvalid[p]:
                    errors.append((j, "must not be null"))
                else:
                    wpos[j] = p
    return bag, [*key, bound], wpos, count, sorted(errors)  # the sentinel key last


def _ieee_max(column: np.ndarray) -> Any:
    """IEEE ``maximum`` of a column: NaN if any, else the largest, ``+0.0`` over ``-0.0``."""
    if column.dtype.kind == "f" and np.isnan(column).any():
        return column.dtype.type(np.nan)
    top = column.max()
    if top == 0 and column.dtype.kind == "f" and (np.signbit(column[column == 0]) == 0).any():
        return column.dtype.type(0.0)
    return top


def ref_max_argmax(table: np.ndarray, bags: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Max-pooled rows (table dtype) and the id of each max, per bag and column.

    The max is :func:`_ieee_max` of the bag's column; its id is the one at the first
    position whose value has the max's bits (ties: the first occurrence). An empty bag
    gives 0 and -1.
    """
    out = np.zeros((len(bags), table.shape[1]), table.dtype)
    arg = np.full((len(bags), table.shape[1]), -1, np.int64)
    for b, bag in enumerate(bags):
        if not bag:
            continue
        for d in range(table.shape[1]):
            column = table[bag, d]
            top = _ieee_max(column)
            same = [j for j, x in enumerate(column)
                    if (np.isnan(x) and np.isnan(top)) or (x == top and (
                        column.dtype.kind != "f" or np.signbit(x) == np.signbit(top)))]
            out[b, d], arg[b, d] = top, bag[same[0]]
    return out, arg


def ref_backward_max(grad_out: np.ndarray, bags: list[list[int]], argmax: np.ndarray,
                     num_embeddings: int) -> tuple[np.ndarray, np.ndarray]:
    """The gradient of max-pooled bags: ``grad_out[b, d]`` goes to row ``argmax[b, d]``.

    Empty bags give nothing; the rows are those that received at least one element,
    sorted.
    """
    dense = np.zeros((num_embeddings, grad_out.shape[1]), np.float64)
    won = np.zeros(num_embeddings, bool)
    for b, bag in enumerate(bags):
        if not bag:
            continue
        for d in range(grad_out.shape[1]):
            dense[argmax[b, d], d] += grad_out[b, d]
            won[argmax[b, d]] = True
    rows = np.flatnonzero(won)
    return rows, dense[rows]
