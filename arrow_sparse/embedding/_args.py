"""Checks and input handling shared by the embedding modules (see :mod:`arrow_sparse.embedding`).

The forward (:func:`~arrow_sparse.embedding.lookup`), the backward
(:func:`~arrow_sparse.embedding.lookup_backward`) and the per-sample weights' gradient
read bags through one function, :func:`bags`, so that they agree on every input form
(1-D ids with offsets, 2-D ids, Jagged and Arrow lists, null bags, null ids, weights).
On the host it compacts them (:class:`Bags`); on the device it reads them with one
kernel and compacts nothing (:class:`DeviceBags`), so that no value is read back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa

from .. import _arrow
from .. import _validate as v
from .._backend import cupy_module, get_kernel, is_cupy_array
from ..errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged

MODES = ("sum", "mean", "max")



def is_array(x: Any) -> bool:
    """Whether ``x`` is a numpy or CuPy array."""
    return isinstance(x, np.ndarray) or is_cupy_array(x)


# =============================================================================== checks
def is_list_input(x: Any) -> bool:
    """Whether ``x`` is a Jagged or an Arrow list array (bags that carry their offsets)."""
    return isinstance(x, Jagged) or (isinstance(x, (pa.Array, pa.ChunkedArray))
                                     and _arrow.is_list_type(x.type))


def check_table(func: str, table: Any, arg: str = "table") -> np.ndarray:
    """Check a 2-D numpy or CuPy table of an integer, float32 or float64 dtype."""
    if not is_array(table):
        msg = (f"{func}: {arg} must be a numpy or cupy array [num_embeddings, dim], "
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
    """Check an array updated in place: float32/64, the shape, writable, C-contiguous.

    CuPy arrays have no read-only flag: they are always writable.
    """
    if not is_array(x):
        msg = (f"{func}: {arg} must be a numpy or cupy array (updated in place), "
               f"got {type(x).__name__}")
        raise ArrowSparseTypeError(msg)
    if x.dtype not in (np.float32, np.float64) or (dtype is not None and x.dtype != dtype):
        want = dtype if dtype is not None else "float32 or float64"
        msg = f"{func}: {arg} must have dtype {want}, got {x.dtype}"
        raise ArrowSparseTypeError(msg)
    if x.shape != shape:
        msg = f"{func}: {arg} must have shape {shape}, got {x.shape}"
        raise ArrowSparseValueError(msg)
    if not getattr(x.flags, "writeable", True) or not x.flags.c_contiguous:
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


def bags(func: str, ids: Any, offsets: Any, weights: Any, bound: int,
         xp: ModuleType = np) -> Any:
    """Read any form of bags (see :func:`~arrow_sparse.embedding.lookup`).

    1-D ids without offsets are bags of one id each; 2-D ids ``[n, k]`` are ``n`` bags
    of ``k``. ``weights`` take the form of the ids (a list array for list ids). Returns
    :class:`Bags` on the host, :class:`DeviceBags` when ``xp`` is CuPy (the caller found
    it with :func:`~arrow_sparse._backend.array_module` over every input).
    """
    if xp is not np:
        return _device_bags(func, ids, offsets, weights, bound)
    ids, weights = _arrow.as_arrow(ids), _arrow.as_arrow(weights)
    if isinstance(ids, (pa.Array, pa.ChunkedArray)) and is_list_input(ids):
        return _list_bags(func, Jagged._from_arrow(func, "ids", ids), offsets, weights, bound,
                          True)
    if isinstance(ids, Jagged):
        return _list_bags(func, ids, offsets, weights, bound, False)
    arr, flat, offs, w = _flat_bags(func, ids, offsets, weights, np)
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


def _flat_bags(func: str, ids: Any, offsets: Any, weights: Any, xp: ModuleType
               ) -> tuple[Any, Any, Any, Any]:
    """Array ids as ``(ids array, flat ids, int64 offsets, flat weights or None)``."""
    device = xp is not np
    ndim = 2 if ndim_of(ids) == 2 else 1
    arr = v.as_index_array(func, "ids", ids, ndim=ndim, device=device)
    w = None if weights is None else _flat_weights(func, weights, arr.shape, device)
    if ndim == 2:
        if offsets is not None:
            msg = f"{func}: offsets must not be given with 2-D ids (each row is a bag)"
            raise ArrowSparseValueError(msg)
        n, k = arr.shape
        return arr, arr.reshape(-1), xp.arange(n + 1, dtype=np.int64) * k, w
    if offsets is None:
        return arr, arr, xp.arange(len(arr) + 1, dtype=np.int64), w
    offs = v.check_offsets(func, "offsets", offsets, len(arr), device=device)
    return arr, arr, offs.astype(np.int64, copy=False), w


def _list_values(func: str, jag: Jagged, offsets: Any, arrow: bool = False) -> Any:
    """Return the ids of list input ``jag`` (1-D integers); ``offsets`` must be None.

    Empty float values pass as ids only for a Jagged (``from_list([[]])`` infers
    float64); an Arrow list of floats declares float ids and is refused, whatever
    its child holds (its length used to decide).
    """
    if offsets is not None:
        msg = f"{func}: offsets must not be given with list ids (they carry their own)"
        raise ArrowSparseValueError(msg)
    values = jag.values
    if not arrow and is_array(values) and values.size == 0 and values.dtype.kind == "f":
        values = values.astype(np.int64)  # from_list([[]]) infers float64
    if not is_array(values) or values.ndim != 1 or values.dtype.kind not in "iu":
        msg = f"{func}: ids must be a Jagged (or Arrow list array) of 1-D integers"
        raise ArrowSparseTypeError(msg)
    return values


def _list_bags(func: str, jag: Jagged, offsets: Any, weights: Any, bound: int,
               arrow: bool) -> Bags:
    values = _list_values(func, jag, offsets, arrow)
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
        wj, wvalues = _list_weights(func, weights, jag.num_rows)
        woffs = np.asarray(wj.offsets, dtype=np.int64)
        if not np.array_equal(np.diff(woffs), lengths):
            _weight_lengths(func)
        lo, hi = int(woffs[0]), int(woffs[-1])
        w = wvalues[lo:hi]
        if wj.values_validity is not None:
            wvalid = wj.values_validity[lo:hi]
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


def _float(func: str, w: Any) -> Any:
    if w.dtype.kind == "f" and w.dtype != np.float16:
        return w
    if w.dtype.kind not in "biuf":
        msg = f"{func}: per_sample_weights must be numeric, got {w.dtype}"
        raise ArrowSparseTypeError(msg)
    return w.astype(np.float64)


def _flat_weights(func: str, weights: Any, shape: tuple[int, ...], device: bool) -> Any:
    if is_list_input(weights):
        msg = (f"{func}: per_sample_weights must be a flat array like the ids (one weight "
               "per id), got a list array")
        raise ArrowSparseTypeError(msg)
    w = v.as_values_array(func, "per_sample_weights", weights, min_ndim=0, device=device)
    if w.shape != shape:
        msg = f"{func}: per_sample_weights must have the shape of ids {shape}, got {w.shape}"
        raise ArrowSparseValueError(msg)
    return _float(func, w).reshape(-1)


def _list_weights(func: str, weights: Any, num_rows: int) -> tuple[Jagged, Any]:
    """Weights of list ids: the Jagged and its float values (lengths checked by the caller)."""
    if not is_list_input(weights):
        msg = (f"{func}: per_sample_weights must be a Jagged or an Arrow list array like the "
               f"ids (one list of weights per bag), got {type(weights).__name__}")
        raise ArrowSparseTypeError(msg)
    wj = weights if isinstance(weights, Jagged) else Jagged._from_arrow(func, "weights", weights)
    if wj.num_rows != num_rows:
        _weight_lengths(func)
    if isinstance(wj.values, Jagged) or wj.values.ndim != 1:
        msg = f"{func}: per_sample_weights must hold one scalar weight per id"
        raise ArrowSparseTypeError(msg)
    device = is_cupy_array(wj.values)
    return wj, _float(func, v.as_values_array(func, "per_sample_weights", wj.values,
                                              device=device))


def _weight_lengths(func: str) -> None:
    msg = f"{func}: per_sample_weights must have the same bag lengths as ids"
    raise ArrowSparseValueError(msg)


# ========================================================================= device bags
@dataclass(frozen=True)
class DeviceBags:
    """Bags of device ids, read by one kernel and not compacted (nothing is read back).

    Position ``j`` of the flat ids is read when ``bag[j] >= 0`` (inside a non-null bag,
    not a null id; the host's :class:`Bags` keep exactly those). ``offsets`` are the
    caller's (int64, ``offsets[0]`` may be above 0).
    """

    key: Any
    """Flat ids, ``bound`` where not read, then one more ``bound``: a sort key whose last
    run is always the unread ids' (``num_ids + 1`` entries)."""
    offsets: Any
    bag: Any
    """Bag of each position, -1 where not read."""
    weights: Any | None
    """Weight of each position (0 where not read), or None."""
    count: Any
    """Ids read per bag (the divisor of a mean)."""
    read: Any | None
    """Which positions are read (bool), None when all of ``offsets[0]:offsets[-1]`` are."""
    valid: Any | None
    shape: tuple[int, ...]

    @property
    def num_bags(self) -> int:
        """Number of bags (lookup outputs)."""
        return int(self.offsets.shape[0]) - 1

    @property
    def ids(self) -> Any:
        """Flat ids, 0 where not read (so every one is in range)."""
        return cupy_module("embedding").where(self.bag >= 0, self.key[:-1], 0)

    @property
    def num_ids(self) -> int:
        """Number of id positions (read or not)."""
        return int(self.bag.shape[0])

    def mean_scale(self) -> Any:
        """``1 / count`` of each position's bag (float64; 1 where not read)."""
        xp = cupy_module("embedding")
        inverse = 1.0 / xp.maximum(self.count, 1).astype(np.float64)
        if self.num_bags == 0:
            return xp.ones(self.num_ids, dtype=np.float64)
        return xp.take(inverse, xp.maximum(self.bag, 0))



_INDEX_DTYPES = frozenset((np.dtype(np.int32), np.dtype(np.int64)))
_FLOAT_DTYPES = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


def _plain_device_bags(ids: Any, offsets: Any, weights: Any) -> bool:
    """Whether device bags are the common case, read without the generic checks.

    The case: 1-D int32/int64 CuPy ids and offsets, and no weights or 1-D float ones
    aligned with the ids (the generic checks would all pass).
    """
    return (type(ids).__module__ == "cupy" and type(offsets).__module__ == "cupy"
            and ids.ndim == 1 and ids.dtype in _INDEX_DTYPES and offsets.ndim == 1
            and offsets.dtype in _INDEX_DTYPES and offsets.shape[0] > 0
            and (weights is None or (type(weights).__module__ == "cupy" and weights.ndim == 1
                                     and weights.dtype in _FLOAT_DTYPES
                                     and weights.shape[0] == ids.shape[0])))


def _device_bags(func: str, ids: Any, offsets: Any, weights: Any, bound: int) -> DeviceBags:
    """Read device bags: the O(1) checks here, the rest in the ``bag_ids`` kernel."""
    xp = cupy_module("embedding")
    valid = vmask = woffs = wvalid = None
    if _plain_device_bags(ids, offsets, weights):
        get_kernel("convert", "check_offsets", xp)(offsets, ids.shape[0])  # as check_offsets
        offs = offsets.astype(np.int64, copy=False)
        bag, key, _, count = get_kernel("embedding", "bag_ids", xp)(
            ids, offs, None, None, None, None, 0 if weights is None else ids.shape[0], bound)
        return DeviceBags(key, offs, bag, weights, count, None, None, ids.shape)
    if isinstance(ids, Jagged):
        flat = v.as_index_array(func, "ids", _list_values(func, ids, offsets), device=True)
        offs = ids.offsets.astype(np.int64, copy=False)
        valid, vmask, shape = ids.validity, ids.values_validity, (len(flat),)
        w = None
        if weights is not None:
            wj, w = _list_weights(func, weights, ids.num_rows)
            woffs, wvalid = wj.offsets, wj.values_validity
    else:
        arr, flat, offs, w = _flat_bags(func, ids, offsets, weights, xp)
        shape = arr.shape
    bag, key, wpos, count = get_kernel("embedding", "bag_ids", xp)(
        flat, offs, valid, vmask, woffs, wvalid, 0 if w is None else len(w), bound)
    if w is not None and woffs is not None:  # list weights: gather them to the ids
        w = xp.where(wpos >= 0, xp.take(w, xp.maximum(wpos, 0)), w.dtype.type(0)) \
            if len(w) else xp.zeros(len(flat), dtype=w.dtype)
    read = bag >= 0 if valid is not None or vmask is not None else None
    return DeviceBags(key, offs, bag, w, count, read, valid, shape)
