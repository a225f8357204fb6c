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

from ..conftest import NUMERIC_DTYPES, cupy_or_skip
from ._helpers import (
    SEGMENT_SYNCS,
    SORTED,
    SPARSE,
    UNSORTED,
    emulator,
    kernels,
    on_devices,
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


def test_source_has_no_includes_and_barriers_only_in_the_gpu_variant() -> None:
    text = re.sub(r"//[^\n]*", "", cuda.source("segment"))  # code, not comments
    # scatter_add's warp aggregation (__match_any_sync, shuffles) sits in the GPU branch
    # of an ARROW_SPARSE_EMULATOR variant, as the header's lane-group helpers do; the
    # barrier-free text the emulator runs has neither shuffles nor barriers.
    assert "__match_any_sync" in text
    text = re.sub(rf"#if defined\({cuda.EMULATOR_MACRO}\)(.*?)#else.*?#endif", r"\1", text,
                  flags=re.DOTALL)
    for banned in ("#include", "__syncthreads", "__shared__", "__shfl", "__match_any"):
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


# ------------------------------------------------------------------ skew (issue 13)
# Work is split by elements, not by bags or rows: a bag of 2,000 ids among bags of 1 (or
# a 2-D row as long) is reduced in pieces of _launch.PIECE ids whose partials are added
# in order, and a hot segment id's atomics are aggregated per warp on a GPU. Against the
# CPU: integers and integer-valued floats exactly (their sums do not depend on the
# order), other floats within one rounding of the output after float64 re-association
# (``rounded``), maxima exactly.
def heavy_tailed(rng: np.random.Generator, num: int = 300, long: int = 2000) -> np.ndarray:
    """Lengths: bags of 1 with three of ``long`` (first, middle, last)."""
    lengths = np.ones(num, np.int64)
    lengths[[0, num // 2, num - 1]] = long
    return lengths


def skew_values(dtype: Any, shape: Any, rng: np.random.Generator, whole: bool) -> np.ndarray:
    """Random values of ``dtype``: small integers, or floats (integer-valued if ``whole``)."""
    if np.dtype(dtype).kind in "iu" or whole:
        lo = 0 if np.dtype(dtype).kind == "u" else -9
        return rng.integers(lo, 10, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@on_devices
@pytest.mark.parametrize("dtype", [np.int32, np.uint64, np.float32, np.float64])
@pytest.mark.parametrize("ids_kind", ["zipf", "all equal"])
def test_embedding_bag_of_heavy_tailed_bags_issue_13(backend: str, dtype: Any,
                                                    ids_kind: str) -> None:
    rng = np.random.default_rng(13)
    offsets = np.r_[0, np.cumsum(heavy_tailed(rng))]
    n = int(offsets[-1])
    ids = (np.minimum(rng.zipf(1.2, n) - 1, 49) if ids_kind == "zipf"
           else np.full(n, 7)).astype(np.int64)
    weights = rng.standard_normal(n)
    for whole in (True, False):
        if whole and np.dtype(dtype).kind != "f":
            continue
        table = skew_values(dtype, (50, 4), rng, whole)
        exact = whole or np.dtype(dtype).kind != "f"
        for mode in ("sum", "mean", "max"):
            launches = same_as_cpu(backend, asp.embedding_bag, table, ids, offsets=offsets,
                                   mode=mode, rounded=not exact or mode == "mean")
            if backend == "cuda_emu":
                assert kernels(launches)[-2:] == ["gather_reduce_pieces", "gather_reduce"]
        same_as_cpu(backend, asp.embedding_bag, table, ids, offsets=offsets,
                    per_sample_weights=weights, rounded=True)


@on_devices
@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float64])
def test_segment_sum_of_long_2d_rows_issue_13(backend: str, dtype: Any) -> None:
    rng = np.random.default_rng(14)
    lengths = heavy_tailed(rng)
    values = skew_values(dtype, (int(lengths.sum()), 3), rng, whole=False)
    exact = np.dtype(dtype).kind != "f"
    for fn in (asp.segment_sum, asp.segment_mean):
        same_as_cpu(backend, fn, values, lengths=lengths,
                    rounded=not exact or fn is asp.segment_mean)
    weights = rng.standard_normal(len(values))
    same_as_cpu(backend, asp.segment_weighted_sum, values, weights, lengths=lengths,
                rounded=True)
    whole = skew_values(np.float64, values.shape, rng, whole=True)  # exact in any order
    same_as_cpu(backend, asp.segment_sum, whole, lengths=lengths)


@on_devices
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
@pytest.mark.parametrize("width", [None, 3], ids=["1d", "2d"])
def test_unsorted_segment_sum_of_hot_ids_issue_13(backend: str, dtype: Any,
                                                  width: int | None) -> None:
    rng = np.random.default_rng(15)
    n = 10_000
    shape = n if width is None else (n, width)
    values = skew_values(dtype, shape, rng, whole=False)
    exact = np.dtype(dtype).kind != "f"
    for ids in (np.minimum(rng.zipf(1.2, n) - 1, 99), np.full(n, 42)):
        for fn in (asp.unsorted_segment_sum, asp.unsorted_segment_mean):
            same_as_cpu(backend, fn, values, ids, 100,
                        rtol=0.0 if exact and fn is asp.unsorted_segment_sum else 1e-12)


@on_the_emulator
def test_pieces_are_the_cpus_sums_up_to_the_piece_length(
        backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A bag of PIECE ids is one piece: the CPU's order, exactly, even for random floats;
    # one id more and it is two pieces (the sum of two sums: exact on integer values).
    monkeypatch.setattr(_launch, "PIECE", 8)
    rng = np.random.default_rng(16)
    table = rng.standard_normal((20, 70))  # wide: the CPU's blocks of 4 ids
    for length in (1, 7, 8):
        ids = rng.integers(0, 20, size=2 * length)
        same_as_cpu(backend, asp.embedding_bag, table, ids, offsets=[0, length, 2 * length])
        same_as_cpu(backend, asp.segment_sum, table[ids], lengths=[length, length])
    whole = rng.integers(-9, 10, size=(20, 70)).astype(np.float64)
    for length in (9, 17, 100):
        ids = rng.integers(0, 20, size=length + 3)
        offsets = [0, 1, length + 1, length + 3]
        for mode in ("sum", "mean", "max"):
            same_as_cpu(backend, asp.embedding_bag, whole, ids, offsets=offsets, mode=mode)
        same_as_cpu(backend, asp.segment_sum, whole[ids], offsets=offsets)


# ------------------------------------------------------------------ on a real GPU
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
