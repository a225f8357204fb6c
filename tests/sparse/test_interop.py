"""Interop of the sparse formats: pyarrow sparse tensors, scipy.sparse, pydata sparse and
torch (``arrow_sparse/sparse/_interop.py``). Zero-copy claims are checked by address.
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from tests.sparse._helpers import (
    ALL_FORMATS,
    POST_COORDS,
    POST_MATRIX,
    POST_SHAPE,
    POST_TENSOR_VALUES,
    coo_tensors,
    every_format,
    orders,
    post_tensor,
    same_buffer,
)


# ------------------------------------------------------------------------------- pyarrow
def test_arrow_coo_round_trip_is_zero_copy() -> None:
    t = pa.SparseCOOTensor.from_dense_numpy(post_tensor())
    data, coords = t.to_numpy()
    coo = asp.SparseCOO.from_arrow(t)
    assert same_buffer(coo.values, data) and same_buffer(coo.indices, coords)
    assert coo.shape == POST_SHAPE
    np.testing.assert_array_equal(coo.to_dense(), post_tensor())
    back = coo.to_arrow()
    back_data, back_coords = back.to_numpy()
    assert same_buffer(back_data, data) and same_buffer(back_coords, coords)
    assert back.equals(t)


def test_arrow_coo_from_ours_shares_values_and_copies_c_ordered_indices() -> None:
    coo = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE)
    t = coo.to_arrow()
    data, coords = t.to_numpy()
    assert same_buffer(data, coo.values)
    np.testing.assert_array_equal(coords, POST_COORDS.T)
    assert not t.has_canonical_format
    np.testing.assert_array_equal(t.to_tensor().to_numpy(), post_tensor())


@pytest.mark.parametrize("cls,arrow_cls", [(asp.SparseCSR, pa.SparseCSRMatrix),
                                           (asp.SparseCSC, pa.SparseCSCMatrix)])
def test_arrow_compressed_round_trip_is_zero_copy(cls: Any, arrow_cls: Any) -> None:
    t = arrow_cls.from_dense_numpy(POST_MATRIX.astype(np.float64))
    data, indptr, indices = t.to_numpy()
    m = cls.from_arrow(t)
    assert isinstance(m, cls)
    assert same_buffer(m.values, data)
    assert same_buffer(m.indptr, indptr) and same_buffer(m.indices, indices)
    back_data, back_indptr, back_indices = m.to_arrow().to_numpy()
    assert same_buffer(back_data, data)
    assert same_buffer(back_indptr, indptr) and same_buffer(back_indices, indices)
    np.testing.assert_array_equal(m.to_dense(), POST_MATRIX)


def test_arrow_sliced_csr_is_rebased() -> None:
    csr = asp.SparseCSR.from_dense(POST_MATRIX.astype(np.float32))[2:4]
    t = csr.to_arrow()
    data, indptr, indices = t.to_numpy()
    assert indptr.tolist() == [0, 3, 4]
    assert same_buffer(data.ravel(), csr.values[4:8])
    np.testing.assert_array_equal(t.to_tensor().to_numpy(), POST_MATRIX[2:4])


def test_arrow_int32_indices_are_widened() -> None:
    csr = asp.SparseCSR(np.array([0, 1], dtype=np.int32), np.array([2], dtype=np.int32),
                        np.array([5.0]), (1, 3))
    _, indptr, indices = csr.to_arrow().to_numpy()
    assert indptr.dtype == indices.dtype == np.int64


@pytest.mark.parametrize("order", list(itertools.permutations(range(4))))
def test_arrow_csf_round_trip_any_axis_order(order: tuple[int, ...]) -> None:
    csf = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE).to_csf(order)
    t = csf.to_arrow()
    np.testing.assert_array_equal(t.to_tensor().to_numpy(), post_tensor())
    data, indptr, indices = t.to_numpy()
    assert same_buffer(data.ravel(), csf.values)
    assert all(same_buffer(a, b) for a, b in zip(indptr, csf.indptr, strict=True))
    assert all(same_buffer(a, b) for a, b in zip(indices, csf.indices, strict=True))
    back = asp.SparseCSF.from_arrow(t, axis_order=order)
    assert back.axis_order == order
    assert all(same_buffer(a, b) for a, b in zip(back.indices, indices, strict=True))
    np.testing.assert_array_equal(back.to_dense(), post_tensor())


def test_arrow_csf_default_axis_order_is_pyarrows() -> None:
    rng = np.random.default_rng(5)
    dense = np.where(rng.random((4, 2, 5, 2)) < 0.3, rng.random((4, 2, 5, 2)), 0.0)
    t = pa.SparseCSFTensor.from_dense_numpy(dense)
    csf = asp.SparseCSF.from_arrow(t)
    assert csf.axis_order == (1, 3, 0, 2)  # sorted by size, ties in order
    np.testing.assert_array_equal(csf.to_dense(), dense)
    assert csf.is_canonical
    # A tensor built with another order needs that order passed in.
    ours = asp.SparseCSF.from_dense(dense, (2, 0, 1, 3)).to_arrow()
    np.testing.assert_array_equal(asp.SparseCSF.from_arrow(ours, (2, 0, 1, 3)).to_dense(), dense)


def test_arrow_csf_with_wrong_axis_order_raises() -> None:
    dense = np.zeros((3, 2))
    dense[2, 0] = 1.0
    t = asp.SparseCSF.from_dense(dense, (0, 1)).to_arrow()  # level 0 holds row 2
    with pytest.raises(IndexError, match=r"^SparseCSF: indices\[0\] out of range \[0, 2\)"):
        asp.SparseCSF.from_arrow(t, axis_order=(1, 0))
    # Without an order, the only one that fits (pyarrow's default would be (1, 0)):
    assert asp.SparseCSF.from_arrow(t).axis_order == (0, 1)


def test_arrow_csf_axis_order_is_found_for_every_order() -> None:
    # The post's 4-d tensor, written with each of its 24 orders, decodes right without
    # the order (issue 18: [1, 0, 2, 3] decoded to another tensor, [3, 2, 1, 0] raised).
    for order in itertools.permutations(range(4)):
        t = asp.SparseCSF.from_dense(post_tensor(), order).to_arrow()
        back = asp.SparseCSF.from_arrow(t)
        np.testing.assert_array_equal(back.to_dense(), post_tensor())


def test_arrow_csf_ambiguous_axis_order_of_a_large_tensor_must_be_given() -> None:
    dense_shape = (300, 300, 300)  # 27M cells: too large to settle by decoding
    t = asp.SparseCOO(np.array([[1], [2], [3]]), np.array([1.0]), dense_shape).to_csf(
        (2, 0, 1)).to_arrow()
    with pytest.raises(ValueError, match=r"^SparseCSF.from_arrow: pyarrow does not expose the "
                                         r"axis order of a SparseCSFTensor, and 6 orders fit"):
        asp.SparseCSF.from_arrow(t)
    back = asp.SparseCSF.from_arrow(t, axis_order=(2, 0, 1))
    assert back.to_coo().indices.tolist() == [[1], [2], [3]]


def test_arrow_any_tensor_into_any_format() -> None:
    dense = post_tensor()
    tensors = [pa.SparseCOOTensor.from_dense_numpy(dense),
               pa.SparseCSFTensor.from_dense_numpy(dense), pa.Tensor.from_numpy(dense)]
    classes: list[Any] = [asp.SparseCOO, asp.SparseCSF]
    for t in tensors:
        for cls in classes:
            np.testing.assert_array_equal(cls.from_arrow(t).to_dense(), dense)
    m = POST_MATRIX.astype(np.float64)
    for t in [pa.SparseCSRMatrix.from_dense_numpy(m), pa.SparseCSCMatrix.from_dense_numpy(m),
              pa.SparseCOOTensor.from_dense_numpy(m)]:
        for cls in ALL_FORMATS:
            np.testing.assert_array_equal(cls.from_arrow(t).to_dense(), m)


def test_arrow_empty_and_bool_tensors() -> None:
    empty = asp.SparseCOO.from_dense(np.zeros((2, 3)))
    assert empty.to_arrow().non_zero_length == 0
    np.testing.assert_array_equal(asp.SparseCOO.from_arrow(empty.to_arrow()).to_dense(),
                                  np.zeros((2, 3)))
    for fmt in ["to_csr", "to_csc", "to_csf"]:
        t = getattr(empty, fmt)().to_arrow()
        np.testing.assert_array_equal(t.to_tensor().to_numpy(), np.zeros((2, 3)))
    flags = asp.SparseCOO.from_dense(np.array([[True, False], [False, True]]))
    t = flags.to_arrow()
    assert t.type == pa.uint8()
    np.testing.assert_array_equal(asp.SparseCOO.from_arrow(t).to_dense(), np.eye(2))


def test_arrow_errors() -> None:
    with pytest.raises(TypeError, match=r"^SparseCOO.from_arrow: expected a pyarrow "
                                        r"SparseCOOTensor.*got ndarray"):
        asp.SparseCOO.from_arrow(np.eye(2))
    with pytest.raises(TypeError, match=r"^SparseCSR.from_arrow: expected a pyarrow"):
        asp.SparseCSR.from_arrow(pa.array([1, 2]))
    with pytest.raises(ValueError, match=r"^SparseCSF.to_arrow: pyarrow's SparseCSFTensor needs "
                                         r"at least 2 dimensions"):
        asp.SparseCSF.from_dense(np.array([0.0, 1.0])).to_arrow()
    # pyarrow does not check coordinates; from_arrow does.
    bad = pa.SparseCOOTensor.from_numpy(np.ones(1), np.array([[0, 5]]), shape=(2, 3))
    with pytest.raises(IndexError, match=r"^SparseCOO: indices\[1\] out of range \[0, 3\)"):
        asp.SparseCOO.from_arrow(bad)
    bad_csr = pa.SparseCSRMatrix.from_numpy(np.ones(2), np.array([0, 2, 1]), np.array([0, 1]),
                                            shape=(2, 3))
    with pytest.raises(ValueError, match=r"^SparseCSR: indptr must be non-decreasing"):
        asp.SparseCSR.from_arrow(bad_csr)


@pytest.mark.hypothesis
@given(coo_tensors(min_ndim=2), st.data())
def test_arrow_round_trips(case: tuple[Any, np.ndarray], data: st.DataObject) -> None:
    coo, dense = case
    back = asp.SparseCOO.from_arrow(coo.to_arrow())
    np.testing.assert_array_equal(back.to_dense(), dense)
    order = data.draw(orders(coo.ndim))
    csf = coo.to_csf(order)
    np.testing.assert_array_equal(asp.SparseCSF.from_arrow(csf.to_arrow(), order).to_dense(),
                                  dense)
    if coo.ndim == 2:
        for m in [coo.to_csr(), coo.to_csc()]:
            np.testing.assert_array_equal(type(m).from_arrow(m.to_arrow()).to_dense(), dense)


# --------------------------------------------------------------------------------- scipy
@pytest.mark.parametrize("kind", ["array", "matrix"])
@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_scipy_round_trip(fmt: str, kind: str) -> None:
    sp = pytest.importorskip("scipy.sparse")
    make = getattr(sp, f"{fmt}_{kind}")
    m = make(POST_MATRIX.astype(np.float32))
    cls: Any = {"coo": asp.SparseCOO, "csr": asp.SparseCSR, "csc": asp.SparseCSC}[fmt]
    ours = cls.from_scipy(m)
    assert isinstance(ours, cls)
    np.testing.assert_array_equal(ours.to_dense(), POST_MATRIX)
    assert same_buffer(ours.values, m.data)
    if fmt != "coo":
        assert same_buffer(ours.indptr, m.indptr) and same_buffer(ours.indices, m.indices)
    back = ours.to_scipy(matrix=kind == "matrix")
    assert back.format == fmt
    assert isinstance(back, sp.spmatrix) == (kind == "matrix")
    np.testing.assert_array_equal(back.toarray(), POST_MATRIX)
    assert same_buffer(back.data, m.data)
    if fmt != "coo":
        assert same_buffer(back.indices, m.indices) and same_buffer(back.indptr, m.indptr)
    for other in ALL_FORMATS:
        np.testing.assert_array_equal(other.from_scipy(m).to_dense(), POST_MATRIX)


def test_scipy_other_formats_and_nd_coo() -> None:
    sp = pytest.importorskip("scipy.sparse")
    for m in [sp.lil_array(POST_MATRIX), sp.bsr_array(POST_MATRIX), sp.dok_array(POST_MATRIX),
              sp.dia_array(POST_MATRIX)]:
        np.testing.assert_array_equal(asp.SparseCSR.from_scipy(m).to_dense(), POST_MATRIX)
    coo = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE)
    nd = coo.to_scipy()
    assert nd.shape == POST_SHAPE
    np.testing.assert_array_equal(nd.toarray(), post_tensor())
    np.testing.assert_array_equal(asp.SparseCOO.from_scipy(nd).to_dense(), post_tensor())
    np.testing.assert_array_equal(coo.to_csf().to_scipy().toarray(), post_tensor())
    sliced = asp.SparseCSR.from_dense(POST_MATRIX)[1:3].to_scipy()
    np.testing.assert_array_equal(sliced.toarray(), POST_MATRIX[1:3])


def test_scipy_errors() -> None:
    pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match=r"^SparseCSR.from_scipy: expected a scipy.sparse array "
                                        r"or matrix, got ndarray"):
        asp.SparseCSR.from_scipy(np.eye(2))
    coo = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE)
    with pytest.raises(ValueError, match=r"^SparseCOO.to_scipy: matrix=True needs a 2-d tensor"):
        coo.to_scipy(matrix=True)


def test_scipy_matmul_and_canonical_agree() -> None:
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(2)
    rows, cols = rng.integers(0, 20, 300), rng.integers(0, 15, 300)
    vals = rng.random(300)
    ref = sp.coo_array((vals, (rows, cols)), shape=(20, 15))
    ours = asp.SparseCOO([rows, cols], vals, (20, 15))
    canon = ours.canonical()
    ref_csr = ref.tocsr()
    ref_csr.sum_duplicates()
    csr = canon.to_csr()
    np.testing.assert_array_equal(csr.indptr, ref_csr.indptr)
    np.testing.assert_array_equal(csr.indices, ref_csr.indices)
    np.testing.assert_allclose(csr.values, ref_csr.data, rtol=1e-14)
    dense = rng.random((15, 4))
    np.testing.assert_allclose(ours.to_csr() @ dense, ref @ dense, rtol=1e-12)


# ------------------------------------------------------------------------- pydata sparse
def test_pydata_sparse_round_trip() -> None:
    sparse = pytest.importorskip("sparse")
    dense = post_tensor()
    s = sparse.COO.from_numpy(dense)
    coo = asp.SparseCOO.from_pydata_sparse(s)
    assert same_buffer(coo.indices, s.coords) and same_buffer(coo.values, s.data)
    back = coo.to_pydata_sparse()
    assert same_buffer(back.coords, s.coords) and same_buffer(back.data, s.data)
    np.testing.assert_array_equal(back.todense(), dense)
    unsorted = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE).to_pydata_sparse()
    np.testing.assert_array_equal(unsorted.todense(), dense)
    np.testing.assert_array_equal(asp.SparseCSF.from_pydata_sparse(s, (3, 1, 0, 2)).to_dense(),
                                  dense)
    np.testing.assert_array_equal(coo.to_csf().to_pydata_sparse().todense(), dense)


@pytest.mark.parametrize("axis,cls", [(0, asp.SparseCSR), (1, asp.SparseCSC)])
def test_pydata_gcxs_round_trip(axis: int, cls: Any) -> None:
    sparse = pytest.importorskip("sparse")
    g = sparse.GCXS.from_numpy(POST_MATRIX, compressed_axes=(axis,))
    m = cls.from_pydata_sparse(g)
    assert isinstance(m, cls)
    assert same_buffer(m.indptr, g.indptr) and same_buffer(m.values, g.data)
    back = m.to_pydata_sparse()
    assert tuple(back.compressed_axes) == (axis,)
    np.testing.assert_array_equal(back.todense(), POST_MATRIX)
    other = asp.SparseCSC if cls is asp.SparseCSR else asp.SparseCSR
    np.testing.assert_array_equal(other.from_pydata_sparse(g).to_dense(), POST_MATRIX)
    g3 = sparse.GCXS.from_numpy(post_tensor(), compressed_axes=(1,))
    np.testing.assert_array_equal(asp.SparseCOO.from_pydata_sparse(g3).to_dense(), post_tensor())


def test_pydata_errors() -> None:
    sparse = pytest.importorskip("sparse")
    with pytest.raises(TypeError, match=r"^SparseCOO.from_pydata_sparse: expected a pydata "
                                        r"sparse array, got ndarray"):
        asp.SparseCOO.from_pydata_sparse(np.eye(2))
    filled = sparse.COO.from_numpy(np.ones((2, 2)), fill_value=1.0)
    with pytest.raises(ValueError, match=r"^SparseCOO.from_pydata_sparse: the fill value must "
                                         r"be 0"):
        asp.SparseCOO.from_pydata_sparse(filled)


# --------------------------------------------------------------------------------- torch
def test_torch_round_trips() -> None:
    torch = pytest.importorskip("torch")
    dense = post_tensor()
    coo = asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE)
    t = coo.to_torch()
    assert t.layout == torch.sparse_coo and not t.is_coalesced()
    np.testing.assert_array_equal(t.to_dense().numpy(), dense)
    assert same_buffer(t._values().numpy(), coo.values)
    back = asp.SparseCOO.from_torch(t)
    assert same_buffer(back.values, coo.values)
    np.testing.assert_array_equal(back.to_dense(), dense)
    assert asp.SparseCOO.from_dense(dense).to_torch().is_coalesced()
    csf = asp.SparseCSF.from_torch(t.coalesce(), (3, 2, 1, 0))
    np.testing.assert_array_equal(csf.to_dense(), dense)
    np.testing.assert_array_equal(csf.to_torch().to_dense().numpy(), dense)


@pytest.mark.parametrize("cls", [asp.SparseCSR, asp.SparseCSC])
def test_torch_compressed_round_trip(cls: Any) -> None:
    torch = pytest.importorskip("torch")
    m = cls.from_dense(POST_MATRIX.astype(np.float32))
    t = m.to_torch()
    assert t.layout == (torch.sparse_csr if cls is asp.SparseCSR else torch.sparse_csc)
    np.testing.assert_array_equal(t.to_dense().numpy(), POST_MATRIX)
    back = cls.from_torch(t)
    assert same_buffer(back.values, m.values) and same_buffer(back.indices, m.indices)
    np.testing.assert_array_equal(back.to_dense(), POST_MATRIX)
    for other in ALL_FORMATS:
        np.testing.assert_array_equal(other.from_torch(t).to_dense(), POST_MATRIX)
    np.testing.assert_array_equal(asp.SparseCSR.from_torch(torch.tensor(POST_MATRIX))
                                  .to_dense(), POST_MATRIX)
    sliced = asp.SparseCSR.from_dense(POST_MATRIX)[1:3].to_torch()
    np.testing.assert_array_equal(sliced.to_dense().numpy(), POST_MATRIX[1:3])


def test_torch_read_only_buffers_are_copied() -> None:
    pytest.importorskip("torch")
    t = pa.SparseCOOTensor.from_dense_numpy(post_tensor())
    coo = asp.SparseCOO.from_arrow(t)
    np.testing.assert_array_equal(coo.to_torch().to_dense().numpy(), post_tensor())


def test_torch_errors() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match=r"^SparseCOO.from_torch: expected a torch.Tensor, got "
                                        r"ndarray"):
        asp.SparseCOO.from_torch(np.eye(2))
    hybrid = torch.sparse_coo_tensor(torch.tensor([[0, 1]]), torch.ones(2, 3), (2, 3),
                                     check_invariants=True)
    with pytest.raises(ValueError, match=r"^SparseCOO.from_torch: hybrid \(dense value "
                                         r"dimensions\) and batched sparse tensors"):
        asp.SparseCOO.from_torch(hybrid)
    with pytest.raises(TypeError, match=r"^SparseCOO.from_torch: torch tensor of dtype "
                                        r"torch.bfloat16 has no numpy equivalent"):
        asp.SparseCOO.from_torch(torch.eye(2, dtype=torch.bfloat16))


# -------------------------------------------------------- optional libraries and devices
def test_optional_import_error_names_pip(monkeypatch: pytest.MonkeyPatch) -> None:

    coo = asp.SparseCOO.from_dense(np.eye(2))
    csr = coo.to_csr()  # before hiding pydata sparse: Numba's first compile looks for it
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "sparse", None)
    monkeypatch.setitem(sys.modules, "scipy.sparse", None)
    with pytest.raises(ModuleNotFoundError, match=r"^SparseCOO.to_torch: torch is required for "
                                                  r"this but is not installed; install it with: "
                                                  r"pip install 'arrow-sparse\[torch\]'$"):
        coo.to_torch()
    with pytest.raises(ModuleNotFoundError, match=r"^SparseCOO.to_pydata_sparse: sparse is "
                                                  r"required for this but is not installed; "
                                                  r"install it with: pip install sparse$"):
        coo.to_pydata_sparse()
    with pytest.raises(ModuleNotFoundError, match=r"^SparseCSR.to_scipy: scipy.sparse is "
                                                  r"required for this but is not installed; "
                                                  r"install it with: pip install scipy$"):
        csr.to_scipy()


@pytest.mark.parametrize("op", ["to_arrow", "to_scipy", "to_pydata_sparse", "to_torch"])
def test_exports_to_host_libraries_name_the_transfer(cp: Any, op: str) -> None:
    for x in every_format(np.eye(3)):
        name = type(x).__name__
        with pytest.raises(NotImplementedError, match=rf"^{name}.{op}: the tensor is on cuda:0, "
                           rf"but {op} needs host memory; move it first with "
                           rf"\.to_device\('cpu'\)\.{op}\(\.\.\.\)$"):
            getattr(x.to_device("cuda"), op)()
    with pytest.raises(NotImplementedError, match=r"^sparse_tensor_array: tensors\[1\] is on "
                       r"cuda:0, but Arrow arrays live in host memory; move it first with "
                       r"\.to_device\('cpu'\)$"):
        asp.sparse.sparse_tensor_array([x, x.to_device("cuda")])
