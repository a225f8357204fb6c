from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrow_sparse as asp
from arrow_sparse.pipeline import Pipeline, _toml, run, step_from_dict
from arrow_sparse.pipeline.steps import (
    Categorify,
    EmbeddingBag,
    Filter,
    HashBucket,
    PadOrTruncate,
    Reduce,
    Rename,
    Select,
)

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample_clicks.parquet"
SPEC = REPO / "data" / "example_pipeline.toml"


@pytest.fixture
def table() -> pa.Table:
    ids = pa.array([[3, 1, 3], [], None, [7, None], [1, 1, 1, 1, 2]], pa.list_(pa.int64()))
    scores = pa.array([[0.5, 1.0, 1.5], [], None, [2.0, None], [1.0] * 5],
                      pa.list_(pa.float32()))
    return pa.table({"uid": pa.array([1, 2, 3, 4, 5]), "ids": ids, "s": scores,
                     "label": pa.array([1, 0, None, 1, 0], pa.int8())})


def sliced(t: pa.Table) -> list[pa.Table]:
    return [t.slice(0, 2), t.slice(2, 1), t.slice(3)]


def ref_rows(col: list, f):  # plain Python reference per row
    return [None if r is None else f(r) for r in col]


# ------------------------------------------------------------------ steps
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


@pytest.mark.parametrize(("expr", "match"), [
    ("label >", "expected a number"),
    ("label = 1", "cannot parse"),
    ("__import__('os')", "expected a comparison"),
    ("", "non-empty string"),
])
def test_filter_bad_expr(expr: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Filter(expr=expr)


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
    with pytest.raises(ValueError, match="unique"):
        Pipeline([Select(["uid"], name="a"), Select(["uid"], name="a")])


# --------------------------------------------------------------- pipeline
STEPS = [
    {"type": "filter", "expr": "label is not null"},
    {"type": "reduce", "column": "s", "op": "mean", "output": "mean_s"},
    {"type": "reduce", "column": "ids", "op": "length", "output": "n"},
    {"type": "categorify", "column": "ids", "output": "cat"},
    {"type": "hash_bucket", "column": "ids", "num_buckets": 1024},
    {"type": "pad", "column": "cat", "length": 4},
    {"type": "rename", "columns": {"uid": "user"}},
    {"type": "select", "columns": ["user", "label", "n", "mean_s", "ids", "cat"]},
]


def test_pipeline_streaming_equals_whole(table: pa.Table) -> None:
    pipe = Pipeline(STEPS).fit(sliced(table))
    whole = pipe.transform_table(table)
    streamed = pa.Table.from_batches(list(pipe.transform_batches(sliced(table))))
    assert streamed.equals(whole)
    assert whole.schema.equals(pipe.output_schema(table.schema), check_metadata=False)
    assert whole["cat"].to_pylist()[0] == [3, 2, 3, 0]
    fitted_once = Pipeline(STEPS).fit(table)
    assert fitted_once["categorify_3"].vocabulary == pipe["categorify_3"].vocabulary


def test_save_load_round_trip(table: pa.Table, tmp_path: Path) -> None:
    pipe = Pipeline(STEPS).fit(table)
    pipe.save(tmp_path / "p.toml")
    assert (tmp_path / "p.categorify_3.vocab.parquet").exists()
    back = Pipeline.load(tmp_path / "p.toml")
    assert back.fitted
    assert back.transform_table(table).equals(pipe.transform_table(table))
    assert back.to_dict() == pipe.to_dict()


def test_toml_writer_round_trip() -> None:
    doc = {"pipeline": {"input": "a b.parquet", "batch_rows": 10},
           "steps": [{"type": "rename", "columns": {"a.b": "c\"d", "x": "y"}},
                     {"type": "filter", "column": "f", "op": "==", "value": 1.5}]}
    assert _toml.loads(_toml.dumps(doc)) == doc
    with pytest.raises(ValueError, match="invalid TOML"):
        _toml.loads("a = ", source="x.toml")


def test_spec_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[pipeline]\ninput = 'x'\n")
    with pytest.raises(ValueError, match="no \\[\\[steps\\]\\]"):
        Pipeline.load(bad)
    bad.write_text("[pipeline]\nspeed = 1\n[[steps]]\ntype='select'\ncolumns=['a']\n")
    with pytest.raises(ValueError, match="unknown \\[pipeline\\] key"):
        Pipeline.load(bad)
    with pytest.raises(ValueError, match="spec not found"):
        Pipeline.load(tmp_path / "none.toml")


# ----------------------------------------------------------------- runner
def test_run_example_on_sample(tmp_path: Path) -> None:
    out = tmp_path / "o" / "f.parquet"
    s = run(SPEC, output=str(out), batch_rows=30_000, save_pipeline=str(tmp_path / "fit.toml"))
    assert s.rows_in == s.rows_out == 100_000
    assert s.bytes_out == out.stat().st_size and s.mb_per_s > 0
    got = pq.read_table(out)
    pipe = Pipeline.load(SPEC)
    assert got.schema.equals(pipe.output_schema(pq.read_schema(SAMPLE)), check_metadata=False)
    ref = pq.read_table(SAMPLE)
    lengths = ref["item_ids"].to_pylist()
    assert got["num_items"].to_pylist() == [None if r is None else len(r) for r in lengths]
    # the saved fitted pipeline gives the same output (IPC this time)
    out2 = tmp_path / "g.arrow"
    run(tmp_path / "fit.toml", output=str(out2))
    assert asp.io.read_ipc(str(out2)).equals(got.replace_schema_metadata(None)) or \
        asp.io.read_ipc(str(out2)).to_pylist()[:50] == got.to_pylist()[:50]


def test_run_filter_all_out_and_flight(tmp_path: Path) -> None:
    pipe = Pipeline([{"type": "filter", "expr": "label > 5"},
                     {"type": "select", "columns": ["user_id", "label"]}])
    s = run(pipe, str(SAMPLE), str(tmp_path / "e.parquet"))
    assert (s.rows_in, s.rows_out) == (100_000, 0)
    assert pq.read_table(tmp_path / "e.parquet").column_names == ["user_id", "label"]
    pipe = Pipeline([{"type": "filter", "expr": "label == 1"},
                     {"type": "select", "columns": ["user_id", "label"]}])
    s = run(pipe, str(SAMPLE), "flight://127.0.0.1:0", block=False)
    with s.server as server:
        t = asp.io.flight_batches(server.location, server.tickets[0]).read_all()
    assert t.num_rows == pq.read_table(SAMPLE).filter(pa.compute.field("label") == 1).num_rows


def test_run_errors(tmp_path: Path) -> None:
    pipe = Pipeline([{"type": "select", "columns": ["nope"]}])
    with pytest.raises(KeyError, match="no column 'nope'"):
        run(pipe, str(SAMPLE), str(tmp_path / "x.parquet"))
    with pytest.raises(ValueError, match="output format"):
        run(pipe, str(SAMPLE), str(tmp_path / "x.csv"))
    with pytest.raises(ValueError, match="no input"):
        run(pipe, None, str(tmp_path / "x.parquet"))
