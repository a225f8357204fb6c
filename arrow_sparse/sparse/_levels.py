"""Compressed sparse fibre internals: building, checking and expanding the levels.

A CSF tensor is ``ndim`` index arrays (one coordinate per node of each level) and
``ndim - 1`` pointer arrays (the children of each node in the next level). These
helpers take those arrays, not the tensor: levels are built from sorted coordinates or
from a nested Jagged's offsets, checked, tested for the canonical form and expanded
back to one coordinate per leaf. Every helper works on numpy or CuPy arrays (the
tensor's array module); where a size depends on the data it is read back on the device
(``flatnonzero``, :func:`~arrow_sparse._backend.fetch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _validate as v
from .._backend import fetch, get_kernel, module_of
from ..errors import ArrowSparseValueError
from . import _common as cm

if TYPE_CHECKING:
    from ..jagged import Jagged

__all__ = ["LEVEL_FORMATS", "as_compressed", "build_formatted_levels", "build_levels", "check",
           "check_dense_levels", "check_level_formats", "is_canonical", "jagged_levels",
           "jagged_shape", "jagged_with_nulls", "level_coords"]

#: The level formats of a CSF tensor (TACO's names): a ``"compressed"`` level stores
#: the coordinates present under each parent; a ``"dense"`` level of size ``N`` gives
#: every parent all ``N`` children, coordinates ``0..N-1`` in order.
LEVEL_FORMATS = ("compressed", "dense")

Levels = Sequence[np.ndarray]
Ranges = Sequence[tuple[int, int]]


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
        starts.append(cm.flatnonzero(func, changed))
    starts.append(xp.arange(n, dtype=np.int64))
    indices = [keys[k][starts[k]] for k in range(ndim - 1)] + [keys[-1]]
    indptr = []
    for k in range(ndim - 1):
        ptr = xp.empty(len(starts[k]) + 1, dtype=np.int64)
        ptr[:-1] = xp.searchsorted(starts[k + 1], starts[k]) if k + 1 < ndim - 1 else starts[k]
        ptr[-1] = len(starts[k + 1])
        indptr.append(ptr)
    return indptr, indices


def check_level_formats(func: str, level_formats: Any, ndim: int) -> tuple[str, ...]:
    """Check ``level_formats``: ``ndim`` of ``"dense"``/``"compressed"`` (None: all compressed)."""
    if level_formats is None:
        return ("compressed",) * ndim
    if isinstance(level_formats, str) or not isinstance(level_formats, (tuple, list)):
        msg = (f"{func}: level_formats must be a sequence of 'dense' or 'compressed', got "
               f"{level_formats!r}")
        raise ArrowSparseValueError(msg)
    formats = tuple(level_formats)
    if len(formats) != ndim:
        msg = f"{func}: level_formats has {len(formats)} entries but the tensor has {ndim} levels"
        raise ArrowSparseValueError(msg)
    for k, f in enumerate(formats):
        if not isinstance(f, str) or f not in LEVEL_FORMATS:
            msg = (f"{func}: level_formats[{k}] must be 'dense' or 'compressed', got {f!r}")
            raise ArrowSparseValueError(msg)
    return formats


def build_formatted_levels(func: str, keys: Sequence[np.ndarray], values: np.ndarray,
                           sizes: Sequence[int], formats: Sequence[str]
                           ) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """Build CSF ``(indptr, indices, values)`` with per-level formats from sorted keys.

    ``keys`` are sorted lexicographically (level order) and ``sizes`` the dimension of
    each level. Level by level every entry carries the node it belongs to: a dense
    level of size ``N`` makes ``N`` children of every parent (node ``parent * N +
    coordinate``), a compressed one a child per distinct coordinate under a parent
    (the last compressed level: one leaf per entry, repeats kept). Under a dense last
    level repeated coordinates add up into their one leaf (bools: logical or), and the
    leaves without an entry hold zeros. On the device one synchronisation per inner
    compressed level (its number of nodes).
    """
    xp = module_of(values)
    n = len(values)
    node = xp.zeros(n, dtype=np.int64)  # each entry's node at the level above (root: 0)
    parents = 1
    indptr: list[np.ndarray] = []
    indices: list[np.ndarray] = []
    last = len(keys) - 1
    for k, (key, size, fmt) in enumerate(zip(keys, sizes, formats, strict=True)):
        key = key.astype(np.int64, copy=False)
        if fmt == "dense":
            v.check_nbytes(func, f"dense level {k} ({parents} parents x {size})",
                           parents * size, 8)
            ptr = xp.arange(parents + 1, dtype=np.int64) * size
            indices.append(xp.arange(parents * size, dtype=np.int64) % max(size, 1))
            node = node * size + key
            parents *= size
        elif k == last:
            ptr = xp.searchsorted(node, xp.arange(parents + 1, dtype=np.int64), side="left")
            indices.append(key)
            node = xp.arange(n, dtype=np.int64)
            parents = n
        else:
            new = xp.ones(n, dtype=bool)
            if n > 1:
                new[1:] = (node[1:] != node[:-1]) | (key[1:] != key[:-1])
            starts = cm.flatnonzero(func, new)
            ptr = xp.searchsorted(node[starts], xp.arange(parents + 1, dtype=np.int64),
                                  side="left")
            indices.append(key[starts])
            node = xp.cumsum(new, dtype=np.int64) - 1
            parents = len(starts)
        if k:
            indptr.append(ptr.astype(np.int64, copy=False))
    if formats[last] != "dense":
        return indptr, indices, values
    work = np.dtype(np.int64) if values.dtype.kind == "b" else values.dtype
    leaves = xp.zeros(parents, dtype=work)
    get_kernel("sparse", "scatter_add", xp)(leaves, node, values.astype(work, copy=False))
    return indptr, indices, leaves != 0 if values.dtype.kind == "b" else leaves


def check_dense_levels(func: str, indptr: Levels, indices: Levels, ranges: Ranges,
                       sizes: Sequence[int], formats: Sequence[str]) -> None:
    """ValueError unless every dense level gives each reachable parent all its children.

    A dense level ``k`` of size ``N`` under ``P`` reachable parents holds coordinates
    ``0..N-1`` in order under every parent: its pointers step by ``N`` and its
    coordinates are ``tile(arange(N), P)``. On the device one read per dense level.
    """
    xp = module_of(indices[0])
    for k, fmt in enumerate(formats):
        if fmt != "dense":
            continue
        size = sizes[k]
        lo, hi = ranges[k]
        if k == 0:
            parents = 1
            ok = hi - lo == size
        else:
            plo, phi = ranges[k - 1]
            parents = phi - plo
            ptr = indptr[k - 1][plo:phi + 1]
            steps = xp.arange(parents + 1, dtype=np.int64) * size
            ok = hi - lo == parents * size and not fetch(func, ((ptr - ptr[0]) != steps).any())[0]
        if ok and parents * size:
            expected = xp.arange(parents * size, dtype=np.int64) % size
            ok = not fetch(func, (indices[k][lo:hi] != expected).any())[0]
        if not ok:
            msg = (f"{func}: level {k} is dense but its nodes are not every coordinate "
                   f"0..{size - 1} under each of its {parents} parents; build it with "
                   f"SparseCOO.to_csf(..., level_formats=...) or declare it 'compressed'")
            raise ArrowSparseValueError(msg)


def check(func: str, indptr: Levels, indices: Levels, shape: tuple[int, ...],
          axis_order: tuple[int, ...]) -> None:
    """Check every pointer array and every reachable coordinate (on the device: kernels)."""
    for k, ptr in enumerate(indptr):
        v.check_offsets(func, f"indptr[{k}]", ptr, len(indices[k + 1]), device=True)
    window = None  # the reachable nodes of level k, computed on the device there
    for k, idx in enumerate(indices):
        v.check_in_range(func, f"indices[{k}]", idx, shape[axis_order[k]], window)
        if k < len(indptr):
            window = cm.pointer_window(indptr[k], window)


def is_canonical(indptr: Levels, indices: Levels, ranges: Ranges) -> bool:
    """Every fibre's children strictly increasing, and no childless node.

    ``ranges`` are the reachable ``[lo, hi)`` positions of every level. On the device
    each test reads its answer back (a few synchronisations per level).
    """
    xp = module_of(indices[0])
    lo, hi = ranges[0]
    first = indices[0][lo:hi]
    func = "SparseCSF.is_canonical"
    if fetch(func, (first[1:] <= first[:-1]).any())[0]:
        return False
    increasing = get_kernel("sparse", "lines_strictly_increasing", xp)
    for k, ptr in enumerate(indptr):
        lo, hi = ranges[k]
        part = ptr[lo:hi + 1]
        if fetch(func, (xp.diff(part) <= 0).any())[0] or not increasing(part, indices[k + 1]):
            return False
    return True


def level_coords(indptr: Levels, indices: Levels, ranges: Ranges) -> list[np.ndarray]:
    """Coordinates of every reachable leaf, one array per level (in storage order)."""
    lo, hi = ranges[0]
    coords = [indices[0][lo:hi]]
    for k, ptr in enumerate(indptr):
        lo, hi = ranges[k]
        child_lo, child_hi = ranges[k + 1]
        line = cm.expand_lines(ptr[lo:hi + 1], child_hi - child_lo)
        coords = [c[line] for c in coords]
        coords.append(indices[k + 1][child_lo:child_hi])
    return coords


def as_compressed(indptr: Levels, indices: Levels, values: np.ndarray, shape: tuple[int, ...],
                  axis_order: tuple[int, ...], major: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Return CSR (major 0) / CSC (1) arrays of a 2-d CSF sharing its leaf buffers, or None.

    Possible when level 0 stores ``major`` in non-decreasing order (on the device that
    test reads its answer back).
    """
    if len(shape) != 2 or axis_order[0] != major:
        return None
    top = indices[0]
    if fetch("SparseCSF.to_csr", (top[1:] < top[:-1]).any())[0]:
        return None
    xp = module_of(top)
    ptr0 = indptr[0]
    lengths = xp.zeros(shape[major], dtype=np.int64)
    get_kernel("sparse", "scatter_add", xp)(lengths, top, xp.diff(ptr0))
    start = ptr0[:1].astype(np.int64)
    return xp.concatenate([start, xp.cumsum(lengths) + start]), indices[1], values


def _child_positions(func: str, part: np.ndarray) -> tuple[int, int, np.ndarray, np.ndarray]:
    """``(child_lo, child_hi, line, position)`` of the children of the rows ``part`` points to.

    ``line`` is each child's row (from 0) and ``position`` its place in that row.
    """
    xp = module_of(part)
    child_lo, child_hi = cm.ends(func, part)
    line = cm.expand_lines(part, child_hi - child_lo)
    return child_lo, child_hi, line, xp.arange(child_lo, child_hi, dtype=np.int64) - part[line]


def jagged_levels(func: str, levels: list[Jagged], shape: Sequence[int] | None
                  ) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray, tuple[int, ...]]:
    """``(indptr, indices, values, shape)`` of nested lists, positions as coordinates.

    The pointer levels are the offsets and the values the leaf values (views).
    """
    indptr = [level.offsets for level in levels]
    leaf = levels[-1].leaf_values
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
    return indptr, indices, leaf, jagged_shape(func, shape, fetch(func, *longest))


def jagged_with_nulls(func: str, levels: list[Jagged], shape: Sequence[int] | None
                      ) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """``(indices[ndim, nnz], values, shape)``: the COO of the valid leaves of nested lists.

    Null rows and null elements are not stored: the leaves are gathered (copies).
    """
    leaf = levels[-1].leaf_values
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
    kept = cm.flatnonzero(func, keep)
    indices = xp.stack([c[kept] for c in coords]).astype(np.int64, copy=False)
    return indices, leaf[lo:hi][kept], dims


def jagged_shape(func: str, shape: Sequence[int] | None, longest: list[int]) -> tuple[int, ...]:
    """``shape`` checked to hold the longest list of every level (None: those lengths)."""
    if shape is None:
        return tuple(longest)
    dims = v.check_shape(func, shape, ndim=len(longest))
    for k, (size, need) in enumerate(zip(dims, longest, strict=True)):
        if size < need:
            msg = f"{func}: shape[{k}] = {size} is smaller than the longest list there ({need})"
            raise ArrowSparseValueError(msg)
    return dims
