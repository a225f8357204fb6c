"""Tests of ``arrow_sparse.pipeline.core``: Pipeline fitting (streamed, threaded, from paths
and datasets), transforming, saving and loading a spec, column pruning, state merging.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import arrow_sparse as asp
from arrow_sparse.pipeline import Pipeline
from arrow_sparse.pipeline.core import StateMerger
from arrow_sparse.pipeline.steps import (
    Categorify,
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
