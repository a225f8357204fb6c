"""Hypothesis strategies of the segment property tests, and the helpers they share.

Sliced Arrow arrays (``offsets[0] > 0``), ``list`` and ``large_list``, ChunkedArrays
with empty chunks, ``fixed_size_list`` values and tables, null rows and null values.
The ``ci`` profile runs 40 examples per test; ``HYPOTHESIS_PROFILE=thorough`` runs 2000.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

FLOATS32 = st.floats(-100, 100, width=32, allow_nan=False, allow_infinity=False)
#: Values whose max/min bring out the sign of zero (and NaN), as in IEEE maximum/minimum.
SIGNED = st.sampled_from([-0.0, 0.0, -0.0, 0.0, -1.5, 2.0, float("nan")])


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


def bits_equal(got: np.ndarray, expected: list[Any], dtype: np.dtype) -> None:
    """Each result is NaN where the oracle's is, else the same value with the same sign."""
    want = np.array(expected, dtype=dtype)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(want[~nan]))


@st.composite
def signed_zero_rows(draw: st.DrawFn) -> tuple[np.dtype, list[list[float]], np.ndarray,
                                               list[int]]:
    """Rows of signed zeros, -1.5, 2.0 and NaN (none empty): dtype, rows, flat values, lengths."""
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float64])))
    rows = draw(st.lists(st.lists(SIGNED, min_size=1, max_size=40), min_size=1, max_size=8))
    flat = np.array([x for r in rows for x in r], dtype=dtype)
    return dtype, rows, flat, [len(r) for r in rows]
