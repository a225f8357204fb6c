"""CPU kernels for sparse tensors: SpMM/SpMV, densify, transpose, radix sort, scatter-add.

Compressed (CSR/CSC) arrays are passed as they are stored: ``indptr`` (int32 or
int64, may start above zero, so every position is absolute), ``indices`` and
``values`` (the whole buffers). Row *chunks* split the major axis into pieces of
roughly equal numbers of stored entries so that ``prange`` over chunks balances
skewed rows.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ._jit import kernel, parallel_kernel, pick


def _csr_spmm(indptr, indices, values, dense, bounds, out):  # pragma: no cover
    # out[i, :] = sum_p values[p] * dense[indices[p], :] over row i's entries.
    # Chunk c owns rows bounds[c]:bounds[c + 1], so no two threads write one row.
    # Unsigned positions spare Numba's negative-index wraparound (about 25% faster);
    # they are used only as indices, never in arithmetic (uint64 + int64 is a float).
    width = out.shape[1]
    for c in prange(bounds.shape[0] - 1):
        for i in range(bounds[c], bounds[c + 1]):
            for p in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
                col = np.uint64(indices[p])
                v = values[p]
                for j in range(width):
                    out[i, j] += v * dense[col, j]


def _csr_spmv(indptr, indices, values, vec, bounds, out):  # pragma: no cover
    for c in prange(bounds.shape[0] - 1):
        for i in range(bounds[c], bounds[c + 1]):
            acc = out[i]
            for p in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
                acc += values[p] * vec[np.uint64(indices[p])]
            out[i] = acc


def _dense_csr(dense, indptr, indices, values, out):  # pragma: no cover
    # out[q, :] = dense[q, :] @ csr: each output row q belongs to one thread.
    rows = indptr.shape[0] - 1
    for q in prange(dense.shape[0]):
        for i in range(rows):
            d = dense[q, i]
            if d != 0:
                for p in range(indptr[i], indptr[i + 1]):
                    out[q, indices[p]] += d * values[p]


def _compressed_to_dense(indptr, indices, values, out, transposed):  # pragma: no cover
    # CSR fills out[i, indices[p]]; CSC (transposed) fills out[indices[p], i].
    # Major line i is written by one thread only; repeated entries add up.
    for i in prange(indptr.shape[0] - 1):
        for p in range(indptr[i], indptr[i + 1]):
            if transposed:
                out[indices[p], i] += values[p]
            else:
                out[i, indices[p]] += values[p]


def _major_sums(indptr, values, out):  # pragma: no cover
    for i in prange(indptr.shape[0] - 1):
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
def _compressed_transpose(indptr, indices, values, out_ptr, out_idx, out_val):  # pragma: no cover
    # Counting sort by minor index (CSR <-> CSC). out_ptr is zeroed, minor + 1 long.
    # Entries of one minor line come out in major order: stable, duplicates kept.
    major = indptr.shape[0] - 1
    minor = out_ptr.shape[0] - 1
    for p in range(indptr[0], indptr[major]):
        out_ptr[indices[p] + 1] += 1
    for m in range(minor):
        out_ptr[m + 1] += out_ptr[m]
    nxt = out_ptr[:minor].copy()
    for i in range(major):
        for p in range(indptr[i], indptr[i + 1]):
            m = indices[p]
            q = nxt[m]
            out_idx[q] = i
            out_val[q] = values[p]
            nxt[m] = q + 1


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


@kernel
def _scatter_by_major(major, minor, values, out_ptr, out_minor, out_values):  # pragma: no cover
    # Counting sort of the entries by major index (stable), like scipy's coo_tocsr.
    # out_ptr is zeroed and num_major + 1 long.
    n = major.shape[0]
    num_major = out_ptr.shape[0] - 1
    one = np.uint64(1)
    for p in range(n):
        out_ptr[np.uint64(major[p]) + one] += 1
    for i in range(num_major):
        out_ptr[i + 1] += out_ptr[i]
    nxt = out_ptr[:num_major].copy()
    for p in range(n):
        i = np.uint64(major[p])
        q = np.uint64(nxt[i])
        out_minor[q] = minor[p]
        out_values[q] = values[p]
        nxt[i] += 1


def _sort_lines(indptr, minor, values, bounds):  # pragma: no cover
    # Sort every line's minor indices (stably, values alongside): insertion sort for
    # short lines, a merge sort for long ones. Chunks of lines run in parallel.
    for c in prange(bounds.shape[0] - 1):
        for i in range(bounds[c], bounds[c + 1]):
            start = indptr[i]
            stop = indptr[i + 1]
            if stop - start <= 32:
                for p in range(start + 1, stop):
                    key = minor[p]
                    val = values[p]
                    q = p - 1
                    while q >= start and minor[q] > key:
                        minor[q + 1] = minor[q]
                        values[q + 1] = values[q]
                        q -= 1
                    minor[q + 1] = key
                    values[q + 1] = val
            else:
                order = np.argsort(minor[start:stop], kind="mergesort")
                line_minor = minor[start:stop].copy()
                line_values = values[start:stop].copy()
                for k in range(stop - start):
                    minor[start + k] = line_minor[order[k]]
                    values[start + k] = line_values[order[k]]


_SORT_LINES = parallel_kernel(_sort_lines)


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
    pick(_CSR_SPMM, work)(indptr, indices, values, dense, bounds, out)


def csr_spmv(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
             vec: np.ndarray, out: np.ndarray) -> None:
    """``out[rows] += csr @ vec[cols]`` (out zeroed; all of one dtype)."""
    work = int(indptr[-1] - indptr[0]) + out.size
    bounds = _chunk_bounds(indptr, work)
    pick(_CSR_SPMV, work)(indptr, indices, values, vec, bounds, out)


def dense_csr(dense: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
              values: np.ndarray, out: np.ndarray) -> None:
    """``out[m, cols] += dense[m, rows] @ csr`` (out zeroed; all of one dtype)."""
    work = dense.shape[0] * (int(indptr[-1] - indptr[0]) + len(indptr))
    pick(_DENSE_CSR, work)(dense, indptr, indices, values, out)


def csc_spmm(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
             dense: np.ndarray, out: np.ndarray) -> None:
    """``out[rows, k] += csc @ dense[cols, k]`` (serial scatter)."""
    _csc_spmm(indptr, indices, values, dense, out)


def compressed_to_dense(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
                        out: np.ndarray, transposed: bool) -> None:
    """Add the stored entries into the zeroed dense ``out`` (CSR, or CSC when transposed)."""
    work = int(indptr[-1] - indptr[0]) + len(indptr)
    pick(_COMPRESSED_TO_DENSE, work)(indptr, indices, values, out, transposed)


def major_sums(indptr: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:
    """``out[i] += sum(values[indptr[i]:indptr[i + 1]])`` for every major line ``i``."""
    work = int(indptr[-1] - indptr[0]) + len(indptr)
    pick(_MAJOR_SUMS, work)(indptr, values, out)


def scatter_add(out: np.ndarray, positions: np.ndarray, values: np.ndarray) -> None:
    """``out[positions[p]] += values[p]`` (1-D ``out``; repeated positions add up)."""
    _scatter_add(out, positions, values)


def compressed_transpose(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
                         num_minor: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR <-> CSC by counting sort: ``(indptr, indices, values)`` of the other layout.

    The new ``indptr`` is int64 and starts at zero; the new indices are int64 when
    the major axis needs it, else the input's index dtype.
    """
    nnz = int(indptr[-1] - indptr[0])
    major = len(indptr) - 1
    idx_dtype = indices.dtype if major <= np.iinfo(indices.dtype).max else np.dtype(np.int64)
    out_ptr = np.zeros(num_minor + 1, dtype=np.int64)
    out_idx = np.empty(nnz, dtype=idx_dtype)
    out_val = np.empty(nnz, dtype=values.dtype)
    _compressed_transpose(indptr, indices, values, out_ptr, out_idx, out_val)
    return out_ptr, out_idx, out_val


def coo_to_compressed(major: np.ndarray, minor: np.ndarray, values: np.ndarray,
                      num_major: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort coordinate pairs by (major, minor), stably: ``(indptr, minor, values)``.

    A counting sort by major index (O(nnz + num_major)), then every line is sorted
    in parallel. ``indptr`` is int64; the minor indices keep their dtype.
    """
    out_ptr = np.zeros(num_major + 1, dtype=np.int64)
    out_minor = np.empty(len(minor), dtype=minor.dtype)
    out_values = np.empty(len(values), dtype=values.dtype)
    _scatter_by_major(major, minor, values, out_ptr, out_minor, out_values)
    work = len(minor) + num_major
    pick(_SORT_LINES, work)(out_ptr, out_minor, out_values, _chunk_bounds(out_ptr, work))
    return out_ptr, out_minor, out_values


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
