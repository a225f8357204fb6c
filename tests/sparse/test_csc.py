"""Tests of :class:`SparseCSC`: column slices.

Everything else it shares with :class:`SparseCSR` (test_csr.py) or every format has
(test_tensor.py, parametrized over the formats).
"""

from __future__ import annotations

import numpy as np
import pytest

import arrow_sparse as asp
from tests.sparse._helpers import POST_MATRIX


def test_csc_column_slice_is_a_view() -> None:
    csc = asp.SparseCSC.from_dense(POST_MATRIX)
    part = csc[:, 2:5]
    np.testing.assert_array_equal(part.to_dense(), POST_MATRIX[:, 2:5])
    assert part.values is csc.values
    with pytest.raises(TypeError, match=r"^SparseCSC: columns are selected with csc\[:, j\] or "
                                        r"csc\[:, a:b\]"):
        csc[1:2]
    for j in range(-POST_MATRIX.shape[1], POST_MATRIX.shape[1]):
        column = csc[:, j]
        assert isinstance(column, asp.SparseCOO) and column.shape == (POST_MATRIX.shape[0],)
        np.testing.assert_array_equal(column.to_dense(), POST_MATRIX[:, j])
    with pytest.raises(IndexError, match=r"^SparseCSC: column 6 out of range for 6 columns$"):
        csc[:, 6]
