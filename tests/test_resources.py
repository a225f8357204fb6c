"""Sizes beyond memory fail at once with a clear error (issue 14).

Every public function whose result size comes from a size argument (``max_lengths``,
``length``, ``num_segments``, ``shape``, ``prepend``, ...) or from small inputs that
describe a large result (lengths or offsets values, an inner dimension times many
rows, repeated indices) is called with sizes that need far more than any machine's
memory (2**40 bytes and up). Each call must raise an :class:`ArrowSparseError` within
about a second, before allocating anything: not a ``MemoryError`` after minutes of
swapping, not an ``OverflowError`` or a crash.

The calls run in a child process whose address space is capped (``RLIMIT_AS``), so
a function that does try to allocate fails there with a ``MemoryError`` instead of
taking the machine's memory; the child reports one JSON line per call, and a crash
names the call it happened in. The bound the functions check against is
:func:`arrow_sparse._validate.memory_limit` (physical memory, the container's limit
or ``ulimit -v``, whichever is lowest).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse import embedding as emb
from arrow_sparse.errors import ArrowSparseError

BIG = 2**40  # elements: 8 TiB of int64 or float64
HUGE = 2**58  # a count near the largest accepted (2**59)
WIDE = 2**20  # an inner dimension: 2**20 rows of it is 2**40 elements

_EMPTY_WIDE = np.zeros((0, WIDE))  # no values, a wide inner dimension: 0 bytes


def _zeros_offsets(rows: int) -> np.ndarray:
    return np.zeros(rows + 1, np.int64)


def _one_long_row() -> asp.Jagged:
    return asp.Jagged(np.zeros(WIDE), np.array([0, WIDE]))


#: name -> a call that needs more than 2**40 bytes for its result.
CASES: dict[str, Callable[[], Any]] = {
    # ---- padding and dense conversions
    "jagged_to_padded_dense max_lengths": lambda: asp.jagged_to_padded_dense(
        np.arange(3.0), np.array([0, 1, 3]), max_lengths=[BIG]),
    "jagged_to_padded_dense 2 levels": lambda: asp.jagged_to_padded_dense(
        np.arange(3.0), [np.array([0, 1, 2]), np.array([0, 1, 3])], max_lengths=[WIDE, WIDE]),
    "Jagged.to_padded": lambda: asp.Jagged.from_list([[1, 2], [3]]).to_padded(BIG),
    "pad_or_truncate arrow": lambda: asp.pad_or_truncate(pa.array([[1, 2], [3]]), BIG),
    "pad_or_truncate jagged": lambda: asp.pad_or_truncate(
        asp.Jagged.from_list([[1.0], [2.0]]), BIG),
    "pad_or_truncate strings": lambda: asp.pad_or_truncate(pa.array([["a"], []]), BIG, "x"),
    "KeyedJagged.to_padded_dict": lambda: asp.KeyedJagged.from_dict(
        {"a": [[1, 2], [3]]}).to_padded_dict(max_lengths=BIG),
    "dense_to_jagged offsets": lambda: asp.dense_to_jagged(np.zeros((1, 2)),
                                                           np.array([0, BIG])),
    "expand_into_jagged offsets": lambda: asp.expand_into_jagged(np.zeros((1, 2)),
                                                                 np.array([0, BIG])),
    # ---- structure conversions
    "lengths_to_segment_ids": lambda: asp.lengths_to_segment_ids([BIG]),
    "offsets_to_segment_ids": lambda: asp.offsets_to_segment_ids([0, BIG]),
    "segment_ids_to_lengths num_segments": lambda: asp.segment_ids_to_lengths([0], HUGE),
    "segment_ids_to_lengths max id": lambda: asp.segment_ids_to_lengths([HUGE]),
    "segment_ids_to_offsets num_segments": lambda: asp.segment_ids_to_offsets([0], HUGE),
    "segment_ids_to_offsets max id": lambda: asp.segment_ids_to_offsets([HUGE]),
    "Jagged.from_segment_ids": lambda: asp.Jagged.from_segment_ids(np.ones(1), [0], HUGE),
    # ---- reductions over many segments, or a wide inner dimension
    **{f"{f} num_segments": (lambda f=f: getattr(asp, f)(np.ones(1), segment_ids=[0],
                                                         num_segments=HUGE))
       for f in ("segment_sum", "segment_mean", "segment_max", "segment_min",
                 "segment_prod", "segment_logsumexp", "segment_argmax", "segment_argmin")},
    "segment_weighted_sum num_segments": lambda: asp.segment_weighted_sum(
        np.ones(1), np.ones(1), segment_ids=[0], num_segments=HUGE),
    "segment_sum max id": lambda: asp.segment_sum(np.ones(1), segment_ids=[HUGE]),
    "segment_sum wide rows": lambda: asp.segment_sum(_EMPTY_WIDE,
                                                     offsets=_zeros_offsets(WIDE)),
    "segment_max wide rows": lambda: asp.segment_max(_EMPTY_WIDE,
                                                     offsets=_zeros_offsets(WIDE)),
    **{f"{f} num_segments": (lambda f=f: getattr(asp, f)(np.ones(1), [0], HUGE))
       for f in ("unsorted_segment_sum", "unsorted_segment_mean", "unsorted_segment_max",
                 "unsorted_segment_min")},
    "unsorted_segment_weighted_sum num_segments": lambda: asp.unsorted_segment_weighted_sum(
        np.ones(1), np.ones(1), [0], HUGE),
    "unsorted_segment_sum max id": lambda: asp.unsorted_segment_sum(np.ones(1), [HUGE]),
    "unsorted_segment_sum wide rows": lambda: asp.unsorted_segment_sum(
        np.zeros((1, WIDE)), [WIDE]),
    **{f"{f} num_segments": (lambda f=f: getattr(asp, f)(np.ones((2, 2)), [0],
                                                         segment_ids=[0], num_segments=HUGE))
       for f in ("sparse_segment_sum", "sparse_segment_mean", "sparse_segment_max")},
    "sparse_segment_weighted_sum num_segments": lambda: asp.sparse_segment_weighted_sum(
        np.ones((2, 2)), [0], weights=np.ones(1), segment_ids=[0], num_segments=HUGE),
    "sparse_segment_sum repeated rows": lambda: asp.sparse_segment_sum(
        np.zeros((1, WIDE)), np.zeros(WIDE, np.int64), segment_ids=np.arange(WIDE)),
    # ---- gathers that repeat rows
    "gather repeated rows": lambda: asp.gather(np.zeros((1, WIDE)), np.zeros(WIDE, np.int64)),
    "index_select repeated rows": lambda: asp.index_select(_one_long_row(),
                                                           np.zeros(WIDE, np.int64)),
    "jagged_index_select repeated rows": lambda: asp.jagged_index_select(
        np.zeros(WIDE), np.array([WIDE]), np.zeros(WIDE, np.int64)),
    "jagged_jagged_bmm wide": lambda: asp.jagged_jagged_bmm(
        np.zeros((0, WIDE)), np.zeros((0, WIDE)), offsets=_zeros_offsets(2)),
    "embedding lookup huge out": lambda: emb.lookup(np.zeros((1, WIDE)),
                                                   np.zeros(WIDE, np.int64)),
    "embedding lookup bags": lambda: emb.lookup(np.zeros((1, WIDE)), np.zeros(0, np.int64),
                                               offsets=_zeros_offsets(WIDE)),
    "embedding_bag wide": lambda: asp.embedding_bag(np.zeros((1, WIDE)),
                                                    np.zeros(0, np.int64),
                                                    offsets=_zeros_offsets(WIDE)),
    "maplookup prepend": lambda: emb.maplookup([np.ones((2, 2))], [[0]], "concat",
                                               prepend=HUGE),
    # ---- sparse tensors of a huge shape
    "SparseCOO.to_dense": lambda: asp.SparseCOO(np.array([[0], [0]]), np.ones(1),
                                                (BIG, BIG)).to_dense(),
    "SparseCOO.sum axis": lambda: asp.SparseCOO(np.array([[0], [0]]), np.ones(1),
                                                (2, HUGE)).sum(axis=0),
    "SparseCSR.to_dense": lambda: asp.SparseCOO(np.array([[0], [0]]), np.ones(1),
                                                (BIG, BIG)).to_csr().to_dense(),
    "SparseCSC.to_dense": lambda: asp.SparseCOO(np.array([[0], [0]]), np.ones(1),
                                                (BIG, BIG)).to_csc().to_dense(),
    "SparseCSF.to_dense": lambda: asp.SparseCOO(np.array([[0], [0], [0]]), np.ones(1),
                                                (WIDE, WIDE, WIDE)).to_csf().to_dense(),
    "SparseCOO.to_csr huge rows": lambda: asp.SparseCOO(np.array([[0], [0]]), np.ones(1),
                                                        (HUGE, 2)).to_csr(),
    "Jagged.to_csr to_dense": lambda: asp.Jagged.from_list([[1]]).to_csr(HUGE).to_dense(),
    "SparseCSF.from_jagged shape": lambda: asp.SparseCSF.from_jagged(
        asp.Jagged.from_list([[1.0]]), shape=(1, HUGE)).to_dense(),
    "SparseCSR.sum axis": lambda: asp.SparseCSR([0, 1], [0], np.ones(1), (1, HUGE)).sum(0),
    "SparseCSC matmul": lambda: asp.SparseCSC([0, 1], [0], np.ones(1), (HUGE, 1)) @ np.ones(1),
    "dense @ SparseCSR": lambda: np.ones((1, 1)) @ asp.SparseCSR([0, 1], [0], np.ones(1),
                                                                 (1, HUGE)),
    "masked.sum sparse": lambda: asp.masked.sum(asp.SparseCOO(
        np.array([[0], [0]]), np.ones(1), (HUGE, 2)), dim=1),
    "masked.softmax sparse": lambda: asp.masked.softmax(asp.SparseCOO(
        np.array([[0], [0]]), np.ones(1), (BIG, 2)), dim=1),
    "KeyedJagged.block_bucketize my_size": lambda: asp.KeyedJagged.from_dict(
        {"a": [[1, 2], [3]]}).block_bucketize([4], HUGE),
}


# ----------------------------------------------------------------- the child process
def _call(name: str) -> dict[str, Any]:  # pragma: no cover - runs in the child
    t0 = time.perf_counter()
    try:
        CASES[name]()
        outcome: dict[str, Any] = {"kind": "returned"}
    except ArrowSparseError as exc:
        outcome = {"kind": "ArrowSparseError", "type": type(exc).__name__,
                   "message": str(exc)[:300]}
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        outcome = {"kind": "other", "type": type(exc).__name__, "message": str(exc)[:300]}
    outcome.update(name=name, seconds=time.perf_counter() - t0)
    return outcome


def _child(names: list[str]) -> None:  # pragma: no cover - runs in the child
    for name in names:
        print(json.dumps({"start": name}), flush=True)
        outcome = _call(name)
        if outcome["seconds"] >= SECONDS:  # a first call loads compiled kernels: again
            outcome["seconds"] = min(outcome["seconds"], _call(name)["seconds"])
        print(json.dumps(outcome), flush=True)


_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, resource.RLIM_INFINITY))
import tests.test_resources as t
t._child(sys.argv[1:])
"""

#: The child's address space: room for the libraries, far below any case's size.
AS_LIMIT = 6 << 30
#: Seconds a case may take (the check comes before any work).
SECONDS = 1.0


def run_cases(names: list[str]) -> dict[str, dict[str, Any]]:
    """Run ``names`` in children (a new one after a crash); one outcome per name."""
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]))
    results: dict[str, dict[str, Any]] = {}
    todo = list(names)
    while todo:
        proc = subprocess.run([sys.executable, "-c", _CHILD.format(limit=AS_LIMIT), *todo],
                              capture_output=True, text=True, env=env, cwd=root,
                              timeout=600, check=False)
        started = None
        for line in proc.stdout.splitlines():
            record = json.loads(line)
            if "start" in record:
                started = record["start"]
            else:
                results[record["name"]] = record
                started = None
        if started is not None:  # the child died in this call
            results[started] = {"kind": "crash", "returncode": proc.returncode,
                                "stderr": proc.stderr[-500:]}
        elif proc.returncode != 0 and not results:
            raise AssertionError(proc.stderr[-2000:])
        todo = [n for n in todo if n not in results]
    return results


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, Any]]:
    return run_cases(list(CASES))


@pytest.mark.parametrize("name", list(CASES))
def test_sizes_beyond_memory_fail_at_once_with_a_clear_error_issue14(
        outcomes: dict[str, dict[str, Any]], name: str) -> None:
    got = outcomes[name]
    assert got["kind"] == "ArrowSparseError", got
    assert "more than this machine's memory" in got["message"], got
    assert got["seconds"] < SECONDS, got
