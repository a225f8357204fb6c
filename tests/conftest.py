"""Test configuration: Hypothesis profiles and shared fixtures.

Profiles: ``ci`` (the default: deterministic, few examples, used by ``.ci/run``),
``dev`` (more examples, random) and ``thorough`` (run by hand before a release):
``HYPOTHESIS_PROFILE=thorough pytest -m hypothesis``.

``ray_cluster`` starts one small local Ray cluster for the whole session (tests
marked ``ray`` use it; they skip only where Ray is not installed).

``backend`` runs a test on the CPU, the CUDA kernels through the emulator (host and
device arrays) and real CuPy (``gpu``); :func:`to_backend` puts its inputs on the
backend's device and :func:`from_backend` brings results back, checking their device.

``cuda_emu`` runs the CUDA kernels on the emulator for one test, ``cp`` gives the
stand-in CuPy over it; both also run every launch in other thread orders, which must
give the same results. A test module or folder that wants other orders overrides them.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from tests.cuda_emu.emu import Emulator

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
#: Both Arrow offsets widths: ``list`` (int32) and ``large_list`` (int64).
OFFSETS_DTYPES = [np.dtype(np.int32), np.dtype(np.int64)]


@pytest.fixture(params=OFFSETS_DTYPES, ids=["int32", "int64"])
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
    ray = start_local_ray()
    try:
        yield ray
    finally:
        ray.shutdown()


def start_local_ray() -> Any:
    """Start the session's local Ray instance (see :func:`ray_cluster`) and return ``ray``.

    Also called by tests that stop it to run a cluster of their own, to restart it.
    """
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray = pytest.importorskip("ray")
    ray_data = pytest.importorskip("ray.data")
    # address="local": a new instance, even where another Ray of this machine is running
    # (without it, ray.init joins the one started last: another test's cluster)
    ray.init(address="local", num_cpus=2, include_dashboard=False,
             object_store_memory=512 * 1024**2, log_to_driver=False)
    with warnings.catch_warnings():  # Ray's own defaults warn about deprecated options
        warnings.simplefilter("ignore", DeprecationWarning)
        ray_data.DataContext.get_current().enable_progress_bars = False
    return ray


#: The ``backend`` fixture's parameters (see :func:`backend`).
BACKENDS = ["cpu", "cuda_emu", "cupy_emu", pytest.param("cupy", marks=pytest.mark.gpu)]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run a test on every backend; put its inputs there with :func:`to_backend`.

    * ``cpu``: the CPU kernels;
    * ``cuda_emu``: host arrays through the CUDA launchers and kernels, run by the CPU
      emulator (families without a ``.cu`` file stay on the CPU);
    * ``cupy_emu``: device arrays of a stand-in CuPy (``tests/cuda_emu/fake_cupy.py``),
      so the public functions take their device path (dispatch, device checks, CuPy
      calls) and the CUDA kernels run on the emulator; host arrays stay on the CPU;
    * ``cupy``: real CuPy on a GPU (marked ``gpu``; skipped without CuPy or a device).

    Inputs the test does not move with :func:`to_backend` stay host arrays, so a test
    that moves none runs the host path on every backend.
    """
    if request.param == "cpu":
        yield "cpu"
    elif request.param == "cuda_emu":
        from tests.cuda_emu.emu import emulated

        with emulated():
            yield "cuda_emu"
    elif request.param == "cupy_emu":
        from arrow_sparse.kernels import cuda
        from tests.cuda_emu.fake_cupy import emulated_cupy

        with emulated_cupy():
            yield "cupy_emu"
            cuda.check_errors("test teardown")  # no device error may outlive its test
    else:
        cupy_or_skip()
        yield "cupy"
        from arrow_sparse.kernels import cuda

        cuda.check_errors("test teardown")  # no device error may outlive its test


@pytest.fixture
def cuda_emu() -> Iterator[Emulator]:
    """The emulator, every launch also run in reversed and shuffled thread order."""
    from tests.cuda_emu.emu import emulated

    with emulated(check_orders=("reverse", "shuffle")) as emulator:
        yield emulator


@pytest.fixture
def cp() -> Iterator[Any]:
    """The stand-in ``cupy`` with the emulator, every launch also run in reversed order."""
    from tests.cuda_emu.fake_cupy import emulated_cupy

    with emulated_cupy(check_orders=("reverse",)) as module:
        yield module


def cupy_or_skip() -> Any:
    """Return CuPy where it is installed and sees a CUDA device; skip the test otherwise."""
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no CUDA device")
    return cupy


def on_device(backend: str) -> bool:
    """Whether ``backend`` takes device (CuPy) inputs."""
    return backend in ("cupy_emu", "cupy")


def to_backend(x: Any, backend: str) -> Any:
    """``x`` as an input for ``backend``: on the device for ``cupy_emu`` / ``cupy``.

    numpy arrays and sequences of numbers become CuPy arrays, a Jagged or an Arrow list
    array a Jagged on the device, an Arrow primitive array a CuPy array, and lists or
    tuples of those (offsets levels) are converted item by item. Other values (scalars,
    None) are returned as they are, and everything is, on the host backends.
    """
    if not on_device(backend) or x is None:
        return x
    from arrow_sparse import Jagged

    cupy = importlib.import_module("cupy")
    if isinstance(x, Jagged):
        return x.to_device("cuda")
    if isinstance(x, (pa.Array, pa.ChunkedArray)):
        if pa.types.is_list(x.type) or pa.types.is_large_list(x.type):
            return Jagged.from_arrow(x).to_device("cuda")
        return cupy.asarray(x.to_numpy(zero_copy_only=False))
    if isinstance(x, np.ndarray):
        return cupy.asarray(x)
    if isinstance(x, (list, tuple)):
        if all(isinstance(item, (int, float, np.generic)) for item in x):
            return cupy.asarray(np.asarray(x))
        return type(x)(to_backend(item, backend) for item in x)
    return x


def from_backend(x: Any, backend: str) -> Any:
    """A result of ``backend`` on the host, checking it is where the inputs were.

    On ``cupy_emu`` / ``cupy`` a result array must be a CuPy array (and a Jagged on the
    device); it is copied to the host. Tuples and lists are converted item by item.
    """
    from arrow_sparse import Jagged, _backend

    if isinstance(x, (list, tuple)):
        return type(x)(from_backend(item, backend) for item in x)
    if isinstance(x, Jagged):
        assert (x.device != "cpu") == on_device(backend), x.device
        return x.to_device("cpu")
    if isinstance(x, np.ndarray) or _backend.is_cupy_array(x):
        assert _backend.is_cupy_array(x) == on_device(backend), type(x)
        return _backend.to_host(x)
    return x
