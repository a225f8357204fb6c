"""Tests of ``arrow_sparse.transforms.hashing``: :func:`hash_bucket` (XXH3-64) and
:func:`bucketize`.

Compared with xxHash's published vectors and the plain-Python XXH3 and oracles of
``tests/_reference.py`` (Hypothesis, on the CPU), with numpy's ``digitize``, on every
backend (cpu, the CUDA emulator, the stand-in CuPy, a GPU) and with the CPU through
the emulator.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.kernels.cpu import transforms as kernels

from .. import _reference as ref
from .._strategies import list_arrays
from ..conftest import from_backend, on_device, to_backend
from ..cuda_emu.fake_cupy import emulated_cupy
from ._helpers import (
    CAFFE2,
    COLUMNS,
    FLOATS,
    INTS,
    _ints,
    _words,
    child_with_offset,
    int_arrays,
    kernel_xxh3,
    on,
    run_through_the_emulator,
    same_buffer,
    same_jagged,
    string_list_arrays,
)

# --------------------------------------------------------------------- XXH3 test vectors
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


@pytest.mark.parametrize("size,seed,expected", XXH3_VECTORS)
def test_xxh3_published_vectors(size: int, seed: int, expected: int) -> None:
    data = xxh_sanity_buffer(size)
    assert ref.xxh3_64(data, seed) == expected
    assert kernel_xxh3(data, seed) == expected
    words = pa.array([data], pa.large_binary())
    assert asp.hash_bucket(words, 2**63 - 1, seed=seed).to_pylist() == [expected % (2**63 - 1)]


# --------------------------------------------------------------------------- hash_bucket
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
    doc = (Path(__file__).parents[2] / "docs" / "feature-transforms.md").read_text("utf-8")
    rows = re.findall(r"^\| `(.+?)`(?: \(int\))? \| (\d+) \| `(0x[0-9A-F]+)` \| (\d+) \|$",
                      doc, flags=re.MULTILINE)
    assert len(rows) == len(HASH_VECTORS)
    for (text, seed, digest, bucket), (value, vseed, expected) in zip(rows, HASH_VECTORS,
                                                                       strict=True):
        parsed = 2 ** int(text[3:]) if text.startswith("2**") else ast.literal_eval(text)
        assert parsed == value and int(seed) == vseed
        assert int(digest, 16) == expected and int(bucket) == expected % 1000


@pytest.mark.hypothesis
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


@pytest.mark.hypothesis
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


# ----------------------------------------------------------------------------- bucketize
@pytest.mark.hypothesis
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


@pytest.mark.parametrize("count", [0, 1, 63, 64, 65, 300])
def test_bucketize_counting_and_binary_search_agree(count: int) -> None:
    rng = np.random.default_rng(count)
    bounds = np.sort(rng.integers(-50, 50, count)).astype(np.float64)
    x = np.concatenate([rng.uniform(-60, 60, 500), bounds, [np.nan, np.inf, -np.inf]])
    for right in (False, True):
        np.testing.assert_array_equal(asp.bucketize(x, bounds, right=right),
                                      np.digitize(x, bounds, right=right))


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


# ------------------------------------------------------ layouts the builders rarely make
def test_child_with_offset_and_null_rows_over_values() -> None:
    arr, rows = child_with_offset()
    assert asp.hash_bucket(arr, 97).to_pylist() == ref.hash_bucket(rows, 97)
    assert asp.bucketize(arr, [2]).to_pylist() == [[0, None, 1], None, [1]]


def test_empty_inputs() -> None:
    for t in (pa.list_(pa.int64()), pa.large_list(pa.string())):
        empty = pa.array([], type=t)
        assert len(asp.hash_bucket(empty, 10)) == 0
    assert asp.hash_bucket(np.zeros(0, dtype=np.int64), 10).shape == (0,)


# -------------------------------------------------------- every backend (the device too)
@pytest.mark.parametrize("name", list(COLUMNS))
def test_hash_bucket_and_bucketize_on_every_backend(backend: str, name: str) -> None:
    host = asp.Jagged.from_arrow(COLUMNS[name])
    x = on(backend, COLUMNS[name])
    same_jagged(asp.hash_bucket(x, 97, seed=5), asp.hash_bucket(host, 97, seed=5), backend)
    bounds = np.array([1, 3, 6])
    same_jagged(asp.bucketize(x, to_backend(bounds, backend), right=True),
                asp.bucketize(host, bounds, right=True), backend)
    if on_device(backend) and not isinstance(host.values, asp.Jagged):
        result = asp.hash_bucket(x, 97)  # zero-copy: the input's offsets and masks
        assert result.offsets is x.offsets and result.validity is x.validity
        assert result.values_validity is x.values_validity


def test_hash_bucket_and_bucketize_of_arrays_and_floats_on_every_backend(backend: str) -> None:
    ints = np.array([[3, -1, 7], [2**40, 0, 3]], dtype=np.int64)
    got = from_backend(asp.hash_bucket(to_backend(ints, backend), 1000), backend)
    np.testing.assert_array_equal(got, asp.hash_bucket(ints, 1000))
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


#: Public calls and the kernels they must launch through the emulator.
PUBLIC: dict[str, tuple[Callable[[], Any], set[str]]] = {
    "hash_bucket-ints": (lambda: asp.hash_bucket(_ints(), 1000, seed=3), {"hash_ints"}),
    "hash_bucket-strings": (lambda: asp.hash_bucket(_words(), 97), {"hash_strings"}),
    "hash_bucket-jagged": (lambda: asp.hash_bucket(asp.Jagged.from_arrow(_ints()), 64),
                           {"hash_ints"}),
    "bucketize": (lambda: asp.bucketize(pa.array([[0.5, None, 2.0], [float("nan")]]),
                                        [0.0, 1.0, 2.0], right=True), {"bucketize"}),
}


@pytest.mark.parametrize("case", list(PUBLIC))
def test_public_transforms_through_the_emulator(case: str) -> None:
    run_through_the_emulator(case, *PUBLIC[case])


def test_hash_bucket_strings_equal_the_xxhash_package() -> None:
    # Every length 0..300 (each XXH3 formula: 0, 1-3, 4-8, 9-16, 17-128, 129-240, more),
    # mixed in one list; null rows and null strings; sliced; large and view types.
    xxhash = pytest.importorskip("xxhash")
    rng = np.random.default_rng(2)
    words = ["".join(chr(33 + int(c)) for c in rng.integers(0, 90, n)) for n in range(301)]
    order = rng.permutation(len(words))
    mixed = [words[i] for i in order] + ["\u00e9\u4e2d", ""]
    for seed, buckets in [(0, 2**63 - 1), (7, 1_000_003), (2**64 - 1, 1024)]:
        want = [xxhash.xxh3_64_intdigest(w.encode(), seed=seed) % buckets for w in mixed]
        rows = pa.array([mixed[:150], None, mixed[150:], [None, "x"]],
                        type=pa.list_(pa.string()))
        got = asp.hash_bucket(rows, buckets, seed=seed).to_pylist()
        assert got[0] + got[2] == want and got[1] is None
        assert got[3] == [None, xxhash.xxh3_64_intdigest(b"x", seed=seed) % buckets]
        for typ in (pa.large_string(), pa.string_view(), pa.binary()):
            flat = pa.array(["pad"] + mixed, type=typ).slice(1)
            assert asp.hash_bucket(flat, buckets, seed=seed).to_pylist() == want


@pytest.mark.parametrize("threads", [1, 2])
def test_hash_bucket_many_mixed_strings_equal_the_xxhash_package(threads: int) -> None:
    # Above the parallel threshold: mixed length classes split over the kernel threads.
    import numba
    xxhash = pytest.importorskip("xxhash")
    rng = np.random.default_rng(4)
    sizes = rng.choice([0, 2, 5, 8, 9, 12, 16, 17, 40, 200, 300], 80_000)
    words = [("item_" + str(i) * 40)[:n] for i, n in enumerate(sizes.tolist())]
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        got = asp.hash_bucket(pa.array(words), 1_000_003, seed=5).to_numpy()
    finally:
        numba.set_num_threads(before)
    want = [xxhash.xxh3_64_intdigest(w.encode(), seed=5) % 1_000_003 for w in words]
    assert got.tolist() == want
