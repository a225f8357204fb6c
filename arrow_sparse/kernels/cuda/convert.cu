// Jagged <-> padded dense conversions: CUDA twins of arrow_sparse/kernels/cpu/convert.py
// (same arguments and semantics; see that module's docstring). Layouts are C-contiguous:
// values [N, D], padded dense [P, L, D]. Offsets are int or long long (template O) and may
// start above zero. A row index (long long, -1 = padding row) maps output rows to jagged
// rows unless `identity` is set; `valid` is a uint8 row mask unless `all_valid` is set.
// Inputs are checked on the host before launch, so there is no device error buffer.

// pad_rows: out[p, j, d] = values[offsets[r] + j, d] if j < min(len(r), L) else pad, with
// r = row_index[p] (or p); a padding row (r < 0) or a null row is all pad, and so is a
// null element (elem_valid[offsets[r] + j] == 0 unless `all_elems` is set).
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
                         T* __restrict__ out) {
    const long long row_size = max_length * width;
    const long long total = num_out * row_size;
    for (ASP_GRID_STRIDE(e, total)) {
        const long long p = e / row_size;
        const long long within = e - p * row_size;  // j * width + d
        const long long r = identity ? p : __ldg(row_index + p);
        T x = pad;
        if (r >= 0 && (all_valid || __ldg(valid + r))) {
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
// r = row_index[p], or p) for j < min(len(r), L), else -1; -1 for padding and null rows.
// Thread mapping: one thread per output element e = p * L + j (grid-stride), coalesced
// writes. Memory traffic: one 8-byte write per output element; the per-row index reads
// are shared by the L threads of a row.
template <typename O>
__global__ void expand_level(const long long* __restrict__ row_index, int identity,
                             const O* __restrict__ offsets,
                             const unsigned char* __restrict__ valid, int all_valid,
                             long long num_out, long long max_length,
                             long long* __restrict__ out) {
    const long long total = num_out * max_length;
    for (ASP_GRID_STRIDE(e, total)) {
        const long long p = e / max_length;
        const long long j = e - p * max_length;
        const long long r = identity ? p : __ldg(row_index + p);
        long long child = -1;
        if (r >= 0 && (all_valid || __ldg(valid + r))) {
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
// fills them).
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
        // Largest r in [0, num_rows) with offsets[r] <= i; offsets[r + 1] > i follows.
        long long lo = 0;
        long long hi = num_rows;
        while (hi - lo > 1) {
            const long long mid = lo + (hi - lo) / 2;
            if ((long long)__ldg(offsets + mid) <= i) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
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
