import os, time, numpy as np
from arrow_sparse import embedding as emb
from arrow_sparse.kernels.cpu import embedding as k
rng = np.random.default_rng(0)
V, D, B = 100_000, 64, 4096
lengths = np.minimum(np.round(rng.lognormal(2.5, 1.0, B)).astype(np.int64), 2000)
ids = (rng.zipf(1.2, lengths.sum()) - 1) % V
offsets = np.concatenate([[0], np.cumsum(lengths)])
table = rng.standard_normal((V, D)).astype(np.float32)
dy = rng.standard_normal((B, D)).astype(np.float32)
_, arg = emb.lookup(table, ids, offsets=offsets, mode="max", return_argmax=True)
order, rows, starts = k.sort_ids(ids)
bag = np.repeat(np.arange(B), lengths)
out = np.empty((len(rows), D), np.float32); cred = np.zeros(len(rows), np.uint64)
omax = np.empty((B, D), np.float32); amax = np.empty((B, D), np.int64)
import numba
fs = {
 "coalesce_sorted": lambda: k.coalesce_sorted(dy, order, bag, np.empty(0), starts, out),
 "coalesce_max": lambda: k.coalesce_max(dy, order, bag, rows, arg, starts, out, cred),
 "bag_max": lambda: k.bag_max(table, ids, offsets, None, omax, amax),
 "gather max (lookup)": lambda: emb.lookup(table, ids, offsets=offsets, mode="max"),
}
for f in fs.values(): f()
res = {n: [] for n in fs}
for _ in range(15):
    for n, f in fs.items():
        t = time.perf_counter(); f(); res[n].append(time.perf_counter() - t)
print("load", os.getloadavg(), "threads", numba.get_num_threads())
for n, v in res.items(): print(f"{n:22s} min {min(v)*1e3:7.2f} ms  median {np.median(v)*1e3:7.2f} ms")
