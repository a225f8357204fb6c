"""Tests of the steps users bring from NVTabular / Merlin: ``embedding_bag``'s ``empty``
option (against torch), ``hashed_cross`` (against a plain-Python XXH3 oracle),
``join_external`` (against DuckDB) and user-defined Python steps.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from arrow_sparse.pipeline import Pipeline, _toml, step_from_dict
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


# ------------------------------------------------------------------------ hashed_cross
def _cross_oracle(rows: list[tuple], num_buckets: int, seed: int) -> list:
    """The documented definition, in plain Python with the ``xxhash`` package."""
    xxhash = pytest.importorskip("xxhash")

    def value_bytes(v: object) -> bytes:
        if isinstance(v, str):
            return v.encode("utf-8")
        return int(v).to_bytes(8, "little", signed=True)

    out = []
    for values in rows:
        if any(v is None for v in values):
            out.append(None)
            continue
        words = b"".join(
            (xxhash.xxh3_64_intdigest(value_bytes(v), seed=seed) % (2**63 - 1))
            .to_bytes(8, "little") for v in values)
        out.append(xxhash.xxh3_64_intdigest(words, seed=seed) % num_buckets)
    return out


def _cross_table(n: int = 300) -> pa.Table:
    rng = np.random.default_rng(5)
    words = ["", "fr", "us", "été", "item_42"]
    country = [None if rng.random() < 0.1 else words[k] for k in rng.integers(0, 5, n)]
    small = [None if rng.random() < 0.1 else int(k) for k in rng.integers(-128, 128, n)]
    return pa.table({
        "country": pa.array(country, pa.string()),
        "small": pa.array(small, pa.int8()),
        "big": pa.array(rng.integers(-2**62, 2**62, n), pa.int64()),
        "tag": pa.array(country, pa.large_string()),
    })


@pytest.mark.parametrize(("columns", "num_buckets", "seed"), [
    (["country", "small"], 1000, 0),
    (["small", "country"], 1000, 0),
    (["country", "small", "big"], 2**63 - 1, 7),
    (["big", "small"], 1, 2**64 - 1),
])
def test_hashed_cross_is_the_documented_hash(columns: list, num_buckets: int,
                                              seed: int) -> None:
    t = _cross_table()
    expected = _cross_oracle(list(zip(*(t[c].to_pylist() for c in columns), strict=True)),
                             num_buckets, seed)
    pipe = Pipeline([{"type": "hashed_cross", "columns": columns, "num_buckets": num_buckets,
                      "seed": seed, "output": "x"}])
    assert pipe.transform_table(t)["x"].to_pylist() == expected
    got = pa.concat_tables([pipe.transform_table(p) for p in sliced(t)])["x"].to_pylist()
    assert got == expected
    assert pipe.output_schema(t.schema).field("x").type == pa.int64()
    again = Pipeline.from_dict(_toml.loads(_toml.dumps(pipe.to_dict())))
    assert again.transform_table(t)["x"].to_pylist() == expected


def test_hashed_cross_ignores_arrow_widths_and_replaces_output() -> None:
    t = _cross_table()
    a = Pipeline([{"type": "hashed_cross", "columns": ["country", "small"],
                   "num_buckets": 97, "output": "small"}]).transform_table(t)
    b = Pipeline([{"type": "hashed_cross", "columns": ["tag", "small"],
                   "num_buckets": 97, "output": "x"}]).transform_table(
        t.set_column(1, "small", t["small"].cast(pa.int64())))
    assert a.column_names == t.column_names  # 'small' replaced in place
    assert a["small"].to_pylist() == b["x"].to_pylist()


@pytest.mark.parametrize(("spec", "schema", "exc", "match"), [
    ({"columns": ["a"]}, {"a": pa.int64()}, TypeError, "two or more column names"),
    ({"columns": ["a", "a"]}, {"a": pa.int64()}, ValueError, "repeats a name"),
    ({"columns": ["a", "b"], "num_buckets": 0}, {"a": pa.int64()}, ValueError,
     r"'num_buckets' must be in \[1, 9223372036854775807\], got 0"),
    ({"columns": ["a", "bb"]}, {"a": pa.int64(), "b": pa.int64()}, KeyError,
     "no column 'bb'.*did you mean 'b'"),
    ({"columns": ["a", "b"]}, {"a": pa.int64(), "b": pa.float64()}, TypeError,
     "column 'b' must hold integers or strings.*got double"),
    ({"columns": ["a", "b"]}, {"a": pa.int64(), "b": pa.list_(pa.int64())}, TypeError,
     "column 'b' must hold scalar integers or strings, got large_list"),
])
def test_hashed_cross_spec_errors(spec: dict, schema: dict, exc: type, match: str) -> None:
    entry = {"type": "hashed_cross", "num_buckets": 10, "output": "x", "name": "hc", **spec}
    with pytest.raises(exc, match=match):
        Pipeline([entry]).output_schema(pa.schema(schema))
