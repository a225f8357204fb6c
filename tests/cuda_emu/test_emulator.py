"""Tests of the emulator itself: thread indexing and order, atomics, argument checks, caching."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.cuda_emu.emu import (
    CXX,
    EmuFunction,
    Emulator,
    EmuModule,
    OrderDependenceError,
    build_library,
)

pytestmark = pytest.mark.skipif(shutil.which(CXX) is None, reason="needs a C++ compiler")

SOURCE = r"""
// Every thread records its global id; atomics build a histogram, a max, a min and a
// compare-and-swap counter.
template <typename T>
__global__ void probe(long long n, long long* ids, T* hist, int* hi, long long* lo,
                      unsigned int* cas, const T* __restrict__ w, T scale) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x
                  + (long long)blockIdx.y * gridDim.x * blockDim.x;
    if (t >= n) return;
    ids[t] = threadIdx.x + 1000LL * blockIdx.x + 1000000LL * blockIdx.y;
    atomicAdd(hist + (t % 4), __ldg(w + t) * scale);
    atomicMax(hi, (int)t);
    atomicMin(lo, (long long)-t);
    unsigned int old = *cas;
    while (atomicCAS(cas, old, old + 1) != old) old = *cas;
    atomicExch((unsigned int*)hi + 0, (unsigned int)*hi);
}
"""
NAMES = ["probe<float>", "probe<double>"]


@pytest.fixture(scope="module")
def module() -> EmuModule:
    return EmuModule(SOURCE, NAMES)


def run(module: EmuModule, name: str, dtype: type, n: int, grid: tuple[int, ...],
        block: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    ids = np.full(n, -1, np.int64)
    hist: np.ndarray = np.zeros(4, dtype)
    hi, lo, cas = np.zeros(1, np.int32), np.zeros(1, np.int64), np.zeros(1, np.uint32)
    w: np.ndarray = np.arange(n, dtype=dtype)
    module.get_function(name)(grid, block, (np.int64(n), ids, hist, hi, lo, cas, w,
                                            dtype(2)))
    return ids, hist, hi, lo, cas


@pytest.mark.parametrize(("name", "dtype"), [("probe<float>", np.float32),
                                             ("probe<double>", np.float64)])
def test_every_thread_of_every_block_runs_once(module: EmuModule, name: str, dtype: type) -> None:
    ids, hist, hi, lo, cas = run(module, name, dtype, 70, (3, 2), (16,))
    t = np.arange(70)
    x, b = t % 48, t // 48
    np.testing.assert_array_equal(ids, x % 16 + 1000 * (x // 16) + 1000000 * b)
    np.testing.assert_array_equal(hist, [2 * t[t % 4 == k].sum() for k in range(4)])
    assert (hi[0], lo[0], cas[0]) == (69, -69, 70)


def test_signature_is_read_from_the_kernel(module: EmuModule) -> None:
    fn = module.get_function("probe<float>")
    assert fn.signature == ["si8", "pi8", "pf4", "pi4", "pi8", "pu4", "Pf4", "sf4"]


@pytest.mark.parametrize(("args", "match"), [
    ((np.int64(1),), "takes 8 arguments, got 1"),
    ((1,) + (None,) * 7, "pass numpy arrays or numpy scalars with an explicit dtype, got int"),
    ((np.int32(1),) + (None,) * 7, "argument 0 is i8 but got a int32 scalar"),
    ((np.zeros(1, np.int64),) + (None,) * 7, r"argument 0 is a scalar \(si8\) but got an array"),
])
def test_argument_packing_is_checked(module: EmuModule, args: tuple[object, ...],
                                     match: str) -> None:
    with pytest.raises(TypeError, match=match):
        module.get_function("probe<float>")((1,), (1,), args)


def test_pointer_arguments_are_checked(module: EmuModule) -> None:
    fn = module.get_function("probe<float>")
    good = [np.int64(1), np.zeros(1, np.int64), np.zeros(4, np.float32), np.zeros(1, np.int32),
            np.zeros(1, np.int64), np.zeros(1, np.uint32), np.zeros(1, np.float32),
            np.float32(1)]
    bad = list(good)
    bad[2] = np.zeros(4, np.float64)
    with pytest.raises(TypeError, match="argument 2 points to f4 but got a float64 array"):
        fn((1,), (1,), bad)
    bad = list(good)
    bad[2] = np.zeros(8, np.float32)[::2]
    with pytest.raises(TypeError, match="argument 2: array is not C-contiguous"):
        fn((1,), (1,), bad)
    bad = list(good)
    bad[2] = np.zeros(4, np.float32)
    bad[2].flags.writeable = False
    with pytest.raises(TypeError, match="argument 2: the kernel may write it"):
        fn((1,), (1,), bad)
    bad = list(good)
    bad[6].flags.writeable = False  # const T* may be read-only
    fn((1,), (1,), bad)


@pytest.mark.parametrize(("grid", "block"), [((0,), (32,)), ((1,), (2048,)), ((1,), (0,)),
                                             ((1, 70000), (1,))])
def test_invalid_launch_configuration(module: EmuModule, grid: tuple[int, ...],
                                      block: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="invalid configuration argument"):
        run(module, "probe<float>", np.float32, 1, grid, block)


def test_unknown_name_expression(module: EmuModule) -> None:
    with pytest.raises(KeyError, match="'probe<int>' is not one of the module's name"):
        module.get_function("probe<int>")


def test_library_is_cached_by_content() -> None:
    first = build_library(SOURCE, NAMES)
    assert build_library(SOURCE, NAMES) == first
    assert build_library(SOURCE + "\n", NAMES) != first


def test_barriers_and_shared_memory_do_not_build() -> None:
    src = "__global__ void k(int* x) { __shared__ int s; s = 1; __syncthreads(); x[0] = s; }"
    with pytest.raises(RuntimeError, match="g\\+\\+ failed to build"):
        build_library(src, ["k"])


ORDER_SOURCE = r"""
// ticket[t]: when thread t ran (an atomic counter); last: a plain, racy "last writer".
__global__ void order_probe(long long n, unsigned int* counter, unsigned int* ticket,
                            long long* last) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    ticket[t] = atomicAdd(counter, 1u);
    *last = t;
}
// Float atomics: the sum of x depends on the order of the additions.
__global__ void float_sum(long long n, const float* x, float* out) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) atomicAdd(out, x[t]);
}
__global__ void variant(int* out) {
#if defined(ARROW_SPARSE_EMULATOR)
    out[0] = 1;
#else
    out[0] = 2;
#endif
}
"""
ORDER_NAMES = ["order_probe", "float_sum", "variant"]


def tickets(order: str, seed: int = 0, n: int = 40, block: int = 8) -> tuple[np.ndarray, int]:
    module = EmuModule(ORDER_SOURCE, ORDER_NAMES, Emulator(order=order, seed=seed))
    counter, ticket, last = np.zeros(1, np.uint32), np.zeros(n, np.uint32), np.zeros(1, np.int64)
    module.get_function("order_probe")((n // block,), (block,),
                                       (np.int64(n), counter, ticket, last))
    assert counter[0] == n
    return ticket, int(last[0])


def test_forward_order_is_block_major_x_fastest() -> None:
    ticket, last = tickets("forward")
    np.testing.assert_array_equal(ticket, np.arange(40))
    assert last == 39


def test_reverse_order_runs_the_last_block_and_thread_first() -> None:
    ticket, last = tickets("reverse")
    np.testing.assert_array_equal(ticket, np.arange(40)[::-1])
    assert last == 0


def test_shuffle_order_is_a_seeded_permutation_that_keeps_blocks_together() -> None:
    ticket, _ = tickets("shuffle", seed=1)
    assert sorted(ticket) == list(range(40))
    assert not np.array_equal(ticket, np.arange(40))
    by_block = ticket.reshape(5, 8)
    # A block's threads run one after another, and the blocks run in some order.
    assert all(np.ptp(row) == 7 for row in by_block)
    np.testing.assert_array_equal(tickets("shuffle", seed=1)[0], ticket)
    assert not np.array_equal(tickets("shuffle", seed=2)[0], ticket)


def test_a_race_is_reported_when_another_order_changes_the_result() -> None:
    module = EmuModule(ORDER_SOURCE, ORDER_NAMES, Emulator(check_orders=("reverse",)))
    args = (np.int64(16), np.zeros(1, np.uint32), np.zeros(16, np.uint32), np.zeros(1, np.int64))
    with pytest.raises(OrderDependenceError, match=r"order_probe: argument 2 depends on the "
                       r"thread order \(forward vs reverse\), first at element 0"):
        module.get_function("order_probe")((2,), (8,), args)


def test_float_atomics_may_differ_within_the_tolerance_and_are_counted() -> None:
    emulator = Emulator(check_orders=("reverse", "shuffle"))
    module = EmuModule(ORDER_SOURCE, ORDER_NAMES, emulator)
    x = np.array([1.0] + [2.0 ** -25] * 31, np.float32)  # absorbed one by one, not summed
    out = np.zeros(1, np.float32)
    module.get_function("float_sum")((4,), (8,), (np.int64(32), x, out))
    assert out[0] == 1.0  # the forward (kept) order
    assert emulator.order_effects == {"float_sum": 1}
    assert emulator.launches == ["float_sum"]
    strict = Emulator(check_orders=("reverse",), order_rtol=1e-9)
    with pytest.raises(OrderDependenceError, match="float_sum: argument 2"):
        EmuModule(ORDER_SOURCE, ORDER_NAMES, strict).get_function("float_sum")(
            (4,), (8,), (np.int64(32), x, np.zeros(1, np.float32)))


def test_writes_of_another_thread_during_a_launch_are_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Launches from a thread pool may write disjoint parts of one array (maplookup's
    # "concat" fills blocks of one matrix): checking the thread orders must neither undo
    # what another thread writes meanwhile nor report it as an order dependence.
    out = np.zeros(2, np.int32)
    run = EmuFunction._run
    calls: list[int] = []

    def another_thread_writes(self: EmuFunction, *args: object) -> None:
        run(self, *args)  # type: ignore[arg-type]
        if not calls:
            out[1] = 5  # its part of the array, while the first order's results are out
        calls.append(1)

    monkeypatch.setattr(EmuFunction, "_run", another_thread_writes)
    emulator = Emulator(check_orders=("reverse", "shuffle"))
    EmuModule(ORDER_SOURCE, ORDER_NAMES, emulator).get_function("variant")((1,), (1,), (out,))
    assert len(calls) == 3 and emulator.launches == ["variant"]
    assert out.tolist() == [1, 5]


def test_a_kernel_reading_what_it_writes_through_another_argument_runs_in_place() -> None:
    # out aliases x[0]: the reversed order adds the running sum to itself. The orders run
    # on the caller's arrays (not on private copies), so that this race is still found.
    x = np.array([0.0] + [1.0] * 31, np.float32)
    module = EmuModule(ORDER_SOURCE, ORDER_NAMES, Emulator(check_orders=("reverse",)))
    with pytest.raises(OrderDependenceError, match="float_sum: argument 2"):
        module.get_function("float_sum")((4,), (8,), (np.int64(32), x, x[:1]))


def test_the_emulator_builds_the_barrier_free_variant() -> None:
    out = np.zeros(1, np.int32)
    EmuModule(ORDER_SOURCE, ORDER_NAMES).get_function("variant")((1,), (1,), (out,))
    assert out[0] == 1


def test_unknown_order_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown thread order 'sideways'"):
        Emulator(check_orders=("sideways",))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_the_probe_kernel_also_builds_with_nvcc(tmp_path: Path) -> None:
    src = tmp_path / "probe.cu"
    src.write_text(SOURCE + "".join(f"static void* const r{i} = (void*)&{n};\n"
                                    for i, n in enumerate(NAMES)))
    subprocess.run(["nvcc", "--ptx", "-arch=sm_80", "-std=c++17", str(src), "-o",
                    str(tmp_path / "probe.ptx")], check=True, capture_output=True)
