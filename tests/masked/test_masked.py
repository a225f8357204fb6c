"""Tests of ``arrow_sparse.masked``: every op on every layout against a dense numpy oracle.

Tests taking ``backend`` also run with the CUDA kernels on the emulator and on device
arrays of the stand-in CuPy (``tests/conftest.py``): inputs and masks are moved to the
backend's device and every result is checked to come back from there.

The public reductions over sparse and jagged inputs also run on the CUDA kernels of the
emulator, against the CPU (``cuda_emu``, every launch also in reversed and shuffled
thread order); the kernels themselves are tested in test_kernels.py.
"""

from __future__ import annotations

import functools
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse import _backend, masked
from arrow_sparse.errors import (
    ArrowSparseIndexError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)
from arrow_sparse.sparse import SparseTensor
from tests._matrix import pairwise_parametrize
from tests.conftest import from_backend, on_device, to_backend
from tests.cuda_emu import fake_cupy
from tests.cuda_emu.emu import Emulator

REDUCTIONS = ["sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "norm", "var", "std",
              "logsumexp"]
NORMALIZATIONS = ["softmax", "log_softmax"]
LAYOUTS = ["dense", "coo", "csr", "jagged"]
MASK_LAYOUTS = ["none", "dense", "broadcast", "coo", "csr", "jagged"]


# ---------------------------------------------------------------------------- the oracle
def reference(op: str, x: np.ndarray, m: np.ndarray, dim: Any, keepdim: bool = False,
              **kw: Any) -> Any:
    """``op`` on ``where(m, x, identity)`` in plain numpy (torch.masked's definitions)."""
    x = x.astype(np.float64)
    axis = None if dim is None or dim == () else dim
    red: dict[str, Any] = {"axis": axis, "keepdims": keepdim}
    with np.errstate(all="ignore"):
        if op == "sum":
            return np.sum(np.where(m, x, 0.0), **red)
        if op == "prod":
            return np.prod(np.where(m, x, 1.0), **red)
        if op == "amax":
            return np.max(np.where(m, x, -np.inf), **red)
        if op == "amin":
            return np.min(np.where(m, x, np.inf), **red)
        if op == "argmax":
            return np.argmax(np.where(m, x, -np.inf), **red)
        if op == "argmin":
            return np.argmin(np.where(m, x, np.inf), **red)
        count = np.sum(m, **red)
        if op == "mean":
            return np.sum(np.where(m, x, 0.0), **red) / count
        if op in ("var", "std"):
            corr = kw.get("correction", 1.0 if kw.get("unbiased", True) else 0.0)
            mu = np.sum(np.where(m, x, 0.0), axis=axis, keepdims=True) / np.sum(
                m, axis=axis, keepdims=True)
            ssd = np.sum(np.where(m, (x - mu) ** 2, 0.0), **red)
            out = ssd / np.maximum(count - corr, 0.0)
            return np.sqrt(out) if op == "std" else out
        if op == "norm":
            p = kw.get("ord", 2.0)
            a = np.abs(np.where(m, x, np.inf if p == -np.inf else 0.0))
            if p == np.inf:
                return np.max(a, **red)
            if p == -np.inf:
                return np.min(a, **red)
            if p == 0:
                return np.sum(a != 0, **red).astype(np.float64)
            return np.sum(a ** p, **red) ** (1.0 / p)
        if op == "logsumexp":
            a = np.where(m, x, -np.inf)
            mx = np.max(a, axis=axis, keepdims=True)
            mx = np.where(np.isfinite(mx), mx, 0.0)
            out = np.log(np.sum(np.exp(a - mx), axis=axis, keepdims=True)) + mx
            return out if keepdim else np.squeeze(out, axis=axis)
        a = np.where(m, x, -np.inf)
        shifted = a - np.max(a, axis=dim, keepdims=True)
        lse = np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))
        return np.exp(shifted - lse) if op == "softmax" else shifted - lse
    raise AssertionError(op)  # pragma: no cover


# ------------------------------------------------------------------------------ backends
def on(x: Any, backend: str) -> Any:
    """An input or a mask (array, Jagged, sparse tensor) on the backend's device."""
    if isinstance(x, SparseTensor):
        return x.to_device("cuda") if on_device(backend) else x
    return to_backend(x, backend)


def check_on(got: Any, want: Any, backend: str) -> None:
    """:func:`check` of a result that must come back from the backend's device."""
    check(from_backend(got, backend), np.asarray(want))


# ------------------------------------------------------------------------------- layouts
def to_layout(layout: str, dense: np.ndarray, stored: np.ndarray, lengths: np.ndarray | None,
              rng: np.random.Generator) -> Any:
    """``dense`` (zero where not stored) in ``layout``; explicit zeros are kept as stored."""
    if layout == "dense":
        return dense
    if layout == "jagged":
        assert lengths is not None
        rows = [dense[i, :n] for i, n in enumerate(lengths)]
        return asp.Jagged.from_lengths(np.concatenate(rows), lengths)
    coords = np.nonzero(stored)
    order = rng.permutation(len(coords[0]))
    indices = np.array([c[order] for c in coords], dtype=np.int64).reshape(dense.ndim, -1)
    coo = asp.SparseCOO(indices, dense[coords][order], dense.shape)
    return coo if layout == "coo" else coo.to_csr()


def mask_layout(layout: str, m: np.ndarray, shape: tuple[int, ...],
                rng: np.random.Generator) -> tuple[Any, np.ndarray]:
    """A mask in ``layout`` and its dense view (unspecified = False)."""
    if layout == "none":
        return None, np.ones(shape, dtype=bool)
    if layout == "dense":
        return m, m
    if layout == "broadcast":
        row = m[:1]
        return row, np.broadcast_to(row, shape)
    if layout == "csr" and len(shape) != 2 or layout == "jagged" and len(shape) < 2:
        layout = "coo"
    if layout == "jagged":
        # the mask's rows need not have the input's lengths: its tail is False
        lengths = rng.integers(0, shape[1] + 1, size=shape[0])
        view = m.copy()
        for i, n in enumerate(lengths):
            view[i, n:] = False
        rows = [m[i, :n] for i, n in enumerate(lengths)]
        return asp.Jagged.from_lengths(np.concatenate(rows), lengths), view
    # sparse masks store some False values too, and leave some True-looking places out
    stored = rng.random(shape) < 0.7
    view = m & stored
    coords = np.nonzero(stored)
    coo = asp.SparseCOO(np.array(coords, dtype=np.int64).reshape(len(shape), -1), m[coords], shape)
    return (coo if layout == "coo" else coo.to_csr()), view


@st.composite
def cases(draw: st.DrawFn, layout: str, specials: bool = True) -> tuple[
        Any, np.ndarray, np.ndarray | None, np.ndarray, np.random.Generator]:
    seed = draw(st.integers(0, 2**32 - 1))
    special = specials and draw(st.sampled_from([False, False, True]))
    rng = np.random.default_rng(seed)
    if layout == "csr":
        shape: tuple[int, ...] = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    elif layout == "jagged":
        shape = (draw(st.integers(1, 5)), draw(st.integers(1, 4)),
                 *draw(st.lists(st.integers(1, 3), max_size=1)))
    else:
        shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    # small integers as floats: exact sums and products, and plenty of ties for argmax
    dense = rng.integers(-3, 4, size=shape).astype(np.float64)
    if special:  # NaN and infinities: argmax/argmin pick the first NaN, as numpy does
        spots = rng.random(shape) < 0.2
        dense[spots] = rng.choice([np.nan, np.inf, -np.inf], size=int(spots.sum()))
    lengths = None
    if layout == "jagged":
        lengths = rng.integers(0, shape[1] + 1, size=shape[0])
        lengths[rng.integers(shape[0])] = shape[1]
        stored = np.arange(shape[1])[None, :] < lengths[:, None]
        stored = stored.reshape(stored.shape + (1,) * (len(shape) - 2))
        stored = np.broadcast_to(stored, shape)
    elif layout == "dense":
        stored = np.ones(shape, dtype=bool)
    else:
        stored = rng.random(shape) < draw(st.sampled_from([0.0, 0.3, 0.8]))
    dense = np.where(stored, dense, 0.0)
    m = rng.random(shape) < draw(st.sampled_from([0.0, 0.5, 0.9]))
    x = to_layout(layout, dense, stored, lengths, rng)
    return x, dense, lengths, m, rng


def dims_for(ndim: int, data: st.DataObject, tuples: bool = True) -> Any:
    single = st.integers(-ndim, ndim - 1)
    if not tuples:
        return data.draw(st.one_of(st.none(), single))
    subsets = st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True)
    return data.draw(st.one_of(st.none(), single, subsets.map(tuple)))


def dense_kw(op: str) -> dict[str, Any]:
    """``dense=True`` for the reductions that give a sparse input's layout by default."""
    return {} if op.startswith("arg") or op in NORMALIZATIONS else {"dense": True}


def check(got: np.ndarray, want: np.ndarray) -> None:
    assert isinstance(got, np.ndarray)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True)


# ---------------------------------------------------------------------------- properties
@pytest.mark.hypothesis
@pairwise_parametrize("op,layout,mask_kind", REDUCTIONS, LAYOUTS, MASK_LAYOUTS)
@given(data=st.data())
def test_reduction_matches_dense_reference(op: str, layout: str, mask_kind: str,
                                           data: st.DataObject) -> None:
    x, dense, _lengths, m, rng = data.draw(cases(layout))
    mask, view = mask_layout(mask_kind, m, dense.shape, rng)
    dim = dims_for(dense.ndim, data, tuples=not op.startswith("arg"))
    keepdim = data.draw(st.booleans())
    kw: dict[str, Any] = {}
    if op == "norm":
        kw["ord"] = data.draw(st.sampled_from([2.0, 1.0, 3.0, 0.0, -1.0, np.inf, -np.inf]))
    if op in ("var", "std"):
        kw = data.draw(st.sampled_from([{}, {"unbiased": False}, {"correction": 2}]))
    got = getattr(masked, op)(x, dim=dim, keepdim=keepdim, mask=mask, **kw, **dense_kw(op))
    check(got, reference(op, dense, view, dim, keepdim, **kw))


@pytest.mark.hypothesis
@pairwise_parametrize("op,layout,mask_kind", NORMALIZATIONS, LAYOUTS, MASK_LAYOUTS)
@given(data=st.data())
def test_normalization_matches_dense_reference(op: str, layout: str, mask_kind: str,
                                               data: st.DataObject) -> None:
    x, dense, _lengths, m, rng = data.draw(cases(layout))
    mask, view = mask_layout(mask_kind, m, dense.shape, rng)
    dim = data.draw(st.integers(-dense.ndim, dense.ndim - 1))
    check(getattr(masked, op)(x, dim, mask=mask), reference(op, dense, view, dim))


@pytest.mark.hypothesis
@pytest.mark.parametrize("op", REDUCTIONS)
@given(data=st.data())
def test_layout_invariance(op: str, data: st.DataObject) -> None:
    x, dense, _lengths, m, rng = data.draw(cases("coo"))
    dim = dims_for(dense.ndim, data, tuples=False)
    want = getattr(masked, op)(dense, dim=dim, mask=m)
    check(getattr(masked, op)(x, dim=dim, mask=m, **dense_kw(op)), want)
    if dense.ndim == 2:
        check(getattr(masked, op)(x.to_csr(), dim=dim, mask=m, **dense_kw(op)), want)
        check(getattr(masked, op)(x.to_csc(), dim=dim, mask=m, **dense_kw(op)), want)


def sample(layout: str, rng: np.random.Generator) -> tuple[Any, np.ndarray, np.ndarray]:
    """A fixed input of ``layout`` as :func:`cases` draws them: ``(input, dense, mask)``.

    NaN and infinities included, some rows of a Jagged empty, 3-d where the layout allows.
    """
    shape = {"csr": (4, 5), "jagged": (4, 3, 2)}.get(layout, (3, 4, 2))
    dense = rng.integers(-3, 4, size=shape).astype(np.float64)
    dense[rng.random(shape) < 0.1] = np.nan
    dense[rng.random(shape) < 0.1] = np.inf
    lengths = None
    if layout == "jagged":
        lengths = np.array([2, 0, 3, 1])
        stored = np.broadcast_to((np.arange(3)[None, :] < lengths[:, None])[..., None], shape)
    else:
        stored = rng.random(shape) < (1.0 if layout == "dense" else 0.5)
    dense = np.where(stored, dense, 0.0)
    return to_layout(layout, dense, stored, lengths, rng), dense, rng.random(shape) < 0.6


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", REDUCTIONS + NORMALIZATIONS)
def test_every_op_and_mask_layout_on_every_backend(op: str, layout: str, backend: str) -> None:
    rng = np.random.default_rng(7)
    x, dense, m = sample(layout, rng)
    kw: dict[str, Any] = {"ord": 3.0} if op == "norm" else {}
    dims = ([0, -1] if op in NORMALIZATIONS else [None, 1] if op.startswith("arg")
            else [None, 1, (0, 1)])
    for mask_kind in MASK_LAYOUTS:
        mask, view = mask_layout(mask_kind, m, dense.shape, rng)
        for dim in dims:
            if op in NORMALIZATIONS:
                got = getattr(masked, op)(on(x, backend), dim, mask=on(mask, backend))
            else:
                got = getattr(masked, op)(on(x, backend), dim=dim, mask=on(mask, backend), **kw,
                                          **dense_kw(op))
            check_on(got, reference(op, dense, view, dim, **kw), backend)


# -------------------------------------------------------------------------- torch.masked
TORCH_KW: dict[str, dict[str, Any]] = {"norm": {"ord": 2.0}, "var": {}, "std": {}}


@pytest.mark.hypothesis
@pytest.mark.parametrize("op", REDUCTIONS + NORMALIZATIONS)
@given(data=st.data())
def test_matches_torch_masked(op: str, data: st.DataObject) -> None:
    torch = pytest.importorskip("torch")
    x, dense, _lengths, m, _rng = data.draw(cases("dense"))
    arg = op.startswith("arg") or op in NORMALIZATIONS
    dim = data.draw(st.integers(0, dense.ndim - 1)) if arg else dims_for(dense.ndim, data)
    t, tm = torch.from_numpy(dense), torch.from_numpy(m)
    if op == "norm":
        want = torch.masked.norm(t, 2.0, dim, mask=tm)
    else:
        want = getattr(torch.masked, op)(t, dim, mask=tm)
    got = masked.norm(x, 2.0, dim, mask=m) if op == "norm" else getattr(masked, op)(x, dim, mask=m)
    check(got, want.numpy())


# ----------------------------------------------------------------------------- semantics
def test_fully_masked_slices_follow_torch(backend: str) -> None:
    x = on(asp.SparseCSR.from_dense(np.array([[1.0, 0.0], [2.0, -3.0]])), backend)
    mask = on(np.array([[False, False], [True, True]]), backend)
    nan = np.nan
    expected = {"sum": [0.0, -1.0], "prod": [1.0, -6.0], "amax": [-np.inf, 2.0],
                "amin": [np.inf, -3.0], "argmax": [0, 0], "argmin": [0, 1], "mean": [nan, -0.5],
                "norm": [0.0, np.sqrt(13.0)], "var": [nan, 12.5], "std": [nan, np.sqrt(12.5)],
                "logsumexp": [-np.inf, np.log(np.exp(2.0) + np.exp(-3.0))]}
    for op, want in expected.items():
        check_on(getattr(masked, op)(x, dim=1, mask=mask, **dense_kw(op)), want, backend)
    check_on(masked.norm(x, -np.inf, 1, mask=mask, dense=True), [np.inf, 2.0], backend)
    assert np.isnan(from_backend(masked.softmax(x, 1, mask=mask), backend)[0]).all()


def test_default_mask_counts_unspecified_elements_as_zeros(backend: str) -> None:
    coo = on(asp.SparseCOO([[0, 0], [0, 2]], np.array([2.0, 3.0]), (2, 3)), backend)
    check_on(masked.prod(coo, 1, dense=True), [0.0, 0.0], backend)
    check_on(masked.mean(coo, 1, dense=True), [5.0 / 3.0, 0.0], backend)
    check_on(masked.amin(coo, 1, dense=True), [0.0, 0.0], backend)
    pattern = on(asp.SparseCOO([[0, 0], [0, 2]], np.ones(2, dtype=bool), (2, 3)), backend)
    check_on(masked.prod(coo, 1, mask=pattern, dense=True), [6.0, 1.0], backend)
    check_on(masked.mean(coo, 1, mask=pattern, dense=True), [2.5, np.nan], backend)


def test_coo_duplicates_add_up(backend: str) -> None:
    coo = on(asp.SparseCOO([[0, 0, 1]], np.array([1.0, 2.0, 5.0]), (2,)), backend)
    check_on(masked.amax(coo), 5.0, backend)
    check_on(masked.amin(coo, 0, mask=on(np.array([True, False]), backend)), 3.0, backend)


def test_jagged_dense_view_and_null_rows(backend: str) -> None:
    j = on(asp.Jagged.from_list([[1.0, 2.0, 3.0], None, [3.0, 6.0]]), backend)
    check_on(masked.sum(j, 1), [6.0, 0.0, 9.0], backend)
    check_on(masked.amin(j, 1), [1.0, 0.0, 0.0], backend)
    valid = on(asp.Jagged.from_list([[True] * 3, [], [True] * 2]), backend)
    check_on(masked.amin(j, 1, mask=valid), [1.0, np.inf, 3.0], backend)
    check_on(masked.mean(j, 0, mask=valid), [2.0, 4.0, 3.0], backend)
    nulls = on(asp.Jagged.from_list([[1.0, None, 3.0], [-2.0]]), backend)  # a null value
    check_on(masked.amax(nulls, 1, mask=on(np.array([True, True, True]), backend)),
             [3.0, 0.0], backend)
    check_on(masked.argmin(nulls, 1), [1, 0], backend)  # unspecified: a zero


def test_jagged_with_inner_dimension(backend: str) -> None:
    j = on(asp.Jagged(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), np.array([0, 2, 3])),
           backend)
    check_on(masked.sum(j, 1), [[4.0, 6.0], [5.0, 6.0]], backend)
    check_on(masked.amax(j, (0, 1)), [5.0, 6.0], backend)


def test_dtypes(backend: str) -> None:
    x = on(np.array([[1, 2], [3, 4]], dtype=np.int32), backend)
    assert masked.sum(x, 0).dtype == np.int64
    assert masked.amax(x, 0).dtype == np.int32
    check_on(masked.amax(x, 0, mask=on(np.zeros((2, 2), bool), backend)),
             np.full(2, np.iinfo(np.int32).min), backend)
    assert masked.mean(x).dtype == np.float64
    f = on(np.ones((2, 2), dtype=np.float32), backend)
    for op in ("sum", "prod", "amax", "mean", "var", "norm", "logsumexp"):
        assert getattr(masked, op)(f, 0).dtype == np.float32, op
    assert masked.softmax(f, 0).dtype == np.float32
    check_on(masked.sum(on(np.array([True, True, False]), backend)), 2, backend)


def test_keepdim_shape(backend: str) -> None:
    x = on(asp.SparseCOO.from_dense(np.arange(24.0).reshape(2, 3, 4)), backend)
    assert masked.sum(x, (0, 2), keepdim=True).shape == (1, 3, 1)
    assert masked.argmax(x, 1, keepdim=True).shape == (2, 1, 4)
    assert masked.mean(x).shape == ()


def test_argmax_prefers_first_unspecified_zero(backend: str) -> None:
    csr = on(asp.SparseCSR([0, 2, 2], [1, 3], np.array([-1.0, -2.0]), (2, 4)), backend)
    check_on(masked.argmax(csr, 1), [0, 0], backend)
    mask = on(asp.SparseCSR([0, 2, 3], [1, 2, 3], np.array([True, True, True]), (2, 4)), backend)
    check_on(masked.argmax(csr, 1, mask=mask), [2, 3], backend)
    check_on(masked.argmax(csr, None, mask=mask), 2, backend)


def test_arg_picks_the_first_nan_issue_6(backend: str) -> None:
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 0.0, np.nan]])
    not_nan = on(~np.isnan(x), backend)
    for layout in (x, asp.SparseCOO.from_dense(x), asp.SparseCSR.from_dense(x)):
        layout = on(layout, backend)
        check_on(masked.argmax(layout, 1), [1, 0], backend)
        check_on(masked.argmin(layout, 1), [1, 0], backend)
        check_on(masked.argmax(layout), 1, backend)
        # a masked-out NaN is the identity, not a NaN
        check_on(masked.argmax(layout, 1, mask=not_nan), [2, 1], backend)
    sparse = on(asp.SparseCSR([0, 1, 2], [2, 1], np.array([np.nan, -1.0]), (2, 3)), backend)
    check_on(masked.argmax(sparse, 1), [2, 0], backend)  # row 0: the NaN beats the zeros


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int32, np.uint16, bool])
def test_strided_and_entries_paths_agree(dtype: Any, backend: str) -> None:
    rng = np.random.default_rng(6)
    x = (rng.integers(0, 3, size=(4, 5, 3)) if dtype is bool or np.dtype(dtype).kind == "u"
         else rng.integers(-4, 5, size=(4, 5, 3))).astype(dtype)
    view = np.asfortranarray(x)[:, ::2]  # strided, not C-contiguous
    mask = rng.random(view.shape) < 0.6
    coo = on(asp.SparseCOO.from_dense(view), backend)
    sparse_mask = on(asp.SparseCOO.from_dense(mask), backend)
    dense_view, dense_mask = on(view, backend), on(mask, backend)
    for op in REDUCTIONS:
        for dim in (None, 1, (0, 2)) if not op.startswith("arg") else (None, 1):
            for m, entries_mask in ((None, None), (dense_mask, dense_mask),
                                    (sparse_mask, dense_mask)):
                got = getattr(masked, op)(dense_view, dim=dim, mask=m, keepdim=True)
                want = getattr(masked, op)(coo, dim=dim, mask=entries_mask, keepdim=True,
                                           **dense_kw(op))
                assert got.dtype == want.dtype, (op, dim)
                check(from_backend(got, backend), from_backend(want, backend))


# -------------------------------------------------------------------------------- errors
def test_errors() -> None:
    x = np.ones((2, 3))
    with pytest.raises(ArrowSparseIndexError, match=r"^masked.sum: dim 2 is out of range"):
        masked.sum(x, 2)
    with pytest.raises(ArrowSparseValueError, match="appears more than once"):
        masked.sum(x, (0, -2))
    with pytest.raises(ArrowSparseTypeError, match=r"^masked.sum: dim must be None"):
        masked.sum(x, 1.5)
    with pytest.raises(ArrowSparseValueError, match="does not broadcast"):
        masked.sum(x, mask=np.ones(2, dtype=bool))
    with pytest.raises(ArrowSparseValueError, match="mask has dense shape"):
        masked.sum(x, mask=asp.SparseCOO.from_dense(np.ones((3, 3), dtype=bool)))
    with pytest.raises(ArrowSparseTypeError, match=r"^masked.argmax: dim must be None or an int"):
        masked.argmax(x, (0, 1))
    with pytest.raises(ArrowSparseValueError, match="empty slice"):
        masked.argmax(np.ones((2, 0)), 1)
    with pytest.raises(ArrowSparseValueError, match="only one of unbiased and correction"):
        masked.var(x, unbiased=True, correction=1)
    with pytest.raises(ArrowSparseTypeError, match=r"^masked.softmax: dim must be an int"):
        masked.softmax(x, None)  # type: ignore[arg-type]
    with pytest.raises(ArrowSparseTypeError, match="nested Jagged"):
        masked.sum(asp.Jagged.from_list([[[1.0]], [[2.0, 3.0]]]))
    with pytest.raises(ArrowSparseTypeError, match=r"^masked.sum: input must be an array"):
        masked.sum(object())
    with pytest.raises(ArrowSparseTypeError, match=r"^masked.norm: ord must be a number"):
        masked.norm(x, "fro")  # type: ignore[arg-type]
    with pytest.raises(ArrowSparseValueError, match="at least 1-dimensional"):
        masked.sum(np.float64(1.0))


# --------------------------------------------------------------------------------- scale
def _huge_csr(n: int, seed: int) -> asp.SparseCSR:
    """``n x n`` with ``n`` entries in random rows, columns unsorted (not canonical)."""
    rng = np.random.default_rng(seed)
    indptr = np.sort(rng.integers(0, n, size=n + 1))
    indptr[0], indptr[-1] = 0, n
    return asp.SparseCSR(indptr, rng.integers(0, n, size=n), rng.random(n), (n, n))


@pytest.mark.parametrize("dim", [0, 1])
def test_huge_csr_reduces_without_densifying(dim: int) -> None:
    """A 10^6 x 10^6 CSR with 10^6 entries, with and without a sparse mask.

    Only memory is asserted here (the dense shape would be 8 TB); the time is
    measured by benchmarks/bench_sparse.py (``masked_huge``).
    """
    n = 10**6
    csr = _huge_csr(n, 0)
    other = _huge_csr(n, 1)
    # the mask covers every other entry of the input and as many other places
    coords = np.concatenate([csr.to_coo().indices[:, ::2], other.to_coo().indices], axis=1)
    mask = asp.SparseCOO(coords, np.arange(coords.shape[1]) % 3 != 0, (n, n)).to_csr()
    for op in ("sum", "amax", "argmax", "mean", "var"):
        for m in (None, mask):
            # the first call compiles every kernel on the way (canonicalisation and the
            # parallel variants included): Numba's compiler allocates through Python too
            getattr(masked, op)(csr, dim, mask=m)
            tracemalloc.start()
            out = getattr(masked, op)(csr, dim, mask=m)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            assert out.shape == (n,)
            assert peak < 2**28, (op, m is not None, peak)  # a few arrays of nnz or n
    pytest.importorskip("scipy.sparse")
    s = csr.to_scipy()
    for m in (None, mask):
        want = (s if m is None else s.multiply(m.canonical().to_scipy())).sum(axis=dim)
        check(masked.sum(csr, dim, mask=m, dense=True), np.asarray(want).reshape(-1))


# ---------------------------------------- on the CUDA kernels (emulated) against the CPU
def sparse_inputs() -> list[tuple[str, Any, Any]]:
    rng = np.random.default_rng(11)
    dense = rng.integers(-3, 4, size=(6, 8)).astype(np.float64)
    dense[rng.random(dense.shape) < 0.4] = 0
    dense[2] = 0  # an empty row
    mask = rng.random(dense.shape) < 0.6
    coo = asp.SparseCOO.from_dense(dense)
    csr = asp.SparseCSR.from_dense(dense)
    jagged = asp.Jagged.from_list([[1.5, -2.0, 3.0], [], [0.0, 4.0], [-1.0]])
    jmask = asp.Jagged.from_list([[True, False, True], [], [True, True], [False]])
    return [("coo", coo, mask), ("csr", csr, mask), ("jagged", jagged, jmask)]


def norm_of(p: float) -> Callable[..., Any]:
    return lambda x, dim, mask: asp.masked.norm(x, p, dim, mask=mask, dense=True)


#: Each public reduction, giving dense results (``dense=True`` where it has the option).
REDUCTION_CALLS: dict[str, Callable[..., Any]] = {
    **{op: functools.partial(getattr(asp.masked, op), **dense_kw(op))
       for op in ("sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "var", "std",
                  "logsumexp")},
    **{f"norm{p}": norm_of(p) for p in (2, 1, 0, 0.5, float("inf"), float("-inf"))},
}


@pytest.mark.parametrize("op", sorted(REDUCTION_CALLS))
@pytest.mark.parametrize("layout", ["coo", "csr", "jagged"])
def test_public_masked_reductions_match_cpu(cuda_emu: Emulator, op: str, layout: str) -> None:
    name, x, mask = next(c for c in sparse_inputs() if c[0] == layout)
    fn = REDUCTION_CALLS[op]
    for dim in (0, 1):
        _backend.set_cuda_module_factory(None)
        expected = fn(x, dim, mask=mask)
        _backend.set_cuda_module_factory(cuda_emu)
        before = len(cuda_emu.launches)
        got = fn(x, dim, mask=mask)
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-12, equal_nan=True)
        assert any(n.startswith("masked_") for n in cuda_emu.launches[before:]), name


def test_public_reductions_with_sparse_masks_match_cpu(cuda_emu: Emulator) -> None:
    """Sparse masks go through sorted_member, arg reductions through first_unstored."""
    rng = np.random.default_rng(12)
    dense = rng.integers(-3, 4, size=(6, 8)).astype(np.float64)
    dense[rng.random(dense.shape) < 0.4] = 0
    mask = rng.random(dense.shape) < 0.6
    mask[1] = True  # a row masked in everywhere
    inputs = [asp.SparseCOO.from_dense(dense), asp.SparseCSR.from_dense(dense)]
    masks = [None, asp.SparseCOO.from_dense(mask), asp.SparseCSR.from_dense(mask)]
    for x in inputs:
        for m in masks:
            for op in ("argmax", "argmin", "sum", "amax"):
                for dim in (None, 0, 1):
                    fn = REDUCTION_CALLS[op]
                    _backend.set_cuda_module_factory(None)
                    expected = fn(x, dim, mask=m)
                    _backend.set_cuda_module_factory(cuda_emu)
                    before = len(cuda_emu.launches)
                    got = fn(x, dim, mask=m)
                    assert got.dtype == expected.dtype
                    np.testing.assert_array_equal(got, expected)
                    launched = {n.split("<")[0] for n in cuda_emu.launches[before:]}
                    assert m is None or "sorted_member" in launched
                    assert op not in ("argmax", "argmin") or "first_unstored_candidates" in \
                        launched


# ------------------------------------------------------------------------------- devices
def test_host_and_device_inputs_are_refused_together(cp: Any) -> None:
    x = np.array([[1.0, 0.0], [2.0, 3.0]])
    csr = asp.SparseCSR.from_dense(x)
    fix = r" .*; move them to one device first"
    with pytest.raises(TypeError, match=r"^masked\.sum: mask is a host" + fix):
        masked.sum(cp.asarray(x), mask=np.ones((2, 2), bool))
    with pytest.raises(TypeError, match=r"^masked\.amax: input is a host" + fix):
        masked.amax(x, mask=cp.asarray(np.ones((2, 2), bool)))
    with pytest.raises(TypeError, match=r"^masked\.mean: mask is a host" + fix):
        masked.mean(csr.to_device("cuda"), 1, mask=csr)
    with pytest.raises(TypeError, match=r"^masked\.softmax: input is a host" + fix):
        masked.softmax(csr, 1, mask=csr.to_device("cuda"))
    with pytest.raises(TypeError, match=r"^masked\.argmax: mask is a host" + fix):
        masked.argmax(asp.Jagged.from_list([[1.0]]).to_device("cuda"), 1, mask=[[True]])


def test_scalar_masks_and_results_on_the_device(cp: Any) -> None:
    x = np.array([[1.0, 0.0], [2.0, 3.0]])
    csr = asp.SparseCSR.from_dense(x)
    for mask in (True, np.bool_(False)):
        want = masked.sum(csr, 1, mask=mask, dense=True)
        for layout in (cp.asarray(x), csr.to_device("cuda")):
            got = masked.sum(layout, 1, mask=mask, dense=True)
            assert isinstance(got, fake_cupy.ndarray)
            np.testing.assert_array_equal(got.get(), want)


# --------------------------------------------------------------------- result layouts
VALUE_REDUCTIONS = [op for op in REDUCTIONS if not op.startswith("arg")]


def stored_pattern(x: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Where ``x`` (sparse or jagged) stores an element, as a dense bool array."""
    stored = np.zeros(shape, dtype=bool)
    if isinstance(x, asp.Jagged):
        for i, n in enumerate(np.diff(x.offsets)):
            stored[i, :n] = True
    else:
        stored[tuple(x.to_coo().indices)] = True
    return stored


@pytest.mark.hypothesis
@pairwise_parametrize("op,layout,mask_kind", VALUE_REDUCTIONS, ["coo", "csr", "jagged"],
                      ["none", "dense", "coo"])
@given(data=st.data())
def test_reductions_keep_the_input_layout(op: str, layout: str, mask_kind: str,
                                          data: st.DataObject) -> None:
    x, dense, _lengths, m, rng = data.draw(cases(layout))
    mask, view = mask_layout(mask_kind, m, dense.shape, rng)
    dim = dims_for(dense.ndim, data)
    keepdim = data.draw(st.booleans())
    want = reference(op, dense, view, dim, keepdim)
    got = getattr(masked, op)(x, dim=dim, keepdim=keepdim, mask=mask)
    dims = masked_dims(dim, dense.ndim)
    if np.ndim(want) == 0 or isinstance(x, asp.Jagged) and min(dims) < 2:
        check(got, want)  # a scalar, or a Jagged reduced over its rows or lengths
        return
    if isinstance(x, asp.Jagged):  # reduced over inner dimensions: the same rows
        assert isinstance(got, asp.Jagged)
        np.testing.assert_array_equal(got.offsets, x.offsets)
        rows = [want[i, :n] for i, n in enumerate(np.diff(x.offsets))]
        np.testing.assert_allclose(got.values, np.concatenate(rows), rtol=1e-9, equal_nan=True)
        return
    expected_format = {"coo": asp.SparseCOO, "csr": asp.SparseCSR if np.ndim(want) == 2
                       else asp.SparseCOO}[layout]
    assert type(got) is expected_format
    assert got.shape == np.shape(want)
    axis = tuple(dims)
    reached = np.any(stored_pattern(x, dense.shape) & view, axis=axis, keepdims=keepdim)
    some_in = np.any(view, axis=axis, keepdims=keepdim)
    got_stored = stored_pattern(got, got.shape)
    assert not (reached & ~got_stored).any(), "a cell reached by a stored masked-in element"
    assert not (got_stored & ~some_in).any(), "a fully masked-out cell is stored"
    np.testing.assert_allclose(got.to_dense()[some_in], want[some_in], rtol=1e-9, atol=1e-12,
                               equal_nan=True)
    np.testing.assert_array_equal(got.to_dense()[~some_in], 0.0)
    check(getattr(masked, op)(x, dim=dim, keepdim=keepdim, mask=mask, dense=True), want)


def masked_dims(dim: Any, ndim: int) -> list[int]:
    """The reduced dimensions of ``dim``, non-negative."""
    if dim is None or dim == ():
        return list(range(ndim))
    return sorted(d % ndim for d in (dim if isinstance(dim, tuple) else (dim,)))


@pytest.mark.hypothesis
@pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled")
@pytest.mark.parametrize("op", ["sum", "prod", "amax", "amin"])
@given(data=st.data())
def test_sparse_results_match_torch_masked(op: str, data: st.DataObject) -> None:
    torch = pytest.importorskip("torch")
    x, dense, _lengths, m, _rng = data.draw(cases("coo", specials=False))
    stored = stored_pattern(x, dense.shape)
    dim = data.draw(st.integers(0, dense.ndim - 1))
    keepdim = data.draw(st.booleans())
    # torch takes a sparse mask of the input's pattern or a sub-pattern; torch.masked
    # needs one for every op but sum
    mask = m & stored
    coo_mask = asp.SparseCOO.from_dense(mask)
    got = getattr(masked, op)(x, dim, keepdim=keepdim, mask=coo_mask)
    want = getattr(torch.masked, op)(torch.from_numpy(dense).to_sparse(), dim, keepdim=keepdim,
                                     mask=torch.from_numpy(mask).to_sparse()).coalesce()
    if want.ndim == 0:
        check(np.asarray(got), want.to_dense().numpy())
        return
    assert isinstance(got, asp.SparseCOO)
    if dense.ndim == 1:  # every dimension reduced, kept as size 1
        # torch gives to_sparse() of the dense reduction: the value is stored when it is
        # not zero, even for a fully masked-out cell; here it is stored when a stored
        # masked-in element reaches it
        assert got.nnz == int(mask.any())
        if mask.any():
            check(got.to_dense(), want.to_dense().numpy())
        return
    np.testing.assert_array_equal(got.indices, want.indices().numpy())
    np.testing.assert_allclose(got.values, want.values().numpy(), rtol=1e-12)


def test_sparse_result_examples(backend: str) -> None:
    csr = on(asp.SparseCSR([0, 2, 2, 3], [0, 2, 1], np.array([1.0, 2.0, 3.0]), (3, 3)), backend)
    got = masked.sum(csr, 1)  # row 1 stores nothing: not stored in the result either
    assert isinstance(got, asp.SparseCOO) and got.shape == (3,)
    check_on(got.indices, [[0, 2]], backend)
    check_on(got.values, [3.0, 3.0], backend)
    kept = masked.amax(csr, 1, keepdim=True)
    assert isinstance(kept, asp.SparseCSR) and kept.shape == (3, 1)
    check_on(kept.to_dense(), [[2.0], [0.0], [3.0]], backend)
    # logsumexp of a row of unspecified zeros is log(3), not zero: it is stored
    check_on(masked.logsumexp(csr, 1).to_dense(), np.log([np.e + np.exp(2) + 1, 3,
                                                          2 + np.exp(3)]), backend)
    check_on(masked.sum(csr, 1, dense=True), [3.0, 0.0, 3.0], backend)
    csc = on(asp.SparseCSR.from_dense(np.eye(3)).to_csc(), backend)
    assert isinstance(masked.sum(csc, 0, keepdim=True), asp.SparseCSC)
    cube = np.arange(24.0).reshape(2, 3, 4) % 5
    csf = on(asp.SparseCSF.from_dense(cube), backend)
    for dim in (0, (0, 1)):
        got = masked.sum(csf, dim)
        assert isinstance(got, asp.SparseCSF)
        check_on(got.to_dense(), cube.sum(dim), backend)
    j = on(asp.Jagged(np.arange(6.0).reshape(3, 2), np.array([0, 2, 2, 3])), backend)
    per_element = masked.sum(j, 2)
    assert isinstance(per_element, asp.Jagged)
    check_on(per_element.values, [1.0, 5.0, 9.0], backend)
    check_on(masked.sum(j, 1), [[2.0, 4.0], [0.0, 0.0], [4.0, 5.0]], backend)


# ----------------------------------------------- compressed sums without canonicalising
@st.composite
def compressed_with_repeats(draw: Any, dtype: Any, like: Any = None) -> tuple[Any, np.ndarray]:
    """A CSR or CSC matrix with unsorted, repeated indices and its dense view (repeats added).

    ``like``: a matrix whose layout and shape to take.
    """
    if like is None:
        rows, cols = draw(st.integers(1, 6)), draw(st.integers(1, 7))
        major = draw(st.sampled_from(["csr", "csc"]))
    else:
        (rows, cols), major = like.shape, "csr" if isinstance(like, asp.SparseCSR) else "csc"
    nnz = draw(st.integers(0, 25))
    lines = rows if major == "csr" else cols
    cuts = sorted(draw(st.lists(st.integers(0, nnz), min_size=lines - 1, max_size=lines - 1)))
    indptr = np.array([0, *cuts, nnz], dtype=draw(st.sampled_from([np.int32, np.int64])))
    minor = np.array(draw(st.lists(st.integers(0, (cols if major == "csr" else rows) - 1),
                                   min_size=nnz, max_size=nnz)), dtype=np.int64)
    vals = np.array(draw(st.lists(st.integers(-9, 9), min_size=nnz, max_size=nnz)))
    vals = vals.astype(dtype) if np.dtype(dtype).kind != "f" else (vals / 4).astype(dtype)
    cls = asp.SparseCSR if major == "csr" else asp.SparseCSC
    x = cls(indptr, minor, vals, (rows, cols))
    dense = np.zeros((rows, cols), dtype=np.float64)
    line = np.repeat(np.arange(lines), np.diff(indptr))
    r, c = (line, minor) if major == "csr" else (minor, line)
    np.add.at(dense, (r, c), vals.astype(np.float64))
    return x, dense


@pytest.mark.hypothesis
@given(data=st.data())
def test_unsorted_compressed_sums_match_dense(data: st.DataObject) -> None:
    """CSR/CSC sums and means along one dimension skip canonicalising: same results.

    Unsorted lines with repeated indices, masks of the same layout with repeated
    (bool: or; numbers: added, then tested) and false entries, every dtype family; the
    sparse result stores the cells a stored, masked-in entry reduces into.
    """
    dtype = data.draw(st.sampled_from([np.float64, np.float32, np.int32, np.uint8]))
    x, dense = data.draw(compressed_with_repeats(dtype))
    mask_kind = data.draw(st.sampled_from(["none", "bool", "int"]))
    if mask_kind == "none":
        m, mdense = None, np.ones(dense.shape, dtype=bool)
    else:
        m, counts = data.draw(compressed_with_repeats(
            np.bool_ if mask_kind == "bool" else np.int64, like=x))
        mdense = counts != 0
        if mask_kind == "bool":  # repeats: logical or of the stored bools
            stored = np.zeros(dense.shape, dtype=bool)
            line = np.repeat(np.arange(len(m.indptr) - 1), np.diff(m.indptr))
            r, c = (line, m.indices) if isinstance(m, asp.SparseCSR) else (m.indices, line)
            np.logical_or.at(stored, (r, c), m.values)
            mdense = stored
    for dim in (0, 1):
        total = np.where(mdense, dense, 0).sum(axis=dim)
        count = mdense.sum(axis=dim)
        got = masked.sum(x, dim, mask=m, dense=True)
        want_dtype = x.values.dtype if x.values.dtype.kind == "f" else \
            (np.uint64 if x.values.dtype.kind == "u" else np.int64)
        assert got.dtype == want_dtype
        np.testing.assert_allclose(got.astype(np.float64), total, rtol=1e-6)
        with np.errstate(invalid="ignore", divide="ignore"):
            np.testing.assert_allclose(masked.mean(x, dim, mask=m, dense=True),
                                       total / count, rtol=1e-6)
        sparse = masked.sum(x, dim, mask=m)
        line = np.repeat(np.arange(len(x.indptr) - 1), np.diff(x.indptr))
        r, c = (line, x.indices) if isinstance(x, asp.SparseCSR) else (x.indices, line)
        hit = np.zeros(dense.shape, dtype=bool)
        hit[r[mdense[r, c]], c[mdense[r, c]]] = True
        cells = np.flatnonzero(hit.any(axis=dim) | ((count > 0) & (total != 0)))
        np.testing.assert_array_equal(sparse.indices[0], cells)
        np.testing.assert_allclose(sparse.values.astype(np.float64), total[cells], rtol=1e-6)


def test_unsorted_csr_sums_take_no_canonical_copy() -> None:
    """The entries are summed as stored: an unsorted CSR is not made canonical."""
    x = asp.SparseCSR([0, 3, 3, 5], [2, 0, 2, 1, 1], np.array([1.0, 2.0, 3.0, 4.0, -4.0]),
                      (3, 3))
    mask = asp.SparseCSR([0, 2, 3, 5], [2, 2, 0, 1, 0], np.array([True, False, True, True, False]),
                         (3, 3))
    assert not x.is_canonical and not mask.is_canonical
    calls = []
    original = asp.SparseCSR.canonical

    def spy(self: Any) -> Any:
        calls.append(self is x)
        return original(self)

    asp.SparseCSR.canonical = spy  # type: ignore[method-assign]
    try:
        rows = masked.sum(x, 1, mask=mask)
        cols = masked.mean(x, 0, dense=True)
    finally:
        asp.SparseCSR.canonical = original  # type: ignore[method-assign]
    assert True not in calls  # only the mask was canonicalised
    # row 0: columns 2 and 2 masked in (or of True, False); row 2: the 4 and -4 sum to 0
    np.testing.assert_array_equal(rows.indices[0], [0, 2])
    np.testing.assert_array_equal(rows.values, [4.0, 0.0])
    np.testing.assert_array_equal(cols, [2.0 / 3, 0.0, 4.0 / 3])
