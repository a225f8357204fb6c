"""Tests of the ``arrow-sparse`` command line tool and its progress bar.

Every statistic ``inspect`` prints is checked against an independent oracle built
from pyarrow.compute (``list_value_length``, ``list_flatten``, ``min_max``) and a
sort-based nearest-rank percentile, never against the histogram code under test.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrow_sparse
from arrow_sparse import _progress, cli
from arrow_sparse.cli import commands
from arrow_sparse.cli import inspect as stats_module
from arrow_sparse._arrow import numpy_dtype
from arrow_sparse._progress import Progress

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample_clicks.parquet"


# ======================================================================= oracle
def nearest_rank(lengths: np.ndarray, percent: int) -> int | None:
    """The smallest L with at least percent% of the values <= L, by sorting."""
    ordered = np.sort(lengths)
    n = len(ordered)
    if n == 0:
        return None
    rank = max(1, -(-percent * n // 100))  # ceil(percent * n / 100), in integers
    return int(ordered[rank - 1])


def min_max(leaves: pa.Array) -> tuple[Any, Any]:
    if not (pa.types.is_integer(leaves.type) or pa.types.is_floating(leaves.type)):
        return None, None
    mm = pc.min_max(leaves)
    return mm["min"].as_py(), mm["max"].as_py()


def leaf_type(t: pa.DataType) -> pa.DataType:
    while isinstance(t, (pa.ListType, pa.LargeListType, pa.FixedSizeListType)):
        t = t.value_type
    return t


def oracle_list(name: str, arr: pa.Array, out: list[dict[str, Any]],
                leaves: pa.Array | None = None) -> None:
    """Expected stats of a list array and its nested levels (pyarrow.compute only)."""
    lengths_with_nulls = pc.list_value_length(arr)
    lengths = lengths_with_nulls.drop_null().to_numpy(zero_copy_only=False).astype(np.int64)
    if leaves is None:
        leaves = pc.list_flatten(arr, recursive=True)
    lo, hi = min_max(leaves)
    out.append({
        "name": name, "rows": len(arr), "null_rows": arr.null_count,
        "empty_rows": int(np.count_nonzero(lengths == 0)), "total_values": int(lengths.sum()),
        "length": {"min": nearest_rank(lengths, 0), "p50": nearest_rank(lengths, 50),
                   "p90": nearest_rank(lengths, 90), "p99": nearest_rank(lengths, 99),
                   "max": nearest_rank(lengths, 100),
                   "mean": float(lengths.mean()) if len(lengths) else None},
        "values": {"min": lo, "max": hi}, "leaf": leaf_type(arr.type),
    })
    inner = arr.type.value_type
    if isinstance(inner, (pa.ListType, pa.LargeListType)):
        oracle_list(f"{name}.values", pc.list_flatten(arr), out, leaves)


def oracle_map(name: str, arr: pa.MapArray, out: list[dict[str, Any]]) -> None:
    """Expected stats of a map array: entries (keys), then the value lists."""
    mask = arr.is_null()
    offsets = pa.array(arr.offsets.to_numpy())  # unsliced: from_arrays wants that with a mask
    keys = pa.ListArray.from_arrays(offsets, arr.keys, mask=mask)
    oracle_list(name, keys, out)
    out[-1]["leaf"] = arr.type.key_type
    entries = pc.list_flatten(pa.ListArray.from_arrays(offsets, arr.values, mask=mask))
    items = entries.field("value")
    if isinstance(items.type, (pa.ListType, pa.LargeListType)):
        oracle_list(f"{name}.values", items, out)


def oracle(table: pa.Table | pa.RecordBatch,
           columns: list[str] | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in columns or table.schema.names:
        col = table.column(name)
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if isinstance(arr.type, pa.MapType):
            oracle_map(name, arr, out)
        elif isinstance(arr.type, (pa.ListType, pa.LargeListType)):
            oracle_list(name, arr, out)
    return out


def same_value(got: Any, want: Any, leaf: pa.DataType) -> bool:
    if want is None or got is None:
        return got is want
    if isinstance(got, str):  # JSON spells non-finite floats as strings
        got = float(got)
    if pa.types.is_floating(leaf):
        dtype = numpy_dtype(leaf)
        return bool(np.asarray(got, dtype=dtype) == np.asarray(want, dtype=dtype))
    return bool(got == want)


def check_against_oracle(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert [g["name"] for g in got] == [w["name"] for w in want]
    for g, w in zip(got, want, strict=True):
        for key in ("rows", "null_rows", "empty_rows", "total_values"):
            assert g[key] == w[key], (g["name"], key)
        for key in ("min", "p50", "p90", "p99", "max"):
            assert g["length"][key] == w["length"][key], (g["name"], key)
        assert g["length"]["mean"] == pytest.approx(w["length"]["mean"])
        for key in ("min", "max"):
            assert same_value(g["values"][key], w["values"][key], w["leaf"]), (g["name"], key)


# =================================================================== test data
def clicks_table(n: int = 1500, seed: int = 0) -> pa.Table:
    """Null rows, empty rows, null elements, NaN and -inf, nested lists, a map."""
    rng = np.random.default_rng(seed)
    ids: list[Any] = []
    scores: list[Any] = []
    tags: list[Any] = []
    nested: list[Any] = []
    maps: list[Any] = []
    for i in range(n):
        r = 0.5 if i == 7 else rng.random()
        if r < 0.08:
            row = None
        elif r < 0.18:
            row = []
        else:
            k = 400 if i == 7 else int(rng.geometric(0.15))
            row = rng.integers(-50, 1_000_000, size=k).tolist()
            if rng.random() < 0.1:
                row[int(rng.integers(k))] = None
        ids.append(row)
        if row is None:
            scores.append(None)
        else:
            s = np.round(rng.random(len(row)), 2).astype(np.float32).tolist()
            if s and rng.random() < 0.05:
                s[0] = float("nan")
            if s and rng.random() < 0.02:
                s[-1] = None
            scores.append(s)
        tags.append(None if r < 0.05 else [f"t{j}" for j in range(int(rng.integers(0, 4)))])
        if rng.random() < 0.07:
            nested.append(None)
        else:
            nested.append([None if rng.random() < 0.1 else
                           rng.integers(0, 100, size=int(rng.integers(0, 4))).tolist()
                           for _ in range(int(rng.integers(0, 4)))])
        if rng.random() < 0.06:
            maps.append(None)
        else:
            keys = np.sort(rng.choice(np.arange(1, 9), size=int(rng.integers(0, 5)),
                                      replace=False))
            maps.append([(int(k), None if rng.random() < 0.05 else
                          rng.integers(0, 1000, size=int(rng.integers(0, 5))).tolist())
                         for k in keys])
    scores[3] = [float("-inf"), 0.5]
    ids[3] = [1, 2]
    return pa.table({
        "user_id": pa.array(np.arange(n, dtype=np.int64)),
        "ids": pa.array(ids, pa.list_(pa.int64())),
        "scores": pa.array(scores, pa.large_list(pa.float32())),
        "tags": pa.array(tags, pa.list_(pa.string())),
        "nested": pa.array(nested, pa.list_(pa.list_(pa.int32()))),
        "cats": pa.array(maps, pa.map_(pa.int32(), pa.list_(pa.int64()))),
        "label": pa.array(rng.integers(0, 2, size=n).astype(np.int8)),
    })


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return clicks_table()


@pytest.fixture
def clicks_file(tmp_path: Path, table: pa.Table) -> Path:
    """Several row groups; the last one written from a sliced batch."""
    path = tmp_path / "clicks.parquet"
    with pq.ParquetWriter(path, table.schema) as writer:
        writer.write_table(table.slice(0, 1000), row_group_size=256)
        batch = table.slice(1000).to_batches()[0]
        writer.write_batch(batch.slice(0, 300))
        writer.write_batch(batch.slice(300))
    assert pq.ParquetFile(path).metadata.num_row_groups >= 5
    return path


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = cli.main(["inspect", *args, "--json", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.err == ""
    return json.loads(captured.out)  # type: ignore[no-any-return]


def run_error(capsys: pytest.CaptureFixture[str], argv: list[str], code: int) -> str:
    assert cli.main(argv) == code
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("arrow-sparse: error: ")
    return lines[0]


# ================================================================ inspect: stats
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
    assert cols["tags"]["values"] == {"of": "leaves", "min": None, "max": None}
    assert cols["cats"]["null_rows"] > 0 and cols["cats.values"]["null_rows"] > 0
    assert cols["nested.values"]["null_rows"] > 0


def test_inspect_columns_option_keeps_order(capsys: pytest.CaptureFixture[str],
                                            clicks_file: Path, table: pa.Table) -> None:
    result = run_json(capsys, str(clicks_file), "--columns", "cats, ids")
    check_against_oracle(result["columns"], oracle(table, ["cats", "ids"]))


def test_inspect_table_output(capsys: pytest.CaptureFixture[str], clicks_file: Path,
                              table: pa.Table) -> None:
    assert cli.main(["inspect", str(clicks_file)]) == 0
    out = capsys.readouterr().out
    header, *blocks = out.strip().split("\n\n")
    assert header.startswith(f"{clicks_file}: 1,500 rows, ")
    want = oracle(table)
    assert len(blocks) == len(want)
    for block, w in zip(blocks, want, strict=True):
        lines = block.splitlines()
        assert lines[0].split()[0] == w["name"]
        fields = {line[:19].strip(): line[19:].split() for line in lines[1:]}
        assert fields["rows"][0] == f"{w['rows']:,}"
        assert fields["null rows"][0] == f"{w['null_rows']:,}"
        assert fields["empty rows"][0] == f"{w['empty_rows']:,}"
        total = fields.get("total values", fields.get("total entries"))
        assert total == [f"{w['total_values']:,}"]
        assert fields["length"] == ["min", "p50", "p90", "p99", "max", "mean"]
        lens = [int(x) for x in fields[""][:5]]
        assert lens == [w["length"][k] for k in ("min", "p50", "p90", "p99", "max")]
        assert float(fields[""][5]) == pytest.approx(w["length"]["mean"], abs=0.005)
        key = "key min / max" if w["name"] == "cats" else "value min / max"
        lo, _, hi = fields[key]
        if w["values"]["min"] is None:
            assert (lo, hi) == ("-", "-")
        else:
            assert same_value(float(lo), w["values"]["min"], w["leaf"])
            assert same_value(float(hi), w["values"]["max"], w["leaf"])


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
    assert hist == {"length": keys.tolist(), "rows": counts.tolist()}
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


# ================================================= inspect_batches: sliced input
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


# ========================================================= length histogram
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


# ============================================================ errors and help
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


def test_debug_shows_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                               clicks_file: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("a,b\n1,2\n")
    for argv, code, last in (
            (["--debug", "inspect", str(path)], 1, f"{path}: not a readable Parquet file"),
            (["inspect", str(path), "--debug"], 1, f"{path}: not a readable Parquet file"),
            (["--debug", "inspect", str(clicks_file), "--columns", "x"], 2, "--columns: no")):
        assert cli.main(argv) == code
        err = capsys.readouterr().err
        assert err.startswith("Traceback")
        assert err.splitlines()[-1].startswith(f"arrow-sparse: error: {last}")


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


@pytest.mark.parametrize("argv, text", [
    (["inspect", "f.parquet", "--batch-rows", "0"], "expected a positive integer, got '0'"),
    (["inspect", "f.parquet", "--batch-rows", "x"], "expected a positive integer, got 'x'"),
    (["inspect", "f.parquet", "--columns", ","], "expected comma-separated column names"),
    (["inspect", "f.parquet", "--bogus"], "unrecognized arguments: --bogus"),
    (["inspect"], "the following arguments are required: FILE"),
    ([], "the following arguments are required: COMMAND"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str], text: str) -> None:
    line = run_error(capsys, argv, 2)
    assert text in line and "--help')" in line


def test_internal_error_hint(capsys: pytest.CaptureFixture[str], clicks_file: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> None:
        msg = "bug"
        raise RuntimeError(msg)

    monkeypatch.setattr(commands, "inspect_parquet", boom)
    line = run_error(capsys, ["inspect", str(clicks_file)], 1)
    assert "internal error: RuntimeError('bug') (run with --debug for the traceback)" in line


def test_keyboard_interrupt(capsys: pytest.CaptureFixture[str], clicks_file: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "inspect_parquet", interrupted)
    line = run_error(capsys, ["inspect", str(clicks_file)], 130)
    assert line == "arrow-sparse: error: interrupted"


@pytest.mark.parametrize(("argv", "example"), [
    (["--help"], "arrow-sparse run data/example_pipeline.toml"),
    (["inspect", "--help"], "arrow-sparse inspect data/sample_clicks.parquet --plot"),
    (["inspect", "-h"], "arrow-sparse inspect data/sample_clicks.parquet\n"),
    (["run", "--help"], "arrow-sparse run spec.toml --engine ray"),
    (["schema", "--help"], "arrow-sparse schema data/sample_clicks.parquet\n"),
])
def test_help_has_examples(capsys: pytest.CaptureFixture[str], argv: list[str],
                           example: str) -> None:
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: arrow-sparse")
    assert "examples:\n  arrow-sparse " in out
    assert example in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"arrow-sparse {arrow_sparse.__version__} (pyarrow {pa.__version__}")


# ================================================================ console script
def test_console_script_on_sample() -> None:
    script = Path(sys.executable).with_name("arrow-sparse")
    if not script.exists():
        pytest.skip("the arrow-sparse console script is not installed beside this python")
    proc = subprocess.run([str(script), "inspect", str(SAMPLE)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # stderr is not a terminal: no progress bar
    want = {w["name"]: w for w in oracle(pq.read_table(SAMPLE))}["item_ids"]
    block = next(b for b in proc.stdout.split("\n\n") if b.startswith("item_ids  list<int64>"))
    lines = block.splitlines()
    assert lines[1].split() == ["rows", f"{want['rows']:,}"]
    assert lines[2].split()[:3] == ["null", "rows", f"{want['null_rows']:,}"]
    at = next(i for i, line in enumerate(lines) if line.startswith("  length"))
    assert [int(x) for x in lines[at + 1].split()[:5]] == \
        [want["length"][k] for k in ("min", "p50", "p90", "p99", "max")]
    assert f"value min / max  {want['values']['min']} / {want['values']['max']}" in block


# =================================================================== progress
class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_waits_then_draws_then_erases() -> None:
    stream, clock = FakeTTY(), FakeClock()
    bar = Progress(1000, label="inspect", stream=stream, clock=clock)
    assert bar.enabled
    clock.now = 0.2
    bar.update(100)
    assert stream.getvalue() == "" and not bar.shown  # quicker than the delay
    clock.now = 1.0
    bar.update(400)
    text = stream.getvalue()
    assert text == "\rinspect [##########..........]  500/1,000 rows  50%  500 rows/s  ETA 0:01"
    clock.now = 1.05
    bar.update(100)
    assert stream.getvalue() == text  # throttled: within the redraw interval
    clock.now = 2.0
    bar.update(400)
    assert stream.getvalue().rstrip(" ").endswith(
        "\rinspect [####################]  1,000/1,000 rows  100%  500 rows/s")
    bar.close()
    assert stream.getvalue().endswith("\r" + " " * len(text.strip("\r")) + "\r")
    assert not bar.shown


def test_progress_silent_off_terminal_or_disabled() -> None:
    for stream, enabled in ((io.StringIO(), None), (FakeTTY(), False)):
        clock = FakeClock()
        with Progress(10, stream=stream, enabled=enabled, clock=clock) as bar:
            clock.now = 5.0
            bar.update(5)
        assert stream.getvalue() == ""


def test_progress_unknown_total() -> None:
    bar = Progress(None, enabled=False, unit="batches")
    bar.update(3_000_000)
    assert bar.render(2.0) == " 3,000,000 batches  1.5M batches/s"


def test_cli_progress_bar_on_terminal(capsys: pytest.CaptureFixture[str], clicks_file: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_progress, "DEFAULT_DELAY", 0.0)
    for extra, shown in (([], True), (["--no-progress"], False)):
        tty = FakeTTY()
        monkeypatch.setattr(sys, "stderr", tty)
        assert cli.main(["inspect", str(clicks_file), "--batch-rows", "500", *extra]) == 0
        err = tty.getvalue()
        assert ("1,500 rows" in err and err.endswith("\r")) == shown, err
        assert (err == "") == (not shown)
        assert capsys.readouterr().out.startswith(str(clicks_file))


def test_progress_fits_a_narrow_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "get_terminal_size",
                        lambda fallback: os.terminal_size((50, 24)))
    stream, clock = FakeTTY(), FakeClock()
    bar = Progress(6_000_000, label="inspect", stream=stream, clock=clock)
    clock.now = 2.0
    bar.update(1_500_000)
    line = stream.getvalue().lstrip("\r")
    assert line == "inspect  1,500,000/6,000,000 rows  25%  750.0k ro"  # no bar, then cut
    monkeypatch.setattr(shutil, "get_terminal_size",
                        lambda fallback: os.terminal_size((78, 24)))
    clock.now = 3.0
    bar.update(0)
    line = stream.getvalue().split("\r")[-1]
    assert line.startswith("inspect [#") and line.endswith("ETA 0:09") and len(line) == 77


def test_inspect_does_not_import_pandas() -> None:
    # pa.array() imports pandas when it is installed (about 0.2 s of start-up)
    code = ("import sys; from arrow_sparse.cli import main; "
            f"assert main(['inspect', {str(SAMPLE)!r}, '--json']) == 0; "
            "assert 'pandas' not in sys.modules, 'pandas imported'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
