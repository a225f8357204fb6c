"""Helpers shared by the benchmark scripts in this folder.

Nothing here depends on arrow_sparse: timing, deterministic recommender-shaped data,
the machine's copy bandwidth, machine/library information, correctness checks,
Markdown tables and JSON output. Each bench script imports it as ``_common`` (the
scripts put their own folder on ``sys.path`` first, so they run as plain files:
``python benchmarks/bench_segment.py``).
"""

from __future__ import annotations

import datetime as _dt
import gc
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
REPO_ROOT = BENCH_DIR.parent

GIB = 1 << 30

#: ``machine_load.note`` of the runs that expect an idle machine.
QUIET_NOTE = ("foreign_cores: average cores other processes kept busy during the run "
              "(0 on a quiet machine)")


# --------------------------------------------------------------------------- timing
@dataclass
class Timing:
    """Wall-clock times of repeated calls (seconds), after one untimed warm-up."""

    times_s: list[float] = field(default_factory=list)
    warmup_s: float = float("nan")

    @property
    def best_s(self) -> float:
        return min(self.times_s) if self.times_s else float("nan")

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s) if self.times_s else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return {"best_s": self.best_s, "median_s": self.median_s,
                "warmup_s": self.warmup_s, "repeats": len(self.times_s),
                "times_s": list(self.times_s)}


def time_call(fn: Callable[[], Any], repeat: int = 5, *, warmup: bool = True,
              budget_s: float = 20.0, min_repeat: int = 2) -> tuple[Timing, Any]:
    """Time ``fn()`` with ``time.perf_counter``: a warm-up call, then ``repeat`` calls.

    Returns the timing and the warm-up call's result (so the caller can check it
    without another call; None with ``warmup=False``). The garbage collector is off
    while timing. Once the timed calls have taken ``budget_s`` seconds in all, it
    stops after at least ``min_repeat`` of them (the number actually run is
    recorded), so one very slow peer does not stall a run; the warm-up (which may
    include JIT compilation) does not count against the budget.
    """
    timing = Timing()
    result = None
    gc.collect()
    if warmup:
        t0 = time.perf_counter()
        result = fn()
        timing.warmup_s = time.perf_counter() - t0
    enabled = gc.isenabled()
    gc.disable()
    try:
        for i in range(repeat):
            t0 = time.perf_counter()
            out = fn()
            timing.times_s.append(time.perf_counter() - t0)
            del out
            if i + 1 >= min_repeat and sum(timing.times_s) > budget_s:
                break
    finally:
        if enabled:
            gc.enable()
    return timing, result


def time_round_robin(fns: dict[str, Callable[[], Any]], repeat: int = 5, *,
                     budget_s: float = 20.0, min_repeat: int = 2) -> dict[str, Timing]:
    """Time several already warmed-up callables in rounds: each round calls each once.

    On a shared or virtual machine the speed drifts (other tenants, the host faulting
    memory in, huge pages being collapsed); interleaving spreads such drift over all
    contenders instead of penalising whichever ran first. A callable whose timed calls
    exceed ``budget_s`` in all drops out after ``min_repeat`` rounds (its count of
    repeats is recorded). The garbage collector is off while timing.
    """
    timings = {name: Timing() for name in fns}
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for r in range(repeat):
            for name, fn in fns.items():
                t = timings[name]
                if r >= min_repeat and sum(t.times_s) > budget_s:
                    continue
                t0 = time.perf_counter()
                out = fn()
                t.times_s.append(time.perf_counter() - t0)
                del out
    finally:
        if enabled:
            gc.enable()
    return timings


def prefault(nbytes: int) -> float:
    """Touch ``nbytes`` of fresh memory once and free it; returns the seconds it took.

    On a virtual machine the first touch of guest memory can cost ~10x a normal page
    fault (the host backs the page on demand); doing it once up front keeps that cost
    out of the first workloads' timings. Harmless elsewhere.
    """
    t0 = time.perf_counter()
    buf = np.ones(max(1, nbytes // 8), dtype=np.float64)
    del buf
    return time.perf_counter() - t0


def call_overhead_us(fn: Callable[[], Any], *, calls: int = 20_000,
                     batch: int = 50) -> dict[str, Any]:
    """Per-call time of a cheap call in microseconds: median over batches of ``batch`` calls.

    Timing batches (rather than single calls) keeps ``perf_counter``'s own cost out
    of the number; the median over ``calls // batch`` batches ignores the odd
    scheduler hiccup.
    """
    for _ in range(max(10, batch)):  # warm up (compiles, fills caches)
        fn()
    per_call = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(max(1, calls // batch)):
            t0 = time.perf_counter()
            for _ in range(batch):
                fn()
            per_call.append((time.perf_counter() - t0) / batch)
    finally:
        if enabled:
            gc.enable()
    us = [t * 1e6 for t in per_call]
    return {"median_us": statistics.median(us), "best_us": min(us),
            "p90_us": float(np.percentile(us, 90)), "calls": len(us) * batch, "batch": batch}


# ----------------------------------------------------------------------- data shapes
def rng_for(seed: int, *names: str) -> np.random.Generator:
    """A generator seeded by ``seed`` and a label, so each data set is reproducible alone."""
    label = [int.from_bytes(n.encode()[:8].ljust(8, b"\0"), "little") for n in names]
    return np.random.default_rng([seed, *label])


def geometric_lengths(rng: np.random.Generator, rows: int, mean: float = 20.0,
                      empty_fraction: float = 0.2) -> np.ndarray:
    """Recommender-shaped row lengths (int64): ``empty_fraction`` of rows empty, the
    rest geometric (>= 1) so that the overall mean is ``mean``.

    A non-empty row has mean length ``mean / (1 - empty_fraction)`` (25 for the
    defaults): a long tail of users with long histories, many with a few items.
    """
    nonempty_mean = mean / (1.0 - empty_fraction)
    lengths = rng.geometric(1.0 / nonempty_mean, size=rows).astype(np.int64)
    lengths[rng.random(rows) < empty_fraction] = 0
    return lengths


def offsets_from_lengths(lengths: np.ndarray, dtype: Any = np.int64) -> np.ndarray:
    """``rows + 1`` offsets starting at zero."""
    offsets = np.zeros(len(lengths) + 1, dtype=dtype)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def segment_ids_from_lengths(lengths: np.ndarray, dtype: Any = np.int64) -> np.ndarray:
    """Sorted row id of each value."""
    return np.repeat(np.arange(len(lengths), dtype=dtype), lengths)


def zipf_ids(rng: np.random.Generator, n: int, vocab: int, exponent: float = 1.05,
             shuffle_ranks: bool = True) -> np.ndarray:
    """``n`` ids (int64) in ``[0, vocab)`` drawn from a Zipf law over the whole vocabulary.

    Rank ``k`` (1-based) has probability proportional to ``k ** -exponent``; unlike
    ``numpy.random.zipf`` the law is truncated to the vocabulary, so no id is dropped or
    clipped. With ``shuffle_ranks`` the ranks are mapped to ids by a fixed random
    permutation, so hot rows are scattered over the table as in real data.
    """
    weights = np.arange(1, vocab + 1, dtype=np.float64) ** -exponent
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    ranks = np.searchsorted(cdf, rng.random(n), side="right")
    np.minimum(ranks, vocab - 1, out=ranks)
    if shuffle_ranks:
        perm = rng.permutation(vocab)
        return perm[ranks].astype(np.int64)
    return ranks.astype(np.int64)


# ---------------------------------------------------------------------- bandwidth
def copy_bandwidth(nbytes: int = GIB, repeat: int = 5) -> dict[str, Any]:
    """The machine's memory copy bandwidth with numpy, in GB/s (1e9 bytes per second).

    Copies a ``nbytes`` buffer into another one: on one thread (``np.copyto``), and on
    two threads each copying one half (numpy releases the GIL while copying). A copy
    of ``n`` bytes counts ``2 n`` bytes moved (``n`` read + ``n`` written), the same
    way the benchmarks count a kernel's traffic (bytes read + bytes written), so a
    kernel's GB/s divided by this number is the fraction of a copy's speed it reaches.
    ``best_gbps`` is the better of the two. Pages are touched before timing.
    """
    n = nbytes // 4
    src = np.ones(n, dtype=np.float32)
    dst = np.zeros(n, dtype=np.float32)
    half = n // 2

    def single() -> None:
        np.copyto(dst, src)

    def dual() -> None:
        def part(lo: int, hi: int) -> None:
            np.copyto(dst[lo:hi], src[lo:hi])
        t = threading.Thread(target=part, args=(half, n))
        t.start()
        part(0, half)
        t.join()

    t_single, _ = time_call(single, repeat)
    t_dual, _ = time_call(dual, repeat)
    moved = 2 * n * 4
    single_gbps = moved / t_single.best_s / 1e9
    dual_gbps = moved / t_dual.best_s / 1e9
    return {"buffer_bytes": n * 4, "bytes_moved_per_copy": moved,
            "single_thread": {**t_single.as_dict(), "gbps": single_gbps},
            "two_threads": {**t_dual.as_dict(), "gbps": dual_gbps},
            "best_gbps": max(single_gbps, dual_gbps),
            "note": "GB/s = (bytes read + bytes written) / best time; 1 GB = 1e9 bytes"}


def gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9 if seconds and seconds == seconds else float("nan")


# ---------------------------------------------------------------- machine + libs
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def total_memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def machine_info() -> dict[str, Any]:
    return {"cpu_model": cpu_model(), "cores": usable_cores(),
            "logical_cpus": os.cpu_count(), "memory_bytes": total_memory_bytes(),
            "platform": platform.platform(), "python": sys.version.split()[0]}


def try_import(name: str) -> tuple[Any | None, str]:
    """``(module, version)`` or ``(None, "not installed")`` (or the import error)."""
    try:
        mod = importlib.import_module(name)
    except ImportError as exc:
        msg = "not installed" if getattr(exc, "name", None) == name.split(".")[0] \
            else f"import failed: {exc}"
        return None, msg
    except Exception as exc:  # noqa: BLE001 - a broken install is recorded, not fatal
        return None, f"import failed: {type(exc).__name__}: {exc}"
    return mod, str(getattr(mod, "__version__", "unknown"))


def library_versions(names: list[str]) -> dict[str, str]:
    out = {}
    for name in names:
        mod = sys.modules.get(name)
        out[name] = str(getattr(mod, "__version__", "unknown")) if mod is not None \
            else try_import(name)[1]
    return out


class CpuMonitor:
    """How much CPU other processes used while a block of this process ran.

    Reads the machine's busy time from ``/proc/stat`` and this process's own CPU time
    (threads and children included) before and after; ``foreign_cores`` is the average
    number of cores the rest of the machine kept busy. On a 2-core machine anything
    above ~0.1 means the timings of parallel kernels are not trustworthy.
    """

    def __init__(self) -> None:
        self._start = self._sample()

    @staticmethod
    def _busy_s() -> float | None:
        try:
            with open("/proc/stat") as f:
                fields = f.readline().split()[1:]
        except OSError:
            return None
        vals = [int(x) for x in fields]
        idle = vals[3] + (vals[4] if len(vals) > 4 else 0)  # idle + iowait
        busy = sum(vals[:8]) - idle  # user..steal, without guest (counted in user)
        return busy / os.sysconf("SC_CLK_TCK")

    def _sample(self) -> tuple[float, float | None, float]:
        t = os.times()
        own = t.user + t.system + t.children_user + t.children_system
        return time.perf_counter(), self._busy_s(), own

    def stop(self) -> dict[str, Any]:
        wall1, busy1, own1 = self._sample()
        wall0, busy0, own0 = self._start
        wall = wall1 - wall0
        out: dict[str, Any] = {"wall_s": wall, "own_cpu_s": own1 - own0}
        if busy0 is not None and busy1 is not None and wall > 0:
            foreign = max(0.0, (busy1 - busy0) - (own1 - own0))
            out["foreign_cpu_s"] = foreign
            out["foreign_cores"] = foreign / wall
        return out


def wait_for_quiet(timeout_s: float, *, max_foreign_cores: float = 0.1,
                   window_s: float = 10.0) -> tuple[float, bool]:
    """Wait until other processes used under ``max_foreign_cores`` for ``window_s`` seconds.

    Returns ``(seconds waited, whether it got quiet)``; gives up after ``timeout_s``.
    """
    t0 = time.perf_counter()
    while True:
        mon = CpuMonitor()
        time.sleep(window_s)
        if mon.stop().get("foreign_cores", 0.0) < max_foreign_cores:
            return time.perf_counter() - t0, True
        if time.perf_counter() - t0 > timeout_s:
            return time.perf_counter() - t0, False


def load_average() -> list[float] | None:
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def source_state(repo: Path = REPO_ROOT) -> dict[str, Any]:
    """The git commit of the code being measured and whether the tree had local changes
    (read-only git commands; an empty dict outside a git checkout).

    ``measured_package`` is where the imported ``arrow_sparse`` lives. A script run from
    another checkout than the installed one imports the installed package unless
    ``PYTHONPATH`` names the checkout: the commit then describes other code, which
    ``package_is_this_tree`` (False) says.
    """
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=str(repo), capture_output=True,
                                 text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {}
    status = git("status", "--porcelain", "--", "arrow_sparse") or ""
    changed = [line[3:] for line in status.splitlines() if line.strip()]
    package = getattr(sys.modules.get("arrow_sparse"), "__file__", None)
    package_dir = Path(package).resolve().parent if package else None
    return {"commit": commit, "package_files_changed_since_commit": len(changed),
            "dirty": bool(changed),
            "measured_package": str(package_dir) if package_dir else None,
            "package_is_this_tree": package_dir == (repo / "arrow_sparse").resolve()
            if package_dir else None}


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far."""
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# ------------------------------------------------------------------- correctness
def check_close(got: Any, ref: np.ndarray, *, rtol: float = 1e-4,
                atol: float = 1e-5) -> dict[str, Any]:
    """``np.allclose(got, ref, rtol, atol)`` with a short report of the worst element."""
    try:
        arr = np.asarray(got, dtype=np.float64)
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "detail": f"result not convertible to an array: {exc}"}
    if arr.shape != ref.shape:
        return {"ok": False, "detail": f"shape {arr.shape} != reference shape {ref.shape}"}
    ok = bool(np.allclose(arr, ref, rtol=rtol, atol=atol, equal_nan=False))
    diff = np.abs(arr - ref)
    bad = ~np.isfinite(diff)
    worst = float(np.nanmax(np.where(bad, np.inf, diff))) if diff.size else 0.0
    info: dict[str, Any] = {"ok": ok, "rtol": rtol, "atol": atol, "max_abs_err": worst}
    if not ok:
        tol = atol + rtol * np.abs(ref)
        fails = np.flatnonzero((diff > tol) | bad)
        first = int(fails[0]) if fails.size else -1
        if first >= 0:
            idx = np.unravel_index(first, ref.shape)
            info["detail"] = (f"{fails.size} elements off; first at {tuple(int(i) for i in idx)}: "
                              f"got {arr[idx]!r}, expected {ref[idx]!r}")
        else:
            info["detail"] = "not close"
    return info


def loud(msg: str) -> None:
    """Print a message nobody can miss (to stderr and stdout)."""
    bar = "!" * 78
    text = f"\n{bar}\n!!! {msg}\n{bar}\n"
    print(text, flush=True)
    try:
        same = os.path.samestat(os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno()))
    except (OSError, ValueError, AttributeError):
        same = False
    if not same:  # also on stderr, unless both go to the same place
        print(text, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ subprocesses
def run_python(code: str, *, env_extra: dict[str, str] | None = None,
               timeout: float = 600.0) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter and parse the JSON object on its last stdout line."""
    env = dict(os.environ)
    env.update(env_extra or {})
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=str(REPO_ROOT))
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"ok": False, "wall_s": wall, "error": proc.stderr.strip()[-2000:]}
    lines = [ln for ln in proc.stdout.strip().splitlines() if ln.strip()]
    try:
        out = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        return {"ok": False, "wall_s": wall, "error": f"no JSON output: {proc.stdout[-500:]}"}
    out["ok"] = True
    out["process_wall_s"] = wall
    return out


def fresh_cache_dir(prefix: str = "numba-cache-") -> str:
    return tempfile.mkdtemp(prefix=prefix)


# ------------------------------------------------------------------------ output
def fmt_ms(seconds: float | None) -> str:
    if seconds is None or seconds != seconds:
        return "-"
    ms = seconds * 1e3
    return f"{ms:.3g}" if ms < 10 else f"{ms:.1f}" if ms < 1000 else f"{ms:.0f}"


def fmt_num(x: float | None, digits: int = 2) -> str:
    if x is None or x != x:
        return "-"
    return f"{x:.{digits}f}"


def markdown_table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths, strict=True)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    for r in cells[1:]:
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
    return "\n".join(lines)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return _jsonable(obj.item())
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, float) and obj != obj:
        return None  # NaN is not JSON
    if isinstance(obj, float) and obj in (float("inf"), float("-inf")):
        return None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def finish_run(path: str | os.PathLike[str], payload: dict[str, Any], monitor: CpuMonitor,
               load_start: list[float] | None, t_start: float, waited_s: float,
               report: Callable[[dict[str, Any]], None], *, load_note: str | None = None,
               warn_above: float | None = None) -> int:
    """End a benchmark run: record the machine load, peak RSS and times, print the report,
    write the JSON and say where it went.

    ``load_note`` is stored beside the load figures; ``warn_above`` (foreign cores) makes a
    disturbed run end with a loud warning. Returns the exit status, 0.
    """
    run_cpu = monitor.stop()
    payload["machine_load"] = {"load_average_start": load_start,
                               "load_average_end": load_average(), **run_cpu}
    if load_note is not None:
        payload["machine_load"]["note"] = load_note
    payload["peak_rss_bytes"] = peak_rss_bytes()
    payload["total_wall_s"] = time.perf_counter() - t_start
    payload["waited_for_quiet_s"] = waited_s
    report(payload)
    out = write_json(path, payload)
    if warn_above is not None and run_cpu.get("foreign_cores", 0.0) > warn_above:
        loud(f"other processes kept {run_cpu['foreign_cores']:.2f} cores busy on average "
             "during this run: rerun on a quiet machine before trusting these numbers")
    print(f"\nwrote {out} (total {payload['total_wall_s']:.0f} s, peak RSS "
          f"{payload['peak_rss_bytes'] / GIB:.2f} GiB)")
    return 0


def write_json(path: str | os.PathLike[str], payload: dict[str, Any]) -> Path:
    """Write ``payload`` as indented JSON (NaN/inf -> null, numpy scalars -> Python)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as f:
        json.dump(_jsonable(payload), f, indent=1)
        f.write("\n")
    return out


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
