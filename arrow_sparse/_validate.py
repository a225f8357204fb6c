"""Input checks shared by every public function.

Each check raises a typed error whose message has the form
``"{func}: {arg} {problem} (first at position {i}: {value})"`` and returns the
normalised array (a numpy view where possible), so callers use the checked object and
nothing else.

Host arrays are checked in full on the host, before any kernel is launched. Device
(CuPy) arrays are accepted only where the caller passes ``device=True`` (its operation
has a device path); elsewhere they raise NotImplementedError with the fix. On device
arrays the O(1) checks (dtype, dimensions, lengths) run on the host, and the
data-dependent ones are launched as device checks (``kernels/cuda/convert.cu``) that
record the first violation in the kernels' error word: the operation raises it with
:func:`arrow_sparse._backend.device_checks` (deferred) or at once where it reads a
device value anyway (:func:`arrow_sparse._backend.fetch`). A device check's message
names the position but not the value: ``"{func}: offsets must be non-decreasing
(first at position 2; found by a device check)"``.
"""

from __future__ import annotations

import functools
import math
import os
from types import ModuleType
from typing import Any, NoReturn

import numpy as np
import pyarrow as pa
from numpy.lib.array_utils import byte_bounds

from ._backend import fetch, get_kernel, host_only, is_cupy_array, module_of
from .errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError

__all__ = [
    "as_index_array",
    "as_values_array",
    "check_bool",
    "check_count",
    "check_dtype",
    "check_nbytes",
    "check_no_overlap",
    "empty",
    "memory_limit",
    "check_mask",
    "check_exactly_one",
    "check_indices",
    "check_int_in",
    "check_lengths",
    "check_offsets",
    "check_segment_ids",
    "check_sorted_segment_ids",
    "first_true",
    "lengths_offsets",
    "message",
    "fail_value",
]

OFFSET_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))

#: Largest size or count accepted: anything above cannot be allocated, and staying
#: far below 2**63 keeps every size computation inside int64.
MAX_COUNT = 1 << 59

_INT64_MAX = int(np.iinfo(np.int64).max)


def first_true(mask: np.ndarray) -> int:
    """Position of the first True of a boolean array (the caller knows one exists)."""
    return int(np.argmax(mask))


def fail_value(func: str, arg: str, problem: str, position: int | None = None,
               value: Any = None) -> NoReturn:
    """Raise an :class:`ArrowSparseValueError` in the project's message form."""
    raise ArrowSparseValueError(message(func, arg, problem, position, value))


def message(func: str, arg: str, problem: str, position: int | None = None,
            value: Any = None) -> str:
    """Build an error message in the project's form."""
    text = f"{func}: {arg} {problem}"
    if position is not None:
        text += f" (first at position {position}: {_scalar(value)})"
    return text


def _scalar(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value



def _to_array(func: str, arg: str, x: Any, device: bool = False) -> np.ndarray:
    """Turn an array-like into a numpy array without copying where possible.

    A CuPy array is returned as it is when ``device`` is set, else refused.
    """
    if isinstance(x, np.ndarray):
        return x
    if type(x).__module__ == "cupy" or is_cupy_array(x):
        if not device:
            host_only(func, f"{arg} is a device (cupy) array")
        return x  # type: ignore[no-any-return]
    if isinstance(x, (pa.Array, pa.ChunkedArray)):
        if x.null_count:
            pos = first_true(np.asarray(x.is_null()))
            fail_value(func, arg, "must not contain nulls", pos, None)
        if not (pa.types.is_integer(x.type) or pa.types.is_floating(x.type)
                or pa.types.is_boolean(x.type)):
            msg = f"{func}: {arg} must be a numeric array, got Arrow type {x.type}"
            raise ArrowSparseTypeError(msg)
        if isinstance(x, pa.ChunkedArray):  # zero-copy for one chunk, else concatenated
            return x.to_numpy()  # type: ignore[no-any-return]
        return x.to_numpy(zero_copy_only=not pa.types.is_boolean(x.type))
    if isinstance(x, (list, tuple, range)) or np.isscalar(x) or hasattr(x, "__array__"):
        try:
            arr = np.asarray(x)
        except (ValueError, TypeError, OverflowError) as exc:
            msg = f"{func}: {arg} could not be read as an array ({exc})"
            raise ArrowSparseTypeError(msg) from None
        if arr.dtype == object:
            msg = f"{func}: {arg} must be a numeric array, got object elements"
            raise ArrowSparseTypeError(msg)
        return arr
    msg = f"{func}: {arg} must be an array (numpy, pyarrow or a sequence), got {type(x).__name__}"
    raise ArrowSparseTypeError(msg)


def as_index_array(func: str, arg: str, x: Any, *, ndim: int = 1,
                   out_of_range: str | None = None, device: bool = False) -> np.ndarray:
    """Return ``x`` as an integer array of ``ndim`` dimensions; reject floats, bools, objects.

    Unsigned integers are widened to int64; a value above the int64 range raises a
    ValueError ("exceeds the int64 range"), or, when ``out_of_range`` is given (the
    argument holds indices, e.g. ``"out of range [0, 8)"``), an IndexError with that
    problem text. On the device (``device=True`` and a CuPy array) such a value wraps
    to a negative int64, which the device checks that follow reject.
    """
    arr = _to_array(func, arg, x, device)
    if arr.dtype.kind not in "iu":
        if arr.size == 0 and arr.dtype.kind == "f" and isinstance(x, (list, tuple)):
            arr = arr.astype(np.int64)  # ``[]`` reads as float64
        else:
            msg = f"{func}: {arg} must have an integer dtype, got {arr.dtype}"
            raise ArrowSparseTypeError(msg)
    if arr.ndim != ndim:
        msg = f"{func}: {arg} must be {ndim}-dimensional, got shape {arr.shape}"
        raise ArrowSparseValueError(msg)
    if arr.dtype.kind == "u":
        if is_cupy_array(arr):
            return arr.astype(np.int64)  # type: ignore[no-any-return]
        if arr.dtype.itemsize == 8 and arr.size and arr.max() > _INT64_MAX:
            flat = arr.ravel()
            pos = first_true(flat > _INT64_MAX)
            if out_of_range is not None:
                raise ArrowSparseIndexError(message(func, arg, out_of_range, pos, flat[pos]))
            fail_value(func, arg, "exceeds the int64 range", pos, flat[pos])
        arr = arr.astype(np.int64)
    return arr


def as_values_array(func: str, arg: str, x: Any, *, min_ndim: int = 1,
                    device: bool = False) -> np.ndarray:
    """Return ``x`` as a numeric (bool, integer or float) array of at least ``min_ndim`` dims.

    ``device``: accept a CuPy array (returned as it is).
    """
    arr = _to_array(func, arg, x, device)
    if arr.dtype.kind not in "biuf":
        msg = f"{func}: {arg} must have a numeric dtype, got {arr.dtype}"
        raise ArrowSparseTypeError(msg)
    if arr.ndim < min_ndim:
        msg = f"{func}: {arg} must be at least {min_ndim}-dimensional, got shape {arr.shape}"
        raise ArrowSparseValueError(msg)
    return arr


def check_offsets(func: str, arg: str, x: Any, num_values: int | None = None, *,
                  device: bool = False) -> np.ndarray:
    """Check offsets: 1-D integers, at least one element, non-negative, non-decreasing.

    When ``num_values`` is given the last offset must not exceed it. ``offsets[0]``
    may be above zero (a sliced Arrow array). int32 and int64 offsets are kept as
    they are; other integer dtypes are widened to int64. ``device``: accept CuPy
    offsets, whose values are checked on the device (see the module docstring).
    """
    offsets = as_index_array(func, arg, x, device=device)
    if offsets.dtype not in OFFSET_DTYPES:
        offsets = offsets.astype(np.int64)
    if len(offsets) == 0:
        msg = f"{func}: {arg} must have at least one element (number of rows + 1)"
        raise ArrowSparseValueError(msg)
    if is_cupy_array(offsets):
        get_kernel("convert", "check_offsets", module_of(offsets))(offsets, num_values)
        return offsets
    if offsets[0] < 0:
        fail_value(func, arg, "must be non-negative", 0, offsets[0])
    decreasing = offsets[1:] < offsets[:-1]
    if decreasing.any():
        pos = first_true(decreasing) + 1
        fail_value(func, arg, "must be non-decreasing", pos, offsets[pos])
    if num_values is not None and offsets[-1] > num_values:
        pos = first_true(offsets > num_values)
        fail_value(func, arg, f"exceed the number of values {num_values}", pos, offsets[pos])
    return offsets


def check_lengths(func: str, arg: str, x: Any, num_values: int | None = None) -> np.ndarray:
    """Check lengths: 1-D non-negative integers summing to ``num_values`` when given."""
    lengths = as_index_array(func, arg, x)
    negative = lengths < 0
    if negative.any():
        pos = first_true(negative)
        fail_value(func, arg, "must be non-negative", pos, lengths[pos])
    if len(lengths) and lengths.sum(dtype=np.float64) > MAX_COUNT:
        msg = f"{func}: {arg} sum to more than 2**59 values"
        raise ArrowSparseValueError(msg)
    if num_values is not None:
        total = int(lengths.sum(dtype=np.int64))
        if total != num_values:
            msg = f"{func}: {arg} sum to {total} but there are {num_values} values"
            raise ArrowSparseValueError(msg)
    return lengths


def lengths_offsets(func: str, arg: str, x: Any, *, num_values: int | None = None,
                    padded_length: int | None = None, dtype: Any = np.int64,
                    device: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Check lengths and return them with their offsets ``[0, l0, l0 + l1, ...]``.

    The lengths must be non-negative, at most ``padded_length`` when given, and sum
    to exactly ``num_values`` when given, within 2**59 and within the range of the
    offsets ``dtype`` (int32 or int64). ``device``: accept CuPy lengths, whose values
    are checked on the device (see the module docstring).
    """
    to_int32 = np.dtype(dtype) == np.int32
    if device and is_cupy_array(x):
        lengths = as_index_array(func, arg, x, device=True)
        if len(lengths) == 0 and num_values:
            msg = f"{func}: {arg} sum to 0 but there are {num_values} values"
            raise ArrowSparseValueError(msg)
        ends = module_of(lengths).zeros(len(lengths) + 1, dtype=np.int64)
        module_of(lengths).cumsum(lengths, dtype=np.int64, out=ends[1:])
        get_kernel("convert", "check_lengths", module_of(lengths))(
            lengths, ends, padded_length, to_int32, num_values)
        return lengths, ends.astype(dtype, copy=False)
    lengths = check_lengths(func, arg, x, num_values)
    if padded_length is not None and len(lengths) and lengths.max() > padded_length:
        pos = first_true(lengths > padded_length)
        fail_value(func, arg, f"must be <= the padded length {padded_length}", pos, lengths[pos])
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if to_int32 and offsets[-1] > np.iinfo(np.int32).max:
        pos = first_true(offsets > np.iinfo(np.int32).max) - 1
        fail_value(func, arg, "sum beyond the int32 range; use dtype=np.int64", pos, lengths[pos])
    return lengths, offsets.astype(dtype, copy=False)


def _ids_problem(num_segments: Any) -> str | None:
    """Return the IndexError problem text for a segment id above int64 when ``num_segments`` is set.

    Without ``num_segments`` such an id is a ValueError, like any id too large to
    size the output.
    """
    if isinstance(num_segments, (int, np.integer)) and not isinstance(num_segments, bool):
        return f"must be < num_segments={num_segments}"
    return None


def check_segment_ids(func: str, arg: str, x: Any, num_values: int | None = None,
                      num_segments: int | None = None, *, device: bool = False
                      ) -> tuple[np.ndarray, int]:
    """Check unsorted segment ids; return them and ``num_segments`` (default ``max + 1``).

    ``device``: accept CuPy ids, checked on the device; without ``num_segments`` the
    maximum is read back (a synchronisation), which raises the device checks at once.
    """
    ids = as_index_array(func, arg, x, out_of_range=_ids_problem(num_segments), device=device)
    if num_values is not None and len(ids) != num_values:
        msg = f"{func}: {arg} has length {len(ids)} but there are {num_values} values"
        raise ArrowSparseValueError(msg)
    if is_cupy_array(ids):
        return _device_segment_ids(func, arg, ids, num_segments, sorted_ids=False)
    negative = ids < 0
    if negative.any():
        pos = first_true(negative)
        msg = message(func, arg, "must be non-negative", pos, ids[pos])
        raise ArrowSparseIndexError(msg)
    if num_segments is None:
        num_segments = check_count(func, f"max({arg}) + 1", int(ids.max()) + 1 if len(ids) else 0)
        check_nbytes(func, f"max({arg}) + 1 = {num_segments:,} segments", num_segments + 1, 8)
    else:
        num_segments = check_count(func, "num_segments", num_segments)
        check_nbytes(func, f"num_segments={num_segments:,}", num_segments + 1, 8)
        too_big = ids >= num_segments
        if too_big.any():
            pos = first_true(too_big)
            msg = message(func, arg, f"must be < num_segments={num_segments}", pos, ids[pos])
            raise ArrowSparseIndexError(msg)
    return ids, num_segments


def check_sorted_segment_ids(func: str, arg: str, x: Any, num_values: int | None = None,
                             num_segments: int | None = None, *, device: bool = False
                             ) -> tuple[np.ndarray, int]:
    """Check sorted segment ids (non-decreasing); return them and ``num_segments``.

    ``device``: as for :func:`check_segment_ids` (the maximum read is the last id).
    """
    ids = as_index_array(func, arg, x, out_of_range=_ids_problem(num_segments), device=device)
    if is_cupy_array(ids):
        if num_values is not None and len(ids) != num_values:
            msg = f"{func}: {arg} has length {len(ids)} but there are {num_values} values"
            raise ArrowSparseValueError(msg)
        return _device_segment_ids(func, arg, ids, num_segments, sorted_ids=True)
    unsorted = ids[1:] < ids[:-1]
    if unsorted.any():
        pos = first_true(unsorted) + 1
        fail_value(func, arg, "must be sorted (non-decreasing)", pos, ids[pos])
    return check_segment_ids(func, arg, ids, num_values, num_segments)


def _device_segment_ids(func: str, arg: str, ids: Any, num_segments: int | None,
                        sorted_ids: bool) -> tuple[Any, int]:
    """Launch the device check of segment ids; read the maximum when it sizes the output."""
    if num_segments is not None:
        num_segments = check_count(func, "num_segments", num_segments)
        check_nbytes(func, f"num_segments={num_segments:,}", num_segments + 1, 8)
    get_kernel("convert", "check_segment_ids", module_of(ids))(ids, num_segments, sorted_ids)
    if num_segments is None:
        top = fetch(func, (ids[-1] if sorted_ids else ids.max()) if len(ids) else -1)[0]
        num_segments = check_count(func, f"max({arg}) + 1", top + 1)
        check_nbytes(func, f"max({arg}) + 1 = {num_segments:,} segments", num_segments + 1, 8)
    return ids, num_segments


def check_indices(func: str, arg: str, x: Any, bound: int, *, ndim: int = 1) -> np.ndarray:
    """Check that every index lies in ``[0, bound)``; raise IndexError otherwise."""
    idx = as_index_array(func, arg, x, ndim=ndim, out_of_range=f"out of range [0, {bound})")
    bad = (idx < 0) | (idx >= bound)
    if bad.any():
        pos = first_true(bad.ravel())
        msg = message(func, arg, f"out of range [0, {bound})", pos, idx.ravel()[pos])
        raise ArrowSparseIndexError(msg)
    return idx


def exact_scalar(value: Any, dtype: np.dtype) -> np.generic | None:
    """``value`` as a scalar of ``dtype``, or None when the cast would change it.

    A fill or empty value must survive the cast: ``300`` does not fit uint8 and ``0.5``
    does not fit int64; NaN fits any float dtype. Callers raise with their own
    argument's name.
    """
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            scalar = np.array(value).astype(dtype)[()]
            exact = bool(scalar == value) or bool(np.isnan(scalar) and np.isnan(value))
    except (TypeError, ValueError, OverflowError):
        return None
    return scalar if exact else None  # type: ignore[no-any-return]


def check_count(func: str, arg: str, x: Any) -> int:
    """Check a non-negative integer scalar (a size or a count)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        msg = f"{func}: {arg} must be an integer, got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    if x < 0:
        msg = f"{func}: {arg} must be non-negative, got {x}"
        raise ArrowSparseValueError(msg)
    if x > MAX_COUNT:
        msg = f"{func}: {arg} must be at most 2**59, got {x}"
        raise ArrowSparseValueError(msg)
    return int(x)


def check_positive_count(func: str, arg: str, x: Any) -> int:
    """Check a positive integer scalar (a size that must not be 0)."""
    n = check_count(func, arg, x)
    if n == 0:
        msg = f"{func}: {arg} must be positive, got 0"
        raise ArrowSparseValueError(msg)
    return n


def check_int_in(func: str, arg: str, x: Any, lo: int, hi: int) -> int:
    """Check an integer scalar in ``[lo, hi]`` (a parameter such as a bucket count or seed)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        msg = f"{func}: {arg} must be an integer, got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    if not lo <= int(x) <= hi:
        msg = f"{func}: {arg} must be in [{lo}, {hi}], got {x}"
        raise ArrowSparseValueError(msg)
    return int(x)


def check_bool(func: str, arg: str, x: Any) -> bool:
    """Check a boolean flag."""
    if not isinstance(x, (bool, np.bool_)):
        msg = f"{func}: {arg} must be True or False, got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    return bool(x)


def check_mask(func: str, arg: str, x: Any, length: int, *,
               device: bool = False) -> np.ndarray | None:
    """Check an optional bool mask of ``length`` entries (None passes through).

    ``device``: accept a CuPy mask (O(1) checks only: there is nothing data-dependent).
    """
    if x is None:
        return None
    mask = _to_array(func, arg, x, device)
    if mask.dtype != bool:
        msg = f"{func}: {arg} must be a bool mask, got dtype {mask.dtype}"
        raise ArrowSparseTypeError(msg)
    if mask.shape != (length,):
        msg = f"{func}: {arg} has shape {mask.shape} but {length} entries are needed"
        raise ArrowSparseValueError(msg)
    return mask


def check_dtype(func: str, arg: str, x: Any, kinds: str = "biuf") -> np.dtype:
    """Parse a numpy dtype whose kind is one of ``kinds`` (b: bool, i/u: integer, f: float)."""
    if isinstance(x, (np.ndarray, pa.Array, list, tuple, range)):
        msg = f"{func}: {arg} must be a dtype, got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    try:
        dtype = np.dtype(x)
    except (TypeError, ValueError):
        msg = f"{func}: {arg} must be a dtype, got {x!r}"
        raise ArrowSparseTypeError(msg) from None
    if dtype.kind not in kinds:
        msg = f"{func}: {arg} must be {_KIND_NAMES.get(kinds, 'a numeric dtype')}, got {dtype}"
        raise ArrowSparseTypeError(msg)
    return dtype


_KIND_NAMES = {"iu": "an integer dtype", "f": "a floating-point dtype"}


@functools.cache
def memory_limit() -> int:
    """Return the most bytes this process could hold: the bound of every result size.

    The smallest of the machine's physical memory, the memory limit of the control
    group (container) the process runs in, and the address-space limit
    (``ulimit -v``); 2**40 bytes where none of them can be read. A result larger
    than this can never be computed here, so it is refused at once with a
    ValueError (:func:`check_nbytes`) instead of a MemoryError, or a machine that
    swaps, after the work before it.

    Examples
    --------
    >>> memory_limit() > 2**20
    True
    """
    limits = []
    try:
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            limits.append(int(text))
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            limits.append(soft)
    except (ImportError, OSError, ValueError):
        pass
    positive = [n for n in limits if n > 0]
    return min(positive) if positive else 1 << 40


def _bytes_text(n: float) -> str:
    for unit, size in (("EiB", 1 << 60), ("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30),
                       ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} bytes"


def check_nbytes(func: str, what: str, shape: Any, itemsize: int) -> None:
    """Raise a ValueError when an array of ``shape`` x ``itemsize`` bytes exceeds memory.

    ``what`` names the array and where its size comes from (``"the result of
    max_lengths [1099511627776]"``); the message gives its size and the bound
    (:func:`memory_limit`). ``shape`` is a tuple of sizes or one count; the
    product is taken in Python integers, so nothing overflows.

    Examples
    --------
    >>> check_nbytes("pad_or_truncate", "the result of length=2**40", (3, 2**40), 8)
    Traceback (most recent call last):
        ...
    arrow_sparse.errors.ArrowSparseValueError: pad_or_truncate: the result of length=2**40 \
needs 24.0 TiB (shape (3, 1099511627776) x 8 bytes), more than this machine's memory ...
    """
    dims = tuple(int(d) for d in shape) if isinstance(shape, (tuple, list)) else (int(shape),)
    nbytes = math.prod(dims) * int(itemsize)
    limit = memory_limit()
    if nbytes > limit:
        shown = f"shape {dims}" if len(dims) > 1 else f"{dims[0]:,} elements"
        msg = (f"{func}: {what} needs {_bytes_text(nbytes)} ({shown} x {itemsize} bytes), "
               f"more than this machine's memory ({_bytes_text(limit)})")
        raise ArrowSparseValueError(msg)


def empty(func: str, shape: tuple[int, ...], dtype: np.dtype,
          xp: ModuleType = np) -> np.ndarray:
    """``xp.empty`` that refuses a result larger than memory with a ValueError of ``func``."""
    check_nbytes(func, "the result", shape, np.dtype(dtype).itemsize)
    try:
        return xp.empty(shape, dtype=dtype)  # type: ignore[no-any-return]
    except ValueError:
        msg = f"{func}: the result of shape {shape} is too large to allocate"
        raise ArrowSparseValueError(msg) from None


_READ_WHILE_WRITTEN = ("it would be read after parts of it were overwritten; pass arrays "
                       "that do not overlap (e.g. a copy)")


def check_no_overlap(func: str, out_arg: str, out: Any, *, why: str = _READ_WHILE_WRITTEN,
                     **inputs: Any) -> None:
    """Raise a ValueError when ``out`` (written in place) shares memory with an input.

    Writing a result over memory the operation still reads gives wrong numbers
    silently (``lookup(table, ids, out=table[:2])`` read rows it had already
    overwritten). Each input may be a numpy or CuPy array, an Arrow array or
    ChunkedArray (its buffers), an object holding arrays (a Jagged's ``values``,
    ``offsets``, ``validity``; a SparseGrad's ``rows`` and ``values``), or a list or
    tuple of those (named ``name[i]``); anything else is skipped. Host arrays are
    compared exactly (``numpy.shares_memory``: a block of columns does not overlap
    the next block), falling back to their byte bounds when that is too costly;
    CuPy arrays by their data pointers and extents (``cupy.may_share_memory``); a
    host and a device array never overlap. ``why`` ends the message.

    Examples
    --------
    >>> table = np.arange(6.0).reshape(3, 2)
    >>> check_no_overlap("lookup", "out", table[:2], table=table, ids=[1, 0])
    Traceback (most recent call last):
        ...
    arrow_sparse.errors.ArrowSparseValueError: lookup: out and table share memory; it would \
be read after parts of it were overwritten; pass arrays that do not overlap (e.g. a copy)
    >>> wide = np.zeros((3, 4))
    >>> check_no_overlap("lookup", "out", wide[:, :2], table=wide[:, 2:])  # disjoint blocks
    """
    if out is None or getattr(out, "size", 1) == 0:  # nothing is written
        return
    for name, value in inputs.items():
        for label, part in _memory_parts(name, value, 0):
            if part is out or _overlap(out, part):
                msg = f"{func}: {out_arg} and {label} share memory; {why}"
                raise ArrowSparseValueError(msg)


def _memory_parts(name: str, x: Any, depth: int) -> list[tuple[str, Any]]:
    """Return the arrays and Arrow buffers of an input, each with the name to report."""
    if x is None or depth > 4 or isinstance(x, (str, bytes, int, float, bool, np.generic)):
        return []
    if isinstance(x, np.ndarray) or is_cupy_array(x):
        return [(name, x)]
    if isinstance(x, pa.ChunkedArray):
        return [(name, b) for chunk in x.chunks for b in chunk.buffers() if b is not None]
    if isinstance(x, pa.Array):
        return [(name, b) for b in x.buffers() if b is not None]
    if isinstance(x, (list, tuple)):
        return [p for i, item in enumerate(x) for p in _memory_parts(f"{name}[{i}]", item,
                                                                       depth + 1)]
    parts = []
    for attr in ("values", "offsets", "validity", "values_validity", "rows"):
        try:
            inner = getattr(x, attr, None)
        except Exception:  # noqa: BLE001 - a property that cannot answer holds no array
            continue
        if inner is not None and not callable(inner):
            parts += _memory_parts(f"{name}.{attr}", inner, depth + 1)
    return parts


def _overlap(out: Any, other: Any) -> bool:
    if isinstance(out, np.ndarray):
        if isinstance(other, np.ndarray):
            if not np.may_share_memory(out, other):
                return False
            try:
                return bool(np.shares_memory(out, other, max_work=100_000))
            except np.exceptions.TooHardError:
                return True
        if isinstance(other, pa.Buffer):
            if out.size == 0 or other.size == 0:
                return False
            lo, hi = byte_bounds(out)
            return lo < other.address + other.size and other.address < hi
        return False
    if is_cupy_array(out) and is_cupy_array(other) and module_of(out) is module_of(other):
        return bool(module_of(out).may_share_memory(out, other))
    return False


def check_exactly_one(func: str, **kwargs: Any) -> str:
    """Check that exactly one keyword is not None; return its name."""
    given = [name for name, value in kwargs.items() if value is not None]
    if len(given) != 1:
        names = ", ".join(f"{name}=" for name in kwargs)
        got = ", ".join(f"{name}=" for name in given) or "none"
        msg = f"{func}: pass exactly one of {names} (got {got})"
        raise ArrowSparseValueError(msg)
    return given[0]


# ---- sparse tensors
# The argument checks of the sparse formats (arrow_sparse.sparse): shapes, axes, index
# and value buffers, the coordinates they hold, and dense operands. Host and CuPy
# buffers are accepted (the formats run on either); data checks of CuPy buffers are
# launched as device checks, as for offsets above.

__all__ += ["INDEX_DTYPES", "as_dense_operand", "as_sparse_indices", "as_sparse_values",
            "check_axis", "check_axis_order", "check_in_range", "check_index_list",
            "check_length", "check_operand_shape", "check_shape"]

#: The index dtypes a sparse tensor stores as given (others are widened to int64).
INDEX_DTYPES = OFFSET_DTYPES


def check_shape(func: str, shape: Any, ndim: int | None = None) -> tuple[int, ...]:
    """Check a shape: a sequence of non-negative ints (``ndim`` of them when given)."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        msg = f"{func}: shape must be a tuple of ints, got {type(shape).__name__}"
        raise ArrowSparseTypeError(msg)
    dims = tuple(check_count(func, f"shape[{i}]", s) for i, s in enumerate(shape))
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


def check_axis(func: str, axis: Any, ndim: int) -> int:
    """Check an axis in ``[-ndim, ndim)``; return it non-negative."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        msg = f"{func}: axis must be None or an int, got {type(axis).__name__}"
        raise ArrowSparseTypeError(msg)
    if not -ndim <= axis < ndim:
        msg = f"{func}: axis {axis} out of range for {ndim} dimensions"
        raise ArrowSparseIndexError(msg)
    return int(axis) % ndim


def as_sparse_indices(func: str, arg: str, x: Any, *, ndim: int = 1) -> np.ndarray:
    """Return an int32 or int64 index array (other integer dtypes are widened to int64).

    CuPy arrays are accepted and stay on their device.
    """
    arr = as_index_array(func, arg, x, ndim=ndim, device=True)
    if arr.dtype not in INDEX_DTYPES:
        arr = arr.astype(np.int64)
    return arr


def as_sparse_values(func: str, x: Any) -> np.ndarray:
    """Return a 1-D bool, integer, float32 or float64 values array (numpy or CuPy)."""
    arr = as_values_array(func, "values", x, device=True)
    if arr.dtype == np.float16:
        msg = f"{func}: values of dtype float16 are not supported; cast them to float32"
        raise ArrowSparseTypeError(msg)
    if arr.ndim != 1:
        msg = f"{func}: values must be 1-dimensional, got shape {arr.shape}"
        raise ArrowSparseValueError(msg)
    return arr


def check_index_list(func: str, arg: str, x: Any, count: int) -> tuple[np.ndarray, ...]:
    """Check ``count`` index arrays (a list, a tuple or a 2-d array with one row each)."""
    if getattr(x, "ndim", None) == 2 and getattr(x, "dtype", np.dtype(object)).kind in "iu":
        x = [x[k] for k in range(x.shape[0])]  # a 2-d numpy or CuPy array: one row per level
    if not isinstance(x, (list, tuple)):
        msg = f"{func}: {arg} must be a list of {count} index arrays, got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    if len(x) != count:
        msg = f"{func}: {arg} has {len(x)} arrays but the shape needs {count}"
        raise ArrowSparseValueError(msg)
    return tuple(as_sparse_indices(func, f"{arg}[{k}]", a) for k, a in enumerate(x))


def check_in_range(func: str, arg: str, idx: np.ndarray, bound: int, window: Any = None) -> None:
    """IndexError for an index outside ``[0, bound)`` among ``idx[lo:hi]``; positions absolute.

    ``window`` is ``(lo, hi)`` on the host and a 2-element int64 device array on the
    device (pointers are not read there), None for every index. On the device a check
    kernel records the first bad position in the error word, raised by the caller's
    ``device_checks`` (or the next check).
    """
    if is_cupy_array(idx):
        get_kernel("sparse", "check_index_range", module_of(idx))(idx, bound, window)
        return
    lo, hi = (0, len(idx)) if window is None else window
    part = idx[lo:hi]
    bad = (part < 0) | (part >= bound)
    if bad.any():
        pos = first_true(bad)
        msg = (f"{func}: {arg} out of range [0, {bound}) "
               f"(first at position {pos + lo}: {part[pos].item()})")
        raise ArrowSparseIndexError(msg)



def check_length(func: str, arg: str, arr: np.ndarray, length: int, what: str) -> None:
    """Raise ValueError unless ``len(arr) == length``."""
    if len(arr) != length:
        msg = f"{func}: {arg} has {len(arr)} entries but {what} needs {length}"
        raise ArrowSparseValueError(msg)


def as_dense_operand(func: str, arg: str, x: Any) -> np.ndarray:
    """Return a bool, integer, float32 or float64 array of any dimension (numpy or CuPy).

    A Python or numpy scalar becomes a 0-d array; Arrow arrays and sequences are read
    as :func:`as_values_array` reads them.
    """
    arr = np.asarray(x) if np.isscalar(x) else as_values_array(func, arg, x, min_ndim=0,
                                                                device=True)
    if arr.dtype.kind not in "biuf" or arr.dtype == np.float16:
        msg = f"{func}: {arg} must be a bool, integer, float32 or float64 array, got {arr.dtype}"
        raise ArrowSparseTypeError(msg)
    return arr


def check_operand_shape(func: str, dense: np.ndarray, size: int, which: str) -> None:
    """Check a 1-d or 2-d matrix-product operand whose ``which`` dimension must be ``size``.

    ``which`` is ``"first"`` (``matrix @ dense``) or ``"last"`` (``dense @ matrix``).
    """
    if dense.ndim not in (1, 2):
        msg = f"{func}: other must be a 1-d or 2-d dense array, got shape {dense.shape}"
        raise ArrowSparseValueError(msg)
    got = dense.shape[0] if which == "first" else dense.shape[-1]
    if got != size:
        msg = (f"{func}: other has shape {dense.shape} but its {which} dimension must be "
               f"{size} to match the matrix")
        raise ArrowSparseValueError(msg)
