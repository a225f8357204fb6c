"""Tests of arrow_sparse.embedding: lookups, backward, optimizers, storage.

Every op is checked against a plain-numpy loop reference written here, and (when
torch is installed) against PyTorch's EmbeddingBag / optimizers. The cheap op tests run
on every ``backend`` (tests/conftest.py): the CPU kernels, the CUDA kernels on the
emulator, and device arrays of the stand-in CuPy; ``tests/test_cuda_embedding.py`` has
the device paths' own checks, errors and synchronisations.
"""

from __future__ import annotations

import importlib.util
import math
import pathlib
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse import embedding as emb
from arrow_sparse.errors import ArrowSparseError
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cpu import _jit
from tests.conftest import from_backend, on_device, to_backend

CAFFE2 = [[1, 2, 3], [2, 4, 6, 7], [3, 6]]
ROOT = pathlib.Path(__file__).resolve().parents[1]


# ========================================================================= references
def ref_lookup(table, bags, mode="sum", weights=None):
    out = np.zeros((len(bags), table.shape[1]), np.float64)
    for b, bag in enumerate(bags):
        rows = [table[i] * (1.0 if weights is None else weights[b][j])
                for j, i in enumerate(bag)]
        if rows:
            out[b] = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode](rows, axis=0)
    return out


def ref_backward(grad_out, bags, num_embeddings, mode="sum", weights=None):
    dense = np.zeros((num_embeddings, grad_out.shape[1]), np.float64)
    for b, bag in enumerate(bags):
        for j, i in enumerate(bag):
            s = 1.0 if weights is None else weights[b][j]
            if mode == "mean":
                s /= len(bag)
            dense[i] += s * grad_out[b]
    rows = np.array(sorted({i for bag in bags for i in bag}), dtype=np.int64)
    return rows, dense[rows] if len(rows) else np.zeros((0, grad_out.shape[1]))


def ref_sgd(table, rows, values, lr):
    for r, g in zip(rows, values, strict=True):
        table[r] -= lr * g


def ref_adagrad(table, state, rows, values, lr, eps):
    for r, g in zip(rows, values, strict=True):
        state[r] += g * g
        table[r] -= lr * g / (np.sqrt(state[r]) + eps)


def ref_rowwise_adagrad(table, state, rows, values, lr, eps):
    for r, g in zip(rows, values, strict=True):
        state[r] += np.mean(g * g)
        table[r] -= lr * g / (np.sqrt(state[r]) + eps)


def ref_ftrl(w, z, n, rows, values, alpha, beta, l1, l2):
    for r, grow in zip(rows, values, strict=True):
        for d, g in enumerate(grow):
            n_new = n[r, d] + g * g
            sigma = (math.sqrt(n_new) - math.sqrt(n[r, d])) / alpha
            z[r, d] += g - sigma * w[r, d]
            n[r, d] = n_new
            zz = z[r, d]
            w[r, d] = ((l1 * np.sign(zz) - zz) / ((beta + math.sqrt(n_new)) / alpha + l2)
                       if abs(zz) > l1 else 0.0)


def random_bags(rng, num_bags, num_embeddings, max_len=6):
    return [list(rng.integers(0, num_embeddings, rng.integers(0, max_len + 1)))
            for _ in range(num_bags)]


# ============================================================================= lookup
def test_lookup_embeddingtables_jl_examples() -> None:
    # Julia: data = [j for _ in 1:5, j in 1:5] (column j holds j); rows here.
    table = np.repeat(np.arange(1, 6), 5).reshape(5, 5)
    inds = np.array([1, 3, 4, 4, 2, 5]) - 1
    np.testing.assert_array_equal(emb.lookup(table, inds), np.tile([1, 3, 4, 4, 2, 5], (5, 1)).T)
    # Reducing lookup: inds = [1 4; 2 5] -> columns 1 and 2 of O sum A[:, [1, 2]], A[:, [4, 5]]
    inds2 = (np.array([[1, 4], [2, 5]]) - 1).T
    np.testing.assert_array_equal(emb.lookup(table, inds2), np.tile([3, 9], (5, 1)).T)
    # maplookup
    a = np.repeat(np.arange(1, 4), 2).reshape(3, 2)
    b = 10 * a
    ia, ib = np.array([1, 2, 1]) - 1, np.array([2, 1, 1]) - 1
    res = emb.maplookup([a, b], [ia, ib])
    np.testing.assert_array_equal(res[0], [[1, 1], [2, 2], [1, 1]])
    np.testing.assert_array_equal(res[1], [[20, 20], [10, 10], [10, 10]])
    combined = emb.maplookup([a, b], np.stack([ia, ib], axis=1))
    for x, y in zip(res, combined, strict=True):
        np.testing.assert_array_equal(x, y)


def test_embeddingtables_jl_pullback_and_update() -> None:
    table = np.zeros((4, 4), np.float32)
    inds = np.array([1, 3, 4]) - 1
    np.testing.assert_array_equal(emb.lookup(table, inds), np.zeros((3, 4)))
    adjoint = np.array([[1, 5, 9], [2, 6, 10], [3, 7, 11], [4, 8, 12]], np.float32).T
    grad = emb.lookup_backward(adjoint, inds, num_embeddings=4)
    np.testing.assert_array_equal(grad.rows, inds)
    np.testing.assert_array_equal(grad.values, adjoint)
    emb.sgd(table, grad, 0.1)
    expected = np.array([[-0.1, 0.0, -0.5, -0.9], [-0.2, 0.0, -0.6, -1.0],
                         [-0.3, 0.0, -0.7, -1.1], [-0.4, 0.0, -0.8, -1.2]], np.float32).T
    np.testing.assert_allclose(table, expected, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_lookup_rows_and_sum(dtype, backend) -> None:
    rng = np.random.default_rng(0)
    table = rng.integers(-5, 5, (10, 3)).astype(dtype)
    ids = rng.integers(0, 10, 7)

    def lookup(i, **kw):
        return from_backend(emb.lookup(to_backend(table, backend), to_backend(i, backend),
                                       **kw), backend)

    out = lookup(ids)
    assert out.dtype == table.dtype
    np.testing.assert_array_equal(out, table[ids])
    np.testing.assert_array_equal(lookup(ids.astype(np.uint16)), table[ids])
    ids2 = rng.integers(0, 10, (7, 4))
    np.testing.assert_array_equal(lookup(ids2), table[ids2].sum(axis=1))
    np.testing.assert_allclose(lookup(ids2, mode="mean"), table[ids2].mean(axis=1))
    np.testing.assert_array_equal(lookup(ids2, mode="max"), table[ids2].max(axis=1))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_lookup_bags_all_forms(mode, backend) -> None:
    table = np.arange(16.0).reshape(8, 2)
    expected = ref_lookup(table, CAFFE2, mode)
    flat = np.array([i for bag in CAFFE2 for i in bag])
    t = to_backend(table, backend)
    for ids, kw in ((asp.Jagged.from_list(CAFFE2), {}), (flat, {"offsets": [0, 3, 7, 9]}),
                    (np.r_[5, flat, 5], {"offsets": [1, 4, 8, 10]})):  # ids outside bags
        got = emb.lookup(t, to_backend(ids, backend), mode=mode,
                         **{k: to_backend(np.array(x), backend) for k, x in kw.items()})
        np.testing.assert_allclose(from_backend(got, backend), expected)
    arrow = emb.lookup(t, to_backend(pa.array(CAFFE2), backend), mode=mode)
    if on_device(backend):  # a Jagged on the device: CuPy rows
        np.testing.assert_allclose(from_backend(arrow, backend), expected)
    else:
        assert isinstance(arrow, pa.Array)
        np.testing.assert_allclose(np.array(arrow.to_pylist()), expected)


def test_lookup_out_in_place(backend) -> None:
    table = to_backend(np.arange(16.0).reshape(8, 2), backend)
    ids = to_backend(np.array([1, 2, 3]), backend)
    expected = np.arange(16.0).reshape(8, 2)[[1, 2, 3]]

    def zeros(*shape, fill=0.0):
        return to_backend(np.full(shape, fill), backend)

    out = zeros(3, 2, fill=-1.0)
    assert emb.lookup(table, ids, out=out) is out
    np.testing.assert_array_equal(from_backend(out, backend), expected)
    wide = zeros(3, 5)
    emb.lookup(table, ids, out=wide[:, 2:4])  # a column block: written in place
    np.testing.assert_array_equal(from_backend(wide, backend)[:, 2:4], expected)
    assert not from_backend(wide, backend)[:, [0, 1, 4]].any()
    strided = zeros(6, 2)
    emb.lookup(table, ids, out=strided[::2])
    np.testing.assert_array_equal(from_backend(strided, backend)[::2], expected)
    assert not from_backend(strided, backend)[1::2].any()
    wide = zeros(3, 5)
    emb.lookup(table, to_backend(pa.array([[1, 2], None, []]), backend), out=wide[:, 1:3])
    np.testing.assert_array_equal(from_backend(wide, backend),
                                  [[0, 6, 8, 0, 0], [0] * 5, [0] * 5])
    with pytest.raises(ValueError, match=r"lookup: out must have shape \(3, 2\)"):
        emb.lookup(table, ids, out=zeros(2, 2))
    with pytest.raises(TypeError, match="lookup: out must have dtype float64"):
        emb.lookup(table, ids, out=to_backend(np.zeros((3, 2), np.float32), backend))


def test_lookup_matches_torch_embedding_bag() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    table = rng.standard_normal((50, 8)).astype(np.float32)
    bags = random_bags(rng, 20, 50)
    flat = np.array([i for bag in bags for i in bag], np.int64)
    offsets = np.cumsum([0] + [len(b) for b in bags])
    w = rng.random(len(flat)).astype(np.float32)
    for mode in ("sum", "mean", "max"):
        ref = torch.nn.functional.embedding_bag(
            torch.from_numpy(flat), torch.from_numpy(table), torch.from_numpy(offsets[:-1]),
            mode=mode).numpy()
        got = emb.lookup(table, flat, offsets=offsets, mode=mode)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    ref = torch.nn.functional.embedding_bag(
        torch.from_numpy(flat), torch.from_numpy(table), torch.from_numpy(offsets[:-1]),
        mode="sum", per_sample_weights=torch.from_numpy(w)).numpy()
    got = emb.lookup(table, flat, offsets=offsets, per_sample_weights=w)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_lookup_errors() -> None:
    table = np.zeros((4, 2))
    with pytest.raises(IndexError, match=r"lookup: ids out of range \[0, 4\) "
                                         r"\(first at position 1: 4\)"):
        emb.lookup(table, [0, 4])
    with pytest.raises(IndexError, match="out of range"):
        emb.lookup(table, [0, -1])
    with pytest.raises(TypeError, match="lookup: table must be a numpy or cupy array"):
        emb.lookup(object(), [0])
    with pytest.raises(TypeError, match="lookup: ids must have an integer dtype"):
        emb.lookup(table, [0.5])
    with pytest.raises(ValueError, match="lookup: table must be 2-dimensional"):
        emb.lookup(np.zeros(4), [0])
    with pytest.raises(ValueError, match="lookup: mode must be 'sum', 'mean' or 'max'"):
        emb.lookup(table, [[0]], mode="min")
    with pytest.raises(ValueError, match=r"lookup: per_sample_weights must have the shape of "
                                         r"ids \(1,\), got \(2,\)"):
        emb.lookup(table, [0], per_sample_weights=[1.0, 2.0])
    with pytest.raises(TypeError, match="per_sample_weights must be a Jagged or an Arrow list"):
        emb.lookup(table, pa.array([[0, 1]]), per_sample_weights=[1.0, 2.0])
    with pytest.raises(TypeError, match="per_sample_weights must be a flat array like the ids"):
        emb.lookup(table, [0, 1], offsets=[0, 2], per_sample_weights=pa.array([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="per_sample_weights must have the same bag lengths"):
        emb.lookup(table, pa.array([[0, 1]]), per_sample_weights=pa.array([[1.0]]))
    with pytest.raises(ValueError, match="offsets must not be given with 2-D ids"):
        emb.lookup(table, [[0, 1]], offsets=[0, 2])
    with pytest.raises(TypeError, match=r"lookup: table must have an integer, float32 or "
                                        r"float64 dtype, got float16 \(cast it with"):
        emb.lookup(np.zeros((3, 2), np.float16), [1])
    with pytest.raises(TypeError, match="lookup: table must have an integer, float32"):
        emb.lookup(np.zeros((3, 2), bool), [1])
    with pytest.raises(IndexError, match=r"lookup: ids out of range \[0, 4\) \(first at "
                                         r"position 3: 9\)"):
        emb.lookup(table, pa.array([[0], [1, None, 9]]))  # the null id is skipped
    with pytest.raises(ArrowSparseError):
        emb.lookup(table, [0, 1], offsets=[0, 3])


# ========================================================================== maplookup
@pytest.mark.parametrize("strategy", ["sequential", "parallel", "concat"])
def test_maplookup_strategies(strategy, backend) -> None:
    rng = np.random.default_rng(2)
    tables = [rng.standard_normal((20 + t, 2 + t)).astype(np.float32) for t in range(4)]
    indices = [rng.integers(0, 20, 6), rng.integers(0, 20, (6, 3)),
               asp.Jagged.from_list(random_bags(rng, 6, 20)),
               pa.array([b or None for b in random_bags(rng, 6, 20)])]
    expected = [np.asarray(emb.lookup(t, i, out=np.empty((6, t.shape[1]), np.float32)))
                for t, i in zip(tables, indices, strict=True)]
    tables, indices = to_backend(tables, backend), to_backend(indices, backend)
    res = from_backend(emb.maplookup(tables, indices, strategy,
                                     prepend=3 if strategy == "concat" else 0), backend)
    if strategy == "concat":
        again = to_backend(np.full_like(res, 7.0), backend)
        assert emb.maplookup(tables, indices, strategy, prepend=3, out=again) is again
        again = from_backend(again, backend)
        np.testing.assert_array_equal(again[:, 3:], res[:, 3:])
        np.testing.assert_array_equal(again[:, :3], 7.0)  # dense features written before
        assert res.shape == (6, 3 + sum(t.shape[1] for t in tables))
        np.testing.assert_array_equal(res[:, :3], 0)
        np.testing.assert_allclose(res[:, 3:], np.concatenate(expected, axis=1), rtol=1e-6)
    else:
        for got, want in zip(res[:2], expected[:2], strict=True):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_allclose(res[2], expected[2], rtol=1e-6)


def test_maplookup_errors() -> None:
    a = np.zeros((3, 2))
    with pytest.raises(ValueError, match="maplookup: strategy must be"):
        emb.maplookup([a], [[0]], "fast")
    with pytest.raises(ValueError, match="indices must hold one ids per table"):
        emb.maplookup([a, a], [[0]])
    with pytest.raises(ValueError, match="prepend and out need strategy='concat'"):
        emb.maplookup([a], [[0]], prepend=2)
    with pytest.raises(ValueError, match="same number of rows per lookup"):
        emb.maplookup([a, a], [[0], [0, 1]], "concat")
    with pytest.raises(IndexError, match=r"maplookup: ids out of range \[0, 3\)"):
        emb.maplookup([a], [[3]], "parallel")
    with pytest.raises(TypeError, match=r"maplookup: tables\[0\] must be a numpy or cupy array"):
        emb.maplookup([object()], [[0]])


def test_scatter_weighted_sum_is_reexported() -> None:
    assert emb.scatter_weighted_sum is asp.scatter_weighted_sum
    assert "scatter_weighted_sum" in emb.__all__


def test_kernels_release_the_gil() -> None:
    from arrow_sparse.kernels.cpu import embedding as k

    for serial, parallel in k._PAIRS.values():
        assert serial.targetoptions["nogil"] and parallel.targetoptions["nogil"]


# =========================================================================== backward
def grad_on_host(g, backend):
    """A SparseGrad's arrays on the host (checking they were on the backend's device)."""
    assert isinstance(g, emb.SparseGrad)
    return from_backend(g.rows, backend), from_backend(g.values, backend)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_lookup_backward_matches_reference(mode, backend) -> None:
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


def test_lookup_backward_2d_and_weights(backend) -> None:
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


def test_lookup_backward_nulls_are_skipped(backend) -> None:
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
def test_lookup_backward_matches_torch(mode) -> None:
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
def test_lookup_backward_property(bags, mode, dim) -> None:
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


@pytest.mark.hypothesis
@given(st.lists(st.lists(st.integers(0, 5), max_size=5), min_size=1, max_size=8),
       st.sampled_from(["sum", "mean", "max"]))
def test_lookup_bags_property(bags, mode) -> None:
    table = np.arange(12.0).reshape(6, 2) - 5
    got = emb.lookup(table, asp.Jagged.from_list(bags) if any(bags) else
                     np.zeros(0, np.int64), offsets=None if any(bags) else
                     np.zeros(len(bags) + 1, np.int64), mode=mode)
    np.testing.assert_allclose(got, ref_lookup(table, bags, mode), atol=1e-12)


def test_lookup_backward_errors() -> None:
    dy = np.zeros((3, 2))
    ids = asp.Jagged.from_list(CAFFE2)
    with pytest.raises(ValueError, match="mode='max' is not supported: its gradient needs"):
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


# ========================================================================= SparseGrad
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


def test_sparse_grad_coalesce_on_every_backend(backend) -> None:
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


# ========================================================================= optimizers
def _grads(rng, steps, num, dim, dtype=np.float32):
    out = []
    for _ in range(steps):
        bags = random_bags(rng, 8, num)
        flat = np.array([i for bag in bags for i in bag], np.int64)
        offsets = np.cumsum([0] + [len(b) for b in bags])
        dy = rng.standard_normal((8, dim)).astype(dtype)
        out.append((flat, offsets, dy))
    return out


def test_sgd_and_adagrad_match_numpy_reference(backend) -> None:
    rng = np.random.default_rng(6)
    table = rng.standard_normal((15, 3))
    r_sgd, r_ada, r_state = table.copy(), table.copy(), np.zeros_like(table)
    r_row, rs_row = table.copy(), np.zeros(15)
    t_sgd, t_ada, state, t_row, s_row = to_backend([table.copy(), table.copy(),
                                                    np.zeros_like(table), table.copy(),
                                                    np.zeros(15)], backend)
    for flat, offsets, dy in _grads(rng, 5, 15, 3, np.float64):
        g = emb.lookup_backward(*to_backend([dy, flat], backend), offsets=to_backend(offsets, backend),
                                num_embeddings=15)
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


def test_ftrl_matches_caffe2_reference(backend) -> None:
    rng = np.random.default_rng(7)
    w, z, n = to_backend([np.zeros((10, 2)), np.zeros((10, 2)), np.zeros((10, 2))], backend)
    rw, rz, rn = np.zeros((10, 2)), np.zeros((10, 2)), np.zeros((10, 2))
    hyper = {"alpha": 0.1, "beta": 1.0, "l1": 1.0, "l2": 0.01}
    for flat, offsets, dy in _grads(rng, 6, 10, 2, np.float64):
        g = emb.lookup_backward(*to_backend([dy, flat], backend),
                                offsets=to_backend(offsets, backend), num_embeddings=10)
        emb.ftrl(w, z, n, g, **hyper)
        ref_ftrl(rw, rz, rn, *grad_on_host(g, backend), **hyper)
    w, z, n = from_backend([w, z, n], backend)
    np.testing.assert_allclose(w, rw, rtol=1e-12)
    np.testing.assert_allclose(z, rz, rtol=1e-12)
    np.testing.assert_allclose(n, rn, rtol=1e-12)
    assert (w == 0).any() and (w != 0).any()  # l1 makes some weights exactly zero


@pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning")
@pytest.mark.parametrize("opt", ["sgd", "adagrad"])
def test_optimizers_match_torch(opt) -> None:
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
    for flat, offsets, dy in _grads(rng, 6, num, dim):
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


@pytest.mark.parametrize("opt", ["sgd", "adagrad", "rowwise_adagrad", "ftrl"])
def test_update_many_tables_equals_one_by_one(opt, backend) -> None:
    rng = np.random.default_rng(9)
    tables = [rng.standard_normal((12, 2 + t)) for t in range(3)]
    grads = [emb.SparseGrad(*to_backend([rng.integers(0, 12, 9),
                                         rng.standard_normal((9, 2 + t))], backend))
             for t in range(3)]  # not coalesced: repeated rows

    def states(ts):
        if opt == "sgd":
            return None
        if opt == "adagrad":
            return to_backend([np.zeros(t.shape) for t in ts], backend)
        if opt == "rowwise_adagrad":
            return to_backend([np.zeros(len(t)) for t in ts], backend)
        return to_backend([(np.zeros(t.shape), np.zeros(t.shape)) for t in ts], backend)

    hyper = {"lr": 0.1} if opt != "ftrl" else {"alpha": 0.2}
    one = to_backend([t.copy() for t in tables], backend)
    st_one = states(one)
    for i, (t, g) in enumerate(zip(one, grads, strict=True)):
        if opt == "sgd":
            emb.sgd(t, g, **hyper)
        elif opt == "ftrl":
            emb.ftrl(t, *st_one[i], g, **hyper)
        else:
            getattr(emb, opt)(t, st_one[i], g, **hyper)
    many = to_backend([t.copy() for t in tables], backend)
    emb.update(opt, many, grads, states=states(many), **hyper)
    for a, b in zip(from_backend(one, backend), from_backend(many, backend), strict=True):
        np.testing.assert_array_equal(a, b)
    if opt == "sgd":  # the same as the coalesced gradient on the host
        host = [t.copy() for t in tables]
        emb.update(opt, host, [g.to_device("cpu") for g in grads], **hyper)
        for a, b in zip(host, from_backend(many, backend), strict=True):
            np.testing.assert_array_equal(a, b)


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


def test_updates_are_deterministic_with_duplicates(backend) -> None:
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
    np.testing.assert_array_equal(a, expected)


# ============================================================================ storage
def test_save_load_table_roundtrip_and_mmap(tmp_path) -> None:
    rng = np.random.default_rng(11)
    table = rng.standard_normal((1000, 16)).astype(np.float32)
    path = tmp_path / "t.arrow"
    emb.save_table(table, path)
    import pyarrow.ipc as ipc

    with pa.memory_map(str(path)) as src:
        schema = ipc.open_file(src).schema
    assert schema.field(0).type == pa.list_(pa.float32(), 16)
    view = emb.load_table(path)
    np.testing.assert_array_equal(view, table)
    assert not view.flags.writeable and not view.flags.owndata
    if sys.platform.startswith("linux"):
        addr = view.ctypes.data
        inside = False
        for line in pathlib.Path("/proc/self/maps").read_text().splitlines():
            if line.endswith(str(path)):
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                inside |= lo <= addr < hi and addr + view.nbytes <= hi
        assert inside, "the table's buffer is not inside the file's memory mapping"
    copy = emb.load_table(path, mmap=False)
    assert copy.flags.writeable and copy.flags.owndata
    np.testing.assert_array_equal(copy, table)
    with pytest.raises(ValueError, match="read-only memory map"):
        emb.sgd(view, emb.SparseGrad(np.array([0]), np.ones((1, 16), np.float32)), 0.1)
    emb.save_table(np.zeros((0, 3)), tmp_path / "empty.arrow")
    assert emb.load_table(tmp_path / "empty.arrow").shape == (0, 3)


def test_save_load_table_errors(tmp_path) -> None:
    with pytest.raises(OSError, match="load_table: cannot open"):
        emb.load_table(tmp_path / "missing.arrow")
    bad = tmp_path / "bad.arrow"
    bad.write_bytes(b"not arrow at all")
    with pytest.raises(ValueError, match="is not an Arrow IPC file"):
        emb.load_table(bad)
    other = tmp_path / "other.arrow"
    batch = pa.record_batch({"x": pa.array([[1.0]])})
    with pa.OSFile(str(other), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as w:
        w.write_batch(batch)
    with pytest.raises(TypeError, match=r"must be fixed_size_list<float32\|float64>\[dim\]"):
        emb.load_table(other)
    with pytest.raises(TypeError, match="save_table: table must be float32 or float64"):
        emb.save_table(np.zeros((2, 2), np.int64), tmp_path / "i.arrow")


# ============================================================================ example
def test_train_logreg_example_learns_the_embeddings() -> None:
    spec = importlib.util.spec_from_file_location(
        "train_logreg", ROOT / "docs" / "examples" / "train_logreg.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = ["--steps", "42", "--log-every", "14", "--dim", "4"]
    trained = module.main(args)
    frozen = module.main([*args, "--emb-lr", "0"])
    # The target is carried by item identity only (constant predictor: 0.682): the
    # loss falls only if the sparse path trains the table.
    assert trained[-1] < 0.55 < frozen[-1]
    assert trained[-1] < trained[0] - 0.1


# =================================================== weights, forms and dtypes (issue 7)
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


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_lookup_backward_weights_is_the_derivative(mode) -> None:
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
    with pytest.raises(ValueError, match="lookup_backward_weights: mode='max' is not supported"):
        emb.lookup_backward_weights(dy, table, flat, offsets=offsets, mode="max")
    with pytest.raises(ValueError, match="grad_out has dim 3 but the table has dim 4"):
        emb.lookup_backward_weights(np.ones((7, 3)), table, flat, offsets=offsets)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_lookup_backward_weights_on_every_backend(mode, backend) -> None:
    rng = np.random.default_rng(18)
    table = rng.standard_normal((10, 3))
    t = to_backend(table, backend)
    ids = pa.array([[1, None, 2], None, [], [3, 3, 9]]).slice(0)
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


def test_lookup_arrow_forms_chunked_and_sliced() -> None:
    table = np.arange(16.0).reshape(8, 2)
    arr = pa.array([[9], [1, 2, 3], None, [], [2, 4, 6, 7], [3, None, 6]]).slice(1)
    want = ref_lookup(table, [[1, 2, 3], [], [], [2, 4, 6, 7], [3, 6]], "mean")
    got = emb.lookup(table, arr, mode="mean")
    assert got.to_pylist() == [want[0].tolist(), None, None, want[3].tolist(),
                                want[4].tolist()]
    chunked = pa.chunked_array([arr.slice(0, 2), arr.slice(2)])
    got = emb.lookup(table, chunked, mode="mean")
    assert isinstance(got, pa.ChunkedArray) and got.num_chunks == 2
    assert got.to_pylist() == emb.lookup(table, arr, mode="mean").to_pylist()
    out = emb.lookup(table, chunked, mode="mean", out=np.full((5, 2), -1.0))
    np.testing.assert_allclose(out, want)
    large = pa.array([[1, 2], [3]], pa.large_list(pa.int32()))
    np.testing.assert_array_equal(emb.lookup(table, large, out=np.empty((2, 2))),
                                  [table[1] + table[2], table[3]])


def test_lookup_sliced_lists_on_every_backend(backend) -> None:
    table = np.arange(16.0).reshape(8, 2)
    arr = pa.array([[9], [1, 2, 3], None, [], [2, 4, 6, 7], [3, None, 6]]).slice(1)
    want = ref_lookup(table, [[1, 2, 3], [], [], [2, 4, 6, 7], [3, 6]], "mean")
    ids = to_backend(arr, backend)  # offsets[0] > 0, a null bag, a null id
    got = emb.lookup(to_backend(table, backend), ids, mode="mean")
    if not on_device(backend):
        got = np.array([row or [0.0, 0.0] for row in got.to_pylist()])
    np.testing.assert_allclose(from_backend(got, backend), want)
    weights = to_backend(pa.array([[1.0, 2.0, 3.0], None, [], [1.0] * 4,
                                   [2.0, None, 0.5]]), backend)  # not sliced
    got = emb.lookup(to_backend(table, backend), ids, per_sample_weights=weights,
                     out=to_backend(np.empty((5, 2)), backend))
    want = [table[1] + 2 * table[2] + 3 * table[3], [0, 0], [0, 0], table[[2, 4, 6, 7]].sum(0),
            2 * table[3] + 0.5 * table[6]]
    np.testing.assert_allclose(from_backend(got, backend), want)
    if on_device(backend):
        cuda.check_errors("test")  # no device check recorded anything


def test_integer_tables_widen_everywhere() -> None:
    big = np.full((3, 2), 2**31 - 1, np.int32)
    np.testing.assert_array_equal(emb.lookup(big, np.array([[0, 1]])), [[2**32 - 2] * 2])
    res = emb.maplookup([big, np.ones((3, 1), np.float32)], [np.array([[0, 1]]), [2]],
                        "concat")
    assert res.dtype == np.float64  # int64 sums and float32 rows meet in float64
    np.testing.assert_array_equal(res, [[2**32 - 2, 2**32 - 2, 1]])
    res = emb.maplookup([big], [np.array([[0, 1]])], "concat", prepend=1)
    assert res.dtype == np.int64
    np.testing.assert_array_equal(res, [[0, 2**32 - 2, 2**32 - 2]])
    assert emb.lookup(big, [0]).dtype == np.int32  # a plain gather keeps the dtype
    assert emb.lookup(big, [[0]], mode="mean").dtype == np.float64
    assert emb.lookup(big, [[0]], mode="max").dtype == np.int32
    for call in (lambda: emb.sgd(np.zeros((2, 2), np.float16),
                                 emb.SparseGrad(np.array([0]), np.ones((1, 2))), 0.1),
                 lambda: emb.maplookup([np.zeros((2, 2), np.float16)], [[0]])):
        with pytest.raises(TypeError, match="float16"):
            call()


# ============================================================= maplookup (issue 7)
def test_maplookup_parallel_threads_bag_lookups(monkeypatch) -> None:
    import threading

    import numba


    from arrow_sparse.embedding import lookups as lookup_module

    seen = []
    real = lookup_module.get_kernel

    def spy(family, name, xp=np):
        fn = real(family, name, xp)
        if name != "gather_reduce":
            return fn

        def wrapped(*args):
            seen.append((threading.current_thread() is threading.main_thread(),
                         numba.get_num_threads()))
            return fn(*args)
        return wrapped

    monkeypatch.setattr(lookup_module, "get_kernel", spy)
    rng = np.random.default_rng(14)
    tables = [rng.standard_normal((50, 4)) for _ in range(4)]
    ids = [asp.Jagged.from_list(random_bags(rng, 300, 50)) for _ in range(4)]
    want = [emb.lookup(t, i) for t, i in zip(tables, ids, strict=True)]
    seen.clear()
    for strategy in ("parallel", "concat"):
        got = emb.maplookup(tables, ids, strategy, max_workers=2)
        got = got if strategy == "parallel" else np.split(got, 4, axis=1)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w)
    assert len(seen) == 8
    if _jit.concurrent_parallel_kernels():
        assert seen == [(False, 1)] * 8  # pool threads, one Numba thread each
    else:
        assert all(main for main, _ in seen)
    assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS


def test_maplookup_concat_writes_into_out_and_keeps_prepend() -> None:
    import tracemalloc

    rng = np.random.default_rng(15)
    n = 20_000
    tables = [rng.standard_normal((1000, 64)) for _ in range(3)]
    ids = [rng.integers(0, 1000, n), rng.integers(0, 1000, (n, 2)),
           asp.Jagged.from_lengths(rng.integers(0, 1000, 2 * n), np.full(n, 2))]
    out = np.empty((n, 2 + 3 * 64))
    out[:, :2] = 5.0  # dense features written first
    emb.maplookup(tables, ids, "concat", prepend=2, out=out)  # compile, warm up
    tracemalloc.start()
    try:
        emb.maplookup(tables, ids, "concat", prepend=2, out=out)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    block = n * 64 * 8
    assert peak < block / 4, f"a temporary of {peak} bytes: the blocks are not written in place"
    np.testing.assert_array_equal(out[:, :2], 5.0)
    np.testing.assert_allclose(out[:, 2:66], tables[0][ids[0]])
    np.testing.assert_allclose(out[:, 66:130], tables[1][ids[1]].sum(axis=1))
    np.testing.assert_allclose(out[:, 130:], tables[2][ids[2].values.reshape(n, 2)].sum(1))


# ============================================================ gradients (issue 7)
def test_sparse_grad_dim_zero_round_trips_to_arrow() -> None:
    g = emb.SparseGrad(np.array([1, 4]), np.zeros((2, 0), np.float32))
    batch = g.to_arrow()
    assert batch.schema.field("grad").type == pa.list_(pa.float32(), 0)
    back = emb.SparseGrad.from_arrow(batch)
    assert back.rows.tolist() == [1, 4] and back.values.shape == (2, 0)


def test_backward_is_deterministic_on_the_parallel_kernels() -> None:
    import numba

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


# ======================================================= writable memory maps (issue 7)
def test_load_table_writable_trains_the_file(tmp_path) -> None:
    rng = np.random.default_rng(17)
    table = rng.standard_normal((500, 8)).astype(np.float32)
    path = tmp_path / "t.arrow"
    emb.save_table(table, path)
    mapped = emb.load_table(path, writable=True)
    assert isinstance(mapped, np.memmap) and mapped.flags.writeable
    np.testing.assert_array_equal(mapped, table)
    state = np.zeros_like(table)
    expected, ref_state = table.copy(), state.copy()
    for flat, offsets, dy in _grads(rng, 3, 500, 8):
        g = emb.lookup_backward(dy, flat, offsets=offsets, num_embeddings=500)
        emb.adagrad(mapped, state, g, 0.1)
        ref_adagrad(expected, ref_state, g.rows, g.values, 0.1, 1e-10)
    mapped.flush()
    del mapped
    np.testing.assert_allclose(emb.load_table(path), expected, rtol=1e-6)  # in the file
    import pyarrow.ipc as ipc

    with pa.memory_map(str(path)) as src:  # still a plain Arrow file any reader reads
        column = ipc.open_file(src).read_all().column(0)
        np.testing.assert_allclose(np.array(column.to_pylist()), expected, rtol=1e-6)
    assert emb.load_table(tmp_path / "t.arrow", writable=True).shape == (500, 8)
    emb.save_table(np.zeros((0, 3), np.float32), tmp_path / "empty.arrow")
    assert emb.load_table(tmp_path / "empty.arrow", writable=True).shape == (0, 3)


def test_load_table_writable_errors(tmp_path) -> None:
    path = tmp_path / "t.arrow"
    emb.save_table(np.ones((4, 2), np.float32), path)
    with pytest.raises(ValueError, match="load_table: writable=True maps the file for writing"):
        emb.load_table(path, mmap=False, writable=True)
    with pytest.raises(TypeError, match="load_table: writable must be True or False"):
        emb.load_table(path, writable="yes")
    two = tmp_path / "two.arrow"
    batch = pa.record_batch([pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2.0]), 2)],
                            names=["embedding"])
    with pa.OSFile(str(two), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as w:
        w.write_batch(batch)
        w.write_batch(batch)
    assert emb.load_table(two).shape == (2, 2)  # read-only: batches concatenated
    with pytest.raises(ValueError, match="writable=True needs a file of one record batch"):
        emb.load_table(two, writable=True)
    packed = tmp_path / "packed.arrow"
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.OSFile(str(packed), "wb") as sink, \
            pa.ipc.new_file(sink, batch.schema, options=options) as w:
        w.write_batch(batch)
    with pytest.raises(ValueError, match="not stored as one uncompressed buffer"):
        emb.load_table(packed, writable=True)
    nulls = tmp_path / "nulls.arrow"
    batch = pa.record_batch([pa.FixedSizeListArray.from_arrays(pa.array([1.0, None]), 2)],
                            names=["embedding"])
    with pa.OSFile(str(nulls), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as w:
        w.write_batch(batch)
    with pytest.raises(ValueError, match="load_table: the table must not contain null values"):
        emb.load_table(nulls)


def test_maplookup_concat_of_tables_of_different_dtypes(backend) -> None:
    # The "concat" matrix has the lookups' common dtype; the CUDA lookup_rows kernel copies
    # rows in the table's own dtype only, and raised NotImplementedError for such a block.
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    b = np.arange(3, dtype=np.float64).reshape(3, 1) + 0.5
    ids = to_backend([np.array([2, 0]), np.array([1, 1])], backend)
    res = emb.maplookup(to_backend([a, b], backend), ids, "concat", prepend=1)
    res = from_backend(res, backend)
    assert res.dtype == np.float64
    np.testing.assert_array_equal(res, [[0, 4, 5, 1.5], [0, 0, 1, 1.5]])
