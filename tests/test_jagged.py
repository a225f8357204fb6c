"""Tests of the Jagged core type: constructors, Arrow zero-copy, views, exporters, and
``to_padded`` through the CUDA emulator against the CPU.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseError

from . import _reference as ref
from ._convert_helpers import assert_same, cpu_and_emu
from ._strategies import list_arrays, numeric_dtypes, pylists
from .conftest import from_backend, on_device, to_backend
from .cuda_emu.emu import Emulator, emulated

CAFFE2_VALUES = [1, 2, 3, 2, 4, 6, 7, 3, 6]
CAFFE2_ROWS = [[1, 2, 3], [2, 4, 6, 7], [3, 6]]


def address(arr: np.ndarray) -> int:
    return int(arr.__array_interface__["data"][0])


# --------------------------------------------------------------------- constructors
def test_caffe2_batch_every_representation(backend: str) -> None:
    def dev(x: object) -> object:
        return to_backend(x, backend)

    values = dev(np.array(CAFFE2_VALUES))
    by_offsets = asp.Jagged.from_offsets(values, dev([0, 3, 7, 9]))
    by_lengths = asp.Jagged.from_lengths(values, dev([3, 4, 2]))
    by_ids = asp.Jagged.from_segment_ids(values, dev([0, 0, 0, 1, 1, 1, 1, 2, 2]))
    by_ids_sized = asp.Jagged.from_segment_ids(values, dev([0, 0, 0, 1, 1, 1, 1, 2, 2]), 3)
    padded = np.array([[1, 2, 3, -1], [2, 4, 6, 7], [3, 6, -1, -1]])
    by_padding = asp.Jagged.from_padded(dev(padded), dev([3, 4, 2]))
    by_list = dev(asp.Jagged.from_list(CAFFE2_ROWS))
    for j in (by_offsets, by_lengths, by_ids, by_ids_sized, by_padding, by_list):
        assert j.device == ("cuda:0" if on_device(backend) else "cpu")
        assert j.to_list() == CAFFE2_ROWS
        assert j.num_rows == len(j) == 3
        np.testing.assert_array_equal(from_backend(j.lengths, backend), [3, 4, 2])
        np.testing.assert_array_equal(from_backend(j.segment_ids, backend),
                                      [0, 0, 0, 1, 1, 1, 1, 2, 2])
        assert j.max_length == 4
        np.testing.assert_array_equal(from_backend(j[1], backend), [2, 4, 6, 7])
        assert from_backend(j[1:], backend).to_list() == CAFFE2_ROWS[1:]
        j.validate()
    np.testing.assert_array_equal(from_backend(by_offsets.to_padded(pad_value=-1), backend),
                                  padded)
    assert by_offsets.values is values  # nothing copied


def test_from_segment_ids_trailing_empty_rows() -> None:
    j = asp.Jagged.from_segment_ids(np.array([5, 6]), [0, 2], num_segments=4)
    assert j.to_list() == [[5], [], [6], []]


def test_from_list_dtype_and_empty(backend: str) -> None:
    assert asp.Jagged.from_list([[1, 2]], dtype=np.int8).dtype == np.int8
    empty = to_backend(asp.Jagged.from_list([]), backend)
    assert empty.num_rows == 0 and empty.max_length == 0 and empty.to_list() == []
    assert from_backend(empty.to_padded(), backend).shape == (0, 0)
    assert from_backend(empty.segment_ids, backend).shape == (0,)
    only_empty = to_backend(asp.Jagged.from_list([[], []]), backend)
    assert only_empty.to_list() == [[], []]
    assert from_backend(only_empty.to_padded(), backend).shape == (2, 0)
    assert from_backend(only_empty.to_padded(2), backend).tolist() == [[0, 0], [0, 0]]


def test_constructor_errors() -> None:
    with pytest.raises(ValueError, match=r"Jagged: offsets must be non-decreasing \(first at "
                                         r"position 2: 1\)"):
        asp.Jagged(np.arange(5), [0, 3, 1, 5])
    with pytest.raises(ValueError, match=r"Jagged: offsets exceed the number of values 5 \(first "
                                         r"at position 2: 6\)"):
        asp.Jagged(np.arange(5), [0, 3, 6])
    with pytest.raises(ValueError, match=r"Jagged: offsets must be non-negative \(first at "
                                         r"position 0: -1\)"):
        asp.Jagged(np.arange(5), [-1, 3])
    with pytest.raises(ValueError, match="offsets must have at least one element"):
        asp.Jagged(np.arange(5), np.array([], dtype=np.int64))
    with pytest.raises(TypeError, match="Jagged: offsets must have an integer dtype, got float64"):
        asp.Jagged(np.arange(5), np.array([0.0, 5.0]))
    with pytest.raises(TypeError, match="Jagged: values must have a numeric dtype, got <U1"):
        asp.Jagged(np.array(["a"]), [0, 1])
    with pytest.raises(TypeError, match="values must be a numeric array, got object"):
        asp.Jagged([object()], [0, 1])
    with pytest.raises(TypeError, match="values must be an array"):
        asp.Jagged(object(), [0, 1])
    with pytest.raises(ValueError, match=r"validity has shape \(3,\) but 2 entries are needed"):
        asp.Jagged(np.arange(3), [0, 1, 3], validity=np.ones(3, dtype=bool))
    with pytest.raises(TypeError, match="validity must be a bool mask, got dtype int64"):
        asp.Jagged(np.arange(3), [0, 1, 3], validity=np.ones(2, dtype=np.int64))
    with pytest.raises(ValueError, match="values_validity is not allowed with nested values"):
        inner = asp.Jagged.from_list([[1]])
        asp.Jagged(inner, [0, 1], values_validity=np.ones(1, dtype=bool))
    with pytest.raises(ValueError, match=r"offsets must be 1-dimensional, got shape \(1, 2\)"):
        asp.Jagged(np.arange(3), np.array([[0, 3]]))


def test_from_lengths_errors() -> None:
    with pytest.raises(ValueError, match="Jagged.from_lengths: lengths sum to 4 but there are 5 "
                                         "values"):
        asp.Jagged.from_lengths(np.arange(5), [2, 2])
    with pytest.raises(ValueError, match=r"lengths must be non-negative \(first at position 1: "
                                         r"-1\)"):
        asp.Jagged.from_lengths(np.arange(5), [6, -1])


def test_from_segment_ids_errors() -> None:
    with pytest.raises(ValueError, match=r"segment_ids must be sorted \(non-decreasing\) \(first "
                                         r"at position 2: 0\)"):
        asp.Jagged.from_segment_ids(np.arange(3), [0, 1, 0])
    with pytest.raises(IndexError, match=r"segment_ids must be < num_segments=2 \(first at "
                                         r"position 2: 2\)"):
        asp.Jagged.from_segment_ids(np.arange(3), [0, 1, 2], num_segments=2)
    with pytest.raises(IndexError, match=r"segment_ids must be non-negative \(first at position 0: "
                                         r"-1\)"):
        asp.Jagged.from_segment_ids(np.arange(2), [-1, 0])
    with pytest.raises(ValueError, match="segment_ids has length 2 but there are 3 values"):
        asp.Jagged.from_segment_ids(np.arange(3), [0, 1])


def test_from_padded_errors() -> None:
    with pytest.raises(ValueError, match=r"lengths must be <= the padded length 2 \(first at "
                                         r"position 1: 3\)"):
        asp.Jagged.from_padded(np.zeros((2, 2)), [1, 3])
    with pytest.raises(ValueError, match="lengths has 1 entries but dense has 2 rows"):
        asp.Jagged.from_padded(np.zeros((2, 2)), [1])
    with pytest.raises(ValueError, match="dense must be at least 2-dimensional"):
        asp.Jagged.from_padded(np.zeros(2), [1, 1])


def test_from_list_errors() -> None:
    with pytest.raises(TypeError, match="rows must be a list of lists, got int"):
        asp.Jagged.from_list(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="rows must be lists, got elements of Arrow type int64"):
        asp.Jagged.from_list([1, 2])
    with pytest.raises(TypeError, match="could not be read as lists of numbers"):
        asp.Jagged.from_list([[1], ["a"]])
    with pytest.raises(TypeError, match="list values of Arrow type string are not supported"):
        asp.Jagged.from_list([["a"]])


# ------------------------------------------------------------------ Arrow zero-copy
def test_from_arrow_is_zero_copy_and_to_arrow_gives_back_the_buffers() -> None:
    arr = pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]], type=pa.list_(pa.int64()))
    sliced = arr.slice(1, 3)
    j = asp.Jagged.from_arrow(sliced)
    offsets_buf, values_buf = sliced.buffers()[1], sliced.values.buffers()[1]
    assert address(j.offsets) == offsets_buf.address + 4 * sliced.offset
    assert address(j.values) == values_buf.address
    assert j.offsets[0] == 3  # the slice is kept, not rebased
    back = j.to_arrow()
    assert back.buffers()[1].address == offsets_buf.address + 4 * sliced.offset
    assert back.values.buffers()[1].address == values_buf.address
    assert back.equals(sliced)
    assert back.to_pylist() == [[2, 4, 6, 7], None, [3, 6]]


def test_large_list_keeps_int64_offsets() -> None:
    arr = pa.array([[1.5], [], [2.5, 3.5]], type=pa.large_list(pa.float32()))
    j = asp.Jagged.from_arrow(arr)
    assert j.offsets.dtype == np.int64 and j.dtype == np.float32
    assert address(j.values) == arr.values.buffers()[1].address
    assert j.to_arrow().type == arr.type
    assert j.to_arrow().equals(arr)


def test_child_with_its_own_offset() -> None:
    values = pa.array(np.arange(10, dtype=np.int32)).slice(4)
    arr = pa.ListArray.from_arrays(pa.array([0, 2, 6], pa.int32()), values)
    j = asp.Jagged.from_arrow(arr)
    assert j.to_list() == [[4, 5], [6, 7, 8, 9]]
    assert address(j.values) == values.buffers()[1].address + 4 * 4


def test_list_view_is_converted() -> None:
    view = pa.array([[1, 2], None, [3]], type=pa.list_view(pa.int16()))
    j = asp.Jagged.from_arrow(view)
    assert j.to_list() == [[1, 2], None, [3]]
    large_view = pa.array([[1.0], [2.0, 3.0]], type=pa.large_list_view(pa.float64()))
    assert asp.Jagged.from_arrow(large_view).offsets.dtype == np.int64


def test_fixed_size_list_values_become_2d(backend: str) -> None:
    emb = pa.array([[1, 2], [3, 4], [5, 6]], type=pa.list_(pa.float32(), 2))
    arr = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), emb)
    j = asp.Jagged.from_arrow(arr)
    assert address(j.values) == emb.values.buffers()[1].address
    assert j.to_arrow().equals(arr)
    j = to_backend(j, backend)
    assert j.values.shape == (3, 2)
    np.testing.assert_array_equal(from_backend(j[1], backend), [[3, 4], [5, 6]])
    padded = from_backend(j.to_padded(), backend)
    np.testing.assert_array_equal(padded, [[[1, 2], [0, 0]], [[3, 4], [5, 6]]])


def test_fixed_size_list_of_fixed_size_list() -> None:
    inner = pa.list_(pa.list_(pa.int32(), 2), 3)
    rows = [[[[1, 2], [3, 4], [5, 6]]], []]
    arr = pa.array(rows, type=pa.list_(inner))
    j = asp.Jagged.from_arrow(arr)
    assert j.values.shape == (1, 3, 2)
    assert j.to_list() == rows


def test_fixed_size_list_null_element_and_sliced() -> None:
    emb = pa.array([[9, 9], [1, 2], None, [5, 6]], type=pa.list_(pa.int64(), 2)).slice(1)
    arr = pa.ListArray.from_arrays(pa.array([0, 2, 3], pa.int32()), emb)
    j = asp.Jagged.from_arrow(arr)
    np.testing.assert_array_equal(j.values_validity, [True, False, True])
    assert j.to_list() == [[[1, 2], None], [[5, 6]]]


def test_fixed_size_list_inner_nulls_rejected() -> None:
    # A per-component mask would be needed to keep them; every reduction reads a
    # mask over whole elements, so they are refused with the fix rather than misread.
    emb = pa.array([[1, None]], type=pa.list_(pa.int64(), 2))
    arr = pa.ListArray.from_arrays(pa.array([0, 1], pa.int32()), emb)
    with pytest.raises(ValueError, match=r"Jagged.from_arrow: values must not hold nulls inside "
                       r"fixed_size_list elements \(first at position 0: \[1, None\]\); "
                       "fill them first with pyarrow.compute.fill_null"):
        asp.Jagged.from_arrow(arr)
    emb = pa.array([[1, None], [1, 2], [3, 4], [None, 5]], type=pa.list_(pa.int64(), 2)).slice(1)
    arr = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), emb)
    with pytest.raises(ValueError, match=r"\(first at position 2: \[None, 5\]\)"):
        asp.Jagged.from_arrow(arr)
    null_element = pa.array([[1, 2], None], type=pa.list_(pa.int64(), 2))
    arr = pa.ListArray.from_arrays(pa.array([0, 2], pa.int32()), null_element)
    assert asp.Jagged.from_arrow(arr).to_list() == [[[1, 2], None]]


def test_nested_lists_become_nested_jagged() -> None:
    rows = [[[1], [2, 3]], None, [[], None, [4]]]
    arr = pa.array(rows, type=pa.list_(pa.large_list(pa.int32())))
    j = asp.Jagged.from_arrow(arr)
    assert isinstance(j.values, asp.Jagged) and j.num_levels == 2
    assert j.values.offsets.dtype == np.int64
    assert j.dtype == np.int32
    assert j.to_list() == rows
    assert j[0].to_list() == [[1], [2, 3]]
    assert j.to_arrow().equals(arr)


def test_child_nulls_kept_as_values_validity() -> None:
    arr = pa.array([[1, None, 3], None, [None]])
    j = asp.Jagged.from_arrow(arr)
    np.testing.assert_array_equal(j.validity, [True, False, True])
    np.testing.assert_array_equal(j.values_validity, [True, False, True, False])
    assert j.to_list() == [[1, None, 3], None, [None]]
    assert repr(j) == "Jagged([[1, None, 3], None, [None]], dtype=int64, offsets=int32)"


def test_bool_values_are_unpacked() -> None:
    arr = pa.array([[True, False], [True]])
    j = asp.Jagged.from_arrow(arr)
    assert j.dtype == np.bool_
    assert j.to_list() == [[True, False], [True]]


def test_chunked_array() -> None:
    one = pa.chunked_array([pa.array([[1, 2], [3]])])
    j = asp.Jagged.from_arrow(one)
    assert address(j.values) == one.chunk(0).values.buffers()[1].address
    two = pa.chunked_array([pa.array([[1, 2], [3]]), pa.array([None, [4]])])
    assert asp.Jagged.from_arrow(two).to_list() == [[1, 2], [3], None, [4]]
    none = pa.chunked_array([], type=pa.list_(pa.float32()))
    assert asp.Jagged.from_arrow(none).num_rows == 0


def test_from_arrow_errors() -> None:
    with pytest.raises(TypeError, match="expected an Arrow list or large_list array, got int64"):
        asp.Jagged.from_arrow(pa.array([1, 2]))
    with pytest.raises(TypeError, match="expected an Arrow list or large_list array, got list"):
        asp.Jagged.from_arrow([[1]])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list values of Arrow type string are not supported"):
        asp.Jagged.from_arrow(pa.array([["a"]]))


@given(list_arrays(levels=1, null_values=True))
def test_from_arrow_round_trip(case: tuple[pa.Array, list]) -> None:
    arr, rows = case
    j = asp.Jagged.from_arrow(arr)
    j.validate()
    assert j.to_list() == rows
    assert j.to_arrow().to_pylist() == rows
    assert j.num_rows == len(rows)
    assert j.null_count == sum(r is None for r in rows)


@given(list_arrays(levels=2))
def test_nested_round_trip(case: tuple[pa.Array, list]) -> None:
    arr, rows = case
    j = asp.Jagged.from_arrow(arr)
    assert j.to_list() == rows
    assert j.to_arrow().equals(arr) or j.to_arrow().to_pylist() == rows


# ------------------------------------------------------------------------ row views
def test_to_padded_every_dtype(values_dtype: np.dtype, offsets_dtype: np.dtype,
                               backend: str) -> None:
    rows = [[1, 2, 3], None, [], [4]]
    arr = pa.array(rows, type=pa.list_(pa.from_numpy_dtype(values_dtype)))
    if offsets_dtype == np.int64:
        arr = arr.cast(pa.large_list(arr.type.value_type))
    j = to_backend(asp.Jagged.from_arrow(arr.slice(1)), backend)
    got = from_backend(j.to_padded(2, pad_value=7), backend)
    assert got.dtype == values_dtype
    assert got.tolist() == [[7, 7], [7, 7], [4, 7]]
    assert from_backend(j.to_padded(pad_value=7), backend).tolist() == [[7], [7], [4]]


def test_row_indexing_and_slicing() -> None:
    j = asp.Jagged.from_list([[1, 2, 3], None, [], [3, 6]])
    np.testing.assert_array_equal(j[0], [1, 2, 3])
    assert j[1] is None
    np.testing.assert_array_equal(j[-1], [3, 6])
    assert np.shares_memory(j[0], j.values)
    part = j[1:]
    assert part.to_list() == [None, [], [3, 6]]
    assert part.values is j.values and np.shares_memory(part.offsets, j.offsets)
    assert j[3:1].num_rows == 0
    assert [None if r is None else r.tolist() for r in j] == [[1, 2, 3], None, [], [3, 6]]
    with pytest.raises(IndexError, match="Jagged: row 4 out of range for 4 rows"):
        j[4]
    with pytest.raises(IndexError, match="row -5 out of range"):
        j[-5]
    with pytest.raises(ValueError, match="slices must have step 1; use index_select"):
        j[::2]
    with pytest.raises(TypeError, match="rows are indexed by an int or a slice, got str"):
        j["a"]  # type: ignore[index]


def test_flat_values_is_a_view() -> None:
    j = asp.Jagged.from_arrow(pa.array([[1, 2], [3], [4, 5]]).slice(1, 2))
    np.testing.assert_array_equal(j.flat_values(), [3, 4, 5])
    nested = asp.Jagged.from_arrow(pa.array([[[1]], [[2], [3]]]).slice(1))
    assert nested.flat_values().to_list() == [[2], [3]]


def test_repr_is_deterministic_and_truncated() -> None:
    j = asp.Jagged.from_lengths(np.arange(10, dtype=np.float32), [1] * 10)
    assert repr(j) == ("Jagged([[0.0], [1.0], [2.0], [3.0], ..., [8.0], [9.0]], "
                       "dtype=float32, offsets=int64, num_rows=10)")
    assert "0x" not in repr(asp.Jagged.from_list([[[1]]]))


def test_repr_summarises_long_rows_like_numpy() -> None:
    # Up to 1000 addressed values every item is shown, as numpy shows them.
    assert repr(asp.Jagged(np.arange(1000), [0, 1000])).count(",") == 1000 + 1
    long_row = asp.Jagged(np.arange(10**6), [0, 3, 10**6])
    assert repr(long_row) == ("Jagged([[0, 1, 2], [3, 4, 5, ..., 999997, 999998, 999999]], "
                              "dtype=int64, offsets=int64)")
    nested = asp.Jagged.from_list([[list(range(100))] * 20])
    assert repr(nested) == ("Jagged([[[0, 1, 2, ..., 97, 98, 99], [0, 1, 2, ..., 97, 98, 99], "
                            "[0, 1, 2, ..., 97, 98, 99], ..., [0, 1, 2, ..., 97, 98, 99], "
                            "[0, 1, 2, ..., 97, 98, 99], [0, 1, 2, ..., 97, 98, 99]]], "
                            "dtype=int64, offsets=int32)")
    vectors = asp.Jagged.from_lengths(np.arange(2000.0).reshape(2, 1000), [2])
    assert repr(vectors) == ("Jagged([[[0.0, 1.0, 2.0, ..., 997.0, 998.0, 999.0], "
                             "[1000.0, 1001.0, 1002.0, ..., 1997.0, 1998.0, 1999.0]]], "
                             "dtype=float64, offsets=int64)")
    with_nulls = asp.Jagged.from_arrow(pa.array([[None] * 600 + [1] * 600]))
    assert repr(with_nulls) == ("Jagged([[None, None, None, ..., 1, 1, 1]], dtype=int64, "
                                "offsets=int32)")
    sliced = asp.Jagged.from_arrow(pa.array([list(range(2000)), [1, 2]]).slice(1))
    assert repr(sliced) == "Jagged([[1, 2]], dtype=int64, offsets=int32)"  # 2 values addressed
    assert len(repr(long_row)) < 100 and repr(long_row) == repr(long_row)


# ------------------------------------------------------------------------ exporters
@given(list_arrays(levels=1), st.integers(0, 6), st.integers(-3, 3))
def test_to_padded_matches_reference(case: tuple[pa.Array, list], max_len: int, pad: int) -> None:
    arr, rows = case
    j = asp.Jagged.from_arrow(arr)
    pad_value = pad if j.dtype.kind != "u" else abs(pad)
    expected = ref.pad(rows, [max_len], pad_value, pad_value)
    got = j.to_padded(max_len, pad_value)
    assert got.dtype == j.dtype
    assert got.shape == (len(rows), max_len)
    assert got.tolist() == expected


@given(list_arrays(levels=2, dtype=np.dtype(np.int32)), st.integers(0, 4), st.integers(0, 4))
def test_nested_to_padded_matches_reference(case: tuple[pa.Array, list], l0: int, l1: int) -> None:
    arr, rows = case
    got = asp.Jagged.from_arrow(arr).to_padded([l0, l1], pad_value=-7)
    assert got.shape == (len(rows), l0, l1)
    assert got.tolist() == ref.pad(rows, [l0, l1], -7, -7)


@given(st.data())
def test_padded_round_trip(data: st.DataObject) -> None:
    dtype = data.draw(numeric_dtypes())
    rows = data.draw(pylists(dtype, null_rows=False))
    j = asp.Jagged.from_list(rows, dtype=dtype) if rows else asp.Jagged.from_list([], dtype=dtype)
    dense = j.to_padded()
    back = asp.Jagged.from_padded(dense, j.lengths)
    assert back.to_list() == j.to_list()
    assert back.dtype == dtype


def test_to_padded_null_elements_are_padding(backend: str) -> None:
    arr = pa.array([[9, 1, None, 3], [None], [2, None]]).slice(1)
    j = to_backend(asp.Jagged.from_arrow(arr), backend)
    np.testing.assert_array_equal(from_backend(j.to_padded(pad_value=-1), backend),
                                  [[-1, -1], [2, -1]])
    np.testing.assert_array_equal(from_backend(j.to_padded(3, pad_value=7), backend),
                                  [[7, 7, 7], [2, 7, 7]])


def test_nested_to_padded_with_null_rows(backend: str) -> None:
    rows = [[[1, 2], None, [3]], None, [[], [4, 5, 6]], [[7]]]
    arr = pa.array([[[9, 9, 9, 9]], *rows], pa.list_(pa.large_list(pa.float32()))).slice(1)
    j = to_backend(asp.Jagged.from_arrow(arr), backend)
    assert j.num_levels == 2 and j.max_length == 3
    for lengths in ([2, 2], None):
        got = from_backend(j.to_padded(lengths, pad_value=-1), backend)
        widths = lengths or [3, 3]  # the sliced-off 4-long row does not count
        assert got.tolist() == ref.pad(rows, widths, -1, -1)


def test_to_padded_2d_values_and_errors(backend: str) -> None:
    j = to_backend(asp.Jagged.from_lengths(np.arange(6).reshape(3, 2), [2, 0, 1]), backend)
    np.testing.assert_array_equal(from_backend(j.to_padded(), backend),
                                  [[[0, 1], [2, 3]], [[0, 0], [0, 0]], [[4, 5], [0, 0]]])
    with pytest.raises(ValueError, match="pad_value -1 does not fit the values dtype uint8"):
        asp.Jagged.from_list([[1]], dtype=np.uint8).to_padded(pad_value=-1)
    with pytest.raises(ValueError, match="pad_value 0.5 does not fit the values dtype int64"):
        j.to_padded(pad_value=0.5)
    with pytest.raises(TypeError, match=r"max_length must be an int or a list of one int per level "
                                        r"\(2\), got 3"):
        asp.Jagged.from_list([[[1]]]).to_padded(3)
    with pytest.raises(ValueError, match=r"the result of shape \(3, 288230376151711744, 2\) would "
                                         r"hold "
                       r"1729382256910270464 elements, more than 2\*\*59; lower max_lengths"):
        j.to_padded(2**58)
    with pytest.raises(ValueError, match=r"max_length must be at most 2\*\*59, got "
                                         r"1180591620717411303424"):
        j.to_padded(2**70)
    with pytest.raises(TypeError, match="Jagged.from_list: dtype must be a dtype, got 'nan'"):
        asp.Jagged.from_list([[1]], dtype="nan")
    with pytest.raises(ValueError, match="max_length must be non-negative, got -1"):
        j.to_padded(-1)
    nan_pad = asp.Jagged.from_list([[1.0], []]).to_padded(pad_value=np.nan)
    assert np.isnan(nan_pad[1, 0])


def test_to_csr_multi_hot() -> None:
    j = asp.Jagged.from_list([[1, 2, 3], None, [2, 4, 6, 7], [3, 6, 6]])
    csr = j.to_csr(8)
    dense = np.zeros((4, 8), dtype=np.float32)
    for r, row in enumerate(j.to_list()):
        for i in row or []:
            dense[r, i] += 1
    np.testing.assert_array_equal(csr.to_dense(), dense)
    np.testing.assert_array_equal(csr.to_scipy().toarray(), dense)
    weighted = asp.Jagged.from_arrow(pa.array([[9], [1, 2], [3]]).slice(1)).to_csr(
        4, weights=np.arange(4.0))
    np.testing.assert_array_equal(weighted.to_dense(), [[0, 1, 2, 0], [0, 0, 0, 3]])
    with pytest.raises(IndexError, match=r"Jagged.to_csr: ids out of range \[0, 7\) \(first at "
                                         r"position 6: 7\)"):
        asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7]]).to_csr(7)
    with pytest.raises(TypeError, match="ids must have an integer dtype, got float64"):
        asp.Jagged.from_list([[1.0]]).to_csr(3)
    with pytest.raises(TypeError, match="rows must hold scalar ids"):
        asp.Jagged.from_list([[[1]]]).to_csr(3)
    with pytest.raises(ValueError, match="weights has 1 entries but there are 2 values"):
        asp.Jagged.from_list([[1, 2]]).to_csr(3, weights=[1.0])


def test_to_csr_skips_null_ids() -> None:
    j = asp.Jagged.from_arrow(pa.array([[1, None, 3], None, [None], [2]], pa.list_(pa.int64())))
    csr = j.to_csr(4, weights=np.array([10.0, 20.0, 30.0, 40.0, 50.0]))
    np.testing.assert_array_equal(csr.indptr, [0, 2, 2, 2, 3])
    np.testing.assert_array_equal(csr.to_dense(), [[0, 10, 0, 30], [0] * 4, [0] * 4,
                                                   [0, 0, 50, 0]])
    garbage = pa.Array.from_buffers(pa.int64(), 2, [pa.array([True, False]).buffers()[1],
                                                    pa.py_buffer(np.array([1, -7]))])
    with_bad_null = asp.Jagged.from_arrow(pa.ListArray.from_arrays(pa.array([0, 2]), garbage))
    assert with_bad_null.to_csr(2).to_dense().tolist() == [[0.0, 1.0]]  # -7 is never read


@given(list_arrays(dtype=np.dtype(np.uint16), null_values=True, null_ranges=True))
def test_to_csr_matches_reference(case: tuple[pa.Array, list]) -> None:
    arr, rows = case
    j = asp.Jagged.from_arrow(arr)
    weights = j.values.astype(np.float64) / 2 + 1
    csr = j.to_csr(1001, weights=weights)
    assert csr.to_dense().tolist() == ref.multi_hot(rows, 1001, lambda x: x / 2 + 1)
    assert csr.indptr[-1] == sum(x is not None for r in rows for x in r or [])


def test_validate_catches_broken_invariants() -> None:
    j = asp.Jagged(np.arange(4), np.array([0, 2, 4]))
    j.offsets[1] = 5  # mutate the buffer behind the Jagged's back
    with pytest.raises(ValueError, match=r"Jagged.validate: offsets must be non-decreasing \(first "
                                         r"at position 2: 4\)"):
        j.validate()
    assert asp.Jagged.from_list([[[1]], None]).validate().num_rows == 2


@given(list_arrays(levels=1, null_rows=True, null_ranges=True))
def test_properties_match_reference(case: tuple[pa.Array, list]) -> None:
    arr, rows = case
    j = asp.Jagged.from_arrow(arr)
    offs = j.offsets.tolist()
    assert j.segment_ids.tolist() == ref.offsets_to_segment_ids([o - offs[0] for o in offs])
    assert j.lengths.tolist() == [offs[i + 1] - offs[i] for i in range(len(rows))]
    assert j.max_length == max((len(r) for r in rows if r is not None), default=0)
    assert j.to_padded().shape == (len(rows), j.max_length)
    assert j.to_padded(pad_value=1).tolist() == ref.pad(rows, [j.max_length], 1, 1)


@given(list_arrays(levels=2, dtype=np.dtype(np.int16), null_ranges=True))
def test_nested_default_padding_matches_reference(case: tuple[pa.Array, list]) -> None:
    arr, rows = case
    widths = [max((len(r) for r in rows if r is not None), default=0),
              max((len(inner) for r in rows if r is not None for inner in r
                   if inner is not None), default=0)]
    assert asp.Jagged.from_arrow(arr).to_padded(pad_value=-1).tolist() == \
        ref.pad(rows, widths, -1, -1)


def test_null_rows_do_not_count_towards_max_length(backend: str) -> None:
    values = pa.array(np.arange(10))
    arr = pa.ListArray.from_arrays(pa.array([0, 2, 9, 10], pa.int32()), values,
                                   mask=pa.array([False, True, False]))
    j = to_backend(asp.Jagged.from_arrow(arr), backend)
    assert from_backend(j.lengths, backend).tolist() == [2, 7, 1]  # the range as it is
    assert j.max_length == 2 and j.null_count == 1
    assert from_backend(j.to_padded(), backend).tolist() == [[0, 1], [0, 0], [9, 0]]
    inner = pa.ListArray.from_arrays(pa.array([0, 1, 6, 7], pa.int32()), values.slice(0, 7))
    outer = pa.ListArray.from_arrays(pa.array([0, 1, 2, 3], pa.int32()), inner,
                                     mask=pa.array([False, True, False]))
    nested = to_backend(asp.Jagged.from_arrow(outer), backend)  # only the null row reaches
    assert from_backend(nested.to_padded(), backend).shape == (3, 1, 1)  # the 5-long row
    assert to_backend(asp.Jagged.from_list([None, None]), backend).max_length == 0


def test_errors_are_arrow_sparse_errors() -> None:
    with pytest.raises(ArrowSparseError):
        asp.Jagged(np.arange(3), [0, 5])


@pytest.mark.parametrize("values,offsets,match", [
    (np.arange(4.0), np.array([0, 10**9, 2 * 10**9]),
     r"offsets exceed the number of values 4 \(first at position 1: 1000000000\)"),
    (np.arange(4.0), np.array([0, 3, 1, 10**12]),
     r"offsets must be non-decreasing \(first at position 2: 1\)"),
    (np.arange(4.0), np.array([0, 2, 6]), r"offsets exceed the number of values 4"),
    (np.arange(4.0), "abc", "offsets must have an integer dtype, got <U3"),
    (np.arange(4.0), np.array([-2, 1]),
     r"offsets must be non-negative \(first at position 0: -2\)"),
])
def test_validate_false_still_checks_offsets(values: np.ndarray, offsets: object,
                                             match: str) -> None:
    # ``validate=False`` used to skip every check, and such a Jagged crashed kernels.
    with pytest.raises(ArrowSparseError, match=f"^Jagged: {match}"):
        asp.Jagged(values, offsets, validate=False)
    with pytest.raises(TypeError, match="Jagged: validate must be True or False, got str"):
        asp.Jagged(np.arange(2), [0, 2], validate="no")  # type: ignore[arg-type]


def test_empty_arrays_with_short_buffers() -> None:
    # pyarrow gives an empty child a 4-byte buffer: valid Arrow, shorter than an int64.
    j = asp.Jagged.from_arrow(pa.nulls(0, pa.list_(pa.int64())))
    assert j.num_rows == 0 and j.dtype == np.int64
    assert asp.Jagged.from_arrow(pa.nulls(3, pa.list_(pa.float64()))).to_list() == [None] * 3


def test_nested_default_padding_counts_only_addressed_rows() -> None:
    arr = pa.array([[[1, 2, 3, 4]], [[]]]).slice(1)
    assert asp.Jagged.from_arrow(arr).to_padded().shape == (1, 1, 0)


def test_truth_value_is_ambiguous() -> None:
    j = asp.Jagged.from_list([[1], [2, 3]])
    with pytest.raises(ValueError, match="the truth value of a Jagged is ambiguous"):
        bool(j == j)


# ------------------------------------------------ to_padded through the CUDA emulator
# The CUDA conversion kernels run on the CPU emulator (tests/cuda_emu) and must give the
# CPU (Numba) results exactly, launching the expected instantiations.
@pytest.fixture
def cuda_emu() -> Iterator[Emulator]:
    """Route the CUDA kernel families through the CPU emulator (tests/cuda_emu)."""
    with emulated() as emulator:
        yield emulator


def arrow_rows(large: bool) -> pa.Array:
    rows = [[1, 2, 3], None, [], [4, 5, 6, 7, 8], None, [9], [10, 11]]
    array = pa.array(rows, pa.large_list(pa.int16()) if large else pa.list_(pa.int16()))
    return array.slice(1)  # offsets[0] > 0 and a leading null


@pytest.mark.parametrize("large", [False, True], ids=["list", "large_list"])
def test_to_padded_with_null_rows_matches_cpu(cuda_emu: Emulator, large: bool) -> None:
    jagged = asp.Jagged.from_arrow(arrow_rows(large))
    assert jagged.null_count == 2
    for max_length in (None, 2):
        expected, (got, launches) = cpu_and_emu(cuda_emu, jagged.to_padded, max_length, -1)
        assert_same(expected, got)
        assert launches == [f"pad_rows<short, {'long long' if large else 'int'}>"]


def test_nested_to_padded_with_null_rows_matches_cpu(cuda_emu: Emulator) -> None:
    rows = [[[1, 2], None, [3]], None, [[], [4, 5, 6]], [[7]]]
    jagged = asp.Jagged.from_arrow(pa.array(rows, pa.list_(pa.list_(pa.float32()))))
    expected, (got, _) = cpu_and_emu(cuda_emu, jagged.to_padded, [2, 2], 0)
    assert_same(expected, got)
