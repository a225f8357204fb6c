"""Plain-Python oracles: the executable specification of each operation.

Each function works on Python lists (``None`` = null row) with loops a reader can
check by eye; tests compare the compiled kernels against them.
"""

from __future__ import annotations

from typing import Any


def lengths_to_offsets(lengths: list[int]) -> list[int]:
    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + n)
    return offsets


def offsets_to_segment_ids(offsets: list[int]) -> list[int]:
    ids = []
    for row in range(len(offsets) - 1):
        ids.extend([row] * (offsets[row + 1] - offsets[row]))
    return ids


def segment_ids_to_lengths(ids: list[int], num_segments: int) -> list[int]:
    lengths = [0] * num_segments
    for i in ids:
        lengths[i] += 1
    return lengths


def rows_of(values: list[Any], offsets_list: list[list[int]]) -> list[Any]:
    """Nested Python rows of a multi-level jagged tensor (outermost offsets first)."""
    items: list[Any] = list(values)
    for offsets in reversed(offsets_list):
        items = [items[offsets[r]:offsets[r + 1]] for r in range(len(offsets) - 1)]
    return items


def pad(rows: list[Any], max_lengths: list[int], pad_value: Any, inner: Any) -> list[Any]:
    """Pad nested rows (None = null row) to ``max_lengths``; ``inner`` is one padding element."""
    def pad_level(row: Any, level: int) -> list[Any]:
        out = []
        for j in range(max_lengths[level]):
            present = row is not None and j < len(row)
            if level == len(max_lengths) - 1:
                out.append(row[j] if present else inner)
            else:
                out.append(pad_level(row[j] if present else None, level + 1))
        return out
    return [pad_level(row, 0) for row in rows]


def dense_to_jagged(dense: list[Any], offsets_list: list[list[int]], pad_value: Any,
                    inner: Any) -> list[Any]:
    """Values of ``offsets_list`` read from nested dense lists (FBGEMM: missing -> padding)."""
    total = offsets_list[-1][-1]
    values: list[Any] = [inner] * total

    def read(node: Any, level: int, row: int) -> None:
        offsets = offsets_list[level]
        start, stop = offsets[row], offsets[row + 1]
        for j in range(stop - start):
            child = node[j] if node is not None and j < len(node) else None
            if level == len(offsets_list) - 1:
                values[start + j] = child if child is not None else inner
            else:
                read(child, level + 1, start + j)

    for r in range(len(offsets_list[0]) - 1):
        read(dense[r], 0, r)
    return values
