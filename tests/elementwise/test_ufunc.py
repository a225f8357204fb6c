"""Tests of ``arrow_sparse.elementwise.ufunc``: the Jagged operators and numpy ufuncs
(``jagged_ufunc``/``array_ufunc``) and :func:`map_values`.

Compared with the plain-Python oracles of ``tests/_reference.py`` (Hypothesis, on the
CPU), on every backend (``backend`` fixture: cpu, the CUDA emulator, the stand-in CuPy,
a GPU) with a sliced batch holding empty rows, null rows and null elements, and on the
device only (what the device path checks and reads back).
"""

from __future__ import annotations

import math
import operator
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.kernels import cuda

from .. import _reference as ref
from .._strategies import list_arrays, offsets, pylists
from ..conftest import from_backend
from ..cuda_emu import fake_cupy
from ..cuda_emu.emu import Emulator
from ._helpers import (
    CAFFE2_OFFSETS,
    CAFFE2_ROWS,
    CAFFE2_VALUES,
    LATER,
    OTHER_ROWS,
    ROWS,
    caffe2,
    check_jagged,
    close_rows,
    cpu_and_emu,
    large_batch,
    on,
    raised_later,
    sample,
    sample_array,
    shares_offsets,
    spans_the_device_buffer,
)

# ------------------------------------------------------- operators against the reference
BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul}


@pytest.mark.hypothesis
@given(list_arrays(np.dtype(np.int64), null_values=True), st.sampled_from(sorted(BINARY)),
       st.integers(-50, 50))
def test_operators_with_a_scalar(case: tuple[pa.Array, list], op: str, scalar: int) -> None:
    arr, rows = case
    j = asp.Jagged.from_arrow(arr)
    fn = BINARY[op]
    got = fn(j, scalar)
    assert got.to_list() == ref.map_rows(lambda a: fn(a, scalar), rows)
    shares_offsets(got, j)
    assert got.validity is j.validity
    assert fn(scalar, j).to_list() == ref.map_rows(lambda a: fn(scalar, a), rows)


@pytest.mark.hypothesis
@given(list_arrays(np.dtype(np.float64), null_values=True), st.sampled_from(sorted(BINARY)))
def test_operators_between_jaggeds(case: tuple[pa.Array, list], op: str) -> None:
    arr, rows = case
    j = asp.Jagged.from_arrow(arr)
    # The other operand: the same row lengths, its own buffer with one value before the
    # rows (so its offsets start at 1), and null rows where a row has one element.
    other_rows = [None if row is None or len(row) == 1 else [2.5 * i - 1 for i in range(len(row))]
                  for row in rows]
    lengths = [0 if row is None else len(row) for row in rows]
    flat = [0.0] + [x for row, n in zip(other_rows, lengths, strict=True)
                    for x in (row if row is not None else [7.0] * n)]
    offs = np.concatenate([[1], 1 + np.cumsum(lengths, dtype=np.int64)]).astype(np.int32)
    k = asp.Jagged(np.array(flat), offs, np.array([r is not None for r in other_rows], bool))
    fn = BINARY[op]
    got = fn(j, k)
    close_rows(got.to_list(), ref.map_rows(fn, rows, other_rows))
    shares_offsets(got, j)
    close_rows((k * j).to_list(), ref.map_rows(lambda a, b: b * a, rows, other_rows))


@pytest.mark.hypothesis
@given(list_arrays(np.dtype(np.int64)), st.data())
def test_per_row_and_padded_operands(case: tuple[pa.Array, list], data: st.DataObject) -> None:
    arr, rows = case
    j = asp.Jagged.from_arrow(arr)
    per_row = np.array(data.draw(st.lists(st.integers(-9, 9), min_size=len(rows),
                                          max_size=len(rows))), dtype=np.int64)
    got = j * per_row
    expected = [None if row is None else [x * int(per_row[i]) for x in row]
                for i, row in enumerate(rows)]
    assert got.to_list() == expected
    longest = max([len(r) for r in rows if r is not None], default=0)
    width = longest + data.draw(st.integers(0, 2))
    dense = np.arange(len(rows) * width, dtype=np.int64).reshape(len(rows), width)
    expected = [None if row is None else [x - int(dense[i, p]) for p, x in enumerate(row)]
                for i, row in enumerate(rows)]
    assert (j - dense).to_list() == expected
    assert (dense - j).to_list() == ref.map_rows(operator.neg, expected)


COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
           ">": operator.gt, ">=": operator.ge}


def same_rows_other(rows: list) -> tuple[asp.Jagged, list]:
    """A Jagged with the rows' lengths, no zero values, its own buffer (offsets from 1) and
    null rows where a row has one element; and its Python rows."""
    other_rows = [None if row is None or len(row) == 1 else
                  [2.5 * i - 1 for i in range(len(row))] for row in rows]
    lengths = [0 if row is None else len(row) for row in rows]
    flat = [0.0] + [x for row, n in zip(other_rows, lengths, strict=True)
                    for x in (row if row is not None else [7.0] * n)]
    offs = np.concatenate([[1], 1 + np.cumsum(lengths, dtype=np.int64)]).astype(np.int32)
    valid = np.array([r is not None for r in other_rows], bool)
    return asp.Jagged(np.array(flat), offs, valid), other_rows


@pytest.mark.hypothesis
@given(list_arrays(np.dtype(np.float64), null_values=True), st.sampled_from(sorted(COMPARE)),
       st.integers(-3, 3), st.data())
def test_comparisons_match_reference(case: tuple[pa.Array, list], op: str, scalar: int,
                                     data: st.DataObject) -> None:
    arr, rows = case
    j = asp.Jagged.from_arrow(arr)
    fn = COMPARE[op]
    got = fn(j, scalar)
    assert got.dtype == np.bool_
    assert got.to_list() == ref.map_rows(lambda a: fn(a, scalar), rows)
    shares_offsets(got, j)
    assert fn(float(scalar), j).to_list() == ref.map_rows(lambda a: fn(scalar, a), rows)
    k, other_rows = same_rows_other(rows)
    assert fn(j, k).to_list() == ref.map_rows(fn, rows, other_rows)
    per_row = data.draw(st.lists(st.integers(-3, 3), min_size=len(rows), max_size=len(rows)))
    want = [None if row is None else [None if x is None else fn(x, per_row[i]) for x in row]
            for i, row in enumerate(rows)]
    assert fn(j, np.array(per_row, dtype=np.int64)).to_list() == want


@pytest.mark.hypothesis
@given(list_arrays(null_values=True), st.floats(0.25, 8.0), st.booleans())
def test_true_divide_matches_reference(case: tuple[pa.Array, list], scalar: float,
                                       negative: bool) -> None:
    arr, rows = case
    j = asp.Jagged.from_arrow(arr)
    s = -scalar if negative else scalar
    got = j / s
    assert got.dtype == np.result_type(j.dtype, 1.0)
    rel = 1e-6 if got.dtype == np.float32 else 1e-12
    close_rows(got.to_list(), ref.map_rows(lambda a: a / s, rows), rel)
    with np.errstate(divide="ignore", invalid="ignore"):  # the rows may hold zeros
        back = (s / j).to_list()
        dt = got.dtype.type  # the reference divides in the result's dtype too
        want = ref.map_rows(lambda a: float(dt(s) / dt(a)), rows)
    close_rows(back, want, rel)
    k, other_rows = same_rows_other(rows)
    close_rows((j / k).to_list(), ref.map_rows(lambda a, b: a / b, rows, other_rows), rel)


@pytest.mark.hypothesis
@given(pylists(np.dtype(np.int64), levels=1))
def test_operators_round_trip_through_arrow(rows: list) -> None:
    arr = pa.array(rows, pa.large_list(pa.int64()))
    out = (asp.Jagged.from_arrow(arr) * 3).to_arrow()
    assert out.type == arr.type
    assert out.to_pylist() == ref.map_rows(lambda a: 3 * a, rows)


# ----------------------------------------------------- operators: examples and semantics
def test_float16_values_give_the_documented_dtypes() -> None:
    # numpy's operators keep float16 (the kernels' float32 is in the other modules' tests).
    j = asp.Jagged.from_list([[1.0, 2.0], None, [0.5]], dtype=np.float16)
    assert (j + 1).dtype == np.float16 and (j * j).dtype == np.float16


def test_caffe2_operators() -> None:
    j = caffe2()
    assert (j + 1).to_list() == [[2, 3, 4], [3, 5, 7, 8], [4, 7]]
    assert (10 - j).to_list() == [[9, 8, 7], [8, 6, 4, 3], [7, 4]]
    assert (j * j).to_list() == [[1, 4, 9], [4, 16, 36, 49], [9, 36]]
    assert (j / 2).to_list() == [[0.5, 1.0, 1.5], [1.0, 2.0, 3.0, 3.5], [1.5, 3.0]]
    assert (j // 2).to_list() == [[0, 1, 1], [1, 2, 3, 3], [1, 3]]
    assert (j % 2).to_list() == [[1, 0, 1], [0, 0, 0, 1], [1, 0]]
    assert (j ** 2).to_list() == (j * j).to_list()
    assert (2 ** j).to_list()[0] == [2, 4, 8]
    assert (-j).to_list() == [[-1, -2, -3], [-2, -4, -6, -7], [-3, -6]]
    assert abs(-j).to_list() == CAFFE2_ROWS
    assert (+j).to_list() == CAFFE2_ROWS
    assert (j * np.array([1, 10, 100])).to_list() == [[1, 2, 3], [20, 40, 60, 70], [300, 600]]
    assert (np.array([1, 10, 100]) * j).to_list() == [[1, 2, 3], [20, 40, 60, 70], [300, 600]]
    assert (pa.array([1, 10, 100]) + j).to_list() == [[2, 3, 4], [12, 14, 16, 17], [103, 106]]
    assert (j + pa.array(CAFFE2_ROWS)).to_list() == (j * 2).to_list()


def test_comparisons_give_bool_jaggeds_and_jagged_is_unhashable() -> None:
    j = asp.Jagged.from_list([[1, 2, 3], None, [3, 6]])
    eq = j == 3
    assert eq.dtype == np.bool_ and eq.to_list() == [[False, False, True], None, [True, False]]
    assert (j != 3).to_list() == [[True, True, False], None, [False, True]]
    assert (j < 3).to_list() == [[True, True, False], None, [False, False]]
    assert (j <= 3).to_list() == [[True, True, True], None, [True, False]]
    assert (j > 3).to_list() == [[False, False, False], None, [False, True]]
    assert (j >= 3).to_list() == [[False, False, True], None, [True, True]]
    assert (3 < j).to_list() == (j > 3).to_list()
    assert (j == j).to_list() == [[True] * 3, None, [True] * 2]
    assert asp.Jagged.__hash__ is None
    with pytest.raises(TypeError, match="unhashable"):
        hash(j)


def test_numpy_ufuncs_apply_to_values() -> None:
    j = asp.Jagged.from_list([[1.0, 4.0], [], None, [9.0]])
    close_rows(np.sqrt(j).to_list(), [[1.0, 2.0], [], None, [3.0]])
    close_rows(np.exp(j).to_list(), [[math.e, math.exp(4)], [], None, [math.exp(9)]])
    assert np.add(j, 1).to_list() == [[2.0, 5.0], [], None, [10.0]]
    assert np.maximum(j, np.array([2.0, 0.0, 0.0, 10.0])).to_list() == \
        [[2.0, 4.0], [], None, [10.0]]
    assert np.isnan(j).to_list() == [[False, False], [], None, [False]]
    assert np.add(j, 1, dtype=np.float32).dtype == np.float32
    shares_offsets(np.log(j), j)


def test_dtypes_follow_numpy() -> None:
    j8 = asp.Jagged.from_list([[1, 2], [3]], dtype=np.int8)
    assert (j8 + 1).dtype == np.int8  # Python scalars are weak, as in numpy
    assert (j8 / 2).dtype == np.float64
    assert (j8 + np.int16(1)).dtype == np.int16
    f32 = asp.Jagged.from_list([[1.0]], dtype=np.float32)
    assert (f32 * 2.5).dtype == np.float32
    assert (f32 * np.float64(2.5)).dtype == np.float64


def test_offsets_are_shared_and_sliced_input_keeps_them() -> None:
    base = pa.array([[100, 100], [1, 2, 3], [], None, [3, 6], [100]])
    sliced = base.slice(1, 4)
    j = asp.Jagged.from_arrow(sliced)
    assert j.offsets[0] == 2
    for result in ((j + 1), (j * j), j.map_values(np.negative), np.square(j)):
        shares_offsets(result, j)
        assert result.validity is j.validity or np.array_equal(result.validity, j.validity)
        result.validate()
    assert (j + 1).to_list() == [[2, 3, 4], [], None, [4, 7]]
    out = (j + 1).to_arrow()
    assert out.type == sliced.type and out.to_pylist() == [[2, 3, 4], [], None, [4, 7]]
    assert asp.Jagged.from_arrow(out).offsets.tolist() == j.offsets.tolist()


def test_nested_and_vector_values() -> None:
    nested = asp.Jagged.from_list([[[1, 2], [3]], None, [[], [4, 5, 6]]])
    assert (nested * 10).to_list() == [[[10, 20], [30]], None, [[], [40, 50, 60]]]
    assert (nested + nested).to_list() == [[[2, 4], [6]], None, [[], [8, 10, 12]]]
    assert (nested - np.array([1, 2, 3])).to_list() == [[[0, 1], [2]], None, [[], [1, 2, 3]]]
    dense = np.arange(3 * 2 * 3).reshape(3, 2, 3)
    assert (nested + dense).to_list() == [[[1, 3], [6]], None, [[], [19, 21, 23]]]
    outer_sliced = nested[2:]
    assert (outer_sliced * 2).to_list() == [[[], [8, 10, 12]]]
    emb = asp.Jagged(np.arange(10, dtype=np.float64).reshape(5, 2), [0, 2, 5])
    scaled = emb * np.array([1.0, 10.0])  # per-row scalars broadcast over the vector
    np.testing.assert_array_equal(scaled.values[2:], np.arange(4, 10).reshape(3, 2) * 10)
    by_vector = emb * np.array([[1.0, -1.0], [2.0, 0.0]])  # one vector per row
    np.testing.assert_array_equal(by_vector.values[:2], [[0.0, -1.0], [2.0, -3.0]])
    padded = np.ones((2, 3, 2))
    np.testing.assert_array_equal((emb + padded).values, emb.values + 1)


def test_validities_combine_with_and() -> None:
    # Rows must have the same lengths, null or not (here the null rows hold garbage).
    a = asp.Jagged(np.array([1, 2, 99, 3, 4]), [0, 2, 3, 4, 5], [True, False, True, True])
    b = asp.Jagged(np.array([1, 0, 5, 77, 6]), [0, 2, 3, 4, 5], [True, True, False, True],
                   values_validity=[True, False, True, True, True])
    assert (a + b).to_list() == [[2, None], None, None, [10]]
    assert (b * a).to_list() == [[1, None], None, None, [24]]
    assert a.validity is not None and a.validity.tolist() == [True, False, True, True]
    with pytest.raises(ValueError, match=r"Jagged.add: other offsets differ .*"
                                         r"\(first at position 2: 3 != 2\)"):
        asp.Jagged.from_list([[1, 2], None, [3]]) + asp.Jagged.from_list([[1, 2], [5], [3]])


def test_hidden_values_are_never_computed() -> None:
    # Arrow allows anything under a null row or a null element: here a NaN and a huge
    # value, which would raise floating-point warnings (errors in this test suite).
    values = pa.array([1.0, np.nan, 1e300, 2.0])
    arr = pa.ListArray.from_arrays(pa.array([0, 1, 3, 4], pa.int32()), values,
                                   mask=pa.array([False, True, False]))
    j = asp.Jagged.from_arrow(arr)
    assert (j * 1e10).to_list() == [[1e10], None, [2e10]]
    assert j.map_values(lambda x: x * 1e300).to_list() == [[1e300], None, [2e300]]
    with_null = asp.Jagged.from_list([[1.0, None, 0.5]])  # 0.0 under the null
    assert (1 / with_null).to_list() == [[1.0, None, 2.0]]


def test_issue4_scalar_elements_pair_with_vector_elements_not_columns() -> None:
    # Jagged[N, D] op Jagged[N]: element k of the scalar Jagged meets element k (a whole
    # vector) of the other, as a per-row array does; never column k of every element.
    vectors = asp.Jagged(np.ones((3, 3)), [0, 3])
    scalars = asp.Jagged(np.array([10.0, 20.0, 30.0]), [0, 3])
    expected = [[[11.0] * 3, [21.0] * 3, [31.0] * 3]]
    assert (vectors + scalars).to_list() == expected
    assert (scalars + vectors).to_list() == expected
    wide = asp.Jagged(np.ones((4, 3)), [0, 4]) * asp.Jagged(np.arange(4.0), [0, 4])
    np.testing.assert_array_equal(wide.values, np.repeat(np.arange(4.0)[:, None], 3, axis=1))
    ones = asp.Jagged(np.ones((2, 1)), [0, 2]) + asp.Jagged(np.ones((2, 3)), [0, 2])
    assert ones.values.shape == (2, 3)
    with pytest.raises(ValueError, match=r"Jagged.add: other elements of shapes \(3,\) and "
                                         r"\(2,\) do not broadcast"):
        asp.Jagged(np.ones((4, 3)), [0, 4]) + asp.Jagged(np.ones((4, 2)), [0, 4])
    with pytest.raises(ValueError, match=r"other elements of shapes \(2, 3\) and \(3,\)"):
        asp.Jagged(np.ones((1, 2, 3)), [0, 1]) + asp.Jagged(np.ones((1, 3)), [0, 1])


def test_issue4_padded_operand_ignores_null_rows_at_every_level() -> None:
    # Arrow lets a null row cover a range; that range is never read, so its length
    # does not have to fit the padded operand.
    inner = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), pa.array([1.0, 2.0, 3.0]),
                                     mask=pa.array([False, True]))
    outer = pa.ListArray.from_arrays(pa.array([0, 2], pa.int32()), inner)  # [[[1.0], None]]
    assert (asp.Jagged.from_arrow(outer) * np.full((1, 2, 1), 2.0)).to_list() == [[[2.0], None]]
    null_outer = pa.ListArray.from_arrays(pa.array([0, 2], pa.int32()), inner,
                                          mask=pa.array([True]))  # [None]
    assert (asp.Jagged.from_arrow(null_outer) * np.ones((1, 1, 1))).to_list() == [None]
    with pytest.raises(ValueError, match=r"Jagged.multiply: other axis 2 \(length 0\) is "
                                         r"shorter than a row of the Jagged \(level 1\) "
                                         r"\(first at position 0: 1\)"):
        asp.Jagged.from_arrow(outer) * np.ones((1, 2, 0))


def test_parallel_paths_match_numpy() -> None:
    b = large_batch()
    offs, values, rows, pos = b.offs, b.values, b.rows, b.pos
    j = asp.Jagged(values, offs)
    # the operators read a padded operand with the same kernel (sliced: offsets[0] > 0)
    tail = j[100:]
    wide = np.arange(len(tail) * 12, dtype=np.float64).reshape(len(tail), 12)
    got_op = (tail * wide).values[tail.offsets[0]:]
    tail_rows, tail_pos = rows[offs[100]:] - 100, pos[offs[100]:]
    np.testing.assert_array_equal(got_op, values[offs[100]:] * wide[tail_rows, tail_pos])


def test_operator_errors() -> None:
    j = caffe2()
    other = asp.Jagged(CAFFE2_VALUES, np.array([0, 3, 6, 9]))
    with pytest.raises(ValueError, match=r"Jagged.add: other offsets differ from the Jagged's, "
                                         r"counted from each one's first offset "
                                         r"\(first at position 2: 6 != 7\)"):
        j + other
    with pytest.raises(ValueError, match="Jagged.multiply: other has 2 rows but the Jagged has 3"):
        j * j[:2]
    with pytest.raises(ValueError, match=r"other offsets \(level 1\) differ"):
        asp.Jagged.from_list([[[1], [2]]]) + asp.Jagged.from_list([[[1, 2], []]])
    with pytest.raises(ValueError, match="other has 2 jagged levels but the Jagged has 1"):
        asp.Jagged.from_list([[1]]) + asp.Jagged.from_list([[[1]]])
    with pytest.raises(ValueError, match="Jagged.subtract: other has 2 rows but the Jagged has 3"):
        j - np.array([1, 2])
    with pytest.raises(ValueError, match=r"other axis 1 \(length 3\) is shorter than a row "
                                         r"of the Jagged \(first at position 1: 4\)"):
        j * np.ones((3, 3))
    with pytest.raises(ValueError, match=r"other of shape \(3, 1, 1, 1\) does not broadcast"):
        j * np.ones((3, 1, 1, 1))
    with pytest.raises(ValueError, match="Jagged.add: .*out of bounds for int8"):
        asp.Jagged.from_list([[1]], dtype=np.int8) + 1000
    with pytest.raises(ValueError, match="Jagged.power: Integers to negative integer powers"):
        j ** -1
    with pytest.raises(TypeError, match="Jagged.subtract: numpy boolean subtract"):
        (j > 1) - (j > 2)
    with pytest.raises(TypeError, match="Jagged.add: other must have a numeric dtype"):
        j + "a"
    with pytest.raises(TypeError, match="Jagged.equal: other could not be read|Jagged.equal: "
                                        "other must"):
        assert j == None  # noqa: E711
    with pytest.raises(TypeError, match="Jagged.add: other must have a numeric dtype, got complex"):
        j + np.array([1j, 2j, 3j])
    with pytest.raises(TypeError, match=r"numpy's add.reduce is not supported on a Jagged; "
                                        r"use the segment reductions"):
        np.add.reduce(j)
    with pytest.raises(TypeError, match=r"Jagged.add: the out= argument is not supported"):
        np.add(j, 1, out=np.empty(9))
    with pytest.raises(TypeError, match="Jagged.matmul: only elementwise numpy ufuncs"):
        np.matmul(j, j)
    with pytest.raises(TypeError, match="Jagged.divmod: only elementwise numpy ufuncs"):
        np.divmod(j, 2)


# ------------------------------------------------------------ operators on every backend
def test_operators_and_ufuncs_on_every_backend(backend: str) -> None:
    j, k = on(backend, sample(), sample(OTHER_ROWS, skip=2))  # k's offsets start elsewhere
    cases: list[tuple[Any, list]] = [
        (j + 1, ref.map_rows(lambda a: a + 1, ROWS)),
        (2 * j, ref.map_rows(lambda a: 2 * a, ROWS)),
        (j / 2, ref.map_rows(lambda a: a / 2, ROWS)),
        (j ** 2, ref.map_rows(lambda a: a ** 2, ROWS)),
        (-j, ref.map_rows(lambda a: -a, ROWS)),
        (abs(j), ref.map_rows(abs, ROWS)),
        (j > 1, ref.map_rows(lambda a: a > 1, ROWS)),
        (np.exp(j), ref.map_rows(math.exp, ROWS)),
        (np.maximum(j, 2.0), ref.map_rows(lambda a: max(a, 2.0), ROWS)),
        (j * k, ref.map_rows(operator.mul, ROWS, OTHER_ROWS)),
        (k - j, ref.map_rows(operator.sub, OTHER_ROWS, ROWS)),
        (j + j, ref.map_rows(lambda a: a + a, ROWS)),
    ]
    for got, expected in cases:
        check_jagged(got, backend, expected)
    assert (j + 1).offsets is j.offsets and (k - j).offsets is k.offsets  # the first Jagged's
    assert np.add(j, 1, dtype=np.float32).dtype == np.float32
    assert (j > 1).dtype == np.bool_
    if backend != "cpu":
        cuda.check_errors("test")


def test_per_row_padded_nested_and_vector_operands_on_every_backend(backend: str) -> None:
    j = on(backend, sample())
    per_row, padded = on(backend, np.arange(5.0), np.arange(15.0).reshape(5, 3))
    check_jagged(j * per_row, backend, ref.map_rows(lambda a, b: a * b, ROWS,
                                                    [[r] * 3 for r in range(5)]))
    check_jagged(j + padded, backend, ref.map_rows(
        lambda a, b: a + b, ROWS, [[3.0 * r + c for c in range(3)] for r in range(5)]))
    nested_rows = [[[1, 2], [3]], None, [[], [4, 5, 6]]]
    nested = on(backend, asp.Jagged.from_list(nested_rows))
    check_jagged(nested * 10, backend, [[[10, 20], [30]], None, [[], [40, 50, 60]]])
    check_jagged(nested + nested, backend, [[[2, 4], [6]], None, [[], [8, 10, 12]]])
    check_jagged(nested - on(backend, np.array([1, 2, 3])), backend,
                 [[[0, 1], [2]], None, [[], [1, 2, 3]]])
    dense = on(backend, np.arange(18).reshape(3, 2, 3))
    check_jagged(nested + dense, backend, [[[1, 3], [6]], None, [[], [19, 21, 23]]])
    check_jagged(nested[2:] * 2, backend, [[[], [8, 10, 12]]])
    emb = on(backend, asp.Jagged(np.arange(10.0).reshape(5, 2), np.array([0, 2, 5])))
    vectors = np.arange(10.0).reshape(5, 2)
    check_jagged(emb * on(backend, np.array([1.0, 10.0])), backend,
                 [(vectors[:2] * 1).tolist(), (vectors[2:] * 10).tolist()])
    check_jagged(emb * on(backend, np.array([[1.0, -1.0], [2.0, 0.0]])), backend,
                 [(vectors[:2] * [1, -1]).tolist(), (vectors[2:] * [2, 0]).tolist()])
    check_jagged(emb + on(backend, np.ones((2, 3, 2))), backend,
                 [(vectors[:2] + 1).tolist(), (vectors[2:] + 1).tolist()])
    scalars = on(backend, asp.Jagged(np.array([10.0, 20.0, 30.0, 40.0, 50.0]),
                                     np.array([0, 2, 5])))
    check_jagged(emb + scalars, backend, [(vectors[:2] + [[10], [20]]).tolist(),
                                          (vectors[2:] + [[30], [40], [50]]).tolist()])
    if backend != "cpu":
        cuda.check_errors("test")


def test_validities_combine_and_hidden_values_are_zero_on_every_backend(backend: str) -> None:
    a = asp.Jagged(np.array([1, 2, 99, 3, 4]), np.array([0, 2, 3, 4, 5]),
                   np.array([True, False, True, True]))
    b = asp.Jagged(np.array([1, 0, 5, 77, 6]), np.array([0, 2, 3, 4, 5]),
                   np.array([True, True, False, True]),
                   values_validity=np.array([True, False, True, True, True]))
    da, db = on(backend, a, b)
    assert check_jagged(da + db, backend, [[2, None], None, None, [10]]).values[:2].tolist() \
        == [2, 0]  # the null element is 0
    check_jagged(db * da, backend, [[1, None], None, None, [24]])
    values = pa.array([1.0, np.nan, 1e300, 2.0])  # NaN and 1e300 under a null row
    arr = pa.ListArray.from_arrays(pa.array([0, 1, 3, 4], pa.int32()), values,
                                   mask=pa.array([False, True, False]))
    hidden = on(backend, asp.Jagged.from_arrow(arr))
    got = check_jagged(hidden * 1e10, backend, [[1e10], None, [2e10]])
    assert got.values.tolist() == [1e10, 0.0, 0.0, 2e10]
    check_jagged(hidden.map_values(lambda x: x * 1e300), backend, [[1e300], None, [2e300]])


def test_jagged_broadcasts_match_cpu(cuda_emu: Emulator) -> None:
    j = asp.Jagged.from_arrow(sample_array(np.float32, False, seed=9))
    per_row = np.arange(j.num_rows, dtype=np.float64)
    padded = np.arange(j.num_rows * 40, dtype=np.float32).reshape(j.num_rows, 40)
    for other, kernel in ((per_row, "repeat_rows<unsigned long long>"),
                          (padded, "jagged_dense_jagged_out<unsigned int>")):
        expected, got, launches = cpu_and_emu(cuda_emu, lambda a, b: a + b, j, other)
        assert got.to_arrow().equals(expected.to_arrow())
        assert kernel in launches


# ---------------------------------------------------------- operators on the device only
def test_device_results_keep_the_offsets_and_the_whole_values_buffer(cp: ModuleType) -> None:
    host = sample()
    j = host.to_device("cuda")
    cp.stats.reset()
    results = [j + 1, np.exp(j), j.map_values(lambda x: x * 2), j * cp.asarray(np.arange(5.0))]
    assert cp.stats.syncs == 0
    spans_the_device_buffer(results, j, host)
    cuda.check_errors("test")


def test_device_operand_checks_are_raised_by_the_next_check(cp: ModuleType) -> None:
    j = sample().to_device("cuda")
    longer = sample([[1.0, 2.0, 3.0], None, [5.0], [4.0, 5.0, -2.0], [0.5]]).to_device("cuda")
    j + longer  # noqa: B018 (rows 2 differ: position 3 of the offsets)
    with pytest.raises(ValueError, match=r"^Jagged.add: rows differ in length between the "
                       r"operands" + LATER.format(3)):
        raised_later(cp)
    j * cp.asarray(np.ones((5, 2)))  # noqa: B018 (rows 0 and 3 have 3 elements)
    with pytest.raises(ValueError, match=r"^Jagged.multiply: other \(a padded operand\) is "
                       r"shorter than a row of the Jagged" + LATER.format(0)):
        raised_later(cp)
    nested = asp.Jagged.from_list([[[1], [2]], None]).to_device("cuda")
    nested + asp.Jagged.from_list([[[1, 2], []], None]).to_device("cuda")  # noqa: B018
    with pytest.raises(ValueError, match="rows differ in length between the operands"
                       + LATER.format(1)):
        raised_later(cp)
    inner = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), pa.array([1.0, 2.0, 3.0]),
                                     mask=pa.array([False, True]))  # a null row over 2 values
    outer = asp.Jagged.from_arrow(pa.ListArray.from_arrays(pa.array([0, 2], pa.int32()), inner))
    got = outer.to_device("cuda") * cp.asarray(np.full((1, 2, 1), 2.0))  # fits but for the null
    assert got.to_list() == [[[2.0], None]]
    raised_later(cp)  # nothing was recorded
    with pytest.raises(ValueError, match="^Jagged.add: other has 2 rows but the Jagged has 5$"):
        j + j[:2]  # noqa: B018 (O(1) checks stay on the host, at once)
    with pytest.raises(ValueError, match=r"other of shape \(5, 1, 1\) does not broadcast"):
        j * cp.asarray(np.ones((5, 1, 1)))  # noqa: B018


def test_device_operands_must_all_be_on_the_device(cp: ModuleType) -> None:
    j = sample().to_device("cuda")
    with pytest.raises(TypeError, match=r"^Jagged.multiply: operand 1 is a host \(numpy/Arrow\) "
                       r"array but operand 0 is a device \(cupy\) array; move them"):
        j * np.arange(5.0)  # noqa: B018
    with pytest.raises(TypeError, match="^Jagged.add: operand 1 is a host"):
        j + sample()  # noqa: B018
    with pytest.raises(TypeError, match=r"^map_values: func\(values\) is a host \(numpy/Arrow\) "
                       "array but values is a device"):
        j.map_values(lambda x: x.get())
    with pytest.raises(ValueError, match="^map_values: func returned 2 values for 8; it must"):
        j.map_values(lambda x: x[:2])
    assert (j + np.float32(1)).dtype == np.float64 and (j * 2).device == "cuda:0"


def test_a_ufunc_cupy_lacks_names_itself_and_the_fix() -> None:
    with fake_cupy.emulated_cupy() as cp:
        del cp.exp  # as if this CuPy lacked it
        j = sample().to_device("cuda")
        with pytest.raises(NotImplementedError, match=r"^Jagged.exp: numpy's exp has no CuPy "
                           r"counterpart; move the Jagged to the host first with "
                           r"Jagged.to_device\('cpu'\)$"):
            np.exp(j)


# ---------------------------------------------------------------------------- map_values
def test_map_values_zero_copy_offsets_and_arrow() -> None:
    j = asp.Jagged.from_list([[1, 2, 3], [], None, [3, 6]])
    squared = j.map_values(np.square)
    assert squared.to_list() == [[1, 4, 9], [], None, [9, 36]]
    shares_offsets(squared, j)
    assert squared.validity is j.validity
    assert j.map_values(lambda x: x.astype(np.float32)).dtype == np.float32
    out = asp.map_values(pa.array([[1, 2], None]), lambda x: x * 2)
    assert isinstance(out, pa.ListArray) and out.to_pylist() == [[2, 4], None]
    vectors = asp.Jagged(np.ones((3, 4)), [0, 1, 3])
    assert j.map_values(np.abs).offsets is j.offsets
    assert vectors.map_values(lambda x: x[:, :2]).values.shape == (3, 2)


@pytest.mark.hypothesis
@given(list_arrays(np.dtype(np.float64), levels=2, null_values=True))
def test_map_values_nested_matches_reference(case: tuple[pa.Array, list]) -> None:
    arr, rows = case
    got = asp.map_values(arr, lambda x: 2 * x + 1)
    assert got.type == arr.type
    close_rows(got.to_pylist(), ref.map_rows(lambda a: 2 * a + 1, rows))


@pytest.mark.hypothesis
@given(st.data())
def test_map_values_values_and_offsets_form(data: st.DataObject) -> None:
    offs = data.draw(offsets(max_rows=8, max_len=4, max_start=3))
    n = int(offs[-1]) + data.draw(st.integers(0, 2))
    values = np.arange(n, dtype=np.float64) - 3
    got = asp.map_values(values, lambda x: 2 * x + 1, offsets=offs)
    expected = np.zeros(n)
    expected[offs[0]:offs[-1]] = 2 * values[offs[0]:offs[-1]] + 1
    np.testing.assert_array_equal(got, expected)
    arrow = asp.map_values(pa.array(values), np.negative, offsets=pa.array(offs))
    assert isinstance(arrow, pa.Array)
    np.testing.assert_array_equal(arrow.to_numpy(), np.where(expected != 0, -values, 0.0))


def test_map_values_errors() -> None:
    j = caffe2()
    with pytest.raises(TypeError, match="map_values: func must be callable, got int"):
        j.map_values(3)
    with pytest.raises(ValueError, match="map_values: func returned 1 values for 9; it must "
                                         "map the values one to one"):
        j.map_values(lambda x: x[:1])
    with pytest.raises(TypeError, match=r"map_values: func\(values\) must have a numeric dtype"):
        j.map_values(lambda x: x.astype(str))
    with pytest.raises(TypeError, match="map_values: data must be a Jagged or an Arrow list"):
        asp.map_values(np.arange(3), np.abs)
    with pytest.raises(ValueError, match="map_values: offsets exceed the number of values 3"):
        asp.map_values(np.arange(3), np.abs, offsets=[0, 4])
    with pytest.raises(TypeError, match="map_values: offsets must be None when data is a Jagged"):
        asp.map_values(caffe2(), np.abs, offsets=CAFFE2_OFFSETS)


def test_map_values_on_every_backend(backend: str) -> None:
    j = on(backend, sample())
    got = j.map_values(lambda x: 2 * x + 1)
    assert got.offsets is j.offsets
    check_jagged(got, backend, ref.map_rows(lambda a: 2 * a + 1, ROWS))
    values, offs = on(backend, np.arange(6.0) - 3, np.array([1, 3, 3, 5]))
    out = from_backend(asp.map_values(values, lambda x: -x, offsets=offs), backend)
    np.testing.assert_array_equal(out, [0.0, 2.0, 1.0, -0.0, -1.0, 0.0])
