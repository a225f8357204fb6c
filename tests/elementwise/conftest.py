"""Fixtures of the elementwise tests: the emulator with order checks, the stand-in CuPy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ..cuda_emu import fake_cupy
from ..cuda_emu.emu import Emulator, emulated


@pytest.fixture
def cuda_emu() -> Iterator[Emulator]:
    """The emulator, every launch also run in reversed and shuffled thread order.

    The family's only atomics add integers (unique's counts), so every order must leave
    the same bits.
    """
    with emulated(check_orders=("reverse", "shuffle")) as emulator:
        yield emulator
        assert emulator.order_effects == {}


@pytest.fixture
def cp() -> Any:
    """The stand-in CuPy with numpy's ufuncs, every launch also run in reversed order."""
    with fake_cupy.emulated_cupy(check_orders=("reverse",)) as module:
        yield module
