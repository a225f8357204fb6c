"""Tests of :class:`SparseCOO`: its constructor, checks, and its conversions' sorting.

What every format does (conversions, ``sum``, ``multiply`` ...) is in test_tensor.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import arrow_sparse as asp
from tests.sparse._helpers import POST_MATRIX


# ------------------------------------------------------------------ conversions: sorting
def test_sorted_coo_converts_without_copying() -> None:
    coo = asp.SparseCOO.from_dense(POST_MATRIX)
    csr = coo.to_csr()
    assert np.shares_memory(csr.indices, coo.indices)
    assert csr.values is coo.values
    csf = coo.to_csf()
    assert csf.values is coo.values


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


# ------------------------------------------------------------ constructor and validation
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
