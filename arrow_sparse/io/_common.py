"""Helpers shared by the Parquet and IPC readers and writers.

Turning the accepted kinds of input into one schema and a stream of record batches,
stamping the ``arrow_sparse`` schema metadata, and writing a file atomically (a
temporary name, renamed when complete). Path checks and the corrupt-file error come
from ``arrow_sparse._files``, which every reader of the package shares.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from .. import _arrow
from .._files import PYARROW_ERRORS, check_path, corrupt
from .._version import __version__
from ..errors import (
    ArrowSparseIOError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)
from ..keyed import KeyedJagged

__all__ = [
    "ArrowSparseIOError",
    "METADATA_KEY",
    "PYARROW_ERRORS",
    "as_batches",
    "atomic_directory",
    "atomic_path",
    "check_path",
    "corrupt",
    "stamp_schema",
]

#: Schema-metadata key under which arrow_sparse records that it wrote a file.
METADATA_KEY = b"arrow_sparse"

def stamp_schema(schema: pa.Schema) -> pa.Schema:
    """Add ``{b"arrow_sparse": b'{"version": ...}'}`` to the schema metadata, keeping the rest."""
    metadata = dict(schema.metadata or {})
    metadata[METADATA_KEY] = json.dumps({"version": __version__}).encode()
    return schema.with_metadata(metadata)


def _as_batch_list(func: str, item: Any, position: int | None) -> list[pa.RecordBatch]:

    if isinstance(item, pa.RecordBatch):
        return [item]
    if isinstance(item, pa.Table):
        return list(item.to_batches())
    if isinstance(item, KeyedJagged):
        return [item.to_arrow()]
    where = "" if position is None else f" (first at position {position})"
    msg = (f"{func}: data must be a Table, RecordBatch, RecordBatchReader, KeyedJagged or an "
           f"iterable of them, got {type(item).__name__}{where}")
    raise ArrowSparseTypeError(msg)


def as_batches(func: str, data: Any) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """Return the schema and a lazy stream of record batches of ``data``.

    ``data`` is a Table, a RecordBatch, a RecordBatchReader, a KeyedJagged, an object
    exporting the Arrow C stream interface (a Polars DataFrame, a DuckDB relation), or
    an iterable of Tables / RecordBatches / KeyedJaggeds. Only the first item is read
    here (to learn the schema); the rest stay unread until the stream is consumed.
    Every batch is checked against the first one's schema (metadata ignored), and the
    offsets of its list, map and string columns are checked as it is read: pyarrow's
    writers read every buffer and crash on offsets that go backwards.
    """
    schema, batches = _batches(func, data)
    return schema, _offsets_checked(func, batches)


def _offsets_checked(func: str, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for name, column in zip(batch.schema.names, batch.columns, strict=True):
            _arrow.check_nested(func, f"column {name!r}", column)
        yield batch


def _batches(func: str, data: Any) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, _checked(func, data.schema, iter(data), 0)
    if isinstance(data, (pa.RecordBatch, pa.Table)) or isinstance(data, KeyedJagged):
        batches = _as_batch_list(func, data, None)
        schema = data.schema if isinstance(data, (pa.RecordBatch, pa.Table)) \
            else batches[0].schema
        return schema, iter(batches)
    if hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
        return reader.schema, iter(reader)
    if isinstance(data, (str, bytes, dict)) or not isinstance(data, Iterable):
        _as_batch_list(func, data, None)  # raises the TypeError
    items = iter(data)
    for position, item in enumerate(items):
        first = _as_batch_list(func, item, position)
        schema = item.schema if isinstance(item, pa.Table) else \
            first[0].schema if first else None
        if schema is None:  # pragma: no cover - _as_batch_list never returns []
            continue
        return schema, _chain(func, schema, first, items, position + 1)
    msg = (f"{func}: data is an empty iterable; there is nothing to write and no schema "
           "to write it with (pass an empty Table to write an empty file)")
    raise ArrowSparseValueError(msg)


def _chain(func: str, schema: pa.Schema, first: list[pa.RecordBatch], rest: Iterator[Any],
           start: int) -> Iterator[pa.RecordBatch]:
    yield from first
    for position, item in enumerate(rest, start):
        yield from _checked(func, schema, iter(_as_batch_list(func, item, position)), position)


def _checked(func: str, schema: pa.Schema, batches: Iterator[pa.RecordBatch],
             position: int) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        if not batch.schema.equals(schema, check_metadata=False):
            msg = (f"{func}: data has a batch whose schema differs from the first batch's "
                   f"(first at position {position}: {_schema_text(batch.schema)} instead of "
                   f"{_schema_text(schema)})")
            raise ArrowSparseTypeError(msg)
        yield batch


def _schema_text(schema: pa.Schema) -> str:
    return "{" + ", ".join(f"{f.name}: {f.type}" for f in schema) + "}"


@contextmanager
def atomic_path(func: str, path: Any) -> Iterator[str]:
    """Yield a temporary path beside ``path``; rename it to ``path`` only on success.

    A failed or interrupted write leaves no partial file behind (and leaves an older
    file at ``path`` untouched).
    """
    if not isinstance(path, (str, os.PathLike)):
        msg = f"{func}: path must be a path (str or os.PathLike), got {type(path).__name__}"
        raise ArrowSparseTypeError(msg)
    target = os.fsdecode(os.fspath(path))
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        msg = f"{func}: path {target!r} is in a directory that does not exist"
        raise ArrowSparseIOError(msg)
    if os.path.isdir(target):
        msg = f"{func}: path {target!r} is a directory, not a file"
        raise ArrowSparseIOError(msg)
    if not os.access(directory, os.W_OK):
        msg = f"{func}: cannot write to {target!r} (permission denied)"
        raise ArrowSparseIOError(msg)
    # Not mkstemp: that creates the file 0600, and the renamed result would keep it.
    tmp = os.path.join(directory, f".{os.path.basename(target)}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _only_parquet(directory: str) -> str | None:
    """Return the first entry under ``directory`` that is not a Parquet file or a folder."""
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            if not name.endswith((".parquet", ".pq")) or not os.path.isfile(path) \
                    or os.path.islink(path):
                return path
    return None


@contextmanager
def atomic_directory(func: str, path: Any) -> Iterator[str]:
    """Yield a new temporary directory beside ``path``; put it at ``path`` only on success.

    The temporary is ``.<name>.<12 hex digits>.tmp`` (the name :func:`atomic_path`
    gives a file). An existing ``path`` is replaced only when it holds nothing but
    Parquet files in folders (an earlier output): it is renamed aside
    (``.<name>.<hex>.old``), the new directory renamed in, and the old one removed,
    so a reader sees the old data set or the new one, never a part of one. A failed
    or interrupted write removes the temporary and leaves ``path`` untouched.
    """
    if not isinstance(path, (str, os.PathLike)):
        msg = f"{func}: path must be a path (str or os.PathLike), got {type(path).__name__}"
        raise ArrowSparseTypeError(msg)
    target = os.fsdecode(os.fspath(path)).rstrip(os.sep) or os.sep
    directory = os.path.dirname(os.path.abspath(target))
    name = os.path.basename(os.path.abspath(target))
    if not os.path.isdir(directory):
        msg = f"{func}: path {target!r} is in a directory that does not exist"
        raise ArrowSparseIOError(msg)
    if os.path.lexists(target) and (not os.path.isdir(target) or os.path.islink(target)):
        msg = f"{func}: path {target!r} exists and is not a directory; give a directory path"
        raise ArrowSparseIOError(msg)
    if os.path.isdir(target):
        other = _only_parquet(target)
        if other is not None:
            msg = (f"{func}: path {target!r} is a directory holding other files than "
                   f"Parquet ({other!r}); it is replaced only when it holds an earlier "
                   "output (Parquet files only); give a new or empty directory")
            raise ArrowSparseIOError(msg)
    if not os.access(directory, os.W_OK):
        msg = f"{func}: cannot write to {target!r} (permission denied)"
        raise ArrowSparseIOError(msg)
    tag = uuid.uuid4().hex[:12]
    tmp = os.path.join(directory, f".{name}.{tag}.tmp")
    os.mkdir(tmp, 0o777)
    try:
        yield tmp
        if os.path.isdir(target):
            old = os.path.join(directory, f".{name}.{tag}.old")
            os.rename(target, old)
            os.rename(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, target)
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
