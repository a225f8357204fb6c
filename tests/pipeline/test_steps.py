"""Tests of ``arrow_sparse.pipeline.steps``: each step against a plain-Python or library
reference, on whole and sliced tables, its output schema, state and errors.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse.pipeline import Pipeline, step_from_dict
from arrow_sparse.pipeline.steps import (
    Categorify,
    EmbeddingBag,
    Filter,
    HashBucket,
    MultiHot,
    Normalize,
    PadOrTruncate,
    Reduce,
    Rename,
    Select,
)

from ._helpers import ref_rows, sliced


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "length"])
def test_reduce_vs_reference(table: pa.Table, op: str) -> None:
    def f(row):
        vals = [v for v in row if v is not None]
        if op == "length":
            return len(row)
        if op == "sum":
            return sum(vals)
        if not vals:
            return None
        return {"mean": lambda: sum(vals) / len(vals), "max": lambda: max(vals),
                "min": lambda: min(vals)}[op]()

    step = Reduce("s", op, output="r")
    for part in [table, *sliced(table)]:
        out = step.transform(part)
        got = out["r"].to_pylist()
        exp = ref_rows(part["s"].to_pylist(), f)
        assert [g if g is None else pytest.approx(g) for g in got] == exp
        assert out.schema == step.output_schema(part.schema)


def test_pad_truncate_vs_reference(table: pa.Table) -> None:
    step = PadOrTruncate("ids", length=3, pad_value=-1, side="left")
    got = step.transform(table)["ids"].to_pylist()
    exp = ref_rows(table["ids"].to_pylist(), lambda r: ([-1] * 3 + r)[-3:])
    assert got == exp
    assert step_from_dict({"type": "truncate", "column": "ids", "length": 3}).type == "truncate"


def test_hash_and_categorify_vs_library(table: pa.Table) -> None:
    h = HashBucket("ids", num_buckets=16, seed=3, output="h").transform(table)
    assert h["h"].to_pylist() == asp.hash_bucket(table["ids"], 16, seed=3).to_pylist()
    assert h.column_names == ["uid", "ids", "s", "label", "h"]
    step = Categorify("ids")
    step.set_state(step.fit_batch(table))
    out = step.transform(table)["ids"].to_pylist()
    assert out == [[3, 2, 3], [], None, [5, 1], [2, 2, 2, 2, 4]]  # 1 most frequent


def test_categorify_merge_equals_concat(table: pa.Table) -> None:
    parts = sliced(table)
    a = Categorify("ids", freq_threshold=2)
    state = a.fit_batch(parts[0])
    for p in parts[1:]:
        state = a.merge_states(state, a.fit_batch(p))
    a.set_state(state)
    assert a.vocabulary == asp.fit_vocabulary(table["ids"], freq_threshold=2)


def test_embedding_bag_npy_and_ipc(table: pa.Table, tmp_path: Path) -> None:
    w = np.arange(20, dtype=np.float32).reshape(10, 2)
    np.save(tmp_path / "w.npy", w)
    fsl = pa.FixedSizeListArray.from_arrays(pa.array(w.ravel()), 2)
    asp.io.write_ipc(pa.table({"emb": fsl}), str(tmp_path / "w.arrow"))
    clean = table.set_column(1, "ids", pa.array([[3, 1], [], None, [7], [2]]))
    for name in ("w.npy", "w.arrow"):
        step = EmbeddingBag("ids", table=name, mode="mean", output="e")
        step.base_dir = str(tmp_path)
        out = step.transform(clean)
        assert out["e"].to_pylist() == [[4.0, 5.0], None, None, [14.0, 15.0], [4.0, 5.0]]
        assert out.schema == step.output_schema(clean.schema)
    bad = EmbeddingBag("ids", table="missing.npy")
    with pytest.raises(ValueError, match="embedding table file not found"):
        bad.transform(clean)


def test_filter_select_rename(table: pa.Table) -> None:
    assert Filter(expr="label >= 1").transform(table)["uid"].to_pylist() == [1, 4]
    step = Filter(expr="uid in [2, 5] or label is null")
    assert step.transform(table)["uid"].to_pylist() == [2, 3, 5]
    assert Filter(column="label", op="!=", value=1).transform(table)["uid"].to_pylist() == [2, 5]
    assert Select(["label", "uid"]).transform(table).column_names == ["label", "uid"]
    assert Rename({"uid": "user"}).transform(table).column_names[0] == "user"


def test_step_errors(table: pa.Table) -> None:
    with pytest.raises(ValueError, match="unknown or missing 'type'"):
        step_from_dict({"type": "nope"})
    with pytest.raises(ValueError, match="unknown key"):
        step_from_dict({"type": "reduce", "column": "s", "op": "sum", "colour": 1})
    with pytest.raises(ValueError, match="'op' must be one of"):
        Reduce("s", "median")
    with pytest.raises(KeyError, match="no column 'zz'"):
        Select(["zz"]).transform(table)
    with pytest.raises(TypeError, match="must be a list"):
        Reduce("uid", "sum").output_schema(table.schema)
    with pytest.raises(ValueError, match="not fitted"):
        Categorify("ids").transform(table)


# ----------------------------------------------------------------- multi-hot, normalize
def multi_hot_ref(row: list | None, n: int) -> tuple | None:
    if row is None:
        return None
    ids = sorted(set(row))
    return ids, [float(row.count(i)) for i in ids], [float(row.count(i)) for i in range(n)]


@pytest.mark.parametrize("list_type", [pa.list_, pa.large_list])
def test_multi_hot_vs_reference(list_type) -> None:
    rows = [[3, 1, 3], [], None, [0, 0, 0, 4], [2]]
    t = pa.table({"ids": pa.array(rows, list_type(pa.int32()))})
    for part in (t, t.slice(2), t.slice(1, 3)):
        step = MultiHot("ids", num_columns=5, output="hot", counts_output="n")
        out = step.transform(part)
        exp = [multi_hot_ref(r, 5) for r in part["ids"].to_pylist()]
        assert out["hot"].to_pylist() == [None if e is None else e[0] for e in exp]
        assert out["n"].to_pylist() == [None if e is None else e[1] for e in exp]
        assert out.schema == step.output_schema(part.schema)
        assert out["hot"].type == list_type(pa.int64())
        dense = MultiHot("ids", num_columns=5, dense=True)
        got = dense.transform(part)
        assert got["ids"].to_pylist() == [None if e is None else e[2] for e in exp]
        assert got.schema == dense.output_schema(part.schema)


def test_multi_hot_errors() -> None:
    t = pa.table({"ids": pa.array([[1, 7]]), "s": pa.array([["a"]])})
    with pytest.raises(IndexError, match=r"out of range \[0, 5\) \(first at position 1: 7\)"):
        MultiHot("ids", num_columns=5).transform(t)
    with pytest.raises(TypeError, match="must be a list of integers"):
        MultiHot("s", num_columns=5).transform(t)
    with pytest.raises(ValueError, match="dense rows hold the counts"):
        MultiHot("ids", num_columns=5, dense=True, counts_output="n")
    with pytest.raises(ValueError, match="must differ from the ids column"):
        MultiHot("ids", num_columns=5, counts_output="ids")
    with pytest.raises(TypeError, match="'dense' must be true or false"):
        MultiHot("ids", num_columns=5, dense=1)


@pytest.mark.parametrize("method", ["standard", "minmax"])
def test_normalize_vs_numpy(table: pa.Table, method: str) -> None:
    values = np.array([0.5, 1.0, 1.5, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0])  # table["s"], nulls out
    shift, scale = (values.mean(), values.std()) if method == "standard" else \
        (values.min(), values.max() - values.min())
    step = Normalize("s", method=method, output="z")
    state = step.fit_batch(sliced(table)[0])
    for part in sliced(table)[1:]:
        state = step.merge_states(state, step.fit_batch(part))
    step.set_state(state)
    out = step.transform(table)
    exp = [None if r is None else [None if v is None else (v - shift) / scale for v in r]
           for r in table["s"].to_pylist()]
    got = out["z"].to_pylist()
    assert [r is None for r in got] == [r is None for r in exp]
    for g, e in zip(got, exp, strict=True):
        if g is not None:
            assert [v is None for v in g] == [v is None for v in e]
            assert [v for v in g if v is not None] == \
                pytest.approx([v for v in e if v is not None], rel=1e-6)
    assert out.schema == step.output_schema(table.schema)
    assert out["z"].type == pa.list_(pa.float32())
    ints = Normalize("uid").fit_batch(table)
    assert ints[:2] == (5, 3.0)


def test_normalize_errors_and_round_trip(table: pa.Table, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not fitted"):
        Normalize("s").transform(table)
    with pytest.raises(TypeError, match="must hold numbers or lists of numbers"):
        Normalize("ids").fit_batch(table.set_column(1, "ids", pa.array([["a"]] * 5)))
    with pytest.raises(ValueError, match="'method' must be"):
        Normalize("s", method="robust")
    with pytest.raises(ValueError, match="'stats' must be a table with keys"):
        Normalize("s", stats={"mean": 1.0})
    empty = Normalize("label")
    with pytest.raises(ValueError, match="no non-null value of 'label' to fit on"):
        empty.set_state(empty.fit_batch(table.filter(pa.compute.field("uid") == 3)))
    pipe = Pipeline([{"type": "normalize", "column": "uid", "name": "z"}]).fit(table)
    pipe.save(tmp_path / "n.toml")
    back = Pipeline.load(tmp_path / "n.toml")
    assert back.fitted and back["z"].stats == pipe["z"].stats
    assert back.transform_table(table).equals(pipe.transform_table(table))


def test_multi_hot_and_normalize_on_empty_tables() -> None:
    t = pa.table({"ids": pa.array([], pa.list_(pa.int64())), "x": pa.array([], pa.float64())})
    hot = MultiHot("ids", num_columns=3, counts_output="n")
    assert hot.transform(t).schema == hot.output_schema(t.schema)
    dense = MultiHot("ids", num_columns=3, dense=True)
    assert dense.transform(t).schema == dense.output_schema(t.schema)
    step = Normalize("x")
    empty = step.fit_batch(t)
    assert empty[0] == 0
    step.set_state(step.merge_states(empty, step.fit_batch(pa.table({"x": [0.0, 2.0]}))))
    assert step.stats == {"count": 2, "mean": 1.0, "m2": 2.0, "min": 0.0, "max": 2.0}
    assert step.transform(t).num_rows == 0


# ------------------------------------- issue 14: sizes beyond memory are spec errors
def _empty_rows(n: int) -> pa.Table:
    """``n`` empty list rows, built without allocating per row."""
    ids = pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, np.int32)), pa.array([], pa.int64()))
    return pa.table({"ids": ids})


@pytest.mark.parametrize(("spec", "match"), [
    ({"type": "pad", "column": "ids", "length": 10**11},
     r"^spec\.toml: steps\[0\] \(pad\): 'length' must be in \[0, 2147483647\], "
     r"got 100000000000$"),
    ({"type": "multi_hot", "name": "mh", "column": "ids", "num_columns": 10**10, "dense": True},
     r"^spec\.toml: steps\[0\] 'mh' \(multi_hot\): 'num_columns' must be in "
     r"\[1, 2147483647\], got 10000000000$"),
])
def test_fixed_size_beyond_int32_is_a_spec_error_issue14(spec: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Pipeline.from_dict({"steps": [spec]}, source="spec.toml")


def test_multi_hot_ids_with_a_huge_vocabulary_stay_fine_issue14() -> None:
    step = MultiHot("ids", num_columns=10**12, counts_output="n")
    out = step.transform(pa.table({"ids": [[10**11, 3, 3]]}))
    assert out["ids"].to_pylist() == [[3, 10**11]]


@pytest.mark.parametrize(("step", "key"), [
    (MultiHot("ids", num_columns=10**9, dense=True, name="mh"), "num_columns"),
    (PadOrTruncate("ids", length=2**31 - 1, name="padit"), "length"),
])
def test_batches_larger_than_memory_are_spec_errors_issue14(step: object, key: str) -> None:
    # 2**20 rows x 10**9 x 4 bytes or 2**20 x (2**31 - 1) x 8 bytes: more than any machine
    label = "step 'mh' (multi_hot)" if key == "num_columns" else "step 'padit' (pad)"
    with pytest.raises(ValueError, match=rf"^{re.escape(label)}: '{key}' = [\d,]+ makes a batch "
                                         r"of 1,048,576 rows x [\d,]+ x \d bytes = [\d,.]+ GiB, "
                                         r"more than this machine's memory \([\d,.]+ GiB\); "
                                         rf"lower '{key}' or the batch rows$"):
        step.transform(_empty_rows(2**20))  # type: ignore[attr-defined]


def test_batch_size_bound_is_the_memory_limit_issue14(monkeypatch: pytest.MonkeyPatch) -> None:
    from arrow_sparse.pipeline import steps

    monkeypatch.setattr(steps, "memory_limit", lambda: 1 << 20)
    table = pa.table({"ids": pa.array([[1, 2]] * 16, pa.list_(pa.int32()))})
    assert PadOrTruncate("ids", length=2**14).transform(table).num_rows == 16  # 1 MiB: fits
    with pytest.raises(ValueError, match=r"'length' = 16,385 makes a batch of 16 rows x "
                                         r"16,385 x 4 bytes = 0.0 GiB"):
        PadOrTruncate("ids", length=2**14 + 1).transform(table)
    with pytest.raises(ValueError, match=r"'num_columns' = 16,385 makes a batch"):
        MultiHot("ids", num_columns=2**14 + 1, dense=True).transform(table)
