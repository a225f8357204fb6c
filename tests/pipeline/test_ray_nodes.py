"""The Ray engine (the Python runner and `arrow-sparse run --engine ray`) across nodes: a
Ray cluster of two nodes on this machine, each its own
raylet (``ray.cluster_utils.Cluster``), marked ``ray`` and ``slow`` (``pytest -m slow``).

Both nodes have one CPU. The streaming_split test pins the reads to the head node and
the pipeline's actor to the second, so every batch crosses from one raylet's object
store to the other's. A ``Witness`` step (identity on the data) logs
where each batch was transformed, and can kill its own worker process once, at a chosen
row, to test that Ray's retries give every row exactly once.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arrow_sparse.pipeline import Pipeline, run
from arrow_sparse.pipeline.steps import Step

from ._helpers import CLICK_ROWS, REPO

pytestmark = [pytest.mark.ray, pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*")]


class Witness(Step):
    """Identity step: appends ``node pid first_row rows`` per batch to ``log``; in a Ray
    worker (not the process that built it), kills its own process at row ``kill_at``
    the first time (a file ``log + '.killed'`` remembers it)."""

    type = "witness"
    _keys: ClassVar[tuple[str, ...]] = ("log", "kill_at")

    def __init__(self, log: str, kill_at: int | None = None, *, name: str | None = None):
        super().__init__(name)
        self.log, self.kill_at, self.driver = log, kill_at, os.getpid()

    def input_columns(self) -> list[str]:  # noqa: D102
        return ["row"]

    def output_schema(self, schema: pa.Schema) -> pa.Schema:  # noqa: D102
        return schema

    def transform(self, table: pa.Table) -> pa.Table:  # noqa: D102
        import ray

        rows = table["row"].to_pylist()
        node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else "-"
        with open(self.log, "a") as f:
            f.write(f"{node} {os.getpid()} {rows[0] if rows else -1} {len(rows)}\n")
        if (self.kill_at in rows and os.getpid() != self.driver
                and not os.path.exists(self.log + ".killed")):
            Path(self.log + ".killed").write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return table


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[Any]:
    """A head node and a second node (one CPU, 128 MiB object store, and a resource named
    ``head`` or ``second`` to pin work to it, each); the driver
    joins it with this checkout first on the workers' ``PYTHONPATH``. A Ray instance
    this process already ran (the session's ``ray_cluster``) is stopped, then restarted."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    from ray.cluster_utils import Cluster

    from ..conftest import start_local_ray

    was_running = ray.is_initialized()
    if was_running:
        ray.shutdown()
    store = 128 * 1024**2
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "object_store_memory": store, "include_dashboard": False,
        "resources": {"head": 100}})
    cluster.add_node(num_cpus=1, object_store_memory=store, resources={"second": 100})
    cluster.wait_for_nodes()
    path = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    ray.init(address=cluster.address, runtime_env={"env_vars": {"PYTHONPATH": path}},
             log_to_driver=False)
    import ray.data
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        assert sum(n["Alive"] for n in ray.nodes()) == 2
        yield ray
    finally:
        ray.shutdown()
        cluster.shutdown()
        if was_running:
            start_local_ray()


def _pipeline(log: Path, kill_at: int | None = None) -> Pipeline:
    return Pipeline([
        Witness(str(log), kill_at, name="witness"),
        {"type": "categorify", "column": "item_ids", "output": "item_cat", "name": "vocab"},
        {"type": "hash_bucket", "column": "item_ids", "num_buckets": 1024,
         "output": "item_buckets"},
        {"type": "select", "columns": ["row", "label", "item_cat", "item_buckets"]},
    ])


def _log(path: Path) -> list[tuple[str, int, int, int]]:
    lines = [line.split() for line in path.read_text().splitlines()]
    return [(node, int(pid), int(first), int(n)) for node, pid, first, n in lines]


def test_runner_across_nodes_equals_local(two_nodes: Any, clicks: Path, tmp_path: Path) -> None:
    local = run(_pipeline(tmp_path / "local.log"), str(clicks), str(tmp_path / "local.parquet"),
                batch_rows=1000, progress=False)
    pipe = _pipeline(tmp_path / "ray.log")
    summary = run(pipe, str(clicks), str(tmp_path / "ray.parquet"), engine="ray",
                  batch_rows=1000, progress=False)
    assert (summary.rows_in, summary.rows_out) == (local.rows_in, local.rows_out) \
        == (CLICK_ROWS, CLICK_ROWS)
    got = pq.read_table(tmp_path / "ray.parquet")
    expected = pq.read_table(tmp_path / "local.parquet")
    # the documented order: the local engine's rows, possibly reordered by batch
    assert got.sort_by("row").equals(expected)
    assert expected["row"].to_pylist() == list(range(CLICK_ROWS))
    # the fit (one pass) and the transform ran in workers of the cluster, not the driver
    log = _log(tmp_path / "ray.log")
    nodes = {n["NodeID"] for n in two_nodes.nodes() if n["Alive"]}
    assert {node for node, *_ in log} <= nodes
    assert os.getpid() not in {pid for _, pid, *_ in log}
    assert sum(n for *_, n in log) == 2 * CLICK_ROWS
    assert pipe["vocab"].vocabulary == _pipeline(tmp_path / "x.log").fit(
        str(clicks))["vocab"].vocabulary


def test_cli_engine_ray_across_nodes_equals_local(two_nodes: Any, clicks: Path,
                                                  tmp_path: Path) -> None:
    from arrow_sparse.cli import main

    spec = tmp_path / "spec.toml"
    Pipeline(_pipeline(tmp_path / "unused.log").steps[1:]).save(spec)  # no Witness: TOML
    argv = ["run", str(spec), "--input", str(clicks), "--batch-rows", "1000", "--no-progress"]
    assert main([*argv, "--output", str(tmp_path / "local.parquet")]) == 0
    assert main([*argv, "--output", str(tmp_path / "ray.parquet"), "--engine", "ray"]) == 0
    got = pq.read_table(tmp_path / "ray.parquet")
    assert got.num_rows == CLICK_ROWS
    assert got.sort_by("row").equals(pq.read_table(tmp_path / "local.parquet"))


def test_killed_worker_still_gives_every_row_once(two_nodes: Any, clicks: Path,
                                                  tmp_path: Path) -> None:
    # the transform's actor kills itself at row 3500 (the 4th batch), once: Ray restarts
    # the actor and retries the batch
    log = tmp_path / "ray.log"
    pipe = _pipeline(log, kill_at=3_500)
    summary = run(pipe, str(clicks), str(tmp_path / "ray.parquet"), engine="ray",
                  batch_rows=1000, progress=False)
    killed = int(Path(str(log) + ".killed").read_text())
    got = pq.read_table(tmp_path / "ray.parquet")
    assert summary.rows_out == got.num_rows == CLICK_ROWS
    assert sorted(got["row"].to_pylist()) == list(range(CLICK_ROWS))  # none missing, none twice
    expected = pipe.transform_table(pq.read_table(clicks))
    assert got.sort_by("row").equals(expected.sort_by("row"))
    # the killed process logged the batch of row 3500 and then died; another did it again
    entries = _log(log)
    assert any(pid == killed and first <= 3_500 < first + n for _, pid, first, n in entries)
    assert any(pid != killed and first <= 3_500 < first + n for _, pid, first, n in entries)


def test_streaming_split_feeds_every_row_once(two_nodes: Any, clicks: Path,
                                              tmp_path: Path) -> None:
    ray = two_nodes
    from arrow_sparse.pipeline import ray as asp_ray

    read_log = tmp_path / "read.log"

    def where_read(batch: pa.Table) -> pa.Table:  # runs in the read tasks
        with open(read_log, "a") as f:
            f.write(f"{ray.get_runtime_context().get_node_id()} {os.getpid()} "
                    f"{batch['row'][0].as_py() if batch.num_rows else -1} {batch.num_rows}\n")
        return batch

    pipe = _pipeline(tmp_path / "transform.log").fit(str(clicks))
    (tmp_path / "transform.log").unlink(missing_ok=True)  # lines of a local fit
    # pinned: read on the head node, transformed on the second
    on_head, on_second = {"head": 1}, {"second": 1}
    ds = asp_ray.read_parquet(clicks, resources=on_head).map_batches(
        where_read, batch_format="pyarrow", batch_size=None, resources=on_head)
    n = 3  # equal=True gives each trainer CLICK_ROWS // n rows (it drops a remainder: none here)
    splits = asp_ray.map_batches(ds, pipe, batch_size=1000, concurrency=1,
                                 resources=on_second).streaming_split(n, equal=True)

    @ray.remote(num_cpus=0)
    class Trainer:
        def rows(self, split: Any) -> tuple[list[int], list[list[int]]]:
            from arrow_sparse import KeyedJagged

            rows, cats = [], []
            for batch in split.iter_batches(batch_format="pyarrow", batch_size=700):
                kj = KeyedJagged.from_arrow(batch, keys=["item_cat"])
                assert kj.batch_size == batch.num_rows
                rows += batch["row"].to_pylist()
                cats += kj["item_cat"].to_list()
            return rows, cats

    trainers = [Trainer.remote() for _ in range(n)]
    results = ray.get([t.rows.remote(s) for t, s in zip(trainers, splits, strict=True)])
    transformed = _log(tmp_path / "transform.log")  # before this process adds its own lines
    assert [len(rows) for rows, _ in results] == [CLICK_ROWS // n] * n  # every trainer was fed
    assert sorted(r for rows, _ in results for r in rows) == list(range(CLICK_ROWS))  # once each
    expected = pipe.transform_table(pq.read_table(clicks))["item_cat"].to_pylist()
    for rows, cats in results:  # each row's features, whichever trainer had it
        assert cats == [expected[r] for r in rows]
    # every batch was read on one node and transformed on the other
    node_of = {next(iter(n["Resources"].keys() & {"head", "second"})): n["NodeID"]
            for n in ray.nodes() if n["Alive"]}
    assert {node for node, *_ in _log(read_log)} == {node_of["head"]}
    assert {node for node, *_ in transformed} == {node_of["second"]}
