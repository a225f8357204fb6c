"""Fixtures of the command line tests: the test table and a Parquet file of it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ._helpers import clicks_table


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
