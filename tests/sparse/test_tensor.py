"""Tests of what every sparse format does (the :class:`SparseTensor` interface).

Conversions between the formats, the canonical form, ``sum``, ``multiply``, ``matmul``
through CSR, ``transpose``, reprs, dtypes and errors, moving tensors between devices,
and every operation that reaches a sparse kernel on the CUDA kernels (emulated) against
the CPU. Tests taking ``backend`` also run with the CUDA kernels on the emulator and on
device arrays of the stand-in CuPy (``tests/conftest.py``): tensors are built on the
backend's device and every result is checked to come back from there.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseError
from arrow_sparse.kernels import cuda
from arrow_sparse.sparse import SparseTensor
from tests._matrix import pairwise_parametrize
from tests.cuda_emu import fake_cupy
from tests.cuda_emu.emu import emulated
from tests.sparse._helpers import (
    AT_ONCE,
    DEFERRED,
    DTYPES,
    FORMATS,
    POST_COORDS,
    POST_MATRIX,
    POST_SHAPE,
    POST_TENSOR_VALUES,
    assert_dense_equal,
    assert_same,
    compressed,
    convert,
    coo_tensors,
    every_format,
    flatten,
    host,
    make,
    on,
    orders,
    post_tensor,
    random_dense,
    values_of,
)


# --------------------------------------------------------------------------- conversions
@pairwise_parametrize("src,dst,dtype", FORMATS, FORMATS, DTYPES)
def test_conversion_every_pair_2d(src: str, dst: str, dtype: Any, backend: str) -> None:
    dense = random_dense((5, 7), dtype)
    dense[2] = 0  # an empty row
    dense[:, 4] = 0  # an empty column
    for src_order in ([(0, 1), (1, 0)] if src == "csf" else [None]):
        x = make(src, dense, src_order, backend)
        for dst_order in ([None, (0, 1), (1, 0)] if dst == "csf" else [None]):
            y = convert(x, dst, dst_order)
            assert y.format == dst
            assert y.dtype == np.dtype(dtype)
            assert_dense_equal(y, dense, backend)
            # COO keeps the source's stored order (column-major from CSC).
            row_major = src in ("coo", "csr") or src_order == (0, 1)
            assert y.is_canonical == (dst != "coo" or row_major)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(4,), (3, 4, 5), (2, 3, 1, 4), (0, 3), (2, 0, 3)])
def test_conversion_nd_coo_csf(shape: tuple[int, ...], dtype: Any, backend: str) -> None:
    dense = random_dense(shape, dtype, seed=len(shape))
    coo = make("coo", dense, backend=backend)
    assert_dense_equal(coo, dense, backend)
    for order in itertools.permutations(range(len(shape))):
        csf = coo.to_csf(order)
        assert_dense_equal(csf, dense, backend)
        assert_dense_equal(make("csf", dense, order, backend), dense, backend)
        assert_dense_equal(csf.to_csf(tuple(reversed(order))), dense, backend)
        assert host(csf.to_coo().canonical(), backend).indices.tolist() == \
            host(coo, backend).indices.tolist()


def test_conversions_keep_duplicates_and_canonical_sums_them(backend: str) -> None:
    rows, cols = [1, 0, 1, 1, 0], [2, 0, 2, 0, 0]
    coo = on(asp.SparseCOO([rows, cols], np.array([1, 2, 3, 4, 5]), (2, 3)), backend)
    dense = np.zeros((2, 3), dtype=np.int64)
    np.add.at(dense, (rows, cols), [1, 2, 3, 4, 5])
    assert_dense_equal(coo, dense, backend)
    for fmt in FORMATS:
        y = convert(coo, fmt)
        assert y.nnz == 5
        assert not y.is_canonical
        assert_dense_equal(y, dense, backend)
        c = y.canonical()
        assert c.is_canonical
        assert c.nnz == 3
        assert_dense_equal(c, dense, backend)
        assert c.canonical() is c
        assert_dense_equal(y.sum_duplicates(), dense, backend)
    assert host(coo.canonical(), backend).indices.tolist() == [[0, 1, 1], [0, 0, 2]]
    assert host(coo.canonical(), backend).values.tolist() == [7, 4, 4]
    three = on(asp.SparseCOO([[1, 0, 1, 1], [0, 0, 0, 2], [3, 1, 3, 3]],
                             np.array([True, False, False, True]), (2, 3, 4)), backend)
    got = host(three.canonical(), backend)
    assert got.indices.tolist() == [[0, 1, 1], [0, 0, 2], [1, 3, 3]]
    assert got.values.tolist() == [False, True, True]  # logical or of each run


def test_conversions_are_stable_for_duplicates(backend: str) -> None:
    # Repeated coordinates keep their input order, so sums are deterministic.
    coo = on(asp.SparseCOO([[1, 0, 1]], np.array([0.1, 5.0, 0.2]), (2,)), backend)
    assert host(coo.to_csf(), backend).values.tolist() == [5.0, 0.1, 0.2]
    pairs = on(asp.SparseCOO([[1, 0, 1], [2, 0, 2]], np.array([0.1, 5.0, 0.2]), (2, 3)), backend)
    for fmt in ("csr", "csc", "csf"):
        assert host(convert(pairs, fmt), backend).values.tolist() == [5.0, 0.1, 0.2]


def test_from_dense_counts_nan_as_stored(backend: str) -> None:
    dense = np.array([[0.0, np.nan], [1.0, 0.0]])
    for fmt in FORMATS:
        x = make(fmt, dense, backend=backend)
        assert x.nnz == 2
        np.testing.assert_array_equal(host(x.to_dense(), backend), dense)


def test_empty_and_all_zero_tensors(backend: str) -> None:
    for shape in [(0,), (3,), (0, 0), (2, 3), (2, 0, 4)]:
        dense = np.zeros(shape)
        for fmt in FORMATS if len(shape) == 2 else ["coo", "csf"]:
            x = make(fmt, dense, backend=backend)
            assert x.nnz == 0
            assert_dense_equal(x, dense, backend)
            for dst in FORMATS if len(shape) == 2 else ["coo", "csf"]:
                assert_dense_equal(convert(x, dst), dense, backend)
            assert host(x.sum(), backend) == 0


def test_from_methods_match_to_methods() -> None:
    csr = asp.SparseCSR.from_dense(POST_MATRIX)
    coo, csc, csf = csr.to_coo(), csr.to_csc(), csr.to_csf()
    for cls, fmt in [(asp.SparseCOO, "coo"), (asp.SparseCSR, "csr"), (asp.SparseCSC, "csc"),
                     (asp.SparseCSF, "csf")]:
        for name, src in [("coo", coo), ("csr", csr), ("csc", csc), ("csf", csf)]:
            y = getattr(cls, f"from_{name}")(src)
            assert y.format == fmt
            assert_dense_equal(y, POST_MATRIX)
    with pytest.raises(TypeError,
                       match=r"^SparseCSR.from_coo: expected a SparseCOO, got SparseCSC"):
        asp.SparseCSR.from_coo(csc)
    with pytest.raises(TypeError, match=r"^SparseCOO.from_csf: expected a SparseCSF, got ndarray"):
        asp.SparseCOO.from_csf(POST_MATRIX)  # type: ignore[arg-type]


def test_conversion_of_non_2d_to_matrix_raises() -> None:
    coo = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE)
    # CSR compresses the first dimension of an N-d tensor (tests/sparse/test_csr_nd.py);
    # a 1-d tensor has nothing to keep per entry
    line = asp.SparseCOO([[0, 2]], np.array([1.0, 2.0]), (3,))
    with pytest.raises(ValueError, match=r"^SparseCOO.to_csr: needs a 2-d tensor, got shape"):
        line.to_csr()
    with pytest.raises(ValueError, match=r"^SparseCSF.to_csr: needs a 2-d tensor"):
        line.to_csf().to_csr()
    with pytest.raises(ValueError, match=r"^SparseCOO.to_csc: needs a 2-d tensor"):
        coo.to_csc()
    with pytest.raises(ValueError, match=r"^SparseCSF.to_csc: needs a 2-d tensor"):
        coo.to_csf().to_csc()


def _lines_sorted_stably(ptr: np.ndarray, idx: np.ndarray, order: np.ndarray) -> bool:
    """Every line's indices non-decreasing, equal ones in input order (``order``)."""
    line = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    return bool((np.lexsort((order, idx, line)) == np.arange(len(idx))).all())


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_large_conversions_match_scipy(threads: int, index_dtype: Any) -> None:
    # big enough for the chunked (parallel) counting sort and line sort; empty rows,
    # duplicates and a few lines longer than the rank-sort cutoff
    numba = pytest.importorskip("numba")
    scipy_sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(16)
    n, shape = 300_000, (40_000, 7_000)
    rows = np.concatenate([rng.integers(0, shape[0] // 2, n - 400), np.full(400, 7)])
    cols = rng.integers(0, shape[1], n)
    order = rng.permutation(n)
    rows, cols = rows[order].astype(index_dtype), cols[order].astype(index_dtype)
    position = np.arange(n, dtype=np.float64)  # each entry's input position
    coo = asp.SparseCOO([rows, cols], position, shape)
    ref = scipy_sparse.coo_array((position, (rows, cols)), shape=shape)
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        csr, csc = coo.to_csr(), coo.to_csc()
        assert csr.indices.dtype == csc.indices.dtype == index_dtype
        assert _lines_sorted_stably(csr.indptr, csr.indices, csr.values)
        assert _lines_sorted_stably(csc.indptr, csc.indices, csc.values)
        for ours, theirs in [(csr.canonical(), ref.tocsr()), (csc.canonical(), ref.tocsc()),
                             (coo.canonical().to_csr(), ref.tocsr()),
                             (csr.to_csc().canonical(), ref.tocsc()),
                             (csc.to_csr().canonical(), ref.tocsr())]:
            theirs.sort_indices()
            np.testing.assert_array_equal(ours.indptr, theirs.indptr)
            np.testing.assert_array_equal(ours.indices, theirs.indices)
            np.testing.assert_allclose(ours.values, theirs.data)
        back = csr.to_coo()
        assert back.indices.dtype == index_dtype
        np.testing.assert_array_equal(back.indices[0], np.sort(rows, kind="stable"))
        part = csr[1000:30_000]  # indptr starts above zero
        want = ref.tocsr()[1000:30_000].tocsc()
        got = part.to_csc().canonical()
        np.testing.assert_array_equal(got.indptr, want.indptr)
        np.testing.assert_array_equal(got.indices, want.indices)
        flags = order % 3 == 0  # bools add up as a logical or
        mask = asp.SparseCOO([rows, cols], flags, shape).canonical()
        keys, inverse = np.unique(rows.astype(np.int64) * shape[1] + cols, return_inverse=True)
        want_or = np.zeros(len(keys), dtype=bool)
        np.logical_or.at(want_or, inverse, flags)
        np.testing.assert_array_equal(mask.indices[0].astype(np.int64) * shape[1] + mask.indices[1],
                                      keys)
        np.testing.assert_array_equal(mask.values, want_or)
        tensor = asp.SparseCOO([rows % 50, cols, rows // 50], position, (50, 7_000, 800))
        for order in [(1, 2, 0), (0, 2, 1)]:  # split after the first key, or the second
            keys, vals = tensor._sorted(order)
            perm = np.lexsort([tensor.indices[a] for a in reversed(order)])
            for k, axis in zip(keys, order, strict=True):
                np.testing.assert_array_equal(k, tensor.indices[axis][perm])
            np.testing.assert_array_equal(vals, position[perm])
    finally:
        numba.set_num_threads(before)


@pytest.mark.hypothesis
@given(coo_tensors(min_ndim=2, max_ndim=2, max_dim=7), st.data())
def test_dense_coo_csr_csf_dense(case: tuple[Any, np.ndarray], data: st.DataObject) -> None:
    coo, dense = case
    csr = coo.to_csr()
    np.testing.assert_array_equal(csr.to_dense(), dense)
    order = data.draw(orders(2))
    csf = csr.to_csf(order)
    np.testing.assert_array_equal(csf.to_dense(), dense)
    for y in [csf.to_csr(), csf.to_csc(), csr.to_csc(), csr.to_csc().to_csr(), csf.to_coo()]:
        np.testing.assert_array_equal(y.to_dense(), dense)
    np.testing.assert_array_equal(asp.SparseCSR.from_dense(dense).to_dense(), dense)
    np.testing.assert_array_equal(csr.canonical().to_dense(), dense)
    assert csr.canonical().is_canonical


# ------------------------------------------------------------------------ canonical form
def test_is_canonical_of_each_format(backend: str) -> None:
    def canonical(x: SparseTensor) -> bool:
        return on(x, backend).is_canonical

    assert canonical(asp.SparseCOO([[0, 1], [2, 0]], np.ones(2), (2, 3)))
    assert not canonical(asp.SparseCOO([[1, 0], [0, 2]], np.ones(2), (2, 3)))
    assert not canonical(asp.SparseCOO([[0, 0], [2, 2]], np.ones(2), (2, 3)))
    assert canonical(asp.SparseCOO([[0, 0, 1], [1, 2, 0], [5, 0, 0]], np.ones(3), (2, 3, 6)))
    assert not canonical(asp.SparseCOO([[0, 0, 0], [1, 1, 0], [5, 5, 0]], np.ones(3), (2, 3, 6)))
    assert canonical(asp.SparseCSR([0, 2, 3], [0, 2, 0], np.ones(3), (2, 3)))
    assert not canonical(asp.SparseCSR([0, 2, 3], [2, 0, 0], np.ones(3), (2, 3)))
    assert not canonical(asp.SparseCSR([0, 2, 3], [1, 1, 0], np.ones(3), (2, 3)))
    assert canonical(asp.SparseCSC([0, 1, 2], [1, 0], np.ones(2), (2, 2)))
    assert canonical(asp.SparseCSF([[0, 1, 2]], [[0, 1], [1, 0]], np.ones(2), (2, 2)))
    assert not canonical(asp.SparseCSF([[0, 1, 2]], [[1, 0], [1, 0]], np.ones(2), (2, 2)))
    assert not canonical(asp.SparseCSF([[0, 2]], [[0], [1, 1]], np.ones(2), (1, 2)))
    # A childless node is not canonical.
    assert not canonical(asp.SparseCSF([[0, 0, 1]], [[0, 1], [1]], np.ones(1), (2, 2)))


def test_canonical_keeps_explicit_zeros(backend: str) -> None:
    coo = on(asp.SparseCOO([[0, 0, 1]], np.array([1.0, -1.0, 0.0]), (2,)), backend).canonical()
    assert coo.nnz == 2
    assert host(coo, backend).values.tolist() == [0.0, 0.0]


@pytest.mark.hypothesis
@given(coo_tensors())
def test_canonical_is_sorted_distinct_and_idempotent(case: tuple[Any, np.ndarray]) -> None:
    coo, dense = case
    canon = coo.canonical()
    assert canon.is_canonical
    np.testing.assert_array_equal(canon.to_dense(), dense)
    flat = np.ravel_multi_index(tuple(canon.indices), coo.shape) if canon.nnz else np.zeros(0)
    assert (np.diff(flat) > 0).all()
    assert canon.canonical() is canon
    assert canon.dtype == coo.dtype
    expected_nnz = len(np.unique(np.ravel_multi_index(tuple(coo.indices), coo.shape))) \
        if coo.nnz else 0
    assert canon.nnz == expected_nnz


# ----------------------------------------------------------------------------------- sum
@pytest.mark.parametrize("dtype", DTYPES + [np.bool_], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fmt", FORMATS)
def test_sum_matches_numpy(fmt: str, dtype: Any, backend: str) -> None:
    dense = random_dense((5, 6), dtype, seed=2)
    x = make(fmt, dense, backend=backend)
    total = host(x.sum(), backend)
    assert total == dense.sum() and total.dtype == dense.sum().dtype
    for axis in [0, 1, -1, -2]:
        got = host(x.sum(axis=axis), backend)
        np.testing.assert_array_equal(got, dense.sum(axis=axis))
        assert got.dtype == dense.sum(axis=axis).dtype


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1)])
def test_sum_nd_matches_numpy(order: tuple[int, ...], backend: str) -> None:
    dense = random_dense((3, 4, 5), np.float32, seed=4)
    for x in [make("coo", dense, backend=backend), make("csf", dense, order, backend)]:
        np.testing.assert_allclose(host(x.sum(), backend), dense.sum(), rtol=1e-6)
        for axis in range(-3, 3):
            np.testing.assert_allclose(host(x.sum(axis), backend), dense.sum(axis), rtol=1e-6)
    one_d = on(asp.SparseCOO([[0, 3, 3]], np.array([1, 2, 3]), (4,)), backend)
    assert host(one_d.sum(axis=0), backend) == 6


def test_sum_axis_errors() -> None:
    for x in [asp.SparseCOO.from_dense(POST_MATRIX), asp.SparseCSR.from_dense(POST_MATRIX),
              asp.SparseCSF.from_dense(POST_MATRIX)]:
        name = type(x).__name__
        with pytest.raises(IndexError, match=rf"^{name}.sum: axis 2 out of range for 2 dimensions"):
            x.sum(axis=2)
        with pytest.raises(TypeError, match=rf"^{name}.sum: axis must be None or an int"):
            x.sum(axis=1.0)


# ------------------------------------------------------------------------------ multiply
@pytest.mark.parametrize("fmt", FORMATS)
def test_multiply_scalar_and_broadcast(fmt: str, backend: str) -> None:
    dense = random_dense((4, 5), np.float32, seed=5)
    x = make(fmt, dense, backend=backend)
    for other in [2, 0.5, np.float32(3), np.array(2.0), np.arange(5, dtype=np.float32),
                  np.arange(4.0).reshape(4, 1), np.full((4, 5), -1.0), np.ones((1, 1), np.int8)]:
        got = x.multiply(on(other, backend) if isinstance(other, np.ndarray) else other)
        expected = dense * other
        assert got.format == fmt
        assert got.dtype == expected.dtype
        assert_dense_equal(got, expected, backend)
    assert_dense_equal(x * 3, dense * 3, backend)
    assert_dense_equal(3 * x, dense * 3, backend)
    assert_dense_equal(on(np.arange(5.0), backend) * x, dense * np.arange(5.0), backend)


def test_multiply_shares_structure_and_only_touches_stored_entries() -> None:
    coo = asp.SparseCOO.from_dense(POST_MATRIX)
    scaled = coo.multiply(np.full(6, np.inf))
    assert scaled.indices is coo.indices
    assert scaled.nnz == coo.nnz
    assert np.isinf(scaled.values).all()
    assert scaled.to_dense()[0, 5] == 0  # an unstored zero times inf stays zero
    csf = asp.SparseCSF.from_dense(POST_MATRIX, (1, 0))
    assert csf.multiply(2).indices[1] is csf.indices[1]


def test_multiply_errors() -> None:
    csr = asp.SparseCSR.from_dense(POST_MATRIX)
    with pytest.raises(ValueError, match=r"^SparseCSR.multiply: other of shape \(3,\) does not "
                                         r"broadcast to the shape \(4, 6\)"):
        csr.multiply(np.ones(3))
    with pytest.raises(ValueError, match=r"does not broadcast"):
        csr.multiply(np.ones((2, 4, 6)))
    with pytest.raises(TypeError, match=r"^SparseCSR.multiply: other must be dense here"):
        csr.multiply(csr)
    with pytest.raises(TypeError, match=r"^SparseCOO.multiply: other must be a bool, integer"):
        csr.to_coo().multiply("x")
    with pytest.raises(TypeError, match=r"^numpy.multiply: cannot combine a SparseCSR with str"):
        csr * "x"
    np.testing.assert_array_equal((csr * csr).to_dense(), csr.to_dense() ** 2)


# ------------------------------------------------------------------ matmul (through CSR)
def test_matmul_mixed_and_bool_dtypes(backend: str) -> None:
    m = make("csr", np.array([[1, 0], [0, 2]], dtype=np.int32), backend=backend)
    got = host(m @ on(np.array([[0.5], [0.25]]), backend), backend)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, [[0.5], [0.5]])
    b = make("csr", np.array([[True, False], [True, True]]), backend=backend)
    got_b = host(b @ on(np.array([[False], [True]]), backend), backend)
    assert got_b.dtype == bool
    np.testing.assert_array_equal(got_b, [[False], [True]])
    got_t = host(on(np.array([[True, False]]), backend) @ b.T, backend)
    np.testing.assert_array_equal(got_t, [[True, True]])


@pytest.mark.parametrize("axis_order", [(0, 1), (1, 0)])
def test_coo_and_csf_matmul_go_through_csr_issue_6(axis_order: tuple[int, int],
                                                   backend: str) -> None:
    dense = random_dense((7, 5), np.float64, seed=3)
    other = random_dense((5, 4), np.float64, density=0.8, seed=4)
    lhs = random_dense((3, 7), np.float64, density=0.8, seed=5)
    coo = asp.SparseCOO.from_dense(dense)
    coo = on(asp.SparseCOO(coo.indices[:, ::-1], coo.values[::-1], coo.shape), backend)  # unsorted
    for m in (coo, make("csf", dense, axis_order, backend)):
        np.testing.assert_allclose(host(m @ on(other, backend), backend), dense @ other)
        np.testing.assert_allclose(host(m.matmul(on(other[:, 0], backend)), backend),
                                   dense @ other[:, 0])
        np.testing.assert_allclose(host(on(lhs, backend) @ m, backend), lhs @ dense)


def test_matmul_of_non_matrix_raises() -> None:
    coo = asp.SparseCOO.from_dense(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match=r"^SparseCOO.matmul: needs a 2-d tensor, got shape "
                                         r"\(2, 2, 2\)"):
        coo @ np.ones(2)
    with pytest.raises(ArrowSparseError, match=r"^SparseCSF.__rmatmul__: needs a 2-d tensor"):
        np.ones(2) @ coo.to_csf()
    with pytest.raises(TypeError, match=r"^SparseCSR.matmul: other must be dense here"):
        asp.SparseCOO.from_dense(np.eye(2)) @ asp.SparseCSR.from_dense(np.eye(2))


# ----------------------------------------------------------------------------- transpose
def test_transpose_of_each_format(backend: str) -> None:
    csr = make("csr", POST_MATRIX, backend=backend)
    csc = csr.T
    assert isinstance(csc, asp.SparseCSC)
    assert csc.indptr is csr.indptr and csc.indices is csr.indices and csc.values is csr.values
    assert_dense_equal(csc, POST_MATRIX.T, backend)
    assert isinstance(csc.T, asp.SparseCSR)
    assert csr.transpose((0, 1)) is csr
    dense = post_tensor()
    coo = on(asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE), backend)
    csf = coo.to_csf((1, 3, 0, 2))
    for axes in [None, (1, 0, 3, 2), (3, 1, 2, 0)]:
        expected = np.transpose(dense, axes)
        assert_dense_equal(coo.transpose(axes), expected, backend)
        t = csf.transpose(axes)
        assert_dense_equal(t, expected, backend)
        assert t.values is csf.values
        assert all(a is b for a, b in zip(t.indices, csf.indices, strict=True))
    assert_dense_equal(coo.T, dense.T, backend)
    assert_dense_equal(csf.T, dense.T, backend)
    with pytest.raises(ValueError, match=r"^SparseCOO.transpose: axis_order must be a permutation"):
        coo.transpose((0, 1))
    with pytest.raises(ValueError, match=r"^SparseCSR.transpose: axis_order must be a permutation"):
        csr.transpose((0, 0))


@pytest.mark.hypothesis
@given(coo_tensors(max_ndim=3), st.data())
def test_sum_multiply_transpose_match_numpy(case: tuple[Any, np.ndarray],
                                            data: st.DataObject) -> None:
    coo, dense = case
    order = data.draw(orders(coo.ndim))
    for x in [coo, coo.to_csf(order)]:
        assert x.sum() == dense.sum()
        for axis in range(coo.ndim):
            np.testing.assert_array_equal(x.sum(axis), dense.sum(axis))
        np.testing.assert_array_equal(x.multiply(3).to_dense(), dense * 3)
        other = np.arange(1, coo.shape[-1] + 1, dtype=np.int64)
        np.testing.assert_array_equal(x.multiply(other).to_dense(), dense * other)
        axes = data.draw(orders(coo.ndim))
        np.testing.assert_array_equal(x.transpose(axes).to_dense(), np.transpose(dense, axes))


# -------------------------------------------------- reprs, properties, dtypes and errors
def test_reprs_are_deterministic() -> None:
    coo = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE)
    assert repr(coo) == "SparseCOO(shape=(3, 3, 3, 4), nnz=8, dtype=float64)"
    assert repr(coo.to_csf((3, 2, 1, 0))) == \
        "SparseCSF(shape=(3, 3, 3, 4), nnz=8, dtype=float64, axis_order=(3, 2, 1, 0))"
    assert repr(asp.SparseCSR.from_dense(POST_MATRIX)) == \
        "SparseCSR(shape=(4, 6), nnz=8, dtype=int64)"
    assert repr(asp.SparseCSC.from_dense(POST_MATRIX[:, :2].astype(np.float32))) == \
        "SparseCSC(shape=(4, 2), nnz=3, dtype=float32)"


def test_properties() -> None:
    csf = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE).to_csf()
    assert (csf.ndim, csf.nnz, csf.shape) == (4, 8, POST_SHAPE)
    assert csf.dtype == np.float64
    csr = asp.SparseCSR.from_dense(POST_MATRIX)
    assert (csr.ndim, csr.format, csr.T.format) == (2, "csr", "csc")


def test_bool_values(backend: str) -> None:
    dense = np.array([[True, False], [False, True]])
    for fmt in FORMATS:
        x = make(fmt, dense, backend=backend)
        assert_dense_equal(x, dense, backend)
        assert host(x.sum(), backend) == 2
    dup = on(asp.SparseCOO([[0, 0, 1]], np.array([True, True, False]), (2,)), backend)
    assert_dense_equal(dup, np.array([True, False]), backend)
    assert host(dup.canonical(), backend).values.tolist() == [True, False]
    assert_dense_equal(dup.to_csf(), np.array([True, False]), backend)


def test_errors_are_arrow_sparse_errors() -> None:
    calls: list[Callable[[], Any]] = [lambda: asp.SparseCOO([[5]], np.ones(1), (3,)),
             lambda: asp.SparseCSR([0, 2, 1], [0, 1], np.ones(2), (2, 3)),
             lambda: asp.SparseCSF([[0, 1]], [[0], [0]], np.ones(1), (2, 2), axis_order=(1, 1)),
             lambda: asp.SparseCSC.from_dense(np.ones(3)),
             lambda: asp.SparseCOO.from_dense(np.array(["x"]))]
    for call in calls:
        with pytest.raises(ArrowSparseError):
            call()


def test_from_dense_errors() -> None:
    with pytest.raises(ValueError, match=r"^SparseCSR.from_dense: shape must have at least 2 "
                                         r"dimensions"):
        asp.SparseCSR.from_dense(np.ones(3))
    with pytest.raises(ValueError, match=r"^SparseCOO.from_dense: shape must have at least one"):
        asp.SparseCOO.from_dense(np.float64(1.0))
    with pytest.raises(TypeError, match=r"^SparseCSF.from_dense: dense must be an array"):
        asp.SparseCSF.from_dense(object())
    with pytest.raises(ValueError,
                       match=r"^SparseCSF.from_dense: axis_order must be a permutation"):
        asp.SparseCSF.from_dense(np.ones((2, 2)), axis_order=(0, 2))


# ------------------------------------------------------------------------------- devices
def test_to_device_moves_every_buffer_and_back(cp: Any) -> None:
    for x in every_format(np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])):
        on = x.to_device("cuda")
        assert (on.device, on.xp, x.device, x.xp) == ("cuda:0", cp, "cpu", np)
        assert type(on) is type(x) and on.shape == x.shape and on.dtype == x.dtype
        assert on.to_device("cuda") is on and on.to_device("cuda:0") is on
        assert x.to_device("cpu") is x
        other = on.to_device("cuda:1")
        assert other.device == "cuda:1"
        assert repr(on) == repr(x)[:-1] + ", device='cuda:0')"
        np.testing.assert_array_equal(other.to_device("cpu").to_dense(), x.to_dense())
        assert_same(tuple(flatten(on.to_device("cpu"))), tuple(flatten(x)))
    with pytest.raises(ValueError, match=r"^SparseCSR.to_device: device must be 'cpu', 'cuda' "
                       r"or 'cuda:N', got 'gpu'$"):
        asp.SparseCSR.from_dense(np.eye(2)).to_device("gpu")


def test_host_and_device_inputs_are_refused_together(cp: Any) -> None:
    fix = r" .*; move them to one device first"
    with pytest.raises(TypeError, match=r"^SparseCOO: values is a host .* but indices is a "
                       r"device" + fix):
        asp.SparseCOO(cp.asarray(np.zeros((1, 2), np.int64)), np.ones(2), (3,))
    with pytest.raises(TypeError, match=r"^SparseCSR: indices is a host" + fix):
        asp.SparseCSR(cp.asarray(np.array([0, 1])), [0], cp.asarray(np.ones(1)), (1, 2))
    with pytest.raises(TypeError, match=r"^SparseCSF: values is a host" + fix):
        asp.SparseCSF([cp.asarray(np.array([0, 1]))], [cp.asarray(np.array([0])),
                                                       cp.asarray(np.array([0]))], [1.0], (1, 1))
    csr = asp.SparseCSR.from_dense(np.eye(2)).to_device("cuda")
    with pytest.raises(TypeError, match=r"^SparseCSR.matmul: other is a host" + fix):
        csr @ np.ones(2)
    with pytest.raises(TypeError, match=r"^SparseCSR.__rmatmul__: other is a host" + fix):
        np.ones(2) @ csr
    with pytest.raises(TypeError, match=r"^SparseCOO.multiply: other is a host" + fix):
        csr.to_coo().multiply(np.ones(2))
    with pytest.raises(TypeError, match=r"^SparseCSR.matmul: values is a host" + fix):
        asp.SparseCSR.from_dense(np.eye(2)) @ cp.asarray(np.ones(2))
    assert (csr * np.float32(2)).device == "cuda:0"  # scalars are no arrays
    assert csr.multiply(np.array(2.0)).dtype == np.float64


def test_device_constructors_check_on_the_device(cp: Any) -> None:
    def dev(x: Any, dtype: Any = None) -> Any:
        return cp.asarray(np.asarray(x, dtype=dtype))

    coo = asp.SparseCOO(dev([[0, 2, 1], [0, 0, 4]]), dev([1.0, 2.0, 3.0]), (3, 4))
    assert cp.stats.syncs == 0  # nothing raised yet
    with pytest.raises(IndexError, match="^SparseCOO: indices out of range of the dimension"
                       + DEFERRED.format(2)):
        asp.offsets_to_lengths(dev([0, 1]))  # the next check of any operation
    with pytest.raises(IndexError, match="^SparseCOO.validate: indices out of range of the "
                       "dimension" + AT_ONCE.format(2)):
        coo.validate()
    # CSR: only the entries indptr addresses are checked; a bad one outside is never read
    csr = asp.SparseCSR(dev([1, 2, 4]), dev([9, 0, 2, 1, 9], np.int32), dev(np.ones(5)), (2, 3))
    cuda.check_errors("no error")
    assert csr.nnz == 3
    asp.SparseCSR(dev([1, 2, 4]), dev([9, 0, 2, 7, 9]), dev(np.ones(5)), (2, 3))
    with pytest.raises(IndexError, match="^SparseCSR: indices out of range of the dimension"
                       + DEFERRED.format(3)):
        cuda.check_errors("next")
    bad = asp.SparseCSC(dev([0, 3, 2]), dev([0, 1, 0]), dev(np.ones(3)), (2, 2))
    with pytest.raises(ValueError, match="^SparseCSC: offsets must be non-decreasing"
                       + DEFERRED.format(2)):
        bad.nnz  # noqa: B018 (reads indptr, raising the constructor's checks first)
    with pytest.raises(ValueError, match="^SparseCSR: offsets exceed the number of values"
                       + DEFERRED.format(2)):
        asp.SparseCSR(dev([0, 1, 5]), dev([0, 1]), dev(np.ones(2)), (2, 2))
        cuda.check_errors("next")
    # CSF: the reachable nodes of each level are found on the device
    csf = asp.SparseCSF([dev([1, 3]), dev([0, 5, 6, 8, 8])],
                        [dev([0]), dev([9, 0, 1, 9]), dev([9, 9, 9, 9, 9, 2, 0, 1, 9])],
                        dev(np.ones(9)), (1, 2, 3))
    cuda.check_errors("nothing reachable is out of range")
    assert csf.nnz == 3 and csf.validate() is csf
    np.testing.assert_array_equal(csf.to_dense().get(), [[[0.0, 0.0, 1.0], [1.0, 1.0, 0.0]]])
    asp.SparseCSF([dev([0, 1]), dev([0, 1])], [dev([0]), dev([3]), dev([0])], dev([1.0]),
                  (1, 2, 1))
    with pytest.raises(IndexError, match="^SparseCSF: indices out of range of the dimension"
                       + DEFERRED.format(0)):
        cuda.check_errors("next")
    # validate=False checks nothing; the kernels still stay inside the buffers
    unchecked = asp.SparseCSR(dev([0, 2, 9]), dev([0, 5, 1]), dev(np.ones(3)), (2, 2),
                              validate=False)
    np.testing.assert_array_equal(unchecked.sum(axis=1).get(), [2.0, 0.0])
    with pytest.raises(ValueError, match="^SparseCSR.sum: indptr addresses entries outside the "
                       "stored indices" + DEFERRED.format(2)):
        cuda.check_errors("next")
    np.testing.assert_array_equal(unchecked.to_dense().get(), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="^SparseCSR.to_dense: indptr addresses entries outside "
                       "the stored indices" + DEFERRED.format(2)):
        cuda.check_errors("next")  # the scatter kernel writes nothing then
    with pytest.raises(ValueError, match="^SparseCSR: indices .3. and values .2. must have the "
                       "same length$"):
        asp.SparseCSR(dev([0, 1]), dev([0, 1, 1]), dev([1.0, 2.0]), (1, 2))


# --------------------------------------------------- every operation on the CUDA kernels
def public_tensors() -> dict[str, Any]:
    """Tensors whose operations reach every sparse kernel: unsorted COO with repeated
    coordinates (2-d and 3-d), CSR with a sliced ``indptr``, unsorted lines and
    duplicates, its CSC twin, bools, wrapping int8."""
    rng = np.random.default_rng(16)
    rows, cols = rng.integers(0, 7, size=40), rng.integers(0, 9, size=40)
    coords3 = np.stack([rng.integers(0, s, size=50) for s in (4, 3, 5)])
    indptr, indices, values = compressed(rng, 7, 9)
    return {
        "coo": asp.SparseCOO(np.stack([rows, cols]), values_of(rng, np.float64, 40), (7, 9)),
        "coo3": asp.SparseCOO(coords3, values_of(rng, np.int32, 50), (4, 3, 5)),
        "csr": asp.SparseCSR(indptr, indices, values, (7, 9)),
        "csc": asp.SparseCSC(indptr, indices, values, (9, 7)),
        "bools": asp.SparseCSR(indptr, indices, values > 0, (7, 9)),
        "int8": asp.SparseCSR(indptr, indices, values_of(rng, np.int8, len(values)), (7, 9)),
        "rhs": values_of(rng, np.float64, 9 * 4).reshape(9, 4),
        "lhs": values_of(rng, np.float64, 3 * 7).reshape(3, 7),
        "int8_rhs": values_of(rng, np.int8, 9 * 3).reshape(9, 3),
    }


PUBLIC: dict[str, Callable[[dict[str, Any]], Any]] = {
    "coo.to_dense": lambda t: t["coo"].to_dense(),
    "coo.sum": lambda t: [t["coo"].sum(axis=a) for a in (None, 0, 1)],
    "coo.canonical": lambda t: t["coo"].canonical(),
    "coo.is_canonical": lambda t: t["coo"].is_canonical,
    "coo.to_csr": lambda t: t["coo"].to_csr(),
    "coo.to_csc": lambda t: t["coo"].to_csc(),
    "coo3.canonical": lambda t: t["coo3"].canonical(),
    "coo3.sum": lambda t: [t["coo3"].sum(axis=a) for a in (0, 1, 2)],
    "coo3.to_dense": lambda t: t["coo3"].to_dense(),
    "coo3.to_csf": lambda t: t["coo3"].to_csf(),
    "coo3.to_csf.to_coo": lambda t: t["coo3"].to_csf((2, 0, 1)).to_coo(),
    "csr.to_dense": lambda t: t["csr"].to_dense(),
    "csr.to_coo": lambda t: t["csr"].to_coo(),
    "csr.to_csc": lambda t: t["csr"].to_csc(),
    "csr.canonical": lambda t: t["csr"].canonical(),
    "csr.is_canonical": lambda t: [t["csr"].is_canonical, t["csr"].canonical().is_canonical],
    "csr.sum": lambda t: [t["csr"].sum(axis=a) for a in (None, 0, 1)],
    "csr @ dense": lambda t: t["csr"] @ t["rhs"],
    "csr @ vector": lambda t: t["csr"] @ t["rhs"][:, 0],
    "dense @ csr": lambda t: t["lhs"] @ t["csr"],
    "vector @ csr": lambda t: t["lhs"][0] @ t["csr"],
    "csc.to_dense": lambda t: t["csc"].to_dense(),
    "csc.to_csr": lambda t: t["csc"].to_csr(),
    "csc.canonical": lambda t: t["csc"].canonical(),
    "csc.sum": lambda t: [t["csc"].sum(axis=a) for a in (0, 1)],
    "csc @ dense": lambda t: t["csc"] @ t["lhs"].T,
    "dense @ csc": lambda t: t["rhs"].T @ t["csc"],
    "bools": lambda t: [t["bools"].to_csc(), t["bools"].canonical(), t["bools"].to_dense(),
                        t["bools"] @ t["rhs"]],
    "int8": lambda t: [t["int8"] @ t["int8_rhs"], t["int8"].sum(axis=1),
                       t["int8"].to_dense()],
}


def device_tensors(module: Any) -> dict[str, Any]:
    """:func:`public_tensors` on the stand-in CuPy's device."""
    return {k: v.to_device("cuda") if isinstance(v, SparseTensor) else module.asarray(v)
            for k, v in public_tensors().items()}


def from_device(parts: list[Any]) -> list[Any]:
    """The parts of a device result on the host; every array must have been on the device."""
    out = []
    for part in parts:
        assert not isinstance(part, (np.ndarray, np.generic)), "a host array came back"
        out.append(part.get() if isinstance(part, fake_cupy.ndarray) else part)
    return out


@pytest.mark.parametrize("case", list(PUBLIC))
@pytest.mark.parametrize("device", ["cuda_emu", "cupy_emu"])
def test_public_sparse_operations_match_cpu(device: str, case: str) -> None:
    """Host arrays through the CUDA kernels on the emulator (every launch also in reversed and
    shuffled thread order), and device arrays of the stand-in CuPy, give the CPU's results."""
    expected = flatten(PUBLIC[case](public_tensors()))
    if device == "cuda_emu":
        with emulated(check_orders=("reverse", "shuffle")) as emu:
            got = flatten(PUBLIC[case](public_tensors()))
            cuda.check_errors(case)
        assert emu.launches or case in ("coo.is_canonical",)
    else:
        with fake_cupy.emulated_cupy(check_orders=("reverse",)) as module:
            got = from_device(flatten(PUBLIC[case](device_tensors(module))))
            cuda.check_errors(case)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        if isinstance(e, np.ndarray) and e.dtype.kind == "f":
            assert g.dtype == e.dtype and g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
        elif isinstance(e, np.ndarray):
            assert_same(g, e)
        else:
            assert g == e
