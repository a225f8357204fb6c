// Segment reductions, fused gather + reduce and scatters: CUDA twins of
// arrow_sparse/kernels/cpu/segment.py (same semantics; see that module's docstring).
// Layouts are C-contiguous: values [N, D] (1-D values are D = 1), outputs [rows, D].
// Offsets are int or long long (template O) and may start above zero; ids / indices are
// int or long long (template I). `valid` is a uint8 row mask unless `all_valid`, `vmask`
// a uint8 value mask if `masked`. Weights arrive already converted to the accumulator
// type A on the host (the CPU kernel's `zero + w` is exactly that conversion), and
// per-row weight offsets as long long (`has_woff`). T is the values type, A the
// accumulator (double, long long or unsigned long long: the CPU kernel's `zero`), Out the
// output type. Inputs are checked on the host before launch: no device error buffer.
//
// Numerics follow the CPU kernels operation by operation (same accumulator, same order
// of additions inside a segment, same lane split of the 1-D sum and max/min), and float
// products and sums use __dmul_rn / __dadd_rn on the device so nvcc does not contract them
// into FMAs. Sorted reductions are therefore bit-identical to the CPU up to exp/log
// (logsumexp: CUDA's libdevice vs libm, <= 2 ulp). Scatter-adds combine in atomic order:
// equal for integers, float results within n * eps * sum|x| of the CPU's.
//
// Barrier-free: one thread per output element, grid-stride loops, atomics for scatters.

#if defined(__CUDACC__)
#define ASP_EXP(x) exp(x)
#define ASP_LOG(x) log(x)
#else  // the CPU emulator (g++, no <cmath> in the force-included header)
#define ASP_EXP(x) __builtin_exp(x)
#define ASP_LOG(x) __builtin_log(x)
#endif

// ------------------------------------------------------------------ arithmetic helpers
// a + b and a * b in A. Signed 64-bit arithmetic wraps (two's complement, as Numba's
// does) through unsigned, so overflow is defined; doubles round each operation.
template <typename A>
__device__ __forceinline__ A asp_add(A a, A b) { return a + b; }
template <typename A>
__device__ __forceinline__ A asp_mul(A a, A b) { return a * b; }
template <>
__device__ __forceinline__ long long asp_add<long long>(long long a, long long b) {
    return (long long)((unsigned long long)a + (unsigned long long)b);
}
template <>
__device__ __forceinline__ long long asp_mul<long long>(long long a, long long b) {
    return (long long)((unsigned long long)a * (unsigned long long)b);
}
template <>
__device__ __forceinline__ double asp_add<double>(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}
template <>
__device__ __forceinline__ double asp_mul<double>(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

template <typename T>
__device__ __forceinline__ bool asp_isnan(T) { return false; }
__device__ __forceinline__ bool asp_isnan(float x) { return x != x; }
__device__ __forceinline__ bool asp_isnan(double x) { return x != x; }

// The CPU kernels' NaN-propagating update: x if (x > m or x != x) else m.
template <typename T>
__device__ __forceinline__ T asp_take_max(T x, T m) { return (x > m || asp_isnan(x)) ? x : m; }
template <typename T>
__device__ __forceinline__ T asp_take_min(T x, T m) { return (x < m || asp_isnan(x)) ? x : m; }

__device__ __forceinline__ bool asp_isfinite(double x) { return x - x == 0.0; }

__device__ __forceinline__ double asp_neg_inf() {
    union { unsigned long long u; double d; } bits;
    bits.u = 0xFFF0000000000000ULL;
    return bits.d;
}

__device__ __forceinline__ bool asp_row_valid(const unsigned char* valid, int all_valid,
                                              long long r) {
    return all_valid || __ldg(valid + r) != 0;
}

// ----------------------------------------------------------------------------- atomics
__device__ __forceinline__ void asp_atomic_add(double* p, double x) { atomicAdd(p, x); }
__device__ __forceinline__ void asp_atomic_add(unsigned long long* p, unsigned long long x) {
    atomicAdd(p, x);
}
// int64 sums: two's-complement addition is the same bit operation as unsigned addition.
__device__ __forceinline__ void asp_atomic_add(long long* p, long long x) {
    atomicAdd((unsigned long long*)p, (unsigned long long)x);
}

__device__ __forceinline__ void asp_count(long long* counts, long long s) {
    atomicAdd((unsigned long long*)(counts + s), 1ULL);
}

// Integer max/min: CUDA's atomics (values narrower than 32 bits are widened to int by
// the host, so every integer type here has a native atomic).
__device__ __forceinline__ void asp_atomic_extreme(int* p, int x, int is_max) {
    if (is_max) atomicMax(p, x); else atomicMin(p, x);
}
__device__ __forceinline__ void asp_atomic_extreme(unsigned int* p, unsigned int x, int is_max) {
    if (is_max) atomicMax(p, x); else atomicMin(p, x);
}
__device__ __forceinline__ void asp_atomic_extreme(long long* p, long long x, int is_max) {
    if (is_max) atomicMax(p, x); else atomicMin(p, x);
}
__device__ __forceinline__ void asp_atomic_extreme(unsigned long long* p, unsigned long long x,
                                                   int is_max) {
    if (is_max) atomicMax(p, x); else atomicMin(p, x);
}
// Float max/min: a compare-and-swap loop on the bit pattern, applying the CPU kernel's
// NaN-propagating update; it stops without writing when the update keeps the old value.
__device__ __forceinline__ void asp_atomic_extreme(float* p, float x, int is_max) {
    union { unsigned int u; float f; } old, want;
    unsigned int* bits = (unsigned int*)p;
    old.f = *p;
    while (true) {
        want.f = is_max ? asp_take_max(x, old.f) : asp_take_min(x, old.f);
        if (want.u == old.u) return;
        const unsigned int seen = atomicCAS(bits, old.u, want.u);
        if (seen == old.u) return;
        old.u = seen;
    }
}
__device__ __forceinline__ void asp_atomic_extreme(double* p, double x, int is_max) {
    union { unsigned long long u; double f; } old, want;
    unsigned long long* bits = (unsigned long long*)p;
    old.f = *p;
    while (true) {
        want.f = is_max ? asp_take_max(x, old.f) : asp_take_min(x, old.f);
        if (want.u == old.u) return;
        const unsigned long long seen = atomicCAS(bits, old.u, want.u);
        if (seen == old.u) return;
        old.u = seen;
    }
}

// ================================================================ sorted reductions
// sorted_sum: out[r, d] = sum (mean) over the non-null values i of row r of
// w_i * values[i, d] in A; rows with fewer than min_count values get `empty`.
// `lanes4` (1-D values, no mask, no weights) splits the row into the CPU's four
// interleaved accumulators, (s0 + s1) + (s2 + s3), so float results are bit-identical.
// Thread mapping: one thread per output element e = r * D + d (grid-stride). For each
// value i of the row the D threads of r read D consecutive addresses: coalesced along D.
// Memory traffic: each value read once (plus its weight/mask byte per thread, from
// cache), one write per output element; offsets/valid per row shared by D threads.
template <typename T, typename A, typename Out, typename O>
__global__ void sorted_sum(const T* __restrict__ values, const O* __restrict__ offsets,
                           const unsigned char* __restrict__ valid, int all_valid,
                           const unsigned char* __restrict__ vmask, int masked,
                           const A* __restrict__ weights, int weighted,
                           const long long* __restrict__ woffsets, int has_woff, int lanes4,
                           int mean, A zero, long long min_count, Out empty,
                           long long num_rows, long long width, Out* __restrict__ out,
                           long long* __restrict__ counts, int want_counts) {
    for (ASP_GRID_STRIDE(e, num_rows * width)) {
        const long long r = e / width;
        const long long d = e - r * width;
        A acc = zero;
        long long n = 0;
        if (asp_row_valid(valid, all_valid, r)) {
            const long long start = (long long)__ldg(offsets + r);
            const long long stop = (long long)__ldg(offsets + r + 1);
            if (weighted) {
                const long long shift = (has_woff ? __ldg(woffsets + r) : start) - start;
                for (long long i = start; i < stop; ++i) {
                    if (masked && !__ldg(vmask + i)) continue;
                    acc = asp_add(acc, asp_mul(__ldg(weights + i + shift),
                                               (A)__ldg(values + i * width + d)));
                    ++n;
                }
            } else if (masked) {
                for (long long i = start; i < stop; ++i) {
                    if (!__ldg(vmask + i)) continue;
                    acc = asp_add(acc, (A)__ldg(values + i * width + d));
                    ++n;
                }
            } else if (lanes4) {  // width == 1
                A s0 = zero, s1 = zero, s2 = zero, s3 = zero;
                long long i = start;
                for (; i + 4 <= stop; i += 4) {
                    s0 = asp_add(s0, (A)__ldg(values + i));
                    s1 = asp_add(s1, (A)__ldg(values + i + 1));
                    s2 = asp_add(s2, (A)__ldg(values + i + 2));
                    s3 = asp_add(s3, (A)__ldg(values + i + 3));
                }
                for (; i < stop; ++i) s0 = asp_add(s0, (A)__ldg(values + i));
                acc = asp_add(asp_add(s0, s1), asp_add(s2, s3));
                n = stop - start;
            } else {
                for (long long i = start; i < stop; ++i) {
                    acc = asp_add(acc, (A)__ldg(values + i * width + d));
                }
                n = stop - start;
            }
        }
        if (want_counts && d == 0) counts[r] = n;
        if (n < min_count) {
            out[e] = empty;
        } else if (mean) {
            out[e] = (Out)(acc / (A)n);
        } else {
            out[e] = (Out)acc;
        }
    }
}

// sorted_extreme: out[r, d] = max (min) of the non-null values of row r, starting from
// `init` (the dtype's lowest / highest); NaN propagates; fewer than min_count -> empty.
// `lanes2` (1-D, no mask) uses the CPU's two interleaved lanes, so the sign of a zero
// and the NaN kept are the CPU's.
// Thread mapping: one thread per output element (r, d), grid-stride; coalesced along D.
// Memory traffic: each value read once, one write per output element.
template <typename T, typename O>
__global__ void sorted_extreme(const T* __restrict__ values, const O* __restrict__ offsets,
                               const unsigned char* __restrict__ valid, int all_valid,
                               const unsigned char* __restrict__ vmask, int masked,
                               int is_max, int lanes2, T init, long long min_count, T empty,
                               long long num_rows, long long width, T* __restrict__ out,
                               long long* __restrict__ counts, int want_counts) {
    for (ASP_GRID_STRIDE(e, num_rows * width)) {
        const long long r = e / width;
        const long long d = e - r * width;
        T m = init;
        long long n = 0;
        if (asp_row_valid(valid, all_valid, r)) {
            const long long start = (long long)__ldg(offsets + r);
            const long long stop = (long long)__ldg(offsets + r + 1);
            if (lanes2 && !masked) {  // width == 1
                T m0 = init, m1 = init;
                long long i = start;
                for (; i + 2 <= stop; i += 2) {
                    const T x0 = __ldg(values + i);
                    const T x1 = __ldg(values + i + 1);
                    m0 = is_max ? asp_take_max(x0, m0) : asp_take_min(x0, m0);
                    m1 = is_max ? asp_take_max(x1, m1) : asp_take_min(x1, m1);
                }
                if (i < stop) {
                    const T x0 = __ldg(values + i);
                    m0 = is_max ? asp_take_max(x0, m0) : asp_take_min(x0, m0);
                }
                m = is_max ? asp_take_max(m1, m0) : asp_take_min(m1, m0);
                n = stop - start;
            } else {
                for (long long i = start; i < stop; ++i) {
                    if (masked && !__ldg(vmask + i)) continue;
                    const T x = __ldg(values + i * width + d);
                    m = is_max ? asp_take_max(x, m) : asp_take_min(x, m);
                    ++n;
                }
            }
        }
        if (want_counts && d == 0) counts[r] = n;
        out[e] = n < min_count ? empty : m;
    }
}

// sorted_arg_extreme: out[r, d] = position within row r of the first max (min) of
// column d among its non-null values (the first NaN wins, as numpy.argmax); empty for a
// row with no values or fewer than min_count.
// Thread mapping: one thread per output element (r, d), grid-stride; coalesced along D.
// Memory traffic: each value read once, one 8-byte write per output element.
template <typename T, typename O>
__global__ void sorted_arg_extreme(const T* __restrict__ values, const O* __restrict__ offsets,
                                   const unsigned char* __restrict__ valid, int all_valid,
                                   const unsigned char* __restrict__ vmask, int masked,
                                   int is_max, long long min_count, long long empty,
                                   long long num_rows, long long width,
                                   long long* __restrict__ out,
                                   long long* __restrict__ counts, int want_counts) {
    for (ASP_GRID_STRIDE(e, num_rows * width)) {
        const long long r = e / width;
        const long long d = e - r * width;
        long long n = 0;
        long long where = empty;
        if (asp_row_valid(valid, all_valid, r)) {
            const long long start = (long long)__ldg(offsets + r);
            const long long stop = (long long)__ldg(offsets + r + 1);
            T best = T();
            for (long long i = start; i < stop; ++i) {
                if (masked && !__ldg(vmask + i)) continue;
                const T x = __ldg(values + i * width + d);
                if (n == 0) {
                    best = x;
                    where = i - start;
                } else if (!asp_isnan(best) &&
                           (asp_isnan(x) || (is_max ? x > best : x < best))) {
                    best = x;
                    where = i - start;
                }
                ++n;
            }
        }
        if (want_counts && d == 0) counts[r] = n;
        out[e] = (n < min_count || n == 0) ? empty : where;
    }
}

// sorted_prod: out[r, d] = product in A (from `one`) of the non-null values of row r.
// Thread mapping: one thread per output element (r, d), grid-stride; coalesced along D.
// Memory traffic: each value read once, one write per output element.
template <typename T, typename A, typename Out, typename O>
__global__ void sorted_prod(const T* __restrict__ values, const O* __restrict__ offsets,
                            const unsigned char* __restrict__ valid, int all_valid,
                            const unsigned char* __restrict__ vmask, int masked, A one,
                            long long min_count, Out empty, long long num_rows,
                            long long width, Out* __restrict__ out,
                            long long* __restrict__ counts, int want_counts) {
    for (ASP_GRID_STRIDE(e, num_rows * width)) {
        const long long r = e / width;
        const long long d = e - r * width;
        A acc = one;
        long long n = 0;
        if (asp_row_valid(valid, all_valid, r)) {
            const long long start = (long long)__ldg(offsets + r);
            const long long stop = (long long)__ldg(offsets + r + 1);
            for (long long i = start; i < stop; ++i) {
                if (masked && !__ldg(vmask + i)) continue;
                acc = asp_mul(acc, (A)__ldg(values + i * width + d));
                ++n;
            }
        }
        if (want_counts && d == 0) counts[r] = n;
        out[e] = n < min_count ? empty : (Out)acc;
    }
}

// sorted_logsumexp: out[r, d] = m + log(sum(exp(x - m))) in double, m the column max of
// row r (NaN-propagating); an infinite or NaN m is the result itself.
// Thread mapping: one thread per output element (r, d), grid-stride; coalesced along D.
// Memory traffic: each value read twice (max pass, then exp pass; the second mostly
// from L1/L2 for short rows), one write per output element.
template <typename T, typename Out, typename O>
__global__ void sorted_logsumexp(const T* __restrict__ values, const O* __restrict__ offsets,
                                 const unsigned char* __restrict__ valid, int all_valid,
                                 const unsigned char* __restrict__ vmask, int masked,
                                 long long min_count, Out empty, long long num_rows,
                                 long long width, Out* __restrict__ out,
                                 long long* __restrict__ counts, int want_counts) {
    for (ASP_GRID_STRIDE(e, num_rows * width)) {
        const long long r = e / width;
        const long long d = e - r * width;
        double m = asp_neg_inf();
        double acc = 0.0;
        long long n = 0;
        if (asp_row_valid(valid, all_valid, r)) {
            const long long start = (long long)__ldg(offsets + r);
            const long long stop = (long long)__ldg(offsets + r + 1);
            for (long long i = start; i < stop; ++i) {
                if (masked && !__ldg(vmask + i)) continue;
                m = asp_take_max((double)__ldg(values + i * width + d), m);
                ++n;
            }
            if (asp_isfinite(m)) {
                for (long long i = start; i < stop; ++i) {
                    if (masked && !__ldg(vmask + i)) continue;
                    const double x = (double)__ldg(values + i * width + d);
                    acc = asp_add(acc, (double)ASP_EXP(x - m));
                }
            }
        }
        if (want_counts && d == 0) counts[r] = n;
        if (n < min_count) {
            out[e] = empty;
        } else {
            out[e] = (Out)(asp_isfinite(m) ? asp_add(m, (double)ASP_LOG(acc)) : m);
        }
    }
}

// ============================================================= fused gather + reduce
// gather_reduce (sparse_segment_* and embedding_bag): out[r, d] reduces
// w_i * data[indices[i], d] over the non-null ids i of bag r, mode 0 sum, 1 mean, 2 max
// (from `lowest`). The unmasked, unweighted sum adds ids four at a time as
// ((0 + a) + b) + ((0 + c) + e), like the CPU kernel, so float results are identical;
// for a float table whose CPU twin takes its vectorised path (see the launcher), the
// first `block_cols` columns sum blocks of 4 ids in T, then add each block into A, and
// the other columns add one id at a time (block_cols = 0: that path is off).
// Thread mapping: one thread per output element (bag r, feature d), grid-stride. For each
// id the D threads of a bag read one table row: D consecutive addresses, coalesced.
// Memory traffic: one table-row read per id (the random-access part; hot rows hit L2),
// each id read by the D threads of its bag from cache, one write per output element.
// No gathered [nnz, D] intermediate is materialised.
template <typename T, typename A, typename Out, typename O, typename I>
__global__ void gather_reduce(const T* __restrict__ data, const I* __restrict__ indices,
                              const O* __restrict__ offsets,
                              const unsigned char* __restrict__ valid, int all_valid,
                              const unsigned char* __restrict__ vmask, int masked,
                              const A* __restrict__ weights, int weighted,
                              const long long* __restrict__ woffsets, int has_woff, int mode,
                              long long block_cols, A zero, A lowest, long long min_count, Out empty,
                              long long num_rows, long long width, Out* __restrict__ out,
                              long long* __restrict__ counts, int want_counts) {
    const int is_max = mode == 2;
    const int plain = !(masked || weighted || is_max);
    for (ASP_GRID_STRIDE(e, num_rows * width)) {
        const long long r = e / width;
        const long long d = e - r * width;
        A acc = is_max ? lowest : zero;
        long long n = 0;
        if (asp_row_valid(valid, all_valid, r)) {
            const long long start = (long long)__ldg(offsets + r);
            const long long stop = (long long)__ldg(offsets + r + 1);
            long long head = start;
            if (plain && block_cols > 0) {
                // The CPU's wide-float-table path: in the first block_cols columns,
                // blocks of 4 ids summed in T (from +0), each block then added into A;
                // in the other columns one id at a time (the loop below).
                for (; d < block_cols && head < stop; head += 4) {
                    const long long end = head + 4 < stop ? head + 4 : stop;
                    T s = T();
                    for (long long j = head; j < end; ++j) {
                        s = (T)(s + __ldg(data + (long long)__ldg(indices + j) * width + d));
                    }
                    acc = asp_add(acc, (A)s);
                }
                n = stop - start;
            } else if (plain) {
                for (; head + 4 <= stop; head += 4) {
                    const A a = (A)__ldg(data + (long long)__ldg(indices + head) * width + d);
                    const A b = (A)__ldg(data + (long long)__ldg(indices + head + 1) * width + d);
                    const A c = (A)__ldg(data + (long long)__ldg(indices + head + 2) * width + d);
                    const A f = (A)__ldg(data + (long long)__ldg(indices + head + 3) * width + d);
                    acc = asp_add(acc, asp_add(asp_add(asp_add(zero, a), b),
                                               asp_add(asp_add(zero, c), f)));
                }
                n = stop - start;
            }
            const long long shift =
                weighted ? (has_woff ? __ldg(woffsets + r) : start) - start : 0;
            for (long long i = head; i < stop; ++i) {
                if (masked && !__ldg(vmask + i)) continue;
                if (!plain) ++n;
                A x = (A)__ldg(data + (long long)__ldg(indices + i) * width + d);
                if (weighted) x = asp_mul(__ldg(weights + i + shift), x);
                acc = is_max ? asp_take_max(x, acc) : asp_add(acc, x);
            }
        }
        if (want_counts && d == 0) counts[r] = n;
        if (n < min_count) {
            out[e] = empty;
        } else if (mode == 1) {
            out[e] = (Out)(acc / (A)n);
        } else {
            out[e] = (Out)acc;
        }
    }
}

// ========================================================================= scatters
// scatter_add (unsorted sum / mean / weighted sum): acc[ids[i], d] += w_i * values[i, d]
// and, if want_counts, counts[ids[i]] += 1 over the non-null values, by atomics (int64
// through unsigned long long two's complement; double atomicAdd needs sm_60+). acc and
// counts start at zero; scatter_finish then writes the output. Ids are checked on the
// host before launch.
// Thread mapping: one thread per input element (i, d), grid-stride: coalesced reads of
// values along D, atomics to D consecutive addresses of one output row.
// Memory traffic: each value read once, one atomic per value element (+1 per value for
// the count); contention only where many values share a segment.
template <typename T, typename A, typename I>
__global__ void scatter_add(const T* __restrict__ values, const I* __restrict__ ids,
                            const unsigned char* __restrict__ vmask, int masked,
                            const A* __restrict__ weights, int weighted, long long num_values,
                            long long width, A* __restrict__ acc,
                            long long* __restrict__ counts, int want_counts) {
    for (ASP_GRID_STRIDE(e, num_values * width)) {
        const long long i = e / width;
        const long long d = e - i * width;
        if (masked && !__ldg(vmask + i)) continue;
        const long long s = (long long)__ldg(ids + i);
        if (want_counts && d == 0) asp_count(counts, s);
        A x = (A)__ldg(values + e);
        if (weighted) x = asp_mul(__ldg(weights + i), x);
        asp_atomic_add(acc + s * width + d, x);
    }
}

// scatter_extreme (unsorted max / min): acc[ids[i], d] = max(acc, values[i, d]) (or
// min), NaN propagating, by atomicMax/Min (integers; U is int for 8/16-bit values, which
// the host widens) or a compare-and-swap loop (floats), and counts[ids[i]] += 1. acc
// starts at lowest / highest, counts at zero; scatter_finish then writes the output.
// Thread mapping: one thread per input element (i, d), grid-stride; coalesced along D.
// Memory traffic: each value read once, at most one atomic per value element (a CAS
// retry only when another thread changed the same output in between).
template <typename T, typename U, typename I>
__global__ void scatter_extreme(const T* __restrict__ values, const I* __restrict__ ids,
                                const unsigned char* __restrict__ vmask, int masked,
                                int is_max, long long num_values, long long width,
                                U* __restrict__ acc, long long* __restrict__ counts) {
    for (ASP_GRID_STRIDE(e, num_values * width)) {
        const long long i = e / width;
        const long long d = e - i * width;
        if (masked && !__ldg(vmask + i)) continue;
        const long long s = (long long)__ldg(ids + i);
        if (d == 0) asp_count(counts, s);
        asp_atomic_extreme(acc + s * width + d, (U)__ldg(values + e), is_max);
    }
}

// scatter_finish: out[s, d] from the scatter's accumulator: `empty` where the segment
// has fewer than min_count values (counts read only if `counting`), acc / count for a
// mean, acc otherwise, converted to Out (the CPU kernel's final loop).
// Thread mapping: one thread per output element, grid-stride. Memory traffic: one read
// of acc and one write of out per element, one count read per element (cache).
template <typename A, typename Out>
__global__ void scatter_finish(const A* __restrict__ acc, const long long* __restrict__ counts,
                               int counting, int mean, long long min_count, Out empty,
                               long long num_segments, long long width,
                               Out* __restrict__ out) {
    for (ASP_GRID_STRIDE(e, num_segments * width)) {
        const long long c = counting ? __ldg(counts + e / width) : 0;
        if (c < min_count) {
            out[e] = empty;
        } else if (mean) {
            out[e] = (Out)(__ldg(acc + e) / (A)c);
        } else {
            out[e] = (Out)__ldg(acc + e);
        }
    }
}

// scatter_claim: the last position of each row index in `indices` (`last` starts at
// -1), so that scatter_assign_rows writes each row once, from its last occurrence:
// the CPU's index-order loop, deterministically, without sorting.
// Thread mapping: one thread per index, grid-stride. Memory traffic: one index read and
// one atomicMax per index (scratch of 8 bytes per table row).
template <typename I>
__global__ void scatter_claim(const I* __restrict__ indices, long long num_indices,
                              long long* __restrict__ last) {
    for (ASP_GRID_STRIDE(i, num_indices)) {
        atomicMax(last + (long long)__ldg(indices + i), i);
    }
}

// scatter_assign_rows: data[indices[i], d] = slices[i, d] for the LAST i of each row
// (so the last write wins, as in the CPU's index-order loop).
// Thread mapping: one thread per slice element (i, d), grid-stride; coalesced along D.
// Memory traffic: one read of last[row] per element (cache), one read + one write per
// element written.
template <typename T, typename I>
__global__ void scatter_assign_rows(T* __restrict__ data, const I* __restrict__ indices,
                                    const T* __restrict__ slices,
                                    const long long* __restrict__ last, long long num_indices,
                                    long long width) {
    for (ASP_GRID_STRIDE(e, num_indices * width)) {
        const long long i = e / width;
        const long long row = (long long)__ldg(indices + i);
        if (__ldg(last + row) != i) continue;
        data[row * width + (e - i * width)] = __ldg(slices + e);
    }
}

// scatter_weighted_sum_runs: Caffe2's ScatterWeightedSumOp, whose first loop scales
// data[indices[i]] by w0 for every i and whose second loop then adds w1 * slices[i]
// into data[indices[i]] for every i. The host sorts the indices stably: `sorted` holds
// them in order and `order` their positions, so each row's occurrences form one run of
// `sorted`, in index order. The thread at the start of a run owns its row: it scales
// the row once per occurrence, then adds the run's slices in index order, each step in
// double and rounded to T (the CPU kernel's steps exactly; scaling is skipped when w0 is
// 1, as there).
// Thread mapping: one thread per (sorted position p, column d), grid-stride; only the
// run starts work, so a row listed k times costs its owner k scalings and k additions.
// Memory traffic: one read + one write of data per distinct row element, one slice
// read per index element (gathered through `order`), two index reads per element.
template <typename T, typename I>
__global__ void scatter_weighted_sum_runs(T* __restrict__ data, double w0,
                                          const I* __restrict__ sorted,
                                          const long long* __restrict__ order,
                                          const T* __restrict__ slices, double w1,
                                          long long num_indices, long long width) {
    for (ASP_GRID_STRIDE(e, num_indices * width)) {
        const long long p = e / width;
        const long long d = e - p * width;
        const I row = __ldg(sorted + p);
        if (p > 0 && __ldg(sorted + p - 1) == row) continue;
        long long stop = p + 1;
        while (stop < num_indices && __ldg(sorted + stop) == row) ++stop;
        T* at = data + (long long)row * width + d;
        T x = *at;
        if (w0 != 1.0) {
            for (long long q = p; q < stop; ++q) x = (T)asp_mul(w0, (double)x);
        }
        for (long long q = p; q < stop; ++q) {
            const double s = (double)__ldg(slices + __ldg(order + q) * width + d);
            x = (T)asp_add((double)x, asp_mul(w1, s));
        }
        *at = x;
    }
}

// ids_to_offsets: offsets[k] = first i with ids[i] >= k (sorted ids), k = 0 .. S.
// Thread mapping: one thread per offset k, grid-stride; binary search (log2 N reads that
// neighbouring threads share through the cache). Memory traffic: one 8-byte write per
// offset.
template <typename I>
__global__ void ids_to_offsets(const I* __restrict__ ids, long long num_ids,
                               long long num_segments, long long* __restrict__ offsets) {
    for (ASP_GRID_STRIDE(k, num_segments + 1)) {
        long long lo = 0;
        long long hi = num_ids;
        while (lo < hi) {
            const long long mid = lo + (hi - lo) / 2;
            if ((long long)__ldg(ids + mid) < k) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        offsets[k] = lo;
    }
}
