"""Fixtures of the masked-reduction tests: the ``backend`` and ``cp`` fixtures of
``tests/conftest.py`` with the stand-in CuPy completed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cuda_emu import fake_cupy

#: CuPy functions the masked reductions use that the stand-in CuPy does not define;
#: they behave as numpy's (added to it for the ``cupy_emu`` backend).
CUPY_FUNCTIONS = ("exp", "log", "sqrt", "isfinite", "broadcast_to")


@pytest.fixture
def backend(backend: str) -> Iterator[str]:
    """The ``backend`` fixture of ``conftest.py``, with the stand-in CuPy completed."""
    if backend == "cupy_emu":
        from tests.cuda_emu import fake_cupy

        module = sys.modules["cupy"]
        for name in CUPY_FUNCTIONS:
            setattr(module, name, fake_cupy._function(name))
    yield backend


@pytest.fixture
def cp() -> Iterator[Any]:
    """The stand-in ``cupy`` with the emulator for one test, completed as test_masked does."""
    with fake_cupy.emulated_cupy(check_orders=("reverse",)) as module:
        for name in CUPY_FUNCTIONS:
            setattr(module, name, fake_cupy._function(name))
        yield module
