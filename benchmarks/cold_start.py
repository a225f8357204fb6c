"""Cold start: what a first run costs before the CPU kernels are in Numba's cache.

Run from the repository root::

    python benchmarks/cold_start.py                       # everything, 3 repeats (~10 min)
    python benchmarks/cold_start.py --only import,cli     # a subset
    python benchmarks/cold_start.py --repeat 1 --calls segment_sum,hash_bucket  # quick
    python benchmarks/cold_start.py --json /tmp/cold.json

Every measurement runs in a fresh interpreter (``python -c`` / ``python -m
arrow_sparse``). *Cold* means an empty ``NUMBA_CACHE_DIR`` (a new temporary directory
per run), so every kernel the run needs is compiled; *warm* reuses the directory a
cold run filled. The package is byte-compiled first (as ``pip install`` does), so
import times do not include compiling Python sources.

Sections (``--only`` keys):

* ``import``: seconds of ``import arrow_sparse`` (numpy and pyarrow included).
* ``calls``: the first call of one public function per family on 1,000 rows (lengths
  0-39, ~19.5k values), once with int32 offsets (Arrow ``list``) and once with int64
  (``large_list``): ``import_s``, ``call_s`` and ``total_s = import_s + call_s`` (the
  inputs are built with numpy and pyarrow between the two, untimed). ``--calls`` picks
  a subset by name.
* ``cli``: ``arrow-sparse run data/example_pipeline.toml`` end to end (the process's
  wall time, interpreter start included), cold and then warm, plus the run time it
  prints, and the seconds until it first writes to a terminal (a pseudo-terminal on
  stderr: when a first run says it is compiling).
* ``kernels``: compile time per kernel. One fresh interpreter with an empty cache
  records Numba's ``numba:compile`` events while it runs the example pipeline and then
  every call of ``calls`` (both offset widths). A kernel's time is the wall time of its
  top-level compiles (the helpers it compiles included), summed over its signatures.
  Numba's own one-time set-up (the first compile of the process) is measured first, on
  a trivial function, and reported apart as ``numba_init_s``.

Beside every wall time, the CPU seconds the measured process used (user + system;
``*_cpu_s``, for compiles the compiling thread's): on a shared machine the wall time
grows with the other processes' load, the CPU time much less.

Medians of ``--repeat`` runs are reported; the load average and the CPU time other
processes used during the run are recorded beside them (``machine_load``).
"""

from __future__ import annotations

import argparse
import compileall
import os
import pty
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

SPEC = C.REPO_ROOT / "data" / "example_pipeline.toml"
SECTIONS = ("import", "calls", "cli", "kernels")

# Inputs of the first calls, built in the child with numpy and pyarrow only. ``W`` is
# the offsets dtype (np.int32 -> Arrow list, np.int64 -> large_list).
PRELUDE = """
import numpy as np, pyarrow as pa
rng = np.random.default_rng(0)
ROWS = 1000
LENGTHS = rng.integers(0, 40, ROWS)
N = int(LENGTHS.sum())
def offsets(w=None):
    o = np.zeros(ROWS + 1, dtype=w or W)
    np.cumsum(LENGTHS, out=o[1:])
    return o
def lists(values, w=None):
    w = w or W
    cls = pa.ListArray if np.dtype(w) == np.int32 else pa.LargeListArray
    return cls.from_arrays(pa.array(offsets(w)), pa.array(values))
F32 = rng.random(N, dtype=np.float32)
F64 = F32.astype(np.float64)
I64 = rng.integers(0, 5000, N)
IDS = rng.integers(0, 1000, N)
STR = pa.array([f"item_{i}" for i in I64])
TABLE = rng.random((1000, 16), dtype=np.float32)
SEG_IDS = np.repeat(np.arange(ROWS), LENGTHS).astype(W)
"""

# name -> (setup, call): the setup runs after the import (untimed), the call is timed.
CALLS: dict[str, tuple[str, str]] = {
    "segment_sum": ("x = lists(F32)", "asp.segment_sum(x)"),
    "segment_sum_int64": ("x = lists(I64)", "asp.segment_sum(x)"),
    "segment_mean_f64": ("x = lists(F64)", "asp.segment_mean(x)"),
    "segment_max": ("x = lists(F32)", "asp.segment_max(x)"),
    "segment_argmax": ("x = lists(F32)", "asp.segment_argmax(x)"),
    "unsorted_segment_sum": ("", "asp.unsorted_segment_sum(F32, SEG_IDS, ROWS)"),
    "embedding_bag": ("x = lists(IDS)", "asp.embedding_bag(TABLE, x, mode='sum')"),
    "sparse_segment_mean": ("o = offsets()",
                            "asp.sparse_segment_mean(TABLE, IDS, offsets=o)"),
    "jagged_to_padded_dense": ("o = offsets()",
                               "asp.jagged_to_padded_dense(F32, [o], [50])"),
    "dense_to_jagged": ("o = offsets(); d = np.ones((ROWS, 50), np.float32)",
                        "asp.dense_to_jagged(d, [o])"),
    "jagged_dense_elementwise_add": ("o = offsets(); d = np.ones((ROWS, 50), np.float32)",
                                     "asp.jagged_dense_elementwise_add(F32, [o], d)"),
    "segment_softmax": ("x = lists(F32)", "asp.segment_softmax(x)"),
    "segment_cumsum": ("x = lists(F32)", "asp.segment_cumsum(x)"),
    "jagged_unique": ("x = lists(I64)", "asp.jagged_unique(x)"),
    "list_slice": ("x = lists(I64)", "asp.list_slice(x, -5, None)"),
    "hash_bucket": ("x = lists(I64)", "asp.hash_bucket(x, 1000)"),
    "hash_bucket_string": ("x = lists(STR)", "asp.hash_bucket(x, 1000)"),
    "fit_vocabulary": ("x = lists(I64)", "asp.fit_vocabulary(x)"),
    "categorify": ("x = lists(I64); v = asp.Vocabulary(np.arange(100), np.ones(100, np.int64))",
                   "asp.categorify(x, v)"),
    "bucketize": ("x = lists(F32)", "asp.bucketize(x, [0.25, 0.5, 0.75])"),
    "pad_or_truncate": ("x = lists(I64)", "asp.pad_or_truncate(x, 50)"),
    "value_counts": ("x = lists(I64)", "asp.value_counts(x)"),
    "masked_sum": ("d = rng.random((ROWS, 20)); m = d > 0.5", "asp.masked.sum(d, 1, mask=m)"),
    "to_csr": ("j = asp.Jagged.from_arrow(lists(IDS))", "j.to_csr(1000).to_dense()"),
    "keyed_permute": ("kj = asp.KeyedJagged.from_dict({'a': lists(I64), 'b': lists(IDS)})",
                      "kj.permute(['b', 'a'])"),
    "embedding_sgd": ("t = TABLE.copy(); dy = np.ones((ROWS, 16), np.float32); x = lists(IDS)",
                      "asp.embedding.sgd(t, asp.embedding.lookup_backward(dy, x, "
                      "num_embeddings=1000), 0.1)"),
}

CALL_CODE = """
import json, sys, time
c0 = time.process_time()
t0 = time.perf_counter()
import arrow_sparse as asp
t1 = time.perf_counter()
c1 = time.process_time()
import numpy as np
W = np.{width}
{prelude}
{setup}
setup_compiled = "numba" in sys.modules and any(
    getattr(m, "__name__", "").startswith("arrow_sparse.kernels.cpu.")
    for m in list(sys.modules.values()))
c2 = time.process_time()
t2 = time.perf_counter()
{call}
t3 = time.perf_counter()
c3 = time.process_time()
print(json.dumps({{"import_s": t1 - t0, "call_s": t3 - t2, "total_s": (t1 - t0) + (t3 - t2),
                  "import_cpu_s": c1 - c0, "call_cpu_s": c3 - c2,
                  "total_cpu_s": (c1 - c0) + (c3 - c2),
                  "numba_loaded": "numba" in sys.modules, "setup_loaded_kernels": setup_compiled}}))
"""

IMPORT_CODE = """
import json, sys, time
c0 = time.process_time()
t0 = time.perf_counter()
import arrow_sparse
t1 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "import_cpu_s": time.process_time() - c0,
                  "numba_loaded": "numba" in sys.modules,
                  "modules": len(sys.modules)}))
"""

# Per-kernel compile times: Numba's compile events, around the pipeline and every call.
KERNELS_CODE = """
import json, os, sys, tempfile, time
from numba.core import event
import numba
import numpy as np

stack, records = [], []

class Listener(event.Listener):
    def on_start(self, ev):
        stack.append((time.perf_counter(), time.thread_time()))

    def on_end(self, ev):
        t0, c0 = stack.pop()
        if not stack:  # a top-level compile: its helpers' compiles are inside it
            d = ev.data["dispatcher"]
            records.append({"kernel": d.py_func.__module__ + "." + d.py_func.__qualname__,
                            "args": str(ev.data["args"]), "s": time.perf_counter() - t0,
                            "cpu_s": time.thread_time() - c0})

t0 = time.perf_counter()
@numba.njit(cache=False)
def _trivial(x):
    return x + 1
_trivial(1)
numba_init_s = time.perf_counter() - t0
event.register("numba:compile", Listener())

import arrow_sparse as asp
from arrow_sparse.pipeline import run
t0 = time.perf_counter()
run(@SPEC@, output=os.path.join(tempfile.mkdtemp(), "out.parquet"))
pipeline_s = time.perf_counter() - t0
calls = @CALLS@
prelude = @PRELUDE@
t0 = time.perf_counter()
for width in ("int32", "int64"):
    scope = {"asp": asp, "W": getattr(np, width)}
    exec(prelude, scope)
    for name, (setup, call) in calls.items():
        exec(setup, scope)
        exec(call, scope)
calls_s = time.perf_counter() - t0
print(json.dumps({"numba_init_s": numba_init_s, "pipeline_s": pipeline_s,
                  "calls_s": calls_s, "records": records}))
"""


def child_env(cache: str) -> dict[str, str]:
    return {"NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(C.REPO_ROOT)}


def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in runs if r.get("ok") and r.get(key) is not None]
    return statistics.median(vals) if vals else None


def cold_runs(code: str, repeat: int) -> list[dict[str, Any]]:
    runs = []
    for _ in range(repeat):
        cache = C.fresh_cache_dir()
        try:
            runs.append(C.run_python(code, env_extra=child_env(cache)))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    return runs


# ------------------------------------------------------------------- sections
def measure_import(repeat: int) -> dict[str, Any]:
    runs = cold_runs(IMPORT_CODE, repeat)
    return {"runs": runs, "median_import_s": median_of(runs, "import_s"),
            "median_import_cpu_s": median_of(runs, "import_cpu_s"),
            "numba_loaded": any(r.get("numba_loaded") for r in runs)}


def measure_calls(names: list[str], repeat: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        setup, call = CALLS[name]
        for width in ("int32", "int64"):
            code = CALL_CODE.format(width=width, prelude=PRELUDE, setup=setup, call=call)
            runs = cold_runs(code, repeat)
            row = {"runs": runs, **{f"median_{k}": median_of(runs, k)
                                    for k in ("import_s", "call_s", "total_s", "import_cpu_s",
                                              "call_cpu_s", "total_cpu_s")}}
            out[f"{name}[{width}]"] = row
            print(f"  {name:30s} {width}  import {C.fmt_num(row['median_import_s'])} s  "
                  f"call {C.fmt_num(row['median_call_s'])} s  "
                  f"total {C.fmt_num(row['median_total_s'])} s", flush=True)
            for r in runs:
                if not r.get("ok"):
                    C.loud(f"{name}[{width}] failed: {r.get('error', '')[-600:]}")
    return out


_SUMMARY = re.compile(r"\s([0-9.]+) s \(fit ([0-9.]+) s\)")


def run_cli(cache: str, out_dir: str) -> dict[str, Any]:
    """``python -m arrow_sparse run SPEC`` with stderr on a pseudo-terminal."""
    env = dict(os.environ)
    env.update(child_env(cache))
    cmd = [sys.executable, "-m", "arrow_sparse", "run", str(SPEC), "--output",
           os.path.join(out_dir, "clicks_features.parquet")]
    master, slave = pty.openpty()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, env=env,
                            cwd=str(C.REPO_ROOT))
    os.close(slave)
    first: float | None = None
    err = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.05)
        chunk = b""
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                chunk = b""
        if chunk:
            if first is None:
                first = time.perf_counter() - t0
            err += chunk
        elif os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            # exited; not reaped yet, so that wait4 below reads its CPU time
            break
    stdout = proc.stdout.read().decode() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    os.close(master)
    out: dict[str, Any] = {"ok": proc.returncode == 0, "wall_s": wall, "first_output_s": first,
                           "cpu_s": usage.ru_utime + usage.ru_stime,
                           "stdout": stdout.strip()[-300:]}
    match = _SUMMARY.search(stdout)
    if match:
        out["run_s"], out["fit_s"] = float(match.group(1)), float(match.group(2))
    if proc.returncode != 0:
        out["error"] = err.decode(errors="replace")[-2000:]
    text = err.decode(errors="replace")
    out["said_compiling"] = "compiling" in text.lower()
    return out


def measure_cli(repeat: int) -> dict[str, Any]:
    out_dir = tempfile.mkdtemp(prefix="cold-start-out-")
    caches = [C.fresh_cache_dir() for _ in range(repeat)]
    try:
        cold = [run_cli(cache, out_dir) for cache in caches]
        warm = [run_cli(caches[0], out_dir) for _ in range(repeat)]
    finally:
        for path in [*caches, out_dir]:
            shutil.rmtree(path, ignore_errors=True)
    for r in cold + warm:
        if not r["ok"]:
            C.loud(f"cli run failed: {r.get('error', '')}")

    def agg(runs: list[dict[str, Any]]) -> dict[str, Any]:
        return {"runs": runs, **{f"median_{k}": median_of(runs, k)
                                 for k in ("wall_s", "cpu_s", "run_s", "fit_s",
                                           "first_output_s")}}

    return {"command": f"arrow-sparse run {SPEC.relative_to(C.REPO_ROOT)} --output TMP",
            "cold": agg(cold), "warm": agg(warm)}


def measure_kernels(names: list[str]) -> dict[str, Any]:
    code = (KERNELS_CODE.replace("@SPEC@", repr(str(SPEC))).replace("@PRELUDE@", repr(PRELUDE))
            .replace("@CALLS@", repr({n: CALLS[n] for n in names})))
    cache = C.fresh_cache_dir()
    try:
        res = C.run_python(code, env_extra=child_env(cache))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if not res.get("ok"):
        C.loud(f"kernel compile tour failed: {res.get('error', '')[-1500:]}")
        return res
    per: dict[str, dict[str, Any]] = {}
    for rec in res.pop("records"):
        k = per.setdefault(rec["kernel"], {"kernel": rec["kernel"], "compile_s": 0.0,
                                           "compile_cpu_s": 0.0, "signatures": 0,
                                           "slowest_args": "", "slowest_s": 0.0})
        k["compile_s"] += rec["s"]
        k["compile_cpu_s"] += rec["cpu_s"]
        k["signatures"] += 1
        if rec["s"] > k["slowest_s"]:
            k["slowest_s"], k["slowest_args"] = rec["s"], rec["args"][:160]
    table = sorted(per.values(), key=lambda k: -k["compile_s"])
    res["kernels"] = table
    res["total_compile_s"] = sum(k["compile_s"] for k in table)
    res["total_compile_cpu_s"] = sum(k["compile_cpu_s"] for k in table)
    res["compiles"] = sum(k["signatures"] for k in table)
    return res


# --------------------------------------------------------------------- report
def report(payload: dict[str, Any]) -> None:
    if "import" in payload:
        print(f"\nimport arrow_sparse: {C.fmt_num(payload['import']['median_import_s'])} s "
              f"(numba loaded: {payload['import']['numba_loaded']})")
    if "calls" in payload:
        rows = [[name, C.fmt_num(r["median_import_s"]), C.fmt_num(r["median_call_s"]),
                 C.fmt_num(r["median_total_s"]), C.fmt_num(r.get("median_total_cpu_s"))]
                for name, r in payload["calls"].items()]
        print("\nFirst call on 1,000 rows, cold (seconds, medians):\n")
        print(C.markdown_table(["call", "import", "call", "import + call", "CPU s"], rows))
    if "cli" in payload:
        cli = payload["cli"]
        rows = [[label, C.fmt_num(cli[label]["median_wall_s"]),
                 C.fmt_num(cli[label].get("median_cpu_s")),
                 C.fmt_num(cli[label]["median_run_s"]), C.fmt_num(cli[label]["median_fit_s"]),
                 C.fmt_num(cli[label]["median_first_output_s"])] for label in ("cold", "warm")]
        print(f"\n`{cli['command']}` (seconds, medians):\n")
        print(C.markdown_table(["cache", "end to end", "CPU s", "run (printed)", "fit (printed)",
                                "first output"], rows))
    if "kernels" in payload and "kernels" in payload["kernels"]:
        k = payload["kernels"]
        print(f"\nCompile time per kernel (top 15 of {len(k['kernels'])}; {k['compiles']} "
              f"compiles, {C.fmt_num(k['total_compile_s'])} s in all; Numba's set-up "
              f"{C.fmt_num(k['numba_init_s'])} s apart):\n")
        rows = [[r["kernel"].replace("arrow_sparse.kernels.cpu.", ""), C.fmt_num(r["compile_s"]),
                 C.fmt_num(r.get("compile_cpu_s")), r["signatures"]] for r in k["kernels"][:15]]
        print(C.markdown_table(["kernel", "compile s", "CPU s", "signatures"], rows))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", default=str(C.RESULTS_DIR / "cold_start.json"),
                    help="where to write the results (default benchmarks/results/cold_start.json)")
    ap.add_argument("--repeat", type=int, default=3, help="fresh interpreters per measurement")
    ap.add_argument("--only", default="", help=f"comma-separated subset of {', '.join(SECTIONS)}")
    ap.add_argument("--calls", default="", help="comma-separated subset of the first calls: "
                    + ", ".join(CALLS))
    args = ap.parse_args(argv)
    only = [s for s in args.only.split(",") if s] or list(SECTIONS)
    names = [s for s in args.calls.split(",") if s] or list(CALLS)
    unknown = sorted(set(only) - set(SECTIONS)) + sorted(set(names) - set(CALLS))
    if unknown:
        ap.error(f"unknown keys {unknown}")

    # Byte-compile the package as an install does: imports then read .pyc files.
    compileall.compile_dir(str(C.REPO_ROOT / "arrow_sparse"), quiet=1)
    t_start = time.perf_counter()
    load_start = C.load_average()
    monitor = C.CpuMonitor()
    payload: dict[str, Any] = {
        "benchmark": "cold_start", "date": C.now_iso(), "machine": C.machine_info(),
        "source": C.source_state(), "repeat": args.repeat,
        "libraries": C.library_versions(["numba", "llvmlite", "numpy", "pyarrow"]),
        "definition": textwrap.dedent(__doc__ or "").strip().split("\n\n", 3)[2],
    }
    if "import" in only:
        print("## import", flush=True)
        payload["import"] = measure_import(args.repeat)
    if "calls" in only:
        print("## first calls (cold)", flush=True)
        payload["calls"] = measure_calls(names, args.repeat)
    if "cli" in only:
        print("## arrow-sparse run (cold, then warm)", flush=True)
        payload["cli"] = measure_cli(args.repeat)
    if "kernels" in only:
        print("## compile time per kernel", flush=True)
        payload["kernels"] = measure_kernels(names)
    return C.finish_run(args.json, payload, monitor, load_start, t_start, 0.0, report,
                        load_note=C.QUIET_NOTE)


if __name__ == "__main__":
    sys.exit(main())
