"""Array helpers the sparse formats share: sorting, run sums, nonzero, ravelling, pointers.

They work on numpy or CuPy arrays (the array module of their inputs): a tensor whose
arrays are on a CUDA device runs its operations there, with the CUDA twins of the
sparse kernels (see docs/gpu.md, "Dispatch"). Argument checks live in
:mod:`arrow_sparse._validate`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _validate as v
from .._backend import array_module, device_checks, fetch, get_kernel, is_cupy_array, module_of
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from .tensor import SparseTensor

#: A counting-sort pass is used for a key whose range is at most this many times the
#: number of entries (plus a constant); wider keys are sorted with numpy's argsort.
_RADIX_FACTOR = 4


def checked(method: Callable[..., Any]) -> Callable[..., Any]:
    """End a public method with its device checks (deferred; a no-op on the host).

    What its kernels recorded in the device error word (an index out of range, pointers
    outside the entries) is raised by the next check, naming ``<Class>.<method>``.
    """
    name = method.__name__

    @functools.wraps(method)
    def run(self: SparseTensor, *args: Any, **kwargs: Any) -> Any:
        out = method(self, *args, **kwargs)
        device_checks(f"{type(self).__name__}.{name}", self.xp)
        return out
    return run



def pointer_window(ptr: np.ndarray, window: Any = None) -> Any:
    """Return the entries ``[ptr[lo], ptr[hi])`` that the pointers ``ptr[lo:hi + 1]`` address.

    ``window`` is ``(lo, hi)``, the nodes of ``ptr``'s own level (None: all of them,
    ``(0, len(ptr) - 1)``). On the host the result is ``(start, stop)`` ints. On the
    device nothing is read: ``window`` and the result are 2-element int64 device arrays
    (so the window of each level of a CSF tensor follows from the one above), and
    positions are clipped into ``ptr`` so that unchecked pointers index inside it.
    """
    last = len(ptr) - 1
    if not is_cupy_array(ptr):
        lo, hi = (0, last) if window is None else window
        return int(ptr[lo]), int(ptr[hi])
    xp = module_of(ptr)
    at = xp.asarray(np.array([0, last], dtype=np.int64)) if window is None else window
    return ptr[xp.minimum(xp.maximum(at, 0), max(last, 0))].astype(np.int64)


def ends(func: str, ptr: np.ndarray) -> tuple[int, int]:
    """``(ptr[0], ptr[-1])`` on the host: one read on the device, raising its checks at once."""
    first, last = fetch(func, ptr[0], ptr[-1])
    return first, last


def sum_dtype(dtype: np.dtype) -> np.dtype:
    """Return the dtype numpy's ``sum`` returns for an array of ``dtype``."""
    out: np.dtype = np.add.reduce(np.zeros(1, dtype=dtype)).dtype
    return out


def index_dtype_for(*bounds: int) -> np.dtype:
    """int32 when every bound fits, else int64."""
    return np.dtype(np.int32) if max(bounds, default=0) <= np.iinfo(np.int32).max \
        else np.dtype(np.int64)


# ----------------------------------------------------------- lexicographic order
def lex_order(keys: Sequence[np.ndarray], func: str = "lex_order") -> tuple[bool, bool]:
    """Whether the rows ``(keys[0][i], keys[1][i], ...)`` are sorted, and strictly so.

    On the device each answer read is a :func:`~arrow_sparse._backend.fetch` naming
    ``func`` (two keys: one, by the ``lex_order2`` kernel; more: one per key).
    """
    n = len(keys[0]) if len(keys) else 0
    if n < 2:
        return True, True
    xp = module_of(keys[0])
    if len(keys) == 2:
        return get_kernel("sparse", "lex_order2", xp)(keys[0], keys[1])  # type: ignore[no-any-return]
    decided = xp.zeros(n - 1, dtype=bool)
    for key in keys:
        before, after = key[:-1], key[1:]
        if fetch(func, (~decided & (after < before)).any())[0]:
            return False, False
        decided |= after > before
    return True, bool(fetch(func, decided.all())[0])


def sort_permutation(keys: Sequence[np.ndarray], sizes: Sequence[int]) -> np.ndarray | None:
    """Stable permutation sorting rows by ``keys[0]``, then ``keys[1]``, ...; None if sorted.

    An LSD radix sort: one stable pass per key from the last, a counting sort when the
    key's range (``sizes[k]``) is small next to the number of rows, numpy's stable
    argsort otherwise. O(nnz) per pass for the usual shapes.
    """
    if lex_order(keys)[0]:
        return None
    n = len(keys[0])
    if all(counting_range(size, n) for size in sizes):
        radix = get_kernel("sparse", "radix_argsort")
        return radix(list(keys), [int(s) for s in sizes])  # type: ignore[no-any-return]
    perm = np.arange(n, dtype=np.int64)
    counting = get_kernel("sparse", "radix_argsort")
    for key, size in zip(reversed(keys), reversed(sizes), strict=True):
        gathered = key[perm]
        if counting_range(size, n):
            order = counting([gathered], [int(size)])
        else:
            order = np.argsort(gathered, kind="stable")
        perm = perm[order]
    return perm


def counting_range(size: int, n: int, factor: int = _RADIX_FACTOR) -> bool:
    """Whether a counting sort of ``n`` keys in ``[0, size)`` pays (the range is small)."""
    return int(size) <= factor * n + (1 << 16)


def sorted_coords(keys: Sequence[np.ndarray], sizes: Sequence[int],
                  values: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Rows ``(keys[0][i], keys[1][i], ...)`` and their values sorted lexicographically, stably.

    The inputs themselves when already sorted. When the keys split into a leading and
    a trailing group whose raveled ranges are both small: two stable counting sorts
    (by the trailing group, then by the leading one), in parallel, as CSR is built;
    else an LSD radix sort of a permutation, one pass per key. On the device: one
    stable radix sort of the raveled keys, without checking the order first (that
    would synchronise).
    """
    keys = list(keys)
    xp = module_of(values)
    if xp is not np:
        perm = get_kernel("sparse", "radix_argsort", xp)(keys, [int(s) for s in sizes])
        return [k[perm] for k in keys], values[perm]
    if lex_order(keys)[0]:
        return keys, values
    n = len(keys[0])
    dims = [int(s) for s in sizes]
    # both groups' ranges within the number of rows: the counts stay smaller than the data
    split = next((j for j in range(1, len(dims)) if counting_range(math.prod(dims[:j]), n, 1)
                  and counting_range(math.prod(dims[j:]), n, 1)), None)
    if split is None:
        perm = sort_permutation(keys, sizes)
        assert perm is not None
        return [k[perm] for k in keys], values[perm]
    dtype = np.result_type(*keys)
    head, tail = dims[:split], dims[split:]
    major = _ravel(keys[:split], head)
    ptr, minor, vals = get_kernel("sparse", "coo_to_compressed")(
        major, _ravel(keys[split:], tail), values, math.prod(head), math.prod(tail))
    major = get_kernel("sparse", "expand_major")(ptr, np.empty(n, dtype=major.dtype))
    return [*_unravel(major, head, dtype), *_unravel(minor, tail, dtype)], vals


def _ravel(keys: list[np.ndarray], dims: list[int]) -> np.ndarray:
    return keys[0] if len(keys) == 1 else np.ravel_multi_index(tuple(keys), dims)


def _unravel(flat: np.ndarray, dims: list[int], dtype: np.dtype) -> list[np.ndarray]:
    if len(dims) == 1:
        return [flat.astype(dtype, copy=False)]
    return [k.astype(dtype) for k in np.unravel_index(flat, dims)]


def sum_sorted_runs(keys: Sequence[np.ndarray], values: np.ndarray
                    ) -> tuple[list[np.ndarray], np.ndarray]:
    """Distinct rows of lexicographically sorted keys and the sum of each run of equal rows.

    Sums are added left to right (bools: logical or) by the ``sum_duplicates`` kernel
    over the run numbers as one line; each run's keys are scattered to its number.
    New arrays (numpy or CuPy).
    """
    xp = module_of(values)
    n = len(values)
    changed = xp.zeros(n, dtype=bool)
    if n:
        changed[0] = True
    for key in keys:
        changed[1:] |= key[1:] != key[:-1]
    run = xp.cumsum(changed, dtype=np.int64) - 1
    line = xp.asarray(np.array([0, n], dtype=np.int64))
    _, ids, sums = get_kernel("sparse", "sum_duplicates", xp)(line, run, values)
    distinct = []
    for key in keys:
        out = xp.empty(len(ids), dtype=key.dtype)
        out[run] = key  # every entry of a run writes the same coordinate
        distinct.append(out)
    return distinct, sums


def dense_operand(func: str, arg: str, x: Any) -> np.ndarray:
    """Return a numeric numpy or CuPy array (Arrow arrays and sequences accepted).

    Sparse inputs are refused.
    """
    if isinstance(x, SparseTensor):
        msg = (f"{func}: {arg} must be dense here, got a {type(x).__name__}; "
               "densify one operand with .to_dense()")
        raise ArrowSparseTypeError(msg)
    return v.as_dense_operand(func, arg, x)


def broadcast_gather(func: str, other: np.ndarray, shape: tuple[int, ...],
                     coords: Sequence[np.ndarray]) -> np.ndarray:
    """``broadcast_to(other, shape)[coords]`` without materialising the broadcast.

    A dimension of ``other`` of size 1 is indexed by 0 instead of its coordinate.
    """
    try:
        full = np.broadcast_shapes(tuple(other.shape), tuple(shape))
    except ValueError:
        full = None
    if full != tuple(shape):
        msg = f"{func}: other of shape {other.shape} does not broadcast to the shape {shape}"
        raise ArrowSparseValueError(msg)
    padded = other.reshape((1,) * (len(shape) - other.ndim) + tuple(other.shape))
    gathered: np.ndarray = padded[tuple(c if n != 1 else 0
                                        for c, n in zip(coords, padded.shape, strict=True))]
    return gathered


def multiplier(func: str, values: np.ndarray, other: Any, shape: tuple[int, ...],
               coords: Callable[[], Sequence[np.ndarray]]) -> Any:
    """Factor of every stored entry in ``values * other``.

    A scalar ``other`` as it is (a 0-d host array as a numpy scalar, same promotion);
    an array broadcast to ``shape`` is gathered at the entries' coordinates
    (``coords()``, called only then). An array on another device than ``values``
    raises the mixed-device TypeError.
    """
    arr = dense_operand(func, "other", other)
    if arr.ndim or is_cupy_array(arr):
        array_module(func, values=values, other=arr)
    if arr.ndim == 0:
        return other if np.isscalar(other) else arr if is_cupy_array(arr) else arr[()]
    return broadcast_gather(func, arr, shape, coords())


def flatnonzero(func: str, mask: np.ndarray) -> np.ndarray:
    """Positions (int64) of the nonzero elements of a 1-D array.

    On the device their number is read back with :func:`~arrow_sparse._backend.fetch`
    (one synchronisation, raising the device checks recorded so far, naming ``func``).
    """
    if not is_cupy_array(mask):
        return np.flatnonzero(mask)
    return get_kernel("sparse", "flatnonzero", module_of(mask))(
        func, mask)  # type: ignore[no-any-return]


def nonzero(func: str, arr: np.ndarray) -> tuple[np.ndarray, ...]:
    """Coordinates (int64, row-major order) of the nonzero elements, as ``numpy.nonzero``.

    On the device one synchronisation (their number), as :func:`flatnonzero`.
    """
    if not is_cupy_array(arr):
        return np.nonzero(arr)
    return tuple(unravel(flatnonzero(func, arr.reshape(-1)), arr.shape))


def unravel(flat: np.ndarray, dims: Sequence[int]) -> list[np.ndarray]:
    """Row-major coordinates of the flat positions ``flat`` (all inside ``dims``)."""
    if len(flat) == 0 or len(dims) == 1:
        return [flat] * len(dims)
    coords = []
    for d in reversed(dims):
        coords.append(flat % d)
        flat = flat // d
    return coords[::-1]


def ravel_coords(coords: Sequence[np.ndarray], dims: Sequence[int]) -> np.ndarray:
    """Row-major flat int64 position of each coordinate row.

    numpy checks the coordinates (``ValueError`` outside ``dims``); on the device they
    are combined unchecked, and the kernels that take the positions re-check them.
    """
    if not is_cupy_array(coords[0]):
        return np.ravel_multi_index(tuple(coords), tuple(dims)).astype(np.int64, copy=False)
    flat = coords[0].astype(np.int64)
    for c, d in zip(coords[1:], dims[1:], strict=True):
        flat = flat * np.int64(d) + c
    return flat


def expand_lines(indptr: np.ndarray, count: int) -> np.ndarray:
    """Line of each of the ``count`` entries ``indptr`` addresses (int64), from ``indptr[0]``.

    ``repeat(arange(len(indptr) - 1), diff(indptr))``: numpy's on the host (decreasing
    pointers raise), the ``expand_major`` kernel on the device (it writes inside ``out``
    whatever the pointers).
    """
    xp = module_of(indptr)
    if xp is np:
        return np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    out = xp.empty(count, dtype=np.int64)
    return get_kernel("sparse", "expand_major", xp)(indptr, out)  # type: ignore[no-any-return]
