// Embedding-table optimizer steps: CUDA twins of the *_rows kernels of
// arrow_sparse/kernels/cpu/embedding.py (same arguments and formulas; see that module's
// docstring). The gradient is coalesced: `rows` (long long) unique and increasing,
// `values[U, D]` of the table's type T. The table and its optimizer state are
// C-contiguous [V, D] (rowwise Adagrad: state [V]); S is the state's type. Every
// gradient row is written by one thread group only, so the steps are race-free and
// need no atomics (the error word aside); the results do not depend on the thread order.
//
// Numerics repeat the CPU kernels operation by operation, in their types (Numba's
// promotions are C++'s: float op float is float, anything with a double is double;
// math.sqrt keeps float32), with products rounded on their own (asp_mul_rn) so nvcc
// does not contract them into FMAs: sgd, adagrad and ftrl are bit-identical to the CPU.
// Rowwise Adagrad sums g * g per row in another order (see its kernel), so its state
// agrees with the CPU's to a few ulp and the table to one rounding of T.
//
// Device checks (the host has already checked both): a row outside [0, V) and a row not
// above its predecessor are recorded in the error word and that gradient row skipped.

enum AspEmbeddingError {
    ASP_EMBEDDING_ROW_RANGE = 1,  // message: IndexError: grad.rows out of range of the table
    ASP_EMBEDDING_ROW_ORDER = 2,  // message: grad.rows not strictly increasing (coalesce the gradient first)
};

// Row of gradient row u, or -1 (after recording why) when it must be skipped.
__device__ __forceinline__ long long asp_grad_row(const long long* __restrict__ rows,
                                                  long long u, long long table_rows,
                                                  unsigned long long* error) {
    const long long r = __ldg(rows + u);
    if (r < 0 || r >= table_rows) {
        ASP_RAISE(error, ASP_EMBEDDING_ROW_RANGE, u);
        return -1;
    }
    if (u > 0 && __ldg(rows + u - 1) >= r) {
        ASP_RAISE(error, ASP_EMBEDDING_ROW_ORDER, u);
        return -1;
    }
    return r;
}

// sgd_rows: table[r, d] -= lr * g for every element of every gradient row.
// Thread mapping: one thread per gradient element e = u * D + d (grid-stride), so a
// warp covers 32 consecutive d of one row: coalesced over the feature axis.
// Memory traffic: per element one read of values, one read and one write of the
// table; rows[u] (and rows[u - 1]) are shared by the D threads of a row through L1.
template <typename T>
__global__ void sgd_rows(T* __restrict__ table, const long long* __restrict__ rows,
                         const T* __restrict__ values, double lr, long long num_grad,
                         long long dim, long long table_rows, unsigned long long* error) {
    for (ASP_GRID_STRIDE(e, num_grad * dim)) {
        const long long u = e / dim;
        const long long r = asp_grad_row(rows, u, table_rows, error);
        if (r < 0) continue;
        T* w = table + r * dim + (e - u * dim);
        *w = (T)((double)*w - asp_mul_rn(lr, (double)__ldg(values + e)));
    }
}

// adagrad_rows: state += g * g; table -= lr * g / (sqrt(state) + eps), per element.
// Thread mapping: one thread per gradient element e = u * D + d (grid-stride),
// coalesced over D. Memory traffic: per element one read of values, one read and one
// write of state and of the table.
template <typename T, typename S>
__global__ void adagrad_rows(T* __restrict__ table, S* __restrict__ state,
                             const long long* __restrict__ rows, const T* __restrict__ values,
                             double lr, double eps, long long num_grad, long long dim,
                             long long table_rows, unsigned long long* error) {
    for (ASP_GRID_STRIDE(e, num_grad * dim)) {
        const long long u = e / dim;
        const long long r = asp_grad_row(rows, u, table_rows, error);
        if (r < 0) continue;
        const long long at = r * dim + (e - u * dim);
        const T g = __ldg(values + e);
        const auto s = state[at] + asp_mul_rn(g, g);  // S + T: float only if both are
        state[at] = (S)s;
        const double step = asp_mul_rn(lr, (double)g) / ((double)asp_sqrt(s) + eps);
        table[at] = (T)((double)table[at] - step);
    }
}

// The lane partial of a row's sum of squares: lane l sums g * g (rounded in T, added in
// double) over d = l, l + 32, ... in increasing d.
template <typename T>
__device__ __forceinline__ double asp_lane_sum_sq(const T* __restrict__ g, long long dim,
                                                  long long lane) {
    double partial = 0.0;
    for (long long d = lane; d < dim; d += 32) {
        const T x = __ldg(g + d);
        partial += (double)asp_mul_rn(x, x);
    }
    return partial;
}

// Lane `lane`'s share of the row update: w[d] -= step * g[d] for d = lane, lane + 32, ...
template <typename T>
__device__ __forceinline__ void asp_lane_step(T* __restrict__ w, const T* __restrict__ g,
                                              long long dim, long long lane, double step) {
    for (long long d = lane; d < dim; d += 32) {
        w[d] = (T)((double)w[d] - asp_mul_rn(step, (double)__ldg(g + d)));
    }
}

// rowwise_adagrad_rows: state[r] += mean_d(g * g); table[r] -= lr * g / (sqrt(state[r]) + eps).
// Thread mapping: one lane group of 32 threads (a warp) per gradient row (grid-stride
// over rows); lane l handles d = l, l + 32, ..., so every load and store is coalesced.
// The row's sum of squares is the butterfly sum (xor offsets 16, 8, 4, 2, 1: a fixed
// order, the same bits in every lane) of the 32 lane partials, by warp shuffles; every
// lane reads state[r] before the shuffle and lane 0 writes it after a __syncwarp.
// Barrier-free variant (ARROW_SPARSE_EMULATOR): lane 0 of the group does the whole row,
// the 32 lane partials, the same butterfly and the 32 lane updates in turn, so the
// results are the same bits and no lane reads what another writes.
// Memory traffic: values read once per element (twice in the barrier-free variant), the
// table read and written once per element, state read and written once per row.
template <typename T, typename S>
__global__ void rowwise_adagrad_rows(T* __restrict__ table, S* __restrict__ state,
                                     const long long* __restrict__ rows,
                                     const T* __restrict__ values, double lr, double eps,
                                     long long num_grad, long long dim, long long table_rows,
                                     unsigned long long* error) {
    const long long lane = asp_thread_id() & 31;
    for (long long u = asp_thread_id() >> 5; u < num_grad; u += asp_grid_stride() >> 5) {
#if defined(ARROW_SPARSE_EMULATOR)
        if (lane != 0) continue;
#endif
        const long long r = asp_grad_row(rows, u, table_rows, error);
        if (r < 0) continue;  // the same for every lane of the group: it stays converged
        const T* g = values + u * dim;
        T* w = table + r * dim;
        const double before = (double)state[r];
#if defined(ARROW_SPARSE_EMULATOR)
        double partial[32];
        for (int l = 0; l < 32; ++l) partial[l] = asp_lane_sum_sq(g, dim, l);
        for (int offset = 16; offset > 0; offset >>= 1) {
            for (int l = 0; l < 32; ++l) {
                if ((l & offset) == 0) {
                    partial[l] = partial[l ^ offset] = partial[l] + partial[l ^ offset];
                }
            }
        }
        const double sq = partial[0];
#else
        double sq = asp_lane_sum_sq(g, dim, lane);
        for (int offset = 16; offset > 0; offset >>= 1) {
            sq += __shfl_xor_sync(0xFFFFFFFFu, sq, offset);
        }
        __syncwarp();  // every lane has read state[r]
#endif
        const double s = before + (dim ? sq / (double)dim : 0.0);
        const double step = lr / (asp_sqrt(s) + eps);
        if (lane == 0) state[r] = (S)s;
#if defined(ARROW_SPARSE_EMULATOR)
        for (int l = 0; l < 32; ++l) asp_lane_step(w, g, dim, l, step);
#else
        asp_lane_step(w, g, dim, lane, step);
#endif
    }
}

// ftrl_rows: Caffe2's SparseFtrl (ftrl_compute) per element, exactly the CPU kernel:
//   n_new = n + g*g; sigma = (sqrt(n_new) - sqrt(n)) / alpha; z += g - sigma * w;
//   w = |z| > l1 ? (l1 * sign(z) - z) / ((beta + sqrt(n_new)) / alpha + l2) : 0.
// Thread mapping: one thread per gradient element e = u * D + d (grid-stride),
// coalesced over D. Memory traffic: per element one read of values, one read and one
// write of the table, z and n.
template <typename T>
__global__ void ftrl_rows(T* __restrict__ table, T* __restrict__ z, T* __restrict__ n,
                          const long long* __restrict__ rows, const T* __restrict__ values,
                          double alpha, double beta, double l1, double l2, long long num_grad,
                          long long dim, long long table_rows, unsigned long long* error) {
    const double inv_alpha = 1.0 / alpha;
    for (ASP_GRID_STRIDE(e, num_grad * dim)) {
        const long long u = e / dim;
        const long long r = asp_grad_row(rows, u, table_rows, error);
        if (r < 0) continue;
        const long long at = r * dim + (e - u * dim);
        const T g = __ldg(values + e);
        const T w = table[at];
        const T n_old = n[at];
        const T n_new = n_old + asp_mul_rn(g, g);
        const double sigma = asp_mul_rn((double)(asp_sqrt(n_new) - asp_sqrt(n_old)), inv_alpha);
        const double zz = (double)(z[at] + g) - asp_mul_rn(sigma, (double)w);
        n[at] = n_new;
        z[at] = (T)zz;
        const double size = zz < 0.0 ? -zz : zz;
        if (size > l1) {
            const double sign = zz == 0.0 ? 0.0 : (zz < 0.0 ? -1.0 : 1.0);
            const double den = asp_mul_rn(beta + (double)asp_sqrt(n_new), inv_alpha) + l2;
            table[at] = (T)((asp_mul_rn(l1, sign) - zz) / den);
        } else {
            table[at] = (T)0.0;
        }
    }
}
