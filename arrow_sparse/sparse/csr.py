"""``SparseCSR``: a compressed sparse row matrix over numpy buffers."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as v
from ..errors import ArrowSparseValueError

__all__ = ["SparseCSR"]


class SparseCSR:
    """Compressed sparse row matrix: row ``i`` holds ``indices/values[indptr[i]:indptr[i+1]]``.

    Parameters
    ----------
    indptr
        Row pointers, ``rows + 1`` long, non-decreasing.
    indices
        Column index of each stored value, each in ``[0, shape[1])``.
    values
        Stored values, one per index.
    shape
        ``(rows, columns)``.

    Raises
    ------
    ValueError
        Malformed ``indptr`` or length mismatches.
    IndexError
        A column index out of range.

    Notes
    -----
    Repeated column indices in a row are allowed (not canonical); they add up when
    densified, as in scipy.

    Examples
    --------
    >>> m = asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([1.0, 2.0, 3.0]), (2, 3))
    >>> m
    SparseCSR(shape=(2, 3), nnz=3, dtype=float64)
    >>> m.to_dense()
    array([[1., 0., 2.],
           [0., 3., 0.]])
    """

    __slots__ = ("indices", "indptr", "shape", "values")

    def __init__(self, indptr: Any, indices: Any, values: Any, shape: tuple[int, int]) -> None:
        func = "SparseCSR"
        rows = v.check_count(func, "shape[0]", shape[0])
        cols = v.check_count(func, "shape[1]", shape[1])
        self.indptr = v.check_offsets(func, "indptr", indptr)
        if len(self.indptr) != rows + 1:
            msg = f"{func}: indptr has {len(self.indptr)} entries but shape needs {rows + 1}"
            raise ArrowSparseValueError(msg)
        self.indices = v.check_indices(func, "indices", indices, cols)
        self.values = v.as_values_array(func, "values", values)
        if not (len(self.indices) == len(self.values) >= self.indptr[-1]):
            msg = (f"{func}: indices ({len(self.indices)}) and values ({len(self.values)}) "
                   f"must have the same length, at least indptr[-1] = {self.indptr[-1]}")
            raise ArrowSparseValueError(msg)
        self.shape = (rows, cols)

    @property
    def nnz(self) -> int:
        """Number of stored entries."""
        return int(self.indptr[-1] - self.indptr[0])

    @property
    def dtype(self) -> np.dtype:
        """dtype of the stored values."""
        return self.values.dtype

    def to_dense(self) -> np.ndarray:
        """Dense ``[rows, columns]`` array; repeated entries add up.

        Returns
        -------
        numpy.ndarray
            A new array of the values dtype.

        Examples
        --------
        >>> asp.SparseCSR([0, 2], [1, 1], np.array([1, 2]), (1, 3)).to_dense()
        array([[0, 3, 0]])
        """
        out = np.zeros(self.shape, dtype=self.values.dtype)
        start, stop = int(self.indptr[0]), int(self.indptr[-1])
        rows = np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))
        np.add.at(out, (rows, self.indices[start:stop]), self.values[start:stop])
        return out

    def to_scipy(self) -> Any:
        """This matrix as a ``scipy.sparse.csr_array`` (shares the buffers when it can).

        Examples
        --------
        >>> asp.SparseCSR([0, 1], [2], np.array([5.0]), (1, 3)).to_scipy().toarray()
        array([[0., 0., 5.]])
        """
        import scipy.sparse

        start = int(self.indptr[0])
        return scipy.sparse.csr_array(
            (self.values[start:], self.indices[start:], self.indptr - start), shape=self.shape)

    def __repr__(self) -> str:
        return f"SparseCSR(shape={self.shape}, nnz={self.nnz}, dtype={self.dtype})"
