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

Every function also runs on the GPU: CuPy arrays (or a :class:`~arrow_sparse.Jagged` on
the device) in, CuPy arrays out, through the CUDA kernels of ``kernels/cuda/segment.cu``.
A device Jagged reduces like a host one (null rows as empty rows); nothing is Arrow on
the device. Host and device inputs together raise a TypeError. Bad structure or
indices in device inputs are found by device checks and raised by the next check (or
at once where a function reads a device value anyway); each docstring's Notes say what
it reads back.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from . import _arrow
from . import _validate as v
from ._backend import array_module, device_checks
from ._segment_args import (
    _OUT_DTYPE,
    _acc_zero,
    _empty_scalar,
    _finish,
    _flat,
    _is_list_input,
    _kernel,
    _lowest,
    _min_count,
    _per_chunk,
    _Rows,
    _rows,
    _u8,
    _weights,
)
from ._segment_sparse import (
    embedding_bag,
    gather,
    scatter_assign,
    scatter_weighted_sum,
    sparse_segment_max,
    sparse_segment_mean,
    sparse_segment_sum,
    sparse_segment_weighted_sum,
)
from .errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError

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

# ======================================================================== sorted driver
def _sorted(func: str, op: str, values: Any, offsets: Any, lengths: Any, segment_ids: Any,
            num_segments: Any, min_count: Any, empty_value: Any, weights: Any = None) -> Any:
    """Check -> kernel -> wrap for every sorted reduction ``op``."""
    if isinstance(values, pa.ChunkedArray) and _arrow.is_list_type(values.type):
        return _per_chunk(func, values, weights, num_segments, lambda chunk, w: _sorted(
            func, op, chunk, offsets, lengths, segment_ids, None, min_count, empty_value, w))
    xp = array_module(func, values=values, weights=weights, offsets=offsets, lengths=lengths,
                      segment_ids=segment_ids)
    rows = _rows(func, values, offsets, lengths, segment_ids, num_segments)
    vals, valid = rows.values, rows.valid
    w = woffs = None
    if op == "weighted_sum":
        w, woffs, valid = _weights(func, weights, rows)
    mc = _min_count(func, min_count, 0 if op in ("sum", "weighted_sum", "prod") else 1)
    out_dtype = _OUT_DTYPE[op](rows.dtype, None if w is None else w.dtype)
    empty = _empty_scalar(func, empty_value, out_dtype)
    out = v.empty(func, (rows.num_rows,) + vals.shape[1:],
                  np.dtype(np.uint8) if out_dtype.kind == "b" else out_dtype, xp)
    want_counts = rows.arrow and mc > 0  # the kernel counts; cheaper than np.diff later
    counts = np.empty(rows.num_rows, dtype=np.int64) if want_counts else None
    vmask = _u8(rows.vmask)
    if op in ("sum", "mean", "weighted_sum"):
        zero = np.float64(0) if op == "mean" else _acc_zero(out_dtype)
        _kernel("sorted_sum", xp)(vals, rows.offsets, _u8(valid), vmask, w, woffs,
                                  op == "mean", zero, mc, empty, out, counts)
    elif op in ("max", "min"):
        _kernel("sorted_extreme", xp)(vals, rows.offsets, _u8(valid), vmask, op == "max",
                                      _lowest(vals.dtype, op == "min"), mc,
                                      out.dtype.type(empty), out, counts)
    else:
        vals2 = rows.values_2d()
        out2 = out.reshape(rows.num_rows, vals2.shape[1])
        if op == "prod":
            _kernel("sorted_prod", xp)(vals2, rows.offsets, _u8(valid), vmask,
                                       _acc_zero(out_dtype).dtype.type(1), mc, empty, out2,
                                       counts)
        elif op == "logsumexp":
            _kernel("sorted_logsumexp", xp)(vals2, rows.offsets, _u8(valid), vmask, mc,
                                            empty, out2, counts)
        else:
            _kernel("sorted_arg_extreme", xp)(vals2, rows.offsets, _u8(valid), vmask,
                                              op == "argmax", mc, empty, out2, counts)
    if out_dtype.kind == "b":
        out = out.view(bool)
    result = _finish(rows, valid, out, counts, mc, rows.inner)
    device_checks(func, xp)
    return result


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

    On the device (CuPy values, a device Jagged): no synchronisation, except with
    ``segment_ids`` and no ``num_segments`` (the last id is read back: one).

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

    Notes
    -----
    On the device (CuPy values, a device Jagged): no synchronisation, except with
    ``segment_ids`` and no ``num_segments`` (the last id is read back: one).

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

    On the device (CuPy values, a device Jagged): no synchronisation, except with
    ``segment_ids`` and no ``num_segments`` (the last id is read back: one).

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
    NaN propagates as in ``numpy.max``: a segment holding a NaN has max NaN. The max of
    ``-0.0`` and ``0.0`` is ``0.0`` (IEEE 754-2019 ``maximum``; numpy keeps whichever
    comes first), on every path and device. Empty and null rows are null (Arrow) or
    ``empty_value`` (numpy).

    On the device (CuPy values, a device Jagged): no synchronisation, except with
    ``segment_ids`` and no ``num_segments`` (the last id is read back: one).

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
    NaN propagates as in ``numpy.min``; the min of ``-0.0`` and ``0.0`` is ``-0.0`` (IEEE
    754-2019 ``minimum``). Empty and null rows are null (Arrow) or ``empty_value``
    (numpy).

    On the device (CuPy values, a device Jagged): no synchronisation, except with
    ``segment_ids`` and no ``num_segments`` (the last id is read back: one).

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

    Notes
    -----
    On the device (CuPy values, a device Jagged): no synchronisation, except with
    ``segment_ids`` and no ``num_segments`` (the last id is read back: one).

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

    On the device (CuPy values, a device Jagged): no synchronisation, except with
    ``segment_ids`` and no ``num_segments`` (the last id is read back: one).

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

    On the device (CuPy values, a device Jagged): no synchronisation, except with
    ``segment_ids`` and no ``num_segments`` (the last id is read back: one).

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

    On the device (CuPy values, a device Jagged): no synchronisation, except with
    ``segment_ids`` and no ``num_segments`` (the last id is read back: one).

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
    xp = array_module(func, values=values, weights=weights, segment_ids=segment_ids)
    vals, vmask = _flat(func, "values", values)
    ids, count = _segment_ids(func, segment_ids, len(vals), num_segments)
    rows = _Rows(vals, xp.zeros(1, np.int64), None, vmask, isinstance(values, (
        pa.Array, pa.ChunkedArray)), False)
    w = None
    if op == "weighted_sum":
        w, _, _ = _weights(func, weights, rows)
    mc = _min_count(func, min_count, 0 if op in ("sum", "weighted_sum") else 1)
    out_dtype = _OUT_DTYPE[op](rows.dtype, None if w is None else w.dtype)
    empty = _empty_scalar(func, empty_value, out_dtype)
    out = v.empty(func, (count,) + rows.values.shape[1:],
                  np.dtype(np.uint8) if out_dtype.kind == "b" else out_dtype, xp)
    counts = np.empty(count, np.int64) if rows.arrow and mc > 0 else None
    if op in ("max", "min"):
        bad = _kernel("scatter_extreme", xp)(rows.values, ids, _u8(vmask), op == "max",
                                             _lowest(rows.values.dtype, op == "min"), mc,
                                             out.dtype.type(empty), out, counts)
    else:
        zero = np.float64(0) if op == "mean" else _acc_zero(out_dtype)
        bad = _kernel("scatter_sum", xp)(rows.values, ids, _u8(vmask), w, op == "mean", zero,
                                         mc, empty, out, counts)
    if bad >= 0:  # host arrays only: device kernels record it in the error word
        problem = "must be non-negative" if ids[bad] < 0 else f"must be < num_segments={count}"
        raise ArrowSparseIndexError(v.message(func, "segment_ids", problem, bad, ids[bad]))
    if out_dtype.kind == "b":
        out = out.view(bool)
    rows.chunked = isinstance(values, pa.ChunkedArray)
    result = _finish(rows, None, out, counts, mc, rows.inner)
    device_checks(func, xp)
    return result


def _segment_ids(func: str, segment_ids: Any, num_values: int,
                 num_segments: Any) -> tuple[np.ndarray, int]:
    """Unsorted segment ids (int32 or int64) and the number of segments.

    With ``num_segments`` given, signed integer ids are only converted here: the
    kernel checks their range as it reads them, which saves two passes over them.
    Without it, device ids are checked on the device and their maximum read back.
    """
    unsigned = (pa.types.is_unsigned_integer(segment_ids.type)
                if isinstance(segment_ids, (pa.Array, pa.ChunkedArray))
                else getattr(getattr(segment_ids, "dtype", None), "kind", "") == "u")
    if num_segments is None or unsigned:  # uint64 ids may not fit int64: the full check
        ids, count = v.check_segment_ids(func, "segment_ids", segment_ids, num_values,
                                         num_segments, device=True)
    else:
        ids = v.as_index_array(func, "segment_ids", segment_ids, device=True)
        if len(ids) != num_values:
            msg = (f"{func}: segment_ids has length {len(ids)} but there are {num_values} "
                   "values")
            raise ArrowSparseValueError(msg)
        count = v.check_count(func, "num_segments", num_segments)
    if ids.dtype not in (np.int32, np.int64):
        ids = ids.astype(np.int64)
    return ids, count


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
    Segments that no value maps to sum to 0. Integers accumulate in int64 (exact, wrapping
    like numpy), floats in float64. A large input is split into one contiguous part per
    thread; each part adds its values in input order into its own partial sums, which
    are then added in part order. So float results are deterministic for a given
    number of threads (``numba.get_num_threads()``) and may differ from a one-thread
    run only by float64 rounding. Segment ids are range-checked as they are read when
    ``num_segments`` is given.

    On the device (CuPy values and ids): no synchronisation with ``num_segments``;
    without it the largest id is read back (one), which also raises the device
    check of the ids at once.

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

    Notes
    -----
    On the device (CuPy values and ids): no synchronisation with ``num_segments``;
    without it the largest id is read back (one), which also raises the device
    check of the ids at once.

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

    Notes
    -----
    On the device (CuPy values and ids): no synchronisation with ``num_segments``;
    without it the largest id is read back (one), which also raises the device
    check of the ids at once.

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
    """Maximum by segment id, ids in any order; NaN propagates, ``max(-0.0, 0.0) = 0.0``.

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

    Notes
    -----
    On the device (CuPy values and ids): no synchronisation with ``num_segments``;
    without it the largest id is read back (one), which also raises the device
    check of the ids at once.

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
    """Minimum by segment id, ids in any order; NaN propagates, ``min(-0.0, 0.0) = -0.0``.

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

    Notes
    -----
    On the device (CuPy values and ids): no synchronisation with ``num_segments``;
    without it the largest id is read back (one), which also raises the device
    check of the ids at once.

    Examples
    --------
    >>> asp.unsorted_segment_min(np.array([4, 1, 3, 6, 3, 2, 7, 2, 6]),
    ...                          [1, 0, 2, 1, 0, 1, 1, 0, 2])
    array([1, 2, 3])
    """
    return _unsorted("unsorted_segment_min", "min", values, segment_ids, num_segments,
                     min_count, empty_value)
