// Embedding tables: CUDA twins of the kernels of arrow_sparse/kernels/cpu/embedding.py
// (same arguments and formulas; see that module's docstring): the lookup (lookup_rows),
// the sparse backward (sort_ids' run heads, coalesce_sorted, weights_grad) and the
// optimizer steps (*_rows); plus bag_ids, which has no CPU twin: it reads the bags of
// device inputs where the host compacts them with numpy. Tables and gradients are C-contiguous; 2-D rows are handled
// by a lane group of 32 threads (a warp) with lanes over the feature axis, so loads and
// stores are coalesced. Every output element is written by one thread group only: no
// atomics (the error word aside), and the results do not depend on the thread order.
//
// Optimizer steps: the gradient is coalesced, `rows` (long long) unique and increasing,
// `values[U, D]` of the table's type T; S is the optimizer state's type.
//
// Numerics repeat the CPU kernels operation by operation, in their types (between
// floats Numba's promotions are C++'s: float op float is float, anything with a double
// is double; math.sqrt keeps float32; for an integer table times a float gradient in
// weights_grad, where they differ, the launcher passes Numba's type), with products
// rounded on their own (asp_mul_rn) so nvcc does not contract them into FMAs: lookup_rows,
// coalesce_sorted, sgd, adagrad and ftrl are bit-identical to the CPU. Rowwise Adagrad
// and weights_grad sum over the feature axis as a butterfly of 32 lane partials
// (asp_group_sum), not the CPU's left-to-right loop: a few ulp of double apart.
//
// Device checks (the host has already checked all of them): an index outside its array
// and an order a kernel relies on are recorded in the error word and the offending item
// skipped.

enum AspEmbeddingError {
    ASP_EMBEDDING_ROW_RANGE = 1,  // message: IndexError: grad.rows out of range of the table
    ASP_EMBEDDING_ROW_ORDER = 2,  // message: grad.rows not strictly increasing (coalesce the gradient first)
    ASP_EMBEDDING_ID_RANGE = 3,  // message: IndexError: ids out of range of the table
    ASP_EMBEDDING_ORDER_RANGE = 4,  // message: IndexError: order out of range of the ids
    ASP_EMBEDDING_BAG_RANGE = 5,  // message: IndexError: bag out of range of grad_out
    ASP_EMBEDDING_RUN_BOUNDS = 6,  // message: run starts not non-decreasing within the order
    ASP_EMBEDDING_SORT = 7,  // message: ids not stably sorted by the order
    ASP_EMBEDDING_WEIGHT_LENGTHS = 8,  // message: per_sample_weights must have the same bag lengths as ids
    ASP_EMBEDDING_WEIGHT_NULL = 9,  // message: per_sample_weights must not be null where the id is not
};

// ------------------------------------------------------------------------ lane groups
// (asp_lane, asp_group and asp_group_stride are in _common.cuh.)

// ----------------------------------------------------------------------------- lookup
// lookup_rows: out[i, col + d] = table[ids[i], d] for d < D (out is [N, width]).
// Thread mapping: one lane group per output row i (grid-stride over rows); lane l
// copies d = l, l + 32, ...: coalesced reads of the table row and writes of the output
// row. Memory traffic: one read of ids[i] per lane (broadcast by the cache), one read
// and one write per element.
// Device check: an id outside [0, V) is recorded (position i) and its row left alone.
template <typename T, typename I>
__global__ void lookup_rows(const T* __restrict__ table, const I* __restrict__ ids,
                            T* __restrict__ out, long long num_ids, long long dim,
                            long long width, long long col, long long table_rows,
                            unsigned long long* error) {
    const long long lane = asp_lane();
    for (long long i = asp_group(); i < num_ids; i += asp_group_stride()) {
        const long long r = (long long)__ldg(ids + i);
        if (r < 0 || r >= table_rows) {
            if (lane == 0) ASP_RAISE(error, ASP_EMBEDDING_ID_RANGE, i);
            continue;
        }
        const T* src = table + r * dim;
        T* dst = out + i * width + col;
        for (long long d = lane; d < dim; d += 32) dst[d] = __ldg(src + d);
    }
}

// ------------------------------------------------------------------- bags (device only)
// bag_ids: the device form of the host's bag reading (arrow_sparse/_embedding_common.py),
// without compacting anything. Bag b holds ids[offsets[b]:offsets[b + 1]]; id position j
// is *read* when it lies in a bag b (offsets[0] <= j < offsets[B]), the bag is valid
// (valid[b], unless all_valid) and the id is not null (vmask[j], unless !masked). Writes
//   bag[j]   = b where j is read, else -1;
//   key[j]   = ids[j] where j is read, else `bound` (a sort key: unread ids sort last);
//   wpos[j]  = the position of j's weight where j is read, else -1: j itself, or with
//              list weights (list_weights) woffsets[b] + (j - offsets[b]);
//   count[b] = the number of non-null ids of bag b (0 for a null bag; the divisor of a mean).
// Thread mapping: one thread per item k < max(N, B), grid-stride. Item k is id j = k
// (binary search of its bag in offsets: log2(B) reads shared through the cache; coalesced
// reads of ids and vmask, coalesced writes) and bag b = k (two offsets reads; with a mask
// the bag's vmask entries are counted one by one: a long bag serialises on its thread).
// Device checks: a read id outside [0, bound) (position j: recorded as unread), a bag
// whose weights have another length (position b: its ids get wpos -1), a null weight
// of a read id (position j: wpos -1). The search and the counting loop stay inside
// offsets[0 .. B] and ids whatever the offsets (their own check is check_offsets').
template <typename I>
__global__ void bag_ids(const I* __restrict__ ids, const long long* __restrict__ offsets,
                        const unsigned char* __restrict__ valid, int all_valid,
                        const unsigned char* __restrict__ vmask, int masked,
                        const long long* __restrict__ woffsets, int list_weights,
                        const unsigned char* __restrict__ wvalid, int weights_masked,
                        long long num_ids, long long num_bags, long long num_weights,
                        long long bound, long long* __restrict__ bag, long long* __restrict__ key,
                        long long* __restrict__ wpos, long long* __restrict__ count,
                        unsigned long long* error) {
    const long long first = __ldg(offsets);
    const long long last = __ldg(offsets + num_bags);
    const long long items = num_ids > num_bags ? num_ids : num_bags;
    for (ASP_GRID_STRIDE(k, items)) {
        if (k < num_bags) {
            const long long lo = __ldg(offsets + k);
            const long long hi = __ldg(offsets + k + 1);
            if (list_weights && hi - lo != __ldg(woffsets + k + 1) - __ldg(woffsets + k)) {
                ASP_RAISE(error, ASP_EMBEDDING_WEIGHT_LENGTHS, k);
            }
            long long c = 0;
            if (all_valid || __ldg(valid + k)) {
                const long long a = lo > 0 ? lo : 0;
                const long long z = hi < num_ids ? hi : num_ids;
                if (!masked) {
                    c = z > a ? z - a : 0;
                } else {
                    for (long long j = a; j < z; ++j) c += __ldg(vmask + j) != 0;
                }
            }
            count[k] = c;
        }
        if (k >= num_ids) continue;
        const long long j = k;
        long long b = -1;
        long long r = bound;
        long long w = -1;
        if (j >= first && j < last) {
            // Largest b in [0, num_bags) with offsets[b] <= j (as in weights_grad).
            long long at = 0;
            long long hi_b = num_bags;
            while (hi_b - at > 1) {
                const long long mid = at + (hi_b - at) / 2;
                if (__ldg(offsets + mid) <= j) {
                    at = mid;
                } else {
                    hi_b = mid;
                }
            }
            if ((all_valid || __ldg(valid + at)) && (!masked || __ldg(vmask + j))) {
                const long long id = (long long)__ldg(ids + j);
                if (id < 0 || id >= bound) {
                    ASP_RAISE(error, ASP_EMBEDDING_ID_RANGE, j);
                } else {
                    b = at;
                    r = id;
                    w = j;
                    if (list_weights) {
                        const long long lo = __ldg(offsets + at);
                        const long long wlo = __ldg(woffsets + at);
                        w = -1;  // a bag of another length is recorded by its bag's item
                        if (__ldg(offsets + at + 1) - lo == __ldg(woffsets + at + 1) - wlo) {
                            const long long p = wlo + (j - lo);
                            if (p >= 0 && p < num_weights) {  // else: check_offsets' error
                                if (weights_masked && !__ldg(wvalid + p)) {
                                    ASP_RAISE(error, ASP_EMBEDDING_WEIGHT_NULL, j);
                                } else {
                                    w = p;
                                }
                            }
                        }
                    }
                }
            }
        }
        bag[j] = b;
        key[j] = r;
        wpos[j] = w;
    }
}

// --------------------------------------------------------------------------- backward
// sort_ids, on the device: the launcher sorts the ids stably (the array module's
// argsort, a radix sort on CuPy), this kernel flags the first position of each run of
// equal ids in sorted order, and the launcher compacts the flags (flatnonzero: the
// one synchronisation, the number of distinct ids decides the output sizes).
// head[j] = 1 where j == 0 or ids[order[j]] != ids[order[j - 1]], else 0.
// Thread mapping: one thread per sorted position j (grid-stride): coalesced reads of
// order and writes of head, two gathered reads of ids (the second one shared with the
// neighbouring thread through the cache).
// Device checks: order[j] outside [0, N) (position j); ids[order[j - 1]] > ids[order[j]],
// or equal ids whose positions are not increasing (not a stable sort; position j).
template <typename I>
__global__ void run_heads(const I* __restrict__ ids, const long long* __restrict__ order,
                          unsigned char* __restrict__ head, long long num,
                          unsigned long long* error) {
    for (ASP_GRID_STRIDE(j, num)) {
        unsigned char flag = 0;
        const long long p = __ldg(order + j);
        const long long q = j > 0 ? __ldg(order + j - 1) : 0;
        if (p < 0 || p >= num) {
            ASP_RAISE(error, ASP_EMBEDDING_ORDER_RANGE, j);
        } else if (j == 0) {
            flag = 1;
        } else if (q >= 0 && q < num) {  // else recorded by thread j - 1
            const I before = __ldg(ids + q);
            const I id = __ldg(ids + p);
            if (id < before || (id == before && p <= q)) {
                ASP_RAISE(error, ASP_EMBEDDING_SORT, j);
            }
            flag = id != before;
        }
        head[j] = flag;
    }
}

// coalesce_sorted: out[u, d] = sum over q in [starts[u], starts[u + 1]) of
// scale[p] * grad[bag[p], d] (or grad[bag[p], d] when scale is empty), p = order[q],
// added in q order into an accumulator of type T, exactly like the CPU kernel (which
// also rounds each step to T: out[u, d] += ...).
// Thread mapping: one lane group per run u (grid-stride over runs); lane l sums
// d = l, l + 32, ...: coalesced reads of each gradient row and writes of the output row.
// Memory traffic: each gradient element of the run read once, each output element
// written once; order, bag and scale read once per lane per 32 columns (broadcast).
// Device checks: starts[u] < 0, starts[u + 1] < starts[u] or > len(order) (position u:
// the run is skipped); order[q] outside bag (or a non-empty scale) or bag[p] outside
// the gradient's rows (position q: that term is skipped).
template <typename T, typename S>
__global__ void coalesce_sorted(const T* __restrict__ grad, const long long* __restrict__ order,
                                const long long* __restrict__ bag, const S* __restrict__ scale,
                                const long long* __restrict__ starts, T* __restrict__ out,
                                long long num_runs, long long dim, long long num_order,
                                long long num_bag, long long num_scale, long long grad_rows,
                                unsigned long long* error) {
    using P = decltype(S() * T());  // Numba's type of scale[p] * grad[b, d]
    const bool weighted = num_scale > 0;
    const long long lane = asp_lane();
    for (long long u = asp_group(); u < num_runs; u += asp_group_stride()) {
        const long long lo = __ldg(starts + u);
        const long long hi = __ldg(starts + u + 1);
        if (lo < 0 || hi < lo || hi > num_order) {
            if (lane == 0) ASP_RAISE(error, ASP_EMBEDDING_RUN_BOUNDS, u);
            continue;
        }
        for (long long d = lane; d < dim; d += 32) {
            T acc = (T)0;
            for (long long q = lo; q < hi; ++q) {
                const long long p = __ldg(order + q);
                if (p < 0 || p >= num_bag || (weighted && p >= num_scale)) {
                    ASP_RAISE(error, ASP_EMBEDDING_ORDER_RANGE, q);
                    continue;
                }
                const long long b = __ldg(bag + p);
                if (b < 0 || b >= grad_rows) {
                    ASP_RAISE(error, ASP_EMBEDDING_BAG_RANGE, q);
                    continue;
                }
                const T g = __ldg(grad + b * dim + d);
                acc = weighted ? (T)(acc + asp_mul_rn((P)__ldg(scale + p), (P)g)) : (T)(acc + g);
            }
            out[u * dim + d] = acc;
        }
    }
}

// weights_grad: out[j] = sum_d table[ids[j], d] * grad[b, d] for the bag b holding j
// (offsets[b] <= j < offsets[b + 1]), times 1 / (bag size) when `mean`. Values outside
// [offsets[0], offsets[B]) belong to no bag and are left alone, as on the CPU. Each
// product is rounded in P (Numba's type of T * G, chosen by the launcher) and the sum
// is in double, as on the CPU; the order of the sum is asp_group_sum's.
// Thread mapping: one lane group per value j (grid-stride over values); the bag is
// found by binary search of offsets (log2(B) reads that neighbouring groups share
// through the cache); lane l takes d = l, l + 32, ..., so the table row and the
// gradient row are read coalesced; lane 0 writes out[j].
// Memory traffic: one table row and one gradient row per value (the gradient row of a
// bag is shared by its values through the cache), one write per value.
// Device checks: an id outside [0, V) or a bag outside the gradient's rows (position j:
// out[j] left alone). The search needs no check: whatever the offsets, it ends on a b
// with offsets[b] <= j < offsets[b + 1] (j is inside [offsets[0], offsets[B]), and the
// search keeps offsets[lo] <= j < offsets[hi]), so nothing is read out of bounds.
template <typename T, typename G, typename P, typename Out, typename I>
__global__ void weights_grad(const T* __restrict__ table, const I* __restrict__ ids,
                             const long long* __restrict__ offsets, const G* __restrict__ grad,
                             int mean, Out* __restrict__ out, long long num_ids,
                             long long num_bags, long long dim, long long table_rows,
                             long long grad_rows, unsigned long long* error) {
    const long long lane = asp_lane();
    const long long first = __ldg(offsets);
    const long long last = __ldg(offsets + num_bags);
    for (long long j = asp_group(); j < num_ids; j += asp_group_stride()) {
#if defined(ARROW_SPARSE_EMULATOR)
        if (lane != 0) continue;  // lane 0 does the whole group's work (asp_group_sum)
#endif
        if (j < first || j >= last) continue;
        // Largest b in [0, num_bags) with offsets[b] <= j (offsets[b + 1] > j).
        long long b = 0;
        long long hi_b = num_bags;
        while (hi_b - b > 1) {
            const long long mid = b + (hi_b - b) / 2;
            if (__ldg(offsets + mid) <= j) {
                b = mid;
            } else {
                hi_b = mid;
            }
        }
        const long long lo = __ldg(offsets + b);
        const long long hi = __ldg(offsets + b + 1);
        const long long r = (long long)__ldg(ids + j);
        const int code = r < 0 || r >= table_rows ? ASP_EMBEDDING_ID_RANGE
                         : b >= grad_rows ? ASP_EMBEDDING_BAG_RANGE : 0;
        if (code) {  // the same for every lane of the group: it stays converged
            if (lane == 0) ASP_RAISE(error, code, j);
            continue;
        }
        const T* w = table + r * dim;
        const G* g = grad + b * dim;
        const double acc = asp_group_sum(lane, [&](long long l) {
            double partial = 0.0;
            for (long long d = l; d < dim; d += 32) {
                partial += (double)asp_mul_rn((P)__ldg(w + d), (P)__ldg(g + d));
            }
            return partial;
        });
        const double scale = mean ? 1.0 / (double)(hi - lo) : 1.0;  // hi > j >= lo
        if (lane == 0) out[j] = (Out)(acc * scale);
    }
}

// ------------------------------------------------------------------------- optimizers

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
// Thread mapping: one lane group per gradient row (grid-stride over rows); lane l
// handles d = l, l + 32, ..., so every load and store is coalesced. The row's sum of
// squares is asp_group_sum of the lane partials (warp shuffles); every lane reads
// state[r] before it and lane 0 writes it after a __syncwarp.
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
    const long long lane = asp_lane();
    for (long long u = asp_group(); u < num_grad; u += asp_group_stride()) {
#if defined(ARROW_SPARSE_EMULATOR)
        if (lane != 0) continue;  // lane 0 does the whole group's work
#endif
        const long long r = asp_grad_row(rows, u, table_rows, error);
        if (r < 0) continue;  // the same for every lane of the group: it stays converged
        const T* g = values + u * dim;
        T* w = table + r * dim;
        const double before = (double)state[r];
        const double sq = asp_group_sum(lane, [&](long long l) {
            return asp_lane_sum_sq(g, dim, l);
        });
#if !defined(ARROW_SPARSE_EMULATOR)
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
