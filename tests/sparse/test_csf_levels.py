"""Tests of the CSF level formats (``"dense"`` / ``"compressed"`` per level, as TACO's).

Every combination of formats on the Compressed Sparse Fibers post's 4-d tensor against
numpy on every backend; the known special cases (``("dense", "compressed")`` is CSR,
``("dense", "dense")`` a dense array); repeated coordinates under a dense leaf level;
the constructor's check of a declared dense level; and the ``arrow_sparse.csf``
extension type carrying the formats through Parquet and IPC.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.sparse import SparseCSFType, sparse_tensor_array, sparse_tensor_type
from tests.sparse._helpers import (
    POST_COLS,
    POST_COORDS,
    POST_INDPTR,
    POST_MATRIX,
    POST_SHAPE,
    POST_TENSOR_VALUES,
    POST_VALUES,
    assert_dense_equal,
    coo_tensors,
    host,
    on,
    post_tensor,
)

D, C = "dense", "compressed"
ALL_4D = list(itertools.product([D, C], repeat=4))


def post_coo() -> asp.SparseCOO:
    return asp.SparseCOO(POST_COORDS, POST_TENSOR_VALUES, POST_SHAPE)


def reference_levels(dense: np.ndarray, order: tuple[int, ...], formats: tuple[str, ...]
                     ) -> tuple[list[list[int]], list[list[int]], list[Any]]:
    """Plain-Python TACO levels of ``dense``: walk the tree of coordinate prefixes.

    A dense level lists every coordinate under a parent; a compressed level the
    coordinates under which some nonzero lies. Independent of the library's builder.
    """
    moved = np.transpose(dense, order)
    sizes = moved.shape
    indptr: list[list[int]] = [[0] for _ in range(len(sizes) - 1)]
    indices: list[list[int]] = [[] for _ in sizes]
    values: list[Any] = []

    def visit(prefix: tuple[int, ...], k: int) -> None:
        for c in range(sizes[k]):
            sub = moved[(*prefix, c)]
            if formats[k] == C and not np.any(sub != 0):
                continue
            indices[k].append(c)
            if k == len(sizes) - 1:
                values.append(sub.item())
            else:
                visit((*prefix, c), k + 1)
                indptr[k].append(len(indices[k + 1]))

    visit((), 0)
    return indptr, indices, values


# ------------------------------------------------------------------------- post tensor
@pytest.mark.parametrize("formats", ALL_4D, ids=["".join(f[0] for f in fs) for fs in ALL_4D])
def test_post_tensor_every_format_matches_reference(backend: str,
                                                    formats: tuple[str, ...]) -> None:
    for order in [(0, 1, 2, 3), (3, 1, 0, 2)]:
        csf = post_coo()
        csf = on(csf, backend).to_csf(order, level_formats=formats)
        assert csf.level_formats == formats and csf.axis_order == order
        assert_dense_equal(csf, post_tensor(), backend)
        got = host(csf, backend)
        ptr, idx, vals = reference_levels(post_tensor(), order, formats)
        assert [p.tolist() for p in got.indptr] == ptr
        assert [i.tolist() for i in got.indices] == idx
        assert got.values.tolist() == vals
        from_dense = asp.SparseCSF.from_dense(on(post_tensor(), backend), order,
                                              level_formats=formats)
        assert_dense_equal(from_dense, post_tensor(), backend)
        assert host(from_dense, backend).values.tolist() == vals
        # the constructor accepts what was built, and checks its dense levels
        again = asp.SparseCSF(got.indptr, got.indices, got.values, POST_SHAPE, order,
                              level_formats=formats)
        np.testing.assert_array_equal(again.to_dense(), post_tensor())
        np.testing.assert_array_equal(host(csf.to_coo().to_dense(), backend), post_tensor())


def test_dense_compressed_is_csr_and_dense_dense_is_the_array() -> None:
    csr_like = asp.SparseCSF.from_dense(POST_MATRIX, level_formats=(D, C))
    assert csr_like.indptr[0].tolist() == POST_INDPTR
    assert csr_like.indices[0].tolist() == [0, 1, 2, 3]
    assert csr_like.indices[1].tolist() == POST_COLS
    assert csr_like.values.tolist() == POST_VALUES
    full = asp.SparseCSF.from_dense(POST_MATRIX, level_formats=(D, D))
    assert full.values.tolist() == POST_MATRIX.ravel().tolist()
    assert full.nnz == POST_MATRIX.size
    # columns dense under the non-empty rows: CSR of dense row vectors
    rows = asp.SparseCSF.from_dense(np.array([[0, 0], [1, 0], [0, 0], [2, 3]]),
                                    level_formats=(C, D))
    assert rows.indices[0].tolist() == [1, 3]
    assert rows.values.tolist() == [1, 0, 2, 3]
    # columns outermost and dense: CSC
    csc_like = asp.SparseCSF.from_dense(POST_MATRIX, axis_order=(1, 0), level_formats=(D, C))
    np.testing.assert_array_equal(csc_like.indptr[0], asp.SparseCSC.from_dense(POST_MATRIX).indptr)


def test_post_csr_as_leading_dense_level() -> None:
    # the post's 4-d CSR: i indptr = [0, 0, 5, 8] is a dense i level over compressed j
    csf = post_coo().to_csf(level_formats=(D, C, C, C))
    assert csf.indices[0].tolist() == [0, 1, 2]
    assert csf.indptr[0].tolist() == [0, 0, 2, 3]
    assert repr(csf) == ("SparseCSF(shape=(3, 3, 3, 4), nnz=8, dtype=float64, axis_order="
                         "(0, 1, 2, 3), level_formats=('dense', 'compressed', 'compressed', "
                         "'compressed'))")


def test_repeated_coordinates_under_a_dense_leaf_level(backend: str) -> None:
    coo = on(asp.SparseCOO([[1, 0, 1, 1], [2, 1, 2, 0]], np.array([1.0, 2.0, 3.0, 4.0]),
                           (2, 3)), backend)
    dense_leaves = host(coo.to_csf(level_formats=(C, D)), backend)
    assert dense_leaves.values.tolist() == [0.0, 2.0, 0.0, 4.0, 0.0, 4.0]
    kept = host(coo.to_csf(level_formats=(D, C)), backend)  # compressed leaves: kept repeated
    assert kept.values.tolist() == [2.0, 4.0, 1.0, 3.0]
    flags = asp.SparseCOO([[0, 0, 1]], np.array([True, True, False]), (3,))
    assert flags.to_csf(level_formats=(D,)).values.tolist() == [True, False, False]


def test_conversions_between_formats_and_devices(backend: str) -> None:
    csf = on(asp.SparseCSF.from_dense(post_tensor(), level_formats=(D, C, D, C)), backend)
    assert csf.to_csf() is csf and csf.to_csf(level_formats=(D, C, D, C)) is csf
    plain = csf.to_csf(level_formats=(C, C, C, C))
    assert plain.level_formats == (C,) * 4
    assert_dense_equal(plain, post_tensor(), backend)
    assert host(plain, backend).nnz == csf.nnz  # explicit zeros of dense levels stay stored
    assert_dense_equal(csf.to_csf([2, 0, 1, 3]), post_tensor(), backend)
    assert csf.to_csf([2, 0, 1, 3]).level_formats == (C,) * 4
    assert (csf * 2).level_formats == csf.level_formats
    assert_dense_equal(csf * 2, post_tensor() * 2, backend)
    assert host(csf, backend).level_formats == (D, C, D, C)  # kept through to_device
    assert_dense_equal(csf.to_csr(), post_tensor(), backend)
    # everything else reads the materialised levels; results are declared compressed
    assert not csf.is_canonical  # the dense k level has childless nodes
    assert csf.canonical().level_formats == (C,) * 4
    assert_dense_equal(csf.canonical(), post_tensor(), backend)
    assert_dense_equal(csf[2], post_tensor()[2], backend)
    assert_dense_equal(csf[0:2], post_tensor()[0:2], backend)
    assert_dense_equal(csf.T, post_tensor().T, backend)
    np.testing.assert_allclose(host(csf.sum(axis=1), backend), post_tensor().sum(axis=1))


@settings(max_examples=40, deadline=None)
@given(coo_tensors(min_ndim=1, max_ndim=3, max_dim=4), st.data())
def test_any_coo_any_formats_matches_oracle(case: tuple[asp.SparseCOO, np.ndarray],
                                            data: st.DataObject) -> None:
    coo, expected = case
    formats = tuple(data.draw(st.lists(st.sampled_from([D, C]), min_size=coo.ndim,
                                       max_size=coo.ndim)))
    order = tuple(data.draw(st.permutations(range(coo.ndim))))
    csf = coo.to_csf(order, level_formats=formats)
    np.testing.assert_array_equal(csf.to_dense(), expected)
    csf.validate()
    asp.SparseCSF(csf.indptr, csf.indices, csf.values, csf.shape, order, level_formats=formats)


# ------------------------------------------------------------------------------- errors
def test_level_format_errors() -> None:
    with pytest.raises(ValueError, match=r"^SparseCOO.to_csf: level_formats has 3 entries but "
                                         r"the tensor has 4 levels"):
        post_coo().to_csf(level_formats=(D, C, C))
    with pytest.raises(ValueError, match=r"^SparseCSF.from_dense: level_formats\[1\] must be "
                                         r"'dense' or 'compressed', got 'sparse'"):
        asp.SparseCSF.from_dense(POST_MATRIX, level_formats=(D, "sparse"))
    with pytest.raises(ValueError, match=r"^SparseCSF: level_formats must be a sequence"):
        asp.SparseCSF([[0, 1]], [[1], [0]], np.array([1.0]), (2, 2), level_formats="dense")
    # level 0 holds only coordinate 1 of 2: not dense
    with pytest.raises(ValueError, match=r"^SparseCSF: level 0 is dense but its nodes are not "
                                         r"every coordinate 0..1 under each of its 1 parents"):
        asp.SparseCSF([[0, 1]], [[1], [0]], np.array([1.0]), (2, 2), level_formats=(D, C))
    with pytest.raises(ValueError, match=r"^SparseCSF: level 1 is dense but"):
        asp.SparseCSF([[0, 1, 3]], [[0, 1], [1, 0, 1]], np.array([1, 2, 3]), (2, 2),
                      level_formats=(D, D))


# -------------------------------------------------------------------- the extension type
def _rows() -> list[Any]:
    formats = (D, C, D, C)
    return [post_coo().to_csf(level_formats=formats), None,
            asp.SparseCSF.from_dense(np.zeros((2, 1, 3, 2)), level_formats=formats),
            asp.SparseCSF.from_dense(post_tensor()[:, ::-1], [1, 0, 2, 3], level_formats=formats)]


def _check_rows(rows: list[Any], back: list[Any]) -> None:
    assert len(rows) == len(back)
    for a, b in zip(rows, back, strict=True):
        if a is None:
            assert b is None
            continue
        assert b.level_formats == a.level_formats and b.axis_order == a.axis_order
        for x, y in zip(a.indptr + a.indices, b.indptr + b.indices, strict=True):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(a.values, b.values)


def test_extension_metadata_and_storage() -> None:
    rows = _rows()
    arr = sparse_tensor_array(rows)
    assert arr.type == SparseCSFType(pa.float64(), 4, (D, C, D, C))
    assert arr.type.level_formats == (D, C, D, C)
    meta = json.loads(arr.type.__arrow_ext_serialize__())
    assert meta["level_formats"] == [D, C, D, C]
    # a dense level's coordinates and pointers are not stored
    first = arr.storage.field("indices")[0].as_py()
    assert first[0] == [] and first[2] == []
    assert arr.storage.field("indptr")[0].as_py()[1] == []
    _check_rows(rows, list(arr.tensors()))
    # all compressed: version 1's metadata, byte for byte
    plain = SparseCSFType(pa.float64(), 4)
    assert plain.__arrow_ext_serialize__() == (
        b'{"ndim":4,"value_type":"float64","version":1}')
    assert sparse_tensor_type("csf", np.float64, 4, level_formats=(D, C, D, C)) == arr.type
    assert arr.type != plain


def test_extension_parquet_and_ipc_round_trips(tmp_path: Path) -> None:
    rows = _rows()
    table = pa.table({"t": sparse_tensor_array(rows)})
    pq.write_table(table, tmp_path / "t.parquet")
    back = pq.read_table(tmp_path / "t.parquet")
    assert back.schema.field("t").type == table.schema.field("t").type
    _check_rows(rows, back.column("t").to_pylist())
    for stream in (False, True):
        asp.io.write_ipc(table, tmp_path / "t.arrow", stream=stream)
        again = asp.io.read_ipc(tmp_path / "t.arrow")
        assert again.equals(table)
        _check_rows(rows, again.column("t").to_pylist())
        np.testing.assert_array_equal(again.column("t").chunk(0).to_sparse(0).to_dense(),
                                      post_tensor())


def test_extension_errors() -> None:
    mixed = [post_coo().to_csf(level_formats=(D, C, C, C)), post_coo().to_csf()]
    with pytest.raises(TypeError, match=r"^sparse_tensor_array: tensors\[1\] has level_formats "
                                        r"\('compressed',.*but tensors\[0\] has \('dense',"):
        sparse_tensor_array(mixed)
    with pytest.raises(ValueError, match=r"^sparse_tensor_type: level_formats is for the csf "
                                         r"format only"):
        sparse_tensor_type("coo", np.float64, 2, level_formats=(D, C))
    with pytest.raises(ValueError, match=r"^SparseCSFType: level_formats has 1 entries"):
        SparseCSFType(pa.float64(), 2, (D,))
    # a storage row that stores arrays for a level the type makes dense
    good = sparse_tensor_array([post_coo().to_csf()])
    dense_type = SparseCSFType(pa.float64(), 4, (D, C, C, C))
    forged = pa.ExtensionArray.from_storage(dense_type, good.storage)
    with pytest.raises(ValueError, match=r"^arrow_sparse.csf: row 0 stores arrays for level 0, "
                                         r"which the type's level_formats make dense"):
        forged.to_sparse(0)
