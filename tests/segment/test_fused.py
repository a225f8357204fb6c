"""Tests of ``arrow_sparse.segment.fused``: ``sparse_segment_{sum,weighted_sum,mean,max}`` and
``embedding_bag`` (gather + reduce in one pass).

Each operation against the plain-Python oracle (``tests/_reference_segment.py``) and
against ``segment_*(gather(...))`` on every backend of the ``backend`` fixture (numpy
inputs go to the device with ``to_backend``; Arrow inputs stay on the host, where the
``cuda_emu`` backend runs them through the CUDA kernels), then the device checks (the
``gather_reduce`` kernels against the CPU's, see ``_helpers``) and the device errors.
Property tests (Hypothesis) run on the CPU; the example tests beside them cover the
device paths.
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
from arrow_sparse.errors import ArrowSparseError

from .. import _reference_segment as ref
from .._matrix import pairwise_parametrize
from ..conftest import NUMERIC_DTYPES, OFFSETS_DTYPES, on_device
from . import _strategies as sst
from ._helpers import (
    AT_ONCE,
    CAFFE2_LENGTHS,
    CAFFE2_OFFSETS,
    CAFFE2_ROWS,
    DEFERRED,
    FORM_DTYPES,
    LENGTHS,
    MIXED_FIX,
    ROUNDED,
    SORTED,
    SPARSE,
    assert_arrow,
    assert_close,
    assert_raised_by_the_next_check,
    dev,
    expected_array,
    kernels,
    long_float32_batch,
    long_float32_segment,
    on_devices,
    on_the_cpu,
    out_dtype,
    raised_later,
    run_on,
    same_as_cpu,
    sample,
    signed_zero_rows,
    table_and_ids,
    values_of,
)

WEIGHT_DTYPES = [np.uint8, np.int32, np.uint64, np.float32, np.float64]


# ====================================================================== the family
def test_docstring_examples_on_every_backend(backend: str) -> None:
    table = np.arange(8) * 10
    bags = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
    assert run_on(backend, asp.sparse_segment_sum, table, bags,
                  lengths=[3, 4, 2]).tolist() == [60, 190, 90]
    assert run_on(backend, asp.sparse_segment_mean, table, bags,
                  lengths=[3, 4, 2, 0]).tolist() == [20, 47.5, 45, 0]
    assert run_on(backend, asp.sparse_segment_max, table, bags,
                  lengths=[3, 4, 2]).tolist() == [30, 70, 60]
    rows = np.arange(16.0).reshape(8, 2)
    assert run_on(backend, asp.embedding_bag, rows, bags, offsets=[0, 3, 7],
                  include_last_offset=False, mode="max").tolist() == [[6, 7], [14, 15], [12, 13]]


def test_sparse_segment_ops_against_gather_then_reduce(backend: str) -> None:
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
            got = run_on(backend, fn, table, ids, **kw)
            assert got.dtype == out_dtype(op, np.float32)
            expected = ref.segment_reduce(ref.sparse_rows(table_rows, id_rows), op)
            assert_close(got, expected_array(expected, 0, (4,)), np.dtype(np.float32))
            np.testing.assert_array_equal(
                got, run_on(backend, SORTED[op], run_on(backend, asp.gather, table, ids), **kw))
        wgot = run_on(backend, fn, table, ids, lengths=lengths, weights=weights)
        wrows = ref.rows_from_offsets(weights.tolist(), offsets.tolist())
        wexp = ref.segment_reduce(ref.sparse_rows(table_rows, id_rows), op, weights=wrows)
        assert_close(wgot, expected_array(wexp, 0, (4,)), np.dtype(np.float64))
    np.testing.assert_array_equal(
        run_on(backend, asp.sparse_segment_weighted_sum, table, ids, weights=weights,
               lengths=lengths),
        run_on(backend, asp.sparse_segment_sum, table, ids, weights=weights, lengths=lengths))


def test_sparse_segment_arrow_ids_and_errors(backend: str) -> None:
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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [7, 8, 16, 37, 64, 100])
def test_fused_widths_and_null_rows(backend: str, dtype: Any, width: int) -> None:
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
        got = run_on(backend, fn, table, asp.Jagged.from_arrow(arr))
        as_empty = ref.segment_reduce(
            ref.sparse_rows(table.astype(np.float64).tolist(),
                            [[] if r is None else r for r in id_rows]), op)
        assert_close(got, expected_array(as_empty, 0, (width,)), np.dtype(dtype))


def test_fused_ids_checked_as_they_are_read(backend: str) -> None:
    # The kernels check each bag's ids before using them; the first bad id is reported
    # whichever block of a parallel run finds it; ids of null rows and null ids are
    # neither read nor checked.
    rng = np.random.default_rng(9)
    table = rng.random((100, 16)).astype(np.float32)
    ids = rng.integers(0, 100, size=200_000)
    ids[150_000] = 100
    ids[120_001] = -1
    lengths = np.full(10_000, 20)
    for fn in SPARSE.values():
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


def test_fused_null_rows_range_is_never_read(backend: str) -> None:
    # Arrow allows any ids under a null row; here a negative and a huge one.
    offsets = pa.array([0, 1, 3, 4], pa.int32())
    ids = pa.ListArray.from_arrays(offsets, pa.array([0, -5, 10**9, 1]),
                                   mask=pa.array([False, True, False]))
    assert asp.sparse_segment_sum(np.array([10, 20]), ids).to_pylist() == [10, None, 20]
    # A device Jagged of the same bags: the null row reduces as an empty row.
    got = run_on(backend, asp.sparse_segment_sum, np.array([10, 20]), asp.Jagged.from_arrow(ids))
    assert got.tolist() == [10, 0, 20]


def test_out_of_range_ids_raise_like_the_cpu(backend: str) -> None:
    table = np.ones((4, 2))
    ids = pa.array([[0, 1], None, [2, None, 7], [5]], pa.list_(pa.int64()))
    for fn in SPARSE.values():
        with pytest.raises(IndexError, match=r"indices out of range \[0, 4\) "
                                             r"\(first at position 4: 7\)"):
            fn(table, ids)


def test_num_segments_with_list_weights_issue_3(backend: str) -> None:
    # Regression: num_segments extended the rows before the weights were compared with
    # them, so list-form weights were said to have too few rows.
    w = pa.array([[1.0, 1.0], [2.0]])
    table = np.arange(6.0).reshape(3, 2)
    got = asp.sparse_segment_weighted_sum(table, pa.array([[0, 1], [2]]), weights=w,
                                          num_segments=4)
    assert got.to_pylist() == [[2.0, 4.0], [8.0, 10.0], [0.0, 0.0], [0.0, 0.0]]
    assert asp.sparse_segment_mean(table, pa.array([[0, 1], [2]]), weights=w,
                                   num_segments=3).to_pylist() == [[1.0, 2.0], [8.0, 10.0],
                                                                   None]
    j = asp.Jagged.from_arrow(pa.array([[0, 1], [2]]))
    np.testing.assert_array_equal(
        run_on(backend, asp.sparse_segment_weighted_sum, table, j,
               weights=asp.Jagged.from_arrow(w), num_segments=3),
        [[2.0, 4.0], [8.0, 10.0], [0.0, 0.0]])


def test_zero_chunk_chunked_arrays_issue_3(backend: str) -> None:
    # Regression: a ChunkedArray with no chunks crashed with pyarrow's ArrowInvalid.
    got = asp.embedding_bag(np.ones((2, 2)), pa.chunked_array([], pa.int64()), offsets=[0])
    assert isinstance(got, pa.ChunkedArray) and got.type == pa.list_(pa.float64(), 2)
    assert len(got) == 0
    got = asp.embedding_bag(np.ones((2, 2)), pa.chunked_array([], pa.list_(pa.int64())))
    assert isinstance(got, pa.ChunkedArray) and len(got) == 0
    got = asp.sparse_segment_sum(pa.chunked_array([], pa.float32()), np.array([], np.int64),
                                 lengths=[0])
    assert isinstance(got, np.ndarray) and got.tolist() == [0.0]


@pytest.mark.parametrize("fn", [*SPARSE.values(), asp.sparse_segment_weighted_sum,
                                asp.embedding_bag], ids=lambda f: f.__name__)
def test_object_input_raises_type_error(backend: str, fn: Any) -> None:
    o = object()
    with pytest.raises(TypeError) as info:
        if fn is asp.sparse_segment_weighted_sum:
            fn(o, o, weights=o, lengths=[1])
        else:
            fn(o, o, lengths=[1])
    assert isinstance(info.value, ArrowSparseError)


# ------------------------------------------------------------ the family on the device
@on_devices
@pairwise_parametrize("op,values_dtype,offsets_dtype,ids_dtype", list(SPARSE), NUMERIC_DTYPES,
                      OFFSETS_DTYPES, [np.int32, np.int64, np.uint16])
def test_sparse_segment_reductions_match_the_cpu(backend: str, op: str,
                                                 values_dtype: np.dtype,
                                                 offsets_dtype: np.dtype,
                                                 ids_dtype: Any) -> None:
    table, ids, offsets = table_and_ids(values_dtype, ids_dtype)
    launches = same_as_cpu(backend, SPARSE[op], table, ids,
                           offsets=offsets.astype(offsets_dtype),
                           rounded=backend == "cupy" and op in ROUNDED)
    if backend == "cuda_emu":
        assert kernels(launches) == ["gather_reduce_pieces", "gather_reduce"]


@on_devices
@pytest.mark.parametrize("op", list(SPARSE))
def test_sparse_segment_reductions_of_every_input_form_match_the_cpu(backend: str,
                                                                     op: str) -> None:
    fn, rounded = SPARSE[op], op in ROUNDED
    rng = np.random.default_rng(20)
    offsets = np.array([2, 2, 9, 10, 25, 33], dtype=np.int32)
    for dtype in FORM_DTYPES:
        table = values_of(dtype, (12, 3), seed=21)
        ids = rng.integers(0, 12, size=36)
        same_as_cpu(backend, fn, table, ids, offsets=offsets, rounded=rounded)
        same_as_cpu(backend, fn, table, ids.astype(np.uint8), lengths=[0, 20, 16],
                    rounded=rounded)
    table = values_of(np.float32, (12, 20), seed=22)  # wide: the CPU's vector path
    ids = rng.integers(0, 12, size=36)
    same_as_cpu(backend, fn, table, ids, offsets=offsets, rounded=rounded)
    same_as_cpu(backend, fn, table, ids, segment_ids=np.repeat([0, 1, 4], 12),
                num_segments=6, rounded=rounded)
    same_as_cpu(backend, fn, table, ids, offsets=offsets, weights=rng.random(36),
                rounded=rounded)
    bags = asp.Jagged.from_arrow(pa.array([[1, 2], None, [3, None, 11], [], [0, 0, 5]],
                                          pa.list_(pa.int32())).slice(1))
    wbags = asp.Jagged.from_arrow(pa.array([[1.0, 2.0], [0.5, 4.0, 2.0], [], None],
                                           pa.list_(pa.float64())))
    same_as_cpu(backend, fn, table, bags, rounded=rounded)
    same_as_cpu(backend, fn, table, bags, weights=wbags, rounded=rounded)


@on_devices
@pytest.mark.parametrize("weights_dtype", WEIGHT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_sparse_segment_weighted_match_the_cpu(backend: str, values_dtype: np.dtype,
                                               weights_dtype: Any) -> None:
    table, ids, offsets = table_and_ids(values_dtype, np.int64)
    if values_dtype.kind == "i":
        table = np.abs(table)
    weights, _ = sample(weights_dtype, None, seed=3, signed=False)
    weights = weights[:len(ids)]
    for fn in (asp.sparse_segment_weighted_sum, asp.sparse_segment_mean,
               asp.sparse_segment_max):
        same_as_cpu(backend, fn, table, ids, offsets=offsets, weights=weights,
                    rounded=backend == "cupy" and fn is not asp.sparse_segment_max)


@on_devices
@pytest.mark.parametrize("width", [8, 16, 40, 70, 256], ids=lambda w: f"D{w}")
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_fused_wide_float_tables_match_the_cpu_fast_path(backend: str, dtype: Any,
                                                         width: int) -> None:
    rng = np.random.default_rng(width)
    table = (rng.standard_normal((30, width)) * 1e3).astype(dtype)
    offsets = np.concatenate([[2], 2 + np.cumsum(LENGTHS)])
    ids = rng.integers(0, 30, size=int(offsets[-1]))
    rounded = backend == "cupy"
    for fn in (asp.sparse_segment_sum, asp.sparse_segment_mean, asp.sparse_segment_max):
        same_as_cpu(backend, fn, table, ids, offsets=offsets,
                    rounded=rounded and fn is not asp.sparse_segment_max)
    for mode in ("sum", "mean"):
        same_as_cpu(backend, asp.embedding_bag, table, ids[2:], offsets=offsets[:-1] - 2,
                    mode=mode, include_last_offset=False, rounded=rounded)


@on_devices
@pytest.mark.parametrize("large", [False, True], ids=["list", "large_list"])
def test_fused_arrow_null_bags_and_ids_match_the_cpu(backend: str, large: bool) -> None:
    table = np.arange(20, dtype=np.float64).reshape(10, 2) - 7.5
    rows = [[1, 2, 3], None, [], [4, None, 6, 7, 9], None, [9], [None], [0, 0]]
    typ = pa.large_list(pa.int32()) if large else pa.list_(pa.int64())
    ids = pa.array(rows, typ).slice(1)
    for fn in (*SPARSE.values(), asp.embedding_bag):
        launches = same_as_cpu(backend, fn, table, ids, rounded=backend == "cupy"
                               and fn is not asp.sparse_segment_max)
        if backend == "cuda_emu":
            assert kernels(launches) == ["gather_reduce_pieces", "gather_reduce"]


@on_devices
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_max_keeps_plus_zero_on_every_path(backend: str, dtype: Any) -> None:
    # audit B1 (see test_sorted.py): the fused paths, with and without weights.
    values, lengths, plus, _ = signed_zero_rows(dtype, -1.0, 1)
    table, table_ids = values[:, None], np.arange(len(values))
    maxima: dict[str, tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = {
        "fused": (asp.sparse_segment_max, (table, table_ids), {"lengths": lengths}),
        "fused weighted": (asp.sparse_segment_max, (table, table_ids),
                           {"lengths": lengths, "weights": np.ones(len(values), dtype)}),
        "embedding_bag": (asp.embedding_bag, (table, table_ids),
                          {"lengths": lengths, "mode": "max"}),
    }
    for name, (fn, args, kwargs) in maxima.items():
        with on_the_cpu():
            expected = fn(*args, **kwargs)[:, 0]
        np.testing.assert_array_equal(expected, 0.0)
        np.testing.assert_array_equal(np.signbit(expected), ~plus, err_msg=name)
        same_as_cpu(backend, fn, *args, **kwargs)


# ------------------------------------------------------------ the family's device errors
def test_host_and_device_inputs_together_name_the_fix(cp: ModuleType) -> None:
    table = dev(cp, np.ones((3, 2)))
    calls = {
        "sparse_segment_sum: data is a host": lambda: asp.sparse_segment_sum(
            np.ones((3, 2)), dev(cp, [0, 1]), lengths=dev(cp, [2])),
        "embedding_bag: offsets is a host": lambda: asp.embedding_bag(
            table, dev(cp, [0, 1]), offsets=[0], include_last_offset=False),
    }
    for match, call in calls.items():
        with pytest.raises(TypeError, match="^" + match + ".*" + MIXED_FIX):
            call()
    assert cp.stats.syncs == 0


def test_o1_checks_stay_on_the_host_with_the_host_messages(cp: ModuleType) -> None:
    with pytest.raises(TypeError, match="^sparse_segment_sum: indices must be 1-D integers, "
                                        "got float64"):
        asp.sparse_segment_sum(dev(cp, np.arange(6.0)), dev(cp, [0.5]), lengths=dev(cp, [1]))
    assert cp.stats.syncs == 0


@pytest.mark.parametrize(("call", "cls", "message"), [
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
    (lambda cp: asp.sparse_segment_mean(
        dev(cp, np.ones((3, 2))), asp.Jagged.from_lengths(dev(cp, [0, 1, 2]), dev(cp, [1, 2])),
        weights=asp.Jagged(dev(cp, np.ones(3)), dev(cp, [0, 1, 3]),
                           values_validity=dev(cp, [True, True, False]))),
     ValueError, "sparse_segment_mean: weights must not contain null elements; fill them "
     r"first \(pyarrow.compute.fill_null\)" + DEFERRED.format(2)),
])
def test_data_errors_are_raised_by_the_next_check(cp: ModuleType, call: Callable[..., Any],
                                                  cls: type, message: str) -> None:
    assert_raised_by_the_next_check(cp, call, cls, message)


def test_data_errors_are_raised_at_once_where_a_value_is_read(cp: ModuleType) -> None:
    with pytest.raises(IndexError, match="^sparse_segment_sum: segment_ids must be "
                                         "non-negative" + AT_ONCE.format(0)):
        asp.sparse_segment_sum(dev(cp, np.ones((3, 2))), dev(cp, [0, 1, 1]),
                               segment_ids=dev(cp, [-1, 0, 0]))
    assert cp.stats.syncs == 1


def test_kernels_stay_inside_the_buffers_when_the_offsets_were_never_checked(
        cp: ModuleType) -> None:
    # Bags built without checks: the kernels re-check each row and record it.
    bags = asp.Jagged._trusted(dev(cp, [0, 1]), dev(cp, [0, 1, 4]))
    for fn in SPARSE.values():
        fn(dev(cp, np.ones((2, 3))), bags)
        with pytest.raises(ValueError, match=f"^{fn.__name__}: offsets address values outside"):
            raised_later(cp)


# ------------------------------------------------------------ the family's properties
@pytest.mark.hypothesis
@pytest.mark.parametrize("op", list(SPARSE))
@given(data=st.data())
def test_sparse_property(op: str, data: st.DataObject) -> None:
    table, table_rows = data.draw(sst.tables())
    arr, id_rows = data.draw(sst.id_lists(len(table)))
    expected = ref.segment_reduce(ref.sparse_rows(table_rows, id_rows), op)
    width = table.shape[1]
    dt = out_dtype(op, np.float64)
    assert_arrow(SPARSE[op](table, arr), expected, dt, (width,))
    got = SPARSE[op](sst.fsl_table(table), sst.chunked(arr, data.draw(sst.cuts(len(arr)))))
    assert isinstance(got, pa.ChunkedArray)
    assert_arrow(got.combine_chunks(), expected, dt, (width,))


@pytest.mark.hypothesis
@pytest.mark.parametrize("op", list(SPARSE))
@given(data=st.data())
def test_sparse_raw_ids_property(op: str, data: st.DataObject) -> None:
    dtype = np.dtype(data.draw(st.sampled_from([np.float32, np.float64, np.int32])))
    table, table_rows = data.draw(sst.tables(dtype, widths=(1, 3, 16)))
    num = len(table)
    id_rows = data.draw(st.lists(st.lists(st.integers(0, num - 1), max_size=6), max_size=6))
    before = data.draw(st.lists(st.integers(0, num - 1), max_size=2))
    ids = np.array(before + [i for r in id_rows for i in r],
                   dtype=data.draw(st.sampled_from([np.int32, np.int64, np.uint16])))
    lens = [len(r) for r in id_rows]
    offsets = np.concatenate([[len(before)], len(before) + np.cumsum(lens, dtype=np.int64)])
    extra = data.draw(st.integers(0, 2))
    expected = ref.segment_reduce(ref.sparse_rows(table_rows, id_rows) + [[]] * extra, op)
    dt = out_dtype(op, dtype)
    got = SPARSE[op](table, ids, offsets=offsets, num_segments=len(id_rows) + extra)
    assert got.dtype == dt
    assert_close(got, expected_array(expected, 0, (table.shape[1],)), dt)
    seg = np.repeat(np.arange(len(id_rows)), lens)
    got = SPARSE[op](table, ids[len(before):], segment_ids=seg,
                     num_segments=len(id_rows) + extra)
    assert_close(got, expected_array(expected, 0, (table.shape[1],)), dt)


@pytest.mark.hypothesis
@pytest.mark.parametrize("op", list(SPARSE))
@given(data=st.data())
def test_sparse_weighted_property(op: str, data: st.DataObject) -> None:
    # sparse_segment_weighted_sum and the weights= of sparse mean / max: list ids (sliced,
    # null rows and null ids), list weights, numpy or fixed_size_list table, chunked ids
    table, table_rows = data.draw(sst.tables(np.float32, widths=(1, 2, 16)))
    arr, id_rows = data.draw(sst.id_lists(len(table)))
    wrows = sst.weight_rows(data.draw, id_rows)
    weights = pa.array(wrows, type=pa.list_(pa.float32()))
    fn = asp.sparse_segment_weighted_sum if op == "sum" else SPARSE[op]
    expected = ref.segment_reduce(ref.sparse_rows(table_rows, id_rows), op, weights=wrows)
    width = table.shape[1]
    assert_arrow(fn(table, arr, weights=weights), expected, np.dtype(np.float32), (width,))
    bounds = data.draw(sst.cuts(len(arr)))
    got = fn(sst.fsl_table(table), sst.chunked(arr, bounds),
             weights=sst.chunked(weights, bounds))
    assert isinstance(got, pa.ChunkedArray)
    assert_arrow(got.combine_chunks(), expected, np.dtype(np.float32), (width,))


# ====================================================================== sparse_segment_sum
def test_sparse_segment_sum_is_exact_beyond_float64(backend: str) -> None:
    big = np.array([3, -(2**63) + 10, -1], dtype=np.int64)
    assert run_on(backend, asp.sparse_segment_sum, big, [0, 1, 2],
                  lengths=[3]).tolist() == [12 - 2**63]


def test_sparse_segment_sum_float32_precision_on_a_long_segment(backend: str) -> None:
    values, exact = long_float32_segment()
    table = values.reshape(-1, 1)
    fused = run_on(backend, asp.sparse_segment_sum, table, np.arange(len(values)),
                   lengths=[len(values)])
    assert abs(float(fused[0, 0]) - exact) <= abs(exact) * 2.0**-23


def test_fused_float32_precision_on_a_long_bag(backend: str) -> None:
    # The float fast path sums up to 4 rows in float32, then accumulates in float64.
    rng = np.random.default_rng(8)
    table = (rng.random((1000, 16), dtype=np.float32) * 2 - 0.5)
    ids = rng.integers(0, 1000, size=1_000_000)
    exact = np.array([math.fsum(c) for c in table.astype(np.float64)[ids].T.tolist()])
    got = run_on(backend, asp.sparse_segment_sum, table, ids,
                 lengths=[len(ids)])[0].astype(np.float64)
    assert np.all(np.abs(got - exact) <= np.abs(exact) * 2.0**-22)


# ====================================================================== sparse_segment_max
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_segment_max_nan_propagates_like_numpy(backend: str, dtype: Any) -> None:
    table = np.array([[1.0, np.nan], [2.0, 0.0]], dtype=dtype)
    np.testing.assert_array_equal(
        run_on(backend, asp.sparse_segment_max, table, [0, 1], lengths=[2]), [[2.0, np.nan]])


@pytest.mark.hypothesis
@given(data=st.data())
def test_sparse_segment_max_signed_zeros_property(data: st.DataObject) -> None:
    # max(-0.0, 0.0) = 0.0 whatever the order of the gathered rows.
    dtype, rows, flat, lens = data.draw(sst.signed_zero_rows())
    perm = np.array(data.draw(st.permutations(range(len(flat)))), dtype=np.int64)
    got = asp.sparse_segment_max(flat[:, None], perm, lengths=lens)[:, 0]
    gathered = [[float(dtype.type(x)) for x in flat[perm][a:b]]
                for a, b in zip(np.cumsum([0, *lens[:-1]]), np.cumsum(lens), strict=True)]
    sst.bits_equal(got, ref.segment_reduce(gathered, "max"), dtype)


# ====================================================================== embedding_bag
def test_embedding_bag_modes_and_offsets(backend: str) -> None:
    table = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    ids = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
    for mode, fn in SPARSE.items():
        expected = run_on(backend, fn, table, ids, lengths=CAFFE2_LENGTHS)
        np.testing.assert_array_equal(
            run_on(backend, asp.embedding_bag, table, ids, offsets=CAFFE2_OFFSETS, mode=mode),
            expected)
        np.testing.assert_array_equal(
            run_on(backend, asp.embedding_bag, table, ids, offsets=CAFFE2_OFFSETS[:-1],
                   mode=mode, include_last_offset=False), expected)
        np.testing.assert_array_equal(
            asp.embedding_bag(table, pa.array(CAFFE2_ROWS), mode=mode).to_pylist(), expected)
    empty_bags = run_on(backend, asp.embedding_bag, table, ids, offsets=[0, 0, 9, 9],
                        mode="max")
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


def test_embedding_bag_bag_starts_errors_cite_the_callers_offsets_issue_3(backend: str) -> None:
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
    got = run_on(backend, asp.embedding_bag, table, ids, offsets=[0, 9],
                 include_last_offset=False)
    assert got.tolist() == [[9.0, 9.0], [0.0, 0.0]]
    assert asp.embedding_bag(table, ids, offsets=[], include_last_offset=False).shape == (0, 2)
    assert run_on(backend, asp.embedding_bag, table, ids, offsets=np.zeros(0, np.int64),
                  include_last_offset=False).shape == (0, 2)


def test_embedding_bag_include_last_offset_false_needs_offsets_issue_3(backend: str) -> None:
    # Regression: the flag was silently ignored with lengths= or list ids.
    table = np.ones((8, 2))
    with pytest.raises(ValueError, match=r"include_last_offset=False describes offsets= "
                                         r"\(bag starts\) and cannot be used with lengths="):
        asp.embedding_bag(table, [1, 2, 3], lengths=[1, 2], include_last_offset=False)
    with pytest.raises(ValueError, match="cannot be used with list ids"):
        asp.embedding_bag(table, pa.array([[1], [2, 3]]), include_last_offset=False)


def test_embedding_bag_chunked_ids_in_chunked_out(backend: str) -> None:
    ids = pa.chunked_array([pa.array([[0, 1], [1]]), pa.array([[0]])])
    pooled = asp.embedding_bag(np.array([[1.0], [2.0]]), ids)
    assert isinstance(pooled, pa.ChunkedArray) and pooled.to_pylist() == [[3.0], [2.0], [1.0]]


def test_embedding_bag_matches_torch(backend: str) -> None:
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
        got = run_on(backend, asp.embedding_bag, table, ids, offsets=starts, mode=mode,
                     include_last_offset=False)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    expected = torch.nn.functional.embedding_bag(
        torch.from_numpy(ids), torch.from_numpy(table),
        torch.from_numpy(np.append(starts, 200)), per_sample_weights=torch.from_numpy(w),
        mode="sum", include_last_offset=True).numpy()
    got = run_on(backend, asp.embedding_bag, table, ids, offsets=np.append(starts, 200),
                 per_sample_weights=w)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_embedding_bag_parallel_paths_match_numpy(backend: str) -> None:
    # Many bags: the CPU's parallel blocks (and a many-bag grid on the device).
    rng = np.random.default_rng(11)
    lengths = rng.integers(0, 40, size=20_000)
    n = int(lengths.sum())
    rng.random(n, dtype=np.float32)  # the values of test_sorted_parallel_paths_match_numpy
    wide = rng.random((n // 8, 8)).astype(np.float32)
    rng.integers(0, len(wide), size=3000)
    table = rng.random((1000, 16)).astype(np.float32)
    ids = rng.integers(0, 1000, size=n // 4)
    il = np.diff(np.linspace(0, n // 4, 3001).astype(np.int64))
    got = run_on(backend, asp.embedding_bag, table, ids, lengths=il)
    gathered = table[ids].astype(np.float64)
    istarts = np.concatenate([[0], np.cumsum(il)])[:-1]
    np.testing.assert_allclose(got, np.add.reduceat(gathered, istarts, axis=0), rtol=1e-5)


def test_embedding_bag_float32_precision_on_a_long_weighted_bag(backend: str) -> None:
    # 10**6 float32 rows in one bag, each scaled by a float32 weight: float64 products
    # and sums, against math.fsum.
    wide, _, w = long_float32_batch()
    col = np.ascontiguousarray(wide[:, 0])
    table = col.reshape(-1, 1).repeat(16, axis=1)
    bag = run_on(backend, asp.embedding_bag, table, np.arange(len(col)), lengths=[len(col)],
                 per_sample_weights=w)[0].astype(np.float64)
    exact_w = math.fsum((col.astype(np.float64) * w.astype(np.float64)).tolist())
    assert np.all(np.abs(bag - exact_w) <= abs(exact_w) * 2.0**-23)


@on_devices
@pairwise_parametrize("mode,values_dtype,offsets_dtype", ["sum", "mean", "max"], NUMERIC_DTYPES,
                      OFFSETS_DTYPES)
def test_embedding_bag_matches_the_cpu(backend: str, mode: str, values_dtype: np.dtype,
                                       offsets_dtype: np.dtype) -> None:
    table, ids, offsets = table_and_ids(values_dtype, np.int32)
    starts = (offsets[:-1] - 1).astype(offsets_dtype)
    ids = ids[1:]
    rounded = backend == "cupy" and mode != "max"
    same_as_cpu(backend, asp.embedding_bag, table, ids, offsets=starts, mode=mode,
                include_last_offset=False, rounded=rounded)
    psw = np.linspace(0.5, 2.0, len(ids)).astype(np.float32)
    same_as_cpu(backend, asp.embedding_bag, table, ids, offsets=starts, mode=mode,
                include_last_offset=False, per_sample_weights=psw, rounded=rounded)


@on_devices
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_of_every_input_form_matches_the_cpu(backend: str, mode: str) -> None:
    rng = np.random.default_rng(23)
    table = values_of(np.float32, (10, 4), seed=24)
    ids = rng.integers(0, 10, size=30).astype(np.int64)
    same_as_cpu(backend, asp.embedding_bag, table, ids, offsets=[0, 4, 4, 19, 30],
                mode=mode, rounded=True)
    same_as_cpu(backend, asp.embedding_bag, table, ids, offsets=[0, 4, 4, 19], mode=mode,
                include_last_offset=False, rounded=True)
    same_as_cpu(backend, asp.embedding_bag, table, ids, lengths=[10, 0, 20], mode=mode,
                per_sample_weights=rng.random(30).astype(np.float32), rounded=True)
    same_as_cpu(backend, asp.sparse_segment_weighted_sum, table, ids,
                weights=rng.random(30), lengths=[10, 0, 20], rounded=True)
    if not on_device(backend):  # the same bags as Arrow lists, Arrow out
        arrow = pa.array([ids[:4].tolist(), [], ids[4:19].tolist(), ids[19:].tolist()])
        same_as_cpu(backend, asp.embedding_bag, table, arrow, mode=mode, rounded=True)


@pytest.mark.hypothesis
@given(data=st.data())
def test_embedding_bag_property(data: st.DataObject) -> None:
    # The three offset forms, every mode, with and without per_sample_weights, on
    # tables around the vector widths of the fast path.
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    table, table_rows = data.draw(sst.tables(dtype, widths=(1, 3, 16, 17, 40, 70)))
    num = len(table)
    lens = data.draw(st.lists(st.integers(0, 7), max_size=8))
    n = sum(lens)
    ids = np.array(data.draw(st.lists(st.integers(0, num - 1), min_size=n, max_size=n)),
                   dtype=data.draw(st.sampled_from([np.int32, np.int64, np.uint16])))
    mode = data.draw(st.sampled_from(["sum", "mean", "max"]))
    weighted = data.draw(st.booleans())
    w = np.array(data.draw(st.lists(st.floats(-3, 3, width=32), min_size=n, max_size=n)),
                 dtype=np.float32) if weighted else None
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    id_rows = ref.rows_from_offsets(ids.tolist(), offsets.tolist())
    wrows = None if w is None else ref.rows_from_offsets(w.astype(np.float64).tolist(),
                                                         offsets.tolist())
    expected = ref.segment_reduce(ref.sparse_rows(table_rows, id_rows), mode, weights=wrows)
    width = table.shape[1]
    dt = np.dtype(dtype)
    for got in (
            asp.embedding_bag(table, ids, offsets=offsets, mode=mode, per_sample_weights=w),
            asp.embedding_bag(table, ids, offsets=offsets[:-1], include_last_offset=False,
                              mode=mode, per_sample_weights=w),
            asp.embedding_bag(table, ids, lengths=lens, mode=mode, per_sample_weights=w)):
        assert got.dtype == dt and got.shape == (len(lens), width)
        assert_close(got, expected_array(expected, 0, (width,)), dt)
    arr = pa.array(id_rows, type=pa.list_(pa.int64()))
    warr = None if wrows is None else pa.array(wrows, type=pa.list_(pa.float32()))
    got = asp.embedding_bag(table, arr, mode=mode, per_sample_weights=warr)
    assert_arrow(got, expected, dt, (width,))
