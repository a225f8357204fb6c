"""The pipeline on input written by Polars, DuckDB, pandas and pyarrow, and its
partitioned output read back by each.

Every input holds the same rows; the reference for a run over a hive directory is the
same spec run over the one file the directory was written from (and Polars' own
``list.len`` for the lengths), compared row by row after sorting on a row number.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from arrow_sparse import Pipeline
from arrow_sparse.cli import main
from arrow_sparse.errors import ArrowSparseKeyError, ArrowSparseValueError
from arrow_sparse.pipeline import run

pl = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")
pd = pytest.importorskip("pandas")

SPEC = """
[[steps]]
type = "reduce"
column = "ids"
op = "length"
output = "n_ids"

[[steps]]
type = "hash_bucket"
column = "tags"
num_buckets = 1000
output = "tag_buckets"

[[steps]]
type = "categorify"
column = "ids"
output = "ids_cat"
"""


def frame(n: int = 300, seed: int = 5) -> Any:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 6, n)
    return pl.DataFrame({
        "row": np.arange(n, dtype=np.int64),
        "day": rng.choice(["mon", "tue", "wed"], n),
        "country": rng.choice(["de", "fr"], n),
        "k": rng.integers(0, 3, n).astype(np.int64),
        "ids": [rng.integers(0, 40, m).tolist() for m in lengths],
        "tags": [[f"t{x}" for x in rng.integers(0, 5, m)] for m in lengths],
        "label": rng.integers(0, 2, n).astype(np.int64),
    })


def rows(table: Any) -> list[dict[str, Any]]:
    if isinstance(table, pl.DataFrame):
        table = table.to_arrow()
    return [dict(sorted(r.items())) for r in table.sort_by("row").to_pylist()]


def duckdb_sql(query: str, **params: str) -> pa.Table:
    con = duckdb.connect()
    try:
        return con.sql(query, params=params).to_arrow_table()
    finally:
        con.close()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("inputs")
    df = frame()
    out = {"polars": base / "polars.parquet", "spec": base / "spec.toml"}
    out["spec"].write_text(SPEC)
    df.write_parquet(out["polars"])
    out["duckdb"] = base / "duckdb.parquet"
    con = duckdb.connect()
    try:
        con.execute(f"COPY (SELECT * FROM read_parquet('{out['polars']}')) TO "
                    f"'{out['duckdb']}' (FORMAT parquet)")
        out["duckdb_hive"] = base / "duckdb_hive"
        con.execute(f"COPY (SELECT * FROM read_parquet('{out['polars']}')) TO "
                    f"'{out['duckdb_hive']}' (FORMAT parquet, PARTITION_BY (k))")
    finally:
        con.close()
    out["pandas"] = base / "pandas.parquet"
    pq.read_table(out["duckdb"]).to_pandas(types_mapper=pd.ArrowDtype).to_parquet(
        out["pandas"])
    out["polars_hive"] = base / "polars_hive"
    df.write_parquet(out["polars_hive"], partition_by=["day", "country"])
    out["pyarrow_hive"] = base / "pyarrow_hive"
    pq.write_to_dataset(pq.read_table(out["duckdb"]), out["pyarrow_hive"],
                        partition_cols=["day"])
    return out


@pytest.fixture(scope="module")
def reference(inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
              ) -> list[dict[str, Any]]:
    """The spec run over the one file every other input was written from."""
    out = tmp_path_factory.mktemp("reference") / "out.parquet"
    run(str(inputs["spec"]), input=str(inputs["polars"]), output=str(out))
    return rows(pq.read_table(out))


@pytest.mark.parametrize("writer", ["polars_hive", "duckdb_hive", "pyarrow_hive"])
def test_run_reads_hive_directories_of_every_writer(
        tmp_path: Path, inputs: dict[str, Path], reference: list[dict[str, Any]],
        writer: str) -> None:
    out = tmp_path / "api.parquet"
    summary = run(str(inputs["spec"]), input=str(inputs[writer]), output=str(out))
    assert summary.rows_in == summary.rows_out == 300
    cli_out = tmp_path / "cli.parquet"
    assert main(["run", str(inputs["spec"]), "--input", str(inputs[writer]), "--output",
                 str(cli_out), "--no-progress"]) == 0
    got = pq.read_table(out)
    assert rows(got) == rows(pq.read_table(cli_out)) == reference
    # the lengths are Polars' own, on Polars' read of the directory
    polars = pl.scan_parquet(inputs[writer], hive_partitioning=True).collect()
    want = polars.select("row", pl.col("ids").list.len().cast(pl.Int64).alias("n_ids"))
    assert rows(got.select(["row", "n_ids"])) == rows(want)
    assert got.schema.field("k").type == pa.int64()  # the BIGINT DuckDB wrote


@pytest.mark.parametrize("writer", ["polars", "duckdb", "pandas"])
def test_output_schema_does_not_depend_on_the_writer(
        tmp_path: Path, inputs: dict[str, Path], reference: list[dict[str, Any]],
        writer: str) -> None:
    source = inputs[writer]
    input_schema = pq.read_schema(source)
    # the writers differ: Polars stores 64-bit offsets, DuckDB and pandas 32-bit ones
    large = pa.types.is_large_list(input_schema.field("ids").type)
    assert large == (writer == "polars")
    out = tmp_path / "out.parquet"
    run(str(inputs["spec"]), input=str(source), output=str(out))
    schema = pq.read_schema(out)
    assert schema.field("n_ids").type == pa.int64()
    assert schema.field("ids").type == pa.large_list(pa.field("element", pa.int64()))
    assert schema.field("ids_cat").type.value_type == pa.int64()
    assert schema.field("tag_buckets").type == pa.large_list(pa.field("element", pa.int64()))
    assert schema.field("day").type == pa.large_string()
    want = Pipeline.load(inputs["spec"]).output_schema(input_schema)
    assert schema.equals(want, check_metadata=False)
    # the pandas metadata of the input described its 7 columns, not these 10
    assert b"pandas" in (input_schema.metadata or {}) or writer != "pandas"
    assert b"pandas" not in (schema.metadata or {})
    assert b"pandas" not in (want.metadata or {})
    assert rows(pq.read_table(out)) == reference
    back = pd.read_parquet(out)
    assert list(back.columns) == schema.names and len(back) == 300


def test_output_schema_is_the_same_for_each_writer(inputs: dict[str, Path]) -> None:
    pipe = Pipeline.load(inputs["spec"])
    schemas = [pipe.output_schema(pq.read_schema(inputs[w]))
               for w in ("polars", "duckdb", "pandas")]
    assert schemas[0].equals(schemas[1]) and schemas[0].equals(schemas[2])


def test_transform_table_drops_pandas_metadata_and_widens_offsets() -> None:
    table = pa.Table.from_pandas(pd.DataFrame({"ids": [[1, 2], [3]], "s": ["a", "b"]}))
    assert b"pandas" in table.schema.metadata
    pipe = Pipeline([{"type": "reduce", "column": "ids", "op": "length", "output": "n"}])
    out = pipe.transform_table(table)
    assert out.schema.metadata is None
    assert out.schema.field("n").type == pa.int64()
    assert out.schema.field("s").type == pa.large_string()
    assert out.to_pydict() == {"ids": [[1, 2], [3]], "s": ["a", "b"], "n": [2, 1]}


# ============================================================ partitioned output
def test_run_writes_a_partitioned_data_set_read_back_by_every_reader(
        tmp_path: Path, inputs: dict[str, Path], reference: list[dict[str, Any]]) -> None:
    out = tmp_path / "features"
    summary = run(str(inputs["spec"]), input=str(inputs["duckdb"]), output=str(out),
                  partition_by=["day"], max_rows_per_file=40)
    files = sorted(out.rglob("*.parquet"))
    assert summary.rows_out == 300
    assert summary.bytes_out == sum(f.stat().st_size for f in files)
    assert {f.parent.name for f in files} == {"day=mon", "day=tue", "day=wed"}
    assert all(pq.read_metadata(f).num_rows <= 40 for f in files)
    assert len(files) > 3
    want = [{**r, "day": r["day"]} for r in reference]
    assert rows(ds.dataset(out, partitioning="hive").to_table()) == want
    assert rows(pl.scan_parquet(out, hive_partitioning=True).collect()) == want
    assert rows(duckdb_sql("SELECT * FROM read_parquet($p, hive_partitioning = true)",
                           p=str(out / "**" / "*.parquet"))) == want
    assert [p.name for p in tmp_path.iterdir()] == ["features"]  # no temporary left


def test_cli_partitioned_output(tmp_path: Path, inputs: dict[str, Path],
                                reference: list[dict[str, Any]],
                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "features"
    assert main(["run", str(inputs["spec"]), "--input", str(inputs["polars_hive"]),
                 "--output", str(out), "--partition-by", "day,country",
                 "--max-rows-per-file", "30", "--json", "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows_out"] == 300
    dirs = {f.parent.relative_to(out).as_posix() for f in out.rglob("*.parquet")}
    assert "day=mon/country=de" in dirs and len(dirs) == 6
    assert rows(pl.scan_parquet(out, hive_partitioning=True).collect()) == reference
    # run again over it: an earlier output is replaced as a whole
    assert main(["run", str(inputs["spec"]), "--input", str(inputs["polars"]), "--output",
                 str(out), "--max-rows-per-file", "1000", "--no-progress"]) == 0
    assert [p.name for p in out.iterdir()] == ["part-0.parquet"]
    assert rows(pq.read_table(out / "part-0.parquet")) == reference


def test_partitioned_output_errors(tmp_path: Path, inputs: dict[str, Path]) -> None:
    spec = str(inputs["spec"])
    with pytest.raises(ArrowSparseKeyError, match=r"run: partition_by names a column not in "
                                                  r"the data.*'nope'"):
        run(spec, input=str(inputs["polars"]), output=str(tmp_path / "o"),
            partition_by="nope")
    with pytest.raises(ArrowSparseValueError, match=r"write a directory of Parquet files, "
                                                    r"not '.*o\.arrow'"):
        run(spec, input=str(inputs["polars"]), output=str(tmp_path / "o.arrow"),
            max_rows_per_file=10)
    with pytest.raises(ArrowSparseValueError, match=r"max_rows_per_file must be a positive "
                                                    r"integer, got 0"):
        run(spec, input=str(inputs["polars"]), output=str(tmp_path / "o"),
            max_rows_per_file=0)
    # a directory output that holds the input would delete it
    with pytest.raises(ArrowSparseValueError, match=r"output '.*' holds the input"):
        run(spec, input=str(inputs["polars_hive"]), output=str(inputs["polars_hive"].parent),
            max_rows_per_file=10)
    assert inputs["polars_hive"].is_dir()
    assert list(tmp_path.iterdir()) == []
