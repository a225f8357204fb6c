"""Tests of :class:`SparseCSR` and what it shares with :class:`SparseCSC` (``_Compressed``).

The post's 4x6 matrix, conversions that share buffers, row slices, the matrix products,
the constructor's checks, and the Jagged exchange (``to_jagged``, ``from_jagged``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from tests.sparse._helpers import (
    DTYPES,
    FORMATS,
    POST_COLS,
    POST_COORDS,
    POST_INDPTR,
    POST_MATRIX,
    POST_ROWS,
    POST_SHAPE,
    POST_TENSOR_VALUES,
    POST_VALUES,
    assert_dense_equal,
    convert,
    coo_tensors,
    host,
    make,
    on,
    post_tensor,
    random_dense,
)


# ------------------------------------------------------------ the post's worked examples
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


# --------------------------------------------------------------------------- conversions
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


# ---------------------------------------------------------------------------- row slices
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
    with pytest.raises(TypeError, match=r"^SparseCSR: rows are selected with an int or a "
                                        r"slice"):
        csr[1:2, 0:3]
    with pytest.raises(TypeError, match=r"^SparseCSR: rows are selected with an int or a "
                                        r"slice"):
        csr[True]
    with pytest.raises(IndexError, match=r"^SparseCSR: row 4 out of range for 4 rows$"):
        csr[4]
    with pytest.raises(IndexError, match=r"^SparseCSR: row -5 out of range for 4 rows$"):
        csr[-5]


def test_csr_integer_row_is_a_1d_coo_view(backend: str) -> None:
    csr = on(asp.SparseCSR.from_dense(POST_MATRIX), backend)
    for i in range(-POST_MATRIX.shape[0], POST_MATRIX.shape[0]):
        row = csr[i]
        assert isinstance(row, asp.SparseCOO) and row.shape == (POST_MATRIX.shape[1],)
        np.testing.assert_array_equal(host(row, backend).to_dense(), POST_MATRIX[i])
        np.testing.assert_array_equal(host(csr[i, :], backend).to_dense(), POST_MATRIX[i])
    sliced = csr[1:3]  # indptr starts above zero: the row's window is read from it
    np.testing.assert_array_equal(host(sliced[1], backend).to_dense(), POST_MATRIX[2])


@pytest.mark.hypothesis
@given(coo_tensors(min_ndim=2, max_ndim=2, max_dim=7), st.data())
def test_csr_row_slices_match_dense(case: tuple[Any, np.ndarray], data: st.DataObject) -> None:
    coo, dense = case
    csr = coo.to_csr()
    a, b = sorted(data.draw(st.lists(st.integers(0, coo.shape[0]), min_size=2, max_size=2)))
    part = csr[a:b]
    np.testing.assert_array_equal(part.to_dense(), dense[a:b])
    for fmt in ["to_coo", "to_csc", "to_csf"]:
        np.testing.assert_array_equal(getattr(part, fmt)().to_dense(), dense[a:b])
    # pyarrow's to_tensor does not add up repeated entries: canonicalise first.
    np.testing.assert_array_equal(part.canonical().to_arrow().to_tensor().to_numpy(), dense[a:b])


# -------------------------------------------------------------------------------- matmul
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


@pytest.mark.hypothesis
@given(coo_tensors(min_ndim=2, max_ndim=2, max_dim=8), st.integers(1, 5))
def test_matmul_matches_numpy(case: tuple[Any, np.ndarray], k: int) -> None:
    coo, dense = case
    other = np.arange(coo.shape[1] * k, dtype=dense.dtype).reshape(coo.shape[1], k) % 7
    for m in [coo.to_csr(), coo.to_csc()]:
        np.testing.assert_allclose(m @ other, dense @ other, rtol=1e-5)
        np.testing.assert_allclose(other.T @ m.T, other.T @ dense.T, rtol=1e-5)


# ------------------------------------------------------------ constructor and validation
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
    with pytest.raises(ValueError, match=r"^SparseCSR: shape must have at least 2 dimensions, "
                                         r"got \(3,\)"):
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


# -------------------------------------------------------------------------------- Jagged
def test_csr_to_jagged_inverts_jagged_to_csr() -> None:
    j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [], [3, 6]])
    weights = np.array([0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5], dtype=np.float32)
    csr = j.to_csr(8, weights=weights)
    ids, w = csr.to_jagged()
    assert ids.to_list() == j.to_list()
    assert w.values is csr.values and ids.values is csr.indices
    assert ids.offsets is csr.indptr and w.offsets is csr.indptr
    again = ids.to_csr(8, weights=w.values)
    np.testing.assert_array_equal(again.to_dense(), csr.to_dense())
    part_ids, part_w = csr[1:3].to_jagged()
    assert part_ids.to_list() == [[2, 4, 6, 7], []]
    assert part_w.to_list() == [[2.0, 2.5, 3.0, 3.5], []]
    cols, rows_w = csr.to_csc().to_jagged()  # one row per column, of row ids
    assert cols.to_list()[3] == [0, 3]


def test_csr_from_jagged_refuses_other_objects() -> None:
    with pytest.raises(TypeError, match=r"^SparseCSR.from_jagged: expected a Jagged, got list$"):
        asp.SparseCSR.from_jagged([[1, 2]], 3)
    with pytest.raises(TypeError, match=r"^SparseCSR.from_jagged: expected a Jagged, got "
                                        r"ListArray$"):
        asp.SparseCSR.from_jagged(pa.array([[1, 2]]), 3)
