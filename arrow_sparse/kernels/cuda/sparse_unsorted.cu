// Fused sparse unsorted segment reductions: CUDA twins of
// arrow_sparse/kernels/cpu/sparse_unsorted.py (same semantics; see that module's
// docstring). data [V, W] and the accumulators [S, W] are C-contiguous; indices and
// segment ids are int or long long (template I); `imask` is a uint8 mask over the
// indices if `masked`. Weights arrive converted to the accumulator type A on the host.
// T is the data type, A the accumulator (double, long long or unsigned long long), Out
// the output type.
//
// Device errors. Host inputs are checked on the host before launch; device inputs are
// re-checked here as they are read: a segment id outside [0, S) or an index outside
// [0, V) is skipped and recorded in the error word at its position (ASP_RAISE), which
// the public function raises.
//
// Barrier-free: one thread per gathered element (i, d), grid-stride loops, atomics into
// the accumulators; gather_scatter_finish then writes the output, one thread per output
// element. Float sums combine in atomic order (within n * eps * sum|x| of the CPU's);
// integer sums, max and min are exact and order-free.

enum AspSparseUnsortedError {
    ASP_SU_INDEX_RANGE = 1,  // message: IndexError: indices out of range [0, len(data))
    ASP_SU_ID_NEGATIVE = 2,  // message: IndexError: segment_ids must be non-negative
    ASP_SU_ID_RANGE = 3,  // message: IndexError: segment_ids must be < num_segments
};

// ------------------------------------------------------------------ arithmetic helpers
// w * x in A: signed 64-bit products wrap through unsigned (defined overflow, as
// Numba's); double products are asp_mul_rn (no contraction into an FMA).
template <typename A>
__device__ __forceinline__ A asp_su_mul(A a, A b) { return a * b; }
template <>
__device__ __forceinline__ long long asp_su_mul<long long>(long long a, long long b) {
    return (long long)((unsigned long long)a * (unsigned long long)b);
}
template <>
__device__ __forceinline__ double asp_su_mul<double>(double a, double b) {
    return asp_mul_rn(a, b);
}

// max / min updates: integers compare and select; floats are IEEE 754-2019 maximum /
// minimum as on the CPU (NaN propagates, max keeps +0.0 and min -0.0 of two zeros).
template <typename T>
__device__ __forceinline__ T asp_su_max(T x, T m) { return x > m ? x : m; }
template <typename T>
__device__ __forceinline__ T asp_su_min(T x, T m) { return x < m ? x : m; }
__device__ __forceinline__ bool asp_su_signbit(float x) {
    union { float f; unsigned int u; } bits;
    bits.f = x;
    return (bits.u >> 31) != 0;
}
__device__ __forceinline__ bool asp_su_signbit(double x) {
    union { double f; unsigned long long u; } bits;
    bits.f = x;
    return (bits.u >> 63) != 0;
}
template <typename F>
__device__ __forceinline__ F asp_su_float_max(F x, F m) {
    if (x != x) return x;
    if (m != m || x < m) return m;
    return x > m || !asp_su_signbit(x) ? x : m;
}
template <typename F>
__device__ __forceinline__ F asp_su_float_min(F x, F m) {
    if (x != x) return x;
    if (m != m || x > m) return m;
    return x < m || asp_su_signbit(x) ? x : m;
}
__device__ __forceinline__ float asp_su_max(float x, float m) { return asp_su_float_max(x, m); }
__device__ __forceinline__ double asp_su_max(double x, double m) { return asp_su_float_max(x, m); }
__device__ __forceinline__ float asp_su_min(float x, float m) { return asp_su_float_min(x, m); }
__device__ __forceinline__ double asp_su_min(double x, double m) { return asp_su_float_min(x, m); }

// ----------------------------------------------------------------------------- atomics
__device__ __forceinline__ void asp_su_add(double* p, double x) { atomicAdd(p, x); }
__device__ __forceinline__ void asp_su_add(unsigned long long* p, unsigned long long x) {
    atomicAdd(p, x);
}
// int64 sums: two's-complement addition is the same bit operation as unsigned addition.
__device__ __forceinline__ void asp_su_add(long long* p, long long x) {
    atomicAdd((unsigned long long*)p, (unsigned long long)x);
}

// Integer max/min: CUDA's atomics (the host widens 8/16-bit data to int).
__device__ __forceinline__ void asp_su_extreme(int* p, int x, int is_max) {
    if (is_max) atomicMax(p, x); else atomicMin(p, x);
}
__device__ __forceinline__ void asp_su_extreme(unsigned int* p, unsigned int x, int is_max) {
    if (is_max) atomicMax(p, x); else atomicMin(p, x);
}
__device__ __forceinline__ void asp_su_extreme(long long* p, long long x, int is_max) {
    if (is_max) atomicMax(p, x); else atomicMin(p, x);
}
__device__ __forceinline__ void asp_su_extreme(unsigned long long* p, unsigned long long x,
                                               int is_max) {
    if (is_max) atomicMax(p, x); else atomicMin(p, x);
}
// Float max/min: a compare-and-swap loop on the bit pattern applying the update above;
// it stops without writing when the update keeps the old value.
__device__ __forceinline__ void asp_su_extreme(float* p, float x, int is_max) {
    union { unsigned int u; float f; } old, want;
    unsigned int* bits = (unsigned int*)p;
    old.f = *p;
    while (true) {
        want.f = is_max ? asp_su_max(x, old.f) : asp_su_min(x, old.f);
        if (want.u == old.u) return;
        const unsigned int seen = atomicCAS(bits, old.u, want.u);
        if (seen == old.u) return;
        old.u = seen;
    }
}
__device__ __forceinline__ void asp_su_extreme(double* p, double x, int is_max) {
    union { unsigned long long u; double f; } old, want;
    unsigned long long* bits = (unsigned long long*)p;
    old.f = *p;
    while (true) {
        want.f = is_max ? asp_su_max(x, old.f) : asp_su_min(x, old.f);
        if (want.u == old.u) return;
        const unsigned long long seen = atomicCAS(bits, old.u, want.u);
        if (seen == old.u) return;
        old.u = seen;
    }
}

// The segment and the table row of gathered element i: false (the element is skipped)
// when the segment id lies outside [0, num_segments) or, for a non-null index, the
// index outside [0, num_rows), with the error recorded at i; false without an error for
// a null index.
template <typename I>
__device__ __forceinline__ bool asp_su_place(const I* __restrict__ indices,
                                             const unsigned char* __restrict__ imask,
                                             int masked, const I* __restrict__ ids,
                                             long long i, long long num_rows,
                                             long long num_segments,
                                             unsigned long long* error, long long* s,
                                             long long* r) {
    *s = (long long)__ldg(ids + i);
    if (*s < 0) {
        ASP_RAISE(error, ASP_SU_ID_NEGATIVE, i);
        return false;
    }
    if (*s >= num_segments) {
        ASP_RAISE(error, ASP_SU_ID_RANGE, i);
        return false;
    }
    if (masked && !__ldg(imask + i)) return false;
    *r = (long long)__ldg(indices + i);
    if (*r < 0 || *r >= num_rows) {
        ASP_RAISE(error, ASP_SU_INDEX_RANGE, i);
        return false;
    }
    return true;
}

// gather_scatter_add (sum / mean / weighted sum): acc[ids[i], d] += w_i * data[indices[i], d]
// and, if want_counts, counts[ids[i]] += 1 over the non-null indices, by atomics.
// Thread mapping: one thread per gathered element (i, d), grid-stride: coalesced reads
// of one table row along W, atomics to W consecutive addresses of one output row.
// Memory traffic: each gathered row read once, one atomic per element (+1 per index for
// the count); contention only where many indices share a segment.
template <typename T, typename A, typename I>
__global__ void gather_scatter_add(const T* __restrict__ data, const I* __restrict__ indices,
                                   const unsigned char* __restrict__ imask, int masked,
                                   const I* __restrict__ ids, const A* __restrict__ weights,
                                   int weighted, long long num, long long width,
                                   long long num_rows, long long num_segments,
                                   A* __restrict__ acc, long long* __restrict__ counts,
                                   int want_counts, unsigned long long* error) {
    for (ASP_GRID_STRIDE(e, num * width)) {
        const long long i = e / width;
        const long long d = e - i * width;
        long long s, r;
        if (!asp_su_place(indices, imask, masked, ids, i, num_rows, num_segments, error, &s, &r))
            continue;
        if (want_counts && d == 0) atomicAdd((unsigned long long*)(counts + s), 1ULL);
        A x = (A)__ldg(data + r * width + d);
        if (weighted) x = asp_su_mul(__ldg(weights + i), x);
        asp_su_add(acc + s * width + d, x);
    }
}

// gather_scatter_extreme (max / min): acc[ids[i], d] = max(acc, data[indices[i], d]) (or
// min) by atomics (U is int for 8/16-bit data), counts[ids[i]] += 1.
// Thread mapping and memory traffic as gather_scatter_add (a CAS retry only when another
// thread changed the same output in between).
template <typename T, typename U, typename I>
__global__ void gather_scatter_extreme(const T* __restrict__ data, const I* __restrict__ indices,
                                       const unsigned char* __restrict__ imask, int masked,
                                       const I* __restrict__ ids, int is_max, long long num,
                                       long long width, long long num_rows,
                                       long long num_segments, U* __restrict__ acc,
                                       long long* __restrict__ counts,
                                       unsigned long long* error) {
    for (ASP_GRID_STRIDE(e, num * width)) {
        const long long i = e / width;
        const long long d = e - i * width;
        long long s, r;
        if (!asp_su_place(indices, imask, masked, ids, i, num_rows, num_segments, error, &s, &r))
            continue;
        if (d == 0) atomicAdd((unsigned long long*)(counts + s), 1ULL);
        asp_su_extreme(acc + s * width + d, (U)__ldg(data + r * width + d), is_max);
    }
}

// gather_scatter_finish: out[s, d] from the accumulator: `empty` where the segment has
// fewer than min_count non-null indices, acc / count for a mean, acc otherwise.
// Thread mapping: one thread per output element, grid-stride. Memory traffic: one read
// of acc and one write of out per element, one count read per element (cache).
template <typename A, typename Out>
__global__ void gather_scatter_finish(const A* __restrict__ acc,
                                      const long long* __restrict__ counts, int mean,
                                      long long min_count, Out empty, long long num_segments,
                                      long long width, Out* __restrict__ out) {
    for (ASP_GRID_STRIDE(e, num_segments * width)) {
        const long long c = __ldg(counts + e / width);
        if (c < min_count) {
            out[e] = empty;
        } else if (mean) {
            out[e] = (Out)(__ldg(acc + e) / (A)c);
        } else {
            out[e] = (Out)__ldg(acc + e);
        }
    }
}
