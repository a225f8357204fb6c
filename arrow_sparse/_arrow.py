"""Zero-copy views between Arrow arrays and numpy arrays.

Offsets and values buffers are wrapped with ``np.frombuffer`` (reading) and
``pa.py_buffer`` (writing back), so no bytes move. Validity bitmaps are unpacked to
one byte per row (a copy of ``rows / 8`` bytes) because every kernel wants a byte
mask; boolean values are unpacked the same way.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

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


def list_view_to_list(arr: pa.Array) -> pa.Array:
    """Copy a ``list_view``/``large_list_view`` array into a ``list``/``large_list`` one.

    Rows of a list view may overlap or come in any order, so the values are gathered
    (one copy). Done here rather than by ``cast``, which builds a short offsets buffer
    in some pyarrow releases.
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
