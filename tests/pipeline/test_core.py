"""Tests of ``arrow_sparse.pipeline.core``: Pipeline fitting (streamed, threaded, from paths
and datasets), transforming, saving and loading a spec, column pruning, state merging.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseError
from arrow_sparse.pipeline import Pipeline
from arrow_sparse.pipeline.core import StateMerger
from arrow_sparse.pipeline.steps import (
    Categorify,
    HashBucket,
    Select,
)

from ._helpers import SAMPLE, SPEC, sliced

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


def test_step_names_must_be_unique() -> None:
    with pytest.raises(ValueError, match="unique"):
        Pipeline([Select(["uid"], name="a"), Select(["uid"], name="a")])


# ----------------------------------------------------------------- fit sources, threads
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


# ----------------------------------------------------------------------- column pruning
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


# ---------------------------------- issue 15: specs checked before any pass, names
class _NoReads:
    """A re-iterable that fails if a pass over the data starts."""

    def __init__(self, table: pa.Table) -> None:
        self.schema = table.schema
        self.table = table

    def __iter__(self) -> Any:
        raise AssertionError("a pass over the data started")


@pytest.mark.parametrize(("steps", "schema", "error", "match"), [
    ([{"type": "hash_bucket", "column": "w", "num_buckets": 8, "name": "h"}],
     {"w": pa.list_(pa.float32())}, TypeError,
     r"^step 'h' \(hash_bucket\): column 'w' must hold integers or strings .* got "
     r"(large_)?list<item: float>; bucket numbers first"),
    ([{"type": "categorify", "column": "x", "name": "c"}], {"x": pa.float64()}, TypeError,
     r"^step 'c' \(categorify\): column 'x' must hold integers or strings"),
    ([{"type": "categorify", "column": "ids", "name": "c"},
      {"type": "hash_bucket", "column": "w", "num_buckets": 8, "name": "h"}],
     {"ids": pa.list_(pa.int64()), "w": pa.list_(pa.float64())}, TypeError,
     r"^step 'h' \(hash_bucket\): column 'w' must hold integers"),
    ([{"type": "filter", "expr": "label == 'x'", "name": "f"}], {"label": pa.int8()},
     TypeError, r"^step 'f' \(filter\): cannot compare column 'label' \(int8\) with a string"),
    ([{"type": "filter", "expr": "len(item_id) > 2", "name": "f"}],
     {"item_ids": pa.list_(pa.int64())}, KeyError,
     r"^step 'f' \(filter\): no column 'item_id'; did you mean 'item_ids'\?"),
    ([{"type": "reduce", "column": "item_id", "op": "sum", "name": "r"}],
     {"item_ids": pa.list_(pa.int64()), "label": pa.int8()}, KeyError,
     r"^step 'r' \(reduce\): no column 'item_id'; did you mean 'item_ids'\? The columns "
     r"are: item_ids, label$"),
    ([{"type": "pad", "column": "ids", "length": 3, "pad_value": "x", "name": "p"}],
     {"ids": pa.list_(pa.int64())}, ValueError,
     r"^step 'p' \(pad\): pad_or_truncate: pad_value 'x' does not fit the values dtype int64"),
    ([{"type": "pad", "column": "tags", "length": 3, "name": "p"}],
     {"tags": pa.list_(pa.string())}, TypeError,
     r"^step 'p' \(pad\): pad_or_truncate: pad_value must be a str or None"),
    ([{"type": "select", "columns": ["zzz"], "name": "s"}], {"a": pa.int8()}, KeyError,
     r"^step 's' \(select\): no column 'zzz'; the columns are: a$"),
])
def test_spec_types_are_checked_before_any_pass_issue15(steps: list[dict[str, Any]],
                                                        schema: dict[str, pa.DataType],
                                                        error: type, match: str) -> None:
    pipe = Pipeline(steps)
    with pytest.raises(error, match=match):
        pipe.output_schema(pa.schema(schema))
    empty = pa.schema(schema).empty_table()
    with pytest.raises(error, match=match):
        pipe.fit([empty, _NoReads(empty)])  # the first item's schema is checked first


def test_embedding_bag_on_strings_is_refused_upfront_issue15(tmp_path: Any) -> None:
    table = tmp_path / "emb.npy"
    np.save(table, np.ones((4, 2), np.float32))
    pipe = Pipeline([{"type": "embedding_bag", "column": "tags", "table": str(table),
                      "name": "e"}])
    with pytest.raises(TypeError, match=r"^step 'e' \(embedding_bag\): column 'tags' must be "
                                        r"a list of integer ids, got (large_)?list<item: "
                                        r"(large_)?string>"):
        pipe.output_schema(pa.schema({"tags": pa.list_(pa.string())}))
    assert pipe.output_schema(pa.schema({"tags": pa.large_list(pa.int32())})).field(
        "tags").type == pa.list_(pa.float32(), 2)


def test_fit_on_parquet_checks_the_spec_before_reading_issue15(tmp_path: Any) -> None:
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"ids": pa.array([[1, 2]] * 10), "w": pa.array([[0.5]] * 10)}),
                   path)
    pipe = Pipeline([{"type": "categorify", "column": "ids"},
                     {"type": "hash_bucket", "column": "w", "num_buckets": 4, "name": "h"}])
    seen: list[int] = []

    class Count:
        def update(self, rows: int) -> None:
            seen.append(rows)

    with pytest.raises(TypeError, match=r"^step 'h' \(hash_bucket\): column 'w'"):
        pipe.fit(str(path), progress=Count())
    assert seen == []  # no batch was read
    assert not pipe["categorify_0"].fitted


@pytest.mark.parametrize(("spec", "match"), [
    ({"steps": [{"type": "hash_buckets", "column": "a", "num_buckets": 2}]},
     r"unknown or missing 'type' 'hash_buckets'; did you mean 'hash_bucket'\? expected one"),
    ({"steps": [{"type": "hash_bucket", "column": "a", "num_bucket": 2}]},
     r"unknown key\(s\) 'num_bucket'; did you mean 'num_buckets'\? allowed:"),
    ({"steps": [{"type": "reduce", "column": "a", "opp": "sum"}]},
     r"unknown key\(s\) 'opp'; did you mean 'op'\? allowed:"),
    ({"pipeline": {"batch_row": 10}, "steps": [{"type": "select", "columns": ["a"]}]},
     r"unknown \[pipeline\] key\(s\) 'batch_row'; did you mean 'batch_rows'\? allowed"),
    ({"step": [{"type": "select", "columns": ["a"]}]},
     r"unknown top-level key\(s\) 'step'; did you mean 'steps'\? expected"),
    ({"steps": [{"type": "hash_bucket", "column": "a", "num_buckets": "ten", "name": "x"}]},
     r"^s.toml: steps\[0\] 'x' \(hash_bucket\): 'num_buckets' must be an integer, got 'ten'$"),
])
def test_spec_errors_suggest_the_nearest_name_issue15(spec: dict[str, Any], match: str) -> None:
    with pytest.raises(ArrowSparseError, match=match):
        Pipeline.from_dict(spec, source="s.toml")


def test_step_errors_name_the_step_issue15() -> None:
    with pytest.raises(TypeError, match=r"^step 'x' \(hash_bucket\): 'num_buckets' must be an "
                                        r"integer, got 'ten'$"):
        HashBucket("ids", num_buckets="ten", name="x")  # type: ignore[arg-type]
    pipe = Pipeline([{"type": "hash_bucket", "column": "a", "num_buckets": 2,
                      "name": "hash_items"}])
    with pytest.raises(KeyError, match=r"^Pipeline: no step 'hash_item'; did you mean "
                                       r"'hash_items'\? the steps are: hash_items$"):
        pipe["hash_item"]


def test_pushdown_filter_takes_the_filters_a_reader_may_apply_issue15() -> None:
    schema = pa.schema({"label": pa.int8(), "ids": pa.list_(pa.int64()), "u": pa.int64()})
    pipe = Pipeline([
        {"type": "filter", "expr": "label not in [0]"},
        {"type": "reduce", "column": "ids", "op": "length", "output": "n"},
        {"type": "filter", "expr": "n > 1"},              # reads a column a step wrote
        {"type": "filter", "expr": "len(ids) > 1"},       # input column: pushed
        {"type": "rename", "columns": {"u": "user"}},
        {"type": "filter", "expr": "user > 2"},           # renamed: not pushed
        {"type": "categorify", "column": "ids"},
        {"type": "filter", "expr": "label == 1"},         # after a stateful step
    ])
    pushed = pipe.pushdown_filter(schema)
    assert pushed is not None
    t = pa.table({"label": pa.array([0, 1, None, 1, 2], pa.int8()),
                  "ids": [[1, 2], [3, 4], [5, 6], [7], None], "u": [1, 2, 3, 4, 5]})
    assert t.filter(pushed)["u"].to_pylist() == [2]
    assert Pipeline([{"type": "categorify", "column": "ids"},
                     {"type": "filter", "expr": "label == 1"}]).pushdown_filter(schema) is None
