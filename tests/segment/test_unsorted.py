"""Tests of ``arrow_sparse.segment.unsorted``: ``unsorted_segment_{sum,weighted_sum,mean,max,min}``.

Each operation against the plain-Python oracle (``tests/_reference_segment.py``) on every
backend of the ``backend`` fixture (numpy inputs go to the device with ``to_backend``;
Arrow inputs stay on the host, where the ``cuda_emu`` backend runs them through the CUDA
kernels), then the device checks (the scatter kernels against the CPU's, see
``_helpers``) and the device errors. Property tests (Hypothesis) run on the CPU; the
example tests beside them cover the device paths.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseError, ArrowSparseIndexError, ArrowSparseValueError

from .. import _reference_segment as ref
from .._matrix import pairwise_parametrize
from .._strategies import numeric_dtypes, scalars
from ..conftest import NUMERIC_DTYPES, OFFSETS_DTYPES
from . import _strategies as sst
from ._helpers import (
    AT_ONCE,
    CAFFE2_DATA,
    DEFERRED,
    EMPTY,
    FORM_DTYPES,
    MIXED_FIX,
    ROUNDED,
    UNSORTED,
    assert_arrow,
    assert_close,
    assert_error,
    assert_raised_by_the_next_check,
    dev,
    emulator,
    expected_array,
    kernels,
    long_float32_batch,
    on_devices,
    on_the_cpu,
    out_dtype,
    run_on,
    same_as_cpu,
    sample,
    signed_zero_rows,
    values_of,
)

WIDTHS = [None, 3]
WEIGHT_DTYPES = [np.uint8, np.int32, np.uint64, np.float32, np.float64]
U64_BIG = np.array([0, 2**63], dtype=np.uint64)


# ====================================================================== the family
def test_caffe2_unsorted_example(backend: str) -> None:
    values = np.array([4, 1, 3, 6, 3, 2, 7, 2, 6])
    ids = [1, 0, 2, 1, 0, 1, 1, 0, 2]
    np.testing.assert_array_equal(run_on(backend, asp.unsorted_segment_sum, values, ids),
                                  [6, 19, 9])


def test_docstring_examples_on_every_backend(backend: str) -> None:
    values = np.array([4, 1, 3, 6, 3, 2, 7, 2, 6])
    ids = np.array([1, 0, 2, 1, 0, 1, 1, 0, 2])
    assert run_on(backend, asp.unsorted_segment_sum, values, ids).tolist() == [6, 19, 9]
    assert run_on(backend, asp.unsorted_segment_max, values, ids, 4).tolist() == [3, 7, 6, 0]
    assert run_on(backend, asp.unsorted_segment_weighted_sum, np.array([1.0, 2.0, 3.0]),
                  np.array([0.5, 1.0, 2.0]), np.array([1, 0, 1])).tolist() == [2.0, 6.5]


@pytest.mark.parametrize("op", list(UNSORTED))
def test_unsorted_against_oracle(backend: str, op: str, values_dtype: np.dtype) -> None:
    values = np.array([4, 1, 3, 6, 3, 2, 7, 2, 6], dtype=values_dtype)
    ids = [1, 0, 2, 1, 0, 1, 1, 0, 4]
    rows = ref.rows_from_segment_ids(values.tolist(), ids, 6)
    got = run_on(backend, UNSORTED[op], values, ids, 6)
    assert got.dtype == out_dtype(op, values_dtype)
    assert_close(got, expected_array(ref.segment_reduce(rows, op), EMPTY[op]),
                 out_dtype(op, values_dtype))
    arrow = UNSORTED[op](pa.array(values), pa.array(ids), 6)
    assert_arrow(arrow, ref.segment_reduce(rows, op), out_dtype(op, values_dtype))


def test_unsorted_vectors_nulls_and_errors(backend: str) -> None:
    data = CAFFE2_DATA.astype(np.float32)
    got = run_on(backend, asp.unsorted_segment_sum, data, [1, 0, 1, 0, 1])
    np.testing.assert_array_equal(got, [[12, 6], [14, 13]])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(
        run_on(backend, asp.unsorted_segment_min, data, [1, 0, 1, 0, 1], 3),
        [[3, 2], [1, 1], [0, 0]])
    np.testing.assert_allclose(
        run_on(backend, asp.unsorted_segment_weighted_sum, data, np.array([1, 1, 0, 0, 2]),
               [0, 0, 0, 1, 1]),
        [[4, 6], [10, 16]])
    arr = pa.array([1.0, None, 5.0])
    assert asp.unsorted_segment_mean(arr, [0, 0, 1]).to_pylist() == [1.0, 5.0]
    assert asp.unsorted_segment_max(arr, [1, 1, 1]).to_pylist() == [None, 5.0]
    assert asp.unsorted_segment_sum([], [], 2).tolist() == [0, 0]
    with pytest.raises(IndexError, match=r"unsorted_segment_sum: segment_ids must be < "
                                         r"num_segments=2 \(first at position 1: 5\)"):
        asp.unsorted_segment_sum([1, 2], [0, 5], 2)
    with pytest.raises(IndexError, match="segment_ids must be non-negative"):
        asp.unsorted_segment_mean([1, 2], [0, -1])
    with pytest.raises(ValueError, match="segment_ids has length 1 but there are 2 values"):
        asp.unsorted_segment_max([1, 2], [0])
    with pytest.raises(TypeError, match="values must be flat"):
        asp.unsorted_segment_min(pa.array([[1]]), [0])
    with pytest.raises(TypeError, match="segment_ids must have an integer dtype"):
        asp.unsorted_segment_sum([1.0], [0.0])


def test_unsorted_ids_checked_as_they_are_read(backend: str) -> None:
    # With num_segments given the kernel checks the ids; the first bad one is reported,
    # whichever part of a parallel run finds it, and null values do not hide it.
    rng = np.random.default_rng(4)
    ids = rng.integers(0, 50, size=300_000)
    values = rng.random(300_000)
    ids[250_000] = 50
    ids[200_000] = -3
    for fn in UNSORTED.values():
        with pytest.raises(IndexError, match=r"segment_ids must be non-negative "
                                             r"\(first at position 200000: -3\)"):
            fn(values, ids, 50)
    with pytest.raises(IndexError, match=r"must be < num_segments=2 \(first at position 0: 2\)"):
        asp.unsorted_segment_sum(pa.array([None, 1.0]), [2, 0], 2)
    with pytest.raises(IndexError, match=r"must be < num_segments=3 \(first at position 1: 7\)"):
        asp.unsorted_segment_max(np.ones((2, 3)), pa.array([0, 7], pa.int32()), 3)


def test_out_of_range_ids_raise_like_the_cpu_before_any_launch(backend: str) -> None:
    # The CPU kernels check ids as they read them; the CUDA launchers check host ids on
    # the host, before any launch.
    values = np.arange(6.0)
    emu = emulator(backend)
    for fn in UNSORTED.values():
        for ids, match in (([0, 1, 9, 2, -1, 0], r"must be < num_segments=3 "
                                                 r"\(first at position 2: 9\)"),
                           ([0, -1, 9, 2, 1, 0], r"must be non-negative "
                                                 r"\(first at position 1: -1\)")):
            before = len(emu.launches) if emu is not None else 0
            with pytest.raises(IndexError, match=match):
                fn(values, np.array(ids), 3)
            if emu is not None:
                assert len(emu.launches) == before


def test_unsorted_parallel_parts_match_numpy(backend: str) -> None:
    # Large enough for one part per thread: partial sums combined in part order.
    rng = np.random.default_rng(6)
    num_segments = 1000
    ids = rng.integers(0, num_segments, size=400_000)
    values = rng.random(400_000).astype(np.float32)
    expected = np.bincount(ids, weights=values.astype(np.float64), minlength=num_segments)
    counts = np.bincount(ids, minlength=num_segments)
    np.testing.assert_allclose(
        run_on(backend, asp.unsorted_segment_sum, values, ids, num_segments), expected,
        rtol=1e-6)
    np.testing.assert_allclose(
        run_on(backend, asp.unsorted_segment_mean, values, ids, num_segments),
        expected / counts, rtol=1e-6)
    w = rng.random(400_000)
    np.testing.assert_allclose(
        run_on(backend, asp.unsorted_segment_weighted_sum, values, w, ids, num_segments),
        np.bincount(ids, weights=w * values, minlength=num_segments), rtol=1e-9)
    top = np.full(num_segments, -np.inf, np.float32)
    np.maximum.at(top, ids, values)
    np.testing.assert_array_equal(
        run_on(backend, asp.unsorted_segment_max, values, ids, num_segments), top)
    ints = rng.integers(-5, 5, size=400_000).astype(np.int16)
    np.testing.assert_array_equal(
        run_on(backend, asp.unsorted_segment_sum, ints, ids, num_segments),
        np.bincount(ids, weights=ints, minlength=num_segments))
    wide = rng.random((400_000, 3))
    sums = np.zeros((50, 3))
    np.add.at(sums, ids % 50, wide)
    np.testing.assert_allclose(run_on(backend, asp.unsorted_segment_sum, wide, ids % 50, 50),
                               sums)


def test_unsorted_chunked_in_one_chunk_out(backend: str) -> None:
    flat = asp.unsorted_segment_sum(pa.chunked_array([pa.array([1, 2]), pa.array([3])]),
                                    [0, 1, 0])
    assert isinstance(flat, pa.ChunkedArray) and flat.to_pylist() == [4, 2]


def test_zero_chunk_chunked_arrays_issue_3(backend: str) -> None:
    # Regression: a ChunkedArray with no chunks crashed with pyarrow's ArrowInvalid.
    f64 = pa.chunked_array([], pa.float64())
    got = asp.unsorted_segment_sum(f64, [], 2)
    assert isinstance(got, pa.ChunkedArray) and got.to_pylist() == [0.0, 0.0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unsorted_nan_propagates_like_numpy(backend: str, dtype: Any) -> None:
    values = np.array([1, np.nan, 3, 5, 2, np.nan, np.nan, 4, -np.inf], dtype=dtype)
    np.testing.assert_array_equal(
        run_on(backend, asp.unsorted_segment_max, values, [0, 1] * 4 + [0]), [np.nan, np.nan])


def test_unsorted_segment_sum_is_exact_beyond_float64(backend: str) -> None:
    big = np.array([3, -(2**63) + 10, -1], dtype=np.int64)
    assert run_on(backend, asp.unsorted_segment_sum, big, [0, 0, 0]).tolist() == [12 - 2**63]


def test_unsorted_float32_precision_on_long_segments(backend: str) -> None:
    # 10**6 float32 values per segment against math.fsum: the parts of a parallel run
    # combined in part order (float64), and min (exact).
    wide, ids, _ = long_float32_batch()
    col = np.ascontiguousarray(wide[:, 0])
    sums = run_on(backend, asp.unsorted_segment_sum, col, ids, 2).astype(np.float64)
    exact_ids = [math.fsum(col[ids == k].astype(np.float64).tolist()) for k in (0, 1)]
    assert np.all(np.abs(sums - exact_ids) <= np.abs(exact_ids) * 2.0**-23)
    assert run_on(backend, asp.unsorted_segment_min, col, ids, 2).tolist() == [
        col[ids == 0].min(), col[ids == 1].min()]


# (call, error class, message pattern), each pattern matched from the start (from
# tests/test_errors.py: the input checks of _validate reached through unsorted_segment_sum).
ERROR_CASES: dict[str, tuple[Callable[[], Any], type[Exception], str]] = {
    "uint64 segment ids": (lambda: asp.unsorted_segment_sum(np.ones(2), U64_BIG, 4),
                           ArrowSparseIndexError,
                           r"unsorted_segment_sum: segment_ids must be < num_segments=4 "
                           r"\(first at position 1: 9223372036854775808\)"),
    "ids count": (lambda: asp.unsorted_segment_sum(np.ones(3), [0, 1]), ArrowSparseValueError,
                  "unsorted_segment_sum: segment_ids has length 2 but there are 3 values"),
    "negative id": (lambda: asp.unsorted_segment_sum(np.ones(2), [0, -1]), ArrowSparseIndexError,
                    r"unsorted_segment_sum: segment_ids must be non-negative "
                    r"\(first at position 1: -1\)"),
    "id too big": (lambda: asp.unsorted_segment_sum(np.ones(2), [0, 5], 3), ArrowSparseIndexError,
                   r"unsorted_segment_sum: segment_ids must be < num_segments=3 "
                   r"\(first at position 1: 5\)"),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_error_class_and_message(backend: str, case: str) -> None:
    assert_error(*ERROR_CASES[case])


@pytest.mark.parametrize("fn", [*UNSORTED.values(), asp.unsorted_segment_weighted_sum],
                         ids=lambda f: f.__name__)
def test_object_input_raises_type_error(backend: str, fn: Any) -> None:
    o = object()
    with pytest.raises(TypeError) as info:
        if fn is asp.unsorted_segment_weighted_sum:
            fn(o, o, o)
        else:
            fn(o, o)
    assert isinstance(info.value, ArrowSparseError)


# ------------------------------------------------------------ the family on the device
@on_devices
@pairwise_parametrize("op,values_dtype,offsets_dtype,width", list(UNSORTED), NUMERIC_DTYPES,
                      OFFSETS_DTYPES, WIDTHS)
def test_unsorted_reductions_match_the_cpu(backend: str, op: str, values_dtype: np.dtype,
                                           offsets_dtype: np.dtype, width: int | None) -> None:
    values, _ = sample(values_dtype, width)
    ids = np.random.default_rng(5).integers(0, 6, size=len(values)).astype(offsets_dtype)
    launches = same_as_cpu(backend, UNSORTED[op], values, ids, 8,
                           rounded=backend == "cupy" and op in ROUNDED)
    if backend == "cuda_emu":
        kernel = "scatter_extreme" if op in ("max", "min") else "scatter_add"
        assert kernels(launches) == [kernel, "scatter_finish"]


@on_devices
@pytest.mark.parametrize("op", list(UNSORTED))
def test_unsorted_reductions_of_every_input_form_match_the_cpu(backend: str, op: str) -> None:
    fn, rounded = UNSORTED[op], op in ROUNDED
    rng = np.random.default_rng(13)
    for dtype in FORM_DTYPES:
        values = values_of(dtype, 50, seed=14)
        ids = rng.integers(0, 7, size=50).astype(np.int32)
        same_as_cpu(backend, fn, values, ids, 9, rounded=rounded)
        same_as_cpu(backend, fn, values, ids.astype(np.uint16), rounded=rounded)
    values = values_of(np.float32, (50, 3), seed=15)
    same_as_cpu(backend, fn, values, rng.integers(0, 5, size=50), rounded=rounded)
    same_as_cpu(backend, fn, values_of(bool, 20, seed=16), rng.integers(0, 3, size=20),
                rounded=rounded)


@on_devices
def test_unsorted_arrow_nulls_and_floats_match_the_cpu(backend: str) -> None:
    rounded = backend == "cupy"
    values = pa.array([1.5, None, -0.0, np.nan, 4.0, None, -3.0, 0.0], pa.float64())
    ids = np.array([3, 0, 1, 2, 3, 1, 1, 1])
    for op, fn in UNSORTED.items():
        same_as_cpu(backend, fn, values, ids, 5, min_count=1, rounded=rounded and op in ROUNDED)
    ints = pa.array([5, None, -7, 2, None], pa.int8())
    for op, fn in UNSORTED.items():
        same_as_cpu(backend, fn, ints, np.array([1, 1, 0, 1, 3]),
                    rounded=rounded and op in ROUNDED)


@on_devices
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_max_keeps_plus_zero_and_min_minus_zero_on_every_path(backend: str, dtype: Any) -> None:
    # audit B1 (see test_sorted.py): the scatter path, ids in a shuffled order.
    for op, other, seed, perm_seed in (("max", -1.0, 1, 2), ("min", 1.0, 3, 4)):
        values, lengths, plus, minus = signed_zero_rows(dtype, other, seed)
        ids = np.repeat(np.arange(len(lengths)), lengths)
        perm = np.random.default_rng(perm_seed).permutation(len(ids))
        with on_the_cpu():
            expected = UNSORTED[op](values[perm], ids[perm], len(lengths))
        np.testing.assert_array_equal(expected, 0.0)
        np.testing.assert_array_equal(np.signbit(expected), ~plus if op == "max" else minus)
        same_as_cpu(backend, UNSORTED[op], values[perm], ids[perm], len(lengths))


# ------------------------------------------------------------ the family's device errors
def test_host_and_device_inputs_together_name_the_fix(cp: ModuleType) -> None:
    with pytest.raises(TypeError, match="^unsorted_segment_max: segment_ids is a host.*"
                                        + MIXED_FIX):
        asp.unsorted_segment_max(dev(cp, np.arange(4.0)), np.zeros(4, np.int64))
    assert cp.stats.syncs == 0


def test_o1_checks_stay_on_the_host_with_the_host_messages(cp: ModuleType) -> None:
    with pytest.raises(ValueError, match="^unsorted_segment_sum: segment_ids has length 2 but "
                                         "there are 6 values"):
        asp.unsorted_segment_sum(dev(cp, np.arange(6.0)), dev(cp, [0, 1]), 3)
    assert cp.stats.syncs == 0


@pytest.mark.parametrize(("call", "cls", "message"), [
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
])
def test_data_errors_are_raised_by_the_next_check(cp: ModuleType, call: Callable[..., Any],
                                                  cls: type, message: str) -> None:
    assert_raised_by_the_next_check(cp, call, cls, message)


def test_data_errors_are_raised_at_once_where_a_value_is_read(cp: ModuleType) -> None:
    with pytest.raises(IndexError, match="^unsorted_segment_mean: segment_ids must be "
                                         "non-negative" + AT_ONCE.format(1)):
        asp.unsorted_segment_mean(dev(cp, np.arange(3.0)), dev(cp, [1, -2, 0]))
    assert cp.stats.syncs == 1


# ------------------------------------------------------------ the family's properties
@pytest.mark.hypothesis
@pytest.mark.parametrize("op", list(UNSORTED))
@given(data=st.data())
def test_unsorted_property(op: str, data: st.DataObject) -> None:
    dtype = data.draw(numeric_dtypes())
    num_segments = data.draw(st.integers(1, 6))
    items = data.draw(st.lists(st.tuples(st.one_of(st.none(), scalars(dtype)),
                                         st.integers(0, num_segments - 1)), max_size=20))
    values = pa.array([x for x, _ in items], type=pa.from_numpy_dtype(dtype))
    ids = [s for _, s in items]
    rows = ref.rows_from_segment_ids([x for x, _ in items], ids, num_segments)
    expected = ref.segment_reduce(rows, op)
    assert_arrow(UNSORTED[op](values, ids, num_segments), expected, out_dtype(op, dtype))
    got = UNSORTED[op](sst.chunked(values, data.draw(sst.cuts(len(values)))), ids,
                       num_segments)
    assert isinstance(got, pa.ChunkedArray) and got.num_chunks == 1
    assert_arrow(got.chunk(0), expected, out_dtype(op, dtype))


@pytest.mark.hypothesis
@pytest.mark.parametrize("op", list(UNSORTED))
@given(data=st.data())
def test_unsorted_vectors_property(op: str, data: st.DataObject) -> None:
    # fixed_size_list values, sliced, with null vectors, as an Array and chunked
    width = data.draw(st.integers(1, 3))
    num_segments = data.draw(st.integers(1, 4))
    vec = st.lists(st.floats(-100, 100), min_size=width, max_size=width)
    items = data.draw(st.lists(st.one_of(st.none(), vec), max_size=12))
    ids = data.draw(st.lists(st.integers(0, num_segments - 1), min_size=len(items),
                             max_size=len(items)))
    arr = pa.array([[0.0] * width] + items, type=pa.list_(pa.float64(), width)).slice(1)
    expected = ref.segment_reduce(ref.rows_from_segment_ids(items, ids, num_segments), op)
    assert_arrow(UNSORTED[op](arr, ids, num_segments), expected, np.dtype(np.float64), (width,))
    got = UNSORTED[op](sst.chunked(arr, data.draw(sst.cuts(len(arr)))), ids, num_segments)
    sst.assert_rows(sst.results(got), expected, 1e-12)


@pytest.mark.hypothesis
@pytest.mark.parametrize("op", ["max", "min"])
@given(data=st.data())
def test_max_min_signed_zeros_property(op: str, data: st.DataObject) -> None:
    # max(-0.0, 0.0) = 0.0 and min(-0.0, 0.0) = -0.0 whatever the order of the ids
    # (the parallel parts of the scatter).
    dtype, rows, flat, lens = data.draw(sst.signed_zero_rows())
    expected = ref.segment_reduce([[float(dtype.type(x)) for x in r] for r in rows], op)
    ids = np.repeat(np.arange(len(rows)), lens)
    perm = np.array(data.draw(st.permutations(range(len(flat)))), dtype=np.int64)
    sst.bits_equal(UNSORTED[op](flat[perm], ids[perm], len(rows)), expected, dtype)


# ============================================================ unsorted_segment_weighted_sum
@on_devices
@pytest.mark.parametrize("weights_dtype", WEIGHT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_unsorted_weighted_sum_matches_the_cpu(backend: str, values_dtype: np.dtype,
                                               weights_dtype: Any) -> None:
    values, _ = sample(values_dtype, 2, signed=False)
    weights, _ = sample(weights_dtype, None, seed=3, signed=False)
    ids = np.random.default_rng(5).integers(0, 6, size=len(values))
    same_as_cpu(backend, asp.unsorted_segment_weighted_sum, values, weights, ids, 7,
                rounded=backend == "cupy")


@on_devices
def test_unsorted_weighted_sum_of_every_input_form_matches_the_cpu(backend: str) -> None:
    rng = np.random.default_rng(17)
    for dtype, wdtype in ((np.int8, np.float32), (np.float64, np.float64),
                          (np.uint32, np.uint32)):
        values = values_of(dtype, (40, 2), seed=18)
        weights = np.abs(values_of(wdtype, 40, seed=19))
        same_as_cpu(backend, asp.unsorted_segment_weighted_sum, values, weights,
                    rng.integers(0, 6, size=40), 8, rounded=True)


@pytest.mark.hypothesis
@given(data=st.data())
def test_unsorted_weighted_sum_property(data: st.DataObject) -> None:
    dtype = data.draw(numeric_dtypes())
    width = data.draw(st.sampled_from([None, 2]))
    num_segments = data.draw(st.integers(1, 5))
    n = data.draw(st.integers(0, 15))
    flat = data.draw(st.lists(scalars(dtype), min_size=n, max_size=n))
    w = np.array(data.draw(st.lists(sst.FLOATS32, min_size=n, max_size=n)), dtype=np.float32)
    ids = data.draw(st.lists(st.integers(0, num_segments - 1), min_size=n, max_size=n))
    values = np.array(flat, dtype=dtype)
    if width is not None:
        values = np.stack([values, values], axis=1)
    inner = () if width is None else (width,)
    rows = ref.rows_from_segment_ids(values.tolist(), ids, num_segments)
    wrows = ref.rows_from_segment_ids(w.astype(np.float64).tolist(), ids, num_segments)
    expected = ref.segment_reduce(rows, "weighted_sum", weights=wrows)
    dt = out_dtype("weighted_sum", dtype, np.float32)
    got = asp.unsorted_segment_weighted_sum(values, w, np.array(ids, np.int64), num_segments)
    assert got.dtype == dt and got.shape == (num_segments,) + inner
    assert_close(got, expected_array(expected, 0, inner), dt)
    if width is None:  # Arrow values with nulls, chunked; weights as Arrow
        mask = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
        arr = pa.array([None if m else x for x, m in zip(flat, mask, strict=True)],
                       type=pa.from_numpy_dtype(dtype))
        nrows = ref.rows_from_segment_ids(arr.to_pylist(), ids, num_segments)
        expected = ref.segment_reduce(nrows, "weighted_sum", weights=wrows)
        got = asp.unsorted_segment_weighted_sum(sst.chunked(arr, data.draw(sst.cuts(n))),
                                                pa.array(w), ids, num_segments)
        assert isinstance(got, pa.ChunkedArray)
        assert_arrow(got.chunk(0), expected, dt)
