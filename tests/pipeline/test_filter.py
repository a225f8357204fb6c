"""Tests of ``arrow_sparse.pipeline._filter``: the filter expressions a Filter step refuses."""

from __future__ import annotations

import pytest

from arrow_sparse.pipeline.steps import (
    Filter,
)


@pytest.mark.parametrize(("expr", "match"), [
    ("label >", "expected a number"),
    ("label = 1", "cannot parse"),
    ("__import__('os')", "expected a comparison"),
    ("", "non-empty string"),
])
def test_filter_bad_expr(expr: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Filter(expr=expr)
