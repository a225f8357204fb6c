"""Fixtures of the ``arrow_sparse.pipeline`` tests: a small table with null rows and values,
and the sample's first rows in files (the distributed runs read them).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ._helpers import CLICK_ROWS, SAMPLE


@pytest.fixture
def table() -> pa.Table:
    ids = pa.array([[3, 1, 3], [], None, [7, None], [1, 1, 1, 1, 2]], pa.list_(pa.int64()))
    scores = pa.array([[0.5, 1.0, 1.5], [], None, [2.0, None], [1.0] * 5],
                      pa.list_(pa.float32()))
    return pa.table({"uid": pa.array([1, 2, 3, 4, 5]), "ids": ids, "s": scores,
                     "label": pa.array([1, 0, None, 1, 0], pa.int8())})


@pytest.fixture(scope="module")
def clicks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first rows of the sample with a row key, in 3 files of 2 row groups each."""
    folder = tmp_path_factory.mktemp("clicks")
    table = pq.read_table(SAMPLE).slice(0, CLICK_ROWS)
    table = table.append_column("row", pa.array(range(CLICK_ROWS), pa.int64()))
    for i in range(3):
        part = table.slice(i * CLICK_ROWS // 3, CLICK_ROWS // 3)
        pq.write_table(part, folder / f"part-{i}.parquet", row_group_size=CLICK_ROWS // 6)
    return folder
