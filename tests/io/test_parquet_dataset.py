"""Data sets of many Parquet files: directories written by Polars, DuckDB and pyarrow read
as one schema, and ``write_parquet_dataset`` read back by pyarrow, Polars and DuckDB.

The reference for every value is the same data read by Polars or DuckDB (each with its
own hive-partition reader), compared row by row after sorting on a row number.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import arrow_sparse as asp
from arrow_sparse.errors import (
    ArrowSparseIOError,
    ArrowSparseKeyError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)
from arrow_sparse.io.parquet import _unify_types

pl = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")


def frame(n: int = 240, seed: int = 3) -> Any:
    """A click log with the column kinds that differ between writers."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 6, n)
    label = rng.integers(0, 2, n).astype(float)
    label[rng.random(n) < 0.1] = np.nan
    return pl.DataFrame({
        "row": np.arange(n, dtype=np.int64),
        "day": rng.choice(["mon", "tue", "wed"], n),
        "country": rng.choice(["de", "fr"], n),
        "k": rng.integers(0, 3, n).astype(np.int64),
        "ids": [rng.integers(0, 50, m).tolist() for m in lengths],
        "tags": [[f"t{x}" for x in rng.integers(0, 4, m)] for m in lengths],
        "label": pl.Series(label).fill_nan(None).cast(pl.Int64),
        "w": rng.random(n),
    })


def rows(table: Any) -> list[dict[str, Any]]:
    """Rows of an Arrow table or Polars frame, sorted by ``row``, columns in name order."""
    if isinstance(table, pl.DataFrame):
        table = table.to_arrow()
    out = table.sort_by("row").to_pylist()
    return [dict(sorted(r.items())) for r in out]


def polars_read(path: Path) -> Any:
    return pl.scan_parquet(path, hive_partitioning=True).collect()


def duckdb_read(path: Path) -> pa.Table:
    con = duckdb.connect()
    try:
        return con.sql("SELECT * FROM read_parquet($p, hive_partitioning = true)",
                       params={"p": str(path / "**" / "*.parquet")}).to_arrow_table()
    finally:
        con.close()


def asp_read(path: Path, **kwargs: Any) -> pa.Table:
    batches = asp.io.read_parquet(path, **kwargs)
    return pa.Table.from_batches(list(batches), batches.schema)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same frame as hive directories by Polars, DuckDB and pyarrow."""
    base = tmp_path_factory.mktemp("writers")
    df = frame()
    single = base / "single.parquet"
    df.write_parquet(single)
    out = {"single": single}
    out["polars"] = base / "polars"
    df.write_parquet(out["polars"], partition_by=["day", "country"])
    out["duckdb"] = base / "duckdb"
    con = duckdb.connect()
    try:
        con.execute(f"COPY (SELECT * FROM read_parquet('{single}')) TO '{out['duckdb']}' "
                    "(FORMAT parquet, PARTITION_BY (k))")
    finally:
        con.close()
    out["pyarrow"] = base / "pyarrow"
    table = pq.read_table(single)
    small = pa.schema([f.with_type(pa.string()) if f.type == pa.large_string() else f
                       for f in table.schema])
    pq.write_to_dataset(table.cast(small), out["pyarrow"], partition_cols=["day"])
    return out


def test_a_polars_hive_directory_reads_with_the_types_its_files_declare(
        written: dict[str, Path]) -> None:
    # Polars stores the partition columns in the files too, as large_string; pyarrow's
    # hive inference says string, and merging the two used to fail as "corrupt".
    path = written["polars"]
    got = asp_read(path)
    assert got.schema.field("day").type == pa.large_string()
    assert got.schema.field("country").type == pa.large_string()
    assert got.schema.field("ids").type == pa.large_list(pa.field("element", pa.int64()))
    assert rows(got) == rows(polars_read(path)) == rows(pl.read_parquet(written["single"]))


def test_a_duckdb_partition_key_is_int64_as_duckdb_and_polars_read_it(
        written: dict[str, Path]) -> None:
    path = written["duckdb"]
    got = asp_read(path)
    # DuckDB leaves k out of the files; pyarrow alone infers int32 from the names.
    assert ds.dataset(path, partitioning="hive").schema.field("k").type == pa.int32()
    assert got.schema.field("k").type == pa.int64()
    assert duckdb_read(path).schema.field("k").type == pa.int64()
    assert rows(got) == rows(duckdb_read(path)) == rows(polars_read(path))


def test_a_pyarrow_hive_directory_reads_as_polars_reads_it(written: dict[str, Path]) -> None:
    path = written["pyarrow"]
    got = asp_read(path)
    assert got.schema.names[-1] == "day"  # a key only in directory names comes last
    assert rows(got) == rows(polars_read(path))
    only = asp_read(path, columns=["row", "day"], filter=ds.field("day") == "tue")
    want = polars_read(path).filter(pl.col("day") == "tue").select("row", "day")
    assert rows(only) == rows(want)


def test_partitioning_given_by_the_caller_is_kept(written: dict[str, Path]) -> None:
    # an explicit Partitioning keeps its types; None reads the files' columns only
    explicit = ds.partitioning(pa.schema([("k", pa.int16())]), flavor="hive")
    got = asp_read(written["duckdb"], partitioning=explicit)
    assert got.schema.field("k").type == pa.int16()
    assert rows(got) == rows(duckdb_read(written["duckdb"]))
    plain = asp_read(written["polars"], partitioning=None)
    assert plain.schema.field("day").type == pa.large_string()
    assert rows(plain) == rows(polars_read(written["polars"]))
    assert "k" not in asp.io.read_parquet(written["duckdb"], partitioning=None).schema.names
    directory = asp_read(written["duckdb"], partitioning=["k"])  # k=0 read as text
    assert directory.schema.field("k").type == pa.string()
    other = ds.partitioning(pa.schema([("day", pa.string())]), flavor="hive")
    with pytest.raises(ArrowSparseTypeError, match=r"the partitioning gives 'day' the type "
                                                   r"string, but the files of '.*' store it as "
                                                   r"large_string"):
        asp.io.read_parquet(written["polars"], partitioning=other)
    wrong = ds.partitioning(pa.schema([("day", pa.int64())]), flavor="hive")
    with pytest.raises(ArrowSparseValueError, match=r"cannot read the partition directories "
                                                    r"of '.*' \(error parsing 'mon' as "
                                                    r"scalar of type int64\)"):
        asp.io.read_parquet(written["polars"], partitioning=wrong)
    with pytest.raises(ArrowSparseTypeError, match=r"partitioning must be 'hive', None, a "
                                                   r"list of directory field names"):
        asp.io.read_parquet(written["polars"], partitioning=3)


def test_files_of_different_writers_read_as_one_data_set(tmp_path: Path,
                                                         written: dict[str, Path]) -> None:
    # One file by Polars (large types), one by DuckDB (list, string, BIGINT), one by
    # pyarrow with narrower integers: one schema, the widest type of each column.
    df = frame(60, seed=9).with_columns(pl.col("row") + 1000)
    df.head(20).write_parquet(tmp_path / "a.parquet")
    con = duckdb.connect()
    try:
        con.register("part", df.slice(20, 20).to_arrow())
        con.execute(f"COPY part TO '{tmp_path / 'b.parquet'}' (FORMAT parquet)")
    finally:
        con.close()
    narrow = df.slice(40).to_arrow()
    narrow = narrow.cast(pa.schema([
        f.with_type(pa.int16()) if f.name == "label" else
        f.with_type(pa.list_(pa.int32())) if f.name == "ids" else f for f in narrow.schema]))
    pq.write_table(narrow, tmp_path / "c.parquet")
    got = asp_read(tmp_path)
    assert got.schema.field("ids").type == pa.large_list(pa.field("element", pa.int64()))
    assert got.schema.field("tags").type.value_type == pa.large_string()
    assert got.schema.field("label").type == pa.int64()
    assert rows(got) == rows(df)


def test_files_that_disagree_are_named_with_the_column_and_types(tmp_path: Path) -> None:
    pq.write_table(pa.table({"ids": [[1]], "x": [1]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"ids": [[2]], "x": ["b"]}), tmp_path / "b.parquet")
    pq.write_table(pa.table({"ids": [[3]], "x": ["c"]}), tmp_path / "c.parquet")
    with pytest.raises(ArrowSparseTypeError,
                       match=r"read_parquet: the files of '.*' disagree on the type of column "
                             r"'x': int64 in '.*a\.parquet'; string in '.*b\.parquet' and 1 "
                             r"more file\(s\); no type holds"):
        asp.io.read_parquet(tmp_path)
    # not a corruption: the other columns read
    assert asp_read(tmp_path, columns=["ids"])["ids"].to_pylist() == [[1], [2], [3]]


def test_a_partition_value_that_is_not_of_the_files_type_is_a_type_error(
        tmp_path: Path) -> None:
    for day in ("1", "x"):
        (tmp_path / f"day={day}").mkdir()
        pq.write_table(pa.table({"day": pa.array([1], pa.int64()), "v": [2]}),
                       tmp_path / f"day={day}" / "f.parquet")
    with pytest.raises(ArrowSparseTypeError,
                       match=r"partition directories of '.*' cannot be read with the types "
                             r"the files declare \(day: int64\)"):
        asp.io.read_parquet(tmp_path)


def test_a_corrupt_file_in_a_directory_is_still_named(tmp_path: Path) -> None:
    (tmp_path / "day=mon").mkdir()
    pq.write_table(pa.table({"v": [1]}), tmp_path / "day=mon" / "a.parquet")
    (tmp_path / "day=mon" / "b.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(ArrowSparseValueError,
                       match=r"file '.*day=mon/b\.parquet' is not valid Parquet"):
        asp.io.read_parquet(tmp_path)


@pytest.mark.parametrize(("types", "want"), [
    ([pa.int8(), pa.int32()], pa.int32()),
    ([pa.uint8(), pa.uint16()], pa.uint16()),
    ([pa.uint32(), pa.int16()], pa.int64()),
    ([pa.uint64(), pa.int64()], None),
    ([pa.float32(), pa.float64()], pa.float64()),
    ([pa.int64(), pa.float64()], None),
    ([pa.string(), pa.large_string()], pa.large_string()),
    ([pa.binary(), pa.large_binary()], pa.large_binary()),
    ([pa.string(), pa.binary()], None),
    ([pa.null(), pa.string()], pa.string()),
    ([pa.dictionary(pa.int32(), pa.string()), pa.large_string()], pa.large_string()),
    ([pa.list_(pa.int32()), pa.list_(pa.int64())], pa.list_(pa.int64())),
    ([pa.list_(pa.string()), pa.large_list(pa.large_string())],
     pa.large_list(pa.large_string())),
    ([pa.list_(pa.int64(), 2), pa.list_(pa.int32(), 2)], pa.list_(pa.int64(), 2)),
    ([pa.list_(pa.int64(), 2), pa.list_(pa.int64(), 3)], None),
    ([pa.list_(pa.int64()), pa.list_(pa.string())], None),
])
def test_unify_types(types: list[pa.DataType], want: pa.DataType | None) -> None:
    got = _unify_types(types)
    assert (got is None) if want is None else got.equals(want)
    if want is None:
        return
    # every input type casts to the result without loss (the reader's promise)
    for t in types:
        sample = pa.array([None], t)
        assert sample.cast(got).type.equals(got)


# ====================================================================== writing
def test_write_parquet_dataset_is_read_back_as_one_data_set_by_every_reader(
        tmp_path: Path, written: dict[str, Path]) -> None:
    table = pq.read_table(written["single"])
    out = tmp_path / "features"
    assert asp.io.write_parquet_dataset(table, out, partition_by=["day", "k"],
                                        max_rows_per_file=25) == table.num_rows
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert all(f.startswith("day=") and "/k=" in f and f.endswith(".parquet") for f in files)
    per_file = [pq.read_metadata(out / f).num_rows for f in files]
    assert max(per_file) <= 25 and sum(per_file) == table.num_rows
    want = rows(pl.read_parquet(written["single"]))
    assert rows(ds.dataset(out, partitioning="hive").to_table()) == want
    assert rows(polars_read(out)) == want
    assert rows(duckdb_read(out)) == want
    assert rows(asp_read(out)) == want
    # row order within a partition is the input's
    mon = asp_read(out, filter=(ds.field("day") == "mon") & (ds.field("k") == 1))
    assert mon["row"].to_pylist() == sorted(mon["row"].to_pylist())


def test_write_parquet_dataset_streams_and_replaces_an_earlier_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    batches = (pa.record_batch({"x": np.arange(i, i + 10), "g": [i % 3] * 10})
               for i in range(0, 100, 10))
    assert asp.io.write_parquet_dataset(batches, out, max_rows_per_file=40) == 100
    assert sorted(p.name for p in out.iterdir()) == [
        "part-0.parquet", "part-1.parquet", "part-2.parquet"]
    assert asp_read(out)["x"].to_pylist() == list(range(100))
    assert asp.io.write_parquet_dataset(pa.table({"x": [7], "g": [0]}), out) == 1
    assert [p.name for p in out.iterdir()] == ["part-0.parquet"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary, no old copy


def test_write_parquet_dataset_of_no_rows_keeps_the_schema(tmp_path: Path) -> None:
    out = tmp_path / "empty"
    schema = pa.schema({"ids": pa.list_(pa.int64()), "day": pa.string()})
    assert asp.io.write_parquet_dataset(schema.empty_table(), out, partition_by="day") == 0
    assert asp.io.read_parquet(out).schema.field("ids").type.value_type == pa.int64()
    assert polars_read(out).height == 0


def test_write_parquet_dataset_failure_leaves_nothing_behind(tmp_path: Path) -> None:
    out = tmp_path / "out"
    asp.io.write_parquet_dataset(pa.table({"x": [1, 2]}), out)

    def failing() -> Any:
        yield pa.record_batch({"x": [3]})
        msg = "bad batch"
        raise ArrowSparseValueError(msg)

    with pytest.raises(ArrowSparseValueError, match="bad batch"):
        asp.io.write_parquet_dataset(failing(), out)
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert asp_read(out)["x"].to_pylist() == [1, 2]  # the earlier output untouched


def test_write_parquet_dataset_errors(tmp_path: Path) -> None:
    table = pa.table({"ids": [[1]], "w": [0.5], "day": ["mon"]})
    with pytest.raises(ArrowSparseKeyError, match=r"partition_by names a column not in"):
        asp.io.write_parquet_dataset(table, tmp_path / "a", partition_by=["nope"])
    with pytest.raises(ArrowSparseTypeError, match=r"cannot name directories.*'ids' of "
                                                   r"type list<item: int64>"):
        asp.io.write_parquet_dataset(table, tmp_path / "a", partition_by=["ids"])
    with pytest.raises(ArrowSparseTypeError, match=r"'w' of type double"):
        asp.io.write_parquet_dataset(table, tmp_path / "a", partition_by=["w"])
    with pytest.raises(ArrowSparseValueError, match="max_rows_per_file must be positive"):
        asp.io.write_parquet_dataset(table, tmp_path / "a", max_rows_per_file=0)
    (tmp_path / "file").write_text("")
    with pytest.raises(ArrowSparseIOError, match=r"exists and is not a directory"):
        asp.io.write_parquet_dataset(table, tmp_path / "file")
    keep = tmp_path / "notes"
    keep.mkdir()
    (keep / "README.txt").write_text("mine")
    with pytest.raises(ArrowSparseIOError, match=r"holding other files than Parquet "
                                                 r"\('.*README\.txt'\)"):
        asp.io.write_parquet_dataset(table, keep)
    assert (keep / "README.txt").read_text() == "mine"
    with pytest.raises(ArrowSparseIOError, match=r"directory that does not exist"):
        asp.io.write_parquet_dataset(table, tmp_path / "no" / "such")
    assert sorted(os.listdir(tmp_path)) == ["file", "notes"]
