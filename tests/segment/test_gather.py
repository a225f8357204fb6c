"""Tests of ``arrow_sparse.segment.gather``: ``gather``, ``scatter_assign`` and
``scatter_weighted_sum``.

Each operation against the plain-Python oracle (``tests/_reference_segment.py``) on every
backend of the ``backend`` fixture (numpy inputs go to the device with ``to_backend``;
Arrow data stays on the host), then the device checks (the CUDA kernels against the
CPU's, see ``_helpers``) and the device errors. Property tests (Hypothesis) run on the
CPU; the example tests beside them cover the device paths.
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
from arrow_sparse.errors import ArrowSparseError, ArrowSparseIndexError

from .. import _reference_segment as ref
from .._strategies import numeric_dtypes, scalars
from ..conftest import NUMERIC_DTYPES, from_backend, to_backend
from . import _strategies as sst
from ._helpers import (
    DEFERRED,
    MIXED_FIX,
    assert_close,
    assert_error,
    assert_raised_by_the_next_check,
    dev,
    kernels,
    on_devices,
    on_the_cpu,
    raised_later,
    run_on,
    same_as_cpu,
    sample,
    table_and_ids,
    values_of,
)

U64_BIG = np.array([0, 2**63], dtype=np.uint64)


def test_docstring_examples_on_every_backend(backend: str) -> None:
    pairs = np.array([[1, 4], [3, 2], [8, 1]])
    assert run_on(backend, asp.gather, pairs, [2, 0, 2]).tolist() == [[8, 1], [1, 4], [8, 1]]
    assert run_on(backend, asp.scatter_assign, np.zeros((3, 2), np.int64), [2, 0, 2],
                  pairs).tolist() == [[3, 2], [0, 0], [8, 1]]
    assert run_on(backend, asp.scatter_weighted_sum, np.arange(8.0).reshape(4, 2), 0.5,
                  [2, 0, 2], np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]),
                  2.0).tolist()[2] == [9.0, 9.25]


@pytest.mark.parametrize("fn", [asp.gather, asp.scatter_assign, asp.scatter_weighted_sum],
                         ids=lambda f: f.__name__)
def test_object_input_raises_type_error(backend: str, fn: Any) -> None:
    o = object()
    with pytest.raises(TypeError) as info:
        if fn is asp.scatter_weighted_sum:
            fn(o, 1.0, [0], o, 1.0)
        elif fn is asp.scatter_assign:
            fn(o, o, o)
        else:
            fn(o, o)
    assert isinstance(info.value, ArrowSparseError)


def test_host_and_device_inputs_together_name_the_fix(cp: ModuleType) -> None:
    table = dev(cp, np.ones((3, 2)))
    calls = {
        "gather: indices is a host": lambda: asp.gather(table, [0, 2]),
        "scatter_assign: indices is a host": lambda: asp.scatter_assign(
            table, np.array([0]), dev(cp, np.ones((1, 2)))),
        "scatter_weighted_sum: slices is a host": lambda: asp.scatter_weighted_sum(
            table, 1.0, dev(cp, [0]), np.ones((1, 2)), 1.0),
    }
    for match, call in calls.items():
        with pytest.raises(TypeError, match="^" + match + ".*" + MIXED_FIX):
            call()
    assert cp.stats.syncs == 0


def test_o1_checks_stay_on_the_host_with_the_host_messages(cp: ModuleType) -> None:
    cases = [
        (lambda: asp.gather(dev(cp, np.arange(6.0)), dev(cp, [0.5])), TypeError,
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
    (lambda cp: asp.gather(dev(cp, np.ones((4, 2))), dev(cp, [[0, 3], [4, -1]])),
     IndexError, r"gather: indices out of range \[0, len\(data\)\)" + DEFERRED.format(2)),
    (lambda cp: asp.scatter_assign(dev(cp, np.ones((4, 2))), dev(cp, [0, 5, -1]),
                                   dev(cp, np.ones((3, 2)))),
     IndexError, r"scatter_assign: indices out of range \[0, len\(data\)\)" + DEFERRED.format(1)),
    (lambda cp: asp.scatter_weighted_sum(dev(cp, np.ones((4, 2))), 0.5, dev(cp, [3, 6, 1, 6]),
                                         dev(cp, np.ones((4, 2))), 1.0),
     IndexError, r"scatter_weighted_sum: indices out of range \[0, len\(data\)\)"
     + DEFERRED.format(1)),
])
def test_data_errors_are_raised_by_the_next_check(cp: ModuleType, call: Callable[..., Any],
                                                  cls: type, message: str) -> None:
    assert_raised_by_the_next_check(cp, call, cls, message)


# ====================================================================== gather
def test_gather(backend: str) -> None:
    table = np.arange(12).reshape(4, 3)
    np.testing.assert_array_equal(run_on(backend, asp.gather, table, [3, 0, 3]),
                                  table[[3, 0, 3]])
    idx2 = np.array([[0, 1], [2, 3]])
    assert run_on(backend, asp.gather, table, idx2).shape == (2, 2, 3)
    arr = pa.array([[1, 2, 3], None, [3, 6]])
    assert asp.gather(arr, [2, 1, 0]).to_pylist() == [[3, 6], None, [1, 2, 3]]
    assert asp.gather(pa.chunked_array([arr]), [0]).to_pylist() == [[1, 2, 3]]
    assert ref.gather(table.tolist(), [1, 1]) == run_on(backend, asp.gather, table,
                                                        [1, 1]).tolist()
    with pytest.raises(IndexError, match=r"gather: indices out of range \[0, 4\) "
                                         r"\(first at position 1: -1\)"):
        asp.gather(table, [0, -1])
    with pytest.raises(IndexError, match=r"\(first at position 0: 3\)"):
        asp.gather(arr, [3])
    with pytest.raises(TypeError, match="indices must have an integer dtype"):
        asp.gather(table, [0.5])


# (call, error class, message pattern), each pattern matched from the start (from
# tests/test_errors.py: the input checks of _validate reached through gather).
ERROR_CASES: dict[str, tuple[Callable[[], Any], type[Exception], str]] = {
    "uint64 indices": (lambda: asp.gather(np.ones((3, 2)), U64_BIG), ArrowSparseIndexError,
                       r"gather: indices out of range \[0, 3\) "
                       r"\(first at position 1: 9223372036854775808\)"),
    "index too big": (lambda: asp.gather(np.ones((3, 2)), [0, 3]), ArrowSparseIndexError,
                      r"gather: indices out of range \[0, 3\) \(first at position 1: 3\)"),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_error_class_and_message(backend: str, case: str) -> None:
    assert_error(*ERROR_CASES[case])


@on_devices
def test_gather_matches_the_cpu(backend: str, values_dtype: np.dtype) -> None:
    table, ids, _ = table_and_ids(values_dtype, np.int64)
    same_as_cpu(backend, asp.gather, table, ids[:12].reshape(4, 3))
    arrow = pa.array([[1, 2], None, [3]], pa.list_(pa.int32()))
    got = asp.gather(arrow, [2, 1, 0, 2])  # Arrow data: pyarrow's take, on the host
    with on_the_cpu():
        assert got.equals(asp.gather(arrow, [2, 1, 0, 2]))


@on_devices
def test_gather_of_every_dtype_and_shape_matches_the_cpu(backend: str) -> None:
    rng = np.random.default_rng(25)
    for dtype in [*NUMERIC_DTYPES, np.bool_]:
        data = values_of(dtype, (9, 2), seed=26)
        same_as_cpu(backend, asp.gather, data, rng.integers(0, 9, size=(4, 3)))
        same_as_cpu(backend, asp.gather, data[:, 0], rng.integers(0, 9, size=5)
                    .astype(np.uint32))
    same_as_cpu(backend, asp.gather, values_of(np.float64, (3, 2, 2), 27), np.array(2))
    same_as_cpu(backend, asp.gather, values_of(np.float64, (3, 2), 28), np.zeros(0, np.int32))


def test_a_device_error_leaves_the_bad_gathered_row_zero(cp: ModuleType) -> None:
    rows = asp.gather(dev(cp, np.arange(1.0, 5.0)), dev(cp, [3, 4, 0]))
    with pytest.raises(IndexError, match="indices out of range"):
        raised_later(cp)
    assert rows.get().tolist() == [4.0, 0.0, 1.0]


@pytest.mark.hypothesis
@given(data=st.data())
def test_gather_property(data: st.DataObject) -> None:
    dtype = data.draw(numeric_dtypes())
    num = data.draw(st.integers(1, 5))
    width = data.draw(st.sampled_from([None, 1, 3]))
    shape = (num,) if width is None else (num, width)
    cells = data.draw(st.lists(scalars(dtype), min_size=int(np.prod(shape)),
                               max_size=int(np.prod(shape))))
    table = np.array(cells, dtype=dtype).reshape(shape)
    idx = data.draw(st.lists(st.integers(0, num - 1), max_size=8))
    got = asp.gather(table, np.array(idx, dtype=np.int64))
    assert got.dtype == table.dtype and got.shape == (len(idx),) + table.shape[1:]
    assert got.tolist() == ref.gather(table.tolist(), idx)
    arr = pa.array(table.tolist())
    assert asp.gather(arr, idx).to_pylist() == ref.gather(table.tolist(), idx)


# ====================================================================== scatter_assign
def test_scatter_assign_last_write_wins(backend: str) -> None:
    idx = [1, 3, 1, 1]
    slices = np.array([[1, 1], [2, 2], [3, 3], [4, 4]], dtype=np.float64)
    data = to_backend(np.zeros((4, 2)), backend)
    out = asp.scatter_assign(data, to_backend(idx, backend),
                             to_backend(slices, backend))
    assert out is data
    host = from_backend(data, backend)
    np.testing.assert_array_equal(
        host, ref.scatter_assign(np.zeros((4, 2)).tolist(), idx, slices.tolist()))
    assert host[1].tolist() == [4, 4]
    flags = run_on(backend, asp.scatter_assign, np.zeros(3, dtype=bool), [2], np.array([True]))
    assert flags.tolist() == [False, False, True]
    data = np.zeros((4, 2))
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


@on_devices
def test_scatter_assign_last_write_wins_like_the_cpu(backend: str,
                                                     values_dtype: np.dtype) -> None:
    data, _ = sample(values_dtype, 3)
    idx = np.array([4, 0, 4, 7, 4, 0])
    slices, _ = sample(values_dtype, 3, seed=9)
    slices = slices[:len(idx)]
    launches = same_as_cpu(backend, asp.scatter_assign, data, idx, slices)
    if backend == "cuda_emu":
        assert kernels(launches) == ["scatter_claim", "scatter_assign_rows"]


@on_devices
def test_scatter_assign_of_every_dtype_matches_the_cpu(backend: str) -> None:
    idx = np.array([4, 0, 4, 7, 4, 0])
    for dtype in [*NUMERIC_DTYPES, np.bool_]:
        data = values_of(dtype, (8, 3), seed=29)
        slices = values_of(dtype, (6, 3), seed=30)

        def assign(data: Any, idx: Any, slices: Any) -> Any:
            out = asp.scatter_assign(data, idx, slices)
            assert out is data  # in place
            return out

        same_as_cpu(backend, assign, data, idx, slices)


def test_a_device_error_skips_only_the_bad_assignment(cp: ModuleType) -> None:
    data = dev(cp, np.zeros((4, 2)))
    asp.scatter_assign(data, dev(cp, [1, 7, 3]), dev(cp, np.full((3, 2), 5.0)))
    with pytest.raises(IndexError, match="indices out of range"):
        raised_later(cp)
    assert data.get().tolist() == [[0, 0], [5, 5], [0, 0], [5, 5]]


def test_scatter_float16_data_is_a_type_error_issue_3(backend: str) -> None:
    # Regression: float16 data reached the kernel and crashed with NotImplementedError.
    half = np.zeros((2, 2), np.float16)
    with pytest.raises(TypeError, match="scatter_assign: data of dtype float16 are not "
                                        "supported; cast to float32 first"):
        asp.scatter_assign(half, [0], np.ones((1, 2), np.float16))
    with pytest.raises(TypeError, match="scatter_weighted_sum: data of dtype float16"):
        asp.scatter_weighted_sum(half, 1.0, [0], np.ones((1, 2), np.float16), 1.0)
    with pytest.raises(ArrowSparseError):
        asp.scatter_assign(half, [0], np.ones((1, 2), np.float16))


@pytest.mark.hypothesis
@given(data=st.data())
def test_scatter_property(data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    table, table_rows = data.draw(sst.tables(dtype, widths=(1, 2, 3)))
    num, width = table.shape
    k = data.draw(st.integers(0, 8))
    idx = data.draw(st.lists(st.integers(0, num - 1), min_size=k, max_size=k))
    slices = np.array(data.draw(st.lists(sst.FLOATS32, min_size=k * width,
                                         max_size=k * width)), dtype=dtype).reshape(k, width)
    w0 = data.draw(st.sampled_from([1.0, 0.0, -1.0, 0.5, 2.0]))
    w1 = data.draw(st.sampled_from([1.0, 0.0, -0.25, 3.0]))
    slice_rows = slices.astype(np.float64).tolist()
    got = asp.scatter_assign(table.copy(), idx, slices)
    assert got.tolist() == ref.scatter_assign(table_rows, idx, slice_rows)
    got = asp.scatter_weighted_sum(table.copy(), w0, idx, slices, w1)
    expected = ref.scatter_weighted_sum(table_rows, w0, idx, slice_rows, w1)
    assert got.dtype == dtype
    assert_close(got, expected, np.dtype(dtype))


# ====================================================================== scatter_weighted_sum
def test_scatter_weighted_sum_scales_every_occurrence_then_adds(backend: str) -> None:
    # Caffe2's ScatterWeightedSumOp: first data[idx] *= w0 for every occurrence, then
    # data[idx[i]] += w1 * slices[i] for every i.
    before = np.arange(8.0).reshape(4, 2)
    idx = [2, 0, 2]
    slices = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    data = to_backend(before.copy(), backend)
    out = asp.scatter_weighted_sum(data, 0.5, to_backend(idx, backend),
                                   to_backend(slices, backend), np.array([2.0]))
    assert out is data
    host = from_backend(data, backend)
    assert host[2].tolist() == [9.0, 9.25]  # 0.5**2 * [4, 5] + 2 * ([1, 1] + [3, 3])
    assert host[0].tolist() == [4.0, 4.5]
    assert host[[1, 3]].tolist() == [before[1].tolist(), before[3].tolist()]
    np.testing.assert_array_equal(
        host, ref.scatter_weighted_sum(before.tolist(), 0.5, idx, slices.tolist(), 2.0))
    data32 = run_on(backend, asp.scatter_weighted_sum, np.ones((2, 3), np.float32), 1, [1, 1],
                    np.ones((2, 3), np.float32), 1)
    assert data32.dtype == np.float32 and data32[1].tolist() == [3, 3, 3]
    zero = run_on(backend, asp.scatter_weighted_sum, np.ones((3, 1)), 0.0, [0, 0],
                  np.array([[1.0], [2.0]]), 1.0)
    assert zero.ravel().tolist() == [3.0, 1.0, 1.0]  # w0 = 0 replaces the row by the sum


def test_scatter_weighted_sum_errors(backend: str) -> None:
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


@on_devices
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("w0", [0.3, 1.0])
def test_scatter_weighted_sum_scales_then_adds_like_the_cpu(
        backend: str, dtype: Any, offsets_dtype: np.dtype, w0: float) -> None:
    # Caffe2's two loops: every occurrence scales, then every slice adds, in index order.
    data, _ = sample(dtype, 3)
    idx = np.array([4, 0, 4, 7, 4, 0, 2], dtype=offsets_dtype)
    slices, _ = sample(dtype, 3, seed=9)
    slices = slices[:len(idx)]
    launches = same_as_cpu(backend, asp.scatter_weighted_sum, data.copy(), w0, idx, slices,
                           1.7)
    if backend == "cuda_emu":
        assert kernels(launches) == ["scatter_weighted_sum_runs"]
    got = run_on(backend, asp.scatter_weighted_sum, data.copy(), w0, idx, slices, 1.7)
    oracle = ref.scatter_weighted_sum(data.astype(np.float64).tolist(), w0, idx.tolist(),
                                      slices.astype(np.float64).tolist(), 1.7)
    np.testing.assert_allclose(got, oracle, rtol=1e-6 if dtype == np.float32 else 1e-14)


@on_devices
def test_scatter_weighted_sum_repeats_far_apart_like_the_cpu(backend: str) -> None:
    # Every row listed several times, its repeats spread over the whole index array
    # (the case a scan from each first occurrence would make quadratic).
    rng = np.random.default_rng(5)
    data = rng.standard_normal((50, 4))
    idx = np.tile(rng.permutation(50), 6)
    slices = rng.standard_normal((len(idx), 4))
    same_as_cpu(backend, asp.scatter_weighted_sum, data, 0.9, idx, slices, -0.4)


@on_devices
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scatter_weighted_sum_matches_the_cpu(backend: str, dtype: Any) -> None:
    idx = np.array([4, 0, 4, 7, 4, 0, 2], dtype=np.int32)
    for w0 in (0.3, 1.0):
        data = values_of(dtype, (8, 3), seed=31)
        same_as_cpu(backend, asp.scatter_weighted_sum, data, w0, idx,
                    values_of(dtype, (7, 3), seed=32), 1.7)


# ===================================== issue 14: data must not alias slices or indices
@pytest.mark.parametrize("func", ["scatter_assign", "scatter_weighted_sum"])
def test_scatter_into_data_that_aliases_an_input_is_refused_issue14(func: str,
                                                                   backend: str) -> None:
    def call(data: Any, indices: Any, slices: Any) -> Any:
        if func == "scatter_assign":
            return asp.scatter_assign(data, indices, slices)
        return asp.scatter_weighted_sum(data, 1.0, indices, slices, 1.0)

    data = to_backend(np.arange(6.0).reshape(3, 2), backend)
    idx = to_backend(np.array([1, 0]), backend)
    with pytest.raises(ValueError, match=rf"^{func}: data and slices share memory; it "
                                         "would be read after parts of it were overwritten"):
        call(data, idx, data[:2])  # swapping rows 0 and 1 read row 0 after writing it
    np.testing.assert_array_equal(from_backend(data, backend), np.arange(6.0).reshape(3, 2))
    ints = to_backend(np.array([[1, 0], [5, 6]]), backend)
    if func == "scatter_assign":
        with pytest.raises(ValueError, match=r"^scatter_assign: data and indices share memory"):
            call(ints, ints[0], to_backend(np.zeros((2, 2), np.int64), backend))
    call(data, idx, data[:2].copy())
    np.testing.assert_array_equal(from_backend(data, backend),
                                  [[2, 3], [0, 1], [4, 5]] if func == "scatter_assign"
                                  else [[2, 4], [2, 4], [4, 5]])
