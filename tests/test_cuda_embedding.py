"""The CUDA embedding optimizer kernels (``kernels/cuda/embedding.cu``).

Every launcher runs on the CPU emulator (``tests/cuda_emu``) through the real dispatch
and launch code, on random coalesced gradients of every dtype variant, and must match
its CPU (Numba) twin: bit for bit for ``sgd_rows``, ``adagrad_rows`` and ``ftrl_rows``
(the kernels repeat the CPU's operations in its types, without FMA contraction), and
closely for ``rowwise_adagrad_rows``, whose per-row sum of squares is a 32-lane
butterfly, not the CPU's left-to-right loop: float64 state within ``rtol=1e-14`` and
table within ``1e-13`` (absolute, on O(1) data: ``w - step * g`` may cancel), float32
within one rounding (``2e-7``). Every launch also runs in reversed and
shuffled thread order and must give the same bits. ``nvcc --ptx`` of both variants is
in ``test_cuda_infra.py``; ``gpu``-marked tests run the launchers on CuPy arrays where a
device exists.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from arrow_sparse import _backend
from arrow_sparse.errors import ArrowSparseIndexError, ArrowSparseValueError
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cpu import embedding as cpu_embedding
from arrow_sparse.kernels.cuda import _launch
from arrow_sparse.kernels.cuda import embedding as cuda_embedding
from tests.cuda_emu.emu import Emulator, emulated

FLOATS = [np.dtype(np.float32), np.dtype(np.float64)]
KERNELS = ("sgd_rows", "adagrad_rows", "rowwise_adagrad_rows", "ftrl_rows")
#: (gradient rows U, dim D): empty gradient, empty rows, one element, fewer and more
#: columns than the 32 lanes of rowwise Adagrad, a multiple of 32.
SHAPES = [(0, 4), (3, 0), (1, 1), (5, 3), (7, 40), (4, 64)]
HYPER = {"sgd_rows": (0.1,), "adagrad_rows": (0.1, 1e-10), "rowwise_adagrad_rows": (0.1, 1e-10),
         "ftrl_rows": (0.05, 1.0, 0.5, 0.01)}


@pytest.fixture
def cuda_emu() -> Iterator[Emulator]:
    """The emulator, every launch also run in reversed and shuffled thread order."""
    with emulated(check_orders=("reverse", "shuffle")) as emulator:
        yield emulator


def variants(kernel: str) -> list[tuple[np.dtype, np.dtype]]:
    """(table dtype, state dtype) pairs the kernel is instantiated for."""
    if kernel in ("adagrad_rows", "rowwise_adagrad_rows"):
        return [(t, s) for t in FLOATS for s in FLOATS]
    return [(t, t) for t in FLOATS]


CASES = [(k, t, s) for k in KERNELS for t, s in variants(k)]
CASE_IDS = [f"{k}-{t.name}-{s.name}" for k, t, s in CASES]


def problem(kernel: str, tdtype: np.dtype, sdtype: np.dtype, num_grad: int, dim: int,
            seed: int = 0) -> tuple[Any, ...]:
    """CPU-kernel arguments of one optimizer step on a table of ``2 U + 3`` rows."""
    rng = np.random.default_rng(seed)
    num_rows = 2 * num_grad + 3
    table = rng.standard_normal((num_rows, dim)).astype(tdtype)
    rows = np.sort(rng.choice(num_rows, size=num_grad, replace=False)).astype(np.int64)
    values = rng.standard_normal((num_grad, dim)).astype(tdtype)
    values[:, ::5] = 0  # zero gradients: Adagrad's 0 / (sqrt(0) + eps), FTRL's sign(0)
    if kernel == "sgd_rows":
        return (table, rows, values, *HYPER[kernel])
    if kernel == "ftrl_rows":
        z = rng.standard_normal((num_rows, dim)).astype(tdtype)
        n = np.abs(rng.standard_normal((num_rows, dim))).astype(tdtype)
        n[::3] = 0  # fresh accumulators
        return (table, z, n, rows, values, *HYPER[kernel])
    shape = (num_rows, dim) if kernel == "adagrad_rows" else (num_rows,)
    state = np.abs(rng.standard_normal(shape)).astype(sdtype)
    state[::3] = 0
    return (table, state, rows, values, *HYPER[kernel])


def copies(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def written(kernel: str, args: tuple[Any, ...]) -> list[np.ndarray]:
    """The arrays a step updates in place."""
    return list(args[:3] if kernel == "ftrl_rows" else args[:1] if kernel == "sgd_rows"
                else args[:2])


def run_both(emu: Emulator, kernel: str, args: tuple[Any, ...]
             ) -> tuple[list[np.ndarray], list[np.ndarray], list[str]]:
    """The CPU kernel and the CUDA launcher (on the emulator) on copies of ``args``."""
    expected, got = copies(args), copies(args)
    getattr(cpu_embedding, kernel)(*expected)
    launcher = _backend.get_kernel("embedding", kernel)
    assert launcher is getattr(cuda_embedding, kernel)
    before = len(emu.launches)
    launcher(*got)
    cuda.check_errors(kernel)
    return written(kernel, expected), written(kernel, got), emu.launches[before:]


def assert_matches(kernel: str, expected: list[np.ndarray], got: list[np.ndarray]) -> None:
    for e, g in zip(expected, got, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        if kernel == "rowwise_adagrad_rows":
            rtol, atol = (2e-7, 2e-7) if g.dtype == np.float32 else (1e-14, 1e-13)
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g.view(f"u{g.itemsize}"), e.view(f"u{e.itemsize}"))


# ------------------------------------------------------------------ registry and source
def test_name_expressions_cover_every_float_variant_once() -> None:
    names = cuda.name_expressions("embedding")
    assert len(names) == len(set(names)) == 2 + 4 + 4 + 2
    for kernel, tdtype, sdtype in CASES:
        t, s = (_launch.DTYPE_TO_CTYPE[d] for d in (tdtype, sdtype))
        assert (f"{kernel}<{t}, {s}>" if "adagrad" in kernel else f"{kernel}<{t}>") in names


def test_launchers_take_the_cpu_kernels_arguments() -> None:
    for kernel in KERNELS:
        cpu_params = list(inspect.signature(getattr(cpu_embedding, kernel)).parameters)
        cuda_params = list(inspect.signature(getattr(cuda_embedding, kernel)).parameters)
        assert cuda_params == cpu_params, kernel


# ------------------------------------------------------------------ through the emulator
@pytest.mark.parametrize(("num_grad", "dim"), SHAPES, ids=[f"{u}x{d}" for u, d in SHAPES])
@pytest.mark.parametrize(("kernel", "tdtype", "sdtype"), CASES, ids=CASE_IDS)
def test_optimizer_steps_match_cpu(cuda_emu: Emulator, kernel: str, tdtype: np.dtype,
                                   sdtype: np.dtype, num_grad: int, dim: int) -> None:
    args = problem(kernel, tdtype, sdtype, num_grad, dim)
    expected, got, launches = run_both(cuda_emu, kernel, args)
    assert_matches(kernel, expected, got)
    work = num_grad * (max(dim, 1) if kernel == "rowwise_adagrad_rows" else dim)
    t, s = _launch.DTYPE_TO_CTYPE[tdtype], _launch.DTYPE_TO_CTYPE[sdtype]
    name = f"{kernel}<{t}, {s}>" if "adagrad" in kernel else f"{kernel}<{t}>"
    assert launches == ([name] if work else [])
    assert cuda_emu.order_effects == {}  # no atomics: the same bits in every order


@pytest.mark.parametrize(("kernel", "tdtype", "sdtype"), CASES, ids=CASE_IDS)
def test_grid_stride_loops_cover_more_work_than_threads(
        cuda_emu: Emulator, monkeypatch: pytest.MonkeyPatch, kernel: str, tdtype: np.dtype,
        sdtype: np.dtype) -> None:
    monkeypatch.setattr(_launch, "MAX_BLOCKS", 1)  # 256 threads, 8 lane groups
    args = problem(kernel, tdtype, sdtype, 50, 37, seed=1)
    expected, got, _ = run_both(cuda_emu, kernel, args)
    assert_matches(kernel, expected, got)


def test_special_values_match_cpu(cuda_emu: Emulator) -> None:
    for kernel, tdtype, sdtype in CASES:
        table, *rest = problem(kernel, tdtype, sdtype, 4, 6, seed=2)
        grad = rest[-len(HYPER[kernel]) - 1]
        grad[0, :4] = [np.inf, -np.inf, np.nan, -0.0]
        table[:, 4] = -0.0
        expected, got, _ = run_both(cuda_emu, kernel, (table, *rest))
        for e, g in zip(expected, got, strict=True):
            np.testing.assert_array_equal(np.isnan(g), np.isnan(e))
            np.testing.assert_array_equal(np.signbit(g), np.signbit(e))
        if kernel != "rowwise_adagrad_rows":
            assert_matches(kernel, expected, got)


def test_non_contiguous_table_and_state_are_updated_in_place(cuda_emu: Emulator) -> None:
    table, state, rows, values, lr, eps = problem("adagrad_rows", FLOATS[0], FLOATS[1], 4, 3)
    wide_t, wide_s = np.zeros((table.shape[0], 6), table.dtype), np.zeros((state.shape[0], 6))
    wide_t[:, ::2], wide_s[:, ::2] = table, state
    expected = (wide_t.copy(), wide_s.copy())
    cpu_embedding.adagrad_rows(expected[0][:, ::2], expected[1][:, ::2], rows, values, lr, eps)
    cuda_embedding.adagrad_rows(wide_t[:, ::2], wide_s[:, ::2], rows, values, lr, eps)
    np.testing.assert_array_equal(wide_t, expected[0])
    np.testing.assert_array_equal(wide_s, expected[1])


def test_rows_and_values_of_other_dtypes_are_converted(cuda_emu: Emulator) -> None:
    table, rows, values, lr = problem("sgd_rows", FLOATS[0], FLOATS[0], 5, 3)
    expected = table.copy()
    cpu_embedding.sgd_rows(expected, rows, values, lr)
    cuda_embedding.sgd_rows(table, rows.astype(np.int32), values.astype(np.float64), lr)
    np.testing.assert_array_equal(table, expected)


# ------------------------------------------------------------------ device checks
@pytest.mark.parametrize(("rows", "error", "match"), [
    ([0, 9, 2], ArrowSparseIndexError,
     r"^sgd: grad\.rows out of range of the table \(first at position 1; found by a device "
     r"check\)$"),
    ([0, -1], ArrowSparseIndexError, r"out of range of the table \(first at position 1;"),
    ([0, 3, 3], ArrowSparseValueError,
     r"^sgd: grad\.rows not strictly increasing \(coalesce the gradient first\) \(first at "
     r"position 2; found by a device check\)$"),
    ([0, 4, 12, 1], ArrowSparseIndexError, r"out of range of the table \(first at position 2"),
])
def test_bad_rows_are_caught_by_the_device_check(cuda_emu: Emulator, rows: list[int],
                                                 error: type, match: str) -> None:
    table = np.zeros((5, 3), np.float32)
    values = np.ones((len(rows), 3), np.float32)
    cuda_embedding.sgd_rows(table, np.array(rows), values, 1.0)
    with pytest.raises(error, match=match):
        cuda.check_errors("sgd")
    cuda.check_errors("sgd")  # the word was reset
    assert table[0].tolist() == [-1.0, -1.0, -1.0]  # good rows are still updated


def test_rowwise_adagrad_checks_rows_too(cuda_emu: Emulator) -> None:
    state = np.zeros(4)
    cuda_embedding.rowwise_adagrad_rows(np.zeros((4, 2)), state, np.array([1, 7]),
                                        np.ones((2, 2)), 0.1, 1e-10)
    with pytest.raises(ArrowSparseIndexError, match="first at position 1"):
        cuda.check_errors("rowwise_adagrad")
    assert state.tolist() == [0.0, 1.0, 0.0, 0.0]


def test_unsupported_dtypes_raise_not_implemented() -> None:
    table = np.zeros((2, 2), np.float16)
    with pytest.raises(NotImplementedError, match="sgd_rows: no cuda kernel for float16"):
        cuda_embedding.sgd_rows(table, np.array([0]), np.ones((1, 2), np.float16), 0.1)
    t32 = np.zeros((2, 2), np.float32)
    with pytest.raises(NotImplementedError, match="ftrl_rows: no cuda kernel for a float32 "
                       "table with float64 z and float32 n"):
        cuda_embedding.ftrl_rows(t32, np.zeros((2, 2)), t32.copy(), np.array([0]),
                                 np.ones((1, 2), np.float32), 0.1, 1.0, 0.0, 0.0)


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
@pytest.mark.parametrize(("kernel", "tdtype", "sdtype"), CASES, ids=CASE_IDS)
def test_gpu_launchers_match_cpu(kernel: str, tdtype: np.dtype, sdtype: np.dtype) -> None:
    cupy = cupy_or_skip()
    args = problem(kernel, tdtype, sdtype, 300, 72, seed=3)
    expected = copies(args)
    getattr(cpu_embedding, kernel)(*expected)
    on_device = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
    _backend.get_kernel("embedding", kernel, cupy)(*on_device)
    cuda.check_errors(kernel)
    got = [cupy.asnumpy(a) for a in written(kernel, on_device)]
    # The shuffle variant of rowwise Adagrad runs on the GPU: the butterfly order again.
    assert_matches(kernel, written(kernel, expected), got)
