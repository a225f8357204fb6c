// Arithmetic and atomic helpers of the reduction families (segment.cu and
// sparse_unsorted.cu), put by the loader between _common.cuh and the family's own text
// (kernels/cuda/__init__.py: source). Numerics follow the CPU kernels: signed 64-bit
// arithmetic wraps through unsigned, double products are asp_mul_rn (no FMA), float
// max/min are IEEE 754-2019 maximum / minimum.

// ------------------------------------------------------------------ arithmetic helpers
// a + b and a * b in A. Signed 64-bit arithmetic wraps (two's complement, as Numba's
// does) through unsigned, so overflow is defined. Double products are the header's
// asp_mul_rn, which nvcc cannot contract with an addition into a fused multiply-add,
// so every product and sum rounds on its own, as on the CPU.
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
__device__ __forceinline__ double asp_mul<double>(double a, double b) {
    return asp_mul_rn(a, b);
}

template <typename T>
__device__ __forceinline__ bool asp_isnan(T) { return false; }
__device__ __forceinline__ bool asp_isnan(float x) { return x != x; }
__device__ __forceinline__ bool asp_isnan(double x) { return x != x; }

// max(x, m) and min(x, m), the update of every max/min kernel. Integers: compare and
// select. Floats: IEEE 754-2019 maximum / minimum, as the CPU kernels (llvm.maximum):
// NaN propagates, and of two equal values (only zeros can differ then) max keeps +0.0
// and min keeps -0.0. The rule is commutative and associative, so the result does not
// depend on the order values are combined in (which NaN is kept may).
template <typename T>
__device__ __forceinline__ T asp_take_max(T x, T m) { return x > m ? x : m; }
template <typename T>
__device__ __forceinline__ T asp_take_min(T x, T m) { return x < m ? x : m; }

__device__ __forceinline__ bool asp_signbit(float x) {
    union { float f; unsigned int u; } bits;
    bits.f = x;
    return (bits.u >> 31) != 0;
}
__device__ __forceinline__ bool asp_signbit(double x) {
    union { double f; unsigned long long u; } bits;
    bits.f = x;
    return (bits.u >> 63) != 0;
}

template <typename F>
__device__ __forceinline__ F asp_float_max(F x, F m) {
    if (x != x) return x;
    if (m != m || x < m) return m;
    return x > m || !asp_signbit(x) ? x : m;
}
template <typename F>
__device__ __forceinline__ F asp_float_min(F x, F m) {
    if (x != x) return x;
    if (m != m || x > m) return m;
    return x < m || asp_signbit(x) ? x : m;
}
__device__ __forceinline__ float asp_take_max(float x, float m) { return asp_float_max(x, m); }
__device__ __forceinline__ double asp_take_max(double x, double m) { return asp_float_max(x, m); }
__device__ __forceinline__ float asp_take_min(float x, float m) { return asp_float_min(x, m); }
__device__ __forceinline__ double asp_take_min(double x, double m) { return asp_float_min(x, m); }

// ----------------------------------------------------------------------------- atomics
__device__ __forceinline__ void asp_atomic_add(double* p, double x) { atomicAdd(p, x); }
__device__ __forceinline__ void asp_atomic_add(unsigned long long* p, unsigned long long x) {
    atomicAdd(p, x);
}
// int64 sums: two's-complement addition is the same bit operation as unsigned addition.
__device__ __forceinline__ void asp_atomic_add(long long* p, long long x) {
    atomicAdd((unsigned long long*)p, (unsigned long long)x);
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
