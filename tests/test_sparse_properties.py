"""Hypothesis property tests of the sparse formats: round trips through every format and
axis order, canonical form, Arrow round trips and the operators, against numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp

from ._strategies import list_arrays

pytestmark = pytest.mark.hypothesis

DTYPES = ["float32", "float64", "int32", "int64"]


@st.composite
def coo_tensors(draw: st.DrawFn, min_ndim: int = 1, max_ndim: int = 4,
                max_dim: int = 5) -> tuple[asp.SparseCOO, np.ndarray]:
    """A COO tensor (unsorted, often with repeated coordinates) and its dense oracle."""
    ndim = draw(st.integers(min_ndim, max_ndim))
    shape = tuple(draw(st.lists(st.integers(0, max_dim), min_size=ndim, max_size=ndim)))
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    size = int(np.prod(shape))
    nnz = draw(st.integers(0, min(3 * size, 40)))
    index_dtype = draw(st.sampled_from([np.int32, np.int64]))
    coords = np.array([draw(st.lists(st.integers(0, max(s - 1, 0)), min_size=nnz, max_size=nnz))
                       for s in shape], dtype=index_dtype).reshape(ndim, nnz)
    values = np.array(draw(st.lists(st.integers(-20, 20), min_size=nnz, max_size=nnz)),
                      dtype=dtype)
    dense = np.zeros(shape, dtype=dtype)
    np.add.at(dense, tuple(coords), values)
    return asp.SparseCOO(coords, values, shape), dense


def orders(ndim: int) -> st.SearchStrategy[tuple[int, ...]]:
    return st.permutations(list(range(ndim))).map(tuple)


@given(coo_tensors(), st.data())
def test_coo_to_csf_any_axis_order_round_trips(case: tuple[Any, np.ndarray],
                                               data: st.DataObject) -> None:
    coo, dense = case
    np.testing.assert_array_equal(coo.to_dense(), dense)
    order = data.draw(orders(coo.ndim))
    csf = coo.to_csf(order)
    assert csf.nnz == coo.nnz
    np.testing.assert_array_equal(csf.to_dense(), dense)
    np.testing.assert_array_equal(csf.to_coo().to_dense(), dense)
    canon = csf.canonical()
    assert canon.is_canonical and canon.axis_order == order
    np.testing.assert_array_equal(canon.to_dense(), dense)
    np.testing.assert_array_equal(asp.SparseCSF.from_dense(dense, order).to_dense(), dense)


@given(coo_tensors(min_ndim=2, max_ndim=2, max_dim=7), st.data())
def test_dense_coo_csr_csf_dense(case: tuple[Any, np.ndarray], data: st.DataObject) -> None:
    coo, dense = case
    csr = coo.to_csr()
    np.testing.assert_array_equal(csr.to_dense(), dense)
    order = data.draw(orders(2))
    csf = csr.to_csf(order)
    np.testing.assert_array_equal(csf.to_dense(), dense)
    for y in [csf.to_csr(), csf.to_csc(), csr.to_csc(), csr.to_csc().to_csr(), csf.to_coo()]:
        np.testing.assert_array_equal(y.to_dense(), dense)
    np.testing.assert_array_equal(asp.SparseCSR.from_dense(dense).to_dense(), dense)
    np.testing.assert_array_equal(csr.canonical().to_dense(), dense)
    assert csr.canonical().is_canonical


@given(coo_tensors())
def test_canonical_is_sorted_distinct_and_idempotent(case: tuple[Any, np.ndarray]) -> None:
    coo, dense = case
    canon = coo.canonical()
    assert canon.is_canonical
    np.testing.assert_array_equal(canon.to_dense(), dense)
    flat = np.ravel_multi_index(tuple(canon.indices), coo.shape) if canon.nnz else np.zeros(0)
    assert (np.diff(flat) > 0).all()
    assert canon.canonical() is canon
    assert canon.dtype == coo.dtype
    expected_nnz = len(np.unique(np.ravel_multi_index(tuple(coo.indices), coo.shape))) \
        if coo.nnz else 0
    assert canon.nnz == expected_nnz


@given(coo_tensors(min_ndim=2), st.data())
def test_arrow_round_trips(case: tuple[Any, np.ndarray], data: st.DataObject) -> None:
    coo, dense = case
    back = asp.SparseCOO.from_arrow(coo.to_arrow())
    np.testing.assert_array_equal(back.to_dense(), dense)
    order = data.draw(orders(coo.ndim))
    csf = coo.to_csf(order)
    np.testing.assert_array_equal(asp.SparseCSF.from_arrow(csf.to_arrow(), order).to_dense(),
                                  dense)
    if coo.ndim == 2:
        for m in [coo.to_csr(), coo.to_csc()]:
            np.testing.assert_array_equal(type(m).from_arrow(m.to_arrow()).to_dense(), dense)


@given(coo_tensors(max_ndim=3), st.data())
def test_sum_multiply_transpose_match_numpy(case: tuple[Any, np.ndarray],
                                            data: st.DataObject) -> None:
    coo, dense = case
    order = data.draw(orders(coo.ndim))
    for x in [coo, coo.to_csf(order)]:
        assert x.sum() == dense.sum()
        for axis in range(coo.ndim):
            np.testing.assert_array_equal(x.sum(axis), dense.sum(axis))
        np.testing.assert_array_equal(x.multiply(3).to_dense(), dense * 3)
        other = np.arange(1, coo.shape[-1] + 1, dtype=np.int64)
        np.testing.assert_array_equal(x.multiply(other).to_dense(), dense * other)
        axes = data.draw(orders(coo.ndim))
        np.testing.assert_array_equal(x.transpose(axes).to_dense(), np.transpose(dense, axes))


@given(coo_tensors(min_ndim=2, max_ndim=2, max_dim=8), st.integers(1, 5))
def test_matmul_matches_numpy(case: tuple[Any, np.ndarray], k: int) -> None:
    coo, dense = case
    other = np.arange(coo.shape[1] * k, dtype=dense.dtype).reshape(coo.shape[1], k) % 7
    for m in [coo.to_csr(), coo.to_csc()]:
        np.testing.assert_allclose(m @ other, dense @ other, rtol=1e-5)
        np.testing.assert_allclose(other.T @ m.T, other.T @ dense.T, rtol=1e-5)


@given(coo_tensors(min_ndim=2, max_ndim=4), st.data())
def test_csf_sub_fibres_match_dense(case: tuple[Any, np.ndarray], data: st.DataObject) -> None:
    coo, dense = case
    order = data.draw(orders(coo.ndim))
    csf = coo.to_csf(order)
    outer = order[0]
    size = coo.shape[outer]
    if size:
        i = data.draw(st.integers(-size, size - 1))
        np.testing.assert_array_equal(csf[i].to_dense(), np.take(dense, i, axis=outer))
    a, b = sorted(data.draw(st.lists(st.integers(0, size), min_size=2, max_size=2)))
    np.testing.assert_array_equal(csf[a:b].to_dense(),
                                  np.take(dense, range(a, b), axis=outer))


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


@given(list_arrays(dtype=np.dtype(np.float64), levels=2, null_rows=False))
def test_nested_jagged_csf_round_trip(case: Any) -> None:
    arr, rows = case
    j = asp.Jagged.from_arrow(arr)
    csf = asp.SparseCSF.from_jagged(j)
    assert csf.indptr[0] is j.offsets
    assert csf.to_jagged().to_list() == rows
    expected = np.zeros(csf.shape)
    for r, row in enumerate(rows):
        for p, inner in enumerate(row):
            expected[r, p, :len(inner)] = inner
    np.testing.assert_array_equal(csf.to_dense(), expected)


@given(list_arrays(dtype=np.dtype(np.int64), levels=2, null_rows=True, null_values=True))
def test_nested_jagged_with_nulls_stores_only_valid_elements(case: Any) -> None:
    arr, rows = case
    csf = asp.SparseCSF.from_jagged(asp.Jagged.from_arrow(arr))
    expected = {}
    for r, row in enumerate(rows):
        for p, inner in enumerate(row or []):
            for q, value in enumerate(inner or []):
                if value is not None:
                    expected[(r, p, q)] = value
    coo = csf.to_coo()
    got = {tuple(int(c) for c in coo.indices[:, n]): int(coo.values[n]) for n in range(coo.nnz)}
    assert got == expected

