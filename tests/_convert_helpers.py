"""Helpers of the conversion tests: the CUDA conversion kernels against their CPU twins.

``cpu_and_emu`` runs a public call on the CPU (Numba) kernels, then through the CUDA
launchers and kernels on the CPU emulator (``tests/cuda_emu``); ``test_convert.py``,
``test_convert_kernels.py`` and the ``Jagged.to_padded`` runs of ``test_jagged.py``
compare the two results with ``assert_same``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from arrow_sparse import _backend

from .cuda_emu.emu import Emulator


def cpu_and_emu(emu: Emulator, fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """``fn`` on the CPU kernels, then through the emulator (which must have run)."""
    _backend.set_cuda_module_factory(None)
    expected = fn(*args, **kwargs)
    _backend.set_cuda_module_factory(emu)
    before = len(emu.launches)
    got = fn(*args, **kwargs)
    return expected, (got, emu.launches[before:])


def assert_same(expected: np.ndarray, got: np.ndarray) -> None:
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def sample(values_dtype: np.dtype, width: int = 1, start: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Rows of lengths 3, 0, 5, 1, 0, 2 starting at ``offsets[0] = start``."""
    lengths = np.array([3, 0, 5, 1, 0, 2])
    offsets = start + np.concatenate([[0], np.cumsum(lengths)])
    rng = np.random.default_rng(7)
    total = int(offsets[-1])
    shape = (total,) if width == 1 else (total, width)
    values = rng.integers(1, 100, size=shape).astype(values_dtype)
    return values, offsets
