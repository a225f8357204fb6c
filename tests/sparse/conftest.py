"""Fixtures of the sparse-format tests: the CUDA emulator and the stand-in CuPy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.cuda_emu import fake_cupy
from tests.cuda_emu.emu import Emulator, emulated


@pytest.fixture
def cuda_emu() -> Iterator[Emulator]:
    """The emulator, every launch also run in reversed and shuffled thread order."""
    with emulated(check_orders=("reverse", "shuffle")) as emulator:
        yield emulator


@pytest.fixture
def cp() -> Iterator[Any]:
    """The stand-in ``cupy`` with the emulator, for one test."""
    with fake_cupy.emulated_cupy(check_orders=("reverse",)) as module:
        yield module
