"""The base class of the sparse formats and the checks and sorting helpers they share.

The helpers work on numpy or CuPy arrays (the array module of their inputs): a tensor
whose arrays are on a CUDA device runs its operations there, with the CUDA twins of the
sparse kernels (see docs/gpu.md, "Dispatch").
"""

from __future__ import annotations

import functools
import importlib
import math
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .. import _validate as v
from .._backend import (
    array_module,
    device_checks,
    device_of,
    fetch,
    get_kernel,
    is_cupy_array,
    module_of,
    normalize_device,
    transfer,
)
from ..errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError

if TYPE_CHECKING:
    from .coo import SparseCOO
    from .csc import SparseCSC
    from .csf import SparseCSF
    from .csr import SparseCSR

__all__ = ["SparseTensor"]

INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
_INT64_MAX = int(np.iinfo(np.int64).max)
#: A counting-sort pass is used for a key whose range is at most this many times the
#: number of entries (plus a constant); wider keys are sorted with numpy's argsort.
_RADIX_FACTOR = 4


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
    #: numpy and CuPy defer binary operators to us (``dense @ m`` calls ``__rmatmul__``).
    __array_ufunc__ = None
    #: What CuPy versions before NEP 13 support compare instead of ``__array_ufunc__``.
    __array_priority__ = 1000
    #: ``"coo"``, ``"csr"``, ``"csc"`` or ``"csf"``.
    format: ClassVar[str] = ""
    shape: tuple[int, ...]
    values: np.ndarray

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

    def to_device(self, device: str) -> Any:
        """Copy every buffer (indices, pointers, values) to ``device``.

        Parameters
        ----------
        device
            ``"cpu"``, ``"cuda"`` (the current CUDA device; a tensor already on a CUDA
            device stays there) or ``"cuda:N"``.

        Returns
        -------
        SparseTensor
            ``self`` when it is on ``device`` already, else a copy of the same format
            there (to the host with ``.get()``, to a GPU with ``cupy.asarray``).
            Nothing is re-checked.

        Raises
        ------
        ValueError, TypeError
            Not a device string.
        ModuleNotFoundError
            ``"cuda"`` without CuPy installed.

        Notes
        -----
        On the device every operation runs with the CUDA kernels and returns CuPy
        arrays; the exchanges with pyarrow, scipy, pydata ``sparse`` and torch need
        host memory and raise NotImplementedError there. Copies to the host
        synchronise.

        Examples
        --------
        >>> coo = asp.SparseCOO([[0, 1]], np.array([1.0, 2.0]), (3,))
        >>> coo.to_device("cpu") is coo
        True
        """
        func = f"{type(self).__name__}.to_device"
        target = normalize_device(func, device)
        here = self.device
        if here == target or (target == "cuda" and here != "cpu"):
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

    def to_coo(self) -> SparseCOO:  # pragma: no cover - every subclass overrides
        """Convert to a :class:`SparseCOO`."""
        raise NotImplementedError

    def to_csr(self) -> SparseCSR:  # pragma: no cover - every subclass overrides
        """Convert to a :class:`SparseCSR`."""
        raise NotImplementedError

    def to_csc(self) -> SparseCSC:  # pragma: no cover - every subclass overrides
        """Convert to a :class:`SparseCSC`."""
        raise NotImplementedError

    def to_csf(self, axis_order: Sequence[int] | None = None) -> SparseCSF:  # pragma: no cover
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
    def _from_format(cls, func: str, x: Any, fmt: type) -> Any:
        if not isinstance(x, fmt):
            msg = f"{func}: expected a {fmt.__name__}, got {type(x).__name__}"
            raise ArrowSparseTypeError(msg)
        return cls._from_any(func, x)

    @classmethod
    def from_coo(cls, coo: SparseCOO) -> Any:
        """Build this format from a :class:`SparseCOO` (``coo.to_<format>()``).

        Parameters
        ----------
        coo
            The tensor to convert.

        Returns
        -------
        SparseTensor
            An instance of the class it is called on.

        Raises
        ------
        TypeError
            ``coo`` is not a :class:`SparseCOO`.

        Examples
        --------
        >>> coo = asp.SparseCOO([[0, 1], [2, 0]], np.array([1.0, 2.0]), (2, 3))
        >>> asp.SparseCSR.from_coo(coo)
        SparseCSR(shape=(2, 3), nnz=2, dtype=float64)
        """
        from .coo import SparseCOO

        return cls._from_format(f"{cls.__name__}.from_coo", coo, SparseCOO)

    @classmethod
    def from_csr(cls, csr: SparseCSR) -> Any:
        """Build this format from a :class:`SparseCSR` (``csr.to_<format>()``).

        Parameters
        ----------
        csr
            The matrix to convert.

        Returns
        -------
        SparseTensor
            An instance of the class it is called on.

        Raises
        ------
        TypeError
            ``csr`` is not a :class:`SparseCSR`.

        Examples
        --------
        >>> csr = asp.SparseCSR([0, 1, 2], [2, 0], np.array([1.0, 2.0]), (2, 3))
        >>> asp.SparseCOO.from_csr(csr).indices
        array([[0, 1],
               [2, 0]])
        """
        from .csr import SparseCSR

        return cls._from_format(f"{cls.__name__}.from_csr", csr, SparseCSR)

    @classmethod
    def from_csc(cls, csc: SparseCSC) -> Any:
        """Build this format from a :class:`SparseCSC` (``csc.to_<format>()``).

        Parameters
        ----------
        csc
            The matrix to convert.

        Returns
        -------
        SparseTensor
            An instance of the class it is called on.

        Raises
        ------
        TypeError
            ``csc`` is not a :class:`SparseCSC`.

        Examples
        --------
        >>> csc = asp.SparseCSC([0, 1, 1, 2], [1, 0], np.array([2.0, 1.0]), (2, 3))
        >>> asp.SparseCSR.from_csc(csc).to_dense()
        array([[0., 0., 1.],
               [2., 0., 0.]])
        """
        from .csc import SparseCSC

        return cls._from_format(f"{cls.__name__}.from_csc", csc, SparseCSC)

    @classmethod
    def from_csf(cls, csf: SparseCSF) -> Any:
        """Build this format from a :class:`SparseCSF` (``csf.to_<format>()``).

        Parameters
        ----------
        csf
            The tensor to convert.

        Returns
        -------
        SparseTensor
            An instance of the class it is called on.

        Raises
        ------
        TypeError
            ``csf`` is not a :class:`SparseCSF`.

        Examples
        --------
        >>> csf = asp.SparseCSF.from_dense(np.array([[0.0, 1.0], [2.0, 0.0]]))
        >>> asp.SparseCOO.from_csf(csf).indices
        array([[0, 1],
               [1, 0]])
        """
        from .csf import SparseCSF

        return cls._from_format(f"{cls.__name__}.from_csf", csf, SparseCSF)

    # --------------------------------------------------------------- operators
    def multiply(self, other: Any) -> SparseTensor:  # pragma: no cover - overridden
        """Elementwise product with a scalar or a dense array broadcast to ``shape``."""
        raise NotImplementedError

    def __mul__(self, other: Any) -> SparseTensor:
        if isinstance(other, SparseTensor):
            return NotImplemented
        return self.multiply(other)

    def __rmul__(self, other: Any) -> SparseTensor:
        return self.__mul__(other)

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
        return self._as_matrix("__rmatmul__").__rmatmul__(other)  # type: ignore[no-any-return]

    def _as_matrix(self, op: str) -> SparseCSR:
        if self.ndim != 2:
            msg = f"{type(self).__name__}.{op}: needs a 2-d tensor, got shape {self.shape}"
            raise ArrowSparseValueError(msg)
        return self.to_csr()


def checked(method: Callable[..., Any]) -> Callable[..., Any]:
    """End a public method with its device checks (deferred; a no-op on the host).

    What its kernels recorded in the device error word (an index out of range, pointers
    outside the entries) is raised by the next check, naming ``<Class>.<method>``.
    """
    name = method.__name__

    @functools.wraps(method)
    def run(self: SparseTensor, *args: Any, **kwargs: Any) -> Any:
        out = method(self, *args, **kwargs)
        device_checks(f"{type(self).__name__}.{name}", self.xp)
        return out
    return run


# ------------------------------------------------------------------- checks
def check_shape(func: str, shape: Any, ndim: int | None = None) -> tuple[int, ...]:
    """Check a shape: a sequence of non-negative ints (``ndim`` of them when given)."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        msg = f"{func}: shape must be a tuple of ints, got {type(shape).__name__}"
        raise ArrowSparseTypeError(msg)
    dims = tuple(v.check_count(func, f"shape[{i}]", s) for i, s in enumerate(shape))
    if ndim is not None and len(dims) != ndim:
        msg = f"{func}: shape must have {ndim} dimensions, got {dims}"
        raise ArrowSparseValueError(msg)
    if not dims:
        msg = f"{func}: shape must have at least one dimension"
        raise ArrowSparseValueError(msg)
    for i, s in enumerate(dims):
        if s > _INT64_MAX:
            msg = f"{func}: shape[{i}] = {s} exceeds the int64 range"
            raise ArrowSparseValueError(msg)
    return dims


def check_axis_order(func: str, axis_order: Any, ndim: int) -> tuple[int, ...]:
    """Check a permutation of ``range(ndim)``; None means ``(0, 1, ..., ndim - 1)``."""
    if axis_order is None:
        return tuple(range(ndim))
    if isinstance(axis_order, np.ndarray):
        axis_order = axis_order.tolist()
    if not isinstance(axis_order, (tuple, list)) or not all(
            isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_))
            for a in axis_order):
        msg = f"{func}: axis_order must be a sequence of ints, got {axis_order!r}"
        raise ArrowSparseTypeError(msg)
    order = tuple(int(a) for a in axis_order)
    if sorted(order) != list(range(ndim)):
        msg = f"{func}: axis_order must be a permutation of 0..{ndim - 1}, got {order}"
        raise ArrowSparseValueError(msg)
    return order


def check_flag(func: str, arg: str, x: Any) -> bool:
    """Check a boolean flag (numpy bools accepted)."""
    if not isinstance(x, (bool, np.bool_)):
        msg = f"{func}: {arg} must be True or False, got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    return bool(x)


def check_axis(func: str, axis: Any, ndim: int) -> int:
    """Check an axis in ``[-ndim, ndim)``; return it non-negative."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        msg = f"{func}: axis must be None or an int, got {type(axis).__name__}"
        raise ArrowSparseTypeError(msg)
    if not -ndim <= axis < ndim:
        msg = f"{func}: axis {axis} out of range for {ndim} dimensions"
        raise ArrowSparseIndexError(msg)
    return int(axis) % ndim


def index_array(func: str, arg: str, x: Any, *, ndim: int = 1) -> np.ndarray:
    """Return an int32 or int64 index array (other integer dtypes are widened to int64).

    CuPy arrays are accepted and stay on their device.
    """
    arr = v.as_index_array(func, arg, x, ndim=ndim, device=True)
    if arr.dtype not in INDEX_DTYPES:
        arr = arr.astype(np.int64)
    return arr


def values_array(func: str, x: Any) -> np.ndarray:
    """Return a 1-D bool, integer, float32 or float64 values array (numpy or CuPy)."""
    arr = v.as_values_array(func, "values", x, device=True)
    if arr.dtype == np.float16:
        msg = f"{func}: values of dtype float16 are not supported; cast them to float32"
        raise ArrowSparseTypeError(msg)
    if arr.ndim != 1:
        msg = f"{func}: values must be 1-dimensional, got shape {arr.shape}"
        raise ArrowSparseValueError(msg)
    return arr


def check_in_range(func: str, arg: str, idx: np.ndarray, bound: int, window: Any = None) -> None:
    """IndexError for an index outside ``[0, bound)`` among ``idx[lo:hi]``; positions absolute.

    ``window`` is ``(lo, hi)`` on the host and a 2-element int64 device array on the
    device (pointers are not read there), None for every index. On the device a check
    kernel records the first bad position in the error word, raised by the caller's
    ``device_checks`` (or the next check).
    """
    if is_cupy_array(idx):
        _cuda_sparse().check_index_range(module_of(idx), idx, bound, window)
        return
    lo, hi = (0, len(idx)) if window is None else window
    part = idx[lo:hi]
    bad = (part < 0) | (part >= bound)
    if bad.any():
        pos = v.first_true(bad)
        msg = (f"{func}: {arg} out of range [0, {bound}) "
               f"(first at position {pos + lo}: {part[pos].item()})")
        raise ArrowSparseIndexError(msg)


def _cuda_sparse() -> ModuleType:
    """Import the CUDA launchers of the family on first use (CuPy is not imported)."""
    return importlib.import_module("arrow_sparse.kernels.cuda.sparse")


def pointer_window(ptr: np.ndarray, window: Any = None) -> Any:
    """Return the entries ``[ptr[lo], ptr[hi])`` that the pointers ``ptr[lo:hi + 1]`` address.

    ``window`` is ``(lo, hi)``, the nodes of ``ptr``'s own level (None: all of them,
    ``(0, len(ptr) - 1)``). On the host the result is ``(start, stop)`` ints. On the
    device nothing is read: ``window`` and the result are 2-element int64 device arrays
    (so the window of each level of a CSF tensor follows from the one above), and
    positions are clipped into ``ptr`` so that unchecked pointers index inside it.
    """
    last = len(ptr) - 1
    if not is_cupy_array(ptr):
        lo, hi = (0, last) if window is None else window
        return int(ptr[lo]), int(ptr[hi])
    xp = module_of(ptr)
    at = xp.asarray(np.array([0, last], dtype=np.int64)) if window is None else window
    return ptr[xp.minimum(xp.maximum(at, 0), max(last, 0))].astype(np.int64)


def ends(func: str, ptr: np.ndarray) -> tuple[int, int]:
    """``(ptr[0], ptr[-1])`` on the host: one read on the device, raising its checks at once."""
    first, last = fetch(func, ptr[0], ptr[-1])
    return first, last


def check_length(func: str, arg: str, arr: np.ndarray, length: int, what: str) -> None:
    """Raise ValueError unless ``len(arr) == length``."""
    if len(arr) != length:
        msg = f"{func}: {arg} has {len(arr)} entries but {what} needs {length}"
        raise ArrowSparseValueError(msg)


def sum_dtype(dtype: np.dtype) -> np.dtype:
    """Return the dtype numpy's ``sum`` returns for an array of ``dtype``."""
    out: np.dtype = np.add.reduce(np.zeros(1, dtype=dtype)).dtype
    return out


def index_dtype_for(*bounds: int) -> np.dtype:
    """int32 when every bound fits, else int64."""
    return np.dtype(np.int32) if max(bounds, default=0) <= np.iinfo(np.int32).max \
        else np.dtype(np.int64)


# ----------------------------------------------------------- lexicographic order
def lex_order(keys: Sequence[np.ndarray], func: str = "lex_order") -> tuple[bool, bool]:
    """Whether the rows ``(keys[0][i], keys[1][i], ...)`` are sorted, and strictly so.

    On the device each answer read is a :func:`~arrow_sparse._backend.fetch` naming
    ``func`` (two keys: one, by the ``lex_order2`` kernel; more: one per key).
    """
    n = len(keys[0]) if len(keys) else 0
    if n < 2:
        return True, True
    xp = module_of(keys[0])
    if len(keys) == 2:
        return get_kernel("sparse", "lex_order2", xp)(  # type: ignore[no-any-return]
            keys[0], keys[1])
    decided = xp.zeros(n - 1, dtype=bool)
    for key in keys:
        before, after = key[:-1], key[1:]
        if fetch(func, (~decided & (after < before)).any())[0]:
            return False, False
        decided |= after > before
    return True, bool(fetch(func, decided.all())[0])


def sort_permutation(keys: Sequence[np.ndarray], sizes: Sequence[int]) -> np.ndarray | None:
    """Stable permutation sorting rows by ``keys[0]``, then ``keys[1]``, ...; None if sorted.

    An LSD radix sort: one stable pass per key from the last, a counting sort when the
    key's range (``sizes[k]``) is small next to the number of rows, numpy's stable
    argsort otherwise. O(nnz) per pass for the usual shapes.
    """
    if lex_order(keys)[0]:
        return None
    n = len(keys[0])
    if all(counting_range(size, n) for size in sizes):
        radix = get_kernel("sparse", "radix_argsort")
        return radix(list(keys), [int(s) for s in sizes])  # type: ignore[no-any-return]
    perm = np.arange(n, dtype=np.int64)
    counting = get_kernel("sparse", "radix_argsort")
    for key, size in zip(reversed(keys), reversed(sizes), strict=True):
        gathered = key[perm]
        if counting_range(size, n):
            order = counting([gathered], [int(size)])
        else:
            order = np.argsort(gathered, kind="stable")
        perm = perm[order]
    return perm


def counting_range(size: int, n: int, factor: int = _RADIX_FACTOR) -> bool:
    """Whether a counting sort of ``n`` keys in ``[0, size)`` pays (the range is small)."""
    return int(size) <= factor * n + (1 << 16)


def sorted_coords(keys: Sequence[np.ndarray], sizes: Sequence[int],
                  values: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Rows ``(keys[0][i], keys[1][i], ...)`` and their values sorted lexicographically, stably.

    The inputs themselves when already sorted. When the keys split into a leading and
    a trailing group whose raveled ranges are both small: two stable counting sorts
    (by the trailing group, then by the leading one), in parallel, as CSR is built;
    else an LSD radix sort of a permutation, one pass per key. On the device: one
    stable radix sort of the raveled keys, without checking the order first (that
    would synchronise).
    """
    keys = list(keys)
    xp = module_of(values)
    if xp is not np:
        perm = get_kernel("sparse", "radix_argsort", xp)(keys, [int(s) for s in sizes])
        return [k[perm] for k in keys], values[perm]
    if lex_order(keys)[0]:
        return keys, values
    n = len(keys[0])
    dims = [int(s) for s in sizes]
    # both groups' ranges within the number of rows: the counts stay smaller than the data
    split = next((j for j in range(1, len(dims)) if counting_range(math.prod(dims[:j]), n, 1)
                  and counting_range(math.prod(dims[j:]), n, 1)), None)
    if split is None:
        perm = sort_permutation(keys, sizes)
        assert perm is not None
        return [k[perm] for k in keys], values[perm]
    dtype = np.result_type(*keys)
    head, tail = dims[:split], dims[split:]
    major = _ravel(keys[:split], head)
    ptr, minor, vals = get_kernel("sparse", "coo_to_compressed")(
        major, _ravel(keys[split:], tail), values, math.prod(head), math.prod(tail))
    major = get_kernel("sparse", "expand_major")(ptr, np.empty(n, dtype=major.dtype))
    return [*_unravel(major, head, dtype), *_unravel(minor, tail, dtype)], vals


def _ravel(keys: list[np.ndarray], dims: list[int]) -> np.ndarray:
    return keys[0] if len(keys) == 1 else np.ravel_multi_index(tuple(keys), dims)


def _unravel(flat: np.ndarray, dims: list[int], dtype: np.dtype) -> list[np.ndarray]:
    if len(dims) == 1:
        return [flat.astype(dtype, copy=False)]
    return [k.astype(dtype) for k in np.unravel_index(flat, dims)]


def sum_sorted_runs(keys: Sequence[np.ndarray], values: np.ndarray
                    ) -> tuple[list[np.ndarray], np.ndarray]:
    """Distinct rows of lexicographically sorted keys and the sum of each run of equal rows.

    Sums are added left to right (bools: logical or) by the ``sum_duplicates`` kernel
    over the run numbers as one line; each run's keys are scattered to its number.
    New arrays (numpy or CuPy).
    """
    xp = module_of(values)
    n = len(values)
    changed = xp.zeros(n, dtype=bool)
    if n:
        changed[0] = True
    for key in keys:
        changed[1:] |= key[1:] != key[:-1]
    run = xp.cumsum(changed, dtype=np.int64) - 1
    line = xp.asarray(np.array([0, n], dtype=np.int64))
    _, ids, sums = get_kernel("sparse", "sum_duplicates", xp)(line, run, values)
    distinct = []
    for key in keys:
        out = xp.empty(len(ids), dtype=key.dtype)
        out[run] = key  # every entry of a run writes the same coordinate
        distinct.append(out)
    return distinct, sums


def dense_operand(func: str, arg: str, x: Any) -> np.ndarray:
    """Return a numeric numpy or CuPy array (Arrow arrays and sequences accepted).

    Sparse inputs are refused.
    """
    if isinstance(x, SparseTensor):
        msg = (f"{func}: {arg} must be dense here, got a {type(x).__name__}; "
               "densify one operand with .to_dense()")
        raise ArrowSparseTypeError(msg)
    arr = np.asarray(x) if np.isscalar(x) else v.as_values_array(func, arg, x, min_ndim=0,
                                                                  device=True)
    if arr.dtype.kind not in "biuf" or arr.dtype == np.float16:
        msg = f"{func}: {arg} must be a bool, integer, float32 or float64 array, got {arr.dtype}"
        raise ArrowSparseTypeError(msg)
    return arr


def broadcast_gather(func: str, other: np.ndarray, shape: tuple[int, ...],
                     coords: Sequence[np.ndarray]) -> np.ndarray:
    """``broadcast_to(other, shape)[coords]`` without materialising the broadcast.

    A dimension of ``other`` of size 1 is indexed by 0 instead of its coordinate.
    """
    try:
        full = np.broadcast_shapes(tuple(other.shape), tuple(shape))
    except ValueError:
        full = None
    if full != tuple(shape):
        msg = f"{func}: other of shape {other.shape} does not broadcast to the shape {shape}"
        raise ArrowSparseValueError(msg)
    padded = other.reshape((1,) * (len(shape) - other.ndim) + tuple(other.shape))
    gathered: np.ndarray = padded[tuple(c if n != 1 else 0
                                        for c, n in zip(coords, padded.shape, strict=True))]
    return gathered


def multiplier(func: str, values: np.ndarray, other: Any, shape: tuple[int, ...],
               coords: Callable[[], Sequence[np.ndarray]]) -> Any:
    """Factor of every stored entry in ``values * other``.

    A scalar ``other`` as it is (a 0-d host array as a numpy scalar, same promotion);
    an array broadcast to ``shape`` is gathered at the entries' coordinates
    (``coords()``, called only then). An array on another device than ``values``
    raises the mixed-device TypeError.
    """
    arr = dense_operand(func, "other", other)
    if arr.ndim or is_cupy_array(arr):
        array_module(func, values=values, other=arr)
    if arr.ndim == 0:
        return other if np.isscalar(other) else arr if is_cupy_array(arr) else arr[()]
    return broadcast_gather(func, arr, shape, coords())


def flatnonzero(func: str, mask: np.ndarray) -> np.ndarray:
    """Positions (int64) of the nonzero elements of a 1-D array.

    On the device their number is read back with :func:`~arrow_sparse._backend.fetch`
    (one synchronisation, raising the device checks recorded so far, naming ``func``).
    """
    if not is_cupy_array(mask):
        return np.flatnonzero(mask)
    return _cuda_sparse().flatnonzero(module_of(mask), func, mask)  # type: ignore[no-any-return]


def nonzero(func: str, arr: np.ndarray) -> tuple[np.ndarray, ...]:
    """Coordinates (int64, row-major order) of the nonzero elements, as ``numpy.nonzero``.

    On the device one synchronisation (their number), as :func:`flatnonzero`.
    """
    if not is_cupy_array(arr):
        return np.nonzero(arr)
    return tuple(unravel(flatnonzero(func, arr.reshape(-1)), arr.shape))


def unravel(flat: np.ndarray, dims: Sequence[int]) -> list[np.ndarray]:
    """Row-major coordinates of the flat positions ``flat`` (all inside ``dims``)."""
    if len(flat) == 0:
        return [flat] * len(dims)
    coords = []
    for d in reversed(dims):
        coords.append(flat % d)
        flat = flat // d
    return coords[::-1]


def ravel_coords(coords: Sequence[np.ndarray], dims: Sequence[int]) -> np.ndarray:
    """Row-major flat int64 position of each coordinate row.

    numpy checks the coordinates (``ValueError`` outside ``dims``); on the device they
    are combined unchecked, and the kernels that take the positions re-check them.
    """
    if not is_cupy_array(coords[0]):
        return np.ravel_multi_index(tuple(coords), tuple(dims)).astype(np.int64, copy=False)
    flat = coords[0].astype(np.int64)
    for c, d in zip(coords[1:], dims[1:], strict=True):
        flat = flat * np.int64(d) + c
    return flat


def expand_lines(indptr: np.ndarray, count: int) -> np.ndarray:
    """Line of each of the ``count`` entries ``indptr`` addresses (int64), from ``indptr[0]``.

    ``repeat(arange(len(indptr) - 1), diff(indptr))``: numpy's on the host (decreasing
    pointers raise), the ``expand_major`` kernel on the device (it writes inside ``out``
    whatever the pointers).
    """
    xp = module_of(indptr)
    if xp is np:
        return np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    out = xp.empty(count, dtype=np.int64)
    return get_kernel("sparse", "expand_major", xp)(indptr, out)  # type: ignore[no-any-return]
