"""CPU kernels for representation conversions: jagged <-> padded dense.

Values are passed as 2-D ``[num_values, D]`` (1-D values are viewed with ``D == 1``;
the padding kernel sees them flat, each row one contiguous run); offsets are int32 or
int64 and may start above zero. A *row index* array maps each output row to a jagged
row (``-1`` = padding); an empty row index means the identity. A *valid* array is a
uint8 row mask; empty means all rows valid. Copies move bits: the wrappers view
float16 values as uint16.
"""

from __future__ import annotations

import numpy as np

from ._jit import parallel_kernel, run


def _pad_rows(values, width, row_index, offsets, valid, elem_valid, max_length, pad,
              out, lo, hi):  # pragma: no cover
    # values: flat [N * width]; out: [P, max_length * width], C-contiguous. Output row
    # p in [lo, hi) copies jagged row r = row_index[p] (or p), truncated to max_length,
    # and pads the rest; a null element is padded. Element loops over the flat output
    # at unsigned positions: no negative-index wraparound, no array views or slice
    # assignments per row (their set-up and checks cost more than a short row's copy,
    # and an array assigned to a slice compiles Numba's shape-mismatch error).
    identity = row_index.shape[0] == 0
    all_valid = valid.shape[0] == 0
    all_elems = elem_valid.shape[0] == 0
    line = out.shape[1]
    flat = out.reshape(-1)
    w = np.uint64(width)
    for p in range(lo, hi):
        r = np.int64(p) if identity else row_index[p]
        base = np.uint64(p * line)
        n = 0
        if r >= 0 and (all_valid or valid[r]):
            start = np.int64(offsets[r])
            n = min(np.int64(offsets[r + 1]) - start, max_length)
            src = np.uint64(start * width)
            if all_elems:
                for k in range(np.uint64(n * width)):
                    flat[base + k] = values[src + k]
            else:
                for j in range(n):
                    at = np.uint64(j * width)
                    if elem_valid[start + j]:
                        for k in range(w):
                            flat[base + at + k] = values[src + at + k]
                    else:
                        for k in range(w):
                            flat[base + at + k] = pad
        for k in range(np.uint64(n * width), np.uint64(line)):
            flat[base + k] = pad


def _expand_level(row_index, offsets, valid, max_length, out, lo, hi):  # pragma: no cover
    # out[p * max_length + j] = index of the j-th child of row r = row_index[p]
    # (or p), or -1 past the row's end, for a null row or a padding row; p in [lo, hi).
    identity = row_index.shape[0] == 0
    all_valid = valid.shape[0] == 0
    for p in range(lo, hi):
        r = np.int64(p) if identity else row_index[p]
        n = 0
        start = 0
        if r >= 0 and (all_valid or valid[r]):
            start = offsets[r]
            n = min(offsets[r + 1] - start, max_length)
        base = p * max_length
        for j in range(n):
            out[base + j] = start + j
        for j in range(n, max_length):
            out[base + j] = -1


def _unpad_rows(dense, dense_row_of, offsets, pad, out, lo, hi):  # pragma: no cover
    # dense: [P, L, D]; jagged row r in [lo, hi) is read from dense row dense_row_of[r]
    # (or r; -1 = not present in dense). Positions past the dense extent read ``pad``.
    dense_rows = dense.shape[0]
    dense_len = dense.shape[1]
    width = dense.shape[2]
    identity = dense_row_of.shape[0] == 0
    for r in range(lo, hi):
        p = np.int64(r) if identity else dense_row_of[r]
        if p >= dense_rows:
            p = -1
        start = offsets[r]
        n = offsets[r + 1] - start
        for j in range(n):
            if p >= 0 and j < dense_len:
                for d in range(width):
                    out[start + j, d] = dense[p, j, d]
            else:
                for d in range(width):
                    out[start + j, d] = pad


_PAD_ROWS = parallel_kernel(_pad_rows)
_EXPAND_LEVEL = parallel_kernel(_expand_level)
_UNPAD_ROWS = parallel_kernel(_unpad_rows)

_EMPTY_INDEX = np.empty(0, dtype=np.int64)
_EMPTY_MASK = np.empty(0, dtype=np.uint8)


def pad_rows(values: np.ndarray, row_index: np.ndarray | None, offsets: np.ndarray,
             valid: np.ndarray | None, max_length: int, pad: np.generic,
             out: np.ndarray, elem_valid: np.ndarray | None = None) -> None:
    """Fill ``out[P, max_length, D]`` from jagged rows (see module docstring).

    ``elem_valid`` (uint8, one per value, or None) pads the null elements. A
    non-contiguous ``out`` is filled through a contiguous temporary.
    """
    target = out if out.flags.c_contiguous else np.empty(out.shape, dtype=out.dtype)
    width = out.shape[2]
    flat = np.ascontiguousarray(values, dtype=out.dtype).reshape(-1)
    run(_PAD_ROWS, out.size, out.shape[0], flat, width,
        _EMPTY_INDEX if row_index is None else row_index, offsets,
        _EMPTY_MASK if valid is None else valid,
        _EMPTY_MASK if elem_valid is None else elem_valid, max_length, pad,
        target.reshape(out.shape[0], max_length * width))
    if target is not out:
        out[...] = target


def expand_level(row_index: np.ndarray | None, offsets: np.ndarray, valid: np.ndarray | None,
                 max_length: int, num_out: int) -> np.ndarray:
    """Row index of the next jagged level, ``num_out * max_length`` long."""
    out = np.empty(num_out * max_length, dtype=np.int64)
    run(_EXPAND_LEVEL, out.size, num_out, _EMPTY_INDEX if row_index is None else row_index,
        offsets, _EMPTY_MASK if valid is None else valid, max_length, out)
    return out


def unpad_rows(dense: np.ndarray, dense_row_of: np.ndarray | None, offsets: np.ndarray,
               pad: np.generic, out: np.ndarray) -> None:
    """Fill jagged values ``out[N, D]`` from ``dense[P, L, D]`` (see module docstring)."""
    run(_UNPAD_ROWS, out.size, len(offsets) - 1, dense,
        _EMPTY_INDEX if dense_row_of is None else dense_row_of, offsets, pad, out)
