"""Shared by the tests of ``arrow_sparse.pipeline``: the sample data, the example spec,
slices of a table and a per-row reference.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample_clicks.parquet"
SPEC = REPO / "data" / "example_pipeline.toml"

#: Rows of the ``clicks`` fixture (the first rows of the sample, in three files).
CLICK_ROWS = 6_000

#: pyarrow before 26 writes fixed_size_list rows that are null but cannot read them back
#: from Parquet ("Expected all lists to be of size=50 but index 1 had size=0").
needs_fixed_size_null_round_trip = pytest.mark.skipif(
    int(pa.__version__.split(".")[0]) < 26,
    reason="pyarrow < 26 cannot read null fixed_size_list rows back from Parquet")


def sliced(t: pa.Table) -> list[pa.Table]:
    return [t.slice(0, 2), t.slice(2, 1), t.slice(3)]


def ref_rows(col: list, f):  # plain Python reference per row
    return [None if r is None else f(r) for r in col]
