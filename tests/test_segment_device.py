"""Segment functions on device arrays (docs/segment-reductions.md, "On the GPU").

Every public function of ``arrow_sparse.segment`` runs on CuPy arrays and on a
``Jagged`` on the device: through the stand-in CuPy and the CUDA emulator here
(``cupy_emu``), on real CuPy where a GPU exists (``cupy``, marked ``gpu``). Each result
must come back on the device and equal the CPU's (the host path on the same data):
exactly, sign of zero included, except float sums, means and logsumexp (vector lanes on
the CPU, partial sums and atomics on the GPU, libdevice's exp/log: float64 within
``1e-12``, float32 within one rounding). Then the device errors: mixed host and device
inputs, O(1) checks on the host with the host's messages, data checks raised by the
next check or at once where a value is read, and the kernels' own re-checks (indices,
segment ids, weights rows, offsets outside the values). ``SEGMENT_SYNCS`` lists the
synchronisations of each function; ``tests/test_cuda_dispatch.py`` checks them and
that launches do not grow with the batch.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse.kernels import cuda
from tests.cuda_emu.fake_cupy import emulated_cupy

from . import _reference_segment as ref
from .conftest import NUMERIC_DTYPES, from_backend, on_device, to_backend

#: The device backends of the ``backend`` fixture.
DEVICE = ["cupy_emu", pytest.param("cupy", marks=pytest.mark.gpu)]
on_the_device = pytest.mark.parametrize("backend", DEVICE, indirect=True)

SORTED: dict[str, Callable[..., Any]] = {
    "sum": asp.segment_sum, "mean": asp.segment_mean, "max": asp.segment_max,
    "min": asp.segment_min, "prod": asp.segment_prod, "logsumexp": asp.segment_logsumexp,
    "argmax": asp.segment_argmax, "argmin": asp.segment_argmin,
}
UNSORTED: dict[str, Callable[..., Any]] = {
    "sum": asp.unsorted_segment_sum, "mean": asp.unsorted_segment_mean,
    "max": asp.unsorted_segment_max, "min": asp.unsorted_segment_min,
}
FUSED: dict[str, Callable[..., Any]] = {
    "sum": asp.sparse_segment_sum, "mean": asp.sparse_segment_mean,
    "max": asp.sparse_segment_max,
}
#: Float results compared within a tolerance (see the module docstring).
ROUNDED = ("sum", "mean", "logsumexp", "weighted_sum")


# ------------------------------------------------------------------ helpers
def device_inputs(backend: str, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    return ([to_backend(a, backend) for a in args],
            {k: to_backend(x, backend) for k, x in kwargs.items()})


def check_order_effects(backend: str) -> None:
    """On the emulator, only float atomic sums may depend on the thread order."""
    if backend == "cupy_emu":
        effects = sys.modules["cupy"].emulator.order_effects
        assert all(k.startswith("scatter_add<") and ", double, " in k for k in effects), effects


def cpu_and_device(backend: str, fn: Callable[..., Any], *args: Any,
                   **kwargs: Any) -> tuple[Any, Any]:
    """``fn`` on host inputs (the CPU kernels), then on the backend's device copies.

    The device result must be on the device; it comes back to the host, after the
    error word is read (no device check may have failed). The host call gets copies of
    numpy arguments (the scatters update theirs in place).
    """
    expected = fn(*(a.copy() if isinstance(a, np.ndarray) else a for a in args), **kwargs)
    dargs, dkwargs = device_inputs(backend, args, kwargs)
    got = fn(*dargs, **dkwargs)
    cuda.check_errors("test")
    check_order_effects(backend)
    return expected, from_backend(got, backend)


def assert_same(expected: np.ndarray, got: np.ndarray, rounded: bool = False) -> None:
    """Same dtype and shape; same values, float signs and NaN positions."""
    assert isinstance(got, np.ndarray) and isinstance(expected, np.ndarray)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if got.dtype.kind == "f":
        nan = np.isnan(expected)
        np.testing.assert_array_equal(np.isnan(got), nan)
        np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(expected[~nan]))
        if rounded:  # float64 rounding (atomic order on a GPU), then the output dtype's
            single = got.dtype == np.float32
            np.testing.assert_allclose(got, expected, rtol=2.5e-7 if single else 1e-12,
                                       atol=1e-5 if single else 1e-9)
            return
    np.testing.assert_array_equal(got, expected)


def same_on_device(backend: str, fn: Callable[..., Any], *args: Any, rounded: bool = False,
                   **kwargs: Any) -> None:
    expected, got = cpu_and_device(backend, fn, *args, **kwargs)
    assert_same(expected, got, rounded)


def values_of(dtype: Any, size: int | tuple[int, ...], seed: int) -> np.ndarray:
    """Values of ``dtype``: signed integers around 0, floats with a NaN, zeros of both signs."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(size) < 0.5
    if dtype.kind in "iu":
        return rng.integers(-5 if dtype.kind == "i" else 0, 9, size=size).astype(dtype)
    values = (rng.standard_normal(size) * 4).astype(dtype)
    flat = values.reshape(-1)
    flat[::7] = 0.0
    flat[3::7] = -0.0
    if flat.size > 40:
        flat[40] = np.nan
    return values


def host_jagged(dtype: Any, width: int | None = None, seed: int = 0) -> asp.Jagged:
    """A host Jagged from a sliced Arrow batch: null and empty rows, null values,
    ``offsets[0] > 0``; vector values of ``width`` when given."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 7, size=24)
    values = values_of(dtype, (int(lengths.sum()),) if width is None
                       else (int(lengths.sum()), width), seed)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    rows: list[Any] = [values[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:],
                                                              strict=True)]
    for r in range(0, len(rows), 5):
        rows[r] = None
    for r in range(2, len(rows), 4):
        if rows[r]:
            rows[r][0] = None
    typ = pa.from_numpy_dtype(np.dtype(dtype))
    if width is not None:
        typ = pa.list_(typ, width)
    return asp.Jagged.from_arrow(pa.array(rows, pa.large_list(typ)).slice(1))


def raised_later(cp: ModuleType) -> None:
    """The next check: what an earlier operation left in the error word is raised now."""
    asp.offsets_to_lengths(cp.asarray(np.array([0, 1])))


DEFERRED = r" \(first at position {}; found by a device check, reported by a later call\)$"
AT_ONCE = r" \(first at position {}; found by a device check\)$"


@pytest.fixture
def cp() -> Iterator[ModuleType]:
    """The stand-in ``cupy``, every launch in three thread orders, for this test only."""
    with emulated_cupy(check_orders=("reverse", "shuffle")) as module:
        yield module


def dev(cp: ModuleType, x: Any, dtype: Any = None) -> Any:
    return cp.asarray(np.asarray(x, dtype=dtype))


# ------------------------------------------------------------------ every backend
@pytest.mark.parametrize("op", list(SORTED))
def test_caffe2_batch_on_every_backend(backend: str, op: str) -> None:
    values = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
    expected = [r if r is not None else 0 for r in ref.segment_reduce(
        [[1, 2, 3], [2, 4, 6, 7], [3, 6]], op)]
    forms = [((values,), {"offsets": [0, 3, 7, 9]}), ((values,), {"lengths": [3, 4, 2]}),
             ((values,), {"segment_ids": [0, 0, 0, 1, 1, 1, 1, 2, 2]}),
             ((asp.Jagged.from_lengths(values, [3, 4, 2]),), {})]
    for args, kwargs in forms:
        dargs, dkwargs = device_inputs(backend, args, kwargs)
        got = from_backend(SORTED[op](*dargs, **dkwargs), backend)
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    check_order_effects(backend)


def test_docstring_examples_on_every_backend(backend: str) -> None:
    # The examples of the unsorted, fused, gather and scatter docstrings.
    def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[Any]:
        dargs, dkwargs = device_inputs(backend, args, kwargs)
        return from_backend(fn(*dargs, **dkwargs), backend).tolist()  # type: ignore[no-any-return]

    values = np.array([4, 1, 3, 6, 3, 2, 7, 2, 6])
    ids = np.array([1, 0, 2, 1, 0, 1, 1, 0, 2])
    assert run(asp.unsorted_segment_sum, values, ids) == [6, 19, 9]
    assert run(asp.unsorted_segment_max, values, ids, 4) == [3, 7, 6, 0]
    assert run(asp.unsorted_segment_weighted_sum, np.array([1.0, 2.0, 3.0]),
               np.array([0.5, 1.0, 2.0]), np.array([1, 0, 1])) == [2.0, 6.5]
    table = np.arange(8) * 10
    bags = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
    assert run(asp.sparse_segment_sum, table, bags, lengths=[3, 4, 2]) == [60, 190, 90]
    assert run(asp.sparse_segment_mean, table, bags, lengths=[3, 4, 2, 0]) == [20, 47.5, 45, 0]
    assert run(asp.sparse_segment_max, table, bags, lengths=[3, 4, 2]) == [30, 70, 60]
    rows = np.arange(16.0).reshape(8, 2)
    assert run(asp.embedding_bag, rows, bags, offsets=[0, 3, 7], include_last_offset=False,
               mode="max") == [[6, 7], [14, 15], [12, 13]]
    pairs = np.array([[1, 4], [3, 2], [8, 1]])
    assert run(asp.gather, pairs, [2, 0, 2]) == [[8, 1], [1, 4], [8, 1]]
    assert run(asp.scatter_assign, np.zeros((3, 2), np.int64), [2, 0, 2], pairs) == [
        [3, 2], [0, 0], [8, 1]]
    assert run(asp.scatter_weighted_sum, np.arange(8.0).reshape(4, 2), 0.5, [2, 0, 2],
               np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]), 2.0)[2] == [9.0, 9.25]
    check_order_effects(backend)


# ------------------------------------------------------------------ sorted
@on_the_device
@pytest.mark.parametrize("op", list(SORTED))
def test_sorted_reductions_match_the_cpu(backend: str, op: str) -> None:
    fn, rounded = SORTED[op], op in ROUNDED
    for dtype in NUMERIC_DTYPES:
        values = values_of(dtype, 40, seed=1)
        offsets = np.array([3, 3, 10, 11, 30, 30, 38], dtype=np.int32)  # starts above 0
        same_on_device(backend, fn, values, offsets=offsets, rounded=rounded)
        same_on_device(backend, fn, values[3:38], offsets=offsets - 3, num_segments=9,
                       rounded=rounded)
        same_on_device(backend, fn, host_jagged(dtype, seed=2), rounded=rounded)
    values = values_of(np.float64, (40, 3), seed=3)
    same_on_device(backend, fn, values, lengths=[0, 7, 1, 20, 0, 12], rounded=rounded)
    ids = np.sort(np.random.default_rng(4).integers(0, 9, size=40))
    same_on_device(backend, fn, values, segment_ids=ids, rounded=rounded)
    same_on_device(backend, fn, values, segment_ids=ids, num_segments=12, rounded=rounded)
    same_on_device(backend, fn, host_jagged(np.float32, width=2, seed=5), rounded=rounded)
    jagged = host_jagged(np.int16, seed=6)
    same_on_device(backend, fn, jagged, num_segments=jagged.num_rows + 3, rounded=rounded)
    if op not in ("logsumexp", "prod", "argmax"):
        same_on_device(backend, fn, values_of(bool, 30, seed=7), lengths=[10, 0, 20])


@on_the_device
def test_min_count_and_empty_value_on_the_device(backend: str) -> None:
    jagged = host_jagged(np.float64, seed=8)
    same_on_device(backend, asp.segment_sum, jagged, min_count=2, empty_value=-1.0)
    same_on_device(backend, asp.segment_max, jagged, empty_value=-0.0)
    same_on_device(backend, asp.segment_logsumexp, jagged)


@on_the_device
def test_segment_weighted_sum_matches_the_cpu(backend: str) -> None:
    for dtype, wdtype in ((np.int32, np.float32), (np.float32, np.float32),
                          (np.uint64, np.uint8), (np.float64, np.int64)):
        values = values_of(dtype, 30, seed=9)
        weights = np.abs(values_of(wdtype, 30, seed=10))
        same_on_device(backend, asp.segment_weighted_sum, values, weights,
                       lengths=[4, 0, 10, 16], rounded=True)
    values = values_of(np.float64, (30, 2), seed=11)
    same_on_device(backend, asp.segment_weighted_sum, values, values_of(np.float64, 30, 12),
                   segment_ids=np.repeat([0, 2, 3], 10), num_segments=5, rounded=True)
    # list weights: null rows in the values or in the weights give empty rows
    arr = pa.array([[1.0, 2.0], None, [3.0, None, 5.0], [], [7.0]]).slice(1)
    weights = pa.array([[0.5, 0.5], [1.0], None, [], [2.0]]).slice(1)
    same_on_device(backend, asp.segment_weighted_sum, asp.Jagged.from_arrow(arr),
                   asp.Jagged.from_arrow(weights), num_segments=6, rounded=True)


# ------------------------------------------------------------------ unsorted
@on_the_device
@pytest.mark.parametrize("op", list(UNSORTED))
def test_unsorted_reductions_match_the_cpu(backend: str, op: str) -> None:
    fn, rounded = UNSORTED[op], op in ROUNDED
    rng = np.random.default_rng(13)
    for dtype in NUMERIC_DTYPES:
        values = values_of(dtype, 50, seed=14)
        ids = rng.integers(0, 7, size=50).astype(np.int32)
        same_on_device(backend, fn, values, ids, 9, rounded=rounded)
        same_on_device(backend, fn, values, ids.astype(np.uint16), rounded=rounded)
    values = values_of(np.float32, (50, 3), seed=15)
    same_on_device(backend, fn, values, rng.integers(0, 5, size=50), rounded=rounded)
    same_on_device(backend, fn, values_of(bool, 20, seed=16), rng.integers(0, 3, size=20),
                   rounded=rounded)


@on_the_device
def test_unsorted_weighted_sum_matches_the_cpu(backend: str) -> None:
    rng = np.random.default_rng(17)
    for dtype, wdtype in ((np.int8, np.float32), (np.float64, np.float64),
                          (np.uint32, np.uint32)):
        values = values_of(dtype, (40, 2), seed=18)
        weights = np.abs(values_of(wdtype, 40, seed=19))
        same_on_device(backend, asp.unsorted_segment_weighted_sum, values, weights,
                       rng.integers(0, 6, size=40), 8, rounded=True)


# ------------------------------------------------------------------ fused
@on_the_device
@pytest.mark.parametrize("op", list(FUSED))
def test_sparse_segment_reductions_match_the_cpu(backend: str, op: str) -> None:
    fn, rounded = FUSED[op], op in ROUNDED
    rng = np.random.default_rng(20)
    offsets = np.array([2, 2, 9, 10, 25, 33], dtype=np.int32)
    for dtype in NUMERIC_DTYPES:
        table = values_of(dtype, (12, 3), seed=21)
        ids = rng.integers(0, 12, size=36)
        same_on_device(backend, fn, table, ids, offsets=offsets, rounded=rounded)
        same_on_device(backend, fn, table, ids.astype(np.uint8), lengths=[0, 20, 16],
                       rounded=rounded)
    table = values_of(np.float32, (12, 20), seed=22)  # wide: the CPU's vector path
    ids = rng.integers(0, 12, size=36)
    same_on_device(backend, fn, table, ids, offsets=offsets, rounded=rounded)
    same_on_device(backend, fn, table, ids, segment_ids=np.repeat([0, 1, 4], 12),
                   num_segments=6, rounded=rounded)
    same_on_device(backend, fn, table, ids, offsets=offsets, weights=rng.random(36),
                   rounded=rounded)
    bags = asp.Jagged.from_arrow(pa.array([[1, 2], None, [3, None, 11], [], [0, 0, 5]],
                                          pa.list_(pa.int32())).slice(1))
    wbags = asp.Jagged.from_arrow(pa.array([[1.0, 2.0], [0.5, 4.0, 2.0], [], None],
                                           pa.list_(pa.float64())))
    same_on_device(backend, fn, table, bags, rounded=rounded)
    same_on_device(backend, fn, table, bags, weights=wbags, rounded=rounded)


@on_the_device
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_matches_the_cpu(backend: str, mode: str) -> None:
    rng = np.random.default_rng(23)
    table = values_of(np.float32, (10, 4), seed=24)
    ids = rng.integers(0, 10, size=30).astype(np.int64)
    same_on_device(backend, asp.embedding_bag, table, ids, offsets=[0, 4, 4, 19, 30],
                   mode=mode, rounded=True)
    same_on_device(backend, asp.embedding_bag, table, ids, offsets=[0, 4, 4, 19], mode=mode,
                   include_last_offset=False, rounded=True)
    same_on_device(backend, asp.embedding_bag, table, ids, lengths=[10, 0, 20], mode=mode,
                   per_sample_weights=rng.random(30).astype(np.float32), rounded=True)
    same_on_device(backend, asp.sparse_segment_weighted_sum, table, ids,
                   weights=rng.random(30), lengths=[10, 0, 20], rounded=True)


# ------------------------------------------------------------------ gather, scatter
@on_the_device
def test_gather_matches_the_cpu(backend: str) -> None:
    rng = np.random.default_rng(25)
    for dtype in [*NUMERIC_DTYPES, np.bool_]:
        data = values_of(dtype, (9, 2), seed=26)
        same_on_device(backend, asp.gather, data, rng.integers(0, 9, size=(4, 3)))
        same_on_device(backend, asp.gather, data[:, 0], rng.integers(0, 9, size=5)
                       .astype(np.uint32))
    same_on_device(backend, asp.gather, values_of(np.float64, (3, 2, 2), 27), np.array(2))
    same_on_device(backend, asp.gather, values_of(np.float64, (3, 2), 28),
                   np.zeros(0, np.int32))


@on_the_device
def test_scatter_assign_matches_the_cpu(backend: str) -> None:
    idx = np.array([4, 0, 4, 7, 4, 0])
    for dtype in [*NUMERIC_DTYPES, np.bool_]:
        data = values_of(dtype, (8, 3), seed=29)
        slices = values_of(dtype, (6, 3), seed=30)

        def assign(data: Any, idx: Any, slices: Any) -> Any:
            out = asp.scatter_assign(data, idx, slices)
            assert out is data  # in place
            return out

        expected, got = cpu_and_device(backend, assign, data, idx, slices)
        assert_same(expected, got)


@on_the_device
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scatter_weighted_sum_matches_the_cpu(backend: str, dtype: Any) -> None:
    idx = np.array([4, 0, 4, 7, 4, 0, 2], dtype=np.int32)
    for w0 in (0.3, 1.0):
        data = values_of(dtype, (8, 3), seed=31)
        expected, got = cpu_and_device(backend, asp.scatter_weighted_sum, data, w0, idx,
                                       values_of(dtype, (7, 3), seed=32), 1.7)
        assert_same(expected, got)


# ------------------------------------------------------------------ device errors
def test_host_and_device_inputs_together_name_the_fix(cp: ModuleType) -> None:
    values, table = dev(cp, np.arange(4.0)), dev(cp, np.ones((3, 2)))
    fix = r"; move them to one device first: to the GPU with Jagged.to_device\('cuda'\)"
    calls = {
        "segment_sum: lengths is a host": lambda: asp.segment_sum(values, lengths=[2, 2]),
        "segment_weighted_sum: weights is a host": lambda: asp.segment_weighted_sum(
            values, np.ones(4), lengths=dev(cp, [4])),
        "unsorted_segment_max: segment_ids is a host": lambda: asp.unsorted_segment_max(
            values, np.zeros(4, np.int64)),
        "sparse_segment_sum: data is a host": lambda: asp.sparse_segment_sum(
            np.ones((3, 2)), dev(cp, [0, 1]), lengths=dev(cp, [2])),
        "embedding_bag: offsets is a host": lambda: asp.embedding_bag(
            table, dev(cp, [0, 1]), offsets=[0], include_last_offset=False),
        "gather: indices is a host": lambda: asp.gather(table, [0, 2]),
        "scatter_assign: indices is a host": lambda: asp.scatter_assign(
            table, np.array([0]), dev(cp, np.ones((1, 2)))),
        "scatter_weighted_sum: slices is a host": lambda: asp.scatter_weighted_sum(
            table, 1.0, dev(cp, [0]), np.ones((1, 2)), 1.0),
    }
    for match, call in calls.items():
        with pytest.raises(TypeError, match="^" + match + ".*" + fix):
            call()
    assert cp.stats.syncs == 0


def test_o1_checks_stay_on_the_host_with_the_host_messages(cp: ModuleType) -> None:
    values = dev(cp, np.arange(6.0))
    cases = [
        (lambda: asp.segment_sum(dev(cp, np.ones(3, np.float16)), lengths=dev(cp, [3])),
         TypeError, "segment_sum: values of dtype float16 are not supported"),
        (lambda: asp.segment_sum(values, offsets=dev(cp, [0.0, 6.0])), TypeError,
         "segment_sum: offsets must have an integer dtype, got float64"),
        (lambda: asp.segment_sum(values, lengths=dev(cp, [6]), offsets=dev(cp, [0, 6])),
         ValueError, "segment_sum: pass exactly one of offsets=, lengths=, segment_ids="),
        (lambda: asp.segment_max(values, offsets=dev(cp, [0, 2, 6]), num_segments=1),
         ValueError, "segment_max: num_segments=1 is less than the 2 rows of the input"),
        (lambda: asp.unsorted_segment_sum(values, dev(cp, [0, 1]), 3), ValueError,
         "unsorted_segment_sum: segment_ids has length 2 but there are 6 values"),
        (lambda: asp.segment_weighted_sum(values, dev(cp, np.ones(5)), lengths=dev(cp, [6])),
         ValueError, r"segment_weighted_sum: weights must be 1-D with one weight per value"),
        (lambda: asp.sparse_segment_sum(values, dev(cp, [0.5]), lengths=dev(cp, [1])),
         TypeError, "sparse_segment_sum: indices must be 1-D integers, got float64"),
        (lambda: asp.gather(values, dev(cp, [0.5])), TypeError,
         "gather: indices must have an integer dtype, got float64"),
        (lambda: asp.scatter_assign(dev(cp, np.ones((4, 2)))[::2], dev(cp, [0]),
                                    dev(cp, np.ones((1, 2)))),
         ValueError, "scatter_assign: data must be a writable, C-contiguous array"),
        (lambda: asp.scatter_assign(dev(cp, np.ones((4, 2))), dev(cp, [0]),
                                    dev(cp, np.ones((2, 2)))),
         ValueError, r"scatter_assign: slices must have shape \(1, 2\)"),
        (lambda: asp.scatter_weighted_sum(dev(cp, np.ones((4, 2))), dev(cp, [0.5]),
                                          dev(cp, [0]), dev(cp, np.ones((1, 2))), 1.0),
         ValueError, r"scatter_weighted_sum: w0 must be a real number \(or a one-element "
         r"host array\)"),
        (lambda: asp.scatter_weighted_sum(dev(cp, np.ones((4, 2), np.int32)), 1.0,
                                          dev(cp, [0]), dev(cp, np.ones((1, 2))), 1.0),
         TypeError, "scatter_weighted_sum: data must have a float dtype, got int32"),
    ]
    for call, cls, match in cases:
        with pytest.raises(cls, match="^" + match):
            call()
    assert cp.stats.syncs == 0


@pytest.mark.parametrize(("call", "cls", "message"), [
    (lambda cp: asp.segment_sum(dev(cp, np.arange(4.0)), offsets=dev(cp, [0, 3, 1, 4])),
     ValueError, "segment_sum: offsets must be non-decreasing" + DEFERRED.format(2)),
    (lambda cp: asp.segment_max(dev(cp, np.arange(4.0)), offsets=dev(cp, [0, 2, 9])),
     ValueError, "segment_max: offsets exceed the number of values" + DEFERRED.format(2)),
    (lambda cp: asp.segment_mean(dev(cp, np.arange(4.0)), lengths=dev(cp, [2, 3])),
     ValueError, "segment_mean: lengths do not sum to the number of values"
     + DEFERRED.format(1)),
    (lambda cp: asp.segment_prod(dev(cp, np.arange(4.0)), lengths=dev(cp, [2, -1, 3])),
     ValueError, "segment_prod: lengths must be non-negative" + DEFERRED.format(1)),
    (lambda cp: asp.segment_argmax(dev(cp, np.arange(4.0)), segment_ids=dev(cp, [0, 2, 1, 2]),
                                   num_segments=3),
     ValueError, r"segment_argmax: segment_ids must be sorted \(non-decreasing\)"
     + DEFERRED.format(2)),
    (lambda cp: asp.segment_min(dev(cp, np.arange(3.0)), segment_ids=dev(cp, [0, 1, 5]),
                                num_segments=3),
     IndexError, "segment_min: segment_ids must be < num_segments" + DEFERRED.format(2)),
    (lambda cp: asp.unsorted_segment_sum(dev(cp, np.arange(4.0)), dev(cp, [0, 1, 3, 9]), 4),
     IndexError, "unsorted_segment_sum: segment_ids must be < num_segments"
     + DEFERRED.format(3)),
    (lambda cp: asp.unsorted_segment_max(dev(cp, np.arange(4)), dev(cp, [0, -1, 3, 9]), 4),
     IndexError, "unsorted_segment_max: segment_ids must be non-negative" + DEFERRED.format(1)),
    (lambda cp: asp.unsorted_segment_weighted_sum(
        dev(cp, np.arange(4.0)), dev(cp, np.ones(4)), dev(cp, [2**63 - 1, 0, 0, 0], np.uint64),
        2),
     IndexError, "unsorted_segment_weighted_sum: segment_ids must be < num_segments"
     + DEFERRED.format(0)),
    (lambda cp: asp.sparse_segment_sum(dev(cp, np.ones((4, 2))), dev(cp, [0, 1, 4, -1]),
                                       lengths=dev(cp, [2, 2])),
     IndexError, r"sparse_segment_sum: indices out of range \[0, len\(data\)\)"
     + DEFERRED.format(2)),
    (lambda cp: asp.sparse_segment_max(dev(cp, np.ones((4, 2))), dev(cp, [0, 1, 2, 3, 0, 7]),
                                       offsets=dev(cp, [1, 6])),
     IndexError, r"sparse_segment_max: indices out of range \[0, len\(data\)\)"
     + DEFERRED.format(5)),
    (lambda cp: asp.embedding_bag(dev(cp, np.ones((4, 2))), dev(cp, [0, 9, 1]),
                                  offsets=dev(cp, [0, 1]), include_last_offset=False,
                                  mode="mean"),
     IndexError, r"embedding_bag: indices out of range \[0, len\(data\)\)" + DEFERRED.format(1)),
    (lambda cp: asp.gather(dev(cp, np.ones((4, 2))), dev(cp, [[0, 3], [4, -1]])),
     IndexError, r"gather: indices out of range \[0, len\(data\)\)" + DEFERRED.format(2)),
    (lambda cp: asp.scatter_assign(dev(cp, np.ones((4, 2))), dev(cp, [0, 5, -1]),
                                   dev(cp, np.ones((3, 2)))),
     IndexError, r"scatter_assign: indices out of range \[0, len\(data\)\)" + DEFERRED.format(1)),
    (lambda cp: asp.scatter_weighted_sum(dev(cp, np.ones((4, 2))), 0.5, dev(cp, [3, 6, 1, 6]),
                                         dev(cp, np.ones((4, 2))), 1.0),
     IndexError, r"scatter_weighted_sum: indices out of range \[0, len\(data\)\)"
     + DEFERRED.format(1)),
    (lambda cp: asp.segment_weighted_sum(
        asp.Jagged.from_lengths(dev(cp, np.ones(5)), dev(cp, [2, 3])),
        asp.Jagged.from_lengths(dev(cp, np.ones(5)), dev(cp, [3, 2]))),
     ValueError, "segment_weighted_sum: weights must have the same row lengths as the values"
     + DEFERRED.format(0)),
    (lambda cp: asp.sparse_segment_mean(
        dev(cp, np.ones((3, 2))), asp.Jagged.from_lengths(dev(cp, [0, 1, 2]), dev(cp, [1, 2])),
        weights=asp.Jagged(dev(cp, np.ones(3)), dev(cp, [0, 1, 3]),
                           values_validity=dev(cp, [True, True, False]))),
     ValueError, "sparse_segment_mean: weights must not contain null elements; fill them "
     r"first \(pyarrow.compute.fill_null\)" + DEFERRED.format(2)),
])
def test_data_errors_are_raised_by_the_next_check(cp: ModuleType, call: Callable[..., Any],
                                                  cls: type, message: str) -> None:
    call(cp)  # no synchronisation: nothing raised yet
    assert cp.stats.syncs == 0
    with pytest.raises(cls, match="^" + message):
        raised_later(cp)
    raised_later(cp)  # raised once


@pytest.mark.parametrize(("call", "cls", "message"), [
    (lambda cp: asp.segment_sum(dev(cp, np.arange(3.0)), segment_ids=dev(cp, [0, 2, 1])),
     ValueError, r"segment_sum: segment_ids must be sorted \(non-decreasing\)"
     + AT_ONCE.format(2)),
    (lambda cp: asp.sparse_segment_sum(dev(cp, np.ones((3, 2))), dev(cp, [0, 1, 1]),
                                       segment_ids=dev(cp, [-1, 0, 0])),
     IndexError, "sparse_segment_sum: segment_ids must be non-negative" + AT_ONCE.format(0)),
    (lambda cp: asp.unsorted_segment_mean(dev(cp, np.arange(3.0)), dev(cp, [1, -2, 0])),
     IndexError, "unsorted_segment_mean: segment_ids must be non-negative" + AT_ONCE.format(1)),
])
def test_data_errors_are_raised_at_once_where_a_value_is_read(
        cp: ModuleType, call: Callable[..., Any], cls: type, message: str) -> None:
    with pytest.raises(cls, match="^" + message):
        call(cp)
    assert cp.stats.syncs == 1


def test_kernels_stay_inside_the_buffers_when_the_offsets_were_never_checked(
        cp: ModuleType) -> None:
    # A Jagged built without checks (or changed after them): the kernels re-check each
    # row, reduce a row outside the values as an empty row and record it.
    j = asp.Jagged._trusted(dev(cp, np.arange(1.0, 4.0)), dev(cp, [0, 2, 5, 3]))
    for fn in SORTED.values():
        got = fn(j).get()
        assert got[0] == fn(np.array([1.0, 2.0]), lengths=[2])[0]
        with pytest.raises(ValueError, match=f"^{fn.__name__}: offsets address values outside "
                           "the values buffer" + DEFERRED.format(2)):
            raised_later(cp)
    bags = asp.Jagged._trusted(dev(cp, [0, 1]), dev(cp, [0, 1, 4]))
    for fn in FUSED.values():
        fn(dev(cp, np.ones((2, 3))), bags)
        with pytest.raises(ValueError, match=f"^{fn.__name__}: offsets address values outside"):
            raised_later(cp)


def test_a_device_error_skips_only_the_bad_item(cp: ModuleType) -> None:
    data = dev(cp, np.zeros((4, 2)))
    asp.scatter_assign(data, dev(cp, [1, 7, 3]), dev(cp, np.full((3, 2), 5.0)))
    with pytest.raises(IndexError, match="indices out of range"):
        raised_later(cp)
    assert data.get().tolist() == [[0, 0], [5, 5], [0, 0], [5, 5]]
    rows = asp.gather(dev(cp, np.arange(1.0, 5.0)), dev(cp, [3, 4, 0]))
    with pytest.raises(IndexError, match="indices out of range"):
        raised_later(cp)
    assert rows.get().tolist() == [4.0, 0.0, 1.0]


# ------------------------------------------------------------------ synchronisations
#: Each segment function on a device batch (``batch`` of tests/test_cuda_dispatch.py:
#: ``flat`` values with ``lengths`` and sorted ``ids`` in ``[0, rows)``, ``values`` with
#: ``offsets`` starting at 2, a ``jagged`` of them, a ``dense`` ``[rows, 3]`` table) and
#: the synchronisations it documents; that module checks them with the conversions'.
SEGMENT_SYNCS: dict[str, tuple[Callable[[dict[str, Any]], Any], int]] = {
    **{fn.__name__: (lambda b, fn=fn: fn(b["jagged"]), 0) for fn in SORTED.values()},
    "segment_sum offsets": (lambda b: asp.segment_sum(b["values"], offsets=b["offsets"]), 0),
    "segment_mean lengths": (lambda b: asp.segment_mean(b["flat"], lengths=b["lengths"]), 0),
    "segment_max segment_ids sized": (
        lambda b: asp.segment_max(b["flat"], segment_ids=b["ids"], num_segments=b["rows"]), 0),
    "segment_max segment_ids": (lambda b: asp.segment_max(b["flat"], segment_ids=b["ids"]), 1),
    "segment_weighted_sum": (
        lambda b: asp.segment_weighted_sum(b["jagged"], b["jagged"], num_segments=b["rows"] + 2),
        0),
    **{fn.__name__: (lambda b, fn=fn: fn(b["flat"], b["ids"], b["rows"]), 0)
       for fn in UNSORTED.values()},
    "unsorted_segment_sum unsized": (lambda b: asp.unsorted_segment_sum(b["flat"], b["ids"]),
                                     1),
    "unsorted_segment_weighted_sum": (lambda b: asp.unsorted_segment_weighted_sum(
        b["flat"], b["flat"], b["ids"], b["rows"]), 0),
    **{fn.__name__: (lambda b, fn=fn: fn(b["dense"], b["ids"], lengths=b["lengths"]), 0)
       for fn in FUSED.values()},
    "sparse_segment_sum segment_ids": (
        lambda b: asp.sparse_segment_sum(b["dense"], b["ids"], segment_ids=b["ids"]), 1),
    "sparse_segment_weighted_sum": (lambda b: asp.sparse_segment_weighted_sum(
        b["dense"], b["ids"], weights=b["flat"], lengths=b["lengths"]), 0),
    "embedding_bag": (lambda b: asp.embedding_bag(b["dense"], b["ids"], lengths=b["lengths"],
                                                  mode="max"), 0),
    "embedding_bag bag starts": (lambda b: asp.embedding_bag(
        b["dense"], b["ids"], offsets=b["offsets"][:-1] - 2, include_last_offset=False), 0),
    "gather": (lambda b: asp.gather(b["dense"], b["ids"]), 0),
    "scatter_assign": (lambda b: asp.scatter_assign(b["dense"], b["ids"], b["dense"][b["ids"]]),
                       0),
    "scatter_weighted_sum": (lambda b: asp.scatter_weighted_sum(
        b["dense"], 0.5, b["ids"], b["dense"][b["ids"]], 2.0), 0),
}


def test_every_segment_function_is_in_the_synchronisation_table() -> None:
    assert set(asp.segment.__all__) == {key.split(" ")[0] for key in SEGMENT_SYNCS}


def test_device_results_need_device_inputs(backend: str) -> None:
    # Host inputs give host results on every backend (nothing moves implicitly).
    got = asp.segment_sum(np.arange(4.0), lengths=[1, 3])
    assert isinstance(got, np.ndarray) and got.tolist() == [0.0, 6.0]
    if on_device(backend):
        assert not isinstance(asp.segment_sum(to_backend(np.arange(4.0), backend),
                                              lengths=to_backend([1, 3], backend)),
                              np.ndarray)
