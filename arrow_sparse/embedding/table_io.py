"""Embedding tables stored as Arrow IPC files, memory-mapped on load (read-only or writable).

Part of :mod:`arrow_sparse.embedding`, which re-exports every public name here.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from .. import _arrow
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
        Not an Arrow IPC file, several columns, null rows; ``writable=True`` with
        ``mmap=False`` or a CUDA ``device``, or on a file whose values are not one
        uncompressed buffer (several record batches, compression); an unknown ``device``.
    TypeError
        A column that is not ``fixed_size_list<float>``.

    See Also
    --------
    save_table

    Notes
    -----
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
    name = os.fspath(path)
    try:
        source = pa.memory_map(name, "r") if mmap else pa.OSFile(name, "rb")
    except (OSError, pa.ArrowIOError) as exc:
        msg = f"{func}: cannot open {name!r} ({exc})"
        raise ArrowSparseIOError(msg) from None
    try:
        reader = pa.ipc.open_file(source)
        batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
        schema = reader.schema
    except pa.ArrowInvalid as exc:
        msg = f"{func}: {name!r} is not an Arrow IPC file ({exc})"
        raise ArrowSparseValueError(msg) from None
    if len(schema) != 1:
        msg = f"{func}: expected one column, got {len(schema)} ({schema.names})"
        raise ArrowSparseValueError(msg)
    typ = schema.field(0).type
    if not pa.types.is_fixed_size_list(typ) or typ.value_type not in (pa.float32(),
                                                                        pa.float64()):
        msg = f"{func}: the column must be fixed_size_list<float32|float64>[dim], got {typ}"
        raise ArrowSparseTypeError(msg)
    dim = typ.list_size
    if writable and len(batches) != 1:
        msg = (f"{func}: writable=True needs a file of one record batch, got {len(batches)} "
               "(write it again with save_table)")
        raise ArrowSparseValueError(msg)
    if len(batches) == 1:
        column = batches[0].column(0)
    else:
        chunks = [b.column(0) for b in batches]
        column = pa.concat_arrays(chunks) if chunks else pa.array([], type=typ)
    if column.null_count:
        msg = f"{func}: the table must not contain null rows"
        raise ArrowSparseValueError(msg)
    flat = column.flatten()
    if flat.null_count:
        msg = f"{func}: the table must not contain null values"
        raise ArrowSparseValueError(msg)
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
