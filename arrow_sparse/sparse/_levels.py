"""Compressed sparse fibre internals: building, checking, expanding and selecting levels.

Levels are built from sorted coordinates or from a nested Jagged. Every helper works on
numpy or CuPy arrays (the tensor's array module); where a size depends on the data it
is read back on the device (``flatnonzero``, :func:`~arrow_sparse._backend.fetch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _validate as v
from .._backend import fetch, get_kernel, module_of
from ..errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from . import _base as b

if TYPE_CHECKING:
    from ..jagged import Jagged
    from .csf import SparseCSF

__all__ = ["as_compressed", "build_levels", "check", "from_jagged_levels",
           "from_jagged_with_nulls", "getitem", "is_canonical", "jagged_shape", "level_coords",
           "select_fibres"]


def build_levels(func: str, keys: Sequence[np.ndarray]
                 ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Compress lexicographically sorted coordinate columns into CSF ``(indptr, indices)``.

    ``keys[k]`` is the coordinate of every entry at level ``k``. A node of level ``k``
    starts wherever the prefix ``keys[0..k]`` changes; the leaves are all entries
    (repeated coordinates stay repeated leaves). On the device the number of nodes of
    each inner level is read back (one synchronisation per level, naming ``func``).
    """
    xp = module_of(keys[0])
    ndim = len(keys)
    n = len(keys[0])
    changed = xp.zeros(n, dtype=bool)
    if n:
        changed[0] = True
    starts: list[np.ndarray] = []
    for k in range(ndim - 1):
        if n > 1:
            changed[1:] |= keys[k][1:] != keys[k][:-1]
        starts.append(b.flatnonzero(func, changed))
    starts.append(xp.arange(n, dtype=np.int64))
    indices = [keys[k][starts[k]] for k in range(ndim - 1)] + [keys[-1]]
    indptr = []
    for k in range(ndim - 1):
        ptr = xp.empty(len(starts[k]) + 1, dtype=np.int64)
        ptr[:-1] = xp.searchsorted(starts[k + 1], starts[k]) if k + 1 < ndim - 1 else starts[k]
        ptr[-1] = len(starts[k + 1])
        indptr.append(ptr)
    return indptr, indices


def check(csf: SparseCSF) -> None:
    """Check every pointer array and every reachable coordinate (on the device: kernels)."""
    func = "SparseCSF"
    for k, ptr in enumerate(csf.indptr):
        v.check_offsets(func, f"indptr[{k}]", ptr, len(csf.indices[k + 1]), device=True)
    window = None  # the reachable nodes of level k, computed on the device there
    for k in range(csf.ndim):
        v.check_in_range(func, f"indices[{k}]", csf.indices[k], csf.shape[csf.axis_order[k]],
                         window)
        if k < csf.ndim - 1:
            window = b.pointer_window(csf.indptr[k], window)


def is_canonical(csf: SparseCSF) -> bool:
    """Every fibre's children strictly increasing, and no childless node.

    On the device each test reads its answer back (a few synchronisations per level).
    """
    xp = csf.xp
    ranges = csf._ranges()
    lo, hi = ranges[0]
    first = csf.indices[0][lo:hi]
    func = "SparseCSF.is_canonical"
    if fetch(func, (first[1:] <= first[:-1]).any())[0]:
        return False
    increasing = get_kernel("sparse", "lines_strictly_increasing", xp)
    for k, ptr in enumerate(csf.indptr):
        lo, hi = ranges[k]
        part = ptr[lo:hi + 1]
        if fetch(func, (xp.diff(part) <= 0).any())[0] or not increasing(part,
                                                                      csf.indices[k + 1]):
            return False
    return True


def level_coords(csf: SparseCSF) -> list[np.ndarray]:
    """Coordinates of every leaf, one array per level (in storage order)."""
    ranges = csf._ranges()
    lo, hi = ranges[0]
    coords = [csf.indices[0][lo:hi]]
    for k, ptr in enumerate(csf.indptr):
        lo, hi = ranges[k]
        child_lo, child_hi = ranges[k + 1]
        line = b.expand_lines(ptr[lo:hi + 1], child_hi - child_lo)
        coords = [c[line] for c in coords]
        coords.append(csf.indices[k + 1][child_lo:child_hi])
    return coords


def as_compressed(csf: SparseCSF, major: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Return CSR (major 0) / CSC (1) arrays sharing the leaf buffers, or None.

    Possible when level 0 stores ``major`` in non-decreasing order (on the device that
    test reads its answer back).
    """
    if csf.ndim != 2 or csf.axis_order[0] != major:
        return None
    top = csf.indices[0]
    if fetch("SparseCSF.to_csr", (top[1:] < top[:-1]).any())[0]:
        return None
    xp = csf.xp
    ptr0 = csf.indptr[0]
    lengths = xp.zeros(csf.shape[major], dtype=np.int64)
    get_kernel("sparse", "scatter_add", xp)(lengths, top, xp.diff(ptr0))
    start = ptr0[:1].astype(np.int64)
    indptr = xp.concatenate([start, xp.cumsum(lengths) + start])
    return indptr, csf.indices[1], csf.values


def getitem(csf: SparseCSF, key: Any) -> Any:
    """``csf[key]``: the sub-fibre(s) at ``key`` (an int or a slice) of the outermost level."""
    func = "SparseCSF"
    top = csf.indices[0]
    size = csf.shape[csf.axis_order[0]]
    if isinstance(key, slice):
        start, stop, step = key.indices(size)
        if step != 1:
            msg = f"{func}: slices must have step 1; convert with to_coo() for other orders"
            raise ArrowSparseValueError(msg)
        stop = max(start, stop)
        positions = b.flatnonzero(func, (top >= start) & (top < stop))
        return select_fibres(csf, positions, start, stop, drop=False)
    if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)):
        msg = (f"{func}: sub-fibres are selected with an int or a slice along the "
               f"outermost stored dimension, got {type(key).__name__}")
        raise ArrowSparseTypeError(msg)
    i = int(key)
    if not -size <= i < size:
        msg = (f"{func}: index {i} out of range for dimension {csf.axis_order[0]} "
               f"of size {size}")
        raise ArrowSparseIndexError(msg)
    i %= size
    return select_fibres(csf, b.flatnonzero(func, top == i), i, i + 1, drop=True)


def select_fibres(csf: SparseCSF, positions: np.ndarray, start: int, stop: int,
                  drop: bool) -> Any:
    """Select the sub-fibres of the level-0 nodes at ``positions`` (coordinates ``start:stop``).

    Views when those nodes are contiguous; ``drop`` removes the outer dimension (an
    integer index). An unsorted outer level is gathered through COO (copies). On the
    device the first and last positions and their pointers are read back.
    """
    from .coo import SparseCOO
    from .csf import SparseCSF

    func = "SparseCSF"
    a0 = csf.axis_order[0]
    p = q = 0
    if len(positions):
        p, last = b.ends(func, positions)
        q = last + 1
    if q - p != len(positions):  # not contiguous
        coo = csf.to_coo()
        keep = b.flatnonzero(func, (coo.indices[a0] >= start) & (coo.indices[a0] < stop))
        idx = coo.indices[:, keep]
        idx[a0] = idx[a0] - start
        dims = list(csf.shape)
        dims[a0] = stop - start
        sub = SparseCOO._new(idx, coo.values[keep], tuple(dims)).to_csf(csf.axis_order)
        return sub[0] if drop else sub
    if drop:
        if csf.ndim == 1:
            return csf.values[p:q].sum(dtype=csf.dtype)
        shape = tuple(s for d, s in enumerate(csf.shape) if d != a0)
        order = tuple(a - (a > a0) for a in csf.axis_order[1:])
        ptr0 = csf.indptr[0]
        lo, hi = fetch(func, ptr0[p], ptr0[q]) if len(positions) else fetch(func, ptr0[0]) * 2
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


def _child_positions(func: str, part: np.ndarray) -> tuple[int, int, np.ndarray, np.ndarray]:
    """``(child_lo, child_hi, line, position)`` of the children of the rows ``part`` points to.

    ``line`` is each child's row (from 0) and ``position`` its place in that row.
    """
    xp = module_of(part)
    child_lo, child_hi = b.ends(func, part)
    line = b.expand_lines(part, child_hi - child_lo)
    return child_lo, child_hi, line, xp.arange(child_lo, child_hi, dtype=np.int64) - part[line]


def from_jagged_levels(func: str, levels: list[Jagged],
                       shape: Sequence[int] | None) -> SparseCSF:
    """Positions as coordinates: pointer levels are the offsets (views)."""
    from .csf import SparseCSF

    indptr = [level.offsets for level in levels]
    leaf = levels[-1].values
    xp = module_of(leaf)
    indices = [xp.arange(levels[0].num_rows, dtype=np.int64)]
    longest: list[Any] = [levels[0].num_rows]
    lo, hi = 0, levels[0].num_rows
    for k, ptr in enumerate(indptr):
        child_len = len(levels[k + 1]) if k + 1 < len(levels) else len(leaf)
        part = ptr[lo:hi + 1]
        child_lo, child_hi, _, within = _child_positions(func, part)
        pos = xp.zeros(child_len, dtype=np.int64)
        pos[child_lo:child_hi] = within
        indices.append(pos)
        longest.append(xp.diff(part).max() if hi > lo else 0)
        lo, hi = child_lo, child_hi
    dims = jagged_shape(func, shape, fetch(func, *longest))
    return SparseCSF._new(indptr, indices, leaf, dims, tuple(range(len(dims))))


def from_jagged_with_nulls(func: str, levels: list[Jagged],
                           shape: Sequence[int] | None) -> SparseCSF:
    """Null rows and null elements are not stored: gather the leaves through COO."""
    from .coo import SparseCOO

    leaf = levels[-1].values
    xp = module_of(leaf)
    lo, hi = 0, levels[0].num_rows
    coords = [xp.arange(hi, dtype=np.int64)]
    keep = xp.ones(hi, dtype=bool) if levels[0].validity is None else levels[0].validity
    longest: list[Any] = [hi]
    for k, level in enumerate(levels):
        part = level.offsets[lo:hi + 1]
        live = xp.where(keep, xp.diff(part), 0)
        longest.append(live.max() if hi > lo else 0)
        child_lo, child_hi, line, within = _child_positions(func, part)
        coords = [c[line] for c in coords] + [within]
        keep = keep[line]
        child = levels[k + 1] if k + 1 < len(levels) else None
        mask = level.values_validity if child is None else child.validity
        if mask is not None:
            keep = keep & mask[child_lo:child_hi]
        lo, hi = child_lo, child_hi
    dims = jagged_shape(func, shape, fetch(func, *longest))
    kept = b.flatnonzero(func, keep)
    indices = xp.stack([c[kept] for c in coords]).astype(np.int64, copy=False)
    return SparseCOO._new(indices, leaf[lo:hi][kept], dims, canonical=None).to_csf()


def jagged_shape(func: str, shape: Sequence[int] | None, longest: list[int]) -> tuple[int, ...]:
    if shape is None:
        return tuple(longest)
    dims = v.check_shape(func, shape, ndim=len(longest))
    for k, (size, need) in enumerate(zip(dims, longest, strict=True)):
        if size < need:
            msg = f"{func}: shape[{k}] = {size} is smaller than the longest list there ({need})"
            raise ArrowSparseValueError(msg)
    return dims
