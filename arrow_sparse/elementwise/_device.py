"""Device paths of the jagged arithmetic that the host runs on row windows.

On the host, :func:`arrow_sparse.elementwise.jagged_ufunc` and
:func:`arrow_sparse.elementwise.map_values` read the window of values the top rows
address (``offsets[0]`` and ``offsets[-1]``, level by level) and compute on that window
only, leaving out the values under null rows and null elements. Reading those bounds on
the device would synchronise, so here they stay device scalars: the computation runs
over the whole leaf values buffer, and a mask of the visible positions (inside the
window, under rows valid at every level, not null) sets the others to 0. The checks the
host makes with numpy (the rows of two Jagged operands, the rows of a padded operand)
are recorded in the device error word (``check_positions`` in ``elementwise.cu``) and
raised by the next check.

Private: the public functions live in :mod:`arrow_sparse.elementwise`.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from .._backend import array_module, get_kernel, module_of
from ..jagged import Jagged
from ..kernels.cuda.elementwise import PADDED_SHORT, ROWS_DIFFER  # device error codes
from ._args import _i64, _leaf_offsets, _levels, _read_dense, _rebuild_whole, _repeat

#: ``(lo, hi)``: rows (or values) ``[lo, hi)`` of a level that the top rows address;
#: ints for the top level, device scalars (0-d arrays) below.
Bounds = tuple[Any, Any]



def windows(levels: list[Jagged]) -> list[Bounds]:
    """Give the window of every level (outermost first), then of the leaf values; no reads."""
    lo: Any = 0
    hi: Any = levels[0].num_rows
    bounds = [(lo, hi)]
    for node in levels:
        lo, hi = node.offsets[lo], node.offsets[hi]
        bounds.append((lo, hi))
    return bounds


def _positions(xp: ModuleType, size: int, bounds: Bounds) -> tuple[Any, Any]:
    """``(i, inside)``: the positions ``0..size-1`` and which of them lie in ``bounds``."""
    i = xp.arange(size, dtype=np.int64)
    return i, (i >= bounds[0]) & (i < bounds[1])


def _rows_of(xp: ModuleType, offsets: Any, elements: Any) -> Any:
    """Find the row holding each element (clamped to a real row; callers mask the others)."""
    row = xp.searchsorted(_i64(offsets[1:]), elements, side="right")
    return xp.minimum(row, max(len(offsets) - 2, 0))


def aligned(arr: Any, lo: Any, olo: Any, size: int) -> Any:
    """Line another operand's rows (or values) ``arr`` up with ours.

    Entry ``i`` is ``arr[i - lo + olo]``, clamped into ``arr`` (entries outside the
    window are not read).
    """
    xp = module_of(arr)
    if len(arr) == 0:
        return xp.zeros((size,) + arr.shape[1:], dtype=arr.dtype)
    idx = xp.arange(size, dtype=np.int64) - lo + olo
    return arr[xp.minimum(xp.maximum(idx, 0), len(arr) - 1)]


def and_validity(mine: Any, theirs: Any, lo: Any, olo: Any, size: int) -> Any:
    """``mine`` ANDed with another operand's mask lined up with ours (None: all valid)."""
    if theirs is None:
        return mine
    other = aligned(theirs, lo, olo, size)
    return other if mine is None else mine & other


def shown(levels: list[Jagged], validities: list[Any], bounds: list[Bounds]) -> list[Any]:
    """Mask, per level, the rows that are read: inside the window, valid, under a row read.

    None for the top level when it has no validity (every row is read).
    """
    xp = levels[0].xp
    masks: list[Any] = []
    for level, (node, valid) in enumerate(zip(levels, validities, strict=True)):
        mask = None
        if level:
            i, mask = _positions(xp, node.num_rows, bounds[level])
            above = masks[-1]
            if above is not None and len(above):
                mask = mask & above[_rows_of(xp, levels[level - 1].offsets, i)]
        if valid is not None:
            mask = valid if mask is None else mask & valid
        masks.append(mask)
    return masks


def keep(levels: list[Jagged], validities: list[Any], values_validity: Any,
         bounds: list[Bounds]) -> Any:
    """Mask of the visible leaf values: in the window, under rows read, not null."""
    xp = levels[0].xp
    last = levels[-1]
    k, mask = _positions(xp, len(last.values), bounds[-1])
    if any(valid is not None for valid in validities):
        rows = shown(levels, validities, bounds)[-1]
        if len(rows):
            mask = mask & rows[_rows_of(xp, last.offsets, k)]
    return mask if values_validity is None else mask & values_validity


def zero_hidden(result: Any, mask: Any) -> Any:
    """Set ``result`` to 0 where ``mask`` is False (``mask`` runs along the first axis)."""
    xp = module_of(result)
    cond = mask.reshape((len(mask),) + (1,) * (result.ndim - 1))
    return xp.where(cond, result, result.dtype.type(0))


def same_structure(func: str, levels: list[Jagged], bounds: list[Bounds],
                   olevels: list[Jagged]) -> list[Bounds]:
    """Check on the device that ``olevels`` has our rows' lengths at every level.

    The offsets may start elsewhere; the caller has compared the numbers of levels and
    rows. Returns the windows of ``olevels``.
    """
    if all(o.offsets is n.offsets for o, n in zip(olevels, levels, strict=True)):
        return bounds  # the same offsets arrays: the same rows
    xp = levels[0].xp
    obounds = windows(olevels)
    for level, (node, onode) in enumerate(zip(levels, olevels, strict=True)):
        lens = xp.diff(_i64(node.offsets))
        lo = bounds[level][0]
        theirs = aligned(xp.diff(_i64(onode.offsets)), lo, obounds[level][0], len(lens))
        i, inside = _positions(xp, len(lens), bounds[level])
        bad = inside & (lens != theirs)  # host position: the offset after the row
        get_kernel("elementwise", "check_positions", xp)(xp.where(bad, i - lo + 1, -1), ROWS_DIFFER)
    return obounds


def check_padded(arr: Any, levels: list[Jagged], validities: list[Any],
                 bounds: list[Bounds]) -> None:
    """Record on the device a row read that is longer than ``arr``'s padded axis."""
    xp = levels[0].xp
    for level, (node, mask) in enumerate(zip(levels, shown(levels, validities, bounds),
                                             strict=True)):
        lens = xp.diff(_i64(node.offsets))
        too_long = lens > arr.shape[1 + level]
        if mask is not None:
            too_long = too_long & mask
        lo = bounds[level][0]
        positions = xp.where(too_long, xp.arange(len(lens), dtype=np.int64) - lo, -1)
        get_kernel("elementwise", "check_positions", xp)(positions, PADDED_SHORT)


def per_row(arr: Any, levels: list[Jagged]) -> Any:
    """``arr[r]`` at every leaf value of top row ``r``; 0 where no row addresses it."""
    return _repeat(arr, _leaf_offsets(levels), 0, len(levels[-1].values), covered=False)


def padded(arr: Any, levels: list[Jagged], validities: list[Any], bounds: list[Bounds]) -> Any:
    """``arr`` read at every leaf value's padded position (its rows checked on the device)."""
    check_padded(arr, levels, validities, bounds)
    return _read_dense(arr, [node.offsets for node in levels], len(levels[-1].values))


def mapped(func: str, j: Jagged, fn: Callable[[Any], Any]) -> Jagged:
    """``fn`` on the whole leaf values of device ``j``; hidden positions of the result are 0.

    ``fn`` must answer a device array of one value per leaf value.
    """
    levels = _levels(j)
    validities = [node.validity for node in levels]
    values_validity = levels[-1].values_validity
    leaf = levels[-1].values
    with np.errstate(all="ignore"):  # values no one reads are computed too; CuPy never warns
        result = fn(leaf)
    array_module(func, values=leaf, **{"func(values)": result})
    mask = keep(levels, validities, values_validity, windows(levels))
    return _rebuild_whole(levels, zero_hidden(result, mask), validities, values_validity)
