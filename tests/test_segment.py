"""Tests of ``arrow_sparse.segment`` against the plain-Python oracles."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseError

from . import _reference_segment as ref

# Caffe2's batch of three examples, in every representation.
CAFFE2_VALUES = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
CAFFE2_ROWS = [[1, 2, 3], [2, 4, 6, 7], [3, 6]]
CAFFE2_LENGTHS = [3, 4, 2]
CAFFE2_OFFSETS = [0, 3, 7, 9]
CAFFE2_IDS = [0, 0, 0, 1, 1, 1, 1, 2, 2]
# Caffe2's SortedSegmentSum matrix example.
CAFFE2_DATA = np.array([[1, 4], [3, 2], [8, 1], [9, 4], [5, 8]])
CAFFE2_DATA_IDS = [0, 0, 0, 1, 1]

SORTED = {
    "sum": asp.segment_sum, "mean": asp.segment_mean, "max": asp.segment_max,
    "min": asp.segment_min, "prod": asp.segment_prod, "logsumexp": asp.segment_logsumexp,
    "argmax": asp.segment_argmax, "argmin": asp.segment_argmin,
}
UNSORTED = {
    "sum": asp.unsorted_segment_sum, "mean": asp.unsorted_segment_mean,
    "max": asp.unsorted_segment_max, "min": asp.unsorted_segment_min,
}
SPARSE = {"sum": asp.sparse_segment_sum, "mean": asp.sparse_segment_mean,
          "max": asp.sparse_segment_max}
EMPTY = {"sum": 0, "weighted_sum": 0, "prod": 1, "mean": 0, "max": 0, "min": 0,
         "logsumexp": -np.inf, "argmax": -1, "argmin": -1}


def out_dtype(op: str, dtype: Any, wdtype: Any = None) -> np.dtype:
    """The documented output dtype of each reduction."""
    dtype = np.dtype(dtype)
    if op in ("sum", "prod"):
        if dtype.kind == "f":
            return dtype
        return np.dtype(np.uint64) if dtype == np.uint64 else np.dtype(np.int64)
    if op == "weighted_sum":
        return out_dtype("sum", np.result_type(dtype, wdtype))
    if op in ("mean", "logsumexp"):
        return np.dtype(np.float32) if dtype == np.float32 else np.dtype(np.float64)
    if op in ("argmax", "argmin"):
        return np.dtype(np.int64)
    return dtype


def expected_array(results: list[Any], empty: Any, inner: tuple[int, ...] = ()) -> np.ndarray:
    """Oracle results as a float64 array, missing rows -> ``empty``."""
    out = np.empty((len(results),) + inner, dtype=np.float64)
    for r, x in enumerate(results):
        out[r] = empty if x is None else np.asarray(x, dtype=np.float64)
    return out


def assert_close(actual: Any, expected: Any, dtype: np.dtype) -> None:
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if dtype == np.float32:
        np.testing.assert_allclose(actual, expected, rtol=2e-6, atol=1e-3)
    elif dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-9)
    else:
        np.testing.assert_array_equal(actual, expected)


def assert_arrow(result: Any, expected: list[Any], dtype: np.dtype,
                 inner: tuple[int, ...] = ()) -> None:
    """An Arrow result: its type, its nulls and its values."""
    assert isinstance(result, pa.Array)
    t = pa.from_numpy_dtype(dtype)
    for size in reversed(inner):
        t = pa.list_(t, size)
    assert result.type == t
    got = result.to_pylist()
    assert [g is None for g in got] == [e is None for e in expected]
    present = [i for i, e in enumerate(expected) if e is not None]
    if present:
        assert_close([got[i] for i in present],
                     expected_array([expected[i] for i in present], 0, inner), dtype)


# ================================================================ Caffe2 examples
@pytest.mark.parametrize("op", list(SORTED))
def test_caffe2_batch_every_representation(op: str) -> None:
    expected = ref.segment_reduce(CAFFE2_ROWS, op)
    fn = SORTED[op]
    results = [
        fn(CAFFE2_VALUES, offsets=CAFFE2_OFFSETS),
        fn(CAFFE2_VALUES, lengths=CAFFE2_LENGTHS),
        fn(CAFFE2_VALUES, segment_ids=CAFFE2_IDS),
        fn(asp.Jagged.from_lengths(CAFFE2_VALUES, CAFFE2_LENGTHS)),
        fn(pa.array(CAFFE2_ROWS)).to_numpy(),
        fn(pa.array(CAFFE2_VALUES), lengths=CAFFE2_LENGTHS).to_numpy(),
    ]
    for got in results:
        assert got.dtype == out_dtype(op, np.int64)
        assert_close(got, expected_array(expected, 0), out_dtype(op, np.int64))


def test_caffe2_matrix_example() -> None:
    expected = np.array([[12, 7], [14, 12]])
    got = asp.segment_sum(CAFFE2_DATA, segment_ids=CAFFE2_DATA_IDS)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == np.int64
    fsl = pa.FixedSizeListArray.from_arrays(pa.array(CAFFE2_DATA.ravel()), 2)
    arrow = asp.segment_sum(fsl, segment_ids=CAFFE2_DATA_IDS)
    assert arrow.type == pa.list_(pa.int64(), 2)
    assert arrow.to_pylist() == expected.tolist()
    rows = pa.array([CAFFE2_DATA[:3].tolist(), CAFFE2_DATA[3:].tolist()],
                    type=pa.list_(pa.list_(pa.int64(), 2)))
    assert asp.segment_sum(rows).to_pylist() == expected.tolist()


def test_caffe2_unsorted_and_scores() -> None:
    values = np.array([4, 1, 3, 6, 3, 2, 7, 2, 6])
    ids = [1, 0, 2, 1, 0, 1, 1, 0, 2]
    np.testing.assert_array_equal(asp.unsorted_segment_sum(values, ids), [6, 19, 9])
    scores = np.array([0.4, 0.7, 0.5, 0.5, 0.1])
    np.testing.assert_allclose(
        asp.segment_weighted_sum(np.ones(5), scores, segment_ids=[0, 0, 1, 1, 1]), [1.1, 1.1])


# =========================================================== dtypes and accumulators
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod", "logsumexp", "argmax"])
def test_sorted_dtypes(op: str, values_dtype: np.dtype) -> None:
    rows = [[3, 1, 2], [], [5], [7, 7, 0, 1]]
    flat = np.array([x for row in rows for x in row], dtype=values_dtype)
    got = SORTED[op](flat, lengths=[len(r) for r in rows])
    assert got.dtype == out_dtype(op, values_dtype)
    assert_close(got, expected_array(ref.segment_reduce(rows, op), EMPTY[op]),
                 out_dtype(op, values_dtype))


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod", "argmin"])
def test_sorted_bool_values(op: str) -> None:
    rows = [[True, False, True], [], [False]]
    got = SORTED[op](pa.array(rows))
    dtype = np.dtype(bool) if op in ("max", "min") else out_dtype(op, np.int64)
    int_rows = [[int(x) for x in row] for row in rows]
    assert_arrow(got, ref.segment_reduce(int_rows, op), dtype)


def test_integer_sums_accumulate_in_int64() -> None:
    values = np.full(1000, 100, dtype=np.int8)
    assert asp.segment_sum(values, lengths=[1000]).tolist() == [100_000]
    big = np.full(4, 2**31 - 1, dtype=np.int32)
    assert asp.segment_sum(big, lengths=[4]).tolist() == [4 * (2**31 - 1)]
    assert asp.segment_sum(np.array([2**63 + 5], dtype=np.uint64), lengths=[1]).dtype == np.uint64
    assert asp.segment_weighted_sum(big, np.full(4, 2, np.int16), lengths=[4]).tolist() == \
        [8 * (2**31 - 1)]


def test_float32_sum_precision_on_a_long_segment() -> None:
    rng = np.random.default_rng(7)
    values = rng.random(1_000_000, dtype=np.float32) * 2 - 0.5
    exact = math.fsum(values.astype(np.float64).tolist())
    got = asp.segment_sum(values, lengths=[len(values)])
    assert got.dtype == np.float32
    # float64 accumulation: the only error is the final rounding to float32.
    assert abs(float(got[0]) - exact) <= abs(exact) * 2.0**-23
    mean = asp.segment_mean(values, offsets=[0, len(values)])
    assert abs(float(mean[0]) - exact / len(values)) <= abs(exact / len(values)) * 2.0**-23
    w = np.full(len(values), 0.5, dtype=np.float32)
    wsum = asp.segment_weighted_sum(values, w, lengths=[len(values)])
    assert abs(float(wsum[0]) - exact / 2) <= abs(exact / 2) * 2.0**-23
    table = values.reshape(-1, 1)
    fused = asp.sparse_segment_sum(table, np.arange(len(values)), lengths=[len(values)])
    assert abs(float(fused[0, 0]) - exact) <= abs(exact) * 2.0**-23


def test_float32_precision_on_long_segments_of_every_kernel() -> None:
    # 10**6 float32 values per segment against math.fsum, through the other float
    # kernels: 2-D rows in float64 registers, unsorted parts combined in part order,
    # a weighted bag (float64 products and sums), and max/min (exact).
    rng = np.random.default_rng(17)
    wide = rng.random((1_000_000, 16), dtype=np.float32) * 2 - 0.5
    exact = np.array([math.fsum(col) for col in wide.astype(np.float64).T.tolist()])
    bound = np.abs(exact) * 2.0**-23
    got = asp.segment_sum(wide, lengths=[len(wide)])[0].astype(np.float64)
    assert np.all(np.abs(got - exact) <= bound)
    col = np.ascontiguousarray(wide[:, 0])
    ids = rng.integers(0, 2, size=len(col))
    sums = asp.unsorted_segment_sum(col, ids, 2).astype(np.float64)
    exact_ids = [math.fsum(col[ids == k].astype(np.float64).tolist()) for k in (0, 1)]
    assert np.all(np.abs(sums - exact_ids) <= np.abs(exact_ids) * 2.0**-23)
    w = rng.random(len(col), dtype=np.float32)
    table = col.reshape(-1, 1).repeat(16, axis=1)
    bag = asp.embedding_bag(table, np.arange(len(col)), lengths=[len(col)],
                            per_sample_weights=w)[0].astype(np.float64)
    exact_w = math.fsum((col.astype(np.float64) * w.astype(np.float64)).tolist())
    assert np.all(np.abs(bag - exact_w) <= abs(exact_w) * 2.0**-23)
    assert asp.segment_max(col, lengths=[len(col)])[0] == col.max()
    assert asp.unsorted_segment_min(col, ids, 2).tolist() == [col[ids == 0].min(),
                                                             col[ids == 1].min()]


def test_float16_rejected() -> None:
    with pytest.raises(TypeError, match="segment_sum: values of dtype float16"):
        asp.segment_sum(np.ones(3, np.float16), lengths=[3])


# =============================================================== nulls and empties
def test_empty_rows_numpy_and_arrow() -> None:
    rows = [[1.0, 2.0], [], [4.0]]
    arr = pa.array(rows)
    flat = np.array([1.0, 2.0, 4.0])
    lengths = [2, 0, 1]
    for op, fn in SORTED.items():
        expected = ref.segment_reduce(rows, op)
        assert_arrow(fn(arr), expected, out_dtype(op, np.float64))
        got = fn(flat, lengths=lengths)
        assert_close(got, expected_array(expected, EMPTY[op]), out_dtype(op, np.float64))
    assert asp.segment_sum(arr).to_pylist()[1] == 0.0
    assert asp.segment_prod(arr).to_pylist()[1] == 1.0
    assert asp.segment_mean(arr).to_pylist()[1] is None
    assert asp.segment_logsumexp(flat, lengths=lengths)[1] == -np.inf


def test_empty_value_and_min_count() -> None:
    flat = np.array([1.0, 2.0, 4.0])
    assert np.isnan(asp.segment_max(flat, lengths=[2, 0, 1], empty_value=np.nan)[1])
    assert asp.segment_mean(flat, lengths=[2, 0, 1], empty_value=-1).tolist() == [1.5, -1, 4]
    assert asp.segment_sum(flat, lengths=[2, 0, 1], min_count=2, empty_value=-7).tolist() == \
        [3, -7, -7]
    arr = pa.array([[1, 2], [], [3, None]])
    assert asp.segment_sum(arr, min_count=1).to_pylist() == [3, None, 3]
    assert asp.segment_sum(arr, min_count=2).to_pylist() == [3, None, None]
    assert asp.segment_max(arr, min_count=2).to_pylist() == [2, None, None]
    assert asp.segment_argmax(flat, lengths=[2, 0, 1], empty_value=99).tolist() == [1, 99, 0]
    with pytest.raises(ValueError, match=r"segment_max: empty_value -inf does not fit the "
                                         r"output dtype int64"):
        asp.segment_max(np.array([1, 2]), lengths=[2], empty_value=-np.inf)
    with pytest.raises(ValueError, match="min_count must be non-negative"):
        asp.segment_sum(flat, lengths=[3], min_count=-1)
    with pytest.raises(TypeError, match="min_count must be an integer"):
        asp.segment_sum(flat, lengths=[3], min_count=1.5)


def test_empty_value_signed_zero_is_kept_issue_3() -> None:
    # Regression: the empty_value cache keyed -0.0 and 0.0 alike (they compare and hash
    # equal), so the sign of an empty row depended on the previous call.
    first = asp.segment_mean(np.ones(1), lengths=[1, 0], empty_value=-0.0)
    second = asp.segment_mean(np.ones(1), lengths=[1, 0], empty_value=0.0)
    third = asp.segment_mean(np.ones(1, np.float32), lengths=[1, 0],
                             empty_value=np.float32(-0.0))
    assert np.signbit(first[1]) and not np.signbit(second[1]) and np.signbit(third[1])


def test_null_rows_and_null_values() -> None:
    rows = [[1.0, None, 3.0], None, [None], [], [2.0, 8.0]]
    arr = pa.array(rows)
    j = asp.Jagged.from_arrow(arr)
    for op, fn in SORTED.items():
        expected = ref.segment_reduce(rows, op)
        assert_arrow(fn(arr), expected, out_dtype(op, np.float64))
        # A Jagged gives numpy, null rows reducing as empty rows.
        as_empty = [[] if r is None else r for r in rows]
        got = fn(j)
        assert isinstance(got, np.ndarray)
        assert_close(got, expected_array(ref.segment_reduce(as_empty, op), EMPTY[op]),
                     out_dtype(op, np.float64))
    # The mean divides by the non-null count.
    assert asp.segment_mean(arr).to_pylist() == [2.0, None, None, None, 5.0]
    assert asp.segment_argmax(arr).to_pylist() == [2, None, None, None, 1]


def test_null_rows_range_is_never_read() -> None:
    # Arrow allows any values under a null row; here a NaN and a huge value.
    values = pa.array([1.0, np.nan, 1e300, 2.0])
    offsets = pa.array([0, 1, 3, 4], pa.int32())
    arr = pa.ListArray.from_arrays(offsets, values, mask=pa.array([False, True, False]))
    assert asp.segment_sum(arr).to_pylist() == [1.0, None, 2.0]
    assert asp.segment_max(arr).to_pylist() == [1.0, None, 2.0]
    ids = pa.ListArray.from_arrays(offsets, pa.array([0, -5, 10**9, 1]),
                                   mask=pa.array([False, True, False]))
    assert asp.sparse_segment_sum(np.array([10, 20]), ids).to_pylist() == [10, None, 20]


# =============================================================== structure arguments
def test_offsets_start_above_zero_and_end_early() -> None:
    values = np.array([100, 1, 2, 3, 2, 4, 6, 7, 3, 6, 100])
    got = asp.segment_sum(values, offsets=np.array([1, 4, 8, 10], dtype=np.int32))
    np.testing.assert_array_equal(got, [6, 19, 9])
    sliced = pa.array([[100], [1, 2, 3], [2, 4, 6, 7], [3, 6], [100]]).slice(1, 3)
    assert asp.segment_sum(sliced).to_pylist() == [6, 19, 9]
    assert asp.segment_max(sliced).to_pylist() == [3, 7, 6]


def test_num_segments_adds_trailing_empty_rows() -> None:
    for kw in ({"offsets": CAFFE2_OFFSETS}, {"lengths": CAFFE2_LENGTHS},
               {"segment_ids": CAFFE2_IDS}):
        got = asp.segment_sum(CAFFE2_VALUES, num_segments=5, **kw)
        np.testing.assert_array_equal(got, [6, 19, 9, 0, 0])
        np.testing.assert_array_equal(asp.segment_mean(CAFFE2_VALUES, num_segments=4, **kw),
                                      [2, 4.75, 4.5, 0])
    arrow = asp.segment_max(pa.array([[1], None]), num_segments=3)
    assert arrow.to_pylist() == [1, None, None]
    with pytest.raises(ValueError, match="segment_sum: num_segments=2 is less than the 3 rows"):
        asp.segment_sum(CAFFE2_VALUES, lengths=CAFFE2_LENGTHS, num_segments=2)
    with pytest.raises(IndexError, match=r"segment_sum: segment_ids must be < num_segments=2 "
                                         r"\(first at position 7: 2\)"):
        asp.segment_sum(CAFFE2_VALUES, segment_ids=CAFFE2_IDS, num_segments=2)


def test_structure_errors() -> None:
    v = CAFFE2_VALUES
    with pytest.raises(ValueError, match=r"segment_sum: pass exactly one of offsets=, "
                                         r"lengths=, segment_ids= \(got none\)"):
        asp.segment_sum(v)
    with pytest.raises(ValueError, match=r"got offsets=, lengths="):
        asp.segment_sum(v, offsets=CAFFE2_OFFSETS, lengths=CAFFE2_LENGTHS)
    with pytest.raises(ValueError, match="segment_mean: lengths sum to 8 but there are 9 values"):
        asp.segment_mean(v, lengths=[3, 4, 1])
    with pytest.raises(ValueError, match=r"segment_max: offsets must be non-decreasing "
                                         r"\(first at position 2: 2\)"):
        asp.segment_max(v, offsets=[0, 3, 2])
    with pytest.raises(ValueError, match=r"segment_max: offsets exceed the number of values 9"):
        asp.segment_max(v, offsets=[0, 3, 10])
    with pytest.raises(ValueError, match=r"offsets must have at least one element"):
        asp.segment_sum(v, offsets=[])
    with pytest.raises(ValueError, match=r"segment_min: lengths must be non-negative "
                                         r"\(first at position 1: -1\)"):
        asp.segment_min(v, lengths=[10, -1])
    with pytest.raises(ValueError, match=r"segment_prod: segment_ids must be sorted "
                                         r"\(non-decreasing\) \(first at position 3: 0\)"):
        asp.segment_prod(v[:4], segment_ids=[0, 1, 1, 0])
    with pytest.raises(IndexError, match=r"segment_ids must be non-negative "
                                         r"\(first at position 0: -1\)"):
        asp.segment_sum(v[:2], segment_ids=[-1, 0])
    with pytest.raises(ValueError, match="segment_ids has length 2 but there are 9 values"):
        asp.segment_sum(v, segment_ids=[0, 0])
    with pytest.raises(ValueError, match="segment_sum: values is a list array and carries its "
                                         "own offsets; do not pass lengths="):
        asp.segment_sum(pa.array(CAFFE2_ROWS), lengths=CAFFE2_LENGTHS)
    with pytest.raises(TypeError, match="offsets must have an integer dtype, got float64"):
        asp.segment_sum(v, offsets=np.array([0.0, 9.0]))
    with pytest.raises(TypeError, match="segment_sum: values has nested lists"):
        asp.segment_sum(pa.array([[[1]], [[2, 3]]]))
    with pytest.raises(TypeError, match="list values of Arrow type string"):
        asp.segment_sum(pa.array([["a"]]))
    with pytest.raises(TypeError, match="values must have a numeric dtype"):
        asp.segment_sum(np.array(["a", "b"]), lengths=[2])


ALL_FUNCTIONS = [
    *SORTED.values(), asp.segment_weighted_sum, *UNSORTED.values(),
    asp.unsorted_segment_weighted_sum, *SPARSE.values(), asp.sparse_segment_weighted_sum,
    asp.embedding_bag, asp.gather, asp.scatter_assign, asp.scatter_weighted_sum,
]


def _call_with_objects(fn: Any) -> None:
    """Call ``fn`` with ``object()`` for every array argument."""
    o = object()
    name = fn.__name__
    if name == "scatter_weighted_sum":
        fn(o, 1.0, [0], o, 1.0)
    elif name in ("scatter_assign", "unsorted_segment_weighted_sum"):
        fn(o, o, o)
    elif name == "sparse_segment_weighted_sum":
        fn(o, o, weights=o, lengths=[1])
    elif name == "segment_weighted_sum":
        fn(o, o, lengths=[1])
    elif name.startswith(("unsorted", "gather")):
        fn(o, o)
    elif name.startswith(("sparse", "embedding")):
        fn(o, o, lengths=[1])
    else:
        fn(o, lengths=[1])


@pytest.mark.parametrize("fn", ALL_FUNCTIONS, ids=lambda f: f.__name__)
def test_object_input_raises_type_error(fn: Any) -> None:
    with pytest.raises(TypeError) as info:
        _call_with_objects(fn)
    assert isinstance(info.value, ArrowSparseError)


# ======================================================================= NaN and inf
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_propagates_like_numpy(dtype: Any) -> None:
    values = np.array([1, np.nan, 3, 5, 2, np.nan, np.nan, 4, -np.inf], dtype=dtype)
    lengths = [3, 2, 2, 2]
    starts = [0, 3, 5, 7]
    np.testing.assert_array_equal(asp.segment_max(values, lengths=lengths),
                                  np.maximum.reduceat(values, starts))
    np.testing.assert_array_equal(asp.segment_min(values, lengths=lengths),
                                  np.minimum.reduceat(values, starts))
    np.testing.assert_array_equal(asp.segment_sum(values, lengths=lengths),
                                  np.add.reduceat(values, starts))
    for fn, np_fn in ((asp.segment_argmax, np.argmax), (asp.segment_argmin, np.argmin)):
        expected = [np_fn(values[s:s + n]) for s, n in zip(starts, lengths, strict=True)]
        np.testing.assert_array_equal(fn(values, lengths=lengths), expected)
    wide = np.stack([values, values[::-1]], axis=1)
    np.testing.assert_array_equal(asp.segment_max(wide, lengths=lengths),
                                  np.maximum.reduceat(wide, starts, axis=0))
    np.testing.assert_array_equal(asp.segment_argmax(wide, lengths=lengths),
                                  [np.argmax(wide[s:s + n], axis=0)
                                   for s, n in zip(starts, lengths, strict=True)])
    table = np.array([[1.0, np.nan], [2.0, 0.0]], dtype=dtype)
    np.testing.assert_array_equal(asp.sparse_segment_max(table, [0, 1], lengths=[2]),
                                  [[2.0, np.nan]])
    np.testing.assert_array_equal(asp.unsorted_segment_max(values, [0, 1] * 4 + [0]),
                                  [np.nan, np.nan])


def test_logsumexp_is_stable() -> None:
    scipy_special = pytest.importorskip("scipy.special")
    values = np.array([1000.0, 1000.0, -1000.0, -1000.0, np.inf, 1.0, -np.inf, -np.inf,
                       np.nan, 1.0, 0.5, -3.0], dtype=np.float64)
    lengths = [2, 2, 2, 2, 2, 2]
    got = asp.segment_logsumexp(values, lengths=lengths)
    expected = [scipy_special.logsumexp(values[s:s + 2]) if s != 6 else -np.inf
                for s in range(0, 12, 2)]
    np.testing.assert_allclose(got, expected)
    got32 = asp.segment_logsumexp(values.astype(np.float32), lengths=lengths)
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, np.array(expected, dtype=np.float32), rtol=1e-6)


# ============================================================================ vectors
def test_vector_values_keep_their_axes() -> None:
    rng = np.random.default_rng(1)
    values = rng.normal(size=(9, 2, 3))
    lengths = [3, 0, 6]
    for op in ("sum", "mean", "max", "prod", "logsumexp", "argmin"):
        got = SORTED[op](values, lengths=lengths)
        assert got.shape == (3, 2, 3)
        flat = SORTED[op](values.reshape(9, 6), lengths=lengths)
        np.testing.assert_array_equal(got.reshape(3, 6), flat)
    np.testing.assert_allclose(asp.segment_sum(values, lengths=lengths)[2],
                               values[3:].sum(axis=0))
    nd = asp.segment_sum(pa.array([values[:3].tolist()],
                                  type=pa.list_(pa.list_(pa.list_(pa.float64(), 3), 2))))
    assert nd.type == pa.list_(pa.list_(pa.float64(), 3), 2)
    np.testing.assert_allclose(np.array(nd.to_pylist()), values[:3].sum(axis=0)[None])


def test_fixed_size_list_nulls() -> None:
    t = pa.list_(pa.list_(pa.float32(), 2))
    arr = pa.array([[[1, 2], None, [3, 4]], None, [None]], type=t)
    assert asp.segment_sum(arr).to_pylist() == [[4, 6], None, [0, 0]]
    assert asp.segment_mean(arr).to_pylist() == [[2, 3], None, None]
    with pytest.raises(ValueError, match="nulls inside fixed_size_list elements"):
        asp.segment_sum(pa.array([[[1, None]]], type=t))


# ============================================================= Arrow in, Arrow out
def test_chunked_in_chunked_out() -> None:
    chunked = pa.chunked_array([pa.array([[1, 2, 3], None]), pa.array([[2, 4, 6, 7], []])])
    got = asp.segment_sum(chunked)
    assert isinstance(got, pa.ChunkedArray)
    assert got.num_chunks == 2
    assert got.to_pylist() == [6, None, 19, 0]
    assert asp.segment_mean(chunked).to_pylist() == [2.0, None, 4.75, None]
    empty = asp.segment_max(pa.chunked_array([], type=pa.list_(pa.float32())))
    assert isinstance(empty, pa.ChunkedArray) and empty.type == pa.float32()
    assert len(empty) == 0
    weights = pa.chunked_array([pa.array([[1.0, 1.0, 1.0], None, [0.5, 0.5, 0.5, 0.5]]),
                                pa.array([[]], pa.list_(pa.float64()))])
    assert asp.segment_weighted_sum(chunked, weights).to_pylist() == [6.0, None, 9.5, 0.0]
    with pytest.raises(ValueError, match="num_segments cannot be used with a ChunkedArray"):
        asp.segment_sum(chunked, num_segments=9)
    flat = asp.unsorted_segment_sum(pa.chunked_array([pa.array([1, 2]), pa.array([3])]),
                                    [0, 1, 0])
    assert isinstance(flat, pa.ChunkedArray) and flat.to_pylist() == [4, 2]
    ids = pa.chunked_array([pa.array([[0, 1], [1]]), pa.array([[0]])])
    pooled = asp.embedding_bag(np.array([[1.0], [2.0]]), ids)
    assert isinstance(pooled, pa.ChunkedArray) and pooled.to_pylist() == [[3.0], [2.0], [1.0]]


def test_zero_chunk_chunked_arrays_issue_3() -> None:
    # Regression: a ChunkedArray with no chunks crashed with pyarrow's ArrowInvalid.
    f64 = pa.chunked_array([], pa.float64())
    got = asp.unsorted_segment_sum(f64, [], 2)
    assert isinstance(got, pa.ChunkedArray) and got.to_pylist() == [0.0, 0.0]
    got = asp.segment_sum(f64, offsets=[0, 0])
    assert isinstance(got, pa.ChunkedArray) and got.to_pylist() == [0.0]
    lists = pa.chunked_array([], pa.list_(pa.float64()))
    got = asp.segment_weighted_sum(lists, lists)
    assert isinstance(got, pa.ChunkedArray) and len(got) == 0 and got.type == pa.float64()
    got = asp.embedding_bag(np.ones((2, 2)), pa.chunked_array([], pa.int64()), offsets=[0])
    assert isinstance(got, pa.ChunkedArray) and got.type == pa.list_(pa.float64(), 2)
    assert len(got) == 0
    got = asp.embedding_bag(np.ones((2, 2)), pa.chunked_array([], pa.list_(pa.int64())))
    assert isinstance(got, pa.ChunkedArray) and len(got) == 0
    got = asp.sparse_segment_sum(pa.chunked_array([], pa.float32()), np.array([], np.int64),
                                 lengths=[0])
    assert isinstance(got, np.ndarray) and got.tolist() == [0.0]


def test_large_list_and_list_view() -> None:
    rows = [[1.5, 2.5], None, [4.0]]
    for t in (pa.large_list(pa.float64()), pa.list_view(pa.float64())):
        arr = pa.array(rows, type=t)
        assert asp.segment_sum(arr).to_pylist() == [4.0, None, 4.0]
        assert asp.segment_argmax(arr).to_pylist() == [1, None, 0]


def test_flat_arrow_values_with_structure() -> None:
    values = pa.array([1.0, None, 3.0, 4.0])
    got = asp.segment_mean(values, lengths=[3, 1, 0])
    assert isinstance(got, pa.Array)
    assert got.to_pylist() == [2.0, 4.0, None]
    chunked = asp.segment_sum(pa.chunked_array([values]), offsets=[0, 2, 4])
    assert isinstance(chunked, pa.ChunkedArray) and chunked.to_pylist() == [1.0, 7.0]


# ======================================================================== weights
def test_weighted_sum_forms_and_errors() -> None:
    values = pa.array(CAFFE2_ROWS)
    weights = pa.array([[1, 0, 1], [2, 2, 2, 2], None], pa.list_(pa.float32()))
    got = asp.segment_weighted_sum(values, weights)
    assert got.type == pa.float64()  # int64 with float32 -> float64
    assert got.to_pylist() == [4.0, 38.0, None]
    j = asp.Jagged.from_arrow(values)
    np.testing.assert_array_equal(
        asp.segment_weighted_sum(j, asp.Jagged.from_arrow(weights)), [4.0, 38.0, 0.0])
    f32 = asp.segment_weighted_sum(np.ones(3, np.float32), np.ones(3, np.float32),
                                   lengths=[3])
    assert f32.dtype == np.float32
    with pytest.raises(TypeError, match="weights must be a Jagged or an Arrow list array"):
        asp.segment_weighted_sum(values, np.ones(9))
    with pytest.raises(TypeError, match="weights must be a flat array"):
        asp.segment_weighted_sum(CAFFE2_VALUES, values, lengths=CAFFE2_LENGTHS)
    with pytest.raises(ValueError, match=r"weights must be 1-D with one weight per value \(9\)"):
        asp.segment_weighted_sum(CAFFE2_VALUES, np.ones(8), lengths=CAFFE2_LENGTHS)
    with pytest.raises(ValueError, match=r"weights must have the same row lengths as the "
                                         r"values \(first at position 1: 3\)"):
        asp.segment_weighted_sum(values, pa.array([[1, 1, 1], [1, 1, 1], [1, 1]]))
    with pytest.raises(ValueError, match="weights has 2 rows but the values have 3"):
        asp.segment_weighted_sum(values, pa.array([[1, 1, 1], [1, 1, 1, 1]]))
    with pytest.raises(ValueError, match=r"weights must not contain null elements"):
        asp.segment_weighted_sum(values, pa.array([[1, None, 1], [1] * 4, [1, 1]]))
    # A null weights row with a different length is fine: the row is null anyway.
    assert asp.segment_weighted_sum(values, pa.array([[1, 1, 1], None, [1, 1]],
                                                     pa.list_(pa.int64()))).to_pylist() == \
        [6, None, 9]


def test_num_segments_with_list_weights_issue_3() -> None:
    # Regression: num_segments extended the values' rows before the weights were
    # compared with them, so list-form weights were said to have too few rows.
    vals = pa.array([[1.0, 2.0], [3.0]])
    w = pa.array([[1.0, 1.0], [2.0]])
    got = asp.segment_weighted_sum(vals, w, num_segments=4)
    assert got.to_pylist() == [3.0, 6.0, 0.0, 0.0]
    nulls = pa.array([[1.0, 2.0], None])
    assert asp.segment_weighted_sum(nulls, pa.array([[1.0, 1.0], [5.0]]),
                                    num_segments=3).to_pylist() == [3.0, None, 0.0]
    j = asp.Jagged.from_arrow(vals)
    np.testing.assert_array_equal(
        asp.segment_weighted_sum(j, asp.Jagged.from_arrow(w), num_segments=3), [3.0, 6.0, 0.0])
    table = np.arange(6.0).reshape(3, 2)
    got = asp.sparse_segment_weighted_sum(table, pa.array([[0, 1], [2]]), weights=w,
                                          num_segments=4)
    assert got.to_pylist() == [[2.0, 4.0], [8.0, 10.0], [0.0, 0.0], [0.0, 0.0]]
    assert asp.sparse_segment_mean(table, pa.array([[0, 1], [2]]), weights=w,
                                   num_segments=3).to_pylist() == [[1.0, 2.0], [8.0, 10.0],
                                                                   None]
    with pytest.raises(ValueError, match="weights has 1 rows but the values have 2"):
        asp.segment_weighted_sum(vals, pa.array([[1.0, 1.0]]), num_segments=4)


# ======================================================================== unsorted
@pytest.mark.parametrize("op", list(UNSORTED))
def test_unsorted_against_oracle(op: str, values_dtype: np.dtype) -> None:
    values = np.array([4, 1, 3, 6, 3, 2, 7, 2, 6], dtype=values_dtype)
    ids = [1, 0, 2, 1, 0, 1, 1, 0, 4]
    rows = ref.rows_from_segment_ids(values.tolist(), ids, 6)
    got = UNSORTED[op](values, ids, 6)
    assert got.dtype == out_dtype(op, values_dtype)
    assert_close(got, expected_array(ref.segment_reduce(rows, op), EMPTY[op]),
                 out_dtype(op, values_dtype))
    arrow = UNSORTED[op](pa.array(values), pa.array(ids), 6)
    assert_arrow(arrow, ref.segment_reduce(rows, op), out_dtype(op, values_dtype))


def test_unsorted_vectors_nulls_and_errors() -> None:
    data = CAFFE2_DATA.astype(np.float32)
    got = asp.unsorted_segment_sum(data, [1, 0, 1, 0, 1])
    np.testing.assert_array_equal(got, [[12, 6], [14, 13]])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(asp.unsorted_segment_min(data, [1, 0, 1, 0, 1], 3),
                                  [[3, 2], [1, 1], [0, 0]])
    np.testing.assert_allclose(
        asp.unsorted_segment_weighted_sum(data, np.array([1, 1, 0, 0, 2]), [0, 0, 0, 1, 1]),
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


def test_unsorted_ids_checked_as_they_are_read() -> None:
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


def test_unsorted_parallel_parts_match_numpy() -> None:
    # Large enough for one part per thread: partial sums combined in part order.
    rng = np.random.default_rng(6)
    num_segments = 1000
    ids = rng.integers(0, num_segments, size=400_000)
    values = rng.random(400_000).astype(np.float32)
    expected = np.bincount(ids, weights=values.astype(np.float64), minlength=num_segments)
    counts = np.bincount(ids, minlength=num_segments)
    np.testing.assert_allclose(asp.unsorted_segment_sum(values, ids, num_segments), expected,
                               rtol=1e-6)
    np.testing.assert_allclose(asp.unsorted_segment_mean(values, ids, num_segments),
                               expected / counts, rtol=1e-6)
    w = rng.random(400_000)
    np.testing.assert_allclose(
        asp.unsorted_segment_weighted_sum(values, w, ids, num_segments),
        np.bincount(ids, weights=w * values, minlength=num_segments), rtol=1e-9)
    top = np.full(num_segments, -np.inf, np.float32)
    np.maximum.at(top, ids, values)
    np.testing.assert_array_equal(asp.unsorted_segment_max(values, ids, num_segments), top)
    ints = rng.integers(-5, 5, size=400_000).astype(np.int16)
    np.testing.assert_array_equal(asp.unsorted_segment_sum(ints, ids, num_segments),
                                  np.bincount(ids, weights=ints, minlength=num_segments))
    wide = rng.random((400_000, 3))
    sums = np.zeros((50, 3))
    np.add.at(sums, ids % 50, wide)
    np.testing.assert_allclose(asp.unsorted_segment_sum(wide, ids % 50, 50), sums)


# ================================================================== fused (Sparse*)
def test_sparse_segment_ops_against_gather_then_reduce() -> None:
    rng = np.random.default_rng(3)
    table = rng.normal(size=(10, 4)).astype(np.float32)
    ids = rng.integers(0, 10, size=25)
    lengths = [5, 0, 10, 3, 7]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    weights = rng.random(25)
    id_rows = ref.rows_from_offsets(ids.tolist(), offsets.tolist())
    table_rows = table.astype(np.float64).tolist()
    for op, fn in SPARSE.items():
        for kw in ({"lengths": lengths}, {"offsets": offsets},
                   {"segment_ids": np.repeat(np.arange(5), lengths)}):
            got = fn(table, ids, **kw)
            assert got.dtype == out_dtype(op, np.float32)
            expected = ref.segment_reduce(ref.sparse_rows(table_rows, id_rows), op)
            assert_close(got, expected_array(expected, 0, (4,)), np.dtype(np.float32))
            np.testing.assert_array_equal(
                got, SORTED[op](asp.gather(table, ids), **kw))
        wgot = fn(table, ids, lengths=lengths, weights=weights)
        wrows = ref.rows_from_offsets(weights.tolist(), offsets.tolist())
        wexp = ref.segment_reduce(ref.sparse_rows(table_rows, id_rows), op, weights=wrows)
        assert_close(wgot, expected_array(wexp, 0, (4,)), np.dtype(np.float64))
    np.testing.assert_array_equal(
        asp.sparse_segment_weighted_sum(table, ids, weights=weights, lengths=lengths),
        asp.sparse_segment_sum(table, ids, weights=weights, lengths=lengths))


def test_sparse_segment_arrow_ids_and_errors() -> None:
    table = np.arange(8) * 10
    ids = pa.array([[1, 2, None], None, [], [7]])
    assert asp.sparse_segment_sum(table, ids).to_pylist() == [30, None, 0, 70]
    assert asp.sparse_segment_mean(table, ids).to_pylist() == [15.0, None, None, 70.0]
    assert asp.sparse_segment_max(table, ids).to_pylist() == [20, None, None, 70]
    table_arrow = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(16.0)), 2)
    assert asp.sparse_segment_sum(table_arrow, [1, 7], lengths=[2]).tolist() == [[16.0, 18.0]]
    with pytest.raises(IndexError, match=r"sparse_segment_sum: indices out of range \[0, 8\) "
                                         r"\(first at position 1: 8\)"):
        asp.sparse_segment_sum(table, [1, 8], lengths=[2])
    with pytest.raises(IndexError, match=r"out of range \[0, 8\) \(first at position 1: -1\)"):
        asp.sparse_segment_mean(table, pa.array([[1], [-1]]))
    with pytest.raises(TypeError, match="indices must be 1-D integers, got float64"):
        asp.sparse_segment_sum(table, [1.0], lengths=[1])
    with pytest.raises(ValueError, match="data must not contain null rows"):
        asp.sparse_segment_sum(pa.array([1.0, None]), [0], lengths=[1])
    with pytest.raises(TypeError, match="weights must be a Jagged or an Arrow list array"):
        asp.sparse_segment_weighted_sum(table, ids, weights=[1.0, 2.0, 3.0])


# ================================================================== embedding_bag
def test_embedding_bag_modes_and_offsets() -> None:
    table = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    ids = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
    for mode, fn in SPARSE.items():
        expected = fn(table, ids, lengths=CAFFE2_LENGTHS)
        np.testing.assert_array_equal(
            asp.embedding_bag(table, ids, offsets=CAFFE2_OFFSETS, mode=mode), expected)
        np.testing.assert_array_equal(
            asp.embedding_bag(table, ids, offsets=CAFFE2_OFFSETS[:-1], mode=mode,
                              include_last_offset=False), expected)
        np.testing.assert_array_equal(
            asp.embedding_bag(table, pa.array(CAFFE2_ROWS), mode=mode).to_pylist(), expected)
    empty_bags = asp.embedding_bag(table, ids, offsets=[0, 0, 9, 9], mode="max")
    np.testing.assert_array_equal(empty_bags[[0, 2]], 0)
    with pytest.raises(ValueError, match="embedding_bag: mode must be 'sum', 'mean' or 'max'"):
        asp.embedding_bag(table, ids, offsets=CAFFE2_OFFSETS, mode="min")
    with pytest.raises(IndexError, match=r"embedding_bag: ids out of range \[0, 8\) "
                                         r"\(first at position 0: 9\)"):
        asp.embedding_bag(table, [9], offsets=[0, 1])
    with pytest.raises(ValueError, match=r"embedding_bag: pass exactly one of offsets=, "
                                         r"lengths= \(got none\)"):
        asp.embedding_bag(table, ids)
    with pytest.raises(ValueError, match="ids is a list array and carries its own offsets"):
        asp.embedding_bag(table, pa.array(CAFFE2_ROWS), offsets=CAFFE2_OFFSETS)
    with pytest.raises(ValueError, match="per_sample_weights must be 1-D with one weight"):
        asp.embedding_bag(table, ids, lengths=CAFFE2_LENGTHS, per_sample_weights=[1.0])
    with pytest.raises(TypeError, match="include_last_offset must be True or False, got int"):
        asp.embedding_bag(table, ids, offsets=CAFFE2_OFFSETS, include_last_offset=0)


def test_embedding_bag_bag_starts_errors_cite_the_callers_offsets_issue_3() -> None:
    # Regression: a start beyond len(ids) was reported at the appended end offset, a
    # position and a value the caller never passed.
    table = np.ones((8, 2))
    ids = np.arange(9) % 8
    with pytest.raises(ValueError, match=r"embedding_bag: offsets exceed the number of "
                                         r"values 9 \(first at position 1: 12\)"):
        asp.embedding_bag(table, ids, offsets=[0, 12], include_last_offset=False)
    with pytest.raises(ValueError, match=r"offsets must be non-decreasing "
                                         r"\(first at position 2: 3\)"):
        asp.embedding_bag(table, ids, offsets=[0, 5, 3], include_last_offset=False)
    with pytest.raises(ValueError, match=r"offsets must be non-negative "
                                         r"\(first at position 0: -1\)"):
        asp.embedding_bag(table, ids, offsets=[-1, 3], include_last_offset=False)
    # a start equal to len(ids) is an empty last bag; no starts at all, no bags
    got = asp.embedding_bag(table, ids, offsets=[0, 9], include_last_offset=False)
    assert got.tolist() == [[9.0, 9.0], [0.0, 0.0]]
    assert asp.embedding_bag(table, ids, offsets=[], include_last_offset=False).shape == (0, 2)


def test_embedding_bag_include_last_offset_false_needs_offsets_issue_3() -> None:
    # Regression: the flag was silently ignored with lengths= or list ids.
    table = np.ones((8, 2))
    with pytest.raises(ValueError, match=r"include_last_offset=False describes offsets= "
                                         r"\(bag starts\) and cannot be used with lengths="):
        asp.embedding_bag(table, [1, 2, 3], lengths=[1, 2], include_last_offset=False)
    with pytest.raises(ValueError, match="cannot be used with list ids"):
        asp.embedding_bag(table, pa.array([[1], [2, 3]]), include_last_offset=False)


def test_fused_ids_checked_as_they_are_read() -> None:
    # The kernels check each bag's ids before using them; the first bad id is reported
    # whichever block of a parallel run finds it; ids of null rows and null ids are
    # neither read nor checked.
    rng = np.random.default_rng(9)
    table = rng.random((100, 16)).astype(np.float32)
    ids = rng.integers(0, 100, size=200_000)
    ids[150_000] = 100
    ids[120_001] = -1
    lengths = np.full(10_000, 20)
    for fn in (asp.sparse_segment_sum, asp.sparse_segment_mean, asp.sparse_segment_max):
        with pytest.raises(IndexError, match=r"indices out of range \[0, 100\) "
                                             r"\(first at position 120001: -1\)"):
            fn(table, ids, lengths=lengths)
    with pytest.raises(IndexError, match=r"embedding_bag: ids out of range \[0, 100\) "
                                         r"\(first at position 120001: -1\)"):
        asp.embedding_bag(table, ids, lengths=lengths, per_sample_weights=np.ones(200_000))
    arr = pa.array([[1, 500], [2]], pa.list_(pa.int64()))
    masked = pa.ListArray.from_arrays(arr.offsets, arr.values, mask=pa.array([True, False]))
    assert asp.sparse_segment_sum(table[:, :1], masked).to_pylist() == [None, [table[2, 0]]]
    with_null = pa.array([[1, None, 3]], pa.list_(pa.int64()))
    assert asp.sparse_segment_max(table[:, :1], with_null).to_pylist() == \
        [[max(table[1, 0], table[3, 0])]]


def test_embedding_bag_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    table = rng.normal(size=(50, 8)).astype(np.float32)
    ids = rng.integers(0, 50, size=200)
    starts = np.sort(rng.integers(0, 200, size=30))
    starts[0] = 0
    w = rng.random(200).astype(np.float32)
    for mode in ("sum", "mean", "max"):
        expected = torch.nn.functional.embedding_bag(
            torch.from_numpy(ids), torch.from_numpy(table), torch.from_numpy(starts),
            mode=mode).numpy()
        got = asp.embedding_bag(table, ids, offsets=starts, mode=mode, include_last_offset=False)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    expected = torch.nn.functional.embedding_bag(
        torch.from_numpy(ids), torch.from_numpy(table),
        torch.from_numpy(np.append(starts, 200)), per_sample_weights=torch.from_numpy(w),
        mode="sum", include_last_offset=True).numpy()
    got = asp.embedding_bag(table, ids, offsets=np.append(starts, 200), per_sample_weights=w)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_segment_reduce_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    values = rng.normal(size=(300, 3))
    lengths = rng.integers(0, 12, size=40)
    values = values[:lengths.sum()]
    nonempty = lengths > 0
    for op in ("sum", "mean", "max", "min", "prod"):
        expected = torch.segment_reduce(torch.from_numpy(values), op,
                                        lengths=torch.from_numpy(lengths), unsafe=True)
        got = SORTED[op](values, lengths=lengths)
        np.testing.assert_allclose(got[nonempty], expected.numpy()[nonempty], rtol=1e-12,
                                   atol=1e-12)


# ======================================================================== gather/scatter
def test_gather() -> None:
    table = np.arange(12).reshape(4, 3)
    np.testing.assert_array_equal(asp.gather(table, [3, 0, 3]), table[[3, 0, 3]])
    idx2 = np.array([[0, 1], [2, 3]])
    assert asp.gather(table, idx2).shape == (2, 2, 3)
    arr = pa.array([[1, 2, 3], None, [3, 6]])
    assert asp.gather(arr, [2, 1, 0]).to_pylist() == [[3, 6], None, [1, 2, 3]]
    assert asp.gather(pa.chunked_array([arr]), [0]).to_pylist() == [[1, 2, 3]]
    assert ref.gather(table.tolist(), [1, 1]) == asp.gather(table, [1, 1]).tolist()
    with pytest.raises(IndexError, match=r"gather: indices out of range \[0, 4\) "
                                         r"\(first at position 1: -1\)"):
        asp.gather(table, [0, -1])
    with pytest.raises(IndexError, match=r"\(first at position 0: 3\)"):
        asp.gather(arr, [3])
    with pytest.raises(TypeError, match="indices must have an integer dtype"):
        asp.gather(table, [0.5])


def test_scatter_assign_last_write_wins() -> None:
    data = np.zeros((4, 2))
    idx = [1, 3, 1, 1]
    slices = np.array([[1, 1], [2, 2], [3, 3], [4, 4]], dtype=np.float64)
    out = asp.scatter_assign(data, idx, slices)
    assert out is data
    np.testing.assert_array_equal(
        data, ref.scatter_assign(np.zeros((4, 2)).tolist(), idx, slices.tolist()))
    assert data[1].tolist() == [4, 4]
    flags = np.zeros(3, dtype=bool)
    asp.scatter_assign(flags, [2], np.array([True]))
    assert flags.tolist() == [False, False, True]
    with pytest.raises(IndexError, match=r"scatter_assign: indices out of range \[0, 4\)"):
        asp.scatter_assign(data, [4], slices[:1])
    with pytest.raises(ValueError, match=r"slices must have shape \(2, 2\)"):
        asp.scatter_assign(data, [0, 1], slices[:1])
    with pytest.raises(TypeError, match="slices of dtype float64 cannot be written into int64"):
        asp.scatter_assign(np.zeros((2, 2), np.int64), [0], slices[:1])
    with pytest.raises(TypeError, match="Arrow arrays are immutable"):
        asp.scatter_assign(pa.array([1, 2]), [0], [1])
    readonly = np.zeros((2, 2))
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="data must be a writable, C-contiguous array"):
        asp.scatter_assign(readonly, [0], slices[:1])


def test_scatter_weighted_sum_scales_every_occurrence_then_adds() -> None:
    # Caffe2's ScatterWeightedSumOp: first data[idx] *= w0 for every occurrence, then
    # data[idx[i]] += w1 * slices[i] for every i.
    data = np.arange(8.0).reshape(4, 2)
    before = data.tolist()
    idx = [2, 0, 2]
    slices = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    out = asp.scatter_weighted_sum(data, 0.5, idx, slices, np.array([2.0]))
    assert out is data
    assert data[2].tolist() == [9.0, 9.25]  # 0.5**2 * [4, 5] + 2 * ([1, 1] + [3, 3])
    assert data[0].tolist() == [4.0, 4.5]
    assert data[[1, 3]].tolist() == [before[1], before[3]]
    np.testing.assert_array_equal(
        data, ref.scatter_weighted_sum(before, 0.5, idx, slices.tolist(), 2.0))
    data32 = np.ones((2, 3), np.float32)
    asp.scatter_weighted_sum(data32, 1, [1, 1], np.ones((2, 3), np.float32), 1)
    assert data32.dtype == np.float32 and data32[1].tolist() == [3, 3, 3]
    zero = np.ones((3, 1))
    asp.scatter_weighted_sum(zero, 0.0, [0, 0], np.array([[1.0], [2.0]]), 1.0)
    assert zero.ravel().tolist() == [3.0, 1.0, 1.0]  # w0 = 0 replaces the row by the sum


def test_scatter_weighted_sum_errors() -> None:
    data = np.zeros((4, 2))
    slices = np.ones((1, 2))
    with pytest.raises(TypeError, match="data must have a float dtype, got int64"):
        asp.scatter_weighted_sum(np.zeros((2, 2), np.int64), 1.0, [0], np.zeros((1, 2)), 1.0)
    with pytest.raises(ValueError, match="w0 must be a real number"):
        asp.scatter_weighted_sum(data, [1.0, 2.0], [0], slices, 1.0)
    with pytest.raises(ValueError, match="w1 must be a real number"):
        asp.scatter_weighted_sum(data, 1.0, [0], slices, "2")
    with pytest.raises(IndexError, match=r"\(first at position 0: 7\)"):
        asp.scatter_weighted_sum(data, 1.0, [7], slices, 1.0)


def test_scatter_float16_data_is_a_type_error_issue_3() -> None:
    # Regression: float16 data reached the kernel and crashed with NotImplementedError.
    half = np.zeros((2, 2), np.float16)
    with pytest.raises(TypeError, match="scatter_assign: data of dtype float16 are not "
                                        "supported; cast to float32 first"):
        asp.scatter_assign(half, [0], np.ones((1, 2), np.float16))
    with pytest.raises(TypeError, match="scatter_weighted_sum: data of dtype float16"):
        asp.scatter_weighted_sum(half, 1.0, [0], np.ones((1, 2), np.float16), 1.0)
    with pytest.raises(ArrowSparseError):
        asp.scatter_assign(half, [0], np.ones((1, 2), np.float16))


# ================================================== large inputs (the parallel twins)
def test_parallel_paths_match_numpy() -> None:
    rng = np.random.default_rng(11)
    lengths = rng.integers(0, 40, size=20_000)
    n = int(lengths.sum())
    values = rng.random(n, dtype=np.float32)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    starts = offsets[:-1][lengths > 0]
    nonempty = lengths > 0
    ref64 = np.add.reduceat(values.astype(np.float64), starts)
    np.testing.assert_allclose(asp.segment_sum(values, offsets=offsets)[nonempty], ref64,
                               rtol=1e-6)
    np.testing.assert_allclose(asp.segment_mean(values, lengths=lengths)[nonempty],
                               ref64 / lengths[nonempty], rtol=1e-6)
    np.testing.assert_array_equal(asp.segment_max(values, lengths=lengths)[nonempty],
                                  np.maximum.reduceat(values, starts))
    np.testing.assert_array_equal(asp.segment_min(values, lengths=lengths)[nonempty],
                                  np.minimum.reduceat(values, starts))
    wide = rng.random((n // 8, 8)).astype(np.float32)
    cuts = np.sort(rng.integers(0, len(wide), size=3000))
    wl = np.diff(np.concatenate([[0], cuts, [len(wide)]]))
    ws = np.concatenate([[0], np.cumsum(wl)])[:-1][wl > 0]
    np.testing.assert_allclose(asp.segment_sum(wide, lengths=wl)[wl > 0],
                               np.add.reduceat(wide.astype(np.float64), ws, axis=0), rtol=1e-6)
    np.testing.assert_array_equal(asp.segment_max(wide, lengths=wl)[wl > 0],
                                  np.maximum.reduceat(wide, ws, axis=0))
    table = rng.random((1000, 16)).astype(np.float32)
    ids = rng.integers(0, 1000, size=n // 4)
    il = np.diff(np.linspace(0, n // 4, 3001).astype(np.int64))
    got = asp.embedding_bag(table, ids, lengths=il)
    gathered = table[ids].astype(np.float64)
    istarts = np.concatenate([[0], np.cumsum(il)])[:-1]
    np.testing.assert_allclose(got, np.add.reduceat(gathered, istarts, axis=0), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [7, 8, 16, 37, 64, 100])
def test_fused_widths_and_null_rows(dtype: Any, width: int) -> None:
    # Widths around the vector and group sizes of the float fast path.
    rng = np.random.default_rng(width)
    table = rng.normal(size=(40, width)).astype(dtype)
    id_rows = [list(rng.integers(0, 40, size=n)) for n in rng.integers(0, 20, size=30)]
    id_rows[3] = None
    arr = pa.array(id_rows, type=pa.list_(pa.int32()))
    for op, fn in SPARSE.items():
        expected = ref.segment_reduce(ref.sparse_rows(table.astype(np.float64).tolist(),
                                                      id_rows), op)
        assert_arrow(fn(table, arr), expected, np.dtype(dtype), (width,))
        got = fn(table, asp.Jagged.from_arrow(arr))
        as_empty = ref.segment_reduce(
            ref.sparse_rows(table.astype(np.float64).tolist(),
                            [[] if r is None else r for r in id_rows]), op)
        assert_close(got, expected_array(as_empty, 0, (width,)), np.dtype(dtype))


def test_fused_float32_precision_on_a_long_bag() -> None:
    # The float fast path sums up to 4 rows in float32, then accumulates in float64.
    rng = np.random.default_rng(8)
    table = (rng.random((1000, 16), dtype=np.float32) * 2 - 0.5)
    ids = rng.integers(0, 1000, size=1_000_000)
    exact = np.array([math.fsum(c) for c in table.astype(np.float64)[ids].T.tolist()])
    got = asp.sparse_segment_sum(table, ids, lengths=[len(ids)])[0].astype(np.float64)
    assert np.all(np.abs(got - exact) <= np.abs(exact) * 2.0**-22)


def test_integer_sums_are_exact_beyond_float64() -> None:
    # Regression: the unweighted 1-D kernel once unified its int64 accumulator with a
    # float64 weights placeholder and rounded sums above 2**53.
    big = np.array([3, -(2**63) + 10, -1], dtype=np.int64)
    assert asp.segment_sum(big, lengths=[3]).tolist() == [12 - 2**63]
    assert asp.segment_sum(big.reshape(3, 1), lengths=[3]).tolist() == [[12 - 2**63]]
    assert asp.sparse_segment_sum(big, [0, 1, 2], lengths=[3]).tolist() == [12 - 2**63]
    assert asp.unsorted_segment_sum(big, [0, 0, 0]).tolist() == [12 - 2**63]
    huge = np.array([2**62, 2**62 - 1, 1], dtype=np.uint64)
    assert asp.segment_sum(huge, lengths=[3]).tolist() == [2**63]
    assert asp.segment_prod(np.array([2**31, 2**31 + 1]), lengths=[2]).tolist() == \
        [2**62 + 2**31]


def _lane_order_sum(row: np.ndarray) -> float:
    """The documented order of a 1-D float row sum (docs/segment-reductions.md)."""
    lanes = 64 // row.dtype.itemsize
    acc = [0.0] * lanes
    for k, x in enumerate(row.tolist()):
        acc[k % lanes] += x
    while lanes > 1:
        lanes //= 2
        acc = [acc[j] + acc[j + lanes] for j in range(lanes)]
    return acc[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_row_sum_order_is_fixed(dtype: Any) -> None:
    # Bit-for-bit the documented lane order: reproducible on any machine (and what the
    # CUDA twin must repeat to compare exactly).
    rng = np.random.default_rng(12)
    lengths = rng.integers(0, 70, size=200)
    offsets = np.concatenate([[3], 3 + np.cumsum(lengths)])
    values = (rng.normal(size=offsets[-1] + 4) * 10.0 ** rng.uniform(-3, 6, offsets[-1] + 4))
    values = values.astype(dtype)
    expected = [_lane_order_sum(values[a:b]) for a, b in zip(offsets[:-1], offsets[1:],
                                                              strict=True)]
    got = asp.segment_sum(values, offsets=offsets)
    np.testing.assert_array_equal(got, np.array(expected).astype(dtype))
    mean = asp.segment_mean(values, offsets=offsets)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected_mean = np.where(lengths > 0, np.array(expected) / np.maximum(lengths, 1), 0)
    np.testing.assert_array_equal(mean, expected_mean.astype(dtype))
