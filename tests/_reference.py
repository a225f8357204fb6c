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


def multi_hot(rows: list[Any], num_columns: int, weight: Any) -> list[list[float]]:
    """Dense ``[rows, num_columns]``: each id ``x`` of a row adds ``weight(x)``.

    Null rows and null ids (None) add nothing.
    """
    dense = [[0.0] * num_columns for _ in rows]
    for r, row in enumerate(rows):
        for x in row or []:
            if x is not None:
                dense[r][x] += weight(x)
    return dense


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


# ------------------------------------------------- jagged arithmetic (elementwise.py)
def map_rows(fn: Any, *row_lists: list[Any]) -> list[Any]:
    """Elementwise ``fn`` over rows of the first list's structure (None = null row / element).

    Rows of the later lists may be longer (padded operands): their extra elements are unused.
    """
    def walk(*items: Any) -> Any:
        if any(item is None for item in items):
            return None
        if isinstance(items[0], list):
            return [walk(*parts) for parts in zip(*items, strict=False)]
        return fn(*items)
    return [walk(*rows) for rows in zip(*row_lists, strict=True)]


def softmax_rows(rows: list[Any], max_length: int | None = None) -> list[Any]:
    """Softmax of each row (scalars or vectors: per column); None elements stay None."""
    import math

    def one(row: list[Any]) -> list[Any]:
        n = len(row) if max_length is None else min(len(row), max_length)
        vector = any(isinstance(x, list) for x in row)
        width = len(next(x for x in row if x is not None)) if vector and any(row) else 1
        out: list[Any] = [[0.0] * width if vector else 0.0 for _ in row]
        for d in range(width):
            col = [(row[k][d] if vector else row[k]) if row[k] is not None else None
                   for k in range(n)]
            present = [x for x in col if x is not None]
            if not present:
                continue
            top = max(present)
            total = sum(math.exp(x - top) for x in present)
            for k, x in enumerate(col):
                if x is not None:
                    if vector:
                        out[k][d] = math.exp(x - top) / total
                    else:
                        out[k] = math.exp(x - top) / total
        return [None if x is None else o for x, o in zip(row, out, strict=True)]
    return [None if row is None else one(row) for row in rows]


def cumsum_rows(rows: list[Any], exclusive: bool) -> list[Any]:
    """Running sum of each row of scalars; None elements add nothing and stay None."""
    out: list[Any] = []
    for row in rows:
        if row is None:
            out.append(None)
            continue
        acc, new = 0, []
        for x in row:
            if x is None:
                new.append(None)
                continue
            new.append(acc if exclusive else acc + x)
            acc += x
        out.append(new)
    return out


def index_select_rows(rows: list[Any], ids: list[int]) -> list[Any]:
    return [rows[i] for i in ids]  # Python's negative indexing is the documented wrap


def slice_rows(rows: list[Any], start: int | None, stop: int | None) -> list[Any]:
    return [None if row is None else row[start:stop] for row in rows]


def unique_rows(rows: list[Any]) -> list[Any]:
    """Sorted distinct non-null values of each row; NaNs count once and sort last."""
    import math

    out: list[Any] = []
    for row in rows:
        if row is None:
            out.append(None)
            continue
        present = [x for x in row if x is not None]
        nans = [x for x in present if isinstance(x, float) and math.isnan(x)]
        out.append(sorted({x for x in present if x not in nans or not nans}
                          - set(nans)) + nans[:1])
    return out


def repeat_rows(x: list[Any], rows: list[Any]) -> list[Any]:
    """Row r of ``rows`` (nested or not) with every leaf replaced by ``x[r]``."""
    def fill(node: Any, value: Any) -> Any:
        if node is None:
            return None
        return [fill(child, value) if isinstance(child, list) or child is None and False
                else value for child in node]
    return [fill(row, value) for row, value in zip(rows, x, strict=True)]


def jagged_dense_elementwise(values: list[Any], offsets_list: list[list[int]],
                             dense: list[Any], op: Any, zero: Any) -> list[Any]:
    """FBGEMM jagged (op) dense -> values: each element meets the dense value at its
    padded position, or ``zero`` outside the dense; unaddressed values meet ``zero``."""
    read = dense_to_jagged(dense, offsets_list, zero, zero)
    first = offsets_list[-1][0]
    out = []
    for k, x in enumerate(values):
        other = read[k] if first <= k < len(read) else zero
        if isinstance(x, list):
            other = other if isinstance(other, list) else [other] * len(x)
            out.append([op(a, b) for a, b in zip(x, other, strict=True)])
        else:
            out.append(op(x, other))
    return out


def jagged_dense_bmm(rows: list[Any], dense: list[Any], max_length: int | None) -> list[Any]:
    """Row b: each vector (of its first max_length) times the matrix dense[b]; the rest 0."""
    out = []
    for b, row in enumerate(rows):
        mat = dense[b]
        width = len(mat[0]) if mat else 0
        new = []
        for i, vec in enumerate(row or []):
            if row is None or (max_length is not None and i >= max_length):
                new.append([0] * width)
            else:
                new.append([sum(vec[k] * mat[k][m] for k in range(len(vec)))
                            for m in range(width)])
        out.append(None if row is None else new)
    return out


def jagged_jagged_bmm(xrows: list[Any], yrows: list[Any], m: int, n: int,
                      max_length: int | None) -> list[Any]:
    """Per row sum over its elements l of outer(x[l], y[l]); null rows give zeros."""
    out = []
    for xr, yr in zip(xrows, yrows, strict=True):
        acc = [[0] * n for _ in range(m)]
        if xr is not None and yr is not None:
            count = len(xr) if max_length is None else min(len(xr), max_length)
            for lpos in range(count):
                for i in range(m):
                    for c in range(n):
                        acc[i][c] += xr[lpos][i] * yr[lpos][c]
        out.append(acc)
    return out


# ------------------------------------------------- feature transforms (transforms.py)
# XXH3-64 (xxHash's XXH3_64bits_withSeed, v0.8), written with Python integers from the
# reference implementation (github.com/Cyan4973/xxHash, xxhash.h), independently of
# the Numba kernel; checked against xxHash's published test vectors in the tests.
_M64 = (1 << 64) - 1
_P32_1, _P32_2, _P32_3 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D
_P64_1, _P64_2, _P64_3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_P64_4, _P64_5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5
_XXH3_SECRET = bytes.fromhex(  # XXH3_kSecret
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
    "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
    "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
    "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
    "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e")


def _le(b: bytes, i: int, size: int = 8) -> int:
    return int.from_bytes(b[i:i + size], "little")


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _byteswap(x: int, size: int) -> int:
    return int.from_bytes(x.to_bytes(size, "little"), "big")


def _fold(a: int, b: int) -> int:
    product = a * b
    return (product & _M64) ^ (product >> 64)


def _xxh64_avalanche(h: int) -> int:
    h = ((h ^ (h >> 33)) * _P64_2) & _M64
    h = ((h ^ (h >> 29)) * _P64_3) & _M64
    return h ^ (h >> 32)


def _xxh3_avalanche(h: int) -> int:
    h = ((h ^ (h >> 37)) * 0x165667919E3779F9) & _M64
    return h ^ (h >> 32)


def _rrmxmx(h: int, n: int) -> int:
    h ^= _rotl(h, 49) ^ _rotl(h, 24)
    h = (h * 0x9FB21C651E98DF25) & _M64
    h ^= (h >> 35) + n
    h = (h * 0x9FB21C651E98DF25) & _M64
    return h ^ (h >> 28)


def _mix16(data: bytes, i: int, secret: bytes, j: int, seed: int) -> int:
    return _fold(_le(data, i) ^ ((_le(secret, j) + seed) & _M64),
                 _le(data, i + 8) ^ ((_le(secret, j + 8) - seed) & _M64))


def xxh3_64(data: bytes, seed: int = 0) -> int:
    """XXH3-64 of ``data`` with a 64-bit ``seed`` (``XXH3_64bits_withSeed``)."""
    s = _XXH3_SECRET
    n = len(data)
    if n == 0:
        return _xxh64_avalanche(seed ^ _le(s, 56) ^ _le(s, 64))
    if n <= 3:
        combined = (data[0] << 16) | (data[n >> 1] << 24) | data[n - 1] | (n << 8)
        return _xxh64_avalanche(combined ^ (((_le(s, 0, 4) ^ _le(s, 4, 4)) + seed) & _M64))
    if n <= 8:
        seed ^= _byteswap(seed & 0xFFFFFFFF, 4) << 32
        keyed = (_le(data, n - 4, 4) + (_le(data, 0, 4) << 32)) \
            ^ (((_le(s, 8) ^ _le(s, 16)) - seed) & _M64)
        return _rrmxmx(keyed, n)
    if n <= 16:
        lo = _le(data, 0) ^ (((_le(s, 24) ^ _le(s, 32)) + seed) & _M64)
        hi = _le(data, n - 8) ^ (((_le(s, 40) ^ _le(s, 48)) - seed) & _M64)
        return _xxh3_avalanche((n + _byteswap(lo, 8) + hi + _fold(lo, hi)) & _M64)
    if n <= 128:
        acc = n * _P64_1
        for i in range((n - 1) // 32 + 1):
            acc += _mix16(data, 16 * i, s, 32 * i, seed)
            acc += _mix16(data, n - 16 * (i + 1), s, 32 * i + 16, seed)
        return _xxh3_avalanche(acc & _M64)
    if n <= 240:
        acc = n * _P64_1
        for i in range(8):
            acc += _mix16(data, 16 * i, s, 16 * i, seed)
        acc = _xxh3_avalanche(acc & _M64)
        for i in range(8, n // 16):
            acc += _mix16(data, 16 * i, s, 16 * (i - 8) + 3, seed)
        acc += _mix16(data, n - 16, s, 136 - 17, seed)
        return _xxh3_avalanche(acc & _M64)
    # Long inputs: the seed goes into a derived secret; 64-byte stripes feed 8 lanes.
    if seed:
        s = b"".join(((_le(s, 16 * i) + seed) & _M64).to_bytes(8, "little")
                     + ((_le(s, 16 * i + 8) - seed) & _M64).to_bytes(8, "little")
                     for i in range(len(s) // 16))
    lanes = [_P32_3, _P64_1, _P64_2, _P64_3, _P64_4, _P32_2, _P64_5, _P32_1]

    def accumulate(pos: int, spos: int) -> None:
        for lane in range(8):
            value = _le(data, pos + 8 * lane)
            key = value ^ _le(s, spos + 8 * lane)
            lanes[lane ^ 1] = (lanes[lane ^ 1] + value) & _M64
            lanes[lane] = (lanes[lane] + (key & 0xFFFFFFFF) * (key >> 32)) & _M64

    stripes_per_block = (len(s) - 64) // 8
    block = 64 * stripes_per_block
    blocks = (n - 1) // block
    for b in range(blocks):
        for stripe in range(stripes_per_block):
            accumulate(b * block + 64 * stripe, 8 * stripe)
        for lane in range(8):
            a = lanes[lane]
            a = (a ^ (a >> 47)) ^ _le(s, len(s) - 64 + 8 * lane)
            lanes[lane] = (a * _P32_1) & _M64
    for stripe in range(((n - 1) - block * blocks) // 64):
        accumulate(blocks * block + 64 * stripe, 8 * stripe)
    accumulate(n - 64, len(s) - 64 - 7)
    result = n * _P64_1
    for i in range(4):
        result += _fold(lanes[2 * i] ^ _le(s, 11 + 16 * i), lanes[2 * i + 1] ^ _le(s, 19 + 16 * i))
    return _xxh3_avalanche(result & _M64)


def value_bytes(x: Any) -> bytes:
    """The bytes hash_bucket hashes: UTF-8 of a str, a bytes object, or 8 LE int64 bytes."""
    if isinstance(x, str):
        return x.encode("utf-8")
    if isinstance(x, bytes):
        return x
    return (int(x) & _M64).to_bytes(8, "little")


def map_leaves(rows: Any, f: Any) -> Any:
    """Apply ``f`` to every non-null scalar of nested rows (None stays None)."""
    if rows is None:
        return None
    if isinstance(rows, list):
        return [map_leaves(r, f) for r in rows]
    return f(rows)


def leaves(rows: Any) -> list[Any]:
    """Non-null scalars of nested rows, in order (null rows and null elements skipped)."""
    out: list[Any] = []
    for r in rows:
        if isinstance(r, list):
            out.extend(leaves(r))
        elif r is not None:
            out.append(r)
    return out


def hash_bucket(rows: Any, num_buckets: int, seed: int = 0) -> Any:
    return map_leaves(rows, lambda x: xxh3_64(value_bytes(x), seed) % num_buckets)


def bucketize(x: Any, boundaries: list[Any], right: bool = False) -> int:
    """np.digitize: the number of boundaries <= x (right=False) or < x (right=True)."""
    if x != x:
        return len(boundaries)
    return sum(1 for b in boundaries if (b < x if right else b <= x))


def _order_key(item: tuple[Any, int]) -> tuple[int, Any]:
    value, count = item
    return (-count, value_bytes(value) if isinstance(value, str) else value)


def value_counts(rows: Any) -> list[tuple[Any, int]]:
    """(value, count) of the non-null leaves, by descending count then ascending value."""
    counts: dict[Any, int] = {}
    for x in leaves(rows):
        counts[x] = counts.get(x, 0) + 1
    return sorted(counts.items(), key=_order_key)


def fit_vocabulary(rows: Any, freq_threshold: int = 1,
                   max_size: int | None = None) -> list[tuple[Any, int]]:
    kept = [item for item in value_counts(rows) if item[1] >= freq_threshold]
    return kept if max_size is None else kept[:max_size]


def categorify(rows: Any, vocabulary: list[Any]) -> Any:
    """Ids: vocabulary[k] -> k + 2; null elements and unknown values -> 1."""
    ids = {value: k + 2 for k, value in enumerate(vocabulary)}

    def encode(row: Any) -> Any:
        if row is None:
            return None
        return [encode(x) if isinstance(x, list) else 1 if x is None else ids.get(x, 1)
                for x in row]
    return [encode(row) for row in rows]


def pad_or_truncate(rows: list[Any], length: int, pad: Any, side: str,
                    null_row: Any = None) -> list[Any]:
    """side="right": keep the first ``length`` and pad after; "left": keep the last, pad before.

    A null row gives ``null_row``; null elements stay None.
    """
    out = []
    for row in rows:
        if row is None:
            out.append(null_row)
        elif side == "right":
            kept = row[:length]
            out.append(kept + [pad] * (length - len(kept)))
        else:
            kept = row[max(len(row) - length, 0):]
            out.append([pad] * (length - len(kept)) + kept)
    return out


def drop_nulls(rows: list[Any]) -> list[Any]:
    return [None if row is None else [x for x in row if x is not None] for row in rows]


def fill_null(rows: list[Any], value: Any, empty_null_rows: bool = False) -> list[Any]:
    return [([] if empty_null_rows else None) if row is None
            else [value if x is None else x for x in row] for row in rows]


def length_stats(rows: list[Any]) -> dict[str, Any]:
    """Row-length statistics; percentiles by nearest rank over the non-null rows."""
    lengths = sorted(len(row) for row in rows if row is not None)

    def rank(q: int) -> Any:
        if not lengths:
            return None
        k = max(-(-q * len(lengths) // 100), 1)  # ceil(q * n / 100), at least 1
        return lengths[k - 1]

    return {
        "rows": len(rows),
        "null_rows": sum(1 for row in rows if row is None),
        "empty_rows": sum(1 for row in rows if row == []),
        "total_values": sum(lengths),
        "null_values": sum(1 for row in rows if row is not None for x in row if x is None),
        "min": lengths[0] if lengths else None,
        "p50": rank(50),
        "p90": rank(90),
        "p99": rank(99),
        "max": lengths[-1] if lengths else None,
    }
