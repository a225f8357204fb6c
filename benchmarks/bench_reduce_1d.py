"""1-D segment sum / mean / max against the copy bandwidth, on one thread and on two.

Run from the repository root::

    python benchmarks/bench_reduce_1d.py                          # 9 repeats, 3 rounds
    python benchmarks/bench_reduce_1d.py --against /path/to/other/checkout

The data is bench_segment.py's ``sum_1d`` workload: 10^6 rows (20% empty, the others
geometric with mean 25: overall mean ~20), float32 values uniform in [0, 1), int32
Arrow offsets; float64 values on the same offsets as well. Each tree (this checkout, and
``--against`` another checkout of arrow_sparse for an A/B) runs in its own interpreter,
the trees taking turns for ``--rounds`` rounds: a round times the numpy copy of 1 GiB
(one thread; two threads each copying half) and every operation with Numba's thread
count 1 and 2, ``--repeat`` calls each after a warm-up. The best time of all rounds is
kept; "% of copy" is (values + offsets + output bytes) / time against the copy's GB/s
(read + written bytes, the best any round measured, on one thread and on two), as
bench_segment.py counts them. On one thread the calls are also timed by the thread's
CPU time (``time.thread_time``), which leaves out the time other processes hold the
core: on a busy machine that ratio (against the copy's own CPU time) is the steadier
one. The load average is recorded before and after. Results: ``benchmarks/results/reduce_1d.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

#: One round in a fresh interpreter of the tree given as its working directory.
ROUND = r"""
import json, sys, time, threading
import numpy as np, numba
sys.path.insert(0, {bench!r})
import _common as C
import arrow_sparse as asp
rng = C.rng_for({seed}, "values1d")
lengths = C.geometric_lengths(rng, {rows}, mean=20.0, empty_fraction=0.2)
offsets = C.offsets_from_lengths(lengths, np.int32)
values = rng.random(int(lengths.sum()), dtype=np.float32)
v64 = values.astype(np.float64)
src = np.ones(1 << 28, dtype=np.float32)
dst = np.zeros_like(src)
half = len(src) // 2

def best(fn, n, clock=time.perf_counter):
    fn()
    out = float("inf")
    for _ in range(n):
        t0 = clock()
        fn()
        out = min(out, clock() - t0)
    return out

def dual():
    t = threading.Thread(target=np.copyto, args=(dst[half:], src[half:]))
    t.start()
    np.copyto(dst[:half], src[:half])
    t.join()

res = {{"copy_1": best(lambda: np.copyto(dst, src), 3), "copy_2": best(dual, 3),
        "copy_1_cpu": best(lambda: np.copyto(dst, src), 3, time.thread_time)}}
ops = {{"sum": (asp.segment_sum, values), "mean": (asp.segment_mean, values),
        "max": (asp.segment_max, values), "sum_f64": (asp.segment_sum, v64),
        "max_f64": (asp.segment_max, v64)}}
for threads in (1, 2):
    numba.set_num_threads(threads)
    for name, (fn, vals) in ops.items():
        res[f"{{name}}_t{{threads}}"] = best(lambda: fn(vals, offsets=offsets), {repeat})
        if threads == 1:  # this thread's CPU time: what other processes take is not counted
            res[f"{{name}}_t1_cpu"] = best(lambda: fn(vals, offsets=offsets), {repeat},
                                           time.thread_time)
print(json.dumps(res))
"""


def moved_bytes(rows: int, n: int, itemsize: int) -> int:
    """Values + offsets (int32) read, one output value per row written."""
    return n * itemsize + (rows + 1) * 4 + rows * itemsize


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--against", default="", help="another checkout to compare with (A/B)")
    ap.add_argument("--json", default=str(C.RESULTS_DIR / "reduce_1d.json"))
    args = ap.parse_args(argv)
    trees = {"this": str(C.REPO_ROOT)}
    if args.against:
        trees["against"] = str(Path(args.against).resolve())
    code = ROUND.format(bench=str(C.BENCH_DIR), seed=args.seed, rows=args.rows,
                        repeat=args.repeat)
    load_start = os.getloadavg()
    best: dict[str, dict[str, float]] = {name: {} for name in trees}
    for _ in range(args.rounds):
        for name, root in trees.items():
            env = {**os.environ, "PYTHONPATH": root}
            done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env,
                                  capture_output=True, text=True, check=True)
            for key, t in json.loads(done.stdout.strip().splitlines()[-1]).items():
                best[name][key] = min(best[name].get(key, float("inf")), t)
    load_end = os.getloadavg()
    rng = C.rng_for(args.seed, "values1d")
    n = int(C.geometric_lengths(rng, args.rows, mean=20.0, empty_fraction=0.2).sum())
    copy_bytes = 2 * (1 << 30)
    table = []
    results: dict[str, Any] = {}
    # one machine: the copy bandwidth is the best any round of any tree measured
    copy_1 = copy_bytes / min(times["copy_1"] for times in best.values()) / 1e9
    copy_2 = copy_bytes / min(times["copy_2"] for times in best.values()) / 1e9
    copy_cpu = copy_bytes / min(times["copy_1_cpu"] for times in best.values()) / 1e9
    for name, times in best.items():
        ops: dict[str, Any] = {}
        for op in ("sum", "mean", "max", "sum_f64", "max_f64"):
            moved = moved_bytes(args.rows, n, 8 if op.endswith("f64") else 4)
            entry = {}
            for threads in (1, 2):
                t = times[f"{op}_t{threads}"]
                entry[f"threads_{threads}"] = {
                    "best_s": t, "gbps": moved / t / 1e9,
                    "pct_of_single_thread_copy": 100 * moved / t / 1e9 / copy_1,
                    "pct_of_two_thread_copy": 100 * moved / t / 1e9 / copy_2}
            t_cpu = times[f"{op}_t1_cpu"]
            entry["threads_1"]["cpu_s"] = t_cpu
            entry["threads_1"]["pct_of_copy_by_cpu_time"] = 100 * (moved / t_cpu) / (
                copy_bytes / min(tt["copy_1_cpu"] for tt in best.values()))
            ops[op] = entry
            table.append([name, op, C.fmt_ms(entry["threads_1"]["best_s"]),
                          C.fmt_num(entry["threads_1"]["pct_of_single_thread_copy"], 0),
                          C.fmt_ms(t_cpu),
                          C.fmt_num(entry["threads_1"]["pct_of_copy_by_cpu_time"], 0),
                          C.fmt_ms(entry["threads_2"]["best_s"]),
                          C.fmt_num(entry["threads_2"]["pct_of_single_thread_copy"], 0),
                          C.fmt_num(entry["threads_2"]["pct_of_two_thread_copy"], 0)])
        results[name] = {"tree": trees[name], "copy_gbps_single_thread": copy_1,
                         "copy_gbps_single_thread_by_cpu_time": copy_cpu,
                         "copy_gbps_two_threads": copy_2, "ops": ops,
                         "raw_best_s": times}
    if "against" in best:
        results["speedup_this_vs_against"] = {
            key: best["against"][key] / best["this"][key] for key in best["this"]
            if not key.startswith("copy")}
    print(C.markdown_table(["tree", "op", "1 thread ms", "% of 1-thread copy",
                            "1 thread CPU ms", "% of copy (CPU times)",
                            "2 threads ms", "% of 1-thread copy", "% of 2-thread copy"],
                           table))
    print(f"load average: start {load_start}, end {load_end}")
    payload = {"benchmark": "reduce_1d", "created_utc": C.now_iso(),
               "command": " ".join(["bench_reduce_1d.py", *(argv if argv is not None
                                                              else sys.argv[1:])]),
               "machine": C.machine_info(), "source": C.source_state(),
               "data": {"rows": args.rows, "values": n, "offsets": "int32",
                        "lengths": "20% empty, others geometric with mean 25 (overall ~20)",
                        "values_dtype": "float32 uniform [0, 1); float64: the same values"},
               "config": {"repeat": args.repeat, "rounds": args.rounds,
                          "timing": "best of every round's best of `repeat` calls"},
               "load_average": {"start": list(load_start), "end": list(load_end)},
               "results": results}
    C.write_json(args.json, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
