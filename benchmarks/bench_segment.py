"""Segment reductions and embedding bags: arrow_sparse against its peers.

Run from the repository root::

    python benchmarks/bench_segment.py                    # scale 1, 5 repeats
    python benchmarks/bench_segment.py --scale 0.05       # smoke run (< 1 minute)
    python benchmarks/bench_segment.py --json out.json --repeat 9 --only sum_1d,bag_sum

It builds deterministic recommender-shaped data (row lengths geometric with mean ~20
and ~20% empty rows, ids Zipf over the embedding table), checks every
implementation's result against a float64 numpy reference, times arrow_sparse and
each installed peer on the same arrays (numpy, Polars, Awkward, PyTorch, FBGEMM's CPU
operators, pyarrow, scipy and a plain Numba ``prange`` baseline written here), measures
the machine's copy bandwidth, arrow_sparse's first-call latency (cold and warm Numba
cache) and its warm per-call overhead, prints Markdown tables and writes everything as JSON
(``benchmarks/results/segment.json`` by default). See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

NUM_THREADS = C.usable_cores()
T0 = time.perf_counter()

# --------------------------------------------------------------------- libraries
LIBS: dict[str, Any] = {}
LIB_STATUS: dict[str, str] = {}


def load_libraries() -> None:
    for name in ["arrow_sparse", "numba", "torch", "polars", "awkward", "scipy", "scipy.sparse"]:
        mod, status = C.try_import(name)
        LIBS[name] = mod
        LIB_STATUS[name] = status
    torch = LIBS["torch"]
    if torch is not None:
        torch.set_num_threads(NUM_THREADS)
        LIB_STATUS["torch"] = torch.__version__
        # FBGEMM's CPU operators (torch.ops.fbgemm.*, the table-batched embedding module)
        mod, status = C.try_import("fbgemm_gpu")
        LIBS["fbgemm"] = mod
        LIB_STATUS["fbgemm"] = status
    else:
        LIBS["fbgemm"] = None
        LIB_STATUS["fbgemm"] = "needs torch"


class Unsupported(Exception):
    """This implementation cannot run this workload (recorded, not an error)."""


def asp_fn(name: str) -> Callable[..., Any]:
    asp = LIBS["arrow_sparse"]
    fn = getattr(asp, name, None)
    if fn is None:
        raise Unsupported(f"arrow_sparse.{name} does not exist (yet)")
    return fn  # type: ignore[no-any-return]


# ------------------------------------------------------------ numba baselines
# Plain prange loops over rows, the "what anyone would write in ten minutes" baseline.
_NB: dict[str, Any] = {}


def numba_kernels() -> dict[str, Any]:
    if _NB:
        return _NB
    nb = LIBS["numba"]
    if nb is None:
        raise Unsupported("numba not installed")
    from numba import njit, prange

    @njit(parallel=True, cache=True)
    def nb_sum_1d(values, offsets):  # type: ignore[no-untyped-def]
        rows = len(offsets) - 1
        out = np.empty(rows, dtype=np.float32)
        for i in prange(rows):
            acc = np.float32(0.0)
            for j in range(offsets[i], offsets[i + 1]):
                acc += values[j]
            out[i] = acc
        return out

    @njit(parallel=True, cache=True)
    def nb_mean_1d(values, offsets):  # type: ignore[no-untyped-def]
        rows = len(offsets) - 1
        out = np.empty(rows, dtype=np.float32)
        for i in prange(rows):
            acc = np.float32(0.0)
            lo, hi = offsets[i], offsets[i + 1]
            for j in range(lo, hi):
                acc += values[j]
            out[i] = acc / (hi - lo) if hi > lo else np.float32(0.0)
        return out

    @njit(parallel=True, cache=True)
    def nb_max_1d(values, offsets):  # type: ignore[no-untyped-def]
        rows = len(offsets) - 1
        out = np.empty(rows, dtype=np.float32)
        for i in prange(rows):
            lo, hi = offsets[i], offsets[i + 1]
            if hi == lo:
                out[i] = np.float32(0.0)
                continue
            acc = values[lo]
            for j in range(lo + 1, hi):
                if values[j] > acc:
                    acc = values[j]
            out[i] = acc
        return out

    @njit(parallel=True, cache=True)
    def nb_sum_2d(values, offsets):  # type: ignore[no-untyped-def]
        rows = len(offsets) - 1
        dim = values.shape[1]
        out = np.empty((rows, dim), dtype=np.float32)
        for i in prange(rows):
            acc = np.zeros(dim, dtype=np.float32)  # a row accumulator: 2x faster than out[i, d]
            for j in range(offsets[i], offsets[i + 1]):
                acc += values[j]
            out[i] = acc
        return out

    @njit(parallel=True, cache=True)
    def nb_unsorted_sum(values, ids, num_segments, nthreads):  # type: ignore[no-untyped-def]
        n = len(values)
        chunk = (n + nthreads - 1) // nthreads
        partial = np.zeros((nthreads, num_segments), dtype=np.float32)
        for t in prange(nthreads):
            for j in range(t * chunk, min(n, (t + 1) * chunk)):
                partial[t, ids[j]] += values[j]
        out = np.empty(num_segments, dtype=np.float32)
        for s in prange(num_segments):
            acc = np.float32(0.0)
            for t in range(nthreads):
                acc += partial[t, s]
            out[s] = acc
        return out

    @njit(parallel=True, cache=True)
    def nb_bag_sum(table, ids, offsets):  # type: ignore[no-untyped-def]
        bags = len(offsets) - 1
        dim = table.shape[1]
        out = np.zeros((bags, dim), dtype=np.float32)
        for b in prange(bags):
            for j in range(offsets[b], offsets[b + 1]):
                r = ids[j]
                for d in range(dim):
                    out[b, d] += table[r, d]
        return out

    @njit(parallel=True, cache=True)
    def nb_bag_wsum(table, ids, offsets, weights):  # type: ignore[no-untyped-def]
        bags = len(offsets) - 1
        dim = table.shape[1]
        out = np.zeros((bags, dim), dtype=np.float32)
        for b in prange(bags):
            for j in range(offsets[b], offsets[b + 1]):
                r = ids[j]
                w = weights[j]
                for d in range(dim):
                    out[b, d] += w * table[r, d]
        return out

    _NB.update(sum_1d=nb_sum_1d, mean_1d=nb_mean_1d, max_1d=nb_max_1d, sum_2d=nb_sum_2d,
               unsorted_sum=nb_unsorted_sum, bag_sum=nb_bag_sum, bag_wsum=nb_bag_wsum)
    return _NB


# ----------------------------------------------------------------- workloads
@dataclass
class Impl:
    """One way of computing a workload's result.

    ``make`` does the untimed setup (dtype conversions a library insists on, wrapping
    buffers) and returns the timed zero-argument callable. ``convert`` (optional) is
    the cost of getting the shared Arrow array into the library's own object (e.g.
    ``pl.from_arrow``), timed separately and reported beside the compute time.
    ``to_numpy`` turns the result into a float64 array for the check (untimed).
    ``empty_zero``: the result must hold 0 on empty rows (arrow_sparse's numpy
    contract); other conventions (null, NaN, -inf) are accepted there for peers.
    """

    name: str
    kind: str  # "arrow_sparse" (headline) | "arrow_sparse_alt" | "peer" | "baseline"
    library: str
    make: Callable[[], Callable[[], Any]]
    to_numpy: Callable[[Any], np.ndarray] = lambda r: np.asarray(r, dtype=np.float64)
    convert: Callable[[], Any] | None = None
    empty_zero: bool = False
    note: str = ""


@dataclass
class Workload:
    key: str
    title: str
    description: str
    family: str  # "streaming" (sorted segment reduction) | "scatter" | "embedding_bag"
    bytes_moved: int
    bytes_detail: str
    reference: np.ndarray
    empty_rows: np.ndarray
    impls: list[Impl] = field(default_factory=list)
    shape: dict[str, Any] = field(default_factory=dict)


def _np(r: Any) -> np.ndarray:
    return np.asarray(r, dtype=np.float64)


def _torch_np(r: Any) -> np.ndarray:
    return r.numpy().astype(np.float64)


def _arrow_np(r: Any) -> np.ndarray:
    """An Arrow result (list-of-scalars reduction -> primitive, 2-D -> fixed_size_list)."""
    import pyarrow.compute as pc

    if isinstance(r, pa.ChunkedArray):
        r = pa.concat_arrays(r.chunks) if r.num_chunks else pa.array([], r.type)
    if isinstance(r.type, pa.FixedSizeListType):
        size = r.type.list_size
        valid = np.ones(len(r), bool) if r.null_count == 0 else \
            r.is_valid().to_numpy(zero_copy_only=False)
        flat = r.flatten() if r.null_count == 0 else pc.fill_null(r, [0] * size).flatten()
        out = np.asarray(flat.to_numpy(zero_copy_only=False), np.float64).reshape(-1, size)
        out[~valid] = 0.0
        return out
    if r.null_count:
        r = pc.fill_null(r, 0)
    return np.asarray(r.to_numpy(zero_copy_only=False), dtype=np.float64)


def _polars_np(r: Any) -> np.ndarray:
    return np.asarray(r.fill_null(0).to_numpy(), dtype=np.float64)


def _awkward_np(r: Any) -> np.ndarray:
    ak = LIBS["awkward"]
    return np.asarray(ak.to_numpy(ak.fill_none(r, 0.0)), dtype=np.float64)


def _grouped_np(keys_col: str, val_col: str, rows: int) -> Callable[[Any], np.ndarray]:
    """A group-by result (one row per non-empty segment, any order) -> dense per segment."""
    def conv(table: Any) -> np.ndarray:
        if hasattr(table, "to_arrow"):  # polars DataFrame
            table = table.to_arrow()
        keys = np.asarray(table.column(keys_col).to_numpy(), dtype=np.int64)
        vals = np.asarray(table.column(val_col).to_numpy(), dtype=np.float64)
        out = np.zeros(rows, dtype=np.float64)
        out[keys] = vals
        return out
    return conv


def reduceat_nonempty(ufunc: Any, values: np.ndarray, offsets: np.ndarray,
                      rows_out_dtype: Any = None) -> np.ndarray:
    """``ufunc.reduceat`` with the empty-row fix: reduce only non-empty rows, 0 elsewhere.

    ``reduceat`` returns ``values[start]`` for an empty row (and fails on a start equal
    to ``len(values)``); reducing only the non-empty rows' starts is exact because the
    next non-empty row starts where this one ends (rows in between are empty). Needs
    ``offsets[-1] == len(values)``.
    """
    lengths = np.diff(offsets)
    nonempty = lengths > 0
    out = np.zeros((len(lengths),) + values.shape[1:], dtype=rows_out_dtype or values.dtype)
    if nonempty.any():
        out[nonempty] = ufunc.reduceat(values, offsets[:-1][nonempty], axis=0)
    return out


# ------------------------------------------------------------------- 1-D data
def build_1d(scale: float, seed: int) -> dict[str, Any]:
    rng = C.rng_for(seed, "values1d")
    rows = max(10, int(round(1_000_000 * scale)))
    lengths = C.geometric_lengths(rng, rows, mean=20.0, empty_fraction=0.2)
    n = int(lengths.sum())
    offsets = C.offsets_from_lengths(lengths, np.int32)  # Arrow `list` offsets
    values = rng.random(n, dtype=np.float32)  # scores in [0, 1): no cancellation in checks
    item = pa.field("item", pa.float32(), nullable=False)
    arr = pa.ListArray.from_arrays(pa.array(offsets), pa.array(values), type=pa.list_(item))
    # numpy views of the Arrow buffers: the very arrays every implementation reads
    values = np.frombuffer(arr.values.buffers()[1], dtype=np.float32, count=n)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=rows + 1)
    return {"rows": rows, "n": n, "lengths": lengths, "offsets": offsets, "values": values,
            "arrow": arr, "empty": lengths == 0}


def build_2d(scale: float, seed: int, dim: int = 64) -> dict[str, Any]:
    rng = C.rng_for(seed, "values2d")
    rows = max(10, int(round(100_000 * scale)))
    lengths = C.geometric_lengths(rng, rows, mean=20.0, empty_fraction=0.2)
    n = int(lengths.sum())
    offsets = C.offsets_from_lengths(lengths, np.int32)
    flat = rng.random(n * dim, dtype=np.float32)
    item = pa.field("item", pa.float32(), nullable=False)
    fsl_type = pa.list_(item, dim)
    fsl = pa.FixedSizeListArray.from_arrays(pa.array(flat), type=fsl_type)
    arr = pa.ListArray.from_arrays(pa.array(offsets), fsl,
                                   type=pa.list_(pa.field("item", fsl_type, nullable=False)))
    values = np.frombuffer(arr.values.values.buffers()[1], dtype=np.float32,
                           count=n * dim).reshape(n, dim)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=rows + 1)
    return {"rows": rows, "n": n, "dim": dim, "lengths": lengths, "offsets": offsets,
            "values": values, "arrow": arr, "empty": lengths == 0}


def build_bags(scale: float, seed: int, dim: int = 64) -> dict[str, Any]:
    rng = C.rng_for(seed, "bags")
    vocab = max(100, int(round(1_000_000 * scale)))
    bags = max(10, int(round(200_000 * scale)))
    table = rng.random((vocab, dim), dtype=np.float32)
    lengths = C.geometric_lengths(rng, bags, mean=20.0, empty_fraction=0.2)
    n = int(lengths.sum())
    offsets = C.offsets_from_lengths(lengths, np.int64)  # rows + 1, like torch include_last_offset
    ids = C.zipf_ids(rng, n, vocab, exponent=1.05)
    weights = rng.random(n, dtype=np.float32)
    return {"bags": bags, "vocab": vocab, "dim": dim, "n": n, "lengths": lengths,
            "offsets": offsets, "ids": ids, "weights": weights, "table": table,
            "empty": lengths == 0}


#: The heavy-tailed bag lengths of ``build_bags_heavy``: 2% of the bags geometric with
#: mean 250, the others geometric with mean 16.5, all clipped at 2,000, then 5% emptied.
HEAVY_TAIL_SHARE, HEAVY_TAIL_MEAN, HEAVY_BODY_MEAN, HEAVY_CLIP, HEAVY_EMPTY = \
    0.02, 250.0, 16.5, 2000, 0.05


def build_bags_heavy(scale: float, seed: int, dim: int = 64) -> dict[str, Any]:
    """Bags with heavy-tailed lengths and unshuffled ``zipf(1.1) % vocab`` ids.

    [1M, 64] float32 table, 200k bags (at scale 1). Lengths: a two-part geometric
    mixture (``HEAVY_*``: mean ~20, p99 ~150, max 2,000), 5% of the bags empty, and
    half of those null in the Arrow form of the ids. Ids: ``rng.zipf(1.1) % vocab``
    (numpy's unbounded Zipf folded onto the table, hot ids at the low rows), int64.
    """
    rng = C.rng_for(seed, "bags_heavy")
    vocab = max(100, int(round(1_000_000 * scale)))
    bags = max(10, int(round(200_000 * scale)))
    table = rng.random((vocab, dim), dtype=np.float32)
    tail = rng.random(bags) < HEAVY_TAIL_SHARE
    lengths = np.where(tail, rng.geometric(1.0 / HEAVY_TAIL_MEAN, bags),
                       rng.geometric(1.0 / HEAVY_BODY_MEAN, bags)).astype(np.int64)
    np.minimum(lengths, HEAVY_CLIP, out=lengths)
    lengths[rng.random(bags) < HEAVY_EMPTY] = 0
    empty = lengths == 0
    null = empty & (rng.random(bags) < 0.5)  # Arrow nulls (empty ranges), half the empty bags
    n = int(lengths.sum())
    offsets = C.offsets_from_lengths(lengths, np.int64)
    ids = (rng.zipf(1.1, n) % vocab).astype(np.int64)
    weights = rng.random(n, dtype=np.float32)
    p50, p99 = np.percentile(lengths, [50, 99])
    stats = {"mean": float(lengths.mean()), "p50": float(p50), "p99": float(p99),
             "max": int(lengths.max()), "empty_bags": int(empty.sum()),
             "null_bags_arrow": int(null.sum()), "unique_ids": int(len(np.unique(ids)))}
    return {"bags": bags, "vocab": vocab, "dim": dim, "n": n, "lengths": lengths,
            "offsets": offsets, "ids": ids, "weights": weights, "table": table,
            "empty": empty, "null": null, "stats": stats}


# -------------------------------------------------------------- references
def ref_sorted(kind: str, values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """float64 reference of a sorted segment reduction; empty rows give 0."""
    lengths = np.diff(offsets)
    if kind == "max":
        return reduceat_nonempty(np.maximum, values, offsets).astype(np.float64)
    out = np.zeros((len(lengths),) + values.shape[1:], dtype=np.float64)
    chunk = max(1, (1 << 26) // max(1, int(np.prod(values.shape[1:], dtype=np.int64))))
    nonempty = np.flatnonzero(lengths > 0)
    # chunks of rows, so the float64 copy of 2-D values stays small
    i = 0
    while i < len(nonempty):
        lo_row = nonempty[i]
        j = min(len(nonempty), int(np.searchsorted(offsets[nonempty], offsets[lo_row] + chunk)))
        j = max(j, i + 1)
        rows_sel = nonempty[i:j]
        lo, hi = int(offsets[rows_sel[0]]), int(offsets[rows_sel[-1] + 1])
        block = values[lo:hi].astype(np.float64)
        out[rows_sel] = np.add.reduceat(block, offsets[rows_sel] - lo, axis=0)
        i = j
    if kind == "mean":
        out /= np.maximum(lengths, 1).reshape((-1,) + (1,) * (values.ndim - 1))
    return out


def ref_bags(table: np.ndarray, ids: np.ndarray, offsets: np.ndarray,
             weights: np.ndarray | None) -> np.ndarray:
    bags = len(offsets) - 1
    out = np.zeros((bags, table.shape[1]), dtype=np.float64)
    step = 8192
    for b0 in range(0, bags, step):
        b1 = min(bags, b0 + step)
        lo, hi = int(offsets[b0]), int(offsets[b1])
        if hi == lo:
            continue
        rows = table[ids[lo:hi]].astype(np.float64)
        if weights is not None:
            rows *= weights[lo:hi, None].astype(np.float64)
        out[b0:b1] = reduceat_nonempty(np.add, rows, offsets[b0:b1 + 1] - lo, np.float64)
    return out


# ------------------------------------------------------------ workload: 1-D
def workloads_1d(d: dict[str, Any]) -> list[Workload]:
    values, offsets, arr, rows = d["values"], d["offsets"], d["arrow"], d["rows"]
    lengths = d["lengths"]
    n = d["n"]
    bytes_moved = values.nbytes + offsets.nbytes + rows * 4
    detail = (f"values {values.nbytes} + offsets {offsets.nbytes} (int32) "
              f"+ result {rows * 4} (float32)")
    seg_cache: dict[str, Any] = {}

    def seg_ids() -> np.ndarray:  # sorted segment ids: the group-by / scatter routes' input
        if "ids" not in seg_cache:
            seg_cache["ids"] = C.segment_ids_from_lengths(lengths, np.int64)
        return seg_cache["ids"]  # type: ignore[no-any-return]

    shape = {"rows": rows, "values": n, "dtype": "float32", "offsets": "int32",
             "empty_rows": int(d["empty"].sum()), "mean_length": n / rows}
    out = []
    for kind in ("sum", "mean", "max"):
        wl = Workload(key=f"{kind}_1d", title=f"segment_{kind} 1-D",
                      description=f"segment_{kind} over {n:,} float32 values in {rows:,} rows",
                      family="streaming", bytes_moved=bytes_moved, bytes_detail=detail,
                      reference=ref_sorted(kind, values, offsets), empty_rows=d["empty"],
                      shape=shape)
        wl.impls += _impls_1d(kind, values, offsets, arr, rows, lengths, seg_ids)
        out.append(wl)
    return out


def _impls_1d(kind: str, values: np.ndarray, offsets: np.ndarray, arr: pa.Array, rows: int,
              lengths: np.ndarray, seg_ids: Callable[[], np.ndarray]) -> list[Impl]:
    impls: list[Impl] = []
    asp_name = f"segment_{kind}"

    def m_asp() -> Callable[[], Any]:
        f = asp_fn(asp_name)
        return lambda: f(values, offsets=offsets)

    def m_asp_arrow() -> Callable[[], Any]:
        f = asp_fn(asp_name)
        return lambda: f(arr)

    impls.append(Impl(f"arrow_sparse {asp_name}(values, offsets=)", "arrow_sparse",
                      "arrow_sparse", m_asp, empty_zero=True))
    impls.append(Impl(f"arrow_sparse {asp_name}(arrow list array)", "arrow_sparse_alt",
                      "arrow_sparse", m_asp_arrow, to_numpy=_arrow_np, empty_zero=True,
                      note="Arrow in, Arrow out (null on empty rows for mean/max)"))
    if kind == "sum":
        lengths64 = lengths.astype(np.int64)

        def m_asp_len() -> Callable[[], Any]:
            f = asp_fn(asp_name)
            return lambda: f(values, lengths=lengths64)

        def m_asp_ids() -> Callable[[], Any]:
            f = asp_fn(asp_name)
            ids = seg_ids()
            return lambda: f(values, segment_ids=ids, num_segments=rows)

        impls.append(Impl(f"arrow_sparse {asp_name}(values, lengths=)", "arrow_sparse_alt",
                          "arrow_sparse", m_asp_len, empty_zero=True))
        impls.append(Impl(f"arrow_sparse {asp_name}(values, segment_ids=)", "arrow_sparse_alt",
                          "arrow_sparse", m_asp_ids, empty_zero=True))

    # ---- numpy
    ufunc = {"sum": np.add, "mean": np.add, "max": np.maximum}[kind]

    def m_np_reduceat() -> Callable[[], Any]:
        def run() -> np.ndarray:
            r = reduceat_nonempty(ufunc, values, offsets)
            if kind == "mean":
                r /= np.maximum(np.diff(offsets), 1)
            return r
        return run

    impls.append(Impl(f"numpy {ufunc.__name__}.reduceat", "peer", "numpy", m_np_reduceat,
                      note="empty-row fix: reduceat over the non-empty rows' starts only"))
    if kind == "sum":
        def m_np_addat() -> Callable[[], Any]:
            ids = seg_ids()

            def run() -> np.ndarray:
                o = np.zeros(rows, dtype=np.float32)
                np.add.at(o, ids, values)
                return o
            return run

        def m_np_bincount() -> Callable[[], Any]:
            ids = seg_ids()
            return lambda: np.bincount(ids, weights=values, minlength=rows)

        impls.append(Impl("numpy add.at (segment ids)", "peer", "numpy", m_np_addat))
        impls.append(Impl("numpy bincount(weights=)", "peer", "numpy", m_np_bincount,
                          note="float64 result"))

    # ---- polars
    pl = LIBS["polars"]
    pl_state: dict[str, Any] = {}

    def m_polars() -> Callable[[], Any]:
        s = pl.from_arrow(arr)
        pl_state["s"] = s
        op = getattr(s.list, kind)
        return op

    impls.append(Impl(f"polars list.{kind}", "peer", "polars", m_polars, to_numpy=_polars_np,
                      convert=(lambda: pl.from_arrow(arr)) if pl is not None else None,
                      note="compute on pl.from_arrow(array); conversion timed separately"))

    # ---- awkward
    ak = LIBS["awkward"]

    def m_awkward() -> Callable[[], Any]:
        a = ak.from_arrow(arr)
        op = {"sum": ak.sum, "mean": ak.mean, "max": ak.max}[kind]
        return lambda: op(a, axis=-1)

    impls.append(Impl(f"awkward ak.{kind}(axis=-1)", "peer", "awkward", m_awkward,
                      to_numpy=_awkward_np,
                      convert=(lambda: ak.from_arrow(arr)) if ak is not None else None,
                      note="compute on ak.from_arrow(array); conversion timed separately"))

    # ---- torch
    torch = LIBS["torch"]

    def m_torch_seg() -> Callable[[], Any]:
        data = torch.from_numpy(values)
        offs = torch.from_numpy(offsets.astype(np.int64))
        return lambda: torch.segment_reduce(data, kind, offsets=offs, axis=0, unsafe=True)

    impls.append(Impl(f"torch segment_reduce('{kind}')", "peer", "torch", m_torch_seg,
                      to_numpy=_torch_np, note="int64 offsets (converted untimed)"))
    if kind == "sum":
        def m_torch_index_add() -> Callable[[], Any]:
            data = torch.from_numpy(values)
            idx = torch.from_numpy(seg_ids())
            return lambda: torch.zeros(rows, dtype=torch.float32).index_add_(0, idx, data)

        impls.append(Impl("torch index_add_", "peer", "torch", m_torch_index_add,
                          to_numpy=_torch_np))

        def m_fbgemm_csr() -> Callable[[], Any]:
            data = torch.from_numpy(values)
            offs = torch.from_numpy(offsets)  # the Arrow int32 offsets, as they are
            op = torch.ops.fbgemm.segment_sum_csr
            return lambda: op(1, offs, data)

        impls.append(Impl("fbgemm segment_sum_csr", "peer", "fbgemm", m_fbgemm_csr,
                          to_numpy=_torch_np, note="torch.ops.fbgemm.segment_sum_csr(1, "
                                                   "offsets, values); 1-D only"))

    # ---- pyarrow group_by
    def m_pa_group() -> Callable[[], Any]:
        ids = seg_ids()
        return lambda: pa.table({"seg": ids, "v": values}).group_by("seg").aggregate(
            [("v", kind)])

    impls.append(Impl(f"pyarrow group_by().aggregate({kind})", "peer", "pyarrow", m_pa_group,
                      to_numpy=_grouped_np("seg", f"v_{kind}", rows),
                      note="needs segment ids (built untimed); result has non-empty rows only"))

    # ---- scipy
    if kind == "sum":
        sp = LIBS["scipy.sparse"]
        sp_state: dict[str, Any] = {}

        def build_csr() -> Any:
            # the values themselves as the CSR data of a [rows, 1] matrix: row sums = S @ [1]
            return sp.csr_matrix((values, np.zeros(len(values), np.int32), offsets),
                                 shape=(rows, 1), copy=False)

        def m_scipy() -> Callable[[], Any]:
            sp_state["m"] = m = build_csr()
            one = np.ones(1, dtype=np.float32)
            return lambda: m @ one

        impls.append(Impl("scipy CSR @ vector", "peer", "scipy", m_scipy,
                          convert=build_csr if sp is not None else None,
                          note="values as CSR data of a [rows, 1] matrix times ones(1); "
                               "matrix construction timed separately"))

    # ---- numba baseline
    def m_numba() -> Callable[[], Any]:
        k = numba_kernels()[f"{kind}_1d"]
        return lambda: k(values, offsets)

    impls.append(Impl("numba prange baseline", "baseline", "numba", m_numba, empty_zero=True))
    return impls


# ------------------------------------------------------------ workload: 2-D
def workload_2d(d: dict[str, Any]) -> Workload:
    values, offsets, arr, rows, dim = d["values"], d["offsets"], d["arrow"], d["rows"], d["dim"]
    lengths = d["lengths"]
    n = d["n"]
    bytes_moved = values.nbytes + offsets.nbytes + rows * dim * 4
    wl = Workload(key="sum_2d", title=f"segment_sum 2-D [N,{dim}]",
                  description=f"segment_sum over [{n:,}, {dim}] float32 values in {rows:,} rows",
                  family="streaming", bytes_moved=bytes_moved,
                  bytes_detail=f"values {values.nbytes} + offsets {offsets.nbytes} + result "
                               f"{rows * dim * 4}",
                  reference=ref_sorted("sum", values, offsets), empty_rows=d["empty"],
                  shape={"rows": rows, "values": n, "dim": dim, "dtype": "float32",
                         "offsets": "int32", "empty_rows": int(d["empty"].sum())})
    ids_cache: dict[str, np.ndarray] = {}

    def seg_ids() -> np.ndarray:
        if "ids" not in ids_cache:
            ids_cache["ids"] = C.segment_ids_from_lengths(lengths, np.int64)
        return ids_cache["ids"]

    def m_asp() -> Callable[[], Any]:
        f = asp_fn("segment_sum")
        return lambda: f(values, offsets=offsets)

    def m_asp_arrow() -> Callable[[], Any]:
        f = asp_fn("segment_sum")
        return lambda: f(arr)

    def m_np() -> Callable[[], Any]:
        return lambda: reduceat_nonempty(np.add, values, offsets)

    def m_np_addat() -> Callable[[], Any]:
        ids = seg_ids()

        def run() -> np.ndarray:
            o = np.zeros((rows, dim), dtype=np.float32)
            np.add.at(o, ids, values)
            return o
        return run

    pl, ak, torch, sp = LIBS["polars"], LIBS["awkward"], LIBS["torch"], LIBS["scipy.sparse"]

    def m_polars() -> Callable[[], Any]:
        s = pl.from_arrow(arr)
        try:
            s.head(2).list.sum()
        except Exception as exc:  # noqa: BLE001
            raise Unsupported(f"polars list.sum on List(Array): {type(exc).__name__}: "
                              f"{str(exc)[:120]}") from None
        return s.list.sum

    def pl_np(r: Any) -> np.ndarray:
        return np.asarray(r.to_numpy(), dtype=np.float64).reshape(rows, dim)

    def m_awkward() -> Callable[[], Any]:
        a = ak.from_arrow(arr)
        return lambda: ak.sum(a, axis=1)

    def m_torch_seg() -> Callable[[], Any]:
        data = torch.from_numpy(values)
        offs = torch.from_numpy(offsets.astype(np.int64))
        return lambda: torch.segment_reduce(data, "sum", offsets=offs, axis=0, unsafe=True)

    def m_torch_index_add() -> Callable[[], Any]:
        data = torch.from_numpy(values)
        idx = torch.from_numpy(seg_ids())
        return lambda: torch.zeros((rows, dim), dtype=torch.float32).index_add_(0, idx, data)

    def build_csr() -> Any:
        return sp.csr_matrix((np.ones(n, np.float32), np.arange(n, dtype=np.int32), offsets),
                             shape=(rows, n), copy=False)

    def m_scipy() -> Callable[[], Any]:
        m = build_csr()
        return lambda: m @ values

    def m_numba() -> Callable[[], Any]:
        k = numba_kernels()["sum_2d"]
        return lambda: k(values, offsets)

    wl.impls = [
        Impl("arrow_sparse segment_sum(values[N,D], offsets=)", "arrow_sparse", "arrow_sparse",
             m_asp, empty_zero=True),
        Impl("arrow_sparse segment_sum(list<fixed_size_list>)", "arrow_sparse_alt",
             "arrow_sparse", m_asp_arrow, to_numpy=_arrow_np, empty_zero=True),
        Impl("numpy add.reduceat(axis=0)", "peer", "numpy", m_np,
             note="empty-row fix: reduceat over the non-empty rows' starts only"),
        Impl("numpy add.at (segment ids)", "peer", "numpy", m_np_addat),
        Impl("polars list.sum", "peer", "polars", m_polars, to_numpy=pl_np,
             convert=(lambda: pl.from_arrow(arr)) if pl is not None else None),
        Impl("awkward ak.sum(axis=1)", "peer", "awkward", m_awkward, to_numpy=_awkward_np,
             convert=(lambda: ak.from_arrow(arr)) if ak is not None else None,
             note="conversion timed separately"),
        Impl("torch segment_reduce('sum')", "peer", "torch", m_torch_seg, to_numpy=_torch_np),
        Impl("torch index_add_", "peer", "torch", m_torch_index_add, to_numpy=_torch_np),
        Impl("scipy CSR @ dense", "peer", "scipy", m_scipy,
             convert=build_csr if sp is not None else None,
             note="[rows, N] 0/1 segment matrix @ values; construction timed separately"),
        Impl("numba prange baseline", "baseline", "numba", m_numba, empty_zero=True),
    ]
    return wl


# ------------------------------------------------------- workload: unsorted
def workload_unsorted(d: dict[str, Any], seed: int) -> Workload:
    rows, lengths = d["rows"], d["lengths"]
    rng = C.rng_for(seed, "shuffle")
    perm = rng.permutation(d["n"])
    values = d["values"][perm]
    ids = C.segment_ids_from_lengths(lengths, np.int64)[perm]
    del perm
    reference = ref_sorted("sum", d["values"], d["offsets"])
    bytes_moved = values.nbytes + ids.nbytes + rows * 4
    wl = Workload(key="unsorted_sum", title="unsorted_segment_sum",
                  description=f"unsorted_segment_sum of the same {d['n']:,} values, "
                              f"shuffled int64 ids, {rows:,} segments",
                  family="scatter", bytes_moved=bytes_moved,
                  bytes_detail=f"values {values.nbytes} + ids {ids.nbytes} + result {rows * 4}",
                  reference=reference, empty_rows=d["empty"],
                  shape={"segments": rows, "values": d["n"], "dtype": "float32",
                         "ids": "int64 (shuffled)"})
    pl, torch = LIBS["polars"], LIBS["torch"]

    def m_asp() -> Callable[[], Any]:
        f = asp_fn("unsorted_segment_sum")
        return lambda: f(values, ids, num_segments=rows)

    def m_addat() -> Callable[[], Any]:
        def run() -> np.ndarray:
            o = np.zeros(rows, dtype=np.float32)
            np.add.at(o, ids, values)
            return o
        return run

    def m_bincount() -> Callable[[], Any]:
        return lambda: np.bincount(ids, weights=values, minlength=rows)

    def m_torch() -> Callable[[], Any]:
        data, idx = torch.from_numpy(values), torch.from_numpy(ids)
        return lambda: torch.zeros(rows, dtype=torch.float32).index_add_(0, idx, data)

    def m_pa() -> Callable[[], Any]:
        return lambda: pa.table({"seg": ids, "v": values}).group_by("seg").aggregate(
            [("v", "sum")])

    def pl_frame() -> Any:
        return pl.DataFrame({"seg": ids, "v": values})

    def m_pl() -> Callable[[], Any]:
        df = pl_frame()
        return lambda: df.group_by("seg").agg(pl.col("v").sum())

    def m_numba() -> Callable[[], Any]:
        k = numba_kernels()["unsorted_sum"]
        nthreads = LIBS["numba"].get_num_threads()
        return lambda: k(values, ids, rows, nthreads)

    wl.impls = [
        Impl("arrow_sparse unsorted_segment_sum", "arrow_sparse", "arrow_sparse", m_asp,
             empty_zero=True),
        Impl("numpy add.at", "peer", "numpy", m_addat),
        Impl("numpy bincount(weights=)", "peer", "numpy", m_bincount, note="float64 result"),
        Impl("torch index_add_", "peer", "torch", m_torch, to_numpy=_torch_np),
        Impl("pyarrow group_by().aggregate(sum)", "peer", "pyarrow", m_pa,
             to_numpy=_grouped_np("seg", "v_sum", rows)),
        Impl("polars group_by().agg(sum)", "peer", "polars", m_pl,
             to_numpy=_grouped_np("seg", "v", rows),
             convert=pl_frame if pl is not None else None,
             note="pl.DataFrame from the numpy arrays timed separately"),
        Impl("numba prange baseline (per-thread partials)", "baseline", "numba", m_numba,
             empty_zero=True),
    ]
    return wl


# ---------------------------------------------------- workload: embedding bag
def workloads_bags(d: dict[str, Any]) -> list[Workload]:
    table, ids, offsets, weights = d["table"], d["ids"], d["offsets"], d["weights"]
    bags, n, dim, vocab = d["bags"], d["n"], d["dim"], d["vocab"]
    torch, sp = LIBS["torch"], LIBS["scipy.sparse"]
    out = []
    for weighted in (False, True):
        w = weights if weighted else None
        gathered = n * dim * 4
        bytes_moved = ids.nbytes + offsets.nbytes + gathered + bags * dim * 4 + \
            (weights.nbytes if weighted else 0)
        key = "bag_wsum" if weighted else "bag_sum"
        wl = Workload(key=key, title="embedding_bag weighted sum" if weighted
                      else "embedding_bag sum",
                      description=f"embedding_bag{' (per_sample_weights)' if weighted else ''} "
                                  f"over a [{vocab:,}, {dim}] float32 table, {bags:,} bags, "
                                  f"{n:,} Zipf ids",
                      family="embedding_bag", bytes_moved=bytes_moved,
                      bytes_detail=f"ids {ids.nbytes} + offsets {offsets.nbytes} + gathered rows "
                                   f"{gathered} + result {bags * dim * 4}"
                                   + (f" + weights {weights.nbytes}" if weighted else ""),
                      reference=ref_bags(table, ids, offsets, w), empty_rows=d["empty"],
                      shape={"table": [vocab, dim], "bags": bags, "ids": n,
                             "ids_dtype": "int64", "offsets": "int64, bags + 1",
                             "unique_ids": int(len(np.unique(ids))),
                             "empty_bags": int(d["empty"].sum())})
        wl.impls = _impls_bags(table, ids, offsets, w, bags, vocab, torch, sp)
        out.append(wl)
    return out


def torch_embedding_bag(torch: Any, table: np.ndarray, ids: np.ndarray, offsets: np.ndarray,
                        w: np.ndarray | None, mode: str) -> Callable[[], Any]:
    """The timed call of torch's ``embedding_bag`` on the same buffers (no autograd)."""
    t_table, t_ids = torch.from_numpy(table), torch.from_numpy(ids)
    t_offs = torch.from_numpy(offsets)
    t_w = None if w is None else torch.from_numpy(w)
    fn = torch.nn.functional.embedding_bag

    def run() -> Any:
        with torch.no_grad():
            return fn(t_ids, t_table, t_offs, mode=mode, include_last_offset=True,
                      per_sample_weights=t_w)
    return run


def _impls_bags(table: np.ndarray, ids: np.ndarray, offsets: np.ndarray,
                w: np.ndarray | None, bags: int, vocab: int, torch: Any, sp: Any) -> list[Impl]:
    weighted = w is not None

    def m_asp() -> Callable[[], Any]:
        f = asp_fn("embedding_bag")
        if weighted:
            return lambda: f(table, ids, offsets=offsets, mode="sum", per_sample_weights=w)
        return lambda: f(table, ids, offsets=offsets, mode="sum")

    def m_asp_sparse() -> Callable[[], Any]:
        f = asp_fn("sparse_segment_sum")
        return lambda: f(table, ids, offsets=offsets)

    def m_np() -> Callable[[], Any]:
        def run() -> np.ndarray:
            rows = table[ids]
            if weighted:
                rows *= w[:, None]
            return reduceat_nonempty(np.add, rows, offsets)
        return run

    def m_torch() -> Callable[[], Any]:
        return torch_embedding_bag(torch, table, ids, offsets, w, "sum")

    def m_fbgemm_tbe() -> Callable[[], Any]:
        from fbgemm_gpu.split_embedding_configs import EmbOptimType, SparseType
        from fbgemm_gpu.split_table_batched_embeddings_ops_common import (
            EmbeddingLocation,
            PoolingMode,
        )
        from fbgemm_gpu.split_table_batched_embeddings_ops_training import (
            ComputeDevice,
            SplitTableBatchedEmbeddingBagsCodegen,
        )

        tbe = SplitTableBatchedEmbeddingBagsCodegen(
            [(vocab, table.shape[1], EmbeddingLocation.HOST, ComputeDevice.CPU)],
            pooling_mode=PoolingMode.SUM, weights_precision=SparseType.FP32,
            optimizer=EmbOptimType.EXACT_SGD)
        with torch.no_grad():  # the module owns its table: a copy, made untimed
            tbe.split_embedding_weights()[0].copy_(torch.from_numpy(table))
        t_ids, t_offs = torch.from_numpy(ids), torch.from_numpy(offsets)
        t_w = torch.from_numpy(w) if weighted else None

        def run() -> Any:
            with torch.no_grad():
                return tbe(t_ids, t_offs, per_sample_weights=t_w)
        return run

    def build_csr() -> Any:
        data = w if weighted else np.ones(len(ids), dtype=np.float32)
        return sp.csr_matrix((data, ids, offsets), shape=(bags, vocab), copy=False)

    def m_scipy() -> Callable[[], Any]:
        m = build_csr()
        return lambda: m @ table

    def m_numba() -> Callable[[], Any]:
        ks = numba_kernels()
        if weighted:
            k = ks["bag_wsum"]
            return lambda: k(table, ids, offsets, w)
        k = ks["bag_sum"]
        return lambda: k(table, ids, offsets)

    impls = [Impl("arrow_sparse embedding_bag" + ("(per_sample_weights=)" if weighted else ""),
                  "arrow_sparse", "arrow_sparse", m_asp, empty_zero=True)]
    if not weighted:
        impls.append(Impl("arrow_sparse sparse_segment_sum", "arrow_sparse_alt", "arrow_sparse",
                          m_asp_sparse, empty_zero=True))
    impls += [
        Impl("numpy take + add.reduceat", "peer", "numpy", m_np,
             note="table[ids] (" + ("times weights, " if weighted else "") +
                  "then reduceat with the empty-row fix"),
        Impl("torch embedding_bag", "peer", "torch", m_torch, to_numpy=_torch_np,
             note="include_last_offset=True, no_grad"),
        Impl("fbgemm table-batched embedding bag", "peer", "fbgemm", m_fbgemm_tbe,
             to_numpy=_torch_np, note="SplitTableBatchedEmbeddingBagsCodegen on the CPU "
                                      "(one FP32 table, SUM pooling) forward under no_grad; "
                                      "the table is copied into the module untimed"),
        Impl("scipy CSR @ table", "peer", "scipy", m_scipy,
             convert=build_csr if sp is not None else None,
             note="[bags, vocab] CSR (" + ("weights" if weighted else "ones") +
                  ") @ table; construction timed separately"),
        Impl("numba prange baseline", "baseline", "numba", m_numba, empty_zero=True),
    ]
    return impls


def ref_bags_extreme(table: np.ndarray, ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """float64 max of each bag (0 for an empty bag), in chunks of bags."""
    bags = len(offsets) - 1
    out = np.zeros((bags, table.shape[1]), dtype=np.float64)
    for b0 in range(0, bags, 8192):
        b1 = min(bags, b0 + 8192)
        lo, hi = int(offsets[b0]), int(offsets[b1])
        if hi > lo:
            out[b0:b1] = reduceat_nonempty(np.maximum, table[ids[lo:hi]].astype(np.float64),
                                           offsets[b0:b1 + 1] - lo, np.float64)
    return out


def workloads_bags_heavy(d: dict[str, Any]) -> list[Workload]:
    """``embedding_bag`` on heavy-tailed bags: sum, mean, max and weighted sum vs torch."""
    table, ids, offsets, weights = d["table"], d["ids"], d["offsets"], d["weights"]
    bags, n, dim, vocab, st = d["bags"], d["n"], d["dim"], d["vocab"], d["stats"]
    torch = LIBS["torch"]
    lengths = d["lengths"]
    sums = ref_bags(table, ids, offsets, None)
    data = (f"[{vocab:,}, {dim}] float32 table, {bags:,} bags with heavy-tailed lengths "
            f"(mean {st['mean']:.1f}, p50 {st['p50']:.0f}, p99 {st['p99']:.0f}, max "
            f"{st['max']:,}; {st['empty_bags']:,} empty), {n:,} ids zipf(1.1) % {vocab:,} "
            f"({st['unique_ids']:,} distinct)")
    shape = {"table": [vocab, dim], "bags": bags, "ids": n, "ids_dtype": "int64",
             "offsets": "int64, bags + 1", **st,
             "lengths": f"{HEAVY_TAIL_SHARE:.0%} of bags geometric(mean {HEAVY_TAIL_MEAN:g}), "
                        f"the rest geometric(mean {HEAVY_BODY_MEAN:g}), clipped at "
                        f"{HEAVY_CLIP}, then {HEAVY_EMPTY:.0%} set empty",
             "id_law": "numpy Generator.zipf(1.1) % vocab, unshuffled (hot ids at low rows)"}
    arrow_ids = pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(ids),
                                              mask=pa.array(d["null"]))
    out = []
    for key, mode, weighted in (("bag_heavy_sum", "sum", False), ("bag_heavy_mean", "mean", False),
                                ("bag_heavy_max", "max", False), ("bag_heavy_wsum", "sum", True)):
        w = weights if weighted else None
        if weighted:
            reference = ref_bags(table, ids, offsets, w)
        elif mode == "mean":
            reference = sums / np.maximum(lengths, 1)[:, None]
        elif mode == "max":
            reference = ref_bags_extreme(table, ids, offsets)
        else:
            reference = sums
        gathered = n * dim * 4
        title = f"embedding_bag {mode}{' weighted' if weighted else ''}, heavy-tailed bags"
        wl = Workload(key=key, title=title, description=f"embedding_bag(mode={mode!r}"
                      f"{', per_sample_weights' if weighted else ''}) over {data}",
                      family="embedding_bag",
                      bytes_moved=ids.nbytes + offsets.nbytes + gathered + bags * dim * 4
                      + (weights.nbytes if weighted else 0),
                      bytes_detail=f"ids {ids.nbytes} + offsets {offsets.nbytes} + gathered "
                                   f"rows {gathered} + result {bags * dim * 4}"
                                   + (f" + weights {weights.nbytes}" if weighted else ""),
                      reference=reference, empty_rows=d["empty"], shape=shape)
        wl.impls = _impls_bags_heavy(table, ids, offsets, arrow_ids, w, mode, torch)
        out.append(wl)
    return out


def _impls_bags_heavy(table: np.ndarray, ids: np.ndarray, offsets: np.ndarray,
                      arrow_ids: pa.Array, w: np.ndarray | None, mode: str,
                      torch: Any) -> list[Impl]:
    weighted = w is not None

    def m_asp() -> Callable[[], Any]:
        f = asp_fn("embedding_bag")
        return lambda: f(table, ids, offsets=offsets, mode=mode, per_sample_weights=w)

    def m_asp_arrow() -> Callable[[], Any]:
        f = asp_fn("embedding_bag")
        return lambda: f(table, arrow_ids, mode=mode,
                         per_sample_weights=None if w is None else pa.LargeListArray
                         .from_arrays(pa.array(offsets), pa.array(w)))

    def m_torch() -> Callable[[], Any]:
        return torch_embedding_bag(torch, table, ids, offsets, w, mode)

    impls = [Impl(f"arrow_sparse embedding_bag mode={mode}"
                  + (" (per_sample_weights=)" if weighted else ""), "arrow_sparse",
                  "arrow_sparse", m_asp, empty_zero=True)]
    if not weighted:
        impls.append(Impl("arrow_sparse embedding_bag, Arrow list ids with null bags",
                          "arrow_sparse_alt", "arrow_sparse", m_asp_arrow, to_numpy=_arrow_np,
                          note="the same bags as a LargeListArray; half the empty bags are "
                               "null (null rows out)"))
    impls.append(Impl("torch embedding_bag", "peer", "torch", m_torch, to_numpy=_torch_np,
                      note="include_last_offset=True, no_grad, same arrays (from_numpy)"))
    return impls


# ------------------------------------------------------------------- running
def prepare_impl(wl: Workload, impl: Impl) -> tuple[dict[str, Any], Callable[[], Any] | None]:
    """Set up, warm up (first call, may JIT-compile) and check one implementation.

    Returns its record and the callable to time (None when it cannot run). An
    implementation whose check fails is still timed, and flagged.
    """
    rec: dict[str, Any] = {"kind": impl.kind, "library": impl.library}
    if impl.note:
        rec["note"] = impl.note
    if impl.library not in ("numpy", "pyarrow") and LIBS.get(impl.library) is None:
        rec["status"] = LIB_STATUS.get(impl.library, "not installed")
        return rec, None
    try:
        fn = impl.make()
    except Unsupported as exc:
        rec["status"] = f"unsupported: {exc}"
        return rec, None
    except Exception as exc:  # noqa: BLE001
        rec["status"] = f"setup error: {type(exc).__name__}: {exc}"
        if impl.kind.startswith("arrow_sparse"):
            C.loud(f"{wl.title}: {impl.name} setup RAISED {rec['status']}")
        return rec, None
    try:
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        rec["warmup_s"] = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001
        msg = f"{type(exc).__name__}: {str(exc)[:300]}"
        rec["status"] = f"error: {msg}"
        if impl.kind.startswith("arrow_sparse"):
            C.loud(f"{wl.title}: {impl.name} RAISED {msg}")
        return rec, None
    rec["status"] = "ok"
    try:
        got = impl.to_numpy(result)
        if not impl.empty_zero and got.shape[:1] == wl.empty_rows.shape:
            got = got.copy()
            got[wl.empty_rows] = 0.0  # the peer's own empty-row convention (null/NaN/-inf)
        check = C.check_close(got, wl.reference, rtol=1e-4, atol=1e-5)
        del got
    except Exception as exc:  # noqa: BLE001
        check = {"ok": False, "detail": f"check raised {type(exc).__name__}: {exc}"}
    del result
    rec["check"] = check
    if not check["ok"]:
        rec["status"] = "check failed"
        C.loud(f"CHECK FAILED: {wl.title}: {impl.name}: {check.get('detail')}")
    return rec, fn


def time_conversion(impl: Impl, rec: dict[str, Any], repeat: int) -> None:
    if impl.convert is None or rec.get("status") not in ("ok", "check failed"):
        return
    try:
        ct, _ = C.time_call(impl.convert, max(1, min(repeat, 3)))
        rec["convert_best_s"] = ct.best_s
        rec["convert_median_s"] = ct.median_s
    except Exception as exc:  # noqa: BLE001
        rec["convert_error"] = f"{type(exc).__name__}: {exc}"


def summarize(wl: Workload, results: dict[str, dict[str, Any]],
              copy_gbps: float) -> dict[str, Any]:
    def ok(r: dict[str, Any]) -> bool:
        return r.get("status") == "ok"

    asp = [(k, r) for k, r in results.items() if r["kind"] == "arrow_sparse"]
    peers = [(k, r) for k, r in results.items() if r["kind"] == "peer" and ok(r)]
    base = [(k, r) for k, r in results.items() if r["kind"] == "baseline" and ok(r)]
    s: dict[str, Any] = {"bytes_moved": wl.bytes_moved}
    asp_best = None
    if asp:
        name, r = asp[0]
        s["arrow_sparse"] = name
        s["arrow_sparse_status"] = r.get("status")
        if "best_s" in r:  # timed even if its check failed (flagged by the status)
            asp_best = r["best_s"]
            s["arrow_sparse_best_s"] = asp_best
            s["arrow_sparse_median_s"] = r["median_s"]
            s["gbps"] = C.gbps(wl.bytes_moved, asp_best)
            s["pct_of_copy_bw"] = 100.0 * s["gbps"] / copy_gbps
    if peers:
        name, r = min(peers, key=lambda kr: kr[1]["best_s"])
        s["fastest_peer"] = name
        s["fastest_peer_best_s"] = r["best_s"]
        if asp_best:
            s["speedup_vs_fastest_peer"] = r["best_s"] / asp_best
    if base:
        name, r = base[0]
        s["numba_baseline_best_s"] = r["best_s"]
        if asp_best:
            s["speedup_vs_numba_baseline"] = r["best_s"] / asp_best
    torch_bag = results.get("torch embedding_bag")
    if torch_bag and ok(torch_bag):
        s["torch_embedding_bag_best_s"] = torch_bag["best_s"]
        if asp_best:
            s["speedup_vs_torch_embedding_bag"] = torch_bag["best_s"] / asp_best
    return s


FOREIGN_CORES_WARN = 0.1
RETRY_WAIT_S = 300.0  # longest wait for a quiet machine before a retry


def run_workload(wl: Workload, repeat: int, copy_gbps: float) -> dict[str, Any]:
    """Each implementation in turn: set up, warm up + check, warm up again, time ``repeat``.

    Timing each implementation in one block right after its warm-up keeps one
    library's idle worker threads (e.g. OpenMP threads spinning after a torch call)
    from landing in another library's timings.
    """
    print(f"\n## {wl.title}: {wl.description}  [t={time.perf_counter() - T0:.0f} s]",
          flush=True)
    monitor = C.CpuMonitor()
    results: dict[str, dict[str, Any]] = {}
    for impl in wl.impls:
        rec, fn = prepare_impl(wl, impl)
        results[impl.name] = rec
        if fn is None:
            print(f"  {impl.name:<52} {rec['status'].splitlines()[0]}", flush=True)
            continue
        warmup_s = rec.pop("warmup_s")
        # the check ran between the first call and now: warm up again unless slow
        timing, _ = C.time_call(fn, repeat, warmup=warmup_s < 1.0)
        timing.warmup_s = warmup_s
        del fn
        rec.update(timing.as_dict())
        time_conversion(impl, rec, repeat)
        extra = ""
        if "convert_best_s" in rec:
            extra = f"  (+ conversion {C.fmt_ms(rec['convert_best_s'])} ms)"
        print(f"  {impl.name:<52} best {C.fmt_ms(rec['best_s']):>8} ms  median "
              f"{C.fmt_ms(rec['median_s']):>8} ms  [{rec['status']}]{extra}", flush=True)
        gc.collect()
    cpu = monitor.stop()
    if cpu.get("foreign_cores", 0.0) > FOREIGN_CORES_WARN:
        C.loud(f"{wl.title}: other processes kept {cpu['foreign_cores']:.2f} cores busy "
               "during this workload: its timings are disturbed")
    summary = summarize(wl, results, copy_gbps)
    return {"title": wl.title, "description": wl.description, "family": wl.family,
            "shape": wl.shape, "bytes_moved": wl.bytes_moved, "bytes_detail": wl.bytes_detail,
            "machine_load": cpu, "results": results, "summary": summary}


# ----------------------------------------------------- latency and overhead
_SMALL_LENGTHS = [3, 0, 2, 5, 1, 0, 4, 2, 3, 1]  # 10 rows, 21 values, two empty

LATENCY_CODE = textwrap.dedent("""
    import json, time
    t0 = time.perf_counter()
    import numpy as np
    import arrow_sparse as asp
    t1 = time.perf_counter()
    lengths = np.array({lengths}, dtype=np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = np.arange(offsets[-1], dtype=np.float32)
    r = asp.segment_sum(values, offsets=offsets)
    t2 = time.perf_counter()
    r = asp.segment_sum(values, offsets=offsets)
    t3 = time.perf_counter()
    print(json.dumps({{"import_s": t1 - t0, "first_call_s": t2 - t1, "import_to_result_s": t2 - t0,
                      "second_call_s": t3 - t2}}))
""").format(lengths=_SMALL_LENGTHS)


def measure_latency(cold_runs: int = 2, warm_runs: int = 3) -> dict[str, Any]:
    """First call of asp.segment_sum in fresh interpreters, cold and warm Numba cache."""
    if LIBS["arrow_sparse"] is None:
        return {"status": LIB_STATUS["arrow_sparse"]}
    if getattr(LIBS["arrow_sparse"], "segment_sum", None) is None:
        return {"status": "arrow_sparse.segment_sum does not exist (yet)"}
    cold, warm = [], []
    dirs = []
    try:
        for _ in range(cold_runs):
            cache = C.fresh_cache_dir()
            dirs.append(cache)
            cold.append(C.run_python(LATENCY_CODE, env_extra={"NUMBA_CACHE_DIR": cache}))
        for _ in range(warm_runs):  # the cache the first cold run filled
            warm.append(C.run_python(LATENCY_CODE, env_extra={"NUMBA_CACHE_DIR": dirs[0]}))
    finally:
        for p in dirs:
            shutil.rmtree(p, ignore_errors=True)

    def agg(runs: list[dict[str, Any]]) -> dict[str, Any]:
        good = [r for r in runs if r.get("ok")]
        out: dict[str, Any] = {"runs": runs}
        if not good:
            out["status"] = "error"
            return out
        out["status"] = "ok"
        for key in ("import_s", "first_call_s", "import_to_result_s", "second_call_s"):
            out[f"median_{key}"] = float(np.median([r[key] for r in good]))
        return out

    return {"status": "ok", "input": "10 rows (21 float32 values), int64 offsets",
            "definition": "seconds from `import arrow_sparse` (numpy included) to the first "
                          "segment_sum result, in a fresh interpreter; cold = empty "
                          "NUMBA_CACHE_DIR, warm = the directory a cold run filled",
            "cold_cache": agg(cold), "warm_cache": agg(warm)}


def measure_overhead(calls: int) -> dict[str, Any]:
    """Warm per-call time on a 10-row input, arrow_sparse and a few peers (microseconds)."""
    lengths = np.array(_SMALL_LENGTHS, dtype=np.int64)
    offsets = C.offsets_from_lengths(lengths, np.int64)
    offsets32 = offsets.astype(np.int32)
    values = np.arange(offsets[-1], dtype=np.float32)
    arr = pa.ListArray.from_arrays(pa.array(offsets32), pa.array(values))
    ref = ref_sorted("sum", values, offsets)
    cases: list[tuple[str, str, Callable[[], Callable[[], Any]]]] = []
    asp = LIBS["arrow_sparse"]

    def a(fn_name: str, **kw: Any) -> Callable[[], Callable[[], Any]]:
        def make() -> Callable[[], Any]:
            f = asp_fn(fn_name)
            return lambda: f(values, **kw)
        return make

    cases.append(("arrow_sparse segment_sum(values, offsets=int64)", "arrow_sparse",
                  a("segment_sum", offsets=offsets)))
    cases.append(("arrow_sparse segment_sum(values, offsets=int32)", "arrow_sparse_alt",
                  a("segment_sum", offsets=offsets32)))
    cases.append(("arrow_sparse segment_sum(values, lengths=)", "arrow_sparse_alt",
                  a("segment_sum", lengths=lengths)))

    def m_arrow() -> Callable[[], Any]:
        f = asp_fn("segment_sum")
        return lambda: f(arr)

    cases.append(("arrow_sparse segment_sum(arrow list array)", "arrow_sparse_alt", m_arrow))
    cases.append(("numpy add.reduceat (empty-row fix)", "peer",
                  lambda: (lambda: reduceat_nonempty(np.add, values, offsets))))

    def m_nb() -> Callable[[], Any]:
        k = numba_kernels()["sum_1d"]
        return lambda: k(values, offsets)

    cases.append(("numba prange baseline", "baseline", m_nb))
    torch = LIBS["torch"]
    if torch is not None:
        def m_t() -> Callable[[], Any]:
            d, o = torch.from_numpy(values), torch.from_numpy(offsets)
            return lambda: torch.segment_reduce(d, "sum", offsets=o, axis=0, unsafe=True)
        cases.append(("torch segment_reduce('sum')", "peer", m_t))
    out: dict[str, Any] = {"input": "10 rows (21 float32 values, two empty)", "cases": {}}
    for name, kind, make in cases:
        if kind.startswith("arrow_sparse") and asp is None:
            out["cases"][name] = {"kind": kind, "status": LIB_STATUS["arrow_sparse"]}
            continue
        try:
            fn = make()
            r = fn()
            got = _arrow_np(r) if isinstance(r, (pa.Array, pa.ChunkedArray)) else \
                (_torch_np(r) if torch is not None and isinstance(r, torch.Tensor) else _np(r))
            check = C.check_close(got, ref)
            res = C.call_overhead_us(fn, calls=calls)
            out["cases"][name] = {"kind": kind, "status": "ok" if check["ok"] else
                                  "check failed", "check": check, **res}
            if not check["ok"]:
                C.loud(f"CHECK FAILED (10-row overhead input): {name}: {check.get('detail')}")
            print(f"  {name:<52} {res['median_us']:8.2f} µs/call (median)", flush=True)
        except Unsupported as exc:
            out["cases"][name] = {"kind": kind, "status": f"unsupported: {exc}"}
            print(f"  {name:<52} {exc}", flush=True)
        except Exception as exc:  # noqa: BLE001
            out["cases"][name] = {"kind": kind, "status": f"error: {type(exc).__name__}: {exc}"}
            print(f"  {name:<52} error: {exc}", flush=True)
    return out


# -------------------------------------------------------------------- report
STREAMING_TARGET_PCT = 50.0
PEER_TARGET = 1.5
TORCH_BAG_TARGET = 1.2
OVERHEAD_TARGET_US = 20.0


def evaluate_targets(workloads: dict[str, Any], overhead: dict[str, Any]) -> dict[str, Any]:
    t: dict[str, Any] = {}

    def verdict(values: list[float | None], ok: Callable[[float], bool]) -> bool | None:
        if not values or any(v is None for v in values):
            return None
        return all(ok(v) for v in values)  # type: ignore[arg-type]

    sp = {k: w["summary"].get("speedup_vs_fastest_peer") for k, w in workloads.items()}
    t["every_workload_ge_1.5x_fastest_peer"] = {"met": verdict(list(sp.values()),
                                                               lambda v: v >= PEER_TARGET),
                                                "per_workload": sp}
    nb = {k: w["summary"].get("speedup_vs_numba_baseline") for k, w in workloads.items()}
    t["every_workload_ge_numba_baseline"] = {"met": verdict(list(nb.values()),
                                                            lambda v: v >= 1.0),
                                             "per_workload": nb}
    st = {k: w["summary"].get("pct_of_copy_bw") for k, w in workloads.items()
          if w["family"] == "streaming"}
    t["streaming_ge_50pct_copy_bw"] = {"met": verdict(list(st.values()),
                                                      lambda v: v >= STREAMING_TARGET_PCT),
                                       "per_workload": st}
    eb = {k: w["summary"].get("speedup_vs_torch_embedding_bag") for k, w in workloads.items()
          if w["family"] == "embedding_bag"}
    t["embedding_bag_ge_1.2x_torch"] = {"met": verdict(list(eb.values()),
                                                       lambda v: v >= TORCH_BAG_TARGET),
                                        "per_workload": eb}
    head = next((c for c in overhead.get("cases", {}).values()
                 if c.get("kind") == "arrow_sparse"), None)
    us = head.get("median_us") if head and head.get("status") == "ok" else None
    t["warm_10row_overhead_lt_20us"] = {"met": None if us is None else us < OVERHEAD_TARGET_US,
                                        "median_us": us}
    return t


def _short_status(status: str) -> str:
    if "does not exist" in status:
        return "not implemented"
    if status.startswith("import failed"):
        return "import failed"
    return status.split(":")[0][:30]


def print_report(payload: dict[str, Any]) -> None:
    workloads = payload["workloads"]
    copy = payload["copy_bandwidth"]["best_gbps"]
    rows = []
    for w in workloads.values():
        s = w["summary"]
        status = s.get("arrow_sparse_status", "-")
        asp_ms = C.fmt_ms(s.get("arrow_sparse_best_s"))
        if status != "ok":
            short = _short_status(status)
            asp_ms = f"{asp_ms} ({short})" if s.get("arrow_sparse_best_s") else short
        peer = f"{s['fastest_peer']} {C.fmt_ms(s['fastest_peer_best_s'])}" \
            if "fastest_peer" in s else "-"
        rows.append([w["title"], asp_ms, peer,
                     C.fmt_num(s.get("speedup_vs_fastest_peer")) + ("x" if s.get(
                         "speedup_vs_fastest_peer") else ""),
                     C.fmt_num(s.get("gbps"), 1), C.fmt_num(s.get("pct_of_copy_bw"), 1)])
    print(f"\n### Results (scale {payload['config']['scale']}, best of "
          f"{payload['config']['repeat']}; copy bandwidth {copy:.1f} GB/s)\n")
    print(C.markdown_table(["workload", "arrow_sparse ms", "fastest peer (name) ms",
                            "ratio", "GB/s", "% of copy bw"], rows))
    rows2 = []
    for w in workloads.values():
        s = w["summary"]
        rows2.append([w["title"], C.fmt_ms(s.get("arrow_sparse_best_s")),
                      C.fmt_ms(s.get("numba_baseline_best_s")),
                      C.fmt_num(s.get("speedup_vs_numba_baseline")),
                      C.fmt_ms(s.get("torch_embedding_bag_best_s"))
                      if "torch_embedding_bag_best_s" in s else "",
                      C.fmt_num(s.get("speedup_vs_torch_embedding_bag"))
                      if "torch_embedding_bag_best_s" in s else ""])
    print("\n" + C.markdown_table(["workload", "arrow_sparse ms", "numba prange ms",
                                   "vs numba", "torch embedding_bag ms", "vs torch"], rows2))
    lat = payload.get("latency", {})
    if lat.get("status") == "ok":
        c, wm = lat["cold_cache"], lat["warm_cache"]
        print(f"\nFirst call (import -> first segment_sum result, fresh interpreter): cold "
              f"Numba cache {c.get('median_import_to_result_s', float('nan')):.2f} s, warm "
              f"cache {wm.get('median_import_to_result_s', float('nan')):.2f} s "
              f"(import alone {wm.get('median_import_s', float('nan')):.2f} s)")
    else:
        print(f"\nFirst-call latency: {lat.get('status', 'skipped')}")
    print("\nTargets:")
    for name, t in payload["targets"].items():
        met = {True: "MET", False: "NOT MET", None: "n/a"}[t["met"]]
        print(f"  {name:<38} {met}")


# ----------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="size multiplier (1 = 20M values / 1M rows; 0.05 = smoke run)")
    ap.add_argument("--json", default=str(C.RESULTS_DIR / "segment.json"),
                    help="where to write the JSON results (default: %(default)s)")
    ap.add_argument("--repeat", type=int, default=5, help="timed calls after the warm-up")
    ap.add_argument("--seed", type=int, default=20240601, help="data seed")
    ap.add_argument("--only", default="",
                    help="comma-separated workload keys: sum_1d,mean_1d,max_1d,sum_2d,"
                         "unsorted_sum,bag_sum,bag_wsum,bag_heavy_sum,bag_heavy_mean,"
                         "bag_heavy_max,bag_heavy_wsum")
    ap.add_argument("--skip-latency", action="store_true",
                    help="skip the fresh-interpreter first-call latency runs")
    ap.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                    help="first wait up to SECONDS for other processes to leave the CPUs "
                         "idle (a shared machine); the run starts anyway after that")
    ap.add_argument("--retry-disturbed", type=int, default=0, metavar="N",
                    help="rerun a workload up to N times (after waiting up to 5 min for a "
                         "quiet machine) when other processes disturbed it; the least "
                         "disturbed run is kept")
    ap.add_argument("--overhead-calls", type=int, default=20_000,
                    help="calls timed for the 10-row overhead (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.scale <= 0 or args.repeat < 1:
        ap.error("--scale must be > 0 and --repeat >= 1")
    only = {k for k in args.only.split(",") if k}
    t_start = time.perf_counter()
    waited_s = 0.0

    if args.wait_quiet > 0:
        waited, quiet = C.wait_for_quiet(args.wait_quiet, max_foreign_cores=FOREIGN_CORES_WARN)
        print(f"# waited {waited:.0f} s for a quiet machine: "
              f"{'quiet' if quiet else 'still busy, running anyway'}", flush=True)
    waited_s = time.perf_counter() - t_start
    t_start = time.perf_counter()  # the run's own time excludes that wait
    run_monitor = C.CpuMonitor()
    load_start = C.load_average()
    load_libraries()
    versions = C.library_versions(["numpy", "pyarrow", "arrow_sparse", "numba", "llvmlite",
                                   "torch", "fbgemm_gpu", "polars", "awkward", "scipy"])
    machine = C.machine_info()
    print(f"# bench_segment: scale {args.scale}, repeat {args.repeat}, {machine['cores']} cores, "
          f"{machine['cpu_model']}")
    print("  " + ", ".join(f"{k} {v}" for k, v in versions.items()), flush=True)
    if LIBS["arrow_sparse"] is not None and getattr(LIBS["arrow_sparse"], "segment_sum",
                                                    None) is None:
        C.loud("arrow_sparse.segment_sum does not exist yet: timing the peers only")

    prefault_bytes = int(3.5 * args.scale * C.GIB)  # ~ the run's peak working set
    prefault_s = C.prefault(prefault_bytes)
    print(f"\n## copy bandwidth (numpy copy of 1 GiB; {prefault_bytes / C.GIB:.1f} GiB "
          f"pre-faulted in {prefault_s:.1f} s)", flush=True)
    copy_start = C.copy_bandwidth(C.GIB, repeat=max(3, args.repeat))
    print(f"  one thread {copy_start['single_thread']['gbps']:.1f} GB/s, two threads "
          f"{copy_start['two_threads']['gbps']:.1f} GB/s (read + written bytes per second)",
          flush=True)
    copy_gbps = copy_start["best_gbps"]

    workloads: dict[str, Any] = {}

    def want(key: str) -> bool:
        return not only or key in only

    def run(wl: Workload) -> dict[str, Any]:
        best = run_workload(wl, args.repeat, copy_gbps)
        for attempt in range(args.retry_disturbed):
            if best["machine_load"].get("foreign_cores", 0.0) <= FOREIGN_CORES_WARN:
                break
            waited, _ = C.wait_for_quiet(RETRY_WAIT_S, max_foreign_cores=FOREIGN_CORES_WARN)
            print(f"  (retry {attempt + 1} of {wl.key} after waiting {waited:.0f} s)",
                  flush=True)
            again = run_workload(wl, args.repeat, copy_gbps)
            again["attempts"] = attempt + 2
            if again["machine_load"].get("foreign_cores", 0.0) < \
                    best["machine_load"].get("foreign_cores", 0.0):
                best = again
        return best

    if any(want(k) for k in ("sum_1d", "mean_1d", "max_1d", "unsorted_sum")):
        d1 = build_1d(args.scale, args.seed)
        for wl in workloads_1d(d1):
            if want(wl.key):
                workloads[wl.key] = run(wl)
            del wl
        if want("unsorted_sum"):
            wl = workload_unsorted(d1, args.seed)
            workloads[wl.key] = run(wl)
            del wl
        del d1
        gc.collect()
    if want("sum_2d"):
        d2 = build_2d(args.scale, args.seed)
        wl = workload_2d(d2)
        workloads[wl.key] = run(wl)
        del wl, d2
        gc.collect()
    if want("bag_sum") or want("bag_wsum"):
        db = build_bags(args.scale, args.seed)
        for wl in workloads_bags(db):
            if want(wl.key):
                workloads[wl.key] = run(wl)
            del wl
        del db
        gc.collect()
    heavy_keys = ("bag_heavy_sum", "bag_heavy_mean", "bag_heavy_max", "bag_heavy_wsum")
    if any(want(k) for k in heavy_keys):
        dh = build_bags_heavy(args.scale, args.seed)
        for wl in workloads_bags_heavy(dh):
            if want(wl.key):
                workloads[wl.key] = run(wl)
            del wl
        del dh
        gc.collect()

    print("\n## warm call overhead, 10-row input", flush=True)
    overhead = measure_overhead(args.overhead_calls)
    if args.skip_latency:
        latency: dict[str, Any] = {"status": "skipped (--skip-latency)"}
    else:
        print("\n## first-call latency (fresh interpreters)", flush=True)
        latency = measure_latency(*((2, 3) if args.scale >= 0.5 else (1, 2)))
        if latency.get("status") == "ok":
            for label in ("cold_cache", "warm_cache"):
                r = latency[label]
                if r.get("status") == "ok":
                    print(f"  {label}: import {r['median_import_s']:.3f} s + first call "
                          f"{r['median_first_call_s']:.3f} s = "
                          f"{r['median_import_to_result_s']:.3f} s", flush=True)
                else:
                    C.loud(f"first-call latency ({label}) failed: "
                           f"{r['runs'][0].get('error', '')[-500:]}")
        else:
            print(f"  {latency.get('status')}", flush=True)

    copy_end = C.copy_bandwidth(C.GIB, repeat=max(3, args.repeat))
    print(f"\n## copy bandwidth again at the end: one thread "
          f"{copy_end['single_thread']['gbps']:.1f} GB/s, two threads "
          f"{copy_end['two_threads']['gbps']:.1f} GB/s", flush=True)
    if copy_end["best_gbps"] > copy_gbps:
        copy_gbps = copy_end["best_gbps"]
        for w in workloads.values():  # re-express the fractions against the better number
            s = w["summary"]
            if s.get("gbps") is not None:
                s["pct_of_copy_bw"] = 100.0 * s["gbps"] / copy_gbps
    copy = {"best_gbps": copy_gbps, "start": copy_start, "end": copy_end,
            "prefault_bytes": prefault_bytes, "prefault_s": prefault_s,
            "definition": "numpy copy of 1 GiB, on one thread and on two threads (each "
                          "copying half); GB/s = (bytes read + bytes written) / best time; "
                          "best_gbps is the best of single/dual, start/end of the run"}

    payload: dict[str, Any] = {
        "benchmark": "segment",
        "created_utc": C.now_iso(),
        "command": " ".join([Path(sys.argv[0]).name] + (argv if argv is not None
                                                          else sys.argv[1:])),
        "machine": machine,
        "versions": versions,
        "source": C.source_state(),
        "threads": {"numba": LIBS["numba"].get_num_threads() if LIBS["numba"] else None,
                    "torch": LIBS["torch"].get_num_threads() if LIBS["torch"] else None,
                    "polars": (LIBS["polars"].thread_pool_size() if LIBS["polars"] is not None
                               and hasattr(LIBS["polars"], "thread_pool_size") else None)},
        "config": {"scale": args.scale, "repeat": args.repeat, "seed": args.seed,
                   "timing": "one untimed warm-up call, then `repeat` calls timed with "
                             "time.perf_counter (gc off); ratios and GB/s use the best time",
                   "check": "np.allclose(result, float64 numpy reference, rtol=1e-4, "
                            "atol=1e-5) on the warm-up result; a peer's empty rows may "
                            "hold null/NaN/-inf, arrow_sparse's must hold 0 "
                            "(null for Arrow output)",
                   "data": "row lengths: 20% empty, others geometric with mean 25 (overall "
                           "mean ~20); values uniform [0, 1) float32; embedding ids Zipf "
                           "(exponent 1.05) over the whole table, ranks scattered by a fixed "
                           "permutation; bag_heavy_*: heavy-tailed bag lengths and "
                           "zipf(1.1) % vocab ids (build_bags_heavy, each workload's "
                           "shape)"},
        "copy_bandwidth": copy,
        "workloads": workloads,
        "overhead_10_rows": overhead,
        "latency": latency,
    }
    payload["targets"] = evaluate_targets(workloads, overhead)
    return C.finish_run(args.json, payload, run_monitor, load_start, t_start, waited_s,
                        print_report, load_note=C.QUIET_NOTE, warn_above=FOREIGN_CORES_WARN)


if __name__ == "__main__":
    sys.exit(main())
