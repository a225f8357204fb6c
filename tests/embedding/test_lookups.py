"""Tests of ``arrow_sparse.embedding.lookups``: ``lookup`` and ``maplookup``.

Each operation against the loop oracle (``_reference.py``) and EmbeddingTables.jl's
examples on every backend of the ``backend`` fixture (inputs moved with ``to_backend``,
results checked to come back from the inputs' device), PyTorch's ``embedding_bag`` where
torch is installed, then its errors, its property test (Hypothesis, on the CPU: the
example tests beside it cover the device paths) and its device checks: the public
function through the emulator against the CPU kernels, and the deferred device errors.
"""

from __future__ import annotations

import threading
import tracemalloc
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numba
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse import _backend
from arrow_sparse import embedding as emb
from arrow_sparse.embedding import lookups as lookup_module
from arrow_sparse.errors import ArrowSparseError
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cpu import _jit
from tests.cuda_emu.emu import Emulator

from ..conftest import from_backend, on_device, to_backend
from ._helpers import CAFFE2, DEFERRED, cpu_and_emu, later, random_bags
from ._reference import ref_lookup, ref_max_argmax


# ======================================================================= the package
def test_scatter_weighted_sum_is_reexported() -> None:
    assert emb.scatter_weighted_sum is asp.scatter_weighted_sum
    assert "scatter_weighted_sum" in emb.__all__


# =========================================================================== lookup
def test_lookup_embeddingtables_jl_examples(backend: str) -> None:
    # Julia: data = [j for _ in 1:5, j in 1:5] (column j holds j); rows here.
    table = to_backend(np.repeat(np.arange(1, 6), 5).reshape(5, 5), backend)
    inds = np.array([1, 3, 4, 4, 2, 5]) - 1
    np.testing.assert_array_equal(from_backend(emb.lookup(table, to_backend(inds, backend)),
                                               backend),
                                  np.tile([1, 3, 4, 4, 2, 5], (5, 1)).T)
    # Reducing lookup: inds = [1 4; 2 5] -> columns 1 and 2 of O sum A[:, [1, 2]], A[:, [4, 5]]
    inds2 = (np.array([[1, 4], [2, 5]]) - 1).T
    np.testing.assert_array_equal(from_backend(emb.lookup(table, to_backend(inds2, backend)),
                                               backend),
                                  np.tile([3, 9], (5, 1)).T)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_lookup_rows_and_sum(dtype: Any, backend: str) -> None:
    rng = np.random.default_rng(0)
    table = rng.integers(-5, 5, (10, 3)).astype(dtype)
    ids = rng.integers(0, 10, 7)

    def lookup(i: Any, **kw: Any) -> Any:
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
def test_lookup_bags_all_forms(mode: str, backend: str) -> None:
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


def test_lookup_out_in_place(backend: str) -> None:
    table = to_backend(np.arange(16.0).reshape(8, 2), backend)
    ids = to_backend(np.array([1, 2, 3]), backend)
    expected = np.arange(16.0).reshape(8, 2)[[1, 2, 3]]

    def zeros(*shape: int, fill: float = 0.0) -> Any:
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


def test_lookup_sliced_lists_on_every_backend(backend: str) -> None:
    table = np.arange(16.0).reshape(8, 2)
    arr = pa.array([[9], [1, 2, 3], None, [], [2, 4, 6, 7], [3, None, 6]]).slice(1)
    want = ref_lookup(table, [[1, 2, 3], [], [], [2, 4, 6, 7], [3, 6]], "mean")
    ids = to_backend(arr, backend)  # offsets[0] > 0, a null bag, a null id
    got: Any = emb.lookup(to_backend(table, backend), ids, mode="mean")
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


def test_lookup_integer_tables_widen(backend: str) -> None:
    big = to_backend(np.full((3, 2), 2**31 - 1, np.int32), backend)

    def lookup(ids: Any, **kw: Any) -> Any:
        return from_backend(emb.lookup(big, to_backend(np.array(ids), backend), **kw), backend)

    np.testing.assert_array_equal(lookup([[0, 1]]), [[2**32 - 2] * 2])
    assert lookup([0]).dtype == np.int32  # a plain gather keeps the dtype
    assert lookup([[0]], mode="mean").dtype == np.float64
    assert lookup([[0]], mode="max").dtype == np.int32


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


@pytest.mark.hypothesis
@given(st.lists(st.lists(st.integers(0, 5), max_size=5), min_size=1, max_size=8),
       st.sampled_from(["sum", "mean", "max"]))
def test_lookup_bags_property(bags: list[list[int]], mode: str) -> None:
    table = np.arange(12.0).reshape(6, 2) - 5
    got = emb.lookup(table, asp.Jagged.from_list(bags) if any(bags) else
                     np.zeros(0, np.int64), offsets=None if any(bags) else
                     np.zeros(len(bags) + 1, np.int64), mode=mode)
    np.testing.assert_allclose(got, ref_lookup(table, bags, mode), atol=1e-12)


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


def test_lookup_through_the_emulator_matches_cpu(cuda_emu: Emulator) -> None:
    rng = np.random.default_rng(5)
    table = rng.standard_normal((12, 6)).astype(np.float32)
    ids = rng.integers(0, 12, size=40).astype(np.int32)
    expected, got, launches = cpu_and_emu(cuda_emu, emb.lookup, table, ids)
    np.testing.assert_array_equal(got, expected)
    assert launches == ["lookup_rows<float, int>"]


def test_device_lookup_checks_are_raised_by_the_next_check(cp: ModuleType) -> None:
    table = cp.asarray(np.arange(8.0).reshape(4, 2))
    out = emb.lookup(table, cp.asarray(np.array([1, 9, 2])))  # no synchronisation
    assert cp.stats.syncs == 0 and out.get()[[0, 2]].tolist() == [[2, 3], [4, 5]]
    with pytest.raises(IndexError, match="^lookup: ids out of range of the table"
                       + DEFERRED.format(1)):
        later()
    ids = asp.Jagged.from_list([[1, 2], [3, -1]]).to_device("cuda")
    emb.lookup(table, ids, mode="mean")
    with pytest.raises(IndexError, match="^lookup: ids out of range of the table"
                       + DEFERRED.format(3)):
        later()
    two = asp.Jagged.from_list([[1, 2], [3]]).to_device("cuda")
    for weights, message in (
            ([[1.0], [2.0, 3.0]], "per_sample_weights must have the same bag lengths as ids"
             + DEFERRED.format(0)),
            (pa.array([[1.0, None], [2.0]]), "per_sample_weights must not be null where the "
             "id is not" + DEFERRED.format(1))):
        w = asp.Jagged.from_arrow(pa.array(weights)).to_device("cuda")
        emb.lookup(table, two, per_sample_weights=w)
        with pytest.raises(ValueError, match="^lookup: " + message):
            later()
    emb.lookup_backward_weights(cp.asarray(np.ones((2, 2))), table, ids)
    with pytest.raises(IndexError, match="^lookup_backward_weights: ids out of range"):
        later()
    emb.lookup(table, cp.asarray(np.array([0, 1, 2])), offsets=cp.asarray(np.array([0, 3, 1])))
    with pytest.raises(ValueError, match="^lookup: offsets must be non-decreasing"
                       + DEFERRED.format(2)):
        later()


@pytest.mark.parametrize(("call", "match"), [
    (lambda cp: emb.lookup(cp.asarray(np.zeros((3, 2))), np.array([0])),
     "^lookup: ids is a host .numpy/Arrow. array but table is a device .cupy. array"),
    (lambda cp: emb.lookup(np.zeros((3, 2)), cp.asarray(np.array([0]))),
     "^lookup: table is a host"),
    (lambda cp: emb.lookup(np.zeros((3, 2)), [0], out=cp.asarray(np.zeros((1, 2)))),
     "^lookup: table is a host"),
])
def test_lookup_refuses_host_and_device_inputs_together(cp: ModuleType,
                                                        call: Callable[..., Any],
                                                        match: str) -> None:
    with pytest.raises(TypeError, match=match + ".*move them to one device first"):
        call(cp)


# ==================================================== issue 18: lookup's argmax of mode="max"
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8])
@pytest.mark.parametrize("offsets_dtype", [np.int32, np.int64])
def test_lookup_return_argmax_matches_reference_issue18(dtype: Any, offsets_dtype: Any,
                                                        backend: str) -> None:
    rng = np.random.default_rng(18)
    table = rng.integers(0, 4, (9, 5)).astype(dtype)  # few values: many ties
    bags = random_bags(rng, 25, 9, max_len=8)  # empty bags, repeated ids
    flat = np.array([i for bag in bags for i in bag], np.int64)
    offsets = np.cumsum([0] + [len(b) for b in bags]).astype(offsets_dtype)
    want, want_arg = ref_max_argmax(table, bags)
    t = to_backend(table, backend)
    for ids, kw in ((asp.Jagged.from_list(bags), {}), (flat, {"offsets": offsets})):
        got, arg = emb.lookup(t, to_backend(ids, backend), mode="max", return_argmax=True,
                              **{k: to_backend(x, backend) for k, x in kw.items()})
        got, arg = from_backend(got, backend), from_backend(arg, backend)
        assert got.dtype == table.dtype and arg.dtype == np.int64
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(arg, want_arg)
        # the values are those of the lookup without the argmax
        plain = emb.lookup(t, to_backend(ids, backend), mode="max",
                           **{k: to_backend(x, backend) for k, x in kw.items()})
        np.testing.assert_array_equal(from_backend(plain, backend), got)


def test_lookup_return_argmax_nan_and_signed_zeros_issue18(backend: str) -> None:
    nan = np.nan
    table = np.array([[1.0, -0.0, 2.0], [nan, 0.0, 2.0], [3.0, -0.0, nan], [nan, 0.0, 5.0]])
    bags = [[0, 1, 2, 3], [2, 0], [0, 2, 1], [3, 3, 1]]
    want, want_arg = ref_max_argmax(table, bags)
    got, arg = emb.lookup(to_backend(table, backend), to_backend(asp.Jagged.from_list(bags),
                                                                 backend),
                          mode="max", return_argmax=True)
    got, arg = from_backend(got, backend), from_backend(arg, backend)
    np.testing.assert_array_equal(arg, want_arg)
    np.testing.assert_array_equal(arg, [[1, 1, 2], [2, 2, 2], [1, 1, 2], [3, 3, 3]])
    np.testing.assert_array_equal(got, want)  # NaN where NaN
    assert np.signbit(got[:, 1]).tolist() == [False, True, False, False]


def test_lookup_return_argmax_forms_issue18(backend: str) -> None:
    table = np.array([[1.0, 9.0], [4.0, 0.0], [2.0, 5.0], [7.0, 1.0]])
    t = to_backend(table, backend)
    # 1-D ids without offsets: bags of one id; 2-D ids: bags of a row
    _, arg = emb.lookup(t, to_backend(np.array([2, 0]), backend), mode="max",
                        return_argmax=True)
    np.testing.assert_array_equal(from_backend(arg, backend), [[2, 2], [0, 0]])
    got, arg = emb.lookup(t, to_backend(np.array([[0, 1], [3, 2]]), backend), mode="max",
                          return_argmax=True)
    np.testing.assert_array_equal(from_backend(got, backend), [[4, 9], [7, 5]])
    np.testing.assert_array_equal(from_backend(arg, backend), [[1, 0], [3, 2]])
    # null bags and null ids are not read; a bag of nulls only is empty
    ids = pa.array([[0, None, 3], None, [None], [1, 2]])
    got, arg = emb.lookup(t, to_backend(ids, backend), mode="max", return_argmax=True)
    np.testing.assert_array_equal(from_backend(arg, backend),
                                  [[3, 0], [-1, -1], [-1, -1], [1, 2]])
    if not on_device(backend):  # Arrow in, Arrow out: null and empty bags null
        assert got.to_pylist() == [[7.0, 9.0], None, None, [4.0, 5.0]]
    # a sliced list array (offsets[0] > 0)
    sliced = pa.array([[3], [0, 1], [2, 3]]).slice(1)
    _, arg = emb.lookup(t, to_backend(sliced, backend), mode="max", return_argmax=True)
    np.testing.assert_array_equal(from_backend(arg, backend), [[1, 0], [3, 2]])
    # out is written in place
    out = to_backend(np.full((2, 2), -1.0), backend)
    res, arg = emb.lookup(t, to_backend(np.array([[0, 1], [3, 2]]), backend), mode="max",
                          return_argmax=True, out=out)
    assert res is out
    np.testing.assert_array_equal(from_backend(out, backend), [[4, 9], [7, 5]])


def test_lookup_return_argmax_errors_issue18() -> None:
    table = np.zeros((4, 2))
    with pytest.raises(ValueError, match=r"^lookup: return_argmax=True needs mode='max', "
                                         r"got mode='sum'$"):
        emb.lookup(table, [[0, 1]], return_argmax=True)
    with pytest.raises(ValueError, match=r"^lookup: per_sample_weights are not supported with "
                                         r"mode='max' and return_argmax=True"):
        emb.lookup(table, [[0, 1]], mode="max", per_sample_weights=[[1.0, 2.0]],
                   return_argmax=True)
    with pytest.raises(TypeError, match="^lookup: return_argmax must be True or False, got int"):
        emb.lookup(table, [[0, 1]], mode="max", return_argmax=1)
    with pytest.raises(IndexError, match=r"^lookup: ids out of range \[0, 4\)"):
        emb.lookup(table, [[0, 4]], mode="max", return_argmax=True)
    with pytest.raises(ValueError, match=r"^lookup: out must have shape \(1, 2\)"):
        emb.lookup(table, [[0, 1]], mode="max", return_argmax=True, out=np.zeros((2, 2)))


def test_lookup_return_argmax_through_the_emulator_matches_cpu_issue18(
        cuda_emu: Emulator) -> None:
    rng = np.random.default_rng(7)
    table = rng.standard_normal((30, 70)).astype(np.float32)  # 70 columns: 3 lanes' worth
    ids = asp.Jagged.from_list(random_bags(rng, 40, 30, max_len=12))
    (want, want_arg), (got, arg), launches = cpu_and_emu(
        cuda_emu, emb.lookup, table, ids, mode="max", return_argmax=True)
    assert launches == ["bag_max<float, long long>"]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(arg, want_arg)


@pytest.mark.hypothesis
@given(st.lists(st.lists(st.integers(0, 5), max_size=6), min_size=1, max_size=8),
       st.integers(1, 4), st.sampled_from([np.float32, np.float64, np.int64]))
def test_lookup_return_argmax_property_issue18(bags: list[list[int]], dim: int,
                                               dtype: Any) -> None:
    table = (np.arange(6 * dim).reshape(6, dim) * 7 % 5).astype(dtype)  # ties
    ids = asp.Jagged.from_list(bags) if any(bags) else np.zeros(0, np.int64)
    offsets = None if any(bags) else np.zeros(len(bags) + 1, np.int64)
    got, arg = emb.lookup(table, ids, offsets=offsets, mode="max", return_argmax=True)
    want, want_arg = ref_max_argmax(table, bags)
    assert got.shape == arg.shape == (len(bags), dim)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(arg, want_arg)
    # the max is the argmax row's value
    rows = np.take_along_axis(table[np.maximum(arg, 0)], np.arange(dim)[None, :, None]
                              .repeat(len(bags), 0), axis=2)[:, :, 0] if len(bags) else got
    np.testing.assert_array_equal(np.where(arg >= 0, rows, 0), got)


# ======================================================================== maplookup
def test_maplookup_embeddingtables_jl_example(backend: str) -> None:
    a = np.repeat(np.arange(1, 4), 2).reshape(3, 2)
    b = 10 * a
    ia, ib = np.array([1, 2, 1]) - 1, np.array([2, 1, 1]) - 1
    tables = to_backend([a, b], backend)
    res = from_backend(emb.maplookup(tables, to_backend([ia, ib], backend)), backend)
    np.testing.assert_array_equal(res[0], [[1, 1], [2, 2], [1, 1]])
    np.testing.assert_array_equal(res[1], [[20, 20], [10, 10], [10, 10]])
    combined = from_backend(emb.maplookup(tables, to_backend(np.stack([ia, ib], axis=1),
                                                             backend)), backend)
    for x, y in zip(res, combined, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("strategy", ["sequential", "parallel", "concat"])
def test_maplookup_strategies(strategy: str, backend: str) -> None:
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


@pytest.mark.parametrize("strategy", ["sequential", "parallel", "concat"])
def test_maplookup_sliced_null_and_empty_bags(strategy: str, backend: str) -> None:
    # offsets[0] > 0, a null bag, an empty bag and a null id: as Arrow and as a Jagged
    table = np.arange(16.0).reshape(8, 2)
    sliced = pa.array([[9], [1, 2, 3], None, [], [2, 4, 6, 7], [3, None, 6]]).slice(1)
    want = ref_lookup(table, [[1, 2, 3], [], [], [2, 4, 6, 7], [3, 6]], "mean")
    ids2 = np.array([[1, 2], [3, 4], [5, 6], [7, 0], [1, 1]])
    indices = [sliced, asp.Jagged.from_arrow(sliced), ids2]
    assert indices[1].offsets[0] == 1
    res = from_backend(emb.maplookup(to_backend([table] * 3, backend),
                                     to_backend(indices, backend), strategy, mode="mean"),
                       backend)
    got: list[Any] = np.split(res, 3, axis=1) if strategy == "concat" else list(res)
    if not on_device(backend) and strategy != "concat":  # Arrow bags give Arrow rows
        assert got[0].null_count == 2  # the null bag, and the empty one (mean)
        got[0] = np.array([row or [0.0, 0.0] for row in got[0].to_pylist()])
    for g, w in zip(got, [want, want, ref_lookup(table, ids2.tolist(), "mean")], strict=True):
        np.testing.assert_allclose(g, w)


def test_maplookup_integer_tables_widen(backend: str) -> None:
    big = to_backend(np.full((3, 2), 2**31 - 1, np.int32), backend)
    res = from_backend(emb.maplookup([big, to_backend(np.ones((3, 1), np.float32), backend)],
                                     to_backend([np.array([[0, 1]]), [2]], backend), "concat"),
                       backend)
    assert res.dtype == np.float64  # int64 sums and float32 rows meet in float64
    np.testing.assert_array_equal(res, [[2**32 - 2, 2**32 - 2, 1]])
    res = from_backend(emb.maplookup([big], to_backend([np.array([[0, 1]])], backend), "concat",
                                     prepend=1), backend)
    assert res.dtype == np.int64
    np.testing.assert_array_equal(res, [[0, 2**32 - 2, 2**32 - 2]])


def test_maplookup_concat_of_tables_of_different_dtypes(backend: str) -> None:
    # The "concat" matrix has the lookups' common dtype; the CUDA lookup_rows kernel copies
    # rows in the table's own dtype only, and raised NotImplementedError for such a block.
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    b = np.arange(3, dtype=np.float64).reshape(3, 1) + 0.5
    ids = to_backend([np.array([2, 0]), np.array([1, 1])], backend)
    res = emb.maplookup(to_backend([a, b], backend), ids, "concat", prepend=1)
    res = from_backend(res, backend)
    assert res.dtype == np.float64
    np.testing.assert_array_equal(res, [[0, 4, 5, 1.5], [0, 0, 1, 1.5]])


def test_maplookup_parallel_threads_bag_lookups(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    real = _backend.get_kernel

    def spy(family: str, name: str, xp: Any = np) -> Any:
        fn = real(family, name, xp)
        if name != "gather_reduce":
            return fn

        def wrapped(*args: Any) -> Any:
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
    rng = np.random.default_rng(15)
    n = 20_000
    tables = [rng.standard_normal((1000, 64)) for _ in range(3)]
    ids: list[Any] = [rng.integers(0, 1000, n), rng.integers(0, 1000, (n, 2)),
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
    with pytest.raises(TypeError, match="float16"):
        emb.maplookup([np.zeros((2, 2), np.float16)], [[0]])


def test_maplookup_refuses_host_and_device_inputs_together(cp: ModuleType) -> None:
    with pytest.raises(TypeError, match="^maplookup: inputs mix host.*move them to one "
                       "device first"):
        emb.maplookup([np.zeros((3, 2)), cp.asarray(np.zeros((3, 2)))],
                      [cp.asarray(np.array([0]))] * 2)


# ===================================================== issue 14: out must not alias inputs
_ALIAS = r"share memory; it would be read after parts of it were overwritten"


def test_lookup_out_overlapping_the_table_is_refused_issue14(backend: str) -> None:
    # Before: [[2, 3], [2, 3]] (row 0 read after out[0] = table[1] overwrote it)
    table = to_backend(np.arange(6.0).reshape(3, 2), backend)
    ids = to_backend(np.array([1, 0]), backend)
    with pytest.raises(ValueError, match=rf"^lookup: out and table {_ALIAS}") as info:
        emb.lookup(table, ids, out=table[:2])
    assert isinstance(info.value, ArrowSparseError)
    np.testing.assert_array_equal(from_backend(table, backend), np.arange(6.0).reshape(3, 2))
    out = to_backend(np.zeros((2, 2)), backend)
    np.testing.assert_array_equal(from_backend(emb.lookup(table, ids, out=out), backend),
                                  [[2, 3], [0, 1]])


def test_lookup_out_overlapping_ids_offsets_or_weights_is_refused_issue14(backend: str
                                                                          ) -> None:
    table = to_backend(np.arange(8.0).reshape(4, 2), backend)
    buffer = to_backend(np.arange(8.0), backend)
    out = buffer[:4].reshape(2, 2)
    weights = buffer[2:5]  # one weight per id, overlapping out's second row
    ids = to_backend(np.array([0, 1, 3]), backend)
    offsets = to_backend(np.array([0, 1, 3]), backend)
    with pytest.raises(ValueError, match=rf"^lookup: out and per_sample_weights {_ALIAS}"):
        emb.lookup(table, ids, offsets=offsets, per_sample_weights=weights, out=out)
    int_table = to_backend(np.arange(8).reshape(4, 2), backend)
    flat = to_backend(np.array([0, 1, 1, 0, 3, 3]), backend)
    with pytest.raises(ValueError, match=rf"^lookup: out and ids {_ALIAS}"):
        emb.lookup(int_table, flat[:2], out=flat.reshape(3, 2)[:2])
    bags = to_backend(np.array([0, 2, 0, 0]), backend)  # offsets 0, 2 in the first two
    with pytest.raises(ValueError, match=rf"^lookup: out and offsets {_ALIAS}"):
        emb.lookup(int_table, to_backend(np.array([1, 2]), backend), offsets=bags[:2],
                   out=bags.reshape(2, 2)[:1])


def test_lookup_out_overlapping_a_jagged_or_arrow_input_is_refused_issue14() -> None:
    values = np.array([0, 1, 2, 3])
    ids = asp.Jagged(values, np.array([0, 2, 4]))
    out = values.reshape(2, 2)
    with pytest.raises(ValueError, match=rf"^lookup: out and ids.values {_ALIAS}"):
        emb.lookup(np.arange(8).reshape(4, 2), ids, out=out)
    memory = np.array([0, 1, 2, 3, 0, 0, 0, 0])
    arrow_ids = pa.array(memory[:4])  # zero-copy: Arrow's buffer is this memory
    with pytest.raises(ValueError, match=rf"^lookup: out and ids {_ALIAS}"):
        emb.lookup(np.arange(8).reshape(4, 2), arrow_ids, out=memory.reshape(4, 2))


def test_lookup_into_a_block_beside_the_table_is_fine_issue14() -> None:
    # Disjoint column blocks of one matrix do not overlap (exact check on the host).
    wide = np.zeros((3, 4))
    wide[:, 2:] = np.arange(6.0).reshape(3, 2)
    emb.lookup(wide[:, 2:], [2, 0, 1], out=wide[:, :2])
    np.testing.assert_array_equal(wide[:, :2], [[4, 5], [0, 1], [2, 3]])


def test_maplookup_out_overlapping_a_table_is_refused_issue14(backend: str) -> None:
    out = to_backend(np.zeros((2, 5)), backend)
    a = to_backend(np.arange(6.0).reshape(3, 2), backend)
    ids = [to_backend(np.array([0, 1]), backend), to_backend(np.array([1, 0]), backend)]
    with pytest.raises(ValueError, match=rf"^maplookup: out and tables\[1\] {_ALIAS}"):
        emb.maplookup([a, out[:, :2]], ids, "concat", prepend=1, out=out)
    int_out = to_backend(np.zeros((2, 5), np.int64), backend)
    b = to_backend(np.arange(6).reshape(3, 2), backend)
    with pytest.raises(ValueError, match=rf"^maplookup: out and indices\[0\] {_ALIAS}"):
        emb.maplookup([b, b], [int_out[:, 1], ids[1]], "concat", prepend=1, out=int_out)


def test_arrow_float_ids_are_refused_whatever_the_child_holds_issue14() -> None:
    # Before: an empty visible range over a child of length 0 passed as empty integer
    # bags (zeros), the same rows over a longer child raised: the hidden buffer decided.
    table = np.arange(20.0).reshape(10, 2)
    hidden = pa.Array.from_buffers(pa.large_list(pa.float64()), 2, [
        None, pa.py_buffer(np.array([1, 1, 1], np.int64))], children=[pa.array([0.0])])
    clean = pa.array([[], []], pa.large_list(pa.float64()))
    for ids in (hidden, clean):
        with pytest.raises(TypeError, match=r"^lookup: ids must be a Jagged \(or Arrow list "
                                            r"array\) of 1-D integers$"):
            emb.lookup(table, ids)
    np.testing.assert_array_equal(emb.lookup(table, asp.Jagged.from_list([[]])), [[0, 0]])
