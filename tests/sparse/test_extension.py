"""Tests of arrow_sparse/sparse/extension.py: the arrow_sparse.* extension types."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseError
from arrow_sparse.sparse import (
    SparseCOOType,
    SparseCSFType,
    SparseCSRType,
    SparseTensorArray,
    sparse_tensor_array,
    sparse_tensor_type,
)

DTYPES = [np.float32, np.float64, np.int64]


# ---------------------------------------------------------------------- helpers
def _random_dense(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    dense = rng.integers(1, 9, size=shape).astype(dtype)
    dense[rng.random(shape) < 0.6] = 0
    return dense


def _assert_same(a: Any, b: Any) -> None:
    """Same class, shape, dtype, index arrays and values (entry order included)."""
    if a is None or b is None:
        assert a is None and b is None
        return
    assert type(a) is type(b)
    assert a.shape == b.shape
    assert a.dtype == b.dtype
    if a.format == "coo":
        np.testing.assert_array_equal(a.values, b.values)
        np.testing.assert_array_equal(a.indices, b.indices)
    elif a.format in ("csr", "csc"):
        start, stop = a.indptr[0], a.indptr[-1]
        np.testing.assert_array_equal(a.indptr - start, b.indptr)
        np.testing.assert_array_equal(a.indices[start:stop], b.indices)
        np.testing.assert_array_equal(a.values[start:stop], b.values)
    else:
        assert a.axis_order == b.axis_order
        ca = a._compact()
        np.testing.assert_array_equal(ca.values, b.values)
        for x, y in zip(ca.indptr, b.indptr, strict=True):
            np.testing.assert_array_equal(x, y)
        for x, y in zip(ca.indices, b.indices, strict=True):
            np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.to_dense(), b.to_dense())


def _assert_all_same(xs: list[Any], ys: list[Any]) -> None:
    assert len(xs) == len(ys)
    for x, y in zip(xs, ys, strict=True):
        _assert_same(x, y)


def _coo_rows(ndim: int, dtype: Any) -> list[Any]:
    rng = np.random.default_rng(ndim)
    rows: list[Any] = []
    for k in range(4):
        shape = tuple(int(s) for s in rng.integers(1, 5, size=ndim))
        rows.append(asp.SparseCOO.from_dense(_random_dense(rng, shape, dtype)))
        if k == 1:
            rows.append(None)
    # empty tensor and a non-canonical one (duplicates, unsorted) keep their layout
    rows.append(asp.SparseCOO(np.zeros((ndim, 0), dtype=np.int64), np.zeros(0, dtype), (3,) * ndim))
    idx = np.array([[1, 0, 1]] * ndim)
    rows.append(asp.SparseCOO(idx, np.array([3, 1, 2], dtype=dtype), (2,) * ndim))
    return rows


def _csr_rows(dtype: Any, cls: Any = asp.SparseCSR) -> list[Any]:
    rng = np.random.default_rng(7)
    rows: list[Any] = [cls.from_dense(_random_dense(rng, (r, c), dtype))
                       for r, c in [(3, 4), (1, 7), (5, 2)]]
    rows.insert(1, None)
    rows.append(cls.from_dense(np.zeros((0, 3), dtype)))
    rows.append(cls.from_dense(np.zeros((4, 4), dtype)))
    big = cls.from_dense(_random_dense(rng, (6, 5), dtype))
    rows.append(big[2:5] if cls is asp.SparseCSR else big[:, 1:4])  # a slice: indptr[0] > 0
    rows.append(None)
    return rows


def _csf_rows(dtype: Any, orders: list[tuple[int, ...]]) -> list[Any]:
    rng = np.random.default_rng(3)
    ndim = len(orders[0])
    rows: list[Any] = []
    for k, order in enumerate(orders):
        shape = tuple(int(s) for s in rng.integers(1, 5, size=ndim))
        rows.append(asp.SparseCSF.from_dense(_random_dense(rng, shape, dtype), axis_order=order))
        if k == 0:
            rows.append(None)
    rows.append(asp.SparseCSF.from_dense(np.zeros((2,) * ndim, dtype), axis_order=orders[-1]))
    return rows


def _cases() -> list[Any]:
    cases = []
    for dtype in DTYPES:
        name = np.dtype(dtype).name
        for ndim in (1, 2, 3, 4):
            cases.append(pytest.param(_coo_rows(ndim, dtype), id=f"coo{ndim}d-{name}"))
        cases.append(pytest.param(_csr_rows(dtype), id=f"csr-{name}"))
        cases.append(pytest.param(_csr_rows(dtype, asp.SparseCSC), id=f"csc-{name}"))
        cases.append(pytest.param(_csf_rows(dtype, [(0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0)]),
                                  id=f"csf3d-{name}"))
        cases.append(pytest.param(_csf_rows(dtype, [(1, 0), (0, 1)]), id=f"csf2d-{name}"))
        cases.append(pytest.param(_csf_rows(dtype, [(3, 1, 0, 2), (0, 1, 2, 3)]),
                                  id=f"csf4d-{name}"))
    return cases


CASES = _cases()


def _table(rows: list[Any]) -> pa.Table:
    return pa.table({"id": pa.array(range(len(rows))), "t": sparse_tensor_array(rows)})


def _column_tensors(table: pa.Table) -> list[Any]:
    col = table.column("t")
    out: list[Any] = []
    for chunk in col.chunks:
        assert isinstance(chunk, SparseTensorArray)
        out.extend(chunk.tensors())
    return out


# ---------------------------------------------------------------------- in memory
@pytest.mark.parametrize("rows", CASES)
def test_array_round_trip(rows: list[Any]) -> None:
    arr = sparse_tensor_array(rows)
    assert isinstance(arr, SparseTensorArray)
    assert len(arr) == len(rows)
    assert arr.null_count == sum(r is None for r in rows)
    _assert_all_same(rows, list(arr.tensors()))
    _assert_all_same(rows, arr.to_pylist())
    _assert_all_same(rows, [arr.to_sparse(i) for i in range(len(rows))])
    _assert_all_same(rows, [s.as_py() for s in arr])
    _assert_all_same(rows[2:5], arr.slice(2, 3).to_pylist())  # a sliced array
    assert arr.validate(full=True) is None


@pytest.mark.parametrize("rows", CASES)
def test_parquet_round_trip(rows: list[Any], tmp_path: Path) -> None:
    table = _table(rows)
    path = tmp_path / "t.parquet"
    asp.io.write_parquet(table, path)
    back = pq.read_table(path)
    assert back.schema.field("t").type == table.schema.field("t").type
    _assert_all_same(rows, _column_tensors(back))
    _assert_all_same(rows, back.column("t").to_pylist())
    batches = list(asp.io.read_parquet(str(path)))
    _assert_all_same(rows, _column_tensors(pa.Table.from_batches(batches)))


@pytest.mark.parametrize("stream", [False, True], ids=["file", "stream"])
@pytest.mark.parametrize("rows", CASES)
def test_ipc_round_trip(rows: list[Any], stream: bool, tmp_path: Path) -> None:
    table = _table(rows)
    path = tmp_path / "t.arrow"
    asp.io.write_ipc(table, path, stream=stream)
    back = asp.io.read_ipc(path)
    assert back.equals(table)
    _assert_all_same(rows, _column_tensors(back))


@pytest.mark.parametrize("rows", [c for c in CASES if c.id and c.id.endswith("float64")])
def test_flight_round_trip(rows: list[Any]) -> None:
    pytest.importorskip("pyarrow.flight")
    table = _table(rows)
    with asp.io.serve_flight(table, "grpc://127.0.0.1:0", batch_rows=5) as server:
        batches = list(asp.io.flight_batches(server.location, b"shard=0/1", timeout=20.0))
    back = pa.Table.from_batches(batches)
    assert back.schema.field("t").type == table.schema.field("t").type
    _assert_all_same(rows, _column_tensors(back))


def test_pq_write_table_and_chunked_column(tmp_path: Path) -> None:
    rows = _coo_rows(2, np.float64)
    table = pa.concat_tables([_table(rows), _table(rows[::-1])])
    assert table.column("t").num_chunks == 2
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=3)
    back = pq.read_table(tmp_path / "t.parquet")
    _assert_all_same(rows + rows[::-1], back.column("t").to_pylist())


def test_bool_and_int32_values() -> None:
    coo = asp.SparseCOO([[0, 2]], np.array([True, False]), (3,))
    csr = asp.SparseCSR(np.array([0, 1, 1], np.int32), np.array([1], np.int32),
                        np.array([7], np.int32), (2, 2))
    for t in (coo, csr):
        back = sparse_tensor_array([t]).to_sparse(0)
        assert back.dtype == t.dtype
        np.testing.assert_array_equal(back.to_dense(), t.to_dense())
    assert sparse_tensor_array([csr]).to_sparse(0).indices.dtype == np.int64  # widened


# ---------------------------------------------------------------------- layout
def test_storage_layout_and_metadata() -> None:
    coo = asp.SparseCOO([[0, 1], [2, 0]], np.array([1.0, 2.0], np.float32), (2, 3))
    arr = sparse_tensor_array([coo, None])
    assert arr.type.extension_name == "arrow_sparse.coo"
    meta = json.loads(arr.type.__arrow_ext_serialize__())
    assert meta == {"ndim": 2, "value_type": "float32", "version": 1}
    storage = arr.storage
    assert storage.type.names == ["shape", "indices", "values"]
    assert storage.to_pylist()[0] == {"shape": [2, 3], "indices": [[0, 2], [1, 0]],
                                      "values": [1.0, 2.0]}
    csf = asp.SparseCSF.from_dense(np.array([[0, 1], [2, 0]], np.int64), axis_order=[1, 0])
    row = sparse_tensor_array([csf]).storage.to_pylist()[0]
    assert row["shape"] == [2, 2] and row["axis_order"] == [1, 0]
    assert row["indices"] == [[0, 1], [1, 0]] and row["indptr"] == [[0, 1, 2]]
    assert row["values"] == [2, 1]
    assert SparseCSFType(pa.int64(), 2).storage_type == sparse_tensor_array([csf]).storage.type


def test_types_equal_pickle_and_repr() -> None:
    import pickle

    t = sparse_tensor_type("csf", np.float32, 3)
    assert t == SparseCSFType(pa.float32(), 3)
    assert t != SparseCSFType(pa.float32(), 4)
    assert pickle.loads(pickle.dumps(t)) == t
    assert repr(SparseCSRType(pa.float64())) == "SparseCSRType(float64)"
    arr = sparse_tensor_array([asp.SparseCOO([[0]], np.array([1.0]), (2,))])
    back = pickle.loads(pickle.dumps(arr))
    _assert_same(arr.to_sparse(0), back.to_sparse(0))


def test_register_is_idempotent_and_replaces_stale() -> None:
    asp.sparse.register_extension_types()
    asp.sparse.register_extension_types()

    class Stale(pa.ExtensionType):
        def __init__(self) -> None:
            super().__init__(pa.int8(), "arrow_sparse.coo")

        def __arrow_ext_serialize__(self) -> bytes:
            return b""

        @classmethod
        def __arrow_ext_deserialize__(cls, storage_type: Any, serialized: bytes) -> Stale:
            return cls()

    pa.unregister_extension_type("arrow_sparse.coo")
    pa.register_extension_type(Stale())
    asp.sparse.register_extension_types()
    arr = sparse_tensor_array([asp.SparseCOO([[0]], np.array([1.0]), (2,))])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, pa.schema([("t", arr.type)])) as w:
        w.write_table(pa.table({"t": arr}))
    back = pa.ipc.open_stream(sink.getvalue()).read_all()
    assert isinstance(back.column("t").type, SparseCOOType)


def test_reader_without_extension_in_process(tmp_path: Path) -> None:
    rows = _csr_rows(np.float64)
    pq.write_table(_table(rows), tmp_path / "t.parquet")
    asp.sparse.unregister_extension_types()
    try:
        back = pq.read_table(tmp_path / "t.parquet")
    finally:
        asp.sparse.register_extension_types()
    col = back.schema.field("t")
    assert pa.types.is_struct(col.type)
    assert col.type.names == ["shape", "indptr", "indices", "values"]
    assert col.metadata[b"ARROW:extension:name"] == b"arrow_sparse.csr"
    restored = pa.ExtensionArray.from_storage(SparseCSRType(pa.float64()),
                                              back.column("t").combine_chunks())
    _assert_all_same(rows, restored.to_pylist())


_PLAIN_READER = """
import sys, json
import pyarrow as pa, pyarrow.parquet as pq, pyarrow.ipc as ipc
assert "arrow_sparse" not in sys.modules
pq_table = pq.read_table(sys.argv[1])
ipc_table = ipc.open_file(sys.argv[2]).read_all()
out = {}
for name, table in (("parquet", pq_table), ("ipc", ipc_table)):
    field = table.schema.field("t")
    out[name] = {"type": str(field.type),
                 "ext": field.metadata[b"ARROW:extension:name"].decode(),
                 "meta": field.metadata[b"ARROW:extension:metadata"].decode(),
                 "rows": table.column("t").to_pylist()}
assert "arrow_sparse" not in sys.modules
print(json.dumps(out))
"""


def test_reader_without_arrow_sparse_sees_structs(tmp_path: Path) -> None:
    coo = asp.SparseCOO([[0, 1], [2, 0]], np.array([1.0, 2.0]), (2, 3))
    table = _table([coo, None])
    pq.write_table(table, tmp_path / "t.parquet")
    asp.io.write_ipc(table, tmp_path / "t.arrow")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-c", _PLAIN_READER, str(tmp_path / "t.parquet"),
         str(tmp_path / "t.arrow")],
        capture_output=True, text=True, check=True, cwd=tmp_path, env=env,
    )
    out = json.loads(proc.stdout)
    for name in ("parquet", "ipc"):
        got = out[name]
        # Parquet names list items "element", IPC keeps "item": readers match on position
        assert re.match(r"struct<shape: fixed_size_list<\w+: int64>\[2\], indices: "
                        r"large_list<\w+: fixed_size_list<\w+: int64>\[2\]>, "
                        r"values: large_list<\w+: double>>$", got["type"]), got["type"]
        assert got["ext"] == "arrow_sparse.coo"
        assert json.loads(got["meta"]) == {"ndim": 2, "value_type": "float64", "version": 1}
        assert got["rows"][0] == {"shape": [2, 3], "indices": [[0, 2], [1, 0]],
                                  "values": [1.0, 2.0]}
        assert got["rows"][1] is None


# ---------------------------------------------------------------------- errors
def test_mixing_formats_raises() -> None:
    coo = asp.SparseCOO([[0]], np.array([1.0]), (2,))
    csr = asp.SparseCSR.from_dense(np.eye(2))
    with pytest.raises(TypeError, match=r"tensors\[1\] is a SparseCSR but tensors\[0\] is COO"):
        sparse_tensor_array([coo, csr])
    with pytest.raises(TypeError, match=r"tensors\[2\] is a SparseCSC but tensors\[0\] is CSR"):
        sparse_tensor_array([csr, None, csr.to_csc()])


def test_mixing_value_dtypes_raises() -> None:
    a = asp.SparseCOO([[0]], np.array([1.0]), (2,))
    b = asp.SparseCOO([[0]], np.array([1.0], np.float32), (2,))
    with pytest.raises(TypeError, match=r"tensors\[1\] has values of dtype float32 but "
                                        r"tensors\[0\] has float64"):
        sparse_tensor_array([a, b])
    with pytest.raises(ArrowSparseError, match="one value dtype"):
        sparse_tensor_array([b], type=sparse_tensor_type("coo", np.float64, 1))


def test_mixing_ndims_raises() -> None:
    a = asp.SparseCOO([[0]], np.array([1.0]), (2,))
    b = asp.SparseCOO([[0], [0]], np.array([1.0]), (2, 2))
    with pytest.raises(TypeError, match=r"tensors\[1\] has 2 dimensions but tensors\[0\] has 1"):
        sparse_tensor_array([a, b])


def test_bad_inputs_raise() -> None:
    with pytest.raises(TypeError, match=r"tensors\[0\] is a ndarray, expected a SparseCOO"):
        sparse_tensor_array([np.eye(2)])
    with pytest.raises(TypeError, match="tensors must be a sequence"):
        sparse_tensor_array(asp.SparseCSR.from_dense(np.eye(2)))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cannot infer the type of 2 tensors that are all None"):
        sparse_tensor_array([None, None])
    with pytest.raises(TypeError, match="type must be a SparseTensorType"):
        sparse_tensor_array([], type=pa.int64())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="format must be one of"):
        sparse_tensor_type("dok", np.float64)
    with pytest.raises(TypeError, match="value_type must be bool, an integer type"):
        sparse_tensor_type("coo", pa.string())
    with pytest.raises(TypeError, match="value_type must be bool, an integer type"):
        sparse_tensor_type("coo", np.float16)
    with pytest.raises(ValueError, match="a CSR matrix has ndim 2, got 3"):
        sparse_tensor_type("csr", np.float64, 3)
    with pytest.raises(ValueError, match="ndim must be a positive integer"):
        sparse_tensor_type("coo", np.float64, 0)
    arr = sparse_tensor_array([asp.SparseCOO([[0]], np.array([1.0]), (2,))])
    with pytest.raises(IndexError, match="to_sparse: row 3 out of range for an array of 1 rows"):
        arr.to_sparse(3)
    with pytest.raises(TypeError, match="to_sparse: i must be an integer"):
        arr.to_sparse("0")  # type: ignore[arg-type]


def test_all_null_and_empty_with_type() -> None:
    t = sparse_tensor_type("csf", np.float64, 3)
    arr = sparse_tensor_array([None, None], type=t)
    assert arr.to_pylist() == [None, None]
    assert len(sparse_tensor_array([], type=t)) == 0


def test_corrupt_storage_is_refused() -> None:
    t = SparseCOOType(pa.float64(), 1)
    storage = pa.array([{"shape": [2], "indices": [[5]], "values": [1.0]}], type=t.storage_type)
    arr = pa.ExtensionArray.from_storage(t, storage)
    with pytest.raises(IndexError, match="out of range"):
        arr.to_sparse(0)
    storage = pa.array([{"shape": [2], "indices": [[0]], "values": [None]}], type=t.storage_type)
    with pytest.raises(ValueError, match="values holds nulls"):
        pa.ExtensionArray.from_storage(t, storage).to_pylist()
    with pytest.raises(ValueError, match="storage layout version 2 is not supported"):
        SparseCOOType.__arrow_ext_deserialize__(t.storage_type,
                                                b'{"ndim":1,"value_type":"float64","version":2}')
    with pytest.raises(TypeError, match="metadata value_type 'int64' does not match"):
        SparseCOOType.__arrow_ext_deserialize__(t.storage_type,
                                                b'{"ndim":1,"value_type":"int64","version":1}')


# ---------------------------------------------------------------------- properties
@st.composite
def _tensors(draw: st.DrawFn) -> tuple[str, list[Any]]:
    fmt = draw(st.sampled_from(["coo", "csr", "csc", "csf"]))
    ndim = 2 if fmt in ("csr", "csc") else draw(st.integers(1, 4))
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int64, np.bool_]))
    order = tuple(draw(st.permutations(range(ndim))))
    rows: list[Any] = []
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.booleans()) and draw(st.booleans()):
            rows.append(None)
            continue
        shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
        size = int(np.prod(shape))
        flat = draw(st.lists(st.integers(0, 3), min_size=size, max_size=size))
        dense = np.array(flat, dtype=dtype).reshape(shape)
        if fmt == "coo":
            rows.append(asp.SparseCOO.from_dense(dense))
        elif fmt == "csr":
            rows.append(asp.SparseCSR.from_dense(dense))
        elif fmt == "csc":
            rows.append(asp.SparseCSC.from_dense(dense))
        else:
            rows.append(asp.SparseCSF.from_dense(dense, axis_order=order))
    return fmt, rows


@pytest.mark.hypothesis
@given(_tensors())
def test_round_trip_property(case: tuple[str, list[Any]]) -> None:
    fmt, rows = case
    ndim = 2 if fmt in ("csr", "csc") else None
    given_type = None
    if all(r is None for r in rows):
        given_type = sparse_tensor_type(fmt, np.float64, ndim or 1)
    arr = sparse_tensor_array(rows, type=given_type)
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"t": arr}), sink)
    back = pq.read_table(pa.BufferReader(sink.getvalue())).column("t").to_pylist()
    _assert_all_same(rows, back)
