"""Hypothesis strategies of keyed data: KeyedJagged with null and empty rows, lists of maps."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from arrow_sparse import KeyedJagged

from .._strategies import scalars
from ._helpers import build, weights_of
from ._reference import Table

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@st.composite
def keyed(draw: st.DrawFn, dtype: Any = None, keys: list[Any] | None = None,
          rows: int | None = None, weighted: bool | None = None
          ) -> tuple[KeyedJagged, list[Any], Table, Table | None]:
    """A KeyedJagged with null and empty rows, and its reference tables."""
    dtype = np.dtype(draw(st.sampled_from(INTS + ["float64"])) if dtype is None else dtype)
    if keys is None:
        keys = [f"k{i}" for i in range(draw(st.integers(0, 4)))]
    if rows is None:
        rows = draw(st.integers(0, 5))
    row = st.one_of(st.none(), st.lists(scalars(dtype), max_size=4))
    table = {k: draw(st.lists(row, min_size=rows, max_size=rows)) for k in keys}
    if weighted is None:
        weighted = draw(st.booleans())
    wtable = None
    if weighted:
        wtable = {k: [weights_of(r) for r in table[k]] for k in keys}
    lengths_dtype = draw(st.sampled_from([np.int32, np.int64]))
    return build(keys, table, dtype, wtable, lengths_dtype), keys, table, wtable


@st.composite
def map_rows(draw: st.DrawFn) -> list[Any]:
    """Rows of a map column: null maps, empty maps, repeated keys, null lists."""
    entry = st.tuples(st.integers(0, 6),
                      st.one_of(st.none(), st.lists(st.integers(-1000, 1000), max_size=4)))
    rows: list[Any] = draw(st.lists(st.one_of(st.none(), st.lists(entry, max_size=5)),
                                    max_size=8))
    return rows


def weights_of_rows(rows: list[Any]) -> list[Any]:
    """A parallel weights map: same keys and list lengths, weight = value / 2."""
    return [None if row is None else
            [(k, None if items is None else [x / 2 for x in items]) for k, items in row]
            for row in rows]
