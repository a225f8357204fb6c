"""Sparse tensors and masked reductions: arrow_sparse against scipy.sparse, pydata sparse, torch.

Run from the repository root::

    python benchmarks/bench_sparse.py                     # scale 1, 5 repeats (~5 min, 2 cores)
    python benchmarks/bench_sparse.py --scale 0.05        # smoke run (< 1 minute)
    python benchmarks/bench_sparse.py --json out.json --repeat 9 --only coo_csr,spmm_16
    python benchmarks/bench_sparse.py --wait-quiet 1200 --retry-disturbed 3   # shared machine

One command writes the complete results (``benchmarks/results/sparse.json`` by
default). Workloads (``--only`` keys):

* ``coo_csr``, ``coo_csc``, ``csr_coo``, ``csr_csc``: format conversions of a
  recommender-shaped ``[users, items]`` matrix (row lengths geometric, ~20% empty
  rows, item ids Zipf over the vocabulary, distinct coordinates in shuffled order,
  int32 coordinates, float32 values), against scipy.sparse, pydata ``sparse`` (GCXS)
  and torch.
* ``coo_canonical``: the same entries with repeated coordinates, sorted and summed
  (``canonical()``), against scipy's ``sum_duplicates`` and pydata's and torch's.
* ``coo_csf_012``, ``coo_csf_201``: a 3-d COO to compressed sparse fibres in two axis
  orders, against the peers' own sort of the coordinate tuples in that order.
* ``spmm_16``, ``spmm_64``: CSR @ dense ``[items, k]`` float32, against scipy, torch
  and pydata.
* ``masked_{sum,amax}_dim{0,1}``: masked reductions of a CSR matrix with a sparse
  mask, against numpy on the dense view (``np.where`` + reduce) and torch.masked on
  the dense tensors; arrow_sparse on the dense arrays is timed beside.
* ``huge_{sum,amax,argmax,mean}_dim{0,1}``: a 10^6 x 10^6 CSR matrix with 10^6 entries
  (columns unsorted within rows, as in tests/test_masked.py) reduced without and with a
  sparse mask of ~1.5 * 10^6 entries, against scipy.sparse where it has the operation;
  the peak memory traced by ``tracemalloc`` is recorded. Not scaled.

Every result is checked against an independent reference (numpy / the sorted
coordinates) before it is timed. Timing: one warm-up call (JIT compilation), a second
untimed call, then ``--repeat`` calls timed with ``time.perf_counter``, garbage
collector off; ratios use the best time. ratio = peer best / arrow_sparse best (above 1:
arrow_sparse is faster). See benchmarks/README.md for the shared conventions.
"""

from __future__ import annotations

import argparse
import functools
import gc
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
import numpy as np  # noqa: E402

NUM_THREADS = C.usable_cores()
FOREIGN_CORES_WARN = 0.1
RETRY_WAIT_S = 300.0
HUGE_TARGET_S = 1.0
#: Seconds to wait after timing torch: its OpenMP worker threads keep spinning for a
#: while after a call and would slow whatever runs next on a 2-core machine.
TORCH_IDLE_S = 1.0

LIBS: dict[str, Any] = {}
LIB_STATUS: dict[str, str] = {}


def load_libraries() -> None:
    for name in ["arrow_sparse", "numba", "scipy.sparse", "sparse", "torch"]:
        mod, status = C.try_import(name)
        LIBS[name] = mod
        LIB_STATUS[name] = status
    if LIBS["torch"] is not None:
        LIBS["torch"].set_num_threads(NUM_THREADS)


class Unsupported(Exception):
    """This implementation cannot run this workload (recorded, not an error)."""


@dataclass
class Impl:
    """One way of computing a workload: ``make`` (untimed setup) returns the timed callable.

    ``arrays`` turns a result into the list of arrays compared with the workload's
    reference (untimed); ``library`` must be importable (numpy always is).
    """

    name: str
    kind: str  # "arrow_sparse" (headline) | "arrow_sparse_alt" | "peer"
    library: str
    make: Callable[[], Callable[[], Any]]
    arrays: Callable[[Any], list[np.ndarray]]
    note: str = ""


@dataclass
class Workload:
    key: str
    title: str
    description: str
    family: str  # "conversion" | "spmm" | "masked" | "huge"
    reference: Callable[[], list[np.ndarray]] | None
    impls: list[Impl] = field(default_factory=list)
    shape: dict[str, Any] = field(default_factory=dict)
    #: per-kind references, where they differ (a masked and an unmasked variant)
    references_by_kind: dict[str, list[np.ndarray] | None] | None = None


def _torch_run(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` with torch's beta-feature and invariant-check warnings silenced."""
    def run() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return fn()
    return run


def prepared(setup: Callable[[], Any], call: Callable[[Any], Any],
             torch: bool = False) -> Callable[[], Callable[[], Any]]:
    """An Impl's ``make``: ``setup()`` runs once, untimed; the timed call is ``call(obj)``."""
    def make() -> Callable[[], Any]:
        obj = setup()

        def run() -> Any:
            return call(obj)
        return _torch_run(run) if torch else run
    return make


# ------------------------------------------------------------------------ data
def matrix_entries(scale: float, seed: int, distinct: bool) -> dict[str, Any]:
    """``[users, items]`` entries: geometric row lengths, Zipf items, shuffled order."""
    rng = C.rng_for(seed, "matrix" if distinct else "dupes")
    users = max(100, int(round(500_000 * scale)))
    items = max(100, int(round(200_000 * scale)))
    lengths = C.geometric_lengths(rng, users, mean=10.0, empty_fraction=0.2)
    rows = C.segment_ids_from_lengths(lengths)
    cols = C.zipf_ids(rng, len(rows), items, exponent=1.05)
    if distinct:
        keys = np.unique(rows * items + cols)
        rows, cols = keys // items, keys % items
    order = rng.permutation(len(rows))
    rows, cols = rows[order].astype(np.int32), cols[order].astype(np.int32)
    values = rng.random(len(rows), dtype=np.float32)
    return {"shape": (users, items), "rows": rows, "cols": cols, "values": values,
            "nnz": len(rows)}


def sorted_reference(coords: list[np.ndarray], values: np.ndarray, order: list[int],
                     compress: bool, size: int | None = None) -> list[np.ndarray]:
    """Coordinates in lexicographic ``order`` (duplicates summed), as COO or compressed."""
    keys = [coords[a] for a in order]
    perm = np.lexsort(keys[::-1])
    keys = [k[perm].astype(np.int64) for k in keys]
    vals = values[perm].astype(np.float64)
    same = np.ones(len(vals) - 1 if len(vals) else 0, dtype=bool)
    for k in keys:
        same &= k[1:] == k[:-1]
    if same.any():
        starts = np.concatenate([[0], np.flatnonzero(~same) + 1])
        keys = [k[starts] for k in keys]
        vals = np.add.reduceat(vals, starts)
    if not compress:
        return [*keys, vals]
    assert size is not None
    indptr = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys[0], minlength=size), out=indptr[1:])
    return [indptr, keys[1], vals]


def _f64(*arrays: Any) -> list[np.ndarray]:
    return [np.asarray(a).astype(np.float64) if np.asarray(a).dtype.kind == "f"
            else np.asarray(a).astype(np.int64) for a in arrays]


def _torch_coo(t: Any) -> list[np.ndarray]:
    return _f64(*t.indices().numpy(), t.values().numpy())


# ----------------------------------------------------------------- conversions
def conversion_workloads(scale: float, seed: int) -> list[Workload]:
    asp, sp, pyd, torch = LIBS["arrow_sparse"], LIBS["scipy.sparse"], LIBS["sparse"], LIBS["torch"]
    d = matrix_entries(scale, seed, distinct=True)
    rows, cols, values, shape = d["rows"], d["cols"], d["values"], d["shape"]
    desc = (f"{shape[0]:,} x {shape[1]:,}, {d['nnz']:,} distinct entries in shuffled order, "
            "int32 coordinates, float32 values")
    info = {"rows": shape[0], "columns": shape[1], "nnz": d["nnz"]}
    coords = np.stack([rows, cols])
    coo = asp.SparseCOO(coords, values, shape) if asp else None
    csr = coo.to_csr() if asp else None

    def scipy_coo() -> Any:
        return sp.coo_array((values, (rows, cols)), shape=shape)

    def pydata_coo() -> Any:
        return pyd.COO(coords, values, shape=shape, has_duplicates=False, sorted=False)

    def torch_indices() -> Any:
        return torch.from_numpy(coords.astype(np.int64))

    def torch_coo(indices: Any) -> Any:
        return torch.sparse_coo_tensor(indices, torch.from_numpy(values), shape)

    def compressed(get: Callable[[Any], list[Any]]) -> Callable[[Any], list[np.ndarray]]:
        return lambda r: _f64(*get(r))

    asp_csr = compressed(lambda r: [r.indptr, r.indices, r.values])
    sp_cmp = compressed(lambda r: [r.indptr, r.indices, r.data])
    gcxs = compressed(lambda r: [r.indptr, r.indices, r.data])
    t_csr = compressed(lambda r: [r.crow_indices(), r.col_indices(), r.values()])
    t_csc = compressed(lambda r: [r.ccol_indices(), r.row_indices(), r.values()])
    out = []

    def add(key: str, title: str, ref: Callable[[], list[np.ndarray]], impls: list[Impl]) -> None:
        out.append(Workload(key, title, desc, "conversion", ref, impls, info))

    ref_csr = lambda: sorted_reference([rows, cols], values, [0, 1], True, shape[0])  # noqa: E731
    ref_csc = lambda: sorted_reference([rows, cols], values, [1, 0], True, shape[1])  # noqa: E731
    add("coo_csr", "COO -> CSR", ref_csr, [
        Impl("arrow_sparse coo.to_csr()", "arrow_sparse", "arrow_sparse",
             lambda: coo.to_csr, asp_csr),
        Impl("scipy coo_array.tocsr()", "peer", "scipy.sparse",
             lambda: scipy_coo().tocsr, sp_cmp),
        Impl("pydata COO(unsorted) -> GCXS(axis 0)", "peer", "sparse",
             lambda: lambda: pyd.GCXS.from_coo(pydata_coo(), compressed_axes=[0]), gcxs,
             note="pydata sorts the coordinates when the COO is built (timed)"),
        Impl("torch coalesce().to_sparse_csr()", "peer", "torch",
             prepared(torch_indices, lambda t: torch_coo(t).coalesce().to_sparse_csr(), True),
             t_csr,
             note="int64 indices (torch's requirement) are made untimed"),
    ])
    add("coo_csc", "COO -> CSC", ref_csc, [
        Impl("arrow_sparse coo.to_csc()", "arrow_sparse", "arrow_sparse",
             lambda: coo.to_csc, asp_csr),
        Impl("scipy coo_array.tocsc()", "peer", "scipy.sparse",
             lambda: scipy_coo().tocsc, sp_cmp),
        Impl("pydata COO(unsorted) -> GCXS(axis 1)", "peer", "sparse",
             lambda: lambda: pyd.GCXS.from_coo(pydata_coo(), compressed_axes=[1]), gcxs),
        Impl("torch coalesce().to_sparse_csc()", "peer", "torch",
             prepared(torch_indices, lambda t: torch_coo(t).coalesce().to_sparse_csc(), True),
             t_csc),
    ])
    ref_coo = lambda: sorted_reference([rows, cols], values, [0, 1], False)  # noqa: E731
    add("csr_coo", "CSR -> COO", ref_coo, [
        Impl("arrow_sparse csr.to_coo()", "arrow_sparse", "arrow_sparse", lambda: csr.to_coo,
             lambda r: _f64(*r.indices, r.values)),
        Impl("scipy csr_array.tocoo()", "peer", "scipy.sparse",
             lambda: csr.to_scipy().copy().tocoo, lambda r: _f64(*r.coords, r.data)),
        Impl("pydata GCXS.tocoo()", "peer", "sparse", lambda: csr.to_pydata_sparse().tocoo,
             lambda r: _f64(*r.coords, r.data)),
        Impl("torch to_sparse_coo()", "peer", "torch",
             prepared(csr.to_torch, lambda t: t.to_sparse_coo(), True), _torch_coo),
    ])
    add("csr_csc", "CSR -> CSC", ref_csc, [
        Impl("arrow_sparse csr.to_csc()", "arrow_sparse", "arrow_sparse", lambda: csr.to_csc,
             asp_csr),
        Impl("scipy csr_array.tocsc()", "peer", "scipy.sparse",
             lambda: csr.to_scipy().copy().tocsc, sp_cmp),
        Impl("pydata GCXS.change_compressed_axes([1])", "peer", "sparse",
             prepared(csr.to_pydata_sparse, lambda g: g.change_compressed_axes([1])), gcxs),
        Impl("torch to_sparse_csc()", "peer", "torch",
             prepared(csr.to_torch, lambda t: t.to_sparse_csc(), True), t_csc),
    ])
    del d
    e = matrix_entries(scale, seed, distinct=False)
    r2, c2, v2 = e["rows"], e["cols"], e["values"]
    dup = asp.SparseCOO(np.stack([r2, c2]), v2, shape) if asp else None
    out.append(Workload(
        "coo_canonical", "COO canonical (sort, sum duplicates)",
        f"{shape[0]:,} x {shape[1]:,}, {e['nnz']:,} entries in shuffled order, repeated "
        "(user, item) pairs included", "conversion",
        lambda: sorted_reference([r2, c2], v2, [0, 1], False),
        [Impl("arrow_sparse coo.canonical()", "arrow_sparse", "arrow_sparse",
              lambda: dup.canonical, lambda r: _f64(*r.indices, r.values)),
         Impl("scipy coo_array(...).sum_duplicates()", "peer", "scipy.sparse",
              lambda: lambda: _sum_duplicates(sp.coo_array((v2, (r2, c2)), shape=shape)),
              lambda r: _f64(*r.coords, r.data), note="builds the coo_array (timed): "
              "sum_duplicates works in place"),
         Impl("pydata COO(has_duplicates=True)", "peer", "sparse",
              lambda: lambda: pyd.COO(np.stack([r2, c2]), v2, shape=shape),
              lambda r: _f64(*r.coords, r.data)),
         Impl("torch coalesce()", "peer", "torch",
              prepared(lambda: torch.from_numpy(np.stack([r2, c2]).astype(np.int64)),
                       lambda t: torch.sparse_coo_tensor(t, torch.from_numpy(v2),
                                                         shape).coalesce(), True),
              _torch_coo)],
        {"rows": shape[0], "columns": shape[1], "nnz": e["nnz"]}))
    return out


def _sum_duplicates(m: Any) -> Any:
    m.sum_duplicates()
    return m


def csf_workloads(scale: float, seed: int) -> list[Workload]:
    asp, sp, pyd, torch = LIBS["arrow_sparse"], LIBS["scipy.sparse"], LIBS["sparse"], LIBS["torch"]
    rng = C.rng_for(seed, "tensor3d")
    shape = (max(10, int(round(100_000 * scale))), 2_000, 50)
    n = max(100, int(round(2_000_000 * scale)))
    keys = np.unique(rng.integers(0, shape[0] * shape[1] * shape[2], n))
    coords = [c.astype(np.int32) for c in np.unravel_index(rng.permutation(keys), shape)]
    values = rng.random(len(keys), dtype=np.float32)
    coo = asp.SparseCOO(np.stack(coords), values, shape) if asp else None
    out = []
    for order in ([0, 1, 2], [2, 0, 1]):
        tag = "".join(map(str, order))
        pshape = tuple(shape[a] for a in order)
        pcoords = np.stack([coords[a] for a in order])

        def csf_arrays(r: Any, order: list[int] = order) -> list[np.ndarray]:
            c = r.to_coo()  # leaves in storage order: coordinates in the level order
            return _f64(*(c.indices[a] for a in order), c.values)

        out.append(Workload(
            f"coo_csf_{tag}", f"COO -> CSF, axis order {tuple(order)}",
            f"3-d {shape}, {len(keys):,} distinct entries in shuffled order, int32 "
            "coordinates; peers sort the coordinate tuples in the same order", "conversion",
            lambda order=order: sorted_reference(coords, values, order, False),
            [Impl(f"arrow_sparse coo.to_csf({tuple(order)})", "arrow_sparse", "arrow_sparse",
                  lambda order=order: lambda: coo.to_csf(order), csf_arrays),
             Impl("scipy n-d coo_array(...).sum_duplicates()", "peer", "scipy.sparse",
                  lambda pc=pcoords, ps=pshape: lambda: _sum_duplicates(
                      sp.coo_array((values, tuple(pc)), shape=ps)),
                  lambda r: _f64(*r.coords, r.data),
                  note="the permuted coordinates are made untimed; sorts in place"),
             Impl("pydata COO(unsorted) (sorts)", "peer", "sparse",
                  lambda pc=pcoords, ps=pshape: lambda: pyd.COO(
                      pc, values, shape=ps, has_duplicates=False, sorted=False),
                  lambda r: _f64(*r.coords, r.data)),
             Impl("torch coalesce()", "peer", "torch",
                  prepared(lambda pc=pcoords: torch.from_numpy(pc.astype(np.int64)),
                           lambda t, ps=pshape: torch.sparse_coo_tensor(
                               t, torch.from_numpy(values), ps).coalesce(), True),
                  _torch_coo)],
            {"shape": list(shape), "nnz": len(keys), "axis_order": order}))
    return out


# ------------------------------------------------------------------------ SpMM
def spmm_workloads(scale: float, seed: int) -> list[Workload]:
    asp, sp, torch = LIBS["arrow_sparse"], LIBS["scipy.sparse"], LIBS["torch"]
    d = matrix_entries(scale, seed, distinct=True)
    shape = d["shape"]
    csr = asp.SparseCOO(np.stack([d["rows"], d["cols"]]), d["values"], shape).to_csr() \
        if asp else None
    out = []
    for k in (16, 64):
        rng = C.rng_for(seed, f"dense{k}")
        dense = rng.random((shape[1], k), dtype=np.float32)

        def reference(dense: np.ndarray = dense) -> list[np.ndarray]:
            m = sp.csr_array((d["values"].astype(np.float64), (d["rows"], d["cols"])),
                             shape=shape)
            return [m @ dense.astype(np.float64)]

        out.append(Workload(
            f"spmm_{k}", f"CSR @ dense, k = {k}",
            f"{shape[0]:,} x {shape[1]:,} CSR ({d['nnz']:,} entries, int32 indices, float32) "
            f"@ [{shape[1]:,}, {k}] float32, C order", "spmm", reference,
            [Impl("arrow_sparse csr @ dense", "arrow_sparse", "arrow_sparse",
                  lambda dense=dense: lambda: csr @ dense, lambda r: _f64(r)),
             Impl("scipy csr_array @ dense", "peer", "scipy.sparse",
                  prepared(csr.to_scipy, lambda m, dense=dense: m @ dense), lambda r: _f64(r)),
             Impl("torch sparse_csr @ dense", "peer", "torch",
                  prepared(lambda dense=dense: (csr.to_torch(), torch.from_numpy(dense)),
                           lambda td: td[0] @ td[1], True),
                  lambda r: _f64(r.numpy())),
             Impl("pydata GCXS @ dense", "peer", "sparse",
                  prepared(csr.to_pydata_sparse, lambda g, dense=dense: g @ dense),
                  lambda r: _f64(r))],
            {"rows": shape[0], "columns": shape[1], "nnz": d["nnz"], "k": k}))
    return out


# ---------------------------------------------------------------------- masked
def masked_workloads(scale: float, seed: int) -> list[Workload]:
    asp, torch = LIBS["arrow_sparse"], LIBS["torch"]
    rng = C.rng_for(seed, "masked")
    shape = (max(10, int(round(10_000 * scale))), 2_000)
    stored = rng.random(shape) < 0.05
    dense = np.where(stored, rng.standard_normal(shape, dtype=np.float32), np.float32(0))
    # the mask covers half of the stored entries and 1% of the other places
    mask_dense = np.where(stored, rng.random(shape) < 0.5, rng.random(shape) < 0.01)
    csr = asp.SparseCSR.from_dense(dense) if asp else None
    mask = asp.SparseCSR.from_dense(mask_dense) if asp else None
    out = []
    for op, fill in (("sum", 0.0), ("amax", -np.inf)):
        for dim in (0, 1):
            reduce = np.sum if op == "sum" else np.max

            def reference(reduce: Any = reduce, fill: float = fill, dim: int = dim
                          ) -> list[np.ndarray]:
                return [reduce(np.where(mask_dense, dense.astype(np.float64), fill), axis=dim)]

            impls = [
                Impl(f"arrow_sparse masked.{op}(csr, mask=csr)", "arrow_sparse", "arrow_sparse",
                     lambda op=op, dim=dim: lambda: getattr(asp.masked, op)(csr, dim, mask=mask),
                     lambda r: _f64(r)),
                Impl(f"arrow_sparse masked.{op}(dense, mask=dense)", "arrow_sparse_alt",
                     "arrow_sparse",
                     lambda op=op, dim=dim: lambda: getattr(asp.masked, op)(
                         dense, dim, mask=mask_dense), lambda r: _f64(r)),
                Impl(f"numpy {reduce.__name__}(where(mask, x, {fill}))", "peer", "numpy",
                     lambda reduce=reduce, fill=fill, dim=dim: lambda: reduce(
                         np.where(mask_dense, dense, np.float32(fill)), axis=dim),
                     lambda r: _f64(r)),
                Impl(f"torch.masked.{op} (dense tensors)", "peer", "torch",
                     prepared(lambda: (torch.from_numpy(dense), torch.from_numpy(mask_dense)),
                              lambda tm, op=op, dim=dim: getattr(torch.masked, op)(
                                  tm[0], dim, mask=tm[1]), True),
                     lambda r: _f64(r.numpy())),
            ]
            out.append(Workload(
                f"masked_{op}_dim{dim}", f"masked.{op} dim={dim}",
                f"CSR {shape[0]:,} x {shape[1]:,} float32 ({csr.nnz if asp else 0:,} entries, "
                f"5% dense) with a CSR mask of {mask.nnz if asp else 0:,} entries; peers "
                "reduce the dense view", "masked", reference, impls,
                {"rows": shape[0], "columns": shape[1]}))
    return out


def huge_workloads(seed: int) -> list[Workload]:
    asp, sp = LIBS["arrow_sparse"], LIBS["scipy.sparse"]
    n = 10**6

    def random_csr(label: str) -> Any:
        rng = C.rng_for(seed, label)
        indptr = np.sort(rng.integers(0, n, size=n + 1))
        indptr[0], indptr[-1] = 0, n
        return asp.SparseCSR(indptr, rng.integers(0, n, size=n), rng.random(n), (n, n))

    if asp is None:
        return []
    csr, other = random_csr("huge"), random_csr("huge_other")
    # the mask covers every other entry of the input and as many other places
    coords = np.concatenate([csr.to_coo().indices[:, ::2], other.to_coo().indices], axis=1)
    flags = np.arange(coords.shape[1]) % 3 != 0
    mask = asp.SparseCOO(coords, flags, (n, n)).to_csr()
    x = csr.to_scipy().copy()  # scipy's own copy: it sorts and sums in place
    x.sum_duplicates()
    mask_keys = np.unique(coords[0][flags] * n + coords[1][flags])  # duplicates: logical or

    def masked_view(dim: int) -> Any:
        """The masked-in places holding the input's value (0 where it stores nothing),
        with the reduced dimension as columns."""
        kx = x.tocoo()
        keys = kx.coords[0].astype(np.int64) * n + kx.coords[1]
        at = np.minimum(np.searchsorted(keys, mask_keys), len(keys) - 1)
        vals = np.where(keys[at] == mask_keys, kx.data[at], 0.0)
        view = sp.coo_array((vals, (mask_keys // n, mask_keys % n)), shape=(n, n))
        return (view if dim == 1 else view.T).tocsr()

    def reference(op: str, dim: int, masked: bool) -> list[np.ndarray] | None:
        if op == "argmax":  # masked: no independent reference here (tests cover it)
            return None if masked else [np.asarray(x.argmax(axis=dim)).reshape(-1)]
        if not masked:
            out = {"sum": x.sum, "mean": x.mean, "amax": x.max}[op](axis=dim)
            return [np.asarray(out.toarray() if hasattr(out, "toarray") else out).reshape(-1)]
        view = masked_view(dim)
        count = np.diff(view.indptr).astype(np.float64)
        total = np.asarray(view.sum(axis=1)).reshape(-1)
        if op == "sum":
            return [total]
        if op == "mean":
            with np.errstate(invalid="ignore"):
                return [total / count]
        best = np.full(n, -np.inf)
        nonempty = count > 0
        best[nonempty] = np.maximum.reduceat(view.data, view.indptr[:-1][nonempty])
        return [best]

    scipy_ops = {"sum": x.sum, "amax": x.max, "argmax": x.argmax, "mean": x.mean}
    out = []
    for op in ("sum", "amax", "argmax", "mean"):
        for dim in (0, 1):
            fn = getattr(asp.masked, op)
            if op != "argmax":  # dense results, as scipy's (a sparse one is the default)
                fn = functools.partial(fn, dense=True)
            plain = reference(op, dim, False)
            impls = [
                Impl(f"arrow_sparse masked.{op}(csr)", "arrow_sparse", "arrow_sparse",
                     lambda fn=fn, dim=dim: lambda: fn(csr, dim), _f64),
                Impl(f"arrow_sparse masked.{op}(csr, mask=csr)", "arrow_sparse_alt",
                     "arrow_sparse",
                     lambda fn=fn, dim=dim: lambda: fn(csr, dim, mask=mask), _f64),
                Impl(f"scipy csr_array.{op.replace('amax', 'max')}(axis) (no mask)", "peer",
                     "scipy.sparse", lambda op=op, dim=dim: lambda: scipy_ops[op](axis=dim),
                     lambda r: _f64(np.asarray(r.toarray() if hasattr(r, "toarray")
                                               else r).reshape(-1)),
                     note="on a canonical copy (the arrow_sparse input is not canonical and "
                          "is canonicalised on every call)"),
            ]
            out.append(Workload(
                f"huge_{op}_dim{dim}", f"10^6 x 10^6 masked.{op} dim={dim}",
                f"{n:,} x {n:,} CSR with {n:,} entries (columns unsorted in rows), float64; "
                f"sparse mask of {mask.nnz:,} entries (two thirds True: half the input's "
                f"entries and 10^6 other places)", "huge", None, impls,
                {"rows": n, "columns": n, "nnz": n, "mask_nnz": mask.nnz},
                {"arrow_sparse": plain, "arrow_sparse_alt": reference(op, dim, True),
                 "peer": plain}))
    return out


# --------------------------------------------------------------------- running
def check(impl: Impl, result: Any, want: list[np.ndarray] | None) -> dict[str, Any]:
    """Indices exactly, values within rtol = atol = 1e-4 (NaN and infinities must match)."""
    if want is None:
        return {"ok": True, "detail": "no independent reference at this size "
                                      "(tests/test_masked.py covers the semantics)"}
    try:
        got = impl.arrays(result)
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "detail": f"result unreadable: {type(exc).__name__}: {exc}"}
    if len(got) != len(want):
        return {"ok": False, "detail": f"{len(got)} arrays, expected {len(want)}"}
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape:
            return {"ok": False, "detail": f"array {i}: shape {g.shape} != {w.shape}"}
        if w.dtype.kind in "iu":
            bad = np.flatnonzero(g != w)
        else:
            bad = np.flatnonzero(~np.isclose(g, w, rtol=1e-4, atol=1e-4, equal_nan=True))
        if len(bad):
            return {"ok": False, "detail": f"array {i}: {len(bad)} elements differ, first at "
                                           f"{bad[0]}: {g[bad[0]]!r} != {w[bad[0]]!r}"}
    return {"ok": True}


def run_workload(wl: Workload, repeat: int) -> dict[str, Any]:
    print(f"\n## {wl.title}: {wl.description}", flush=True)
    monitor = C.CpuMonitor()
    shared = wl.reference() if wl.reference is not None else None
    results: dict[str, dict[str, Any]] = {}
    for impl in wl.impls:
        rec: dict[str, Any] = {"kind": impl.kind, "library": impl.library}
        if impl.note:
            rec["note"] = impl.note
        results[impl.name] = rec
        if impl.library != "numpy" and LIBS.get(impl.library) is None:
            rec["status"] = LIB_STATUS.get(impl.library, "not installed")
            print(f"  {impl.name:<48} {rec['status']}", flush=True)
            continue
        try:
            fn = impl.make()
            gc.collect()
            t0 = time.perf_counter()
            result = fn()
            warmup_s = time.perf_counter() - t0
        except Unsupported as exc:
            rec["status"] = f"unsupported: {exc}"
            continue
        except Exception as exc:  # noqa: BLE001
            rec["status"] = f"error: {type(exc).__name__}: {str(exc)[:300]}"
            print(f"  {impl.name:<48} {rec['status']}", flush=True)
            if impl.kind.startswith("arrow_sparse"):
                C.loud(f"{wl.title}: {impl.name} RAISED {rec['status']}")
            continue
        refs = wl.references_by_kind
        rec["check"] = check(impl, result, refs.get(impl.kind) if refs is not None else shared)
        rec["status"] = "ok" if rec["check"]["ok"] else "check failed"
        if not rec["check"]["ok"]:
            C.loud(f"CHECK FAILED: {wl.title}: {impl.name}: {rec['check'].get('detail')}")
        del result
        if wl.family == "huge" and impl.library == "arrow_sparse":
            tracemalloc.start()
            fn()
            rec["tracemalloc_peak_bytes"] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        timing, _ = C.time_call(fn, repeat, warmup=warmup_s < 1.0)
        timing.warmup_s = warmup_s
        rec.update(timing.as_dict())
        del fn
        gc.collect()
        if impl.library == "torch":
            time.sleep(TORCH_IDLE_S)  # let torch's OpenMP threads stop spinning
        extra = f"  peak {rec['tracemalloc_peak_bytes'] / 2**20:.0f} MiB" \
            if "tracemalloc_peak_bytes" in rec else ""
        print(f"  {impl.name:<48} best {C.fmt_ms(rec['best_s']):>8} ms  median "
              f"{C.fmt_ms(rec['median_s']):>8} ms  [{rec['status']}]{extra}", flush=True)
    cpu = monitor.stop()
    if cpu.get("foreign_cores", 0.0) > FOREIGN_CORES_WARN:
        C.loud(f"{wl.title}: other processes kept {cpu['foreign_cores']:.2f} cores busy "
               "during this workload: its timings are disturbed")
    return {"title": wl.title, "description": wl.description, "family": wl.family,
            "shape": wl.shape, "machine_load": cpu, "results": results,
            "summary": summarize(results)}


def summarize(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    def ok(r: dict[str, Any]) -> bool:
        return r.get("status") == "ok" and "best_s" in r

    s: dict[str, Any] = {}
    head = next(((k, r) for k, r in results.items() if r["kind"] == "arrow_sparse"), None)
    best = head[1].get("best_s") if head else None
    if head:
        s["arrow_sparse"], s["arrow_sparse_status"] = head[0], head[1].get("status")
        s["arrow_sparse_best_s"] = best
    alt = [(k, r) for k, r in results.items() if r["kind"] == "arrow_sparse_alt" and ok(r)]
    if alt:
        s["arrow_sparse_alt"], s["arrow_sparse_alt_best_s"] = alt[0][0], alt[0][1]["best_s"]
    peers = [(k, r) for k, r in results.items() if r["kind"] == "peer" and ok(r)]
    if peers:
        name, r = min(peers, key=lambda kr: kr[1]["best_s"])
        s["fastest_peer"], s["fastest_peer_best_s"] = name, r["best_s"]
        if best:
            s["speedup_vs_fastest_peer"] = r["best_s"] / best
    for lib in ("scipy.sparse", "sparse", "torch", "numpy"):
        mine = [r for r in results.values() if r["library"] == lib and ok(r)]
        if mine:
            key = {"scipy.sparse": "scipy", "sparse": "pydata"}.get(lib, lib)
            s[f"{key}_best_s"] = mine[0]["best_s"]
            if best:
                s[f"speedup_vs_{key}"] = mine[0]["best_s"] / best
    return s


def evaluate_targets(workloads: dict[str, Any]) -> dict[str, Any]:
    def verdict(values: dict[str, float | None], ok: Callable[[float], bool]) -> dict[str, Any]:
        vals = list(values.values())
        met = None if not vals or any(v is None for v in vals) else all(
            ok(v) for v in vals)  # type: ignore[arg-type]
        return {"met": met, "per_workload": values}

    def pick(family: str, key: str) -> dict[str, float | None]:
        return {k: w["summary"].get(key) for k, w in workloads.items() if w["family"] == family}

    huge = {}
    for k, w in workloads.items():
        if w["family"] == "huge":
            times = [r.get("best_s") for r in w["results"].values()
                     if r["library"] == "arrow_sparse"]
            huge[k] = None if any(t is None for t in times) else max(times)  # type: ignore
    return {"conversions_ge_scipy": verdict(pick("conversion", "speedup_vs_scipy"),
                                            lambda v: v >= 1.0),
            "spmm_ge_scipy": verdict(pick("spmm", "speedup_vs_scipy"), lambda v: v >= 1.0),
            "huge_masked_reductions_lt_1s": verdict(huge, lambda v: v < HUGE_TARGET_S)}


def print_report(payload: dict[str, Any]) -> None:
    rows = []
    for w in payload["workloads"].values():
        s = w["summary"]

        def ratio(key: str, s: dict[str, Any] = s) -> str:
            v = s.get(key)
            return f"{v:.2f}x" if v else "-"

        peer = f"{s['fastest_peer']} {C.fmt_ms(s['fastest_peer_best_s'])}" \
            if "fastest_peer" in s else "-"
        rows.append([w["title"], C.fmt_ms(s.get("arrow_sparse_best_s")),
                     C.fmt_ms(s.get("scipy_best_s")), ratio("speedup_vs_scipy"), peer,
                     ratio("speedup_vs_fastest_peer")])
    print(f"\n### Results (scale {payload['config']['scale']}, best of "
          f"{payload['config']['repeat']}, {payload['threads']['numba']} Numba threads)\n")
    print(C.markdown_table(["workload", "arrow_sparse ms", "scipy ms", "vs scipy",
                            "fastest peer (name) ms", "vs fastest"], rows))
    print("\nTargets:")
    for name, t in payload["targets"].items():
        print(f"  {name:<34} {({True: 'MET', False: 'NOT MET', None: 'n/a'})[t['met']]}")


GROUPS = {"conversions": ("coo_csr", "coo_csc", "csr_coo", "csr_csc", "coo_canonical"),
          "csf": ("coo_csf_012", "coo_csf_201"), "spmm": ("spmm_16", "spmm_64"),
          "masked": tuple(f"masked_{op}_dim{d}" for op in ("sum", "amax") for d in (0, 1)),
          "huge": tuple(f"huge_{op}_dim{d}" for op in ("sum", "amax", "argmax", "mean")
                        for d in (0, 1))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="size multiplier (1: 500k x 200k matrices of ~4.5M entries, a 3-d "
                         "tensor of 2M; the 10^6 x 10^6 workloads are not scaled)")
    ap.add_argument("--json", default=str(C.RESULTS_DIR / "sparse.json"),
                    help="where to write the JSON results (default: %(default)s)")
    ap.add_argument("--repeat", type=int, default=5, help="timed calls after the warm-up")
    ap.add_argument("--seed", type=int, default=20240601, help="data seed")
    ap.add_argument("--only", default="", help="comma-separated workload keys or groups: "
                    + ", ".join(f"{g} ({', '.join(k)})" for g, k in GROUPS.items()))
    ap.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                    help="first wait up to SECONDS for other processes to leave the CPUs idle")
    ap.add_argument("--retry-disturbed", type=int, default=0, metavar="N",
                    help="rerun a workload up to N times when other processes disturbed it "
                         "(after waiting up to 5 min for quiet); the least disturbed run is kept")
    args = ap.parse_args(argv)
    if args.scale <= 0 or args.repeat < 1:
        ap.error("--scale must be > 0 and --repeat >= 1")
    only: set[str] = set()
    for k in filter(None, args.only.split(",")):
        only |= set(GROUPS.get(k, (k,)))
    t_start = time.perf_counter()
    if args.wait_quiet > 0:
        waited, quiet = C.wait_for_quiet(args.wait_quiet, max_foreign_cores=FOREIGN_CORES_WARN)
        print(f"# waited {waited:.0f} s for a quiet machine: "
              f"{'quiet' if quiet else 'still busy, running anyway'}", flush=True)
    waited_s = time.perf_counter() - t_start
    t_start = time.perf_counter()
    run_monitor = C.CpuMonitor()
    load_start = C.load_average()
    load_libraries()
    if LIBS["arrow_sparse"] is None:
        C.loud(f"arrow_sparse does not import ({LIB_STATUS['arrow_sparse']}): peers only")
    versions = C.library_versions(["numpy", "scipy", "sparse", "torch", "arrow_sparse",
                                   "numba", "llvmlite"])
    machine = C.machine_info()
    print(f"# bench_sparse: scale {args.scale}, repeat {args.repeat}, {machine['cores']} cores, "
          f"{machine['cpu_model']}")
    print("  " + ", ".join(f"{k} {v}" for k, v in versions.items()), flush=True)
    C.prefault(int(3 * args.scale * C.GIB))

    def want(key: str) -> bool:
        return not only or key in only

    def run(wl: Workload) -> dict[str, Any]:
        best = run_workload(wl, args.repeat)
        for attempt in range(args.retry_disturbed):
            if best["machine_load"].get("foreign_cores", 0.0) <= FOREIGN_CORES_WARN:
                break
            waited, _ = C.wait_for_quiet(RETRY_WAIT_S, max_foreign_cores=FOREIGN_CORES_WARN)
            print(f"  (retry {attempt + 1} of {wl.key} after waiting {waited:.0f} s)", flush=True)
            again = run_workload(wl, args.repeat)
            again["attempts"] = attempt + 2
            if again["machine_load"].get("foreign_cores", 0.0) < \
                    best["machine_load"].get("foreign_cores", 0.0):
                best = again
        return best

    workloads: dict[str, Any] = {}
    builders: list[tuple[tuple[str, ...], Callable[[], list[Workload]]]] = [
        (GROUPS["conversions"], lambda: conversion_workloads(args.scale, args.seed)),
        (GROUPS["csf"], lambda: csf_workloads(args.scale, args.seed)),
        (GROUPS["spmm"], lambda: spmm_workloads(args.scale, args.seed)),
        (GROUPS["masked"], lambda: masked_workloads(args.scale, args.seed)),
        (GROUPS["huge"], lambda: huge_workloads(args.seed)),
    ]
    for keys, build in builders:
        if not any(want(k) for k in keys) or LIBS["arrow_sparse"] is None:
            continue
        for wl in build():
            if want(wl.key):
                workloads[wl.key] = run(wl)
        gc.collect()

    numba = LIBS["numba"]
    payload: dict[str, Any] = {
        "benchmark": "sparse",
        "created_utc": C.now_iso(),
        "command": " ".join([Path(sys.argv[0]).name] + (argv if argv is not None
                                                          else sys.argv[1:])),
        "machine": machine,
        "versions": versions,
        "source": C.source_state(),
        "threads": {"numba": numba.get_num_threads() if numba else None,
                    "torch": LIBS["torch"].get_num_threads() if LIBS["torch"] else None,
                    "scipy": 1},
        "config": {"scale": args.scale, "repeat": args.repeat, "seed": args.seed,
                   "timing": "one untimed warm-up call (checked), a second untimed call "
                             "unless the first took over 1 s, then `repeat` calls timed with "
                             "time.perf_counter (gc off); ratios use the best time",
                   "ratio": "peer best time / arrow_sparse best time (above 1: arrow_sparse "
                            "is faster)",
                   "check": "conversions: the sorted coordinates and values, exactly (indices) "
                            "and within rtol 1e-4 (values); products and reductions: "
                            "np.allclose(rtol=1e-4, atol=1e-4) against float64 numpy/scipy",
                   "data": "matrices: users x items, row lengths 20% empty and geometric "
                           "(mean 12.5) otherwise, items Zipf (exponent 1.05) over the "
                           "vocabulary, shuffled; tensors: uniform distinct coordinates"},
        "workloads": workloads,
    }
    payload["targets"] = evaluate_targets(workloads)
    return C.finish_run(args.json, payload, run_monitor, load_start, t_start, waited_s,
                        print_report, load_note=C.QUIET_NOTE, warn_above=FOREIGN_CORES_WARN)


if __name__ == "__main__":
    sys.exit(main())
