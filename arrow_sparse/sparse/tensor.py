"""``SparseTensor``: the base class of the sparse formats, and their registry by name.

The formats convert into each other (``coo.to_csr()``, ``csr.to_coo()``, ``csf.to_csc()``
...), so each must reach the others' classes. Modules import only downwards, in the
order coordinates, compressed lines, compressed fibres (``coo`` <- ``csr`` <- ``csc``
<- ``csf``); a conversion the other way finds its class by name in the registry this
module keeps, :meth:`SparseTensor._format`, which every format joins when its class is
defined (``__init_subclass__``). See :mod:`arrow_sparse.sparse`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

from .._backend import device_of, module_of, transfer, transfer_target
from .._docs import TO_DEVICE, fill_doc
from ..errors import ArrowSparseTypeError, ArrowSparseValueError

__all__ = ["UFUNC_PROTOCOL", "SparseTensor"]

#: The format classes by their ``format`` name, filled as they are defined.
_FORMATS: dict[str, type[SparseTensor]] = {}

#: ``"apply"``: numpy's ufunc protocol for sparse tensors, which needs the formats and
#: so is registered by ``sparse/_ufunc.py`` when the package is imported.
UFUNC_PROTOCOL: dict[str, Callable[..., Any]] = {}

#: The docstring of ``sum`` of each format, after its summary line.
_SUM = """
    Parameters
    ----------
    axis
        {axis}

    Returns
    -------
    numpy scalar or numpy.ndarray
        numpy's sum dtype (int64 for smaller ints and bools). {returns}

    Raises
    ------
    IndexError
        ``axis`` out of range.

    See Also
    --------
    numpy.sum : The dense equivalent.

    Examples
    --------
    >>> x = {build}
    >>> {calls}
    {result}
    """

#: The docstring of ``multiply`` of each format, after its summary line.
_MULTIPLY = """
    Parameters
    ----------
    other
        {other}

    Returns
    -------
    {returns_type}
        {returns}

    Raises
    ------
    ValueError
        ``other`` does not broadcast to ``shape``.
    TypeError
        ``other`` is not numeric, or is sparse.

    Examples
    --------
    >>> x = {build}
    >>> (x * 2).values
    {doubled}
    >>> x.multiply({factor}).values
    {multiplied}
    """

#: The docstring of ``SparseTensor.from_<format>``, after each one's summary line.
_FROM_FORMAT = """
    Parameters
    ----------
    {arg}
        The {what} to convert.

    Returns
    -------
    SparseTensor
        An instance of the class it is called on.

    Raises
    ------
    TypeError
        ``{arg}`` is not a :class:`{cls}`.

    Examples
    --------
    >>> {arg} = {build}
    >>> {call}
    {result}
    """


def _apply(ufunc: np.ufunc, *inputs: Any) -> Any:
    """Apply an operator's ufunc to its operands directly, not through numpy's dispatch.

    Through it, an array operand first would take the call, and CuPy's
    ``__array_ufunc__`` knows no sparse tensor.
    """
    return UFUNC_PROTOCOL["apply"](ufunc, "__call__", inputs, {})


class SparseTensor:
    """Base class of :class:`SparseCOO`, :class:`SparseCSR`, :class:`SparseCSC`, :class:`SparseCSF`.

    Holds what every format shares: ``shape``, ``ndim``, ``dtype``, ``nnz``, the
    conversions between formats, and the operators defined on top of them.
    Subclasses store numpy arrays, or CuPy arrays on one CUDA device (every operation
    then runs there, see :meth:`to_device`), and never modify them in place: every
    operation returns a new object, which may share buffers with its input (said per
    method).
    """

    __slots__ = ()
    #: What CuPy versions before NEP 13 support compare instead of ``__array_ufunc__``.
    __array_priority__ = 1000
    #: ``"coo"``, ``"csr"``, ``"csc"`` or ``"csf"``.
    format: ClassVar[str] = ""
    shape: tuple[int, ...]
    values: np.ndarray

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Register a class that names its format (``format = "csr"``) under that name."""
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("format"):
            _FORMATS[cls.format] = cls

    @staticmethod
    def _format(name: str) -> Any:
        """Return the class of format ``name`` (``"coo"``, ``"csr"``, ``"csc"`` or ``"csf"``).

        How a format reaches one whose module sits above its own: importing
        :mod:`arrow_sparse.sparse` defines (and so registers) all four.
        """
        return _FORMATS[name]

    # ------------------------------------------------------------------ properties
    @property
    def ndim(self) -> int:
        """Number of dimensions (``len(shape)``)."""
        return len(self.shape)

    @property
    def dtype(self) -> np.dtype:
        """Dtype of the stored values."""
        return self.values.dtype

    @property
    def nnz(self) -> int:
        """Number of stored entries (explicit zeros and duplicates included)."""
        raise NotImplementedError

    @property
    def xp(self) -> ModuleType:
        """Array module of the buffers: numpy, or cupy when they are on a CUDA device."""
        return module_of(self.values)

    @property
    def device(self) -> str:
        """``"cpu"``, or ``"cuda:N"`` when the buffers are CuPy arrays on device N.

        Examples
        --------
        >>> asp.SparseCOO([[0, 1]], np.array([1.0, 2.0]), (3,)).device
        'cpu'
        """
        return device_of(self.values)

    @fill_doc(
        TO_DEVICE, a_kind="a tensor", cls="SparseTensor", copy="a copy of the same format",
        see_also="Jagged.to_device : The same for jagged data.",
        notes="""\
On the device every operation runs with the CUDA kernels and returns CuPy
arrays; the exchanges with pyarrow, scipy, pydata ``sparse`` and torch need
host memory and raise NotImplementedError there.""",
        build="asp.SparseCOO([[0, 1]], np.array([1.0, 2.0]), (3,))")
    def to_device(self, device: str) -> Any:
        """Copy every buffer (indices, pointers, values) to ``device``."""
        func = f"{type(self).__name__}.to_device"
        target = transfer_target(func, device, self.device)
        if target is None:
            return self
        return self._map(lambda x: transfer(func, x, target))

    def _map(self, fn: Callable[[Any], Any]) -> Any:  # pragma: no cover - overridden
        """Return the same tensor with ``fn`` applied to every buffer."""
        raise NotImplementedError

    def _on_host(self, op: str) -> None:
        """Refuse an operation that needs host memory for a tensor on the device."""
        if self.xp is not np:
            name = f"{type(self).__name__}.{op}"
            msg = (f"{name}: the tensor is on {self.device}, but {op} needs host memory; "
                   f"move it first with .to_device('cpu').{op}(...)")
            raise NotImplementedError(msg)

    def _repr_device(self) -> str:
        return "" if self.xp is np else f", device={self.device!r}"

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(shape={self.shape}, nnz={self.nnz}, dtype={self.dtype}"
                f"{self._repr_device()})")

    # -------------------------------------------------------------- conversions
    def to_dense(self) -> np.ndarray:  # pragma: no cover - every subclass overrides
        """Dense numpy array of ``shape``; repeated entries add up."""
        raise NotImplementedError

    def to_coo(self) -> SparseTensor:  # pragma: no cover - every subclass overrides
        """Convert to a :class:`SparseCOO`."""
        raise NotImplementedError

    def to_csr(self) -> SparseTensor:  # pragma: no cover - every subclass overrides
        """Convert to a :class:`SparseCSR`."""
        raise NotImplementedError

    def to_csc(self) -> SparseTensor:  # pragma: no cover - every subclass overrides
        """Convert to a :class:`SparseCSC`."""
        raise NotImplementedError

    def to_csf(self, axis_order: Sequence[int] | None = None) -> SparseTensor:  # pragma: no cover
        """Convert to a :class:`SparseCSF`."""
        raise NotImplementedError

    def canonical(self) -> SparseTensor:  # pragma: no cover - every subclass overrides
        """Sorted, duplicates summed."""
        raise NotImplementedError

    @property
    def is_canonical(self) -> bool:  # pragma: no cover - every subclass overrides
        """Whether the entries are sorted and distinct."""
        raise NotImplementedError

    def validate(self) -> SparseTensor:  # pragma: no cover - every subclass overrides
        """Check the structure in full; return self."""
        raise NotImplementedError

    def sum(self, axis: int | None = None) -> Any:  # pragma: no cover - overridden
        """Sum of all entries, or along one axis (dense)."""
        raise NotImplementedError

    def transpose(self, axes: Sequence[int] | None = None) -> SparseTensor:  # pragma: no cover
        """Permute the dimensions."""
        raise NotImplementedError

    @property
    def T(self) -> SparseTensor:  # noqa: N802 - numpy's name
        """The transpose (dimensions reversed)."""
        return self.transpose()

    def sum_duplicates(self) -> SparseTensor:
        """Alias of :meth:`canonical` (scipy's name): sorted, with duplicates summed.

        Returns
        -------
        SparseTensor
            The canonical form, of the same format (``self`` when already canonical).

        Examples
        --------
        >>> coo = asp.SparseCOO([[1, 0, 1], [2, 0, 2]], np.array([1.0, 2.0, 3.0]), (2, 3))
        >>> coo.sum_duplicates().values
        array([2., 4.])
        """
        return self.canonical()

    def _convert(self, fmt: str) -> SparseTensor:
        if fmt == "coo":
            return self.to_coo()
        if fmt == "csr":
            return self.to_csr()
        if fmt == "csc":
            return self.to_csc()
        return self.to_csf()

    @classmethod
    def _from_any(cls, func: str, x: Any) -> Any:
        if not isinstance(x, SparseTensor):
            msg = f"{func}: expected a sparse tensor, got {type(x).__name__}"
            raise ArrowSparseTypeError(msg)
        return x if isinstance(x, cls) else x._convert(cls.format)

    @classmethod
    def _from_format(cls, func: str, x: Any, fmt: str) -> Any:
        expected = cls._format(fmt)
        if not isinstance(x, expected):
            msg = f"{func}: expected a {expected.__name__}, got {type(x).__name__}"
            raise ArrowSparseTypeError(msg)
        return cls._from_any(func, x)

    @classmethod
    @fill_doc(_FROM_FORMAT, arg="coo", cls="SparseCOO", what="tensor",
              build="asp.SparseCOO([[0, 1], [2, 0]], np.array([1.0, 2.0]), (2, 3))",
              call="asp.SparseCSR.from_coo(coo)",
              result="SparseCSR(shape=(2, 3), nnz=2, dtype=float64)")
    def from_coo(cls, coo: SparseTensor) -> Any:
        """Build this format from a :class:`SparseCOO` (``coo.to_<format>()``)."""
        return cls._from_format(f"{cls.__name__}.from_coo", coo, "coo")

    @classmethod
    @fill_doc(_FROM_FORMAT, arg="csr", cls="SparseCSR", what="matrix",
              build="asp.SparseCSR([0, 1, 2], [2, 0], np.array([1.0, 2.0]), (2, 3))",
              call="asp.SparseCOO.from_csr(csr).indices.tolist()",
              result="[[0, 1], [2, 0]]")
    def from_csr(cls, csr: SparseTensor) -> Any:
        """Build this format from a :class:`SparseCSR` (``csr.to_<format>()``)."""
        return cls._from_format(f"{cls.__name__}.from_csr", csr, "csr")

    @classmethod
    @fill_doc(_FROM_FORMAT, arg="csc", cls="SparseCSC", what="matrix",
              build="asp.SparseCSC([0, 1, 1, 2], [1, 0], np.array([2.0, 1.0]), (2, 3))",
              call="asp.SparseCSR.from_csc(csc).to_dense().tolist()",
              result="[[0.0, 0.0, 1.0], [2.0, 0.0, 0.0]]")
    def from_csc(cls, csc: SparseTensor) -> Any:
        """Build this format from a :class:`SparseCSC` (``csc.to_<format>()``)."""
        return cls._from_format(f"{cls.__name__}.from_csc", csc, "csc")

    @classmethod
    @fill_doc(_FROM_FORMAT, arg="csf", cls="SparseCSF", what="tensor",
              build="asp.SparseCSF.from_dense(np.array([[0.0, 1.0], [2.0, 0.0]]))",
              call="asp.SparseCOO.from_csf(csf).indices.tolist()",
              result="[[0, 1], [1, 0]]")
    def from_csf(cls, csf: SparseTensor) -> Any:
        """Build this format from a :class:`SparseCSF` (``csf.to_<format>()``)."""
        return cls._from_format(f"{cls.__name__}.from_csf", csf, "csf")

    # --------------------------------------------------------------- operators
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any,
                        **kwargs: Any) -> Any:
        """Apply a numpy ufunc: ``np.sin(x)``, ``x + y``, ``2 * x``, ``dense @ x``.

        Where the result's unspecified elements stay zeros it is sparse: a ufunc with
        ``f(0) == 0`` on the stored values (same format); with a scalar ``s`` when
        ``f(0, s) == 0``; between two sparse tensors of one shape when ``f(0, 0) == 0``
        (``multiply`` on the intersection of the patterns, ``add``, ``subtract``,
        ``maximum``, ... on the union). ``f(0) != 0`` (``cos``, ``exp``, ``x + 1``)
        raises ValueError: densify first. With a dense array, ``multiply`` keeps the
        pattern and other ufuncs give ``f(x.to_dense(), array)``. See
        docs/sparse-tensors.md.

        Examples
        --------
        >>> a = asp.SparseCOO([[0, 1], [1, 0]], np.array([1.0, -4.0]), (2, 2))
        >>> b = asp.SparseCOO([[0, 0], [1, 0]], np.array([2.0, 3.0]), (2, 2))
        >>> np.abs(a).values
        array([1., 4.])
        >>> (a + b).to_dense()
        array([[ 3.,  3.],
               [-4.,  0.]])
        >>> (a * b).indices, (a * b).values
        (array([[0],
               [1]]), array([2.]))
        >>> np.cos(a)
        Traceback (most recent call last):
            ...
        arrow_sparse.errors.ArrowSparseValueError: numpy.cos: f(0) is not 0, so the \
result of a SparseCOO would be dense; densify explicitly: numpy.cos(x.to_dense())
        """
        return UFUNC_PROTOCOL["apply"](ufunc, method, inputs, kwargs)

    def multiply(self, other: Any) -> SparseTensor:  # pragma: no cover - overridden
        """Elementwise product with a scalar or a dense array broadcast to ``shape``."""
        raise NotImplementedError

    def __mul__(self, other: Any) -> Any:
        return _apply(np.multiply, self, other)

    def __rmul__(self, other: Any) -> Any:
        return _apply(np.multiply, other, self)

    def __add__(self, other: Any) -> Any:
        return _apply(np.add, self, other)

    def __radd__(self, other: Any) -> Any:
        return _apply(np.add, other, self)

    def __sub__(self, other: Any) -> Any:
        return _apply(np.subtract, self, other)

    def __rsub__(self, other: Any) -> Any:
        return _apply(np.subtract, other, self)

    def __truediv__(self, other: Any) -> Any:
        return _apply(np.true_divide, self, other)

    def __pow__(self, other: Any) -> Any:
        return _apply(np.power, self, other)

    def __neg__(self) -> Any:
        return _apply(np.negative, self)

    def __abs__(self) -> Any:
        return _apply(np.absolute, self)

    def matmul(self, other: Any) -> np.ndarray:
        """Matrix product of this 2-d tensor with a dense matrix or vector, through CSR.

        Parameters
        ----------
        other
            Dense ``[columns, k]`` matrix or ``[columns]`` vector.

        Returns
        -------
        numpy.ndarray
            ``self.to_csr() @ other`` (see :meth:`SparseCSR.matmul`). The conversion
            sorts the entries by row: convert once with :meth:`to_csr` to multiply the
            same matrix many times.

        Raises
        ------
        ValueError
            The tensor is not 2-d, or ``other`` does not match its columns.
        TypeError
            ``other`` is not numeric, or is sparse.

        Examples
        --------
        >>> coo = asp.SparseCOO([[0, 1], [2, 0]], np.array([1.0, 2.0]), (2, 3))
        >>> coo @ np.array([1.0, 10.0, 100.0])
        array([100.,   2.])
        >>> np.array([1.0, 10.0]) @ coo
        array([20.,  0.,  1.])
        """
        return self._as_matrix("matmul").matmul(other)

    def __matmul__(self, other: Any) -> np.ndarray:
        return self.matmul(other)

    def __rmatmul__(self, other: Any) -> np.ndarray:
        return self._as_matrix("__rmatmul__").__rmatmul__(other)

    def _as_matrix(self, op: str) -> SparseTensor:
        if self.ndim != 2:
            msg = f"{type(self).__name__}.{op}: needs a 2-d tensor, got shape {self.shape}"
            raise ArrowSparseValueError(msg)
        return self.to_csr()
