"""CPU kernels for jagged arithmetic.

Softmax, cumsum, row gathers, unique, jagged-dense elementwise and the jagged bmm ops.

Conventions (as in ``convert``): values are 2-D ``[num_values, D]`` (1-D values are
viewed with ``D == 1``); offsets are int64 (the wrappers widen int32 offsets) and may
start above zero; a *valid* array is a uint8 mask (empty = all valid). Kernels write
only the positions the rows address; the wrappers allocate ``out`` with zeros (softmax
writes every addressed position, so its ``out`` need not be zeroed there).
Copy-only kernels (gather, repeat) see the values as machine words (uint8..uint64), so
one compiled variant serves every dtype of that width.
"""

from __future__ import annotations

import threading

import numba
import numpy as np

from ._jit import PARALLEL_THRESHOLD, kernel, parallel_kernel, run

# ----------------------------------------------------------------- per-row scans


def _softmax_shift(x, offsets, row_valid, elem_valid, max_length, lo, hi,
                   out):  # pragma: no cover
    # Rows [lo, hi) of flat x: out[k] = x[k] - max(row) over the row's first max_length
    # non-null elements; -inf for the others and for null rows (exp gives them 0).
    # Row views keep the indices provably non-negative so the loops vectorise.
    all_rows = row_valid.shape[0] == 0
    all_elems = elem_valid.shape[0] == 0
    for r in range(lo, hi):
        s = np.int64(offsets[r])
        e = np.int64(offsets[r + 1])
        if e == s:
            continue
        xr = x[s:e]
        orow = out[s:e]
        if not (all_rows or row_valid[r]):
            orow[:] = -np.inf
            continue
        m = min(e - s, max_length)
        if all_elems:
            top = xr[0]
            for k in range(1, m):
                v = xr[k]
                top = v if v > top else top
            for k in range(m):
                orow[k] = xr[k] - top
        else:
            flags = elem_valid[s:e]
            high = -np.inf
            for k in range(m):
                if flags[k] and xr[k] > high:
                    high = xr[k]
            for k in range(m):
                orow[k] = xr[k] - high if flags[k] else -np.inf
        orow[m:] = -np.inf


def _softmax_scale(offsets, lo, hi, out):  # pragma: no cover
    # Rows [lo, hi) of flat out (holding the exps): divide by the row's sum, summed
    # in float64; a row summing to 0 (null, or nothing valid) stays 0.
    for r in range(lo, hi):
        orow = out[np.int64(offsets[r]):np.int64(offsets[r + 1])]
        total = 0.0
        for k in range(orow.shape[0]):
            total += orow[k]
        if total == 0.0:
            continue
        inv = 1.0 / total
        for k in range(orow.shape[0]):
            orow[k] = orow[k] * inv


def _cumsum(values, offsets, row_valid, elem_valid, exclusive, zero, out, lo,
            hi):  # pragma: no cover
    # Running sum along each row in [lo, hi), per column; null elements add nothing
    # (output 0).
    width = values.shape[1]
    all_rows = row_valid.shape[0] == 0
    all_elems = elem_valid.shape[0] == 0
    for r in range(lo, hi):
        if not (all_rows or row_valid[r]):
            continue
        start = offsets[r]
        stop = offsets[r + 1]
        for d in range(width):
            acc = zero
            for k in range(start, stop):
                if all_elems or elem_valid[k]:
                    x = values[k, d]
                    if exclusive:
                        out[k, d] = acc
                        acc += x
                    else:
                        acc += x
                        out[k, d] = acc


# ------------------------------------------------------------------ row gathers


def _gather_ranges(src, starts, out_offsets, out, lo, hi):  # pragma: no cover
    # out rows i = src[starts[i] : starts[i] + len_i], len_i from out_offsets, i in [lo, hi).
    width = src.shape[1]
    for i in range(lo, hi):
        s = starts[i]
        o = out_offsets[i]
        for j in range(out_offsets[i + 1] - o):
            for d in range(width):
                out[o + j, d] = src[s + j, d]


def _ranges_to_indices(starts, out_offsets, out, lo, hi):  # pragma: no cover
    # out[out_offsets[i] + j] = starts[i] + j: the element ids ranges [lo, hi) cover.
    for i in range(lo, hi):
        s = starts[i]
        o = out_offsets[i]
        for j in range(out_offsets[i + 1] - o):
            out[o + j] = s + j


def _repeat_rows(src, offsets, base, out, lo, hi):  # pragma: no cover
    # out[k - base] = src[r] for every position k of row r in [lo, hi).
    width = src.shape[1]
    for r in range(lo, hi):
        for k in range(offsets[r], offsets[r + 1]):
            for d in range(width):
                out[k - base, d] = src[r, d]


# ------------------------------------------------------------------------ unique


def _sort_rows(values, offsets, row_valid, elem_valid, buf, num_valid, num_unique, lo,
               hi):  # pragma: no cover
    # Copy the non-null elements of each row in [lo, hi) to buf (row r at
    # offsets[r] - offsets[0]), sort them, and count the distinct ones (NaNs count once).
    base = offsets[0]
    all_rows = row_valid.shape[0] == 0
    all_elems = elem_valid.shape[0] == 0
    for r in range(lo, hi):
        num_valid[r] = 0
        num_unique[r] = 0
        if not (all_rows or row_valid[r]):
            continue
        b = offsets[r] - base
        n = 0
        for k in range(offsets[r], offsets[r + 1]):
            if all_elems or elem_valid[k]:
                buf[b + n] = values[k]
                n += 1
        if n == 0:
            continue
        row = buf[b:b + n]
        row.sort()
        count = 1
        for k in range(1, n):
            prev = row[k - 1]
            x = row[k]
            if x != prev and not (x != x and prev != prev):
                count += 1
        num_valid[r] = n
        num_unique[r] = count


def _write_unique(buf, offsets, num_valid, out_offsets, out, lo, hi):  # pragma: no cover
    base = offsets[0]
    for r in range(lo, hi):
        n = num_valid[r]
        if n == 0:
            continue
        b = offsets[r] - base
        o = out_offsets[r]
        out[o] = buf[b]
        w = 1
        for k in range(1, n):
            prev = buf[b + k - 1]
            x = buf[b + k]
            if x != prev and not (x != x and prev != prev):
                out[o + w] = x
                w += 1


# ------------------------------------------------------------ jagged x dense


def _jagged_dense_jagged_out(x, dense, dense_row_of, offsets, op, zero, out, lo,
                             hi):  # pragma: no cover
    # out[k] = x[k] op dense[p, j] for element j of jagged row r in [lo, hi) (dense row
    # p = dense_row_of[r], or r); elements outside the dense combine with 0.
    # op: 0 add, 1 multiply, 2 read (out = the dense value or 0; x unused).
    # All three arrays are C-contiguous: a row's elements are one run of the flat
    # arrays, walked at unsigned positions (no negative-index wraparound), which
    # vectorises.
    dense_len = dense.shape[1]
    width = x.shape[1]
    identity = dense_row_of.shape[0] == 0
    xf = x.reshape(-1)
    of = out.reshape(-1)
    df = dense.reshape(-1)
    line = dense_len * width
    for r in range(lo, hi):
        p = np.int64(r) if identity else dense_row_of[r]
        start = offsets[r]
        n = offsets[r + 1] - start
        inside = 0 if p < 0 else min(n, dense_len)
        first = np.uint64(start * width)
        m = np.uint64(inside * width)
        total = np.uint64(n * width)
        if inside > 0:
            at = np.uint64(p * line)
            if op == 0:
                for k in range(m):
                    of[first + k] = xf[first + k] + df[at + k]
            elif op == 1:
                for k in range(m):
                    of[first + k] = xf[first + k] * df[at + k]
            else:
                for k in range(m):
                    of[first + k] = df[at + k]
        if op == 0:
            for k in range(m, total):
                of[first + k] = xf[first + k] + zero
        elif op == 1:
            for k in range(m, total):
                of[first + k] = xf[first + k] * zero
        else:
            for k in range(m, total):
                of[first + k] = zero


def _jagged_dense_dense_out(x, row_index, offsets, valid, elem_valid, dense, out, lo,
                            hi):  # pragma: no cover
    # out[p, j] = dense[p, j] + x[element j of row r = row_index[p] (or p)], or
    # dense[p, j] where row r has no element j (padding, null row, truncated) or
    # that element is null; p in [lo, hi).
    dense_len = out.shape[1]
    width = out.shape[2]
    identity = row_index.shape[0] == 0
    all_valid = valid.shape[0] == 0
    all_elems = elem_valid.shape[0] == 0
    for p in range(lo, hi):
        r = np.int64(p) if identity else row_index[p]
        n = 0
        start = 0
        if r >= 0 and (all_valid or valid[r]):
            start = offsets[r]
            n = min(offsets[r + 1] - start, dense_len)
        for j in range(n):
            if all_elems or elem_valid[start + j]:
                for d in range(width):
                    out[p, j, d] = x[start + j, d] + dense[p, j, d]
            else:
                for d in range(width):
                    out[p, j, d] = dense[p, j, d]
        for j in range(n, dense_len):
            for d in range(width):
                out[p, j, d] = dense[p, j, d]


# ------------------------------------------------------------------------- bmm


def _jagged_dense_bmm(x, offsets, valid, elem_valid, dense, max_length, out, lo,
                      hi):  # pragma: no cover
    # out[row b's element l] = x[l, :] @ dense[b] for l < max_length, b in [lo, hi);
    # out pre-zeroed. Null rows and null elements are skipped (stay 0).
    depth = x.shape[1]
    width = out.shape[1]
    all_valid = valid.shape[0] == 0
    all_elems = elem_valid.shape[0] == 0
    for b in range(lo, hi):
        if not (all_valid or valid[b]):
            continue
        start = offsets[b]
        n = min(offsets[b + 1] - start, max_length)
        for e in range(start, start + n):
            if not (all_elems or elem_valid[e]):
                continue
            for k in range(depth):
                xv = x[e, k]
                for m in range(width):
                    out[e, m] += xv * dense[b, k, m]


def _jagged_jagged_bmm(x, x_offsets, x_valid, y, y_offsets, y_valid, valid, max_length,
                       out, lo, hi):  # pragma: no cover
    # out[b] = x_b^T @ y_b over the first max_length elements of row b in [lo, hi); out
    # pre-zeroed. Null rows and the elements null in x or in y are skipped.
    rows_m = x.shape[1]
    cols_n = y.shape[1]
    all_valid = valid.shape[0] == 0
    all_x = x_valid.shape[0] == 0
    all_y = y_valid.shape[0] == 0
    for b in range(lo, hi):
        if not (all_valid or valid[b]):
            continue
        xs = x_offsets[b]
        ys = y_offsets[b]
        n = min(x_offsets[b + 1] - xs, max_length)
        for e in range(n):
            if not ((all_x or x_valid[xs + e]) and (all_y or y_valid[ys + e])):
                continue
            for m in range(rows_m):
                xv = x[xs + e, m]
                for c in range(cols_n):
                    out[b, m, c] += xv * y[ys + e, c]


_SOFTMAX_SHIFT = kernel(_softmax_shift)
_SOFTMAX_SCALE = kernel(_softmax_scale)
_CUMSUM = parallel_kernel(_cumsum)
_GATHER_RANGES = parallel_kernel(_gather_ranges)
_RANGES_TO_INDICES = parallel_kernel(_ranges_to_indices)
_REPEAT_ROWS = parallel_kernel(_repeat_rows)
_SORT_ROWS = parallel_kernel(_sort_rows)
_WRITE_UNIQUE = parallel_kernel(_write_unique)
_JAGGED_DENSE_JAGGED_OUT = parallel_kernel(_jagged_dense_jagged_out)
_JAGGED_DENSE_DENSE_OUT = parallel_kernel(_jagged_dense_dense_out)
_JAGGED_DENSE_BMM = parallel_kernel(_jagged_dense_bmm)
_JAGGED_JAGGED_BMM = parallel_kernel(_jagged_jagged_bmm)

_EMPTY_INDEX = np.empty(0, dtype=np.int64)
_EMPTY_MASK = np.empty(0, dtype=np.uint8)


def _mask(valid: np.ndarray | None) -> np.ndarray:
    return _EMPTY_MASK if valid is None else valid


def _index(index: np.ndarray | None) -> np.ndarray:
    return _EMPTY_INDEX if index is None else index


def softmax(values: np.ndarray, offsets: np.ndarray, row_valid: np.ndarray | None,
            elem_valid: np.ndarray | None, max_length: int, out: np.ndarray) -> None:
    """Per-row softmax of float ``values[N, D]`` into ``out`` (same shape).

    Every position ``[offsets[0], offsets[-1])`` of ``out`` is written (0 under null
    rows, null elements and past ``max_length``); the others are left alone.

    Three steps per block of rows small enough to stay in cache: subtract the row
    maximum (Numba), ``numpy.exp`` in place (numpy's SIMD exp is ~10x faster than a
    scalar one), divide by the row sum (Numba). Large inputs are split into one
    contiguous run of rows per thread, balanced by values. Columns of 2-D values are
    transposed into rows of their own.
    """
    width = values.shape[1]
    if width == 1:
        _softmax_flat(np.ascontiguousarray(values).reshape(-1), offsets, _mask(row_valid),
                      _mask(elem_valid), max_length, out.reshape(-1))
        return
    start, stop = int(offsets[0]), int(offsets[-1])
    n = stop - start
    columns = np.ascontiguousarray(values[start:stop].T).reshape(-1)
    rebased = offsets - offsets[0]
    col_offsets = np.concatenate([rebased[:-1] + c * n for c in range(width)]
                                 + [np.array([width * n], dtype=np.int64)])
    rows = None if row_valid is None else np.tile(_mask(row_valid), width)
    elems = None if elem_valid is None else np.tile(_mask(elem_valid)[start:stop], width)
    col_out = np.zeros(width * n, dtype=out.dtype)
    _softmax_flat(columns, col_offsets, _mask(rows), _mask(elems), max_length, col_out)
    out[start:stop] = col_out.reshape(width, n).T


#: Elements per softmax block: a block's values and results stay in L2 between steps.
_SOFTMAX_BLOCK = 1 << 16


def _softmax_flat(x: np.ndarray, offsets: np.ndarray, row_valid: np.ndarray,
                  elem_valid: np.ndarray, max_length: int, out: np.ndarray) -> None:
    rows = offsets.shape[0] - 1
    first, last = int(offsets[0]), int(offsets[-1])
    parts = min(numba.get_num_threads(), max(1, (last - first) // (4 * PARALLEL_THRESHOLD)))
    targets = first + (last - first) * np.arange(1, parts) // parts
    bounds = [0, *np.searchsorted(offsets, targets).tolist(), rows]
    jobs = [(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True) if hi > lo]

    def one(lo: int, hi: int) -> None:
        starts = offsets[lo:hi + 1]
        marks = np.arange(int(starts[0]) + _SOFTMAX_BLOCK, int(starts[-1]), _SOFTMAX_BLOCK)
        cuts = np.unique(np.searchsorted(starts, marks)).tolist()
        edges = [lo, *(lo + c for c in cuts if 0 < c < hi - lo), hi]
        with np.errstate(all="ignore"):  # exp(-inf) = 0 and exp(nan) = nan are meant
            for a, b in zip(edges[:-1], edges[1:], strict=True):
                _SOFTMAX_SHIFT(x, offsets, row_valid, elem_valid, max_length, a, b, out)
                block = out[int(offsets[a]):int(offsets[b])]
                np.exp(block, out=block)
                _SOFTMAX_SCALE(offsets, a, b, out)

    if len(jobs) <= 1:
        for lo, hi in jobs:
            one(lo, hi)
        return
    threads = [threading.Thread(target=one, args=job) for job in jobs[1:]]
    for t in threads:
        t.start()
    one(*jobs[0])
    for t in threads:
        t.join()


def cumsum(values: np.ndarray, offsets: np.ndarray, row_valid: np.ndarray | None,
           elem_valid: np.ndarray | None, exclusive: bool, out: np.ndarray) -> None:
    """Per-row running sum of ``values[N, D]`` into ``out`` (its dtype accumulates)."""
    run(_CUMSUM, out.size, len(offsets) - 1, values, offsets, _mask(row_valid),
        _mask(elem_valid), exclusive, out.dtype.type(0), out)


def gather_ranges(src: np.ndarray, starts: np.ndarray, out_offsets: np.ndarray,
                  out: np.ndarray) -> None:
    """Copy ``src[starts[i]:...]`` (2-D words) to row ``i`` of ``out`` at ``out_offsets``."""
    run(_GATHER_RANGES, out.size, len(starts), src, starts, out_offsets, out)


def ranges_to_indices(starts: np.ndarray, out_offsets: np.ndarray,
                      out: np.ndarray | None = None) -> np.ndarray:
    """List the element ids ``starts[i] + j`` of every range, concatenated (int64).

    ``out`` (``out_offsets[-1]`` long) receives them when given; else it is allocated.
    """
    if out is None:
        out = np.empty(int(out_offsets[-1]), dtype=np.int64)
    run(_RANGES_TO_INDICES, out.size, len(starts), starts, out_offsets, out)
    return out


def repeat_rows(src: np.ndarray, offsets: np.ndarray, base: int, out: np.ndarray) -> None:
    """``out[k - base] = src[r]`` for every position ``k`` of row ``r`` (2-D words)."""
    run(_REPEAT_ROWS, out.size, len(offsets) - 1, src, offsets, base, out)


def unique_rows(values: np.ndarray, offsets: np.ndarray, row_valid: np.ndarray | None,
                elem_valid: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct non-null values of each row of 1-D ``values``: (values, lengths)."""
    num_rows = len(offsets) - 1
    work = int(offsets[-1] - offsets[0])
    buf = np.empty(work, dtype=values.dtype)
    num_valid = np.empty(num_rows, dtype=np.int64)
    num_unique = np.empty(num_rows, dtype=np.int64)
    run(_SORT_ROWS, work, num_rows, values, offsets, _mask(row_valid), _mask(elem_valid), buf,
        num_valid, num_unique)
    out_offsets = np.zeros(num_rows + 1, dtype=np.int64)
    np.cumsum(num_unique, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), dtype=values.dtype)
    run(_WRITE_UNIQUE, work, num_rows, buf, offsets, num_valid, out_offsets, out)
    return out, num_unique


def jagged_dense_jagged_out(x: np.ndarray | None, dense: np.ndarray,
                            dense_row_of: np.ndarray | None, offsets: np.ndarray, op: int,
                            out: np.ndarray) -> None:
    """``out = x op dense`` at each element's padded position (0: add, 1: mul, 2: read).

    ``x`` is None for a read (op 2), which does not look at it.
    """
    target = np.ascontiguousarray(out)  # out itself, unless a caller passes a strided one
    run(_JAGGED_DENSE_JAGGED_OUT, out.size, len(offsets) - 1,
        target if x is None else np.ascontiguousarray(x), np.ascontiguousarray(dense),
        _index(dense_row_of), offsets, op, out.dtype.type(0), target)
    if target is not out:
        out[...] = target


def jagged_dense_dense_out(x: np.ndarray, row_index: np.ndarray | None, offsets: np.ndarray,
                           valid: np.ndarray | None, elem_valid: np.ndarray | None,
                           dense: np.ndarray, out: np.ndarray) -> None:
    """``out[P, L, D] = padded(x) + dense``; null elements count as padding."""
    run(_JAGGED_DENSE_DENSE_OUT, out.size, out.shape[0], x, _index(row_index), offsets,
        _mask(valid), _mask(elem_valid), dense, out)


def jagged_dense_bmm(x: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                     elem_valid: np.ndarray | None, dense: np.ndarray, max_length: int,
                     out: np.ndarray) -> None:
    """Per row ``[L_b, K] @ dense[b] ([K, M])`` into ``out[N, M]`` (zeros)."""
    run(_JAGGED_DENSE_BMM, x.size * max(out.shape[1], 1), len(offsets) - 1, x, offsets,
        _mask(valid), _mask(elem_valid), dense, max_length, out)


def jagged_jagged_bmm(x: np.ndarray, x_offsets: np.ndarray, x_valid: np.ndarray | None,
                      y: np.ndarray, y_offsets: np.ndarray, y_valid: np.ndarray | None,
                      valid: np.ndarray | None, max_length: int, out: np.ndarray) -> None:
    """Per row ``x_b^T @ y_b`` into ``out[B, M, N]`` (zeros), skipping null elements."""
    run(_JAGGED_JAGGED_BMM, x.size * max(y.shape[1], 1), len(x_offsets) - 1, x, x_offsets,
        _mask(x_valid), y, y_offsets, _mask(y_valid), _mask(valid), max_length, out)
