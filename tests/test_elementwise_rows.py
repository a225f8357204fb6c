"""Tests of the per-row selection functions (gathers, slices, unique, repeat) against
the plain-Python oracles in ``_reference.py``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp

from . import _reference as ref
from ._strategies import list_arrays
from .test_elementwise import CAFFE2_OFFSETS, CAFFE2_VALUES, caffe2, shares_offsets


# ==================================================================== gathers and slices
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


@given(list_arrays(np.dtype(np.int32), levels=2, null_values=True), st.data())
def test_index_select_nested(case: tuple[pa.Array, list], data: st.DataObject) -> None:
    arr, rows = case
    n = len(rows)
    ids = data.draw(st.lists(st.integers(-n, n - 1), max_size=6)) if n else []
    got = asp.index_select(arr, ids)
    assert got.type == arr.type and got.to_pylist() == ref.index_select_rows(rows, ids)


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


@given(list_arrays(np.dtype(np.float64), levels=2), st.integers(-3, 3))
def test_list_slice_nested(case: tuple[pa.Array, list], start: int) -> None:
    arr, rows = case
    assert asp.list_slice(arr, start).to_pylist() == ref.slice_rows(rows, start, None)


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


# =============================================================================== unique
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


# =============================================================================== repeat
@given(list_arrays(np.dtype(np.int16), null_values=True), st.data())
def test_repeat_matches_reference(case: tuple[pa.Array, list], data: st.DataObject) -> None:
    arr, rows = case
    x = data.draw(st.lists(st.floats(-5, 5), min_size=len(rows), max_size=len(rows)))
    got = asp.repeat(np.array(x), arr)
    assert got.to_pylist() == ref.repeat_rows(x, rows)
    j = asp.Jagged.from_arrow(arr)
    shares_offsets(asp.repeat(np.array(x), j), j)


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
