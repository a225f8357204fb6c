"""Checks and input handling shared by the embedding modules (see :mod:`arrow_sparse.embedding`).

The forward (:func:`~arrow_sparse.embedding.lookup`), the backward
(:func:`~arrow_sparse.embedding.lookup_backward`) and the per-sample weights' gradient
read bags through one function, :func:`bags`, so that they agree on every input form
(1-D ids with offsets, 2-D ids, Jagged and Arrow lists, null bags, null ids, weights).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from . import _arrow
from . import _validate as v
from ._backend import get_kernel
from .errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from .jagged import Jagged

MODES = ("sum", "mean", "max")


@functools.cache
def kernel(name: str) -> Callable[..., Any]:
    """Kernel ``name`` of the embedding family."""
    return get_kernel("embedding", name)


# =============================================================================== checks
def is_list_input(x: Any) -> bool:
    """Whether ``x`` is a Jagged or an Arrow list array (bags that carry their offsets)."""
    return isinstance(x, Jagged) or (isinstance(x, (pa.Array, pa.ChunkedArray))
                                     and _arrow.is_list_type(x.type))


def check_table(func: str, table: Any, arg: str = "table") -> np.ndarray:
    """Check a 2-D numpy table of an integer, float32 or float64 dtype."""
    if not isinstance(table, np.ndarray):
        msg = (f"{func}: {arg} must be a numpy array [num_embeddings, dim], "
               f"got {type(table).__name__}")
        raise ArrowSparseTypeError(msg)
    if table.dtype.kind not in "iuf" or table.dtype == np.float16:
        hint = " (cast it with .astype(np.float32))" if table.dtype == np.float16 else ""
        msg = (f"{func}: {arg} must have an integer, float32 or float64 dtype, "
               f"got {table.dtype}{hint}")
        raise ArrowSparseTypeError(msg)
    if table.ndim != 2:
        msg = f"{func}: {arg} must be 2-dimensional [num_embeddings, dim], got shape {table.shape}"
        raise ArrowSparseValueError(msg)
    return table


def check_mode(func: str, mode: Any) -> str:
    """``"sum"``, ``"mean"`` or ``"max"``."""
    if not isinstance(mode, str) or mode not in MODES:
        msg = f"{func}: mode must be 'sum', 'mean' or 'max', got {mode!r}"
        raise ArrowSparseValueError(msg)
    return mode


def check_scalar(func: str, arg: str, x: Any, *, positive: bool = False) -> float:
    """Check a finite non-negative (or positive) real number."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer,
                                                               np.floating)):
        msg = f"{func}: {arg} must be a real number, got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    value = float(x)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        kind = "positive" if positive else "non-negative"
        msg = f"{func}: {arg} must be a finite {kind} number, got {x}"
        raise ArrowSparseValueError(msg)
    return value


def check_writable(func: str, arg: str, x: Any, shape: tuple[int, ...],
                   dtype: np.dtype | None = None) -> np.ndarray:
    """Check an array updated in place: float32/64, the shape, writable, C-contiguous."""
    if not isinstance(x, np.ndarray):
        msg = f"{func}: {arg} must be a numpy array (updated in place), got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    if x.dtype not in (np.float32, np.float64) or (dtype is not None and x.dtype != dtype):
        want = dtype if dtype is not None else "float32 or float64"
        msg = f"{func}: {arg} must have dtype {want}, got {x.dtype}"
        raise ArrowSparseTypeError(msg)
    if x.shape != shape:
        msg = f"{func}: {arg} must have shape {shape}, got {x.shape}"
        raise ArrowSparseValueError(msg)
    if not x.flags.writeable or not x.flags.c_contiguous:
        msg = (f"{func}: {arg} must be a writable, C-contiguous array (a table from "
               "load_table(path) is a read-only memory map: use load_table(path, "
               "writable=True) to update the file in place, or mmap=False for a copy)")
        raise ArrowSparseValueError(msg)
    return x


# ================================================================================= bags
@dataclass(frozen=True)
class Bags:
    """Bags of ids in one normal form: bag ``b`` is ``ids[offsets[b]:offsets[b + 1]]``.

    ``offsets`` start at 0 and end at ``len(ids)``; every id is in range. Null bags and
    null ids are already left out (a null bag is empty here, and ``valid`` remembers it).
    ``ids[j]`` is the caller's flat id number ``base + j``, or ``positions[j]`` when ids
    had to be left out.
    """

    ids: np.ndarray
    offsets: np.ndarray
    weights: np.ndarray | None
    valid: np.ndarray | None
    positions: np.ndarray | None
    base: int
    num_ids: int
    shape: tuple[int, ...]
    arrow: bool

    @property
    def num_bags(self) -> int:
        """Number of bags (lookup outputs)."""
        return len(self.offsets) - 1

    @property
    def sizes(self) -> np.ndarray:
        """Ids per bag (null ids not counted; null bags 0)."""
        return np.diff(self.offsets)

    def bag_of_ids(self) -> np.ndarray:
        """Return the bag of each id (int64)."""
        return np.repeat(np.arange(self.num_bags, dtype=np.int64), self.sizes)

    def scatter(self, per_id: np.ndarray) -> np.ndarray:
        """Per-id values back at the caller's positions: ``[num_ids]`` then ``shape``."""
        out = np.zeros(self.num_ids, dtype=per_id.dtype)
        if self.positions is None:
            out[self.base:self.base + len(per_id)] = per_id
        else:
            out[self.positions] = per_id
        return out.reshape(self.shape)


def bags(func: str, ids: Any, offsets: Any, weights: Any, bound: int) -> Bags:
    """Read any form of bags (see :func:`~arrow_sparse.embedding.lookup`) as :class:`Bags`.

    1-D ids without offsets are bags of one id each; 2-D ids ``[n, k]`` are ``n`` bags
    of ``k``. ``weights`` take the form of the ids (a list array for list ids).
    """
    if isinstance(ids, (pa.Array, pa.ChunkedArray)) and is_list_input(ids):
        return _list_bags(func, Jagged.from_arrow(ids), offsets, weights, bound, True)
    if isinstance(ids, Jagged):
        return _list_bags(func, ids, offsets, weights, bound, False)
    ndim = 2 if ndim_of(ids) == 2 else 1
    arr = v.as_index_array(func, "ids", ids, ndim=ndim)
    w = None if weights is None else _flat_weights(func, weights, arr.shape)
    if ndim == 2:
        if offsets is not None:
            msg = f"{func}: offsets must not be given with 2-D ids (each row is a bag)"
            raise ArrowSparseValueError(msg)
        n, k = arr.shape
        offs = np.arange(n + 1, dtype=np.int64) * k
        flat = arr.reshape(-1)
    elif offsets is None:
        flat, offs = arr, np.arange(len(arr) + 1, dtype=np.int64)
    else:
        flat = arr
        offs = v.check_offsets(func, "offsets", offsets, len(arr)).astype(np.int64, copy=False)
    start, stop = int(offs[0]), int(offs[-1])
    used = flat[start:stop]
    _check_range(func, used, bound, None, start)
    return Bags(_id_dtype(used), offs - start if start else offs,
                None if w is None else w[start:stop], None, None, start, arr.size, arr.shape,
                False)


def ndim_of(ids: Any) -> int:
    """Dimensions of array-like ids (1 for Arrow, and for ragged lists, reported later)."""
    if isinstance(ids, (pa.Array, pa.ChunkedArray)):
        return 1
    try:
        return int(np.ndim(ids))
    except (ValueError, TypeError):
        return 1


def _list_bags(func: str, jag: Jagged, offsets: Any, weights: Any, bound: int,
               arrow: bool) -> Bags:
    if offsets is not None:
        msg = f"{func}: offsets must not be given with list ids (they carry their own)"
        raise ArrowSparseValueError(msg)
    values = jag.values
    if isinstance(values, np.ndarray) and values.size == 0 and values.dtype.kind == "f":
        values = values.astype(np.int64)  # from_list([[]]) infers float64
    if not isinstance(values, np.ndarray) or values.ndim != 1 or values.dtype.kind not in "iu":
        msg = f"{func}: ids must be a Jagged (or Arrow list array) of 1-D integers"
        raise ArrowSparseTypeError(msg)
    offs = np.asarray(jag.offsets, dtype=np.int64)
    start, stop = int(offs[0]), int(offs[-1])
    lengths = np.diff(offs)
    keep = None  # which of values[start:stop] are read: not null, not in a null bag
    if jag.validity is not None and np.any(lengths[~jag.validity]):
        keep = np.repeat(jag.validity, lengths)
    if jag.values_validity is not None:
        nonnull = jag.values_validity[start:stop]
        if not nonnull.all():
            keep = nonnull if keep is None else keep & nonnull
    used = values[start:stop]
    w = None
    if weights is not None:
        w, wvalid = _list_weights(func, weights, offs, jag.num_rows)
        if wvalid is not None:
            bad = ~wvalid if keep is None else keep & ~wvalid  # null bags are empty or
            if bad.any():                                      # left out by keep
                v.fail_value(func, "per_sample_weights", "must not be null where the id is "
                             "not", start + v.first_true(bad), None)
    positions = None
    if keep is not None:
        idx = np.flatnonzero(keep)
        positions = start + idx
        before = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum(keep, out=before[1:])
        offs = before[offs - start]
        used = used[idx]
        w = None if w is None else w[idx]
        _check_range(func, v.as_index_array(func, "ids", used), bound, positions, 0)
    else:
        offs = offs - start if start else offs
        _check_range(func, v.as_index_array(func, "ids", used), bound, None, start)
    ids = _id_dtype(v.as_index_array(func, "ids", used))
    return Bags(ids, offs, w, jag.validity, positions, start, len(values), (len(values),),
                arrow)


def _id_dtype(ids: np.ndarray) -> np.ndarray:
    """int32 and int64 ids are kept (the kernels take both); others become int64."""
    return ids if ids.dtype in (np.int32, np.int64) else ids.astype(np.int64)


def _check_range(func: str, ids: np.ndarray, bound: int, positions: np.ndarray | None,
                 base: int) -> None:
    if not len(ids) or (ids.min() >= 0 and ids.max() < bound):
        return
    j = v.first_true((ids < 0) | (ids >= bound))
    pos = int(positions[j]) if positions is not None else base + j
    msg = v.message(func, "ids", f"out of range [0, {bound})", pos, ids[j])
    raise ArrowSparseIndexError(msg)


def _float(func: str, w: np.ndarray) -> np.ndarray:
    if w.dtype.kind == "f" and w.dtype != np.float16:
        return w
    if w.dtype.kind not in "biuf":
        msg = f"{func}: per_sample_weights must be numeric, got {w.dtype}"
        raise ArrowSparseTypeError(msg)
    return w.astype(np.float64)


def _flat_weights(func: str, weights: Any, shape: tuple[int, ...]) -> np.ndarray:
    if is_list_input(weights):
        msg = (f"{func}: per_sample_weights must be a flat array like the ids (one weight "
               "per id), got a list array")
        raise ArrowSparseTypeError(msg)
    w = v.as_values_array(func, "per_sample_weights", weights, min_ndim=0)
    if w.shape != shape:
        msg = f"{func}: per_sample_weights must have the shape of ids {shape}, got {w.shape}"
        raise ArrowSparseValueError(msg)
    return _float(func, w).reshape(-1)


def _list_weights(func: str, weights: Any, offs: np.ndarray, num_rows: int
                  ) -> tuple[np.ndarray, np.ndarray | None]:
    """Weights of list ids, aligned with ``values[offs[0]:offs[-1]]``, and their validity."""
    if not is_list_input(weights):
        msg = (f"{func}: per_sample_weights must be a Jagged or an Arrow list array like the "
               f"ids (one list of weights per bag), got {type(weights).__name__}")
        raise ArrowSparseTypeError(msg)
    wj = weights if isinstance(weights, Jagged) else Jagged.from_arrow(weights)
    woffs = np.asarray(wj.offsets, dtype=np.int64)
    if len(woffs) != num_rows + 1 or not np.array_equal(np.diff(woffs), np.diff(offs)):
        msg = f"{func}: per_sample_weights must have the same bag lengths as ids"
        raise ArrowSparseValueError(msg)
    if isinstance(wj.values, Jagged) or np.ndim(wj.values) != 1:
        msg = f"{func}: per_sample_weights must hold one scalar weight per id"
        raise ArrowSparseTypeError(msg)
    w = _float(func, v.as_values_array(func, "per_sample_weights", wj.values))
    lo, hi = int(woffs[0]), int(woffs[-1])
    wvalid = None if wj.values_validity is None else wj.values_validity[lo:hi]
    return w[lo:hi], wvalid


# ============================================================================== threads
def run_in_threads(tasks: Sequence[Callable[[], None]], workers: int | None) -> None:
    """Run every task, in a thread pool when there are several.

    Each pool thread runs Numba's parallel kernels on one thread (``numba.set_num_threads``
    is per thread), so tasks do not oversubscribe the cores. Where the threading layer
    does not allow concurrent kernels (``workqueue``), the tasks run one after another on
    the calling thread, each with every core.
    """
    from .kernels.cpu import _jit  # imported here: ``import arrow_sparse`` loads no Numba

    if len(tasks) <= 1 or not _jit.concurrent_parallel_kernels():
        for task in tasks:
            task()
        return

    def one(task: Callable[[], None]) -> None:
        before = _jit.set_num_threads(1)
        try:
            task()
        finally:
            _jit.set_num_threads(before)

    with ThreadPoolExecutor(workers or min(len(tasks), os.cpu_count() or 1)) as pool:
        for future in [pool.submit(one, task) for task in tasks]:
            future.result()
