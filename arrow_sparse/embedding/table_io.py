"""Embedding tables stored as Arrow IPC files, memory-mapped on load (read-only or writable).

Part of :mod:`arrow_sparse.embedding`, which re-exports every public name here.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from .. import _arrow, _files
from .. import _validate as v
from .._backend import normalize_device, to_host, transfer
from ..errors import ArrowSparseIOError, ArrowSparseTypeError, ArrowSparseValueError
from ._args import check_table

__all__ = ["load_table", "save_table"]

_COLUMN = "embedding"


def save_table(table: np.ndarray, path: str | os.PathLike[str]) -> None:
    """Write a table as an Arrow IPC file: one ``fixed_size_list<float>[dim]`` column.

    Parameters
    ----------
    table
        Float32 or float64 table ``[num_embeddings, dim]`` (one row per table row): a
        numpy array, or a CuPy array, which is copied to the host to be written (one
        transfer, a synchronisation).
    path
        File to write (replaced if it exists).

    Raises
    ------
    TypeError
        A non-float table.
    OSError
        The file cannot be written (:class:`~arrow_sparse.errors.ArrowSparseIOError`).

    See Also
    --------
    load_table : Memory-maps it back.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "table.arrow"
    >>> asp.embedding.save_table(np.arange(6, dtype=np.float32).reshape(3, 2), path)
    >>> asp.embedding.load_table(path)
    array([[0., 1.],
           [2., 3.],
           [4., 5.]], dtype=float32)
    """
    func = "save_table"
    table = check_table(func, table)
    if table.dtype not in (np.float32, np.float64):
        msg = f"{func}: table must be float32 or float64, got {table.dtype}"
        raise ArrowSparseTypeError(msg)
    column = _arrow.array_from_numpy(np.ascontiguousarray(to_host(table)), None)
    batch = pa.RecordBatch.from_arrays([column], names=[_COLUMN])
    try:
        with pa.OSFile(os.fspath(path), "wb") as sink, \
                pa.ipc.new_file(sink, batch.schema) as writer:
            writer.write_batch(batch)
    except OSError as exc:
        msg = f"{func}: cannot write {os.fspath(path)!r} ({exc})"
        raise ArrowSparseIOError(msg) from None


def load_table(path: str | os.PathLike[str], mmap: bool = True, *,
               writable: bool = False, device: str = "cpu") -> np.ndarray:
    """Read a table written by :func:`save_table`.

    Parameters
    ----------
    path
        Arrow IPC file with one ``fixed_size_list<float32|float64>[dim]`` column.
    mmap
        ``True``: memory-map the file and return a zero-copy view (pages are read on
        first touch; the mapping lives as long as the array). ``False``: read it into a
        writable, owned array.
    writable
        With ``mmap=True``: ``False`` (default) gives a **read-only** view; ``True`` maps
        the file for writing (a ``numpy.memmap``), so the optimizers update the file in
        place: a table larger than RAM trains with only its touched pages in memory.
    device
        ``"cpu"`` (default), or ``"cuda"`` / ``"cuda:N"``: the table is read (through
        the memory map with ``mmap=True``) and copied to that device in one transfer.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        ``[num_embeddings, dim]`` (a ``numpy.memmap`` with ``writable=True``; a CuPy
        array on a CUDA device).

    Raises
    ------
    OSError
        A missing or unreadable file, or ``writable=True`` on a file that cannot be
        opened for writing (:class:`~arrow_sparse.errors.ArrowSparseIOError`).
    ValueError
        Not an Arrow IPC file, or a corrupt or truncated one (the message names the
        file); several columns, null rows; ``writable=True`` with ``mmap=False`` or a
        CUDA ``device``, or on a file whose values are not one uncompressed buffer
        (several record batches, compression); an unknown ``device``.
    TypeError
        A column that is not ``fixed_size_list<float>``; a ``path`` that is not a path.

    See Also
    --------
    save_table

    Notes
    -----
    The file is read through the same checked reader as :func:`arrow_sparse.io.read_ipc`:
    every record batch is validated in full before its column is checked and mapped,
    so a damaged file raises instead of crashing. Arrow IPC has no checksums: a flipped
    byte inside the values gives other values, not an error.

    A file with several record batches cannot be one contiguous view: its batches are
    concatenated (one copy) with ``mmap=True``, and ``writable=True`` refuses it (write
    it again with :func:`save_table`). Writes through a writable map reach the file
    (``MAP_SHARED``); the operating system writes the pages back in its own time, and
    ``table.flush()`` forces it. The file keeps its Arrow layout: any reader sees the
    updated values.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "table.arrow"
    >>> asp.embedding.save_table(np.ones((2, 3), np.float32), path)
    >>> t = asp.embedding.load_table(path)
    >>> t.shape, t.flags.writeable
    ((2, 3), False)

    Training the file itself:

    >>> t = asp.embedding.load_table(path, writable=True)
    >>> asp.embedding.sgd(t, asp.embedding.SparseGrad(np.array([1]), np.ones((1, 3))), 0.5)
    >>> t.flush()
    >>> asp.embedding.load_table(path)
    array([[1. , 1. , 1. ],
           [0.5, 0.5, 0.5]], dtype=float32)
    """
    func = "load_table"
    mmap = v.check_bool(func, "mmap", mmap)
    writable = v.check_bool(func, "writable", writable)
    device = normalize_device(func, device)
    if writable and not mmap:
        msg = (f"{func}: writable=True maps the file for writing and needs mmap=True "
               "(mmap=False already gives a writable copy)")
        raise ArrowSparseValueError(msg)
    if writable and device != "cpu":
        msg = (f"{func}: writable=True maps the file into host memory and needs "
               f"device='cpu', got {device!r} (the device gets a copy)")
        raise ArrowSparseValueError(msg)
    name = _files.check_path(func, "path", path)
    source = _files.open_file(func, name, mmap)
    table = _files.read_ipc(func, source, name)  # every batch validated in full
    column = _column(func, name, table)
    if writable and column.num_chunks != 1:
        msg = (f"{func}: writable=True needs a file of one record batch, got "
               f"{column.num_chunks} (write it again with save_table)")
        raise ArrowSparseValueError(msg)
    dim = column.type.list_size
    column = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    flat = column.flatten()
    values = flat.to_numpy(zero_copy_only=True).reshape(len(column), dim)
    if device != "cpu":
        return transfer(func, values, device)  # type: ignore[no-any-return]
    if writable:
        return _writable_map(func, name, source, values)
    if mmap:
        if values.flags.writeable:
            values.flags.writeable = False
        return values
    return np.array(values)


def _column(func: str, name: str, table: pa.Table) -> pa.ChunkedArray:
    """Return the table's one column after checking it is a table of floats without nulls."""
    if table.num_columns != 1:
        msg = (f"{func}: file {name!r} must hold one column, got {table.num_columns} "
               f"({table.column_names})")
        raise ArrowSparseValueError(msg)
    column = table.column(0)
    typ = column.type
    if not pa.types.is_fixed_size_list(typ) or typ.value_type not in (pa.float32(),
                                                                        pa.float64()):
        msg = (f"{func}: the column of file {name!r} must be "
               f"fixed_size_list<float32|float64>[dim], got {typ}")
        raise ArrowSparseTypeError(msg)
    if column.null_count:
        msg = f"{func}: file {name!r} holds null rows; a table must not"
        raise ArrowSparseValueError(msg)
    if any(chunk.values.null_count for chunk in column.chunks):
        msg = f"{func}: file {name!r} holds null values; a table must not"
        raise ArrowSparseValueError(msg)
    return column


def _writable_map(func: str, name: str, source: pa.MemoryMappedFile,
                  values: np.ndarray) -> np.ndarray:
    """Map the bytes of ``values`` (a view inside the read-only map ``source``) for writing."""
    source.seek(0)
    whole = source.read_buffer(source.size())
    offset = values.ctypes.data - whole.address
    if values.size and not (0 <= offset and offset + values.nbytes <= whole.size):
        msg = (f"{func}: {name!r} cannot be mapped for writing: its values are not stored "
               "as one uncompressed buffer (write it again with save_table)")
        raise ArrowSparseValueError(msg)
    if not values.size:
        return np.zeros(values.shape, dtype=values.dtype)  # nothing to map
    try:
        return np.memmap(name, dtype=values.dtype, mode="r+", offset=offset,
                         shape=values.shape)
    except OSError as exc:
        msg = f"{func}: cannot open {name!r} for writing ({exc})"
        raise ArrowSparseIOError(msg) from None
