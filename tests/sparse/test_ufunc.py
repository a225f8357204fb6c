"""numpy ufuncs and operators on sparse tensors, against numpy on the dense arrays."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseTypeError, ArrowSparseValueError

from ._helpers import FORMATS, assert_dense_equal, coo_tensors, host, make, on, random_dense

#: Unary ufuncs with f(0) == 0, each with the values it is defined on.
ZERO_PRESERVING = [np.sin, np.tanh, np.abs, np.negative, np.square, np.expm1, np.sign,
                   np.floor, np.arcsinh, np.isnan]
#: Binary ufuncs with f(0, 0) == 0 whose result keeps the union of the patterns.
UNION = [np.add, np.subtract, np.maximum, np.minimum, np.logical_or]


def stored(x: Any) -> set[tuple[int, ...]]:
    """The coordinates a tensor stores."""
    coo = x.to_coo().canonical()
    return set(map(tuple, np.asarray(coo.indices).T.tolist()))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("ufunc", ZERO_PRESERVING, ids=lambda u: u.__name__)
def test_unary_zero_preserving_ufuncs_keep_the_format(fmt: str, ufunc: np.ufunc,
                                                       backend: str) -> None:
    dense = random_dense((4, 5), np.float64, seed=1)
    x = make(fmt, dense, backend=backend)
    got = ufunc(x)
    assert got.format == fmt
    assert_dense_equal(got, ufunc(dense), backend)
    assert got.nnz == x.nnz  # the same pattern: explicit zeros stay stored


@pytest.mark.parametrize("ufunc", [np.sqrt, np.log1p, np.arcsin])
def test_ufuncs_that_keep_zero_where_defined(ufunc: np.ufunc) -> None:
    dense = np.abs(random_dense((3, 4), np.float64, seed=2)) / 10
    np.testing.assert_allclose(ufunc(asp.SparseCSR.from_dense(dense)).to_dense(), ufunc(dense))


@pytest.mark.hypothesis
@given(pair=coo_tensors(max_ndim=3))
def test_unary_sums_duplicates_first(pair: tuple[asp.SparseCOO, np.ndarray]) -> None:
    coo, dense = pair
    got = np.square(coo)  # square(a) + square(b) is not square(a + b)
    np.testing.assert_array_equal(got.to_dense(), np.square(dense))


@pytest.mark.parametrize("ufunc", [np.cos, np.exp, np.reciprocal, np.logical_not])
def test_ufuncs_with_nonzero_at_zero_raise_and_say_to_densify(ufunc: np.ufunc) -> None:
    x = asp.SparseCOO.from_dense(np.array([[0.0, 1.0], [2.0, 0.0]]))
    with pytest.raises(ArrowSparseValueError, match=rf"numpy.{ufunc.__name__}: f\(0\) is not "
                       r"0.*densify explicitly"):
        ufunc(x)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(ufunc(x.to_dense()), ufunc(np.array([[0.0, 1], [2, 0]])))


@pytest.mark.parametrize("fmt", FORMATS)
def test_scalars(fmt: str, backend: str) -> None:
    dense = random_dense((4, 5), np.float64, seed=3)
    x = make(fmt, dense, backend=backend)
    for got, want in [(x * 3, dense * 3), (3 * x, dense * 3), (x / 4, dense / 4),
                      (x ** 2, dense ** 2), (-x, -dense), (abs(x), abs(dense)),
                      (np.multiply(x, 0.5), dense * 0.5), (np.power(x, 3), dense ** 3)]:
        assert got.format == fmt
        assert_dense_equal(got, want, backend)
    for bad in (lambda: x + 1, lambda: 1 - x, lambda: x / 0, lambda: x ** 0):
        with pytest.raises(ArrowSparseValueError, match="would be dense"):
            bad()


@pytest.mark.hypothesis
@pytest.mark.parametrize("ufunc", [*UNION, np.multiply, np.logical_and],
                         ids=lambda u: u.__name__)
@given(data=st.data())
def test_two_sparse_tensors_match_numpy(ufunc: np.ufunc, data: st.DataObject) -> None:
    a, da = data.draw(coo_tensors(max_ndim=3))
    shape = a.shape
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    db = np.where(rng.random(shape) < 0.4, rng.integers(-3, 4, size=shape), 0).astype(da.dtype)
    b = asp.SparseCOO.from_dense(db)
    got = ufunc(a, b)
    want = ufunc(da, db)
    assert isinstance(got, asp.SparseCOO) and got.is_canonical
    np.testing.assert_array_equal(got.to_dense(), want)
    pattern_a, pattern_b = stored(a), stored(b)
    expected = pattern_a & pattern_b if ufunc in (np.multiply, np.logical_and) else \
        pattern_a | pattern_b
    assert stored(got) == expected


@pytest.mark.parametrize("fmt", FORMATS)
def test_operators_between_sparse_tensors_keep_the_left_format(fmt: str, backend: str) -> None:
    da = random_dense((4, 5), np.float32, seed=4)
    db = random_dense((4, 5), np.float32, seed=5)
    a, b = make(fmt, da, backend=backend), make("coo", db, backend=backend)
    for got, want in [(a + b, da + db), (a - b, da - db), (a * b, da * db),
                      (np.maximum(a, b), np.maximum(da, db))]:
        assert got.format == fmt
        assert_dense_equal(got, want, backend)


def test_sparse_and_dense_arrays(backend: str) -> None:
    dense = random_dense((3, 4), np.float64, seed=6)
    x = make("csr", dense, backend=backend)
    row = np.arange(4.0)
    scaled = on(row, backend) * x  # multiply keeps the pattern
    assert isinstance(scaled, asp.SparseCSR) and scaled.nnz == x.nnz
    assert_dense_equal(scaled, row * dense, backend)
    np.testing.assert_array_equal(host(x + on(row, backend), backend), dense + row)
    np.testing.assert_array_equal(host(on(row, backend) - x, backend), row - dense)
    np.testing.assert_array_equal(host(on(np.ones(3), backend) @ x, backend), dense.sum(0))


def test_errors() -> None:
    a = asp.SparseCOO.from_dense(np.eye(2))
    with pytest.raises(ArrowSparseValueError, match=r"shapes \(2, 2\) and \(3, 3\)"):
        a + asp.SparseCOO.from_dense(np.eye(3))
    with pytest.raises(ArrowSparseValueError, match=r"numpy.divide: f\(0, 0\) is not 0"):
        a / a
    with pytest.raises(ArrowSparseTypeError, match=r"numpy.add.reduce: not supported"):
        np.add.reduce(a)
    with pytest.raises(ArrowSparseTypeError, match="out= is not supported"):
        np.sin(a, out=np.zeros((2, 2)))
    with pytest.raises(ArrowSparseTypeError, match="cannot combine a SparseCOO with str"):
        a + "x"
    with pytest.raises(ArrowSparseTypeError, match="numpy.invert: does not take float64"):
        np.invert(a)
