"""Tests of ``arrow_sparse.elementwise.rows``: the per-row selections (gathers, slices,
unique, repeat, expand_into_jagged), on numbers and on Arrow string and binary lists.

Compared with the plain-Python oracles of ``tests/_reference.py`` (Hypothesis, on the
CPU), with numpy on a batch large enough for the parallel kernels, on every backend,
and with the CPU through the CUDA emulator.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.kernels import cuda

from .. import _reference as ref
from .._strategies import lengths, list_arrays, numeric_dtypes, offsets_levels
from ..conftest import from_backend
from ..cuda_emu.emu import Emulator, emulated
from ..cuda_emu.fake_cupy import emulated_cupy
from ._helpers import (
    CAFFE2_OFFSETS,
    CAFFE2_ROWS,
    CAFFE2_VALUES,
    LARGE,
    ROWS,
    as_arrow,
    assert_same_unique,
    caffe2,
    check_jagged,
    cpu_and_emu,
    large_batch,
    on,
    sample,
    sample_array,
    shares_offsets,
    unique_values,
)


# -------------------------------------------------------------------- gathers and slices
@pytest.mark.hypothesis
@given(list_arrays(levels=1, null_values=True), st.data())
def test_index_select_matches_reference(case: tuple[pa.Array, list], data: st.DataObject) -> None:
    arr, rows = case
    n = len(rows)
    ids = data.draw(st.lists(st.integers(-n, n - 1), max_size=8)) if n else []
    got = asp.index_select(arr, np.array(ids, dtype=np.int64))
    assert got.type == arr.type
    assert got.to_pylist() == ref.index_select_rows(rows, ids)
    j = asp.Jagged.from_arrow(arr)
    res = asp.index_select(j, ids)
    assert res.offsets.dtype == j.offsets.dtype and res.offsets[0] == 0
    res.validate()


@pytest.mark.hypothesis
@given(list_arrays(np.dtype(np.int32), levels=2, null_values=True), st.data())
def test_index_select_nested(case: tuple[pa.Array, list], data: st.DataObject) -> None:
    arr, rows = case
    n = len(rows)
    ids = data.draw(st.lists(st.integers(-n, n - 1), max_size=6)) if n else []
    got = asp.index_select(arr, ids)
    assert got.type == arr.type and got.to_pylist() == ref.index_select_rows(rows, ids)


@pytest.mark.hypothesis
@given(list_arrays(levels=1, null_values=True),
       st.one_of(st.none(), st.integers(-6, 6)), st.one_of(st.none(), st.integers(-6, 6)))
def test_list_slice_matches_python(case: tuple[pa.Array, list], start: int | None,
                                   stop: int | None) -> None:
    arr, rows = case
    got = asp.list_slice(arr, start, stop)
    assert got.type == arr.type
    assert got.to_pylist() == ref.slice_rows(rows, start, stop)
    if stop is not None:
        assert asp.truncate(arr, stop).to_pylist() == ref.slice_rows(rows, None, stop)


@pytest.mark.hypothesis
@given(list_arrays(np.dtype(np.float64), levels=2), st.integers(-3, 3))
def test_list_slice_nested(case: tuple[pa.Array, list], start: int) -> None:
    arr, rows = case
    assert asp.list_slice(arr, start).to_pylist() == ref.slice_rows(rows, start, None)


@pytest.mark.hypothesis
@given(numeric_dtypes(), st.sampled_from([(), (2,)]), st.data())
def test_jagged_index_select_matches_reference(dtype: np.dtype, inner: tuple[int, ...],
                                               data: st.DataObject) -> None:
    lens = data.draw(lengths(max_rows=8, max_len=4))
    n = len(lens)
    total = sum(lens)
    values = (np.arange(total * int(np.prod(inner))) % 100).astype(dtype).reshape(
        (total,) + inner)
    ids = data.draw(st.lists(st.integers(-n, n - 1), max_size=6)) if n else []
    lens_dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    got_values, got_lengths = asp.jagged_index_select(values, np.array(lens, lens_dtype), ids)
    offs = ref.lengths_to_offsets(lens)
    rows = [values[offs[i]:offs[i + 1]].tolist() for i in range(n)]
    expected = ref.index_select_rows(rows, ids)
    assert got_lengths.dtype == lens_dtype
    assert got_lengths.tolist() == [len(r) for r in expected]
    assert got_values.dtype == values.dtype
    assert got_values.tolist() == [x for r in expected for x in r]
    if not inner:
        arrow_values, arrow_lengths = asp.jagged_index_select(pa.array(values),
                                                              pa.array(lens, pa.int64()),
                                                              pa.array(ids, pa.int64()))
        assert arrow_values.to_pylist() == got_values.tolist()
        assert arrow_lengths.to_pylist() == got_lengths.tolist()


def test_gathers_values_forms_vectors_and_chunks() -> None:
    values, offs = asp.index_select(pa.array(CAFFE2_VALUES), [0, 2], offsets=pa.array([0, 3, 7, 9]))
    assert values.to_pylist() == [1, 2, 3, 3, 6] and offs.to_pylist() == [0, 3, 5]
    values, offs = asp.list_slice(CAFFE2_VALUES, 1, offsets=CAFFE2_OFFSETS)
    assert values.tolist() == [2, 3, 4, 6, 7, 6] and offs.tolist() == [0, 2, 5, 6]
    emb = asp.Jagged(np.arange(12, dtype=np.float32).reshape(6, 2), [0, 2, 2, 5])
    picked = asp.index_select(emb, [2, 0])
    np.testing.assert_array_equal(picked.values, [[4, 5], [6, 7], [8, 9], [0, 1], [2, 3]])
    odd = asp.Jagged(np.arange(9, dtype=np.int8).reshape(3, 3), [0, 1, 3])  # 3-byte rows
    assert asp.index_select(odd, [1]).values.tolist() == [[3, 4, 5], [6, 7, 8]]
    flags = asp.truncate(pa.array([[True, False, True], None]), 2)
    assert flags.to_pylist() == [[True, False], None]
    chunked = pa.chunked_array([pa.array([[1, 2, 3]]), pa.array([[4], []])])
    sliced = asp.list_slice(chunked, 1)
    assert isinstance(sliced, pa.ChunkedArray) and sliced.num_chunks == 2
    assert sliced.to_pylist() == [[2, 3], [], []]
    picked_chunks = asp.index_select(chunked, [2, 0])
    assert isinstance(picked_chunks, pa.ChunkedArray)
    assert picked_chunks.to_pylist() == [[], [1, 2, 3]]
    none = pa.chunked_array([], pa.list_(pa.int64()))
    assert asp.truncate(none, 1).to_pylist() == []
    values, lengths = asp.jagged_index_select(pa.array(CAFFE2_VALUES), pa.array([3, 4, 2]),
                                              pa.array([1, -3]))
    assert values.to_pylist() == [2, 4, 6, 7, 1, 2, 3] and lengths.to_pylist() == [4, 3]


def test_float16_values_keep_their_dtype() -> None:
    # Copies keep float16.
    j = asp.Jagged.from_list([[1.0, 2.0], None, [0.5]], dtype=np.float16)
    for moved in (asp.index_select(j, [2, 0]), asp.list_slice(j, 1), asp.truncate(j, 1),
                  asp.jagged_unique(j), asp.repeat(np.array([1, 2, 3], np.float16), j)):
        assert moved.dtype == np.float16
    assert asp.jagged_to_padded_dense(j).dtype == np.float16


def test_gather_errors() -> None:
    j = caffe2()
    with pytest.raises(IndexError, match=r"index_select: rows out of range \[-3, 3\) "
                                         r"\(first at position 1: 3\)"):
        asp.index_select(j, [0, 3])
    with pytest.raises(IndexError, match=r"index_select: rows out of range \[-3, 3\) "
                                         r"\(first at position 0: -4\)"):
        asp.index_select(j, [-4])
    with pytest.raises(IndexError, match=r"jagged_index_select: indices out of range \[-3, 3\)"):
        asp.jagged_index_select(CAFFE2_VALUES, [3, 4, 2], [5])
    with pytest.raises(ValueError, match="jagged_index_select: lengths sum to 8 but there are 9"):
        asp.jagged_index_select(CAFFE2_VALUES, [3, 4, 1], [0])
    with pytest.raises(TypeError, match="index_select: rows must have an integer dtype"):
        asp.index_select(j, [0.5])
    with pytest.raises(TypeError, match="list_slice: start must be an integer or None, got float"):
        asp.list_slice(j, 1.0)
    with pytest.raises(TypeError, match="truncate: length must be an integer, got NoneType"):
        asp.truncate(j, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list_slice: stop must be an integer or None, got bool"):
        asp.list_slice(j, 0, True)
    with pytest.raises(TypeError, match="index_select: data must be a Jagged or an Arrow list "
                                        "array, or a values array with offsets, got ndarray"):
        asp.index_select(CAFFE2_VALUES, [0])


def test_int32_offsets_overflow_is_refused() -> None:
    j = asp.Jagged(np.zeros(1 << 16, np.int8), np.array([0, 1 << 16], np.int32))
    with pytest.raises(ValueError, match="index_select: the result holds 4295032832 elements, "
                                         "too many for int32 offsets"):
        asp.index_select(j, np.zeros((1 << 16) + 1, np.int64))


def test_gathers_and_slices_on_every_backend(backend: str) -> None:
    j = on(backend, sample())
    rows = on(backend, np.array([3, 0, -1, 1, 3], np.int32))
    check_jagged(asp.index_select(j, rows), backend,
                 ref.index_select_rows(ROWS, [3, 0, -1, 1, 3]))
    check_jagged(asp.list_slice(j, 1, -1), backend, ref.slice_rows(ROWS, 1, -1))
    check_jagged(asp.truncate(j, 2), backend, ref.slice_rows(ROWS, None, 2))
    nested_rows = [[[1, 2], [3]], None, [[4], [], [5, 6, 7]], [[8]]]
    nested = on(backend, asp.Jagged.from_list(nested_rows, dtype=np.int8)[1:])
    check_jagged(asp.index_select(nested, on(backend, np.array([2, 0, 1, 2]))), backend,
                 ref.index_select_rows(nested_rows[1:], [2, 0, 1, 2]))
    check_jagged(asp.list_slice(nested, -2), backend, ref.slice_rows(nested_rows[1:], -2, None))
    values, offs, lens = on(backend, CAFFE2_VALUES, CAFFE2_OFFSETS, np.array([3, 4, 2]))
    got_values, got_offsets = from_backend(asp.index_select(values, on(backend, np.array([1])),
                                                            offsets=offs), backend)
    assert got_values.tolist() == [2, 4, 6, 7] and got_offsets.tolist() == [0, 4]
    got_values, got_lengths = from_backend(
        asp.jagged_index_select(values, lens, on(backend, np.array([2, -3]))), backend)
    assert got_values.tolist() == [3, 6, 1, 2, 3] and got_lengths.tolist() == [2, 3]
    with_empty = [3, 0, 4, 2]  # an empty row, picked twice
    got_values, got_lengths = from_backend(
        asp.jagged_index_select(values, on(backend, np.array(with_empty)),
                                on(backend, np.array([1, 3, -3, 0]))), backend)
    expected = ref.index_select_rows(CAFFE2_ROWS[:1] + [[]] + CAFFE2_ROWS[1:], [1, 3, -3, 0])
    assert got_lengths.tolist() == [len(r) for r in expected] == [0, 2, 0, 3]
    assert got_values.tolist() == [x for r in expected for x in r]
    emb = on(backend, asp.Jagged(np.arange(9, dtype=np.int8).reshape(3, 3),
                                 np.array([0, 1, 3])))  # rows of 3 bytes
    check_jagged(asp.index_select(emb, on(backend, np.array([1]))), backend,
                 [[[3, 4, 5], [6, 7, 8]]])
    if backend != "cpu":
        cuda.check_errors("test")


def test_device_row_ids_are_checked_at_once() -> None:
    with emulated_cupy() as cp:
        j = sample().to_device("cuda")
        cp.stats.reset()
        asp.index_select(j, cp.asarray(np.array([4, -5, 0])))
        assert cp.stats.syncs == 1  # the result's size, with the check
        with pytest.raises(IndexError, match=r"^index_select: rows out of range \[-5, 5\) "
                           r"\(first at position 2: 5\)$"):
            asp.index_select(j, cp.asarray(np.array([4, -5, 5, -6])))
        with pytest.raises(IndexError, match=r"^jagged_index_select: indices out of range "
                           r"\[-3, 3\) \(first at position 0: -4\)$"):
            asp.jagged_index_select(cp.asarray(CAFFE2_VALUES), cp.asarray(np.array([3, 4, 2])),
                                    cp.asarray(np.array([-4])))
        with pytest.raises(IndexError, match=r"^index_select: rows out of range \[-0, 0\) "
                           r"\(first at position 0: 0\)$"):
            asp.index_select(j[:0], cp.asarray(np.array([0])))
        big = cp.asarray(np.array([1, 2**64 - 1], np.uint64))  # wraps to -1 on the device
        with pytest.raises(IndexError, match=r"rows out of range \[-5, 5\) \(first at "
                           r"position 1: -1\)$"):
            asp.index_select(j, big)
        with pytest.raises(ValueError, match="^jagged_index_select: lengths do not sum to the "
                           "number of values" + r" \(first at position 2; found by a device "
                           r"check\)$"):
            asp.jagged_index_select(cp.asarray(CAFFE2_VALUES), cp.asarray(np.array([3, 4, 1])),
                                    cp.asarray(np.array([0])))
        with pytest.raises(TypeError, match=r"^index_select: rows is a host \(numpy/Arrow\) "
                           r"array but data is a device"):
            asp.index_select(j, [0])
        assert asp.index_select(j, cp.asarray(np.array([], np.int64))).num_rows == 0


@LARGE
def test_row_selections_match_cpu(cuda_emu: Emulator, large: bool) -> None:
    arr = sample_array(np.int32, large, seed=2)
    j = asp.Jagged.from_arrow(arr)
    rows = [3, 0, -1, 2, 2, 5]
    for fn, args in ((asp.index_select, (rows,)), (asp.list_slice, (1, 3)),
                     (asp.truncate, (2,))):
        for data in (arr, j):
            expected, got, launches = cpu_and_emu(cuda_emu, fn, data, *args)
            assert as_arrow(got).equals(as_arrow(expected)), fn.__name__
            assert launches and set(launches) <= {"gather_ranges<unsigned int>",
                                                  "gather_ranges<unsigned char>"}


def test_nested_row_selection_lists_the_element_ids_on_the_device(cuda_emu: Emulator) -> None:
    j = asp.Jagged.from_list([[[1, 2], [3]], None, [[4], [], [5, 6, 7]], [[8]]])
    expected, got, launches = cpu_and_emu(cuda_emu, asp.index_select, j[1:], [2, 0, 1, 2])
    assert got.to_list() == expected.to_list()
    assert "ranges_to_indices<long long>" in launches


# -------------------------------------------------------------------------------- unique
@pytest.mark.hypothesis
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.float64, np.float32])
@given(data=st.data())
def test_jagged_unique_matches_reference(dtype: Any, data: st.DataObject) -> None:
    arr, rows = data.draw(list_arrays(np.dtype(dtype), null_values=True))
    got = asp.jagged_unique(arr)
    assert got.type == arr.type
    assert got.to_pylist() == ref.unique_rows(rows)


def test_jagged_unique_nan_bool_nested_and_values() -> None:
    nan = float("nan")
    got = asp.jagged_unique(pa.array([[nan, 1.0, nan, -0.5, 1.0]])).to_pylist()[0]
    assert got[:2] == [-0.5, 1.0] and math.isnan(got[2]) and len(got) == 3
    assert asp.jagged_unique(pa.array([[True, False, True], []])).to_pylist() == \
        [[False, True], []]
    nested = asp.jagged_unique(asp.Jagged.from_list([[[3, 3, 1], None], [[2]]]))
    assert nested.to_list() == [[[1, 3], None], [[2]]]
    values, offs = asp.jagged_unique(np.array([5, 5, 1, 2, 2]), offsets=[0, 3, 5])
    assert values.tolist() == [1, 5, 2] and offs.tolist() == [0, 2, 3]
    f16 = asp.jagged_unique(asp.Jagged.from_list([[1.5, 1.5]], dtype=np.float16))
    assert f16.dtype == np.float16 and f16.to_list() == [[1.5]]


def test_jagged_unique_errors() -> None:
    with pytest.raises(TypeError, match=r"jagged_unique: rows must hold scalars, got values of "
                                        r"shape \(2, 2\)"):
        asp.jagged_unique(asp.Jagged(np.ones((2, 2)), [0, 2]))
    with pytest.raises(TypeError, match="jagged_unique: offsets must be None when data is an "
                                        "Arrow list array"):
        asp.jagged_unique(pa.array([[1]]), offsets=[0, 1])


@LARGE
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint64, np.int64, np.float16,
                                   np.float32, np.float64], ids=str)
def test_jagged_unique_matches_cpu(cuda_emu: Emulator, dtype: Any, large: bool) -> None:
    rng = np.random.default_rng(6)
    lengths = [3, 0, 5, 40, 1, 2]
    pool = unique_values(np.float64 if dtype == np.float16 else
                         np.int8 if dtype == np.bool_ else dtype, sum(lengths), rng)
    flat = (pool != 0) if dtype == np.bool_ else pool.astype(dtype)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    values = pa.array(flat, mask=rng.random(len(flat)) < 0.1)
    cls = pa.LargeListArray if large else pa.ListArray
    arr = cls.from_arrays(pa.array(offsets, pa.int64() if large else pa.int32()), values,
                          mask=pa.array([False, False, True, False, False, False])).slice(1)
    expected, got, launches = cpu_and_emu(cuda_emu, asp.jagged_unique,
                                          asp.Jagged.from_arrow(arr))
    assert_same_unique(got.to_arrow(), expected.to_arrow())
    assert launches[0] == "unique_element_rows<long long>"


# --------------------------------------------------------- repeat and expand_into_jagged
@pytest.mark.hypothesis
@given(list_arrays(np.dtype(np.int16), null_values=True), st.data())
def test_repeat_matches_reference(case: tuple[pa.Array, list], data: st.DataObject) -> None:
    arr, rows = case
    x = data.draw(st.lists(st.floats(-5, 5), min_size=len(rows), max_size=len(rows)))
    got = asp.repeat(np.array(x), arr)
    assert got.to_pylist() == ref.repeat_rows(x, rows)
    j = asp.Jagged.from_arrow(arr)
    shares_offsets(asp.repeat(np.array(x), j), j)


@pytest.mark.hypothesis
@given(st.data())
def test_expand_into_jagged_matches_reference(data: st.DataObject) -> None:
    lens, offs = data.draw(offsets_levels())
    inner = data.draw(st.sampled_from([(), (2,)]))
    rows = len(lens[0])
    x = (np.arange(rows * int(np.prod(inner)), dtype=np.float32) + 1).reshape((rows,) + inner)
    dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    got = asp.expand_into_jagged(x, [np.array(o, dtype) for o in offs])
    total = offs[-1][-1]
    expected = np.zeros((total,) + inner, dtype=np.float32)
    positions = ref.rows_of(list(range(total)), offs)

    def leaves(node: Any) -> list[int]:
        return [p for child in node for p in leaves(child)] if isinstance(node, list) else [node]

    for r, row in enumerate(positions):
        for p in leaves(row):
            expected[p] = x[r]
    assert got.dtype == x.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    if len(offs) == 1 and not inner:
        arrow = asp.expand_into_jagged(pa.array(x), pa.array(offs[0], pa.int64()))
        assert arrow.to_pylist() == expected.tolist()


def test_repeat_nested_vectors_and_expand_into_jagged() -> None:
    like = asp.Jagged.from_list([[[1, 2], []], None, [[3]]])
    assert asp.repeat(pa.array([7, 8, 9]), like).to_list() == [[[7, 7], []], None, [[9]]]
    vecs = asp.repeat(np.array([[1, 2], [3, 4], [5, 6]]), caffe2())
    np.testing.assert_array_equal(vecs.values[6:], [[3, 4], [5, 6], [5, 6]])
    got = asp.expand_into_jagged(np.array([10, 20, 30]), CAFFE2_OFFSETS)
    assert got.tolist() == [10, 10, 10, 20, 20, 20, 20, 30, 30]
    two = asp.expand_into_jagged(np.array([1, 2]), [np.array([0, 2, 3]), np.array([1, 2, 2, 4])])
    assert two.tolist() == [0, 1, 2, 2]
    arrow = asp.expand_into_jagged(pa.array([1.5]), pa.array([0, 2]))
    assert isinstance(arrow, pa.Array) and arrow.to_pylist() == [1.5, 1.5]


def test_repeat_errors() -> None:
    with pytest.raises(ValueError, match="repeat: x has 2 rows but like has 3"):
        asp.repeat(np.array([1, 2]), caffe2())
    with pytest.raises(TypeError, match="repeat: like must be a Jagged or an Arrow list array"):
        asp.repeat(np.array([1]), np.array([1]))
    with pytest.raises(ValueError, match=r"expand_into_jagged: x has 2 rows but offsets\[0\] "
                                         r"describes 3"):
        asp.expand_into_jagged(np.array([1, 2]), CAFFE2_OFFSETS)
    with pytest.raises(ValueError, match=r"expand_into_jagged: offsets\[0\] must be "
                                         r"non-decreasing"):
        asp.expand_into_jagged(np.array([1, 2]), np.array([0, 3, 1]))


def test_unique_and_repeat_on_every_backend(backend: str) -> None:
    rows = [[3, 1, None, 3, 2], None, [], [7, 7, -1], [0]]
    check_jagged(asp.jagged_unique(on(backend, sample(rows, np.int32))), backend,
                 ref.unique_rows(rows))
    nan = float("nan")
    floats = on(backend, sample([[nan, 1.0, nan, -0.5, 1.0], [], None, [2.0, 2.0]]))
    got = from_backend(asp.jagged_unique(floats), backend)
    assert got.to_list()[1:] == [[], None, [2.0]] and got.to_list()[0][:2] == [-0.5, 1.0]
    assert math.isnan(got.to_list()[0][2]) and len(got.to_list()[0]) == 3
    flags = on(backend, asp.Jagged.from_list([[True, False, True], []]))
    check_jagged(asp.jagged_unique(flags), backend, [[False, True], []])
    values, offs = on(backend, np.array([5, 5, 1, 2, 2]), np.array([0, 3, 5]))
    got_values, got_offsets = from_backend(asp.jagged_unique(values, offsets=offs), backend)
    assert got_values.tolist() == [1, 5, 2] and got_offsets.tolist() == [0, 2, 3]
    like = on(backend, sample())
    x = np.array([0.5, 1.0, 2.0, -1.0, 4.0])
    got_repeat = asp.repeat(on(backend, x), like)
    assert got_repeat.offsets is like.offsets
    check_jagged(got_repeat, backend, ref.repeat_rows(x.tolist(), [
        None if r is None else [0] * len(r) for r in ROWS]))
    nested = on(backend, asp.Jagged.from_list([[[1, 2], []], None, [[3]]]))
    check_jagged(asp.repeat(on(backend, np.array([7, 8, 9])), nested), backend,
                 [[[7, 7], []], None, [[9]]])
    two = asp.expand_into_jagged(on(backend, np.array([1, 2])),
                                 on(backend, [np.array([0, 2, 3]), np.array([1, 2, 2, 4])]))
    assert from_backend(two, backend).tolist() == [0, 1, 2, 2]
    if backend != "cpu":
        cuda.check_errors("test")


# -------------------------------- all of them: random arrays on the device, large inputs
@pytest.mark.hypothesis
@given(st.data())
def test_public_row_functions_match_cpu_on_random_arrays(data: st.DataObject) -> None:
    arr, _ = data.draw(list_arrays(null_values=True, null_ranges=True))
    rows = data.draw(st.lists(st.integers(-len(arr), len(arr) - 1), max_size=8)
                     if len(arr) else st.just([]))
    with emulated(check_orders=("reverse",)) as emu:
        for fn, args in ((asp.index_select, (arr, rows)), (asp.list_slice, (arr, 1, -1))):
            expected, got, _ = cpu_and_emu(emu, fn, *args)
            assert got.equals(expected), fn.__name__
        expected, got, _ = cpu_and_emu(emu, asp.jagged_unique, arr)
        assert_same_unique(got, expected)


def test_parallel_paths_match_numpy() -> None:
    b = large_batch()
    lengths, offs, n, values, rows, pos = b.lengths, b.offs, b.n, b.values, b.rows, b.pos
    # gathers
    j = asp.Jagged(values, offs)
    pick = b.pick
    got = asp.index_select(j, pick)
    idx = np.where(pick < 0, pick + len(lengths), pick)
    np.testing.assert_array_equal(got.lengths, lengths[idx])
    np.testing.assert_array_equal(got.values, np.concatenate([values[offs[i]:offs[i + 1]]
                                                              for i in idx[:50]] +
                                                             [got.values[got.offsets[50]:]]))
    sliced = asp.list_slice(j, 1, -1)
    np.testing.assert_array_equal(sliced.values, values[(pos >= 1) & (pos < lengths[rows] - 1)])
    np.testing.assert_array_equal(asp.repeat(np.arange(len(lengths)), j).values, rows)
    # unique on small integers
    ints = b.ints
    assert len(ints) == n
    uniq = asp.jagged_unique(asp.Jagged(ints, offs))
    pairs = np.unique(np.stack([rows, ints]), axis=1)
    np.testing.assert_array_equal(uniq.values, pairs[1])
    np.testing.assert_array_equal(uniq.lengths, np.bincount(pairs[0], minlength=len(lengths)))


# -------------------------------------------------------- string and binary lists (take)
@st.composite
def text_list_arrays(draw: st.DrawFn, levels: int = 1) -> tuple[pa.Array, list]:
    """A list<string>/list<binary> array (list or large_list, often a slice), its rows."""
    binary = draw(st.booleans())
    leaf: st.SearchStrategy[Any] = st.binary(max_size=4) if binary else st.text(max_size=4)
    row: st.SearchStrategy[Any] = st.lists(st.one_of(st.none(), leaf), max_size=5)
    for _ in range(levels - 1):
        row = st.lists(st.one_of(st.none(), row), max_size=4)
    rows_st = st.lists(st.one_of(st.none(), row), max_size=8)
    t: pa.DataType = pa.binary() if binary else draw(st.sampled_from([pa.string(),
                                                                     pa.large_string()]))
    for _ in range(levels):
        t = draw(st.sampled_from([pa.list_, pa.large_list]))(t)
    rows = draw(rows_st)
    if draw(st.booleans()):
        before, after = draw(rows_st), draw(rows_st)
        return pa.array(before + rows + after, t).slice(len(before), len(rows)), rows
    return pa.array(rows, t), rows


@pytest.mark.hypothesis
@given(text_list_arrays(), st.data())
def test_string_lists_gather_and_slice(case: tuple[pa.Array, list], data: st.DataObject) -> None:
    arr, rows = case
    n = len(rows)
    ids = data.draw(st.lists(st.integers(-n, n - 1), max_size=6)) if n else []
    got = asp.index_select(arr, ids)
    assert got.type == arr.type and got.to_pylist() == ref.index_select_rows(rows, ids)
    start = data.draw(st.one_of(st.none(), st.integers(-4, 4)))
    stop = data.draw(st.one_of(st.none(), st.integers(-4, 4)))
    sliced = asp.list_slice(arr, start, stop)
    assert sliced.type == arr.type and sliced.to_pylist() == ref.slice_rows(rows, start, stop)
    if stop is not None:
        assert asp.truncate(arr, stop).to_pylist() == ref.slice_rows(rows, None, stop)
    assert asp.jagged_unique(arr).to_pylist() == ref.unique_rows(rows)
    x = data.draw(st.lists(st.text(max_size=2), min_size=n, max_size=n))
    assert asp.repeat(pa.array(x), arr).to_pylist() == ref.repeat_rows(x, rows)


@pytest.mark.hypothesis
@given(text_list_arrays(levels=2), st.data())
def test_nested_string_lists(case: tuple[pa.Array, list], data: st.DataObject) -> None:
    arr, rows = case
    n = len(rows)
    ids = data.draw(st.lists(st.integers(-n, n - 1), max_size=6)) if n else []
    assert asp.index_select(arr, ids).to_pylist() == ref.index_select_rows(rows, ids)
    assert asp.list_slice(arr, 1).to_pylist() == ref.slice_rows(rows, 1, None)
    want = [None if r is None else ref.unique_rows(r) for r in rows]
    assert asp.jagged_unique(arr).to_pylist() == want
    # Null inner rows stay null lists; every element (null or not) becomes x[r].
    want = [None if r is None else [None if c is None else [i] * len(c) for c in r]
            for i, r in enumerate(rows)]
    assert asp.repeat(np.arange(n), arr).to_pylist() == want


def test_string_lists_every_form() -> None:
    base = pa.array([["z"], ["a", "b", "a"], None, [], ["c", None, "c", "b"], ["q"]])
    arr = base.slice(1, 4)  # offsets[0] > 0, a null row, an empty row, a null element
    assert asp.truncate(arr, 1).to_pylist() == [["a"], None, [], ["c"]]
    assert asp.list_slice(arr, -2).to_pylist() == [["b", "a"], None, [], ["c", "b"]]
    assert asp.jagged_unique(arr).to_pylist() == [["a", "b"], None, [], ["b", "c"]]
    chunked = pa.chunked_array([arr, base.slice(0, 1)])
    picked = asp.index_select(chunked, [4, 0])
    assert isinstance(picked, pa.ChunkedArray) and picked.to_pylist() == [["z"], ["a", "b", "a"]]
    cut = asp.truncate(chunked, 1)
    assert isinstance(cut, pa.ChunkedArray) and cut.num_chunks == 2
    assert asp.jagged_unique(pa.chunked_array([], pa.list_(pa.string()))).to_pylist() == []
    values, offs = asp.index_select(pa.array(["a", "b", "c"]), [1, 1], offsets=[0, 1, 3])
    assert values.to_pylist() == ["b", "c", "b", "c"] and offs.to_pylist() == [0, 2, 4]
    values, lengths = asp.jagged_index_select(pa.array(["a", "b", "c", "d"]), [1, 3], [1, -2])
    assert values.to_pylist() == ["b", "c", "d", "a"] and lengths.to_pylist() == [3, 1]
    view = pa.array([["b", "a"], None], pa.list_view(pa.string()))
    assert asp.list_slice(view, 1).to_pylist() == [["a"], None]
    assert asp.repeat(np.array([1.5, 2.5]), view).to_pylist() == [[1.5, 1.5], None]
    binary = pa.array([[b"x", b"a", b"x"]], pa.large_list(pa.large_binary()))
    assert asp.jagged_unique(binary).to_pylist() == [[b"a", b"x"]]
    assert asp.index_select(binary, [0, 0]).type == binary.type


def test_string_list_errors() -> None:
    with pytest.raises(TypeError, match="repeat: x of Arrow type string needs like to be an "
                                        "Arrow list array"):
        asp.repeat(pa.array(["a"]), asp.Jagged.from_list([[1]]))
    with pytest.raises(ValueError, match="repeat: x has 1 rows but like has 2"):
        asp.repeat(pa.array(["a"]), pa.array([["b"], ["c"]]))
    with pytest.raises(ValueError, match=r"repeat: x must hold one value per row \(1-D\) when "
                                         r"like holds non-numeric elements, got shape \(1, 2\)"):
        asp.repeat(np.ones((1, 2)), pa.array([["b"]]))
    with pytest.raises(TypeError, match="jagged_unique: rows must hold scalars, got Arrow "
                                        "elements of type struct"):
        asp.jagged_unique(pa.array([[{"a": 1}]]))
    with pytest.raises(IndexError, match=r"index_select: rows out of range \[-1, 1\) "
                                         r"\(first at position 0: 1\)"):
        asp.index_select(pa.array([["a"]]), [1])
    with pytest.raises(ValueError, match="jagged_index_select: lengths sum to 1 but there are 2"):
        asp.jagged_index_select(pa.array(["a", "b"]), [1], [0])
    with pytest.raises(ValueError, match="index_select: the result holds 4294967296 elements, "
                                         "too many for int32 offsets"):
        asp.index_select(pa.array([["a"] * 65536]), np.zeros(65536, np.int64))
