"""Shared by the tests of ``arrow_sparse.io``: the sample data set and a small table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_clicks.parquet"
SAMPLE_ROWS = 100_000
SAMPLE_ROW_GROUP = 16_384


def small_table(offsets: Any = pa.int32) -> pa.Table:
    list_type = pa.list_ if offsets is pa.int32 else pa.large_list
    return pa.table({
        "user": pa.array([7, 8, 9, 10], pa.int64()),
        "ids": pa.array([[1, 2, 3], [2, 4, 6, 7], [3, 6], None], list_type(pa.int64())),
        "scores": pa.array([[0.5, 1, 2], [1, 1, 1, 1], [2, 3], None], list_type(pa.float32())),
        "label": pa.array([1, 0, 1, 0], pa.int8()),
    })
