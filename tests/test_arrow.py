"""The one way list data comes in (arrow_sparse/_arrow.py): checked offsets, C-interface inputs.

pyarrow builds a list array from buffers after checking only its first and last offset,
so an array whose offsets go backwards or negative in between is a valid pyarrow object.
Every public function that takes list data must refuse it with a ValueError naming
itself before a kernel reads through the offsets (issue 12: ``hash_bucket`` read 13
values of a 10-value buffer, and segfaulted on large_list offsets ``[0, -2**40, 10]``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse import _arrow
from arrow_sparse.errors import ArrowSparseError, ArrowSparseTypeError

#: Offsets pyarrow accepts from buffers (first and last within the 10 child values).
MALFORMED = {
    "negative": ([0, -3, 10], False),
    "backwards": ([0, 5, 3, 10], False),
    "far negative large_list": ([0, -2**40, 10], True),
    "backwards in a null row": ([0, 6, 2, 10], False),
}


def malformed(name: str, child: pa.Array | None = None) -> pa.Array:
    offsets, large = MALFORMED[name]
    child = pa.array(np.arange(10, dtype=np.int64)) if child is None else child
    list_type = (pa.large_list if large else pa.list_)(child.type)
    validity = None
    if name == "backwards in a null row":  # row 1 is null: its range is never read
        validity = pa.py_buffer(np.packbits([1, 0, 1], bitorder="little"))
    return pa.Array.from_buffers(
        list_type, len(offsets) - 1,
        [validity, pa.py_buffer(np.array(offsets, np.int64 if large else np.int32))],
        children=[child])


def _float_values(a: pa.Array) -> pa.Array:
    """A list of integers with float64 values instead, its offsets buffer as it is.

    Rebuilt from the buffers (not by ``cast``, which may read through the offsets), so a
    malformed array stays malformed; other arrays are returned as they are.
    """
    if not (pa.types.is_list(a.type) or pa.types.is_large_list(a.type)) \
            or not pa.types.is_integer(a.type.value_type):
        return a
    make = pa.large_list if pa.types.is_large_list(a.type) else pa.list_
    return pa.Array.from_buffers(make(pa.float64()), len(a), a.buffers()[:2],
                                 children=[a.values.cast(pa.float64())], offset=a.offset)


VOCABULARY = asp.fit_vocabulary(pa.array([[1, 2, 3]]))
TABLE = np.arange(20.0).reshape(10, 2)

#: Every public function that takes list data, called with the list as its input.
TAKES_LISTS: dict[str, Callable[[pa.Array], Any]] = {
    "Jagged.from_arrow": asp.Jagged.from_arrow,
    "segment_sum": asp.segment_sum,
    "segment_mean": asp.segment_mean,
    "segment_max": asp.segment_max,
    "segment_argmax": asp.segment_argmax,
    "segment_weighted_sum": lambda a: asp.segment_weighted_sum(a, a),
    "sparse_segment_sum": lambda a: asp.sparse_segment_sum(TABLE, a),
    "embedding_bag": lambda a: asp.embedding_bag(TABLE, a),
    "lookup": lambda a: asp.embedding.lookup(TABLE, a),
    "hash_bucket": lambda a: asp.hash_bucket(a, 10),
    "bucketize": lambda a: asp.bucketize(a, [1, 5]),
    "categorify": lambda a: asp.categorify(a, VOCABULARY),
    "value_counts": asp.value_counts,
    "fit_vocabulary": asp.fit_vocabulary,
    "length_stats": asp.length_stats,
    "pad_or_truncate": lambda a: asp.pad_or_truncate(a, 3),
    "fill_null": lambda a: asp.fill_null(a, 0),
    "drop_nulls": asp.drop_nulls,
    "jagged_to_padded_dense": asp.jagged_to_padded_dense,
    "list_slice": lambda a: asp.list_slice(a, 0, 2),
    "truncate": lambda a: asp.truncate(a, 2),
    "jagged_unique": asp.jagged_unique,
    "index_select": lambda a: asp.index_select(a, [0]),
    "segment_softmax": lambda a: asp.segment_softmax(_float_values(a)),
    "segment_cumsum": asp.segment_cumsum,
    "map_values": lambda a: asp.map_values(a, np.negative),
    "repeat": lambda a: asp.repeat(np.arange(len(a)), a),
}


@pytest.mark.parametrize("name", list(MALFORMED))
@pytest.mark.parametrize("func", list(TAKES_LISTS))
def test_malformed_offsets_are_refused_by_every_list_function(func: str, name: str) -> None:
    array = malformed(name)
    with pytest.raises(ValueError, match=r"offsets must be (non-decreasing|non-negative)") \
            as info:
        TAKES_LISTS[func](array)
    assert isinstance(info.value, ArrowSparseError)


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_offsets_of_strings_are_refused(name: str) -> None:
    array = malformed(name, pa.array([f"s{i}" for i in range(10)]))
    for call in (lambda a: asp.hash_bucket(a, 10), asp.value_counts, asp.drop_nulls,
                 lambda a: asp.list_slice(a, 0, 1)):
        with pytest.raises(ValueError, match="offsets must be"):
            call(array)


def test_malformed_string_offsets_inside_a_list_are_refused() -> None:
    strings = pa.Array.from_buffers(pa.string(), 3, [None, pa.py_buffer(
        np.array([0, 4, 1, 6], np.int32)), pa.py_buffer(b"abcdef")])
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 3], pa.int32()), strings)
    with pytest.raises(ValueError, match=r"^hash_bucket: values offsets must be non-decreasing "
                                         r"\(first at position 2: 1\)"):
        asp.hash_bucket(lists, 10)


def test_the_error_names_the_function_the_argument_and_the_position() -> None:
    with pytest.raises(ValueError, match=r"^segment_sum: values offsets must be non-decreasing "
                                         r"\(first at position 2: 3\)$"):
        asp.segment_sum(malformed("backwards"))
    with pytest.raises(ValueError, match=r"^Jagged.from_arrow: array offsets must be "
                                         r"non-decreasing \(first at position 1: -3\)$"):
        asp.Jagged.from_arrow(malformed("negative"))


def test_list_level_unpacks_a_sliced_array_without_copying() -> None:
    arr = pa.array([[1, 2], None, [3], [4, 5, 6]]).slice(1, 3)
    level = _arrow.list_level("f", "x", arr)
    assert level.offsets.tolist() == [2, 2, 3, 6]
    assert level.validity.tolist() == [False, True, True]
    assert level.child is not None and len(level.child) == 6
    start = arr.buffers()[1].address + 4 * arr.offset
    assert level.offsets.ctypes.data == start


def test_list_level_converts_list_views() -> None:
    view = pa.array([[1, 2], None, [3]], type=pa.list_view(pa.int64()))
    level = _arrow.list_level("f", "x", view)
    assert pa.types.is_list(level.array.type)
    assert level.array.to_pylist() == [[1, 2], None, [3]]


def test_list_level_refuses_other_types() -> None:
    with pytest.raises(TypeError, match="^f: x must be an Arrow list array, got int64$"):
        _arrow.list_level("f", "x", pa.array([1, 2]))


def test_list_values_of_strings_are_refused() -> None:
    with pytest.raises(ArrowSparseTypeError, match="^Jagged.from_arrow: list values of Arrow "
                                                   "type string are not supported") as info:
        asp.Jagged.from_arrow(pa.array([["a"]]))
    assert isinstance(info.value, ArrowSparseError)


def test_numpy_dtype_refuses_a_type_without_a_numeric_one() -> None:
    with pytest.raises(ArrowSparseTypeError,
                       match="^Arrow type string has no numeric numpy dtype") as info:
        _arrow.numpy_dtype(pa.string())
    assert isinstance(info.value, ArrowSparseError)


def test_as_one_array() -> None:
    chunk = pa.array([[1], [2, 3]])
    assert _arrow.as_one_array(pa.chunked_array([chunk])) is not None
    assert _arrow.as_one_array(pa.chunked_array([chunk])).buffers()[1].address == \
        chunk.buffers()[1].address  # one chunk: zero-copy
    assert _arrow.as_one_array(pa.chunked_array([chunk, chunk])).to_pylist() == \
        [[1], [2, 3], [1], [2, 3]]
    assert _arrow.as_one_array(pa.chunked_array([], type=chunk.type)).to_pylist() == []


# ------------------------------------------------- the Arrow C data interface
def test_polars_and_pandas_series_are_read_through_the_c_interface() -> None:
    pl = pytest.importorskip("polars")
    pd = pytest.importorskip("pandas")
    expected = [6, 19, None, 9]
    rows = [[1, 2, 3], [2, 4, 6, 7], None, [3, 6]]
    polars_series = pl.Series("ids", rows)
    pandas_series = pd.Series(rows, dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    for series in (polars_series, pandas_series):
        assert asp.Jagged.from_arrow(series).to_list() == rows
        assert pa.chunked_array(asp.segment_sum(series)).to_pylist() == expected
        assert pa.chunked_array(asp.hash_bucket(series, 10)).to_pylist() == \
            asp.hash_bucket(pa.array(rows), 10).to_pylist()
        assert pa.chunked_array(asp.list_slice(series, 0, 1)).to_pylist() == \
            [[1], [2], None, [3]]
        table = np.arange(16.0).reshape(8, 2)
        assert np.array_equal(np.asarray(asp.embedding_bag(table, series).to_pylist()[1]),
                              table[[2, 4, 6, 7]].sum(axis=0))


def test_a_duckdb_relation_of_one_column_is_read_as_that_column() -> None:
    duckdb = pytest.importorskip("duckdb")
    relation = duckdb.sql("select [1, 2, 3] as ids union all select [3, 6] order by 1")
    assert sorted(asp.Jagged.from_arrow(relation).to_list()) == [[1, 2, 3], [3, 6]]


def test_as_arrow_leaves_everything_else_alone() -> None:
    values = np.arange(3)
    j = asp.Jagged.from_list([[1]])
    table = pa.table({"a": [1]})
    for x in (values, j, table, [1, 2], None):
        assert _arrow.as_arrow(x) is x


# ------------------------------------------------- writers read every buffer
@pytest.mark.parametrize("name", list(MALFORMED))
@pytest.mark.parametrize("writer", ["parquet", "ipc"])
def test_writers_refuse_malformed_list_columns_before_writing(tmp_path: Any, writer: str,
                                                              name: str) -> None:
    # pyarrow's Parquet writer segfaulted on these (issue 14); nothing may be left behind.
    ids = malformed(name)
    table = pa.table({"ok": pa.array(range(len(ids))), "ids": ids})
    path = tmp_path / f"out.{writer}"
    write = asp.io.write_parquet if writer == "parquet" else asp.io.write_ipc
    func = "write_parquet" if writer == "parquet" else "write_ipc"
    with pytest.raises(ValueError, match=rf"^{func}: column 'ids' offsets must be non-"):
        write(table, path)
    assert list(tmp_path.iterdir()) == []


def test_writers_check_nested_maps_structs_and_strings(tmp_path: Any) -> None:
    strings = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(
        np.array([0, 5, 2], np.int32)), pa.py_buffer(b"abcde")])
    nested = pa.StructArray.from_arrays([strings], names=["name"])
    with pytest.raises(ValueError, match=r"^write_parquet: column 's' field 'name' offsets "
                                         r"must be non-decreasing \(first at position 2: 2\)"):
        asp.io.write_parquet(pa.table({"s": nested}), tmp_path / "s.parquet")
    good = pa.table({"m": pa.array([[(1, 2)], []], type=pa.map_(pa.int32(), pa.int32())),
                     "l": pa.array([[["a"]], None])})
    assert asp.io.write_parquet(good, tmp_path / "good.parquet") == 2


# ------------------------------------------- issue 14: what the list fuzzer found
def _strings_backwards() -> pa.Array:
    """list<string> with good list offsets over strings whose offsets go backwards."""
    strings = pa.Array.from_buffers(pa.string(), 4, [None, pa.py_buffer(
        np.array([5, 6, 1, 8, 10], np.int32)), pa.py_buffer(b"abcdefghijkl")])
    return pa.LargeListArray.from_arrays(pa.array([0, 2, 4], pa.int64()), strings)


@pytest.mark.parametrize("call", [
    lambda a: asp.truncate(a, 1),  # segfaulted
    lambda a: asp.list_slice(a, 0, 1),  # pyarrow's "Negative buffer resize"
    lambda a: asp.index_select(a, [1, 0]),
    asp.jagged_unique,
    lambda a: asp.repeat(np.arange(len(a)), a),
], ids=["truncate", "list_slice", "index_select", "jagged_unique", "repeat"])
def test_string_lists_with_malformed_string_offsets_are_refused_issue14(call: Any) -> None:
    with pytest.raises(ValueError, match=r": data values offsets must be non-decreasing "
                                         r"\(first at position 2: 1\)|: like values offsets"):
        call(_strings_backwards())


def test_length_stats_checks_every_level_issue14() -> None:
    inner = malformed("backwards")
    nested = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), inner)
    with pytest.raises(ValueError, match=r"^length_stats: values values offsets must be "
                                         r"non-decreasing \(first at position 2: 3\)"):
        asp.length_stats(nested)


def _list_view(starts: list[int], sizes: list[int]) -> pa.Array:
    return pa.Array.from_buffers(pa.list_view(pa.int64()), len(starts), [
        None, pa.py_buffer(np.array(starts, np.int32)), pa.py_buffer(np.array(sizes, np.int32))],
        children=[pa.array(np.arange(10, dtype=np.int64))])


@pytest.mark.parametrize(("starts", "sizes", "match"), [
    ([0, 8], [3, 5], r"offsets \+ sizes exceed the number of values 10 \(first at position "
                     r"1: 13\)"),
    ([-1, 2], [1, 1], r"offsets must be non-negative \(first at position 0: -1\)"),
    ([0, 2], [1, -1], r"sizes must be non-negative \(first at position 1: -1\)"),
])
@pytest.mark.parametrize("func", list(TAKES_LISTS))
def test_list_views_leaving_the_child_are_refused_issue14(func: str, starts: list[int],
                                                          sizes: list[int], match: str) -> None:
    # Before: pyarrow's ArrowIndexError from take, or numpy's ValueError from repeat.
    with pytest.raises(ValueError, match=match) as info:
        TAKES_LISTS[func](_list_view(starts, sizes))
    assert isinstance(info.value, ArrowSparseError)
