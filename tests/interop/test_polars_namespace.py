"""Tests of ``Expr.sparse`` / ``Series.sparse`` (arrow_sparse.interop.polars_namespace).

Reductions, lengths and null handling are checked against Polars' own ``list``
namespace; hashing, bucketing and padding against the arrow_sparse functions on the
same Arrow arrays (Polars has no equivalent) and plain-Python oracles.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

import arrow_sparse as asp

pl = pytest.importorskip("polars")
import arrow_sparse.interop.polars_namespace  # noqa: E402,F401  (registers .sparse)


@pytest.fixture
def frame() -> pl.DataFrame:
    rng = np.random.default_rng(5)
    rows = []
    for i in range(300):
        if i % 17 == 0:
            rows.append(None)
        else:
            row = rng.integers(-20, 100, size=int(rng.integers(0, 7))).tolist()
            if row and i % 5 == 0:
                row[0] = None
            rows.append(row)
    floats = [None if r is None else [None if x is None else x / 7 for x in r] for r in rows]
    return pl.DataFrame({"ids": rows, "x": floats},
                        schema={"ids": pl.List(pl.Int64), "x": pl.List(pl.Float64)})


@pytest.mark.parametrize(("ours", "theirs"), [
    ("sum", lambda e: e.list.sum()), ("max", lambda e: e.list.max()),
    ("min", lambda e: e.list.min()), ("mean", lambda e: e.list.mean()),
    ("lengths", lambda e: e.list.len()), ("drop_nulls", lambda e: e.list.drop_nulls()),
])
def test_matches_polars_list_ops(frame: pl.DataFrame, ours: str, theirs: object) -> None:
    for col in ("ids", "x"):
        got = frame.select(getattr(pl.col(col).sparse, ours)())[col].to_list()
        want = frame.select(theirs(pl.col(col)))[col].to_list()  # type: ignore[operator]
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            if isinstance(w, float) and g is not None:
                assert math.isclose(g, w, rel_tol=1e-12, abs_tol=1e-12)
            else:
                assert g == w


def test_series_namespace_is_the_expr_namespace(frame: pl.DataFrame) -> None:
    for op in ("sum", "max", "min", "mean", "prod", "logsumexp", "lengths", "drop_nulls"):
        by_series = getattr(frame["x"].sparse, op)()
        by_expr = frame.select(getattr(pl.col("x").sparse, op)())["x"]
        assert by_series.name == "x"
        assert by_series.to_list() == by_expr.to_list()


def test_hash_bucket_and_bucketize_in_lazy_frames(frame: pl.DataFrame) -> None:
    lazy = frame.lazy().with_columns(
        pl.col("ids").sparse.hash_bucket(1000, seed=3).alias("h"),
        pl.col("x").sparse.bucketize([0.0, 5.0]).alias("b"))
    out = lazy.collect()
    assert out["h"].to_list() == asp.hash_bucket(frame["ids"].to_arrow(), 1000, 3).to_pylist()
    want_b = [None if r is None else [None if v is None else int(np.searchsorted([0.0, 5.0], v,
                                                                                   side="right"))
                                      for v in r] for r in frame["x"].to_list()]
    assert out["b"].to_list() == want_b
    strings = pl.Series("t", [["a", None], None, ["bb"]])
    assert strings.sparse.hash_bucket(50).to_list() == \
        asp.hash_bucket(strings.to_arrow(), 50).to_pylist()


def test_pad_fill_and_padded(frame: pl.DataFrame) -> None:
    rows = frame["ids"].to_list()
    padded = frame["ids"].sparse.pad_or_truncate(3, pad_value=-1).to_list()
    assert padded == [None if r is None else (r + [-1] * 3)[:3] for r in rows]
    filled = frame.select(pl.col("ids").sparse.fill_null(0))["ids"].to_list()
    assert filled == frame.select(pl.col("ids").list.eval(pl.element().fill_null(0)))["ids"]\
        .to_list()
    dense = frame["ids"].sparse.fill_null(0).sparse.to_padded(8, pad_value=-5)
    assert dense.shape == (300, 8)
    assert dense[1].tolist() == (filled[1] + [-5] * 8)[:8]


def test_categorify_matches_function() -> None:
    s = pl.Series("c", [["a", "b", "a"], None, ["c"]])
    vocab = asp.fit_vocabulary(s.to_arrow())
    assert s.sparse.categorify(vocab).to_list() == asp.categorify(s.to_arrow(), vocab).to_pylist()


def test_namespace_registered_only_on_import() -> None:
    code = ("import sys, arrow_sparse; assert 'polars' not in sys.modules; "
            "import polars as pl; assert not hasattr(pl.col('a'), 'sparse'); "
            "import arrow_sparse.interop.polars_namespace; "
            "assert pl.Series([[1]]).sparse.sum().to_list() == [1]")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
