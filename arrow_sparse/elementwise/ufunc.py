"""Numpy ufuncs on jagged values: ``jagged_ufunc``, ``array_ufunc`` and ``map_values``.

An operand is a Jagged with the same rows, a scalar, a per-row array or a padded dense
array; the result keeps the offsets (shared, zero-copy) and ANDs the validities. These
functions compute the arithmetic of :class:`~arrow_sparse.Jagged` (``j + 1``,
``np.exp(j)``, ``j.map_values``): they register with :func:`arrow_sparse.jagged.computes`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _arrow
from .. import _validate as v
from .._backend import array_module, device_checks
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged, computes
from . import _device as _D
from ._args import (
    _VALUES_KINDS,
    Window,
    _and_mask,
    _as_jagged,
    _check_levels,
    _finish,
    _hidden_mask,
    _i64,
    _is_array,
    _is_list_array,
    _leaf_offsets,
    _levels,
    _read_dense,
    _rebuild,
    _rebuild_whole,
    _repeat,
    _same_structure,
    _scalar_operand,
    _visible,
    _visible_rows,
    _windows,
)

__all__ = ["map_values"]  # jagged_ufunc and array_ufunc compute Jagged's operators


# ==================================================================== ufuncs and operators
@computes("jagged_ufunc")
def jagged_ufunc(ufunc: np.ufunc, *operands: Any, **kwargs: Any) -> Jagged:
    """Apply an elementwise numpy ufunc to Jagged operands; the engine of the operators.

    Parameters
    ----------
    ufunc
        An elementwise ``numpy.ufunc`` with one output (``np.add``, ``np.exp``, ...).
    *operands
        ``ufunc.nin`` operands, at least one a :class:`Jagged` (an Arrow list array is read
        as one). The others: a Jagged with the same rows (same lengths at every level;
        its offsets may start elsewhere), a scalar, a per-row array ``[rows]`` or
        ``[rows, *inner]`` (broadcast over each row's elements), or a padded array
        ``[rows, L_0, ..., *inner]`` (read at each element's padded position; every
        row must fit in it).
    **kwargs
        Passed to the ufunc (``dtype=``, ``casting=``); ``out=`` and ``where=`` are refused.

    Returns
    -------
    Jagged
        The offsets of the first Jagged operand (the same arrays: zero-copy), the AND of
        the operands' validity, and new values. Values under null rows and null
        elements are not computed (they are 0; Arrow leaves them unspecified). A
        Jagged whose offsets start above zero gets a values buffer with zeros before
        its first row.

    Raises
    ------
    ValueError
        Jagged operands of different rows, an operand that does not broadcast, a
        padded array shorter than a row, or a value the dtype cannot hold.
    TypeError
        A ufunc that is not elementwise, an unsupported operand or dtype.

    See Also
    --------
    map_values : Any elementwise function of the values.

    Notes
    -----
    On the device (a Jagged on the device, CuPy arrays and scalars): no synchronisation.
    The ufunc is CuPy's of the same name, applied to the whole values buffer (the
    window the rows address is not read back); positions outside the rows, under null
    rows and null elements are then set to 0, and the values buffer keeps its length.
    Rows that differ from the other Jagged's, or are longer than a padded operand, are
    raised by the next check (docs/gpu.md, "Dispatch"). Where CuPy differs from numpy
    (integer overflow and negative powers are not errors there), the device follows CuPy.

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
    >>> j * np.array([10, 100, 1000])  # Jagged.__mul__ calls jagged_ufunc(np.multiply, ...)
    Jagged([[10, 20, 30], [200, 400, 600, 700], [3000, 6000]], dtype=int64, offsets=int32)
    """
    name = getattr(ufunc, "__name__", type(ufunc).__name__)
    func = f"Jagged.{name}"
    if not isinstance(ufunc, np.ufunc) or ufunc.signature is not None or ufunc.nout != 1:
        msg = f"{func}: only elementwise numpy ufuncs with one output apply to a Jagged"
        raise ArrowSparseTypeError(msg)
    if len(operands) != ufunc.nin:
        msg = f"{func}: takes {ufunc.nin} operands, got {len(operands)}"
        raise ArrowSparseTypeError(msg)
    refused = sorted({"out", "where"} & set(kwargs))
    if refused:
        msg = (f"{func}: the {refused[0]}= argument is not supported on a Jagged; "
               "use map_values for other computations")
        raise ArrowSparseTypeError(msg)
    ops = [Jagged._from_arrow(func, "operand", op) if _is_list_array(op) else op
           for op in operands]
    base = next((op for op in ops if isinstance(op, Jagged)), None)
    if base is None:
        msg = f"{func}: no operand is a Jagged"
        raise ArrowSparseTypeError(msg)
    xp = array_module(func, **{f"operand {i}": op for i, op in enumerate(ops)
                               if not _scalar_operand(op)})
    if xp is not np:
        result = _device_ufunc(func, xp, ufunc, ops, base, kwargs)
        device_checks(func, xp)
        return result
    wins, (start, stop) = _windows(base)
    leaf = wins[-1][0].values
    assert isinstance(leaf, np.ndarray)
    validities = [node.validity for node, _, _ in wins]
    values_validity = wins[-1][0].values_validity
    args: list[Any] = [None] * len(ops)
    for i, op in enumerate(ops):  # the Jaggeds first: their validity decides what is read
        if op is base:
            args[i] = leaf[start:stop]
        elif isinstance(op, Jagged):
            owins, (ostart, ostop) = _same_structure(func, "other", wins, op)
            pairs = zip(wins, owins, strict=True)
            for level, ((node, lo, hi), (onode, olo, _)) in enumerate(pairs):
                validities[level] = _and_mask(validities[level], node.num_rows, lo, hi,
                                              onode.validity, olo)
            values_validity = _and_mask(values_validity, len(leaf), start, stop,
                                        owins[-1][0].values_validity, ostart)
            args[i] = owins[-1][0].values[ostart:ostop]
    for i, op in enumerate(ops):
        if isinstance(op, Jagged):
            continue
        if _scalar_operand(op):
            args[i] = op
        else:
            args[i] = _broadcast(func, "other", op, wins, validities, start, stop)
    args = _align_elements(func, args)
    keep = _hidden_mask(wins, validities, values_validity, start, stop)
    result = _numeric(func, _visible(lambda *a: _call(func, ufunc, a, kwargs), args, keep))
    return _rebuild(wins, result, start, validities, values_validity)


def _device_ufunc(func: str, xp: Any, ufunc: np.ufunc, ops: list[Any], base: Jagged,
                  kwargs: dict[str, Any]) -> Jagged:
    """:func:`jagged_ufunc` on the device: on the whole values buffer (see its Notes)."""
    device_ufunc = getattr(xp, ufunc.__name__, None)
    if device_ufunc is None:
        msg = (f"{func}: numpy's {ufunc.__name__} has no CuPy counterpart; move the Jagged to "
               "the host first with Jagged.to_device('cpu')")
        raise NotImplementedError(msg)
    levels = _levels(base)
    bounds = _D.windows(levels)
    leaf = levels[-1].values
    size = len(leaf)
    validities = [node.validity for node in levels]
    values_validity = levels[-1].values_validity
    args: list[Any] = [None] * len(ops)
    for i, op in enumerate(ops):  # the Jaggeds first: their validity decides what is read
        if op is base:
            args[i] = leaf
        elif isinstance(op, Jagged):
            olevels = _levels(op)
            _check_levels(func, "other", levels, olevels)
            obounds = _D.same_structure(func, levels, bounds, olevels)
            for level, (node, onode) in enumerate(zip(levels, olevels, strict=True)):
                validities[level] = _D.and_validity(validities[level], onode.validity,
                                                    bounds[level][0], obounds[level][0],
                                                    node.num_rows)
            lo, olo = bounds[-1][0], obounds[-1][0]
            values_validity = _D.and_validity(values_validity, olevels[-1].values_validity,
                                              lo, olo, size)
            other = olevels[-1].values
            same = obounds is bounds and len(other) == size
            args[i] = other if same else _D.aligned(other, lo, olo, size)
    for i, op in enumerate(ops):
        if _scalar_operand(op):
            args[i] = op
        elif not isinstance(op, Jagged):
            arr = v.as_values_array(func, "other", op, min_ndim=0, device=True)
            form = _operand_form(func, "other", arr, levels)
            if form == "scalar":
                args[i] = arr
            elif form == "padded":
                args[i] = _D.padded(arr, levels, validities, bounds)
            else:
                args[i] = _per_row_shape(_D.per_row(arr, levels), arr, leaf)
    args = _align_elements(func, args)
    mask = _D.keep(levels, validities, values_validity, bounds)
    with np.errstate(all="ignore"):  # values no one reads are computed too; CuPy never warns
        result = _call(func, device_ufunc, args, kwargs)
    result = _numeric(func, _D.zero_hidden(result, mask))
    return _rebuild_whole(levels, result, validities, values_validity)


def _call(func: str, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> Any:
    """``fn(*args, **kwargs)`` with its errors named after ``func``."""
    try:
        return fn(*args, **kwargs)
    except TypeError as exc:
        msg = f"{func}: {exc}"
        raise ArrowSparseTypeError(msg) from None
    except (ValueError, OverflowError) as exc:
        msg = f"{func}: {exc}"
        raise ArrowSparseValueError(msg) from None


def _numeric(func: str, result: Any) -> Any:
    if result.dtype.kind not in "biuf":
        msg = f"{func}: the result has dtype {result.dtype}; Jagged values must be numbers"
        raise ArrowSparseTypeError(msg)
    return result


def _operand_form(func: str, arg: str, arr: Any, levels: list[Jagged]) -> str:
    """``"scalar"`` (0-d), ``"per_row"`` or ``"padded"``: how ``arr`` meets the rows."""
    if arr.ndim == 0:
        return "scalar"
    leaf = levels[-1].values
    inner = leaf.shape[1:]
    rows = levels[0].num_rows
    if arr.shape[0] != rows:
        msg = f"{func}: {arg} has {arr.shape[0]} rows but the Jagged has {rows}"
        raise ArrowSparseValueError(msg)
    if arr.ndim in (1, 1 + len(inner)):
        return "per_row"
    if arr.ndim == 1 + len(levels) + len(inner):
        return "padded"
    msg = (f"{func}: {arg} of shape {arr.shape} does not broadcast against a Jagged of "
           f"{rows} rows with values of shape {leaf.shape}: use a scalar, a per-row array "
           f"[rows] or [rows, *inner], or a padded array [rows, L, ..., *inner]")
    raise ArrowSparseValueError(msg)


def _broadcast(func: str, arg: str, op: Any, wins: list[Window],
               validities: list[np.ndarray | None], start: int, stop: int) -> np.ndarray:
    """Read a per-row or padded operand at every leaf position of ``[start, stop)`` (host)."""
    arr = v.as_values_array(func, arg, op, min_ndim=0)
    levels = [node for node, _, _ in wins]
    form = _operand_form(func, arg, arr, levels)
    if form == "scalar":
        return arr
    if form == "per_row":
        return _per_row_shape(_repeat(arr, _leaf_offsets(levels), start, stop), arr,
                              levels[-1].values)
    visible = _visible_rows(wins, validities)
    for level, ((node, lo, hi), shown) in enumerate(zip(wins, visible, strict=True)):
        lens = np.diff(_i64(node.offsets[lo:hi + 1]))
        if shown is not None:  # hidden rows are never read: their length is free
            lens = np.where(shown, lens, 0)
        extent = arr.shape[1 + level]
        too_long = lens > extent
        if too_long.any():
            pos = v.first_true(too_long)
            where = "" if level == 0 else f" (level {level})"
            v.fail_value(func, arg, f"axis {1 + level} (length {extent}) is shorter than "
                         f"a row of the Jagged{where}", pos, lens[pos])
    return _read_dense(arr, [node.offsets for node in levels], stop)[start:stop]


def _per_row_shape(out: Any, arr: Any, leaf: Any) -> Any:
    """Shape a ``[rows]`` operand read at each element as one scalar per vector element."""
    return out.reshape(out.shape + (1,) * (leaf.ndim - 1)) if arr.ndim == 1 else out


def _align_elements(func: str, args: list[Any]) -> list[Any]:
    """Line the operands' element axes up from the left, as numpy does for the jagged axis.

    Every array operand is ``[n, *element]``. A scalar element (``[n]``) meets a vector
    or matrix element (``[n, D]``) as ``[n, 1]``: element ``k`` of each operand pairs
    with element ``k`` of the other, never with a column.
    """
    shapes = [a.shape[1:] for a in args if _is_array(a) and a.ndim]
    depth = max((len(s) for s in shapes), default=0)
    if depth == 0:
        return args
    lined = [a.reshape(a.shape + (1,) * depth) if _is_array(a) and a.ndim == 1 else a
             for a in args]
    elements = [s for s in shapes if s]
    try:
        if any(len(s) != depth for s in elements):
            raise ValueError
        np.broadcast_shapes(*elements)
    except ValueError:
        listed = " and ".join(str(s) for s in elements)
        msg = (f"{func}: other elements of shapes {listed} do not broadcast: the element "
               "shapes must be equal (or 1 along an axis), or one operand must hold scalars")
        raise ArrowSparseValueError(msg) from None
    return lined


@computes("array_ufunc")
def array_ufunc(j: Jagged, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """``Jagged.__array_ufunc__``: elementwise ufunc calls go to :func:`jagged_ufunc`.

    Parameters
    ----------
    j
        The Jagged numpy asked.
    ufunc
        The ufunc.
    method
        ``"__call__"`` (the only one supported; reductions are segment functions).
    *inputs
        The ufunc's operands.
    **kwargs
        The ufunc's keyword arguments.

    Returns
    -------
    Jagged
        See :func:`jagged_ufunc`.

    Raises
    ------
    TypeError
        A method other than ``__call__`` (``np.add.reduce`` and friends).

    Examples
    --------
    >>> np.sqrt(asp.Jagged.from_list([[1.0, 4.0], [9.0]]))
    Jagged([[1.0, 2.0], [3.0]], dtype=float64, offsets=int32)
    """
    if method != "__call__":
        msg = (f"Jagged.{ufunc.__name__}: numpy's {ufunc.__name__}.{method} is not supported "
               "on a Jagged; use the segment reductions (segment_sum, ...) for per-row results")
        raise ArrowSparseTypeError(msg)
    return jagged_ufunc(ufunc, *inputs, **kwargs)


@computes("map_values")
@_arrow.series_in_out("data")
def map_values(data: Any, func: Callable[[np.ndarray], Any], *, offsets: Any = None) -> Any:
    """Apply an elementwise function to the values, keeping offsets and validity.

    Parameters
    ----------
    data
        A :class:`Jagged` (nested: the leaf values are mapped), an Arrow list array, or
        values ``[N, *inner]`` (numpy, Arrow or CuPy) with ``offsets=``.
    func
        Called once with the visible values the rows address (``[n, *inner]``: a view, or
        a copy without the values under null rows and null elements when there are
        any); must return ``n`` values (any numeric dtype; the inner shape may change).
        It must work value by value. On the device: called with the whole values buffer
        (a CuPy array) and must return a CuPy array of as many values.
    offsets
        Row offsets of ``data`` when it is a values array (may start above zero and end
        before the last value).

    Returns
    -------
    Jagged, pyarrow.Array or numpy.ndarray
        Same kind as ``data``: the same offsets arrays (zero-copy) and validity, the new
        values. Offsets that start above zero give a values buffer with zeros before the
        first row (one extra copy of the result). For a values array: new values of the
        same length, 0 where no row addresses them.

    Raises
    ------
    TypeError
        ``func`` not callable, or returning something that is not numeric.
    ValueError
        ``func`` returning a different number of values.

    See Also
    --------
    jagged_ufunc : What the operators and numpy ufuncs (``np.exp(j)``) use.

    Notes
    -----
    On the device: no synchronisation. ``func`` sees the whole values buffer, the values
    no row addresses and those under null rows and null elements included (selecting
    the others would read their number back); those positions are 0 in the result,
    whose values buffer keeps the input's length.

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> j.map_values(np.square)
    Jagged([[1, 4, 9], [4, 16, 36, 49], None, [9, 36]], dtype=int64, offsets=int32)
    >>> asp.map_values(pa.array([[1.0, 2.0], [4.0]]), np.log2).to_pylist()
    [[0.0, 1.0], [2.0]]
    >>> asp.map_values(np.array([5, 1, 2, 3]), np.negative, offsets=[1, 3, 4])
    array([ 0, -1, -2, -3])
    """
    name = "map_values"
    if not callable(func):
        msg = f"{name}: func must be callable, got {type(func).__name__}"
        raise ArrowSparseTypeError(msg)
    j, kind = _as_jagged(name, data, offsets)

    def call(window: np.ndarray, expected: int) -> np.ndarray:
        result = v.as_values_array(name, "func(values)", func(window), device=True)
        if len(result) != expected:
            msg = (f"{name}: func returned {len(result)} values for {expected}; it must map "
                   "the values one to one")
            raise ArrowSparseValueError(msg)
        return result

    if j.xp is not np:
        result = _D.mapped(name, j, lambda leaf: call(leaf, len(leaf)))
        device_checks(name, j.xp)
        return _finish(result, kind)
    min_len = len(j.values) if kind in _VALUES_KINDS else 0
    wins, (start, stop) = _windows(j)
    leaf = wins[-1][0].values
    assert isinstance(leaf, np.ndarray)
    validities = [node.validity for node, _, _ in wins]
    values_validity = wins[-1][0].values_validity
    keep = _hidden_mask(wins, validities, values_validity, start, stop)
    expected = stop - start if keep is None else int(np.count_nonzero(keep))
    result = _visible(lambda window: call(window, expected), [leaf[start:stop]], keep)
    return _finish(_rebuild(wins, result, start, validities, values_validity, min_len), kind)


# ================================================================= softmax and cumsum
