"""Generate ``sample_clicks.parquet``: a synthetic, deterministic click log.

The file is meant as a realistic fixture for tests, examples and benchmarks of
``arrow_sparse``: jagged list columns with heavy-tailed ids, empty and null
lists, an aligned values column and a map-of-lists column.

Schema (one row per impression/session):

    user_id      int64                    bounded Zipf (s=1.05) over 20,000
                                          users, ranks mapped to ids through a
                                          fixed random permutation
    item_ids     list<int64>              bounded Zipf (s=1.2) over 1,000,000
                                          items, ranks mapped to ids through a
                                          fixed random permutation (popular ids
                                          are not 0, 1, 2, ...); lengths
                                          geometric (mean ~20, max ~250);
                                          ~5% empty lists, ~2% null lists
    item_scores  list<float32>            aligned with ``item_ids`` (identical
                                          offsets and validity), uniform in
                                          [0, 1) on a 0.01 grid
    categories   map<int32, list<int32>>  0-4 feature-type keys from 1..8,
                                          unique and sorted within a row (~10%
                                          of rows hold an empty map, none are
                                          null); each key maps to 1-5 category
                                          ids, Zipf-distributed over [0, 1000)
    label        int8                     0/1, ~13% positive; logistic in
                                          log(list length), mean item score
                                          and presence of key 3 (null lists
                                          are less likely to be positive)

Everything is built with vectorised numpy (no Python loop over rows) from a
single seeded ``numpy.random.Generator``, so the output is byte-identical for a
given ``--rows``/``--seed`` and library versions.

Regenerate with::

    python data/make_sample.py                      # 100_000 rows, default seed
    python data/make_sample.py --rows 1000 --output /tmp/small.parquet
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DEFAULT_SEED = 20261122
DEFAULT_ROWS = 100_000
DEFAULT_OUTPUT = Path(__file__).resolve().parent / "sample_clicks.parquet"

N_ITEMS = 1_000_000
ITEM_ZIPF_S = 1.2
N_USERS = 20_000
USER_ZIPF_S = 1.05
MEAN_LIST_LEN = 20
EMPTY_FRAC = 0.05
NULL_FRAC = 0.02
N_FEATURE_KEYS = 8  # keys are 1..N_FEATURE_KEYS
MAX_KEYS_PER_ROW = 4
MAX_CATS_PER_KEY = 5
N_CATEGORIES = 1000
CATEGORY_ZIPF_S = 1.0
ROW_GROUP_SIZE = 16_384

SCHEMA = pa.schema(
    [
        pa.field("user_id", pa.int64(), nullable=False),
        pa.field("item_ids", pa.list_(pa.int64())),
        pa.field("item_scores", pa.list_(pa.float32())),
        pa.field("categories", pa.map_(pa.int32(), pa.list_(pa.int32()))),
        pa.field("label", pa.int8(), nullable=False),
    ]
)


def bounded_zipf(rng: np.random.Generator, n: int, s: float, size: int) -> np.ndarray:
    """Sample 0-based ranks in [0, n) with P(rank r) proportional to (r+1)^-s."""
    weights = np.arange(1, n + 1, dtype=np.float64) ** -s
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    ranks = np.searchsorted(cdf, rng.random(size), side="right")
    return np.minimum(ranks, n - 1)


def lengths_to_offsets(lengths: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def make_table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)

    # Fixed rank -> id permutations so popular ids are scattered over the range.
    user_perm = rng.permutation(N_USERS).astype(np.int64)
    item_perm = rng.permutation(N_ITEMS).astype(np.int64)

    # user_id
    user_id = user_perm[bounded_zipf(rng, N_USERS, USER_ZIPF_S, rows)]

    # item_ids / item_scores: geometric lengths, some empty, some null.
    lengths = rng.geometric(1.0 / MEAN_LIST_LEN, size=rows).astype(np.int64)
    kind = rng.random(rows)
    is_null = kind < NULL_FRAC
    is_empty = (kind >= NULL_FRAC) & (kind < NULL_FRAC + EMPTY_FRAC)
    lengths[is_null | is_empty] = 0
    list_offsets = lengths_to_offsets(lengths)
    n_values = int(list_offsets[-1])

    item_values = item_perm[bounded_zipf(rng, N_ITEMS, ITEM_ZIPF_S, n_values)]
    # Two decimals keep the file small; floor keeps every score strictly < 1.
    score_values = (np.floor(rng.random(n_values) * 100) / 100).astype(np.float32)

    null_mask = pa.array(is_null)
    item_ids = pa.ListArray.from_arrays(
        pa.array(list_offsets), pa.array(item_values), mask=null_mask
    )
    item_scores = pa.ListArray.from_arrays(
        pa.array(list_offsets), pa.array(score_values), mask=null_mask
    )

    # categories: 0..4 unique keys per row, emitted in sorted order.
    n_keys = rng.choice(MAX_KEYS_PER_ROW + 1, size=rows, p=[0.10, 0.25, 0.30, 0.20, 0.15])
    # Random rank of each of the 8 keys within its row; keep the n_keys lowest.
    key_rank = np.argsort(np.argsort(rng.random((rows, N_FEATURE_KEYS)), axis=1), axis=1)
    selected = key_rank < n_keys[:, None]
    # Row-major nonzero walks each row's keys in ascending order -> sorted keys.
    _, key_col = np.nonzero(selected)
    map_keys = (key_col + 1).astype(np.int32)
    map_offsets = lengths_to_offsets(selected.sum(axis=1))

    cat_lengths = 1 + rng.choice(
        MAX_CATS_PER_KEY, size=len(map_keys), p=[0.35, 0.25, 0.20, 0.12, 0.08]
    )
    cat_offsets = lengths_to_offsets(cat_lengths)
    cat_perm = rng.permutation(N_CATEGORIES).astype(np.int32)
    cat_ranks = bounded_zipf(rng, N_CATEGORIES, CATEGORY_ZIPF_S, int(cat_offsets[-1]))
    cat_values = cat_perm[cat_ranks]
    map_items = pa.ListArray.from_arrays(pa.array(cat_offsets), pa.array(cat_values))
    categories = pa.MapArray.from_arrays(pa.array(map_offsets), pa.array(map_keys), map_items)

    # label: logistic in list length, mean score and presence of key 3.
    row_score_sum = np.add.reduceat(
        np.append(score_values.astype(np.float64), 0.0), list_offsets[:-1]
    )
    row_score_sum[lengths == 0] = 0.0
    mean_score = np.divide(row_score_sum, lengths, out=np.full(rows, 0.5), where=lengths > 0)
    has_key3 = selected[:, 2]
    logit = (
        -1.85
        + 0.45 * (np.log1p(lengths) - np.log1p(MEAN_LIST_LEN))
        + 1.5 * (mean_score - 0.5)
        + 0.6 * has_key3
        - 0.5 * is_null
    )
    label = (rng.random(rows) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int8)

    return pa.Table.from_arrays(
        [pa.array(user_id), item_ids, item_scores, categories, pa.array(label)],
        schema=SCHEMA,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS, help="number of rows")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="RNG seed")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="output Parquet path")
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    table = make_table(args.rows, args.seed)
    t1 = time.perf_counter()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        table,
        args.output,
        compression="zstd",
        row_group_size=ROW_GROUP_SIZE,
    )
    t2 = time.perf_counter()

    print(f"wrote {args.output}")
    print(f"rows: {table.num_rows}  size: {args.output.stat().st_size:,} bytes")
    print(f"generate: {t1 - t0:.2f}s  write: {t2 - t1:.2f}s")
    print(pq.read_schema(args.output))


if __name__ == "__main__":
    main()
