"""Tests of the sparse formats: construction, conversions, canonical form, operators.

Dense numpy arrays (and scipy where it has the operation) are the oracles. The worked
examples are the Compressed Sparse Fibers post's: its 4x6 matrix and its 4-d tensor
(1-based coordinates kept, so the shape is ``(3, 3, 3, 4)``). Tests taking ``backend``
also run with the CUDA kernels on the emulator and on device arrays of the stand-in
CuPy (``tests/conftest.py``): tensors are built on the backend's device and every
result is checked to be there before it is compared.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseError
from arrow_sparse.sparse import SparseTensor

from .conftest import from_backend, on_device, to_backend

# The post's 4x6 matrix and its COO table / CSR arrays.
POST_MATRIX = np.array([[10, 20, 0, 0, 0, 0],
                        [0, 30, 0, 40, 0, 0],
                        [0, 0, 50, 60, 70, 0],
                        [0, 0, 0, 0, 0, 80]])
POST_ROWS = [0, 0, 1, 1, 2, 2, 2, 3]
POST_COLS = [0, 1, 1, 3, 2, 3, 4, 5]
POST_VALUES = [10, 20, 30, 40, 50, 60, 70, 80]
POST_INDPTR = [0, 2, 4, 7, 8]

# The post's 4-d tensor: columns i, j, k, l and the values 1..8 (l is not sorted at i = 2).
POST_COORDS = np.array([[1, 1, 1, 1, 1, 2, 2, 2],
                        [1, 1, 2, 2, 2, 2, 2, 2],
                        [1, 1, 1, 1, 2, 2, 2, 2],
                        [2, 3, 1, 3, 1, 1, 3, 2]])
POST_TENSOR_VALUES = np.arange(1.0, 9.0)
POST_SHAPE = (3, 3, 3, 4)

DTYPES = [np.float32, np.float64, np.int32, np.int64]
FORMATS = ["coo", "csr", "csc", "csf"]


def address(arr: np.ndarray) -> int:
    return int(arr.__array_interface__["data"][0])


def post_tensor() -> np.ndarray:
    dense = np.zeros(POST_SHAPE)
    dense[tuple(POST_COORDS)] = POST_TENSOR_VALUES
    return dense


def random_dense(shape: tuple[int, ...], dtype: Any, density: float = 0.3,
                 seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.integers(-5, 6, size=shape).astype(dtype)
    return np.where(rng.random(shape) < density, values, 0).astype(dtype)


def make(fmt: str, dense: np.ndarray, axis_order: Any = None, backend: str = "cpu") -> Any:
    """``fmt`` of ``dense``, built from it on the backend's device."""
    arr = to_backend(dense, backend)
    if fmt == "coo":
        return asp.SparseCOO.from_dense(arr)
    if fmt == "csr":
        return asp.SparseCSR.from_dense(arr)
    if fmt == "csc":
        return asp.SparseCSC.from_dense(arr)
    return asp.SparseCSF.from_dense(arr, axis_order)


def on(x: Any, backend: str) -> Any:
    """A tensor (or an array) moved to the backend's device."""
    if isinstance(x, SparseTensor):
        return x.to_device("cuda") if on_device(backend) else x
    return to_backend(x, backend)


def host(x: Any, backend: str) -> Any:
    """A result on the host, after checking it came back on the backend's device."""
    if isinstance(x, SparseTensor):
        assert (x.device != "cpu") == on_device(backend), x.device
        return x.to_device("cpu")
    return from_backend(x, backend)


def convert(x: SparseTensor, fmt: str, axis_order: Any = None) -> Any:
    return x.to_csf(axis_order) if fmt == "csf" else getattr(x, f"to_{fmt}")()


def assert_dense_equal(x: SparseTensor, expected: np.ndarray, backend: str = "cpu") -> None:
    got = host(x.to_dense(), backend)
    assert got.shape == expected.shape
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, expected)


# ------------------------------------------------------------------ worked examples
def test_post_matrix_coo_table_and_csr_arrays() -> None:
    coo = asp.SparseCOO.from_dense(POST_MATRIX)
    assert coo.indices.tolist() == [POST_ROWS, POST_COLS]
    assert coo.values.tolist() == POST_VALUES
    csr = asp.SparseCSR.from_dense(POST_MATRIX)
    assert csr.values.tolist() == POST_VALUES
    assert csr.indices.tolist() == POST_COLS
    assert csr.indptr.tolist() == POST_INDPTR
    assert coo.to_csr().indptr.tolist() == POST_INDPTR
    # "to read the third row ... row_indptr[2] = 4 and row_indptr[3] = 7"
    third = csr[2:3]
    assert third.nnz == 3
    assert third.to_coo().values.tolist() == [50, 60, 70]


def test_post_4d_tensor_csr_of_first_dimension() -> None:
    # The post's "CSR" of the 4-d tensor compresses i and keeps j, k, l per entry:
    # i indptr = [0, 0, 5, 8]. As a 2-d CSR, (j, k, l) flatten into one column id.
    i, j, k, ll = POST_COORDS
    columns = np.ravel_multi_index((j, k, ll), POST_SHAPE[1:])
    csr = asp.SparseCSR([0, 0, 5, 8], columns, POST_TENSOR_VALUES, (3, 36))
    np.testing.assert_array_equal(csr.to_dense().reshape(POST_SHAPE), post_tensor())
    assert not csr.is_canonical  # l = 1, 3, 2 at i = 2
    coo2 = asp.SparseCOO(np.stack([i, columns]), POST_TENSOR_VALUES, (3, 36))
    assert coo2.to_csr().indptr.tolist() == [0, 0, 5, 8]
    assert csr.canonical().values.tolist() == [1, 2, 3, 4, 5, 6, 8, 7]


def test_post_4d_tensor_csf_levels() -> None:
    coo = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE)
    assert not coo.is_canonical
    csf = coo.to_csf()
    assert [p.tolist() for p in csf.indptr] == [[0, 2, 3], [0, 1, 3, 4], [0, 2, 4, 5, 8]]
    assert [i.tolist() for i in csf.indices] == [[1, 2], [1, 2, 2], [1, 1, 2, 2],
                                                 [2, 3, 1, 3, 1, 1, 2, 3]]
    assert csf.values.tolist() == [1, 2, 3, 4, 5, 6, 8, 7]
    assert csf.is_canonical
    np.testing.assert_array_equal(csf.to_dense(), post_tensor())


def test_post_4d_tensor_fibres_are_the_posts_subtensors() -> None:
    csf = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE).to_csf()
    first, second = csf[1].to_coo(), csf[2].to_coo()
    # The i = 1 table (j, k, l, value) and the i = 2 table (sorted by l).
    assert first.indices.T.tolist() == [[1, 1, 2], [1, 1, 3], [2, 1, 1], [2, 1, 3], [2, 2, 1]]
    assert first.values.tolist() == [1, 2, 3, 4, 5]
    assert second.indices.T.tolist() == [[2, 2, 1], [2, 2, 2], [2, 2, 3]]
    assert second.values.tolist() == [6, 8, 7]
    assert csf[0].nnz == 0
    assert csf[1].values is csf.values  # sub-fibres copy nothing


def test_post_4d_tensor_every_axis_order() -> None:
    dense = post_tensor()
    coo = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE)
    for order in itertools.permutations(range(4)):
        csf = coo.to_csf(order)
        assert csf.axis_order == order
        assert csf.is_canonical
        assert len(csf.indices[0]) == len(np.unique(POST_COORDS[order[0]]))
        np.testing.assert_array_equal(csf.to_dense(), dense)
        np.testing.assert_array_equal(csf.to_coo().to_dense(), dense)
        np.testing.assert_array_equal(asp.SparseCSF.from_dense(dense, order).to_dense(), dense)


# --------------------------------------------------------------------- conversions
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("src", FORMATS)
@pytest.mark.parametrize("dst", FORMATS)
def test_conversion_every_pair_2d(src: str, dst: str, dtype: Any, backend: str) -> None:
    dense = random_dense((5, 7), dtype)
    dense[2] = 0  # an empty row
    dense[:, 4] = 0  # an empty column
    for src_order in ([(0, 1), (1, 0)] if src == "csf" else [None]):
        x = make(src, dense, src_order, backend)
        for dst_order in ([None, (0, 1), (1, 0)] if dst == "csf" else [None]):
            y = convert(x, dst, dst_order)
            assert y.format == dst
            assert y.dtype == np.dtype(dtype)
            assert_dense_equal(y, dense, backend)
            # COO keeps the source's stored order (column-major from CSC).
            row_major = src in ("coo", "csr") or src_order == (0, 1)
            assert y.is_canonical == (dst != "coo" or row_major)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(4,), (3, 4, 5), (2, 3, 1, 4), (0, 3), (2, 0, 3)])
def test_conversion_nd_coo_csf(shape: tuple[int, ...], dtype: Any, backend: str) -> None:
    dense = random_dense(shape, dtype, seed=len(shape))
    coo = make("coo", dense, backend=backend)
    assert_dense_equal(coo, dense, backend)
    for order in itertools.permutations(range(len(shape))):
        csf = coo.to_csf(order)
        assert_dense_equal(csf, dense, backend)
        assert_dense_equal(make("csf", dense, order, backend), dense, backend)
        assert_dense_equal(csf.to_csf(tuple(reversed(order))), dense, backend)
        assert host(csf.to_coo().canonical(), backend).indices.tolist() == \
            host(coo, backend).indices.tolist()


def test_conversions_keep_duplicates_and_canonical_sums_them(backend: str) -> None:
    rows, cols = [1, 0, 1, 1, 0], [2, 0, 2, 0, 0]
    coo = on(asp.SparseCOO([rows, cols], np.array([1, 2, 3, 4, 5]), (2, 3)), backend)
    dense = np.zeros((2, 3), dtype=np.int64)
    np.add.at(dense, (rows, cols), [1, 2, 3, 4, 5])
    assert_dense_equal(coo, dense, backend)
    for fmt in FORMATS:
        y = convert(coo, fmt)
        assert y.nnz == 5
        assert not y.is_canonical
        assert_dense_equal(y, dense, backend)
        c = y.canonical()
        assert c.is_canonical
        assert c.nnz == 3
        assert_dense_equal(c, dense, backend)
        assert c.canonical() is c
        assert_dense_equal(y.sum_duplicates(), dense, backend)
    assert host(coo.canonical(), backend).indices.tolist() == [[0, 1, 1], [0, 0, 2]]
    assert host(coo.canonical(), backend).values.tolist() == [7, 4, 4]
    three = on(asp.SparseCOO([[1, 0, 1, 1], [0, 0, 0, 2], [3, 1, 3, 3]],
                             np.array([True, False, False, True]), (2, 3, 4)), backend)
    got = host(three.canonical(), backend)
    assert got.indices.tolist() == [[0, 1, 1], [0, 0, 2], [1, 3, 3]]
    assert got.values.tolist() == [False, True, True]  # logical or of each run


def test_conversions_are_stable_for_duplicates(backend: str) -> None:
    # Repeated coordinates keep their input order, so sums are deterministic.
    coo = on(asp.SparseCOO([[1, 0, 1]], np.array([0.1, 5.0, 0.2]), (2,)), backend)
    assert host(coo.to_csf(), backend).values.tolist() == [5.0, 0.1, 0.2]
    pairs = on(asp.SparseCOO([[1, 0, 1], [2, 0, 2]], np.array([0.1, 5.0, 0.2]), (2, 3)), backend)
    for fmt in ("csr", "csc", "csf"):
        assert host(convert(pairs, fmt), backend).values.tolist() == [5.0, 0.1, 0.2]


def test_from_dense_counts_nan_as_stored(backend: str) -> None:
    dense = np.array([[0.0, np.nan], [1.0, 0.0]])
    for fmt in FORMATS:
        x = make(fmt, dense, backend=backend)
        assert x.nnz == 2
        np.testing.assert_array_equal(host(x.to_dense(), backend), dense)


def test_sorted_coo_converts_without_copying() -> None:
    coo = asp.SparseCOO.from_dense(POST_MATRIX)
    csr = coo.to_csr()
    assert np.shares_memory(csr.indices, coo.indices)
    assert csr.values is coo.values
    csf = coo.to_csf()
    assert csf.values is coo.values


def test_csr_csf_share_leaf_buffers() -> None:
    csr = asp.SparseCSR.from_dense(POST_MATRIX)
    csf = csr.to_csf()
    assert csf.indices[1] is csr.indices and csf.values is csr.values
    assert csf.indptr[0] is csr.indptr  # no empty row
    back = csf.to_csr()
    assert back.indices is csr.indices and back.values is csr.values
    np.testing.assert_array_equal(back.indptr, csr.indptr)
    csc = asp.SparseCSC.from_dense(POST_MATRIX)
    csf_t = csc.to_csf((1, 0))
    assert csf_t.indices[1] is csc.indices
    assert csf_t.to_csc().values is csc.values


def test_csr_with_empty_rows_to_csf_lists_nonempty_rows(backend: str) -> None:
    csr = on(asp.SparseCSR([0, 2, 2, 3], [0, 1, 1], np.array([1, 2, 3]), (3, 2)), backend)
    csf = csr.to_csf()
    assert csf.is_canonical
    csf = host(csf, backend)
    assert csf.indices[0].tolist() == [0, 2]
    assert csf.indptr[0].tolist() == [0, 2, 3]


def test_csr_to_csc_is_scipy_tocsc() -> None:
    scipy_sparse = pytest.importorskip("scipy.sparse")
    m = scipy_sparse.random_array((40, 30), density=0.2, format="csr",
                                  rng=np.random.default_rng(3))
    ours = asp.SparseCSR.from_scipy(m).to_csc()
    ref = m.tocsc()
    ref.sort_indices()
    np.testing.assert_array_equal(ours.indptr, ref.indptr)
    np.testing.assert_array_equal(ours.indices, ref.indices)
    np.testing.assert_array_equal(ours.values, ref.data)


def test_empty_and_all_zero_tensors(backend: str) -> None:
    for shape in [(0,), (3,), (0, 0), (2, 3), (2, 0, 4)]:
        dense = np.zeros(shape)
        for fmt in FORMATS if len(shape) == 2 else ["coo", "csf"]:
            x = make(fmt, dense, backend=backend)
            assert x.nnz == 0
            assert_dense_equal(x, dense, backend)
            for dst in FORMATS if len(shape) == 2 else ["coo", "csf"]:
                assert_dense_equal(convert(x, dst), dense, backend)
            assert host(x.sum(), backend) == 0


def test_from_methods_match_to_methods() -> None:
    csr = asp.SparseCSR.from_dense(POST_MATRIX)
    coo, csc, csf = csr.to_coo(), csr.to_csc(), csr.to_csf()
    for cls, fmt in [(asp.SparseCOO, "coo"), (asp.SparseCSR, "csr"), (asp.SparseCSC, "csc"),
                     (asp.SparseCSF, "csf")]:
        for name, src in [("coo", coo), ("csr", csr), ("csc", csc), ("csf", csf)]:
            y = getattr(cls, f"from_{name}")(src)
            assert y.format == fmt
            assert_dense_equal(y, POST_MATRIX)
    with pytest.raises(TypeError,
                       match=r"^SparseCSR.from_coo: expected a SparseCOO, got SparseCSC"):
        asp.SparseCSR.from_coo(csc)
    with pytest.raises(TypeError, match=r"^SparseCOO.from_csf: expected a SparseCSF, got ndarray"):
        asp.SparseCOO.from_csf(POST_MATRIX)  # type: ignore[arg-type]


def test_conversion_of_non_2d_to_matrix_raises() -> None:
    coo = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE)
    with pytest.raises(ValueError, match=r"^SparseCOO.to_csr: needs a 2-d tensor, got shape"):
        coo.to_csr()
    with pytest.raises(ValueError, match=r"^SparseCOO.to_csc: needs a 2-d tensor"):
        coo.to_csc()
    with pytest.raises(ValueError, match=r"^SparseCSF.to_csr: needs a 2-d tensor"):
        coo.to_csf().to_csr()
    with pytest.raises(ValueError, match=r"^SparseCSF.to_csc: needs a 2-d tensor"):
        coo.to_csf().to_csc()


def test_long_unsorted_rows_sort_stably() -> None:
    # Lines longer than the insertion-sort cutoff take the merge-sort path.
    rng = np.random.default_rng(8)
    rows = np.concatenate([np.zeros(200, dtype=np.int64), rng.integers(0, 4, 50)])
    cols = rng.integers(0, 60, len(rows))
    values = np.arange(len(rows), dtype=np.float64)
    coo = asp.SparseCOO([rows, cols], values, (4, 60))
    dense = np.zeros((4, 60))
    np.add.at(dense, (rows, cols), values)
    for m in [coo.to_csr(), coo.to_csc()]:
        np.testing.assert_array_equal(m.to_dense(), dense)
        ptr, idx, val = m.indptr, m.indices, m.values
        for line in range(len(ptr) - 1):
            seg = slice(ptr[line], ptr[line + 1])
            order = np.lexsort((val[seg], idx[seg]))  # stable: equal ids keep input order
            np.testing.assert_array_equal(order, np.arange(len(order)))
    np.testing.assert_array_equal(coo.canonical().to_dense(), dense)


def test_wide_dimensions_sort_with_argsort() -> None:
    # A dimension far wider than nnz takes the argsort pass instead of a counting sort.
    shape = (3, 2**40)
    coo = asp.SparseCOO([[2, 0, 2, 0], [5, 2**39, 1, 7]], np.array([1, 2, 3, 4]), shape)
    csr = coo.to_csr()
    assert csr.indices.tolist() == [7, 2**39, 1, 5]
    assert csr.indptr.tolist() == [0, 2, 2, 4]
    huge = (2**40, 2**40, 2**40)  # the linear index overflows int64
    c3 = asp.SparseCOO([[1, 0], [0, 5], [3, 3]], np.array([1.0, 2.0]), huge).canonical()
    assert c3.indices.tolist() == [[0, 1], [5, 0], [3, 3]]
    assert c3.to_csf((2, 1, 0)).indices[1].tolist() == [0, 5]


def _lines_sorted_stably(ptr: np.ndarray, idx: np.ndarray, order: np.ndarray) -> bool:
    """Every line's indices non-decreasing, equal ones in input order (``order``)."""
    line = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    return bool((np.lexsort((order, idx, line)) == np.arange(len(idx))).all())


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_large_conversions_match_scipy(threads: int, index_dtype: Any) -> None:
    # big enough for the chunked (parallel) counting sort and line sort; empty rows,
    # duplicates and a few lines longer than the rank-sort cutoff
    numba = pytest.importorskip("numba")
    scipy_sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(16)
    n, shape = 300_000, (40_000, 7_000)
    rows = np.concatenate([rng.integers(0, shape[0] // 2, n - 400), np.full(400, 7)])
    cols = rng.integers(0, shape[1], n)
    order = rng.permutation(n)
    rows, cols = rows[order].astype(index_dtype), cols[order].astype(index_dtype)
    position = np.arange(n, dtype=np.float64)  # each entry's input position
    coo = asp.SparseCOO([rows, cols], position, shape)
    ref = scipy_sparse.coo_array((position, (rows, cols)), shape=shape)
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        csr, csc = coo.to_csr(), coo.to_csc()
        assert csr.indices.dtype == csc.indices.dtype == index_dtype
        assert _lines_sorted_stably(csr.indptr, csr.indices, csr.values)
        assert _lines_sorted_stably(csc.indptr, csc.indices, csc.values)
        for ours, theirs in [(csr.canonical(), ref.tocsr()), (csc.canonical(), ref.tocsc()),
                             (coo.canonical().to_csr(), ref.tocsr()),
                             (csr.to_csc().canonical(), ref.tocsc()),
                             (csc.to_csr().canonical(), ref.tocsr())]:
            theirs.sort_indices()
            np.testing.assert_array_equal(ours.indptr, theirs.indptr)
            np.testing.assert_array_equal(ours.indices, theirs.indices)
            np.testing.assert_allclose(ours.values, theirs.data)
        back = csr.to_coo()
        assert back.indices.dtype == index_dtype
        np.testing.assert_array_equal(back.indices[0], np.sort(rows, kind="stable"))
        part = csr[1000:30_000]  # indptr starts above zero
        want = ref.tocsr()[1000:30_000].tocsc()
        got = part.to_csc().canonical()
        np.testing.assert_array_equal(got.indptr, want.indptr)
        np.testing.assert_array_equal(got.indices, want.indices)
        flags = order % 3 == 0  # bools add up as a logical or
        mask = asp.SparseCOO([rows, cols], flags, shape).canonical()
        keys, inverse = np.unique(rows.astype(np.int64) * shape[1] + cols, return_inverse=True)
        want_or = np.zeros(len(keys), dtype=bool)
        np.logical_or.at(want_or, inverse, flags)
        np.testing.assert_array_equal(mask.indices[0].astype(np.int64) * shape[1] + mask.indices[1],
                                      keys)
        np.testing.assert_array_equal(mask.values, want_or)
        tensor = asp.SparseCOO([rows % 50, cols, rows // 50], position, (50, 7_000, 800))
        for order in [(1, 2, 0), (0, 2, 1)]:  # split after the first key, or the second
            keys, vals = tensor._sorted(order)
            perm = np.lexsort([tensor.indices[a] for a in reversed(order)])
            for k, axis in zip(keys, order, strict=True):
                np.testing.assert_array_equal(k, tensor.indices[axis][perm])
            np.testing.assert_array_equal(vals, position[perm])
    finally:
        numba.set_num_threads(before)


# ------------------------------------------------------------------ canonical form
def test_is_canonical_of_each_format(backend: str) -> None:
    def canonical(x: SparseTensor) -> bool:
        return on(x, backend).is_canonical

    assert canonical(asp.SparseCOO([[0, 1], [2, 0]], np.ones(2), (2, 3)))
    assert not canonical(asp.SparseCOO([[1, 0], [0, 2]], np.ones(2), (2, 3)))
    assert not canonical(asp.SparseCOO([[0, 0], [2, 2]], np.ones(2), (2, 3)))
    assert canonical(asp.SparseCOO([[0, 0, 1], [1, 2, 0], [5, 0, 0]], np.ones(3), (2, 3, 6)))
    assert not canonical(asp.SparseCOO([[0, 0, 0], [1, 1, 0], [5, 5, 0]], np.ones(3), (2, 3, 6)))
    assert canonical(asp.SparseCSR([0, 2, 3], [0, 2, 0], np.ones(3), (2, 3)))
    assert not canonical(asp.SparseCSR([0, 2, 3], [2, 0, 0], np.ones(3), (2, 3)))
    assert not canonical(asp.SparseCSR([0, 2, 3], [1, 1, 0], np.ones(3), (2, 3)))
    assert canonical(asp.SparseCSC([0, 1, 2], [1, 0], np.ones(2), (2, 2)))
    assert canonical(asp.SparseCSF([[0, 1, 2]], [[0, 1], [1, 0]], np.ones(2), (2, 2)))
    assert not canonical(asp.SparseCSF([[0, 1, 2]], [[1, 0], [1, 0]], np.ones(2), (2, 2)))
    assert not canonical(asp.SparseCSF([[0, 2]], [[0], [1, 1]], np.ones(2), (1, 2)))
    # A childless node is not canonical.
    assert not canonical(asp.SparseCSF([[0, 0, 1]], [[0, 1], [1]], np.ones(1), (2, 2)))


def test_canonical_keeps_explicit_zeros(backend: str) -> None:
    coo = on(asp.SparseCOO([[0, 0, 1]], np.array([1.0, -1.0, 0.0]), (2,)), backend).canonical()
    assert coo.nnz == 2
    assert host(coo, backend).values.tolist() == [0.0, 0.0]


def test_canonical_of_csf_keeps_axis_order(backend: str) -> None:
    dense = post_tensor()
    coo = asp.SparseCOO(np.concatenate([POST_COORDS, POST_COORDS], axis=1),
                        np.concatenate([POST_TENSOR_VALUES, POST_TENSOR_VALUES]), POST_SHAPE)
    csf = on(coo, backend).to_csf((2, 0, 3, 1))
    assert not csf.is_canonical
    fixed = csf.canonical()
    assert fixed.axis_order == (2, 0, 3, 1)
    assert fixed.nnz == 8
    assert_dense_equal(fixed, 2 * dense, backend)


# ----------------------------------------------------------------------- slicing
def test_csr_row_slice_is_a_view() -> None:
    csr = asp.SparseCSR.from_dense(POST_MATRIX)
    for a, b in [(1, 3), (0, 4), (2, 2), (3, 10), (-2, None)]:
        part = csr[a:b]
        np.testing.assert_array_equal(part.to_dense(), POST_MATRIX[a:b])
        assert part.values is csr.values and part.indices is csr.indices
        assert np.shares_memory(part.indptr, csr.indptr)
    np.testing.assert_array_equal(csr[1:3, :].to_dense(), POST_MATRIX[1:3])
    nested = csr[1:4][1:]
    assert nested.indptr[0] == 4
    np.testing.assert_array_equal(nested.to_dense(), POST_MATRIX[2:4])


def test_sliced_csr_operations_match_dense(backend: str) -> None:
    part = make("csr", POST_MATRIX, backend=backend)[1:3]
    dense = POST_MATRIX[1:3]
    assert part.nnz == 5
    for fmt in FORMATS:
        assert_dense_equal(convert(part, fmt), dense, backend)
    np.testing.assert_array_equal(host(part @ on(np.eye(6, dtype=np.int64), backend), backend),
                                  dense)
    np.testing.assert_array_equal(host(part.sum(axis=0), backend), dense.sum(axis=0))
    np.testing.assert_array_equal(host(part.sum(axis=1), backend), dense.sum(axis=1))
    assert host(part.sum(), backend) == dense.sum()
    assert_dense_equal(part * 2, dense * 2, backend)
    scaled = part.multiply(on(np.arange(6), backend))
    assert host(scaled, backend).indptr[0] == 0
    assert_dense_equal(scaled, dense * np.arange(6), backend)
    assert_dense_equal(part.T, dense.T, backend)
    assert part.canonical() is part
    # indptr above zero (the first two entries belong to no row), rows unsorted
    unsorted = on(asp.SparseCSR([2, 4, 7], [7, 7, 2, 0, 1, 2, 1],
                                np.array([0, 0, 1, 2, 3, 4, 5]), (2, 3)), backend)
    assert not unsorted.is_canonical
    fixed = host(unsorted.canonical(), backend)
    assert fixed.indptr.tolist() == [0, 2, 4]
    assert (fixed.indices.tolist(), fixed.values.tolist()) == ([0, 2, 1, 2], [2, 1, 8, 4])


def test_csr_slice_errors() -> None:
    csr = asp.SparseCSR.from_dense(POST_MATRIX)
    with pytest.raises(ValueError, match=r"^SparseCSR: slices must have step 1"):
        csr[::2]
    with pytest.raises(TypeError, match=r"^SparseCSR: rows are selected with a slice"):
        csr[1]
    with pytest.raises(TypeError, match=r"^SparseCSR: rows are selected with a slice"):
        csr[1:2, 0:3]


def test_csc_column_slice_is_a_view() -> None:
    csc = asp.SparseCSC.from_dense(POST_MATRIX)
    part = csc[:, 2:5]
    np.testing.assert_array_equal(part.to_dense(), POST_MATRIX[:, 2:5])
    assert part.values is csc.values
    with pytest.raises(TypeError, match=r"^SparseCSC: columns are selected with csc\[:, a:b\]"):
        csc[1:2]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_csf_sub_fibres_match_dense(order: tuple[int, ...], backend: str) -> None:
    dense = random_dense((4, 3, 5), np.float64, seed=7)
    dense[1] = 0
    csf = make("csf", dense, order, backend)
    outer = order[0]
    for i in range(-dense.shape[outer], dense.shape[outer]):
        sub = csf[i]
        assert_dense_equal(sub, np.take(dense, i, axis=outer), backend)
        assert sub.values is csf.values
    for a, b in [(0, 2), (1, 3), (2, 2), (1, None)]:
        part = csf[a:b]
        expected = np.take(dense, range(dense.shape[outer])[a:b], axis=outer)
        assert_dense_equal(part, expected, backend)
        assert part.axis_order == order
        assert part.values is csf.values


def test_csf_nested_sub_fibres(backend: str) -> None:
    csf = on(asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE), backend).to_csf()
    dense = post_tensor()
    assert_dense_equal(csf[1][2], dense[1, 2], backend)
    assert_dense_equal(csf[1][2][1], dense[1, 2, 1], backend)
    assert host(csf[2][2][2][2], backend) == 8.0
    assert host(csf[2][2][2][0], backend) == 0.0
    assert_dense_equal(csf[1:3][1][2], dense[2, 2], backend)
    sub = host(csf[2], backend)
    t = sub.to_arrow()  # a sub-fibre is compacted for pyarrow
    np.testing.assert_array_equal(t.to_tensor().to_numpy(), dense[2])


def test_csf_slice_of_unsorted_outer_level_goes_through_coo(backend: str) -> None:
    csf = on(asp.SparseCSF([[0, 1, 2, 3]], [[2, 0, 2], [1, 0, 0]], np.array([1, 2, 3]), (3, 2)),
             backend)
    dense = np.array([[2, 0], [0, 0], [3, 1]])
    assert_dense_equal(csf, dense, backend)
    assert_dense_equal(csf[2], dense[2], backend)
    assert_dense_equal(csf[1:3], dense[1:3], backend)
    assert_dense_equal(csf[0:3], dense, backend)


def test_csf_index_errors() -> None:
    csf = asp.SparseCSF.from_dense(np.eye(3))
    with pytest.raises(IndexError, match=r"^SparseCSF: index 3 out of range for dimension 0"):
        csf[3]
    with pytest.raises(TypeError, match=r"^SparseCSF: sub-fibres are selected with an int"):
        csf[1.5]
    with pytest.raises(ValueError, match=r"^SparseCSF: slices must have step 1"):
        csf[::2]


# --------------------------------------------------------------------- reductions
@pytest.mark.parametrize("dtype", DTYPES + [np.bool_], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fmt", FORMATS)
def test_sum_matches_numpy(fmt: str, dtype: Any, backend: str) -> None:
    dense = random_dense((5, 6), dtype, seed=2)
    x = make(fmt, dense, backend=backend)
    total = host(x.sum(), backend)
    assert total == dense.sum() and total.dtype == dense.sum().dtype
    for axis in [0, 1, -1, -2]:
        got = host(x.sum(axis=axis), backend)
        np.testing.assert_array_equal(got, dense.sum(axis=axis))
        assert got.dtype == dense.sum(axis=axis).dtype


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1)])
def test_sum_nd_matches_numpy(order: tuple[int, ...], backend: str) -> None:
    dense = random_dense((3, 4, 5), np.float32, seed=4)
    for x in [make("coo", dense, backend=backend), make("csf", dense, order, backend)]:
        np.testing.assert_allclose(host(x.sum(), backend), dense.sum(), rtol=1e-6)
        for axis in range(-3, 3):
            np.testing.assert_allclose(host(x.sum(axis), backend), dense.sum(axis), rtol=1e-6)
    one_d = on(asp.SparseCOO([[0, 3, 3]], np.array([1, 2, 3]), (4,)), backend)
    assert host(one_d.sum(axis=0), backend) == 6


def test_sum_axis_errors() -> None:
    for x in [asp.SparseCOO.from_dense(POST_MATRIX), asp.SparseCSR.from_dense(POST_MATRIX),
              asp.SparseCSF.from_dense(POST_MATRIX)]:
        name = type(x).__name__
        with pytest.raises(IndexError, match=rf"^{name}.sum: axis 2 out of range for 2 dimensions"):
            x.sum(axis=2)
        with pytest.raises(TypeError, match=rf"^{name}.sum: axis must be None or an int"):
            x.sum(axis=1.0)


# ------------------------------------------------------------------------ multiply
@pytest.mark.parametrize("fmt", FORMATS)
def test_multiply_scalar_and_broadcast(fmt: str, backend: str) -> None:
    dense = random_dense((4, 5), np.float32, seed=5)
    x = make(fmt, dense, backend=backend)
    for other in [2, 0.5, np.float32(3), np.array(2.0), np.arange(5, dtype=np.float32),
                  np.arange(4.0).reshape(4, 1), np.full((4, 5), -1.0), np.ones((1, 1), np.int8)]:
        got = x.multiply(on(other, backend) if isinstance(other, np.ndarray) else other)
        expected = dense * other
        assert got.format == fmt
        assert got.dtype == expected.dtype
        assert_dense_equal(got, expected, backend)
    assert_dense_equal(x * 3, dense * 3, backend)
    assert_dense_equal(3 * x, dense * 3, backend)
    assert_dense_equal(on(np.arange(5.0), backend) * x, dense * np.arange(5.0), backend)


def test_multiply_shares_structure_and_only_touches_stored_entries() -> None:
    coo = asp.SparseCOO.from_dense(POST_MATRIX)
    scaled = coo.multiply(np.full(6, np.inf))
    assert scaled.indices is coo.indices
    assert scaled.nnz == coo.nnz
    assert np.isinf(scaled.values).all()
    assert scaled.to_dense()[0, 5] == 0  # an unstored zero times inf stays zero
    csf = asp.SparseCSF.from_dense(POST_MATRIX, (1, 0))
    assert csf.multiply(2).indices[1] is csf.indices[1]


def test_multiply_errors() -> None:
    csr = asp.SparseCSR.from_dense(POST_MATRIX)
    with pytest.raises(ValueError, match=r"^SparseCSR.multiply: other of shape \(3,\) does not "
                                         r"broadcast to the shape \(4, 6\)"):
        csr.multiply(np.ones(3))
    with pytest.raises(ValueError, match=r"does not broadcast"):
        csr.multiply(np.ones((2, 4, 6)))
    with pytest.raises(TypeError, match=r"^SparseCSR.multiply: other must be dense here"):
        csr.multiply(csr)
    with pytest.raises(TypeError, match=r"^SparseCOO.multiply: other must be a bool, integer"):
        csr.to_coo().multiply("x")
    with pytest.raises(TypeError):
        csr * csr


# -------------------------------------------------------------------------- matmul
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("k", [1, 3, 17])
def test_csr_matmul_matches_numpy(dtype: Any, k: int, backend: str) -> None:
    dense = random_dense((30, 20), dtype, seed=k)
    other = random_dense((20, k), dtype, density=0.9, seed=k + 1)
    rhs, lhs = on(other, backend), on(np.ascontiguousarray(other.T), backend)
    for m in [make("csr", dense, backend=backend), make("csc", dense, backend=backend)]:
        got = host(m @ rhs, backend)
        assert got.dtype == (dense @ other).dtype
        np.testing.assert_allclose(got, dense @ other, rtol=1e-5)
        np.testing.assert_allclose(host(m @ rhs[:, 0], backend), dense @ other[:, 0], rtol=1e-5)
        np.testing.assert_allclose(host(lhs @ m.T, backend), other.T @ dense.T, rtol=1e-5)
        np.testing.assert_allclose(host(rhs[:, 0] @ m.T, backend), other[:, 0] @ dense.T,
                                   rtol=1e-5)


def test_csr_matmul_large_uses_threads_and_matches_scipy() -> None:
    scipy_sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(11)
    m = scipy_sparse.random_array((3000, 2000), density=0.02, format="csr", rng=rng)
    # Skewed rows: a few dense rows, so the chunks must balance by entries.
    dense_rows = scipy_sparse.csr_array(np.where(rng.random((5, 2000)) < 0.9, 1.0, 0.0))
    m = scipy_sparse.vstack([dense_rows, m], format="csr")
    other = rng.random((2000, 32))
    ours = asp.SparseCSR.from_scipy(m)
    np.testing.assert_allclose(ours @ other, m @ other, rtol=1e-12)
    np.testing.assert_allclose(ours @ other[:, 0], m @ other[:, 0], rtol=1e-12)
    np.testing.assert_allclose(ours @ np.asfortranarray(other), m @ other, rtol=1e-12)
    np.testing.assert_allclose(ours[100:2000] @ other, (m @ other)[100:2000], rtol=1e-12)
    lhs = rng.random((9, 3005))
    np.testing.assert_allclose(lhs @ ours, lhs @ m, rtol=1e-12)


def test_matmul_mixed_and_bool_dtypes(backend: str) -> None:
    m = make("csr", np.array([[1, 0], [0, 2]], dtype=np.int32), backend=backend)
    got = host(m @ on(np.array([[0.5], [0.25]]), backend), backend)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, [[0.5], [0.5]])
    b = make("csr", np.array([[True, False], [True, True]]), backend=backend)
    got_b = host(b @ on(np.array([[False], [True]]), backend), backend)
    assert got_b.dtype == bool
    np.testing.assert_array_equal(got_b, [[False], [True]])
    got_t = host(on(np.array([[True, False]]), backend) @ b.T, backend)
    np.testing.assert_array_equal(got_t, [[True, True]])


def test_matmul_errors() -> None:
    csr = asp.SparseCSR.from_dense(POST_MATRIX)
    with pytest.raises(ValueError, match=r"^SparseCSR.matmul: other has shape \(5, 2\) but its "
                                         r"first dimension must be 6"):
        csr @ np.ones((5, 2))
    with pytest.raises(ValueError, match=r"^SparseCSR.matmul: other must be a 1-d or 2-d"):
        csr @ np.ones((6, 2, 2))
    with pytest.raises(TypeError, match=r"^SparseCSR.matmul: other must be dense here"):
        csr @ csr
    with pytest.raises(ValueError, match=r"^SparseCSR.__rmatmul__: other has shape \(2, 3\) but "
                                         r"its last dimension must be 4"):
        np.ones((2, 3)) @ csr


@pytest.mark.parametrize("axis_order", [(0, 1), (1, 0)])
def test_coo_and_csf_matmul_go_through_csr_issue_6(axis_order: tuple[int, int],
                                                   backend: str) -> None:
    dense = random_dense((7, 5), np.float64, seed=3)
    other = random_dense((5, 4), np.float64, density=0.8, seed=4)
    lhs = random_dense((3, 7), np.float64, density=0.8, seed=5)
    coo = asp.SparseCOO.from_dense(dense)
    coo = on(asp.SparseCOO(coo.indices[:, ::-1], coo.values[::-1], coo.shape), backend)  # unsorted
    for m in (coo, make("csf", dense, axis_order, backend)):
        np.testing.assert_allclose(host(m @ on(other, backend), backend), dense @ other)
        np.testing.assert_allclose(host(m.matmul(on(other[:, 0], backend)), backend),
                                   dense @ other[:, 0])
        np.testing.assert_allclose(host(on(lhs, backend) @ m, backend), lhs @ dense)


def test_matmul_of_non_matrix_raises() -> None:
    coo = asp.SparseCOO.from_dense(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match=r"^SparseCOO.matmul: needs a 2-d tensor, got shape "
                                         r"\(2, 2, 2\)"):
        coo @ np.ones(2)
    with pytest.raises(ArrowSparseError, match=r"^SparseCSF.__rmatmul__: needs a 2-d tensor"):
        np.ones(2) @ coo.to_csf()
    with pytest.raises(TypeError, match=r"^SparseCSR.matmul: other must be dense here"):
        asp.SparseCOO.from_dense(np.eye(2)) @ asp.SparseCSR.from_dense(np.eye(2))


# ----------------------------------------------------------------------- transpose
def test_transpose_of_each_format(backend: str) -> None:
    csr = make("csr", POST_MATRIX, backend=backend)
    csc = csr.T
    assert isinstance(csc, asp.SparseCSC)
    assert csc.indptr is csr.indptr and csc.indices is csr.indices and csc.values is csr.values
    assert_dense_equal(csc, POST_MATRIX.T, backend)
    assert isinstance(csc.T, asp.SparseCSR)
    assert csr.transpose((0, 1)) is csr
    dense = post_tensor()
    coo = on(asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE), backend)
    csf = coo.to_csf((1, 3, 0, 2))
    for axes in [None, (1, 0, 3, 2), (3, 1, 2, 0)]:
        expected = np.transpose(dense, axes)
        assert_dense_equal(coo.transpose(axes), expected, backend)
        t = csf.transpose(axes)
        assert_dense_equal(t, expected, backend)
        assert t.values is csf.values
        assert all(a is b for a, b in zip(t.indices, csf.indices, strict=True))
    assert_dense_equal(coo.T, dense.T, backend)
    assert_dense_equal(csf.T, dense.T, backend)
    with pytest.raises(ValueError, match=r"^SparseCOO.transpose: axis_order must be a permutation"):
        coo.transpose((0, 1))
    with pytest.raises(ValueError, match=r"^SparseCSR.transpose: axis_order must be a permutation"):
        csr.transpose((0, 0))


# ------------------------------------------------------------------ reprs and misc
def test_reprs_are_deterministic() -> None:
    coo = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE)
    assert repr(coo) == "SparseCOO(shape=(3, 3, 3, 4), nnz=8, dtype=float64)"
    assert repr(coo.to_csf((3, 2, 1, 0))) == \
        "SparseCSF(shape=(3, 3, 3, 4), nnz=8, dtype=float64, axis_order=(3, 2, 1, 0))"
    assert repr(asp.SparseCSR.from_dense(POST_MATRIX)) == \
        "SparseCSR(shape=(4, 6), nnz=8, dtype=int64)"
    assert repr(asp.SparseCSC.from_dense(POST_MATRIX[:, :2].astype(np.float32))) == \
        "SparseCSC(shape=(4, 2), nnz=3, dtype=float32)"


def test_properties() -> None:
    csf = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE).to_csf()
    assert (csf.ndim, csf.nnz, csf.shape) == (4, 8, POST_SHAPE)
    assert csf.dtype == np.float64
    csr = asp.SparseCSR.from_dense(POST_MATRIX)
    assert (csr.ndim, csr.format, csr.T.format) == (2, "csr", "csc")


def test_bool_values(backend: str) -> None:
    dense = np.array([[True, False], [False, True]])
    for fmt in FORMATS:
        x = make(fmt, dense, backend=backend)
        assert_dense_equal(x, dense, backend)
        assert host(x.sum(), backend) == 2
    dup = on(asp.SparseCOO([[0, 0, 1]], np.array([True, True, False]), (2,)), backend)
    assert_dense_equal(dup, np.array([True, False]), backend)
    assert host(dup.canonical(), backend).values.tolist() == [True, False]
    assert_dense_equal(dup.to_csf(), np.array([True, False]), backend)


# -------------------------------------------------------------------- validation
def test_coo_constructor_errors() -> None:
    with pytest.raises(IndexError, match=r"^SparseCOO: indices\[1\] out of range \[0, 4\) "
                                         r"\(first at position 2: 7\)"):
        asp.SparseCOO([[0, 1, 2], [0, 3, 7]], np.ones(3), (3, 4))
    with pytest.raises(IndexError, match=r"^SparseCOO: indices\[0\] out of range \[0, 3\) "
                                         r"\(first at position 0: -1\)"):
        asp.SparseCOO([[-1], [0]], np.ones(1), (3, 4))
    with pytest.raises(ValueError, match=r"^SparseCOO: indices has 2 rows but shape \(3,\) has 1"):
        asp.SparseCOO([[0], [0]], np.ones(1), (3,))
    with pytest.raises(ValueError, match=r"^SparseCOO: indices has 1 columns but there are 2"):
        asp.SparseCOO([[0]], np.ones(2), (3,))
    with pytest.raises(ValueError, match=r"^SparseCOO: indices must be 2-dimensional"):
        asp.SparseCOO([0, 1], np.ones(2), (3,))
    with pytest.raises(TypeError, match=r"^SparseCOO: indices must have an integer dtype"):
        asp.SparseCOO([[0.0, 1.0]], np.ones(2), (3,))
    with pytest.raises(TypeError, match=r"^SparseCOO: values must have a numeric dtype"):
        asp.SparseCOO([[0]], np.array(["a"]), (3,))
    with pytest.raises(TypeError, match=r"^SparseCOO: values of dtype float16 are not supported"):
        asp.SparseCOO([[0]], np.ones(1, dtype=np.float16), (3,))
    with pytest.raises(ValueError, match=r"^SparseCOO: values must be 1-dimensional"):
        asp.SparseCOO([[0]], np.ones((1, 2)), (3,))
    with pytest.raises(ValueError, match=r"^SparseCOO: shape must have at least one dimension"):
        asp.SparseCOO(np.zeros((0, 0), dtype=np.int64), np.ones(0), ())
    with pytest.raises(ValueError, match=r"^SparseCOO: shape\[0\] must be non-negative"):
        asp.SparseCOO([[0]], np.ones(1), (-1,))
    with pytest.raises(TypeError, match=r"^SparseCOO: shape must be a tuple of ints"):
        asp.SparseCOO([[0]], np.ones(1), "3")
    with pytest.raises(TypeError, match=r"^SparseCOO: shape\[0\] must be an integer"):
        asp.SparseCOO([[0]], np.ones(1), (3.0,))
    with pytest.raises(ValueError, match=r"^SparseCOO: shape\[0\] "):
        asp.SparseCOO([[0]], np.ones(1), (2**70,))


def test_coo_validate_false_then_validate() -> None:
    coo = asp.SparseCOO([[0, 9]], np.ones(2), (3,), validate=False)
    with pytest.raises(IndexError, match=r"^SparseCOO: indices\[0\] out of range \[0, 3\) "
                                         r"\(first at position 1: 9\)"):
        coo.validate()


def test_compressed_constructor_errors() -> None:
    with pytest.raises(IndexError, match=r"^SparseCSR: indices out of range \[0, 3\) "
                                         r"\(first at position 1: 3\)"):
        asp.SparseCSR([0, 2], [0, 3], np.ones(2), (1, 3))
    with pytest.raises(IndexError, match=r"^SparseCSC: indices out of range \[0, 1\)"):
        asp.SparseCSC([0, 2], [0, 3], np.ones(2), (1, 1))
    with pytest.raises(ValueError, match=r"^SparseCSR: indptr must be non-decreasing "
                                         r"\(first at position 2: 1\)"):
        asp.SparseCSR([0, 2, 1], [0, 1], np.ones(2), (2, 3))
    with pytest.raises(ValueError, match=r"^SparseCSR: indptr has 3 entries but shape needs 2"):
        asp.SparseCSR([0, 1, 2], [0, 1], np.ones(2), (1, 3))
    with pytest.raises(ValueError, match=r"^SparseCSR: indices \(2\) and values \(3\) must have "
                                         r"the same length, at least indptr\[-1\] = 2"):
        asp.SparseCSR([0, 2], [0, 1], np.ones(3), (1, 3))
    with pytest.raises(ValueError, match=r"^SparseCSR: shape must have 2 dimensions, got \(3,\)"):
        asp.SparseCSR([0, 2], [0, 1], np.ones(2), (3,))
    with pytest.raises(TypeError, match=r"^SparseCSR: indptr must have an integer dtype"):
        asp.SparseCSR([0.0, 2.0], [0, 1], np.ones(2), (1, 3))
    with pytest.raises(TypeError, match=r"^SparseCSC: values must be a numeric array"):
        asp.SparseCSC([0, 1], [0], [object()], (1, 1))
    with pytest.raises(ValueError, match=r"^SparseCSR: indptr must have at least one element"):
        asp.SparseCSR([], [], np.ones(0), (0, 3), validate=False)


def test_compressed_reads_only_the_addressed_range() -> None:
    # Entries outside indptr[0]:indptr[-1] are not part of the matrix (like Arrow offsets).
    csr = asp.SparseCSR([1, 2, 3], [99, 0, 1], np.array([7.0, 1.0, 2.0]), (2, 2))
    np.testing.assert_array_equal(csr.to_dense(), [[1.0, 0.0], [0.0, 2.0]])
    assert csr.nnz == 2 and csr.is_canonical
    np.testing.assert_array_equal(csr.to_coo().indices, [[0, 1], [0, 1]])


def test_csf_constructor_errors() -> None:
    with pytest.raises(ValueError, match=r"^SparseCSF: indptr has 2 arrays but the shape needs 1"):
        asp.SparseCSF([[0, 1], [0, 1]], [[0], [0]], np.ones(1), (2, 2))
    with pytest.raises(ValueError, match=r"^SparseCSF: indices has 1 arrays but the shape needs 2"):
        asp.SparseCSF([[0, 1]], [[0]], np.ones(1), (2, 2))
    with pytest.raises(ValueError, match=r"^SparseCSF: indptr\[0\] has 3 entries but indices\[0\] "
                                         r"needs 2"):
        asp.SparseCSF([[0, 1, 1]], [[0], [0]], np.ones(1), (2, 2))
    with pytest.raises(ValueError, match=r"^SparseCSF: values has 2 entries but the last level of "
                                         r"indices needs 1"):
        asp.SparseCSF([[0, 1]], [[0], [0]], np.ones(2), (2, 2))
    with pytest.raises(ValueError, match=r"^SparseCSF: indptr\[0\] exceed the number of values 1"):
        asp.SparseCSF([[0, 2]], [[0], [0]], np.ones(1), (2, 2))
    with pytest.raises(IndexError, match=r"^SparseCSF: indices\[1\] out of range \[0, 3\) "
                                         r"\(first at position 1: 5\)"):
        asp.SparseCSF([[0, 2]], [[0], [1, 5]], np.ones(2), (2, 3))
    with pytest.raises(IndexError, match=r"^SparseCSF: indices\[0\] out of range \[0, 3\)"):
        asp.SparseCSF([[0, 2]], [[4], [1, 1]], np.ones(2), (2, 3), axis_order=(1, 0))
    with pytest.raises(ValueError, match=r"^SparseCSF: axis_order must be a permutation of 0..1, "
                                         r"got \(0, 0\)"):
        asp.SparseCSF([[0, 1]], [[0], [0]], np.ones(1), (2, 2), axis_order=(0, 0))
    with pytest.raises(TypeError, match=r"^SparseCSF: axis_order must be a sequence of ints"):
        asp.SparseCSF([[0, 1]], [[0], [0]], np.ones(1), (2, 2), axis_order="01")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^SparseCSF: indices must be a list of 2 index arrays"):
        asp.SparseCSF([[0, 1]], 5, np.ones(1), (2, 2))
    with pytest.raises(TypeError, match=r"^SparseCSF: indices\[1\] must have an integer dtype"):
        asp.SparseCSF([[0, 1]], [[0], [0.5]], np.ones(1), (2, 2))


def test_csf_reads_only_reachable_nodes() -> None:
    # Level-1 position 0 and leaf 0 are unreachable (indptr starts above zero): not read.
    csf = asp.SparseCSF([[1, 2], [0, 1, 2]], [[0], [99, 1], [99, 2]], np.array([5.0, 3.0]),
                        (1, 2, 3))
    assert csf.nnz == 1
    np.testing.assert_array_equal(csf.to_dense()[0, 1], [0.0, 0.0, 3.0])
    assert csf.is_canonical


def test_errors_are_arrow_sparse_errors() -> None:
    calls: list[Callable[[], Any]] = [lambda: asp.SparseCOO([[5]], np.ones(1), (3,)),
             lambda: asp.SparseCSR([0, 2, 1], [0, 1], np.ones(2), (2, 3)),
             lambda: asp.SparseCSF([[0, 1]], [[0], [0]], np.ones(1), (2, 2), axis_order=(1, 1)),
             lambda: asp.SparseCSC.from_dense(np.ones(3)),
             lambda: asp.SparseCOO.from_dense(np.array(["x"]))]
    for call in calls:
        with pytest.raises(ArrowSparseError):
            call()


def test_from_dense_errors() -> None:
    with pytest.raises(ValueError, match=r"^SparseCSR.from_dense: shape must have 2 dimensions"):
        asp.SparseCSR.from_dense(np.ones(3))
    with pytest.raises(ValueError, match=r"^SparseCOO.from_dense: shape must have at least one"):
        asp.SparseCOO.from_dense(np.float64(1.0))
    with pytest.raises(TypeError, match=r"^SparseCSF.from_dense: dense must be an array"):
        asp.SparseCSF.from_dense(object())
    with pytest.raises(ValueError,
                       match=r"^SparseCSF.from_dense: axis_order must be a permutation"):
        asp.SparseCSF.from_dense(np.ones((2, 2)), axis_order=(0, 2))


# ------------------------------------------------------------------------- kernels
def test_radix_argsort_matches_lexsort() -> None:
    from arrow_sparse.kernels.cpu import sparse as kernels

    rng = np.random.default_rng(0)
    keys: list[np.ndarray] = [rng.integers(0, 5, 1000), rng.integers(0, 50, 1000).astype(np.int32),
            rng.integers(0, 3, 1000)]
    perm = kernels.radix_argsort(keys, [5, 50, 3])
    np.testing.assert_array_equal(perm, np.lexsort(keys[::-1]))


def test_compressed_transpose_kernel_is_stable() -> None:
    from arrow_sparse.kernels.cpu import sparse as kernels

    indptr = np.array([0, 2, 4])
    indices = np.array([1, 1, 0, 1])
    values = np.array([1.0, 2.0, 3.0, 4.0])
    ptr, idx, val = kernels.compressed_transpose(indptr, indices, values, 2)
    assert ptr.tolist() == [0, 1, 4]
    assert idx.tolist() == [1, 0, 0, 1]
    assert val.tolist() == [3.0, 1.0, 2.0, 4.0]
