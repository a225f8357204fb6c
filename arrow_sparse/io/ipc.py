"""Arrow IPC: files read memory-mapped and zero-copy; streams to paths, stdout or sockets."""

from __future__ import annotations

import os
import sys
from typing import Any

import pyarrow as pa

from .. import _files
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ._common import ArrowSparseIOError, as_batches, atomic_path, check_path, stamp_schema

__all__ = ["read_ipc", "write_ipc"]

class _Sink:
    """A write-only file over a user's object (``write`` or a socket's ``sendall``).

    It keeps its own position, so the IPC *file* format (which records offsets) works
    on unseekable sinks too, and it never closes the object it wraps.
    """

    def __init__(self, target: Any) -> None:
        self._write = target.write if hasattr(target, "write") else target.sendall
        self._flush = getattr(target, "flush", None)
        self._position = 0
        self.closed = False

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self._write(view)
        self._position += view.nbytes
        return view.nbytes

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        if self._flush is not None:
            self._flush()

    def close(self) -> None:
        self.flush()
        self.closed = True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False


def write_ipc(data: Any, path_or_sink: Any, stream: bool = False, *,
              compression: str | None = None) -> int:
    """Write a Table, RecordBatch, KeyedJagged or stream of batches as Arrow IPC.

    Parameters
    ----------
    data
        A ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader``, a
        :class:`~arrow_sparse.KeyedJagged`, an object with ``__arrow_c_stream__``, or
        an iterable of these sharing one schema. Batches are written as they come
        (nothing is buffered), so a generator streams.
    path_or_sink
        A file path (written under a temporary name, renamed when complete); ``"-"``
        for standard output; or any object with a ``write(bytes)`` method (a file
        opened ``"wb"``, ``io.BytesIO``) or a socket (``sendall``). A sink is flushed,
        never closed.
    stream
        False: the IPC *file* format (``.arrow``; a footer indexes the batches, so
        :func:`read_ipc` memory-maps it). True: the IPC *stream* format (no footer;
        what a pipe or socket reader wants, read batch by batch).
    compression
        None (default), ``"lz4"`` or ``"zstd"`` buffer compression. Compressed
        buffers must be decompressed on read, which is a copy: leave it None for
        zero-copy memory-mapped reads.

    Returns
    -------
    int
        Number of rows written.

    Raises
    ------
    TypeError
        ``data`` or ``path_or_sink`` of another kind, or batches whose schemas differ.
    ValueError
        An empty iterable, an unknown codec.
    ArrowSparseIOError
        The path's directory does not exist or cannot be written.

    See Also
    --------
    read_ipc : Memory-mapped, zero-copy reading.
    write_parquet : Compressed columnar storage.

    Notes
    -----
    The schema metadata is kept and the key ``b"arrow_sparse"`` is added, as for
    :func:`write_parquet`; ``list`` / ``large_list`` and extension types are kept
    (IPC carries the Arrow schema itself). Buffers are written as they are (no copy
    but the write itself).

    Examples
    --------
    >>> import io, os, tempfile
    >>> table = pa.table({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]]})
    >>> path = os.path.join(tempfile.mkdtemp(), "ids.arrow")
    >>> asp.io.write_ipc(table, path)
    3
    >>> asp.io.read_ipc(path).column("ids").to_pylist()
    [[1, 2, 3], [2, 4, 6, 7], [3, 6]]

    As a stream into any writable object:

    >>> sink = io.BytesIO()
    >>> asp.io.write_ipc(table, sink, stream=True)
    3
    >>> pa.ipc.open_stream(sink.getvalue()).read_all().num_rows
    3
    """
    func = "write_ipc"
    stream = _check_flag(func, "stream", stream)
    if compression is not None and compression not in ("lz4", "zstd"):
        msg = f"{func}: compression must be None, 'lz4' or 'zstd', got {compression!r}"
        raise ArrowSparseValueError(msg)
    is_path = isinstance(path_or_sink, (str, os.PathLike)) and path_or_sink != "-"
    if not is_path and path_or_sink != "-" and not (
            hasattr(path_or_sink, "write") or hasattr(path_or_sink, "sendall")):
        msg = (f"{func}: path_or_sink must be a path, '-' (stdout), or an object with "
               f"write() or sendall(), got {type(path_or_sink).__name__}")
        raise ArrowSparseTypeError(msg)
    schema, batches = as_batches(func, data)
    schema = stamp_schema(schema)
    options = pa.ipc.IpcWriteOptions(compression=compression)
    if is_path:
        with atomic_path(func, path_or_sink) as tmp:
            try:
                sink = pa.OSFile(tmp, "wb")
            except OSError as exc:
                msg = f"{func}: cannot write to {os.fspath(path_or_sink)!r} ({exc})"
                raise ArrowSparseIOError(msg) from None
            with sink:
                return _write_batches(sink, schema, batches, stream, options)
    target = sys.stdout.buffer if path_or_sink == "-" else path_or_sink
    if path_or_sink == "-":
        sys.stdout.flush()
    wrapped = _Sink(target)
    rows = _write_batches(pa.PythonFile(wrapped, mode="w"), schema, batches, stream, options)
    wrapped.flush()
    return rows


def _write_batches(sink: Any, schema: pa.Schema, batches: Any, stream: bool,
                   options: pa.ipc.IpcWriteOptions) -> int:
    opener = pa.ipc.new_stream if stream else pa.ipc.new_file
    rows = 0
    with opener(sink, schema, options=options) as writer:
        for batch in batches:
            writer.write_batch(batch.replace_schema_metadata(schema.metadata))
            rows += batch.num_rows
    return rows


def _check_flag(func: str, arg: str, x: Any) -> bool:
    if not isinstance(x, bool):
        msg = f"{func}: {arg} must be True or False, got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    return x


def read_ipc(path: Any, memory_map: bool = True) -> pa.Table:
    """Read an Arrow IPC file or stream into a Table, memory-mapped and zero-copy.

    Parameters
    ----------
    path
        A path to an IPC file (``.arrow``/``.feather`` v2) or an IPC stream saved to a
        file (the format is detected); ``"-"`` to read a stream from standard input;
        or a readable object (``read()``: a pipe, ``socket.makefile("rb")``,
        ``io.BytesIO``) holding a stream.
    memory_map
        True (default): map the file and return a Table whose buffers point into the
        mapping: nothing is read until it is touched, and the operating system pages
        data in and out (no process memory is used for the file's bytes). False: read
        the file into memory.

    Returns
    -------
    pyarrow.Table
        Exactly the written schema (``list`` vs ``large_list``, metadata, extension
        types). With ``memory_map`` the Table keeps the mapping alive; it is unmapped
        when the last array referring to it is freed.

    Raises
    ------
    ArrowSparseIOError
        A path that does not exist, is a directory, or cannot be read.
    TypeError
        ``path`` of another kind.
    ValueError
        Content that is not Arrow IPC, or is corrupt or truncated; the message names
        the file.

    See Also
    --------
    write_ipc : The writer.
    read_parquet : Streams compressed columnar files.

    Notes
    -----
    Zero-copy holds for uncompressed files (the default of :func:`write_ipc`):
    compressed buffers are decompressed into memory. Every record batch is validated
    in full before the Table is returned (``validate(full=True)``: the footer, each
    batch's metadata and buffer sizes, offsets within their buffers, dictionary
    indices, UTF-8 text), so a damaged file raises instead of giving arrays that read
    outside their buffers. That reads the offsets and string buffers; pages of numeric
    values are not touched. Damaged numeric *values* cannot be seen: IPC has no
    checksums (Parquet has, and :func:`write_parquet` writes them).

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "ids.arrow")
    >>> ids = pa.array([[1, 2, 3], [2, 4, 6, 7], [3, 6]], pa.large_list(pa.int64()))
    >>> _ = asp.io.write_ipc(pa.table({"ids": ids}), path)
    >>> table = asp.io.read_ipc(path)
    >>> table.schema.field("ids").type
    LargeListType(large_list<item: int64>)
    >>> asp.Jagged.from_arrow(table.column("ids")).offsets
    array([0, 3, 7, 9])
    """
    func = "read_ipc"
    memory_map = _check_flag(func, "memory_map", memory_map)
    if path == "-":
        return _files.read_ipc_stream(func, sys.stdin.buffer, "<stdin>")
    if not isinstance(path, (str, os.PathLike)):
        if hasattr(path, "read"):
            return _files.read_ipc_stream(func, path, f"<{type(path).__name__}>")
        msg = (f"{func}: path must be a path, '-' (stdin) or a readable object, "
               f"got {type(path).__name__}")
        raise ArrowSparseTypeError(msg)
    text = check_path(func, "path", path)
    return _files.read_ipc(func, _files.open_file(func, text, memory_map), text)
