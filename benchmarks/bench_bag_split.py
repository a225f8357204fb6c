"""embedding_bag on the CPU: how the fused kernel shares its bags among threads, and torch.

Run from the repository root (``PYTHONPATH=.`` so that this tree's arrow_sparse is
measured)::

    PYTHONPATH=. python benchmarks/bench_bag_split.py --rounds 3 --repeat 5 \\
        --json benchmarks/results/bag_split.json

Three ways of pooling the same bags are timed in one process, interleaved (each round
calls each once per repeat), on ``--threads`` threads (Numba and torch alike):

- ``shared``: arrow_sparse as it is, the bags cut into 16 blocks per thread (balanced by
  ids + bags) that the kernel threads take in turn through an atomic counter
  (``kernels/cpu/segment.py``, ``_shared_blocks`` and ``_run_shared``);
- ``fixed``: the split before it, one fixed block per thread (balanced the same way)
  run by ``_jit.run`` with the plain block kernels (``_g.gather_sum_fast`` ...) that
  the shared kernels wrap, restored for the run by :class:`Split`;
- ``torch``: ``torch.nn.functional.embedding_bag`` on the same buffers (int64 ids and
  offsets, ``include_last_offset=True``, no autograd).

Data (a [1M, 64] float32 table each): ``heavy``, 200k bags of heavy-tailed lengths and
``zipf(1.1) % 1M`` ids (``bench_segment.build_bags_heavy``, the ``bag_heavy_*``
workloads); ``uniform``, 200k bags of exactly 20 ids of the same law; ``project``, the
``bag_sum`` workload's bags (``bench_segment.build_bags``: geometric lengths of mean 20,
20% empty, Zipf(1.05) ids scattered over the table). Modes sum, mean and max.

Beside the wall times, ``one_thread`` gives each library's thread CPU time on one
thread (best of the rounds) for the heavy sum: what the kernels cost apart from how
the machine shares its cores. Results are checked against torch. The JSON records the
load average, the cores other processes kept busy, and the copy bandwidth.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
import bench_segment as S  # noqa: E402

MODES = ("sum", "mean", "max")


def build_uniform(seed: int, length: int = 20) -> dict[str, Any]:
    """200k bags of ``length`` ids each, ids ``zipf(1.1) % 1M`` as the heavy data."""
    rng = C.rng_for(seed, "bags_uniform")
    vocab, bags, dim = 1_000_000, 200_000, 64
    table = rng.random((vocab, dim), dtype=np.float32)
    lengths = np.full(bags, length, np.int64)
    offsets = C.offsets_from_lengths(lengths, np.int64)
    ids = (rng.zipf(1.1, int(offsets[-1])) % vocab).astype(np.int64)
    return {"table": table, "ids": ids, "offsets": offsets, "lengths": lengths}


def describe(d: dict[str, Any]) -> dict[str, Any]:
    lengths = d["lengths"]
    p50, p99 = np.percentile(lengths, [50, 99])
    return {"table": list(d["table"].shape), "bags": len(lengths), "ids": int(len(d["ids"])),
            "distinct_ids": int(len(np.unique(d["ids"]))), "mean_length": float(lengths.mean()),
            "p50": float(p50), "p99": float(p99), "max": int(lengths.max()),
            "empty_bags": int((lengths == 0).sum()), "ids_dtype": str(d["ids"].dtype),
            "table_address_mod_64": int(d["table"].ctypes.data % 64)}


def bytes_moved(d: dict[str, Any]) -> int:
    """Ids + offsets + one table row per id + the result (read + written)."""
    t = d["table"]
    return int(d["ids"].nbytes + d["offsets"].nbytes + len(d["ids"]) * t.shape[1] * t.itemsize
               + (len(d["offsets"]) - 1) * t.shape[1] * 4)


class Split:
    """Switch the fused kernels between the shared blocks and one fixed block per thread.

    ``fixed`` is the code before the shared blocks: the plain block kernels
    (``_g.gather_sum_fast`` ...) run by ``_jit.run`` over one block per thread.
    """

    def __init__(self) -> None:
        from arrow_sparse.kernels.cpu import _jit
        from arrow_sparse.kernels.cpu import _segment_gather as g
        from arrow_sparse.kernels.cpu import segment as kseg
        self.kseg = kseg
        self.shared = (kseg._shared_blocks, kseg._run_shared)
        self.static = {kseg._GATHER_SUM_FAST: _jit.parallel_kernel(g.gather_sum_fast),
                       kseg._GATHER_SUM_PIECES: _jit.parallel_kernel(g.gather_sum_pieces),
                       kseg._GATHER_REDUCE: _jit.parallel_kernel(g.gather_reduce)}

    def use(self, how: str) -> None:
        k = self.kseg
        if how == "shared":
            k._shared_blocks, k._run_shared = self.shared
        else:
            k._shared_blocks = lambda work, offsets, row_cost=k._ID_COST: \
                k._blocks(work, offsets, row_cost)
            k._run_shared = lambda fn, work, n, *args: k.run(self.static[fn], work, n, *args)


def measure(name: str, d: dict[str, Any], args: argparse.Namespace, torch: Any,
            split: Split) -> dict[str, Any]:
    import arrow_sparse as asp
    table, ids, offsets = d["table"], d["ids"], d["offsets"]
    tt, ti, to = (torch.from_numpy(x) for x in (table, ids, offsets))
    moved = bytes_moved(d)
    out: dict[str, Any] = {"data": describe(d), "bytes_moved": moved, "modes": {}}
    for mode in MODES:
        def ours(how: str, mode: str = mode) -> Any:
            def call() -> Any:
                split.use(how)
                return asp.embedding_bag(table, ids, offsets=offsets, mode=mode)
            return call

        def theirs(mode: str = mode) -> Any:
            with torch.no_grad():
                return torch.nn.functional.embedding_bag(ti, tt, to, mode=mode,
                                                         include_last_offset=True)
        fns = {"shared": ours("shared"), "fixed": ours("fixed"), "torch": theirs}
        ref = theirs().numpy()
        for how in ("shared", "fixed"):
            C.check_close(fns[how](), ref, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(fns["shared"](), fns["fixed"]())
        rounds = []
        for _ in range(args.rounds):
            timings = C.time_round_robin(fns, args.repeat)
            best = {k: t.best_s for k, t in timings.items()}
            rounds.append({"times_s": {k: t.times_s for k, t in timings.items()},
                           "best_s": best, "median_s": {k: t.median_s for k, t in timings.items()},
                           "torch_over_shared_best": best["torch"] / best["shared"],
                           "fixed_over_shared_best": best["fixed"] / best["shared"],
                           "torch_over_fixed_best": best["torch"] / best["fixed"],
                           "load_average": C.load_average()})
        best_all = {k: min(r["best_s"][k] for r in rounds) for k in fns}
        median_all = {k: float(np.median(sum((r["times_s"][k] for r in rounds), [])))
                      for k in fns}
        out["modes"][mode] = {
            "rounds": rounds, "best_s": best_all, "median_s": median_all,
            "torch_over_shared_median": median_all["torch"] / median_all["shared"],
            "fixed_over_shared_median": median_all["fixed"] / median_all["shared"],
            "torch_over_shared": best_all["torch"] / best_all["shared"],
            "torch_over_fixed": best_all["torch"] / best_all["fixed"],
            "fixed_over_shared": best_all["fixed"] / best_all["shared"],
            "torch_over_shared_per_round": [r["torch_over_shared_best"] for r in rounds],
            "torch_over_fixed_per_round": [r["torch_over_fixed_best"] for r in rounds],
            "gbps_shared": C.gbps(moved, best_all["shared"]),
            "gbps_torch": C.gbps(moved, best_all["torch"])}
        print(f"{name:8s} {mode:4s} shared {best_all['shared'] * 1e3:6.1f} ms  fixed "
              f"{best_all['fixed'] * 1e3:6.1f}  torch {best_all['torch'] * 1e3:6.1f}  "
              f"torch/shared {out['modes'][mode]['torch_over_shared']:.2f}x per round "
              f"{[round(x, 2) for x in out['modes'][mode]['torch_over_shared_per_round']]}  "
              f"fixed/shared {out['modes'][mode]['fixed_over_shared']:.2f}x (medians "
              f"{out['modes'][mode]['fixed_over_shared_median']:.2f}x)  "
              f"load {os.getloadavg()[0]:.2f}", flush=True)
    return out


def one_thread(d: dict[str, Any], args: argparse.Namespace, torch: Any) -> dict[str, Any]:
    """Thread CPU time of one-thread sums (best of ``rounds`` x ``repeat``)."""
    import numba

    import arrow_sparse as asp
    table, ids, offsets = d["table"], d["ids"], d["offsets"]
    tt, ti, to = (torch.from_numpy(x) for x in (table, ids, offsets))
    before = numba.get_num_threads(), torch.get_num_threads()
    numba.set_num_threads(1)
    torch.set_num_threads(1)
    lines = lines_only_kernel()
    shape = (len(offsets) - 1, table.shape[1])
    fns = {"arrow_sparse": lambda: asp.embedding_bag(table, ids, offsets=offsets),
           "torch": lambda: torch.nn.functional.embedding_bag(ti, tt, to, mode="sum",
                                                              include_last_offset=True),
           "lines_only": lambda: lines(table, ids),
           "result_alloc_numpy": lambda: np.empty(shape, np.float32).fill(0),
           "result_alloc_torch": lambda: torch.empty(shape).fill_(0)}
    times: dict[str, list[float]] = {k: [] for k in fns}
    try:
        for f in fns.values():
            f()
        gc.disable()
        for _ in range(args.rounds * args.repeat):
            for k, f in fns.items():
                t0 = time.thread_time()
                f()
                times[k].append(time.thread_time() - t0)
    finally:
        gc.enable()
        numba.set_num_threads(before[0])
        torch.set_num_threads(before[1])
    best = {k: min(v) for k, v in times.items()}
    print(f"one thread, CPU time: arrow_sparse {best['arrow_sparse'] * 1e3:.1f} ms, torch "
          f"{best['torch'] * 1e3:.1f} ms, the rows' cache lines alone "
          f"{best['lines_only'] * 1e3:.1f} ms", flush=True)
    return {"thread_cpu_s": times, "best_s": best,
            "torch_over_arrow_sparse": best["torch"] / best["arrow_sparse"],
            "lines_only_over_arrow_sparse": best["lines_only"] / best["arrow_sparse"],
            "lines_only": "a Numba loop that reads one float of each 64-byte line of each "
                          "id's row (and its last float) into five independent sums, "
                          "prefetching rows 32 ids ahead as the fused kernel does: the cost "
                          "of bringing the rows' lines in",
            "result_alloc": "a new [bags, 64] float32 result filled once: numpy (huge pages) and "
                            "torch (4 KiB pages), the page faults each call's result costs"}


def lines_only_kernel() -> Any:
    """The cost floor of the gather: every cache line of every row read, nothing summed.

    Reads the floats at 0, 64, 128 and 192 bytes and the last one of each id's row
    (every line of a row of up to 256 bytes, however it is aligned), into five
    independent sums so that no chain of additions sets the pace.
    """
    import numba

    from arrow_sparse.kernels.cpu._segment_gather import PREFETCH, prefetch_row

    @numba.njit(nogil=True)
    def lines(table: Any, ids: Any) -> float:  # pragma: no cover
        a0 = a1 = a2 = a3 = a4 = 0.0
        last = table.shape[1] - 1
        step = max(1, 64 // table.itemsize)
        c1, c2, c3 = min(step, last), min(2 * step, last), min(3 * step, last)
        for i in range(ids.shape[0]):
            prefetch_row(table, ids, i + PREFETCH)
            row = ids[i]
            a0 += table[row, 0]
            a1 += table[row, c1]
            a2 += table[row, c2]
            a3 += table[row, c3]
            a4 += table[row, last]
        return a0 + a1 + a2 + a3 + a4
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default=str(C.RESULTS_DIR / "bag_split.json"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--only", default="heavy,uniform,project")
    args = ap.parse_args()
    t_start = time.perf_counter()
    load_start = C.load_average()
    monitor = C.CpuMonitor()
    import numba
    import torch

    import arrow_sparse  # noqa: F401
    numba.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    split = Split()
    payload: dict[str, Any] = {
        "benchmark": "bag_split", "created_utc": C.now_iso(),
        "command": " ".join(["bench_bag_split.py", *sys.argv[1:]]),
        "machine": C.machine_info(),
        "versions": C.library_versions(["numpy", "arrow_sparse", "numba", "torch"]),
        "source": C.source_state(),
        "threads": {"numba": args.threads, "torch": args.threads},
        "config": {"rounds": args.rounds, "repeat": args.repeat, "seed": args.seed,
                   "timing": "wall time (perf_counter, gc off); each round times the three "
                             "callables interleaved, `repeat` calls each; ratios use best "
                             "times",
                   "run_under": "nice -n 19 on a shared 2-core machine"},
        "copy_bandwidth": C.copy_bandwidth(C.GIB // 4, repeat=3),
        "workloads": {}}
    builders = {"heavy": lambda: S.build_bags_heavy(1.0, args.seed),
                "uniform": lambda: build_uniform(args.seed),
                "project": lambda: S.build_bags(1.0, args.seed)}
    for name in args.only.split(","):
        d = builders[name]()
        payload["workloads"][name] = measure(name, d, args, torch, split)
        if name == "heavy":
            payload["workloads"][name]["one_thread"] = one_thread(d, args, torch)
        del d
        gc.collect()
    split.use("shared")

    def report(p: dict[str, Any]) -> None:
        print(f"load average start {p['machine_load']['load_average_start']} end "
              f"{p['machine_load']['load_average_end']}; other processes' cores "
              f"{p['machine_load'].get('foreign_cores')}")
    return C.finish_run(args.json, payload, monitor, load_start, t_start, 0.0, report)


if __name__ == "__main__":
    raise SystemExit(main())
