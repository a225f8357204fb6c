"""``SparseCOO``: an N-d sparse tensor as coordinate lists (``indices[ndim, nnz]``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _validate as v
from .._backend import array_module, device_checks, get_kernel, module_of
from .._docs import fill_doc
from ..errors import ArrowSparseValueError
from . import _common as cm
from . import _interop
from . import _levels as lv
from ._levels import build_levels
from .tensor import _MULTIPLY, _SUM, SparseTensor

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["SparseCOO"]

#: What the docstrings of the readers and writers say of COO (see ``_interop.TO_ARROW``).
_COO_DOC = {
    "name": "SparseCOO", "returns_type": "SparseCOO", "more_params": "",
    "scipy_accepts": "A ``scipy.sparse`` array or matrix; COO ones (also n-d) are read "
                     "directly, other formats are converted.",
    "scipy_shares": "``values`` is a view of ``matrix.data`` for COO input; ``indices`` is a "
                    "new ``[ndim, nnz]`` array (scipy keeps one array per dimension).",
    "scipy_input": "scipy.sparse.coo_array(np.eye(2))",
    "pydata_accepts": "A ``sparse.COO``, ``sparse.GCXS`` or ``sparse.DOK`` with fill value 0.",
    "pydata_shares": "For ``sparse.COO``: views of its ``coords`` and ``data``.",
    "pydata_input": "sparse.COO.from_numpy(np.eye(2))",
    "torch_accepts": "A ``torch.Tensor`` on the CPU with layout ``sparse_coo``, ``sparse_csr``, "
                     "``sparse_csc`` or ``strided`` (dense), without dense (hybrid) value "
                     "dimensions.",
    "torch_shares": "For ``sparse_coo``: views of its (possibly uncoalesced) indices and values.",
    "torch_input": "torch.eye(2).to_sparse()",
    "build": "asp.SparseCOO([[0, 1], [1, 0]], np.array([1.0, 2.0]), (2, 2))",
    "dense": "[[0.0, 1.0], [2.0, 0.0]]",
    "arrow": "SparseCOOTensor",
    "arrow_shares": "Shares ``values`` (bools are viewed as uint8, pyarrow's choice). pyarrow "
                    "wants int64 coordinates laid out ``[nnz, ndim]`` row-major: the indices are "
                    "shared when they are the transpose of such an array (as :meth:`from_arrow` "
                    "gives them) and copied otherwise (the usual ``[ndim, nnz]`` C-ordered "
                    "array).",
    "arrow_raises": "",
    "kind": "coo", "matrix_2d": " (2-d only)",
    "scipy_out": "Shares the values and one index row per dimension (views, no copy).",
    "scipy_raises": "ValueError\n    ``matrix=True`` for a tensor that is not 2-d.\n",
    "pydata": "COO",
    "pydata_out": "Shares indices and values when canonical; otherwise pydata sorts and sums "
                  "them (copies).",
    "layout": "coo",
    "torch_out": "Shares the values; the indices are shared when they are C-ordered int64 and "
                 "copied otherwise (torch wants int64). Read-only buffers (from Arrow) are "
                 "copied, since torch tensors are writable. Marked coalesced when canonical.",
}


class SparseCOO(SparseTensor):
    """Sparse tensor of any number of dimensions as coordinate lists.

    Entry ``p`` holds ``values[p]`` at coordinates ``indices[:, p]``: one row of
    ``indices`` per dimension, one column per stored entry (scipy, pydata ``sparse``
    and torch use this layout; pyarrow stores its transpose).

    Parameters
    ----------
    indices
        Integer coordinates ``[ndim, nnz]``; row ``k`` must lie in ``[0, shape[k])``.
        int32 and int64 are kept as given; other integer dtypes are widened to int64.
    values
        1-D bool, integer or float values, ``nnz`` long.
    shape
        The dense shape (at least one dimension).
    validate
        Check every coordinate against ``shape`` (O(nnz)). Leave True unless the
        coordinates are known good.

    Raises
    ------
    ValueError
        ``indices`` not 2-D, a row count other than ``len(shape)``, or a length mismatch.
    IndexError
        A coordinate outside the shape.
    TypeError
        Non-integer indices, or non-numeric values.

    See Also
    --------
    SparseCSR, SparseCSC, SparseCSF : The compressed formats.
    SparseCOO.canonical : Sort and sum duplicates.

    Notes
    -----
    The constructor copies nothing. Coordinates may be in any order and repeat (their
    values add up, as in scipy); the *canonical* form is sorted lexicographically
    (row-major) without duplicates. Explicit zeros are kept.

    CuPy ``indices`` and ``values`` make a tensor on their CUDA device (see
    :meth:`to_device`): the coordinates are then checked by a device kernel, without
    a synchronisation, and a coordinate outside the shape is raised by the next check
    (e.g. :meth:`validate`) as ``"SparseCOO: indices out of range of the dimension
    (first at position p; found by a device check, ...)"``, ``p`` being the entry.

    Examples
    --------
    The 4-d tensor of the Compressed Sparse Fibers post (its coordinates start at 1,
    kept as they are, so index 0 of every dimension is empty):

    >>> indices = np.array([[1, 1, 1, 1, 1, 2, 2, 2],
    ...                     [1, 1, 2, 2, 2, 2, 2, 2],
    ...                     [1, 1, 1, 1, 2, 2, 2, 2],
    ...                     [2, 3, 1, 3, 1, 1, 3, 2]])
    >>> coo = asp.SparseCOO(indices, np.arange(1.0, 9.0), (3, 3, 3, 4))
    >>> coo
    SparseCOO(shape=(3, 3, 3, 4), nnz=8, dtype=float64)
    >>> coo.is_canonical  # the last three entries are not sorted
    False
    >>> coo.to_dense()[2, 2, 2]
    array([0., 6., 8., 7.])
    """

    __slots__ = ("_canonical", "indices", "shape", "values")
    format = "coo"

    def __init__(self, indices: Any, values: Any, shape: Any, *, validate: bool = True) -> None:
        func = "SparseCOO"
        xp = array_module(func, indices=indices, values=values)
        validate = v.check_bool(func, "validate", validate)
        dims = v.check_shape(func, shape)
        idx = v.as_sparse_indices(func, "indices", indices, ndim=2)
        vals = v.as_sparse_values(func, values)
        if idx.shape[0] != len(dims):
            msg = (f"{func}: indices has {idx.shape[0]} rows but shape {dims} has "
                   f"{len(dims)} dimensions")
            raise ArrowSparseValueError(msg)
        if idx.shape[1] != len(vals):
            msg = f"{func}: indices has {idx.shape[1]} columns but there are {len(vals)} values"
            raise ArrowSparseValueError(msg)
        self.indices: np.ndarray = idx
        self.values: np.ndarray = vals
        self.shape: tuple[int, ...] = dims
        self._canonical: bool | None = None
        if validate:
            self._check()
            device_checks(func, xp)

    @classmethod
    def _new(cls, indices: np.ndarray, values: np.ndarray, shape: tuple[int, ...],
             canonical: bool | None = None) -> SparseCOO:
        out = cls.__new__(cls)
        out.indices = indices if indices.dtype in v.INDEX_DTYPES else indices.astype(np.int64)
        out.values = values
        out.shape = shape
        out._canonical = canonical
        return out

    def _map(self, fn: Any) -> SparseCOO:
        return SparseCOO._new(fn(self.indices), fn(self.values), self.shape, self._canonical)

    def _rows(self) -> list[np.ndarray]:
        """One coordinate array per dimension (views of the rows of ``indices``)."""
        return [self.indices[k] for k in range(self.ndim)]

    # ----------------------------------------------------------------- properties
    @property
    def nnz(self) -> int:
        """Number of stored entries (explicit zeros and duplicates included).

        Examples
        --------
        >>> asp.SparseCOO([[0, 0]], np.array([1, 2]), (3,)).nnz
        2
        """
        return int(self.indices.shape[1])

    @property
    def is_canonical(self) -> bool:
        """Whether the coordinates are sorted row-major and distinct (O(nnz), cached).

        On the device the answer is read back: one synchronisation for a matrix, up
        to one per dimension and one more beyond.

        Examples
        --------
        >>> asp.SparseCOO([[0, 2]], np.array([1, 2]), (3,)).is_canonical
        True
        >>> asp.SparseCOO([[2, 0]], np.array([1, 2]), (3,)).is_canonical
        False
        """
        if self._canonical is None:
            self._canonical = cm.lex_order(self._rows(), "SparseCOO.is_canonical")[1]
        return self._canonical

    def validate(self) -> SparseCOO:
        """Check every coordinate against the shape (O(nnz)); return self.

        Returns
        -------
        SparseCOO
            ``self``, so calls chain.

        Raises
        ------
        IndexError
            The first coordinate outside the shape, by dimension then position (on
            the device: the first entry holding one, found by a check kernel; this
            waits for it, a synchronisation).

        Examples
        --------
        >>> coo = asp.SparseCOO([[0, 5]], np.array([1.0, 2.0]), (6,))
        >>> coo.validate().nnz
        2
        """
        self._check()
        device_checks("SparseCOO.validate", self.xp, wait=True)
        return self

    def _check(self) -> None:
        for axis, size in enumerate(self.shape):
            v.check_in_range("SparseCOO", f"indices[{axis}]", self.indices[axis], size)

    # --------------------------------------------------------------- constructors
    @classmethod
    def from_dense(cls, dense: Any) -> SparseCOO:
        """Canonical COO of the nonzero entries of a dense array.

        Parameters
        ----------
        dense
            Numeric array of at least one dimension (NaN counts as nonzero).

        Returns
        -------
        SparseCOO
            Canonical (row-major, distinct); int64 indices; new arrays (on the device
            of a CuPy input).

        Raises
        ------
        ValueError
            A 0-d input.
        TypeError
            Non-numeric input.

        See Also
        --------
        numpy.nonzero : The coordinates it stores.

        Notes
        -----
        On the device: one synchronisation (``nonzero`` reads the number of entries).

        Examples
        --------
        >>> coo = asp.SparseCOO.from_dense(np.array([[10, 20, 0], [0, 30, 0]]))
        >>> coo.indices
        array([[0, 0, 1],
               [0, 1, 1]])
        >>> coo.values
        array([10, 20, 30])
        """
        func = "SparseCOO.from_dense"
        arr = cm.dense_operand(func, "dense", dense)
        shape = v.check_shape(func, arr.shape)
        nz = cm.nonzero(func, arr)
        indices = module_of(arr).stack(nz).astype(np.int64, copy=False)
        return cls._new(indices, arr[nz], shape, canonical=True)

    @classmethod
    def from_arrow(cls, tensor: Any) -> SparseCOO:
        """Wrap a pyarrow ``SparseCOOTensor`` (zero-copy), or convert another pyarrow tensor.

        Parameters
        ----------
        tensor
            ``pyarrow.SparseCOOTensor`` (wrapped), ``SparseCSRMatrix``,
            ``SparseCSCMatrix``, ``SparseCSFTensor`` (read with pyarrow's default axis
            order: dimensions sorted by size) or a dense ``pyarrow.Tensor``.

        Returns
        -------
        SparseCOO
            From a ``SparseCOOTensor``: ``values`` and ``indices`` are views of its
            buffers (``indices`` is the transposed ``[ndim, nnz]`` view of pyarrow's
            row-major ``[nnz, ndim]`` coordinates). Other inputs are converted (copies).

        Raises
        ------
        TypeError
            Not a pyarrow tensor.
        IndexError
            A coordinate outside the shape (pyarrow does not check).

        See Also
        --------
        SparseCOO.to_arrow : The inverse.

        Examples
        --------
        >>> t = pa.SparseCOOTensor.from_dense_numpy(np.array([[0.0, 1.0], [2.0, 0.0]]))
        >>> asp.SparseCOO.from_arrow(t).indices
        array([[0, 1],
               [1, 0]])
        """
        return cls._from_any("SparseCOO.from_arrow",  # type: ignore[no-any-return]
                             _interop.from_arrow("SparseCOO.from_arrow", tensor))

    @classmethod
    @fill_doc(_interop.FROM_SCIPY, **_COO_DOC)
    def from_scipy(cls, matrix: Any) -> SparseCOO:
        """Read a scipy.sparse array or matrix (any format)."""
        return cls._from_any("SparseCOO.from_scipy",  # type: ignore[no-any-return]
                             _interop.from_scipy("SparseCOO.from_scipy", matrix))

    @classmethod
    @fill_doc(_interop.FROM_PYDATA, **_COO_DOC)
    def from_pydata_sparse(cls, array: Any) -> SparseCOO:
        """Read a pydata ``sparse`` array (``COO`` zero-copy; ``GCXS``/``DOK`` converted)."""
        return cls._from_any("SparseCOO.from_pydata_sparse",  # type: ignore[no-any-return]
                             _interop.from_pydata("SparseCOO.from_pydata_sparse", array))

    @classmethod
    @fill_doc(_interop.FROM_TORCH, **_COO_DOC)
    def from_torch(cls, tensor: Any) -> SparseCOO:
        """Read a CPU torch tensor (sparse COO zero-copy; CSR/CSC/strided converted)."""
        return cls._from_any("SparseCOO.from_torch",  # type: ignore[no-any-return]
                             _interop.from_torch("SparseCOO.from_torch", tensor))

    # ---------------------------------------------------------------- exporters
    @cm.checked
    def to_dense(self) -> np.ndarray:
        """Dense array of ``shape``; repeated coordinates add up (bools: logical or).

        Returns
        -------
        numpy.ndarray
            A new C-ordered array of the values dtype (a CuPy array on the device:
            no synchronisation; repeated float coordinates add in atomic order).

        Examples
        --------
        >>> asp.SparseCOO([[0, 2, 0]], np.array([1, 2, 3]), (3,)).to_dense()
        array([4, 0, 2])
        """
        v.check_nbytes("SparseCOO.to_dense", f"the dense array of shape {self.shape}",
                       self.shape, self.values.itemsize)
        return scatter_dense(self._rows(), self.values, self.shape)

    def to_coo(self) -> SparseCOO:
        """Return self (already COO).

        Examples
        --------
        >>> coo = asp.SparseCOO([[1]], np.array([1.0]), (2,))
        >>> coo.to_coo() is coo
        True
        """
        return self

    def _sorted(self, order: Sequence[int]) -> tuple[list[np.ndarray], np.ndarray]:
        """Coordinates (in ``order``) and values sorted lexicographically; views if sorted."""
        return cm.sorted_coords([self.indices[a] for a in order], [self.shape[a] for a in order],
                               self.values)

    def _compressed(self, major: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(indptr, minor, values)`` of a 2-d COO sorted by (major, minor), stably.

        Views of the minor row and the values when already sorted; otherwise two
        stable counting sorts (by minor, then by major index) or, for a very wide minor
        axis, a counting sort by major index and a sort of every line (copies).
        """
        keys = [self.indices[major], self.indices[1 - major]]
        v.check_nbytes(f"SparseCOO.to_{'csr' if major == 0 else 'csc'}",
                       f"the pointers of shape {self.shape}", self.shape[major] + 1, 8)
        xp = self.xp
        if xp is np and cm.lex_order(keys)[0]:  # on the device the check would synchronise
            return _counts_to_indptr(keys[0], self.shape[major]), keys[1], self.values
        num_minor = self.shape[1 - major]
        return get_kernel("sparse", "coo_to_compressed", xp)(  # type: ignore[no-any-return]
            keys[0], keys[1], self.values, self.shape[major],
            num_minor if cm.counting_range(num_minor, self.nnz) else None)

    def _check_2d(self, func: str) -> None:
        if self.ndim != 2:
            msg = f"{func}: needs a 2-d tensor, got shape {self.shape}"
            raise ArrowSparseValueError(msg)

    @cm.checked
    def to_csr(self) -> SparseTensor:
        """Compressed sparse rows: entries sorted by (row, column), or row-major when N-d.

        Returns
        -------
        SparseCSR
            An N-d tensor compresses its first dimension and keeps the others as
            ``indices`` ``[ndim - 1, nnz]`` (sorted row-major: new arrays).
            Duplicates are kept as repeated entries (use :meth:`canonical` to sum them).
            When the COO is already sorted the column indices and values are views;
            otherwise they are copied by a counting sort on rows, then every row's
            columns are sorted (in parallel), as scipy's ``tocsr`` + ``sort_indices``.
            On the device: always sorted (a histogram of the rows and a stable radix
            sort), without synchronisation.

        Raises
        ------
        ValueError
            The tensor is 1-d.

        Examples
        --------
        Row ``i`` of the post's 4x6 matrix:

        >>> coo = asp.SparseCOO([[0, 0, 1, 1, 2, 2, 2, 3], [0, 1, 1, 3, 2, 3, 4, 5]],
        ...                     np.arange(10, 90, 10), (4, 6))
        >>> csr = coo.to_csr()
        >>> csr.indptr, csr.indices
        (array([0, 2, 4, 7, 8]), array([0, 1, 1, 3, 2, 3, 4, 5]))
        """
        if self.ndim > 2:  # compress the first dimension, keep the others per entry
            keys, vals = self._sorted(tuple(range(self.ndim)))
            return self._format("csr")._from_sorted(keys, vals, self.shape,  # type: ignore[no-any-return]
                                                    self._canonical or None)
        self._check_2d("SparseCOO.to_csr")
        indptr, cols, vals = self._compressed(0)
        csr: SparseTensor = self._format("csr")._new(indptr, cols, vals, self.shape,
                                                     self._canonical or None)
        return csr

    @cm.checked
    def to_csc(self) -> SparseTensor:
        """Compressed sparse column matrix (2-d only): entries sorted by (column, row).

        Returns
        -------
        SparseCSC
            Duplicates kept; row indices and values are views when already in
            column-major order, else gathered copies.

        Raises
        ------
        ValueError
            The tensor is not 2-d.

        Examples
        --------
        >>> coo = asp.SparseCOO([[0, 0, 1], [0, 2, 0]], np.array([1, 2, 3]), (2, 3))
        >>> csc = coo.to_csc()
        >>> csc.indptr, csc.indices, csc.values
        (array([0, 2, 2, 3]), array([0, 1, 0]), array([1, 3, 2]))
        """
        self._check_2d("SparseCOO.to_csc")
        indptr, rows, vals = self._compressed(1)
        csc: SparseTensor = self._format("csc")._new(indptr, rows, vals, self.shape,
                                                     self._canonical or None)
        return csc

    def to_csf(self, axis_order: Sequence[int] | None = None, *,
               level_formats: Sequence[str] | None = None) -> SparseTensor:
        """Compressed sparse fibres in ``axis_order`` (default ``0, 1, ..., ndim - 1``).

        Built as in the Compressed Sparse Fibers post: sort the coordinate tuples in
        the chosen order, then compress each level into ``(indptr, indices)``.

        Parameters
        ----------
        axis_order
            Which dimension each level stores, outermost first.
        level_formats
            ``"compressed"`` (default) or ``"dense"`` for each level, as TACO's level
            formats: a compressed level stores the coordinates present under each
            parent, a dense level of size ``N`` gives every parent all ``N`` children
            (coordinates ``0..N-1``, so its coordinates and pointers follow from the
            shape). ``("dense", "compressed")`` is CSR, ``("dense", "dense")`` a dense
            array, ``("compressed", "dense")`` rows of dense vectors.

        Returns
        -------
        SparseCSF
            Repeated coordinates become repeated leaves of one fibre (not summed); the
            leaf indices and values are views when the COO is already in that order.
            Under a dense last level repeated coordinates add up into their one leaf,
            and leaves without an entry hold explicit zeros (all new arrays).

        Raises
        ------
        ValueError
            ``axis_order`` is not a permutation of the dimensions, or bad
            ``level_formats``.

        See Also
        --------
        SparseCSF.to_coo : The inverse.

        Examples
        --------
        >>> indices = np.array([[1, 1, 1, 1, 1, 2, 2, 2],
        ...                     [1, 1, 2, 2, 2, 2, 2, 2],
        ...                     [1, 1, 1, 1, 2, 2, 2, 2],
        ...                     [2, 3, 1, 3, 1, 1, 3, 2]])
        >>> csf = asp.SparseCOO(indices, np.arange(1.0, 9.0), (3, 3, 3, 4)).to_csf()
        >>> csf.indptr
        (array([0, 2, 3]), array([0, 1, 3, 4]), array([0, 2, 4, 5, 8]))
        >>> csf.indices
        (array([1, 2]), array([1, 2, 2]), array([1, 1, 2, 2]), array([2, 3, 1, 3, 1, 1, 2, 3]))
        >>> csf.values
        array([1., 2., 3., 4., 5., 6., 8., 7.])

        The first dimension dense (all 3 values of ``i``, the empty ``i = 0`` too):

        >>> dcsf = asp.SparseCOO(indices, np.arange(1.0, 9.0), (3, 3, 3, 4)).to_csf(
        ...     level_formats=("dense", "compressed", "compressed", "compressed"))
        >>> dcsf.indices[0], dcsf.indptr[0]
        (array([0, 1, 2]), array([0, 0, 2, 3]))
        """
        func = "SparseCOO.to_csf"
        order = v.check_axis_order(func, axis_order, self.ndim)
        formats = lv.check_level_formats(func, level_formats, self.ndim)
        if "dense" in formats:
            sizes = [self.shape[a] for a in order]
            keys, vals = self._sorted(order)
            indptr, indices, vals = lv.build_formatted_levels(func, keys, vals, sizes, formats)
            return self._format("csf")._new(indptr, indices, vals,  # type: ignore[no-any-return]
                                            self.shape, order, None, formats)
        if self.ndim == 2:  # the compressed lines are the fibres
            matrix: SparseTensor = self.to_csr() if order[0] == 0 else self.to_csc()
            return matrix.to_csf(order)
        keys, vals = self._sorted(order)
        indptr, indices = build_levels("SparseCOO.to_csf", keys)
        canonical = True if self._canonical and order == tuple(range(self.ndim)) else None
        csf: SparseTensor = self._format("csf")._new(indptr, indices, vals, self.shape, order,
                                                     canonical)
        return csf

    @fill_doc(_interop.TO_ARROW, **_COO_DOC)
    def to_arrow(self) -> pa.SparseCOOTensor:
        """Convert to a ``pyarrow.SparseCOOTensor``."""
        self._on_host("to_arrow")
        return _interop.coo_to_arrow(self.indices, self.values, self.shape)

    @fill_doc(_interop.TO_SCIPY, **_COO_DOC)
    def to_scipy(self, *, matrix: bool = False) -> Any:
        """Convert to a ``scipy.sparse.coo_array`` (or ``coo_matrix``)."""
        self._on_host("to_scipy")
        return _interop.to_scipy(self, matrix)

    @fill_doc(_interop.TO_PYDATA, **_COO_DOC)
    def to_pydata_sparse(self) -> Any:
        """Convert to a pydata ``sparse.COO``."""
        self._on_host("to_pydata_sparse")
        return _interop.to_pydata(self)

    @fill_doc(_interop.TO_TORCH, **_COO_DOC)
    def to_torch(self) -> Any:
        """Convert to a ``torch.sparse_coo_tensor`` (on the CPU)."""
        self._on_host("to_torch")
        return _interop.to_torch(self)

    # --------------------------------------------------------------- operations
    @cm.checked
    def canonical(self) -> SparseCOO:
        """Sorted row-major with duplicates summed (explicit zeros are kept).

        Returns
        -------
        SparseCOO
            ``self`` when already canonical; else new arrays (an O(nnz) radix sort
            for the usual shapes, then one sum per run of equal coordinates).

        Notes
        -----
        On the device a few values are read back: whether the tensor is canonical
        (one synchronisation) and the number of distinct coordinates (two).

        See Also
        --------
        SparseCOO.sum_duplicates : The same, by scipy's name.

        Examples
        --------
        >>> coo = asp.SparseCOO([[2, 0, 2]], np.array([1, 2, 3]), (3,)).canonical()
        >>> coo.indices, coo.values
        (array([[0, 2]]), array([2, 4]))
        """
        if self.is_canonical:
            return self
        xp = self.xp
        if self.ndim == 2:
            indptr, cols, vals = get_kernel("sparse", "sum_duplicates", xp)(*self._compressed(0))
            indices = xp.empty((2, len(cols)), dtype=self.indices.dtype)
            get_kernel("sparse", "expand_major", xp)(indptr, indices[0])
            indices[1] = cols
            return SparseCOO._new(indices, vals, self.shape, canonical=True)
        keys, vals = cm.sum_sorted_runs(*self._sorted(range(self.ndim)))
        return SparseCOO._new(xp.stack(keys), vals, self.shape, canonical=True)

    @cm.checked
    @fill_doc(_SUM,
              axis="None for the total, else the dimension to sum over (negative counts from the "
                   "end).",
              returns="With ``axis``, a new dense array of the shape without that axis. On the "
                      "device a CuPy array (0-d for the total), without synchronisation.",
              build="asp.SparseCOO([[0, 0, 1], [0, 2, 0]], np.array([1, 2, 3]), (2, 3))",
              calls="x.sum(), x.sum(axis=0)",
              result="(np.int64(6), array([4, 0, 2]))")
    def sum(self, axis: int | None = None) -> Any:
        """Sum of all entries, or along one axis (a dense result)."""
        func = "SparseCOO.sum"
        total_dtype = cm.sum_dtype(self.dtype)
        if axis is None:
            return self.values.sum(dtype=total_dtype)
        ax = v.check_axis(func, axis, self.ndim)
        keep = [k for k in range(self.ndim) if k != ax]
        if not keep:
            return self.values.sum(dtype=total_dtype)
        xp = self.xp
        v.check_nbytes(func, f"the sum along axis {ax} of shape {self.shape}",
                       [self.shape[k] for k in keep], np.dtype(total_dtype).itemsize)
        out = xp.zeros([self.shape[k] for k in keep], dtype=total_dtype)
        if self.nnz and out.size:
            flat = cm.ravel_coords([self.indices[k] for k in keep], out.shape)
            get_kernel("sparse", "scatter_add", xp)(out.reshape(-1), flat,
                                                    self.values.astype(total_dtype, copy=False))
        return out

    @fill_doc(_MULTIPLY,
              other="A number, or an array that broadcasts to ``shape`` (the result keeps "
                    "``shape``: broadcasting may not grow it).",
              returns_type="SparseCOO",
              returns="The same coordinates (``indices`` shared, not copied) with new values of "
                      "numpy's result dtype. Only stored entries are multiplied, so zeros times "
                      "``inf``/``nan`` in ``other`` stay zero, and stored entries stay stored.",
              build="asp.SparseCOO([[0, 1], [1, 0]], np.array([1.0, 2.0]), (2, 2))",
              doubled="array([2., 4.])",
              factor="np.array([1.0, -1.0])",
              multiplied="array([-1.,  2.])")
    def multiply(self, other: Any) -> SparseCOO:
        """Elementwise product with a scalar or a dense array broadcast to ``shape``."""
        func = "SparseCOO.multiply"
        vals = self.values * cm.multiplier(func, self.values, other, self.shape, self._rows)
        return SparseCOO._new(self.indices, vals, self.shape, self._canonical)

    def transpose(self, axes: Sequence[int] | None = None) -> SparseCOO:
        """Permute the dimensions (default: reverse them).

        Parameters
        ----------
        axes
            New order of the dimensions, as in :func:`numpy.transpose`.

        Returns
        -------
        SparseCOO
            Shares the values; ``indices`` is a view with its rows reversed for the
            default, a copy of the permuted rows otherwise.

        Raises
        ------
        ValueError
            ``axes`` is not a permutation of the dimensions.

        Examples
        --------
        >>> coo = asp.SparseCOO([[0], [2]], np.array([5]), (1, 3))
        >>> coo.T.indices, coo.T.shape
        (array([[2],
               [0]]), (3, 1))
        """
        if axes is None:
            indices = self.indices[::-1]
            order: tuple[int, ...] = tuple(reversed(range(self.ndim)))
        else:
            order = v.check_axis_order("SparseCOO.transpose", axes, self.ndim)
            indices = self.indices[list(order)]
        shape = tuple(self.shape[a] for a in order)
        canonical = self._canonical if order == tuple(range(self.ndim)) else None
        return SparseCOO._new(indices, self.values, shape, canonical)

    @property
    def T(self) -> SparseCOO:  # noqa: N802 - numpy's name
        """The transpose (dimensions reversed): a zero-copy view.

        Examples
        --------
        >>> asp.SparseCOO([[0], [1], [2]], np.array([1]), (1, 2, 3)).T.shape
        (3, 2, 1)
        """
        return self.transpose()


def scatter_dense(coords: list[np.ndarray], values: np.ndarray, shape: tuple[int, ...]
                  ) -> np.ndarray:
    """Dense array of ``shape`` with ``values`` added at ``coords`` (bools: logical or).

    numpy or CuPy, by the ``scatter_add`` kernel; a bool is set by a scatter of True
    (False entries go to a spare slot past the end), whatever the order.
    """
    xp = module_of(values)
    size = math.prod(shape)
    if len(values) == 0:
        return xp.zeros(shape, dtype=values.dtype)
    flat = cm.ravel_coords(coords, shape)
    if values.dtype.kind == "b":
        hit = xp.zeros(size + 1, dtype=bool)
        hit[xp.where(values, flat, size)] = True
        return hit[:size].reshape(shape)  # type: ignore[no-any-return]
    out = xp.zeros(size, dtype=values.dtype)
    get_kernel("sparse", "scatter_add", xp)(out, flat, values)
    return out.reshape(shape)  # type: ignore[no-any-return]


def _counts_to_indptr(sorted_major: np.ndarray, num_major: int) -> np.ndarray:
    indptr = np.zeros(num_major + 1, dtype=np.int64)
    if len(sorted_major):
        np.cumsum(np.bincount(sorted_major, minlength=num_major), out=indptr[1:])
    return indptr
