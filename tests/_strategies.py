"""Hypothesis strategies for jagged data: offsets starting above zero, empty and null
rows, null elements, nested lists, sliced Arrow arrays and every numeric dtype."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float32", "float64"]


def numeric_dtypes() -> st.SearchStrategy[np.dtype]:
    return st.sampled_from(INT_DTYPES + FLOAT_DTYPES).map(np.dtype)


def scalars(dtype: np.dtype) -> st.SearchStrategy[Any]:
    """Python scalars that fit ``dtype`` exactly (floats: finite, exactly representable)."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return st.integers(int(max(info.min, -1000)), int(min(info.max, 1000)))
    return st.floats(-1e3, 1e3, width=32 if dtype == np.float32 else 64,
                     allow_nan=False, allow_infinity=False)


@st.composite
def lengths(draw: st.DrawFn, max_rows: int = 12, max_len: int = 6) -> list[int]:
    """Row lengths with empty rows likely."""
    return draw(st.lists(st.one_of(st.just(0), st.integers(0, max_len)), max_size=max_rows))


@st.composite
def offsets(draw: st.DrawFn, max_rows: int = 12, max_len: int = 6,
            max_start: int = 5) -> np.ndarray:
    """Offsets that may start above zero, as int32 or int64."""
    lens = draw(lengths(max_rows, max_len))
    start = draw(st.integers(0, max_start))
    dtype = draw(st.sampled_from([np.int32, np.int64]))
    return np.concatenate([[start], start + np.cumsum(lens, dtype=np.int64)]).astype(dtype)


@st.composite
def offsets_levels(draw: st.DrawFn) -> tuple[list[list[int]], list[list[int]]]:
    """Nested rows as ``(lengths, offsets)`` per level, outermost first (FBGEMM's list).

    1 to 3 levels, at most 5 outer rows, rows of 0 to 3 items, each level's lengths as
    many as the items of the level above; the innermost offsets start 0 to 2 values in.
    """
    levels = draw(st.integers(1, 3))
    lens = [draw(st.lists(st.integers(0, 3), max_size=5))]
    for _ in range(levels - 1):
        lens.append(draw(st.lists(st.integers(0, 3), min_size=sum(lens[-1]),
                                  max_size=sum(lens[-1]))))
    offs = [[0, *itertools.accumulate(x)] for x in lens]
    start = draw(st.integers(0, 2))  # values before the first row
    offs[-1] = [start + o for o in offs[-1]]
    return lens, offs


@st.composite
def pylists(draw: st.DrawFn, dtype: np.dtype, levels: int = 1, null_rows: bool = True,
            null_values: bool = False, max_rows: int = 10, max_len: int = 5) -> list[Any]:
    """Nested Python rows (``levels`` deep) of scalars of ``dtype``; None = null."""
    leaf: st.SearchStrategy[Any] = scalars(dtype)
    if null_values:
        leaf = st.one_of(st.none(), leaf)
    row: st.SearchStrategy[Any] = st.lists(leaf, max_size=max_len)
    for _ in range(levels - 1):
        inner = st.one_of(st.none(), row) if null_rows else row
        row = st.lists(inner, max_size=max_len)
    if null_rows:
        row = st.one_of(st.none(), row)
    return draw(st.lists(row, max_size=max_rows))


def arrow_type(dtype: np.dtype, levels: int, large: bool) -> pa.DataType:
    t = pa.from_numpy_dtype(dtype)
    for _ in range(levels):
        t = pa.large_list(t) if large else pa.list_(t)
    return t


@st.composite
def list_arrays(draw: st.DrawFn, dtype: np.dtype | None = None, levels: int = 1,
                null_rows: bool = True, null_values: bool = False,
                sliced: bool = True, null_ranges: bool = False) -> tuple[pa.Array, list[Any]]:
    """An Arrow list array and the Python rows it holds.

    The array is often a slice of a bigger one, so its offsets start above zero and
    its values buffer holds elements outside the slice. With ``null_ranges`` the
    top-level null rows address values of their own (valid Arrow: a null row's range
    is never read), so code that reads them shows up.
    """
    if dtype is None:
        dtype = draw(numeric_dtypes())
    large = draw(st.booleans())
    rows = draw(pylists(dtype, levels, null_rows, null_values))
    t = arrow_type(dtype, levels, large)
    before: list[Any] = []
    after: list[Any] = []
    if sliced and draw(st.booleans()):
        before = draw(pylists(dtype, levels, null_rows, null_values, max_rows=3))
        after = draw(pylists(dtype, levels, null_rows, null_values, max_rows=3))
    everything = before + rows + after
    arr = pa.array(everything, type=t)
    if null_ranges and arr.null_count:
        fill = pylists(dtype, levels, False, null_values, max_rows=1, max_len=8)
        full = pa.array([(draw(fill) or [[]])[0] if r is None else r for r in everything],
                        type=t)
        cls = pa.LargeListArray if large else pa.ListArray
        arr = cls.from_arrays(full.offsets, full.values, mask=arr.is_null())
    return arr.slice(len(before), len(rows)), rows
