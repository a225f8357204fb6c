"""Tests of ``arrow_sparse.io.parquet``: streaming Parquet by row group (read_parquet,
ParquetBatches) and writing it (write_parquet).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import arrow_sparse as asp
from arrow_sparse._arrow import numpy_dtype
from arrow_sparse.errors import (
    ArrowSparseError,
    ArrowSparseKeyError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)
from arrow_sparse.io import ArrowSparseIOError
from arrow_sparse.io import parquet as parquet_io

from ._helpers import SAMPLE, SAMPLE_ROW_GROUP, SAMPLE_ROWS, small_table


@pytest.fixture(scope="module")
def sample_table() -> pa.Table:
    return pq.read_table(SAMPLE)


# ------------------------------------------------------------------------- read_parquet
def test_read_parquet_streams_the_sample_by_row_group(sample_table: pa.Table) -> None:
    batches = asp.io.read_parquet(SAMPLE)
    assert batches.num_rows == SAMPLE_ROWS
    assert batches.schema.names == sample_table.schema.names
    assert batches.files == [str(SAMPLE)]
    sizes = []
    for batch in batches:
        assert isinstance(batch, pa.RecordBatch)
        sizes.append(batch.num_rows)
    # A batch never spans row groups: 16,384-row groups give 16,384-row batches.
    assert sizes == [SAMPLE_ROW_GROUP] * 6 + [SAMPLE_ROWS - 6 * SAMPLE_ROW_GROUP]
    assert pa.Table.from_batches(list(batches)).equals(sample_table)


def test_read_parquet_batch_rows_caps_each_batch() -> None:
    sizes = [b.num_rows for b in asp.io.read_parquet(SAMPLE, batch_rows=10_000)]
    assert max(sizes) == 10_000
    assert sum(sizes) == SAMPLE_ROWS


def test_read_parquet_holds_about_one_row_group(sample_table: pa.Table) -> None:
    columns = ["item_ids", "item_scores"]
    full = sample_table.select(columns).nbytes
    start = pa.total_allocated_bytes()
    peak = 0
    for batch in asp.io.read_parquet(SAMPLE, columns=columns):
        peak = max(peak, pa.total_allocated_bytes() - start)
        del batch
    assert peak < full / 2, (peak, full)


def test_read_parquet_columns_are_projected_in_order() -> None:
    batches = asp.io.read_parquet(SAMPLE, columns=["label", "item_ids"])
    assert batches.schema.names == ["label", "item_ids"]
    first = next(iter(batches))
    assert first.schema.names == ["label", "item_ids"]
    assert first.schema.field("item_ids").type == pa.list_(pa.int64())


def test_read_parquet_filter_and_unknown_num_rows(sample_table: pa.Table) -> None:
    batches = asp.io.read_parquet(SAMPLE, columns=["label"], filter=pc.field("label") == 1)
    assert batches.num_rows is None
    got = pa.Table.from_batches(list(batches))
    expected = int(pc.sum(sample_table.column("label")).as_py())
    assert got.num_rows == expected
    assert pc.all(pc.equal(got.column("label"), 1)).as_py()
    assert "unknown (filtered)" in repr(batches)


def test_read_parquet_is_reiterable() -> None:
    batches = asp.io.read_parquet(SAMPLE, columns=["user_id"])
    assert sum(b.num_rows for b in batches) == sum(b.num_rows for b in batches) == SAMPLE_ROWS


def test_read_parquet_list_of_files_directory_and_dataset(tmp_path: Path) -> None:
    table = small_table()
    paths = []
    for i in range(3):
        path = tmp_path / f"part-{i}.parquet"
        asp.io.write_parquet(table, path)
        paths.append(str(path))
    from_list = asp.io.read_parquet(paths)
    assert from_list.num_rows == 12
    assert from_list.files == paths
    from_dir = asp.io.read_parquet(tmp_path)
    assert sum(b.num_rows for b in from_dir) == 12
    from_dataset = asp.io.read_parquet(ds.dataset(paths, format="parquet"))
    assert pa.Table.from_batches(list(from_dataset)).column("user").to_pylist() == \
        [7, 8, 9, 10] * 3


def test_read_parquet_hive_partitions_become_columns_and_prune(tmp_path: Path) -> None:
    table = small_table().append_column("day", pa.array(["mon", "mon", "tue", "wed"]))
    pq.write_to_dataset(table, tmp_path, partition_cols=["day"])
    batches = asp.io.read_parquet(tmp_path, columns=["user", "day"])
    got = pa.Table.from_batches(list(batches)).sort_by("user")
    assert got.column("day").to_pylist() == ["mon", "mon", "tue", "wed"]
    filtered = asp.io.read_parquet(tmp_path, columns=["user"], filter=pc.field("day") == "tue")
    assert [b.column("user").to_pylist() for b in filtered] == [[9]]


def test_read_parquet_keyed_true_takes_the_integer_list_columns(tmp_path: Path,
                                                                sample_table: pa.Table) -> None:
    table = sample_table.append_column("clicked", sample_table.column("item_ids"))
    path = tmp_path / "two.parquet"
    asp.io.write_parquet(table, path, row_group_rows=SAMPLE_ROW_GROUP)
    batches = asp.io.read_parquet(path, keyed=True)
    # item_scores (floats) and the map column are left out
    assert batches.schema.names == ["item_ids", "clicked"]
    first = next(iter(batches))
    assert isinstance(first, asp.KeyedJagged)
    assert first.keys() == ["item_ids", "clicked"]
    assert first.batch_size == SAMPLE_ROW_GROUP
    expected = asp.KeyedJagged.from_arrow(table.slice(0, SAMPLE_ROW_GROUP),
                                          keys=["item_ids", "clicked"])
    np.testing.assert_array_equal(first.lengths, expected.lengths)
    np.testing.assert_array_equal(first.values, expected.values)
    np.testing.assert_array_equal(first.validity, expected.validity)


def test_read_parquet_keyed_with_weights(sample_table: pa.Table) -> None:
    batches = asp.io.read_parquet(SAMPLE, keyed=["item_ids"], weights="item_scores",
                                  batch_rows=1000)
    total = 0
    for kj in batches:
        assert kj.keys() == ["item_ids"]
        assert kj.weights is not None and len(kj.weights) == len(kj.values)
        total += kj.batch_size
    assert total == SAMPLE_ROWS
    last = pa.Table.from_batches([sample_table.to_batches()[0]]).slice(0, 1000)
    first = next(iter(batches))
    np.testing.assert_array_equal(
        first.weights, pc.list_flatten(last.column("item_scores")).to_numpy())


@pytest.mark.parametrize("offsets", [pa.int32, pa.int64], ids=["list", "large_list"])
def test_read_parquet_keyed_keeps_offsets_width(tmp_path: Path, offsets: Any) -> None:
    path = tmp_path / "t.parquet"
    asp.io.write_parquet(small_table(offsets), path)
    kj = next(iter(asp.io.read_parquet(path, keyed=["ids"])))
    assert kj.lengths.dtype == numpy_dtype(offsets())
    assert kj["ids"].to_list() == [[1, 2, 3], [2, 4, 6, 7], [3, 6], None]


def test_with_columns_reads_a_subset() -> None:
    batches = asp.io.read_parquet(SAMPLE, batch_rows=50_000)
    labels = batches.with_columns(["label", "user_id"])
    assert labels.schema.names == ["label", "user_id"] and labels.num_rows == SAMPLE_ROWS
    assert [b.num_rows for b in labels][:2] == [SAMPLE_ROW_GROUP] * 2
    with pytest.raises(ArrowSparseKeyError, match="with_columns: columns names a column not"):
        batches.with_columns(["nope"])
    keyed = asp.io.read_parquet(SAMPLE, keyed=["item_ids"]).with_columns(["item_ids"])
    assert next(iter(keyed)).keys() == ["item_ids"]


def test_iter_with_location_shards(tmp_path: Path) -> None:
    table = pa.table({"x": np.arange(100)})
    for i in range(2):
        asp.io.write_parquet(table.slice(50 * i, 50), tmp_path / f"{i}.parquet",
                             row_group_rows=20)
    batches = asp.io.read_parquet(tmp_path)
    seen = [(os.path.basename(path), rg, b.column(0)[0].as_py())
            for b, path, rg in batches.iter_with_location()]
    assert seen == [("0.parquet", 0, 0), ("0.parquet", 1, 20), ("0.parquet", 2, 40),
                    ("1.parquet", 0, 50), ("1.parquet", 1, 70), ("1.parquet", 2, 90)]
    shards = [[b.column(0)[0].as_py() for b, _, _ in batches.iter_with_location(i, 4)]
              for i in range(4)]
    assert shards == [[0, 70], [20, 90], [40], [50]]
    with pytest.raises(ArrowSparseValueError, match=r"shard must be in \[0, num_shards=2\)"):
        list(batches.iter_with_location(2, 2))


def test_row_groups_list_and_read_each_unit(tmp_path: Path) -> None:
    table = pa.table({"x": np.arange(100), "ids": [[i] * (i % 3) for i in range(100)]})
    for i in range(2):
        asp.io.write_parquet(table.slice(50 * i, 50), tmp_path / f"{i}.parquet",
                             row_group_rows=20)
    batches = asp.io.read_parquet(tmp_path, columns=["ids", "x"])
    groups = batches.row_groups()
    assert [(os.path.basename(g.path), g.row_group, g.num_rows) for g in groups] == [
        ("0.parquet", 0, 20), ("0.parquet", 1, 20), ("0.parquet", 2, 10),
        ("1.parquet", 0, 20), ("1.parquet", 1, 20), ("1.parquet", 2, 10)]
    parts = [batches.read_row_group(g) for g in groups]
    assert all(p.schema.names == ["ids", "x"] for p in parts)
    assert pa.concat_tables(parts).to_pylist() == table.select(["ids", "x"]).to_pylist()
    assert [p.num_rows for p in parts] == [g.num_rows for g in groups]
    with pytest.raises(ArrowSparseTypeError, match="^read_row_group: group must be a RowGroup"):
        batches.read_row_group((groups[0].path, 0))  # type: ignore[arg-type]
    filtered = asp.io.read_parquet(tmp_path, filter=pc.field("x") > 3)
    with pytest.raises(ArrowSparseValueError, match="^row_groups: the stream has a filter"):
        filtered.row_groups()


# ----------------------------------------------------------------- read_parquet: errors
def test_read_parquet_missing_file_is_an_io_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.parquet"
    with pytest.raises(ArrowSparseIOError, match="read_parquet: paths_or_dataset .*nope.parquet"
                       ".* does not exist") as info:
        asp.io.read_parquet(missing)
    assert isinstance(info.value, OSError) and isinstance(info.value, ArrowSparseError)
    with pytest.raises(ArrowSparseIOError, match=r"paths_or_dataset\[1\]"):
        asp.io.read_parquet([SAMPLE, missing])


def test_read_parquet_truncated_file(tmp_path: Path) -> None:
    path = tmp_path / "truncated.parquet"
    path.write_bytes(SAMPLE.read_bytes()[: SAMPLE.stat().st_size // 2])
    with pytest.raises(ArrowSparseValueError,
                       match=r"read_parquet: file '.*truncated\.parquet' is not valid Parquet; "
                             r"it is corrupt or truncated \(pyarrow: .*magic bytes"):
        asp.io.read_parquet(path)


def test_read_parquet_flipped_footer(tmp_path: Path) -> None:
    data = bytearray(SAMPLE.read_bytes())
    footer_length = int.from_bytes(data[-8:-4], "little")
    footer_start = len(data) - 8 - footer_length
    for i in range(footer_start + 10, footer_start + 60):
        data[i] ^= 0xFF
    path = tmp_path / "flipped.parquet"
    path.write_bytes(bytes(data))
    with pytest.raises(ArrowSparseValueError, match=r"file '.*flipped\.parquet' is not valid "
                                                    r"Parquet; it is corrupt or truncated"):
        asp.io.read_parquet(path)


def test_read_parquet_names_the_bad_file_of_a_directory(tmp_path: Path) -> None:
    asp.io.write_parquet(small_table(), tmp_path / "a.parquet")
    (tmp_path / "b.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(ArrowSparseValueError, match=r"b\.parquet' is not valid Parquet"):
        list(asp.io.read_parquet(tmp_path))


def test_read_parquet_damaged_page_names_the_row_group_and_column(tmp_path: Path,
                                                       sample_table: pa.Table) -> None:
    path = tmp_path / "damaged.parquet"
    asp.io.write_parquet(sample_table, path, row_group_rows=SAMPLE_ROW_GROUP)
    column = pq.read_metadata(path).row_group(2).column(1)  # item_ids of row group 2
    data = bytearray(path.read_bytes())
    for i in range(column.data_page_offset + 200, column.data_page_offset + 220):
        data[i] ^= 0x55
    path.write_bytes(bytes(data))
    batches = iter(asp.io.read_parquet(path, columns=["item_ids"]))
    # Streaming: the two good row groups come out before the damage is reached.
    assert [next(batches).num_rows for _ in range(2)] == [SAMPLE_ROW_GROUP] * 2
    with pytest.raises(ArrowSparseValueError,
                       match=r"damaged\.parquet' is not valid Parquet \(row group 2, column "
                             r"'item_ids'\); it is corrupt or truncated \(pyarrow: .*checksum"):
        next(batches)


def test_read_parquet_wrong_type_in_one_file_is_a_type_error(tmp_path: Path) -> None:
    # Found by a check of each file's schema, not reported as corruption.
    pq.write_table(pa.table({"ids": pa.array([[1, 2], [3]])}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"ids": pa.array([1, 2])}), tmp_path / "c.parquet")
    with pytest.raises(ArrowSparseTypeError,
                       match=r"read_parquet: the files of '.*' disagree on the type of column "
                             r"'ids': list<element: int64> in '.*a\.parquet'; int64 in "
                             r"'.*c\.parquet'; no type holds"):
        asp.io.read_parquet(tmp_path)
    # Strings that would parse as numbers are not cast silently either.
    pq.write_table(pa.table({"ids": pa.array([["7"]])}), tmp_path / "c.parquet")
    with pytest.raises(ArrowSparseTypeError, match=r"list<element: string> in .*c\.parquet"):
        list(asp.io.read_parquet(tmp_path))


def test_read_parquet_lossless_widening_across_files(tmp_path: Path) -> None:
    pq.write_table(pa.table({"ids": pa.array([[1, 2]]), "w": pa.array([1.5])}),
                   tmp_path / "a.parquet")
    pq.write_table(pa.table({"ids": pa.array([[3]], pa.large_list(pa.int16())),
                             "w": pa.array([2.5], pa.float32())}), tmp_path / "b.parquet")
    got = pa.Table.from_batches(list(asp.io.read_parquet(tmp_path)))
    assert got.to_pydict() == {"ids": [[1, 2], [3]], "w": [1.5, 2.5]}
    pq.write_table(pa.table({"ids": pa.array([[4]], pa.list_(pa.uint64())), "w": [0.5]}),
                   tmp_path / "c.parquet")
    with pytest.raises(ArrowSparseTypeError, match=r"list<element: uint64>"):
        list(asp.io.read_parquet(tmp_path))


def test_read_parquet_missing_column_in_one_file(tmp_path: Path) -> None:
    pq.write_table(pa.table({"ids": pa.array([[1]]), "x": [1]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"ids": pa.array([[2]])}), tmp_path / "b.parquet")
    with pytest.raises(ArrowSparseKeyError, match=r"file '.*b\.parquet' has no column 'x'"):
        list(asp.io.read_parquet(tmp_path))
    assert pa.Table.from_batches(list(asp.io.read_parquet(tmp_path, columns=["ids"]))
                                 )["ids"].to_pylist() == [[1], [2]]


def test_read_parquet_missing_column() -> None:
    with pytest.raises(ArrowSparseKeyError,
                       match=r"read_parquet: columns names a column not in the data \(first at "
                             r"position 1: 'nope'\); '.*sample_clicks\.parquet' has columns "
                             r"user_id, item_ids"):
        asp.io.read_parquet(SAMPLE, columns=["label", "nope"])
    with pytest.raises(ArrowSparseKeyError, match=r"keyed names a column not in the data"):
        asp.io.read_parquet(SAMPLE, keyed=["item_ids", "missing"])
    with pytest.raises(ArrowSparseKeyError, match=r"weights names a column not in the data"):
        asp.io.read_parquet(SAMPLE, keyed=["item_ids"], weights="w")


def test_read_parquet_keyed_on_a_non_list_column() -> None:
    with pytest.raises(ArrowSparseTypeError,
                       match=r"read_parquet: keyed names a column that is not a list of numbers "
                             r"\(first at position 1: 'user_id' of type int64\)"):
        asp.io.read_parquet(SAMPLE, keyed=["item_ids", "user_id"])
    with pytest.raises(ArrowSparseTypeError, match=r"keyed=True but no column is a list of "
                                                   r"integers \(columns: user_id: int64\)"):
        asp.io.read_parquet(SAMPLE, columns=["user_id"], keyed=True)
    with pytest.raises(ArrowSparseTypeError,
                       match=r"keyed mixes list value kinds: 'item_ids' holds integers but a "
                             r"later column does not \(first at position 1: 'item_scores' of "
                             r"type list<element: float>\); a KeyedJagged has one values dtype "
                             r"\(give float columns as weights=\)"):
        asp.io.read_parquet(SAMPLE, keyed=["item_ids", "item_scores"])


def test_read_parquet_argument_errors() -> None:
    with pytest.raises(ArrowSparseValueError, match="keyed names a column left out of columns"):
        asp.io.read_parquet(SAMPLE, columns=["label"], keyed=["item_ids"])
    with pytest.raises(ArrowSparseTypeError, match="filter must be a pyarrow.compute expression"):
        asp.io.read_parquet(SAMPLE, filter="label == 1")
    with pytest.raises(ArrowSparseValueError, match="batch_rows must be positive"):
        asp.io.read_parquet(SAMPLE, batch_rows=0)
    with pytest.raises(ArrowSparseTypeError, match="batch_rows must be an integer"):
        asp.io.read_parquet(SAMPLE, batch_rows=1.5)  # type: ignore[arg-type]
    with pytest.raises(ArrowSparseTypeError, match="paths_or_dataset must be a path"):
        asp.io.read_parquet(object())
    with pytest.raises(ArrowSparseTypeError, match="columns must be a list of column names"):
        asp.io.read_parquet(SAMPLE, columns="label")
    with pytest.raises(ArrowSparseValueError, match="weights is only used with keyed="):
        asp.io.read_parquet(SAMPLE, weights="item_scores")


# ------------------------------------------------------------------------ write_parquet
@pytest.mark.parametrize("offsets", [pa.int32, pa.int64], ids=["list", "large_list"])
def test_write_parquet_keeps_offsets_width(tmp_path: Path, offsets: Any) -> None:
    path = tmp_path / "t.parquet"
    table = small_table(offsets)
    assert asp.io.write_parquet(table, path) == 4
    list_type = pa.list_ if offsets is pa.int32 else pa.large_list
    assert pq.read_schema(path).field("ids").type == list_type(pa.int64())
    assert asp.io.read_parquet(path).schema.field("scores").type == list_type(pa.float32())
    back = pa.Table.from_batches(list(asp.io.read_parquet(path)))
    assert back.to_pylist() == table.to_pylist()
    assert asp.Jagged.from_arrow(back.column("ids")).offsets.dtype == \
        numpy_dtype(offsets())


def test_write_parquet_row_groups_from_a_stream_of_small_batches(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"

    def batches() -> Any:
        for start in range(0, 1000, 7):
            yield pa.record_batch({"x": np.arange(start, min(start + 7, 1000))})

    assert asp.io.write_parquet(batches(), path, row_group_rows=300) == 1000
    meta = pq.read_metadata(path)
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == \
        [300, 300, 300, 100]
    assert pq.read_table(path).column("x").to_pylist() == list(range(1000))


def test_write_parquet_default_row_group_and_compression(tmp_path: Path,
                                                         sample_table: pa.Table) -> None:
    path = tmp_path / "t.parquet"
    asp.io.write_parquet(sample_table, path)
    meta = pq.read_metadata(path)
    assert asp.io.DEFAULT_ROW_GROUP_ROWS == 65_536
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == \
        [65_536, SAMPLE_ROWS - 65_536]
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert [b.num_rows for b in asp.io.read_parquet(path)] == [65_536, SAMPLE_ROWS - 65_536]
    asp.io.write_parquet(sample_table, path, compression=None)
    assert pq.read_metadata(path).row_group(0).column(0).compression == "UNCOMPRESSED"
    asp.io.write_parquet(sample_table, path, compression="snappy")
    assert pq.read_table(path).equals(sample_table)


def test_write_parquet_keeps_metadata_and_stamps_version(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    table = small_table().replace_schema_metadata({b"owner": b"team-recs"})
    asp.io.write_parquet(table, path)
    metadata = pq.read_schema(path).metadata
    assert metadata[b"owner"] == b"team-recs"
    assert json.loads(metadata[b"arrow_sparse"]) == {"version": asp.__version__}
    assert asp.io.read_parquet(path).schema.metadata[b"owner"] == b"team-recs"


def test_extension_types_survive(tmp_path: Path, tag_type: Any) -> None:
    storage = pa.array([[1, 2], [], [3]], pa.list_(pa.int64()))
    table = pa.table({"t": pa.ExtensionArray.from_storage(tag_type("shape=3x4"), storage)})
    path = tmp_path / "t.parquet"
    asp.io.write_parquet(table, path)
    back = pa.Table.from_batches(list(asp.io.read_parquet(path)))
    field_type = back.schema.field("t").type
    assert isinstance(field_type, tag_type) and field_type.tag == "shape=3x4"
    assert back.column("t").chunk(0).storage.to_pylist() == [[1, 2], [], [3]]


def test_write_parquet_accepts_keyed_jagged_and_readers(tmp_path: Path) -> None:
    kj = asp.KeyedJagged.from_arrow(small_table(), keys=["ids"])
    path = tmp_path / "kj.parquet"
    assert asp.io.write_parquet([kj, kj], path) == 8
    assert pq.read_table(path).column("ids").to_pylist()[:4] == [[1, 2, 3], [2, 4, 6, 7],
                                                                [3, 6], None]
    copy = tmp_path / "copy.parquet"
    assert asp.io.write_parquet(asp.io.read_parquet(SAMPLE, batch_rows=5000), copy) == \
        SAMPLE_ROWS
    reader = pa.RecordBatchReader.from_batches(small_table().schema, small_table().to_batches())
    assert asp.io.write_parquet(reader, path) == 4


def test_write_parquet_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    with pytest.raises(ArrowSparseTypeError, match="write_parquet: data must be a Table"):
        asp.io.write_parquet(object(), path)
    with pytest.raises(ArrowSparseTypeError, match=r"data must be .* got int \(first at "
                                                   r"position 1\)"):
        asp.io.write_parquet([small_table(), 3], path)
    with pytest.raises(ArrowSparseValueError, match="data is an empty iterable"):
        asp.io.write_parquet([], path)
    other = pa.record_batch({"x": [1.0]})
    with pytest.raises(ArrowSparseTypeError,
                       match=r"data has a batch whose schema differs from the first batch's "
                             r"\(first at position 1: \{x: double\} instead of \{x: int64\}\)"):
        asp.io.write_parquet([pa.record_batch({"x": [1]}), other], path)
    with pytest.raises(ArrowSparseIOError, match="directory that does not exist"):
        asp.io.write_parquet(small_table(), tmp_path / "no" / "t.parquet")
    with pytest.raises(ArrowSparseValueError, match="row_group_rows must be positive"):
        asp.io.write_parquet(small_table(), path, row_group_rows=0)
    with pytest.raises(ArrowSparseValueError, match="compression 'zip' is not an available"):
        asp.io.write_parquet(small_table(), path, compression="zip")


@pytest.mark.parametrize("list_type", [pa.list_, pa.large_list])
def test_write_parquet_null_rows_that_cover_values(tmp_path: Path, list_type: Any) -> None:
    # Arrow leaves a null row's range unspecified; zero-copy results keep such ranges,
    # which Parquet writers before pyarrow 26 refuse: they are emptied for those.
    offsets = pa.array([0, 2, 4, 5], pa.int32() if list_type is pa.list_ else pa.int64())
    array_class = pa.ListArray if list_type is pa.list_ else pa.LargeListArray
    column = array_class.from_arrays(offsets, pa.array([1, 2, 3, 4, 5]),
                                     mask=pa.array([False, True, False]))
    assert column.to_pylist() == [[1, 2], None, [5]]
    emptied = parquet_io._empty_null_lists(column.slice(1))
    assert emptied.to_pylist() == [None, [5]] and emptied.type == column.type
    assert np.asarray(emptied.offsets).tolist() == [0, 0, 1]
    assert parquet_io._empty_null_lists(emptied) is emptied
    path = tmp_path / "nulls.parquet"
    asp.io.write_parquet(pa.table({"ids": column}), path)
    assert pq.read_table(path)["ids"].to_pylist() == [[1, 2], None, [5]]


def test_write_parquet_failure_leaves_no_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    asp.io.write_parquet(small_table(), path)
    before = path.read_bytes()

    def failing() -> Any:
        yield pa.record_batch({"x": np.arange(10)})
        msg = "upstream broke"
        raise RuntimeError(msg)

    with pytest.raises(RuntimeError, match="upstream broke"):
        asp.io.write_parquet(failing(), path, row_group_rows=5)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]


def test_read_parquet_names_the_file_of_a_refused_extension_type_issue_14(
        tmp_path: Path) -> None:
    # The sparse extension types refuse damaged type metadata while pyarrow reads the
    # schema; their error named neither read_parquet nor the file.
    storage = asp.sparse.sparse_tensor_array([asp.SparseCSR.from_dense(np.eye(2))]).storage
    field = pa.field("t", storage.type, metadata={b"ARROW:extension:name": b"arrow_sparse.csr",
                                                  b"ARROW:extension:metadata": b"garbage"})
    table = pa.Table.from_arrays([storage], schema=pa.schema([field]))
    asp.io.write_parquet(table, tmp_path / "a.parquet")
    asp.io.write_parquet(table, tmp_path / "b.parquet")
    good = asp.sparse.sparse_tensor_array([asp.SparseCSR.from_dense(np.eye(2))])
    with pytest.raises(ArrowSparseValueError, match=r"^read_parquet: file '.*a\.parquet' holds a "
                       r"column it cannot read: arrow_sparse\.csr: malformed extension metadata"):
        asp.io.read_parquet(tmp_path / "a.parquet")
    asp.io.write_parquet(pa.table({"t": good}), tmp_path / "a.parquet")
    with pytest.raises(ArrowSparseValueError, match=r"^read_parquet: file '.*b\.parquet' holds a "
                       r"column it cannot read"):  # the second file of a data set
        list(asp.io.read_parquet([tmp_path / "a.parquet", tmp_path / "b.parquet"]))
