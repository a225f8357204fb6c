"""Tests of how the CPU ``embedding_bag`` (and the sparse backward) split their work.

The bags are cut into 16 blocks per kernel thread by id count (plus one per bag), which
the kernel threads take in turn, and a bag longer than ``PIECE`` ids is summed in pieces
of ``PIECE`` ids whatever the number of threads (``kernels/cpu/segment.py``,
``_shared_blocks`` and ``_gather_sum``). Each input below (heavy-tailed
lengths, one bag holding every id, bags longer than ids / parts, many empty bags) is
checked against a numpy oracle, against torch, and across part counts: the results of
1, 2, 3 and 7 parts must be identical, and a long bag's sum must follow the documented
order exactly (runs of 4 rows in float32 added into a float64 sum per piece, the pieces'
sums added in order).
"""

from __future__ import annotations

import itertools
from typing import Any

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.kernels.cpu import _segment_gather as g
from arrow_sparse.kernels.cpu import embedding as cpu_embedding
from arrow_sparse.kernels.cpu import segment as cpu_segment
from arrow_sparse.kernels.cpu._segment_ir import NVEC

PIECE = g.PIECE
WIDTH = 16  # one 64-byte line of float32: the fast path


def _offsets(lengths: Any) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _heavy_tailed(rng: np.random.Generator) -> np.ndarray:
    lengths = rng.geometric(1 / 12, 3000)
    lengths[rng.random(3000) < 0.1] = 0
    lengths[[7, 1500]] = [2000, 3 * PIECE + 5]  # a long bag and one of several pieces
    return lengths


#: Bag lengths of each case: heavy-tailed; every id in one bag; bags longer than
#: ids / parts among short ones; many empty bags around long ones; piece edges.
CASES = {
    "heavy_tailed": _heavy_tailed(np.random.default_rng(0)),
    "one_bag": np.array([3 * PIECE + 1]),
    "longer_than_a_part": np.array([5, 2 * PIECE, 3, 3, PIECE + 4, 1]),
    "many_empty": np.array([0] * 500 + [PIECE + 9] + [0] * 700 + [40] + [0] * 300),
    "piece_edges": np.array([PIECE, 0, PIECE + 1, PIECE - 1, 2 * PIECE, 4]),
}


@pytest.fixture
def parts(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Set how many parts the kernels cut their work into (and Numba's thread count).

    The fused kernels then cut it into 16 blocks per part, whatever its size, which
    the kernel threads share out.
    """
    before = numba.get_num_threads()

    def use(n: int) -> None:
        monkeypatch.setattr(cpu_segment, "threads_for", lambda work: n)
        monkeypatch.setattr(cpu_segment, "_SHARED_BLOCK_WORK", 1)  # 16 blocks per part
        monkeypatch.setattr(cpu_embedding, "threads_for", lambda work: n)
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))

    yield use
    numba.set_num_threads(before)


def _data(case: str, id_dtype: Any, seed: int = 1) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    lengths = CASES[case]
    offsets = _offsets(lengths)
    n = int(offsets[-1])
    table = (rng.random((1000, WIDTH), dtype=np.float32) * 2 - 0.5)
    ids = (rng.zipf(1.1, n) % len(table)).astype(id_dtype)
    weights = rng.random(n, dtype=np.float32)
    return table, ids, offsets, weights


def _oracle(table: np.ndarray, ids: np.ndarray, offsets: np.ndarray, mode: str,
            weights: np.ndarray | None) -> np.ndarray:
    rows = table.astype(np.float64)[ids]
    if weights is not None:
        rows *= weights.astype(np.float64)[:, None]
    out = np.zeros((len(offsets) - 1, table.shape[1]))
    for b, (lo, hi) in enumerate(itertools.pairwise(offsets.tolist())):
        if hi > lo:
            out[b] = rows[lo:hi].max(0) if mode == "max" else rows[lo:hi].sum(0)
            if mode == "mean":
                out[b] /= hi - lo
    return out


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_split_matches_the_oracle_for_every_part_count(parts: Any, case: str, mode: str,
                                                       weighted: bool,
                                                       index_dtype: Any) -> None:
    table, ids, offsets, w = _data(case, index_dtype)
    weights = w if weighted else None
    results = []
    for n in (1, 2, 3, 7):
        parts(n)
        results.append(asp.embedding_bag(table, ids, offsets=offsets.astype(index_dtype),
                                         mode=mode, per_sample_weights=weights))
    for got in results[1:]:  # identical, bit for bit, whatever the split
        assert got.dtype == results[0].dtype
        np.testing.assert_array_equal(got, results[0])
    expected = _oracle(table, ids, offsets, mode, weights)
    np.testing.assert_allclose(results[0], expected, rtol=2e-6, atol=1e-4)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_split_matches_torch(parts: Any, case: str, mode: str) -> None:
    torch = pytest.importorskip("torch")
    table, ids, offsets, w = _data(case, np.int64, seed=2)
    parts(2)
    got = asp.embedding_bag(table, ids, offsets=offsets, mode=mode)
    expected = torch.nn.functional.embedding_bag(
        torch.from_numpy(ids), torch.from_numpy(table), torch.from_numpy(offsets),
        mode=mode, include_last_offset=True).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=2e-3)
    if mode == "sum":
        got = asp.embedding_bag(table, ids, offsets=offsets, per_sample_weights=w)
        expected = torch.nn.functional.embedding_bag(
            torch.from_numpy(ids), torch.from_numpy(table), torch.from_numpy(offsets),
            per_sample_weights=torch.from_numpy(w), mode="sum",
            include_last_offset=True).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=2e-3)


def _documented_sum(rows: np.ndarray) -> np.ndarray:
    """A bag's float32 sum in the documented order (unweighted fast path).

    Runs of 4 rows from the start of each piece of ``PIECE`` rows are summed in float32,
    left to right; each run's sum is added into the piece's float64 sum, left to right;
    the pieces' sums are added in order (a bag of at most ``PIECE`` ids is one piece).
    """
    total = np.zeros(rows.shape[1])
    for p in range(0, len(rows), PIECE):
        piece = rows[p:p + PIECE]
        acc = np.zeros(rows.shape[1])
        for r in range(0, len(piece), 4):
            run = piece[r]
            for k in range(r + 1, min(r + 4, len(piece))):
                run = run + piece[k]  # float32
            acc = acc + run.astype(np.float64)
        total = total + acc
    return total.astype(np.float32)


@pytest.mark.parametrize("length", [PIECE - 1, PIECE + 1, 2 * PIECE + 7])
def test_long_bag_sums_in_the_documented_order(parts: Any, length: int) -> None:
    rng = np.random.default_rng(3)
    table = (rng.random((50, WIDTH), dtype=np.float32) * 2 - 0.5) * 1000
    ids = rng.integers(0, 50, 3 + length)
    for n in (1, 2):
        parts(n)
        got = asp.embedding_bag(table, ids, offsets=[0, 3, 3 + length])
        np.testing.assert_array_equal(got[0], _documented_sum(table[ids[:3]]))
        np.testing.assert_array_equal(got[1], _documented_sum(table[ids[3:]]))


def test_an_id_out_of_range_in_a_piece_is_reported_first(parts: Any) -> None:
    table = np.ones((10, WIDTH), np.float32)
    ids = np.zeros(3 * PIECE, np.int64)
    ids[2 * PIECE + 5] = 10  # in the long bag's last piece
    ids[PIECE + 3] = -1  # earlier, in its second piece
    for n in (1, 2, 3):
        parts(n)
        with pytest.raises(IndexError, match=f"first at position {PIECE + 3}: -1"):
            asp.embedding_bag(table, ids, offsets=[0, 2, 3 * PIECE])
        ids[1] = 11  # a short bag before it
        with pytest.raises(IndexError, match="first at position 1: 11"):
            asp.embedding_bag(table, ids, offsets=[0, 2, 3 * PIECE])
        ids[1] = 0


@pytest.mark.hypothesis
@given(lengths=st.lists(st.one_of(st.integers(0, 6), st.sampled_from([0, 0, PIECE + 3])),
                        min_size=1, max_size=40),
       n=st.sampled_from([1, 2, 3, 5]), mode=st.sampled_from(["sum", "mean"]),
       weighted=st.booleans())
@settings(max_examples=25, deadline=None)
def test_split_property(lengths: list[int], n: int, mode: str, weighted: bool) -> None:
    # Any mix of empty, short and long bags, cut into any number of blocks: equal to
    # the one-block result bit for bit, and to the oracle.
    offsets = _offsets(lengths)
    rng = np.random.default_rng(len(lengths))
    table = rng.random((64, WIDTH), dtype=np.float32)
    ids = rng.integers(0, 64, int(offsets[-1]))
    w = rng.random(len(ids), dtype=np.float32) if weighted else None
    before = numba.get_num_threads()
    saved = cpu_segment.threads_for
    try:
        results = []
        for parts in (1, n):
            cpu_segment.threads_for = lambda work, parts=parts: parts
            numba.set_num_threads(min(parts, numba.config.NUMBA_NUM_THREADS))
            results.append(asp.embedding_bag(table, ids, offsets=offsets, mode=mode,
                                             per_sample_weights=w))
    finally:
        cpu_segment.threads_for = saved
        numba.set_num_threads(before)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], _oracle(table, ids, offsets, mode, w),
                               rtol=2e-6, atol=1e-5)


def test_shared_blocks_follow_the_id_count(parts: Any) -> None:
    parts(2)  # 32 blocks
    bounds = cpu_segment._shared_blocks(10**9, _offsets([5] * 320))
    assert bounds.tolist() == list(range(0, 321, 10))
    # One bag of 10,000 ids among 1,000 of one: the long bag is a block of its own
    # (cost 10,001 of 12,001: the 25 blocks after it are empty), the short bags are cut
    # evenly into the rest.
    bounds = cpu_segment._shared_blocks(10**9, _offsets([10_000] + [1] * 1000))
    assert len(bounds) == 33 and bounds[0] == 0 and bounds[-1] == 1001
    assert set(bounds[1:27].tolist()) == {1}
    sizes = np.diff(bounds[27:])
    assert sizes.max() - sizes.min() <= 1
    parts(1)
    assert cpu_segment._shared_blocks(10**9, _offsets([5] * 320)).tolist() == [0, 320]


@pytest.mark.parametrize("threads", [1, 2])
def test_every_shared_block_is_taken_once(parts: Any, threads: int) -> None:
    # The kernel threads take the blocks through one counter: each block is reduced
    # (its bad entry written) exactly once, and the counter ends past the last block
    # by one per thread (each stops at its first failed take).
    table, ids, offsets, w = _data("heavy_tailed", np.int64)
    parts(threads)
    bounds = cpu_segment._shared_blocks(10**9, offsets)
    bad = np.full(len(bounds) - 1, -2, np.int64)
    out = np.empty((len(offsets) - 1, WIDTH), np.float32)
    taken = np.zeros(1, np.int64)
    # line: float32 columns per 64-byte vector (WIDTH, one vector); group: NVEC vectors
    cpu_segment.run(cpu_segment._GATHER_SUM_FAST, 10**9, len(bounds) - 1, table, ids,
                    offsets, cpu_segment._NONE_U8, cpu_segment._no_weights(np.float64(0)),
                    offsets, False, 0, np.float32(0), WIDTH, NVEC * WIDTH, cpu_segment._NONE_I64,
                    cpu_segment._NO_PARTIAL, out, bounds, bad, taken)
    assert (bad == -1).all()
    assert taken[0] == len(bounds) - 1 + min(threads, numba.get_num_threads())
    np.testing.assert_allclose(out, _oracle(table, ids, offsets, "sum", None), rtol=2e-6,
                               atol=1e-4)


def test_small_work_is_one_block_per_thread(parts: Any, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    parts(2)
    monkeypatch.setattr(cpu_segment, "_SHARED_BLOCK_WORK", 1 << 20)
    offsets = _offsets([5] * 320)
    assert cpu_segment._shared_blocks(1 << 20, offsets).tolist() == [0, 160, 320]
    assert len(cpu_segment._shared_blocks(40 << 20, offsets)) == 33


# ---------------------------------------------------------------- the sparse backward
def test_element_blocks_follow_the_element_count(parts: Any) -> None:
    # One hot run of 10,000 among 1,000 runs of 1: cut by elements, never by run count.
    starts = _offsets([10_000] + [1] * 1000)
    parts(2)
    bounds = cpu_embedding._element_blocks(starts, 10**9)
    assert bounds.tolist() == [0, 1, 1001]  # the hot run alone, then the rest
    parts(4)
    bounds = cpu_embedding._element_blocks(_offsets([5] * 40), 10**9)
    assert bounds.tolist() == [0, 10, 20, 30, 40]
    assert cpu_embedding._element_blocks(_offsets([0] * 9), 10**9).tolist() == \
        [0, 2, 4, 6, 9]  # empty runs count one each
    parts(1)
    assert cpu_embedding._element_blocks(starts, 10**9).tolist() == [0, 1001]


@pytest.mark.parametrize("case", ["heavy_tailed", "one_bag", "many_empty"])
@pytest.mark.parametrize("weighted", [False, True])
def test_lookup_backward_is_the_same_for_every_part_count(parts: Any, case: str,
                                                          weighted: bool) -> None:
    table, ids, offsets, w = _data(case, np.int64, seed=4)
    grad_out = np.random.default_rng(5).random((len(offsets) - 1, WIDTH), dtype=np.float32)
    weights = w if weighted else None
    results = []
    for n in (1, 2, 3):
        parts(n)
        g_ = asp.embedding.lookup_backward(grad_out, ids, offsets=offsets,
                                           num_embeddings=len(table),
                                           per_sample_weights=weights)
        dw = asp.embedding.lookup_backward_weights(grad_out, table, ids, offsets=offsets)
        results.append((np.asarray(g_.rows), np.asarray(g_.values), np.asarray(dw)))
    for rows, values, dw in results[1:]:
        np.testing.assert_array_equal(rows, results[0][0])
        np.testing.assert_array_equal(values, results[0][1])
        np.testing.assert_array_equal(dw, results[0][2])
    bag = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    dense = np.zeros((len(table), WIDTH))
    scale = np.ones(len(ids)) if weights is None else weights.astype(np.float64)
    np.add.at(dense, ids, grad_out.astype(np.float64)[bag] * scale[:, None])
    rows = np.unique(ids)
    np.testing.assert_array_equal(results[0][0], rows)
    # float32 sums of up to thousands of rows (the gradient keeps the table dtype)
    np.testing.assert_allclose(results[0][1], dense[rows], rtol=5e-4, atol=1e-3)
    expected_dw = np.einsum("ij,ij->i", table.astype(np.float64)[ids],
                            grad_out.astype(np.float64)[bag])
    np.testing.assert_allclose(results[0][2], expected_dw, rtol=1e-5, atol=1e-5)
