"""CUDA launchers of the sparse-tensor kernels (``sparse.cu``).

Each launcher takes the array module ``xp``, then the parameters and the results of its
CPU twin in :mod:`arrow_sparse.kernels.cpu.sparse`: the same arrays, dtypes and order
of entries. Arrays are device arrays (CuPy), or numpy arrays when the emulator stands
in for the GPU in tests. ``indptr``, ``indices`` and positions of an integer type
other than int32/int64 are widened to int64; values and dense operands are converted
to the dtype of ``out``; a non-contiguous ``out`` is updated through a contiguous copy,
and an 8- or 16-bit integer ``out`` of an atomic kernel through an int32/uint32 one
(integer sums wrap like Numba's either way).

How the CPU's parallel counting sorts are done on the GPU:

* ``coo_to_compressed``, ``compressed_transpose``: a histogram of the major keys
  (``count_keys``, atomicAdd), an exclusive scan of it (``cumsum``) for ``indptr``, and
  a *stable* order of the entries from the array module's stable argsort (a CUB radix
  sort on CuPy) instead of an atomic scatter, whose order would not be stable. COO sorts
  once by the raveled ``(major, minor)`` key when its range fits in int64, else by minor
  and then by major; the transpose sorts by minor index and finds each entry's new minor
  index (its old line) by a binary search of ``indptr`` (``expand_major``).
* ``canonical_lines``: the same two-key stable sort by (line, index), then
  ``sum_duplicates``: run heads flagged by a kernel, compacted by :func:`flatnonzero`
  (their number read back, their positions scattered to their ranks), one thread per
  run summing it left to right.
* ``radix_argsort``: one stable argsort of the raveled keys (or one per key, LSD, when
  the ranges' product exceeds int64).
* ``dense_csr`` and ``csc_spmm``, ordered scatters on the CPU, run as ``csr_spmm`` on the
  other layout (one stable transpose), so each output element is summed by one lane in
  the CPU's order.

Exactness: every integer result, every order, and the float results of ``csr_spmm``,
``dense_csr``, ``csc_spmm`` and ``sum_duplicates`` / ``canonical_lines`` are the CPU's
bits. ``csr_spmv`` and ``major_sums`` add 32 lane partials per line with atomics, and
``compressed_to_dense`` / ``scatter_add`` add repeated coordinates with atomics: float
sums within re-association of the CPU's.

Synchronisations (reads of device data): ``lex_order2`` and
``lines_strictly_increasing`` read their answer; ``compressed_transpose`` (and through
it ``dense_csr`` and ``csc_spmm``), ``sum_duplicates`` and ``canonical_lines`` read
``indptr[0]`` and ``indptr[-1]``, and the last two the number of distinct entries; the
others read nothing. Every read is one transfer through
:func:`arrow_sparse.kernels.cuda.fetch`, which raises the device checks recorded so far
before the value is used (naming the launcher). The kernels re-check the indices,
positions and entry ranges they rely on into the device error word
(:func:`arrow_sparse.kernels.cuda.check_errors`).

:data:`DEVICE_ONLY` launchers have no CPU twin: ``check_index_range``, the check of
coordinates against their dimension that the sparse constructors run on device inputs
(on the host they check with numpy), and ``flatnonzero``, the positions of the nonzero
elements of a device array (the host uses ``numpy.flatnonzero``).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

from ...errors import ArrowSparseValueError
from . import error_buffer, fetch
from ._launch import (
    CTYPE_TO_DTYPE,
    DTYPE_TO_CTYPE,
    INDEX_CTYPES,
    SLOT_CTYPES,
    VALUE_CTYPES,
    WARP,
    as_index,
    back,
    check_shape,
    ctype,
    into,
    launch,
    name_expression,
    name_expressions,
)

__all__ = ["canonical_lines", "compressed_to_dense", "compressed_transpose",
           "coo_to_compressed", "csc_spmm", "csr_spmm", "csr_spmv", "dense_csr",
           "expand_major", "lex_order2", "lines_strictly_increasing", "major_sums",
           "radix_argsort", "scatter_add", "sum_duplicates"]

#: Device-only launchers (no CPU twin), see the module docstring.
DEVICE_ONLY = ("check_index_range", "flatnonzero")

_O = INDEX_CTYPES
#: Output types of major_sums: numpy's sum dtypes.
_SUMS = ("long long", "unsigned long long", "float", "double")
_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
_INT64_MAX = int(np.iinfo(np.int64).max)

NAME_EXPRESSIONS: list[str] = [
    *name_expressions("count_keys", _O),
    *name_expressions("expand_major", _O, _O),
    *name_expressions("line_run_heads", _O, _O),
    *name_expressions("sum_runs", _O, VALUE_CTYPES),
    *name_expressions("lex_order2", _O),
    *name_expressions("lines_strictly_increasing", _O, _O),
    *name_expressions("csr_spmm", VALUE_CTYPES, _O, _O),
    *(name_expression("csr_spmv", t, SLOT_CTYPES[t], o, i) for t in VALUE_CTYPES for o in _O
      for i in _O),
    *name_expressions("major_sums", _SUMS, _O),
    *(name_expression("compressed_to_dense", t, SLOT_CTYPES[t], o, i) for t in VALUE_CTYPES
      for o in _O for i in _O),
    *(name_expression("scatter_add", t, SLOT_CTYPES[t], p) for t in VALUE_CTYPES for p in _O),
    *name_expressions("check_index_range", _O),
]

_I32 = np.int32
_I64 = np.int64


# ------------------------------------------------------------------------ helpers
def _c(x: Any) -> str:
    return DTYPE_TO_CTYPE[np.dtype(x.dtype)]


def _range(xp: ModuleType, func: str, indptr: Any) -> tuple[int, int]:
    """``(indptr[0], indptr[-1])`` in one read (a synchronisation on the device)."""
    first, last = fetch(xp, func, indptr[0], indptr[-1])
    return first, last


def flatnonzero(xp: ModuleType, func: str, mask: Any) -> Any:
    """Positions (int64) of the nonzero elements of a 1-D array, numpy or CuPy.

    Their number is read back with :func:`~arrow_sparse.kernels.cuda.fetch` (on the
    device one synchronisation, raising the device checks at once, naming ``func``),
    then every nonzero element's position is scattered to its rank (the others to a
    spare slot).
    """
    n = mask.shape[0]
    rank = xp.cumsum(mask != 0, dtype=np.int64)
    count = fetch(xp, func, rank[-1] if n else 0)[0]
    out = xp.empty(count + 1, dtype=np.int64)
    out[xp.where(mask != 0, rank - 1, count)] = xp.arange(n, dtype=np.int64)
    return out[:count]


def _slot(xp: ModuleType, out: Any, slot: str) -> Any:
    """:func:`into` of ``out`` in C type ``slot`` (written back by :func:`back`: integers wrap)."""
    return into(xp, out, CTYPE_TO_DTYPE[slot])


def _counts_to_indptr(xp: ModuleType, keys: Any, num_keys: int) -> Any:
    """int64 ``indptr`` of the entries counted by key: histogram, then exclusive scan."""
    counts = xp.zeros(num_keys + 1, dtype=np.int64)
    n = keys.shape[0]
    if n > 0:
        keys = as_index(xp, keys)
        launch("sparse", name_expression("count_keys", _c(keys)), n,
               (keys, _I64(n), _I64(num_keys), counts[1:], error_buffer()))
    return xp.cumsum(counts)


def _lex_argsort(xp: ModuleType, keys: list[Any], sizes: list[int] | None) -> Any:
    """Stable int64 permutation sorting by ``keys[0]``, then ``keys[1]``, ...

    One stable argsort (a radix sort on CuPy) of the raveled key when ``sizes`` (the
    keys' ranges) are known and their product fits in int64, else one per key (LSD).
    """
    if sizes is not None and math.prod(sizes) <= _INT64_MAX:
        flat = keys[0].astype(np.int64)
        for key, size in zip(keys[1:], sizes[1:], strict=True):
            flat = flat * size + key.astype(np.int64, copy=False)
        return xp.argsort(flat, kind="stable").astype(np.int64, copy=False)
    perm = xp.argsort(keys[-1], kind="stable")
    for key in reversed(keys[:-1]):
        perm = perm[xp.argsort(key[perm], kind="stable")]
    return perm.astype(np.int64, copy=False)


def _expand(xp: ModuleType, indptr: Any, perm: Any, out: Any) -> None:
    """``expand_major`` of the entries ``perm`` (None: all, in order) into int32/int64 ``out``."""
    rows, n = indptr.shape[0] - 1, out.shape[0]
    if rows <= 0 or n == 0:
        return
    perm, identity = (xp.empty(0, dtype=np.int64), _I32(1)) if perm is None else (perm, _I32(0))
    launch("sparse", name_expression("expand_major", _c(indptr), _c(out)), n,
           (indptr, _I64(rows), perm, identity, _I64(n), out))


def _transpose(func: str, xp: ModuleType, indptr: Any, indices: Any, values: Any, num_minor: int,
               line_dtype: Any) -> tuple[Any, Any, Any]:
    """Convert contiguous int32/int64 ``indptr`` and ``indices`` to the other layout."""
    start, stop = _range(xp, func, indptr)
    keys = indices[start:stop]
    ptr = _counts_to_indptr(xp, keys, num_minor)
    order = xp.argsort(keys, kind="stable").astype(np.int64, copy=False)
    work = np.dtype(line_dtype) if np.dtype(line_dtype) in _INDEX_DTYPES else np.dtype(np.int64)
    lines = xp.empty(stop - start, dtype=work)
    _expand(xp, indptr, order, lines)
    return ptr, lines.astype(line_dtype, copy=False), values[start:stop][order]


def _spmm(indptr: Any, indices: Any, values: Any, dense: Any, out: Any, skip_zero: bool
          ) -> None:
    """Launch ``csr_spmm`` on contiguous arrays: ``out[rows, k] += csr @ dense[:, k]``."""
    rows, width = out.shape
    if rows == 0 or width == 0:
        return
    lanes = min(WARP, 1 << (width - 1).bit_length())
    groups = rows * -(-width // lanes)
    name = name_expression("csr_spmm", _c(out), _c(indptr), _c(indices))
    launch("sparse", name, groups * lanes,
           (indptr, indices, values, _I64(min(indices.shape[0], values.shape[0])), dense,
            _I64(dense.shape[0]), _I64(width), _I64(rows), _I32(lanes), _I32(skip_zero), out,
            error_buffer()))


def _sum_duplicates(xp: ModuleType, ptr: Any, minor: Any, values: Any) -> tuple[Any, Any, Any]:
    """``sum_duplicates`` of lines sorted by index, ``ptr`` starting at 0, arrays compact."""
    func = "sum_duplicates"
    bools = values.dtype.kind == "b"
    vals = xp.ascontiguousarray(values, dtype=np.int64 if bools else values.dtype)
    minor = xp.ascontiguousarray(minor)
    m = ctype(func, minor.dtype, _O)
    n = minor.shape[0]
    if n == 0:
        return (xp.zeros(ptr.shape[0], dtype=np.int64), minor[:0].copy(),
                xp.empty(0, dtype=values.dtype))
    head = xp.empty(n, dtype=np.uint8)
    launch("sparse", name_expression("line_run_heads", _c(ptr), m), n,
           (ptr, _I64(ptr.shape[0] - 1), minor, _I64(n), head))
    starts = flatnonzero(xp, func, head)  # reads the number of runs
    runs = starts.shape[0]
    out_minor = xp.empty(runs, dtype=minor.dtype)
    out_values = xp.empty(runs, dtype=vals.dtype)
    launch("sparse", name_expression("sum_runs", m, ctype(func, vals.dtype)), runs,
           (starts, _I64(runs), _I64(n), minor, vals, out_minor, out_values))
    out_ptr = xp.searchsorted(starts, ptr, side="left").astype(np.int64, copy=False)
    return out_ptr, out_minor, (out_values != 0 if bools else out_values)


# ------------------------------------------------------------------------ products
def csr_spmm(xp: ModuleType, indptr: Any, indices: Any, values: Any, dense: Any, out: Any) -> None:
    """``out[rows, k] += csr @ dense[cols, k]`` (see the CPU kernel)."""
    func = "csr_spmm"
    ctype(func, out.dtype)
    rows = indptr.shape[0] - 1
    check_shape(func, "out", out.shape, (max(rows, 0), dense.shape[1]))
    if rows <= 0 or out.size == 0:
        return
    target = into(xp, out)
    _spmm(as_index(xp, indptr), as_index(xp, indices),
          xp.ascontiguousarray(values, dtype=out.dtype),
          xp.ascontiguousarray(dense, dtype=out.dtype), target, False)
    back(out, target)


def csr_spmv(xp: ModuleType, indptr: Any, indices: Any, values: Any, vec: Any, out: Any) -> None:
    """``out[rows] += csr @ vec[cols]`` (see the CPU kernel)."""
    func = "csr_spmv"
    t = ctype(func, out.dtype)
    rows = indptr.shape[0] - 1
    check_shape(func, "out", out.shape, (max(rows, 0),))
    if rows <= 0:
        return
    ptr, idx = as_index(xp, indptr), as_index(xp, indices)
    vals = xp.ascontiguousarray(values, dtype=out.dtype)
    target = _slot(xp, out, SLOT_CTYPES[t])
    launch("sparse", name_expression(func, t, SLOT_CTYPES[t], _c(ptr), _c(idx)), rows,
           (ptr, idx, vals, _I64(min(idx.shape[0], vals.shape[0])),
            xp.ascontiguousarray(vec, dtype=out.dtype), _I64(vec.shape[0]), _I64(rows),
            target, error_buffer()), lanes=WARP)
    back(out, target)


def dense_csr(xp: ModuleType, dense: Any, indptr: Any, indices: Any, values: Any, out: Any) -> None:
    """``out[m, cols] += dense[m, rows] @ csr`` (see the CPU kernel).

    Runs as ``csr_spmm`` of the transposed layout with the transposed dense operand;
    reads ``indptr[0]`` and ``indptr[-1]`` (one synchronisation).
    """
    func = "dense_csr"
    ctype(func, out.dtype)
    rows = indptr.shape[0] - 1
    check_shape(func, "dense", dense.shape, (out.shape[0], max(rows, 0)))
    if rows <= 0 or out.size == 0:
        return
    ptr, idx = as_index(xp, indptr), as_index(xp, indices)
    tptr, tlines, tvals = _transpose(func, xp, ptr, idx, xp.asarray(values, dtype=out.dtype),
                                     out.shape[1], np.int64)
    result = xp.ascontiguousarray(out.T)
    _spmm(tptr, tlines, xp.ascontiguousarray(tvals),
          xp.ascontiguousarray(dense.T, dtype=out.dtype), result, True)
    out[...] = result.T


def csc_spmm(xp: ModuleType, indptr: Any, indices: Any, values: Any, dense: Any, out: Any) -> None:
    """``out[rows, k] += csc @ dense[cols, k]`` (see the CPU kernel).

    Runs as ``csr_spmm`` of the transposed (CSR) layout; reads ``indptr[0]`` and
    ``indptr[-1]`` (one synchronisation).
    """
    func = "csc_spmm"
    ctype(func, out.dtype)
    cols = indptr.shape[0] - 1
    check_shape(func, "dense", dense.shape, (max(cols, 0), out.shape[1]))
    if cols <= 0 or out.size == 0:
        return
    ptr, idx = as_index(xp, indptr), as_index(xp, indices)
    rptr, rcols, rvals = _transpose(func, xp, ptr, idx, xp.asarray(values, dtype=out.dtype),
                                    out.shape[0], np.int64)
    target = into(xp, out)
    _spmm(rptr, rcols, xp.ascontiguousarray(rvals),
          xp.ascontiguousarray(dense, dtype=out.dtype), target, False)
    back(out, target)


# ------------------------------------------------------------------ sums, scatters
def compressed_to_dense(xp: ModuleType, indptr: Any, indices: Any, values: Any, out: Any,
                        transposed: bool) -> None:
    """Add the stored entries into the dense ``out`` (CSR, or CSC when transposed)."""
    func = "compressed_to_dense"
    t = ctype(func, out.dtype)
    rows = indptr.shape[0] - 1
    if rows != (out.shape[1] if transposed else out.shape[0]):
        msg = (f"{func}: out has shape {tuple(out.shape)} but indptr has {max(rows, 0)} "
               f"{'columns' if transposed else 'rows'}")
        raise ArrowSparseValueError(msg)
    if rows <= 0 or out.size == 0 or indices.shape[0] == 0:
        return
    ptr, idx = as_index(xp, indptr), as_index(xp, indices)
    vals = xp.ascontiguousarray(values, dtype=out.dtype)
    target = _slot(xp, out, SLOT_CTYPES[t])
    num_entries = min(idx.shape[0], vals.shape[0])
    launch("sparse", name_expression(func, t, SLOT_CTYPES[t], _c(ptr), _c(idx)), num_entries,
           (ptr, _I64(rows), idx, vals, _I64(num_entries), _I32(bool(transposed)),
            _I64(out.shape[0]), _I64(out.shape[1]), target, error_buffer()))
    back(out, target)


def major_sums(xp: ModuleType, indptr: Any, values: Any, out: Any) -> None:
    """``out[i] += sum(values[indptr[i]:indptr[i + 1]])`` for every major line ``i``."""
    func = "major_sums"
    t = ctype(func, out.dtype, _SUMS)
    rows = indptr.shape[0] - 1
    check_shape(func, "out", out.shape, (max(rows, 0),))
    if rows <= 0:
        return
    ptr = as_index(xp, indptr)
    vals = xp.ascontiguousarray(values, dtype=out.dtype)
    target = _slot(xp, out, t)
    launch("sparse", name_expression(func, t, _c(ptr)), rows,
           (ptr, vals, _I64(vals.shape[0]), _I64(rows), target, error_buffer()), lanes=WARP)
    back(out, target)


def scatter_add(xp: ModuleType, out: Any, positions: Any, values: Any) -> None:
    """``out[positions[p]] += values[p]`` (1-D ``out``; repeated positions add up)."""
    func = "scatter_add"
    t = ctype(func, out.dtype)
    check_shape(func, "values", values.shape, positions.shape)
    n = positions.shape[0]
    if n == 0:
        return
    pos = as_index(xp, positions)
    target = _slot(xp, out, SLOT_CTYPES[t])
    launch("sparse", name_expression(func, t, SLOT_CTYPES[t], _c(pos)), n,
           (target, _I64(out.shape[0]), pos, xp.ascontiguousarray(values, dtype=out.dtype),
            _I64(n), error_buffer()))
    back(out, target)


# ------------------------------------------------------------------------- checks
def lex_order2(xp: ModuleType, first: Any, second: Any) -> tuple[bool, bool]:
    """Whether the pairs ``(first[p], second[p])`` are sorted, and strictly so.

    Reads two flags back from the device (one synchronisation).
    """
    func = "lex_order2"
    check_shape(func, "second", second.shape, first.shape)
    n = first.shape[0]
    if n < 2:
        return True, True
    a, b = as_index(xp, first), as_index(xp, second)
    if a.dtype != b.dtype:
        a, b = a.astype(np.int64), b.astype(np.int64)
    flags = xp.zeros(2, dtype=np.uint32)
    launch("sparse", name_expression(func, _c(a)), n - 1, (a, b, _I64(n), flags))
    unsorted, repeated = (bool(f) for f in fetch(xp, func, flags[0], flags[1]))
    return not unsorted, not (unsorted or repeated)


def lines_strictly_increasing(xp: ModuleType, indptr: Any, indices: Any) -> bool:
    """Whether the indices of every line ``indptr[i]:indptr[i + 1]`` strictly increase.

    Reads one flag back from the device (one synchronisation).
    """
    func = "lines_strictly_increasing"
    rows = indptr.shape[0] - 1
    if rows <= 0:
        return True
    ptr, idx = as_index(xp, indptr), as_index(xp, indices)
    flag = xp.zeros(1, dtype=np.uint32)
    launch("sparse", name_expression(func, _c(ptr), _c(idx)), max(idx.shape[0], 1),
           (ptr, _I64(rows), idx, _I64(idx.shape[0]), flag, error_buffer()))
    return not fetch(xp, func, flag[0])[0]


# -------------------------------------------------------------------- conversions
def expand_major(xp: ModuleType, indptr: Any, out: Any) -> Any:
    """Write each entry's major index into ``out`` (``repeat(arange(lines), diff(indptr))``)."""
    target = into(xp, out, out.dtype if out.dtype in _INDEX_DTYPES else np.int64)
    _expand(xp, as_index(xp, indptr), None, target)
    back(out, target)
    return out


def compressed_transpose(xp: ModuleType, indptr: Any, indices: Any, values: Any, num_minor: int
                         ) -> tuple[Any, Any, Any]:
    """CSR <-> CSC: ``(indptr, indices, values)`` of the other layout (see the CPU kernel).

    Reads ``indptr[0]`` and ``indptr[-1]`` (one synchronisation: the output size).
    """
    func = "compressed_transpose"
    major = indptr.shape[0] - 1
    idx_dtype = indices.dtype if major <= np.iinfo(indices.dtype).max else np.dtype(np.int64)
    return _transpose(func, xp, as_index(xp, indptr), as_index(xp, indices), values,
                      int(num_minor), idx_dtype)


def coo_to_compressed(xp: ModuleType, major: Any, minor: Any, values: Any, num_major: int,
                      num_minor: int | None) -> tuple[Any, Any, Any]:
    """Sort coordinate pairs by (major, minor), stably: ``(indptr, minor, values)``.

    ``num_minor`` (None: unknown) only decides whether one radix sort of the raveled
    key suffices; the result is the CPU's either way. No synchronisation.
    """
    func = "coo_to_compressed"
    check_shape(func, "minor", minor.shape, major.shape)
    ptr = _counts_to_indptr(xp, major, int(num_major))
    sizes = None if num_minor is None else [int(num_major), int(num_minor)]
    order = _lex_argsort(xp, [major, minor], sizes)
    return ptr, minor[order], values[order]


def sum_duplicates(xp: ModuleType, indptr: Any, minor: Any, values: Any) -> tuple[Any, Any, Any]:
    """Add up repeated indices of sorted lines (bools: logical or): new compact arrays.

    Reads ``indptr[0]``, ``indptr[-1]`` and the number of distinct entries (two
    synchronisations).
    """
    func = "sum_duplicates"
    start, stop = _range(xp, func, indptr)
    ptr = as_index(xp, indptr)
    return _sum_duplicates(xp, ptr - ptr.dtype.type(start), minor[start:stop],
                           values[start:stop])


def canonical_lines(xp: ModuleType, indptr: Any, minor: Any, values: Any) -> tuple[Any, Any, Any]:
    """Sort every line's indices and add up duplicates: new compact ``(indptr, minor, values)``.

    Reads ``indptr[0]``, ``indptr[-1]`` and the number of distinct entries (two
    synchronisations).
    """
    func = "canonical_lines"
    start, stop = _range(xp, func, indptr)
    ptr = as_index(xp, indptr)
    ptr = ptr - ptr.dtype.type(start)
    lines = xp.empty(stop - start, dtype=np.int64)
    _expand(xp, ptr, None, lines)
    idx = minor[start:stop]
    order = _lex_argsort(xp, [lines, idx], None)
    return _sum_duplicates(xp, ptr, idx[order], values[start:stop][order])


def radix_argsort(xp: ModuleType, keys: list[Any], sizes: list[int]) -> Any:
    """Stable permutation sorting rows by ``keys[0]``, then ``keys[1]``, ... (int64).

    One stable argsort (CuPy: a CUB radix sort) of the raveled key; one per key when
    the product of ``sizes`` exceeds int64. No synchronisation.
    """
    if not keys:
        return xp.arange(0, dtype=np.int64)
    return _lex_argsort(xp, list(keys), [int(s) for s in sizes])


# ------------------------------------------------------------------ device input checks
def check_index_range(xp: ModuleType, indices: Any, bound: int, window: Any = None) -> None:
    """Record the first index outside ``[0, bound)`` in the error word (no CPU twin).

    ``window``: None to check every index, else a 2-element int64 device array
    ``[lo, hi]``: only positions ``lo <= p < hi`` are checked (the entries a pointer
    array addresses, read on the device). Positions are absolute. No synchronisation.
    """
    func = "check_index_range"
    n = indices.shape[0]
    if n == 0:
        return
    idx = as_index(xp, indices)
    whole = window is None
    rng = xp.zeros(2, dtype=np.int64) if whole else xp.ascontiguousarray(window, dtype=np.int64)
    launch("sparse", name_expression(func, _c(idx)), n,
           (rng, _I32(whole), idx, _I64(n), _I64(bound), error_buffer()))
