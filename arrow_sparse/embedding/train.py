"""A fused training step: pooled lookup, backward and a sparse optimizer step in one call.

Part of :mod:`arrow_sparse.embedding`, which re-exports every public name here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .. import _validate as v
from .._backend import array_module, device_checks, get_kernel
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ._args import (
    Bags,
    DeviceBags,
    bags,
    check_mode,
    check_scalar,
    check_table,
    check_writable,
    is_array,
)
from .grad import SparseGrad, _grad_out, _no_max, bag_scale, coalesce_bags
from .lookups import _finish_bags, _pooled_dtype, _write_bags
from .optim import _RACE

__all__ = ["TrainStep", "train_step"]

#: The optimizers of :func:`train_step`, with the CPU (and unfused) kernel of each.
OPTIMIZERS = {"sgd": "sgd_rows", "adagrad": "adagrad_rows",
              "rowwise_adagrad": "rowwise_adagrad_rows"}


class TrainStep(NamedTuple):
    """What :func:`train_step` returns besides the updated table (and state)."""

    output: Any
    """The pooled forward output when ``grad_out`` was a callable (what it was given),
    else None."""
    grad: SparseGrad | None
    """The coalesced gradient with ``return_grad=True``, else None (never built)."""


def train_step(table: Any, ids: Any, grad_out: Any, *, offsets: Any = None, mode: str = "sum",
               per_sample_weights: Any = None, optimizer: str = "sgd", lr: float,
               state: Any = None, eps: float = 1e-10, return_grad: bool = False) -> TrainStep:
    """One training step of an embedding bag: forward, backward and optimizer, fused.

    The sequence ``y = lookup(table, ids, ...)``, ``g = lookup_backward(dy, ids, ...)``,
    ``sgd(table, g, lr)`` (or ``adagrad`` / ``rowwise_adagrad``) in one call, with the
    same results, bit for bit, on every backend. On the device the backward and the
    update are two kernels that never write the coalesced gradient, and the step reads
    nothing back; PyTorch's ``EmbeddingBag(sparse=True)`` with ``optim.SGD`` / ``Adagrad``
    and FBGEMM's table-batched embedding with a fused optimizer are the models.

    Parameters
    ----------
    table
        Writable, C-contiguous float table ``[num_embeddings, dim]`` (numpy or CuPy),
        updated in place.
    ids
        Bags of ids as :func:`lookup` takes them: 1-D with ``offsets``, 1-D without (one
        id per bag), 2-D ``[n, k]``, a Jagged or an Arrow list array.
    grad_out
        The gradient of the loss with respect to the pooled output, ``[bags, dim]``
        float; or a callable ``grad_out(output) -> array``, which runs the forward
        first: it receives the pooled rows (what :func:`lookup` returns) and returns
        their gradient (the rest of the model's forward and backward).
    offsets
        Bag boundaries (``bags + 1`` long) into 1-D ``ids``.
    mode
        ``"sum"`` or ``"mean"`` (``"max"`` raises: its gradient needs the argmax).
    per_sample_weights
        One weight per id, in the form of the ids: each id's row (and its gradient) is
        scaled by it.
    optimizer
        ``"sgd"``, ``"adagrad"`` or ``"rowwise_adagrad"``: the formulas of :func:`sgd`,
        :func:`adagrad` and :func:`rowwise_adagrad`.
    lr
        Learning rate (finite, non-negative).
    state
        The optimizer's accumulators, updated in place: none for SGD, the table's shape
        for Adagrad, ``[num_embeddings]`` for row-wise Adagrad (float32 or float64).
    eps
        Adagrad's term added to the square root.
    return_grad
        Also build and return the coalesced :class:`SparseGrad` (on the device this
        costs :func:`lookup_backward`'s synchronisation).

    Returns
    -------
    TrainStep
        ``(output, grad)``: the pooled forward output when ``grad_out`` is a callable
        (else None) and the gradient when ``return_grad`` (else None). The table and
        the state are updated in place.

    Raises
    ------
    ValueError
        An unknown or ``"max"`` mode, an unknown optimizer, a gradient of another shape
        than ``[bags, dim]``, a read-only or non-contiguous table or state, a state of
        another shape, a table or state that shares memory with the other or with the
        ids, offsets, weights or gradient it is updated from (the update would race
        with the reads).
    TypeError
        A non-float table, gradient or state, non-integer ids, a missing state, a
        ``grad_out`` that is neither an array nor a callable, host and device inputs
        together.
    IndexError
        An id outside the table.

    See Also
    --------
    lookup, lookup_backward, sgd, adagrad, rowwise_adagrad : The steps it fuses.

    Notes
    -----
    The gradient of each row is the sum of its ids' contributions in input order, as
    :func:`lookup_backward` adds them (deterministic: the same bits whatever the thread
    count or thread order), then the optimizer updates each touched row once.

    On the device (CuPy table and ids): no synchronisation. The bags are read by one
    kernel, the ids sorted stably, then one kernel sums the later pieces of long runs of
    equal ids and one kernel sums each run and updates its row; an id out of range is
    reported by the next check. With ``return_grad=True``: one synchronisation, the
    sort's (the number of distinct ids sizes the gradient). On the host the step runs
    the kernels of :func:`lookup_backward` and the optimizer.

    Examples
    --------
    Bags of the Caffe2 batch ``[1, 2, 3] [2, 4, 6, 7] [3, 6]``, SGD with a gradient of
    ones: ids 2, 3 and 6 occur twice.

    >>> table = np.zeros((8, 2))
    >>> ids = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
    >>> step = asp.embedding.train_step(table, ids, np.ones((3, 2)), lr=0.5)
    >>> table[:, 0]
    array([ 0. , -0.5, -1. , -1. , -0.5,  0. , -1. , -0.5])

    With the forward fused too: the callable gets the pooled rows and returns their
    gradient (here of the loss ``sum(y ** 2) / 2``).

    >>> step = asp.embedding.train_step(table, ids, lambda y: y, lr=0.1)
    >>> step.output[:, 0]
    array([-2.5, -3. , -2. ])
    """
    func = "train_step"
    fn = grad_out if callable(grad_out) and not is_array(grad_out) else None
    xp = array_module(func, table=table, ids=ids, offsets=offsets,
                      per_sample_weights=per_sample_weights,
                      grad_out=None if fn is not None else grad_out,
                      state=state if is_array(state) else None)
    mode = check_mode(func, mode)
    _no_max(func, mode)
    table = check_writable(func, "table", check_table(func, table), table.shape)
    kernel, state = _check_optimizer(func, optimizer, table, state, xp)
    lr = check_scalar(func, "lr", lr)
    eps = check_scalar(func, "eps", eps)
    v.check_bool(func, "return_grad", return_grad)
    if fn is None and not is_array(grad_out):
        msg = (f"{func}: grad_out must be an array [bags, dim] or a callable taking the "
               f"pooled output, got {type(grad_out).__name__}")
        raise ArrowSparseTypeError(msg)
    num = len(table)
    b = bags(func, ids, offsets, per_sample_weights, num, xp)
    output = None
    if fn is not None:
        output = _forward(func, table, ids, b, mode, xp)
        grad_out = fn(output)
        array_module(func, table=table, grad_out=grad_out)
    grad = _grad_out(func, grad_out, b.num_bags, xp)
    if grad.shape[1] != table.shape[1]:
        msg = (f"{func}: grad_out has dim {grad.shape[1]} but the table has dim "
               f"{table.shape[1]}")
        raise ArrowSparseValueError(msg)
    for name, written in (("table", table), ("state", state)):
        v.check_no_overlap(func, name, written, why=_RACE, ids=ids, offsets=offsets,
                           per_sample_weights=per_sample_weights, grad_out=grad_out)
    sparse = None
    if isinstance(b, Bags) or return_grad:
        rows, values, _ = coalesce_bags(func, b, grad, mode, num)
        if return_grad:
            sparse = SparseGrad._coalesced(rows, values, checked=True)
        values = xp.ascontiguousarray(values, dtype=table.dtype)
        if optimizer == "sgd":
            get_kernel("embedding", kernel, xp)(table, rows, values, lr)
        else:
            get_kernel("embedding", kernel, xp)(table, state, rows, values, lr, eps)
    else:
        _fused_device(table, state, b, grad, mode, optimizer, lr, eps, xp)
    device_checks(func, xp)
    return TrainStep(output, sparse)


def _check_optimizer(func: str, optimizer: Any, table: Any, state: Any, xp: Any
                     ) -> tuple[str, Any]:
    """Return the optimizer's unfused kernel name and its checked state (None for SGD)."""
    if not isinstance(optimizer, str) or optimizer not in OPTIMIZERS:
        msg = (f"{func}: optimizer must be one of {', '.join(map(repr, OPTIMIZERS))}, "
               f"got {optimizer!r}")
        raise ArrowSparseValueError(msg)
    if optimizer == "sgd":
        if state is not None:
            msg = f"{func}: optimizer 'sgd' has no state; pass state=None"
            raise ArrowSparseValueError(msg)
        return OPTIMIZERS[optimizer], None
    if state is None:
        msg = f"{func}: optimizer {optimizer!r} needs its state (start from zeros)"
        raise ArrowSparseTypeError(msg)
    shape = table.shape if optimizer == "adagrad" else table.shape[:1]
    state = check_writable(func, "state", state, shape)
    v.check_no_overlap(func, "table", table, why=_RACE, state=state)
    return OPTIMIZERS[optimizer], state


def _forward(func: str, table: Any, ids: Any, b: Bags | DeviceBags, mode: str, xp: Any) -> Any:
    """Pool the bags ``b`` as :func:`lookup` does (they are read once, for both steps)."""
    dtype = _pooled_dtype(table.dtype, mode, None if b.weights is None else b.weights.dtype)
    out = v.empty(func, (b.num_bags, table.shape[1]), dtype, xp)
    _write_bags(table, b, mode, out)
    return _finish_bags(ids, b, mode, out)


def _fused_device(table: Any, state: Any, b: DeviceBags, grad: Any, mode: str,
                  optimizer: str, lr: float, eps: float, xp: Any) -> None:
    """Run the device step: sort the bags' keys, then the two ``train_rows`` kernels."""
    order = xp.argsort(b.key, kind="stable")
    keys = xp.take(b.key, order)
    get_kernel("embedding", "train_rows", xp)(optimizer, table, state, grad, order, b.bag,
                                              bag_scale(b, mode), keys, lr, eps)
