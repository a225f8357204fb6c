"""DuckDB reads the Parquet a pipeline writes (skipped where duckdb is not installed)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from arrow_sparse.pipeline import run

from ._helpers import SPEC

duckdb = pytest.importorskip("duckdb")


def test_duckdb_reads_the_pipeline_output(tmp_path: Path) -> None:
    out = tmp_path / "features.parquet"
    run(SPEC, output=str(out))
    table = pq.read_table(out)
    con = duckdb.connect()
    try:
        rows, mean_items, longest, first_cat = con.execute(
            "SELECT count(*), avg(num_items), max(len(item_buckets)), "
            "max(item_cat[1]) FROM read_parquet(?)", [str(out)]).fetchone()
        types = dict(con.execute("SELECT column_name, column_type FROM "
                                 "(DESCRIBE SELECT * FROM read_parquet(?))",
                                 [str(out)]).fetchall())
        # filters and aggregates over the list columns, checked against pyarrow
        positives = con.execute("SELECT count(*) FROM read_parquet(?) WHERE label = 1 AND "
                                "list_contains(item_cat, 1)", [str(out)]).fetchone()[0]
    finally:
        con.close()
    assert rows == table.num_rows == 100_000
    assert mean_items == pytest.approx(pc.mean(table["num_items"]).as_py())
    assert longest == 50
    assert first_cat == pc.max(pc.list_element(table["item_cat"], 0)).as_py()
    assert types["item_buckets"] in ("BIGINT[50]", "BIGINT[]")
    assert types["mean_item_score"] in ("FLOAT", "DOUBLE")
    expected = sum(1 for label, cats in zip(table["label"].to_pylist(),
                                            table["item_cat"].to_pylist(), strict=True)
                   if label == 1 and cats is not None and 1 in cats)
    assert positives == expected
