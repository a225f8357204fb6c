"""CUDA launchers of the jagged arithmetic kernels (``elementwise.cu``).

Each launcher has the signature and the semantics of its CPU twin in
:mod:`arrow_sparse.kernels.cpu.elementwise`: it picks the template instantiation from the
dtypes, sizes the grid and packs the arguments with explicit C types. Arrays are device
arrays (CuPy), or numpy arrays when the emulator stands in for the GPU in tests; the
launchers that need more than one step take the array module from their inputs.
Offsets and row indices of another integer type are widened to int64, masks are read
as bytes, and operands are converted to the dtype of ``out`` (the CPU kernels get them
that way already). A non-contiguous ``out`` is updated through a contiguous copy.

Instantiations: softmax for float32 / float64 (one lane group per row for 1-D values,
one thread per row and column for 2-D), cumsum for the accumulator dtypes (int64,
uint64, float32, float64), the copies (``gather_ranges``, ``repeat_rows`` and the read of
``jagged_dense_jagged_out``) for machine words of 1, 2, 4 or 8 bytes (any dtype is
copied through a view of its bytes), the rest for the ten numeric dtypes.

``unique_rows`` is a segmented sort done here: a kernel marks the row of every element
of the values buffer (hidden ones and those no row addresses get a key after the last
row), the array module sorts them by (row, value) with two stable argsorts (radix sorts
on a GPU: a few passes over the values, whatever the row lengths), a kernel flags the
first element of every run of equal values and counts each row's runs, a prefix sum
numbers the runs, and a kernel writes the runs' first elements. The number of runs is
read back from the device (one synchronisation: the result's size depends on the data).
``ranges_to_indices`` reads its output size back only when it is not given ``out``.

The kernels re-check what they rely on (rows inside the values, source ranges, dense
and jagged row indices) into the device error word; the public operation raises it
with :func:`arrow_sparse.kernels.cuda.check_errors`.

:data:`CHECKS` are device-only launchers with no CPU twin: ``check_positions`` records
the violations the public operations find with array functions on device inputs
(:data:`ROWS_DIFFER`, :data:`PADDED_SHORT`), where the host raises them with numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._backend import array_module
from ...errors import ArrowSparseValueError
from . import error_buffer, load_module
from ._launch import (
    FLOAT_CTYPES,
    VALUE_CTYPES,
    ctype,
    grid_1d,
    grid_groups,
    name_expression,
    name_expressions,
)
from .convert import _index_or_empty, _mask_or_empty

__all__ = ["cumsum", "gather_ranges", "jagged_dense_bmm", "jagged_dense_dense_out",
           "jagged_dense_jagged_out", "jagged_jagged_bmm", "ranges_to_indices", "repeat_rows",
           "softmax", "unique_rows"]

#: Device-only launchers (no CPU twin), see the module docstring.
CHECKS = ("check_positions",)
#: Codes of ``elementwise.cu``'s error enum that :func:`check_positions` records.
ROWS_DIFFER = 5
PADDED_SHORT = 6

#: Unsigned machine words: the element types of the copy kernels.
_WORDS = ("unsigned char", "unsigned short", "unsigned int", "unsigned long long")
#: Accumulator types of cumsum (numpy's cumsum dtypes, float16 widened).
_SCAN = ("long long", "unsigned long long", "float", "double")
_LL = ("long long",)

NAME_EXPRESSIONS: list[str] = [
    *name_expressions("softmax_rows", FLOAT_CTYPES),
    *name_expressions("softmax_columns", FLOAT_CTYPES),
    *name_expressions("cumsum", _SCAN),
    *name_expressions("gather_ranges", _WORDS),
    *name_expressions("ranges_to_indices", _LL),
    *name_expressions("repeat_rows", _WORDS),
    *name_expressions("unique_element_rows", _LL),
    *name_expressions("unique_run_starts", VALUE_CTYPES),
    *name_expressions("unique_write", VALUE_CTYPES),
    *name_expressions("jagged_dense_jagged_out", VALUE_CTYPES),
    *name_expressions("jagged_dense_dense_out", VALUE_CTYPES),
    *name_expressions("jagged_dense_bmm", VALUE_CTYPES),
    *name_expressions("jagged_jagged_bmm", VALUE_CTYPES),
    *name_expressions("check_positions", _LL),
]

_I32 = np.int32
_I64 = np.int64


def _launch(name: str, grid_block: tuple[tuple[int], tuple[int]], args: tuple[Any, ...]
            ) -> None:
    grid, block = grid_block
    load_module("elementwise").get_function(name)(grid, block, args)


def _ids(xp: Any, x: Any) -> Any:
    return xp.ascontiguousarray(x, dtype=np.int64)


def _into(xp: Any, out: Any) -> Any:
    """``out`` itself when C-contiguous, else a contiguous copy (written back by :func:`_back`).

    A copy, not an empty temporary: the kernels leave positions no row addresses alone,
    and the bmm kernels add to what ``out`` holds.
    """
    return out if out.flags.c_contiguous else xp.ascontiguousarray(out)


def _back(out: Any, target: Any) -> None:
    if target is not out:
        out[...] = target


def _words(a: Any) -> Any:
    """View a C-contiguous array as unsigned machine words along its last axis.

    1-, 2-, 4- and 8-byte dtypes keep their shape; others are seen as bytes.
    """
    size = a.dtype.itemsize
    return a.view(np.dtype(f"u{size}") if size in (1, 2, 4, 8) else np.dtype(np.uint8))


def _check_shape(func: str, arg: str, shape: tuple[int, ...], expected: tuple[int, ...]
                 ) -> None:
    if tuple(shape) != tuple(expected):
        msg = f"{func}: {arg} must have shape {tuple(expected)}, got {tuple(shape)}"
        raise ArrowSparseValueError(msg)


# ----------------------------------------------------------------- per-row scans
def softmax(values: Any, offsets: Any, row_valid: Any, elem_valid: Any, max_length: int,
            out: Any) -> None:
    """Per-row softmax of float ``values[N, D]`` into ``out`` (see the CPU kernel)."""
    func = "softmax"
    xp = array_module(func, values=values, offsets=offsets, row_valid=row_valid,
                      elem_valid=elem_valid, out=out)
    t = ctype(func, out.dtype, FLOAT_CTYPES)
    offs = _ids(xp, offsets)
    num_rows, width = offs.shape[0] - 1, out.shape[1]
    if num_rows <= 0 or width == 0:
        return
    x = xp.ascontiguousarray(values, dtype=out.dtype)
    rows, all_rows = _mask_or_empty(xp, row_valid)
    elems, all_elems = _mask_or_empty(xp, elem_valid)
    target = _into(xp, out)
    args = (x, offs, rows, all_rows, elems, all_elems, _I64(num_rows),
            _I64(min(x.shape[0], out.shape[0])), _I64(max_length))
    if width == 1:
        _launch(name_expression("softmax_rows", t), grid_groups(num_rows),
                (*args, target, error_buffer()))
    else:
        _launch(name_expression("softmax_columns", t), grid_1d(num_rows * width),
                (*args, _I64(width), target, error_buffer()))
    _back(out, target)


def cumsum(values: Any, offsets: Any, row_valid: Any, elem_valid: Any, exclusive: bool,
           out: Any) -> None:
    """Per-row running sum of ``values[N, D]`` into ``out`` (its dtype accumulates)."""
    func = "cumsum"
    xp = array_module(func, values=values, offsets=offsets, row_valid=row_valid,
                      elem_valid=elem_valid, out=out)
    t = ctype(func, out.dtype, _SCAN)
    offs = _ids(xp, offsets)
    num_rows, width = offs.shape[0] - 1, out.shape[1]
    if num_rows <= 0 or width == 0:
        return
    x = xp.ascontiguousarray(values, dtype=out.dtype)
    rows, all_rows = _mask_or_empty(xp, row_valid)
    elems, all_elems = _mask_or_empty(xp, elem_valid)
    target = _into(xp, out)
    _launch(name_expression(func, t), grid_1d(num_rows * width),
            (x, offs, rows, all_rows, elems, all_elems, _I32(bool(exclusive)), _I64(num_rows),
             _I64(min(x.shape[0], out.shape[0])), _I64(width), target, error_buffer()))
    _back(out, target)


# ------------------------------------------------------------------ row gathers
def _copy_rows(func: str, xp: Any, src: Any, index: Any, offsets: Any, extra: tuple[Any, ...],
               out: Any) -> None:
    """Launch copy kernel ``func`` from ``src`` rows into ``out``, both seen as words."""
    num = offsets.shape[0] - 1
    if num <= 0 or out.size == 0:
        return
    target = _into(xp, out)
    words = _words(target)
    source = _words(xp.ascontiguousarray(src, dtype=out.dtype))
    name = name_expression(func, ctype(func, words.dtype, _WORDS))
    _check_shape(func, "src", source.shape[1:], words.shape[1:])
    rows, width = words.shape
    _launch(name, grid_1d(rows * width),
            (source, _I64(source.shape[0]), *index, _ids(xp, offsets), _I64(num), *extra,
             _I64(width), _I64(rows), words, error_buffer()))
    _back(out, target)


def gather_ranges(src: Any, starts: Any, out_offsets: Any, out: Any) -> None:
    """Copy ``src[starts[i]:...]`` (2-D) to row ``i`` of ``out`` at ``out_offsets``."""
    func = "gather_ranges"
    xp = array_module(func, src=src, starts=starts, out_offsets=out_offsets, out=out)
    _copy_rows(func, xp, src, (_ids(xp, starts),), out_offsets, (), out)


def ranges_to_indices(starts: Any, out_offsets: Any, out: Any = None) -> Any:
    """List the element ids ``starts[i] + j`` of every range, concatenated (int64).

    Without ``out`` its size ``out_offsets[-1]`` is read back from the device.
    """
    func = "ranges_to_indices"
    xp = array_module(func, starts=starts, out_offsets=out_offsets, out=out)
    offs = _ids(xp, out_offsets)
    if out is None:
        out = xp.empty(int(offs[-1]), dtype=np.int64)  # the output size: read back
    num, total = offs.shape[0] - 1, out.shape[0]
    if num > 0 and total > 0:
        target = _into(xp, out)
        _launch(name_expression(func, "long long"), grid_1d(total),
                (_ids(xp, starts), offs, _I64(num), _I64(total), target))
        _back(out, target)
    return out


def repeat_rows(src: Any, offsets: Any, base: int, out: Any) -> None:
    """``out[k - base] = src[r]`` for every position ``k`` of row ``r`` (2-D)."""
    func = "repeat_rows"
    xp = array_module(func, src=src, offsets=offsets, out=out)
    _copy_rows(func, xp, src, (), offsets, (_I64(base),), out)


# ------------------------------------------------------------------------ unique
def unique_rows(values: Any, offsets: Any, row_valid: Any, elem_valid: Any
                ) -> tuple[Any, Any]:
    """Sorted distinct non-null values of each row of 1-D ``values``: (values, lengths).

    One synchronisation: the number of distinct values (the result's size).
    """
    func = "unique_rows"
    xp = array_module(func, values=values, offsets=offsets, row_valid=row_valid,
                      elem_valid=elem_valid)
    t = ctype(func, values.dtype)
    offs = _ids(xp, offsets)
    num_rows, num_values = max(offs.shape[0] - 1, 0), values.shape[0]
    counts = xp.zeros(num_rows, dtype=np.int64)
    if num_rows == 0 or num_values == 0:
        return xp.empty(0, dtype=values.dtype), counts
    vals = xp.ascontiguousarray(values)
    rows, all_rows = _mask_or_empty(xp, row_valid)
    elems, all_elems = _mask_or_empty(xp, elem_valid)
    key = xp.empty(num_values, dtype=np.int64)  # the row, num_rows for hidden elements
    _launch(name_expression("unique_element_rows", "long long"),
            grid_1d(max(num_values, num_rows)),
            (offs, _I64(num_rows), rows, all_rows, elems, all_elems, _I64(num_values), key,
             error_buffer()))
    order = xp.argsort(vals, kind="stable")
    order = order[xp.argsort(key[order], kind="stable")]
    kept = xp.ascontiguousarray(vals[order])
    key = xp.ascontiguousarray(key[order])
    first = xp.empty(num_values, dtype=np.uint8)
    _launch(name_expression("unique_run_starts", t), grid_1d(num_values),
            (kept, key, _I64(num_values), _I64(num_rows), first, counts.view(np.uint64)))
    runs = xp.zeros(num_values + 1, dtype=np.int64)
    xp.cumsum(first, dtype=np.int64, out=runs[1:])
    out = xp.empty(int(runs[-1]), dtype=values.dtype)  # the result's size: read back
    _launch(name_expression("unique_write", t), grid_1d(num_values),
            (kept, runs, _I64(num_values), out))
    return out, counts


# ------------------------------------------------------------ jagged x dense
def jagged_dense_jagged_out(x: Any, dense: Any, dense_row_of: Any, offsets: Any, op: int,
                            out: Any) -> None:
    """``out = x op dense`` at each element's padded position (0: add, 1: mul, 2: read).

    ``x`` is None for a read (op 2), which does not look at it.
    """
    func = "jagged_dense_jagged_out"
    xp = array_module(func, x=x, dense=dense, dense_row_of=dense_row_of, offsets=offsets,
                      out=out)
    offs = _ids(xp, offsets)
    num_rows = offs.shape[0] - 1
    if num_rows <= 0 or out.size == 0:
        return
    index, identity = _index_or_empty(xp, dense_row_of)
    target = _into(xp, out)
    if op == 2:  # a copy: any dtype, as machine words; x (None) is not read
        result = _words(target)
        table = _words(xp.ascontiguousarray(dense, dtype=out.dtype))
        operand = result
    else:
        result = target
        table = xp.ascontiguousarray(dense, dtype=out.dtype)
        operand = xp.ascontiguousarray(x, dtype=out.dtype)
    name = name_expression(func, ctype(func, result.dtype))
    dense_rows, dense_len, width = table.shape
    _check_shape(func, "dense", table.shape[2:], result.shape[1:])
    _launch(name, grid_1d(result.size),
            (operand, table, _I64(dense_rows), _I64(dense_len), index, identity, offs,
             _I64(num_rows), _I32(op), _I64(width), _I64(result.shape[0]), result,
             error_buffer()))
    _back(out, target)


def jagged_dense_dense_out(x: Any, row_index: Any, offsets: Any, valid: Any, elem_valid: Any,
                           dense: Any, out: Any) -> None:
    """``out[P, L, D] = padded(x) + dense``; null elements count as padding."""
    func = "jagged_dense_dense_out"
    xp = array_module(func, x=x, row_index=row_index, offsets=offsets, valid=valid,
                      elem_valid=elem_valid, dense=dense, out=out)
    name = name_expression(func, ctype(func, out.dtype))
    _check_shape(func, "dense", dense.shape, out.shape)
    if out.size == 0:
        return
    offs = _ids(xp, offsets)
    index, identity = _index_or_empty(xp, row_index)
    mask, all_valid = _mask_or_empty(xp, valid)
    elems, all_elems = _mask_or_empty(xp, elem_valid)
    values = xp.ascontiguousarray(x, dtype=out.dtype)
    target = _into(xp, out)
    num_out, dense_len, width = out.shape
    _launch(name, grid_1d(out.size),
            (values, _I64(values.shape[0]), index, identity, offs, _I64(offs.shape[0] - 1), mask,
             all_valid, elems, all_elems, xp.ascontiguousarray(dense, dtype=out.dtype),
             _I64(num_out), _I64(dense_len), _I64(width), target, error_buffer()))
    _back(out, target)


# ------------------------------------------------------------------------- bmm
def jagged_dense_bmm(x: Any, offsets: Any, valid: Any, elem_valid: Any, dense: Any,
                     max_length: int, out: Any) -> None:
    """Per row ``[L_b, K] @ dense[b] ([K, M])`` added into ``out[N, M]``."""
    func = "jagged_dense_bmm"
    xp = array_module(func, x=x, offsets=offsets, valid=valid, elem_valid=elem_valid,
                      dense=dense, out=out)
    name = name_expression(func, ctype(func, out.dtype))
    offs = _ids(xp, offsets)
    num_rows = offs.shape[0] - 1
    dense_rows, depth, width = dense.shape
    _check_shape(func, "x", x.shape[1:], (depth,))
    _check_shape(func, "out", out.shape[1:], (width,))
    if num_rows <= 0 or out.size == 0:
        return
    mask, all_valid = _mask_or_empty(xp, valid)
    elems, all_elems = _mask_or_empty(xp, elem_valid)
    values = xp.ascontiguousarray(x, dtype=out.dtype)
    target = _into(xp, out)
    _launch(name, grid_1d(out.size),
            (values, _I64(values.shape[0]), offs, _I64(num_rows), mask, all_valid, elems,
             all_elems, xp.ascontiguousarray(dense, dtype=out.dtype), _I64(dense_rows),
             _I64(depth), _I64(width), _I64(max_length), _I64(out.shape[0]), target,
             error_buffer()))
    _back(out, target)


def jagged_jagged_bmm(x: Any, x_offsets: Any, x_valid: Any, y: Any, y_offsets: Any,
                      y_valid: Any, valid: Any, max_length: int, out: Any) -> None:
    """Per row ``x_b^T @ y_b`` added into ``out[B, M, N]``, skipping null elements."""
    func = "jagged_jagged_bmm"
    xp = array_module(func, x=x, x_offsets=x_offsets, x_valid=x_valid, y=y,
                      y_offsets=y_offsets, y_valid=y_valid, valid=valid, out=out)
    name = name_expression(func, ctype(func, out.dtype))
    xo, yo = _ids(xp, x_offsets), _ids(xp, y_offsets)
    num_rows = xo.shape[0] - 1
    _check_shape(func, "out", out.shape, (max(num_rows, 0), x.shape[1], y.shape[1]))
    _check_shape(func, "y_offsets", yo.shape, xo.shape)
    if num_rows <= 0 or out.size == 0:
        return
    xm, all_x = _mask_or_empty(xp, x_valid)
    ym, all_y = _mask_or_empty(xp, y_valid)
    mask, all_valid = _mask_or_empty(xp, valid)
    xs = xp.ascontiguousarray(x, dtype=out.dtype)
    ys = xp.ascontiguousarray(y, dtype=out.dtype)
    target = _into(xp, out)
    _launch(name, grid_1d(out.size),
            (xs, _I64(xs.shape[0]), xo, xm, all_x, ys, _I64(ys.shape[0]), yo, ym, all_y, mask,
             all_valid, _I64(num_rows), _I64(out.shape[1]), _I64(out.shape[2]),
             _I64(max_length), target, error_buffer()))
    _back(out, target)


# ------------------------------------------------------------------ device checks
def check_positions(positions: Any, code: int) -> None:
    """Record error ``code`` at the smallest non-negative entry of ``positions`` (int64)."""
    func = "check_positions"
    if code not in (ROWS_DIFFER, PADDED_SHORT):
        msg = f"{func}: unknown error code {code}"
        raise ValueError(msg)
    xp = array_module(func, positions=positions)
    if positions.shape[0] > 0:
        _launch(name_expression(func, "long long"), grid_1d(positions.shape[0]),
                (_ids(xp, positions), _I64(positions.shape[0]), _I32(code), error_buffer()))
