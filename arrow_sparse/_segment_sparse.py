"""Fused gather + reduce (Caffe2's ``Sparse*`` family, ``embedding_bag``), gather, scatter.

Public through :mod:`arrow_sparse.segment` (and ``asp.<name>``); the argument checks
and output dtypes are shared with the other segment reductions
(:mod:`arrow_sparse._segment_args`), and so is the device path (CuPy in, CuPy out).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from . import _arrow
from . import _validate as v
from ._backend import array_module, device_checks, is_cupy_array
from ._segment_args import (
    _MODES,
    _acc_zero,
    _check_ids,
    _device_kernels,
    _empty_scalar,
    _finish,
    _float_dtype,
    _index_ndim,
    _is_list_input,
    _kernel,
    _lowest,
    _per_chunk,
    _raise_out_of_range,
    _rows,
    _same_dtype,
    _slices,
    _sum_dtype,
    _table,
    _u8,
    _weights,
    _width,
    _writable,
)
from .errors import ArrowSparseTypeError, ArrowSparseValueError

__all__ = [
    "embedding_bag",
    "gather",
    "scatter_assign",
    "scatter_weighted_sum",
    "sparse_segment_max",
    "sparse_segment_mean",
    "sparse_segment_sum",
    "sparse_segment_weighted_sum",
]


def _fused(func: str, mode: str, data: Any, indices: Any, offsets: Any, lengths: Any,
           segment_ids: Any, num_segments: Any, weights: Any, empty_value: Any,
           names: tuple[str, str] = ("indices", "weights")) -> Any:
    """Check -> gather_reduce kernel -> wrap for the fused ops and embedding_bag."""
    if isinstance(indices, pa.ChunkedArray) and _arrow.is_list_type(indices.type):
        return _per_chunk(func, indices, weights, num_segments, lambda chunk, w: _fused(
            func, mode, data, chunk, offsets, lengths, segment_ids, None, w, empty_value,
            names))
    xp = array_module(func, data=data, **{names[0]: indices, names[1]: weights},
                      offsets=offsets, lengths=lengths, segment_ids=segment_ids)
    arr, table, inner = _table(func, data)
    rows = _rows(func, indices, offsets, lengths, segment_ids, num_segments, arg=names[0])
    ids = _check_ids(func, names[0], rows)
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
    out = v.empty(func, (rows.num_rows, table.shape[1]),
                  np.dtype(np.uint8) if out_dtype.kind == "b" else out_dtype, xp)
    counts = np.empty(rows.num_rows, np.int64) if rows.arrow and mc and rows.vmask is not None \
        else None
    bad = _kernel("gather_reduce", xp)(table, ids, rows.offsets, _u8(valid), _u8(rows.vmask),
                                       w, woffs, _MODES[mode], zero, lowest, mc, empty, out,
                                       counts)
    if bad >= 0:  # host arrays only: device kernels record it in the error word
        _raise_out_of_range(func, names[0], ids, bad, len(table))
    if out_dtype.kind == "b":
        out = out.view(bool)
    result = _finish(rows, valid, out, counts, mc, inner)
    device_checks(func, xp)
    return result


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
    exact sum whatever the segment length (with weights, or float64 accumulation
    alone: the final rounding). Rows are prefetched 64 indices ahead; each segment's
    indices are range-checked just before its rows are read.

    On the device (CuPy data and indices, or a device Jagged of indices): no
    synchronisation, except with ``segment_ids`` and no ``num_segments`` (the last
    id is read back: one). An index out of range is reported by the next check.

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

    Notes
    -----
    On the device (CuPy data and indices, or a device Jagged of indices): no
    synchronisation, except with ``segment_ids`` and no ``num_segments`` (the last
    id is read back: one). An index out of range is reported by the next check.

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

    Notes
    -----
    On the device (CuPy data and indices, or a device Jagged of indices): no
    synchronisation, except with ``segment_ids`` and no ``num_segments`` (the last
    id is read back: one). An index out of range is reported by the next check.

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
    NaN propagates as in ``numpy.max``, and the max of ``-0.0`` and ``0.0`` is ``0.0``, as
    in :func:`segment_max`.

    On the device (CuPy data and indices, or a device Jagged of indices): no
    synchronisation, except with ``segment_ids`` and no ``num_segments`` (the last
    id is read back: one). An index out of range is reported by the next check.

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
    return _fused(func, mode, table, ids, offsets, lengths, None, None, per_sample_weights, 0,
                  ("ids", "per_sample_weights"))


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

    Notes
    -----
    On the device (CuPy data and indices): no synchronisation; an index out of
    range is reported by the next check and its row is left zero.

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
    xp = array_module(func, data=data, indices=indices)
    arr = v.as_values_array(func, "data", data, device=True)
    if xp is np:
        idx = v.check_indices(func, "indices", indices, len(arr), ndim=_index_ndim(indices))
        return np.take(arr, idx, axis=0)
    idx = v.as_index_array(func, "indices", indices, ndim=_index_ndim(indices), device=True)
    out = _device_kernels().gather_rows(xp, arr, idx.reshape(-1))
    device_checks(func, xp)
    return out.reshape(idx.shape + arr.shape[1:])


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

    On the device (CuPy data, updated in place): no synchronisation; an
    index out of range is skipped and reported by the next check.

    Examples
    --------
    >>> data = np.zeros((3, 2), dtype=np.int64)
    >>> asp.scatter_assign(data, [2, 0, 2], np.array([[1, 4], [3, 2], [8, 1]]))
    array([[3, 2],
           [0, 0],
           [8, 1]])
    """
    func = "scatter_assign"
    xp = array_module(func, data=data, indices=indices, slices=slices)
    arr = _writable(func, data)
    idx = _scatter_indices(func, indices, len(arr), xp)
    rows = _slices(func, slices, arr, len(idx))
    view = arr.view(np.uint8) if arr.dtype.kind == "b" else arr
    _kernel("scatter_assign", xp)(view.reshape(len(arr), _width(arr)), idx,
                                  rows.view(np.uint8) if rows.dtype.kind == "b" else rows)
    device_checks(func, xp)
    return arr


def _scatter_indices(func: str, indices: Any, bound: int, xp: Any) -> np.ndarray:
    """Row indices of a scatter: range-checked on the host, by the kernels on the device."""
    if xp is np:
        return v.check_indices(func, "indices", indices, bound)
    return v.as_index_array(func, "indices", indices, device=True)


def scatter_weighted_sum(data: Any, w0: Any, indices: Any, slices: Any, w1: Any) -> np.ndarray:
    """In place: ``data[idx] = w0 * data[idx] + w1 * slices`` (Caffe2's ``ScatterWeightedSum``).

    Parameters
    ----------
    data
        Writable, C-contiguous float32 or float64 numpy array ``[V, ...]``.
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
        Non-float or float16 ``data``, or ``data`` that is not a numpy array.

    See Also
    --------
    scatter_assign

    Notes
    -----
    Caffe2's operator runs two loops, and so does this function: first each
    occurrence of an index scales its row by ``w0``, then each ``w1 * slices[i]`` is
    added into row ``indices[i]``, in index order. An index listed ``k`` times therefore
    ends as ``w0**k * data[idx] + w1 * (sum of its k slices)``; with ``w0 = 1`` every
    duplicate simply accumulates. Each scaling and each addition is computed in float64
    and rounded to ``data``'s dtype.

    On the device (CuPy data, updated in place; ``w0`` and ``w1``
    host numbers): no value is read back, but CuPy's sort of the
    indices may block the host until it is done. An index out of
    range is skipped and reported by the next check.

    Examples
    --------
    >>> data = np.ones((3, 2))
    >>> asp.scatter_weighted_sum(data, 0.5, [0, 2], np.array([[1.0, 2.0], [3.0, 4.0]]), 2.0)
    array([[2.5, 4.5],
           [1. , 1. ],
           [6.5, 8.5]])

    A repeated index: row 2 (``[4, 5]``) is scaled twice, then gets both its slices.

    >>> data = np.arange(8.0).reshape(4, 2)
    >>> slices = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    >>> asp.scatter_weighted_sum(data, 0.5, [2, 0, 2], slices, 2.0)[[0, 2]]
    array([[4.  , 4.5 ],
           [9.  , 9.25]])
    """
    func = "scatter_weighted_sum"
    xp = array_module(func, data=data, indices=indices, slices=slices)
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
            msg = f"{func}: {name} must be a real number (or a one-element host array)"
            raise ArrowSparseValueError(msg)
        weights.append(float(warr.reshape(())))
    idx = _scatter_indices(func, indices, len(arr), xp)
    rows = _slices(func, slices, arr, len(idx))
    _kernel("scatter_weighted_sum", xp)(arr.reshape(len(arr), _width(arr)), weights[0], idx,
                                        rows, weights[1])
    device_checks(func, xp)
    return arr
