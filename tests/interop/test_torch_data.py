"""The torch data loader: every row exactly once per epoch by rank and worker, batches cut
exactly, seeded shuffles, the three outputs against plain-Python oracles, Parquet / IPC /
Table / Flight sources, a pipeline applied, prefetch and errors."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseKeyError, ArrowSparseTypeError, ArrowSparseValueError
from arrow_sparse.interop.torch_data import plan_rows

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.peers  # every test here needs torch (CI runs them with the peers)
from arrow_sparse.interop.torch_data import Batch, SparseDataset, make_loader  # noqa: E402

#: Row groups of uneven sizes, so rank and batch boundaries fall inside them.
ROW_GROUPS = [37, 5, 64, 1, 23, 50]


def clicks(rows: int, seed: int = 0) -> pa.Table:
    """Rows with a row id, two id features (empty and null rows included) and weights."""
    rng = np.random.default_rng(seed)
    lengths = rng.geometric(0.3, rows) - 1
    ids = [rng.integers(0, 1000, n).tolist() for n in lengths]
    ids = [None if i % 17 == 5 else x for i, x in enumerate(ids)]
    cats = [rng.integers(0, 50, int(n)).tolist() for n in rng.integers(0, 4, rows)]
    scores = [None if x is None else [round(float(s), 2) for s in rng.random(len(x))]
              for x in ids]
    return pa.table({
        "row": pa.array(np.arange(rows), pa.int64()),
        "items": pa.array(ids, pa.list_(pa.int64())),
        "scores": pa.array(scores, pa.list_(pa.float32())),
        "cats": pa.array(cats, pa.list_(pa.int64())),
        "label": pa.array(rng.random(rows) < 0.3, pa.bool_()),
        "dense": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.random(rows * 3).astype(np.float32)), 3),
    })


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return clicks(sum(ROW_GROUPS))


@pytest.fixture(scope="module")
def parquet(table: pa.Table, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two files whose row groups are ROW_GROUPS."""
    import pyarrow.parquet as pq

    folder = tmp_path_factory.mktemp("loader")
    at = 0
    for f, groups in enumerate((ROW_GROUPS[:3], ROW_GROUPS[3:])):
        with pq.ParquetWriter(folder / f"part-{f}.parquet", table.schema) as writer:
            for n in groups:
                writer.write_table(table.slice(at, n))
                at += n
    return folder


def rows_of(batches: list[Batch]) -> list[int]:
    return [r for b in batches for r in b.dense["row"].tolist()]


# --------------------------------------------------------------------------- plan_rows
@pytest.mark.parametrize("drop_last", [False, True])
def test_plan_rows_reads_every_row_exactly_once(drop_last: bool) -> None:
    rng = np.random.default_rng(1)
    for _ in range(60):
        sizes = rng.integers(0, 30, rng.integers(1, 8)).tolist()
        total = sum(sizes)
        order = rng.permutation(len(sizes)).tolist()
        starts = np.concatenate(([0], np.cumsum(sizes)))
        for world, workers, size in itertools.product((1, 2, 3), (1, 2, 3), (1, 4, 7)):
            seen: list[int] = []
            batches_per_rank = []
            for rank in range(world):
                mine = []
                for worker in range(workers):
                    plan = plan_rows(sizes, rank=rank, world_size=world, worker=worker,
                                     num_workers=workers, batch_size=size,
                                     drop_last=drop_last, order=order)
                    rows = [int(starts[u]) + r for u, a, b in plan for r in range(a, b)]
                    assert len(rows) % size == 0 or worker == workers - 1
                    mine += rows
                batches_per_rank.append(len(mine) // size if drop_last
                                        else -(-len(mine) // size))
                seen += mine
            assert len(seen) == len(set(seen))
            if drop_last:
                kept = world * (total // world // size * size)
                assert len(seen) == kept
                assert len(set(batches_per_rank)) == 1  # ranks step in lockstep
            else:
                assert sorted(seen) == list(range(total))


def test_plan_rows_errors() -> None:
    with pytest.raises(ArrowSparseValueError, match=r"^plan_rows: rank must be in \[0, 2\), got 2"):
        plan_rows([3], rank=2, world_size=2)
    with pytest.raises(ArrowSparseValueError, match="^plan_rows: batch_size must be positive"):
        plan_rows([3], batch_size=0)
    with pytest.raises(ArrowSparseValueError, match="^plan_rows: order must be a permutation"):
        plan_rows([3, 4], order=[0, 0])


# ------------------------------------------------------- exactly once, end to end
@pytest.mark.parametrize("num_workers", [0, 1, 2])
def test_every_row_once_per_epoch_by_rank_and_worker(parquet: Path, table: pa.Table,
                                                      num_workers: int) -> None:
    total = table.num_rows
    for world in (1, 2, 3):
        seen: list[int] = []
        for rank in range(world):
            data = SparseDataset(parquet, dense=["row"], batch_size=16, rank=rank,
                                 world_size=world, shuffle=True, seed=3)
            data.set_epoch(1)
            batches = list(make_loader(data, num_workers=num_workers))
            sizes = [b.num_rows for b in batches]
            # batches cut across row groups exactly: only each worker's last is short
            assert sum(s != 16 for s in sizes) <= max(num_workers, 1)
            assert all(len(b.dense["row"]) == b.num_rows for b in batches)
            seen += rows_of(batches)
        assert sorted(seen) == list(range(total)), (world, num_workers)


def test_spawned_workers_read_every_row_once(parquet: Path, table: pa.Table) -> None:
    # spawned workers get the dataset pickled (the lazily built class by its name)
    data = SparseDataset(parquet, dense=["row"], batch_size=16, shuffle=True)
    loader = make_loader(data, num_workers=2, multiprocessing_context="spawn")
    assert sorted(rows_of(list(loader))) == list(range(table.num_rows))


def test_drop_last_gives_every_rank_the_same_batches(parquet: Path, table: pa.Table) -> None:
    counts = []
    seen: list[int] = []
    for rank in range(3):
        data = SparseDataset(parquet, dense=["row"], batch_size=10, rank=rank, world_size=3,
                             drop_last=True)
        batches = list(data)
        assert {b.num_rows for b in batches} == {10}
        assert len(data) == len(batches)
        counts.append(len(batches))
        seen += rows_of(batches)
    assert len(set(counts)) == 1 and len(seen) == len(set(seen)) == 3 * counts[0] * 10


def test_len_counts_this_ranks_batches(parquet: Path) -> None:
    for rank in range(2):
        data = SparseDataset(parquet, dense=["row"], batch_size=16, rank=rank, world_size=2)
        assert len(data) == len(list(data))


# --------------------------------------------------------------------------- shuffling
def test_shuffle_is_seeded_per_epoch(parquet: Path, table: pa.Table) -> None:
    def order(seed: int, epoch: int) -> list[int]:
        data = SparseDataset(parquet, dense=["row"], batch_size=8, shuffle=True, seed=seed,
                             shuffle_buffer=40)
        data.set_epoch(epoch)
        return rows_of(list(data))

    first = order(0, 0)
    assert first == order(0, 0)  # deterministic
    assert first != order(0, 1) and first != order(1, 0)  # new order per epoch and seed
    assert sorted(first) == list(range(table.num_rows))
    assert first != sorted(first)
    plain = rows_of(list(SparseDataset(parquet, dense=["row"], batch_size=8)))
    assert plain == list(range(table.num_rows))


# ------------------------------------------------------------------------------ outputs
def expected(table: pa.Table, rows: list[int], column: str) -> list[list[Any]]:
    values = table.column(column).to_pylist()
    return [values[r] or [] for r in rows]


def test_keyed_output_matches_the_table(parquet: Path, table: pa.Table) -> None:
    data = SparseDataset(parquet, features=["items", "cats"], dense=["row"],
                         weights={"items": "scores"}, batch_size=30, output="keyed",
                         shuffle=True, seed=5)
    for batch in data:
        rows = batch.dense["row"].tolist()
        kj = batch.features
        assert isinstance(kj, asp.KeyedJagged) and kj.keys() == ["items", "cats"]
        assert [x or [] for x in kj["items"].to_list()] == expected(table, rows, "items")
        assert kj["cats"].to_list() == expected(table, rows, "cats")
        w = kj.weights_of("items").to_list()
        assert [x or [] for x in w] == [pytest.approx(x) for x in expected(table, rows,
                                                                           "scores")]


def test_torchrec_output_matches_the_table(parquet: Path, table: pa.Table) -> None:
    data = SparseDataset(parquet, features=["cats", "items"], dense=["row"], batch_size=25)
    for batch in data:
        rows = batch.dense["row"].tolist()
        kjt = batch.features
        back = asp.KeyedJagged.from_torchrec(kjt)
        assert back.keys() == ["cats", "items"]
        assert back["cats"].to_list() == expected(table, rows, "cats")
        assert back["items"].to_list() == expected(table, rows, "items")


def test_padded_output_matches_the_table(parquet: Path, table: pa.Table) -> None:
    data = SparseDataset(parquet, features=["items"], dense=["row", "label", "dense"],
                         batch_size=20, output="padded", max_lengths=4, pad_value=-1)
    dense = table.column("dense").to_pylist()
    labels = table.column("label").to_pylist()
    for batch in data:
        rows = batch.dense["row"].tolist()
        values, lengths = batch.features["items"]
        want = expected(table, rows, "items")
        assert lengths.tolist() == [min(len(x), 4) for x in want]
        assert values.tolist() == [(x[:4] + [-1] * 4)[:4] for x in want]
        assert batch.dense["label"].tolist() == [labels[r] for r in rows]
        assert batch.dense["dense"].shape == (len(rows), 3)
        assert batch.dense["dense"].tolist() == [pytest.approx(dense[r]) for r in rows]


def test_dense_tensors_share_arrow_memory_inside_a_unit(table: pa.Table) -> None:
    data = SparseDataset(table, features=[], dense=["row"], batch_size=10)
    source = data._source
    first = next(iter(data))
    arrow_rows = source.read(0).column("row").chunk(0)
    assert first.features is None
    assert first.dense["row"].data_ptr() == arrow_rows.buffers()[1].address


# ------------------------------------------------------------------------------ sources
def test_ipc_files_and_a_table_give_the_same_rows(table: pa.Table, tmp_path: Path) -> None:
    paths = []
    for i, part in enumerate((table.slice(0, 70), table.slice(70))):
        path = tmp_path / f"part-{i}.arrow"
        asp.io.write_ipc(pa.Table.from_batches(part.to_batches(max_chunksize=33)), path)
        paths.append(str(path))
    for source in (paths, table):
        seen = []
        for rank in range(2):
            data = SparseDataset(source, dense=["row"], batch_size=9, rank=rank, world_size=2)
            seen += rows_of(list(make_loader(data, num_workers=2)))
        assert sorted(seen) == list(range(table.num_rows))


def test_flight_source_shards_by_rank(table: pa.Table) -> None:
    with asp.io.serve_flight(table, batch_rows=16) as server:
        seen = []
        for rank in range(3):
            data = SparseDataset(server.location, dense=["row"], features=["items"],
                                 batch_size=7, rank=rank, world_size=3,
                                 flight_options={"timeout": 30})
            batches = list(data)
            assert all(b.num_rows == 7 for b in batches[:-1])
            seen += rows_of(batches)
            with pytest.raises(TypeError, match="number of batches is unknown"):
                len(data)
    assert sorted(seen) == list(range(table.num_rows))


def test_pipeline_is_applied(parquet: Path, table: pa.Table) -> None:
    pipe = asp.Pipeline([{"type": "hash_bucket", "column": "items", "num_buckets": 10,
                          "output": "buckets"},
                         {"type": "filter", "expr": "row >= 50"}])
    pipe.fit(table)
    want = pipe.transform_table(table)
    data = SparseDataset(parquet, pipeline=pipe, features=["buckets"], dense=["row"],
                         batch_size=13, output="keyed")
    batches = list(data)
    rows = rows_of(batches)
    assert rows == want.column("row").to_pylist()
    got = [x for b in batches for x in b.features["buckets"].to_list()]
    assert [x or [] for x in got] == [x or [] for x in want.column("buckets").to_pylist()]
    assert {b.num_rows for b in batches[:-1]} == {13}


# ------------------------------------------------------------------- prefetch, errors
def test_prefetch_thread_passes_errors_on_and_stops_early(table: pa.Table) -> None:
    data = SparseDataset(table, dense=["row"], batch_size=5, prefetch=1)
    it = iter(data)
    next(it)
    it.close()  # the producer thread stops
    n = table.num_rows
    bad = table.set_column(0, "row", pa.array([0] * 100 + [None] * (n - 100), pa.int64()))
    it = iter(SparseDataset(bad, dense=["row"], batch_size=64))
    assert next(it).num_rows == 64  # the first batch has no nulls
    with pytest.raises(ArrowSparseValueError,
                       match=r"dense column 'row' has nulls \(first at row 36\)"):
        next(it)


def test_errors(table: pa.Table, parquet: Path) -> None:
    with pytest.raises(ArrowSparseValueError, match="^SparseDataset: output must be one of"):
        SparseDataset(table, output="dense")
    with pytest.raises(ArrowSparseKeyError, match="^SparseDataset: column 'nope' is not"):
        SparseDataset(table, dense=["nope"])
    with pytest.raises(ArrowSparseValueError, match="^SparseDataset: pipeline is not fitted"):
        SparseDataset(table, pipeline=asp.Pipeline([{"type": "categorify", "column": "items"}]))
    with pytest.raises(ArrowSparseValueError, match=r"^SparseDataset: rank must be in \[0, 2\)"):
        SparseDataset(table, rank=2, world_size=2)
    with pytest.raises(ArrowSparseValueError, match="output='keyed' stays on the host"):
        SparseDataset(table, output="keyed", device="cuda")
    with pytest.raises(ArrowSparseTypeError, match="^SparseDataset: source must be a path"):
        SparseDataset(42)
    with pytest.raises(ArrowSparseTypeError, match="^SparseDataset: dense column 'items' has"):
        SparseDataset(table, dense=["items"])
    import pyarrow.compute as pc

    filtered = asp.io.read_parquet(parquet, filter=pc.field("row") > 3)
    with pytest.raises(ArrowSparseValueError, match="^row_groups: the stream has a filter"):
        list(SparseDataset(filtered))
    with pytest.raises(ArrowSparseValueError, match="^make_loader: batch_size is set on"):
        make_loader(SparseDataset(table), batch_size=4)
    with pytest.raises(ArrowSparseTypeError, match="^make_loader: dataset must be a"):
        make_loader([1, 2])


def test_import_does_not_import_torch() -> None:
    code = ("import sys, arrow_sparse.interop.torch_data as d; "
            "print('SparseDataset' in dir(d), 'torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "False"]


def test_device_copy_reaches_every_tensor_of_every_output(table: pa.Table) -> None:
    # The CUDA path (pin, copy on a side stream) maps one function over a batch's
    # tensors; no GPU here, so check the mapping with a CPU function that marks them.
    from arrow_sparse.interop.torch_data import _map_tensors

    for output in ("torchrec", "padded"):
        batch = next(iter(SparseDataset(table, features=["items", "cats"], dense=["row"],
                                        weights={"items": "scores"}, batch_size=8,
                                        output=output)))
        seen: list[Any] = []

        def mark(t: Any, seen: list[Any] = seen) -> Any:
            seen.append(t)
            return t + 0  # a new tensor, as .to(device) gives
        moved = _map_tensors(batch, mark, torch)
        assert type(moved) is Batch and moved.num_rows == 8
        assert moved.dense["row"].data_ptr() != batch.dense["row"].data_ptr()
        if output == "padded":
            assert len(seen) == 5  # 2 features x (values, lengths) + row
            assert moved.features["cats"].lengths.tolist() == \
                batch.features["cats"].lengths.tolist()
        else:
            assert len(seen) == 4  # values, lengths, weights + row
            back = asp.KeyedJagged.from_torchrec(moved.features)
            assert back["items"].to_list() == \
                asp.KeyedJagged.from_torchrec(batch.features)["items"].to_list()
