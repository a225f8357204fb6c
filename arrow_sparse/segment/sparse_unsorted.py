"""Fused gather + unsorted reduce: Caffe2's ``SparseUnsortedSegment*``.

Row ``indices[i]`` of ``data`` (an embedding table) goes to output row
``segment_ids[i]``; the ids come in any order, ``num_segments`` (default ``max + 1``)
sizes the output. The gathered rows are never materialised: one kernel reads each row
and adds it (or takes its max) into its segment. Every function runs through
:func:`_sparse_unsorted` (check -> one kernel -> wrap).
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
    _acc_zero,
    _check_ids,
    _empty_scalar,
    _finish,
    _flat,
    _float_dtype,
    _is_list_input,
    _lowest,
    _raise_out_of_range,
    _Rows,
    _sum_dtype,
    _table,
)
from .unsorted import _segment_ids

__all__ = [
    "sparse_unsorted_segment_max",
    "sparse_unsorted_segment_mean",
    "sparse_unsorted_segment_sum",
    "sparse_unsorted_segment_weighted_sum",
]


def _index_array(func: str, arg: str, x: Any) -> tuple[Any, Any]:
    """Flat integer indices (int32 / int64) and their null mask (Arrow nulls)."""
    if _is_list_input(x):
        msg = (f"{func}: {arg} must be flat (one per gathered row), got a list array; use "
               f"{func.replace('unsorted_', '')} with jagged rows")
        raise ArrowSparseTypeError(msg)
    arr, mask = _flat(func, arg, x)
    if arr.shape == (0,):  # an empty sequence reads as float64: no index to misread
        arr = arr.astype(np.int64)
    return _check_ids(func, arg, arr, arr.dtype), mask


def _sparse_unsorted(func: str, op: str, data: Any, indices: Any, segment_ids: Any,
                     num_segments: Any, weights: Any, empty_value: Any) -> Any:
    """Check -> gather_scatter kernel -> wrap for every fused unsorted reduction ``op``."""
    back = _arrow.like_series(indices)  # a Polars / pandas Series comes back as one
    indices, weights = _arrow.as_arrow(indices), _arrow.as_arrow(weights)
    segment_ids = _arrow.as_arrow(segment_ids)
    xp = array_module(func, data=data, indices=indices, segment_ids=segment_ids,
                      weights=weights)
    arr, table, inner = _table(func, data)
    idx, imask = _index_array(func, "indices", indices)
    ids, count = _segment_ids(func, segment_ids, len(idx), num_segments)
    w = None
    if weights is not None:
        w, wmask = _flat(func, "weights", weights)
        if w.ndim != 1 or w.shape[0] != idx.shape[0]:
            msg = (f"{func}: weights must hold one weight per index ({idx.shape[0]}), got "
                   f"shape {w.shape}")
            raise ArrowSparseValueError(msg)
        if w.dtype.kind not in "iuf":
            msg = f"{func}: weights must be numbers, got {w.dtype}"
            raise ArrowSparseTypeError(msg)
        if wmask is not None and not wmask.all():
            v.fail_value(func, "weights", "must not contain nulls", v.first_true(~wmask),
                         None)
    dtype = arr.dtype if w is None else np.result_type(arr.dtype, w.dtype)
    out_dtype = _float_dtype(dtype) if op == "mean" else dtype if op == "max" \
        else _sum_dtype(dtype)
    min_count = 0 if op in ("sum", "weighted_sum") else 1
    empty = _empty_scalar(func, empty_value, out_dtype)
    out = v.empty(func, (count, table.shape[1]),
                  np.dtype(np.uint8) if out_dtype.kind == "b" else out_dtype, xp)
    is_arrow = isinstance(indices, (pa.Array, pa.ChunkedArray))
    counts = np.empty(count, np.int64) if is_arrow and min_count else None
    mask = None if imask is None else imask.view(np.uint8)
    if op == "max":
        bad = get_kernel("sparse_unsorted", "gather_scatter_extreme", xp)(
            table, idx, mask, ids, True, _lowest(table.dtype), min_count,
            out.dtype.type(empty), out, counts)
    else:
        zero = np.float64(0) if op == "mean" else _acc_zero(out_dtype)
        bad = get_kernel("sparse_unsorted", "gather_scatter_sum", xp)(
            table, idx, mask, ids, None if w is None else w.astype(zero.dtype),
            op == "mean", zero, min_count, empty, out, counts)
    if out_dtype.kind == "b":
        out = out.view(bool)
    if bad >= 0:  # host arrays only: device kernels record it in the error word
        s = int(ids[bad])
        if s < 0 or s >= count:
            problem = "must be non-negative" if s < 0 else f"must be < num_segments={count}"
            raise ArrowSparseIndexError(v.message(func, "segment_ids", problem, bad, s))
        _raise_out_of_range(func, "indices", idx, bad, len(table))
    rows = _Rows(idx, np.zeros(1, np.int64), None, imask, is_arrow, False)
    rows.chunked = isinstance(indices, pa.ChunkedArray)
    result = _finish(rows, None, out, counts, min_count, inner)
    device_checks(func, xp)
    return back(result, rows=False)  # one row per segment, not per index


#: The docstring of every fused unsorted reduction, filled per function by :func:`_doc`.
_DOC = """
    {intro}

    Parameters
    ----------
    data
        The table ``[V, ...]``: numpy, a sequence, or a flat Arrow array without nulls
        (``fixed_size_list`` for vectors).
    indices
        Row numbers into ``data``, one per gathered row: numpy, a sequence, or a flat
        Arrow integer array, whose null entries are skipped.
    segment_ids
        The output row of each index, in any order, each in ``[0, num_segments)``.
    num_segments
        Number of output rows; default ``max(segment_ids) + 1``.
    {weights}
    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        ``[num_segments, ...]`` (``data``'s row shape kept), {dtypes}. Arrow
        ``indices`` give an Arrow array (a ChunkedArray: a one-chunk ChunkedArray).

    Raises
    ------
    IndexError
        An index outside ``[0, len(data))``, or a negative segment id or one
        ``>= num_segments``.
    ValueError
        Segment ids{weights_error} not one per index, null rows in ``data``, or an
        ``empty_value`` that does not fit.
    TypeError
        Non-integer indices or ids, non-numeric data, a list array of indices (use
        :func:`{sorted_twin}` for jagged rows).

    See Also
    --------
    {sorted_twin} : The same over sorted segments (offsets, lengths or sorted ids).
    {unsorted_twin} : The unsorted reduction of values already gathered.

    Notes
    -----
    {semantics}
    One pass over the indices: each gathered row is read from ``data`` and reduced into
    its segment at once (the result is ``{unsorted_twin}(gather(data, indices),
    segment_ids, num_segments)`` without the gathered copy). A large input is split
    into one contiguous part per thread, each with partial results, combined in part
    order; on the GPU, one thread per gathered element adds by atomics.

    On the device (CuPy data, indices and ids): no synchronisation, except without
    ``num_segments`` (the largest id is read back: one). An index or segment id out of
    range is reported by the next check.

    Examples
    --------
    {examples}
"""

_SEMANTICS = {
    "sum": """Empty segments sum to 0. Integers accumulate in int64 (uint64 stays
uint64), floats in float64.""",
    "mean": """Integers and float64 give float64, float32 gives float32 (accumulated in
float64). An empty segment gives ``empty_value`` (numpy) or null (Arrow).""",
    "max": """The dtype is ``data``'s. NaN propagates as in ``numpy.max``, and the max of
``-0.0`` and ``0.0`` is ``0.0``, whatever order the rows arrive in. An empty
segment gives ``empty_value`` (numpy) or null (Arrow).""",
}


#: Caffe2's operator for each reduction.
_INTRO = {
    "sum": "Caffe2's ``SparseUnsortedSegmentSum``.",
    "weighted_sum": "Caffe2's ``SparseUnsortedSegmentWeightedSum``.",
    "mean": "Caffe2's ``SparseUnsortedSegmentMean``.",
    "max": "Caffe2's ``Gather`` followed by ``UnsortedSegmentMax``, in one pass.",
}


def _doc(op: str, weights: str, dtypes: str, examples: str) -> Callable[[F], F]:
    """:func:`~arrow_sparse._docs.fill_doc` with :data:`_DOC` for reduction ``op``."""
    return fill_doc(_DOC, intro=_INTRO[op], weights=weights, dtypes=dtypes, examples=examples,
                    semantics=_SEMANTICS["sum" if op == "weighted_sum" else op],
                    weights_error=", weights" if "weights" in weights else "",
                    sorted_twin=f"sparse_segment_{op}", unsorted_twin=f"unsorted_segment_{op}")


_OPTIONAL_WEIGHTS = """weights
    Optional weight per index (flat, no nulls); each gathered row is scaled by it.
"""
_EMPTY = """empty_value
    The numpy result of an empty segment (null in Arrow output).
"""


@_doc("sum", _OPTIONAL_WEIGHTS,
      "int64 for integers (uint64 for uint64), floats kept (with weights, the dtype "
      "data and weights promote to)", """\
Caffe2's worked example: rows 1, 3, 3, 0, 5 of a 6 x 2 table, into segments 1, 0, 1,
0, 1:

>>> data = np.arange(12.0).reshape(6, 2)
>>> asp.sparse_unsorted_segment_sum(data, [1, 3, 3, 0, 5], [1, 0, 1, 0, 1])
array([[ 6.,  8.],
       [18., 21.]])

Segments no id names are 0:

>>> asp.sparse_unsorted_segment_sum(data, [1, 3], [2, 0], num_segments=4)
array([[6., 7.],
       [0., 0.],
       [2., 3.],
       [0., 0.]])""")
def sparse_unsorted_segment_sum(data: Any, indices: Any, segment_ids: Any,
                                num_segments: int | None = None, *,
                                weights: Any = None) -> Any:
    """Gather rows of ``data`` by ``indices``, then sum by unsorted segment ids, fused."""
    return _sparse_unsorted("sparse_unsorted_segment_sum", "sum", data, indices, segment_ids,
                            num_segments, weights, 0)


@_doc("weighted_sum", """weights
    One weight per index (flat, no nulls; required): each gathered row is scaled by
    it before the sum.
""", "the dtype data and weights promote to, as :func:`sparse_unsorted_segment_sum`", """\
>>> data = np.arange(12.0).reshape(6, 2)
>>> asp.sparse_unsorted_segment_weighted_sum(data, [1, 3, 3, 0, 5], [1, 0, 1, 0, 1],
...                                          weights=[1.0, 2.0, 0.5, 1.0, -1.0])
array([[12. , 15. ],
       [-5. , -4.5]])""")
def sparse_unsorted_segment_weighted_sum(data: Any, indices: Any, segment_ids: Any,
                                         num_segments: int | None = None, *,
                                         weights: Any) -> Any:
    """Gather rows of ``data`` by ``indices``, then sum them weighted by unsorted segment ids."""
    if weights is None:
        msg = "sparse_unsorted_segment_weighted_sum: weights must be given (one per index)"
        raise ArrowSparseTypeError(msg)
    return _sparse_unsorted("sparse_unsorted_segment_weighted_sum", "weighted_sum", data,
                            indices, segment_ids, num_segments, weights, 0)


@_doc("mean", _OPTIONAL_WEIGHTS.replace("it.", "it (the divisor is the number of "
                                               "non-null indices).") + _EMPTY,
      "float32 for float32 data, float64 otherwise", """\
>>> data = np.arange(12.0).reshape(6, 2)
>>> asp.sparse_unsorted_segment_mean(data, [1, 3, 3, 0, 5], [1, 0, 1, 0, 1],
...                                  num_segments=3, empty_value=-1)
array([[ 3.,  4.],
       [ 6.,  7.],
       [-1., -1.]])""")
def sparse_unsorted_segment_mean(data: Any, indices: Any, segment_ids: Any,
                                 num_segments: int | None = None, *, weights: Any = None,
                                 empty_value: Any = 0) -> Any:
    """Gather rows of ``data`` by ``indices``, then average by unsorted segment ids, fused."""
    return _sparse_unsorted("sparse_unsorted_segment_mean", "mean", data, indices,
                            segment_ids, num_segments, weights, empty_value)


@_doc("max", _EMPTY, "``data``'s dtype", """\
>>> data = np.arange(12).reshape(6, 2)
>>> asp.sparse_unsorted_segment_max(data, [1, 3, 3, 0, 5], [1, 0, 1, 0, 1])
array([[ 6,  7],
       [10, 11]])

With Arrow indices, an empty segment is null:

>>> asp.sparse_unsorted_segment_max(np.arange(6.0), pa.array([4, None, 1]), [0, 1, 0],
...                                 num_segments=3).to_pylist()
[4.0, None, None]""")
def sparse_unsorted_segment_max(data: Any, indices: Any, segment_ids: Any,
                                num_segments: int | None = None, *,
                                empty_value: Any = 0) -> Any:
    """Gather rows of ``data`` by ``indices``, then take the max by unsorted segment ids, fused."""
    return _sparse_unsorted("sparse_unsorted_segment_max", "max", data, indices, segment_ids,
                            num_segments, None, empty_value)
