"""FBGEMM's jagged x padded-dense elementwise operators and the per-row matrix products.

Re-exported by :mod:`arrow_sparse.elementwise`, whose docstring describes the input forms.
Every function runs on numpy or CuPy inputs alike: the results span the whole values
buffer, so no offset is read back, and none synchronises on the device.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from .. import _arrow
from .. import _validate as v
from .._backend import array_module, device_checks, get_kernel, is_cupy_array, module_of
from .._docs import fill_doc
from .._offsets import checked_levels
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged
from ..kernels.cuda.elementwise import ROWS_DIFFER
from . import _device as _D
from ._args import (
    _VALUES_KINDS,
    _arith_dtype,
    _as_jagged,
    _dense_row_of,
    _finish,
    _finish_rows,
    _half_back,
    _i64,
    _is_list_array,
    _levels,
    _max_length,
    _rebuild_whole,
    _u8,
    _with_offsets,
    _zeros,
)

__all__ = [
    "jagged_dense_bmm",
    "jagged_dense_elementwise_add",
    "jagged_dense_elementwise_add_jagged_output",
    "jagged_dense_elementwise_mul",
    "jagged_jagged_bmm",
]


# ============================================================ FBGEMM jagged x dense
class _Inputs(NamedTuple):
    """The checked operands of a jagged x dense operator."""

    values: np.ndarray  # the leaf values, [N, *inner]
    offsets: list[np.ndarray]  # outermost first
    validity: list[np.ndarray | None]  # row validity of each level
    elem_validity: np.ndarray | None  # validity of the leaf values
    dense: np.ndarray
    kind: str  # the form to answer in (see _as_jagged)
    jagged: Jagged | None  # the Jagged read, None for a values array
    dtype: np.dtype  # the dtype both operands promote to


def _jagged_dense_inputs(func: str, values: Any, offsets: Any, dense: Any) -> _Inputs:
    array_module(func, values=values, offsets=offsets, dense=dense)
    j = None
    elem_valid = None
    if isinstance(values, Jagged) or _is_list_array(values):
        j, kind = _as_jagged(func, values, offsets, "values")
        levels = _levels(j)
        vals = levels[-1].values
        offs = [node.offsets for node in levels]
        valids = [node.validity for node in levels]
        elem_valid = levels[-1].values_validity
    else:
        vals = v.as_values_array(func, "values", values, device=True)
        if offsets is None:
            msg = f"{func}: offsets are needed with a values array (a list, outermost first)"
            raise ArrowSparseTypeError(msg)
        offs = checked_levels(func, offsets, len(vals), device=True)
        valids = [None] * len(offs)
        kind = "arrow_values" if isinstance(values, (pa.Array, pa.ChunkedArray)) else "values"
    arr = v.as_values_array(func, "dense", dense, device=True)
    levels, inner = len(offs), vals.shape[1:]
    rows = len(offs[0]) - 1
    if arr.ndim != 1 + levels + len(inner) or arr.shape[1 + levels:] != inner \
            or arr.shape[0] != rows:
        axes = ", ".join([str(rows)] + [f"L{i}" for i in range(levels)] + [str(d) for d in inner])
        msg = (f"{func}: dense must have shape [{axes}] for {levels} jagged level(s) and "
               f"values of shape {vals.shape}, got {arr.shape}")
        raise ArrowSparseValueError(msg)
    return _Inputs(vals, offs, valids, elem_valid, arr, kind, j,
                   _arith_dtype(func, vals.dtype, arr.dtype))


def _jagged_dense_jagged(func: str, values: Any, offsets: Any, dense: Any, op: int) -> Any:
    vals, offs, valids, elem_valid, arr, kind, j, dtype = _jagged_dense_inputs(
        func, values, offsets, dense)
    xp = module_of(vals)
    width = int(np.prod(vals.shape[1:], dtype=np.int64))
    x = vals.astype(dtype, copy=False).reshape(len(vals), width)
    dense_row_of, num_out = _dense_row_of(offs, arr.shape)
    dense3 = xp.ascontiguousarray(arr, dtype=dtype).reshape(num_out, arr.shape[len(offs)], width)
    if kind not in _VALUES_KINDS:
        out = _zeros(func, x.shape, dtype, xp)
    elif xp is np:
        first, last = int(offs[-1][0]), int(offs[-1][-1])
        out = v.empty(func, x.shape, dtype)
        ufunc = np.add if op == 0 else np.multiply
        with np.errstate(all="ignore"):  # x * 0 where x is inf: nan, as FBGEMM gives
            ufunc(x[:first], dtype.type(0), out=out[:first])
            ufunc(x[last:], dtype.type(0), out=out[last:])
    else:  # values no row addresses are x op 0 too: all of them, the kernel does the rows
        with np.errstate(all="ignore"):
            out = x * dtype.type(0) if op else x + dtype.type(0)
    get_kernel("elementwise", "jagged_dense_jagged_out", xp)(
        x, dense3, dense_row_of, _i64(offs[-1]), op, out)
    result = _half_back(out.reshape(vals.shape), vals.dtype, arr.dtype)
    device_checks(func, xp)
    if j is None:
        return _with_offsets(result, offs, kind)
    return _finish(_rebuild_whole(_levels(j), result, valids, elem_valid), kind)


@_arrow.series_in_out("values")
def jagged_dense_elementwise_add(values: Any, offsets: Any, dense: Any, *,
                                 output: str = "dense") -> Any:
    """Add a jagged tensor to a padded dense one, giving the dense sum (FBGEMM).

    FBGEMM's ``jagged_dense_elementwise_add``: ``dense + jagged_to_padded_dense(values,
    offsets, dense's jagged axes)``. A position with no element keeps the dense value;
    an element outside the dense (a row longer than the dense axis) is dropped. With
    ``output="jagged"`` the result is instead
    :func:`jagged_dense_elementwise_add_jagged_output`'s.

    Parameters
    ----------
    values
        Jagged values ``[N, *inner]``, or a :class:`Jagged` / Arrow list array (then
        ``offsets=None``; null rows and null elements count as padding).
    offsets
        List of offsets arrays, outermost first (one array means one level).
    dense
        ``[rows, L_0, ..., L_{k-1}, *inner]``, one axis per jagged level.
    output
        ``"dense"`` (the default, FBGEMM's: ``dense``'s shape) or ``"jagged"`` (as
        :func:`jagged_dense_elementwise_add_jagged_output`).

    Returns
    -------
    numpy.ndarray, tuple, pyarrow.Array or Jagged
        Dense output: an array of ``dense``'s shape (numpy, or CuPy on the device), of
        the dtype both promote to (float16 stays float16, as in FBGEMM, computed in
        float32). Jagged output: as :func:`jagged_dense_elementwise_add_jagged_output`.

    Raises
    ------
    ValueError
        Malformed offsets, ``dense`` of the wrong shape, or an unknown ``output``.
    TypeError
        Non-numeric or boolean inputs.

    See Also
    --------
    jagged_dense_elementwise_add_jagged_output : The jagged-output sum.
    jagged_to_padded_dense : The padding the dense output applies.

    Notes
    -----
    In arrow_sparse 0.1.0 this function returned jagged values by default; FBGEMM's
    operator of this name returns the dense sum, which is the default since (see
    CHANGELOG.md).

    Examples
    --------
    >>> values = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
    >>> dense = np.full((3, 3), 100)
    >>> asp.jagged_dense_elementwise_add(values, [np.array([0, 3, 7, 9])], dense)
    array([[101, 102, 103],
           [102, 104, 106],
           [103, 106, 100]])
    >>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
    >>> asp.jagged_dense_elementwise_add(j, None, dense, output="jagged")
    Jagged([[101, 102, 103], [102, 104, 106, 7], [103, 106]], dtype=int64, offsets=int32)
    """
    func = "jagged_dense_elementwise_add"
    if isinstance(output, str) and output == "jagged":
        return _jagged_dense_jagged(func, values, offsets, dense, 0)
    if not (isinstance(output, str) and output == "dense"):
        msg = f"{func}: output must be 'dense' or 'jagged', got {output!r}"
        raise ArrowSparseValueError(msg)
    vals, offs, valids, elem_valid, arr, _, _, dtype = _jagged_dense_inputs(func, values,
                                                                             offsets, dense)
    xp = module_of(vals)
    width = int(np.prod(vals.shape[1:], dtype=np.int64))
    x = vals.astype(dtype, copy=False).reshape(len(vals), width)
    expand = get_kernel("convert", "expand_level", xp)
    row_index = None
    num_out = arr.shape[0]
    for level in range(len(offs) - 1):
        extent = arr.shape[1 + level]
        row_index = expand(row_index, offs[level], _u8(valids[level]), extent, num_out)
        num_out *= extent
    dense3 = xp.ascontiguousarray(arr, dtype=dtype).reshape(num_out, arr.shape[len(offs)], width)
    out = v.empty(func, dense3.shape, dtype, xp)
    get_kernel("elementwise", "jagged_dense_dense_out", xp)(
        x, row_index, _i64(offs[-1]), _u8(valids[-1]), _u8(elem_valid), dense3, out)
    device_checks(func, xp)
    return _half_back(out.reshape(arr.shape), vals.dtype, arr.dtype)


#: The docstring body of the two jagged-output operations, filled per operation.
_JAGGED_OUTPUT_DOC = """
    {intro}

    Parameters
    ----------
    values
        Jagged values ``[N, *inner]``, or a :class:`Jagged` / Arrow list array (then
        ``offsets=None``).
    offsets
        List of offsets arrays, outermost first (one array means one level).
    dense
        ``[rows, L_0, ..., L_{{k-1}}, *inner]``, one axis per jagged level.

    Returns
    -------
    tuple, pyarrow.Array or Jagged
        A values array in: FBGEMM's ``(values, offsets)``, the values shaped like
        ``values`` (positions no row addresses: ``values {op} 0``) and ``offsets`` the
        list of checked offsets arrays (Arrow arrays for Arrow values). A
        :class:`Jagged` or an Arrow list array in: the same kind, with its offsets and
        validity. dtype: the one both promote to (float16 stays float16, as in FBGEMM,
        computed in float32).

    Raises
    ------
    ValueError
        Malformed offsets, or ``dense`` of the wrong shape.
    TypeError
        Non-numeric or boolean inputs.

    See Also
    --------
    {see_also}

    Notes
    -----
    In arrow_sparse 0.1.0 a values array gave the values alone; take ``[0]`` of the
    tuple for them (see CHANGELOG.md).

    Examples
    --------
    {examples}
"""


@_arrow.series_in_out("values")
@fill_doc(_JAGGED_OUTPUT_DOC, op="+", intro="""\
Each element adds the dense value at its padded position; an element outside the
dense (a row longer than the dense axis) adds 0 and keeps its value.""", see_also="""\
jagged_dense_elementwise_mul : The product.
dense_to_jagged : How the dense is read.""", examples="""\
>>> values = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
>>> dense = np.full((3, 3), 100)
>>> out, offsets = asp.jagged_dense_elementwise_add_jagged_output(
...     values, [np.array([0, 3, 7, 9])], dense)
>>> out
array([101, 102, 103, 102, 104, 106,   7, 103, 106])
>>> offsets
[array([0, 3, 7, 9])]""")
def jagged_dense_elementwise_add_jagged_output(values: Any, offsets: Any, dense: Any) -> Any:
    """Add a padded dense tensor to a jagged one, giving a jagged tensor (FBGEMM)."""
    return _jagged_dense_jagged("jagged_dense_elementwise_add_jagged_output", values, offsets,
                                dense, 0)


@_arrow.series_in_out("values")
@fill_doc(_JAGGED_OUTPUT_DOC, op="*", intro="""\
Each element is multiplied by the dense value at its padded position; an element
outside the dense (a row longer than the dense axis) is multiplied by 0, as FBGEMM
does (it reads the dense with ``dense_to_jagged``, which pads with 0).""", see_also="""\
jagged_dense_elementwise_add_jagged_output : The sum.
Jagged.__mul__ : ``j * dense`` refuses a dense shorter than a row instead.""", examples="""\
>>> values = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
>>> dense = np.array([[1, 1, 1], [10, 10, 10], [2, 2, 2]])
>>> asp.jagged_dense_elementwise_mul(values, [np.array([0, 3, 7, 9])], dense)[0]
array([ 1,  2,  3, 20, 40, 60,  0,  6, 12])
>>> j = asp.Jagged.from_list([[1.0, 2.0], [], None])
>>> asp.jagged_dense_elementwise_mul(j, None, np.full((3, 2), 0.5))
Jagged([[0.5, 1.0], [], None], dtype=float64, offsets=int32)""")
def jagged_dense_elementwise_mul(values: Any, offsets: Any, dense: Any) -> Any:
    """Multiply a jagged tensor by a padded dense one, giving a jagged tensor (FBGEMM)."""
    return _jagged_dense_jagged("jagged_dense_elementwise_mul", values, offsets, dense, 1)


# ======================================================================== bmm
@_arrow.series_in_out("values")
def jagged_dense_bmm(values: Any, offsets: Any, dense: Any, max_length: int | None = None) -> Any:
    """Multiply each row's ``[L_b, K]`` matrix by ``dense[b]`` (``[K, N]``) (FBGEMM).

    Parameters
    ----------
    values
        Jagged values ``[total, K]``, or a :class:`Jagged` / Arrow list array of
        ``fixed_size_list`` vectors (then ``offsets=None``).
    offsets
        Row offsets, ``B + 1`` long.
    dense
        ``[B, K, N]``, one matrix per row.
    max_length
        Only each row's first ``max_length`` elements are multiplied; the rest give
        zeros. Default: every element.

    Returns
    -------
    tuple, pyarrow.Array or Jagged
        Jagged ``[total, N]`` with the rows of the input (same offsets, validity; null
        rows and positions no row addresses are zeros), dtype both promote to (float16
        stays float16, as in FBGEMM, computed in float32). A values array in gives
        FBGEMM's ``(values, offsets)`` (Arrow arrays for Arrow values); a
        :class:`Jagged` or an Arrow list array gives the same kind.

    Raises
    ------
    ValueError
        Values that are not 2-D, ``dense`` not ``[B, K, N]``, or malformed offsets.
    TypeError
        Non-numeric or boolean inputs, or nested rows.

    See Also
    --------
    jagged_jagged_bmm : ``x_b^T @ y_b`` per row, giving a dense tensor.

    Notes
    -----
    FBGEMM requires ``max_L``; here it may be left out. In arrow_sparse 0.1.0 a values
    array gave the values alone; take ``[0]`` of the tuple for them (see CHANGELOG.md).

    Examples
    --------
    >>> x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> dense = np.array([[[1.0, 2.0], [3.0, 4.0]], [[10.0, 0.0], [0.0, 10.0]]])
    >>> out, offsets = asp.jagged_dense_bmm(x, np.array([0, 2, 3]), dense)
    >>> out
    array([[ 1.,  2.],
           [ 3.,  4.],
           [10., 10.]])
    >>> offsets
    array([0, 2, 3])
    """
    func = "jagged_dense_bmm"
    xp = array_module(func, values=values, offsets=offsets, dense=dense)
    j, kind = _as_jagged(func, values, offsets, "values")
    x = j.values
    if isinstance(x, Jagged):
        msg = f"{func}: values must be one jagged level of [total, K] rows, not nested lists"
        raise ArrowSparseTypeError(msg)
    arr = v.as_values_array(func, "dense", dense, device=True)
    if x.ndim != 2:
        msg = f"{func}: values must be 2-D [total, K], got shape {x.shape}"
        raise ArrowSparseValueError(msg)
    if arr.ndim != 3 or arr.shape[:2] != (j.num_rows, x.shape[1]):
        msg = f"{func}: dense must have shape [{j.num_rows}, {x.shape[1]}, N], got {arr.shape}"
        raise ArrowSparseValueError(msg)
    dtype = _arith_dtype(func, x.dtype, arr.dtype)
    limit = _max_length(func, max_length)
    # The whole values buffer on the device: reading offsets[-1] would synchronise.
    total = len(x) if kind in _VALUES_KINDS or xp is not np else int(j.offsets[-1])
    out = _zeros(func, (total, arr.shape[2]), dtype, xp)
    vv = None if j.values_validity is None else j.values_validity[:total]
    get_kernel("elementwise", "jagged_dense_bmm", xp)(
        x[:total].astype(dtype, copy=False), _i64(j.offsets), _u8(j.validity), _u8(vv),
        xp.ascontiguousarray(arr, dtype=dtype), limit, out)
    device_checks(func, xp)
    out = _half_back(out, x.dtype, arr.dtype)
    return _finish_rows(Jagged._trusted(out, j.offsets, j.validity, vv), kind)


@_arrow.series_in_out("x")
@_arrow.series_in_out("y")
def jagged_jagged_bmm(x: Any, y: Any, offsets: Any = None,
                      max_length: int | None = None) -> np.ndarray:
    """Per row ``x_b^T @ y_b``: ``[L_b, M]^T x [L_b, N] -> [M, N]`` (FBGEMM).

    Parameters
    ----------
    x
        Jagged values ``[total, M]``, or a :class:`Jagged` / Arrow list array of vectors
        (then ``offsets=None``).
    y
        Jagged values ``[total, N]`` with the same rows as ``x``: a values array sharing
        ``offsets``, or a Jagged with the same row lengths (a row null in ``x`` or in
        ``y`` may differ: it is not read).
    offsets
        Row offsets shared by ``x`` and ``y`` (``B + 1`` long), or None for Jaggeds.
    max_length
        Only each row's first ``max_length`` elements take part. Default: all.

    Returns
    -------
    numpy.ndarray
        ``[B, M, N]`` (CuPy on the device) of the dtype both promote to (float16 stays
        float16, as in FBGEMM, computed in float32); empty and null rows give zeros.

    Raises
    ------
    ValueError
        Values that are not 2-D, rows that differ in length (naming the first), or
        malformed offsets.
    TypeError
        Non-numeric or boolean inputs, or nested rows.

    See Also
    --------
    jagged_dense_bmm : A jagged matrix per row times a dense one.

    Examples
    --------
    >>> x = np.array([[1.0], [2.0], [3.0]])
    >>> y = np.array([[1.0, 1.0], [1.0, 0.0], [2.0, 2.0]])
    >>> asp.jagged_jagged_bmm(x, y, np.array([0, 2, 3]))
    array([[[3., 1.]],
    <BLANKLINE>
           [[6., 6.]]])
    """
    func = "jagged_jagged_bmm"
    xp = array_module(func, x=x, y=y, offsets=offsets)
    if offsets is None:
        jx, _ = _as_jagged(func, x, None, "x")
        jy, _ = _as_jagged(func, y, None, "y")
        if isinstance(jx.values, Jagged) or isinstance(jy.values, Jagged):
            msg = f"{func}: x and y must be one jagged level of vectors, not nested lists"
            raise ArrowSparseTypeError(msg)
        if jy.num_rows != jx.num_rows:
            msg = f"{func}: y has {jy.num_rows} rows but x has {jx.num_rows}"
            raise ArrowSparseValueError(msg)
        xv, yv, xo, yo = jx.values, jy.values, jx.offsets, jy.offsets
        valid = _D.and_validity(jx.validity, jy.validity, 0, 0, jx.num_rows)
        _same_lengths(func, xo, yo, valid)
        x_valid, y_valid = jx.values_validity, jy.values_validity
    else:
        xv = v.as_values_array(func, "x", x, device=True)
        yv = v.as_values_array(func, "y", y, device=True)
        if len(xv) != len(yv):
            msg = f"{func}: y has {len(yv)} values but x has {len(xv)}; they share the offsets"
            raise ArrowSparseValueError(msg)
        xo = yo = v.check_offsets(func, "offsets", offsets, len(xv), device=True)
        valid = x_valid = y_valid = None
    if xv.ndim != 2 or yv.ndim != 2:
        msg = f"{func}: x and y values must be 2-D, got shapes {xv.shape} and {yv.shape}"
        raise ArrowSparseValueError(msg)
    dtype = _arith_dtype(func, xv.dtype, yv.dtype)
    limit = _max_length(func, max_length)
    out = _zeros(func, (len(xo) - 1, xv.shape[1], yv.shape[1]), dtype, xp)
    get_kernel("elementwise", "jagged_jagged_bmm", xp)(
        xv.astype(dtype, copy=False), _i64(xo), _u8(x_valid), yv.astype(dtype, copy=False),
        _i64(yo), _u8(y_valid), _u8(valid), limit, out)
    device_checks(func, xp)
    return _half_back(out, xv.dtype, yv.dtype)


def _same_lengths(func: str, xo: Any, yo: Any, valid: Any) -> None:
    """Rows of ``y`` (offsets ``yo``) as long as ``x``'s, except where a row is null.

    On the device the first differing row is recorded in the error word.
    """
    xp = module_of(xo)
    differ = xp.diff(_i64(xo)) != xp.diff(_i64(yo))
    if valid is not None:  # a null row is never read: its length is free
        differ &= valid
    if is_cupy_array(differ):
        positions = xp.where(differ, xp.arange(len(differ), dtype=np.int64), -1)
        get_kernel("elementwise", "check_positions", xp)(positions, ROWS_DIFFER)
    elif differ.any():
        pos = v.first_true(differ)
        v.fail_value(func, "y", "rows differ in length from x's", pos,
                     f"{yo[pos + 1] - yo[pos]} != {xo[pos + 1] - xo[pos]}")


