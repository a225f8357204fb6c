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

// Arithmetic, max / min updates and atomics: _reduce.cuh.

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
        if (weighted) x = asp_mul(__ldg(weights + i), x);
        asp_atomic_add(acc + s * width + d, x);
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
        asp_atomic_extreme(acc + s * width + d, (U)__ldg(data + r * width + d), is_max);
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
