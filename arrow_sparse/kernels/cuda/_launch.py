"""Launch helpers shared by every CUDA kernel family.

dtype -> C type, name expressions, compile groups, grids and the device error word.

One table maps numpy dtypes to the C types the ``.cu`` templates are instantiated
with; both the CuPy loader and the test emulator build their name expressions from it,
so the two cannot drift apart.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence

import numpy as np

from ...errors import ArrowSparseError, ArrowSparseIndexError, ArrowSparseValueError

__all__ = [
    "BLOCK",
    "DTYPE_TO_CTYPE",
    "ERROR_NONE",
    "FLOAT_CTYPES",
    "INDEX_CTYPES",
    "MAX_BLOCKS",
    "VALUE_CTYPES",
    "WARP",
    "ctype",
    "decode_error",
    "error_messages",
    "group_of",
    "grid_1d",
    "grid_groups",
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
#: C types of the float dtypes.
FLOAT_CTYPES: tuple[str, ...] = ("float", "double")

#: Threads per block: a multiple of the warp size that fills an SM on every arch >= sm_70.
BLOCK = 256
#: Threads per warp; kernels that map a lane group to a row use groups of this size.
WARP = 32
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


def group_of(name: str) -> str:
    """Return the compile group of a name expression: the kernel and its first template argument.

    The loader compiles one group at a time (``pad_rows<float, int>`` and
    ``pad_rows<float, long long>`` together, ``pad_rows<double, ...>`` on its first use),
    so the first call of an op pays for its own variants only.
    """
    head, _, args = name.partition("<")
    return f"{head}<{args.split(',')[0].rstrip('>').strip()}>" if args else head


def grid_1d(work: int, block: int = BLOCK) -> tuple[tuple[int], tuple[int]]:
    """``(grid, block)`` for a grid-stride loop over ``work > 0`` items."""
    blocks = max(1, min(-(-work // block), MAX_BLOCKS))
    return (blocks,), (block,)


def grid_groups(groups: int, block: int = BLOCK) -> tuple[tuple[int], tuple[int]]:
    """``(grid, block)`` for a grid-stride loop over ``groups > 0`` lane groups of ``WARP``."""
    return grid_1d(groups * WARP, block)


# ------------------------------------------------------------------ device error word
#: Value of the error word while no kernel has recorded an error (all ones).
ERROR_NONE = (1 << 64) - 1
_CLASSES: dict[str, type[ArrowSparseError]] = {
    "IndexError": ArrowSparseIndexError, "ValueError": ArrowSparseValueError}
_MESSAGE = re.compile(r"^\s*(\w+)\s*=\s*(\d+)\s*,?\s*//\s*message:\s*"
                      r"(?:(IndexError|ValueError):\s*)?(.*\S)\s*$", re.MULTILINE)


def error_messages(source: str) -> dict[int, tuple[str, type[ArrowSparseError], str]]:
    """``code -> (enum name, exception class, message)`` from a family's ``.cu`` text.

    Each error code is one enum line ending in ``// message: [IndexError: ]text``;
    ValueError is the default class.
    """
    table: dict[int, tuple[str, type[ArrowSparseError], str]] = {}
    for m in _MESSAGE.finditer(source):
        code = int(m.group(2))
        if not 0 < code < 256 or code in table:
            msg = f"error code {m.group(1)} = {code} must be unique and in 1..255"
            raise ValueError(msg)
        table[code] = (m.group(1), _CLASSES[m.group(3) or "ValueError"], m.group(4))
    return table


def decode_error(word: int) -> tuple[int, int, int]:
    """``(family index, code, position)`` of an error word written by ``ASP_RAISE``."""
    return (word >> 8) & 0xFF, word & 0xFF, word >> 16
