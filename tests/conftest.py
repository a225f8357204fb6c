"""Test configuration: Hypothesis profiles and shared fixtures.

Profiles: ``ci`` (the default: deterministic, few examples, used by ``.ci/run``),
``dev`` (more examples, random) and ``thorough`` (run by hand before a release):
``HYPOTHESIS_PROFILE=thorough pytest -m hypothesis``.

``ray_cluster`` starts one small local Ray cluster for the whole session (tests
marked ``ray`` use it; they skip only where Ray is not installed).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=40, derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile("thorough", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOAT_DTYPES = [np.float32, np.float64]
NUMERIC_DTYPES = INT_DTYPES + FLOAT_DTYPES


@pytest.fixture(params=[np.int32, np.int64], ids=["int32", "int64"])
def offsets_dtype(request: pytest.FixtureRequest) -> np.dtype:
    """Both Arrow offsets widths: ``list`` (int32) and ``large_list`` (int64)."""
    return np.dtype(request.param)


@pytest.fixture(params=NUMERIC_DTYPES, ids=lambda d: np.dtype(d).name)
def values_dtype(request: pytest.FixtureRequest) -> np.dtype:
    """Every integer and float values dtype."""
    return np.dtype(request.param)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[object]:
    """One local Ray cluster for the session: 2 CPUs, 512 MiB object store, no dashboard.

    Skips the test where Ray is not installed. Usage statistics are off, Ray Data's
    progress bars too; the cluster is shut down when the session ends.
    """
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray = pytest.importorskip("ray")
    ray_data = pytest.importorskip("ray.data")
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=512 * 1024**2,
             log_to_driver=False)
    with warnings.catch_warnings():  # Ray's own defaults warn about deprecated options
        warnings.simplefilter("ignore", DeprecationWarning)
        ray_data.DataContext.get_current().enable_progress_bars = False
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(params=["cpu", "cuda_emu"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run a test on the CPU kernels, then on the CUDA kernels through the CPU emulator.

    The emulator runs the real CUDA dispatch and launch code; families without a
    ``.cu`` file stay on the CPU.
    """
    if request.param == "cpu":
        yield "cpu"
        return
    from tests.cuda_emu.emu import emulated

    with emulated():
        yield "cuda_emu"
