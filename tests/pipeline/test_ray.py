"""Tests of arrow_sparse.pipeline.ray and ``run --engine ray`` on a small local Ray cluster
(marked ``ray``), and of ``iter_keyed_jagged``, which needs no cluster.

Ray may reorder batches, so outputs are compared with the local runner's after
sorting by a row key. Each Ray execution starts an actor pool (seconds), so the
tests are few and share one input.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arrow_sparse.cli import main
from arrow_sparse.pipeline import Normalize, Pipeline, run

from ._helpers import CLICK_ROWS, SPEC

# Ray's DataContext warns about its own deprecated defaults whenever it is built.
ignore_rays_deprecations = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*")


def _spec(tmp_path: Path) -> Path:
    """The example spec, keeping the row key, with a statistics step before the selection."""
    pipe = Pipeline.load(SPEC)
    select = pipe.steps.pop()
    pipe.steps.append(Normalize("mean_item_score", output="score_z", name="z"))
    select.columns += ["row", "score_z"]
    pipe.steps.append(select)
    path = tmp_path / "spec.toml"
    pipe.save(path)
    return path


def _same_rows(got: pa.Table, expected: pa.Table) -> None:
    got, expected = got.sort_by("row"), expected.sort_by("row")
    assert got.schema.equals(expected.schema, check_metadata=False)
    if "score_z" not in got.column_names:
        assert got.equals(expected)
        return
    assert got.drop_columns(["score_z"]).equals(expected.drop_columns(["score_z"]))
    # statistics merged in another order: equal to rounding
    assert got["score_z"].is_null().equals(expected["score_z"].is_null())
    np.testing.assert_allclose(got["score_z"].to_numpy(), expected["score_z"].to_numpy(),
                               rtol=1e-9)


@pytest.mark.ray
@ignore_rays_deprecations
def test_run_engine_ray_equals_local(ray_cluster: object, clicks: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path)
    argv = ["run", str(spec), "--input", str(clicks), "--batch-rows", "1000",
            "--no-progress", "--json"]
    assert main([*argv, "--output", str(tmp_path / "local.parquet")]) == 0
    capsys.readouterr()
    assert main([*argv, "--output", str(tmp_path / "ray.parquet"), "--engine", "ray",
                 "--save-pipeline", str(tmp_path / "fitted" / "spec.toml")]) == 0
    summary = capsys.readouterr().out
    assert '"engine": "ray"' in summary and f'"rows_in": {CLICK_ROWS}' in summary
    _same_rows(pq.read_table(tmp_path / "ray.parquet"), pq.read_table(tmp_path / "local.parquet"))
    # the vocabulary fitted on Ray is exactly the local one
    local = Pipeline.load(spec).fit(str(clicks))
    fitted = Pipeline.load(tmp_path / "fitted" / "spec.toml")
    assert fitted["item_vocab"].vocabulary == local["item_vocab"].vocabulary


@pytest.mark.ray
@ignore_rays_deprecations
def test_run_engine_ray_on_a_polars_hive_directory(ray_cluster: object, clicks: Path,
                                                    tmp_path: Path) -> None:
    # Polars stores the partition column in the files too (large_string); Ray's blocks
    # put it last while the data set's schema keeps the files' order.
    pl = pytest.importorskip("polars")
    hive = tmp_path / "hive"
    pl.read_parquet(clicks / "part-0.parquet").write_parquet(hive, partition_by=["label"])
    spec = tmp_path / "spec.toml"
    spec.write_text('[[steps]]\ntype = "reduce"\ncolumn = "item_ids"\nop = "length"\n'
                    'output = "n"\n')
    argv = ["run", str(spec), "--input", str(hive), "--no-progress"]
    assert main([*argv, "--output", str(tmp_path / "local.parquet")]) == 0
    assert main([*argv, "--output", str(tmp_path / "ray.parquet"), "--engine", "ray"]) == 0
    got = pq.read_table(tmp_path / "ray.parquet")
    assert got.schema.field("label").type == pa.int8()
    assert got.num_rows == CLICK_ROWS // 3
    _same_rows(got, pq.read_table(tmp_path / "local.parquet"))


@pytest.mark.ray
@ignore_rays_deprecations
def test_map_batches_and_iter_keyed_jagged(ray_cluster: object, clicks: Path,
                                           tmp_path: Path) -> None:
    import ray.data

    from arrow_sparse.pipeline import ray as asp_ray

    pipe = Pipeline([  # fitted locally, run on Ray
        {"type": "categorify", "column": "item_ids", "output": "item_cat"},
        {"type": "hash_bucket", "column": "item_ids", "num_buckets": 1024,
         "output": "item_buckets"},
        {"type": "select", "columns": ["row", "label", "item_cat", "item_buckets"]},
    ]).fit(str(clicks))
    ds = asp_ray.read_parquet(clicks)
    out = asp_ray.map_batches(ds, pipe, batch_size=1000, concurrency=1)
    assert isinstance(out, ray.data.Dataset)
    batches = list(out.iter_batches(batch_format="pyarrow", batch_size=1500))
    features = list(asp_ray.iter_keyed_jagged(batches, keys=["item_cat", "item_buckets"]))
    got = pa.concat_tables(batches)
    _same_rows(got, pipe.transform_table(pq.read_table(clicks)))
    assert sum(kj.batch_size for kj in features) == CLICK_ROWS
    assert all(kj.keys() == ["item_cat", "item_buckets"] for kj in features)
    assert features[0]["item_cat"].to_list() == batches[0]["item_cat"].to_pylist()


@pytest.mark.ray
@ignore_rays_deprecations
def test_errors(ray_cluster: object, clicks: Path, tmp_path: Path) -> None:
    from arrow_sparse.pipeline import ray as asp_ray

    ds = asp_ray.read_parquet(clicks)
    unfitted = Pipeline.load(_spec(tmp_path))
    with pytest.raises(ValueError, match=r"map_batches: the pipeline has unfitted steps "
                                         r"\(step 'item_vocab' \(categorify\), step 'z'"):
        asp_ray.map_batches(ds, unfitted)
    with pytest.raises(TypeError, match="map_batches: ds must be a ray.data.Dataset"):
        asp_ray.map_batches(pq.read_table(clicks), unfitted)
    with pytest.raises(TypeError, match="fit: pipeline must be an arrow_sparse Pipeline"):
        asp_ray.fit(ds, [])
    fitted = Pipeline([{"type": "select", "columns": ["row"]}])
    with pytest.raises(ValueError, match=r"concurrency must be a positive int"):
        asp_ray.map_batches(ds, fitted, concurrency=(3, 1))
    with pytest.raises(TypeError, match="read_parquet: paths must be a path"):
        asp_ray.read_parquet(3)
    with pytest.raises(ValueError, match="Flight output needs engine='local'"):
        run(fitted, str(clicks), "flight://127.0.0.1:0", engine="ray")


def test_iter_keyed_jagged_without_ray() -> None:
    from arrow_sparse.pipeline.ray import iter_keyed_jagged

    t = pa.table({"a": [[1, 2], [3]], "b": [[4], []]})
    kjs = list(iter_keyed_jagged([t, t.to_batches()[0].slice(1)], keys=["b", "a"]))
    assert [kj.keys() for kj in kjs] == [["b", "a"], ["b", "a"]]
    assert kjs[1]["a"].to_list() == [[3]]
    with pytest.raises(TypeError, match=r"batch_format='pyarrow'\) \(first at position 1: "
                                        r"dict\)"):
        list(iter_keyed_jagged([t, {"a": [1]}]))
    with pytest.raises(TypeError, match=r"^iter_keyed_jagged: batch_size apply to a Ray "
                                        r"dataset or DataIterator, not to list"):
        list(iter_keyed_jagged([t], batch_size=2))


@pytest.mark.ray
def test_run_engine_ray_is_quiet_unless_verbose_issue15(clicks: Path, tmp_path: Path) -> None:
    # Before: 89 Ray INFO lines and a token warning on stderr, even with --no-progress.
    # A fresh process, so that this run starts its own Ray instance (the session's
    # cluster is started by the test fixture, with its own logging choices).
    import os
    import subprocess
    import sys

    spec = tmp_path / "spec.toml"
    spec.write_text('[[steps]]\ntype = "hash_bucket"\nname = "h"\ncolumn = "item_ids"\n'
                    'num_buckets = 64\n')
    repo = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0",
           "PYTHONPATH": os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")])}
    env.pop("RAY_ADDRESS", None)

    def cli(*extra: str) -> list[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "arrow_sparse", "run", str(spec), "--input", str(clicks),
             "--output", str(tmp_path / "o.parquet"), "--engine", "ray", "--no-progress",
             *extra], capture_output=True, text=True, env=env, cwd=repo, timeout=500,
            check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert f"{CLICK_ROWS:,} rows in, {CLICK_ROWS:,} rows out" in proc.stdout
        return proc.stderr.splitlines()

    # Ray's C++ core worker may still print one line of its own, straight to the
    # process's stderr (an actor whose constructor arguments are in the object store):
    # no Python logging setting reaches it.
    quiet = [line for line in cli() if "core_worker.cc" not in line]
    assert quiet == [], quiet
    loud = cli("--verbose")
    assert any("Started a local Ray instance" in line for line in loud), loud[:5]


@pytest.mark.ray
@ignore_rays_deprecations
def test_read_keyed_jagged_datasource(ray_cluster: object, clicks: Path) -> None:
    import ray.data

    from arrow_sparse import KeyedJagged
    from arrow_sparse.pipeline import ray as asp_ray

    keys = ["item_cat", "item_buckets"]
    pipe = Pipeline([
        {"type": "categorify", "column": "item_ids", "output": "item_cat"},
        {"type": "hash_bucket", "column": "item_ids", "num_buckets": 1024,
         "output": "item_buckets"},
    ]).fit(str(clicks))
    ds = asp_ray.read_keyed_jagged(clicks, keys, pipeline=pipe, batch_rows=700,
                                   override_num_blocks=3)
    assert isinstance(ds, ray.data.Dataset)
    batches = list(ds.iter_batches(batch_format="pyarrow", batch_size=None))  # its blocks
    features = list(asp_ray.iter_keyed_jagged(batches))
    assert sum(kj.batch_size for kj in features) == CLICK_ROWS
    assert all(kj.keys() == keys for kj in features)
    # every block is already the KeyedJagged's own layout: the round trip is the identity
    for table, kj in zip(batches, features, strict=True):
        assert table.column_names == keys
        assert pa.Table.from_batches([kj.to_arrow()]).equals(table)
    # the rows are the local pipeline's (read tasks may interleave: compare as multisets)
    expected = KeyedJagged.from_arrow(pipe.transform_table(pq.read_table(clicks)), keys=keys)

    def rows(kj: KeyedJagged) -> list[str]:  # null rows included
        return [repr((c, b)) for c, b in zip(kj["item_cat"].to_list(),
                                             kj["item_buckets"].to_list(), strict=True)]

    assert sorted(r for kj in features for r in rows(kj)) == sorted(rows(expected))
    # batches of the trainer's size, cut across blocks
    sizes = [kj.batch_size for kj in asp_ray.iter_keyed_jagged(
        ds.iter_batches(batch_format="pyarrow", batch_size=700))]
    assert sum(sizes) == CLICK_ROWS and set(sizes[:-1]) == {700}

    # the dataset itself: iter_keyed_jagged iterates it, the loop gets KeyedJagged
    direct = list(asp_ray.iter_keyed_jagged(ds, batch_size=700))
    assert all(isinstance(kj, KeyedJagged) and kj.keys() == keys for kj in direct)
    assert [kj.batch_size for kj in direct][:-1] == [700] * (len(direct) - 1)
    assert sorted(r for kj in direct for r in rows(kj)) == sorted(rows(expected))
    with pytest.raises(ValueError, match="iter_keyed_jagged: batch_format is always"):
        list(asp_ray.iter_keyed_jagged(ds, batch_format="numpy"))

    unfitted = Pipeline([{"type": "categorify", "column": "item_ids", "name": "v"}])
    with pytest.raises(ValueError, match=r"read_keyed_jagged: the pipeline has unfitted "
                                         r"steps \(step 'v' \(categorify\)\)"):
        asp_ray.read_keyed_jagged(clicks, pipeline=unfitted)
    with pytest.raises(TypeError, match="read_keyed_jagged: paths must be a path"):
        asp_ray.read_keyed_jagged(3)
    with pytest.raises(ValueError, match="read_keyed_jagged: batch_rows must be a positive"):
        asp_ray.read_keyed_jagged(clicks, batch_rows=0)
