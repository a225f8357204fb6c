"""Tests of ``arrow_sparse.embedding.optim``: ``sgd``, ``adagrad``, ``rowwise_adagrad``,
``ftrl`` and ``update``.

Each step against its loop oracle (``_reference.py``, Caffe2's FTRL) on every backend of the
``backend`` fixture, PyTorch's optimizers where torch is installed, then the errors and the
device checks; last, the documentation's training example, which puts lookup, backward and
the optimizers together.
"""

from __future__ import annotations

import importlib.util
import pathlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from arrow_sparse import embedding as emb

from ..conftest import from_backend, on_device, to_backend
from ._helpers import DEFERRED, grad_on_host, grads, later
from ._reference import ref_adagrad, ref_ftrl, ref_rowwise_adagrad, ref_sgd

ROOT = pathlib.Path(__file__).resolve().parents[2]
OPTIMIZERS = ["sgd", "adagrad", "rowwise_adagrad", "ftrl"]


def test_sgd_and_adagrad_match_numpy_reference(backend: str) -> None:
    rng = np.random.default_rng(6)
    table = rng.standard_normal((15, 3))
    r_sgd, r_ada, r_state = table.copy(), table.copy(), np.zeros_like(table)
    r_row, rs_row = table.copy(), np.zeros(15)
    t_sgd, t_ada, state, t_row, s_row = to_backend([table.copy(), table.copy(),
                                                    np.zeros_like(table), table.copy(),
                                                    np.zeros(15)], backend)
    for flat, offsets, dy in grads(rng, 5, 15, 3, np.float64):
        g = emb.lookup_backward(*to_backend([dy, flat], backend),
                                offsets=to_backend(offsets, backend), num_embeddings=15)
        emb.sgd(t_sgd, g, 0.1)
        rows, values = grad_on_host(g, backend)
        ref_sgd(r_sgd, rows, values, 0.1)
        emb.adagrad(t_ada, state, g, 0.1, 1e-8)
        ref_adagrad(r_ada, r_state, rows, values, 0.1, 1e-8)
        emb.rowwise_adagrad(t_row, s_row, g, 0.1, 1e-8)
        ref_rowwise_adagrad(r_row, rs_row, rows, values, 0.1, 1e-8)
    for got, want in ((t_sgd, r_sgd), (t_ada, r_ada), (state, r_state), (t_row, r_row),
                      (s_row, rs_row)):
        np.testing.assert_allclose(from_backend(got, backend), want, rtol=1e-12)


def test_ftrl_matches_caffe2_reference(backend: str) -> None:
    rng = np.random.default_rng(7)
    w, z, n = to_backend([np.zeros((10, 2)), np.zeros((10, 2)), np.zeros((10, 2))], backend)
    rw, rz, rn = np.zeros((10, 2)), np.zeros((10, 2)), np.zeros((10, 2))
    hyper = {"alpha": 0.1, "beta": 1.0, "l1": 1.0, "l2": 0.01}
    for flat, offsets, dy in grads(rng, 6, 10, 2, np.float64):
        g = emb.lookup_backward(*to_backend([dy, flat], backend),
                                offsets=to_backend(offsets, backend), num_embeddings=10)
        emb.ftrl(w, z, n, g, **hyper)
        ref_ftrl(rw, rz, rn, *grad_on_host(g, backend), **hyper)
    w, z, n = from_backend([w, z, n], backend)
    np.testing.assert_allclose(w, rw, rtol=1e-12)
    np.testing.assert_allclose(z, rz, rtol=1e-12)
    np.testing.assert_allclose(n, rn, rtol=1e-12)
    assert (w == 0).any() and (w != 0).any()  # l1 makes some weights exactly zero


def states_of(opt: str, tables: list[Any], backend: str) -> Any:
    """Fresh optimizer states of ``tables`` (host arrays), on the backend."""
    if opt == "sgd":
        return None
    if opt == "adagrad":
        return to_backend([np.zeros(t.shape) for t in tables], backend)
    if opt == "rowwise_adagrad":
        return to_backend([np.zeros(len(t)) for t in tables], backend)
    return to_backend([(np.zeros(t.shape), np.zeros(t.shape)) for t in tables], backend)


def step(opt: str, table: Any, state: Any, g: Any, **hyper: Any) -> None:
    """One optimizer step by its own function."""
    if opt == "sgd":
        emb.sgd(table, g, **hyper)
    elif opt == "ftrl":
        emb.ftrl(table, state[0], state[1], g, **hyper)
    else:
        getattr(emb, opt)(table, state, g, **hyper)


@pytest.mark.parametrize("opt", OPTIMIZERS)
def test_update_many_tables_equals_one_by_one(opt: str, backend: str) -> None:
    rng = np.random.default_rng(9)
    tables = [rng.standard_normal((12, 2 + t)) for t in range(3)]
    grads_ = [emb.SparseGrad(*to_backend([rng.integers(0, 12, 9),
                                          rng.standard_normal((9, 2 + t))], backend))
              for t in range(3)]  # not coalesced: repeated rows
    hyper: dict[str, Any] = {"lr": 0.1} if opt != "ftrl" else {"alpha": 0.2}
    one = to_backend([t.copy() for t in tables], backend)
    st_one = states_of(opt, tables, backend)
    for i, (t, g) in enumerate(zip(one, grads_, strict=True)):
        step(opt, t, None if st_one is None else st_one[i], g, **hyper)
    many = to_backend([t.copy() for t in tables], backend)
    emb.update(opt, many, grads_, states=states_of(opt, tables, backend), **hyper)
    for a, b in zip(from_backend(one, backend), from_backend(many, backend), strict=True):
        np.testing.assert_array_equal(a, b)
    if opt == "sgd":  # the same as the coalesced gradient on the host
        host = [t.copy() for t in tables]
        emb.update(opt, host, [g.to_device("cpu") for g in grads_], **hyper)
        for a, b in zip(host, from_backend(many, backend), strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("splits", [2, 7, 1000])
@pytest.mark.parametrize("opt", OPTIMIZERS)
def test_num_splits_updates_one_table_in_parts_with_the_serial_result(
        opt: str, splits: int, backend: str) -> None:
    rng = np.random.default_rng(10)
    table = rng.standard_normal((5_000, 8))
    ids = (rng.zipf(1.2, 20_000) - 1) % len(table)  # hot rows, repeated: coalesced first
    grad = emb.SparseGrad(*to_backend([ids, rng.standard_normal((len(ids), 8))], backend))
    hyper: dict[str, Any] = {"lr": 0.1} if opt != "ftrl" else {"alpha": 0.2}
    serial, parts = to_backend([table.copy(), table.copy()], backend)
    st_serial, st_parts = states_of(opt, [table], backend), states_of(opt, [table], backend)
    emb.update(opt, [serial], [grad], states=st_serial, **hyper)
    emb.update(opt, [parts], [grad], states=st_parts, num_splits=splits, max_workers=2,
               **hyper)
    np.testing.assert_array_equal(from_backend(parts, backend), from_backend(serial, backend))
    if st_serial is not None:
        for a, b in zip(st_serial, st_parts, strict=True):
            for x, y in zip(a if opt == "ftrl" else [a], b if opt == "ftrl" else [b],
                            strict=True):
                np.testing.assert_array_equal(from_backend(y, backend),
                                              from_backend(x, backend))


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_num_splits_must_be_a_positive_integer(bad: Any) -> None:
    grad = emb.SparseGrad(np.array([0]), np.ones((1, 2)))
    with pytest.raises(ValueError, match=r"^update: num_splits must be a positive integer"):
        emb.update("sgd", [np.zeros((2, 2))], [grad], num_splits=bad, lr=0.1)


@pytest.mark.parametrize("opt", OPTIMIZERS)
def test_an_empty_gradient_changes_nothing(opt: str, backend: str) -> None:
    table = np.arange(8.0).reshape(4, 2)
    hyper: dict[str, Any] = {"lr": 0.1} if opt != "ftrl" else {"alpha": 0.2}
    empty = emb.SparseGrad(*to_backend([np.zeros(0, np.int64), np.zeros((0, 2))], backend))
    one, many = to_backend([table.copy(), table.copy()], backend)
    state = states_of(opt, [table], backend)
    step(opt, one, None if state is None else state[0], empty, **hyper)
    emb.update(opt, [many], [empty], states=states_of(opt, [table], backend), **hyper)
    for got in (one, many):
        np.testing.assert_array_equal(from_backend(got, backend), table)
    if state is not None:
        for s in state[0] if opt == "ftrl" else state[:1]:
            assert not from_backend(s, backend).any()


@pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning")
@pytest.mark.parametrize("opt", ["sgd", "adagrad"])
def test_optimizers_match_torch(opt: str) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    num, dim, lr = 30, 4, 0.3
    init = rng.standard_normal((num, dim)).astype(np.float32)
    table, state = init.copy(), np.zeros_like(init)
    bag_mod = torch.nn.EmbeddingBag(num, dim, mode="mean", sparse=True)
    with torch.no_grad():
        bag_mod.weight.copy_(torch.from_numpy(init))
    optim = (torch.optim.SGD if opt == "sgd" else torch.optim.Adagrad)(
        bag_mod.parameters(), lr=lr)
    for flat, offsets, dy in grads(rng, 6, num, dim):
        optim.zero_grad()
        bag_mod(torch.from_numpy(flat), torch.from_numpy(offsets[:-1])).backward(
            torch.from_numpy(dy))
        optim.step()
        g = emb.lookup_backward(dy, flat, offsets=offsets, mode="mean", num_embeddings=num)
        if opt == "sgd":
            emb.sgd(table, g, lr)
        else:
            emb.adagrad(table, state, g, lr)  # torch's default eps=1e-10
    np.testing.assert_allclose(table, bag_mod.weight.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_optimizer_errors() -> None:
    table = np.zeros((4, 2), np.float32)
    g = emb.SparseGrad(np.array([1]), np.ones((1, 2), np.float32))
    with pytest.raises(TypeError, match="sgd: grad must be a SparseGrad"):
        emb.sgd(table, np.ones((1, 2)), 0.1)
    with pytest.raises(IndexError, match=r"sgd: grad.rows out of range \[0, 1\)"):
        emb.sgd(table[:1], g, 0.1)
    with pytest.raises(ValueError, match="sgd: grad has dim 2 but the table has dim 3"):
        emb.sgd(np.zeros((4, 3)), g, 0.1)
    with pytest.raises(ValueError, match="sgd: lr must be a finite non-negative number"):
        emb.sgd(table, g, float("nan"))
    with pytest.raises(TypeError, match="sgd: lr must be a real number"):
        emb.sgd(table, g, "0.1")
    ro = table.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="sgd: table must be a writable, C-contiguous"):
        emb.sgd(ro, g, 0.1)
    with pytest.raises(ValueError, match=r"adagrad: state must have shape \(4, 2\)"):
        emb.adagrad(table, np.zeros((4, 3), np.float32), g, 0.1)
    with pytest.raises(ValueError, match=r"rowwise_adagrad: state must have shape \(4,\)"):
        emb.rowwise_adagrad(table, np.zeros((4, 2), np.float32), g, 0.1)
    with pytest.raises(TypeError, match="ftrl: z must have dtype float32"):
        emb.ftrl(table, np.zeros((4, 2)), np.zeros((4, 2), np.float32), g)
    with pytest.raises(ValueError, match="ftrl: alpha must be a finite positive number"):
        emb.ftrl(table, np.zeros_like(table), np.zeros_like(table), g, alpha=0.0)
    with pytest.raises(ValueError, match="update: opt must be 'sgd'"):
        emb.update("adam", [table], [g], lr=0.1)
    with pytest.raises(ValueError, match=r"update: tables\[0\] and tables\[1\] share memory"):
        emb.update("sgd", [table, table[:2]], [g, g], lr=0.1)
    with pytest.raises(ValueError, match="needs one state per table"):
        emb.update("adagrad", [table], [g], lr=0.1)
    with pytest.raises(TypeError, match="update: missing hyper-parameter 'lr'"):
        emb.update("sgd", [table], [g])
    with pytest.raises(TypeError, match=r"sgd: unexpected hyper-parameters \['eps'\]"):
        emb.update("sgd", [table], [g], lr=0.1, eps=1.0)


def test_optimizers_refuse_float16_tables() -> None:
    with pytest.raises(TypeError, match="float16"):
        emb.sgd(np.zeros((2, 2), np.float16), emb.SparseGrad(np.array([0]), np.ones((1, 2))),
                0.1)


def test_update_rejects_aliasing_states() -> None:
    t1, t2 = np.zeros((4, 2)), np.zeros((4, 2))
    g = emb.SparseGrad(np.array([1]), np.ones((1, 2)))
    s = np.zeros((4, 2))
    with pytest.raises(ValueError, match=r"update: states\[0\] and states\[1\] share memory"):
        emb.update("adagrad", [t1, t2], [g, g], states=[s, s], lr=0.1)
    with pytest.raises(ValueError, match=r"update: tables\[0\] and states\[1\] share memory"):
        emb.update("adagrad", [t1, t2], [g, g], states=[s, t1], lr=0.1)
    with pytest.raises(ValueError, match="adagrad: table and state share memory"):
        emb.adagrad(t1, t1, g, 0.1)
    with pytest.raises(ValueError, match="ftrl: z and n share memory"):
        emb.ftrl(t1, s, s, g)
    with pytest.raises(ValueError, match=r"update: states\[0\]\[0\] and states\[1\]\[0\] share"):
        emb.update("ftrl", [t1, t2], [g, g], states=[(s, np.zeros((4, 2))),
                                                      (s[:], np.zeros((4, 2)))])
    assert not t1.any() and not t2.any()  # nothing was touched


def test_device_sgd_checks_the_rows_of_an_uncoalesced_gradient(cp: ModuleType) -> None:
    dy = cp.asarray(np.ones((3, 2)))
    rows = cp.asarray(np.array([3, -1, 3]))
    grad = emb.SparseGrad(rows, dy)  # not read back: no check here
    table = cp.asarray(np.zeros((4, 2)))
    emb.sgd(table, grad, 0.5)  # coalesced first (one synchronisation)
    with pytest.raises(IndexError, match="^sgd: grad.rows out of range of the table"
                       + DEFERRED.format(0)):
        later()
    assert table.get().tolist() == [[0, 0]] * 3 + [[-1, -1]]  # the row in range was updated


@pytest.mark.parametrize(("call", "match"), [
    (lambda cp: emb.sgd(cp.asarray(np.zeros((3, 2))),
                        emb.SparseGrad([0], np.ones((1, 2))), 0.1),
     "^sgd: grad is a host"),
    (lambda cp: emb.update("sgd", [np.zeros((3, 2)), cp.asarray(np.zeros((3, 2)))],
                           [emb.SparseGrad([0], np.ones((1, 2))),
                            emb.SparseGrad(cp.asarray(np.array([0])),
                                           cp.asarray(np.ones((1, 2))))],
                           lr=0.1), "^update: inputs mix host"),
])
def test_optimizers_refuse_host_and_device_inputs_together(cp: ModuleType,
                                                           call: Callable[..., Any],
                                                           match: str) -> None:
    with pytest.raises(TypeError, match=match + ".*move them to one device first"):
        call(cp)


def test_train_logreg_example_learns_the_embeddings() -> None:
    spec = importlib.util.spec_from_file_location(
        "train_logreg", ROOT / "docs" / "examples" / "train_logreg.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = ["--steps", "42", "--log-every", "14", "--dim", "4"]
    trained = module.main(args)
    frozen = module.main([*args, "--emb-lr", "0"])
    # The target is carried by item identity only (constant predictor: 0.682): the
    # loss falls only if the sparse path trains the table.
    assert trained[-1] < 0.55 < frozen[-1]
    assert trained[-1] < trained[0] - 0.1


# ======================================== issue 14: what an in-place update may alias
_READ = r"share memory; it would be read after parts of it were overwritten"


@pytest.mark.parametrize("opt", OPTIMIZERS)
def test_a_gradient_aliasing_the_table_or_state_is_refused_issue14(opt: str,
                                                                   backend: str) -> None:
    table = to_backend(np.arange(8.0).reshape(4, 2), backend)
    state = to_backend(np.ones((4,) if opt == "rowwise_adagrad" else (4, 2)), backend)
    z, n = to_backend(np.zeros((4, 2)), backend), to_backend(np.ones((4, 2)), backend)
    rows = to_backend(np.array([1, 2]), backend)

    def grad(values: Any) -> emb.SparseGrad:
        # On the device a hand-built gradient is coalesced into new arrays first (so
        # it cannot alias); one known to be coalesced, as lookup_backward returns, is
        # read as it is.
        if on_device(backend):
            return emb.SparseGrad._coalesced(rows, values)
        return emb.SparseGrad(rows, values)

    def step(values: Any) -> None:
        g = grad(values)
        if opt == "sgd":
            emb.sgd(table, g, 0.1)
        elif opt == "ftrl":
            emb.ftrl(table, z, n, g)
        elif opt == "adagrad":
            emb.adagrad(table, state, g, 0.1)
        else:
            emb.rowwise_adagrad(table, state, g, 0.1)

    with pytest.raises(ValueError, match=rf"^{opt}: table and grad.values {_READ}"):
        step(table[:2])
    if opt in ("adagrad", "ftrl"):
        with pytest.raises(ValueError, match=rf"^{opt}: (state|z) and grad.values {_READ}"):
            step((state if opt == "adagrad" else z)[2:])
    with pytest.raises(ValueError, match=rf"^update: table and grad.values {_READ}|"
                                         rf"^{opt}: table and grad.values {_READ}"):
        emb.update(opt, [table], [grad(table[2:])], lr=0.1,
                   states=None if opt == "sgd" else [(z, n) if opt == "ftrl" else state])
    np.testing.assert_array_equal(from_backend(table, backend), np.arange(8.0).reshape(4, 2))
    step(table[:2].copy())  # a copy is fine


def test_an_in_place_update_documents_what_may_alias_issue14() -> None:
    for func in (emb.sgd, emb.adagrad, emb.rowwise_adagrad, emb.ftrl, emb.update):
        assert "share memory" in (func.__doc__ or ""), func.__name__
