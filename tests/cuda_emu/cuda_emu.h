// cuda_emu.h: just enough of CUDA C++ to compile barrier-free kernels with g++ and run
// them on the CPU, one thread at a time. Force-included (g++ -include cuda_emu.h) in
// front of exactly the text the loader gives NVRTC. Test-only; see docs/gpu.md.
//
// Deliberately NOT provided, so kernels that need them fail to build here instead of
// passing wrongly: __shared__, __syncthreads, warp shuffles/votes, cooperative groups.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

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
enum LaunchError { kOk = 0, kInvalidConfiguration = 1 };

template <typename... A, std::size_t... I>
inline void call(void (*kernel)(A...), void** args, std::index_sequence<I...>) {
    kernel(*static_cast<std::remove_reference_t<A>*>(args[I])...);
}

// Like cuLaunchKernel: args[i] points at the value of parameter i. Runs every thread of
// every block in turn (block-major, x fastest), so kernels must not depend on other
// threads of the same launch except through atomics.
template <typename... A>
inline int launch(void (*kernel)(A...), dim3 grid, dim3 block, void** args) {
    const unsigned long long threads = 1ULL * block.x * block.y * block.z;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u ||
        grid.y > 65535u || grid.z > 65535u || threads == 0 || threads > 1024 ||
        block.x > 1024 || block.y > 1024 || block.z > 64) {
        return kInvalidConfiguration;
    }
    gridDim = grid;
    blockDim = block;
    for (unsigned int bz = 0; bz < grid.z; ++bz)
        for (unsigned int by = 0; by < grid.y; ++by)
            for (unsigned int bx = 0; bx < grid.x; ++bx) {
                blockIdx = uint3(bx, by, bz);
                for (unsigned int tz = 0; tz < block.z; ++tz)
                    for (unsigned int ty = 0; ty < block.y; ++ty)
                        for (unsigned int tx = 0; tx < block.x; ++tx) {
                            threadIdx = uint3(tx, ty, tz);
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
