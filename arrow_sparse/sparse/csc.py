"""``SparseCSC``: a compressed sparse column matrix (the column twin of ``SparseCSR``).

``indptr`` compresses the columns and ``indices`` holds row ids; everything but the
exporters and column slicing is shared with :class:`SparseCSR` (``_Compressed``), and
``csc.T`` is a :class:`SparseCSR` over the same buffers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._docs import fill_doc
from ..errors import ArrowSparseTypeError
from . import _interop
from .csr import _CSR_DOC, _Compressed

__all__ = ["SparseCSC"]

#: What the docstrings of the writers say of a CSC (see ``_interop.TO_ARROW``): as of a
#: CSR, but for its name and example.
_CSC_DOC = {
    **_CSR_DOC, "build": "asp.SparseCSC([0, 1, 1], [1], np.array([4.0]), (2, 2))",
    "dense": "[[0.0, 0.0], [4.0, 0.0]]", "arrow": "SparseCSCMatrix", "kind": "csc",
    "layout": "csc",
}


class SparseCSC(_Compressed):
    """Compressed sparse column matrix: column ``j`` is ``indices/values[indptr[j]:indptr[j+1]]``.

    Parameters
    ----------
    indptr
        Column pointers, ``columns + 1`` long, non-decreasing; may start above zero.
    indices
        Row index of each stored value, each in ``[0, shape[0])``.
    values
        Stored values, one per index.
    shape
        ``(rows, columns)``.
    validate
        Check ``indptr`` and every addressed row index (O(nnz)).

    Raises
    ------
    ValueError
        Malformed ``indptr`` or length mismatches.
    IndexError
        A row index out of range.
    TypeError
        Non-integer ``indptr``/``indices`` or non-numeric values.

    See Also
    --------
    SparseCSR : The row-compressed twin (``csc.T`` is one, zero-copy).

    Notes
    -----
    The constructor copies nothing. ``csc[:, a:b]`` selects columns as a view.

    Examples
    --------
    The post's 4x6 matrix by columns:

    >>> csc = asp.SparseCSC([0, 1, 3, 4, 6, 7, 8], [0, 0, 1, 2, 1, 2, 2, 3],
    ...                     np.array([10, 20, 30, 50, 40, 60, 70, 80]), (4, 6))
    >>> csc
    SparseCSC(shape=(4, 6), nnz=8, dtype=int64)
    >>> csc[:, 1:2].to_dense().ravel()
    array([20, 30,  0,  0])
    """

    __slots__ = ()
    format = "csc"
    _major = 1

    def __getitem__(self, key: Any) -> Any:
        """Column ``j`` (``csc[:, j]``: a 1-D :class:`SparseCOO`) or columns ``a:b`` (a view).

        ``csc[:, a:b]`` shares every buffer (only ``indptr`` is sliced); ``csc[:, j]``
        views the column's indices and values.

        Examples
        --------
        >>> m = asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([1.0, 2.0, 3.0]), (2, 3)).to_csc()
        >>> m[:, 2].to_dense()
        array([2., 0.])
        """
        if isinstance(key, tuple) and len(key) == 2 and key[0] == slice(None):
            column = key[1]
            if isinstance(column, (int, np.integer)) and not isinstance(column, (bool, np.bool_)):
                return self._major_line(column)
            if isinstance(column, slice):
                return self._major_slice(column)
        msg = ("SparseCSC: columns are selected with csc[:, j] or csc[:, a:b]; convert with "
               "to_csr() to select rows")
        raise ArrowSparseTypeError(msg)

    @fill_doc(_interop.TO_ARROW, **_CSC_DOC)
    def to_arrow(self) -> Any:
        """Convert to a ``pyarrow.SparseCSCMatrix``."""
        self._on_host("to_arrow")
        return _interop.compressed_to_arrow("csc", *self._compact(), self.shape)

    @fill_doc(_interop.TO_SCIPY, **_CSC_DOC)
    def to_scipy(self, *, matrix: bool = False) -> Any:
        """Convert to a ``scipy.sparse.csc_array`` (or ``csc_matrix``)."""
        self._on_host("to_scipy")
        return _interop.to_scipy(self, matrix)

    @fill_doc(_interop.TO_PYDATA, **_CSC_DOC)
    def to_pydata_sparse(self) -> Any:
        """Convert to a pydata ``sparse.GCXS`` with ``compressed_axes=(1,)``."""
        self._on_host("to_pydata_sparse")
        return _interop.to_pydata(self)

    @fill_doc(_interop.TO_TORCH, **_CSC_DOC)
    def to_torch(self) -> Any:
        """Convert to a ``torch.sparse_csc_tensor`` (on the CPU)."""
        self._on_host("to_torch")
        return _interop.to_torch(self)
