"""Per-row selection: gathers, slices, per-row unique values, repeats.

Re-exported by :mod:`arrow_sparse.elementwise`, whose docstring describes the input forms.
Every function runs on numpy or CuPy inputs alike. Gathers, slices and unique read the
size of their result back from the device (one synchronisation per jagged level: the
size depends on the data); ``repeat`` reads nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from .. import _arrow
from .. import _validate as v
from .._backend import array_module, device_checks, fetch, get_kernel, is_cupy_array, module_of
from .._offsets import checked_levels
from ..errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged
from . import _arrow_rows as _A
from ._args import (
    _INT32_MAX,
    _INT64_MAX,
    _as_jagged,
    _as_words,
    _chunkwise,
    _finish,
    _finish_rows,
    _from_words,
    _i64,
    _is_chunked_list,
    _is_list_array,
    _leaf_offsets,
    _levels,
    _map_innermost,
    _rebuild,
    _rebuild_whole,
    _repeat,
    _u8,
    _windows,
)

__all__ = [
    "expand_into_jagged",
    "index_select",
    "jagged_index_select",
    "jagged_unique",
    "list_slice",
    "repeat",
    "truncate",
]


# ================================================================ gathers and slices
#: A device check of row ids, read with the result's size: ``(arg, problem, ids, position
#: of the first bad id (or of any id), whether it is bad)``, the last two device scalars.
Pending = tuple[str, str, Any, Any, Any]


def _gather(values: np.ndarray, starts: np.ndarray, out_offsets: np.ndarray,
            total: int) -> np.ndarray:
    xp = module_of(values)
    words = _as_words(values)
    out = xp.empty((total, words.shape[1]), dtype=words.dtype)
    get_kernel("elementwise", "gather_ranges", xp)(words, starts, out_offsets, out)
    return _from_words(out, values.dtype, values.shape[1:])


def _take_ranges(func: str, j: Jagged, starts: np.ndarray, lengths: np.ndarray,
                 validity: np.ndarray | None, pending: Pending | None = None) -> Jagged:
    """Row ``i`` of the result: elements ``[starts[i], starts[i] + lengths[i])`` of ``j``.

    The result's size is read (on the device: a synchronisation, which also raises the
    device checks launched so far and the ``pending`` check of the row ids).
    """
    xp = module_of(lengths)
    out_offsets = xp.zeros(len(starts) + 1, dtype=np.int64)
    xp.cumsum(lengths, out=out_offsets[1:])
    scalars = () if pending is None else pending[3:]
    total, *check = fetch(func, out_offsets[-1], *scalars)
    if pending is not None and check[1]:
        arg, problem, ids, _, _ = pending
        value = fetch(func, ids[check[0]])[0]
        raise ArrowSparseIndexError(v.message(func, arg, problem, check[0], value))
    if j.offsets.dtype == np.int32 and total > _INT32_MAX:
        msg = (f"{func}: the result holds {total} elements, too many for int32 offsets "
               "(Arrow list); use large_list (int64 offsets)")
        raise ArrowSparseValueError(msg)
    values = j.values
    if isinstance(values, Jagged):
        v.check_nbytes(func, f"the {total:,} elements taken", total, 8)
    else:
        v.check_nbytes(func, f"the {total:,} elements taken", (total, *values.shape[1:]),
                       values.itemsize)
    vv = None
    if isinstance(values, Jagged):
        elements = get_kernel("elementwise", "ranges_to_indices", xp)(
            starts, out_offsets, xp.empty(total, dtype=np.int64))
        new_values: Any = _take_rows(func, values, elements)
    else:
        new_values = _gather(values, starts, out_offsets, total)
        if j.values_validity is not None:
            vv = _gather(j.values_validity, starts, out_offsets, total)
    if j.offsets.dtype != out_offsets.dtype:
        out_offsets = out_offsets.astype(j.offsets.dtype)
    return Jagged._trusted(new_values, out_offsets, validity, vv)


def _row_ranges(offsets: np.ndarray, validity: np.ndarray | None, rows: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Return ``(starts, lengths, validity)`` of rows ``rows``; null rows become empty."""
    xp = module_of(offsets)
    offsets = _i64(offsets)
    starts = offsets[rows]
    lengths = offsets[rows + 1] - starts  # O(len(rows)), whatever the number of rows
    picked = None if validity is None else validity[rows]
    if picked is not None:
        lengths = xp.where(picked, lengths, 0)
    return starts, lengths, picked


def _take_rows(func: str, j: Jagged, rows: np.ndarray, pending: Pending | None = None
               ) -> Jagged:
    """Take rows ``rows`` (non-negative; checked, or ``pending``) of ``j``.

    Null rows become empty nulls.
    """
    return _take_ranges(func, j, *_row_ranges(j.offsets, j.validity, rows), pending)


def _check_rows(func: str, arg: str, rows: Any, num_rows: int
                ) -> tuple[np.ndarray, Pending | None]:
    """Row ids in ``[-num_rows, num_rows)`` made non-negative, and the pending device check.

    On the host a bad id raises now. On the device the ids are clamped into range (so
    the gathers stay in bounds) and the check is read with the result's size.
    """
    problem = f"out of range [-{num_rows}, {num_rows})"
    idx = v.as_index_array(func, arg, rows, device=True)
    if not is_cupy_array(idx):
        bad = (idx < -num_rows) | (idx >= num_rows)
        if bad.any():
            pos = v.first_true(bad)
            raise ArrowSparseIndexError(v.message(func, arg, problem, pos, idx[pos]))
        return np.where(idx < 0, idx + num_rows, idx).astype(np.int64, copy=False), None
    if len(idx) == 0:
        return idx, None
    if num_rows == 0:  # every id is out of range
        raise ArrowSparseIndexError(v.message(func, arg, problem, 0, fetch(func, idx[0])[0]))
    lowest = 0 if rows.dtype.kind == "u" else -num_rows  # unsigned ids wrapped to negative
    idx = _i64(idx)
    bad = (idx - lowest).view(np.uint64) >= num_rows - lowest  # outside [lowest, num_rows)
    first = bad.argmax()
    # Python's modulo wraps the negative ids and keeps the bad ones in bounds.
    return idx % num_rows, (arg, problem, idx, first, bad[first])


def index_select(data: Any, rows: Any, *, offsets: Any = None) -> Any:
    """Gather rows by index: row ``i`` of the result is row ``rows[i]`` of ``data``.

    Parameters
    ----------
    data
        A :class:`Jagged` (nested too), an Arrow list array (any element type:
        ``list<string>`` and ``list<binary>`` too), or values with ``offsets=``.
    rows
        Integer row ids, in any order, repeats allowed. Negative ids count from the end,
        as in Python (``-1`` is the last row): the range is ``[-num_rows, num_rows)``.
    offsets
        Row offsets of ``data`` when it is a values array.

    Returns
    -------
    Jagged, pyarrow.Array or tuple
        The form of ``data``: a Jagged, an Arrow list array of the same type, or
        ``(values, offsets)``. New values (a copy), offsets from 0 of the input's
        dtype; null rows stay null (and empty).

    Raises
    ------
    IndexError
        A row id out of range.
    ValueError
        A result too big for int32 offsets (use large_list input).
    TypeError
        Non-integer row ids.

    See Also
    --------
    jagged_index_select : FBGEMM's signature (values, lengths, indices).

    Notes
    -----
    On the device (``rows`` a CuPy array): the result's size is read back, one
    synchronisation per jagged level, which also raises a row id out of range (and the
    device checks of the input) at once.

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
    >>> asp.index_select(j, [2, 0, -1])
    Jagged([[3, 6], [1, 2, 3], [3, 6]], dtype=int64, offsets=int32)
    >>> asp.index_select(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), [1], offsets=[0, 3, 7, 9])
    (array([2, 4, 6, 7]), array([0, 4]))
    >>> asp.index_select(pa.array([["a", "b"], None, ["c"]]), [2, 1, 0]).to_pylist()
    [['c'], None, ['a', 'b']]
    """
    func = "index_select"
    if _A.take_only(data, offsets):
        arr, kind = _A.as_list_array(func, data, offsets)
        picked, _ = _check_rows(func, "rows", rows, len(arr))
        return _A.finish(_A.take_ranges(func, arr, *_row_ranges(*_A.parts(arr), picked)), kind)
    xp = array_module(func, data=data, rows=rows, offsets=offsets)
    j, kind = _as_jagged(func, data, offsets)
    result = _take_rows(func, j, *_check_rows(func, "rows", rows, j.num_rows))
    device_checks(func, xp)
    return _finish_rows(result, kind)


def jagged_index_select(values: Any, lengths: Any, indices: Any,
                        num_dense_output_rows: int | None = None) -> Any:
    """Gather rows of a values + lengths jagged tensor (FBGEMM's ``jagged_index_select``).

    Parameters
    ----------
    values
        Jagged values ``[total, *inner]`` (numpy or Arrow; an Arrow array may hold
        strings, binary or any other type).
    lengths
        Row lengths summing to exactly ``total``.
    indices
        Row ids to gather; negative ids count from the end, as in :func:`index_select`.
    num_dense_output_rows
        FBGEMM's size hint: the number of values the gathered rows hold. Checked when
        given (FBGEMM trusts it).

    Returns
    -------
    tuple
        ``(values, lengths)`` of the gathered rows (Arrow arrays when ``values`` is one);
        FBGEMM returns the same pair as a list.

    Raises
    ------
    IndexError
        A row id out of range.
    ValueError
        Lengths that do not sum to the number of values, or a
        ``num_dense_output_rows`` other than the number of gathered values.
    TypeError
        Non-numeric values or non-integer lengths or indices.

    See Also
    --------
    index_select : The same on a Jagged or an Arrow list array.

    Notes
    -----
    FBGEMM refuses negative indices; here they count from the end.

    On the device (CuPy arrays): one synchronisation, the result's size, which also
    raises bad lengths or indices at once.

    Examples
    --------
    >>> asp.jagged_index_select(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), [3, 4, 2], [2, 2, 0])
    (array([3, 6, 3, 6, 1, 2, 3]), array([2, 2, 3]))
    """
    func = "jagged_index_select"
    hint = None if num_dense_output_rows is None else v.check_count(
        func, "num_dense_output_rows", num_dense_output_rows)
    if _A.take_only(values, lengths):
        values = _arrow.as_one_array(values) if isinstance(values, pa.ChunkedArray) else values
        lens, offs = v.lengths_offsets(func, "lengths", lengths, num_values=len(values))
        arr, _ = _A.as_list_array(func, values, offs)
        picked, _ = _check_rows(func, "indices", indices, len(lens))
        res = _A.take_ranges(func, arr, *_row_ranges(*_A.parts(arr), picked))
        _check_output_rows(func, hint, len(res.values))
        return res.values, pa.array(np.diff(_A.parts(res)[0]).astype(lens.dtype, copy=False))
    xp = array_module(func, values=values, lengths=lengths, indices=indices)
    vals = v.as_values_array(func, "values", values, device=True)
    lens, offs = v.lengths_offsets(func, "lengths", lengths, num_values=len(vals), device=True)
    j = Jagged._trusted(vals, offs)
    res = _take_rows(func, j, *_check_rows(func, "indices", indices, j.num_rows))
    out_lengths = xp.diff(res.offsets)
    if out_lengths.dtype != lens.dtype:
        out_lengths = out_lengths.astype(lens.dtype)
    device_checks(func, xp)
    _check_output_rows(func, hint, len(res.values))
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return pa.array(res.values), pa.array(out_lengths)
    return res.values, out_lengths


def _check_output_rows(func: str, given: int | None, found: int) -> None:
    """FBGEMM's ``num_dense_output_rows`` hint, if given, must be the number gathered."""
    if given is not None and given != found:
        msg = (f"{func}: num_dense_output_rows is {given} but the gathered rows hold "
               f"{found} values")
        raise ArrowSparseValueError(msg)


def _slice_bound(func: str, arg: str, x: Any) -> int | None:
    if x is None:
        return None
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        msg = f"{func}: {arg} must be an integer or None, got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    return max(min(int(x), _INT64_MAX // 2), -(_INT64_MAX // 2))


def _slice_ranges(offsets: np.ndarray, validity: np.ndarray | None, start: int | None,
                  stop: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Return ``(starts, lengths, validity)`` of ``row[start:stop]`` for every row."""
    xp = module_of(offsets)
    lens = xp.diff(_i64(offsets))

    def bound(i: int | None, default: Any) -> Any:
        if i is None:
            return default
        return xp.maximum(lens + i, 0) if i < 0 else xp.minimum(lens, i)

    first = bound(start, 0)
    new_lengths = xp.maximum(bound(stop, lens) - first, 0)
    if validity is not None:
        new_lengths = xp.where(validity, new_lengths, 0)
    return _i64(offsets[:-1]) + first, new_lengths, validity


def _list_slice(func: str, data: Any, offsets: Any, start: int | None,
                stop: int | None) -> Any:
    """``row[start:stop]`` of every row of ``data``, answered in its form."""
    if _A.take_only(data, offsets):
        arr, kind = _A.as_list_array(func, data, offsets)
        return _A.finish(_A.take_ranges(func, arr, *_slice_ranges(*_A.parts(arr), start, stop)),
                         kind)
    j, kind = _as_jagged(func, data, offsets)
    result = _take_ranges(func, j, *_slice_ranges(j.offsets, j.validity, start, stop))
    device_checks(func, j.xp)
    return _finish_rows(result, kind)


def list_slice(data: Any, start: int | None = None, stop: int | None = None, *,
               offsets: Any = None) -> Any:
    """Slice every row like a Python list: row ``r`` becomes ``row[start:stop]``.

    Parameters
    ----------
    data
        A :class:`Jagged` (nested: slices the outer lists), an Arrow list array (any
        element type, strings too), or values with ``offsets=``.
    start
        First element kept; negative counts from each row's end; None = 0.
    stop
        Element after the last kept; negative counts from each row's end; None = the end.
    offsets
        Row offsets of ``data`` when it is a values array.

    Returns
    -------
    Jagged, pyarrow.Array or tuple
        The form of ``data`` (``(values, offsets)`` for a values array), a copy; null
        rows stay null.

    Raises
    ------
    TypeError
        ``start`` or ``stop`` not an integer or None.

    See Also
    --------
    truncate : ``list_slice(data, 0, length)``.

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
    >>> asp.list_slice(j, 1)
    Jagged([[2, 3], [4, 6, 7], [6]], dtype=int64, offsets=int32)
    >>> asp.list_slice(j, -2, -1)
    Jagged([[2], [6], [3]], dtype=int64, offsets=int32)
    >>> asp.list_slice(pa.array([[1, 2, 3], None]), 0, 2).to_pylist()
    [[1, 2], None]
    """
    func = "list_slice"
    first = _slice_bound(func, "start", start)
    last = _slice_bound(func, "stop", stop)
    if _is_chunked_list(data) and offsets is None:
        return _chunkwise(data, lambda c: list_slice(c, first, last))
    return _list_slice(func, data, offsets, first, last)


def truncate(data: Any, length: int, *, offsets: Any = None) -> Any:
    """Keep the first ``length`` elements of every row (``row[:length]``).

    Parameters
    ----------
    data
        A :class:`Jagged`, an Arrow list array (any element type, strings too), or
        values with ``offsets=``.
    length
        Elements to keep; negative drops that many from each row's end, as in Python.
    offsets
        Row offsets of ``data`` when it is a values array.

    Returns
    -------
    Jagged, pyarrow.Array or tuple
        As :func:`list_slice`.

    Raises
    ------
    TypeError
        ``length`` not an integer.

    See Also
    --------
    list_slice : Any ``[start:stop]``.

    Examples
    --------
    >>> asp.truncate(asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]]), 2)
    Jagged([[1, 2], [2, 4], [3, 6]], dtype=int64, offsets=int32)
    >>> asp.truncate(pa.array([["a", "b", "c"], None, ["d"]]), 2).to_pylist()
    [['a', 'b'], None, ['d']]
    """
    func = "truncate"
    if length is None:
        msg = f"{func}: length must be an integer, got NoneType"
        raise ArrowSparseTypeError(msg)
    stop = _slice_bound(func, "length", length)
    if _is_chunked_list(data) and offsets is None:
        return _chunkwise(data, lambda c: truncate(c, length))
    return _list_slice(func, data, offsets, 0, stop)


# ======================================================================== unique
def _unique(func: str, j: Jagged) -> Jagged:
    vals = j.values
    xp = j.xp
    if vals.ndim != 1:
        msg = f"{func}: rows must hold scalars, got values of shape {vals.shape}"
        raise ArrowSparseTypeError(msg)
    work = vals.view(np.uint8) if vals.dtype == bool else \
        vals.astype(np.float32) if vals.dtype == np.float16 else vals
    out, counts = get_kernel("elementwise", "unique_rows", xp)(
        work, _i64(j.offsets), _u8(j.validity), _u8(j.values_validity))
    out = out.view(bool) if vals.dtype == bool else out.astype(vals.dtype, copy=False)
    offsets = xp.zeros(len(counts) + 1, dtype=j.offsets.dtype)
    xp.cumsum(counts, dtype=offsets.dtype, out=offsets[1:])
    return Jagged._trusted(out, offsets, j.validity)


def jagged_unique(data: Any, *, offsets: Any = None) -> Any:
    """Sort and deduplicate every row: its distinct values, ascending.

    Parameters
    ----------
    data
        A :class:`Jagged` (nested: per innermost list), an Arrow list array (of numbers,
        strings, binary, ...), or 1-D values with ``offsets=``.
    offsets
        Row offsets of ``data`` when it is a values array.

    Returns
    -------
    Jagged, pyarrow.Array or tuple
        The form of ``data`` (``(values, offsets)`` for a values array): each row sorted
        ascending without repeats. NaNs count as one value (sorted last, like
        ``numpy.unique``); strings and binary sort bytewise (Arrow's order); null
        elements are dropped; null rows stay null.

    Raises
    ------
    TypeError
        Rows of vectors (2-D values or fixed-size lists), or elements with no order
        (structs, nested maps).

    See Also
    --------
    numpy.unique : The same on one array.

    Notes
    -----
    On the device: a segmented sort (two stable argsorts) and one synchronisation, the
    number of distinct values (the result's size); the device checks are read right
    after it (the error word: a small second read) and raised at once.

    Examples
    --------
    >>> asp.jagged_unique(asp.Jagged.from_list([[3, 1, 3, 2], [], None, [7, 7]]))
    Jagged([[1, 2, 3], [], None, [7]], dtype=int64, offsets=int32)
    >>> asp.jagged_unique(pa.array([["b", "a", "b", None], None])).to_pylist()
    [['a', 'b'], None]
    """
    func = "jagged_unique"
    if _is_chunked_list(data) and offsets is None:
        return _chunkwise(data, lambda c: jagged_unique(c))
    if _A.take_only(data, offsets):
        arr, kind = _A.as_list_array(func, data, offsets)
        return _A.finish(_A.unique(func, arr), kind)
    j, kind = _as_jagged(func, data, offsets)
    result = _map_innermost(j, lambda lvl: _unique(func, lvl))
    device_checks(func, j.xp, wait=True)  # the launcher has read the result's size
    return _finish_rows(result, kind)


# ======================================================================== repeat
def repeat(x: Any, like: Any) -> Any:
    """Fill every row of ``like`` with that row's value of ``x`` (broadcast per row).

    Parameters
    ----------
    x
        One value or vector per row: ``[rows]`` or ``[rows, *inner]`` (numpy, Arrow or
        CuPy). An Arrow array of strings (or any other type) needs an Arrow ``like``.
    like
        A :class:`Jagged` (nested: down to the leaves) or Arrow list array giving the rows
        (its elements may be of any type: only its offsets and validity are read).

    Returns
    -------
    Jagged or pyarrow.Array
        The kind of ``like`` with its offsets (zero-copy for numeric ``x`` and ``like``;
        rebased to 0 otherwise) and validity; element ``k`` of row ``r`` is ``x[r]``.

    Raises
    ------
    ValueError
        ``x`` with a number of rows other than ``like``'s.
    TypeError
        Non-numeric ``x`` with a Jagged ``like``, or ``like`` not jagged.

    See Also
    --------
    expand_into_jagged : The same with offsets, giving values.

    Notes
    -----
    On the device: no synchronisation (one kernel); the result's values span the whole
    values buffer of ``like`` (0 where no row addresses a value).

    Examples
    --------
    >>> like = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
    >>> asp.repeat(np.array([0.5, 1.0, 2.0]), like)
    Jagged([[0.5, 0.5, 0.5], [1.0, 1.0, 1.0, 1.0], [2.0, 2.0]], dtype=float64, offsets=int32)
    >>> asp.repeat(pa.array(["u", "v"]), pa.array([[1, 2], [3]])).to_pylist()
    [['u', 'u'], ['v']]
    """
    func = "repeat"
    if _is_list_array(like) and (_A.take_only(like) or _A.non_numeric(x)):
        return _A.repeat(func, x, like)
    if _A.non_numeric(x):
        msg = (f"{func}: x of Arrow type {x.type} needs like to be an Arrow list array "
               "(a Jagged holds numbers only)")
        raise ArrowSparseTypeError(msg)
    xp = array_module(func, x=x, like=like)
    arr = v.as_values_array(func, "x", x, device=True)
    j, kind = _as_jagged(func, like, None, "like")
    if len(arr) != j.num_rows:
        msg = f"{func}: x has {len(arr)} rows but like has {j.num_rows}"
        raise ArrowSparseValueError(msg)
    levels = _levels(j)
    validities = [node.validity for node in levels]
    if xp is np:
        wins, (start, stop) = _windows(j)
        window = _repeat(arr, _leaf_offsets(levels), start, stop)
        return _finish(_rebuild(wins, window, start, validities, None), kind)
    whole = _repeat(arr, _leaf_offsets(levels), 0, len(levels[-1].values), covered=False)
    device_checks(func, xp)
    return _finish(_rebuild_whole(levels, whole, validities, None), kind)


def expand_into_jagged(x: Any, offsets: Any) -> Any:
    """Repeat each row's value or vector over its elements, giving jagged values.

    Parameters
    ----------
    x
        One value or vector per row: ``[rows]`` or ``[rows, *inner]`` (numpy or Arrow).
    offsets
        Row offsets (``rows + 1`` long), or a list of offsets, outermost first, to
        repeat down several jagged levels.

    Returns
    -------
    numpy.ndarray, cupy.ndarray or pyarrow.Array
        Values ``[offsets[-1][-1], *inner]``: position ``k`` of row ``r`` holds ``x[r]``;
        positions before the first row hold 0.

    Raises
    ------
    ValueError
        Malformed offsets, or ``x`` with the wrong number of rows.
    TypeError
        Non-numeric ``x`` or non-integer offsets.

    See Also
    --------
    repeat : The same shaped like a Jagged.

    Notes
    -----
    On the device: the result's size ``offsets[-1][-1]`` is read back (one
    synchronisation, which also raises bad offsets at once); one kernel.

    Examples
    --------
    >>> asp.expand_into_jagged(np.array([10, 20, 30]), np.array([0, 3, 7, 9]))
    array([10, 10, 10, 20, 20, 20, 20, 30, 30])
    """
    func = "expand_into_jagged"
    xp = array_module(func, x=x, offsets=offsets)
    arr = v.as_values_array(func, "x", x, device=True)
    offs = checked_levels(func, offsets, None, device=True)
    rows = len(offs[0]) - 1
    if len(arr) != rows:
        msg = f"{func}: x has {len(arr)} rows but offsets[0] describes {rows}"
        raise ArrowSparseValueError(msg)
    comp = _i64(offs[0])
    for o in offs[1:]:
        comp = _i64(o[comp])
    total = fetch(func, offs[-1][-1])[0]
    out = _repeat(arr, comp, 0, total, covered=False)
    device_checks(func, xp)
    return pa.array(out) if isinstance(x, (pa.Array, pa.ChunkedArray)) else out
