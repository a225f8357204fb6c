"""``SparseCSR`` and the shared implementation of the compressed matrices (CSR and CSC).

Both store a *major* axis (rows for CSR, columns for CSC) compressed into ``indptr``
and the *minor* coordinate of every entry in ``indices``. ``indptr`` is used like
Arrow list offsets: it may start above zero, and the entries of major line ``i`` are
``indices/values[indptr[i]:indptr[i + 1]]`` of the whole buffers, so a range of rows
is a view (``csr[a:b]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .. import _validate as v
from .._backend import array_module, device_checks, get_kernel, host_only, module_of
from .._docs import fill_doc
from ..errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import TO_CSR_DOC, Jagged, computes
from . import _common as cm
from . import _interop
from .coo import SparseCOO
from .tensor import _MULTIPLY, _SUM, SparseTensor

__all__ = ["SparseCSR"]

#: What the docstrings of the readers and writers say of CSR and CSC (see
#: ``_interop.TO_ARROW``): ``_COMPRESSED_DOC`` for the readers they share, ``_CSR_DOC``
#: for the writers of a CSR (csc.py has the CSC's).
_COMPRESSED_DOC = {
    "name": "SparseCSR", "returns_type": "SparseCSR or SparseCSC", "more_params": "",
    "scipy_accepts": "Any ``scipy.sparse`` array or matrix.",
    "scipy_shares": "Views of ``indptr``, ``indices`` and ``data`` when the format matches "
                    "(checked in full); a conversion otherwise.",
    "scipy_input": "scipy.sparse.csr_array(np.eye(2))",
    "pydata_accepts": "``sparse.GCXS`` with ``compressed_axes=(0,)`` (CSR) or ``(1,)`` (CSC) "
                      "is wrapped; ``sparse.COO`` and other GCXS are converted.",
    "pydata_shares": "Views of the GCXS buffers when the compressed axis matches.",
    "pydata_input": "sparse.GCXS.from_numpy(np.eye(2), compressed_axes=(0,))",
    "torch_accepts": "A ``torch.Tensor`` on the CPU: sparse CSR, CSC or COO, or strided "
                     "(dense).",
    "torch_shares": "Views of the compressed indices, plain indices and values when the layout "
                    "matches; a conversion otherwise.",
    "torch_input": "torch.eye(2).to_sparse_csr()",
}
_CSR_DOC = {
    "build": "asp.SparseCSR([0, 1], [2], np.array([5.0]), (1, 3))", "dense": "[[0.0, 0.0, 5.0]]",
    "arrow": "SparseCSRMatrix",
    "arrow_shares": "Shares the buffers when ``indptr`` and ``indices`` are int64 and "
                    "``indptr`` starts at zero. Otherwise pyarrow gets int64 copies of them "
                    "(rebased to zero for a slice); ``values`` is always shared (bools as "
                    "uint8).",
    "arrow_raises": "",
    "kind": "csr", "matrix_2d": "",
    "scipy_out": "Shares the buffers when ``indptr`` starts at zero and ``indptr`` and "
                 "``indices`` have one dtype; otherwise scipy copies (and ``indptr`` of a "
                 "slice is rebased: a copy).",
    "scipy_raises": "",
    "pydata": "GCXS",
    "pydata_out": "Shares the buffers (``indptr`` of a slice is rebased: a copy).",
    "layout": "csr",
    "torch_out": "Shares the buffers when ``indptr`` and ``indices`` have one dtype, are "
                 "writable and ``indptr`` starts at zero; copies otherwise.",
}


class _Compressed(SparseTensor):
    """Shared implementation of :class:`SparseCSR` (major axis 0) and :class:`SparseCSC` (1)."""

    __slots__ = ("_canonical", "indices", "indptr", "shape", "values")
    _major: ClassVar[int] = 0

    def __init__(self, indptr: Any, indices: Any, values: Any, shape: Any, *,
                 validate: bool = True) -> None:
        func = type(self).__name__
        xp = array_module(func, indptr=indptr, indices=indices, values=values)
        validate = v.check_bool(func, "validate", validate)
        dims = _check_shape(func, shape, self._major)
        num_major = dims[self._major]
        if validate and xp is np:
            ptr = v.check_offsets(func, "indptr", indptr)
        else:  # on the device the pointers are checked with the indices, by kernels
            ptr = v.as_sparse_indices(func, "indptr", indptr)
            if len(ptr) == 0:
                msg = f"{func}: indptr must have at least one element (number of rows + 1)"
                raise ArrowSparseValueError(msg)
        if len(ptr) != num_major + 1:
            msg = f"{func}: indptr has {len(ptr)} entries but shape needs {num_major + 1}"
            raise ArrowSparseValueError(msg)
        idx = _trailing_indices(func, indices, len(dims))
        vals = v.as_sparse_values(func, values)
        count = idx.shape[-1]
        if count != len(vals) or (xp is np and count < ptr[-1]):
            at_least = "" if xp is not np else f", at least indptr[-1] = {ptr[-1]}"
            msg = (f"{func}: indices ({count}) and values ({len(vals)}) "
                   f"must have the same length{at_least}")
            raise ArrowSparseValueError(msg)
        self.indptr: np.ndarray = ptr
        self.indices: np.ndarray = idx
        self.values: np.ndarray = vals
        self.shape: tuple[int, ...] = dims
        self._canonical: bool | None = None
        if validate:
            self._check()
            device_checks(func, xp)

    @classmethod
    def _new(cls, indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
             shape: tuple[int, ...], canonical: bool | None = None) -> Any:
        out = cls.__new__(cls)
        out.indptr = indptr
        out.indices = indices if indices.dtype in v.INDEX_DTYPES else indices.astype(np.int64)
        out.values = values
        out.shape = tuple(shape)
        out._canonical = canonical
        return out

    @classmethod
    def _from_sorted(cls, coords: Sequence[np.ndarray], values: np.ndarray,
                     shape: tuple[int, ...], canonical: bool | None) -> Any:
        """N-d CSR of coordinates sorted row-major (``canonical``: also distinct).

        ``indptr`` comes from a search of the sorted first coordinates; the others are
        stacked into ``indices`` (int64 copies).
        """
        xp = module_of(values)
        lines = xp.arange(shape[0] + 1, dtype=np.int64)
        indptr = xp.searchsorted(coords[0], lines, side="left").astype(np.int64, copy=False)
        if len(coords[0]):
            trailing = xp.stack([c.astype(np.int64, copy=False) for c in coords[1:]])
        else:
            trailing = xp.zeros((len(shape) - 1, 0), dtype=np.int64)
        return cls._new(indptr, trailing, values, tuple(shape), canonical)

    def _map(self, fn: Any) -> Any:
        return self._new(fn(self.indptr), fn(self.indices), fn(self.values), self.shape,
                         self._canonical)

    # ----------------------------------------------------------------- internals
    @property
    def _num_major(self) -> int:
        return self.shape[self._major]

    @property
    def _num_minor(self) -> int:
        return self.shape[1 - self._major]

    def _range(self) -> tuple[int, int]:
        """``(indptr[0], indptr[-1])``: one read on the device (raising its checks at once)."""
        return cm.ends(type(self).__name__, self.indptr)

    def _compact(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(indptr, indices, values)`` with ``indptr`` starting at zero (views if it does)."""
        start, stop = self._range()
        ptr = self.indptr if start == 0 else self.indptr - start
        return ptr, self.indices[..., start:stop], self.values[start:stop]

    # ----------------------------------------------------------------- properties
    @property
    def nnz(self) -> int:
        """Number of stored entries (``indptr[-1] - indptr[0]``; read back on the device).

        Examples
        --------
        >>> asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([1.0, 2.0, 3.0]), (2, 3)).nnz
        3
        """
        start, stop = self._range()
        return stop - start

    @property
    @cm.checked
    def is_canonical(self) -> bool:
        """Whether every major line has strictly increasing indices (sorted, no duplicates).

        Cached; on the device the answer is read back (one synchronisation).

        Examples
        --------
        >>> asp.SparseCSR([0, 2], [2, 0], np.array([1, 2]), (1, 3)).is_canonical
        False
        """
        if self._canonical is None and self.ndim > 2:  # the trailing coordinates in order
            self._canonical = self.to_coo().is_canonical
        if self._canonical is None:
            self._canonical = get_kernel("sparse", "lines_strictly_increasing", self.xp)(
                self.indptr, self.indices)
        return self._canonical

    def validate(self) -> Any:
        """Check ``indptr`` and every addressed index in full (O(nnz)); return self.

        Returns
        -------
        SparseCSR or SparseCSC
            ``self``, so calls chain.

        Raises
        ------
        ValueError
            ``indptr`` decreasing or past the end of ``indices``.
        IndexError
            An index outside ``[0, shape[1])`` (CSR) or ``[0, shape[0])`` (CSC).

        Notes
        -----
        On the device check kernels record the first violation (the constructor stops
        there: the next check raises it); this waits for them (a synchronisation). Their
        messages name ``offsets`` for ``indptr``, and positions without values.

        Examples
        --------
        >>> asp.SparseCSR([0, 1], [2], np.array([5.0]), (1, 3)).validate().nnz
        1
        """
        self._check()
        device_checks(f"{type(self).__name__}.validate", self.xp, wait=True)
        return self

    def _check(self) -> None:
        func = type(self).__name__
        v.check_offsets(func, "indptr", self.indptr, self.indices.shape[-1], device=True)
        if self.ndim == 2:
            v.check_in_range(func, "indices", self.indices, self._num_minor,
                             cm.pointer_window(self.indptr))
            return
        window = cm.pointer_window(self.indptr)
        for d, size in enumerate(self.shape[1:]):
            v.check_in_range(func, f"indices[{d}]", self.indices[d], size, window)

    def _check_2d(self, op: str) -> None:
        """ValueError naming ``op`` for an N-d CSR (the matrix-only operations)."""
        if self.ndim != 2:
            msg = (f"{type(self).__name__}.{op}: needs a 2-d matrix, got shape {self.shape}; "
                   f"convert an N-d tensor with to_coo() or to_csf()")
            raise ArrowSparseValueError(msg)

    # --------------------------------------------------------------- constructors
    @classmethod
    def from_dense(cls, dense: Any) -> Any:
        """Canonical compressed matrix of the nonzero entries of a 2-d array (CSR: N-d).

        Parameters
        ----------
        dense
            A 2-d numeric array (NaN counts as nonzero); for :class:`SparseCSR` any
            array of two dimensions or more (the first is compressed).

        Returns
        -------
        SparseCSR or SparseCSC
            New int64 arrays, canonical (on the device of a CuPy input: one
            synchronisation, the number of nonzeros).

        Raises
        ------
        ValueError
            Not 2-d (CSC), fewer than 2 dimensions (CSR).
        TypeError
            Non-numeric input.

        Examples
        --------
        >>> asp.SparseCSR.from_dense(np.zeros((3, 3, 3, 4)))
        SparseCSR(shape=(3, 3, 3, 4), nnz=0, dtype=float64)
        >>> dense = np.array([[10, 20, 0, 0, 0, 0], [0, 30, 0, 40, 0, 0],
        ...                   [0, 0, 50, 60, 70, 0], [0, 0, 0, 0, 0, 80]])
        >>> csr = asp.SparseCSR.from_dense(dense)
        >>> csr.values
        array([10, 20, 30, 40, 50, 60, 70, 80])
        >>> csr.indices, csr.indptr
        (array([0, 1, 1, 3, 2, 3, 4, 5]), array([0, 2, 4, 7, 8]))
        >>> asp.SparseCSC.from_dense(dense).indptr
        array([0, 1, 3, 4, 6, 7, 8])
        """
        func = f"{cls.__name__}.from_dense"
        arr = cm.dense_operand(func, "dense", dense)
        shape = _check_shape(func, arr.shape, cls._major)
        if len(shape) > 2:
            coords = cm.nonzero(func, arr)
            return cls._from_sorted(coords, arr[coords], shape, True)
        xp = module_of(arr)
        oriented = arr if cls._major == 0 else arr.T
        major, minor = cm.nonzero(func, oriented)
        lines = xp.arange(oriented.shape[0] + 1, dtype=np.int64)
        indptr = xp.searchsorted(major, lines, side="left").astype(np.int64, copy=False)
        return cls._new(indptr, xp.ascontiguousarray(minor, dtype=np.int64), oriented[major, minor],
                        shape, canonical=True)

    @classmethod
    def from_arrow(cls, tensor: Any) -> Any:
        """Wrap a pyarrow ``SparseCSRMatrix``/``SparseCSCMatrix`` (zero-copy), or convert.

        Parameters
        ----------
        tensor
            ``pyarrow.SparseCSRMatrix`` (wrapped by :class:`SparseCSR`),
            ``SparseCSCMatrix`` (wrapped by :class:`SparseCSC`), or any other pyarrow
            sparse tensor or dense ``pyarrow.Tensor`` (converted).

        Returns
        -------
        SparseCSR or SparseCSC
            ``indptr``, ``indices`` and ``values`` are views of pyarrow's buffers when
            the format matches; a conversion (copies) otherwise.

        Raises
        ------
        TypeError
            Not a pyarrow tensor.
        ValueError, IndexError
            A malformed structure (pyarrow does not check it).

        Examples
        --------
        >>> t = pa.SparseCSRMatrix.from_dense_numpy(np.array([[0.0, 1.0], [2.0, 0.0]]))
        >>> csr = asp.SparseCSR.from_arrow(t)
        >>> csr.indptr, csr.indices, csr.values
        (array([0, 1, 2]), array([1, 0]), array([1., 2.]))
        """
        func = f"{cls.__name__}.from_arrow"
        return cls._from_any(func, _interop.from_arrow(func, tensor))

    @classmethod
    @fill_doc(_interop.FROM_SCIPY, **_COMPRESSED_DOC)
    def from_scipy(cls, matrix: Any) -> Any:
        """Wrap a scipy.sparse CSR/CSC array or matrix (zero-copy), or convert another format."""
        func = f"{cls.__name__}.from_scipy"
        return cls._from_any(func, _interop.from_scipy(func, matrix))

    @classmethod
    @fill_doc(_interop.FROM_PYDATA, **_COMPRESSED_DOC)
    def from_pydata_sparse(cls, array: Any) -> Any:
        """Read a pydata ``sparse`` array (2-d ``GCXS`` of the matching axis: zero-copy)."""
        func = f"{cls.__name__}.from_pydata_sparse"
        return cls._from_any(func, _interop.from_pydata(func, array))

    @classmethod
    @fill_doc(_interop.FROM_TORCH, **_COMPRESSED_DOC)
    def from_torch(cls, tensor: Any) -> Any:
        """Read a CPU torch tensor (its own ``sparse_csr``/``sparse_csc`` layout: zero-copy)."""
        func = f"{cls.__name__}.from_torch"
        return cls._from_any(func, _interop.from_torch(func, tensor))

    # ------------------------------------------------------------------ exporters
    @cm.checked
    def to_dense(self) -> np.ndarray:
        """Dense ``[rows, columns]`` array; repeated entries add up (bools: logical or).

        Returns
        -------
        numpy.ndarray
            A new C-ordered array of the values dtype (CuPy on the device: no
            synchronisation; repeated float entries add in atomic order).

        Examples
        --------
        >>> asp.SparseCSR([0, 2], [1, 1], np.array([1, 2]), (1, 3)).to_dense()
        array([[0, 3, 0]])
        >>> asp.SparseCSC([0, 0, 2, 2], [0, 0], np.array([1, 2]), (1, 3)).to_dense()
        array([[0, 3, 0]])
        """
        if self.dtype.kind == "b" or self.ndim > 2:
            return self.to_coo().to_dense()
        v.check_nbytes(f"{type(self).__name__}.to_dense", f"the dense array of shape "
                       f"{self.shape}", self.shape, self.values.itemsize)
        xp = self.xp
        out = xp.zeros(self.shape, dtype=self.dtype)
        get_kernel("sparse", "compressed_to_dense", xp)(self.indptr, self.indices, self.values,
                                                        out, self._major == 1)
        return out

    def to_coo(self) -> SparseCOO:
        """Coordinate lists ``[[rows], [columns]]`` in stored order.

        Returns
        -------
        SparseCOO
            Shares ``values`` (the addressed range); ``indices`` is a new array (the
            compressed axis is expanded, in parallel) of the index dtype, int64 when
            the compressed axis is too long for it. On the device ``indptr[0]`` and
            ``indptr[-1]`` are read back (one synchronisation: the size).

        Examples
        --------
        >>> csr = asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([1.0, 2.0, 3.0]), (2, 3))
        >>> csr.to_coo().indices
        array([[0, 0, 1],
               [0, 2, 1]])
        """
        start, stop = self._range()
        dtype = self.indices.dtype if self._num_major <= np.iinfo(self.indices.dtype).max \
            else np.dtype(np.int64)
        coords = self.xp.empty((self.ndim, stop - start), dtype=dtype)
        get_kernel("sparse", "expand_major", self.xp)(self.indptr, coords[self._major])
        if self.ndim > 2:
            coords[1:] = self.indices[:, start:stop]
        else:
            coords[1 - self._major] = self.indices[start:stop]
        canonical = True if self._major == 0 and self._canonical else None
        return SparseCOO._new(coords, self.values[start:stop], self.shape, canonical)

    def _transposed_layout(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return get_kernel("sparse", "compressed_transpose", self.xp)(  # type: ignore[no-any-return]
            self.indptr, self.indices, self.values, self._num_minor)

    @cm.checked
    def to_csr(self) -> SparseCSR:
        """Convert to CSR: itself for a :class:`SparseCSR`; a counting sort from CSC.

        Returns
        -------
        SparseCSR
            From CSC: new arrays, columns sorted within each row (duplicates kept). On
            the device a histogram and a stable radix sort; ``indptr[0]`` and
            ``indptr[-1]`` are read back (one synchronisation).

        Examples
        --------
        >>> csc = asp.SparseCSC([0, 1, 1, 2], [1, 0], np.array([2.0, 1.0]), (2, 3))
        >>> csc.to_csr().indices
        array([2, 0])
        """
        if isinstance(self, SparseCSR):
            return self
        ptr, idx, vals = self._transposed_layout()
        csr: SparseCSR = SparseCSR._new(ptr, idx, vals, self.shape, self._canonical or None)
        return csr

    @cm.checked
    def to_csc(self) -> SparseTensor:
        """Convert to CSC: itself for a :class:`SparseCSC`; a counting sort from CSR.

        Returns
        -------
        SparseCSC
            From CSR: new arrays, rows sorted within each column (duplicates kept);
            O(nnz + rows + columns), like scipy's ``tocsc``. On the device as
            :meth:`to_csr` (one synchronisation).

        Examples
        --------
        >>> csr = asp.SparseCSR([0, 2, 4, 7, 8], [0, 1, 1, 3, 2, 3, 4, 5],
        ...                     np.arange(10, 90, 10), (4, 6))
        >>> csc = csr.to_csc()
        >>> csc.indptr, csc.indices
        (array([0, 1, 3, 4, 6, 7, 8]), array([0, 0, 1, 2, 1, 2, 2, 3]))
        """
        if self._major == 1:
            return self
        self._check_2d("to_csc")
        ptr, idx, vals = self._transposed_layout()
        csc: SparseTensor = self._format("csc")._new(ptr, idx, vals, self.shape,
                                                     self._canonical or None)
        return csc

    def to_csf(self, axis_order: Sequence[int] | None = None) -> SparseTensor:
        """Compressed sparse fibres (``axis_order`` default ``(0, 1)``).

        Parameters
        ----------
        axis_order
            ``(0, 1)`` (rows outermost) or ``(1, 0)``.

        Returns
        -------
        SparseCSF
            When the order's outer axis is this matrix's compressed axis, the leaf
            indices and values are the same buffers (zero-copy); level 0 lists the
            non-empty lines (its ``indptr`` is this ``indptr`` when no line is empty).
            The other order goes through :meth:`to_csc`/:meth:`to_csr` (a counting sort).
            On the device finding the non-empty lines reads their number back (one
            synchronisation).

        Raises
        ------
        ValueError
            ``axis_order`` is not a permutation of ``(0, 1)``.

        Examples
        --------
        >>> csr = asp.SparseCSR([0, 2, 2, 3], [0, 1, 1], np.array([1, 2, 3]), (3, 2))
        >>> csf = csr.to_csf()
        >>> csf.indptr, csf.indices
        ((array([0, 2, 3]),), (array([0, 2]), array([0, 1, 1])))
        """
        order = v.check_axis_order(f"{type(self).__name__}.to_csf", axis_order, self.ndim)
        if self.ndim > 2:
            return self.to_coo().to_csf(order)
        if order[0] != self._major:
            other: SparseTensor = self.to_csc() if self._major == 0 else self.to_csr()
            return other.to_csf(order)
        xp = self.xp
        nonempty = cm.flatnonzero(f"{type(self).__name__}.to_csf", xp.diff(self.indptr))
        if len(nonempty) == self._num_major:
            ptr0 = self.indptr
        else:
            ptr0 = xp.concatenate([self.indptr[nonempty], self.indptr[-1:]])
        csf: SparseTensor = self._format("csf")._new(
            (ptr0,), (nonempty, self.indices), self.values, self.shape, order,
            self._canonical or None)
        return csf

    def to_jagged(self) -> tuple[Jagged, Jagged]:
        """Major lines as two :class:`Jagged` sharing ``indptr``: ``(ids, weights)``.

        For CSR, row ``i`` of ``ids`` holds the column ids of row ``i`` and row ``i`` of
        ``weights`` their values; for CSC, one row per column, holding row ids.

        Returns
        -------
        tuple of Jagged
            ``(ids, weights)``: views of ``indices`` and ``values`` split by ``indptr``
            (nothing is copied).

        See Also
        --------
        Jagged.to_csr : The inverse: ``ids.to_csr(num_columns, weights=weights.values)``.

        Examples
        --------
        >>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
        >>> ids, weights = j.to_csr(8).to_jagged()
        >>> ids
        Jagged([[1, 2, 3], [2, 4, 6, 7], [3, 6]], dtype=int64, offsets=int64)
        >>> weights.to_list()
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0]]
        """
        self._check_2d("to_jagged")
        return (Jagged(self.indices, self.indptr, validate=False),
                Jagged(self.values, self.indptr, validate=False))

    # ------------------------------------------------------------------ operations
    def canonical(self) -> Any:
        """Sort the indices within every line and sum duplicates (explicit zeros kept).

        Returns
        -------
        SparseCSR or SparseCSC
            ``self`` when already canonical; else new arrays. On the device whether it
            is canonical, ``indptr``'s ends and the number of distinct entries are read
            back (three synchronisations).

        Examples
        --------
        >>> csr = asp.SparseCSR([0, 3], [2, 0, 2], np.array([1, 2, 3]), (1, 3)).canonical()
        >>> csr.indices, csr.values
        (array([0, 2]), array([2, 4]))
        """
        if self.is_canonical:
            return self
        if self.ndim > 2:
            coo = self.to_coo().canonical()
            return self._from_sorted(coo._rows(), coo.values, self.shape, True)
        parts = get_kernel("sparse", "canonical_lines", self.xp)(self.indptr, self.indices,
                                                                 self.values)
        return self._new(*parts, self.shape, canonical=True)

    @cm.checked
    @fill_doc(_SUM,
              axis="None, 0 (sum over rows: one value per column) or 1 (one value per row); "
                   "negative values count from the end.",
              returns="On the device a CuPy array (0-d for the total); the total and ``axis=0`` "
                      "of a CSR (``1`` of a CSC) read ``indptr``'s ends back (one "
                      "synchronisation), the line sums nothing.",
              build="asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([1, 2, 3]), (2, 3))",
              calls="x.sum(), x.sum(axis=0), x.sum(axis=1)",
              result="(np.int64(6), array([1, 3, 2]), array([3, 3]))")
    def sum(self, axis: int | None = None) -> Any:
        """Sum of all entries, or along one axis (a dense vector)."""
        func = f"{type(self).__name__}.sum"
        if self.ndim > 2:
            return self.to_coo().sum(axis)
        total_dtype = cm.sum_dtype(self.dtype)
        ax = None if axis is None else v.check_axis(func, axis, 2)
        if ax is not None:
            v.check_nbytes(func, f"the sum along axis {ax} of shape {self.shape}",
                           self.shape[1 - ax], np.dtype(total_dtype).itemsize)
        xp = self.xp
        if ax == 1 - self._major:  # reduce the minor axis: one value per major line
            out = xp.zeros(self._num_major, dtype=total_dtype)
            get_kernel("sparse", "major_sums", xp)(self.indptr, self.values, out)
            return out
        _, idx, vals = self._compact()
        if ax is None:
            return vals.sum(dtype=total_dtype)
        out = xp.zeros(self._num_minor, dtype=total_dtype)
        get_kernel("sparse", "scatter_add", xp)(out, idx, vals.astype(total_dtype, copy=False))
        return out

    @fill_doc(_MULTIPLY,
              other="A number, or an array broadcasting to ``shape`` (e.g. a row ``[1, cols]`` "
                    "or a column ``[rows, 1]`` of scales).",
              returns_type="SparseCSR or SparseCSC",
              returns="Same structure with new values (``indices`` shared; ``indptr`` shared "
                      "unless a slice had to be rebased to start at zero). Only stored entries "
                      "are multiplied. On the device ``indptr``'s ends are read back (one "
                      "synchronisation); ``other`` must be there too.",
              build="asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([1.0, 2.0, 3.0]), (2, 3))",
              doubled="array([2., 4., 6.])",
              factor="np.array([[10.0], [100.0]])",
              multiplied="array([ 10.,  20., 300.])")
    def multiply(self, other: Any) -> Any:
        """Elementwise product with a scalar or a dense array broadcast to ``shape``."""
        func = f"{type(self).__name__}.multiply"
        ptr, idx, vals = self._compact()

        def coords() -> list[np.ndarray]:
            lines = cm.expand_lines(ptr, idx.shape[-1])
            if idx.ndim == 2:
                return [lines, *idx]
            return [lines, idx] if self._major == 0 else [idx, lines]

        new = vals * cm.multiplier(func, vals, other, self.shape, coords)
        return self._new(ptr, idx, new, self.shape, self._canonical)

    @cm.checked
    def matmul(self, other: Any) -> np.ndarray:
        """Matrix product with a dense matrix or vector: ``self @ other``.

        Parameters
        ----------
        other
            Dense ``[columns, k]`` matrix or ``[columns]`` vector.

        Returns
        -------
        numpy.ndarray
            Dense ``[rows, k]`` (or ``[rows]``) of numpy's result dtype. CSR runs a
            Numba kernel with ``prange`` over chunks of rows of about equal numbers
            of entries; CSC runs a serial scatter kernel. On the device (``other`` a
            CuPy array there) a CuPy array: CSR with one lane group per row and
            column block, bit for bit the CPU's result, without synchronisation (a
            vector: 32 lanes per row, float sums re-associated); CSC as CSR of its
            transpose, reading ``indptr``'s ends (one synchronisation).

        Raises
        ------
        ValueError
            ``other`` is not 1-d or 2-d, or its first dimension is not ``columns``.
        TypeError
            ``other`` is not numeric, or is sparse.

        Notes
        -----
        ``other`` is copied when it is not C-contiguous or not of the result dtype
        (the values are then converted too).

        Examples
        --------
        >>> csr = asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([1.0, 2.0, 3.0]), (2, 3))
        >>> csr @ np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        array([[3., 2.],
               [0., 3.]])
        >>> csr.matmul(np.ones(3))
        array([3., 3.])
        """
        func = f"{type(self).__name__}.matmul"
        self._check_2d("matmul")
        dense = _matmul_operand(func, self.values, other, self.shape[1], "first")
        dtype, work, vals = _matmul_dtypes(self.values, dense)
        xp = self.xp
        v.check_nbytes(func, "the product", (self.shape[0], *dense.shape[1:]),
                       np.dtype(work).itemsize)
        rhs = xp.ascontiguousarray(dense, dtype=work)
        if self._major == 0 and (rhs.ndim == 1 or rhs.shape[1] == 1):
            out = xp.zeros(self.shape[0], dtype=work)
            get_kernel("sparse", "csr_spmv", xp)(self.indptr, self.indices, vals,
                                                 rhs.reshape(self.shape[1]), out)
            if rhs.ndim == 2:
                out = out.reshape(self.shape[0], 1)
        else:
            rhs2 = rhs if rhs.ndim == 2 else rhs[:, None]
            out = xp.zeros((self.shape[0], rhs2.shape[1]), dtype=work)
            name = "csr_spmm" if self._major == 0 else "csc_spmm"
            get_kernel("sparse", name, xp)(self.indptr, self.indices, vals, rhs2, out)
            if rhs.ndim == 1:
                out = out.reshape(self.shape[0])
        return out != 0 if dtype.kind == "b" else out

    def __matmul__(self, other: Any) -> np.ndarray:
        return self.matmul(other)

    @cm.checked
    def __rmatmul__(self, other: Any) -> np.ndarray:
        func = f"{type(self).__name__}.__rmatmul__"
        self._check_2d("__rmatmul__")
        dense = _matmul_operand(func, self.values, other, self.shape[0], "last")
        dtype, work, vals = _matmul_dtypes(self.values, dense)
        v.check_nbytes(func, "the product", (*dense.shape[:-1], self.shape[1]),
                       np.dtype(work).itemsize)
        xp = self.xp
        if self._major == 1:  # dense @ csc == (csc.T @ dense.T).T, and csc.T is a CSR
            transposed = SparseCSR._new(self.indptr, self.indices, vals, self.shape[::-1])
            out = transposed.matmul(dense.T).T
            return xp.ascontiguousarray(out != 0 if dtype.kind == "b" else out)
        lhs = xp.ascontiguousarray(dense if dense.ndim == 2 else dense[None, :], dtype=work)
        out = xp.zeros((lhs.shape[0], self.shape[1]), dtype=work)
        get_kernel("sparse", "dense_csr", xp)(lhs, self.indptr, self.indices, vals, out)
        if dense.ndim == 1:
            out = out.reshape(self.shape[1])
        return out != 0 if dtype.kind == "b" else out

    def transpose(self, axes: Sequence[int] | None = None) -> Any:
        """Return the transpose as the other compressed format, sharing every buffer.

        Parameters
        ----------
        axes
            None or ``(1, 0)`` to transpose; ``(0, 1)`` returns ``self``.

        Returns
        -------
        SparseCSC or SparseCSR
            ``csr.transpose()`` is a :class:`SparseCSC` over the same three arrays
            (and the other way round): zero-copy.

        Raises
        ------
        ValueError
            ``axes`` is not a permutation of ``(0, 1)``.

        Examples
        --------
        >>> csr = asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([1, 2, 3]), (2, 3))
        >>> csr.T
        SparseCSC(shape=(3, 2), nnz=3, dtype=int64)
        >>> csr.T.indices is csr.indices
        True
        """
        if axes is not None and v.check_axis_order(
                f"{type(self).__name__}.transpose", axes, self.ndim) == tuple(range(self.ndim)):
            return self
        self._check_2d("transpose")
        other = self._format("csc") if self._major == 0 else SparseCSR
        return other._new(self.indptr, self.indices, self.values, self.shape[::-1],
                          self._canonical)

    @property
    def T(self) -> Any:  # noqa: N802 - numpy's name
        """The transpose: a :class:`SparseCSC` for a CSR and the other way round (zero-copy).

        Examples
        --------
        >>> asp.SparseCSC([0, 1], [0], np.array([1.0]), (2, 1)).T
        SparseCSR(shape=(1, 2), nnz=1, dtype=float64)
        """
        return self.transpose()

    def _major_line(self, key: Any) -> SparseCOO:
        """Line ``key`` (an int; negative counts from the end) as a 1-D :class:`SparseCOO`.

        Its indices and values are views of this matrix's; on the device the line's two
        pointers are read back (one synchronisation).
        """
        name = type(self).__name__
        size = self._num_major
        i = int(key)
        if not -size <= i < size:
            what = "row" if self._major == 0 else "column"
            msg = f"{name}: {what} {i} out of range for {size} {what}s"
            raise ArrowSparseIndexError(msg)
        i %= size
        lo, hi = cm.ends(name, self.indptr[i:i + 2])
        if self.ndim > 2:
            return SparseCOO(self.indices[:, lo:hi], self.values[lo:hi], self.shape[1:],
                             validate=False)
        return SparseCOO(self.indices[lo:hi][None, :], self.values[lo:hi],
                         (self.shape[1 - self._major],), validate=False)

    def _major_slice(self, key: slice) -> Any:
        name = type(self).__name__
        start, stop, step = key.indices(self._num_major)
        if step != 1:
            msg = f"{name}: slices must have step 1; convert with to_coo() for other orders"
            raise ArrowSparseValueError(msg)
        stop = max(start, stop)
        shape = list(self.shape)
        shape[self._major] = stop - start
        return self._new(self.indptr[start:stop + 1], self.indices, self.values, tuple(shape),
                         self._canonical or None)


class SparseCSR(_Compressed):
    """Compressed sparse row matrix: row ``i`` holds ``indices/values[indptr[i]:indptr[i+1]]``.

    Parameters
    ----------
    indptr
        Row pointers, ``rows + 1`` long, non-decreasing; may start above zero (the
        entries before ``indptr[0]`` are not part of the matrix).
    indices
        Column index of each stored value, each in ``[0, shape[1])`` (only the range
        ``indptr[0]:indptr[-1]`` is read). For a tensor of ``ndim > 2`` dimensions,
        the coordinates after the first: ``[ndim - 1, nnz]``, row ``d`` in
        ``[0, shape[d + 1])`` (a matrix's may also come as one such row).
    values
        Stored values, one per index.
    shape
        ``(rows, columns)``, or any shape of 2 dimensions or more: the first is
        compressed, as in the Compressed Sparse Fibers post's CSR of a 4-d tensor.
    validate
        Check ``indptr`` and every addressed column index (O(nnz)). Leave True
        unless the arrays are known good.

    Raises
    ------
    ValueError
        Malformed ``indptr`` or length mismatches.
    IndexError
        A column index out of range.
    TypeError
        Non-integer ``indptr``/``indices`` or non-numeric values.

    See Also
    --------
    SparseCSC : The column-compressed twin (``csr.T`` is one, zero-copy).
    Jagged.to_csr : A Jagged of ids as a multi-hot CSR matrix.

    Notes
    -----
    The constructor copies nothing (index dtypes other than int32/int64 are widened
    to int64). Repeated column indices in a row are allowed (not canonical); they add
    up when densified, as in scipy. ``csr[a:b]`` selects rows ``a`` to ``b`` as a
    view: only ``indptr`` is sliced.

    Examples
    --------
    >>> m = asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([1.0, 2.0, 3.0]), (2, 3))
    >>> m
    SparseCSR(shape=(2, 3), nnz=3, dtype=float64)
    >>> m.to_dense()
    array([[1., 0., 2.],
           [0., 3., 0.]])

    The post's 4x6 matrix, and its rows 1 to 2 as a view:

    >>> csr = asp.SparseCSR([0, 2, 4, 7, 8], [0, 1, 1, 3, 2, 3, 4, 5],
    ...                     np.arange(10, 90, 10), (4, 6))
    >>> csr[1:3].to_dense()
    array([[ 0, 30,  0, 40,  0,  0],
           [ 0,  0, 50, 60, 70,  0]])
    >>> csr[1:3].values is csr.values
    True

    The post's 4-d tensor with ``i`` compressed and ``j, k, l`` kept per entry (its
    coordinates are 1-based, so ``i = 0`` is empty):

    >>> t = asp.SparseCSR([0, 0, 5, 8], [[1, 1, 2, 2, 2, 2, 2, 2],
    ...                                  [1, 1, 1, 1, 2, 2, 2, 2],
    ...                                  [2, 3, 1, 3, 1, 1, 3, 2]],
    ...                   np.arange(1.0, 9.0), (3, 3, 3, 4))
    >>> t
    SparseCSR(shape=(3, 3, 3, 4), nnz=8, dtype=float64)
    >>> t.to_dense()[2, 2, 2]
    array([0., 6., 8., 7.])
    >>> t.to_csf().indptr[0]
    array([0, 2, 3])

    An N-d CSR converts to and from dense, COO and CSF, slices and selects rows, sums
    and multiplies; the matrix operations (products, transpose, CSC, scipy, pydata,
    torch and pyarrow exchange) need a 2-d matrix.
    """

    __slots__ = ()
    format = "csr"
    _major = 0

    @classmethod
    @fill_doc(TO_CSR_DOC, jagged="""\
jagged
    Rows of integer ids (one level, scalar values), on the host.
""", not_a_jagged="Not a Jagged, non-integer", see_also="""\
Jagged.to_csr : The same, as a method of the Jagged.
SparseCSR.to_jagged : The inverse.""", examples="""\
>>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
>>> asp.SparseCSR.from_jagged(j, 8, weights=np.arange(9.0)).to_dense()[1]
array([0., 0., 3., 0., 4., 0., 5., 6.])""")
    def from_jagged(cls, jagged: Jagged, num_columns: int, weights: Any = None) -> SparseCSR:
        """Read a Jagged of ids as a multi-hot CSR matrix ``[num_rows, num_columns]``."""
        return _jagged_to_csr("SparseCSR.from_jagged", jagged, num_columns, weights)

    def __getitem__(self, key: Any) -> Any:
        """Row ``i`` (``csr[i]``: a 1-D :class:`SparseCOO`) or rows ``a:b`` (a SparseCSR view).

        ``csr[a:b]`` and ``csr[a:b, :]`` share every buffer (only ``indptr`` is sliced);
        ``csr[i]`` and ``csr[i, :]`` view the row's indices and values.

        Examples
        --------
        >>> m = asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([1.0, 2.0, 3.0]), (2, 3))
        >>> m[0].to_dense()
        array([1., 0., 2.])
        >>> m[-1:].to_dense()
        array([[0., 3., 0.]])
        """
        if isinstance(key, tuple) and len(key) == 2 and key[1] == slice(None):
            key = key[0]
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            return self._major_line(key)
        if not isinstance(key, slice):
            msg = ("SparseCSR: rows are selected with an int or a slice, csr[i], csr[a:b] or "
                   "csr[a:b, :]; convert with to_coo() or to_dense() for other indexing")
            raise ArrowSparseTypeError(msg)
        return self._major_slice(key)

    @fill_doc(_interop.TO_ARROW, **_CSR_DOC)
    def to_arrow(self) -> Any:
        """Convert to a ``pyarrow.SparseCSRMatrix``."""
        self._on_host("to_arrow")
        self._check_2d("to_arrow")
        return _interop.compressed_to_arrow("csr", *self._compact(), self.shape)

    @fill_doc(_interop.TO_SCIPY, **_CSR_DOC)
    def to_scipy(self, *, matrix: bool = False) -> Any:
        """Convert to a ``scipy.sparse.csr_array`` (or ``csr_matrix``)."""
        self._on_host("to_scipy")
        self._check_2d("to_scipy")
        return _interop.to_scipy(self, matrix)

    @fill_doc(_interop.TO_PYDATA, **_CSR_DOC)
    def to_pydata_sparse(self) -> Any:
        """Convert to a pydata ``sparse.GCXS`` with ``compressed_axes=(0,)``."""
        self._on_host("to_pydata_sparse")
        self._check_2d("to_pydata_sparse")
        return _interop.to_pydata(self)

    @fill_doc(_interop.TO_TORCH, **_CSR_DOC)
    def to_torch(self) -> Any:
        """Convert to a ``torch.sparse_csr_tensor`` (on the CPU)."""
        self._on_host("to_torch")
        self._check_2d("to_torch")
        return _interop.to_torch(self)


# ------------------------------------------------------------------------ helpers
def _check_shape(func: str, shape: Any, major: int) -> tuple[int, ...]:
    """Check a shape: 2-d for a CSC, 2 dimensions or more for a CSR (the first compressed)."""
    dims = v.check_shape(func, shape, ndim=2 if major == 1 else None)
    if len(dims) < 2:
        msg = f"{func}: shape must have at least 2 dimensions, got {dims}"
        raise ArrowSparseValueError(msg)
    return dims


def _trailing_indices(func: str, indices: Any, ndim: int) -> np.ndarray:
    """Return the coordinates after the compressed one: 1-D (a matrix) or ``[ndim - 1, nnz]``.

    A matrix's indices may also come as one row ``[1, nnz]`` (the N-d layout with one
    trailing dimension): its row is kept, a view.
    """
    if ndim == 2:
        if getattr(indices, "ndim", None) == 2 and indices.shape[0] == 1:
            indices = indices[0]
        return v.as_sparse_indices(func, "indices", indices)
    idx = v.as_sparse_indices(func, "indices", indices, ndim=2)
    if idx.shape[0] != ndim - 1:
        msg = (f"{func}: indices has {idx.shape[0]} rows but shape of {ndim} dimensions "
               f"needs {ndim - 1} (one per dimension after the first)")
        raise ArrowSparseValueError(msg)
    return idx


def _matmul_operand(func: str, values: np.ndarray, other: Any, size: int, which: str
                    ) -> np.ndarray:
    dense = cm.dense_operand(func, "other", other)
    array_module(func, values=values, other=dense)
    v.check_operand_shape(func, dense, size, which)
    return dense


def _matmul_dtypes(values: np.ndarray, dense: np.ndarray) -> tuple[np.dtype, np.dtype,
                                                                    np.ndarray]:
    dtype = np.result_type(values.dtype, dense.dtype)
    work = np.dtype(np.int64) if dtype.kind == "b" else dtype
    return dtype, work, values.astype(work, copy=False)


def _jagged_to_csr(func: str, jagged: Jagged, num_columns: int, weights: Any) -> SparseCSR:
    """Build the multi-hot CSR matrix of a Jagged of ids (see :meth:`SparseCSR.from_jagged`)."""
    if not isinstance(jagged, Jagged):
        msg = f"{func}: expected a Jagged, got {type(jagged).__name__}"
        raise ArrowSparseTypeError(msg)
    if jagged.device != "cpu":
        host_only(func, f"the Jagged is on {jagged.device}")
    if isinstance(jagged.values, Jagged) or jagged.values.ndim != 1:
        msg = f"{func}: rows must hold scalar ids, not nested lists or vectors"
        raise ArrowSparseTypeError(msg)
    num_columns = v.check_count(func, "num_columns", num_columns)
    start, stop = int(jagged.offsets[0]), int(jagged.offsets[-1])
    ids = jagged.values[start:stop]
    if ids.dtype.kind not in "iu":
        msg = f"{func}: ids must have an integer dtype, got {ids.dtype}"
        raise ArrowSparseTypeError(msg)
    keep = None  # which addressed values become entries: not null, not in a null row
    if jagged.validity is not None:
        keep = np.repeat(jagged.validity, np.diff(jagged.offsets))
    if jagged.values_validity is not None:
        inside = jagged.values_validity[start:stop]
        keep = inside if keep is None else keep & inside
    bad = (ids < 0) | (ids >= num_columns)
    if keep is not None:
        bad &= keep
    if bad.any():
        pos = start + v.first_true(bad)
        msg = v.message(func, "ids", f"out of range [0, {num_columns})", pos, jagged.values[pos])
        raise ArrowSparseIndexError(msg)
    if keep is None:
        indptr = (jagged.offsets - start).astype(np.int64)
    else:
        ids = ids[keep]
        kept_before = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
        indptr = kept_before[jagged.offsets - start]
    if ids.dtype not in v.OFFSET_DTYPES:
        ids = ids.astype(np.int64)
    if weights is None:
        data = np.ones(len(ids), dtype=np.float32)
    else:
        data = v.as_values_array(func, "weights", weights)
        if len(data) != len(jagged.leaf_values):
            msg = (f"{func}: weights has {len(data)} entries but there are "
                   f"{len(jagged.leaf_values)} values")
            raise ArrowSparseValueError(msg)
        data = data[start:stop] if keep is None else data[start:stop][keep]
    return SparseCSR(indptr, ids, data, (jagged.num_rows, num_columns))


@computes("to_csr")
def _to_csr(jagged: Jagged, num_columns: int, weights: Any = None) -> SparseCSR:
    return _jagged_to_csr("Jagged.to_csr", jagged, num_columns, weights)
