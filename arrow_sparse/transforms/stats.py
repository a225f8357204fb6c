"""Row length statistics: ``length_stats`` and :class:`LengthStats`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .. import _arrow
from .._backend import get_kernel, module_of, read_back
from ..jagged import Jagged
from ._leaf import (
    _not_a_column,
)

__all__ = ["LengthStats", "length_stats"]


# ------------------------------------------------------------------ length stats
@dataclass(frozen=True)
class LengthStats:
    """Row-length statistics of a list column, from :func:`length_stats`.

    ``rows`` counts every row; ``null_rows`` the null ones; ``empty_rows`` the non-null
    rows without elements; ``total_values`` the elements of non-null rows and
    ``null_values`` the null ones among them. ``min``, ``p50``, ``p90``, ``p99`` and
    ``max`` are exact row lengths over the non-null rows (None when there are none);
    the percentiles use the nearest-rank rule: ``pq`` is the smallest length with at
    least ``q`` percent of the rows at or below it.

    Examples
    --------
    >>> stats = asp.length_stats(pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6], []]))
    >>> stats.p50, stats.max
    (2, 4)
    >>> stats.to_dict()["empty_rows"]
    1
    """

    rows: int
    null_rows: int
    empty_rows: int
    total_values: int
    null_values: int
    min: int | None
    p50: int | None
    p90: int | None
    p99: int | None
    max: int | None

    def to_dict(self) -> dict[str, int | None]:
        """Return the statistics as a dict, in field order."""
        return asdict(self)


def length_stats(values: Any) -> LengthStats:
    """Exact statistics of the row lengths of a list column.

    Parameters
    ----------
    values
        Arrow list array (any nesting: the outer rows are measured) or ChunkedArray
        (all chunks together), or a :class:`Jagged`.

    Returns
    -------
    LengthStats
        Rows, null rows, empty rows, total and null values, and min/p50/p90/p99/max
        length of the non-null rows (nearest-rank percentiles, exact).

    Raises
    ------
    TypeError
        Not a list column.

    See Also
    --------
    pad_or_truncate : Choose a fixed length from ``p90`` or ``p99``.

    Notes
    -----
    On the device (a Jagged on the device): one synchronisation, the statistics read
    back together.

    Examples
    --------
    >>> asp.length_stats(pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6], []]))
    LengthStats(rows=5, null_rows=1, empty_rows=1, total_values=9, null_values=0,
                min=0, p50=2, p90=4, p99=4, max=4)
    """
    func = "length_stats"
    values = _arrow.as_arrow(values)
    if isinstance(values, Jagged) and values.device != "cpu":
        return _length_stats_device(func, values)
    if isinstance(values, pa.ChunkedArray):
        parts = list(values.chunks)
    elif isinstance(values, (pa.Array, Jagged)):
        parts = [values]
    else:
        raise _not_a_column(func, "values", values,
                            "an Arrow list array, a ChunkedArray or a Jagged")
    rows = null_values = 0
    kept = []
    for part in parts:
        if isinstance(part, Jagged):
            offsets, validity = part.offsets, part.validity
            child_valid = part.values.validity if isinstance(part.values, Jagged) \
                else part.values_validity
        else:
            if not _arrow.is_list_type(part.type):
                raise _not_a_column(func, "values", part, "an Arrow list array or a Jagged")
            _arrow.check_nested(func, "values", part)  # every level, not only the rows read
            level = _arrow.list_level(func, "values", part)
            offsets, validity = level.offsets, level.validity
            child_valid = _arrow.validity_of(level.child)
        lengths = np.diff(offsets).astype(np.int64)
        if validity is not None:
            lengths = lengths[validity]
        if child_valid is not None:
            present = get_kernel("transforms", "kept_lengths")(offsets, validity, child_valid)
            null_values += int(lengths.sum()) - int(present.sum())
        rows += len(offsets) - 1
        kept.append(lengths)
    lengths = np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)
    n = len(lengths)
    quantiles: list[int | None] = [None] * 5
    if n:
        ranks = _ranks(n)
        part_sorted = np.partition(lengths, sorted(set(ranks)))
        quantiles = [int(part_sorted[r]) for r in ranks]
    return LengthStats(rows=rows, null_rows=rows - n,
                       empty_rows=int(np.count_nonzero(lengths == 0)),
                       total_values=int(lengths.sum()), null_values=null_values,
                       min=quantiles[0], p50=quantiles[1], p90=quantiles[2], p99=quantiles[3],
                       max=quantiles[4])


def _ranks(n: Any) -> Any:
    """Sorted positions of min, p50, p90, p99 and max among ``n >= 1`` lengths.

    Nearest rank: the ``q`` percentile is at ``ceil(q * n / 100) - 1``, which is
    ``(q * n - 1) // 100`` (and 0 for ``q = 0``). ``n`` is an int (a list of ints
    back), or a device scalar (a device array back).
    """
    if isinstance(n, (int, np.integer)):
        return [(q * n + c) // 100 for q, c in zip(*_RANK_TERMS, strict=True)]
    terms = module_of(n).asarray(np.array(_RANK_TERMS))
    return (terms[0] * n + terms[1]) // 100


#: The percents of min, p50, p90, p99 and max, and the terms that make their ranks.
_RANK_TERMS = ((0, 50, 90, 99, 100), (0, -1, -1, -1, -1))


def _int64(x: Any) -> Any:
    return x if x.dtype == np.int64 else x.astype(np.int64)


def _length_stats_device(func: str, j: Jagged) -> LengthStats:
    """:func:`length_stats` of a Jagged on the device: one read-back of a few numbers."""
    xp = j.xp
    offsets, validity = j.offsets, j.validity
    rows = len(offsets) - 1
    child_valid = j.values.validity if isinstance(j.values, Jagged) else j.values_validity
    lengths = xp.diff(offsets)
    kept, keys, n = lengths, lengths, rows
    if validity is not None:
        kept = xp.where(validity, lengths, 0)
        keys = xp.where(validity, lengths, np.iinfo(lengths.dtype).max)  # nulls sort last
        n = validity.sum()
    sums = [kept.sum(), (kept == 0).sum()]
    if child_valid is not None:
        sums.append(get_kernel("transforms", "kept_lengths", xp)(
            offsets, validity, child_valid).sum())
    if validity is not None:
        sums.append(n)
    picked = xp.sort(keys)[xp.asarray(_ranks(n))] if rows else xp.zeros(5, np.int64)
    numbers = read_back(func, xp.concatenate([_int64(xp.stack(sums)), _int64(picked)]))
    numbers = numbers.tolist()
    total, zeros = numbers[0], numbers[1]
    present = numbers[2] if child_valid is not None else total
    n = numbers[len(sums) - 1] if validity is not None else rows
    quantiles = numbers[len(sums):] if n else [None] * 5
    return LengthStats(rows=rows, null_rows=rows - n, empty_rows=zeros - (rows - n),
                       total_values=total, null_values=total - present, min=quantiles[0],
                       p50=quantiles[1], p90=quantiles[2], p99=quantiles[3],
                       max=quantiles[4])
