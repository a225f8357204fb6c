"""Tests of the N-d :class:`SparseCSR`: the first dimension compressed, the others per entry.

The Compressed Sparse Fibers post's CSR of its 4-d tensor (``i indptr = [0, 0, 5, 8]``
with ``j``, ``k``, ``l`` kept per entry), then conversions to and from dense, COO and CSF
against numpy on every backend, Hypothesis-drawn tensors, and the matrix-only errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrow_sparse as asp
from tests.sparse._helpers import (
    POST_COORDS,
    POST_SHAPE,
    POST_TENSOR_VALUES,
    assert_dense_equal,
    coo_tensors,
    host,
    on,
    post_tensor,
    random_dense,
)

# The post's arrays, as printed (its ``k`` misses a comma: ``[1, 1, 1, 1, 2, 2, 2 2]``).
POST_J = [1, 1, 2, 2, 2, 2, 2, 2]
POST_K = [1, 1, 1, 1, 2, 2, 2, 2]
POST_L = [2, 3, 1, 3, 1, 1, 3, 2]
POST_I_INDPTR = [0, 0, 5, 8]


# ------------------------------------------------------------ the post's worked example
def test_post_4d_csr_arrays_build_the_post_tensor() -> None:
    csr = asp.SparseCSR(POST_I_INDPTR, [POST_J, POST_K, POST_L], POST_TENSOR_VALUES, POST_SHAPE)
    np.testing.assert_array_equal(csr.to_dense(), post_tensor())
    coo = csr.to_coo()  # stored order kept: the post's COO table, row for row
    np.testing.assert_array_equal(coo.indices, POST_COORDS)
    np.testing.assert_array_equal(coo.values, POST_TENSOR_VALUES)
    assert not csr.is_canonical  # l = 1, 3, 2 at i = 2


def test_post_4d_csr_from_dense_and_from_coo() -> None:
    for csr in (asp.SparseCSR.from_dense(post_tensor()),
                asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE).to_csr(),
                asp.SparseCSR.from_coo(asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES,
                                                     POST_SHAPE))):
        assert csr.shape == POST_SHAPE
        assert csr.indptr.tolist() == POST_I_INDPTR
        # sorted row-major: the last two entries of i = 2 swap (l = 2 before l = 3)
        assert csr.indices.tolist() == [POST_J, POST_K, [2, 3, 1, 3, 1, 1, 2, 3]]
        assert csr.values.tolist() == [1, 2, 3, 4, 5, 6, 8, 7]
        assert csr.is_canonical
        np.testing.assert_array_equal(csr.to_dense(), post_tensor())


def test_post_4d_csr_to_csf_and_back() -> None:
    csr = asp.SparseCSR(POST_I_INDPTR, [POST_J, POST_K, POST_L], POST_TENSOR_VALUES, POST_SHAPE)
    csf = csr.to_csf()
    expected = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE).to_csf()
    for got, want in zip(csf.indptr + csf.indices, expected.indptr + expected.indices,
                         strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(csf.values, expected.values)
    back = asp.SparseCSR.from_csf(csf)
    assert back.indptr.tolist() == POST_I_INDPTR
    np.testing.assert_array_equal(back.to_dense(), post_tensor())
    np.testing.assert_array_equal(csr.to_csf([3, 0, 1, 2]).to_dense(), post_tensor())


def test_zeros_4d_from_dense() -> None:
    csr = asp.SparseCSR.from_dense(np.zeros((3, 3, 3, 4)))
    assert csr.nnz == 0 and csr.indptr.tolist() == [0, 0, 0, 0]
    assert csr.indices.shape == (3, 0)
    np.testing.assert_array_equal(csr.to_dense(), np.zeros((3, 3, 3, 4)))
    assert csr.to_coo().indices.shape == (4, 0)
    assert csr.to_csf().nnz == 0


# ----------------------------------------------------------------- numpy oracle, backends
@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 2, 4), (0, 3, 2), (4, 0, 2), (5, 1, 1, 1, 3)])
def test_nd_csr_conversions_match_numpy(backend: str, shape: tuple[int, ...]) -> None:
    dense = random_dense(shape, np.float64, seed=len(shape))
    csr = asp.SparseCSR.from_dense(on(dense, backend))
    assert csr.shape == shape and csr.ndim == len(shape)
    assert_dense_equal(csr, dense, backend)
    assert host(csr.nnz, backend) == np.count_nonzero(dense)
    coo = csr.to_coo()
    assert_dense_equal(coo, dense, backend)
    np.testing.assert_array_equal(host(coo.indices, backend), np.array(np.nonzero(dense)))
    assert_dense_equal(asp.SparseCSR.from_coo(coo), dense, backend)
    order = tuple(range(len(shape)))[::-1]
    csf = csr.to_csf(order)
    assert csf.axis_order == order
    assert_dense_equal(csf, dense, backend)
    assert_dense_equal(csf.to_csr(), dense, backend)
    assert_dense_equal(csr[1:], dense[1:], backend)
    if shape[0]:
        assert_dense_equal(csr[-1], dense[-1], backend)
    np.testing.assert_allclose(host(csr.sum(), backend), dense.sum())
    for axis in range(len(shape)):
        np.testing.assert_allclose(host(csr.sum(axis=axis), backend), dense.sum(axis=axis))
    assert_dense_equal(csr * 3, dense * 3, backend)
    host(csr, backend).validate()


def test_nd_csr_unsorted_with_duplicates_canonical(backend: str) -> None:
    indptr = [0, 3, 3, 6]
    trailing = np.array([[1, 0, 1, 2, 2, 0], [2, 1, 2, 0, 0, 0]])
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    csr = on(asp.SparseCSR(indptr, trailing, values, (3, 3, 3)), backend)
    expected = np.zeros((3, 3, 3))
    rows = np.repeat(np.arange(3), np.diff(indptr))
    np.add.at(expected, (rows, *trailing), values)
    assert_dense_equal(csr, expected, backend)
    assert not csr.is_canonical
    fixed = csr.canonical()
    assert fixed.is_canonical
    fixed_host = host(fixed, backend)
    assert fixed_host.indptr.tolist() == [0, 2, 2, 4]
    assert fixed_host.indices.tolist() == [[0, 1, 0, 2], [1, 2, 0, 0]]
    assert fixed_host.values.tolist() == [2.0, 4.0, 6.0, 9.0]
    assert_dense_equal(fixed, expected, backend)


@settings(max_examples=40, deadline=None)
@given(coo_tensors(min_ndim=3, max_ndim=4, max_dim=4))
def test_nd_csr_from_any_coo_matches_oracle(case: tuple[asp.SparseCOO, np.ndarray]) -> None:
    coo, expected = case
    csr = coo.to_csr()
    assert csr.nnz == coo.nnz  # duplicates kept
    np.testing.assert_array_equal(csr.to_dense(), expected)
    np.testing.assert_array_equal(csr.to_coo().to_dense(), expected)
    np.testing.assert_array_equal(csr.canonical().to_dense(), expected)
    assert csr.canonical().is_canonical
    np.testing.assert_array_equal(csr.to_csf().to_dense(), expected)
    np.testing.assert_array_equal(asp.SparseCSR.from_csf(coo.to_csf()).to_dense(), expected)


def test_matrix_is_one_trailing_coordinate_row() -> None:
    flat = asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([1.0, 2.0, 3.0]), (2, 3))
    rows = asp.SparseCSR([0, 2, 3], np.array([[0, 2, 1]]), np.array([1.0, 2.0, 3.0]), (2, 3))
    assert rows.indices.ndim == 1
    np.testing.assert_array_equal(rows.indices, flat.indices)
    np.testing.assert_array_equal(rows.to_dense(), flat.to_dense())


# ------------------------------------------------------------------------------- errors
def test_nd_csr_errors() -> None:
    with pytest.raises(ValueError, match=r"^SparseCSR: indices has 2 rows but shape of 4 "
                                         r"dimensions needs 3"):
        asp.SparseCSR(POST_I_INDPTR, [POST_J, POST_K], POST_TENSOR_VALUES, POST_SHAPE)
    with pytest.raises(IndexError, match=r"^SparseCSR: indices\[2\] out of range \[0, 4\) "
                                         r"\(first at position 1: 4\)"):
        asp.SparseCSR(POST_I_INDPTR, [POST_J, POST_K, [2, 4, 1, 3, 1, 1, 3, 2]],
                      POST_TENSOR_VALUES, POST_SHAPE)
    with pytest.raises(ValueError, match=r"^SparseCSC.from_dense: shape must have 2 dimensions"):
        asp.SparseCSC.from_dense(np.zeros((2, 2, 2)))
    csr = asp.SparseCSR.from_dense(post_tensor())
    for op, call in [("matmul", lambda: csr @ np.ones(4)),
                     ("__rmatmul__", lambda: np.ones(3) @ csr),
                     ("transpose", lambda: csr.T),
                     ("to_csc", csr.to_csc),
                     ("to_jagged", csr.to_jagged),
                     ("to_arrow", csr.to_arrow),
                     ("to_scipy", csr.to_scipy),
                     ("to_torch", csr.to_torch)]:
        with pytest.raises(ValueError, match=rf"^SparseCSR\.{op}: needs a 2-d matrix, got shape "
                                             r"\(3, 3, 3, 4\); convert an N-d tensor"):
            call()
    assert csr.transpose((0, 1, 2, 3)) is csr


@given(st.integers(0, 3))
def test_nd_csr_integer_row_is_a_view(i: int) -> None:
    csr = asp.SparseCSR(POST_I_INDPTR, [POST_J, POST_K, POST_L], POST_TENSOR_VALUES, POST_SHAPE)
    if i == 3:
        with pytest.raises(IndexError, match=r"^SparseCSR: row 3 out of range for 3 rows"):
            csr[i]
        return
    row = csr[i]
    assert row.shape == POST_SHAPE[1:]
    np.testing.assert_array_equal(row.to_dense(), post_tensor()[i])
    assert np.shares_memory(row.values, csr.values) or row.nnz == 0


@pytest.mark.parametrize("dim", [0, 1, (1, 2), 3])
def test_nd_csr_masked_sum_keeps_the_layout(backend: str, dim: Any) -> None:
    dense = random_dense((3, 4, 2, 3), np.float64, seed=7)
    csr = asp.SparseCSR.from_dense(on(dense, backend))
    out = asp.masked.sum(csr, dim)
    assert isinstance(out, asp.SparseCSR)  # an N-d CSR reduced to 2 dimensions or more
    np.testing.assert_allclose(host(out.to_dense(), backend), dense.sum(axis=dim))
    total = asp.masked.sum(csr, (0, 1, 2, 3))
    np.testing.assert_allclose(host(total, backend), dense.sum())
