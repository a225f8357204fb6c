"""Functions given a Polars or pandas Series give back the same kind of Series.

Each result is compared with the same function on the Series' Arrow array; names and
pandas indexes are kept.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pyarrow as pa
import pytest

import arrow_sparse as asp

pl = pytest.importorskip("polars")
pd = pytest.importorskip("pandas")

ROWS = [[1, 2, 3], [2, 4, 6, 7], None, [3, None]]

OPS = {
    "hash_bucket": lambda x: asp.hash_bucket(x, 10),
    "bucketize": lambda x: asp.bucketize(x, [2, 5]),
    "pad_or_truncate": lambda x: asp.pad_or_truncate(x, 3, pad_value=-1),
    "drop_nulls": asp.drop_nulls,
    "fill_null": lambda x: asp.fill_null(x, 0),
    "segment_sum": asp.segment_sum,
    "segment_max": asp.segment_max,
    "segment_mean": asp.segment_mean,
}


def _arrow(x: Any) -> list[Any]:
    return x.to_pylist()


@pytest.mark.parametrize("op", sorted(OPS))
def test_polars_series_in_polars_series_out(op: str) -> None:
    s = pl.Series("ids", ROWS)
    got = OPS[op](s)
    assert isinstance(got, pl.Series)
    assert got.name == "ids"
    assert got.to_list() == _arrow(OPS[op](s.to_arrow()))


@pytest.mark.parametrize("op", sorted(OPS))
def test_pandas_series_in_pandas_series_out(op: str) -> None:
    s = pd.Series(ROWS, dtype=pd.ArrowDtype(pa.list_(pa.int64())), index=list("wxyz"),
                  name="ids")
    got = OPS[op](s)
    assert isinstance(got, pd.Series)
    assert got.name == "ids" and list(got.index) == list("wxyz")
    want = _arrow(OPS[op](pa.array(ROWS, pa.list_(pa.int64()))))
    assert [None if v is pd.NA else (v.tolist() if hasattr(v, "tolist") else v)
            for v in got.tolist()] == want


def test_arrow_and_numpy_inputs_unchanged() -> None:
    assert isinstance(asp.hash_bucket(pa.array(ROWS), 10), pa.Array)
    assert isinstance(asp.segment_sum(pa.chunked_array([ROWS])), pa.ChunkedArray)


def test_polars_not_imported() -> None:
    # (pandas may be loaded by pyarrow itself when it builds arrays from lists)
    code = ("import sys, pyarrow as pa, arrow_sparse as asp; "
            "asp.hash_bucket(pa.array([[1]]), 3); asp.segment_sum(pa.array([[1]])); "
            "asp.drop_nulls(pa.array([[1]])); "
            "assert 'polars' not in sys.modules")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
