"""CUDA launchers of the embedding kernels (``embedding.cu``).

Each launcher has the signature and the semantics of its CPU twin in
:mod:`arrow_sparse.kernels.cpu.embedding`: it picks the template instantiation from the
dtypes, sizes the grid and packs the arguments with explicit C types. Arrays are device
arrays (CuPy), or numpy arrays when the emulator stands in for the GPU in tests.

* ``lookup_rows``: any of the ten table dtypes, written into an ``out`` of the same
  dtype (a non-contiguous ``out`` through a contiguous temporary).
* ``sort_ids``: a stable argsort of the ids by the array module (CuPy's is a radix
  sort), a kernel flagging the first position of each run of equal ids, and
  ``flatnonzero`` of the flags. Its output sizes depend on the data: it synchronises
  the device once, to learn the number of distinct ids.
* ``coalesce_sorted``: float32/float64 gradients summed into an ``out`` of their dtype;
  an integer ``scale`` is converted to Numba's type of ``scale * grad`` first.
* ``weights_grad``: any table dtype, float32/float64 gradients and outputs.
* the optimizer steps ``sgd_rows``, ``adagrad_rows``, ``rowwise_adagrad_rows`` and
  ``ftrl_rows``: float32/float64 tables and states (``S``); ``values`` are converted to
  the table's dtype, and a non-contiguous table or state is updated through a
  contiguous temporary.

:data:`DEVICE_ONLY` launchers have no CPU twin: ``bag_ids`` reads the bags of device
inputs (which ids are read, their bags, weights and per-bag counts) where the host
compacts them with numpy (:mod:`arrow_sparse._embedding_common`).

Ids of an integer type other than int32/int64 are widened to int64; ``rows``,
``order``, ``bag``, ``starts`` and ``offsets`` are passed as int64. The kernels re-check
the indices and orders they rely on into the device error word; the public operation
raises it with :func:`arrow_sparse.kernels.cuda.check_errors` (after ``sort_ids``, whose
synchronisation makes a waiting check free).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._backend import array_module
from ...errors import ArrowSparseValueError
from . import error_buffer, load_module
from ._launch import (
    DTYPE_TO_CTYPE,
    FLOAT_CTYPES,
    INDEX_CTYPES,
    ctype,
    grid_1d,
    grid_groups,
    name_expression,
    name_expressions,
)

__all__ = ["adagrad_rows", "coalesce_sorted", "ftrl_rows", "lookup_rows",
           "rowwise_adagrad_rows", "sgd_rows", "sort_ids", "weights_grad"]

#: Device-only launchers (no CPU twin), see the module docstring.
DEVICE_ONLY = ("bag_ids",)

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
#: Table dtypes whose product with a float32 gradient Numba types as float32 (with a
#: float64 gradient, and for every other dtype, the product is float64). Not C++'s rule
#: (int * float is float there), nor numpy's (uint16 * float32 is float32 there).
_FLOAT32_PRODUCTS = frozenset(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.float32))


def product_dtype(x: Any, grad: Any) -> np.dtype:
    """Numba's dtype of ``x * grad`` for an element of dtype ``x`` and a float ``grad``."""
    if np.dtype(grad) == np.float32 and np.dtype(x) in _FLOAT32_PRODUCTS:
        return np.dtype(np.float32)
    return np.dtype(np.float64)


NAME_EXPRESSIONS: list[str] = [
    *name_expressions("lookup_rows", tuple(DTYPE_TO_CTYPE.values()), INDEX_CTYPES),
    *name_expressions("run_heads", INDEX_CTYPES),
    *name_expressions("bag_ids", INDEX_CTYPES),
    *name_expressions("coalesce_sorted", FLOAT_CTYPES, FLOAT_CTYPES),
    *(name_expression("weights_grad", t, DTYPE_TO_CTYPE[g],
                      DTYPE_TO_CTYPE[product_dtype(dtype, g)], out, i)
      for dtype, t in DTYPE_TO_CTYPE.items() for g in _FLOATS for out in FLOAT_CTYPES
      for i in INDEX_CTYPES),
    *name_expressions("sgd_rows", FLOAT_CTYPES),
    *name_expressions("adagrad_rows", FLOAT_CTYPES, FLOAT_CTYPES),
    *name_expressions("rowwise_adagrad_rows", FLOAT_CTYPES, FLOAT_CTYPES),
    *name_expressions("ftrl_rows", FLOAT_CTYPES),
]

_I32 = np.int32
_I64 = np.int64
_F64 = np.float64


def _name(func: str, *dtypes: Any) -> str:
    return name_expression(func, *(ctype(func, d, FLOAT_CTYPES) for d in dtypes))


def _rows(xp: Any, rows: Any) -> Any:
    return xp.ascontiguousarray(rows, dtype=np.int64)


def _ids(xp: Any, ids: Any) -> Any:
    """int32 / int64 ids as they are, any other integer type widened to int64."""
    if np.dtype(ids.dtype) in (np.dtype(np.int32), np.dtype(np.int64)):
        return xp.ascontiguousarray(ids)
    return xp.ascontiguousarray(ids, dtype=np.int64)


def _same_dtype(func: str, what: str, x: Any, out: Any) -> None:
    if out.dtype != x.dtype:
        msg = f"{func}: no cuda kernel for a {x.dtype} {what} into a {out.dtype} out"
        raise NotImplementedError(msg)


def _check_shape(func: str, arg: str, x: Any, shape: tuple[int, ...]) -> None:
    """Check the shape the kernel writes ``x`` by (another would be written out of bounds)."""
    if tuple(x.shape) != shape:
        msg = f"{func}: {arg} must have shape {shape}, got {tuple(x.shape)}"
        raise ArrowSparseValueError(msg)


def _into(xp: Any, x: Any) -> Any:
    """``x`` itself when C-contiguous, else a contiguous copy (written back by :func:`_back`)."""
    return x if x.flags.c_contiguous else xp.ascontiguousarray(x)


def _back(x: Any, target: Any) -> None:
    if target is not x:
        x[...] = target


def _launch(name: str, grid_block: tuple[tuple[int], tuple[int]], args: tuple[Any, ...]
            ) -> None:
    grid, block = grid_block
    load_module("embedding").get_function(name)(grid, block, args)


# ------------------------------------------------------------------ lookup and backward
def lookup_rows(table: Any, ids: Any, out: Any, col: int = 0) -> None:
    """``out[i, col:col + dim] = table[ids[i]]`` (see the CPU kernel)."""
    func = "lookup_rows"
    xp = array_module(func, table, ids, out)
    _same_dtype(func, "table", table, out)
    idx = _ids(xp, ids)
    name = name_expression(func, ctype(func, table.dtype), ctype(func, idx.dtype, INDEX_CTYPES))
    num, dim = idx.shape[0], table.shape[1]
    if out.ndim != 2 or out.shape[0] != num or not 0 <= col <= out.shape[1] - dim:
        msg = (f"{func}: out of shape {tuple(out.shape)} has no columns {col}:{col + dim} "
               f"for {num} rows")
        raise ArrowSparseValueError(msg)
    if num == 0 or dim == 0:
        return
    target, width, at = out, out.shape[1], col
    if not out.flags.c_contiguous:
        target, width, at = xp.empty((num, dim), dtype=out.dtype), dim, 0
    _launch(name, grid_groups(num),
            (xp.ascontiguousarray(table), idx, target, _I64(num), _I64(dim), _I64(width),
             _I64(at), _I64(table.shape[0]), error_buffer()))
    if target is not out:
        out[:, col:col + dim] = target


def sort_ids(ids: Any) -> tuple[Any, Any, Any]:
    """Stable sort of ids: ``(order, distinct ids, run starts)``, all int64 (see the CPU kernel).

    Synchronises the device once: the number of distinct ids sizes the outputs.
    """
    func = "sort_ids"
    xp = array_module(func, ids)
    idx = _ids(xp, ids)
    name = name_expression("run_heads", ctype(func, idx.dtype, INDEX_CTYPES))
    num = idx.shape[0]
    order = xp.argsort(idx, kind="stable").astype(np.int64, copy=False)
    if num == 0:
        return order, xp.empty(0, dtype=np.int64), xp.zeros(1, dtype=np.int64)
    head = xp.empty(num, dtype=np.uint8)
    _launch(name, grid_1d(num), (idx, order, head, _I64(num), error_buffer()))
    first = xp.flatnonzero(head).astype(np.int64, copy=False)
    rows = idx[order[first]].astype(np.int64, copy=False)
    starts = xp.concatenate((first, xp.full(1, num, dtype=np.int64)))
    return order, rows, starts


def coalesce_sorted(grad_out: Any, order: Any, bag: Any, scale: Any, starts: Any,
                    out: Any) -> None:
    """Sum ``scale[p] * grad_out[bag[p]]`` over each run of ``order`` (see the CPU kernel)."""
    func = "coalesce_sorted"
    xp = array_module(func, grad_out, order, bag, scale, starts, out)
    _same_dtype(func, "grad_out", grad_out, out)
    if scale.shape[0] == 0:
        scale = xp.empty(0, dtype=np.float64)
    elif scale.dtype.kind in "iu":
        scale = scale.astype(product_dtype(scale.dtype, grad_out.dtype))
    name = _name(func, grad_out.dtype, scale.dtype)
    num_runs, dim = starts.shape[0] - 1, grad_out.shape[1]
    _check_shape(func, "out", out, (max(num_runs, 0), dim))
    if num_runs <= 0 or dim == 0:
        return
    order, bag = _rows(xp, order), _rows(xp, bag)
    target = _into(xp, out)
    _launch(name, grid_groups(num_runs),
            (xp.ascontiguousarray(grad_out), order, bag, xp.ascontiguousarray(scale),
             _rows(xp, starts), target, _I64(num_runs), _I64(dim), _I64(order.shape[0]),
             _I64(bag.shape[0]), _I64(scale.shape[0]), _I64(grad_out.shape[0]),
             error_buffer()))
    _back(out, target)


def weights_grad(table: Any, ids: Any, offsets: Any, grad_out: Any, mean: bool,
                 out: Any) -> None:
    """``out[j] = <grad_out[bag of j], table[ids[j]]>`` (see the CPU kernel)."""
    func = "weights_grad"
    xp = array_module(func, table, ids, offsets, grad_out, out)
    idx = _ids(xp, ids)
    name = name_expression(func, ctype(func, table.dtype),
                           ctype(func, grad_out.dtype, FLOAT_CTYPES),
                           DTYPE_TO_CTYPE[product_dtype(table.dtype, grad_out.dtype)],
                           ctype(func, out.dtype, FLOAT_CTYPES),
                           ctype(func, idx.dtype, INDEX_CTYPES))
    num, num_bags, dim = idx.shape[0], offsets.shape[0] - 1, table.shape[1]
    _check_shape(func, "out", out, (num,))
    if grad_out.ndim != 2 or grad_out.shape[1] != dim:
        msg = (f"{func}: grad_out must have the table's {dim} columns, got shape "
               f"{tuple(grad_out.shape)}")
        raise ArrowSparseValueError(msg)
    if num == 0 or num_bags <= 0:
        return
    target = _into(xp, out)
    _launch(name, grid_groups(num),
            (xp.ascontiguousarray(table), idx, _rows(xp, offsets),
             xp.ascontiguousarray(grad_out), _I32(bool(mean)), target, _I64(num),
             _I64(num_bags), _I64(dim), _I64(table.shape[0]), _I64(grad_out.shape[0]),
             error_buffer()))
    _back(out, target)


def _mask(xp: Any, mask: Any, absent: Any) -> tuple[Any, Any]:
    """``(uint8 mask, present flag)``: an absent mask (``absent``, empty) means no nulls."""
    if mask is None:
        return absent, _I32(0)
    return xp.ascontiguousarray(mask).view(np.uint8), _I32(1)


def bag_ids(ids: Any, offsets: Any, valid: Any, vmask: Any, woffsets: Any, wvalid: Any,
            num_weights: int, bound: int) -> tuple[Any, Any, Any, Any]:
    """Read the bags of device ids: ``(bag, key, wpos, count)``, int64 (see ``embedding.cu``).

    Bag ``b`` holds ``ids[offsets[b]:offsets[b + 1]]``; ``valid`` (bags) and ``vmask``
    (ids) are bool masks or None; ``woffsets`` (None: weights, if any, are aligned with
    the ids) and ``wvalid`` describe list weights of ``num_weights`` values; ids must lie
    in ``[0, bound)``. Device-only (no CPU twin); records its checks in the error word.
    """
    func = "bag_ids"
    xp = array_module(func, ids, offsets, valid, vmask, woffsets, wvalid)
    idx = _ids(xp, ids)
    name = name_expression(func, ctype(func, idx.dtype, INDEX_CTYPES))
    num, num_bags = idx.shape[0], offsets.shape[0] - 1
    if num_bags < 0:
        msg = f"{func}: offsets must have at least one element"
        raise ArrowSparseValueError(msg)
    for arg, mask, size in (("valid", valid, num_bags), ("vmask", vmask, num),
                            ("wvalid", wvalid, num_weights)):
        if mask is not None:
            _check_shape(func, arg, mask, (size,))
    if woffsets is not None:
        _check_shape(func, "woffsets", woffsets, (num_bags + 1,))
    out = xp.empty(3 * num + num_bags, dtype=np.int64)  # one allocation, four results
    bag, key, wpos, count = (out[:num], out[num:2 * num], out[2 * num:3 * num],
                             out[3 * num:])
    if max(num, num_bags) == 0:
        return bag, key, wpos, count
    absent = xp.empty(0, dtype=np.uint8)
    va, vm, wv = (_mask(xp, m, absent) for m in (valid, vmask, wvalid))
    wo = out[:0] if woffsets is None else _rows(xp, woffsets)
    _launch(name, grid_1d(max(num, num_bags)),
            (idx, _rows(xp, offsets), va[0], _I32(1 - va[1]), vm[0], vm[1], wo,
             _I32(woffsets is not None), wv[0], wv[1], _I64(num), _I64(num_bags),
             _I64(num_weights), _I64(bound), bag, key, wpos, count, error_buffer()))
    return bag, key, wpos, count


# --------------------------------------------------------------------------- optimizers
def _elementwise(name: str, xp: Any, table: Any, states: tuple[Any, ...],
                 rows: Any, values: Any, scalars: tuple[Any, ...]) -> None:
    """Launch a one-thread-per-gradient-element step over ``table`` and ``states``."""
    num, dim = values.shape[0], table.shape[1]
    if num * dim == 0:
        return
    targets = [_into(xp, a) for a in (table, *states)]
    _launch(name, grid_1d(num * dim),
            (*targets, _rows(xp, rows), xp.ascontiguousarray(values, dtype=table.dtype),
             *scalars, _I64(num), _I64(dim), _I64(table.shape[0]), error_buffer()))
    for a, target in zip((table, *states), targets, strict=True):
        _back(a, target)


def sgd_rows(table: Any, rows: Any, values: Any, lr: float) -> None:
    """In place SGD on the rows of a coalesced gradient (see the CPU kernel)."""
    func = "sgd_rows"
    xp = array_module(func, table, rows, values)
    _elementwise(_name(func, table.dtype), xp, table, (), rows, values, (_F64(lr),))


def adagrad_rows(table: Any, state: Any, rows: Any, values: Any, lr: float,
                 eps: float) -> None:
    """In place Adagrad on the rows of a coalesced gradient (see the CPU kernel)."""
    func = "adagrad_rows"
    xp = array_module(func, table, state, rows, values)
    _elementwise(_name(func, table.dtype, state.dtype), xp, table, (state,), rows,
                 values, (_F64(lr), _F64(eps)))


def rowwise_adagrad_rows(table: Any, state: Any, rows: Any, values: Any, lr: float,
                         eps: float) -> None:
    """In place row-wise Adagrad on the rows of a coalesced gradient (see the CPU kernel)."""
    func = "rowwise_adagrad_rows"
    xp = array_module(func, table, state, rows, values)
    name = _name(func, table.dtype, state.dtype)
    num, dim = values.shape[0], table.shape[1]
    if num == 0:
        return
    target, state_target = _into(xp, table), _into(xp, state)
    _launch(name, grid_groups(num),
            (target, state_target, _rows(xp, rows),
             xp.ascontiguousarray(values, dtype=table.dtype), _F64(lr), _F64(eps), _I64(num),
             _I64(dim), _I64(table.shape[0]), error_buffer()))
    _back(table, target)
    _back(state, state_target)


def ftrl_rows(table: Any, z: Any, n: Any, rows: Any, values: Any, alpha: float, beta: float,
              l1: float, l2: float) -> None:
    """In place Caffe2 ``SparseFtrl`` on the rows of a coalesced gradient (see the CPU kernel)."""
    func = "ftrl_rows"
    xp = array_module(func, table, z, n, rows, values)
    if z.dtype != table.dtype or n.dtype != table.dtype:
        msg = (f"{func}: no cuda kernel for a {table.dtype} table with {z.dtype} z "
               f"and {n.dtype} n")
        raise NotImplementedError(msg)
    _elementwise(_name(func, table.dtype), xp, table, (z, n), rows, values,
                 (_F64(alpha), _F64(beta), _F64(l1), _F64(l2)))
