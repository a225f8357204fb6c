// Feature transforms: CUDA twins of the kernels of arrow_sparse/kernels/cpu/transforms.py
// (XXH3 hashing into buckets, bucketize, counting, vocabulary tables and lookups),
// padding.py (pad_or_truncate, kept_lengths, compact) and keyed.py (block_bucketize),
// same arguments and results; see those modules' docstrings. Element positions are
// logical (Arrow's array offset applied; hash_ints and bucketize get views starting at
// the first addressed element); a validity argument is a byte mask (1 = valid) of which
// an empty one means all valid.
//
// Hashes are XXH3-64 (xxHash v0.8, XXH3_64bits_withSeed), ported function by function
// from the CPU helpers: integers as their 8 little-endian bytes, strings straight from
// Arrow's offsets and data buffers, one thread per string. Buckets are h % n through the
// same libdivide constants as the CPU (the launcher passes kernels/xxh3.divider).
// Every hash and bucket is bit-identical to the CPU's.
//
// Hash tables are built in parallel by ordered linear probing (Amble & Knuth 1974;
// Shun & Blelloch's phase-concurrent deterministic tables, 2014): along its probe path
// an item takes a slot from an item of lower priority with atomicCAS and carries that
// one on. The occupant of a slot only ever gains priority, so the final layout is the
// one sequential linear probing gives when items are inserted in priority order,
// whatever the thread order. With priority = index (vocabulary tables) that is exactly
// the table the CPU builds; the counting table orders distinct strings by (hash, length,
// bytes). Lookups probe the finished table read-only.
//
// Device checks (the host has checked all of them, or built the tables): string
// offsets outside the data buffer, offsets going backwards or past the values, unsorted
// boundaries, a table without a free slot, a table entry outside the vocabulary, a
// bucket outside my_size and an output position outside the output are recorded in the
// error word and the offending item skipped.

enum AspTransformsError {
    ASP_TRANSFORMS_STRING_RANGE = 1,  // message: IndexError: string offsets out of range of the data buffer
    ASP_TRANSFORMS_OFFSETS_ORDER = 2,  // message: offsets not non-decreasing
    ASP_TRANSFORMS_ELEMENT_RANGE = 3,  // message: IndexError: offsets out of range of the values
    ASP_TRANSFORMS_BOUNDARY_ORDER = 4,  // message: boundaries must be non-decreasing and not NaN
    ASP_TRANSFORMS_TABLE_FULL = 5,  // message: hash table has no free slot (not a table of build_int_table or build_string_table)
    ASP_TRANSFORMS_TABLE_ENTRY = 6,  // message: IndexError: hash table entry out of range of the vocabulary
    ASP_TRANSFORMS_BUCKET_RANGE = 7,  // message: IndexError: bucket out of range of my_size (block sizes or thresholds wrong)
    ASP_TRANSFORMS_POSITION_RANGE = 8,  // message: IndexError: output position out of range of the output
    ASP_TRANSFORMS_NULL_ROW_VALUES = 9,  // message: validity marks a row with values as null (null rows are empty)
};

typedef unsigned long long asp_u64;

#define ASP_INT64_MIN (-9223372036854775807LL - 1LL)
// A free slot of the tables being built: above every item index.
#define ASP_SLOT_FREE 0xFFFFFFFFFFFFFFFFULL

// A slot of a table other threads are writing: read past the (incoherent) L1 cache.
__device__ __forceinline__ asp_u64 asp_load_slot(const asp_u64* slot) {
    return *(const volatile asp_u64*)slot;
}

// ------------------------------------------------------------------------------ XXH3
// XXH3's default 192-byte secret (XXH3_kSecret) as 24 little-endian words.
__device__ const asp_u64 asp_xxh3_kw[24] = {
    0xBE4BA423396CFEB8ULL, 0x1CAD21F72C81017CULL, 0xDB979083E96DD4DEULL,
    0x1F67B3B7A4A44072ULL, 0x78E5C0CC4EE679CBULL, 0x2172FFCC7DD05A82ULL,
    0x8E2443F7744608B8ULL, 0x4C263A81E69035E0ULL, 0xCB00C391BB52283CULL,
    0xA32E531B8B65D088ULL, 0x4EF90DA297486471ULL, 0xD8ACDEA946EF1938ULL,
    0x3F349CE33F76FAA8ULL, 0x1D4F0BC7C7BBDCF9ULL, 0x3159B4CD4BE0518AULL,
    0x647378D9C97E9FC8ULL, 0xC3EBD33483ACC5EAULL, 0xEB6313FAFFA081C5ULL,
    0x49DAF0B751DD0D17ULL, 0x9E68D429265516D3ULL, 0xFCA1477D58BE162BULL,
    0xCE31D07AD1B8F88FULL, 0x280416958F3ACB45ULL, 0x7E404BBBCAFBD7AFULL,
};
// Secret words the short-input paths combine (XOR of kSecret words, as on the CPU).
#define ASP_XXH3_K_EMPTY 0x8726F9105DC21DDCULL    // words at bytes 56 and 64
#define ASP_XXH3_K_1TO3 0x87275A9BULL             // 32-bit words at bytes 0 and 4
#define ASP_XXH3_K_4TO8 0xC73AB174C5ECD5A2ULL     // bytes 8 and 16
#define ASP_XXH3_K_9TO16_LO 0x6782737BEA4239B9ULL  // bytes 24 and 32
#define ASP_XXH3_K_9TO16_HI 0xAF56BC3B0996523AULL  // bytes 40 and 48
#define ASP_XXH3_P32_1 0x9E3779B1ULL
#define ASP_XXH3_P64_1 0x9E3779B185EBCA87ULL
#define ASP_XXH3_P64_2 0xC2B2AE3D27D4EB4FULL
#define ASP_XXH3_P64_3 0x165667B19E3779F9ULL
#define ASP_XXH3_MX1 0x165667919E3779F9ULL
#define ASP_XXH3_MX2 0x9FB21C651E98DF25ULL

// The 8 bytes at byte `offset` (offset + 8 <= 192) of the secret derived from `seed`
// (XXH3_initCustomSecret: even words plus seed, odd words minus seed), little-endian.
// Seed 0 reads kSecret itself.
__device__ __forceinline__ asp_u64 asp_xxh3_secret(int offset, asp_u64 seed) {
    const int w = offset >> 3;
    const int r = (offset & 7) * 8;
    const asp_u64 lo = asp_xxh3_kw[w] + ((w & 1) ? 0ULL - seed : seed);
    if (r == 0) return lo;
    const asp_u64 hi = asp_xxh3_kw[w + 1] + (((w + 1) & 1) ? 0ULL - seed : seed);
    return (lo >> r) | (hi << (64 - r));
}

__device__ __forceinline__ asp_u64 asp_rotl64(asp_u64 x, int r) {
    return (x << r) | (x >> (64 - r));
}

// High 64 bits of the 128-bit product a * b.
__device__ __forceinline__ asp_u64 asp_mulhi64(asp_u64 a, asp_u64 b) {
#if defined(__CUDACC__)
    return __umul64hi(a, b);
#else
    return (asp_u64)(((unsigned __int128)a * b) >> 64);
#endif
}

// Low ^ high 64 bits of the 128-bit product (XXH3_mul128_fold64).
__device__ __forceinline__ asp_u64 asp_fold128(asp_u64 a, asp_u64 b) {
    return (a * b) ^ asp_mulhi64(a, b);
}

// Little-endian loads of bytes p.. of `data` (byte loads: strings are not aligned).
__device__ __forceinline__ asp_u64 asp_read64(const unsigned char* data, long long p) {
    asp_u64 x = 0;
    for (int i = 7; i >= 0; --i) x = (x << 8) | (asp_u64)__ldg(data + p + i);
    return x;
}
__device__ __forceinline__ asp_u64 asp_read32(const unsigned char* data, long long p) {
    asp_u64 x = 0;
    for (int i = 3; i >= 0; --i) x = (x << 8) | (asp_u64)__ldg(data + p + i);
    return x;
}

__device__ __forceinline__ asp_u64 asp_swap64(asp_u64 x) {
    x = ((x & 0x00FF00FF00FF00FFULL) << 8) | ((x >> 8) & 0x00FF00FF00FF00FFULL);
    x = ((x & 0x0000FFFF0000FFFFULL) << 16) | ((x >> 16) & 0x0000FFFF0000FFFFULL);
    return (x << 32) | (x >> 32);
}

__device__ __forceinline__ asp_u64 asp_xxh64_avalanche(asp_u64 h) {
    h = (h ^ (h >> 33)) * ASP_XXH3_P64_2;
    h = (h ^ (h >> 29)) * ASP_XXH3_P64_3;
    return h ^ (h >> 32);
}

__device__ __forceinline__ asp_u64 asp_xxh3_avalanche(asp_u64 h) {
    h = (h ^ (h >> 37)) * ASP_XXH3_MX1;
    return h ^ (h >> 32);
}

__device__ __forceinline__ asp_u64 asp_rrmxmx(asp_u64 h, asp_u64 n) {
    h = h ^ asp_rotl64(h, 49) ^ asp_rotl64(h, 24);
    h = h * ASP_XXH3_MX2;
    h = h ^ ((h >> 35) + n);
    h = h * ASP_XXH3_MX2;
    return h ^ (h >> 28);
}

// XXH3-64 of the 8 little-endian bytes of x; `bitflip` is kernels/xxh3.int_bitflip
// of the seed (the host computes it once per launch).
__device__ __forceinline__ asp_u64 asp_xxh3_int(asp_u64 x, asp_u64 bitflip) {
    return asp_rrmxmx(asp_rotl64(x, 32) ^ bitflip, 8);
}

// XXH3-64 of 0 to 16 bytes.
__device__ __forceinline__ asp_u64 asp_xxh3_upto16(const unsigned char* data, long long p,
                                                   long long n, asp_u64 seed) {
    if (n > 8) {
        const asp_u64 lo = asp_read64(data, p) ^ (ASP_XXH3_K_9TO16_LO + seed);
        const asp_u64 hi = asp_read64(data, p + n - 8) ^ (ASP_XXH3_K_9TO16_HI - seed);
        return asp_xxh3_avalanche((asp_u64)n + asp_swap64(lo) + hi + asp_fold128(lo, hi));
    }
    if (n >= 4) {
        const asp_u64 s = seed ^ asp_swap64(seed & 0xFFFFFFFFULL);
        const asp_u64 x = asp_read32(data, p + n - 4) + (asp_read32(data, p) << 32);
        return asp_rrmxmx(x ^ (ASP_XXH3_K_4TO8 - s), (asp_u64)n);
    }
    if (n > 0) {
        const asp_u64 combined = ((asp_u64)__ldg(data + p) << 16) |
                                 ((asp_u64)__ldg(data + p + (n >> 1)) << 24) |
                                 (asp_u64)__ldg(data + p + n - 1) | ((asp_u64)n << 8);
        return asp_xxh64_avalanche(combined ^ (ASP_XXH3_K_1TO3 + seed));
    }
    return asp_xxh64_avalanche(seed ^ ASP_XXH3_K_EMPTY);
}

__device__ __forceinline__ asp_u64 asp_mix16(const unsigned char* data, long long p, int q,
                                             asp_u64 seed) {
    return asp_fold128(asp_read64(data, p) ^ (asp_xxh3_secret(q, 0) + seed),
                       asp_read64(data, p + 8) ^ (asp_xxh3_secret(q + 8, 0) - seed));
}

// XXH3-64 of more than 240 bytes: 64-byte stripes into 8 accumulators, scrambled after
// every block of 16 stripes, with the secret derived from the seed.
__device__ asp_u64 asp_xxh3_long(const unsigned char* data, long long p, long long n,
                                 asp_u64 seed) {
    asp_u64 acc[8] = {0xC2B2AE3DULL, ASP_XXH3_P64_1, ASP_XXH3_P64_2, ASP_XXH3_P64_3,
                      0x85EBCA77C2B2AE63ULL, 0x85EBCA77ULL, 0x27D4EB2F165667C5ULL,
                      ASP_XXH3_P32_1};
    const long long stripes_per_block = (192 - 64) / 8;
    const long long block = 64 * stripes_per_block;
    const long long blocks = (n - 1) / block;
    for (long long b = 0; b <= blocks; ++b) {
        const long long stripes = b < blocks ? stripes_per_block : ((n - 1) - block * blocks) / 64;
        for (long long st = 0; st < stripes; ++st) {
            const long long base = p + b * block + 64 * st;
            for (int lane = 0; lane < 8; ++lane) {
                const asp_u64 v = asp_read64(data, base + 8 * lane);
                const asp_u64 k = v ^ asp_xxh3_secret((int)(8 * st) + 8 * lane, seed);
                acc[lane ^ 1] += v;
                acc[lane] += (k & 0xFFFFFFFFULL) * (k >> 32);
            }
        }
        if (b < blocks) {
            for (int lane = 0; lane < 8; ++lane) {
                asp_u64 a = acc[lane];
                a = a ^ (a >> 47);
                a = a ^ asp_xxh3_secret(192 - 64 + 8 * lane, seed);
                acc[lane] = a * ASP_XXH3_P32_1;
            }
        }
    }
    const long long last = p + n - 64;
    for (int lane = 0; lane < 8; ++lane) {
        const asp_u64 v = asp_read64(data, last + 8 * lane);
        const asp_u64 k = v ^ asp_xxh3_secret(192 - 64 - 7 + 8 * lane, seed);
        acc[lane ^ 1] += v;
        acc[lane] += (k & 0xFFFFFFFFULL) * (k >> 32);
    }
    asp_u64 result = (asp_u64)n * ASP_XXH3_P64_1;
    for (int i = 0; i < 4; ++i) {
        result += asp_fold128(acc[2 * i] ^ asp_xxh3_secret(11 + 16 * i, seed),
                              acc[2 * i + 1] ^ asp_xxh3_secret(11 + 16 * i + 8, seed));
    }
    return asp_xxh3_avalanche(result);
}

// XXH3-64 of 17 bytes and more.
__device__ asp_u64 asp_xxh3_above16(const unsigned char* data, long long p, long long n,
                                    asp_u64 seed) {
    if (n <= 128) {
        asp_u64 acc = (asp_u64)n * ASP_XXH3_P64_1;
        for (int i = 0; i < (int)((n - 1) / 32) + 1; ++i) {
            acc += asp_mix16(data, p + 16 * i, 32 * i, seed);
            acc += asp_mix16(data, p + n - 16 * (i + 1), 32 * i + 16, seed);
        }
        return asp_xxh3_avalanche(acc);
    }
    if (n <= 240) {
        asp_u64 acc = (asp_u64)n * ASP_XXH3_P64_1;
        for (int i = 0; i < 8; ++i) acc += asp_mix16(data, p + 16 * i, 16 * i, seed);
        acc = asp_xxh3_avalanche(acc);
        for (int i = 8; i < (int)(n / 16); ++i) {
            acc += asp_mix16(data, p + 16 * i, 16 * (i - 8) + 3, seed);
        }
        acc += asp_mix16(data, p + n - 16, 136 - 17, seed);
        return asp_xxh3_avalanche(acc);
    }
    return asp_xxh3_long(data, p, n, seed);
}

// XXH3_64bits_withSeed(data + p, n, seed).
__device__ __forceinline__ asp_u64 asp_xxh3(const unsigned char* data, long long p, long long n,
                                            asp_u64 seed) {
    return n <= 16 ? asp_xxh3_upto16(data, p, n, seed) : asp_xxh3_above16(data, p, n, seed);
}

// h % n without a division (libdivide's unsigned 64-bit scheme, constants from the host's
// divider(n)): mode 0: n a power of two; 1: mulhi(magic, h) >> shift; 2: the "add" variant.
__device__ __forceinline__ long long asp_bucket(asp_u64 h, asp_u64 n, asp_u64 magic, int shift,
                                                int mode) {
    if (mode == 0) return (long long)(h & (n - 1));
    asp_u64 q = asp_mulhi64(magic, h);
    q = mode == 2 ? ((((h - q) >> 1) + q) >> shift) : (q >> shift);
    return (long long)(h - q * n);
}

// Start and length of string k of an Arrow offsets array, and whether it lies inside
// the data buffer.
template <typename O>
__device__ __forceinline__ bool asp_string_at(const O* offsets, long long k, long long data_len,
                                              long long* p, long long* n) {
    *p = (long long)__ldg(offsets + k);
    *n = (long long)__ldg(offsets + k + 1) - *p;
    return *p >= 0 && *n >= 0 && *p + *n <= data_len;
}

// ------------------------------------------------------------------------- hashing
// hash_ints: out[k] = XXH3_64(le_bytes(int64(values[k])), seed) % n for k < count
// (values and out are views from the first addressed element).
// Thread mapping: one thread per element (grid-stride). Memory traffic: one coalesced
// read and one write per element; the hash is a few multiplies in registers.
template <typename T>
__global__ void hash_ints(const T* __restrict__ values, long long count, asp_u64 bitflip,
                          asp_u64 n, asp_u64 magic, int shift, int mode,
                          long long* __restrict__ out) {
    for (ASP_GRID_STRIDE(k, count)) {
        const asp_u64 x = (asp_u64)(long long)__ldg(values + k);
        out[k] = asp_bucket(asp_xxh3_int(x, bitflip), n, magic, shift, mode);
    }
}

// hash_strings: out[k] = XXH3_64(bytes of string k, seed) % n for start <= k < stop.
// Thread mapping: one thread per string (grid-stride); a string above 16 bytes makes its
// thread loop (others of the warp wait: strings of mixed lengths diverge). Memory
// traffic: two offsets and the string's bytes read (byte loads, coalesced when the
// strings are short and adjacent), one write per string.
// Device check: a string outside the data buffer (position k; out[k] not written).
template <typename O>
__global__ void hash_strings(const O* __restrict__ offsets, const unsigned char* __restrict__ data,
                             long long data_len, long long start, long long stop, asp_u64 seed,
                             asp_u64 n, asp_u64 magic, int shift, int mode,
                             long long* __restrict__ out, unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, stop - start)) {
        const long long k = start + i;
        long long p, size;
        if (!asp_string_at(offsets, k, data_len, &p, &size)) {
            ASP_RAISE(error, ASP_TRANSFORMS_STRING_RANGE, k);
            continue;
        }
        out[k] = asp_bucket(asp_xxh3(data, p, size, seed), n, magic, shift, mode);
    }
}

// ------------------------------------------------------------------------ bucketize
template <typename T>
__device__ __forceinline__ bool asp_is_nan(T x) { (void)x; return false; }
__device__ __forceinline__ bool asp_is_nan(float x) { return x != x; }
__device__ __forceinline__ bool asp_is_nan(double x) { return x != x; }

// bucketize: out[k] = the number of boundaries <= values[k] (right = 0) or < values[k]
// (right = 1); NaN -> nb. Values are already of the boundaries' type (the launcher
// converts them to numpy.result_type, where the CPU compares).
// Thread mapping: one thread per element, a binary search of the sorted boundaries (the
// CPU counts them all when there are at most 64: the same number). The first nb
// threads also check boundary j: a NaN (position j) or boundaries[j] > boundaries[j + 1]
// (position j + 1), so it is checked even without values. Memory traffic: one read and
// one write per element, log2(nb) boundary reads from cache.
template <typename T>
__global__ void bucketize(const T* __restrict__ values, long long count,
                          const T* __restrict__ boundaries, long long nb, int right,
                          long long* __restrict__ out, unsigned long long* error) {
    for (ASP_GRID_STRIDE(k, count)) {
        const T x = __ldg(values + k);
        if (asp_is_nan(x)) {
            out[k] = nb;
            continue;
        }
        long long lo = 0, hi = nb;
        while (lo < hi) {
            const long long mid = (lo + hi) >> 1;
            const T b = __ldg(boundaries + mid);
            if (right ? b < x : b <= x) lo = mid + 1; else hi = mid;
        }
        out[k] = lo;
    }
    for (ASP_GRID_STRIDE(j, nb)) {
        const T b = __ldg(boundaries + j);
        if (asp_is_nan(b)) {
            ASP_RAISE(error, ASP_TRANSFORMS_BOUNDARY_ORDER, j);
        } else if (j + 1 < nb && b > __ldg(boundaries + j + 1)) {
            ASP_RAISE(error, ASP_TRANSFORMS_BOUNDARY_ORDER, j + 1);
        }
    }
}

// ------------------------------------------------------------------------ compaction
// kept_lengths: out[r] = the valid elements of row r (all of them when valid is empty),
// 0 for a null row; out is zeroed by the launcher.
// Thread mapping: one lane group per row (grid-stride over rows); lanes count elements
// k = lo + lane, lo + lane + 32, ... (coalesced byte reads) and add their counts with
// one atomicAdd each (integers: any order gives the same sum). Memory traffic: two
// offsets and one row-validity byte per row, one byte per element.
// Device checks (position r): offsets[r + 1] < offsets[r]; a row past the validity mask.
template <typename O>
__global__ void kept_lengths(const O* __restrict__ offsets, long long rows,
                             const unsigned char* __restrict__ row_valid, long long num_row_valid,
                             const unsigned char* __restrict__ valid, long long num_valid,
                             long long* __restrict__ out, unsigned long long* error) {
    const long long lane = asp_lane();
    for (long long r = asp_group(); r < rows; r += asp_group_stride()) {
        if (num_row_valid != 0 && __ldg(row_valid + r) == 0) continue;
        const long long lo = (long long)__ldg(offsets + r);
        const long long hi = (long long)__ldg(offsets + r + 1);
        if (hi < lo) {
            if (lane == 0) ASP_RAISE(error, ASP_TRANSFORMS_OFFSETS_ORDER, r + 1);
            continue;
        }
        if (num_valid == 0) {
            if (lane == 0) out[r] = hi - lo;
            continue;
        }
        if (lo < 0 || hi > num_valid) {
            if (lane == 0) ASP_RAISE(error, ASP_TRANSFORMS_ELEMENT_RANGE, r);
            continue;
        }
        asp_u64 c = 0;
        for (long long k = lo + lane; k < hi; k += 32) c += __ldg(valid + k) != 0;
        if (c != 0) atomicAdd((asp_u64*)(out + r), c);
    }
}

// kept_positions: positions[new_offsets[r] + j] = the j-th kept element of row r. With
// a validity mask, `incl` is its inclusive prefix sum (the launcher's cumsum), so a
// valid element k of a row starting at lo is kept at rank incl[k] - 1 - (incl[lo] -
// valid[lo]). Null rows keep nothing.
// Thread mapping: one lane group per row, lanes over its elements: coalesced reads of
// the mask and prefix sums and writes of the positions. Memory traffic: one read of
// each addressed element's byte and prefix sum, one write per kept element.
// Device check: a position outside the output (position r).
template <typename O>
__global__ void kept_positions(const O* __restrict__ offsets, long long rows,
                               const unsigned char* __restrict__ row_valid,
                               long long num_row_valid, const unsigned char* __restrict__ valid,
                               const long long* __restrict__ incl, long long num_valid,
                               const long long* __restrict__ new_offsets,
                               long long* __restrict__ positions, long long num_positions,
                               unsigned long long* error) {
    const long long lane = asp_lane();
    for (long long r = asp_group(); r < rows; r += asp_group_stride()) {
        if (num_row_valid != 0 && __ldg(row_valid + r) == 0) continue;
        const long long lo = (long long)__ldg(offsets + r);
        const long long hi = (long long)__ldg(offsets + r + 1);
        const long long w = __ldg(new_offsets + r);
        if (hi <= lo) continue;  // an empty row, or one kept_lengths reported
        if (num_valid == 0) {
            if (w < 0 || w + (hi - lo) > num_positions) {
                if (lane == 0) ASP_RAISE(error, ASP_TRANSFORMS_POSITION_RANGE, r);
                continue;
            }
            for (long long j = lane; j < hi - lo; j += 32) positions[w + j] = lo + j;
            continue;
        }
        if (lo < 0 || hi > num_valid) continue;  // reported by kept_lengths
        const long long before = __ldg(incl + lo) - (long long)(__ldg(valid + lo) != 0);
        for (long long k = lo + lane; k < hi; k += 32) {
            if (__ldg(valid + k) == 0) continue;
            const long long at = w + __ldg(incl + k) - 1 - before;
            if (at < 0 || at >= num_positions) {
                ASP_RAISE(error, ASP_TRANSFORMS_POSITION_RANGE, r);
                continue;
            }
            positions[at] = k;
        }
    }
}

// ------------------------------------------------------------------------ padding
// pad_or_truncate: out[r, j, d] (out is [rows, length, width]) from values[N, width]:
// left = 0 keeps a row's first `length` elements and pads at the end, left = 1 keeps
// its last ones and pads in front; null rows are all padding; a null element gets
// `pad` and, when mark is set, out_valid[r, j] = 0 (1 everywhere else, also when width
// is 0). T is the unsigned type of the values' item size: the kernel moves bits.
// Thread mapping: one thread per output element (r, j, d), d fastest (one per (r, j)
// when width is 0): coalesced writes, reads coalesced along d and j within a row.
// Memory traffic: one write per output element, one read per kept element, row
// metadata from cache.
// Device checks (position r): offsets going backwards; an element outside the values
// or the validity mask.
template <typename T, typename O>
__global__ void pad_or_truncate(const T* __restrict__ values, long long num_values,
                                long long width, const O* __restrict__ offsets, long long rows,
                                const unsigned char* __restrict__ row_valid,
                                long long num_row_valid, const unsigned char* __restrict__ valid,
                                long long num_valid, long long length, int left, T pad,
                                T* __restrict__ out, unsigned char* __restrict__ out_valid,
                                int mark, unsigned long long* error) {
    const long long lanes = width > 0 ? width : 1;
    const long long per_row = length * lanes;
    for (ASP_GRID_STRIDE(t, rows * per_row)) {
        const long long r = t / per_row;
        const long long j = (t - r * per_row) / lanes;
        const long long d = t - r * per_row - j * lanes;
        long long start = 0, n = 0;
        if (num_row_valid == 0 || __ldg(row_valid + r) != 0) {
            start = (long long)__ldg(offsets + r);
            n = (long long)__ldg(offsets + r + 1) - start;
        }
        if (n < 0) {
            if (j == 0 && d == 0) ASP_RAISE(error, ASP_TRANSFORMS_OFFSETS_ORDER, r + 1);
            n = 0;
        }
        const long long m = n < length ? n : length;
        const long long i = j - (left ? length - m : 0);
        T value = pad;
        unsigned char flag = 1;
        if (i >= 0 && i < m) {
            const long long e = (left ? start + n - m : start) + i;
            if (e < 0 || e >= num_values || (num_valid != 0 && e >= num_valid)) {
                if (d == 0) ASP_RAISE(error, ASP_TRANSFORMS_ELEMENT_RANGE, r);
            } else if (num_valid == 0 || __ldg(valid + e) != 0) {
                if (width > 0) value = __ldg(values + e * width + d);
            } else {
                flag = 0;
            }
        }
        if (width > 0) out[(r * length + j) * width + d] = value;
        if (mark && d == 0) out_valid[r * length + j] = flag;
    }
}

// ------------------------------------------------------------------- parallel tables
// Ordered linear probing, priority = item index (smaller first; a free slot holds
// ASP_SLOT_FREE, above every index): item v enters the probe path at slot s; a slot
// holding a larger index (or none) is taken by compare-and-swap and its item, if any,
// carried on from the next slot. The result is the table sequential insertion in index
// order builds. A failed CAS re-examines the slot with the value it returned. Every
// step moves forward, and a thread cannot pass every slot of a table with a free one
// (slots never empty again), so `cap` steps without a free slot mean a full table; the
// item then carried is recorded: the items left out are the last ones by priority, so
// the error does not depend on the thread order either.
__device__ __forceinline__ void asp_insert_by_index(asp_u64* slots, long long cap, asp_u64 v,
                                                    long long s, unsigned long long* error) {
    asp_u64 c = asp_load_slot(slots + s);
    for (long long steps = 0; steps <= cap;) {
        if (v < c) {
            const asp_u64 old = atomicCAS(slots + s, c, v);
            if (old != c) {
                c = old;
                continue;
            }
            if (c == ASP_SLOT_FREE) return;
            v = c;  // carry the displaced item on
        }
        s = (s + 1) & (cap - 1);
        ++steps;
        c = asp_load_slot(slots + s);
    }
    ASP_RAISE(error, ASP_TRANSFORMS_TABLE_FULL, (long long)v);
}

// Fibonacci hashing (the CPU's _slot): the top bits of x * 2**64 / phi.
__device__ __forceinline__ long long asp_int_slot(long long x, int shift) {
    return (long long)(((asp_u64)x * 0x9E3779B97F4A7C15ULL) >> shift);
}

// int_table_insert: slots[s] = index of the key placed in slot s of the vocabulary's
// integer table (keys[i] gets id i + 2); the key INT64_MIN is kept apart:
// free_id = the largest i + 2 holding it (the CPU's loop keeps the last one).
// Thread mapping: one thread per key (grid-stride), ordered insertion above. Memory
// traffic: one key read, a few slot reads and one CAS per probe step (short clusters:
// the table is at most half full).
__global__ void int_table_insert(const long long* __restrict__ keys, long long num, asp_u64* slots,
                                 long long cap, int shift, long long* free_id,
                                 unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, num)) {
        const long long x = __ldg(keys + i);
        if (x == ASP_INT64_MIN) {
            atomicMax(free_id, i + 2);
            continue;
        }
        asp_insert_by_index(slots, cap, (asp_u64)i, asp_int_slot(x, shift), error);
    }
}

// int_table_fill: table[s] = (key, id) rows of the CPU's layout from the slots:
// (INT64_MIN, 0) free, (keys[i], i + 2) for index i.
// Thread mapping: one thread per slot: coalesced slot reads and row writes, one
// gathered key read.
__global__ void int_table_fill(const long long* __restrict__ keys, long long num,
                               const asp_u64* __restrict__ slots, long long cap,
                               long long* __restrict__ table, unsigned long long* error) {
    for (ASP_GRID_STRIDE(s, cap)) {
        const asp_u64 c = slots[s];
        long long key = ASP_INT64_MIN, id = 0;
        if (c != ASP_SLOT_FREE) {
            if (c >= (asp_u64)num) {
                ASP_RAISE(error, ASP_TRANSFORMS_TABLE_ENTRY, s);
            } else {
                key = __ldg(keys + c);
                id = (long long)c + 2;
            }
        }
        table[2 * s] = key;
        table[2 * s + 1] = id;
    }
}

// lookup_ints: out[k] = the id of values[k] in an integer table (free_id for
// INT64_MIN), `missing` for absent values and null elements, start <= k < stop.
// Thread mapping: one thread per element; a probe reads 16-byte rows from the first
// slot until the key or a free row. Memory traffic: one read and one write per element,
// one or a few table rows per element (random, cached when the table is small).
// Device check: no free row within `cap` probes (position k).
template <typename T>
__global__ void lookup_ints(const T* __restrict__ values, const unsigned char* __restrict__ valid,
                            long long num_valid, long long start, long long stop,
                            const long long* __restrict__ table, long long cap, int shift,
                            long long free_id, long long missing, long long* __restrict__ out,
                            unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, stop - start)) {
        const long long k = start + i;
        if (num_valid != 0 && __ldg(valid + k) == 0) {
            out[k] = missing;
            continue;
        }
        const long long x = (long long)__ldg(values + k);
        long long found = missing;
        if (x == ASP_INT64_MIN) {
            if (free_id != 0) found = free_id;
        } else {
            long long s = asp_int_slot(x, shift);
            long long steps = 0;
            for (; steps < cap; ++steps) {
                const long long key = __ldg(table + 2 * s);
                if (key == x) {
                    found = __ldg(table + 2 * s + 1);
                    break;
                }
                if (key == ASP_INT64_MIN) break;
                s = (s + 1) & (cap - 1);
            }
            if (steps == cap) ASP_RAISE(error, ASP_TRANSFORMS_TABLE_FULL, k);
        }
        out[k] = found;
    }
}

// ----------------------------------------------------------------- string tables
// string_hashes: hashes[i] = XXH3_64(string items[i], seed 0) (0 for a string outside
// the data buffer, which the kernels below skip).
// Thread mapping: one thread per item; memory traffic as hash_strings (plus the gathered
// item index).
// Device check: a string outside the data buffer (position items[i]).
template <typename O>
__global__ void string_hashes(const O* __restrict__ offsets, const unsigned char* __restrict__ data,
                              long long data_len, const long long* __restrict__ items,
                              long long num, asp_u64* __restrict__ hashes,
                              unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, num)) {
        long long p, n;
        const long long k = __ldg(items + i);
        asp_u64 h = 0;
        if (asp_string_at(offsets, k, data_len, &p, &n)) {
            h = asp_xxh3(data, p, n, 0);
        } else {
            ASP_RAISE(error, ASP_TRANSFORMS_STRING_RANGE, k);
        }
        hashes[i] = h;
    }
}

// Bytes [p, p + n) of a and [q, q + n) of b compared: < 0, 0, > 0.
__device__ __forceinline__ int asp_compare_bytes(const unsigned char* a, long long p,
                                                 const unsigned char* b, long long q,
                                                 long long n) {
    for (long long i = 0; i < n; ++i) {
        const int x = __ldg(a + p + i), y = __ldg(b + q + i);
        if (x != y) return x < y ? -1 : 1;
    }
    return 0;
}

// The counting table's order of strings items[a] and items[b] (both inside the data
// buffer): by hash, then length, then bytes; 0 when the strings are equal.
template <typename O>
__device__ int asp_string_order(const O* offsets, const unsigned char* data,
                                const long long* items, const asp_u64* hashes, asp_u64 a,
                                asp_u64 b) {
    const asp_u64 ha = __ldg(hashes + a), hb = __ldg(hashes + b);
    if (ha != hb) return ha < hb ? -1 : 1;
    const long long ka = __ldg(items + a), kb = __ldg(items + b);
    const long long pa = (long long)__ldg(offsets + ka), pb = (long long)__ldg(offsets + kb);
    const long long na = (long long)__ldg(offsets + ka + 1) - pa;
    const long long nb = (long long)__ldg(offsets + kb + 1) - pb;
    if (na != nb) return na < nb ? -1 : 1;
    return asp_compare_bytes(data, pa, data, pb, na);
}

// string_set_insert: a table of the distinct strings among items[0..num): slots[s] =
// the smallest item index of the string in slot s (its first occurrence: items are
// increasing). Ordered linear probing by the string order above; an item meeting its
// own string keeps the smaller index there and stops. The layout depends only on the
// set of distinct strings, and each slot's index only on its string: not on the
// thread order.
// Thread mapping: one thread per item, entering at hash & (cap - 1). Memory traffic per
// probe step: one slot read (past L1), one hash read, a CAS on a claim; bytes compared
// only between strings of equal hash and length.
// Device check: no free slot within cap steps (cannot happen: cap >= 2 num; position:
// the element of the string then carried, the last ones by the order being left out).
template <typename O>
__global__ void string_set_insert(const O* __restrict__ offsets,
                                  const unsigned char* __restrict__ data, long long data_len,
                                  const long long* __restrict__ items,
                                  const asp_u64* __restrict__ hashes, long long num,
                                  asp_u64* slots, long long cap, unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, num)) {
        long long p, n;
        if (!asp_string_at(offsets, __ldg(items + i), data_len, &p, &n)) continue;
        asp_u64 v = (asp_u64)i;
        long long s = (long long)(__ldg(hashes + i) & (asp_u64)(cap - 1));
        asp_u64 c = asp_load_slot(slots + s);
        long long steps = 0;
        while (steps <= cap) {
            const int order = c == ASP_SLOT_FREE ? -1
                              : asp_string_order(offsets, data, items, hashes, v, c);
            if (order == 0 && v > c) break;  // its string is there, with a smaller index
            if (order <= 0) {
                const asp_u64 old = atomicCAS(slots + s, c, v);
                if (old != c) {
                    c = old;
                    continue;
                }
                if (order == 0 || c == ASP_SLOT_FREE) break;
                v = c;  // carry the displaced string on
            }
            s = (s + 1) & (cap - 1);
            ++steps;
            c = asp_load_slot(slots + s);
        }
        if (steps > cap) ASP_RAISE(error, ASP_TRANSFORMS_TABLE_FULL, __ldg(items + v));
    }
}

// string_set_count: counts[s] += 1 for the slot holding item i's string.
// Thread mapping: one thread per item, probing the finished table read-only; one
// atomicAdd per item (integer counts: any order gives the same). Memory traffic as a
// lookup: a slot and a hash read per probe step, the bytes of an equal candidate.
template <typename O>
__global__ void string_set_count(const O* __restrict__ offsets,
                                 const unsigned char* __restrict__ data, long long data_len,
                                 const long long* __restrict__ items,
                                 const asp_u64* __restrict__ hashes, long long num,
                                 const asp_u64* __restrict__ slots, long long cap,
                                 long long* __restrict__ counts) {
    for (ASP_GRID_STRIDE(i, num)) {
        long long p, n;
        if (!asp_string_at(offsets, __ldg(items + i), data_len, &p, &n)) continue;
        long long s = (long long)(__ldg(hashes + i) & (asp_u64)(cap - 1));
        for (long long steps = 0; steps < cap; ++steps) {
            const asp_u64 c = slots[s];
            if (c == ASP_SLOT_FREE) break;  // not inserted: string_set_insert reported it
            if (asp_string_order(offsets, data, items, hashes, (asp_u64)i, c) == 0) {
                atomicAdd((asp_u64*)(counts + s), 1ULL);
                break;
            }
            s = (s + 1) & (cap - 1);
        }
    }
}

// string_table_insert: slots of the vocabulary's string table, vocabulary string i
// entering at hash & (cap - 1), ordered by index (the CPU's layout).
// Thread mapping: one thread per vocabulary string; memory traffic as int_table_insert.
__global__ void string_table_insert(const asp_u64* __restrict__ hashes, long long num,
                                    asp_u64* slots, long long cap, unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, num)) {
        const long long s = (long long)(__ldg(hashes + i) & (asp_u64)(cap - 1));
        asp_insert_by_index(slots, cap, (asp_u64)i, s, error);
    }
}

// The bytes of a string of at most 16 bytes as two zero-padded little-endian words.
__device__ __forceinline__ void asp_words16(const unsigned char* data, long long p, long long n,
                                            long long* w0, long long* w1) {
    asp_u64 a = 0, b = 0;
    for (long long i = 0; i < n; ++i) {
        const asp_u64 byte = (asp_u64)__ldg(data + p + i);
        if (i < 8) a |= byte << (8 * i); else b |= byte << (8 * (i - 8));
    }
    *w0 = (long long)a;
    *w1 = (long long)b;
}

#define ASP_LONG_CLASS 17LL  // the length class of strings above 16 bytes

// string_table_fill: the CPU's 32-byte rows from the slots: (-1, 0, 0, 0) free, else
// (i | length class << 48, hash, word0, word1), the class being the length up to 16
// bytes and ASP_LONG_CLASS above, the words the bytes of a short string.
// Thread mapping: one thread per slot: coalesced row writes; one string read per row.
// Device check: a slot index outside the vocabulary (position s).
template <typename O>
__global__ void string_table_fill(const O* __restrict__ offsets,
                                  const unsigned char* __restrict__ data, long long data_len,
                                  const asp_u64* __restrict__ hashes, long long num,
                                  const asp_u64* __restrict__ slots, long long cap,
                                  long long* __restrict__ table, unsigned long long* error) {
    for (ASP_GRID_STRIDE(s, cap)) {
        const asp_u64 c = slots[s];
        long long row[4] = {-1, 0, 0, 0};
        long long p, n;
        if (c != ASP_SLOT_FREE && c >= (asp_u64)num) {
            ASP_RAISE(error, ASP_TRANSFORMS_TABLE_ENTRY, s);
        } else if (c != ASP_SLOT_FREE && asp_string_at(offsets, (long long)c, data_len, &p, &n)) {
            row[0] = (long long)c | ((n < ASP_LONG_CLASS ? n : ASP_LONG_CLASS) << 48);
            row[1] = (long long)__ldg(hashes + c);
            if (n <= 16) asp_words16(data, p, n, row + 2, row + 3);
        }
        for (int q = 0; q < 4; ++q) table[4 * s + q] = row[q];
    }
}

// lookup_strings: out[k] = the id (entry + 2) of string k in a vocabulary's string
// table, `missing` for absent strings and null elements, start <= k < stop. A string
// of up to 16 bytes is matched on (hash, length class, two words) without reading the
// vocabulary; a longer one on (hash, class) and then its bytes.
// Thread mapping: one thread per string; memory traffic: its bytes, one or a few 32-byte
// table rows, the vocabulary string's bytes for long candidates, one write.
// Device checks (position k; out[k] not written or `missing`): string offsets outside
// the data, a table entry outside the vocabulary, no free row within cap probes.
template <typename O, typename V>
__global__ void lookup_strings(const O* __restrict__ offsets,
                               const unsigned char* __restrict__ data,
                               long long data_len, const unsigned char* __restrict__ valid,
                               long long num_valid, long long start, long long stop,
                               const V* __restrict__ voc_offsets,
                               const unsigned char* __restrict__ voc_data, long long voc_len,
                               long long voc_data_len, const long long* __restrict__ table,
                               long long cap, long long missing, long long* __restrict__ out,
                               unsigned long long* error) {
    const long long low48 = (1LL << 48) - 1;
    for (ASP_GRID_STRIDE(i, stop - start)) {
        const long long k = start + i;
        if (num_valid != 0 && __ldg(valid + k) == 0) {
            out[k] = missing;
            continue;
        }
        long long p, n;
        if (!asp_string_at(offsets, k, data_len, &p, &n)) {
            ASP_RAISE(error, ASP_TRANSFORMS_STRING_RANGE, k);
            continue;
        }
        const long long h = (long long)asp_xxh3(data, p, n, 0);
        const long long cls = n <= 16 ? n : ASP_LONG_CLASS;
        long long w0 = 0, w1 = 0;
        if (n <= 16) asp_words16(data, p, n, &w0, &w1);
        long long found = missing;
        long long s = (long long)((asp_u64)h & (asp_u64)(cap - 1));
        long long steps = 0;
        for (; steps < cap; ++steps) {
            const long long head = __ldg(table + 4 * s);
            if (head < 0) break;
            if (__ldg(table + 4 * s + 1) == h && (head >> 48) == cls) {
                const long long entry = head & low48;
                long long q, m;
                if (entry >= voc_len || !asp_string_at(voc_offsets, entry, voc_data_len, &q, &m)) {
                    ASP_RAISE(error, ASP_TRANSFORMS_TABLE_ENTRY, k);
                    break;
                }
                if (n <= 16 ? __ldg(table + 4 * s + 2) == w0 && __ldg(table + 4 * s + 3) == w1
                            : m == n && asp_compare_bytes(data, p, voc_data, q, n) == 0) {
                    found = entry + 2;
                    break;
                }
            }
            s = (s + 1) & (cap - 1);
        }
        if (steps == cap) ASP_RAISE(error, ASP_TRANSFORMS_TABLE_FULL, k);
        out[k] = found;
    }
}

// ------------------------------------------------------------------ block bucketize
// The bucket of value u of key t and its new id (FBGEMM's block bucketizing): u //
// block[t] as u % block[t] when u < threshold[t] (or all_block[t]), else u % my_size as
// u // my_size.
__device__ __forceinline__ long long asp_block_bucket(asp_u64 u, asp_u64 blk, asp_u64 thr,
                                                      bool whole, asp_u64 my_size,
                                                      asp_u64* new_id) {
    if (whole || u < thr) {
        *new_id = u % blk;
        return (long long)(u / blk);
    }
    *new_id = u / my_size;
    return (long long)(u % my_size);
}

// Whether row r of the key-major rows has a sane range and a key with a block size;
// else the error is recorded (position r).
__device__ __forceinline__ bool asp_bucket_row(const long long* offsets, const asp_u64* block,
                                               long long r, long long num_values,
                                               long long batch_size, long long num_keys,
                                               unsigned long long* error) {
    const long long lo = __ldg(offsets + r), hi = __ldg(offsets + r + 1);
    if (hi < lo) {
        ASP_RAISE(error, ASP_TRANSFORMS_OFFSETS_ORDER, r + 1);
        return false;
    }
    if (lo < 0 || hi > num_values || r / batch_size >= num_keys ||
        __ldg(block + r / batch_size) == 0) {
        ASP_RAISE(error, ASP_TRANSFORMS_ELEMENT_RANGE, r);
        return false;
    }
    return true;
}

// bucket_counts: counts[p * rows + r] = how many values of row r go to bucket p.
// Thread mapping: one thread per row (as FBGEMM's CUDA kernel), its values in order:
// row r owns counts[:, r], so no atomics. Memory traffic: one read per value, one
// read-modify-write of a count per value (a row's counts are strided by rows).
// Device checks: bad row ranges or block sizes (position r); a bucket >= my_size
// (thresholds above block * my_size; position of the value).
template <typename U>
__global__ void bucket_counts(const U* __restrict__ uvalues, long long num_values,
                              const long long* __restrict__ offsets, long long rows,
                              long long batch_size, const asp_u64* __restrict__ block,
                              const asp_u64* __restrict__ threshold,
                              const unsigned char* __restrict__ all_block, long long num_keys,
                              asp_u64 my_size, long long* __restrict__ counts,
                              unsigned long long* error) {
    for (ASP_GRID_STRIDE(r, rows)) {
        if (!asp_bucket_row(offsets, block, r, num_values, batch_size, num_keys, error)) continue;
        const long long t = r / batch_size;
        const asp_u64 blk = __ldg(block + t), thr = __ldg(threshold + t);
        const bool whole = __ldg(all_block + t) != 0;
        const long long stop = __ldg(offsets + r + 1);
        for (long long i = __ldg(offsets + r); i < stop; ++i) {
            asp_u64 new_id;
            const long long p = asp_block_bucket((asp_u64)__ldg(uvalues + i), blk, thr, whole,
                                                 my_size, &new_id);
            if (p >= (long long)my_size || p < 0) {
                ASP_RAISE(error, ASP_TRANSFORMS_BUCKET_RANGE, i);
                continue;
            }
            counts[p * rows + r] += 1;
        }
    }
}

// bucket_scatter: each value of row r at cursor[p * rows + r] (which starts at bucket
// p's row r offset): its new id (or u with keep_original), its weight's bits (W is the
// unsigned type of the weights' size), its in-row position and, for the inverse
// permutation, permute[i] = its output position. Optional outputs are empty arrays.
// Thread mapping: one thread per row, values in order (the order of each (bucket, row)
// run is the input order, as on the CPU). Memory traffic: one read of each value (and
// weight), one write of each output, a cursor read-modify-write per value.
// Device checks as bucket_counts, plus an output position past the output (position i).
template <typename U, typename W>
__global__ void bucket_scatter(const U* __restrict__ uvalues, long long num_values,
                               const long long* __restrict__ offsets, long long rows,
                               long long batch_size, const asp_u64* __restrict__ block,
                               const asp_u64* __restrict__ threshold,
                               const unsigned char* __restrict__ all_block, long long num_keys,
                               asp_u64 my_size, int keep_original,
                               long long* __restrict__ cursor, U* __restrict__ out,
                               long long num_out, const W* __restrict__ weights,
                               long long num_weights,
                               W* __restrict__ out_weights, long long* __restrict__ positions,
                               long long num_positions, long long* __restrict__ permute,
                               long long num_permute, unsigned long long* error) {
    for (ASP_GRID_STRIDE(r, rows)) {
        if (!asp_bucket_row(offsets, block, r, num_values, batch_size, num_keys, error)) continue;
        const long long t = r / batch_size;
        const asp_u64 blk = __ldg(block + t), thr = __ldg(threshold + t);
        const bool whole = __ldg(all_block + t) != 0;
        const long long start = __ldg(offsets + r), stop = __ldg(offsets + r + 1);
        for (long long i = start; i < stop; ++i) {
            const asp_u64 u = (asp_u64)__ldg(uvalues + i);
            asp_u64 new_id;
            const long long p = asp_block_bucket(u, blk, thr, whole, my_size, &new_id);
            if (p >= (long long)my_size || p < 0) {
                ASP_RAISE(error, ASP_TRANSFORMS_BUCKET_RANGE, i);
                continue;
            }
            const long long pos = cursor[p * rows + r];
            if (pos < 0 || pos >= num_out) {
                ASP_RAISE(error, ASP_TRANSFORMS_POSITION_RANGE, i);
                continue;
            }
            cursor[p * rows + r] = pos + 1;
            out[pos] = (U)(keep_original ? u : new_id);
            if (num_weights != 0) out_weights[pos] = __ldg(weights + i);
            if (num_positions != 0) positions[pos] = i - start;
            if (num_permute != 0) permute[i] = pos;
        }
    }
}

// --------------------------------------------------------------- KeyedJagged checks
// check_null_rows: a KeyedJagged row marked null (valid[r] == 0) must be empty
// (lengths[r] == 0). A device check with no CPU twin (the host checks with numpy):
// DEVICE_ONLY in kernels/cuda/transforms.py.
// Thread mapping: one thread per row (grid-stride). Memory traffic: one coalesced read
// of a validity byte per row, and of its length for a null row.
template <typename L>
__global__ void check_null_rows(const L* __restrict__ lengths,
                                const unsigned char* __restrict__ valid, long long rows,
                                unsigned long long* error) {
    for (ASP_GRID_STRIDE(r, rows)) {
        if (__ldg(valid + r) == 0 && __ldg(lengths + r) != 0) {
            ASP_RAISE(error, ASP_TRANSFORMS_NULL_ROW_VALUES, r);
        }
    }
}
