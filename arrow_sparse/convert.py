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
from ._backend import array_module, device_checks
from ._offsets import (
    checked_levels,
    fill_value,
    ids_to_offsets,
    longest_rows,
    offsets_levels,
    pad_levels,
    unpad_levels,
    value_rows,
)
from .errors import ArrowSparseTypeError, ArrowSparseValueError
from .jagged import Jagged

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
    ids = value_rows(func, offsets, dtype)
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
    ids = value_rows(func, offs, dtype)
    device_checks(func, xp)
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
        lengths = xp.diff(ids_to_offsets(ids, n))
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
    offsets = ids_to_offsets(ids, n, dtype)
    device_checks(func, xp)
    return _like_input(offsets, segment_ids)


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
    if isinstance(values, Jagged) or (isinstance(values, (pa.Array, pa.ChunkedArray))
                                      and is_list_type(values.type)):
        if offsets is not None:
            msg = f"{func}: offsets must be None when values is a Jagged or an Arrow list array"
            raise ArrowSparseTypeError(msg)
        top = values if isinstance(values, Jagged) else Jagged._from_arrow(func, "values", values)
        levels = [top]
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
        offs = checked_levels(func, offsets, len(leaf), device=True)
        validity = [None] * len(offs)
        elem_validity = None
    lens = _max_lengths(func, max_lengths, offs, validity)
    pad = fill_value(func, padding_value, leaf.dtype)
    out = pad_levels(func, leaf, offs, validity, lens, pad, elem_validity)
    device_checks(func, xp)
    return out


def dense_to_jagged(dense: Any, offsets: Any, total_length: int | None = None, *,
                    padding_value: Any = 0) -> tuple[np.ndarray, list[np.ndarray]]:
    """Read the jagged values of ``offsets`` out of a padded dense array (FBGEMM semantics).

    Parameters
    ----------
    dense
        ``[rows, L0, ..., Lk-1, *inner]`` with one axis per offsets level (numpy, or
        CuPy with CuPy offsets).
    offsets
        List of offsets arrays, outermost first; a single array means one level.
    total_length
        FBGEMM's ``total_L``: the number of values to return, at least
        ``offsets[-1][-1]`` (the default); the values past it hold ``padding_value``,
        as FBGEMM's hold 0.
    padding_value
        Value given to elements that lie outside ``dense`` (a row longer than the
        dense axis) and to positions no row addresses. FBGEMM always uses 0.

    Returns
    -------
    tuple
        FBGEMM's ``(values, offsets)``: values ``[total_length, *inner]``, laid out so
        that ``(values, offsets)`` is the jagged tensor (positions before
        ``offsets[-1][0]`` hold ``padding_value``), and the list of checked offsets
        arrays. numpy, or CuPy on the device.

    Raises
    ------
    ValueError
        Malformed offsets, a dense array with too few axes or rows, a ``total_length``
        below ``offsets[-1][-1]`` (FBGEMM writes past its buffer there).
    TypeError
        Non-numeric dense, non-integer offsets or ``total_length``.

    See Also
    --------
    jagged_to_padded_dense : The inverse.
    Jagged.from_padded : Build a :class:`Jagged` from padded rows and lengths.

    Notes
    -----
    In arrow_sparse 0.1.0 the third positional argument was ``padding_value`` (now
    keyword-only: FBGEMM's third is ``total_L``) and the values came alone; take
    ``[0]`` of the tuple for them (see CHANGELOG.md).

    On the device the result size (``offsets[-1][0]`` and ``offsets[-1][-1]``) is read
    back: one synchronisation, which also raises the device checks of the offsets at
    once. One kernel per level.

    Examples
    --------
    >>> dense = np.array([[1, 2, 3, -1], [2, 4, 6, 7], [3, 6, -1, -1]])
    >>> values, offsets = asp.dense_to_jagged(dense, [np.array([0, 3, 7, 9])])
    >>> values
    array([1, 2, 3, 2, 4, 6, 7, 3, 6])
    >>> offsets
    [array([0, 3, 7, 9])]

    A row longer than the dense axis reads the padding value; ``total_length`` sizes
    the values:

    >>> asp.dense_to_jagged(np.array([[1, 2], [3, 4]]), [[0, 1, 4]], 5, padding_value=9)[0]
    array([1, 3, 4, 9, 9])
    """
    func = "dense_to_jagged"
    xp = array_module(func, dense=dense, offsets=offsets)
    dense_arr = v.as_values_array(func, "dense", dense, device=True)
    levels = offsets_levels(func, offsets)
    num_levels = len(levels)
    if dense_arr.ndim < num_levels + 1:
        msg = (f"{func}: dense must have at least {num_levels + 1} axes for {num_levels} "
               f"offsets levels, got shape {dense_arr.shape}")
        raise ArrowSparseValueError(msg)
    total = None if total_length is None else v.check_count(func, "total_length",
                                                              total_length)
    offs = checked_levels(func, levels, None, device=True)
    if len(offs[0]) - 1 != dense_arr.shape[0]:
        msg = (f"{func}: dense has {dense_arr.shape[0]} rows but offsets[0] describes "
               f"{len(offs[0]) - 1}")
        raise ArrowSparseValueError(msg)
    pad = fill_value(func, padding_value, dense_arr.dtype)
    out = unpad_levels(func, dense_arr, offs, pad)
    if total is not None and total != len(out):
        if total < len(out):
            msg = (f"{func}: total_length is {total} but the offsets address {len(out)} "
                   "values (offsets[-1][-1]); it must be at least that")
            raise ArrowSparseValueError(msg)
        tail = xp.full((total - len(out),) + out.shape[1:], pad, dtype=out.dtype)
        out = xp.concatenate([out, tail])
    device_checks(func, xp)
    return out, offs
