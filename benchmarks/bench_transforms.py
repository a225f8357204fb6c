"""Feature transforms: arrow_sparse's hash_bucket, categorify and fit_vocabulary against peers.

Run from the repository root::

    python benchmarks/bench_transforms.py                     # scale 1, 5 repeats (~2 min)
    python benchmarks/bench_transforms.py --scale 0.05        # smoke run (< 1 minute)
    python benchmarks/bench_transforms.py --json out.json --repeat 9 --only hash_int64,hash_string
    python benchmarks/bench_transforms.py --wait-quiet 1200 --retry-disturbed 3   # shared machine

One command writes the complete results (``benchmarks/results/transforms.json`` by
default) and prints Markdown tables. The data is deterministic and recommender-shaped:
200k rows (x scale) with geometric lengths (mean ~20, ~20% empty rows), int64 item ids
drawn from a Zipf law over 10M ids, and the same ids as string tokens ``"item_<id>"``,
all in Arrow ``list<int64>`` / ``list<string>`` arrays that every implementation reads.

Workloads (``--only`` keys):

* ``hash_int64``, ``hash_string``: ids into 1,000,003 buckets. arrow_sparse
  ``hash_bucket(arr, n)`` (XXH3-64, Arrow in and out); Polars
  ``list.eval(pl.element().hash(0) % n)``; DuckDB ``list_transform(l, lambda x:
  hash(x) % n)``; pandas ``pd.util.hash_array(flat) % n``; numpy (integers only) a
  splitmix64 finalizer ``% n``. pyarrow has no hash function. The peers use other hash
  functions, so results are checked for shape (same row lengths) and range only.
* ``categorify_int64``, ``categorify_string``: encode with a fitted vocabulary of the
  200k (x scale) most frequent ids (0 padding, 1 out-of-vocabulary, ``k + 2`` for entry
  ``k``). arrow_sparse ``categorify(arr, vocab)``; Polars
  ``list.eval(pl.element().replace_strict(values, ids, default=1))``; pandas
  ``Index.get_indexer`` (its hash table built once, untimed, as arrow_sparse's is);
  pyarrow ``pc.index_in``; numpy (integers only) ``searchsorted`` on the sorted
  vocabulary. Every result must equal the reference ids exactly.
* ``fit_int64``, ``fit_string``: the vocabulary itself, every distinct value with its
  count, most frequent first. arrow_sparse ``fit_vocabulary(arr)``; Polars
  ``value_counts(sort=True)`` of the exploded column; pandas ``value_counts()``;
  pyarrow ``pc.value_counts`` then a sort by count; numpy (integers only) ``np.unique``
  then ``argsort`` by count. Checked: the same (value, count) pairs, counts in
  non-increasing order.

Timing, "best", "fastest peer" and "ratio" mean what ``benchmarks/README.md`` says for
``bench_segment.py`` (ratio = fastest peer's best time / arrow_sparse's best time; above
1 arrow_sparse is faster). A library's own conversion from Arrow (``pl.from_arrow``,
building pandas objects) is timed separately as ``convert_best_s`` and is not in the
compute time. The target is a ratio of at least 1.0 on every workload.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

NUM_BUCKETS = 1_000_003
VOCAB_IDS = 10_000_000
PEER_TARGET = 1.0
FOREIGN_CORES_WARN = 0.1
RETRY_WAIT_S = 300.0
T0 = time.perf_counter()

LIBS: dict[str, Any] = {}
LIB_STATUS: dict[str, str] = {}


def load_libraries() -> None:
    for name in ["arrow_sparse", "numba", "polars", "pandas", "duckdb"]:
        mod, status = C.try_import(name)
        LIBS[name] = mod
        LIB_STATUS[name] = status


class Unsupported(Exception):
    """This implementation cannot run this workload (recorded, not an error)."""


@dataclass
class Impl:
    """One way of computing a workload: ``make`` (untimed setup) returns the timed call.

    ``convert`` (optional) is the library's own conversion of the shared Arrow data,
    timed separately; ``normalize`` turns the result into what the workload's check
    reads (untimed).
    """

    name: str
    kind: str  # "arrow_sparse" (headline) | "arrow_sparse_alt" | "peer"
    library: str
    make: Callable[[], Callable[[], Any]]
    normalize: Callable[[Any], Any]
    convert: Callable[[], Any] | None = None
    note: str = ""


@dataclass
class Workload:
    key: str
    title: str
    description: str
    check: Callable[[Any], dict[str, Any]]
    impls: list[Impl] = field(default_factory=list)
    shape: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------------- data
def build(scale: float, seed: int) -> dict[str, Any]:
    rng = C.rng_for(seed, "transforms")
    rows = max(100, int(round(200_000 * scale)))
    lengths = C.geometric_lengths(rng, rows, mean=20.0, empty_fraction=0.2)
    offsets = C.offsets_from_lengths(lengths, np.int32)
    ids = C.zipf_ids(rng, int(lengths.sum()), VOCAB_IDS)
    ints = pa.ListArray.from_arrays(pa.array(offsets), pa.array(ids))
    tokens = pc.binary_join_element_wise("item_", pc.cast(pa.array(ids), pa.string()), "")
    strings = pa.ListArray.from_arrays(pa.array(offsets), tokens)
    sizes = np.bincount(pc.binary_length(tokens).to_numpy())
    string_bytes = {str(b): int(c) for b, c in enumerate(sizes) if c}
    return {"rows": rows, "n": len(ids), "lengths": lengths, "offsets": offsets, "ids": ids,
            "ints": ints, "strings": strings, "tokens": tokens, "string_bytes": string_bytes}


def data_shape(d: dict[str, Any], kind: str, **extra: Any) -> dict[str, Any]:
    """What a workload reads: rows, values, the Zipf law and (strings) the byte lengths."""
    shape = {"rows": d["rows"], "values": d["n"], "ids": f"Zipf exponent 1.05 over {VOCAB_IDS:,}",
             **extra}
    if kind != "int64":
        shape["string_bytes"] = d["string_bytes"]  # length in bytes: number of strings
    return shape


def list_parts(r: Any) -> tuple[np.ndarray, np.ndarray]:
    """Row lengths and flat values (numpy) of an Arrow list result (Array or Chunked)."""
    if isinstance(r, pa.ChunkedArray):
        r = pa.concat_arrays(r.chunks) if r.num_chunks else pa.array([], r.type)
    offs = np.asarray(r.offsets, dtype=np.int64)
    values = r.values.slice(int(offs[0]), int(offs[-1] - offs[0]))
    return np.diff(offs), np.asarray(values.to_numpy(zero_copy_only=False))


def wrap(offsets: np.ndarray, flat: np.ndarray) -> pa.ListArray:
    """A list array over a flat result, zero-copy (how a flat-array peer gives lists back)."""
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat))


def _polars_series(arr: pa.Array) -> Any:
    return LIBS["polars"].from_arrow(arr)


def _need(lib: str) -> Any:
    mod = LIBS.get(lib)
    if mod is None:
        raise Unsupported(LIB_STATUS.get(lib, "not installed"))
    return mod


# --------------------------------------------------------------------- hashing
def splitmix64_bucket(v: np.ndarray, n: int) -> np.ndarray:
    """SplitMix64's finalizer in numpy, then ``% n``: the hash one writes in numpy."""
    z = v.astype(np.uint64)
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z % np.uint64(n)).astype(np.int64)


def hash_workload(d: dict[str, Any], kind: str) -> Workload:
    arr = d["ints"] if kind == "int64" else d["strings"]
    lengths, n = d["lengths"], NUM_BUCKETS
    offsets = d["offsets"]

    def check(r: Any) -> dict[str, Any]:
        got_lengths, values = r
        if not np.array_equal(got_lengths, lengths):
            return {"ok": False, "detail": "row lengths differ from the input's"}
        if len(values) and (values.min() < 0 or values.max() >= n):
            return {"ok": False, "detail": f"bucket out of [0, {n})"}
        return {"ok": True, "detail": "same row lengths, every bucket in [0, n)"}

    def asp_arrow() -> Callable[[], Any]:
        asp = _need("arrow_sparse")
        return lambda: asp.hash_bucket(arr, n)

    def asp_jagged() -> Callable[[], Any]:
        asp = _need("arrow_sparse")
        if kind != "int64":
            raise Unsupported("a Jagged holds numbers only")
        j = asp.Jagged.from_arrow(arr)
        return lambda: asp.hash_bucket(j, n)

    def polars() -> Callable[[], Any]:
        pl = _need("polars")
        s = _polars_series(arr)
        return lambda: s.list.eval(pl.element().hash(0) % n)

    def duckdb() -> Callable[[], Any]:
        duck = _need("duckdb")
        con = duck.connect()
        table = pa.table({"l": arr})  # noqa: F841 - read by name in the query
        con.register("t", table)
        query = f"SELECT list_transform(l, lambda x: hash(x) % {n}) AS h FROM t"
        return lambda: con.execute(query).to_arrow_table().column("h")

    def pandas() -> Callable[[], Any]:
        pd = _need("pandas")
        flat = d["ids"] if kind == "int64" else \
            np.asarray(d["tokens"].to_numpy(zero_copy_only=False), dtype=object)
        return lambda: wrap(offsets, pd.util.hash_array(flat, categorize=False)
                            % np.uint64(n))

    def numpy() -> Callable[[], Any]:
        if kind != "int64":
            raise Unsupported("numpy has no vectorised string hash")
        flat = np.asarray(arr.values)
        return lambda: wrap(offsets, splitmix64_bucket(flat, n))

    def pyarrow() -> Callable[[], Any]:
        raise Unsupported("pyarrow.compute has no hash function")

    def pl_norm(r: Any) -> Any:
        return list_parts(r.to_arrow())

    def pandas_convert() -> Any:
        return d["ids"] if kind == "int64" else \
            np.asarray(d["tokens"].to_numpy(zero_copy_only=False), dtype=object)

    impls = [
        Impl("arrow_sparse hash_bucket(Arrow)", "arrow_sparse", "arrow_sparse", asp_arrow,
             list_parts),
        Impl("arrow_sparse hash_bucket(Jagged)", "arrow_sparse_alt", "arrow_sparse",
             asp_jagged, lambda j: (np.diff(j.offsets), np.asarray(j.values))),
        Impl("polars list.eval(hash % n)", "peer", "polars", polars, pl_norm,
             convert=lambda: _polars_series(arr)),
        Impl("duckdb list_transform(hash % n)", "peer", "duckdb", duckdb, list_parts),
        Impl("pandas hash_array % n", "peer", "pandas", pandas, list_parts,
             convert=pandas_convert, note="hashes the flat values; object array for strings"),
        Impl("numpy splitmix64 % n", "peer", "numpy", numpy, list_parts),
        Impl("pyarrow", "peer", "pyarrow", pyarrow, list_parts),
    ]
    title = f"hash_bucket list<{'int64' if kind == 'int64' else 'string'}>"
    return Workload(f"hash_{kind}", title,
                    f"{d['n']:,} values in {d['rows']:,} rows into {n:,} buckets",
                    check, impls, data_shape(d, kind, buckets=n))


# ----------------------------------------------------------------- categorify
def categorify_workload(d: dict[str, Any], kind: str) -> Workload:
    asp = LIBS.get("arrow_sparse")
    arr = d["ints"] if kind == "int64" else d["strings"]
    offsets, lengths = d["offsets"], d["lengths"]
    size = max(10, int(round(d["rows"])))  # the most frequent ids, others out of vocabulary
    flat_arrow = arr.values
    # the reference: pyarrow's value_counts ordered as the vocabulary orders (count
    # descending, ties by value), then a dict lookup done by sorting (no arrow_sparse)
    counts = pc.value_counts(flat_arrow)
    order = pc.sort_indices(pa.table({"v": counts.field(0), "c": counts.field(1)}),
                            sort_keys=[("c", "descending"), ("v", "ascending")])
    vocab_values = counts.field(0).take(order).slice(0, size)
    vv = np.asarray(vocab_values.to_numpy(zero_copy_only=False))
    ref_index = {v: i + 2 for i, v in enumerate(vv.tolist())}
    flat_py = flat_arrow.to_numpy(zero_copy_only=False).tolist()
    reference = np.array([ref_index.get(x, 1) for x in flat_py], dtype=np.int64)
    vocab = None if asp is None else asp.fit_vocabulary(arr, max_size=size)

    def check(r: Any) -> dict[str, Any]:
        got_lengths, values = r
        if not np.array_equal(got_lengths, lengths):
            return {"ok": False, "detail": "row lengths differ from the input's"}
        bad = np.flatnonzero(np.asarray(values, np.int64) != reference)
        if bad.size:
            i = int(bad[0])
            return {"ok": False, "detail": f"{bad.size} ids differ; first at {i}: got "
                                           f"{values[i]}, expected {reference[i]}"}
        return {"ok": True, "detail": "ids equal the reference"}

    def asp_arrow() -> Callable[[], Any]:
        a = _need("arrow_sparse")
        if vocab is None or not np.array_equal(
                vocab.values if kind == "int64" else
                np.asarray(vocab.values.to_numpy(zero_copy_only=False)), vv):
            raise Unsupported("fit_vocabulary's order differs from the reference's")
        return lambda: a.categorify(arr, vocab)

    def polars() -> Callable[[], Any]:
        pl = _need("polars")
        s = _polars_series(arr)
        old = pl.Series(vv)
        new = pl.Series(np.arange(2, size + 2, dtype=np.int64))
        return lambda: s.list.eval(pl.element().replace_strict(old, new, default=1,
                                                               return_dtype=pl.Int64))

    def pandas() -> Callable[[], Any]:
        pd = _need("pandas")
        index = pd.Index(vv if kind == "int64" else vv.astype(object))
        flat = np.asarray(flat_arrow) if kind == "int64" else \
            np.asarray(flat_arrow.to_numpy(zero_copy_only=False), dtype=object)
        index.get_indexer(flat[:10])  # builds and caches the index's hash table

        def run() -> Any:
            codes = index.get_indexer(flat)
            return wrap(offsets, np.where(codes < 0, 1, codes + 2))
        return run

    def pyarrow() -> Callable[[], Any]:
        value_set = pa.array(vv)

        def run() -> Any:
            pos = pc.index_in(flat_arrow, value_set=value_set)
            ids = pc.fill_null(pc.add(pos, 2), 1).cast(pa.int64())
            return pa.ListArray.from_arrays(pa.array(offsets), ids)
        return run

    def numpy() -> Callable[[], Any]:
        if kind != "int64":
            raise Unsupported("numpy has no string hash table (searchsorted on objects)")
        order_ = np.argsort(vv, kind="stable")
        sorted_vv = vv[order_]
        flat = np.asarray(flat_arrow)

        def run() -> Any:
            pos = np.searchsorted(sorted_vv, flat)
            np.minimum(pos, len(sorted_vv) - 1, out=pos)
            hit = sorted_vv[pos] == flat
            return wrap(offsets, np.where(hit, order_[pos] + 2, 1))
        return run

    def pl_norm(r: Any) -> Any:
        return list_parts(r.to_arrow())

    impls = [
        Impl("arrow_sparse categorify(Arrow)", "arrow_sparse", "arrow_sparse", asp_arrow,
             list_parts),
        Impl("polars list.eval(replace_strict)", "peer", "polars", polars, pl_norm,
             convert=lambda: _polars_series(arr)),
        Impl("pandas Index.get_indexer", "peer", "pandas", pandas, list_parts,
             note="flat values; the Index's hash table is built once, untimed"),
        Impl("pyarrow pc.index_in", "peer", "pyarrow", pyarrow, list_parts,
             note="builds its hash table of the vocabulary on every call"),
        Impl("numpy searchsorted", "peer", "numpy", numpy, list_parts),
    ]
    title = f"categorify list<{'int64' if kind == 'int64' else 'string'}>"
    return Workload(f"categorify_{kind}", title,
                    f"{d['n']:,} values in {d['rows']:,} rows, vocabulary of {size:,} "
                    f"(of {len(counts):,} distinct)", check, impls,
                    data_shape(d, kind, vocabulary=size, distinct=len(counts)))


# ---------------------------------------------------------------- vocabularies
def fit_workload(d: dict[str, Any], kind: str) -> Workload:
    arr = d["ints"] if kind == "int64" else d["strings"]
    flat_arrow = arr.values
    counts = pc.value_counts(flat_arrow)
    ref = dict(zip(counts.field(0).to_pylist(), counts.field(1).to_pylist(), strict=True))

    def check(r: Any) -> dict[str, Any]:
        values, cnt = r
        cnt = np.asarray(cnt, dtype=np.int64)
        if len(values) != len(ref):
            return {"ok": False, "detail": f"{len(values)} distinct values, expected {len(ref)}"}
        if (np.diff(cnt) > 0).any():
            return {"ok": False, "detail": "counts are not in non-increasing order"}
        got = dict(zip(list(values), cnt.tolist(), strict=True))
        if got != ref:
            return {"ok": False, "detail": "(value, count) pairs differ from the reference"}
        return {"ok": True, "detail": "same (value, count) pairs, most frequent first"}

    def to_list(values: Any) -> list[Any]:
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            return values.to_pylist()
        return np.asarray(values).tolist()

    def asp_fit() -> Callable[[], Any]:
        a = _need("arrow_sparse")
        return lambda: a.fit_vocabulary(arr)

    def polars() -> Callable[[], Any]:
        _need("polars")
        s = _polars_series(arr)
        return lambda: s.list.explode().drop_nulls().value_counts(sort=True, name="count")

    def pandas() -> Callable[[], Any]:
        pd = _need("pandas")
        flat = np.asarray(flat_arrow) if kind == "int64" else \
            np.asarray(flat_arrow.to_numpy(zero_copy_only=False), dtype=object)
        series = pd.Series(flat)
        return lambda: series.value_counts()

    def pyarrow() -> Callable[[], Any]:
        def run() -> Any:
            vc = pc.value_counts(flat_arrow)
            order = pc.array_sort_indices(vc.field(1), order="descending")
            return vc.field(0).take(order), vc.field(1).take(order)
        return run

    def numpy() -> Callable[[], Any]:
        if kind != "int64":
            raise Unsupported("numpy.unique on strings needs an object or unicode copy")
        flat = np.asarray(flat_arrow)

        def run() -> Any:
            values, cnt = np.unique(flat, return_counts=True)
            order = np.argsort(-cnt, kind="stable")
            return values[order], cnt[order]
        return run

    impls = [
        Impl("arrow_sparse fit_vocabulary", "arrow_sparse", "arrow_sparse", asp_fit,
             lambda v: (to_list(v.values), v.counts)),
        Impl("polars explode().value_counts(sort)", "peer", "polars", polars,
             lambda df: (df.to_series(0).to_list(), df.to_series(1).to_numpy()),
             convert=lambda: _polars_series(arr)),
        Impl("pandas Series.value_counts", "peer", "pandas", pandas,
             lambda s: (s.index.tolist(), s.to_numpy())),
        Impl("pyarrow value_counts + sort", "peer", "pyarrow", pyarrow,
             lambda r: (to_list(r[0]), np.asarray(r[1]))),
        Impl("numpy unique + argsort", "peer", "numpy", numpy,
             lambda r: (to_list(r[0]), r[1])),
    ]
    title = f"fit_vocabulary list<{'int64' if kind == 'int64' else 'string'}>"
    return Workload(f"fit_{kind}", title,
                    f"distinct values and counts of {d['n']:,} values ({len(ref):,} distinct)",
                    check, impls, data_shape(d, kind, distinct=len(ref)))


# ----------------------------------------------------------------------- running
def prepare_impl(wl: Workload, impl: Impl) -> tuple[dict[str, Any], Callable[[], Any] | None]:
    """Set up, warm up (first call, may JIT-compile) and check one implementation."""
    rec: dict[str, Any] = {"kind": impl.kind, "library": impl.library}
    if impl.note:
        rec["note"] = impl.note
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
        rec["status"] = f"error: {type(exc).__name__}: {str(exc)[:300]}"
        if impl.kind.startswith("arrow_sparse"):
            C.loud(f"{wl.title}: {impl.name} RAISED {rec['status']}")
        return rec, None
    try:
        check = wl.check(impl.normalize(result))
    except Exception as exc:  # noqa: BLE001
        check = {"ok": False, "detail": f"check raised {type(exc).__name__}: {exc}"}
    del result
    rec["check"] = check
    rec["status"] = "ok" if check["ok"] else "check failed"
    if not check["ok"]:
        C.loud(f"CHECK FAILED: {wl.title}: {impl.name}: {check.get('detail')}")
    return rec, fn


def run_workload(wl: Workload, repeat: int) -> dict[str, Any]:
    print(f"\n## {wl.title}: {wl.description}  [t={time.perf_counter() - T0:.0f} s]",
          flush=True)
    monitor = C.CpuMonitor()
    results: dict[str, dict[str, Any]] = {}
    for impl in wl.impls:
        rec, fn = prepare_impl(wl, impl)
        results[impl.name] = rec
        if fn is None:
            print(f"  {impl.name:<40} {rec['status']}", flush=True)
            continue
        warmup_s = rec.pop("warmup_s")
        timing, _ = C.time_call(fn, repeat, warmup=warmup_s < 1.0)
        timing.warmup_s = warmup_s
        del fn
        rec.update(timing.as_dict())
        extra = ""
        if impl.convert is not None:
            ct, _ = C.time_call(impl.convert, max(1, min(repeat, 3)))
            rec["convert_best_s"] = ct.best_s
            extra = f"  (+ conversion {C.fmt_ms(ct.best_s)} ms)"
        print(f"  {impl.name:<40} best {C.fmt_ms(rec['best_s']):>8} ms  median "
              f"{C.fmt_ms(rec['median_s']):>8} ms  [{rec['status']}]{extra}", flush=True)
        gc.collect()
    cpu = monitor.stop()
    if cpu.get("foreign_cores", 0.0) > FOREIGN_CORES_WARN:
        C.loud(f"{wl.title}: other processes kept {cpu['foreign_cores']:.2f} cores busy "
               "during this workload: its timings are disturbed")
    return {"title": wl.title, "description": wl.description, "shape": wl.shape,
            "machine_load": cpu, "results": results, "summary": summarize(results)}


def summarize(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    asp = [(k, r) for k, r in results.items() if r["kind"] == "arrow_sparse"]
    peers = [(k, r) for k, r in results.items()
             if r["kind"] == "peer" and r.get("status") == "ok"]
    s: dict[str, Any] = {}
    asp_best = None
    if asp:
        name, r = asp[0]
        s["arrow_sparse"] = name
        s["arrow_sparse_status"] = r.get("status")
        if "best_s" in r:
            asp_best = s["arrow_sparse_best_s"] = r["best_s"]
    if peers:
        name, r = min(peers, key=lambda kr: kr[1]["best_s"])
        s["fastest_peer"] = name
        s["fastest_peer_best_s"] = r["best_s"]
        if asp_best:
            s["speedup_vs_fastest_peer"] = r["best_s"] / asp_best
        s["speedup_vs_each_peer"] = {k: p["best_s"] / asp_best for k, p in peers} \
            if asp_best else {}
    return s


def print_report(payload: dict[str, Any]) -> None:
    rows = []
    for w in payload["workloads"].values():
        s = w["summary"]
        ratio = s.get("speedup_vs_fastest_peer")
        peer = f"{s['fastest_peer']} {C.fmt_ms(s['fastest_peer_best_s'])}" \
            if "fastest_peer" in s else "-"
        asp_ms = C.fmt_ms(s.get("arrow_sparse_best_s"))
        if s.get("arrow_sparse_status", "ok") != "ok":
            asp_ms += f" ({s.get('arrow_sparse_status', '')[:20]})"
        rows.append([w["title"], asp_ms, peer, f"{C.fmt_num(ratio)}x" if ratio else "-"])
    print(f"\n### Results (scale {payload['config']['scale']}, best of "
          f"{payload['config']['repeat']}, {payload['machine']['cores']} cores)\n")
    print(C.markdown_table(["workload", "arrow_sparse ms", "fastest peer (name) ms", "ratio"],
                           rows))
    t = payload["targets"]["every_workload_ge_fastest_peer"]
    met = {True: "MET", False: "NOT MET", None: "n/a"}[t["met"]]
    print(f"\nTarget (every workload at least as fast as its fastest peer): {met}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="size multiplier (1 = 200k rows, ~4M values; 0.05 = smoke run)")
    ap.add_argument("--json", default=str(C.RESULTS_DIR / "transforms.json"),
                    help="where to write the JSON results (default: %(default)s)")
    ap.add_argument("--repeat", type=int, default=5, help="timed calls after the warm-up")
    ap.add_argument("--seed", type=int, default=20240601, help="data seed")
    ap.add_argument("--only", default="",
                    help="comma-separated workload keys: hash_int64,hash_string,"
                         "categorify_int64,categorify_string,fit_int64,fit_string")
    ap.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                    help="first wait up to SECONDS for other processes to leave the CPUs idle")
    ap.add_argument("--retry-disturbed", type=int, default=0, metavar="N",
                    help="rerun a workload up to N times (after waiting up to 5 min for a "
                         "quiet machine) when other processes disturbed it; the least "
                         "disturbed run is kept")
    args = ap.parse_args(argv)
    if args.scale <= 0 or args.repeat < 1:
        ap.error("--scale must be > 0 and --repeat >= 1")
    only = {k for k in args.only.split(",") if k}
    waited_s = 0.0
    if args.wait_quiet > 0:
        waited_s, quiet = C.wait_for_quiet(args.wait_quiet, max_foreign_cores=FOREIGN_CORES_WARN)
        print(f"# waited {waited_s:.0f} s for a quiet machine: "
              f"{'quiet' if quiet else 'still busy, running anyway'}", flush=True)
    t_start = time.perf_counter()
    run_monitor = C.CpuMonitor()
    load_start = C.load_average()
    load_libraries()
    versions = C.library_versions(["numpy", "pyarrow", "arrow_sparse", "numba", "llvmlite",
                                   "polars", "pandas", "duckdb"])
    machine = C.machine_info()
    print(f"# bench_transforms: scale {args.scale}, repeat {args.repeat}, "
          f"{machine['cores']} cores, {machine['cpu_model']}")
    print("  " + ", ".join(f"{k} {v}" for k, v in versions.items()), flush=True)
    C.prefault(int(1.5 * args.scale * C.GIB))

    d = build(args.scale, args.seed)
    builders: list[tuple[str, Callable[[], Workload]]] = [
        ("hash_int64", lambda: hash_workload(d, "int64")),
        ("hash_string", lambda: hash_workload(d, "string")),
        ("categorify_int64", lambda: categorify_workload(d, "int64")),
        ("categorify_string", lambda: categorify_workload(d, "string")),
        ("fit_int64", lambda: fit_workload(d, "int64")),
        ("fit_string", lambda: fit_workload(d, "string")),
    ]
    workloads: dict[str, Any] = {}
    for key, make in builders:
        if only and key not in only:
            continue
        wl = make()
        best = run_workload(wl, args.repeat)
        for attempt in range(args.retry_disturbed):
            if best["machine_load"].get("foreign_cores", 0.0) <= FOREIGN_CORES_WARN:
                break
            waited, _ = C.wait_for_quiet(RETRY_WAIT_S, max_foreign_cores=FOREIGN_CORES_WARN)
            print(f"  (retry {attempt + 1} of {key} after waiting {waited:.0f} s)", flush=True)
            again = run_workload(wl, args.repeat)
            again["attempts"] = attempt + 2
            if again["machine_load"].get("foreign_cores", 0.0) < \
                    best["machine_load"].get("foreign_cores", 0.0):
                best = again
        workloads[key] = best
        del wl
        gc.collect()

    ratios = {k: w["summary"].get("speedup_vs_fastest_peer") for k, w in workloads.items()}
    met = None if not ratios or any(v is None for v in ratios.values()) else \
        all(v >= PEER_TARGET for v in ratios.values())
    payload: dict[str, Any] = {
        "benchmark": "transforms",
        "created_utc": C.now_iso(),
        "command": " ".join([Path(sys.argv[0]).name] + (argv if argv is not None
                                                          else sys.argv[1:])),
        "machine": machine,
        "versions": versions,
        "source": C.source_state(),
        "threads": {"numba": LIBS["numba"].get_num_threads() if LIBS["numba"] else None,
                    "polars": (LIBS["polars"].thread_pool_size() if LIBS["polars"] is not None
                               and hasattr(LIBS["polars"], "thread_pool_size") else None)},
        "config": {"scale": args.scale, "repeat": args.repeat, "seed": args.seed,
                   "num_buckets": NUM_BUCKETS, "id_space": VOCAB_IDS,
                   "timing": "one untimed warm-up call (checked), then `repeat` calls timed "
                             "with time.perf_counter (gc off); ratios use the best time",
                   "data": "row lengths: 20% empty, others geometric with mean 25; ids Zipf "
                           "(exponent 1.05) over 10M ids; strings are 'item_<id>'"},
        "workloads": workloads,
        "targets": {"every_workload_ge_fastest_peer": {"met": met, "per_workload": ratios}},
    }
    return C.finish_run(args.json, payload, run_monitor, load_start, t_start, waited_s,
                        print_report, warn_above=FOREIGN_CORES_WARN)


if __name__ == "__main__":
    sys.exit(main())
