"""Sparse gradients of embedding tables: :class:`SparseGrad` and the backward passes.

Part of :mod:`arrow_sparse.embedding`, which re-exports every public name here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .. import _arrow
from .. import _validate as v
from .._backend import (
    array_module,
    device_checks,
    device_of,
    fetch,
    get_kernel,
    is_cupy_array,
    module_of,
    normalize_device,
    transfer,
)
from ..errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged
from ._args import Bags, DeviceBags, bags, check_mode, check_table

__all__ = ["SparseGrad", "lookup_backward", "lookup_backward_weights"]


@dataclass(frozen=True)
class SparseGrad:
    """A row-sparse gradient of an embedding table: ``values[i]`` belongs to row ``rows[i]``.

    :func:`lookup_backward` returns it coalesced (``rows`` unique and sorted); one built
    by hand may repeat rows, and :meth:`coalesce` sums them.

    Parameters
    ----------
    rows
        1-D int64 row numbers (numpy, or CuPy on the device).
    values
        ``[len(rows), dim]`` float gradient rows, on the device of ``rows``.

    Notes
    -----
    On the device nothing is read back here: negative rows are caught by the device
    checks of the operations that use them (an optimizer step: ``grad.rows out of range
    of the table``).

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
        xp = array_module(func, rows=self.rows, values=self.values)
        rows = v.as_index_array(func, "rows", self.rows, device=True)
        values = v.as_values_array(func, "values", self.values, min_ndim=2, device=True)
        if values.dtype.kind != "f":
            msg = f"{func}: values must have a float dtype, got {values.dtype}"
            raise ArrowSparseTypeError(msg)
        if values.ndim != 2 or values.shape[0] != len(rows):
            msg = f"{func}: values must have shape ({len(rows)}, dim), got {values.shape}"
            raise ArrowSparseValueError(msg)
        if xp is np and len(rows) and rows.min() < 0:
            pos = v.first_true(rows < 0)
            msg = v.message(func, "rows", "must be non-negative", pos, rows[pos])
            raise ArrowSparseIndexError(msg)
        object.__setattr__(self, "rows", rows.astype(np.int64, copy=False))
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "_sorted", False)

    @classmethod
    def _coalesced(cls, rows: Any, values: Any, *, checked: bool = False) -> SparseGrad:
        """Build a gradient whose rows the caller knows to be strictly increasing.

        ``checked``: ``rows`` (1-D int64) and ``values`` (2-D float, as many rows) are
        known to be valid already, and are not checked again.
        """
        if checked:
            grad = object.__new__(cls)
            object.__setattr__(grad, "rows", rows)
            object.__setattr__(grad, "values", values)
        else:
            grad = cls(rows, values)
        object.__setattr__(grad, "_sorted", True)
        return grad

    def __repr__(self) -> str:
        return f"SparseGrad(rows={self.rows!r}, values={self.values!r})"

    @property
    def device(self) -> str:
        """Where the arrays are: ``"cpu"`` or ``"cuda:N"``."""
        return device_of(self.rows)

    def to_device(self, device: str) -> SparseGrad:
        """Copy ``rows`` and ``values`` to ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:N"``).

        Parameters
        ----------
        device
            Where to.

        Returns
        -------
        SparseGrad
            ``self`` when it is there already, else a copy (coalesced if ``self`` is).

        Raises
        ------
        ValueError
            An unknown device name.
        ModuleNotFoundError
            A CUDA device without CuPy installed.

        Examples
        --------
        >>> g = asp.embedding.SparseGrad(np.array([1]), np.ones((1, 2)))
        >>> g.to_device("cpu") is g, g.device
        (True, 'cpu')
        """
        func = "SparseGrad.to_device"
        device = normalize_device(func, device)
        rows, values = transfer(func, self.rows, device), transfer(func, self.values, device)
        if rows is self.rows and values is self.values:
            return self
        return (SparseGrad._coalesced if self._sorted else SparseGrad)(rows, values)

    @property
    def dim(self) -> int:
        """Width of the gradient rows (the table's ``dim``)."""
        return int(self.values.shape[1])

    @property
    def is_coalesced(self) -> bool:
        """Whether ``rows`` are strictly increasing (unique and sorted).

        On the device it reads the answer back (one synchronisation) unless the gradient
        is known to be coalesced (from :func:`lookup_backward` or :meth:`coalesce`).
        """
        return bool(self._sorted or (self.rows[1:] > self.rows[:-1]).all())

    def coalesce(self) -> SparseGrad:
        """Sum the rows of repeated ids; sort the rows.

        Returns
        -------
        SparseGrad
            ``self`` when already coalesced, else a new coalesced gradient. Repeated rows
            are added in their input order, so the result is deterministic.

        Notes
        -----
        On the device, a gradient not known to be coalesced (one built by hand) is
        sorted: one synchronisation, to learn the number of distinct rows. Gradients
        from :func:`lookup_backward` and :meth:`coalesce` are returned as they are.

        Examples
        --------
        >>> asp.embedding.SparseGrad(np.array([2, 0]), np.ones((2, 1))).coalesce().rows
        array([0, 2])
        """
        func = "SparseGrad.coalesce"
        xp = module_of(self.rows)
        if self._sorted or (xp is np and self.is_coalesced):
            return self
        bag = xp.arange(len(self.rows), dtype=np.int64)
        rows, values, _ = _coalesce(func, self.rows, bag, None,
                                    xp.ascontiguousarray(self.values))
        device_checks(func, xp)
        return SparseGrad._coalesced(rows, values, checked=True)

    def to_arrow(self) -> pa.RecordBatch:
        """Two columns: ``row`` (int64) and ``grad`` (``fixed_size_list<float>[dim]``).

        Returns
        -------
        pyarrow.RecordBatch
            Zero-copy views of ``rows`` and ``values`` (when C-contiguous). A gradient of
            ``dim`` 0 gives ``fixed_size_list<float>[0]``.

        Examples
        --------
        >>> g = asp.embedding.SparseGrad(np.array([1, 3]), np.ones((2, 2), np.float32))
        >>> g.to_arrow().schema
        row: int64
        grad: fixed_size_list<item: float>[2]
          child 0, item: float
        """
        if is_cupy_array(self.rows):
            msg = (f"SparseGrad.to_arrow: the gradient is on {self.device} and Arrow buffers "
                   "live in host memory; copy it first with g.to_device('cpu').to_arrow()")
            raise NotImplementedError(msg)
        grad = _arrow.array_from_numpy(self.values, None)
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
            grad = _arrow.as_one_array(grad)
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


def _coalesce(func: str, ids: Any, bag: Any, scale: Any, grad_out: Any, *,
              drop_last: bool = False) -> tuple[Any, Any, Any]:
    """Sum ``scale[p] * grad_out[bag[p]]`` per distinct ``ids[p]``, in input order.

    Returns the sorted distinct ids (int64), the sums ``[len(rows), dim]`` and the run
    boundaries (``len(rows) + 1``; their differences count the ids summed into each).
    ``drop_last`` leaves the last run out (the unread
    ids of :class:`DeviceBags`, sorted last). On the device the sort synchronises once
    (the number of runs sizes the result), so the checks launched so far are raised
    then, at no extra cost.
    """
    xp = module_of(grad_out)
    order, rows, starts = get_kernel("embedding", "sort_ids", xp)(ids.astype(np.int64, copy=False))
    device_checks(func, xp, wait=True)
    if drop_last:
        rows, starts = rows[:-1], starts[:-1]
    values = xp.empty((len(rows), grad_out.shape[1]), dtype=grad_out.dtype)
    no_scale = xp.empty(0, dtype=np.float64)
    get_kernel("embedding", "coalesce_sorted", xp)(
        grad_out, order, bag, no_scale if scale is None else scale, starts, values)
    return rows, values, starts


_FLOATS = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


def _grad_out(func: str, grad_out: Any, num_bags: int, xp: Any) -> Any:
    if (type(grad_out).__module__ == "cupy" and grad_out.ndim == 2
            and grad_out.dtype in _FLOATS and grad_out.shape[0] == num_bags):
        return xp.ascontiguousarray(grad_out)  # the common device case: every check passes
    grad = v.as_values_array(func, "grad_out", grad_out, min_ndim=2, device=xp is not np)
    if grad.dtype.kind != "f" or grad.ndim != 2 or grad.dtype == np.float16:
        msg = (f"{func}: grad_out must be a 2-D float32 or float64 array, got {grad.dtype} "
               f"of shape {grad.shape}")
        raise ArrowSparseTypeError(msg)
    if grad.shape[0] != num_bags:
        msg = (f"{func}: grad_out must have one row per lookup output ({num_bags}), "
               f"got shape {grad.shape}")
        raise ArrowSparseValueError(msg)
    return xp.ascontiguousarray(grad)


def _no_max(func: str, mode: str) -> None:
    """Refuse ``mode="max"`` where no argmax is taken (the fused training step)."""
    if mode == "max":
        msg = (f"{func}: mode='max' is not supported: its gradient needs the forward's argmax "
               "(use lookup(..., mode='max', return_argmax=True), lookup_backward(..., "
               "mode='max', argmax=...) and an optimizer step)")
        raise ArrowSparseValueError(msg)


def _no_max_weights(func: str, mode: str) -> None:
    if mode == "max":
        msg = (f"{func}: mode='max' takes no per-sample weights (as in PyTorch), so they have "
               "no gradient; use 'sum' or 'mean'")
        raise ArrowSparseValueError(msg)


def _check_max_args(func: str, mode: str, argmax: Any, weights: Any) -> None:
    """``argmax`` goes with ``mode="max"`` and nothing else; the max takes no weights."""
    if mode != "max":
        if argmax is not None:
            msg = f"{func}: argmax is only used with mode='max', got mode={mode!r}"
            raise ArrowSparseValueError(msg)
        return
    if argmax is None:
        msg = (f"{func}: mode='max' needs argmax=, the ids the forward's max came from "
               "(lookup(..., mode='max', return_argmax=True) returns them)")
        raise ArrowSparseValueError(msg)
    if weights is not None:
        msg = (f"{func}: per_sample_weights are not supported with mode='max' "
               "(as in PyTorch: the max has no weights)")
        raise ArrowSparseValueError(msg)


def _argmax(func: str, argmax: Any, shape: tuple[int, int], xp: Any) -> Any:
    """Check the forward's argmax: integers of the output's shape, as int64."""
    arr = v.as_index_array(func, "argmax", argmax, ndim=2, device=xp is not np)
    if tuple(arr.shape) != shape:
        msg = f"{func}: argmax must have the shape of grad_out {shape}, got {tuple(arr.shape)}"
        raise ArrowSparseValueError(msg)
    return xp.ascontiguousarray(arr, dtype=np.int64)


def _coalesce_max(func: str, b: Bags | DeviceBags, grad: Any, argmax: Any
                  ) -> tuple[Any, Any, Any]:
    """Coalesce the gradient of max-pooled bags: ``(rows, values, run boundaries)``.

    Element ``(b, d)`` of ``grad`` goes to the row ``argmax[b, d]`` only, which must be
    an id of bag ``b`` (entries of empty bags are not read). Rows that are the max of no
    element get no gradient row. Runs of the ids' stable sort as :func:`_coalesce`; on
    the device one synchronisation more (the number of rows kept, and the check).
    """
    xp = module_of(grad)
    dim = grad.shape[1]
    arg = _argmax(func, argmax, (b.num_bags, dim), xp)
    host = isinstance(b, Bags)
    keys, bag = (b.ids, b.bag_of_ids()) if host else (b.key, b.bag)
    order, rows, starts = get_kernel("embedding", "sort_ids", xp)(keys.astype(np.int64,
                                                                              copy=False))
    device_checks(func, xp, wait=True)
    if not host:  # the unread ids' run, last
        rows, starts = rows[:-1], starts[:-1]
    values = xp.empty((len(rows), dim), dtype=grad.dtype)
    credits = xp.zeros(len(rows), dtype=np.uint64)
    get_kernel("embedding", "coalesce_max", xp)(grad, order, bag, rows, arg, starts, values,
                                                credits)
    won = credits > 0
    bags_read = np.count_nonzero(b.sizes) if host else xp.count_nonzero(b.count)
    given, kept, expected = fetch(func, credits.sum(), xp.count_nonzero(won), bags_read)
    if given != expected * dim:
        msg = (f"{func}: argmax must hold, for every column of every non-empty bag, an id "
               f"of that bag (as lookup(..., return_argmax=True) returns); "
               f"{expected * dim - given} of {expected * dim} do not")
        raise ArrowSparseValueError(msg)
    counts = xp.diff(starts)
    if kept == len(rows):
        return rows, values, starts
    # Keep the runs that won: each is moved to its rank among them (no read back).
    at = xp.where(won, xp.cumsum(won) - 1, kept)
    new_rows = xp.empty(kept + 1, dtype=rows.dtype)
    new_values = xp.empty((kept + 1, dim), dtype=values.dtype)
    new_counts = xp.zeros(kept + 1, dtype=counts.dtype)
    new_rows[at], new_values[at], new_counts[at] = rows, values, counts
    new_starts = xp.zeros(kept + 1, dtype=starts.dtype)
    xp.cumsum(new_counts[:kept], out=new_starts[1:])
    return new_rows[:kept], new_values[:kept], new_starts


def lookup_backward(grad_out: Any, ids: Any, *, offsets: Any = None, mode: str = "sum",
                    per_sample_weights: Any = None, num_embeddings: int,
                    argmax: Any = None) -> SparseGrad:
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
        ``"sum"``, ``"mean"`` (each id gets ``grad_out[bag] / bag_size``) or ``"max"``
        (element ``(bag, d)`` goes to the id ``argmax[bag, d]`` only).
    per_sample_weights
        The forward's weights: each id's gradient is scaled by its weight (not with
        ``"max"``).
    num_embeddings
        Rows of the table (ids are checked against it).
    argmax
        With ``mode="max"`` (required there, refused otherwise): the integer
        ``[outputs, dim]`` array of ids ``lookup(..., mode="max", return_argmax=True)``
        returned. Each entry of a non-empty bag must be an id of that bag; entries of
        empty and null bags are not read (PyTorch's ``max_indices`` may be passed as
        they are).

    Returns
    -------
    SparseGrad
        ``rows`` unique and sorted (int64), ``values[len(rows), dim]`` of ``grad_out``'s
        dtype: the sum over the occurrences of each id. With ``"max"``, the rows are the
        ids that are the max of at least one element, and each sums the elements it won.

    Raises
    ------
    ValueError
        An unknown mode, ``grad_out`` rows not matching the outputs; with ``"max"``: no
        ``argmax``, ``argmax`` of another shape or holding an id that is not in its bag,
        ``per_sample_weights``; ``argmax`` with another mode.
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

    ``"max"`` is PyTorch's ``EmbeddingBag(mode="max")`` gradient: per column, a bag's
    gradient goes to the row its max came from (another column may pick another row),
    the first occurrence on ties, as ``argmax`` records it; an id repeated in a bag gets
    the element once. An empty bag gives no gradient. The forward keeps the argmax, so
    nothing is recomputed here.

    On the device (CuPy ``grad_out`` and ids): one synchronisation, the sort's (the
    number of distinct ids sizes the result), after which the device checks of the ids
    and offsets are raised at once. The bags are read without compacting them (null
    ids sort last and are dropped), and the sums are the host's, bit for bit. The
    result is known to be coalesced: the optimizers use it without another sort.

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

    ``mode="max"`` with the forward's argmax: column 0 of the first bag came from id 1,
    column 1 from id 0 (a tie with id 1, won by the first); the empty bag gives nothing.

    >>> table = np.array([[1.0, 5.0], [3.0, 5.0], [2.0, 0.0]])
    >>> ids = asp.Jagged.from_list([[0, 1, 2], [], [2]])
    >>> pooled, argmax = asp.embedding.lookup(table, ids, mode="max", return_argmax=True)
    >>> g = asp.embedding.lookup_backward(np.ones((3, 2)), ids, mode="max", argmax=argmax,
    ...                                   num_embeddings=3)
    >>> g.rows, g.values
    (array([0, 1, 2]), array([[0., 1.],
           [1., 0.],
           [1., 1.]]))
    """
    return backward(grad_out, ids, offsets, mode, per_sample_weights, num_embeddings,
                    argmax)[0]


def backward(grad_out: Any, ids: Any, offsets: Any, mode: str, per_sample_weights: Any,
             num_embeddings: Any, argmax: Any = None) -> tuple[SparseGrad, Any]:
    """:func:`lookup_backward`, and its run boundaries (``diff`` counts each row's ids)."""
    func = "lookup_backward"
    xp = array_module(func, grad_out=grad_out, ids=ids, offsets=offsets,
                      per_sample_weights=per_sample_weights, argmax=argmax)
    mode = check_mode(func, mode)
    _check_max_args(func, mode, argmax, per_sample_weights)
    num = v.check_count(func, "num_embeddings", num_embeddings)
    b = bags(func, ids, offsets, per_sample_weights, num, xp)
    grad = _grad_out(func, grad_out, b.num_bags, xp)
    if mode == "max":
        rows, values, starts = _coalesce_max(func, b, grad, argmax)
    else:
        rows, values, starts = coalesce_bags(func, b, grad, mode, num)
    device_checks(func, xp)
    return SparseGrad._coalesced(rows, values, checked=True), starts


def bag_scale(b: Bags | DeviceBags, mode: str) -> Any:
    """Return the factor of each id's gradient, aligned with the ids the bags read.

    Its weight, divided by its bag's size for a mean; None for plain sums.
    """
    scale = b.weights
    if mode != "mean":
        return scale
    if isinstance(b, Bags):
        bag = b.bag_of_ids()
        inv = 1.0 / np.maximum(b.sizes, 1).astype(np.float64)
        return inv[bag] if scale is None else scale * inv[bag]
    inv = b.mean_scale()
    return inv if scale is None else scale * inv


def coalesce_bags(func: str, b: Bags | DeviceBags, grad: Any, mode: str, num: int
                  ) -> tuple[Any, Any, Any]:
    """Coalesce the gradient of bags ``b`` for ``grad`` (checked ``[bags, dim]``).

    Returns ``(rows, values, run boundaries)``. On the device: one synchronisation (the
    sort).
    """
    scale = bag_scale(b, mode)
    if isinstance(b, Bags):
        return _coalesce(func, b.ids, b.bag_of_ids(), scale, grad)
    # Unread ids carry the key num_embeddings, and so does the sentinel after them: their
    # run always exists, as the last one, and it is dropped (nothing is read to know it).
    return _coalesce(func, b.key, b.bag, scale, grad, drop_last=True)


def lookup_backward_weights(grad_out: Any, table: Any, ids: Any, *, offsets: Any = None,
                            mode: str = "sum") -> Any:
    """Gradient of :func:`lookup` with respect to its ``per_sample_weights``.

    Id ``i`` of output ``o`` gets ``<grad_out[o], table[i]>`` (divided by the number of
    ids of ``o`` with ``mode="mean"``): the derivative of the pooled row by the weight
    that scaled ``table[i]`` in it.

    Parameters
    ----------
    grad_out
        Float ``[outputs, dim]``: the gradient with respect to the lookup's result.
    table
        The table the forward read (``[num_embeddings, dim]``).
    ids
        The ids given to :func:`lookup`: 1-D (with or without ``offsets``), 2-D ``[n, k]``,
        a Jagged or an Arrow list array.
    offsets
        Bag boundaries (``bags + 1`` long) into 1-D ``ids``.
    mode
        ``"sum"`` or ``"mean"`` (``"max"`` raises: it takes no weights, as in PyTorch).

    Returns
    -------
    numpy.ndarray or Jagged or pyarrow.ListArray
        One gradient per id, in the form of the weights: an array of the ids' shape
        (ids outside ``offsets`` get 0), or for list ids a Jagged / Arrow list array with
        their offsets and null bags (null ids get 0). Float64, or float32 when the table
        and ``grad_out`` both are.

    Raises
    ------
    ValueError
        ``mode="max"`` or unknown, ``grad_out`` rows not matching the outputs, or a
        ``dim`` other than the table's.
    IndexError
        An id outside the table.
    TypeError
        Non-float ``grad_out``, a table that is not an array, non-integer ids, host and
        device inputs together.

    See Also
    --------
    lookup_backward : The gradient with respect to the table.

    Notes
    -----
    On the device: no synchronisation (ids out of range are raised by the next check;
    their entries are left 0). List ids give a Jagged on the device. The dot products
    are summed as a butterfly of 32 lane partials there, a few float64 ulp from the
    host's left-to-right sums.

    Examples
    --------
    Two bags of the table ``[[1, 0], [0, 1], [2, 2]]``:

    >>> table = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    >>> asp.embedding.lookup_backward_weights(np.array([[1.0, 10.0], [3.0, 0.0]]), table,
    ...                                       [0, 1, 2, 2], offsets=[0, 2, 4])
    array([ 1., 10.,  6.,  6.])
    """
    func = "lookup_backward_weights"
    xp = array_module(func, grad_out=grad_out, table=table, ids=ids, offsets=offsets)
    mode = check_mode(func, mode)
    _no_max_weights(func, mode)
    table = check_table(func, table)
    b = bags(func, ids, offsets, None, len(table), xp)
    grad = _grad_out(func, grad_out, b.num_bags, xp)
    if grad.shape[1] != table.shape[1]:
        msg = (f"{func}: grad_out has dim {grad.shape[1]} but the table has dim "
               f"{table.shape[1]}")
        raise ArrowSparseValueError(msg)
    dtype = np.result_type(table.dtype, grad.dtype, np.float32)
    if isinstance(b, Bags):
        per_id = np.empty(len(b.ids), dtype=dtype)
        get_kernel("embedding", "weights_grad")(
            np.ascontiguousarray(table), b.ids, b.offsets, grad, mode == "mean", per_id)
        flat = b.scatter(per_id)
    else:
        flat = _device_weights_grad(xp, xp.ascontiguousarray(table), b, grad, mode, dtype)
    if isinstance(ids, Jagged) or (isinstance(b, Bags) and b.arrow):
        jag = ids if isinstance(ids, Jagged) else Jagged._from_arrow(func, "ids", ids)
        result = Jagged._trusted(flat, jag.offsets, jag.validity)  # checked by bags()
        device_checks(func, xp)
        return result if isinstance(ids, Jagged) else result.to_arrow()
    device_checks(func, xp)
    return flat


def _device_weights_grad(xp: Any, table: Any, b: DeviceBags, grad: Any, mode: str,
                         dtype: np.dtype) -> Any:
    """Compute the weights' gradient of device bags, 0 at the ids not read.

    The kernel runs over every position of the bags' windows, unread ones on id 0, into
    float64 without the mean's division; the division by the bag's count of read ids
    then rounds ``acc * (1 / count)`` once into ``dtype``, as the CPU kernel does.
    """
    acc = xp.zeros(b.num_ids, dtype=np.float64)
    get_kernel("embedding", "weights_grad", xp)(table, b.ids, b.offsets, grad, False, acc)
    if mode == "mean":
        acc = acc * b.mean_scale()
    return xp.where(b.bag >= 0, acc, 0.0).astype(dtype, copy=False).reshape(b.shape)
