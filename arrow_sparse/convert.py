"""Conversions between jagged representations.

Caffe2's representations of a batch of variable-length features (values with
lengths, offsets or sorted segment ids; padded dense) and FBGEMM's multi-level
jagged <-> padded dense conversions. The examples use Caffe2's batch of three
examples ``[1, 2, 3] [2, 4, 6, 7] [3, 6]``.

The offsets, lengths and segment-id functions answer in the form of their input: numpy
(or a sequence) gives numpy, an Arrow array gives an Arrow array, and a ChunkedArray gives
a ChunkedArray of one chunk (these arrays describe one batch of rows as a whole).

Every function also runs on CuPy arrays (and a :class:`Jagged` on the device), through
the CUDA kernels, and answers with CuPy arrays: see docs/gpu.md ("Dispatch"). Inputs
are checked on the device; each docstring says whether the function synchronises.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from . import _validate as v
from ._arrow import is_list_type
from ._backend import array_module, device_checks, fetch, get_kernel, is_cupy_array, module_of
from .errors import ArrowSparseTypeError, ArrowSparseValueError

__all__ = [
    "dense_to_jagged",
    "jagged_to_padded_dense",
    "lengths_to_offsets",
    "lengths_to_segment_ids",
    "offsets_to_lengths",
    "offsets_to_segment_ids",
    "segment_ids_to_lengths",
    "segment_ids_to_offsets",
]


def _like_input(result: np.ndarray, original: Any) -> Any:
    """Give ``result`` the form of ``original``.

    Arrow in -> Arrow out (zero-copy wrap; a ChunkedArray gives one chunk); else the
    array itself (numpy, or CuPy for device inputs).
    """
    if isinstance(original, pa.ChunkedArray):
        return pa.chunked_array([pa.array(result)])
    if isinstance(original, pa.Array):
        return pa.array(result)
    return result


def _int_dtype(func: str, dtype: Any) -> np.dtype:
    """``dtype`` parsed as an integer dtype."""
    parsed = v.check_dtype(func, "dtype", dtype)
    if parsed.kind not in "iu":
        msg = f"{func}: dtype must be an integer dtype, got {parsed}"
        raise ArrowSparseTypeError(msg)
    return parsed


def lengths_to_offsets(lengths: Any, *, dtype: Any = np.int64) -> Any:
    """Turn row lengths into offsets: ``[0, l0, l0 + l1, ...]`` (``rows + 1`` long).

    Parameters
    ----------
    lengths
        Non-negative integer lengths, one per row (numpy, Arrow, a sequence or CuPy).
    dtype
        Offsets dtype: ``np.int64`` (default, Arrow ``large_list``) or ``np.int32``
        (Arrow ``list``; raises if the total does not fit).

    Returns
    -------
    numpy.ndarray, cupy.ndarray, pyarrow.Array or pyarrow.ChunkedArray
        Offsets of ``dtype``, in the form of ``lengths`` (numpy, CuPy, Arrow or chunked).

    Raises
    ------
    ValueError
        A negative length, or a total that overflows an int32 ``dtype``.
    TypeError
        Non-integer lengths, or lengths that are not one array on one device.

    See Also
    --------
    offsets_to_lengths : The inverse.
    lengths_to_segment_ids : The segment-ids representation of the same rows.

    Notes
    -----
    On the device: no synchronisation (a prefix sum and one check kernel); bad lengths
    are raised by the next check (docs/gpu.md, "Dispatch").

    Examples
    --------
    >>> asp.lengths_to_offsets([3, 4, 2])
    array([0, 3, 7, 9])
    >>> asp.lengths_to_offsets(pa.array([3, 0, 2], pa.int32()), dtype=np.int32)
    <pyarrow.lib.Int32Array object at ...>
    [
      0,
      3,
      3,
      5
    ]
    """
    func = "lengths_to_offsets"
    dtype = _int_dtype(func, dtype)
    if dtype not in v.OFFSET_DTYPES:
        msg = f"{func}: dtype must be int32 or int64, got {dtype}"
        raise ArrowSparseTypeError(msg)
    xp = array_module(func, lengths=lengths)
    _, offsets = v.lengths_offsets(func, "lengths", lengths, dtype=dtype, device=True)
    device_checks(func, xp)
    return _like_input(offsets, lengths)


def offsets_to_lengths(offsets: Any) -> Any:
    """Turn offsets into row lengths (``offsets[1:] - offsets[:-1]``), keeping the dtype.

    Parameters
    ----------
    offsets
        Non-decreasing integer offsets, ``rows + 1`` long; may start above zero.

    Returns
    -------
    numpy.ndarray, cupy.ndarray, pyarrow.Array or pyarrow.ChunkedArray
        One length per row.

    Raises
    ------
    ValueError
        Empty, negative or decreasing offsets.

    See Also
    --------
    lengths_to_offsets : The inverse.

    Notes
    -----
    On the device: no synchronisation (a difference and one check kernel).

    Examples
    --------
    >>> asp.offsets_to_lengths(np.array([0, 3, 7, 9]))
    array([3, 4, 2])
    >>> asp.offsets_to_lengths([5, 5, 8])
    array([0, 3])
    """
    func = "offsets_to_lengths"
    xp = array_module(func, offsets=offsets)
    offs = v.check_offsets(func, "offsets", offsets, device=True)
    lengths = xp.diff(offs)
    device_checks(func, xp)
    return _like_input(lengths, offsets)


def lengths_to_segment_ids(lengths: Any, *, dtype: Any = np.int64) -> Any:
    """Repeat each row number by its length (Caffe2's ``LengthsToSegmentIds``).

    Parameters
    ----------
    lengths
        Non-negative integer lengths, one per row.
    dtype
        Integer dtype of the result (default int64).

    Returns
    -------
    numpy.ndarray, cupy.ndarray, pyarrow.Array or pyarrow.ChunkedArray
        Sorted segment ids, ``sum(lengths)`` long.

    Raises
    ------
    ValueError
        A negative length.

    See Also
    --------
    segment_ids_to_lengths : The inverse.

    Notes
    -----
    On the device the result size ``sum(lengths)`` is read back: one synchronisation,
    which also raises the device checks of ``lengths`` at once.

    Examples
    --------
    >>> asp.lengths_to_segment_ids([3, 4, 2])
    array([0, 0, 0, 1, 1, 1, 1, 2, 2])
    >>> asp.lengths_to_segment_ids([1, 0, 2])
    array([0, 2, 2])
    """
    func = "lengths_to_segment_ids"
    dtype = _int_dtype(func, dtype)
    xp = array_module(func, lengths=lengths)
    _, offsets = v.lengths_offsets(func, "lengths", lengths, device=True)
    ids = _segment_ids(func, offsets, dtype)
    device_checks(func, xp)
    return _like_input(ids, lengths)


def offsets_to_segment_ids(offsets: Any, *, dtype: Any = np.int64) -> Any:
    """Segment id of each value addressed by ``offsets``.

    The result covers ``values[offsets[0]:offsets[-1]]``: when offsets start above
    zero (a sliced Arrow array), position 0 of the result is value ``offsets[0]``.

    Parameters
    ----------
    offsets
        Non-decreasing integer offsets, ``rows + 1`` long.
    dtype
        Integer dtype of the result (default int64).

    Returns
    -------
    numpy.ndarray, cupy.ndarray, pyarrow.Array or pyarrow.ChunkedArray
        Sorted segment ids, ``offsets[-1] - offsets[0]`` long.

    Raises
    ------
    ValueError
        Empty, negative or decreasing offsets.

    See Also
    --------
    segment_ids_to_offsets : The inverse.

    Notes
    -----
    On the device the result size is read back (``offsets[0]`` and ``offsets[-1]``):
    one synchronisation, which also raises the device checks of ``offsets`` at once.

    Examples
    --------
    >>> asp.offsets_to_segment_ids([0, 3, 7, 9])
    array([0, 0, 0, 1, 1, 1, 1, 2, 2])
    >>> asp.offsets_to_segment_ids([4, 5, 5, 7])
    array([0, 2, 2])
    """
    func = "offsets_to_segment_ids"
    dtype = _int_dtype(func, dtype)
    xp = array_module(func, offsets=offsets)
    offs = v.check_offsets(func, "offsets", offsets, device=True)
    ids = _segment_ids(func, offs, dtype)
    device_checks(func, xp)
    return _like_input(ids, offsets)


def _segment_ids(func: str, offsets: Any, dtype: np.dtype) -> Any:
    """Row of each value in ``[offsets[0], offsets[-1])`` (checked offsets, numpy or CuPy).

    On the device the two bounds are read back (one synchronisation, raising the device
    checks); each value finds its row by binary search of the row ends.
    """
    if not is_cupy_array(offsets):
        return np.repeat(np.arange(len(offsets) - 1, dtype=dtype), np.diff(offsets))
    start, stop = fetch(func, offsets[0], offsets[-1])
    xp = module_of(offsets)
    positions = xp.arange(start, stop, dtype=np.int64)
    return xp.searchsorted(offsets[1:], positions, side="right").astype(dtype, copy=False)


def _ids_to_offsets(segment_ids: Any, num_segments: int, dtype: Any = np.int64) -> Any:
    """Offsets of checked sorted segment ids (numpy or CuPy): a binary search per row."""
    xp = module_of(segment_ids)
    bounds = xp.arange(num_segments + 1, dtype=np.int64)
    return xp.searchsorted(segment_ids, bounds, side="left").astype(dtype, copy=False)


def segment_ids_to_lengths(segment_ids: Any, num_segments: int | None = None) -> Any:
    """Count the values of each segment (Caffe2's ``SegmentIdsToLengths``).

    Parameters
    ----------
    segment_ids
        Sorted (non-decreasing), non-negative integer ids.
    num_segments
        Number of segments; default ``max(segment_ids) + 1``. Larger values add
        trailing empty segments.

    Returns
    -------
    numpy.ndarray, cupy.ndarray, pyarrow.Array or pyarrow.ChunkedArray
        int64 lengths, ``num_segments`` long.

    Raises
    ------
    ValueError
        Unsorted ids.
    IndexError
        A negative id or one ``>= num_segments``.

    See Also
    --------
    lengths_to_segment_ids : The inverse.

    Notes
    -----
    On the device: with ``num_segments`` no synchronisation; without, the last id is
    read back (one synchronisation, raising the device checks at once).

    Examples
    --------
    >>> asp.segment_ids_to_lengths([0, 0, 0, 1, 1, 1, 1, 2, 2])
    array([3, 4, 2])
    >>> asp.segment_ids_to_lengths([0, 2, 2], num_segments=4)
    array([1, 0, 2, 0])
    """
    func = "segment_ids_to_lengths"
    xp = array_module(func, segment_ids=segment_ids)
    ids, n = v.check_sorted_segment_ids(func, "segment_ids", segment_ids,
                                        num_segments=num_segments, device=True)
    if xp is np:
        lengths = np.bincount(ids, minlength=n).astype(np.int64, copy=False)
    else:
        lengths = xp.diff(_ids_to_offsets(ids, n))
    device_checks(func, xp)
    return _like_input(lengths, segment_ids)


def segment_ids_to_offsets(segment_ids: Any, num_segments: int | None = None, *,
                           dtype: Any = np.int64) -> Any:
    """Offsets (``num_segments + 1`` long) of sorted segment ids.

    Parameters
    ----------
    segment_ids
        Sorted (non-decreasing), non-negative integer ids.
    num_segments
        Number of segments; default ``max(segment_ids) + 1``.
    dtype
        int64 (default) or int32.

    Returns
    -------
    numpy.ndarray, cupy.ndarray, pyarrow.Array or pyarrow.ChunkedArray
        Offsets starting at 0.

    Raises
    ------
    ValueError
        Unsorted ids.
    IndexError
        A negative id or one ``>= num_segments``.

    See Also
    --------
    offsets_to_segment_ids : The inverse.

    Notes
    -----
    On the device: as :func:`segment_ids_to_lengths`.

    Examples
    --------
    >>> asp.segment_ids_to_offsets([0, 0, 0, 1, 1, 1, 1, 2, 2])
    array([0, 3, 7, 9])
    """
    func = "segment_ids_to_offsets"
    dtype = _int_dtype(func, dtype)
    xp = array_module(func, segment_ids=segment_ids)
    ids, n = v.check_sorted_segment_ids(func, "segment_ids", segment_ids,
                                        num_segments=num_segments, device=True)
    offsets = _ids_to_offsets(ids, n, dtype)
    device_checks(func, xp)
    return _like_input(offsets, segment_ids)


def _offsets_levels(func: str, offsets: Any) -> list[Any]:
    """Normalise ``offsets`` to a list of levels: one array means one level."""
    if isinstance(offsets, (np.ndarray, pa.Array, pa.ChunkedArray)) or is_cupy_array(offsets):
        return [offsets]
    if isinstance(offsets, (list, tuple)) and offsets:
        if all(isinstance(o, (int, np.integer)) for o in offsets):
            return [offsets]
        return list(offsets)
    msg = f"{func}: offsets must be a non-empty list of offsets arrays, outermost first"
    raise ArrowSparseTypeError(msg)


def _offsets_list(func: str, offsets: Any, num_values: int | None, *,
                  device: bool = False) -> list[np.ndarray]:
    """Check a list of offsets (outermost first); each must fit inside the next level.

    ``num_values`` bounds the last level (None: unbounded). ``device``: accept CuPy
    offsets (checked on the device).
    """
    levels = _offsets_levels(func, offsets)
    checked: list[np.ndarray] = []
    for level in range(len(levels) - 1, -1, -1):  # innermost first: it sizes the level above
        size = num_values if level == len(levels) - 1 else len(checked[0]) - 1
        checked.insert(0, v.check_offsets(func, f"offsets[{level}]", levels[level], size,
                                          device=device))
    return checked


def longest_rows(func: str, offsets: list[np.ndarray],
                 validity: list[np.ndarray | None] | None = None) -> list[int]:
    """Longest row of each level, counting only the rows that are read.

    A level's rows count when the level above addresses them and neither they nor a
    row above them is null (a null row's range is never read). On the device each
    level's longest row and range are read back: one synchronisation per level, which
    also raises the device checks at once.
    """
    longest = []
    start, stop = 0, len(offsets[0]) - 1
    shown: np.ndarray | None = None  # which rows of the level's window are read
    for level, offs in enumerate(offsets):
        xp = module_of(offs)
        used = offs[start:stop + 1]
        lens = xp.diff(used)
        valid = None if validity is None else validity[level]
        if valid is not None and (xp is not np or not valid[start:stop].all()):
            shown = valid[start:stop] if shown is None else shown & valid[start:stop]
        children = lens
        if shown is not None:
            lens = xp.where(shown, lens, 0)
        top, start, stop = fetch(func, lens.max() if len(lens) else 0, used[0], used[-1])
        if shown is not None:
            shown = _repeat_rows(shown, children, used, start, stop)
        longest.append(top)
    return longest


def _repeat_rows(mask: Any, lengths: Any, offsets: Any, start: int, stop: int) -> Any:
    """``mask`` of rows repeated over their elements ``[start, stop)`` (numpy or CuPy)."""
    if not is_cupy_array(mask):
        return np.repeat(mask, lengths)
    xp = module_of(mask)
    rows = xp.searchsorted(offsets[1:], xp.arange(start, stop, dtype=np.int64), side="right")
    return mask[rows]


def _max_lengths(func: str, max_lengths: Any, offsets: list[np.ndarray],
                 validity: list[np.ndarray | None]) -> list[int]:
    if max_lengths is None:
        return longest_rows(func, offsets, validity)
    if isinstance(max_lengths, (int, np.integer)) and not isinstance(max_lengths, bool):
        max_lengths = [max_lengths]
    if not isinstance(max_lengths, (list, tuple, np.ndarray)):
        msg = (f"{func}: max_lengths must be an int or a list of ints, "
               f"got {type(max_lengths).__name__}")
        raise ArrowSparseTypeError(msg)
    max_lengths = list(max_lengths)
    if len(max_lengths) != len(offsets):
        msg = (f"{func}: max_lengths has {len(max_lengths)} entries but there are "
               f"{len(offsets)} offsets levels")
        raise ArrowSparseValueError(msg)
    return [v.check_count(func, f"max_lengths[{i}]", m) for i, m in enumerate(max_lengths)]


def _short_repr(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _fill_value(func: str, value: Any, dtype: np.dtype, arg: str = "padding_value") -> np.generic:
    """``value`` as a scalar of ``dtype``; raise if it is not a number or does not fit."""
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    number = isinstance(value, (bool, int, float)) or \
        (isinstance(value, np.generic) and value.dtype.kind in "biuf")
    if not number:
        shape = f" of shape {value.shape}" if isinstance(value, np.ndarray) else ""
        msg = f"{func}: {arg} must be a scalar number, got {type(value).__name__}{shape}"
        raise ArrowSparseTypeError(msg)
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            scalar = np.array(value).astype(dtype)[()]
        exact = bool(scalar == value) or bool(np.isnan(scalar) and np.isnan(value))
    except (TypeError, ValueError, OverflowError):
        exact = False
    if not exact:
        msg = f"{func}: {arg} {_short_repr(value)} does not fit the values dtype {dtype}"
        raise ArrowSparseValueError(msg)
    return scalar  # type: ignore[no-any-return]


def _copyable(arr: np.ndarray) -> np.ndarray:
    """``arr`` itself, or float16 seen as uint16: the copy kernels move bits, not numbers."""
    return arr.view(np.uint16) if arr.dtype == np.float16 else arr


def _pad_bits(pad: np.generic) -> np.generic:
    return np.array(pad).view(np.uint16)[()] if pad.dtype == np.float16 else pad


def _alloc(func: str, shape: tuple[int, ...], dtype: np.dtype, xp: Any) -> np.ndarray:
    """``xp.empty(shape)``; a result beyond 2**59 elements is refused before any work."""
    size = 1
    for extent in shape:
        size *= int(extent)
    if size > v.MAX_COUNT:
        msg = (f"{func}: the result of shape {shape} would hold {size} elements, more than "
               "2**59; lower max_lengths")
        raise ArrowSparseValueError(msg)
    return v.empty(func, shape, dtype, xp)


def pad_levels(func: str, values: np.ndarray, offsets: list[np.ndarray],
               validity: list[np.ndarray | None], max_lengths: list[int],
               pad: np.generic, values_validity: np.ndarray | None = None) -> np.ndarray:
    """Pad a checked multi-level jagged to a dense array (shared with ``Jagged.to_padded``).

    Null rows (``validity``, one mask or None per level) and null elements
    (``values_validity``) are padded. The result is allocated (and its size checked)
    before any other work. Arrays are numpy or all CuPy (then so is the result); one
    kernel launch per level, no synchronisation.
    """
    xp = module_of(values)
    inner_shape = values.shape[1:]
    width = int(np.prod(inner_shape)) if inner_shape else 1
    num_rows = len(offsets[0]) - 1
    out = _alloc(func, (num_rows, *max_lengths, *inner_shape), values.dtype, xp)
    if out.size == 0:
        return out
    flat = _copyable(out).reshape(-1, max_lengths[-1], width)
    row_index = None
    num_out = num_rows
    expand = get_kernel("convert", "expand_level", xp)
    for level in range(len(offsets) - 1):
        row_index = expand(row_index, offsets[level], _mask(validity[level]),
                           max_lengths[level], num_out)
        num_out *= max_lengths[level]
    values2d = _copyable(values).reshape(len(values), width)
    get_kernel("convert", "pad_rows", xp)(values2d, row_index, offsets[-1], _mask(validity[-1]),
                                      max_lengths[-1], _pad_bits(pad), flat,
                                      _mask(values_validity))
    return out


def _mask(validity: np.ndarray | None) -> np.ndarray | None:
    return None if validity is None else validity.view(np.uint8)


def jagged_to_padded_dense(values: Any, offsets: Any = None, max_lengths: Any = None,
                           padding_value: Any = 0) -> np.ndarray:
    """Pad a (multi-level) jagged tensor to a dense array (FBGEMM semantics).

    Parameters
    ----------
    values
        Jagged values ``[N, *inner]``: 1-D (one scalar per element) or N-D (e.g.
        ``[N, D]`` embeddings); the inner axes are kept. Or a :class:`Jagged`, an Arrow
        list array or a ChunkedArray of lists, with ``offsets=None``: then null rows
        and null elements are padding. numpy or CuPy (then the offsets too).
    offsets
        List of offsets arrays, outermost first (``offsets[k]`` indexes the rows of
        level ``k + 1``, the last one indexes ``values``). A single array means one level.
    max_lengths
        Dense size of each jagged level (an int for one level); rows longer than it are
        truncated. Default: the longest row of each level, counting only the rows the
        level above addresses (and, for jagged input, no null row).
    padding_value
        Fill for positions with no element: a scalar that fits the values dtype exactly.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        ``[rows, max_lengths[0], ..., max_lengths[-1], *inner]`` of the values dtype
        (float16 included: padding copies values, it does not compute), on the device
        of the inputs.

    Raises
    ------
    ValueError
        Malformed offsets, offsets beyond the next level, ``max_lengths`` of the
        wrong length, a padding value the dtype cannot hold, or a result of more than
        2**59 elements.
    TypeError
        Non-numeric values, non-integer offsets, ``offsets`` given with a Jagged, or a
        padding value that is not a scalar number.
    MemoryError
        A result that does not fit in memory (checked before any other work).

    See Also
    --------
    dense_to_jagged : The inverse.
    Jagged.to_padded : The same as a method of :class:`Jagged`.

    Notes
    -----
    The result is allocated first, so an impossible size fails before any work; a
    result with a zero-length axis returns at once.

    On the device: one kernel per level (plus one check kernel per offsets level for
    raw offsets). With ``max_lengths`` given nothing is synchronised and bad offsets
    are raised by the next check; without, each level's longest row is read back (one
    synchronisation per level), which raises bad offsets at once.

    Examples
    --------
    Caffe2's padded representation, with -1 as filler:

    >>> values = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
    >>> asp.jagged_to_padded_dense(values, [np.array([0, 3, 7, 9])], [4], padding_value=-1)
    array([[ 1,  2,  3, -1],
           [ 2,  4,  6,  7],
           [ 3,  6, -1, -1]])

    Two jagged levels (rows of lists of lists):

    >>> asp.jagged_to_padded_dense(np.arange(1, 6), [[0, 2, 3], [0, 1, 3, 5]], [2, 2])
    array([[[1, 0],
            [2, 3]],
    <BLANKLINE>
           [[4, 5],
            [0, 0]]])

    An Arrow list array (null rows and null elements are padding):

    >>> asp.jagged_to_padded_dense(pa.array([[1, None], None, [3]]), padding_value=-1)
    array([[ 1, -1],
           [-1, -1],
           [ 3, -1]])
    """
    func = "jagged_to_padded_dense"
    from .jagged import Jagged  # jagged.py imports this module

    if isinstance(values, Jagged) or (isinstance(values, (pa.Array, pa.ChunkedArray))
                                      and is_list_type(values.type)):
        if offsets is not None:
            msg = f"{func}: offsets must be None when values is a Jagged or an Arrow list array"
            raise ArrowSparseTypeError(msg)
        levels = [values if isinstance(values, Jagged) else Jagged.from_arrow(values)]
        while isinstance(levels[-1].values, Jagged):
            levels.append(levels[-1].values)
        leaf = levels[-1].leaf_values
        offs = [level.offsets for level in levels]
        validity = [level.validity for level in levels]
        elem_validity = levels[-1].values_validity
        xp = levels[0].xp
    else:
        xp = array_module(func, values=values, offsets=offsets)
        leaf = v.as_values_array(func, "values", values, device=True)
        if offsets is None:
            msg = (f"{func}: offsets are needed with a values array (a list of offsets "
                   "arrays, outermost first)")
            raise ArrowSparseTypeError(msg)
        offs = _offsets_list(func, offsets, len(leaf), device=True)
        validity = [None] * len(offs)
        elem_validity = None
    lens = _max_lengths(func, max_lengths, offs, validity)
    pad = _fill_value(func, padding_value, leaf.dtype)
    out = pad_levels(func, leaf, offs, validity, lens, pad, elem_validity)
    device_checks(func, xp)
    return out


def dense_to_jagged(dense: Any, offsets: Any, padding_value: Any = 0) -> np.ndarray:
    """Read the jagged values of ``offsets`` out of a padded dense array (FBGEMM semantics).

    Parameters
    ----------
    dense
        ``[rows, L0, ..., Lk-1, *inner]`` with one axis per offsets level (numpy, or
        CuPy with CuPy offsets).
    offsets
        List of offsets arrays, outermost first; a single array means one level.
    padding_value
        Value given to elements that lie outside ``dense`` (a row longer than the
        dense axis), as FBGEMM does.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        Values ``[offsets[-1][-1], *inner]``, laid out so ``(values, offsets)`` is the
        jagged tensor. Positions before ``offsets[-1][0]`` hold ``padding_value``.

    Raises
    ------
    ValueError
        Malformed offsets, a dense array with too few axes or rows.
    TypeError
        Non-numeric dense or non-integer offsets.

    See Also
    --------
    jagged_to_padded_dense : The inverse.
    Jagged.from_padded : Build a :class:`Jagged` from padded rows and lengths.

    Notes
    -----
    On the device the result size (``offsets[-1][0]`` and ``offsets[-1][-1]``) is read
    back: one synchronisation, which also raises the device checks of the offsets at
    once. One kernel per level.

    Examples
    --------
    >>> dense = np.array([[1, 2, 3, -1], [2, 4, 6, 7], [3, 6, -1, -1]])
    >>> asp.dense_to_jagged(dense, [np.array([0, 3, 7, 9])])
    array([1, 2, 3, 2, 4, 6, 7, 3, 6])

    A row longer than the dense axis reads the padding value:

    >>> asp.dense_to_jagged(np.array([[1, 2], [3, 4]]), [[0, 1, 4]], padding_value=9)
    array([1, 3, 4, 9])
    """
    func = "dense_to_jagged"
    xp = array_module(func, dense=dense, offsets=offsets)
    dense_arr = v.as_values_array(func, "dense", dense, device=True)
    levels = _offsets_levels(func, offsets)
    num_levels = len(levels)
    if dense_arr.ndim < num_levels + 1:
        msg = (f"{func}: dense must have at least {num_levels + 1} axes for {num_levels} "
               f"offsets levels, got shape {dense_arr.shape}")
        raise ArrowSparseValueError(msg)
    offs = _offsets_list(func, levels, None, device=True)
    if len(offs[0]) - 1 != dense_arr.shape[0]:
        msg = (f"{func}: dense has {dense_arr.shape[0]} rows but offsets[0] describes "
               f"{len(offs[0]) - 1}")
        raise ArrowSparseValueError(msg)
    pad = _fill_value(func, padding_value, dense_arr.dtype)
    out = unpad_levels(func, dense_arr, offs, pad)
    device_checks(func, xp)
    return out


def unpad_levels(func: str, dense: np.ndarray, offsets: list[np.ndarray], pad: np.generic
                 ) -> np.ndarray:
    """Read the jagged values of checked ``offsets`` out of ``dense``.

    Shared with ``Jagged.from_padded``; numpy or CuPy arrays. On the device the size
    of the result is read back (one synchronisation, which raises the device checks
    launched so far at once).
    """
    xp = module_of(dense)
    num_levels = len(offsets)
    first, total = fetch(func, offsets[-1][0], offsets[-1][-1])
    inner_shape = dense.shape[num_levels + 1:]
    width = int(np.prod(inner_shape)) if inner_shape else 1
    # Map every jagged row of the last level to its dense row (or -1): expand the upper
    # levels over the dense extents, then invert (the entries that are not rows write a
    # spare last slot).
    row_index = None
    num_out = dense.shape[0]
    expand = get_kernel("convert", "expand_level", xp)
    for level, extent in enumerate(dense.shape[1:num_levels]):
        row_index = expand(row_index, offsets[level], None, extent, num_out)
        num_out *= extent
    dense_row_of = None
    if row_index is not None:
        rows = len(offsets[-1]) - 1
        slots = xp.full(rows + 1, -1, dtype=np.int64)
        slots[xp.where(row_index >= 0, row_index, rows)] = xp.arange(len(row_index))
        dense_row_of = slots[:rows]
    dense3d = _copyable(xp.ascontiguousarray(dense)).reshape(
        num_out, dense.shape[num_levels], width)
    out = v.empty(func, (total, width), dense.dtype, xp)
    if first:
        out[:first] = pad
    get_kernel("convert", "unpad_rows", xp)(dense3d, dense_row_of, offsets[-1], _pad_bits(pad),
                                            _copyable(out))
    return out.reshape((total, *inner_shape))
