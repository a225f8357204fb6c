"""Tests of ``arrow_sparse.transforms.stats``: :func:`length_stats` and
:class:`LengthStats`.

Compared with the plain-Python oracle of ``tests/_reference.py`` (Hypothesis, on the
CPU), on every backend (cpu, the CUDA emulator, the stand-in CuPy, a GPU) and with the
CPU through the emulator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp

from .. import _reference as ref
from ._helpers import (
    COLUMNS,
    _ints,
    child_with_offset,
    int_arrays,
    on,
    run_through_the_emulator,
    string_list_arrays,
)


@pytest.mark.hypothesis
@given(st.data())
def test_length_stats(data: st.DataObject) -> None:
    arr, rows = data.draw(st.one_of(int_arrays(), string_list_arrays()))
    stats = asp.length_stats(arr)
    assert stats.to_dict() == ref.length_stats(rows)
    if pa.types.is_integer(arr.type.value_type):
        assert asp.length_stats(asp.Jagged.from_arrow(arr)) == stats
    chunked = pa.chunked_array([arr, arr], type=arr.type)
    assert asp.length_stats(chunked).to_dict() == ref.length_stats(rows + rows)


def test_length_stats_percentiles_and_nesting() -> None:
    rows = [[0] * n for n in range(1, 101)]
    stats = asp.length_stats(pa.array(rows))
    assert (stats.min, stats.p50, stats.p90, stats.p99, stats.max) == (1, 50, 90, 99, 100)
    none = asp.length_stats(pa.array([None, None], pa.list_(pa.int64())))
    assert none.to_dict() == ref.length_stats([None, None])
    nested = asp.length_stats(pa.array([[[1], None], None, [[]]]))
    assert (nested.rows, nested.null_rows, nested.total_values, nested.null_values) == (3, 1, 3, 1)
    assert asp.length_stats(asp.Jagged.from_list([[[1], None], None, [[]]])) == nested
    assert asp.length_stats(pa.chunked_array([], pa.list_(pa.int8()))).rows == 0


def test_length_stats_null_rows_covering_values() -> None:
    # Arrow allows a null row over a non-empty range: its values are not counted.
    values = pa.array([1, None, 3, 4])
    arr = pa.ListArray.from_arrays(pa.array([0, 2, 4], pa.int32()), values,
                                   mask=pa.array([False, True]))
    assert arr.to_pylist() == [[1, None], None]
    assert asp.length_stats(arr).total_values == 2


def test_length_stats_errors() -> None:
    with pytest.raises(TypeError, match="length_stats: values must be an Arrow list array, a"
                                        " ChunkedArray or a Jagged, got ndarray"):
        asp.length_stats(np.array([1]))
    with pytest.raises(TypeError, match="length_stats: values must be an Arrow list array or a"
                                        " Jagged, got Arrow type int64"):
        asp.length_stats(pa.array([1]))


# ------------------------------------------------------ layouts the builders rarely make
def test_child_with_offset_and_null_rows_over_values() -> None:
    arr, _ = child_with_offset()
    stats = asp.length_stats(arr)
    assert (stats.total_values, stats.null_values, stats.null_rows) == (4, 1, 1)


def test_empty_inputs() -> None:
    for t in (pa.list_(pa.int64()), pa.large_list(pa.string())):
        empty = pa.array([], type=t)
        assert asp.length_stats(empty).rows == 0


# -------------------------------------------------------- every backend (the device too)
@pytest.mark.parametrize("name", list(COLUMNS))
def test_length_stats_on_every_backend(backend: str, name: str) -> None:
    host = asp.Jagged.from_arrow(COLUMNS[name])
    x = on(backend, COLUMNS[name])
    assert asp.length_stats(x) == asp.length_stats(host)


#: Public calls and the kernels they must launch through the emulator.
PUBLIC: dict[str, tuple[Callable[[], Any], set[str]]] = {
    "length_stats": (lambda: asp.length_stats(_ints()), {"kept_lengths"}),
}


@pytest.mark.parametrize("case", list(PUBLIC))
def test_public_transforms_through_the_emulator(case: str) -> None:
    run_through_the_emulator(case, *PUBLIC[case])
