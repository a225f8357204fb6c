"""CPU kernels for sparse tensors: SpMM/SpMV, densify, format conversions, canonical form.

Compressed (CSR/CSC) arrays are passed as they are stored: ``indptr`` (int32 or
int64, may start above zero, so every position is absolute), ``indices`` and
``values`` (the whole buffers). Row *chunks* split the major axis into pieces of
roughly equal numbers of stored entries so that the kernel threads, each taking a run
of chunks (:func:`~._jit.run`), balance skewed rows. Conversions are stable counting
sorts run in parallel over chunks of the entries (each chunk with its own key counts),
line sorts and line expansions.
"""

from __future__ import annotations

import numba
import numpy as np

from ._jit import PARALLEL_THRESHOLD, kernel, parallel_kernel, run

#: Lines up to this long are sorted by rank counting (quadratic, but branch-free).
_SHORT_LINE = 32


def _csr_spmm(indptr, indices, values, dense, bounds, out, lo, hi):  # pragma: no cover
    # out[i, :] = sum_p values[p] * dense[indices[p], :] over row i's entries.
    # Chunk c (in [lo, hi)) owns rows bounds[c]:bounds[c + 1], so no two threads write
    # one row.
    # Unsigned positions spare Numba's negative-index wraparound (about 25% faster);
    # they are used only as indices, never in arithmetic (uint64 + int64 is a float).
    width = out.shape[1]
    for c in range(lo, hi):
        for i in range(bounds[c], bounds[c + 1]):
            for p in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
                col = np.uint64(indices[p])
                v = values[p]
                for j in range(width):
                    out[i, j] += v * dense[col, j]


def _csr_spmv(indptr, indices, values, vec, bounds, out, lo, hi):  # pragma: no cover
    for c in range(lo, hi):
        for i in range(bounds[c], bounds[c + 1]):
            acc = out[i]
            for p in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
                acc += values[p] * vec[np.uint64(indices[p])]
            out[i] = acc


def _dense_csr(dense, indptr, indices, values, out, lo, hi):  # pragma: no cover
    # out[q, :] = dense[q, :] @ csr for q in [lo, hi): each output row q belongs to one
    # thread.
    rows = indptr.shape[0] - 1
    for q in range(lo, hi):
        for i in range(rows):
            d = dense[q, i]
            if d != 0:
                for p in range(indptr[i], indptr[i + 1]):
                    out[q, indices[p]] += d * values[p]


def _compressed_to_dense(indptr, indices, values, out, transposed, lo,
                         hi):  # pragma: no cover
    # CSR fills out[i, indices[p]]; CSC (transposed) fills out[indices[p], i], for the
    # major lines i in [lo, hi). Line i is written by one thread only; repeated entries
    # add up.
    for i in range(lo, hi):
        for p in range(indptr[i], indptr[i + 1]):
            if transposed:
                out[indices[p], i] += values[p]
            else:
                out[i, indices[p]] += values[p]


def _major_sums(indptr, values, out, lo, hi):  # pragma: no cover
    for i in range(lo, hi):
        acc = out[i]
        for p in range(indptr[i], indptr[i + 1]):
            acc += values[p]
        out[i] = acc


_CSR_SPMM = parallel_kernel(_csr_spmm)
_CSR_SPMV = parallel_kernel(_csr_spmv)
_DENSE_CSR = parallel_kernel(_dense_csr)
_COMPRESSED_TO_DENSE = parallel_kernel(_compressed_to_dense)
_MAJOR_SUMS = parallel_kernel(_major_sums)


@kernel
def _csc_spmm(indptr, indices, values, dense, out):  # pragma: no cover
    # out[indices[p], :] += values[p] * dense[j, :] for column j: a scatter, serial.
    width = out.shape[1]
    for col in range(indptr.shape[0] - 1):
        for p in range(indptr[col], indptr[col + 1]):
            row = indices[p]
            v = values[p]
            for j in range(width):
                out[row, j] += v * dense[col, j]


@kernel
def _scatter_add(out, positions, values):  # pragma: no cover
    for p in range(positions.shape[0]):
        out[positions[p]] += values[p]


@kernel
def _counting_sort_pass(keys, perm, size, out):  # pragma: no cover
    # Stable counting sort of perm by keys[perm]: one pass of an LSD radix sort.
    counts = np.zeros(size + 1, dtype=np.int64)
    n = perm.shape[0]
    for i in range(n):
        counts[keys[perm[i]] + 1] += 1
    for s in range(size):
        counts[s + 1] += counts[s]
    for i in range(n):
        q = perm[i]
        k = keys[q]
        out[counts[k]] = q
        counts[k] += 1


# Stable counting sort of the entries by key (like scipy's coo_tocsr), in parallel:
# chunk c of the entries (bounds[c]:bounds[c + 1]) counts its keys into counts[c]
# (_count_keys), the running sum over (key, chunk) turns the counts into each chunk's
# first slot per key (_key_slots), then every chunk scatters its own entries
# (_scatter_by_key). Positions are unsigned: no negative-index wraparound checks.
def _count_keys(keys, bounds, counts, lo, hi):  # pragma: no cover
    for c in range(lo, hi):
        for p in range(bounds[c], bounds[c + 1]):
            counts[c, np.uint64(keys[p])] += 1


@kernel
def _key_slots(counts, out_ptr):  # pragma: no cover
    chunks = counts.shape[0]
    num = counts.shape[1]
    total = 0
    for i in range(num):
        out_ptr[i] = total
        for c in range(chunks):
            t = counts[c, i]
            counts[c, i] = total
            total += t
    out_ptr[num] = total


def _scatter_by_key(keys, minor, values, indptr, bounds, counts, out_minor, out_values, lo,
                    hi):  # pragma: no cover
    # The minor index carried along is minor[p] or, when indptr is not empty (CSR <->
    # CSC), the line of entry p.
    lines = indptr.shape[0] > 0
    base = indptr[0] if lines else 0
    for c in range(lo, hi):
        line = 0
        if lines:
            line = np.searchsorted(indptr, bounds[c] + base, side="right") - 1
        for p in range(bounds[c], bounds[c + 1]):
            k = np.uint64(keys[p])
            q = np.uint64(counts[c, k])
            counts[c, k] += 1
            if lines:
                while indptr[line + 1] - base <= p:
                    line += 1
                out_minor[q] = line
            else:
                out_minor[q] = minor[p]
            out_values[q] = values[p]


def _expand_major(indptr, bounds, out, lo, hi):  # pragma: no cover
    # out[p - indptr[0]] = i for every entry p of major line i (lines in chunks [lo, hi)).
    base = indptr[0]
    for c in range(lo, hi):
        for i in range(bounds[c], bounds[c + 1]):
            v = out.dtype.type(i)
            for p in range(np.uint64(indptr[i] - base), np.uint64(indptr[i + 1] - base)):
                out[p] = v


@kernel
def _sum_line_duplicates(indptr, minor, values, out_ptr, out_minor, out_values):  # pragma: no cover
    # Lines sorted: add up each run of equal minor indices; out_ptr starts at 0.
    q = 0
    base = indptr[0]
    out_ptr[0] = 0
    for i in range(indptr.shape[0] - 1):
        p = indptr[i] - base
        stop = indptr[i + 1] - base
        while p < stop:
            k = minor[p]
            acc = values[p]
            p += 1
            while p < stop and minor[p] == k:
                acc += values[p]
                p += 1
            out_minor[q] = k
            out_values[q] = acc
            q += 1
        out_ptr[i + 1] = q
    return q


def _sort_lines(indptr, minor, values, bounds, lo, hi):  # pragma: no cover
    # Sort every line's minor indices (stably, values alongside). A short line is
    # copied aside and every entry goes straight to its rank (the entries before it
    # that are <=, after it that are <): branch-free counting loops the compiler
    # vectorises, unlike an insertion sort's unpredictable shifts. Long lines are
    # merge-sorted. Chunks of lines [lo, hi) run in parallel.
    for c in range(lo, hi):
        line_minor = np.empty(_SHORT_LINE, dtype=minor.dtype)
        line_values = np.empty(_SHORT_LINE, dtype=values.dtype)
        for i in range(bounds[c], bounds[c + 1]):
            start = indptr[i]
            n = indptr[i + 1] - start
            if n < 2:
                continue
            if n <= _SHORT_LINE:
                ascending = True
                for k in range(1, n):
                    if minor[start + k] < minor[start + k - 1]:
                        ascending = False
                        break
                if ascending:
                    continue
                for k in range(n):
                    line_minor[k] = minor[start + k]
                    line_values[k] = values[start + k]
                for a in range(n):
                    key = line_minor[a]
                    rank = 0
                    for k in range(n):
                        m = line_minor[k]
                        rank += (m < key) | ((m == key) & (k < a))
                    minor[start + rank] = key
                    values[start + rank] = line_values[a]
            else:
                order = np.argsort(minor[start:start + n], kind="mergesort")
                long_minor = minor[start:start + n].copy()
                long_values = values[start:start + n].copy()
                for k in range(n):
                    minor[start + k] = long_minor[order[k]]
                    values[start + k] = long_values[order[k]]


_SORT_LINES = parallel_kernel(_sort_lines)
_COUNT_KEYS = parallel_kernel(_count_keys)
_SCATTER_BY_KEY = parallel_kernel(_scatter_by_key)
_EXPAND_MAJOR = parallel_kernel(_expand_major)


@kernel
def _lex_order2(first, second):  # pragma: no cover
    # (sorted, strictly sorted) of the pairs (first[p], second[p]) in one pass.
    strict = True
    for p in range(1, first.shape[0]):
        if first[p] == first[p - 1]:
            if second[p] < second[p - 1]:
                return False, False
            if second[p] == second[p - 1]:
                strict = False
        elif first[p] < first[p - 1]:
            return False, False
    return True, strict


@kernel
def _lines_strictly_increasing(indptr, indices):  # pragma: no cover
    for i in range(indptr.shape[0] - 1):
        for p in range(indptr[i] + 1, indptr[i + 1]):
            if indices[p] <= indices[p - 1]:
                return False
    return True


def _chunk_bounds(indptr: np.ndarray, work: int) -> np.ndarray:
    """Row boundaries of chunks holding about equal numbers of stored entries."""
    rows = len(indptr) - 1
    if work < (1 << 16) or rows < 2:
        return np.array([0, rows], dtype=np.int64)
    chunks = min(rows, 8 * numba.get_num_threads())
    targets = np.linspace(int(indptr[0]), int(indptr[-1]), chunks + 1)
    bounds = np.searchsorted(indptr, targets, side="left").astype(np.int64)
    bounds[0], bounds[-1] = 0, rows
    return np.maximum.accumulate(bounds)


def csr_spmm(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
             dense: np.ndarray, out: np.ndarray) -> None:
    """``out[rows, k] += csr @ dense[cols, k]`` (out zeroed; all of one dtype)."""
    work = int(indptr[-1] - indptr[0]) * max(out.shape[1], 1) + out.size
    bounds = _chunk_bounds(indptr, work)
    run(_CSR_SPMM, work, len(bounds) - 1, indptr, indices, values, dense, bounds, out)


def csr_spmv(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
             vec: np.ndarray, out: np.ndarray) -> None:
    """``out[rows] += csr @ vec[cols]`` (out zeroed; all of one dtype)."""
    work = int(indptr[-1] - indptr[0]) + out.size
    bounds = _chunk_bounds(indptr, work)
    run(_CSR_SPMV, work, len(bounds) - 1, indptr, indices, values, vec, bounds, out)


def dense_csr(dense: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
              values: np.ndarray, out: np.ndarray) -> None:
    """``out[m, cols] += dense[m, rows] @ csr`` (out zeroed; all of one dtype)."""
    work = dense.shape[0] * (int(indptr[-1] - indptr[0]) + len(indptr))
    run(_DENSE_CSR, work, dense.shape[0], dense, indptr, indices, values, out)


def csc_spmm(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
             dense: np.ndarray, out: np.ndarray) -> None:
    """``out[rows, k] += csc @ dense[cols, k]`` (serial scatter)."""
    _csc_spmm(indptr, indices, values, dense, out)


def compressed_to_dense(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
                        out: np.ndarray, transposed: bool) -> None:
    """Add the stored entries into the zeroed dense ``out`` (CSR, or CSC when transposed)."""
    work = int(indptr[-1] - indptr[0]) + len(indptr)
    run(_COMPRESSED_TO_DENSE, work, len(indptr) - 1, indptr, indices, values, out, transposed)


def major_sums(indptr: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:
    """``out[i] += sum(values[indptr[i]:indptr[i + 1]])`` for every major line ``i``."""
    work = int(indptr[-1] - indptr[0]) + len(indptr)
    run(_MAJOR_SUMS, work, len(indptr) - 1, indptr, values, out)


def scatter_add(out: np.ndarray, positions: np.ndarray, values: np.ndarray) -> None:
    """``out[positions[p]] += values[p]`` (1-D ``out``; repeated positions add up)."""
    _scatter_add(out, positions, values)


def lex_order2(first: np.ndarray, second: np.ndarray) -> tuple[bool, bool]:
    """Whether the pairs ``(first[p], second[p])`` are sorted, and strictly so (one pass)."""
    return _lex_order2(first, second)  # type: ignore[no-any-return]


def lines_strictly_increasing(indptr: np.ndarray, indices: np.ndarray) -> bool:
    """Whether the indices of every line ``indptr[i]:indptr[i + 1]`` strictly increase."""
    return bool(_lines_strictly_increasing(indptr, indices))


def expand_major(indptr: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Write each entry's major index into ``out`` (``repeat(arange(lines), diff(indptr))``)."""
    work = len(out) + len(indptr)
    bounds = _chunk_bounds(indptr, work)
    run(_EXPAND_MAJOR, work, len(bounds) - 1, indptr, bounds, out)
    return out


def _counting_sort_by(keys: np.ndarray, minor: np.ndarray, values: np.ndarray, num_keys: int,
                      indptr: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stable counting sort of ``(minor, values)`` by ``keys``: ``(indptr, minor, values)``.

    With ``indptr`` the minor index of an entry is its line (``minor`` only gives the
    dtype). The input is split into one chunk per thread when it is large enough and
    the per-chunk key counts (``chunks * num_keys``) stay within a few times its size.
    """
    n = len(keys)
    chunks = 1
    if n >= PARALLEL_THRESHOLD:
        chunks = max(1, min(numba.get_num_threads(), n // PARALLEL_THRESHOLD,
                            4 * n // max(num_keys, 1)))
    bounds = np.linspace(0, n, chunks + 1).astype(np.int64)
    counts = np.zeros((chunks, num_keys), dtype=np.int64)
    out_ptr = np.empty(num_keys + 1, dtype=np.int64)
    out_minor = np.empty(n, dtype=minor.dtype)
    out_values = np.empty(n, dtype=values.dtype)
    lines = np.empty(0, dtype=np.int64) if indptr is None else indptr
    run(_COUNT_KEYS, n, chunks, keys, bounds, counts)
    _key_slots(counts, out_ptr)
    run(_SCATTER_BY_KEY, n, chunks, keys, minor, values, lines, bounds, counts, out_minor,
        out_values)
    return out_ptr, out_minor, out_values


def compressed_transpose(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
                         num_minor: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR <-> CSC by counting sort: ``(indptr, indices, values)`` of the other layout.

    Entries of one minor line come out in major order (stable; duplicates kept). The
    new ``indptr`` is int64 and starts at zero; the new indices are int64 when the
    major axis needs it, else the input's index dtype.
    """
    start, stop = int(indptr[0]), int(indptr[-1])
    major = len(indptr) - 1
    idx_dtype = indices.dtype if major <= np.iinfo(indices.dtype).max else np.dtype(np.int64)
    return _counting_sort_by(indices[start:stop], np.empty(0, dtype=idx_dtype),
                             values[start:stop], num_minor, indptr)


def coo_to_compressed(major: np.ndarray, minor: np.ndarray, values: np.ndarray,
                      num_major: int, num_minor: int | None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort coordinate pairs by (major, minor), stably: ``(indptr, minor, values)``.

    With ``num_minor`` (the minor range, small enough to count): an LSD radix sort,
    two parallel stable counting sorts, by minor index and then by major index (the
    second reads the minor indices off the first one's pointers). O(nnz + num_major +
    num_minor) whatever the line lengths. With ``num_minor=None`` (a minor range too
    wide to count): a counting sort by major index, then every line is sorted in
    parallel. ``indptr`` is int64; the minor indices keep their dtype.
    """
    if num_minor is not None:
        by_minor, major_by_minor, values_by_minor = _counting_sort_by(minor, major, values,
                                                                      num_minor)
        return _counting_sort_by(major_by_minor, np.empty(0, dtype=minor.dtype),
                                 values_by_minor, num_major, by_minor)
    out_ptr, out_minor, out_values = _counting_sort_by(major, minor, values, num_major)
    work = len(minor) + num_major
    bounds = _chunk_bounds(out_ptr, work)
    run(_SORT_LINES, work, len(bounds) - 1, out_ptr, out_minor, out_values, bounds)
    return out_ptr, out_minor, out_values


def sum_duplicates(indptr: np.ndarray, minor: np.ndarray,
                   values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Add up repeated indices of sorted lines (bools: logical or): new compact arrays.

    ``indptr`` may start above zero; the result's starts at zero.
    """
    bools = values.dtype.kind == "b"
    vals = values.astype(np.int64) if bools else values
    n = int(indptr[-1] - indptr[0])
    out_ptr = np.empty(len(indptr), dtype=np.int64)
    out_minor = np.empty(n, dtype=minor.dtype)
    out_values = np.empty(n, dtype=vals.dtype)
    start = int(indptr[0])
    q = _sum_line_duplicates(indptr, minor[start:], vals[start:], out_ptr, out_minor, out_values)
    if q < n:
        out_minor, out_values = out_minor[:q].copy(), out_values[:q].copy()
    return out_ptr, out_minor, (out_values != 0 if bools else out_values)


def canonical_lines(indptr: np.ndarray, minor: np.ndarray,
                    values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort every line's indices and add up duplicates: new compact ``(indptr, minor, values)``."""
    start, stop = int(indptr[0]), int(indptr[-1])
    ptr = indptr - start
    minor, values = minor[start:stop].copy(), values[start:stop].copy()
    work = len(minor) + len(ptr)
    bounds = _chunk_bounds(ptr, work)
    run(_SORT_LINES, work, len(bounds) - 1, ptr, minor, values, bounds)
    return sum_duplicates(ptr, minor, values)


def radix_argsort(keys: list[np.ndarray], sizes: list[int]) -> np.ndarray:
    """Stable permutation sorting rows by ``keys[0]``, then ``keys[1]``, ... (LSD radix).

    Each pass is a counting sort over ``sizes[k]`` buckets: O(nnz + size) per key.
    """
    n = len(keys[0]) if keys else 0
    perm = np.arange(n, dtype=np.int64)
    out = np.empty(n, dtype=np.int64)
    for key, size in zip(reversed(keys), reversed(sizes), strict=True):
        _counting_sort_pass(key, perm, size, out)
        perm, out = out, perm
    return perm
