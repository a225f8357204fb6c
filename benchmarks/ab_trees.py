"""Warm A/B of two source trees of arrow_sparse on the same workloads, robust to load.

Usage::

    git archive <ref> arrow_sparse | tar -x -C /tmp/ab-ref        # the "main" tree
    python benchmarks/ab_trees.py --main /tmp/ab-ref               # this tree is "branch"
    python benchmarks/ab_trees.py --main /tmp/ab-ref --only pad,mul --rounds 7

Each side runs in a fresh interpreter (``sys.path[0]`` = its tree, which must hold an
``arrow_sparse`` package) that builds the same data from the same seed, calls each
workload once untimed (compiling it, or loading it from that tree's warm Numba cache),
then ``--repeat`` timed calls, and prints the best time per workload. The sides
alternate, ``main, branch, main, branch, ...``, for ``--rounds`` rounds per thread
setting (the default Numba thread count, and ``NUMBA_NUM_THREADS=1``, which isolates
code generation from threading). Every side is first run once untimed so both Numba
caches are warm. Per workload the minimum over the rounds is kept on each side, and
``branch / main`` is reported: on a shared machine another process can only make a
call slower, so the minimum of alternating runs is the figure that holds up under load.
Both the wall time and the CPU time of the process (``time.process_time``: every
thread's user + system time) are kept: on a machine whose load is several times its
cores a short call's wall time mostly measures when it was scheduled, its CPU time much
less, so the CPU ratio is the one to read there (with one thread it is the work done;
with several, the work summed over threads, so a spinning thread pool adds to it).
``os.getloadavg()`` is recorded before every subprocess.

Both trees' results must agree: each call's result is reduced to a checksum, and a
workload whose checksums differ between the trees is reported (``checks_agree``).

Workloads cover the kernel families: segment reductions (sorted, unsorted, 2-D, bags),
elementwise (padding, jagged x dense, softmax, cumsum, unique), transforms (hash,
categorify, fit), padding, embedding (lookup, backward, optimizers), sparse (COO to
CSR, SpMM, masked sum) and keyed (block bucketize). Data: recommender-shaped rows
(geometric lengths, mean 20, 20% empty; Zipf ids), sizes scaled by ``--scale``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

SEED = 20240601


# ------------------------------------------------------------------------ data
def build(scale: float) -> dict[str, Any]:
    """Every workload's inputs (numpy / pyarrow only), deterministic in ``SEED``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = C.rng_for(SEED, "ab_trees")
    d: dict[str, Any] = {}
    rows = max(100, int(1_000_000 * scale))
    lengths = C.geometric_lengths(rng, rows)
    offsets = C.offsets_from_lengths(lengths)
    n = int(offsets[-1])
    d.update(rows=rows, lengths=lengths, offsets=offsets,
             values=rng.random(n, dtype=np.float32),
             seg_ids=C.segment_ids_from_lengths(lengths))
    d["arrow"] = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)),
                                          pa.array(d["values"]))
    d["shuffled_ids"] = rng.permutation(d["seg_ids"])
    d["max_length"] = 40
    d["dense"] = rng.random((rows, d["max_length"]), dtype=np.float32)
    d["ints"] = rng.integers(0, 50, size=n).astype(np.int64)

    rows2 = max(10, int(100_000 * scale))
    lengths2 = C.geometric_lengths(rng, rows2)
    d["offsets2"] = C.offsets_from_lengths(lengths2)
    d["values2"] = rng.random((int(d["offsets2"][-1]), 64), dtype=np.float32)

    vocab = max(1000, int(1_000_000 * scale))
    bags = max(10, int(200_000 * scale))
    bl = C.geometric_lengths(rng, bags)
    d["table"] = (0.01 * rng.standard_normal((vocab, 64))).astype(np.float32)
    d["bag_offsets"] = C.offsets_from_lengths(bl)
    d["bag_ids"] = C.zipf_ids(rng, int(bl.sum()), vocab)
    d["bag_weights"] = rng.random(len(d["bag_ids"]), dtype=np.float32)
    d["bag_seg"] = C.segment_ids_from_lengths(bl)
    d["bag_seg_shuffled"] = rng.permutation(d["bag_seg"])
    d["dy"] = rng.standard_normal((bags, 64)).astype(np.float32)

    trows = max(100, int(200_000 * scale))
    tl = C.geometric_lengths(rng, trows)
    toff = C.offsets_from_lengths(tl, np.int32)
    tids = C.zipf_ids(rng, int(tl.sum()), 1_000_000)
    d["t_ints"] = pa.ListArray.from_arrays(pa.array(toff), pa.array(tids))
    tokens = pc.binary_join_element_wise("item_", pc.cast(pa.array(tids), pa.string()), "")
    d["t_strings"] = pa.ListArray.from_arrays(pa.array(toff), tokens)

    nnz = max(1000, int(1_000_000 * scale))
    side = max(100, int(100_000 * scale))
    d["coo"] = (np.stack([rng.integers(0, side, nnz), rng.integers(0, side, nnz)]),
                rng.random(nnz), (side, side))
    d["spmm_dense"] = rng.random((side, 16), dtype=np.float32)
    d["mask_coo"] = np.stack([rng.integers(0, side, nnz), rng.integers(0, side, nnz)])

    krows = max(100, int(200_000 * scale))
    kl = [C.geometric_lengths(rng, krows, 5.0) for _ in range(2)]
    d["keyed"] = {f"f{k}": (C.offsets_from_lengths(ln),
                            rng.integers(0, 1_000_000, int(ln.sum())).astype(np.int64))
                  for k, ln in enumerate(kl)}
    return d


# ------------------------------------------------------------------- workloads
def workloads(d: dict[str, Any]) -> dict[str, tuple[str, Callable[[], Any]]]:
    """``name -> (family, callable)``: public calls only, the same in both trees."""
    import pyarrow as pa

    import arrow_sparse as asp
    from arrow_sparse import embedding as emb

    v, off, arr, L = d["values"], d["offsets"], d["arrow"], d["max_length"]
    table, ids, boff = d["table"], d["bag_ids"], d["bag_offsets"]
    grad = emb.lookup_backward(d["dy"], ids, offsets=boff, mode="sum",
                               num_embeddings=len(table))
    vocab_i = asp.fit_vocabulary(d["t_ints"])
    vocab_s = asp.fit_vocabulary(d["t_strings"])
    coo = asp.SparseCOO(*d["coo"])
    csr = coo.to_csr()
    side = d["coo"][2]
    mask = asp.SparseCOO(d["mask_coo"], np.ones(d["mask_coo"].shape[1], dtype=bool),
                         side).to_csr()
    kj = asp.KeyedJagged.from_dict({k: pa.ListArray.from_arrays(pa.array(o), pa.array(x))
                                    for k, (o, x) in d["keyed"].items()})
    state = np.zeros_like(table)
    tab = table.copy()
    lengths32 = d["lengths"].astype(np.int32)

    w: dict[str, tuple[str, Callable[[], Any]]] = {
        "segment_sum_1d(offsets)": ("segment", lambda: asp.segment_sum(v, offsets=off)),
        "segment_sum_1d(arrow)": ("segment", lambda: asp.segment_sum(arr)),
        "segment_sum_1d(lengths int32)": ("segment",
                                          lambda: asp.segment_sum(v, lengths=lengths32)),
        "segment_sum_1d(segment_ids)": ("segment",
                                        lambda: asp.segment_sum(v, segment_ids=d["seg_ids"])),
        "segment_mean_1d": ("segment", lambda: asp.segment_mean(v, offsets=off)),
        "segment_max_1d": ("segment", lambda: asp.segment_max(v, offsets=off)),
        "segment_max_1d(arrow)": ("segment", lambda: asp.segment_max(arr)),
        "segment_argmax_1d": ("segment", lambda: asp.segment_argmax(v, offsets=off)),
        "segment_logsumexp_1d": ("segment", lambda: asp.segment_logsumexp(v, offsets=off)),
        "unsorted_segment_sum": ("segment", lambda: asp.unsorted_segment_sum(
            v, d["shuffled_ids"], d["rows"])),
        "unsorted_segment_max": ("segment", lambda: asp.unsorted_segment_max(
            v, d["shuffled_ids"], d["rows"])),
        "segment_sum_2d": ("segment", lambda: asp.segment_sum(d["values2"],
                                                              offsets=d["offsets2"])),
        "segment_max_2d": ("segment", lambda: asp.segment_max(d["values2"],
                                                              offsets=d["offsets2"])),
        "embedding_bag(sum)": ("segment", lambda: asp.embedding_bag(table, ids, offsets=boff)),
        "embedding_bag(weighted)": ("segment", lambda: asp.embedding_bag(
            table, ids, offsets=boff, per_sample_weights=d["bag_weights"])),
        "sparse_segment_sum": ("segment", lambda: asp.sparse_segment_sum(
            table, ids, segment_ids=d["bag_seg"])),
        "sparse_unsorted_segment_sum": ("segment", lambda: asp.sparse_unsorted_segment_sum(
            table, ids, d["bag_seg_shuffled"], len(boff) - 1)),
        "jagged_to_padded_dense": ("elementwise", lambda: asp.jagged_to_padded_dense(
            v, [off], [L])),
        "jagged_to_padded_dense(arrow)": ("elementwise", lambda: asp.jagged_to_padded_dense(
            arr, None, [L])),
        "jagged_dense_elementwise_mul": ("elementwise", lambda: asp.jagged_dense_elementwise_mul(
            v, [off], d["dense"])),
        "jagged_dense_elementwise_add_jagged_output": (
            "elementwise", lambda: asp.jagged_dense_elementwise_add_jagged_output(
                v, [off], d["dense"])),
        "dense_to_jagged": ("elementwise", lambda: asp.dense_to_jagged(d["dense"], [off])),
        "segment_softmax": ("elementwise", lambda: asp.segment_softmax(v, offsets=off)),
        "segment_softmax(arrow)": ("elementwise", lambda: asp.segment_softmax(arr)),
        "segment_cumsum": ("elementwise", lambda: asp.segment_cumsum(v, offsets=off)),
        "jagged_unique": ("elementwise", lambda: asp.jagged_unique(d["ints"], offsets=off)),
        "pad_or_truncate(arrow)": ("padding", lambda: asp.pad_or_truncate(arr, 16)),
        "truncate": ("padding", lambda: asp.truncate(v, 8, offsets=off)),
        "hash_bucket(int64)": ("transforms", lambda: asp.hash_bucket(d["t_ints"], 1 << 20)),
        "hash_bucket(string)": ("transforms", lambda: asp.hash_bucket(d["t_strings"], 1 << 20)),
        "categorify(int64)": ("transforms", lambda: asp.categorify(d["t_ints"], vocab_i)),
        "categorify(string)": ("transforms", lambda: asp.categorify(d["t_strings"], vocab_s)),
        "fit_vocabulary(int64)": ("transforms", lambda: asp.fit_vocabulary(d["t_ints"])),
        "fit_vocabulary(string)": ("transforms", lambda: asp.fit_vocabulary(d["t_strings"])),
        "embedding.lookup": ("embedding", lambda: emb.lookup(table, ids, offsets=boff)),
        "embedding.lookup_backward": ("embedding", lambda: emb.lookup_backward(
            d["dy"], ids, offsets=boff, mode="sum", num_embeddings=len(table))),
        "embedding.sgd": ("embedding", lambda: emb.sgd(tab, grad, 0.0)),
        "embedding.adagrad": ("embedding", lambda: emb.adagrad(tab, state, grad, 0.0)),
        "sparse.coo_to_csr": ("sparse", lambda: coo.to_csr()),
        "sparse.csr_transpose_to_csr": ("sparse", lambda: csr.T.to_csr()),
        "sparse.csr_spmm_16": ("sparse", lambda: csr @ d["spmm_dense"]),
        "sparse.csr_to_dense_rows": ("sparse", lambda: csr.sum(1)),
        "sparse.masked_sum": ("sparse", lambda: asp.masked.sum(csr, 1, mask=mask)),
        "keyed.block_bucketize": ("keyed", lambda: kj.block_bucketize([250_000, 250_000], 4)),
    }
    return w


def _finite_sum(x: Any) -> float:
    a = np.asarray(x, dtype=np.float64)
    return float(a[np.isfinite(a)].sum())


def checksum(x: Any) -> float | None:
    """A float summary of a result, to compare the two trees' answers."""
    try:
        import pyarrow as pa

        if x is None:
            return 0.0
        if isinstance(x, (tuple, list)):
            return float(sum(checksum(y) or 0.0 for y in x))
        if isinstance(x, (pa.ChunkedArray, pa.Array)):
            x = pa.concat_arrays(x.chunks) if isinstance(x, pa.ChunkedArray) else x
            while pa.types.is_list(x.type) or pa.types.is_large_list(x.type):
                x = x.flatten()
            return _finite_sum(x.to_numpy(zero_copy_only=False))
        for attr in ("values", "data"):
            inner = getattr(x, attr, None)
            if inner is not None and not callable(inner):
                return checksum(inner)
        if hasattr(x, "to_dense") and hasattr(x, "nnz"):
            return checksum(x.values)
        arr = np.asarray(x)
        if arr.dtype == object:
            return None
        return _finite_sum(arr)
    except Exception:  # noqa: BLE001 - a result this cannot read is not compared
        return None


def worker(tree: str, scale: float, repeat: int, only: set[str]) -> dict[str, Any]:
    """Time every workload in this interpreter (its ``arrow_sparse`` comes from ``tree``)."""
    import arrow_sparse

    where = str(Path(arrow_sparse.__file__).resolve())
    if not where.startswith(str(Path(tree).resolve())):
        raise SystemExit(f"arrow_sparse imported from {where}, not from {tree}")
    d = build(scale)
    out: dict[str, Any] = {"arrow_sparse": where, "best_s": {}, "best_cpu_s": {},
                           "checksum": {}, "family": {}}
    for name, (family, fn) in workloads(d).items():
        if only and name not in only:
            continue
        out["family"][name] = family
        out["checksum"][name] = checksum(fn())
        gc.collect()
        gc.disable()
        best = best_cpu = float("inf")
        for _ in range(repeat):
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            t1, c1 = time.perf_counter(), time.process_time()
            best, best_cpu = min(best, t1 - t0), min(best_cpu, c1 - c0)
        gc.enable()
        out["best_s"][name] = best
        out["best_cpu_s"][name] = best_cpu
    return out


# ---------------------------------------------------------------------- driver
def run_side(tree: str, threads: int | None, args: argparse.Namespace) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("NUMBA_NUM_THREADS", None)
    if threads is not None:
        env["NUMBA_NUM_THREADS"] = str(threads)
    env["PYTHONPATH"] = tree
    cmd = [sys.executable, __file__, "--worker", tree, "--scale", str(args.scale),
           "--repeat", str(args.repeat), "--only", args.only]
    load = os.getloadavg()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"worker for {tree} failed:\n{proc.stderr[-4000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["loadavg_before"] = list(load)
    res["wall_s"] = time.perf_counter() - t0
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--main", help="the reference tree (holds arrow_sparse/)")
    ap.add_argument("--branch", default=str(C.REPO_ROOT), help="default: this tree")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5, help="timed calls per subprocess")
    ap.add_argument("--scale", type=float, default=0.2)
    ap.add_argument("--threads", default="default,1",
                    help="comma-separated: 'default' (Numba's count) and/or numbers")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--json", default="", help="write the results here")
    ap.add_argument("--worker", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    if args.worker:
        print(json.dumps(worker(args.worker, args.scale, args.repeat, only)))
        return 0
    if not args.main:
        ap.error("--main is required")
    trees = {"main": str(Path(args.main).resolve()), "branch": str(Path(args.branch).resolve())}
    settings = [None if t == "default" else int(t) for t in args.threads.split(",") if t]
    payload: dict[str, Any] = {
        "benchmark": "ab_trees", "date": C.now_iso(), "machine": C.machine_info(),
        "config": {"scale": args.scale, "rounds": args.rounds, "repeat": args.repeat,
                   "seed": SEED, "trees": trees, "order": "main, branch alternating"},
        "source": C.source_state(), "settings": {}}
    for threads in settings:
        label = "default" if threads is None else str(threads)
        for side, tree in trees.items():  # warm both Numba caches, untimed
            run_side(tree, threads, args)
            print(f"# threads={label}: warmed {side}", file=sys.stderr, flush=True)
        rounds: list[dict[str, Any]] = []
        for r in range(args.rounds):
            one = {side: run_side(tree, threads, args) for side, tree in trees.items()}
            rounds.append(one)
            print(f"# threads={label} round {r + 1}/{args.rounds} load "
                  f"{one['main']['loadavg_before'][0]:.2f}/"
                  f"{one['branch']['loadavg_before'][0]:.2f}", file=sys.stderr, flush=True)
        names = list(rounds[0]["main"]["best_s"])
        rows = []
        for name in names:
            m = min(rd["main"]["best_s"][name] for rd in rounds)
            b = min(rd["branch"]["best_s"][name] for rd in rounds)
            cm, cb = rounds[0]["main"]["checksum"][name], rounds[0]["branch"]["checksum"][name]
            agree = None if cm is None or cb is None else bool(
                np.isclose(cm, cb, rtol=1e-5, atol=1e-6))
            mc = min(rd["main"]["best_cpu_s"][name] for rd in rounds)
            bc = min(rd["branch"]["best_cpu_s"][name] for rd in rounds)
            rows.append({"workload": name, "family": rounds[0]["main"]["family"][name],
                         "main_cpu_s": mc, "branch_cpu_s": bc,
                         "cpu_branch_over_main": bc / mc if mc > 0 else None,
                         "main_s": m, "branch_s": b, "branch_over_main": b / m,
                         "checks_agree": agree,
                         "main_rounds_s": [rd["main"]["best_s"][name] for rd in rounds],
                         "branch_rounds_s": [rd["branch"]["best_s"][name] for rd in rounds],
                         "main_rounds_cpu_s": [rd["main"]["best_cpu_s"][name] for rd in rounds],
                         "branch_rounds_cpu_s": [rd["branch"]["best_cpu_s"][name]
                                                 for rd in rounds]})
        payload["settings"][label] = {
            "numba_num_threads": label, "rows": rows,
            "loadavg_per_round": [{s: rd[s]["loadavg_before"] for s in trees} for rd in rounds]}
        print(f"\n### threads = {label}: branch / main, min of {args.rounds} alternating rounds")
        print(C.markdown_table(
            ["workload", "main CPU ms", "branch CPU ms", "CPU ratio", "main ms", "branch ms",
             "wall ratio", "agree"],
            [[x["workload"], C.fmt_ms(x["main_cpu_s"]), C.fmt_ms(x["branch_cpu_s"]),
              C.fmt_num(x["cpu_branch_over_main"]), C.fmt_ms(x["main_s"]),
              C.fmt_ms(x["branch_s"]), f"{x['branch_over_main']:.2f}", x["checks_agree"]]
             for x in rows]), flush=True)
    if args.json:
        C.write_json(args.json, payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
