"""Arrow Flight throughput on loopback: serve_flight to readers in other processes.

Run from the repository root::

    python benchmarks/bench_flight.py                     # ~530 MB table, 3 repeats
    python benchmarks/bench_flight.py --rows 400000       # smoke run (~53 MB)
    python benchmarks/bench_flight.py --json /tmp/flight.json

A server process builds a deterministic table (a ``list<int64>`` id column with 0-30
ids per row, mean 15, and a float64 label; 4M rows is ~530 MB of Arrow buffers) and
serves it twice: with ``arrow_sparse.io.serve_flight`` (``batch_rows`` rows per batch)
and, as the baseline, with a plain ``pyarrow.flight`` server returning
``RecordBatchStream(table)`` of the same batches. Reader processes then read it over
``grpc://127.0.0.1`` with ``arrow_sparse.io.flight_batches`` (the baseline with
``FlightClient.do_get``) and time from the request to the last batch: one reader of the
whole stream, and two readers of ``shard=0/2`` and ``shard=1/2`` at once (aggregate
MB/s = all bytes / the slower reader's time). MB is 10**6 bytes of Arrow buffers
received. Results go to ``benchmarks/results/flight.json`` by default.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

SCRIPT = str(Path(__file__).resolve())


def make_table(rows: int, seed: int = 0) -> Any:
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 31, rows)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    ids = pa.ListArray.from_arrays(pa.array(offsets), pa.array(rng.integers(0, 1 << 40,
                                                                            offsets[-1])))
    return pa.table({"ids": ids, "label": pa.array(rng.random(rows))})


def serve(rows: int, batch_rows: int) -> None:
    """Server process: print the two ports, serve until standard input closes."""
    import pyarrow as pa
    import pyarrow.flight as fl

    import arrow_sparse as asp

    table = make_table(rows)
    batches = table.to_batches(max_chunksize=batch_rows)

    class Plain(fl.FlightServerBase):  # type: ignore[misc]
        def do_get(self, context: Any, ticket: Any) -> Any:
            return fl.RecordBatchStream(pa.Table.from_batches(batches, table.schema))

    plain = Plain("grpc://127.0.0.1:0")
    server = asp.io.serve_flight(table, "grpc://127.0.0.1:0", batch_rows=batch_rows)
    print(json.dumps({"asp": server.location, "plain": f"grpc://127.0.0.1:{plain.port}",
                      "nbytes": table.nbytes, "rows": table.num_rows,
                      "batches": len(batches)}), flush=True)
    sys.stdin.read()  # until the parent closes the pipe (or dies)
    server.shutdown()
    plain.shutdown()


def read(kind: str, location: str, ticket: str) -> None:
    """Reader process: time one stream, print bytes, rows, batches and seconds."""
    import pyarrow.flight as fl

    import arrow_sparse as asp

    nbytes = rows = batches = 0
    start = time.perf_counter()
    if kind == "asp":
        stream: Any = asp.io.flight_batches(location, ticket, timeout=60)
        for batch in stream:
            nbytes += batch.nbytes
            rows += batch.num_rows
            batches += 1
    else:
        client = fl.connect(location)
        for chunk in client.do_get(fl.Ticket(ticket.encode()),
                                   options=fl.FlightCallOptions(timeout=600)):
            nbytes += chunk.data.nbytes
            rows += chunk.data.num_rows
            batches += 1
        client.close()
    seconds = time.perf_counter() - start
    print(json.dumps({"nbytes": nbytes, "rows": rows, "batches": batches,
                      "seconds": seconds}), flush=True)


def run_readers(kind: str, location: str, tickets: list[str]) -> list[dict[str, Any]]:
    procs = [subprocess.Popen([sys.executable, SCRIPT, "--read", kind, location, t],
                              stdout=subprocess.PIPE, text=True) for t in tickets]
    out = []
    for p in procs:
        stdout, _ = p.communicate(timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"reader {p.args} failed ({p.returncode})")
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--batch-rows", type=int, default=65_536)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=str(C.RESULTS_DIR / "flight.json"))
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--read", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.rows, args.batch_rows)
        return
    if args.read:
        read(*args.read)
        return

    server = subprocess.Popen([sys.executable, SCRIPT, "--serve", "--rows", str(args.rows),
                               "--batch-rows", str(args.batch_rows)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        info = json.loads(server.stdout.readline())
        print(f"table: {info['rows']:,} rows, {info['nbytes'] / 1e6:.0f} MB in "
              f"{info['batches']} batches of <= {args.batch_rows:,} rows; "
              f"{C.usable_cores()} cores")
        cases = {
            "serve_flight, 1 reader": ("asp", info["asp"], ["shard=0/1"]),
            "serve_flight, 2 readers (shard=i/2)": ("asp", info["asp"],
                                                     ["shard=0/2", "shard=1/2"]),
            "pyarrow RecordBatchStream, 1 reader": ("plain", info["plain"], ["all"]),
        }
        results: dict[str, Any] = {}
        rows = []
        for name, (kind, location, tickets) in cases.items():
            run_readers(kind, location, tickets)  # warm-up
            runs = []
            for _ in range(args.repeat):
                got = run_readers(kind, location, tickets)
                total = sum(r["nbytes"] for r in got)
                assert sum(r["rows"] for r in got) == info["rows"], got
                seconds = max(r["seconds"] for r in got)
                runs.append({"mb_per_s": total / 1e6 / seconds, "seconds": seconds,
                             "nbytes": total, "readers": got})
            best = max(r["mb_per_s"] for r in runs)
            median = statistics.median(r["mb_per_s"] for r in runs)
            results[name] = {"best_mb_per_s": best, "median_mb_per_s": median, "runs": runs}
            rows.append([name, f"{best:,.0f}", f"{median:,.0f}",
                         f"{min(r['seconds'] for r in runs):.2f}"])
        print(C.markdown_table(["case", "best MB/s", "median MB/s", "best s"], rows))
        payload = {"benchmark": "flight", "date": C.now_iso(), "machine": C.machine_info(),
                   "source": C.source_state(),
                   "versions": C.library_versions(["pyarrow", "arrow_sparse"]),
                   "table": {**info, "batch_rows": args.batch_rows}, "results": results}
        print("wrote", C.write_json(args.json, payload))
    finally:
        if server.stdin is not None:
            server.stdin.close()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
