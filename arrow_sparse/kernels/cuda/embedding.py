"""CUDA launchers of the embedding kernels (``embedding.cu``).

Each launcher takes the array module ``xp``, then the parameters and the semantics of
its CPU twin in :mod:`arrow_sparse.kernels.cpu.embedding`: it picks the template
instantiation from the dtypes, sizes the grid and packs the arguments with explicit C
types. Arrays are device arrays (CuPy), or numpy arrays when the emulator stands in
for the GPU in tests.

* ``lookup_rows``: any of the ten table dtypes, written into an ``out`` of the same
  dtype (a non-contiguous ``out`` through a contiguous temporary).
* ``bag_max``: any of the ten table dtypes, max-pooled into an ``out`` of the same
  dtype, the argmax ids into an int64 ``argmax``.
* ``coalesce_max``: float32/float64 gradients into an ``out`` of their dtype, uint64
  ``credits`` (added into: the launcher zeroes nothing, the caller passes zeros).
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

from types import ModuleType
from typing import Any

import numpy as np

from ...errors import ArrowSparseValueError
from . import _launch, error_buffer, read_scalars
from ._launch import (
    DTYPE_TO_CTYPE,
    FLOAT_CTYPES,
    INDEX_CTYPES,
    WARP,
    as_index,
    as_mask,
    back,
    check_shape,
    ctype,
    into,
    launch,
    name_expression,
    name_expressions,
    nothing,
)

__all__ = ["adagrad_rows", "bag_max", "coalesce_max", "coalesce_sorted", "ftrl_rows",
           "lookup_rows",
           "rowwise_adagrad_rows", "sgd_rows", "sort_ids", "weights_grad"]

#: Device-only launchers (no CPU twin), see the module docstring.
DEVICE_ONLY = ("bag_ids", "train_rows")

#: The optimizers of the fused ``train_rows`` (``AspTrainOptimizer`` in ``embedding.cu``).
TRAIN_OPTIMIZERS = {"sgd": 0, "adagrad": 1, "rowwise_adagrad": 2}

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
    *name_expressions("compact_runs", INDEX_CTYPES),
    *name_expressions("bag_ids", INDEX_CTYPES),
    *name_expressions("bag_max", tuple(DTYPE_TO_CTYPE.values()), INDEX_CTYPES),
    *name_expressions("coalesce_max", FLOAT_CTYPES),
    *name_expressions("coalesce_sorted", FLOAT_CTYPES, FLOAT_CTYPES),
    *name_expressions("coalesce_pieces", FLOAT_CTYPES, FLOAT_CTYPES),
    *name_expressions("train_pieces", FLOAT_CTYPES, FLOAT_CTYPES),
    *name_expressions("train_rows", FLOAT_CTYPES, FLOAT_CTYPES, FLOAT_CTYPES, FLOAT_CTYPES),
    *(name_expression("weights_grad", t, DTYPE_TO_CTYPE[g],
                      DTYPE_TO_CTYPE[product_dtype(dtype, g)], out, i)
      for dtype, t in DTYPE_TO_CTYPE.items() for g in _FLOATS for out in FLOAT_CTYPES
      for i in INDEX_CTYPES),
    *name_expressions("sgd_rows", FLOAT_CTYPES),
    *name_expressions("adagrad_rows", FLOAT_CTYPES, FLOAT_CTYPES),
    *name_expressions("rowwise_adagrad_rows", FLOAT_CTYPES, FLOAT_CTYPES),
    *name_expressions("ftrl_rows", FLOAT_CTYPES),
]

_U8 = np.dtype(np.uint8)
_I32 = np.int32
_I64 = np.int64
_F64 = np.float64


_NAME_MEMO: dict[tuple[str, tuple[Any, ...]], str] = {}


def _name(func: str, *dtypes: Any) -> str:
    """``func<float types of dtypes>``, memoised (NotImplementedError for other dtypes)."""
    name = _NAME_MEMO.get((func, dtypes))
    if name is None:
        name = name_expression(func, *(ctype(func, d, FLOAT_CTYPES) for d in dtypes))
        _NAME_MEMO[(func, dtypes)] = name
    return name


def _same_dtype(func: str, what: str, x: Any, out: Any) -> None:
    if out.dtype != x.dtype:
        msg = f"{func}: no cuda kernel for a {x.dtype} {what} into a {out.dtype} out"
        raise NotImplementedError(msg)


# ------------------------------------------------------------------ lookup and backward
def lookup_rows(xp: ModuleType, table: Any, ids: Any, out: Any, col: int = 0) -> None:
    """``out[i, col:col + dim] = table[ids[i]]`` (see the CPU kernel)."""
    func = "lookup_rows"
    _same_dtype(func, "table", table, out)
    idx = as_index(xp, ids)
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
    launch("embedding", name, num,
           (xp.ascontiguousarray(table), idx, target, _I64(num), _I64(dim), _I64(width),
            _I64(at), _I64(table.shape[0]), error_buffer()), lanes=WARP)
    if target is not out:
        out[:, col:col + dim] = target


def bag_max(xp: ModuleType, table: Any, ids: Any, offsets: Any, read: Any, out: Any,
            argmax: Any) -> None:
    """Max-pool bags into ``out`` and their argmax ids into ``argmax`` (see the CPU kernel)."""
    func = "bag_max"
    _same_dtype(func, "table", table, out)
    idx = as_index(xp, ids)
    name = name_expression(func, ctype(func, table.dtype), ctype(func, idx.dtype, INDEX_CTYPES))
    num_bags, dim = offsets.shape[0] - 1, table.shape[1]
    check_shape(func, "out", out.shape, (max(num_bags, 0), dim))
    check_shape(func, "argmax", argmax.shape, (max(num_bags, 0), dim))
    if num_bags <= 0 or dim == 0:
        return
    mask, masked = as_mask(xp, read)
    target, arg = into(xp, out, copy=False), into(xp, argmax, np.int64, copy=False)
    launch("embedding", name, num_bags,
           (xp.ascontiguousarray(table), idx, as_index(xp, offsets, int64=True), mask,
            masked, target, arg, _I64(num_bags), _I64(dim), _I64(idx.shape[0]),
            _I64(table.shape[0]), error_buffer()), lanes=WARP)
    back(out, target)
    back(argmax, arg)


def coalesce_max(xp: ModuleType, grad_out: Any, order: Any, bag: Any, rows: Any, argmax: Any,
                 starts: Any, out: Any, credits: Any) -> None:
    """Sum the gradient of max-pooled bags per run of equal ids (see the CPU kernel)."""
    func = "coalesce_max"
    _same_dtype(func, "grad_out", grad_out, out)
    name = _name(func, grad_out.dtype)
    num_runs, dim = starts.shape[0] - 1, grad_out.shape[1]
    check_shape(func, "out", out.shape, (max(num_runs, 0), dim))
    check_shape(func, "credits", credits.shape, (max(num_runs, 0),))
    check_shape(func, "argmax", argmax.shape, tuple(grad_out.shape))
    if num_runs <= 0 or dim == 0:
        return
    order, bag = as_index(xp, order, int64=True), as_index(xp, bag, int64=True)
    target, tally = into(xp, out, copy=False), into(xp, credits, np.uint64)
    launch("embedding", name, num_runs,
           (xp.ascontiguousarray(grad_out), order, bag, as_index(xp, rows, int64=True),
            as_index(xp, argmax, int64=True), as_index(xp, starts, int64=True), target, tally,
            _I64(num_runs), _I64(dim), _I64(order.shape[0]), _I64(bag.shape[0]),
            _I64(grad_out.shape[0]), error_buffer()), lanes=WARP)
    back(out, target)
    back(credits, tally)


def sort_ids(xp: ModuleType, ids: Any) -> tuple[Any, Any, Any]:
    """Stable sort of ids: ``(order, distinct ids, run starts)``, all int64 (see the CPU kernel).

    Synchronises the device once: the number of distinct ids sizes the outputs. That
    read also brings the error word back (:func:`~arrow_sparse.kernels.cuda.read_scalars`),
    so the caller's waiting check right after it costs no second transfer.
    """
    func = "sort_ids"
    idx = as_index(xp, ids)
    suffix = ctype(func, idx.dtype, INDEX_CTYPES)
    num = idx.shape[0]
    order = xp.argsort(idx, kind="stable").astype(np.int64, copy=False)
    if num == 0:
        return order, xp.empty(0, dtype=np.int64), xp.zeros(1, dtype=np.int64)
    head = xp.empty(num, dtype=np.uint8)
    launch("embedding", name_expression("run_heads", suffix), num,
           (idx, order, head, _I64(num), error_buffer()))
    csum = xp.cumsum(head, dtype=np.int64)
    (runs,) = read_scalars(xp, csum[-1])
    out = xp.empty(2 * runs + 1, dtype=np.int64)  # one allocation: rows, then starts
    rows, starts = out[:runs], out[runs:]
    launch("embedding", name_expression("compact_runs", suffix), num,
           (idx, order, head, csum, _I64(num), _I64(runs), rows, starts))
    return order, rows, starts


def coalesce_sorted(xp: ModuleType, grad_out: Any, order: Any, bag: Any, scale: Any, starts: Any,
                    out: Any) -> None:
    """Sum ``scale[p] * grad_out[bag[p]]`` over each run of ``order`` (see the CPU kernel).

    Runs longer than ``PIECE`` positions are split by elements: ``coalesce_pieces``
    sums their later pieces first (two launches; one when no position is sorted).
    """
    func = "coalesce_sorted"
    _same_dtype(func, "grad_out", grad_out, out)
    if scale.shape[0] == 0:
        scale = nothing(xp, _FLOATS[1])
    elif scale.dtype.kind in "iu":
        scale = scale.astype(product_dtype(scale.dtype, grad_out.dtype))
    name = _name(func, grad_out.dtype, scale.dtype)
    num_runs, dim = starts.shape[0] - 1, grad_out.shape[1]
    check_shape(func, "out", out.shape, (max(num_runs, 0), dim))
    if num_runs <= 0 or dim == 0:
        return
    order, bag = as_index(xp, order, int64=True), as_index(xp, bag, int64=True)
    starts = as_index(xp, starts, int64=True)
    grad, scale = xp.ascontiguousarray(grad_out), xp.ascontiguousarray(scale)
    target = into(xp, out)
    num = order.shape[0]
    piece, parts, chunks = _pieces(xp, num, dim, grad.dtype)
    sizes = (_I64(dim), _I64(num), _I64(bag.shape[0]), _I64(scale.shape[0]),
             _I64(grad_out.shape[0]))
    if chunks:
        launch("embedding", _name("coalesce_pieces", grad_out.dtype, scale.dtype), chunks,
               (grad, order, bag, scale, starts, _I64(num_runs), *sizes, piece, _I64(chunks),
                parts, error_buffer()), lanes=WARP)
    launch("embedding", name, num_runs,
           (grad, order, bag, scale, starts, target, _I64(num_runs), *sizes, piece, parts,
            error_buffer()), lanes=WARP)
    back(out, target)


def _pieces(xp: ModuleType, num: int, dim: int, dtype: Any) -> tuple[Any, Any, int]:
    """Return ``(piece, parts, chunks)`` for ``num`` sorted positions.

    Chunks of ``PIECE`` positions, and the ``[chunks, dim]`` partials of the runs they
    split (uninitialised: only the chunks where a later piece starts are written, and
    only those are read).
    """
    piece = _launch.PIECE
    chunks = -(-num // piece)
    return _I64(piece), xp.empty((chunks, dim), dtype=dtype), chunks


def weights_grad(xp: ModuleType, table: Any, ids: Any, offsets: Any, grad_out: Any, mean: bool,
                 out: Any) -> None:
    """``out[j] = <grad_out[bag of j], table[ids[j]]>`` (see the CPU kernel)."""
    func = "weights_grad"
    idx = as_index(xp, ids)
    name = name_expression(func, ctype(func, table.dtype),
                           ctype(func, grad_out.dtype, FLOAT_CTYPES),
                           DTYPE_TO_CTYPE[product_dtype(table.dtype, grad_out.dtype)],
                           ctype(func, out.dtype, FLOAT_CTYPES),
                           ctype(func, idx.dtype, INDEX_CTYPES))
    num, num_bags, dim = idx.shape[0], offsets.shape[0] - 1, table.shape[1]
    check_shape(func, "out", out.shape, (num,))
    if grad_out.ndim != 2 or grad_out.shape[1] != dim:
        msg = (f"{func}: grad_out must have the table's {dim} columns, got shape "
               f"{tuple(grad_out.shape)}")
        raise ArrowSparseValueError(msg)
    if num == 0 or num_bags <= 0:
        return
    target = into(xp, out)
    launch("embedding", name, num,
           (xp.ascontiguousarray(table), idx, as_index(xp, offsets, int64=True),
            xp.ascontiguousarray(grad_out), _I32(bool(mean)), target, _I64(num),
            _I64(num_bags), _I64(dim), _I64(table.shape[0]), _I64(grad_out.shape[0]),
            error_buffer()), lanes=WARP)
    back(out, target)


def bag_ids(xp: ModuleType, ids: Any, offsets: Any, valid: Any, vmask: Any, woffsets: Any,
            wvalid: Any, num_weights: int, bound: int) -> tuple[Any, Any, Any, Any]:
    """Read the bags of device ids: ``(bag, key, wpos, count)``, int64 (see ``embedding.cu``).

    Bag ``b`` holds ``ids[offsets[b]:offsets[b + 1]]``; ``valid`` (bags) and ``vmask``
    (ids) are bool masks or None; ``woffsets`` (None: weights, if any, are aligned with
    the ids) and ``wvalid`` describe list weights of ``num_weights`` values; ids must lie
    in ``[0, bound)``. ``key`` has one entry more than the ids: ``bound``, a sentinel
    that makes the sorted keys' last run always the unread ids'. Device-only (no CPU
    twin); records its checks in the error word.
    """
    func = "bag_ids"
    idx = as_index(xp, ids)
    name = name_expression(func, ctype(func, idx.dtype, INDEX_CTYPES))
    num, num_bags = idx.shape[0], offsets.shape[0] - 1
    if num_bags < 0:
        msg = f"{func}: offsets must have at least one element"
        raise ArrowSparseValueError(msg)
    for arg, mask, size in (("valid", valid, num_bags), ("vmask", vmask, num),
                            ("wvalid", wvalid, num_weights)):
        if mask is not None:
            check_shape(func, arg, mask.shape, (size,))
    if woffsets is not None:
        check_shape(func, "woffsets", woffsets.shape, (num_bags + 1,))
    out = xp.empty(3 * num + num_bags + 1, dtype=np.int64)  # one allocation, four results
    bag, key, wpos, count = (out[:num], out[num:2 * num + 1], out[2 * num + 1:3 * num + 1],
                             out[3 * num + 1:])
    if max(num, num_bags) == 0:
        key.fill(bound)
        return bag, key, wpos, count
    absent = nothing(xp, _U8)  # the one empty array of every absent mask
    va, vm, wv = ((absent, _I32(0)) if m is None else as_mask(xp, m)
                  for m in (valid, vmask, wvalid))
    wo = out[:0] if woffsets is None else as_index(xp, woffsets, int64=True)
    launch("embedding", name, max(num, num_bags),
           (idx, as_index(xp, offsets, int64=True), va[0], _I32(1 - va[1]), vm[0], vm[1], wo,
            _I32(woffsets is not None), wv[0], wv[1], _I64(num), _I64(num_bags),
            _I64(num_weights), _I64(bound), bag, key, wpos, count, error_buffer()))
    return bag, key, wpos, count


def train_rows(xp: ModuleType, optimizer: str, table: Any, state: Any, grad_out: Any,
               order: Any, bag: Any, scale: Any, keys: Any, lr: float, eps: float) -> None:
    """Run the fused backward and optimizer step of ``train_step`` on device bags.

    ``keys`` are the bags' sort keys in sorted order (the ids, ``len(table)`` where not
    read) and ``order`` their positions (a stable argsort); position ``p`` contributes
    ``scale[p] * grad_out[bag[p]]`` (``scale`` None or empty: 1) to the row ``keys``
    names. Each
    touched row takes one ``optimizer`` step (``"sgd"``, ``"adagrad"`` with ``state`` of
    the table's shape, ``"rowwise_adagrad"`` with one state per row) with the row's
    coalesced gradient, as :func:`coalesce_sorted` then the ``*_rows`` step would: the
    same bits, with no gradient written and nothing read back. Device-only (no CPU twin:
    the host runs those two kernels). Two launches: ``train_pieces``, ``train_rows``.
    """
    func = "train_rows"
    if scale is None or scale.shape[0] == 0:
        scale = nothing(xp, _FLOATS[1])
    elif scale.dtype.kind in "iu":
        scale = scale.astype(product_dtype(scale.dtype, grad_out.dtype))
    if state is None:
        state = nothing(xp, table.dtype)
    name = _name(func, table.dtype, grad_out.dtype, state.dtype, scale.dtype)
    num, dim = keys.shape[0], table.shape[1]
    if num == 0 or dim == 0:
        return
    grad, scale = xp.ascontiguousarray(grad_out), xp.ascontiguousarray(scale)
    order, bag = as_index(xp, order, int64=True), as_index(xp, bag, int64=True)
    keys = as_index(xp, keys, int64=True)
    piece, parts, chunks = _pieces(xp, num, dim, grad.dtype)
    sizes = (_I64(num), _I64(dim), _I64(bag.shape[0]), _I64(scale.shape[0]),
             _I64(grad.shape[0]))
    launch("embedding", _name("train_pieces", grad.dtype, scale.dtype), chunks,
           (grad, order, bag, scale, keys, *sizes, _I64(table.shape[0]), piece, _I64(chunks),
            parts, error_buffer()), lanes=WARP)
    launch("embedding", name, num,
           (table, state, grad, order, bag, scale, keys, _I32(TRAIN_OPTIMIZERS[optimizer]),
            _F64(lr), _F64(eps), *sizes, _I64(table.shape[0]), piece, parts, error_buffer()),
           lanes=WARP)


# --------------------------------------------------------------------------- optimizers
def _elementwise(name: str, xp: ModuleType, table: Any, states: tuple[Any, ...],
                 rows: Any, values: Any, scalars: tuple[Any, ...]) -> None:
    """Launch a one-thread-per-gradient-element step over ``table`` and ``states``."""
    num, dim = values.shape[0], table.shape[1]
    if num * dim == 0:
        return
    targets = [into(xp, a) for a in (table, *states)]
    launch("embedding", name, num * dim,
           (*targets, as_index(xp, rows, int64=True),
            xp.ascontiguousarray(values, dtype=table.dtype), *scalars, _I64(num), _I64(dim),
            _I64(table.shape[0]), error_buffer()))
    for a, target in zip((table, *states), targets, strict=True):
        back(a, target)


def sgd_rows(xp: ModuleType, table: Any, rows: Any, values: Any, lr: float) -> None:
    """In place SGD on the rows of a coalesced gradient (see the CPU kernel)."""
    func = "sgd_rows"
    _elementwise(_name(func, table.dtype), xp, table, (), rows, values, (_F64(lr),))


def adagrad_rows(xp: ModuleType, table: Any, state: Any, rows: Any, values: Any, lr: float,
                 eps: float) -> None:
    """In place Adagrad on the rows of a coalesced gradient (see the CPU kernel)."""
    func = "adagrad_rows"
    _elementwise(_name(func, table.dtype, state.dtype), xp, table, (state,), rows,
                 values, (_F64(lr), _F64(eps)))


def rowwise_adagrad_rows(xp: ModuleType, table: Any, state: Any, rows: Any, values: Any, lr: float,
                         eps: float) -> None:
    """In place row-wise Adagrad on the rows of a coalesced gradient (see the CPU kernel)."""
    func = "rowwise_adagrad_rows"
    name = _name(func, table.dtype, state.dtype)
    num, dim = values.shape[0], table.shape[1]
    if num == 0:
        return
    target, state_target = into(xp, table), into(xp, state)
    launch("embedding", name, num,
           (target, state_target, as_index(xp, rows, int64=True),
            xp.ascontiguousarray(values, dtype=table.dtype), _F64(lr), _F64(eps), _I64(num),
            _I64(dim), _I64(table.shape[0]), error_buffer()), lanes=WARP)
    back(table, target)
    back(state, state_target)


def ftrl_rows(xp: ModuleType, table: Any, z: Any, n: Any, rows: Any, values: Any, alpha: float,
              beta: float, l1: float, l2: float) -> None:
    """In place Caffe2 ``SparseFtrl`` on the rows of a coalesced gradient (see the CPU kernel)."""
    func = "ftrl_rows"
    if z.dtype != table.dtype or n.dtype != table.dtype:
        msg = (f"{func}: no cuda kernel for a {table.dtype} table with {z.dtype} z "
               f"and {n.dtype} n")
        raise NotImplementedError(msg)
    _elementwise(_name(func, table.dtype), xp, table, (z, n), rows, values,
                 (_F64(alpha), _F64(beta), _F64(l1), _F64(l2)))
