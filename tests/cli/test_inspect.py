"""Tests of ``arrow_sparse.cli.inspect``: the statistics of ``arrow-sparse inspect``
(through the command and inspect_parquet / inspect_batches / LevelStats), its length
histograms and plot, and the errors of the files and columns it reads.

Every statistic is checked against the independent oracle of ``_helpers.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from arrow_sparse import cli
from arrow_sparse.cli import inspect as stats_module

from ._helpers import (
    SAMPLE,
    check_against_oracle,
    nearest_rank,
    oracle,
    run_error,
    run_json,
)


# ======================================================================= inspect: stats
@pytest.mark.parametrize("batch_rows", [1, 97, 256, 100_000])
def test_inspect_json_matches_oracle(capsys: pytest.CaptureFixture[str], clicks_file: Path,
                                     table: pa.Table, batch_rows: int) -> None:
    result = run_json(capsys, str(clicks_file), "--batch-rows", str(batch_rows))
    assert result["rows"] == table.num_rows
    assert result["row_groups"] == pq.ParquetFile(clicks_file).metadata.num_row_groups
    assert result["size_bytes"] == clicks_file.stat().st_size
    got = result["columns"]
    check_against_oracle(got, oracle(table))
    assert [c["name"] for c in got] == ["ids", "scores", "tags", "nested", "nested.values",
                                        "cats", "cats.values"]
    types = {c["name"]: (c["type"], c["kind"], c["values"]["of"]) for c in got}
    assert types["scores"] == ("large_list<float>", "list", "leaves")
    assert types["cats"] == ("map<int32, list<int64>>", "map", "keys")
    assert types["cats.values"] == ("list<int64>", "list", "leaves")
    assert types["nested.values"] == ("list<int32>", "list", "leaves")


def test_inspect_edge_values_present(capsys: pytest.CaptureFixture[str],
                                     clicks_file: Path) -> None:
    cols = {c["name"]: c for c in run_json(capsys, str(clicks_file))["columns"]}
    # the data exercise what they are meant to: nulls, empties, a long row, -inf, no numbers
    assert cols["ids"]["null_rows"] > 0 and cols["ids"]["empty_rows"] > 0
    assert cols["ids"]["length"]["max"] == 400
    assert cols["scores"]["values"]["min"] == "-inf"
    tags = cols["tags"]["values"]
    assert (tags["of"], tags["min"], tags["max"]) == ("leaves", None, None)
    assert cols["cats"]["null_rows"] > 0 and cols["cats.values"]["null_rows"] > 0
    assert cols["nested.values"]["null_rows"] > 0


def test_inspect_columns_option_keeps_order(capsys: pytest.CaptureFixture[str],
                                            clicks_file: Path, table: pa.Table) -> None:
    result = run_json(capsys, str(clicks_file), "--columns", "cats, ids")
    check_against_oracle(result["columns"], oracle(table, ["cats", "ids"]))


def test_inspect_plot_writes_an_image(capsys: pytest.CaptureFixture[str], clicks_file: Path,
                                      table: pa.Table, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "lengths.png"
    assert cli.main(["inspect", str(clicks_file), "--plot", str(out), "--json",
                     "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.err == f"wrote {out}\n"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5_000
    result = json.loads(captured.out)  # the JSON is unchanged by --plot
    check_against_oracle(result["columns"], oracle(table))
    assert all("histogram" not in c for c in result["columns"])


def test_length_histogram_matches_oracle(clicks_file: Path, table: pa.Table) -> None:
    result = stats_module.inspect_parquet(clicks_file, columns=["ids"], histograms=True)
    hist = result["columns"][0]["histogram"]
    lengths = pc.list_value_length(table["ids"]).drop_null().to_numpy()
    keys, counts = np.unique(lengths, return_counts=True)
    assert (hist["length"], hist["rows"]) == (keys.tolist(), counts.tolist())
    with pytest.raises(ValueError, match="result has no length histograms"):
        stats_module.plot_length_histograms(stats_module.inspect_parquet(clicks_file),
                                            clicks_file.with_suffix(".png"))


def test_inspect_plot_without_matplotlib(capsys: pytest.CaptureFixture[str], clicks_file: Path,
                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    line = run_error(capsys, ["inspect", str(clicks_file), "--plot", str(tmp_path / "x.png")],
                     1)
    assert "matplotlib is required" in line and "pip install 'arrow-sparse[plot]'" in line
    assert not (tmp_path / "x.png").exists()


def test_inspect_empty_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"ids": pa.array([], pa.list_(pa.int64()))}), path)
    [col] = run_json(capsys, str(path))["columns"]
    assert col["rows"] == 0 and col["total_values"] == 0
    assert set(col["length"].values()) == {None}
    assert cli.main(["inspect", str(path)]) == 0
    assert "  -    -    -    -    -     -" in capsys.readouterr().out


def test_inspect_all_null_rows(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"ids": pa.array([None, None], pa.list_(pa.float64()))}), path)
    [col] = run_json(capsys, str(path))["columns"]
    assert (col["rows"], col["null_rows"], col["empty_rows"]) == (2, 2, 0)
    assert col["length"]["p50"] is None and col["values"]["min"] is None


# ======================================================== inspect_batches: sliced input
def garbage_list(values: list[int], offsets: list[int], valid: list[bool]) -> pa.Array:
    """A list<int64> whose null rows cover non-empty ranges (Arrow allows any content)."""
    bitmap = pa.py_buffer(np.packbits(np.array(valid), bitorder="little"))
    return pa.Array.from_buffers(pa.list_(pa.int64()), len(valid),
                                 [bitmap, pa.py_buffer(np.array(offsets, np.int32))],
                                 null_count=valid.count(False),
                                 children=[pa.array(values, pa.int64())])


def test_inspect_batches_sliced_with_garbage_under_nulls() -> None:
    ids = garbage_list([1, 2, 3, 4, 5, 10**9, -10**9, 10**9, 10**9, 6, 7, 8, 99],
                       [0, 2, 5, 9, 9, 12, 13], [True, True, False, True, True, True])
    outer_child = garbage_list([5, 6, 10**9, 7], [0, 1, 3, 3, 4, 4],
                               [True, False, True, True, True])
    nested = pa.Array.from_buffers(
        pa.list_(pa.list_(pa.int64())), 6,
        [pa.py_buffer(np.packbits(np.array([1, 0, 1, 1, 1, 1], bool), bitorder="little")),
         pa.py_buffer(np.array([0, 1, 3, 4, 5, 5, 5], np.int32))],
        null_count=1, children=[outer_child])
    maps = pa.array([[(1, [1])], None, [(2, [2, 3]), (3, None)], [], [(4, [])], None],
                    pa.map_(pa.int16(), pa.list_(pa.int32())))
    batch = pa.record_batch({"ids": ids, "nested": nested, "maps": maps})
    for start in (0, 1, 2, 3):
        sliced = batch.slice(start, 6 - start - 1)
        assert sliced.column("ids").offset == start
        stats = stats_module.inspect_batches([sliced], batch.schema)
        check_against_oracle([s.to_dict() for s in stats], oracle(sliced))
    # the garbage under the null rows is never counted
    whole = {s.name: s for s in stats_module.inspect_batches([batch], batch.schema)}
    assert whole["ids"].value_max == 99 and whole["ids"].value_min == 1
    assert whole["nested"].value_max == 7


def test_inspect_batches_merges_batches(table: pa.Table) -> None:
    batches = table.to_batches(max_chunksize=113)
    stats = stats_module.inspect_batches(batches, table.schema)
    check_against_oracle([s.to_dict() for s in stats], oracle(table))


def test_inspect_batches_other_leaves() -> None:
    batch = pa.record_batch({
        "emb": pa.array([[[1.5, -2.0]], None, [], [[3.0, None], [0.0, 1.0]]],
                        pa.list_(pa.list_(pa.float64(), 2))),
        "flags": pa.array([[True], None, [False, True]] + [[]], pa.list_(pa.bool_())),
        "named": pa.array([[("a", [1])], [("b", [5, 6])], None, []],
                          pa.map_(pa.string(), pa.list_(pa.int8()))),
        "view": pa.array([[1, 2], None, [], [7]], pa.list_view(pa.int32())),
        "words": pa.array([[["a"], []], None, [], [None, ["b", "c"]]],
                          pa.list_(pa.list_(pa.string()))),
        "maps": pa.array([[[(1, 2.5)]], [], None, [None, [(3, -1.0)]]],
                         pa.list_(pa.map_(pa.int8(), pa.float32()))),
    })
    empty = batch.slice(0, 0)
    stats = {s.name: s for s in stats_module.inspect_batches([empty, batch, empty], batch.schema)}
    assert list(stats) == ["emb", "flags", "named", "named.values", "view", "words",
                           "words.values", "maps"]
    words, inner = stats["words"], stats["words.values"]
    assert (words.rows, words.null_rows, words.empty_rows, words.total_values) == (4, 1, 1, 4)
    assert (inner.rows, inner.null_rows, inner.empty_rows, inner.total_values) == (4, 1, 1, 3)
    assert inner.value_min is None
    # a map inside a list: the list level only (its entries are not read as numbers)
    assert (stats["maps"].rows, stats["maps"].total_values, stats["maps"].value_max) == \
        (4, 3, None)
    # nulls inside a fixed_size_list leaf: lengths still counted, values not read
    assert (stats["emb"].rows, stats["emb"].null_rows, stats["emb"].total_values) == (4, 1, 3)
    assert stats["emb"].value_min is None
    ok = pa.record_batch({"emb": pa.array([[[1.5, -2.0]], None, [[3.0, 4.0]]],
                                          pa.list_(pa.list_(pa.float64(), 2)))})
    [emb] = stats_module.inspect_batches([ok], ok.schema)
    assert (emb.value_min, emb.value_max, emb.quantile(50)) == (-2.0, 4.0, 1)
    assert stats["flags"].value_min is None and stats["flags"].total_values == 3
    assert (stats["named"].rows, stats["named"].null_rows, stats["named"].empty_rows) == (4, 1, 1)
    assert stats["named"].value_min is None
    assert (stats["named.values"].total_values, stats["named.values"].value_max) == (3, 6)
    assert (stats["view"].total_values, stats["view"].value_min, stats["view"].value_max) == \
        (3, 1, 7)


# ===================================================================== length histogram
def test_length_percentiles_exact_with_long_rows() -> None:
    rng = np.random.default_rng(3)
    parts = [rng.geometric(0.05, size=1000), np.array([0, 0, 70_000, 1 << 20, 65_536]),
             rng.integers(0, 300, size=77)]
    stats = stats_module.LevelStats("x", "list<int64>", "list")
    for part in parts:
        stats.rows += len(part)
        stats.add_lengths(part)
    lengths = np.concatenate(parts)
    for p in (0, 1, 10, 50, 90, 99, 100):
        assert stats.quantile(p) == nearest_rank(lengths, p)
    assert stats.total_values == lengths.sum() and stats.empty_rows == 2


@pytest.mark.parametrize("n", [1, 2, 3, 10, 99, 100, 101, 1000, 12_345])
def test_nearest_rank_agrees_with_numpy(n: int) -> None:
    lengths = np.random.default_rng(n).integers(0, 50, size=n)
    stats = stats_module.LevelStats("x", "list<int64>", "list", rows=n)
    stats.add_lengths(lengths)
    for p in (0, 50, 90, 99, 100):
        want = int(np.percentile(lengths, p, method="inverted_cdf"))
        assert stats.quantile(p) == nearest_rank(lengths, p) == want


# ==================================================================== files and columns
def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    line = run_error(capsys, ["inspect", str(tmp_path / "nope.parquet")], 1)
    assert line.endswith("nope.parquet: no such file")


def test_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert "is a directory" in run_error(capsys, ["inspect", str(tmp_path)], 1)


def test_not_parquet(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("a,b\n1,2\n")
    line = run_error(capsys, ["inspect", str(path)], 1)
    assert "data.csv: not a readable Parquet file" in line
    assert "Traceback" not in line


def test_unknown_column(capsys: pytest.CaptureFixture[str], clicks_file: Path) -> None:
    line = run_error(capsys, ["inspect", str(clicks_file), "--columns", "ids,nope"], 2)
    assert "--columns: no column 'nope'" in line and "user_id" in line


def test_non_list_column(capsys: pytest.CaptureFixture[str], clicks_file: Path) -> None:
    line = run_error(capsys, ["inspect", str(clicks_file), "--columns", "user_id"], 2)
    assert "column 'user_id' is int64, not a list, large_list or map" in line


def test_no_list_columns(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "flat.parquet"
    pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), path)
    line = run_error(capsys, ["inspect", str(path)], 1)
    assert "no list, large_list or map columns (columns: a (int64), b (string))" in line


# ============================================================================== imports
def test_inspect_does_not_import_pandas() -> None:
    # pa.array() imports pandas when it is installed (about 0.2 s of start-up)
    code = ("import sys; from arrow_sparse.cli import main; "
            f"assert main(['inspect', {str(SAMPLE)!r}, '--json']) == 0; "
            "assert 'pandas' not in sys.modules, 'pandas imported'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
