"""Tests of ``arrow_sparse.transforms.nulls``: :func:`pad_or_truncate`,
:func:`drop_nulls` and :func:`fill_null`.

Compared with the plain-Python oracles of ``tests/_reference.py`` (Hypothesis, on the
CPU), on every backend (cpu, the CUDA emulator, the stand-in CuPy, a GPU) and with the
CPU through the emulator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseError, ArrowSparseValueError

from .. import _reference as ref
from .._strategies import list_arrays
from ..conftest import from_backend, to_backend
from ..cuda_emu.fake_cupy import emulated_cupy
from ._helpers import (
    CAFFE2,
    COLUMNS,
    STRING_TYPES,
    _ints,
    _ranged_nulls,
    _words,
    child_with_offset,
    int_arrays,
    on,
    run_through_the_emulator,
    same_buffer,
    same_jagged,
    string_list_arrays,
)


# ----------------------------------------------------------------------- pad_or_truncate
@pytest.mark.hypothesis
@given(st.data())
def test_pad_or_truncate(data: st.DataObject) -> None:
    dtype = np.dtype(data.draw(st.sampled_from(["int64", "int32", "float32", "uint8"])))
    arr, rows = data.draw(list_arrays(dtype, null_values=True))
    length = data.draw(st.integers(0, 6))
    side = data.draw(st.sampled_from(["right", "left"]))
    out = asp.pad_or_truncate(arr, length, pad_value=7, side=side)
    out.validate(full=True)
    assert out.type == pa.list_(arr.type.value_field, length)
    assert out.to_pylist() == ref.pad_or_truncate(rows, length, 7, side)
    dense = asp.pad_or_truncate(asp.Jagged.from_arrow(arr), length, pad_value=7, side=side)
    assert dense.shape == (len(rows), length) and dense.dtype == dtype
    no_nulls = [None if r is None else [7 if x is None else x for x in r] for r in rows]
    assert dense.tolist() == ref.pad_or_truncate(no_nulls, length, 7, side, [7] * length)


@pytest.mark.hypothesis
@given(st.data())
def test_pad_or_truncate_strings(data: st.DataObject) -> None:
    value_type = data.draw(st.sampled_from(STRING_TYPES + [pa.string_view()]))
    arr, rows = data.draw(string_list_arrays(value_type))
    length = data.draw(st.integers(0, 6))
    side = data.draw(st.sampled_from(["right", "left"]))
    binary = pa.types.is_binary(value_type) or pa.types.is_large_binary(value_type)
    pad = data.draw(st.sampled_from([None, "", "pad"]))
    pad = pad.encode() if binary and pad is not None else pad
    out = asp.pad_or_truncate(arr, length, pad_value=pad, side=side)
    out.validate(full=True)
    assert isinstance(out.type, pa.FixedSizeListType) and out.type.list_size == length
    assert out.to_pylist() == ref.pad_or_truncate(rows, length, pad, side)
    chunked = asp.pad_or_truncate(pa.chunked_array([arr, arr]), length, pad_value=pad, side=side)
    assert chunked.to_pylist() == 2 * ref.pad_or_truncate(rows, length, pad, side)


def test_pad_or_truncate_vectors_and_chunks() -> None:
    emb = np.arange(12, dtype=np.float32).reshape(6, 2)
    j = asp.Jagged(emb, np.array([1, 4, 4, 6]))
    dense = asp.pad_or_truncate(j, 2, side="left")
    assert dense.shape == (3, 2, 2)
    np.testing.assert_array_equal(dense[0], emb[2:4])
    np.testing.assert_array_equal(dense[1], 0)
    np.testing.assert_array_equal(dense[2], emb[4:6])
    arr = j.to_arrow()
    out = asp.pad_or_truncate(arr, 3)
    assert out.type == pa.list_(pa.field("item", pa.list_(pa.float32(), 2)), 3)
    assert out.to_pylist()[1] == [[0.0, 0.0]] * 3
    chunked = asp.pad_or_truncate(pa.chunked_array([pa.array(CAFFE2)]), 2)
    assert chunked.type == pa.list_(pa.int64(), 2)
    assert chunked.to_pylist() == ref.pad_or_truncate(CAFFE2, 2, 0, "right")
    empty = asp.pad_or_truncate(pa.chunked_array([], pa.large_list(pa.int8())), 2)
    assert empty.type == pa.list_(pa.int8(), 2)
    bools = asp.pad_or_truncate(pa.array([[True], None]), 2, pad_value=False)
    assert bools.to_pylist() == [[True, False], None]


def test_pad_or_truncate_errors() -> None:
    arr = pa.array(CAFFE2)
    with pytest.raises(ValueError, match="pad_or_truncate: side must be 'right' or 'left', got"
                                         " 'both'"):
        asp.pad_or_truncate(arr, 2, side="both")
    with pytest.raises(ValueError, match="pad_or_truncate: length must be non-negative, got -1"):
        asp.pad_or_truncate(arr, -1)
    with pytest.raises(ValueError, match="pad_or_truncate: pad_value 0.5 does not fit the values"
                                         " dtype int64"):
        asp.pad_or_truncate(arr, 2, pad_value=0.5)
    with pytest.raises(ValueError, match="pad_value 'x' does not fit the values dtype int64"):
        asp.pad_or_truncate(arr, 2, pad_value="x")
    with pytest.raises(TypeError, match="pad_or_truncate: pad_value must be a str or None for"
                                        " values of Arrow type string, got int"):
        asp.pad_or_truncate(pa.array([["a"]]), 2)
    with pytest.raises(TypeError, match="pad_value must be a bytes or None for values of Arrow"
                                        " type binary, got str"):
        asp.pad_or_truncate(pa.array([[b"a"]]), 2, pad_value="")
    with pytest.raises(TypeError, match="values of Arrow type dictionary"):
        asp.pad_or_truncate(pa.array([["a"]]).cast(
            pa.list_(pa.dictionary(pa.int32(), pa.string()))), 2)
    with pytest.raises(TypeError, match="pad_or_truncate: nested lists are not supported"):
        asp.pad_or_truncate(pa.array([[[1]]]), 2)
    with pytest.raises(TypeError, match="pad_or_truncate: nested lists are not supported"):
        asp.pad_or_truncate(asp.Jagged.from_list([[[1]]]), 2)
    with pytest.raises(TypeError, match="pad_or_truncate: values must be an Arrow list array or"
                                        " a Jagged, got Arrow type int64"):
        asp.pad_or_truncate(pa.array([1]), 2)
    with pytest.raises(TypeError, match="pad_or_truncate: values must be an Arrow list array, a"
                                        " ChunkedArray or a Jagged, got ndarray"):
        asp.pad_or_truncate(np.array([1]), 2)


def test_pad_or_truncate_refuses_a_result_too_large_to_allocate() -> None:
    # 2**63 bytes: more than numpy can address.
    with pytest.raises(ArrowSparseValueError, match=r"^pad_or_truncate: the result needs "
                       r"8.0 EiB \(shape \(2, 576460752303423488\) x 8 bytes\), more than "
                       r"this machine's memory") as info:
        asp.pad_or_truncate(pa.array([[1, 2], [3]]), 2**59)
    assert isinstance(info.value, ArrowSparseError)


# -------------------------------------------------------------- drop_nulls and fill_null
@pytest.mark.hypothesis
@given(st.one_of(int_arrays(), string_list_arrays()))
def test_drop_nulls(case: tuple[pa.Array, list[Any]]) -> None:
    arr, rows = case
    out = asp.drop_nulls(arr)
    out.validate(full=True)
    assert out.type == arr.type
    assert out.to_pylist() == ref.drop_nulls(rows)
    if pa.types.is_integer(arr.type.value_type):
        j = asp.drop_nulls(asp.Jagged.from_arrow(arr))
        assert j.to_list() == ref.drop_nulls(rows) and j.offsets.dtype == j.offsets.dtype


def test_drop_nulls_without_nulls_returns_input() -> None:
    arr = pa.array(CAFFE2)
    assert asp.drop_nulls(arr) is arr
    j = asp.Jagged.from_arrow(arr)
    assert asp.drop_nulls(j) is j


@pytest.mark.hypothesis
@given(st.data())
def test_fill_null(data: st.DataObject) -> None:
    arr, rows = data.draw(st.one_of(int_arrays(), string_list_arrays()))
    empty_rows = data.draw(st.booleans())
    t = arr.type.value_type
    value: Any = 5 if pa.types.is_integer(t) else b"?" if pa.types.is_binary(t) or \
        pa.types.is_large_binary(t) else "?"
    out = asp.fill_null(arr, value, empty_null_rows=empty_rows)
    out.validate(full=True)
    assert out.type == arr.type
    assert out.to_pylist() == ref.fill_null(rows, value, empty_rows)
    if not empty_rows:
        assert same_buffer(out.buffers()[1], arr.buffers()[1]) or len(arr) == 0
    if pa.types.is_integer(t):
        j = asp.fill_null(asp.Jagged.from_arrow(arr), value, empty_null_rows=empty_rows)
        assert j.to_list() == ref.fill_null(rows, value, empty_rows)


def test_fill_null_null_rows_covering_values() -> None:
    # Arrow allows a null row over a non-empty range; emptying it rebuilds the offsets.
    values = pa.array([1, None, 3, 4])
    arr = pa.ListArray.from_arrays(pa.array([0, 2, 4], pa.int32()), values,
                                   mask=pa.array([False, True]))
    assert arr.to_pylist() == [[1, None], None]
    out = asp.fill_null(arr, 0, empty_null_rows=True)
    assert out.to_pylist() == [[1, 0], []] and out.null_count == 0
    j = asp.fill_null(asp.Jagged.from_arrow(arr), 0, empty_null_rows=True)
    assert j.to_list() == [[1, 0], []] and j.validity is None
    emb = asp.Jagged(np.ones((3, 2)), np.array([0, 1, 3]),
                     values_validity=np.array([1, 0, 1], bool))
    assert asp.fill_null(emb, 9).to_list() == [[[1.0, 1.0]], [[9.0, 9.0], [1.0, 1.0]]]


def test_null_handling_errors() -> None:
    with pytest.raises(TypeError, match="fill_null: value must be a str for values of Arrow type"
                                        " string, got int"):
        asp.fill_null(pa.array([["a", None]]), 1)
    with pytest.raises(TypeError, match="fill_null: value must be a bytes for values of Arrow"
                                        " type binary"):
        asp.fill_null(pa.array([[b"a"]]), "a")
    with pytest.raises(ValueError, match="fill_null: value 300 does not fit the values dtype"
                                         " uint8"):
        asp.fill_null(pa.array([[1, None]], pa.list_(pa.uint8())), 300)
    with pytest.raises(TypeError, match="fill_null: empty_null_rows must be True or False, got"
                                        " int"):
        asp.fill_null(pa.array([[1]]), 0, empty_null_rows=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="drop_nulls: values must be an Arrow list array, a"
                                        " ChunkedArray or a Jagged, got list"):
        asp.drop_nulls([[1, None]])
    with pytest.raises(TypeError, match="drop_nulls: nested lists are not supported"):
        asp.drop_nulls(pa.array([[[1]]]))
    with pytest.raises(TypeError, match="drop_nulls: values of Arrow type struct<a: int64> are"
                                        " not supported"):
        asp.drop_nulls(pa.array([[{"a": 1}]]))


# ------------------------------------------------------ layouts the builders rarely make
def test_child_with_offset_and_null_rows_over_values() -> None:
    arr, _ = child_with_offset()
    assert asp.drop_nulls(arr).to_pylist() == [[1, 3], None, [5]]
    assert asp.fill_null(arr, 0).to_pylist() == [[1, 0, 3], None, [5]]
    assert asp.fill_null(arr, 0, empty_null_rows=True).to_pylist() == [[1, 0, 3], [], [5]]
    assert asp.pad_or_truncate(arr, 2, side="left").to_pylist() == [[None, 3], None, [0, 5]]


def test_empty_inputs() -> None:
    for t in (pa.list_(pa.int64()), pa.large_list(pa.string())):
        empty = pa.array([], type=t)
        assert asp.drop_nulls(empty).to_pylist() == []
    assert asp.pad_or_truncate(pa.array([], pa.list_(pa.int8())), 3).type == \
        pa.list_(pa.int8(), 3)


# -------------------------------------------------------- every backend (the device too)
@pytest.mark.parametrize("name", [n for n in COLUMNS if n != "nested"])
def test_padding_and_null_handling_on_every_backend(backend: str, name: str) -> None:
    host = asp.Jagged.from_arrow(COLUMNS[name])
    x = on(backend, COLUMNS[name])
    for length, side in ((3, "left"), (0, "right"), (5, "right")):
        got = from_backend(asp.pad_or_truncate(x, length, pad_value=7, side=side), backend)
        want = asp.pad_or_truncate(host, length, pad_value=7, side=side)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    same_jagged(asp.drop_nulls(x), asp.drop_nulls(host), backend)
    same_jagged(asp.fill_null(x, 0), asp.fill_null(host, 0), backend)
    same_jagged(asp.fill_null(x, 9, empty_null_rows=True),
                asp.fill_null(host, 9, empty_null_rows=True), backend)


def test_padding_vectors_on_every_backend(backend: str) -> None:
    vectors = asp.Jagged(np.arange(12.0).reshape(6, 2), np.array([1, 3, 3, 6]),
                         validity=np.array([True, False, True]),
                         values_validity=np.array([True] * 4 + [False, True]))
    x = to_backend(vectors, backend)
    got = from_backend(asp.pad_or_truncate(x, 2, side="left"), backend)
    np.testing.assert_array_equal(got, asp.pad_or_truncate(vectors, 2, side="left"))
    same_jagged(asp.fill_null(x, -1.0), asp.fill_null(vectors, -1.0), backend)


def test_device_inputs_of_the_wrong_kind_are_refused() -> None:
    with emulated_cupy() as cp:
        x = asp.Jagged.from_arrow(COLUMNS["caffe2"]).to_device("cuda")
        with pytest.raises(ValueError, match="^pad_or_truncate: pad_value 0.5 does not fit"):
            asp.pad_or_truncate(x, 2, pad_value=0.5)
        with pytest.raises(TypeError, match="^drop_nulls: values must be an Arrow list array, "
                           "a ChunkedArray or a Jagged, got ndarray"):
            asp.drop_nulls(cp.asarray(np.zeros(2)))


#: Public calls and the kernels they must launch through the emulator.
PUBLIC: dict[str, tuple[Callable[[], Any], set[str]]] = {
    "pad_or_truncate": (lambda: asp.pad_or_truncate(_ints(), 3, side="left"),
                        {"pad_or_truncate"}),
    "pad_or_truncate-strings": (lambda: asp.pad_or_truncate(_words(), 2, pad_value="-"),
                                {"pad_or_truncate"}),
    "drop_nulls": (lambda: asp.drop_nulls(_ints()), {"kept_positions"}),
    "fill_null": (lambda: asp.fill_null(_ranged_nulls(), 0, empty_null_rows=True),
                  {"kept_lengths", "kept_positions"}),
}


@pytest.mark.parametrize("case", list(PUBLIC))
def test_public_transforms_through_the_emulator(case: str) -> None:
    run_through_the_emulator(case, *PUBLIC[case])
