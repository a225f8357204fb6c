"""CUDA launchers of the conversion kernels (``convert.cu``).

Each launcher in ``__all__`` takes the array module ``xp``, then the parameters and
the semantics of its CPU twin in :mod:`arrow_sparse.kernels.cpu.convert`: it picks the
template instantiation from the dtypes, sizes the grid and packs the arguments with
explicit C types. Arrays are device arrays (CuPy), or numpy arrays when the emulator
stands in for the GPU in tests. The padding kernels re-check the offsets they read and
record rows outside the values in the device error word (treating them as padding).

:data:`DEVICE_ONLY` launchers have no CPU twin: the checks of offsets, lengths and
segment ids that :mod:`arrow_sparse._validate` runs on device inputs (on the
host it checks with numpy). They record the first violation in the error word; the
public operation raises it with :func:`arrow_sparse.kernels.cuda.check_errors`.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from . import error_buffer
from ._launch import (
    INDEX_CTYPES,
    VALUE_CTYPES,
    as_mask,
    as_row_index,
    back,
    ctype,
    into,
    launch,
    name_expression,
    name_expressions,
)

__all__ = ["expand_level", "pad_rows", "unpad_rows"]

#: Device-only launchers (no CPU twin), see the module docstring.
DEVICE_ONLY = ("check_lengths", "check_offsets", "check_segment_ids")
#: C types of the signed integer arrays the checks read (unsigned ones are widened).
SIGNED_CTYPES: tuple[str, ...] = ("signed char", "short", "int", "long long")

NAME_EXPRESSIONS: list[str] = [
    *name_expressions("pad_rows", VALUE_CTYPES, INDEX_CTYPES),
    *name_expressions("expand_level", INDEX_CTYPES),
    *name_expressions("unpad_rows", VALUE_CTYPES, INDEX_CTYPES),
    *name_expressions("check_offsets", INDEX_CTYPES),
    *name_expressions("check_lengths", SIGNED_CTYPES),
    *name_expressions("check_segment_ids", SIGNED_CTYPES),
]

_I32 = np.int32
_I64 = np.int64


def pad_rows(xp: ModuleType, values: Any, row_index: Any, offsets: Any, valid: Any, max_length: int,
             pad: Any, out: Any, elem_valid: Any = None) -> None:
    """Fill ``out[P, max_length, D]`` from jagged rows (see the CPU kernel)."""
    func = "pad_rows"
    name = name_expression(func, ctype(func, out.dtype), ctype(func, offsets.dtype, INDEX_CTYPES))
    index, identity = as_row_index(xp, row_index)
    mask, all_valid = as_mask(xp, valid, all_valid=True)
    elems, all_elems = as_mask(xp, elem_valid, all_valid=True)
    target = into(xp, out, copy=False)
    num_out, width = out.shape[0], out.shape[2]
    launch("convert", name, num_out * max_length * width,
           (xp.ascontiguousarray(values, dtype=out.dtype), index, identity,
            xp.ascontiguousarray(offsets), mask, all_valid, elems, all_elems, _I64(num_out),
            _I64(max_length), _I64(width), out.dtype.type(pad), _I64(offsets.shape[0] - 1),
            _I64(values.shape[0]), target, error_buffer()))
    back(out, target)


def expand_level(xp: ModuleType, row_index: Any, offsets: Any, valid: Any, max_length: int,
                 num_out: int) -> Any:
    """Row index of the next jagged level, ``num_out * max_length`` long (see the CPU kernel)."""
    func = "expand_level"
    name = name_expression(func, ctype(func, offsets.dtype, INDEX_CTYPES))
    index, identity = as_row_index(xp, row_index)
    mask, all_valid = as_mask(xp, valid, all_valid=True)
    out = xp.empty(num_out * max_length, dtype=np.int64)
    launch("convert", name, out.shape[0],
           (index, identity, xp.ascontiguousarray(offsets), mask, all_valid, _I64(num_out),
            _I64(max_length), _I64(offsets.shape[0] - 1), out, error_buffer()))
    return out


def unpad_rows(xp: ModuleType, dense: Any, dense_row_of: Any, offsets: Any, pad: Any, out: Any
               ) -> None:
    """Fill jagged values ``out[N, D]`` from ``dense[P, L, D]`` (see the CPU kernel)."""
    func = "unpad_rows"
    name = name_expression(func, ctype(func, out.dtype), ctype(func, offsets.dtype, INDEX_CTYPES))
    index, identity = as_row_index(xp, dense_row_of)
    target = into(xp, out)
    dense_rows, dense_len, width = dense.shape
    launch("convert", name, out.shape[0] * width,
           (xp.ascontiguousarray(dense, dtype=out.dtype), index, identity,
            xp.ascontiguousarray(offsets), _I64(offsets.shape[0] - 1), _I64(dense_rows),
            _I64(dense_len), _I64(width), _I64(out.shape[0]), out.dtype.type(pad), target))
    back(out, target)


# ------------------------------------------------------------------ device input checks
def check_offsets(xp: ModuleType, offsets: Any, num_values: int | None = None) -> None:
    """Record the first bad offset in the error word.

    An offset is bad when it is negative (the first one), decreasing or above
    ``num_values`` (int32 or int64 offsets).
    """
    func = "check_offsets"
    name = name_expression(func, ctype(func, offsets.dtype, INDEX_CTYPES))
    launch("convert", name, offsets.shape[0],
           (xp.ascontiguousarray(offsets), _I64(offsets.shape[0]),
            _I64(-1 if num_values is None else num_values), error_buffer()))


def check_lengths(xp: ModuleType, lengths: Any, ends: Any, padded_length: int | None = None,
                  to_int32: bool = False, total: int | None = None) -> None:
    """Record the first bad length in the error word.

    A length is bad when it is negative or above ``padded_length``, when its running
    sum (``ends = [0, *cumsum(lengths)]``, int64) leaves the int32 range
    (``to_int32``) or 2**59, or, at the last length, when the sum differs from ``total``.
    """
    func = "check_lengths"
    name = name_expression(func, ctype(func, lengths.dtype, SIGNED_CTYPES))
    launch("convert", name, lengths.shape[0],
           (xp.ascontiguousarray(lengths), xp.ascontiguousarray(ends, dtype=np.int64),
            _I64(lengths.shape[0]), _I64(-1 if padded_length is None else padded_length),
            _I32(to_int32), _I64(-1 if total is None else total), error_buffer()))


def check_segment_ids(xp: ModuleType, ids: Any, num_segments: int | None = None,
                      sorted_ids: bool = True) -> None:
    """Record the first bad segment id in the error word.

    An id is bad when it is negative, ``>= num_segments`` or (``sorted_ids``) below its
    predecessor.
    """
    func = "check_segment_ids"
    name = name_expression(func, ctype(func, ids.dtype, SIGNED_CTYPES))
    launch("convert", name, ids.shape[0],
           (xp.ascontiguousarray(ids), _I64(ids.shape[0]),
            _I64(-1 if num_segments is None else num_segments), _I32(sorted_ids),
            error_buffer()))
