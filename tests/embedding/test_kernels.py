"""Tests of the embedding kernels: ``kernels/cpu/embedding.py`` and its CUDA twin
``kernels/cuda/embedding.py`` (``embedding.cu``), called directly.

Every CUDA launcher runs on the CPU emulator (``tests/cuda_emu``) through the real dispatch
and launch code, on random inputs of every dtype variant (empty ones, duplicate ids,
NaN, infinities and signed zeros included), and must match its CPU (Numba) twin:

* bit for bit: ``lookup_rows``, ``sort_ids``, ``coalesce_sorted`` (the same additions
  in the same order and types), ``sgd_rows``, ``adagrad_rows`` and ``ftrl_rows`` (the
  kernels repeat the CPU's operations in its types, without FMA contraction);
* closely where a sum over the feature axis is a 32-lane butterfly, not the CPU's
  left-to-right loop: ``rowwise_adagrad_rows`` (float64 state within ``rtol=1e-14`` and
  table within ``1e-13``, absolute, on O(1) data: ``w - step * g`` may cancel; float32
  within one rounding, ``2e-7``) and ``weights_grad`` (within ``2 D eps`` of the sum of
  the magnitudes of the D products, plus one rounding of a float32 result; exact on
  integer-valued data).

Every launch also runs in reversed and shuffled thread order and must give the same
bits (the ``cuda_emu`` fixture, ``conftest.py``). Each kernel's tests sit together: its
match with the CPU, its grid-stride loop, its device checks (the error word) and its host
checks. The public functions through the emulator are in the modules' own test files;
``nvcc --ptx`` of both variants is in ``test_cuda_infra.py``; ``gpu``-marked tests run
the launchers on CuPy arrays where a device exists.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse import _backend
from arrow_sparse.errors import ArrowSparseError, ArrowSparseIndexError, ArrowSparseValueError
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cpu import embedding as cpu_embedding
from arrow_sparse.kernels.cuda import _launch
from arrow_sparse.kernels.cuda import embedding as cuda_embedding
from tests.cuda_emu.emu import Emulator, emulated

from .._matrix import pairwise_parametrize
from ..conftest import NUMERIC_DTYPES, cupy_or_skip
from ._helpers import launched, same_bits
from ._reference import ref_bag_ids, ref_piecewise_sum

FLOATS = [np.dtype(np.float32), np.dtype(np.float64)]
IDS = [np.dtype(np.int32), np.dtype(np.int64)]
KERNELS = ("sgd_rows", "adagrad_rows", "rowwise_adagrad_rows", "ftrl_rows")
LAUNCHERS = ("lookup_rows", "bag_max", "sort_ids", "coalesce_sorted", "coalesce_max",
             "weights_grad", *KERNELS)
#: (gradient rows U, dim D): empty gradient, empty rows, one element, fewer and more
#: columns than the 32 lanes of rowwise Adagrad, a multiple of 32.
SHAPES = [(0, 4), (3, 0), (1, 1), (5, 3), (7, 40), (4, 64)]
HYPER = {"sgd_rows": (0.1,), "adagrad_rows": (0.1, 1e-10), "rowwise_adagrad_rows": (0.1, 1e-10),
         "ftrl_rows": (0.05, 1.0, 0.5, 0.01)}


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
    assert launcher.func is getattr(cuda_embedding, kernel)
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


def random_table(dtype: np.dtype, rows: int, dim: int, rng: np.random.Generator,
                 specials: bool = True) -> np.ndarray:
    """Random rows of ``dtype``: small integers, or normal floats with NaN, inf and -0.0."""
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -50
        return rng.integers(lo, 100, size=(rows, dim)).astype(dtype)
    table = rng.standard_normal((rows, dim)).astype(dtype)
    if specials and rows and dim >= 4:
        table[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    return table



def dot_tolerance(table: np.ndarray, ids: np.ndarray, offsets: np.ndarray, grad: np.ndarray,
                  mean: bool, expected: np.ndarray) -> np.ndarray:
    """How far a butterfly sum of a value's D products may be from the CPU's loop.

    Both orders are within ``(D - 1) eps`` of the exact sum, relative to the sum of the
    products' magnitudes; a float32 result may then round to a neighbour.
    """
    tol = np.zeros(len(ids))
    dim = table.shape[1]
    for b in range(len(offsets) - 1):
        lo, hi = offsets[b], offsets[b + 1]
        mags = np.abs(table[ids[lo:hi]].astype(np.float64) * grad[b].astype(np.float64))
        size = mags.sum(axis=1) / (hi - lo if mean and hi > lo else 1)
        tol[lo:hi] = 2 * dim * np.finfo(np.float64).eps * size
    if expected.dtype == np.float32:
        tol += np.spacing(np.abs(expected).astype(np.float32)).astype(np.float64)
    return tol



def bag_case(seed: int) -> dict[str, Any]:
    """Random bags: sliced offsets, masks and list weights in some, bad ids in others."""
    rng = np.random.default_rng(seed)
    num_bags = int(rng.integers(0, 40))
    lengths = rng.integers(0, 6, num_bags)
    start = int(rng.integers(0, 3))
    offsets = np.r_[start, start + np.cumsum(lengths)].astype(np.int64)
    n = int(offsets[-1]) + int(rng.integers(0, 3))
    bound = 20
    ids = rng.integers(0, bound + (seed % 3 == 0), n)  # one seed in three: ids == bound
    case: dict[str, Any] = {"ids": ids, "offsets": offsets, "valid": None, "vmask": None,
                            "woffsets": None, "wvalid": None, "bound": bound}
    if seed % 2:
        case["valid"] = rng.random(num_bags) < 0.8
        case["vmask"] = rng.random(n) < 0.8
    if seed % 4 >= 2:
        wlen = lengths.copy()
        if seed % 8 >= 6 and num_bags:
            wlen[rng.integers(0, num_bags)] += 1  # one bag of another length
        wstart = int(rng.integers(0, 4))
        case["woffsets"] = np.r_[wstart, wstart + np.cumsum(wlen)].astype(np.int64)
        case["wvalid"] = rng.random(int(case["woffsets"][-1]) + 1) < 0.9
    return case



def run_heads(ids: list[int], order: list[int]) -> list[int]:
    head = np.full(len(ids), 9, np.uint8)
    cuda.load_module("embedding").get_function("run_heads<long long>")(
        (1,), (256,), (np.array(ids, np.int64), np.array(order, np.int64), head,
                       np.int64(len(ids)), cuda.error_buffer()))
    return head.tolist()




# ------------------------------------------------------------------ registry and source
def test_name_expressions_cover_every_variant_once() -> None:
    names = cuda.name_expressions("embedding")
    # lookup_rows, run_heads, compact_runs, bag_ids, bag_max, coalesce_max,
    # coalesce_sorted, coalesce_pieces, train_pieces, train_rows, weights_grad and the four
    # optimizer steps
    assert len(names) == len(set(names)) == (20 + 2 + 2 + 2 + 20 + 2 + 4 + 4 + 4 + 16 + 80
                                             + 2 + 4 + 4 + 2)
    assert {"bag_max<unsigned char, int>", "bag_max<double, long long>",
            "coalesce_max<float>"} <= set(names)
    assert {"bag_ids<int>", "bag_ids<long long>"} <= set(names)  # device only
    assert "train_rows<float, double, float, double>" in names  # device only
    assert cuda_embedding.DEVICE_ONLY == ("bag_ids", "train_rows")
    assert not set(cuda_embedding.DEVICE_ONLY) & set(cuda_embedding.__all__)
    for kernel, tdtype, sdtype in CASES:
        t, s = (_launch.DTYPE_TO_CTYPE[d] for d in (tdtype, sdtype))
        assert (f"{kernel}<{t}, {s}>" if "adagrad" in kernel else f"{kernel}<{t}>") in names
    assert "lookup_rows<unsigned short, int>" in names
    assert "weights_grad<unsigned short, float, double, float, long long>" in names
    assert "weights_grad<short, float, float, double, int>" in names


def test_launchers_take_the_cpu_kernels_arguments() -> None:
    for kernel in LAUNCHERS:
        cpu_params = list(inspect.signature(getattr(cpu_embedding, kernel)).parameters)
        cuda_params = list(inspect.signature(getattr(cuda_embedding, kernel)).parameters)
        assert cuda_params == ["xp", *cpu_params], kernel


@numba.njit
def _numba_product(x: np.ndarray, g: np.ndarray) -> Any:  # pragma: no cover (compiled)
    return x[0] * g[0]


@pytest.mark.parametrize("gdtype", FLOATS, ids=str)
def test_product_dtypes_are_numbas(gdtype: np.dtype) -> None:
    """weights_grad and an integer scale round ``x * grad`` in Numba's type of it."""
    for dtype in NUMERIC_DTYPES:
        _numba_product(np.ones(1, dtype), np.ones(1, gdtype))
    typed = {sig.args[0].dtype.name: sig.return_type.name
             for sig in _numba_product.nopython_signatures if sig.args[1].dtype.name == gdtype.name}
    assert typed == {np.dtype(d).name: cuda_embedding.product_dtype(d, gdtype).name
                     for d in NUMERIC_DTYPES}



def test_kernels_release_the_gil() -> None:
    for kernel in cpu_embedding._KERNELS.values():
        assert kernel.targetoptions["nogil"]


def test_kernels_follow_the_backend_when_it_changes() -> None:
    # The registry's memo is keyed by the module factory: a launcher picked while the
    # emulator is on must not outlive it.
    assert _backend.get_kernel("embedding", "lookup_rows") is cpu_embedding.lookup_rows
    with emulated() as emu:
        assert _backend.get_kernel("embedding", "lookup_rows").func is cuda_embedding.lookup_rows
        asp.embedding.lookup(np.ones((3, 2)), [0, 2])
        assert len(emu.launches) == 1
    assert _backend.get_kernel("embedding", "lookup_rows") is cpu_embedding.lookup_rows
    assert asp.embedding.lookup(np.ones((3, 2)), [0, 2]).tolist() == [[1, 1], [1, 1]]



# ------------------------------------------------------------------ lookup_rows
LOOKUP_SHAPES = [(0, 4), (5, 0), (1, 1), (9, 3), (7, 40), (4, 64)]


@pytest.mark.parametrize(("num", "dim"), LOOKUP_SHAPES, ids=[f"{n}x{d}" for n, d in LOOKUP_SHAPES])
@pytest.mark.parametrize("ids_dtype", IDS, ids=str)
def test_lookup_rows_matches_cpu(cuda_emu: Emulator, values_dtype: np.dtype,
                                 ids_dtype: np.dtype, num: int, dim: int) -> None:
    rng = np.random.default_rng(num * 100 + dim)
    table = random_table(values_dtype, 6, dim, rng)
    ids = rng.integers(0, 6, size=num).astype(ids_dtype)  # duplicates: 6 rows
    launcher = _backend.get_kernel("embedding", "lookup_rows")
    before = len(cuda_emu.launches)
    for col, width in ((0, dim), (2, dim + 5)):  # a column block of a wider matrix
        expected = np.full((num, width), 7, dtype=values_dtype)
        got = expected.copy()
        cpu_embedding.lookup_rows(table, ids, expected, col)
        launcher(table, ids, got, col)
        cuda.check_errors("lookup")
        same_bits(expected, got)
    t, i = _launch.DTYPE_TO_CTYPE[values_dtype], _launch.DTYPE_TO_CTYPE[ids_dtype]
    assert launched(cuda_emu, before) == ([f"lookup_rows<{t}, {i}>"] * 2 if num * dim else [])
    assert cuda_emu.order_effects == {}


def test_lookup_rows_other_ids_and_non_contiguous_arrays(cuda_emu: Emulator) -> None:
    rng = np.random.default_rng(1)
    table = rng.standard_normal((8, 10))
    ids = rng.integers(0, 8, size=12)
    expected = np.zeros((12, 30))
    cpu_embedding.lookup_rows(table, ids, expected[:, ::3], 0)
    for dtype in (np.int8, np.uint16, np.uint64):  # widened to int64
        got = np.zeros((12, 30))
        cuda_embedding.lookup_rows(np, table, ids.astype(dtype), got[:, ::3], 0)
        np.testing.assert_array_equal(got, expected)
    got = np.zeros((12, 30))
    cuda_embedding.lookup_rows(np, np.asfortranarray(table), ids, got[:, ::3], 0)
    np.testing.assert_array_equal(got, expected)
    assert cuda_emu.launches == ["lookup_rows<double, long long>"] * 4


def test_lookup_rows_checks_the_ids(cuda_emu: Emulator) -> None:
    table = np.arange(10.0).reshape(5, 2)
    out = np.full((4, 2), -1.0)
    cuda_embedding.lookup_rows(np, table, np.array([1, 9, 2, -1]), out)
    with pytest.raises(ArrowSparseIndexError, match=r"^lookup: ids out of range of the table "
                       r"\(first at position 1; found by a device check\)$"):
        cuda.check_errors("lookup")
    assert out.tolist() == [[2.0, 3.0], [-1.0, -1.0], [4.0, 5.0], [-1.0, -1.0]]



# ------------------------------------------------------------------ sort_ids
SORT_CASES = {
    "empty": np.array([], np.int64), "one": np.array([3]), "equal": np.full(5, 2),
    "distinct": np.array([9, 4, 7, 0, 1]), "random": np.random.default_rng(2).integers(0, 20, 300),
    # too large for the CPU's packed keys: its stable-argsort fallback
    "unpackable": np.array([2 ** 61, 5, 2 ** 61, 0, 5]),
}


@pytest.mark.parametrize("case", list(SORT_CASES))
@pytest.mark.parametrize("ids_dtype", IDS, ids=str)
def test_sort_ids_matches_cpu(cuda_emu: Emulator, case: str, ids_dtype: np.dtype) -> None:
    ids = SORT_CASES[case]
    if ids_dtype == np.int32 and ids.size and ids.max() > np.iinfo(np.int32).max:
        ids_dtype = np.dtype(np.int64)
    expected = cpu_embedding.sort_ids(ids.astype(np.int64))
    got = _backend.get_kernel("embedding", "sort_ids")(ids.astype(ids_dtype))
    cuda.check_errors("sort_ids")
    for e, g in zip(expected, got, strict=True):
        assert g.dtype == np.int64
        np.testing.assert_array_equal(g, e)
    suffix = _launch.DTYPE_TO_CTYPE[ids_dtype]
    assert cuda_emu.launches == ([f"run_heads<{suffix}>", f"compact_runs<{suffix}>"]
                                 if ids.size else [])


@pytest.mark.hypothesis
@given(st.lists(st.integers(0, 12), max_size=60))
def test_sort_ids_and_coalesce_match_an_independent_reference(ids_list: list[int]) -> None:
    ids = np.array(ids_list, dtype=np.int64)
    grad = np.arange(len(ids) * 3, dtype=np.float64).reshape(-1, 3) - 7  # exact sums
    with emulated(check_orders=("reverse",)):
        order, rows, starts = cuda_embedding.sort_ids(np, ids)
        values = np.empty((len(rows), 3))
        cuda_embedding.coalesce_sorted(np, grad, order, np.arange(len(ids)), np.empty(0), starts,
                                       values)
        cuda.check_errors("coalesce")
    np.testing.assert_array_equal(order, np.argsort(ids, kind="stable"))
    np.testing.assert_array_equal(rows, np.unique(ids))
    np.testing.assert_array_equal(starts, np.r_[np.searchsorted(ids[order], rows), len(ids)])
    expected = np.zeros((len(rows), 3))
    np.add.at(expected, np.searchsorted(rows, ids), grad)
    np.testing.assert_array_equal(values, expected)


@pytest.mark.parametrize(("order", "error", "match"), [
    ([0, 3, 1], ArrowSparseIndexError, r"^sort_ids: order out of range of the ids \(first at "
     r"position 1; found by a device check\)$"),
    ([0, 1, 2], ArrowSparseValueError, r"^sort_ids: ids not stably sorted by the order \(first "
     r"at position 2;"),  # ids 1, 3, 1
    ([2, 0, 1], ArrowSparseValueError, r"not stably sorted by the order \(first at position 1;"),
])
def test_run_heads_checks_the_order(cuda_emu: Emulator, order: list[int], error: type,
                                    match: str) -> None:
    assert run_heads([1, 3, 1], [0, 2, 1]) == [1, 0, 1]
    cuda.check_errors("sort_ids")
    run_heads([1, 3, 1], order)
    with pytest.raises(error, match=match):
        cuda.check_errors("sort_ids")



# ------------------------------------------------------------------ coalesce_sorted
SCALES = ["none", "float32", "float64", "int8", "int64"]
COALESCE_SHAPES = [(0, 3), (6, 0), (1, 1), (30, 5), (25, 40), (12, 64)]


@pytest.mark.parametrize(("num", "dim"), COALESCE_SHAPES,
                         ids=[f"{n}x{d}" for n, d in COALESCE_SHAPES])
@pytest.mark.parametrize("scale_kind", SCALES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_coalesce_sorted_matches_cpu(cuda_emu: Emulator, dtype: np.dtype, scale_kind: str,
                                     num: int, dim: int) -> None:
    rng = np.random.default_rng(num + dim)
    ids = rng.integers(0, max(num // 3, 1), size=num)  # runs of about 3 equal ids
    grad = random_table(dtype, 7, dim, rng)
    bag = rng.integers(0, 7, size=num)
    if scale_kind == "none":
        scale = np.empty(0)
    elif scale_kind.startswith("int"):
        scale = rng.integers(-3, 4, size=num).astype(scale_kind)
    else:
        scale = rng.standard_normal(num).astype(scale_kind)
    order, rows, starts = cpu_embedding.sort_ids(ids)
    expected = np.full((len(rows), dim), 7, dtype=dtype)
    got = expected.copy()
    cpu_embedding.coalesce_sorted(grad, order, bag, scale, starts, expected)
    _backend.get_kernel("embedding", "coalesce_sorted")(grad, order, bag, scale, starts, got)
    cuda.check_errors("coalesce")
    same_bits(expected, got)
    assert cuda_emu.order_effects == {}
    s = cuda_embedding.product_dtype(scale.dtype, dtype) if scale.dtype.kind == "i" else (
        scale.dtype)
    types = f"<{_launch.DTYPE_TO_CTYPE[dtype]}, {_launch.DTYPE_TO_CTYPE[s]}>"
    assert cuda_emu.launches == ([f"coalesce_pieces{types}", f"coalesce_sorted{types}"]
                                 if num * dim else [])


def test_coalesce_sorted_into_a_non_contiguous_out(cuda_emu: Emulator) -> None:
    rng = np.random.default_rng(3)
    ids, grad = rng.integers(0, 4, size=20), rng.standard_normal((20, 6))
    order, rows, starts = cpu_embedding.sort_ids(ids)
    expected, got = np.zeros((len(rows), 12)), np.zeros((len(rows), 12))
    bag = np.arange(20)
    cpu_embedding.coalesce_sorted(grad, order, bag, np.empty(0), starts, expected[:, 1::2])
    cuda_embedding.coalesce_sorted(np, grad, order.astype(np.int32), bag, np.empty(0), starts,
                                   got[:, 1::2])
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(("order", "bag", "starts", "error", "match", "written"), [
    ([0, 1, 2], [0, 1, 0], [0, 2, 1, 3], ArrowSparseValueError,
     r"^coalesce: run starts not non-decreasing within the order \(first at position 1;", [0, 2]),
    ([0, 1, 2], [0, 1, 0], [0, 2, 4], ArrowSparseValueError, r"position 1;", [0]),
    ([0, 5, 2], [0, 1, 0], [0, 2, 3], ArrowSparseIndexError,
     r"^coalesce: order out of range of the ids \(first at position 1;", [0, 1]),
    ([0, 1, 2], [0, 1, 3], [0, 2, 3], ArrowSparseIndexError,
     r"^coalesce: bag out of range of grad_out \(first at position 2;", [0, 1]),
])
def test_coalesce_sorted_checks_runs_order_and_bags(
        cuda_emu: Emulator, order: list[int], bag: list[int], starts: list[int], error: type,
        match: str, written: list[int]) -> None:
    grad = np.array([[1.0], [2.0], [4.0]])
    out = np.full((len(starts) - 1, 1), -1.0)
    cuda_embedding.coalesce_sorted(np, grad, np.array(order), np.array(bag), np.empty(0),
                                   np.array(starts), out)
    with pytest.raises(error, match=match):
        cuda.check_errors("coalesce")
    assert [u for u in range(len(out)) if out[u, 0] != -1.0] == written



# ----------------------------------------------- coalesce_sorted under skew (issue 13)
#: Ids of the skew cases: one id repeated 10,000 times among others, and every id equal.
SKEWED_IDS = {
    "a 10,000-long run": lambda rng: rng.permutation(np.r_[np.full(10_000, 5),
                                                           rng.integers(0, 40, 2_000)]),
    "every id equal": lambda rng: np.full(3_000, 11),
}


@pytest.mark.parametrize("case", list(SKEWED_IDS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_coalesce_sorted_splits_long_runs_by_elements_issue_13(
        cuda_emu: Emulator, case: str, dtype: np.dtype) -> None:
    rng = np.random.default_rng(13)
    ids = SKEWED_IDS[case](rng)
    bag = rng.integers(0, 64, size=len(ids))
    order, rows, starts = cpu_embedding.sort_ids(ids)
    for whole in (True, False):
        grad = (rng.integers(-9, 10, size=(64, 3)) if whole
                else rng.standard_normal((64, 3))).astype(dtype)
        expected = np.empty((len(rows), 3), dtype)
        cpu_embedding.coalesce_sorted(grad, order, bag, np.empty(0), starts, expected)
        got = np.empty_like(expected)
        _backend.get_kernel("embedding", "coalesce_sorted")(grad, order, bag, np.empty(0),
                                                            starts, got)
        cuda.check_errors("coalesce")
        if whole:  # integer-valued: the same sums in any order
            same_bits(expected, got)
        else:  # the documented order: pieces of PIECE positions, added in order
            for u in range(len(rows)):
                run = grad[bag[order[starts[u]:starts[u + 1]]]]
                same_bits(ref_piecewise_sum(run, _launch.PIECE), got[u])
            scale = np.abs(grad).max() * np.diff(starts).max()
            np.testing.assert_allclose(got, expected, rtol=0,
                                       atol=scale * np.finfo(dtype).eps * 8)
    longest = int(np.diff(starts).max())
    assert longest >= 3_000 and longest > _launch.PIECE
    assert cuda_emu.launches[-2:] == [f"coalesce_pieces<{_launch.DTYPE_TO_CTYPE[dtype]}, double>",
                                      f"coalesce_sorted<{_launch.DTYPE_TO_CTYPE[dtype]}, double>"]
    assert cuda_emu.order_effects == {}


@pytest.mark.parametrize("piece", [4, 8])
def test_coalesce_sorted_pieces_in_any_order_and_grid(
        cuda_emu: Emulator, monkeypatch: pytest.MonkeyPatch, piece: int) -> None:
    # Small pieces on random runs (some of one piece, some of many, some exactly a
    # multiple) with scales, and one block of threads: the partials of every run are
    # found, summed and added in order.
    monkeypatch.setattr(_launch, "PIECE", piece)
    monkeypatch.setattr(_launch, "MAX_BLOCKS", 1)
    rng = np.random.default_rng(piece)
    ids = rng.integers(0, 12, size=400)
    grad = rng.standard_normal((50, 37))
    bag, scale = rng.integers(0, 50, size=400), rng.standard_normal(400)
    order, rows, starts = cpu_embedding.sort_ids(ids)
    got = np.empty((len(rows), 37))
    cuda_embedding.coalesce_sorted(np, grad, order, bag, scale, starts, got)
    cuda.check_errors("coalesce")
    for u in range(len(rows)):
        run = order[starts[u]:starts[u + 1]]
        same_bits(ref_piecewise_sum(scale[run, None] * grad[bag[run]], piece), got[u])
    assert cuda_emu.order_effects == {}


def test_sort_ids_reads_the_error_word_with_the_run_count(cp: ModuleType) -> None:
    # One transfer brings the number of runs and the error word back: the check right
    # after it raises what the sort's kernels found without a second read.
    ids = cp.asarray(np.array([3, 1, 3, 2]))
    cp.stats.reset()
    order, rows, starts = cuda_embedding.sort_ids(cp, ids)
    assert cp.stats.syncs == 1
    cuda.check_errors("sort_ids")
    assert cp.stats.syncs == 1
    assert rows.get().tolist() == [1, 2, 3] and starts.get().tolist() == [0, 1, 2, 4]


# ------------------------------------------------------------------ weights_grad
@pairwise_parametrize("values_dtype,gdtype,out_dtype", NUMERIC_DTYPES, FLOATS, FLOATS)
def test_weights_grad_matches_cpu(cuda_emu: Emulator, values_dtype: np.dtype,
                                  gdtype: np.dtype, out_dtype: np.dtype) -> None:
    offsets = np.array([2, 2, 5, 11, 11, 20])  # ids 0, 1 and 20.. are in no bag
    launcher = _backend.get_kernel("embedding", "weights_grad")
    for dim in (0, 1, 5, 40, 70):
        rng = np.random.default_rng(dim)
        ids = rng.integers(0, 9, size=23)
        for integral in (False, True):
            table = random_table(values_dtype, 9, dim, rng, specials=False)
            grad = (rng.integers(-9, 9, size=(5, dim)) if integral else
                    rng.standard_normal((5, dim)) * 100).astype(gdtype)
            if integral:
                table = table.round().astype(values_dtype)
            for ids_dtype, mean in zip(IDS, (False, True), strict=True):
                expected = np.full(23, 7.5, dtype=out_dtype)
                got = expected.copy()
                cpu_embedding.weights_grad(table, ids, offsets, grad, mean, expected)
                launcher(table, ids.astype(ids_dtype), offsets, grad, mean, got)
                cuda.check_errors("lookup_backward_weights")
                if integral:  # exact sums: the order does not matter
                    same_bits(expected, got)
                    continue
                outside = np.r_[0:2, 20:23]
                same_bits(expected[outside], got[outside])
                tol = dot_tolerance(table, ids, offsets, grad, mean, expected)
                assert np.all(np.abs(got.astype(np.float64) - expected) <= tol)
    assert cuda_emu.order_effects == {}


def test_weights_grad_special_values(cuda_emu: Emulator) -> None:
    table = np.array([[1.0, np.nan], [np.inf, 1.0], [np.inf, -np.inf], [-0.0, 0.0]])
    grad = np.array([[1.0, 1.0], [1.0, -0.0]], np.float32)
    ids, offsets = np.array([0, 1, 2, 3, 3]), np.array([0, 3, 5])
    expected, got = np.zeros(5, np.float32), np.zeros(5, np.float32)
    cpu_embedding.weights_grad(table, ids, offsets, grad, False, expected)
    cuda_embedding.weights_grad(np, table, ids, offsets, grad, False, got)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(got[~np.isnan(got)], expected[~np.isnan(expected)])
    assert np.isnan(got).tolist() == [True, False, True, False, False]


@pytest.mark.parametrize(("ids", "offsets", "grad_rows", "error", "match"), [
    ([0, 7, 1], [0, 2, 3], 2, ArrowSparseIndexError,
     r"^lookup_backward_weights: ids out of range of the table \(first at position 1;"),
    ([0, 1, 1], [0, 2, 3], 1, ArrowSparseIndexError,
     r"bag out of range of grad_out \(first at position 2;"),
])
def test_weights_grad_checks_ids_and_bags(
        cuda_emu: Emulator, ids: list[int], offsets: list[int], grad_rows: int, error: type,
        match: str) -> None:
    out = np.full(3, -1.0)
    cuda_embedding.weights_grad(np, np.ones((4, 2)), np.array(ids), np.array(offsets),
                                np.ones((grad_rows, 2)), False, out)
    with pytest.raises(error, match=match):
        cuda.check_errors("lookup_backward_weights")
    assert out[0] == 2.0



# ------------------------------------------- lookup and backward: grid and host checks
@pytest.mark.parametrize("kernel", ["lookup_rows", "sort_ids", "coalesce_sorted",
                                    "weights_grad"])
def test_grid_stride_loops_of_the_lookup_and_backward(
        cuda_emu: Emulator, monkeypatch: pytest.MonkeyPatch, kernel: str) -> None:
    monkeypatch.setattr(_launch, "MAX_BLOCKS", 1)  # 256 threads, 8 lane groups
    rng = np.random.default_rng(4)
    table, ids = rng.standard_normal((30, 37)), rng.integers(0, 30, size=700)
    if kernel == "sort_ids":
        for e, g in zip(cpu_embedding.sort_ids(ids), cuda_embedding.sort_ids(np, ids), strict=True):
            np.testing.assert_array_equal(g, e)
        return
    if kernel == "lookup_rows":
        args: tuple[Any, ...] = (table, ids, np.empty((700, 37)), 0)
    elif kernel == "coalesce_sorted":
        order, rows, starts = cpu_embedding.sort_ids(ids)
        args = (table, order, rng.integers(0, 30, size=700), rng.standard_normal(700), starts,
                np.empty((len(rows), 37)))
    else:
        offsets = np.r_[0, np.sort(rng.integers(0, 700, size=40)), 700]
        args = (table, ids, offsets, rng.standard_normal((41, 37)), True, np.empty(700))
    expected, got = copies(args), copies(args)
    getattr(cpu_embedding, kernel)(*expected)
    getattr(cuda_embedding, kernel)(np, *got)
    if kernel == "weights_grad":
        tol = dot_tolerance(*args[:5], expected[-1])
        assert np.all(np.abs(got[-1] - expected[-1]) <= tol)
    else:
        same_bits(expected[-1 if kernel == "coalesce_sorted" else 2],
                  got[-1 if kernel == "coalesce_sorted" else 2])


def test_host_checks_of_the_lookup_and_backward_launchers() -> None:
    table, ids = np.zeros((3, 2), np.float32), np.array([0, 1])
    with pytest.raises(NotImplementedError, match="lookup_rows: no cuda kernel for a float32 "
                       "table into a float64 out"):
        cuda_embedding.lookup_rows(np, table, ids, np.zeros((2, 2)))
    with pytest.raises(NotImplementedError, match="lookup_rows: no cuda kernel for float16"):
        cuda_embedding.lookup_rows(np, table.astype(np.float16), ids, np.zeros((2, 2), np.float16))
    with pytest.raises(ArrowSparseValueError, match=r"lookup_rows: out of shape \(2, 3\) has "
                       r"no columns 2:4 for 2 rows"):
        cuda_embedding.lookup_rows(np, table, ids, np.zeros((2, 3), np.float32), 2)
    grad, order, starts = np.zeros((2, 2)), np.array([0, 1]), np.array([0, 2])
    with pytest.raises(NotImplementedError, match="coalesce_sorted: no cuda kernel for a "
                       "float64 grad_out into a float32 out"):
        cuda_embedding.coalesce_sorted(np, grad, order, order, np.empty(0), starts,
                                       np.zeros((1, 2), np.float32))
    with pytest.raises(NotImplementedError, match="coalesce_sorted: no cuda kernel for float16"):
        cuda_embedding.coalesce_sorted(np, grad, order, order, np.ones(2, np.float16), starts,
                                       np.zeros((1, 2)))
    with pytest.raises(ArrowSparseValueError, match=r"coalesce_sorted: out must have shape "
                       r"\(1, 2\), got \(2, 2\)"):
        cuda_embedding.coalesce_sorted(np, grad, order, order, np.empty(0), starts, grad.copy())
    with pytest.raises(ArrowSparseValueError, match=r"weights_grad: out must have shape "
                       r"\(2,\), got \(1,\)"):
        cuda_embedding.weights_grad(np, grad, order, starts, grad, False, np.zeros(1))
    with pytest.raises(ArrowSparseValueError, match=r"weights_grad: grad_out must have the "
                       r"table's 2 columns, got shape \(1, 3\)"):
        cuda_embedding.weights_grad(np, grad, order, starts, np.zeros((1, 3)), False, np.zeros(2))
    with pytest.raises(NotImplementedError, match="weights_grad: no cuda kernel for float16"):
        cuda_embedding.weights_grad(np, grad, order, starts, grad.astype(np.float16), False,
                                    np.zeros(2))



# ------------------------------------------------------------------ bags on the device
@pytest.mark.parametrize("seed", range(16))
def test_bag_ids_matches_a_reference(cuda_emu: Emulator, seed: int) -> None:
    case = bag_case(seed)
    mask = [None if case[k] is None else case[k].tolist() for k in ("valid", "vmask",
                                                                     "wvalid")]
    woffsets = None if case["woffsets"] is None else case["woffsets"].tolist()
    *expected, errors = ref_bag_ids(case["ids"].tolist(), case["offsets"].tolist(), mask[0],
                                    mask[1], woffsets, mask[2], case["bound"])
    num_weights = 0 if case["wvalid"] is None else len(case["wvalid"])
    got = cuda_embedding.bag_ids(np, case["ids"].astype(np.int32), case["offsets"], case["valid"],
                                 case["vmask"], case["woffsets"], case["wvalid"], num_weights,
                                 case["bound"])
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == np.int64 and g.tolist() == e
    if errors:
        position, text = errors[0]
        with pytest.raises(ArrowSparseError, match=f"^bags: .*{text}.* \\(first at position "
                           f"{position};"):
            cuda.check_errors("bags")
    cuda.check_errors("bags")
    assert not cuda_emu.order_effects


def test_bag_ids_checks_its_arguments() -> None:
    ids, offsets = np.arange(3), np.array([0, 3])
    with pytest.raises(ArrowSparseValueError, match=r"bag_ids: vmask must have shape \(3,\), "
                       r"got \(2,\)"):
        cuda_embedding.bag_ids(np, ids, offsets, None, np.ones(2, bool), None, None, 0, 5)
    with pytest.raises(ArrowSparseValueError, match=r"bag_ids: woffsets must have shape \(2,\)"):
        cuda_embedding.bag_ids(np, ids, offsets, None, None, np.zeros(3, np.int64), None, 0, 5)
    with pytest.raises(ArrowSparseValueError, match="bag_ids: offsets must have at least one"):
        cuda_embedding.bag_ids(np, ids, offsets[:0], None, None, None, None, 0, 5)



# ------------------------------------------------------------------ optimizer steps
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
    cuda_embedding.adagrad_rows(np, wide_t[:, ::2], wide_s[:, ::2], rows, values, lr, eps)
    np.testing.assert_array_equal(wide_t, expected[0])
    np.testing.assert_array_equal(wide_s, expected[1])


def test_rows_and_values_of_other_dtypes_are_converted(cuda_emu: Emulator) -> None:
    table, rows, values, lr = problem("sgd_rows", FLOATS[0], FLOATS[0], 5, 3)
    expected = table.copy()
    cpu_embedding.sgd_rows(expected, rows, values, lr)
    cuda_embedding.sgd_rows(np, table, rows.astype(np.int32), values.astype(np.float64), lr)
    np.testing.assert_array_equal(table, expected)


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
    cuda_embedding.sgd_rows(np, table, np.array(rows), values, 1.0)
    with pytest.raises(error, match=match):
        cuda.check_errors("sgd")
    cuda.check_errors("sgd")  # the word was reset
    assert table[0].tolist() == [-1.0, -1.0, -1.0]  # good rows are still updated


def test_rowwise_adagrad_checks_rows_too(cuda_emu: Emulator) -> None:
    state = np.zeros(4)
    cuda_embedding.rowwise_adagrad_rows(np, np.zeros((4, 2)), state, np.array([1, 7]),
                                        np.ones((2, 2)), 0.1, 1e-10)
    with pytest.raises(ArrowSparseIndexError, match="first at position 1"):
        cuda.check_errors("rowwise_adagrad")
    assert state.tolist() == [0.0, 1.0, 0.0, 0.0]


def test_unsupported_dtypes_raise_not_implemented() -> None:
    table = np.zeros((2, 2), np.float16)
    with pytest.raises(NotImplementedError, match="sgd_rows: no cuda kernel for float16"):
        cuda_embedding.sgd_rows(np, table, np.array([0]), np.ones((1, 2), np.float16), 0.1)
    t32 = np.zeros((2, 2), np.float32)
    with pytest.raises(NotImplementedError, match="ftrl_rows: no cuda kernel for a float32 "
                       "table with float64 z and float32 n"):
        cuda_embedding.ftrl_rows(np, t32, np.zeros((2, 2)), t32.copy(), np.array([0]),
                                 np.ones((1, 2), np.float32), 0.1, 1.0, 0.0, 0.0)



# ------------------------------------------------------------------ on a real GPU
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


@pytest.mark.gpu
def test_gpu_lookup_and_backward_launchers_match_cpu() -> None:
    cupy = cupy_or_skip()
    rng = np.random.default_rng(6)
    table, grad = rng.standard_normal((500, 72)), rng.standard_normal((300, 72))
    ids = rng.integers(0, 500, size=3000)
    offsets = np.r_[0, np.sort(rng.integers(0, 3000, size=299)), 3000]
    dev = {name: cupy.asarray(a) for name, a in
           (("table", table), ("grad", grad), ("ids", ids), ("offsets", offsets))}

    def kernel(name: str) -> Callable[..., Any]:
        return _backend.get_kernel("embedding", name, cupy)

    expected = np.empty((3000, 72))
    cpu_embedding.lookup_rows(table, ids, expected)
    got = cupy.empty((3000, 72))
    kernel("lookup_rows")(dev["table"], dev["ids"], got)
    np.testing.assert_array_equal(cupy.asnumpy(got), expected)

    order, rows, starts = cpu_embedding.sort_ids(ids)
    order_d, rows_d, starts_d = kernel("sort_ids")(dev["ids"])
    for e, g in ((order, order_d), (rows, rows_d), (starts, starts_d)):
        np.testing.assert_array_equal(cupy.asnumpy(g), e)
    bag, scale = np.repeat(np.arange(300), np.diff(offsets)), rng.standard_normal(3000)
    expected = np.empty((len(rows), 72))
    cpu_embedding.coalesce_sorted(grad, order, bag, scale, starts, expected)
    got = cupy.empty((len(rows), 72))
    kernel("coalesce_sorted")(dev["grad"], order_d, cupy.asarray(bag), cupy.asarray(scale),
                              starts_d, got)
    np.testing.assert_array_equal(cupy.asnumpy(got), expected)

    expected = np.empty(3000)
    cpu_embedding.weights_grad(table, ids, offsets, grad, True, expected)
    got = cupy.empty(3000)
    kernel("weights_grad")(dev["table"], dev["ids"], dev["offsets"], dev["grad"], True, got)
    cuda.check_errors("embedding")
    np.testing.assert_allclose(cupy.asnumpy(got), expected, rtol=0,
                               atol=float(np.abs(expected).max()) * 72 * 2 ** -51)
