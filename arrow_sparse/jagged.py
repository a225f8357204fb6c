"""``Jagged``: a batch of variable-length rows as values + offsets (+ validity).

Row ``i`` is ``values[offsets[i]:offsets[i + 1]]``. ``values`` is a 1-D or N-D array
(the first axis is the jagged one) or another :class:`Jagged` (nested lists). It is
the Arrow ``list``/``large_list`` layout, and :meth:`Jagged.from_arrow` /
:meth:`Jagged.to_arrow` wrap Arrow's buffers without copying them.

The buffers are numpy arrays (host) or CuPy arrays (device), all on one device:
:meth:`Jagged.to_device` moves them, :meth:`Jagged.from_dlpack` /
:meth:`Jagged.to_dlpack` exchange them with torch, JAX or CuPy without copies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any, Union

import numpy as np
import pyarrow as pa

from . import _arrow
from . import _backend as b
from . import _validate as v
from ._docs import TO_DEVICE, fill_doc
from ._offsets import (
    fill_value,
    ids_to_offsets,
    longest_rows,
    pad_levels,
    unpad_levels,
    value_rows,
)
from .errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError

__all__ = ["Jagged"]

Values = Union[np.ndarray, "Jagged"]

_REPR_ROWS = 6  # rows shown in full; more show the first four and the last two
_REPR_THRESHOLD = 1000  # addressed values above which long lists are summarised (numpy's)
_REPR_EDGE = 3  # items shown at each end of a summarised list (numpy's edgeitems)


class ComputedMethods:
    """Methods of a core class that the operation families above its module compute.

    :class:`Jagged` (and :class:`~arrow_sparse.KeyedJagged`) hold data; a method whose
    work belongs to an operation family (``j + 1`` to :mod:`arrow_sparse.elementwise`,
    ``j.to_csr`` to :mod:`arrow_sparse.sparse`) calls the function that family registers
    here with :meth:`register` when ``arrow_sparse`` is imported (importing any of its
    modules does that first). The class's module therefore imports nothing above it;
    ``tests/test_api.py`` checks that every name is registered.
    """

    def __init__(self, owner: str, names: tuple[str, ...]) -> None:
        self.owner = owner
        self.names = names
        self._functions: dict[str, Callable[..., Any]] = {}

    def register(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Return a decorator registering the function that computes method ``name``."""
        if name not in self.names:
            msg = f"{self.owner} has no computed method {name!r}; known: {', '.join(self.names)}"
            raise KeyError(msg)

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self._functions[name] = fn
            return fn
        return register

    def __getitem__(self, name: str) -> Callable[..., Any]:
        return self._functions[name]

    @property
    def missing(self) -> list[str]:
        """The names no family has registered (empty once ``arrow_sparse`` is imported)."""
        return [n for n in self.names if n not in self._functions]


#: Jagged's methods computed above this module: arithmetic by arrow_sparse.elementwise.ufunc,
#: ``to_csr`` by arrow_sparse.sparse.csr.
COMPUTED = ComputedMethods("Jagged", ("array_ufunc", "jagged_ufunc", "map_values", "to_csr"))
computes = COMPUTED.register


def _operator(name: str, ufunc: Any, doc: str, *, reflected: bool = False,
              unary: bool = False) -> Any:
    """Make the operator method ``Jagged.<name>``: ``ufunc`` on the values.

    It calls ``arrow_sparse.elementwise.jagged_ufunc`` (on the host or the device).
    """
    def apply(*operands: Any) -> Jagged:
        return COMPUTED["jagged_ufunc"](ufunc, *operands)  # type: ignore[no-any-return]

    def unary_method(self: Jagged) -> Jagged:
        return apply(self)

    def binary_method(self: Jagged, other: Any) -> Jagged:
        return apply(other, self) if reflected else apply(self, other)

    method = unary_method if unary else binary_method
    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc
    return method


#: The docstring body of :meth:`Jagged.to_csr` and ``SparseCSR.from_jagged``.
TO_CSR_DOC = """
    Parameters
    ----------
    {jagged}num_columns
        Number of columns (the id vocabulary size); every id must be below it.
    weights
        Optional values, one per element (``values`` layout); default ones (float32).

    Returns
    -------
    SparseCSR
        ``indptr`` starts at zero; ``indices`` is a view of the ids when they are
        int32/int64 and the rows start at value 0. Repeated ids in a row are kept as
        repeated entries (their values add up on densifying). Null rows are empty
        and null ids (``values_validity``) are left out, with their weights.

    Raises
    ------
    TypeError
        {not_a_jagged} ids, or nested rows.
    IndexError
        An id that is negative or ``>= num_columns``.
    NotImplementedError
        On the device (not implemented yet: make the matrix from host data, then
        move it with ``SparseCSR.to_device('cuda')``).

    See Also
    --------
    {see_also}

    Examples
    --------
    {examples}
"""


class Jagged:
    """A batch of variable-length rows: ``values`` split by ``offsets``.

    Parameters
    ----------
    values
        1-D or N-D numeric array (jagged along its first axis), or a :class:`Jagged`
        for nested lists. numpy (host) or CuPy (device); every buffer on one device.
    offsets
        int32 or int64 offsets, ``rows + 1`` long, non-decreasing, may start above
        zero; ``offsets[-1] <= len(values)``. Other integer dtypes are widened to int64.
    validity
        Optional bool mask of rows (False = null row). A null row's offsets range
        is never read by reductions.
    values_validity
        Optional bool mask over the first axis of array values (False = null
        element); reductions skip null elements. Not allowed with nested values,
        which carry their own validity.
    validate
        Ignored: the offsets are always checked in full (vectorised, O(rows)), so
        that no Jagged can address memory outside its values. Accepted so that
        older calls passing ``validate=False`` keep working.

    Raises
    ------
    ValueError
        Malformed offsets or masks of the wrong length.
    TypeError
        Non-numeric values or non-integer offsets, or buffers on different devices.

    See Also
    --------
    Jagged.from_arrow : Wrap an Arrow list array without copying.
    Jagged.from_lengths, Jagged.from_segment_ids, Jagged.from_padded, Jagged.from_list
    Jagged.from_dlpack : Wrap torch, JAX or CuPy arrays without copying.

    Notes
    -----
    The constructor copies nothing: ``values`` and ``offsets`` are kept as given
    (offsets of an integer dtype other than int32/int64 are widened: a copy).

    On the device the offsets are checked by a kernel without synchronising: malformed
    offsets are raised by the next check (the next operation, or :meth:`validate`),
    and until then the kernels treat rows outside the values as padding.

    Examples
    --------
    Caffe2's batch of three examples:

    >>> j = asp.Jagged(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), np.array([0, 3, 7, 9]))
    >>> j
    Jagged([[1, 2, 3], [2, 4, 6, 7], [3, 6]], dtype=int64, offsets=int64)
    >>> j.lengths
    array([3, 4, 2])
    >>> j[1]
    array([2, 4, 6, 7])
    """

    __slots__ = ("_offsets", "_validity", "_values", "_values_validity")

    def __init__(self, values: Any, offsets: Any, validity: Any = None, *,
                 values_validity: Any = None, validate: bool = True) -> None:
        func = "Jagged"
        xp = b.array_module(func, values=values, offsets=offsets, validity=validity,
                            values_validity=values_validity)
        if isinstance(values, Jagged):
            if values_validity is not None:
                msg = f"{func}: values_validity is not allowed with nested values"
                raise ArrowSparseValueError(msg)
            num_values = len(values)
        else:
            values = v.as_values_array(func, "values", values, device=True)
            num_values = len(values)
        v.check_bool(func, "validate", validate)
        offsets = v.check_offsets(func, "offsets", offsets, num_values, device=True)
        self._values: Values = values
        self._offsets: np.ndarray = offsets
        self._validity = v.check_mask(func, "validity", validity, len(offsets) - 1, device=True)
        self._values_validity = v.check_mask(func, "values_validity", values_validity,
                                             num_values, device=True)
        b.device_checks(func, xp)

    @classmethod
    def _trusted(cls, values: Values, offsets: np.ndarray, validity: np.ndarray | None = None,
                 values_validity: np.ndarray | None = None) -> Jagged:
        """Build without any check, from parts the caller has already checked.

        For internal use only: ``values`` is a numeric ndarray or a Jagged,
        ``offsets`` int32/int64, non-negative, non-decreasing and at most
        ``len(values)``, and the masks bool arrays of the right lengths (or None).
        """
        self = object.__new__(cls)
        self._values = values
        self._offsets = offsets
        self._validity = validity
        self._values_validity = values_validity
        return self

    # ----------------------------------------------------------------- constructors
    @classmethod
    def from_offsets(cls, values: Any, offsets: Any, validity: Any = None) -> Jagged:
        """Build from values and offsets (the constructor, named for symmetry).

        Parameters
        ----------
        values
            Values array (or a :class:`Jagged` for nested lists).
        offsets
            Offsets, ``rows + 1`` long.
        validity
            Optional bool row mask.

        Returns
        -------
        Jagged
            A view of the inputs; nothing is copied.

        Examples
        --------
        >>> asp.Jagged.from_offsets(np.array([1.0, 2.0, 3.0]), np.array([0, 1, 3]))
        Jagged([[1.0], [2.0, 3.0]], dtype=float64, offsets=int64)
        """
        return cls(values, offsets, validity)

    @classmethod
    def from_lengths(cls, values: Any, lengths: Any, validity: Any = None) -> Jagged:
        """Build from values and row lengths (Caffe2's values + lengths).

        Parameters
        ----------
        values
            Values array (or a :class:`Jagged`).
        lengths
            Non-negative row lengths summing to exactly ``len(values)``.
        validity
            Optional bool row mask.

        Returns
        -------
        Jagged
            With int64 offsets (computed, on the device of the values); values are not
            copied.

        Raises
        ------
        ValueError
            Negative lengths, or lengths not summing to the number of values.

        Notes
        -----
        On the device: no synchronisation; bad lengths are raised by the next check.

        Examples
        --------
        >>> asp.Jagged.from_lengths(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), [3, 4, 2])
        Jagged([[1, 2, 3], [2, 4, 6, 7], [3, 6]], dtype=int64, offsets=int64)
        """
        func = "Jagged.from_lengths"
        xp = b.array_module(func, values=values, lengths=lengths, validity=validity)
        vals = values if isinstance(values, Jagged) else \
            v.as_values_array(func, "values", values, device=True)
        _, offsets = v.lengths_offsets(func, "lengths", lengths, num_values=len(vals),
                                       device=True)
        valid = v.check_mask(func, "validity", validity, len(offsets) - 1, device=True)
        b.device_checks(func, xp)
        return cls._trusted(vals, offsets, valid)

    @classmethod
    def from_segment_ids(cls, values: Any, segment_ids: Any,
                         num_segments: int | None = None) -> Jagged:
        """Build from values and sorted segment ids (one id per value).

        Parameters
        ----------
        values
            Values array (or a :class:`Jagged`).
        segment_ids
            Sorted, non-negative row id of each value.
        num_segments
            Number of rows; default ``max(segment_ids) + 1`` (more adds empty rows).

        Returns
        -------
        Jagged
            With int64 offsets; values are not copied.

        Raises
        ------
        ValueError
            Unsorted ids, or ids not one per value.
        IndexError
            A negative id or one ``>= num_segments``.

        Notes
        -----
        On the device: with ``num_segments`` no synchronisation (bad ids are raised by
        the next check); without, the last id is read back (one synchronisation).

        Examples
        --------
        >>> asp.Jagged.from_segment_ids(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]),
        ...                             [0, 0, 0, 1, 1, 1, 1, 2, 2])
        Jagged([[1, 2, 3], [2, 4, 6, 7], [3, 6]], dtype=int64, offsets=int64)
        """
        func = "Jagged.from_segment_ids"
        xp = b.array_module(func, values=values, segment_ids=segment_ids)
        vals = values if isinstance(values, Jagged) else \
            v.as_values_array(func, "values", values, device=True)
        ids, n = v.check_sorted_segment_ids(func, "segment_ids", segment_ids, len(vals),
                                            num_segments, device=True)
        offsets = ids_to_offsets(ids, n)
        b.device_checks(func, xp)
        return cls._trusted(vals, offsets)

    @classmethod
    def from_padded(cls, dense: Any, lengths: Any) -> Jagged:
        """Build from padded rows ``dense[rows, L, ...]`` and the true row lengths.

        Parameters
        ----------
        dense
            Padded array, one row per jagged row; axes past the second are kept.
        lengths
            Row lengths, each at most ``dense.shape[1]``.

        Returns
        -------
        Jagged
            New values (a copy of the unpadded elements) and int64 offsets.

        Raises
        ------
        ValueError
            A length above ``dense.shape[1]``, or a row count mismatch.

        See Also
        --------
        Jagged.to_padded : The inverse.

        Notes
        -----
        On the device the number of values (the sum of the lengths) is read back: one
        synchronisation, which also raises bad lengths at once.

        Examples
        --------
        >>> dense = np.array([[1, 2, 3, -1], [2, 4, 6, 7], [3, 6, -1, -1]])
        >>> asp.Jagged.from_padded(dense, [3, 4, 2])
        Jagged([[1, 2, 3], [2, 4, 6, 7], [3, 6]], dtype=int64, offsets=int64)
        """
        func = "Jagged.from_padded"
        xp = b.array_module(func, dense=dense, lengths=lengths)
        arr = v.as_values_array(func, "dense", dense, min_ndim=2, device=True)
        lens = v.as_index_array(func, "lengths", lengths, device=True)
        if len(lens) != arr.shape[0]:
            msg = f"{func}: lengths has {len(lens)} entries but dense has {arr.shape[0]} rows"
            raise ArrowSparseValueError(msg)
        _, offsets = v.lengths_offsets(func, "lengths", lens, padded_length=arr.shape[1],
                                       device=True)
        values = unpad_levels(func, arr, [offsets], arr.dtype.type(0))
        b.device_checks(func, xp)
        return cls._trusted(values, offsets)

    @classmethod
    def from_list(cls, rows: list[Any], dtype: Any = None) -> Jagged:
        """Build from nested Python lists (``None`` = null row or null element).

        Parameters
        ----------
        rows
            A list of rows; each row a list (of numbers, or of lists for nesting) or None.
        dtype
            numpy dtype of the leaf values; default inferred (int64 or float64).

        Returns
        -------
        Jagged
            Freshly allocated, with int32 offsets (Arrow ``list``).

        Raises
        ------
        TypeError
            Rows that are not lists of numbers.

        Examples
        --------
        >>> asp.Jagged.from_list([[1, 2, 3], [], None, [3, 6]])
        Jagged([[1, 2, 3], [], None, [3, 6]], dtype=int64, offsets=int32)
        >>> asp.Jagged.from_list([[[1], [2, 3]], [[4]]], dtype=np.float32).to_list()
        [[[1.0], [2.0, 3.0]], [[4.0]]]
        """
        func = "Jagged.from_list"
        if not isinstance(rows, (list, tuple)):
            msg = f"{func}: rows must be a list of lists, got {type(rows).__name__}"
            raise ArrowSparseTypeError(msg)
        try:
            arr = pa.array(rows)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            msg = f"{func}: rows could not be read as lists of numbers ({exc})"
            raise ArrowSparseTypeError(msg) from None
        leaf = None if dtype is None else _arrow.arrow_type_of(v.check_dtype(func, "dtype", dtype))
        if pa.types.is_null(arr.type):
            arr = pa.array(rows, type=pa.list_(pa.float64() if leaf is None else leaf))
        if not _arrow.is_list_type(arr.type):
            msg = f"{func}: rows must be lists, got elements of Arrow type {arr.type}"
            raise ArrowSparseTypeError(msg)
        if leaf is not None:
            arr = arr.cast(_with_leaf_type(arr.type, leaf))
        return cls.from_arrow(arr)

    @classmethod
    def from_arrow(cls, array: pa.Array | pa.ChunkedArray) -> Jagged:
        """Wrap an Arrow list array's buffers (zero-copy).

        Parameters
        ----------
        array
            ``list``/``large_list`` (int32/int64 offsets kept), ``list_view`` /
            ``large_list_view`` (converted: one copy), nested lists (-> nested Jagged),
            lists of ``fixed_size_list<T>[D]`` (-> 2-D values ``[N, D]``), or a
            ChunkedArray of those (one chunk: zero-copy; several: concatenated, one copy).

        Returns
        -------
        Jagged
            Offsets and values are numpy views of the Arrow buffers. A sliced array
            keeps its slice: ``offsets[0]`` may be above zero. Null rows become
            ``validity``; null elements ``values_validity``. Boolean values and
            validity bitmaps are unpacked to bytes (a copy of one bit per element).

        Raises
        ------
        TypeError
            Not a list array, or leaf values that are not numbers or booleans.

        See Also
        --------
        Jagged.to_arrow : The inverse; gives back the same buffers.

        Examples
        --------
        >>> arr = pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
        >>> j = asp.Jagged.from_arrow(arr.slice(1))
        >>> j
        Jagged([[2, 4, 6, 7], None, [3, 6]], dtype=int64, offsets=int32)
        >>> j.offsets
        array([3, 7, 7, 9], dtype=int32)
        """
        return cls._from_arrow("Jagged.from_arrow", "array", array)

    @classmethod
    def _from_arrow(cls, func: str, arg: str, array: Any) -> Jagged:
        """:meth:`from_arrow` for the operations: errors name ``func`` and the argument ``arg``."""
        array = _arrow.as_arrow(array)
        if isinstance(array, pa.ChunkedArray):
            array = _arrow.as_one_array(array)
        if not isinstance(array, pa.Array) or not _arrow.is_list_type(array.type):
            got = array.type if isinstance(array, pa.Array) else type(array).__name__
            msg = f"{func}: expected an Arrow list or large_list array, got {got}"
            raise ArrowSparseTypeError(msg)
        return _jagged_from_list_array(func, array, arg)

    @classmethod
    def from_dlpack(cls, values: Any, offsets: Any, validity: Any = None, *,
                    values_validity: Any = None) -> Jagged:
        """Wrap DLPack arrays (torch, JAX, CuPy, numpy, ...) without copying them.

        Parameters
        ----------
        values
            The leaf values: any object with ``__dlpack__`` and ``__dlpack_device__``.
        offsets
            The offsets array, or a list of them for nested rows (outermost first).
        validity
            Optional bool row mask of the outermost level.
        values_validity
            Optional bool mask of the leaf values (null elements).

        Returns
        -------
        Jagged
            Over the producers' memory: host memory is read with ``numpy.from_dlpack``,
            CUDA memory (on its device) with ``cupy.from_dlpack``.

        Raises
        ------
        TypeError
            An argument without DLPack support, memory that is neither host nor CUDA,
            or arguments on different devices.
        ValueError
            Malformed offsets (see :class:`Jagged`).

        See Also
        --------
        Jagged.to_dlpack : The inverse.

        Notes
        -----
        A single ``__dlpack__`` would be ambiguous for a jagged array (two buffers at
        least), so the buffers are passed one by one. On the device the offsets are
        checked without synchronising, as in the constructor.

        Examples
        --------
        Any DLPack producer works the same way (``torch.tensor``, ``jax.numpy`` arrays,
        CuPy); numpy arrays are producers too:

        >>> j = asp.Jagged.from_dlpack(np.array([1.0, 2.0, 3.0]), np.array([0, 1, 3]))
        >>> j
        Jagged([[1.0], [2.0, 3.0]], dtype=float64, offsets=int64)
        """
        func = "Jagged.from_dlpack"
        levels = list(offsets) if isinstance(offsets, (list, tuple)) else [offsets]
        if not levels:
            msg = f"{func}: offsets must be an array or a non-empty list of arrays"
            raise ArrowSparseTypeError(msg)
        parts = [b.from_dlpack(func, f"offsets[{k}]" if len(levels) > 1 else "offsets", o)
                 for k, o in enumerate(levels)]
        built: Values = b.from_dlpack(func, "values", values)
        leaf_validity = b.from_dlpack(func, "values_validity", values_validity)
        for k in range(len(parts) - 1, -1, -1):
            built = cls(built, parts[k],
                        b.from_dlpack(func, "validity", validity) if k == 0 else None,
                        values_validity=leaf_validity if k == len(parts) - 1 else None)
        assert isinstance(built, Jagged)
        return built

    # ------------------------------------------------------------------- properties
    @property
    def values(self) -> Values:
        """The values buffer (all of it: rows address ``values[offsets[0]:offsets[-1]]``)."""
        return self._values

    @property
    def offsets(self) -> np.ndarray:
        """Row offsets, ``num_rows + 1`` long (may start above zero)."""
        return self._offsets

    @property
    def validity(self) -> np.ndarray | None:
        """Bool row mask (False = null row), or None when no row is null."""
        return self._validity

    @property
    def values_validity(self) -> np.ndarray | None:
        """Bool mask of array values (False = null element), or None."""
        return self._values_validity

    @property
    def num_rows(self) -> int:
        """Number of rows."""
        return len(self._offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        """Row lengths (a new array of the offsets dtype). Null rows report their range.

        Examples
        --------
        >>> asp.Jagged.from_list([[1, 2, 3], [], [3, 6]]).lengths
        array([3, 0, 2], dtype=int32)
        """
        return self.xp.diff(self._offsets)  # type: ignore[no-any-return]

    @property
    def segment_ids(self) -> np.ndarray:
        """Row id of each value in ``values[offsets[0]:offsets[-1]]`` (int64).

        On the device the number of values is read back (a synchronisation).

        Examples
        --------
        >>> asp.Jagged.from_list([[1, 2, 3], [], [3, 6]]).segment_ids
        array([0, 0, 0, 2, 2])
        """
        return value_rows("Jagged.segment_ids", self._offsets,  # type: ignore[no-any-return]
                            np.dtype(np.int64))

    @property
    def max_length(self) -> int:
        """Length of the longest non-null row (0 when there is none).

        A null row's offsets range is not counted: Arrow allows it to be non-empty,
        but it is never read. On the device it is read back (a synchronisation).

        Examples
        --------
        >>> asp.Jagged.from_list([[1, 2, 3], [], [3, 6]]).max_length
        3
        """
        return longest_rows("Jagged.max_length", [self._offsets], [self._validity])[0]

    @property
    def null_count(self) -> int:
        """Number of null rows (on the device: read back, a synchronisation)."""
        if self._validity is None:
            return 0
        return self.num_rows - b.fetch("Jagged.null_count", self._validity.sum())[0]

    @property
    def num_levels(self) -> int:
        """Number of jagged levels (1 for a list of scalars, 2 for a list of lists, ...)."""
        return 1 + (self._values.num_levels if isinstance(self._values, Jagged) else 0)

    @property
    def leaf_values(self) -> np.ndarray:
        """The innermost values array (``values`` unless nested)."""
        values = self._values
        return values.leaf_values if isinstance(values, Jagged) else values

    @property
    def dtype(self) -> np.dtype:
        """Dtype of the leaf values."""
        return self.leaf_values.dtype

    @property
    def xp(self) -> ModuleType:
        """Array module of the buffers: numpy, or cupy when they are on the device."""
        return b.module_of(self.leaf_values)

    @property
    def device(self) -> str:
        """Where the buffers are: ``"cpu"``, or ``"cuda:N"`` for CUDA device N.

        Examples
        --------
        >>> asp.Jagged.from_list([[1]]).device
        'cpu'
        """
        return b.device_of(self.leaf_values)

    @fill_doc(
        TO_DEVICE, a_kind="a Jagged", cls="Jagged", copy="a copy",
        see_also="Jagged.from_dlpack : Wrap device arrays of torch or JAX without copying.",
        notes="""\
Arrow data lives in host memory: ``Jagged.from_arrow(arr).to_device("cuda")``
is the explicit transfer.""",
        build="asp.Jagged.from_list([[1, 2], [3]])")
    def to_device(self, device: str) -> Jagged:
        """Copy the buffers (values, offsets, masks, every level) to ``device``."""
        func = "Jagged.to_device"
        target = b.transfer_target(func, device, self.device)
        if target is None:
            return self

        def move(x: Any) -> Any:
            return b.transfer(func, x, target)

        values = self._values.to_device(target) if isinstance(self._values, Jagged) else \
            move(self._values)
        return Jagged._trusted(values, move(self._offsets), move(self._validity),
                               move(self._values_validity))

    def to_dlpack(self) -> tuple[Any, Any]:
        """Export the leaf values and the offsets as arrays that speak DLPack (zero-copy).

        Returns
        -------
        tuple
            ``(values, offsets)``: the leaf values array and the offsets array (a
            tuple of offsets arrays, outermost first, for nested rows). They are the
            Jagged's own numpy or CuPy arrays; ``torch.from_dlpack``,
            ``jax.dlpack.from_dlpack`` or ``cupy.from_dlpack`` take them without copying.

        See Also
        --------
        Jagged.from_dlpack : The inverse.

        Notes
        -----
        Null rows and null elements are not part of the pair: export
        :attr:`validity` and :attr:`values_validity` as well where they are not None.
        A null row's offsets range may hold arbitrary values (Arrow allows it).

        Examples
        --------
        Any DLPack consumer reads the buffers without a copy (``torch.from_dlpack``,
        ``jax.dlpack.from_dlpack``, ``cupy.from_dlpack``), numpy included:

        >>> values, offsets = asp.Jagged.from_list([[1, 2], [3]]).to_dlpack()
        >>> np.from_dlpack(offsets)
        array([0, 2, 3], dtype=int32)
        """
        levels = [self]
        while isinstance(levels[-1].values, Jagged):
            levels.append(levels[-1].values)  # type: ignore[arg-type]
        offsets = tuple(level.offsets for level in levels)
        return self.leaf_values, offsets[0] if len(offsets) == 1 else offsets

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: a Jagged is two buffers at least; use :meth:`to_dlpack`."""
        msg = ("Jagged: a jagged array is several buffers (values, offsets), not one "
               "DLPack tensor; export them with values, offsets = j.to_dlpack()")
        raise ArrowSparseTypeError(msg)

    def __dlpack_device__(self) -> Any:
        """Refused, as :meth:`__dlpack__`."""
        return self.__dlpack__()

    def flat_values(self) -> Values:
        """Return the values the rows address, ``values[offsets[0]:offsets[-1]]`` (a view).

        On the device the two offsets are read back (a synchronisation).

        Examples
        --------
        >>> j = asp.Jagged.from_arrow(pa.array([[1, 2], [3], [4, 5]]).slice(1, 1))
        >>> j.flat_values()
        array([3])
        """
        start, stop = b.fetch("Jagged.flat_values", self._offsets[0], self._offsets[-1])
        return self._values[start:stop]  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ row access
    def __len__(self) -> int:
        return self.num_rows

    def __iter__(self) -> Iterator[Any]:
        for i in range(self.num_rows):
            yield self[i]

    def __getitem__(self, key: Any) -> Any:
        """Row ``key`` (a values view, a nested Jagged, or None when null) or rows ``a:b``.

        On the device a row's offsets (and validity) are read back (a synchronisation);
        a slice of rows reads nothing.
        """
        if isinstance(key, slice):
            start, stop, step = key.indices(self.num_rows)
            if step != 1:
                msg = "Jagged: slices must have step 1; use index_select for other row orders"
                raise ArrowSparseValueError(msg)
            stop = max(start, stop)
            validity = None if self._validity is None else self._validity[start:stop]
            return Jagged._trusted(self._values, self._offsets[start:stop + 1], validity,
                                   self._values_validity)
        if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)):
            msg = f"Jagged: rows are indexed by an int or a slice, got {type(key).__name__}"
            raise ArrowSparseTypeError(msg)
        i = int(key)
        if not -self.num_rows <= i < self.num_rows:
            msg = f"Jagged: row {i} out of range for {self.num_rows} rows"
            raise ArrowSparseIndexError(msg)
        i %= self.num_rows
        mask = () if self._validity is None else (self._validity[i],)
        start, stop, *valid = b.fetch("Jagged.__getitem__", self._offsets[i],
                                      self._offsets[i + 1], *mask)
        if valid and not valid[0]:
            return None
        return self._values[start:stop]

    # ------------------------------------------------------------------- exporters
    def to_arrow(self) -> pa.Array:
        """Return this Jagged as an Arrow list array, over the same buffers (zero-copy).

        int32 offsets give ``list``, int64 give ``large_list``; N-D values give
        ``fixed_size_list`` elements; nested Jagged gives nested lists. Validity masks
        are packed back into bitmaps (a copy of one bit per row); boolean and
        non-contiguous values are copied.

        Returns
        -------
        pyarrow.Array
            ``ListArray`` or ``LargeListArray``.

        Raises
        ------
        NotImplementedError
            On the device: Arrow arrays live in host memory; call
            ``j.to_device("cpu").to_arrow()``.

        Examples
        --------
        >>> asp.Jagged.from_lengths(np.array([1, 2, 3], dtype=np.int32), [1, 2]).to_arrow().type
        LargeListType(large_list<item: int32>)
        """
        if self.device != "cpu":
            msg = (f"Jagged.to_arrow: the Jagged is on {self.device} and Arrow arrays live "
                   "in host memory; copy it first: j.to_device('cpu').to_arrow()")
            raise NotImplementedError(msg)
        values = self._values
        child = values.to_arrow() if isinstance(values, Jagged) else \
            _arrow.array_from_numpy(values, self._values_validity)
        offsets = self._offsets
        if offsets.dtype == np.int32:
            list_type: pa.DataType = pa.list_(child.type)
        else:
            offsets = offsets.astype(np.int64, copy=False)
            list_type = pa.large_list(child.type)
        buffers = [_arrow.validity_buffer(self._validity),
                   pa.py_buffer(np.ascontiguousarray(offsets))]
        return pa.Array.from_buffers(list_type, self.num_rows, buffers, children=[child],
                                     null_count=self.null_count)

    def to_list(self) -> list[Any]:
        """Rows as Python lists (``None`` for null rows and null elements).

        On the device the buffers are copied to the host first.

        Examples
        --------
        >>> asp.Jagged.from_list([[1, 2], None, []]).to_list()
        [[1, 2], None, []]
        """
        return self.to_device("cpu").to_arrow().to_pylist()  # type: ignore[no-any-return]

    def to_padded(self, max_length: int | list[int] | None = None,
                  pad_value: Any = 0) -> np.ndarray:
        """Pad rows to a dense array, truncating rows longer than ``max_length``.

        Parameters
        ----------
        max_length
            Padded length (a list of lengths, one per level, for nested rows);
            default: the longest row of each level.
        pad_value
            Fill value; must fit the values dtype exactly. Null rows are all padding,
            and so are null elements.

        Returns
        -------
        numpy.ndarray or cupy.ndarray
            ``[num_rows, L, *inner]`` (``[num_rows, L0, L1, ...]`` when nested), on the
            Jagged's device.

        See Also
        --------
        jagged_to_padded_dense : The same on raw values and offsets.
        Jagged.from_padded : The inverse.

        Notes
        -----
        On the device: one kernel per level; with ``max_length`` given no
        synchronisation, without it each level's longest row is read back (one
        synchronisation per level).

        Examples
        --------
        >>> asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]]).to_padded(pad_value=-1)
        array([[ 1,  2,  3, -1],
               [ 2,  4,  6,  7],
               [-1, -1, -1, -1],
               [ 3,  6, -1, -1]])
        """
        func = "Jagged.to_padded"
        levels: list[Jagged] = [self]
        while isinstance(levels[-1].values, Jagged):
            levels.append(levels[-1].values)  # type: ignore[arg-type]
        offsets = [level.offsets for level in levels]
        validity = [level.validity for level in levels]
        if max_length is None:
            lengths = longest_rows(func, offsets, validity)
        elif isinstance(max_length, (int, np.integer)) and len(levels) == 1:
            lengths = [v.check_count(func, "max_length", max_length)]
        elif isinstance(max_length, (list, tuple)) and len(max_length) == len(levels):
            lengths = [v.check_count(func, f"max_length[{i}]", m) for i, m in enumerate(max_length)]
        else:
            msg = (f"{func}: max_length must be an int or a list of one int per level "
                   f"({len(levels)}), got {max_length!r}")
            raise ArrowSparseTypeError(msg)
        pad = fill_value(func, pad_value, self.dtype, arg="pad_value")
        out = pad_levels(func, self.leaf_values, offsets, validity, lengths, pad,
                         levels[-1].values_validity)
        b.device_checks(func, self.xp)
        return out

    @fill_doc(TO_CSR_DOC, jagged="", not_a_jagged="Non-integer", see_also="""\
SparseCSR.from_jagged : The function this calls.""", examples="""\
>>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
>>> j.to_csr(8).to_dense()
array([[0., 1., 1., 1., 0., 0., 0., 0.],
       [0., 0., 1., 0., 1., 0., 1., 1.],
       [0., 0., 0., 1., 0., 0., 1., 0.]], dtype=float32)""")
    def to_csr(self, num_columns: int, weights: Any = None) -> Any:
        """Rows of ids as a multi-hot CSR matrix ``[num_rows, num_columns]``."""
        return COMPUTED["to_csr"](self, num_columns, weights=weights)

    def validate(self) -> Jagged:
        """Check every invariant in full (O(size)); return self.

        Checks offsets (non-negative, non-decreasing, within the values), the
        lengths of the masks, and nested levels recursively. On the device the checks
        run as kernels and are waited for (a synchronisation): this also raises any
        error an earlier operation left to a later check.

        Returns
        -------
        Jagged
            ``self``, so calls chain.

        Raises
        ------
        ValueError
            The first broken invariant.

        Examples
        --------
        >>> asp.Jagged.from_list([[1], [2, 3]]).validate().num_rows
        2
        """
        func = "Jagged.validate"
        v.check_offsets(func, "offsets", self._offsets, len(self._values), device=True)
        v.check_mask(func, "validity", self._validity, self.num_rows, device=True)
        v.check_mask(func, "values_validity", self._values_validity, len(self._values),
                     device=True)
        b.device_checks(func, self.xp, wait=True)
        if isinstance(self._values, Jagged):
            self._values.validate()
        return self

    # --- arithmetic (arrow_sparse.elementwise) ---
    # Operators and numpy ufuncs act on the values and keep the offsets (shared, not
    # copied) and the validity (ANDed across Jagged operands). See docs/jagged-arithmetic.md.
    # On the device they run CuPy's ufuncs on the whole values buffer (jagged_ufunc's Notes).
    __hash__ = None  # type: ignore[assignment]  # == is elementwise, so no hash

    def __bool__(self) -> bool:
        # ``j == k`` is elementwise, so ``if j == k`` must not silently mean "non-empty".
        msg = ("Jagged: the truth value of a Jagged is ambiguous; use len(j) for the row "
               "count or reduce a comparison first (e.g. (j == k).values.all())")
        raise ArrowSparseValueError(msg)

    def map_values(self, func: Any) -> Jagged:
        """Apply an elementwise function to the values, keeping offsets and validity.

        Parameters
        ----------
        func
            Called with the values the rows address; returns as many values. On the
            device it is called with the whole values buffer (a CuPy array).

        Returns
        -------
        Jagged
            The same offsets arrays (zero-copy) and validity, new values.

        See Also
        --------
        arrow_sparse.map_values : The function this calls.

        Examples
        --------
        >>> asp.Jagged.from_list([[1.0, 4.0], None, [9.0]]).map_values(np.sqrt)
        Jagged([[1.0, 2.0], None, [3.0]], dtype=float64, offsets=int32)
        """
        return COMPUTED["map_values"](self, func)  # type: ignore[no-any-return]

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """Elementwise numpy ufuncs (``np.exp(j)``, ``arr * j``) apply to the values."""
        return COMPUTED["array_ufunc"](self, ufunc, method, *inputs, **kwargs)

    __add__ = _operator("__add__", np.add, "``self + other``: a Jagged of the same rows, "
                        "scalar, per-row or padded array.")
    __radd__ = _operator("__radd__", np.add, "``other + self``.", reflected=True)
    __sub__ = _operator("__sub__", np.subtract, "``self - other``.")
    __rsub__ = _operator("__rsub__", np.subtract, "``other - self``.", reflected=True)
    __mul__ = _operator("__mul__", np.multiply, "``self * other``.")
    __rmul__ = _operator("__rmul__", np.multiply, "``other * self``.", reflected=True)
    __truediv__ = _operator("__truediv__", np.true_divide,
                            "``self / other`` (integers give floats, as in numpy).")
    __rtruediv__ = _operator("__rtruediv__", np.true_divide, "``other / self``.", reflected=True)
    __floordiv__ = _operator("__floordiv__", np.floor_divide, "``self // other``.")
    __rfloordiv__ = _operator("__rfloordiv__", np.floor_divide, "``other // self``.",
                              reflected=True)
    __mod__ = _operator("__mod__", np.remainder, "``self % other``.")
    __rmod__ = _operator("__rmod__", np.remainder, "``other % self``.", reflected=True)
    __pow__ = _operator("__pow__", np.power, "``self ** other``.")
    __rpow__ = _operator("__rpow__", np.power, "``other ** self``.", reflected=True)
    __neg__ = _operator("__neg__", np.negative, "``-self``.", unary=True)
    __pos__ = _operator("__pos__", np.positive, "``+self`` (new values, same offsets).", unary=True)
    __abs__ = _operator("__abs__", np.absolute, "``abs(self)``.", unary=True)
    __eq__ = _operator("__eq__", np.equal,
                       "``self == other`` elementwise: a bool Jagged (so Jagged is unhashable).")
    __ne__ = _operator("__ne__", np.not_equal, "``self != other`` elementwise: a bool Jagged.")
    __lt__ = _operator("__lt__", np.less, "``self < other`` elementwise: a bool Jagged.")
    __le__ = _operator("__le__", np.less_equal, "``self <= other`` elementwise: a bool Jagged.")
    __gt__ = _operator("__gt__", np.greater, "``self > other`` elementwise: a bool Jagged.")
    __ge__ = _operator("__ge__", np.greater_equal, "``self >= other`` elementwise: a bool Jagged.")
    # --- end arithmetic ---

    def __repr__(self) -> str:
        """Rows as lists, summarised like numpy's repr; deterministic, no addresses.

        More than six rows show the first four and the last two. When the rows
        address more than 1000 values, each list longer than six items shows its
        first three and last three, as numpy does past its print threshold. On the
        device the rows shown are copied to the host one by one, and the device is
        named.
        """
        rows = self.num_rows
        shown = range(rows) if rows <= _REPR_ROWS else \
            list(range(_REPR_ROWS - 2)) + [-1] + list(range(rows - 2, rows))
        edge = _REPR_EDGE if _addressed_size(self) > _REPR_THRESHOLD else None
        parts = ["..." if i == -1 else _row_text(self, i, edge) for i in shown]
        extra = f", num_rows={rows}" if rows > _REPR_ROWS else ""
        if self.device != "cpu":
            extra += f", device={self.device!r}"
        return (f"Jagged([{', '.join(parts)}], dtype={self.dtype}, "
                f"offsets={self._offsets.dtype}{extra})")


def _addressed_size(j: Jagged) -> int:
    """Count the number of leaf scalars the rows of ``j`` address (null rows' ranges included)."""
    start, stop = b.fetch("Jagged.__repr__", j.offsets[0], j.offsets[-1])
    values = j.values
    while isinstance(values, Jagged):
        start, stop = b.fetch("Jagged.__repr__", values.offsets[start], values.offsets[stop])
        values = values.values
    return (stop - start) * int(np.prod(values.shape[1:]))


def _shown(n: int, edge: int | None) -> list[int]:
    """Positions to print of ``n`` items; -1 stands for the ``...`` of a summary."""
    if edge is None or n <= 2 * edge:
        return list(range(n))
    return list(range(edge)) + [-1] + list(range(n - edge, n))


def _array_text(x: np.ndarray, edge: int | None) -> str:
    """``repr(x.tolist())``, with long axes summarised."""
    if x.ndim == 0:
        return repr(x.item())
    parts = ["..." if k == -1 else _array_text(x[k], edge) for k in _shown(len(x), edge)]
    return f"[{', '.join(parts)}]"


def _row_text(j: Jagged, i: int, edge: int | None) -> str:
    """Row ``i`` of ``j`` as list text (None for a null row or element)."""
    row = j[i]
    if row is None:
        return "None"
    if isinstance(row, Jagged):
        parts = ["..." if k == -1 else _row_text(row, k, edge) for k in _shown(len(row), edge)]
        return f"[{', '.join(parts)}]"
    row = b.to_host(row)
    mask = j.values_validity
    if mask is not None:
        start = b.fetch("Jagged.__repr__", j.offsets[i])[0]
        mask = b.to_host(mask[start:start + len(row)])
    parts = ["..." if k == -1 else "None" if mask is not None and not mask[k]
             else _array_text(row[k], edge) for k in _shown(len(row), edge)]
    return f"[{', '.join(parts)}]"


def _with_leaf_type(t: pa.DataType, leaf: pa.DataType) -> pa.DataType:
    if _arrow.is_list_type(t) or isinstance(t, pa.FixedSizeListType):
        inner = _with_leaf_type(t.value_type, leaf)
        if isinstance(t, pa.FixedSizeListType):
            return pa.list_(inner, t.list_size)
        return pa.large_list(inner) if isinstance(t, pa.LargeListType) else pa.list_(inner)
    return leaf


def _jagged_from_list_array(func: str, array: pa.Array, arg: str = "array") -> Jagged:
    level = _arrow.list_level(func, arg, array)  # checks the offsets against the child
    child = level.child
    values: Values
    values_validity = None
    if _arrow.is_list_type(child.type):
        values = _jagged_from_list_array(func, child, f"{arg} values")
    elif isinstance(child.type, pa.FixedSizeListType):
        values = _arrow.fixed_size_values(func, child)
        values_validity = _arrow.validity_of(child)
    else:
        values = _arrow.primitive_values(func, child)
        values_validity = _arrow.validity_of(child)
    return Jagged._trusted(values, level.offsets, level.validity, values_validity)
