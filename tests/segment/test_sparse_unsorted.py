"""Tests of ``arrow_sparse.segment.sparse_unsorted``: ``sparse_unsorted_segment_*``.

Caffe2's fused gather + unsorted reduce. Each operation on Caffe2's worked examples
(``../shared/seeds``: the unsorted segment ids, the batch of page ids, the
``SortedSegmentSum`` table) and against a numpy oracle (``data[indices]`` gathered, then
each segment's rows reduced with numpy) on every backend of the ``backend`` fixture;
then Arrow inputs, the parallel parts, NaN and signed zeros, the device paths against
the CPU kernels, and every error, at once on the host and by the next check on the
device.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp

from .._matrix import pairwise_parametrize
from ..conftest import from_backend, on_device, to_backend
from ._helpers import (
    DEFERRED,
    assert_error,
    assert_raised_by_the_next_check,
    dev,
    emulator,
    kernels,
    run_on,
    same_as_cpu,
)

OPS: dict[str, Callable[..., Any]] = {
    "sum": asp.sparse_unsorted_segment_sum,
    "weighted_sum": asp.sparse_unsorted_segment_weighted_sum,
    "mean": asp.sparse_unsorted_segment_mean,
    "max": asp.sparse_unsorted_segment_max,
}
#: The unfused twin of each: the same reduction of rows already gathered.
UNFUSED: dict[str, Callable[..., Any]] = {
    "sum": asp.unsorted_segment_sum, "mean": asp.unsorted_segment_mean,
    "max": asp.unsorted_segment_max,
}
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8]


def oracle(op: str, data: np.ndarray, indices: list[Any], ids: list[int], num_segments: int,
           weights: list[float] | None = None, empty: Any = 0) -> list[Any]:
    """Each segment's gathered rows reduced by numpy; ``None`` indices are skipped.

    Returns one entry per segment: the reduced row, or None where the segment is empty
    and ``op`` has no value for it (mean, max).
    """
    out: list[Any] = []
    for s in range(num_segments):
        picked = [k for k, (i, seg) in enumerate(zip(indices, ids, strict=True))
                  if seg == s and i is not None]
        rows = np.array([data[indices[k]] for k in picked], dtype=np.float64)
        if weights is not None:
            rows = rows * np.array([weights[k] for k in picked]).reshape(
                (-1,) + (1,) * (rows.ndim - 1))
        if not picked:
            out.append(np.zeros(data.shape[1:]) if op in ("sum", "weighted_sum") else None)
        elif op == "max":
            out.append(rows.max(axis=0))
        elif op == "mean":
            out.append(rows.mean(axis=0))
        else:
            out.append(rows.sum(axis=0))
    return out


def dense(results: list[Any], empty: Any, inner: tuple[int, ...]) -> np.ndarray:
    return np.array([np.full(inner, empty, np.float64) if r is None else r for r in results])


def expected_dtype(op: str, dtype: Any, wdtype: Any = None) -> np.dtype:
    d = np.dtype(dtype) if wdtype is None else np.result_type(dtype, wdtype)
    if op == "max":
        return d
    if op == "mean":
        return np.dtype(np.float32) if d == np.float32 else np.dtype(np.float64)
    if d.kind == "f":
        return d
    return np.dtype(np.uint64) if d == np.uint64 else np.dtype(np.int64)


def call(op: str, backend: str, data: Any, indices: Any, ids: Any, *args: Any,
         weights: Any = None, **kwargs: Any) -> Any:
    """``OPS[op]`` with its arguments on ``backend``, the result on the host."""
    if op == "weighted_sum" or weights is not None:
        kwargs["weights"] = weights
    return run_on(backend, OPS[op], data, indices, ids, *args, **kwargs)


# ===================================================================== Caffe2's examples
def test_the_issue_example_sums_unsorted_ids(backend: str) -> None:
    # sparse_segment_sum refuses these ids ("segment_ids must be sorted").
    data = np.arange(12.0).reshape(6, 2)
    got = call("sum", backend, data, [1, 3, 3, 0, 5], [1, 0, 1, 0, 1])
    np.testing.assert_array_equal(got, [[6.0, 8.0], [18.0, 21.0]])
    with pytest.raises(ValueError, match="segment_ids must be sorted"):
        asp.sparse_segment_sum(data, [1, 3, 3, 0, 5], segment_ids=[1, 0, 1, 0, 1])


def test_caffe2_unsorted_ids_over_the_page_id_table(backend: str) -> None:
    # Caffe2's unsorted representation of its batch [1, 2, 3] [2, 4, 6, 7] [3, 6]: the
    # values [4, 1, 3, 6, 3, 2, 7, 2, 6] with ids [1, 0, 2, 1, 0, 1, 1, 0, 2] are the
    # same rows in another order, so the fused unsorted sum over a table of 10 * id
    # equals the sorted one (Caffe2's SparseLengthsSum), [60, 190, 90].
    table = np.arange(8) * 10
    values, ids = [4, 1, 3, 6, 3, 2, 7, 2, 6], [1, 0, 2, 1, 0, 1, 1, 0, 2]
    got = call("sum", backend, table, values, ids)
    assert got.tolist() == [60, 190, 90] and got.dtype == np.int64
    sorted_sum = asp.sparse_segment_sum(table, [1, 2, 3, 2, 4, 6, 7, 3, 6], lengths=[3, 4, 2])
    assert got.tolist() == sorted_sum.tolist()
    assert call("max", backend, table, values, ids).tolist() == [30, 70, 60]
    assert call("mean", backend, table, values, ids).tolist() == [20.0, 47.5, 45.0]


def test_caffe2_sorted_segment_sum_table_in_any_order(backend: str) -> None:
    # Caffe2's SortedSegmentSum([data, [0, 0, 0, 1, 1]]) -> [[12, 7], [14, 12]]; the same
    # rows gathered in a shuffled order with their ids give the same sums.
    data = np.array([[1, 4], [3, 2], [8, 1], [9, 4], [5, 8]], dtype=np.float32)
    assert call("sum", backend, data, [0, 1, 2, 3, 4], [0, 0, 0, 1, 1]).tolist() == \
        [[12, 7], [14, 12]]
    got = call("sum", backend, data, [4, 0, 3, 2, 1], [1, 0, 1, 0, 0])
    assert got.tolist() == [[12, 7], [14, 12]] and got.dtype == np.float32
    assert call("weighted_sum", backend, data, [4, 0, 3, 2, 1], [1, 0, 1, 0, 0],
                weights=[1.0, 2.0, 0.5, 1.0, 0.0]).tolist() == [[10, 9], [9.5, 10]]


# ============================================================================ the oracle
@pairwise_parametrize("op,dtype,inner", list(OPS), DTYPES, [(), (3,), (2, 2)])
def test_against_the_numpy_oracle(backend: str, op: str, dtype: Any,
                                  inner: tuple[int, ...]) -> None:
    rng = np.random.default_rng(len(inner) * 10 + DTYPES.index(dtype))
    data = rng.integers(0, 50, size=(9, *inner)).astype(dtype)
    indices = rng.integers(0, 9, size=40).tolist()
    ids = rng.integers(0, 6, size=40).tolist()  # unsorted; segments 6 and 7 empty
    ids[3] = 0  # segment 0 is not empty
    weights = (rng.random(40) * 4 - 2).round(2).tolist() if op == "weighted_sum" else None
    got = call(op, backend, data, indices, ids, 8, weights=weights, **(
        {"empty_value": 7} if op in ("mean", "max") else {}))
    wdtype = np.float64 if weights is not None else None
    assert got.dtype == expected_dtype(op, dtype, wdtype)
    assert got.shape == (8, *inner)
    want = dense(oracle(op, data, indices, ids, 8, weights), 7, inner)
    if got.dtype.kind == "f" and op != "max":
        np.testing.assert_allclose(got, want, rtol=1e-6 if got.dtype == np.float32 else 1e-12)
    else:
        np.testing.assert_array_equal(got, want.astype(got.dtype))
    if op in UNFUSED:  # the fused op is the unfused one over the gathered rows
        unfused = UNFUSED[op](data[indices], ids, 8, **(
            {"empty_value": 7} if op in ("mean", "max") else {}))
        np.testing.assert_allclose(got, unfused, rtol=1e-6)


@pytest.mark.parametrize("op", ["sum", "mean"])
def test_optional_weights_scale_the_rows(backend: str, op: str) -> None:
    data = np.arange(12.0).reshape(6, 2)
    indices, ids, weights = [1, 3, 3, 0, 5], [1, 0, 1, 0, 1], [1.0, 2.0, 0.5, 1.0, -1.0]
    got = call(op, backend, data, indices, ids, weights=weights)
    np.testing.assert_allclose(got, dense(oracle(op, data, indices, ids, 2, weights), 0, (2,)))
    ints = call(op, backend, np.arange(6), [1, 2, 5], [0, 0, 1], weights=np.array([2, 3, 1]))
    assert ints.tolist() == ([8, 5] if op == "sum" else [4.0, 5.0])


def test_num_segments_and_empty_segments(backend: str) -> None:
    data = np.arange(12.0).reshape(6, 2)
    assert call("sum", backend, data, [1, 3], [2, 0], 4).tolist() == \
        [[6, 7], [0, 0], [2, 3], [0, 0]]
    assert call("mean", backend, data, [1], [1], 3, empty_value=-1).tolist() == \
        [[-1, -1], [2, 3], [-1, -1]]
    none = np.array([], np.int64)
    assert call("max", backend, data, none, none, 2).tolist() == [[0, 0]] * 2
    assert asp.sparse_unsorted_segment_max(data, [], [], 2).tolist() == [[0, 0]] * 2
    assert call("sum", backend, data, np.array([], np.int32), none, 0).shape == (0, 2)


def test_max_propagates_nan_and_prefers_positive_zero(backend: str) -> None:
    data = np.array([[1.0, -0.0], [np.nan, 0.0], [3.0, -0.0], [2.0, 0.0]])
    for order in ([0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]):
        got = call("max", backend, data, order, [0] * 4)
        assert np.isnan(got[0, 0]) and got[0, 1] == 0.0 and not np.signbit(got[0, 1])
    got = call("max", backend, data, [2, 0], [0, 0])
    assert got[0, 0] == 3.0 and np.signbit(got[0, 1])  # only -0.0 seen


# ============================================================================== Arrow
def test_arrow_indices_give_arrow_with_nulls_for_missing(backend: str) -> None:
    data = np.arange(6.0)
    indices = pa.array([4, None, 1, 2])
    ids = [0, 1, 0, 2]
    got = asp.sparse_unsorted_segment_max(data, indices, ids, 4)
    assert isinstance(got, pa.Array) and got.to_pylist() == [4.0, None, 2.0, None]
    assert asp.sparse_unsorted_segment_mean(data, indices, ids, 4).to_pylist() == \
        [2.5, None, 2.0, None]
    assert asp.sparse_unsorted_segment_sum(data, indices, ids, 4).to_pylist() == \
        [5.0, 0.0, 2.0, 0.0]
    table = pa.array([[1.0, 2.0], [3.0, 4.0]], pa.list_(pa.float64(), 2))
    vectors = asp.sparse_unsorted_segment_sum(table, pa.array([1, 0, 1], pa.int32()),
                                              pa.array([0, 0, 1]))
    assert vectors.type == pa.list_(pa.float64(), 2)
    assert vectors.to_pylist() == [[4.0, 6.0], [3.0, 4.0]]
    chunked = asp.sparse_unsorted_segment_sum(data, pa.chunked_array([[1, 2], [3]]), [0, 1, 0])
    assert isinstance(chunked, pa.ChunkedArray) and chunked.to_pylist() == [4.0, 2.0]


# ====================================================================== large and parallel
def test_parallel_parts_match_numpy(backend: str) -> None:
    # Large enough for one part per thread: partial results combined in part order.
    rng = np.random.default_rng(11)
    num, num_segments = 300_000, 500
    table = rng.random((1000, 2)).astype(np.float32)
    indices = rng.integers(0, 1000, size=num)
    ids = rng.integers(0, num_segments, size=num)
    gathered = table[indices].astype(np.float64)
    sums = np.zeros((num_segments, 2))
    np.add.at(sums, ids, gathered)
    counts = np.bincount(ids, minlength=num_segments)[:, None]
    np.testing.assert_allclose(call("sum", backend, table, indices, ids, num_segments), sums,
                               rtol=1e-6)
    np.testing.assert_allclose(call("mean", backend, table, indices, ids, num_segments),
                               sums / counts, rtol=1e-6)
    top = np.full((num_segments, 2), -np.inf, np.float32)
    np.maximum.at(top, ids, table[indices])
    np.testing.assert_array_equal(call("max", backend, table, indices, ids, num_segments), top)


# ========================================================================== the device
@pytest.mark.parametrize("op", list(OPS))
def test_device_runs_the_cuda_kernels_like_the_cpu(backend: str, op: str) -> None:
    rng = np.random.default_rng(3)
    table = rng.standard_normal((20, 4))
    indices = rng.integers(0, 20, size=200).astype(np.int32)
    ids = rng.integers(0, 12, size=200)
    kwargs = {"weights": rng.random(200)} if op == "weighted_sum" else {}
    launches = same_as_cpu(backend, OPS[op], table, indices, ids, 14, rtol=1e-12, **kwargs)
    emu = emulator(backend)
    if emu is not None and on_device(backend):
        add = "gather_scatter_extreme" if op == "max" else "gather_scatter_add"
        assert kernels(launches) == [add, "gather_scatter_finish"]


def test_host_errors(backend: str) -> None:
    data = np.arange(12.0).reshape(6, 2)
    fn = asp.sparse_unsorted_segment_sum
    assert_error(lambda: fn(data, [1, 6, 0], [0, 1, 1]), IndexError,
                 r"sparse_unsorted_segment_sum: indices out of range \[0, 6\) "
                 r"\(first at position 1: 6\)")
    assert_error(lambda: asp.sparse_unsorted_segment_max(data, [1, 2, -1], [0, 1, 1]),
                 IndexError, r"sparse_unsorted_segment_max: indices out of range \[0, 6\) "
                             r"\(first at position 2: -1\)")
    assert_error(lambda: fn(data, [1, 2, 0], [0, 3, 1], 2), IndexError,
                 r"sparse_unsorted_segment_sum: segment_ids must be < num_segments=2 "
                 r"\(first at position 1: 3\)")
    assert_error(lambda: asp.sparse_unsorted_segment_mean(data, [1, 2], [0, -2], 2),
                 IndexError, r"sparse_unsorted_segment_mean: segment_ids must be non-negative "
                             r"\(first at position 1: -2\)")
    # a segment id is checked under a null index; an index is not
    assert fn(data, pa.array([None, 1]), [0, 0], 1).to_pylist() == [[2.0, 3.0]]
    assert_error(lambda: fn(data, pa.array([None, 1]), [5, 0], 1), IndexError,
                 r"sparse_unsorted_segment_sum: segment_ids must be < num_segments=1")
    assert_error(lambda: fn(data, [1, 2], [0]), ValueError,
                 "sparse_unsorted_segment_sum: segment_ids has length 1 but there are 2 values")
    assert_error(lambda: fn(data, [1, 2], [0, 1], weights=[1.0]), ValueError,
                 r"sparse_unsorted_segment_sum: weights must hold one weight per index \(2\)")
    assert_error(lambda: fn(data, [1.0, 2.0], [0, 1]), TypeError,
                 "sparse_unsorted_segment_sum: indices must be 1-D integers, got float64")
    assert_error(lambda: fn(data, pa.array([[1], [2]]), [0, 1]), TypeError,
                 "sparse_unsorted_segment_sum: indices must be flat")
    assert_error(lambda: fn(data, [1, 2], [0.0, 1.0]), TypeError,
                 "sparse_unsorted_segment_sum: segment_ids must have an integer dtype")
    assert_error(lambda: asp.sparse_unsorted_segment_weighted_sum(data, [1], [0], weights=None),
                 TypeError, "sparse_unsorted_segment_weighted_sum: weights must be given")
    assert_error(lambda: asp.sparse_unsorted_segment_max(np.arange(3), [1], [0], 2,
                                                         empty_value=0.5),
                 ValueError, "sparse_unsorted_segment_max: empty_value 0.5 does not fit")


@pytest.mark.parametrize("op", list(OPS))
def test_device_errors_are_raised_by_the_next_check(cp: ModuleType, op: str) -> None:
    fn = OPS[op]
    kwargs = {"weights": dev(cp, [1.0, 1.0, 1.0])} if op == "weighted_sum" else {}
    data = dev(cp, np.arange(12.0).reshape(6, 2))
    assert_raised_by_the_next_check(
        cp, lambda cp: fn(data, dev(cp, [1, 9, 0]), dev(cp, [0, 1, 1]), 2, **kwargs),
        IndexError, fn.__name__ + r": indices out of range \[0, len\(data\)\)"
        + DEFERRED.format(1))
    assert_raised_by_the_next_check(
        cp, lambda cp: fn(data, dev(cp, [1, 2, 0]), dev(cp, [0, 4, 1]), 2, **kwargs),
        IndexError, fn.__name__ + ": segment_ids must be < num_segments" + DEFERRED.format(1))
    assert_raised_by_the_next_check(
        cp, lambda cp: fn(data, dev(cp, [1, 2, 0]), dev(cp, [0, 1, -1]), 2, **kwargs),
        IndexError, fn.__name__ + ": segment_ids must be non-negative" + DEFERRED.format(2))


def test_results_stay_on_the_device(backend: str) -> None:
    data = to_backend(np.arange(12.0).reshape(6, 2), backend)
    got = asp.sparse_unsorted_segment_sum(data, to_backend(np.array([1, 3]), backend),
                                          to_backend(np.array([1, 0]), backend), 2)
    assert from_backend(got, backend).tolist() == [[6.0, 7.0], [2.0, 3.0]]
