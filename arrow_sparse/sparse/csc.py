"""``SparseCSC``: a compressed sparse column matrix (the column twin of ``SparseCSR``).

``indptr`` compresses the columns and ``indices`` holds row ids; everything but the
exporters and column slicing is shared with :class:`SparseCSR` (``_Compressed``), and
``csc.T`` is a :class:`SparseCSR` over the same buffers.
"""

from __future__ import annotations

from typing import Any

from ..errors import ArrowSparseTypeError
from . import _interop
from .csr import _Compressed

__all__ = ["SparseCSC"]


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

    def __getitem__(self, key: Any) -> SparseCSC:
        """Columns ``a:b`` (``csc[:, a:b]``) as a view sharing every buffer."""
        if not (isinstance(key, tuple) and len(key) == 2 and key[0] == slice(None)
                and isinstance(key[1], slice)):
            msg = ("SparseCSC: columns are selected with csc[:, a:b]; "
                   "convert with to_csr() to slice rows")
            raise ArrowSparseTypeError(msg)
        return self._major_slice(key[1])  # type: ignore[no-any-return]

    def to_arrow(self) -> Any:
        """Convert to a ``pyarrow.SparseCSCMatrix``.

        Returns
        -------
        pyarrow.SparseCSCMatrix
            Shares the buffers when ``indptr`` and ``indices`` are int64 and ``indptr``
            starts at zero; otherwise int64 copies of them (values always shared).

        Examples
        --------
        >>> csc = asp.SparseCSC([0, 1, 1], [1], np.array([4.0]), (2, 2))
        >>> csc.to_arrow().to_tensor().to_numpy()
        array([[0., 0.],
               [4., 0.]])
        """
        self._on_host("to_arrow")
        return _interop.compressed_to_arrow("csc", *self._compact(), self.shape)

    def to_scipy(self, *, matrix: bool = False) -> Any:
        """Convert to a ``scipy.sparse.csc_array`` (or ``csc_matrix``).

        Parameters
        ----------
        matrix
            Return a ``csc_matrix`` instead of a ``csc_array``.

        Returns
        -------
        scipy.sparse.csc_array or scipy.sparse.csc_matrix
            Shares the buffers when ``indptr`` starts at zero and both index arrays
            have one dtype; copies otherwise.

        Raises
        ------
        ModuleNotFoundError
            scipy is not installed.

        Examples
        --------
        >>> csc = asp.SparseCSC([0, 1, 1], [1], np.array([4.0]), (2, 2))
        >>> csc.to_scipy().toarray()
        array([[0., 0.],
               [4., 0.]])
        """
        self._on_host("to_scipy")
        return _interop.to_scipy(self, matrix)

    def to_pydata_sparse(self) -> Any:
        """Convert to a pydata ``sparse.GCXS`` with ``compressed_axes=(1,)``.

        Returns
        -------
        sparse.GCXS
            Shares the buffers (``indptr`` of a slice is rebased: a copy).

        Raises
        ------
        ModuleNotFoundError
            pydata sparse is not installed.

        Examples
        --------
        >>> import sparse
        >>> csc = asp.SparseCSC([0, 1, 1], [1], np.array([4.0]), (2, 2))
        >>> s = csc.to_pydata_sparse()
        >>> isinstance(s, sparse.GCXS)
        True
        >>> s.todense()
        array([[0., 0.],
               [4., 0.]])
        """
        self._on_host("to_pydata_sparse")
        return _interop.to_pydata(self)

    def to_torch(self) -> Any:
        """Convert to a ``torch.sparse_csc_tensor`` (on the CPU).

        Returns
        -------
        torch.Tensor
            Shares the buffers when both index arrays have one dtype, are writable and
            ``indptr`` starts at zero; copies otherwise.

        Raises
        ------
        ModuleNotFoundError
            torch is not installed.

        Examples
        --------
        >>> import torch
        >>> csc = asp.SparseCSC([0, 1, 1], [1], np.array([4.0]), (2, 2))
        >>> t = csc.to_torch()
        >>> t.layout == torch.sparse_csc
        True
        >>> t.to_dense()
        tensor([[0., 0.],
                [4., 0.]], dtype=torch.float64)
        """
        self._on_host("to_torch")
        return _interop.to_torch(self)
