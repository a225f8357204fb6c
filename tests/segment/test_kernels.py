"""The segment kernels themselves: ``kernels/cpu/segment.py`` and ``kernels/cuda/segment.{py,cu}``.

The registry (every CPU kernel has a CUDA twin with its signature, and the dispatch
routes to it only under a module factory), the ``.cu`` source (no includes, no
barriers; ``nvcc --ptx`` compiles every instantiation in ``tests/test_cuda_convert.py``),
the launch layer on the emulator (grid-stride loops with fewer threads than work, no
launch without rows), the synchronisation table of every segment function
(``_helpers.SEGMENT_SYNCS``, checked by ``tests/test_cuda_dispatch.py``) and, on a real
GPU, the launchers called directly against the CPU kernels. The public functions'
device checks sit with their modules' tests.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import arrow_sparse as asp
from arrow_sparse import _backend
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cpu import segment as cpu_segment
from arrow_sparse.kernels.cuda import _launch
from arrow_sparse.kernels.cuda import segment as cuda_segment
from tests.cuda_emu.emu import BUILD_SECONDS, Emulator

from ..conftest import NUMERIC_DTYPES
from ._helpers import (
    SEGMENT_SYNCS,
    SORTED,
    SPARSE,
    UNSORTED,
    emulator,
    on_the_emulator,
    same_as_cpu,
    sample,
)


def cpu_kernel_names() -> list[str]:
    return sorted(n for n, f in vars(cpu_segment).items() if not n.startswith("_")
                  and inspect.isfunction(f) and f.__module__ == cpu_segment.__name__)


# ------------------------------------------------------------------ registry and source
def test_every_cpu_segment_kernel_has_a_cuda_twin_with_its_signature() -> None:
    names = cpu_kernel_names()
    assert sorted(cuda_segment.__all__) == names
    for name in names:
        cpu_params = list(inspect.signature(getattr(cpu_segment, name)).parameters)
        cuda_params = list(inspect.signature(getattr(cuda_segment, name)).parameters)
        assert cuda_params == ["xp", *cpu_params], name


def test_get_kernel_routes_to_the_cuda_launcher_only_under_a_factory() -> None:
    assert _backend.get_kernel("segment", "sorted_sum") is cpu_segment.sorted_sum
    _backend.set_cuda_module_factory(Emulator())
    try:
        for name in cpu_kernel_names():
            assert _backend.get_kernel("segment", name).func is getattr(cuda_segment, name)
        with pytest.raises(NotImplementedError, match="nope: no cuda kernel in family 'segment'"):
            _backend.get_kernel("segment", "nope")
    finally:
        _backend.set_cuda_module_factory(None)


def test_name_expressions_are_unique_and_cover_every_dtype() -> None:
    names = cuda.name_expressions("segment")
    assert len(names) == len(set(names))
    for dtype in NUMERIC_DTYPES:
        c = _launch.DTYPE_TO_CTYPE[np.dtype(dtype)]
        for o in ("int", "long long"):
            assert f"sorted_sum<{c}, double, double, {o}>" in names
            assert f"sorted_extreme<{c}, {o}>" in names
            assert f"gather_reduce<{c}, double, double, {o}, int>" in names
        assert f"scatter_add<{c}, double, int>" in names


def test_unsupported_dtype_raises_not_implemented() -> None:
    values = np.zeros(3, np.float16)
    out = np.zeros(1, np.float16)
    with pytest.raises(NotImplementedError, match="sorted_extreme: no cuda kernel for float16"):
        cuda_segment.sorted_extreme(np, values, np.array([0, 3]), None, None, True,
                                    np.float16(-np.inf), 1, np.float16(0), out, None)


def test_source_has_no_includes_and_no_barriers() -> None:
    text = re.sub(r"//[^\n]*", "", cuda.source("segment"))  # code, not comments
    # The shared header's lane-group helpers keep their warp shuffles in the GPU branch
    # of an ARROW_SPARSE_EMULATOR variant; segment.cu has no variants and calls none.
    own = (Path(cuda.__file__).parent / "segment.cu").read_text(encoding="utf-8")
    assert cuda.EMULATOR_MACRO not in own
    text = re.sub(rf"#if defined\({cuda.EMULATOR_MACRO}\)(.*?)#else.*?#endif", r"\1", text,
                  flags=re.DOTALL)
    for banned in ("#include", "__syncthreads", "__shared__", "__shfl"):
        assert banned not in text


def test_every_segment_function_is_in_the_synchronisation_table() -> None:
    assert set(asp.segment.__all__) == {key.split(" ")[0] for key in SEGMENT_SYNCS}


# ------------------------------------------------------------------ the launch layer
@pytest.mark.parametrize("backend", ["cuda_emu", "cupy_emu"], indirect=True)
def test_grid_stride_loops_cover_more_work_than_threads(backend: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch, "MAX_BLOCKS", 1)  # 256 threads for thousands of elements
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 30, size=300)
    offsets = np.concatenate([[4], 4 + np.cumsum(lengths)])
    values = rng.standard_normal((int(offsets[-1]), 3))
    for fn in SORTED.values():
        same_as_cpu(backend, fn, values, offsets=offsets)
    ids = rng.integers(0, 40, size=len(values))
    for fn in UNSORTED.values():
        same_as_cpu(backend, fn, values, ids, 40, rtol=1e-12)
    table = rng.standard_normal((50, 3))
    bag_ids = rng.integers(0, 50, size=int(offsets[-1]))
    for fn in SPARSE.values():
        same_as_cpu(backend, fn, table, bag_ids, offsets=offsets)
    sorted_ids = np.sort(rng.integers(0, 700, size=2000))
    same_as_cpu(backend, asp.segment_sum, np.ones(2000), segment_ids=sorted_ids)


@on_the_emulator
def test_no_rows_and_no_values_launch_nothing(backend: str) -> None:
    for offsets in (np.array([0]), np.array([3, 3, 3])):
        for fn in SORTED.values():
            launches = same_as_cpu(backend, fn, np.zeros(3, np.int32), offsets=offsets)
            # no rows: nothing to launch; empty rows still get `empty` written
            assert len(launches) == (0 if len(offsets) == 1 else 1)


@on_the_emulator
def test_emulator_build_time_is_reported(backend: str) -> None:
    asp.segment_sum(np.ones(3), lengths=[3])
    assert "segment" in emulator(backend).modules
    print(f"cuda_emu build seconds this process: {sum(BUILD_SECONDS):.2f}")


# ------------------------------------------------------------------ on a real GPU
def cupy_or_skip() -> Any:
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no CUDA device")
    return cupy


@pytest.mark.gpu
def test_gpu_launchers_match_cpu(values_dtype: np.dtype, offsets_dtype: np.dtype) -> None:
    cupy = cupy_or_skip()
    values, offsets = sample(values_dtype, 3)
    offsets = offsets.astype(offsets_dtype)
    rows = len(offsets) - 1
    acc = np.dtype(np.float64) if values_dtype.kind == "f" else (
        np.dtype(np.uint64) if values_dtype == np.uint64 else np.dtype(np.int64))
    out_dtype = values_dtype if values_dtype.kind == "f" else acc
    expected = np.empty((rows, 3), out_dtype)
    cpu_segment.sorted_sum(values, offsets, None, None, None, None, False, acc.type(0), 0,
                           out_dtype.type(0), expected, None)
    out = cupy.empty((rows, 3), out_dtype)
    _backend.get_kernel("segment", "sorted_sum", cupy)(
        cupy.asarray(values), cupy.asarray(offsets), None, None, None, None, False,
        acc.type(0), 0, out_dtype.type(0), out, None)
    np.testing.assert_array_equal(cupy.asnumpy(out), expected)
    ids = np.random.default_rng(1).integers(0, 5, size=len(values))
    for is_max in (True, False):
        info = np.finfo if values_dtype.kind == "f" else np.iinfo
        init = values_dtype.type(info(values_dtype).min if is_max else info(values_dtype).max)
        exp_out = np.empty((5, 3), values_dtype)
        exp_counts = np.empty(5, np.int64)
        cpu_segment.scatter_extreme(values, ids, None, is_max, init, 1, values_dtype.type(0),
                                    exp_out, exp_counts)
        got_out = cupy.empty((5, 3), values_dtype)
        got_counts = cupy.empty(5, np.int64)
        _backend.get_kernel("segment", "scatter_extreme", cupy)(
            cupy.asarray(values), cupy.asarray(ids), None, is_max, init, 1,
            values_dtype.type(0), got_out, got_counts)
        cuda.check_errors("test")
        np.testing.assert_array_equal(cupy.asnumpy(got_out), exp_out)
        np.testing.assert_array_equal(cupy.asnumpy(got_counts), exp_counts)
