"""CUDA launchers of the embedding optimizer steps (``embedding.cu``).

Each launcher has the signature and the semantics of its CPU twin in
:mod:`arrow_sparse.kernels.cpu.embedding`: it picks the template instantiation from the
dtypes (table ``T`` and state ``S``: float32 or float64), sizes the grid and packs the
arguments with explicit C types. Arrays are device arrays (CuPy), or numpy arrays when
the emulator stands in for the GPU in tests. ``rows`` of another integer type are
widened to int64 and ``values`` converted to the table's dtype (the public functions
pass them that way already); a non-contiguous table or state is updated through a
contiguous temporary.

The kernels re-check the rows (in range, strictly increasing) into the device error
word; the public operation raises it with :func:`arrow_sparse.kernels.cuda.check_errors`.
The lookup and backward kernels of the family have no CUDA twin yet (they run on the
segment family's ``gather_reduce`` where the public functions allow it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._backend import array_module
from . import error_buffer, load_module
from ._launch import FLOAT_CTYPES, ctype, grid_1d, grid_groups, name_expression, name_expressions

__all__ = ["adagrad_rows", "ftrl_rows", "rowwise_adagrad_rows", "sgd_rows"]

NAME_EXPRESSIONS: list[str] = [
    *name_expressions("sgd_rows", FLOAT_CTYPES),
    *name_expressions("adagrad_rows", FLOAT_CTYPES, FLOAT_CTYPES),
    *name_expressions("rowwise_adagrad_rows", FLOAT_CTYPES, FLOAT_CTYPES),
    *name_expressions("ftrl_rows", FLOAT_CTYPES),
]

_I64 = np.int64
_F64 = np.float64


def _name(func: str, *dtypes: Any) -> str:
    return name_expression(func, *(ctype(func, d, FLOAT_CTYPES) for d in dtypes))


def _rows(xp: Any, rows: Any) -> Any:
    return xp.ascontiguousarray(rows, dtype=np.int64)


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
