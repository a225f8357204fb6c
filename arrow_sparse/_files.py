"""Checked file reading: paths, the corrupt-file error, whole Arrow IPC and Parquet files.

Every reader of arrow_sparse opens files here, whatever its layer
(:func:`arrow_sparse.io.read_ipc`, :func:`arrow_sparse.embedding.load_table`,
:meth:`arrow_sparse.Vocabulary.load`), so a damaged file gives the same error
everywhere: an :class:`~arrow_sparse.errors.ArrowSparseValueError` naming the function
and the file, never a crash.

pyarrow opens an Arrow IPC file after checking its framing only: a flipped byte in a
record batch's metadata (a negative ``fixed_size_list`` size, a length longer than the
buffers) or in its offsets gives arrays that read outside their buffers, and the
first access crashes the interpreter. :func:`read_ipc` therefore validates every
record batch in full (``RecordBatch.validate(full=True)``: offsets within their
buffers and non-decreasing, dictionary indices in range, UTF-8 text) before it
returns. That reads the offsets and string buffers; pages of numeric values are not
touched, so a memory-mapped file stays mapped, not read. Parquet files are read with
their page checksums verified (the writers of arrow_sparse write them).
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from .errors import (
    ArrowSparseError,
    ArrowSparseIOError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)

__all__ = [
    "PYARROW_ERRORS",
    "check_path",
    "corrupt",
    "in_file",
    "open_file",
    "read_ipc",
    "read_ipc_stream",
    "read_parquet",
]

#: What pyarrow raises for unreadable input: ``ArrowInvalid`` and friends, and plain
#: ``OSError`` (a Parquet footer that fails to deserialize, a failed page checksum, an
#: IPC message whose flatbuffer does not verify).
PYARROW_ERRORS = (pa.ArrowException, OSError)

_FILE_MAGIC = b"ARROW1"


def check_path(func: str, arg: str, path: Any, *, directory_ok: bool = False) -> str:
    """Return ``path`` as a string after checking that it names an existing, readable file."""
    if not isinstance(path, (str, os.PathLike)):
        msg = f"{func}: {arg} must be a path (str or os.PathLike), got {type(path).__name__}"
        raise ArrowSparseTypeError(msg)
    text = os.fspath(path)
    if not isinstance(text, str):
        text = os.fsdecode(text)
    if not os.path.exists(text):
        msg = f"{func}: {arg} {text!r} does not exist"
        raise ArrowSparseIOError(msg)
    if os.path.isdir(text) and not directory_ok:
        msg = f"{func}: {arg} {text!r} is a directory, not a file"
        raise ArrowSparseIOError(msg)
    if not os.access(text, os.R_OK):
        msg = f"{func}: {arg} {text!r} is not readable (permission denied)"
        raise ArrowSparseIOError(msg)
    return text


def corrupt(func: str, what: str, path: str, exc: BaseException,
            row_group: int | None = None, *, column: str | None = None,
            batch: int | None = None) -> ArrowSparseValueError:
    """Build the error for a file whose bytes are not valid ``what`` (Parquet, Arrow IPC).

    The message names the file and, when known, the row group and column (Parquet) or
    the record batch (IPC) where the damage was found.
    """
    parts = [f"row group {row_group}" if row_group is not None else "",
             f"column {column!r}" if column is not None else "",
             f"record batch {batch}" if batch is not None else ""]
    where = ", ".join(p for p in parts if p)
    where = f" ({where})" if where else ""
    text = str(exc).strip()
    detail = text.splitlines()[0][:1000] if text else type(exc).__name__
    msg = (f"{func}: file {path!r} is not valid {what}{where}; it is corrupt or truncated "
           f"(pyarrow: {detail})")
    return ArrowSparseValueError(msg)


def in_file(func: str, path: str, exc: ArrowSparseError) -> ArrowSparseError:
    """Return ``exc`` of the same class, its message naming ``func`` and the file.

    For errors raised inside pyarrow's readers by arrow_sparse's own code: the
    extension types' ``__arrow_ext_deserialize__`` refuses damaged or foreign type
    metadata (``arrow_sparse.csr: malformed extension metadata``) without knowing
    which file holds it.
    """
    return type(exc)(f"{func}: file {path!r} holds a column it cannot read: {exc}")


def open_file(func: str, path: str, memory_map: bool) -> Any:
    """Open ``path`` (checked by :func:`check_path`): a memory map, or its bytes in memory.

    Returns a ``pyarrow.MemoryMappedFile`` (``memory_map``) or a ``pyarrow.Buffer``.
    A file that cannot be opened raises :class:`~arrow_sparse.errors.ArrowSparseIOError`.
    """
    try:
        if memory_map:
            return pa.memory_map(path, "r")
        with pa.OSFile(path, "r") as source:
            return source.read_buffer()
    except OSError as exc:
        msg = f"{func}: cannot read {path!r} ({exc})"
        raise ArrowSparseIOError(msg) from None


def read_ipc(func: str, source: Any, path: str) -> pa.Table:
    """Read an Arrow IPC file or stream from an :func:`open_file` source, validated in full.

    The format is detected from the first bytes (the file format starts with
    ``ARROW1``). Every record batch passes ``validate(full=True)`` before the Table is
    returned; damage raises :func:`corrupt`'s error naming ``path`` and the batch.
    """
    try:
        if isinstance(source, pa.Buffer):
            head = source.to_pybytes()[:len(_FILE_MAGIC)] if source.size else b""
        else:
            head = source.read(len(_FILE_MAGIC))
            source.seek(0)
        if not head:
            msg = f"{func}: file {path!r} is empty; it holds no Arrow IPC schema"
            raise ArrowSparseValueError(msg)
        reader = pa.ipc.open_file(source) if head == _FILE_MAGIC else pa.ipc.open_stream(source)
    except PYARROW_ERRORS as exc:
        raise corrupt(func, "Arrow IPC", path, exc) from None
    except ArrowSparseError as exc:
        raise in_file(func, path, exc) from None
    return _read_batches(func, reader, "Arrow IPC", path)


def read_ipc_stream(func: str, source: Any, name: str) -> pa.Table:
    """Read an Arrow IPC stream from a readable object (a pipe, ``io.BytesIO``), validated."""
    try:
        reader = pa.ipc.open_stream(source)
    except PYARROW_ERRORS as exc:
        raise corrupt(func, "Arrow IPC stream", name, exc) from None
    except ArrowSparseError as exc:
        raise in_file(func, name, exc) from None
    return _read_batches(func, reader, "Arrow IPC stream", name)


def _read_batches(func: str, reader: Any, what: str, name: str) -> pa.Table:
    """Read and fully validate every record batch of an open IPC reader."""
    batches: list[pa.RecordBatch] = []
    index = 0
    try:
        if isinstance(reader, pa.ipc.RecordBatchFileReader):
            for index in range(reader.num_record_batches):
                batch = reader.get_batch(index)
                batch.validate(full=True)
                batches.append(batch)
        else:
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    break
                batch.validate(full=True)
                batches.append(batch)
                index += 1
        schema = reader.schema
    except PYARROW_ERRORS as exc:
        raise corrupt(func, what, name, exc, batch=index) from None
    except ArrowSparseError as exc:
        raise in_file(func, name, exc) from None
    return pa.Table.from_batches(batches, schema)


def read_parquet(func: str, path: str) -> pa.Table:
    """Read a whole Parquet file (checked by :func:`check_path`), page checksums verified."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path, page_checksum_verification=True)
    except ArrowSparseError as exc:
        raise in_file(func, path, exc) from None
    except PYARROW_ERRORS as exc:
        if isinstance(exc, OSError) and not isinstance(exc, pa.ArrowException) \
                and exc.errno is not None:
            msg = f"{func}: cannot read {path!r} ({exc})"
            raise ArrowSparseIOError(msg) from None
        raise corrupt(func, "Parquet", path, exc) from None
