// Shared by every kernel family: its text is put in front of each <family>.cu by the
// loader (arrow_sparse/kernels/cuda/__init__.py), never #included, so CuPy's cache key
// (the source text) covers it. NVRTC has no standard headers: use builtin types only
// (long long, unsigned char, ...), no <cstdint>, no std::.
//
// Every kernel is barrier-free (no __syncthreads, shared memory or warp shuffles) so the
// CPU emulator in tests/cuda_emu runs it faithfully thread by thread.


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

template <typename T>
__device__ __forceinline__ T asp_min(T a, T b) { return b < a ? b : a; }

template <typename T>
__device__ __forceinline__ T asp_max(T a, T b) { return a < b ? b : a; }
