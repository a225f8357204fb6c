"""Arrow extension types that store one sparse tensor per row: Parquet and IPC persistence.

pyarrow cannot write its sparse tensors to Parquet, nor to IPC from Python, and has
no variable-shape tensor type. This module registers four Arrow extension types,
``arrow_sparse.coo``, ``arrow_sparse.csr``, ``arrow_sparse.csc`` and
``arrow_sparse.csf``, whose storage is a plain Arrow ``struct`` of lists (shape,
axis order, pointers, coordinates, values), so a column of tensors goes into
Tables, Parquet files and IPC streams and comes back as the same objects. A reader
without arrow_sparse sees the storage ``struct`` column; ``docs/sparse-tensors.md``
("Persistence") specifies the layout for readers in other languages.

The types are registered with pyarrow when :mod:`arrow_sparse.sparse` is imported
(cheap and idempotent; :func:`register_extension_types` does it again, replacing a
stale registration).

Examples
--------
>>> csr = asp.SparseCSR.from_dense(np.array([[0.0, 1.0], [2.0, 0.0]]))
>>> arr = asp.sparse.sparse_tensor_array([csr, None])
>>> arr.type
SparseCSRType(float64)
>>> arr.to_pylist()
[SparseCSR(shape=(2, 2), nnz=2, dtype=float64), None]
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from .._arrow import numpy_dtype
from .._validate import check_nbytes
from ..errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from . import _levels as lv
from .coo import SparseCOO
from .csc import SparseCSC
from .csf import SparseCSF
from .csr import SparseCSR
from .tensor import SparseTensor

__all__ = [
    "FORMAT_VERSION",
    "SparseCOOType",
    "SparseCSCType",
    "SparseCSFType",
    "SparseCSRType",
    "SparseTensorArray",
    "SparseTensorScalar",
    "SparseTensorType",
    "register_extension_types",
    "sparse_tensor_array",
    "sparse_tensor_type",
    "unregister_extension_types",
]

#: Version of the storage layout, written as ``"version"`` in every type's metadata.
FORMAT_VERSION = 1

_I64 = pa.int64()
_INDEX_LIST = pa.large_list(_I64)


def _check_value_type(func: str, value_type: Any) -> pa.DataType:
    if not isinstance(value_type, pa.DataType):
        try:
            value_type = pa.from_numpy_dtype(np.dtype(value_type))
        except (TypeError, ValueError, pa.ArrowNotImplementedError) as exc:
            msg = f"{func}: value_type must be an Arrow or numpy numeric type, got {value_type!r}"
            raise ArrowSparseTypeError(msg) from exc
    t = value_type
    if not (pa.types.is_boolean(t) or pa.types.is_integer(t)
            or pa.types.is_float32(t) or pa.types.is_float64(t)):
        msg = (f"{func}: value_type must be bool, an integer type, float32 or float64, "
               f"got {t}")
        raise ArrowSparseTypeError(msg)
    return t


def _check_ndim(func: str, fmt: str, ndim: Any) -> int:
    if isinstance(ndim, bool) or not isinstance(ndim, (int, np.integer)) or ndim < 1:
        msg = f"{func}: ndim must be a positive integer, got {ndim!r}"
        raise ArrowSparseValueError(msg)
    if fmt in ("csr", "csc") and ndim != 2:
        msg = f"{func}: a {fmt.upper()} matrix has ndim 2, got {ndim}"
        raise ArrowSparseValueError(msg)
    return int(ndim)


class SparseTensorType(pa.ExtensionType):
    """Base class of the extension types: one sparse tensor per row, stored as a struct.

    The value type and the number of dimensions are type parameters (written to the
    type's JSON metadata); shape and, for CSF, the axis order vary per row and are
    storage fields. Use the subclasses (:class:`SparseCOOType`, :class:`SparseCSRType`,
    :class:`SparseCSCType`, :class:`SparseCSFType`) or :func:`sparse_tensor_type`.
    """

    #: ``"coo"``, ``"csr"``, ``"csc"`` or ``"csf"``; the extension name is
    #: ``arrow_sparse.<format>``.
    format: ClassVar[str] = ""

    def __init__(self, value_type: Any, ndim: int = 2) -> None:
        func = type(self).__name__
        self._value_type = _check_value_type(func, value_type)
        self._ndim = _check_ndim(func, self.format, ndim)
        super().__init__(self._storage(self._value_type, self._ndim),
                         f"arrow_sparse.{self.format}")

    @staticmethod
    def _storage(value_type: pa.DataType, ndim: int) -> pa.DataType:  # pragma: no cover
        raise NotImplementedError

    @property
    def value_type(self) -> pa.DataType:
        """Arrow type of the stored values (the ``values`` list's item type)."""
        return self._value_type

    @property
    def ndim(self) -> int:
        """Number of dimensions of every tensor of the column."""
        return self._ndim

    @property
    def value_dtype(self) -> np.dtype:
        """Numpy dtype of the values of the decoded tensors."""
        return numpy_dtype(self._value_type)

    def _meta(self) -> dict[str, Any]:
        return {"ndim": self._ndim, "value_type": self.value_dtype.name,
                "version": FORMAT_VERSION}

    @classmethod
    def _from_meta(cls, value_type: pa.DataType, ndim: int, meta: dict[str, Any]
                   ) -> SparseTensorType:
        return cls(value_type, ndim)

    def __arrow_ext_serialize__(self) -> bytes:
        return json.dumps(self._meta(), sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType,
                                  serialized: bytes) -> SparseTensorType:
        name = f"arrow_sparse.{cls.format}"
        try:
            meta = json.loads(serialized.decode())
            version, ndim = meta["version"], meta["ndim"]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            msg = f"{name}: malformed extension metadata {serialized!r}"
            raise ArrowSparseValueError(msg) from exc
        if version != FORMAT_VERSION:
            msg = (f"{name}: storage layout version {version} is not supported (this "
                   f"arrow_sparse reads version {FORMAT_VERSION}); upgrade arrow_sparse")
            raise ArrowSparseValueError(msg)
        if not pa.types.is_struct(storage_type) or storage_type.get_field_index("values") < 0:
            msg = f"{name}: storage must be a struct with a values field, got {storage_type}"
            raise ArrowSparseTypeError(msg)
        value_type = storage_type.field("values").type.value_type
        out = cls._from_meta(value_type, ndim, meta)
        if meta.get("value_type") != out.value_dtype.name:
            msg = (f"{name}: metadata value_type {meta.get('value_type')!r} does not match "
                   f"the storage's values type {value_type}")
            raise ArrowSparseTypeError(msg)
        if out.storage_type != storage_type:
            msg = (f"{name}: storage type {storage_type} does not match the layout "
                   f"{out.storage_type}")
            raise ArrowSparseTypeError(msg)
        return out

    def __arrow_ext_class__(self) -> type[SparseTensorArray]:
        return SparseTensorArray

    def __arrow_ext_scalar_class__(self) -> type[SparseTensorScalar]:
        return SparseTensorScalar

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self._value_type, self._ndim)

    def __repr__(self) -> str:
        extra = "" if self.format in ("csr", "csc") else f", ndim={self._ndim}"
        return f"{type(self).__name__}({self.value_dtype.name}{extra})"


class SparseCOOType(SparseTensorType):
    """``arrow_sparse.coo``: ``struct<shape, indices, values>``, coordinates entry-major.

    Parameters
    ----------
    value_type
        Arrow (or numpy) type of the values: bool, an integer type, float32 or float64.
    ndim
        Number of dimensions of every tensor.

    Examples
    --------
    >>> for field in asp.sparse.SparseCOOType(pa.float32(), 3).storage_type:
    ...     print(field.name, field.type)
    shape fixed_size_list<item: int64>[3]
    indices large_list<item: fixed_size_list<item: int64>[3]>
    values large_list<item: float>
    """

    format = "coo"

    @staticmethod
    def _storage(value_type: pa.DataType, ndim: int) -> pa.DataType:
        return pa.struct([("shape", pa.list_(_I64, ndim)),
                          ("indices", pa.large_list(pa.list_(_I64, ndim))),
                          ("values", pa.large_list(value_type))])


class SparseCSRType(SparseTensorType):
    """``arrow_sparse.csr``: ``struct<shape, indptr, indices, values>`` of a CSR matrix.

    Parameters
    ----------
    value_type
        Arrow (or numpy) type of the values: bool, an integer type, float32 or float64.
    ndim
        Always 2.

    Examples
    --------
    >>> for field in asp.sparse.SparseCSRType(pa.int64()).storage_type:
    ...     print(field.name, field.type)
    shape fixed_size_list<item: int64>[2]
    indptr large_list<item: int64>
    indices large_list<item: int64>
    values large_list<item: int64>
    """

    format = "csr"

    @staticmethod
    def _storage(value_type: pa.DataType, ndim: int) -> pa.DataType:
        return pa.struct([("shape", pa.list_(_I64, 2)), ("indptr", _INDEX_LIST),
                          ("indices", _INDEX_LIST), ("values", pa.large_list(value_type))])


class SparseCSCType(SparseCSRType):
    """``arrow_sparse.csc``: the storage of :class:`SparseCSRType`, compressed by column.

    ``indptr`` has ``shape[1] + 1`` entries and ``indices`` holds row coordinates.

    Parameters
    ----------
    value_type
        Arrow (or numpy) type of the values: bool, an integer type, float32 or float64.
    ndim
        Always 2.

    Examples
    --------
    >>> asp.sparse.SparseCSCType(pa.float64()).extension_name
    'arrow_sparse.csc'
    """

    format = "csc"


class SparseCSFType(SparseTensorType):
    """``arrow_sparse.csf``: ``struct<shape, axis_order, indptr, indices, values>``.

    Parameters
    ----------
    value_type
        Arrow (or numpy) type of the values: bool, an integer type, float32 or float64.
    ndim
        Number of dimensions of every tensor.
    level_formats
        ``"dense"`` or ``"compressed"`` for each level of every tensor of the column
        (default all compressed; see :meth:`SparseCOO.to_csf`). Written to the type's
        metadata (pyarrow's ``SparseCSFIndex`` has no level formats); a dense level's
        coordinates and pointers are not stored (empty lists): they follow from the
        shape, and are rebuilt on reading.

    Examples
    --------
    >>> asp.sparse.SparseCSFType(pa.float64(), 3).storage_type.names
    ['shape', 'axis_order', 'indptr', 'indices', 'values']
    >>> t = asp.sparse.SparseCSFType(pa.float64(), 2, level_formats=("dense", "compressed"))
    >>> t
    SparseCSFType(float64, ndim=2, level_formats=('dense', 'compressed'))
    >>> t.__arrow_ext_serialize__()
    b'{"level_formats":["dense","compressed"],"ndim":2,"value_type":"float64","version":1}'
    """

    format = "csf"

    def __init__(self, value_type: Any, ndim: int = 2,
                 level_formats: Sequence[str] | None = None) -> None:
        func = type(self).__name__
        self._level_formats = lv.check_level_formats(
            func, level_formats, _check_ndim(func, self.format, ndim))
        super().__init__(value_type, ndim)

    @property
    def level_formats(self) -> tuple[str, ...]:
        """The level formats of every tensor of the column (``"dense"``/``"compressed"``)."""
        return self._level_formats

    def _meta(self) -> dict[str, Any]:
        meta = super()._meta()
        if "dense" in self._level_formats:  # all compressed: version 1's metadata, unchanged
            meta["level_formats"] = list(self._level_formats)
        return meta

    @classmethod
    def _from_meta(cls, value_type: pa.DataType, ndim: int, meta: dict[str, Any]
                   ) -> SparseTensorType:
        return cls(value_type, ndim, meta.get("level_formats"))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self._value_type, self._ndim, self._level_formats)

    def __eq__(self, other: object) -> bool:
        # pyarrow compares extension types by name and storage; the formats are metadata
        if isinstance(other, SparseCSFType):
            return super().__eq__(other) and self._level_formats == other._level_formats
        return super().__eq__(other)  # type: ignore[no-any-return]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self.extension_name, str(self._value_type), self._ndim,
                     self._level_formats))

    def __repr__(self) -> str:
        extra = (f", level_formats={self._level_formats}" if "dense" in self._level_formats
                 else "")
        return f"{type(self).__name__}({self.value_dtype.name}, ndim={self._ndim}{extra})"

    @staticmethod
    def _storage(value_type: pa.DataType, ndim: int) -> pa.DataType:
        return pa.struct([("shape", pa.list_(_I64, ndim)),
                          ("axis_order", pa.list_(pa.int32(), ndim)),
                          ("indptr", pa.large_list(_INDEX_LIST)),
                          ("indices", pa.large_list(_INDEX_LIST)),
                          ("values", pa.large_list(value_type))])


_TYPES: dict[str, type[SparseTensorType]] = {
    "coo": SparseCOOType, "csr": SparseCSRType, "csc": SparseCSCType, "csf": SparseCSFType,
}
_CLASSES: dict[str, type[SparseTensor]] = {
    "coo": SparseCOO, "csr": SparseCSR, "csc": SparseCSC, "csf": SparseCSF,
}


def sparse_tensor_type(format: str, value_type: Any, ndim: int = 2,  # noqa: A002
                       level_formats: Sequence[str] | None = None) -> SparseTensorType:
    """Return the extension type of a column of sparse tensors.

    Parameters
    ----------
    format
        ``"coo"``, ``"csr"``, ``"csc"`` or ``"csf"``.
    value_type
        Arrow (or numpy) type of the values: bool, an integer type, float32 or float64.
    ndim
        Number of dimensions (2 for CSR and CSC).
    level_formats
        CSF only: ``"dense"`` or ``"compressed"`` for each level (default all
        compressed).

    Returns
    -------
    SparseTensorType
        The registered extension type ``arrow_sparse.<format>``.

    Raises
    ------
    ValueError
        An unknown format, or an ``ndim`` that is not a positive integer (not 2 for
        CSR/CSC); ``level_formats`` for a format other than CSF, or malformed.
    TypeError
        A value type that is not bool, integer, float32 or float64.

    Examples
    --------
    >>> asp.sparse.sparse_tensor_type("coo", np.float32, 3)
    SparseCOOType(float32, ndim=3)
    """
    if format not in _TYPES:
        msg = f"sparse_tensor_type: format must be one of {sorted(_TYPES)}, got {format!r}"
        raise ArrowSparseValueError(msg)
    if format == "csf":
        return SparseCSFType(value_type, ndim, level_formats)
    if level_formats is not None:
        msg = (f"sparse_tensor_type: level_formats is for the csf format only, got "
               f"format {format!r}")
        raise ArrowSparseValueError(msg)
    return _TYPES[format](value_type, ndim)


# ------------------------------------------------------------------------ encoding
def _offsets(counts: Sequence[int]) -> pa.Array:
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return pa.array(out, type=_I64)


def _large_list(counts: Sequence[int], parts: Sequence[np.ndarray], item: pa.DataType,
                dtype: Any = np.int64) -> pa.Array:
    flat = np.concatenate(parts) if parts else np.empty(0, dtype=dtype)
    return pa.LargeListArray.from_arrays(_offsets(counts), pa.array(flat, type=item))


def _fixed(rows: Sequence[Sequence[int]], width: int, item: pa.DataType) -> pa.Array:
    flat = np.asarray(rows, dtype=numpy_dtype(item)).reshape(-1)
    return pa.FixedSizeListArray.from_arrays(pa.array(flat, type=item), width)


def _i64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.int64, copy=False)


def _encode(t: SparseTensorType, tensors: Sequence[SparseTensor | None]) -> pa.StructArray:
    fmt, ndim, vt = t.format, t.ndim, t.value_type
    valid = [x for x in tensors if x is not None]
    shapes = [x.shape if x is not None else (0,) * ndim for x in tensors]
    if fmt == "coo":
        counts = [x.nnz if x is not None else 0 for x in tensors]
        coords = [_i64(x.indices).T.reshape(-1) for x in valid]
        indices = pa.LargeListArray.from_arrays(
            _offsets(counts), pa.FixedSizeListArray.from_arrays(
                pa.array(np.concatenate(coords) if coords else np.empty(0, np.int64),
                         type=_I64), ndim))
        values = _large_list(counts, [x.values for x in valid], vt, t.value_dtype)
        arrays = [_fixed(shapes, ndim, _I64), indices, values]
    elif fmt in ("csr", "csc"):
        parts = [x._compact() for x in valid]  # type: ignore[attr-defined]
        ptr_counts = [len(x.indptr) if x is not None else 0 for x in tensors]
        counts = [x.nnz if x is not None else 0 for x in tensors]
        arrays = [_fixed(shapes, 2, _I64),
                  _large_list(ptr_counts, [_i64(p[0]) for p in parts], _I64),
                  _large_list(counts, [_i64(p[1]) for p in parts], _I64),
                  _large_list(counts, [p[2] for p in parts], vt, t.value_dtype)]
    else:
        comp = [x._compact() for x in valid]  # type: ignore[attr-defined]
        orders = [x.axis_order if x is not None else range(ndim) for x in tensors]
        levels = [(ndim - 1, ndim) if x is not None else (0, 0) for x in tensors]
        dense = [f == "dense" for f in t.level_formats]  # type: ignore[attr-defined]
        none = np.empty(0, dtype=np.int64)  # a dense level's arrays follow from the shape
        ptrs = [none if dense[k + 1] else _i64(p) for c in comp for k, p in enumerate(c.indptr)]
        idxs = [none if dense[k] else _i64(i) for c in comp for k, i in enumerate(c.indices)]
        counts = [x.nnz if x is not None else 0 for x in tensors]
        arrays = [_fixed(shapes, ndim, _I64), _fixed(orders, ndim, pa.int32()),
                  pa.LargeListArray.from_arrays(_offsets([n for n, _ in levels]),
                                                _large_list([len(p) for p in ptrs], ptrs, _I64)),
                  pa.LargeListArray.from_arrays(_offsets([n for _, n in levels]),
                                                _large_list([len(i) for i in idxs], idxs, _I64)),
                  _large_list(counts, [c.values for c in comp], vt, t.value_dtype)]
    nulls = np.array([x is None for x in tensors], dtype=bool)
    mask = pa.array(nulls) if nulls.any() else None
    return pa.StructArray.from_arrays(arrays, fields=list(t.storage_type), mask=mask)



def _type_of(func: str, tensors: Sequence[Any], given: Any) -> SparseTensorType:
    first = None
    for pos, x in enumerate(tensors):
        if x is None:
            continue
        if not isinstance(x, SparseTensor):
            msg = (f"{func}: tensors[{pos}] is a {type(x).__name__}, expected a SparseCOO, "
                   f"SparseCSR, SparseCSC, SparseCSF or None")
            raise ArrowSparseTypeError(msg)
        if x.device != "cpu":
            msg = (f"{func}: tensors[{pos}] is on {x.device}, but Arrow arrays live in host "
                   f"memory; move it first with .to_device('cpu')")
            raise NotImplementedError(msg)
        if first is None:
            first = pos
    if given is not None:
        if not isinstance(given, SparseTensorType):
            msg = f"{func}: type must be a SparseTensorType, got {type(given).__name__}"
            raise ArrowSparseTypeError(msg)
        want: SparseTensorType = given
        ref = "type"
    elif first is None:
        msg = (f"{func}: cannot infer the type of {len(tensors)} tensors that are all None; "
               f"pass type=asp.sparse.sparse_tensor_type(...)")
        raise ArrowSparseTypeError(msg)
    else:
        x0 = tensors[first]
        want = sparse_tensor_type(x0.format, pa.from_numpy_dtype(x0.dtype), x0.ndim,
                                  getattr(x0, "level_formats", None))
        ref = f"tensors[{first}]"
    for pos, x in enumerate(tensors):
        if x is None:
            continue
        if x.format != want.format:
            msg = (f"{func}: tensors[{pos}] is a {type(x).__name__} but {ref} is "
                   f"{want.format.upper()}; one array holds one format (convert with "
                   f".to_{want.format}())")
            raise ArrowSparseTypeError(msg)
        if x.dtype != want.value_dtype:
            msg = (f"{func}: tensors[{pos}] has values of dtype {x.dtype} but {ref} has "
                   f"{want.value_dtype}; one array holds one value dtype (cast the values)")
            raise ArrowSparseTypeError(msg)
        if x.ndim != want.ndim:
            msg = (f"{func}: tensors[{pos}] has {x.ndim} dimensions but {ref} has "
                   f"{want.ndim}; one array holds one number of dimensions")
            raise ArrowSparseTypeError(msg)
        if isinstance(want, SparseCSFType) and x.level_formats != want.level_formats:
            msg = (f"{func}: tensors[{pos}] has level_formats {x.level_formats} but {ref} has "
                   f"{want.level_formats}; one array holds one level format per level "
                   f"(convert with .to_csf(level_formats=...))")
            raise ArrowSparseTypeError(msg)
    return want


def sparse_tensor_array(tensors: Sequence[SparseTensor | None],
                        type: SparseTensorType | None = None) -> SparseTensorArray:  # noqa: A002
    """Build an Arrow extension array holding one sparse tensor per row.

    Parameters
    ----------
    tensors
        :class:`~arrow_sparse.SparseCOO`, :class:`~arrow_sparse.SparseCSR`,
        :class:`~arrow_sparse.SparseCSC` or :class:`~arrow_sparse.SparseCSF` objects,
        all of one format, one value dtype and one number of dimensions; shapes (and
        CSF axis orders) may differ from row to row. ``None`` makes a null row.
    type
        The extension type (:func:`sparse_tensor_type`); by default that of the first
        tensor. Needed when every row is null or ``tensors`` is empty.

    Returns
    -------
    SparseTensorArray
        An ``arrow_sparse.<format>`` extension array of ``len(tensors)`` rows.

    Raises
    ------
    TypeError
        A row that is not a sparse tensor or None; rows of different formats, value
        dtypes or numbers of dimensions (or not matching ``type``); no tensor to
        infer the type from and no ``type``.
    NotImplementedError
        A tensor on a CUDA device (move it with ``.to_device('cpu')``).

    See Also
    --------
    SparseTensorArray.tensors : The tensors back.
    sparse_tensor_type : The extension types.

    Notes
    -----
    The buffers are copied into the storage layout (documented in
    ``docs/sparse-tensors.md``): index arrays become int64, pointers are rebased to
    start at zero (slices are compacted), entries keep their stored order (a
    non-canonical tensor stays non-canonical), and values keep their dtype.

    Examples
    --------
    >>> coo = asp.SparseCOO([[0, 1], [2, 0]], np.array([1.0, 2.0]), (2, 3))
    >>> empty = asp.SparseCOO(np.zeros((2, 0), dtype=np.int64), np.zeros(0), (4, 4))
    >>> arr = asp.sparse.sparse_tensor_array([coo, None, empty])
    >>> arr.type, arr.null_count
    (SparseCOOType(float64, ndim=2), 1)
    >>> table = pa.table({"t": arr})
    >>> back = table.column("t").chunk(0).to_sparse(0)
    >>> back.shape, back.indices.tolist(), back.values.tolist()
    ((2, 3), [[0, 1], [2, 0]], [1.0, 2.0])
    """
    func = "sparse_tensor_array"
    if isinstance(tensors, (SparseTensor, str, bytes)) or not isinstance(tensors, Sequence):
        msg = (f"{func}: tensors must be a sequence of sparse tensors, got "
               f"{tensors.__class__.__name__}")
        raise ArrowSparseTypeError(msg)
    tensors = list(tensors)
    ext = _type_of(func, tensors, type)
    storage = _encode(ext, tensors)
    out = pa.ExtensionArray.from_storage(ext, storage)
    assert isinstance(out, SparseTensorArray)
    return out


# ------------------------------------------------------------------------ decoding
def _list_parts(arr: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Absolute offsets (numpy int64, ``len + 1``) and the unsliced child of a list array."""
    return arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64, copy=False), arr.values


def _numpy(func: str, arr: pa.Array, what: str) -> np.ndarray:
    if arr.null_count:
        msg = f"{func}: {what} holds nulls; the layout allows nulls only at the tensor (row) level"
        raise ArrowSparseValueError(msg)
    return arr.to_numpy(zero_copy_only=False)


def _fixed_matrix(func: str, arr: pa.Array, width: int, what: str) -> np.ndarray:
    """``[len, width]`` numpy view of a (possibly sliced) fixed-size list array."""
    child = arr.values
    if child.null_count:  # the slots of null rows (Parquet writes them as nulls)
        child = child.fill_null(0)
    flat = child.to_numpy(zero_copy_only=False)
    return flat.reshape(-1, width)[arr.offset:arr.offset + len(arr)]


class _Decoder:
    """Numpy views of one storage chunk, decoding row ``i`` into a tensor."""

    def __init__(self, t: SparseTensorType, storage: pa.StructArray, validate: bool) -> None:
        func = self.func = f"arrow_sparse.{t.format}"
        self.t, self.validate = t, validate
        self.valid = (np.ones(len(storage), dtype=bool) if storage.null_count == 0
                      else storage.is_valid().to_numpy(zero_copy_only=False))
        f = dict(zip(t.storage_type.names, storage.flatten(), strict=True))
        self.shape = _fixed_matrix(func, f["shape"], t.ndim, "shape")
        self.val_off, vals = _list_parts(f["values"])
        self.vals = _numpy(func, vals, "values")
        if t.format == "coo":
            self.idx_off, coords = _list_parts(f["indices"])
            self.coords = _fixed_matrix(func, coords, t.ndim, "indices")
        elif t.format in ("csr", "csc"):
            self.ptr_off, ptr = _list_parts(f["indptr"])
            self.ptr = _numpy(func, ptr, "indptr")
            self.idx_off, idx = _list_parts(f["indices"])
            self.idx = _numpy(func, idx, "indices")
        else:
            self.order = _fixed_matrix(func, f["axis_order"], t.ndim, "axis_order")
            self.ptr_outer, inner = _list_parts(f["indptr"])
            self.ptr_inner, ptr = _list_parts(inner)
            self.ptr = _numpy(func, ptr, "indptr")
            self.idx_outer, inner = _list_parts(f["indices"])
            self.idx_inner, idx = _list_parts(inner)
            self.idx = _numpy(func, idx, "indices")

    def row(self, i: int) -> SparseTensor | None:
        if not self.valid[i]:
            return None
        t, fmt = self.t, self.t.format
        shape = tuple(int(s) for s in self.shape[i])
        values = self.vals[self.val_off[i]:self.val_off[i + 1]]
        if fmt == "coo":
            indices = self.coords[self.idx_off[i]:self.idx_off[i + 1]].T
            return SparseCOO(indices, values, shape, validate=self.validate)
        if fmt in ("csr", "csc"):
            indptr = self.ptr[self.ptr_off[i]:self.ptr_off[i + 1]]
            indices = self.idx[self.idx_off[i]:self.idx_off[i + 1]]
            return _CLASSES[fmt](indptr, indices, values, shape, validate=self.validate)
        ptrs = self._levels(self.ptr_outer, self.ptr_inner, self.ptr, i, t.ndim - 1, "indptr")
        idxs = self._levels(self.idx_outer, self.idx_inner, self.idx, i, t.ndim, "indices")
        order = tuple(int(a) for a in self.order[i])
        formats = t.level_formats  # type: ignore[attr-defined]
        for k, fmt in enumerate(formats):
            if fmt == "dense":
                self._dense_level(i, k, ptrs, idxs, shape[order[k]])
        return SparseCSF(ptrs, idxs, values, shape, order, level_formats=formats,
                         validate=self.validate)

    def _dense_level(self, i: int, k: int, ptrs: list[np.ndarray], idxs: list[np.ndarray],
                     size: int) -> None:
        """Rebuild dense level ``k`` of row ``i`` (stored empty) from its parents and size."""
        if len(idxs[k]) or (k and len(ptrs[k - 1])):
            msg = (f"{self.func}: row {i} stores arrays for level {k}, which the type's "
                   f"level_formats make dense (its arrays must be empty lists)")
            raise ArrowSparseValueError(msg)
        parents = 1 if k == 0 else len(idxs[k - 1])
        check_nbytes(self.func, f"row {i}'s dense level {k} ({parents} parents x {size})",
                     parents * size, 8)
        idxs[k] = np.tile(np.arange(size, dtype=np.int64), parents)
        if k:
            ptrs[k - 1] = np.arange(parents + 1, dtype=np.int64) * size

    def _levels(self, outer: np.ndarray, inner: np.ndarray, flat: np.ndarray, i: int,
                count: int, what: str) -> list[np.ndarray]:
        lo, hi = int(outer[i]), int(outer[i + 1])
        if hi - lo != count:
            msg = (f"{self.func}: row {i} has {hi - lo} {what} lists but ndim "
                   f"{self.t.ndim} needs {count}")
            raise ArrowSparseValueError(msg)
        return [flat[inner[j]:inner[j + 1]] for j in range(lo, hi)]


class SparseTensorArray(pa.ExtensionArray):
    """An Arrow extension array of sparse tensors, one per row (null rows allowed).

    Built by :func:`sparse_tensor_array`, and what pyarrow returns for a column of an
    ``arrow_sparse.*`` type read from Parquet or IPC (while the types are registered).

    Examples
    --------
    >>> csf = asp.SparseCSF.from_dense(np.arange(8.0).reshape(2, 2, 2), axis_order=[2, 0, 1])
    >>> arr = asp.sparse.sparse_tensor_array([csf])
    >>> [t.axis_order for t in arr.tensors()]
    [(2, 0, 1)]
    """

    def tensors(self, *, validate: bool = True) -> Iterator[SparseTensor | None]:
        """Iterate over the rows as sparse tensors (None for a null row).

        Parameters
        ----------
        validate
            Check every decoded tensor in full, as the constructors do (O(nnz)). Leave
            True for data from outside.

        Yields
        ------
        SparseTensor or None
            One tensor per row; its index arrays are int64 views of the Arrow buffers,
            its values a view (bool values are unpacked: a copy).

        Raises
        ------
        ValueError, IndexError
            Storage that breaks the layout's invariants.

        Examples
        --------
        >>> csr = asp.SparseCSR([0, 1, 1], [2], np.array([5], dtype=np.int64), (2, 3))
        >>> [t.to_dense().tolist() for t in asp.sparse.sparse_tensor_array([csr]).tensors()]
        [[[0, 0, 5], [0, 0, 0]]]
        """
        dec = _Decoder(self.type, self.storage, validate)
        for i in range(len(self)):
            yield dec.row(i)

    def to_sparse(self, i: int, *, validate: bool = True) -> SparseTensor | None:
        """Return row ``i`` as a sparse tensor (None for a null row).

        Parameters
        ----------
        i
            Row number; negative numbers count from the end.
        validate
            Check the decoded tensor in full (O(nnz)).

        Returns
        -------
        SparseTensor or None
            The tensor of row ``i``.

        Raises
        ------
        IndexError
            ``i`` outside the array.

        Examples
        --------
        >>> coo = asp.SparseCOO([[1]], np.array([2.5], dtype=np.float32), (4,))
        >>> asp.sparse.sparse_tensor_array([None, coo]).to_sparse(-1)
        SparseCOO(shape=(4,), nnz=1, dtype=float32)
        """
        n = len(self)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            msg = f"to_sparse: i must be an integer, got {type(i).__name__}"
            raise ArrowSparseTypeError(msg)
        j = int(i) + n if i < 0 else int(i)
        if not 0 <= j < n:
            msg = f"to_sparse: row {i} out of range for an array of {n} rows"
            raise ArrowSparseIndexError(msg)
        one = self.slice(j, 1)
        return _Decoder(self.type, one.storage, validate).row(0)

    def to_pylist(self, **kwargs: Any) -> list[SparseTensor | None]:
        """Return the rows as a list of sparse tensors (None for null rows).

        Parameters
        ----------
        **kwargs
            Accepted for pyarrow's signature and ignored.

        Returns
        -------
        list
            One :class:`~arrow_sparse.SparseCOO`, ... or None per row.

        Examples
        --------
        >>> coo = asp.SparseCOO([[0], [1]], np.array([True]), (1, 2))
        >>> asp.sparse.sparse_tensor_array([coo, None]).to_pylist()
        [SparseCOO(shape=(1, 2), nnz=1, dtype=bool), None]
        """
        return list(self.tensors())


class SparseTensorScalar(pa.ExtensionScalar):
    """One row of a :class:`SparseTensorArray`; ``as_py()`` gives the tensor (or None)."""

    def as_py(self, **kwargs: Any) -> SparseTensor | None:
        """Return the sparse tensor of this row, or None when the row is null.

        Parameters
        ----------
        **kwargs
            Accepted for pyarrow's signature and ignored.

        Returns
        -------
        SparseTensor or None
            The decoded tensor.

        Examples
        --------
        >>> coo = asp.SparseCOO([[0]], np.array([1.0]), (3,))
        >>> asp.sparse.sparse_tensor_array([coo])[0].as_py()
        SparseCOO(shape=(3,), nnz=1, dtype=float64)
        """
        if self.value is None or not self.is_valid:
            return None
        t = self.type
        storage = pa.array([self.value], type=t.storage_type)
        return _Decoder(t, storage, True).row(0)


# ------------------------------------------------------------------- registration
def register_extension_types() -> None:
    """Register the ``arrow_sparse.*`` extension types with pyarrow (idempotent).

    Called when :mod:`arrow_sparse.sparse` is imported. A type registered already by
    these classes is left alone; one registered by other classes (an older import,
    a reloaded module) is replaced.

    See Also
    --------
    unregister_extension_types : The inverse.

    Examples
    --------
    >>> asp.sparse.register_extension_types()
    >>> asp.sparse.register_extension_types()  # again: nothing changes
    """
    for fmt, cls in _TYPES.items():
        instance = cls(pa.float64(), 2)
        try:
            pa.register_extension_type(instance)
        except pa.ArrowKeyError:  # registered before, perhaps by a reloaded module's class
            pa.unregister_extension_type(f"arrow_sparse.{fmt}")
            pa.register_extension_type(instance)


def unregister_extension_types() -> None:
    """Unregister the ``arrow_sparse.*`` extension types (columns then read as structs).

    Types not registered are skipped.

    See Also
    --------
    register_extension_types : The inverse.

    Examples
    --------
    >>> asp.sparse.unregister_extension_types()
    >>> asp.sparse.register_extension_types()
    """
    for fmt in _TYPES:
        try:
            pa.unregister_extension_type(f"arrow_sparse.{fmt}")
        except pa.ArrowKeyError:
            pass


register_extension_types()
