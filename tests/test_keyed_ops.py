"""Tests of KeyedJagged's key selection, concat, regroup, block_bucketize and to_padded_dict.

Each is checked against a plain-Python reading of ``{key: rows}`` tables (a row is a
list of values or None for a null row); ``block_bucketize`` also against FBGEMM's
``block_bucketize_sparse_features`` where fbgemm-gpu is installed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.errors import (
    ArrowSparseIndexError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)
from arrow_sparse.kernels import cuda
from arrow_sparse.keyed import BlockBuckets

from ._strategies import scalars
from .conftest import from_backend, on_device, to_backend
from .cuda_emu.fake_cupy import emulated_cupy
from .test_keyed import ABC, ABC_W, Table, abc, assert_kj, nn

KeyedJagged = asp.KeyedJagged
pytestmark = pytest.mark.hypothesis
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


# ------------------------------------------------------------------ strategies
def build(keys: list[Any], table: Table, dtype: Any, wtable: Table | None = None,
          lengths_dtype: Any = np.int64) -> KeyedJagged:
    """A KeyedJagged from the constructor (null rows empty, validity set)."""
    values = [x for k in keys for row in table[k] for x in (row or [])]
    lengths = [len(row or []) for k in keys for row in table[k]]
    valid = [row is not None for k in keys for row in table[k]]
    rows = len(next(iter(table.values()))) if table else 0
    weights = None if wtable is None else \
        np.array([x for k in keys for row in wtable[k] for x in (row or [])], np.float32)
    return KeyedJagged(keys, np.array(values, dtype=dtype), np.array(lengths, lengths_dtype),
                       weights, validity=np.array(valid, bool), batch_size=rows)


@st.composite
def keyed(draw: st.DrawFn, dtype: Any = None, keys: list[Any] | None = None,
          rows: int | None = None, weighted: bool | None = None
          ) -> tuple[KeyedJagged, list[Any], Table, Table | None]:
    """A KeyedJagged with null and empty rows, and its reference tables."""
    dtype = np.dtype(draw(st.sampled_from(INTS + ["float64"])) if dtype is None else dtype)
    if keys is None:
        keys = [f"k{i}" for i in range(draw(st.integers(0, 4)))]
    if rows is None:
        rows = draw(st.integers(0, 5))
    row = st.one_of(st.none(), st.lists(scalars(dtype), max_size=4))
    table = {k: draw(st.lists(row, min_size=rows, max_size=rows)) for k in keys}
    if weighted is None:
        weighted = draw(st.booleans())
    wtable = None
    if weighted:
        wtable = {k: [weights_of(r) for r in table[k]] for k in keys}
    lengths_dtype = draw(st.sampled_from([np.int32, np.int64]))
    return build(keys, table, dtype, wtable, lengths_dtype), keys, table, wtable


def weights_of(row: list[Any] | None) -> list[float] | None:
    """Weights of a row: exact in float32, different for each value of the row."""
    return None if row is None else [j + 0.25 for j in range(len(row))]


def pick(table: Table | None, names: list[Any]) -> Table | None:
    return None if table is None else {k: table[k] for k in names}


# --------------------------------------------------------------------- permute
@settings(deadline=None)
@given(data=st.data())
def test_permute_matches_reference(data: Any) -> None:
    kj, keys, table, wtable = data.draw(keyed())
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


# ---------------------------------------------------------------------- concat
@settings(deadline=None)
@given(data=st.data())
def test_concat_of_split_matches_reference(data: Any) -> None:
    kj, keys, table, wtable = data.draw(keyed())
    cuts = sorted(data.draw(st.lists(st.integers(0, len(keys)), min_size=1, max_size=3)))
    sizes = np.diff([0, *cuts, len(keys)]).tolist()
    parts = kj.split(sizes)
    out = KeyedJagged.concat(parts)
    assert_kj(out, keys, table, wtable)
    assert out.dtype == kj.dtype
    assert out.lengths.dtype == kj.lengths.dtype


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


# --------------------------------------------------------------------- regroup
@settings(deadline=None)
@given(data=st.data())
def test_regroup_matches_reference(data: Any) -> None:
    kj, keys, table, wtable = data.draw(keyed())
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


# ------------------------------------------------------------- block_bucketize
def ref_block_bucketize(kj_keys: list[Any], table: Table, wtable: Table | None,
                        sizes: list[int], my_size: int, dtype: np.dtype,
                        keep: bool) -> tuple[list[Table], list[Table] | None, list[Table],
                                             list[int]]:
    """FBGEMM's two loops in plain Python: bucket tables, weights, positions, permute."""
    bits = 8 * dtype.itemsize
    signed = dtype.kind == "i"
    rows = len(next(iter(table.values()))) if table else 0
    out: list[dict[int, list[Any]]] = [{} for _ in range(my_size)]
    wout: list[dict[int, list[Any]]] = [{} for _ in range(my_size)]
    pout: list[dict[int, list[Any]]] = [{} for _ in range(my_size)]
    tags: list[dict[int, list[Any]]] = [{} for _ in range(my_size)]
    index = 0
    for t, key in enumerate(kj_keys):
        for p in range(my_size):
            for tab in (out, wout, pout, tags):
                tab[p][t] = [None if row is None else [] for row in table[key]]
        for r, row in enumerate(table[key]):
            for j, x in enumerate(row or []):
                u = int(x) % (1 << bits)
                blk = sizes[t]
                if u < blk * my_size:
                    p, new = u // blk, u % blk
                else:
                    p, new = u % my_size, u // my_size
                new = u if keep else new
                if signed and new >= 1 << (bits - 1):
                    new -= 1 << bits
                out[p][t][r].append(new)
                pout[p][t][r].append(j)
                tags[p][t][r].append(index)
                if wtable is not None:
                    wout[p][t][r].append(wtable[key][r][j])
                index += 1
    order = [i for p in range(my_size) for t in range(len(kj_keys)) for r in range(rows)
             for i in (tags[p][t][r] or [])]
    permute = [0] * len(order)
    for position, i in enumerate(order):
        permute[i] = position

    def by_name(tabs: list[dict[int, list[Any]]]) -> list[Table]:
        return [{key: tab[t] for t, key in enumerate(kj_keys)} for tab in tabs]

    return by_name(out), None if wtable is None else by_name(wout), by_name(pout), permute


@settings(deadline=None)
@given(data=st.data())
def test_block_bucketize_matches_reference(data: Any) -> None:
    dtype = np.dtype(data.draw(st.sampled_from(INTS)))
    info = np.iinfo(dtype)
    kj, keys, table, wtable = data.draw(keyed(dtype=dtype))
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


def test_block_bucketize_keeps_validity_and_empty_batches() -> None:
    kj = build(["a"], {"a": [[5], None, []]}, np.int64)
    out = kj.block_bucketize(2, 3)
    assert [b["a"].to_list() for b in out.buckets] == [[[], None, []], [[], None, []],
                                                      [[1], None, []]]
    empty = KeyedJagged(["a", "b"], np.array([], np.int32), [], batch_size=0)
    buckets = empty.block_bucketize(2, 2, sequence=True, bucketize_pos=True)
    assert [b.batch_size for b in buckets.buckets] == [0, 0]
    assert nn(buckets.unbucketize_permute).tolist() == []


# ------------------------------------------------------------- to_padded_dict
def ref_pad(rows: list[Any], length: int, pad: Any) -> list[list[Any]]:
    return [((row or [])[:length] + [pad] * length)[:length] for row in rows]


@settings(deadline=None)
@given(data=st.data())
def test_to_padded_dict_matches_reference(data: Any) -> None:
    kj, keys, table, _ = data.draw(keyed(weighted=False))
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


# ------------------------------------------------------------------- every backend
# KeyedJagged on every backend (tests/conftest.py): cpu, cuda_emu (host arrays through
# the CUDA launchers), cupy_emu (the stand-in CuPy's device arrays: the device path)
# and cupy (a GPU). Results come back with .to_device("cpu") and must equal the host's.
def host_of(x: Any, backend: str) -> Any:
    """A backend's result on the host: KeyedJagged, Jagged, arrays, lists and dicts."""
    if isinstance(x, KeyedJagged):
        assert (x.device != "cpu") == on_device(backend)
        return x.to_device("cpu")
    if isinstance(x, dict):
        return {k: host_of(item, backend) for k, item in x.items()}
    if isinstance(x, (list, tuple)) and not isinstance(x, BlockBuckets):
        return type(x)(host_of(item, backend) for item in x)
    if isinstance(x, BlockBuckets):
        return BlockBuckets(*(host_of(item, backend) for item in x))
    return from_backend(x, backend)


def same_kj(got: KeyedJagged, want: KeyedJagged) -> None:
    got.validate()
    assert got.keys() == want.keys() and got.batch_size == want.batch_size
    for name in ("values", "lengths", "offsets", "weights"):
        a, b = getattr(got, name), getattr(want, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert a.dtype == b.dtype, name
            np.testing.assert_array_equal(a, b)
    valid = [np.ones(len(k.lengths), bool) if k.validity is None else k.validity
             for k in (got, want)]
    np.testing.assert_array_equal(*valid)


def same(got: Any, want: Any) -> None:
    if isinstance(want, KeyedJagged):
        same_kj(got, want)
    elif isinstance(want, asp.Jagged):
        assert (got.dtype, got.to_list()) == (want.dtype, want.to_list())
    elif isinstance(want, dict):
        assert list(got) == list(want)
        for key in want:
            same(got[key], want[key])
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for a, b in zip(got, want, strict=True):
            same(a, b)
    elif want is None:
        assert got is None
    else:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def lengths32() -> KeyedJagged:
    kj = abc()
    return KeyedJagged(kj.keys(), kj.values, kj.lengths.astype(np.int32), kj.weights,
                       validity=kj.validity)


OPS: dict[str, Any] = {
    "getitem": lambda kj: kj["a"],
    "weights_of": lambda kj: kj.weights_of("c"),
    "to_dict": lambda kj: kj.to_dict(),
    "per_key": lambda kj: (kj.length_per_key(), kj.offset_per_key()),
    "permute": lambda kj: kj.permute(["c", "a", "c"]),
    "permute view": lambda kj: kj.permute(["b", "c"]),
    "split": lambda kj: kj.split([1, 0, 2]),
    "concat": lambda kj: KeyedJagged.concat(kj.split([2, 1])),
    "regroup": lambda kj: KeyedJagged.regroup(kj.split([1, 2]), [["c", "a"], [], ["b"]]),
    "regroup_as_dict": lambda kj: KeyedJagged.regroup_as_dict(kj, [["b"]], ["x"]),
    "block_bucketize": lambda kj: kj.block_bucketize([2, 3, 1], 3, sequence=True,
                                                     bucketize_pos=True),
    "block_bucketize keep": lambda kj: kj.block_bucketize(2, 2, keep_orig_idx=True),
    "to_padded_dict": lambda kj: kj.to_padded_dict(pad_value=-1),
    "to_padded_dict sized": lambda kj: kj.to_padded_dict({"a": 1, "c": 3}),
    "validate": lambda kj: kj.validate(),
}


@pytest.mark.parametrize("make", [abc, lengths32], ids=["int64", "int32"])
@pytest.mark.parametrize("op", list(OPS))
def test_keyed_ops_on_every_backend(backend: str, op: str, make: Any) -> None:
    host = make()
    kj = host.to_device("cuda") if on_device(backend) else host
    same(host_of(OPS[op](kj), backend), OPS[op](host))


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


def test_every_keyed_member_works_on_the_device_or_says_it_is_host_only() -> None:
    public = {name for name in dir(KeyedJagged) if not name.startswith("_")}
    built_on_the_host = {"from_arrow", "from_dict", "from_jagged_dict"}
    attributes = {"keys", "num_keys", "batch_size", "values", "lengths", "offsets", "weights",
                  "validity", "dtype", "xp", "device", "to_device", "length_per_key",
                  "offset_per_key", "weights_of", "to_dict", "validate"}
    assert public == attributes | built_on_the_host | set(OPS_BY_MEMBER) | {"to_arrow"}
    with emulated_cupy():
        kj = abc().to_device("cuda")
        for name in attributes - {"weights_of", "to_device"}:
            member = getattr(kj, name)
            result = member() if callable(member) else member
            assert not isinstance(result, np.ndarray), name
        for name in OPS_BY_MEMBER:
            OPS[OPS_BY_MEMBER[name]](kj)
        cuda.check_errors("test")


#: Each public method of KeyedJagged not in the attributes, and its entry in OPS.
OPS_BY_MEMBER = {"permute": "permute", "split": "split", "concat": "concat",
                 "regroup": "regroup", "regroup_as_dict": "regroup_as_dict",
                 "block_bucketize": "block_bucketize", "to_padded_dict": "to_padded_dict"}
