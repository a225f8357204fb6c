"""Fixtures of the segment tests.

``backend`` extends the suite's fixture of that name (tests/conftest.py): on the
emulator backends every launch also runs in reversed and shuffled thread order and
must give the same results, and after the test only float atomic sums
(``scatter_add`` into double) may have shown an order effect at all (integers, max/min
with signed zeros, positions may not). ``cp`` is the stand-in CuPy alone, for the tests
of device errors and synchronisations, with the same thread orders.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.cuda_emu.fake_cupy import emulated_cupy

from ._helpers import emulator, float_atomic_sum

ORDERS = ("reverse", "shuffle")


def _assert_no_order_effects(emu: object) -> None:
    effects = getattr(emu, "order_effects", {})
    unexpected = {k: n for k, n in effects.items() if not float_atomic_sum(k)}
    assert not unexpected, f"results depend on the thread order: {unexpected}"


@pytest.fixture
def backend(backend: str) -> Iterator[str]:
    """The suite's ``backend``, with every launch also run in reversed and shuffled order."""
    emu = emulator(backend)
    if emu is not None:
        emu.check_orders = ORDERS
    yield backend
    if emu is not None:
        _assert_no_order_effects(emu)


@pytest.fixture
def cp() -> Iterator[ModuleType]:
    """The stand-in ``cupy``, every launch in three thread orders, for this test only."""
    with emulated_cupy(check_orders=ORDERS) as module:
        yield module
        _assert_no_order_effects(module.emulator)
