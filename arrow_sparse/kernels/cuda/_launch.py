"""What every CUDA launcher shares: C types, name expressions, the launch, argument helpers.

One table maps numpy dtypes to the C types the ``.cu`` templates are instantiated
with; both the CuPy loader and the test emulator build their name expressions from it,
so the two cannot drift apart. :func:`launch` sizes the grid and calls the kernel;
:func:`into` / :func:`back`, :func:`as_mask`, :func:`as_row_index`, :func:`as_index`,
:func:`as_bytes` and :func:`check_shape` prepare the arrays a kernel reads and writes.
The helpers take the array module ``xp`` their launcher was given (numpy under the
emulator, else CuPy): nothing here looks it up.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from ...errors import ArrowSparseValueError
from . import EMPTY, FUNCTIONS, STATE, device_key, load_module

__all__ = [
    "BLOCK",
    "CTYPE_TO_DTYPE",
    "DTYPE_TO_CTYPE",
    "FLOAT_CTYPES",
    "INDEX_CTYPES",
    "MAX_BLOCKS",
    "PIECE",
    "SLOT_CTYPES",
    "VALUE_CTYPES",
    "WARP",
    "as_bytes",
    "as_index",
    "as_mask",
    "as_row_index",
    "back",
    "check_shape",
    "ctype",
    "grid_1d",
    "into",
    "launch",
    "name_expression",
    "name_expressions",
    "nothing",
]

#: numpy dtype -> C type of the template argument (NVRTC has no <cstdint>).
DTYPE_TO_CTYPE: dict[np.dtype, str] = {
    np.dtype(np.int8): "signed char",
    np.dtype(np.int16): "short",
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long long",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.uint16): "unsigned short",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.uint64): "unsigned long long",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}
#: C type -> numpy dtype (the inverse table).
CTYPE_TO_DTYPE: dict[str, np.dtype] = {c: d for d, c in DTYPE_TO_CTYPE.items()}

#: C types of every values dtype a kernel is instantiated for.
VALUE_CTYPES: tuple[str, ...] = tuple(DTYPE_TO_CTYPE.values())
#: C types of the offsets dtypes (Arrow ``list`` and ``large_list``).
INDEX_CTYPES: tuple[str, ...] = ("int", "long long")
#: C types of the float dtypes.
FLOAT_CTYPES: tuple[str, ...] = ("float", "double")
#: Slot type of the atomic kernels by values type: CUDA has no 8- or 16-bit atomics, so
#: those go through a 32-bit temporary of the same signedness.
SLOT_CTYPES: dict[str, str] = {**{t: t for t in VALUE_CTYPES}, "signed char": "int",
                               "short": "int", "unsigned char": "unsigned int",
                               "unsigned short": "unsigned int"}

#: Threads per block: a multiple of the warp size that fills an SM on every arch >= sm_70.
BLOCK = 256
#: Threads per warp; kernels that map a lane group to a row use groups of this size.
WARP = 32
#: Upper bound on blocks per launch; kernels use grid-stride loops, so a larger job
#: reuses the threads instead of launching more blocks. Tests lower it to exercise the
#: stride loop.
MAX_BLOCKS = 65536

#: Positions per piece of the kernels that split long segments by elements (bags,
#: 2-D rows, runs of equal sorted ids; ``asp_chunk_piece`` in ``_common.cuh``): a segment
#: of at most ``PIECE`` positions is reduced in one piece, exactly like the CPU; a longer
#: one as pieces whose partial results are added in order. A multiple of 4 (the fused
#: gather adds ids four at a time from the bag's start). Tests lower it to split small
#: inputs.
PIECE = 64

_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
_U8, _I64 = np.dtype(np.uint8), np.dtype(np.int64)


def ctype(func: str, dtype: np.dtype, allowed: Iterable[str] = VALUE_CTYPES) -> str:
    """C type of ``dtype``; ``NotImplementedError`` if no kernel variant exists for it."""
    c = DTYPE_TO_CTYPE.get(np.dtype(dtype))
    if c is None or c not in tuple(allowed):
        msg = f"{func}: no cuda kernel for {np.dtype(dtype)}"
        raise NotImplementedError(msg)
    return c


def name_expression(kernel: str, *ctypes: str) -> str:
    """``kernel<t0, t1>``: the exact string given to NVRTC and to ``get_function``."""
    return f"{kernel}<{', '.join(ctypes)}>" if ctypes else kernel


def name_expressions(kernel: str, *axes: Sequence[str]) -> list[str]:
    """Every instantiation of ``kernel`` over the product of the template-argument ``axes``."""
    return [name_expression(kernel, *combo) for combo in itertools.product(*axes)]


def grid_1d(work: int, block: int = BLOCK) -> tuple[tuple[int], tuple[int]]:
    """``(grid, block)`` for a grid-stride loop over ``work > 0`` threads."""
    blocks = max(1, min(-(-work // block), MAX_BLOCKS))
    return (blocks,), (block,)


def launch(family: str, name: str, work: int, args: tuple[Any, ...], *, lanes: int = 1
           ) -> None:
    """Launch kernel ``name`` (a name expression) of ``family`` over ``work`` items.

    Each item gets ``lanes`` threads (``WARP``: a lane group per row); the grid is
    :func:`grid_1d`'s. Nothing is launched for ``work <= 0``. The kernel function is
    memoised per device (``FUNCTIONS``), so a launch after the first costs one call.
    """
    if work <= 0:
        return
    key = STATE.factory_key
    if key is None:
        key = device_key()
    function = FUNCTIONS.get((family, name, key))
    if function is None:
        function = FUNCTIONS[(family, name, key)] = load_module(family).get_function(name)
    STATE.word = None  # the kernel may record an error: a word read before is stale
    blocks = max(1, min(-(-(work * lanes) // BLOCK), MAX_BLOCKS))
    function((blocks,), (BLOCK,), args)


# -------------------------------------------------------------------- argument helpers
def nothing(xp: ModuleType, dtype: Any) -> Any:
    """Return a size-0 array of ``dtype`` on the current device: an absent input's argument.

    Shared per device and dtype (kernels never touch a size-0 array), so an absent mask
    or weight costs no allocation.
    """
    key = STATE.factory_key
    if key is None and xp is not np:  # host arrays (the emulator) need no device
        key = device_key()
    memo = (key, xp, dtype)
    array = EMPTY.get(memo)
    if array is None:
        array = EMPTY[memo] = xp.empty(0, dtype=dtype)
    return array


def into(xp: ModuleType, out: Any, dtype: Any = None, *, copy: bool = True) -> Any:
    """Return the array a kernel writes for ``out``; :func:`back` finishes the write.

    ``out`` itself when it is C-contiguous in ``dtype`` (default: its own), or its
    bytes when it is a C-contiguous bool array and ``dtype`` is bool or uint8; else a
    C-contiguous temporary in ``dtype``: a copy of ``out`` (``copy``: kernels that leave
    elements alone or add into them) or uninitialised (kernels that write every element).
    """
    dtype = out.dtype if dtype is None else np.dtype(dtype)
    if out.flags.c_contiguous:
        if out.dtype == dtype:
            return out.view(np.uint8) if dtype.kind == "b" else out
        if out.dtype.kind == "b" and dtype == np.uint8:
            return out.view(np.uint8)
    if copy:
        return xp.ascontiguousarray(out, dtype=dtype)
    return xp.empty(out.shape, dtype=dtype)


def back(out: Any, target: Any) -> None:
    """Write ``target`` (from :func:`into`) into ``out`` in its dtype, unless it is ``out``.

    A C-contiguous bool ``out`` given as bytes was written in place: :func:`into` makes
    no uint8 temporary for it.
    """
    if target is out or (out.dtype.kind == "b" and out.flags.c_contiguous
                         and target.dtype == np.uint8):
        return
    out[...] = target.reshape(out.shape).astype(out.dtype, copy=False)


def as_bytes(xp: ModuleType, m: Any) -> Any:
    """``m`` as C-contiguous bytes (uint8): bools viewed, other dtypes converted."""
    m = xp.ascontiguousarray(m)
    if m.dtype.kind == "b":
        return m.view(np.uint8)
    return m if m.dtype == np.uint8 else m.astype(np.uint8)


def as_mask(xp: ModuleType, m: Any, *, all_valid: bool = False) -> tuple[Any, np.int32]:
    """``(uint8 mask, flag)`` of an optional mask; None or an empty one means no nulls.

    The flag is 1 when a mask is given, or with ``all_valid`` (kernels whose flag says
    every row is valid) 1 when none is.
    """
    if m is None or m.shape[0] == 0:
        return nothing(xp, _U8), np.int32(all_valid)
    return as_bytes(xp, m), np.int32(not all_valid)


def as_row_index(xp: ModuleType, index: Any) -> tuple[Any, np.int32]:
    """``(int64 row index, identity flag)`` of an optional row index; None or empty: identity."""
    if index is None or index.shape[0] == 0:
        return nothing(xp, _I64), np.int32(1)
    return xp.ascontiguousarray(index, dtype=np.int64), np.int32(0)


def as_index(xp: ModuleType, x: Any, *, int64: bool = False) -> Any:
    """``x`` as C-contiguous indices: int32 and int64 kept, other integer dtypes widened.

    ``int64``: always int64 (kernels instantiated for int64 indices only).
    """
    if not int64 and x.dtype in _INDEX_DTYPES:
        return xp.ascontiguousarray(x)
    return xp.ascontiguousarray(x, dtype=np.int64)


def check_shape(func: str, arg: str, shape: tuple[int, ...], expected: tuple[int, ...]
                ) -> None:
    """Check the shape a kernel reads or writes ``arg`` by (another would leave its bounds)."""
    if tuple(shape) != tuple(expected):
        msg = f"{func}: {arg} must have shape {tuple(expected)}, got {tuple(shape)}"
        raise ArrowSparseValueError(msg)
