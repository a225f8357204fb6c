// Segment reductions, fused gather + reduce and scatters: CUDA twins of
// arrow_sparse/kernels/cpu/segment.py (same semantics; see that module's docstring).
// Layouts are C-contiguous: values [N, D] (1-D values are D = 1), outputs [rows, D].
// Offsets are int or long long (template O) and may start above zero; ids / indices are
// int or long long (template I). `valid` is a uint8 row mask unless `all_valid`, `vmask`
// a uint8 value mask if `masked`. Weights arrive already converted to the accumulator
// type A on the host (the CPU kernel's `zero + w` is exactly that conversion), and
// per-row weight offsets as long long (`has_woff`). T is the values type, A the
// accumulator (double, long long or unsigned long long: the CPU kernel's `zero`), Out the
// output type.
//
// Numerics follow the CPU kernels operation by operation (same accumulator, same order
// of additions inside a segment), and double products are asp_mul_rn (_common.cuh) so
// nvcc does not contract them into FMAs. Float max/min are IEEE
// 754-2019 maximum/minimum, as on the CPU: NaN propagates and -0.0 < +0.0, an order-free
// rule, so max(-0.0, 0.0) = 0.0 and min(-0.0, 0.0) = -0.0 whatever the thread order.
// Scatter-adds combine in atomic order: equal for integers, float results within
// n * eps * sum|x| of the CPU's.
//
// Device errors. Host inputs are checked on the host before launch. Device inputs get
// the O(1) checks on the host and the device checks of convert.cu (offsets, lengths,
// segment ids), whose errors the public function raises later; until then the kernels
// here must not read or write out of bounds, so each re-checks what it relies on and
// records a violation in the error word (ASP_RAISE) instead: a row whose offsets leave
// the values (or whose weights leave the weights) is reduced as an empty row and
// recorded at the position of the offset that ends it, as convert.cu does (never below
// the position the check of the same offsets records, whose message then wins); an
// index outside the table or a segment id outside the output is skipped and recorded
// at its position. Weights rows are compared with the values rows here, and
// check_null_weights records null weights, which have no CPU twin (the host checks
// them with numpy).
//
// Barrier-free: one thread per output element, grid-stride loops, atomics for scatters.
// One kernel has a faster GPU variant behind ARROW_SPARSE_EMULATOR (the macro only the
// emulator defines): scatter_add aggregates a warp's atomics with __match_any_sync and
// shuffles; its barrier-free variant gives the same sums (up to the atomic order that
// float scatter sums already have).

enum AspSegmentError {
    ASP_SEGMENT_ROW_OUTSIDE = 1,  // message: offsets address values outside the values buffer
    ASP_SEGMENT_INDEX_RANGE = 2,  // message: IndexError: indices out of range [0, len(data))
    ASP_SEGMENT_ID_NEGATIVE = 3,  // message: IndexError: segment_ids must be non-negative
    ASP_SEGMENT_ID_RANGE = 4,  // message: IndexError: segment_ids must be < num_segments
    ASP_SEGMENT_WEIGHT_ROWS = 5,  // message: weights must have the same row lengths as the values
    ASP_SEGMENT_WEIGHT_NULL = 6,  // message: weights must not contain null elements; fill them first (pyarrow.compute.fill_null)
};

// a + b, a * b, max / min updates and the atomics are _reduce.cuh's.

// log in double: CUDA's libdevice on the GPU, the C library's in the emulator (exp is
// the header's asp_exp).
__device__ __forceinline__ double asp_log(double x) {
#if defined(__CUDACC__)
    return log(x);
#else
    return __builtin_log(x);
#endif
}


__device__ __forceinline__ bool asp_isfinite(double x) { return x - x == 0.0; }

__device__ __forceinline__ double asp_neg_inf() {
    union { unsigned long long u; double d; } bits;
    bits.u = 0xFFF0000000000000ULL;
    return bits.d;
}

__device__ __forceinline__ bool asp_row_valid(const unsigned char* valid, int all_valid,
                                              long long r) {
    return all_valid || __ldg(valid + r) != 0;
}

// Row r's values [start, stop), re-checked against the values buffer [0, num_values]:
// false (the row is then reduced as an empty row) with ASP_SEGMENT_ROW_OUTSIDE recorded
// at r + 1 when it leaves it (see the top of the file).
template <typename O>
__device__ __forceinline__ bool asp_row_range(const O* __restrict__ offsets, long long r,
                                              long long num_values,
                                              unsigned long long* error, long long* start,
                                              long long* stop) {
    *start = (long long)__ldg(offsets + r);
    *stop = (long long)__ldg(offsets + r + 1);
    if (*start < 0 || *stop < *start || *stop > num_values) {
        ASP_RAISE(error, ASP_SEGMENT_ROW_OUTSIDE, r + 1);
        return false;
    }
    return true;
}

// The step from value i of row r to its weight, weights[i + shift]. Per-row weights
// (has_woff) are re-checked: a weights row of another length than the values row is
// recorded as ASP_SEGMENT_WEIGHT_ROWS at r, one outside the weights buffer as
// ASP_SEGMENT_ROW_OUTSIDE at r + 1; false then (the row is reduced as an empty row).
__device__ __forceinline__ bool asp_weight_shift(const long long* __restrict__ woffsets,
                                                 int has_woff, long long r, long long start,
                                                 long long stop, long long num_weights,
                                                 unsigned long long* error, long long* shift) {
    if (!has_woff) {
        *shift = 0;
        return true;
    }
    const long long wstart = __ldg(woffsets + r);
    const long long wstop = __ldg(woffsets + r + 1);
    if (wstop - wstart != stop - start) {
        ASP_RAISE(error, ASP_SEGMENT_WEIGHT_ROWS, r);
        return false;
    }
    if (wstart < 0 || wstop > num_weights) {
        ASP_RAISE(error, ASP_SEGMENT_ROW_OUTSIDE, r + 1);
        return false;
    }
    *shift = wstart - start;
    return true;
}

// The table row indices[i], re-checked against [0, num_rows): false with
// ASP_SEGMENT_INDEX_RANGE recorded at i when it lies outside (the index is skipped).
template <typename I>
__device__ __forceinline__ bool asp_table_row(const I* __restrict__ indices, long long i,
                                              long long num_rows, unsigned long long* error,
                                              long long* row) {
    *row = (long long)__ldg(indices + i);
    if (*row < 0 || *row >= num_rows) {
        ASP_RAISE(error, ASP_SEGMENT_INDEX_RANGE, i);
        return false;
    }
    return true;
}

// The output row (segment) ids[i], re-checked against [0, num_segments): false with
// ASP_SEGMENT_ID_NEGATIVE or ASP_SEGMENT_ID_RANGE recorded at i when it lies outside.
template <typename I>
__device__ __forceinline__ bool asp_segment_of(const I* __restrict__ ids, long long i,
                                               long long num_segments,
                                               unsigned long long* error, long long* s) {
    *s = (long long)__ldg(ids + i);
    if (*s < 0) {
        ASP_RAISE(error, ASP_SEGMENT_ID_NEGATIVE, i);
        return false;
    }
    if (*s >= num_segments) {
        ASP_RAISE(error, ASP_SEGMENT_ID_RANGE, i);
        return false;
    }
    return true;
}

// ----------------------------------------------------------------------------- atomics
__device__ __forceinline__ void asp_count(long long* counts, long long s) {
    atomicAdd((unsigned long long*)(counts + s), 1ULL);
}

// ================================================================ sorted reductions
// Every sorted kernel re-checks its row (asp_row_range): num_values is the length of
// the values' first axis; a row outside it is reduced as an empty row.

// sorted_sum: out[r, d] = sum (mean) over the non-null values i of row r of
// w_i * values[i, d] in A; rows with fewer than min_count values get `empty`.
// `lanes4` (1-D values, no mask, no weights) splits the row into four interleaved
// accumulators, (s0 + s1) + (s2 + s3), like the CPU's integer rows.
// With `piece` > 0 (the launcher sets it for 2-D values) a row longer than `piece`
// values is split by elements (asp_chunk_piece in _common.cuh): sorted_sum_pieces sums its
// later pieces into parts[k, d] (counts in pcounts[k]) in a first launch, and the row's
// thread adds its first `piece` values, then the partials in order. Rows of at most
// `piece` values are the CPU's sums exactly; longer ones are sums of piece sums (integers
// exact, floats within the re-association of A).
// Thread mapping: one thread per output element e = r * D + d (grid-stride). For each
// value i of the row the D threads of r read D consecutive addresses: coalesced along D.
// Memory traffic: each value read once (plus its weight/mask byte per thread, from
// cache), one write per output element; offsets/valid per row shared by D threads; with
// pieces one partial read per later piece and per element.

// The sum of rows' values [a, b) from zero, in the CPU's order; *count receives the number
// of non-null values.
template <typename T, typename A>
__device__ __forceinline__ A asp_sum_piece(const T* __restrict__ values,
                                           const unsigned char* __restrict__ vmask, int masked,
                                           const A* __restrict__ weights, int weighted,
                                           long long shift, int lanes4, A zero,
                                           long long width, long long d, long long a,
                                           long long b, long long* count) {
    A acc = zero;
    long long n = 0;
    if (weighted) {
        for (long long i = a; i < b; ++i) {
            if (masked && !__ldg(vmask + i)) continue;
            acc = asp_add(acc, asp_mul(__ldg(weights + i + shift),
                                       (A)__ldg(values + i * width + d)));
            ++n;
        }
    } else if (masked) {
        for (long long i = a; i < b; ++i) {
            if (!__ldg(vmask + i)) continue;
            acc = asp_add(acc, (A)__ldg(values + i * width + d));
            ++n;
        }
    } else if (lanes4) {  // width == 1
        A s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        long long i = a;
        for (; i + 4 <= b; i += 4) {
            s0 = asp_add(s0, (A)__ldg(values + i));
            s1 = asp_add(s1, (A)__ldg(values + i + 1));
            s2 = asp_add(s2, (A)__ldg(values + i + 2));
            s3 = asp_add(s3, (A)__ldg(values + i + 3));
        }
        for (; i < b; ++i) s0 = asp_add(s0, (A)__ldg(values + i));
        acc = asp_add(asp_add(s0, s1), asp_add(s2, s3));
        n = b - a;
    } else {
        for (long long i = a; i < b; ++i) acc = asp_add(acc, (A)__ldg(values + i * width + d));
        n = b - a;
    }
    *count = n;
    return acc;
}

// Row r is reduced (not null, its values, or a gather's ids, and its weights inside their
// buffers); *start, *stop and *shift then describe it. Used by the sorted sums and the
// gather reductions alike.
template <typename O>
__device__ __forceinline__ bool asp_sum_row(const O* __restrict__ offsets,
                                            const unsigned char* __restrict__ valid,
                                            int all_valid, int weighted,
                                            const long long* __restrict__ woffsets,
                                            int has_woff, long long r, long long num_values,
                                            long long num_weights, unsigned long long* error,
                                            long long* start, long long* stop,
                                            long long* shift) {
    *shift = 0;
    return asp_row_valid(valid, all_valid, r) &&
           asp_row_range(offsets, r, num_values, error, start, stop) &&
           (!weighted || asp_weight_shift(woffsets, has_woff, r, *start, *stop, num_weights,
                                          error, shift));
}

// The later piece [*a, *b) of the row longer than `piece` that starts in chunk k of the
// values (asp_chunk_piece), when that row is reduced (asp_sum_row: *shift its weights'
// shift); shared by sorted_sum_pieces and gather_reduce_pieces.
template <typename O>
__device__ __forceinline__ bool asp_row_piece(const O* __restrict__ offsets,
                                              const unsigned char* __restrict__ valid,
                                              int all_valid, int weighted,
                                              const long long* __restrict__ woffsets,
                                              int has_woff, long long num_rows, long long k,
                                              long long piece, long long num_values,
                                              long long num_weights, unsigned long long* error,
                                              long long* a, long long* b, long long* shift) {
    long long r, start, stop;
    return asp_chunk_piece(offsets, num_rows, k, piece, &r, a, b) &&
           asp_sum_row(offsets, valid, all_valid, weighted, woffsets, has_woff, r, num_values,
                       num_weights, error, &start, &stop, shift);
}

// sorted_sum_pieces: parts[k, d] and pcounts[k] of the later piece of a row longer than
// `piece` that starts in chunk k of the values (see sorted_sum). Thread mapping: one
// thread per (chunk k, feature d), grid-stride; the D threads of a chunk share its binary
// search of the offsets. Memory traffic: the later pieces' values once, one partial per
// chunk holding a piece start and per feature.
template <typename T, typename A, typename O>
__global__ void sorted_sum_pieces(const T* __restrict__ values, const O* __restrict__ offsets,
                                  const unsigned char* __restrict__ valid, int all_valid,
                                  const unsigned char* __restrict__ vmask, int masked,
                                  const A* __restrict__ weights, int weighted,
                                  const long long* __restrict__ woffsets, int has_woff,
                                  int lanes4, A zero, long long num_rows, long long width,
                                  long long num_values, long long num_weights, long long piece,
                                  long long num_chunks, A* __restrict__ parts,
                                  long long* __restrict__ pcounts, unsigned long long* error) {
    for (ASP_GRID_STRIDE(e, num_chunks * width)) {
        const long long k = e / width;
        const long long d = e - k * width;
        long long a, b, shift;
        if (!asp_row_piece(offsets, valid, all_valid, weighted, woffsets, has_woff, num_rows, k,
                           piece, num_values, num_weights, error, &a, &b, &shift)) {
            continue;
        }
        long long n;
        parts[e] = asp_sum_piece(values, vmask, masked, weights, weighted, shift, lanes4, zero,
                                 width, d, a, b, &n);
        if (d == 0) pcounts[k] = n;
    }
}

template <typename T, typename A, typename Out, typename O>
__global__ void sorted_sum(const T* __restrict__ values, const O* __restrict__ offsets,
                           const unsigned char* __restrict__ valid, int all_valid,
                           const unsigned char* __restrict__ vmask, int masked,
                           const A* __restrict__ weights, int weighted,
                           const long long* __restrict__ woffsets, int has_woff, int lanes4,
                           int mean, A zero, long long min_count, Out empty,
                           long long num_rows, long long width, long long num_values,
                           long long num_weights, long long piece, const A* __restrict__ parts,
                           const long long* __restrict__ pcounts, Out* __restrict__ out,
                           long long* __restrict__ counts, int want_counts,
                           unsigned long long* error) {
    for (ASP_GRID_STRIDE(e, num_rows * width)) {
        const long long r = e / width;
        const long long d = e - r * width;
        A acc = zero;
        long long n = 0;
        long long start, stop, shift;
        if (asp_sum_row(offsets, valid, all_valid, weighted, woffsets, has_woff, r, num_values,
                        num_weights, error, &start, &stop, &shift)) {
            const long long end = piece > 0 && stop - start > piece ? start + piece : stop;
            acc = asp_sum_piece(values, vmask, masked, weights, weighted, shift, lanes4, zero,
                                width, d, start, end, &n);
            for (long long p = end; p < stop; p += piece) {  // the later pieces, in order
                const long long k = p / piece;
                acc = asp_add(acc, __ldg(parts + k * width + d));
                n += __ldg(pcounts + k);
            }
        }
        if (want_counts && d == 0) counts[r] = n;
        if (n < min_count) {
            out[e] = empty;
        } else if (mean) {
            out[e] = (Out)(acc / (A)n);
        } else {
            out[e] = (Out)acc;
        }
    }
}

// sorted_extreme: out[r, d] = max (min) of the non-null values of row r, starting from
// `init` (the dtype's lowest / highest); NaN propagates, and the sign of a zero follows
// asp_take_max / asp_take_min, so the result is the CPU's whatever its lane split;
// fewer than min_count -> empty.
// Thread mapping: one thread per output element (r, d), grid-stride; coalesced along D.
// Memory traffic: each value read once, one write per output element.
template <typename T, typename O>
__global__ void sorted_extreme(const T* __restrict__ values, const O* __restrict__ offsets,
                               const unsigned char* __restrict__ valid, int all_valid,
                               const unsigned char* __restrict__ vmask, int masked,
                               int is_max, T init, long long min_count, T empty,
                               long long num_rows, long long width, long long num_values,
                               T* __restrict__ out, long long* __restrict__ counts,
                               int want_counts, unsigned long long* error) {
    for (ASP_GRID_STRIDE(e, num_rows * width)) {
        const long long r = e / width;
        const long long d = e - r * width;
        T m = init;
        long long n = 0;
        long long start, stop;
        if (asp_row_valid(valid, all_valid, r) &&
            asp_row_range(offsets, r, num_values, error, &start, &stop)) {
            for (long long i = start; i < stop; ++i) {
                if (masked && !__ldg(vmask + i)) continue;
                const T x = __ldg(values + i * width + d);
                m = is_max ? asp_take_max(x, m) : asp_take_min(x, m);
                ++n;
            }
        }
        if (want_counts && d == 0) counts[r] = n;
        out[e] = n < min_count ? empty : m;
    }
}

// sorted_arg_extreme: out[r, d] = position within row r of the first max (min) of
// column d among its non-null values (the first NaN wins, as numpy.argmax); empty for a
// row with no values or fewer than min_count.
// Thread mapping: one thread per output element (r, d), grid-stride; coalesced along D.
// Memory traffic: each value read once, one 8-byte write per output element.
template <typename T, typename O>
__global__ void sorted_arg_extreme(const T* __restrict__ values, const O* __restrict__ offsets,
                                   const unsigned char* __restrict__ valid, int all_valid,
                                   const unsigned char* __restrict__ vmask, int masked,
                                   int is_max, long long min_count, long long empty,
                                   long long num_rows, long long width, long long num_values,
                                   long long* __restrict__ out,
                                   long long* __restrict__ counts, int want_counts,
                                   unsigned long long* error) {
    for (ASP_GRID_STRIDE(e, num_rows * width)) {
        const long long r = e / width;
        const long long d = e - r * width;
        long long n = 0;
        long long where = empty;
        long long start, stop;
        if (asp_row_valid(valid, all_valid, r) &&
            asp_row_range(offsets, r, num_values, error, &start, &stop)) {
            T best = T();
            for (long long i = start; i < stop; ++i) {
                if (masked && !__ldg(vmask + i)) continue;
                const T x = __ldg(values + i * width + d);
                if (n == 0) {
                    best = x;
                    where = i - start;
                } else if (!asp_isnan(best) &&
                           (asp_isnan(x) || (is_max ? x > best : x < best))) {
                    best = x;
                    where = i - start;
                }
                ++n;
            }
        }
        if (want_counts && d == 0) counts[r] = n;
        out[e] = (n < min_count || n == 0) ? empty : where;
    }
}

// sorted_prod: out[r, d] = product in A (from `one`) of the non-null values of row r.
// Thread mapping: one thread per output element (r, d), grid-stride; coalesced along D.
// Memory traffic: each value read once, one write per output element.
template <typename T, typename A, typename Out, typename O>
__global__ void sorted_prod(const T* __restrict__ values, const O* __restrict__ offsets,
                            const unsigned char* __restrict__ valid, int all_valid,
                            const unsigned char* __restrict__ vmask, int masked, A one,
                            long long min_count, Out empty, long long num_rows,
                            long long width, long long num_values, Out* __restrict__ out,
                            long long* __restrict__ counts, int want_counts,
                            unsigned long long* error) {
    for (ASP_GRID_STRIDE(e, num_rows * width)) {
        const long long r = e / width;
        const long long d = e - r * width;
        A acc = one;
        long long n = 0;
        long long start, stop;
        if (asp_row_valid(valid, all_valid, r) &&
            asp_row_range(offsets, r, num_values, error, &start, &stop)) {
            for (long long i = start; i < stop; ++i) {
                if (masked && !__ldg(vmask + i)) continue;
                acc = asp_mul(acc, (A)__ldg(values + i * width + d));
                ++n;
            }
        }
        if (want_counts && d == 0) counts[r] = n;
        out[e] = n < min_count ? empty : (Out)acc;
    }
}

// sorted_logsumexp: out[r, d] = m + log(sum(exp(x - m))) in double, m the column max of
// row r (NaN-propagating); an infinite or NaN m is the result itself.
// Thread mapping: one thread per output element (r, d), grid-stride; coalesced along D.
// Memory traffic: each value read twice (max pass, then exp pass; the second mostly
// from L1/L2 for short rows), one write per output element.
template <typename T, typename Out, typename O>
__global__ void sorted_logsumexp(const T* __restrict__ values, const O* __restrict__ offsets,
                                 const unsigned char* __restrict__ valid, int all_valid,
                                 const unsigned char* __restrict__ vmask, int masked,
                                 long long min_count, Out empty, long long num_rows,
                                 long long width, long long num_values,
                                 Out* __restrict__ out, long long* __restrict__ counts,
                                 int want_counts, unsigned long long* error) {
    for (ASP_GRID_STRIDE(e, num_rows * width)) {
        const long long r = e / width;
        const long long d = e - r * width;
        double m = asp_neg_inf();
        double acc = 0.0;
        long long n = 0;
        long long start, stop;
        if (asp_row_valid(valid, all_valid, r) &&
            asp_row_range(offsets, r, num_values, error, &start, &stop)) {
            for (long long i = start; i < stop; ++i) {
                if (masked && !__ldg(vmask + i)) continue;
                m = asp_take_max((double)__ldg(values + i * width + d), m);
                ++n;
            }
            if (asp_isfinite(m)) {
                for (long long i = start; i < stop; ++i) {
                    if (masked && !__ldg(vmask + i)) continue;
                    const double x = (double)__ldg(values + i * width + d);
                    acc = asp_add(acc, asp_exp(x - m));
                }
            }
        }
        if (want_counts && d == 0) counts[r] = n;
        if (n < min_count) {
            out[e] = empty;
        } else {
            out[e] = (Out)(asp_isfinite(m) ? asp_add(m, asp_log(acc)) : m);
        }
    }
}

// ============================================================= fused gather + reduce
// gather_reduce (sparse_segment_* and embedding_bag): out[r, d] reduces
// w_i * data[indices[i], d] over the non-null ids i of bag r, mode 0 sum, 1 mean, 2 max
// (from `lowest`). The unmasked, unweighted sum adds ids four at a time as
// ((0 + a) + b) + ((0 + c) + e), like the CPU kernel, so float results are identical;
// for a float table whose CPU twin takes its vectorised path (see the launcher), the
// first `block_cols` columns sum blocks of 4 ids in T, then add each block into A, and
// the other columns add one id at a time (block_cols = 0: that path is off). Each id
// is re-checked against the table's num_table_rows rows before its row is read, each
// bag against the num_ids ids (and its weights row against the num_weights weights).
//
// Heavy-tailed bags (a bag of 2,000 ids among bags of 20) are split by elements, not
// by bags (asp_chunk_piece in _common.cuh): with `piece` > 0 a bag longer than `piece`
// ids is reduced as its first `piece` ids here, then the partials of its later pieces
// (gather_reduce_pieces, launched first: parts[k, d] and, for the counts, pcounts[k])
// are combined in order: sums by asp_add, maxima by asp_take_max. A bag of at most
// `piece` ids gives exactly the CPU's result; a longer one is a sum of piece sums
// (integers exact, floats within the re-association of the accumulator A, maxima exact).
// piece is a multiple of 4, so the four-at-a-time blocks stay aligned to the bag start.
//
// Thread mapping: one thread per output element (bag r, feature d), grid-stride. For each
// id the D threads of a bag read one table row: D consecutive addresses, coalesced.
// Memory traffic: one table-row read per id (the random-access part; hot rows hit L2),
// each id read by the D threads of its bag from cache, one write per output element;
// with pieces one partial (A) read per later piece and per element. No gathered
// [nnz, D] intermediate is materialised.

// One piece [a, b) of a bag, from the reduction's start (zero or lowest), in the CPU's
// order; *count receives the number of non-null ids.
template <typename T, typename A, typename I>
__device__ __forceinline__ A asp_gather_piece(
        const T* __restrict__ data, const I* __restrict__ indices,
        const unsigned char* __restrict__ vmask, int masked, const A* __restrict__ weights,
        int weighted, long long shift, int is_max, int plain, long long block_cols, A zero,
        A lowest, long long width, long long d, long long num_table_rows, long long a,
        long long b, unsigned long long* error, long long* count) {
    A acc = is_max ? lowest : zero;
    long long n = 0;
    long long head = a;
    long long k0, k1, k2, k3;
    if (plain && block_cols > 0) {
        // The CPU's wide-float-table path: in the first block_cols columns, blocks of 4
        // ids summed in T (from +0), each block then added into A; in the other columns
        // one id at a time (the loop below).
        for (; d < block_cols && head < b; head += 4) {
            const long long end = head + 4 < b ? head + 4 : b;
            T s = T();
            for (long long j = head; j < end; ++j) {
                if (asp_table_row(indices, j, num_table_rows, error, &k0)) {
                    s = (T)(s + __ldg(data + k0 * width + d));
                }
            }
            acc = asp_add(acc, (A)s);
        }
        n = b - a;
    } else if (plain) {
        for (; head + 4 <= b; head += 4) {
            if (!(asp_table_row(indices, head, num_table_rows, error, &k0) &&
                  asp_table_row(indices, head + 1, num_table_rows, error, &k1) &&
                  asp_table_row(indices, head + 2, num_table_rows, error, &k2) &&
                  asp_table_row(indices, head + 3, num_table_rows, error, &k3))) {
                continue;
            }
            const A x0 = (A)__ldg(data + k0 * width + d);
            const A x1 = (A)__ldg(data + k1 * width + d);
            const A x2 = (A)__ldg(data + k2 * width + d);
            const A x3 = (A)__ldg(data + k3 * width + d);
            acc = asp_add(acc, asp_add(asp_add(asp_add(zero, x0), x1),
                                       asp_add(asp_add(zero, x2), x3)));
        }
        n = b - a;
    }
    for (long long i = head; i < b; ++i) {
        if (masked && !__ldg(vmask + i)) continue;
        if (!plain) ++n;
        if (!asp_table_row(indices, i, num_table_rows, error, &k0)) continue;
        A x = (A)__ldg(data + k0 * width + d);
        if (weighted) x = asp_mul(__ldg(weights + i + shift), x);
        acc = is_max ? asp_take_max(x, acc) : asp_add(acc, x);
    }
    *count = n;
    return acc;
}

// gather_reduce_pieces: parts[k, d] (and pcounts[k], from the d == 0 thread) of the later
// piece of a bag longer than `piece` that starts in chunk k of the ids, see above.
// Thread mapping: one thread per (chunk k, feature d), grid-stride: the D threads of a
// chunk share its binary search of the offsets (log2(rows) reads from cache) and read the
// piece's table rows coalesced. Memory traffic: the later pieces' ids and rows once, one
// partial written per chunk that holds a piece start and per feature.
template <typename T, typename A, typename O, typename I>
__global__ void gather_reduce_pieces(
        const T* __restrict__ data, const I* __restrict__ indices, const O* __restrict__ offsets,
        const unsigned char* __restrict__ valid, int all_valid,
        const unsigned char* __restrict__ vmask, int masked, const A* __restrict__ weights,
        int weighted, const long long* __restrict__ woffsets, int has_woff, int mode,
        long long block_cols, A zero, A lowest, long long num_rows, long long width,
        long long num_table_rows, long long num_ids, long long num_weights, long long piece,
        long long num_chunks, A* __restrict__ parts, long long* __restrict__ pcounts,
        unsigned long long* error) {
    const int is_max = mode == 2;
    const int plain = !(masked || weighted || is_max);
    for (ASP_GRID_STRIDE(e, num_chunks * width)) {
        const long long k = e / width;
        const long long d = e - k * width;
        long long a, b, shift;
        if (!asp_row_piece(offsets, valid, all_valid, weighted, woffsets, has_woff, num_rows, k,
                           piece, num_ids, num_weights, error, &a, &b, &shift)) {
            continue;
        }
        long long n;
        parts[e] = asp_gather_piece(data, indices, vmask, masked, weights, weighted, shift,
                                    is_max, plain, block_cols, zero, lowest, width, d,
                                    num_table_rows, a, b, error, &n);
        if (d == 0) pcounts[k] = n;
    }
}

template <typename T, typename A, typename Out, typename O, typename I>
__global__ void gather_reduce(const T* __restrict__ data, const I* __restrict__ indices,
                              const O* __restrict__ offsets,
                              const unsigned char* __restrict__ valid, int all_valid,
                              const unsigned char* __restrict__ vmask, int masked,
                              const A* __restrict__ weights, int weighted,
                              const long long* __restrict__ woffsets, int has_woff, int mode,
                              long long block_cols, A zero, A lowest, long long min_count,
                              Out empty, long long num_rows, long long width,
                              long long num_table_rows, long long num_ids,
                              long long num_weights, long long piece,
                              const A* __restrict__ parts,
                              const long long* __restrict__ pcounts, Out* __restrict__ out,
                              long long* __restrict__ counts, int want_counts,
                              unsigned long long* error) {
    const int is_max = mode == 2;
    const int plain = !(masked || weighted || is_max);
    for (ASP_GRID_STRIDE(e, num_rows * width)) {
        const long long r = e / width;
        const long long d = e - r * width;
        A acc = is_max ? lowest : zero;
        long long n = 0;
        long long start, stop, shift;
        if (asp_sum_row(offsets, valid, all_valid, weighted, woffsets, has_woff, r, num_ids,
                        num_weights, error, &start, &stop, &shift)) {
            const long long end = piece > 0 && stop - start > piece ? start + piece : stop;
            acc = asp_gather_piece(data, indices, vmask, masked, weights, weighted, shift,
                                   is_max, plain, block_cols, zero, lowest, width, d,
                                   num_table_rows, start, end, error, &n);
            for (long long p = end; p < stop; p += piece) {  // the later pieces, in order
                const long long k = p / piece;
                const A x = __ldg(parts + k * width + d);
                acc = is_max ? asp_take_max(x, acc) : asp_add(acc, x);
                n += __ldg(pcounts + k);
            }
        }
        if (want_counts && d == 0) counts[r] = n;
        if (n < min_count) {
            out[e] = empty;
        } else if (mode == 1) {
            out[e] = (Out)(acc / (A)n);
        } else {
            out[e] = (Out)acc;
        }
    }
}

// ========================================================================= scatters
// scatter_add (unsorted sum / mean / weighted sum): acc[ids[i], d] += w_i * values[i, d]
// and, if want_counts, counts[ids[i]] += 1 over the non-null values, by atomics (int64
// through unsigned long long two's complement; double atomicAdd needs sm_60+). acc and
// counts start at zero; scatter_finish then writes the output. Each id is re-checked
// against [0, num_segments), under null values too (as the CPU kernel checks).
// Thread mapping: one thread per input element (i, d), grid-stride: coalesced reads of
// values along D, atomics to D consecutive addresses of one output row.
// Hot ids (Zipf: the most frequent id of 80M values holds a sixth of them) serialise on
// their accumulator's address, so the GPU variant aggregates each warp's atomics first:
// the lanes of a warp whose elements go to the same output element (__match_any_sync on
// s * D + d) hand their values to the lowest of them, which adds them in lane order and
// makes one atomic (and one count atomic of the group's size). With 1-D values and a hot
// id that divides the hot address's atomics by up to 32; with D >= 32 no two lanes of a
// warp share an element and it costs one match per element. Float sums combine in atomic
// order either way (not deterministic; integers exact). Barrier-free variant
// (ARROW_SPARSE_EMULATOR): one atomic per element, the same sums up to that order.
// Memory traffic: each value read once, at most one atomic per value element (+1 per
// value for the count).
template <typename T, typename A, typename I>
__global__ void scatter_add(const T* __restrict__ values, const I* __restrict__ ids,
                            const unsigned char* __restrict__ vmask, int masked,
                            const A* __restrict__ weights, int weighted, long long num_values,
                            long long width, long long num_segments, A* __restrict__ acc,
                            long long* __restrict__ counts, int want_counts,
                            unsigned long long* error) {
#if defined(ARROW_SPARSE_EMULATOR)
    for (ASP_GRID_STRIDE(e, num_values * width)) {
        const long long i = e / width;
        const long long d = e - i * width;
        long long s;
        if (!asp_segment_of(ids, i, num_segments, error, &s)) continue;
        if (masked && !__ldg(vmask + i)) continue;
        if (want_counts && d == 0) asp_count(counts, s);
        A x = (A)__ldg(values + e);
        if (weighted) x = asp_mul(__ldg(weights + i), x);
        asp_atomic_add(acc + s * width + d, x);
    }
#else
    const unsigned int full = 0xFFFFFFFFu;
    const int lane = (int)(threadIdx.x & 31);
    const long long total = num_values * width;
    // Warp-uniform trip count: every lane takes part in every match and shuffle.
    for (long long base = asp_thread_id() - lane; base < total; base += asp_grid_stride()) {
        const long long e = base + lane;
        bool ok = e < total;
        long long s = 0, d = 0;
        A x = A();
        if (ok) {
            const long long i = e / width;
            d = e - i * width;
            ok = asp_segment_of(ids, i, num_segments, error, &s) && !(masked && !__ldg(vmask + i));
            if (ok) {
                x = (A)__ldg(values + e);
                if (weighted) x = asp_mul(__ldg(weights + i), x);
            }
        }
        // A lane left out gets a key no other lane has (keys of elements are >= 0).
        const unsigned long long key = ok ? (unsigned long long)(s * width + d)
                                          : ~(unsigned long long)lane;
        const unsigned int peers = __match_any_sync(full, key);
        const bool leader = ok && (__ffs(peers) - 1) == lane;
        unsigned int rest = leader ? peers & (peers - 1) : 0u;  // the others, lowest first
        A sum = x;
        while (__any_sync(full, rest != 0u)) {
            const int src = rest ? __ffs(rest) - 1 : lane;
            const A y = __shfl_sync(full, x, src);
            if (rest) {
                sum = asp_add(sum, y);
                rest &= rest - 1;
            }
        }
        if (leader) {
            asp_atomic_add(acc + key, sum);
            if (want_counts && d == 0) {
                atomicAdd((unsigned long long*)(counts + s), (unsigned long long)__popc(peers));
            }
        }
    }
#endif
}

// scatter_extreme (unsorted max / min): acc[ids[i], d] = max(acc, values[i, d]) (or
// min) by atomicMax/Min (integers; U is int for 8/16-bit values, which the host widens)
// or a compare-and-swap loop applying asp_take_max / asp_take_min (floats: NaN
// propagates, -0.0 < +0.0, so the result does not depend on the atomic order), and
// counts[ids[i]] += 1. acc starts at lowest / highest, counts at zero; scatter_finish
// then writes the output. Ids are re-checked as in scatter_add.
// Thread mapping: one thread per input element (i, d), grid-stride; coalesced along D.
// Memory traffic: each value read once, at most one atomic per value element (a CAS
// retry only when another thread changed the same output in between).
template <typename T, typename U, typename I>
__global__ void scatter_extreme(const T* __restrict__ values, const I* __restrict__ ids,
                                const unsigned char* __restrict__ vmask, int masked,
                                int is_max, long long num_values, long long width,
                                long long num_segments, U* __restrict__ acc,
                                long long* __restrict__ counts, unsigned long long* error) {
    for (ASP_GRID_STRIDE(e, num_values * width)) {
        const long long i = e / width;
        const long long d = e - i * width;
        long long s;
        if (!asp_segment_of(ids, i, num_segments, error, &s)) continue;
        if (masked && !__ldg(vmask + i)) continue;
        if (d == 0) asp_count(counts, s);
        asp_atomic_extreme(acc + s * width + d, (U)__ldg(values + e), is_max);
    }
}

// scatter_finish: out[s, d] from the scatter's accumulator: `empty` where the segment
// has fewer than min_count values (counts read only if `counting`), acc / count for a
// mean, acc otherwise, converted to Out (the CPU kernel's final loop).
// Thread mapping: one thread per output element, grid-stride. Memory traffic: one read
// of acc and one write of out per element, one count read per element (cache).
template <typename A, typename Out>
__global__ void scatter_finish(const A* __restrict__ acc, const long long* __restrict__ counts,
                               int counting, int mean, long long min_count, Out empty,
                               long long num_segments, long long width,
                               Out* __restrict__ out) {
    for (ASP_GRID_STRIDE(e, num_segments * width)) {
        const long long c = counting ? __ldg(counts + e / width) : 0;
        if (c < min_count) {
            out[e] = empty;
        } else if (mean) {
            out[e] = (Out)(__ldg(acc + e) / (A)c);
        } else {
            out[e] = (Out)__ldg(acc + e);
        }
    }
}

// scatter_claim: the last position of each row index in `indices` (`last` starts at
// -1), so that scatter_assign_rows writes each row once, from its last occurrence:
// the CPU's index-order loop, deterministically, without sorting. An index outside
// [0, num_rows) is recorded and skipped.
// Thread mapping: one thread per index, grid-stride. Memory traffic: one index read and
// one atomicMax per index (scratch of 8 bytes per table row).
template <typename I>
__global__ void scatter_claim(const I* __restrict__ indices, long long num_indices,
                              long long num_rows, long long* __restrict__ last,
                              unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, num_indices)) {
        long long row;
        if (asp_table_row(indices, i, num_rows, error, &row)) atomicMax(last + row, i);
    }
}

// scatter_assign_rows: data[indices[i], d] = slices[i, d] for the LAST i of each row
// (so the last write wins, as in the CPU's index-order loop); indices outside
// [0, num_rows) are skipped (scatter_claim recorded them).
// Thread mapping: one thread per slice element (i, d), grid-stride; coalesced along D.
// Memory traffic: one read of last[row] per element (cache), one read + one write per
// element written.
template <typename T, typename I>
__global__ void scatter_assign_rows(T* __restrict__ data, const I* __restrict__ indices,
                                    const T* __restrict__ slices,
                                    const long long* __restrict__ last, long long num_indices,
                                    long long num_rows, long long width) {
    for (ASP_GRID_STRIDE(e, num_indices * width)) {
        const long long i = e / width;
        const long long row = (long long)__ldg(indices + i);
        if (row < 0 || row >= num_rows || __ldg(last + row) != i) continue;
        data[row * width + (e - i * width)] = __ldg(slices + e);
    }
}

// scatter_weighted_sum_runs: Caffe2's ScatterWeightedSumOp, whose first loop scales
// data[indices[i]] by w0 for every i and whose second loop then adds w1 * slices[i]
// into data[indices[i]] for every i. The host sorts the indices stably: `sorted` holds
// them in order and `order` their positions, so each row's occurrences form one run of
// `sorted`, in index order. The thread at the start of a run owns its row: it scales
// the row once per occurrence, then adds the run's slices in index order, each step in
// double and rounded to T (the CPU kernel's steps exactly; scaling is skipped when w0 is
// 1, as there). A run of a row outside [0, num_rows) is recorded at its first index
// position and skipped.
// Thread mapping: one thread per (sorted position p, column d), grid-stride; only the
// run starts work, so a row listed k times costs its owner k scalings and k additions.
// Memory traffic: one read + one write of data per distinct row element, one slice
// read per index element (gathered through `order`), two index reads per element.
template <typename T, typename I>
__global__ void scatter_weighted_sum_runs(T* __restrict__ data, double w0,
                                          const I* __restrict__ sorted,
                                          const long long* __restrict__ order,
                                          const T* __restrict__ slices, double w1,
                                          long long num_indices, long long num_rows,
                                          long long width, unsigned long long* error) {
    for (ASP_GRID_STRIDE(e, num_indices * width)) {
        const long long p = e / width;
        const long long d = e - p * width;
        const I row = __ldg(sorted + p);
        if (p > 0 && __ldg(sorted + p - 1) == row) continue;
        if ((long long)row < 0 || (long long)row >= num_rows) {
            ASP_RAISE(error, ASP_SEGMENT_INDEX_RANGE, __ldg(order + p));
            continue;
        }
        long long stop = p + 1;
        while (stop < num_indices && __ldg(sorted + stop) == row) ++stop;
        T* at = data + (long long)row * width + d;
        T x = *at;
        if (w0 != 1.0) {
            for (long long q = p; q < stop; ++q) x = (T)asp_mul(w0, (double)x);
        }
        for (long long q = p; q < stop; ++q) {
            const double s = (double)__ldg(slices + __ldg(order + q) * width + d);
            x = (T)asp_add((double)x, asp_mul(w1, s));
        }
        *at = x;
    }
}

// ids_to_offsets: offsets[k] = first i with ids[i] >= k (sorted ids), k = 0 .. S.
// Unsorted ids (a device check reports them) still give offsets in [0, N] that never
// decrease: the binary search's answer only grows with k.
// Thread mapping: one thread per offset k, grid-stride; binary search (log2 N reads that
// neighbouring threads share through the cache). Memory traffic: one 8-byte write per
// offset.
template <typename I>
__global__ void ids_to_offsets(const I* __restrict__ ids, long long num_ids,
                               long long num_segments, long long* __restrict__ offsets) {
    for (ASP_GRID_STRIDE(k, num_segments + 1)) {
        long long lo = 0;
        long long hi = num_ids;
        while (lo < hi) {
            const long long mid = lo + (hi - lo) / 2;
            if ((long long)__ldg(ids + mid) < k) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        offsets[k] = lo;
    }
}

// ============================================================= device-only kernels
// No CPU twin (DEVICE_ONLY in segment.py): what the host does with numpy.

// check_null_weights: records ASP_SEGMENT_WEIGHT_NULL at the first null weight
// (wvalid[i] == 0) of a valid row r (woffsets[r] .. woffsets[r + 1], clamped to the
// num_weights weights).
// Thread mapping: one thread per row, grid-stride, reading its row's validity bytes
// until the first null. Memory traffic: one byte per weight of a valid row.
template <typename O>
__global__ void check_null_weights(const O* __restrict__ woffsets,
                                   const unsigned char* __restrict__ valid, int all_valid,
                                   const unsigned char* __restrict__ wvalid, long long num_rows,
                                   long long num_weights, unsigned long long* error) {
    for (ASP_GRID_STRIDE(r, num_rows)) {
        if (!asp_row_valid(valid, all_valid, r)) continue;
        const long long start = asp_max((long long)__ldg(woffsets + r), 0LL);
        const long long stop = asp_min((long long)__ldg(woffsets + r + 1), num_weights);
        for (long long i = start; i < stop; ++i) {
            if (!__ldg(wvalid + i)) {
                ASP_RAISE(error, ASP_SEGMENT_WEIGHT_NULL, i);
                break;
            }
        }
    }
}

// gather_rows: out[i, d] = data[indices[i], d] (gather on the device); an index outside
// [0, num_rows) is recorded and its output row zeroed.
// Thread mapping: one thread per output element (i, d), grid-stride: coalesced writes,
// and reads coalesced along D within a row.
// Memory traffic: one table read and one write per output element, the index from cache.
template <typename T, typename I>
__global__ void gather_rows(const T* __restrict__ data, const I* __restrict__ indices,
                            long long num_indices, long long num_rows, long long width,
                            T* __restrict__ out, unsigned long long* error) {
    for (ASP_GRID_STRIDE(e, num_indices * width)) {
        const long long i = e / width;
        long long row;
        out[e] = asp_table_row(indices, i, num_rows, error, &row)
                     ? __ldg(data + row * width + (e - i * width))
                     : T();
    }
}
