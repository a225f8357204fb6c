"""Embedding training steps and sparse optimizer kernels: arrow_sparse against PyTorch.

Run from the repository root::

    python benchmarks/bench_embedding.py                      # scale 1 (~2 min on 2 cores)
    python benchmarks/bench_embedding.py --scale 0.05         # smoke run (< 1 minute)
    python benchmarks/bench_embedding.py --only step_sgd --threads 1 --steps 60
    python benchmarks/bench_embedding.py --wait-quiet 600 --retry-disturbed 2

Workloads (scale 1: a float32 table ``[1_000_000, 64]``; batches of 4,096 bags whose
lengths are 0 for 20% of the bags and geometric otherwise, mean ~20 ids, the ids Zipf
(exponent 1.05) over the whole table; 8 different batches used in turn):

``step_sgd``
    One training step: arrow_sparse ``lookup`` (sum-pooled bags) -> ``lookup_backward``
    -> ``sgd``, against PyTorch ``nn.EmbeddingBag(mode="sum", sparse=True)`` forward +
    ``backward`` + ``optim.SGD.step`` (with ``zero_grad``). Also timed, outside the
    ratio: arrow_sparse's own ``interop.torch.EmbeddingBag`` module under
    ``optim.SGD`` (the drop-in path).
``step_adagrad``
    The same with ``adagrad`` / ``optim.Adagrad``.
``updates``
    The update kernels alone (``sgd``, ``adagrad``, ``rowwise_adagrad``, ``ftrl``) on
    the coalesced gradient of one batch and on a large gradient of 2**18 random rows, in
    GB/s of the bytes that must move (each touched row of the table and of every state
    read and written, the gradient rows and row numbers read), beside PyTorch's
    ``optim.SGD``/``Adagrad`` ``step`` on the same gradient.
``contention``
    ``step_sgd`` again while ``cores`` busy-loop processes compete for the cores, at one
    thread and at every core, with the OpenMP runtime's default wait policy (this
    process), with ``OMP_WAIT_POLICY=PASSIVE`` and with Numba's ``tbb`` threading layer
    (fresh interpreters; ``tbb`` only where the ``tbb`` package is installed): it shows how
    the parallel kernels of both libraries degrade when the machine is oversubscribed.

Every step workload runs at each thread count of ``--threads`` (default: 1 and every
core; Numba's and PyTorch's thread counts set alike). Before timing, both libraries
train from the same initial table on the same batches and their tables are compared
(the check). Contenders are timed in alternating blocks of steps (OpenMP threads left
spinning by one library would otherwise land in the other's timings); medians decide
the ratios. Everything is written as JSON (``benchmarks/results/embedding.json`` by
default); see ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
import numpy as np  # noqa: E402

CORES = C.usable_cores()
FOREIGN_CORES_WARN = 0.1
RETRY_WAIT_S = 300.0
STEP_TARGET = 2.0
BATCHES = 8
LR = 0.01


# ------------------------------------------------------------------------------ data
def build_data(scale: float, seed: int, dim: int = 64) -> dict[str, Any]:
    num = max(1000, int(1_000_000 * scale))
    bags = max(64, int(4096 * min(1.0, scale * 4)))
    rng = C.rng_for(seed, "embedding")
    table = (0.01 * rng.standard_normal((num, dim))).astype(np.float32)
    batches = []
    for b in range(BATCHES):
        brng = C.rng_for(seed, "batch", str(b))
        lengths = C.geometric_lengths(brng, bags, 20.0)
        ids = C.zipf_ids(brng, int(lengths.sum()), num)
        offsets = C.offsets_from_lengths(lengths)
        dy = brng.standard_normal((bags, dim)).astype(np.float32)
        batches.append({"ids": ids, "offsets": offsets, "dy": dy})
    first = batches[0]["ids"]
    return {"table": table, "batches": batches, "num": num, "dim": dim, "bags": bags,
            "shape": {"num_embeddings": num, "dim": dim, "bags_per_batch": bags,
                      "batches": BATCHES, "ids_per_batch_mean": float(np.mean(
                          [len(b["ids"]) for b in batches])),
                      "distinct_ids_first_batch": int(len(np.unique(first)))}}


# ------------------------------------------------------------------------- contenders
class Contender:
    """A training loop: ``step()`` trains on the next batch; ``table()`` reads the weights."""

    def __init__(self, name: str, kind: str, step: Callable[[int], dict[str, float]],
                 table: Callable[[], np.ndarray]) -> None:
        self.name, self.kind, self._step, self.table = name, kind, step, table
        self.calls = 0
        self.parts: list[dict[str, float]] = []

    def step(self) -> None:
        self.parts.append(self._step(self.calls % BATCHES))
        self.calls += 1


def asp_contender(d: dict[str, Any], opt: str) -> Contender:
    from arrow_sparse import embedding as emb

    table = d["table"].copy()
    state = np.zeros_like(table) if opt == "adagrad" else None
    num, batches = d["num"], d["batches"]

    def step(k: int) -> dict[str, float]:
        b = batches[k]
        t0 = time.perf_counter()
        emb.lookup(table, b["ids"], offsets=b["offsets"], mode="sum")
        t1 = time.perf_counter()
        # (a model would turn the pooled rows into dy; the batch carries a fixed one)
        g = emb.lookup_backward(b["dy"], b["ids"], offsets=b["offsets"], mode="sum",
                                num_embeddings=num)
        t2 = time.perf_counter()
        if opt == "sgd":
            emb.sgd(table, g, LR)
        else:
            emb.adagrad(table, state, g, LR)
        t3 = time.perf_counter()
        return {"forward": t1 - t0, "backward": t2 - t1, "update": t3 - t2}

    return Contender("arrow_sparse lookup + lookup_backward + " + opt, "arrow_sparse", step,
                     lambda: table)


def torch_contender(d: dict[str, Any], opt: str, module: str) -> Contender:
    import torch

    if module == "torch":
        bag = torch.nn.EmbeddingBag(d["num"], d["dim"], mode="sum", sparse=True,
                                    _weight=torch.from_numpy(d["table"].copy()))
        name, kind = f"torch nn.EmbeddingBag(sparse=True) + optim.{_optim_name(opt)}", "peer"
    else:
        from arrow_sparse.interop.torch import EmbeddingBag

        bag = EmbeddingBag(d["num"], d["dim"], mode="sum", sparse=True,
                           _weight=torch.from_numpy(d["table"].copy()))
        name = f"arrow_sparse interop.torch.EmbeddingBag + optim.{_optim_name(opt)}"
        kind = "arrow_sparse_alt"
    optim = getattr(torch.optim, _optim_name(opt))(bag.parameters(), lr=LR)
    tensors = [(torch.from_numpy(b["ids"]), torch.from_numpy(b["offsets"][:-1]),
                torch.from_numpy(b["dy"])) for b in d["batches"]]

    def step(k: int) -> dict[str, float]:
        ids, starts, dy = tensors[k]
        t0 = time.perf_counter()
        optim.zero_grad()
        out = bag(ids, starts)
        t1 = time.perf_counter()
        out.backward(dy)
        t2 = time.perf_counter()
        optim.step()
        t3 = time.perf_counter()
        return {"forward": t1 - t0, "backward": t2 - t1, "update": t3 - t2}

    return Contender(name, kind, step, lambda: bag.weight.detach().numpy())


def _optim_name(opt: str) -> str:
    return {"sgd": "SGD", "adagrad": "Adagrad"}[opt]


def set_threads(n: int) -> None:
    import numba
    import torch

    numba.set_num_threads(n)
    torch.set_num_threads(n)


# ---------------------------------------------------------------------------- steps
def check_step(d: dict[str, Any], opt: str, steps: int = 3) -> dict[str, Any]:
    """Train every contender ``steps`` steps from the same table; compare the tables."""
    cs = [asp_contender(d, opt), torch_contender(d, opt, "torch"),
          torch_contender(d, opt, "arrow_sparse")]
    for c in cs:
        for _ in range(steps):
            c.step()
    ref = cs[1].table()
    rows = np.unique(np.concatenate([b["ids"] for b in d["batches"][:steps]]))
    out = {}
    for c in (cs[0], cs[2]):
        got = c.table()
        check = C.check_close(got[rows], ref[rows].astype(np.float64), rtol=1e-4, atol=1e-6)
        check["untouched_rows_equal"] = bool(np.array_equal(
            np.delete(got, rows, axis=0)[:1000], np.delete(ref, rows, axis=0)[:1000]))
        out[c.name] = check
        if not check["ok"]:
            C.loud(f"CHECK FAILED: {c.name} vs PyTorch after {steps} {opt} steps: "
                   f"{check.get('detail')}")
    del cs
    gc.collect()
    return {"steps": steps, "against": "torch nn.EmbeddingBag(sparse=True) + optim "
                                      f"{_optim_name(opt)}", "touched_rows": int(len(rows)),
            "results": out}


def time_blocks(contenders: list[Contender], steps: int, rounds: int = 3) -> None:
    """Time every contender in ``rounds`` alternating blocks of ``steps / rounds`` steps."""
    per_block = max(1, steps // rounds)
    for c in contenders:  # warm-up: compilation, page faults, allocator pools
        for _ in range(3):
            c.step()
        c.parts.clear()
    for _ in range(rounds):
        for c in contenders:
            time.sleep(0.2)  # let the other library's spinning OpenMP threads go idle
            enabled = gc.isenabled()
            gc.disable()
            try:
                for _ in range(per_block):
                    c.step()
            finally:
                if enabled:
                    gc.enable()


def summarize_steps(contenders: list[Contender]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in contenders:
        totals = [sum(p.values()) for p in c.parts]
        parts = {k: float(np.median([p[k] for p in c.parts])) for k in c.parts[0]}
        out[c.name] = {"kind": c.kind, "steps": len(totals),
                       "median_s": float(np.median(totals)), "best_s": float(np.min(totals)),
                       "p90_s": float(np.percentile(totals, 90)), "median_parts_s": parts}
    return out


def run_steps(d: dict[str, Any], opt: str, threads: list[int], steps: int) -> dict[str, Any]:
    print(f"\n## step_{opt}: lookup + backward + {opt} per batch  "
          f"[t={time.perf_counter() - T0:.0f} s]", flush=True)
    set_threads(max(threads))
    check = check_step(d, opt)
    for name, ch in check["results"].items():
        print(f"  check {name}: {'ok' if ch['ok'] else 'FAILED'} "
              f"(max abs err {ch['max_abs_err']:.2e})", flush=True)
    per_threads: dict[str, Any] = {}
    for n in threads:
        set_threads(n)
        monitor = C.CpuMonitor()
        cs = [asp_contender(d, opt), torch_contender(d, opt, "torch"),
              torch_contender(d, opt, "arrow_sparse")]
        time_blocks(cs, steps)
        res = summarize_steps(cs)
        asp_s, torch_s = res[cs[0].name]["median_s"], res[cs[1].name]["median_s"]
        load = monitor.stop()
        per_threads[str(n)] = {"results": res, "speedup_vs_torch": torch_s / asp_s,
                               "machine_load": load}
        for c in cs:
            r = res[c.name]
            parts = " / ".join(f"{C.fmt_ms(v)}" for v in r["median_parts_s"].values())
            print(f"  threads={n}  {c.name:<62} median {C.fmt_ms(r['median_s']):>6} ms "
                  f"(fwd / bwd / update {parts})", flush=True)
        print(f"  threads={n}  speedup vs torch (medians): {torch_s / asp_s:.2f}x", flush=True)
        if load.get("foreign_cores", 0.0) > FOREIGN_CORES_WARN:
            C.loud(f"step_{opt}, {n} threads: other processes kept "
                   f"{load['foreign_cores']:.2f} cores busy: the timings are disturbed")
        del cs
        gc.collect()
    return {"title": f"training step, {opt}", "check": check, "threads": per_threads}


# -------------------------------------------------------------------------- updates
def update_bytes(opt: str, rows: int, dim: int, item: int = 4) -> dict[str, int]:
    row = rows * dim * item
    detail = {"grad_values_read": row, "grad_rows_read": rows * 8, "table_rows_rw": 2 * row}
    if opt == "adagrad":
        detail["state_rows_rw"] = 2 * row
    elif opt == "rowwise_adagrad":
        detail["state_rw"] = 2 * rows * item
    elif opt == "ftrl":
        detail["z_n_rows_rw"] = 4 * row
    return detail


def run_updates(d: dict[str, Any], repeat: int, copy_gbps: float,
                threads: list[int]) -> dict[str, Any]:
    print(f"\n## updates: the optimizer kernels alone  [t={time.perf_counter() - T0:.0f} s]",
          flush=True)
    out: dict[str, Any] = {}
    for n in threads:
        set_threads(n)
        out[str(n)] = update_cases(d, repeat, copy_gbps, n)
    return {"title": "update kernels alone", "threads": out,
            "bytes_definition": "each touched row of the table and states read and written, "
                                "the gradient values and row numbers read; GB/s = bytes / "
                                "best time (1e9). The batch's Zipf rows are partly cache "
                                "resident, so its GB/s can exceed the copy bandwidth"}


def update_cases(d: dict[str, Any], repeat: int, copy_gbps: float, nthreads: int
                 ) -> dict[str, Any]:
    import torch

    from arrow_sparse import embedding as emb
    from arrow_sparse.interop.torch import sparse_grad_to_torch

    num, dim = d["num"], d["dim"]
    b = d["batches"][0]
    rng = C.rng_for(0, "large-grad")
    large_rows = np.sort(rng.choice(num, size=min(num, 1 << 18), replace=False))
    grads = {"batch": emb.lookup_backward(b["dy"], b["ids"], offsets=b["offsets"],
                                          num_embeddings=num),
             "large": emb.SparseGrad(large_rows, rng.standard_normal(
                 (len(large_rows), dim)).astype(np.float32))}
    table = d["table"].copy()
    state, state_rows = np.zeros_like(table), np.zeros(num, np.float32)
    z, n = np.zeros_like(table), np.zeros_like(table)
    tw = torch.from_numpy(table)  # torch steps update the same table (no copy)
    param = torch.nn.Parameter(tw)
    out: dict[str, Any] = {}
    monitor = C.CpuMonitor()
    for label, g in grads.items():
        tgrad = sparse_grad_to_torch(g, num)
        sgd_t = torch.optim.SGD([param], lr=1e-6)
        ada_t = torch.optim.Adagrad([param], lr=1e-6)
        calls = {
            "sgd": (lambda g=g: emb.sgd(table, g, 1e-6), sgd_t),
            "adagrad": (lambda g=g: emb.adagrad(table, state, g, 1e-6), ada_t),
            "rowwise_adagrad": (lambda g=g: emb.rowwise_adagrad(table, state_rows, g, 1e-6),
                                None),
            "ftrl": (lambda g=g: emb.ftrl(table, z, n, g, alpha=1e3), None),
        }
        for opt, (fn, peer) in calls.items():
            detail = update_bytes(opt, len(g.rows), dim)
            nbytes = sum(detail.values())
            timing, _ = C.time_call(fn, repeat)
            rec: dict[str, Any] = {"rows": int(len(g.rows)), "bytes_moved": nbytes,
                                   "bytes_detail": detail, **timing.as_dict(),
                                   "gbps": C.gbps(nbytes, timing.best_s),
                                   "pct_of_copy_bw": 100 * C.gbps(nbytes, timing.best_s)
                                   / copy_gbps}
            line = (f"  threads={nthreads} {label:<5} {opt:<16} {len(g.rows):>7} rows  best "
                    f"{C.fmt_ms(timing.best_s):>6} ms  {rec['gbps']:5.1f} GB/s "
                    f"({rec['pct_of_copy_bw']:.0f}% of copy)")
            if peer is not None:
                def torch_step(peer: Any = peer, tgrad: Any = tgrad) -> None:
                    param.grad = tgrad
                    peer.step()

                pt, _ = C.time_call(torch_step, repeat)
                rec["torch"] = {"name": f"torch optim.{_optim_name(opt)}.step", **pt.as_dict(),
                                "gbps": C.gbps(nbytes, pt.best_s)}
                rec["speedup_vs_torch"] = pt.best_s / timing.best_s
                line += f"; torch {C.fmt_ms(pt.best_s)} ms ({rec['speedup_vs_torch']:.1f}x)"
            print(line, flush=True)
            out[f"{label}_{opt}"] = rec
    load = monitor.stop()
    if load.get("foreign_cores", 0.0) > FOREIGN_CORES_WARN:
        C.loud(f"updates, {nthreads} threads: other processes kept "
               f"{load['foreign_cores']:.2f} cores busy")
    return {"cases": out, "machine_load": load}


# ------------------------------------------------------------------------ contention
CONTENTION_CHILD = """
import json, sys
sys.path.insert(0, {bench!r})
import bench_embedding as b
print(json.dumps(b.contention_measure({scale!r}, {seed!r}, {steps!r})))
"""


def contention_measure(scale: float, seed: int, steps: int) -> dict[str, Any]:
    """Median step times of arrow_sparse and PyTorch (SGD) at 1 thread and every core."""
    d = build_data(scale, seed)
    import numba

    out: dict[str, Any] = {}
    for n in sorted({1, CORES}):
        set_threads(n)
        cs = [asp_contender(d, "sgd"), torch_contender(d, "sgd", "torch")]
        time_blocks(cs, steps, rounds=2)
        res = summarize_steps(cs)
        out[str(n)] = {"arrow_sparse_median_s": res[cs[0].name]["median_s"],
                       "torch_median_s": res[cs[1].name]["median_s"]}
    out["numba_threading_layer"] = numba.threading_layer()
    return out


def run_contention(scale: float, seed: int, steps: int,
                   quiet: dict[str, Any] | None) -> dict[str, Any]:
    print(f"\n## contention: step_sgd with {CORES} busy processes competing  "
          f"[t={time.perf_counter() - T0:.0f} s]", flush=True)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(CORES)]
    try:
        time.sleep(1.0)
        default = contention_measure(scale, seed, steps)
        code = CONTENTION_CHILD.format(bench=str(C.BENCH_DIR), scale=scale, seed=seed,
                                       steps=steps)
        passive = C.run_python(code, env_extra={"OMP_WAIT_POLICY": "PASSIVE"})
        tbb = C.run_python(code, env_extra={"NUMBA_THREADING_LAYER": "tbb"})
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    out: dict[str, Any] = {"busy_processes": CORES, "default_wait_policy": default,
                           "omp_wait_policy_passive": passive, "numba_tbb_layer": tbb}
    if quiet:
        out["without_contention"] = quiet
    for label, res in (("default", default), ("OMP_WAIT_POLICY=PASSIVE", passive),
                       ("NUMBA_THREADING_LAYER=tbb", tbb)):
        for n in sorted({1, CORES}):
            r = res.get(str(n)) if isinstance(res, dict) else None
            if not r:
                err = res.get("error", "no result")
                reason = "not available (the tbb package is not installed)" \
                    if "tbb" in err.lower() else err.splitlines()[-1][-200:]
                print(f"  {label}: {reason}", flush=True)
                break
            print(f"  {label:<24} threads={n}: arrow_sparse "
                  f"{C.fmt_ms(r['arrow_sparse_median_s'])} ms, torch "
                  f"{C.fmt_ms(r['torch_median_s'])} ms "
                  f"({r['torch_median_s'] / r['arrow_sparse_median_s']:.2f}x)", flush=True)
    return out


# ------------------------------------------------------------------------------ main
def evaluate_targets(payload: dict[str, Any]) -> dict[str, Any]:
    t: dict[str, Any] = {}
    for key in ("step_sgd", "step_adagrad"):
        w = payload["workloads"].get(key)
        if not w:
            continue
        per = {n: r["speedup_vs_torch"] for n, r in w["threads"].items()}
        t[f"{key}_ge_2x_torch"] = {"met": all(v >= STEP_TARGET for v in per.values()),
                                   "speedup_by_threads": per,
                                   "checks_ok": all(c["ok"] for c in
                                                    w["check"]["results"].values())}
    return t


def print_report(payload: dict[str, Any]) -> None:
    rows = []
    for key in ("step_sgd", "step_adagrad"):
        w = payload["workloads"].get(key)
        if not w:
            continue
        for n, r in w["threads"].items():
            res = r["results"]
            names = list(res)
            rows.append([key, n, C.fmt_ms(res[names[0]]["median_s"]),
                         C.fmt_ms(res[names[1]]["median_s"]),
                         C.fmt_ms(res[names[2]]["median_s"]),
                         f"{r['speedup_vs_torch']:.2f}x"])
    if rows:
        print("\n### Training step (median ms per batch)\n")
        print(C.markdown_table(["workload", "threads", "arrow_sparse", "torch EmbeddingBag",
                                "arrow_sparse module + torch.optim", "speedup"], rows))
    up = payload["workloads"].get("updates")
    if up:
        rows = [[k, n, v["rows"], C.fmt_ms(v["best_s"]), C.fmt_num(v["gbps"], 1),
                 C.fmt_num(v["pct_of_copy_bw"], 0),
                 f"{v['speedup_vs_torch']:.1f}x" if "speedup_vs_torch" in v else "-"]
                for n, r in up["threads"].items() for k, v in r["cases"].items()]
        print("\n### Update kernels alone\n")
        print(C.markdown_table(["case", "threads", "rows", "best ms", "GB/s", "% of copy",
                                "vs torch optim step"], rows))
    print("\nTargets:")
    for name, t in payload["targets"].items():
        print(f"  {name:<32} {'MET' if t['met'] else 'NOT MET'}  {t['speedup_by_threads']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="size multiplier (1 = [1M, 64] table, 4096 bags per batch)")
    ap.add_argument("--json", default=str(C.RESULTS_DIR / "embedding.json"),
                    help="where to write the JSON results (default: %(default)s)")
    ap.add_argument("--steps", type=int, default=30, help="timed steps per contender")
    ap.add_argument("--repeat", type=int, default=20, help="timed calls per update kernel")
    ap.add_argument("--threads", default=f"1,{CORES}" if CORES > 1 else "1",
                    help="comma-separated thread counts (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=20240601, help="data seed")
    ap.add_argument("--only", default="",
                    help="comma-separated subset of step_sgd,step_adagrad,updates,contention")
    ap.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                    help="first wait up to SECONDS for other processes to leave the CPUs idle")
    ap.add_argument("--retry-disturbed", type=int, default=0, metavar="N",
                    help="rerun a step workload up to N times (after waiting up to 5 min for "
                         "a quiet machine) when other processes disturbed it; the least "
                         "disturbed run is kept")
    args = ap.parse_args(argv)
    if args.scale <= 0 or args.steps < 1 or args.repeat < 1:
        ap.error("--scale must be > 0, --steps and --repeat >= 1")
    threads = sorted({int(x) for x in args.threads.split(",") if x})
    only = {k for k in args.only.split(",") if k}
    warnings.filterwarnings("ignore", message="Sparse invariant checks")

    waited = 0.0
    if args.wait_quiet > 0:
        waited, quiet = C.wait_for_quiet(args.wait_quiet, max_foreign_cores=FOREIGN_CORES_WARN)
        print(f"# waited {waited:.0f} s for a quiet machine: "
              f"{'quiet' if quiet else 'still busy, running anyway'}", flush=True)
    t_start = time.perf_counter()
    run_monitor, load_start = C.CpuMonitor(), C.load_average()
    import numba
    import torch

    import arrow_sparse  # noqa: F401  (versions below)

    versions = C.library_versions(["numpy", "pyarrow", "arrow_sparse", "numba", "torch"])
    machine = C.machine_info()
    print(f"# bench_embedding: scale {args.scale}, threads {threads}, {machine['cores']} cores, "
          f"{machine['cpu_model']}\n  " + ", ".join(f"{k} {v}" for k, v in versions.items()),
          flush=True)
    C.prefault(int(2.5 * args.scale * C.GIB))
    copy = C.copy_bandwidth(C.GIB // 4, repeat=5)
    print(f"  copy bandwidth {copy['best_gbps']:.1f} GB/s", flush=True)
    d = build_data(args.scale, args.seed)
    print(f"  data: {d['shape']}", flush=True)

    def want(key: str) -> bool:
        return not only or key in only

    workloads: dict[str, Any] = {}
    for opt in ("sgd", "adagrad"):
        key = f"step_{opt}"
        if not want(key):
            continue
        best = run_steps(d, opt, threads, args.steps)
        for attempt in range(args.retry_disturbed):
            worst = max(r["machine_load"].get("foreign_cores", 0.0)
                        for r in best["threads"].values())
            if worst <= FOREIGN_CORES_WARN:
                break
            w, _ = C.wait_for_quiet(RETRY_WAIT_S, max_foreign_cores=FOREIGN_CORES_WARN)
            print(f"  (retry {attempt + 1} of {key} after waiting {w:.0f} s)", flush=True)
            again = run_steps(d, opt, threads, args.steps)
            if max(r["machine_load"].get("foreign_cores", 0.0)
                   for r in again["threads"].values()) < worst:
                best = again
        workloads[key] = best
    set_threads(CORES)
    if want("updates"):
        workloads["updates"] = run_updates(d, args.repeat, copy["best_gbps"], threads)
    if want("contention"):
        quiet = None
        if "step_sgd" in workloads:
            quiet = {n: {"arrow_sparse_median_s": list(r["results"].values())[0]["median_s"],
                         "torch_median_s": list(r["results"].values())[1]["median_s"]}
                     for n, r in workloads["step_sgd"]["threads"].items()}
        workloads["contention"] = run_contention(args.scale, args.seed,
                                                 max(10, args.steps // 2), quiet)
    set_threads(CORES)

    payload: dict[str, Any] = {
        "benchmark": "embedding",
        "created_utc": C.now_iso(),
        "command": " ".join([Path(sys.argv[0]).name] + (argv if argv is not None
                                                          else sys.argv[1:])),
        "machine": machine, "versions": versions, "source": C.source_state(),
        "threads": {"numba_max": numba.config.NUMBA_NUM_THREADS,
                    "numba_threading_layer": numba.threading_layer(),
                    "torch_max": torch.get_num_threads(),
                    "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY")},
        "config": {"scale": args.scale, "steps": args.steps, "repeat": args.repeat,
                   "seed": args.seed, "threads": threads, "lr": LR,
                   "timing": "steps: 3 warm-up steps, then `steps` steps per contender in 3 "
                             "alternating blocks, medians; update kernels: one warm-up, then "
                             "`repeat` calls, best time",
                   "data": "table 0.01 * N(0, 1) float32; bag lengths 20% empty, others "
                           "geometric (mean 25), ids Zipf (exponent 1.05) over the table with "
                           "the ranks scattered by a fixed permutation; dy N(0, 1) float32",
                   "check": "after 3 identical steps from the same table, the touched rows "
                            "of arrow_sparse's table against PyTorch's (rtol 1e-4, atol 1e-6)"},
        "copy_bandwidth": copy,
        "data_shape": d["shape"],
        "workloads": workloads,
    }
    payload["targets"] = evaluate_targets(payload)
    return C.finish_run(args.json, payload, run_monitor, load_start, t_start, waited,
                        print_report,
                        load_note="foreign_cores: average cores other processes kept busy "
                                  "during the run (the contention workload's own busy "
                                  "processes included)")


T0 = time.perf_counter()

if __name__ == "__main__":
    sys.exit(main())
