"""Row shape and nulls: ``pad_or_truncate`` to a fixed length, ``drop_nulls``, ``fill_null``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _arrow
from .. import _validate as v
from .._backend import device_checks, get_kernel, module_of
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged
from ._leaf import (
    _arrow_leaf,
    _not_a_column,
    _per_chunk,
)

__all__ = ["drop_nulls", "fill_null", "pad_or_truncate"]


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
    level = _arrow.list_level(func, "values", x)
    x, child = level.array, level.child
    t = child.type
    values: Any = None
    leaf = None
    if _arrow.is_list_type(t):
        msg = f"{func}: nested lists are not supported; pass one level of lists"
        raise ArrowSparseTypeError(msg)
    if isinstance(t, pa.FixedSizeListType):
        values = _arrow.fixed_size_values(func, child)
    elif strings and (_arrow.is_binary_type(t) or pa.types.is_string_view(t)
                      or pa.types.is_binary_view(t)):
        leaf = _arrow_leaf(func, child)[1]
    else:
        lf = _arrow_leaf(func, child)[0]
        if lf.kind == "bytes":
            msg = (f"{func}: values of Arrow type {t} are not supported; encode strings "
                   "first with categorify or hash_bucket")
            raise ArrowSparseTypeError(msg)
        values = lf.values
    return _Col(level.offsets, level.validity, values,
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
    back = _arrow.like_series(x)  # a Polars / pandas Series comes back as one
    x = _arrow.as_arrow(x)
    if isinstance(x, pa.ChunkedArray):
        return back(_per_chunk(func, x, one))
    if isinstance(x, (pa.Array, Jagged)):
        return back(one(x))
    raise _not_a_column(func, "values", x, "an Arrow list array, a ChunkedArray or a Jagged")


def _scalar_of(func: str, arg: str, value: Any, dtype: np.dtype) -> np.generic:
    """``value`` as a scalar of ``dtype``; raise if it does not fit exactly."""
    number = isinstance(value, (int, float, bool, np.number, np.bool_))
    scalar = v.exact_scalar(value, dtype) if number else None
    if scalar is None:
        msg = f"{func}: {arg} {value!r} does not fit the values dtype {dtype}"
        raise ArrowSparseValueError(msg)
    return scalar


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
        get_kernel("transforms", "pad_or_truncate", xp)(
            xp.ascontiguousarray(values2).reshape(len(values2), width), col.offsets, col.validity,
            col.values_validity, length, left, pad, out.reshape(rows, length, width), out_valid)
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
    v.check_nbytes(func, f"the result of length={length:,}", (rows, length), 8)
    positions = np.empty((rows, length, 1), dtype=np.int64)
    get_kernel("transforms", "pad_or_truncate")(
        np.arange(total, dtype=np.int64).reshape(total, 1), col.offsets - start, col.validity,
        None, length, left, np.int64(-1), positions, None)
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
        offsets, positions = get_kernel("transforms", "compact", xp)(
            col.offsets, col.validity, col.values_validity)
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
                offsets, positions = get_kernel("transforms", "compact")(offsets, validity, None)
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
        offsets, positions = get_kernel("transforms", "compact", xp)(offsets, validity, None)
        filled = filled[positions]
        validity = None
    device_checks(func, xp)
    return _list_like(col, offsets, validity, filled)
