"""Fused gather + reduce: Caffe2's ``SparseLengths*`` / ``SparseSegment*`` and ``embedding_bag``.

Rows of ``data`` (an embedding table) are picked by ``indices`` and reduced per segment
in one pass, never materialising the gathered rows. Every function runs through
:func:`_fused` (check -> the ``gather_reduce`` kernel -> wrap).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from .. import _arrow
from .. import _validate as v
from .._backend import array_module, device_checks, get_kernel, is_cupy_array
from .._docs import F, fill_doc
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ._args import (
    _MODES,
    _acc_zero,
    _check_ids,
    _empty_scalar,
    _finish,
    _float_dtype,
    _is_list_input,
    _lowest,
    _per_chunk,
    _raise_out_of_range,
    _rows,
    _same_dtype,
    _sum_dtype,
    _table,
    _u8,
    _weights,
)

__all__ = [
    "embedding_bag",
    "sparse_segment_max",
    "sparse_segment_mean",
    "sparse_segment_sum",
    "sparse_segment_weighted_sum",
]


def _fused(func: str, mode: str, data: Any, indices: Any, offsets: Any, lengths: Any,
           segment_ids: Any, num_segments: Any, weights: Any, empty_value: Any,
           names: tuple[str, str] = ("indices", "weights")) -> Any:
    """Check -> gather_reduce kernel -> wrap for the fused ops and embedding_bag."""
    back = _arrow.like_series(indices)  # a Polars / pandas Series comes back as one
    if back is not _arrow.unchanged:
        indices = _arrow.as_arrow(indices)
        return back(_fused(func, mode, data, indices, offsets, lengths, segment_ids,
                           num_segments, weights, empty_value, names),
                    rows=_is_list_input(indices))
    indices, weights = _arrow.as_arrow(indices), _arrow.as_arrow(weights)
    if isinstance(indices, pa.ChunkedArray) and _arrow.is_list_type(indices.type):
        return _per_chunk(func, indices, weights, num_segments, lambda chunk, w: _fused(
            func, mode, data, chunk, offsets, lengths, segment_ids, None, w, empty_value,
            names))
    xp = array_module(func, data=data, **{names[0]: indices, names[1]: weights},
                      offsets=offsets, lengths=lengths, segment_ids=segment_ids)
    arr, table, inner = _table(func, data)
    rows = _rows(func, indices, offsets, lengths, segment_ids, num_segments, arg=names[0])
    ids = _check_ids(func, names[0], rows.values, rows.dtype)
    valid, w, woffs = rows.valid, None, None
    if weights is not None:
        w, woffs, valid = _weights(func, weights, rows, names[1])
    out_dtype, zero, lowest = _bag_types(mode, arr.dtype, None if w is None else w.dtype)
    mc = 0 if mode == "sum" else 1
    empty = _empty_scalar(func, empty_value, out_dtype)
    out = v.empty(func, (rows.num_rows, table.shape[1]),
                  np.dtype(np.uint8) if out_dtype.kind == "b" else out_dtype, xp)
    counts = np.empty(rows.num_rows, np.int64) if rows.arrow and mc and rows.vmask is not None \
        else None
    bad = get_kernel("segment", "gather_reduce", xp)(
        table, ids, rows.offsets, _u8(valid), _u8(rows.vmask), w, woffs, _MODES[mode], zero,
        lowest, mc, empty, out, counts)
    if bad >= 0:  # host arrays only: device kernels record it in the error word
        _raise_out_of_range(func, names[0], ids, bad, len(table))
    if out_dtype.kind == "b":
        out = out.view(bool)
    result = _finish(rows, valid, out, counts, mc, inner)
    device_checks(func, xp)
    return result


#: The dtypes of the device fast path of :func:`embedding_bag` (:func:`_device_bags`).
_TABLE_DTYPES = frozenset(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                                 np.uint8, np.uint16, np.uint32, np.uint64,
                                                 np.float32, np.float64))
_INDEX_DTYPES = frozenset((np.dtype(np.int32), np.dtype(np.int64)))
_WEIGHT_DTYPES = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


def _device_bags(func: str, mode: str, table: Any, ids: Any, offsets: Any, weights: Any
                 ) -> Any:
    """embedding_bag's common device case in one dispatch, or None when it is not that case.

    The case: CuPy arrays, a 2-D table of a numeric dtype, 1-D int32/int64 ids and
    offsets (with their last offset), no weights or 1-D float weights aligned with the
    ids. It makes exactly the general path's checks, launches and results (the same
    device check of the offsets, the same ``gather_reduce``), without its generic
    normalisation of every input form; anything else (and every error) takes the
    general path (:func:`_fused`).
    """
    if (table.ndim != 2 or table.dtype not in _TABLE_DTYPES or ids.ndim != 1
            or ids.dtype not in _INDEX_DTYPES or offsets.ndim != 1
            or offsets.dtype not in _INDEX_DTYPES or offsets.shape[0] == 0
            or (weights is not None and (type(weights).__module__ != "cupy"
                                         or weights.ndim != 1
                                         or weights.dtype not in _WEIGHT_DTYPES
                                         or weights.shape[0] != ids.shape[0]))):
        return None
    xp = array_module(func, data=table, ids=ids, per_sample_weights=weights, offsets=offsets)
    out_dtype, zero, lowest = _bag_types(mode, table.dtype,
                                         None if weights is None else weights.dtype)
    get_kernel("convert", "check_offsets", xp)(offsets, ids.shape[0])
    out = v.empty(func, (offsets.shape[0] - 1, table.shape[1]), out_dtype, xp)
    get_kernel("segment", "gather_reduce", xp)(
        xp.ascontiguousarray(table), xp.ascontiguousarray(ids), offsets, None, None, weights,
        None, _MODES[mode], zero, lowest, 0 if mode == "sum" else 1, out_dtype.type(0), out,
        None)
    device_checks(func, xp)
    return out


@functools.lru_cache(maxsize=128)
def _bag_types(mode: str, dtype: np.dtype, wdtype: np.dtype | None
               ) -> tuple[np.dtype, np.generic, np.generic]:
    """``(output dtype, accumulator zero, lowest)`` of a pooled table, as :func:`_fused`."""
    if wdtype is None:
        out_dtype = {"sum": _sum_dtype, "mean": _float_dtype, "max": _same_dtype}[mode](dtype)
    else:
        out_dtype = _float_dtype(np.result_type(dtype, wdtype)) if mode == "mean" \
            else _sum_dtype(np.result_type(dtype, wdtype))
    zero = np.float64(0) if mode == "mean" else _acc_zero(out_dtype)
    return out_dtype, zero, _lowest(zero.dtype)


#: The docstring of every fused reduction, filled per function by :func:`_doc`.
_FUSED_DOC = """
    {intro}

    Parameters
    ----------
    data
        The table ``[V, ...]``: numpy, a sequence, or a flat Arrow array without nulls
        (``fixed_size_list`` for vectors).
    indices
        Row numbers into ``data``: raw integers with one of ``offsets``/``lengths``/
        ``segment_ids``, or a Jagged / Arrow list array (or ChunkedArray) of them, whose
        null rows give null (Arrow) or empty rows and whose null ids are skipped.
    {weights_first}offsets, lengths, segment_ids, num_segments
        The segments of raw ``indices``, as in :func:`segment_sum`.
    {weights_last}
    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        ``[segments, ...]`` (``data``'s row shape kept):
        {dtypes}.

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
    {see_also}

    Notes
    -----
    {semantics}
    Rows are prefetched 32 indices ahead; each segment's indices are range-checked just
    before its rows are read.

    On the device (CuPy data and indices, or a device Jagged of indices): no
    synchronisation, except with ``segment_ids`` and no ``num_segments`` (the last
    id is read back: one). An index out of range is reported by the next check.

    Examples
    --------
    {examples}
"""

#: How the fused sums add (sparse_segment_sum and sparse_segment_weighted_sum).
_SUMS = """Empty segments sum to 0. Integers accumulate in int64. Float tables accumulate in
float64; for speed, runs of up to 4 gathered rows are first summed in the table's dtype
(in registers), so a float32 result is within ``3 * 2**-24 * sum(|x|)`` of the exact sum
whatever the segment length (with weights, or float64 accumulation alone: the final
rounding)."""

#: What an empty segment gives where it is missing (sparse_segment_mean and _max).
_MISSING = "Empty segments give ``empty_value`` in numpy output and null in Arrow output."

#: The weights of each function, described where its signature has them.
_WEIGHTS = {
    "sum": """weights
    Optional weight per index, in the same form as ``indices``; each gathered row is
    scaled by it before the reduction.
""",
    "weighted_sum": """weights
    One weight per index, in the same form as ``indices`` (required); each gathered row
    is scaled by it before the reduction.
""",
    "mean": """weights
    Optional weight per index, in the same form as ``indices``; rows are scaled before
    averaging (the divisor is still the number of non-null indices).
empty_value
    The numpy result of an empty segment (null in Arrow output).
""",
    "max": """weights
    Optional weight per index, in the same form as ``indices``; rows are scaled before
    the max.
empty_value
    The numpy result of an empty segment (null in Arrow output).
""",
}


def _doc(op: str, intro: str, dtypes: str, see_also: str, examples: str) -> Callable[[F], F]:
    """:func:`~arrow_sparse._docs.fill_doc` with :data:`_FUSED_DOC` for reduction ``op``."""
    semantics = {"sum": _SUMS, "weighted_sum": _SUMS, "mean": _MISSING,
                 "max": _MISSING + """
NaN propagates as in ``numpy.max``, and the max of ``-0.0`` and ``0.0`` is ``0.0``, as in
:func:`segment_max`."""}[op]
    weights = _WEIGHTS[op]
    return fill_doc(_FUSED_DOC, intro=intro, dtypes=dtypes, see_also=see_also,
                    examples=examples, semantics=semantics,
                    weights_first=weights if op == "weighted_sum" else "",
                    weights_last="" if op == "weighted_sum" else weights)


@_doc("sum", """Caffe2's ``SparseLengthsSum`` / ``SparseSortedSegmentSum``: the same result as
``segment_sum(gather(data, indices), ...)`` without materialising the gathered rows.""",
      "dtypes as :func:`segment_sum` (as :func:`segment_weighted_sum` with weights)",
      "gather, segment_sum", """\
Caffe2's batch of page ids, pooled from a 1-wide table of ``10 * id``:

>>> table = np.arange(8) * 10
>>> ids = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
>>> asp.sparse_segment_sum(table, ids, lengths=[3, 4, 2])
array([ 60, 190,  90])
>>> asp.sparse_segment_sum(table, pa.array([[1, 2, 3], None, [3, 6]])).to_pylist()
[60, None, 90]""")
def sparse_segment_sum(data: Any, indices: Any, *, offsets: Any = None, lengths: Any = None,
                       segment_ids: Any = None, num_segments: int | None = None,
                       weights: Any = None) -> Any:
    """Gather rows of ``data`` by ``indices``, then sum per segment, fused."""
    return _fused("sparse_segment_sum", "sum", data, indices, offsets, lengths, segment_ids,
                  num_segments, weights, 0)


@_doc("weighted_sum", """Caffe2's ``SparseLengthsWeightedSum``: the same result as
``segment_weighted_sum(gather(data, indices), weights, ...)`` without materialising the
gathered rows.""",
      "dtypes as :func:`segment_weighted_sum`", "sparse_segment_sum, segment_weighted_sum", """\
>>> table = np.array([[1.0, 4.0], [3.0, 2.0], [8.0, 1.0]])
>>> asp.sparse_segment_weighted_sum(table, [2, 0, 1], weights=[0.5, 2.0, 1.0],
...                                 lengths=[2, 1])
array([[6. , 8.5],
       [3. , 2. ]])""")
def sparse_segment_weighted_sum(data: Any, indices: Any, *, weights: Any, offsets: Any = None,
                                lengths: Any = None, segment_ids: Any = None,
                                num_segments: int | None = None) -> Any:
    """Gather rows by ``indices``, scale each by its weight, sum per segment, fused."""
    return _fused("sparse_segment_weighted_sum", "sum", data, indices, offsets, lengths,
                  segment_ids, num_segments, weights, 0)


@_doc("mean", """The same result as ``segment_mean(gather(data, indices), ...)`` without
materialising the gathered rows.""",
      "float32 for a float32 table (accumulated in float64), float64 otherwise",
      "segment_mean", """\
>>> table = np.arange(8) * 10
>>> asp.sparse_segment_mean(table, [1, 2, 3, 2, 4, 6, 7, 3, 6], lengths=[3, 4, 2, 0])
array([20. , 47.5, 45. ,  0. ])""")
def sparse_segment_mean(data: Any, indices: Any, *, offsets: Any = None, lengths: Any = None,
                        segment_ids: Any = None, num_segments: int | None = None,
                        weights: Any = None, empty_value: Any = 0) -> Any:
    """Gather rows of ``data`` by ``indices``, then average per segment, fused."""
    return _fused("sparse_segment_mean", "mean", data, indices, offsets, lengths, segment_ids,
                  num_segments, weights, empty_value)


@_doc("max", """The same result as ``segment_max(gather(data, indices), ...)`` without
materialising the gathered rows.""",
      "``data``'s dtype (with weights: as :func:`segment_weighted_sum`)", "segment_max", """\
>>> table = np.arange(8) * 10
>>> asp.sparse_segment_max(table, [1, 2, 3, 2, 4, 6, 7, 3, 6], lengths=[3, 4, 2])
array([30, 70, 60])""")
def sparse_segment_max(data: Any, indices: Any, *, offsets: Any = None, lengths: Any = None,
                       segment_ids: Any = None, num_segments: int | None = None,
                       weights: Any = None, empty_value: Any = 0) -> Any:
    """Gather rows of ``data`` by ``indices``, then take the max per segment, fused."""
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
        are PyTorch's bag starts (``bags`` long, each at most ``len(ids)``) and the
        last bag runs to the end.
    lengths
        Bag sizes, summing to ``len(ids)`` (instead of offsets).
    mode
        ``"sum"``, ``"mean"`` or ``"max"``.
    per_sample_weights
        Optional weight per id, in the same form as ``ids``; each row is scaled by it
        before pooling (PyTorch allows it with ``"sum"`` only; here any mode).
    include_last_offset
        Whether ``offsets`` has the final end offset (see ``offsets``). Only
        ``offsets=`` has a last offset to include or not: ``False`` with ``lengths=``
        or with list ids is an error.

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
        An unknown ``mode``, malformed offsets or lengths, both or neither given,
        ``include_last_offset=False`` without ``offsets=``.
    TypeError
        Non-integer ids, a non-numeric table.

    See Also
    --------
    sparse_segment_sum : The same kernel with Caffe2's names.
    arrow_sparse.embedding.lookup : With ``mode="max", return_argmax=True``, also the id
        each max came from (PyTorch's ``max_indices``), for
        ``embedding.lookup_backward(..., mode="max", argmax=...)``.

    Notes
    -----
    Empty bags give zeros in every mode (as PyTorch does; null in Arrow output for
    ``"mean"`` and ``"max"``). Unlike PyTorch, ``offsets[0]`` may be above 0 (ids before
    it are not read), float32 sums accumulate in float64, and there is no
    ``padding_idx`` (drop those ids, or give them null).

    On the device (CuPy table, ids and offsets or lengths, or a device
    Jagged of ids): no synchronisation. An id out of range is reported by
    the next check.

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
    if (offsets is not None and lengths is None and include_last_offset
            and type(ids).__module__ == "cupy" and type(table).__module__ == "cupy"
            and type(offsets).__module__ == "cupy"):
        out = _device_bags(func, mode, table, ids, offsets, per_sample_weights)
        if out is not None:
            return out
    back = _arrow.like_series(ids)  # a Polars / pandas Series comes back as one
    ids = _arrow.as_arrow(ids)
    listlike = _is_list_input(ids)
    if not listlike:
        v.check_exactly_one(func, offsets=offsets, lengths=lengths)
    if not include_last_offset:
        if listlike or offsets is None:
            given = "list ids (they carry their own offsets)" if listlike else "lengths="
            msg = (f"{func}: include_last_offset=False describes offsets= (bag starts) "
                   f"and cannot be used with {given}")
            raise ArrowSparseValueError(msg)
        xp = array_module(func, ids=ids, offsets=offsets)
        num_ids = len(ids) if isinstance(ids, (np.ndarray, pa.Array, pa.ChunkedArray)) \
            or is_cupy_array(ids) else len(v.as_index_array(func, "ids", ids))
        starts = v.as_index_array(func, "offsets", offsets, device=True)
        if len(starts):  # checked as starts, so an error cites the caller's own value
            starts = v.check_offsets(func, "offsets", starts, num_ids, device=True)
        offsets = xp.concatenate([starts, xp.full(1, num_ids, dtype=starts.dtype)])
    return back(_fused(func, mode, table, ids, offsets, lengths, None, None, per_sample_weights,
                       0, ("ids", "per_sample_weights")), rows=listlike)
