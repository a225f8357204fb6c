"""End-to-end throughput of the example feature pipeline, against pandas and Polars.

Usage, from the repository root (with the repository first on ``PYTHONPATH`` when
another copy of arrow_sparse is installed: ``PYTHONPATH=. python benchmarks/...``)::

    python benchmarks/bench_pipeline.py                      # 5M rows, results/pipeline.json
    python benchmarks/bench_pipeline.py --rows 200000        # smoke run (seconds)
    python benchmarks/bench_pipeline.py --workdir /data/bench --repeat 5 --wait-quiet 1200
    python benchmarks/bench_pipeline.py --pandas-rows 1000000   # pandas on the first 1M rows

One command writes the complete ``benchmarks/results/pipeline.json`` (``--json`` to
change it): the three pipelines, their checks, the Flight throughput (it runs
``bench_flight.py`` too, which writes ``flight.json`` beside it) and the pipeline
served over Flight to reader processes.

What is measured
----------------
The input is ``data/make_sample.py``'s click log (the schema of
``data/sample_clicks.parquet``) generated deterministically with ``--rows`` rows and
``--seed`` into ``--workdir`` (default ``/tmp/arrow_sparse_bench``; reused when it is
already there). Each contestant reads that Parquet file, applies the transforms of
``data/example_pipeline.toml`` and writes a zstd Parquet file, end to end:

- **arrow_sparse**: ``arrow_sparse.pipeline.run(spec, input, output)`` (threads:
  every core; also once with ``threads=1``);
- **Polars** (list expressions): ``scan_parquet`` -> a vocabulary query ->
  ``filter`` / ``list.len`` / ``list.mean`` / ``list.eval(hash % N)`` /
  ``list.eval(replace_strict)`` / ``concat_list`` + ``list.tail`` padding ->
  ``sink_parquet``;
- **pandas with Python lists**: row groups read with ``to_pandas()``, the vocabulary
  counted with ``collections.Counter``, each row transformed by ``Series.map`` over
  Python lists, written with ``pyarrow.parquet.ParquetWriter``;
- **arrow_sparse on a Polars-written and on a DuckDB-written input**: the same rows
  written again by Polars (``write_parquet``: ``large_list`` columns, Polars' row
  groups) and by DuckDB (``COPY ... TO``: ``list`` columns, DuckDB's row groups), each
  run by ``arrow_sparse.pipeline.run``. Their outputs must equal the reference output
  exactly (schema included: the pipeline's one output layout).

The transforms: keep ``label >= 0``; ``num_items`` = list length; ``mean_item_score``
= mean of ``item_scores``; ``item_buckets`` = each id hashed into 262,144 buckets;
``item_cat`` = vocabulary ids (ids seen at least twice, most frequent first; unknown
-> 1); both left-padded / truncated to the last 50 with 0; null rows stay null. Each
library uses its own hash (``hash_bucket``, Polars ``hash``, Python ``hash``), so
``item_buckets`` is checked for shape and range only; every other column must equal
arrow_sparse's (means to 1e-6 relative).

rows/s is input rows over the best wall time (``--repeat`` runs, arrow_sparse and
Polars interleaved; pandas ``--pandas-repeat``). MB/s is the input's Arrow bytes (the
four columns the pipeline reads, as decoded in memory) over the same time. Targets:
arrow_sparse >= 3x pandas and >= Polars. The run records the machine, the versions,
and how busy other processes kept the cores (above 0.1 cores the numbers are flagged).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

SPEC = C.REPO_ROOT / "data" / "example_pipeline.toml"
SCRIPT = str(Path(__file__).resolve())
COLUMNS = ["user_id", "item_ids", "item_scores", "label"]
BUCKETS = 262_144
PAD = 50
FREQ_THRESHOLD = 2
BATCH_ROWS = 16_384  # the example spec's batch_rows


# ------------------------------------------------------------------------ input
def make_input(workdir: Path, rows: int, seed: int) -> Path:
    """Generate (or reuse) the click log of ``rows`` rows with ``data/make_sample.py``."""
    import pyarrow.parquet as pq

    path = workdir / f"clicks_{rows}_seed{seed}.parquet"
    if path.exists():
        try:
            if pq.read_metadata(path).num_rows == rows:
                return path
        except Exception:  # noqa: BLE001 - a broken leftover: make it again
            pass
    workdir.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(C.REPO_ROOT / "data" / "make_sample.py"), "--rows",
                    str(rows), "--seed", str(seed), "--output", str(path)], check=True,
                   stdout=subprocess.DEVNULL)
    return path


def rewrite_input(src: Path, writer: str) -> Path:
    """The rows of ``src`` written again by Polars or DuckDB (reused when present)."""
    import pyarrow.parquet as pq

    path = src.with_name(f"{src.stem}_{writer}.parquet")
    if path.exists():
        try:
            if pq.read_metadata(path).num_rows == pq.read_metadata(src).num_rows:
                return path
        except Exception:  # noqa: BLE001 - a broken leftover: write it again
            pass
    if writer == "polars":
        import polars as pl

        pl.read_parquet(src).write_parquet(path, compression="zstd")
    else:
        import duckdb

        con = duckdb.connect()
        try:
            con.execute(f"COPY (SELECT * FROM read_parquet('{src}')) TO '{path}' "
                        "(FORMAT parquet, COMPRESSION zstd)")
        finally:
            con.close()
    return path


def input_layout(path: Path) -> dict[str, Any]:
    """The writer-dependent facts of an input: its list types and row groups."""
    import pyarrow.parquet as pq

    meta = pq.read_metadata(path)
    schema = pq.read_schema(path)
    return {"item_ids": str(schema.field("item_ids").type), "row_groups": meta.num_row_groups,
            "parquet_bytes": path.stat().st_size}


def same_output(path: Path, reference: Path) -> dict[str, Any]:
    """Whether two arrow_sparse outputs hold the same schema and values."""
    import pyarrow.parquet as pq

    got, ref = pq.read_table(path), pq.read_table(reference)
    if not got.schema.equals(ref.schema, check_metadata=False):
        fields = [f"{a} vs {b}" for a, b in zip(got.schema, ref.schema, strict=False)
                  if not a.equals(b)] or [f"{got.schema.names} vs {ref.schema.names}"]
        return {"ok": False, "detail": "schema differs: " + "; ".join(fields)}
    ok = got.equals(ref)
    return {"ok": ok, "detail": "equal (schema and values)" if ok else "values differ",
            "rows_compared": got.num_rows}


def input_arrow_bytes(path: Path) -> int:
    import arrow_sparse as asp

    return sum(b.nbytes for b in asp.io.read_parquet(path, columns=COLUMNS))


# ------------------------------------------------------------------ contestants
def run_arrow_sparse(src: Path, dst: Path, threads: int) -> dict[str, Any]:
    from arrow_sparse.pipeline import run

    summary = run(str(SPEC), str(src), str(dst), threads=threads)
    return {"fit_s": summary.fit_seconds, "rows_out": summary.rows_out}


def run_polars(src: Path, dst: Path) -> dict[str, Any]:
    import polars as pl

    t0 = time.perf_counter()
    labelled = pl.scan_parquet(src).filter(pl.col("label") >= 0)
    vocab = (labelled.select(pl.col("item_ids").explode().drop_nulls())
             .group_by("item_ids").len()
             .filter(pl.col("len") >= FREQ_THRESHOLD)
             .sort(["len", "item_ids"], descending=[True, False])
             .collect())
    codes = pl.int_range(2, vocab.height + 2, eager=True)
    fit_s = time.perf_counter() - t0

    def pad(column: str) -> pl.Expr:
        zeros = pl.lit(pl.Series([[0] * PAD])).list.head(
            pl.lit(PAD) - pl.col(column).list.len().clip(0, PAD))
        return pl.concat_list(zeros, pl.col(column).list.tail(PAD)).list.to_array(PAD)

    (labelled.with_columns(
        num_items=pl.col("item_ids").list.len(),
        mean_item_score=pl.col("item_scores").list.mean(),
        item_buckets=pl.col("item_ids").list.eval((pl.element().hash(0) % BUCKETS).cast(pl.Int64)),
        item_cat=pl.col("item_ids").list.eval(pl.element().replace_strict(
            vocab["item_ids"], codes, default=1, return_dtype=pl.Int64)))
     .with_columns(item_buckets=pad("item_buckets"), item_cat=pad("item_cat"))
     .select(["user_id", "label", "num_items", "mean_item_score", "item_buckets", "item_cat"])
     .sink_parquet(dst, compression="zstd"))
    return {"fit_s": fit_s, "vocabulary": vocab.height}


def head_file(src: Path, rows: int, workdir: Path) -> Path:
    """The first ``rows`` rows of ``src`` as a file of their own (for a shorter pandas run)."""
    import pyarrow.parquet as pq

    path = workdir / f"{src.stem}_head{rows}.parquet"
    if path.exists() and pq.read_metadata(path).num_rows == rows:
        return path
    reader = pq.ParquetFile(src)
    with pq.ParquetWriter(path, reader.schema_arrow, compression="zstd") as writer:
        left = rows
        for batch in reader.iter_batches(batch_size=BATCH_ROWS):
            if left <= 0:
                break
            writer.write_batch(batch.slice(0, left))
            left -= min(left, batch.num_rows)
    return path


def run_pandas(src: Path, dst: Path) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    def batches(columns: list[str]) -> Any:
        for batch in pq.ParquetFile(src).iter_batches(batch_size=BATCH_ROWS, columns=columns):
            yield batch.to_pandas()

    def pad(row: list[int]) -> list[int]:
        return ([0] * PAD + row)[-PAD:]

    t0 = time.perf_counter()
    counts: collections.Counter[int] = collections.Counter()
    for df in batches(["item_ids", "label"]):
        for ids in df.loc[df["label"] >= 0, "item_ids"]:
            if ids is not None:
                counts.update(ids.tolist())
    kept = sorted((k for k, n in counts.items() if n >= FREQ_THRESHOLD),
                  key=lambda k: (-counts[k], k))
    code = {k: i + 2 for i, k in enumerate(kept)}
    fit_s = time.perf_counter() - t0

    import pandas as pd

    writer = None
    rows = 0
    try:
        for df in batches(COLUMNS):
            df = df[df["label"] >= 0]
            ids = df["item_ids"].map(lambda a: None if a is None else a.tolist())
            scores = df["item_scores"].map(lambda a: None if a is None else a.tolist())
            out = pd.DataFrame({
                "user_id": df["user_id"],
                "label": df["label"],
                "num_items": ids.map(lambda r: None if r is None else len(r)).astype("Int32"),
                "mean_item_score": scores.map(
                    lambda r: None if not r else sum(r) / len(r)).astype("Float32"),
                "item_buckets": ids.map(
                    lambda r: None if r is None else pad([hash(x) % BUCKETS for x in r])),
                "item_cat": ids.map(
                    lambda r: None if r is None else pad([code.get(x, 1) for x in r])),
            })
            table = pa.Table.from_pandas(out, preserve_index=False)
            if writer is None:
                writer = pq.ParquetWriter(dst, table.schema, compression="zstd")
            writer.write_table(table)
            rows += len(out)
    finally:
        if writer is not None:
            writer.close()
    return {"fit_s": fit_s, "vocabulary": len(code), "rows_out": rows}


# ----------------------------------------------------------------------- checks
def column_digest(path: Path, column: str) -> dict[str, Any]:
    """A streaming digest of a list column: its null mask, lengths and int64 values."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    digest = hashlib.blake2b(digest_size=16)
    rows = 0
    lo, hi = None, None
    for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS * 4,
                                                   columns=[column]):
        arr = batch.column(0)
        rows += len(arr)
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        digest.update(np.packbits(valid).tobytes())
        lengths = pc.list_value_length(arr).fill_null(0).to_numpy().astype(np.int64)
        digest.update(lengths.tobytes())
        flat = pc.list_flatten(arr).cast(pa.int64()).to_numpy()
        digest.update(flat.tobytes())
        if len(flat):
            lo = int(flat.min()) if lo is None else min(lo, int(flat.min()))
            hi = int(flat.max()) if hi is None else max(hi, int(flat.max()))
    return {"digest": digest.hexdigest(), "rows": rows, "min": lo, "max": hi}


def check_output(path: Path, reference: Path) -> dict[str, Any]:
    """Compare an output with arrow_sparse's (``item_buckets``: shape and range only)."""
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    problems = []
    got = pq.read_table(path, columns=["user_id", "label", "num_items", "mean_item_score"])
    ref = pq.read_table(reference, columns=got.column_names)
    if got.num_rows != ref.num_rows:
        return {"ok": False, "detail": f"{got.num_rows} rows, expected {ref.num_rows}"}
    for name in ("user_id", "label", "num_items"):
        if got[name].cast(ref[name].type).to_pylist() != ref[name].to_pylist():
            problems.append(f"{name} differs")
    g, r = got["mean_item_score"], ref["mean_item_score"]
    if not g.is_null().equals(r.is_null()):
        problems.append("mean_item_score nulls differ")
    else:
        gv = pc.drop_null(g).to_numpy().astype(np.float64)
        rv = pc.drop_null(r).to_numpy().astype(np.float64)
        if not np.allclose(gv, rv, rtol=1e-6, atol=1e-7):
            problems.append("mean_item_score differs")
    cat, cat_ref = column_digest(path, "item_cat"), column_digest(reference, "item_cat")
    if cat["digest"] != cat_ref["digest"]:
        problems.append("item_cat differs")
    buckets = column_digest(path, "item_buckets")
    if buckets["min"] is not None and not (0 <= buckets["min"] and buckets["max"] < BUCKETS):
        problems.append(f"item_buckets out of [0, {BUCKETS}): {buckets['min']}..{buckets['max']}")
    lengths = pc.list_value_length(pq.read_table(path, columns=["item_buckets"])[0])
    if pc.min_max(lengths)["min"].as_py() not in (None, PAD) or \
            pc.min_max(lengths)["max"].as_py() not in (None, PAD):
        problems.append("item_buckets rows are not of length 50")
    return {"ok": not problems, "detail": "; ".join(problems) or "equal",
            "rows_compared": got.num_rows}


# ----------------------------------------------------------------------- flight
def flight_reader(location: str, ticket: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(C.BENCH_DIR / "bench_flight.py"), "--read",
                             "asp", location, ticket], stdout=subprocess.PIPE, text=True)


def pipeline_over_flight(src: Path, threads: int, readers: int) -> dict[str, Any]:
    """Serve the example pipeline's output over Flight; time reader processes end to end."""
    from arrow_sparse.pipeline import run

    summary = run(str(SPEC), str(src), "flight://127.0.0.1:0", threads=threads, block=False)
    server = summary.server  # type: ignore[attr-defined]
    try:
        t0 = time.perf_counter()
        procs = [flight_reader(server.location, f"shard={i}/{readers}") for i in range(readers)]
        got = []
        for p in procs:
            out, _ = p.communicate(timeout=3600)
            if p.returncode != 0:
                raise RuntimeError(f"Flight reader failed ({p.returncode})")
            got.append(json.loads(out.strip().splitlines()[-1]))
        wall = time.perf_counter() - t0
    finally:
        server.shutdown()
    nbytes = sum(r["nbytes"] for r in got)
    rows = sum(r["rows"] for r in got)
    seconds = max(r["seconds"] for r in got)
    return {"readers": readers, "rows": rows, "output_bytes": nbytes,
            "seconds": seconds, "wall_s_with_reader_start": wall,
            "output_mb_per_s": nbytes / 1e6 / seconds, "rows_per_s": rows / seconds,
            "fit_s": summary.fit_seconds, "server_rows_in": summary.rows_in}


def raw_flight(rows: int, out: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, str(C.BENCH_DIR / "bench_flight.py"), "--rows",
                           str(rows), "--json", str(out)], capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode != 0:
        return {"ok": False, "error": proc.stderr.strip()[-2000:]}
    print(proc.stdout.strip())
    with open(out) as f:
        return {"ok": True, "json": str(out), **json.load(f)}


# ------------------------------------------------------------------------- main
def timed(fn: Any) -> tuple[float, Any, dict[str, Any]]:
    monitor = C.CpuMonitor()
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    return seconds, result, monitor.stop()


def summarize(times: list[float], rows: int, nbytes: int, loads: list[dict[str, Any]],
              extra: dict[str, Any]) -> dict[str, Any]:
    best = min(times)
    foreign = [ld.get("foreign_cores") for ld in loads if ld.get("foreign_cores") is not None]
    return {"best_s": best, "median_s": statistics.median(times), "times_s": times,
            "rows_per_s": rows / best, "mb_per_s": nbytes / 1e6 / best,
            "max_foreign_cores": max(foreign) if foreign else None, **extra}


def main() -> None:  # noqa: PLR0915 - one linear script
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000, help="input rows (5M)")
    parser.add_argument("--seed", type=int, default=1, help="generator seed")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/arrow_sparse_bench"),
                        help="where the input and outputs are written")
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed runs of arrow_sparse and Polars (interleaved)")
    parser.add_argument("--pandas-repeat", type=int, default=1, help="timed pandas runs")
    parser.add_argument("--pandas-rows", type=int, default=None,
                        help="pandas processes only the first N rows (its rate is per row)")
    parser.add_argument("--threads", type=int, default=C.usable_cores(),
                        help="arrow_sparse threads (default: every core)")
    parser.add_argument("--flight-rows", type=int, default=None,
                        help="rows of bench_flight.py's table (default: 4M, or --rows "
                             "if smaller); 0 skips the Flight measurements")
    parser.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                        help="first wait up to this long for other processes to go idle")
    parser.add_argument("--json", type=Path, default=C.RESULTS_DIR / "pipeline.json")
    args = parser.parse_args()

    started = time.perf_counter()
    waited = C.wait_for_quiet(args.wait_quiet) if args.wait_quiet > 0 else (0.0, None)
    run_monitor = C.CpuMonitor()
    src = make_input(args.workdir, args.rows, args.seed)
    nbytes = input_arrow_bytes(src)
    print(f"input: {src} ({args.rows:,} rows, {src.stat().st_size / 1e6:.0f} MB Parquet, "
          f"{nbytes / 1e6:.0f} MB Arrow in the 4 columns read); {C.usable_cores()} cores")
    out = {name: args.workdir / f"out_{name}.parquet"
           for name in ("arrow_sparse", "arrow_sparse_1thread", "polars", "pandas",
                        "arrow_sparse_polars_input", "arrow_sparse_duckdb_input")}
    written = {writer: rewrite_input(src, writer) for writer in ("polars", "duckdb")}

    contestants = {
        "arrow_sparse": lambda: run_arrow_sparse(src, out["arrow_sparse"], args.threads),
        "arrow_sparse_1thread": lambda: run_arrow_sparse(src, out["arrow_sparse_1thread"], 1),
        "polars": lambda: run_polars(src, out["polars"]),
        "arrow_sparse_polars_input": lambda: run_arrow_sparse(
            written["polars"], out["arrow_sparse_polars_input"], args.threads),
        "arrow_sparse_duckdb_input": lambda: run_arrow_sparse(
            written["duckdb"], out["arrow_sparse_duckdb_input"], args.threads),
    }
    C.prefault(min(nbytes * 4, 8 * C.GIB))
    for fn in contestants.values():  # warm-up: JIT caches, page cache, thread pools
        fn()
    times: dict[str, list[float]] = {name: [] for name in contestants}
    loads: dict[str, list[dict[str, Any]]] = {name: [] for name in contestants}
    extra: dict[str, Any] = {}
    for _ in range(args.repeat):
        for name, fn in contestants.items():
            seconds, result, load = timed(fn)
            times[name].append(seconds)
            loads[name].append(load)
            extra[name] = result
    results = {name: summarize(times[name], args.rows, nbytes, loads[name], extra[name])
               for name in contestants}
    results["arrow_sparse"]["threads"] = args.threads
    results["arrow_sparse_1thread"]["threads"] = 1

    pandas_rows = min(args.pandas_rows or args.rows, args.rows)
    pandas_src, pandas_ref = src, out["arrow_sparse"]
    if pandas_rows < args.rows:  # its own shorter input, and arrow_sparse's output of it
        pandas_src = head_file(src, pandas_rows, args.workdir)
        pandas_ref = args.workdir / "out_arrow_sparse_head.parquet"
        run_arrow_sparse(pandas_src, pandas_ref, args.threads)
    pandas_bytes = input_arrow_bytes(pandas_src)
    ptimes, ploads = [], []
    for _ in range(max(1, args.pandas_repeat)):
        seconds, presult, load = timed(lambda: run_pandas(pandas_src, out["pandas"]))
        ptimes.append(seconds)
        ploads.append(load)
    results["pandas"] = summarize(ptimes, pandas_rows, pandas_bytes, ploads,
                                  {**presult, "rows_in": pandas_rows})

    reference = out["arrow_sparse"]
    results["arrow_sparse_1thread"]["check"] = check_output(out["arrow_sparse_1thread"],
                                                            reference)
    results["polars"]["check"] = check_output(out["polars"], reference)
    for writer in ("polars", "duckdb"):
        name = f"arrow_sparse_{writer}_input"
        results[name]["check"] = same_output(out[name], reference)
        results[name]["threads"] = args.threads
        results[name]["input"] = input_layout(written[writer])
    results["pandas"]["check"] = check_output(out["pandas"], pandas_ref)
    for name, res in results.items():
        res["output_bytes"] = out[name].stat().st_size
        if "check" in res and not res["check"]["ok"]:
            C.loud(f"{name}: output check failed: {res['check']['detail']}")

    ours = results["arrow_sparse"]["rows_per_s"]
    speedups = {"vs_pandas": ours / results["pandas"]["rows_per_s"],
                "vs_polars": ours / results["polars"]["rows_per_s"],
                "vs_1thread": ours / results["arrow_sparse_1thread"]["rows_per_s"],
                "polars_input_vs_polars": results["arrow_sparse_polars_input"]["rows_per_s"]
                / results["polars"]["rows_per_s"],
                "duckdb_input_vs_polars": results["arrow_sparse_duckdb_input"]["rows_per_s"]
                / results["polars"]["rows_per_s"]}
    targets = {"at_least_3x_pandas": speedups["vs_pandas"] >= 3.0,
               "at_least_polars": speedups["vs_polars"] >= 1.0}

    flight: dict[str, Any] = {}
    flight_rows = args.flight_rows if args.flight_rows is not None else min(4_000_000,
                                                                            args.rows)
    if flight_rows:
        flight["bench_flight"] = raw_flight(flight_rows, args.json.with_name("flight.json"))
        flight["pipeline_1_reader"] = pipeline_over_flight(src, args.threads, 1)
        flight["pipeline_2_readers"] = pipeline_over_flight(src, args.threads, 2)

    load = run_monitor.stop()
    table = [[name, f"{r['best_s']:.2f}", f"{r['rows_per_s'] / 1e3:,.0f}k",
              f"{r['mb_per_s']:,.0f}", r.get("check", {"detail": "reference"})["detail"]]
             for name, r in results.items()]
    print(C.markdown_table(["pipeline", "best s", "rows/s", "MB/s", "check"], table))
    print(f"arrow_sparse: {speedups['vs_pandas']:.1f}x pandas, {speedups['vs_polars']:.2f}x "
          f"Polars, {speedups['vs_1thread']:.2f}x its 1-thread run; targets {targets}")
    print(f"arrow_sparse on the Polars-written input: {speedups['polars_input_vs_polars']:.2f}x "
          f"Polars; on the DuckDB-written input: {speedups['duckdb_input_vs_polars']:.2f}x")
    for key in ("pipeline_1_reader", "pipeline_2_readers"):
        if key in flight:
            f = flight[key]
            print(f"pipeline over Flight, {f['readers']} reader(s): "
                  f"{f['output_mb_per_s']:,.0f} MB/s of output, {f['rows_per_s'] / 1e3:,.0f}k "
                  "rows/s")
    if (load.get("foreign_cores") or 0) > 0.1:
        C.loud(f"other processes used {load['foreign_cores']:.2f} cores on average during "
               "the run: these timings are not trustworthy (rerun with --wait-quiet)")
    payload = {
        "benchmark": "pipeline", "date": C.now_iso(), "machine": C.machine_info(),
        "versions": C.library_versions(["arrow_sparse", "pyarrow", "numpy", "numba",
                                        "polars", "pandas"]),
        "source": C.source_state(),
        "config": {"rows": args.rows, "seed": args.seed, "spec": str(SPEC.relative_to(
            C.REPO_ROOT)), "input": str(src), "input_parquet_bytes": src.stat().st_size,
            "input_arrow_bytes": nbytes, "columns_read": COLUMNS, "repeat": args.repeat,
            "input_layout": {"pyarrow": input_layout(src),
                             **{w: input_layout(p) for w, p in written.items()}},
            "pandas_repeat": args.pandas_repeat, "pandas_rows": pandas_rows,
            "threads": args.threads, "waited_for_quiet_s": waited[0],
            "quiet": waited[1],
            "definitions": {"rows_per_s": "input rows / best wall time, end to end "
                                          "(read, fit, transform, write)",
                            "mb_per_s": "Arrow bytes of the input columns read / best "
                                        "wall time (10**6 bytes)"}},
        "results": results, "speedups": speedups, "targets": targets, "flight": flight,
        "machine_load": {"load_average": C.load_average(), **load},
        "peak_rss_bytes": C.peak_rss_bytes(), "total_wall_s": time.perf_counter() - started,
    }
    print("wrote", C.write_json(args.json, payload))


if __name__ == "__main__":
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    main()
