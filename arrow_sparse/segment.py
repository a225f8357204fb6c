"""Segment reductions: sorted, unsorted and fused (gather + reduce); gather and scatter.

Caffe2's sparse-operations family on Arrow data. A *segment* is a row of a jagged
batch; the examples use Caffe2's batch of three examples ``[1, 2, 3] [2, 4, 6, 7]
[3, 6]``. Sorted reductions (``segment_*``) accept the batch as

- a :class:`~arrow_sparse.Jagged` (-> numpy; null rows reduce as empty rows),
- an Arrow ``list``/``large_list`` array (-> Arrow; null rows stay null) or a
  ChunkedArray of them (-> ChunkedArray, chunk by chunk),
- raw values (numpy, a sequence, or a flat Arrow array) plus exactly one of
  ``offsets=``, ``lengths=`` or sorted ``segment_ids=`` (numpy in -> numpy out,
  Arrow in -> Arrow out).

Values may be N-D: the first axis is the jagged one and the others are kept
(``[N, 64] -> [rows, 64]``; Arrow ``fixed_size_list`` values and results). Null
values inside a list are skipped. See ``docs/segment-reductions.md`` for the tables of
null/empty semantics and accumulator dtypes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any, cast

import numpy as np
import pyarrow as pa

from . import _arrow
from . import _validate as v
from ._backend import array_module, get_kernel, is_cupy_array
from .errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from .jagged import Jagged

__all__ = [
    "embedding_bag",
    "gather",
    "scatter_assign",
    "scatter_weighted_sum",
    "segment_argmax",
    "segment_argmin",
    "segment_logsumexp",
    "segment_max",
    "segment_mean",
    "segment_min",
    "segment_prod",
    "segment_sum",
    "segment_weighted_sum",
    "sparse_segment_max",
    "sparse_segment_mean",
    "sparse_segment_sum",
    "sparse_segment_weighted_sum",
    "unsorted_segment_max",
    "unsorted_segment_mean",
    "unsorted_segment_min",
    "unsorted_segment_sum",
    "unsorted_segment_weighted_sum",
]

_MODES = {"sum": 0, "mean": 1, "max": 2}  # kernels.cpu.segment.MODE_*
_INT64, _UINT64, _FLOAT32, _FLOAT64 = (np.dtype(t) for t in ("i8", "u8", "f4", "f8"))


def _kernel(name: str) -> Callable[..., Any]:
    # Not cached here: the registry picks the backend per call (tests swap in the
    # CUDA emulator), and its own module lookup is a dict hit.
    return get_kernel("segment", name)


# ================================================================ input normalisation
class _Rows:
    """Checked rows of one input (or one chunk), laid out as the kernels want them."""

    __slots__ = ("arrow", "chunked", "dtype", "inner", "listlike", "offsets", "valid",
                 "values", "vmask")

    def __init__(self, values: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                 vmask: np.ndarray | None, arrow: bool, listlike: bool) -> None:
        self.inner: tuple[int, ...] = values.shape[1:]  # shape of one value
        self.dtype: np.dtype = values.dtype  # as given (bool values are computed as uint8)
        if values.dtype.kind == "b":
            values = values.view(np.uint8)
        if not values.flags.c_contiguous:
            values = np.ascontiguousarray(values)  # a copy
        if values.ndim > 2:
            values = values.reshape(len(values), _width(values))
        self.values = values  # [N] or [N, D], C-contiguous
        self.offsets = offsets
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
            x = pa.concat_arrays(x.chunks) if x.num_chunks != 1 else x.chunk(0)
        if isinstance(x.type, pa.FixedSizeListType):
            arr = _arrow.fixed_size_values(func, x)
        else:
            arr = _arrow.primitive_values(func, x)
        mask = _arrow.validity_of(x)
    elif is_cupy_array(x):
        get_kernel("segment", func, array_module(func, x))
        raise AssertionError  # pragma: no cover  (get_kernel raised)
    else:
        arr, mask = x, None
    arr = v.as_values_array(func, arg, arr)
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
        j = Jagged.from_arrow(values) if arrow else values
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
            offs = v.check_offsets(func, "offsets", offsets, n)
        elif which == "lengths":
            lens = v.check_lengths(func, "lengths", lengths, n)
            offs = np.zeros(len(lens) + 1, dtype=np.int64)
            np.cumsum(lens, out=offs[1:])
        else:
            ids, count = v.check_sorted_segment_ids(func, "segment_ids", segment_ids, n,
                                                    num_segments)
            offs = _kernel("sorted_ids_to_offsets")(ids, count)
            num_segments = None
        valid, listlike = None, False
    if num_segments is not None:
        offs, valid = _extend(func, offs, valid, num_segments)
    rows = _Rows(vals, offs, valid, vmask, arrow, listlike)
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
    if n > rows:
        offsets = np.concatenate([offsets, np.full(n - rows, offsets[-1], offsets.dtype)])
        if valid is not None:
            valid = np.concatenate([valid, np.ones(n - rows, dtype=bool)])
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
    wj = weights if isinstance(weights, Jagged) else Jagged.from_arrow(weights)
    if isinstance(wj.values, Jagged) or wj.values.ndim != 1:
        msg = f"{func}: {arg} must hold one scalar weight per value"
        raise ArrowSparseTypeError(msg)
    if wj.num_rows != rows.num_rows:
        msg = f"{func}: {arg} has {wj.num_rows} rows but the values have {rows.num_rows}"
        raise ArrowSparseValueError(msg)
    valid = rows.valid
    if wj.validity is not None:
        valid = wj.validity if valid is None else valid & wj.validity
    wlens = np.diff(wj.offsets)
    bad = wlens != np.diff(rows.offsets)
    if valid is not None:
        bad &= valid
    if bad.any():
        pos = v.first_true(bad)
        v.fail_value(func, arg, "must have the same row lengths as the values", pos, wlens[pos])
    if wj.values_validity is not None:
        used = np.zeros(len(wj.values), dtype=bool)
        keep = np.ones(wj.num_rows, dtype=bool) if valid is None else valid
        start, stop = int(wj.offsets[0]), int(wj.offsets[-1])
        used[start:stop] = np.repeat(keep, wlens)
        nulls = used & ~wj.values_validity
        if nulls.any():
            pos = v.first_true(nulls)
            v.fail_value(func, arg, "must not contain null elements; fill them first "
                         "(pyarrow.compute.fill_null)", pos, None)
    w, _ = _flat(func, arg, wj.values)
    return _scalar_dtype(w), wj.offsets, valid


def _scalar_dtype(w: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(w.view(np.uint8) if w.dtype.kind == "b" else w)


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
        return _empty_scalar_cached(cast(Hashable, type(value)), value, dtype)
    except TypeError:  # unhashable value
        return _empty_scalar_checked(func, value, dtype)
    except ArrowSparseValueError:
        return _empty_scalar_checked(func, value, dtype)  # message with the right func


@functools.lru_cache(maxsize=256)
def _empty_scalar_cached(kind: Any, value: Any, dtype: np.dtype) -> np.generic:
    return _empty_scalar_checked("", value, dtype)


def _empty_scalar_checked(func: str, value: Any, dtype: np.dtype) -> np.generic:
    try:
        if np.ndim(value) != 0:
            raise TypeError  # one value, not an array of them
        with np.errstate(invalid="ignore", over="ignore"):
            scalar = cast(np.generic, np.array(value).astype(dtype)[()])
            exact = bool(scalar == value) or bool(np.isnan(scalar) and np.isnan(value))
    except (TypeError, ValueError, OverflowError):
        exact = False
    if not exact:
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
        weights = pa.concat_arrays(weights.chunks) if weights.num_chunks != 1 \
            else weights.chunk(0)
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


# ======================================================================== sorted driver
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


def _sorted(func: str, op: str, values: Any, offsets: Any, lengths: Any, segment_ids: Any,
            num_segments: Any, min_count: Any, empty_value: Any, weights: Any = None) -> Any:
    """Check -> kernel -> wrap for every sorted reduction ``op``."""
    if isinstance(values, pa.ChunkedArray) and _arrow.is_list_type(values.type):
        return _per_chunk(func, values, weights, num_segments, lambda chunk, w: _sorted(
            func, op, chunk, offsets, lengths, segment_ids, None, min_count, empty_value, w))
    rows = _rows(func, values, offsets, lengths, segment_ids, num_segments)
    vals, valid = rows.values, rows.valid
    w = woffs = None
    if op == "weighted_sum":
        w, woffs, valid = _weights(func, weights, rows)
    mc = _min_count(func, min_count, 0 if op in ("sum", "weighted_sum", "prod") else 1)
    out_dtype = _OUT_DTYPE[op](rows.dtype, None if w is None else w.dtype)
    empty = _empty_scalar(func, empty_value, out_dtype)
    out = np.empty((rows.num_rows,) + vals.shape[1:],
                   dtype=np.uint8 if out_dtype.kind == "b" else out_dtype)
    want_counts = rows.arrow and mc > 0  # the kernel counts; cheaper than np.diff later
    counts = np.empty(rows.num_rows, dtype=np.int64) if want_counts else None
    vmask = _u8(rows.vmask)
    if op in ("sum", "mean", "weighted_sum"):
        zero = np.float64(0) if op == "mean" else _acc_zero(out_dtype)
        _kernel("sorted_sum")(vals, rows.offsets, _u8(valid), vmask, w, woffs, op == "mean",
                              zero, mc, empty, out, counts)
    elif op in ("max", "min"):
        _kernel("sorted_extreme")(vals, rows.offsets, _u8(valid), vmask, op == "max",
                                  _lowest(vals.dtype, op == "min"), mc,
                                  out.dtype.type(empty), out, counts)
    else:
        vals2 = rows.values_2d()
        out2 = out.reshape(rows.num_rows, vals2.shape[1])
        if op == "prod":
            _kernel("sorted_prod")(vals2, rows.offsets, _u8(valid), vmask,
                                   _acc_zero(out_dtype).dtype.type(1), mc, empty, out2,
                                   counts)
        elif op == "logsumexp":
            _kernel("sorted_logsumexp")(vals2, rows.offsets, _u8(valid), vmask, mc, empty,
                                        out2, counts)
        else:
            _kernel("sorted_arg_extreme")(vals2, rows.offsets, _u8(valid), vmask,
                                          op == "argmax", mc, empty, out2, counts)
    if out_dtype.kind == "b":
        out = out.view(bool)
    return _finish(rows, valid, out, counts, mc, rows.inner)


# ==================================================================== sorted reductions
def segment_sum(values: Any, *, offsets: Any = None, lengths: Any = None,
                segment_ids: Any = None, num_segments: int | None = None,
                min_count: int = 0, empty_value: Any = 0) -> Any:
    """Sum each segment (row) of a jagged batch (Caffe2's ``SortedSegmentSum``).

    Parameters
    ----------
    values
        A :class:`~arrow_sparse.Jagged`, an Arrow ``list``/``large_list`` array or a
        ChunkedArray of them, or raw values ``[N, ...]`` (numpy, a sequence, or a flat
        Arrow array; ``fixed_size_list`` for vectors) with one of the next three.
    offsets
        Row offsets into raw ``values``: ``rows + 1`` non-decreasing integers; they may
        start above 0 and end before the last value (those values are not read).
    lengths
        Row lengths; must sum to exactly ``len(values)``.
    segment_ids
        Sorted (non-decreasing) row id of each value.
    num_segments
        Number of output rows, at least the input's; the extra rows are empty.
    min_count
        A row with fewer non-null values is *missing*: null in Arrow output,
        ``empty_value`` in numpy output. The default 0 makes empty rows sum to 0.
    empty_value
        The numpy result of a missing row.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        ``[rows, ...]`` (the value axes kept) of int64 for booleans and integers
        (uint64 stays uint64), float32 for float32, float64 for float64. numpy or
        Jagged in -> numpy; Arrow in -> Arrow (``fixed_size_list`` for vectors).

    Raises
    ------
    ValueError
        Not exactly one of offsets/lengths/segment_ids, malformed offsets or lengths,
        unsorted segment ids, too small a ``num_segments``, or an ``empty_value`` the
        output dtype cannot hold.
    IndexError
        A negative segment id, or one ``>= num_segments``.
    TypeError
        Non-numeric values, non-integer offsets/lengths/ids, or nested lists.

    See Also
    --------
    segment_weighted_sum, segment_mean, unsorted_segment_sum, sparse_segment_sum
    numpy.add.reduceat : numpy's equivalent for non-empty segments.

    Notes
    -----
    Null values are skipped; a null row is null in Arrow output and sums to 0 for a
    Jagged. Integers accumulate in int64 and wrap on overflow like numpy. Floats
    accumulate in float64 (a float32 result is rounded once), so a float32 sum is as
    accurate as numpy's float64 sum of the same values. A 1-D float row is summed in
    64-byte vector lanes (value ``i`` into lane ``(i - start) % 16`` for float32, ``% 8``
    for float64) combined in a fixed order: reproducible on any machine, no fast-math.

    Examples
    --------
    >>> values = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
    >>> asp.segment_sum(values, lengths=[3, 4, 2])
    array([ 6, 19,  9])
    >>> asp.segment_sum(values, offsets=[0, 3, 7, 9], num_segments=4)
    array([ 6, 19,  9,  0])
    >>> asp.segment_sum(pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])).to_pylist()
    [6, 19, None, 9]

    Caffe2's matrix example: segments of rows, the feature axis kept.

    >>> data = np.array([[1, 4], [3, 2], [8, 1], [9, 4], [5, 8]])
    >>> asp.segment_sum(data, segment_ids=[0, 0, 0, 1, 1])
    array([[12,  7],
           [14, 12]])
    """
    return _sorted("segment_sum", "sum", values, offsets, lengths, segment_ids, num_segments,
                   min_count, empty_value)


def segment_weighted_sum(values: Any, weights: Any, *, offsets: Any = None,
                         lengths: Any = None, segment_ids: Any = None,
                         num_segments: int | None = None, min_count: int = 0,
                         empty_value: Any = 0) -> Any:
    """Sum each segment with one scalar weight per value (``SortedSegmentWeightedSum``).

    Parameters
    ----------
    values
        The batch, as in :func:`segment_sum`; vector values are scaled as a whole.
    weights
        One weight per value, in the same form as ``values``: a flat array of
        ``len(values)`` for raw values; a Jagged or Arrow list array with the same row
        lengths (e.g. the ``list<float>`` scores column) for list input. A null weights
        row makes the result row null; null weight elements raise.
    offsets, lengths, segment_ids, num_segments
        The row structure of raw ``values``, as in :func:`segment_sum`.
    min_count, empty_value
        Missing rows, as in :func:`segment_sum`.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        ``sum(weights[i] * values[i])`` per row. dtype: ``numpy.result_type(values,
        weights)`` with integers widened to int64 (e.g. float32 with float32 ->
        float32, int64 with float32 -> float64); float results accumulate in float64.

    Raises
    ------
    ValueError
        Weights of the wrong length or row lengths, null weight elements, and the
        structure errors of :func:`segment_sum`.
    IndexError
        A segment id out of range.
    TypeError
        Weights in another form than the values, non-numeric values or weights.

    See Also
    --------
    segment_sum, sparse_segment_weighted_sum, unsorted_segment_weighted_sum

    Examples
    --------
    Caffe2's page-id scores:

    >>> scores = np.array([0.4, 0.7, 0.5, 0.5, 0.1])
    >>> asp.segment_weighted_sum(np.ones(5), scores, lengths=[2, 3])
    array([1.1, 1.1])
    >>> values = pa.array([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
    >>> weights = pa.array([[1.0, 0.0, 1.0], [0.5, 0.5, 0.5, 0.5], [2.0, 0.0]])
    >>> asp.segment_weighted_sum(values, weights).to_pylist()
    [4.0, 9.5, 6.0]
    """
    return _sorted("segment_weighted_sum", "weighted_sum", values, offsets, lengths,
                   segment_ids, num_segments, min_count, empty_value, weights)


def segment_mean(values: Any, *, offsets: Any = None, lengths: Any = None,
                 segment_ids: Any = None, num_segments: int | None = None,
                 min_count: int = 1, empty_value: Any = 0) -> Any:
    """Mean of each segment (Caffe2's ``SortedSegmentRangeMean``).

    Parameters
    ----------
    values
        The batch, as in :func:`segment_sum`.
    offsets, lengths, segment_ids, num_segments
        The row structure of raw ``values``, as in :func:`segment_sum`.
    min_count
        A row with fewer non-null values (at least 1: empty rows) is missing.
    empty_value
        The numpy result of a missing row.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        float32 for float32 values, float64 otherwise; accumulated in float64.

    Raises
    ------
    ValueError, IndexError, TypeError
        As :func:`segment_sum`.

    See Also
    --------
    segment_sum, sparse_segment_mean, unsorted_segment_mean

    Notes
    -----
    The mean divides by the number of non-null values. Empty and null rows are null
    in Arrow output and ``empty_value`` (0) in numpy output.

    Examples
    --------
    >>> asp.segment_mean(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), lengths=[3, 4, 2, 0])
    array([2.  , 4.75, 4.5 , 0.  ])
    >>> asp.segment_mean(pa.array([[1, 2, 3], [], [3, None]])).to_pylist()
    [2.0, None, 3.0]
    """
    return _sorted("segment_mean", "mean", values, offsets, lengths, segment_ids, num_segments,
                   min_count, empty_value)


def segment_max(values: Any, *, offsets: Any = None, lengths: Any = None,
                segment_ids: Any = None, num_segments: int | None = None,
                min_count: int = 1, empty_value: Any = 0) -> Any:
    """Maximum of each segment.

    Parameters
    ----------
    values
        The batch, as in :func:`segment_sum`.
    offsets, lengths, segment_ids, num_segments
        The row structure of raw ``values``, as in :func:`segment_sum`.
    min_count, empty_value
        Missing rows, as in :func:`segment_mean`.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        The values' dtype.

    Raises
    ------
    ValueError, IndexError, TypeError
        As :func:`segment_sum`.

    See Also
    --------
    segment_min, segment_argmax, sparse_segment_max, unsorted_segment_max
    numpy.maximum.reduceat : numpy's equivalent for non-empty segments.

    Notes
    -----
    NaN propagates as in ``numpy.max``: a segment holding a NaN has max NaN. Empty and
    null rows are null (Arrow) or ``empty_value`` (numpy).

    Examples
    --------
    >>> asp.segment_max(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), lengths=[3, 4, 2])
    array([3, 7, 6])
    >>> asp.segment_max(pa.array([[1.0, 2.0], [], [np.nan, 1.0]])).to_pylist()
    [2.0, None, nan]
    """
    return _sorted("segment_max", "max", values, offsets, lengths, segment_ids, num_segments,
                   min_count, empty_value)


def segment_min(values: Any, *, offsets: Any = None, lengths: Any = None,
                segment_ids: Any = None, num_segments: int | None = None,
                min_count: int = 1, empty_value: Any = 0) -> Any:
    """Minimum of each segment.

    Parameters
    ----------
    values
        The batch, as in :func:`segment_sum`.
    offsets, lengths, segment_ids, num_segments
        The row structure of raw ``values``, as in :func:`segment_sum`.
    min_count, empty_value
        Missing rows, as in :func:`segment_mean`.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        The values' dtype.

    Raises
    ------
    ValueError, IndexError, TypeError
        As :func:`segment_sum`.

    See Also
    --------
    segment_max, segment_argmin, unsorted_segment_min

    Notes
    -----
    NaN propagates as in ``numpy.min``. Empty and null rows are null (Arrow) or
    ``empty_value`` (numpy).

    Examples
    --------
    >>> asp.segment_min(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), lengths=[3, 4, 2])
    array([1, 2, 3])
    """
    return _sorted("segment_min", "min", values, offsets, lengths, segment_ids, num_segments,
                   min_count, empty_value)


def segment_prod(values: Any, *, offsets: Any = None, lengths: Any = None,
                 segment_ids: Any = None, num_segments: int | None = None,
                 min_count: int = 0, empty_value: Any = 1) -> Any:
    """Product of each segment.

    Parameters
    ----------
    values
        The batch, as in :func:`segment_sum`.
    offsets, lengths, segment_ids, num_segments
        The row structure of raw ``values``, as in :func:`segment_sum`.
    min_count, empty_value
        Missing rows, as in :func:`segment_sum`; empty rows give 1 by default.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        dtypes as :func:`segment_sum` (int64 wraps on overflow; float32 multiplies in
        float64).

    Raises
    ------
    ValueError, IndexError, TypeError
        As :func:`segment_sum`.

    See Also
    --------
    segment_sum, segment_logsumexp

    Examples
    --------
    >>> asp.segment_prod(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), lengths=[3, 4, 2, 0])
    array([  6, 336,  18,   1])
    """
    return _sorted("segment_prod", "prod", values, offsets, lengths, segment_ids, num_segments,
                   min_count, empty_value)


def segment_logsumexp(values: Any, *, offsets: Any = None, lengths: Any = None,
                      segment_ids: Any = None, num_segments: int | None = None,
                      min_count: int = 1, empty_value: Any = -np.inf) -> Any:
    """``log(sum(exp(x)))`` of each segment, numerically stable (``SortedSegmentRangeLogSumExp``).

    Parameters
    ----------
    values
        The batch, as in :func:`segment_sum`.
    offsets, lengths, segment_ids, num_segments
        The row structure of raw ``values``, as in :func:`segment_sum`.
    min_count
        Missing rows, as in :func:`segment_mean`.
    empty_value
        The numpy result of a missing row (default ``-inf``, the log of an empty sum).

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        float32 for float32 values, float64 otherwise.

    Raises
    ------
    ValueError, IndexError, TypeError
        As :func:`segment_sum`.

    See Also
    --------
    segment_max, segment_sum

    Notes
    -----
    Computed in float64 as ``m + log(sum(exp(x - m)))`` with ``m`` the segment max, so
    large values do not overflow. A segment whose max is ``+inf`` gives ``+inf``, one of
    only ``-inf`` gives ``-inf``, one with a NaN gives NaN.

    Examples
    --------
    >>> asp.segment_logsumexp(np.array([1000.0, 1000.0, 0.0]), lengths=[2, 1, 0])
    array([1000.69314718,    0.        ,          -inf])
    """
    return _sorted("segment_logsumexp", "logsumexp", values, offsets, lengths, segment_ids,
                   num_segments, min_count, empty_value)


def segment_argmax(values: Any, *, offsets: Any = None, lengths: Any = None,
                   segment_ids: Any = None, num_segments: int | None = None,
                   empty_value: int = -1) -> Any:
    """Position, within its segment, of each segment's first maximum.

    Parameters
    ----------
    values
        The batch, as in :func:`segment_sum`.
    offsets, lengths, segment_ids, num_segments
        The row structure of raw ``values``, as in :func:`segment_sum`.
    empty_value
        The numpy result of an empty or null row.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        int64 positions counted from the start of each segment (add ``offsets[:-1]``
        for positions in ``values``), like Polars' ``list.arg_max``; vector values give
        one position per column.

    Raises
    ------
    ValueError, IndexError, TypeError
        As :func:`segment_sum`.

    See Also
    --------
    segment_max, segment_argmin, numpy.argmax

    Notes
    -----
    Ties go to the first position; the first NaN wins, as in ``numpy.argmax``. Null
    values are never chosen. Empty and null rows are null (Arrow) or ``empty_value``.

    Examples
    --------
    >>> asp.segment_argmax(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), lengths=[3, 4, 2])
    array([2, 3, 1])
    """
    return _sorted("segment_argmax", "argmax", values, offsets, lengths, segment_ids,
                   num_segments, 1, empty_value)


def segment_argmin(values: Any, *, offsets: Any = None, lengths: Any = None,
                   segment_ids: Any = None, num_segments: int | None = None,
                   empty_value: int = -1) -> Any:
    """Position, within its segment, of each segment's first minimum.

    Parameters
    ----------
    values
        The batch, as in :func:`segment_sum`.
    offsets, lengths, segment_ids, num_segments
        The row structure of raw ``values``, as in :func:`segment_sum`.
    empty_value
        The numpy result of an empty or null row.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        int64 positions counted from the start of each segment.

    Raises
    ------
    ValueError, IndexError, TypeError
        As :func:`segment_sum`.

    See Also
    --------
    segment_argmax, segment_min, numpy.argmin

    Notes
    -----
    As :func:`segment_argmax`, with the first minimum.

    Examples
    --------
    >>> asp.segment_argmin(pa.array([[1, 2, 3], [2, 4, 6, 7], [], [6, 3]])).to_pylist()
    [0, 0, None, 1]
    """
    return _sorted("segment_argmin", "argmin", values, offsets, lengths, segment_ids,
                   num_segments, 1, empty_value)


# ================================================================== unsorted reductions
def _unsorted(func: str, op: str, values: Any, segment_ids: Any, num_segments: Any,
              min_count: Any, empty_value: Any, weights: Any = None) -> Any:
    """Check -> scatter kernel -> wrap for every unsorted reduction ``op``."""
    if _is_list_input(values):
        msg = (f"{func}: values must be flat (one value per segment id), got a list array; "
               f"use {func.replace('unsorted_', '')} for jagged rows")
        raise ArrowSparseTypeError(msg)
    vals, vmask = _flat(func, "values", values)
    ids, count = v.check_segment_ids(func, "segment_ids", segment_ids, len(vals), num_segments)
    if ids.dtype not in (np.int32, np.int64):
        ids = ids.astype(np.int64)
    rows = _Rows(vals, np.zeros(1, np.int64), None, vmask, isinstance(values, (
        pa.Array, pa.ChunkedArray)), False)
    vals2 = rows.values_2d()
    w = None
    if op == "weighted_sum":
        w, _, _ = _weights(func, weights, rows)
    mc = _min_count(func, min_count, 0 if op in ("sum", "weighted_sum") else 1)
    out_dtype = _OUT_DTYPE[op](rows.dtype, None if w is None else w.dtype)
    empty = _empty_scalar(func, empty_value, out_dtype)
    counts = np.zeros(count, dtype=np.int64)
    if op in ("max", "min"):
        out = np.full((count, vals2.shape[1]), _lowest(vals2.dtype, op == "min"))
        _kernel("scatter_extreme")(vals2, ids, _u8(vmask), op == "max", out, counts)
    else:
        zero = np.float64(0) if op == "mean" else _acc_zero(out_dtype)
        acc = np.zeros((count, vals2.shape[1]), dtype=zero.dtype)
        _kernel("scatter_add")(vals2, ids, _u8(vmask), w, zero, acc, counts)
        if op == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                acc /= counts[:, None]
        out = acc.astype(out_dtype, copy=False)
    missing = counts < mc
    if missing.any():
        out[missing] = empty
    if out_dtype.kind == "b":
        out = out.view(bool)
    rows.offsets = np.zeros(count + 1, np.int64)
    rows.chunked = isinstance(values, pa.ChunkedArray)
    return _finish(rows, None, out, counts, mc, rows.inner)


def unsorted_segment_sum(values: Any, segment_ids: Any, num_segments: int | None = None, *,
                         min_count: int = 0, empty_value: Any = 0) -> Any:
    """Sum values by segment id, ids in any order (Caffe2's ``UnsortedSegmentSum``).

    Parameters
    ----------
    values
        Flat values ``[N, ...]``: numpy, a sequence, or an Arrow array (null values are
        skipped; ``fixed_size_list`` for vectors; a ChunkedArray is combined).
    segment_ids
        Segment of each value, in any order, each in ``[0, num_segments)``.
    num_segments
        Number of output rows; default ``max(segment_ids) + 1``.
    min_count, empty_value
        Missing rows, as in :func:`segment_sum`.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        ``[num_segments, ...]``, dtypes as :func:`segment_sum`. A ChunkedArray input
        gives a one-chunk ChunkedArray.

    Raises
    ------
    ValueError
        Segment ids not one per value, or an ``empty_value`` that does not fit.
    IndexError
        A negative segment id, or one ``>= num_segments``.
    TypeError
        Non-numeric values, non-integer ids, or a list array (use :func:`segment_sum`).

    See Also
    --------
    segment_sum : Sorted segments (faster, parallel).

    Notes
    -----
    Values are added in input order (serial and deterministic). Segments that no value
    maps to sum to 0.

    Examples
    --------
    Caffe2's unsorted segment ids:

    >>> values = np.array([4, 1, 3, 6, 3, 2, 7, 2, 6])
    >>> asp.unsorted_segment_sum(values, [1, 0, 2, 1, 0, 1, 1, 0, 2])
    array([ 6, 19,  9])
    """
    return _unsorted("unsorted_segment_sum", "sum", values, segment_ids, num_segments,
                     min_count, empty_value)


def unsorted_segment_weighted_sum(values: Any, weights: Any, segment_ids: Any,
                                  num_segments: int | None = None, *, min_count: int = 0,
                                  empty_value: Any = 0) -> Any:
    """Weighted sum by segment id, ids in any order (``UnsortedSegmentWeightedSum``).

    Parameters
    ----------
    values
        Flat values, as in :func:`unsorted_segment_sum`.
    weights
        One scalar weight per value (flat, no nulls).
    segment_ids
        Segment of each value, in any order.
    num_segments
        Number of output rows; default ``max(segment_ids) + 1``.
    min_count, empty_value
        Missing rows, as in :func:`segment_sum`.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        dtypes as :func:`segment_weighted_sum`.

    Raises
    ------
    ValueError, IndexError, TypeError
        As :func:`unsorted_segment_sum`, plus weights of the wrong length.

    See Also
    --------
    segment_weighted_sum, unsorted_segment_sum

    Examples
    --------
    >>> asp.unsorted_segment_weighted_sum(np.array([1.0, 2.0, 3.0]), [0.5, 1.0, 2.0],
    ...                                   [1, 0, 1])
    array([2. , 6.5])
    """
    return _unsorted("unsorted_segment_weighted_sum", "weighted_sum", values, segment_ids,
                     num_segments, min_count, empty_value, weights)


def unsorted_segment_mean(values: Any, segment_ids: Any, num_segments: int | None = None, *,
                          min_count: int = 1, empty_value: Any = 0) -> Any:
    """Mean by segment id, ids in any order.

    Parameters
    ----------
    values
        Flat values, as in :func:`unsorted_segment_sum`.
    segment_ids
        Segment of each value, in any order.
    num_segments
        Number of output rows; default ``max(segment_ids) + 1``.
    min_count, empty_value
        Missing rows, as in :func:`segment_mean`.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        dtypes as :func:`segment_mean`.

    Raises
    ------
    ValueError, IndexError, TypeError
        As :func:`unsorted_segment_sum`.

    See Also
    --------
    segment_mean, unsorted_segment_sum

    Examples
    --------
    >>> values = pa.array([4.0, 1.0, None, 6.0])
    >>> asp.unsorted_segment_mean(values, [1, 0, 0, 1], num_segments=3).to_pylist()
    [1.0, 5.0, None]
    """
    return _unsorted("unsorted_segment_mean", "mean", values, segment_ids, num_segments,
                     min_count, empty_value)


def unsorted_segment_max(values: Any, segment_ids: Any, num_segments: int | None = None, *,
                         min_count: int = 1, empty_value: Any = 0) -> Any:
    """Maximum by segment id, ids in any order; NaN propagates.

    Parameters
    ----------
    values
        Flat values, as in :func:`unsorted_segment_sum`.
    segment_ids
        Segment of each value, in any order.
    num_segments
        Number of output rows; default ``max(segment_ids) + 1``.
    min_count, empty_value
        Missing rows, as in :func:`segment_mean`.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        The values' dtype.

    Raises
    ------
    ValueError, IndexError, TypeError
        As :func:`unsorted_segment_sum`.

    See Also
    --------
    segment_max, unsorted_segment_min

    Examples
    --------
    >>> asp.unsorted_segment_max(np.array([4, 1, 3, 6, 3, 2, 7, 2, 6]),
    ...                          [1, 0, 2, 1, 0, 1, 1, 0, 2], num_segments=4)
    array([3, 7, 6, 0])
    """
    return _unsorted("unsorted_segment_max", "max", values, segment_ids, num_segments,
                     min_count, empty_value)


def unsorted_segment_min(values: Any, segment_ids: Any, num_segments: int | None = None, *,
                         min_count: int = 1, empty_value: Any = 0) -> Any:
    """Minimum by segment id, ids in any order; NaN propagates.

    Parameters
    ----------
    values
        Flat values, as in :func:`unsorted_segment_sum`.
    segment_ids
        Segment of each value, in any order.
    num_segments
        Number of output rows; default ``max(segment_ids) + 1``.
    min_count, empty_value
        Missing rows, as in :func:`segment_mean`.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        The values' dtype.

    Raises
    ------
    ValueError, IndexError, TypeError
        As :func:`unsorted_segment_sum`.

    See Also
    --------
    segment_min, unsorted_segment_max

    Examples
    --------
    >>> asp.unsorted_segment_min(np.array([4, 1, 3, 6, 3, 2, 7, 2, 6]),
    ...                          [1, 0, 2, 1, 0, 1, 1, 0, 2])
    array([1, 2, 3])
    """
    return _unsorted("unsorted_segment_min", "min", values, segment_ids, num_segments,
                     min_count, empty_value)


# ====================================================================== fused (Sparse*)
def _table(func: str, data: Any) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Return the table as given, as a ``[V, D]`` C-contiguous view, and its row shape."""
    arr, mask = _flat(func, "data", data)
    if mask is not None:
        pos = v.first_true(~mask)
        v.fail_value(func, "data", "must not contain null rows", pos, None)
    table = np.ascontiguousarray(arr.view(np.uint8) if arr.dtype.kind == "b" else arr)
    return arr, table.reshape(len(table), _width(table)), arr.shape[1:]


def _check_ids(func: str, arg: str, rows: _Rows, bound: int) -> np.ndarray:
    """Bounds-check the ids the rows address (null rows and null ids are not read)."""
    ids = rows.values
    if ids.ndim != 1 or ids.dtype.kind not in "iu" or rows.dtype.kind == "b":
        msg = f"{func}: {arg} must be 1-D integers, got {rows.dtype} of shape {ids.shape}"
        raise ArrowSparseTypeError(msg)
    if ids.dtype.kind == "u":
        ids = v.as_index_array(func, arg, ids)
    if ids.dtype not in (np.int32, np.int64):
        ids = ids.astype(np.int64)
    start, stop = int(rows.offsets[0]), int(rows.offsets[-1])
    used = ids[start:stop]
    if not len(used) or (used.min() >= 0 and used.max() < bound):
        return ids  # the common case: two passes, no temporaries
    bad = (used < 0) | (used >= bound)
    if rows.vmask is not None:
        bad &= rows.vmask[start:stop]
    if rows.valid is not None and not rows.valid.all():
        bad &= np.repeat(rows.valid, np.diff(rows.offsets))
    if bad.any():
        pos = v.first_true(bad)
        msg = (f"{func}: {arg} out of range [0, {bound}) "
               f"(first at position {start + pos}: {used[pos]})")
        raise ArrowSparseIndexError(msg)
    return ids


def _fused(func: str, mode: str, data: Any, indices: Any, offsets: Any, lengths: Any,
           segment_ids: Any, num_segments: Any, weights: Any, empty_value: Any,
           names: tuple[str, str] = ("indices", "weights")) -> Any:
    """Check -> gather_reduce kernel -> wrap for the fused ops and embedding_bag."""
    if isinstance(indices, pa.ChunkedArray) and _arrow.is_list_type(indices.type):
        return _per_chunk(func, indices, weights, num_segments, lambda chunk, w: _fused(
            func, mode, data, chunk, offsets, lengths, segment_ids, None, w, empty_value,
            names))
    arr, table, inner = _table(func, data)
    rows = _rows(func, indices, offsets, lengths, segment_ids, num_segments, arg=names[0])
    ids = _check_ids(func, names[0], rows, len(table))
    valid, w, woffs = rows.valid, None, None
    if weights is not None:
        w, woffs, valid = _weights(func, weights, rows, names[1])
    if w is None:
        out_dtype = {"sum": _sum_dtype, "mean": _float_dtype,
                     "max": _same_dtype}[mode](arr.dtype)
    else:
        out_dtype = _float_dtype(np.result_type(arr.dtype, w.dtype)) if mode == "mean" \
            else _sum_dtype(np.result_type(arr.dtype, w.dtype))
    mc = 0 if mode == "sum" else 1
    empty = _empty_scalar(func, empty_value, out_dtype)
    zero = np.float64(0) if mode == "mean" else _acc_zero(out_dtype)
    lowest = _lowest(zero.dtype)
    out = np.empty((rows.num_rows, table.shape[1]),
                   dtype=np.uint8 if out_dtype.kind == "b" else out_dtype)
    counts = np.empty(rows.num_rows, np.int64) if rows.arrow and mc and rows.vmask is not None \
        else None
    _kernel("gather_reduce")(table, ids, rows.offsets, _u8(valid), _u8(rows.vmask), w, woffs,
                             _MODES[mode], zero, lowest, mc, empty, out, counts)
    if out_dtype.kind == "b":
        out = out.view(bool)
    return _finish(rows, valid, out, counts, mc, inner)


def sparse_segment_sum(data: Any, indices: Any, *, offsets: Any = None, lengths: Any = None,
                       segment_ids: Any = None, num_segments: int | None = None,
                       weights: Any = None) -> Any:
    """Gather rows of ``data`` by ``indices``, then sum per segment, fused.

    Caffe2's ``SparseLengthsSum`` / ``SparseSortedSegmentSum``: the same result as
    ``segment_sum(gather(data, indices), ...)`` without materialising the gathered rows.

    Parameters
    ----------
    data
        The table ``[V, ...]``: numpy, a sequence, or a flat Arrow array without nulls
        (``fixed_size_list`` for vectors).
    indices
        Row numbers into ``data``: raw integers with one of ``offsets``/``lengths``/
        ``segment_ids``, or a Jagged / Arrow list array (or ChunkedArray) of them, whose
        null rows give null (Arrow) or empty rows and whose null ids are skipped.
    offsets, lengths, segment_ids, num_segments
        The segments of raw ``indices``, as in :func:`segment_sum`.
    weights
        Optional weight per index, in the same form as ``indices``; each gathered row is
        scaled by it before the reduction.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        ``[segments, ...]`` (``data``'s row shape kept); dtypes as :func:`segment_sum`
        (as :func:`segment_weighted_sum` with weights).

    Raises
    ------
    IndexError
        An index outside ``[0, len(data))``, or a segment id out of range.
    ValueError
        Malformed structure, weights of the wrong length, null rows in ``data``.
    TypeError
        Non-integer indices, non-numeric data.

    See Also
    --------
    embedding_bag : The same with PyTorch's argument names.
    gather, segment_sum

    Notes
    -----
    Empty segments sum to 0. Integers accumulate in int64. Float tables accumulate in
    float64; for speed, runs of up to 4 gathered rows are first summed in the table's
    dtype (in registers), so a float32 result is within ``3 * 2**-24 * sum(|x|)`` of the
    exact sum whatever the segment length (float64 accumulation alone: the final
    rounding). Rows are prefetched eight indices ahead.

    Examples
    --------
    Caffe2's batch of page ids, pooled from a 1-wide table of ``10 * id``:

    >>> table = np.arange(8) * 10
    >>> ids = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
    >>> asp.sparse_segment_sum(table, ids, lengths=[3, 4, 2])
    array([ 60, 190,  90])
    >>> asp.sparse_segment_sum(table, pa.array([[1, 2, 3], None, [3, 6]])).to_pylist()
    [60, None, 90]
    """
    return _fused("sparse_segment_sum", "sum", data, indices, offsets, lengths, segment_ids,
                  num_segments, weights, 0)


def sparse_segment_weighted_sum(data: Any, indices: Any, *, weights: Any, offsets: Any = None,
                                lengths: Any = None, segment_ids: Any = None,
                                num_segments: int | None = None) -> Any:
    """Gather rows by ``indices``, scale each by its weight, sum per segment, fused.

    Caffe2's ``SparseLengthsWeightedSum``.

    Parameters
    ----------
    data
        The table, as in :func:`sparse_segment_sum`.
    indices
        Row numbers into ``data``, as in :func:`sparse_segment_sum`.
    weights
        One weight per index, in the same form as ``indices`` (required).
    offsets, lengths, segment_ids, num_segments
        The segments of raw ``indices``, as in :func:`segment_sum`.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        dtypes as :func:`segment_weighted_sum`.

    Raises
    ------
    IndexError, ValueError, TypeError
        As :func:`sparse_segment_sum`.

    See Also
    --------
    sparse_segment_sum, embedding_bag

    Examples
    --------
    >>> table = np.array([[1.0, 4.0], [3.0, 2.0], [8.0, 1.0]])
    >>> asp.sparse_segment_weighted_sum(table, [2, 0, 1], weights=[0.5, 2.0, 1.0],
    ...                                 lengths=[2, 1])
    array([[6. , 8.5],
           [3. , 2. ]])
    """
    return _fused("sparse_segment_weighted_sum", "sum", data, indices, offsets, lengths,
                  segment_ids, num_segments, weights, 0)


def sparse_segment_mean(data: Any, indices: Any, *, offsets: Any = None, lengths: Any = None,
                        segment_ids: Any = None, num_segments: int | None = None,
                        weights: Any = None, empty_value: Any = 0) -> Any:
    """Gather rows of ``data`` by ``indices``, then average per segment, fused.

    Parameters
    ----------
    data
        The table, as in :func:`sparse_segment_sum`.
    indices
        Row numbers into ``data``, as in :func:`sparse_segment_sum`.
    offsets, lengths, segment_ids, num_segments
        The segments of raw ``indices``, as in :func:`segment_sum`.
    weights
        Optional weight per index; rows are scaled before averaging (the divisor is
        still the number of non-null indices).
    empty_value
        The numpy result of an empty segment (null in Arrow output).

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        float32 for a float32 table (accumulated in float64), float64 otherwise.

    Raises
    ------
    IndexError, ValueError, TypeError
        As :func:`sparse_segment_sum`.

    See Also
    --------
    segment_mean, embedding_bag

    Examples
    --------
    >>> table = np.arange(8) * 10
    >>> asp.sparse_segment_mean(table, [1, 2, 3, 2, 4, 6, 7, 3, 6], lengths=[3, 4, 2, 0])
    array([20. , 47.5, 45. ,  0. ])
    """
    return _fused("sparse_segment_mean", "mean", data, indices, offsets, lengths, segment_ids,
                  num_segments, weights, empty_value)


def sparse_segment_max(data: Any, indices: Any, *, offsets: Any = None, lengths: Any = None,
                       segment_ids: Any = None, num_segments: int | None = None,
                       weights: Any = None, empty_value: Any = 0) -> Any:
    """Gather rows of ``data`` by ``indices``, then take the max per segment, fused.

    Parameters
    ----------
    data
        The table, as in :func:`sparse_segment_sum`.
    indices
        Row numbers into ``data``, as in :func:`sparse_segment_sum`.
    offsets, lengths, segment_ids, num_segments
        The segments of raw ``indices``, as in :func:`segment_sum`.
    weights
        Optional weight per index; rows are scaled before the max.
    empty_value
        The numpy result of an empty segment (null in Arrow output).

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        ``data``'s dtype (with weights: as :func:`segment_weighted_sum`).

    Raises
    ------
    IndexError, ValueError, TypeError
        As :func:`sparse_segment_sum`.

    See Also
    --------
    segment_max, embedding_bag

    Notes
    -----
    NaN propagates as in ``numpy.max``.

    Examples
    --------
    >>> table = np.arange(8) * 10
    >>> asp.sparse_segment_max(table, [1, 2, 3, 2, 4, 6, 7, 3, 6], lengths=[3, 4, 2])
    array([30, 70, 60])
    """
    return _fused("sparse_segment_max", "max", data, indices, offsets, lengths, segment_ids,
                  num_segments, weights, empty_value)


def embedding_bag(table: Any, ids: Any, *, offsets: Any = None, lengths: Any = None,
                  mode: str = "sum", per_sample_weights: Any = None,
                  include_last_offset: bool = True) -> Any:
    """Pool bags of embedding rows (``torch.nn.functional.embedding_bag`` on Arrow/numpy).

    Parameters
    ----------
    table
        Embedding table ``[num_embeddings, dim]`` (numpy or Arrow ``fixed_size_list``).
    ids
        Row ids: a 1-D integer array with ``offsets`` or ``lengths``, or a Jagged /
        Arrow list array (or ChunkedArray) of bags.
    offsets
        Bag boundaries into ``ids``. With ``include_last_offset=True`` (the default,
        unlike PyTorch) they are ``bags + 1`` long, bag ``i`` being
        ``ids[offsets[i]:offsets[i + 1]]``. With ``include_last_offset=False`` they
        are PyTorch's bag starts (``bags`` long) and the last bag runs to the end.
    lengths
        Bag sizes, summing to ``len(ids)`` (instead of offsets).
    mode
        ``"sum"``, ``"mean"`` or ``"max"``.
    per_sample_weights
        Optional weight per id, in the same form as ``ids``; each row is scaled by it
        before pooling (PyTorch allows it with ``"sum"`` only; here any mode).
    include_last_offset
        Whether ``offsets`` has the final end offset (see ``offsets``).

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        ``[bags, dim]``: Arrow (``fixed_size_list``) when ``ids`` is Arrow, else numpy.
        dtypes as :func:`sparse_segment_sum` / :func:`sparse_segment_mean` /
        :func:`sparse_segment_max`.

    Raises
    ------
    IndexError
        An id outside ``[0, num_embeddings)``.
    ValueError
        An unknown ``mode``, malformed offsets or lengths, both or neither given.
    TypeError
        Non-integer ids, a non-numeric table.

    See Also
    --------
    sparse_segment_sum : The same kernel with Caffe2's names.

    Notes
    -----
    Empty bags give zeros in every mode (as PyTorch does; null in Arrow output for
    ``"mean"`` and ``"max"``). Unlike PyTorch, ``offsets[0]`` may be above 0 (ids before
    it are not read), float32 sums accumulate in float64, and there is no
    ``padding_idx`` (drop those ids, or give them null).

    Examples
    --------
    >>> table = np.arange(16.0).reshape(8, 2)
    >>> ids = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
    >>> asp.embedding_bag(table, ids, offsets=[0, 3, 7, 9])
    array([[12., 15.],
           [38., 42.],
           [18., 20.]])
    >>> asp.embedding_bag(table, ids, offsets=[0, 3, 7], include_last_offset=False,
    ...                   mode="max")
    array([[ 6.,  7.],
           [14., 15.],
           [12., 13.]])
    """
    func = "embedding_bag"
    if not isinstance(include_last_offset, (bool, np.bool_)):
        msg = (f"{func}: include_last_offset must be True or False, "
               f"got {type(include_last_offset).__name__}")
        raise ArrowSparseTypeError(msg)
    if not isinstance(mode, str) or mode not in _MODES:
        msg = f"{func}: mode must be 'sum', 'mean' or 'max', got {mode!r}"
        raise ArrowSparseValueError(msg)
    if not _is_list_input(ids):
        v.check_exactly_one(func, offsets=offsets, lengths=lengths)
        if offsets is not None and not include_last_offset:
            starts = v.as_index_array(func, "offsets", offsets)
            num_ids = len(ids) if isinstance(ids, (np.ndarray, pa.Array, pa.ChunkedArray)) \
                else len(v.as_index_array(func, "ids", ids))
            offsets = np.append(starts, np.array(num_ids, dtype=starts.dtype))
    return _fused(func, mode, table, ids, offsets, lengths, None, None, per_sample_weights, 0,
                  ("ids", "per_sample_weights"))


# ==================================================================== gather / scatter
def _index_ndim(indices: Any) -> int:
    if isinstance(indices, (pa.Array, pa.ChunkedArray)):
        return 1
    try:
        return int(np.ndim(indices))
    except (ValueError, TypeError):  # ragged or odd: as_index_array reports it
        return 1


def gather(data: Any, indices: Any) -> Any:
    """Rows of ``data`` at ``indices`` (Caffe2's ``Gather``; an embedding lookup).

    Parameters
    ----------
    data
        numpy array ``[V, ...]``, or any Arrow array or ChunkedArray.
    indices
        Integer row numbers in ``[0, V)``; any shape for numpy data, 1-D for Arrow.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        ``[*indices.shape, ...]`` of ``data``'s dtype (a copy); Arrow data gives the
        same Arrow type (``Array.take``; nulls kept).

    Raises
    ------
    IndexError
        An index outside ``[0, V)`` (negative indices do not wrap).
    TypeError
        Non-integer indices, or data that is not an array.

    See Also
    --------
    sparse_segment_sum : Gather and reduce without materialising the rows.
    numpy.take

    Examples
    --------
    >>> table = np.array([[1, 4], [3, 2], [8, 1]])
    >>> asp.gather(table, [2, 0, 2])
    array([[8, 1],
           [1, 4],
           [8, 1]])
    >>> asp.gather(pa.array([[1, 2, 3], [2, 4, 6, 7], [3, 6]]), [2, 0]).to_pylist()
    [[3, 6], [1, 2, 3]]
    """
    func = "gather"
    if isinstance(data, (pa.Array, pa.ChunkedArray)):
        idx = v.check_indices(func, "indices", indices, len(data))
        return data.take(pa.array(idx))
    arr = v.as_values_array(func, "data", data)
    idx = v.check_indices(func, "indices", indices, len(arr), ndim=_index_ndim(indices))
    return np.take(arr, idx, axis=0)


def _writable(func: str, data: Any) -> np.ndarray:
    if not isinstance(data, np.ndarray):
        msg = (f"{func}: data must be a numpy array (updated in place), got "
               f"{type(data).__name__}; Arrow arrays are immutable")
        raise ArrowSparseTypeError(msg)
    if data.ndim == 0 or not data.flags.writeable or not data.flags.c_contiguous:
        msg = f"{func}: data must be a writable, C-contiguous array of at least 1 dimension"
        raise ArrowSparseValueError(msg)
    return v.as_values_array(func, "data", data)


def _slices(func: str, slices: Any, data: np.ndarray, num: int) -> np.ndarray:
    arr = v.as_values_array(func, "slices", slices, min_ndim=0)
    if arr.shape != (num,) + data.shape[1:]:
        msg = (f"{func}: slices must have shape {(num,) + data.shape[1:]} (one data row "
               f"per index), got {arr.shape}")
        raise ArrowSparseValueError(msg)
    if not np.can_cast(arr.dtype, data.dtype, "same_kind"):
        msg = f"{func}: slices of dtype {arr.dtype} cannot be written into {data.dtype} data"
        raise ArrowSparseTypeError(msg)
    return np.ascontiguousarray(arr, dtype=data.dtype).reshape(num, _width(data))


def scatter_assign(data: Any, indices: Any, slices: Any) -> np.ndarray:
    """Overwrite rows of ``data`` in place: ``data[indices[i]] = slices[i]`` (``ScatterAssign``).

    Parameters
    ----------
    data
        Writable, C-contiguous numpy array ``[V, ...]``.
    indices
        1-D integer row numbers in ``[0, V)``.
    slices
        ``[len(indices), ...]`` new rows, castable to ``data``'s dtype (same kind).

    Returns
    -------
    numpy.ndarray
        ``data`` itself.

    Raises
    ------
    IndexError
        An index outside ``[0, V)``.
    ValueError
        ``slices`` of the wrong shape; read-only or non-contiguous ``data``.
    TypeError
        ``data`` not a numpy array (Arrow is immutable), or a lossy ``slices`` dtype.

    See Also
    --------
    scatter_weighted_sum, gather

    Notes
    -----
    Rows are written in index order, so for a repeated index the last write wins
    (deterministically).

    Examples
    --------
    >>> data = np.zeros((3, 2), dtype=np.int64)
    >>> asp.scatter_assign(data, [2, 0, 2], np.array([[1, 4], [3, 2], [8, 1]]))
    array([[3, 2],
           [0, 0],
           [8, 1]])
    """
    func = "scatter_assign"
    arr = _writable(func, data)
    idx = v.check_indices(func, "indices", indices, len(arr))
    rows = _slices(func, slices, arr, len(idx))
    view = arr.view(np.uint8) if arr.dtype.kind == "b" else arr
    _kernel("scatter_assign")(view.reshape(len(arr), _width(arr)), idx,
                              rows.view(np.uint8) if rows.dtype.kind == "b" else rows)
    return arr


def scatter_weighted_sum(data: Any, w0: Any, indices: Any, slices: Any, w1: Any) -> np.ndarray:
    """In place: ``data[idx] = w0 * data[idx] + w1 * slices`` (Caffe2's ``ScatterWeightedSum``).

    Parameters
    ----------
    data
        Writable, C-contiguous float numpy array ``[V, ...]``.
    w0
        Weight of the existing rows: a number or a one-element array.
    indices
        1-D integer row numbers in ``[0, V)``.
    slices
        ``[len(indices), ...]`` rows to add.
    w1
        Weight of ``slices``: a number or a one-element array.

    Returns
    -------
    numpy.ndarray
        ``data`` itself.

    Raises
    ------
    IndexError
        An index outside ``[0, V)``.
    ValueError
        ``slices`` of the wrong shape, weights that are not one number, read-only or
        non-contiguous ``data``.
    TypeError
        Non-float ``data``, or ``data`` that is not a numpy array.

    See Also
    --------
    scatter_assign

    Notes
    -----
    Indices are processed in order, as Caffe2's loop does: an index that appears
    ``k`` times is scaled by ``w0`` ``k`` times, each time adding its slice (so
    ``w0 = 1`` accumulates every duplicate). Each update is computed in float64 and
    rounded once to ``data``'s dtype.

    Examples
    --------
    >>> data = np.ones((3, 2))
    >>> asp.scatter_weighted_sum(data, 0.5, [0, 2], np.array([[1.0, 2.0], [3.0, 4.0]]), 2.0)
    array([[2.5, 4.5],
           [1. , 1. ],
           [6.5, 8.5]])
    """
    func = "scatter_weighted_sum"
    arr = _writable(func, data)
    if arr.dtype.kind != "f":
        msg = f"{func}: data must have a float dtype, got {arr.dtype}"
        raise ArrowSparseTypeError(msg)
    weights = []
    for name, w in (("w0", w0), ("w1", w1)):
        try:
            warr = np.asarray(w) if isinstance(w, (int, float, np.generic, np.ndarray, list)) \
                else None
        except (ValueError, TypeError):
            warr = None
        if warr is None or warr.size != 1 or warr.dtype.kind not in "biuf":
            msg = f"{func}: {name} must be a real number (or a one-element array)"
            raise ArrowSparseValueError(msg)
        weights.append(float(warr.reshape(())))
    idx = v.check_indices(func, "indices", indices, len(arr))
    rows = _slices(func, slices, arr, len(idx))
    _kernel("scatter_weighted_sum")(arr.reshape(len(arr), _width(arr)), weights[0], idx, rows,
                                    weights[1])
    return arr
