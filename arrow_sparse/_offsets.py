"""Primitives of jagged structure that :mod:`arrow_sparse.jagged` and the operations share.

Offsets <-> segment ids, lists of offsets levels, the longest row of each level, and
the padded layout (pad and unpad, one kernel launch per level). Every helper takes
checked arrays (numpy, or all CuPy) and names the calling public function ``func`` in
its errors; none builds a :class:`~arrow_sparse.Jagged`, so the class can use them
without importing the operations built on it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from . import _validate as v
from ._backend import fetch, get_kernel, is_cupy_array, module_of
from .errors import ArrowSparseTypeError, ArrowSparseValueError


def value_rows(func: str, offsets: Any, dtype: np.dtype) -> Any:
    """Row of each value in ``[offsets[0], offsets[-1])`` (checked offsets, numpy or CuPy).

    On the device the two bounds are read back (one synchronisation, raising the device
    checks); each value finds its row by binary search of the row ends.
    """
    if not is_cupy_array(offsets):
        total = int(offsets[-1]) - int(offsets[0])
        v.check_nbytes(func, f"the row ids of {total:,} values", total, np.dtype(dtype).itemsize)
        return np.repeat(np.arange(len(offsets) - 1, dtype=dtype), np.diff(offsets))
    start, stop = fetch(func, offsets[0], offsets[-1])
    v.check_nbytes(func, f"the row ids of {stop - start:,} values", stop - start,
                   np.dtype(dtype).itemsize)
    xp = module_of(offsets)
    positions = xp.arange(start, stop, dtype=np.int64)
    return xp.searchsorted(offsets[1:], positions, side="right").astype(dtype, copy=False)


def ids_to_offsets(segment_ids: Any, num_segments: int, dtype: Any = np.int64) -> Any:
    """Offsets of checked sorted segment ids (numpy or CuPy): a binary search per row."""
    xp = module_of(segment_ids)
    bounds = xp.arange(num_segments + 1, dtype=np.int64)
    return xp.searchsorted(segment_ids, bounds, side="left").astype(dtype, copy=False)


def offsets_levels(func: str, offsets: Any) -> list[Any]:
    """Normalise ``offsets`` to a list of levels: one array means one level."""
    if isinstance(offsets, (np.ndarray, pa.Array, pa.ChunkedArray)) or is_cupy_array(offsets):
        return [offsets]
    if isinstance(offsets, (list, tuple)) and offsets:
        if all(isinstance(o, (int, np.integer)) for o in offsets):
            return [offsets]
        return list(offsets)
    msg = f"{func}: offsets must be a non-empty list of offsets arrays, outermost first"
    raise ArrowSparseTypeError(msg)


def checked_levels(func: str, offsets: Any, num_values: int | None, *,
                  device: bool = False) -> list[np.ndarray]:
    """Check a list of offsets (outermost first); each must fit inside the next level.

    ``num_values`` bounds the last level (None: unbounded). ``device``: accept CuPy
    offsets (checked on the device).
    """
    levels = offsets_levels(func, offsets)
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
            shown = repeat_rows(shown, children, used, start, stop)
        longest.append(top)
    return longest


def repeat_rows(mask: Any, lengths: Any, offsets: Any, start: int, stop: int) -> Any:
    """``mask`` of rows repeated over their elements ``[start, stop)`` (numpy or CuPy)."""
    if not is_cupy_array(mask):
        return np.repeat(mask, lengths)
    xp = module_of(mask)
    rows = xp.searchsorted(offsets[1:], xp.arange(start, stop, dtype=np.int64), side="right")
    return mask[rows]


def _short_repr(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def fill_value(func: str, value: Any, dtype: np.dtype, arg: str = "padding_value") -> np.generic:
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
    scalar = v.exact_scalar(value, dtype)
    if scalar is None:
        msg = f"{func}: {arg} {_short_repr(value)} does not fit the values dtype {dtype}"
        raise ArrowSparseValueError(msg)
    return scalar


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
