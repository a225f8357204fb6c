"""Launch helpers shared by every CUDA kernel family: dtype -> C type, name expressions, grids.

One table maps numpy dtypes to the C types the ``.cu`` templates are instantiated
with; both the CuPy loader and the test emulator build their name expressions from it,
so the two cannot drift apart.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = [
    "BLOCK",
    "DTYPE_TO_CTYPE",
    "INDEX_CTYPES",
    "MAX_BLOCKS",
    "VALUE_CTYPES",
    "ctype",
    "grid_1d",
    "name_expression",
    "name_expressions",
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

#: C types of every values dtype a kernel is instantiated for.
VALUE_CTYPES: tuple[str, ...] = tuple(DTYPE_TO_CTYPE.values())
#: C types of the offsets dtypes (Arrow ``list`` and ``large_list``).
INDEX_CTYPES: tuple[str, ...] = ("int", "long long")

#: Threads per block: a multiple of the warp size that fills an SM on every arch >= sm_70.
BLOCK = 256
#: Upper bound on blocks per launch; kernels use grid-stride loops, so a larger job
#: reuses the threads instead of launching more blocks. Tests lower it to exercise the
#: stride loop.
MAX_BLOCKS = 65536


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
    """``(grid, block)`` for a grid-stride loop over ``work > 0`` items."""
    blocks = max(1, min(-(-work // block), MAX_BLOCKS))
    return (blocks,), (block,)
