// Sparse tensors: CUDA twins of arrow_sparse/kernels/cpu/sparse.py (SpMM/SpMV, densify,
// sums, format conversions, canonical form). The launchers (kernels/cuda/sparse.py)
// keep the CPU kernels' signatures; what the CPU does with per-thread chunks is done
// here the way a GPU does it:
//
// * conversions (COO -> CSR/CSC, CSR <-> CSC, sorting lines) are a histogram of the
//   keys (count_keys, atomicAdd), an exclusive scan of the counts (the array module's
//   cumsum) and a STABLE scatter. The stable scatter is the array module's stable
//   argsort (a CUB radix sort on CuPy; two LSD passes where the order has two keys)
//   followed by gathers, not an atomic scatter (the order of atomics is not stable).
//   The line of each sorted entry comes from expand_major (a binary search of indptr).
// * duplicates of sorted lines are summed by flagging run heads (line_run_heads),
//   compacting the flags (flatnonzero) and one thread per run adding it left to right
//   (sum_runs).
// * products that the CPU computes as an ordered scatter (dense @ CSR, CSC @ dense) run
//   as csr_spmm on the other layout (one stable conversion), so every output element is
//   summed by one lane, in the CPU's order.
//
// Compressed arrays are passed as stored: indptr (O: int or long long) may start above
// zero and its values are absolute positions in indices / values (num_entries long).
// Integer arithmetic wraps like Numba's (64-bit two's complement through unsigned long
// long, truncated to the output type). Float products are rounded on their own
// (asp_mul_rn), so an element summed by one thread is bit-identical to the CPU.
//
// Device checks: an index outside its dimension, a scatter position outside the output
// and an indptr that addresses entries outside [0, num_entries) are recorded in the error
// word and the offending entry (or line) skipped: no read or write leaves its array.

enum AspSparseError {
    ASP_SPARSE_INDEX_RANGE = 1,  // message: IndexError: indices out of range of the dimension
    ASP_SPARSE_POSITION_RANGE = 2,  // message: IndexError: positions out of range of the output
    ASP_SPARSE_ENTRIES = 3,  // message: indptr addresses entries outside the stored indices
};

// --------------------------------------------------------------------- helpers
// Accumulator of a sum of T: T for floats, unsigned long long (wrapping) for integers.
template <typename T> struct AspAcc { typedef unsigned long long type; };
template <> struct AspAcc<float> { typedef float type; };
template <> struct AspAcc<double> { typedef double type; };

// acc + v * x, the product rounded on its own (floats) or wrapping in 64 bits (integers).
__device__ __forceinline__ float asp_madd(float acc, float v, float x) {
    return acc + asp_mul_rn(v, x);
}
__device__ __forceinline__ double asp_madd(double acc, double v, double x) {
    return acc + asp_mul_rn(v, x);
}
template <typename T>
__device__ __forceinline__ unsigned long long asp_madd(unsigned long long acc, T v, T x) {
    return acc + (unsigned long long)v * (unsigned long long)x;
}

// *a += v for the slot types (S): floats, 32-bit integers, 64-bit integers (signed ones
// through unsigned: two's complement, so the bits do not depend on the order).
__device__ __forceinline__ void asp_slot_add(float* a, float v) { atomicAdd(a, v); }
__device__ __forceinline__ void asp_slot_add(double* a, double v) { atomicAdd(a, v); }
__device__ __forceinline__ void asp_slot_add(int* a, int v) {
    atomicAdd((unsigned int*)a, (unsigned int)v);
}
__device__ __forceinline__ void asp_slot_add(unsigned int* a, unsigned int v) { atomicAdd(a, v); }
__device__ __forceinline__ void asp_slot_add(unsigned long long* a, unsigned long long v) {
    atomicAdd(a, v);
}
__device__ __forceinline__ void asp_slot_add(long long* a, long long v) {
    atomicAdd((unsigned long long*)a, (unsigned long long)v);
}

// A 64-bit wrapping sum (or a float) as slot type S: the low bits for integers.
template <typename S, typename A>
__device__ __forceinline__ S asp_to_slot(A acc) { return (S)acc; }

// Whether absolute position pos (indptr[0] <= pos < indptr[rows]) starts a line.
template <typename O>
__device__ __forceinline__ bool asp_line_start(const O* __restrict__ indptr, long long rows,
                                               long long pos) {
    return (long long)__ldg(indptr + asp_row_of(indptr, rows, pos)) == pos;
}

// [first, last) = [indptr[0], indptr[rows]) when inside [0, num_entries); else records
// ASP_SPARSE_ENTRIES (at position 0 or rows, once per launch by thread 0) and returns false.
template <typename O>
__device__ __forceinline__ bool asp_entries(const O* __restrict__ indptr, long long rows,
                                            long long num_entries, long long* first,
                                            long long* last, unsigned long long* error) {
    *first = (long long)__ldg(indptr);
    *last = (long long)__ldg(indptr + rows);
    if (*first < 0 || *last < *first || *last > num_entries) {
        if (asp_thread_id() == 0) ASP_RAISE(error, ASP_SPARSE_ENTRIES, *first < 0 ? 0 : rows);
        return false;
    }
    return true;
}

// Whether line i's range [indptr[i], indptr[i + 1]) lies inside [0, num_entries);
// records ASP_SPARSE_ENTRIES at i + 1 if not (every lane of a group records the same).
template <typename O>
__device__ __forceinline__ bool asp_line_inside(const O* __restrict__ indptr, long long i,
                                                long long num_entries, long long* start,
                                                long long* stop, unsigned long long* error) {
    *start = (long long)__ldg(indptr + i);
    *stop = (long long)__ldg(indptr + i + 1);
    if (*start < 0 || *stop > num_entries) {
        ASP_RAISE(error, ASP_SPARSE_ENTRIES, i + 1);
        return false;
    }
    return true;
}

// ----------------------------------------------------------------- conversions
// count_keys: counts[k] += 1 for every key k = keys[i] (the histogram of a counting sort;
// the launcher scans it into indptr). A key outside [0, num_keys) is recorded
// (ASP_SPARSE_INDEX_RANGE at i) and not counted.
// Thread mapping: one thread per key (grid-stride), coalesced reads, one atomicAdd per
// key on its bucket (buckets of frequent keys serialise; they stay in L2).
// Memory traffic: sizeof(K) read and one 8-byte atomic per key.
template <typename K>
__global__ void count_keys(const K* __restrict__ keys, long long n, long long num_keys,
                           long long* counts, unsigned long long* error) {
    for (ASP_GRID_STRIDE(i, n)) {
        const long long k = (long long)__ldg(keys + i);
        if (k < 0 || k >= num_keys) {
            ASP_RAISE(error, ASP_SPARSE_INDEX_RANGE, i);
            continue;
        }
        atomicAdd((unsigned long long*)(counts + k), 1ULL);
    }
}

// expand_major: out[q] = the line of entry r = (identity ? q : perm[q]), counted from
// indptr[0] (r in [0, indptr[rows] - indptr[0])); positions past the entries are left
// alone, as on the CPU. With perm, the lines of the entries in a permuted (sorted) order.
// Thread mapping: one thread per output element (grid-stride): coalesced writes (and
// perm reads), the line by binary search of indptr (log2(rows) cached reads).
// Memory traffic: sizeof(T) written (plus 8 bytes of perm read) per element; the upper
// levels of the search hit the cache.
template <typename O, typename T>
__global__ void expand_major(const O* __restrict__ indptr, long long rows,
                             const long long* __restrict__ perm, int identity, long long n,
                             T* __restrict__ out) {
    const long long first = (long long)__ldg(indptr);
    const long long count = (long long)__ldg(indptr + rows) - first;
    for (ASP_GRID_STRIDE(q, n)) {
        const long long r = identity ? q : __ldg(perm + q);
        if (r < 0 || r >= count) continue;
        out[q] = (T)asp_row_of(indptr, rows, first + r);
    }
}

// line_run_heads: head[p] = 1 where relative entry p (0 <= p < n, absolute indptr[0] + p)
// starts a run of equal minor indices inside its line: p == 0, minor[p] != minor[p - 1],
// or p starts a line; else 0. `minor` is the line-sorted minor indices from indptr[0] on.
// Thread mapping: one thread per entry (grid-stride): coalesced reads of minor (p and
// p - 1, shared with the neighbour through the cache) and writes of head; the binary
// search of indptr runs only where minor[p] == minor[p - 1] (duplicates are rare).
// Memory traffic: sizeof(M) read and one byte written per entry.
template <typename O, typename M>
__global__ void line_run_heads(const O* __restrict__ indptr, long long rows,
                               const M* __restrict__ minor, long long n,
                               unsigned char* __restrict__ head) {
    const long long first = (long long)__ldg(indptr);
    for (ASP_GRID_STRIDE(p, n)) {
        head[p] = p == 0 || __ldg(minor + p) != __ldg(minor + p - 1) ||
                  asp_line_start(indptr, rows, first + p);
    }
}

// sum_runs: run r = [starts[r], starts[r + 1]) (the last one ends at n) becomes
// out_minor[r] = minor[starts[r]] and out_values[r] = the sum of its values, added left
// to right in T's accumulator, exactly like the CPU kernel (bit-identical floats).
// Thread mapping: one thread per run (grid-stride); runs are short (the duplicates of
// one coordinate), so neighbouring threads read neighbouring entries.
// Memory traffic: every entry's value read once, the run's first minor index read and
// (sizeof(M) + sizeof(T)) written per run, 8-16 bytes of starts per run.
template <typename M, typename T>
__global__ void sum_runs(const long long* __restrict__ starts, long long num_runs, long long n,
                         const M* __restrict__ minor, const T* __restrict__ values,
                         M* __restrict__ out_minor, T* __restrict__ out_values) {
    typedef typename AspAcc<T>::type A;
    for (ASP_GRID_STRIDE(r, num_runs)) {
        const long long start = __ldg(starts + r);
        const long long stop = r + 1 < num_runs ? __ldg(starts + r + 1) : n;
        A acc = (A)__ldg(values + start);
        for (long long p = start + 1; p < stop; ++p) acc = acc + (A)__ldg(values + p);
        out_minor[r] = __ldg(minor + start);
        out_values[r] = (T)acc;
    }
}

// ----------------------------------------------------------------------- checks
// lex_order2: flags[0] = 1 if some pair (first[p], second[p]) is below its predecessor,
// flags[1] = 1 if some pair equals its predecessor (the launcher turns them into the CPU
// kernel's (sorted, strictly sorted)).
// Thread mapping: one thread per adjacent pair (grid-stride), coalesced reads; a flag is
// written (atomicOr) only by a thread that finds it still clear.
// Memory traffic: both key arrays read once (the neighbour's element from cache).
template <typename K>
__global__ void lex_order2(const K* __restrict__ first, const K* __restrict__ second,
                           long long n, unsigned int* flags) {
    for (ASP_GRID_STRIDE(q, n - 1)) {
        const long long p = q + 1;
        const K a = __ldg(first + p);
        const K a0 = __ldg(first + p - 1);
        int which = -1;
        if (a < a0) {
            which = 0;
        } else if (a == a0) {
            const K b = __ldg(second + p);
            const K b0 = __ldg(second + p - 1);
            which = b < b0 ? 0 : b == b0 ? 1 : -1;
        }
        if (which >= 0 && flags[which] == 0u) atomicOr(flags + which, 1u);
    }
}

// lines_strictly_increasing: flag[0] = 1 if some line has indices[p] <= indices[p - 1]
// for two of its entries p - 1, p.
// Thread mapping: one thread per entry p in (indptr[0], indptr[rows]) (grid-stride over
// the num_entries bound, so the host reads nothing): coalesced reads of indices[p - 1]
// and indices[p]; only a pair out of order pays the binary search telling whether p
// starts a line (then the pair does not count).
// Memory traffic: the addressed indices read once (the neighbour's from cache).
template <typename O, typename I>
__global__ void lines_strictly_increasing(const O* __restrict__ indptr, long long rows,
                                          const I* __restrict__ indices, long long num_entries,
                                          unsigned int* flag, unsigned long long* error) {
    long long first, last;
    if (!asp_entries(indptr, rows, num_entries, &first, &last, error)) return;
    for (ASP_GRID_STRIDE(q, last - first - 1)) {
        const long long p = first + q + 1;
        if (__ldg(indices + p) <= __ldg(indices + p - 1) && !asp_line_start(indptr, rows, p) &&
            flag[0] == 0u) {
            atomicOr(flag, 1u);
        }
    }
}

// check_index_range: a device check with no CPU twin (the host checks with numpy): records
// ASP_SPARSE_INDEX_RANGE at the first position p whose index lies outside [0, bound), over
// [0, n) (whole) or over [range[0], range[1]) clamped to [0, n): the addressed entries of
// a compressed matrix or a CSF level, whose pointers the host has not read.
// Thread mapping: one thread per position of [0, n) (grid-stride; positions outside the
// range are skipped): coalesced reads of the indices, the two range bounds from cache.
// Memory traffic: sizeof(I) per addressed index.
template <typename I>
__global__ void check_index_range(const long long* __restrict__ range, int whole,
                                  const I* __restrict__ indices, long long n, long long bound,
                                  unsigned long long* error) {
    const long long first = whole ? 0 : asp_max(__ldg(range), 0LL);
    const long long last = whole ? n : asp_min(__ldg(range + 1), n);
    for (ASP_GRID_STRIDE(p, n)) {
        if (p < first || p >= last) continue;
        const long long k = (long long)__ldg(indices + p);
        if (k < 0 || k >= bound) ASP_RAISE(error, ASP_SPARSE_INDEX_RANGE, p);
    }
}

// ------------------------------------------------------------------------ products
// csr_spmm: out[i, j] += sum over p in [indptr[i], indptr[i + 1]) of values[p] *
// dense[indices[p], j], in p order; with skip_zero, terms whose dense[indices[p], j] is 0
// are skipped (dense @ CSR's `if d != 0`, run on the transposed layout).
// Thread mapping: a group of `lanes` threads (a power of two <= 32: the launcher picks
// the smallest covering the width) per (row, block of `lanes` columns); lane l owns
// column j = block * lanes + l and walks the row's entries in order: indices[p] and
// values[p] are one broadcast read per group, dense[indices[p], j..] a coalesced read of
// one dense row. Each out element is summed by one lane, in the CPU's order: no atomics,
// bit-identical floats.
// Memory traffic: per row and column block, nnz(row) * (sizeof(I) + sizeof(T)) broadcast
// bytes plus nnz(row) * lanes * sizeof(T) dense bytes; out read and written once.
// Device checks: a line outside the entries (ASP_SPARSE_ENTRIES at i + 1, line skipped),
// a column index outside the dense rows (ASP_SPARSE_INDEX_RANGE at p, term skipped).
template <typename T, typename O, typename I>
__global__ void csr_spmm(const O* __restrict__ indptr, const I* __restrict__ indices,
                         const T* __restrict__ values, long long num_entries,
                         const T* __restrict__ dense, long long dense_rows, long long width,
                         long long rows, int lanes, int skip_zero, T* __restrict__ out,
                         unsigned long long* error) {
    typedef typename AspAcc<T>::type A;
    const long long blocks = (width + lanes - 1) / lanes;
    const long long groups = rows * blocks;
    const long long lane = asp_thread_id() % lanes;
    for (long long g = asp_thread_id() / lanes; g < groups; g += asp_grid_stride() / lanes) {
        const long long i = g / blocks;
        const long long j = (g - i * blocks) * lanes + lane;
        long long start, stop;
        if (j >= width || !asp_line_inside(indptr, i, num_entries, &start, &stop, error)) {
            continue;
        }
        A acc = (A)out[i * width + j];
        for (long long p = start; p < stop; ++p) {
            const long long col = (long long)__ldg(indices + p);
            if (col < 0 || col >= dense_rows) {
                ASP_RAISE(error, ASP_SPARSE_INDEX_RANGE, p);
                continue;
            }
            const T x = __ldg(dense + col * width + j);
            if (skip_zero && x == (T)0) continue;
            acc = asp_madd(acc, __ldg(values + p), x);
        }
        out[i * width + j] = (T)acc;
    }
}

// csr_spmv: out[i] += sum over row i's entries p of values[p] * vec[indices[p]].
// Thread mapping: one 32-lane group per row (grid-stride over rows); lane l takes the
// entries start + l, start + l + 32, ... (consecutive lanes read consecutive indices and
// values: coalesced; vec is gathered through the cache) and adds its partial sum to the
// row's slot with one atomic (lanes without entries add nothing). Slot S: T, or int /
// unsigned int for 8- and 16-bit T (a temporary of the launcher).
// Numerics: integers are exact (64-bit wrapping partials, truncated); float partials
// combine in atomic order: the CPU's left-to-right sum re-associated (at most 32 terms).
// Memory traffic: sizeof(I) + sizeof(T) coalesced plus one gathered sizeof(T) per
// entry, at most 32 atomics per row.
// Device checks: as csr_spmm (indices against the vector's length).
template <typename T, typename S, typename O, typename I>
__global__ void csr_spmv(const O* __restrict__ indptr, const I* __restrict__ indices,
                         const T* __restrict__ values, long long num_entries,
                         const T* __restrict__ vec, long long vec_len, long long rows,
                         S* out, unsigned long long* error) {
    typedef typename AspAcc<T>::type A;
    const long long lane = asp_thread_id() % 32;
    for (long long i = asp_thread_id() / 32; i < rows; i += asp_grid_stride() / 32) {
        long long start, stop;
        if (!asp_line_inside(indptr, i, num_entries, &start, &stop, error)) continue;
        if (start + lane >= stop) continue;
        A acc = (A)0;
        for (long long p = start + lane; p < stop; p += 32) {
            const long long col = (long long)__ldg(indices + p);
            if (col < 0 || col >= vec_len) {
                ASP_RAISE(error, ASP_SPARSE_INDEX_RANGE, p);
                continue;
            }
            acc = asp_madd(acc, __ldg(values + p), __ldg(vec + col));
        }
        asp_slot_add(out + i, asp_to_slot<S>(acc));
    }
}

// major_sums: out[i] += sum of values[indptr[i]:indptr[i + 1]] (T: the sum dtypes int64,
// uint64, float32, float64; out is T).
// Thread mapping and numerics: as csr_spmv (a 32-lane group per line, strided lane
// partials, one atomic per lane with entries). Memory traffic: sizeof(T) coalesced per
// entry, at most 32 atomics per line.
template <typename T, typename O>
__global__ void major_sums(const O* __restrict__ indptr, const T* __restrict__ values,
                           long long num_entries, long long rows, T* out,
                           unsigned long long* error) {
    typedef typename AspAcc<T>::type A;
    const long long lane = asp_thread_id() % 32;
    for (long long i = asp_thread_id() / 32; i < rows; i += asp_grid_stride() / 32) {
        long long start, stop;
        if (!asp_line_inside(indptr, i, num_entries, &start, &stop, error)) continue;
        if (start + lane >= stop) continue;
        A acc = (A)0;
        for (long long p = start + lane; p < stop; p += 32) acc = acc + (A)__ldg(values + p);
        asp_slot_add(out + i, asp_to_slot<T>(acc));
    }
}

// --------------------------------------------------------------------- scatters
// compressed_to_dense: add entry p of line i into out[i, indices[p]] (CSR) or
// out[indices[p], i] (CSC, `transposed`); out is [dim0, dim1] in slot type S (T, or int /
// unsigned int for 8- and 16-bit T).
// Thread mapping: one thread per entry (grid-stride over the num_entries bound, entries
// outside [indptr[0], indptr[rows]) skipped, so the host reads nothing): coalesced reads
// of indices and values, the line by binary search of indptr, one atomic add into out.
// Entries without duplicates add to distinct cells (exact); repeated coordinates add in
// atomic order (integers exact, floats re-associated).
// Memory traffic: sizeof(I) + sizeof(T) coalesced per entry, one scattered atomic into
// out per entry (out itself is zeroed or copied by the caller).
// Device checks: entries outside [0, num_entries) (ASP_SPARSE_ENTRIES), an index outside
// the minor dimension (ASP_SPARSE_INDEX_RANGE at p).
template <typename T, typename S, typename O, typename I>
__global__ void compressed_to_dense(const O* __restrict__ indptr, long long rows,
                                    const I* __restrict__ indices, const T* __restrict__ values,
                                    long long num_entries, int transposed, long long dim0,
                                    long long dim1, S* out, unsigned long long* error) {
    long long first, last;
    if (!asp_entries(indptr, rows, num_entries, &first, &last, error)) return;
    const long long minor_dim = transposed ? dim0 : dim1;
    for (ASP_GRID_STRIDE(q, last - first)) {
        const long long p = first + q;
        const long long k = (long long)__ldg(indices + p);
        if (k < 0 || k >= minor_dim) {
            ASP_RAISE(error, ASP_SPARSE_INDEX_RANGE, p);
            continue;
        }
        const long long i = asp_row_of(indptr, rows, p);
        const long long cell = transposed ? k * dim1 + i : i * dim1 + k;
        asp_slot_add(out + cell, (S)__ldg(values + p));
    }
}

// scatter_add: out[positions[p]] += values[p] (out in slot type S, as above).
// Thread mapping: one thread per entry (grid-stride), coalesced reads, one atomic add.
// Memory traffic: sizeof(P) + sizeof(T) read and one scattered atomic per entry.
// Distinct positions are exact; repeated ones add in atomic order (floats re-associated).
// Device check: a position outside [0, size) (ASP_SPARSE_POSITION_RANGE at p).
template <typename T, typename S, typename P>
__global__ void scatter_add(S* out, long long size, const P* __restrict__ positions,
                            const T* __restrict__ values, long long n,
                            unsigned long long* error) {
    for (ASP_GRID_STRIDE(p, n)) {
        const long long k = (long long)__ldg(positions + p);
        if (k < 0 || k >= size) {
            ASP_RAISE(error, ASP_SPARSE_POSITION_RANGE, p);
            continue;
        }
        asp_slot_add(out + k, (S)__ldg(values + p));
    }
}
