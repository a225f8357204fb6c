"""Gather and scatter of rows: Caffe2's ``Gather``, ``ScatterAssign`` and ``ScatterWeightedSum``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from .. import _validate as v
from .._backend import array_module, device_checks, get_kernel
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ._args import (
    _index_ndim,
    _slices,
    _width,
    _writable,
)

__all__ = ["gather", "scatter_assign", "scatter_weighted_sum"]


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
        v.check_nbytes(func, "the result", idx.shape + arr.shape[1:], arr.itemsize)
        return np.take(arr, idx, axis=0)
    idx = v.as_index_array(func, "indices", indices, ndim=_index_ndim(indices), device=True)
    v.check_nbytes(func, "the result", idx.shape + arr.shape[1:], arr.itemsize)
    out = get_kernel("segment", "gather_rows", xp)(arr, idx.reshape(-1))
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
        ``slices`` of the wrong shape; read-only or non-contiguous ``data``; ``slices``
        or ``indices`` sharing memory with ``data`` (they would be read after being
        overwritten).
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
    v.check_no_overlap(func, "data", arr, indices=indices, slices=slices)
    idx = _scatter_indices(func, indices, len(arr), xp)
    rows = _slices(func, slices, arr, len(idx))
    view = arr.view(np.uint8) if arr.dtype.kind == "b" else arr
    get_kernel("segment", "scatter_assign", xp)(
        view.reshape(len(arr), _width(arr)), idx,
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
        non-contiguous ``data``; ``slices`` or ``indices`` sharing memory with ``data``.
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
    v.check_no_overlap(func, "data", arr, indices=indices, slices=slices)
    idx = _scatter_indices(func, indices, len(arr), xp)
    rows = _slices(func, slices, arr, len(idx))
    get_kernel("segment", "scatter_weighted_sum", xp)(
        arr.reshape(len(arr), _width(arr)), weights[0], idx, rows, weights[1])
    device_checks(func, xp)
    return arr
