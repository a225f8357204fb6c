"""Shared by the tests of the ``arrow-sparse`` command line: an independent oracle of the
statistics ``inspect`` prints, the test data, and runners of the command.

The oracle is built from pyarrow.compute (``list_value_length``, ``list_flatten``,
``min_max``) and a sort-based nearest-rank percentile, never from the histogram code
under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from arrow_sparse import cli
from arrow_sparse._arrow import numpy_dtype

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample_clicks.parquet"
SPEC = REPO / "data" / "example_pipeline.toml"


# =============================================================================== oracle
def nearest_rank(lengths: np.ndarray, percent: int) -> int | None:
    """The smallest L with at least percent% of the values <= L, by sorting."""
    ordered = np.sort(lengths)
    n = len(ordered)
    if n == 0:
        return None
    rank = max(1, -(-percent * n // 100))  # ceil(percent * n / 100), in integers
    return int(ordered[rank - 1])


def min_max(leaves: pa.Array) -> tuple[Any, Any]:
    if not (pa.types.is_integer(leaves.type) or pa.types.is_floating(leaves.type)):
        return None, None
    mm = pc.min_max(leaves)
    return mm["min"].as_py(), mm["max"].as_py()


def leaf_type(t: pa.DataType) -> pa.DataType:
    while isinstance(t, (pa.ListType, pa.LargeListType, pa.FixedSizeListType)):
        t = t.value_type
    return t


def oracle_list(name: str, arr: pa.Array, out: list[dict[str, Any]],
                leaves: pa.Array | None = None) -> None:
    """Expected stats of a list array and its nested levels (pyarrow.compute only)."""
    lengths_with_nulls = pc.list_value_length(arr)
    lengths = lengths_with_nulls.drop_null().to_numpy(zero_copy_only=False).astype(np.int64)
    if leaves is None:
        leaves = pc.list_flatten(arr, recursive=True)
    lo, hi = min_max(leaves)
    out.append({
        "name": name, "rows": len(arr), "null_rows": arr.null_count,
        "empty_rows": int(np.count_nonzero(lengths == 0)), "total_values": int(lengths.sum()),
        "length": {"min": nearest_rank(lengths, 0), "p50": nearest_rank(lengths, 50),
                   "p90": nearest_rank(lengths, 90), "p99": nearest_rank(lengths, 99),
                   "max": nearest_rank(lengths, 100),
                   "mean": float(lengths.mean()) if len(lengths) else None},
        "values": {"min": lo, "max": hi}, "leaf": leaf_type(arr.type),
    })
    inner = arr.type.value_type
    if isinstance(inner, (pa.ListType, pa.LargeListType)):
        oracle_list(f"{name}.values", pc.list_flatten(arr), out, leaves)


def oracle_map(name: str, arr: pa.MapArray, out: list[dict[str, Any]]) -> None:
    """Expected stats of a map array: entries (keys), then the value lists."""
    mask = arr.is_null()
    offsets = pa.array(arr.offsets.to_numpy())  # unsliced: from_arrays wants that with a mask
    keys = pa.ListArray.from_arrays(offsets, arr.keys, mask=mask)
    oracle_list(name, keys, out)
    out[-1]["leaf"] = arr.type.key_type
    entries = pc.list_flatten(pa.ListArray.from_arrays(offsets, arr.values, mask=mask))
    items = entries.field("value")
    if isinstance(items.type, (pa.ListType, pa.LargeListType)):
        oracle_list(f"{name}.values", items, out)


def oracle(table: pa.Table | pa.RecordBatch,
           columns: list[str] | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in columns or table.schema.names:
        col = table.column(name)
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if isinstance(arr.type, pa.MapType):
            oracle_map(name, arr, out)
        elif isinstance(arr.type, (pa.ListType, pa.LargeListType)):
            oracle_list(name, arr, out)
    return out


def same_value(got: Any, want: Any, leaf: pa.DataType) -> bool:
    if want is None or got is None:
        return got is want
    if isinstance(got, str):  # JSON spells non-finite floats as strings
        got = float(got)
    if pa.types.is_floating(leaf):
        dtype = numpy_dtype(leaf)
        return bool(np.asarray(got, dtype=dtype) == np.asarray(want, dtype=dtype))
    return bool(got == want)


def check_against_oracle(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert [g["name"] for g in got] == [w["name"] for w in want]
    for g, w in zip(got, want, strict=True):
        for key in ("rows", "null_rows", "empty_rows", "total_values"):
            assert g[key] == w[key], (g["name"], key)
        for key in ("min", "p50", "p90", "p99", "max"):
            assert g["length"][key] == w["length"][key], (g["name"], key)
        assert g["length"]["mean"] == pytest.approx(w["length"]["mean"])
        for key in ("min", "max"):
            assert same_value(g["values"][key], w["values"][key], w["leaf"]), (g["name"], key)


# ============================================================================ test data
def clicks_table(n: int = 1500, seed: int = 0) -> pa.Table:
    """Null rows, empty rows, null elements, NaN and -inf, nested lists, a map."""
    rng = np.random.default_rng(seed)
    ids: list[Any] = []
    scores: list[Any] = []
    tags: list[Any] = []
    nested: list[Any] = []
    maps: list[Any] = []
    for i in range(n):
        r = 0.5 if i == 7 else rng.random()
        if r < 0.08:
            row = None
        elif r < 0.18:
            row = []
        else:
            k = 400 if i == 7 else int(rng.geometric(0.15))
            row = rng.integers(-50, 1_000_000, size=k).tolist()
            if rng.random() < 0.1:
                row[int(rng.integers(k))] = None
        ids.append(row)
        if row is None:
            scores.append(None)
        else:
            s = np.round(rng.random(len(row)), 2).astype(np.float32).tolist()
            if s and rng.random() < 0.05:
                s[0] = float("nan")
            if s and rng.random() < 0.02:
                s[-1] = None
            scores.append(s)
        tags.append(None if r < 0.05 else [f"t{j}" for j in range(int(rng.integers(0, 4)))])
        if rng.random() < 0.07:
            nested.append(None)
        else:
            nested.append([None if rng.random() < 0.1 else
                           rng.integers(0, 100, size=int(rng.integers(0, 4))).tolist()
                           for _ in range(int(rng.integers(0, 4)))])
        if rng.random() < 0.06:
            maps.append(None)
        else:
            keys = np.sort(rng.choice(np.arange(1, 9), size=int(rng.integers(0, 5)),
                                      replace=False))
            maps.append([(int(k), None if rng.random() < 0.05 else
                          rng.integers(0, 1000, size=int(rng.integers(0, 5))).tolist())
                         for k in keys])
    scores[3] = [float("-inf"), 0.5]
    ids[3] = [1, 2]
    return pa.table({
        "user_id": pa.array(np.arange(n, dtype=np.int64)),
        "ids": pa.array(ids, pa.list_(pa.int64())),
        "scores": pa.array(scores, pa.large_list(pa.float32())),
        "tags": pa.array(tags, pa.list_(pa.string())),
        "nested": pa.array(nested, pa.list_(pa.list_(pa.int32()))),
        "cats": pa.array(maps, pa.map_(pa.int32(), pa.list_(pa.int64()))),
        "label": pa.array(rng.integers(0, 2, size=n).astype(np.int8)),
    })


# ================================================================== running the command
def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = cli.main(["inspect", *args, "--json", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.err == ""
    return json.loads(captured.out)  # type: ignore[no-any-return]


def run_error(capsys: pytest.CaptureFixture[str], argv: list[str], code: int) -> str:
    assert cli.main(argv) == code
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("arrow-sparse: error: ")
    return lines[0]
