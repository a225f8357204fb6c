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
from ._jit import balanced_bounds, kernel, parallel_kernel, run, threads_for
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
    # Chunks c in [lo, hi), [bounds[c], bounds[c + 1]) each (see hash_strings). The
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


@numba.njit(cache=True, nogil=True)
def _words16_tail(data, p, n):  # pragma: no cover
    # _words16 for a string within 16 bytes of the end of ``data``: byte by byte.
    w0 = _ZERO
    w1 = _ZERO
    for i in range(n):
        if i < 8:
            w0 = w0 | (_U(data[_U(p + i)]) << _U(8 * i))
        else:
            w1 = w1 | (_U(data[_U(p + i)]) << _U(8 * (i - 8)))
    return w0, w1


@numba.njit(cache=True, nogil=True, inline="always")
def _words16(data, p, n):  # pragma: no cover
    # The bytes of a string of at most 16 bytes as two zero-padded little-endian words.
    # The byte loop near the end of ``data`` is a call, not inlined here: with a loop
    # in the inlined body Numba keeps the reference count updates of its copy of
    # ``data`` (two atomic operations per string, which also stop the probes of
    # successive strings from overlapping), and a kernel looking strings up ran 1.5x
    # as long.
    if p + 16 <= data.shape[0]:
        w0 = _read64(data, p)
        w1 = _read64(data, p + 8)
        if n < 8:
            w0 = w0 & ((_S1 << _U(8 * n)) - _S1)
            w1 = _ZERO
        elif n < 16:
            w1 = w1 & ((_S1 << _U(8 * (n - 8))) - _S1)
    else:
        w0, w1 = _words16_tail(data, p, n)
    return np.int64(w0), np.int64(w1)


# String counting. A table slot is one int64: -1 when free, else the entry's id in
# the low 40 bits and 23 bits of its hash (bits 41-63) above, so a probe that meets
# another string mostly rejects it without reading the entry. Entries are numbered in
# the order they are first seen, one 64-byte row each (hash, first element, byte
# position, length, the two words of a string of up to 16 bytes, count): a hit reads
# one slot and one row, and the frequent strings, seen first, share a few rows.
# Threads split the hash space (the top bits of the hash): each hashes every string
# and counts those of its part, so no two threads hold the same string and their
# entries need no merging.
_ID_BITS = 40
_ID_MASK = (np.int64(1) << _ID_BITS) - 1
_FP_SHIFT = _U(64 - 23)
_E_HASH, _E_FIRST, _E_POS, _E_LEN, _E_W0, _E_W1, _E_COUNT = 0, 1, 2, 3, 4, 5, 6
_PART_BITS = _U(8)  # the hash space is cut into 256 parts


@numba.njit(cache=True, nogil=True, inline="always")
def _slot_entry(h, entry):  # pragma: no cover
    return (np.int64(h >> _FP_SHIFT) << _ID_BITS) | entry


@numba.njit(cache=True, nogil=True)
def _count_strings_run(str_offsets, data, valid, offsets, row_valid, secret, part_lo, part_hi,
                       r0, k0, table, entries, size, stop_size):  # pragma: no cover
    # Count the strings whose hash part is in [part_lo, part_hi), from row r0, element
    # k0, until every element is in or there are ``stop_size`` entries; returns (row,
    # element to resume at, size, done). The table and entries are arguments, never
    # reassigned here: a loop that may replace its arrays cannot keep their pointers in
    # registers and runs several times slower.
    rows = offsets.shape[0] - 1
    all_valid = valid.shape[0] == 0
    all_rows = row_valid.shape[0] == 0
    all_parts = part_lo == 0 and part_hi == (1 << _PART_BITS)
    mask = table.shape[0] - 1
    part_shift = _U(64) - _PART_BITS
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
            else:
                h = _xxh3_above16(data, p, n, _ZERO, secret, secret)
            if not all_parts:
                part = np.int64(h >> part_shift)
                if part < part_lo or part >= part_hi:
                    continue
            if n <= 16:
                w0, w1 = _words16(data, p, n)
            hs = np.int64(h)
            probe = _slot_entry(h, 0)
            s = np.int64(h & _U(mask))
            while True:
                e = table[s]
                if e < 0:
                    table[s] = probe | size
                    entries[size, _E_HASH] = hs
                    entries[size, _E_FIRST] = k
                    entries[size, _E_POS] = p
                    entries[size, _E_LEN] = n
                    entries[size, _E_W0] = w0
                    entries[size, _E_W1] = w1
                    entries[size, _E_COUNT] = 1
                    size += 1
                    if size >= stop_size:
                        return r, k + 1, size, False
                    break
                if (e & ~_ID_MASK) == probe:
                    j = e & _ID_MASK
                    if entries[j, _E_LEN] == n and entries[j, _E_HASH] == hs:
                        if n <= 16:
                            same = entries[j, _E_W0] == w0 and entries[j, _E_W1] == w1
                        else:
                            same = _same_bytes(data, p, n, data, entries[j, _E_POS], n)
                        if same:
                            entries[j, _E_COUNT] += 1
                            break
                s = (s + 1) & mask
    return rows, 0, size, True


#: Past this many distinct strings, counting partitions the strings first (see
#: _count_partitioned): a bigger table no longer fits the caches.
_DIRECT_LIMIT = 1 << 16
_SUB_BITS = _U(7)  # groups of the partitioned count, within a thread's part
_KEY_BITS = 56      # a record's element id; its length class (0-16, 17: longer) above


@numba.njit(cache=True, nogil=True)
def _string_records(str_offsets, data, valid, offsets, row_valid, secret, part_lo,
                    part_hi):  # pragma: no cover
    # (hash, word0, word1, element | length class << 56) of each counted string whose
    # hash part is in [part_lo, part_hi), grouped by the next _SUB_BITS bits of the hash
    # (in element order within a group), and where each group starts.
    rows = offsets.shape[0] - 1
    all_valid = valid.shape[0] == 0
    all_rows = row_valid.shape[0] == 0
    part_shift = _U(64) - _PART_BITS
    sub_shift = _U(64) - _PART_BITS - _SUB_BITS
    subs = 1 << _SUB_BITS
    found = np.empty((offsets[rows] - offsets[0], 2), dtype=np.int64)  # (hash, element)
    starts = np.zeros(subs + 1, dtype=np.int64)
    m = 0
    for r in range(rows):
        if not all_rows and row_valid[r] == 0:
            continue
        for k in range(offsets[r], offsets[r + 1]):
            if not all_valid and valid[k] == 0:
                continue
            p = np.int64(str_offsets[k])
            n = np.int64(str_offsets[k + 1]) - p
            if n <= 16:
                h = _xxh3_upto16(data, p, n, _ZERO)
            else:
                h = _xxh3_above16(data, p, n, _ZERO, secret, secret)
            part = np.int64(h >> part_shift)
            if part < part_lo or part >= part_hi:
                continue
            found[m, 0] = np.int64(h)
            found[m, 1] = k
            starts[np.int64((h >> sub_shift) & _U(subs - 1)) + 1] += 1
            m += 1
    for g in range(subs):
        starts[g + 1] += starts[g]
    records = np.empty((m, 4), dtype=np.int64)
    fill = starts[:subs].copy()
    for i in range(m):  # the elements in order: their bytes are read front to back
        h = found[i, 0]
        k = found[i, 1]
        p = np.int64(str_offsets[k])
        n = np.int64(str_offsets[k + 1]) - p
        w0 = np.int64(0)
        w1 = np.int64(0)
        if n <= 16:
            w0, w1 = _words16(data, p, n)
        g = np.int64((_U(h) >> sub_shift) & _U(subs - 1))
        t = fill[g]
        fill[g] = t + 1
        records[t, 0] = h
        records[t, 1] = w0
        records[t, 2] = w1
        records[t, 3] = k | (min(n, _LONG) << _KEY_BITS)
    return records, starts


@numba.njit(cache=True, nogil=True)
def _count_group(records, a, b, str_offsets, data, table, slots, firsts, counts,
                 size):  # pragma: no cover
    # Count records [a, b) (one group) into entries size, size + 1, ... (first record,
    # count); the table (all free) is cleared again before returning. Returns the new
    # size, or -1 when the table would be more than half full.
    mask = table.shape[0] - 1
    limit = table.shape[0] // 2
    start = size
    key_mask = (np.int64(1) << _KEY_BITS) - 1
    for i in range(a, b):
        h = records[i, 0]
        s = np.int64(_U(h) & _U(mask))
        while True:
            e = table[s]
            if e < 0:
                if size - start >= limit:
                    for j in range(start, size):
                        table[slots[j]] = -1
                    return -1
                table[s] = size
                slots[size] = s
                firsts[size] = i
                counts[size] = 1
                size += 1
                break
            f = firsts[e]
            if records[f, 0] == h and records[f, 1] == records[i, 1] and \
                    records[f, 2] == records[i, 2] and \
                    (records[f, 3] >> _KEY_BITS) == (records[i, 3] >> _KEY_BITS):
                if (records[i, 3] >> _KEY_BITS) < _LONG:
                    counts[e] += 1
                    break
                k = records[i, 3] & key_mask
                q = records[f, 3] & key_mask
                if _same_bytes(data, np.int64(str_offsets[k]),
                               np.int64(str_offsets[k + 1]) - np.int64(str_offsets[k]),
                               data, np.int64(str_offsets[q]),
                               np.int64(str_offsets[q + 1]) - np.int64(str_offsets[q])):
                    counts[e] += 1
                    break
            s = (s + 1) & mask
    for j in range(start, size):
        table[slots[j]] = -1
    return size


@numba.njit(cache=True, nogil=True)
def _count_partitioned(str_offsets, data, valid, offsets, row_valid, secret, part_lo,
                       part_hi):  # pragma: no cover
    # The result of _count_strings for many distinct strings: the strings of the part
    # are first grouped by their hash (sequential writes), then each group is counted
    # in a small table that stays in the caches.
    records, starts = _string_records(str_offsets, data, valid, offsets, row_valid, secret,
                                      part_lo, part_hi)
    m = records.shape[0]
    firsts = np.empty(m, dtype=np.int64)
    counts = np.empty(m, dtype=np.int64)
    slots = np.empty(m, dtype=np.int64)
    table = np.full(1 << 11, -1, dtype=np.int64)
    size = 0
    for g in range(starts.shape[0] - 1):
        while True:
            grown = _count_group(records, starts[g], starts[g + 1], str_offsets, data, table,
                                 slots, firsts, counts, size)
            if grown >= 0:
                size = grown
                break
            table = np.full(2 * table.shape[0], -1, dtype=np.int64)
    key_mask = (np.int64(1) << _KEY_BITS) - 1
    out = np.empty(size, dtype=np.int64)
    for j in range(size):
        out[j] = records[firsts[j], 3] & key_mask
    return out, counts[:size].copy()


def _count_strings(str_offsets, data, valid, offsets, row_valid, secret, parts, lo,
                   hi):  # pragma: no cover
    # First position of each distinct string among the addressed, valid elements of
    # valid rows whose hash part (of ``parts``) is in [lo, hi), and its count (in the
    # order first seen). Strings of up to 16 bytes are compared through the two words
    # of their entry, so a hit reads no string data. Past _DIRECT_LIMIT distinct
    # strings, all is counted again by _count_partitioned.
    cap = np.int64(1 << 10)
    table = np.full(cap, -1, dtype=np.int64)
    entries = np.empty((cap // 2 + 1, 8), dtype=np.int64)
    size = 0
    r = 0
    k = offsets[0]
    part_lo = (lo << _PART_BITS) // parts
    part_hi = (hi << _PART_BITS) // parts
    while True:  # a few rounds: the table doubles between them
        r, k, size, done = _count_strings_run(str_offsets, data, valid, offsets, row_valid,
                                              secret, part_lo, part_hi, r, k, table, entries,
                                              size, min(cap // 2, _DIRECT_LIMIT) + 1)
        if done:
            break
        if size > _DIRECT_LIMIT:
            return _count_partitioned(str_offsets, data, valid, offsets, row_valid, secret,
                                      part_lo, part_hi)
        cap *= 2
        table = np.full(cap, -1, dtype=np.int64)
        mask = cap - 1
        for j in range(size):
            h = _U(entries[j, _E_HASH])
            s = np.int64(h & _U(mask))
            while table[s] >= 0:
                s = (s + 1) & mask
            table[s] = _slot_entry(h, j)
        grown = np.empty((cap // 2 + 1, 8), dtype=np.int64)
        for j in range(size):
            for c in range(7):  # not a slice copy: cheaper to compile
                grown[j, c] = entries[j, c]
        entries = grown
    return entries[:size, _E_FIRST].copy(), entries[:size, _E_COUNT].copy()


@numba.njit(cache=True, nogil=True, inline="always")
def _word_be(data, p, n, at):  # pragma: no cover
    # Bytes [at, at + 8) of the string at p (n bytes) as a big-endian word,
    # zero-padded: words compare as the bytes do.
    q = p + at
    rem = n - at
    if rem <= 0:
        return _ZERO
    if q + 8 <= data.shape[0]:
        w = _swap64(_read64(data, q))
        if rem < 8:
            w = w & ~((_S1 << _U(64 - 8 * rem)) - _S1)
        return w
    w = _ZERO
    for i in range(min(rem, 8)):
        w = w | (_U(data[_U(q + i)]) << _U(56 - 8 * i))
    return w


@numba.njit(cache=True, nogil=True)
def _before(offsets, data, a, b, at):  # pragma: no cover
    # Whether string a's bytes from ``at`` on sort before string b's.
    pa_ = np.int64(offsets[a])
    pb = np.int64(offsets[b])
    na = np.int64(offsets[a + 1]) - pa_
    nb = np.int64(offsets[b + 1]) - pb
    for i in range(at, min(na, nb)):
        if data[pa_ + i] != data[pb + i]:
            return data[pa_ + i] < data[pb + i]
    return na < nb


@numba.njit(cache=True, nogil=True)
def _radix_argsort(keys):  # pragma: no cover
    # (order, keys[order]) of uint64 keys: a stable LSD radix sort on 11-bit digits; a
    # digit every key shares is skipped.
    m = keys.shape[0]
    order = np.arange(m)
    out_order = np.empty(m, dtype=np.int64)
    out_keys = np.empty(m, dtype=np.uint64)
    keys = keys.copy()
    counts = np.empty(2048, dtype=np.int64)
    for shift in range(0, 64, 11):
        sh = _U(shift)
        counts[:] = 0
        for i in range(m):
            counts[np.int64((keys[i] >> sh) & _U(2047))] += 1
        if m == 0 or counts[np.int64((keys[0] >> sh) & _U(2047))] == m:
            continue
        total = 0
        for d in range(2048):
            c = counts[d]
            counts[d] = total
            total += c
        for i in range(m):
            d = np.int64((keys[i] >> sh) & _U(2047))
            t = counts[d]
            counts[d] = t + 1
            out_order[t] = order[i]
            out_keys[t] = keys[i]
        order, out_order = out_order, order
        keys, out_keys = out_keys, keys
    return order, keys


@kernel
def _sort_strings(offsets, data):  # pragma: no cover
    # Positions of the distinct strings i (bytes offsets[i]:offsets[i + 1] of data) in
    # ascending byte order (a shorter string before the longer ones it starts). The
    # bytes every string starts with are skipped; then a sort on the next 8 bytes as a
    # big-endian word, and each run of equal words sorted by what is left of its
    # strings (0 to 8 bytes: they end here, in that order; more: by the next word;
    # a short run: by comparing the bytes).
    m = offsets.shape[0] - 1
    base = np.int64(offsets[1] - offsets[0]) if m > 0 else np.int64(0)
    p0 = np.int64(offsets[0]) if m > 0 else np.int64(0)
    for i in range(1, m):
        p = np.int64(offsets[i])
        same = min(base, np.int64(offsets[i + 1]) - p)
        t = 0
        while t < same and data[p + t] == data[p0 + t]:
            t += 1
        base = t
    words = np.empty(m, dtype=np.uint64)
    for i in range(m):
        words[i] = _word_be(data, np.int64(offsets[i]), np.int64(offsets[i + 1] - offsets[i]),
                            base)
    order, words = _radix_argsort(words)
    stack = [(np.int64(0), np.int64(m), base)]
    while len(stack):
        a, b, at = stack.pop()
        i = a
        while i < b:
            j = i + 1
            while j < b and words[j] == words[i]:
                j += 1
            if j - i <= 16:  # a short run (or one string): insertion sort on the bytes
                for t in range(i + 1, j):
                    o = order[t]
                    u = t
                    while u > i and _before(offsets, data, o, order[u - 1], at):
                        order[u] = order[u - 1]
                        u -= 1
                    order[u] = o
            else:  # order the run by the bytes left after this word
                left = np.empty(j - i, dtype=np.int64)
                for t in range(i, j):
                    o = order[t]
                    left[t - i] = min(np.int64(offsets[o + 1] - offsets[o]) - at, 9)
                by_left = np.argsort(left, kind="mergesort")
                order[i:j] = order[i:j][by_left]
                more = i
                while more < j and left[by_left[more - i]] < 9:
                    more += 1
                if j - more > 1:  # those with more than 8 bytes left: the next word
                    for t in range(more, j):
                        o = order[t]
                        words[t] = _word_be(data, np.int64(offsets[o]),
                                            np.int64(offsets[o + 1] - offsets[o]), at + 8)
                    by_word = np.argsort(words[more:j])
                    order[more:j] = order[more:j][by_word]
                    words[more:j] = words[more:j][by_word]
                    stack.append((more, j, at + 8))
            i = j
    return order


@kernel
def _gather_strings(str_offsets, data, positions):  # pragma: no cover
    # The strings at ``positions`` as int64 offsets (from 0) and their bytes.
    m = positions.shape[0]
    out_offsets = np.empty(m + 1, dtype=np.int64)
    out_offsets[0] = 0
    for i in range(m):
        k = positions[i]
        out_offsets[i + 1] = out_offsets[i] + (np.int64(str_offsets[k + 1])
                                               - np.int64(str_offsets[k]))
    out = np.empty(out_offsets[m], dtype=np.uint8)
    for i in range(m):
        k = positions[i]
        p = np.int64(str_offsets[k])
        q = out_offsets[i]
        for t in range(out_offsets[i + 1] - q):
            out[q + t] = data[p + t]
    return out_offsets, out


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
_COUNT_STRINGS = parallel_kernel(_count_strings)


def _mask(valid: np.ndarray | None) -> np.ndarray:
    return _EMPTY_MASK if valid is None else valid.view(np.uint8)


def hash_ints(values: np.ndarray, start: int, stop: int, seed: int, num_buckets: int,
              out: np.ndarray) -> None:
    """``out[k] = XXH3_64(le_bytes(int64(values[k])), seed) % num_buckets`` for k in range."""
    run(_HASH_INTS, stop - start, stop - start, values, start, int_bitflip(seed),
        *divider(num_buckets), out)


#: What hashing a string costs beside its bytes (the short path's set-up), in bytes.
_STRING_COST = 16


def hash_strings(str_offsets: np.ndarray, data: np.ndarray, start: int, stop: int, seed: int,
                 num_buckets: int, out: np.ndarray) -> None:
    """``out[k] = XXH3_64(bytes of string k, seed) % num_buckets`` for k in range.

    Threads take chunks of about equal cost (strings and bytes), several per thread.
    """
    work = 4 * (stop - start)
    chunks = 4 * threads_for(work)
    bounds = balanced_bounds(str_offsets, start, stop, chunks, _STRING_COST)
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
    """First position of each distinct string of the rows and its count (unordered).

    Threads count the strings of their own part of the hash space (see
    ``_count_strings``).
    """
    work = int(offsets[-1] - offsets[0])
    parts = threads_for(work)
    found = run(_COUNT_STRINGS, work, parts, str_offsets, data, _mask(valid), offsets,
                _mask(row_valid), SECRET, parts)
    if len(found) == 1:
        return found[0]  # type: ignore[no-any-return]
    return (np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found]))


def order_strings(str_offsets: np.ndarray, data: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Positions of distinct strings by descending count, ties by ascending bytes.

    String ``i`` is ``data[str_offsets[i]:str_offsets[i + 1]]``. Host only: strings
    live in Arrow's host buffers (not in ``__all__``, which lists the kernels with a
    CUDA twin).
    """
    if len(counts) == 0:
        return np.empty(0, dtype=np.int64)
    by_value = _sort_strings(str_offsets, data)
    return by_value[order_by_count(counts[by_value])]  # type: ignore[no-any-return]


def gather_strings(str_offsets: np.ndarray, data: np.ndarray, positions: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Return the strings at ``positions``: int64 offsets from 0 and their bytes (host only)."""
    return _gather_strings(str_offsets, data,  # type: ignore[no-any-return]
                           positions.astype(np.int64, copy=False))


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
