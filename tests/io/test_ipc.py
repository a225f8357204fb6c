"""Tests of ``arrow_sparse.io.ipc``: writing Arrow IPC files and streams (write_ipc) to
paths, file objects, sockets and stdout, and reading them back memory-mapped (read_ipc).
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseTypeError, ArrowSparseValueError
from arrow_sparse.io import ArrowSparseIOError

from ._helpers import SAMPLE, small_table


def run_python(code: str, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          timeout=300, check=False, **kwargs)


# ---------------------------------------------------------------------------------- IPC
@pytest.mark.parametrize("stream", [False, True], ids=["file", "stream"])
@pytest.mark.parametrize("offsets", [pa.int32, pa.int64], ids=["list", "large_list"])
def test_ipc_round_trip(tmp_path: Path, stream: bool, offsets: Any) -> None:
    table = small_table(offsets).replace_schema_metadata({b"owner": b"me"})
    path = tmp_path / "t.arrow"
    assert asp.io.write_ipc(table, path, stream=stream) == 4
    for memory_map in (True, False):
        back = asp.io.read_ipc(path, memory_map=memory_map)
        assert back.equals(table)  # types: list vs large_list, item names and all
        assert back.schema.metadata[b"owner"] == b"me"
        assert json.loads(back.schema.metadata[b"arrow_sparse"])["version"] == asp.__version__


def _mappings_of(path: Path) -> list[tuple[int, int]]:
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            if line.rstrip().endswith(str(path)):
                start, stop = line.split()[0].split("-")
                ranges.append((int(start, 16), int(stop, 16)))
    return ranges


def _buffers(table: pa.Table) -> list[pa.Buffer]:
    # Array.buffers() lists the children's buffers too (a list's values).
    return [b for column in table.columns for chunk in column.chunks
            for b in chunk.buffers() if b is not None and b.size]


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc (Linux)")
def test_read_ipc_buffers_lie_inside_the_mapping(tmp_path: Path) -> None:
    path = tmp_path / "big.arrow"
    table = pa.table({"ids": pa.array([list(range(i % 50)) for i in range(20_000)]),
                      "w": np.random.default_rng(0).random(20_000)})
    asp.io.write_ipc(table, path)
    mapped = asp.io.read_ipc(path)
    ranges = _mappings_of(path)
    assert ranges, "the file is not mapped"
    buffers = _buffers(mapped)
    assert len(buffers) == 3  # offsets and values of ids, data of w
    for buf in buffers:
        assert any(lo <= buf.address and buf.address + buf.size <= hi for lo, hi in ranges)
    jagged = asp.Jagged.from_arrow(mapped.column("ids"))  # zero-copy on top of zero-copy
    assert any(lo <= np.asarray(jagged.values).ctypes.data < hi for lo, hi in ranges)
    del mapped, jagged, buffers

    loaded = asp.io.read_ipc(path, memory_map=False)
    ranges = _mappings_of(path)
    for buf in _buffers(loaded):
        assert not any(lo <= buf.address < hi for lo, hi in ranges)


RSS_SCRIPT = """
import os, sys, json
import arrow_sparse as asp

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

path = sys.argv[1]
before = rss()
table = asp.io.read_ipc(path)
opened = rss()
total = int(table.column("x").chunk(0).sum().as_py())
touched = rss()
print(json.dumps({"before": before, "opened": opened, "touched": touched,
                  "nbytes": table.nbytes, "file": os.path.getsize(path), "total": total}))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_read_ipc_rss_does_not_grow_with_file_size(tmp_path: Path) -> None:
    path = tmp_path / "400mb.arrow"
    chunk = 5_000_000  # 40 MB of int64 per batch, 10 batches: 400 MB

    def batches() -> Any:
        for i in range(10):
            yield pa.record_batch({"x": np.full(chunk, i, dtype=np.int64)})

    asp.io.write_ipc(batches(), path)
    result = subprocess.run([sys.executable, "-c", RSS_SCRIPT, str(path)], capture_output=True,
                            text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    assert got["file"] > 400_000_000 and got["nbytes"] == 400_000_000
    grown = got["opened"] - got["before"]
    print(f"\nRSS on opening a {got['file'] / 1e6:.0f} MB IPC file: +{grown / 1e6:.2f} MB; "
          f"after reading the first batch: +{(got['touched'] - got['before']) / 1e6:.1f} MB")
    assert grown < got["file"] / 50, got  # under 8 MB for 400 MB
    assert got["total"] == 0  # the first batch (all zeros) was read through the mapping


def test_write_ipc_to_bytesio_file_and_stream() -> None:
    table = small_table()
    for stream, opener in ((False, pa.ipc.open_file), (True, pa.ipc.open_stream)):
        sink = io.BytesIO()
        assert asp.io.write_ipc(table, sink, stream=stream) == 4
        assert not sink.closed
        assert opener(sink.getvalue()).read_all().equals(table)
        sink.seek(0)
        if stream:
            assert asp.io.read_ipc(sink).equals(table)


@pytest.mark.parametrize("stream", [False, True], ids=["file", "stream"])
def test_write_ipc_to_a_socket(stream: bool) -> None:
    left, right = socket.socketpair()
    table = small_table()

    def send() -> None:
        with left:
            asp.io.write_ipc((table.slice(i, 1) for i in range(4)), left, stream=stream)

    sender = threading.Thread(target=send)
    sender.start()
    with right, right.makefile("rb") as reader:
        if stream:
            received = asp.io.read_ipc(reader)
        else:
            received = pa.ipc.open_file(pa.py_buffer(reader.read())).read_all()
    sender.join()
    assert received.equals(table)
    assert len(received.to_batches()) == 4  # written batch by batch, not buffered


def test_write_ipc_to_stdout_and_read_ipc_from_stdin(tmp_path: Path) -> None:
    writer = run_python("""
        import pyarrow as pa, arrow_sparse as asp
        print("not part of the stream", end="")
        asp.io.write_ipc(pa.table({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]]}), "-", stream=True)
    """)
    assert writer.returncode == 0, writer.stderr
    prefix = b"not part of the stream"
    assert writer.stdout.startswith(prefix)
    payload = writer.stdout[len(prefix):]
    assert pa.ipc.open_stream(payload).read_all().column("ids").to_pylist() == \
        [[1, 2, 3], [2, 4, 6, 7], [3, 6]]
    reader = run_python("""
        import arrow_sparse as asp
        print(asp.io.read_ipc("-").column("ids").to_pylist())
    """, input=payload)
    assert reader.returncode == 0, reader.stderr
    assert reader.stdout.decode().strip() == "[[1, 2, 3], [2, 4, 6, 7], [3, 6]]"


def test_write_ipc_compression_and_keyed_jagged(tmp_path: Path) -> None:
    path = tmp_path / "t.arrow"
    kj = asp.KeyedJagged.from_arrow(small_table(), keys=["ids"], weights="scores")
    assert asp.io.write_ipc(kj, path, compression="zstd") == 4
    back = asp.io.read_ipc(path)
    assert back.schema.names == ["ids", "ids_weights"]
    assert back.column("ids").to_pylist() == [[1, 2, 3], [2, 4, 6, 7], [3, 6], None]


def test_extension_types_survive(tmp_path: Path, tag_type: Any) -> None:
    storage = pa.array([[1, 2], [], [3]], pa.list_(pa.int64()))
    table = pa.table({"t": pa.ExtensionArray.from_storage(tag_type("shape=3x4"), storage)})
    path = tmp_path / "t.ipc"
    asp.io.write_ipc(table, path)
    back = asp.io.read_ipc(path)
    field_type = back.schema.field("t").type
    assert isinstance(field_type, tag_type) and field_type.tag == "shape=3x4"
    assert back.column("t").chunk(0).storage.to_pylist() == [[1, 2], [], [3]]


# -------------------------------------------------------------------------- IPC: errors
def test_read_ipc_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ArrowSparseIOError, match=r"read_ipc: path '.*nope\.arrow' does not "
                                                 r"exist"):
        asp.io.read_ipc(tmp_path / "nope.arrow")
    with pytest.raises(ArrowSparseIOError, match="is a directory, not a file"):
        asp.io.read_ipc(tmp_path)


@pytest.mark.parametrize("stream", [False, True], ids=["file", "stream"])
def test_read_ipc_truncated(tmp_path: Path, stream: bool) -> None:
    path = tmp_path / "t.arrow"
    asp.io.write_ipc(small_table(), path, stream=stream)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(ArrowSparseValueError, match=r"read_ipc: file '.*t\.arrow' is not valid "
                                                    r"Arrow IPC( \(record batch \d\))?; it is "
                                                    r"corrupt or truncated"):
        asp.io.read_ipc(path)


@pytest.mark.parametrize("stream", [False, True], ids=["file", "stream"])
def test_read_ipc_names_the_damaged_record_batch(tmp_path: Path, stream: bool) -> None:
    # Batch i has rows of length i + 1, so each batch's offsets buffer is unique.
    batches = [pa.record_batch({"ids": pa.array([[7] * (i + 1)] * 25)}) for i in range(4)]
    path = tmp_path / "t.arrow"
    asp.io.write_ipc(batches, path, stream=stream)
    # Break the offsets of the third batch: its last offset points past its values.
    data = bytearray(path.read_bytes())
    offsets = batches[2].column(0).offsets.to_numpy().astype(np.int32).tobytes()
    at = data.find(offsets)
    assert at > 0
    data[at + len(offsets) - 4: at + len(offsets)] = (10**6).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(ArrowSparseValueError, match=r"t\.arrow' is not valid Arrow IPC "
                                                    r"\(record batch 2\)"):
        asp.io.read_ipc(path)


def test_read_ipc_flipped_footer(tmp_path: Path) -> None:
    path = tmp_path / "t.arrow"
    asp.io.write_ipc(small_table(), path)
    data = bytearray(path.read_bytes())
    footer_length = int.from_bytes(data[-10:-6], "little")
    footer_start = len(data) - 10 - footer_length
    for i in range(footer_start, footer_start + footer_length):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ArrowSparseValueError, match=r"t\.arrow' is not valid Arrow IPC"):
        asp.io.read_ipc(path)


def test_read_ipc_of_other_content(tmp_path: Path) -> None:
    empty = tmp_path / "empty.arrow"
    empty.write_bytes(b"")
    with pytest.raises(ArrowSparseValueError, match="is empty; it holds no Arrow IPC schema"):
        asp.io.read_ipc(empty)
    with pytest.raises(ArrowSparseValueError, match="sample_clicks.parquet' is not valid Arrow"):
        asp.io.read_ipc(SAMPLE)
    with pytest.raises(ArrowSparseValueError, match=r"<BytesIO>' is not valid Arrow IPC stream"):
        asp.io.read_ipc(io.BytesIO(b"garbage bytes"))


def test_ipc_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(ArrowSparseTypeError, match="read_ipc: path must be a path"):
        asp.io.read_ipc(3)
    with pytest.raises(ArrowSparseTypeError, match="memory_map must be True or False"):
        asp.io.read_ipc(SAMPLE, memory_map="yes")  # type: ignore[arg-type]
    with pytest.raises(ArrowSparseTypeError, match="write_ipc: path_or_sink must be a path"):
        asp.io.write_ipc(small_table(), 3)
    with pytest.raises(ArrowSparseValueError, match="compression must be None, 'lz4' or"):
        asp.io.write_ipc(small_table(), tmp_path / "t.arrow", compression="gzip")
    with pytest.raises(ArrowSparseTypeError, match="write_ipc: data must be a Table"):
        asp.io.write_ipc("abc", tmp_path / "t.arrow")
    with pytest.raises(ArrowSparseIOError, match="directory that does not exist"):
        asp.io.write_ipc(small_table(), tmp_path / "no" / "t.arrow")


def test_read_ipc_names_the_file_of_a_refused_extension_type_issue_14(tmp_path: Path) -> None:
    # The sparse extension types refuse damaged type metadata while pyarrow reads the
    # schema; their error named neither read_ipc nor the file.
    storage = asp.sparse.sparse_tensor_array([asp.SparseCSR.from_dense(np.eye(2))]).storage
    field = pa.field("t", storage.type, metadata={b"ARROW:extension:name": b"arrow_sparse.csr",
                                                  b"ARROW:extension:metadata": b"garbage"})
    table = pa.Table.from_arrays([storage], schema=pa.schema([field]))
    for stream in (False, True):
        path = tmp_path / "t.arrow"
        asp.io.write_ipc(table, path, stream=stream)
        with pytest.raises(ArrowSparseValueError, match=r"^read_ipc: file '.*t\.arrow' holds a "
                           r"column it cannot read: arrow_sparse\.csr: malformed extension "
                           "metadata b'garbage'"):
            asp.io.read_ipc(path)
