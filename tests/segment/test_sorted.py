"""Tests of ``arrow_sparse.segment.sorted``: ``segment_sum`` ... ``segment_argmin``.

Each operation against the plain-Python oracle (``tests/_reference_segment.py``) on every
backend of the ``backend`` fixture (numpy inputs go to the device with ``to_backend``;
Arrow inputs stay on the host, where the ``cuda_emu`` backend runs them through the CUDA
kernels), then the device checks: the CUDA kernels through the emulator (and real CuPy
where a GPU exists) against the CPU kernels on the same data (see ``_helpers``), and the
device errors. The family's tests come first, then each operation's own. Property tests
(Hypothesis) run on the CPU; the example tests beside them cover the device paths.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse._arrow import numpy_dtype
from arrow_sparse.errors import ArrowSparseError, ArrowSparseValueError

from .. import _reference_segment as ref
from .._matrix import pairwise_parametrize
from .._strategies import list_arrays, numeric_dtypes, scalars
from ..conftest import NUMERIC_DTYPES, OFFSETS_DTYPES, on_device, to_backend
from . import _strategies as sst
from ._helpers import (
    AT_ONCE,
    CAFFE2_DATA,
    CAFFE2_DATA_IDS,
    CAFFE2_IDS,
    CAFFE2_LENGTHS,
    CAFFE2_OFFSETS,
    CAFFE2_ROWS,
    CAFFE2_VALUES,
    DEFERRED,
    EMPTY,
    FORM_DTYPES,
    MIXED_FIX,
    ROUNDED,
    SORTED,
    assert_arrow,
    assert_close,
    assert_error,
    assert_raised_by_the_next_check,
    dev,
    expected_array,
    host_jagged,
    kernels,
    long_float32_batch,
    long_float32_batch_sums,
    long_float32_segment,
    on_devices,
    on_the_cpu,
    out_dtype,
    raised_later,
    run_on,
    same_as_cpu,
    sample,
    signed_zero_rows,
    values_of,
)

#: The CPU/CUDA kernel each sorted reduction launches.
SORTED_KERNEL = {
    "sum": "sorted_sum", "mean": "sorted_sum", "max": "sorted_extreme",
    "min": "sorted_extreme", "prod": "sorted_prod", "logsumexp": "sorted_logsumexp",
    "argmax": "sorted_arg_extreme", "argmin": "sorted_arg_extreme",
}
WIDTHS = [None, 3]


def sorted_kernels(op: str, two_d: bool) -> list[str]:
    """The kernels a sorted reduction launches: sums of 2-D values split long rows first."""
    kernel = SORTED_KERNEL[op]
    return ["sorted_sum_pieces", kernel] if kernel == "sorted_sum" and two_d else [kernel]


WEIGHT_DTYPES = [np.uint8, np.int32, np.uint64, np.float32, np.float64]


def arrow_rows(large: bool, dtype: Any = None) -> pa.Array:
    """A sliced list array (``offsets[0] > 0``, a leading null row), null and empty rows."""
    rows = [[1, 2, 3], None, [], [4, None, 6, 7, 8], None, [9], [None, None], [10, 11]]
    dtype = pa.float32() if dtype is None else dtype
    typ = pa.large_list(dtype) if large else pa.list_(dtype)
    return pa.array(rows, typ).slice(1)


# ====================================================================== the family
@pytest.mark.parametrize("op", list(SORTED))
def test_caffe2_batch_every_representation(backend: str, op: str) -> None:
    expected = ref.segment_reduce(CAFFE2_ROWS, op)
    fn = SORTED[op]
    results = [
        run_on(backend, fn, CAFFE2_VALUES, offsets=CAFFE2_OFFSETS),
        run_on(backend, fn, CAFFE2_VALUES, lengths=CAFFE2_LENGTHS),
        run_on(backend, fn, CAFFE2_VALUES, segment_ids=CAFFE2_IDS),
        run_on(backend, fn, asp.Jagged.from_lengths(CAFFE2_VALUES, CAFFE2_LENGTHS)),
        fn(pa.array(CAFFE2_ROWS)).to_numpy(),
        fn(pa.array(CAFFE2_VALUES), lengths=CAFFE2_LENGTHS).to_numpy(),
    ]
    for got in results:
        assert got.dtype == out_dtype(op, np.int64)
        assert_close(got, expected_array(expected, 0), out_dtype(op, np.int64))


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod", "logsumexp", "argmax"])
def test_sorted_dtypes(backend: str, op: str, values_dtype: np.dtype) -> None:
    rows = [[3, 1, 2], [], [5], [7, 7, 0, 1]]
    flat = np.array([x for row in rows for x in row], dtype=values_dtype)
    got = run_on(backend, SORTED[op], flat, lengths=[len(r) for r in rows])
    assert got.dtype == out_dtype(op, values_dtype)
    assert_close(got, expected_array(ref.segment_reduce(rows, op), EMPTY[op]),
                 out_dtype(op, values_dtype))


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod", "argmin"])
def test_sorted_bool_values(backend: str, op: str) -> None:
    rows = [[True, False, True], [], [False]]
    got = SORTED[op](pa.array(rows))
    dtype = np.dtype(bool) if op in ("max", "min") else out_dtype(op, np.int64)
    int_rows = [[int(x) for x in row] for row in rows]
    assert_arrow(got, ref.segment_reduce(int_rows, op), dtype)


def test_empty_rows_numpy_and_arrow(backend: str) -> None:
    rows = [[1.0, 2.0], [], [4.0]]
    arr = pa.array(rows)
    flat = np.array([1.0, 2.0, 4.0])
    lengths = [2, 0, 1]
    for op, fn in SORTED.items():
        expected = ref.segment_reduce(rows, op)
        assert_arrow(fn(arr), expected, out_dtype(op, np.float64))
        got = run_on(backend, fn, flat, lengths=lengths)
        assert_close(got, expected_array(expected, EMPTY[op]), out_dtype(op, np.float64))
    assert asp.segment_sum(arr).to_pylist()[1] == 0.0
    assert asp.segment_prod(arr).to_pylist()[1] == 1.0
    assert asp.segment_mean(arr).to_pylist()[1] is None
    assert run_on(backend, asp.segment_logsumexp, flat, lengths=lengths)[1] == -np.inf


def test_null_rows_and_null_values(backend: str) -> None:
    rows = [[1.0, None, 3.0], None, [None], [], [2.0, 8.0]]
    arr = pa.array(rows)
    j = asp.Jagged.from_arrow(arr)
    for op, fn in SORTED.items():
        expected = ref.segment_reduce(rows, op)
        assert_arrow(fn(arr), expected, out_dtype(op, np.float64))
        # A Jagged gives numpy (CuPy on the device), null rows reducing as empty rows.
        as_empty = [[] if r is None else r for r in rows]
        got = run_on(backend, fn, j)
        assert isinstance(got, np.ndarray)
        assert_close(got, expected_array(ref.segment_reduce(as_empty, op), EMPTY[op]),
                     out_dtype(op, np.float64))
    # The mean divides by the non-null count.
    assert asp.segment_mean(arr).to_pylist() == [2.0, None, None, None, 5.0]
    assert asp.segment_argmax(arr).to_pylist() == [2, None, None, None, 1]


def test_null_rows_range_is_never_read(backend: str) -> None:
    # Arrow allows any values under a null row; here a NaN and a huge value.
    values = pa.array([1.0, np.nan, 1e300, 2.0])
    offsets = pa.array([0, 1, 3, 4], pa.int32())
    arr = pa.ListArray.from_arrays(offsets, values, mask=pa.array([False, True, False]))
    assert asp.segment_sum(arr).to_pylist() == [1.0, None, 2.0]
    assert asp.segment_max(arr).to_pylist() == [1.0, None, 2.0]
    # A device Jagged of the same batch: the null row reduces as an empty row.
    got = run_on(backend, asp.segment_max, asp.Jagged.from_arrow(arr))
    assert got.tolist() == [1.0, 0.0, 2.0]


def test_offsets_start_above_zero_and_end_early(backend: str) -> None:
    values = np.array([100, 1, 2, 3, 2, 4, 6, 7, 3, 6, 100])
    got = run_on(backend, asp.segment_sum, values,
                 offsets=np.array([1, 4, 8, 10], dtype=np.int32))
    np.testing.assert_array_equal(got, [6, 19, 9])
    sliced = pa.array([[100], [1, 2, 3], [2, 4, 6, 7], [3, 6], [100]]).slice(1, 3)
    assert asp.segment_sum(sliced).to_pylist() == [6, 19, 9]
    assert asp.segment_max(sliced).to_pylist() == [3, 7, 6]


def test_num_segments_adds_trailing_empty_rows(backend: str) -> None:
    for kw in ({"offsets": CAFFE2_OFFSETS}, {"lengths": CAFFE2_LENGTHS},
               {"segment_ids": CAFFE2_IDS}):
        got = run_on(backend, asp.segment_sum, CAFFE2_VALUES, num_segments=5, **kw)
        np.testing.assert_array_equal(got, [6, 19, 9, 0, 0])
        np.testing.assert_array_equal(
            run_on(backend, asp.segment_mean, CAFFE2_VALUES, num_segments=4, **kw),
            [2, 4.75, 4.5, 0])
    arrow = asp.segment_max(pa.array([[1], None]), num_segments=3)
    assert arrow.to_pylist() == [1, None, None]
    with pytest.raises(ValueError, match="segment_sum: num_segments=2 is less than the 3 rows"):
        asp.segment_sum(CAFFE2_VALUES, lengths=CAFFE2_LENGTHS, num_segments=2)
    with pytest.raises(IndexError, match=r"segment_sum: segment_ids must be < num_segments=2 "
                                         r"\(first at position 7: 2\)"):
        asp.segment_sum(CAFFE2_VALUES, segment_ids=CAFFE2_IDS, num_segments=2)


def test_structure_errors(backend: str) -> None:
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


# (call, error class, message pattern), each pattern matched from the start (from
# tests/test_errors.py: the input checks of _validate reached through segment_sum).
ERROR_CASES: dict[str, tuple[Callable[[], Any], type[Exception], str]] = {
    "none of three": (lambda: asp.segment_sum(np.ones(3)), ArrowSparseValueError,
                      r"segment_sum: pass exactly one of offsets=, lengths=, segment_ids= "
                      r"\(got none\)"),
    "two of three": (lambda: asp.segment_sum(np.ones(3), offsets=[0, 3], lengths=[3]),
                     ArrowSparseValueError,
                     r"segment_sum: pass exactly one of offsets=, lengths=, segment_ids= "
                     r"\(got offsets=, lengths=\)"),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_error_class_and_message(backend: str, case: str) -> None:
    assert_error(*ERROR_CASES[case])


@pytest.mark.parametrize("fn", [*SORTED.values(), asp.segment_weighted_sum],
                         ids=lambda f: f.__name__)
def test_object_input_raises_type_error(backend: str, fn: Any) -> None:
    o = object()
    with pytest.raises(TypeError) as info:
        if fn is asp.segment_weighted_sum:
            fn(o, o, lengths=[1])
        else:
            fn(o, lengths=[1])
    assert isinstance(info.value, ArrowSparseError)


def test_vector_values_keep_their_axes(backend: str) -> None:
    rng = np.random.default_rng(1)
    values = rng.normal(size=(9, 2, 3))
    lengths = [3, 0, 6]
    for op in ("sum", "mean", "max", "prod", "logsumexp", "argmin"):
        got = run_on(backend, SORTED[op], values, lengths=lengths)
        assert got.shape == (3, 2, 3)
        flat = run_on(backend, SORTED[op], values.reshape(9, 6), lengths=lengths)
        np.testing.assert_array_equal(got.reshape(3, 6), flat)
    np.testing.assert_allclose(run_on(backend, asp.segment_sum, values, lengths=lengths)[2],
                               values[3:].sum(axis=0))
    nd = asp.segment_sum(pa.array([values[:3].tolist()],
                                  type=pa.list_(pa.list_(pa.list_(pa.float64(), 3), 2))))
    assert nd.type == pa.list_(pa.list_(pa.float64(), 3), 2)
    np.testing.assert_allclose(np.array(nd.to_pylist()), values[:3].sum(axis=0)[None])


def test_fixed_size_list_nulls(backend: str) -> None:
    t = pa.list_(pa.list_(pa.float32(), 2))
    arr = pa.array([[[1, 2], None, [3, 4]], None, [None]], type=t)
    assert asp.segment_sum(arr).to_pylist() == [[4, 6], None, [0, 0]]
    assert asp.segment_mean(arr).to_pylist() == [[2, 3], None, None]
    with pytest.raises(ValueError, match="nulls inside fixed_size_list elements"):
        asp.segment_sum(pa.array([[[1, None]]], type=t))


def test_chunked_in_chunked_out(backend: str) -> None:
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


def test_zero_chunk_chunked_arrays_issue_3(backend: str) -> None:
    # Regression: a ChunkedArray with no chunks crashed with pyarrow's ArrowInvalid.
    f64 = pa.chunked_array([], pa.float64())
    got = asp.segment_sum(f64, offsets=[0, 0])
    assert isinstance(got, pa.ChunkedArray) and got.to_pylist() == [0.0]
    lists = pa.chunked_array([], pa.list_(pa.float64()))
    got = asp.segment_weighted_sum(lists, lists)
    assert isinstance(got, pa.ChunkedArray) and len(got) == 0 and got.type == pa.float64()


def test_large_list_and_list_view(backend: str) -> None:
    rows = [[1.5, 2.5], None, [4.0]]
    for t in (pa.large_list(pa.float64()), pa.list_view(pa.float64())):
        arr = pa.array(rows, type=t)
        assert asp.segment_sum(arr).to_pylist() == [4.0, None, 4.0]
        assert asp.segment_argmax(arr).to_pylist() == [1, None, 0]


def test_flat_arrow_values_with_structure(backend: str) -> None:
    values = pa.array([1.0, None, 3.0, 4.0])
    got = asp.segment_mean(values, lengths=[3, 1, 0])
    assert isinstance(got, pa.Array)
    assert got.to_pylist() == [2.0, 4.0, None]
    chunked = asp.segment_sum(pa.chunked_array([values]), offsets=[0, 2, 4])
    assert isinstance(chunked, pa.ChunkedArray) and chunked.to_pylist() == [1.0, 7.0]


def test_empty_value_and_min_count(backend: str) -> None:
    flat = np.array([1.0, 2.0, 4.0])
    assert np.isnan(run_on(backend, asp.segment_max, flat, lengths=[2, 0, 1],
                           empty_value=np.nan)[1])
    assert run_on(backend, asp.segment_mean, flat, lengths=[2, 0, 1],
                  empty_value=-1).tolist() == [1.5, -1, 4]
    assert run_on(backend, asp.segment_sum, flat, lengths=[2, 0, 1], min_count=2,
                  empty_value=-7).tolist() == [3, -7, -7]
    arr = pa.array([[1, 2], [], [3, None]])
    assert asp.segment_sum(arr, min_count=1).to_pylist() == [3, None, 3]
    assert asp.segment_sum(arr, min_count=2).to_pylist() == [3, None, None]
    assert asp.segment_max(arr, min_count=2).to_pylist() == [2, None, None]
    assert run_on(backend, asp.segment_argmax, flat, lengths=[2, 0, 1],
                  empty_value=99).tolist() == [1, 99, 0]
    with pytest.raises(ValueError, match=r"segment_max: empty_value -inf does not fit the "
                                         r"output dtype int64"):
        asp.segment_max(np.array([1, 2]), lengths=[2], empty_value=-np.inf)
    for many in ([1, 2], [[1], [2, 3]]):  # a ragged list once raised numpy's ValueError
        with pytest.raises(ValueError, match=r"segment_argmin: empty_value .* does not fit"):
            asp.segment_argmin(pa.array([[1], [2, 3], None]), empty_value=many)
    with pytest.raises(ValueError, match="min_count must be non-negative"):
        asp.segment_sum(flat, lengths=[3], min_count=-1)
    with pytest.raises(TypeError, match="min_count must be an integer"):
        asp.segment_sum(flat, lengths=[3], min_count=1.5)


def test_empty_value_signed_zero_is_kept_issue_3(backend: str) -> None:
    # Regression: the empty_value cache keyed -0.0 and 0.0 alike (they compare and hash
    # equal), so the sign of an empty row depended on the previous call.
    first = run_on(backend, asp.segment_mean, np.ones(1), lengths=[1, 0], empty_value=-0.0)
    second = run_on(backend, asp.segment_mean, np.ones(1), lengths=[1, 0], empty_value=0.0)
    third = run_on(backend, asp.segment_mean, np.ones(1, np.float32), lengths=[1, 0],
                   empty_value=np.float32(-0.0))
    assert np.signbit(first[1]) and not np.signbit(second[1]) and np.signbit(third[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_propagates_like_numpy(backend: str, dtype: Any) -> None:
    values = np.array([1, np.nan, 3, 5, 2, np.nan, np.nan, 4, -np.inf], dtype=dtype)
    lengths = [3, 2, 2, 2]
    starts = [0, 3, 5, 7]
    np.testing.assert_array_equal(run_on(backend, asp.segment_max, values, lengths=lengths),
                                  np.maximum.reduceat(values, starts))
    np.testing.assert_array_equal(run_on(backend, asp.segment_min, values, lengths=lengths),
                                  np.minimum.reduceat(values, starts))
    np.testing.assert_array_equal(run_on(backend, asp.segment_sum, values, lengths=lengths),
                                  np.add.reduceat(values, starts))
    for fn, np_fn in ((asp.segment_argmax, np.argmax), (asp.segment_argmin, np.argmin)):
        expected = [np_fn(values[s:s + n]) for s, n in zip(starts, lengths, strict=True)]
        np.testing.assert_array_equal(run_on(backend, fn, values, lengths=lengths), expected)
    wide = np.stack([values, values[::-1]], axis=1)
    np.testing.assert_array_equal(run_on(backend, asp.segment_max, wide, lengths=lengths),
                                  np.maximum.reduceat(wide, starts, axis=0))
    np.testing.assert_array_equal(run_on(backend, asp.segment_argmax, wide, lengths=lengths),
                                  [np.argmax(wide[s:s + n], axis=0)
                                   for s, n in zip(starts, lengths, strict=True)])


def test_segment_reduce_matches_torch(backend: str) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    values = rng.normal(size=(300, 3))
    lengths = rng.integers(0, 12, size=40)
    values = values[:lengths.sum()]
    nonempty = lengths > 0
    for op in ("sum", "mean", "max", "min", "prod"):
        expected = torch.segment_reduce(torch.from_numpy(values), op,
                                        lengths=torch.from_numpy(lengths), unsafe=True)
        got = run_on(backend, SORTED[op], values, lengths=lengths)
        np.testing.assert_allclose(got[nonempty], expected.numpy()[nonempty], rtol=1e-12,
                                   atol=1e-12)


def test_sorted_parallel_paths_match_numpy(backend: str) -> None:
    # Large inputs: the CPU's parallel twins (and a many-row grid on the device).
    rng = np.random.default_rng(11)
    lengths = rng.integers(0, 40, size=20_000)
    n = int(lengths.sum())
    values = rng.random(n, dtype=np.float32)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    starts = offsets[:-1][lengths > 0]
    nonempty = lengths > 0
    ref64 = np.add.reduceat(values.astype(np.float64), starts)
    np.testing.assert_allclose(
        run_on(backend, asp.segment_sum, values, offsets=offsets)[nonempty], ref64, rtol=1e-6)
    np.testing.assert_allclose(
        run_on(backend, asp.segment_mean, values, lengths=lengths)[nonempty],
        ref64 / lengths[nonempty], rtol=1e-6)
    np.testing.assert_array_equal(
        run_on(backend, asp.segment_max, values, lengths=lengths)[nonempty],
        np.maximum.reduceat(values, starts))
    np.testing.assert_array_equal(
        run_on(backend, asp.segment_min, values, lengths=lengths)[nonempty],
        np.minimum.reduceat(values, starts))
    wide = rng.random((n // 8, 8)).astype(np.float32)
    cuts = np.sort(rng.integers(0, len(wide), size=3000))
    wl = np.diff(np.concatenate([[0], cuts, [len(wide)]]))
    ws = np.concatenate([[0], np.cumsum(wl)])[:-1][wl > 0]
    np.testing.assert_allclose(run_on(backend, asp.segment_sum, wide, lengths=wl)[wl > 0],
                               np.add.reduceat(wide.astype(np.float64), ws, axis=0), rtol=1e-6)
    np.testing.assert_array_equal(run_on(backend, asp.segment_max, wide, lengths=wl)[wl > 0],
                                  np.maximum.reduceat(wide, ws, axis=0))


def test_device_results_need_device_inputs(backend: str) -> None:
    # Host inputs give host results on every backend (nothing moves implicitly).
    got = asp.segment_sum(np.arange(4.0), lengths=[1, 3])
    assert isinstance(got, np.ndarray) and got.tolist() == [0.0, 6.0]
    if on_device(backend):
        assert not isinstance(asp.segment_sum(to_backend(np.arange(4.0), backend),
                                              lengths=to_backend([1, 3], backend)),
                              np.ndarray)


# ------------------------------------------------------------ the family on the device
@on_devices
@pairwise_parametrize("op,values_dtype,offsets_dtype,width", list(SORTED), NUMERIC_DTYPES,
                      OFFSETS_DTYPES, WIDTHS)
def test_sorted_reductions_match_the_cpu(backend: str, op: str, values_dtype: np.dtype,
                                         offsets_dtype: np.dtype, width: int | None) -> None:
    values, offsets = sample(values_dtype, width)
    one_d_float_sum = (values_dtype.kind == "f" and width is None
                       and op in ("sum", "mean"))
    # The CPU's 1-D float sums add into several lanes, then fold them; the CUDA twin
    # adds in row order. Same inputs, other rounding: equal within 1e-12.
    launches = same_as_cpu(backend, SORTED[op], values, offsets=offsets.astype(offsets_dtype),
                           rtol=1e-12 if one_d_float_sum else 0.0,
                           rounded=backend == "cupy" and op in ROUNDED)
    if backend == "cuda_emu":
        assert kernels(launches) == sorted_kernels(op, width is not None)
        assert launches[0].endswith(f"{'int' if offsets_dtype == np.int32 else 'long long'}>")


@on_devices
@pytest.mark.parametrize("op", list(SORTED))
def test_sorted_reductions_of_every_input_form_match_the_cpu(backend: str, op: str) -> None:
    fn, rounded = SORTED[op], op in ROUNDED
    for dtype in FORM_DTYPES:
        values = values_of(dtype, 40, seed=1)
        offsets = np.array([3, 3, 10, 11, 30, 30, 38], dtype=np.int32)  # starts above 0
        same_as_cpu(backend, fn, values, offsets=offsets, rounded=rounded)
        same_as_cpu(backend, fn, values[3:38], offsets=offsets - 3, num_segments=9,
                    rounded=rounded)
        same_as_cpu(backend, fn, host_jagged(dtype, seed=2), rounded=rounded)
    values = values_of(np.float64, (40, 3), seed=3)
    same_as_cpu(backend, fn, values, lengths=[0, 7, 1, 20, 0, 12], rounded=rounded)
    ids = np.sort(np.random.default_rng(4).integers(0, 9, size=40))
    same_as_cpu(backend, fn, values, segment_ids=ids, rounded=rounded)
    same_as_cpu(backend, fn, values, segment_ids=ids, num_segments=12, rounded=rounded)
    same_as_cpu(backend, fn, host_jagged(np.float32, width=2, seed=5), rounded=rounded)
    jagged = host_jagged(np.int16, seed=6)
    same_as_cpu(backend, fn, jagged, num_segments=jagged.num_rows + 3, rounded=rounded)
    if op not in ("logsumexp", "prod", "argmax"):
        same_as_cpu(backend, fn, values_of(bool, 30, seed=7), lengths=[10, 0, 20])


@on_devices
@pytest.mark.parametrize("op", ["sum", "mean", "max", "argmin", "logsumexp"])
def test_sorted_by_segment_ids_with_num_segments(backend: str, op: str,
                                                 offsets_dtype: np.dtype) -> None:
    ids = np.array([0, 0, 2, 2, 2, 5, 6, 6], dtype=offsets_dtype)
    values = np.arange(16, dtype=np.float32).reshape(8, 2)
    launches = same_as_cpu(backend, SORTED[op], values, segment_ids=ids, num_segments=9,
                           rounded=backend == "cupy" and op in ROUNDED)
    if backend == "cuda_emu":
        assert kernels(launches) == ["ids_to_offsets", *sorted_kernels(op, True)]


@on_devices
def test_sorted_floats_nan_inf_and_signed_zero_match_the_cpu(backend: str) -> None:
    values = np.array([0.0, -0.0, 1.5, np.nan, 2.0, -np.inf, -np.inf, np.inf, 3.0, -0.0, 0.0,
                       np.nan, 7.0, -1.0, -2.0])
    lengths = [2, 3, 2, 1, 2, 2, 3]
    for width in (None, 2):
        vals = values if width is None else np.stack([values, values[::-1]], axis=1)
        for op, fn in SORTED.items():
            same_as_cpu(backend, fn, vals, lengths=lengths,
                        rounded=backend == "cupy" and op in ROUNDED)


@on_devices
@pytest.mark.parametrize("large", [False, True], ids=["list", "large_list"])
@pytest.mark.parametrize("op", [*SORTED, "weighted_sum"])
def test_sorted_arrow_null_rows_and_values_match_the_cpu(backend: str, op: str,
                                                         large: bool) -> None:
    rounded = backend == "cupy" and op in ROUNDED
    for dtype in (pa.float32(), pa.int16(), pa.uint64()):
        rows = arrow_rows(large, dtype)
        if op == "weighted_sum":
            weights = pa.array([[0.5] * (len(r) if r is not None else 0)
                                for r in rows.to_pylist()], pa.list_(pa.float64()))
            same_as_cpu(backend, asp.segment_weighted_sum, rows, weights, rounded=rounded)
        else:
            kwargs = {"min_count": 2} if op in ("sum", "max") else {}
            same_as_cpu(backend, SORTED[op], rows, rounded=rounded, **kwargs)
    chunked = pa.chunked_array([arrow_rows(large), arrow_rows(large)])
    if op != "weighted_sum" and not on_device(backend):  # no ChunkedArray on the device
        same_as_cpu(backend, SORTED[op], chunked, rounded=rounded)


@on_devices
def test_bool_values_match_the_cpu(backend: str) -> None:
    values = np.array([True, False, True, True, False, False, True])
    for op in ("sum", "max", "min", "mean"):
        same_as_cpu(backend, SORTED[op], values, lengths=[3, 0, 2, 2])


@on_devices
def test_min_count_and_empty_value_on_the_device(backend: str) -> None:
    jagged = host_jagged(np.float64, seed=8)
    same_as_cpu(backend, asp.segment_sum, jagged, min_count=2, empty_value=-1.0)
    same_as_cpu(backend, asp.segment_max, jagged, empty_value=-0.0)
    same_as_cpu(backend, asp.segment_logsumexp, jagged)


# ------------------------------------------------------------ the family's device errors
def test_host_and_device_inputs_together_name_the_fix(cp: ModuleType) -> None:
    values = dev(cp, np.arange(4.0))
    calls = {
        "segment_sum: lengths is a host": lambda: asp.segment_sum(values, lengths=[2, 2]),
        "segment_weighted_sum: weights is a host": lambda: asp.segment_weighted_sum(
            values, np.ones(4), lengths=dev(cp, [4])),
    }
    for match, call in calls.items():
        with pytest.raises(TypeError, match="^" + match + ".*" + MIXED_FIX):
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
        (lambda: asp.segment_weighted_sum(values, dev(cp, np.ones(5)), lengths=dev(cp, [6])),
         ValueError, r"segment_weighted_sum: weights must be 1-D with one weight per value"),
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
    (lambda cp: asp.segment_weighted_sum(
        asp.Jagged.from_lengths(dev(cp, np.ones(5)), dev(cp, [2, 3])),
        asp.Jagged.from_lengths(dev(cp, np.ones(5)), dev(cp, [3, 2]))),
     ValueError, "segment_weighted_sum: weights must have the same row lengths as the values"
     + DEFERRED.format(0)),
])
def test_data_errors_are_raised_by_the_next_check(cp: ModuleType, call: Callable[..., Any],
                                                  cls: type, message: str) -> None:
    assert_raised_by_the_next_check(cp, call, cls, message)


def test_data_errors_are_raised_at_once_where_a_value_is_read(cp: ModuleType) -> None:
    with pytest.raises(ValueError, match=r"^segment_sum: segment_ids must be sorted "
                                         r"\(non-decreasing\)" + AT_ONCE.format(2)):
        asp.segment_sum(dev(cp, np.arange(3.0)), segment_ids=dev(cp, [0, 2, 1]))
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


# ------------------------------------------------------------ the family's properties
@pytest.mark.hypothesis
@pytest.mark.parametrize("op", list(SORTED))
@given(data=st.data())
def test_sorted_arrow_property(op: str, data: st.DataObject) -> None:
    arr, rows = data.draw(list_arrays(null_values=True))
    dtype = numpy_dtype(arr.type.value_type)
    expected = ref.segment_reduce(rows, op)
    assert_arrow(SORTED[op](arr), expected, out_dtype(op, dtype))
    got = SORTED[op](sst.chunked(arr, data.draw(sst.cuts(len(arr)))))
    assert isinstance(got, pa.ChunkedArray)
    assert_arrow(got.combine_chunks(), expected, out_dtype(op, dtype))


@pytest.mark.hypothesis
@pytest.mark.parametrize("op", list(SORTED))
@given(data=st.data())
def test_sorted_vectors_property(op: str, data: st.DataObject) -> None:
    arr, rows, width = data.draw(sst.vector_list_arrays())
    expected = ref.segment_reduce(rows, op)
    assert_arrow(SORTED[op](arr), expected, out_dtype(op, np.float64), (width,))


@pytest.mark.hypothesis
@pytest.mark.parametrize("op", list(SORTED))
@given(data=st.data())
def test_sorted_numpy_property(op: str, data: st.DataObject) -> None:
    dtype = data.draw(numeric_dtypes())
    rows = data.draw(st.lists(st.lists(scalars(dtype), max_size=6), max_size=10))
    before = data.draw(st.lists(scalars(dtype), max_size=3))
    after = data.draw(st.lists(scalars(dtype), max_size=3))
    flat = np.array(before + [x for r in rows for x in r] + after, dtype=dtype)
    lens = [len(r) for r in rows]
    offsets = np.concatenate([[len(before)], len(before) + np.cumsum(lens, dtype=np.int64)])
    offsets = offsets.astype(data.draw(st.sampled_from([np.int32, np.int64])))
    extra = data.draw(st.integers(0, 2))
    expected = expected_array(ref.segment_reduce(rows + [[]] * extra, op), EMPTY[op])
    got = SORTED[op](flat, offsets=offsets, num_segments=len(rows) + extra)
    assert got.dtype == out_dtype(op, dtype)
    assert_close(got, expected, out_dtype(op, dtype))
    inner = flat[len(before):len(flat) - len(after)]
    ids = np.repeat(np.arange(len(rows)), lens)
    assert_close(SORTED[op](inner, segment_ids=ids, num_segments=len(rows) + extra), expected,
                 out_dtype(op, dtype))
    j = asp.Jagged(flat, offsets)
    assert_close(SORTED[op](j, num_segments=len(rows) + extra), expected, out_dtype(op, dtype))


# ====================================================================== segment_sum
def test_caffe2_matrix_example(backend: str) -> None:
    expected = np.array([[12, 7], [14, 12]])
    got = run_on(backend, asp.segment_sum, CAFFE2_DATA, segment_ids=CAFFE2_DATA_IDS)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == np.int64
    fsl = pa.FixedSizeListArray.from_arrays(pa.array(CAFFE2_DATA.ravel()), 2)
    arrow = asp.segment_sum(fsl, segment_ids=CAFFE2_DATA_IDS)
    assert arrow.type == pa.list_(pa.int64(), 2)
    assert arrow.to_pylist() == expected.tolist()
    rows = pa.array([CAFFE2_DATA[:3].tolist(), CAFFE2_DATA[3:].tolist()],
                    type=pa.list_(pa.list_(pa.int64(), 2)))
    assert asp.segment_sum(rows).to_pylist() == expected.tolist()


def test_segment_sum_integers_accumulate_in_int64(backend: str) -> None:
    values = np.full(1000, 100, dtype=np.int8)
    assert run_on(backend, asp.segment_sum, values, lengths=[1000]).tolist() == [100_000]
    big = np.full(4, 2**31 - 1, dtype=np.int32)
    assert run_on(backend, asp.segment_sum, big, lengths=[4]).tolist() == [4 * (2**31 - 1)]
    assert run_on(backend, asp.segment_sum, np.array([2**63 + 5], dtype=np.uint64),
                  lengths=[1]).dtype == np.uint64


def test_segment_sum_is_exact_beyond_float64(backend: str) -> None:
    # Regression: the unweighted 1-D kernel once unified its int64 accumulator with a
    # float64 weights placeholder and rounded sums above 2**53.
    big = np.array([3, -(2**63) + 10, -1], dtype=np.int64)
    assert run_on(backend, asp.segment_sum, big, lengths=[3]).tolist() == [12 - 2**63]
    assert run_on(backend, asp.segment_sum, big.reshape(3, 1),
                  lengths=[3]).tolist() == [[12 - 2**63]]
    huge = np.array([2**62, 2**62 - 1, 1], dtype=np.uint64)
    assert run_on(backend, asp.segment_sum, huge, lengths=[3]).tolist() == [2**63]


@on_devices
def test_1d_int64_sum_is_exact_like_the_cuda_twin(backend: str) -> None:
    big = np.array([3, -(2**63) + 10, -1], dtype=np.int64)
    same_as_cpu(backend, asp.segment_sum, big, lengths=[3])
    assert run_on(backend, asp.segment_sum, big, lengths=[3])[0] == 12 - 2**63


@on_devices
def test_integer_overflow_wraps_like_the_cpu(backend: str) -> None:
    big = np.array([2**62, 2**62, 2**62, 3, -(2**63), -1], dtype=np.int64).reshape(6, 1)
    for fn in (asp.segment_sum, asp.segment_prod):
        same_as_cpu(backend, fn, big, lengths=[3, 3])
    assert run_on(backend, asp.segment_sum, big, lengths=[3, 3])[1, 0] == 2 - 2**63  # exact


def test_segment_sum_float32_precision_on_a_long_segment(backend: str) -> None:
    values, exact = long_float32_segment()
    got = run_on(backend, asp.segment_sum, values, lengths=[len(values)])
    assert got.dtype == np.float32
    # float64 accumulation: the only error is the final rounding to float32.
    assert abs(float(got[0]) - exact) <= abs(exact) * 2.0**-23


def test_segment_sum_float32_precision_on_long_vector_segments(backend: str) -> None:
    # 10**6 float32 rows of 16 per segment against math.fsum: 2-D rows in float64.
    wide, _, _ = long_float32_batch()
    exact = long_float32_batch_sums()
    bound = np.abs(exact) * 2.0**-23
    got = run_on(backend, asp.segment_sum, wide, lengths=[len(wide)])[0].astype(np.float64)
    assert np.all(np.abs(got - exact) <= bound)


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
def test_float_row_sum_order_is_fixed(backend: str, dtype: Any) -> None:
    # Bit-for-bit the documented lane order on the CPU: reproducible on any machine. The
    # CUDA twin adds in another order: within the float64 rounding of the sum, then the
    # rounding to the output dtype.
    rng = np.random.default_rng(12)
    lengths = rng.integers(0, 70, size=200)
    offsets = np.concatenate([[3], 3 + np.cumsum(lengths)])
    values = (rng.normal(size=offsets[-1] + 4) * 10.0 ** rng.uniform(-3, 6, offsets[-1] + 4))
    values = values.astype(dtype)
    expected = np.array([_lane_order_sum(values[a:b])
                         for a, b in zip(offsets[:-1], offsets[1:], strict=True)])
    with np.errstate(invalid="ignore", divide="ignore"):
        expected_mean = np.where(lengths > 0, expected / np.maximum(lengths, 1), 0)
    got = run_on(backend, asp.segment_sum, values, offsets=offsets)
    mean = run_on(backend, asp.segment_mean, values, offsets=offsets)
    if backend == "cpu":
        np.testing.assert_array_equal(got, expected.astype(dtype))
        np.testing.assert_array_equal(mean, expected_mean.astype(dtype))
        return
    magnitude = np.array([np.abs(values[a:b].astype(np.float64)).sum()
                          for a, b in zip(offsets[:-1], offsets[1:], strict=True)])
    for result, want, scale in ((got, expected, magnitude),
                                (mean, expected_mean, magnitude / np.maximum(lengths, 1))):
        assert result.dtype == dtype
        want = want.astype(dtype)
        bound = 2 * np.spacing(np.abs(want)) + 1e-13 * scale
        assert np.all(np.abs(result.astype(np.float64) - want) <= bound)


def test_float16_rejected(backend: str) -> None:
    with pytest.raises(TypeError, match="segment_sum: values of dtype float16"):
        asp.segment_sum(np.ones(3, np.float16), lengths=[3])


# ====================================================================== segment_weighted_sum
def test_caffe2_scores(backend: str) -> None:
    scores = np.array([0.4, 0.7, 0.5, 0.5, 0.1])
    np.testing.assert_allclose(
        run_on(backend, asp.segment_weighted_sum, np.ones(5), scores,
               segment_ids=[0, 0, 1, 1, 1]), [1.1, 1.1])


def test_segment_weighted_sum_integers_accumulate_in_int64(backend: str) -> None:
    big = np.full(4, 2**31 - 1, dtype=np.int32)
    assert run_on(backend, asp.segment_weighted_sum, big, np.full(4, 2, np.int16),
                  lengths=[4]).tolist() == [8 * (2**31 - 1)]


def test_weighted_sum_forms_and_errors(backend: str) -> None:
    values = pa.array(CAFFE2_ROWS)
    weights = pa.array([[1, 0, 1], [2, 2, 2, 2], None], pa.list_(pa.float32()))
    got = asp.segment_weighted_sum(values, weights)
    assert got.type == pa.float64()  # int64 with float32 -> float64
    assert got.to_pylist() == [4.0, 38.0, None]
    j = asp.Jagged.from_arrow(values)
    np.testing.assert_array_equal(
        run_on(backend, asp.segment_weighted_sum, j, asp.Jagged.from_arrow(weights)),
        [4.0, 38.0, 0.0])
    f32 = run_on(backend, asp.segment_weighted_sum, np.ones(3, np.float32),
                 np.ones(3, np.float32), lengths=[3])
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


def test_num_segments_with_list_weights_issue_3(backend: str) -> None:
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
        run_on(backend, asp.segment_weighted_sum, j, asp.Jagged.from_arrow(w), num_segments=3),
        [3.0, 6.0, 0.0])
    with pytest.raises(ValueError, match="weights has 1 rows but the values have 2"):
        asp.segment_weighted_sum(vals, pa.array([[1.0, 1.0]]), num_segments=4)


def test_segment_weighted_sum_float32_precision_on_a_long_segment(backend: str) -> None:
    values, exact = long_float32_segment()
    w = np.full(len(values), 0.5, dtype=np.float32)
    wsum = run_on(backend, asp.segment_weighted_sum, values, w, lengths=[len(values)])
    assert abs(float(wsum[0]) - exact / 2) <= abs(exact / 2) * 2.0**-23


@on_devices
@pairwise_parametrize("values_dtype,weights_dtype,width", NUMERIC_DTYPES, WEIGHT_DTYPES, WIDTHS)
def test_segment_weighted_sum_matches_the_cpu(backend: str, values_dtype: np.dtype,
                                              weights_dtype: Any, width: int | None) -> None:
    values, offsets = sample(values_dtype, width, signed=False)
    weights, _ = sample(weights_dtype, None, seed=3, signed=False)
    launches = same_as_cpu(backend, asp.segment_weighted_sum, values, weights, offsets=offsets,
                           rounded=backend == "cupy")
    if backend == "cuda_emu":
        assert kernels(launches) == (["sorted_sum_pieces"] if width else []) + ["sorted_sum"]


@on_devices
def test_segment_weighted_sum_of_every_input_form_matches_the_cpu(backend: str) -> None:
    for dtype, wdtype in ((np.int32, np.float32), (np.float32, np.float32),
                          (np.uint64, np.uint8), (np.float64, np.int64)):
        values = values_of(dtype, 30, seed=9)
        weights = np.abs(values_of(wdtype, 30, seed=10))
        same_as_cpu(backend, asp.segment_weighted_sum, values, weights,
                    lengths=[4, 0, 10, 16], rounded=True)
    values = values_of(np.float64, (30, 2), seed=11)
    same_as_cpu(backend, asp.segment_weighted_sum, values, values_of(np.float64, 30, 12),
                segment_ids=np.repeat([0, 2, 3], 10), num_segments=5, rounded=True)
    # list weights: null rows in the values or in the weights give empty rows
    arr = pa.array([[1.0, 2.0], None, [3.0, None, 5.0], [], [7.0]]).slice(1)
    weights = pa.array([[0.5, 0.5], [1.0], None, [], [2.0]]).slice(1)
    same_as_cpu(backend, asp.segment_weighted_sum, asp.Jagged.from_arrow(arr),
                asp.Jagged.from_arrow(weights), num_segments=6, rounded=True)


@pytest.mark.hypothesis
@given(data=st.data())
def test_weighted_sum_arrow_property(data: st.DataObject) -> None:
    arr, rows = data.draw(list_arrays(dtype=np.dtype(np.float32), null_values=True))
    wrows = [None if r is None or data.draw(st.booleans()) else
             [data.draw(st.floats(-10, 10, width=32)) for _ in r] for r in rows]
    weights = pa.array(wrows, type=pa.list_(pa.float32()))
    expected = ref.segment_reduce(rows, "weighted_sum", weights=wrows)
    assert_arrow(asp.segment_weighted_sum(arr, weights), expected, np.dtype(np.float32))
    bounds = data.draw(sst.cuts(len(arr)))
    got = asp.segment_weighted_sum(sst.chunked(arr, bounds), sst.chunked(weights, bounds))
    assert isinstance(got, pa.ChunkedArray)
    assert_arrow(got.combine_chunks(), expected, np.dtype(np.float32))
    extra = data.draw(st.integers(1, 2))
    assert_arrow(asp.segment_weighted_sum(arr, weights, num_segments=len(rows) + extra),
                 expected + [0.0] * extra, np.dtype(np.float32))


@pytest.mark.hypothesis
@given(data=st.data())
def test_weighted_sum_numpy_property(data: st.DataObject) -> None:
    dtype = data.draw(numeric_dtypes())
    wdtype = np.dtype(data.draw(st.sampled_from([np.float32, np.float64, np.int8, np.int64])))
    width = data.draw(st.sampled_from([None, 1, 3]))
    rows = data.draw(st.lists(st.lists(scalars(dtype), max_size=5), max_size=6))
    before = data.draw(st.lists(scalars(dtype), max_size=3))
    after = data.draw(st.lists(scalars(dtype), max_size=3))
    flat = before + [x for r in rows for x in r] + after
    w = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=len(flat),
                                    max_size=len(flat))), dtype=wdtype)
    values = np.array(flat, dtype=dtype)
    if width is not None:  # vectors: column d is the value times (d + 1)
        values = values[:, None] * np.arange(1, width + 1, dtype=dtype)
    lens = [len(r) for r in rows]
    offsets = np.concatenate([[len(before)], len(before) + np.cumsum(lens, dtype=np.int64)])
    extra = data.draw(st.integers(0, 2))
    vrows = ref.rows_from_offsets(values.tolist(), offsets.tolist()) + [[]] * extra
    wrows = ref.rows_from_offsets(w.tolist(), offsets.tolist()) + [[]] * extra
    inner = () if width is None else (width,)
    expected = expected_array(ref.segment_reduce(vrows, "weighted_sum", weights=wrows), 0,
                              inner)
    dt = out_dtype("weighted_sum", dtype, wdtype)
    got = asp.segment_weighted_sum(values, w, offsets=offsets, num_segments=len(rows) + extra)
    assert got.dtype == dt and got.shape == (len(rows) + extra,) + inner
    assert_close(got, expected, dt)
    lo, hi = len(before), len(flat) - len(after)
    got = asp.segment_weighted_sum(values[lo:hi], w[lo:hi], lengths=lens + [0] * extra)
    assert_close(got, expected, dt)


# ====================================================================== segment_mean
def test_segment_mean_float32_precision_on_a_long_segment(backend: str) -> None:
    values, exact = long_float32_segment()
    mean = run_on(backend, asp.segment_mean, values, offsets=[0, len(values)])
    assert abs(float(mean[0]) - exact / len(values)) <= abs(exact / len(values)) * 2.0**-23


# ====================================================================== segment_max, segment_min
def test_segment_max_of_a_long_segment_is_exact(backend: str) -> None:
    wide, _, _ = long_float32_batch()
    col = np.ascontiguousarray(wide[:, 0])
    assert run_on(backend, asp.segment_max, col, lengths=[len(col)])[0] == col.max()


@on_devices
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_max_keeps_plus_zero_and_min_minus_zero_on_every_path(backend: str, dtype: Any) -> None:
    # audit B1: the sign of a zero max/min was the first zero seen (or the CPU's lane
    # split); now IEEE maximum/minimum on every path, whatever the order. (The unsorted
    # and fused paths: test_unsorted.py and test_fused.py.)
    for op, other, seed in (("max", -1.0, 1), ("min", 1.0, 3)):
        values, lengths, plus, minus = signed_zero_rows(dtype, other, seed)
        # with other < 0 the max of every row is a zero, 0.0 where the row holds one;
        # with other > 0 the min is, -0.0 where the row holds one
        negative = ~plus if op == "max" else minus
        paths = {"sorted 1-D": values, "sorted 2-D": np.stack([values, values], axis=1)}
        for name, x in paths.items():
            with on_the_cpu():
                expected = SORTED[op](x, lengths=lengths)
            column = expected if x.ndim == 1 else expected[:, 1]
            np.testing.assert_array_equal(column, 0.0)
            np.testing.assert_array_equal(np.signbit(column), negative, err_msg=name)
            same_as_cpu(backend, SORTED[op], x, lengths=lengths)


@pytest.mark.hypothesis
@pytest.mark.parametrize("op", ["max", "min"])
@given(data=st.data())
def test_max_min_signed_zeros_property(op: str, data: st.DataObject) -> None:
    # max(-0.0, 0.0) = 0.0 and min(-0.0, 0.0) = -0.0 whatever the order, on the sorted
    # paths: 1-D rows (vector lanes) and 2-D rows. (Unsorted and fused: their modules.)
    dtype, rows, flat, lens = data.draw(sst.signed_zero_rows())
    expected = ref.segment_reduce([[float(dtype.type(x)) for x in r] for r in rows], op)
    sst.bits_equal(SORTED[op](flat, lengths=lens), expected, dtype)
    sst.bits_equal(SORTED[op](np.stack([flat, flat], axis=1), lengths=lens)[:, 0], expected,
                   dtype)


# ====================================================================== segment_prod
def test_segment_prod_is_exact_in_int64(backend: str) -> None:
    assert run_on(backend, asp.segment_prod, np.array([2**31, 2**31 + 1]),
                  lengths=[2]).tolist() == [2**62 + 2**31]


# ====================================================================== segment_logsumexp
def test_logsumexp_is_stable(backend: str) -> None:
    scipy_special = pytest.importorskip("scipy.special")
    values = np.array([1000.0, 1000.0, -1000.0, -1000.0, np.inf, 1.0, -np.inf, -np.inf,
                       np.nan, 1.0, 0.5, -3.0], dtype=np.float64)
    lengths = [2, 2, 2, 2, 2, 2]
    got = run_on(backend, asp.segment_logsumexp, values, lengths=lengths)
    expected = [scipy_special.logsumexp(values[s:s + 2]) if s != 6 else -np.inf
                for s in range(0, 12, 2)]
    np.testing.assert_allclose(got, expected)
    got32 = run_on(backend, asp.segment_logsumexp, values.astype(np.float32), lengths=lengths)
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, np.array(expected, dtype=np.float32), rtol=1e-6)


# ==================================================== 1-D float rows of mixed lengths
#: Row lengths around the 1-D kernels' 64-byte vectors (16 float32, 8 float64 values)
#: and the head vectors every row reads (up to 4).
EDGE_LENGTHS = [0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65]


@st.composite
def row_length_mixes(draw: Any) -> list[int]:
    """Many empty rows, length-1 rows, lengths at vector edges, a giant row, or a mix."""
    kind = draw(st.sampled_from(["empties", "ones", "edges", "giant", "mixed"]))
    count = draw(st.integers(1, 40))
    if kind == "empties":
        lens = [draw(st.sampled_from([0] * 9 + [1, 3, 20])) for _ in range(count)]
    elif kind == "ones":
        lens = [draw(st.sampled_from([1] * 5 + [0, 2])) for _ in range(count)]
    elif kind == "edges":
        lens = draw(st.lists(st.sampled_from(EDGE_LENGTHS), min_size=1, max_size=count))
    elif kind == "giant":
        lens = draw(st.lists(st.integers(0, 3), max_size=count))
        lens.insert(draw(st.integers(0, len(lens))), draw(st.integers(100, 700)))
    else:
        lens = draw(st.lists(st.integers(0, 80), min_size=1, max_size=count))
    return lens


def _mixed_floats(dtype: Any) -> st.SearchStrategy[float]:
    return st.one_of(st.floats(-100, 100, width=32), st.sampled_from(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30]))


@pytest.mark.hypothesis
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
@given(data=st.data())
def test_float_rows_of_mixed_lengths_property(op: str, data: st.DataObject) -> None:
    """The 1-D float kernels on row-length mixes, values up to (or short of) the buffer end.

    Rows reading vectors that end past the last value take the checked loads; the
    others the plain ones. NaN propagates through max/min, -0.0 < +0.0, empty rows give
    the empty value, and integer-valued float32 sums are exact.
    """
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    lens = data.draw(row_length_mixes())
    special = data.draw(st.booleans())
    total = sum(lens)
    before = data.draw(st.integers(0, 20))
    after = data.draw(st.sampled_from([0, 0, 1, 15, 70]))
    if special:
        flat = np.array(data.draw(st.lists(_mixed_floats(dtype), min_size=before + total + after,
                                           max_size=before + total + after)), dtype=dtype)
    else:  # small integers: every sum exact in float64 and in the output dtype
        seed = data.draw(st.integers(0, 2**32 - 1))
        flat = np.random.default_rng(seed).integers(-50, 50, before + total + after).astype(dtype)
    offsets = np.concatenate([[before], before + np.cumsum(lens, dtype=np.int64)])
    offsets = offsets.astype(data.draw(st.sampled_from([np.int32, np.int64])))
    rows = [flat[offsets[i]:offsets[i + 1]].tolist() for i in range(len(lens))]
    expected = expected_array(ref.segment_reduce(rows, op), EMPTY[op])
    got = SORTED[op](flat, offsets=offsets)
    assert got.dtype == dtype
    if op in ("max", "min") or not special:
        np.testing.assert_array_equal(got, expected.astype(dtype))  # NaN where NaN
        if op in ("max", "min"):  # the sign of a zero too (a NaN's is the kernel's own)
            number = ~np.isnan(got)
            assert np.array_equal(np.signbit(got[number]), np.signbit(expected[number]))
    else:
        assert_close(got, expected, np.dtype(dtype))
