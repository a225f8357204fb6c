"""Compressed sparse fibre internals: building levels, checking, selecting sub-fibres.

Levels are built from sorted coordinates or from a nested Jagged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from . import _base as b

if TYPE_CHECKING:
    from ..jagged import Jagged
    from .csf import SparseCSF

__all__ = ["array_list", "build_levels", "fibres_strictly_increasing", "from_jagged_levels",
           "from_jagged_with_nulls", "is_canonical", "jagged_shape", "select_fibres"]


def build_levels(keys: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Compress lexicographically sorted coordinate columns into CSF ``(indptr, indices)``.

    ``keys[k]`` is the coordinate of every entry at level ``k``. A node of level ``k``
    starts wherever the prefix ``keys[0..k]`` changes; the leaves are all entries
    (repeated coordinates stay repeated leaves).
    """
    ndim = len(keys)
    n = len(keys[0])
    changed = np.zeros(n, dtype=bool)
    if n:
        changed[0] = True
    starts: list[np.ndarray] = []
    for k in range(ndim - 1):
        if n > 1:
            changed[1:] |= keys[k][1:] != keys[k][:-1]
        starts.append(np.flatnonzero(changed))
    starts.append(np.arange(n, dtype=np.int64))
    indices = [keys[k][starts[k]] for k in range(ndim - 1)] + [keys[-1]]
    indptr = []
    for k in range(ndim - 1):
        ptr = np.empty(len(starts[k]) + 1, dtype=np.int64)
        ptr[:-1] = np.searchsorted(starts[k + 1], starts[k]) if k + 1 < ndim - 1 else starts[k]
        ptr[-1] = len(starts[k + 1])
        indptr.append(ptr)
    return indptr, indices


def fibres_strictly_increasing(ptr: np.ndarray, idx: np.ndarray) -> bool:
    """Whether ``idx`` increases strictly within each ``ptr`` range (ptr starts at 0)."""
    n = len(idx)
    if n < 2:
        return True
    ok = idx[1:] > idx[:-1]
    inner = ptr[1:-1]
    inner = inner[(inner > 0) & (inner < n)]
    ok[inner - 1] = True
    return bool(ok.all())


def is_canonical(csf: SparseCSF) -> bool:
    """Every fibre's children strictly increasing, and no childless node."""
    ranges = csf._ranges()
    lo, hi = ranges[0]
    first = csf.indices[0][lo:hi]
    if (first[1:] <= first[:-1]).any():
        return False
    for k, ptr in enumerate(csf.indptr):
        lo, hi = ranges[k]
        if (np.diff(ptr[lo:hi + 1]) <= 0).any():
            return False
        child_lo, child_hi = ranges[k + 1]
        sub = ptr[lo:hi + 1] - child_lo
        if not fibres_strictly_increasing(sub, csf.indices[k + 1][child_lo:child_hi]):
            return False
    return True


def select_fibres(csf: SparseCSF, positions: np.ndarray, start: int, stop: int,
                  drop: bool) -> Any:
    """Select the sub-fibres of the level-0 nodes at ``positions`` (coordinates ``start:stop``).

    Views when those nodes are contiguous; ``drop`` removes the outer dimension (an
    integer index). An unsorted outer level is gathered through COO (copies).
    """
    from .coo import SparseCOO
    from .csf import SparseCSF

    a0 = csf.axis_order[0]
    contiguous = len(positions) == 0 or positions[-1] - positions[0] + 1 == len(positions)
    if not contiguous:
        coo = csf.to_coo()
        keep = (coo.indices[a0] >= start) & (coo.indices[a0] < stop)
        idx = coo.indices[:, keep].copy()
        idx[a0] -= start
        dims = list(csf.shape)
        dims[a0] = stop - start
        sub = SparseCOO._new(idx, coo.values[keep], tuple(dims)).to_csf(csf.axis_order)
        return sub[0] if drop else sub
    p, q = (int(positions[0]), int(positions[-1]) + 1) if len(positions) else (0, 0)
    if drop:
        if csf.ndim == 1:
            return csf.values[p:q].sum(dtype=csf.dtype)
        shape = tuple(s for d, s in enumerate(csf.shape) if d != a0)
        order = tuple(a - (a > a0) for a in csf.axis_order[1:])
        ptr0 = csf.indptr[0]
        lo, hi = (int(ptr0[p]), int(ptr0[q])) if len(positions) else (int(ptr0[0]),) * 2
        indices = (csf.indices[1][lo:hi],) + csf.indices[2:]
        indptr = (csf.indptr[1][lo:hi + 1],) + csf.indptr[2:] if csf.ndim > 2 else ()
        values = csf.values[lo:hi] if csf.ndim == 2 else csf.values
        return SparseCSF._new(indptr, indices, values, shape, order, csf._canonical or None)
    shape_list = list(csf.shape)
    shape_list[a0] = stop - start
    top = csf.indices[0][p:q]
    top = top - start if start else top
    indptr = (csf.indptr[0][p:q + 1],) + csf.indptr[1:] if csf.ndim > 1 else ()
    values = csf.values[p:q] if csf.ndim == 1 else csf.values
    return SparseCSF._new(indptr, (top,) + csf.indices[1:], values, tuple(shape_list),
                          csf.axis_order, csf._canonical or None)


def array_list(func: str, arg: str, x: Any, count: int) -> tuple[np.ndarray, ...]:
    if isinstance(x, np.ndarray) and x.ndim == 2 and x.dtype.kind in "iu":
        x = list(x)
    if not isinstance(x, (list, tuple)):
        msg = f"{func}: {arg} must be a list of {count} index arrays, got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    if len(x) != count:
        msg = f"{func}: {arg} has {len(x)} arrays but the shape needs {count}"
        raise ArrowSparseValueError(msg)
    return tuple(b.index_array(func, f"{arg}[{k}]", a) for k, a in enumerate(x))


def from_jagged_levels(func: str, levels: list[Jagged],
                       shape: Sequence[int] | None) -> SparseCSF:
    """Positions as coordinates: pointer levels are the offsets (views)."""
    from .csf import SparseCSF

    indptr = [level.offsets for level in levels]
    leaf = levels[-1].values
    assert isinstance(leaf, np.ndarray)
    indices = [np.arange(levels[0].num_rows, dtype=np.int64)]
    longest = [levels[0].num_rows]
    lo, hi = 0, levels[0].num_rows
    for k, ptr in enumerate(indptr):
        child_len = len(levels[k + 1]) if k + 1 < len(levels) else len(leaf)
        pos = np.zeros(child_len, dtype=np.int64)
        part = ptr[lo:hi + 1]
        child_lo, child_hi = int(part[0]), int(part[-1])
        counts = np.diff(part)
        seg_starts = np.repeat(part[:-1], counts)
        pos[child_lo:child_hi] = np.arange(child_lo, child_hi) - seg_starts
        indices.append(pos)
        longest.append(int(counts.max()) if len(counts) else 0)
        lo, hi = child_lo, child_hi
    dims = jagged_shape(func, shape, longest)
    return SparseCSF._new(indptr, indices, leaf, dims, tuple(range(len(dims))))


def from_jagged_with_nulls(func: str, levels: list[Jagged],
                           shape: Sequence[int] | None) -> SparseCSF:
    """Null rows and null elements are not stored: gather the leaves through COO."""
    from .coo import SparseCOO

    leaf = levels[-1].values
    assert isinstance(leaf, np.ndarray)
    lo, hi = 0, levels[0].num_rows
    coords = [np.arange(hi, dtype=np.int64)]
    keep = np.ones(hi, dtype=bool) if levels[0].validity is None else levels[0].validity.copy()
    longest = [hi]
    for k, level in enumerate(levels):
        part = level.offsets[lo:hi + 1]
        counts = np.diff(part)
        live = np.where(keep, counts, 0)
        longest.append(int(live.max()) if len(live) else 0)
        coords = [np.repeat(c, counts) for c in coords]
        child_lo, child_hi = int(part[0]), int(part[-1])
        coords.append(np.arange(child_lo, child_hi) - np.repeat(part[:-1], counts))
        keep = np.repeat(keep, counts)
        child = levels[k + 1] if k + 1 < len(levels) else None
        mask = level.values_validity if child is None else child.validity
        if mask is not None:
            keep &= mask[child_lo:child_hi]
        lo, hi = child_lo, child_hi
    dims = jagged_shape(func, shape, longest)
    indices = np.array([c[keep] for c in coords], dtype=np.int64).reshape(len(dims), -1)
    values = leaf[lo:hi][keep]
    return SparseCOO._new(indices, values, dims, canonical=None).to_csf()


def jagged_shape(func: str, shape: Sequence[int] | None, longest: list[int]) -> tuple[int, ...]:
    if shape is None:
        return tuple(longest)
    dims = b.check_shape(func, shape, ndim=len(longest))
    for k, (size, need) in enumerate(zip(dims, longest, strict=True)):
        if size < need:
            msg = f"{func}: shape[{k}] = {size} is smaller than the longest list there ({need})"
            raise ArrowSparseValueError(msg)
    return dims
