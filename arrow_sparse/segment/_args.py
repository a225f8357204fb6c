"""Argument normalisation shared by the segment functions (:mod:`arrow_sparse.segment`).

Every public segment function checks and lays out its inputs through these helpers,
then calls one kernel: :class:`_Rows` holds one input's checked rows, ``_weights`` the
weights that go with them, and ``_finish`` wraps a kernel's output (Arrow in -> Arrow
out). The output dtypes and accumulators documented in ``docs/segment-reductions.md``
are chosen here.

Device (CuPy) inputs take the same path with the array module of the inputs
(``_Rows.xp``): the O(1) checks run on the host, the data-dependent ones are launched
as device checks (``arrow_sparse._validate`` with ``device=True``) or re-made by the
kernels themselves (index ranges, weights rows), and nothing is read back except a
data-dependent output size (the number of segments when ``num_segments`` is not
given).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable
from typing import Any, NoReturn, cast

import numpy as np
import pyarrow as pa

from .. import _arrow
from .. import _validate as v
from .._backend import get_kernel, is_cupy_array, module_of
from ..errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged

_MODES = {"sum": 0, "mean": 1, "max": 2}  # kernels.cpu.segment.MODE_*
_INT64, _UINT64, _FLOAT32, _FLOAT64 = (np.dtype(t) for t in ("i8", "u8", "f4", "f8"))




# ================================================================ input normalisation
class _Rows:
    """Checked rows of one input (or one chunk), laid out as the kernels want them."""

    __slots__ = ("arrow", "chunked", "dtype", "given_rows", "inner", "listlike", "offsets",
                 "valid", "values", "vmask", "xp")

    def __init__(self, values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                 vmask: np.ndarray | None, arrow: bool, listlike: bool) -> None:
        self.xp = module_of(values)  # numpy, or CuPy for device values
        self.inner: tuple[int, ...] = values.shape[1:]  # shape of one value
        self.dtype: np.dtype = values.dtype  # as given (bool values are computed as uint8)
        if values.dtype.kind == "b":
            values = values.view(np.uint8)
        if not values.flags.c_contiguous:
            values = self.xp.ascontiguousarray(values)  # a copy
        if values.ndim > 2:
            values = values.reshape(len(values), _width(values))
        self.values = values  # [N] or [N, D], C-contiguous
        self.offsets = offsets
        self.given_rows = len(offsets) - 1  # before num_segments appends empty rows
        self.valid = valid  # bool row mask or None
        self.vmask = vmask  # bool value mask or None
        self.arrow = arrow
        self.chunked = False  # a flat ChunkedArray input: wrap the result as one chunk
        self.listlike = listlike

    @property
    def num_rows(self) -> int:
        return len(self.offsets) - 1

    def values_2d(self) -> np.ndarray:
        vals = self.values
        return vals.reshape(len(vals), 1) if vals.ndim == 1 else vals


def _width(arr: np.ndarray) -> int:
    """Elements per row of ``arr`` viewed as 2-D (``reshape(n, -1)`` fails for n == 0)."""
    return int(np.prod(arr.shape[1:], dtype=np.int64)) if arr.ndim > 1 else 1


def _is_list_input(x: Any) -> bool:
    return isinstance(x, Jagged) or (isinstance(x, (pa.Array, pa.ChunkedArray))
                                     and _arrow.is_list_type(x.type))


def _flat(func: str, arg: str, x: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """Flat values (numpy, sequence, Arrow primitive or fixed_size_list) and null mask."""
    if isinstance(x, np.ndarray):
        arr, mask = x, None
    elif isinstance(x, (pa.Array, pa.ChunkedArray)):
        if isinstance(x, pa.ChunkedArray):
            x = _arrow.as_one_array(x)
        if isinstance(x.type, pa.FixedSizeListType):
            arr = _arrow.fixed_size_values(func, x)
        else:
            arr = _arrow.primitive_values(func, x)
        mask = _arrow.validity_of(x)
    else:  # numpy, CuPy (device values, never null) or a sequence
        arr, mask = x, None
    arr = v.as_values_array(func, arg, arr, device=True)
    if arr.dtype.kind == "f" and arr.dtype.itemsize < 4:
        msg = f"{func}: {arg} of dtype {arr.dtype} are not supported; cast to float32 first"
        raise ArrowSparseTypeError(msg)
    return arr, mask


def _rows(func: str, values: Any, offsets: Any, lengths: Any, segment_ids: Any,
          num_segments: Any, arg: str = "values") -> _Rows:
    """Normalise a Jagged, an Arrow list array or raw values + one structure argument."""
    if _is_list_input(values):
        given = [k for k, x in (("offsets", offsets), ("lengths", lengths),
                                ("segment_ids", segment_ids)) if x is not None]
        if given:
            msg = (f"{func}: {arg} is a list array and carries its own offsets; "
                   f"do not pass {given[0]}=")
            raise ArrowSparseValueError(msg)
        arrow = not isinstance(values, Jagged)
        j = Jagged._from_arrow(func, arg, values) if arrow else values
        if isinstance(j.values, Jagged):
            msg = (f"{func}: {arg} has nested lists; reduce the inner level first "
                   "(e.g. on the Jagged's values)")
            raise ArrowSparseTypeError(msg)
        vals, vmask = j.values, j.values_validity
        if vals.dtype.kind == "f" and vals.dtype.itemsize < 4:
            msg = f"{func}: {arg} of dtype {vals.dtype} are not supported; cast to float32 first"
            raise ArrowSparseTypeError(msg)
        offs, valid, listlike = j.offsets, j.validity, True
    else:
        arrow = isinstance(values, (pa.Array, pa.ChunkedArray))
        vals, vmask = _flat(func, arg, values)
        which = v.check_exactly_one(func, offsets=offsets, lengths=lengths,
                                    segment_ids=segment_ids)
        n = len(vals)
        if which == "offsets":
            offs = v.check_offsets(func, "offsets", offsets, n, device=True)
        elif which == "lengths":
            _, offs = v.lengths_offsets(func, "lengths", lengths, num_values=n, device=True)
        else:
            ids, count = v.check_sorted_segment_ids(func, "segment_ids", segment_ids, n,
                                                    num_segments, device=True)
            offs = get_kernel("segment", "sorted_ids_to_offsets", module_of(ids))(ids, count)
            num_segments = None
        valid, listlike = None, False
    rows = _Rows(vals, offs, valid, vmask, arrow, listlike)
    if num_segments is not None:
        rows.offsets, rows.valid = _extend(func, offs, valid, num_segments)
    rows.chunked = isinstance(values, pa.ChunkedArray)
    return rows


def _extend(func: str, offsets: np.ndarray, valid: np.ndarray | None,
            num_segments: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """Append empty rows up to ``num_segments``."""
    n = v.check_count(func, "num_segments", num_segments)
    rows = len(offsets) - 1
    if n < rows:
        msg = f"{func}: num_segments={n} is less than the {rows} rows of the input"
        raise ArrowSparseValueError(msg)
    return _pad_rows(offsets, valid, n)


def _pad_rows(offsets: np.ndarray, valid: np.ndarray | None,
              n: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Append empty (valid) rows to ``n`` rows in all (on the offsets' device, no reads)."""
    rows = len(offsets) - 1
    if n > rows:
        xp = module_of(offsets)
        tail = offsets[-1:] + xp.zeros(n - rows, dtype=offsets.dtype)  # offsets[-1], n - rows times
        offsets = xp.concatenate([offsets, tail])
        if valid is not None:
            valid = xp.concatenate([valid, xp.ones(n - rows, dtype=bool)])
    return offsets, valid


def _weights(func: str, weights: Any, rows: _Rows,
             arg: str = "weights") -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Weights (1-D), their offsets (None: aligned with the values) and the row mask."""
    if not rows.listlike:
        if _is_list_input(weights):
            msg = (f"{func}: {arg} must be a flat array (one weight per value) when the "
                   "values are flat")
            raise ArrowSparseTypeError(msg)
        w, wmask = _flat(func, arg, weights)
        if wmask is not None:
            v.fail_value(func, arg, "must not contain nulls", v.first_true(~wmask), None)
        if w.ndim != 1 or len(w) != len(rows.values):
            msg = (f"{func}: {arg} must be 1-D with one weight per value ({len(rows.values)}), "
                   f"got shape {w.shape}")
            raise ArrowSparseValueError(msg)
        return _scalar_dtype(w), None, rows.valid
    if not _is_list_input(weights):
        msg = (f"{func}: {arg} must be a Jagged or an Arrow list array (one list of weights "
               f"per row) like the values, got {type(weights).__name__}")
        raise ArrowSparseTypeError(msg)
    wj = weights if isinstance(weights, Jagged) else Jagged._from_arrow(func, arg, weights)
    if isinstance(wj.values, Jagged) or wj.values.ndim != 1:
        msg = f"{func}: {arg} must hold one scalar weight per value"
        raise ArrowSparseTypeError(msg)
    if wj.num_rows != rows.given_rows:
        msg = f"{func}: {arg} has {wj.num_rows} rows but the values have {rows.given_rows}"
        raise ArrowSparseValueError(msg)
    # the rows num_segments appended to the values are empty for the weights too
    woffsets, wvalid = _pad_rows(wj.offsets, wj.validity, rows.num_rows)
    valid = rows.valid
    if wvalid is not None:
        valid = wvalid if valid is None else valid & wvalid
    if rows.xp is not np:
        # The kernels compare the rows' lengths as they read them; null weights are a
        # device check.
        if wj.values_validity is not None:
            get_kernel("segment", "check_null_weights", rows.xp)(
                woffsets, valid, wj.values_validity, len(wj.values))
        w, _ = _flat(func, arg, wj.values)
        return _scalar_dtype(w), woffsets, valid
    wlens = np.diff(woffsets)
    bad = wlens != np.diff(rows.offsets)
    if valid is not None:
        bad &= valid
    if bad.any():
        pos = v.first_true(bad)
        v.fail_value(func, arg, "must have the same row lengths as the values", pos, wlens[pos])
    if wj.values_validity is not None:
        used = np.zeros(len(wj.values), dtype=bool)
        keep = np.ones(rows.num_rows, dtype=bool) if valid is None else valid
        start, stop = int(woffsets[0]), int(woffsets[-1])
        used[start:stop] = np.repeat(keep, wlens)
        nulls = used & ~wj.values_validity
        if nulls.any():
            pos = v.first_true(nulls)
            v.fail_value(func, arg, "must not contain null elements; fill them first "
                         "(pyarrow.compute.fill_null)", pos, None)
    w, _ = _flat(func, arg, wj.values)
    return _scalar_dtype(w), woffsets, valid


def _scalar_dtype(w: np.ndarray) -> np.ndarray:
    return module_of(w).ascontiguousarray(w.view(np.uint8) if w.dtype.kind == "b" else w)


# ===================================================================== dtypes and results
def _sum_dtype(dtype: np.dtype) -> np.dtype:
    """Output dtype of a sum or product: float kept, uint64 kept, other integers int64."""
    if dtype.kind == "f":
        return dtype
    return _UINT64 if dtype == _UINT64 else _INT64


def _float_dtype(dtype: np.dtype) -> np.dtype:
    """Output dtype of mean / logsumexp: float32 kept, everything else float64."""
    return _FLOAT32 if dtype == _FLOAT32 else _FLOAT64


def _same_dtype(dtype: np.dtype) -> np.dtype:
    return dtype


def _acc_zero(out_dtype: np.dtype) -> np.generic:
    """Zero of the accumulator: float64 for floats, uint64 for uint64, else int64."""
    acc = _FLOAT64 if out_dtype.kind == "f" else _UINT64 if out_dtype == _UINT64 else _INT64
    zero: np.generic = acc.type(0)
    return zero


def _lowest(dtype: np.dtype, highest: bool = False) -> np.generic:
    if dtype.kind == "f":
        value: Any = np.inf if highest else -np.inf
    else:
        info = np.iinfo(dtype)
        value = info.max if highest else info.min
    scalar: np.generic = dtype.type(value)
    return scalar


def _empty_scalar(func: str, value: Any, dtype: np.dtype) -> np.generic:
    """``empty_value`` as a scalar of the output dtype; raise if it does not fit exactly."""
    try:
        # 0.0 == -0.0 (and they hash alike): the sign is part of the cache key
        sign = math.copysign(1.0, value) if isinstance(value, (float, np.floating)) else 1.0
        return _empty_scalar_cached(cast(Hashable, type(value)), value, sign, dtype)
    except TypeError:  # unhashable value
        return _empty_scalar_checked(func, value, dtype)
    except ArrowSparseValueError:
        return _empty_scalar_checked(func, value, dtype)  # message with the right func


@functools.lru_cache(maxsize=256)
def _empty_scalar_cached(kind: Any, value: Any, sign: float, dtype: np.dtype) -> np.generic:
    return _empty_scalar_checked("", value, dtype)


def _empty_scalar_checked(func: str, value: Any, dtype: np.dtype) -> np.generic:
    one = np.ndim(value) == 0  # one value, not an array of them
    scalar = v.exact_scalar(value, dtype) if one else None
    if scalar is None:
        msg = f"{func}: empty_value {value!r} does not fit the output dtype {dtype}"
        raise ArrowSparseValueError(msg)
    return scalar


def _min_count(func: str, min_count: Any, at_least: int) -> int:
    return max(v.check_count(func, "min_count", min_count), at_least)


def _finish(rows: _Rows, valid: np.ndarray | None, out: np.ndarray,
            counts: np.ndarray | None, min_count: int, inner: tuple[int, ...]) -> Any:
    """Shape the kernel output; wrap it for Arrow input.

    An Arrow result row is null where the row is null or has fewer than ``min_count``
    non-null values.
    """
    out = out.reshape((len(out),) + inner)
    if not rows.arrow:
        return out
    ok = valid
    if min_count > 0:
        n = counts if counts is not None else np.diff(rows.offsets)
        ok = n >= min_count if ok is None else ok & (n >= min_count)
    if ok is not None and ok.all():
        ok = None
    result = _arrow.array_from_numpy(out, ok)
    return pa.chunked_array([result]) if rows.chunked else result


def _u8(mask: np.ndarray | None) -> np.ndarray | None:
    return None if mask is None else mask.view(np.uint8)


def _per_chunk(func: str, values: pa.ChunkedArray, weights: Any, num_segments: Any,
               one: Callable[[Any, Any], Any]) -> pa.ChunkedArray:
    """Apply ``one(chunk, chunk_weights)`` to each chunk of a list ChunkedArray."""
    if num_segments is not None:
        msg = f"{func}: num_segments cannot be used with a ChunkedArray (chunks are reduced apart)"
        raise ArrowSparseValueError(msg)
    if isinstance(weights, pa.ChunkedArray):
        weights = _arrow.as_one_array(weights)
    if weights is not None and _is_list_input(weights) and len(weights) != len(values):
        msg = f"{func}: weights has {len(weights)} rows but the values have {len(values)}"
        raise ArrowSparseValueError(msg)
    results, start = [], 0
    for chunk in values.chunks:
        w = weights
        if weights is not None and _is_list_input(weights):
            w = weights[start:start + len(chunk)] if isinstance(weights, Jagged) \
                else weights.slice(start, len(chunk))
        results.append(one(chunk, w))
        start += len(chunk)
    if not results:
        empty_w = None if weights is None else weights
        out_type = one(pa.array([], type=values.type), empty_w).type
    else:
        out_type = results[0].type
    return pa.chunked_array(results, type=out_type)


#: Output dtype of each reduction from the values' (and weights') dtype.
_OUT_DTYPE: dict[str, Callable[[np.dtype, np.dtype | None], np.dtype]] = {
    "sum": lambda d, w: _sum_dtype(d),
    "prod": lambda d, w: _sum_dtype(d),
    "weighted_sum": lambda d, w: _sum_dtype(np.result_type(d, w)),
    "mean": lambda d, w: _float_dtype(d),
    "logsumexp": lambda d, w: _float_dtype(d),
    "max": lambda d, w: d,
    "min": lambda d, w: d,
    "argmax": lambda d, w: _INT64,
    "argmin": lambda d, w: _INT64,
}


def _table(func: str, data: Any) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Return the table as given, as a ``[V, D]`` C-contiguous view, and its row shape."""
    arr, mask = _flat(func, "data", data)
    if mask is not None:
        pos = v.first_true(~mask)
        v.fail_value(func, "data", "must not contain null rows", pos, None)
    table = module_of(arr).ascontiguousarray(arr.view(np.uint8) if arr.dtype.kind == "b"
                                             else arr)
    return arr, table.reshape(len(table), _width(table)), arr.shape[1:]


def _check_ids(func: str, arg: str, ids: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Convert indices to int32 / int64 (the kernel checks their range as it reads them).

    ``dtype`` is their type as given (booleans arrive as bytes): named in the error.
    """
    if ids.ndim != 1 or ids.dtype.kind not in "iu" or dtype.kind == "b":
        msg = f"{func}: {arg} must be 1-D integers, got {dtype} of shape {ids.shape}"
        raise ArrowSparseTypeError(msg)
    if ids.dtype.kind == "u":
        ids = v.as_index_array(func, arg, ids, device=True)
    if ids.dtype not in (np.int32, np.int64):
        ids = ids.astype(np.int64)
    return ids


def _raise_out_of_range(func: str, arg: str, ids: np.ndarray, pos: int,
                        bound: int) -> NoReturn:
    """Raise the IndexError of an index a kernel found outside ``[0, bound)``."""
    msg = f"{func}: {arg} out of range [0, {bound}) (first at position {pos}: {ids[pos]})"
    raise ArrowSparseIndexError(msg)


def _index_ndim(indices: Any) -> int:
    if isinstance(indices, (pa.Array, pa.ChunkedArray)):
        return 1
    try:
        return int(np.ndim(indices))
    except (ValueError, TypeError):  # ragged or odd: as_index_array reports it
        return 1


def _writable(func: str, data: Any) -> np.ndarray:
    if not (isinstance(data, np.ndarray) or is_cupy_array(data)):
        msg = (f"{func}: data must be a numpy or cupy array (updated in place), got "
               f"{type(data).__name__}; Arrow arrays are immutable")
        raise ArrowSparseTypeError(msg)
    writeable = is_cupy_array(data) or data.flags.writeable  # device arrays always are
    if data.ndim == 0 or not writeable or not data.flags.c_contiguous:
        msg = f"{func}: data must be a writable, C-contiguous array of at least 1 dimension"
        raise ArrowSparseValueError(msg)
    arr = v.as_values_array(func, "data", data, device=True)
    if arr.dtype.kind == "f" and arr.dtype.itemsize < 4:
        msg = f"{func}: data of dtype {arr.dtype} are not supported; cast to float32 first"
        raise ArrowSparseTypeError(msg)
    return arr


def _slices(func: str, slices: Any, data: np.ndarray, num: int) -> np.ndarray:
    arr = v.as_values_array(func, "slices", slices, min_ndim=0, device=True)
    if arr.shape != (num,) + data.shape[1:]:
        msg = (f"{func}: slices must have shape {(num,) + data.shape[1:]} (one data row "
               f"per index), got {arr.shape}")
        raise ArrowSparseValueError(msg)
    if not np.can_cast(arr.dtype, data.dtype, "same_kind"):
        msg = f"{func}: slices of dtype {arr.dtype} cannot be written into {data.dtype} data"
        raise ArrowSparseTypeError(msg)
    return module_of(arr).ascontiguousarray(arr, dtype=data.dtype).reshape(num, _width(data))

