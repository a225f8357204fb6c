"""Tests of the distinct counts and top values of ``arrow-sparse inspect``.

Exact counts are checked against Polars (``n_unique``, ``value_counts``) and numpy
(``np.unique``); the sketches (HyperLogLog, Misra-Gries) against exact counts of large
inputs, within the error the output states.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arrow_sparse.cli import inspect as stats_module
from arrow_sparse.cli._values import HyperLogLog, ValueCounter
from arrow_sparse.transforms.hashing import hash_bucket

from ._helpers import run_json

pl = pytest.importorskip("polars")


def polars_leaves(df: Any, name: str) -> Any:
    """The non-null leaves (a map: keys) of each reported level, by Polars alone."""
    col, *rest = name.split(".")
    s = df[col]
    if isinstance(s.dtype, pl.Map):
        if not rest:
            return s.map.keys().explode().drop_nulls()
        s = s.map.values().explode()
    while isinstance(s.dtype, pl.List):
        s = s.explode()
    return s.drop_nulls()


def polars_top(leaves: Any, k: int) -> tuple[list[Any], list[int]]:
    vc = leaves.value_counts()
    vc = vc.sort([vc.columns[1], vc.columns[0]], descending=[True, False]).head(k)
    return vc[vc.columns[0]].to_list(), vc[vc.columns[1]].to_list()


def test_distinct_and_top_match_polars(capsys: pytest.CaptureFixture[str],
                                       clicks_file: Path) -> None:
    df = pl.read_parquet(clicks_file)
    cols = run_json(capsys, str(clicks_file))["columns"]
    for col in cols:
        if col["name"] == "scores":  # float32 with NaN: compared with numpy below
            continue
        leaves = polars_leaves(df, col["name"])
        values = col["values"]
        assert values["distinct"] == {"count": leaves.n_unique(), "exact": True,
                                      "relative_standard_error": 0.0}, col["name"]
        want_values, want_counts = polars_top(leaves, 10)
        assert values["top"]["values"] == want_values, col["name"]
        assert values["top"]["counts"] == want_counts, col["name"]
        assert values["top"]["exact"] and values["top"]["count_error"] == 0


def test_float_distinct_matches_numpy(capsys: pytest.CaptureFixture[str],
                                      clicks_file: Path, table: pa.Table) -> None:
    [col] = run_json(capsys, str(clicks_file), "--columns", "scores")["columns"]
    leaves = np.array([x for row in table.column("scores").to_pylist() if row
                       for x in row if x is not None], dtype=np.float32)
    keys, counts = np.unique(leaves, return_counts=True)  # one NaN group, as Arrow's
    nan = np.isnan(keys)
    want = len(keys[~nan]) + int(nan.any())
    assert col["values"]["distinct"]["count"] == want
    order = np.lexsort((keys, -counts))[:10]
    assert col["values"]["top"]["counts"] == counts[order].tolist()
    assert np.allclose(col["values"]["top"]["values"], keys[order].astype(np.float64))


def test_top_option_and_table(capsys: pytest.CaptureFixture[str], clicks_file: Path) -> None:
    [col] = run_json(capsys, str(clicks_file), "--columns", "tags", "--top", "2")["columns"]
    assert col["values"]["top"]["values"] == ["t0", "t1"]
    from arrow_sparse import cli

    assert cli.main(["inspect", str(clicks_file), "--columns", "tags", "--top", "2"]) == 0
    text = capsys.readouterr().out
    assert "  distinct values  3  (exact)" in text
    assert "  top 2 values     value (count)\n    1.             t0 (1,070)\n" in text


def test_sketch_within_stated_error(tmp_path: Path) -> None:
    """Past --distinct-limit: the HyperLogLog estimate within 4 standard errors, the
    Misra-Gries top values the true ones with counts at most count_error low."""
    rng = np.random.default_rng(3)
    n_rows, k = 40_000, 30
    ids = rng.zipf(1.3, size=n_rows * k) % 3_000_000  # ~ 430k distinct, heavy head
    arr = pa.ListArray.from_arrays(pa.array(np.arange(0, n_rows * k + 1, k, dtype=np.int32)),
                                   pa.array(ids))
    path = tmp_path / "zipf.parquet"
    pq.write_table(pa.table({"ids": arr}), path, row_group_size=10_000)
    result = stats_module.inspect_parquet(path, distinct_limit=20_000, top=5)
    values = result["columns"][0]["values"]
    keys, counts = np.unique(ids, return_counts=True)
    distinct = values["distinct"]
    assert not distinct["exact"]
    assert distinct["relative_standard_error"] == pytest.approx(1.04 / 128, rel=1e-3)
    assert abs(distinct["count"] - len(keys)) <= 4 * distinct["relative_standard_error"] \
        * len(keys)
    top = values["top"]
    order = np.lexsort((keys, -counts))[:5]
    assert top["values"] == keys[order].tolist()
    assert not top["exact"]
    assert 0 < top["count_error"] <= len(ids) / 20_001
    true = counts[order]
    got = np.array(top["counts"])
    assert np.all(got <= true) and np.all(true - got <= top["count_error"])


@pytest.mark.parametrize("n", [0, 1, 50, 5_000, 200_000])
def test_hyperloglog_accuracy(n: int) -> None:
    h = HyperLogLog()
    for part in np.array_split(np.arange(n, dtype=np.int64) * 7919 - 12345, 3):
        h.add_hashes(hash_bucket(part, 2**63 - 1).astype(np.uint64) * np.uint64(2))
    assert abs(h.estimate() - n) <= max(1, 4 * h.relative_error * n)


def test_hyperloglog_merge_is_union() -> None:
    def sketch(values: np.ndarray) -> HyperLogLog:
        h = HyperLogLog(precision=10)
        h.add_hashes(hash_bucket(values, 2**63 - 1).astype(np.uint64) * np.uint64(2))
        return h

    a, b = sketch(np.arange(0, 6000)), sketch(np.arange(3000, 9000))
    a.merge(b)
    assert a.estimate() == sketch(np.arange(0, 9000)).estimate()


def test_counter_strings_past_limit_keeps_heavy_values() -> None:
    c = ValueCounter(limit=50, top=3)
    for i in range(20):
        c.add(pa.array(["hot"] * 100 + ["warm"] * 40 + [f"cold{i}-{j}" for j in range(30)]
                       + [None]))
    d = c.to_dict()
    assert d["top"]["values"] == ["hot", "warm"] + d["top"]["values"][2:]
    assert not d["distinct"]["exact"]
    assert abs(d["distinct"]["count"] - 602) <= 4 * d["distinct"]["relative_standard_error"] \
        * 602
    assert 2000 - d["top"]["counts"][0] <= d["top"]["count_error"]


def test_counter_of_unhashable_leaves_is_none() -> None:
    batch = pa.record_batch({"s": pa.array([[{"a": 1}], [{"a": 2}]])})
    [s] = stats_module.inspect_batches([batch], batch.schema)
    assert s.to_dict()["values"]["distinct"] is None
    assert s.to_dict()["values"]["top"] is None


def test_length_panel_layout(tmp_path: Path) -> None:
    """Linear y from zero (log on request), coinciding percentiles share one marker,
    null and empty rows have their own bars, the legend sits outside the axes."""
    figure = pytest.importorskip("matplotlib.figure")
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"ids": [[1, 2, 3]] * 95 + [[]] * 3 + [None] * 2}), path)
    result = stats_module.inspect_parquet(path, histograms=True)
    [col] = result["columns"]
    for log in (False, True):
        ax = figure.Figure().add_subplot()
        stats_module._plot_lengths(ax, col, log)
        assert ax.get_yscale() == ("log" if log else "linear")
        if not log:
            assert ax.get_ylim()[0] == 0
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "p50 = p90 = p99 = 3" in labels
        assert "empty rows (3)" in labels and "null rows (2)" in labels
        heights = sorted(round(p.get_height()) for p in ax.patches if p.get_height() > 0)
        assert heights[:2] == [2, 3] and heights[-1] == 95
        assert ax.get_legend().get_bbox_to_anchor().x0 > ax.bbox.x1 - 1
    ax = figure.Figure().add_subplot()
    stats_module._plot_frequencies(ax, col)
    assert "3 distinct (exact)" in ax.get_title()


def test_polars_written_file(tmp_path: Path) -> None:
    """large_list / large_string columns as Polars writes them: counts equal Polars'."""
    df = pl.DataFrame({"ids": [[1, 2, 2], None, [], [7, None]],
                       "tags": [["a", "b"], ["b"], None, ["c", "b"]]})
    path = tmp_path / "pl.parquet"
    df.write_parquet(path)
    cols = {c["name"]: c["values"] for c in stats_module.inspect_parquet(path)["columns"]}
    for name in ("ids", "tags"):
        leaves = df[name].explode().drop_nulls()
        assert cols[name]["distinct"]["count"] == leaves.n_unique()
        assert (cols[name]["top"]["values"], cols[name]["top"]["counts"]) == \
            polars_top(leaves, 10)
