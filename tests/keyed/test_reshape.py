"""Tests of ``arrow_sparse.keyed.reshape``: ``permute``, ``split``, ``concat``, ``regroup``,
``regroup_as_dict``, ``block_bucketize`` and ``to_padded_dict``.

Each operation (a function of the module, and the KeyedJagged method that calls it) against
a plain-Python reading of ``{key: rows}`` tables (``_reference.py``; a row is a list of
values or None for a null row), ``block_bucketize`` also against FBGEMM's
``block_bucketize_sparse_features`` where fbgemm-gpu is installed; then its errors, its
property test (Hypothesis, on the host: KeyedJagged is built there) and the operation on
every backend of the ``backend`` fixture, whose result must equal the host's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arrow_sparse import KeyedJagged, keyed
from arrow_sparse.errors import (
    ArrowSparseIndexError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)

from .._strategies import scalars
from ._helpers import (
    ABC,
    ABC_W,
    MAKE_IDS,
    MAKES,
    RESHAPE_OPS,
    abc,
    assert_kj,
    build,
    caffe2_map,
    nn,
    pick,
    same,
    same_on_backend,
    weights_of,
)
from ._reference import ref_block_bucketize, ref_pad
from ._strategies import INTS
from ._strategies import keyed as keyed_strategy


# --------------------------------------------------------------------- permute
@pytest.mark.parametrize("order", [["c", "a"], [2, 0], np.array([1, 2]), ["b"], [],
                                   ("a", "c", "b")])
def test_permute(order: Any) -> None:
    kj = abc()
    names = [kj.keys()[o] if isinstance(o, (int, np.integer)) else o for o in list(order)]
    out = kj.permute(order)
    assert_kj(out, names, {k: ABC[k] for k in names}, {k: ABC_W[k] for k in names})
    assert out.batch_size == 3


def test_permute_consecutive_keys_are_views() -> None:
    kj = abc()
    out = kj.permute(["b", "c"])
    assert np.shares_memory(out.values, kj.values)
    assert np.shares_memory(out.weights, kj.weights)
    gathered = kj.permute(["c", "b"])
    assert not np.shares_memory(gathered.values, kj.values)


def test_permute_integer_keys_are_names() -> None:
    kj = KeyedJagged.from_arrow(caffe2_map())
    out = kj.permute([3, 1])
    assert out.keys() == [3, 1]
    assert out.values.tolist() == [101, 102, 103, 10, 11, 11]
    with pytest.raises(ArrowSparseIndexError,
                       match=r"keys_or_indices is not a key \(first at position 0: 0\)"):
        kj.permute([0])


def test_permute_repeated_keys() -> None:
    kj = abc()
    out = kj.permute(["c", "a", "c"])
    assert out.keys() == ["c", "a", "c"]
    assert_kj(out, ["c", "a", "c"], {k: ABC[k] for k in "ca"}, {k: ABC_W[k] for k in "ca"})
    assert out["c"].to_list() == ABC["c"]
    assert out.permute(["c"]).keys() == ["c"]  # a repeated name resolves to its first copy
    assert out.permute([2, 1]).keys() == ["c", "a"]
    with pytest.raises(ArrowSparseValueError, match=r"column names must be unique"):
        out.to_arrow()


def test_permute_errors() -> None:
    kj = abc()
    with pytest.raises(ArrowSparseIndexError,
                       match=r"keys_or_indices is not a key \(first at position 1: 'z'\)"):
        kj.permute(["a", "z"])
    with pytest.raises(ArrowSparseIndexError,
                       match=r"keys_or_indices out of range \[0, 3\) \(first at position 0: 3\)"):
        kj.permute([3])
    with pytest.raises(ArrowSparseIndexError, match=r"out of range \[0, 3\)"):
        kj.permute([-1])
    with pytest.raises(ArrowSparseTypeError, match="must be a sequence of keys or positions"):
        kj.permute("ab")
    with pytest.raises(ArrowSparseIndexError, match="is not a key"):
        kj.permute([["a"]])


@pytest.mark.hypothesis
@settings(deadline=None)
@given(data=st.data())
def test_permute_matches_reference(data: Any) -> None:
    kj, keys, table, wtable = data.draw(keyed_strategy())
    order = data.draw(st.lists(st.integers(0, max(len(keys) - 1, 0)), max_size=6)
                      if keys else st.just([]))
    by_name = data.draw(st.booleans())
    names = [keys[i] for i in order]
    out = kj.permute(names if by_name else order)
    assert_kj(out, names, pick(table, names) or {}, pick(wtable, names))
    assert out.batch_size == kj.batch_size
    consecutive = order == list(range(order[0], order[0] + len(order))) if order else False
    if consecutive and len(out.values):
        assert np.shares_memory(out.values, kj.values)


@pytest.mark.parametrize("make", MAKES, ids=MAKE_IDS)
@pytest.mark.parametrize("op", ["permute", "permute view"])
def test_permute_on_every_backend(backend: str, op: str, make: Any) -> None:
    same_on_backend(backend, RESHAPE_OPS[op], make)


# ----------------------------------------------------------------------- split
def test_split() -> None:
    kj = abc()
    parts = kj.split([1, 0, 2])
    assert [p.keys() for p in parts] == [["a"], [], ["b", "c"]]
    assert all(p.batch_size == 3 for p in parts)
    assert_kj(parts[0], ["a"], {"a": ABC["a"]}, {"a": ABC_W["a"]})
    assert_kj(parts[2], ["b", "c"], {k: ABC[k] for k in "bc"}, {k: ABC_W[k] for k in "bc"})
    assert np.shares_memory(parts[2].values, kj.values)
    assert np.shares_memory(parts[2].lengths, kj.lengths)
    with pytest.raises(ArrowSparseValueError, match="sizes sum to 2 but there are 3 keys"):
        kj.split([1, 1])
    with pytest.raises(ArrowSparseValueError, match=r"sizes\[1\] must be non-negative"):
        kj.split([4, -1])
    with pytest.raises(ArrowSparseTypeError, match=r"sizes\[0\] must be an integer"):
        kj.split([1.5, 1.5])  # type: ignore[list-item]
    with pytest.raises(ArrowSparseTypeError, match="sizes must be a sequence of integers"):
        kj.split(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("make", MAKES, ids=MAKE_IDS)
@pytest.mark.parametrize("op", ["split"])
def test_split_on_every_backend(backend: str, op: str, make: Any) -> None:
    same_on_backend(backend, RESHAPE_OPS[op], make)


# ---------------------------------------------------------------------- concat
def test_concat_promotes_dtypes_and_widths() -> None:
    a = build(["a"], {"a": [[1], None]}, np.int32, lengths_dtype=np.int32)
    b = build(["b"], {"b": [[2, 3], []]}, np.int64, lengths_dtype=np.int64)
    out = KeyedJagged.concat([a, b])
    assert_kj(out, ["a", "b"], {"a": [[1], None], "b": [[2, 3], []]})
    assert out.dtype == np.int64
    assert out.lengths.dtype == np.int64
    c = build(["c"], {"c": [[4], [5]]}, np.int8, lengths_dtype=np.int32)
    assert KeyedJagged.concat([a, c]).lengths.dtype == np.int32
    assert KeyedJagged.concat([a, c]).dtype == np.int32
    empty_float = build(["f"], {"f": [[], []]}, np.float64)  # no values: no constraint
    assert KeyedJagged.concat([a, empty_float]).dtype == np.int32


def test_concat_single_input_and_no_keys() -> None:
    kj = abc()
    out = KeyedJagged.concat([kj])
    assert np.shares_memory(out.values, kj.values)
    assert_kj(out, ["a", "b", "c"], ABC, ABC_W)
    none = KeyedJagged([], np.array([], np.int64), [], batch_size=3)
    both = KeyedJagged.concat([none, kj, none])
    assert_kj(both, ["a", "b", "c"], ABC, ABC_W)


def test_concat_errors() -> None:
    kj = abc()
    with pytest.raises(ArrowSparseValueError, match="kjs must hold at least one KeyedJagged"):
        KeyedJagged.concat([])
    with pytest.raises(ArrowSparseTypeError,
                       match=r"kjs must hold KeyedJagged \(first at position 1: dict\)"):
        KeyedJagged.concat([kj, {}])  # type: ignore[list-item]
    with pytest.raises(ArrowSparseTypeError, match="kjs must be a sequence of KeyedJagged"):
        KeyedJagged.concat(kj)  # type: ignore[arg-type]
    other = KeyedJagged.from_dict({"d": [[1]]})
    with pytest.raises(ArrowSparseValueError,
                       match=r"kjs\[1\] has batch_size 1 but kjs\[0\] has 3"):
        KeyedJagged.concat([kj, other])
    unweighted = KeyedJagged.from_dict({"d": [[1], [], [2]]})
    with pytest.raises(ArrowSparseValueError,
                       match=r"kjs\[1\] has no weights but kjs\[0\] has weights; weighted"):
        KeyedJagged.concat([kj, unweighted])
    with pytest.raises(ArrowSparseValueError,
                       match=r"key 'b' of kjs\[1\] is also a key of kjs\[0\]"):
        KeyedJagged.concat([kj.permute(["a", "b"]), kj.permute(["b", "c"])])
    floats = KeyedJagged.from_dict({"d": [[1.5], [], []]})
    with pytest.raises(ArrowSparseTypeError, match="all integers, all floats or all booleans"):
        KeyedJagged.concat([KeyedJagged.from_dict({"a": [[1], [], []]}), floats])


@pytest.mark.hypothesis
@settings(deadline=None)
@given(data=st.data())
def test_concat_of_split_matches_reference(data: Any) -> None:
    kj, keys, table, wtable = data.draw(keyed_strategy())
    cuts = sorted(data.draw(st.lists(st.integers(0, len(keys)), min_size=1, max_size=3)))
    sizes = np.diff([0, *cuts, len(keys)]).tolist()
    parts = kj.split(sizes)
    out = KeyedJagged.concat(parts)
    assert_kj(out, keys, table, wtable)
    assert out.dtype == kj.dtype
    assert out.lengths.dtype == kj.lengths.dtype


@pytest.mark.parametrize("make", MAKES, ids=MAKE_IDS)
@pytest.mark.parametrize("op", ["concat"])
def test_concat_on_every_backend(backend: str, op: str, make: Any) -> None:
    same_on_backend(backend, RESHAPE_OPS[op], make)


# ------------------------------------------------- regroup and regroup_as_dict
def test_regroup_single_input_views() -> None:
    kj = abc()
    first, second, empty = KeyedJagged.regroup(kj, [["b", "c"], ["c", "a"], []])
    assert np.shares_memory(first.values, kj.values)
    assert_kj(first, ["b", "c"], {k: ABC[k] for k in "bc"}, {k: ABC_W[k] for k in "bc"})
    assert_kj(second, ["c", "a"], {k: ABC[k] for k in "ca"}, {k: ABC_W[k] for k in "ca"})
    assert empty.keys() == [] and empty.batch_size == 3


def test_regroup_errors() -> None:
    kj = abc()
    with pytest.raises(KeyError, match=r"groups\[1\] names a key of no input "
                                       r"\(first at position 0: 'z'\)"):
        KeyedJagged.regroup(kj, [["a"], ["z"]])
    with pytest.raises(ArrowSparseIndexError, match="names a key of no input"):
        KeyedJagged.regroup(kj, [[["a"]]])
    with pytest.raises(ArrowSparseValueError,
                       match=r"key 'b' of keyed\[1\] is also a key of keyed\[0\]"):
        KeyedJagged.regroup([kj, kj.permute(["b"])], [["a"]])
    with pytest.raises(ArrowSparseTypeError, match="groups must be a sequence of key lists"):
        KeyedJagged.regroup(kj, "ab")  # type: ignore[arg-type]
    with pytest.raises(ArrowSparseTypeError, match=r"groups\[0\] must be a sequence of key"):
        KeyedJagged.regroup(kj, ["ab"])
    with pytest.raises(ArrowSparseTypeError, match="keyed must be a sequence of KeyedJagged"):
        KeyedJagged.regroup({"a": kj}, [["a"]])  # type: ignore[arg-type]
    with pytest.raises(ArrowSparseValueError, match="names has 1 entries but there are 2 groups"):
        KeyedJagged.regroup_as_dict(kj, [["a"], ["b"]], ["x"])
    with pytest.raises(ArrowSparseValueError,
                       match=r"names must be unique \(first at position 1: 'x'\)"):
        KeyedJagged.regroup_as_dict(kj, [["a"], ["b"]], ["x", "x"])
    with pytest.raises(ArrowSparseTypeError, match=r"names must be hashable"):
        KeyedJagged.regroup_as_dict(kj, [["a"]], [["x"]])
    with pytest.raises(ArrowSparseTypeError, match="names must be a sequence of group names"):
        KeyedJagged.regroup_as_dict(kj, [["a"]], "x")


@pytest.mark.hypothesis
@settings(deadline=None)
@given(data=st.data())
def test_regroup_matches_reference(data: Any) -> None:
    kj, keys, table, wtable = data.draw(keyed_strategy())
    cut = data.draw(st.integers(0, len(keys)))
    inputs = kj.split([cut, len(keys) - cut])
    group = st.lists(st.sampled_from(keys), max_size=5) if keys else st.just([])
    groups = data.draw(st.lists(group, max_size=4))
    out = KeyedJagged.regroup(inputs, groups)
    assert len(out) == len(groups)
    for group, part in zip(groups, out, strict=True):
        assert_kj(part, group, pick(table, group) or {}, pick(wtable, group))
        assert part.batch_size == kj.batch_size
    names = [f"g{i}" for i in range(len(groups))]
    as_dict = KeyedJagged.regroup_as_dict(inputs, groups, names)
    assert list(as_dict) == names
    assert [g.keys() for g in as_dict.values()] == groups


@pytest.mark.parametrize("make", MAKES, ids=MAKE_IDS)
@pytest.mark.parametrize("op", ["regroup", "regroup_as_dict"])
def test_regroup_on_every_backend(backend: str, op: str, make: Any) -> None:
    same_on_backend(backend, RESHAPE_OPS[op], make)


# ------------------------------------------------------------- block_bucketize
def test_block_bucketize_fbgemm_test_vector() -> None:
    # fbgemm-gpu-cpu 1.8.0: lengths [2, 1, 3, 0, 2], indices [0, 5, 9, 3, 10, 11, 1, 7],
    # block_sizes [4], my_size 3, sequence=True, bucketize_pos=True, weights 0..7.
    kj = KeyedJagged(["f"], np.array([0, 5, 9, 3, 10, 11, 1, 7]), [2, 1, 3, 0, 2],
                     weights=np.arange(8.0))
    out = kj.block_bucketize([4], 3, sequence=True, bucketize_pos=True)
    assert np.concatenate([b.lengths for b in out.buckets]).tolist() == \
        [1, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0, 1, 2, 0, 0]
    assert np.concatenate([b.values for b in out.buckets]).tolist() == [0, 3, 1, 1, 3, 1, 2, 3]
    assert np.concatenate([nn(b.weights) for b in out.buckets]).tolist() == \
        [0, 3, 6, 1, 7, 2, 4, 5]
    assert np.concatenate(nn(out.positions)).tolist() == [0, 0, 0, 1, 1, 0, 1, 2]
    assert nn(out.unbucketize_permute).tolist() == [0, 3, 5, 1, 6, 7, 2, 4]


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_block_bucketize_against_fbgemm(index_dtype: str) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("fbgemm_gpu")
    rng = np.random.default_rng(7)
    num_keys, rows, my_size = 3, 40, 4
    sizes = [5, 1, 300]
    lengths = rng.integers(0, 6, num_keys * rows)
    values = rng.integers(-50, 1500, int(lengths.sum())).astype(index_dtype)
    weights = rng.random(len(values)).astype(np.float32)
    kj = KeyedJagged(["a", "b", "c"], values, lengths.astype(index_dtype), weights)
    for sequence, pos, keep in [(True, True, False), (False, False, True), (True, False, True)]:
        got = kj.block_bucketize(sizes, my_size, sequence=sequence, bucketize_pos=pos,
                                 keep_orig_idx=keep)
        t = torch.from_numpy
        want = torch.ops.fbgemm.block_bucketize_sparse_features(
            t(lengths.astype(index_dtype)), t(values), pos, sequence,
            t(np.array(sizes, index_dtype)), my_size, t(weights), keep_orig_idx=keep)
        assert np.concatenate([b.lengths for b in got.buckets]).tolist() == want[0].tolist()
        assert np.concatenate([b.values for b in got.buckets]).tolist() == want[1].tolist()
        assert np.array_equal(np.concatenate([nn(b.weights) for b in got.buckets]),
                              want[2].numpy())
        if pos:
            assert np.concatenate(nn(got.positions)).tolist() == want[3].tolist()
        if sequence:
            assert nn(got.unbucketize_permute).tolist() == want[4].tolist()


def test_block_bucketize_keeps_validity_and_empty_batches() -> None:
    kj = build(["a"], {"a": [[5], None, []]}, np.int64)
    out = kj.block_bucketize(2, 3)
    assert [b["a"].to_list() for b in out.buckets] == [[[], None, []], [[], None, []],
                                                      [[1], None, []]]
    empty = KeyedJagged(["a", "b"], np.array([], np.int32), [], batch_size=0)
    buckets = empty.block_bucketize(2, 2, sequence=True, bucketize_pos=True)
    assert [b.batch_size for b in buckets.buckets] == [0, 0]
    assert nn(buckets.unbucketize_permute).tolist() == []


def test_block_bucketize_errors() -> None:
    kj = KeyedJagged(["a", "b"], np.array([1, 2, 3]), [1, 0, 2, 0])
    with pytest.raises(ArrowSparseTypeError,
                       match="values of dtype float64 cannot be bucketized by id"):
        KeyedJagged(["a"], np.array([1.0]), [1]).block_bucketize(4, 2)
    with pytest.raises(ArrowSparseValueError, match="my_size must be at least 1, got 0"):
        kj.block_bucketize(4, 0)
    with pytest.raises(ArrowSparseTypeError, match="my_size must be an integer"):
        kj.block_bucketize(4, 2.0)  # type: ignore[arg-type]
    with pytest.raises(ArrowSparseValueError, match=r"block_sizes\[1\] must be at least 1"):
        kj.block_bucketize([4, 0], 2)
    with pytest.raises(ArrowSparseValueError, match="block_sizes must be at least 1, got 0"):
        kj.block_bucketize(0, 2)
    with pytest.raises(ArrowSparseValueError, match="block_sizes has 1 entries but there are 2"):
        kj.block_bucketize([4], 2)
    with pytest.raises(KeyError, match="block_sizes leaves out key 'b'"):
        kj.block_bucketize({"a": 4}, 2)
    with pytest.raises(ArrowSparseIndexError, match="block_sizes names 'z', which is not a key"):
        kj.block_bucketize({"a": 4, "b": 4, "z": 1}, 2)
    with pytest.raises(ArrowSparseTypeError, match="block_sizes must be an integer, a sequence"):
        kj.block_bucketize("4", 2)
    with pytest.raises(ArrowSparseTypeError, match=r"block_sizes\['a'\] must be an integer"):
        kj.block_bucketize({"a": 1.5, "b": 2}, 2)
    with pytest.raises(ArrowSparseTypeError, match="sequence must be True or False"):
        kj.block_bucketize(4, 2, sequence=1)  # type: ignore[arg-type]


@pytest.mark.hypothesis
@settings(deadline=None)
@given(data=st.data())
def test_block_bucketize_matches_reference(data: Any) -> None:
    dtype = np.dtype(data.draw(st.sampled_from(INTS)))
    info = np.iinfo(dtype)
    kj, keys, table, wtable = data.draw(keyed_strategy(dtype=dtype))
    extreme = st.sampled_from([int(info.min), int(info.max), -1 if info.min < 0 else 0])
    if keys and kj.batch_size:  # ids far outside any block, and negative ones
        table[keys[0]][0] = data.draw(st.lists(extreme, max_size=3))
        if wtable is not None:
            wtable[keys[0]][0] = weights_of(table[keys[0]][0])
        kj = build(keys, table, dtype, wtable, kj.lengths.dtype)
    my_size = data.draw(st.integers(1, 4))
    size = st.one_of(st.integers(1, 6), st.integers(1, 2**40))
    sizes = data.draw(st.lists(size, min_size=len(keys), max_size=len(keys)))
    form = data.draw(st.sampled_from(["list", "dict", "int"]))
    if form == "int" or not keys:
        sizes = [sizes[0] if sizes else 3] * len(keys)
        given_sizes: Any = sizes[0] if sizes else 3
    else:
        given_sizes = dict(zip(keys, sizes, strict=True)) if form == "dict" else sizes
    sequence, pos, keep = (data.draw(st.booleans()) for _ in range(3))
    out = kj.block_bucketize(given_sizes, my_size, sequence=sequence, bucketize_pos=pos,
                             keep_orig_idx=keep)
    tabs, wtabs, ptabs, permute = ref_block_bucketize(keys, table, wtable, sizes, my_size,
                                                      dtype, keep)
    assert len(out.buckets) == my_size
    for p, bucket in enumerate(out.buckets):
        assert_kj(bucket, keys, tabs[p], None if wtabs is None else wtabs[p])
        assert bucket.dtype == dtype
        assert bucket.lengths.dtype == kj.lengths.dtype
        if pos:
            assert nn(out.positions)[p].tolist() == [
                x for k in keys for row in ptabs[p][k] for x in (row or [])]
    assert out.positions is None if not pos else len(out.positions) == my_size
    if sequence:
        assert nn(out.unbucketize_permute).tolist() == permute
        flat = np.concatenate([b.values for b in out.buckets])
        assert len(flat[nn(out.unbucketize_permute)]) == len(kj.values)
    else:
        assert out.unbucketize_permute is None


@pytest.mark.parametrize("make", MAKES, ids=MAKE_IDS)
@pytest.mark.parametrize("op", ["block_bucketize", "block_bucketize keep"])
def test_block_bucketize_on_every_backend(backend: str, op: str, make: Any) -> None:
    same_on_backend(backend, RESHAPE_OPS[op], make)


# -------------------------------------------------------------- to_padded_dict
def test_to_padded_dict_errors() -> None:
    kj = abc()
    with pytest.raises(ArrowSparseValueError,
                       match="pad_value 0.5 does not fit the values dtype int64"):
        kj.to_padded_dict(pad_value=0.5)
    with pytest.raises(ArrowSparseValueError, match=r"max_lengths\[1\] must be non-negative"):
        kj.to_padded_dict([1, -1, 1])
    with pytest.raises(ArrowSparseValueError, match="max_lengths has 2 entries but there are 3"):
        kj.to_padded_dict([1, 1])
    with pytest.raises(KeyError, match="max_lengths names 'z', which is not a key"):
        kj.to_padded_dict({"z": 1})
    with pytest.raises(ArrowSparseTypeError, match="max_lengths must be an integer, a sequence"):
        kj.to_padded_dict(1.5)


@pytest.mark.hypothesis
@settings(deadline=None)
@given(data=st.data())
def test_to_padded_dict_matches_reference(data: Any) -> None:
    kj, keys, table, _ = data.draw(keyed_strategy(weighted=False))
    form = data.draw(st.sampled_from(["none", "int", "list", "dict"]))
    lengths = data.draw(st.lists(st.integers(0, 5), min_size=len(keys), max_size=len(keys)))
    longest = {k: max([len(r or []) for r in table[k]], default=0) for k in keys}
    if form == "none":
        arg: Any = None
        want = longest
    elif form == "int":
        arg = lengths[0] if lengths else 2
        want = dict.fromkeys(keys, arg)
    elif form == "list":
        arg = lengths
        want = dict(zip(keys, lengths, strict=True))
    else:
        arg = {k: n for k, n in zip(keys, lengths, strict=True) if n % 2}
        want = {k: arg.get(k, longest[k]) for k in keys}
    pad = data.draw(scalars(kj.dtype))
    out = kj.to_padded_dict(arg, pad_value=pad)
    assert list(out) == keys
    for key in keys:
        assert out[key].dtype == kj.dtype
        assert out[key].shape == (kj.batch_size, want[key])
        assert out[key].tolist() == ref_pad(table[key], want[key], kj.dtype.type(pad))


@pytest.mark.parametrize("make", MAKES, ids=MAKE_IDS)
@pytest.mark.parametrize("op", ["to_padded_dict", "to_padded_dict sized"])
def test_to_padded_dict_on_every_backend(backend: str, op: str, make: Any) -> None:
    same_on_backend(backend, RESHAPE_OPS[op], make)


# --------------------------------------------------------------- the functions
@pytest.mark.parametrize(("function", "method"), [
    (lambda kj: keyed.permute(kj, ["c", "a"]), lambda kj: kj.permute(["c", "a"])),
    (lambda kj: keyed.split(kj, [2, 1]), lambda kj: kj.split([2, 1])),
    (lambda kj: keyed.concat(kj.split([1, 2])),
     lambda kj: KeyedJagged.concat(kj.split([1, 2]))),
    (lambda kj: keyed.regroup(kj, [["b"], ["c", "a"]]),
     lambda kj: KeyedJagged.regroup(kj, [["b"], ["c", "a"]])),
    (lambda kj: keyed.regroup_as_dict(kj, [["b"]], ["x"]),
     lambda kj: KeyedJagged.regroup_as_dict(kj, [["b"]], ["x"])),
    (lambda kj: keyed.block_bucketize(kj, 2, 2, sequence=True),
     lambda kj: kj.block_bucketize(2, 2, sequence=True)),
    (lambda kj: keyed.to_padded_dict(kj, 2, pad_value=-1),
     lambda kj: kj.to_padded_dict(2, pad_value=-1)),
], ids=["permute", "split", "concat", "regroup", "regroup_as_dict", "block_bucketize",
        "to_padded_dict"])
def test_functions_are_the_methods(function: Any, method: Any) -> None:
    same(function(abc()), method(abc()))
