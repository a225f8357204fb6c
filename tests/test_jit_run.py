"""Tests of the kernel threads (``arrow_sparse.kernels.cpu._jit.run``): how a parallel
kernel's range is split (and rows cut into parts of equal cost, ``balanced_bounds``),
that results do not depend on the thread count, and that the kernels compile once
whatever the input size (no parallel twin), and that their compile options are part of
their cache entries' key.

The cache placement of ``_jit`` is tested in ``test_jit.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse.kernels.cpu import _jit
from arrow_sparse.kernels.cpu import segment as segment_kernels
from arrow_sparse.kernels.cpu import sparse as sparse_kernels


def _record(calls: list[tuple[int, int, str]]) -> Any:
    def fn(tag: str, lo: int, hi: int) -> int:
        calls.append((lo, hi, threading.current_thread().name))
        return hi - lo
    return fn


@pytest.fixture
def threads() -> Any:
    before = numba.get_num_threads()
    yield before
    numba.set_num_threads(before)


def _balanced_bounds_oracle(offsets: list[int], start: int, stop: int, parts: int,
                            row_cost: int) -> list[int]:
    # Part p starts at the first row whose cost from ``start`` reaches p / parts of the total.
    def cost(k: int) -> int:
        return offsets[k] - offsets[start] + row_cost * (k - start)
    total = cost(stop)
    return [start, *(next(k for k in range(start, stop + 1) if cost(k) >= total * p // parts)
                     for p in range(1, parts)), stop]


@pytest.mark.parametrize("offsets_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("row_cost", [0, 1, 16])
@pytest.mark.parametrize("parts", [1, 2, 7, 64])
def test_balanced_bounds_cut_rows_by_cost(offsets_dtype: Any, row_cost: int,
                                          parts: int) -> None:
    # 50 short rows, 3 long ones, 40 empty ones; the offsets start above zero.
    offsets = np.cumsum([7] + [1] * 50 + [1000] * 3 + [0] * 40).astype(offsets_dtype)
    for start, stop in [(0, len(offsets) - 1), (2, len(offsets) - 1), (5, 60), (9, 9)]:
        bounds = _jit.balanced_bounds(offsets, start, stop, parts, row_cost)
        assert bounds.dtype == np.int64
        assert bounds.tolist() == _balanced_bounds_oracle(offsets.tolist(), start, stop,
                                                          parts, row_cost)
    halves = _jit.balanced_bounds(offsets, 2, len(offsets) - 1, 2, 16)
    assert 50 <= halves[1] <= 53  # the three long rows weigh more than the other ninety


def test_small_work_runs_once_on_the_calling_thread(threads: int) -> None:
    calls: list[tuple[int, int, str]] = []
    assert _jit.run(_record(calls), _jit.PARALLEL_THRESHOLD - 1, 1000, "x") == [1000]
    assert calls == [(0, 1000, threading.current_thread().name)]


def test_large_work_is_split_into_contiguous_parts(threads: int) -> None:
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one thread only")
    numba.set_num_threads(2)
    calls: list[tuple[int, int, str]] = []
    assert _jit.run(_record(calls), _jit.PARALLEL_THRESHOLD, 1001, "x") == [500, 501]
    assert sorted(c[:2] for c in calls) == [(0, 500), (500, 1001)]
    names = {lo: name for lo, _, name in calls}
    assert names[0] == threading.current_thread().name  # the caller takes the first part
    assert names[500].startswith("arrow-sparse-kernel")


def test_one_thread_or_one_item_runs_once(threads: int) -> None:
    calls: list[tuple[int, int, str]] = []
    numba.set_num_threads(1)
    assert _jit.run(_record(calls), 10**9, 8, "x") == [8]
    numba.set_num_threads(threads)
    assert _jit.run(_record(calls), 10**9, 1, "x") == [1]
    assert [c[:2] for c in calls] == [(0, 8), (0, 1)]


def test_a_failing_part_raises_after_every_part_ended(threads: int) -> None:
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one thread only")
    numba.set_num_threads(2)
    ended = []

    def fn(lo: int, hi: int) -> None:
        if lo:
            ended.append(lo)
            return
        raise ValueError("first part")

    with pytest.raises(ValueError, match="first part"):
        _jit.run(fn, 10**9, 4)
    assert ended == [2]


def test_pool_threads_and_many_callers_do_not_deadlock(threads: int) -> None:
    # Callers on their own threads share the kernel pool; a part run by the pool never
    # waits on the pool.
    numba.set_num_threads(threads)
    inner: list[list[int]] = []

    def nested(lo: int, hi: int) -> int:
        inner.append(_jit.run(lambda a, b: b - a, 10**9, 64))
        return hi - lo

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: _jit.run(nested, 10**9, 16), range(8)))
    assert all(sum(r) == 16 for r in results)
    assert all(sum(r) == 64 for r in inner)


def _as_list(x: Any) -> list[Any]:
    return x.to_pylist() if isinstance(x, pa.Array) else np.asarray(x).tolist()


@pytest.mark.parametrize("offsets_type", [pa.int32(), pa.int64()])
def test_results_do_not_depend_on_the_thread_count(threads: int,
                                                   offsets_type: pa.DataType) -> None:
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 30, 20_000)
    width = np.int32 if offsets_type == pa.int32() else np.int64
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(width)
    values = rng.standard_normal(int(offsets[-1])).astype(np.float32)
    make = pa.ListArray if offsets_type == pa.int32() else pa.LargeListArray
    arr = make.from_arrays(pa.array(offsets), pa.array(values))
    table = rng.standard_normal((500, 8)).astype(np.float32)
    ids = make.from_arrays(pa.array(offsets), pa.array(rng.integers(0, 500, len(values))))
    segment_ids = np.repeat(np.arange(len(lengths)), lengths)
    results = []
    for n in (1, threads):
        numba.set_num_threads(n)
        results.append([_as_list(r) for r in (
            asp.segment_sum(arr), asp.segment_max(arr), asp.embedding_bag(table, ids, mode="mean"),
            asp.pad_or_truncate(arr, 8), asp.hash_bucket(ids, 97),
            asp.jagged_to_padded_dense(values, [offsets], [8]))])
        results[-1].append(asp.unsorted_segment_sum(values, segment_ids, len(lengths)))
    *exact_one, unsorted_one = results[0]
    *exact_many, unsorted_many = results[1]
    assert exact_one == exact_many
    np.testing.assert_allclose(unsorted_one, unsorted_many, rtol=1e-6)


def test_a_large_input_compiles_no_second_kernel() -> None:
    # The parallel run is the serial kernel on parts of the range: one compiled
    # variant serves both sizes.
    kernel = segment_kernels._SUM_1D_FLOAT
    small = pa.array([[1.0, 2.0], [3.0]], pa.list_(pa.float64()))
    asp.segment_sum(small)
    before = len(kernel.signatures)
    big = pa.ListArray.from_arrays(pa.array(np.arange(0, 400_001, 4, dtype=np.int32)),
                                   pa.array(np.ones(400_000)))
    np.testing.assert_array_equal(np.asarray(asp.segment_sum(big)), 4.0)
    assert len(kernel.signatures) == before


def test_concurrent_parallel_kernels_needs_no_compile() -> None:
    assert _jit.concurrent_parallel_kernels()


def test_parallel_kernels_mark_their_array_arguments_noalias() -> None:
    # As Numba marks a prange loop body's: the loop of csr @ dense, which reads dense
    # and writes out, then vectorises without a run-time overlap test. The product
    # still matches numpy's.
    rng = np.random.default_rng(7)
    dense = rng.random((50, 16))
    coo = asp.SparseCOO(np.stack([rng.integers(0, 40, 300), rng.integers(0, 50, 300)]),
                        rng.random(300), (40, 50))
    np.testing.assert_allclose(coo.to_csr() @ dense, coo.to_dense() @ dense, rtol=1e-12)
    overloads = sparse_kernels._CSR_SPMM.overloads.values()
    assert overloads and all(cres.fndesc.noalias for cres in overloads)


KERNEL_SOURCE = '''
import sys
import numba
import numpy as np
from arrow_sparse.kernels.cpu import _jit


def copy_rows(src, out, lo, hi):
    for i in range(lo, hi):
        out[i] = src[i]


if sys.argv[1] == "plain":  # cached as Numba caches it, without the options in the key
    k = numba.njit(cache=True, nogil=True, error_model="numpy")(copy_rows)
else:
    k = _jit.parallel_kernel(copy_rows)
with numba.core.event.install_recorder("numba:compile") as compiles:
    k(np.arange(4.0), np.zeros(4), 0, 4)
cres = next(iter(k.overloads.values()))
print(len(compiles.buffer) // 2, cres.fndesc.noalias)  # a start and an end event
'''


def test_a_kernel_cached_with_other_options_is_compiled_again(tmp_path: Path) -> None:
    # Numba keys a cache entry by signature and bytecode, not by compile options: a
    # kernel cached before noalias was added must not be loaded as a parallel kernel.
    (tmp_path / "kernel_mod.py").write_text(KERNEL_SOURCE)
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(repo), str(tmp_path)])}

    def run(kind: str) -> str:
        proc = subprocess.run([sys.executable, str(tmp_path / "kernel_mod.py"), kind],
                              capture_output=True, text=True, env=env, timeout=300,
                              check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout.split()[-2:]

    assert run("plain") == ["1", "False"]     # compiled, cached without noalias
    assert run("plain") == ["0", "False"]     # loaded from the cache
    assert run("parallel") == ["1", "True"]   # not that entry: compiled with noalias
    assert run("parallel") == ["0", "True"]   # and its own entry is loaded
