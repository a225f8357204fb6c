"""Tests of :class:`SparseCSF`: the post's fibres, axis orders, sub-fibres, the
constructor's checks and nested Jagged levels (``from_jagged``, ``to_jagged``).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from tests._strategies import list_arrays
from tests.sparse._helpers import (
    POST_COORDS,
    POST_SHAPE,
    POST_TENSOR_VALUES,
    assert_dense_equal,
    assert_same,
    coo_tensors,
    flatten,
    host,
    make,
    on,
    orders,
    post_tensor,
    random_dense,
)


# ------------------------------------------------------------ the post's worked examples
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
    # A sub-fibre's values are its own (issue 18), viewed without a copy:
    assert len(csf[1].values) == csf[1].nnz == 5
    assert np.shares_memory(csf[1].values, csf.values)
    assert [len(i) for i in csf[1].indices] == [2, 3, 5]


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


# -------------------------------------------------------- axis orders and canonical form
@pytest.mark.hypothesis
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


# ---------------------------------------------------------------------------- sub-fibres
def host_shares_memory(a: Any, b: Any) -> bool:
    """Whether two arrays (numpy, or device arrays of one buffer) overlap in memory."""
    if isinstance(a, np.ndarray):
        return bool(np.shares_memory(a, b)) or len(a) == 0
    import cupy

    return bool(cupy.may_share_memory(a, b)) or len(a) == 0


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_csf_sub_fibres_match_dense(order: tuple[int, ...], backend: str) -> None:
    dense = random_dense((4, 3, 5), np.float64, seed=7)
    dense[1] = 0
    csf = make("csf", dense, order, backend)
    outer = order[0]
    for i in range(-dense.shape[outer], dense.shape[outer]):
        sub = csf[i]
        assert_dense_equal(sub, np.take(dense, i, axis=outer), backend)
        assert len(sub.values) == sub.nnz  # its own values, a view of the parent's
        assert host_shares_memory(sub.values, csf.values)
    for a, b in [(0, 2), (1, 3), (2, 2), (1, None)]:
        part = csf[a:b]
        expected = np.take(dense, range(dense.shape[outer])[a:b], axis=outer)
        assert_dense_equal(part, expected, backend)
        assert part.axis_order == order
        assert len(part.values) == part.nnz
        assert host_shares_memory(part.values, csf.values)


@pytest.mark.hypothesis
@given(coo_tensors(min_ndim=2, max_ndim=4), st.data())
def test_csf_sub_fibres_match_dense_property(case: tuple[Any, np.ndarray],
                                             data: st.DataObject) -> None:
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


# ------------------------------------------------------------ constructor and validation
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


# ------------------------------------------------------------------------- nested Jagged
def test_csf_from_jagged_levels_are_offsets() -> None:
    j = asp.Jagged.from_list([[[1.0, 2.0], [3.0]], [], [[4.0, 5.0, 6.0]], [[], [7.0]]])
    csf = asp.SparseCSF.from_jagged(j)
    assert csf.shape == (4, 2, 3)
    inner: Any = j.values
    assert csf.indptr[0] is j.offsets and csf.indptr[1] is inner.offsets
    assert csf.values is j.leaf_values
    assert [i.tolist() for i in csf.indices] == [[0, 1, 2, 3], [0, 1, 0, 0, 1],
                                                 [0, 1, 0, 0, 1, 2, 0]]
    np.testing.assert_array_equal(csf.to_dense(), j.to_padded(pad_value=0.0))
    assert not csf.is_canonical  # row 1 and the list [] have no children
    back = csf.to_jagged()
    assert back.to_list() == j.to_list()
    back_inner: Any = back.values
    assert back.offsets is j.offsets and back_inner.offsets is inner.offsets
    assert back.leaf_values is j.leaf_values


def test_csf_from_sliced_jagged_keeps_offsets_above_zero() -> None:
    arr = pa.array([[[9.0]], [[1.0, 2.0], [3.0]], [[4.0]]],
                   type=pa.large_list(pa.list_(pa.float64())))
    j = asp.Jagged.from_arrow(arr.slice(1))
    assert j.offsets[0] > 0
    csf = asp.SparseCSF.from_jagged(j)
    assert csf.indptr[0] is j.offsets
    np.testing.assert_array_equal(csf.to_dense(), j.to_padded(pad_value=0.0))
    assert csf.to_jagged().to_list() == [[[1.0, 2.0], [3.0]], [[4.0]]]
    t = csf.to_arrow()  # compacted for pyarrow
    np.testing.assert_array_equal(t.to_tensor().to_numpy(), csf.to_dense())


def test_csf_from_jagged_one_level_is_a_matrix() -> None:
    j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
    csf = asp.SparseCSF.from_jagged(j, shape=(3, 5))
    assert csf.shape == (3, 5)
    np.testing.assert_array_equal(csf.to_dense(), j.to_padded(max_length=5))
    csr = csf.to_csr()
    assert csr.indices is csf.indices[1]
    assert csf.to_jagged().to_list() == j.to_list()


def test_csf_from_jagged_skips_nulls() -> None:
    j = asp.Jagged.from_list([[[1.0, None], None], None, [[4.0]]])
    csf = asp.SparseCSF.from_jagged(j)
    assert csf.shape == (3, 2, 2)
    assert csf.nnz == 2
    expected = np.zeros((3, 2, 2))
    expected[0, 0, 0], expected[2, 0, 0] = 1.0, 4.0
    np.testing.assert_array_equal(csf.to_dense(), expected)


def test_csf_jagged_errors() -> None:
    j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7]])
    with pytest.raises(TypeError, match=r"^SparseCSF.from_jagged: expected a Jagged, got list"):
        asp.SparseCSF.from_jagged([[1, 2]])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^SparseCSF.from_jagged: shape\[1\] = 3 is smaller than "
                                         r"the longest list there \(4\)"):
        asp.SparseCSF.from_jagged(j, shape=(2, 3))
    with pytest.raises(ValueError, match=r"^SparseCSF.from_jagged: shape must have 2 dimensions"):
        asp.SparseCSF.from_jagged(j, shape=(2, 3, 4))
    vectors = asp.Jagged(np.ones((3, 2)), [0, 1, 3])
    with pytest.raises(TypeError, match=r"^SparseCSF.from_jagged: the leaf values must be "
                                        r"scalars"):
        asp.SparseCSF.from_jagged(vectors)
    with pytest.raises(ValueError, match=r"^SparseCSF.to_jagged: a 1-d tensor has no pointer"):
        asp.SparseCSF.from_dense(np.ones(3)).to_jagged()


def test_random_nested_jagged_to_csf_matches_padding() -> None:
    rng = np.random.default_rng(9)
    for _ in range(20):
        rows = [[list(rng.integers(1, 9, rng.integers(0, 4)).astype(float))
                 for _ in range(rng.integers(0, 4))] for _ in range(rng.integers(1, 6))]
        j = asp.Jagged.from_list(rows, dtype=np.float64)
        csf = asp.SparseCSF.from_jagged(j)
        np.testing.assert_array_equal(csf.to_dense(), j.to_padded(pad_value=0.0))
        assert csf.to_jagged().to_list() == rows


@pytest.mark.hypothesis
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


@pytest.mark.hypothesis
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


def test_jaggeds_on_the_device(cp: Any) -> None:
    host = asp.Jagged.from_list([[[1.0, 2.0], [3.0]], [], [[4.0, 5.0, 6.0]]])
    csf = asp.SparseCSF.from_jagged(host.to_device("cuda"))
    assert csf.device == "cuda:0" and csf.indptr[0] is csf.to_jagged().offsets
    assert_same(tuple(flatten(csf.to_device("cpu"))),
                tuple(flatten(asp.SparseCSF.from_jagged(host))))
    assert csf.to_jagged().to_list() == host.to_list()
    nulls = asp.Jagged.from_list([[[1.0, None], None], None, [[4.0, 5.0, 6.0]]])
    got = asp.SparseCSF.from_jagged(nulls.to_device("cuda"), shape=(3, 2, 4))
    assert_same(tuple(flatten(got.to_device("cpu"))),
                tuple(flatten(asp.SparseCSF.from_jagged(nulls, shape=(3, 2, 4)))))
    csr = asp.SparseCSR.from_dense(np.array([[0, 1], [2, 3]])).to_device("cuda")
    ids, weights = csr.to_jagged()
    assert (ids.device, ids.to_list(), weights.to_list()) == ("cuda:0", [[1], [0, 1]],
                                                              [[1], [2, 3]])
