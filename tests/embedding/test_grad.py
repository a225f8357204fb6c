"""Tests of ``arrow_sparse.embedding.grad``: ``SparseGrad``, ``lookup_backward`` and
``lookup_backward_weights``.

Each against the loop oracle (``_reference.py``), central differences and EmbeddingTables.jl's
pullback on every backend of the ``backend`` fixture, PyTorch's sparse ``EmbeddingBag``
gradient where torch is installed, then the errors, the property test (Hypothesis, on the
CPU: the example tests beside it cover the device paths) and the device checks: the public
functions through the emulator against the CPU kernels, and the device errors.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numba
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse import embedding as emb
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cuda import _launch
from tests.cuda_emu.emu import Emulator

from ..conftest import from_backend, on_device, to_backend
from ._helpers import (
    AT_ONCE,
    CAFFE2,
    SKEWS,
    cpu_and_emu,
    grad_on_host,
    random_bags,
    same_bits,
    use,
)
from ._reference import (
    ref_adagrad,
    ref_backward,
    ref_backward_max,
    ref_lookup,
    ref_max_argmax,
    ref_piecewise_sum,
    ref_sgd,
)


# ======================================================================= SparseGrad
def test_sparse_grad_coalesce_and_arrow() -> None:
    g = emb.SparseGrad(np.array([3, 1, 3, 0]), np.array([[1.0, 2], [3, 4], [5, 6], [7, 8]],
                                                         np.float32))
    assert not g.is_coalesced
    c = g.coalesce()
    np.testing.assert_array_equal(c.rows, [0, 1, 3])
    np.testing.assert_array_equal(c.values, [[7, 8], [3, 4], [6, 8]])
    assert c.coalesce() is c
    batch = c.to_arrow()
    assert batch.schema.field("row").type == pa.int64()
    assert batch.schema.field("grad").type == pa.list_(pa.float32(), 2)
    back = emb.SparseGrad.from_arrow(batch)
    np.testing.assert_array_equal(back.rows, c.rows)
    np.testing.assert_array_equal(back.values, c.values)
    assert back.values.ctypes.data == c.values.ctypes.data  # zero-copy both ways
    with pytest.raises(AttributeError):
        c.rows = np.array([1])  # type: ignore[misc]
    with pytest.raises(ValueError, match=r"SparseGrad: values must have shape \(2, dim\)"):
        emb.SparseGrad(np.array([0, 1]), np.zeros((3, 2)))
    with pytest.raises(TypeError, match="values must have a float dtype"):
        emb.SparseGrad(np.array([0]), np.zeros((1, 2), np.int64))
    with pytest.raises(ValueError, match="batch has no 'grad' column"):
        emb.SparseGrad.from_arrow(pa.record_batch({"row": [1]}))


def test_sparse_grad_dim_zero_round_trips_to_arrow() -> None:
    g = emb.SparseGrad(np.array([1, 4]), np.zeros((2, 0), np.float32))
    batch = g.to_arrow()
    assert batch.schema.field("grad").type == pa.list_(pa.float32(), 0)
    back = emb.SparseGrad.from_arrow(batch)
    assert back.rows.tolist() == [1, 4] and back.values.shape == (2, 0)


def test_sparse_grad_coalesce_on_every_backend(backend: str) -> None:
    rows, values = np.array([3, 1, 3, 0, 1]), np.arange(10.0, dtype=np.float32).reshape(5, 2)
    g = emb.SparseGrad(*to_backend([rows, values], backend))
    assert g.device == ("cuda:0" if on_device(backend) else "cpu")
    c = g.coalesce()
    assert c.is_coalesced and c.coalesce() is c
    got_rows, got_values = grad_on_host(c, backend)
    np.testing.assert_array_equal(got_rows, [0, 1, 3])
    np.testing.assert_array_equal(got_values, [[6, 7], [2 + 8, 3 + 9], [0 + 4, 1 + 5]])
    assert got_values.dtype == np.float32
    empty = emb.SparseGrad(*to_backend([np.zeros(0, np.int64), np.zeros((0, 2))], backend))
    assert len(grad_on_host(empty.coalesce(), backend)[0]) == 0


def test_sparse_grad_coalesce_through_the_emulator_matches_cpu(cuda_emu: Emulator) -> None:
    rng = np.random.default_rng(5)
    rng.standard_normal((12, 6))  # the draws of the lookup's own check, kept in step
    rng.integers(0, 12, size=40)
    grad = rng.standard_normal((5, 6)).astype(np.float32)
    grad_rows = emb.SparseGrad(np.array([4, 1, 4, 0, 1]), grad)
    use(None)
    expected = grad_rows.coalesce()
    use(cuda_emu)
    got = grad_rows.coalesce()
    use(None)
    np.testing.assert_array_equal(got.rows, expected.rows)
    same_bits(expected.values, got.values)


def test_sparse_grad_on_the_device(cp: ModuleType) -> None:
    g = emb.SparseGrad(cp.asarray(np.array([2, 0])), cp.asarray(np.ones((2, 3))))
    assert g.device == "cuda:0" and not g.is_coalesced  # read back: one synchronisation
    with pytest.raises(NotImplementedError, match=r"^SparseGrad.to_arrow: the gradient is on "
                       r"cuda:0 .* g.to_device\('cpu'\).to_arrow\(\)$"):
        g.to_arrow()
    host = g.to_device("cpu")
    assert host.device == "cpu" and host.rows.tolist() == [2, 0]
    back = host.coalesce().to_device("cuda")
    cp.stats.reset()
    assert back.is_coalesced and back.coalesce() is back and cp.stats.syncs == 0
    assert back.to_device("cuda:0") is back and back.to_device("cuda:1").device == "cuda:1"


def test_sparse_grad_refuses_host_and_device_arrays_together(cp: ModuleType) -> None:
    with pytest.raises(TypeError, match="^SparseGrad: values is a host.*move them to one "
                       "device first"):
        emb.SparseGrad(cp.asarray(np.array([0])), np.ones((1, 2)))


# ================================================================== lookup_backward
def test_embeddingtables_jl_pullback_and_update(backend: str) -> None:
    table = to_backend(np.zeros((4, 4), np.float32), backend)
    inds = np.array([1, 3, 4]) - 1
    np.testing.assert_array_equal(from_backend(emb.lookup(table, to_backend(inds, backend)),
                                               backend), np.zeros((3, 4)))
    adjoint = np.array([[1, 5, 9], [2, 6, 10], [3, 7, 11], [4, 8, 12]], np.float32).T
    grad = emb.lookup_backward(to_backend(adjoint, backend), to_backend(inds, backend),
                               num_embeddings=4)
    rows, values = grad_on_host(grad, backend)
    np.testing.assert_array_equal(rows, inds)
    np.testing.assert_array_equal(values, adjoint)
    emb.sgd(table, grad, 0.1)
    expected = np.array([[-0.1, 0.0, -0.5, -0.9], [-0.2, 0.0, -0.6, -1.0],
                         [-0.3, 0.0, -0.7, -1.1], [-0.4, 0.0, -0.8, -1.2]], np.float32).T
    np.testing.assert_allclose(from_backend(table, backend), expected, rtol=1e-6)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_lookup_backward_matches_reference(mode: str, backend: str) -> None:
    rng = np.random.default_rng(3)
    bags = random_bags(rng, 30, 12)
    dy = rng.standard_normal((30, 4))
    flat = np.array([i for bag in bags for i in bag], np.int64)
    offsets = np.cumsum([0] + [len(b) for b in bags])
    rows, values = ref_backward(dy, bags, 12, mode)
    for ids, kw in ((flat, {"offsets": offsets}), (asp.Jagged.from_list(bags), {}),
                    (pa.array(bags, pa.list_(pa.int64())), {}),
                    (np.r_[11, flat], {"offsets": offsets + 1})):
        g = emb.lookup_backward(to_backend(dy, backend), to_backend(ids, backend), mode=mode,
                                num_embeddings=12,
                                **{k: to_backend(x, backend) for k, x in kw.items()})
        assert g.is_coalesced and g.values.dtype == dy.dtype
        got_rows, got_values = grad_on_host(g, backend)
        np.testing.assert_array_equal(got_rows, rows)
        np.testing.assert_allclose(got_values, values, rtol=1e-12)


def test_lookup_backward_2d_and_weights(backend: str) -> None:
    rng = np.random.default_rng(4)
    ids = rng.integers(0, 6, (5, 3))
    dy = rng.standard_normal((5, 2))
    w = rng.random((5, 3))
    bags = ids.tolist()
    d_dy, d_ids = to_backend(dy, backend), to_backend(ids, backend)
    rows, values = ref_backward(dy, bags, 6, "sum", w.tolist())
    g = emb.lookup_backward(d_dy, d_ids, per_sample_weights=to_backend(w, backend),
                            num_embeddings=6)
    got_rows, got_values = grad_on_host(g, backend)
    np.testing.assert_array_equal(got_rows, rows)
    np.testing.assert_allclose(got_values, values)
    rows, values = ref_backward(dy, bags, 6, "mean")
    g = emb.lookup_backward(d_dy, d_ids, mode="mean", num_embeddings=6)
    np.testing.assert_allclose(grad_on_host(g, backend)[1], values)
    # Arrow weights next to Arrow ids (the item_scores column next to item_ids)
    g = emb.lookup_backward(d_dy, to_backend(pa.array(bags), backend),
                            per_sample_weights=to_backend(pa.array(w.tolist()), backend),
                            num_embeddings=6)
    np.testing.assert_allclose(grad_on_host(g, backend)[1],
                               ref_backward(dy, bags, 6, "sum", w.tolist())[1])


def test_lookup_backward_nulls_are_skipped(backend: str) -> None:
    ids = to_backend(pa.array([[1, None, 1], None, [2]]), backend)
    dy = to_backend(np.array([[1.0], [100.0], [10.0]]), backend)
    for weights, expected in ((None, [1.0, 10.0]), (pa.array([[2.0, None, 4.0], None, [0.5]]),
                                                    [3.0, 5.0])):
        g = emb.lookup_backward(dy, ids, mode="mean", num_embeddings=3,
                                per_sample_weights=to_backend(weights, backend))
        rows, values = grad_on_host(g, backend)
        np.testing.assert_array_equal(rows, [1, 2])
        np.testing.assert_allclose(values.ravel(), expected)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_lookup_backward_sliced_lists_on_every_backend(mode: str, backend: str) -> None:
    # offsets[0] > 0, a null bag, an empty bag and a null id, with sliced weights
    arr = pa.array([[9], [1, 2, 3], None, [], [2, 4, 6, 7], [3, None, 6]]).slice(1)
    weights = pa.array([[0.0], [1.0, 2.0, 3.0], None, [], [1.0] * 4, [2.0, None, 0.5]]).slice(1)
    bags = [[1, 2, 3], [], [], [2, 4, 6, 7], [3, 6]]
    dy = np.arange(10.0).reshape(5, 2) - 4
    for w, wbags in ((None, None), (weights, [[1.0, 2.0, 3.0], [], [], [1.0] * 4, [2.0, 0.5]])):
        g = emb.lookup_backward(to_backend(dy, backend), to_backend(arr, backend), mode=mode,
                                per_sample_weights=to_backend(w, backend), num_embeddings=8)
        rows, values = ref_backward(dy, bags, 8, mode, wbags)
        got_rows, got_values = grad_on_host(g, backend)
        np.testing.assert_array_equal(got_rows, rows)
        np.testing.assert_allclose(got_values, values, rtol=1e-12)
    if on_device(backend):
        cuda.check_errors("test")  # no device check recorded anything


def test_lookup_and_backward_read_weights_the_same_way() -> None:
    rng = np.random.default_rng(12)
    table = rng.standard_normal((9, 3))
    ids2 = rng.integers(0, 9, (4, 3))
    w2 = rng.random((4, 3))
    bags = ids2.tolist()
    # 2-D ids with weights: pooled rows of weighted ids, and the matching backward
    np.testing.assert_allclose(emb.lookup(table, ids2, per_sample_weights=w2),
                               ref_lookup(table, bags, "sum", w2.tolist()))
    np.testing.assert_allclose(emb.lookup(table, ids2, mode="mean", per_sample_weights=w2),
                               ref_lookup(table, bags, "mean", w2.tolist()))
    # 1-D ids with weights: each row scaled
    ids1, w1 = ids2[0], w2[0]
    np.testing.assert_allclose(emb.lookup(table, ids1, per_sample_weights=w1),
                               table[ids1] * w1[:, None])
    dy = rng.standard_normal((3, 3))
    g = emb.lookup_backward(dy, ids1, per_sample_weights=w1, num_embeddings=9)
    np.testing.assert_allclose(g.values, ref_backward(dy, [[i] for i in ids1], 9, "sum",
                                                      [[x] for x in w1])[1])
    # null weights: rejected by both where the id is read, ignored where the id is null
    ids = pa.array([[0, 1], None, [2, None]])
    bad = pa.array([[1.0, None], None, [1.0, None]])
    for call in (lambda: emb.lookup(table, ids, per_sample_weights=bad),
                 lambda: emb.lookup_backward(np.ones((3, 3)), ids, per_sample_weights=bad,
                                             num_embeddings=9)):
        with pytest.raises(ValueError, match=r"per_sample_weights must not be null where the "
                                             r"id is not \(first at position 1: None\)"):
            call()
    ok = pa.array([[1.0, 2.0], None, [3.0, None]])
    got = emb.lookup(table, ids, per_sample_weights=ok, out=np.empty((3, 3)))
    np.testing.assert_allclose(got, [table[0] + 2 * table[1], np.zeros(3), 3 * table[2]])
    g = emb.lookup_backward(np.ones((3, 3)), ids, per_sample_weights=ok, num_embeddings=9)
    np.testing.assert_array_equal(g.rows, [0, 1, 2])
    np.testing.assert_allclose(g.values[:, 0], [1.0, 2.0, 3.0])


def test_lookup_backward_is_deterministic_with_duplicates(backend: str) -> None:
    rng = np.random.default_rng(10)
    ids = rng.integers(0, 5, 5000)  # heavy duplication
    dy = rng.standard_normal((5000, 3)).astype(np.float32)
    args = to_backend([dy, ids], backend)
    a = grad_on_host(emb.lookup_backward(*args, num_embeddings=5), backend)[1]
    b = grad_on_host(emb.lookup_backward(*args, num_embeddings=5), backend)[1]
    np.testing.assert_array_equal(a, b)
    expected = np.zeros((5, 3), np.float32)
    for i, row in zip(ids, dy, strict=True):  # sequential float32 sums, input order
        expected[i] += row
    if backend != "cpu":  # runs of ~1,000 ids: split by elements, pieces added in order
        expected = np.stack([ref_piecewise_sum(dy[ids == i], _launch.PIECE) for i in range(5)])
    np.testing.assert_array_equal(a, expected)


@pytest.mark.parametrize("skew", list(SKEWS))
@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_lookup_backward_under_skew_issue_13(backend: str, skew: str, mode: str) -> None:
    # Against a float64 numpy oracle (np.add.at): integer-valued float32 gradients of
    # sums are exact in any order, so they equal it bit for bit; the others lie within
    # the bound of any float32 sum of n terms, n * eps * sum(|term|) per element (the
    # host adds left to right, the device in pieces: both within it). SparseGrad.coalesce
    # of the per-id gradient (one row per id, unsorted) gives the same rows and sums.
    rng = np.random.default_rng(13)
    ids, offsets = SKEWS[skew](rng)
    bags, num = len(offsets) - 1, 50
    lengths = np.diff(offsets)
    bag = np.repeat(np.arange(bags), lengths)
    scale = 1.0 / np.maximum(lengths, 1)[bag] if mode == "mean" else np.ones(len(ids))
    rows = np.unique(ids)
    run = np.bincount(ids, minlength=num)[rows, None]
    eps = np.finfo(np.float32).eps
    for whole in (True, False):
        dy = (rng.integers(-4, 5, (bags, 3)) if whole
              else rng.standard_normal((bags, 3))).astype(np.float32)
        terms = (scale[:, None] * dy[bag].astype(np.float64))
        dense, size = np.zeros((num, 3)), np.zeros((num, 3))
        np.add.at(dense, ids, terms)
        np.add.at(size, ids, np.abs(terms))
        g = emb.lookup_backward(*to_backend([dy, ids], backend),
                                offsets=to_backend(offsets, backend), mode=mode,
                                num_embeddings=num)
        got_rows, got = grad_on_host(g, backend)
        np.testing.assert_array_equal(got_rows, rows)
        assert got.dtype == np.float32
        if whole and mode == "sum":
            np.testing.assert_array_equal(got, dense[rows].astype(np.float32))
        else:
            assert (np.abs(got - dense[rows]) <= run * eps * size[rows]).all()
    per_id = to_backend([ids, terms.astype(np.float32)], backend)
    c_rows, c_values = grad_on_host(emb.SparseGrad(*per_id).coalesce(), backend)
    np.testing.assert_array_equal(c_rows, rows)
    assert (np.abs(c_values - dense[rows]) <= run * eps * size[rows]).all()


def test_backward_is_deterministic_on_the_parallel_kernels() -> None:
    rng = np.random.default_rng(16)
    ids = rng.integers(0, 50, 200_000)  # 800k elements of work: the parallel twins
    dy = rng.standard_normal((200_000, 4)).astype(np.float32)
    before = numba.get_num_threads()
    results = []
    try:
        for threads in (1, before):
            numba.set_num_threads(threads)
            g = emb.lookup_backward(dy, ids, num_embeddings=50)
            table, state = np.ones((50, 4), np.float32), np.zeros((50, 4), np.float32)
            emb.adagrad(table, state, g, 0.1)
            results.append((g.values, table))
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_lookup_backward_matches_torch(mode: str) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    num, dim = 40, 6
    bags = random_bags(rng, 25, num, max_len=8)
    flat = np.array([i for bag in bags for i in bag], np.int64)
    offsets = np.cumsum([0] + [len(b) for b in bags])
    dy = rng.standard_normal((25, dim)).astype(np.float32)
    bag_mod = torch.nn.EmbeddingBag(num, dim, mode=mode, sparse=True)
    out = bag_mod(torch.from_numpy(flat), torch.from_numpy(offsets[:-1]))
    out.backward(torch.from_numpy(dy))
    ref = bag_mod.weight.grad.coalesce()
    g = emb.lookup_backward(dy, flat, offsets=offsets, mode=mode, num_embeddings=num)
    np.testing.assert_array_equal(g.rows, ref.indices()[0].numpy())
    np.testing.assert_allclose(g.values, ref.values().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.hypothesis
@given(st.lists(st.lists(st.integers(0, 7), max_size=6), max_size=10),
       st.sampled_from(["sum", "mean"]), st.integers(1, 3))
def test_lookup_backward_property(bags: list[list[int]], mode: str, dim: int) -> None:
    dy = np.arange(len(bags) * dim, dtype=np.float64).reshape(len(bags), dim) - 3.5
    rows, values = ref_backward(dy, bags, 8, mode)
    g = emb.lookup_backward(dy, asp.Jagged.from_list(bags) if bags else
                            np.zeros(0, np.int64), offsets=None if bags else [0],
                            mode=mode, num_embeddings=8)
    np.testing.assert_array_equal(g.rows, rows)
    np.testing.assert_allclose(g.values, values.reshape(len(rows), dim), atol=1e-12)
    # mass conservation: each bag hands out len(bag) (sum) or 1 (mean) copies of dy[b]
    share = [len(bag) if mode == "sum" else float(bool(bag)) for bag in bags]
    np.testing.assert_allclose(g.values.sum(axis=0),
                               (np.array(share)[:, None] * dy).sum(axis=0) if bags
                               else np.zeros(dim), atol=1e-9)


def test_lookup_backward_errors() -> None:
    dy = np.zeros((3, 2))
    ids = asp.Jagged.from_list(CAFFE2)
    with pytest.raises(ValueError, match=r"^lookup_backward: mode='max' needs argmax=, the ids "
                       r"the forward's max came from \(lookup\(\.\.\., mode='max', "
                       r"return_argmax=True\) returns them\)$"):
        emb.lookup_backward(dy, ids, mode="max", num_embeddings=8)
    with pytest.raises(IndexError, match=r"lookup_backward: ids out of range \[0, 7\)"):
        emb.lookup_backward(dy, ids, num_embeddings=7)
    with pytest.raises(ValueError, match=r"grad_out must have one row per lookup output \(3\)"):
        emb.lookup_backward(np.zeros((2, 2)), ids, num_embeddings=8)
    with pytest.raises(TypeError, match="grad_out must be a 2-D float32 or float64 array"):
        emb.lookup_backward(np.zeros((3, 2), np.int64), ids, num_embeddings=8)
    with pytest.raises(ValueError, match="offsets must not be given with list ids"):
        emb.lookup_backward(dy, ids, offsets=[0, 1], num_embeddings=8)
    with pytest.raises(TypeError, match="lookup_backward: per_sample_weights must be a Jagged"):
        emb.lookup_backward(dy, ids, per_sample_weights=[1.0], num_embeddings=8)
    with pytest.raises(ValueError, match=r"lookup_backward: per_sample_weights must have the "
                                         r"shape of ids \(9,\)"):
        emb.lookup_backward(dy, ids.values, offsets=ids.offsets, per_sample_weights=[1.0],
                            num_embeddings=8)


def test_lookup_backward_through_the_emulator_matches_cpu(cuda_emu: Emulator) -> None:
    rng = np.random.default_rng(5)
    rng.standard_normal((12, 6))  # the draws of the lookup's own check, kept in step
    rng.integers(0, 12, size=40)
    bags = asp.Jagged.from_list([[1, 2, 3], [], [2, 4, 6, 7], [3, 6], [11]])
    grad = rng.standard_normal((5, 6)).astype(np.float32)
    weights = asp.Jagged.from_list([[0.5, 1.0, 2.0], [], [1.0, -1.0, 3.0, 0.25], [2.0, 2.0],
                                    [1.5]])
    for mode, psw in (("sum", None), ("mean", None), ("sum", weights)):
        expected, got, launches = cpu_and_emu(
            cuda_emu, emb.lookup_backward, grad, bags, num_embeddings=12, mode=mode,
            per_sample_weights=psw)
        np.testing.assert_array_equal(got.rows, expected.rows)
        same_bits(expected.values, got.values)
        assert launches == ["run_heads<long long>", "compact_runs<long long>",
                            "coalesce_pieces<float, double>", "coalesce_sorted<float, double>"]


def test_device_backward_checks_are_raised_at_once(cp: ModuleType) -> None:
    dy = cp.asarray(np.ones((3, 2)))
    with pytest.raises(IndexError, match="^lookup_backward: ids out of range of the table"
                       + AT_ONCE.format(2)):
        emb.lookup_backward(dy, cp.asarray(np.array([0, 1, 7])), num_embeddings=4)
    with pytest.raises(ValueError, match="^lookup_backward: offsets must be non-decreasing"
                       + AT_ONCE.format(2)):
        emb.lookup_backward(dy, cp.asarray(np.array([0, 1, 2])), num_embeddings=4,
                            offsets=cp.asarray(np.array([0, 2, 1, 3])))


def test_lookup_backward_refuses_host_and_device_inputs_together(cp: ModuleType) -> None:
    with pytest.raises(TypeError, match="^lookup_backward: ids is a.*move them to one "
                       "device first"):
        emb.lookup_backward(cp.asarray(np.ones((1, 2))), [0], num_embeddings=3)


# ================================================== issue 18: lookup_backward, mode="max"
def _max_case(seed: int, num: int = 24, bags: int = 20, dim: int = 3
              ) -> tuple[np.ndarray, list[list[int]], np.ndarray]:
    """A table of few values (ties), bags with repeats and empty ones, a gradient."""
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 4, (num, dim)).astype(np.float64)
    return table, random_bags(rng, bags, num, max_len=8), rng.standard_normal((bags, dim))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("offsets_dtype", [np.int32, np.int64])
def test_lookup_backward_max_matches_reference_issue18(dtype: Any, offsets_dtype: Any,
                                                       backend: str) -> None:
    table, bags, dy = _max_case(18)
    table, dy = table.astype(dtype), dy.astype(dtype)
    flat = np.array([i for bag in bags for i in bag], np.int64)
    offsets = np.cumsum([0] + [len(b) for b in bags]).astype(offsets_dtype)
    _, argmax = ref_max_argmax(table, bags)
    rows, values = ref_backward_max(dy, bags, argmax, 24)
    assert len(rows) < len({i for bag in bags for i in bag})  # some ids won nothing
    assert not all(bags) and any(len(set(b)) < len(b) for b in bags)
    t = to_backend(table, backend)
    for ids, kw in ((flat, {"offsets": offsets}), (asp.Jagged.from_list(bags), {}),
                    (pa.array(bags, pa.list_(pa.int64())), {})):
        d_ids = to_backend(ids, backend)
        d_kw = {k: to_backend(x, backend) for k, x in kw.items()}
        _, arg = emb.lookup(t, d_ids, mode="max", return_argmax=True, **d_kw)
        np.testing.assert_array_equal(from_backend(arg, backend), argmax)
        g = emb.lookup_backward(to_backend(dy, backend), d_ids, mode="max", argmax=arg,
                                num_embeddings=24, **d_kw)
        assert g.is_coalesced and g.values.dtype == dtype
        got_rows, got_values = grad_on_host(g, backend)
        np.testing.assert_array_equal(got_rows, rows)
        np.testing.assert_allclose(got_values, values, rtol=1e-6 if dtype == np.float32
                                   else 1e-12)
        # every element of a non-empty bag went to exactly one row
        full = np.array([bool(b) for b in bags])
        np.testing.assert_allclose(got_values.sum(axis=0), dy[full].sum(axis=0),
                                   rtol=1e-5, atol=1e-5)


def test_lookup_backward_max_nulls_2d_and_sliced_issue18(backend: str) -> None:
    table = np.array([[1.0, 9.0], [4.0, 0.0], [2.0, 5.0], [7.0, 1.0]])
    t = to_backend(table, backend)
    dy = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    ids = pa.array([[0, None, 3], None, [None], [1, 2, 1]])
    d_ids = to_backend(ids, backend)
    _, arg = emb.lookup(t, d_ids, mode="max", return_argmax=True)
    g = emb.lookup_backward(to_backend(dy, backend), d_ids, mode="max", argmax=arg,
                            num_embeddings=4)
    rows, values = grad_on_host(g, backend)
    np.testing.assert_array_equal(rows, [0, 1, 2, 3])  # null bags, null ids: nothing
    np.testing.assert_array_equal(values, [[0, 2], [7, 0], [0, 8], [1, 0]])
    ids2 = np.array([[0, 1], [3, 2], [1, 1]])
    _, arg = emb.lookup(t, to_backend(ids2, backend), mode="max", return_argmax=True)
    g = emb.lookup_backward(to_backend(dy[:3], backend), to_backend(ids2, backend),
                            mode="max", argmax=arg, num_embeddings=4)
    rows, values = grad_on_host(g, backend)
    np.testing.assert_array_equal(rows, [0, 1, 2, 3])
    np.testing.assert_array_equal(values, [[0, 2], [1 + 5, 6], [0, 4], [3, 0]])
    sliced = pa.array([[3], [0, 1], [2, 3]]).slice(1)
    _, arg = emb.lookup(t, to_backend(sliced, backend), mode="max", return_argmax=True)
    g = emb.lookup_backward(to_backend(dy[:2], backend), to_backend(sliced, backend),
                            mode="max", argmax=arg, num_embeddings=4)
    rows, values = grad_on_host(g, backend)
    np.testing.assert_array_equal(rows, [0, 1, 2, 3])
    np.testing.assert_array_equal(values, [[0, 2], [1, 0], [0, 4], [3, 0]])


def test_lookup_backward_max_then_sgd_and_adagrad_issue18(backend: str) -> None:
    table, bags, dy = _max_case(5)
    ids = asp.Jagged.from_list(bags)
    _, argmax = ref_max_argmax(table, bags)
    rows, values = ref_backward_max(dy, bags, argmax, 24)
    want_sgd, want_ada, state = table.copy(), table.copy(), np.zeros_like(table)
    ref_sgd(want_sgd, rows, values, 0.1)
    ref_adagrad(want_ada, state, rows, values, 0.1, 1e-10)
    got_sgd, got_ada = to_backend(table.copy(), backend), to_backend(table.copy(), backend)
    got_state = to_backend(np.zeros_like(table), backend)
    _, arg = emb.lookup(got_sgd, to_backend(ids, backend), mode="max", return_argmax=True)
    g = emb.lookup_backward(to_backend(dy, backend), to_backend(ids, backend), mode="max",
                            argmax=arg, num_embeddings=24)
    emb.sgd(got_sgd, g, 0.1)
    emb.adagrad(got_ada, got_state, g, 0.1, 1e-10)
    np.testing.assert_allclose(from_backend(got_sgd, backend), want_sgd, rtol=1e-12)
    np.testing.assert_allclose(from_backend(got_ada, backend), want_ada, rtol=1e-12)
    np.testing.assert_allclose(from_backend(got_state, backend), state, rtol=1e-12)


def test_lookup_backward_max_errors_issue18() -> None:
    dy = np.ones((3, 2))
    ids = asp.Jagged.from_list([[0, 1], [], [2]])
    arg = np.array([[0, 1], [-1, -1], [2, 2]])
    with pytest.raises(ValueError, match=r"^lookup_backward: argmax is only used with "
                                         r"mode='max', got mode='sum'$"):
        emb.lookup_backward(dy, ids, argmax=arg, num_embeddings=3)
    with pytest.raises(ValueError, match=r"^lookup_backward: per_sample_weights are not "
                                         r"supported with mode='max'"):
        emb.lookup_backward(dy, ids, mode="max", argmax=arg, num_embeddings=3,
                            per_sample_weights=asp.Jagged.from_list([[1.0, 1.0], [], [1.0]]))
    with pytest.raises(ValueError, match=r"^lookup_backward: argmax must have the shape of "
                                         r"grad_out \(3, 2\), got \(3, 1\)$"):
        emb.lookup_backward(dy, ids, mode="max", argmax=arg[:, :1], num_embeddings=3)
    with pytest.raises(TypeError, match="^lookup_backward: argmax must have an integer dtype"):
        emb.lookup_backward(dy, ids, mode="max", argmax=arg * 1.0, num_embeddings=3)
    for bad in ([[0, 2], [-1, -1], [2, 2]], [[0, -1], [-1, -1], [2, 2]],
                [[0, 1], [-1, -1], [2, 7]]):
        with pytest.raises(ValueError, match=r"^lookup_backward: argmax must hold, for every "
                           r"column of every non-empty bag, an id of that bag \(as "
                           r"lookup\(\.\.\., return_argmax=True\) returns\); 1 of 4 do not$"):
            emb.lookup_backward(dy, ids, mode="max", argmax=np.array(bad), num_embeddings=3)
    # entries of empty bags are not read (PyTorch writes 0 there)
    g = emb.lookup_backward(dy, ids, mode="max", argmax=np.array([[0, 1], [0, 0], [2, 2]]),
                            num_embeddings=3)
    np.testing.assert_array_equal(g.values, [[1, 0], [0, 1], [1, 1]])


def test_lookup_backward_max_through_the_emulator_matches_cpu_issue18(
        cuda_emu: Emulator) -> None:
    rng = np.random.default_rng(9)
    table = rng.integers(0, 3, (25, 40)).astype(np.float32)
    ids = asp.Jagged.from_list(random_bags(rng, 60, 25, max_len=10))
    dy = rng.standard_normal((60, 40)).astype(np.float32)
    _, arg = emb.lookup(table, ids, mode="max", return_argmax=True)
    want, got, launches = cpu_and_emu(cuda_emu, emb.lookup_backward, dy, ids, mode="max",
                                      argmax=arg, num_embeddings=25)
    assert launches == ["run_heads<long long>", "compact_runs<long long>",
                        "coalesce_max<float>"]
    np.testing.assert_array_equal(got.rows, want.rows)
    same_bits(want.values, got.values)  # the same additions in the same order


def test_device_lookup_backward_max_synchronises_twice_issue18(cp: ModuleType) -> None:
    table, bags, dy = _max_case(3)
    ids = asp.Jagged.from_list(bags).to_device("cuda")
    _, arg = emb.lookup(cp.asarray(table), ids, mode="max", return_argmax=True)
    cp.stats.reset()
    g = emb.lookup_backward(cp.asarray(dy), ids, mode="max", argmax=arg, num_embeddings=24)
    assert cp.stats.syncs == 2  # the sort, and the check with the number of rows kept
    rows, values = ref_backward_max(dy, bags, ref_max_argmax(table, bags)[1], 24)
    np.testing.assert_array_equal(g.rows.get(), rows)
    np.testing.assert_allclose(g.values.get(), values, rtol=1e-12)


@pytest.mark.hypothesis
@given(st.lists(st.lists(st.integers(0, 7), max_size=6), max_size=10), st.integers(1, 5))
def test_lookup_backward_max_property_issue18(bags: list[list[int]], dim: int) -> None:
    table = (np.arange(8 * dim).reshape(8, dim) * 5 % 3).astype(np.float64)  # ties
    dy = np.arange(1.0, 1 + len(bags) * dim).reshape(len(bags), dim)
    ids = asp.Jagged.from_list(bags) if any(bags) else np.zeros(0, np.int64)
    offsets = None if any(bags) else np.zeros(len(bags) + 1, np.int64)
    _, arg = emb.lookup(table, ids, offsets=offsets, mode="max", return_argmax=True)
    g = emb.lookup_backward(dy, ids, offsets=offsets, mode="max", argmax=arg,
                            num_embeddings=8)
    rows, values = ref_backward_max(dy, bags, ref_max_argmax(table, bags)[1], 8)
    np.testing.assert_array_equal(g.rows, rows)
    np.testing.assert_array_equal(g.values, values.reshape(len(rows), dim))


# ========================================================== lookup_backward_weights
@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_lookup_backward_weights_is_the_derivative(mode: str) -> None:
    rng = np.random.default_rng(13)
    table = rng.standard_normal((10, 4))
    bags = random_bags(rng, 7, 10)
    flat = np.array([i for bag in bags for i in bag], np.int64)
    offsets = np.cumsum([0] + [len(b) for b in bags])
    w = rng.random(len(flat))
    dy = rng.standard_normal((7, 4))
    got = emb.lookup_backward_weights(dy, table, flat, offsets=offsets, mode=mode)
    eps = 1e-6
    for j in range(len(flat)):  # central differences of <dy, lookup(w)>
        hi, lo = w.copy(), w.copy()
        hi[j] += eps
        lo[j] -= eps
        f = [np.sum(dy * emb.lookup(table, flat, offsets=offsets, mode=mode,
                                    per_sample_weights=x)) for x in (hi, lo)]
        assert got[j] == pytest.approx((f[0] - f[1]) / (2 * eps), rel=1e-6, abs=1e-8)
    # list ids give the weights' form back; null ids and null bags get 0
    ids = pa.array([[1, None, 2], None, [3]])
    res = emb.lookup_backward_weights(np.ones((3, 4)), table, ids, mode=mode)
    assert isinstance(res, pa.ListArray)
    scale = 0.5 if mode == "mean" else 1.0
    rows = res.to_pylist()
    assert rows[1] is None
    np.testing.assert_allclose(rows[0], [table[1].sum() * scale, 0.0, table[2].sum() * scale])
    np.testing.assert_allclose(rows[2], [table[3].sum()])
    jag = emb.lookup_backward_weights(np.ones((2, 4)), table, asp.Jagged.from_list([[1], []]))
    assert isinstance(jag, asp.Jagged) and jag.to_list() == [[pytest.approx(table[1].sum())], []]
    two = emb.lookup_backward_weights(np.ones((1, 4)), table, np.array([[1, 2]]), mode=mode)
    assert two.shape == (1, 2)
    with pytest.raises(ValueError, match="^lookup_backward_weights: mode='max' takes no "
                       "per-sample weights"):
        emb.lookup_backward_weights(dy, table, flat, offsets=offsets, mode="max")
    with pytest.raises(ValueError, match="grad_out has dim 3 but the table has dim 4"):
        emb.lookup_backward_weights(np.ones((7, 3)), table, flat, offsets=offsets)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_lookup_backward_weights_on_every_backend(mode: str, backend: str) -> None:
    rng = np.random.default_rng(18)
    table = rng.standard_normal((10, 3))
    t = to_backend(table, backend)
    # offsets[0] > 0, a null bag, an empty bag and a null id
    ids = pa.array([[8], [1, None, 2], None, [], [3, 3, 9]]).slice(1)
    flat = np.array([4, 1, 2, 3, 3, 9, 0])
    cases = [(ids, {}, 4), (flat, {"offsets": np.array([1, 3, 3, 6])}, 3),
             (rng.integers(0, 10, (3, 2)), {}, 3),
             (asp.Jagged.from_list([[5, 6], [7]]), {}, 2)]
    for i, kw, bags in cases:
        dy = rng.standard_normal((bags, 3))
        want = emb.lookup_backward_weights(dy, table, i, mode=mode, **kw)
        got = emb.lookup_backward_weights(to_backend(dy, backend), t, to_backend(i, backend),
                                          mode=mode, **{k: to_backend(x, backend)
                                                        for k, x in kw.items()})
        if isinstance(want, pa.Array):  # Arrow ids give Arrow, a device Jagged a Jagged
            want = asp.Jagged.from_arrow(want)
            got = got if on_device(backend) else asp.Jagged.from_arrow(got)
        if isinstance(want, asp.Jagged):
            got = from_backend(got, backend)
            assert got.to_list()[1:2] == want.to_list()[1:2]
            want, got = want.values, got.values
        else:
            got = from_backend(got, backend)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_lookup_backward_weights_through_the_emulator_matches_cpu(cuda_emu: Emulator) -> None:
    rng = np.random.default_rng(5)
    table = rng.standard_normal((12, 6)).astype(np.float32)
    rng.integers(0, 12, size=40)  # the draws of the lookup's own check, kept in step
    bags = asp.Jagged.from_list([[1, 2, 3], [], [2, 4, 6, 7], [3, 6], [11]])
    grad = rng.standard_normal((5, 6)).astype(np.float32)
    expected, got, launches = cpu_and_emu(cuda_emu, emb.lookup_backward_weights,
                                          grad, table, bags, mode="mean")
    np.testing.assert_allclose(got.values, expected.values, rtol=1e-6)
    assert launches == ["weights_grad<float, float, float, float, long long>"]
