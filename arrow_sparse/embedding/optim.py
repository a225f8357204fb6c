"""Fused in-place sparse optimizer steps for embedding tables.

Part of :mod:`arrow_sparse.embedding`, which re-exports every public name here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _validate as v
from .._backend import array_module, device_checks, get_kernel, module_of, run_in_threads
from .._docs import fill_doc
from ..errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from ._args import (
    check_scalar,
    check_table,
    check_writable,
    is_array,
)
from .grad import SparseGrad

__all__ = ["adagrad", "ftrl", "rowwise_adagrad", "sgd", "update"]

_OPTIMIZERS = ("sgd", "adagrad", "rowwise_adagrad", "ftrl")


def _grad(func: str, table: Any, grad: Any) -> tuple[Any, Any]:
    if not isinstance(grad, SparseGrad):
        msg = f"{func}: grad must be a SparseGrad (from lookup_backward), got {type(grad).__name__}"
        raise ArrowSparseTypeError(msg)
    if grad.dim != table.shape[1]:
        msg = f"{func}: grad has dim {grad.dim} but the table has dim {table.shape[1]}"
        raise ArrowSparseValueError(msg)
    grad = grad.coalesce()
    xp = module_of(table)
    if xp is np and len(grad.rows) and grad.rows[-1] >= len(table):
        pos = v.first_true(grad.rows >= len(table))
        msg = v.message(func, "grad.rows", f"out of range [0, {len(table)})", pos,
                        grad.rows[pos])
        raise ArrowSparseIndexError(msg)
    return grad.rows, xp.ascontiguousarray(grad.values, dtype=table.dtype)


_RACE = "the updates would race"


def _no_overlap(func: str, arrays: list[tuple[str, Any]]) -> None:
    """Raise if two of the arrays updated in place share memory (on one device)."""
    for i, (name_i, a) in enumerate(arrays):
        for name_j, b in arrays[:i]:
            v.check_no_overlap(func, name_j, b, why=_RACE, **{name_i: a})


def _grad_apart(func: str, written: list[tuple[str, Any]], rows: Any, values: Any) -> None:
    """Raise if the gradient a kernel reads shares memory with an array it writes."""
    for name, array in written:
        v.check_no_overlap(func, name, array, **{"grad.rows": rows, "grad.values": values})


def _arrays(table: Any, state: Any, grad: Any) -> dict[str, Any]:
    """Name the array inputs of one update (for the array module)."""
    arrays = {"table": table, "grad": grad.values if isinstance(grad, SparseGrad) else None}
    for j, s in enumerate(state if isinstance(state, (tuple, list)) else [state]):
        arrays[f"state{j}"] = s if is_array(s) else None
    return arrays


#: An update checked and ready: ``apply(rows, values)`` updates those rows, which are
#: the coalesced gradient's (distinct, sorted) or a contiguous part of them.
Prepared = tuple[Callable[[Any, Any], None], Any, Any]


def _prepare(opt: str, table: Any, state: Any, grad: Any, hyper: dict[str, Any]
             ) -> Prepared:
    """Check one update's arguments; return the kernel call and the rows it updates."""
    xp = array_module(opt, **_arrays(table, state, grad))
    table = check_table(opt, table)
    table = check_writable(opt, "table", table, table.shape)
    rows, values = _grad(opt, table, grad)
    if opt == "sgd":
        _grad_apart(opt, [("table", table)], rows, values)
        lr = check_scalar(opt, "lr", hyper.pop("lr"))
        _no_extra(opt, hyper)
        return (lambda r, g: get_kernel("embedding", "sgd_rows", xp)(table, r, g, lr)), \
            rows, values
    if opt in ("adagrad", "rowwise_adagrad"):
        shape = table.shape if opt == "adagrad" else table.shape[:1]
        s = check_writable(opt, "state", state, shape)
        _no_overlap(opt, [("table", table), ("state", s)])
        _grad_apart(opt, [("table", table), ("state", s)], rows, values)
        lr = check_scalar(opt, "lr", hyper.pop("lr"))
        eps = check_scalar(opt, "eps", hyper.pop("eps", 1e-10))
        _no_extra(opt, hyper)
        name = "adagrad_rows" if opt == "adagrad" else "rowwise_adagrad_rows"
        return (lambda r, g: get_kernel("embedding", name, xp)(table, s, r, g, lr, eps)), \
            rows, values
    if not isinstance(state, (tuple, list)) or len(state) != 2:
        msg = f"{opt}: state must be the pair (z, n) of accumulators"
        raise ArrowSparseTypeError(msg)
    z = check_writable(opt, "z", state[0], table.shape, table.dtype)
    n = check_writable(opt, "n", state[1], table.shape, table.dtype)
    _no_overlap(opt, [("table", table), ("z", z), ("n", n)])
    _grad_apart(opt, [("table", table), ("z", z), ("n", n)], rows, values)
    alpha = check_scalar(opt, "alpha", hyper.pop("alpha", 0.005), positive=True)
    beta = check_scalar(opt, "beta", hyper.pop("beta", 1.0))
    l1 = check_scalar(opt, "l1", hyper.pop("l1", 0.001))
    l2 = check_scalar(opt, "l2", hyper.pop("l2", 0.001))
    _no_extra(opt, hyper)
    return (lambda r, g: get_kernel("embedding", "ftrl_rows", xp)(
        table, z, n, r, g, alpha, beta, l1, l2)), rows, values


def _parts(prepared: Prepared, splits: int) -> list[Callable[[], None]]:
    """Split the update into ``splits`` calls over contiguous runs of its distinct rows.

    A row's update reads and writes only that row (of the table and of the state), and
    the coalesced gradient holds each row once, so the parts touch disjoint rows: run in
    any order or at once, they give the serial update's result exactly.
    """
    apply, rows, values = prepared
    splits = max(1, min(splits, len(rows)))
    edges = [len(rows) * k // splits for k in range(splits + 1)]
    return [functools.partial(apply, rows[a:b], values[a:b])
            for a, b in zip(edges[:-1], edges[1:], strict=True)]


def _step(opt: str, table: Any, state: Any, grad: Any, hyper: dict[str, Any]) -> None:
    """One checked update, then its device checks (deferred)."""
    apply, rows, values = _prepare(opt, table, state, grad, hyper)
    apply(rows, values)
    device_checks(opt, module_of(table))


def _no_extra(func: str, hyper: dict[str, Any]) -> None:
    if hyper:
        msg = f"{func}: unexpected hyper-parameters {sorted(hyper)}"
        raise ArrowSparseTypeError(msg)


def sgd(table: np.ndarray, grad: SparseGrad, lr: float) -> None:
    """In-place SGD on the rows a sparse gradient touches: ``table[r] -= lr * g[r]``.

    Parameters
    ----------
    table
        Writable, C-contiguous float table ``[num_embeddings, dim]`` (numpy or CuPy).
    grad
        A :class:`SparseGrad` (coalesced first when it is not).
    lr
        Learning rate (finite, non-negative).

    Raises
    ------
    TypeError
        A grad that is not a SparseGrad, a non-float table.
    ValueError
        A read-only or non-contiguous table, a gradient of another ``dim``, a gradient
        whose ``rows`` or ``values`` share memory with the table.
    IndexError
        A gradient row outside the table.

    See Also
    --------
    adagrad, rowwise_adagrad, ftrl, update

    Notes
    -----
    What may alias (true of every optimizer here): the arrays updated in place (the
    table and the optimizer's state) must not share memory with each other nor with
    the gradient the kernel reads (after coalescing): a gradient that is a view of the
    table would be read after the rows before it were updated. Such calls raise
    before anything is written. On the device, arrays are compared by their extents.

    One Numba kernel over the unique rows (threads split rows, so each row is written
    by one thread): the result is deterministic, and equals ``torch.optim.SGD`` on a
    sparse gradient.

    On the device (a CuPy table and gradient; the same for every optimizer here): one
    CUDA kernel and no synchronisation; the kernel checks the rows, and a row outside
    the table is raised by the next check (the other rows are updated). A gradient not
    known to be coalesced (one built by hand) is coalesced first: one synchronisation.

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
    _step("sgd", table, None, grad, {"lr": lr})


#: The docstring body of the two Adagrad steps, filled per step.
_ADAGRAD_DOC = """
    {formula}

    Parameters
    ----------
    table
        Writable, C-contiguous float table ``[num_embeddings, dim]`` (numpy or CuPy).
    {state}
    grad
        A :class:`SparseGrad`.
    lr
        Learning rate.
    eps
        {eps}

    Raises
    ------
    TypeError
        A grad that is not a SparseGrad, a non-float table or state.
    ValueError
        A state of another shape, a read-only table or state; a table, state and
        gradient that share memory (see :func:`sgd`).
    IndexError
        A gradient row outside the table.

    See Also
    --------
    {see_also}

    Notes
    -----
    {notes}

    Examples
    --------
    {examples}
"""


@fill_doc(_ADAGRAD_DOC, formula="""\
For each element of each touched row: ``state += g**2``, then
``table -= lr * g / (sqrt(state) + eps)``.""", state="""\
state
    Running sum of squared gradients, the table's shape and a float dtype
    (start from zeros, or from ``initial_accumulator_value``).""",
          eps="Added to the square root (``torch.optim.Adagrad``'s default ``1e-10``).",
          see_also="rowwise_adagrad : One accumulator per row.",
          notes="On the device: as :func:`sgd` (one kernel, no synchronisation).", examples="""\
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
       [ 0.,  0.]])""")
def adagrad(table: np.ndarray, state: np.ndarray, grad: SparseGrad, lr: float,
            eps: float = 1e-10) -> None:
    """In-place Adagrad on the touched rows (``torch.optim.Adagrad``'s formula)."""
    _step("adagrad", table, state, grad, {"lr": lr, "eps": eps})


@fill_doc(_ADAGRAD_DOC, formula="""\
For each touched row ``r``: ``state_rows[r] += mean(g[r]**2)``, then
``table[r] -= lr * g[r] / (sqrt(state_rows[r]) + eps)``.""", state="""\
state_rows
    Float ``[num_embeddings]`` accumulators.""", eps="Added to the square root.",
          see_also="adagrad : One accumulator per element.", notes="""\
On the device: as :func:`sgd` (one kernel, no synchronisation). The row's sum of
squares is a butterfly of 32 lane partials there (within ``1e-14`` of the host's).""",
          examples="""\
>>> table = np.ones((2, 2))
>>> state = np.zeros(2)
>>> asp.embedding.rowwise_adagrad(table, state,
...     asp.embedding.SparseGrad(np.array([0]), np.array([[3.0, 4.0]])), lr=1.0)
>>> state
array([12.5,  0. ])
>>> table.round(4)
array([[ 0.1515, -0.1314],
       [ 1.    ,  1.    ]])""")
def rowwise_adagrad(table: np.ndarray, state_rows: np.ndarray, grad: SparseGrad, lr: float,
                    eps: float = 1e-10) -> None:
    """In-place row-wise Adagrad (FBGEMM's ``rowwise_adagrad``): one accumulator per row."""
    _step("rowwise_adagrad", table, state_rows, grad, {"lr": lr, "eps": eps})


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
        Accumulators of another shape, ``alpha <= 0``, a negative hyper-parameter; a
        table, ``z``, ``n`` and gradient that share memory (see :func:`sgd`).
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
    On the device: as :func:`sgd` (one kernel, no synchronisation).

    Examples
    --------
    >>> table = np.zeros((2, 1))
    >>> z, n = np.zeros((2, 1)), np.zeros((2, 1))
    >>> asp.embedding.ftrl(table, z, n, asp.embedding.SparseGrad(np.array([1]), np.array([[2.0]])),
    ...                    alpha=0.5, beta=1.0, l1=0.5, l2=0.0)
    >>> z.ravel(), n.ravel(), table.ravel()
    (array([0., 2.]), array([0., 4.]), array([ 0. , -0.25]))
    """
    _step("ftrl", table, (z, n), grad, {"alpha": alpha, "beta": beta, "l1": l1, "l2": l2})


def update(opt: str, tables: Sequence[np.ndarray], grads: Sequence[SparseGrad], *,
           states: Sequence[Any] | None = None, max_workers: int | None = None,
           num_splits: int = 1, **hyper: Any) -> None:
    """Apply one optimizer to several tables at once, in parallel over tables and rows.

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
        Threads (default ``min(number of parts, cpus)``).
    num_splits
        Split each table's update into this many parts over its gradient's rows (each
        part a contiguous run of distinct rows), so that one large table also updates
        on several threads (EmbeddingTables.jl's ``num_splits``). The result is the
        same as ``num_splits=1``, exactly.
    **hyper
        The optimizer's hyper-parameters (``lr``, ``eps``; ``alpha``, ``beta``, ``l1``,
        ``l2``), shared by every table.

    Raises
    ------
    ValueError
        Unknown ``opt``, list lengths that differ, tables or states that share memory
        with each other or with a gradient.
    TypeError
        As the single-table functions; a missing or unexpected hyper-parameter.

    See Also
    --------
    sgd, adagrad, rowwise_adagrad, ftrl

    Notes
    -----
    Every argument is checked before any table is touched, including that no two of the
    tables and states share memory (updates would race). The kernels release the GIL and
    each pool thread runs one part (a table, or with ``num_splits`` a run of its rows) on
    one core; the parts touch disjoint rows, so the result is the same as calling the
    single-table function on each table in turn. Where Numba's threading layer does not
    allow kernels in several threads at once (``workqueue``; ``tbb`` and ``omp`` do), the
    parts run one after another, each on every core. On the device the tables
    are updated one after another on the current stream, without synchronising.

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
    if not isinstance(opt, str) or opt not in _OPTIMIZERS:
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
    if opt != "ftrl" and "lr" not in hyper:
        msg = f"{func}: missing hyper-parameter 'lr'"
        raise ArrowSparseTypeError(msg)
    if isinstance(num_splits, bool) or not isinstance(num_splits, (int, np.integer)) \
            or num_splits < 1:
        msg = f"{func}: num_splits must be a positive integer, got {num_splits!r}"
        raise ArrowSparseValueError(msg)
    prepared = [_prepare(opt, t, None if states is None else states[i], g, dict(hyper))
                for i, (t, g) in enumerate(zip(tables, grads, strict=True))]
    arrays = []
    for i, t in enumerate(tables):
        arrays.append((f"tables[{i}]", t))
        state = None if states is None else states[i]
        for j, s in enumerate(state if opt == "ftrl" else [state]):
            if s is not None:
                arrays.append((f"states[{i}]" + (f"[{j}]" if opt == "ftrl" else ""), s))
    _no_overlap(func, arrays)
    xp = array_module(func, tables=[t for _, t in arrays])
    if xp is np:
        run_in_threads([c for p in prepared for c in _parts(p, int(num_splits))], max_workers)
    else:  # one after another on the stream: parts would only add launches
        for apply, rows, values in prepared:
            apply(rows, values)
    device_checks(func, xp)
