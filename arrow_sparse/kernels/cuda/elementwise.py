"""CUDA launchers of the jagged arithmetic kernels (``elementwise.cu``).

Each launcher takes the array module ``xp``, then the parameters and the semantics of
its CPU twin in :mod:`arrow_sparse.kernels.cpu.elementwise`: it picks the template
instantiation from the dtypes, sizes the grid and packs the arguments with explicit C
types. Arrays are device arrays (CuPy), or numpy arrays when the emulator stands in
for the GPU in tests. Offsets and row indices of another integer type are widened to
int64, masks are read as bytes, and operands are converted to the dtype of ``out`` (the
CPU kernels get them that way already). A non-contiguous ``out`` is updated through a
contiguous copy of it (not an empty temporary: the kernels leave positions no row
addresses alone, and the bmm kernels add into ``out``).

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

:data:`DEVICE_ONLY` launchers have no CPU twin: ``check_positions`` records
the violations the public operations find with array functions on device inputs
(:data:`ROWS_DIFFER`, :data:`PADDED_SHORT`), where the host raises them with numpy.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from . import error_buffer
from ._launch import (
    FLOAT_CTYPES,
    VALUE_CTYPES,
    WARP,
    as_index,
    as_mask,
    as_row_index,
    back,
    check_shape,
    ctype,
    into,
    launch,
    name_expression,
    name_expressions,
)

__all__ = ["cumsum", "gather_ranges", "jagged_dense_bmm", "jagged_dense_dense_out",
           "jagged_dense_jagged_out", "jagged_jagged_bmm", "ranges_to_indices", "repeat_rows",
           "softmax", "unique_rows"]

#: Device-only launchers (no CPU twin), see the module docstring.
DEVICE_ONLY = ("check_positions",)
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


def _words(a: Any) -> Any:
    """View a C-contiguous array as unsigned machine words along its last axis.

    1-, 2-, 4- and 8-byte dtypes keep their shape; others are seen as bytes.
    """
    size = a.dtype.itemsize
    return a.view(np.dtype(f"u{size}") if size in (1, 2, 4, 8) else np.dtype(np.uint8))


# ----------------------------------------------------------------- per-row scans
def _scan_inputs(xp: ModuleType, values: Any, offsets: Any, row_valid: Any, elem_valid: Any,
                 out: Any) -> tuple[tuple[Any, ...], int, int, int] | None:
    """Convert the arguments both per-row scans pass first; None if there is nothing to scan.

    Returns ``((values in out's dtype, int64 offsets, row mask, all rows valid, element
    mask, all elements valid), rows, width, values the rows may address)``.
    """
    offs = as_index(xp, offsets, int64=True)
    num_rows, width = offs.shape[0] - 1, out.shape[1]
    if num_rows <= 0 or width == 0:
        return None
    x = xp.ascontiguousarray(values, dtype=out.dtype)
    head = (x, offs, *as_mask(xp, row_valid, all_valid=True),
            *as_mask(xp, elem_valid, all_valid=True))
    return head, num_rows, width, min(x.shape[0], out.shape[0])


def softmax(xp: ModuleType, values: Any, offsets: Any, row_valid: Any, elem_valid: Any,
            max_length: int, out: Any) -> None:
    """Per-row softmax of float ``values[N, D]`` into ``out`` (see the CPU kernel)."""
    t = ctype("softmax", out.dtype, FLOAT_CTYPES)
    scan = _scan_inputs(xp, values, offsets, row_valid, elem_valid, out)
    if scan is None:
        return
    head, num_rows, width, count = scan
    target = into(xp, out)
    args = (*head, _I64(num_rows), _I64(count), _I64(max_length))
    if width == 1:
        launch("elementwise", name_expression("softmax_rows", t), num_rows,
               (*args, target, error_buffer()), lanes=WARP)
    else:
        launch("elementwise", name_expression("softmax_columns", t), num_rows * width,
               (*args, _I64(width), target, error_buffer()))
    back(out, target)


def cumsum(xp: ModuleType, values: Any, offsets: Any, row_valid: Any, elem_valid: Any,
           exclusive: bool, out: Any) -> None:
    """Per-row running sum of ``values[N, D]`` into ``out`` (its dtype accumulates)."""
    t = ctype("cumsum", out.dtype, _SCAN)
    scan = _scan_inputs(xp, values, offsets, row_valid, elem_valid, out)
    if scan is None:
        return
    head, num_rows, width, count = scan
    target = into(xp, out)
    launch("elementwise", name_expression("cumsum", t), num_rows * width,
           (*head, _I32(bool(exclusive)), _I64(num_rows), _I64(count), _I64(width), target,
            error_buffer()))
    back(out, target)


# ------------------------------------------------------------------ row gathers
def _copy_rows(func: str, xp: ModuleType, src: Any, index: Any, offsets: Any,
               extra: tuple[Any, ...], out: Any) -> None:
    """Launch copy kernel ``func`` from ``src`` rows into ``out``, both seen as words."""
    num = offsets.shape[0] - 1
    if num <= 0 or out.size == 0:
        return
    target = into(xp, out)
    words = _words(target)
    source = _words(xp.ascontiguousarray(src, dtype=out.dtype))
    name = name_expression(func, ctype(func, words.dtype, _WORDS))
    check_shape(func, "src", source.shape[1:], words.shape[1:])
    rows, width = words.shape
    launch("elementwise", name, rows * width,
           (source, _I64(source.shape[0]), *index, as_index(xp, offsets, int64=True),
            _I64(num), *extra, _I64(width), _I64(rows), words, error_buffer()))
    back(out, target)


def gather_ranges(xp: ModuleType, src: Any, starts: Any, out_offsets: Any, out: Any) -> None:
    """Copy ``src[starts[i]:...]`` (2-D) to row ``i`` of ``out`` at ``out_offsets``."""
    func = "gather_ranges"
    _copy_rows(func, xp, src, (as_index(xp, starts, int64=True),), out_offsets, (), out)


def ranges_to_indices(xp: ModuleType, starts: Any, out_offsets: Any, out: Any = None) -> Any:
    """List the element ids ``starts[i] + j`` of every range, concatenated (int64).

    Without ``out`` its size ``out_offsets[-1]`` is read back from the device.
    """
    func = "ranges_to_indices"
    offs = as_index(xp, out_offsets, int64=True)
    if out is None:
        out = xp.empty(int(offs[-1]), dtype=np.int64)  # the output size: read back
    num, total = offs.shape[0] - 1, out.shape[0]
    if num > 0 and total > 0:
        target = into(xp, out)
        launch("elementwise", name_expression(func, "long long"), total,
               (as_index(xp, starts, int64=True), offs, _I64(num), _I64(total), target))
        back(out, target)
    return out


def repeat_rows(xp: ModuleType, src: Any, offsets: Any, base: int, out: Any) -> None:
    """``out[k - base] = src[r]`` for every position ``k`` of row ``r`` (2-D)."""
    func = "repeat_rows"
    _copy_rows(func, xp, src, (), offsets, (_I64(base),), out)


# ------------------------------------------------------------------------ unique
def unique_rows(xp: ModuleType, values: Any, offsets: Any, row_valid: Any, elem_valid: Any
                ) -> tuple[Any, Any]:
    """Sorted distinct non-null values of each row of 1-D ``values``: (values, lengths).

    One synchronisation: the number of distinct values (the result's size).
    """
    func = "unique_rows"
    t = ctype(func, values.dtype)
    offs = as_index(xp, offsets, int64=True)
    num_rows, num_values = max(offs.shape[0] - 1, 0), values.shape[0]
    counts = xp.zeros(num_rows, dtype=np.int64)
    if num_rows == 0 or num_values == 0:
        return xp.empty(0, dtype=values.dtype), counts
    vals = xp.ascontiguousarray(values)
    rows, all_rows = as_mask(xp, row_valid, all_valid=True)
    elems, all_elems = as_mask(xp, elem_valid, all_valid=True)
    key = xp.empty(num_values, dtype=np.int64)  # the row, num_rows for hidden elements
    launch("elementwise", name_expression("unique_element_rows", "long long"),
           max(num_values, num_rows),
           (offs, _I64(num_rows), rows, all_rows, elems, all_elems, _I64(num_values), key,
            error_buffer()))
    order = xp.argsort(vals, kind="stable")
    order = order[xp.argsort(key[order], kind="stable")]
    kept = xp.ascontiguousarray(vals[order])
    key = xp.ascontiguousarray(key[order])
    first = xp.empty(num_values, dtype=np.uint8)
    launch("elementwise", name_expression("unique_run_starts", t), num_values,
           (kept, key, _I64(num_values), _I64(num_rows), first, counts.view(np.uint64)))
    runs = xp.zeros(num_values + 1, dtype=np.int64)
    xp.cumsum(first, dtype=np.int64, out=runs[1:])
    out = xp.empty(int(runs[-1]), dtype=values.dtype)  # the result's size: read back
    launch("elementwise", name_expression("unique_write", t), num_values,
           (kept, runs, _I64(num_values), out))
    return out, counts


# ------------------------------------------------------------ jagged x dense
def jagged_dense_jagged_out(xp: ModuleType, x: Any, dense: Any, dense_row_of: Any, offsets: Any,
                            op: int, out: Any) -> None:
    """``out = x op dense`` at each element's padded position (0: add, 1: mul, 2: read).

    ``x`` is None for a read (op 2), which does not look at it.
    """
    func = "jagged_dense_jagged_out"
    offs = as_index(xp, offsets, int64=True)
    num_rows = offs.shape[0] - 1
    if num_rows <= 0 or out.size == 0:
        return
    index, identity = as_row_index(xp, dense_row_of)
    target = into(xp, out)
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
    check_shape(func, "dense", table.shape[2:], result.shape[1:])
    launch("elementwise", name, result.size,
           (operand, table, _I64(dense_rows), _I64(dense_len), index, identity, offs,
            _I64(num_rows), _I32(op), _I64(width), _I64(result.shape[0]), result,
            error_buffer()))
    back(out, target)


def jagged_dense_dense_out(xp: ModuleType, x: Any, row_index: Any, offsets: Any, valid: Any,
                           elem_valid: Any, dense: Any, out: Any) -> None:
    """``out[P, L, D] = padded(x) + dense``; null elements count as padding."""
    func = "jagged_dense_dense_out"
    name = name_expression(func, ctype(func, out.dtype))
    check_shape(func, "dense", dense.shape, out.shape)
    if out.size == 0:
        return
    offs = as_index(xp, offsets, int64=True)
    index, identity = as_row_index(xp, row_index)
    mask, all_valid = as_mask(xp, valid, all_valid=True)
    elems, all_elems = as_mask(xp, elem_valid, all_valid=True)
    values = xp.ascontiguousarray(x, dtype=out.dtype)
    target = into(xp, out)
    num_out, dense_len, width = out.shape
    launch("elementwise", name, out.size,
           (values, _I64(values.shape[0]), index, identity, offs, _I64(offs.shape[0] - 1), mask,
            all_valid, elems, all_elems, xp.ascontiguousarray(dense, dtype=out.dtype),
            _I64(num_out), _I64(dense_len), _I64(width), target, error_buffer()))
    back(out, target)


# ------------------------------------------------------------------------- bmm
def jagged_dense_bmm(xp: ModuleType, x: Any, offsets: Any, valid: Any, elem_valid: Any, dense: Any,
                     max_length: int, out: Any) -> None:
    """Per row ``[L_b, K] @ dense[b] ([K, M])`` added into ``out[N, M]``."""
    func = "jagged_dense_bmm"
    name = name_expression(func, ctype(func, out.dtype))
    offs = as_index(xp, offsets, int64=True)
    num_rows = offs.shape[0] - 1
    dense_rows, depth, width = dense.shape
    check_shape(func, "x", x.shape[1:], (depth,))
    check_shape(func, "out", out.shape[1:], (width,))
    if num_rows <= 0 or out.size == 0:
        return
    mask, all_valid = as_mask(xp, valid, all_valid=True)
    elems, all_elems = as_mask(xp, elem_valid, all_valid=True)
    values = xp.ascontiguousarray(x, dtype=out.dtype)
    target = into(xp, out)
    launch("elementwise", name, out.size,
           (values, _I64(values.shape[0]), offs, _I64(num_rows), mask, all_valid, elems,
            all_elems, xp.ascontiguousarray(dense, dtype=out.dtype), _I64(dense_rows),
            _I64(depth), _I64(width), _I64(max_length), _I64(out.shape[0]), target,
            error_buffer()))
    back(out, target)


def jagged_jagged_bmm(xp: ModuleType, x: Any, x_offsets: Any, x_valid: Any, y: Any, y_offsets: Any,
                      y_valid: Any, valid: Any, max_length: int, out: Any) -> None:
    """Per row ``x_b^T @ y_b`` added into ``out[B, M, N]``, skipping null elements."""
    func = "jagged_jagged_bmm"
    name = name_expression(func, ctype(func, out.dtype))
    xo, yo = as_index(xp, x_offsets, int64=True), as_index(xp, y_offsets, int64=True)
    num_rows = xo.shape[0] - 1
    check_shape(func, "out", out.shape, (max(num_rows, 0), x.shape[1], y.shape[1]))
    check_shape(func, "y_offsets", yo.shape, xo.shape)
    if num_rows <= 0 or out.size == 0:
        return
    xm, all_x = as_mask(xp, x_valid, all_valid=True)
    ym, all_y = as_mask(xp, y_valid, all_valid=True)
    mask, all_valid = as_mask(xp, valid, all_valid=True)
    xs = xp.ascontiguousarray(x, dtype=out.dtype)
    ys = xp.ascontiguousarray(y, dtype=out.dtype)
    target = into(xp, out)
    launch("elementwise", name, out.size,
           (xs, _I64(xs.shape[0]), xo, xm, all_x, ys, _I64(ys.shape[0]), yo, ym, all_y, mask,
            all_valid, _I64(num_rows), _I64(out.shape[1]), _I64(out.shape[2]),
            _I64(max_length), target, error_buffer()))
    back(out, target)


# ------------------------------------------------------------------ device checks
def check_positions(xp: ModuleType, positions: Any, code: int) -> None:
    """Record error ``code`` at the smallest non-negative entry of ``positions`` (int64)."""
    func = "check_positions"
    if code not in (ROWS_DIFFER, PADDED_SHORT):
        msg = f"{func}: unknown error code {code}"
        raise ValueError(msg)
    if positions.shape[0] > 0:
        launch("elementwise", name_expression(func, "long long"), positions.shape[0],
               (as_index(xp, positions, int64=True), _I64(positions.shape[0]), _I32(code),
                error_buffer()))
