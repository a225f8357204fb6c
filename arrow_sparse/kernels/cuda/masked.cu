// Masked reductions over entries: CUDA twins of the scatter kernels of
// arrow_sparse/kernels/cpu/masked.py (same arguments and semantics; see that module's
// docstring). Entry i has the output cell `cell[i]` (long long), the value `vals[i]` (T),
// the mask byte `inm[i]` and, for masked_first_best, its position `pos[i]` in the slice;
// entries come in any order and several scatter into one cell. `out` holds one slot per
// cell and is combined with atomics.
//
// Thread mapping (every kernel): one thread per entry (grid-stride), so the reads of
// cell, vals and inm are coalesced, and one atomic per contributing entry on out[cell].
// Memory traffic: each entry read once (cell 8 B, inm 1 B, vals sizeof(T)), one atomic
// read-modify-write of 4-8 B per contributing entry (out stays in L2); the per-cell
// arrays mean / shift / best are read once per entry from cache. Entries of one cell
// serialise on its address: a reduction to few cells (dim=None is one cell) is bounded
// by atomic throughput on one word, not by memory bandwidth.
//
// Numerics: integer sums and products wrap in 64 bits like Numba's (through unsigned
// long long, so the bits do not depend on the order); counts, extremes of integers and
// masked_first_best are exact and order-independent. Float sums and products combine
// in atomic order: within n * eps of the CPU's sequential result. Float extremes keep
// the first NaN (a NaN sticks, as in the CPU kernel); which of equal values (-0.0 and
// 0.0) stays depends on the order.
//
// Device check: a cell outside [0, num_cells) of an entry that is used is recorded in
// the error word and the entry skipped.
//
// The searches over sorted keys (first_unstored, sorted_member; at the end) take keys
// `cell * slice_size + pos` as long long, sorted and distinct, and search them with one
// binary search per key instead of the CPU's merge pass: no thread depends on another,
// and the results are the CPU's exactly.

enum AspMaskedError {
    ASP_MASKED_CELL_RANGE = 1,  // message: IndexError: cell ids out of range of the output
    ASP_MASKED_KEYS_ORDER = 2,  // message: sorted keys must be strictly increasing
    ASP_MASKED_KEY_RANGE = 3,  // message: IndexError: keys out of range of the cells
};

// Cell of entry i, or -1 (after recording why) when it is out of range.
__device__ __forceinline__ long long asp_cell(const long long* __restrict__ cell, long long i,
                                              long long num_cells, unsigned long long* error) {
    const long long c = __ldg(cell + i);
    if (c < 0 || c >= num_cells) {
        ASP_RAISE(error, ASP_MASKED_CELL_RANGE, i);
        return -1;
    }
    return c;
}

template <typename F, typename B>
__device__ __forceinline__ B asp_bits(F x) {
    union { F f; B b; } u;
    u.f = x;
    return u.b;
}
template <typename F, typename B>
__device__ __forceinline__ F asp_from_bits(B x) {
    union { F f; B b; } u;
    u.b = x;
    return u.f;
}

// ------------------------------------------------------------------- atomic helpers
// *a += v: doubles by atomicAdd, 64-bit integers in two's complement through unsigned.
__device__ __forceinline__ void asp_atomic_add(double* a, double v) { atomicAdd(a, v); }
__device__ __forceinline__ void asp_atomic_add(unsigned long long* a, unsigned long long v) {
    atomicAdd(a, v);
}
__device__ __forceinline__ void asp_atomic_add(long long* a, long long v) {
    atomicAdd((unsigned long long*)a, (unsigned long long)v);
}

// *a *= v by a compare-and-swap loop on the 64-bit pattern; integers in two's
// complement through unsigned (the same bits as a wrapping signed product).
__device__ __forceinline__ void asp_atomic_mul(unsigned long long* a, unsigned long long v) {
    unsigned long long old = *a;
    while (true) {
        const unsigned long long seen = atomicCAS(a, old, old * v);
        if (seen == old) return;
        old = seen;
    }
}
__device__ __forceinline__ void asp_atomic_mul(long long* a, long long v) {
    asp_atomic_mul((unsigned long long*)a, (unsigned long long)v);
}
__device__ __forceinline__ void asp_atomic_mul(double* a, double v) {
    unsigned long long* word = (unsigned long long*)a;
    unsigned long long old = *word;
    while (true) {
        const double next = asp_from_bits<double, unsigned long long>(old) * v;
        const unsigned long long seen =
            atomicCAS(word, old, asp_bits<double, unsigned long long>(next));
        if (seen == old) return;
        old = seen;
    }
}

// Running max (min) with the CPU kernel's rule: take v if it is larger (smaller) or
// NaN, unless the slot already holds a NaN.
template <typename F, typename B>
__device__ __forceinline__ void asp_atomic_extreme_float(F* a, F v, int is_max) {
    B* word = (B*)a;
    B old = *word;
    while (true) {
        const F cur = asp_from_bits<F, B>(old);
        if (cur != cur || !(v != v || (is_max ? v > cur : v < cur))) return;
        const B seen = atomicCAS(word, old, asp_bits<F, B>(v));
        if (seen == old) return;
        old = seen;
    }
}
__device__ __forceinline__ void asp_atomic_extreme(float* a, float v, int is_max) {
    asp_atomic_extreme_float<float, unsigned int>(a, v, is_max);
}
__device__ __forceinline__ void asp_atomic_extreme(double* a, double v, int is_max) {
    asp_atomic_extreme_float<double, unsigned long long>(a, v, is_max);
}
template <typename U>
__device__ __forceinline__ void asp_atomic_extreme(U* a, U v, int is_max) {
    if (is_max) {
        atomicMax(a, v);
    } else {
        atomicMin(a, v);
    }
}

// ------------------------------------------------------------------------- kernels
// masked_count: out[c] += 1 per masked-in entry (C: long long).
template <typename C>
__global__ void masked_count(const long long* __restrict__ cell,
                             const unsigned char* __restrict__ inm, long long n, C* out,
                             long long num_cells, unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, n)) {
        if (!__ldg(inm + i)) continue;
        const long long c = asp_cell(cell, i, num_cells, error);
        if (c >= 0) asp_atomic_add(out + c, (C)1);
    }
}

// masked_sum: out[c] += v in the accumulator A (double, long long, unsigned long long).
template <typename T, typename A>
__global__ void masked_sum(const long long* __restrict__ cell, const T* __restrict__ vals,
                           const unsigned char* __restrict__ inm, long long n, A* out,
                           long long num_cells, unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, n)) {
        if (!__ldg(inm + i)) continue;
        const long long c = asp_cell(cell, i, num_cells, error);
        if (c >= 0) asp_atomic_add(out + c, (A)__ldg(vals + i));
    }
}

// masked_prod: out[c] *= v in A (out starts at 1); integers wrap.
template <typename T, typename A>
__global__ void masked_prod(const long long* __restrict__ cell, const T* __restrict__ vals,
                            const unsigned char* __restrict__ inm, long long n, A* out,
                            long long num_cells, unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, n)) {
        if (!__ldg(inm + i)) continue;
        const long long c = asp_cell(cell, i, num_cells, error);
        if (c >= 0) asp_atomic_mul(out + c, (A)__ldg(vals + i));
    }
}

// masked_extreme: the running max (is_max) or min of masked_max / masked_min, into a slot
// of type U: T itself, or int / unsigned int for 8- and 16-bit T (widened on the host).
template <typename T, typename U>
__global__ void masked_extreme(const long long* __restrict__ cell, const T* __restrict__ vals,
                               const unsigned char* __restrict__ inm, long long n,
                               int is_max, U* out, long long num_cells,
                               unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, n)) {
        if (!__ldg(inm + i)) continue;
        const long long c = asp_cell(cell, i, num_cells, error);
        if (c >= 0) asp_atomic_extreme(out + c, (U)__ldg(vals + i), is_max);
    }
}

// masked_sum_abs_pow: out[c] += |v| ** p in double (p = 1 and 2 without pow; a zero
// with p < 0 adds +inf).
template <typename T>
__global__ void masked_sum_abs_pow(const long long* __restrict__ cell,
                                   const T* __restrict__ vals,
                                   const unsigned char* __restrict__ inm, double p,
                                   long long n, double* out, long long num_cells,
                                   unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, n)) {
        if (!__ldg(inm + i)) continue;
        const long long c = asp_cell(cell, i, num_cells, error);
        if (c < 0) continue;
        const double a = asp_fabs((double)__ldg(vals + i));
        double term;
        if (p == 2.0) {
            term = asp_mul_rn(a, a);
        } else if (p == 1.0) {
            term = a;
        } else if (a == 0.0 && p < 0.0) {
            term = asp_from_bits<double, unsigned long long>(0x7FF0000000000000ULL);
        } else {
            term = asp_pow(a, p);
        }
        atomicAdd(out + c, term);
    }
}

// masked_count_nonzero: out[c] += 1 per masked-in entry that is not 0 (NaN counts).
template <typename T>
__global__ void masked_count_nonzero(const long long* __restrict__ cell,
                                     const T* __restrict__ vals,
                                     const unsigned char* __restrict__ inm, long long n,
                                     long long* out, long long num_cells,
                                     unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, n)) {
        if (!__ldg(inm + i) || !(__ldg(vals + i) != (T)0)) continue;
        const long long c = asp_cell(cell, i, num_cells, error);
        if (c >= 0) asp_atomic_add(out + c, 1LL);
    }
}

// masked_sum_sq_dev: out[c] += (v - mean[c]) ** 2 in double.
template <typename T>
__global__ void masked_sum_sq_dev(const long long* __restrict__ cell,
                                  const T* __restrict__ vals,
                                  const unsigned char* __restrict__ inm,
                                  const double* __restrict__ mean, long long n, double* out,
                                  long long num_cells, unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, n)) {
        if (!__ldg(inm + i)) continue;
        const long long c = asp_cell(cell, i, num_cells, error);
        if (c < 0) continue;
        const double d = (double)__ldg(vals + i) - __ldg(mean + c);
        atomicAdd(out + c, asp_mul_rn(d, d));
    }
}

// masked_sum_exp: out[c] += exp(v - shift[c]) in double.
template <typename T>
__global__ void masked_sum_exp(const long long* __restrict__ cell, const T* __restrict__ vals,
                               const unsigned char* __restrict__ inm,
                               const double* __restrict__ shift, long long n, double* out,
                               long long num_cells, unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, n)) {
        if (!__ldg(inm + i)) continue;
        const long long c = asp_cell(cell, i, num_cells, error);
        if (c >= 0) atomicAdd(out + c, asp_exp((double)__ldg(vals + i) - __ldg(shift + c)));
    }
}

// masked_first_best: out[c] = min(out[c], pos) over every entry (masked in or out) whose
// effective value (v, or `identity` when masked out) equals best[c]; a NaN best[c] is
// matched by the NaN entries (the first NaN wins, as in numpy.argmax).
template <typename T>
__global__ void masked_first_best(const long long* __restrict__ cell,
                                  const long long* __restrict__ pos,
                                  const T* __restrict__ vals,
                                  const unsigned char* __restrict__ inm, T identity,
                                  const T* __restrict__ best, long long n, long long* out,
                                  long long num_cells, unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, n)) {
        const long long c = asp_cell(cell, i, num_cells, error);
        if (c < 0) continue;
        const T v = __ldg(inm + i) ? __ldg(vals + i) : identity;
        const T b = __ldg(best + c);
        if (v == b || (v != v && b != b)) atomicMin(out + c, __ldg(pos + i));
    }
}

// ------------------------------------------------------------- sorted-key searches
// Whether k is one of the sorted keys[0:n]: a binary search (log2(n) reads, the first
// ones shared by every thread through the cache).
__device__ __forceinline__ bool asp_sorted_has(const long long* __restrict__ keys, long long n,
                                               long long k) {
    long long lo = 0;
    long long hi = n;
    while (lo < hi) {
        const long long mid = lo + ((hi - lo) >> 1);
        if (__ldg(keys + mid) < k) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < n && __ldg(keys + lo) == k;
}

#define ASP_NO_POSITION 0x7FFFFFFFFFFFFFFFLL

// first_unstored, step 1: the candidates of each cell c (keys k = c * slice_size + pos of
// the masked-in positions `mkeys` and the stored positions `skeys`, sorted and distinct):
//   best[c]             = min pos over masked-in keys not stored (the CPU's first_zero);
//   best[num_cells + c] = min over the gaps of the union of both key sets: pos + 1 after
//                         each key whose successor is in neither set (slice_size after
//                         the last position), and 0 when the cell's first key of either
//                         set is above position 0 and position 0 is not in the other set
//                         (the smallest position in neither set: the CPU's first_out).
// Both slots start at ASP_NO_POSITION; every cell that has keys gets a gap candidate.
// Thread mapping: one thread per key of either set (grid-stride over nm + ns: mkeys,
// then skeys), coalesced reads of the key and its neighbours, binary searches in the
// other set, atomicMin on the cell's slots (results independent of the thread order).
// Memory traffic: 8 bytes per key (neighbours from cache), log2 of the other set's size
// cached reads per search, at most three 8-byte atomics per key.
// Device checks: a key not above its predecessor (ASP_MASKED_KEYS_ORDER) or outside
// [0, num_cells * slice_size) (ASP_MASKED_KEY_RANGE), at the key's index counted over
// mkeys then skeys; the key is skipped.
__global__ void first_unstored_candidates(const long long* __restrict__ mkeys, long long nm,
                                          const long long* __restrict__ skeys, long long ns,
                                          long long slice_size, long long num_cells,
                                          long long* best, unsigned long long* error) {
    for (ASP_GRID_STRIDE(t, nm + ns)) {
        const bool masked = t < nm;
        const long long* own = masked ? mkeys : skeys;
        const long long* other = masked ? skeys : mkeys;
        const long long n_own = masked ? nm : ns;
        const long long n_other = masked ? ns : nm;
        const long long i = masked ? t : t - nm;
        const long long k = __ldg(own + i);
        if (i > 0 && __ldg(own + i - 1) >= k) {
            ASP_RAISE(error, ASP_MASKED_KEYS_ORDER, t);
            continue;
        }
        if (k < 0 || k / slice_size >= num_cells) {
            ASP_RAISE(error, ASP_MASKED_KEY_RANGE, t);
            continue;
        }
        const long long c = k / slice_size;
        const long long base = c * slice_size;
        const long long pos = k - base;
        if (masked && !asp_sorted_has(other, n_other, k)) atomicMin(best + c, pos);
        if (pos + 1 == slice_size ||
            (!(i + 1 < n_own && __ldg(own + i + 1) == k + 1) &&
             !asp_sorted_has(other, n_other, k + 1))) {
            atomicMin(best + num_cells + c, pos + 1);
        }
        if (pos > 0 && (i == 0 || __ldg(own + i - 1) < base) &&
            !asp_sorted_has(other, n_other, base)) {
            atomicMin(best + num_cells + c, 0LL);
        }
    }
}

// first_unstored, step 2: first_zero[c] = best[c] and first_out[c] = best[num_cells + c]
// where a candidate exists; other cells keep what the caller set, as on the CPU.
// Thread mapping: one thread per cell (grid-stride), coalesced.
// Memory traffic: 16 bytes read and at most 16 written per cell.
__global__ void first_unstored_finish(const long long* __restrict__ best, long long num_cells,
                                      long long* __restrict__ first_zero,
                                      long long* __restrict__ first_out) {
    for (ASP_GRID_STRIDE(c, num_cells)) {
        const long long zero = __ldg(best + c);
        const long long out = __ldg(best + num_cells + c);
        if (zero != ASP_NO_POSITION) first_zero[c] = zero;
        if (out != ASP_NO_POSITION) first_out[c] = out;
    }
}

// sorted_member: out[i] = queries[i] is one of the sorted, distinct keys[0:m].
// Thread mapping: one thread per query (a binary search of keys) and, after them, one
// per key checking its order (grid-stride over n + m); coalesced reads of queries and
// writes of out. Memory traffic: 8 bytes read and one byte written per query, log2(m)
// cached reads of keys per search; 8 bytes per key for the check.
// Device check: a key not above its predecessor (ASP_MASKED_KEYS_ORDER at the key's
// index).
__global__ void sorted_member(const long long* __restrict__ keys, long long m,
                              const long long* __restrict__ queries, long long n,
                              unsigned char* __restrict__ out, unsigned long long* error) {
    for (ASP_GRID_STRIDE(t, n + m)) {
        if (t < n) {
            out[t] = asp_sorted_has(keys, m, __ldg(queries + t));
        } else if (t > n && __ldg(keys + t - n - 1) >= __ldg(keys + t - n)) {
            ASP_RAISE(error, ASP_MASKED_KEYS_ORDER, t - n);
        }
    }
}
