"""arrow_sparse.interop.torch.EmbeddingBag against torch.nn.EmbeddingBag.

Forward against ``torch.nn.functional.embedding_bag``, gradients against
``torch.nn.EmbeddingBag(sparse=True)`` (coalesced), training steps with
``torch.optim.SGD``/``Adagrad`` against PyTorch's own module, and the fused optimizers of
``arrow_sparse.embedding`` applied to the module's weight.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arrow_sparse import embedding as emb
from arrow_sparse.errors import ArrowSparseError

torch = pytest.importorskip("torch")
from arrow_sparse.interop.torch import (  # noqa: E402
    EmbeddingBag,
    EmbeddingBagFunction,
    embedding_bag,
    sparse_grad_from_torch,
    sparse_grad_to_torch,
)

# torch warns once per process when its own sparse tensors skip their invariant checks
pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning")

NUM, DIM = 40, 6


def batch(seed: int, bags: int = 12, max_len: int = 7, num: int = NUM) -> dict[str, Any]:
    """Random bags (some empty, many repeated ids) as PyTorch takes them."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, max_len + 1, bags)
    lengths[0] = 0  # an empty bag first
    ids = rng.integers(0, num // 4, lengths.sum())  # a quarter of the rows: duplicates
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return {"input": torch.from_numpy(ids), "offsets": torch.from_numpy(starts),
            "per_sample_weights": torch.from_numpy(rng.random(len(ids)).astype(np.float32))}


def pair(mode: str, seed: int = 0, **kw: Any) -> tuple[Any, Any]:
    """The same initial weight in torch's EmbeddingBag and in ours."""
    init = torch.from_numpy(np.random.default_rng(seed).standard_normal((NUM, DIM))
                            .astype(np.float32))
    ref = torch.nn.EmbeddingBag(NUM, DIM, mode=mode, sparse=True, _weight=init.clone(), **kw)
    ours = EmbeddingBag(NUM, DIM, mode=mode, sparse=True, _weight=init.clone(), **kw)
    return ref, ours


def assert_same_sparse(got: Any, want: Any) -> None:
    """Equal to PyTorch's coalesced gradient, and coalesced already (rows unique, sorted;
    autograd's accumulation into .grad drops the flag, for PyTorch's own too)."""
    assert got.layout == torch.sparse_coo
    rows = got._indices()[0].numpy()
    assert np.all(rows[1:] > rows[:-1])
    want = want.coalesce()
    np.testing.assert_array_equal(rows, want.indices()[0].numpy())
    np.testing.assert_allclose(got._values().numpy(), want.values().numpy(), rtol=1e-5,
                               atol=1e-6)


# ============================================================================== forward
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_forward_equals_torch(mode: str, include_last_offset: bool) -> None:
    b = batch(1)
    weight = torch.randn(NUM, DIM, dtype=torch.float64)
    offsets = b["offsets"]
    if include_last_offset:
        offsets = torch.cat([offsets, torch.tensor([len(b["input"])])])
    kw = {"mode": mode, "include_last_offset": include_last_offset}
    want = torch.nn.functional.embedding_bag(b["input"], weight, offsets, **kw)
    got = embedding_bag(b["input"], weight, offsets, **kw)
    assert got.dtype == torch.float64 and got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_forward_weights_padding_2d_and_dtypes_equal_torch() -> None:
    b = batch(2)
    weight = torch.randn(NUM, DIM)
    f = torch.nn.functional.embedding_bag
    psw = b["per_sample_weights"]
    np.testing.assert_allclose(
        embedding_bag(b["input"], weight, b["offsets"], mode="sum", per_sample_weights=psw),
        f(b["input"], weight, b["offsets"], mode="sum", per_sample_weights=psw), rtol=1e-5,
        atol=1e-6)
    for mode in ("sum", "mean", "max"):
        np.testing.assert_allclose(
            embedding_bag(b["input"], weight, b["offsets"], mode=mode, padding_idx=3),
            f(b["input"], weight, b["offsets"], mode=mode, padding_idx=3), rtol=1e-5, atol=1e-6)
        ids2 = b["input"][:12].reshape(4, 3).to(torch.int32)
        np.testing.assert_allclose(embedding_bag(ids2, weight, mode=mode),
                                   f(ids2, weight, mode=mode), rtol=1e-5, atol=1e-6)
    ids32, offs32 = b["input"].to(torch.int32), b["offsets"].to(torch.int32)
    np.testing.assert_allclose(embedding_bag(ids32, weight, offs32),
                               f(ids32, weight, offs32), rtol=1e-5, atol=1e-6)
    # a negative padding_idx counts from the end, as in PyTorch
    np.testing.assert_allclose(embedding_bag(b["input"], weight, b["offsets"], padding_idx=-37),
                               f(b["input"], weight, b["offsets"], padding_idx=3), rtol=1e-5,
                               atol=1e-6)


def test_forward_reads_the_weight_in_place() -> None:
    bag = EmbeddingBag(5, 2, mode="sum", _weight=torch.zeros(5, 2))
    ids, offsets = torch.tensor([1, 2]), torch.tensor([0])
    assert bag(ids, offsets).detach().tolist() == [[0.0, 0.0]]
    with torch.no_grad():
        bag.weight[2] = 1.5  # no copy of the weight is cached anywhere
    assert bag(ids, offsets).detach().tolist() == [[1.5, 1.5]]


# ============================================================================ gradients
@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_gradients_equal_torch_sparse(mode: str) -> None:
    b = batch(3)
    ref, ours = pair(mode)
    dy = torch.from_numpy(np.random.default_rng(4).standard_normal((12, DIM)).astype(np.float32))
    ref(b["input"], b["offsets"]).backward(dy)
    ours(b["input"], b["offsets"]).backward(dy)
    assert_same_sparse(ours.weight.grad, ref.weight.grad)


def test_gradients_with_weights_padding_and_last_offset_equal_torch() -> None:
    b = batch(5)
    ref, ours = pair("sum", padding_idx=2)
    offsets = torch.cat([b["offsets"], torch.tensor([len(b["input"])])])
    w_ref = b["per_sample_weights"].clone().requires_grad_()
    w_ours = b["per_sample_weights"].clone().requires_grad_()
    ref.include_last_offset = ours.include_last_offset = True
    dy = torch.from_numpy(np.random.default_rng(6).standard_normal((12, DIM)).astype(np.float32))
    ref(b["input"], offsets, per_sample_weights=w_ref).backward(dy)
    ours(b["input"], offsets, per_sample_weights=w_ours).backward(dy)
    assert_same_sparse(ours.weight.grad, ref.weight.grad)
    assert 2 not in ours.weight.grad._indices()[0].tolist()  # padding gets no gradient
    np.testing.assert_allclose(w_ours.grad.numpy(), w_ref.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_dense_gradient_equals_torch() -> None:
    b = batch(7)
    init = torch.randn(NUM, DIM)
    ref = torch.nn.EmbeddingBag(NUM, DIM, mode="mean", _weight=init.clone())
    ours = EmbeddingBag(NUM, DIM, mode="mean", _weight=init.clone(), sparse=False)
    ref(b["input"], b["offsets"]).sum().backward()
    ours(b["input"], b["offsets"]).sum().backward()
    assert ours.weight.grad.layout == torch.strided
    np.testing.assert_allclose(ours.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("sparse", [False, True])
def test_scale_grad_by_freq_divides_each_row_by_its_count(sparse: bool) -> None:
    b = batch(7)
    ids, offsets = b["input"], b["offsets"]
    plain = EmbeddingBag(NUM, DIM, mode="mean", sparse=sparse)
    scaled = EmbeddingBag(NUM, DIM, mode="mean", sparse=sparse, scale_grad_by_freq=True,
                          _weight=plain.weight.detach().clone())
    plain(ids, offsets).sum().backward()
    scaled(ids, offsets).sum().backward()
    counts = np.bincount(ids.numpy(), minlength=NUM)[:, None]
    want = plain.weight.grad.to_dense().numpy() / np.maximum(counts, 1)
    np.testing.assert_allclose(scaled.weight.grad.to_dense().numpy(), want, rtol=1e-6)
    # PyTorch's CPU embedding_bag divides some rows by another row's count
    # (pytorch/pytorch#190063); where every id occurs once or all ids are equal it is right.
    for ids_, offsets_ in ((torch.tensor([1, 1, 1]), torch.tensor([0, 1])),
                           (torch.tensor([4, 2, 0]), torch.tensor([0, 2]))):
        ref = torch.nn.EmbeddingBag(NUM, DIM, mode="mean", scale_grad_by_freq=True,
                                    _weight=plain.weight.detach().clone())
        ours = EmbeddingBag(NUM, DIM, mode="mean", scale_grad_by_freq=True, sparse=sparse,
                            _weight=plain.weight.detach().clone())
        ref(ids_, offsets_).sum().backward()
        ours(ids_, offsets_).sum().backward()
        np.testing.assert_allclose(ours.weight.grad.to_dense().numpy(),
                                   ref.weight.grad.numpy(), rtol=1e-6)


def test_per_sample_weights_gradient_of_2d_input_in_mean_mode() -> None:
    # PyTorch has no weights with mean: check against the formula d out[b] / d w_i
    weight = torch.randn(NUM, DIM, dtype=torch.float64)
    ids = torch.tensor([[1, 2, 1], [0, 5, 7]])
    w = torch.rand(2, 3, dtype=torch.float64, requires_grad=True)
    dy = torch.randn(2, DIM, dtype=torch.float64)
    embedding_bag(ids, weight, mode="mean", per_sample_weights=w).backward(dy)
    want = (weight[ids] * dy[:, None, :]).sum(-1) / 3
    np.testing.assert_allclose(w.grad.numpy(), want.numpy(), rtol=1e-12)
    assert torch.autograd.gradcheck(
        lambda x: embedding_bag(ids, weight, mode="mean", per_sample_weights=x), (w,))


# ============================================================================= training
@pytest.mark.parametrize("optimizer", ["SGD", "Adagrad"])
@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_training_steps_equal_torch(optimizer: str, mode: str) -> None:
    ref, ours = pair(mode, seed=8)
    opt_ref = getattr(torch.optim, optimizer)(ref.parameters(), lr=0.1)
    opt_ours = getattr(torch.optim, optimizer)(ours.parameters(), lr=0.1)
    target = torch.from_numpy(np.random.default_rng(9).standard_normal(DIM).astype(np.float32))
    for step in range(8):
        b = batch(100 + step)
        for module, opt in ((ref, opt_ref), (ours, opt_ours)):
            opt.zero_grad()
            out = module(b["input"], b["offsets"], per_sample_weights=None if mode == "mean"
                         else b["per_sample_weights"])
            ((out - target) ** 2).sum().backward()
            opt.step()
    np.testing.assert_allclose(ours.weight.detach().numpy(), ref.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert not torch.equal(ours.weight, pair(mode, seed=8)[1].weight)  # it did train


def train_with_fused_optimizer(ref: Any, ours: Any, optimizer: str, steps: int,
                               seed: int) -> None:
    """Train ``ref`` with torch.optim and ``ours`` with emb.sgd / emb.adagrad on its
    sparse gradient, on the same ``steps`` batches (seeds ``seed``, ``seed + 1``, ...)."""
    opt_ref = {"sgd": torch.optim.SGD, "adagrad": torch.optim.Adagrad}[optimizer](
        ref.parameters(), lr=0.05)
    table = ours.weight.detach().numpy()  # shares the parameter's memory
    state = np.zeros_like(table)
    for step in range(steps):
        b = batch(seed + step)
        opt_ref.zero_grad()
        ref(b["input"], b["offsets"]).pow(2).sum().backward()
        opt_ref.step()
        ours.weight.grad = None
        ours(b["input"], b["offsets"]).pow(2).sum().backward()
        g = sparse_grad_from_torch(ours.weight.grad)
        if optimizer == "sgd":
            emb.sgd(table, g, 0.05)
        else:
            emb.adagrad(table, state, g, 0.05)


@pytest.mark.parametrize("optimizer", ["sgd", "adagrad"])
def test_fused_optimizers_on_the_weight_equal_torch_optim(optimizer: str) -> None:
    ref, ours = pair("sum", seed=10)
    train_with_fused_optimizer(ref, ours, optimizer, steps=6, seed=200)
    np.testing.assert_allclose(ours.weight.detach().numpy(), ref.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)


# ======================================================= issue 18: mode="max" gradients
def max_batch(seed: int, bags: int = 16, num: int = NUM, dim: int = DIM,
              dtype: Any = torch.float32) -> tuple[Any, Any, Any]:
    """Bags with empty ones and repeated ids, over a weight of few values (ties)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 8, bags)
    lengths[[0, bags // 2]] = 0
    ids = torch.from_numpy(rng.integers(0, num // 3, lengths.sum()))
    starts = torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)[:-1]]))
    weight = torch.from_numpy(rng.integers(0, 3, (num, dim)).astype(np.float64)).to(dtype)
    return ids, starts, weight


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("include_last_offset", [False, True])
@pytest.mark.parametrize("sparse", [True, False])
def test_max_forward_and_gradient_equal_torch_issue18(dtype: Any, index_dtype: Any,
                                                      include_last_offset: bool,
                                                      sparse: bool) -> None:
    ids, offsets, init = max_batch(18, dtype=dtype)
    ids, offsets = ids.to(index_dtype), offsets.to(index_dtype)
    if include_last_offset:
        offsets = torch.cat([offsets, torch.tensor([len(ids)], dtype=index_dtype)])
    dy = torch.from_numpy(np.random.default_rng(1).standard_normal((16, DIM))).to(dtype)
    kw = {"mode": "max", "include_last_offset": include_last_offset}
    w_ref, w_ours = init.clone().requires_grad_(), init.clone().requires_grad_()
    want = torch.nn.functional.embedding_bag(ids, w_ref, offsets, **kw)
    got = embedding_bag(ids, w_ours, offsets, sparse=sparse, **kw)
    assert got.dtype == dtype
    assert torch.equal(got.detach(), want.detach())  # ties and all: the same rows
    want.backward(dy)
    got.backward(dy)
    grad = w_ours.grad
    if sparse:
        assert grad.layout == torch.sparse_coo
        rows = grad._indices()[0].numpy()
        assert np.all(rows[1:] > rows[:-1])
        won = np.flatnonzero(w_ref.grad.abs().sum(1).numpy())  # rows that won an element
        np.testing.assert_array_equal(rows, won)
        grad = grad.to_dense()
    np.testing.assert_allclose(grad.numpy(), w_ref.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_max_gradient_with_padding_and_2d_input_equals_torch_issue18() -> None:
    ids, offsets, init = max_batch(3)
    f = torch.nn.functional.embedding_bag
    dy = torch.from_numpy(np.random.default_rng(2).standard_normal((16, DIM)).astype(np.float32))
    for call_ids, call_offsets, extra in ((ids, offsets, {"padding_idx": 2}),
                                          (ids[:15].reshape(5, 3), None, {}),
                                          (ids[:15].reshape(5, 3), None, {"padding_idx": 1})):
        w_ref, w_ours = init.clone().requires_grad_(), init.clone().requires_grad_()
        want = f(call_ids, w_ref, call_offsets, mode="max", **extra)
        got = embedding_bag(call_ids, w_ours, call_offsets, mode="max", **extra)
        assert torch.equal(got.detach(), want.detach())
        want.backward(dy[:len(want)])
        got.backward(dy[:len(got)])
        np.testing.assert_allclose(w_ours.grad.to_dense().numpy(), w_ref.grad.numpy(),
                                   rtol=1e-6, atol=1e-6)


def test_lookup_backward_takes_torch_max_indices_issue18() -> None:
    ids, offsets, weight = max_batch(6, dtype=torch.float64)
    out, _, _, max_indices = torch.embedding_bag(weight, ids, offsets, False, 2)
    w = weight.clone().requires_grad_()
    dy = torch.from_numpy(np.random.default_rng(6).standard_normal((16, DIM)))
    torch.nn.functional.embedding_bag(ids, w, offsets, mode="max").backward(dy)
    full = np.concatenate([offsets.numpy(), [len(ids)]])
    _, argmax = emb.lookup(weight.numpy(), ids.numpy(), offsets=full, mode="max",
                           return_argmax=True)
    empty = np.diff(full) == 0
    np.testing.assert_array_equal(argmax[~empty], max_indices.numpy()[~empty])
    g = emb.lookup_backward(dy.numpy(), ids.numpy(), offsets=full, mode="max",
                            argmax=max_indices.numpy(), num_embeddings=NUM)  # 0, not -1,
    dense = np.zeros((NUM, DIM))                                           # at empty bags
    dense[g.rows] = g.values
    np.testing.assert_allclose(dense, w.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("optimizer", ["SGD", "Adagrad"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_max_training_steps_equal_torch_issue18(optimizer: str, dtype: Any) -> None:
    init = torch.from_numpy(np.random.default_rng(8).standard_normal((NUM, DIM))).to(dtype)
    ref = torch.nn.EmbeddingBag(NUM, DIM, mode="max", _weight=init.clone())  # dense grads
    ours = EmbeddingBag(NUM, DIM, mode="max", _weight=init.clone())  # sparse grads
    opt_ref = getattr(torch.optim, optimizer)(ref.parameters(), lr=0.1)
    opt_ours = getattr(torch.optim, optimizer)(ours.parameters(), lr=0.1)
    target = torch.from_numpy(np.random.default_rng(9).standard_normal(DIM)).to(dtype)
    for step in range(6):
        b = batch(300 + step)
        for module, opt in ((ref, opt_ref), (ours, opt_ours)):
            opt.zero_grad()
            ((module(b["input"], b["offsets"]) - target) ** 2).sum().backward()
            opt.step()
    assert ours.weight.grad.layout == torch.sparse_coo
    np.testing.assert_allclose(ours.weight.detach().numpy(), ref.weight.detach().numpy(),
                               rtol=1e-6, atol=1e-6)
    assert not torch.equal(ours.weight.detach(), init)  # it did train


@pytest.mark.parametrize("optimizer", ["sgd", "adagrad"])
def test_max_fused_optimizers_on_the_weight_equal_torch_issue18(optimizer: str) -> None:
    init = torch.from_numpy(np.random.default_rng(10).standard_normal((NUM, DIM)))
    ref = torch.nn.EmbeddingBag(NUM, DIM, mode="max", _weight=init.clone())
    ours = EmbeddingBag(NUM, DIM, mode="max", _weight=init.clone())
    train_with_fused_optimizer(ref, ours, optimizer, steps=5, seed=400)
    np.testing.assert_allclose(ours.weight.detach().numpy(), ref.weight.detach().numpy(),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.hypothesis
@settings(deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=8), st.integers(1, 5),
       st.integers(0, 2**31 - 1))
def test_max_gradient_property_issue18(lengths: list[int], dim: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    num = 7
    ids = torch.from_numpy(rng.integers(0, num, sum(lengths)))
    offsets = torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64))
    init = torch.from_numpy(rng.integers(-2, 3, (num, dim)).astype(np.float64))
    dy = torch.from_numpy(rng.standard_normal((len(lengths), dim)))
    w_ref, w_ours = init.clone().requires_grad_(), init.clone().requires_grad_()
    want = torch.nn.functional.embedding_bag(ids, w_ref, offsets, mode="max")
    got = embedding_bag(ids, w_ours, offsets, mode="max")
    assert got.shape == want.shape == (len(lengths), dim)
    assert torch.equal(got.detach(), want.detach())
    want.backward(dy)
    got.backward(dy)
    np.testing.assert_allclose(w_ours.grad.to_dense().numpy(), w_ref.grad.numpy(),
                               rtol=1e-12, atol=1e-12)


# ============================================================================ module API
def test_module_signature_repr_and_init() -> None:
    bag = EmbeddingBag(10, 3, mode="sum", padding_idx=-1)
    assert bag.padding_idx == 9 and bag.weight.shape == (10, 3) and bag.sparse
    assert torch.equal(bag.weight[9].detach(), torch.zeros(3))
    assert repr(bag) == "EmbeddingBag(10, 3, mode='sum', padding_idx=9, sparse=True)"
    assert bag.weight.requires_grad and [n for n, _ in bag.named_parameters()] == ["weight"]
    assert bag(torch.tensor([[1, 2]])).shape == (1, 3)
    assert EmbeddingBag(4, 2, dtype=torch.float64).weight.dtype == torch.float64
    frozen = EmbeddingBag.from_pretrained(torch.ones(4, 2))
    assert not frozen.weight.requires_grad and frozen.mode == "mean"
    out = frozen(torch.tensor([0, 1]), torch.tensor([0]))
    assert out.tolist() == [[1.0, 1.0]] and out.grad_fn is None
    trained = EmbeddingBag.from_pretrained(torch.ones(4, 2), freeze=False, mode="sum")
    assert trained.weight.requires_grad
    state = trained.state_dict()
    assert list(state) == ["weight"]


def test_function_apply_and_sparse_grad_round_trip() -> None:
    weight = torch.ones(4, 2, requires_grad=True)
    out = EmbeddingBagFunction.apply(weight, torch.tensor([[0, 2], [2, 3]]), None, None,
                                     "sum", False, None, True, False)
    out.sum().backward()
    assert weight.grad._indices().tolist() == [[0, 2, 3]]
    g = sparse_grad_from_torch(weight.grad)
    assert g.rows.tolist() == [0, 2, 3] and g.values.tolist() == [[1, 1], [2, 2], [1, 1]]
    back = sparse_grad_to_torch(g, 4)
    assert back.is_coalesced() and torch.equal(back.to_dense(), weight.grad.to_dense())
    assert back.values().data_ptr() == g.values.ctypes.data  # zero-copy
    unsorted = torch.sparse_coo_tensor([[3, 1, 3]], torch.ones(3, 2), (4, 2),
                                       check_invariants=True)
    assert sparse_grad_from_torch(unsorted).rows.tolist() == [1, 3]


# ====================================================== the device path (no GPU here)
def run_bag(kw: dict[str, Any], sparse: bool) -> list[Any]:
    """Forward and gradients of one embedding_bag call on CPU tensors."""
    b = batch(4)
    weight = torch.from_numpy(np.random.default_rng(4).standard_normal((NUM, DIM)))
    weight.requires_grad_()
    input, offsets, psw = b["input"], b["offsets"], b["per_sample_weights"].double()
    if kw.pop("two_d", False):
        input, offsets, psw = input[:12].reshape(4, 3), None, psw[:12].reshape(4, 3)
    psw = psw.requires_grad_() if kw.pop("psw", False) else None
    if kw.get("include_last_offset"):
        offsets = torch.cat([offsets, torch.tensor([len(input)])])
    out = embedding_bag(input, weight, offsets, sparse=sparse, per_sample_weights=psw, **kw)
    (out * torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)).sum() \
        .backward()
    grads = [weight.grad.to_dense() if sparse else weight.grad]
    return [out.detach(), *grads, *([] if psw is None else [psw.grad])]


@pytest.mark.parametrize("kw", [
    {"mode": "sum"}, {"mode": "mean", "include_last_offset": True},
    {"mode": "mean", "padding_idx": 3, "psw": True}, {"mode": "sum", "psw": True, "two_d": True},
    {"mode": "mean", "scale_grad_by_freq": True, "padding_idx": 2},
    {"mode": "max", "padding_idx": 3}, {"mode": "max", "two_d": True},
], ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
@pytest.mark.parametrize("sparse", [True, False])
def test_the_device_path_gives_the_cpu_results(kw: dict[str, Any], sparse: bool,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # CUDA tensors cannot exist here: the bridge's two DLPack conversions are replaced by
    # copies between CPU tensors and the stand-in CuPy's arrays, so everything between
    # them (bags, padding as null ids, lookup, backward, counts, sparse gradient) runs on
    # device arrays.
    from arrow_sparse import _backend
    from arrow_sparse.interop import torch as bridge
    from arrow_sparse.kernels import cuda
    from tests.cuda_emu.fake_cupy import emulated_cupy

    want = run_bag(dict(kw), sparse)
    real_array, real_tensor = bridge._array, bridge.torch_tensor
    with emulated_cupy() as cp:
        monkeypatch.setattr(bridge, "_array", lambda func, arg, torch_, tensor: cp.asarray(
            real_array(func, arg, torch_, tensor)))
        monkeypatch.setattr(bridge, "torch_tensor", lambda func, torch_, array, *what: real_tensor(
            func, torch_, array.get() if _backend.is_cupy_array(array) else array, *what))
        cp.stats.reset()
        got = run_bag(dict(kw), sparse)
        assert cp.stats.launches > 10  # the work ran on device arrays
        cuda.check_errors("test")  # no device check recorded anything
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-12)


# ================================================================================ errors
def test_errors() -> None:
    weight = torch.randn(5, 2)
    ids, offsets = torch.tensor([0, 1, 2]), torch.tensor([0, 2])
    meta = torch.empty(5, 2, device="meta")
    with pytest.raises(TypeError, match=r"embedding_bag: weight is on meta; arrow_sparse "
                                        r"works on CPU and CUDA tensors, move it first "
                                        r"\(weight.cpu"):
        embedding_bag(ids, meta, offsets)
    with pytest.raises(TypeError, match="embedding_bag: input is on meta"):
        embedding_bag(ids.to("meta"), weight, offsets)
    with pytest.raises(TypeError, match="EmbeddingBag: weight is on meta"):
        EmbeddingBag(5, 2, device="meta")
    with pytest.raises(ValueError, match=r"^embedding_bag: per_sample_weights are not "
                       r"supported with mode='max' \(as in PyTorch\); use 'sum' or 'mean'$"):
        embedding_bag(ids, weight, offsets, mode="max", per_sample_weights=torch.ones(3))
    with pytest.raises(ValueError, match="^embedding_bag: per_sample_weights are not supported"):
        EmbeddingBag(5, 2, mode="max")(ids, offsets, torch.ones(3))
    weight = weight.detach()
    with pytest.raises(ValueError, match="embedding_bag: max_norm is not supported"):
        embedding_bag(ids, weight, offsets, max_norm=1.0)
    with pytest.raises(ValueError, match="EmbeddingBag: max_norm is not supported"):
        EmbeddingBag(5, 2, max_norm=1.0)
    with pytest.raises(ValueError, match="scale_grad_by_freq is not supported with mode='max'"):
        EmbeddingBag(5, 2, mode="max", scale_grad_by_freq=True)
    with pytest.raises(ValueError, match="embedding_bag: mode must be 'sum', 'mean' or 'max'"):
        embedding_bag(ids, weight, offsets, mode="min")
    with pytest.raises(ValueError, match="offsets must be None when input is 2-D"):
        embedding_bag(ids.reshape(1, 3), weight, offsets)
    with pytest.raises(ValueError, match="offsets is required when input is 1-D"):
        embedding_bag(ids, weight)
    with pytest.raises(ValueError, match=r"input must be 1-D \(with offsets\) or 2-D"):
        embedding_bag(ids.reshape(1, 1, 3), weight)
    with pytest.raises(TypeError, match="embedding_bag: input must be an integer tensor"):
        embedding_bag(ids.float(), weight, offsets)
    with pytest.raises(TypeError, match="embedding_bag: input must be a torch.Tensor, got list"):
        embedding_bag([0, 1], weight, offsets)
    with pytest.raises(TypeError, match="embedding_bag: weight must be float32 or float64"):
        embedding_bag(ids, weight.half(), offsets)
    with pytest.raises(TypeError, match="embedding_bag: weight must be float32 or float64"):
        embedding_bag(ids, weight.long(), offsets)
    with pytest.raises(IndexError, match=r"embedding_bag: input out of range \[0, 5\) "
                                         r"\(first at position 1: 7\)"):
        embedding_bag(torch.tensor([0, 7]), weight, torch.tensor([0]))
    with pytest.raises(ValueError, match="embedding_bag: offsets must be non-decreasing"):
        embedding_bag(ids, weight, torch.tensor([2, 1]))
    with pytest.raises(ValueError, match=r"per_sample_weights must have the input's shape \(3,\)"):
        embedding_bag(ids, weight, offsets, mode="sum", per_sample_weights=torch.ones(2))
    with pytest.raises(TypeError, match="per_sample_weights must be a float tensor"):
        embedding_bag(ids, weight, offsets, mode="sum", per_sample_weights=torch.ones(3).long())
    with pytest.raises(ValueError, match=r"padding_idx must be within \[-5, 5\), got 5"):
        embedding_bag(ids, weight, offsets, padding_idx=5)
    with pytest.raises(TypeError, match="padding_idx must be an integer or None"):
        EmbeddingBag(5, 2, padding_idx=1.0)
    with pytest.raises(ValueError, match=r"EmbeddingBag: _weight must have shape \(5, 2\)"):
        EmbeddingBag(5, 2, _weight=torch.zeros(5, 3))
    with pytest.raises(TypeError, match="sparse_grad_from_torch: grad must be a sparse COO"):
        sparse_grad_from_torch(torch.zeros(3, 2))
    with pytest.raises(TypeError, match="one sparse and one dense dimension"):
        sparse_grad_from_torch(torch.zeros(3, 2).to_sparse())
    with pytest.raises(IndexError, match=r"sparse_grad_to_torch: grad.rows out of range \[0, 2\)"):
        sparse_grad_to_torch(emb.SparseGrad(np.array([3]), np.ones((1, 2))), 2)
    with pytest.raises(TypeError, match="sparse_grad_to_torch: grad must be a SparseGrad"):
        sparse_grad_to_torch(torch.zeros(2), 2)
    with pytest.raises(ArrowSparseError):  # every error above is also an ArrowSparseError
        embedding_bag(ids, weight, offsets, mode="min")


def test_missing_torch_raises_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    hint = r"^torch is required .* pip install 'arrow-sparse\[torch\]'"
    with pytest.raises(ModuleNotFoundError, match=hint):
        embedding_bag([0], [[0.0]], [0])
    with pytest.raises(ModuleNotFoundError, match=hint):
        sparse_grad_to_torch(emb.SparseGrad(np.array([0]), np.ones((1, 1))), 1)


def test_module_classes_are_built_on_first_use_only() -> None:
    import subprocess

    code = ("import sys; sys.modules['torch'] = None\n"
            "import arrow_sparse.interop.torch as t\n"
            "try:\n    t.EmbeddingBag\nexcept ModuleNotFoundError as e:\n"
            "    print('arrow-sparse[torch]' in str(e))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True"]
    import arrow_sparse.interop.torch as module

    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        module.Nope  # noqa: B018
