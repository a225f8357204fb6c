"""Tests of ``arrow_sparse.pipeline.runner``: run on the sample into Parquet, IPC and Flight,
with threads, progress, a saved pipeline, and errors that name the input and step.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrow_sparse as asp
from arrow_sparse.pipeline import Pipeline, run

from ._helpers import SAMPLE, SPEC, needs_fixed_size_null_round_trip


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


def test_run_serves_flight_with_a_token_issue_14(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret\n")
    pipe = Pipeline([{"type": "select", "columns": ["user_id", "label"]}])
    s = run(pipe, str(SAMPLE), "flight://127.0.0.1:0", block=False,
            flight_security={"token_file": str(token_file)})
    with s.server as server:
        assert server.needs_token
        with pytest.raises(asp.io.ArrowSparseFlightError, match="no bearer token"):
            asp.io.flight_batches(server.location, server.tickets[0], timeout=30).read_all()
        t = asp.io.flight_batches(server.location, server.tickets[0], token="s3cret",
                                  timeout=30).read_all()
    assert t.num_rows == pq.read_table(SAMPLE).num_rows


def test_run_errors(tmp_path: Path) -> None:
    pipe = Pipeline([{"type": "select", "columns": ["nope"]}])
    with pytest.raises(KeyError, match="no column 'nope'"):
        run(pipe, str(SAMPLE), str(tmp_path / "x.parquet"))
    with pytest.raises(ValueError, match="output format"):
        run(pipe, str(SAMPLE), str(tmp_path / "x.csv"))
    with pytest.raises(ValueError, match="no input"):
        run(pipe, None, str(tmp_path / "x.parquet"))


@needs_fixed_size_null_round_trip
def test_run_threads_equal_output(tmp_path: Path) -> None:
    one = run(SPEC, output=str(tmp_path / "1.parquet"), threads=1, batch_rows=10_000)
    two = run(SPEC, output=str(tmp_path / "2.parquet"), threads=2, batch_rows=10_000)
    assert (one.threads, two.threads) == (1, 2)
    assert pq.read_table(tmp_path / "1.parquet").equals(pq.read_table(tmp_path / "2.parquet"))
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        run(SPEC, output=str(tmp_path / "3.parquet"), threads=0)


# ------------------------------------------------------------------------ error context
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


# ------------------------------------------------------------------------ Flight output
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


# ------------------------------------------------- issue 14: never write over the input
def _small_input(tmp_path: Path) -> Path:
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3], "ids": [[1], [], [2, 3]]}), path)
    return path


@pytest.mark.parametrize("case", ["same", "symlink to it", "through a linked directory",
                                  "hard link", "inside the input directory",
                                  "deeper inside the input directory", "save_pipeline"])
def test_run_refuses_an_output_that_is_or_lies_inside_the_input_issue14(tmp_path: Path,
                                                                        case: str) -> None:
    src = _small_input(tmp_path)
    before = src.read_bytes()
    pipe = Pipeline([{"type": "select", "columns": ["a"]}])
    kwargs: dict = {}
    out: Path = tmp_path / "ok.parquet"
    given: Path = src
    if case == "same":
        out = src
    elif case == "symlink to it":
        out = tmp_path / "link.parquet"
        out.symlink_to(src)
    elif case == "through a linked directory":
        (tmp_path / "alias").symlink_to(tmp_path)
        out = tmp_path / "alias" / "in.parquet"
    elif case == "hard link":
        out = tmp_path / "hard.parquet"
        out.hardlink_to(src)
    elif case.startswith(("inside", "deeper")):
        given = tmp_path / "data"
        given.mkdir()
        src = src.rename(given / "part-0.parquet")
        out = given / "out.parquet" if case.startswith("inside") else given / "a" / "b.parquet"
    else:
        kwargs["save_pipeline"] = str(src)
    where = "is the input file" if case == "hard link" else \
        "lies inside the input" if case.startswith(("inside", "deeper")) else "is the input"
    arg = "save_pipeline" if case == "save_pipeline" else "output"
    with pytest.raises(ValueError, match=rf"^run: {arg} '.*' {where} '[^']*'"
                                         r"( \(a link to it\))?; writing it would change the "
                                         "input while it is read; choose a path outside the "
                                         "input$"):
        run(pipe, str(given), str(out), **kwargs)
    assert src.read_bytes() == before
    assert sorted(p.name for p in src.parent.iterdir() if p.name.startswith(".")) == []


def test_run_output_beside_the_input_is_fine_issue14(tmp_path: Path) -> None:
    src = _small_input(tmp_path)
    (tmp_path / "data").mkdir()
    pipe = Pipeline([{"type": "select", "columns": ["a"]}])
    # a sibling whose name starts with the input directory's name is not inside it
    s = run(pipe, str(tmp_path), str(tmp_path.parent / (tmp_path.name + "-out.parquet")))
    assert s.rows_out == 3
    assert run(pipe, str(src), str(tmp_path / "in.parquet.out.parquet")).rows_out == 3


def test_run_reports_a_dense_multi_hot_beyond_memory_as_a_spec_error_issue14(
        tmp_path: Path) -> None:
    # Before: "internal error: MemoryError((16384, 1000000000), dtype('float32'))"
    pipe = Pipeline([{"type": "multi_hot", "name": "mh", "column": "item_ids",
                      "num_columns": 10**9, "dense": True}])
    with pytest.raises(ValueError, match=r"^input '.*sample_clicks\.parquet', row group 0, "
                                         r"rows 0-16,383 of the group: step 'mh' \(multi_hot\): "
                                         r"'num_columns' = 1,000,000,000 makes a batch of "
                                         r"16,384 rows"):
        run(pipe, str(SAMPLE), str(tmp_path / "o.parquet"), batch_rows=16_384)
    assert list(tmp_path.iterdir()) == []


# ------------------------------- issue 15: filters in the scan, inputs and outputs named
def _sorted_groups(path: Path, groups: int = 8, rows: int = 500) -> pa.Table:
    label = np.repeat(np.arange(groups), rows)
    mask = np.zeros(len(label), bool)
    mask[::7] = True  # nulls in every row group
    t = pa.table({"label": pa.array(label, pa.int64(), mask=mask),
                  "ids": pa.array([[int(i)] * (i % 5) for i in range(len(label))]),
                  "row": pa.array(np.arange(len(label)))})
    pq.write_table(t, path, row_group_size=rows)
    return t


def test_run_prunes_row_groups_with_leading_filters_issue15(tmp_path: Path) -> None:
    src = tmp_path / "in.parquet"
    t = _sorted_groups(src)
    spec = [{"type": "filter", "expr": "label not in [0, 1, 2, 3, 4, 5] and len(ids) >= 2"},
            {"type": "reduce", "column": "ids", "op": "length", "output": "n"},
            {"type": "filter", "expr": "n < 4"}]
    pipe = Pipeline(spec)
    pushed = pipe.pushdown_filter(pq.read_schema(src))
    assert pushed is not None
    data = asp.io.read_parquet(str(src), filter=pushed)
    groups = {g for _, _, g in data.iter_with_location()}
    assert groups == {6, 7}  # the statistics rule the first six out
    out = tmp_path / "out.parquet"
    summary = run(pipe, str(src), str(out))
    assert summary.rows_in == t.num_rows  # every input row is counted, read or skipped
    expected = Pipeline(spec).transform_table(t)
    got = pq.read_table(out)
    assert got["row"].to_pylist() == expected["row"].to_pylist()
    assert got.num_rows == summary.rows_out > 0
    # an oracle in plain Python: labels 6 and 7 (null labels drop), 2 <= length < 4
    rows = t.to_pylist()
    assert got["row"].to_pylist() == [
        r["row"] for r in rows if r["label"] in (6, 7) and 2 <= len(r["ids"]) < 4]


def test_run_names_a_missing_input_issue15(tmp_path: Path) -> None:
    with pytest.raises(asp.errors.ArrowSparseIOError,
                       match=r"^run: input 'missing\.parquet' does not exist$"):
        run(SPEC, "missing.parquet", str(tmp_path / "o.parquet"))
    with pytest.raises(OSError, match=r"^run: input '.*nope\.parquet' does not exist$"):
        run(SPEC, [str(SAMPLE), str(tmp_path / "nope.parquet")], str(tmp_path / "o.parquet"))


def test_run_checks_the_output_before_fitting_issue15(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    seen: list[int] = []

    class Count:
        def update(self, rows: int) -> None:
            seen.append(rows)

        bytes = 0

    with pytest.raises(asp.errors.ArrowSparseIOError,
                       match=r"^run: cannot write the output '.*file/out\.parquet' \("):
        run(SPEC, output=str(blocker / "out.parquet"), progress=Count())
    assert seen == []  # failed before the fitting pass
    out = tmp_path / "ok" / "o.parquet"
    run(SPEC, output=str(out), batch_rows=50_000)
    assert [p.name for p in out.parent.iterdir()] == ["o.parquet"]  # no probe left behind
