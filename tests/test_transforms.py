"""Tests of the feature-pipeline transforms against the plain-Python reference."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse._arrow import numpy_dtype
from arrow_sparse.kernels.cpu import transforms as kernels

from . import _reference as ref
from ._strategies import list_arrays
from .conftest import from_backend, on_device, to_backend
from .cuda_emu.fake_cupy import emulated_cupy

CAFFE2 = [[1, 2, 3], [2, 4, 6, 7], None, [3, 6]]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
STRING_TYPES = [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()]
pytestmark = pytest.mark.hypothesis


@st.composite
def string_list_arrays(draw: st.DrawFn, value_type: pa.DataType | None = None,
                       null_rows: bool = True, alphabet: str = "ab\u00e9\u4e2d",
                       max_size: int = 40) -> tuple[pa.Array, list[Any]]:
    """A (maybe sliced) list<string-like> array with null rows and elements, and its rows."""
    if value_type is None:
        value_type = draw(st.sampled_from(STRING_TYPES))
    binary = pa.types.is_binary(value_type) or pa.types.is_large_binary(value_type)
    text = st.text(alphabet, max_size=max_size)
    leaf: st.SearchStrategy[Any] = text.map(str.encode) if binary else text
    row = st.lists(st.one_of(st.none(), leaf), max_size=5)
    rows_st = st.lists(st.one_of(st.none(), row) if null_rows else row, max_size=8)
    rows = draw(rows_st)
    t = draw(st.sampled_from([pa.list_(value_type), pa.large_list(value_type)]))
    if draw(st.booleans()):
        before, after = draw(rows_st), draw(rows_st)
        return pa.array(before + rows + after, type=t).slice(len(before), len(rows)), rows
    return pa.array(rows, type=t), rows


def int_arrays(null_values: bool = True) -> st.SearchStrategy[tuple[pa.Array, list[Any]]]:
    return st.sampled_from(INTS).flatmap(
        lambda d: list_arrays(np.dtype(d), null_values=null_values))


def same_buffer(a: pa.Buffer | None, b: pa.Buffer | None) -> bool:
    return a is not None and b is not None and a.address == b.address


# ------------------------------------------------------------------------ hashing
# xxHash's own XXH3_64bits_withSeed test vectors (cli/xsum_sanity_check.c): the hash of
# the first ``len`` bytes of a generated buffer, for seeds 0 and PRIME64. They cover
# every length class of the algorithm.
XXH_PRIME32, XXH_PRIME64 = 2654435761, 11400714785074694797
XXH3_VECTORS = [
    (0, 0, 0x2D06800538D394C2), (0, XXH_PRIME64, 0xA8A6B918B2F0364A),
    (1, 0, 0xC44BDFF4074EECDB), (1, XXH_PRIME64, 0x032BE332DD766EF8),
    (6, 0, 0x27B56A84CD2D7325), (6, XXH_PRIME64, 0x84589C116AB59AB9),
    (12, 0, 0xA713DAF0DFBB77E7), (12, XXH_PRIME64, 0xE7303E1B2336DE0E),
    (24, 0, 0xA3FE70BF9D3510EB), (24, XXH_PRIME64, 0x850E80FC35BDD690),
    (48, 0, 0x397DA259ECBA1F11), (48, XXH_PRIME64, 0xADC2CBAA44ACC616),
    (80, 0, 0xBCDEFBBB2C47C90A), (80, XXH_PRIME64, 0xC6DD0CB699532E73),
    (195, 0, 0xCD94217EE362EC3A), (195, XXH_PRIME64, 0xBA68003D370CB3D9),
    (403, 0, 0xCDEB804D65C6DEA4), (403, XXH_PRIME64, 0x6259F6ECFD6443FD),
    (512, 0, 0x617E49599013CB6B), (512, XXH_PRIME64, 0x3CE457DE14C27708),
    (2048, 0, 0xDD59E2C3A5F038E0), (2048, XXH_PRIME64, 0x66F81670669ABABC),
    (2240, 0, 0x6E73A90539CF2948), (2240, XXH_PRIME64, 0x757BA8487D1B5247),
    (2367, 0, 0xCB37AEB9E5D361ED), (2367, XXH_PRIME64, 0xD2DB3415B942B42A),
]


def xxh_sanity_buffer(size: int) -> bytes:
    out = bytearray()
    state = XXH_PRIME32
    for _ in range(size):
        out.append(state >> 56)
        state = (state * XXH_PRIME64) & (2**64 - 1)
    return bytes(out)


def kernel_xxh3(data: bytes, seed: int) -> int:
    buf = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, dtype=np.uint8)
    return int(kernels.xxh3_bytes(buf, 0, len(data), np.uint64(seed), kernels.SECRET,
                                  kernels.long_secret(seed)))


@pytest.mark.parametrize("size,seed,expected", XXH3_VECTORS)
def test_xxh3_published_vectors(size: int, seed: int, expected: int) -> None:
    data = xxh_sanity_buffer(size)
    assert ref.xxh3_64(data, seed) == expected
    assert kernel_xxh3(data, seed) == expected
    words = pa.array([data], pa.large_binary())
    assert asp.hash_bucket(words, 2**63 - 1, seed=seed).to_pylist() == [expected % (2**63 - 1)]


@given(st.binary(max_size=300), st.integers(0, 2**64 - 1))
def test_xxh3_kernel_matches_reference(data: bytes, seed: int) -> None:
    assert kernel_xxh3(data, seed) == ref.xxh3_64(data, seed)


@given(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_xxh3_int_kernel_matches_reference(x: int, seed: int) -> None:
    got = int(kernels.xxh3_int(np.uint64(x), kernels.int_bitflip(seed)))
    assert got == ref.xxh3_64(x.to_bytes(8, "little"), seed)


@given(st.integers(0, 2**64 - 1), st.integers(1, 2**63 - 1))
def test_bucket_reduction_is_exact_modulo(h: int, n: int) -> None:
    assert kernels.bucket_of(h, n) == h % n


# Documented in docs/feature-transforms.md: XXH3-64 values (buckets are value % n).
HASH_VECTORS = [
    (0, 0, 0xC77B3ABB6F87ACD9),
    (1, 0, 0x2FBC593564DB792E),
    (-1, 0, 0x5111C7E47D784413),
    (123456789, 0, 0x27196AB4438F6AD5),
    (2**62, 42, 0x5DAAEB5EB9C1EF04),
    ("", 0, 0x2D06800538D394C2),
    ("abc", 0, 0x78AF5F94892F3950),
    ("apple", 7, 0xDC9709693971DC65),
    ("item_42", 0, 0x0E4AEA06BBB1E88B),
    ("\u00e9t\u00e9", 0, 0x4527085B35EB8255),
]


@pytest.mark.parametrize("value,seed,expected", HASH_VECTORS)
def test_hash_vectors(value: Any, seed: int, expected: int) -> None:
    assert ref.xxh3_64(ref.value_bytes(value), seed) == expected
    arr = pa.array([[value]])
    for buckets in (1, 10, 1000, 2**63 - 1):
        assert asp.hash_bucket(arr, buckets, seed=seed).to_pylist() == [[expected % buckets]]


def test_docs_hash_table_matches() -> None:
    doc = (Path(__file__).parents[1] / "docs" / "feature-transforms.md").read_text("utf-8")
    rows = re.findall(r"^\| `(.+?)`(?: \(int\))? \| (\d+) \| `(0x[0-9A-F]+)` \| (\d+) \|$",
                      doc, flags=re.MULTILINE)
    assert len(rows) == len(HASH_VECTORS)
    for (text, seed, digest, bucket), (value, vseed, expected) in zip(rows, HASH_VECTORS,
                                                                       strict=True):
        parsed = 2 ** int(text[3:]) if text.startswith("2**") else ast.literal_eval(text)
        assert parsed == value and int(seed) == vseed
        assert int(digest, 16) == expected and int(bucket) == expected % 1000


@given(int_arrays(), st.integers(1, 2**63 - 1), st.integers(0, 2**64 - 1))
def test_hash_bucket_ints(case: tuple[pa.Array, list[Any]], buckets: int, seed: int) -> None:
    arr, rows = case
    out = asp.hash_bucket(arr, buckets, seed=seed)
    assert out.type == (pa.large_list if isinstance(arr.type, pa.LargeListType)
                        else pa.list_)(pa.int64())
    out.validate(full=True)
    assert out.to_pylist() == ref.hash_bucket(rows, buckets, seed)
    jagged = asp.hash_bucket(asp.Jagged.from_arrow(arr), buckets, seed=seed)
    assert jagged.to_list() == ref.hash_bucket(rows, buckets, seed)


@given(string_list_arrays(), st.integers(1, 10**6), st.integers(0, 2**64 - 1))
def test_hash_bucket_strings(case: tuple[pa.Array, list[Any]], buckets: int, seed: int) -> None:
    arr, rows = case
    out = asp.hash_bucket(arr, buckets, seed=seed)
    out.validate(full=True)
    assert out.to_pylist() == ref.hash_bucket(rows, buckets, seed)
    flat = arr.flatten()
    assert asp.hash_bucket(flat, buckets, seed).to_pylist() == \
        ref.hash_bucket(flat.to_pylist(), buckets, seed)


def test_hash_bucket_long_strings_and_views() -> None:
    words = ["x" * n for n in range(0, 100, 7)] + ["\u4e2d" * 40]
    arr = pa.array([words])
    assert asp.hash_bucket(arr, 97).to_pylist() == ref.hash_bucket([words], 97)
    views = pa.array(words, type=pa.string_view())
    assert asp.hash_bucket(views, 97).to_pylist() == ref.hash_bucket(words, 97)


def test_hash_bucket_strings_in_parallel_chunks() -> None:
    # Enough strings for the parallel kernel and its balanced chunks; short and long
    # strings (every XXH3 length class) mixed so that some chunks hold only short ones.
    rng = np.random.default_rng(5)
    sizes = np.where(rng.random(40_000) < 0.98, rng.integers(0, 17, 40_000),
                     rng.integers(17, 300, 40_000))
    words = ["".join(chr(97 + (i + j) % 26) for j in range(n)) for i, n in enumerate(sizes)]
    arr = pa.array(words).slice(3, 39_990)
    got = asp.hash_bucket(arr, 1_000_003, seed=11).to_numpy()
    sample = rng.integers(0, len(arr), 400)
    want = [ref.hash_bucket([arr[int(i)].as_py()], 1_000_003, 11)[0] for i in sample]
    assert got[sample].tolist() == want
    start, stop = 5, len(arr) + 3  # the kernel on logical positions [5, stop)
    offsets = np.frombuffer(arr.buffers()[1], np.int32)
    data = np.frombuffer(arr.buffers()[2], np.uint8)
    serial = np.zeros(stop, np.int64)
    kernels.hash_strings(offsets, data, start, start + 100, 11, 1_000_003, serial)
    parallel = np.zeros(stop, np.int64)
    kernels.hash_strings(offsets, data, start, stop, 11, 1_000_003, parallel)
    assert parallel[:start].tolist() == [0] * start  # only [start, stop) is written
    assert serial[start:start + 100].tolist() == parallel[start:start + 100].tolist()
    assert parallel[start:].tolist() == got[start - 3:].tolist()


@pytest.mark.parametrize("chunks", [1, 2, 7, 64])
def test_balanced_bounds_cover_the_range(chunks: int) -> None:
    offsets = np.cumsum([0] + [1] * 50 + [1000] * 3 + [0] * 40).astype(np.int64)
    bounds = kernels._balanced_bounds(offsets, 2, len(offsets) - 1, chunks)
    assert bounds[0] == 2 and bounds[-1] == len(offsets) - 1 and len(bounds) == chunks + 1
    assert (np.diff(bounds) >= 0).all()
    if chunks == 2:  # the three long strings weigh more than the other ninety
        assert 50 <= bounds[1] <= 53


def test_hash_bucket_is_zero_copy_on_offsets_and_validity() -> None:
    arr = pa.array(CAFFE2 * 3).slice(2, 6)
    out = asp.hash_bucket(arr, 100)
    assert out.offset == arr.offset
    assert same_buffer(out.buffers()[0], arr.buffers()[0])  # row validity
    assert same_buffer(out.buffers()[1], arr.buffers()[1])  # offsets
    j = asp.Jagged.from_arrow(arr)
    jout = asp.hash_bucket(j, 100)
    assert jout.offsets is j.offsets and jout.validity is j.validity
    assert jout.values.dtype == np.int64


def test_hash_bucket_same_value_same_bucket_across_dtypes() -> None:
    expected = asp.hash_bucket(np.array([0, 5, 100], dtype=np.int64), 1000)
    for dtype in INTS:
        got = asp.hash_bucket(np.array([0, 5, 100], dtype=dtype), 1000)
        np.testing.assert_array_equal(got, expected)
    neg = asp.hash_bucket(np.array([-1], dtype=np.int8), 2**63 - 1)
    assert neg.tolist() == [ref.xxh3_64(b"\xff" * 8) % (2**63 - 1)]
    big = asp.hash_bucket(np.array([2**64 - 1], dtype=np.uint64), 2**63 - 1)
    assert big.tolist() == neg.tolist()


def test_hash_bucket_kinds_in_and_out() -> None:
    chunked = pa.chunked_array([pa.array(CAFFE2[:2]), pa.array(CAFFE2[2:])])
    out = asp.hash_bucket(chunked, 10)
    assert isinstance(out, pa.ChunkedArray) and out.num_chunks == 2
    assert out.to_pylist() == ref.hash_bucket(CAFFE2, 10)
    empty = asp.hash_bucket(pa.chunked_array([], type=pa.list_(pa.string())), 10)
    assert empty.type == pa.list_(pa.int64()) and len(empty) == 0
    assert asp.hash_bucket([1, 2, 3], 10).tolist() == ref.hash_bucket([1, 2, 3], 10)
    matrix = asp.hash_bucket(np.arange(6).reshape(2, 3), 10)
    assert matrix.shape == (2, 3) and matrix.ravel().tolist() == ref.hash_bucket(list(range(6)), 10)
    flat = asp.hash_bucket(pa.array([1, None, 3], pa.int32()), 10)
    assert flat.to_pylist() == [ref.hash_bucket([1], 10)[0], None, ref.hash_bucket([3], 10)[0]]


def test_hash_bucket_nested_fixed_size_and_views() -> None:
    nested = pa.array([[[1, 2], None, [3]], None, [[]]])
    rows = nested.to_pylist()
    assert asp.hash_bucket(nested, 10).to_pylist() == ref.hash_bucket(rows, 10)
    assert asp.hash_bucket(nested.slice(1), 10).to_pylist() == ref.hash_bucket(rows[1:], 10)
    j = asp.Jagged.from_arrow(nested)
    assert asp.hash_bucket(j, 10).to_list() == ref.hash_bucket(rows, 10)
    fixed = pa.array([[[1, 2], [3, 4]], [[5, 6]]], type=pa.list_(pa.list_(pa.int64(), 2)))
    out = asp.hash_bucket(fixed.slice(1), 10)
    assert out.type == pa.list_(pa.list_(pa.int64(), 2))
    assert out.to_pylist() == ref.hash_bucket([[[5, 6]]], 10)
    jf = asp.hash_bucket(asp.Jagged.from_arrow(fixed), 10)
    assert jf.values.shape == (3, 2) and jf.to_list() == ref.hash_bucket(fixed.to_pylist(), 10)
    view = pa.array([["a"], None, ["b", "c"]], type=pa.list_view(pa.string()))
    assert asp.hash_bucket(view, 10).to_pylist() == ref.hash_bucket(view.to_pylist(), 10)


def test_hash_bucket_keeps_field_name() -> None:
    t = pa.list_(pa.field("element", pa.int32()))
    out = asp.hash_bucket(pa.array([[1]], type=t), 10)
    assert out.type.value_field.name == "element"


def test_hash_bucket_errors() -> None:
    arr = pa.array(CAFFE2)
    with pytest.raises(ValueError, match=r"hash_bucket: num_buckets must be in \[1,"
                                         r" 9223372036854775807\], got 0"):
        asp.hash_bucket(arr, 0)
    with pytest.raises(TypeError, match="hash_bucket: num_buckets must be an integer, got float"):
        asp.hash_bucket(arr, 10.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"hash_bucket: seed must be in \[0,"
                                         r" 18446744073709551615\], got -1"):
        asp.hash_bucket(arr, 10, seed=-1)
    with pytest.raises(TypeError, match="hash_bucket: values of Arrow type double cannot be"
                                        " hashed; hash_bucket takes integers or strings"):
        asp.hash_bucket(pa.array([[1.5]]), 10)
    with pytest.raises(TypeError, match="values of dtype float64 cannot be hashed"):
        asp.hash_bucket(np.array([1.5]), 10)
    with pytest.raises(TypeError, match="values of dtype bool cannot be hashed"):
        asp.hash_bucket(asp.Jagged.from_list([[True]]), 10)
    with pytest.raises(TypeError, match=r"hash_bucket: values must be an Arrow array, a Jagged"
                                        r" or a numpy array, got object"):
        asp.hash_bucket(object(), 10)
    with pytest.raises(TypeError, match=r"pass strings as an Arrow array \(pa.array\(...\)\),"
                                        r" got dtype <U1"):
        asp.hash_bucket(np.array(["a"]), 10)
    with pytest.raises(TypeError, match=r"values of Arrow type dictionary<values=string,"
                                        r" indices=int32, ordered=0> are not supported; decode"
                                        r" it first"):
        asp.hash_bucket(pa.array(["a"]).dictionary_encode(), 10)
    with pytest.raises(TypeError, match="values of Arrow type struct<a: int64> are not supported"):
        asp.hash_bucket(pa.array([{"a": 1}]), 10)


# ------------------------------------------------------------------------ bucketize
@given(st.data())
def test_bucketize_matches_digitize(data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(["int32", "int64", "uint8", "float32", "float64"]))
    arr, rows = data.draw(list_arrays(np.dtype(dtype), null_values=True))
    bounds = sorted(data.draw(st.lists(st.integers(-50, 50), max_size=6)))
    right = data.draw(st.booleans())
    out = asp.bucketize(arr, bounds, right=right)
    out.validate(full=True)
    assert out.to_pylist() == ref.map_leaves(rows, lambda x: ref.bucketize(x, bounds, right))
    flat = np.array(ref.leaves(rows), dtype=dtype)
    np.testing.assert_array_equal(asp.bucketize(flat, bounds, right=right),
                                  np.digitize(flat, bounds, right=right))


def test_bucketize_semantics() -> None:
    x = np.array([-np.inf, 0.0, 1.0, 1.5, 2.0, 3.0, np.inf, np.nan])
    b = [1.0, 2.0, 2.0]
    np.testing.assert_array_equal(asp.bucketize(x, b), [0, 0, 1, 1, 3, 3, 3, 3])
    np.testing.assert_array_equal(asp.bucketize(x, b, right=True), [0, 0, 0, 1, 1, 3, 3, 3])
    for right in (False, True):
        np.testing.assert_array_equal(asp.bucketize(x, b, right=right),
                                      np.digitize(x, b, right=right))
    np.testing.assert_array_equal(asp.bucketize(np.array([5, -5]), []), [0, 0])
    np.testing.assert_array_equal(asp.bucketize(np.array([1, 2]), np.array([1.5])), [0, 1])
    j = asp.Jagged.from_list([[0.5, None, 3.0], None])
    out = asp.bucketize(j, [1.0])
    assert out.to_list() == [[0, None, 1], None] and out.offsets is j.offsets


def test_bucketize_errors() -> None:
    with pytest.raises(ValueError, match=r"bucketize: boundaries must be non-decreasing \(first"
                                         r" at position 2: 1\)"):
        asp.bucketize(np.array([1]), [1, 3, 1])
    with pytest.raises(ValueError, match=r"bucketize: boundaries must not contain NaN \(first at"
                                         r" position 1: nan\)"):
        asp.bucketize(np.array([1.0]), [0.0, np.nan])
    with pytest.raises(ValueError, match=r"boundaries must be 1-dimensional, got shape \(1, 1\)"):
        asp.bucketize(np.array([1.0]), [[0.0]])
    with pytest.raises(TypeError, match="bucketize: boundaries must be numbers, got dtype bool"):
        asp.bucketize(np.array([1.0]), [True])
    with pytest.raises(TypeError, match="bucketize: values of Arrow type string cannot be"
                                        " bucketized"):
        asp.bucketize(pa.array([["a"]]), [1])
    with pytest.raises(TypeError, match="bucketize: right must be True or False, got int"):
        asp.bucketize(np.array([1.0]), [1.0], right=1)  # type: ignore[arg-type]


# --------------------------------------------------------------------- value counts
@given(int_arrays())
def test_value_counts_ints(case: tuple[pa.Array, list[Any]]) -> None:
    arr, rows = case
    out = asp.value_counts(arr)
    assert out.type == pa.struct([("values", arr.type.value_type), ("counts", pa.int64())])
    assert [(d["values"], d["counts"]) for d in out.to_pylist()] == ref.value_counts(rows)
    values, counts = asp.value_counts(asp.Jagged.from_arrow(arr))
    assert values.dtype == numpy_dtype(arr.type.value_type)
    assert list(zip(values.tolist(), counts.tolist(), strict=True)) == ref.value_counts(rows)


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


def test_value_counts_errors() -> None:
    with pytest.raises(TypeError, match="value_counts: values must be an Arrow array, a Jagged"
                                        " or a numpy array, got dict"):
        asp.value_counts({})
    with pytest.raises(TypeError, match=r"value_counts: rows must hold scalars, got values of"
                                        r" shape \(2, 2\)"):
        asp.value_counts(asp.Jagged.from_lengths(np.zeros((2, 2)), [2]))
    with pytest.raises(TypeError, match="value_counts: values of Arrow type struct"):
        asp.value_counts(pa.array([{"a": 1}]))


# ----------------------------------------------------------------------- vocabulary
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


# ---------------------------------------------------------------- pad or truncate
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


# ------------------------------------------------------------------ null handling
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
    assert asp.length_stats(arr).total_values == 2
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


# ---------------------------------------------------------------- length stats
@given(st.data())
def test_length_stats(data: st.DataObject) -> None:
    arr, rows = data.draw(st.one_of(int_arrays(), string_list_arrays()))
    stats = asp.length_stats(arr)
    assert stats.to_dict() == ref.length_stats(rows)
    if pa.types.is_integer(arr.type.value_type):
        assert asp.length_stats(asp.Jagged.from_arrow(arr)) == stats
    chunked = pa.chunked_array([arr, arr], type=arr.type)
    assert asp.length_stats(chunked).to_dict() == ref.length_stats(rows + rows)


def test_length_stats_percentiles_and_nesting() -> None:
    rows = [[0] * n for n in range(1, 101)]
    stats = asp.length_stats(pa.array(rows))
    assert (stats.min, stats.p50, stats.p90, stats.p99, stats.max) == (1, 50, 90, 99, 100)
    none = asp.length_stats(pa.array([None, None], pa.list_(pa.int64())))
    assert none.to_dict() == ref.length_stats([None, None])
    nested = asp.length_stats(pa.array([[[1], None], None, [[]]]))
    assert (nested.rows, nested.null_rows, nested.total_values, nested.null_values) == (3, 1, 3, 1)
    assert asp.length_stats(asp.Jagged.from_list([[[1], None], None, [[]]])) == nested
    assert asp.length_stats(pa.chunked_array([], pa.list_(pa.int8()))).rows == 0


def test_length_stats_errors() -> None:
    with pytest.raises(TypeError, match="length_stats: values must be an Arrow list array, a"
                                        " ChunkedArray or a Jagged, got ndarray"):
        asp.length_stats(np.array([1]))
    with pytest.raises(TypeError, match="length_stats: values must be an Arrow list array or a"
                                        " Jagged, got Arrow type int64"):
        asp.length_stats(pa.array([1]))


def test_every_transform_rejects_object_with_its_name() -> None:
    vocab = asp.fit_vocabulary(np.array([1]))
    calls = {
        "hash_bucket": (10,), "bucketize": ([1],), "categorify": (vocab,),
        "value_counts": (), "length_stats": (), "pad_or_truncate": (2,),
        "drop_nulls": (), "fill_null": (0,), "fit_vocabulary": (),
    }
    for name, rest in calls.items():
        with pytest.raises(asp.errors.ArrowSparseTypeError, match=f"^{name}: "):
            getattr(asp, name)(object(), *rest)


# ------------------------------------------------------- layouts the builders rarely make
def test_child_with_offset_and_null_rows_over_values() -> None:
    # A list array over a sliced child (child.offset > 0) whose null row covers values.
    child = pa.array([100, 101, 102, 1, None, 3, 7, 7, 5])
    arr = pa.ListArray.from_arrays(pa.array([0, 3, 5, 6], pa.int32()), child.slice(3),
                                   mask=pa.array([False, True, False]))
    rows = arr.to_pylist()
    assert rows == [[1, None, 3], None, [5]]
    assert arr.values.offset == 3
    assert asp.hash_bucket(arr, 97).to_pylist() == ref.hash_bucket(rows, 97)
    assert [(d["values"], d["counts"]) for d in asp.value_counts(arr).to_pylist()] == \
        ref.value_counts(rows)  # the 7s under the null row are not counted
    vocab = asp.fit_vocabulary(arr)
    assert vocab.values.tolist() == [1, 3, 5]
    assert asp.categorify(arr, vocab).to_pylist() == [[2, 1, 3], None, [4]]
    assert asp.bucketize(arr, [2]).to_pylist() == [[0, None, 1], None, [1]]
    assert asp.drop_nulls(arr).to_pylist() == [[1, 3], None, [5]]
    assert asp.fill_null(arr, 0).to_pylist() == [[1, 0, 3], None, [5]]
    assert asp.fill_null(arr, 0, empty_null_rows=True).to_pylist() == [[1, 0, 3], [], [5]]
    assert asp.pad_or_truncate(arr, 2, side="left").to_pylist() == [[None, 3], None, [0, 5]]
    stats = asp.length_stats(arr)
    assert (stats.total_values, stats.null_values, stats.null_rows) == (4, 1, 1)


def test_empty_inputs() -> None:
    for t in (pa.list_(pa.int64()), pa.large_list(pa.string())):
        empty = pa.array([], type=t)
        assert len(asp.hash_bucket(empty, 10)) == 0
        assert asp.value_counts(empty).to_pylist() == []
        assert len(asp.fit_vocabulary(empty)) == 0
        assert asp.drop_nulls(empty).to_pylist() == []
        assert asp.length_stats(empty).rows == 0
    assert asp.pad_or_truncate(pa.array([], pa.list_(pa.int8())), 3).type == \
        pa.list_(pa.int8(), 3)
    assert asp.hash_bucket(np.zeros(0, dtype=np.int64), 10).shape == (0,)
    assert asp.categorify(pa.array([[1]]), asp.fit_vocabulary(np.zeros(0, np.int64))
                          ).to_pylist() == [[1]]
    assert asp.categorify(pa.array([["a", ""]]), asp.fit_vocabulary(pa.array([""]))
                          ).to_pylist() == [[1, 2]]


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


def test_categorify_strings_same_words_other_length() -> None:
    # Zero bytes pad the words a short string is compared by: its length tells them apart.
    vocab_words = [b"a", b"a\x00", b"", b"x" * 20, b"x" * 19 + b"y", b"\x00" * 16]
    vocab = asp.Vocabulary(pa.array(vocab_words, pa.binary()), [6, 5, 4, 3, 2, 1])
    probe = vocab_words + [b"a\x00\x00", b"x" * 21, b"\x00" * 15, b"b"]
    got = asp.categorify(pa.array([probe], pa.list_(pa.binary())), vocab).to_pylist()
    assert got == [[2, 3, 4, 5, 6, 7, 1, 1, 1, 1]]


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


@pytest.mark.parametrize("count", [0, 1, 63, 64, 65, 300])
def test_bucketize_counting_and_binary_search_agree(count: int) -> None:
    rng = np.random.default_rng(count)
    bounds = np.sort(rng.integers(-50, 50, count)).astype(np.float64)
    x = np.concatenate([rng.uniform(-60, 60, 500), bounds, [np.nan, np.inf, -np.inf]])
    for right in (False, True):
        np.testing.assert_array_equal(asp.bucketize(x, bounds, right=right),
                                      np.digitize(x, bounds, right=right))


def test_vocabulary_load_missing_file(tmp_path) -> None:
    with pytest.raises(OSError, match="Vocabulary.load: .* could not be opened"):
        asp.Vocabulary.load(tmp_path / "missing.parquet")


# ------------------------------------------------------------------- every backend
# Jagged columns (and flat arrays) on every backend: cpu, cuda_emu (host arrays through
# the CUDA launchers), cupy_emu (device arrays of the stand-in CuPy, the device path)
# and cupy (a GPU). Device results are compared with the host results of the same
# Jagged. Strings live in Arrow's host buffers, so only numbers go to the device.
def _null_rows_over_values() -> pa.Array:
    values = pa.array([1, None, 3, 4, 5, 6, None, 8, 9], type=pa.int16())
    return pa.ListArray.from_arrays(pa.array([0, 2, 5, 5, 9], pa.int32()), values,
                                    mask=pa.array([False, True, False, True]))


COLUMNS: dict[str, pa.Array] = {
    "caffe2": pa.array([[1, 2, 3], [2, None, 6, 7], None, [3, 6], []]),
    "sliced large": pa.array([[9], [1, 2, 3], None, [2, 4, 6, 7], [3, 6], [5]],
                             pa.large_list(pa.uint32())).slice(1, 4),
    "null rows over values": _null_rows_over_values(),
    "nested": pa.array([[[1, 2], None], None, [[3, 3], [], [7, -2]]],
                       pa.list_(pa.large_list(pa.int8()))),
    "empty": pa.array([], pa.list_(pa.int64())),
}
FLOATS = pa.array([[0.5, None, 2.0], [float("nan"), -1.0], None, [], [2.0, 7.5]]).slice(0)


def on(backend: str, column: pa.Array) -> Any:
    """The column as the backend takes it: a host Jagged, or a Jagged on the device."""
    return to_backend(asp.Jagged.from_arrow(column), backend)


def same_jagged(got: Any, expected: asp.Jagged, backend: str) -> None:
    got = from_backend(got, backend)
    assert isinstance(got, asp.Jagged)
    assert (got.dtype, got.offsets.dtype) == (expected.dtype, expected.offsets.dtype)
    assert got.to_list() == expected.to_list()


@pytest.mark.parametrize("name", list(COLUMNS))
def test_element_wise_transforms_on_every_backend(backend: str, name: str) -> None:
    host = asp.Jagged.from_arrow(COLUMNS[name])
    vocab = asp.fit_vocabulary(pa.array([3, 2, 2, 7, -2]))
    x = on(backend, COLUMNS[name])
    same_jagged(asp.hash_bucket(x, 97, seed=5), asp.hash_bucket(host, 97, seed=5), backend)
    bounds = np.array([1, 3, 6])
    same_jagged(asp.bucketize(x, to_backend(bounds, backend), right=True),
                asp.bucketize(host, bounds, right=True), backend)
    same_jagged(asp.categorify(x, vocab), asp.categorify(host, vocab), backend)
    same_jagged(asp.categorify(x, vocab), asp.categorify(host, vocab), backend)  # cached
    if on_device(backend) and not isinstance(host.values, asp.Jagged):
        result = asp.hash_bucket(x, 97)  # zero-copy: the input's offsets and masks
        assert result.offsets is x.offsets and result.validity is x.validity
        assert result.values_validity is x.values_validity


def test_element_wise_transforms_of_arrays_and_floats_on_every_backend(backend: str) -> None:
    ints = np.array([[3, -1, 7], [2**40, 0, 3]], dtype=np.int64)
    got = from_backend(asp.hash_bucket(to_backend(ints, backend), 1000), backend)
    np.testing.assert_array_equal(got, asp.hash_bucket(ints, 1000))
    vocab = asp.fit_vocabulary(ints[1])
    got = from_backend(asp.categorify(to_backend(ints, backend), vocab), backend)
    np.testing.assert_array_equal(got, asp.categorify(ints, vocab))
    floats = np.array([0.5, np.nan, -np.inf, 2.0, 1.0])
    bounds = np.array([0.0, 1.0, 1.0, 2.0])
    got = from_backend(asp.bucketize(to_backend(floats, backend), to_backend(bounds, backend)),
                       backend)
    np.testing.assert_array_equal(got, np.digitize(floats, bounds))
    host = asp.Jagged.from_arrow(FLOATS)
    same_jagged(asp.bucketize(on(backend, FLOATS), to_backend(bounds, backend)),
                asp.bucketize(host, bounds), backend)
    vectors = asp.Jagged.from_offsets(np.arange(12, dtype=np.int32).reshape(6, 2),
                                      np.array([1, 3, 3, 6]))
    same_jagged(asp.hash_bucket(to_backend(vectors, backend), 10),
                asp.hash_bucket(vectors, 10), backend)


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
    assert asp.length_stats(x) == asp.length_stats(host)


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


def test_device_boundaries_are_checked_on_the_device() -> None:
    # Data-dependent checks of device inputs are device checks (deferred to the next
    # check); the O(1) ones stay on the host with the host's messages.
    with emulated_cupy() as cp:
        x = cp.asarray(np.array([0.5, 1.5]))
        for bounds, position in (([0.0, 2.0, 1.0], 2), ([np.nan, 1.0], 0), ([np.nan], 0)):
            asp.bucketize(x, cp.asarray(np.array(bounds)))
            with pytest.raises(ValueError, match=r"^bucketize: boundaries must be "
                               r"non-decreasing and not NaN \(first at position "
                               rf"{position}; found by a device check, reported by a later "
                               r"call\)$"):
                asp.offsets_to_lengths(cp.asarray(np.array([0, 1])))
        asp.bucketize(cp.asarray(np.zeros(0)), cp.asarray(np.array([2.0, 1.0])))
        with pytest.raises(ValueError, match="boundaries must be non-decreasing"):
            asp.offsets_to_lengths(cp.asarray(np.array([0, 1])))  # checked without values
        with pytest.raises(TypeError, match="^bucketize: boundaries must be numbers"):
            asp.bucketize(x, cp.asarray(np.array([True])))
        with pytest.raises(ValueError, match="^bucketize: boundaries must be 1-dimensional"):
            asp.bucketize(x, cp.asarray(np.zeros((1, 2))))


def test_device_and_host_inputs_do_not_mix() -> None:
    with emulated_cupy() as cp:
        x = asp.Jagged.from_arrow(COLUMNS["caffe2"]).to_device("cuda")
        with pytest.raises(TypeError, match=r"^bucketize: boundaries is a host \(numpy/Arrow\) "
                           r"array but values is a device \(cupy\) array; move them to one "
                           "device first"):
            asp.bucketize(x, [1, 2])
        with pytest.raises(TypeError, match=r"^bucketize: values is a host \(numpy/Arrow\) "
                           r"array but boundaries is a device"):
            asp.bucketize(np.arange(3), cp.asarray(np.array([1])))
        with pytest.raises(TypeError, match="^hash_bucket: values of dtype float64 cannot be "
                           "hashed"):
            asp.hash_bucket(cp.asarray(np.zeros(2)), 10)
        with pytest.raises(TypeError, match="^categorify: values of dtype int64 do not match a "
                           "vocabulary of string values"):
            asp.categorify(x, asp.fit_vocabulary(pa.array(["a"])))
        with pytest.raises(ValueError, match="^pad_or_truncate: pad_value 0.5 does not fit"):
            asp.pad_or_truncate(x, 2, pad_value=0.5)
        with pytest.raises(TypeError, match="^fit_vocabulary: values of type float64 cannot "
                           "form a vocabulary"):
            asp.fit_vocabulary(cp.asarray(np.zeros(2)))
        with pytest.raises(TypeError, match="^drop_nulls: values must be an Arrow list array, "
                           "a ChunkedArray or a Jagged, got ndarray"):
            asp.drop_nulls(cp.asarray(np.zeros(2)))


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


def test_every_transform_is_in_the_synchronisation_table() -> None:
    from .test_cuda_dispatch import SYNCS

    ops = {name for name in asp.transforms.__all__ if name.islower()}
    assert ops <= {key.split(" ")[0] for key in SYNCS}
