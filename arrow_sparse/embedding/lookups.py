"""Embedding lookups: ``lookup`` (gather, reducing gather, pooled bags) and ``maplookup``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .. import _arrow
from .. import _validate as v
from .._backend import array_module, device_checks, get_kernel, module_of, run_in_threads
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ._args import (
    Bags,
    DeviceBags,
    bags,
    check_mode,
    check_table,
    is_array,
    is_list_input,
    ndim_of,
)

__all__ = ["lookup", "maplookup"]

_STRATEGIES = ("sequential", "parallel", "concat")
_GATHER_MODES = {"sum": 0, "mean": 1, "max": 2}  # kernels.cpu.segment.MODE_*


# ============================================================================= lookup
def lookup(table: Any, ids: Any, *, out: np.ndarray | None = None, mode: str = "sum",
           offsets: Any = None, per_sample_weights: Any = None,
           return_argmax: bool = False) -> Any:
    """Look rows of an embedding table up: gather, reducing gather, or pooled bags.

    Parameters
    ----------
    table
        numpy or CuPy array ``[num_embeddings, dim]`` (an integer dtype, float32 or
        float64).
    ids
        - 1-D integers ``[n]``: ``out[i] = table[ids[i]]`` (``[n, dim]``);
        - 2-D integers ``[n, k]``: ``out[i] = table[ids[i, 0]] + ... + table[ids[i, k-1]]``
          (EmbeddingTables.jl's reducing lookup, transposed; ``mode`` pools the ``k`` ids);
        - 1-D integers with ``offsets``, a :class:`~arrow_sparse.Jagged` or an Arrow list
          array of ids: one row per bag, pooled with ``mode`` (:func:`~arrow_sparse.embedding_bag`).
    out
        Optional array of the result's shape and dtype (numpy, or CuPy on the device),
        written in place and returned (EmbeddingTables.jl's ``lookup!``). It may be a
        strided view, such as a block of columns of a wider matrix, but must not share
        memory with an input (it would be read after being overwritten): that raises.
    mode
        ``"sum"``, ``"mean"`` or ``"max"``: how 2-D rows and bags are pooled.
    offsets
        Bag boundaries (``bags + 1`` long) into 1-D ``ids``.
    per_sample_weights
        One weight per id, in the form of ``ids`` (an array of their shape, or a Jagged /
        Arrow list array of their bag lengths): each row is scaled by its weight before
        pooling. With 1-D ids and no offsets, ``out[i] = w[i] * table[ids[i]]``.
    return_argmax
        With ``mode="max"`` only: also return, for each bag and column, the id whose row
        gave the max (what :func:`lookup_backward` needs for ``mode="max"``). 1-D ids
        without offsets are then bags of one id. ``per_sample_weights`` are refused.

    Returns
    -------
    numpy.ndarray, cupy.ndarray, pyarrow.Array or pyarrow.ChunkedArray
        ``out`` when given. Otherwise ``[n, dim]``: a plain 1-D lookup keeps the table's
        dtype; pooled rows follow :func:`~arrow_sparse.embedding_bag` (integer sums widen
        to 64 bits, integer means are float64, weights give their float dtype). Bags of
        Arrow ids give Arrow (``fixed_size_list``, null bags null, and empty bags null for
        ``mean``/``max``) unless ``out`` is given (then null and empty bags are zeros).
        Device inputs give a CuPy array (a Jagged on the device: null bags are zeros).
        With ``return_argmax=True``: ``(result, argmax)``, ``argmax`` an int64 array
        ``[bags, dim]`` (numpy, or CuPy on the device) holding ids, -1 for empty and null
        bags.

    Raises
    ------
    IndexError
        An id outside ``[0, num_embeddings)``.
    ValueError
        Unknown ``mode``, ``return_argmax`` with another mode than ``"max"`` or with
        ``per_sample_weights``, malformed offsets, ``out`` of the wrong shape, ``out`` that
        shares memory with an input (exactly on the host: another block of columns of
        one matrix is fine; by extents on the device).
    TypeError
        A table that is not an array or has a float16 (or non-numeric) dtype,
        non-integer ids, ``out`` of the wrong dtype, host and device inputs together.

    See Also
    --------
    maplookup : Lookups on several tables at once.
    lookup_backward : The gradient of this function with respect to the table.
    arrow_sparse.embedding_bag : The pooled lookup.

    Notes
    -----
    Every form runs one Numba kernel (GIL released) that writes ``out`` directly, even
    a strided view: a plain gather, or the fused gather-and-pool kernel of
    :func:`~arrow_sparse.embedding_bag` (float sums accumulate in float64). Null ids are
    skipped (``mean`` divides by the non-null count) and null bags give zeros, or null in
    Arrow output. Empty bags give zeros in every mode (null for ``mean``/``max`` in Arrow
    output). ``lookup_backward`` and ``lookup_backward_weights`` read ``ids`` and weights
    the same way.

    The argmax of ``mode="max"`` follows the max itself, which is IEEE ``maximum`` (NaN
    propagates, ``+0.0`` beats ``-0.0``): the id at the first position of the bag
    holding the result, so ties go to the first occurrence, as in PyTorch's
    ``EmbeddingBag``. PyTorch differs only where NaN or signed zeros meet: its max keeps
    the first of ``-0.0`` and ``0.0`` and ignores a NaN that comes after a number.

    On the device: no synchronisation for a plain 1-D lookup (the kernel checks the
    ids; an id out of range is raised by the next check, and its row is left as it
    was); pooled forms read the bags with one kernel (its checks are deferred the same
    way) and pool them with :func:`~arrow_sparse.embedding_bag`'s gather kernel, whose
    own synchronisations are the only ones. With null bags or null ids the device adds
    the ids of a bag one at a time (the host drops the nulls first and adds four at a
    time): float sums may differ in the last bits.

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

    The max of each bag and column, and the id that gave it (ties: the first):

    >>> pooled, argmax = asp.embedding.lookup(
    ...     np.array([[1.0, 5.0], [3.0, 5.0], [2.0, 0.0]]),
    ...     asp.Jagged.from_list([[0, 1, 2], [], [2]]), mode="max", return_argmax=True)
    >>> pooled
    array([[3., 5.],
           [0., 0.],
           [2., 0.]])
    >>> argmax
    array([[ 1,  0],
           [-1, -1],
           [ 2,  2]])
    """
    func = "lookup"
    back = _arrow.like_series(ids)  # a Polars / pandas Series comes back as one
    ids = _arrow.as_arrow(ids)
    xp = array_module(func, table=table, ids=ids, offsets=offsets,
                      per_sample_weights=per_sample_weights, out=out)
    mode = check_mode(func, mode)
    if v.check_bool(func, "return_argmax", return_argmax):
        return _lookup_max(func, check_table(func, table), ids, offsets, per_sample_weights,
                           mode, out, xp)
    plan = _plan(func, check_table(func, table), ids, offsets, per_sample_weights, mode, xp)
    if out is None:
        res = v.empty(func, (plan.rows, plan.dim), plan.dtype, xp)
        plan.write(res)
        result = plan.finish(res)
    else:
        _check_out(func, out, (plan.rows, plan.dim), plan.dtype)
        v.check_no_overlap(func, "out", out, table=table, ids=ids, offsets=offsets,
                           per_sample_weights=per_sample_weights)
        plan.write(out)
        result = out
    device_checks(func, xp)
    return back(result, rows=offsets is None)  # with offsets: one row per bag


def _lookup_max(func: str, table: Any, ids: Any, offsets: Any, weights: Any, mode: str,
                out: Any, xp: Any) -> tuple[Any, Any]:
    """:func:`lookup` with ``return_argmax=True``: the max-pooled bags and their argmax."""
    if mode != "max":
        msg = f"{func}: return_argmax=True needs mode='max', got mode={mode!r}"
        raise ArrowSparseValueError(msg)
    if weights is not None:
        msg = (f"{func}: per_sample_weights are not supported with mode='max' and "
               "return_argmax=True (as in PyTorch: the max has no weights)")
        raise ArrowSparseValueError(msg)
    b = bags(func, ids, offsets, None, len(table), xp)
    shape = (b.num_bags, table.shape[1])
    argmax = v.empty(func, shape, np.dtype(np.int64), xp)
    if out is None:
        res = v.empty(func, shape, table.dtype, xp)
    else:
        _check_out(func, out, shape, table.dtype)
        v.check_no_overlap(func, "out", out, table=table, ids=ids, offsets=offsets)
        res = out
    read = b.read if isinstance(b, DeviceBags) else None
    get_kernel("embedding", "bag_max", xp)(xp.ascontiguousarray(table), b.ids, b.offsets, read,
                                           res, argmax)
    result = res if out is not None else _finish_bags(ids, b, mode, res)
    device_checks(func, xp)
    return result, argmax


@dataclass(frozen=True)
class _Plan:
    """A checked lookup, not yet computed.

    ``write(o)`` fills an ``[rows, dim]`` array (any view, of any dtype ``dtype`` casts
    to; on the device a CuPy array); ``finish`` wraps a filled result (Arrow for Arrow
    bags).
    """

    rows: int
    dim: int
    dtype: np.dtype
    write: Callable[[np.ndarray], None]
    finish: Callable[[np.ndarray], Any]


def _plan(func: str, table: Any, ids: Any, offsets: Any, weights: Any, mode: str,
          xp: Any) -> _Plan:
    """Check one lookup's arguments (nothing is computed yet) for the array module ``xp``."""
    dim = table.shape[1]
    src = xp.ascontiguousarray(table)
    if offsets is None and weights is None and not is_list_input(ids) and ndim_of(ids) == 1:
        if xp is np:
            idx = v.check_indices(func, "ids", ids, len(table))
            idx = idx if idx.dtype in (np.int32, np.int64) else idx.astype(np.int64)
            return _Plan(len(idx), dim, table.dtype, lambda o: _write_rows(src, idx, o, np),
                         lambda res: res)
        idx = v.as_index_array(func, "ids", ids, device=True)  # the kernel checks the range
        return _Plan(len(idx), dim, table.dtype, lambda o: _write_rows(src, idx, o, xp),
                     lambda res: res)
    b = bags(func, ids, offsets, weights, len(table), xp)
    dtype = _pooled_dtype(table.dtype, mode, None if b.weights is None else b.weights.dtype)
    return _Plan(b.num_bags, dim, dtype, lambda o: _write_bags(src, b, mode, o),
                 lambda res: _finish_bags(ids, b, mode, res))


def _pooled_dtype(dtype: np.dtype, mode: str, weights: np.dtype | None) -> np.dtype:
    """:func:`~arrow_sparse.embedding_bag`'s result dtype."""
    if weights is not None:
        dtype = np.result_type(dtype, weights)
    if mode == "mean":
        return np.dtype(np.float32 if dtype == np.float32 else np.float64)
    if mode == "max" and weights is None or dtype.kind == "f":
        return dtype
    return np.dtype(np.uint64 if dtype == np.uint64 else np.int64)


def _write_rows(table: Any, ids: Any, out: Any, xp: Any) -> None:
    """Gather rows of ``table`` into ``out``, which may have another dtype.

    The CUDA kernel copies rows in the table's dtype only, so a block of ``maplookup``'s
    ``"concat"`` matrix of the lookups' common dtype is filled through a temporary of the
    table's dtype (on the host too: the emulator runs host arrays on the CUDA kernels).
    """
    if out.dtype != table.dtype:
        rows = xp.empty(out.shape, dtype=table.dtype)
        _write_rows(table, ids, rows, xp)
        out[...] = rows
        return
    if xp is not np:
        get_kernel("embedding", "lookup_rows", xp)(table, ids, out, 0)
        return
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
    get_kernel("embedding", "lookup_rows")(table, ids, target, col)


def _write_bags(table: Any, b: Bags | DeviceBags, mode: str, out: Any) -> None:
    """Run the fused gather-and-pool kernel of ``embedding_bag`` straight into ``out``.

    Device bags keep their unread ids (null bags, null ids) and mask them out.
    """
    acc = np.dtype(np.float64) if out.dtype.kind == "f" or mode == "mean" else \
        np.dtype(np.uint64 if out.dtype == np.uint64 else np.int64)
    zero = acc.type(0)
    lowest = acc.type(-np.inf) if acc.kind == "f" else acc.type(np.iinfo(acc).min)
    read = b.read if isinstance(b, DeviceBags) else None
    get_kernel("segment", "gather_reduce", module_of(out))(
        table, b.ids, b.offsets, None, read, b.weights, None, _GATHER_MODES[mode], zero, lowest,
        0 if mode == "sum" else 1, out.dtype.type(0), out, None)


def _finish_bags(ids: Any, b: Bags | DeviceBags, mode: str, res: Any) -> Any:
    """Arrow bags give Arrow: null bags null, and empty ones too for ``mean``/``max``."""
    if isinstance(b, DeviceBags) or not b.arrow:
        return res
    ok = b.valid
    if mode != "sum":
        ok = b.sizes > 0 if ok is None else ok & (b.sizes > 0)
    result = _arrow.array_from_numpy(res, None if ok is None or ok.all() else ok)
    if isinstance(ids, pa.ChunkedArray):
        bounds = np.cumsum([0] + [len(c) for c in ids.chunks])
        return pa.chunked_array([result.slice(lo, hi - lo) for lo, hi in
                                 zip(bounds[:-1], bounds[1:], strict=True)], result.type)
    return result


def _check_out(func: str, out: Any, shape: tuple[int, ...], dtype: np.dtype) -> None:
    if not is_array(out):
        msg = f"{func}: out must be a numpy or cupy array, got {type(out).__name__}"
        raise ArrowSparseTypeError(msg)
    if out.dtype != dtype:
        msg = f"{func}: out must have dtype {dtype}, got {out.dtype}"
        raise ArrowSparseTypeError(msg)
    if out.shape != shape:
        msg = f"{func}: out must have shape {shape}, got {out.shape}"
        raise ArrowSparseValueError(msg)
    if not getattr(out.flags, "writeable", True):  # CuPy arrays have no such flag
        msg = f"{func}: out must be writable"
        raise ArrowSparseValueError(msg)


def maplookup(tables: Sequence[Any], indices: Any, strategy: str = "sequential",
              prepend: int = 0, *, mode: str = "sum", out: np.ndarray | None = None,
              max_workers: int | None = None) -> Any:
    """Independent lookups on several tables (EmbeddingTables.jl's ``maplookup``).

    Parameters
    ----------
    tables
        Sequence of numpy (or CuPy) tables ``[num_embeddings_t, dim_t]``.
    indices
        A sequence with one ``ids`` per table (anything :func:`lookup` takes), or a 2-D
        integer matrix ``[n, len(tables)]`` whose column ``t`` indexes table ``t``
        (non-reducing lookups).
    strategy
        ``"sequential"`` (one lookup after another, each kernel using every core),
        ``"parallel"`` (one lookup per thread of a pool, each kernel on one core) or
        ``"concat"`` (EmbeddingTables.jl's ``PreallocationStrategy``: every lookup's kernel
        writes its block of columns of one matrix directly, one lookup per thread).
    prepend
        ``"concat"`` only: number of leading columns kept for dense features. In a new
        matrix they are zeros; in ``out`` they are left as they are, so dense features
        may be written there before or after the call.
    mode
        Pooling of 2-D rows and bags (see :func:`lookup`).
    out
        ``"concat"`` only: the ``[n, prepend + sum(dims)]`` matrix to fill (EmbeddingTables.jl's
        ``maplookup!``); reusing it across batches saves the page faults of a fresh one.
        It must not share memory with a table or the indices.
    max_workers
        Threads for ``"parallel"`` and ``"concat"`` (default: ``min(len(tables), cpus)``).

    Returns
    -------
    list or numpy.ndarray
        A list of the lookups, or for ``"concat"`` one ``[n, prepend + sum(dims)]`` array
        of the lookups' common dtype (``numpy.result_type`` of each lookup's dtype, so
        summed integer tables are int64 and nothing wraps).

    Raises
    ------
    ValueError
        Unknown ``strategy``, as many ``indices`` as tables needed, ``"concat"`` lookups
        with different row counts, ``prepend`` given without ``"concat"``, ``out``
        sharing memory with a table or the indices.
    IndexError
        An id out of range of its table.
    TypeError
        A table that is not a numpy array, non-integer ids.

    See Also
    --------
    lookup : One table.

    Notes
    -----
    ``"parallel"`` and ``"concat"`` parallelise across tables, bags included: each
    lookup runs in a thread of a pool with Numba's thread count of that thread set to 1
    (the kernels release the GIL), so with many small tables every core works on its own
    tables. Every argument is checked before any thread starts. Where Numba's threading
    layer does not allow kernels in several threads at once (``workqueue``; ``tbb`` and
    ``omp`` do), the lookups run one after another on the calling thread, each kernel on
    every core.

    On the device the lookups run one after another on the current stream, whatever the
    strategy (each one's kernels spread over the whole device), with the
    synchronisations of :func:`lookup` only; ``"concat"`` writes the blocks of one CuPy
    matrix.

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

    Dense features written into ``out`` first are kept (DLRM's concatenation):

    >>> out = np.empty((3, 5), np.int64)
    >>> out[:, 0] = [7, 8, 9]
    >>> asp.embedding.maplookup([a, b], [[0, 1, 0], [1, 0, 0]], "concat", prepend=1, out=out)
    array([[ 7,  1,  1, 20, 20],
           [ 8,  2,  2, 10, 10],
           [ 9,  1,  1, 10, 10]])
    """
    func = "maplookup"
    if not isinstance(strategy, str) or strategy not in _STRATEGIES:
        msg = f"{func}: strategy must be 'sequential', 'parallel' or 'concat', got {strategy!r}"
        raise ArrowSparseValueError(msg)
    if is_array(tables) or not isinstance(tables, Sequence):
        msg = f"{func}: tables must be a sequence of numpy tables, got {type(tables).__name__}"
        raise ArrowSparseTypeError(msg)
    xp = array_module(func, tables=list(tables), indices=indices, out=out)
    given = list(tables)
    tables = [check_table(func, t, f"tables[{i}]") for i, t in enumerate(tables)]
    mode = check_mode(func, mode)
    prepend = v.check_count(func, "prepend", prepend)
    if (prepend or out is not None) and strategy != "concat":
        msg = f"{func}: prepend and out need strategy='concat'"
        raise ArrowSparseValueError(msg)
    if is_array(indices) and indices.ndim == 2:
        if indices.shape[1] != len(tables):
            msg = (f"{func}: indices matrix must have one column per table "
                   f"({len(tables)}), got shape {indices.shape}")
            raise ArrowSparseValueError(msg)
        per_table: list[Any] = [xp.ascontiguousarray(indices[:, t]) for t in range(len(tables))]
    elif isinstance(indices, (Sequence, np.ndarray)) and not isinstance(indices, (str, bytes)):
        per_table = list(indices)
    else:
        msg = f"{func}: indices must be a sequence of ids or a 2-D matrix, got " \
              f"{type(indices).__name__}"
        raise ArrowSparseTypeError(msg)
    if len(per_table) != len(tables):
        msg = f"{func}: indices must hold one ids per table ({len(tables)}), got {len(per_table)}"
        raise ArrowSparseValueError(msg)
    plans = [_plan(func, t, i, None, None, mode, xp)
             for t, i in zip(tables, per_table, strict=True)]
    if strategy != "concat":
        results: list[Any] = [None] * len(plans)

        def task(t: int) -> Callable[[], None]:
            def run() -> None:
                res = v.empty(func, (plans[t].rows, plans[t].dim), plans[t].dtype, xp)
                plans[t].write(res)
                results[t] = plans[t].finish(res)
            return run

        _run(func, xp, [task(t) for t in range(len(plans))],
             max_workers if strategy == "parallel" else 1)
        return results
    rows = {p.rows for p in plans}
    if len(rows) > 1:
        msg = (f"{func}: strategy='concat' needs the same number of rows per lookup, "
               f"got {sorted(rows)}")
        raise ArrowSparseValueError(msg)
    n = rows.pop() if rows else 0
    dtype = np.result_type(*[p.dtype for p in plans]) if plans else np.dtype(np.float32)
    shape = (n, prepend + sum(p.dim for p in plans))
    if out is None:
        out = v.empty(func, shape, dtype, xp)
        out[:, :prepend] = 0
    else:
        _check_out(func, out, shape, dtype)
        v.check_no_overlap(func, "out", out, tables=given, indices=indices)
    cols = np.cumsum([prepend] + [p.dim for p in plans])
    _run(func, xp, [_block_writer(p, out[:, cols[t]:cols[t + 1]])
                    for t, p in enumerate(plans)], max_workers)
    return out


def _block_writer(plan: _Plan, block: Any) -> Callable[[], None]:
    return lambda: plan.write(block)


def _run(func: str, xp: Any, tasks: list[Callable[[], None]], workers: int | None) -> None:
    """Run the lookups, then raise the device checks (deferred).

    In threads on the host (one after another for ``workers=1``), in turn on the device.
    """
    if xp is np and workers != 1:
        run_in_threads(tasks, workers)
    else:
        for task in tasks:
            task()
    device_checks(func, xp)
