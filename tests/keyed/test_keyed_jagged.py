"""Tests of ``arrow_sparse.keyed.keyed_jagged``: the KeyedJagged class.

Construction (from Arrow map columns, record batches and tables, dicts, the constructor),
the accessors, ``to_arrow``, ``validate`` and the repr, each against a plain-Python reading
of ``{key: rows}`` tables (``_reference.py``; a row is a list of values or None for a null
row), with its errors and property test (Hypothesis, on the host: KeyedJagged is built
there). The device part: the constructor and the accessors on every backend of the
``backend`` fixture, the device checks, and what the device path reads back. The
reshaping methods are tested with their functions in ``test_reshape.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse import KeyedJagged
from arrow_sparse._arrow import numpy_dtype
from arrow_sparse.errors import (
    ArrowSparseIndexError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)
from arrow_sparse.kernels import cuda
from tests.cuda_emu.fake_cupy import emulated_cupy

from ..conftest import on_device, to_backend
from ._helpers import (
    ABC,
    ABC_W,
    CAFFE2_ROWS,
    MAKE_IDS,
    MAKES,
    MAP_TYPE,
    RESHAPE_OPS,
    abc,
    assert_kj,
    batch_table,
    buffer_view,
    caffe2_map,
    host_of,
    nn,
    same_kj,
    same_on_backend,
)
from ._reference import Table, ref_from_maps
from ._strategies import map_rows, weights_of_rows


# ----------------------------------------------------- from_arrow: map columns
def test_from_arrow_map_caffe2_example() -> None:
    m = caffe2_map()
    # Caffe2's per-example layout: the values of each example's map, in entry order
    assert m.items.flatten().to_pylist() == [10, 11, 101, 11, 50, 102, 103]
    kj = KeyedJagged.from_arrow(m)
    keys, table = ref_from_maps(CAFFE2_ROWS)
    assert_kj(kj, keys, table)
    assert kj.keys() == [1, 2, 3]
    assert kj.values.tolist() == [10, 11, 11, 50, 101, 102, 103]  # key-major
    assert kj.lengths.tolist() == [2, 1, 0, 1, 1, 2]
    assert kj.lengths.dtype == np.int32
    assert kj.offset_per_key().tolist() == [0, 3, 4, 7]
    assert kj.length_per_key().tolist() == [3, 1, 3]
    assert kj[2].to_list() == [[], [50]]


def test_from_arrow_map_keys_select_and_order() -> None:
    kj = KeyedJagged.from_arrow(caffe2_map(), keys=[3, 1, 7])
    keys, table = ref_from_maps(CAFFE2_ROWS, [3, 1, 7])
    assert_kj(kj, keys, table)
    assert kj[7].to_list() == [[], []]  # a key found in no row: all empty


def test_from_arrow_map_string_keys() -> None:
    rows = [[("b", [1]), ("a", [2, 3])], [], [("c", [4])]]
    m = pa.array(rows, type=pa.map_(pa.string(), pa.list_(pa.int32())))
    kj = KeyedJagged.from_arrow(m)
    assert_kj(kj, *ref_from_maps(rows))
    assert kj.keys() == ["a", "b", "c"]
    assert kj.dtype == np.int32


def test_from_arrow_map_null_map_and_null_lists() -> None:
    rows = [[(1, [10, 11]), (3, None)], None, [(2, None), (2, [5]), (3, [6])]]
    kj = KeyedJagged.from_arrow(pa.array(rows, type=MAP_TYPE))
    keys, table = ref_from_maps(rows)
    assert_kj(kj, keys, table)
    # a null map nulls every key of its row; a key whose only entry is null is null
    assert table[3] == [None, None, [6]]
    assert table[2] == [[], None, [5]]


def test_from_arrow_map_repeated_keys_are_concatenated() -> None:
    rows = [[(1, [1]), (2, [2]), (1, [3, 4])]]
    kj = KeyedJagged.from_arrow(pa.array(rows, type=MAP_TYPE))
    assert kj[1].to_list() == [[1, 3, 4]]
    assert_kj(kj, *ref_from_maps(rows))


def test_from_arrow_map_sliced_chunked_and_large() -> None:
    rows: list[Any] = CAFFE2_ROWS + [None, [(5, [1, 2, 3])], [(1, [])]]
    m = pa.array(rows, type=MAP_TYPE)
    sliced = m.slice(1, 4)
    assert sliced.offset == 1
    assert_kj(KeyedJagged.from_arrow(sliced), *ref_from_maps(rows[1:5]))
    chunked = pa.chunked_array([m.slice(0, 2), m.slice(2, 1), m.slice(3)])
    assert_kj(KeyedJagged.from_arrow(chunked), *ref_from_maps(rows))
    empty = KeyedJagged.from_arrow(pa.chunked_array([], type=MAP_TYPE))
    assert (empty.num_keys, empty.batch_size) == (0, 0)
    large = pa.array(rows, type=pa.map_(pa.int64(), pa.large_list(pa.float64())))
    kj = KeyedJagged.from_arrow(large)
    assert kj.lengths.dtype == np.int64
    assert kj.to_arrow().schema.field("1").type == pa.large_list(pa.float64())
    assert_kj(kj, *ref_from_maps(rows))


def test_from_arrow_map_weights() -> None:
    rows = [[(1, [10, 11]), (3, None)], None, [(1, [11]), (2, [50]), (1, [7])]]
    wrows = [[(1, [0.5, 1.5]), (3, None)], None, [(1, [2.0]), (2, [3.0]), (1, [4.0])]]
    wtype = pa.map_(pa.int64(), pa.list_(pa.float32()))
    kj = KeyedJagged.from_arrow(pa.array(rows, type=MAP_TYPE), weights=pa.array(wrows, wtype))
    keys, table = ref_from_maps(rows)
    _, wtable = ref_from_maps(wrows)
    assert_kj(kj, keys, table, wtable)
    assert nn(kj.weights).dtype == np.float32
    assert nn(kj.weights).tolist() == [0.5, 1.5, 2.0, 4.0, 3.0]


def test_from_arrow_map_weights_errors() -> None:
    m = caffe2_map()
    wtype = pa.map_(pa.int64(), pa.list_(pa.float64()))
    with pytest.raises(ArrowSparseTypeError, match="weights for a map must be a parallel map"):
        KeyedJagged.from_arrow(m, weights={1: "w"})
    with pytest.raises(ArrowSparseTypeError, match="weights must be a map<key, list<value>>"):
        KeyedJagged.from_arrow(m, weights=pa.array([[1.0]]))
    with pytest.raises(ArrowSparseValueError, match="weights has 1 maps but .* has 2"):
        KeyedJagged.from_arrow(m, weights=pa.array([[(1, [1.0])]], wtype))
    fewer = [[(1, [1.0, 2.0])], [(1, [1.0]), (2, [1.0]), (3, [1.0, 1.0])]]
    with pytest.raises(ArrowSparseValueError,
                       match=r"different number of entries .*\(first at position 0: 1\)"):
        KeyedJagged.from_arrow(m, weights=pa.array(fewer, wtype))
    other_keys = [[(1, [1.0, 2.0]), (4, [1.0])], [(1, [1.0]), (2, [1.0]), (3, [1.0, 1.0])]]
    with pytest.raises(ArrowSparseValueError,
                       match=r"keys differ .*has 3\) \(first at position 0: 4\)"):
        KeyedJagged.from_arrow(m, weights=pa.array(other_keys, wtype))
    other_lengths = [[(1, [1.0, 2.0]), (3, [1.0])], [(1, [1.0]), (2, [1.0]), (3, [1.0])]]
    with pytest.raises(ArrowSparseValueError,
                       match=r"list lengths differ .*key 3 has 2\) \(first at position 1: 1\)"):
        KeyedJagged.from_arrow(m, weights=pa.array(other_lengths, wtype))
    with_null = [[(1, [1.0, None]), (3, [1.0])], [(1, [1.0]), (2, [1.0]), (3, [1.0, 1.0])]]
    with pytest.raises(ArrowSparseValueError, match="weights has null values inside its lists"):
        KeyedJagged.from_arrow(m, weights=pa.array(with_null, wtype))


def test_from_arrow_map_errors() -> None:
    m = caffe2_map()
    with pytest.raises(ArrowSparseTypeError, match="keys must be map keys of type int64"):
        KeyedJagged.from_arrow(m, keys=["a"])
    with pytest.raises(ArrowSparseValueError,
                       match=r"keys must be unique \(first at position 1: 1\)"):
        KeyedJagged.from_arrow(m, keys=[1, 1])
    nested = pa.array([[(1, [[1]])]], type=pa.map_(pa.int64(), pa.list_(pa.list_(pa.int64()))))
    with pytest.raises(ArrowSparseTypeError, match="items must hold lists of numbers"):
        KeyedJagged.from_arrow(nested)
    scalar_items = pa.array([[(1, 2)]], type=pa.map_(pa.int64(), pa.int64()))
    with pytest.raises(ArrowSparseTypeError, match="items must be a list or large_list"):
        KeyedJagged.from_arrow(scalar_items)
    null_inside = pa.array([[(1, [1, None])]], type=MAP_TYPE)
    with pytest.raises(ArrowSparseValueError, match="null values inside its lists"):
        KeyedJagged.from_arrow(null_inside)
    malformed = pa.Array.from_buffers(MAP_TYPE, 2, [None, pa.py_buffer(np.array([0, 3, 1],
                                                                              np.int32))],
                                      children=[pa.array([[(1, [1]), (2, [2]), (3, [3])]],
                                                         type=MAP_TYPE).values])
    with pytest.raises(ArrowSparseValueError,
                       match=r"batch_or_map_array offsets must be non-decreasing "
                             r"\(first at position 2: 1\)"):
        KeyedJagged.from_arrow(malformed)


@pytest.mark.hypothesis
@settings(deadline=None)
@given(rows=map_rows(), data=st.data())
def test_from_arrow_map_matches_reference(rows: list[Any], data: Any) -> None:
    large = data.draw(st.booleans(), label="large")
    list_type = pa.large_list if large else pa.list_
    m = pa.array(rows, type=pa.map_(pa.int64(), list_type(pa.int64())))
    w = pa.array(weights_of_rows(rows), type=pa.map_(pa.int64(), list_type(pa.float64())))
    start = data.draw(st.integers(0, len(rows)), label="start")
    stop = data.draw(st.integers(start, len(rows)), label="stop")
    rows, m, w = rows[start:stop], m.slice(start, stop - start), w.slice(start, stop - start)
    keys = data.draw(st.one_of(st.none(), st.lists(st.integers(0, 8), unique=True, max_size=5)),
                     label="keys")
    cut = data.draw(st.integers(0, len(rows)), label="cut")
    as_chunks = data.draw(st.booleans(), label="chunked")
    source = pa.chunked_array([m.slice(0, cut), m.slice(cut)]) if as_chunks else m
    kj = KeyedJagged.from_arrow(source, keys=keys, weights=w)
    ref_keys, table = ref_from_maps(rows, keys)
    _, wtable = ref_from_maps(weights_of_rows(rows), ref_keys)
    assert_kj(kj, ref_keys, table, wtable)
    assert kj.lengths.dtype == (np.int64 if large else np.int32)
    # to_arrow gives the same rows back, one list column per key
    batch = kj.to_arrow()
    assert batch.to_pydict() == {
        **{str(k): table[k] for k in ref_keys},
        **{f"{k}_weights": wtable[k] for k in ref_keys}}


# --------------------------------------- from_arrow: record batches and tables
def test_from_arrow_batch_null_and_empty_rows() -> None:
    batch = pa.record_batch({"a": pa.array([[1, 2, 3], None, [], [3, 6]]),
                             "b": pa.array([[7], [8, 9], None, None])})
    kj = KeyedJagged.from_arrow(batch)
    assert_kj(kj, ["a", "b"], batch_table(batch, ["a", "b"]))
    assert kj.lengths.tolist() == [3, 0, 0, 2, 1, 2, 0, 0]
    assert nn(kj.validity).tolist() == [True, False, True, True, True, True, False, False]
    assert nn(kj["a"].validity).tolist() == [True, False, True, True]


def test_from_arrow_batch_null_row_with_values_is_not_read() -> None:
    # Arrow lets a null row's offsets cover values; they must not leak into the layout
    a = pa.ListArray.from_arrays(pa.array([0, 2, 5, 6], pa.int32()), pa.array([1, 2, 3, 4, 5, 6]),
                                 mask=pa.array([False, True, False]))
    kj = KeyedJagged.from_arrow(pa.record_batch({"a": a}))
    assert_kj(kj, ["a"], {"a": [[1, 2], None, [6]]})
    assert kj.values.tolist() == [1, 2, 6]


def test_from_arrow_batch_sliced() -> None:
    batch = pa.record_batch({"a": pa.array([[1, 2], [3], [], [4, 5, 6]]),
                             "b": pa.array([[9], None, [8, 7], [6]])}).slice(1, 2)
    assert batch.column(0).offsets[0].as_py() == 2  # offsets[0] > 0
    kj = KeyedJagged.from_arrow(batch)
    assert_kj(kj, ["a", "b"], {"a": [[3], []], "b": [None, [8, 7]]})


@pytest.mark.parametrize(("list_type", "lengths_dtype"), [
    (pa.list_, np.int32), (pa.large_list, np.int64)])
@pytest.mark.parametrize("value_type", [pa.int32(), pa.int64(), pa.float32()])
def test_from_arrow_batch_offset_widths(list_type: Any, lengths_dtype: Any,
                                        value_type: pa.DataType) -> None:
    rows: Table = {"x": [[1, 2], None, [3]], "y": [[], [4], [5, 6]]}
    batch = pa.record_batch({k: pa.array(r, list_type(value_type)) for k, r in rows.items()})
    kj = KeyedJagged.from_arrow(batch)
    assert kj.lengths.dtype == lengths_dtype
    assert kj.dtype == numpy_dtype(value_type)
    assert_kj(kj, ["x", "y"], rows)
    assert kj["x"].offsets.dtype == lengths_dtype
    out = kj.to_arrow()
    assert out.schema == batch.schema
    assert out.equals(batch)


def test_from_arrow_batch_mixed_widths_and_dtypes() -> None:
    batch = pa.record_batch({"a": pa.array([[1], [2, 3]], pa.list_(pa.int32())),
                             "b": pa.array([[4, 5], []], pa.large_list(pa.int64()))})
    kj = KeyedJagged.from_arrow(batch)
    assert kj.lengths.dtype == np.int64  # one large_list column: int64 lengths
    assert kj.dtype == np.int64  # int32 and int64 values: numpy's common dtype
    assert_kj(kj, ["a", "b"], batch_table(batch, ["a", "b"]))


def test_from_arrow_table_several_chunks() -> None:
    a = pa.chunked_array([pa.array([[1, 2], None]), pa.array([[3, 4, 5], [6]]).slice(1),
                          pa.array([], pa.list_(pa.int64()))])
    b = pa.chunked_array([pa.array([[7]]), pa.array([[], [8, 9], None]).slice(1)])
    table = pa.table({"a": a, "b": b})
    assert table.column("a").num_chunks == 3
    kj = KeyedJagged.from_arrow(table)
    assert_kj(kj, ["a", "b"], batch_table(table, ["a", "b"]))
    no_chunks = pa.table({"a": pa.chunked_array([], pa.list_(pa.int64()))})
    assert_kj(KeyedJagged.from_arrow(no_chunks), ["a"], {"a": []})


def test_from_arrow_batch_keys_select_and_order() -> None:
    batch = pa.record_batch({"a": pa.array([[1]]), "b": pa.array([[2, 3]]),
                             "c": pa.array([[4]])})
    kj = KeyedJagged.from_arrow(batch, keys=["c", "a"])
    assert_kj(kj, ["c", "a"], {"c": [[4]], "a": [[1]]})
    none = KeyedJagged.from_arrow(batch, keys=[])
    assert (none.num_keys, none.batch_size, len(none.values)) == (0, 1, 0)
    assert none.to_arrow().num_rows == 1


def test_from_arrow_batch_weights() -> None:
    batch = pa.record_batch({
        "ids": pa.array([[1, 2], None, [3]]),
        "ids_w": pa.array([[0.5, 1.0], None, [2.0]], pa.list_(pa.float32())),
        "other": pa.array([[4], [5, 6], []]),
    })
    kj = KeyedJagged.from_arrow(batch, weights={"ids": "ids_w"})
    assert kj.keys() == ["ids", "other"]  # the weights column is not a key
    table = batch_table(batch, ["ids", "other"])
    assert_kj(kj, ["ids", "other"], table,
              {"ids": [[0.5, 1.0], None, [2.0]], "other": [[1.0], [1.0, 1.0], []]})
    assert nn(kj.weights).dtype == np.float32
    one = KeyedJagged.from_arrow(batch, keys=["ids"], weights="ids_w")
    assert nn(one.weights).tolist() == [0.5, 1.0, 2.0]
    # an empty weights row on a null id row is fine, and garbage is not read
    w = pa.ListArray.from_arrays(pa.array([0, 2, 3, 4], pa.int32()),
                                 pa.array([0.5, 1.0, 9.0, 2.0]),
                                 mask=pa.array([False, True, False]))
    kj = KeyedJagged.from_arrow(pa.record_batch({"ids": batch.column(0), "w": w}), weights="w")
    assert nn(kj.weights).tolist() == [0.5, 1.0, 2.0]


def test_from_arrow_batch_weights_errors() -> None:
    batch = pa.record_batch({"a": pa.array([[1, 2], [3]]), "b": pa.array([[4], []]),
                             "w": pa.array([[0.5], [1.0]])})
    with pytest.raises(ArrowSparseValueError,
                       match=r"weights of key 'a' row lengths differ from the values' \(2\) "
                             r"\(first at position 0: 1\)"):
        KeyedJagged.from_arrow(batch, keys=["a"], weights="w")
    with pytest.raises(ArrowSparseValueError, match="names one column but 2 keys are selected"):
        KeyedJagged.from_arrow(batch, weights="w")
    with pytest.raises(ArrowSparseIndexError,
                       match=r"weights names a column not in the batch \(first at position 0: "
                             r"'nope'\)"):
        KeyedJagged.from_arrow(batch, keys=["b"], weights={"b": "nope"})
    with pytest.raises(ArrowSparseIndexError, match="weights names a key that is not selected"):
        KeyedJagged.from_arrow(batch, keys=["b"], weights={"a": "w"})
    with pytest.raises(ArrowSparseTypeError, match="weights for a batch must be a column name"):
        KeyedJagged.from_arrow(batch, weights=["w"])
    with pytest.raises(ArrowSparseTypeError, match=r"weights\['b'\] must be a column name"):
        KeyedJagged.from_arrow(batch, keys=["b"], weights={"b": 3})
    strings = pa.record_batch({"a": pa.array([[1]]), "w": pa.array([["x"]])})
    with pytest.raises(ArrowSparseTypeError, match="column 'w' must hold lists of numbers"):
        KeyedJagged.from_arrow(strings, keys=["a"], weights="w")
    ints = pa.record_batch({"a": pa.array([[1]]), "b": pa.array([[2]]),
                            "w": pa.array([[1]]), "v": pa.array([[True]])})
    with pytest.raises(ArrowSparseTypeError,
                       match="weights of every key must be all integers, all floats"):
        KeyedJagged.from_arrow(ints, keys=["a", "b"], weights={"a": "w", "b": "v"})
    short = pa.table({"a": pa.array([[1]]), "w": pa.array([[1.0]])})
    assert nn(KeyedJagged.from_arrow(short, weights="w").weights).tolist() == [1.0]


def test_from_arrow_batch_errors() -> None:
    batch = pa.record_batch({"a": pa.array([[1, 2], [3]]), "n": pa.array([1, 2])})
    with pytest.raises(ArrowSparseTypeError,
                       match="batch_or_map_array must be a RecordBatch or Table of list columns"):
        KeyedJagged.from_arrow(pa.array([[1]]))
    with pytest.raises(ArrowSparseTypeError, match="got dict"):
        KeyedJagged.from_arrow({"a": [[1]]})
    assert KeyedJagged.from_arrow(batch).keys() == ["a"]  # non-list columns are skipped
    with pytest.raises(ArrowSparseTypeError,
                       match="column 'n' must be a list or large_list column, got int64"):
        KeyedJagged.from_arrow(batch, keys=["a", "n"])
    with pytest.raises(ArrowSparseTypeError, match="has no list or large_list column"):
        KeyedJagged.from_arrow(pa.record_batch({"n": pa.array([1, 2])}))
    with pytest.raises(ArrowSparseIndexError,
                       match=r"keys names a column not in the batch \(first at position 1: 'x'\)"):
        KeyedJagged.from_arrow(batch, keys=["a", "x"])
    with pytest.raises(ArrowSparseTypeError, match="keys must be a sequence of key names"):
        KeyedJagged.from_arrow(batch, keys="a")
    maps = pa.record_batch({"m": caffe2_map()})
    with pytest.raises(ArrowSparseTypeError, match="pass a map column itself"):
        KeyedJagged.from_arrow(maps)
    nested = pa.record_batch({"a": pa.array([[[1]]])})
    with pytest.raises(ArrowSparseTypeError, match="column 'a' must hold lists of numbers"):
        KeyedJagged.from_arrow(nested)
    twice = pa.RecordBatch.from_arrays([pa.array([[1]]), pa.array([[2]])], names=["a", "a"])
    with pytest.raises(ArrowSparseValueError,
                       match=r"keys names a column that appears 2 times \(first at position 0"):
        KeyedJagged.from_arrow(twice, keys=["a"])
    with pytest.raises(ArrowSparseValueError, match=r"column names must be unique"):
        KeyedJagged.from_arrow(twice)
    mixed = pa.record_batch({"a": pa.array([[1]]), "f": pa.array([[1.5]])})
    with pytest.raises(ArrowSparseTypeError,
                       match="key 'a' has int64 but key 'f' has float64"):
        KeyedJagged.from_arrow(mixed)
    unsigned = pa.record_batch({"a": pa.array([[1]]), "u": pa.array([[1]], pa.list_(pa.uint64()))})
    with pytest.raises(ArrowSparseTypeError, match="have no common integer dtype"):
        KeyedJagged.from_arrow(unsigned)
    null_inside = pa.record_batch({"a": pa.array([[1, None]])})
    with pytest.raises(ArrowSparseValueError,
                       match=r"column 'a' has null values inside its lists; fill them first .*"
                             r"\(first at position 1: None\)"):
        KeyedJagged.from_arrow(null_inside)


def test_from_arrow_batch_zero_copy_single_key() -> None:
    col = pa.array([[1, 2], [3], [4, 5, 6]])
    kj = KeyedJagged.from_arrow(pa.record_batch({"a": col}).slice(1))
    assert np.shares_memory(kj.values, buffer_view(col))
    assert kj.values.tolist() == [3, 4, 5, 6]


def test_from_arrow_batch_list_view() -> None:
    view = pa.array([[1, 2], None, [3]], pa.list_view(pa.int64()))
    kj = KeyedJagged.from_arrow(pa.record_batch({"a": view}))
    assert_kj(kj, ["a"], {"a": [[1, 2], None, [3]]})


# ---------------------------------------------- from_dict and from_jagged_dict
def test_from_dict_forms() -> None:
    chunked = pa.chunked_array([pa.array([[1]]), pa.array([[2, 3], None])])
    kj = KeyedJagged.from_dict({
        "jagged": asp.Jagged.from_list([[9], [], [8]]),
        "arrow": pa.array([[4, 5], None, []], pa.large_list(pa.int64())),
        "chunked": chunked,
        "rows": [[], [], [7]],
    })
    table: Table = {"jagged": [[9], [], [8]], "arrow": [[4, 5], None, []],
                    "chunked": [[1], [2, 3], None], "rows": [[], [], [7]]}
    assert_kj(kj, list(table), table)
    assert kj.lengths.dtype == np.int64
    empty = KeyedJagged.from_dict({"a": [[], []], "b": [[1], [2]]})  # [[]] reads as float64
    assert empty.dtype == np.int64
    none = KeyedJagged.from_dict({})
    assert (none.num_keys, none.batch_size) == (0, 0)


def test_from_dict_errors() -> None:
    with pytest.raises(ArrowSparseTypeError, match="data must be a mapping of key -> rows"):
        KeyedJagged.from_dict([[1]])  # type: ignore[arg-type]
    with pytest.raises(ArrowSparseValueError, match="key 'b' has 1 rows but key 'a' has 2"):
        KeyedJagged.from_dict({"a": [[1], [2]], "b": [[3]]})
    with pytest.raises(ArrowSparseTypeError,
                       match=r"data\['a'\] must be a Jagged, an Arrow list array or a list"):
        KeyedJagged.from_dict({"a": np.array([1, 2])})
    with pytest.raises(ArrowSparseTypeError, match=r"data\['a'\] must be a list or large_list"):
        KeyedJagged.from_dict({"a": pa.array([1, 2])})
    with pytest.raises(ArrowSparseTypeError,
                       match=r"data\['a'\] must be a list or large_list column, got int64"):
        KeyedJagged.from_dict({"a": pa.chunked_array([[1, 2]])})
    with pytest.raises(ArrowSparseIndexError,
                       match=r"weights names a key that is not selected "
                             r"\(first at position 0: 'z'"):
        KeyedJagged.from_dict({"a": [[1]]}, weights={"z": [[1.0]]})
    with pytest.raises(ArrowSparseValueError,
                       match="weights of key 'a' has 2 rows but the values have 1"):
        KeyedJagged.from_dict({"a": [[1]]}, weights={"a": [[1.0], [2.0]]})
    nested = asp.Jagged.from_list([[[1]]])
    with pytest.raises(ArrowSparseTypeError, match="column 'a' must hold lists of numbers.*nested"):
        KeyedJagged.from_jagged_dict({"a": nested})
    two_d = asp.Jagged(np.ones((2, 3)), np.array([0, 2]))
    with pytest.raises(ArrowSparseTypeError, match=r"values of shape \(2, 3\)"):
        KeyedJagged.from_jagged_dict({"a": two_d})
    with pytest.raises(ArrowSparseTypeError, match=r"jagged\['a'\] must be a Jagged, got list"):
        KeyedJagged.from_jagged_dict({"a": [[1]]})  # type: ignore[dict-item]
    with pytest.raises(ArrowSparseTypeError, match=r"weights\['a'\] must be a Jagged, got list"):
        KeyedJagged.from_jagged_dict({"a": asp.Jagged.from_list([[1]])},
                                     weights={"a": [[1.0]]})  # type: ignore[dict-item]
    with pytest.raises(ArrowSparseTypeError, match="jagged must be a mapping"):
        KeyedJagged.from_jagged_dict(None)  # type: ignore[arg-type]


def test_from_dict_and_getitem_views() -> None:
    kj = abc()
    assert_kj(kj, ["a", "b", "c"], ABC, ABC_W)
    for key in kj.keys():
        assert np.shares_memory(kj[key].values, kj.values) or len(kj[key].values) == 0
    assert kj["b"].offsets.tolist() == [0, 1, 1, 2]  # rebuilt from zero
    assert kj["b"].offsets.dtype == np.int32


def test_from_jagged_dict_values_validity_outside_rows_ignored() -> None:
    # a null element outside the rows the offsets address is not an error
    j = asp.Jagged(np.array([0, 1, 2]), np.array([1, 3]),
                   values_validity=np.array([False, True, True]))
    kj = KeyedJagged.from_jagged_dict({"a": j})
    assert kj.values.tolist() == [1, 2]
    bad = asp.Jagged(np.array([0, 1, 2]), np.array([0, 3]),
                     values_validity=np.array([True, False, True]))
    with pytest.raises(ArrowSparseValueError, match=r"null values inside .*position 1: None"):
        KeyedJagged.from_jagged_dict({"a": bad})


def test_to_dict_from_jagged_dict_round_trip() -> None:
    kj = abc()
    d = kj.to_dict()
    assert list(d) == ["a", "b", "c"]
    back = KeyedJagged.from_jagged_dict(d, weights={k: kj.weights_of(k) for k in kj.keys()})
    assert_kj(back, ["a", "b", "c"], ABC, ABC_W)


# ------------------------------------------------------------- the constructor
def test_constructor_lengths_and_offsets() -> None:
    values = np.array([10, 11, 11, 50, 101, 102, 103])
    kj = KeyedJagged([1, 2, 3], values, [2, 1, 0, 1, 1, 2])
    assert_kj(kj, *ref_from_maps(CAFFE2_ROWS))
    assert kj.values is values  # not copied
    assert kj.lengths.dtype == np.int64
    by_offsets = KeyedJagged([1, 2, 3], np.concatenate([[-1], values, [-1]]),
                             offsets=[1, 3, 4, 4, 5, 6, 8], weights=np.arange(9.0))
    assert_kj(by_offsets, *ref_from_maps(CAFFE2_ROWS),
              {1: [[1.0, 2.0], [3.0]], 2: [[], [4.0]], 3: [[5.0], [6.0, 7.0]]})
    small = KeyedJagged(["a"], np.array([1.0]), np.array([1], dtype=np.int16))
    assert small.lengths.dtype == np.int64
    assert KeyedJagged(["a"], [1, 2], np.array([2], np.int32)).lengths.dtype == np.int32
    assert KeyedJagged([], [], []).batch_size == 0
    assert KeyedJagged([], [], [], batch_size=4).to_arrow().num_rows == 4
    assert KeyedJagged(["a", "b"], [], [0, 0, 0, 0], batch_size=2).batch_size == 2
    with_nulls = KeyedJagged(["a"], [1], [1, 0], validity=np.array([True, False]))
    assert with_nulls["a"].to_list() == [[1], None]
    assert KeyedJagged(np.array([3, 4]), [1, 2], [1, 1]).keys() == [3, 4]


def test_constructor_errors() -> None:
    with pytest.raises(ArrowSparseValueError, match="lengths sum to 3 but there are 2 values"):
        KeyedJagged(["a"], [1, 2], [1, 2])
    with pytest.raises(ArrowSparseValueError,
                       match=r"lengths must be non-negative \(first at position 1: -1\)"):
        KeyedJagged(["a"], [1, 2], [3, -1])
    with pytest.raises(ArrowSparseValueError, match="weights has 1 entries but there are 2 values"):
        KeyedJagged(["a"], [1, 2], [2], weights=[1.0])
    with pytest.raises(ArrowSparseValueError, match="lengths describes 3 rows, not a multiple of"):
        KeyedJagged(["a", "b"], [1, 2, 3], [1, 1, 1])
    with pytest.raises(ArrowSparseValueError,
                       match=r"lengths describes 2 rows but num_keys \* batch_size is 1 \* 3"):
        KeyedJagged(["a"], [1, 2], [1, 1], batch_size=3)
    with pytest.raises(ArrowSparseValueError,
                       match="lengths describes 1 rows but there are no keys"):
        KeyedJagged([], [1], [1])
    with pytest.raises(ArrowSparseValueError, match="pass exactly one of lengths=, offsets="):
        KeyedJagged(["a"], [1], [1], offsets=[0, 1])
    with pytest.raises(ArrowSparseValueError, match="pass exactly one of lengths=, offsets="):
        KeyedJagged(["a"], [1])
    with pytest.raises(ArrowSparseValueError,
                       match=r"offsets must be non-decreasing \(first at position 2: 0\)"):
        KeyedJagged(["a"], [1], offsets=[0, 1, 0])
    with pytest.raises(ArrowSparseValueError, match=r"offsets exceed the number of values 1"):
        KeyedJagged(["a"], [1], offsets=[0, 2])
    with pytest.raises(ArrowSparseValueError,
                       match=r"keys must be unique \(first at position 1: 'a'\)"):
        KeyedJagged(["a", "a"], [1, 2], [1, 1])
    with pytest.raises(ArrowSparseTypeError, match="keys must be a sequence of key names, got str"):
        KeyedJagged("ab", [1, 2], [1, 1])
    with pytest.raises(ArrowSparseTypeError, match=r"keys must be hashable \(first at position 0"):
        KeyedJagged([["a"]], [1], [1])  # type: ignore[list-item]
    with pytest.raises(ArrowSparseValueError,
                       match=r"values must be 1-dimensional, got shape \(1, 2\)"):
        KeyedJagged(["a"], [[1, 2]], [1])
    with pytest.raises(ArrowSparseTypeError, match="values must have a numeric dtype"):
        KeyedJagged(["a"], ["x"], [1])
    with pytest.raises(ArrowSparseTypeError, match="lengths must have an integer dtype"):
        KeyedJagged(["a"], [1], [1.0])
    with pytest.raises(ArrowSparseTypeError, match="validity must be a bool mask"):
        KeyedJagged(["a"], [1], [1], validity=[1])
    with pytest.raises(ArrowSparseValueError, match=r"validity has shape \(2,\) but 1 entries"):
        KeyedJagged(["a"], [1], [1], validity=[True, True])
    with pytest.raises(ArrowSparseValueError,
                       match=r"validity marks a row with values as null "
                             r".*\(first at position 0: 1\)"):
        KeyedJagged(["a"], [1], [1], validity=[False])
    with pytest.raises(ArrowSparseTypeError, match="batch_size must be an integer"):
        KeyedJagged(["a"], [1], [1], batch_size=1.0)  # type: ignore[arg-type]


def test_keyed_constructor_on_every_backend(backend: str) -> None:
    host = abc()
    parts = {name: to_backend(getattr(host, name), backend)
             for name in ("values", "lengths", "weights", "validity")}
    kj = KeyedJagged(host.keys(), parts["values"], parts["lengths"], parts["weights"],
                     validity=parts["validity"])
    same_kj(host_of(kj, backend), host)
    offsets = 2 + host.offsets  # a slice of longer values
    values = np.concatenate([[9, 9], host.values, [9]])
    kj = KeyedJagged(host.keys(), to_backend(values, backend),
                     offsets=to_backend(offsets, backend), validity=parts["validity"])
    assert kj.device == ("cuda:0" if on_device(backend) else "cpu")
    same_kj(host_of(kj, backend),
            KeyedJagged(host.keys(), values, offsets=offsets, validity=host.validity))


# ------------------------------------------------------------------- accessors
def test_getitem_and_protocol() -> None:
    kj = abc()
    assert len(kj) == 3
    assert "a" in kj and "z" not in kj and [1] not in kj
    with pytest.raises(ArrowSparseIndexError, match=r"KeyedJagged\[\]: 'z' is not a key; keys are"):
        kj["z"]
    with pytest.raises(ArrowSparseTypeError, match="keys are hashable names, got list"):
        kj[["a"]]  # type: ignore[index]
    with pytest.raises(TypeError, match="not iterable"):
        iter(kj)
    with pytest.raises(ArrowSparseValueError, match="this KeyedJagged has no weights"):
        KeyedJagged(["a"], [1], [1]).weights_of("a")
    with pytest.raises(ArrowSparseIndexError, match="weights_of: 'q' is not a key"):
        kj.weights_of("q")


def test_unknown_key_is_a_key_error() -> None:
    kj = KeyedJagged.from_arrow(pa.record_batch({"a": pa.array([[1], []])}))
    with pytest.raises(KeyError, match="'x' is not a key"):
        kj["x"]


#: The accessors of KeyedJagged (the reshaping methods: RESHAPE_OPS, test_reshape.py).
CLASS_OPS: dict[str, Any] = {
    "getitem": lambda kj: kj["a"],
    "weights_of": lambda kj: kj.weights_of("c"),
    "to_dict": lambda kj: kj.to_dict(),
    "per_key": lambda kj: (kj.length_per_key(), kj.offset_per_key()),
    "validate": lambda kj: kj.validate(),
}


@pytest.mark.parametrize("make", MAKES, ids=MAKE_IDS)
@pytest.mark.parametrize("op", list(CLASS_OPS))
def test_accessors_on_every_backend(backend: str, op: str, make: Any) -> None:
    same_on_backend(backend, CLASS_OPS[op], make)


# -------------------------------------------------------------------- to_arrow
def test_to_arrow_from_arrow_round_trip() -> None:
    kj = abc()
    batch = kj.to_arrow()
    assert batch.schema.names == ["a", "b", "c", "a_weights", "b_weights", "c_weights"]
    assert batch.column("a").to_pylist() == ABC["a"]
    assert batch.column("a").type == pa.list_(pa.int64())
    assert np.shares_memory(buffer_view(batch.column("b")), kj.values)  # zero-copy values
    back = KeyedJagged.from_arrow(batch, weights={k: f"{k}_weights" for k in kj.keys()})
    assert_kj(back, ["a", "b", "c"], ABC, ABC_W)
    named = kj.to_arrow(weights_suffix=".w")
    assert named.schema.names[3:] == ["a.w", "b.w", "c.w"]


def test_to_arrow_map_keys_and_errors() -> None:
    kj = KeyedJagged.from_arrow(caffe2_map())
    batch = kj.to_arrow()
    assert batch.schema.names == ["1", "2", "3"]
    assert batch.to_pydict() == {"1": [[10, 11], [11]], "2": [[], [50]], "3": [[101], [102, 103]]}
    clash = KeyedJagged([1, "1"], np.array([1, 2]), [1, 1])
    with pytest.raises(ArrowSparseValueError,
                       match=r"column names must be unique \(first at position 1: '1'\)"):
        clash.to_arrow()
    weighted = KeyedJagged(["a", "a_w"], np.array([1, 2]), [1, 1], weights=np.ones(2))
    with pytest.raises(ArrowSparseValueError, match="column names must be unique"):
        weighted.to_arrow(weights_suffix="_w")
    with pytest.raises(ArrowSparseTypeError, match="weights_suffix must be a str"):
        weighted.to_arrow(weights_suffix=1)  # type: ignore[arg-type]


# -------------------------------------------------------------------- validate
def test_validate_detects_corruption() -> None:
    kj = KeyedJagged(["a", "b"], np.arange(4), np.array([1, 1, 1, 1]))
    assert kj.validate() is kj
    kj.lengths[0] = 2
    with pytest.raises(ArrowSparseValueError, match="lengths sum to 5 but there are 4 values"):
        kj.validate()
    kj.lengths[0], kj.lengths[1] = 0, 2
    with pytest.raises(ArrowSparseValueError,
                       match=r"offsets differ from the running sum of lengths "
                             r"\(first at position 1"):
        kj.validate()


def test_validate_detects_repeated_key_with_different_rows() -> None:
    kj = KeyedJagged._new(("a", "a"), np.array([1, 2]), np.array([1, 1]), None, None, 1)
    with pytest.raises(ArrowSparseValueError,
                       match=r"keys repeat a key with different rows \(first at position 1: 'a'\)"):
        kj.validate()
    weighted = KeyedJagged._new(("a", "a"), np.array([1, 1]), np.array([1, 1]),
                                np.array([0.5, 2.0]), None, 1)
    with pytest.raises(ArrowSparseValueError, match="repeat a key with different rows"):
        weighted.validate()
    null = KeyedJagged._new(("a", "a"), np.array([], np.int64), np.array([0, 0]), None,
                            np.array([True, False]), 1)
    with pytest.raises(ArrowSparseValueError, match="repeat a key with different rows"):
        null.validate()


def test_keyed_device_checks() -> None:
    later = r" \(first at position {}; found by a device check, reported by a later call\)$"
    now = r" \(first at position {}; found by a device check\)$"
    with emulated_cupy() as cp:
        values = cp.asarray(np.arange(4))

        def raised_later() -> None:
            asp.offsets_to_lengths(cp.asarray(np.array([0, 1])))

        for lengths, valid, message in (
                ([2, -1, 3], None, "lengths must be non-negative" + later.format(1)),
                ([2, 1, 2], None, "lengths do not sum to the number of values" + later.format(2)),
                ([2, 0, 2], [True, True, False], r"validity marks a row with values as null "
                 r"\(null rows are empty\)" + later.format(2))):
            KeyedJagged(["a"], values, cp.asarray(np.array(lengths)),
                        validity=None if valid is None else cp.asarray(np.array(valid)))
            with pytest.raises(ValueError, match="^KeyedJagged: " + message):
                raised_later()
        with pytest.raises(ValueError, match="^KeyedJagged: offsets must be non-decreasing"
                           + now.format(2)):
            KeyedJagged(["a"], values, offsets=cp.asarray(np.array([0, 3, 1, 4])))
        kj = abc().to_device("cuda")
        bad = KeyedJagged._new(("a",), kj.values[:3], kj.lengths[:3] * 0 + 2, None, None, 3)
        with pytest.raises(ValueError, match=r"^KeyedJagged.validate: lengths do not sum to "
                           r"the number of values \(first at position \d+; found by a device "
                           r"check\)$"):
            bad.validate()
        wrong = KeyedJagged._new(("a",), kj.values[:3], kj.lengths[:3], None, None, 3,
                                 kj.offsets[:4] * 2)
        with pytest.raises(ValueError, match=r"^KeyedJagged.validate: offsets differ from the "
                           r"running sum of lengths \(first at position 1: 2\)$"):
            wrong.validate()
        twice = KeyedJagged._new(("b", "b"), kj.values[:5], kj.lengths[:6], None, None, 3)
        with pytest.raises(ValueError, match=r"^KeyedJagged.validate: keys repeat a key with "
                           r"different rows \(first at position 1: 'b'\)$"):
            twice.validate()
        kj.permute(["a", "c", "a"]).validate()
        cuda.check_errors("test")


# ------------------------------------------------------------------------ repr
def test_repr_is_deterministic_and_truncated() -> None:
    kj = KeyedJagged.from_dict({f"k{i}": [[i]] * 9 for i in range(12)},
                               weights={"k0": [[0.5]] * 9})
    text = repr(kj)
    assert "0x" not in text and text == repr(kj)
    assert text.splitlines()[0] == ("KeyedJagged(num_keys=12, batch_size=9, dtype=int64, "
                                    "lengths=int32, weights=float64)")
    assert "  'k0': [[0], [0], [0], [0], ..., [0], [0]]" in text
    assert text.splitlines()[-1] == "  ... (4 more keys)"


# --------------------------------------------------------------- on the device
def test_keyed_on_the_device_reads_back_only_what_it_documents() -> None:
    host = abc()
    with emulated_cupy() as cp:
        kj = host.to_device("cuda")
        assert (kj.device, kj.xp, host.device, host.xp) == ("cuda:0", cp, "cpu", np)
        assert kj.to_device("cuda") is kj and host.to_device("cpu") is host
        assert kj.to_device("cuda:1").values.device.id == 1
        assert repr(kj).splitlines()[0].endswith("weights=float64, device='cuda:0')")
        assert repr(kj).splitlines()[1:] == repr(host).splitlines()[1:]
        j = kj["c"]  # a view of the whole buffer, offsets from the key's first value
        assert j.values is kj.values and j.to_list() == host["c"].to_list()
        for call, syncs in ((lambda: kj.permute(["b"]), 1), (lambda: kj.split([1, 2]), 1),
                            (lambda: kj.block_bucketize(2, 2), 2),
                            (lambda: kj.to_padded_dict(2), 0), (lambda: kj["a"], 0)):
            cp.stats.reset()
            call()
            assert cp.stats.syncs == syncs
        with pytest.raises(NotImplementedError, match=r"^KeyedJagged.to_arrow: the KeyedJagged "
                           r"is on cuda:0 and Arrow arrays live in host memory; copy it first: "
                           r"kj.to_device\('cpu'\).to_arrow\(\)$"):
            kj.to_arrow()
        with pytest.raises(NotImplementedError, match=r"^KeyedJagged.from_jagged_dict: column "
                           r"'a' is on cuda:0, but KeyedJagged is built on the host; build it "
                           r"from host data and move it with .to_device\('cuda'\)$"):
            KeyedJagged.from_jagged_dict({"a": host["a"].to_device("cuda")})
        with pytest.raises(TypeError, match=r"^KeyedJagged.concat: argument 1 is a host "
                           r"\(numpy/Arrow\) array but argument 0 is a device"):
            KeyedJagged.concat([kj.permute(["a"]), host.permute(["b"])])
        with pytest.raises(TypeError, match=r"^KeyedJagged: lengths is a host \(numpy/Arrow\) "
                           r"array but values is a device"):
            KeyedJagged(["a"], kj.values, [len(host.values)])


def test_every_keyed_member_works_on_the_device_or_says_it_is_host_only() -> None:
    public = {name for name in dir(KeyedJagged) if not name.startswith("_")}
    built_on_the_host = {"from_arrow", "from_dict", "from_jagged_dict"}
    attributes = {"keys", "num_keys", "batch_size", "values", "lengths", "offsets", "weights",
                  "validity", "dtype", "xp", "device", "to_device", "length_per_key",
                  "offset_per_key", "weights_of", "to_dict", "validate"}
    # TorchRec both ways goes through DLPack, which shares CUDA memory as it does host
    # memory (tests/interop/test_torch.py; the emulated device has no DLPack).
    torchrec = {"to_torchrec", "from_torchrec"}
    assert public == attributes | built_on_the_host | set(OPS_BY_MEMBER) | {"to_arrow"} | torchrec
    with emulated_cupy():
        kj = abc().to_device("cuda")
        for name in attributes - {"weights_of", "to_device"}:
            member = getattr(kj, name)
            result = member() if callable(member) else member
            assert not isinstance(result, np.ndarray), name
        for name in OPS_BY_MEMBER:
            RESHAPE_OPS[OPS_BY_MEMBER[name]](kj)
        cuda.check_errors("test")


#: Each public method of KeyedJagged not in the attributes, and its entry in RESHAPE_OPS.
OPS_BY_MEMBER = {"permute": "permute", "split": "split", "concat": "concat",
                 "regroup": "regroup", "regroup_as_dict": "regroup_as_dict",
                 "block_bucketize": "block_bucketize", "to_padded_dict": "to_padded_dict"}


# ------------------------------------------------------------------ to_arrow(layout="map")

@pytest.mark.parametrize("maps", [
    [[(1, [1, 2]), (2, [3])], [(2, [4, 6, 7])]],                # Caffe2's example
    [[(1, [1])], None, [], [(2, None)], [(1, [5]), (2, None)]],  # null map, no entry, null list
    [None, None],                                                # every row null
    [[], []],                                                    # no key at all
])
def test_to_arrow_map_layout_gives_back_the_map_column(maps: list[Any]) -> None:
    column = pa.array(maps, MAP_TYPE)
    kj = asp.KeyedJagged.from_arrow(column)
    back = kj.to_arrow(layout="map").column("features")
    again = asp.KeyedJagged.from_arrow(back, keys=kj.keys())
    assert again.keys() == kj.keys()
    for key in kj.keys():
        assert again[key].to_list() == kj[key].to_list()
    # canonical maps: empty lists are left out, null lists kept, null maps kept
    expected = [None if m is None else [(k, lst) for k, lst in m if lst is None or lst]
                for m in maps]
    if kj.num_keys:
        assert back.to_pylist() == expected


def test_to_arrow_map_layout_with_weights_and_string_keys() -> None:
    kj = asp.KeyedJagged.from_dict({"clicks": [[1, 2], None, []], "views": [[3], [4], [5, 6]]},
                                   weights={"clicks": [[0.5, 1.0], None, []],
                                            "views": [[1.0], [2.0], [3.0, 4.0]]})
    batch = kj.to_arrow(layout="map", column="feats")
    assert batch.schema.names == ["feats", "feats_weights"]
    assert batch.column("feats").to_pylist() == [
        [("clicks", [1, 2]), ("views", [3])], [("clicks", None), ("views", [4])],
        [("views", [5, 6])]]
    back = asp.KeyedJagged.from_arrow(batch.column("feats"),
                                      weights=batch.column("feats_weights"))
    assert back.keys() == ["clicks", "views"]
    np.testing.assert_array_equal(back.weights, kj.weights)
    assert back["clicks"].to_list() == [[1, 2], None, []]


def test_to_arrow_map_layout_keeps_large_lists_and_refuses_bad_layouts() -> None:
    kj = asp.KeyedJagged(["a"], np.arange(3), lengths=np.array([2, 1], np.int64))
    column = kj.to_arrow(layout="map").column("features")
    assert pa.types.is_large_list(column.type.item_type)
    assert column.to_pylist() == [[("a", [0, 1])], [("a", [2])]]
    with pytest.raises(ValueError, match="^KeyedJagged.to_arrow: layout must be 'columns' or "
                                         "'map', got 'rows'$"):
        kj.to_arrow(layout="rows")
    with pytest.raises(TypeError, match="^KeyedJagged.to_arrow: column must be a str"):
        kj.to_arrow(layout="map", column=1)
