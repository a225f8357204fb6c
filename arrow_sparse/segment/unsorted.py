"""Unsorted segment reductions: ``unsorted_segment_{sum,weighted_sum,mean,max,min}``.

Values carry a segment id each, in any order (Caffe2's ``UnsortedSegment*``, TF's
``unsorted_segment_*``); ``num_segments`` (default ``max + 1``) sizes the output.
Every reduction runs through :func:`_unsorted` (check -> one scatter kernel -> wrap).
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
from ..errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from ._args import (
    _OUT_DTYPE,
    _acc_zero,
    _empty_scalar,
    _finish,
    _flat,
    _is_list_input,
    _lowest,
    _min_count,
    _Rows,
    _u8,
    _weights,
)

__all__ = [
    "unsorted_segment_max",
    "unsorted_segment_mean",
    "unsorted_segment_min",
    "unsorted_segment_sum",
    "unsorted_segment_weighted_sum",
]


def _unsorted(func: str, op: str, values: Any, segment_ids: Any, num_segments: Any,
              min_count: Any, empty_value: Any, weights: Any = None) -> Any:
    """Check -> scatter kernel -> wrap for every unsorted reduction ``op``."""
    back = _arrow.like_series(values)  # a Polars / pandas Series comes back as one
    values, weights = _arrow.as_arrow(values), _arrow.as_arrow(weights)
    segment_ids = _arrow.as_arrow(segment_ids)
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
        bad = get_kernel("segment", "scatter_extreme", xp)(
            rows.values, ids, _u8(vmask), op == "max", _lowest(rows.values.dtype, op == "min"),
            mc, out.dtype.type(empty), out, counts)
    else:
        zero = np.float64(0) if op == "mean" else _acc_zero(out_dtype)
        bad = get_kernel("segment", "scatter_sum", xp)(
            rows.values, ids, _u8(vmask), w, op == "mean", zero, mc, empty, out, counts)
    if bad >= 0:  # host arrays only: device kernels record it in the error word
        problem = "must be non-negative" if ids[bad] < 0 else f"must be < num_segments={count}"
        raise ArrowSparseIndexError(v.message(func, "segment_ids", problem, bad, ids[bad]))
    if out_dtype.kind == "b":
        out = out.view(bool)
    rows.chunked = isinstance(values, pa.ChunkedArray)
    result = _finish(rows, None, out, counts, mc, rows.inner)
    device_checks(func, xp)
    return back(result, rows=False)  # one row per segment, not per value


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


#: The docstring of every unsorted reduction, filled per function by :func:`_doc`.
_UNSORTED_DOC = """
    Parameters
    ----------
    values
        Flat values ``[N, ...]``: numpy, a sequence, or an Arrow array (null values are
        skipped; ``fixed_size_list`` for vectors; a ChunkedArray is combined).
    {weights_parameter}segment_ids
        Segment of each value, in any order, each in ``[0, num_segments)``.
    num_segments
        Number of output rows; default ``max(segment_ids) + 1``.
    min_count, empty_value
        Missing rows, as in :func:`{missing_as}`.

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        ``[num_segments, ...]``, {dtypes}.
        A ChunkedArray input gives a one-chunk ChunkedArray.

    Raises
    ------
    ValueError
        Segment ids{weights_error} not one per value, or an ``empty_value`` that does
        not fit.
    IndexError
        A negative segment id, or one ``>= num_segments``.
    TypeError
        Non-numeric values, non-integer ids, or a list array (use :func:`{sorted_twin}`).

    See Also
    --------
    {sorted_twin} : Sorted segments (faster, parallel).
    {see_also}

    Notes
    -----
    {empty}
    {semantics}

    Segment ids are range-checked as they are read when ``num_segments`` is given.

    On the device (CuPy values and ids): no synchronisation with ``num_segments``;
    without it the largest id is read back (one), which also raises the device
    check of the ids at once.

    Examples
    --------
    {examples}
"""

#: How the scatter kernel adds (sum, weighted sum and mean).
_PARTS = """A large input is split into one contiguous part per thread; each part adds its
values in input order into its own partial sums, which are then added in part order. So
float results are deterministic for a given number of threads
(``numba.get_num_threads()``) and may differ from a one-thread run only by float64
rounding."""


def _doc(op: str, examples: str) -> Callable[[F], F]:
    """:func:`~arrow_sparse._docs.fill_doc` with :data:`_UNSORTED_DOC` for reduction ``op``."""
    sums = op in ("sum", "weighted_sum")
    if sums:
        semantics = ("Integers accumulate in int64 (exact, wrapping like numpy), floats in "
                     "float64.\n" + _PARTS)
    elif op == "mean":
        semantics = ("The mean divides the float64 sum of a segment's non-null values by "
                     "their number.\n" + _PARTS)
    else:
        ieee, zero = ("maximum", "0.0") if op == "max" else ("minimum", "-0.0")
        semantics = (f"NaN propagates as in ``numpy.{op}``: a segment holding a NaN has {op} "
                     f"NaN. The\n{op} of ``-0.0`` and ``0.0`` is ``{zero}`` (IEEE 754-2019 "
                     f"``{ieee}``), whatever the order\nof the values.")
    weighted = op == "weighted_sum"
    see_also = {"sum": "unsorted_segment_weighted_sum, unsorted_segment_mean",
                "max": "unsorted_segment_min", "min": "unsorted_segment_max"}
    return fill_doc(
        _UNSORTED_DOC, sorted_twin=f"segment_{op}", examples=examples, semantics=semantics,
        weights_parameter=("weights\n    One scalar weight per value (flat, no nulls).\n"
                           if weighted else ""),
        weights_error=" or weights" if weighted else "",
        missing_as="segment_sum" if sums else "segment_mean",
        dtypes=f"dtypes as :func:`segment_{op}`" if op in ("sum", "weighted_sum", "mean")
        else "the values' dtype",
        see_also=see_also.get(op, "unsorted_segment_sum"),
        empty=("Segments that no value maps to sum to 0." if sums else
               "Segments that no value maps to are missing: null in Arrow output,\n"
               "``empty_value`` in numpy output."))


@_doc("sum", """\
Caffe2's unsorted segment ids:

>>> values = np.array([4, 1, 3, 6, 3, 2, 7, 2, 6])
>>> asp.unsorted_segment_sum(values, [1, 0, 2, 1, 0, 1, 1, 0, 2])
array([ 6, 19,  9])""")
def unsorted_segment_sum(values: Any, segment_ids: Any, num_segments: int | None = None, *,
                         min_count: int = 0, empty_value: Any = 0) -> Any:
    """Sum values by segment id, ids in any order (Caffe2's ``UnsortedSegmentSum``)."""
    return _unsorted("unsorted_segment_sum", "sum", values, segment_ids, num_segments,
                     min_count, empty_value)


@_doc("weighted_sum", """\
>>> asp.unsorted_segment_weighted_sum(np.array([1.0, 2.0, 3.0]), [0.5, 1.0, 2.0],
...                                   [1, 0, 1])
array([2. , 6.5])""")
def unsorted_segment_weighted_sum(values: Any, weights: Any, segment_ids: Any,
                                  num_segments: int | None = None, *, min_count: int = 0,
                                  empty_value: Any = 0) -> Any:
    """Weighted sum by segment id, ids in any order (``UnsortedSegmentWeightedSum``)."""
    return _unsorted("unsorted_segment_weighted_sum", "weighted_sum", values, segment_ids,
                     num_segments, min_count, empty_value, weights)


@_doc("mean", """\
>>> values = pa.array([4.0, 1.0, None, 6.0])
>>> asp.unsorted_segment_mean(values, [1, 0, 0, 1], num_segments=3).to_pylist()
[1.0, 5.0, None]""")
def unsorted_segment_mean(values: Any, segment_ids: Any, num_segments: int | None = None, *,
                          min_count: int = 1, empty_value: Any = 0) -> Any:
    """Mean by segment id, ids in any order."""
    return _unsorted("unsorted_segment_mean", "mean", values, segment_ids, num_segments,
                     min_count, empty_value)


@_doc("max", """\
>>> asp.unsorted_segment_max(np.array([4, 1, 3, 6, 3, 2, 7, 2, 6]),
...                          [1, 0, 2, 1, 0, 1, 1, 0, 2], num_segments=4)
array([3, 7, 6, 0])""")
def unsorted_segment_max(values: Any, segment_ids: Any, num_segments: int | None = None, *,
                         min_count: int = 1, empty_value: Any = 0) -> Any:
    """Maximum by segment id, ids in any order; NaN propagates, ``max(-0.0, 0.0) = 0.0``."""
    return _unsorted("unsorted_segment_max", "max", values, segment_ids, num_segments,
                     min_count, empty_value)


@_doc("min", """\
>>> asp.unsorted_segment_min(np.array([4, 1, 3, 6, 3, 2, 7, 2, 6]),
...                          [1, 0, 2, 1, 0, 1, 1, 0, 2])
array([1, 2, 3])""")
def unsorted_segment_min(values: Any, segment_ids: Any, num_segments: int | None = None, *,
                         min_count: int = 1, empty_value: Any = 0) -> Any:
    """Minimum by segment id, ids in any order; NaN propagates, ``min(-0.0, 0.0) = -0.0``."""
    return _unsorted("unsorted_segment_min", "min", values, segment_ids, num_segments,
                     min_count, empty_value)
