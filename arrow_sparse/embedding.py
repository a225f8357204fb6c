"""Embedding tables: lookups, the sparse backward pass and fused sparse optimizer steps.

Tables are row-major numpy arrays ``table[num_embeddings, dim]`` (EmbeddingTables.jl's
column-major tables, transposed). The training loop is

1. ``y = lookup(table, ids)`` (gather, reducing gather, or pooled bags),
2. ``grad = lookup_backward(dy, ids, num_embeddings=len(table))``, a :class:`SparseGrad`
   whose rows are unique and sorted (duplicate ids summed, deterministically),
3. ``sgd(table, grad, lr)`` / ``adagrad`` / ``rowwise_adagrad`` / ``ftrl``: fused
   in-place updates of the touched rows only.

Tables persist as Arrow IPC files (:func:`save_table`, :func:`load_table`,
memory-mapped). See ``docs/embedding.md`` for the formulas and a worked example.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from . import _arrow
from . import _validate as v
from ._backend import get_kernel
from .errors import (
    ArrowSparseIndexError,
    ArrowSparseIOError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)
from .jagged import Jagged
from .segment import embedding_bag

__all__ = [
    "SparseGrad",
    "adagrad",
    "ftrl",
    "load_table",
    "lookup",
    "lookup_backward",
    "maplookup",
    "rowwise_adagrad",
    "save_table",
    "sgd",
    "update",
]

_MODES = ("sum", "mean", "max")
_STRATEGIES = ("sequential", "parallel", "concat")
_NONE_F64 = np.empty(0, dtype=np.float64)


@functools.cache
def _kernel(name: str) -> Callable[..., Any]:
    return get_kernel("embedding", name)


# ============================================================================ helpers
def _is_list_input(x: Any) -> bool:
    return isinstance(x, Jagged) or (isinstance(x, (pa.Array, pa.ChunkedArray))
                                     and _arrow.is_list_type(x.type))


def _table(func: str, table: Any, arg: str = "table") -> np.ndarray:
    if not isinstance(table, np.ndarray):
        msg = (f"{func}: {arg} must be a numpy array [num_embeddings, dim], "
               f"got {type(table).__name__}")
        raise ArrowSparseTypeError(msg)
    if table.dtype.kind not in "iuf":
        msg = f"{func}: {arg} must have an integer or float dtype, got {table.dtype}"
        raise ArrowSparseTypeError(msg)
    if table.ndim != 2:
        msg = f"{func}: {arg} must be 2-dimensional [num_embeddings, dim], got shape {table.shape}"
        raise ArrowSparseValueError(msg)
    return table


def _writable(func: str, arg: str, x: Any, shape: tuple[int, ...],
              dtype: np.dtype | None = None) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        msg = f"{func}: {arg} must be a numpy array (updated in place), got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    if x.dtype.kind != "f" or (dtype is not None and x.dtype != dtype):
        want = dtype if dtype is not None else "a float dtype"
        msg = f"{func}: {arg} must have dtype {want}, got {x.dtype}"
        raise ArrowSparseTypeError(msg)
    if x.shape != shape:
        msg = f"{func}: {arg} must have shape {shape}, got {x.shape}"
        raise ArrowSparseValueError(msg)
    if not x.flags.writeable or not x.flags.c_contiguous:
        msg = (f"{func}: {arg} must be a writable, C-contiguous array (a table from "
               "load_table(path) is a read-only memory map: use load_table(path, mmap=False))")
        raise ArrowSparseValueError(msg)
    return x


def _scalar(func: str, arg: str, x: Any, *, positive: bool = False) -> float:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer,
                                                               np.floating)):
        msg = f"{func}: {arg} must be a real number, got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    value = float(x)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        kind = "positive" if positive else "non-negative"
        msg = f"{func}: {arg} must be a finite {kind} number, got {x}"
        raise ArrowSparseValueError(msg)
    return value


def _mode(func: str, mode: Any) -> str:
    if not isinstance(mode, str) or mode not in _MODES:
        msg = f"{func}: mode must be 'sum', 'mean' or 'max', got {mode!r}"
        raise ArrowSparseValueError(msg)
    return mode


def _sum_dtype(dtype: np.dtype) -> np.dtype:
    return dtype if dtype.kind == "f" else np.dtype(np.int64 if dtype.kind == "i" else np.uint64)


# ============================================================================= lookup
def lookup(table: Any, ids: Any, *, out: np.ndarray | None = None, mode: str = "sum",
           offsets: Any = None, per_sample_weights: Any = None) -> Any:
    """Look rows of an embedding table up: gather, reducing gather, or pooled bags.

    Parameters
    ----------
    table
        numpy array ``[num_embeddings, dim]`` (integer or float).
    ids
        - 1-D integers ``[n]``: ``out[i] = table[ids[i]]`` (``[n, dim]``);
        - 2-D integers ``[n, k]``: ``out[i] = table[ids[i, 0]] + ... + table[ids[i, k-1]]``
          (EmbeddingTables.jl's reducing lookup, transposed; ``mode`` pools the ``k`` ids);
        - 1-D integers with ``offsets``, a :class:`~arrow_sparse.Jagged` or an Arrow list
          array of ids: one row per bag, pooled with ``mode`` (:func:`~arrow_sparse.embedding_bag`).
    out
        Optional numpy array of the result's shape and dtype, written in place and
        returned (EmbeddingTables.jl's ``lookup!``). It may be a strided view, such as a
        block of columns of a wider matrix.
    mode
        ``"sum"``, ``"mean"`` or ``"max"``: how 2-D rows and bags are pooled.
    offsets
        Bag boundaries (``bags + 1`` long) into 1-D ``ids``.
    per_sample_weights
        One weight per id, for bags only (same form as ``ids``).

    Returns
    -------
    numpy.ndarray or pyarrow.Array or pyarrow.ChunkedArray
        ``out`` when given. Otherwise ``[n, dim]`` of the table's dtype (integer sums
        widen to 64 bits); bags of Arrow ids give Arrow (``fixed_size_list``, null rows kept)
        unless ``out`` is given (then null and empty bags are zeros).

    Raises
    ------
    IndexError
        An id outside ``[0, num_embeddings)``.
    ValueError
        Unknown ``mode``, malformed offsets, ``out`` of the wrong shape.
    TypeError
        A table that is not a numpy array, non-integer ids, ``out`` of the wrong dtype.

    See Also
    --------
    maplookup : Lookups on several tables at once.
    lookup_backward : The gradient of this function with respect to the table.
    arrow_sparse.embedding_bag : The pooled lookup.

    Notes
    -----
    Plain and 2-D lookups run a Numba kernel (GIL released) that writes ``out``
    directly; pooled bags with ``out`` compute the bags and copy them in (one copy).
    Empty bags give zeros in every mode (null for ``mean``/``max`` in Arrow output).

    Examples
    --------
    EmbeddingTables.jl's example, transposed: row ``j`` of the table holds ``j + 1``.

    >>> table = np.repeat(np.arange(1, 6), 5).reshape(5, 5)
    >>> asp.embedding.lookup(table, [0, 2, 3, 3, 1, 4])[:, 0]
    array([1, 3, 4, 4, 2, 5])
    >>> asp.embedding.lookup(table, np.array([[0, 1], [3, 4]]))
    array([[3, 3, 3, 3, 3],
           [9, 9, 9, 9, 9]])

    Bags of the Caffe2 batch ``[1, 2, 3] [2, 4, 6, 7] [3, 6]``:

    >>> table = np.arange(16.0).reshape(8, 2)
    >>> asp.embedding.lookup(table, asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]]),
    ...                      mode="mean")
    array([[ 4. ,  5. ],
           [ 9.5, 10.5],
           [ 9. , 10. ]])
    """
    return _lookup("lookup", table, ids, out, mode, offsets, per_sample_weights, False)


def _lookup(func: str, table: Any, ids: Any, out: Any, mode: Any, offsets: Any,
            weights: Any, serial: bool) -> Any:
    table = _table(func, table)
    mode = _mode(func, mode)
    if _is_list_input(ids) or offsets is not None:
        if out is not None and isinstance(ids, (pa.Array, pa.ChunkedArray)):
            ids = Jagged.from_arrow(ids)  # numpy result: null bags are zeros
        res = embedding_bag(table, ids, offsets=offsets, mode=mode,
                            per_sample_weights=weights)
        if out is None:
            return res
        _check_out(func, out, res.shape, res.dtype)
        np.copyto(out, res)
        return out
    if weights is not None:
        msg = f"{func}: per_sample_weights needs bags (offsets=, a Jagged or Arrow list ids)"
        raise ArrowSparseValueError(msg)
    ndim = 2 if isinstance(ids, np.ndarray) and ids.ndim == 2 else \
        (2 if not isinstance(ids, (pa.Array, pa.ChunkedArray)) and np.ndim(ids) == 2 else 1)
    idx = v.check_indices(func, "ids", ids, len(table), ndim=ndim)
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    if ndim == 2 and mode != "sum":
        k = idx.shape[1]
        res = embedding_bag(table, idx.reshape(-1), mode=mode,
                            offsets=np.arange(0, idx.size + 1, max(k, 1), dtype=np.int64)
                            if k else np.zeros(idx.shape[0] + 1, np.int64))
        if out is None:
            return res
        _check_out(func, out, res.shape, res.dtype)
        np.copyto(out, res)
        return out
    dtype = table.dtype if ndim == 1 else _sum_dtype(table.dtype)
    shape = (idx.shape[0], table.shape[1])
    if out is None:
        out = v.empty(func, shape, dtype)
    else:
        _check_out(func, out, shape, dtype)
    # A column block of a C-contiguous matrix is written through the whole matrix and a
    # column offset: the kernel then sees a contiguous layout (and vectorises).
    target, col = out, 0
    base = out.base if isinstance(out.base, np.ndarray) else None
    if not out.flags.c_contiguous and base is not None and base.flags.c_contiguous \
            and base.ndim == 2 and base.dtype == out.dtype and base.shape[0] == out.shape[0] \
            and out.strides == base.strides:
        offset = out.ctypes.data - base.ctypes.data
        if offset % out.itemsize == 0 and offset // out.itemsize + out.shape[1] <= base.shape[1]:
            target, col = base, offset // out.itemsize
    src = np.ascontiguousarray(table)
    if ndim == 1:
        _kernel("lookup_rows")(src, idx, target, col, serial)
    else:
        zero = np.float64(0) if dtype.kind == "f" else dtype.type(0)
        _kernel("lookup_sum")(src, idx, zero, target, col, serial)
    return out


def _check_out(func: str, out: Any, shape: tuple[int, ...], dtype: np.dtype) -> None:
    if not isinstance(out, np.ndarray):
        msg = f"{func}: out must be a numpy array, got {type(out).__name__}"
        raise ArrowSparseTypeError(msg)
    if out.dtype != dtype:
        msg = f"{func}: out must have dtype {dtype}, got {out.dtype}"
        raise ArrowSparseTypeError(msg)
    if out.shape != shape:
        msg = f"{func}: out must have shape {shape}, got {out.shape}"
        raise ArrowSparseValueError(msg)
    if not out.flags.writeable:
        msg = f"{func}: out must be writable"
        raise ArrowSparseValueError(msg)


def _num_outputs(func: str, ids: Any) -> int:
    if isinstance(ids, Jagged):
        return len(ids)
    if isinstance(ids, (pa.Array, pa.ChunkedArray)):
        return len(ids)
    return int(np.shape(ids)[0]) if np.ndim(ids) >= 1 else 0


def maplookup(tables: Sequence[Any], indices: Any, strategy: str = "sequential",
              prepend: int = 0, *, mode: str = "sum", out: np.ndarray | None = None,
              max_workers: int | None = None) -> Any:
    """Independent lookups on several tables (EmbeddingTables.jl's ``maplookup``).

    Parameters
    ----------
    tables
        Sequence of numpy tables ``[num_embeddings_t, dim_t]``.
    indices
        A sequence with one ``ids`` per table (anything :func:`lookup` takes), or a 2-D
        integer matrix ``[n, len(tables)]`` whose column ``t`` indexes table ``t``
        (non-reducing lookups).
    strategy
        ``"sequential"`` (one lookup after another), ``"parallel"`` (a thread pool across
        tables; the kernels release the GIL) or ``"concat"`` (EmbeddingTables.jl's
        ``PreallocationStrategy``: every lookup writes its block of columns of one
        preallocated matrix, in parallel threads).
    prepend
        ``"concat"`` only: number of leading columns left for dense features (zeroed).
    mode
        Pooling of 2-D rows and bags (see :func:`lookup`).
    out
        ``"concat"`` only: the ``[n, prepend + sum(dims)]`` matrix to fill (EmbeddingTables.jl's
        ``maplookup!``); reusing it across batches saves the page faults of a fresh one.
    max_workers
        Threads for ``"parallel"`` and ``"concat"`` (default: ``min(len(tables), cpus)``).

    Returns
    -------
    list or numpy.ndarray
        A list of the lookups, or for ``"concat"`` one ``[n, prepend + sum(dims)]`` array
        of the tables' common dtype.

    Raises
    ------
    ValueError
        Unknown ``strategy``, as many ``indices`` as tables needed, ``"concat"`` lookups
        with different row counts, ``prepend`` given without ``"concat"``.
    IndexError
        An id out of range of its table.
    TypeError
        A table that is not a numpy array, non-integer ids.

    See Also
    --------
    lookup : One table.

    Examples
    --------
    >>> a = np.array([[1, 1], [2, 2], [3, 3]])
    >>> b = 10 * a
    >>> asp.embedding.maplookup([a, b], [[0, 1, 0], [1, 0, 0]])
    [array([[1, 1],
           [2, 2],
           [1, 1]]), array([[20, 20],
           [10, 10],
           [10, 10]])]
    >>> asp.embedding.maplookup([a, b], np.array([[0, 1], [1, 0], [0, 0]]), "concat", prepend=1)
    array([[ 0,  1,  1, 20, 20],
           [ 0,  2,  2, 10, 10],
           [ 0,  1,  1, 10, 10]])
    """
    func = "maplookup"
    if not isinstance(strategy, str) or strategy not in _STRATEGIES:
        msg = f"{func}: strategy must be 'sequential', 'parallel' or 'concat', got {strategy!r}"
        raise ArrowSparseValueError(msg)
    if isinstance(tables, np.ndarray) or not isinstance(tables, Sequence):
        msg = f"{func}: tables must be a sequence of numpy tables, got {type(tables).__name__}"
        raise ArrowSparseTypeError(msg)
    tables = [_table(func, t, f"tables[{i}]") for i, t in enumerate(tables)]
    prepend = v.check_count(func, "prepend", prepend)
    if (prepend or out is not None) and strategy != "concat":
        msg = f"{func}: prepend and out need strategy='concat'"
        raise ArrowSparseValueError(msg)
    if isinstance(indices, np.ndarray) and indices.ndim == 2:
        if indices.shape[1] != len(tables):
            msg = (f"{func}: indices matrix must have one column per table "
                   f"({len(tables)}), got shape {indices.shape}")
            raise ArrowSparseValueError(msg)
        per_table: list[Any] = [np.ascontiguousarray(indices[:, t]) for t in range(len(tables))]
    elif isinstance(indices, (Sequence, np.ndarray)) and not isinstance(indices, (str, bytes)):
        per_table = list(indices)
    else:
        msg = f"{func}: indices must be a sequence of ids or a 2-D matrix, got " \
              f"{type(indices).__name__}"
        raise ArrowSparseTypeError(msg)
    if len(per_table) != len(tables):
        msg = f"{func}: indices must hold one ids per table ({len(tables)}), got {len(per_table)}"
        raise ArrowSparseValueError(msg)
    workers = max_workers or min(max(len(tables), 1), os.cpu_count() or 1)
    if strategy == "sequential":
        return [_lookup(func, t, i, None, mode, None, None, False)
                for t, i in zip(tables, per_table, strict=True)]
    if strategy == "parallel":
        results: list[Any] = [None] * len(tables)

        def one_parallel(t: int) -> None:
            results[t] = _lookup(func, tables[t], per_table[t], None, mode, None, None,
                                 _is_own_kernel(per_table[t], mode))

        _in_threads(one_parallel, [_is_own_kernel(i, mode) for i in per_table], workers)
        return results
    rows = {_num_outputs(func, i) for i in per_table}
    if len(rows) > 1:
        msg = (f"{func}: strategy='concat' needs the same number of rows per lookup, "
               f"got {sorted(rows)}")
        raise ArrowSparseValueError(msg)
    n = rows.pop() if rows else 0
    dtype = np.result_type(*[t.dtype for t in tables]) if tables else np.dtype(np.float32)
    shape = (n, prepend + sum(t.shape[1] for t in tables))
    if out is None:
        out = v.empty(func, shape, dtype)
    else:
        _check_out(func, out, shape, dtype)
    out[:, :prepend] = 0
    cols = np.cumsum([prepend] + [t.shape[1] for t in tables])

    def one(t: int) -> None:
        block = out[:, cols[t]:cols[t + 1]]
        table = tables[t]
        ids = per_table[t]
        if _is_own_kernel(ids, mode) and np.ndim(ids) == 1 and table.dtype == dtype:
            _lookup(func, table, ids, block, mode, None, None, True)
        else:
            block[...] = _as_numpy_rows(_lookup(func, table, _jagged_if_arrow(ids), None, mode,
                                                None, None, _is_own_kernel(ids, mode)))

    _in_threads(one, [_is_own_kernel(i, mode) for i in per_table], workers)
    return out


def _is_own_kernel(ids: Any, mode: str) -> bool:
    """Whether a lookup runs this module's kernels (1-D ids, or 2-D ids summed)."""
    return not _is_list_input(ids) and (np.ndim(ids) == 1 or mode == "sum")


def _in_threads(fn: Callable[[int], None], pooled: list[bool], workers: int) -> None:
    """Run ``fn(t)`` for every t: pooled ones in threads, the others in this thread.

    Pooled tasks run this module's single-threaded kernels. The others (pooled bags) use
    ``embedding_bag``, whose kernels may start Numba's own thread pool, which not every
    Numba threading layer allows from several threads at once: they run here, meanwhile.
    """
    todo = [t for t, p in enumerate(pooled) if p]
    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(fn, t) for t in todo]
        for t, p in enumerate(pooled):
            if not p:
                fn(t)
        for f in futures:
            f.result()


def _jagged_if_arrow(ids: Any) -> Any:
    return Jagged.from_arrow(ids) if isinstance(ids, (pa.Array, pa.ChunkedArray)) \
        and _is_list_input(ids) else ids


def _as_numpy_rows(x: Any) -> np.ndarray:
    return x if isinstance(x, np.ndarray) else np.asarray(x)


# ============================================================================ backward
@dataclass(frozen=True)
class SparseGrad:
    """A row-sparse gradient of an embedding table: ``values[i]`` belongs to row ``rows[i]``.

    :func:`lookup_backward` returns it coalesced (``rows`` unique and sorted); one built
    by hand may repeat rows, and :meth:`coalesce` sums them.

    Parameters
    ----------
    rows
        1-D int64 row numbers.
    values
        ``[len(rows), dim]`` float gradient rows.

    Examples
    --------
    >>> g = asp.embedding.SparseGrad(np.array([3, 1, 3]), np.array([[1.0], [2.0], [4.0]]))
    >>> g.coalesce()
    SparseGrad(rows=array([1, 3]), values=array([[2.], [5.]]))
    """

    rows: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        func = "SparseGrad"
        rows = v.as_index_array(func, "rows", self.rows)
        values = v.as_values_array(func, "values", self.values, min_ndim=2)
        if values.dtype.kind != "f":
            msg = f"{func}: values must have a float dtype, got {values.dtype}"
            raise ArrowSparseTypeError(msg)
        if values.ndim != 2 or values.shape[0] != len(rows):
            msg = f"{func}: values must have shape ({len(rows)}, dim), got {values.shape}"
            raise ArrowSparseValueError(msg)
        if len(rows) and rows.min() < 0:
            pos = v.first_true(rows < 0)
            msg = v.message(func, "rows", "must be non-negative", pos, rows[pos])
            raise ArrowSparseIndexError(msg)
        object.__setattr__(self, "rows", np.asarray(rows, dtype=np.int64))
        object.__setattr__(self, "values", values)

    def __repr__(self) -> str:
        return f"SparseGrad(rows={self.rows!r}, values={self.values!r})"

    @property
    def dim(self) -> int:
        """Width of the gradient rows (the table's ``dim``)."""
        return int(self.values.shape[1])

    @property
    def is_coalesced(self) -> bool:
        """Whether ``rows`` are strictly increasing (unique and sorted)."""
        return bool(np.all(self.rows[1:] > self.rows[:-1]))

    def coalesce(self) -> SparseGrad:
        """Sum the rows of repeated ids; sort the rows.

        Returns
        -------
        SparseGrad
            ``self`` when already coalesced, else a new coalesced gradient. Repeated rows
            are added in their input order, so the result is deterministic.

        Examples
        --------
        >>> asp.embedding.SparseGrad(np.array([2, 0]), np.ones((2, 1))).coalesce().rows
        array([0, 2])
        """
        if self.is_coalesced:
            return self
        bag = np.arange(len(self.rows), dtype=np.int64)
        rows, values = _coalesce(self.rows, bag, _NONE_F64,
                                 np.ascontiguousarray(self.values), False)
        return SparseGrad(rows, values)

    def to_arrow(self) -> pa.RecordBatch:
        """Two columns: ``row`` (int64) and ``grad`` (``fixed_size_list<float>[dim]``).

        Returns
        -------
        pyarrow.RecordBatch
            Zero-copy views of ``rows`` and ``values`` (when C-contiguous).

        Examples
        --------
        >>> g = asp.embedding.SparseGrad(np.array([1, 3]), np.ones((2, 2), np.float32))
        >>> g.to_arrow().schema
        row: int64
        grad: fixed_size_list<item: float>[2]
          child 0, item: float
        """
        values = np.ascontiguousarray(self.values)
        grad = pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), self.dim)
        return pa.RecordBatch.from_arrays([pa.array(self.rows), grad], names=["row", "grad"])

    @classmethod
    def from_arrow(cls, batch: pa.RecordBatch | pa.Table) -> SparseGrad:
        """Read back :meth:`to_arrow`'s batch (zero-copy for one chunk).

        Parameters
        ----------
        batch
            A RecordBatch or Table with ``row`` and ``grad`` columns.

        Returns
        -------
        SparseGrad
            The gradient, not coalesced unless it was.

        Raises
        ------
        TypeError
            Not a RecordBatch/Table, or columns of the wrong types.
        ValueError
            A missing column, or nulls.

        Examples
        --------
        >>> g = asp.embedding.SparseGrad(np.array([1, 3]), np.ones((2, 2), np.float32))
        >>> asp.embedding.SparseGrad.from_arrow(g.to_arrow()).rows
        array([1, 3])
        """
        func = "SparseGrad.from_arrow"
        if not isinstance(batch, (pa.RecordBatch, pa.Table)):
            msg = f"{func}: batch must be a RecordBatch or Table, got {type(batch).__name__}"
            raise ArrowSparseTypeError(msg)
        for name in ("row", "grad"):
            if name not in batch.schema.names:
                msg = f"{func}: batch has no {name!r} column (columns: {batch.schema.names})"
                raise ArrowSparseValueError(msg)
        grad = batch.column("grad")
        if isinstance(grad, pa.ChunkedArray):
            grad = grad.combine_chunks() if grad.num_chunks != 1 else grad.chunk(0)
        if not pa.types.is_fixed_size_list(grad.type) or not pa.types.is_floating(
                grad.type.value_type):
            msg = f"{func}: grad must be fixed_size_list<float>[dim], got {grad.type}"
            raise ArrowSparseTypeError(msg)
        if grad.null_count:
            msg = f"{func}: grad must not contain nulls"
            raise ArrowSparseValueError(msg)
        dim = grad.type.list_size
        values = grad.flatten().to_numpy(zero_copy_only=True).reshape(len(grad), dim)
        return cls(v.as_index_array(func, "row", batch.column("row")), values)


def _coalesce(ids: np.ndarray, bag: np.ndarray, scale: np.ndarray, grad_out: np.ndarray,
              serial: bool) -> tuple[np.ndarray, np.ndarray]:
    n = len(ids)
    if n and (int(ids.max()) + 1) * n < 1 << 62:
        # Pack (id, position) into one unique int64 key: an unstable sort of unique keys
        # is a stable sort of the ids, and numpy's SIMD sort is ~5x faster than the
        # stable (merge/radix) argsort on int64.
        key = ids * np.int64(n) + np.arange(n, dtype=np.int64)
        key.sort()
        ordered, order = np.divmod(key, np.int64(n))
    else:
        order = np.argsort(ids, kind="stable")
        ordered = ids[order]
    if len(ordered):
        starts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
        starts = np.concatenate(([0], starts, [len(ordered)])).astype(np.int64)
    else:
        starts = np.zeros(1, dtype=np.int64)
    rows = ordered[starts[:-1]]
    values = np.empty((len(rows), grad_out.shape[1]), dtype=grad_out.dtype)
    _kernel("coalesce_sorted")(grad_out, order.astype(np.int64, copy=False), bag, scale,
                               starts, values, serial)
    return rows.astype(np.int64, copy=False), values


def _flat_bags(func: str, ids: Any, offsets: Any, weights: Any
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray, int]:
    """Return ``(ids, bag, weights, bag_sizes, num_bags)`` for the ids in use."""
    if isinstance(ids, (pa.Array, pa.ChunkedArray)):
        if not _is_list_input(ids):
            if offsets is None:
                return _flat_bags(func, v.as_index_array(func, "ids", ids), None, weights)
            ids = v.as_index_array(func, "ids", ids)
        else:
            ids = Jagged.from_arrow(ids)
    if isinstance(ids, Jagged):
        if offsets is not None:
            msg = f"{func}: offsets must not be given with list ids (they carry their own)"
            raise ArrowSparseValueError(msg)
        values = ids.values
        if isinstance(values, np.ndarray) and values.size == 0 and values.dtype.kind == "f":
            values = values.astype(np.int64)  # from_list([[]]) infers float64
        if not isinstance(values, np.ndarray) or values.ndim != 1 or values.dtype.kind not in "iu":
            msg = f"{func}: ids must be a Jagged of 1-D integers"
            raise ArrowSparseTypeError(msg)
        offs = np.asarray(ids.offsets, dtype=np.int64)
        keep = np.ones(int(offs[-1] - offs[0]), dtype=bool)
        lengths = np.diff(offs)
        if ids.validity is not None:
            keep &= np.repeat(ids.validity, lengths)
        if ids.values_validity is not None:
            keep &= ids.values_validity[offs[0]:offs[-1]]
        flat = v.as_index_array(func, "ids", values[offs[0]:offs[-1]])
        bag = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
        w = None
        if weights is not None:
            w = _bag_weights(func, weights, offs, ids.num_rows)
        if not keep.all():
            flat, bag = flat[keep], bag[keep]
            w = None if w is None else w[keep]
        sizes = np.bincount(bag, minlength=len(lengths))
        return flat, bag, w, sizes, len(lengths)
    ndim = 2 if np.ndim(ids) == 2 else 1
    arr = v.as_index_array(func, "ids", ids, ndim=ndim)
    if ndim == 2:
        n, k = arr.shape
        flat = arr.reshape(-1)
        bag = np.repeat(np.arange(n, dtype=np.int64), k)
        sizes = np.full(n, k, dtype=np.int64)
        w = None if weights is None else _flat_weights(func, weights, flat.size)
        return flat, bag, w, sizes, n
    if offsets is None:
        n = len(arr)
        w = None if weights is None else _flat_weights(func, weights, n)
        return arr, np.arange(n, dtype=np.int64), w, np.ones(n, np.int64), n
    offs = v.check_offsets(func, "offsets", offsets, len(arr)).astype(np.int64)
    lengths = np.diff(offs)
    flat = arr[offs[0]:offs[-1]]
    bag = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    w = None
    if weights is not None:
        w = _flat_weights(func, weights, len(arr))[offs[0]:offs[-1]]
    return flat, bag, w, lengths, len(lengths)


def _flat_weights(func: str, weights: Any, n: int) -> np.ndarray:
    w = v.as_values_array(func, "per_sample_weights", weights, min_ndim=0)
    w = w.reshape(-1) if w.ndim == 2 else w
    if w.shape != (n,):
        msg = f"{func}: per_sample_weights must hold one weight per id ({n}), got shape {w.shape}"
        raise ArrowSparseValueError(msg)
    return w.astype(np.float64, copy=False)


def _bag_weights(func: str, weights: Any, offs: np.ndarray, num_rows: int) -> np.ndarray:
    if isinstance(weights, (pa.Array, pa.ChunkedArray)) and _is_list_input(weights):
        weights = Jagged.from_arrow(weights)
    if isinstance(weights, Jagged):
        woffs = np.asarray(weights.offsets, dtype=np.int64)
        if len(woffs) != len(offs) or not np.array_equal(np.diff(woffs), np.diff(offs)):
            msg = f"{func}: per_sample_weights must have the same row lengths as ids"
            raise ArrowSparseValueError(msg)
        w = v.as_values_array(func, "per_sample_weights", weights.values)
        return w[woffs[0]:woffs[-1]].astype(np.float64, copy=False)
    return _flat_weights(func, weights, int(offs[-1] - offs[0]))


def lookup_backward(grad_out: Any, ids: Any, *, offsets: Any = None, mode: str = "sum",
                    per_sample_weights: Any = None, num_embeddings: int) -> SparseGrad:
    """Gradient of :func:`lookup` with respect to the table, as a coalesced :class:`SparseGrad`.

    Parameters
    ----------
    grad_out
        Float ``[outputs, dim]``: the gradient of the loss with respect to the lookup's
        result (one row per id, per 2-D row or per bag).
    ids
        The ids given to :func:`lookup`: 1-D, 2-D ``[n, k]``, 1-D with ``offsets``, a
        Jagged or an Arrow list array.
    offsets
        Bag boundaries (``bags + 1`` long) into 1-D ``ids``.
    mode
        ``"sum"`` or ``"mean"`` (each id gets ``grad_out[bag] / bag_size``). ``"max"``
        raises: its gradient needs the forward's argmax.
    per_sample_weights
        The forward's weights: each id's gradient is scaled by its weight.
    num_embeddings
        Rows of the table (ids are checked against it).

    Returns
    -------
    SparseGrad
        ``rows`` unique and sorted (int64), ``values[len(rows), dim]`` of ``grad_out``'s
        dtype: the sum over the occurrences of each id.

    Raises
    ------
    ValueError
        ``mode="max"`` or unknown, ``grad_out`` rows not matching the outputs.
    IndexError
        An id outside ``[0, num_embeddings)``.
    TypeError
        Non-float ``grad_out``, non-integer ids.

    See Also
    --------
    lookup : The forward pass.
    sgd : Apply the gradient.

    Notes
    -----
    Deterministic: ids are stably sorted and each row's contributions are added in
    input order, by one thread per row, whatever the number of threads. Null bags and
    null ids of Arrow / Jagged input get no gradient, and ``"mean"`` divides by the
    number of non-null ids, as the forward does. Empty bags contribute nothing.

    Examples
    --------
    EmbeddingTables.jl's pullback (transposed): ids ``[0, 2, 3]``.

    >>> dy = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], np.float32)
    >>> g = asp.embedding.lookup_backward(dy, [0, 2, 3], num_embeddings=4)
    >>> g.rows, g.values[:, 0]
    (array([0, 2, 3]), array([1., 5., 9.], dtype=float32))

    Bags of the Caffe2 batch: id 2 and id 3 appear in two bags each.

    >>> ids = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
    >>> g = asp.embedding.lookup_backward(np.array([[1.0], [10.0], [100.0]]), ids,
    ...                                   num_embeddings=8)
    >>> g.rows, g.values.ravel()
    (array([1, 2, 3, 4, 6, 7]), array([  1.,  11., 101.,  10., 110.,  10.]))
    """
    func = "lookup_backward"
    mode = _mode(func, mode)
    if mode == "max":
        msg = (f"{func}: mode='max' is not supported: its gradient needs the forward's argmax "
               "(use segment_argmax on the pooled rows and pass the winning ids as 1-D ids)")
        raise ArrowSparseValueError(msg)
    num = v.check_count(func, "num_embeddings", num_embeddings)
    grad = v.as_values_array(func, "grad_out", grad_out, min_ndim=2)
    if grad.dtype.kind != "f" or grad.ndim != 2:
        msg = f"{func}: grad_out must be a 2-D float array, got {grad.dtype} of shape {grad.shape}"
        raise ArrowSparseTypeError(msg)
    flat, bag, w, sizes, num_bags = _flat_bags(func, ids, offsets, per_sample_weights)
    if grad.shape[0] != num_bags:
        msg = (f"{func}: grad_out must have one row per lookup output ({num_bags}), "
               f"got shape {grad.shape}")
        raise ArrowSparseValueError(msg)
    flat = v.check_indices(func, "ids", flat, num).astype(np.int64, copy=False)
    scale = w
    if mode == "mean":
        inv = 1.0 / np.maximum(sizes, 1).astype(np.float64)
        scale = inv[bag] if scale is None else scale * inv[bag]
    rows, values = _coalesce(flat, bag, _NONE_F64 if scale is None else scale,
                             np.ascontiguousarray(grad), False)
    return SparseGrad(rows, values)


# ========================================================================== optimizers
def _grad(func: str, table: np.ndarray, grad: Any) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(grad, SparseGrad):
        msg = f"{func}: grad must be a SparseGrad (from lookup_backward), got {type(grad).__name__}"
        raise ArrowSparseTypeError(msg)
    if grad.dim != table.shape[1]:
        msg = f"{func}: grad has dim {grad.dim} but the table has dim {table.shape[1]}"
        raise ArrowSparseValueError(msg)
    grad = grad.coalesce()
    if len(grad.rows) and grad.rows[-1] >= len(table):
        pos = v.first_true(grad.rows >= len(table))
        msg = v.message(func, "grad.rows", f"out of range [0, {len(table)})", pos,
                        grad.rows[pos])
        raise ArrowSparseIndexError(msg)
    return grad.rows, np.ascontiguousarray(grad.values, dtype=table.dtype)


def _float_table(func: str, table: Any) -> np.ndarray:
    table = _table(func, table)
    return _writable(func, "table", table, table.shape)


def _prepare(opt: str, table: Any, state: Any, grad: Any, hyper: dict[str, Any]
             ) -> Callable[[bool], None]:
    """Check one update's arguments; return the kernel call (serial flag as argument)."""
    table = _float_table(opt, table)
    rows, values = _grad(opt, table, grad)
    if opt == "sgd":
        lr = _scalar(opt, "lr", hyper.pop("lr"))
        _no_extra(opt, hyper)
        return lambda serial: _kernel("sgd_rows")(table, rows, values, lr, serial)
    if opt in ("adagrad", "rowwise_adagrad"):
        shape = table.shape if opt == "adagrad" else table.shape[:1]
        s = _writable(opt, "state", state, shape)
        lr = _scalar(opt, "lr", hyper.pop("lr"))
        eps = _scalar(opt, "eps", hyper.pop("eps", 1e-10))
        _no_extra(opt, hyper)
        name = "adagrad_rows" if opt == "adagrad" else "rowwise_adagrad_rows"
        return lambda serial: _kernel(name)(table, s, rows, values, lr, eps, serial)
    if opt == "ftrl":
        if not isinstance(state, (tuple, list)) or len(state) != 2:
            msg = f"{opt}: state must be the pair (z, n) of accumulators"
            raise ArrowSparseTypeError(msg)
        z = _writable(opt, "z", state[0], table.shape, table.dtype)
        n = _writable(opt, "n", state[1], table.shape, table.dtype)
        alpha = _scalar(opt, "alpha", hyper.pop("alpha", 0.005), positive=True)
        beta = _scalar(opt, "beta", hyper.pop("beta", 1.0))
        l1 = _scalar(opt, "l1", hyper.pop("l1", 0.001))
        l2 = _scalar(opt, "l2", hyper.pop("l2", 0.001))
        _no_extra(opt, hyper)
        return lambda serial: _kernel("ftrl_rows")(table, z, n, rows, values, alpha, beta, l1,
                                                   l2, serial)
    msg = f"update: opt must be 'sgd', 'adagrad', 'rowwise_adagrad' or 'ftrl', got {opt!r}"
    raise ArrowSparseValueError(msg)


def _no_extra(func: str, hyper: dict[str, Any]) -> None:
    if hyper:
        msg = f"{func}: unexpected hyper-parameters {sorted(hyper)}"
        raise ArrowSparseTypeError(msg)


def sgd(table: np.ndarray, grad: SparseGrad, lr: float) -> None:
    """In-place SGD on the rows a sparse gradient touches: ``table[r] -= lr * g[r]``.

    Parameters
    ----------
    table
        Writable, C-contiguous float table ``[num_embeddings, dim]``.
    grad
        A :class:`SparseGrad` (coalesced first when it is not).
    lr
        Learning rate (finite, non-negative).

    Raises
    ------
    TypeError
        A grad that is not a SparseGrad, a non-float table.
    ValueError
        A read-only or non-contiguous table, a gradient of another ``dim``.
    IndexError
        A gradient row outside the table.

    See Also
    --------
    adagrad, rowwise_adagrad, ftrl, update

    Notes
    -----
    One Numba kernel over the unique rows (threads split rows, so each row is written
    by one thread): the result is deterministic, and equals ``torch.optim.SGD`` on a
    sparse gradient.

    Examples
    --------
    EmbeddingTables.jl's fused update, transposed (``Descent(0.1)``):

    >>> table = np.zeros((4, 4), np.float32)
    >>> dy = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    >>> asp.embedding.sgd(table, asp.embedding.lookup_backward(dy, [0, 2, 3], num_embeddings=4),
    ...                   0.1)
    >>> table
    array([[-0.1, -0.2, -0.3, -0.4],
           [ 0. ,  0. ,  0. ,  0. ],
           [-0.5, -0.6, -0.7, -0.8],
           [-0.9, -1. , -1.1, -1.2]], dtype=float32)
    """
    _prepare("sgd", table, None, grad, {"lr": lr})(False)


def adagrad(table: np.ndarray, state: np.ndarray, grad: SparseGrad, lr: float,
            eps: float = 1e-10) -> None:
    """In-place Adagrad on the touched rows (``torch.optim.Adagrad``'s formula).

    For each element of each touched row: ``state += g**2``, then
    ``table -= lr * g / (sqrt(state) + eps)``.

    Parameters
    ----------
    table
        Writable, C-contiguous float table ``[num_embeddings, dim]``.
    state
        Running sum of squared gradients, the table's shape and a float dtype
        (start from zeros, or from ``initial_accumulator_value``).
    grad
        A :class:`SparseGrad`.
    lr
        Learning rate.
    eps
        Added to the square root (``torch.optim.Adagrad``'s default ``1e-10``).

    Raises
    ------
    TypeError
        A grad that is not a SparseGrad, a non-float table or state.
    ValueError
        A state of another shape, a read-only table or state.
    IndexError
        A gradient row outside the table.

    See Also
    --------
    rowwise_adagrad : One accumulator per row.

    Examples
    --------
    >>> table = np.ones((3, 2))
    >>> state = np.zeros((3, 2))
    >>> g = asp.embedding.SparseGrad(np.array([1]), np.array([[2.0, -4.0]]))
    >>> asp.embedding.adagrad(table, state, g, lr=0.5)
    >>> table
    array([[1. , 1. ],
           [0.5, 1.5],
           [1. , 1. ]])
    >>> state
    array([[ 0.,  0.],
           [ 4., 16.],
           [ 0.,  0.]])
    """
    _prepare("adagrad", table, state, grad, {"lr": lr, "eps": eps})(False)


def rowwise_adagrad(table: np.ndarray, state_rows: np.ndarray, grad: SparseGrad, lr: float,
                    eps: float = 1e-10) -> None:
    """In-place row-wise Adagrad (FBGEMM's ``rowwise_adagrad``): one accumulator per row.

    For each touched row ``r``: ``state_rows[r] += mean(g[r]**2)``, then
    ``table[r] -= lr * g[r] / (sqrt(state_rows[r]) + eps)``.

    Parameters
    ----------
    table
        Writable, C-contiguous float table ``[num_embeddings, dim]``.
    state_rows
        Float ``[num_embeddings]`` accumulators.
    grad
        A :class:`SparseGrad`.
    lr
        Learning rate.
    eps
        Added to the square root.

    Raises
    ------
    TypeError
        A grad that is not a SparseGrad, a non-float table or state.
    ValueError
        A state of another shape, a read-only table or state.
    IndexError
        A gradient row outside the table.

    See Also
    --------
    adagrad : One accumulator per element.

    Examples
    --------
    >>> table = np.ones((2, 2))
    >>> state = np.zeros(2)
    >>> asp.embedding.rowwise_adagrad(table, state,
    ...     asp.embedding.SparseGrad(np.array([0]), np.array([[3.0, 4.0]])), lr=1.0)
    >>> state
    array([12.5,  0. ])
    >>> table.round(4)
    array([[ 0.1515, -0.1314],
           [ 1.    ,  1.    ]])
    """
    _prepare("rowwise_adagrad", table, state_rows, grad, {"lr": lr, "eps": eps})(False)


def ftrl(table: np.ndarray, z: np.ndarray, n: np.ndarray, grad: SparseGrad,
         alpha: float = 0.005, beta: float = 1.0, l1: float = 0.001, l2: float = 0.001) -> None:
    """In-place FTRL-proximal on the touched rows (Caffe2's ``SparseFtrl``).

    Per element of each touched row, with ``w`` the weight and ``z``, ``n`` its
    accumulators (Caffe2 ``ftrl_compute``, McMahan et al. 2013)::

        n_new = n + g**2
        sigma = (sqrt(n_new) - sqrt(n)) / alpha
        z     = z + g - sigma * w
        n     = n_new
        w     = (l1 * sign(z) - z) / ((beta + sqrt(n)) / alpha + l2)   if |z| > l1
        w     = 0                                                      otherwise

    Parameters
    ----------
    table
        Writable, C-contiguous float table ``[num_embeddings, dim]`` (the weights ``w``).
    z
        Linear accumulator, the table's shape and dtype (start from zeros).
    n
        Squared-gradient accumulator, the table's shape and dtype (start from zeros).
    grad
        A :class:`SparseGrad`.
    alpha
        Learning rate (Caffe2 default 0.005).
    beta
        Smoothing of the per-coordinate learning rate (default 1).
    l1
        L1 strength, Caffe2's ``lambda1`` (default 0.001).
    l2
        L2 strength, Caffe2's ``lambda2`` (default 0.001).

    Raises
    ------
    TypeError
        A grad that is not a SparseGrad, accumulators of another dtype.
    ValueError
        Accumulators of another shape, ``alpha <= 0``, a negative hyper-parameter.
    IndexError
        A gradient row outside the table.

    See Also
    --------
    sgd, adagrad

    Notes
    -----
    Caffe2 keeps ``n`` and ``z`` interleaved in one ``[..., 2]`` blob; here they are two
    arrays. Caffe2 applies a repeated index once per occurrence; here the gradient is
    coalesced first (one step with the summed gradient), as ``sgd`` and ``adagrad`` do.

    Examples
    --------
    >>> table = np.zeros((2, 1))
    >>> z, n = np.zeros((2, 1)), np.zeros((2, 1))
    >>> asp.embedding.ftrl(table, z, n, asp.embedding.SparseGrad(np.array([1]), np.array([[2.0]])),
    ...                    alpha=0.5, beta=1.0, l1=0.5, l2=0.0)
    >>> z.ravel(), n.ravel(), table.ravel()
    (array([0., 2.]), array([0., 4.]), array([ 0. , -0.25]))
    """
    _prepare("ftrl", table, (z, n), grad, {"alpha": alpha, "beta": beta, "l1": l1, "l2": l2})(
        False)


def update(opt: str, tables: Sequence[np.ndarray], grads: Sequence[SparseGrad], *,
           states: Sequence[Any] | None = None, max_workers: int | None = None,
           **hyper: Any) -> None:
    """Apply one optimizer to several tables at once, one thread per table.

    Parameters
    ----------
    opt
        ``"sgd"``, ``"adagrad"``, ``"rowwise_adagrad"`` or ``"ftrl"``.
    tables
        The tables, updated in place (they must not share memory).
    grads
        One :class:`SparseGrad` per table.
    states
        One state per table for the stateful optimizers: the ``state`` array of
        ``adagrad``/``rowwise_adagrad``, the pair ``(z, n)`` of ``ftrl``.
    max_workers
        Threads (default ``min(len(tables), cpus)``).
    **hyper
        The optimizer's hyper-parameters (``lr``, ``eps``; ``alpha``, ``beta``, ``l1``,
        ``l2``), shared by every table.

    Raises
    ------
    ValueError
        Unknown ``opt``, list lengths that differ, tables sharing memory.
    TypeError
        As the single-table functions; a missing or unexpected hyper-parameter.

    See Also
    --------
    sgd, adagrad, rowwise_adagrad, ftrl

    Notes
    -----
    Every argument is checked before any table is touched. The kernels release the GIL
    and run single-threaded inside the pool, so the result is the same as calling the
    single-table function on each table in turn.

    Examples
    --------
    >>> a, b = np.zeros((2, 1)), np.zeros((3, 1))
    >>> ga = asp.embedding.SparseGrad(np.array([1]), np.array([[1.0]]))
    >>> gb = asp.embedding.SparseGrad(np.array([0, 2]), np.array([[2.0], [4.0]]))
    >>> asp.embedding.update("sgd", [a, b], [ga, gb], lr=0.5)
    >>> a.ravel(), b.ravel()
    (array([ 0. , -0.5]), array([-1.,  0., -2.]))
    """
    func = "update"
    if not isinstance(opt, str) or opt not in ("sgd", "adagrad", "rowwise_adagrad", "ftrl"):
        msg = f"{func}: opt must be 'sgd', 'adagrad', 'rowwise_adagrad' or 'ftrl', got {opt!r}"
        raise ArrowSparseValueError(msg)
    if not isinstance(tables, Sequence) or not isinstance(grads, Sequence):
        msg = f"{func}: tables and grads must be sequences"
        raise ArrowSparseTypeError(msg)
    if len(tables) != len(grads):
        msg = f"{func}: one grad per table needed ({len(tables)} tables, {len(grads)} grads)"
        raise ArrowSparseValueError(msg)
    if opt != "sgd" and (states is None or len(states) != len(tables)):
        msg = f"{func}: opt={opt!r} needs one state per table (states=[...])"
        raise ArrowSparseValueError(msg)
    if opt == "sgd" and "lr" not in hyper:
        msg = f"{func}: missing hyper-parameter 'lr'"
        raise ArrowSparseTypeError(msg)
    if opt in ("adagrad", "rowwise_adagrad") and "lr" not in hyper:
        msg = f"{func}: missing hyper-parameter 'lr'"
        raise ArrowSparseTypeError(msg)
    for i in range(len(tables)):
        for j in range(i):
            if isinstance(tables[i], np.ndarray) and isinstance(tables[j], np.ndarray) \
                    and np.may_share_memory(tables[i], tables[j]):
                msg = f"{func}: tables {j} and {i} share memory; updates would race"
                raise ArrowSparseValueError(msg)
    calls = [_prepare(opt, t, None if states is None else states[i], g, dict(hyper))
             for i, (t, g) in enumerate(zip(tables, grads, strict=True))]
    if len(calls) <= 1:
        for call in calls:
            call(False)
        return
    workers = max_workers or min(len(calls), os.cpu_count() or 1)
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda call: call(True), calls))


# ============================================================================= storage
_COLUMN = "embedding"


def save_table(table: np.ndarray, path: str | os.PathLike[str]) -> None:
    """Write a table as an Arrow IPC file: one ``fixed_size_list<float>[dim]`` column.

    Parameters
    ----------
    table
        Float32 or float64 numpy table ``[num_embeddings, dim]`` (one row per table row).
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
    table = _table(func, table)
    if table.dtype not in (np.float32, np.float64):
        msg = f"{func}: table must be float32 or float64, got {table.dtype}"
        raise ArrowSparseTypeError(msg)
    flat = pa.array(np.ascontiguousarray(table).reshape(-1))
    column = pa.FixedSizeListArray.from_arrays(flat, table.shape[1])
    batch = pa.RecordBatch.from_arrays([column], names=[_COLUMN])
    try:
        with pa.OSFile(os.fspath(path), "wb") as sink, \
                pa.ipc.new_file(sink, batch.schema) as writer:
            writer.write_batch(batch)
    except OSError as exc:
        msg = f"{func}: cannot write {os.fspath(path)!r} ({exc})"
        raise ArrowSparseIOError(msg) from None


def load_table(path: str | os.PathLike[str], mmap: bool = True) -> np.ndarray:
    """Read a table written by :func:`save_table`.

    Parameters
    ----------
    path
        Arrow IPC file with one ``fixed_size_list<float32|float64>[dim]`` column.
    mmap
        ``True``: memory-map the file and return a zero-copy, **read-only** view (pages
        are read on first touch; the mapping lives as long as the array). ``False``: read
        it into a writable, owned array (use this, or ``np.array(view)``, to train).

    Returns
    -------
    numpy.ndarray
        ``[num_embeddings, dim]``.

    Raises
    ------
    OSError
        A missing or unreadable file (:class:`~arrow_sparse.errors.ArrowSparseIOError`).
    ValueError
        Not an Arrow IPC file, several columns, null rows.
    TypeError
        A column that is not ``fixed_size_list<float>``.

    See Also
    --------
    save_table

    Notes
    -----
    A file with several record batches cannot be one contiguous view: its batches are
    concatenated (one copy) even with ``mmap=True``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "table.arrow"
    >>> asp.embedding.save_table(np.ones((2, 3), np.float32), path)
    >>> t = asp.embedding.load_table(path)
    >>> t.shape, t.flags.writeable
    ((2, 3), False)
    """
    func = "load_table"
    mmap = v.check_bool(func, "mmap", mmap)
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
    if len(batches) == 1:
        column = batches[0].column(0)
    else:
        chunks = [b.column(0) for b in batches]
        column = pa.concat_arrays(chunks) if chunks else pa.array([], type=typ)
    if column.null_count:
        msg = f"{func}: the table must not contain null rows"
        raise ArrowSparseValueError(msg)
    values = column.flatten().to_numpy(zero_copy_only=True).reshape(len(column), dim)
    if mmap:
        if values.flags.writeable:
            values.flags.writeable = False
        return values
    return np.array(values)
