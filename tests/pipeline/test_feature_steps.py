"""Tests of the steps users bring from NVTabular / Merlin: ``embedding_bag``'s ``empty``
option (against torch), ``hashed_cross`` (against a plain-Python XXH3 oracle),
``join_external`` (against DuckDB) and user-defined Python steps.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from arrow_sparse.pipeline import Pipeline, step_from_dict
from arrow_sparse.pipeline.steps import EmbeddingBag

from ._helpers import sliced

IDS = pa.array([[0, 2], [], None, [1, 1, 3], [], [None]], pa.large_list(pa.int64()))


@pytest.fixture
def emb_path(tmp_path: Path) -> str:
    path = tmp_path / "emb.npy"
    np.save(path, np.arange(8, dtype=np.float32).reshape(4, 2) - 3)
    return str(path)


def _torch_bags(weights: np.ndarray, rows: list, mode: str) -> list:
    """torch.nn.functional.embedding_bag of the non-null rows (empty bags give zeros)."""
    torch = pytest.importorskip("torch")
    flat = [i for r in rows if r is not None for i in r if i is not None]
    offsets, n = [], 0
    for r in rows:
        offsets.append(n)
        n += 0 if r is None else sum(i is not None for i in r)
    got = torch.nn.functional.embedding_bag(
        torch.tensor(flat, dtype=torch.int64), torch.from_numpy(np.array(weights)),
        torch.tensor(offsets, dtype=torch.int64), mode=mode).numpy()
    return [None if r is None else got[k].tolist() for k, r in enumerate(rows)]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_empty_zeros_is_torch(emb_path: str, mode: str) -> None:
    t = pa.table({"ids": IDS})
    rows = IDS.to_pylist()
    expected = _torch_bags(np.load(emb_path), rows, mode)
    # a row of only null ids is not empty: it pools nothing and is null in mean / max
    if mode != "sum":
        expected[5] = None
    step = EmbeddingBag("ids", table=emb_path, mode=mode, empty="zeros", output="e")
    assert step.transform(t)["e"].to_pylist() == expected
    got = pa.concat_tables([step.transform(p) for p in sliced(t)])["e"].to_pylist()
    assert got == expected
    null_step = EmbeddingBag("ids", table=emb_path, mode=mode, empty="null", output="e")
    got = null_step.transform(t)["e"].to_pylist()
    assert got == [None if rows[k] == [] else v for k, v in enumerate(expected)]
    default = EmbeddingBag("ids", table=emb_path, mode=mode, output="e").transform(t)
    assert default["e"].to_pylist() == (expected if mode == "sum" else got)


def test_embedding_bag_empty_spec_and_errors(emb_path: str) -> None:
    step = step_from_dict({"type": "embedding_bag", "column": "ids", "table": emb_path,
                           "empty": "zeros"})
    assert step.to_dict()["empty"] == "zeros"
    assert "empty" not in EmbeddingBag("ids", table=emb_path).to_dict()
    with pytest.raises(ValueError, match=r"steps\[0\] \(embedding_bag\): 'empty' must be "
                                         r"'zeros' or 'null', got 'zero'"):
        Pipeline([{"type": "embedding_bag", "column": "ids", "table": emb_path,
                   "empty": "zero"}])
