"""Fixtures of the ``arrow_sparse.pipeline`` tests: a small table with null rows and values."""

from __future__ import annotations

import pyarrow as pa
import pytest


@pytest.fixture
def table() -> pa.Table:
    ids = pa.array([[3, 1, 3], [], None, [7, None], [1, 1, 1, 1, 2]], pa.list_(pa.int64()))
    scores = pa.array([[0.5, 1.0, 1.5], [], None, [2.0, None], [1.0] * 5],
                      pa.list_(pa.float32()))
    return pa.table({"uid": pa.array([1, 2, 3, 4, 5]), "ids": ids, "s": scores,
                     "label": pa.array([1, 0, None, 1, 0], pa.int8())})
