"""GPU kernels: arrow_sparse's CUDA kernels against CuPy-native and torch CUDA equivalents.

Run from the repository root on a machine with a CUDA device and CuPy::

    python benchmarks/bench_gpu.py                  # scale 1, 10 repeats
    python benchmarks/bench_gpu.py --scale 0.1      # smoke run
    python benchmarks/bench_gpu.py --only segment_sum --json /tmp/gpu.json

Without CuPy or without a device it prints ``bench_gpu: skipped: <reason>`` and exits
with status 0, so it can sit in any CI job.

Workloads (float32, int64 offsets and ids, recommender-shaped rows: 20% empty, the rest
geometric with mean 25; ids Zipf over the table):

* ``segment_sum``: 1-D sorted segment sum over ``2M * scale`` rows;
* ``embedding_bag``: sum of ``[1M * scale, 64]`` table rows over ``200k * scale`` bags;
* ``jagged_to_padded_dense``: ``1M * scale`` rows padded to 64.

Each implementation runs on the same device arrays, is checked against a float64
numpy reference and timed with a device synchronisation around every call (best of
``--repeat`` after a warm-up that also compiles). GB/s counts the bytes a kernel must
move at least (inputs read once + output written once), so it compares with the
device's memory bandwidth. arrow_sparse is called through its public function when that
accepts CuPy arrays, else through its kernel launcher (``_backend.get_kernel(...,
cupy)``, the code the public function will dispatch to); the JSON says which.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
import numpy as np  # noqa: E402

WORKLOADS = ("segment_sum", "embedding_bag", "jagged_to_padded_dense")
DIM = 64
PAD_LENGTH = 64


def device_or_reason() -> tuple[Any | None, str]:
    """``(cupy, "")`` when CuPy and a CUDA device are usable, else ``(None, reason)``."""
    try:
        import cupy
    except ImportError:
        return None, "CuPy is not installed (pip install 'arrow-sparse[gpu]')"
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # noqa: BLE001 - no driver / no device: CUDARuntimeError
        return None, f"no CUDA device ({type(exc).__name__}: {exc})"
    if count < 1:
        return None, "no CUDA device"
    return cupy, ""


@dataclass
class Impl:
    """One implementation of a workload: ``run()`` returns the result on the device."""

    name: str
    run: Callable[[], Any]
    note: str = ""


class Bench:
    """Data and implementations of the three workloads on one device."""

    def __init__(self, cupy: Any, torch: Any | None, scale: float, seed: int) -> None:
        self.cp = cupy
        self.torch = torch
        self.scale = scale
        self.seed = seed
        import arrow_sparse
        from arrow_sparse import _backend

        self.asp = arrow_sparse
        self.backend = _backend

    def sync(self) -> None:
        self.cp.cuda.Device().synchronize()
        if self.torch is not None:
            self.torch.cuda.synchronize()

    def _rows(self, name: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
        rng = C.rng_for(self.seed, name)
        lengths = C.geometric_lengths(rng, max(1, int(rows * self.scale)))
        return lengths, C.offsets_from_lengths(lengths)

    def _kernel(self, family: str, name: str) -> Callable[..., Any]:
        return self.backend.get_kernel(family, name, self.cp)  # type: ignore[no-any-return]

    def _ours(self, public: Callable[[], Any], launcher: Callable[[], Any]) -> Impl:
        """The public function if it takes CuPy arrays, else the kernel launcher."""
        try:
            public()
            return Impl("arrow_sparse", public, "public function")
        except (NotImplementedError, TypeError, ValueError, AssertionError) as exc:
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
            return Impl("arrow_sparse", launcher, f"kernel launcher (public function: {reason})")

    def torch_view(self, a: Any) -> Any:
        return self.torch.as_tensor(a, device="cuda")

    # ---------------------------------------------------------------- segment_sum
    def segment_sum(self) -> tuple[dict[str, Any], np.ndarray, list[Impl]]:
        cp = self.cp
        lengths, offsets = self._rows("segment_sum", 2_000_000)
        rows, n = len(lengths), int(offsets[-1])
        values = C.rng_for(self.seed, "segment_values").random(n, dtype=np.float32)
        ref = np.add.reduceat(np.append(values, 0).astype(np.float64), offsets[:-1])
        ref[lengths == 0] = 0
        d_values, d_offsets = cp.asarray(values), cp.asarray(offsets)
        out = cp.empty(rows, dtype=cp.float32)

        def launcher() -> Any:
            self._kernel("segment", "sorted_sum")(
                d_values, d_offsets, None, None, None, None, False, np.float64(0), 0,
                np.float32(0), out, None)
            return out

        impls = [self._ours(lambda: self.asp.segment_sum(d_values, offsets=d_offsets),
                            launcher)]

        def cupy_cumsum() -> Any:  # the usual CuPy idiom: prefix sums, then differences
            c = cp.concatenate([cp.zeros(1, cp.float64), cp.cumsum(d_values, dtype=cp.float64)])
            return (c[d_offsets[1:]] - c[d_offsets[:-1]]).astype(cp.float32)

        impls.append(Impl("cupy cumsum + diff", cupy_cumsum))
        if self.torch is not None:
            t_values, t_lengths = self.torch_view(d_values), self.torch_view(cp.asarray(lengths))
            impls.append(Impl("torch.segment_reduce", lambda: self.torch.segment_reduce(
                t_values, "sum", lengths=t_lengths, unsafe=True)))
        info = {"rows": rows, "values": n,
                "bytes": n * 4 + (rows + 1) * 8 + rows * 4}
        return info, ref, impls

    # ------------------------------------------------------------- embedding_bag
    def embedding_bag(self) -> tuple[dict[str, Any], np.ndarray, list[Impl]]:
        cp = self.cp
        lengths, offsets = self._rows("embedding_bag", 200_000)
        bags, n = len(lengths), int(offsets[-1])
        vocab = max(1, int(1_000_000 * self.scale))
        rng = C.rng_for(self.seed, "embedding_table")
        table = rng.random((vocab, DIM), dtype=np.float32)
        ids = C.zipf_ids(C.rng_for(self.seed, "embedding_ids"), n, vocab)
        seg = C.segment_ids_from_lengths(lengths)
        ref = np.zeros((bags, DIM))
        np.add.at(ref, seg, table[ids].astype(np.float64))
        d_table, d_ids, d_offsets = cp.asarray(table), cp.asarray(ids), cp.asarray(offsets)
        out = cp.empty((bags, DIM), dtype=cp.float32)

        def launcher() -> Any:
            self._kernel("segment", "gather_reduce")(
                d_table, d_ids, d_offsets, None, None, None, None, 0, np.float64(0),
                np.float64(-np.inf), 0, np.float32(0), out, None)
            return out

        impls = [self._ours(lambda: self.asp.embedding_bag(d_table, d_ids, offsets=d_offsets),
                            launcher)]
        d_seg = cp.asarray(seg)
        import cupyx

        def cupy_scatter() -> Any:  # gather the rows, then scatter-add them into bags
            res = cp.zeros((bags, DIM), dtype=cp.float32)
            cupyx.scatter_add(res, d_seg, d_table[d_ids])
            return res

        impls.append(Impl("cupy take + scatter_add", cupy_scatter))
        if self.torch is not None:
            fn = self.torch.nn.functional.embedding_bag
            t_table, t_ids = self.torch_view(d_table), self.torch_view(d_ids)
            t_offsets = self.torch_view(d_offsets[:-1])
            impls.append(Impl("torch embedding_bag", lambda: fn(t_ids, t_table, t_offsets,
                                                                mode="sum")))
        info = {"bags": bags, "ids": n, "table": [vocab, DIM],
                "bytes": n * 8 + (bags + 1) * 8 + n * DIM * 4 + bags * DIM * 4}
        return info, ref, impls

    # ------------------------------------------------------- jagged_to_padded_dense
    def jagged_to_padded_dense(self) -> tuple[dict[str, Any], np.ndarray, list[Impl]]:
        cp = self.cp
        lengths, offsets = self._rows("padded", 1_000_000)
        rows, n = len(lengths), int(offsets[-1])
        values = C.rng_for(self.seed, "padded_values").random(n, dtype=np.float32)
        seg = C.segment_ids_from_lengths(lengths)
        pos = np.arange(n) - offsets[seg]
        keep = pos < PAD_LENGTH
        ref = np.zeros((rows, PAD_LENGTH))
        ref[seg[keep], pos[keep]] = values[keep]
        d_values, d_offsets = cp.asarray(values), cp.asarray(offsets)
        out = cp.empty((rows, PAD_LENGTH, 1), dtype=cp.float32)

        def launcher() -> Any:
            self._kernel("convert", "pad_rows")(d_values, None, d_offsets, None, PAD_LENGTH,
                                               np.float32(0), out)
            return out.reshape(rows, PAD_LENGTH)

        impls = [self._ours(lambda: self.asp.jagged_to_padded_dense(
            d_values, [d_offsets], [PAD_LENGTH]), launcher)]
        d_seg, d_pos = cp.asarray(seg), cp.asarray(pos)

        def cupy_fancy() -> Any:  # positions from segment ids, one masked fancy assignment
            res = cp.zeros((rows, PAD_LENGTH), dtype=cp.float32)
            mask = d_pos < PAD_LENGTH
            res[d_seg[mask], d_pos[mask]] = d_values[mask]
            return res

        impls.append(Impl("cupy fancy indexing", cupy_fancy))
        if self.torch is not None and hasattr(self.torch, "nested"):
            t_values = self.torch_view(d_values).reshape(-1, 1)
            t_offsets = self.torch_view(d_offsets)

            def torch_nested() -> Any:  # pads to the longest row (no truncation), then slices
                nt = self.torch.nested.nested_tensor_from_jagged(t_values, t_offsets)
                return nt.to_padded_tensor(0.0)[:, :PAD_LENGTH, 0]

            impls.append(Impl("torch nested to_padded_tensor", torch_nested,
                              "pads to the longest row, then slices"))
        info = {"rows": rows, "values": n, "max_length": PAD_LENGTH,
                "bytes": n * 4 + (rows + 1) * 8 + rows * PAD_LENGTH * 4}
        return info, ref, impls


def as_numpy(cupy: Any, x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor
        return np.asarray(x.detach().cpu().numpy())
    return np.asarray(cupy.asnumpy(x))


def run_workload(bench: Bench, key: str, repeat: int) -> dict[str, Any]:
    info, ref, impls = getattr(bench, key)()
    results = {}
    for impl in impls:
        entry: dict[str, Any] = {"note": impl.note} if impl.note else {}
        try:
            t0 = time.perf_counter()
            got = impl.run()
            bench.sync()
            entry["warmup_s"] = time.perf_counter() - t0
            entry["check"] = C.check_close(as_numpy(bench.cp, got).reshape(ref.shape), ref)
            times = []
            for _ in range(repeat):
                bench.sync()
                t0 = time.perf_counter()
                impl.run()
                bench.sync()
                times.append(time.perf_counter() - t0)
            entry.update(best_s=min(times), median_s=float(np.median(times)), times_s=times,
                         gbps=C.gbps(info["bytes"], min(times)))
        except Exception as exc:  # noqa: BLE001 - a failing peer is recorded, not fatal
            entry["error"] = f"{type(exc).__name__}: {exc}"[:500]
        results[impl.name] = entry
    return {**info, "results": results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default=",".join(WORKLOADS))
    parser.add_argument("--json", default=str(C.RESULTS_DIR / "gpu.json"))
    args = parser.parse_args(argv)
    keys = [k for k in args.only.split(",") if k]
    unknown = sorted(set(keys) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {', '.join(WORKLOADS)}")
    cupy, reason = device_or_reason()
    if cupy is None:
        print(f"bench_gpu: skipped: {reason}")
        return 0
    torch, torch_status = C.try_import("torch")
    if torch is not None and not torch.cuda.is_available():
        torch, torch_status = None, f"{torch.__version__} without CUDA"
    bench = Bench(cupy, torch, args.scale, args.seed)
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    payload: dict[str, Any] = {
        "created": C.now_iso(), "scale": args.scale, "repeat": args.repeat, "seed": args.seed,
        "device": {"name": props["name"].decode() if isinstance(props["name"], bytes)
                   else str(props["name"]),
                   "memory_bytes": int(props["totalGlobalMem"])},
        "libraries": {"cupy": cupy.__version__, "torch": torch_status,
                      **C.library_versions(["numpy"])},
        "source": C.source_state(), "workloads": {}}
    rows = []
    for key in keys:
        result = run_workload(bench, key, args.repeat)
        payload["workloads"][key] = result
        for name, entry in result["results"].items():
            check = entry.get("check", {})
            rows.append([key, name, C.fmt_ms(entry.get("best_s")),
                         C.fmt_num(entry.get("gbps"), 1),
                         "ok" if check.get("ok") else entry.get("error", check.get("detail",
                                                                                   "-"))])
    print(C.markdown_table(["workload", "implementation", "best ms", "GB/s", "check"], rows))
    print(f"written to {C.write_json(args.json, payload)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
