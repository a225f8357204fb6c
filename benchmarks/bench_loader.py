"""Feeding a torch training loop: rows/s, batches/s, time waiting for data, peak memory.

A minimal recommender step (three ``torch.nn.EmbeddingBag(sum, sparse)`` tables, one per
sparse feature, a linear layer, BCE loss, backward, SGD) is fed one epoch of a
sample_clicks-like Parquet file (``data/make_sample.py``'s generator, ``--rows`` rows,
default 1,000,000; 3 sparse features: the item history hashed into 2^18 buckets, the
row's category ids, and the user id hashed into 2^16 buckets) by:

- ``arrow_sparse``: :class:`arrow_sparse.interop.torch_data.SparseDataset` through
  :func:`make_loader`, TorchRec-style (keys, values, lengths) output;
- ``plain``: what users write by hand: an IterableDataset over
  ``ParquetFile.iter_batches`` (row groups dealt to DataLoader workers), each batch
  turned into Python lists and then into padded ``[rows, L]`` tensors
  (``EmbeddingBag`` with ``padding_idx``);
- ``ray``: Ray Data's ``read_parquet(...).iter_torch_batches`` with a collate function
  building values + offsets from the list columns (Ray's own parallelism: it has no
  DataLoader workers; run once).

with 0, 1 and 2 DataLoader workers. Each configuration runs in its own process, so its
peak memory (``ru_maxrss`` of the process and of its worker processes) is its own. The
time the loop waits for data is the time spent in ``next()`` of the loader; the step time
is the forward + backward + SGD.

Run: ``python benchmarks/bench_loader.py [--rows N] [--batch-size B]``; results go to
``benchmarks/results/loader.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

sys.path.insert(0, str(_common.REPO_ROOT))  # this checkout's arrow_sparse

FEATURES = ["items", "cats", "user"]
BUCKETS = {"items": 1 << 18, "cats": 1 << 10, "user": 1 << 16}
DIM = 16
ROW_GROUP_ROWS = 65_536


# ------------------------------------------------------------------------------ data
def make_data(rows: int, path: Path, seed: int = 0) -> dict[str, Any]:
    """Write the sample_clicks-like file with 3 list<int64> features and a label."""
    import pyarrow.parquet as pq

    spec = importlib.util.spec_from_file_location("make_sample",
                                                  _common.REPO_ROOT / "data" / "make_sample.py")
    assert spec is not None and spec.loader is not None
    make_sample = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_sample)
    table = make_sample.make_table(rows, seed)
    items = table.column("item_ids").combine_chunks()
    item_offsets = items.offsets.to_numpy()
    item_values = items.values.to_numpy() % BUCKETS["items"]
    hashed = pa.ListArray.from_arrays(pa.array(item_offsets), pa.array(item_values),
                                      mask=items.is_null())
    cats = table.column("categories").combine_chunks()
    entry_offsets = cats.offsets.to_numpy()
    value_offsets = cats.items.offsets.to_numpy()
    row_offsets = value_offsets[entry_offsets].astype(np.int32)
    cat_values = cats.items.values.to_numpy().astype(np.int64)
    cat_list = pa.ListArray.from_arrays(pa.array(row_offsets - row_offsets[0]),
                                        pa.array(cat_values[row_offsets[0]:row_offsets[-1]]))
    user = table.column("user_id").to_numpy() % BUCKETS["user"]
    user_list = pa.ListArray.from_arrays(pa.array(np.arange(rows + 1, dtype=np.int32)),
                                         pa.array(user))
    out = pa.table({"items": hashed, "cats": cat_list, "user": user_list,
                    "label": table.column("label")})
    pq.write_table(out, path, row_group_size=ROW_GROUP_ROWS, compression="zstd")
    lengths = {f: np.diff(out.column(f).combine_chunks().offsets.to_numpy()) for f in FEATURES}
    return {"rows": rows, "row_group_rows": ROW_GROUP_ROWS, "file_bytes": path.stat().st_size,
            "values_per_row": {f: float(n.mean()) for f, n in lengths.items()},
            "p99_length": {f: int(np.percentile(n, 99)) for f, n in lengths.items()},
            "max_length": {f: int(n.max()) for f, n in lengths.items()},
            "vocab": BUCKETS, "generator": "data/make_sample.py make_table(rows, seed=0)"}


# ----------------------------------------------------------------------------- model
def make_model(torch: Any, padded: bool) -> tuple[Any, Any]:
    class Model(torch.nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            # padded input: id 0 is padding, real ids are shifted by one
            self.bags = torch.nn.ModuleList(
                torch.nn.EmbeddingBag(BUCKETS[f] + padded, DIM, mode="sum", sparse=True,
                                      padding_idx=0 if padded else None) for f in FEATURES)
            self.top = torch.nn.Linear(DIM * len(FEATURES), 1)

        def forward(self, inputs: list[tuple[Any, Any]]) -> Any:
            pooled = [bag(ids, offsets) for bag, (ids, offsets) in zip(self.bags, inputs,
                                                                       strict=True)]
            return self.top(torch.cat(pooled, dim=1)).squeeze(1)

    torch.manual_seed(0)
    model = Model()
    return model, torch.optim.SGD(model.parameters(), lr=0.05)


def train(torch: Any, batches: Any, to_inputs: Any, padded: bool) -> dict[str, Any]:
    """Run one epoch; time ``next()`` (waiting for data) apart from the step."""
    model, optimizer = make_model(torch, padded)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    wait = 0.0
    steps: list[float] = []
    rows = 0
    it = iter(batches)
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            wait += time.perf_counter() - t0
            break
        t1 = time.perf_counter()
        wait += t1 - t0
        inputs, label = to_inputs(batch)
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), label)
        loss.backward()
        optimizer.step()
        steps.append(time.perf_counter() - t1)
        rows += len(label)
    total = time.perf_counter() - start
    return {"rows": rows, "batches": len(steps), "seconds": total,
            "rows_per_s": rows / total, "batches_per_s": len(steps) / total,
            "wait_s": wait, "wait_fraction": wait / total,
            "step_ms_median": 1e3 * float(np.median(steps)) if steps else None,
            "step_ms_mean": 1e3 * float(np.mean(steps)) if steps else None}


# ----------------------------------------------------------------------------- runs
def run_arrow_sparse(torch: Any, path: str, batch_size: int, workers: int) -> dict[str, Any]:
    from arrow_sparse.interop.torch_data import SparseDataset, make_loader

    data = SparseDataset(path, features=FEATURES, dense=["label"], batch_size=batch_size,
                         output="torchrec", prefetch=2)
    loader = make_loader(data, num_workers=workers)
    k = len(FEATURES)

    def to_inputs(batch: Any) -> tuple[list[tuple[Any, Any]], Any]:
        kjt = batch.features
        values, lengths = (kjt.values, kjt.lengths) if isinstance(kjt, tuple) else \
            (kjt.values(), kjt.lengths())
        rows = batch.num_rows
        per_key = lengths.view(k, rows)
        offsets = torch.zeros(k * rows + 1, dtype=torch.int64)
        torch.cumsum(lengths, 0, out=offsets[1:])
        inputs = []
        for i in range(k):
            lo, hi = int(offsets[i * rows]), int(offsets[(i + 1) * rows])
            starts = offsets[i * rows:(i + 1) * rows] - lo
            inputs.append((values[lo:hi], starts))
        del per_key
        return inputs, batch.dense["label"].float()

    return train(torch, loader, to_inputs, padded=False)


def plain_dataset(torch: Any, path: str, batch_size: int) -> Any:
    import pyarrow.parquet as pq

    class PlainParquet(torch.utils.data.IterableDataset):  # type: ignore[misc,name-defined]
        """ParquetFile.iter_batches -> Python lists -> padded tensors (row groups per worker)."""

        def __iter__(self) -> Any:
            info = torch.utils.data.get_worker_info()
            worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
            f = pq.ParquetFile(path)
            groups = [g for g in range(f.num_row_groups) if g % workers == worker]
            for batch in f.iter_batches(batch_size=batch_size, row_groups=groups,
                                        columns=[*FEATURES, "label"]):
                out = {}
                for name in FEATURES:
                    rows = [x or [] for x in batch.column(name).to_pylist()]
                    width = max(1, max(len(r) for r in rows))
                    out[name] = torch.tensor([[i + 1 for i in r] + [0] * (width - len(r))
                                              for r in rows], dtype=torch.int64)
                out["label"] = torch.tensor(batch.column("label").to_pylist(),
                                            dtype=torch.float32)
                yield out

    return PlainParquet()


def run_plain(torch: Any, path: str, batch_size: int, workers: int) -> dict[str, Any]:
    loader = torch.utils.data.DataLoader(plain_dataset(torch, path, batch_size),
                                         batch_size=None, num_workers=workers)

    def to_inputs(batch: Any) -> tuple[list[tuple[Any, Any]], Any]:
        return [(batch[f], None) for f in FEATURES], batch["label"]

    return train(torch, loader, to_inputs, padded=True)


def run_ray(torch: Any, path: str, batch_size: int) -> dict[str, Any]:
    import ray

    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    try:
        ds = ray.data.read_parquet(path).select_columns([*FEATURES, "label"])

        def collate(batch: dict[str, np.ndarray]) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for name in FEATURES:
                rows = [np.asarray(r if r is not None else [], dtype=np.int64)
                        for r in batch[name]]
                lengths = np.fromiter((len(r) for r in rows), np.int64, len(rows))
                starts = np.zeros(len(rows), np.int64)
                np.cumsum(lengths[:-1], out=starts[1:])
                out[name] = (torch.from_numpy(np.concatenate(rows) if rows else
                                              np.zeros(0, np.int64)), torch.from_numpy(starts))
            out["label"] = torch.from_numpy(batch["label"].astype(np.float32))
            return out

        batches = ds.iter_torch_batches(batch_size=batch_size, collate_fn=collate)

        def to_inputs(batch: Any) -> tuple[list[tuple[Any, Any]], Any]:
            return [batch[f] for f in FEATURES], batch["label"]

        return train(torch, batches, to_inputs, padded=False)
    finally:
        ray.shutdown()


def vm_hwm_bytes() -> int:
    """This process's peak resident memory since it started (``VmHWM``).

    Not ``ru_maxrss``: Linux carries the high-water mark of the process that forked
    this one across ``exec``, so it would report the data generator's peak.
    """
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return -1


def one(args: argparse.Namespace) -> None:
    """Run one configuration in this process and print its result as JSON."""
    import torch

    torch.set_num_threads(1)
    if args.method == "arrow_sparse":
        result = run_arrow_sparse(torch, args.path, args.batch_size, args.workers)
    elif args.method == "plain":
        result = run_plain(torch, args.path, args.batch_size, args.workers)
    else:
        result = run_ray(torch, args.path, args.batch_size)
    result["peak_rss_bytes"] = vm_hwm_bytes()
    # a forked worker's high-water mark counts the pages it shares with this process
    result["peak_rss_children_bytes"] = \
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    print("RESULT " + json.dumps(result), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--methods", default="arrow_sparse,plain,ray")
    parser.add_argument("--workers", default="0,1,2")
    parser.add_argument("--output", default=str(_common.RESULTS_DIR / "loader.json"))
    parser.add_argument("--ray-python", default=sys.executable,
                        help="interpreter for the Ray run (its iter_torch_batches imports "
                             "ray.train, which needs pydantic)")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--method", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--num-workers", dest="workers_one", type=int, default=0,
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        args.workers = args.workers_one
        one(args)
        return
    load_before = os.getloadavg()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "clicks.parquet"
        t0 = time.perf_counter()
        # made in a child process, so that the runs do not inherit its memory peak
        made = subprocess.run([sys.executable, "-c", (
            f"import sys, json; sys.path.insert(0, {str(_common.BENCH_DIR)!r}); "
            f"import bench_loader as b; from pathlib import Path; "
            f"print('DATA ' + json.dumps(b.make_data({args.rows}, Path({str(path)!r}))))")],
            capture_output=True, text=True, timeout=3600, check=True)
        data = json.loads([x for x in made.stdout.splitlines() if x.startswith("DATA ")][0][5:])
        data["make_s"] = time.perf_counter() - t0
        print(f"data: {data}", flush=True)
        for method in args.methods.split(","):
            for workers in ([0] if method == "ray" else
                            [int(w) for w in args.workers.split(",")]):
                name = f"{method}, {workers} workers" if method != "ray" else \
                    "ray, iter_torch_batches"
                python = args.ray_python if method == "ray" else sys.executable
                cmd = [python, __file__, "--one", "--method", method, "--path",
                       str(path), "--num-workers", str(workers), "--batch-size",
                       str(args.batch_size)]
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600,
                                      cwd=_common.REPO_ROOT, check=False)
                line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
                if proc.returncode or not line:
                    results[name] = {"error": proc.stderr[-2000:]}
                else:
                    results[name] = json.loads(line[0][len("RESULT "):])
                results[name]["load_avg_after"] = os.getloadavg()
                print(name, json.dumps(results[name])[:400], flush=True)
    rows = []
    for name, r in results.items():
        if "error" in r:
            rows.append([name, "error", "", "", "", "", ""])
            continue
        rows.append([name, f"{r['rows_per_s']:,.0f}", f"{r['batches_per_s']:.1f}",
                     f"{100 * r['wait_fraction']:.0f}%", f"{r['step_ms_median']:.1f}",
                     f"{r['peak_rss_bytes'] / 2**20:,.0f}",
                     f"{r['peak_rss_children_bytes'] / 2**20:,.0f}"])
    table = _common.markdown_table(
        ["loader", "rows/s", "batches/s", "waiting for data", "step ms (median)",
         "peak RSS MiB", "peak worker RSS MiB"], rows)
    print(table)
    payload = {"benchmark": "loader", "date": _common.now_iso(),
               "machine": _common.machine_info(),
               "versions": _common.library_versions(["pyarrow", "torch", "ray", "numpy"]),
               "load_avg_before": load_before, "load_avg_after": os.getloadavg(),
               "batch_size": args.batch_size, "data": data,
               "notes": ("one epoch per configuration, each in its own process; torch uses "
                         "1 intra-op thread; the machine has 2 cores shared with other "
                         "work (see load averages); plain pads its batches, so its step "
                         "pools padding too"),
               "python": {"loaders": sys.executable, "ray": args.ray_python},
               "results": results, "table": table}
    _common.write_json(args.output, payload)


if __name__ == "__main__":
    main()
