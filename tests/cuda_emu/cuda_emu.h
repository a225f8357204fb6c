// cuda_emu.h: just enough of CUDA C++ to compile barrier-free kernels with g++ and run
// them on the CPU, one thread at a time. Force-included (g++ -include cuda_emu.h) in
// front of exactly the text the loader gives NVRTC. Test-only; see docs/gpu.md.
//
// Deliberately NOT provided, so kernels that need them fail to build here instead of
// passing wrongly: __shared__, __syncthreads, warp shuffles/votes, cooperative groups.
// Kernels that use them keep a barrier-free variant under ARROW_SPARSE_EMULATOR.
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// Selects the barrier-free variant of kernels that have a faster one (see _common.cuh).
#define ARROW_SPARSE_EMULATOR 1

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1)
        : x(x_), y(y_), z(z_) {}
};
typedef dim3 uint3;

// Set by cuda_emu::launch before each emulated thread runs.
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

// Read-only cache load: a plain load here.
template <typename T>
inline T __ldg(const T* p) { return *p; }

// Atomics: the overload set of CUDA (so code that builds here also builds with nvcc).
// Threads run one at a time, so a plain read-modify-write is atomic. Each returns the
// old value, as CUDA does.
#define CUDA_EMU_ATOMIC(NAME, T, EXPR)                 \
    inline T NAME(T* address, T val) {                 \
        T old = *address;                              \
        *address = (EXPR);                             \
        return old;                                    \
    }
CUDA_EMU_ATOMIC(atomicAdd, int, old + val)
CUDA_EMU_ATOMIC(atomicAdd, unsigned int, old + val)
CUDA_EMU_ATOMIC(atomicAdd, unsigned long long, old + val)
CUDA_EMU_ATOMIC(atomicAdd, float, old + val)
CUDA_EMU_ATOMIC(atomicAdd, double, old + val)
CUDA_EMU_ATOMIC(atomicSub, int, old - val)
CUDA_EMU_ATOMIC(atomicSub, unsigned int, old - val)
CUDA_EMU_ATOMIC(atomicExch, int, val)
CUDA_EMU_ATOMIC(atomicExch, unsigned int, val)
CUDA_EMU_ATOMIC(atomicExch, unsigned long long, val)
CUDA_EMU_ATOMIC(atomicExch, float, val)
CUDA_EMU_ATOMIC(atomicMax, int, old < val ? val : old)
CUDA_EMU_ATOMIC(atomicMax, unsigned int, old < val ? val : old)
CUDA_EMU_ATOMIC(atomicMax, long long, old < val ? val : old)
CUDA_EMU_ATOMIC(atomicMax, unsigned long long, old < val ? val : old)
CUDA_EMU_ATOMIC(atomicMin, int, val < old ? val : old)
CUDA_EMU_ATOMIC(atomicMin, unsigned int, val < old ? val : old)
CUDA_EMU_ATOMIC(atomicMin, long long, val < old ? val : old)
CUDA_EMU_ATOMIC(atomicMin, unsigned long long, val < old ? val : old)
CUDA_EMU_ATOMIC(atomicAnd, int, old & val)
CUDA_EMU_ATOMIC(atomicAnd, unsigned int, old & val)
CUDA_EMU_ATOMIC(atomicAnd, unsigned long long, old & val)
CUDA_EMU_ATOMIC(atomicOr, int, old | val)
CUDA_EMU_ATOMIC(atomicOr, unsigned int, old | val)
CUDA_EMU_ATOMIC(atomicOr, unsigned long long, old | val)
#undef CUDA_EMU_ATOMIC

#define CUDA_EMU_ATOMIC_CAS(T)                                  \
    inline T atomicCAS(T* address, T compare, T val) {          \
        T old = *address;                                       \
        if (old == compare) *address = val;                     \
        return old;                                             \
    }
CUDA_EMU_ATOMIC_CAS(int)
CUDA_EMU_ATOMIC_CAS(unsigned int)
CUDA_EMU_ATOMIC_CAS(unsigned long long)
CUDA_EMU_ATOMIC_CAS(unsigned short)
#undef CUDA_EMU_ATOMIC_CAS

namespace cuda_emu {

// Error codes of launch(), turned into exceptions by the Python side.
enum LaunchError { kOk = 0, kInvalidConfiguration = 1, kUnknownOrder = 2 };

// Orders in which launch() runs the threads of a grid. On a GPU blocks and warps run in
// no defined order, so a kernel whose result depends on it has a race; running the
// same launch in several orders and comparing exposes that (tests/cuda_emu/emu.py).
enum Order { kForward = 0, kReverse = 1, kShuffle = 2 };

template <typename... A, std::size_t... I>
inline void call(void (*kernel)(A...), void** args, std::index_sequence<I...>) {
    kernel(*static_cast<std::remove_reference_t<A>*>(args[I])...);
}

inline unsigned long long splitmix64(unsigned long long& state) {
    unsigned long long z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// The n indices 0..n-1 in `order`; kShuffle is a Fisher-Yates permutation from `seed`.
inline std::vector<unsigned long long> sequence(unsigned long long n, int order,
                                                unsigned long long seed) {
    std::vector<unsigned long long> v(n);
    std::iota(v.begin(), v.end(), 0ULL);
    if (order == kReverse) {
        std::reverse(v.begin(), v.end());
    } else if (order == kShuffle) {
        for (unsigned long long i = n; i > 1; --i) {
            std::swap(v[i - 1], v[splitmix64(seed) % i]);
        }
    }
    return v;
}

// Like cuLaunchKernel: args[i] points at the value of parameter i. Runs every thread of
// every block, one at a time to completion: blocks in `order`, and the threads of each
// block in `order` (a fresh permutation per block for kShuffle). kForward is
// block-major, x fastest. Kernels must not depend on other threads of the same launch
// except through atomics.
template <typename... A>
inline int launch(void (*kernel)(A...), dim3 grid, dim3 block, void** args, int order,
                  unsigned long long seed) {
    const unsigned long long threads = 1ULL * block.x * block.y * block.z;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u ||
        grid.y > 65535u || grid.z > 65535u || threads == 0 || threads > 1024 ||
        block.x > 1024 || block.y > 1024 || block.z > 64) {
        return kInvalidConfiguration;
    }
    if (order != kForward && order != kReverse && order != kShuffle) return kUnknownOrder;
    gridDim = grid;
    blockDim = block;
    const unsigned long long blocks = 1ULL * grid.x * grid.y * grid.z;
    unsigned long long state = seed;
    const std::vector<unsigned long long> block_order =
        order == kForward ? std::vector<unsigned long long>() : sequence(blocks, order, state);
    std::vector<unsigned long long> thread_order;
    if (order == kReverse) thread_order = sequence(threads, order, 0);
    for (unsigned long long k = 0; k < blocks; ++k) {
        const unsigned long long b = order == kForward ? k : block_order[k];
        blockIdx = uint3((unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y),
                         (unsigned)(b / grid.x / grid.y));
        if (order == kShuffle) thread_order = sequence(threads, order, splitmix64(state));
        for (unsigned long long j = 0; j < threads; ++j) {
            const unsigned long long t = order == kForward ? j : thread_order[j];
            threadIdx = uint3((unsigned)(t % block.x), (unsigned)(t / block.x % block.y),
                              (unsigned)(t / block.x / block.y));
            call(kernel, args, std::index_sequence_for<A...>{});
        }
    }
    return kOk;
}

template <typename T>
constexpr char kind() {
    return std::is_same_v<T, bool> ? 'b'
           : std::is_floating_point_v<T> ? 'f'
           : std::is_signed_v<T> ? 'i' : 'u';
}

// One token per parameter: "s<kind><size>" for a scalar, "p<kind><size>" for a pointer
// to writable elements, "P<kind><size>" for a pointer to const elements.
template <typename T>
inline void describe(std::string& s) {
    if constexpr (std::is_pointer_v<T>) {
        using E = std::remove_pointer_t<T>;
        s += std::is_const_v<E> ? 'P' : 'p';
        s += kind<std::remove_cv_t<E>>();
        s += std::to_string(sizeof(E));
    } else {
        s += 's';
        s += kind<T>();
        s += std::to_string(sizeof(T));
    }
    s += ',';
}

template <typename... A>
inline const char* signature(void (*)(A...)) {
    static const std::string s = [] {
        std::string out;
        (describe<A>(out), ...);
        return out;
    }();
    return s.c_str();
}

}  // namespace cuda_emu
