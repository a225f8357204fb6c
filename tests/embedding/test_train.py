"""Tests of ``arrow_sparse.embedding.train``: the fused ``train_step``.

The fused step against the unfused sequence it replaces (``lookup``, ``lookup_backward``
and ``sgd`` / ``adagrad`` / ``rowwise_adagrad``) on every backend of the ``backend``
fixture: the same bits for the table, the state, the pooled output and the returned
gradient, for every optimizer, mode, weights and input form (null bags and null ids
included), twice in a row (deterministic). Then skew (issue 13: a 10,000-long run of one
id, bags of 2,000 ids among bags of 1, every id equal): the device's fused step equals
its unfused sequence bit for bit, and the CPU within the documented tolerance
(integer-valued gradients exactly). Last, the errors, the device checks and the
synchronisations (none on the device, one with ``return_grad``).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse import embedding as emb
from arrow_sparse.errors import ArrowSparseIndexError
from tests.cuda_emu.emu import Emulator

from ..conftest import from_backend, on_device, to_backend
from ._helpers import DEFERRED, SKEWS, grad_on_host, later, same_bits

OPTIMIZERS = ["sgd", "adagrad", "rowwise_adagrad"]
UNFUSED = {"sgd": lambda t, s, g, lr, eps: emb.sgd(t, g, lr),
           "adagrad": lambda t, s, g, lr, eps: emb.adagrad(t, s, g, lr, eps),
           "rowwise_adagrad": lambda t, s, g, lr, eps: emb.rowwise_adagrad(t, s, g, lr, eps)}


def state_of(opt: str, table: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
    """A non-zero starting state of the optimizer (float64)."""
    if opt == "sgd":
        return None
    shape = table.shape if opt == "adagrad" else table.shape[:1]
    return np.abs(rng.standard_normal(shape))


def both(backend: str, opt: str, table: np.ndarray, state: np.ndarray | None, ids: Any,
         dy: np.ndarray, *, offsets: Any = None, mode: str = "sum", weights: Any = None,
         forward: bool = False, lr: float = 0.1, eps: float = 1e-8) -> None:
    """train_step and the unfused sequence on ``backend``: the same bits everywhere."""
    num = len(table)
    d_ids, d_offsets, d_weights, d_dy = to_backend([ids, offsets, weights, dy], backend)
    fused_t, fused_s, plain_t, plain_s = to_backend(
        [table.copy(), None if state is None else state.copy(), table.copy(),
         None if state is None else state.copy()], backend)
    seen = []

    def grad_fn(y: Any) -> Any:
        seen.append(y)
        return d_dy

    step = emb.train_step(fused_t, d_ids, grad_fn if forward else d_dy, offsets=d_offsets,
                          mode=mode, per_sample_weights=d_weights, optimizer=opt, lr=lr,
                          state=fused_s, eps=eps, return_grad=True)
    y = emb.lookup(plain_t, d_ids, offsets=d_offsets, mode=mode, per_sample_weights=d_weights)
    g = emb.lookup_backward(d_dy, d_ids, offsets=d_offsets, mode=mode,
                            per_sample_weights=d_weights, num_embeddings=num)
    UNFUSED[opt](plain_t, plain_s, g, lr, eps)
    if forward:
        assert len(seen) == 1 and step.output is seen[0]
        _same_output(from_backend(step.output, backend), from_backend(y, backend))
    else:
        assert step.output is None
    for got, want in zip(grad_on_host(step.grad, backend), grad_on_host(g, backend),
                         strict=True):
        same_bits(want, got)
    same_bits(from_backend(plain_t, backend), from_backend(fused_t, backend))
    if state is not None:
        same_bits(from_backend(plain_s, backend), from_backend(fused_s, backend))
    # and without the gradient: the fused device kernels (the host runs the same path)
    again_t, again_s = to_backend([table.copy(), None if state is None else state.copy()],
                                  backend)
    step = emb.train_step(again_t, d_ids, d_dy, offsets=d_offsets, mode=mode,
                          per_sample_weights=d_weights, optimizer=opt, lr=lr,
                          state=again_s, eps=eps)
    assert step == (None, None)
    same_bits(from_backend(plain_t, backend), from_backend(again_t, backend))
    if state is not None:
        same_bits(from_backend(plain_s, backend), from_backend(again_s, backend))


def _same_output(got: Any, want: Any) -> None:
    if isinstance(want, pa.Array):
        assert got.equals(want)
    else:
        same_bits(want, got)


# ------------------------------------------------------------------ fused == unfused
@pytest.mark.parametrize("opt", OPTIMIZERS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_train_step_equals_the_unfused_sequence(backend: str, opt: str, dtype: Any) -> None:
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 9, 30)
    offsets = np.r_[0, np.cumsum(lengths)]
    ids = np.minimum(rng.zipf(1.3, int(offsets[-1])) - 1, 19)  # hot ids: long runs
    table = rng.standard_normal((20, 5)).astype(dtype)
    dy = rng.standard_normal((30, 5)).astype(dtype)
    weights = rng.standard_normal(len(ids)).astype(dtype)
    state = state_of(opt, table, rng)
    for mode, w, forward in (("sum", None, False), ("mean", None, True), ("sum", weights, True),
                             ("mean", weights, False)):
        both(backend, opt, table, state, ids, dy, offsets=offsets, mode=mode, weights=w,
             forward=forward)


@pytest.mark.parametrize("opt", OPTIMIZERS)
def test_train_step_of_every_input_form(backend: str, opt: str) -> None:
    rng = np.random.default_rng(2)
    table = rng.standard_normal((12, 3))
    state = state_of(opt, table, rng)
    jagged = asp.Jagged.from_list([[1, 2, 3], None, [2, 4, None, 7], [], [3, 6, 6]])
    weights = asp.Jagged.from_list([[0.5, 1.0, 2.0], None, [1.0, -1.0, 3.0, 0.25], [],
                                    [2.0, 2.0, 1.0]])
    dy5 = rng.standard_normal((5, 3))
    both(backend, opt, table, state, jagged, dy5, forward=True)
    both(backend, opt, table, state, jagged, dy5, mode="mean", weights=weights)
    arrow = pa.array([[1, 2, 3], None, [2, 4, None, 7], [], [3, 6, 6]])
    if not on_device(backend):  # an Arrow list is a device Jagged on the device
        both(backend, opt, table, state, arrow, dy5, forward=True)
    both(backend, opt, table, state, np.array([[1, 2], [2, 2], [0, 11]]),
         rng.standard_normal((3, 3)), forward=True)
    both(backend, opt, table, state, np.array([4, 4, 1]), rng.standard_normal((3, 3)))
    both(backend, opt, table, state, np.array([], np.int64), np.zeros((0, 3)),
         offsets=np.array([0]))


def test_train_step_is_deterministic(backend: str) -> None:
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 4, 3000)  # runs of ~750: split into pieces on the device
    dy = rng.standard_normal((3000, 4)).astype(np.float32)
    results = []
    for _ in range(2):
        table = to_backend(np.ones((4, 4), np.float32), backend)
        emb.train_step(table, to_backend(ids, backend), to_backend(dy, backend), lr=0.5)
        results.append(from_backend(table, backend))
    same_bits(results[0], results[1])


# ------------------------------------------------------------------ independent references
def _torch_steps(torch: Any, opt: str, init: np.ndarray, batches: list[Any], mode: str,
                 lr: float) -> tuple[np.ndarray, list[np.ndarray]]:
    """torch's EmbeddingBag(sparse=True) + SGD / Adagrad, loss sum(y ** 2) / 2 per batch."""
    bag_mod = torch.nn.EmbeddingBag(*init.shape, mode=mode, sparse=True)
    with torch.no_grad():
        bag_mod.weight.copy_(torch.from_numpy(init))
    optim = (torch.optim.SGD if opt == "sgd" else torch.optim.Adagrad)(
        bag_mod.parameters(), lr=lr, **({} if opt == "sgd" else {"eps": 1e-10}))
    outputs = []
    for ids, offsets, weights in batches:
        optim.zero_grad()
        y = bag_mod(torch.from_numpy(ids), torch.from_numpy(offsets[:-1]),
                    per_sample_weights=None if weights is None else torch.from_numpy(weights))
        outputs.append(y.detach().numpy().copy())
        y.backward(y.detach())  # d(sum(y ** 2) / 2) / dy = y
        optim.step()
    return bag_mod.weight.detach().numpy(), outputs


def _numpy_rowwise_steps(init: np.ndarray, batches: list[Any], mode: str, lr: float,
                         eps: float) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Row-wise Adagrad (FBGEMM's EXACT_ROWWISE_ADAGRAD) with dense float64 numpy maths."""
    table, state = init.astype(np.float64), np.zeros(len(init))
    outputs = []
    for ids, offsets, weights in batches:
        w = np.ones(len(ids)) if weights is None else weights.astype(np.float64)
        bag = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        if mode == "mean":
            w = w / np.maximum(np.diff(offsets), 1)[bag]
        y = np.zeros((len(offsets) - 1, table.shape[1]))
        np.add.at(y, bag, w[:, None] * table[ids])
        outputs.append(y)
        dense = np.zeros_like(table)
        np.add.at(dense, ids, w[:, None] * y[bag])  # dy = y
        rows = np.unique(ids)
        state[rows] += np.mean(dense[rows] ** 2, axis=1)
        table[rows] -= lr * dense[rows] / (np.sqrt(state[rows]) + eps)[:, None]
    return table, state, outputs


def _zipf_batches(rng: np.random.Generator, num: int, count: int, weighted: bool
                  ) -> list[Any]:
    """Batches of heavy-tailed bags (one of 300 ids) of Zipf ids with a hot row."""
    batches = []
    for _ in range(count):
        lengths = np.r_[rng.geometric(0.2, 40), 300, 0, 1]
        offsets = np.r_[0, np.cumsum(lengths)]
        ids = (rng.zipf(1.2, int(offsets[-1])) * 7) % num  # hot row 7, then 14, ...
        weights = rng.uniform(0.5, 1.5, len(ids)).astype(np.float32) if weighted else None
        batches.append((ids.astype(np.int64), offsets, weights))
    return batches


@pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning")
@pytest.mark.parametrize("opt", ["sgd", "adagrad"])
@pytest.mark.parametrize(("mode", "weighted"), [("sum", False), ("mean", False),
                                                ("sum", True)])
def test_train_step_matches_torch(backend: str, opt: str, mode: str, weighted: bool) -> None:
    # An independent reference: torch's EmbeddingBag(sparse=True) and optimizer, three
    # steps in a row on heavy-tailed bags of Zipf ids, with the forward fused.
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    num, dim, lr = 60, 8, 0.05
    init = rng.standard_normal((num, dim)).astype(np.float32)
    batches = _zipf_batches(rng, num, 3, weighted)
    want, want_outputs = _torch_steps(torch, opt, init, batches, mode, lr)
    table = to_backend(init.copy(), backend)
    state = None if opt == "sgd" else to_backend(np.zeros_like(init), backend)
    for (ids, offsets, weights), want_y in zip(batches, want_outputs, strict=True):
        step = emb.train_step(table, to_backend(ids, backend), lambda y: y,
                              offsets=to_backend(offsets, backend), mode=mode,
                              per_sample_weights=to_backend(weights, backend),
                              optimizer=opt, lr=lr, state=state, eps=1e-10)
        np.testing.assert_allclose(from_backend(step.output, backend), want_y, rtol=1e-5,
                                   atol=1e-4)
    np.testing.assert_allclose(from_backend(table, backend), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("mode", "weighted"), [("sum", False), ("mean", True)])
def test_train_step_rowwise_adagrad_matches_numpy(backend: str, mode: str,
                                                  weighted: bool) -> None:
    # Row-wise Adagrad has no torch optimizer: a dense float64 numpy oracle instead.
    rng = np.random.default_rng(8)
    num, dim, lr, eps = 60, 8, 0.05, 1e-8
    init = rng.standard_normal((num, dim))
    batches = _zipf_batches(rng, num, 3, weighted)
    want, want_state, want_outputs = _numpy_rowwise_steps(init, batches, mode, lr, eps)
    table, state = to_backend([init.copy(), np.zeros(num)], backend)
    for (ids, offsets, weights), want_y in zip(batches, want_outputs, strict=True):
        step = emb.train_step(table, to_backend(ids, backend), lambda y: y,
                              offsets=to_backend(offsets, backend), mode=mode,
                              per_sample_weights=to_backend(weights, backend),
                              optimizer="rowwise_adagrad", lr=lr, state=state, eps=eps)
        np.testing.assert_allclose(from_backend(step.output, backend), want_y, rtol=1e-12,
                                   atol=1e-12)
    np.testing.assert_allclose(from_backend(table, backend), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(from_backend(state, backend), want_state, rtol=1e-12)


# ------------------------------------------------------------------ skew (issue 13)


@pytest.mark.parametrize("skew", list(SKEWS))
@pytest.mark.parametrize("opt", ["sgd", "rowwise_adagrad"])
def test_train_step_under_skew_issue_13(backend: str, skew: str, opt: str) -> None:
    rng = np.random.default_rng(4)
    ids, offsets = SKEWS[skew](rng)
    bags = len(offsets) - 1
    table = rng.standard_normal((50, 4))
    state = state_of(opt, table, rng)
    whole = rng.integers(-4, 5, (bags, 4)).astype(np.float64)  # exact sums in any order
    both(backend, opt, table, state, ids, whole, offsets=offsets)
    dy = rng.standard_normal((bags, 4))
    got, got_state = to_backend([table.copy(), None if state is None else state.copy()],
                                backend)
    emb.train_step(got, *to_backend([ids, dy], backend), offsets=to_backend(offsets, backend),
                   optimizer=opt, lr=0.1, state=got_state)
    expected, expected_state = table.copy(), None if state is None else state.copy()
    emb.train_step(expected, ids, dy, offsets=offsets, optimizer=opt, lr=0.1,
                   state=expected_state)
    # long runs are summed in pieces on the device: float64 re-association only
    np.testing.assert_allclose(from_backend(got, backend), expected, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"optimizer": "adam"}, ValueError, r"^train_step: optimizer must be one of 'sgd', "
     r"'adagrad', 'rowwise_adagrad', got 'adam'$"),
    ({"optimizer": "adagrad"}, TypeError, r"^train_step: optimizer 'adagrad' needs its state"),
    ({"state": np.zeros(4)}, ValueError, r"^train_step: optimizer 'sgd' has no state"),
    ({"optimizer": "rowwise_adagrad", "state": np.zeros((4, 2))}, ValueError,
     r"^train_step: state must have shape \(4,\), got \(4, 2\)$"),
    ({"mode": "max"}, ValueError, r"^train_step: mode='max' is not supported"),
    ({"mode": "median"}, ValueError, r"^train_step: mode must be 'sum', 'mean' or 'max'"),
    ({"lr": -1.0}, ValueError, r"^train_step: lr must be a finite non-negative number"),
    ({"return_grad": 1}, TypeError, r"^train_step: return_grad must be True or False"),
])
def test_train_step_errors(kwargs: dict[str, Any], error: type, match: str) -> None:
    table = np.zeros((4, 2))
    args = {"lr": 0.1, **kwargs}
    with pytest.raises(error, match=match):
        emb.train_step(table, np.array([0, 1]), np.ones((2, 2)), **args)
    assert not table.any()  # nothing was updated


def test_train_step_errors_of_the_arrays() -> None:
    table, ids = np.zeros((4, 2)), np.array([0, 1])
    with pytest.raises(ValueError, match=r"^train_step: grad_out must have one row per "
                       r"lookup output \(2\), got shape \(3, 2\)$"):
        emb.train_step(table, ids, np.ones((3, 2)), lr=0.1)
    with pytest.raises(ValueError, match=r"^train_step: grad_out has dim 3 but the table has "
                       r"dim 2$"):
        emb.train_step(table, ids, lambda y: np.ones((2, 3)), lr=0.1)
    with pytest.raises(TypeError, match=r"^train_step: grad_out must be an array \[bags, "
                       r"dim\] or a callable taking the pooled output, got str$"):
        emb.train_step(table, ids, "dy", lr=0.1)
    with pytest.raises(TypeError, match=r"^train_step: table must have dtype float32 or "
                       r"float64, got int64$"):
        emb.train_step(np.zeros((4, 2), np.int64), ids, np.ones((2, 2)), lr=0.1)
    frozen = np.zeros((4, 2))
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match=r"^train_step: table must be a writable"):
        emb.train_step(frozen, ids, np.ones((2, 2)), lr=0.1)
    shared = np.zeros((2, 4, 2))
    with pytest.raises(ValueError, match=r"^train_step: table and state share memory; "
                       r"the updates would race$"):
        emb.train_step(shared[0], ids, np.ones((2, 2)), optimizer="adagrad", lr=0.1,
                       state=shared[0])
    with pytest.raises(ValueError, match=r"^train_step: table and grad_out share memory"):
        emb.train_step(shared[0], ids, shared[0][:2], lr=0.1)  # read while updated
    with pytest.raises(ValueError, match=r"^train_step: state and grad_out share memory"):
        emb.train_step(shared[0], ids, lambda y: shared[1][:2], optimizer="adagrad",
                       lr=0.1, state=shared[1])
    with pytest.raises(ArrowSparseIndexError, match=r"^train_step: ids out of range \[0, 4\) "
                       r"\(first at position 1: 7\)$"):
        emb.train_step(table, np.array([0, 7]), np.ones((2, 2)), lr=0.1)
    assert not table.any()


def test_train_step_device_errors_are_deferred(cp: ModuleType) -> None:
    table = cp.asarray(np.zeros((4, 2)))
    emb.train_step(table, cp.asarray(np.array([0, 7, 1])), cp.asarray(np.ones((3, 2))),
                   lr=0.5)
    with pytest.raises(ArrowSparseIndexError,
                       match="^train_step: ids out of range of the table" + DEFERRED.format(1)):
        later()
    # the ids in range were still applied
    assert table.get()[:, 0].tolist() == [-0.5, -0.5, 0.0, 0.0]


def test_train_step_on_the_device_reads_nothing_back(cp: ModuleType) -> None:
    rng = np.random.default_rng(5)
    ids = cp.asarray(rng.integers(0, 30, 400))
    offsets = cp.asarray(np.r_[0, np.sort(rng.integers(0, 400, 49)), 400])
    dy = cp.asarray(rng.standard_normal((50, 4)))
    table, state = cp.asarray(np.zeros((30, 4))), cp.asarray(np.zeros(30))
    for return_grad, syncs in ((False, 0), (True, 1)):
        cp.stats.reset()
        emb.train_step(table, ids, dy, offsets=offsets, optimizer="rowwise_adagrad", lr=0.1,
                       state=state, return_grad=return_grad)
        assert cp.stats.syncs == syncs, cp.stats.log
    cp.stats.reset()
    emb.train_step(table, ids, lambda y: y, offsets=offsets, lr=0.1)
    assert cp.stats.syncs == 0
    launched = [name.split("<")[0] for name in cp.stats.log if "<" in name]
    assert launched == ["check_offsets", "bag_ids", "gather_reduce_pieces", "gather_reduce",
                        "train_pieces", "train_rows"]


def test_the_fused_kernels_run_in_every_thread_order(cp: ModuleType) -> None:
    emulator: Emulator = cp.emulator
    rng = np.random.default_rng(6)
    ids = np.r_[np.full(300, 2), rng.integers(0, 10, 300)]
    table = cp.asarray(rng.standard_normal((10, 40)))
    state = cp.asarray(np.zeros((10, 40)))
    emb.train_step(table, cp.asarray(ids), cp.asarray(rng.standard_normal((600, 40))),
                   optimizer="adagrad", lr=0.1, state=state)
    assert emulator.order_effects == {}  # no atomics: the same bits in every order
