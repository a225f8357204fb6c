"""Functions given a Polars or pandas Series give back the same kind of Series.

Each result is compared with the same function on the Series' Arrow array and with a
plain-Python / numpy oracle. Names are kept; a pandas result with one row per input
row keeps the index, a result with one row per segment (or per distinct value) gets a
``RangeIndex``.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse import _arrow

pl = pytest.importorskip("polars")
pd = pytest.importorskip("pandas")

ROWS = [[1, 2, 3], [2, 4, 6, 7], None, [3, None], []]
INDEX = list("vwxyz")
TABLE = np.arange(16.0).reshape(8, 2)
VALUES = [1.5, None, 3.0, -2.0, 4.0, 0.5]
SEGMENT_IDS = [2, 0, 2, 3, 0, 2]
INDICES = [1, 2, 7, 2, 4, 6]

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


def listed(x: Any) -> list[Any]:
    """A Series or Arrow array as Python lists (nulls as None)."""
    return _arrow.as_arrow(x).to_pylist()  # type: ignore[no-any-return]


def pandas_series(values: list[Any], t: pa.DataType, index: list[Any] | None = None) -> Any:
    return pd.Series(values, dtype=pd.ArrowDtype(t), index=index, name="ids")


def polars_series(values: list[Any], t: pa.DataType) -> Any:
    return pl.Series("ids", pa.array(values, t))


def check_kind(got: Any, given: Any, *, per_row: bool) -> None:
    """``got`` is ``given``'s kind of Series, same name; pandas: index kept when per row."""
    assert isinstance(got, type(given))
    assert got.name == "ids"
    if isinstance(given, pd.Series):
        want = list(given.index) if per_row else list(range(len(got)))
        assert list(got.index) == want


def close(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


# ------------------------------------------------------------ list in, list or row out
@pytest.mark.parametrize("op", sorted(OPS))
def test_polars_series_in_polars_series_out(op: str) -> None:
    s = pl.Series("ids", ROWS)
    got = OPS[op](s)
    assert isinstance(got, pl.Series)
    assert got.name == "ids"
    assert got.to_list() == listed(OPS[op](s.to_arrow()))


@pytest.mark.parametrize("op", sorted(OPS))
def test_pandas_series_in_pandas_series_out(op: str) -> None:
    s = pandas_series(ROWS, pa.list_(pa.int64()), INDEX)
    got = OPS[op](s)
    check_kind(got, s, per_row=True)
    assert listed(got) == listed(OPS[op](pa.array(ROWS, pa.list_(pa.int64()))))


# ------------------------------------------------------------ unsorted reductions
def unsorted_oracle(op: str, values: list[Any], ids: list[int], n: int) -> list[Any]:
    groups: list[list[float]] = [[] for _ in range(n)]
    for value, i in zip(values, ids, strict=True):
        if value is not None:
            groups[i].append(value)
    if op == "sum":
        return [sum(g) for g in groups]
    reduce = {"mean": lambda g: sum(g) / len(g), "max": max, "min": min}[op]
    return [reduce(g) if g else None for g in groups]


@pytest.mark.parametrize("make", [pandas_series, polars_series], ids=["pandas", "polars"])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_unsorted_segment_reductions(make: Callable[..., Any], op: str) -> None:
    func = getattr(asp, f"unsorted_segment_{op}")
    s = make(VALUES, pa.float64())
    got = func(s, SEGMENT_IDS, num_segments=5)
    check_kind(got, s, per_row=False)
    assert listed(got) == listed(func(pa.array(VALUES, pa.float64()), SEGMENT_IDS,
                                      num_segments=5))
    assert close(listed(got), unsorted_oracle(op, VALUES, SEGMENT_IDS, 5))


@pytest.mark.parametrize("make", [pandas_series, polars_series], ids=["pandas", "polars"])
def test_unsorted_weighted_sum_with_as_many_segments_as_values(
        make: Callable[..., Any]) -> None:
    # six values into six segments: a pandas result still gets a RangeIndex, not the
    # values' index, since its rows are segments
    s = make(VALUES, pa.float64(), list("abcdef")) if make is pandas_series \
        else make(VALUES, pa.float64())
    got = asp.unsorted_segment_weighted_sum(s, [2.0] * 6, SEGMENT_IDS, num_segments=6)
    check_kind(got, s, per_row=False)
    want = [2 * x for x in unsorted_oracle("sum", VALUES, SEGMENT_IDS, 6)]
    assert close(listed(got), want)


# ------------------------------------------------------------ fused reductions
def bag_oracle(mode: str, rows: list[Any], weights: list[Any] | None = None) -> list[Any]:
    out: list[Any] = []
    for r, row in enumerate(rows):
        if row is None:
            out.append(None)
            continue
        ids = [i for i in row if i is not None]
        w = [1.0] * len(ids) if weights is None else [x for x in weights[r] if x is not None]
        picked = [TABLE[i] * wi for i, wi in zip(ids, w, strict=True)]
        if not picked:
            out.append([0.0, 0.0] if mode == "sum" else None)
        elif mode == "sum":
            out.append(np.sum(picked, axis=0).tolist())
        elif mode == "mean":
            out.append(np.mean(picked, axis=0).tolist())
        else:
            out.append(np.max(picked, axis=0).tolist())
    return out


@pytest.mark.parametrize("make", [pandas_series, polars_series], ids=["pandas", "polars"])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_sparse_segment_reductions_of_list_indices(make: Callable[..., Any], mode: str) -> None:
    func = getattr(asp, f"sparse_segment_{mode}")
    t = pa.list_(pa.int64())
    s = make(ROWS, t, INDEX) if make is pandas_series else make(ROWS, t)
    got = func(TABLE, s)
    check_kind(got, s, per_row=True)
    assert listed(got) == listed(func(TABLE, pa.array(ROWS, t)))
    assert close(listed(got), bag_oracle(mode, ROWS))


@pytest.mark.parametrize("make", [pandas_series, polars_series], ids=["pandas", "polars"])
def test_sparse_segment_weighted_sum_of_list_indices(make: Callable[..., Any]) -> None:
    rows = [[1, 2], None, [7, 0, 3]]
    weights = [[0.5, 2.0], None, [1.0, -1.0, 3.0]]
    t = pa.list_(pa.int64())
    s = make(rows, t, ["a", "b", "c"]) if make is pandas_series else make(rows, t)
    got = asp.sparse_segment_weighted_sum(TABLE, s, weights=pa.array(weights))
    check_kind(got, s, per_row=True)
    assert close(listed(got), bag_oracle("sum", rows, weights))


@pytest.mark.parametrize("make", [pandas_series, polars_series], ids=["pandas", "polars"])
def test_sparse_segment_sum_of_flat_indices_has_one_row_per_segment(
        make: Callable[..., Any]) -> None:
    # six indices in six segments of one: the rows are segments, so no index is kept
    s = make(INDICES, pa.int64(), list("abcdef")) if make is pandas_series \
        else make(INDICES, pa.int64())
    got = asp.sparse_segment_sum(TABLE, s, lengths=[1] * 6)
    check_kind(got, s, per_row=False)
    assert close(listed(got), TABLE[INDICES].tolist())


@pytest.mark.parametrize("make", [pandas_series, polars_series], ids=["pandas", "polars"])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "weighted_sum"])
def test_sparse_unsorted_segment_reductions(make: Callable[..., Any], op: str) -> None:
    func = getattr(asp, f"sparse_unsorted_segment_{op}")
    s = make(INDICES, pa.int64())
    kwargs: dict[str, Any] = {"num_segments": 5}
    weights = [1.0, 2.0, 0.5, -1.0, 3.0, 1.0]
    if op == "weighted_sum":
        kwargs["weights"] = weights
    got = func(TABLE, s, SEGMENT_IDS, **kwargs)
    check_kind(got, s, per_row=False)
    assert listed(got) == listed(func(TABLE, pa.array(INDICES), SEGMENT_IDS, **kwargs))
    groups: list[list[Any]] = [[] for _ in range(5)]
    for k, (i, seg) in enumerate(zip(INDICES, SEGMENT_IDS, strict=True)):
        groups[seg].append(TABLE[i] * (weights[k] if op == "weighted_sum" else 1.0))
    reduce = {"sum": np.sum, "weighted_sum": np.sum, "mean": np.mean, "max": np.max}[op]
    want = [reduce(g, axis=0).tolist() if g else ([0.0, 0.0] if "sum" in op else None)
            for g in groups]
    assert close(listed(got), want)


# ------------------------------------------------------------ embeddings
@pytest.mark.parametrize("make", [pandas_series, polars_series], ids=["pandas", "polars"])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_and_lookup_of_list_ids(make: Callable[..., Any], mode: str) -> None:
    t = pa.list_(pa.int64())
    s = make(ROWS, t, INDEX) if make is pandas_series else make(ROWS, t)
    got = asp.embedding_bag(TABLE, s, mode=mode)
    check_kind(got, s, per_row=True)
    assert listed(got) == listed(asp.embedding_bag(TABLE, pa.array(ROWS, t), mode=mode))
    assert close(listed(got), bag_oracle(mode, ROWS))
    pooled = asp.embedding.lookup(TABLE, s, mode=mode)
    check_kind(pooled, s, per_row=True)
    arrow_pooled = asp.embedding.lookup(TABLE, pa.array(ROWS, t), mode=mode)
    assert listed(pooled) == listed(arrow_pooled)
    want = bag_oracle(mode, ROWS)
    assert close([p for p, w in zip(listed(pooled), want, strict=True) if w is not None],
                 [w for w in want if w is not None])


@pytest.mark.parametrize("make", [pandas_series, polars_series], ids=["pandas", "polars"])
def test_embedding_bag_of_flat_ids_has_one_row_per_bag(make: Callable[..., Any]) -> None:
    s = make(INDICES, pa.int64())
    got = asp.embedding_bag(TABLE, s, offsets=[0, 2, 6])
    check_kind(got, s, per_row=False)
    assert close(listed(got), [TABLE[[1, 2]].sum(axis=0).tolist(),
                               TABLE[[7, 2, 4, 6]].sum(axis=0).tolist()])
    rows = asp.embedding.lookup(TABLE, s)  # one row per id, as for Arrow ids: numpy
    assert isinstance(rows, np.ndarray) and np.array_equal(rows, TABLE[INDICES])


# ------------------------------------------------------------ vocabularies and stats
@pytest.mark.parametrize("make", [pandas_series, polars_series], ids=["pandas", "polars"])
def test_categorify_value_counts_fit_vocabulary_and_length_stats(
        make: Callable[..., Any]) -> None:
    rows = [["b", "a", "b"], None, ["c", None], [], ["b", "zz"]]
    t = pa.list_(pa.string())
    s = make(rows, t, INDEX) if make is pandas_series else make(rows, t)
    arrow = pa.array(rows, t)
    vocab = asp.fit_vocabulary(s)
    assert vocab == asp.fit_vocabulary(arrow)
    ids = dict(zip(vocab.values.to_pylist(), vocab.ids.tolist(), strict=True))
    got = asp.categorify(s, vocab)
    check_kind(got, s, per_row=True)
    assert listed(got) == [None if r is None else [ids.get(x, 1) if x is not None else 1
                                                  for x in r] for r in rows]
    counts = asp.value_counts(s)
    check_kind(counts, s, per_row=False)
    assert listed(counts) == listed(asp.value_counts(arrow))
    oracle = Counter(x for r in rows if r is not None for x in r if x is not None)
    assert {d["values"]: d["counts"] for d in listed(counts)} == dict(oracle)
    stats = asp.length_stats(s)  # a summary, not one row per row: the same object
    assert stats == asp.length_stats(arrow)
    lengths = sorted(len(r) for r in rows if r is not None)
    assert (stats.rows, stats.null_rows, stats.empty_rows, stats.null_values) == (5, 1, 1, 1)
    assert (stats.min, stats.max, stats.total_values) == (lengths[0], lengths[-1], sum(lengths))


# ------------------------------------------------------------ row-wise list functions
def cumsum(row: list[Any]) -> list[Any]:
    out, total = [], 0
    for x in row:
        total += 0 if x is None else x
        out.append(None if x is None else total)
    return out


def per_row(fn: Callable[[list[Any]], Any]) -> Callable[[list[Any]], list[Any]]:
    return lambda rows: [None if r is None else fn(r) for r in rows]


#: function, the rows a plain-Python reading gives, whether the result keeps the rows
ROW_FUNCTIONS: dict[str, tuple[Callable[[Any], Any], Callable[[list[Any]], list[Any]], bool]] = {
    "list_slice": (lambda x: asp.list_slice(x, 1, 3), per_row(lambda r: r[1:3]), True),
    "truncate": (lambda x: asp.truncate(x, 2), per_row(lambda r: r[:2]), True),
    "jagged_unique": (asp.jagged_unique,
                      per_row(lambda r: sorted({v for v in r if v is not None})), True),
    "segment_cumsum": (asp.segment_cumsum, per_row(cumsum), True),
    "map_values": (lambda x: asp.map_values(x, np.negative),
                   per_row(lambda r: [None if v is None else -v for v in r]), True),
    "repeat": (lambda x: asp.repeat(np.arange(5) * 10, x),
               lambda rows: [None if r is None else [10 * i] * len(r)
                             for i, r in enumerate(rows)], True),
    "index_select": (lambda x: asp.index_select(x, [3, 0]), lambda rows: [rows[3], rows[0]],
                     False),
}


@pytest.mark.parametrize("make", [pandas_series, polars_series], ids=["pandas", "polars"])
@pytest.mark.parametrize("name", sorted(ROW_FUNCTIONS))
def test_row_functions(make: Callable[..., Any], name: str) -> None:
    call, oracle, keeps_rows = ROW_FUNCTIONS[name]
    t = pa.list_(pa.int64())
    s = make(ROWS, t, INDEX) if make is pandas_series else make(ROWS, t)
    got = call(s)
    check_kind(got, s, per_row=keeps_rows)
    assert listed(got) == listed(call(pa.array(ROWS, t)))
    assert listed(got) == oracle(ROWS)


@pytest.mark.parametrize("make", [pandas_series, polars_series], ids=["pandas", "polars"])
def test_softmax_and_padded_dense(make: Callable[..., Any]) -> None:
    rows = [[0.0, 0.0], None, [], [1.0, 2.0]]
    t = pa.list_(pa.float64())
    s = make(rows, t, list("abcd")) if make is pandas_series else make(rows, t)
    got = asp.segment_softmax(s)
    check_kind(got, s, per_row=True)
    e = np.exp([1.0, 2.0])
    assert close(listed(got), [[0.5, 0.5], None, [], (e / e.sum()).tolist()])
    dense = asp.jagged_to_padded_dense(s, max_lengths=[3])  # numpy, as for Arrow
    assert isinstance(dense, np.ndarray)
    assert dense.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0],
                              [1.0, 2.0, 0.0]]


@pytest.mark.parametrize("make", [pandas_series, polars_series], ids=["pandas", "polars"])
def test_jagged_dense_arithmetic(make: Callable[..., Any]) -> None:
    rows = [[1.0, 2.0], None, [], [3.0, 4.0, 5.0]]
    t = pa.list_(pa.float64())
    s = make(rows, t, list("abcd")) if make is pandas_series else make(rows, t)
    dense = np.arange(12.0).reshape(4, 3) * 10  # row b, position i: 30 * b + 10 * i
    padded = [[0.0 if r is None or i >= len(r) else r[i] for i in range(3)] for r in rows]
    # dense output: numpy, as for an Arrow array
    got = asp.jagged_dense_elementwise_add(s, None, dense)
    assert isinstance(got, np.ndarray)
    assert got.tolist() == (dense + np.array(padded)).tolist()
    # jagged output: the input's kind of Series, one row per row (null rows stay null)
    jagged_sum = [None if r is None else [v + 30 * b + 10 * i for i, v in enumerate(r)]
                  for b, r in enumerate(rows)]
    jagged_product = [None if r is None else [v * (30 * b + 10 * i) for i, v in enumerate(r)]
                      for b, r in enumerate(rows)]
    for call, want in [
        (lambda x: asp.jagged_dense_elementwise_add(x, None, dense, output="jagged"),
         jagged_sum),
        (lambda x: asp.jagged_dense_elementwise_add_jagged_output(x, None, dense), jagged_sum),
        (lambda x: asp.jagged_dense_elementwise_mul(x, None, dense), jagged_product),
    ]:
        out = call(s)
        check_kind(out, s, per_row=True)
        assert listed(out) == listed(call(pa.array(rows, t)))
        assert listed(out) == want


@pytest.mark.parametrize("make", [pandas_series, polars_series], ids=["pandas", "polars"])
def test_jagged_bmm(make: Callable[..., Any]) -> None:
    rows = [[[1.0, 0.0], [0.0, 2.0]], [[1.0, 1.0]]]  # [L_b, K=2] per row
    t = pa.list_(pa.list_(pa.float64(), 2))
    s = make(rows, t, ["u", "v"]) if make is pandas_series else make(rows, t)
    dense = np.arange(12.0).reshape(2, 2, 3)  # [B, K, N=3]
    out = asp.jagged_dense_bmm(s, None, dense)
    check_kind(out, s, per_row=True)
    assert listed(out) == [(np.array(r) @ dense[b]).tolist() for b, r in enumerate(rows)]
    # x_b^T @ y_b: a dense [B, K, K] array, whichever kind each operand is
    gram = asp.jagged_jagged_bmm(s, pa.array(rows, t))
    assert isinstance(gram, np.ndarray)
    assert gram.tolist() == [(np.array(r).T @ np.array(r)).tolist() for r in rows]
    assert asp.jagged_jagged_bmm(pa.array(rows, t), s).tolist() == gram.tolist()


def test_arrow_and_numpy_inputs_unchanged() -> None:
    assert isinstance(asp.hash_bucket(pa.array(ROWS), 10), pa.Array)
    assert isinstance(asp.segment_sum(pa.chunked_array([ROWS])), pa.ChunkedArray)
    assert isinstance(asp.unsorted_segment_sum(np.arange(3.0), [0, 1, 0]), np.ndarray)
    assert isinstance(asp.embedding_bag(TABLE, pa.array([[1], [2, 3]])), pa.Array)
    assert isinstance(asp.value_counts(pa.array([[1, 1]])), pa.StructArray)


def test_polars_not_imported() -> None:
    # (pandas may be loaded by pyarrow itself when it builds arrays from lists)
    code = ("import sys, numpy as np, pyarrow as pa, arrow_sparse as asp; "
            "asp.hash_bucket(pa.array([[1]]), 3); asp.segment_sum(pa.array([[1]])); "
            "asp.drop_nulls(pa.array([[1]])); asp.unsorted_segment_sum(pa.array([1.0]), [0]); "
            "asp.embedding_bag(np.ones((2, 2)), pa.array([[1]])); "
            "assert 'polars' not in sys.modules")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
