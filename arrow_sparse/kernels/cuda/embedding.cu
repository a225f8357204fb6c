// Embedding tables: CUDA twins of the kernels of arrow_sparse/kernels/cpu/embedding.py
// (same arguments and formulas; see that module's docstring): the lookup (lookup_rows),
// max-pooled bags with their argmax (bag_max), the sparse backward (sort_ids' run heads,
// coalesce_sorted, coalesce_max, weights_grad) and the
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

// ---------------------------------------------------------------------------- max bags
// Whether x replaces m as the max: IEEE maximum as the CPU's take_max (a NaN wins over a
// number, +0.0 over -0.0), and the first position keeps a tie.
template <typename T>
__device__ __forceinline__ bool asp_max_beats(T x, T m) { return x > m; }
template <typename F>
__device__ __forceinline__ bool asp_float_max_beats(F x, F m) {
    // Between zeros, 1 / z tells -0.0 (-inf) from +0.0 (+inf).
    return x > m || (x != x && m == m) ||
           (x == 0 && m == 0 && (F)1 / m < 0 && (F)1 / x > 0);
}
__device__ __forceinline__ bool asp_max_beats(float x, float m) {
    return asp_float_max_beats(x, m);
}
__device__ __forceinline__ bool asp_max_beats(double x, double m) {
    return asp_float_max_beats(x, m);
}

// bag_max: out[b, d] = the max of table[ids[j], d] over the positions j of bag b
// (offsets[b] <= j < offsets[b + 1], skipping read[j] == 0 when masked), and
// argmax[b, d] = the id at the first position holding it; an empty bag gives 0 and -1.
// Thread mapping: one lane group per bag (grid-stride over bags); lane l handles
// d = l, l + 32, ...: coalesced reads of each table row, coalesced writes. A bag is
// walked by its group alone (as FBGEMM's pooled lookups do): a very long bag
// serialises on one warp.
// Memory traffic: each read id's row read once, one read of ids[j] (and read[j]) per
// lane per 32 columns (broadcast), each output element written once.
// Device checks: an id outside [0, V) (position j: skipped).
template <typename T, typename I>
__global__ void bag_max(const T* __restrict__ table, const I* __restrict__ ids,
                        const long long* __restrict__ offsets,
                        const unsigned char* __restrict__ read, int masked,
                        T* __restrict__ out, long long* __restrict__ argmax,
                        long long num_bags, long long dim, long long num_ids,
                        long long table_rows, unsigned long long* error) {
    const long long lane = asp_lane();
    for (long long b = asp_group(); b < num_bags; b += asp_group_stride()) {
        long long lo = __ldg(offsets + b);
        long long hi = __ldg(offsets + b + 1);
        lo = lo < 0 ? 0 : lo;
        hi = hi > num_ids ? num_ids : hi;  // check_offsets has rejected anything else
        for (long long d = lane; d < dim; d += 32) {
            T best = (T)0;
            long long at = -1;
            for (long long j = lo; j < hi; ++j) {
                if (masked && !__ldg(read + j)) continue;
                const long long r = (long long)__ldg(ids + j);
                if (r < 0 || r >= table_rows) {
                    if (d == lane) ASP_RAISE(error, ASP_EMBEDDING_ID_RANGE, j);
                    continue;
                }
                const T x = __ldg(table + r * dim + d);
                if (at < 0 || asp_max_beats(x, best)) {
                    best = x;
                    at = r;
                }
            }
            out[b * dim + d] = best;
            argmax[b * dim + d] = at;
        }
    }
}

// ------------------------------------------------------------------- bags (device only)
// bag_ids: the device form of the host's bag reading (arrow_sparse/_embedding_common.py),
// without compacting anything. Bag b holds ids[offsets[b]:offsets[b + 1]]; id position j
// is *read* when it lies in a bag b (offsets[0] <= j < offsets[B]), the bag is valid
// (valid[b], unless all_valid) and the id is not null (vmask[j], unless !masked). Writes
//   bag[j]   = b where j is read, else -1;
//   key[j]   = ids[j] where j is read, else `bound` (a sort key: unread ids sort last);
//              key[N] = bound too, a sentinel: sorting key makes a run of `bound` always
//              exist, as the last, so a caller can drop it without reading anything;
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
        if (k == 0) key[num_ids] = bound;
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
            const long long at = asp_row_of(offsets, num_bags, j);  // the bag holding j
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

// compact_runs: the device half of sort_ids' compaction, without flatnonzero's own read
// back: `csum` is the inclusive prefix sum of `head` (the launcher reads its last entry,
// the number of runs U, together with the error word: the one synchronisation), and the
// head at sorted position j writes starts[csum[j] - 1] = j and rows[csum[j] - 1] =
// ids[order[j]]; the last position also writes starts[U] = num.
// Thread mapping: one thread per sorted position (grid-stride); coalesced reads of head
// and csum, scattered writes of one 8-byte word per run to each output.
template <typename I>
__global__ void compact_runs(const I* __restrict__ ids, const long long* __restrict__ order,
                             const unsigned char* __restrict__ head,
                             const long long* __restrict__ csum, long long num,
                             long long num_runs, long long* __restrict__ rows,
                             long long* __restrict__ starts) {
    for (ASP_GRID_STRIDE(j, num)) {
        if (j == num - 1) starts[num_runs] = num;
        if (!__ldg(head + j)) continue;
        const long long u = __ldg(csum + j) - 1;
        const long long p = __ldg(order + j);
        if (u < 0 || u >= num_runs || p < 0 || p >= num) continue;  // run_heads recorded it
        starts[u] = j;
        rows[u] = (long long)__ldg(ids + p);
    }
}

// The sum over sorted positions [a, b) of scale[p] * grad[bag[p], d] (or grad[bag[p], d]
// without scale), p = order[q], added in q order into an accumulator of type T from 0,
// each step rounded to T, exactly like the CPU kernel's out[u, d] += ... Device checks:
// order[q] outside bag (or a non-empty scale) or bag[p] outside the gradient's rows
// (position q: that term is skipped).
template <typename T, typename S>
__device__ __forceinline__ T asp_run_sum(const T* __restrict__ grad,
                                         const long long* __restrict__ order,
                                         const long long* __restrict__ bag,
                                         const S* __restrict__ scale, long long a, long long b,
                                         long long d, long long dim, long long num_bag,
                                         long long num_scale, long long grad_rows,
                                         unsigned long long* error) {
    using P = decltype(S() * T());  // Numba's type of scale[p] * grad[b, d]
    const bool weighted = num_scale > 0;
    T acc = (T)0;
    for (long long q = a; q < b; ++q) {
        const long long p = __ldg(order + q);
        if (p < 0 || p >= num_bag || (weighted && p >= num_scale)) {
            ASP_RAISE(error, ASP_EMBEDDING_ORDER_RANGE, q);
            continue;
        }
        const long long r = __ldg(bag + p);
        if (r < 0 || r >= grad_rows) {
            ASP_RAISE(error, ASP_EMBEDDING_BAG_RANGE, q);
            continue;
        }
        const T g = __ldg(grad + r * dim + d);
        acc = weighted ? (T)(acc + asp_mul_rn((P)__ldg(scale + p), (P)g)) : (T)(acc + g);
    }
    return acc;
}

// Whether run u's bounds lie within the order (else recorded at u when `record`).
__device__ __forceinline__ bool asp_run_bounds(const long long* __restrict__ starts, long long u,
                                               long long num_order, bool record,
                                               unsigned long long* error, long long* lo,
                                               long long* hi) {
    *lo = __ldg(starts + u);
    *hi = __ldg(starts + u + 1);
    if (*lo < 0 || *hi < *lo || *hi > num_order) {
        if (record) ASP_RAISE(error, ASP_EMBEDDING_RUN_BOUNDS, u);
        return false;
    }
    return true;
}

// coalesce_sorted: out[u, d] = sum over q in [starts[u], starts[u + 1]) of
// scale[p] * grad[bag[p], d] (asp_run_sum). A run of at most `piece` positions (all of
// them with piece = 0) is summed by its lane group exactly like the CPU kernel. A longer
// one (a Zipf hot id: 7,864 of 83,475 ids in one run) is split by elements
// (asp_chunk_piece in _common.cuh): coalesce_pieces, launched first, sums each later
// piece [starts[u] + j * piece, ...) into parts[k, d] (k the chunk of sorted positions the
// piece starts in), and the run's group sums its first `piece` positions, then adds the
// partials in order, each step rounded to T: ((first + piece 1) + piece 2) + ... A
// deterministic order (the same bits whatever the thread order), within the
// re-association of T of the CPU's left-to-right sum.
// Thread mapping: one lane group per run u (grid-stride over runs); lane l sums
// d = l, l + 32, ...: coalesced reads of each gradient row and writes of the output row.
// Memory traffic: each gradient element of the run read once (by this kernel or by
// coalesce_pieces), each output element written once; order, bag and scale read once per
// lane per 32 columns (broadcast); one partial read per later piece and per column.
// Device checks: starts[u] < 0, starts[u + 1] < starts[u] or > len(order) (position u:
// the run is skipped); those of asp_run_sum.
template <typename T, typename S>
__global__ void coalesce_sorted(const T* __restrict__ grad, const long long* __restrict__ order,
                                const long long* __restrict__ bag, const S* __restrict__ scale,
                                const long long* __restrict__ starts, T* __restrict__ out,
                                long long num_runs, long long dim, long long num_order,
                                long long num_bag, long long num_scale, long long grad_rows,
                                long long piece, const T* __restrict__ parts,
                                unsigned long long* error) {
    const long long lane = asp_lane();
    for (long long u = asp_group(); u < num_runs; u += asp_group_stride()) {
        long long lo, hi;
        if (!asp_run_bounds(starts, u, num_order, lane == 0, error, &lo, &hi)) continue;
        const long long end = piece > 0 && hi - lo > piece ? lo + piece : hi;
        for (long long d = lane; d < dim; d += 32) {
            T acc = asp_run_sum(grad, order, bag, scale, lo, end, d, dim, num_bag, num_scale,
                                grad_rows, error);
            for (long long p = end; p < hi; p += piece) {
                acc = (T)(acc + __ldg(parts + (p / piece) * dim + d));
            }
            out[u * dim + d] = acc;
        }
    }
}

// coalesce_max: the gradient of max-pooled bags, as the CPU kernel: run u (id rows[u],
// sorted positions [starts[u], starts[u + 1]), in input order, so a bag's positions are
// adjacent) visits each of its bags b once and adds grad[b, d] into out[u, d] where
// argmax[b, d] == rows[u], in q order from 0 (the CPU's sum, bit for bit);
// credits[u] (zeroed by the launcher) gets the number of elements the run won.
// Thread mapping: one lane group per run (grid-stride over runs), lanes over the
// columns: coalesced reads of grad and argmax rows, coalesced writes of the output row;
// each lane adds its count into credits[u] with one integer atomicAdd (exact in any
// order). A hot id's long run is walked by its group alone.
// Memory traffic: one read of order, bag per position per lane per 32 columns
// (broadcast), argmax[b, d] once per visited bag and column, grad[b, d] where won.
// Device checks: those of asp_run_bounds; order[q] or bag[p] out of range (position q:
// skipped).
template <typename T>
__global__ void coalesce_max(const T* __restrict__ grad, const long long* __restrict__ order,
                             const long long* __restrict__ bag,
                             const long long* __restrict__ rows,
                             const long long* __restrict__ argmax,
                             const long long* __restrict__ starts, T* __restrict__ out,
                             unsigned long long* __restrict__ credits, long long num_runs,
                             long long dim, long long num_order, long long num_bag,
                             long long grad_rows, unsigned long long* error) {
    const long long lane = asp_lane();
    for (long long u = asp_group(); u < num_runs; u += asp_group_stride()) {
        long long lo, hi;
        if (!asp_run_bounds(starts, u, num_order, lane == 0, error, &lo, &hi)) continue;
        const long long r = __ldg(rows + u);
        unsigned long long won = 0;
        for (long long d = lane; d < dim; d += 32) {
            T acc = (T)0;
            long long prev = -1;
            for (long long q = lo; q < hi; ++q) {
                const long long p = __ldg(order + q);
                if (p < 0 || p >= num_bag) {
                    if (d == lane) ASP_RAISE(error, ASP_EMBEDDING_ORDER_RANGE, q);
                    continue;
                }
                const long long b = __ldg(bag + p);
                if (b < 0 || b >= grad_rows) {
                    if (d == lane) ASP_RAISE(error, ASP_EMBEDDING_BAG_RANGE, q);
                    continue;
                }
                if (b == prev) continue;  // the id again in the same bag
                prev = b;
                if (__ldg(argmax + b * dim + d) == r) {
                    acc = (T)(acc + __ldg(grad + b * dim + d));
                    ++won;
                }
            }
            out[u * dim + d] = acc;
        }
        if (won) atomicAdd(credits + u, won);
    }
}

// coalesce_pieces: parts[k, d], the sum of the later piece of a run longer than `piece`
// that starts in chunk k of the sorted positions (see coalesce_sorted).
// Thread mapping: one lane group per chunk (grid-stride), lanes over the columns; the
// binary search of starts (log2(runs) reads) is shared by the lanes through the cache.
// Memory traffic: the later pieces' gradient rows once, one partial row per chunk that
// holds a piece start.
template <typename T, typename S>
__global__ void coalesce_pieces(const T* __restrict__ grad, const long long* __restrict__ order,
                                const long long* __restrict__ bag, const S* __restrict__ scale,
                                const long long* __restrict__ starts, long long num_runs,
                                long long dim, long long num_order, long long num_bag,
                                long long num_scale, long long grad_rows, long long piece,
                                long long num_chunks, T* __restrict__ parts,
                                unsigned long long* error) {
    const long long lane = asp_lane();
    for (long long k = asp_group(); k < num_chunks; k += asp_group_stride()) {
        long long u, a, b, lo, hi;
        if (!asp_chunk_piece(starts, num_runs, k, piece, &u, &a, &b)) continue;
        if (!asp_run_bounds(starts, u, num_order, false, error, &lo, &hi)) continue;
        for (long long d = lane; d < dim; d += 32) {
            parts[k * dim + d] = asp_run_sum(grad, order, bag, scale, a, b, d, dim, num_bag,
                                             num_scale, grad_rows, error);
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
        const long long b = asp_row_of(offsets, num_bags, j);  // offsets[b + 1] > j
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

// The element updates, shared by the *_rows steps and the fused train_rows: g is the
// coalesced gradient element already in the table's type T (the unfused step converts the
// gradient's values to T first).
template <typename T>
__device__ __forceinline__ void asp_sgd_step(T* __restrict__ w, T g, double lr) {
    *w = (T)((double)*w - asp_mul_rn(lr, (double)g));
}

template <typename T, typename S>
__device__ __forceinline__ void asp_adagrad_step(T* __restrict__ w, S* __restrict__ state, T g,
                                                 double lr, double eps) {
    const auto s = *state + asp_mul_rn(g, g);  // S + T: float only if both are
    *state = (S)s;
    const double step = asp_mul_rn(lr, (double)g) / ((double)asp_sqrt(s) + eps);
    *w = (T)((double)*w - step);
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
        asp_sgd_step(table + r * dim + (e - u * dim), __ldg(values + e), lr);
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
        asp_adagrad_step(table + at, state + at, __ldg(values + e), lr, eps);
    }
}

// Row-wise Adagrad on one table row w[0, dim) and its state cell *state, by the lane
// group of `lane`: *state += mean_d(g * g); w -= lr * g / (sqrt(*state) + eps), where
// grad(d) is the row's gradient at column d (in T, read twice: once squared, once in the
// update). Lane l sums g * g (rounded in T, added in double) over d = l, l + 32, ... in
// increasing d; the row's sum of squares is asp_group_sum of the lane partials (warp
// shuffles); every lane reads *state before it and lane 0 writes it after a __syncwarp.
// Lane l then updates d = l, l + 32, ..., so every load and store is coalesced.
// Barrier-free variant (ARROW_SPARSE_EMULATOR): called by lane 0 only, which does the
// 32 lane partials, the same butterfly and the 32 lane updates in turn, so the results
// are the same bits and no lane reads what another writes.
template <typename T, typename S, typename Grad>
__device__ __forceinline__ void asp_rowwise_adagrad_row(long long lane, T* __restrict__ w,
                                                        S* __restrict__ state, long long dim,
                                                        double lr, double eps,
                                                        const Grad& grad) {
    const double before = (double)*state;
    const double sq = asp_group_sum(lane, [&](long long l) {
        double partial = 0.0;
        for (long long d = l; d < dim; d += 32) {
            const T x = grad(d);
            partial += (double)asp_mul_rn(x, x);
        }
        return partial;
    });
#if !defined(ARROW_SPARSE_EMULATOR)
    __syncwarp();  // every lane has read *state
#endif
    const double s = before + (dim ? sq / (double)dim : 0.0);
    const double step = lr / (asp_sqrt(s) + eps);
    if (lane == 0) *state = (S)s;
#if defined(ARROW_SPARSE_EMULATOR)
    for (long long l = 0; l < 32; ++l) {
#else
    {
        const long long l = lane;
#endif
        for (long long d = l; d < dim; d += 32) {
            w[d] = (T)((double)w[d] - asp_mul_rn(step, (double)grad(d)));
        }
    }
}

// rowwise_adagrad_rows: state[r] += mean_d(g * g); table[r] -= lr * g / (sqrt(state[r]) + eps).
// Thread mapping: one lane group per gradient row (grid-stride over rows), the row's
// step by asp_rowwise_adagrad_row (lane l handles d = l, l + 32, ...; in the
// barrier-free variant, lane 0 of the group does the whole row).
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
        asp_rowwise_adagrad_row(lane, table + r * dim, state + r, dim, lr, eps,
                                [&](long long d) { return __ldg(g + d); });
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

// ------------------------------------------------------------------ fused training step
// train_step on the device, with no SparseGrad: the ids' stable sort (`keys` = the ids
// in sorted order, unread ids carrying the key table_rows, `order` their positions),
// then train_pieces and train_rows. A run of equal keys is found from the keys
// themselves (a head differs from its predecessor, the end by binary search), so
// nothing is compacted and nothing is read back: no synchronisation. Each run's
// gradient is coalesce_sorted's, piece for piece (the same runs at the same sorted
// positions, the same partials, the same order of additions), and its rows are updated
// with the *_rows steps' own element updates (asp_sgd_step, asp_adagrad_step, and
// rowwise Adagrad's butterfly): the same bits as lookup_backward followed by sgd /
// adagrad / rowwise_adagrad on the device.
enum AspTrainOptimizer { ASP_TRAIN_SGD = 0, ASP_TRAIN_ADAGRAD = 1, ASP_TRAIN_ROWWISE = 2 };

// The end of the run of key `key` that contains sorted position `at`: the first position
// after `at` with a larger key (binary search).
__device__ __forceinline__ long long asp_key_end(const long long* __restrict__ keys,
                                                 long long num, long long at, long long key) {
    long long lo = at + 1;
    long long hi = num;
    while (lo < hi) {
        const long long mid = lo + (hi - lo) / 2;
        if (__ldg(keys + mid) <= key) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// The later piece [*a, *b) of the run of equal keys covering sorted position
// chunk * piece, if that run started before it (see asp_chunk_piece). keys are sorted;
// the searches stay inside [0, num) whatever they hold.
__device__ __forceinline__ bool asp_key_piece(const long long* __restrict__ keys, long long num,
                                              long long chunk, long long piece,
                                              long long skip_key, long long* a, long long* b) {
    const long long at = chunk * piece;
    if (at <= 0 || at >= num) return false;
    const long long key = __ldg(keys + at);
    if (key == skip_key) return false;  // the unread ids' run: never summed
    if (__ldg(keys + at - 1) != key) return false;  // a run starts here: its first piece
    long long lo = 0;
    long long hi = at;
    while (lo < hi) {  // the run's first position
        const long long mid = lo + (hi - lo) / 2;
        if (__ldg(keys + mid) < key) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    const long long start = lo;
    const long long stop = asp_key_end(keys, num, at, key);
    const long long first = start + (at - start + piece - 1) / piece * piece;
    if (first >= stop) return false;
    *a = first;
    *b = stop - first > piece ? first + piece : stop;
    return true;
}

// train_pieces: parts[k, d], the sum of the later piece of a run longer than `piece`
// that starts in chunk k of the sorted positions: coalesce_pieces on keys (the run of
// key table_rows, the ids not read, is skipped as train_rows skips it).
// Thread mapping: one lane group per chunk (grid-stride), lanes over the columns.
// Memory traffic: the later pieces' gradient rows once, one partial row per chunk that
// holds a piece start; two binary searches of the keys per chunk (shared by the lanes).
template <typename G, typename C>
__global__ void train_pieces(const G* __restrict__ grad, const long long* __restrict__ order,
                             const long long* __restrict__ bag, const C* __restrict__ scale,
                             const long long* __restrict__ keys, long long num, long long dim,
                             long long num_bag, long long num_scale, long long grad_rows,
                             long long table_rows, long long piece, long long num_chunks,
                             G* __restrict__ parts, unsigned long long* error) {
    const long long lane = asp_lane();
    for (long long k = asp_group(); k < num_chunks; k += asp_group_stride()) {
        long long a, b;
        if (!asp_key_piece(keys, num, k, piece, table_rows, &a, &b)) continue;
        for (long long d = lane; d < dim; d += 32) {
            parts[k * dim + d] = asp_run_sum(grad, order, bag, scale, a, b, d, dim, num_bag,
                                             num_scale, grad_rows, error);
        }
    }
}

// The coalesced gradient of the run [q, stop) at column d, in the table's type T:
// coalesce_sorted's sum (first piece, then the partials in order) converted to T.
template <typename T, typename G, typename C>
__device__ __forceinline__ T asp_train_grad(const G* __restrict__ grad,
                                            const long long* __restrict__ order,
                                            const long long* __restrict__ bag,
                                            const C* __restrict__ scale, long long q,
                                            long long stop, long long d, long long dim,
                                            long long num_bag, long long num_scale,
                                            long long grad_rows, long long piece,
                                            const G* __restrict__ parts,
                                            unsigned long long* error) {
    const long long end = piece > 0 && stop - q > piece ? q + piece : stop;
    G acc = asp_run_sum(grad, order, bag, scale, q, end, d, dim, num_bag, num_scale, grad_rows,
                        error);
    for (long long p = end; p < stop; p += piece) {
        acc = (G)(acc + __ldg(parts + (p / piece) * dim + d));
    }
    return (T)acc;
}

// train_rows: for each run of equal keys (its first sorted position q), the row
// r = keys[q] of the table takes the optimizer step `opt` with the run's coalesced
// gradient: SGD and Adagrad per element (asp_sgd_step, asp_adagrad_step on state[r, d]);
// row-wise Adagrad by asp_rowwise_adagrad_row, as rowwise_adagrad_rows (one state[r]).
// The run of key table_rows (ids not read: null, or out of range and recorded by
// bag_ids) is skipped.
// Thread mapping: one lane group per sorted position (grid-stride); groups that are not
// at a run's head leave after two key reads; a head finds its run's end by binary
// search; lanes over the columns, so gradient rows, table rows and state rows are read
// and written coalesced. Barrier-free variant (ARROW_SPARSE_EMULATOR) of row-wise
// Adagrad: lane 0 does the row, as in rowwise_adagrad_rows.
// Memory traffic: each gradient element of a run read once (twice for row-wise Adagrad,
// whose update recomputes the sum it squared: a second read from L2 instead of a
// [runs, D] buffer), the touched table rows (and state) read and written once; no
// coalesced gradient is written.
// Device checks: a key outside [0, table_rows] (position q); those of asp_run_sum.
template <typename T, typename G, typename S, typename C>
__global__ void train_rows(T* __restrict__ table, S* __restrict__ state,
                           const G* __restrict__ grad, const long long* __restrict__ order,
                           const long long* __restrict__ bag, const C* __restrict__ scale,
                           const long long* __restrict__ keys, int opt, double lr, double eps,
                           long long num, long long dim, long long num_bag, long long num_scale,
                           long long grad_rows, long long table_rows, long long piece,
                           const G* __restrict__ parts, unsigned long long* error) {
    const long long lane = asp_lane();
    for (long long q = asp_group(); q < num; q += asp_group_stride()) {
        const long long r = __ldg(keys + q);
        if (q > 0 && __ldg(keys + q - 1) == r) continue;  // inside a run
        if (r == table_rows) continue;  // the ids that are not read
        if (r < 0 || r > table_rows) {
            if (lane == 0) ASP_RAISE(error, ASP_EMBEDDING_ID_RANGE, q);
            continue;
        }
        const long long stop = asp_key_end(keys, num, q, r);
        T* w = table + r * dim;
        if (opt != ASP_TRAIN_ROWWISE) {
            for (long long d = lane; d < dim; d += 32) {
                const T g = asp_train_grad<T>(grad, order, bag, scale, q, stop, d, dim, num_bag,
                                              num_scale, grad_rows, piece, parts, error);
                if (opt == ASP_TRAIN_SGD) {
                    asp_sgd_step(w + d, g, lr);
                } else {
                    asp_adagrad_step(w + d, state + r * dim + d, g, lr, eps);
                }
            }
            continue;
        }
#if defined(ARROW_SPARSE_EMULATOR)
        if (lane != 0) continue;  // lane 0 does the whole group's work
#endif
        asp_rowwise_adagrad_row(lane, w, state + r, dim, lr, eps, [&](long long d) {
            return asp_train_grad<T>(grad, order, bag, scale, q, stop, d, dim, num_bag,
                                     num_scale, grad_rows, piece, parts, error);
        });
    }
}
