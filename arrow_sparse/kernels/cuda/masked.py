"""CUDA launchers of the masked-reduction scatter kernels (``masked.cu``).

Each launcher takes the array module ``xp``, then the parameters and the semantics of
its CPU twin in :mod:`arrow_sparse.kernels.cpu.masked`: it picks the template
instantiation from the dtypes, sizes the grid (one thread per entry) and packs the
arguments with explicit C types. Arrays are device arrays (CuPy), or numpy arrays when
the emulator stands in for the GPU in tests. ``cell`` and ``pos`` of another integer
type are widened to int64, ``inm`` is read as bytes, per-cell float arguments
(``mean``, ``shift``) as float64.
The outputs have the dtypes :mod:`arrow_sparse.masked` gives them: sums and products
accumulate in float64 / int64 / uint64 by the values' kind, extremes in the values'
dtype (8- and 16-bit integers through an int32 / uint32 temporary), counts and
positions in int64, the rest in float64; any other pairing raises
``NotImplementedError``. A non-contiguous ``out`` is updated through a temporary.

The searches over sorted keys take the keys as int64 (other integer dtypes widened;
uint64 and floats raise ``NotImplementedError``): ``sorted_member`` is one binary
search per query (its ``out`` written as bytes), ``first_unstored`` one thread per key
proposing candidates into a per-cell int64 scratch with ``atomicMin``, then one thread
per cell writing the cells that have candidates (the others keep the caller's values,
as on the CPU). Neither reads anything back.

The kernels re-check the cell ids, and the order and range of the sorted keys, into
the device error word; the public operation raises it with
:func:`arrow_sparse.kernels.cuda.check_errors`.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from ...errors import ArrowSparseValueError
from . import error_buffer
from ._launch import (
    CTYPE_TO_DTYPE,
    FLOAT_CTYPES,
    SLOT_CTYPES,
    VALUE_CTYPES,
    as_bytes,
    as_index,
    back,
    check_shape,
    ctype,
    into,
    launch,
    name_expression,
    name_expressions,
)

__all__ = ["first_unstored", "masked_count", "masked_count_nonzero", "masked_first_best",
           "masked_max", "masked_min", "masked_prod", "masked_sum", "masked_sum_abs_pow",
           "masked_sum_exp", "masked_sum_sq_dev", "sorted_member"]

#: Device-only launchers (no CPU twin): none in this family.
DEVICE_ONLY: tuple[str, ...] = ()

_LL, _ULL, _DBL = "long long", "unsigned long long", "double"
#: Accumulator of sums and products by values type: float64, uint64 or int64.
_ACC = {t: _DBL if t in FLOAT_CTYPES else _ULL if t.startswith("unsigned") else _LL
        for t in VALUE_CTYPES}

NAME_EXPRESSIONS: list[str] = [
    name_expression("masked_count", _LL),
    *(name_expression("masked_sum", t, _ACC[t]) for t in VALUE_CTYPES),
    *(name_expression("masked_prod", t, _ACC[t]) for t in VALUE_CTYPES),
    *(name_expression("masked_extreme", t, SLOT_CTYPES[t]) for t in VALUE_CTYPES),
    *name_expressions("masked_sum_abs_pow", VALUE_CTYPES),
    *name_expressions("masked_count_nonzero", VALUE_CTYPES),
    *name_expressions("masked_sum_sq_dev", VALUE_CTYPES),
    *name_expressions("masked_sum_exp", VALUE_CTYPES),
    *name_expressions("masked_first_best", VALUE_CTYPES),
    "first_unstored_candidates",
    "first_unstored_finish",
    "sorted_member",
]
#: Marks a cell without a candidate in first_unstored's scratch (ASP_NO_POSITION).
_NO_POSITION = int(np.iinfo(np.int64).max)

_I64 = np.int64


def _expect(func: str, arg: str, x: Any, ctype: str) -> None:
    """``NotImplementedError`` unless ``x`` has the dtype of C type ``ctype``."""
    if np.dtype(x.dtype) != CTYPE_TO_DTYPE[ctype]:
        msg = (f"{func}: no cuda kernel for {arg} of dtype {x.dtype} "
               f"(want {CTYPE_TO_DTYPE[ctype]})")
        raise NotImplementedError(msg)


def _scatter(name: str, xp: ModuleType, cell: Any, before: tuple[Any, ...],
             after: tuple[Any, ...], out: Any, slot: Any = None) -> None:
    """Launch ``name`` over the entries; ``out`` through a temporary of ``slot`` if needed."""
    target = into(xp, out, slot)
    n = cell.shape[0]
    launch("masked", name, n, (as_index(xp, cell, int64=True), *before, _I64(n), *after,
                               target, _I64(out.shape[0]), error_buffer()))
    back(out, target)


def masked_count(xp: ModuleType, cell: Any, inm: Any, out: Any) -> None:
    """``out[c] += 1`` for every masked-in entry of cell ``c``."""
    func = "masked_count"
    _expect(func, "out", out, _LL)
    _scatter(name_expression(func, _LL), xp, cell, (as_bytes(xp, inm),), (), out)


def _accumulate(xp: ModuleType, func: str, cell: Any, vals: Any, inm: Any, out: Any) -> None:
    t = ctype(func, vals.dtype)
    _expect(func, "out", out, _ACC[t])
    _scatter(name_expression(func, t, _ACC[t]), xp, cell,
             (xp.ascontiguousarray(vals), as_bytes(xp, inm)), (), out)


def masked_sum(xp: ModuleType, cell: Any, vals: Any, inm: Any, out: Any) -> None:
    """``out[c] += v`` over masked-in entries."""
    _accumulate(xp, "masked_sum", cell, vals, inm, out)


def masked_prod(xp: ModuleType, cell: Any, vals: Any, inm: Any, out: Any) -> None:
    """``out[c] *= v`` over masked-in entries (``out`` starts at 1)."""
    _accumulate(xp, "masked_prod", cell, vals, inm, out)


def _extreme(xp: ModuleType, func: str, is_max: bool, cell: Any, vals: Any, inm: Any, out: Any
             ) -> None:
    t = ctype(func, vals.dtype)
    _expect(func, "out", out, t)
    _scatter(name_expression("masked_extreme", t, SLOT_CTYPES[t]), xp, cell,
             (xp.ascontiguousarray(vals), as_bytes(xp, inm)), (np.int32(is_max),), out,
             CTYPE_TO_DTYPE[SLOT_CTYPES[t]])


def masked_max(xp: ModuleType, cell: Any, vals: Any, inm: Any, out: Any) -> None:
    """Take the running maximum over masked-in entries; a NaN sticks, as in ``numpy.max``."""
    _extreme(xp, "masked_max", True, cell, vals, inm, out)


def masked_min(xp: ModuleType, cell: Any, vals: Any, inm: Any, out: Any) -> None:
    """Take the running minimum over masked-in entries; a NaN sticks, as in ``numpy.min``."""
    _extreme(xp, "masked_min", False, cell, vals, inm, out)


def _per_value(xp: ModuleType, func: str, cell: Any, vals: Any, inm: Any, out: Any, out_ctype: str,
               per_cell: Any = None, scalar: Any = None) -> None:
    """Launch a kernel with an optional float64 per-cell array or scalar after ``inm``."""
    _expect(func, "out", out, out_ctype)
    extra = () if per_cell is None else (xp.ascontiguousarray(per_cell, dtype=np.float64),)
    extra += () if scalar is None else (np.float64(scalar),)
    _scatter(name_expression(func, ctype(func, vals.dtype)), xp, cell,
             (xp.ascontiguousarray(vals), as_bytes(xp, inm), *extra), (), out)


def masked_sum_abs_pow(xp: ModuleType, cell: Any, vals: Any, inm: Any, p: float, out: Any) -> None:
    """``out[c] += |v| ** p`` over masked-in entries (float64 ``out``)."""
    _per_value(xp, "masked_sum_abs_pow", cell, vals, inm, out, _DBL, scalar=p)


def masked_count_nonzero(xp: ModuleType, cell: Any, vals: Any, inm: Any, out: Any) -> None:
    """``out[c] += 1`` for every masked-in non-zero entry."""
    _per_value(xp, "masked_count_nonzero", cell, vals, inm, out, _LL)


def masked_sum_sq_dev(xp: ModuleType, cell: Any, vals: Any, inm: Any, mean: Any, out: Any) -> None:
    """``out[c] += (v - mean[c]) ** 2`` over masked-in entries."""
    _per_value(xp, "masked_sum_sq_dev", cell, vals, inm, out, _DBL, per_cell=mean)


def masked_sum_exp(xp: ModuleType, cell: Any, vals: Any, inm: Any, shift: Any, out: Any) -> None:
    """``out[c] += exp(v - shift[c])`` over masked-in entries."""
    _per_value(xp, "masked_sum_exp", cell, vals, inm, out, _DBL, per_cell=shift)


def masked_first_best(xp: ModuleType, cell: Any, pos: Any, vals: Any, inm: Any, identity: Any,
                      best: Any, out: Any) -> None:
    """``out[c] = min(out[c], pos)`` over entries whose effective value equals ``best[c]``."""
    func = "masked_first_best"
    t = ctype(func, vals.dtype)
    _expect(func, "out", out, _LL)
    dtype = CTYPE_TO_DTYPE[t]
    _scatter(name_expression(func, t), xp, cell,
             (as_index(xp, pos, int64=True), xp.ascontiguousarray(vals), as_bytes(xp, inm),
              dtype.type(identity), xp.ascontiguousarray(best, dtype=dtype)), (), out)


# ------------------------------------------------------------ sorted-key searches
def _keys(func: str, arg: str, xp: ModuleType, keys: Any) -> Any:
    """Sorted keys as contiguous int64; uint64 and non-integer keys have no kernel."""
    if keys.dtype.kind not in "iu" or keys.dtype == np.uint64:
        msg = f"{func}: no cuda kernel for {arg} of dtype {keys.dtype}"
        raise NotImplementedError(msg)
    return xp.ascontiguousarray(keys, dtype=np.int64)


def first_unstored(xp: ModuleType, mkeys: Any, skeys: Any, slice_size: int, first_zero: Any,
                   first_out: Any) -> None:
    """Per cell, the first masked-in unstored position and the first position in neither.

    See the CPU kernel; cells without keys keep what the caller set.
    """
    func = "first_unstored"
    _expect(func, "first_zero", first_zero, _LL)
    _expect(func, "first_out", first_out, _LL)
    if first_out.shape != first_zero.shape:
        msg = (f"{func}: first_out has shape {tuple(first_out.shape)} but first_zero has "
               f"{tuple(first_zero.shape)}")
        raise ArrowSparseValueError(msg)
    masked, stored = _keys(func, "mkeys", xp, mkeys), _keys(func, "skeys", xp, skeys)
    work = masked.shape[0] + stored.shape[0]
    if work == 0:
        return
    if slice_size <= 0:
        msg = f"{func}: slice_size must be positive when there are keys, got {slice_size}"
        raise ArrowSparseValueError(msg)
    num_cells = first_zero.shape[0]
    best = xp.full(2 * num_cells, _NO_POSITION, dtype=np.int64)
    launch("masked", "first_unstored_candidates", work,
           (masked, _I64(masked.shape[0]), stored, _I64(stored.shape[0]), _I64(slice_size),
            _I64(num_cells), best, error_buffer()))
    zero, out = into(xp, first_zero), into(xp, first_out)
    launch("masked", "first_unstored_finish", num_cells, (best, _I64(num_cells), zero, out))
    back(first_zero, zero)
    back(first_out, out)


def sorted_member(xp: ModuleType, keys: Any, queries: Any, out: Any) -> None:
    """``out[i] = queries[i] in keys`` for sorted, distinct ``keys``."""
    func = "sorted_member"
    sorted_keys, wanted = _keys(func, "keys", xp, keys), _keys(func, "queries", xp, queries)
    n = wanted.shape[0]
    check_shape(func, "out", out.shape, (n,))
    if n == 0:
        return
    direct = out.flags.c_contiguous and out.dtype == np.bool_
    target = out.view(np.uint8) if direct else xp.empty(n, dtype=np.uint8)
    launch("masked", func, n + sorted_keys.shape[0],
           (sorted_keys, _I64(sorted_keys.shape[0]), wanted, _I64(n), target, error_buffer()))
    if not direct:
        out[...] = target.astype(np.bool_)
