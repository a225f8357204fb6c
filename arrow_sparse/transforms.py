"""Feature-pipeline transforms on list columns: NVTabular's vocabulary without cuDF or Dask.

Hash bucketing, bucketizing, row length statistics, padding/truncation to fixed
length and null handling, on Arrow ``list``/``large_list`` arrays (and ChunkedArrays,
chunk by chunk), on :class:`~arrow_sparse.Jagged` batches and, for the element-wise
ones, on flat numpy or Arrow arrays; the vocabulary functions (:func:`value_counts`,
:func:`fit_vocabulary`, :func:`categorify`, :class:`Vocabulary`) live in
``arrow_sparse.vocabulary`` and are importable from here too.
docs/feature-transforms.md explains the rules; the examples use Caffe2's batch
``[1, 2, 3] [2, 4, 6, 7] [3, 6]``.

Element-wise transforms (:func:`hash_bucket`, :func:`categorify`, :func:`bucketize`)
only replace the leaf values: the result shares the input's offsets and row validity
buffers (no copy), whatever the nesting depth.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _arrow
from . import _validate as v
from ._backend import array_module, device_checks, module_of, read_back
from ._transforms_common import (
    _arrow_leaf,
    _bytes_type,
    _ElementOp,
    _kernel,
    _Leaf,
    _map_elements,
    _not_a_column,
    _per_chunk,
)
from .errors import ArrowSparseTypeError, ArrowSparseValueError
from .jagged import Jagged
from .vocabulary import (
    FIRST_ID,
    MISSING_ID,
    PADDING_ID,
    Vocabulary,
    categorify,
    fit_vocabulary,
    value_counts,
)

__all__ = [
    "FIRST_ID",
    "MISSING_ID",
    "PADDING_ID",
    "LengthStats",
    "Vocabulary",
    "bucketize",
    "categorify",
    "drop_nulls",
    "fill_null",
    "fit_vocabulary",
    "hash_bucket",
    "length_stats",
    "pad_or_truncate",
    "value_counts",
]


class _HashOp(_ElementOp):
    def __init__(self, seed: int, num_buckets: int) -> None:
        self.seed = seed
        self.num_buckets = num_buckets

    def check(self, func: str, leaf: _Leaf) -> None:
        if leaf.kind not in ("int", "bytes"):
            msg = (f"{func}: values of {leaf.desc} cannot be hashed; hash_bucket takes "
                   "integers or strings (use bucketize for floats)")
            raise ArrowSparseTypeError(msg)

    def compute(self, leaf: _Leaf, start: int, stop: int, out: np.ndarray) -> None:
        if leaf.kind == "int":
            _kernel("hash_ints", module_of(out))(leaf.values, start, stop, self.seed,
                                                 self.num_buckets, out)
        else:
            _kernel("hash_strings")(leaf.offsets, leaf.data, start, stop, self.seed,
                                    self.num_buckets, out)


class _BucketizeOp(_ElementOp):
    def __init__(self, boundaries: np.ndarray, right: bool) -> None:
        self.boundaries = boundaries
        self.right = right

    def check(self, func: str, leaf: _Leaf) -> None:
        if leaf.kind not in ("int", "float"):
            msg = f"{func}: values of {leaf.desc} cannot be bucketized; pass numbers"
            raise ArrowSparseTypeError(msg)

    def compute(self, leaf: _Leaf, start: int, stop: int, out: np.ndarray) -> None:
        common = np.result_type(leaf.values.dtype, self.boundaries.dtype)
        _kernel("bucketize", module_of(out))(leaf.values, start, stop,
                                             self.boundaries.astype(common), self.right, out)


def hash_bucket(values: Any, num_buckets: int, seed: int = 0) -> Any:
    """Hash integers or strings into buckets: ``XXH3_64(bytes, seed) % num_buckets``.

    Parameters
    ----------
    values
        Arrow list array (any nesting; ``list``, ``large_list``, ``list_view``,
        ``fixed_size_list``) or ChunkedArray of integers or strings (``string``,
        ``large_string``, ``binary``, ``large_binary``; views are cast), a flat Arrow
        array, a :class:`Jagged` or a numpy array of integers.
    num_buckets
        Number of buckets, in ``[1, 2**63 - 1]``.
    seed
        XXH3 seed, an integer in ``[0, 2**64)``.

    Returns
    -------
    pyarrow.Array, pyarrow.ChunkedArray, Jagged or numpy.ndarray
        The input's kind with int64 bucket ids in ``[0, num_buckets)``. Offsets and
        validity buffers are the input's (zero-copy); null rows and null elements stay
        null.

    Raises
    ------
    TypeError
        Float, boolean or other values; a non-integer ``num_buckets`` or ``seed``.
    ValueError
        ``num_buckets`` or ``seed`` out of range.

    See Also
    --------
    categorify : Exact ids from a fitted vocabulary.

    Notes
    -----
    The hash is XXH3-64 (``XXH3_64bits_withSeed`` of xxHash 0.8, Yann Collet) of the
    value's bytes, an unsigned 64-bit integer, reduced modulo ``num_buckets``:

    * an integer is hashed as the 8 little-endian bytes of its value as a two's
      complement int64 (every integer dtype gives the same bucket for the same value;
      uint64 values above ``2**63 - 1`` use their own 8 bytes);
    * a string is hashed as its UTF-8 bytes (binary: its bytes), without terminator.

    So ``xxhash.xxh3_64_intdigest(b"apple", seed=7) % n`` (the ``xxhash`` package) gives
    the same bucket. The ids are stable across runs, machines and releases;
    docs/feature-transforms.md lists test vectors.

    On the device (a CuPy array, or a Jagged on the device): integers only (strings
    live in Arrow's host buffers); CuPy results, the same buckets; no synchronisation.
    A Jagged's whole values buffer is hashed (its offsets are not read back) and the
    result shares its offsets and masks.

    Examples
    --------
    >>> arr = pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> asp.hash_bucket(arr, 10).to_pylist()
    [[8, 7, 9], [7, 6, 5, 5], None, [9, 5]]
    >>> asp.hash_bucket(pa.array([["apple", None], ["kiwi"]]), 1000, seed=7).to_pylist()
    [[341, None], [304]]
    >>> asp.hash_bucket(np.array([1, 2, 3]), 10)
    array([8, 7, 9])
    """
    func = "hash_bucket"
    num_buckets = _check_int(func, "num_buckets", num_buckets, 1, 2**63 - 1)
    seed = _check_int(func, "seed", seed, 0, 2**64 - 1)
    return _map_elements(func, values, _HashOp(seed, num_buckets))


def bucketize(values: Any, boundaries: Any, *, right: bool = False) -> Any:
    """Bucket numbers by sorted boundaries: the number of boundaries at or below each value.

    Parameters
    ----------
    values
        Arrow list array (any nesting) or ChunkedArray of numbers, a flat Arrow array,
        a :class:`Jagged` or a numpy array.
    boundaries
        1-D, non-decreasing, NaN-free numbers ``b[0] <= b[1] <= ... <= b[n-1]``.
    right
        Which side of an interval is closed. False (default): bucket ``i`` is
        ``b[i-1] <= x < b[i]``; True: ``b[i-1] < x <= b[i]``.

    Returns
    -------
    pyarrow.Array, pyarrow.ChunkedArray, Jagged or numpy.ndarray
        The input's kind with int64 bucket ids in ``[0, len(boundaries)]``. Offsets and
        validity are the input's (zero-copy); nulls stay null.

    Raises
    ------
    TypeError
        Non-numeric values or boundaries.
    ValueError
        Boundaries that are not 1-D, contain NaN or decrease.

    See Also
    --------
    numpy.digitize : The same rule (``right`` has the same meaning).

    Notes
    -----
    The id is ``numpy.digitize(x, boundaries, right=right)``, which equals
    ``numpy.searchsorted(boundaries, x, side="left" if right else "right")`` and
    ``torch.bucketize(x, boundaries, right=not right)`` (torch's ``right`` has the
    opposite meaning). NaN values go to the last bucket, ``len(boundaries)``, as in
    numpy. Values and boundaries are compared in ``numpy.result_type`` of their dtypes.

    On the device (a CuPy array, or a Jagged on the device): ``boundaries`` is a CuPy
    array on the same device; no synchronisation. Their NaNs and decreasing pairs are
    found by a device check, raised by the next check ("boundaries must be
    non-decreasing and not NaN (first at position i; found by a device check, ...)").

    Examples
    --------
    >>> arr = pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> asp.bucketize(arr, [2, 5]).to_pylist()
    [[0, 1, 1], [1, 1, 2, 2], None, [1, 2]]
    >>> asp.bucketize(arr, [2, 5], right=True).to_pylist()
    [[0, 0, 1], [0, 1, 2, 2], None, [1, 2]]
    >>> asp.bucketize(np.array([0.5, 2.0, np.nan]), [1.0, 2.0])
    array([0, 2, 2])
    """
    func = "bucketize"
    right = v.check_bool(func, "right", right)
    xp = array_module(func, values=values, boundaries=boundaries)
    bounds = v.as_values_array(func, "boundaries", boundaries, min_ndim=0, device=True)
    if bounds.ndim != 1:
        msg = f"{func}: boundaries must be 1-dimensional, got shape {bounds.shape}"
        raise ArrowSparseValueError(msg)
    if bounds.dtype.kind == "b":
        msg = f"{func}: boundaries must be numbers, got dtype bool"
        raise ArrowSparseTypeError(msg)
    if xp is np:  # on the device the kernel checks them (deferred)
        if bounds.dtype.kind == "f" and np.isnan(bounds).any():
            pos = v.first_true(np.isnan(bounds))
            v.fail_value(func, "boundaries", "must not contain NaN", pos, bounds[pos])
        decreasing = bounds[1:] < bounds[:-1]
        if decreasing.any():
            pos = v.first_true(decreasing) + 1
            v.fail_value(func, "boundaries", "must be non-decreasing", pos, bounds[pos])
    return _map_elements(func, values, _BucketizeOp(xp.ascontiguousarray(bounds), right))


def _check_int(func: str, arg: str, x: Any, lo: int, hi: int) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        msg = f"{func}: {arg} must be an integer, got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    if not lo <= int(x) <= hi:
        msg = f"{func}: {arg} must be in [{lo}, {hi}], got {x}"
        raise ArrowSparseValueError(msg)
    return int(x)


# -------------------------------------------------------------- one-level columns
class _Col:
    """One list level: offsets, row validity and its elements (numbers or an Arrow leaf)."""

    __slots__ = ("offsets", "validity", "values", "values_validity", "leaf", "field",
                 "source")

    def __init__(self, offsets: np.ndarray, validity: np.ndarray | None, values: Any,
                 values_validity: np.ndarray | None, leaf: pa.Array | None,
                 field: pa.Field | None, source: Any) -> None:
        self.offsets = offsets
        self.validity = validity
        self.values = values                   # numpy (N-D allowed) unless ``leaf``
        self.values_validity = values_validity
        self.leaf = leaf                       # Arrow string/binary leaf
        self.field = field                     # Arrow value field (Arrow input)
        self.source = source                   # the input (Arrow array or Jagged)

    @property
    def num_rows(self) -> int:
        return len(self.offsets) - 1


def _read_col(func: str, x: Any, *, strings: bool = True) -> _Col:
    """One-level list column of a Jagged or an Arrow list array (not chunked)."""
    if isinstance(x, Jagged):
        if isinstance(x.values, Jagged):
            msg = f"{func}: nested lists are not supported; pass one level of lists"
            raise ArrowSparseTypeError(msg)
        return _Col(x.offsets, x.validity, x.values, x.values_validity, None, None, x)
    if not isinstance(x, pa.Array) or not _arrow.is_list_type(x.type):
        raise _not_a_column(func, "values", x, "an Arrow list array or a Jagged")
    if isinstance(x.type, _arrow.LIST_VIEW_TYPES):
        x = _arrow.list_view_to_list(x)
    child = x.values
    t = child.type
    values: Any = None
    leaf = None
    if _arrow.is_list_type(t):
        msg = f"{func}: nested lists are not supported; pass one level of lists"
        raise ArrowSparseTypeError(msg)
    if isinstance(t, pa.FixedSizeListType):
        values = _arrow.fixed_size_values(func, child)
    elif strings and (_bytes_type(t) or pa.types.is_string_view(t)
                      or pa.types.is_binary_view(t)):
        leaf = _arrow_leaf(func, child)[1]
    else:
        lf = _arrow_leaf(func, child)[0]
        if lf.kind == "bytes":
            msg = (f"{func}: values of Arrow type {t} are not supported; encode strings "
                   "first with categorify or hash_bucket")
            raise ArrowSparseTypeError(msg)
        values = lf.values
    return _Col(_arrow.offsets_view(x), _arrow.validity_of(x), values,
                _arrow.validity_of(child), leaf, x.type.value_field, x)


def _list_like(col: _Col, offsets: np.ndarray, validity: np.ndarray | None,
               values: Any) -> Any:
    """Build a result of the input's kind: Jagged, or an Arrow list with its field."""
    if isinstance(col.source, Jagged):
        return Jagged._trusted(values, offsets, validity)
    child = values if isinstance(values, pa.Array) else _arrow.array_from_numpy(values, None)
    assert col.field is not None
    field = col.field.with_type(child.type)
    t = pa.large_list(field) if offsets.dtype == np.int64 else pa.list_(field)
    null_count = 0 if validity is None else int(len(validity) - np.count_nonzero(validity))
    return pa.Array.from_buffers(t, len(offsets) - 1, [_arrow.validity_buffer(validity),
                                                       pa.py_buffer(offsets)],
                                 null_count=null_count, children=[child])


def _structural(func: str, x: Any, one: Any) -> Any:
    if isinstance(x, pa.ChunkedArray):
        return _per_chunk(func, x, one)
    if isinstance(x, (pa.Array, Jagged)):
        return one(x)
    raise _not_a_column(func, "values", x, "an Arrow list array, a ChunkedArray or a Jagged")


def _scalar_of(func: str, arg: str, value: Any, dtype: np.dtype) -> np.generic:
    """``value`` as a scalar of ``dtype``; raise if it does not fit exactly."""
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            scalar = np.array(value).astype(dtype)[()]
        exact = isinstance(value, (int, float, bool, np.number, np.bool_)) and (
            bool(scalar == value) or bool(np.isnan(scalar) and np.isnan(value)))
    except (TypeError, ValueError, OverflowError):
        exact = False
    if not exact:
        msg = f"{func}: {arg} {value!r} does not fit the values dtype {dtype}"
        raise ArrowSparseValueError(msg)
    return cast(np.generic, scalar)


def pad_or_truncate(values: Any, length: int, pad_value: Any = 0, side: str = "right") -> Any:
    """Make every row exactly ``length`` long: pad short rows, truncate long ones.

    Parameters
    ----------
    values
        One-level Arrow list array or ChunkedArray of numbers (elements may be
        ``fixed_size_list`` vectors) or of strings (``string``, ``large_string``,
        ``binary``, ``large_binary`` and their views), or a :class:`Jagged`.
    length
        The fixed row length (0 allowed).
    pad_value
        Value of padding positions. Numbers: it must fit the values dtype exactly;
        default 0, the padding id of :func:`categorify`. Strings: a ``str`` (``bytes``
        for binary), or None to leave padding positions null.
    side
        ``"right"``: values start at position 0 and padding goes at the end;
        truncation keeps a row's first ``length`` elements. ``"left"``: padding goes
        in front and values end at the last position; truncation keeps the row's
        last ``length`` elements (the most recent items of a history).

    Returns
    -------
    pyarrow.FixedSizeListArray, pyarrow.ChunkedArray or numpy.ndarray
        Arrow input: ``fixed_size_list<T>[length]``; null rows stay null (their slots
        hold ``pad_value``) and null elements stay null. String views come back as
        ``large_string`` / ``large_binary``. Jagged input: a numpy array
        ``[rows, length, *inner]``; null rows are all padding and null elements hold
        ``pad_value``.

    Raises
    ------
    TypeError
        Nested lists, a non-integer ``length``, or a ``pad_value`` that is not a
        ``str`` (``bytes``) or None for strings.
    ValueError
        A negative ``length``, an unknown ``side``, or a numeric ``pad_value`` that
        does not fit the dtype.

    See Also
    --------
    Jagged.to_padded : Pad to the longest row (right side).

    Notes
    -----
    On the device (a Jagged of numbers on the device): a CuPy array back; no
    synchronisation.

    Examples
    --------
    >>> arr = pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> asp.pad_or_truncate(arr, 3).to_pylist()
    [[1, 2, 3], [2, 4, 6], None, [3, 6, 0]]
    >>> asp.pad_or_truncate(asp.Jagged.from_arrow(arr), 3, pad_value=-1, side="left")
    array([[ 1,  2,  3],
           [ 4,  6,  7],
           [-1, -1, -1],
           [-1,  3,  6]])
    >>> words = pa.array([["a", "b", "c"], None, ["d", None]])
    >>> asp.pad_or_truncate(words, 2, pad_value="", side="left").to_pylist()
    [['b', 'c'], None, ['d', None]]
    >>> asp.pad_or_truncate(words, 3, pad_value=None).to_pylist()
    [['a', 'b', 'c'], None, ['d', None, None]]
    """
    func = "pad_or_truncate"
    length = v.check_count(func, "length", length)
    left = _check_side(func, side)

    def one(x: Any) -> Any:
        col = _read_col(func, x)
        if col.leaf is not None:
            return _pad_strings(func, col, length, pad_value, left)
        values2 = col.values
        xp = module_of(values2)
        inner = values2.shape[1:]
        width = int(np.prod(inner)) if inner else 1
        pad = _scalar_of(func, "pad_value", pad_value, values2.dtype)
        rows = col.num_rows
        out = v.empty(func, (rows, length) + inner, values2.dtype, xp)
        arrow = isinstance(x, pa.Array)
        out_valid = np.ones((rows, length), dtype=np.uint8) \
            if arrow and col.values_validity is not None else None
        _kernel("pad_or_truncate", xp)(
            xp.ascontiguousarray(values2).reshape(len(values2), width), col.offsets,
            col.validity, col.values_validity, length, left, pad,
            out.reshape(rows, length, width), out_valid)
        if not arrow:
            device_checks(func, xp)
            return out
        child_valid = None if out_valid is None else out_valid.reshape(-1).view(bool)
        child = _arrow.array_from_numpy(out.reshape((rows * length,) + inner), child_valid)
        assert col.field is not None
        t = pa.list_(col.field.with_type(child.type), length)
        validity = col.validity
        null_count = 0 if validity is None else int(rows - np.count_nonzero(validity))
        return pa.Array.from_buffers(t, rows, [_arrow.validity_buffer(validity)],
                                     null_count=null_count, children=[child])

    return _structural(func, values, one)


def _pad_strings(func: str, col: _Col, length: int, pad_value: Any,
                 left: bool) -> pa.FixedSizeListArray:
    """Pad or truncate a string column (the body of :func:`pad_or_truncate`).

    The numeric kernel places element positions (-1 for padding); the strings are then
    taken (one copy) and the padding filled in.
    """
    leaf = col.leaf
    assert leaf is not None and col.field is not None
    binary = pa.types.is_binary(leaf.type) or pa.types.is_large_binary(leaf.type)
    want = bytes if binary else str
    if pad_value is not None and not isinstance(pad_value, want):
        msg = (f"{func}: pad_value must be a {want.__name__} or None for values of Arrow "
               f"type {leaf.type}, got {type(pad_value).__name__}")
        raise ArrowSparseTypeError(msg)
    start = int(col.offsets[0])
    total = int(col.offsets[-1]) - start
    rows = col.num_rows
    positions = np.empty((rows, length, 1), dtype=np.int64)
    _kernel("pad_or_truncate")(np.arange(total, dtype=np.int64).reshape(total, 1),
                               col.offsets - start, col.validity, None, length, left,
                               np.int64(-1), positions, None)
    flat = positions.reshape(-1)
    padding = flat < 0
    taken = leaf.slice(start, total).take(pa.array(flat, mask=padding))
    if pad_value is not None and padding.any():
        taken = pc.if_else(pa.array(padding), pa.scalar(pad_value, type=leaf.type), taken)
    t = pa.list_(col.field.with_type(taken.type), length)
    validity = col.validity
    null_count = 0 if validity is None else int(rows - np.count_nonzero(validity))
    return pa.Array.from_buffers(t, rows, [_arrow.validity_buffer(validity)],
                                 null_count=null_count, children=[taken])


def _check_side(func: str, side: Any) -> bool:
    if not isinstance(side, str) or side not in ("right", "left"):
        msg = f"{func}: side must be 'right' or 'left', got {side!r}"
        raise ArrowSparseValueError(msg)
    return bool(side == "left")


def drop_nulls(values: Any) -> Any:
    """Remove the null elements inside rows; null rows stay null.

    Parameters
    ----------
    values
        One-level Arrow list array or ChunkedArray (numbers or strings), or a
        :class:`Jagged`.

    Returns
    -------
    pyarrow.Array, pyarrow.ChunkedArray or Jagged
        The input's kind and list type. Without null elements the input itself is
        returned; otherwise new values and offsets (starting at 0, same offsets dtype).
        Null rows stay null (and hold no elements).

    Raises
    ------
    TypeError
        Nested lists or unsupported value types.

    See Also
    --------
    fill_null : Replace null elements instead.

    Notes
    -----
    On the device (a Jagged of numbers on the device): a Jagged on the device back;
    one synchronisation (the number of elements kept sizes the values), none when
    there are no null elements.

    Examples
    --------
    >>> arr = pa.array([[1, None, 3], [None], None, [3, 6]])
    >>> asp.drop_nulls(arr).to_pylist()
    [[1, 3], [], None, [3, 6]]
    >>> asp.drop_nulls(pa.array([["a", None, "b"]])).to_pylist()
    [['a', 'b']]
    """
    func = "drop_nulls"

    def one(x: Any) -> Any:
        col = _read_col(func, x)
        if col.values_validity is None:
            return x
        xp = module_of(col.offsets)
        offsets, positions = _kernel("compact", xp)(col.offsets, col.validity,
                                                    col.values_validity)
        kept = col.leaf.take(pa.array(positions)) if col.leaf is not None \
            else col.values[positions]
        device_checks(func, xp)
        return _list_like(col, offsets, col.validity, kept)

    return _structural(func, values, one)


def fill_null(values: Any, value: Any, *, empty_null_rows: bool = False) -> Any:
    """Replace null elements inside rows by ``value``; optionally make null rows empty.

    Parameters
    ----------
    values
        One-level Arrow list array or ChunkedArray (numbers or strings), or a
        :class:`Jagged`.
    value
        The fill value: a number that fits the values dtype exactly, or a ``str``
        (``bytes`` for binary) for strings.
    empty_null_rows
        Also turn null rows into empty rows (the result has no null rows).

    Returns
    -------
    pyarrow.Array, pyarrow.ChunkedArray or Jagged
        The input's kind with new values and the input's offsets (zero-copy). With
        ``empty_null_rows`` the row validity is dropped; the offsets are rebuilt only
        where a null row covers elements (Arrow allows that).

    Raises
    ------
    TypeError
        Nested lists or unsupported value types; a non-string ``value`` for strings.
    ValueError
        A numeric ``value`` that does not fit the dtype.

    See Also
    --------
    drop_nulls : Remove null elements instead.

    Notes
    -----
    On the device (a Jagged of numbers on the device): a Jagged on the device back,
    whose whole values buffer is filled (the offsets are not read back); no
    synchronisation. With ``empty_null_rows`` and null rows, one: the rows are then
    always compacted (offsets from 0), as the host does only where a null row covers
    elements.

    Examples
    --------
    >>> arr = pa.array([[1, None, 3], None, [None, 6]])
    >>> asp.fill_null(arr, 0).to_pylist()
    [[1, 0, 3], None, [0, 6]]
    >>> asp.fill_null(arr, -1, empty_null_rows=True).to_pylist()
    [[1, -1, 3], [], [-1, 6]]
    """
    func = "fill_null"
    empty_rows = v.check_bool(func, "empty_null_rows", empty_null_rows)

    def one(x: Any) -> Any:
        col = _read_col(func, x)
        if module_of(col.offsets) is not np:
            return _fill_null_device(func, col, value, empty_rows)
        stop = int(col.offsets[-1])
        start = int(col.offsets[0])
        filled: Any
        if col.leaf is not None:
            want = bytes if pa.types.is_binary(col.leaf.type) or \
                pa.types.is_large_binary(col.leaf.type) else str
            if not isinstance(value, want):
                msg = (f"{func}: value must be a {want.__name__} for values of Arrow type "
                       f"{col.leaf.type}, got {type(value).__name__}")
                raise ArrowSparseTypeError(msg)
            filled = col.leaf.slice(0, stop)
            if col.values_validity is not None:
                filled = pc.fill_null(filled, pa.scalar(value, type=filled.type))
        else:
            fill = _scalar_of(func, "value", value, col.values.dtype)
            filled = col.values[:stop]
            if col.values_validity is not None:
                filled = np.zeros(col.values[:stop].shape, dtype=col.values.dtype)
                mask = col.values_validity[start:stop].reshape((-1,) + (1,) * (filled.ndim - 1))
                filled[start:stop] = np.where(mask, col.values[start:stop], fill)
        offsets, validity = col.offsets, col.validity
        if empty_rows and validity is not None:
            if np.diff(offsets)[~validity].any():
                offsets, positions = _kernel("compact")(offsets, validity, None)
                filled = filled.take(pa.array(positions)) if isinstance(filled, pa.Array) \
                    else filled[positions]
            validity = None
        if isinstance(x, pa.Array) and offsets is col.offsets and not isinstance(
                x.type, _arrow.LIST_VIEW_TYPES):
            child = filled if isinstance(filled, pa.Array) else \
                _arrow.array_from_numpy(filled, None)
            assert col.field is not None
            field = col.field.with_type(child.type)
            t = pa.large_list(field) if isinstance(x.type, pa.LargeListType) else pa.list_(field)
            bufs = x.buffers()[:2]
            if validity is None:
                bufs[0] = None
            if bufs[1] is None:
                bufs[1] = pa.py_buffer(np.zeros(x.offset + len(x) + 1, dtype=offsets.dtype))
            return pa.Array.from_buffers(t, len(x), bufs, offset=x.offset,
                                         null_count=0 if validity is None else x.null_count,
                                         children=[child])
        return _list_like(col, offsets, validity, filled)

    return _structural(func, values, one)


def _fill_null_device(func: str, col: _Col, value: Any, empty_rows: bool) -> Jagged:
    """:func:`fill_null` of a Jagged on the device: the whole values buffer is filled."""
    xp = module_of(col.offsets)
    fill = _scalar_of(func, "value", value, col.values.dtype)
    filled = col.values
    if col.values_validity is not None:
        mask = col.values_validity.reshape((-1,) + (1,) * (filled.ndim - 1))
        filled = xp.where(mask, filled, fill).astype(filled.dtype, copy=False)
    offsets, validity = col.offsets, col.validity
    if empty_rows and validity is not None:
        offsets, positions = _kernel("compact", xp)(offsets, validity, None)
        filled = filled[positions]
        validity = None
    device_checks(func, xp)
    return _list_like(col, offsets, validity, filled)


# ------------------------------------------------------------------ length stats
@dataclass(frozen=True)
class LengthStats:
    """Row-length statistics of a list column, from :func:`length_stats`.

    ``rows`` counts every row; ``null_rows`` the null ones; ``empty_rows`` the non-null
    rows without elements; ``total_values`` the elements of non-null rows and
    ``null_values`` the null ones among them. ``min``, ``p50``, ``p90``, ``p99`` and
    ``max`` are exact row lengths over the non-null rows (None when there are none);
    the percentiles use the nearest-rank rule: ``pq`` is the smallest length with at
    least ``q`` percent of the rows at or below it.

    Examples
    --------
    >>> stats = asp.length_stats(pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6], []]))
    >>> stats.p50, stats.max
    (2, 4)
    >>> stats.to_dict()["empty_rows"]
    1
    """

    rows: int
    null_rows: int
    empty_rows: int
    total_values: int
    null_values: int
    min: int | None
    p50: int | None
    p90: int | None
    p99: int | None
    max: int | None

    def to_dict(self) -> dict[str, int | None]:
        """Return the statistics as a dict, in field order."""
        return asdict(self)


def length_stats(values: Any) -> LengthStats:
    """Exact statistics of the row lengths of a list column.

    Parameters
    ----------
    values
        Arrow list array (any nesting: the outer rows are measured) or ChunkedArray
        (all chunks together), or a :class:`Jagged`.

    Returns
    -------
    LengthStats
        Rows, null rows, empty rows, total and null values, and min/p50/p90/p99/max
        length of the non-null rows (nearest-rank percentiles, exact).

    Raises
    ------
    TypeError
        Not a list column.

    See Also
    --------
    pad_or_truncate : Choose a fixed length from ``p90`` or ``p99``.

    Notes
    -----
    On the device (a Jagged on the device): one synchronisation, the statistics read
    back together.

    Examples
    --------
    >>> asp.length_stats(pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6], []]))
    LengthStats(rows=5, null_rows=1, empty_rows=1, total_values=9, null_values=0,
                min=0, p50=2, p90=4, p99=4, max=4)
    """
    func = "length_stats"
    if isinstance(values, Jagged) and values.device != "cpu":
        return _length_stats_device(func, values)
    if isinstance(values, pa.ChunkedArray):
        parts = list(values.chunks)
    elif isinstance(values, (pa.Array, Jagged)):
        parts = [values]
    else:
        raise _not_a_column(func, "values", values,
                            "an Arrow list array, a ChunkedArray or a Jagged")
    rows = null_values = 0
    kept = []
    for part in parts:
        if isinstance(part, Jagged):
            offsets, validity = part.offsets, part.validity
            child_valid = part.values.validity if isinstance(part.values, Jagged) \
                else part.values_validity
        else:
            if not _arrow.is_list_type(part.type):
                raise _not_a_column(func, "values", part, "an Arrow list array or a Jagged")
            if isinstance(part.type, _arrow.LIST_VIEW_TYPES):
                part = _arrow.list_view_to_list(part)
            offsets, validity = _arrow.offsets_view(part), _arrow.validity_of(part)
            child_valid = _arrow.validity_of(part.values)
        lengths = np.diff(offsets).astype(np.int64)
        if validity is not None:
            lengths = lengths[validity]
        if child_valid is not None:
            present = _kernel("kept_lengths")(offsets, validity, child_valid)
            null_values += int(lengths.sum()) - int(present.sum())
        rows += len(offsets) - 1
        kept.append(lengths)
    lengths = np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)
    n = len(lengths)
    quantiles: list[int | None] = [None] * 5
    if n:
        ranks = _ranks(n)
        part_sorted = np.partition(lengths, sorted(set(ranks)))
        quantiles = [int(part_sorted[r]) for r in ranks]
    return LengthStats(rows=rows, null_rows=rows - n,
                       empty_rows=int(np.count_nonzero(lengths == 0)),
                       total_values=int(lengths.sum()), null_values=null_values,
                       min=quantiles[0], p50=quantiles[1], p90=quantiles[2], p99=quantiles[3],
                       max=quantiles[4])


def _ranks(n: Any) -> Any:
    """Sorted positions of min, p50, p90, p99 and max among ``n >= 1`` lengths.

    Nearest rank: the ``q`` percentile is at ``ceil(q * n / 100) - 1``, which is
    ``(q * n - 1) // 100`` (and 0 for ``q = 0``). ``n`` is an int (a list of ints
    back), or a device scalar (a device array back).
    """
    if isinstance(n, (int, np.integer)):
        return [(q * n + c) // 100 for q, c in zip(*_RANK_TERMS, strict=True)]
    terms = module_of(n).asarray(np.array(_RANK_TERMS))
    return (terms[0] * n + terms[1]) // 100


#: The percents of min, p50, p90, p99 and max, and the terms that make their ranks.
_RANK_TERMS = ((0, 50, 90, 99, 100), (0, -1, -1, -1, -1))


def _int64(x: Any) -> Any:
    return x if x.dtype == np.int64 else x.astype(np.int64)


def _length_stats_device(func: str, j: Jagged) -> LengthStats:
    """:func:`length_stats` of a Jagged on the device: one read-back of a few numbers."""
    xp = j.xp
    offsets, validity = j.offsets, j.validity
    rows = len(offsets) - 1
    child_valid = j.values.validity if isinstance(j.values, Jagged) else j.values_validity
    lengths = xp.diff(offsets)
    kept, keys, n = lengths, lengths, rows
    if validity is not None:
        kept = xp.where(validity, lengths, 0)
        keys = xp.where(validity, lengths, np.iinfo(lengths.dtype).max)  # nulls sort last
        n = validity.sum()
    sums = [kept.sum(), (kept == 0).sum()]
    if child_valid is not None:
        sums.append(_kernel("kept_lengths", xp)(offsets, validity, child_valid).sum())
    if validity is not None:
        sums.append(n)
    picked = xp.sort(keys)[xp.asarray(_ranks(n))] if rows else xp.zeros(5, np.int64)
    numbers = read_back(func, xp.concatenate([_int64(xp.stack(sums)), _int64(picked)]))
    numbers = numbers.tolist()
    total, zeros = numbers[0], numbers[1]
    present = numbers[2] if child_valid is not None else total
    n = numbers[len(sums) - 1] if validity is not None else rows
    quantiles = numbers[len(sums):] if n else [None] * 5
    return LengthStats(rows=rows, null_rows=rows - n, empty_rows=zeros - (rows - n),
                       total_values=total, null_values=total - present, min=quantiles[0],
                       p50=quantiles[1], p90=quantiles[2], p99=quantiles[3],
                       max=quantiles[4])
