"""``SparseCSF``: compressed sparse fibres, a tree of coordinate prefixes packed into arrays.

Level ``k`` stores coordinates along dimension ``axis_order[k]``: ``indices[k]`` holds
one coordinate per node and ``indptr[k]`` (for ``k < ndim - 1``) gives each node's
children ``indices[k + 1][indptr[k][p]:indptr[k][p + 1]]``; the leaves' values are
``values``. This is Arrow's ``SparseCSFIndex``. Pointers are absolute positions in
the next level's buffer and may start above zero, like list offsets, so a sub-tree
(a sub-fibre) is a view of the same buffers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from .. import _validate as v
from .._backend import array_module, device_checks, fetch, module_of
from .._docs import fill_doc
from ..errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged
from . import _common as cm
from . import _interop
from . import _levels as lv
from .coo import SparseCOO
from .csc import SparseCSC
from .csr import SparseCSR
from .tensor import _MULTIPLY, _SUM, SparseTensor

__all__ = ["SparseCSF"]

#: What the docstrings of the readers and writers say of CSF (see ``_interop.TO_ARROW``):
#: scipy, pydata ``sparse`` and torch have no CSF, so it is read and written through
#: their COO or compressed formats.
_CSF_DOC = {
    "name": "SparseCSF", "returns_type": "SparseCSF",
    "more_params": "\naxis_order\n    Level order of the result (default ``0, 1, ...``).",
    "scipy_accepts": "Any ``scipy.sparse`` array or matrix.",
    "scipy_shares": "From CSR with ``(0, 1)`` or CSC with ``(1, 0)``, the leaf indices and "
                    "values are views of scipy's buffers; otherwise new arrays.",
    "scipy_input": "scipy.sparse.csr_array(np.eye(2))",
    "pydata_accepts": "``sparse.COO``, ``sparse.GCXS`` or ``sparse.DOK`` with fill value 0.",
    "pydata_shares": "New arrays (the leaf arrays are views for a canonical ``sparse.COO`` in "
                     "the default order).",
    "pydata_input": "sparse.COO.from_numpy(np.eye(2))",
    "torch_accepts": "``torch.Tensor`` on the CPU: sparse COO, CSR, CSC or strided.",
    "torch_shares": "New arrays (views where a conversion allows, as for the other formats).",
    "torch_input": "torch.eye(2).to_sparse()",
    "build": "asp.SparseCSF([[0, 1]], [[1], [0]], np.array([1.0]), (2, 2))",
    "dense": "[[0.0, 0.0], [1.0, 0.0]]",
    "arrow": "SparseCSFTensor",
    "arrow_shares": "Shares every buffer when the index arrays are int64 and the tensor is "
                    "compact (not a sub-fibre). Otherwise pyarrow gets int64 copies of the index "
                    "arrays, and the pointer arrays of a sub-fibre are rebased to start at zero "
                    "(copies); the values are always shared (bools as uint8). Read it back with "
                    "``SparseCSF.from_arrow(t, axis_order=csf.axis_order)``.",
    "arrow_raises": "\nRaises\n------\nValueError\n    A 1-d tensor (pyarrow's CSF needs two "
                    "dimensions or more).\n",
    "kind": "coo", "matrix_2d": " (2-d only)",
    "scipy_out": "Through :meth:`to_coo`: new coordinates, shared values.",
    "scipy_raises": "ValueError\n    ``matrix=True`` for a tensor that is not 2-d.\n",
    "pydata": "COO",
    "pydata_out": "New coordinates, shared values when canonical in the default order.",
    "layout": "coo",
    "torch_out": "New coordinates; values shared when writable.",
}

#: The docstring of ``to_csr`` and ``to_csc``, after each one's summary line.
_TO_COMPRESSED = """
    Returns
    -------
    {cls}
        With ``axis_order={order}`` the {minor} indices and values are the leaf
        buffers{read}; otherwise converted.

    Raises
    ------
    ValueError
        The tensor is {bad_ndim}.

    Examples
    --------
    >>> csf = asp.SparseCSF([[0, 1, 3]], [[0, 2], [1, 0, 1]], np.array([1, 2, 3]), (3, 2))
    >>> csf.{name}().indptr
    {indptr}
    """

class SparseCSF(SparseTensor):
    """Compressed sparse fibre tensor of any number of dimensions, in any axis order.

    Parameters
    ----------
    indptr
        ``ndim - 1`` pointer arrays: node ``p`` of level ``k`` has the children
        ``indptr[k][p]:indptr[k][p + 1]`` in level ``k + 1``. Each is
        ``len(indices[k]) + 1`` long and non-decreasing (it may start above zero).
    indices
        ``ndim`` coordinate arrays: ``indices[k]`` holds coordinates along dimension
        ``axis_order[k]``.
    values
        One value per leaf (``len(indices[-1])`` of them).
    shape
        The dense shape, in the tensor's own dimension order.
    axis_order
        The dimension stored at each level, outermost first (default
        ``0, 1, ..., ndim - 1``).
    level_formats
        ``"compressed"`` (default) or ``"dense"`` for each level, as TACO's: a dense
        level gives every parent all ``shape[axis_order[k]]`` children, coordinates
        ``0, 1, ...`` in order (checked in any case: O(size of the level)). See
        :meth:`SparseCOO.to_csf`.
    validate
        Check every pointer array and every reachable coordinate (O(size)).

    Raises
    ------
    ValueError
        Wrong numbers of arrays, lengths, malformed pointers, a bad ``axis_order`` or
        ``level_formats``, or a level declared dense that is not.
    IndexError
        A coordinate outside the shape.
    TypeError
        Non-integer index arrays, non-numeric values, or ``indptr``/``indices`` not
        sequences of arrays.

    See Also
    --------
    SparseCOO.to_csf : Build one from coordinates, in any axis order.
    SparseCSF.from_jagged : A nested Jagged as a CSF whose pointers are its offsets.

    Notes
    -----
    The constructor copies nothing; CuPy arrays make a tensor on their device (checked
    by kernels there, see :class:`SparseCOO`). Only nodes reachable from level 0 are
    read: level ``k + 1`` uses the positions ``indptr[k][0]:indptr[k][-1]`` of its
    buffers (on the device their bounds are read back once, and cached). In
    the *canonical* form the coordinates of every fibre's children are strictly
    increasing and no node is childless (what :meth:`SparseCOO.to_csf` builds from a
    canonical COO); repeated leaves add up when densified. ``csf[i]`` is the sub-fibre
    at coordinate ``i`` of the outermost level and ``csf[a:b]`` a range of them; both
    are views.

    Examples
    --------
    The 4-d example of the Compressed Sparse Fibers post, as a tree of prefixes
    (coordinates 1-based as in the post, so the shape is ``(3, 3, 3, 4)``):

    >>> indices = np.array([[1, 1, 1, 1, 1, 2, 2, 2],
    ...                     [1, 1, 2, 2, 2, 2, 2, 2],
    ...                     [1, 1, 1, 1, 2, 2, 2, 2],
    ...                     [2, 3, 1, 3, 1, 1, 3, 2]])
    >>> csf = asp.SparseCOO(indices, np.arange(1.0, 9.0), (3, 3, 3, 4)).to_csf()
    >>> csf
    SparseCSF(shape=(3, 3, 3, 4), nnz=8, dtype=float64, axis_order=(0, 1, 2, 3))
    >>> csf.indices[0], csf.indptr[0]  # i = 1 has children 0:2 of level 1, i = 2 has 2:3
    (array([1, 2]), array([0, 2, 3]))
    >>> sub = csf[2]  # the i = 2 sub-tensor of the post, over (j, k, l)
    >>> sub.to_coo().indices
    array([[2, 2, 2],
           [2, 2, 2],
           [1, 2, 3]])
    >>> sub.to_coo().values  # in canonical (sorted) order
    array([6., 8., 7.])
    >>> sub.values, np.shares_memory(sub.values, csf.values)  # its own values, viewed
    (array([6., 7., 8.]), True)

    The same tensor with the last dimension outermost:

    >>> asp.SparseCOO(indices, np.arange(1.0, 9.0), (3, 3, 3, 4)).to_csf([3, 0, 1, 2]).indices[0]
    array([1, 2, 3])
    """

    __slots__ = ("_canonical", "_range_cache", "axis_order", "indices", "indptr",
                 "level_formats", "shape", "values")
    format = "csf"

    def __init__(self, indptr: Any, indices: Any, values: Any, shape: Any,
                 axis_order: Sequence[int] | None = None, *,
                 level_formats: Sequence[str] | None = None, validate: bool = True) -> None:
        func = "SparseCSF"
        xp = array_module(func, indptr=indptr, indices=indices, values=values)
        validate = v.check_bool(func, "validate", validate)
        dims = v.check_shape(func, shape)
        order = v.check_axis_order(func, axis_order, len(dims))
        formats = lv.check_level_formats(func, level_formats, len(dims))
        ptrs = v.check_index_list(func, "indptr", indptr, len(dims) - 1)
        idxs = v.check_index_list(func, "indices", indices, len(dims))
        vals = v.as_sparse_values(func, values)
        v.check_length(func, "values", vals, len(idxs[-1]), "the last level of indices")
        for k, ptr in enumerate(ptrs):
            v.check_length(func, f"indptr[{k}]", ptr, len(idxs[k]) + 1, f"indices[{k}]")
        self.indptr: tuple[np.ndarray, ...] = ptrs
        self.indices: tuple[np.ndarray, ...] = idxs
        self.values: np.ndarray = vals
        self.shape: tuple[int, ...] = dims
        self.axis_order: tuple[int, ...] = order
        self.level_formats: tuple[str, ...] = formats
        self._canonical: bool | None = None
        self._range_cache: list[tuple[int, int]] | None = None
        if validate:
            lv.check(func, ptrs, idxs, dims, order)
            device_checks(func, xp)
        if "dense" in formats:  # what the formats declare is checked in any case
            lv.check_dense_levels(func, ptrs, idxs, self._ranges(),
                                  [dims[a] for a in order], formats)

    @classmethod
    def _new(cls, indptr: Sequence[np.ndarray], indices: Sequence[np.ndarray],
             values: np.ndarray, shape: tuple[int, ...], axis_order: tuple[int, ...],
             canonical: bool | None = None,
             level_formats: tuple[str, ...] | None = None) -> SparseCSF:
        out = cls.__new__(cls)
        out.indptr = tuple(p if p.dtype in v.INDEX_DTYPES else p.astype(np.int64)
                           for p in indptr)
        out.indices = tuple(i if i.dtype in v.INDEX_DTYPES else i.astype(np.int64)
                            for i in indices)
        out.values = values
        out.shape = tuple(shape)
        out.axis_order = tuple(axis_order)
        out.level_formats = (level_formats if level_formats is not None
                             else ("compressed",) * len(out.shape))
        out._canonical = canonical
        out._range_cache = None
        return out

    def _map(self, fn: Any) -> SparseCSF:
        return SparseCSF._new([fn(p) for p in self.indptr], [fn(i) for i in self.indices],
                              fn(self.values), self.shape, self.axis_order, self._canonical,
                              self.level_formats)

    def __repr__(self) -> str:
        formats = (f", level_formats={self.level_formats}" if "dense" in self.level_formats
                   else "")
        return (f"SparseCSF(shape={self.shape}, nnz={self.nnz}, dtype={self.dtype}, "
                f"axis_order={self.axis_order}{formats}{self._repr_device()})")

    # ----------------------------------------------------------------- internals
    def _ranges(self) -> list[tuple[int, int]]:
        """Return the reachable ``[lo, hi)`` positions of every level (the last one: the leaves).

        Cached. On the device the windows are computed there and read back at once
        (one synchronisation, raising the device checks so far).
        """
        if self._range_cache is None:
            windows: list[Any] = []
            window = None
            for ptr in self.indptr:
                window = cm.pointer_window(ptr, window)
                windows.append(window)
            if self.xp is not np:
                flat = fetch("SparseCSF", *[w[i] for w in windows for i in (0, 1)])
                windows = list(zip(flat[::2], flat[1::2], strict=True))
            self._range_cache = [(0, len(self.indices[0])), *windows]
        return self._range_cache

    def _compact(self) -> SparseCSF:
        """Return this tensor with every level cut to its reachable part (pointers rebased)."""
        ranges = self._ranges()
        levels = list(zip(ranges, self.indices, strict=True))
        if all(lo == 0 and hi == len(idx) for (lo, hi), idx in levels):
            return self
        indices = [idx[lo:hi] for (lo, hi), idx in levels]
        indptr = []
        for k, ptr in enumerate(self.indptr):
            lo, hi = ranges[k]
            part = ptr[lo:hi + 1]
            child_lo = ranges[k + 1][0]
            indptr.append(part - child_lo if child_lo else part)
        lo, hi = ranges[-1]
        return SparseCSF._new(indptr, indices, self.values[lo:hi], self.shape, self.axis_order,
                              self._canonical)

    # ----------------------------------------------------------------- properties
    @property
    def nnz(self) -> int:
        """Number of stored leaves (repeated leaves and explicit zeros included).

        Examples
        --------
        >>> asp.SparseCSF.from_dense(np.array([[0, 1], [2, 3]])).nnz
        3
        """
        lo, hi = self._ranges()[-1]
        return hi - lo

    @property
    @cm.checked
    def is_canonical(self) -> bool:
        """Whether every fibre's children are strictly increasing and no node is childless.

        Examples
        --------
        >>> asp.SparseCSF([[0, 2]], [[0], [1, 1]], np.array([1, 2]), (1, 2)).is_canonical
        False
        """
        if self._canonical is None:
            self._canonical = lv.is_canonical(self.indptr, self.indices, self._ranges())
        return self._canonical

    def validate(self) -> SparseCSF:
        """Check every pointer array and every reachable coordinate (O(size)); return self.

        Returns
        -------
        SparseCSF
            ``self``, so calls chain.

        Raises
        ------
        ValueError
            A pointer array that decreases or points past the next level.
        IndexError
            A coordinate outside the shape.

        Notes
        -----
        On the device check kernels record the first violation; this waits for them
        (a synchronisation). Their messages name ``offsets`` for the pointers.

        Examples
        --------
        >>> csf = asp.SparseCSF([[0, 1]], [[1], [0]], np.array([1.0]), (2, 2))
        >>> csf.validate().nnz
        1
        """
        lv.check("SparseCSF", self.indptr, self.indices, self.shape, self.axis_order)
        device_checks("SparseCSF.validate", self.xp, wait=True)
        return self

    # --------------------------------------------------------------- constructors
    @classmethod
    def from_dense(cls, dense: Any, axis_order: Sequence[int] | None = None, *,
                   level_formats: Sequence[str] | None = None) -> SparseCSF:
        """Canonical CSF of the nonzero entries of a dense array.

        Parameters
        ----------
        dense
            Numeric array of at least one dimension (NaN counts as nonzero).
        axis_order
            Level order (default ``0, 1, ..., ndim - 1``; pyarrow's
            ``from_dense_numpy`` instead sorts the dimensions by size).
        level_formats
            ``"dense"`` or ``"compressed"`` for each level (default all compressed);
            see :meth:`SparseCOO.to_csf`.

        Returns
        -------
        SparseCSF
            New int64 arrays (on the device of a CuPy input: one synchronisation for
            the entries and one per level).

        Raises
        ------
        ValueError
            A 0-d input, a bad ``axis_order`` or ``level_formats``.
        TypeError
            Non-numeric input.

        Examples
        --------
        >>> dense = np.zeros((2, 3))
        >>> dense[0, 2], dense[1, 0], dense[1, 2] = 1.0, 2.0, 3.0
        >>> csf = asp.SparseCSF.from_dense(dense, axis_order=[1, 0])
        >>> csf.indices, csf.values
        ((array([0, 2]), array([1, 0, 1])), array([2., 1., 3.]))

        Rows dense, columns compressed (CSR as a CSF):

        >>> csr_like = asp.SparseCSF.from_dense(dense, level_formats=("dense", "compressed"))
        >>> csr_like.indptr, csr_like.indices
        ((array([0, 1, 3]),), (array([0, 1]), array([2, 0, 2])))
        """
        func = "SparseCSF.from_dense"
        arr = cm.dense_operand(func, "dense", dense)
        shape = v.check_shape(func, arr.shape)
        order = v.check_axis_order(func, axis_order, len(shape))
        formats = lv.check_level_formats(func, level_formats, len(shape))
        xp = module_of(arr)
        nz = cm.nonzero(func, arr)
        keys = [xp.ascontiguousarray(nz[a], dtype=np.int64) for a in order]  # strided views
        sizes = [shape[a] for a in order]
        keys, vals = cm.sorted_coords(keys, sizes, arr[nz])
        if "dense" in formats:
            indptr, indices, vals = lv.build_formatted_levels(func, keys, vals, sizes, formats)
            return cls._new(indptr, indices, vals, shape, order, None, formats)
        indptr, indices = lv.build_levels(func, keys)
        return cls._new(indptr, indices, vals, shape, order, canonical=True)

    @classmethod
    def from_arrow(cls, tensor: Any, axis_order: Sequence[int] | None = None) -> SparseCSF:
        """Wrap a pyarrow ``SparseCSFTensor`` (zero-copy), or convert another pyarrow tensor.

        Parameters
        ----------
        tensor
            ``pyarrow.SparseCSFTensor`` (wrapped), or a COO/CSR/CSC sparse or dense
            pyarrow tensor (converted).
        axis_order
            The axis order the ``SparseCSFTensor`` was built with. pyarrow does not
            expose it to Python, so None finds it: the one order whose dimension sizes
            hold the stored indices, or, when several do and the tensor has at most
            2**22 dense cells, the one that decodes as pyarrow does (docs/sparse-tensors.md,
            "pyarrow caveats"). For other inputs, the order of the result (default
            ``0, 1, ..., ndim - 1``).

        Returns
        -------
        SparseCSF
            From a ``SparseCSFTensor``: every pointer, index and value array is a view
            of pyarrow's buffers.

        Raises
        ------
        TypeError
            Not a pyarrow tensor.
        ValueError, IndexError
            A malformed structure, e.g. from a wrong ``axis_order`` (pyarrow does
            not check); a large ``SparseCSFTensor`` whose axis order is ambiguous and
            was not given.

        Examples
        --------
        >>> dense = np.zeros((3, 2))
        >>> dense[0, 1], dense[2, 0] = 1.0, 2.0
        >>> t = pa.SparseCSFTensor.from_dense_numpy(dense)  # levels: axis 1, then 0
        >>> csf = asp.SparseCSF.from_arrow(t)
        >>> csf.axis_order
        (1, 0)
        >>> np.array_equal(csf.to_dense(), dense)
        True
        """
        func = "SparseCSF.from_arrow"
        got = _interop.from_arrow(func, tensor, axis_order=axis_order)
        if isinstance(got, SparseCSF):
            return got
        return cast(SparseCSF, got.to_csf(axis_order))

    @classmethod
    @fill_doc(_interop.FROM_SCIPY, **_CSF_DOC)
    def from_scipy(cls, matrix: Any, axis_order: Sequence[int] | None = None) -> SparseCSF:
        """Read a scipy.sparse array or matrix (converted: scipy has no CSF)."""
        got = _interop.from_scipy("SparseCSF.from_scipy", matrix)
        return cast(SparseCSF, got.to_csf(axis_order))

    @classmethod
    @fill_doc(_interop.FROM_PYDATA, **_CSF_DOC)
    def from_pydata_sparse(cls, array: Any,
                           axis_order: Sequence[int] | None = None) -> SparseCSF:
        """Read a pydata ``sparse`` array (converted through COO or GCXS)."""
        got = _interop.from_pydata("SparseCSF.from_pydata_sparse", array)
        return cast(SparseCSF, got.to_csf(axis_order))

    @classmethod
    @fill_doc(_interop.FROM_TORCH, **_CSF_DOC)
    def from_torch(cls, tensor: Any, axis_order: Sequence[int] | None = None) -> SparseCSF:
        """Read a CPU torch tensor (converted: torch has no CSF)."""
        got = _interop.from_torch("SparseCSF.from_torch", tensor)
        return cast(SparseCSF, got.to_csf(axis_order))

    @classmethod
    def from_jagged(cls, jagged: Jagged, shape: Sequence[int] | None = None) -> SparseCSF:
        """Read a nested :class:`Jagged` as a CSF tensor whose pointer levels are its offsets.

        The element at list positions ``(r, p1, ..., pd)`` of a Jagged with ``d``
        levels (``jagged[r][p1]...[pd]``) becomes the entry at coordinates
        ``(r, p1, ..., pd)`` of a ``d + 1``-dimensional tensor, in axis order
        ``0, 1, ..., d``:

        * ``indptr[k]`` **is** the offsets of level ``k`` (``jagged.offsets``,
          ``jagged.values.offsets``, ...) and ``values`` the leaf values: views;
        * ``indices[0] = arange(num_rows)`` and ``indices[k]`` is each element's
          position in its list (computed).

        Parameters
        ----------
        jagged
            A Jagged of scalar numeric values, nested to any depth.
        shape
            The dense shape; default ``(num_rows, longest list of level 1, ...)``.
            Each dimension must hold the longest list of its level.

        Returns
        -------
        SparseCSF
            Zero-copy pointers and values. Rows with no elements are childless nodes,
            so the result is canonical only when no list is empty. Null rows and null
            elements are left out (not stored); that case is converted (copies). A
            Jagged on the device gives a tensor there: its masks, each level's bounds
            and the longest lists are read back (a few synchronisations per level).

        Raises
        ------
        TypeError
            Not a Jagged, or vector (2-d) values.
        ValueError
            A ``shape`` of the wrong length or too small for a list.

        See Also
        --------
        SparseCSF.to_jagged : The inverse.
        Jagged.to_padded : The dense equivalent.

        Examples
        --------
        >>> j = asp.Jagged.from_list([[[1.0, 2.0], [3.0]], [], [[4.0, 5.0, 6.0]]])
        >>> csf = asp.SparseCSF.from_jagged(j)
        >>> csf
        SparseCSF(shape=(3, 2, 3), nnz=6, dtype=float64, axis_order=(0, 1, 2))
        >>> csf.indptr[0] is j.offsets, csf.indptr[1] is j.values.offsets
        (True, True)
        >>> csf.indices
        (array([0, 1, 2]), array([0, 1, 0]), array([0, 1, 0, 0, 1, 2]))
        >>> np.array_equal(csf.to_dense(), j.to_padded(pad_value=0.0))
        True
        """
        func = "SparseCSF.from_jagged"
        if not isinstance(jagged, Jagged):
            msg = f"{func}: expected a Jagged, got {type(jagged).__name__}"
            raise ArrowSparseTypeError(msg)
        levels = [jagged]
        while isinstance(levels[-1].values, Jagged):
            levels.append(levels[-1].values)
        leaf = levels[-1].values
        if leaf.ndim != 1:
            msg = f"{func}: the leaf values must be scalars, got shape {leaf.shape}"
            raise ArrowSparseTypeError(msg)
        v.as_sparse_values(func, leaf)
        masks = [m for level in levels for m in (level.validity, level.values_validity)
                 if m is not None]
        nulls = not all(fetch(func, *[m.all() for m in masks]))
        if nulls:
            indices, values, dims = lv.jagged_with_nulls(func, levels, shape)
            return cast(SparseCSF, SparseCOO._new(indices, values, dims).to_csf())
        indptr, coords, leaf, dims = lv.jagged_levels(func, levels, shape)
        return cls._new(indptr, coords, leaf, dims, tuple(range(len(dims))))

    # ------------------------------------------------------------------ exporters
    def to_jagged(self) -> Jagged:
        """Return the fibres as a nested :class:`Jagged` of the values (offsets = pointers).

        Row ``r`` of the result is the fibre of node ``r`` of level 0, the
        coordinate ``indices[0][r]`` along ``axis_order[0]``; the element at list
        positions ``(r, p1, ..., pd)`` is the leaf whose coordinate at level ``k``
        is ``indices[k][indptr[k - 1][...] + pk]``. For a CSF built by
        :meth:`from_jagged` (coordinates equal to list positions) this is the
        original Jagged.

        Returns
        -------
        Jagged
            ``ndim - 1`` levels; every offsets array is an ``indptr`` array and the
            leaf values are ``values`` (views, nothing copied). The coordinates
            stay in :attr:`indices`.

        Raises
        ------
        ValueError
            A 1-d tensor (it has no pointer level).

        See Also
        --------
        SparseCSF.from_jagged : The inverse.

        Examples
        --------
        >>> j = asp.Jagged.from_list([[[1.0, 2.0], [3.0]], [], [[4.0, 5.0, 6.0]]])
        >>> asp.SparseCSF.from_jagged(j).to_jagged().to_list()
        [[[1.0, 2.0], [3.0]], [], [[4.0, 5.0, 6.0]]]
        """
        if self.ndim < 2:
            msg = "SparseCSF.to_jagged: a 1-d tensor has no pointer level to use as offsets"
            raise ArrowSparseValueError(msg)
        out: Any = self.values
        for ptr in reversed(self.indptr):
            out = Jagged(out, ptr, validate=False)
        return out  # type: ignore[no-any-return]

    def to_dense(self) -> np.ndarray:
        """Dense array of ``shape``; repeated leaves add up.

        Returns
        -------
        numpy.ndarray
            A new C-ordered array of the values dtype.

        Examples
        --------
        >>> csf = asp.SparseCSF([[0, 1, 3]], [[0, 2], [1, 0, 1]], np.array([1, 2, 3]), (3, 2))
        >>> csf.to_dense()
        array([[0, 1],
               [0, 0],
               [2, 3]])
        """
        v.check_nbytes("SparseCSF.to_dense", f"the dense array of shape {self.shape}",
                       self.shape, self.values.itemsize)
        return self.to_coo().to_dense()

    def to_coo(self) -> SparseCOO:
        """Coordinate lists in stored order (sorted by ``axis_order`` when canonical).

        Returns
        -------
        SparseCOO
            Shares ``values`` (the reachable range); ``indices`` is new (each level
            is expanded to one coordinate per leaf). Canonical when this CSF is and
            ``axis_order`` is ``0, 1, ...``.

        Examples
        --------
        >>> csf = asp.SparseCSF([[0, 1, 3]], [[0, 2], [1, 0, 1]], np.array([1, 2, 3]), (3, 2))
        >>> csf.to_coo().indices
        array([[0, 2, 2],
               [1, 0, 1]])
        """
        coords = lv.level_coords(self.indptr, self.indices, self._ranges())
        lo, hi = self._ranges()[-1]
        dtype = np.result_type(*[c.dtype for c in coords])
        indices = self.xp.empty((self.ndim, hi - lo), dtype=dtype)
        for k, axis in enumerate(self.axis_order):
            indices[axis] = coords[k]
        identity = self.axis_order == tuple(range(self.ndim))
        canonical = True if identity and self._canonical else None
        return SparseCOO._new(indices, self.values[lo:hi], self.shape, canonical)

    @cm.checked
    @fill_doc(_TO_COMPRESSED, name="to_csr", cls="SparseCSR", order="(0, 1)", minor="column",
              bad_ndim="1-d (an N-d tensor compresses its first dimension)",
              read=" (zero-copy; only ``indptr`` is built, after checking the rows' order: one "
                   "synchronisation on the device)",
              indptr="array([0, 1, 1, 3])")
    def to_csr(self) -> SparseCSR:
        """Convert to a :class:`SparseCSR` (an N-d tensor through :meth:`to_coo`)."""
        if self.ndim > 2:
            return cast(SparseCSR, self.to_coo().to_csr())
        self._check_2d("SparseCSF.to_csr")
        parts = lv.as_compressed(self.indptr, self.indices, self.values, self.shape,
                                 self.axis_order, 0)
        if parts is None:
            return cast(SparseCSR, self.to_coo().to_csr())
        csr: SparseCSR = SparseCSR._new(*parts, self.shape, self._canonical or None)
        return csr

    @cm.checked
    @fill_doc(_TO_COMPRESSED, name="to_csc", cls="SparseCSC", order="(1, 0)", minor="row",
              bad_ndim="not 2-d",
              read=" (zero-copy)", indptr="array([0, 1, 3])")
    def to_csc(self) -> SparseCSC:
        """Convert this 2-d tensor to a :class:`SparseCSC`."""
        self._check_2d("SparseCSF.to_csc")
        parts = lv.as_compressed(self.indptr, self.indices, self.values, self.shape,
                                 self.axis_order, 1)
        if parts is None:
            return cast(SparseCSC, self.to_coo().to_csc())
        csc: SparseCSC = SparseCSC._new(*parts, self.shape, self._canonical or None)
        return csc

    def to_csf(self, axis_order: Sequence[int] | None = None, *,
               level_formats: Sequence[str] | None = None) -> SparseCSF:
        """Convert to another axis order (None keeps the current one) or level formats.

        Parameters
        ----------
        axis_order
            The new level order; None or the current order returns ``self`` (when the
            level formats stay too).
        level_formats
            ``"dense"`` or ``"compressed"`` for each level (None: all compressed when
            the order changes, else the current formats); see :meth:`SparseCOO.to_csf`.

        Returns
        -------
        SparseCSF
            Re-sorted through COO (copies) when the order or the formats change. The
            explicit zeros of dense levels stay stored entries.

        Raises
        ------
        ValueError
            Not a permutation of the dimensions, or bad ``level_formats``.

        Examples
        --------
        >>> csf = asp.SparseCSF([[0, 1, 3]], [[0, 2], [1, 0, 1]], np.array([1, 2, 3]), (3, 2))
        >>> csf.to_csf([1, 0]).indices
        (array([0, 1]), array([2, 0, 2]))
        """
        func = "SparseCSF.to_csf"
        order = v.check_axis_order(func, axis_order if axis_order is not None
                                   else self.axis_order, self.ndim)
        if level_formats is None and order == self.axis_order:
            return self
        formats = lv.check_level_formats(func, level_formats, self.ndim)
        if order == self.axis_order and formats == self.level_formats:
            return self
        return cast(SparseCSF, self.to_coo().to_csf(order, level_formats=formats))

    @fill_doc(_interop.TO_ARROW, **_CSF_DOC)
    def to_arrow(self) -> Any:
        """Convert to a ``pyarrow.SparseCSFTensor`` (with its ``axis_order``)."""
        self._on_host("to_arrow")
        compact = self._compact()
        return _interop.csf_to_arrow(compact.indptr, compact.indices, compact.values, self.shape,
                                     self.axis_order)

    @fill_doc(_interop.TO_SCIPY, **_CSF_DOC)
    def to_scipy(self, *, matrix: bool = False) -> Any:
        """Convert to a scipy ``coo_array`` (``coo_matrix`` with ``matrix=True``)."""
        self._on_host("to_scipy")
        return _interop.to_scipy(self.to_coo(), matrix)

    @fill_doc(_interop.TO_PYDATA, **_CSF_DOC)
    def to_pydata_sparse(self) -> Any:
        """Convert to a pydata ``sparse.COO`` (through :meth:`to_coo`)."""
        self._on_host("to_pydata_sparse")
        return _interop.to_pydata(self.to_coo())

    @fill_doc(_interop.TO_TORCH, **_CSF_DOC)
    def to_torch(self) -> Any:
        """Convert to a ``torch.sparse_coo_tensor`` (through :meth:`to_coo`)."""
        self._on_host("to_torch")
        return _interop.to_torch(self.to_coo())

    # ------------------------------------------------------------------ operations
    def _check_2d(self, func: str) -> None:
        if self.ndim != 2:
            msg = f"{func}: needs a 2-d tensor, got shape {self.shape}"
            raise ArrowSparseValueError(msg)

    def canonical(self) -> SparseCSF:
        """Fibres sorted, duplicates summed, childless nodes dropped (same axis order).

        Returns
        -------
        SparseCSF
            ``self`` when already canonical; else rebuilt through COO (new arrays).

        Examples
        --------
        >>> csf = asp.SparseCSF([[0, 2]], [[0], [1, 1]], np.array([1, 2]), (1, 2))
        >>> fixed = csf.canonical()
        >>> fixed.indices, fixed.values
        ((array([0]), array([1])), array([3]))
        """
        if self.is_canonical:
            return self
        return cast(SparseCSF, self.to_coo().canonical().to_csf(self.axis_order))

    @fill_doc(_SUM,
              axis="None for the total, else the dimension (of ``shape``) to sum over.",
              returns="With ``axis``, a new dense array without that axis.",
              build="asp.SparseCSF([[0, 1, 3]], [[0, 2], [1, 0, 1]], np.array([1, 2, 3]), (3, 2))",
              calls="x.sum(), x.sum(axis=1)",
              result="(np.int64(6), array([1, 0, 5]))")
    def sum(self, axis: int | None = None) -> Any:
        """Sum of all entries, or along one axis (a dense result, through COO)."""
        if axis is None:
            lo, hi = self._ranges()[-1]
            return self.values[lo:hi].sum(dtype=cm.sum_dtype(self.dtype))
        v.check_axis("SparseCSF.sum", axis, self.ndim)
        return self.to_coo().sum(axis)

    @fill_doc(_MULTIPLY,
              other="A number, or an array broadcasting to ``shape``.",
              returns_type="SparseCSF",
              returns="Same structure (index and pointer arrays shared; a sub-fibre is compacted "
                      "first, rebasing its pointers) with new values. Only stored entries are "
                      "multiplied.",
              build="asp.SparseCSF([[0, 1, 3]], [[0, 2], [1, 0, 1]], np.array([1, 2, 3]), (3, 2))",
              doubled="array([2, 4, 6])",
              factor="np.array([[1], [10], [100]])",
              multiplied="array([  1, 200, 300])")
    def multiply(self, other: Any) -> SparseCSF:
        """Elementwise product with a scalar or a dense array broadcast to ``shape``."""
        func = "SparseCSF.multiply"
        compact = self._compact()

        def coords() -> list[np.ndarray]:
            levels = lv.level_coords(compact.indptr, compact.indices, compact._ranges())
            return [levels[self.axis_order.index(d)] for d in range(self.ndim)]

        new = compact.values * cm.multiplier(func, compact.values, other, self.shape, coords)
        return SparseCSF._new(compact.indptr, compact.indices, new, self.shape,
                              self.axis_order, self._canonical, self.level_formats)

    def transpose(self, axes: Sequence[int] | None = None) -> SparseCSF:
        """Permute the dimensions by relabelling the levels (zero-copy).

        Parameters
        ----------
        axes
            New order of the dimensions, as in :func:`numpy.transpose` (default:
            reversed).

        Returns
        -------
        SparseCSF
            The same buffers; only ``shape`` and ``axis_order`` change (level ``k``
            now stores the new dimension that old dimension ``axis_order[k]`` became).

        Raises
        ------
        ValueError
            ``axes`` is not a permutation of the dimensions.

        Examples
        --------
        >>> csf = asp.SparseCSF([[0, 1, 3]], [[0, 2], [1, 0, 1]], np.array([1, 2, 3]), (3, 2))
        >>> csf.T
        SparseCSF(shape=(2, 3), nnz=3, dtype=int64, axis_order=(1, 0))
        >>> np.array_equal(csf.T.to_dense(), csf.to_dense().T)
        True
        """
        if axes is None:
            perm: tuple[int, ...] = tuple(reversed(range(self.ndim)))
        else:
            perm = v.check_axis_order("SparseCSF.transpose", axes, self.ndim)
        new_of_old = {old: new for new, old in enumerate(perm)}
        order = tuple(new_of_old[a] for a in self.axis_order)
        shape = tuple(self.shape[a] for a in perm)
        # Canonical form depends on the structure only, which relabelling keeps.
        return SparseCSF._new(self.indptr, self.indices, self.values, shape, order,
                              self._canonical)

    @property
    def T(self) -> SparseCSF:  # noqa: N802 - numpy's name
        """The transpose (dimensions reversed): the same buffers, relabelled.

        Examples
        --------
        >>> asp.SparseCSF.from_dense(np.ones((2, 3, 4))).T.axis_order
        (2, 1, 0)
        """
        return self.transpose()

    def __getitem__(self, key: Any) -> Any:
        """Sub-fibre(s) along the outermost stored dimension ``axis_order[0]`` (views).

        ``csf[i]`` drops that dimension; ``csf[a:b]`` keeps it with size ``b - a``.
        """
        func = "SparseCSF"
        top = self.indices[0]
        size = self.shape[self.axis_order[0]]
        if isinstance(key, slice):
            start, stop, step = key.indices(size)
            if step != 1:
                msg = f"{func}: slices must have step 1; convert with to_coo() for other orders"
                raise ArrowSparseValueError(msg)
            stop = max(start, stop)
            positions = cm.flatnonzero(func, (top >= start) & (top < stop))
            return self._select_fibres(positions, start, stop, drop=False)
        if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)):
            msg = (f"{func}: sub-fibres are selected with an int or a slice along the "
                   f"outermost stored dimension, got {type(key).__name__}")
            raise ArrowSparseTypeError(msg)
        i = int(key)
        if not -size <= i < size:
            msg = (f"{func}: index {i} out of range for dimension {self.axis_order[0]} "
                   f"of size {size}")
            raise ArrowSparseIndexError(msg)
        i %= size
        return self._select_fibres(cm.flatnonzero(func, top == i), i, i + 1, drop=True)

    def _select_fibres(self, positions: np.ndarray, start: int, stop: int, drop: bool) -> Any:
        """Select the sub-fibres of the level-0 nodes at ``positions`` (coordinates ``start:stop``).

        Views when those nodes are contiguous; ``drop`` removes the outer dimension (an
        integer index). An unsorted outer level is gathered through COO (copies). On the
        device the first and last positions and their pointers are read back.
        """
        func = "SparseCSF"
        a0 = self.axis_order[0]
        p = q = 0
        if len(positions):
            p, last = cm.ends(func, positions)
            q = last + 1
        if q - p != len(positions):  # not contiguous
            coo = self.to_coo()
            keep = cm.flatnonzero(func, (coo.indices[a0] >= start) & (coo.indices[a0] < stop))
            idx = coo.indices[:, keep]
            idx[a0] = idx[a0] - start
            dims = list(self.shape)
            dims[a0] = stop - start
            sub = SparseCOO._new(idx, coo.values[keep], tuple(dims)).to_csf(self.axis_order)
            return sub[0] if drop else sub  # type: ignore[index]
        if drop:
            if self.ndim == 1:
                return self.values[p:q].sum(dtype=self.dtype)
            shape = tuple(s for d, s in enumerate(self.shape) if d != a0)
            order = tuple(a - (a > a0) for a in self.axis_order[1:])
            ptr0 = self.indptr[0]
            lo, hi = fetch(func, ptr0[p], ptr0[q]) if len(positions) else fetch(func, ptr0[0]) * 2
            indptr, indices, values = _subtree(func, self.indptr[1:], self.indices[1:],
                                               self.values, lo, hi)
            return SparseCSF._new(indptr, indices, values, shape, order, self._canonical or None)
        shape_list = list(self.shape)
        shape_list[a0] = stop - start
        indptr, indices, values = _subtree(func, self.indptr, self.indices, self.values, p, q)
        top = indices[0] - start if start else indices[0]
        return SparseCSF._new(indptr, (top,) + indices[1:], values, tuple(shape_list),
                              self.axis_order, self._canonical or None)


def _subtree(func: str, indptr: tuple[Any, ...], indices: tuple[Any, ...], values: Any,
             lo: int, hi: int) -> tuple[tuple[Any, ...], tuple[Any, ...], Any]:
    """Return the levels of the level-0 nodes ``lo:hi`` and everything below them, alone.

    Every level's indices and the values are views of the window the nodes reach; the
    pointers are rebased to start at zero (small copies). On the device each pointer
    level's ends are read back: one synchronisation per level.
    """
    kept_indices = [indices[0][lo:hi]]
    kept_indptr = []
    for level, ptr in enumerate(indptr):
        part = ptr[lo:hi + 1]
        lo, hi = cm.ends(func, part)
        kept_indptr.append(part - lo if lo else part)
        kept_indices.append(indices[level + 1][lo:hi])
    return tuple(kept_indptr), tuple(kept_indices), values[lo:hi]
