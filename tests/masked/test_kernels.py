"""The CUDA masked-reduction kernels (``kernels/cuda/masked.cu``).

Every launcher runs on the CPU emulator (``tests/cuda_emu``) through the real dispatch
and launch code on random entries (cells in any order, masked-in and masked-out
entries, empty cells) for all ten value dtypes, and must match its CPU (Numba) twin:
exactly for integers, counts, extremes and positions; within ``rtol=1e-12`` for float
sums, products and the float64 sums of powers, squared deviations and exponentials,
which combine in atomic order. Every launch also runs in reversed and shuffled thread
order; integer results must not change at all. The searches over sorted keys
(``first_unstored``, ``sorted_member``) must match exactly on key sets with empty, full
and one-sided cells, sorted and unsorted queries, and also run on device arrays of the
stand-in CuPy without reading anything back. The public masked reductions over sparse
and jagged inputs (dense, COO and CSR masks) are compared the same way in test_masked.py.
``nvcc --ptx`` is in ``test_cuda_infra.py``; ``gpu``-marked tests run the launchers on
CuPy arrays where a device exists.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from arrow_sparse import _backend
from arrow_sparse.errors import (
    ArrowSparseIndexError,
    ArrowSparseValueError,
)
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cpu import masked as cpu_masked
from arrow_sparse.kernels.cuda import _launch
from arrow_sparse.kernels.cuda import masked as cuda_masked
from tests.conftest import NUMERIC_DTYPES, cupy_or_skip
from tests.cuda_emu import fake_cupy
from tests.cuda_emu.emu import Emulator

NUM_CELLS = 9  # the last two cells get no entries
SLICE = 12


def entries(dtype: np.dtype, n: int = 300, seed: int = 0, special: bool = False
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(cell, pos, vals, inm)`` of ``n`` entries in random order."""
    rng = np.random.default_rng(seed)
    cell = rng.integers(0, NUM_CELLS - 2, size=n).astype(np.int64)
    pos = rng.integers(0, SLICE, size=n).astype(np.int64)
    inm = rng.random(n) < 0.7
    if dtype.kind == "f":
        vals = (rng.standard_normal(n) * 3).astype(dtype)
        vals[::29] = 0
        if special:
            vals[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, np.nan]
    else:
        low = 0 if dtype.kind == "u" else -4
        vals = rng.integers(low, 5, size=n).astype(dtype)
    return cell, pos, vals, inm


def acc(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64 if dtype.kind == "f" else np.uint64 if dtype.kind == "u"
                    else np.int64)


def identity(dtype: np.dtype, is_max: bool) -> Any:
    if dtype.kind == "f":
        return dtype.type(-np.inf if is_max else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if is_max else info.max)


def calls(dtype: np.dtype, seed: int = 0, special: bool = False
          ) -> dict[str, tuple[tuple[Any, ...], np.ndarray]]:
    """Per kernel: its arguments before ``out``, and ``out``'s initial value."""
    cell, pos, vals, inm = entries(dtype, seed=seed, special=special)
    rng = np.random.default_rng(seed + 1)
    mean = rng.standard_normal(NUM_CELLS)
    best = np.full(NUM_CELLS, identity(dtype, True), dtype)
    cpu_masked.masked_max(cell, vals, inm, best)
    a = acc(dtype)
    no_zeros = np.where(vals == 0, dtype.type(1), vals)  # products that are not all 0
    return {
        "masked_count": ((cell, inm), np.zeros(NUM_CELLS, np.int64)),
        "masked_sum": ((cell, vals, inm), np.zeros(NUM_CELLS, a)),
        "masked_prod": ((cell, no_zeros, inm), np.ones(NUM_CELLS, a)),
        "masked_max": ((cell, vals, inm), np.full(NUM_CELLS, identity(dtype, True), dtype)),
        "masked_min": ((cell, vals, inm), np.full(NUM_CELLS, identity(dtype, False), dtype)),
        "masked_count_nonzero": ((cell, vals, inm), np.zeros(NUM_CELLS, np.int64)),
        "masked_sum_sq_dev": ((cell, vals, inm, mean), np.zeros(NUM_CELLS)),
        "masked_sum_exp": ((cell, vals, inm, mean), np.zeros(NUM_CELLS)),
        "masked_first_best": ((cell, pos, vals, inm, identity(dtype, True), best),
                              np.full(NUM_CELLS, SLICE, np.int64)),
        **{f"masked_sum_abs_pow:{p}": ((cell, vals, inm, p), np.zeros(NUM_CELLS))
           for p in (2.0, 1.0, 0.5, 3.0)},
    }


def run_both(emu: Emulator, key: str, args: tuple[Any, ...], out: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    name = key.split(":")[0]
    expected, got = out.copy(), out.copy()
    getattr(cpu_masked, name)(*args, expected)
    launcher = _backend.get_kernel("masked", name)
    assert launcher.func is getattr(cuda_masked, name)
    before = len(emu.launches)
    launcher(*args, got)
    cuda.check_errors(name)
    return expected, got, emu.launches[before:]


EXACT = ("masked_count", "masked_max", "masked_min", "masked_count_nonzero",
         "masked_first_best")


def assert_matches(key: str, expected: np.ndarray, got: np.ndarray) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if key.split(":")[0] in EXACT or got.dtype.kind != "f":
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-12, equal_nan=True)


# ------------------------------------------------------------------ registry and source
def test_name_expressions_cover_every_dtype_once() -> None:
    names = cuda.name_expressions("masked")
    # masked_max and masked_min share masked_extreme; the key searches are not templates
    assert len(names) == len(set(names)) == 1 + 8 * 10 + 3
    for dtype in NUMERIC_DTYPES:
        c = _launch.DTYPE_TO_CTYPE[np.dtype(dtype)]
        assert f"masked_first_best<{c}>" in names


def test_launchers_take_the_cpu_kernels_arguments() -> None:
    for name in cuda_masked.__all__:
        cpu_params = list(inspect.signature(getattr(cpu_masked, name)).parameters)
        cuda_params = list(inspect.signature(getattr(cuda_masked, name)).parameters)
        assert cuda_params == ["xp", *cpu_params], name


# ------------------------------------------------------------------ through the emulator
KEYS = sorted(calls(np.dtype(np.int8)))


@pytest.mark.parametrize("key", KEYS)
def test_kernels_match_cpu(cuda_emu: Emulator, key: str, values_dtype: np.dtype) -> None:
    args, out = calls(values_dtype)[key]
    expected, got, launches = run_both(cuda_emu, key, args, out)
    assert_matches(key, expected, got)
    assert len(launches) == 1
    if out.dtype.kind != "f":
        assert launches[0] not in cuda_emu.order_effects  # the same bits in every order


@pytest.mark.parametrize("key", KEYS)
def test_nan_inf_and_signed_zeros_match_cpu(cuda_emu: Emulator, key: str) -> None:
    for dtype in (np.dtype(np.float32), np.dtype(np.float64)):
        args, out = calls(dtype, seed=4, special=True)[key]
        expected, got, _ = run_both(cuda_emu, key, args, out)
        assert_matches(key, expected, got)


@pytest.mark.parametrize("key", KEYS)
def test_no_entries_launch_nothing(cuda_emu: Emulator, key: str) -> None:
    args, out = calls(np.dtype(np.float64))[key]
    empty = tuple(a[:0] if isinstance(a, np.ndarray) and a.shape == args[0].shape else a
                  for a in args)
    expected, got, launches = run_both(cuda_emu, key, empty, out)
    assert launches == []
    np.testing.assert_array_equal(got, expected)


def test_grid_stride_loops_cover_more_entries_than_threads(
        cuda_emu: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch, "MAX_BLOCKS", 1)  # 256 threads for 300 entries
    for key, (args, out) in calls(np.dtype(np.int32), seed=2).items():
        expected, got, _ = run_both(cuda_emu, key, args, out)
        assert_matches(key, expected, got)


def test_non_contiguous_out_and_narrow_extremes_are_written_back(cuda_emu: Emulator) -> None:
    cell, _, vals, inm = entries(np.dtype(np.int8), seed=3)
    wide = np.full((NUM_CELLS, 2), -128, np.int8)
    expected = wide.copy()
    cpu_masked.masked_max(cell, vals, inm, expected[:, 0])
    cuda_masked.masked_max(np, cell, vals, inm, wide[:, 0])
    np.testing.assert_array_equal(wide, expected)
    assert (wide[:, 1] == -128).all()


# ------------------------------------------------------------------ sorted-key searches
#: Per cell: the share of positions masked in and stored (a cell without keys, full
#: cells, cells with only one kind of key, position 0 missing or present).
CELL_PATTERNS = [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (0.5, 0.5), (0.3, 0.9), (1.0, 1.0),
                 (0.2, 0.0), (0.0, 0.3)]


def key_sets(seed: int, slice_size: int = SLICE) -> tuple[np.ndarray, np.ndarray]:
    """Sorted, distinct ``cell * slice_size + pos`` keys: (masked-in, stored)."""
    rng = np.random.default_rng(seed)
    mkeys, skeys = [], []
    for c, (pm, ps) in enumerate(CELL_PATTERNS * 2):
        pos = np.arange(slice_size)
        mkeys.append(c * slice_size + pos[rng.random(slice_size) < pm])
        skeys.append(c * slice_size + pos[rng.random(slice_size) < ps])
    return np.concatenate(mkeys).astype(np.int64), np.concatenate(skeys).astype(np.int64)


def run_search(emu: Emulator, name: str, args: tuple[Any, ...], written: tuple[int, ...]
               ) -> tuple[list[np.ndarray], list[np.ndarray], list[str]]:
    """The CPU kernel and the launcher on copies: (expected, got, launches)."""
    cpu_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    gpu_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    getattr(cpu_masked, name)(*cpu_args)
    launcher = _backend.get_kernel("masked", name)
    assert launcher.func is getattr(cuda_masked, name)
    before = len(emu.launches)
    launcher(*gpu_args)
    cuda.check_errors(name)
    return [cpu_args[i] for i in written], [gpu_args[i] for i in written], emu.launches[before:]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("slice_size", [1, 5, SLICE])
def test_first_unstored_matches_cpu(cuda_emu: Emulator, seed: int, slice_size: int) -> None:
    mkeys, skeys = key_sets(seed, slice_size)
    cells = 2 * len(CELL_PATTERNS) + 1  # the last cell has no keys
    rng = np.random.default_rng(seed)
    for first_zero, first_out in ((np.full(cells, slice_size), np.zeros(cells, np.int64)),
                                  (rng.integers(-5, 50, size=cells),
                                   rng.integers(-5, 50, size=cells))):
        for m, s in ((mkeys, skeys), (skeys[:0], skeys), (mkeys, skeys[:0]),
                     (mkeys[:0], skeys[:0])):
            expected, got, launches = run_search(
                cuda_emu, "first_unstored", (m, s, slice_size, first_zero, first_out), (3, 4))
            for g, e in zip(got, expected, strict=True):
                assert g.dtype == e.dtype
                np.testing.assert_array_equal(g, e)
            assert launches == (["first_unstored_candidates", "first_unstored_finish"]
                                if len(m) + len(s) else [])


def test_first_unstored_into_non_contiguous_outputs(cuda_emu: Emulator) -> None:
    mkeys, skeys = key_sets(3)
    cells = 2 * len(CELL_PATTERNS)
    wide = np.full((cells, 2), 99, np.int64)
    expected, got, _ = run_search(cuda_emu, "first_unstored",
                                  (mkeys, skeys, SLICE, wide[:, 0], wide[:, 1]), (3, 4))
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("key_dtype", [np.int32, np.int64, np.uint16])
def test_sorted_member_matches_cpu(cuda_emu: Emulator, key_dtype: Any) -> None:
    rng = np.random.default_rng(5)
    keys = np.unique(rng.integers(0, 300, size=120)).astype(key_dtype)
    queries = rng.integers(0, 320, size=200).astype(key_dtype)
    for q in (queries, np.sort(queries), queries[:0]):  # binary searches, merge, nothing
        for k in (keys, keys[:0], keys[:1]):
            for out in (np.zeros(len(q), bool), np.zeros(len(q), np.uint8),
                        np.zeros((len(q), 2), bool)[:, 1]):
                expected, got, launches = run_search(cuda_emu, "sorted_member", (k, q, out),
                                                     (2,))
                np.testing.assert_array_equal(got[0], expected[0])
                assert got[0].dtype == out.dtype
                assert launches == (["sorted_member"] if len(q) else [])


# ------------------------------------------------------------------ device checks and errors
SEARCH_ERRORS: dict[str, tuple[Callable[[], Any], type, str]] = {
    "unsorted mkeys": (lambda: cuda_masked.first_unstored(
        np, np.array([3, 1]), np.array([0, 4]), 4, np.zeros(2, np.int64), np.zeros(2, np.int64)),
        ArrowSparseValueError, r"^first_unstored: sorted keys must be strictly increasing "
        r"\(first at position 1; found by a device check\)$"),
    "repeated skeys": (lambda: cuda_masked.first_unstored(
        np, np.array([1, 3]), np.array([0, 4, 4]), 4, np.zeros(2, np.int64),
        np.zeros(2, np.int64)), ArrowSparseValueError,
        r"^first_unstored: sorted keys must be strictly increasing \(first at position 4;"),
    "key beyond the cells": (lambda: cuda_masked.first_unstored(
        np, np.array([1, 9]), np.array([-1, 4]), 4, np.zeros(2, np.int64),
        np.zeros(2, np.int64)), ArrowSparseIndexError,
        r"^first_unstored: keys out of range of the cells \(first at position 1;"),
    "unsorted keys": (lambda: cuda_masked.sorted_member(
        np, np.array([1, 5, 5, 2]), np.array([5, 0]), np.zeros(2, bool)), ArrowSparseValueError,
        r"^sorted_member: sorted keys must be strictly increasing \(first at position 2;"),
}


@pytest.mark.parametrize("case", list(SEARCH_ERRORS))
def test_key_searches_check_order_and_range_on_the_device(cuda_emu: Emulator,
                                                          case: str) -> None:
    call, error, message = SEARCH_ERRORS[case]
    call()
    func = "sorted_member" if case == "unsorted keys" else "first_unstored"
    with pytest.raises(error, match=message):
        cuda.check_errors(func)


def test_key_searches_host_checks() -> None:
    z = np.zeros(2, np.int64)
    with pytest.raises(NotImplementedError, match=r"^sorted_member: no cuda kernel for keys of "
                       r"dtype float64$"):
        cuda_masked.sorted_member(np, np.ones(2), z, np.zeros(2, bool))
    with pytest.raises(NotImplementedError, match=r"^first_unstored: no cuda kernel for skeys "
                       r"of dtype uint64$"):
        cuda_masked.first_unstored(np, z, z.astype(np.uint64), 4, z, z.copy())
    with pytest.raises(NotImplementedError, match=r"^first_unstored: no cuda kernel for "
                       r"first_out of dtype int32 \(want int64\)$"):
        cuda_masked.first_unstored(np, z, z, 4, z, z.astype(np.int32))
    with pytest.raises(ArrowSparseValueError, match=r"^first_unstored: first_out has shape "
                       r"\(3,\) but first_zero has \(2,\)$"):
        cuda_masked.first_unstored(np, z, z, 4, z, np.zeros(3, np.int64))
    with pytest.raises(ArrowSparseValueError, match=r"^first_unstored: slice_size must be "
                       r"positive when there are keys, got 0$"):
        cuda_masked.first_unstored(np, z, z, 0, z, z.copy())
    with pytest.raises(ArrowSparseValueError, match=r"^sorted_member: out must have shape "
                       r"\(2,\), got \(3,\)$"):
        cuda_masked.sorted_member(np, z, z, np.zeros(3, bool))


# ------------------------------------------------------------------ device checks and errors
def test_cell_ids_out_of_range_are_caught_by_the_device_check(cuda_emu: Emulator) -> None:
    cell = np.array([0, 1, 9, 2, -1])
    out = np.zeros(3)
    cuda_masked.masked_sum(np, cell, np.ones(5), np.ones(5, bool), out)
    with pytest.raises(ArrowSparseIndexError, match=r"^masked\.sum: cell ids out of range of "
                       r"the output \(first at position 2; found by a device check\)$"):
        cuda.check_errors("masked.sum")
    assert out.tolist() == [1.0, 1.0, 1.0]  # the other entries still count


def test_unsupported_dtypes_raise_not_implemented() -> None:
    cell, inm = np.zeros(2, np.int64), np.ones(2, bool)
    with pytest.raises(NotImplementedError, match="masked_sum: no cuda kernel for float16"):
        cuda_masked.masked_sum(np, cell, np.ones(2, np.float16), inm, np.zeros(1))
    with pytest.raises(NotImplementedError, match=r"masked_sum: no cuda kernel for out of "
                       r"dtype float32 \(want float64\)"):
        cuda_masked.masked_sum(np, cell, np.ones(2), inm, np.zeros(1, np.float32))
    with pytest.raises(NotImplementedError, match=r"masked_max: no cuda kernel for out of "
                       r"dtype int64 \(want int32\)"):
        cuda_masked.masked_max(np, cell, np.ones(2, np.int32), inm, np.zeros(1, np.int64))


def search_cases() -> dict[str, tuple[tuple[Any, ...], tuple[int, ...]]]:
    """Arguments of one call of each key search and the arrays it writes."""
    mkeys, skeys = key_sets(6)
    cells = 2 * len(CELL_PATTERNS)
    queries = np.random.default_rng(6).integers(0, cells * SLICE, size=90)
    return {"first_unstored": ((mkeys, skeys, SLICE, np.full(cells, SLICE),
                                np.zeros(cells, np.int64)), (3, 4)),
            "sorted_member": ((skeys, queries, np.zeros(90, bool)), (2,))}


@pytest.mark.parametrize("name", ["first_unstored", "sorted_member"])
def test_key_searches_on_device_arrays_read_nothing_back(name: str) -> None:
    args, written = search_cases()[name]
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    getattr(cpu_masked, name)(*expected)
    with fake_cupy.emulated_cupy(check_orders=("reverse",)) as module:
        device = [module.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        module.stats.reset()
        _backend.get_kernel("masked", name, module)(*device)
        assert module.stats.syncs == 0
        cuda.check_errors(name)
        for i in written:
            np.testing.assert_array_equal(device[i].get(), expected[i])


# ------------------------------------------------------------------ on a real GPU
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["first_unstored", "sorted_member"])
def test_gpu_key_searches_match_cpu(name: str) -> None:
    cupy = cupy_or_skip()
    args, written = search_cases()[name]
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    getattr(cpu_masked, name)(*expected)
    device = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    _backend.get_kernel("masked", name, cupy)(*device)
    cuda.check_errors(name)
    for i in written:
        np.testing.assert_array_equal(cupy.asnumpy(device[i]), expected[i])


@pytest.mark.gpu
@pytest.mark.parametrize("key", KEYS)
def test_gpu_launchers_match_cpu(key: str, values_dtype: np.dtype) -> None:
    cupy = cupy_or_skip()
    args, out = calls(values_dtype)[key]
    name = key.split(":")[0]
    expected = out.copy()
    getattr(cpu_masked, name)(*args, expected)
    dev = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
    got = cupy.asarray(out)
    _backend.get_kernel("masked", name, cupy)(*dev, got)
    cuda.check_errors(name)
    if name in ("masked_sum_exp", "masked_sum_abs_pow"):  # libdevice exp / pow: 2 ulp
        np.testing.assert_allclose(cupy.asnumpy(got), expected, rtol=1e-14)
    else:
        assert_matches(key, expected, cupy.asnumpy(got))
