"""Plain-Python oracles for ``arrow_sparse.segment``: the executable specification.

Rows are Python lists (``None`` = null row); a row's elements are numbers, lists of
numbers (vector values, reduced column by column) or ``None`` (null values, skipped).
Every reduction returns one Python result per row, ``None`` where the row is *missing*
(null, or fewer than ``min_count`` non-null values); the tests turn ``None`` into the
Arrow null or the numpy ``empty_value``. Floats are Python floats (float64).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Row = list[Any] | None


def _is_nan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _sum(xs: list[Any]) -> Any:
    total: Any = 0
    for x in xs:
        total += x
    return total


def _prod(xs: list[Any]) -> Any:
    total: Any = 1
    for x in xs:
        total *= x
    return total


def _mean(xs: list[Any]) -> float:
    return float(_sum([float(x) for x in xs])) / len(xs)


def _negative_zero(x: Any) -> bool:
    return isinstance(x, float) and x == 0 and math.copysign(1.0, x) < 0


def _max(xs: list[Any]) -> Any:
    # IEEE 754-2019 maximum: NaN propagates, and -0.0 < 0.0 (so max(-0.0, 0.0) is 0.0)
    best = xs[0]
    for x in xs[1:]:
        if _is_nan(best):
            break
        if _is_nan(x) or x > best or (x == best and _negative_zero(best)):
            best = x
    return best


def _min(xs: list[Any]) -> Any:
    # IEEE 754-2019 minimum: NaN propagates, and min(-0.0, 0.0) is -0.0
    best = xs[0]
    for x in xs[1:]:
        if _is_nan(best):
            break
        if _is_nan(x) or x < best or (x == best and _negative_zero(x)):
            best = x
    return best


def _argmax(xs: list[Any]) -> int:
    best = 0
    for k in range(1, len(xs)):
        if _is_nan(xs[best]):
            break
        if _is_nan(xs[k]) or xs[k] > xs[best]:
            best = k
    return best


def _argmin(xs: list[Any]) -> int:
    best = 0
    for k in range(1, len(xs)):
        if _is_nan(xs[best]):
            break
        if _is_nan(xs[k]) or xs[k] < xs[best]:
            best = k
    return best


def _logsumexp(xs: list[Any]) -> float:
    values = [float(x) for x in xs]
    if any(math.isnan(x) for x in values):
        return math.nan
    m = max(values)
    if math.isinf(m):
        return m
    return m + math.log(_sum([math.exp(x - m) for x in values]))


OPS: dict[str, Callable[[list[Any]], Any]] = {
    "sum": _sum, "weighted_sum": _sum, "prod": _prod, "mean": _mean, "max": _max,
    "min": _min, "logsumexp": _logsumexp,
}

#: min_count the public functions use by default.
DEFAULT_MIN_COUNT = {"sum": 0, "weighted_sum": 0, "prod": 0, "mean": 1, "max": 1, "min": 1,
                     "logsumexp": 1, "argmax": 1, "argmin": 1}


def _columns(items: list[Any]) -> list[list[Any]] | None:
    """Vector items as columns; None when the items are scalars."""
    if not items or not isinstance(items[0], list):
        return None
    return [[item[d] for item in items] for d in range(len(items[0]))]


def reduce_row(items: list[Any], op: str, positions: list[int] | None = None) -> Any:
    """Reduce the non-null ``items`` of one row (scalars, or vectors column by column).

    For argmax/argmin, ``positions`` are the items' positions within the row.
    """
    cols = _columns(items)
    if op in ("argmax", "argmin"):
        pick = _argmax if op == "argmax" else _argmin
        pos = positions if positions is not None else list(range(len(items)))
        if cols is None:
            return pos[pick(items)]
        return [pos[pick(col)] for col in cols]
    if cols is None:
        return OPS[op](items)
    return [OPS[op](col) for col in cols]


def segment_reduce(rows: list[Row], op: str, *, weights: list[Row] | None = None,
                   min_count: int | None = None) -> list[Any]:
    """One result per row; ``None`` for null rows and rows under ``min_count`` values."""
    if min_count is None:
        min_count = DEFAULT_MIN_COUNT[op]
    if op in ("mean", "max", "min", "logsumexp", "argmax", "argmin"):
        min_count = max(min_count, 1)
    out: list[Any] = []
    for r, row in enumerate(rows):
        wrow = weights[r] if weights is not None else None
        if row is None or (weights is not None and wrow is None):
            out.append(None)
            continue
        items, positions = [], []
        for k, x in enumerate(row):
            if x is None:
                continue
            if wrow is not None:
                x = [wrow[k] * e for e in x] if isinstance(x, list) else wrow[k] * x
            items.append(x)
            positions.append(k)
        if len(items) < min_count:
            out.append(None)
        elif not items:
            out.append(OPS[op]([]))
        else:
            out.append(reduce_row(items, op, positions))
    return out


def rows_from_offsets(values: list[Any], offsets: list[int]) -> list[Row]:
    """Rows ``values[offsets[r]:offsets[r + 1]]``."""
    return [list(values[offsets[r]:offsets[r + 1]]) for r in range(len(offsets) - 1)]


def rows_from_segment_ids(values: list[Any], ids: list[int], num_segments: int) -> list[Row]:
    """Rows of values grouped by segment id, in input order (sorted or not)."""
    rows: list[Row] = [[] for _ in range(num_segments)]
    for x, s in zip(values, ids, strict=True):
        rows[s].append(x)  # type: ignore[union-attr]
    return rows


def sparse_rows(table: list[Any], id_rows: list[Row]) -> list[Row]:
    """Gather: each row of ids becomes the row of table entries (null ids stay null)."""
    return [None if row is None else [None if i is None else table[i] for i in row]
            for row in id_rows]


def gather(data: list[Any], indices: list[int]) -> list[Any]:
    out = []
    for i in indices:
        out.append(data[i])
    return out


def scatter_assign(data: list[Any], indices: list[int], slices: list[Any]) -> list[Any]:
    data = list(data)
    for k, i in enumerate(indices):
        data[i] = slices[k]
    return data


def scatter_weighted_sum(data: list[Any], w0: float, indices: list[int], slices: list[Any],
                         w1: float) -> list[Any]:
    """Caffe2's ``ScatterWeightedSumOp``, in its two loops.

    First every occurrence of an index scales its row by ``w0`` (a row listed ``k`` times
    is scaled ``k`` times), then every ``w1 * slices[k]`` is added into its row.
    """
    data = list(data)

    def scale(x: Any) -> Any:
        return [w0 * a for a in x] if isinstance(x, list) else w0 * x

    def add(x: Any, s: Any) -> Any:
        if isinstance(x, list):
            return [a + w1 * b for a, b in zip(x, s, strict=True)]
        return x + w1 * s

    for i in indices:
        data[i] = scale(data[i])
    for k, i in enumerate(indices):
        data[i] = add(data[i], slices[k])
    return data
