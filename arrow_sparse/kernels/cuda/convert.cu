// Jagged <-> padded dense conversions: CUDA twins of arrow_sparse/kernels/cpu/convert.py
// (same arguments and semantics; see that module's docstring), and the device checks of
// offsets, lengths and segment ids that the public functions run on device inputs.
// Layouts are C-contiguous: values [N, D], padded dense [P, L, D]. Offsets are int or
// long long (template O) and may start above zero. A row index (long long, -1 = padding
// row) maps output rows to jagged rows unless `identity` is set; `valid` is a uint8 row
// mask unless `all_valid` is set.
//
// Device errors. Host inputs are checked on the host before launch. Device inputs are
// checked on the device by the check_* kernels below, which record the first violation
// in the error word (ASP_RAISE); the public function raises it (arrow_sparse.kernels.cuda.
// check_errors) at once where it synchronises anyway, else at the next check. pad_rows
// and expand_level also re-check the offsets they read, so offsets that were never
// checked (or were changed after their check) cannot make them read or write out of
// bounds: such a row is treated as padding and ASP_CONVERT_ROW_OUTSIDE is recorded at the
// position of the offset that ends it (unpad_rows stays in bounds by construction). That position is never below the one the check
// of the same offsets records, and the check's code is smaller, so when both run the
// check's message wins.

enum AspConvertError {
    ASP_CONVERT_OFFSETS_NEGATIVE = 1,  // message: offsets must be non-negative
    ASP_CONVERT_OFFSETS_DECREASING = 2,  // message: offsets must be non-decreasing
    ASP_CONVERT_OFFSETS_EXCEED = 3,  // message: offsets exceed the number of values
    ASP_CONVERT_LENGTHS_NEGATIVE = 4,  // message: lengths must be non-negative
    ASP_CONVERT_LENGTHS_TOO_LONG = 5,  // message: lengths must be <= the padded length
    ASP_CONVERT_LENGTHS_INT32 = 6,  // message: lengths sum beyond the int32 range; use dtype=np.int64
    ASP_CONVERT_LENGTHS_TOO_MANY = 7,  // message: lengths sum to more than 2**59 values
    ASP_CONVERT_LENGTHS_SUM = 8,  // message: lengths do not sum to the number of values
    ASP_CONVERT_IDS_UNSORTED = 9,  // message: segment_ids must be sorted (non-decreasing)
    ASP_CONVERT_IDS_NEGATIVE = 10,  // message: IndexError: segment_ids must be non-negative
    ASP_CONVERT_IDS_RANGE = 11,  // message: IndexError: segment_ids must be < num_segments
    ASP_CONVERT_ROW_OUTSIDE = 12,  // message: offsets address values outside the values buffer
};

// Whether row r of `offsets` (num_rows rows) addresses a range inside [0, num_values]
// (num_values < 0: no upper bound); records ASP_CONVERT_ROW_OUTSIDE at r + 1 if not.
template <typename O>
__device__ __forceinline__ bool asp_row_inside(const O* __restrict__ offsets, long long r,
                                               long long num_rows, long long num_values,
                                               unsigned long long* error) {
    if (r >= num_rows) {
        ASP_RAISE(error, ASP_CONVERT_ROW_OUTSIDE, r + 1);
        return false;
    }
    const long long start = (long long)__ldg(offsets + r);
    const long long stop = (long long)__ldg(offsets + r + 1);
    if (start < 0 || stop < start || (num_values >= 0 && stop > num_values)) {
        ASP_RAISE(error, ASP_CONVERT_ROW_OUTSIDE, r + 1);
        return false;
    }
    return true;
}

// pad_rows: out[p, j, d] = values[offsets[r] + j, d] if j < min(len(r), L) else pad, with
// r = row_index[p] (or p); a padding row (r < 0) or a null row is all pad, and so is a
// null element (elem_valid[offsets[r] + j] == 0 unless `all_elems` is set), and so is a
// row whose offsets fall outside [0, num_values] (recorded, see the top of the file).
// Thread mapping: one thread per OUTPUT element e = (p * L + j) * D + d (grid-stride), so
// consecutive threads write consecutive addresses and, inside a row, read consecutive
// values: both the D axis and the L axis are coalesced.
// Memory traffic: one write per output element (P*L*D*sizeof(T)), at most one read per
// copied value; the per-row reads of row_index/valid/offsets are shared by the L*D
// threads of a row and hit L1/L2.
template <typename T, typename O>
__global__ void pad_rows(const T* __restrict__ values, const long long* __restrict__ row_index,
                         int identity, const O* __restrict__ offsets,
                         const unsigned char* __restrict__ valid, int all_valid,
                         const unsigned char* __restrict__ elem_valid, int all_elems,
                         long long num_out, long long max_length, long long width, T pad,
                         long long num_rows, long long num_values, T* __restrict__ out,
                         unsigned long long* error) {
    const long long row_size = max_length * width;
    const long long total = num_out * row_size;
    for (ASP_GRID_STRIDE(e, total)) {
        const long long p = e / row_size;
        const long long within = e - p * row_size;  // j * width + d
        const long long r = identity ? p : __ldg(row_index + p);
        T x = pad;
        if (r >= 0 && asp_row_inside(offsets, r, num_rows, num_values, error)
                && (all_valid || __ldg(valid + r))) {
            const long long start = (long long)__ldg(offsets + r);
            const long long n = asp_min((long long)__ldg(offsets + r + 1) - start, max_length);
            if (within < n * width) {
                const long long j = within / width;
                if (all_elems || __ldg(elem_valid + start + j)) {
                    x = __ldg(values + start * width + within);
                }
            }
        }
        out[e] = x;
    }
}

// expand_level: out[p * L + j] = offsets[r] + j (the index of the j-th child of row
// r = row_index[p], or p) for j < min(len(r), L), else -1; -1 for padding and null rows
// and for rows whose offsets are out of order (recorded). The child indices are checked
// against the next level by the kernel that reads them.
// Thread mapping: one thread per output element e = p * L + j (grid-stride), coalesced
// writes. Memory traffic: one 8-byte write per output element; the per-row index reads
// are shared by the L threads of a row.
template <typename O>
__global__ void expand_level(const long long* __restrict__ row_index, int identity,
                             const O* __restrict__ offsets,
                             const unsigned char* __restrict__ valid, int all_valid,
                             long long num_out, long long max_length, long long num_rows,
                             long long* __restrict__ out, unsigned long long* error) {
    const long long total = num_out * max_length;
    for (ASP_GRID_STRIDE(e, total)) {
        const long long p = e / max_length;
        const long long j = e - p * max_length;
        const long long r = identity ? p : __ldg(row_index + p);
        long long child = -1;
        if (r >= 0 && asp_row_inside(offsets, r, num_rows, -1LL, error)
                && (all_valid || __ldg(valid + r))) {
            const long long start = (long long)__ldg(offsets + r);
            const long long n = asp_min((long long)__ldg(offsets + r + 1) - start, max_length);
            if (j < n) {
                child = start + j;
            }
        }
        out[e] = child;
    }
}

// unpad_rows: for each jagged value i in [offsets[0], offsets[num_rows]) of row r (the
// row with offsets[r] <= i < offsets[r + 1]) and j = i - offsets[r]:
// out[i, d] = dense[p, j, d] with p = dense_row_of[r] (or r), or pad if p < 0,
// p >= dense_rows or j >= L. Positions before offsets[0] are left alone (the host
// fills them). Every read stays in bounds whatever the offsets (the search keeps
// offsets[r] <= i, so j >= 0): offsets out of order give wrong values, never a fault,
// and the host has checked them before the launch.
// Thread mapping: one thread per element e = i * D + d of `out` (grid-stride over all
// out_rows * D, so the host needs no offsets[0] / offsets[-1] read-back); the row is
// found by binary search of offsets (upper bound, log2(rows) reads that neighbouring
// threads share through the cache). Consecutive threads write consecutive addresses and,
// inside a row, read consecutive dense addresses.
// Memory traffic: one write per jagged element, at most one dense read per element.
template <typename T, typename O>
__global__ void unpad_rows(const T* __restrict__ dense, const long long* __restrict__ dense_row_of,
                           int identity, const O* __restrict__ offsets, long long num_rows,
                           long long dense_rows, long long dense_len, long long width,
                           long long out_rows, T pad, T* __restrict__ out) {
    const long long total = out_rows * width;
    const long long first = (long long)__ldg(offsets);
    const long long last = (long long)__ldg(offsets + num_rows);
    for (ASP_GRID_STRIDE(e, total)) {
        const long long i = e / width;
        if (i < first || i >= last) {
            continue;
        }
        const long long d = e - i * width;
        const long long lo = asp_row_of(offsets, num_rows, i);  // offsets[lo + 1] > i
        const long long j = i - (long long)__ldg(offsets + lo);
        long long p = identity ? lo : __ldg(dense_row_of + lo);
        if (p >= dense_rows) {
            p = -1;
        }
        T x = pad;
        if (p >= 0 && j < dense_len) {
            x = __ldg(dense + (p * dense_len + j) * width + d);
        }
        out[e] = x;
    }
}

// ------------------------------------------------------------------ device input checks
// check_offsets: offsets[0] >= 0, offsets[i] >= offsets[i - 1], and offsets[i] <=
// num_values unless num_values < 0. Records the smallest bad position i.
// Thread mapping: one thread per offset i (grid-stride); reads offsets[i] and
// offsets[i - 1] (the neighbour's read comes from cache). Memory traffic: one read per
// offset, no writes unless an error is recorded.
template <typename O>
__global__ void check_offsets(const O* __restrict__ offsets, long long n, long long num_values,
                              unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, n)) {
        const long long o = (long long)__ldg(offsets + i);
        if (i == 0 && o < 0) {
            ASP_RAISE(error, ASP_CONVERT_OFFSETS_NEGATIVE, i);
        }
        if (i > 0 && o < (long long)__ldg(offsets + i - 1)) {
            ASP_RAISE(error, ASP_CONVERT_OFFSETS_DECREASING, i);
        }
        if (num_values >= 0 && o > num_values) {
            ASP_RAISE(error, ASP_CONVERT_OFFSETS_EXCEED, i);
        }
    }
}

// check_lengths: lengths[i] >= 0 and <= padded_length (unless padded_length < 0); the
// running sums ends[i + 1] (ends = [0, cumsum(lengths)] in long long, as computed on the
// device, wrapping on overflow) stay within 2**31 - 1 (to_int32) or 2**59 and do not wrap;
// the total equals `total` unless total < 0. Records the smallest bad position i.
// Thread mapping: one thread per length i (grid-stride); reads lengths[i], ends[i] and
// ends[i + 1]. Memory traffic: three reads per length (two shared with the neighbour).
template <typename L>
__global__ void check_lengths(const L* __restrict__ lengths, const long long* __restrict__ ends,
                              long long n, long long padded_length, int to_int32, long long total,
                              unsigned long long* error) {
    const long long limit = to_int32 ? 2147483647LL : (1LL << 59);
    for (ASP_GRID_STRIDE(i, n)) {
        const long long length = (long long)__ldg(lengths + i);
        if (length < 0) {
            ASP_RAISE(error, ASP_CONVERT_LENGTHS_NEGATIVE, i);
            continue;
        }
        if (padded_length >= 0 && length > padded_length) {
            ASP_RAISE(error, ASP_CONVERT_LENGTHS_TOO_LONG, i);
        }
        // Every earlier length is >= 0 (or recorded at a smaller position), so the
        // sums only grow until one exceeds the limit or wraps below its predecessor.
        const long long end = __ldg(ends + i + 1);
        if (end < __ldg(ends + i) || end > limit) {
            const int code = to_int32 ? ASP_CONVERT_LENGTHS_INT32 : ASP_CONVERT_LENGTHS_TOO_MANY;
            ASP_RAISE(error, code, i);
        } else if (total >= 0 && i == n - 1 && end != total) {
            ASP_RAISE(error, ASP_CONVERT_LENGTHS_SUM, i);
        }
    }
}

// check_segment_ids: ids[i] >= 0, ids[i] < num_segments (unless num_segments < 0) and,
// when `sorted` is set, ids[i] >= ids[i - 1]. Records the smallest bad position i (an
// unsorted id before a negative one at the same position, as the host checks).
// Thread mapping: one thread per id i (grid-stride); reads ids[i] and ids[i - 1].
// Memory traffic: one read per id (the neighbour's from cache).
template <typename I>
__global__ void check_segment_ids(const I* __restrict__ ids, long long n, long long num_segments,
                                  int sorted, unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, n)) {
        const long long id = (long long)__ldg(ids + i);
        if (sorted && i > 0 && id < (long long)__ldg(ids + i - 1)) {
            ASP_RAISE(error, ASP_CONVERT_IDS_UNSORTED, i);
        }
        if (id < 0) {
            ASP_RAISE(error, ASP_CONVERT_IDS_NEGATIVE, i);
        } else if (num_segments >= 0 && id >= num_segments) {
            ASP_RAISE(error, ASP_CONVERT_IDS_RANGE, i);
        }
    }
}
