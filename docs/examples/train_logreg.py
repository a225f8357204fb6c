"""Train a logistic regression on pooled item embeddings with arrow_sparse alone.

    p(y) = sigmoid(pool(E[item_ids]) . w + b)

``E`` is an embedding table ``[1_000_000, dim]`` trained with sparse SGD
(``lookup`` -> ``lookup_backward`` -> ``sgd``: only the rows a batch touches are
updated); ``w`` and ``b`` are dense and trained with plain numpy SGD. The loss is the
binary cross-entropy, averaged over a batch. Two targets from
``data/sample_clicks.parquet``:

- ``--target item`` (default): whether a user's history holds one of 100 hidden
  "trigger" items (drawn, with a fixed seed, from the 2,000 most frequent items). Only
  item identity carries this signal, so the model must learn it in ``E``: with the
  embeddings frozen (``--emb-lr 0``) the loss stays far higher.
- ``--target click``: the file's ``label`` column, which the synthetic data makes depend
  on list length, item scores and a category key, not on item identity: the loss falls,
  but frozen embeddings do nearly as well.

Run from the repository root::

    python docs/examples/train_logreg.py                  # 2 epochs, prints the losses
    python docs/examples/train_logreg.py --emb-lr 0       # the frozen-embedding baseline
    python docs/examples/train_logreg.py --target click --emb-lr 5
    python docs/examples/train_logreg.py --steps 30       # a quick check
"""

from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import arrow_sparse as asp

DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "sample_clicks.parquet"
NUM_EMBEDDINGS = 1_000_000  # item ids lie in [0, 1_000_000)


def bce(p: np.ndarray, y: np.ndarray) -> float:
    """Mean binary cross-entropy."""
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def trigger_labels(item_ids: pa.ChunkedArray, seed: int = 7) -> np.ndarray:
    """1 where a history holds one of 100 trigger items (of the 2,000 most frequent)."""
    ids = asp.Jagged.from_arrow(item_ids)
    values = ids.values[ids.offsets[0]:ids.offsets[-1]]
    top = np.argsort(-np.bincount(values, minlength=NUM_EMBEDDINGS), kind="stable")[:2000]
    trigger = np.zeros(NUM_EMBEDDINGS, dtype=np.float32)
    trigger[np.random.default_rng(seed).choice(top, 100, replace=False)] = 1.0
    hits = asp.segment_sum(trigger[values], offsets=ids.offsets - ids.offsets[0])
    if ids.validity is not None:
        hits[~ids.validity] = 0  # a null history holds none
    return (hits > 0).astype(np.float32)


def main(argv: list[str] | None = None) -> list[float]:
    """Train; return the mean training loss of each logging window."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="item", choices=["item", "click"])
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=None, help="stop after this many batches")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--lr", type=float, default=0.5, help="dense learning rate")
    ap.add_argument("--emb-lr", type=float, default=0.5,
                    help="embedding learning rate (0 freezes the embeddings)")
    ap.add_argument("--mode", default="sum", choices=["sum", "mean"])
    ap.add_argument("--log-every", type=int, default=14)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    data = pq.read_table(DATA, columns=["item_ids", "label"])
    labels = trigger_labels(data["item_ids"]) if args.target == "item" else \
        data["label"].to_numpy().astype(np.float32)
    rng = np.random.default_rng(args.seed)
    table = (0.01 * rng.standard_normal((NUM_EMBEDDINGS, args.dim))).astype(np.float32)
    w = (0.01 * rng.standard_normal(args.dim)).astype(np.float32)
    b = np.float32(0.0)

    losses, window, step, start = [], [], 0, time.perf_counter()
    for epoch in range(args.epochs):
        for lo in range(0, data.num_rows, args.batch_size):
            if args.steps is not None and step >= args.steps:
                break
            ids = asp.Jagged.from_arrow(data["item_ids"].slice(lo, args.batch_size))
            y = labels[lo:lo + args.batch_size]
            # forward
            h = asp.embedding.lookup(table, ids, mode=args.mode)     # [B, dim]
            p = 1 / (1 + np.exp(-(h @ w + b)))
            window.append(bce(p, y))
            # backward (mean BCE): dL/dlogit = (p - y) / B
            dlogit = ((p - y) / len(y)).astype(np.float32)
            dh = np.outer(dlogit, w)                                     # [B, dim]
            grad = asp.embedding.lookup_backward(dh, ids, mode=args.mode,
                                                 num_embeddings=NUM_EMBEDDINGS)
            # updates: sparse rows of the table, dense w and b
            asp.embedding.sgd(table, grad, args.emb_lr)
            w -= args.lr * (h.T @ dlogit)
            b -= args.lr * dlogit.sum()
            step += 1
            if step % args.log_every == 0:
                losses.append(float(np.mean(window)))
                window = []
                print(f"epoch {epoch} step {step:4d}  loss {losses[-1]:.4f}")
    if window:
        losses.append(float(np.mean(window)))
    base = bce(np.full_like(labels, labels.mean()), labels)
    print(f"{step} steps in {time.perf_counter() - start:.1f} s; target {args.target}, "
          f"emb-lr {args.emb_lr}; loss {losses[0]:.4f} -> {losses[-1]:.4f} "
          f"(constant predictor: {base:.4f})")
    return losses


if __name__ == "__main__":
    main()
