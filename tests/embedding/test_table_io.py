"""Tests of ``arrow_sparse.embedding.table_io``: ``save_table`` and ``load_table``.

Round trips on every backend of the ``backend`` fixture, the memory map (read-only, and
writable: training the file in place), the file any Arrow reader reads, and the errors.
"""

from __future__ import annotations

import pathlib
import re
import sys
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from arrow_sparse import _backend
from arrow_sparse import embedding as emb
from arrow_sparse.errors import ArrowSparseIOError, ArrowSparseTypeError, ArrowSparseValueError

from ..conftest import on_device, to_backend
from ._helpers import grads
from ._reference import ref_adagrad


def ipc_file(path: pathlib.Path, *batches: pa.RecordBatch) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, batches[0].schema) as w:
        for batch in batches:
            w.write_batch(batch)


def test_save_load_table_roundtrip_and_mmap(tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(11)
    table = rng.standard_normal((1000, 16)).astype(np.float32)
    path = tmp_path / "t.arrow"
    emb.save_table(table, path)
    with pa.memory_map(str(path)) as src:
        schema = ipc.open_file(src).schema
    assert schema.field(0).type == pa.list_(pa.float32(), 16)
    view = emb.load_table(path)
    np.testing.assert_array_equal(view, table)
    assert not view.flags.writeable and not view.flags.owndata
    if sys.platform.startswith("linux"):
        addr = view.ctypes.data
        inside = False
        for line in pathlib.Path("/proc/self/maps").read_text().splitlines():
            if line.endswith(str(path)):
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                inside |= lo <= addr < hi and addr + view.nbytes <= hi
        assert inside, "the table's buffer is not inside the file's memory mapping"
    copy = emb.load_table(path, mmap=False)
    assert copy.flags.writeable and copy.flags.owndata
    np.testing.assert_array_equal(copy, table)
    with pytest.raises(ValueError, match="read-only memory map"):
        emb.sgd(view, emb.SparseGrad(np.array([0]), np.ones((1, 16), np.float32)), 0.1)
    emb.save_table(np.zeros((0, 3)), tmp_path / "empty.arrow")
    assert emb.load_table(tmp_path / "empty.arrow").shape == (0, 3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_save_load_table_on_every_backend(dtype: Any, backend: str,
                                          tmp_path: pathlib.Path) -> None:
    table = np.arange(12, dtype=dtype).reshape(4, 3) - 5.5
    device = "cuda" if on_device(backend) else "cpu"
    for i, t in enumerate((table, table[:0])):  # an empty table too
        path = tmp_path / f"t{i}.arrow"
        emb.save_table(to_backend(t, backend), path)
        for mmap in (True, False):
            back = emb.load_table(path, mmap=mmap, device=device)
            assert _backend.is_cupy_array(back) == on_device(backend)
            host = _backend.to_host(back)
            assert host.dtype == dtype and host.shape == t.shape
            np.testing.assert_array_equal(host, t)


def test_save_load_table_errors(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ArrowSparseIOError, match=r"load_table: path '.*missing\.arrow' does "
                                                 "not exist"):
        emb.load_table(tmp_path / "missing.arrow")
    with pytest.raises(ArrowSparseTypeError, match="load_table: path must be a path"):
        emb.load_table(3)  # type: ignore[arg-type]
    bad = tmp_path / "bad.arrow"
    bad.write_bytes(b"not arrow at all")
    with pytest.raises(ArrowSparseValueError, match=r"load_table: file '.*bad\.arrow' is not "
                                                    "valid Arrow IPC; it is corrupt"):
        emb.load_table(bad)
    bad.write_bytes(b"")
    with pytest.raises(ArrowSparseValueError, match=r"load_table: file '.*bad\.arrow' is empty"):
        emb.load_table(bad)
    other = tmp_path / "other.arrow"
    batch = pa.record_batch({"x": pa.array([[1.0]])})
    with pa.OSFile(str(other), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as w:
        w.write_batch(batch)
    with pytest.raises(ArrowSparseTypeError, match=r"load_table: the column of file "
                       r"'.*other\.arrow' must be fixed_size_list<float32\|float64>\[dim\]"):
        emb.load_table(other)
    two = tmp_path / "two.arrow"
    ipc_file(two, pa.record_batch({"a": pa.array([1.0]), "b": pa.array([2.0])}))
    with pytest.raises(ArrowSparseValueError, match=r"two\.arrow' must hold one column, got 2"):
        emb.load_table(two)
    with pytest.raises(TypeError, match="save_table: table must be float32 or float64"):
        emb.save_table(np.zeros((2, 2), np.int64), tmp_path / "i.arrow")


def test_load_table_writable_trains_the_file(tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(17)
    table = rng.standard_normal((500, 8)).astype(np.float32)
    path = tmp_path / "t.arrow"
    emb.save_table(table, path)
    mapped = emb.load_table(path, writable=True)
    assert isinstance(mapped, np.memmap) and mapped.flags.writeable
    np.testing.assert_array_equal(mapped, table)
    state = np.zeros_like(table)
    expected, ref_state = table.copy(), state.copy()
    for flat, offsets, dy in grads(rng, 3, 500, 8):
        g = emb.lookup_backward(dy, flat, offsets=offsets, num_embeddings=500)
        emb.adagrad(mapped, state, g, 0.1)
        ref_adagrad(expected, ref_state, g.rows, g.values, 0.1, 1e-10)
    mapped.flush()
    del mapped
    np.testing.assert_allclose(emb.load_table(path), expected, rtol=1e-6)  # in the file
    with pa.memory_map(str(path)) as src:  # still a plain Arrow file any reader reads
        column = ipc.open_file(src).read_all().column(0)
        np.testing.assert_allclose(np.array(column.to_pylist()), expected, rtol=1e-6)
    assert emb.load_table(tmp_path / "t.arrow", writable=True).shape == (500, 8)
    emb.save_table(np.zeros((0, 3), np.float32), tmp_path / "empty.arrow")
    assert emb.load_table(tmp_path / "empty.arrow", writable=True).shape == (0, 3)


def test_load_table_writable_errors(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "t.arrow"
    emb.save_table(np.ones((4, 2), np.float32), path)
    with pytest.raises(ValueError, match="load_table: writable=True maps the file for writing"):
        emb.load_table(path, mmap=False, writable=True)
    with pytest.raises(TypeError, match="load_table: writable must be True or False"):
        emb.load_table(path, writable="yes")
    two = tmp_path / "two.arrow"
    batch = pa.record_batch([pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2.0]), 2)],
                            names=["embedding"])
    with pa.OSFile(str(two), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as w:
        w.write_batch(batch)
        w.write_batch(batch)
    assert emb.load_table(two).shape == (2, 2)  # read-only: batches concatenated
    with pytest.raises(ValueError, match="writable=True needs a file of one record batch"):
        emb.load_table(two, writable=True)
    packed = tmp_path / "packed.arrow"
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.OSFile(str(packed), "wb") as sink, \
            pa.ipc.new_file(sink, batch.schema, options=options) as w:
        w.write_batch(batch)
    with pytest.raises(ValueError, match="not stored as one uncompressed buffer"):
        emb.load_table(packed, writable=True)
    nulls = tmp_path / "nulls.arrow"
    batch = pa.record_batch([pa.FixedSizeListArray.from_arrays(pa.array([1.0, None]), 2)],
                            names=["embedding"])
    with pa.OSFile(str(nulls), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as w:
        w.write_batch(batch)
    with pytest.raises(ArrowSparseValueError, match=r"load_table: file '.*nulls\.arrow' holds "
                                                    "null values"):
        emb.load_table(nulls)
    batch = pa.record_batch([pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2.0]), 2,
                                                               mask=pa.array([True]))],
                            names=["embedding"])
    ipc_file(nulls, batch)
    with pytest.raises(ArrowSparseValueError, match="nulls\\.arrow' holds null rows"):
        emb.load_table(nulls)


def test_tables_load_to_and_save_from_the_device(cp: ModuleType,
                                                 tmp_path: pathlib.Path) -> None:
    path = tmp_path / "t.arrow"
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    emb.save_table(cp.asarray(table), path)  # copied to the host to be written
    on = emb.load_table(path, device="cuda")
    assert _backend.is_cupy_array(on) and on.get().tolist() == table.tolist()
    assert emb.load_table(path, mmap=False, device="cuda:1").device.id == 1
    with pytest.raises(ValueError, match="^load_table: writable=True maps the file into host "
                       "memory and needs device='cpu', got 'cuda'"):
        emb.load_table(path, writable=True, device="cuda")
    with pytest.raises(ValueError, match="^load_table: device must be 'cpu', 'cuda' or "
                       "'cuda:N', got 'gpu'"):
        emb.load_table(path, device="gpu")


DAMAGED_SCRIPT = """
import sys
import numpy as np
import arrow_sparse as asp

path, bad, offset = sys.argv[1:]
asp.embedding.save_table(np.arange(8, dtype=np.float32).reshape(4, 2), path)
data = bytearray(open(path, "rb").read())
data[int(offset)] ^= 0xFF
open(bad, "wb").write(bytes(data))
try:
    table = asp.embedding.load_table(bad)
    print("loaded", table.shape, float(np.asarray(table, dtype=np.float64).sum()))
except asp.errors.ArrowSparseError as exc:
    print(type(exc).__name__, exc)
"""


@pytest.mark.parametrize("offset", [333, 559])
def test_load_table_one_flipped_byte_issue_14(tmp_path: pathlib.Path, offset: int) -> None:
    # Byte 559 (the footer's fixed_size_list size) made load_table crash the interpreter;
    # byte 333 raised a bare OSError naming neither the function nor the file. A
    # subprocess, so that a crash fails this test instead of ending the run.
    import subprocess

    result = subprocess.run([sys.executable, "-c", DAMAGED_SCRIPT, str(tmp_path / "t.arrow"),
                             str(tmp_path / "bad.arrow"), str(offset)],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert re.match(r"ArrowSparseValueError load_table: file '.*bad\.arrow' is not valid Arrow "
                    r"IPC( \(record batch 0\))?; it is corrupt or truncated", result.stdout), \
        result.stdout
