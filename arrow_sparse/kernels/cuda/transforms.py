"""CUDA launchers of the feature-transform kernels (``transforms.cu``).

Each launcher takes the array module ``xp``, then the parameters and the results of its
CPU twin in :mod:`arrow_sparse.kernels.cpu.transforms` (which re-exports the padding
and block-bucketizing kernels of ``padding.py`` and ``keyed.py``): it picks the template
instantiation from the dtypes, sizes the grid and packs the arguments with explicit C
types. Arrays are device arrays (CuPy), or numpy arrays when the emulator stands in for
the GPU in tests. Hashes, buckets, counts, ids, tables and positions are bit-identical
to the CPU's; the unordered outputs of ``count_ints`` and ``count_strings`` hold the
same (value, count) pairs in another order (sorted by value, and in table order).
:data:`DEVICE_ONLY` launchers have no CPU twin (``check_null_rows``, for
``KeyedJagged`` on the device).

Work and synchronisations (a read of a data-dependent size on the host):

* ``hash_ints``, ``hash_strings``, ``bucketize``, ``lookup_ints``, ``lookup_strings``,
  ``pad_or_truncate``, ``kept_lengths``, ``build_string_table``: one to three launches,
  no synchronisation. ``hash_strings`` derives XXH3's long-input secret from the seed on
  the device; the bucket is ``h % num_buckets`` by the CPU's libdivide constants.
* ``order_by_count``: a stable argsort of the negated counts (CuPy's is Thrust's).
* ``compact``: per-row kept counts, their cumsum (with element validity also the cumsum
  of the mask, which ranks the kept elements of a row), one scatter; one
  synchronisation (the number of kept elements).
* ``count_ints``: ``compact``, then ``unique`` of the kept values (a sort and a cut
  into runs); two synchronisations (kept and distinct values), each followed by a
  check of the error word (free after a synchronisation). The CPU counts in a hash
  table first; a sort is what CuPy offers without another kernel, at O(n log n)
  comparisons or a few radix passes.
* ``count_strings``: ``compact``, then hashes, a table of the distinct strings (a power
  of two >= 2n slots of 8 bytes, ordered insertion by atomicCAS, see ``transforms.cu``),
  a counting pass and the occupied slots; two synchronisations, each followed by a
  check of the error word.
* ``build_int_table``: the same table kernels as the CPU's layout; one synchronisation
  (the id of INT64_MIN is returned as an int, like the CPU's).
* ``block_bucketize``: one thread per row (as FBGEMM's kernel) counts, a cumsum, one
  thread per row scatters; one synchronisation (``offsets[-1]``, the output size).

The kernels re-check the offsets, tables and positions they rely on into the device
error word; the caller raises it with :func:`arrow_sparse.kernels.cuda.check_errors`.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from ...errors import ArrowSparseValueError
from ..xxh3 import divider, int_bitflip
from . import check_errors, error_buffer, fetch
from ._launch import (
    DTYPE_TO_CTYPE,
    INDEX_CTYPES,
    VALUE_CTYPES,
    WARP,
    as_mask,
    back,
    check_shape,
    ctype,
    into,
    launch,
    name_expression,
    name_expressions,
)

__all__ = ["block_bucketize", "bucketize", "build_int_table", "build_string_table", "compact",
           "count_ints", "count_strings", "hash_ints", "hash_strings", "kept_lengths",
           "lookup_ints", "lookup_strings", "order_by_count", "pad_or_truncate"]

_INTS = tuple(DTYPE_TO_CTYPE[np.dtype(t)] for t in (np.int8, np.int16, np.int32, np.int64,
                                                    np.uint8, np.uint16, np.uint32, np.uint64))
#: Unsigned C type of each item size: kernels that only move elements move their bits.
_BITS = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}
_UNSIGNED = tuple(_BITS.values())
_WEIGHT_BITS = ("unsigned int", "unsigned long long")

NAME_EXPRESSIONS: list[str] = [
    *name_expressions("hash_ints", _INTS),
    *name_expressions("hash_strings", INDEX_CTYPES),
    *name_expressions("bucketize", VALUE_CTYPES),
    *name_expressions("kept_lengths", INDEX_CTYPES),
    *name_expressions("kept_positions", INDEX_CTYPES),
    *name_expressions("pad_or_truncate", _UNSIGNED, INDEX_CTYPES),
    "int_table_insert",
    "int_table_fill",
    *name_expressions("lookup_ints", _INTS),
    *name_expressions("string_hashes", INDEX_CTYPES),
    *name_expressions("string_set_insert", INDEX_CTYPES),
    *name_expressions("string_set_count", INDEX_CTYPES),
    "string_table_insert",
    *name_expressions("string_table_fill", INDEX_CTYPES),
    *name_expressions("lookup_strings", INDEX_CTYPES, INDEX_CTYPES),
    *name_expressions("bucket_counts", _UNSIGNED),
    *name_expressions("bucket_scatter", _UNSIGNED, _WEIGHT_BITS),
    *name_expressions("check_null_rows", INDEX_CTYPES),
]

#: Device-only launchers with no CPU twin: KeyedJagged's check of its null rows, which
#: the host does with numpy.
DEVICE_ONLY = ("check_null_rows",)

_I32 = np.int32
_I64 = np.int64
_U64 = np.uint64
#: A free slot of a table being built (above every item index).
_FREE_SLOT = np.uint64(2**64 - 1)


def _offsets_type(func: str, offsets: Any) -> str:
    return ctype(func, offsets.dtype, INDEX_CTYPES)


def _bits(func: str, dtype: Any) -> np.dtype:
    """Return the unsigned dtype of ``dtype``'s item size (moved elements are moved as bits)."""
    dtype = np.dtype(dtype)
    if dtype.itemsize not in _BITS or dtype.kind not in "biufmM":
        msg = f"{func}: no cuda kernel for {dtype}"
        raise NotImplementedError(msg)
    return np.dtype(f"u{dtype.itemsize}")


def _mask(xp: ModuleType, valid: Any) -> Any:
    """Return a validity argument as bytes (an empty array for None: all valid).

    No flag: the kernels take the mask's length, which must cover what they read.
    """
    return as_mask(xp, valid)[0]


def _need(func: str, arg: str, x: Any, size: int) -> None:
    """Check that ``x`` covers ``size`` elements (the kernel reads or writes that many)."""
    if x is not None and x.shape[0] < size:
        msg = f"{func}: {arg} has {x.shape[0]} elements, fewer than the {size} it must cover"
        raise ArrowSparseValueError(msg)


def _as(x: Any, dtype: Any) -> Any:
    """``x`` in ``dtype``: itself when it has it (no launch), else a converted copy."""
    return x if x.dtype == dtype else x.astype(dtype)


def _capacity(num: int) -> int:
    """Slots of a table for ``num`` items: the CPU tables' power of two >= 2 num, >= 16."""
    cap = 16
    while cap < 2 * num:
        cap *= 2
    return cap


# -------------------------------------------------------------------------- hashing
def hash_ints(xp: ModuleType, values: Any, start: int, stop: int, seed: int, num_buckets: int,
              out: Any) -> None:
    """``out[k] = XXH3_64(le_bytes(int64(values[k])), seed) % num_buckets`` for k in range."""
    func = "hash_ints"
    name = name_expression(func, ctype(func, values.dtype, _INTS))
    _need(func, "values", values, stop)
    _need(func, "out", out, stop)
    if stop <= start:
        return
    view = out[start:stop]
    target = into(xp, view, np.int64, copy=False)
    n, magic, shift, mode = divider(num_buckets)
    launch("transforms", name, stop - start,
           (xp.ascontiguousarray(values[start:stop]), _I64(stop - start), int_bitflip(seed),
            n, magic, _I32(shift), _I32(mode), target))
    back(view, target)


def hash_strings(xp: ModuleType, str_offsets: Any, data: Any, start: int, stop: int, seed: int,
                 num_buckets: int, out: Any) -> None:
    """``out[k] = XXH3_64(bytes of string k, seed) % num_buckets`` for k in range."""
    func = "hash_strings"
    name = name_expression(func, _offsets_type(func, str_offsets))
    _need(func, "str_offsets", str_offsets, stop + 1)
    _need(func, "out", out, stop)
    if stop <= start:
        return
    target = into(xp, out, np.int64)
    n, magic, shift, mode = divider(num_buckets)
    launch("transforms", name, stop - start,
           (xp.ascontiguousarray(str_offsets), xp.ascontiguousarray(data), _I64(data.shape[0]),
            _I64(start), _I64(stop), _U64(seed), n, magic, _I32(shift), _I32(mode), target,
            error_buffer()))
    back(out, target)


def bucketize(xp: ModuleType, values: Any, start: int, stop: int, boundaries: Any, right: bool,
              out: Any) -> None:
    """Bucket index of each value: boundaries at or below it (below it with ``right``)."""
    func = "bucketize"
    common = np.result_type(values.dtype, boundaries.dtype)
    name = name_expression(func, ctype(func, common))
    _need(func, "values", values, stop)
    _need(func, "out", out, stop)
    count, nb = max(stop - start, 0), boundaries.shape[0]
    if count == 0 and nb == 0:
        return
    view = out[start:start + count]
    target = into(xp, view, np.int64, copy=False)
    launch("transforms", name, max(count, nb),
           (xp.ascontiguousarray(values[start:stop], dtype=common), _I64(count),
            xp.ascontiguousarray(boundaries, dtype=common), _I64(nb), _I32(bool(right)), target,
            error_buffer()))
    back(view, target)


# ------------------------------------------------------------------------ compaction
def kept_lengths(xp: ModuleType, offsets: Any, row_valid: Any, valid: Any) -> Any:
    """Per row, the elements a compaction keeps (0 for a null row)."""
    func = "kept_lengths"
    name = name_expression(func, _offsets_type(func, offsets))
    rows = offsets.shape[0] - 1
    _need(func, "row_valid", row_valid, rows)
    out = xp.zeros(max(rows, 0), dtype=np.int64)
    if rows <= 0:
        return out
    rmask, mask = _mask(xp, row_valid), _mask(xp, valid)
    launch("transforms", name, rows,
           (xp.ascontiguousarray(offsets), _I64(rows), rmask, _I64(rmask.shape[0]), mask,
            _I64(mask.shape[0]), out, error_buffer()), lanes=WARP)
    return out


def compact(xp: ModuleType, offsets: Any, row_valid: Any, valid: Any) -> tuple[Any, Any]:
    """Compact rows: new offsets (from 0, dtype of ``offsets``) and the kept positions.

    Synchronises the device once: the number of kept elements sizes the positions.
    """
    func = "compact"
    name = name_expression("kept_positions", _offsets_type(func, offsets))
    rows = offsets.shape[0] - 1
    lengths = kept_lengths(xp, offsets, row_valid, valid)
    new_offsets = xp.zeros(rows + 1, dtype=np.int64)
    xp.cumsum(lengths, out=new_offsets[1:])
    total = fetch(xp, func, new_offsets[-1])[0]
    positions = xp.empty(total, dtype=np.int64)
    if total > 0:
        rmask, mask = _mask(xp, row_valid), _mask(xp, valid)
        incl = xp.cumsum(mask, dtype=np.int64)
        launch("transforms", name, rows,
               (xp.ascontiguousarray(offsets), _I64(rows), rmask, _I64(rmask.shape[0]), mask,
                incl, _I64(mask.shape[0]), new_offsets, positions, _I64(total),
                error_buffer()), lanes=WARP)
    return _as(new_offsets, offsets.dtype), positions


# ------------------------------------------------------------------------ padding
def pad_or_truncate(xp: ModuleType, values: Any, offsets: Any, row_valid: Any, valid: Any,
                    length: int, left: bool, pad: Any, out: Any, out_valid: Any) -> None:
    """Fill ``out[rows, length, D]`` (and ``out_valid[rows, length]``) from ``values[N, D]``."""
    func = "pad_or_truncate"
    bits = _bits(func, values.dtype)
    name = name_expression(func, _BITS[bits.itemsize], _offsets_type(func, offsets))
    rows = offsets.shape[0] - 1
    width = values.shape[1]
    if out.dtype != values.dtype:
        msg = f"{func}: no cuda kernel for {values.dtype} values into a {out.dtype} out"
        raise NotImplementedError(msg)
    check_shape(func, "out", out.shape, (rows, length, width))
    if out_valid is not None:
        check_shape(func, "out_valid", out_valid.shape, (rows, length))
    _need(func, "row_valid", row_valid, rows)
    if rows * length == 0:
        return
    target = into(xp, out, copy=False)
    flags = None if out_valid is None else into(xp, out_valid, copy=False)
    rmask, mask = _mask(xp, row_valid), _mask(xp, valid)
    marks = _mask(xp, flags)
    launch("transforms", name, rows * length * max(width, 1),
           (xp.ascontiguousarray(values).view(bits), _I64(values.shape[0]), _I64(width),
            xp.ascontiguousarray(offsets), _I64(rows), rmask, _I64(rmask.shape[0]), mask,
            _I64(mask.shape[0]), _I64(length), _I32(bool(left)),
            np.array(pad, dtype=values.dtype).view(bits)[()], target.view(bits), marks,
            _I32(flags is not None), error_buffer()))
    back(out, target)
    if out_valid is not None:
        back(out_valid, flags)


# --------------------------------------------------------------------- counting
def count_ints(xp: ModuleType, values: Any, valid: Any, offsets: Any, row_valid: Any
               ) -> tuple[Any, Any]:
    """Distinct int64 values of the rows and their counts (sorted by value).

    Synchronises the device twice: the kept values, then the distinct ones, size the
    outputs.
    """
    func = "count_ints"
    _, positions = compact(xp, offsets, row_valid, valid)
    num = positions.shape[0]
    if num == 0:
        return xp.empty(0, dtype=np.int64), xp.empty(0, dtype=np.int64)
    keys, counts = xp.unique(_as(values[positions], np.int64), return_counts=True)
    if xp is not np:  # unique synchronised: checking is free
        check_errors(func)
    return keys, _as(counts, np.int64)


def count_strings(xp: ModuleType, str_offsets: Any, data: Any, valid: Any, offsets: Any,
                  row_valid: Any) -> tuple[Any, Any]:
    """First position of each distinct string of the rows and its count (table order).

    Synchronises the device twice: the kept strings, then the distinct ones, size the
    outputs.
    """
    func = "count_strings"
    o = _offsets_type(func, str_offsets)
    _, items = compact(xp, offsets, row_valid, valid)
    num = items.shape[0]
    if num == 0:
        return xp.empty(0, dtype=np.int64), xp.empty(0, dtype=np.int64)
    strings = (xp.ascontiguousarray(str_offsets), xp.ascontiguousarray(data),
               _I64(data.shape[0]))
    cap = _capacity(num)
    hashes = xp.empty(num, dtype=np.uint64)
    slots = xp.full(cap, _FREE_SLOT, dtype=np.uint64)
    counts = xp.zeros(cap, dtype=np.int64)
    launch("transforms", name_expression("string_hashes", o), num,
           (*strings, items, _I64(num), hashes, error_buffer()))
    launch("transforms", name_expression("string_set_insert", o), num,
           (*strings, items, hashes, _I64(num), slots, _I64(cap), error_buffer()))
    launch("transforms", name_expression("string_set_count", o), num,
           (*strings, items, hashes, _I64(num), slots, _I64(cap), counts))
    occupied = xp.flatnonzero(slots != _FREE_SLOT)
    if xp is not np:  # flatnonzero synchronised: checking is free
        check_errors(func)
    return items[slots[occupied].astype(np.int64)], counts[occupied]


def order_by_count(xp: ModuleType, counts: Any) -> Any:
    """Positions sorted by descending count, ties kept in their order (a stable sort)."""
    if counts.shape[0] == 0:
        return xp.empty(0, dtype=np.int64)
    return _as(xp.argsort(-_as(counts, np.int64), kind="stable"), np.int64)


# ------------------------------------------------------------------------ lookup
def build_int_table(xp: ModuleType, keys: Any) -> tuple[Any, int]:
    """Hash table mapping ``keys[i]`` to id ``i + 2`` (and the id of INT64_MIN, or 0).

    The CPU's layout exactly. Synchronises the device once, to return INT64_MIN's id as
    an int.
    """
    func = "build_int_table"
    keys = xp.ascontiguousarray(keys, dtype=np.int64)
    num = keys.shape[0]
    cap = _capacity(num)
    slots = xp.full(cap, _FREE_SLOT, dtype=np.uint64)
    free_id = xp.zeros(1, dtype=np.int64)
    if num:
        launch("transforms", "int_table_insert", num,
               (keys, _I64(num), slots, _I64(cap), _I32(64 - (cap.bit_length() - 1)), free_id,
                error_buffer()))
    table = xp.empty((cap, 2), dtype=np.int64)
    launch("transforms", "int_table_fill", cap,
           (keys, _I64(num), slots, _I64(cap), table, error_buffer()))
    return table, fetch(xp, func, free_id[0])[0]


def lookup_ints(xp: ModuleType, values: Any, valid: Any, start: int, stop: int,
                table: tuple[Any, int], missing: int, out: Any) -> None:
    """``out[k]`` = the id of ``values[k]``, or ``missing`` (absent or null)."""
    func = "lookup_ints"
    name = name_expression(func, ctype(func, values.dtype, _INTS))
    _need(func, "values", values, stop)
    _need(func, "valid", valid, stop)
    _need(func, "out", out, stop)
    if stop <= start:
        return
    rows, free_id = table
    cap = rows.shape[0]
    mask = _mask(xp, valid)
    target = into(xp, out, np.int64)
    launch("transforms", name, stop - start,
           (xp.ascontiguousarray(values), mask, _I64(mask.shape[0]), _I64(start), _I64(stop),
            xp.ascontiguousarray(rows, dtype=np.int64), _I64(cap),
            _I32(64 - (cap.bit_length() - 1)), _I64(free_id), _I64(missing), target,
            error_buffer()))
    back(out, target)


def build_string_table(xp: ModuleType, str_offsets: Any, data: Any) -> Any:
    """Hash table mapping vocabulary string ``i`` to id ``i + 2`` (the CPU's layout)."""
    func = "build_string_table"
    o = _offsets_type(func, str_offsets)
    num = str_offsets.shape[0] - 1
    cap = _capacity(num)
    strings = (xp.ascontiguousarray(str_offsets), xp.ascontiguousarray(data),
               _I64(data.shape[0]))
    hashes = xp.empty(num, dtype=np.uint64)
    slots = xp.full(cap, _FREE_SLOT, dtype=np.uint64)
    if num:
        launch("transforms", name_expression("string_hashes", o), num,
               (*strings, xp.arange(num, dtype=np.int64), _I64(num), hashes, error_buffer()))
        launch("transforms", "string_table_insert", num,
               (hashes, _I64(num), slots, _I64(cap), error_buffer()))
    table = xp.empty((cap, 4), dtype=np.int64)
    launch("transforms", name_expression("string_table_fill", o), cap,
           (*strings, hashes, _I64(num), slots, _I64(cap), table, error_buffer()))
    return table


def lookup_strings(xp: ModuleType, str_offsets: Any, data: Any, valid: Any, start: int, stop: int,
                   vocabulary: tuple[Any, Any], table: Any, missing: int, out: Any) -> None:
    """``out[k]`` = the id of string ``k``, or ``missing`` (absent or null)."""
    func = "lookup_strings"
    voc_offsets, voc_data = vocabulary
    name = name_expression(func, _offsets_type(func, str_offsets),
                           _offsets_type(func, voc_offsets))
    _need(func, "str_offsets", str_offsets, stop + 1)
    _need(func, "valid", valid, stop)
    _need(func, "out", out, stop)
    if stop <= start:
        return
    mask = _mask(xp, valid)
    target = into(xp, out, np.int64)
    launch("transforms", name, stop - start,
           (xp.ascontiguousarray(str_offsets), xp.ascontiguousarray(data), _I64(data.shape[0]),
            mask, _I64(mask.shape[0]), _I64(start), _I64(stop),
            xp.ascontiguousarray(voc_offsets), xp.ascontiguousarray(voc_data),
            _I64(voc_offsets.shape[0] - 1), _I64(voc_data.shape[0]),
            xp.ascontiguousarray(table, dtype=np.int64), _I64(table.shape[0]), _I64(missing),
            target, error_buffer()))
    back(out, target)


# ------------------------------------------------------------------ block bucketize
def block_bucketize(xp: ModuleType, uvalues: Any, offsets: Any, batch_size: int, block: Any,
                    threshold: Any, all_block: Any, my_size: int, keep_original: bool, weights: Any,
                    positions: bool, permute: bool
                    ) -> tuple[Any, Any, Any | None, Any | None, Any | None]:
    """Split every row's values into ``my_size`` buckets (FBGEMM's block bucketizing).

    Returns ``(new_offsets, new_values, new_weights, positions, permute)`` as the CPU
    kernel does. Synchronises the device once: ``offsets[-1]`` sizes the outputs.
    """
    func = "block_bucketize"
    u = ctype(func, uvalues.dtype, _UNSIGNED)
    wbits = np.dtype(np.uint64) if weights is None else _bits(func, weights.dtype)
    if wbits.itemsize not in (4, 8):
        msg = f"{func}: no cuda kernel for {weights.dtype} weights"
        raise NotImplementedError(msg)
    offs = xp.ascontiguousarray(offsets, dtype=np.int64)
    rows = offs.shape[0] - 1
    total = fetch(xp, func, offs[-1])[0]
    counts = xp.zeros(my_size * rows, dtype=np.int64)
    keys = (xp.ascontiguousarray(block, dtype=np.uint64),
            xp.ascontiguousarray(threshold, dtype=np.uint64),
            xp.ascontiguousarray(all_block).view(np.uint8), _I64(block.shape[0]),
            _U64(my_size))
    head = (xp.ascontiguousarray(uvalues), _I64(uvalues.shape[0]), offs, _I64(rows),
            _I64(batch_size), *keys)
    if rows > 0:
        launch("transforms", name_expression("bucket_counts", u), rows,
               (*head, counts, error_buffer()))
    new_offsets = xp.zeros(my_size * rows + 1, dtype=np.int64)
    xp.cumsum(counts, out=new_offsets[1:])
    cursor = new_offsets[:-1].copy()
    out = xp.empty(total, dtype=uvalues.dtype)
    out_weights = None if weights is None else xp.empty(total, dtype=weights.dtype)
    w_in = xp.empty(0, dtype=wbits) if weights is None else \
        xp.ascontiguousarray(weights).view(wbits)
    w_out = xp.empty(0, dtype=wbits) if out_weights is None else out_weights.view(wbits)
    pos = xp.empty(total if positions else 0, dtype=np.int64)
    perm = xp.empty(total if permute else 0, dtype=np.int64)
    if rows > 0 and total > 0:
        launch("transforms", name_expression("bucket_scatter", u, _BITS[wbits.itemsize]), rows,
               (*head, _I32(bool(keep_original)), cursor, out, _I64(total), w_in,
                _I64(w_in.shape[0]), w_out, pos, _I64(pos.shape[0]), perm,
                _I64(perm.shape[0]), error_buffer()))
    return (new_offsets, out, out_weights, pos if positions else None,
            perm if permute else None)


# ------------------------------------------------------------------------- checks
def check_null_rows(xp: ModuleType, lengths: Any, valid: Any) -> None:
    """Record a row that ``valid`` marks null but whose length is not 0 (device check)."""
    func = "check_null_rows"
    rows = lengths.shape[0]
    _need(func, "valid", valid, rows)
    if rows == 0:
        return
    launch("transforms", name_expression(func, _offsets_type(func, lengths)), rows,
           (xp.ascontiguousarray(lengths), _mask(xp, valid), _I64(rows), error_buffer()))
