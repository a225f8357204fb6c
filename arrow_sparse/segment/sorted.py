"""Sorted segment reductions: ``segment_sum``, ``segment_mean``, ... ``segment_argmin``.

Rows are given by a Jagged, an Arrow list array, or values with exactly one of
``offsets=``, ``lengths=`` or sorted ``segment_ids=``; every reduction runs through
:func:`_sorted` (check -> one kernel -> wrap). See :mod:`arrow_sparse.segment`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from .. import _arrow
from .. import _validate as v
from .._backend import array_module, device_checks, get_kernel
from .._docs import F, fill_doc
from ._args import (
    _OUT_DTYPE,
    _acc_zero,
    _empty_scalar,
    _finish,
    _is_list_input,
    _lowest,
    _min_count,
    _per_chunk,
    _rows,
    _u8,
    _weights,
)

__all__ = [
    "segment_argmax",
    "segment_argmin",
    "segment_logsumexp",
    "segment_max",
    "segment_mean",
    "segment_min",
    "segment_prod",
    "segment_sum",
    "segment_weighted_sum",
]


# ======================================================================== sorted driver
def _sorted(func: str, op: str, values: Any, offsets: Any, lengths: Any, segment_ids: Any,
            num_segments: Any, min_count: Any, empty_value: Any, weights: Any = None) -> Any:
    """Check -> kernel -> wrap for every sorted reduction ``op``."""
    back = _arrow.like_series(values)  # a Polars / pandas Series comes back as one
    if back is not _arrow.unchanged:
        values = _arrow.as_arrow(values)
        return back(_sorted(func, op, values, offsets, lengths, segment_ids, num_segments,
                            min_count, empty_value, weights), rows=_is_list_input(values))
    values, weights = _arrow.as_arrow(values), _arrow.as_arrow(weights)
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
        get_kernel("segment", "sorted_sum", xp)(
            vals, rows.offsets, _u8(valid), vmask, w, woffs, op == "mean", zero, mc, empty, out,
            counts)
    elif op in ("max", "min"):
        get_kernel("segment", "sorted_extreme", xp)(
            vals, rows.offsets, _u8(valid), vmask, op == "max", _lowest(vals.dtype, op == "min"),
            mc, out.dtype.type(empty), out, counts)
    else:
        vals2 = rows.values_2d()
        out2 = out.reshape(rows.num_rows, vals2.shape[1])
        if op == "prod":
            get_kernel("segment", "sorted_prod", xp)(
                vals2, rows.offsets, _u8(valid), vmask, _acc_zero(out_dtype).dtype.type(1), mc,
                empty, out2, counts)
        elif op == "logsumexp":
            get_kernel("segment", "sorted_logsumexp", xp)(
                vals2, rows.offsets, _u8(valid), vmask, mc, empty, out2, counts)
        else:
            get_kernel("segment", "sorted_arg_extreme", xp)(
                vals2, rows.offsets, _u8(valid), vmask, op == "argmax", mc, empty, out2, counts)
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


#: The docstring of the sorted reductions after segment_sum and segment_weighted_sum,
#: filled per function by :func:`_doc`.
_SORTED_DOC = """
    Parameters
    ----------
    values
        The batch, as in :func:`segment_sum`.
    offsets, lengths, segment_ids, num_segments
        The row structure of raw ``values``, as in :func:`segment_sum`.
    {missing}

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        {returns}

    Raises
    ------
    ValueError, IndexError, TypeError
        As :func:`segment_sum`.

    See Also
    --------
    {see_also}

    Notes
    -----
    {notes}On the device (CuPy values, a device Jagged): no synchronisation, except with
    ``segment_ids`` and no ``num_segments`` (the last id is read back: one).

    Examples
    --------
    {examples}
"""


def _doc(*, missing: str, returns: str, see_also: str, notes: str | None,
         examples: str) -> Callable[[F], F]:
    """:func:`~arrow_sparse._docs.fill_doc` with :data:`_SORTED_DOC`.

    ``notes`` goes before the device paragraph (None: that paragraph alone).
    """
    return fill_doc(_SORTED_DOC, missing=missing, returns=returns, see_also=see_also,
                    notes="" if notes is None else notes + "\n\n", examples=examples)


@_doc(
    missing="""\
min_count
    A row with fewer non-null values (at least 1: empty rows) is missing.
empty_value
    The numpy result of a missing row.""",
    returns="float32 for float32 values, float64 otherwise; accumulated in float64.",
    see_also="segment_sum, sparse_segment_mean, unsorted_segment_mean",
    notes="""\
The mean divides by the number of non-null values. Empty and null rows are null
in Arrow output and ``empty_value`` (0) in numpy output.""",
    examples="""\
>>> asp.segment_mean(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), lengths=[3, 4, 2, 0])
array([2.  , 4.75, 4.5 , 0.  ])
>>> asp.segment_mean(pa.array([[1, 2, 3], [], [3, None]])).to_pylist()
[2.0, None, 3.0]""",
)
def segment_mean(values: Any, *, offsets: Any = None, lengths: Any = None,
                 segment_ids: Any = None, num_segments: int | None = None,
                 min_count: int = 1, empty_value: Any = 0) -> Any:
    """Mean of each segment (Caffe2's ``SortedSegmentRangeMean``)."""
    return _sorted("segment_mean", "mean", values, offsets, lengths, segment_ids, num_segments,
                   min_count, empty_value)


@_doc(
    missing="""\
min_count, empty_value
    Missing rows, as in :func:`segment_mean`.""",
    returns="The values' dtype.",
    see_also="""\
segment_min, segment_argmax, sparse_segment_max, unsorted_segment_max
numpy.maximum.reduceat : numpy's equivalent for non-empty segments.""",
    notes="""\
NaN propagates as in ``numpy.max``: a segment holding a NaN has max NaN. The max of
``-0.0`` and ``0.0`` is ``0.0`` (IEEE 754-2019 ``maximum``; numpy keeps whichever
comes first), on every path and device. Empty and null rows are null (Arrow) or
``empty_value`` (numpy).""",
    examples="""\
>>> asp.segment_max(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), lengths=[3, 4, 2])
array([3, 7, 6])
>>> asp.segment_max(pa.array([[1.0, 2.0], [], [np.nan, 1.0]])).to_pylist()
[2.0, None, nan]""",
)
def segment_max(values: Any, *, offsets: Any = None, lengths: Any = None,
                segment_ids: Any = None, num_segments: int | None = None,
                min_count: int = 1, empty_value: Any = 0) -> Any:
    """Maximum of each segment."""
    return _sorted("segment_max", "max", values, offsets, lengths, segment_ids, num_segments,
                   min_count, empty_value)


@_doc(
    missing="""\
min_count, empty_value
    Missing rows, as in :func:`segment_mean`.""",
    returns="The values' dtype.",
    see_also="segment_max, segment_argmin, unsorted_segment_min",
    notes="""\
NaN propagates as in ``numpy.min``; the min of ``-0.0`` and ``0.0`` is ``-0.0`` (IEEE
754-2019 ``minimum``). Empty and null rows are null (Arrow) or ``empty_value``
(numpy).""",
    examples="""\
>>> asp.segment_min(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), lengths=[3, 4, 2])
array([1, 2, 3])""",
)
def segment_min(values: Any, *, offsets: Any = None, lengths: Any = None,
                segment_ids: Any = None, num_segments: int | None = None,
                min_count: int = 1, empty_value: Any = 0) -> Any:
    """Minimum of each segment."""
    return _sorted("segment_min", "min", values, offsets, lengths, segment_ids, num_segments,
                   min_count, empty_value)


@_doc(
    missing="""\
min_count, empty_value
    Missing rows, as in :func:`segment_sum`; empty rows give 1 by default.""",
    returns="""\
dtypes as :func:`segment_sum` (int64 wraps on overflow; float32 multiplies in
float64).""",
    see_also="segment_sum, segment_logsumexp",
    notes=None,
    examples="""\
>>> asp.segment_prod(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), lengths=[3, 4, 2, 0])
array([  6, 336,  18,   1])""",
)
def segment_prod(values: Any, *, offsets: Any = None, lengths: Any = None,
                 segment_ids: Any = None, num_segments: int | None = None,
                 min_count: int = 0, empty_value: Any = 1) -> Any:
    """Product of each segment."""
    return _sorted("segment_prod", "prod", values, offsets, lengths, segment_ids, num_segments,
                   min_count, empty_value)


@_doc(
    missing="""\
min_count
    Missing rows, as in :func:`segment_mean`.
empty_value
    The numpy result of a missing row (default ``-inf``, the log of an empty sum).""",
    returns="float32 for float32 values, float64 otherwise.",
    see_also="segment_max, segment_sum",
    notes="""\
Computed in float64 as ``m + log(sum(exp(x - m)))`` with ``m`` the segment max, so
large values do not overflow. A segment whose max is ``+inf`` gives ``+inf``, one of
only ``-inf`` gives ``-inf``, one with a NaN gives NaN.""",
    examples="""\
>>> asp.segment_logsumexp(np.array([1000.0, 1000.0, 0.0]), lengths=[2, 1, 0])
array([1000.69314718,    0.        ,          -inf])""",
)
def segment_logsumexp(values: Any, *, offsets: Any = None, lengths: Any = None,
                      segment_ids: Any = None, num_segments: int | None = None,
                      min_count: int = 1, empty_value: Any = -np.inf) -> Any:
    """``log(sum(exp(x)))`` of each segment, numerically stable (``SortedSegmentRangeLogSumExp``)."""  # noqa: E501
    return _sorted("segment_logsumexp", "logsumexp", values, offsets, lengths, segment_ids,
                   num_segments, min_count, empty_value)


@_doc(
    missing="""\
empty_value
    The numpy result of an empty or null row.""",
    returns="""\
int64 positions counted from the start of each segment (add ``offsets[:-1]``
for positions in ``values``), like Polars' ``list.arg_max``; vector values give
one position per column.""",
    see_also="segment_max, segment_argmin, numpy.argmax",
    notes="""\
Ties go to the first position; the first NaN wins, as in ``numpy.argmax``. Null
values are never chosen. Empty and null rows are null (Arrow) or ``empty_value``.""",
    examples="""\
>>> asp.segment_argmax(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), lengths=[3, 4, 2])
array([2, 3, 1])""",
)
def segment_argmax(values: Any, *, offsets: Any = None, lengths: Any = None,
                   segment_ids: Any = None, num_segments: int | None = None,
                   empty_value: int = -1) -> Any:
    """Position, within its segment, of each segment's first maximum."""
    return _sorted("segment_argmax", "argmax", values, offsets, lengths, segment_ids,
                   num_segments, 1, empty_value)


@_doc(
    missing="""\
empty_value
    The numpy result of an empty or null row.""",
    returns="int64 positions counted from the start of each segment.",
    see_also="segment_argmax, segment_min, numpy.argmin",
    notes="As :func:`segment_argmax`, with the first minimum.",
    examples="""\
>>> asp.segment_argmin(pa.array([[1, 2, 3], [2, 4, 6, 7], [], [6, 3]])).to_pylist()
[0, 0, None, 1]""",
)
def segment_argmin(values: Any, *, offsets: Any = None, lengths: Any = None,
                   segment_ids: Any = None, num_segments: int | None = None,
                   empty_value: int = -1) -> Any:
    """Position, within its segment, of each segment's first minimum."""
    return _sorted("segment_argmin", "argmin", values, offsets, lengths, segment_ids,
                   num_segments, 1, empty_value)
