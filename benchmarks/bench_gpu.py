"""GPU: every kernel family of arrow_sparse against torch CUDA, on skewed recommender data.

Run from the repository root on a machine with a CUDA device and CuPy (benchmarks/
gpu_check.sh runs it after the gpu tests, in one call)::

    python benchmarks/bench_gpu.py                       # scale 1, 5 repeats
    python benchmarks/bench_gpu.py --scale 0.1           # smoke run
    python benchmarks/bench_gpu.py --only train_step_sgd,embedding_bag_4k --json /tmp/g.json

Without CuPy or without a device it prints ``bench_gpu: skipped: <reason>`` and exits
with status 0, so it can sit in any CI job. ``--emulate`` runs every workload on the
stand-in CuPy and CUDA emulator of ``tests/cuda_emu`` and torch on the CPU: a check of
this script and of the results without a GPU (use a tiny ``--scale``; its times mean
nothing).

Data (float32 values, int64 ids and offsets) has the shape of real recommender data:
ids are Zipf over the table with hot rows scattered over it, and bag/row lengths are
heavy-tailed (geometric with mean ~14, 3% drawn from a Pareto tail capped at 2,000:
mean ~20, p99 ~150-190, max 2,000), so a kernel that splits work by rows or runs
instead of by elements shows it. Workloads (sizes at ``--scale 1``):

* ``segment_sum_1d``: 4M rows, ~80M values; torch ``segment_reduce``;
* ``segment_sum_2d``: 100k rows of ``[~2M, 64]`` values; torch ``segment_reduce(axis=0)``;
* ``unsorted_segment_sum``: 40M values, Zipf(1.2) ids over 1M segments; torch
  ``index_add_``;
* ``embedding_bag_200k_{sum,mean,weighted}``: ``[1M, 64]`` table, 200k bags, Zipf(1.1)
  ids; torch ``F.embedding_bag`` (``per_sample_weights`` for weighted);
* ``embedding_bag_4k``: the same table, 4,096 bags (host-bound: see host us);
* ``train_step_{sgd,adagrad}``: 4,096 bags of ~20 Zipf(1.1) ids on the same table:
  ``asp.embedding.train_step`` (forward, backward, update), the unfused sequence
  ``lookup`` + ``lookup_backward`` + ``sgd`` / ``adagrad``, and torch
  ``EmbeddingBag(sparse=True)`` + ``optim.SGD`` / ``optim.Adagrad``;
* ``jagged_to_padded_dense``: 2M rows padded to 64; torch nested ``to_padded_tensor``;
* ``hash_bucket``: a list<int64> of ~20M values (no torch op);
* ``coo_to_csr``: 20M distinct entries of a ``[2M, 500k]`` COO to CSR; torch
  ``coalesce().to_sparse_csr()``;
* ``masked_sum_csr``: row sums of a ``[2M, 500k]`` CSR of ~20M entries under a sparse
  mask of the same pattern (``asp.masked.sum(csr, 1, mask=...)``); torch
  ``segment_reduce`` over the masked values by row.

Every implementation's first result is checked against a float64 numpy reference (or
the CPU's own result); then ``cupyx.profiler.benchmark`` times ``--repeat`` calls:
device time (CUDA events around each call) and host time per call (the wall time the
call takes on the host; torch's kernels run on the same legacy default stream as
CuPy's). GB/s counts the bytes a kernel must move by design (inputs read once, outputs
written once; a gathered row counts once per id) over the best device time, and
``of copy`` divides it by the device's copy bandwidth (read + write of a 1 GiB
``cupy`` copy), as benchmarks/README.md counts it for the CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
import numpy as np  # noqa: E402

WORKLOADS = ("segment_sum_1d", "segment_sum_2d", "unsorted_segment_sum",
             "embedding_bag_200k_sum", "embedding_bag_200k_mean",
             "embedding_bag_200k_weighted", "embedding_bag_4k", "train_step_sgd",
             "train_step_adagrad", "jagged_to_padded_dense", "hash_bucket", "coo_to_csr",
             "masked_sum_csr")
DIM = 64
PAD_LENGTH = 64
LR = 0.01


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


def heavy_tailed_lengths(rng: np.random.Generator, rows: int) -> np.ndarray:
    """Row lengths >= 1: geometric (mean 14), 3% from a Pareto tail capped at 2,000."""
    lengths = rng.geometric(1.0 / 14.0, size=rows).astype(np.int64)
    tail = rng.random(rows) < 0.03
    lengths[tail] = np.minimum(2000, (50 * (1 + rng.pareto(1.2, int(tail.sum())))).astype(
        np.int64))
    return lengths


@dataclass
class Impl:
    """One implementation of a workload: ``run()`` returns its result (on the device)."""

    name: str
    run: Callable[[], Any]
    note: str = ""
    #: A fresh start before the checked call (training steps restore their tables).
    reset: Callable[[], None] | None = None


@dataclass
class Workload:
    """Sizes, the bytes moved by design, the reference and the implementations."""

    info: dict[str, Any]
    nbytes: int
    ref: np.ndarray
    impls: list[Impl]
    rtol: float = 1e-4
    atol: float = 1e-5


class Runner:
    """The device and its timer: cupyx.profiler.benchmark, or a host clock when emulated."""

    def __init__(self, cupy: Any, torch: Any | None, emulate: bool) -> None:
        self.cp = cupy
        self.torch = torch
        self.emulate = emulate

    def to_torch(self, a: Any) -> Any:
        """A torch tensor sharing the CuPy array (a host copy when emulated)."""
        if self.emulate:
            return self.torch.as_tensor(a.get())
        return self.torch.as_tensor(a, device="cuda")

    def as_numpy(self, x: Any) -> np.ndarray:
        if hasattr(x, "detach"):  # a torch tensor
            return np.asarray(x.detach().cpu().numpy())
        return np.asarray(self.cp.asnumpy(x))

    def sync(self) -> None:
        if self.emulate:
            return
        self.cp.cuda.Device().synchronize()
        if self.torch is not None:
            self.torch.cuda.synchronize()

    def time(self, fn: Callable[[], Any], repeat: int) -> dict[str, Any]:
        """Device and host seconds of ``repeat`` calls (after one warm-up call)."""
        if self.emulate:
            host = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                fn()
                host.append(time.perf_counter() - t0)
            device = host
        else:
            from cupyx.profiler import benchmark

            perf = benchmark(fn, n_repeat=repeat, n_warmup=1)
            host = [float(t) for t in perf.cpu_times]
            device = [float(t) for t in perf.gpu_times[0]]
        return {"device_best_s": min(device), "device_median_s": float(np.median(device)),
                "host_median_s": float(np.median(host)), "device_times_s": device,
                "host_times_s": host}

    def copy_bandwidth(self) -> dict[str, Any]:
        """The device's copy bandwidth: (read + write) bytes of a 1 GiB copy / best time."""
        if self.emulate:
            return {"gbps": float("nan"), "note": "emulated: no device"}
        cp = self.cp
        src = cp.ones(C.GIB // 4, dtype=cp.float32)
        dst = cp.empty_like(src)
        timing = self.time(lambda: cp.copyto(dst, src), 10)
        gbps = C.gbps(2 * src.nbytes, timing["device_best_s"])
        return {"gbps": gbps, "buffer_bytes": C.GIB, "best_s": timing["device_best_s"],
                "note": "GB/s = (bytes read + bytes written) / best device time"}


class Bench:
    """The workloads: data made on the host, moved to the device once."""

    def __init__(self, runner: Runner, scale: float, seed: int) -> None:
        import arrow_sparse

        self.r = runner
        self.cp = runner.cp
        self.torch = runner.torch
        self.scale = scale
        self.seed = seed
        self.asp = arrow_sparse
        self._tables: dict[str, np.ndarray] = {}
        self._coo_cache: dict[str, Any] = {}

    def n(self, full: int) -> int:
        return max(1, int(full * self.scale))

    def rng(self, *names: str) -> np.random.Generator:
        return C.rng_for(self.seed, *names)

    def t(self, a: Any) -> Any:
        return self.r.to_torch(a)

    def table(self) -> np.ndarray:
        """The ``[1M * scale, 64]`` float32 embedding table, made once."""
        if "table" not in self._tables:
            self._tables["table"] = self.rng("table").random((self.n(1_000_000), DIM),
                                                            dtype=np.float32)
        return self._tables["table"]

    # ------------------------------------------------------------------ segments
    def segment_sum_1d(self) -> Workload:
        cp = self.cp
        lengths = heavy_tailed_lengths(self.rng("seg1d"), self.n(4_000_000))
        lengths[self.rng("seg1d empty").random(len(lengths)) < 0.2] = 0
        offsets = C.offsets_from_lengths(lengths)
        rows, n = len(lengths), int(offsets[-1])
        values = self.rng("seg1d values").random(n, dtype=np.float32)
        ref = np.add.reduceat(np.append(values, 0).astype(np.float64), offsets[:-1])
        ref[lengths == 0] = 0
        d_values, d_offsets = cp.asarray(values), cp.asarray(offsets)
        impls = [Impl("arrow_sparse", lambda: self.asp.segment_sum(d_values, offsets=d_offsets))]
        if self.torch is not None:
            t_values, t_lengths = self.t(d_values), self.t(cp.asarray(lengths))
            impls.append(Impl("torch segment_reduce", lambda: self.torch.segment_reduce(
                t_values, "sum", lengths=t_lengths, unsafe=True)))
        return Workload({"rows": rows, "values": n, "longest_row": int(lengths.max())},
                        n * 4 + (rows + 1) * 8 + rows * 4, ref, impls)

    def segment_sum_2d(self) -> Workload:
        cp = self.cp
        lengths = heavy_tailed_lengths(self.rng("seg2d"), self.n(100_000))
        offsets = C.offsets_from_lengths(lengths)
        rows, n = len(lengths), int(offsets[-1])
        values = self.rng("seg2d values").random((n, DIM), dtype=np.float32)
        ref = np.add.reduceat(np.vstack([values, np.zeros((1, DIM), np.float32)]).astype(
            np.float64), offsets[:-1], axis=0)
        d_values, d_offsets = cp.asarray(values), cp.asarray(offsets)
        impls = [Impl("arrow_sparse", lambda: self.asp.segment_sum(d_values, offsets=d_offsets))]
        if self.torch is not None:
            t_values, t_lengths = self.t(d_values), self.t(cp.asarray(lengths))
            impls.append(Impl("torch segment_reduce(axis=0)", lambda: self.torch.segment_reduce(
                t_values, "sum", lengths=t_lengths, axis=0, unsafe=True)))
        return Workload({"rows": rows, "values": [n, DIM], "longest_row": int(lengths.max())},
                        n * DIM * 4 + (rows + 1) * 8 + rows * DIM * 4, ref, impls)

    def unsorted_segment_sum(self) -> Workload:
        cp = self.cp
        n, segments = self.n(40_000_000), self.n(1_000_000)
        values = self.rng("unsorted values").random(n, dtype=np.float32)
        ids = C.zipf_ids(self.rng("unsorted ids"), n, segments, exponent=1.2)
        ref = np.bincount(ids, weights=values.astype(np.float64), minlength=segments)
        d_values, d_ids = cp.asarray(values), cp.asarray(ids)
        impls = [Impl("arrow_sparse", lambda: self.asp.unsorted_segment_sum(
            d_values, d_ids, segments))]
        if self.torch is not None:
            t_values, t_ids = self.t(d_values), self.t(d_ids)

            def index_add() -> Any:
                return self.torch.zeros(segments, dtype=t_values.dtype,
                                        device=t_values.device).index_add_(0, t_ids, t_values)

            impls.append(Impl("torch index_add_", index_add))
        hottest = int(np.bincount(ids).max())
        return Workload({"values": n, "segments": segments, "hottest_id_count": hottest},
                        n * 4 + n * 8 + segments * 4, ref, impls, rtol=1e-4, atol=1e-3)

    # ------------------------------------------------------------------ embedding bags
    def _bags(self, name: str, bags: int, exponent: float = 1.1
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lengths = heavy_tailed_lengths(self.rng(name), bags)
        offsets = C.offsets_from_lengths(lengths)
        ids = C.zipf_ids(self.rng(name, "ids"), int(offsets[-1]), len(self.table()),
                         exponent=exponent)
        return lengths, offsets, ids

    def _embedding_bag(self, name: str, bags: int, mode: str, weighted: bool) -> Workload:
        cp = self.cp
        table = self.table()
        lengths, offsets, ids = self._bags(name, bags)
        n = len(ids)
        weights = self.rng(name, "weights").random(n, dtype=np.float32) if weighted else None
        rows = table[ids].astype(np.float64)  # in bag order; every bag has an id
        if weights is not None:
            rows *= weights[:, None]
        ref = np.add.reduceat(rows, offsets[:-1], axis=0)
        del rows
        if mode == "mean":
            ref /= np.maximum(lengths, 1)[:, None]
        d_table, d_ids, d_offsets = cp.asarray(table), cp.asarray(ids), cp.asarray(offsets)
        d_weights = None if weights is None else cp.asarray(weights)
        impls = [Impl("arrow_sparse", lambda: self.asp.embedding_bag(
            d_table, d_ids, offsets=d_offsets, mode=mode, per_sample_weights=d_weights))]
        if self.torch is not None:
            fn = self.torch.nn.functional.embedding_bag
            t_table, t_ids, t_offsets = self.t(d_table), self.t(d_ids), self.t(d_offsets)
            t_weights = None if d_weights is None else self.t(d_weights)
            impls.append(Impl("torch embedding_bag", lambda: fn(
                t_ids, t_table, t_offsets, mode=mode, per_sample_weights=t_weights,
                include_last_offset=True)))
        info = {"bags": bags, "ids": n, "table": [len(table), DIM], "mode": mode,
                "weighted": weighted, "longest_bag": int(lengths.max()),
                "distinct_ids": int(len(np.unique(ids)))}
        nbytes = n * 8 + (bags + 1) * 8 + n * DIM * 4 + bags * DIM * 4 + (n * 4 if weighted
                                                                          else 0)
        return Workload(info, nbytes, ref, impls)

    def embedding_bag_200k_sum(self) -> Workload:
        return self._embedding_bag("bags200k", self.n(200_000), "sum", False)

    def embedding_bag_200k_mean(self) -> Workload:
        return self._embedding_bag("bags200k", self.n(200_000), "mean", False)

    def embedding_bag_200k_weighted(self) -> Workload:
        return self._embedding_bag("bags200k", self.n(200_000), "sum", True)

    def embedding_bag_4k(self) -> Workload:
        return self._embedding_bag("bags4k", 4096, "sum", False)

    # ------------------------------------------------------------------ training steps
    def _train_step(self, optimizer: str) -> Workload:
        cp = self.cp
        table = self.table()
        bags = 4096
        lengths, offsets, ids = self._bags("train", bags)
        dy = self.rng("train dy").standard_normal((bags, DIM)).astype(np.float32)
        seg = C.segment_ids_from_lengths(lengths)
        grad = np.zeros(table.shape)
        np.add.at(grad, ids, dy[seg].astype(np.float64))
        touched = np.unique(ids)
        ref = table.astype(np.float64)
        if optimizer == "sgd":
            ref[touched] -= LR * grad[touched]
        else:
            state = grad[touched] ** 2
            ref[touched] -= LR * grad[touched] / (np.sqrt(state) + 1e-10)
        d_ids, d_offsets, d_dy = cp.asarray(ids), cp.asarray(offsets), cp.asarray(dy)
        emb = self.asp.embedding

        def fresh() -> tuple[Any, Any]:
            return cp.asarray(table), cp.zeros(table.shape, cp.float32)

        fused_t, fused_s = fresh()
        plain_t, plain_s = fresh()

        def restore(t: Any, s: Any) -> Callable[[], None]:
            def run() -> None:
                t[...] = cp.asarray(table)
                s.fill(0)
            return run

        state_arg = {"state": fused_s} if optimizer == "adagrad" else {}

        def fused() -> Any:
            emb.train_step(fused_t, d_ids, lambda y: d_dy, offsets=d_offsets,
                           optimizer=optimizer, lr=LR, **state_arg)
            return fused_t

        def unfused() -> Any:
            emb.lookup(plain_t, d_ids, offsets=d_offsets)
            g = emb.lookup_backward(d_dy, d_ids, offsets=d_offsets,
                                    num_embeddings=len(table))
            if optimizer == "sgd":
                emb.sgd(plain_t, g, LR)
            else:
                emb.adagrad(plain_t, plain_s, g, LR)
            return plain_t

        impls = [Impl("arrow_sparse train_step", fused, "forward + backward + update, fused",
                      restore(fused_t, fused_s)),
                 Impl("arrow_sparse unfused", unfused, "lookup + lookup_backward + " + optimizer,
                      restore(plain_t, plain_s))]
        if self.torch is not None:
            torch = self.torch
            t_ids, t_offsets, t_dy = self.t(d_ids), self.t(d_offsets), self.t(d_dy)
            t_table = self.t(cp.asarray(table))
            module = torch.nn.EmbeddingBag.from_pretrained(
                t_table, freeze=False, mode="sum", sparse=True, include_last_offset=True)
            opt = (torch.optim.SGD(module.parameters(), lr=LR) if optimizer == "sgd" else
                   torch.optim.Adagrad(module.parameters(), lr=LR, eps=1e-10))

            def torch_step() -> Any:
                opt.zero_grad(set_to_none=True)
                module(t_ids, t_offsets).backward(t_dy)
                opt.step()
                return module.weight.detach()

            def torch_restore() -> None:
                with torch.no_grad():
                    module.weight.copy_(t_table)
                for s in opt.state.values():
                    for v in s.values():
                        if torch.is_tensor(v) and v.dim() > 0:
                            v.zero_()

            impls.append(Impl(f"torch EmbeddingBag(sparse=True) + {optimizer}", torch_step,
                              reset=torch_restore))
        n = len(ids)
        unique = len(touched)
        info = {"bags": bags, "ids": n, "distinct_ids": unique, "table": [len(table), DIM],
                "optimizer": optimizer, "longest_bag": int(lengths.max()),
                "hottest_id_count": int(np.bincount(ids).max())}
        state_bytes = unique * DIM * 4 * 2 if optimizer == "adagrad" else 0
        nbytes = (2 * n * 8 + (bags + 1) * 8 + n * DIM * 4 + bags * DIM * 4  # forward
                  + n * DIM * 4 + unique * DIM * 4 * 2 + state_bytes)  # backward + update
        # float32 gradients summed over thousands of ids of a hot row: torch and the
        # unfused path accumulate them in float32 too
        return Workload(info, nbytes, ref, impls, rtol=1e-4, atol=1e-4)

    def train_step_sgd(self) -> Workload:
        return self._train_step("sgd")

    def train_step_adagrad(self) -> Workload:
        return self._train_step("adagrad")

    # ------------------------------------------------------------------ conversions
    def jagged_to_padded_dense(self) -> Workload:
        cp = self.cp
        lengths = heavy_tailed_lengths(self.rng("padded"), self.n(2_000_000))
        offsets = C.offsets_from_lengths(lengths)
        rows, n = len(lengths), int(offsets[-1])
        values = self.rng("padded values").random(n, dtype=np.float32)
        seg = C.segment_ids_from_lengths(lengths)
        pos = np.arange(n) - offsets[seg]
        keep = pos < PAD_LENGTH
        ref = np.zeros((rows, PAD_LENGTH), np.float32)
        ref[seg[keep], pos[keep]] = values[keep]
        d_values, d_offsets = cp.asarray(values), cp.asarray(offsets)
        impls = [Impl("arrow_sparse", lambda: self.asp.jagged_to_padded_dense(
            d_values, [d_offsets], [PAD_LENGTH]))]
        if self.torch is not None and hasattr(self.torch, "nested"):
            t_values, t_offsets = self.t(d_values).reshape(-1, 1), self.t(d_offsets)

            def torch_nested() -> Any:  # pads to the longest row (no truncation), then slices
                nt = self.torch.nested.nested_tensor_from_jagged(t_values, t_offsets)
                return nt.to_padded_tensor(0.0)[:, :PAD_LENGTH, 0]

            impls.append(Impl("torch nested to_padded_tensor", torch_nested,
                              "pads to the longest row, then slices"))
        return Workload({"rows": rows, "values": n, "max_length": PAD_LENGTH},
                        n * 4 + (rows + 1) * 8 + rows * PAD_LENGTH * 4, ref.astype(np.float64),
                        impls)

    def hash_bucket(self) -> Workload:
        cp = self.cp
        lengths = heavy_tailed_lengths(self.rng("hash"), self.n(1_000_000))
        offsets = C.offsets_from_lengths(lengths)
        n = int(offsets[-1])
        values = self.rng("hash values").integers(0, 2**62, size=n, dtype=np.int64)
        host = self.asp.hash_bucket(self.asp.Jagged(values, offsets), 1 << 20)
        ref = np.asarray(host.values, dtype=np.float64)
        jagged = self.asp.Jagged(cp.asarray(values), cp.asarray(offsets))
        impls = [Impl("arrow_sparse", lambda: self.asp.hash_bucket(jagged, 1 << 20).values,
                      "checked bit for bit against the CPU")]
        return Workload({"rows": len(lengths), "values": n, "buckets": 1 << 20},
                        2 * n * 8 + (len(lengths) + 1) * 8, ref, impls, rtol=0, atol=0)

    def _coo(self) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray]:
        """``[2M, 500k] * scale`` with ``20M * scale`` distinct entries in random order."""
        if "coo" not in self._coo_cache:
            self._coo_cache["coo"] = self._make_coo()
        return self._coo_cache["coo"]  # type: ignore[no-any-return]

    def _make_coo(self) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray]:
        rows, cols = self.n(2_000_000), self.n(500_000)
        rng = self.rng("coo")
        want = self.n(20_000_000)
        linear = np.unique(rng.integers(0, rows * cols, size=int(want * 1.01)))[:want]
        linear = rng.permutation(linear)
        values = rng.random(len(linear), dtype=np.float32)
        return rows, cols, linear // cols, linear % cols, values

    def coo_to_csr(self) -> Workload:
        cp = self.cp
        rows, cols, r, c, values = self._coo()
        order = np.lexsort((c, r))
        indptr = C.offsets_from_lengths(np.bincount(r, minlength=rows))
        ref = np.concatenate([indptr, c[order], values[order]]).astype(np.float64)
        nnz = len(values)
        d_idx, d_values = cp.asarray(np.stack([r, c])), cp.asarray(values)
        coo = self.asp.SparseCOO(d_idx, d_values, (rows, cols))

        def ours() -> Any:
            csr = coo.to_csr()
            return cp.concatenate([csr.indptr.astype(cp.float64),
                                   csr.indices.astype(cp.float64),
                                   csr.values.astype(cp.float64)])

        impls = [Impl("arrow_sparse", ours, "result concatenated for the check")]
        if self.torch is not None:
            torch = self.torch
            t_idx, t_values = self.t(d_idx), self.t(d_values)

            def torch_csr() -> Any:
                csr = torch.sparse_coo_tensor(t_idx, t_values, (rows, cols)).coalesce() \
                    .to_sparse_csr()
                return torch.cat([csr.crow_indices().double(), csr.col_indices().double(),
                                  csr.values().double()])

            impls.append(Impl("torch coalesce().to_sparse_csr()", torch_csr,
                              "result concatenated for the check"))
        return Workload({"shape": [rows, cols], "nnz": nnz},
                        nnz * (8 + 8 + 4) + (rows + 1) * 8 + nnz * (8 + 4), ref, impls,
                        rtol=0, atol=0)

    def masked_sum_csr(self) -> Workload:
        cp = self.cp
        rows, cols, r, c, values = self._coo()
        order = np.lexsort((c, r))
        r, c, values = r[order], c[order], values[order]
        mask = self.rng("mask").random(len(values)) < 0.7
        indptr = C.offsets_from_lengths(np.bincount(r, minlength=rows))
        ref = np.bincount(r, weights=np.where(mask, values, 0).astype(np.float64),
                          minlength=rows)
        d_indptr, d_indices = cp.asarray(indptr), cp.asarray(c)
        csr = self.asp.SparseCSR(d_indptr, d_indices, cp.asarray(values), (rows, cols))
        d_mask = self.asp.SparseCSR(d_indptr, d_indices, cp.asarray(mask), (rows, cols))
        impls = [Impl("arrow_sparse", lambda: self.asp.masked.sum(csr, 1, mask=d_mask))]
        if self.torch is not None:
            t_masked = self.t(cp.asarray(np.where(mask, values, 0).astype(np.float32)))
            t_lengths = self.t(cp.asarray(np.diff(indptr)))
            impls.append(Impl("torch segment_reduce of the masked values", lambda:
                              self.torch.segment_reduce(t_masked, "sum", lengths=t_lengths,
                                                        unsafe=True),
                              "masked values made once, outside the timing"))
        nnz = len(values)
        return Workload({"shape": [rows, cols], "nnz": nnz, "masked_in": int(mask.sum())},
                        (rows + 1) * 8 + nnz * (8 + 4 + 1) + rows * 4, ref, impls,
                        rtol=1e-4, atol=1e-3)


def run_workload(bench: Bench, key: str, repeat: int, copy_gbps: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    w: Workload = getattr(bench, key)()
    results: dict[str, Any] = {}
    for impl in w.impls:
        entry: dict[str, Any] = {"note": impl.note} if impl.note else {}
        try:
            if impl.reset is not None:
                impl.reset()
            t1 = time.perf_counter()
            got = impl.run()
            bench.r.sync()
            entry["first_call_s"] = time.perf_counter() - t1  # includes compilation
            entry["check"] = C.check_close(bench.r.as_numpy(got).reshape(w.ref.shape), w.ref,
                                           rtol=w.rtol, atol=w.atol)
            timing = bench.r.time(impl.run, repeat)
            best = timing["device_best_s"]
            entry.update(timing, gbps=C.gbps(w.nbytes, best))
            entry["of_copy"] = entry["gbps"] / copy_gbps if copy_gbps == copy_gbps else None
        except Exception as exc:  # noqa: BLE001 - a failing implementation is recorded
            entry["error"] = f"{type(exc).__name__}: {exc}"[:500]
        results[impl.name] = entry
    ours = results.get(w.impls[0].name, {})
    for name, entry in results.items():  # the peer's time over ours: > 1 means faster
        if name != w.impls[0].name and "device_best_s" in entry and "device_best_s" in ours:
            entry["ratio_peer_over_ours"] = entry["device_best_s"] / ours["device_best_s"]
    return {**w.info, "bytes_by_design": w.nbytes, "seconds": time.perf_counter() - t0,
            "results": results}


@contextlib.contextmanager
def device(emulate: bool) -> Iterator[tuple[Any | None, str]]:
    """``(cupy, "")`` on a usable device (the stand-in CuPy when emulated), else a reason."""
    if not emulate:
        yield device_or_reason()
        return
    repo = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(repo))
    from tests.cuda_emu.fake_cupy import emulated_cupy

    with emulated_cupy(check_orders=()) as cp:
        yield cp, ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default=",".join(WORKLOADS))
    parser.add_argument("--json", default=str(C.RESULTS_DIR / "gpu.json"))
    parser.add_argument("--emulate", action="store_true",
                        help="run on the stand-in CuPy and the CUDA emulator (tests/cuda_emu) "
                             "with torch on the CPU: a check without a GPU, times meaningless")
    args = parser.parse_args(argv)
    keys = [k for k in args.only.split(",") if k]
    unknown = sorted(set(keys) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {', '.join(WORKLOADS)}")
    with device(args.emulate) as (cupy, reason):
        if cupy is None:
            print(f"bench_gpu: skipped: {reason}")
            return 0
        torch, torch_status = C.try_import("torch")
        if torch is not None and not args.emulate and not torch.cuda.is_available():
            torch, torch_status = None, f"{torch.__version__} without CUDA"
        runner = Runner(cupy, torch, args.emulate)
        bench = Bench(runner, args.scale, args.seed)
        if args.emulate:
            device_info: dict[str, Any] = {"name": "emulated (tests/cuda_emu)"}
        else:
            props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
            name = props["name"]
            device_info = {"name": name.decode() if isinstance(name, bytes) else str(name),
                           "memory_bytes": int(props["totalGlobalMem"])}
        copy = runner.copy_bandwidth()
        payload: dict[str, Any] = {
            "created": C.now_iso(), "scale": args.scale, "repeat": args.repeat,
            "seed": args.seed, "emulated": args.emulate, "device": device_info,
            "copy_bandwidth": copy,
            "libraries": {"cupy": getattr(cupy, "__version__", "stand-in"),
                          "torch": torch_status, **C.library_versions(["numpy"])},
            "source": C.source_state(), "workloads": {}}
        rows = []
        for key in keys:
            result = run_workload(bench, key, args.repeat, copy["gbps"])
            payload["workloads"][key] = result
            C.write_json(args.json, payload)  # after each workload: a time limit keeps some
            print(f"bench_gpu: {key} done in {result['seconds']:.1f} s", flush=True)
            for name, entry in result["results"].items():
                check = entry.get("check", {})
                rows.append([key, name, C.fmt_ms(entry.get("device_best_s")),
                             C.fmt_ms(entry.get("host_median_s")),
                             C.fmt_num(entry.get("gbps"), 1),
                             C.fmt_num(entry.get("of_copy"), 2),
                             C.fmt_num(entry.get("ratio_peer_over_ours"), 2),
                             "ok" if check.get("ok") else entry.get("error", check.get(
                                 "detail", "-"))])
    print(f"device copy bandwidth: {C.fmt_num(copy['gbps'], 0)} GB/s")
    print(C.markdown_table(["workload", "implementation", "device ms (best)",
                            "host ms (median)", "GB/s", "of copy", "peer / ours", "check"],
                           rows))
    print(f"written to {C.write_json(args.json, payload)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
