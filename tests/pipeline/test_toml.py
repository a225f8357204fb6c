"""Tests of ``arrow_sparse.pipeline._toml``: the TOML writer against the reader."""

from __future__ import annotations

import pytest

from arrow_sparse.pipeline import _toml


def test_toml_writer_round_trip() -> None:
    doc = {"pipeline": {"input": "a b.parquet", "batch_rows": 10},
           "steps": [{"type": "rename", "columns": {"a.b": "c\"d", "x": "y"}},
                     {"type": "filter", "column": "f", "op": "==", "value": 1.5}]}
    assert _toml.loads(_toml.dumps(doc)) == doc
    with pytest.raises(ValueError, match="invalid TOML"):
        _toml.loads("a = ", source="x.toml")
