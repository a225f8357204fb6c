"""Arrow in and out: the one way list data enters the kernels, and zero-copy numpy views.

Every public function that takes list data reads it here: :func:`as_arrow` turns an
object that exports the Arrow C data interface (a Polars or pandas Series, a DuckDB
relation, a nanoarrow array: ``__arrow_c_array__`` / ``__arrow_c_stream__``) into a
pyarrow array, :func:`as_one_array` joins the chunks of a ChunkedArray where an
operation needs one array, and :func:`list_level` unpacks one level of a list array
into checked buffers: its offsets are validated (non-negative, non-decreasing, within
the child) before any kernel reads through them, whatever wrote the array (pyarrow's
``Array.from_buffers`` accepts offsets that go backwards).

Offsets and values buffers are wrapped with ``np.frombuffer`` (reading) and
``pa.py_buffer`` (writing back), so no bytes move. Validity bitmaps are unpacked to
one byte per row (a copy of ``rows / 8`` bytes) because every kernel wants a byte
mask; boolean values are unpacked the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from . import _validate as v
from .errors import ArrowSparseTypeError, ArrowSparseValueError

LIST_TYPES = (pa.ListType, pa.LargeListType)
LIST_VIEW_TYPES = (pa.ListViewType, pa.LargeListViewType)


#: numpy dtype of each primitive Arrow type arrow_sparse reads. ``DataType.to_pandas_dtype``
#: is not used: before pyarrow 26 it imports pandas.
_NUMPY_DTYPES = {t: np.dtype(d) for t, d in [
    (pa.bool_(), np.bool_), (pa.int8(), np.int8), (pa.int16(), np.int16),
    (pa.int32(), np.int32), (pa.int64(), np.int64), (pa.uint8(), np.uint8),
    (pa.uint16(), np.uint16), (pa.uint32(), np.uint32), (pa.uint64(), np.uint64),
    (pa.float16(), np.float16), (pa.float32(), np.float32), (pa.float64(), np.float64)]}


def numpy_dtype(t: pa.DataType) -> np.dtype:
    """Return the numpy dtype of a boolean, integer or floating-point Arrow type.

    Raises
    ------
    TypeError
        Any other Arrow type (callers check the type first and name themselves).
    """
    try:
        return _NUMPY_DTYPES[t]
    except KeyError:
        msg = f"Arrow type {t} has no numeric numpy dtype"
        raise ArrowSparseTypeError(msg) from None


def is_list_type(t: pa.DataType) -> bool:
    """Whether ``t`` is a variable-size list type (list, large_list or a list view)."""
    return isinstance(t, LIST_TYPES + LIST_VIEW_TYPES)


def validity_of(arr: pa.Array) -> np.ndarray | None:
    """Row validity as a bool array, or None when the array has no nulls."""
    if arr.null_count == 0:
        return None
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), dtype=bool)
    bitmap = arr.buffers()[0]
    first_byte = arr.offset // 8
    last_byte = (arr.offset + len(arr) + 7) // 8
    bits = np.frombuffer(bitmap, dtype=np.uint8)[first_byte:last_byte]
    start = arr.offset - 8 * first_byte
    return np.unpackbits(bits, bitorder="little")[start:start + len(arr)].view(bool)


def as_arrow(x: Any) -> Any:
    """Read an object exporting the Arrow C data interface as a pyarrow array.

    ``__arrow_c_array__`` gives an Array, ``__arrow_c_stream__`` a ChunkedArray (zero-copy
    either way; a stream of one-column record batches, as a DuckDB relation gives, is
    read as that column). pyarrow objects and everything else (numpy and CuPy arrays,
    a Jagged, sequences) are returned as they are.
    """
    if isinstance(x, (pa.Array, pa.ChunkedArray, pa.RecordBatch, pa.Table)) \
            or isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__arrow_c_array__"):
        return pa.array(x)
    if hasattr(x, "__arrow_c_stream__"):
        chunked = pa.chunked_array(x)
        if pa.types.is_struct(chunked.type) and chunked.type.num_fields == 1:
            return pa.chunked_array([chunk.field(0) for chunk in chunked.chunks],
                                    type=chunked.type.field(0).type)
        return chunked
    return x


def like_series(x: Any) -> Callable[[Any], Any]:
    """Return a function giving an Arrow result back in ``x``'s kind of Series.

    A Polars Series gives a Polars Series of the same name; a pandas Series a pandas
    Series (``pd.ArrowDtype``, zero-copy) of the same name, with its index when the
    result has one value per row of ``x``. Anything else, and results that are not
    Arrow arrays, pass through. Neither library is imported: a Series of one can
    only exist once it is loaded.

    Examples
    --------
    >>> like_series(pa.array([1]))(pa.array([2])).to_pylist()
    [2]
    """
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(x, pl.Series):
        name = x.name

        def to_polars(out: Any) -> Any:
            if not isinstance(out, (pa.Array, pa.ChunkedArray)):
                return out
            return pl.from_arrow(out, rechunk=False).alias(name)

        return to_polars
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(x, pd.Series):
        index, name = x.index, x.name

        def to_pandas(out: Any) -> Any:
            if not isinstance(out, (pa.Array, pa.ChunkedArray)):
                return out
            return pd.Series(pd.arrays.ArrowExtensionArray(out), name=name, copy=False,
                             index=index if len(out) == len(index) else None)

        return to_pandas
    return _unchanged


def _unchanged(out: Any) -> Any:
    return out


def as_one_array(x: pa.ChunkedArray) -> pa.Array:
    """Return a ChunkedArray as one Array: its only chunk as it is (zero-copy), else joined."""
    if x.num_chunks == 1:
        return x.chunk(0)
    if x.num_chunks == 0:
        return pa.array([], type=x.type)
    return pa.concat_arrays(x.chunks)


class ListLevel(NamedTuple):
    """One checked level of an Arrow list array (see :func:`list_level`)."""

    #: The array as a ``list``/``large_list`` (a list view is converted: one copy).
    array: pa.Array
    #: ``len(array) + 1`` offsets into ``child``, a view honouring the slice offset.
    offsets: np.ndarray
    #: Row validity as bools, or None when there are no null rows.
    validity: np.ndarray | None
    #: The whole child array (the offsets index into it; its own slice is not applied).
    child: pa.Array


def list_level(func: str, arg: str, array: pa.Array) -> ListLevel:
    """Unpack one level of a list, large_list, list view or map array into checked buffers.

    The offsets must be non-negative, non-decreasing and within the child (the Arrow
    invariant, which pyarrow does not check when an array is built from buffers); a
    malformed array raises ``ValueError`` naming ``func``, ``arg`` and the first bad
    position, before anything reads through the offsets. Costs one pass over the
    offsets; the values are not touched.
    """
    if isinstance(array.type, LIST_VIEW_TYPES):
        array = list_view_to_list(array, func, arg)
    if not isinstance(array.type, (*LIST_TYPES, pa.MapType)):  # a map is a list of structs
        msg = f"{func}: {arg} must be an Arrow list array, got {array.type}"
        raise ArrowSparseTypeError(msg)
    child = array.values
    offsets = v.check_offsets(func, f"{arg} offsets", offsets_view(array), len(child))
    validity = validity_of(array)
    return ListLevel(array, offsets, validity, child)


def check_nested(func: str, arg: str, array: pa.Array) -> None:
    """Check the offsets of every level of a nested array (lists, maps, structs, strings).

    For writers (Parquet, IPC) that read every buffer of a column: a list or string
    whose offsets go backwards makes pyarrow's Parquet writer read outside the buffers.
    Raises ``ValueError`` naming ``arg`` (``"column 'ids'"``) and the first bad position.
    """
    t = array.type
    if isinstance(t, (*LIST_TYPES, *LIST_VIEW_TYPES, pa.MapType)):
        level = list_level(func, arg, array)
        check_nested(func, f"{arg} values", level.child)
    elif isinstance(t, pa.FixedSizeListType):
        check_nested(func, f"{arg} values", array.values)
    elif isinstance(t, pa.StructType):
        for i in range(t.num_fields):
            check_nested(func, f"{arg} field {t.field(i).name!r}", array.field(i))
    elif is_binary_type(t):
        binary_buffers(func, arg, array)


def is_binary_type(t: pa.DataType) -> bool:
    """Whether ``t`` is string, binary or their large variants (offsets into a data buffer)."""
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t)
                or pa.types.is_binary(t) or pa.types.is_large_binary(t))


def binary_buffers(func: str, arg: str, array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Return the checked offsets (``len + 1``, a view) and the data bytes of a string array.

    The offsets must be non-negative, non-decreasing and within the data buffer, as for
    :func:`list_level`.
    """
    large = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    dtype = np.int64 if large else np.int32
    n = len(array)
    buffers = array.buffers()
    offsets = np.zeros(n + 1, dtype=dtype) if buffers[1] is None else \
        np.frombuffer(buffers[1], dtype=dtype, count=array.offset + n + 1)[array.offset:]
    data = np.zeros(0, dtype=np.uint8) if buffers[2] is None else \
        np.frombuffer(buffers[2], dtype=np.uint8)
    return v.check_offsets(func, f"{arg} offsets", offsets, len(data)), data


def validity_buffer(validity: np.ndarray | None) -> pa.Buffer | None:
    """Pack a bool row mask into an Arrow validity bitmap (None when there is no mask)."""
    if validity is None:
        return None
    return pa.py_buffer(np.packbits(validity.astype(bool, copy=False), bitorder="little"))


def primitive_values(func: str, arr: pa.Array) -> np.ndarray:
    """Numpy view of a primitive Arrow array's data buffer (bools are unpacked: a copy)."""
    t = arr.type
    if pa.types.is_boolean(t):
        return np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_null(t):
        return np.zeros(len(arr), dtype=np.float64)
    if not (pa.types.is_integer(t) or pa.types.is_floating(t)):
        msg = (f"{func}: list values of Arrow type {t} are not supported; "
               "values must be integers, floats, booleans or nested lists")
        raise ArrowSparseTypeError(msg)
    dtype = numpy_dtype(t)
    data = arr.buffers()[1]
    if data is None:
        return np.empty(0, dtype=dtype)
    # An empty array may carry a buffer shorter than one element: read only what is used.
    return np.frombuffer(data, dtype=dtype, count=arr.offset + len(arr))[arr.offset:]


def offsets_view(arr: pa.Array) -> np.ndarray:
    """Numpy view of a list array's offsets, ``len(arr) + 1`` long, honouring its slice offset."""
    dtype = np.int64 if isinstance(arr.type, (pa.LargeListType,)) else np.int32
    buf = arr.buffers()[1]
    if buf is None or buf.size == 0:
        return np.zeros(len(arr) + 1, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=arr.offset + len(arr) + 1)[arr.offset:]


def list_view_to_list(arr: pa.Array, func: str = "list_view_to_list",
                      arg: str = "array") -> pa.Array:
    """Copy a ``list_view``/``large_list_view`` array into a ``list``/``large_list`` one.

    Rows of a list view may overlap or come in any order, so the values are gathered
    (one copy). Done here rather than by ``cast``, which builds a short offsets buffer
    in some pyarrow releases. Every row's range (null rows too, as Arrow requires) must
    lie inside the child: a negative start or size, or a range past the child's end,
    raises a ValueError naming ``func``, ``arg`` and the first bad row.
    """
    large = isinstance(arr.type, pa.LargeListViewType)
    dtype = np.int64 if large else np.int32
    n = len(arr)
    buffers = arr.buffers()
    if n == 0 or buffers[1] is None:
        starts = sizes = np.zeros(n, dtype=dtype)
    else:
        starts = np.frombuffer(buffers[1], dtype=dtype)[arr.offset:arr.offset + n]
        sizes = np.frombuffer(buffers[2], dtype=dtype)[arr.offset:arr.offset + n]
    _check_view_ranges(func, arg, starts, sizes, len(arr.values))
    valid = validity_of(arr)
    if valid is not None:
        sizes = np.where(valid, sizes, 0)
    offsets = np.zeros(n + 1, dtype=dtype)
    np.cumsum(sizes, out=offsets[1:])
    rows = np.repeat(np.arange(n), sizes)
    gather = starts[rows].astype(np.int64) + np.arange(offsets[-1]) - offsets[rows]
    values = arr.values.take(pa.array(gather, type=pa.int64()))
    cls = pa.LargeListArray if large else pa.ListArray
    mask = None if valid is None else pa.array(~valid)
    return cls.from_arrays(pa.array(offsets), values, mask=mask)


def _check_view_ranges(func: str, arg: str, starts: np.ndarray, sizes: np.ndarray,
                       num_values: int) -> None:
    """Check a list view's ranges ``[starts[i], starts[i] + sizes[i])`` against the child."""
    for name, part in (("offsets", starts), ("sizes", sizes)):
        if len(part) and part.min() < 0:
            pos = int(np.argmax(part < 0))
            v.fail_value(func, f"{arg} {name}", "must be non-negative", pos, part[pos])
    ends = starts.astype(np.int64) + sizes.astype(np.int64)
    if len(ends) and ends.max() > num_values:
        pos = int(np.argmax(ends > num_values))
        v.fail_value(func, f"{arg} offsets + sizes", f"exceed the number of values {num_values}",
                     pos, ends[pos])


def fixed_size_values(func: str, arr: pa.FixedSizeListArray) -> np.ndarray:
    """``fixed_size_list<T>[D]`` as a ``[len, D]`` numpy view (nested ones add axes)."""
    size = arr.type.list_size
    child = arr.values  # the whole child: it ignores arr.offset
    begin, end = arr.offset * size, (arr.offset + len(arr)) * size
    if child.null_count:
        child_valid = validity_of(child)
        assert child_valid is not None
        inside = child_valid[begin:end].reshape(len(arr), size)
        rows_valid = validity_of(arr)
        if rows_valid is not None:
            inside = inside | ~rows_valid[:, None]
        bad = ~inside.all(axis=1)
        if bad.any():
            pos = int(np.argmax(bad))
            msg = (f"{func}: values must not hold nulls inside fixed_size_list elements "
                   f"(first at position {pos}: {arr[pos].as_py()}); fill them first "
                   "with pyarrow.compute.fill_null")
            raise ArrowSparseValueError(msg)
    if isinstance(child.type, pa.FixedSizeListType):
        flat = fixed_size_values(func, child)
    else:
        flat = primitive_values(func, child)
    return flat[begin:end].reshape((len(arr), size) + flat.shape[1:])


def arrow_type_of(dtype: np.dtype) -> pa.DataType:
    """Return the Arrow type of a numpy dtype."""
    return pa.from_numpy_dtype(dtype)


def array_from_numpy(values: np.ndarray, validity: np.ndarray | None) -> pa.Array:
    """Wrap a numpy array as an Arrow array without copying (N-D becomes fixed_size_list).

    Non-contiguous values and bools are copied (Arrow packs bools into bits).
    """
    validity_buf = validity_buffer(validity)
    null_count = 0 if validity is None else int(len(validity) - np.count_nonzero(validity))
    if values.ndim > 1:
        inner = np.ascontiguousarray(values).reshape(
            (len(values) * values.shape[1],) + values.shape[2:])
        child = array_from_numpy(inner, None)
        list_type = pa.list_(child.type, values.shape[1])
        return pa.Array.from_buffers(list_type, len(values), [validity_buf], children=[child],
                                     null_count=null_count)
    if values.dtype == bool:
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
    else:
        data = pa.py_buffer(np.ascontiguousarray(values))
    return pa.Array.from_buffers(arrow_type_of(values.dtype), len(values), [validity_buf, data],
                                 null_count=null_count)
