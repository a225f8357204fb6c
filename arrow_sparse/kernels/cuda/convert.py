"""CUDA launchers of the conversion kernels (``convert.cu``).

Each launcher has the signature and the semantics of its CPU twin in
:mod:`arrow_sparse.kernels.cpu.convert`: it picks the template instantiation from the
dtypes, sizes the grid and packs the arguments with explicit C types. Arrays are
device arrays (CuPy), or numpy arrays when the emulator stands in for the GPU in tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._backend import array_module
from . import load_module
from ._launch import INDEX_CTYPES, VALUE_CTYPES, ctype, grid_1d, name_expression, name_expressions

__all__ = ["expand_level", "pad_rows", "unpad_rows"]

NAME_EXPRESSIONS: list[str] = [
    *name_expressions("pad_rows", VALUE_CTYPES, INDEX_CTYPES),
    *name_expressions("expand_level", INDEX_CTYPES),
    *name_expressions("unpad_rows", VALUE_CTYPES, INDEX_CTYPES),
]

_I32 = np.int32
_I64 = np.int64


def _index_or_empty(xp: Any, index: Any) -> tuple[Any, Any]:
    """``(int64 index array, identity flag)``: an absent index means the identity."""
    if index is None or index.shape[0] == 0:
        return xp.empty(0, dtype=np.int64), _I32(1)
    return xp.ascontiguousarray(index, dtype=np.int64), _I32(0)


def _mask_or_empty(xp: Any, valid: Any) -> tuple[Any, Any]:
    """``(uint8 mask, all_valid flag)``: an absent mask means every row is valid."""
    if valid is None or valid.shape[0] == 0:
        return xp.empty(0, dtype=np.uint8), _I32(1)
    return xp.ascontiguousarray(valid).view(np.uint8), _I32(0)


def _launch(family_kernel: str, work: int, args: tuple[Any, ...]) -> None:
    if work <= 0:
        return
    grid, block = grid_1d(work)
    load_module("convert").get_function(family_kernel)(grid, block, args)


def _into(xp: Any, out: Any) -> Any:
    """Return a C-contiguous array to launch into: ``out`` itself, or a temporary copied back."""
    return out if out.flags.c_contiguous else xp.empty(out.shape, dtype=out.dtype)


def pad_rows(values: Any, row_index: Any, offsets: Any, valid: Any, max_length: int,
             pad: Any, out: Any, elem_valid: Any = None) -> None:
    """Fill ``out[P, max_length, D]`` from jagged rows (see the CPU kernel)."""
    func = "pad_rows"
    xp = array_module(func, values, offsets, out)
    name = name_expression(func, ctype(func, out.dtype), ctype(func, offsets.dtype, INDEX_CTYPES))
    index, identity = _index_or_empty(xp, row_index)
    mask, all_valid = _mask_or_empty(xp, valid)
    elems, all_elems = _mask_or_empty(xp, elem_valid)
    target = _into(xp, out)
    num_out, width = out.shape[0], out.shape[2]
    _launch(name, num_out * max_length * width,
            (xp.ascontiguousarray(values, dtype=out.dtype), index, identity,
             xp.ascontiguousarray(offsets), mask, all_valid, elems, all_elems, _I64(num_out),
             _I64(max_length), _I64(width), out.dtype.type(pad), target))
    if target is not out:
        out[...] = target


def expand_level(row_index: Any, offsets: Any, valid: Any, max_length: int,
                 num_out: int) -> Any:
    """Row index of the next jagged level, ``num_out * max_length`` long (see the CPU kernel)."""
    func = "expand_level"
    xp = array_module(func, offsets)
    name = name_expression(func, ctype(func, offsets.dtype, INDEX_CTYPES))
    index, identity = _index_or_empty(xp, row_index)
    mask, all_valid = _mask_or_empty(xp, valid)
    out = xp.empty(num_out * max_length, dtype=np.int64)
    _launch(name, out.shape[0],
            (index, identity, xp.ascontiguousarray(offsets), mask, all_valid, _I64(num_out),
             _I64(max_length), out))
    return out


def unpad_rows(dense: Any, dense_row_of: Any, offsets: Any, pad: Any, out: Any) -> None:
    """Fill jagged values ``out[N, D]`` from ``dense[P, L, D]`` (see the CPU kernel)."""
    func = "unpad_rows"
    xp = array_module(func, dense, offsets, out)
    name = name_expression(func, ctype(func, out.dtype), ctype(func, offsets.dtype, INDEX_CTYPES))
    index, identity = _index_or_empty(xp, dense_row_of)
    target = out if out.flags.c_contiguous else xp.ascontiguousarray(out)
    dense_rows, dense_len, width = dense.shape
    _launch(name, out.shape[0] * width,
            (xp.ascontiguousarray(dense, dtype=out.dtype), index, identity,
             xp.ascontiguousarray(offsets), _I64(offsets.shape[0] - 1), _I64(dense_rows),
             _I64(dense_len), _I64(width), _I64(out.shape[0]), out.dtype.type(pad), target))
    if target is not out:
        out[...] = target
