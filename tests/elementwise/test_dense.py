"""Tests of ``arrow_sparse.elementwise.dense``: FBGEMM's jagged x dense operators and
the per-row matrix products (:func:`jagged_dense_bmm`, :func:`jagged_jagged_bmm`).

Compared with the plain-Python oracles of ``tests/_reference.py`` (Hypothesis, on the
CPU, null rows and null elements included), with FBGEMM where it is installed, with
numpy on a batch large enough for the parallel kernels, on every backend, and with the
CPU through the CUDA emulator.
"""

from __future__ import annotations

import operator

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.kernels import cuda

from .. import _reference as ref
from .._strategies import list_arrays, offsets_levels
from ..conftest import from_backend
from ..cuda_emu.emu import Emulator
from ..cuda_emu.fake_cupy import emulated_cupy
from ._helpers import (
    CAFFE2_OFFSETS,
    CAFFE2_VALUES,
    LATER,
    assert_bits,
    caffe2,
    check_jagged,
    cpu_and_emu,
    large_batch,
    name,
    on,
    raised_later,
    shares_offsets,
)


# ------------------------------------------------------------ jagged x dense elementwise
def test_jagged_dense_matches_fbgemm_example() -> None:
    # Computed with fbgemm-gpu-cpu 1.8.0 (torch.ops.fbgemm.*): x rows [1, 2, 3] and
    # [4, 5], dense [[10, 20], [30, 40]]; the third element of row 0 lies outside it.
    x = np.array([[1.0], [2.0], [3.0], [4.0], [5.0]])
    offs = [np.array([0, 3, 5])]
    y = np.array([[[10.0], [20.0]], [[30.0], [40.0]]])
    np.testing.assert_array_equal(
        asp.jagged_dense_elementwise_add(x, offs, y)[..., 0], [[11, 22], [34, 45]])
    product, product_offsets = asp.jagged_dense_elementwise_mul(x, offs, y)
    np.testing.assert_array_equal(product[:, 0], [10, 40, 0, 120, 200])
    assert len(product_offsets) == 1 and product_offsets[0] is offs[0]
    total, total_offsets = asp.jagged_dense_elementwise_add_jagged_output(x, offs, y)
    np.testing.assert_array_equal(total[:, 0], [11, 22, 3, 34, 45])
    assert total_offsets[0] is offs[0]


@pytest.mark.hypothesis
@given(st.data())
def test_jagged_dense_matches_reference(data: st.DataObject) -> None:
    lens, offs = data.draw(offsets_levels())
    levels = len(lens)
    extra = data.draw(st.integers(0, 2))  # values after the last row
    inner = data.draw(st.sampled_from([(), (2,)]))
    total = offs[-1][-1] + extra
    values = np.arange(1, 1 + total * int(np.prod(inner)), dtype=np.int64).reshape(
        (total,) + inner)
    extents = [data.draw(st.integers(0, 4)) for _ in range(levels)]
    dense_shape = (len(lens[0]),) + tuple(extents) + inner
    dense = (np.arange(int(np.prod(dense_shape)), dtype=np.int64) * 3 - 7).reshape(dense_shape)
    np_offs = [np.array(o, dtype=np.int32) for o in offs]
    zero = [0] * inner[0] if inner else 0
    for fn, op in ((asp.jagged_dense_elementwise_mul, operator.mul),
                   (asp.jagged_dense_elementwise_add_jagged_output, operator.add)):
        got, got_offs = fn(values, np_offs, dense)
        assert got.shape == values.shape
        assert all(a is b for a, b in zip(got_offs, np_offs, strict=True))
        assert got.tolist() == ref.jagged_dense_elementwise(values.tolist(), offs,
                                                            dense.tolist(), op, zero)
    got = asp.jagged_dense_elementwise_add(values, np_offs, dense)
    padded = ref.pad(ref.rows_of(values.tolist(), offs), extents, 0, zero)
    assert got.tolist() == (np.array(padded, dtype=np.int64).reshape(dense.shape)
                            + dense).tolist()


def _fill_null_elements(rows: list, levels: int, fill: object) -> list:
    """Null elements replaced by ``fill``; null rows (at any level) kept as None."""
    def walk(node: object, level: int) -> object:
        if node is None:
            return None
        if level == levels - 1:
            return [fill if x is None else x for x in node]  # type: ignore[attr-defined]
        return [walk(child, level + 1) for child in node]  # type: ignore[attr-defined]
    return [walk(row, 0) for row in rows]


def _jagged_dense_rows(rows: list, dense: list, levels: int, op: object) -> list:
    """Each non-null element ``op`` the dense value at its padded position (0 outside)."""
    def walk(node: object, d: object, level: int) -> object:
        if node is None:
            return None
        out = []
        for k, item in enumerate(node):  # type: ignore[arg-type]
            inside = d is not None and k < len(d)  # type: ignore[arg-type]
            sub = d[k] if inside else None  # type: ignore[index]
            if level < levels - 1:
                out.append(walk(item, sub, level + 1))
            else:
                out.append(None if item is None else op(item, sub if inside else 0))  # type: ignore[operator]
        return out
    return [walk(row, dense[i], 0) for i, row in enumerate(rows)]


@pytest.mark.hypothesis
@given(st.integers(1, 2).flatmap(lambda n: st.tuples(
    st.just(n), list_arrays(np.dtype(np.float64), levels=n, null_values=True))), st.data())
def test_jagged_dense_with_null_rows_and_elements(case: tuple[int, tuple[pa.Array, list]],
                                                  data: st.DataObject) -> None:
    levels, (arr, rows) = case
    extents = [data.draw(st.integers(0, 4)) for _ in range(levels)]
    shape = (len(rows), *extents)
    dense = (np.arange(int(np.prod(shape)), dtype=np.float64) * 0.5 - 3).reshape(shape)
    as_jagged = data.draw(st.booleans())
    x = asp.Jagged.from_arrow(arr) if as_jagged else arr
    for fn, op in ((asp.jagged_dense_elementwise_mul, operator.mul),
                   (asp.jagged_dense_elementwise_add_jagged_output, operator.add)):
        got = fn(x, None, dense)
        got_rows = got.to_list() if as_jagged else got.to_pylist()
        assert got_rows == _jagged_dense_rows(rows, dense.tolist(), levels, op)
        if not as_jagged:
            assert got.type == arr.type
    # The dense sum: null rows and null elements are padding (they add nothing).
    summed = asp.jagged_dense_elementwise_add(x, None, dense)
    padded = ref.pad(_fill_null_elements(rows, levels, 0.0), extents, 0.0, 0.0)
    np.testing.assert_array_equal(summed, np.array(padded, dtype=np.float64).reshape(shape)
                                  + dense)


def test_jagged_dense_jagged_and_arrow_inputs() -> None:
    j = asp.Jagged.from_list([[1.0, 2.0, 3.0], None, [4.0]])
    dense = np.array([[1.0, 10.0], [5.0, 5.0], [2.0, 2.0]])
    got = asp.jagged_dense_elementwise_mul(j, None, dense)
    assert isinstance(got, asp.Jagged) and got.to_list() == [[1.0, 20.0, 0.0], None, [8.0]]
    shares_offsets(got, j)
    arr = j.to_arrow()
    out = asp.jagged_dense_elementwise_add_jagged_output(arr, None, dense)
    assert out.type == arr.type and out.to_pylist() == [[2.0, 12.0, 3.0], None, [6.0]]
    # A null row counts as padding in the dense sum.
    np.testing.assert_array_equal(asp.jagged_dense_elementwise_add(j, None, dense),
                                  [[2.0, 12.0], [5.0, 5.0], [6.0, 2.0]])
    added = asp.jagged_dense_elementwise_add(j, None, dense, output="jagged")
    assert isinstance(added, asp.Jagged) and added.to_list() == [[2.0, 12.0, 3.0], None, [6.0]]
    # Arrow values and offsets: FBGEMM's (values, offsets), as Arrow arrays.
    flat, flat_offsets = asp.jagged_dense_elementwise_mul(
        pa.array([1, 2, 3]), [pa.array([0, 1, 3])], np.array([[2, 0], [3, 4]]))
    assert isinstance(flat, pa.Array) and flat.to_pylist() == [2, 6, 12]
    assert len(flat_offsets) == 1 and flat_offsets[0].to_pylist() == [0, 1, 3]
    mixed, _ = asp.jagged_dense_elementwise_mul(np.array([1, 2], np.int32), [[0, 2]],
                                                np.array([[0.5, 0.25]], np.float32))
    assert mixed.dtype == np.float64 and mixed.tolist() == [0.5, 0.5]


def test_add_defaults_to_fbgemms_dense_output() -> None:
    y = np.arange(12).reshape(3, 4)
    dense = asp.jagged_dense_elementwise_add(CAFFE2_VALUES, [CAFFE2_OFFSETS], y)
    assert dense.shape == (3, 4)
    np.testing.assert_array_equal(
        dense, asp.jagged_dense_elementwise_add(CAFFE2_VALUES, [CAFFE2_OFFSETS], y,
                                                output="dense"))
    got, got_offsets = asp.jagged_dense_elementwise_add(CAFFE2_VALUES, [CAFFE2_OFFSETS], y,
                                                        output="jagged")
    want, _ = asp.jagged_dense_elementwise_add_jagged_output(CAFFE2_VALUES, [CAFFE2_OFFSETS], y)
    np.testing.assert_array_equal(got, want)
    assert got_offsets[0] is CAFFE2_OFFSETS


def test_float16_stays_float16_as_in_fbgemm() -> None:
    # The kernels compute in float32; the FBGEMM-named functions round back once.
    j = asp.Jagged.from_list([[1.0, 2.0], None, [0.5]], dtype=np.float16)
    dense = np.full((3, 2), 3.0, np.float16)
    product = asp.jagged_dense_elementwise_mul(j, None, dense)
    assert product.values.dtype == np.float16 and product.to_list() == [[3.0, 6.0], None, [1.5]]
    assert asp.jagged_dense_elementwise_add(j, None, dense).dtype == np.float16
    assert asp.jagged_dense_elementwise_add_jagged_output(j, None, dense).values.dtype == \
        np.float16
    vectors = asp.Jagged(np.ones((2, 2), np.float16), [0, 2])
    bmm = asp.jagged_dense_bmm(vectors, None, np.ones((1, 2, 1), np.float16))
    assert bmm.values.dtype == np.float16 and bmm.to_list() == [[[2.0], [2.0]]]
    assert asp.jagged_jagged_bmm(vectors, vectors).dtype == np.float16
    # float16 with a wider operand promotes as numpy does
    assert asp.jagged_dense_elementwise_add(j, None, dense.astype(np.float32)).dtype == \
        np.float32


def test_jagged_dense_errors() -> None:
    with pytest.raises(ValueError, match=r"jagged_dense_elementwise_mul: dense must have shape "
                                         r"\[3, L0\] for 1 jagged level\(s\) and values of shape "
                                         r"\(9,\), got \(3, 2, 2\)"):
        asp.jagged_dense_elementwise_mul(CAFFE2_VALUES, [CAFFE2_OFFSETS], np.ones((3, 2, 2)))
    with pytest.raises(ValueError, match=r"dense must have shape \[3, L0\].* got \(2, 4\)"):
        asp.jagged_dense_elementwise_add(CAFFE2_VALUES, [CAFFE2_OFFSETS], np.ones((2, 4)))
    with pytest.raises(ValueError, match="jagged_dense_elementwise_add: output must be "
                                         "'dense' or 'jagged', got 'x'"):
        asp.jagged_dense_elementwise_add(CAFFE2_VALUES, [CAFFE2_OFFSETS], np.ones((3, 4)),
                                         output="x")
    with pytest.raises(TypeError, match="jagged_dense_elementwise_add_jagged_output: values must "
                                        "be integers or floats, got bool and bool"):
        asp.jagged_dense_elementwise_add_jagged_output(np.ones(9, bool), [CAFFE2_OFFSETS],
                                                       np.ones((3, 4), bool))
    with pytest.raises(TypeError, match="jagged_dense_elementwise_mul: offsets must be None when "
                                        "values is a Jagged"):
        asp.jagged_dense_elementwise_mul(caffe2(), [CAFFE2_OFFSETS], np.ones((3, 4)))
    with pytest.raises(TypeError, match="jagged_dense_elementwise_mul: offsets are needed"):
        asp.jagged_dense_elementwise_mul(CAFFE2_VALUES, None, np.ones((3, 4)))
    with pytest.raises(ValueError, match=r"offsets\[0\] exceed the number of values 9"):
        asp.jagged_dense_elementwise_mul(CAFFE2_VALUES, [[0, 10]], np.ones((1, 4)))


def test_jagged_dense_on_every_backend(backend: str) -> None:
    outer, inner = np.array([0, 2, 2, 3]), np.array([1, 3, 3, 7, 8])  # values 0 and 8 unread
    values = np.arange(1, 19, dtype=np.int16).reshape(9, 2)
    dense = (np.arange(3 * 2 * 3 * 2, dtype=np.int32) * 3 - 7).reshape(3, 2, 3, 2)
    offs_list = [outer.tolist(), inner.tolist()]
    dv, do, di, dd = on(backend, values, outer, inner, dense)
    for fn, kwargs, op in ((asp.jagged_dense_elementwise_mul, {}, operator.mul),
                           (asp.jagged_dense_elementwise_add, {"output": "jagged"}, operator.add),
                           (asp.jagged_dense_elementwise_add_jagged_output, {}, operator.add)):
        out, out_offsets = fn(dv, [do, di], dd, **kwargs)
        assert out_offsets[0] is do and out_offsets[1] is di
        got = from_backend(out, backend)
        assert got.dtype == np.int32
        assert got.tolist() == ref.jagged_dense_elementwise(values.tolist(), offs_list,
                                                            dense.tolist(), op, [0, 0])
    got = from_backend(asp.jagged_dense_elementwise_add(dv, [do, di], dd), backend)
    padded = ref.pad(ref.rows_of(values.tolist(), offs_list), [2, 3], 0, [0, 0])
    assert got.tolist() == (np.array(padded) + dense).tolist()
    j = on(backend, asp.Jagged.from_list([[1.0, 2.0, 3.0], None, [4.0, None]]))
    small = on(backend, np.array([[1.0, 10.0], [5.0, 5.0], [2.0, 2.0]]))
    check_jagged(asp.jagged_dense_elementwise_mul(j, None, small), backend,
                 [[1.0, 20.0, 0.0], None, [8.0, None]])
    check_jagged(asp.jagged_dense_elementwise_add(j, None, small, output="jagged"), backend,
                 [[2.0, 12.0, 3.0], None, [6.0, None]])
    np.testing.assert_array_equal(
        from_backend(asp.jagged_dense_elementwise_add(j, None, small), backend),
        [[2.0, 12.0], [5.0, 5.0], [6.0, 2.0]])  # null rows and elements are padding
    if backend != "cpu":
        cuda.check_errors("test")


def test_jagged_dense_functions_match_cpu(cuda_emu: Emulator, offsets_dtype: np.dtype) -> None:
    rng = np.random.default_rng(8)
    outer = np.array([0, 2, 2, 5], offsets_dtype)
    inner = np.array([0, 3, 3, 4, 9, 10], offsets_dtype)
    values = rng.integers(-50, 50, size=(10, 2)).astype(np.int16)
    dense = rng.integers(-50, 50, size=(3, 3, 6, 2)).astype(np.int32)
    for fn, kwargs in ((asp.jagged_dense_elementwise_add, {}),
                       (asp.jagged_dense_elementwise_add, {"output": "jagged"}),
                       (asp.jagged_dense_elementwise_add_jagged_output, {}),
                       (asp.jagged_dense_elementwise_mul, {})):
        expected, got, launches = cpu_and_emu(cuda_emu, fn, values, [outer, inner], dense,
                                              **kwargs)
        dense_out = fn is asp.jagged_dense_elementwise_add and not kwargs
        if not dense_out:  # (values, offsets)
            (expected, _), (got, _) = expected, got
        assert_bits(got, expected)
        kernel = "jagged_dense_dense_out" if dense_out else "jagged_dense_jagged_out"
        assert launches[-1] == name(kernel, np.int32)


# ----------------------------------------------------------------------------------- bmm
@pytest.mark.hypothesis
@given(st.data())
def test_bmm_match_reference(data: st.DataObject) -> None:
    lens = data.draw(st.lists(st.integers(0, 4), max_size=6))
    offs = np.array(ref.lengths_to_offsets(lens))
    k, m, n = data.draw(st.integers(1, 3)), data.draw(st.integers(0, 3)), \
        data.draw(st.integers(0, 3))
    total = int(offs[-1])
    x = np.arange(total * k, dtype=np.int64).reshape(total, k) % 7 - 3
    y = np.arange(total * n, dtype=np.int64).reshape(total, n) % 5 - 2
    w = np.arange(len(lens) * k * m, dtype=np.int64).reshape(len(lens), k, m) % 3 - 1
    max_length = data.draw(st.one_of(st.none(), st.integers(0, 4)))
    rows_x = [x[offs[i]:offs[i + 1]].tolist() for i in range(len(lens))]
    rows_y = [y[offs[i]:offs[i + 1]].tolist() for i in range(len(lens))]
    got, got_offs = asp.jagged_dense_bmm(x, offs, w, max_length)
    assert got_offs is offs
    expected = ref.jagged_dense_bmm(rows_x, w.tolist(), max_length)
    assert got.shape == (total, m)
    assert [got[offs[i]:offs[i + 1]].tolist() for i in range(len(lens))] == expected
    got2 = asp.jagged_jagged_bmm(x, y, offs, max_length)
    assert got2.shape == (len(lens), k, n)
    assert got2.tolist() == ref.jagged_jagged_bmm(rows_x, rows_y, k, n, max_length)


@st.composite
def vector_rows(draw: st.DrawFn, width: int, num_rows: int,
                lengths: list[int] | None = None) -> list:
    """``num_rows`` rows (None = null) of vectors of ``width`` small ints (None = null vector)."""
    vec = st.one_of(st.none(), st.lists(st.integers(-3, 3).map(float), min_size=width,
                                        max_size=width))
    rows = []
    for i in range(num_rows):
        n = draw(st.integers(0, 4)) if lengths is None else lengths[i]
        rows.append(draw(st.one_of(st.none(), st.lists(vec, min_size=n, max_size=n))))
    return rows


def _vector_array(rows: list, width: int, sliced: bool) -> pa.Array:
    t = pa.list_(pa.list_(pa.float64(), width))
    if not sliced:
        return pa.array(rows, t)
    pad_row = [[9.0] * width]
    return pa.array([pad_row] + rows + [pad_row], t).slice(1, len(rows))


@pytest.mark.hypothesis
@given(st.data())
def test_bmm_with_null_rows_and_elements(data: st.DataObject) -> None:
    k, m = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    n = data.draw(st.integers(0, 2))
    num_rows = data.draw(st.integers(0, 5))
    xrows = data.draw(vector_rows(k, num_rows))
    lengths = [0 if r is None else len(r) for r in xrows]
    yrows = data.draw(vector_rows(n, num_rows, lengths))
    x = _vector_array(xrows, k, data.draw(st.booleans()))
    y = _vector_array(yrows, n, data.draw(st.booleans()))
    w = (np.arange(num_rows * k * m, dtype=np.float64) % 5 - 2).reshape(num_rows, k, m)
    max_length = data.draw(st.one_of(st.none(), st.integers(0, 4)))
    limit = 10 if max_length is None else max_length
    got = asp.jagged_dense_bmm(x, None, w, max_length)
    want = [None if row is None else
            [None if vec is None else
             [sum(vec[i] * w[b, i, c] for i in range(k)) if e < limit else 0.0
              for c in range(m)]
             for e, vec in enumerate(row)]
            for b, row in enumerate(xrows)]
    assert got.type == pa.list_(pa.list_(pa.float64(), m)) and got.to_pylist() == want
    as_jagged = data.draw(st.booleans())
    jx = asp.Jagged.from_arrow(x) if as_jagged else x
    jy = asp.Jagged.from_arrow(y) if as_jagged else y
    out = asp.jagged_jagged_bmm(jx, jy, None, max_length)
    expected = np.zeros((num_rows, k, n))
    for b, (xr, yr) in enumerate(zip(xrows, yrows, strict=True)):
        if xr is None or yr is None:
            continue
        for e, (xv, yv) in enumerate(zip(xr, yr, strict=True)):
            if e < limit and xv is not None and yv is not None:
                expected[b] += np.outer(xv, yv)
    np.testing.assert_array_equal(out, expected)


def test_bmm_jagged_inputs_and_nulls() -> None:
    x = asp.Jagged(np.ones((4, 2)), [0, 1, 1, 4], validity=[True, True, False])
    w = np.stack([np.eye(2), np.eye(2), np.eye(2) * 5])
    got = asp.jagged_dense_bmm(x, None, w)
    assert isinstance(got, asp.Jagged) and got.validity is x.validity
    np.testing.assert_array_equal(got.values, [[1, 1], [0, 0], [0, 0], [0, 0]])
    y = asp.Jagged(np.ones((6, 3)), [2, 3, 3, 6])  # same rows, offsets start at 2
    out = asp.jagged_jagged_bmm(x, y)
    np.testing.assert_array_equal(out, [np.ones((2, 3)), np.zeros((2, 3)), np.zeros((2, 3))])
    arr = pa.array([[[1.0, 2.0]], [[3.0, 4.0], [5.0, 6.0]]], pa.list_(pa.list_(pa.float64(), 2)))
    res = asp.jagged_dense_bmm(arr, None, np.stack([np.eye(2), 2 * np.eye(2)]))
    assert res.type == arr.type and res.to_pylist() == [[[1, 2]], [[6, 8], [10, 12]]]


def hidden_null_values() -> pa.Array:
    """``[[1.0, None, 3.0]]`` whose null slot holds 999 (Arrow leaves it unspecified)."""
    data = np.array([1.0, 999.0, 3.0])
    valid = pa.array([True, False, True])
    vals = pa.Array.from_buffers(pa.float64(), 3, [valid.buffers()[1], pa.py_buffer(data)])
    return pa.ListArray.from_arrays(pa.array([0, 3], pa.int32()), vals)


def test_issue4_null_elements_never_reach_dense_or_bmm_results() -> None:
    arr = hidden_null_values()
    dense = asp.jagged_dense_elementwise_add(arr, None, np.full((1, 3), 0.5), output="dense")
    np.testing.assert_array_equal(dense, [[1.5, 0.5, 3.5]])  # the null counts as padding
    jj = asp.Jagged(np.array([[1.0], [999.0], [3.0]]), [0, 3],
                    values_validity=np.array([True, False, True]))
    got = asp.jagged_dense_bmm(jj, None, np.ones((1, 1, 1)))
    assert got.to_list() == [[[1.0], None, [3.0]]]
    assert got.values[1, 0] == 0.0
    ones = asp.Jagged(np.ones((3, 1)), [0, 3])
    np.testing.assert_array_equal(asp.jagged_jagged_bmm(jj, ones), [[[4.0]]])
    np.testing.assert_array_equal(asp.jagged_jagged_bmm(ones, jj), [[[4.0]]])
    fsl = pa.ListArray.from_arrays(
        pa.array([0, 3], pa.int32()),
        pa.FixedSizeListArray.from_arrays(pa.array([1.0, 999.0, 3.0]), 1,
                                          mask=pa.array([False, True, False])))
    np.testing.assert_array_equal(asp.jagged_jagged_bmm(fsl, fsl), [[[10.0]]])
    assert asp.jagged_dense_bmm(fsl, None, 2 * np.ones((1, 1, 1))).to_pylist() == \
        [[[2.0], None, [6.0]]]


def test_bmm_errors() -> None:
    x = np.ones((3, 2))
    with pytest.raises(ValueError, match=r"jagged_dense_bmm: dense must have shape \[2, 2, N\], "
                                         r"got \(2, 3, 4\)"):
        asp.jagged_dense_bmm(x, [0, 1, 3], np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match=r"jagged_dense_bmm: values must be 2-D \[total, K\]"):
        asp.jagged_dense_bmm(np.ones(3), [0, 3], np.ones((1, 1, 1)))
    with pytest.raises(TypeError, match="jagged_dense_bmm: values must be one jagged level"):
        asp.jagged_dense_bmm(asp.Jagged.from_list([[[1.0]]]), None, np.ones((1, 1, 1)))
    with pytest.raises(ValueError, match="jagged_jagged_bmm: y has 2 values but x has 3"):
        asp.jagged_jagged_bmm(x, np.ones((2, 2)), [0, 3])
    with pytest.raises(ValueError, match=r"jagged_jagged_bmm: y rows differ in length from "
                                         r"x's \(first at position 0: 2 != 1\)"):
        asp.jagged_jagged_bmm(asp.Jagged(x, [0, 1, 3]), asp.Jagged(x, [0, 2, 3]))
    with pytest.raises(ValueError, match="jagged_jagged_bmm: y has 1 rows but x has 2"):
        asp.jagged_jagged_bmm(asp.Jagged(x, [0, 1, 3]), asp.Jagged(x, [0, 3]))
    with pytest.raises(TypeError, match="jagged_jagged_bmm: values must be integers or floats, "
                                        "got bool and bool"):
        asp.jagged_jagged_bmm(np.ones((3, 2), bool), np.ones((3, 2), bool), [0, 3])
    with pytest.raises(ValueError, match="jagged_jagged_bmm: x and y values must be 2-D"):
        asp.jagged_jagged_bmm(np.ones(3), np.ones(3), [0, 3])


def test_bmm_on_every_backend(backend: str) -> None:
    rng = np.random.default_rng(4)
    offs = np.array([2, 4, 4, 9], np.int32)
    x = rng.integers(-5, 5, size=(10, 3)).astype(np.int32)
    y = rng.integers(-5, 5, size=(10, 2)).astype(np.int64)
    w = rng.integers(-5, 5, size=(3, 3, 4)).astype(np.int64)
    rows_x = [x[offs[i]:offs[i + 1]].tolist() for i in range(3)]
    rows_y = [y[offs[i]:offs[i + 1]].tolist() for i in range(3)]
    dx, dy, dw, do = on(backend, x, y, w, offs)
    out, out_offsets = asp.jagged_dense_bmm(dx, do, dw, max_length=4)
    assert out_offsets is do
    got = from_backend(out, backend)
    assert got.dtype == np.int64 and not got[:2].any()  # no row addresses the first two
    assert [got[offs[i]:offs[i + 1]].tolist() for i in range(3)] == \
        ref.jagged_dense_bmm(rows_x, w.tolist(), 4)
    got = from_backend(asp.jagged_jagged_bmm(dx, dy, do, max_length=3), backend)
    assert got.tolist() == ref.jagged_jagged_bmm(rows_x, rows_y, 3, 2, 3)
    jx = on(backend, asp.Jagged(np.ones((4, 2)), np.array([0, 1, 1, 4]),
                                np.array([True, True, False])))
    jy = on(backend, asp.Jagged(np.ones((6, 3)), np.array([2, 3, 3, 6])))  # starts elsewhere
    np.testing.assert_array_equal(from_backend(asp.jagged_jagged_bmm(jx, jy), backend),
                                  [np.ones((2, 3)), np.zeros((2, 3)), np.zeros((2, 3))])
    eye = on(backend, np.stack([np.eye(2), np.eye(2), np.eye(2) * 5]))
    check_jagged(asp.jagged_dense_bmm(jx, None, eye), backend, [[[1.0, 1.0]], [], None])
    if backend != "cpu":
        cuda.check_errors("test")


def test_device_checks_of_the_dense_functions() -> None:
    with emulated_cupy() as cp:
        x = asp.Jagged(np.ones((3, 2)), np.array([0, 1, 3])).to_device("cuda")
        y = asp.Jagged(np.ones((3, 2)), np.array([0, 2, 3])).to_device("cuda")
        cp.stats.reset()
        asp.jagged_jagged_bmm(x, y)
        assert cp.stats.syncs == 0
        with pytest.raises(ValueError, match="^jagged_jagged_bmm: rows differ in length between "
                           "the operands" + LATER.format(0)):
            raised_later(cp)
        with pytest.raises(TypeError, match=r"^jagged_dense_elementwise_mul: dense is a host "
                           r"\(numpy/Arrow\) array but values is a device"):
            asp.jagged_dense_elementwise_mul(x, None, np.ones((2, 2)))
        with pytest.raises(ValueError, match=r"dense must have shape \[2, L0, 2\]"):
            asp.jagged_dense_elementwise_mul(x, None, cp.asarray(np.ones((2, 2))))


def test_bmm_functions_match_cpu(cuda_emu: Emulator) -> None:
    rng = np.random.default_rng(10)
    offsets = np.array([2, 4, 4, 9], np.int32)
    x = rng.standard_normal((10, 3)).astype(np.float32)
    dense = rng.standard_normal((3, 3, 4))
    (expected, _), (got, _), launches = cpu_and_emu(cuda_emu, asp.jagged_dense_bmm, x, offsets,
                                                    dense, max_length=4)
    assert_bits(got, expected)
    assert launches == ["jagged_dense_bmm<double>"]
    y = rng.integers(-9, 9, size=(10, 2)).astype(np.int64)
    expected, got, launches = cpu_and_emu(cuda_emu, asp.jagged_jagged_bmm, x, y, offsets)
    assert_bits(got, expected)
    assert launches == ["jagged_jagged_bmm<double>"]


# ------------------------- on large inputs (the parallel twins); FBGEMM: test_fbgemm_names.py
def test_parallel_paths_match_numpy() -> None:
    b = large_batch()
    lengths, offs, values, rows, pos = b.lengths, b.offs, b.values, b.rows, b.pos
    # jagged x dense and bmm
    y = b.y
    padded_x = np.zeros((len(lengths), 8))
    padded_x[rows[pos < 8], pos[pos < 8]] = values[pos < 8]
    got_mul, _ = asp.jagged_dense_elementwise_mul(values, [offs], y)
    np.testing.assert_array_equal(got_mul, np.where(pos < 8, values * y[rows, np.minimum(pos, 7)],
                                                    0.0))
    np.testing.assert_array_equal(asp.jagged_dense_elementwise_add(values, [offs], y),
                                  padded_x + y)
    x2, w = b.x2, b.w
    np.testing.assert_allclose(asp.jagged_dense_bmm(x2, offs, w)[0],
                               np.einsum("nk,nkm->nm", x2, w[rows]), rtol=1e-10, atol=1e-12)
    y2 = b.y2
    want_jj = np.zeros((len(lengths), 4, 2))
    np.add.at(want_jj, rows, np.einsum("nm,nc->nmc", x2, y2))
    np.testing.assert_allclose(asp.jagged_jagged_bmm(x2, y2, offs), want_jj, rtol=1e-9,
                               atol=1e-12)
