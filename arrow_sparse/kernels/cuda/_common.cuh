// Shared by every kernel family: its text is put in front of each <family>.cu by the
// loader (arrow_sparse/kernels/cuda/__init__.py), never #included, so CuPy's cache key
// (the source text) covers it. NVRTC has no standard headers: use builtin types only
// (long long, unsigned char, ...), no <cstdint>, no std::.
//
// Kernels are barrier-free (no __syncthreads, shared memory or warp shuffles) so the
// CPU emulator in tests/cuda_emu runs them faithfully thread by thread. A kernel that
// needs a barrier or a shuffle for speed keeps a barrier-free variant selected by the
// one macro ARROW_SPARSE_EMULATOR (defined only by the emulator's header):
//
//     #if defined(ARROW_SPARSE_EMULATOR)
//         ... barrier-free code, same results ...
//     #else
//         ... __shfl_xor_sync / __syncthreads code ...
//     #endif
//
// Both variants are compiled by nvcc in tests/test_cuda_infra.py. The loader defines
// ASP_FAMILY_ID (the family's index in arrow_sparse.kernels.KERNEL_FAMILIES) between
// this header and the family's source.


// Index of this thread in the whole grid, in 64-bit arithmetic (blockIdx.x * blockDim.x
// overflows 32 bits for big grids).
__device__ __forceinline__ long long asp_thread_id() {
    return (long long)blockIdx.x * (long long)blockDim.x + (long long)threadIdx.x;
}

// Number of threads in the grid: the step of a grid-stride loop.
__device__ __forceinline__ long long asp_grid_stride() {
    return (long long)blockDim.x * (long long)gridDim.x;
}

// for (ASP_GRID_STRIDE(i, n)) { ... } visits i = 0 .. n-1, each by exactly one thread.
#define ASP_GRID_STRIDE(i, n) \
    long long i = asp_thread_id(); i < (long long)(n); i += asp_grid_stride()

// ------------------------------------------------------------------------ lane groups
// Lane groups are warps: 32 consecutive threads of a block (BLOCK is a multiple of 32),
// so every lane of a group sees the same group index in the grid-stride loops, and a
// group that skips an item skips it as a whole (it stays converged).
__device__ __forceinline__ long long asp_lane() { return asp_thread_id() & 31; }
__device__ __forceinline__ long long asp_group() { return asp_thread_id() >> 5; }
__device__ __forceinline__ long long asp_group_stride() { return asp_grid_stride() >> 5; }

// The sum over a lane group of 32 lane partials, partial(l) being lane l's (a double):
// the butterfly with xor offsets 16, 8, 4, 2, 1, a fixed order that leaves the same
// bits in every lane. GPU: each lane computes its own partial and the group adds them
// by warp shuffles; every lane of the warp must call it. Barrier-free variant
// (ARROW_SPARSE_EMULATOR): the calling thread, lane 0 of its group, computes the 32
// partials and adds them in the same order, so the result is the same bits.
template <typename Partial>
__device__ __forceinline__ double asp_group_sum(long long lane, const Partial& partial) {
#if defined(ARROW_SPARSE_EMULATOR)
    (void)lane;
    double sums[32];
    for (int l = 0; l < 32; ++l) sums[l] = partial(l);
    for (int offset = 16; offset > 0; offset >>= 1) {
        for (int l = 0; l < 32; ++l) {
            if ((l & offset) == 0) sums[l] = sums[l ^ offset] = sums[l] + sums[l ^ offset];
        }
    }
    return sums[0];
#else
    double sum = partial(lane);
    for (int offset = 16; offset > 0; offset >>= 1) {
        sum += __shfl_xor_sync(0xFFFFFFFFu, sum, offset);
    }
    return sum;
#endif
}

// --------------------------------------------------------------- segment pieces
// Work split by elements, never by segments: a segment (a bag, a row, a run of equal
// sorted ids) longer than `piece` positions would serialise the thread or lane group that
// owns it (a Zipf hot id makes runs thousands long). Such a segment [start, stop) is cut
// into pieces [start + j * piece, start + (j + 1) * piece), aligned to its start, so a
// segment of at most `piece` positions is one piece and is reduced exactly as before.
// Pieces j >= 1 are reduced by a first launch, one thread (group) per chunk k of the
// positions [k * piece, (k + 1) * piece): at most one such piece starts in a chunk, that
// of the segment covering position k * piece, so the chunk's partial has one slot,
// parts[k]. The second launch, one thread (group) per segment as before, reduces the
// first piece itself and then adds parts[k] for the later pieces in order: every result
// is the same bits whatever the thread order (no atomics), and the longest chain is
// piece + len / piece steps instead of len.
//
// asp_chunk_piece: the later piece [*a, *b) of segment *seg (offsets[seg] .. offsets[seg +
// 1]) that starts in chunk `chunk`, if any. offsets has num_segments + 1 entries and is
// searched with a binary search; whatever the offsets hold (a device check reports bad
// ones), the answer stays inside offsets and has offsets[seg] < chunk * piece <= *a < *b.
template <typename O>
__device__ __forceinline__ bool asp_chunk_piece(const O* __restrict__ offsets,
                                                long long num_segments, long long chunk,
                                                long long piece, long long* seg,
                                                long long* a, long long* b) {
    const long long at = chunk * piece;
    long long lo = 0;
    long long hi = num_segments;
    while (lo < hi) {  // lo: the number of segments starting before `at`
        const long long mid = lo + (hi - lo) / 2;
        if ((long long)__ldg(offsets + mid) < at) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo == 0) return false;  // lo > 0: offsets[lo - 1] < at was compared
    const long long start = (long long)__ldg(offsets + lo - 1);
    const long long stop = (long long)__ldg(offsets + lo);
    if (stop <= at) return false;
    const long long first = start + (at - start + piece - 1) / piece * piece;
    if (first >= stop) return false;
    *seg = lo - 1;
    *a = first;
    *b = stop - first > piece ? first + piece : stop;
    return true;
}

// The row holding position k: the largest r in [0, num_rows) with offsets[r] <= k (an
// empty row shares its offset with the next, so for offsets[0] <= k < offsets[num_rows]
// this is the non-empty row k belongs to). Whatever the offsets hold, the answer stays in
// [0, num_rows). log2(rows) reads that neighbouring threads share through the cache.
template <typename O>
__device__ __forceinline__ long long asp_row_of(const O* __restrict__ offsets,
                                                long long num_rows, long long k) {
    long long lo = 0;
    long long hi = num_rows;
    while (hi - lo > 1) {
        const long long mid = lo + (hi - lo) / 2;
        if ((long long)__ldg(offsets + mid) <= k) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

template <typename T>
__device__ __forceinline__ T asp_min(T a, T b) { return b < a ? b : a; }

template <typename T>
__device__ __forceinline__ T asp_max(T a, T b) { return a < b ? b : a; }

// ------------------------------------------------------------------- float arithmetic
// a * b rounded on its own. nvcc contracts `a * b + c` into one fused multiply-add
// (one rounding) by default; the CPU kernels (Numba, no fastmath) round the product
// first. A product made by these never takes part in a contraction, so a following
// + or - rounds separately, exactly as on the CPU.
__device__ __forceinline__ float asp_mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
__device__ __forceinline__ double asp_mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

// Correctly rounded square root in the argument's precision (Numba's math.sqrt keeps
// float32 as float32; NVRTC's default -prec-sqrt=true is IEEE-rounded).
__device__ __forceinline__ float asp_sqrt(float x) {
#if defined(__CUDACC__)
    return sqrtf(x);
#else
    return __builtin_sqrtf(x);
#endif
}
__device__ __forceinline__ double asp_sqrt(double x) {
#if defined(__CUDACC__)
    return sqrt(x);
#else
    return __builtin_sqrt(x);
#endif
}

// |x| with the sign bit cleared (also of -0.0 and NaN), like Numba's abs.
__device__ __forceinline__ double asp_fabs(double x) {
#if defined(__CUDACC__)
    return fabs(x);
#else
    return __builtin_fabs(x);
#endif
}

// exp and pow in double: CUDA's libdevice on the GPU (within 2 ulp of the correctly
// rounded result), the C library's in the emulator (what Numba calls on the CPU).
__device__ __forceinline__ double asp_exp(double x) {
#if defined(__CUDACC__)
    return exp(x);
#else
    return __builtin_exp(x);
#endif
}
__device__ __forceinline__ double asp_pow(double x, double y) {
#if defined(__CUDACC__)
    return pow(x, y);
#else
    return __builtin_pow(x, y);
#endif
}

// -------------------------------------------------------------- device error backstop
// Inputs are checked on the host before launch; a kernel re-checks what it cheaply can
// (an index against its bound, an order it relies on) and records a violation in the
// per-device error word (arrow_sparse.kernels.cuda.error_buffer()) instead of reading or
// writing out of bounds. The word packs (position << 16) | (family << 8) | code and is
// combined with atomicMin, so the smallest position wins whatever the thread order; all
// ones means no error. Codes are enums of the family's .cu file, one per line:
//
//     ASP_<FAMILY>_<WHAT> = 1,  // message: IndexError: rows out of range of the table
//
// (IndexError or ValueError; ValueError when absent). check_errors() turns the word back
// into "<func>: <message> (first at position <i>)" and raises it.
#define ASP_ERROR_NONE 0xFFFFFFFFFFFFFFFFULL
#define ASP_ERROR_MAX_POSITION 0xFFFFFFFFFFFFULL

__device__ __forceinline__ void asp_raise_at(unsigned long long* error, int family, int code,
                                             long long position) {
    unsigned long long p = position < 0 ? 0ULL : (unsigned long long)position;
    p = p > ASP_ERROR_MAX_POSITION ? ASP_ERROR_MAX_POSITION : p;
    atomicMin(error, (p << 16) | ((unsigned long long)(family & 0xFF) << 8) |
                         (unsigned long long)(code & 0xFF));
}

// ASP_RAISE(error, code, position): record `code` of this family at `position`.
#define ASP_RAISE(error, code, position) asp_raise_at((error), ASP_FAMILY_ID, (code), (position))
