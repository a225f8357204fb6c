"""Fixtures of the embedding tests.

``cuda_emu`` (from ``tests/conftest.py``) is the CPU emulator alone, for the tests that
call the CUDA launchers (or the public functions) through it and inspect its launches;
``cp`` is the stand-in CuPy alone, for the tests of device errors and synchronisations.
Both run every launch also in reversed and shuffled thread order (here ``cp`` too),
which must give the same results.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.cuda_emu.fake_cupy import emulated_cupy

ORDERS = ("reverse", "shuffle")


@pytest.fixture
def cp() -> Iterator[ModuleType]:
    """The stand-in CuPy, every launch in three orders."""
    with emulated_cupy(check_orders=ORDERS) as module:
        yield module
