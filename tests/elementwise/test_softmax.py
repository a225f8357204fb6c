"""Tests of ``arrow_sparse.elementwise.softmax``: :func:`segment_softmax`,
:func:`jagged_softmax` (FBGEMM's, with ``max_length``) and :func:`segment_cumsum`.

Compared with the plain-Python oracles of ``tests/_reference.py`` (Hypothesis, on the
CPU), with FBGEMM where it is installed, with numpy on a batch large enough for the
parallel kernels, on every backend, and with the CPU through the CUDA emulator.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.kernels import cuda

from .. import _reference as ref
from .._strategies import list_arrays, offsets
from ..conftest import from_backend
from ..cuda_emu.emu import Emulator, emulated
from ._helpers import (
    CAFFE2_OFFSETS,
    CAFFE2_VALUES,
    LARGE,
    ROWS,
    assert_bits,
    assert_softmax_close,
    caffe2,
    check_jagged,
    close_rows,
    cpu_and_emu,
    large_batch,
    name,
    on,
    sample,
    sample_array,
    shares_offsets,
    spans_the_device_buffer,
)


# ---------------------------------------------------- segment_softmax and jagged_softmax
@pytest.mark.hypothesis
@given(list_arrays(np.dtype(np.float64), null_values=True))
def test_segment_softmax_matches_reference(case: tuple[pa.Array, list]) -> None:
    arr, rows = case
    got = asp.segment_softmax(arr)
    assert got.type == arr.type
    close_rows(got.to_pylist(), ref.softmax_rows(rows))
    j = asp.Jagged.from_arrow(arr)
    res = asp.segment_softmax(j)
    shares_offsets(res, j)
    close_rows(res.to_list(), ref.softmax_rows(rows))


@pytest.mark.hypothesis
@given(st.data())
def test_softmax_values_forms_and_max_length(data: st.DataObject) -> None:
    offs = data.draw(offsets(max_rows=8, max_len=5, max_start=3))
    extra = data.draw(st.integers(0, 2))
    width = data.draw(st.sampled_from([None, 1, 3]))
    n = int(offs[-1]) + extra
    shape = (n,) if width is None else (n, width)
    values = data.draw(st.lists(st.floats(-50, 50), min_size=int(np.prod(shape)),
                                max_size=int(np.prod(shape))))
    values = np.array(values, dtype=np.float64).reshape(shape)
    max_length = data.draw(st.one_of(st.none(), st.integers(0, 6)))
    got, got_offs = asp.jagged_softmax(values, offs, max_length)
    assert got_offs is offs
    assert got.shape == values.shape and got.dtype == np.float64
    rows = [values[offs[i]:offs[i + 1]].tolist() for i in range(len(offs) - 1)]
    expected = ref.softmax_rows(rows, max_length)
    for i, row in enumerate(expected):
        close_rows(got[offs[i]:offs[i + 1]].tolist(), row)
    outside = np.r_[0:offs[0], offs[-1]:n]
    assert not got[outside].any()
    if max_length is None:
        lengths = np.diff(offs)
        ids = np.repeat(np.arange(len(lengths)), lengths)
        for kw in ({"offsets": offs}, {"lengths": lengths}, {"segment_ids": ids}):
            sub = values[offs[0]:offs[-1]] if "offsets" not in kw else values
            want = got[offs[0]:offs[-1]] if "offsets" not in kw else got
            np.testing.assert_allclose(asp.segment_softmax(sub, **kw), want, rtol=1e-12)


def test_softmax_is_stable_and_keeps_float32() -> None:
    got = asp.segment_softmax(np.array([1000.0, 1000.0, -1000.0, 0.0]), lengths=[2, 2])
    np.testing.assert_allclose(got, [0.5, 0.5, 0.0, 1.0])
    f32 = asp.segment_softmax(pa.array([[1.0, 2.0]], pa.list_(pa.float32())))
    assert f32.type == pa.list_(pa.float32())
    assert asp.segment_softmax(pa.array([[1, 1]])).to_pylist() == [[0.5, 0.5]]
    empty = asp.segment_softmax(pa.array([[], None, [None, None]], pa.list_(pa.float64())))
    assert empty.to_pylist() == [[], None, [None, None]]
    nested = asp.segment_softmax(asp.Jagged.from_list([[[0.0, 0.0], []], None]))
    assert nested.to_list() == [[[0.5, 0.5], []], None]
    with np.errstate(invalid="ignore"):
        nan_row = asp.segment_softmax(np.array([-np.inf, -np.inf, 1.0]), lengths=[2, 1])
    assert np.isnan(nan_row[:2]).all() and nan_row[2] == 1.0


def test_float16_values_give_float32_results() -> None:
    # The kernels compute in float32; FBGEMM's jagged_softmax answers in float16 as FBGEMM.
    j = asp.Jagged.from_list([[1.0, 2.0], None, [0.5]], dtype=np.float16)
    assert asp.segment_softmax(j).dtype == np.float32
    assert asp.jagged_softmax(j).dtype == np.float16
    close_rows(asp.jagged_softmax(j).to_list(),
               [[float(np.float16(x)) for x in row] if row else row
                for row in ref.softmax_rows([[1.0, 2.0], None, [0.5]])], rel=1e-3)
    assert asp.segment_cumsum(j).dtype == np.float32


def test_softmax_errors() -> None:
    with pytest.raises(ValueError, match="segment_softmax: pass exactly one of offsets=, "
                                         "lengths=, segment_ids= \\(got none\\)"):
        asp.segment_softmax(np.ones(3))
    with pytest.raises(ValueError, match="segment_softmax: lengths sum to 2 but there are 3"):
        asp.segment_softmax(np.ones(3), lengths=[1, 1])
    with pytest.raises(ValueError, match=r"segment_ids must be sorted \(non-decreasing\) "
                                         r"\(first at position 1: 0\)"):
        asp.segment_softmax(np.ones(2), segment_ids=[1, 0])
    with pytest.raises(TypeError, match="segment_softmax: lengths= must be None when data "
                                        "carries its own rows"):
        asp.segment_softmax(caffe2(), lengths=[3, 4, 2])
    with pytest.raises(TypeError, match="segment_softmax: data must have a numeric dtype"):
        asp.segment_softmax(np.array(["a"]), lengths=[1])
    with pytest.raises(ValueError, match="jagged_softmax: max_length must be non-negative"):
        asp.jagged_softmax(np.ones(3), np.array([0, 3]), -1)
    with pytest.raises(TypeError, match="jagged_softmax: offsets must be None when values is a "
                                        "Jagged"):
        asp.jagged_softmax(caffe2(), CAFFE2_OFFSETS)


# ------------------------------------------------------------------------ segment_cumsum
@pytest.mark.hypothesis
@given(list_arrays(np.dtype(np.int64), null_values=True), st.booleans())
def test_segment_cumsum_matches_reference(case: tuple[pa.Array, list], exclusive: bool) -> None:
    arr, rows = case
    got = asp.segment_cumsum(arr, exclusive=exclusive)
    assert got.type == arr.type
    assert got.to_pylist() == ref.cumsum_rows(rows, exclusive)


@pytest.mark.parametrize("dtype,expected", [
    (np.int8, np.int64), (np.int32, np.int64), (np.uint16, np.uint64), (np.bool_, np.int64),
    (np.float32, np.float32), (np.float64, np.float64), (np.float16, np.float32)])
def test_cumsum_dtypes_follow_numpy(dtype: Any, expected: Any) -> None:
    values = np.array([1, 1, 0, 1], dtype=dtype)
    got = asp.segment_cumsum(values, lengths=[2, 2])
    assert got.dtype == expected
    assert got.tolist() == [1, 2, 0, 1]


def test_cumsum_vectors_nested_and_sliced() -> None:
    values = np.arange(8).reshape(4, 2)
    got = asp.segment_cumsum(values, offsets=[1, 3, 4])
    np.testing.assert_array_equal(got, [[0, 0], [2, 3], [6, 8], [6, 7]])
    nested = asp.Jagged.from_list([[[1, 2], [3]], None, [[4, 5, 6]]])
    assert asp.segment_cumsum(nested).to_list() == [[[1, 3], [3]], None, [[4, 9, 15]]]
    sliced = pa.array([[9], [1, 2, 3], [4]]).slice(1)
    assert asp.segment_cumsum(sliced, exclusive=True).to_pylist() == [[0, 1, 3], [0]]


def test_cumsum_errors() -> None:
    with pytest.raises(TypeError, match="segment_cumsum: exclusive must be True or False"):
        asp.segment_cumsum(caffe2(), exclusive=1)
    with pytest.raises(ValueError, match=r"segment_cumsum: offsets exceed the number of values 9"):
        asp.segment_cumsum(CAFFE2_VALUES, offsets=[0, 10])
    with pytest.raises(TypeError, match="segment_cumsum: offsets= must be None"):
        asp.segment_cumsum(pa.array([[1]]), offsets=[0, 1])


# -------------------------------------------- both, on large inputs (the parallel twins)
def test_parallel_paths_match_numpy() -> None:
    b = large_batch()
    lengths, offs, values, rows, pos = b.lengths, b.offs, b.values, b.rows, b.pos
    # softmax against the padded route
    dense = np.full((len(lengths), int(lengths.max())), -np.inf)
    dense[rows, pos] = values
    top = dense.max(axis=1, initial=-np.inf, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(dense - np.where(np.isfinite(top), top, 0))
        want = (e / e.sum(axis=1, keepdims=True))[rows, pos]
    np.testing.assert_allclose(asp.segment_softmax(values, offsets=offs), want, rtol=1e-12)
    # cumsum
    csum = np.cumsum(values)
    base = np.concatenate([[0.0], csum])[offs[:-1]][rows]
    np.testing.assert_allclose(asp.segment_cumsum(values, lengths=lengths), csum - base,
                               rtol=1e-9, atol=1e-9)


# -------------------------------------------------------- every backend (the device too)
def test_softmax_and_cumsum_on_every_backend(backend: str) -> None:
    j = on(backend, sample())
    check_jagged(asp.segment_softmax(j), backend, ref.softmax_rows(ROWS))
    check_jagged(asp.jagged_softmax(j, max_length=2), backend, ref.softmax_rows(ROWS, 2))
    ints = [[1, None, 3], None, [], [4, 5, -2], [7]]
    for exclusive in (False, True):
        check_jagged(asp.segment_cumsum(on(backend, sample(ints, np.int16)), exclusive=exclusive),
                     backend, ref.cumsum_rows(ints, exclusive))
    values = np.array([2.0, 0.0, 0.0, np.log(3.0), 7.0, 7.0])
    lengths, ids, offs = np.array([3, 0, 2]), np.array([0, 0, 0, 2, 2]), np.array([1, 4, 4, 6])
    want = np.array([0.0, 1 / 5, 1 / 5, 3 / 5, 0.5, 0.5])
    dv, dl, di, do = on(backend, values, lengths, ids, offs)
    out, out_offsets = asp.jagged_softmax(dv, do)
    assert out_offsets is do
    np.testing.assert_allclose(from_backend(out, backend), want, rtol=1e-12)
    np.testing.assert_allclose(from_backend(asp.segment_softmax(dv[1:], lengths=dl), backend),
                               want[1:], rtol=1e-12)
    np.testing.assert_allclose(from_backend(asp.segment_softmax(dv[1:], segment_ids=di),
                                            backend), want[1:], rtol=1e-12)
    vectors = on(backend, np.arange(8).reshape(4, 2))
    np.testing.assert_array_equal(
        from_backend(asp.segment_cumsum(vectors, offsets=on(backend, np.array([1, 3, 4]))),
                     backend), [[0, 0], [2, 3], [6, 8], [6, 7]])
    nested = on(backend, asp.Jagged.from_list([[[1, 2], [3]], None, [[4, 5, 6]]]))
    check_jagged(asp.segment_cumsum(nested), backend, [[[1, 3], [3]], None, [[4, 9, 15]]])


def test_device_results_keep_the_offsets_and_the_whole_values_buffer(cp: ModuleType) -> None:
    host = sample()
    j = host.to_device("cuda")
    cp.stats.reset()
    results = [asp.segment_softmax(j), asp.segment_cumsum(j)]
    assert cp.stats.syncs == 0
    spans_the_device_buffer(results, j, host)
    cuda.check_errors("test")


@LARGE
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.uint32],
                         ids=str)
def test_softmax_functions_match_cpu(cuda_emu: Emulator, dtype: Any, large: bool) -> None:
    arr = sample_array(dtype, large)
    for fn, kwargs in ((asp.segment_softmax, {}), (asp.jagged_softmax, {"max_length": 3})):
        expected, got, launches = cpu_and_emu(cuda_emu, fn, arr, **kwargs)
        if expected.type.value_type == pa.float16():  # jagged_softmax rounds back (FBGEMM)
            expected, got = (x.cast(pa.list_(pa.float32()) if not large else
                                    pa.large_list(pa.float32())) for x in (expected, got))
        assert got.type == expected.type and got.offsets.equals(expected.offsets)
        assert got.is_null().equals(expected.is_null())
        e = expected.flatten().to_numpy(zero_copy_only=False)
        g = got.flatten().to_numpy(zero_copy_only=False)
        assert_softmax_close(g, e)
        assert launches == [name("softmax_rows", e.dtype)]


@LARGE
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int64, np.uint16, np.float16,
                                   np.float32, np.float64], ids=str)
def test_segment_cumsum_matches_cpu(cuda_emu: Emulator, dtype: Any, large: bool) -> None:
    if dtype == np.bool_:
        arr = pa.array([[True, None, True], None, [], [False, True]],
                       type=(pa.large_list if large else pa.list_)(pa.bool_())).slice(1)
    else:
        arr = sample_array(dtype, large, seed=1)
    for exclusive in (False, True):
        expected, got, launches = cpu_and_emu(cuda_emu, asp.segment_cumsum, arr,
                                              exclusive=exclusive)
        assert got.equals(expected)
        assert len(launches) == 1 and launches[0].startswith("cumsum<")


def test_segment_cumsum_of_2d_values_with_lengths_matches_cpu(cuda_emu: Emulator) -> None:
    values = np.arange(30, dtype=np.int32).reshape(10, 3)
    expected, got, launches = cpu_and_emu(cuda_emu, asp.segment_cumsum, values,
                                          lengths=[4, 0, 6])
    assert_bits(got, expected)
    assert launches == ["cumsum<long long>"]


@pytest.mark.hypothesis
@given(st.data())
def test_softmax_and_cumsum_match_cpu_on_random_arrays(data: st.DataObject) -> None:
    arr, _ = data.draw(list_arrays(null_values=True, null_ranges=True))
    with emulated(check_orders=("reverse",)) as emu:
        expected, got, _ = cpu_and_emu(emu, asp.segment_cumsum, arr)
        assert got.equals(expected), "segment_cumsum"
        expected, got, _ = cpu_and_emu(emu, asp.segment_softmax, arr)
        e = expected.flatten().to_numpy(zero_copy_only=False)
        assert_softmax_close(got.flatten().to_numpy(zero_copy_only=False), e)
