"""Host work per call on the device path: Python calls and host time, kernels left out.

Counts what the host does for one call of ``asp.embedding_bag``, of
``asp.embedding.lookup_backward`` and of the fused ``asp.embedding.train_step`` (SGD) on
device arrays: checks, dispatch, argument packing and the array-module calls around
the kernels. No GPU is needed: the inputs live on the stand-in CuPy of
``tests/cuda_emu/fake_cupy.py`` (``emulated_cupy``), so the library runs its real device
path. The device's work is stubbed out of the measurement: each kernel launch runs on
the CPU emulator, and each of the stand-in's array functions (``argsort``, ``cumsum``,
``take``, allocations, ...) on numpy, with the profiler paused and its time taken off,
so what is counted and timed is the library's host work only, and the sizes the host
reads back (the number of distinct ids of ``lookup_backward``) are the real ones. On a
real GPU each of those array functions also costs CuPy's own Python layer, a few
microseconds: the ``cupy calls`` column counts them. Run from the repository root::

    python benchmarks/host_overhead.py                   # 200 timed calls each
    python benchmarks/host_overhead.py --repeat 50 --json /tmp/host.json

Workload: 4,096 bags of 10 to 30 ids (~20 on average, 82k ids), Zipf ids over a
``[100_000, 32]`` float32 table, int64 offsets; ``embedding_bag(mode="sum")`` and
``lookup_backward`` of a float32 gradient ``[4096, 32]``.

Reported per call: ``library calls`` (Python functions of ``arrow_sparse`` entered),
``python calls`` (every Python function entered: the library, numpy's Python layer
and the stand-in CuPy, whose array attributes are Python properties where CuPy's are
C, so this column overstates a real GPU's), ``launches`` (kernel launches), ``cupy
calls`` (the other device computations: array functions, operators, allocations),
``syncs`` (reads of device data) and ``host us`` (median wall time of a call minus the
time its launches and array functions took, profiler off). The code measured is the
``arrow_sparse`` that Python imports: set ``PYTHONPATH`` to time another checkout with
this script (one without ``train_step`` reports the other two).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
import numpy as np  # noqa: E402

BAGS = 4096
TABLE_ROWS = 100_000
DIM = 32


class LaunchMeter:
    """Wraps every kernel launch and array function: runs it with the profiler paused, timed."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.launches = 0

    def metered(self, function: Callable[..., Any], counted: bool) -> Callable[..., Any]:
        """``function`` run with the profiler paused, its time (and a launch) recorded."""
        meter = self

        def run(*args: Any, **kwargs: Any) -> Any:
            profile = sys.getprofile()
            sys.setprofile(None)
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                meter.seconds += time.perf_counter() - start
                meter.launches += counted
                sys.setprofile(profile)
        return run

    @contextmanager
    def installed(self, fake_cupy: Any) -> Iterator[None]:
        """Wrap the launches the stand-in CuPy hands out while the block runs."""
        original = fake_cupy._DeviceModule.get_function
        meter = self

        def get_function(module: Any, name: str) -> Callable[..., None]:
            return meter.metered(original(module, name), True)

        fake_cupy._DeviceModule.get_function = get_function
        try:
            yield
        finally:
            fake_cupy._DeviceModule.get_function = original

    @contextmanager
    def array_functions(self, cp: Any, fake_cupy: Any) -> Iterator[None]:
        """Also take the stand-in's array functions and methods out of the host time."""
        saved: list[tuple[Any, str, Any]] = []
        for name in (*fake_cupy.DEVICE_FUNCTIONS, *fake_cupy.SYNCING_FUNCTIONS, "empty",
                     "zeros", "ones", "full", "arange", "asarray", "ascontiguousarray"):
            saved.append((cp, name, getattr(cp, name)))
        cls = fake_cupy.ndarray
        for name in ("astype", "copy", "fill", "get", "__getitem__", "__setitem__",
                     "max", "min", "sum", "any", "all", "cumsum", "__add__", "__sub__",
                     "__mul__", "__truediv__", "__rtruediv__", "__ge__", "__lt__", "__ne__"):
            if name in vars(cls):
                saved.append((cls, name, vars(cls)[name]))
        for owner, name, function in saved:
            setattr(owner, name, self.metered(function, False))
        try:
            yield
        finally:
            for owner, name, function in saved:
                setattr(owner, name, function)


def count_calls(fn: Callable[[], Any], package_dir: str, meter: LaunchMeter, cp: Any
                ) -> dict[str, int]:
    """Python functions entered by one ``fn()``: all of them, and the library's."""
    counts = {"python": 0, "library": 0}

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename != __file__:  # not the meter's
            counts["python"] += 1
            if frame.f_code.co_filename.startswith(package_dir):
                counts["library"] += 1

    before = meter.launches
    cp.stats.reset()
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    launches = meter.launches - before
    # the meter's wrappers are the benchmark's, not the library's
    return {"python_calls": counts["python"], "library_calls": counts["library"],
            "launches": launches, "cupy_calls": cp.stats.launches - launches,
            "syncs": cp.stats.syncs}


def host_times(fn: Callable[[], Any], repeat: int, meter: LaunchMeter) -> list[float]:
    """Wall seconds of each of ``repeat`` calls minus the time of its launches."""
    times = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeat):
            kernel_before = meter.seconds
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start - (meter.seconds - kernel_before))
    finally:
        gc.enable()
    return times


def workloads(cp: Any, asp: Any, seed: int) -> dict[str, Callable[[], Any]]:
    rng = C.rng_for(seed, "host_overhead")
    lengths = rng.integers(10, 31, BAGS)
    offsets = C.offsets_from_lengths(lengths)
    ids = C.zipf_ids(rng, int(offsets[-1]), TABLE_ROWS)
    table = rng.random((TABLE_ROWS, DIM), dtype=np.float32)
    grad = rng.random((BAGS, DIM), dtype=np.float32)
    d_table, d_ids, d_offsets, d_grad = (cp.asarray(a) for a in (table, ids, offsets, grad))
    calls = {
        "embedding_bag": lambda: asp.embedding_bag(d_table, d_ids, offsets=d_offsets,
                                                   mode="sum"),
        "lookup_backward": lambda: asp.embedding.lookup_backward(
            d_grad, d_ids, offsets=d_offsets, num_embeddings=TABLE_ROWS),
    }
    if hasattr(asp.embedding, "train_step"):
        calls["train_step (sgd)"] = lambda: asp.embedding.train_step(
            d_table, d_ids, d_grad, offsets=d_offsets, lr=0.01)
    return calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=200, help="timed calls per workload")
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--seed", type=int, default=0, help="data seed")
    args = parser.parse_args(argv)

    import arrow_sparse as asp
    from tests.cuda_emu import fake_cupy

    package_dir = str(Path(asp.__file__).resolve().parent)
    meter = LaunchMeter()
    results: dict[str, Any] = {}
    load_before = C.load_average()
    with meter.installed(fake_cupy), fake_cupy.emulated_cupy(check_orders=()) as cp:
        for name, fn in workloads(cp, asp, args.seed).items():
            fn()  # compiles the kernels and fills every cache
            with meter.array_functions(cp, fake_cupy):
                counts = count_calls(fn, package_dir, meter, cp)
                times = host_times(fn, args.repeat, meter)
            results[name] = {**counts, "host_us_median": statistics.median(times) * 1e6,
                             "host_us_best": min(times) * 1e6, "repeat": args.repeat}
    rows = [[name, r["library_calls"], r["python_calls"], r["launches"], r["cupy_calls"],
             r["syncs"], f"{r['host_us_median']:.0f}", f"{r['host_us_best']:.0f}"]
            for name, r in results.items()]
    print(C.markdown_table(["call", "library calls", "python calls", "launches",
                            "cupy calls", "syncs", "host us (median)", "host us (best)"],
                           rows))
    if args.json:
        payload = {"benchmark": "host_overhead", "date": C.now_iso(),
                   "workload": {"bags": BAGS, "ids_per_bag": "10..30", "table_rows": TABLE_ROWS,
                                "dim": DIM, "seed": args.seed},
                   "source": C.source_state(Path(package_dir).parent),
                   "python": sys.version.split()[0], "machine": C.machine_info(),
                   "load_average": {"before": load_before, "after": C.load_average()},
                   "results": results}
        print(f"wrote {C.write_json(args.json, payload)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
