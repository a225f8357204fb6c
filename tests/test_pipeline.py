from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import arrow_sparse as asp
from arrow_sparse.pipeline import Pipeline, _toml, run, step_from_dict
from arrow_sparse.pipeline._parallel import background, ordered_map
from arrow_sparse.pipeline.core import StateMerger
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

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample_clicks.parquet"
SPEC = REPO / "data" / "example_pipeline.toml"

#: pyarrow before 26 writes fixed_size_list rows that are null but cannot read them back
#: from Parquet ("Expected all lists to be of size=50 but index 1 had size=0").
needs_fixed_size_null_round_trip = pytest.mark.skipif(
    int(pa.__version__.split(".")[0]) < 26,
    reason="pyarrow < 26 cannot read null fixed_size_list rows back from Parquet")


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
    bad.write_bytes(b"\x88\x00 not toml \xff")
    with pytest.raises(ValueError, match=r"Pipeline.load: '.*bad\.toml' is not a TOML spec "
                                         r"\(not UTF-8 text"):
        Pipeline.load(bad)
    with pytest.raises(OSError, match=r"Pipeline.load: cannot read the spec '.*' \(Is a "
                                      r"directory\)"):
        Pipeline.load(tmp_path)


# ----------------------------------------------------------------- runner
@needs_fixed_size_null_round_trip
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
    again = asp.io.read_ipc(str(out2))
    assert again.schema.equals(got.schema, check_metadata=False)
    assert again.equals(got.cast(again.schema))


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


# ------------------------------------------------------- multi-hot, normalize
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


# --------------------------------------------------------- fit sources, threads
def test_fit_accepts_paths_and_datasets(tmp_path: Path) -> None:
    steps = [{"type": "categorify", "column": "item_ids"}]
    expected = Pipeline(steps).fit(pq.read_table(SAMPLE))["categorify_0"].vocabulary
    for data in (str(SAMPLE), SAMPLE, [str(SAMPLE)], ds.dataset(str(SAMPLE))):
        assert Pipeline(steps).fit(data)["categorify_0"].vocabulary == expected
    for threads in (1, 2):
        got = Pipeline(steps).fit(asp.io.read_parquet(SAMPLE, batch_rows=7_000),
                                  threads=threads)
        assert got["categorify_0"].vocabulary == expected
    with pytest.raises(TypeError, match="Pipeline.fit: data must be a Table"):
        Pipeline(steps).fit(3)
    with pytest.raises(TypeError, match="several passes over the data"):
        Pipeline(steps * 2 + [{"type": "select", "columns": ["item_ids"]}]).fit(
            iter([pq.read_table(SAMPLE)]))


def test_transform_batches_threads_keep_order(table: pa.Table) -> None:
    pipe = Pipeline(STEPS).fit(table)
    parts = [table.slice(i, 1) for i in range(table.num_rows)] * 3
    one = list(pipe.transform_batches(parts))
    two = list(pipe.transform_batches(parts, threads=2))
    assert len(one) == len(two) == len(parts)
    assert all(a.equals(b) for a, b in zip(one, two, strict=True))


def test_ordered_map_order_and_errors() -> None:
    assert list(ordered_map(lambda x: x + 1, range(50), threads=3, window=4)) == \
        list(range(1, 51))

    def boom(x: int) -> int:
        if x == 7:
            raise ValueError("seven")
        return x

    got = []
    with pytest.raises(ValueError, match="seven"):
        for x in ordered_map(boom, range(20), threads=2):
            got.append(x)
    assert got == list(range(7))


def test_background_order_errors_and_early_close() -> None:
    assert list(background(iter(range(100)), depth=3)) == list(range(100))

    def failing() -> Any:
        yield 1
        raise KeyError("producer failed")

    got = []
    with pytest.raises(KeyError, match="producer failed"):
        for x in background(failing()):
            got.append(x)
    assert got == [1]
    closed = []

    def endless() -> Any:
        try:
            i = 0
            while True:
                yield i
                i += 1
        finally:
            closed.append(True)

    stream = background(endless(), depth=2)
    assert [next(stream) for _ in range(5)] == [0, 1, 2, 3, 4]
    stream.close()  # stops the thread, which closes its source
    assert closed == [True]


@needs_fixed_size_null_round_trip
def test_run_threads_equal_output(tmp_path: Path) -> None:
    one = run(SPEC, output=str(tmp_path / "1.parquet"), threads=1, batch_rows=10_000)
    two = run(SPEC, output=str(tmp_path / "2.parquet"), threads=2, batch_rows=10_000)
    assert (one.threads, two.threads) == (1, 2)
    assert pq.read_table(tmp_path / "1.parquet").equals(pq.read_table(tmp_path / "2.parquet"))
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        run(SPEC, output=str(tmp_path / "3.parquet"), threads=0)


# ----------------------------------------------------------- error context
def test_run_errors_name_file_row_group_and_step(tmp_path: Path) -> None:
    np.save(tmp_path / "emb.npy", np.zeros((1000, 4), np.float32))
    pipe = Pipeline([{"type": "embedding_bag", "name": "emb", "column": "item_ids",
                      "table": str(tmp_path / "emb.npy")}])
    with pytest.raises(IndexError, match=r"^input '.*sample_clicks\.parquet', row group 0, "
                                         r"rows 0-9,999 of the group: step 'emb' "
                                         r"\(embedding_bag\): embedding_bag: .*out of range"):
        run(pipe, str(SAMPLE), str(tmp_path / "x.parquet"), batch_rows=10_000)
    missing = tmp_path / "missing.parquet"
    pq.write_table(pq.read_table(SAMPLE, columns=["user_id", "label"]), missing)
    with pytest.raises(KeyError, match=r"input '.*missing\.parquet': step 'num_items' "
                                       r"\(reduce\): no column 'item_ids'"):
        run(SPEC, str(missing), str(tmp_path / "x.parquet"))
    # a step error raised directly names the step
    with pytest.raises(IndexError, match=r"^step 'emb' \(embedding_bag\): embedding_bag:"):
        pipe.transform_table(pq.read_table(SAMPLE).slice(0, 100))


def test_save_pipeline_directory(tmp_path: Path) -> None:
    pipe = Pipeline([{"type": "categorify", "column": "label", "name": "lab"}])
    s = run(pipe, str(SAMPLE), str(tmp_path / "o.parquet"),
            save_pipeline=str(tmp_path / "new" / "dir" / "fit.toml"))
    assert s.rows_out == 100_000
    assert Pipeline.load(tmp_path / "new" / "dir" / "fit.toml").fitted
    blocker = tmp_path / "file"
    blocker.write_text("")
    fresh = Pipeline([{"type": "categorify", "column": "label", "name": "lab"}])
    with pytest.raises(OSError, match=r"run: cannot create the directory of save_pipeline"):
        run(fresh, str(SAMPLE), str(tmp_path / "o.parquet"),
            save_pipeline=str(blocker / "fit.toml"))
    assert not fresh.fitted  # checked before the fit pass


class CountingProgress:
    def __init__(self) -> None:
        self.done = 0

    def update(self, n: int) -> None:
        self.done += n


def test_progress_counts_every_pass(tmp_path: Path) -> None:
    pipe = Pipeline([{"type": "categorify", "column": "item_ids", "name": "a"},
                     {"type": "categorify", "column": "label", "name": "b"}])
    progress = CountingProgress()
    run(pipe, str(SAMPLE), str(tmp_path / "o.parquet"), progress=progress)
    assert progress.done == 3 * 100_000  # two fit passes and the run


# --------------------------------------------------------------- Flight output
def test_run_flight_shards_and_counts() -> None:
    pipe = Pipeline([{"type": "reduce", "column": "item_ids", "op": "length", "output": "n"},
                     {"type": "select", "columns": ["user_id", "n"]}])
    s = run(pipe, str(SAMPLE), "flight://127.0.0.1:0", block=False, batch_rows=8_000)
    assert not s.output.endswith(":0") and s.output == s.server.location
    with s.server as server:
        parts = [asp.io.flight_batches(server.location, f"shard={i}/2").read_all()
                 for i in range(2)]
    got = pa.concat_tables(parts)
    ref = pq.read_table(SAMPLE)
    assert sorted(got["user_id"].to_pylist()) == sorted(ref["user_id"].to_pylist())
    assert got.num_rows == s.rows_in == s.rows_out == 100_000  # each row once
    assert sorted(r["ticket"] for r in s.readers) == ["shard=0/2", "shard=1/2"]
    assert sum(r["rows_out"] for r in s.readers) == 100_000
    assert all(r["complete"] for r in s.readers)
    assert s.stream_seconds > 0 and s.rows_per_s > 0


def test_iter_keyed_jagged_without_ray() -> None:
    from arrow_sparse.pipeline.ray import iter_keyed_jagged

    t = pa.table({"a": [[1, 2], [3]], "b": [[4], []]})
    kjs = list(iter_keyed_jagged([t, t.to_batches()[0].slice(1)], keys=["b", "a"]))
    assert [kj.keys() for kj in kjs] == [["b", "a"], ["b", "a"]]
    assert kjs[1]["a"].to_list() == [[3]]
    with pytest.raises(TypeError, match=r"batch_format='pyarrow'\) \(first at position 1: "
                                        r"dict\)"):
        list(iter_keyed_jagged([t, {"a": [1]}]))


# ------------------------------------------------------------- column pruning
def test_input_columns_and_fit_plan() -> None:
    schema = pq.read_schema(SAMPLE)
    pipe = Pipeline.load(SPEC)
    assert pipe.input_columns(schema) == ["user_id", "item_ids", "item_scores", "label"]
    before, columns = pipe._fit_plan(4)  # item_vocab needs the filter and item_ids only
    assert [s.name for s in before] == ["labelled"] and columns == {"label", "item_ids"}
    renamed = Pipeline([{"type": "rename", "columns": {"item_ids": "ids"}},
                        {"type": "reduce", "column": "ids", "op": "length", "output": "n"},
                        {"type": "categorify", "column": "ids"}])
    assert renamed.input_columns(schema) == list(schema.names)  # nothing dropped
    before, columns = renamed._fit_plan(2)
    assert [s.type for s in before] == ["rename"] and columns == {"item_ids"}
    # the pruned pipeline gives what the whole one gives
    table = pq.read_table(SAMPLE).slice(0, 5000)
    whole = Pipeline.load(SPEC).fit(table).transform_table(table)
    pruned = Pipeline.load(SPEC).fit(table.select(pipe.input_columns(schema)))
    assert pruned.transform_table(table.select(pipe.input_columns(schema))).equals(whole)


def test_state_merger_equals_sequential_merge(table: pa.Table) -> None:
    step = Categorify("ids")
    parts = [table.slice(i, 1) for i in range(table.num_rows)] * 5
    merger = StateMerger(step)
    assert not merger and merger.result() is None
    sequential = None
    for part in parts:
        state = step.fit_batch(part)
        merger.add(state)
        sequential = state if sequential is None else step.merge_states(sequential, state)
    assert merger.result() == sequential


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
