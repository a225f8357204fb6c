"""The accessor methods written from one table (arrow_sparse.interop._methods).

Every row of the table is a method of the pandas ``Series.sparse_lists`` accessor and
of both Polars namespaces, with the function's own signature less the column, and the
per-row ones are ``DataFrame.sparse_lists`` methods taking ``columns``; each gives what
the function gives on the column's Arrow array.
"""

from __future__ import annotations

import inspect
from typing import Any

import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse.interop import _methods

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")
from arrow_sparse.interop.pandas import (  # noqa: E402
    SparseListsFrameAccessor,
    SparseListsSeriesAccessor,
)
from arrow_sparse.interop.polars_namespace import (  # noqa: E402
    SparseExprNamespace,
    SparseSeriesNamespace,
)

ROWS = [[1.5, 2.0, None], None, [], [4.0]]
ARGS: dict[str, tuple[Any, ...]] = {
    "hash_bucket": (10,), "bucketize": ([2.0],), "pad_or_truncate": (2,),
    "fill_null": (0.0,), "categorify": (asp.fit_vocabulary(pa.array([1, 4])),),
}


def function_signature_less_the_column(m: _methods.Method) -> list[str]:
    names = list(inspect.signature(m.func).parameters)[1:]
    return [n for n in names if m.params is None or n in m.params]


@pytest.mark.parametrize("m", _methods.METHODS, ids=lambda m: m.name)
def test_every_method_is_on_every_accessor_with_the_functions_signature(
        m: _methods.Method) -> None:
    want = ["self", *function_signature_less_the_column(m)]
    for cls in (SparseListsSeriesAccessor, SparseExprNamespace, SparseSeriesNamespace):
        method = getattr(cls, m.name)
        assert list(inspect.signature(method).parameters) == want, cls
        assert method.__doc__.startswith(m.summary.split("{")[0]), cls
        assert "Examples\n--------\n>>> " in method.__doc__
    if m in _methods.FRAME:
        frame_method = getattr(SparseListsFrameAccessor, m.name)
        assert list(inspect.signature(frame_method).parameters) == ["self", "columns"]


@pytest.mark.parametrize("m", _methods.METHODS, ids=lambda m: m.name)
def test_every_method_gives_what_the_function_gives(m: _methods.Method) -> None:
    arr = pa.array(ROWS, pa.list_(pa.float64()))
    if m.name in ("categorify", "hash_bucket"):  # integers or strings only
        arr = pa.array([[1, 4, None], None, [], [4]])
    args = ARGS.get(m.name, ())
    want = pa.chunked_array([m.func(arr, *args)]).to_pylist()
    by_pandas = getattr(pd.Series(arr.to_pylist(), index=list("abcd"), name="c").sparse_lists,
                        m.name)(*args)
    assert list(by_pandas.index) == list("abcd") and by_pandas.name == "c"
    assert pa.chunked_array(by_pandas).to_pylist() == want
    series = pl.Series("c", arr)
    by_series = getattr(series.sparse, m.name)(*args)
    assert by_series.name == "c" and by_series.to_list() == want
    by_expr = pl.DataFrame([series]).select(getattr(pl.col("c").sparse, m.name)(*args))["c"]
    assert by_expr.to_list() == want
    if m in _methods.FRAME:
        frame = pd.DataFrame({"c": arr.to_pylist()}, index=list("abcd"))
        assert pa.chunked_array(getattr(frame.sparse_lists, m.name)()["c"]).to_pylist() == want


def test_a_wrong_call_fails_when_the_expression_is_built() -> None:
    with pytest.raises(TypeError, match="missing a required argument: 'num_buckets'"):
        pl.col("c").sparse.hash_bucket()
    with pytest.raises(TypeError, match="too many positional arguments"):
        pl.col("c").sparse.sum(1)
