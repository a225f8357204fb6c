"""Tests of ``arrow_sparse.transforms.vocabulary``: :func:`value_counts`,
:func:`fit_vocabulary`, :class:`Vocabulary` and :func:`categorify`.

Compared with the plain-Python oracles of ``tests/_reference.py`` (Hypothesis, on the
CPU), on every backend (cpu, the CUDA emulator, the stand-in CuPy, a GPU) and with the
CPU through the emulator.
"""

from __future__ import annotations

import collections
import ctypes
import mmap
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse._arrow import numpy_dtype
from arrow_sparse.errors import ArrowSparseIOError, ArrowSparseValueError

from .. import _reference as ref
from ..conftest import from_backend, to_backend
from ..cuda_emu.fake_cupy import emulated_cupy
from ._helpers import (
    CAFFE2,
    COLUMNS,
    FLOATS,
    _ints,
    _words,
    child_with_offset,
    int_arrays,
    on,
    run_through_the_emulator,
    same_buffer,
    same_jagged,
    string_list_arrays,
)


# -------------------------------------------------------------------------- value_counts
@pytest.mark.hypothesis
@given(int_arrays())
def test_value_counts_ints(case: tuple[pa.Array, list[Any]]) -> None:
    arr, rows = case
    out = asp.value_counts(arr)
    assert out.type == pa.struct([("values", arr.type.value_type), ("counts", pa.int64())])
    assert [(d["values"], d["counts"]) for d in out.to_pylist()] == ref.value_counts(rows)
    values, counts = asp.value_counts(asp.Jagged.from_arrow(arr))
    assert values.dtype == numpy_dtype(arr.type.value_type)
    assert list(zip(values.tolist(), counts.tolist(), strict=True)) == ref.value_counts(rows)


@pytest.mark.hypothesis
@given(string_list_arrays())
def test_value_counts_strings(case: tuple[pa.Array, list[Any]]) -> None:
    arr, rows = case
    out = asp.value_counts(arr)
    assert out.type.field("values").type == arr.type.value_type
    assert [(d["values"], d["counts"]) for d in out.to_pylist()] == ref.value_counts(rows)


def test_value_counts_chunked_nested_and_floats() -> None:
    chunked = pa.chunked_array([pa.array([["b", "a"]]), pa.array([["a"], None]),
                                pa.array([], pa.list_(pa.string()))])
    assert asp.value_counts(chunked).to_pylist() == [
        {"values": "a", "counts": 2}, {"values": "b", "counts": 1}]
    nested = pa.array([[[1, 2], None], None, [[2, None]]])
    assert asp.value_counts(nested).to_pylist() == [
        {"values": 2, "counts": 2}, {"values": 1, "counts": 1}]
    values, counts = asp.value_counts(np.array([0.5, np.nan, 0.5, np.nan, 2.0]))
    np.testing.assert_array_equal(values, [0.5, np.nan, 2.0])
    np.testing.assert_array_equal(counts, [2, 2, 1])
    floats = pa.chunked_array([pa.array([[1.5, None]]), pa.array([[1.5, float("nan")]])])
    assert asp.value_counts(floats).to_pylist()[0] == {"values": 1.5, "counts": 2}
    assert asp.value_counts(pa.array([True, False, True])).to_pylist()[0] == \
        {"values": True, "counts": 2}
    wide = np.array([-2**63, 2**63 - 1, 7, -2**63])  # hash-table path, extreme values
    values, counts = asp.value_counts(wide)
    assert values.tolist() == [-2**63, 7, 2**63 - 1] and counts.tolist() == [2, 1, 1]
    big = np.array([2**64 - 1, 3], dtype=np.uint64)
    assert asp.value_counts(big)[0].tolist() == [3, 2**64 - 1]


def test_value_counts_tables_grow_across_rows_with_nulls() -> None:
    # The counting tables grow while a row is half read: counting resumes in that row.
    from collections import Counter

    rng = np.random.default_rng(9)
    rows = []
    for r in range(4000):
        if r % 97 == 0:
            rows.append(None)
            continue
        row = rng.integers(-2**62, 2**62, 7).tolist() + [int(rng.integers(0, 500)), None]
        if r % 301 == 0:
            row.append(-2**63)
        rows.append(row)
    arr = pa.array(rows, pa.list_(pa.int64())).slice(1)
    want = Counter(x for row in rows[1:] if row is not None for x in row if x is not None)
    got = asp.value_counts(arr).to_pylist()
    assert {d["values"]: d["counts"] for d in got} == dict(want)
    words = pa.array([[None if x is None else f"t{x % 9000}" for x in row] if row else row
                      for row in rows], pa.list_(pa.string())).slice(1)
    wwant = Counter(f"t{x % 9000}" for row in rows[1:] if row is not None for x in row
                    if x is not None)
    wgot = asp.value_counts(words).to_pylist()
    assert {d["values"]: d["counts"] for d in wgot} == dict(wwant)


def test_value_counts_many_distinct_ints_sorts_instead() -> None:
    # More than 2**16 distinct values over a wide range: counted by sorting.
    rng = np.random.default_rng(3)
    base = rng.integers(-2**62, 2**62, 1_200_000)
    values = np.concatenate([base, base[:1000], base[:10]])
    keys, counts = asp.value_counts(values)
    unique, expected = np.unique(values, return_counts=True)
    assert len(keys) == len(unique)
    assert counts[:10].tolist() == [3] * 10 and counts[10:1000].tolist() == [2] * 990
    assert (np.diff(keys[:10]) > 0).all() and (np.diff(keys[1000:]) > 0).all()
    np.testing.assert_array_equal(np.sort(keys), unique)
    np.testing.assert_array_equal(counts[np.argsort(keys)], expected)


def test_value_counts_errors() -> None:
    with pytest.raises(TypeError, match="value_counts: values must be an Arrow array, a Jagged"
                                        " or a numpy array, got dict"):
        asp.value_counts({})
    with pytest.raises(TypeError, match=r"value_counts: rows must hold scalars, got values of"
                                        r" shape \(2, 2\)"):
        asp.value_counts(asp.Jagged.from_lengths(np.zeros((2, 2)), [2]))
    with pytest.raises(TypeError, match="value_counts: values of Arrow type struct"):
        asp.value_counts(pa.array([{"a": 1}]))


# --------------------------------------------------------- fit_vocabulary and Vocabulary
@pytest.mark.hypothesis
@given(int_arrays(), st.integers(0, 3), st.one_of(st.none(), st.integers(0, 5)))
def test_fit_vocabulary_ints(case: tuple[pa.Array, list[Any]], threshold: int,
                             max_size: int | None) -> None:
    arr, rows = case
    vocab = asp.fit_vocabulary(arr, freq_threshold=threshold, max_size=max_size)
    expected = ref.fit_vocabulary(rows, threshold, max_size)
    assert vocab.kind == "int64" and vocab.values.dtype == np.int64
    assert list(zip(vocab.values.tolist(), vocab.counts.tolist(), strict=True)) == expected
    assert vocab.ids.tolist() == list(range(2, 2 + len(expected)))
    assert vocab.num_ids == len(expected) + 2
    out = asp.categorify(arr, vocab)
    out.validate(full=True)
    assert out.to_pylist() == ref.categorify(rows, [value for value, _ in expected])
    assert asp.categorify(asp.Jagged.from_arrow(arr), vocab).to_list() == out.to_pylist()


@pytest.mark.hypothesis
@given(string_list_arrays(), st.integers(0, 3), st.one_of(st.none(), st.integers(0, 5)))
def test_fit_vocabulary_strings(case: tuple[pa.Array, list[Any]], threshold: int,
                                max_size: int | None) -> None:
    arr, rows = case
    vocab = asp.fit_vocabulary(arr, freq_threshold=threshold, max_size=max_size)
    expected = ref.fit_vocabulary(rows, threshold, max_size)
    t = arr.type.value_type
    binary = pa.types.is_binary(t) or pa.types.is_large_binary(t)
    assert vocab.kind == ("binary" if binary else "string")
    assert list(zip(vocab.values.to_pylist(), vocab.counts.tolist(), strict=True)) == expected
    out = asp.categorify(arr, vocab)
    out.validate(full=True)
    assert out.to_pylist() == ref.categorify(rows, [value for value, _ in expected])


@pytest.mark.hypothesis
@given(st.lists(int_arrays(), min_size=1, max_size=4))
def test_vocabulary_batches_merge_exactly(batches: list[tuple[pa.Array, list[Any]]]) -> None:
    arrays = [pa.array(b[0].to_pylist(), type=pa.list_(pa.int64())) for b in batches]
    whole = asp.fit_vocabulary(pa.chunked_array(arrays))
    assert asp.fit_vocabulary(arrays) == whole
    assert asp.fit_vocabulary(iter(arrays)) == whole
    parts = [asp.fit_vocabulary(a) for a in arrays]
    assert parts[0].merge(*parts[1:]) == whole
    assert asp.Vocabulary.merge(*parts, freq_threshold=2) == \
        asp.fit_vocabulary(arrays, freq_threshold=2)


def test_vocabulary_save_load(tmp_path: Any) -> None:
    ints = asp.fit_vocabulary(pa.array(CAFFE2))
    strings = asp.fit_vocabulary(pa.array([["b", "\u00e9", "b"], None, ["a"]]))
    binary = asp.fit_vocabulary(pa.array([b"\x00\xff", b"x"]))
    empty = asp.fit_vocabulary(np.zeros(0, dtype=np.int64))
    for name, vocab in [("i", ints), ("s", strings), ("b", binary), ("e", empty)]:
        path = tmp_path / f"{name}.parquet"
        vocab.save(path)
        loaded = asp.Vocabulary.load(str(path))
        assert loaded == vocab and loaded.kind == vocab.kind
        assert repr(loaded) == repr(vocab)
    table = asp.Vocabulary.load(tmp_path / "s.parquet").to_arrow()
    assert table.column_names == ["value", "count", "id"]
    assert table.schema.metadata[b"arrow_sparse.vocabulary"].startswith(b"{")
    assert asp.categorify(pa.array([["b", "zz"]]), asp.Vocabulary.load(tmp_path / "s.parquet")
                          ).to_pylist() == [[2, 1]]


def test_vocabulary_order_and_repr() -> None:
    vocab = asp.Vocabulary(np.array([30, 10, 20, 40, 50, 60, 70]), [1, 2, 2, 1, 1, 1, 1])
    assert vocab.values.tolist() == [10, 20, 30, 40, 50, 60, 70]
    assert repr(vocab) == ("Vocabulary(kind=int64, size=7, values=[10, 20, 30, 40, 50, 60, ...],"
                           " counts=[2, 2, 1, 1, 1, 1, ...])")
    assert len(vocab) == 7 and vocab != asp.Vocabulary([10], [2]) and vocab != "x"
    strings = asp.Vocabulary(pa.array(["b", "B", "a", "\u00e9"]), [1, 1, 1, 1])
    assert strings.values.to_pylist() == ["B", "a", "b", "\u00e9"]  # by UTF-8 bytes


def test_string_views_and_large_vocabularies() -> None:
    words = [f"w{i % 3000}" for i in range(20000)] + ["x" * 300] * 5
    arr = pa.array([words], type=pa.list_(pa.string_view()))
    vocab = asp.fit_vocabulary(arr, max_size=2000)
    expected = ref.fit_vocabulary([words], 1, 2000)
    assert list(zip(vocab.values.to_pylist(), vocab.counts.tolist(), strict=True)) == expected
    ids = asp.categorify(arr, vocab).to_pylist()[0]
    assert ids == ref.categorify([words], [w for w, _ in expected])[0]
    ints = np.random.default_rng(1).integers(-2**62, 2**62, 50000)  # hash-table counting
    values, counts = asp.value_counts(np.concatenate([ints, ints[:10]]))
    assert len(values) == len(np.unique(ints)) and counts[:10].tolist() == [2] * 10


def test_vocabulary_errors(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match=r"Vocabulary: values must be unique \(first at position"
                                         r" 2: 5\)"):
        asp.Vocabulary([5, 1, 5], [1, 1, 1])
    with pytest.raises(ValueError, match=r"Vocabulary: values must be unique \(first at position"
                                         r" 3: b\)"):
        asp.Vocabulary(pa.array(["b", "a", "c", "b"]), [1, 1, 1, 1])
    with pytest.raises(ValueError, match=r"Vocabulary: counts must be non-negative \(first at"
                                         r" position 0: -1\)"):
        asp.Vocabulary([5], [-1])
    with pytest.raises(ValueError, match="Vocabulary: counts has 2 entries but there are 1 values"):
        asp.Vocabulary([5], [1, 2])
    with pytest.raises(ValueError, match=r"Vocabulary: values must not contain nulls \(first at"
                                         r" position 1: None\)"):
        asp.Vocabulary(pa.array(["a", None]), [1, 1])
    with pytest.raises(TypeError, match="Vocabulary: values must be integers or strings, got"
                                        " Arrow type double"):
        asp.Vocabulary(pa.array([1.5]), [1])
    with pytest.raises(TypeError, match="Vocabulary: values must have an integer dtype, got"
                                        " float64"):
        asp.Vocabulary([1.5], [1])
    vocab = asp.fit_vocabulary(np.array([1]))
    with pytest.raises(TypeError, match="categorify: vocabulary must be a Vocabulary, got dict"):
        asp.categorify(np.array([1]), {1: 2})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="categorify: values of Arrow type string do not match a"
                                        " vocabulary of int64 values"):
        asp.categorify(pa.array([["a"]]), vocab)
    with pytest.raises(TypeError, match="categorify: values of Arrow type int64 do not match a"
                                        " vocabulary of string values"):
        asp.categorify(pa.array([[1]]), asp.Vocabulary(pa.array(["a"]), [1]))
    with pytest.raises(TypeError, match="categorify: values of dtype float64 do not match"):
        asp.categorify(np.array([1.0]), vocab)
    with pytest.raises(TypeError, match="Vocabulary.merge: cannot merge a string vocabulary into"
                                        " a int64 one"):
        vocab.merge(asp.Vocabulary(pa.array(["a"]), [1]))
    with pytest.raises(TypeError, match=r"Vocabulary.merge: others\[0\] must be a Vocabulary,"
                                        r" got int"):
        vocab.merge(1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Vocabulary.merge: freq_threshold must be non-negative,"
                                         " got -1"):
        vocab.merge(freq_threshold=-1)
    with pytest.raises(TypeError, match="fit_vocabulary: values of type double cannot form a"
                                        " vocabulary; vocabularies hold integers or strings"):
        asp.fit_vocabulary(pa.array([[1.5]]))
    with pytest.raises(TypeError, match="fit_vocabulary: batches mix value kinds"):
        asp.fit_vocabulary([pa.array([1]), pa.array(["a"])])
    with pytest.raises(TypeError, match="fit_vocabulary: batches mix string and binary values"):
        asp.fit_vocabulary([pa.array(["a"]), pa.array([b"a"])])
    with pytest.raises(ValueError, match="fit_vocabulary: column_or_batches holds no batches"):
        asp.fit_vocabulary(iter([]))
    with pytest.raises(ValueError, match="fit_vocabulary: max_size must be non-negative, got -2"):
        asp.fit_vocabulary(np.array([1]), max_size=-2)
    with pytest.raises(TypeError, match="fit_vocabulary: column_or_batches must be a column"):
        asp.fit_vocabulary(object())
    with pytest.raises(TypeError, match="Vocabulary.save: path must be a str or os.PathLike, got"
                                        " int"):
        vocab.save(3)  # type: ignore[arg-type]
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"value": [1]}), tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match="Vocabulary.load: .*bad.parquet' is not a vocabulary:"
                                         " no column 'count'"):
        asp.Vocabulary.load(tmp_path / "bad.parquet")
    pq.write_table(pa.table({"value": [1, 2], "count": [1, 5], "id": [2, 3]}),
                   tmp_path / "order.parquet")
    with pytest.raises(ValueError, match="has ids out of the vocabulary order"):
        asp.Vocabulary.load(tmp_path / "order.parquet")


def test_vocabulary_load_missing_file(tmp_path) -> None:
    with pytest.raises(ArrowSparseIOError, match=r"Vocabulary.load: path '.*missing\.parquet' "
                                                 "does not exist"):
        asp.Vocabulary.load(tmp_path / "missing.parquet")


def test_vocabulary_load_damaged_file_issue_14(tmp_path: Any) -> None:
    # save writes page checksums and load verifies them: a flipped byte in the pages of
    # the values gave other values (a silently different vocabulary) before.
    import pyarrow.parquet as pq

    vocab = asp.fit_vocabulary(np.arange(1000, dtype=np.int64) * 7)
    path = tmp_path / "v.parquet"
    vocab.save(path)
    chunk = pq.read_metadata(path).row_group(0).column(0)
    data = bytearray(path.read_bytes())
    data[chunk.data_page_offset + chunk.total_compressed_size - 5] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ArrowSparseValueError, match=r"Vocabulary.load: file '.*v\.parquet' is "
                                                    "not valid Parquet; it is corrupt"):
        asp.Vocabulary.load(path)
    path.write_bytes(bytes(data[:len(data) // 2]))
    with pytest.raises(ArrowSparseValueError, match=r"v\.parquet' is not valid Parquet"):
        asp.Vocabulary.load(path)


# ---------------------------------------------------------------------------- categorify
def test_categorify_rules() -> None:
    vocab = asp.Vocabulary(np.array([7, 3]), [5, 9])  # ids: 3 -> 2, 7 -> 3
    arr = pa.array([[7, None, 3, 8], None, []]).slice(0)
    out = asp.categorify(arr, vocab)
    assert out.to_pylist() == [[3, 1, 2, 1], None, []]
    assert out.type.value_type == pa.int64() and out.values.null_count == 0
    assert same_buffer(out.buffers()[1], arr.buffers()[1])
    assert asp.categorify(np.array([3, 4], dtype=np.uint8), vocab).tolist() == [2, 1]
    nested = pa.array([[[7], None, [3, None]], None])
    assert asp.categorify(nested, vocab).to_pylist() == [[[3], None, [2, 1]], None]
    wide = asp.Vocabulary(np.array([-2**63, 2**63 - 1]), [1, 2])
    assert asp.categorify(np.array([2**63 - 1, 0, -2**63]), wide).tolist() == [2, 1, 3]
    chunked = asp.categorify(pa.chunked_array([pa.array([["a"]]), pa.array([["b"]])]),
                             asp.Vocabulary(pa.array(["b"]), [1]))
    assert chunked.to_pylist() == [[1], [2]]


def test_categorify_strings_same_words_other_length() -> None:
    # Zero bytes pad the words a short string is compared by: its length tells them apart.
    vocab_words = [b"a", b"a\x00", b"", b"x" * 20, b"x" * 19 + b"y", b"\x00" * 16]
    vocab = asp.Vocabulary(pa.array(vocab_words, pa.binary()), [6, 5, 4, 3, 2, 1])
    probe = vocab_words + [b"a\x00\x00", b"x" * 21, b"\x00" * 15, b"b"]
    got = asp.categorify(pa.array([probe], pa.list_(pa.binary())), vocab).to_pylist()
    assert got == [[2, 3, 4, 5, 6, 7, 1, 1, 1, 1]]


# ------------------------------------------------------ layouts the builders rarely make
def test_child_with_offset_and_null_rows_over_values() -> None:
    arr, rows = child_with_offset()
    assert [(d["values"], d["counts"]) for d in asp.value_counts(arr).to_pylist()] == \
        ref.value_counts(rows)  # the 7s under the null row are not counted
    vocab = asp.fit_vocabulary(arr)
    assert vocab.values.tolist() == [1, 3, 5]
    assert asp.categorify(arr, vocab).to_pylist() == [[2, 1, 3], None, [4]]


def test_empty_inputs() -> None:
    for t in (pa.list_(pa.int64()), pa.large_list(pa.string())):
        empty = pa.array([], type=t)
        assert asp.value_counts(empty).to_pylist() == []
        assert len(asp.fit_vocabulary(empty)) == 0
    assert asp.categorify(pa.array([[1]]), asp.fit_vocabulary(np.zeros(0, np.int64))
                          ).to_pylist() == [[1]]
    assert asp.categorify(pa.array([["a", ""]]), asp.fit_vocabulary(pa.array([""]))
                          ).to_pylist() == [[1, 2]]


# -------------------------------------------------------- every backend (the device too)
@pytest.mark.parametrize("name", list(COLUMNS))
def test_categorify_on_every_backend(backend: str, name: str) -> None:
    host = asp.Jagged.from_arrow(COLUMNS[name])
    vocab = asp.fit_vocabulary(pa.array([3, 2, 2, 7, -2]))
    x = on(backend, COLUMNS[name])
    same_jagged(asp.categorify(x, vocab), asp.categorify(host, vocab), backend)
    same_jagged(asp.categorify(x, vocab), asp.categorify(host, vocab), backend)  # cached


def test_categorify_of_arrays_on_every_backend(backend: str) -> None:
    ints = np.array([[3, -1, 7], [2**40, 0, 3]], dtype=np.int64)
    vocab = asp.fit_vocabulary(ints[1])
    got = from_backend(asp.categorify(to_backend(ints, backend), vocab), backend)
    np.testing.assert_array_equal(got, asp.categorify(ints, vocab))


@pytest.mark.parametrize("name", list(COLUMNS))
def test_counting_on_every_backend(backend: str, name: str) -> None:
    host = asp.Jagged.from_arrow(COLUMNS[name])
    x = on(backend, COLUMNS[name])
    keys, counts = from_backend(asp.value_counts(x), backend)
    want_keys, want_counts = asp.value_counts(host)
    assert keys.dtype == want_keys.dtype
    np.testing.assert_array_equal(keys, want_keys)
    np.testing.assert_array_equal(counts, want_counts)
    assert asp.fit_vocabulary([x, x], max_size=3) == asp.fit_vocabulary([host, host],
                                                                        max_size=3)


def test_counting_floats_bools_and_uint64_on_every_backend(backend: str) -> None:
    for column in (FLOATS, pa.array([[True, None], [False, True, True]]),
                   pa.array([[2**64 - 1, 5, 2**63], [5, 2**63, 1]], pa.list_(pa.uint64()))):
        keys, counts = from_backend(asp.value_counts(on(backend, column)), backend)
        want_keys, want_counts = asp.value_counts(asp.Jagged.from_arrow(column))
        np.testing.assert_array_equal(keys, want_keys)
        np.testing.assert_array_equal(counts, want_counts)
    flat = np.array([4, 4, -1, 9, 4])
    keys, counts = from_backend(asp.value_counts(to_backend(flat, backend)), backend)
    assert (keys.tolist(), counts.tolist()) == ([4, -1, 9], [3, 1, 1])
    assert asp.fit_vocabulary(to_backend(flat, backend)) == asp.fit_vocabulary(flat)


def test_device_inputs_of_the_wrong_kind_are_refused() -> None:
    with emulated_cupy() as cp:
        x = asp.Jagged.from_arrow(COLUMNS["caffe2"]).to_device("cuda")
        with pytest.raises(TypeError, match="^categorify: values of dtype int64 do not match a "
                           "vocabulary of string values"):
            asp.categorify(x, asp.fit_vocabulary(pa.array(["a"])))
        with pytest.raises(TypeError, match="^fit_vocabulary: values of type float64 cannot "
                           "form a vocabulary"):
            asp.fit_vocabulary(cp.asarray(np.zeros(2)))


def test_vocabulary_tables_are_built_once_per_device() -> None:
    vocab = asp.fit_vocabulary(np.array([5, 5, 7]))
    with emulated_cupy() as cp:
        x = cp.asarray(np.array([5, 6, 7]))
        for syncs in (1, 0):  # built (the id of INT64_MIN is read back), then kept
            cp.stats.reset()
            got = asp.categorify(x, vocab)
            assert cp.stats.syncs == syncs
            assert got.get().tolist() == [2, 1, 3]
        with cp.cuda.Device(1):
            got = asp.categorify(cp.asarray(np.array([7, 5])), vocab)
        assert got.device.id == 1 and got.get().tolist() == [3, 2]
        assert set(vocab._tables) == {"cuda:0", "cuda:1"}
        nested = asp.Jagged.from_arrow(COLUMNS["nested"]).to_device("cuda")
        cp.stats.reset()
        asp.value_counts(nested)
        assert cp.stats.syncs == 3  # one more for the level above the leaves


#: Public calls and the kernels they must launch through the emulator.
PUBLIC: dict[str, tuple[Callable[[], Any], set[str]]] = {
    "value_counts-ints": (lambda: asp.value_counts(_ints()), {"kept_lengths", "kept_positions"}),
    "value_counts-strings": (lambda: asp.value_counts(_words()), {"string_set_insert"}),
    "value_counts-floats": (lambda: asp.value_counts(pa.array([[1.5, None], [1.5, 2.0]])),
                            {"kept_positions"}),
    "categorify-ints": (lambda: asp.categorify(_ints(), asp.fit_vocabulary(_ints()[:20])),
                        {"int_table_insert", "lookup_ints"}),
    "categorify-strings": (lambda: asp.categorify(_words(), asp.fit_vocabulary(_words()[5:])),
                           {"string_table_insert", "lookup_strings"}),
}


@pytest.mark.parametrize("case", list(PUBLIC))
def test_public_transforms_through_the_emulator(case: str) -> None:
    run_through_the_emulator(case, *PUBLIC[case])


def _counter_order(values: list[Any]) -> list[tuple[Any, int]]:
    """(value, count) of the non-null values: count descending, ties by bytes ascending."""
    counts: dict[Any, int] = {}
    for x in values:
        if x is not None:
            counts[x] = counts.get(x, 0) + 1
    def as_bytes(x: Any) -> bytes:
        return x.encode() if isinstance(x, str) else x
    return sorted(counts.items(), key=lambda kv: (-kv[1], as_bytes(kv[0])))


def _many_strings(n: int, seed: int) -> list[Any]:
    # Zipf-like repeats of more than 2**16 distinct strings (the partitioned count),
    # of every length class: empty, 1-16 bytes, long ones sharing a 20-byte prefix,
    # prefixes of each other, embedded NUL bytes; some nulls.
    rng = np.random.default_rng(seed)
    ids = np.where(rng.random(n) < 0.5, np.minimum(rng.zipf(1.1, n), 400_000),
                   rng.integers(1, 400_000, n))
    out: list[Any] = []
    for i, k in enumerate(ids.tolist()):
        if i % 97 == 0:
            out.append(None)
        elif k % 5 == 0:
            out.append("shared-prefix-of-20b" + str(k) * (k % 4))
        elif k % 7 == 0:
            out.append("a\x00" * (k % 9) + str(k))
        else:
            out.append(str(k) * (1 + k % 2))
    return out


@pytest.mark.parametrize("threads", [1, 2])
def test_fit_vocabulary_many_distinct_strings_matches_counter(threads: int) -> None:
    import numba
    values = _many_strings(300_000, 3)
    expected = _counter_order(values)
    assert len(expected) > 2**16  # the partitioned count
    arr = pa.ListArray.from_arrays(pa.array(np.arange(0, 300_001, 3, dtype=np.int32)),
                                   pa.array(values, type=pa.large_string()))
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        vocab = asp.fit_vocabulary(arr)
        sliced = asp.fit_vocabulary(arr.slice(1000, 50_000))
        as_binary = asp.fit_vocabulary(pa.array([v.encode() if v is not None else None
                                                 for v in values], type=pa.binary()))
    finally:
        numba.set_num_threads(before)
    assert list(zip(vocab.values.to_pylist(), vocab.counts.tolist(), strict=True)) == expected
    assert list(zip(sliced.values.to_pylist(), sliced.counts.tolist(), strict=True)) == \
        _counter_order(values[3000:153_000])
    assert as_binary.kind == "binary"
    assert as_binary.values.to_pylist() == [v.encode() for v, _ in expected]


def test_fit_vocabulary_strings_streaming_equals_one_fit() -> None:
    values = _many_strings(200_000, 8)
    batches = [pa.array(values[i:i + 70_000]) for i in range(0, len(values), 70_000)]
    whole = asp.fit_vocabulary(pa.array(values))
    assert list(zip(whole.values.to_pylist(), whole.counts.tolist(), strict=True)) == \
        _counter_order(values)
    assert asp.fit_vocabulary(iter(batches)) == whole
    parts = [asp.fit_vocabulary(b) for b in batches]
    assert parts[0].merge(*parts[1:]) == whole
    assert asp.fit_vocabulary(pa.chunked_array(batches)) == whole


@pytest.mark.hypothesis
@given(st.lists(st.one_of(st.none(), st.text(alphabet="ab\x00\u00e9", max_size=40)),
                max_size=200),
       st.sampled_from([pa.string(), pa.large_string(), pa.string_view()]))
def test_fit_vocabulary_string_order_matches_counter(values: list[Any], typ: Any) -> None:
    # Many strings sharing long prefixes, prefixes of each other, NUL bytes: the byte
    # order of the ties, through every refinement of the sort.
    vocab = asp.fit_vocabulary(pa.array(values, type=typ))
    assert list(zip(vocab.values.to_pylist(), vocab.counts.tolist(), strict=True)) == \
        _counter_order(values)
    pairs = asp.value_counts(pa.array(values, type=typ)).to_pylist()
    assert [(p["values"], p["counts"]) for p in pairs] == _counter_order(values)


def _guarded(src: np.ndarray) -> np.ndarray:
    """Copy ``src`` to the end of a page that an unreadable page follows.

    A kernel that reads even one byte past the array's end then faults at once,
    wherever the allocator would have put the array (a read past an ordinary
    buffer usually lands on readable memory and goes unnoticed).
    """
    src = np.ascontiguousarray(src)
    page = mmap.PAGESIZE
    pages = -(-src.nbytes // page) + 1
    region = np.frombuffer(mmap.mmap(-1, pages * page), dtype=np.uint8)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    end = (pages - 1) * page
    if libc.mprotect(region.ctypes.data + end, page, 0) != 0:  # PROT_NONE
        raise OSError(ctypes.get_errno(), "mprotect failed")
    out = region[end - src.nbytes:end].view(src.dtype)
    out[...] = src
    return out


def _guarded_strings(strings: list[bytes], large: bool) -> tuple[pa.Array, np.ndarray,
                                                                  np.ndarray]:
    """A binary array whose offsets and bytes both end where an unreadable page begins."""
    offsets = np.zeros(len(strings) + 1, dtype=np.int64 if large else np.int32)
    np.cumsum([len(s) for s in strings], out=offsets[1:])
    offsets = _guarded(offsets)
    data = _guarded(np.frombuffer(b"".join(strings), dtype=np.uint8))
    arr = pa.Array.from_buffers(pa.large_binary() if large else pa.binary(), len(strings),
                                [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return arr, offsets, data


#: Lengths of the last string: every length up to 24 (the 8- and 16-byte words, the
#: XXH3 paths up to 16 bytes) and the longer XXH3 paths.
TAIL_LENGTHS = [*range(25), 31, 32, 33, 64, 127, 128, 129, 200, 240, 241, 300]


@pytest.mark.parametrize("large", [False, True])
def test_string_vocabulary_kernels_read_no_byte_past_the_data(large: bool) -> None:
    # The last string ends on the last readable byte: hashing, counting, gathering and
    # the byte-order sort (8-byte words, prefixes shared by all strings) must read only
    # the strings' own bytes. A read past them faults here, deterministically.
    from arrow_sparse.kernels.cpu import transforms as cpu
    for tail in TAIL_LENGTHS:
        last = (b"pfx" + b"z" * tail)[:tail]
        strings = [(b"pfx" + b"%d" % i * 9)[:3 + i % 30] for i in range(40)] + [last] * 3
        arr, offsets, data = _guarded_strings(strings, large)
        ends = np.array([0, len(strings)])
        first, counts = cpu.count_strings(offsets, data, None, ends, None)
        assert sorted(strings[k] for k in first) == sorted(set(strings))
        assert dict(zip((strings[k] for k in first), counts.tolist(), strict=True)) == \
            collections.Counter(strings)
        distinct = sorted(set(strings), key=lambda s: (-strings.count(s), s))
        shuffled = [distinct[i] for i in np.random.default_rng(tail).permutation(len(distinct))]
        _, d_offsets, d_data = _guarded_strings(shuffled, True)
        order = cpu.order_strings(d_offsets, d_data,
                                  np.array([strings.count(s) for s in shuffled]))
        assert [shuffled[i] for i in order] == distinct
        new_offsets, new_data = cpu.gather_strings(offsets, data, np.array([len(strings) - 1]))
        assert new_data.tobytes() == last and new_offsets.tolist() == [0, tail]
        vocab = asp.fit_vocabulary(arr)
        assert vocab.values.to_pylist() == distinct
        assert vocab.counts.tolist() == [strings.count(s) for s in distinct]


@pytest.mark.parametrize("large", [False, True])
def test_string_lookup_reads_no_byte_past_the_data(large: bool) -> None:
    # The last string of the vocabulary and of the looked-up strings ends on the last
    # readable byte: building the table and looking strings up read its words byte by
    # byte there, elsewhere 16 bytes at once; both must give the same words, so each
    # string finds its id whichever way each side read it. Reference: a dict.
    from arrow_sparse.kernels.cpu import transforms as cpu
    for tail in TAIL_LENGTHS:
        last = (b"pfx" + b"z" * tail)[:tail]
        strings = [(b"pfx" + b"%d" % i * 9)[:3 + i % 30] for i in range(40)] + [last] * 3
        distinct = sorted(set(strings))
        rng = np.random.default_rng(tail)
        kept = [s for s in distinct if s == last or rng.random() < 0.7]
        for voc_last in (True, False):
            vocab = [s for s in kept if s != last]
            vocab = [*vocab, last] if voc_last else [last, *vocab]
            _, v_offsets, v_data = _guarded_strings(vocab, large)
            for looked_up in (strings, strings[::-1], [s for s in strings if s != last]):
                _, offsets, data = _guarded_strings(looked_up, large)
                table = cpu.build_string_table(v_offsets, v_data)
                out = np.zeros(len(looked_up), dtype=np.int64)
                cpu.lookup_strings(offsets, data, None, 0, len(looked_up),
                                   (v_offsets, v_data), table, 1, out)
                ids = {s: i + 2 for i, s in enumerate(vocab)}
                assert out.tolist() == [ids.get(s, 1) for s in looked_up], (tail, voc_last)


@pytest.mark.parametrize("threads", [1, 2])
def test_partitioned_string_count_reads_no_byte_past_the_data(threads: int) -> None:
    # More than 2**16 distinct strings (the partitioned count, split over the kernel
    # threads' hash parts), the last one of each length class ending on the last
    # readable byte.
    import numba
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        for last in (b"", b"q" * 5, b"q" * 16, b"q" * 40):
            strings = [b"%x" % (i * 2654435761 % 2**32) for i in range(70_000)] + [last]
            arr, _, _ = _guarded_strings(strings, False)
            vocab = asp.fit_vocabulary(arr)
            assert vocab.counts.tolist() == [1] * len(strings)
            assert vocab.values.to_pylist() == sorted(strings)
    finally:
        numba.set_num_threads(before)
