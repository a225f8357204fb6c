"""CPU kernels of the transforms family: padding/truncation and row compaction.

Re-exported by ``transforms.py``. Conventions as there: a validity argument is a uint8
mask (1 = valid) and an empty one means "all valid"; row offsets are int32 or int64
and may start above zero.
"""

from __future__ import annotations

import numpy as np

from ._jit import parallel_kernel, run

_EMPTY_MASK = np.empty(0, dtype=np.uint8)


def _pad_or_truncate(values, offsets, row_valid, valid, length, left, pad, out,
                     out_valid, lo, hi):  # pragma: no cover
    # values [N, D] -> out [rows, length, D], for rows [lo, hi). left=False keeps a
    # row's first ``length`` elements and pads at the end; left=True keeps its last ones
    # and pads in front.
    # Null rows are all padding; null elements get ``pad`` and, when out_valid is not
    # empty, out_valid 0 there (1 everywhere else).
    width = out.shape[2]
    all_rows = row_valid.shape[0] == 0
    all_valid = valid.shape[0] == 0
    mark = out_valid.shape[0] != 0
    for r in range(lo, hi):
        n = 0
        start = 0
        if all_rows or row_valid[r] != 0:
            start = offsets[r]
            n = offsets[r + 1] - start
        m = min(n, length)
        src = start + n - m if left else start
        dst = length - m if left else 0
        for j in range(length):
            if mark:
                out_valid[r, j] = 1
            i = j - dst
            if i < 0 or i >= m:
                for d in range(width):
                    out[r, j, d] = pad
            elif all_valid or valid[src + i] != 0:
                for d in range(width):
                    out[r, j, d] = values[src + i, d]
            else:
                for d in range(width):
                    out[r, j, d] = pad
                if mark:
                    out_valid[r, j] = 0


def _kept_lengths(offsets, row_valid, valid, out, lo, hi):  # pragma: no cover
    # Elements of each row in [lo, hi) kept by compaction: none for a null row, the
    # valid ones (all when ``valid`` is empty) otherwise.
    all_rows = row_valid.shape[0] == 0
    all_valid = valid.shape[0] == 0
    for r in range(lo, hi):
        if not all_rows and row_valid[r] == 0:
            out[r] = 0
        elif all_valid:
            out[r] = offsets[r + 1] - offsets[r]
        else:
            c = 0
            for k in range(offsets[r], offsets[r + 1]):
                c += valid[k] != 0
            out[r] = c


def _kept_positions(offsets, row_valid, valid, new_offsets, out, lo,
                    hi):  # pragma: no cover
    # out[new_offsets[r]:new_offsets[r + 1]] = positions kept from row r in [lo, hi).
    all_rows = row_valid.shape[0] == 0
    all_valid = valid.shape[0] == 0
    for r in range(lo, hi):
        if not all_rows and row_valid[r] == 0:
            continue
        w = new_offsets[r]
        for k in range(offsets[r], offsets[r + 1]):
            if all_valid or valid[k] != 0:
                out[w] = k
                w += 1

_PAD_OR_TRUNCATE = parallel_kernel(_pad_or_truncate)
_KEPT_LENGTHS = parallel_kernel(_kept_lengths)
_KEPT_POSITIONS = parallel_kernel(_kept_positions)


def _mask(valid: np.ndarray | None) -> np.ndarray:
    return _EMPTY_MASK if valid is None else valid.view(np.uint8)


def pad_or_truncate(values: np.ndarray, offsets: np.ndarray, row_valid: np.ndarray | None,
                    valid: np.ndarray | None, length: int, left: bool, pad: np.generic,
                    out: np.ndarray, out_valid: np.ndarray | None) -> None:
    """Fill ``out[rows, length, D]`` (and ``out_valid[rows, length]``) from ``values[N, D]``."""
    run(_PAD_OR_TRUNCATE, out.size, len(offsets) - 1, values, offsets, _mask(row_valid),
        _mask(valid), length, left, pad, out,
        _EMPTY_MASK.reshape(0, 1) if out_valid is None else out_valid)


def kept_lengths(offsets: np.ndarray, row_valid: np.ndarray | None,
                 valid: np.ndarray | None) -> np.ndarray:
    """Per row, the elements a compaction keeps (0 for a null row)."""
    lengths = np.empty(len(offsets) - 1, dtype=np.int64)
    run(_KEPT_LENGTHS, int(offsets[-1] - offsets[0]), len(lengths), offsets, _mask(row_valid),
        _mask(valid), lengths)
    return lengths


def compact(offsets: np.ndarray, row_valid: np.ndarray | None, valid: np.ndarray | None
            ) -> tuple[np.ndarray, np.ndarray]:
    """Compact rows: new offsets (from 0, dtype of ``offsets``) and the kept positions.

    A null row keeps nothing (its range is not read); a valid row keeps its elements
    whose ``valid`` entry is set (all of them when ``valid`` is None).
    """
    rows = len(offsets) - 1
    lengths = np.empty(rows, dtype=np.int64)
    work = int(offsets[-1] - offsets[0])
    run(_KEPT_LENGTHS, work, rows, offsets, _mask(row_valid), _mask(valid), lengths)
    new_offsets = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    positions = np.empty(int(new_offsets[-1]), dtype=np.int64)
    run(_KEPT_POSITIONS, work, rows, offsets, _mask(row_valid), _mask(valid), new_offsets,
        positions)
    return new_offsets.astype(offsets.dtype, copy=False), positions
