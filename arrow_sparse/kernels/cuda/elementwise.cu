// Jagged arithmetic: CUDA twins of arrow_sparse/kernels/cpu/elementwise.py (same
// arguments and semantics; see that module's docstring). Layouts are C-contiguous:
// values [N, D] (1-D values are D == 1), padded dense [P, L, D], bmm operands [N, K],
// [B, K, M], [B, M, N]. Offsets are long long (the launchers widen int32 offsets) and may
// start above zero. A mask is a uint8 array unless its `all_*` flag is set (every row or
// element valid); a row index (long long, -1 = none) maps rows unless `identity` is set.
// Copy-only kernels (gather_ranges, repeat_rows) see the values as machine words.
//
// Every output element is written by one thread (no atomics but the error word and
// unique_run_starts' integer counts), so the results do not depend on the thread order. Numerics repeat the CPU kernels'
// operations in their types: sums and products of floats with asp_mul_rn (no FMA
// contraction), integers in two's complement (wrapping, as Numba does), so cumsum, the
// jagged x dense kernels and both bmm's are bit-identical to the CPU. Softmax uses the
// device's exp (libdevice, within 2 ulp) and, for 1-D rows, adds the exponentials as a
// butterfly of 32 lane partials instead of the CPU's left-to-right loop.
//
// Device checks (the host has already checked every index): a row reaching outside the
// values, a range outside the source rows, a dense row or a jagged row index out of
// range are recorded in the error word and the element (or row) skipped.

enum AspElementwiseError {
    ASP_ELEMENTWISE_ROW_RANGE = 1,  // message: IndexError: a row reaches outside the values (offsets out of range)
    ASP_ELEMENTWISE_SOURCE_RANGE = 2,  // message: IndexError: a range reaches outside the source rows
    ASP_ELEMENTWISE_DENSE_ROW = 3,  // message: IndexError: dense row out of range of the dense tensor
    ASP_ELEMENTWISE_JAGGED_ROW = 4,  // message: IndexError: row index out of range of the jagged rows
    ASP_ELEMENTWISE_ROWS_DIFFER = 5,  // message: rows differ in length between the operands
    ASP_ELEMENTWISE_PADDED_SHORT = 6,  // message: other (a padded operand) is shorter than a row of the Jagged
};

// ------------------------------------------------------------------------- helpers
__device__ __forceinline__ bool asp_ew_valid(const unsigned char* mask, int all, long long i) {
    return all || __ldg(mask + i) != 0;
}

// Whether [start, stop) lies inside [0, size); records ASP_ELEMENTWISE_ROW_RANGE at
// `position` if not.
__device__ __forceinline__ bool asp_ew_inside(long long start, long long stop, long long size,
                                              long long position, unsigned long long* error) {
    if (start < 0 || stop > size) {
        ASP_RAISE(error, ASP_ELEMENTWISE_ROW_RANGE, position);
        return false;
    }
    return true;
}

// Arithmetic in the CPU kernels' types. Integers wrap (two's complement through
// unsigned long long: no signed-overflow undefined behaviour, and the truncation back
// to T is what Numba's store into a narrower array does); float products are rounded
// on their own so nvcc cannot contract `acc + a * b` into a fused multiply-add.
template <typename T>
struct AspEwArith {
    static __device__ __forceinline__ T add(T a, T b) {
        return (T)((unsigned long long)a + (unsigned long long)b);
    }
    static __device__ __forceinline__ T mul(T a, T b) {
        return (T)((unsigned long long)a * (unsigned long long)b);
    }
};
template <>
struct AspEwArith<float> {
    static __device__ __forceinline__ float add(float a, float b) { return a + b; }
    static __device__ __forceinline__ float mul(float a, float b) { return asp_mul_rn(a, b); }
};
template <>
struct AspEwArith<double> {
    static __device__ __forceinline__ double add(double a, double b) { return a + b; }
    static __device__ __forceinline__ double mul(double a, double b) { return asp_mul_rn(a, b); }
};

template <typename T>
__device__ __forceinline__ bool asp_ew_isnan(T) { return false; }
__device__ __forceinline__ bool asp_ew_isnan(float x) { return x != x; }
__device__ __forceinline__ bool asp_ew_isnan(double x) { return x != x; }

__device__ __forceinline__ double asp_ew_neg_inf() {
    union { unsigned long long u; double d; } bits;
    bits.u = 0xFFF0000000000000ULL;
    return bits.d;
}

// exp in the argument's precision, as numpy's exp of a float32 / float64 array:
// libdevice's expf / exp on the GPU (within 2 ulp), the C library's in the emulator.
__device__ __forceinline__ float asp_ew_exp(float x) {
#if defined(__CUDACC__)
    return expf(x);
#else
    return __builtin_expf(x);
#endif
}
__device__ __forceinline__ double asp_ew_exp(double x) { return asp_exp(x); }

// ------------------------------------------------------------------ lane groups
// A lane group is 32 consecutive threads of a block (a warp): asp_lane() of asp_group()
// (_common.cuh).

// Run lane `lane`'s share of a row, work(l) doing elements l, l + 32, ... GPU: each
// lane does its own. Barrier-free variant (ARROW_SPARSE_EMULATOR): the calling thread,
// lane 0 of its group, does the 32 shares in turn.
template <typename Work>
__device__ __forceinline__ void asp_ew_each_lane(long long lane, const Work& work) {
#if defined(ARROW_SPARSE_EMULATOR)
    (void)lane;
    for (int l = 0; l < 32; ++l) work(l);
#else
    work(lane);
#endif
}

// The maximum over a lane group of the 32 lane maxima partial(l) (values above -inf;
// NaN never wins). GPU: warp shuffles; barrier-free variant: the calling thread
// computes the 32 partials. The maximum does not depend on the order (a zero's sign
// aside, which the callers' x - max does not see).
template <typename T, typename Partial>
__device__ __forceinline__ T asp_ew_group_max(long long lane, const Partial& partial) {
#if defined(ARROW_SPARSE_EMULATOR)
    (void)lane;
    T top = partial(0);
    for (int l = 1; l < 32; ++l) {
        const T other = partial(l);
        top = other > top ? other : top;
    }
    return top;
#else
    T top = partial(lane);
    for (int offset = 16; offset > 0; offset >>= 1) {
        const T other = __shfl_xor_sync(0xFFFFFFFFu, top, offset);
        top = other > top ? other : top;
    }
    return top;
#endif
}


// -------------------------------------------------------------------- softmax
// softmax_rows: per-row softmax of 1-D values x (D == 1) into out, the CPU's three steps:
// x - max over the row's first max_length non-null elements (-inf for the others and
// for null rows), exp in T, then division by the row's sum (in double; a row summing to
// 0 stays 0). Every position of every row is written; a row holding NaN, +inf or only
// -inf gives NaN, as on the CPU.
// Thread mapping: one lane group of 32 threads per row (grid-stride over rows); lane l
// handles elements l, l + 32, ...: coalesced reads of x and writes of out. The row
// maximum and sum combine the lane partials by warp shuffles (asp_ew_group_max / _sum);
// barrier-free variant (ARROW_SPARSE_EMULATOR): lane 0 does the 32 shares in turn, with
// the same butterfly, so the results are the same bits.
// Memory traffic: x read twice per element, out written twice and read once; the row
// metadata (offsets, masks) once per lane.
template <typename T>
__global__ void softmax_rows(const T* __restrict__ x, const long long* __restrict__ offsets,
                             const unsigned char* __restrict__ row_valid, int all_rows,
                             const unsigned char* __restrict__ elem_valid, int all_elems,
                             long long num_rows, long long num_values, long long max_length,
                             T* __restrict__ out, unsigned long long* error) {
    const long long lane = asp_lane();
    for (long long r = asp_group(); r < num_rows; r += asp_group_stride()) {
#if defined(ARROW_SPARSE_EMULATOR)
        if (lane != 0) continue;
#endif
        // Every decision below is the same in all lanes of the group: it stays converged.
        const long long s = __ldg(offsets + r);
        const long long n = __ldg(offsets + r + 1) - s;
        if (n <= 0) continue;
        if (s < 0 || s + n > num_values) {
            if (lane == 0) ASP_RAISE(error, ASP_ELEMENTWISE_ROW_RANGE, r);
            continue;
        }
        T* o = out + s;
        if (!asp_ew_valid(row_valid, all_rows, r)) {
            asp_ew_each_lane(lane, [&](long long l) {
                for (long long k = l; k < n; k += 32) o[k] = (T)0;
            });
            continue;
        }
        const T* v = x + s;
        const long long m = asp_min(n, max_length);
        const T low = (T)asp_ew_neg_inf();
        const T top = asp_ew_group_max<T>(lane, [&](long long l) {
            T high = low;
            for (long long k = l; k < m; k += 32) {
                const T xk = __ldg(v + k);
                if (xk > high && asp_ew_valid(elem_valid, all_elems, s + k)) high = xk;
            }
            return high;
        });
        const double total = asp_group_sum(lane, [&](long long l) {
            double partial = 0.0;
            for (long long k = l; k < n; k += 32) {
                const bool in = k < m && asp_ew_valid(elem_valid, all_elems, s + k);
                const T e = asp_ew_exp(in ? (T)(__ldg(v + k) - top) : low);
                o[k] = e;
                partial += (double)e;
            }
            return partial;
        });
        if (total == 0.0) continue;
        const double inv = 1.0 / total;
        asp_ew_each_lane(lane, [&](long long l) {
            for (long long k = l; k < n; k += 32) o[k] = (T)((double)o[k] * inv);
        });
    }
}

// softmax_columns: the same per column of 2-D values x [N, D], each column of a row
// being a softmax of its own (the CPU transposes the columns into rows of their own).
// Thread mapping: one thread per (row, column) pair t = r * D + d (grid-stride), so a
// warp covers 32 consecutive columns: coalesced reads of x and writes of out when
// D >= 32. Each thread runs the CPU's loops over its column in the CPU's order, so the
// row sum is the CPU's sum and only exp may differ.
// Memory traffic: x read twice per element, out written twice and read once.
template <typename T>
__global__ void softmax_columns(const T* __restrict__ x, const long long* __restrict__ offsets,
                                const unsigned char* __restrict__ row_valid, int all_rows,
                                const unsigned char* __restrict__ elem_valid, int all_elems,
                                long long num_rows, long long num_values, long long max_length,
                                long long width, T* __restrict__ out,
                                unsigned long long* error) {
    for (ASP_GRID_STRIDE(t, num_rows * width)) {
        const long long r = t / width;
        const long long d = t - r * width;
        const long long s = __ldg(offsets + r);
        const long long n = __ldg(offsets + r + 1) - s;
        if (n <= 0) continue;
        if (!asp_ew_inside(s, s + n, num_values, r, error)) continue;
        const T* v = x + s * width + d;
        T* o = out + s * width + d;
        if (!asp_ew_valid(row_valid, all_rows, r)) {
            for (long long k = 0; k < n; ++k) o[k * width] = (T)0;
            continue;
        }
        const long long m = asp_min(n, max_length);
        const T low = (T)asp_ew_neg_inf();
        T top = low;
        for (long long k = 0; k < m; ++k) {
            const T xk = __ldg(v + k * width);
            if (xk > top && asp_ew_valid(elem_valid, all_elems, s + k)) top = xk;
        }
        double total = 0.0;
        for (long long k = 0; k < n; ++k) {
            const bool in = k < m && asp_ew_valid(elem_valid, all_elems, s + k);
            const T e = asp_ew_exp(in ? (T)(__ldg(v + k * width) - top) : low);
            o[k * width] = e;
            total += (double)e;
        }
        if (total == 0.0) continue;
        const double inv = 1.0 / total;
        for (long long k = 0; k < n; ++k) o[k * width] = (T)((double)o[k * width] * inv);
    }
}

// --------------------------------------------------------------------- cumsum
// cumsum: running sum along each row of values [N, D], per column, in T (integers
// wrap); null rows are skipped and null elements add nothing and are not written.
// exclusive: out[k] = sum before k, else sum up to and including k.
// Thread mapping: one thread per (row, column) pair t = r * D + d (grid-stride), each
// running its column's scan in order (the CPU's order: float sums are the same bits).
// Coalesced over D when D >= 32; a 1-D row is one thread's sequential loop, so the
// parallelism is rows * D (a segmented parallel scan would change float rounding).
// Memory traffic: one read of values and one write of out per element.
template <typename T>
__global__ void cumsum(const T* __restrict__ values, const long long* __restrict__ offsets,
                       const unsigned char* __restrict__ row_valid, int all_rows,
                       const unsigned char* __restrict__ elem_valid, int all_elems,
                       int exclusive, long long num_rows, long long num_values, long long width,
                       T* __restrict__ out, unsigned long long* error) {
    for (ASP_GRID_STRIDE(t, num_rows * width)) {
        const long long r = t / width;
        const long long d = t - r * width;
        if (!asp_ew_valid(row_valid, all_rows, r)) continue;
        const long long s = __ldg(offsets + r);
        const long long e = __ldg(offsets + r + 1);
        if (e <= s) continue;
        if (!asp_ew_inside(s, e, num_values, r, error)) continue;
        T acc = (T)0;
        for (long long k = s; k < e; ++k) {
            if (!asp_ew_valid(elem_valid, all_elems, k)) continue;
            const T xk = __ldg(values + k * width + d);
            if (exclusive) {
                out[k * width + d] = acc;
                acc = AspEwArith<T>::add(acc, xk);
            } else {
                acc = AspEwArith<T>::add(acc, xk);
                out[k * width + d] = acc;
            }
        }
    }
}

// ---------------------------------------------------------------- row gathers
// gather_ranges: out[out_offsets[i] + j, d] = src[starts[i] + j, d] for j < the length
// of range i (words W).
// Thread mapping: one thread per output word e = k * D + d of out (grid-stride over all
// out_rows * D: no host read of out_offsets[-1]); range i of k by binary search of
// out_offsets. Consecutive threads write consecutive words and, inside a range, read
// consecutive words. Memory traffic: one read and one write per copied word.
template <typename W>
__global__ void gather_ranges(const W* __restrict__ src, long long src_rows,
                              const long long* __restrict__ starts,
                              const long long* __restrict__ out_offsets, long long num_ranges,
                              long long width, long long out_rows, W* __restrict__ out,
                              unsigned long long* error) {
    if (num_ranges <= 0) return;
    const long long first = __ldg(out_offsets);
    const long long last = __ldg(out_offsets + num_ranges);
    for (ASP_GRID_STRIDE(e, out_rows * width)) {
        const long long k = e / width;
        if (k < first || k >= last) continue;
        const long long i = asp_row_of(out_offsets, num_ranges, k);
        const long long from = __ldg(starts + i) + (k - __ldg(out_offsets + i));
        if (from < 0 || from >= src_rows) {
            ASP_RAISE(error, ASP_ELEMENTWISE_SOURCE_RANGE, i);
            continue;
        }
        out[e] = __ldg(src + from * width + (e - k * width));
    }
}

// ranges_to_indices: out[out_offsets[i] + j] = starts[i] + j (the element ids the
// ranges cover). Thread mapping: one thread per output k (grid-stride), range by binary
// search of out_offsets; coalesced 8-byte writes. Memory traffic: one write per id.
template <typename O>
__global__ void ranges_to_indices(const O* __restrict__ starts, const O* __restrict__ out_offsets,
                                  long long num_ranges, long long total, O* __restrict__ out) {
    if (num_ranges <= 0) return;
    const long long first = __ldg(out_offsets);
    for (ASP_GRID_STRIDE(k, total)) {
        if (k < first) continue;
        const long long i = asp_row_of(out_offsets, num_ranges, k);
        out[k] = __ldg(starts + i) + (k - __ldg(out_offsets + i));
    }
}

// repeat_rows: out[k - base, d] = src[r, d] for every position k of row r (words W).
// Thread mapping: one thread per output word e = (k - base) * D + d (grid-stride over
// out_rows * D); row r of k by binary search of offsets. Consecutive threads write
// consecutive words; the D words of src[r] are shared by a row's threads through the
// cache. Memory traffic: one write per output word, src read once per row from L2.
template <typename W>
__global__ void repeat_rows(const W* __restrict__ src, long long src_rows,
                            const long long* __restrict__ offsets, long long num_rows,
                            long long base, long long width, long long out_rows,
                            W* __restrict__ out, unsigned long long* error) {
    if (num_rows <= 0) return;
    const long long first = __ldg(offsets);
    const long long last = __ldg(offsets + num_rows);
    for (ASP_GRID_STRIDE(e, out_rows * width)) {
        const long long k = e / width + base;
        if (k < first || k >= last) continue;
        const long long r = asp_row_of(offsets, num_rows, k);
        if (r >= src_rows) {
            ASP_RAISE(error, ASP_ELEMENTWISE_SOURCE_RANGE, r);
            continue;
        }
        out[e] = __ldg(src + r * width + (e - (k - base) * width));
    }
}

// --------------------------------------------------------------------- unique
// unique_rows is a segmented sort by (row, value) done by the launcher; these kernels
// are its elementwise steps.
//
// unique_element_rows: rows[k] = the row of element k of the values buffer, or num_rows
// (a key sorted after every row) where no row addresses it (k outside [offsets[0],
// offsets[num_rows])) or it is hidden (null row or null element), for k < num_values:
// the whole buffer, so the host never reads the offsets. Thread i < num_rows also checks
// that row i lies inside the values.
// Thread mapping: one thread per element (grid-stride over max(num_values, num_rows)),
// row by binary search of the offsets; coalesced mask reads and 8-byte writes.
// Memory traffic: one write per element.
template <typename O>
__global__ void unique_element_rows(const O* __restrict__ offsets, long long num_rows,
                                    const unsigned char* __restrict__ row_valid, int all_rows,
                                    const unsigned char* __restrict__ elem_valid, int all_elems,
                                    long long num_values, O* __restrict__ rows,
                                    unsigned long long* error) {
    if (num_rows <= 0) return;
    const long long first = __ldg(offsets);
    const long long last = __ldg(offsets + num_rows);
    const long long work = asp_max(num_values, num_rows);
    for (ASP_GRID_STRIDE(k, work)) {
        if (k < num_rows) {
            asp_ew_inside(__ldg(offsets + k), __ldg(offsets + k + 1), num_values, k, error);
        }
        if (k >= num_values) continue;
        long long r = num_rows;
        if (k >= first && k < last) {
            r = asp_row_of(offsets, num_rows, k);
            if (!asp_ew_valid(row_valid, all_rows, r) || !asp_ew_valid(elem_valid, all_elems, k)) {
                r = num_rows;
            }
        }
        rows[k] = r;
    }
}

// unique_run_starts: first[i] = 1 where sorted element i starts a run of equal values
// of its row (a new row, or a value unequal to its predecessor; NaNs are all equal),
// and counts[row] gains one for it; never for the hidden elements (key num_rows).
// Thread mapping: one thread per element (grid-stride); coalesced reads of the element
// and its predecessor (shared with the neighbouring thread through the cache); an
// integer atomicAdd per run (the same counts in any order).
template <typename T>
__global__ void unique_run_starts(const T* __restrict__ sorted,
                                  const long long* __restrict__ rows, long long n,
                                  long long num_rows, unsigned char* __restrict__ first,
                                  unsigned long long* __restrict__ counts) {
    for (ASP_GRID_STRIDE(i, n)) {
        const long long r = __ldg(rows + i);
        bool start = r < num_rows && (i == 0 || r != __ldg(rows + i - 1));
        if (!start && r < num_rows) {
            const T x = __ldg(sorted + i);
            const T prev = __ldg(sorted + i - 1);
            start = x != prev && !(asp_ew_isnan(x) && asp_ew_isnan(prev));
        }
        first[i] = start ? 1 : 0;
        if (start) atomicAdd(counts + r, 1ULL);
    }
}

// unique_write: out[runs[i]] = sorted[i] for every run start i (runs[i + 1] > runs[i];
// runs is the exclusive prefix sum of the run starts, n + 1 long).
// Thread mapping: one thread per sorted element (grid-stride); coalesced reads, one
// write per run. Memory traffic: two reads of runs and at most one copy per element.
template <typename T>
__global__ void unique_write(const T* __restrict__ sorted, const long long* __restrict__ runs,
                             long long n, T* __restrict__ out) {
    for (ASP_GRID_STRIDE(i, n)) {
        const long long at = __ldg(runs + i);
        if (__ldg(runs + i + 1) != at) out[at] = __ldg(sorted + i);
    }
}

// ------------------------------------------------------------------ device checks
// check_positions: a device check with no CPU twin (the host finds the same violations
// with numpy). Every entry positions[i] >= 0 is a violation of `code` (an enum above) at
// that position; ASP_RAISE keeps the smallest. The launcher computes the positions with
// array functions (where(bad, position, -1)).
// Thread mapping: one thread per entry (grid-stride); one coalesced read each.
template <typename O>
__global__ void check_positions(const O* __restrict__ positions, long long n, int code,
                                unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, n)) {
        const long long p = __ldg(positions + i);
        if (p >= 0) ASP_RAISE(error, code, p);
    }
}

// -------------------------------------------------------------- jagged x dense
// jagged_dense_jagged_out: out[k, d] = x[k, d] op dense[p, j, d] for element j of row r
// (k = offsets[r] + j; p = dense_row_of[r], or r); elements outside the dense (j >= L or
// p < 0) combine with 0. op: 0 add, 1 multiply, 2 read (out = the dense value or 0; x is
// not read). Positions no row addresses are left alone.
// Thread mapping: one thread per element e = k * D + d of out (grid-stride over all
// out_rows * D); row by binary search of the offsets. Consecutive threads read and write
// consecutive addresses of x, out and (inside a row) the dense.
// Memory traffic: one read of x and of the dense and one write per element.
template <typename T>
__global__ void jagged_dense_jagged_out(const T* x, const T* __restrict__ dense,
                                        long long dense_rows, long long dense_len,
                                        const long long* __restrict__ dense_row_of,
                                        int identity, const long long* __restrict__ offsets,
                                        long long num_rows, int op, long long width,
                                        long long out_rows, T* out,
                                        unsigned long long* error) {
    if (num_rows <= 0) return;
    const long long first = __ldg(offsets);
    const long long last = __ldg(offsets + num_rows);
    for (ASP_GRID_STRIDE(e, out_rows * width)) {
        const long long k = e / width;
        if (k < first || k >= last) continue;
        const long long r = asp_row_of(offsets, num_rows, k);
        const long long p = identity ? r : __ldg(dense_row_of + r);
        if (p >= dense_rows) {
            ASP_RAISE(error, ASP_ELEMENTWISE_DENSE_ROW, r);
            continue;
        }
        const long long j = k - __ldg(offsets + r);
        const T y = (p >= 0 && j < dense_len)
                        ? __ldg(dense + (p * dense_len + j) * width + (e - k * width))
                        : (T)0;
        if (op == 0) {
            out[e] = AspEwArith<T>::add(x[e], y);
        } else if (op == 1) {
            out[e] = AspEwArith<T>::mul(x[e], y);
        } else {
            out[e] = y;
        }
    }
}

// jagged_dense_dense_out: out[p, j, d] = dense[p, j, d] + x[offsets[r] + j, d] for
// j < min(len(r), L) of row r = row_index[p] (or p) where r is a valid row and the
// element is not null; out[p, j, d] = dense[p, j, d] elsewhere.
// Thread mapping: one thread per output element e = (p * L + j) * D + d (grid-stride):
// coalesced along j and d for out, the dense and (inside a row) x.
// Memory traffic: one read of the dense, at most one of x, one write per element; the
// row metadata is shared by the L * D threads of a row through the cache.
template <typename T>
__global__ void jagged_dense_dense_out(const T* __restrict__ x, long long x_rows,
                                       const long long* __restrict__ row_index, int identity,
                                       const long long* __restrict__ offsets, long long num_rows,
                                       const unsigned char* __restrict__ valid, int all_valid,
                                       const unsigned char* __restrict__ elem_valid,
                                       int all_elems, const T* __restrict__ dense,
                                       long long num_out, long long dense_len, long long width,
                                       T* __restrict__ out, unsigned long long* error) {
    const long long row_size = dense_len * width;
    for (ASP_GRID_STRIDE(e, num_out * row_size)) {
        const long long p = e / row_size;
        const long long within = e - p * row_size;  // j * width + d
        const T y = __ldg(dense + e);
        T result = y;
        const long long r = identity ? p : __ldg(row_index + p);
        if (r >= num_rows) {
            ASP_RAISE(error, ASP_ELEMENTWISE_JAGGED_ROW, p);
        } else if (r >= 0 && asp_ew_valid(valid, all_valid, r)) {
            const long long start = __ldg(offsets + r);
            const long long n = asp_min(__ldg(offsets + r + 1) - start, dense_len);
            const long long j = within / width;
            if (j < n && asp_ew_valid(elem_valid, all_elems, start + j)) {
                if (start + j < 0 || start + j >= x_rows) {
                    ASP_RAISE(error, ASP_ELEMENTWISE_ROW_RANGE, r);
                } else {
                    result = AspEwArith<T>::add(__ldg(x + start * width + within), y);
                }
            }
        }
        out[e] = result;
    }
}

// ------------------------------------------------------------------------ bmm
// jagged_dense_bmm: out[e, m] += sum_k x[e, k] * dense[b, k, m] (k in order) for the
// first max_length elements e of every valid row b, null elements skipped.
// Thread mapping: one thread per output element t = e * M + m (grid-stride over
// out_rows * M); row b of e by binary search of the offsets. A warp covers consecutive
// m: coalesced reads of dense[b, k, :] and writes of out; x[e, k] is one broadcast read.
// Memory traffic: per output element K reads of the dense (shared through L1/L2 by the
// elements of a row) and K of x (broadcast), one read and one write of out.
template <typename T>
__global__ void jagged_dense_bmm(const T* __restrict__ x, long long x_rows,
                                 const long long* __restrict__ offsets, long long num_rows,
                                 const unsigned char* __restrict__ valid, int all_valid,
                                 const unsigned char* __restrict__ elem_valid, int all_elems,
                                 const T* __restrict__ dense, long long dense_rows,
                                 long long depth, long long width, long long max_length,
                                 long long out_rows, T* __restrict__ out,
                                 unsigned long long* error) {
    if (num_rows <= 0) return;
    const long long first = __ldg(offsets);
    const long long last = __ldg(offsets + num_rows);
    for (ASP_GRID_STRIDE(t, out_rows * width)) {
        const long long e = t / width;
        if (e < first || e >= last) continue;
        const long long b = asp_row_of(offsets, num_rows, e);
        if (!asp_ew_valid(valid, all_valid, b) || e - __ldg(offsets + b) >= max_length ||
            !asp_ew_valid(elem_valid, all_elems, e)) {
            continue;
        }
        if (b >= dense_rows) {
            ASP_RAISE(error, ASP_ELEMENTWISE_DENSE_ROW, b);
            continue;
        }
        if (e >= x_rows) {
            ASP_RAISE(error, ASP_ELEMENTWISE_ROW_RANGE, b);
            continue;
        }
        const long long m = t - e * width;
        const T* xe = x + e * depth;
        const T* db = dense + b * depth * width + m;
        T acc = out[t];
        for (long long k = 0; k < depth; ++k) {
            acc = AspEwArith<T>::add(acc, AspEwArith<T>::mul(__ldg(xe + k), __ldg(db + k * width)));
        }
        out[t] = acc;
    }
}

// jagged_jagged_bmm: out[b, m, c] += sum_e x[xs + e, m] * y[ys + e, c] (e in order) over
// the first max_length elements of every valid row b, skipping elements null in x or y.
// Thread mapping: one thread per output element t = (b * M + m) * N + c (grid-stride);
// a warp covers consecutive c: coalesced reads of y[ys + e, :] and writes of out;
// x[xs + e, m] is a broadcast read. Each thread adds its row's elements in order (the
// CPU's order), so the parallelism is B * M * N (a split over e would change float
// rounding). Memory traffic: per output element 2 * len(b) reads shared through the
// cache by the M * N threads of the row, one read and one write of out.
template <typename T>
__global__ void jagged_jagged_bmm(const T* __restrict__ x, long long x_rows,
                                  const long long* __restrict__ x_offsets,
                                  const unsigned char* __restrict__ x_valid, int all_x,
                                  const T* __restrict__ y, long long y_rows,
                                  const long long* __restrict__ y_offsets,
                                  const unsigned char* __restrict__ y_valid, int all_y,
                                  const unsigned char* __restrict__ valid, int all_valid,
                                  long long num_rows, long long rows_m, long long cols_n,
                                  long long max_length, T* __restrict__ out,
                                  unsigned long long* error) {
    const long long per_row = rows_m * cols_n;
    for (ASP_GRID_STRIDE(t, num_rows * per_row)) {
        const long long b = t / per_row;
        if (!asp_ew_valid(valid, all_valid, b)) continue;
        const long long mc = t - b * per_row;
        const long long m = mc / cols_n;
        const long long c = mc - m * cols_n;
        const long long xs = __ldg(x_offsets + b);
        const long long ys = __ldg(y_offsets + b);
        const long long n = asp_min(__ldg(x_offsets + b + 1) - xs, max_length);
        if (n <= 0) continue;
        if (!asp_ew_inside(xs, xs + n, x_rows, b, error) ||
            !asp_ew_inside(ys, ys + n, y_rows, b, error)) {
            continue;
        }
        T acc = out[t];
        for (long long e = 0; e < n; ++e) {
            if (!(asp_ew_valid(x_valid, all_x, xs + e) && asp_ew_valid(y_valid, all_y, ys + e))) {
                continue;
            }
            acc = AspEwArith<T>::add(acc, AspEwArith<T>::mul(__ldg(x + (xs + e) * rows_m + m),
                                                             __ldg(y + (ys + e) * cols_n + c)));
        }
        out[t] = acc;
    }
}
