"""Hypothesis property tests of ``arrow_sparse.segment`` against the plain-Python oracles.

Every public segment function is checked here on generated inputs against
``tests/_reference_segment.py``: sliced Arrow arrays (``offsets[0] > 0``), ``list`` and
``large_list``, ChunkedArrays (chunk by chunk, and combined for flat inputs),
``fixed_size_list`` values and tables, null rows and null values, raw numpy with
offsets, lengths or segment ids, every numeric dtype. The ``ci`` profile runs 40
examples per test; ``HYPOTHESIS_PROFILE=thorough`` runs 2000.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse._arrow import numpy_dtype

from . import _reference_segment as ref
from ._strategies import list_arrays, numeric_dtypes, scalars
from .test_segment import (
    EMPTY,
    SORTED,
    SPARSE,
    UNSORTED,
    assert_arrow,
    assert_close,
    expected_array,
    out_dtype,
)

pytestmark = pytest.mark.hypothesis

FLOATS32 = st.floats(-100, 100, width=32, allow_nan=False, allow_infinity=False)


# ================================================================= strategies
@st.composite
def vector_list_arrays(draw: st.DrawFn) -> tuple[pa.Array, list[Any], int]:
    """A list of fixed_size_list<float64>[D] array (maybe sliced), rows, and D."""
    width = draw(st.integers(1, 3))
    vec = st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=width, max_size=width)
    row = st.one_of(st.none(), st.lists(st.one_of(st.none(), vec), max_size=5))
    rows = draw(st.lists(row, max_size=8))
    large = draw(st.booleans())
    inner = pa.list_(pa.float64(), width)
    t = pa.large_list(inner) if large else pa.list_(inner)
    before = draw(st.lists(row, max_size=2))
    arr = pa.array(before + rows, type=t).slice(len(before))
    return arr, rows, width


@st.composite
def cuts(draw: st.DrawFn, length: int) -> list[int]:
    """Chunk boundaries for an array of ``length`` (empty chunks likely)."""
    return sorted({0, length, *draw(st.lists(st.integers(0, length), max_size=3))})


def chunked(arr: pa.Array, bounds: list[int]) -> pa.ChunkedArray:
    """``arr`` cut at ``bounds`` (consecutive equal bounds make empty chunks)."""
    pieces = [arr.slice(a, b - a) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return pa.chunked_array(pieces, type=arr.type)


@st.composite
def tables(draw: st.DrawFn, dtype: Any = np.float64,
           widths: tuple[int, ...] = (1, 2, 3)) -> tuple[np.ndarray, list[Any]]:
    """An embedding table ``[V, D]`` (V >= 1) of exactly representable floats, as rows."""
    num = draw(st.integers(1, 6))
    width = draw(st.sampled_from(widths))
    cells = draw(st.lists(FLOATS32, min_size=num * width, max_size=num * width))
    table = np.array(cells, dtype=dtype).reshape(num, width)
    return table, table.astype(np.float64).tolist()


def fsl_table(table: np.ndarray) -> pa.FixedSizeListArray:
    """``table`` as an Arrow ``fixed_size_list`` array (one list per row)."""
    return pa.FixedSizeListArray.from_arrays(pa.array(table.ravel()), table.shape[1])


@st.composite
def id_lists(draw: st.DrawFn, num: int, null_ids: bool = True) -> tuple[pa.Array, list[Any]]:
    """A (maybe sliced) list / large_list array of ids in ``[0, num)``, and its rows."""
    idx: st.SearchStrategy[Any] = st.integers(0, num - 1)
    if null_ids:
        idx = st.one_of(st.none(), idx)
    rows = draw(st.lists(st.one_of(st.none(), st.lists(idx, max_size=5)), max_size=8))
    large = draw(st.booleans())
    t = pa.large_list(pa.int64()) if large else pa.list_(pa.int32())
    return pa.array([[0]] + rows, type=t).slice(1), rows


def weight_rows(draw: st.DrawFn, rows: list[Any]) -> list[Any]:
    """A list of float32-exact weights per row of ``rows`` (null rows stay null)."""
    return [None if r is None else [draw(FLOATS32) for _ in r] for r in rows]


def results(got: Any) -> list[Any]:
    """An Arrow result (Array or ChunkedArray) as Python rows."""
    return (got.combine_chunks() if isinstance(got, pa.ChunkedArray) else got).to_pylist()


def assert_rows(got: Any, expected: list[Any], rtol: float) -> None:
    """Python rows against oracle rows: same nulls, values within ``rtol``."""
    assert [g is None for g in got] == [e is None for e in expected]
    for g, e in zip(got, expected, strict=True):
        if e is not None:
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(e, np.float64),
                                       rtol=rtol, atol=rtol)


# ============================================================= sorted reductions
@pytest.mark.parametrize("op", list(SORTED))
@given(data=st.data())
def test_sorted_arrow_property(op: str, data: st.DataObject) -> None:
    arr, rows = data.draw(list_arrays(null_values=True))
    dtype = numpy_dtype(arr.type.value_type)
    expected = ref.segment_reduce(rows, op)
    assert_arrow(SORTED[op](arr), expected, out_dtype(op, dtype))
    got = SORTED[op](chunked(arr, data.draw(cuts(len(arr)))))
    assert isinstance(got, pa.ChunkedArray)
    assert_arrow(got.combine_chunks(), expected, out_dtype(op, dtype))


@pytest.mark.parametrize("op", list(SORTED))
@given(data=st.data())
def test_sorted_vectors_property(op: str, data: st.DataObject) -> None:
    arr, rows, width = data.draw(vector_list_arrays())
    expected = ref.segment_reduce(rows, op)
    assert_arrow(SORTED[op](arr), expected, out_dtype(op, np.float64), (width,))


@pytest.mark.parametrize("op", list(SORTED))
@given(data=st.data())
def test_sorted_numpy_property(op: str, data: st.DataObject) -> None:
    dtype = data.draw(numeric_dtypes())
    rows = data.draw(st.lists(st.lists(scalars(dtype), max_size=6), max_size=10))
    before = data.draw(st.lists(scalars(dtype), max_size=3))
    after = data.draw(st.lists(scalars(dtype), max_size=3))
    flat = np.array(before + [x for r in rows for x in r] + after, dtype=dtype)
    lens = [len(r) for r in rows]
    offsets = np.concatenate([[len(before)], len(before) + np.cumsum(lens, dtype=np.int64)])
    offsets = offsets.astype(data.draw(st.sampled_from([np.int32, np.int64])))
    extra = data.draw(st.integers(0, 2))
    expected = expected_array(ref.segment_reduce(rows + [[]] * extra, op), EMPTY[op])
    got = SORTED[op](flat, offsets=offsets, num_segments=len(rows) + extra)
    assert got.dtype == out_dtype(op, dtype)
    assert_close(got, expected, out_dtype(op, dtype))
    inner = flat[len(before):len(flat) - len(after)]
    ids = np.repeat(np.arange(len(rows)), lens)
    assert_close(SORTED[op](inner, segment_ids=ids, num_segments=len(rows) + extra), expected,
                 out_dtype(op, dtype))
    j = asp.Jagged(flat, offsets)
    assert_close(SORTED[op](j, num_segments=len(rows) + extra), expected, out_dtype(op, dtype))


#: Values whose max/min bring out the sign of zero (and NaN), as in IEEE maximum/minimum.
SIGNED = st.sampled_from([-0.0, 0.0, -0.0, 0.0, -1.5, 2.0, float("nan")])


def bits_equal(got: np.ndarray, expected: list[Any], dtype: np.dtype) -> None:
    """Each result is NaN where the oracle's is, else the same value with the same sign."""
    want = np.array(expected, dtype=dtype)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(want[~nan]))


@pytest.mark.parametrize("op", ["max", "min"])
@given(data=st.data())
def test_max_min_signed_zeros_property(op: str, data: st.DataObject) -> None:
    # max(-0.0, 0.0) = 0.0 and min(-0.0, 0.0) = -0.0 whatever the order, on every path:
    # 1-D rows (vector lanes), 2-D rows, unsorted (parallel parts) and fused.
    dtype = np.dtype(data.draw(st.sampled_from([np.float32, np.float64])))
    rows = data.draw(st.lists(st.lists(SIGNED, min_size=1, max_size=40), min_size=1,
                              max_size=8))
    flat = np.array([x for r in rows for x in r], dtype=dtype)
    lens = [len(r) for r in rows]
    expected = ref.segment_reduce([[float(dtype.type(x)) for x in r] for r in rows], op)
    bits_equal(SORTED[op](flat, lengths=lens), expected, dtype)
    bits_equal(SORTED[op](np.stack([flat, flat], axis=1), lengths=lens)[:, 0], expected, dtype)
    ids = np.repeat(np.arange(len(rows)), lens)
    perm = np.array(data.draw(st.permutations(range(len(flat)))), dtype=np.int64)
    bits_equal(UNSORTED[op](flat[perm], ids[perm], len(rows)), expected, dtype)
    if op == "max":
        got = asp.sparse_segment_max(flat[:, None], perm, lengths=lens)[:, 0]
        gathered = [[float(dtype.type(x)) for x in flat[perm][a:b]]
                    for a, b in zip(np.cumsum([0, *lens[:-1]]), np.cumsum(lens), strict=True)]
        bits_equal(got, ref.segment_reduce(gathered, "max"), dtype)


@given(data=st.data())
def test_weighted_sum_arrow_property(data: st.DataObject) -> None:
    arr, rows = data.draw(list_arrays(dtype=np.dtype(np.float32), null_values=True))
    wrows = [None if r is None or data.draw(st.booleans()) else
             [data.draw(st.floats(-10, 10, width=32)) for _ in r] for r in rows]
    weights = pa.array(wrows, type=pa.list_(pa.float32()))
    expected = ref.segment_reduce(rows, "weighted_sum", weights=wrows)
    assert_arrow(asp.segment_weighted_sum(arr, weights), expected, np.dtype(np.float32))
    bounds = data.draw(cuts(len(arr)))
    got = asp.segment_weighted_sum(chunked(arr, bounds), chunked(weights, bounds))
    assert isinstance(got, pa.ChunkedArray)
    assert_arrow(got.combine_chunks(), expected, np.dtype(np.float32))
    extra = data.draw(st.integers(1, 2))
    assert_arrow(asp.segment_weighted_sum(arr, weights, num_segments=len(rows) + extra),
                 expected + [0.0] * extra, np.dtype(np.float32))


@given(data=st.data())
def test_weighted_sum_numpy_property(data: st.DataObject) -> None:
    dtype = data.draw(numeric_dtypes())
    wdtype = np.dtype(data.draw(st.sampled_from([np.float32, np.float64, np.int8, np.int64])))
    width = data.draw(st.sampled_from([None, 1, 3]))
    rows = data.draw(st.lists(st.lists(scalars(dtype), max_size=5), max_size=6))
    before = data.draw(st.lists(scalars(dtype), max_size=3))
    after = data.draw(st.lists(scalars(dtype), max_size=3))
    flat = before + [x for r in rows for x in r] + after
    w = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=len(flat),
                                    max_size=len(flat))), dtype=wdtype)
    values = np.array(flat, dtype=dtype)
    if width is not None:  # vectors: column d is the value times (d + 1)
        values = values[:, None] * np.arange(1, width + 1, dtype=dtype)
    lens = [len(r) for r in rows]
    offsets = np.concatenate([[len(before)], len(before) + np.cumsum(lens, dtype=np.int64)])
    extra = data.draw(st.integers(0, 2))
    vrows = ref.rows_from_offsets(values.tolist(), offsets.tolist()) + [[]] * extra
    wrows = ref.rows_from_offsets(w.tolist(), offsets.tolist()) + [[]] * extra
    inner = () if width is None else (width,)
    expected = expected_array(ref.segment_reduce(vrows, "weighted_sum", weights=wrows), 0,
                              inner)
    dt = out_dtype("weighted_sum", dtype, wdtype)
    got = asp.segment_weighted_sum(values, w, offsets=offsets, num_segments=len(rows) + extra)
    assert got.dtype == dt and got.shape == (len(rows) + extra,) + inner
    assert_close(got, expected, dt)
    lo, hi = len(before), len(flat) - len(after)
    got = asp.segment_weighted_sum(values[lo:hi], w[lo:hi], lengths=lens + [0] * extra)
    assert_close(got, expected, dt)


# =========================================================== unsorted reductions
@pytest.mark.parametrize("op", list(UNSORTED))
@given(data=st.data())
def test_unsorted_property(op: str, data: st.DataObject) -> None:
    dtype = data.draw(numeric_dtypes())
    num_segments = data.draw(st.integers(1, 6))
    items = data.draw(st.lists(st.tuples(st.one_of(st.none(), scalars(dtype)),
                                         st.integers(0, num_segments - 1)), max_size=20))
    values = pa.array([x for x, _ in items], type=pa.from_numpy_dtype(dtype))
    ids = [s for _, s in items]
    rows = ref.rows_from_segment_ids([x for x, _ in items], ids, num_segments)
    expected = ref.segment_reduce(rows, op)
    assert_arrow(UNSORTED[op](values, ids, num_segments), expected, out_dtype(op, dtype))
    got = UNSORTED[op](chunked(values, data.draw(cuts(len(values)))), ids, num_segments)
    assert isinstance(got, pa.ChunkedArray) and got.num_chunks == 1
    assert_arrow(got.chunk(0), expected, out_dtype(op, dtype))


@pytest.mark.parametrize("op", list(UNSORTED))
@given(data=st.data())
def test_unsorted_vectors_property(op: str, data: st.DataObject) -> None:
    # fixed_size_list values, sliced, with null vectors, as an Array and chunked
    width = data.draw(st.integers(1, 3))
    num_segments = data.draw(st.integers(1, 4))
    vec = st.lists(st.floats(-100, 100), min_size=width, max_size=width)
    items = data.draw(st.lists(st.one_of(st.none(), vec), max_size=12))
    ids = data.draw(st.lists(st.integers(0, num_segments - 1), min_size=len(items),
                             max_size=len(items)))
    arr = pa.array([[0.0] * width] + items, type=pa.list_(pa.float64(), width)).slice(1)
    expected = ref.segment_reduce(ref.rows_from_segment_ids(items, ids, num_segments), op)
    assert_arrow(UNSORTED[op](arr, ids, num_segments), expected, np.dtype(np.float64), (width,))
    got = UNSORTED[op](chunked(arr, data.draw(cuts(len(arr)))), ids, num_segments)
    assert_rows(results(got), expected, 1e-12)


@given(data=st.data())
def test_unsorted_weighted_sum_property(data: st.DataObject) -> None:
    dtype = data.draw(numeric_dtypes())
    width = data.draw(st.sampled_from([None, 2]))
    num_segments = data.draw(st.integers(1, 5))
    n = data.draw(st.integers(0, 15))
    flat = data.draw(st.lists(scalars(dtype), min_size=n, max_size=n))
    w = np.array(data.draw(st.lists(FLOATS32, min_size=n, max_size=n)), dtype=np.float32)
    ids = data.draw(st.lists(st.integers(0, num_segments - 1), min_size=n, max_size=n))
    values = np.array(flat, dtype=dtype)
    if width is not None:
        values = np.stack([values, values], axis=1)
    inner = () if width is None else (width,)
    rows = ref.rows_from_segment_ids(values.tolist(), ids, num_segments)
    wrows = ref.rows_from_segment_ids(w.astype(np.float64).tolist(), ids, num_segments)
    expected = ref.segment_reduce(rows, "weighted_sum", weights=wrows)
    dt = out_dtype("weighted_sum", dtype, np.float32)
    got = asp.unsorted_segment_weighted_sum(values, w, np.array(ids, np.int64), num_segments)
    assert got.dtype == dt and got.shape == (num_segments,) + inner
    assert_close(got, expected_array(expected, 0, inner), dt)
    if width is None:  # Arrow values with nulls, chunked; weights as Arrow
        mask = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
        arr = pa.array([None if m else x for x, m in zip(flat, mask, strict=True)],
                       type=pa.from_numpy_dtype(dtype))
        nrows = ref.rows_from_segment_ids(arr.to_pylist(), ids, num_segments)
        expected = ref.segment_reduce(nrows, "weighted_sum", weights=wrows)
        got = asp.unsorted_segment_weighted_sum(chunked(arr, data.draw(cuts(n))),
                                                pa.array(w), ids, num_segments)
        assert isinstance(got, pa.ChunkedArray)
        assert_arrow(got.chunk(0), expected, dt)


# ========================================================= fused gather + reduce
@pytest.mark.parametrize("op", list(SPARSE))
@given(data=st.data())
def test_sparse_property(op: str, data: st.DataObject) -> None:
    table, table_rows = data.draw(tables())
    arr, id_rows = data.draw(id_lists(len(table)))
    expected = ref.segment_reduce(ref.sparse_rows(table_rows, id_rows), op)
    width = table.shape[1]
    dt = out_dtype(op, np.float64)
    assert_arrow(SPARSE[op](table, arr), expected, dt, (width,))
    got = SPARSE[op](fsl_table(table), chunked(arr, data.draw(cuts(len(arr)))))
    assert isinstance(got, pa.ChunkedArray)
    assert_arrow(got.combine_chunks(), expected, dt, (width,))


@pytest.mark.parametrize("op", list(SPARSE))
@given(data=st.data())
def test_sparse_raw_ids_property(op: str, data: st.DataObject) -> None:
    dtype = np.dtype(data.draw(st.sampled_from([np.float32, np.float64, np.int32])))
    table, table_rows = data.draw(tables(dtype, widths=(1, 3, 16)))
    num = len(table)
    id_rows = data.draw(st.lists(st.lists(st.integers(0, num - 1), max_size=6), max_size=6))
    before = data.draw(st.lists(st.integers(0, num - 1), max_size=2))
    ids = np.array(before + [i for r in id_rows for i in r],
                   dtype=data.draw(st.sampled_from([np.int32, np.int64, np.uint16])))
    lens = [len(r) for r in id_rows]
    offsets = np.concatenate([[len(before)], len(before) + np.cumsum(lens, dtype=np.int64)])
    extra = data.draw(st.integers(0, 2))
    expected = ref.segment_reduce(ref.sparse_rows(table_rows, id_rows) + [[]] * extra, op)
    dt = out_dtype(op, dtype)
    got = SPARSE[op](table, ids, offsets=offsets, num_segments=len(id_rows) + extra)
    assert got.dtype == dt
    assert_close(got, expected_array(expected, 0, (table.shape[1],)), dt)
    seg = np.repeat(np.arange(len(id_rows)), lens)
    got = SPARSE[op](table, ids[len(before):], segment_ids=seg,
                     num_segments=len(id_rows) + extra)
    assert_close(got, expected_array(expected, 0, (table.shape[1],)), dt)


@pytest.mark.parametrize("op", list(SPARSE))
@given(data=st.data())
def test_sparse_weighted_property(op: str, data: st.DataObject) -> None:
    # sparse_segment_weighted_sum and the weights= of sparse mean / max: list ids (sliced,
    # null rows and null ids), list weights, numpy or fixed_size_list table, chunked ids
    table, table_rows = data.draw(tables(np.float32, widths=(1, 2, 16)))
    arr, id_rows = data.draw(id_lists(len(table)))
    wrows = weight_rows(data.draw, id_rows)
    weights = pa.array(wrows, type=pa.list_(pa.float32()))
    fn = asp.sparse_segment_weighted_sum if op == "sum" else SPARSE[op]
    expected = ref.segment_reduce(ref.sparse_rows(table_rows, id_rows), op, weights=wrows)
    width = table.shape[1]
    assert_arrow(fn(table, arr, weights=weights), expected, np.dtype(np.float32), (width,))
    bounds = data.draw(cuts(len(arr)))
    got = fn(fsl_table(table), chunked(arr, bounds), weights=chunked(weights, bounds))
    assert isinstance(got, pa.ChunkedArray)
    assert_arrow(got.combine_chunks(), expected, np.dtype(np.float32), (width,))


# ================================================================= embedding_bag
@given(data=st.data())
def test_embedding_bag_property(data: st.DataObject) -> None:
    # The three offset forms, every mode, with and without per_sample_weights, on
    # tables around the vector widths of the fast path.
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    table, table_rows = data.draw(tables(dtype, widths=(1, 3, 16, 17, 40, 70)))
    num = len(table)
    lens = data.draw(st.lists(st.integers(0, 7), max_size=8))
    n = sum(lens)
    ids = np.array(data.draw(st.lists(st.integers(0, num - 1), min_size=n, max_size=n)),
                   dtype=data.draw(st.sampled_from([np.int32, np.int64, np.uint16])))
    mode = data.draw(st.sampled_from(["sum", "mean", "max"]))
    weighted = data.draw(st.booleans())
    w = np.array(data.draw(st.lists(st.floats(-3, 3, width=32), min_size=n, max_size=n)),
                 dtype=np.float32) if weighted else None
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    id_rows = ref.rows_from_offsets(ids.tolist(), offsets.tolist())
    wrows = None if w is None else ref.rows_from_offsets(w.astype(np.float64).tolist(),
                                                         offsets.tolist())
    expected = ref.segment_reduce(ref.sparse_rows(table_rows, id_rows), mode, weights=wrows)
    width = table.shape[1]
    dt = np.dtype(dtype)
    for got in (
            asp.embedding_bag(table, ids, offsets=offsets, mode=mode, per_sample_weights=w),
            asp.embedding_bag(table, ids, offsets=offsets[:-1], include_last_offset=False,
                              mode=mode, per_sample_weights=w),
            asp.embedding_bag(table, ids, lengths=lens, mode=mode, per_sample_weights=w)):
        assert got.dtype == dt and got.shape == (len(lens), width)
        assert_close(got, expected_array(expected, 0, (width,)), dt)
    arr = pa.array(id_rows, type=pa.list_(pa.int64()))
    warr = None if wrows is None else pa.array(wrows, type=pa.list_(pa.float32()))
    got = asp.embedding_bag(table, arr, mode=mode, per_sample_weights=warr)
    assert_arrow(got, expected, dt, (width,))


# ============================================================== gather / scatter
@given(data=st.data())
def test_gather_property(data: st.DataObject) -> None:
    dtype = data.draw(numeric_dtypes())
    num = data.draw(st.integers(1, 5))
    width = data.draw(st.sampled_from([None, 1, 3]))
    shape = (num,) if width is None else (num, width)
    cells = data.draw(st.lists(scalars(dtype), min_size=int(np.prod(shape)),
                               max_size=int(np.prod(shape))))
    table = np.array(cells, dtype=dtype).reshape(shape)
    idx = data.draw(st.lists(st.integers(0, num - 1), max_size=8))
    got = asp.gather(table, np.array(idx, dtype=np.int64))
    assert got.dtype == table.dtype and got.shape == (len(idx),) + table.shape[1:]
    assert got.tolist() == ref.gather(table.tolist(), idx)
    arr = pa.array(table.tolist())
    assert asp.gather(arr, idx).to_pylist() == ref.gather(table.tolist(), idx)


@given(data=st.data())
def test_scatter_property(data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    table, table_rows = data.draw(tables(dtype, widths=(1, 2, 3)))
    num, width = table.shape
    k = data.draw(st.integers(0, 8))
    idx = data.draw(st.lists(st.integers(0, num - 1), min_size=k, max_size=k))
    slices = np.array(data.draw(st.lists(FLOATS32, min_size=k * width, max_size=k * width)),
                      dtype=dtype).reshape(k, width)
    w0 = data.draw(st.sampled_from([1.0, 0.0, -1.0, 0.5, 2.0]))
    w1 = data.draw(st.sampled_from([1.0, 0.0, -0.25, 3.0]))
    slice_rows = slices.astype(np.float64).tolist()
    got = asp.scatter_assign(table.copy(), idx, slices)
    assert got.tolist() == ref.scatter_assign(table_rows, idx, slice_rows)
    got = asp.scatter_weighted_sum(table.copy(), w0, idx, slices, w1)
    expected = ref.scatter_weighted_sum(table_rows, w0, idx, slice_rows, w1)
    assert got.dtype == dtype
    assert_close(got, expected, np.dtype(dtype))
