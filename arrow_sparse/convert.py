"""Conversions between jagged representations.

Caffe2's representations of a batch of variable-length features (values with
lengths, offsets or sorted segment ids; padded dense) and FBGEMM's multi-level
jagged <-> padded dense conversions. The examples use Caffe2's batch of three
examples ``[1, 2, 3] [2, 4, 6, 7] [3, 6]``.

The offsets, lengths and segment-id functions answer in the form of their input: numpy
(or a sequence) gives numpy, an Arrow array gives an Arrow array, and a ChunkedArray gives
a ChunkedArray of one chunk (these arrays describe one batch of rows as a whole).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from . import _validate as v
from ._arrow import is_list_type
from ._backend import get_kernel
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
    """Arrow in -> Arrow out (zero-copy wrap; a ChunkedArray gives one chunk); else numpy."""
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
        Non-negative integer lengths, one per row (numpy, Arrow or a sequence).
    dtype
        Offsets dtype: ``np.int64`` (default, Arrow ``large_list``) or ``np.int32``
        (Arrow ``list``; raises if the total does not fit).

    Returns
    -------
    numpy.ndarray, pyarrow.Array or pyarrow.ChunkedArray
        Offsets of ``dtype``, in the form of ``lengths`` (numpy, Arrow or chunked).

    Raises
    ------
    ValueError
        A negative length, or a total that overflows an int32 ``dtype``.
    TypeError
        Non-integer lengths.

    See Also
    --------
    offsets_to_lengths : The inverse.
    lengths_to_segment_ids : The segment-ids representation of the same rows.

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
    lens = v.check_lengths(func, "lengths", lengths)
    dtype = _int_dtype(func, dtype)
    if dtype not in v.OFFSET_DTYPES:
        msg = f"{func}: dtype must be int32 or int64, got {dtype}"
        raise ArrowSparseTypeError(msg)
    offsets = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    if dtype == np.int32 and offsets[-1] > np.iinfo(np.int32).max:
        pos = v.first_true(offsets > np.iinfo(np.int32).max) - 1
        v.fail_value(func, "lengths", "sum beyond the int32 range; use dtype=np.int64",
                     pos, lens[pos])
    return _like_input(offsets.astype(dtype, copy=False), lengths)


def offsets_to_lengths(offsets: Any) -> Any:
    """Turn offsets into row lengths (``offsets[1:] - offsets[:-1]``), keeping the dtype.

    Parameters
    ----------
    offsets
        Non-decreasing integer offsets, ``rows + 1`` long; may start above zero.

    Returns
    -------
    numpy.ndarray, pyarrow.Array or pyarrow.ChunkedArray
        One length per row.

    Raises
    ------
    ValueError
        Empty, negative or decreasing offsets.

    See Also
    --------
    lengths_to_offsets : The inverse.

    Examples
    --------
    >>> asp.offsets_to_lengths(np.array([0, 3, 7, 9]))
    array([3, 4, 2])
    >>> asp.offsets_to_lengths([5, 5, 8])
    array([0, 3])
    """
    offs = v.check_offsets("offsets_to_lengths", "offsets", offsets)
    return _like_input(np.diff(offs), offsets)


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
    numpy.ndarray, pyarrow.Array or pyarrow.ChunkedArray
        Sorted segment ids, ``sum(lengths)`` long.

    Raises
    ------
    ValueError
        A negative length.

    See Also
    --------
    segment_ids_to_lengths : The inverse.

    Examples
    --------
    >>> asp.lengths_to_segment_ids([3, 4, 2])
    array([0, 0, 0, 1, 1, 1, 1, 2, 2])
    >>> asp.lengths_to_segment_ids([1, 0, 2])
    array([0, 2, 2])
    """
    func = "lengths_to_segment_ids"
    lens = v.check_lengths(func, "lengths", lengths)
    ids = np.repeat(np.arange(len(lens), dtype=_int_dtype(func, dtype)), lens)
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
    numpy.ndarray, pyarrow.Array or pyarrow.ChunkedArray
        Sorted segment ids, ``offsets[-1] - offsets[0]`` long.

    Raises
    ------
    ValueError
        Empty, negative or decreasing offsets.

    See Also
    --------
    segment_ids_to_offsets : The inverse.

    Examples
    --------
    >>> asp.offsets_to_segment_ids([0, 3, 7, 9])
    array([0, 0, 0, 1, 1, 1, 1, 2, 2])
    >>> asp.offsets_to_segment_ids([4, 5, 5, 7])
    array([0, 2, 2])
    """
    func = "offsets_to_segment_ids"
    offs = v.check_offsets(func, "offsets", offsets)
    ids = np.repeat(np.arange(len(offs) - 1, dtype=_int_dtype(func, dtype)),
                    np.diff(offs))
    return _like_input(ids, offsets)


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
    numpy.ndarray, pyarrow.Array or pyarrow.ChunkedArray
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

    Examples
    --------
    >>> asp.segment_ids_to_lengths([0, 0, 0, 1, 1, 1, 1, 2, 2])
    array([3, 4, 2])
    >>> asp.segment_ids_to_lengths([0, 2, 2], num_segments=4)
    array([1, 0, 2, 0])
    """
    ids, n = v.check_sorted_segment_ids("segment_ids_to_lengths", "segment_ids", segment_ids,
                                        num_segments=num_segments)
    return _like_input(np.bincount(ids, minlength=n).astype(np.int64, copy=False), segment_ids)


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
    numpy.ndarray, pyarrow.Array or pyarrow.ChunkedArray
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

    Examples
    --------
    >>> asp.segment_ids_to_offsets([0, 0, 0, 1, 1, 1, 1, 2, 2])
    array([0, 3, 7, 9])
    """
    func = "segment_ids_to_offsets"
    ids, n = v.check_sorted_segment_ids(func, "segment_ids", segment_ids,
                                        num_segments=num_segments)
    dtype = _int_dtype(func, dtype)
    offsets = np.searchsorted(ids, np.arange(n + 1), side="left").astype(dtype)
    return _like_input(offsets, segment_ids)


def _offsets_levels(func: str, offsets: Any) -> list[Any]:
    """Normalise ``offsets`` to a list of levels: one array means one level."""
    if isinstance(offsets, (np.ndarray, pa.Array, pa.ChunkedArray)):
        return [offsets]
    if isinstance(offsets, (list, tuple)) and offsets:
        if all(isinstance(o, (int, np.integer)) for o in offsets):
            return [offsets]
        return list(offsets)
    msg = f"{func}: offsets must be a non-empty list of offsets arrays, outermost first"
    raise ArrowSparseTypeError(msg)


def _offsets_list(func: str, offsets: Any, num_values: int) -> list[np.ndarray]:
    """Check a list of offsets (outermost first); each must fit inside the next level."""
    levels = _offsets_levels(func, offsets)
    checked = [v.check_offsets(func, f"offsets[{k}]", o) for k, o in enumerate(levels)]
    for level, offs in enumerate(checked):  # non-decreasing: the last offset bounds them all
        size = num_values if level == len(checked) - 1 else len(checked[level + 1]) - 1
        if offs[-1] > size:
            pos = v.first_true(offs > size)
            v.fail_value(func, f"offsets[{level}]", f"exceed the number of values {size}", pos,
                         offs[pos])
    return checked


def longest_rows(offsets: list[np.ndarray],
                 validity: list[np.ndarray | None] | None = None) -> list[int]:
    """Longest row of each level, counting only the rows that are read.

    A level's rows count when the level above addresses them and neither they nor a
    row above them is null (a null row's range is never read).
    """
    longest = []
    start, stop = 0, len(offsets[0]) - 1
    shown: np.ndarray | None = None  # which rows of the level's window are read
    for level, offs in enumerate(offsets):
        used = offs[start:stop + 1]
        lens = np.diff(used)
        valid = None if validity is None else validity[level]
        if valid is not None and not valid[start:stop].all():
            shown = valid[start:stop] if shown is None else shown & valid[start:stop]
        if shown is not None:
            children = lens
            lens = np.where(shown, lens, 0)
            shown = np.repeat(shown, children)
        longest.append(int(lens.max()) if len(lens) else 0)
        start, stop = int(used[0]), int(used[-1])
    return longest


def _max_lengths(func: str, max_lengths: Any, offsets: list[np.ndarray],
                 validity: list[np.ndarray | None]) -> list[int]:
    if max_lengths is None:
        return longest_rows(offsets, validity)
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


def _alloc(func: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """``np.empty(shape)``; a result beyond 2**59 elements is refused before any work."""
    size = 1
    for extent in shape:
        size *= int(extent)
    if size > v.MAX_COUNT:
        msg = (f"{func}: the result of shape {shape} would hold {size} elements, more than "
               "2**59; lower max_lengths")
        raise ArrowSparseValueError(msg)
    return v.empty(func, shape, dtype)


def pad_levels(func: str, values: np.ndarray, offsets: list[np.ndarray],
               validity: list[np.ndarray | None], max_lengths: list[int],
               pad: np.generic, values_validity: np.ndarray | None = None) -> np.ndarray:
    """Pad a checked multi-level jagged to a dense array (shared with ``Jagged.to_padded``).

    Null rows (``validity``, one mask or None per level) and null elements
    (``values_validity``) are padded. The result is allocated (and its size checked)
    before any other work.
    """
    inner_shape = values.shape[1:]
    width = int(np.prod(inner_shape)) if inner_shape else 1
    num_rows = len(offsets[0]) - 1
    out = _alloc(func, (num_rows, *max_lengths, *inner_shape), values.dtype)
    if out.size == 0:
        return out
    flat = _copyable(out).reshape(-1, max_lengths[-1], width)
    row_index = None
    num_out = num_rows
    expand = get_kernel("convert", "expand_level")
    for level in range(len(offsets) - 1):
        row_index = expand(row_index, offsets[level], _mask(validity[level]),
                           max_lengths[level], num_out)
        num_out *= max_lengths[level]
    values2d = _copyable(values).reshape(len(values), width)
    get_kernel("convert", "pad_rows")(values2d, row_index, offsets[-1], _mask(validity[-1]),
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
        and null elements are padding.
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
    numpy.ndarray
        ``[rows, max_lengths[0], ..., max_lengths[-1], *inner]`` of the values dtype
        (float16 included: padding copies values, it does not compute).

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
        leaf = levels[-1].values
        assert isinstance(leaf, np.ndarray)
        offs = [level.offsets for level in levels]
        validity = [level.validity for level in levels]
        elem_validity = levels[-1].values_validity
    else:
        leaf = v.as_values_array(func, "values", values)
        if offsets is None:
            msg = (f"{func}: offsets are needed with a values array (a list of offsets "
                   "arrays, outermost first)")
            raise ArrowSparseTypeError(msg)
        offs = _offsets_list(func, offsets, len(leaf))
        validity = [None] * len(offs)
        elem_validity = None
    lens = _max_lengths(func, max_lengths, offs, validity)
    pad = _fill_value(func, padding_value, leaf.dtype)
    return pad_levels(func, leaf, offs, validity, lens, pad, elem_validity)


def dense_to_jagged(dense: Any, offsets: Any, padding_value: Any = 0) -> np.ndarray:
    """Read the jagged values of ``offsets`` out of a padded dense array (FBGEMM semantics).

    Parameters
    ----------
    dense
        ``[rows, L0, ..., Lk-1, *inner]`` with one axis per offsets level.
    offsets
        List of offsets arrays, outermost first; a single array means one level.
    padding_value
        Value given to elements that lie outside ``dense`` (a row longer than the
        dense axis), as FBGEMM does.

    Returns
    -------
    numpy.ndarray
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
    dense_arr = v.as_values_array(func, "dense", dense)
    levels = _offsets_levels(func, offsets)
    num_levels = len(levels)
    if dense_arr.ndim < num_levels + 1:
        msg = (f"{func}: dense must have at least {num_levels + 1} axes for {num_levels} "
               f"offsets levels, got shape {dense_arr.shape}")
        raise ArrowSparseValueError(msg)
    last = v.check_offsets(func, f"offsets[{num_levels - 1}]", levels[-1])
    total = int(last[-1])
    offs = _offsets_list(func, levels, total)
    if len(offs[0]) - 1 != dense_arr.shape[0]:
        msg = (f"{func}: dense has {dense_arr.shape[0]} rows but offsets[0] describes "
               f"{len(offs[0]) - 1}")
        raise ArrowSparseValueError(msg)
    pad = _fill_value(func, padding_value, dense_arr.dtype)
    inner_shape = dense_arr.shape[num_levels + 1:]
    width = int(np.prod(inner_shape)) if inner_shape else 1
    lead = dense_arr.shape[1:num_levels]
    # Map every jagged row of the last level to its dense row (or -1): expand the upper
    # levels over the dense extents, then invert.
    row_index = None
    num_out = dense_arr.shape[0]
    expand = get_kernel("convert", "expand_level")
    for level, extent in enumerate(lead):
        row_index = expand(row_index, offs[level], None, extent, num_out)
        num_out *= extent
    dense_row_of = None
    if row_index is not None:
        dense_row_of = np.full(len(offs[-1]) - 1, -1, dtype=np.int64)
        present = row_index >= 0
        dense_row_of[row_index[present]] = np.flatnonzero(present)
    dense3d = _copyable(np.ascontiguousarray(dense_arr)).reshape(
        num_out, dense_arr.shape[num_levels], width)
    out = v.empty(func, (total, width), dense_arr.dtype)
    out[:int(offs[-1][0])] = pad
    get_kernel("convert", "unpad_rows")(dense3d, dense_row_of, offs[-1], _pad_bits(pad),
                                        _copyable(out))
    return out.reshape((total, *inner_shape))
