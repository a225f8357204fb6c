"""CPU kernels for feature-pipeline transforms.

XXH3 hashing, vocabulary counting and lookup and bucketizing; padding/truncation and
row compaction live in ``padding.py`` and KeyedJagged's block bucketizing in
``keyed.py``, both re-exported here (one kernel family).

Conventions (as in ``convert.py``): positions are *logical* element positions of the
leaf (Arrow's ``array.offset`` already applied); ``[start, stop)`` is the range the
rows address, and only that range of ``out`` is written. A validity argument is a
uint8 mask (1 = valid); an empty one means "all valid". Row offsets are int32 or
int64 and may start above zero. Strings are read straight from Arrow's buffers: an
offsets array (``len + 1`` entries, logical) and the uint8 data buffer.

The hash is XXH3-64 (``XXH3_64bits_withSeed`` of Yann Collet's xxHash,
https://github.com/Cyan4973/xxHash, v0.8); an integer is hashed as its 8
little-endian bytes. ``tests/_reference.py`` holds a plain-Python twin checked
against xxHash's published test vectors. The secret and the host-side constants
(``int_bitflip``, ``long_secret``, ``divider``) live in ``kernels/xxh3.py``, which the
CUDA launchers share without importing Numba.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from ..xxh3 import K_4TO8, SECRET, divider, int_bitflip, long_secret, secret64
from ._jit import kernel, parallel_kernel, run, threads_for
from .keyed import block_bucketize  # KeyedJagged sharding, same family
from .padding import compact, kept_lengths, pad_or_truncate  # same family

#: The registry kernels of the family (the hash and division helpers are not).
__all__ = ["block_bucketize", "bucketize", "build_int_table", "build_string_table", "compact",
           "count_ints", "count_strings", "hash_ints", "hash_strings", "kept_lengths",
           "lookup_ints", "lookup_strings", "order_by_count", "pad_or_truncate"]

_U = np.uint64
_P32_1, _P32_2, _P32_3 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D
_P64_1, _P64_2, _P64_3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_P64_4, _P64_5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5

# Secret words the short-input paths combine (constants of the algorithm).
_K_EMPTY = _U(secret64(56) ^ secret64(64))
_K_1TO3 = _U(int.from_bytes(SECRET[0:4].tobytes(), "little")
             ^ int.from_bytes(SECRET[4:8].tobytes(), "little"))
_K_9TO16_LO = _U(secret64(24) ^ secret64(32))
_K_9TO16_HI = _U(secret64(40) ^ secret64(48))
_MX1 = _U(0x165667919E3779F9)
_MX2 = _U(0x9FB21C651E98DF25)
_P1, _P2, _P3 = _U(_P64_1), _U(_P64_2), _U(_P64_3)
_Q1 = _U(_P32_1)
_INIT_ACC = np.array([_P32_3, _P64_1, _P64_2, _P64_3, _P64_4, _P32_2, _P64_5, _P32_1],
                     dtype=np.uint64)
_S1, _S8, _S16, _S24, _S28, _S29, _S32 = _U(1), _U(8), _U(16), _U(24), _U(28), _U(29), _U(32)
_S33, _S35, _S37, _S40, _S47, _S48, _S49, _S56, _S64 = (
    _U(33), _U(35), _U(37), _U(40), _U(47), _U(48), _U(49), _U(56), _U(64))
_LOW32 = _U(0xFFFFFFFF)
_ZERO = _U(0)

_EMPTY_MASK = np.empty(0, dtype=np.uint8)


# -------------------------------------------------------------------------- XXH3
@intrinsic
def _fold128(typingctx: Any, a: Any, b: Any) -> Any:  # pragma: no cover
    """Low ^ high 64 bits of the 128-bit product of two uint64 (XXH3_mul128_fold64)."""
    sig = types.uint64(types.uint64, types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        wide = ir.IntType(128)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        low = builder.trunc(product, ir.IntType(64))
        high = builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))
        return builder.xor(low, high)

    return sig, codegen


@numba.njit(cache=True, nogil=True)
def _rotl(x, r):  # pragma: no cover
    return (x << r) | (x >> (_S64 - r))


@numba.njit(cache=True, nogil=True)
def _read64(data, p):  # pragma: no cover
    # Little-endian 8 bytes; LLVM turns this into one unaligned load. The index is
    # unsigned so Numba adds no negative-index wraparound (which blocks that).
    q = _U(p)
    return (_U(data[q]) | (_U(data[q + _U(1)]) << _S8) | (_U(data[q + _U(2)]) << _S16)
            | (_U(data[q + _U(3)]) << _S24) | (_U(data[q + _U(4)]) << _S32)
            | (_U(data[q + _U(5)]) << _S40) | (_U(data[q + _U(6)]) << _S48)
            | (_U(data[q + _U(7)]) << _S56))


@numba.njit(cache=True, nogil=True)
def _read32(data, p):  # pragma: no cover
    q = _U(p)
    return (_U(data[q]) | (_U(data[q + _U(1)]) << _S8) | (_U(data[q + _U(2)]) << _S16)
            | (_U(data[q + _U(3)]) << _S24))


@numba.njit(cache=True, nogil=True)
def _swap64(x):  # pragma: no cover
    x = ((x & _U(0x00FF00FF00FF00FF)) << _S8) | ((x >> _S8) & _U(0x00FF00FF00FF00FF))
    x = ((x & _U(0x0000FFFF0000FFFF)) << _S16) | ((x >> _S16) & _U(0x0000FFFF0000FFFF))
    return (x << _S32) | (x >> _S32)


@numba.njit(cache=True, nogil=True)
def _xxh64_avalanche(h):  # pragma: no cover
    h = (h ^ (h >> _S33)) * _P2
    h = (h ^ (h >> _S29)) * _P3
    return h ^ (h >> _S32)


@numba.njit(cache=True, nogil=True)
def _avalanche(h):  # pragma: no cover
    h = (h ^ (h >> _S37)) * _MX1
    return h ^ (h >> _S32)


@numba.njit(cache=True, nogil=True)
def _rrmxmx(h, n):  # pragma: no cover
    h = h ^ _rotl(h, _S49) ^ _rotl(h, _S24)
    h = h * _MX2
    h = h ^ ((h >> _S35) + n)
    h = h * _MX2
    return h ^ (h >> _S28)


@numba.njit(cache=True, nogil=True)
def xxh3_int(x, bitflip):  # pragma: no cover
    """XXH3-64 of the 8 little-endian bytes of the uint64 ``x``.

    ``bitflip`` is :func:`int_bitflip` of the seed.
    """
    return _rrmxmx(_rotl(x, _S32) ^ bitflip, _S8)


@numba.njit(cache=True, nogil=True)
def _mix16(data, p, secret, q, seed):  # pragma: no cover
    return _fold128(_read64(data, p) ^ (_read64(secret, q) + seed),
                    _read64(data, p + 8) ^ (_read64(secret, q + 8) - seed))


@numba.njit(cache=True, nogil=True)
def _xxh3_long(data, p, n, secret):  # pragma: no cover
    # Inputs above 240 bytes: 64-byte stripes into 8 accumulators, scrambled per block.
    acc = _INIT_ACC.copy()
    stripes_per_block = (secret.shape[0] - 64) // 8
    block = 64 * stripes_per_block
    blocks = (n - 1) // block
    for b in range(blocks + 1):
        stripes = stripes_per_block if b < blocks else ((n - 1) - block * blocks) // 64
        for st in range(stripes):
            base = p + b * block + 64 * st
            for lane in range(8):
                v = _read64(data, base + 8 * lane)
                k = v ^ _read64(secret, 8 * st + 8 * lane)
                acc[lane ^ 1] += v
                acc[lane] += (k & _LOW32) * (k >> _S32)
        if b < blocks:
            for lane in range(8):
                a = acc[lane]
                a = a ^ (a >> _S47)
                a = a ^ _read64(secret, secret.shape[0] - 64 + 8 * lane)
                acc[lane] = a * _Q1
    last = p + n - 64
    for lane in range(8):
        v = _read64(data, last + 8 * lane)
        k = v ^ _read64(secret, secret.shape[0] - 64 - 7 + 8 * lane)
        acc[lane ^ 1] += v
        acc[lane] += (k & _LOW32) * (k >> _S32)
    result = _U(n) * _P1
    for i in range(4):
        result += _fold128(acc[2 * i] ^ _read64(secret, 11 + 16 * i),
                           acc[2 * i + 1] ^ _read64(secret, 11 + 16 * i + 8))
    return _avalanche(result)


@numba.njit(cache=True, nogil=True)
def _xxh3_above16(data, p, n, seed, ksecret, secret):  # pragma: no cover
    # XXH3-64 of 17 bytes and more, kept out of line so the hot loop stays small.
    if n <= 128:
        acc = _U(n) * _P1
        for i in range((n - 1) // 32 + 1):
            acc += _mix16(data, p + 16 * i, ksecret, 32 * i, seed)
            acc += _mix16(data, p + n - 16 * (i + 1), ksecret, 32 * i + 16, seed)
        return _avalanche(acc)
    if n <= 240:
        acc = _U(n) * _P1
        for i in range(8):
            acc += _mix16(data, p + 16 * i, ksecret, 16 * i, seed)
        acc = _avalanche(acc)
        for i in range(8, n // 16):
            acc += _mix16(data, p + 16 * i, ksecret, 16 * (i - 8) + 3, seed)
        acc += _mix16(data, p + n - 16, ksecret, 136 - 17, seed)
        return _avalanche(acc)
    return _xxh3_long(data, p, n, secret)


@numba.njit(cache=True, nogil=True, inline="always")
def _xxh3_upto16(data, p, n, seed):  # pragma: no cover
    # XXH3-64 of 0 to 16 bytes. Inlined into its callers by Numba: as a call it costs
    # more than the hash (the array argument is passed on the stack for every string).
    if n > 8:
        lo = _read64(data, p) ^ (_K_9TO16_LO + seed)
        hi = _read64(data, p + n - 8) ^ (_K_9TO16_HI - seed)
        return _avalanche(_U(n) + _swap64(lo) + hi + _fold128(lo, hi))
    if n >= 4:
        s = seed ^ _swap64(seed & _LOW32)  # swap32(low half) << 32
        x = _read32(data, p + n - 4) + (_read32(data, p) << _S32)
        return _rrmxmx(x ^ (_U(K_4TO8) - s), _U(n))
    if n > 0:
        combined = ((_U(data[_U(p)]) << _S16) | (_U(data[_U(p + (n >> 1))]) << _S24)
                    | _U(data[_U(p + n - 1)]) | (_U(n) << _S8))
        return _xxh64_avalanche(combined ^ (_K_1TO3 + seed))
    return _xxh64_avalanche(seed ^ _K_EMPTY)


@numba.njit(cache=True, nogil=True)
def xxh3_bytes(data, p, n, seed, ksecret, secret):  # pragma: no cover
    """XXH3-64 of ``data[p:p + n]`` (uint8) with ``seed``.

    ``ksecret`` is :data:`SECRET` and ``secret`` :func:`long_secret` of the seed (used
    above 240 bytes only). Hot loops do not call this: they test ``n <= 16`` themselves,
    with ``_xxh3_upto16`` inlined and ``_xxh3_above16`` called, because a call that
    passes several arrays per element is not inlined and costs more than the hash (and
    a global array read in a loop is rebuilt on every iteration, so the secrets are
    arguments).
    """
    if n <= 16:
        return _xxh3_upto16(data, p, n, seed)
    return _xxh3_above16(data, p, n, seed, ksecret, secret)


@numba.njit(cache=True, nogil=True)
def _mulhi(a, b):  # pragma: no cover
    return _fold128(a, b) ^ (a * b)  # the high 64 bits of the 128-bit product


@numba.njit(cache=True, nogil=True)
def _bucket(h, n, magic, shift, mode):  # pragma: no cover
    # h % n without a division instruction (libdivide's unsigned 64-bit scheme):
    # mode 0: n is a power of two; 1: q = mulhi(magic, h) >> shift; 2: the "add" variant.
    if mode == 0:
        return np.int64(h & (n - _S1))
    q = _mulhi(magic, h)
    if mode == 2:
        q = (((h - q) >> _S1) + q) >> shift
    else:
        q = q >> shift
    return np.int64(h - q * n)


@kernel
def _bucket_one(h, n, magic, shift, mode):  # pragma: no cover
    return _bucket(h, n, magic, shift, mode)


def bucket_of(h: int, n: int) -> int:
    """``h % n`` computed the way the hashing kernels do (for tests)."""
    return int(_bucket_one(_U(h), *divider(n)))


def _hash_ints(values, start, bitflip, n, magic, shift, mode, out, lo, hi):  # pragma: no cover
    # Elements start + [lo, hi).
    for i in range(lo, hi):
        k = _U(start + i)  # unsigned: no negative-index wraparound code
        h = xxh3_int(_U(np.int64(values[k])), bitflip)
        out[k] = _bucket(h, n, magic, shift, mode)


def _hash_strings(offsets, data, bounds, seed, ksecret, secret, n, magic, shift, mode,
                  out, lo, hi):  # pragma: no cover
    # Chunks c in [lo, hi), [bounds[c], bounds[c + 1]) each (see _balanced_bounds). The
    # first loop hashes every string as if it had at most 16 bytes (for a longer one
    # the inlined short path reads inside the string and its result is overwritten):
    # no call in the hot loop, so nothing spills. The rare longer strings get a second
    # loop, only in chunks that hold some.
    for c in range(lo, hi):
        first = bounds[c]
        last = bounds[c + 1]
        longer = 0
        for i in range(first, last):
            k = _U(i)  # unsigned: no negative-index wraparound code
            p = np.int64(offsets[k])
            size = np.int64(offsets[k + _U(1)]) - p
            longer += size > 16
            out[k] = _bucket(_xxh3_upto16(data, p, size, seed), n, magic, shift, mode)
        if longer:
            for i in range(first, last):
                k = _U(i)
                p = np.int64(offsets[k])
                size = np.int64(offsets[k + _U(1)]) - p
                if size > 16:
                    h = _xxh3_above16(data, p, size, seed, ksecret, secret)
                    out[k] = _bucket(h, n, magic, shift, mode)


@kernel
def _balanced_bounds(offsets, start, stop, chunks):  # pragma: no cover
    # Cut strings [start, stop) into ``chunks`` runs of about equal cost, a string
    # costing 16 + its bytes: binary searches on the non-decreasing offsets[k] + 16 k.
    bounds = np.empty(chunks + 1, dtype=np.int64)
    base = np.int64(offsets[start]) + 16 * np.int64(start)
    total = np.int64(offsets[stop]) + 16 * np.int64(stop) - base
    bounds[0] = start
    for c in range(1, chunks):
        target = base + total * c // chunks
        lo = np.int64(bounds[c - 1])
        hi = np.int64(stop)
        while lo < hi:
            mid = (lo + hi) >> 1
            if np.int64(offsets[mid]) + 16 * mid < target:
                lo = mid + 1
            else:
                hi = mid
        bounds[c] = lo
    bounds[chunks] = stop
    return bounds


# -------------------------------------------------------------------- bucketize
def _bucketize(values, start, boundaries, right, out, lo, hi):  # pragma: no cover
    # out[k] = number of boundaries <= x (right=False) or < x (right=True); NaN -> len;
    # elements k = start + [lo, hi).
    # Up to 64 boundaries: count them all (no branches, vectorised, ~5x faster than a
    # binary search's mispredicted branches); more: binary search.
    nb = boundaries.shape[0]
    linear = nb <= 64
    for i in range(lo, hi):
        k = _U(start + i)  # unsigned: no negative-index wraparound code
        x = values[k]
        if x != x:
            out[k] = nb
            continue
        count = 0
        if linear:
            if right:
                for j in range(nb):
                    count += boundaries[j] < x
            else:
                for j in range(nb):
                    count += boundaries[j] <= x
        else:
            hi = nb
            while count < hi:
                mid = (count + hi) >> 1
                b = boundaries[mid]
                if (b < x) if right else (b <= x):
                    count = mid + 1
                else:
                    hi = mid
        out[k] = count


# --------------------------------------------------------------------- counting
# Integer hash tables are int64[cap, 2] arrays of (key, value) rows, cap a power of two,
# linear probing. A free row holds _FREE as its key; the key _FREE itself (INT64_MIN)
# is kept apart.
_FREE = np.int64(-(2**63))
_FIB = _U(0x9E3779B97F4A7C15)  # 2**64 / golden ratio


@numba.njit(cache=True, nogil=True, inline="always")
def _slot(x, shift):  # pragma: no cover
    # Fibonacci hashing: the top bits of x * 2**64/phi (private to the tables).
    return np.int64((_U(x) * _FIB) >> shift)


@numba.njit(cache=True, nogil=True)
def _new_table(bits):  # pragma: no cover
    table = np.empty((1 << bits, 2), dtype=np.int64)
    table[:, 0] = _FREE
    table[:, 1] = 0
    return table


@numba.njit(cache=True, nogil=True)
def _grown(table, bits):  # pragma: no cover
    # The same entries in a table twice as large (``bits + 1``).
    new = _new_table(bits + 1)
    mask = new.shape[0] - 1
    shift = _U(63 - bits)
    for i in range(table.shape[0]):
        key = table[i, 0]
        if key != _FREE:
            s = _slot(key, shift)
            while new[s, 0] != _FREE:
                s = (s + 1) & mask
            new[s, 0] = key
            new[s, 1] = table[i, 1]
    return new


@numba.njit(cache=True, nogil=True)
def _count_ints_run(values, valid, offsets, row_valid, r0, k0, table, shift, size,
                    stop_size):  # pragma: no cover
    # Count elements into ``table`` from row r0, element k0, until every element is in
    # or the table holds ``stop_size`` keys. Returns (row, element to resume at, size,
    # INT64_MIN elements seen, done). The table is an argument, never reassigned here:
    # a loop that may replace its table cannot keep the table's pointer in a register
    # and runs several times slower.
    rows = offsets.shape[0] - 1
    all_valid = valid.shape[0] == 0
    all_rows = row_valid.shape[0] == 0
    mask = table.shape[0] - 1
    free_count = 0
    for r in range(r0, rows):
        if not all_rows and row_valid[r] == 0:
            continue
        first = k0 if r == r0 else offsets[r]
        for k in range(first, offsets[r + 1]):
            if not all_valid and valid[k] == 0:
                continue
            x = np.int64(values[k])
            if x == _FREE:
                free_count += 1
                continue
            s = _slot(x, shift)
            while True:
                key = table[s, 0]
                if key == x:
                    table[s, 1] += 1
                    break
                if key == _FREE:
                    table[s, 0] = x
                    table[s, 1] = 1
                    size += 1
                    if size >= stop_size:
                        return r, k + 1, size, free_count, False
                    break
                s = (s + 1) & mask
    return rows, 0, size, free_count, True


@kernel
def _count_ints(values, valid, offsets, row_valid):  # pragma: no cover
    # Distinct int64 values of the addressed, valid elements of valid rows and their
    # counts (unordered), and whether the count finished. Dense counting when the values
    # span a small range; a hash table otherwise, given up (False) once it holds more
    # than 2**16 keys: a bigger table no longer fits the caches, and sorting the values
    # is faster.
    rows = offsets.shape[0] - 1
    all_valid = valid.shape[0] == 0
    all_rows = row_valid.shape[0] == 0
    n = 0
    lo = np.int64(0)
    hi = np.int64(0)
    for r in range(rows):
        if not all_rows and row_valid[r] == 0:
            continue
        for k in range(offsets[r], offsets[r + 1]):
            if not all_valid and valid[k] == 0:
                continue
            x = np.int64(values[k])
            if n == 0 or x < lo:
                lo = x
            if n == 0 or x > hi:
                hi = x
            n += 1
    if n == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), True
    span = _U(hi) - _U(lo)
    if span < _U(2 * n + 65536):
        dense = np.zeros(np.int64(span) + 1, dtype=np.int64)
        for r in range(rows):
            if not all_rows and row_valid[r] == 0:
                continue
            for k in range(offsets[r], offsets[r + 1]):
                if all_valid or valid[k] != 0:
                    dense[np.int64(_U(np.int64(values[k])) - _U(lo))] += 1
        where = np.nonzero(dense)[0]
        keys = np.empty(where.shape[0], dtype=np.int64)
        for i in range(where.shape[0]):
            keys[i] = np.int64(_U(lo) + _U(where[i]))
        return keys, dense[where], True
    limit = 1 << 16
    bits = np.int64(12)  # not a literal: one compiled _new_table and _grown, not two
    table = _new_table(bits)
    size = 0
    free_count = 0
    r = 0
    k = offsets[0]
    while True:  # a few rounds: the table doubles between them
        stop_size = min(limit + 1, (1 << bits) // 2 + 1)
        r, k, size, free, done = _count_ints_run(values, valid, offsets, row_valid, r, k,
                                                 table, _U(64 - bits), size, stop_size)
        free_count += free
        if done:
            break
        if size > limit:
            nothing = np.empty(0, dtype=np.int64)
            return nothing, nothing, False
        table = _grown(table, bits)
        bits += 1
    extra = 1 if free_count else 0
    keys = np.empty(size + extra, dtype=np.int64)
    counts = np.empty(size + extra, dtype=np.int64)
    j = 0
    for i in range(table.shape[0]):
        if table[i, 0] != _FREE:
            keys[j] = table[i, 0]
            counts[j] = table[i, 1]
            j += 1
    if extra:
        keys[j] = _FREE
        counts[j] = free_count
    return keys, counts, True


@kernel
def _gather_ints(values, valid, offsets, row_valid, total):  # pragma: no cover
    # The addressed, valid elements of valid rows as int64 (``total`` of them at most).
    out = np.empty(total, dtype=np.int64)
    rows = offsets.shape[0] - 1
    all_valid = valid.shape[0] == 0
    all_rows = row_valid.shape[0] == 0
    j = 0
    for r in range(rows):
        if not all_rows and row_valid[r] == 0:
            continue
        for k in range(offsets[r], offsets[r + 1]):
            if all_valid or valid[k] != 0:
                out[j] = np.int64(values[k])
                j += 1
    return out[:j]


@kernel
def _run_lengths(ordered):  # pragma: no cover
    # Distinct values of a sorted array and how often each occurs.
    n = ordered.shape[0]
    runs = 0
    for i in range(n):
        if i == 0 or ordered[i] != ordered[i - 1]:
            runs += 1
    keys = np.empty(runs, dtype=ordered.dtype)
    counts = np.zeros(runs, dtype=np.int64)
    j = -1
    for i in range(n):
        if i == 0 or ordered[i] != ordered[i - 1]:
            j += 1
            keys[j] = ordered[i]
        counts[j] += 1
    return keys, counts


@kernel
def _order_by_count(counts, top):  # pragma: no cover
    # Stable counting sort of positions by descending count (``top`` = the largest).
    n = counts.shape[0]
    starts = np.zeros(top + 2, dtype=np.int64)
    for i in range(n):
        starts[top - counts[i] + 1] += 1
    for b in range(1, top + 2):
        starts[b] += starts[b - 1]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        b = top - counts[i]
        out[starts[b]] = i
        starts[b] += 1
    return out


@numba.njit(cache=True, nogil=True)
def _same_bytes(data_a, pos_a, na, data_b, pos_b, nb):  # pragma: no cover
    if na != nb:
        return False
    for i in range(na):
        if data_a[pos_a + i] != data_b[pos_b + i]:
            return False
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def _words16(data, p, n):  # pragma: no cover
    # The bytes of a string of at most 16 bytes as two zero-padded little-endian words.
    w0 = _ZERO
    w1 = _ZERO
    if p + 16 <= data.shape[0]:
        w0 = _read64(data, p)
        w1 = _read64(data, p + 8)
        if n < 8:
            w0 = w0 & ((_S1 << _U(8 * n)) - _S1)
            w1 = _ZERO
        elif n < 16:
            w1 = w1 & ((_S1 << _U(8 * (n - 8))) - _S1)
    else:
        for i in range(n):
            if i < 8:
                w0 = w0 | (_U(data[_U(p + i)]) << _U(8 * i))
            else:
                w1 = w1 | (_U(data[_U(p + i)]) << _U(8 * (i - 8)))
    return np.int64(w0), np.int64(w1)


@numba.njit(cache=True, nogil=True)
def _string_rows(bits):  # pragma: no cover
    # Rows (element, hash, count, byte position, length, word0, word1); element -1 = free.
    table = np.zeros((1 << bits, 7), dtype=np.int64)
    table[:, 0] = -1
    return table


@numba.njit(cache=True, nogil=True)
def _count_strings_run(str_offsets, data, valid, offsets, row_valid, secret, r0, k0, table,
                       size, stop_size):  # pragma: no cover
    # Count strings into ``table`` from row r0, element k0, until every element is in or
    # the table holds ``stop_size`` strings; returns (row, element to resume at, size,
    # done). As in _count_ints_run, the table is never reassigned inside the loop.
    rows = offsets.shape[0] - 1
    all_valid = valid.shape[0] == 0
    all_rows = row_valid.shape[0] == 0
    mask = table.shape[0] - 1
    for r in range(r0, rows):
        if not all_rows and row_valid[r] == 0:
            continue
        first = k0 if r == r0 else offsets[r]
        for k in range(first, offsets[r + 1]):
            if not all_valid and valid[k] == 0:
                continue
            p = np.int64(str_offsets[k])
            n = np.int64(str_offsets[k + 1]) - p
            w0 = np.int64(0)
            w1 = np.int64(0)
            if n <= 16:
                h = _xxh3_upto16(data, p, n, _ZERO)
                w0, w1 = _words16(data, p, n)
            else:
                h = _xxh3_above16(data, p, n, _ZERO, secret, secret)
            hs = np.int64(h)
            s = np.int64(h & _U(mask))
            while table[s, 0] >= 0:
                if table[s, 1] == hs and table[s, 4] == n:
                    if n <= 16:
                        if table[s, 5] == w0 and table[s, 6] == w1:
                            break
                    elif _same_bytes(data, p, n, data, table[s, 3], n):
                        break
                s = (s + 1) & mask
            table[s, 2] += 1
            if table[s, 0] < 0:
                table[s, 0] = k
                table[s, 1] = hs
                table[s, 3] = p
                table[s, 4] = n
                table[s, 5] = w0
                table[s, 6] = w1
                size += 1
                if size >= stop_size:
                    return r, k + 1, size, False
    return rows, 0, size, True


@kernel
def _count_strings(str_offsets, data, valid, offsets, row_valid, secret):  # pragma: no cover
    # First position of each distinct string among the addressed, valid elements of
    # valid rows, and its count (unordered). Strings of up to 16 bytes are compared
    # through the two words kept in their table row, so a hit reads no string data.
    bits = np.int64(10)  # not a literal: one compiled _string_rows, not two
    table = _string_rows(bits)
    size = 0
    r = 0
    k = offsets[0]
    while True:  # a few rounds: the table doubles between them
        r, k, size, done = _count_strings_run(str_offsets, data, valid, offsets, row_valid,
                                              secret, r, k, table, size,
                                              (1 << bits) // 2 + 1)
        if done:
            break
        bits += 1
        new = _string_rows(bits)
        mask = new.shape[0] - 1
        for i in range(table.shape[0]):
            if table[i, 0] >= 0:
                t = np.int64(_U(table[i, 1]) & _U(mask))
                while new[t, 0] >= 0:
                    t = (t + 1) & mask
                for c in range(table.shape[1]):  # not a slice copy: cheaper to compile
                    new[t, c] = table[i, c]
        table = new
    first = np.empty(size, dtype=np.int64)
    counts = np.empty(size, dtype=np.int64)
    j = 0
    for i in range(table.shape[0]):
        if table[i, 0] >= 0:
            first[j] = table[i, 0]
            counts[j] = table[i, 2]
            j += 1
    return first, counts


# ---------------------------------------------------------------------- lookup
@kernel
def _build_int_table(keys):  # pragma: no cover
    # Table key -> id (position + 2); also the id of the key INT64_MIN (0: absent).
    bits = 4
    while (1 << bits) < 2 * keys.shape[0]:
        bits += 1
    table = _new_table(bits)
    mask = table.shape[0] - 1
    shift = _U(64 - bits)
    free_id = 0
    for i in range(keys.shape[0]):
        x = keys[i]
        if x == _FREE:
            free_id = i + 2
            continue
        s = _slot(x, shift)
        while table[s, 0] != _FREE:
            s = (s + 1) & mask
        table[s, 0] = x
        table[s, 1] = i + 2
    return table, free_id


def _lookup_ints(values, valid, start, table, shift, free_id, missing, out, lo,
                 hi):  # pragma: no cover
    # Elements start + [lo, hi).
    mask = table.shape[0] - 1
    all_valid = valid.shape[0] == 0
    for i in range(lo, hi):
        k = _U(start + i)  # unsigned: no negative-index wraparound code
        if not all_valid and valid[k] == 0:
            out[k] = missing
            continue
        x = np.int64(values[k])
        found = missing
        if x == _FREE:
            if free_id != 0:
                found = free_id
        else:
            s = _slot(x, shift)
            while True:
                key = table[s, 0]
                if key == x:
                    found = table[s, 1]
                    break
                if key == _FREE:
                    break
                s = (s + 1) & mask
        out[k] = found


_LONG = 17  # the length class of strings above 16 bytes in a lookup table row


@kernel
def _build_string_table(str_offsets, data, secret):  # pragma: no cover
    # Open-addressing table over the vocabulary strings, one 32-byte row per slot:
    # (entry | length class << 48, hash, word0, word1); entry -1 = free. The length
    # class is the length up to 16 bytes, else _LONG; the words hold the bytes of a
    # string of up to 16 bytes (zero-padded), so a hit on one reads one row and no
    # string data.
    n = str_offsets.shape[0] - 1
    cap = 16
    while cap < 2 * n:
        cap *= 2
    table = np.zeros((cap, 4), dtype=np.int64)
    table[:, 0] = -1
    for i in range(n):
        p = np.int64(str_offsets[i])
        size = np.int64(str_offsets[i + 1]) - p
        w0 = np.int64(0)
        w1 = np.int64(0)
        if size <= 16:
            h = _xxh3_upto16(data, p, size, _ZERO)
            w0, w1 = _words16(data, p, size)
        else:
            h = _xxh3_above16(data, p, size, _ZERO, secret, secret)
        s = np.int64(h & _U(cap - 1))
        while table[s, 0] >= 0:
            s = (s + 1) & (cap - 1)
        table[s, 0] = np.int64(i) | (min(size, _LONG) << 48)
        table[s, 1] = np.int64(h)
        table[s, 2] = w0
        table[s, 3] = w1
    return table


def _lookup_strings(str_offsets, data, valid, start, voc_offsets, voc_data, table, missing,
                    secret, out, lo, hi):  # pragma: no cover
    # Strings start + [lo, hi).
    mask = table.shape[0] - 1
    all_valid = valid.shape[0] == 0
    low48 = (np.int64(1) << 48) - 1
    for i in range(lo, hi):
        k = _U(start + i)  # unsigned: no negative-index wraparound code
        if not all_valid and valid[k] == 0:
            out[k] = missing
            continue
        p = np.int64(str_offsets[k])
        n = np.int64(str_offsets[k + _U(1)]) - p
        found = missing
        if n <= 16:
            h = np.int64(_xxh3_upto16(data, p, n, _ZERO))
            w0, w1 = _words16(data, p, n)
            s = np.int64(_U(h) & _U(mask))
            while table[s, 0] >= 0:
                if table[s, 1] == h and (table[s, 0] >> 48) == n and table[s, 2] == w0 \
                        and table[s, 3] == w1:
                    found = (table[s, 0] & low48) + 2
                    break
                s = (s + 1) & mask
        else:
            h = np.int64(_xxh3_above16(data, p, n, _ZERO, secret, secret))
            s = np.int64(_U(h) & _U(mask))
            while table[s, 0] >= 0:
                if table[s, 1] == h and (table[s, 0] >> 48) == _LONG:
                    entry = table[s, 0] & low48
                    q = voc_offsets[entry]
                    if _same_bytes(data, p, n, voc_data, q, voc_offsets[entry + 1] - q):
                        found = entry + 2
                        break
                s = (s + 1) & mask
        out[k] = found


_HASH_INTS = parallel_kernel(_hash_ints)
_HASH_STRINGS = parallel_kernel(_hash_strings)
_BUCKETIZE = parallel_kernel(_bucketize)
_LOOKUP_INTS = parallel_kernel(_lookup_ints)
_LOOKUP_STRINGS = parallel_kernel(_lookup_strings)


def _mask(valid: np.ndarray | None) -> np.ndarray:
    return _EMPTY_MASK if valid is None else valid.view(np.uint8)


def hash_ints(values: np.ndarray, start: int, stop: int, seed: int, num_buckets: int,
              out: np.ndarray) -> None:
    """``out[k] = XXH3_64(le_bytes(int64(values[k])), seed) % num_buckets`` for k in range."""
    run(_HASH_INTS, stop - start, stop - start, values, start, int_bitflip(seed),
        *divider(num_buckets), out)


def hash_strings(str_offsets: np.ndarray, data: np.ndarray, start: int, stop: int, seed: int,
                 num_buckets: int, out: np.ndarray) -> None:
    """``out[k] = XXH3_64(bytes of string k, seed) % num_buckets`` for k in range.

    Threads take chunks of about equal cost (strings and bytes), several per thread.
    """
    work = 4 * (stop - start)
    chunks = 4 * threads_for(work)
    bounds = _balanced_bounds(str_offsets, start, stop, chunks)
    run(_HASH_STRINGS, work, chunks, str_offsets, data, bounds, _U(seed), SECRET,
        long_secret(seed), *divider(num_buckets), out)


def bucketize(values: np.ndarray, start: int, stop: int, boundaries: np.ndarray, right: bool,
              out: np.ndarray) -> None:
    """Bucket index of each value (see ``_bucketize``)."""
    run(_BUCKETIZE, stop - start, stop - start, values, start, boundaries, right, out)


def count_ints(values: np.ndarray, valid: np.ndarray | None, offsets: np.ndarray,
               row_valid: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Distinct int64 values of the rows and their counts (unordered).

    Many distinct values are counted by sorting (numpy's sort is vectorised) rather
    than in a hash table that would outgrow the caches.
    """
    keys, counts, done = _count_ints(values, _mask(valid), offsets, _mask(row_valid))
    if done:
        return keys, counts
    total = int(offsets[-1] - offsets[0])
    flat = _gather_ints(values, _mask(valid), offsets, _mask(row_valid), total)
    flat.sort()  # our own copy: sorted in place
    return _run_lengths(flat)  # type: ignore[no-any-return]


def count_strings(str_offsets: np.ndarray, data: np.ndarray, valid: np.ndarray | None,
                  offsets: np.ndarray, row_valid: np.ndarray | None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """First position of each distinct string of the rows and its count (unordered)."""
    return _count_strings(str_offsets, data, _mask(valid), offsets,  # type: ignore[no-any-return]
                          _mask(row_valid), SECRET)


def build_int_table(keys: np.ndarray) -> tuple[np.ndarray, int]:
    """Hash table mapping ``keys[i]`` to id ``i + 2`` (and the id of INT64_MIN, or 0)."""
    table, free_id = _build_int_table(keys)
    return table, int(free_id)


def lookup_ints(values: np.ndarray, valid: np.ndarray | None, start: int, stop: int,
                table: tuple[np.ndarray, int], missing: int, out: np.ndarray) -> None:
    """``out[k]`` = the id of ``values[k]``, or ``missing`` (absent or null)."""
    shift = _U(64 - (table[0].shape[0].bit_length() - 1))
    run(_LOOKUP_INTS, stop - start, stop - start, values, _mask(valid), start, table[0], shift,
        table[1], missing, out)


def order_by_count(counts: np.ndarray) -> np.ndarray:
    """Positions sorted by descending count, ties kept in their order (a stable sort)."""
    if len(counts) == 0:
        return np.empty(0, dtype=np.int64)
    top = int(counts.max())
    if top > 4 * len(counts) + 1024:  # few entries with huge counts: a comparison sort
        return np.argsort(-counts, kind="stable")
    return _order_by_count(counts.astype(np.int64, copy=False), top)  # type: ignore[no-any-return]


def build_string_table(str_offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Hash table mapping vocabulary string ``i`` to id ``i + 2`` (see ``_lookup_strings``)."""
    return _build_string_table(str_offsets, data, SECRET)  # type: ignore[no-any-return]


def lookup_strings(str_offsets: np.ndarray, data: np.ndarray, valid: np.ndarray | None,
                   start: int, stop: int, vocabulary: tuple[np.ndarray, np.ndarray],
                   table: np.ndarray, missing: int, out: np.ndarray) -> None:
    """``out[k]`` = the id of string ``k``, or ``missing`` (absent or null)."""
    run(_LOOKUP_STRINGS, 4 * (stop - start), stop - start, str_offsets, data, _mask(valid),
        start, vocabulary[0], vocabulary[1], table, missing, SECRET, out)
