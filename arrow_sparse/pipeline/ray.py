"""Run a :class:`~arrow_sparse.Pipeline` on Ray Data, and hand its batches to trainers.

:func:`map_batches` transforms a ``ray.data.Dataset`` with a fitted pipeline on a
pool of actors (each holds one copy of the pipeline, so its kernels compile or load
from Numba's cache once per worker, not per batch), Arrow batch in, Arrow batch out,
zero-copy. :func:`fit` fits the stateful steps on the cluster: every worker computes
the partial state of its batches and the driver merges them, as the local
:meth:`Pipeline.fit <arrow_sparse.Pipeline.fit>` does. :func:`iter_keyed_jagged`
turns ``Dataset.iter_batches(batch_format="pyarrow")`` (or a ``streaming_split``
iterator's) into :class:`~arrow_sparse.KeyedJagged` batches for a training loop.
:func:`read_keyed_jagged` is a Ray Data datasource that reads Parquet, applies a fitted
pipeline in its read tasks and makes blocks in the KeyedJagged's own Arrow layout.

Ray is optional (``pip install 'arrow-sparse[ray]'``) and imported on first use.
``arrow-sparse run SPEC --engine ray`` and ``run(..., engine="ray")`` use this
module; docs/pipeline.md shows ``streaming_split`` to several trainers.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .._optional import import_optional
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ..io.parquet import DEFAULT_BATCH_ROWS
from .core import Pipeline, StateMerger, call_in_context

if TYPE_CHECKING:
    import ray.data

    from ..keyed import KeyedJagged

__all__ = ["fit", "init", "iter_keyed_jagged", "map_batches", "output_batches",
           "read_keyed_jagged", "read_parquet"]


def _ray_data() -> Any:
    import_optional("ray", extra="ray")
    return import_optional("ray.data", extra="ray")


def _check(func: str, ds: Any, pipeline: Any) -> Any:
    rd = _ray_data()
    if not isinstance(ds, rd.Dataset):
        msg = f"{func}: ds must be a ray.data.Dataset, got {type(ds).__name__}"
        raise ArrowSparseTypeError(msg)
    if not isinstance(pipeline, Pipeline):
        msg = f"{func}: pipeline must be an arrow_sparse Pipeline, got {type(pipeline).__name__}"
        raise ArrowSparseTypeError(msg)
    return rd


def _actor_pool(func: str, rd: Any, concurrency: Any) -> Any:
    """Return an ``ActorPoolStrategy`` of ``concurrency`` actors, or (min, max) autoscaling.

    The default grows from 1 to the cluster's CPUs minus one, leaving a CPU for the
    read tasks that feed the actors (a pool holding every CPU would starve them).
    """
    if concurrency is None:
        import ray

        if not ray.is_initialized():
            ray.init()
        cpus = int(ray.cluster_resources().get("CPU", 1))
        return rd.ActorPoolStrategy(min_size=1, max_size=max(1, cpus - 1))
    if isinstance(concurrency, int) and not isinstance(concurrency, bool) and concurrency > 0:
        return rd.ActorPoolStrategy(size=concurrency)
    if (isinstance(concurrency, tuple) and len(concurrency) == 2
            and all(isinstance(c, int) and c > 0 for c in concurrency)
            and concurrency[0] <= concurrency[1]):
        return rd.ActorPoolStrategy(min_size=concurrency[0], max_size=concurrency[1])
    msg = (f"{func}: concurrency must be a positive int (actors) or a (min, max) pair, "
           f"got {concurrency!r}")
    raise ArrowSparseValueError(msg)


def _known_schema(ds: Any) -> pa.Schema | None:
    """Return the dataset's Arrow schema when Ray knows it without running anything, else None."""
    schema = ds.schema(fetch_if_missing=False)
    base = getattr(schema, "base_schema", None)
    return base if isinstance(base, pa.Schema) else None


class _Transform:
    """Ray actor: one copy of a fitted pipeline, applied to each Arrow batch."""

    def __init__(self, pipeline: Pipeline, schema: pa.Schema | None) -> None:
        self.pipeline = pipeline
        self.schema = schema

    def __call__(self, batch: pa.Table) -> pa.Table:
        out = self.pipeline.transform_table(batch)
        if self.schema is not None and not out.schema.equals(self.schema):
            if out.schema.names != self.schema.names and \
                    sorted(out.schema.names) == sorted(self.schema.names):
                # Ray's blocks of a hive directory put the partition columns last,
                # whereas its schema keeps them where the files store them (Polars)
                out = out.select(self.schema.names)
            out = out.cast(self.schema)
        return out


class _PartialState:
    """Ray actor: the partial state of step ``index`` for each batch, pickled in a one-row table."""

    def __init__(self, pipeline: Pipeline, index: int) -> None:
        self.steps = pipeline.steps[:index]
        self.step = pipeline.steps[index]

    def __call__(self, batch: pa.Table) -> pa.Table:
        table = Pipeline._apply(self.steps, batch)
        state = call_in_context(self.step.fit_batch, table, self.step.label)
        blob = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        return pa.table({"state": pa.array([blob], pa.large_binary())})


#: Loggers of Ray's Python side that print INFO lines on a driver's stderr.
_RAY_LOGGERS = ("ray", "ray.data", "ray.train", "ray.tune")


def init(*, verbose: bool = False) -> bool:
    """Start a Ray instance for a run (or join ``RAY_ADDRESS``'s), quiet unless ``verbose``.

    When Ray is already initialized nothing changes (whoever started it chose its
    logging). Otherwise Ray is started with ``log_to_driver=False`` and its loggers
    (``ray``, ``ray.data`` ...) at ERROR, and Ray Data's progress bars and progress
    log lines are turned off, so a run prints only its own summary and errors.
    ``verbose=True`` starts Ray with its defaults (INFO lines, workers' output).

    Parameters
    ----------
    verbose
        Keep Ray's own output.

    Returns
    -------
    bool
        True when this call started (or connected) Ray.

    Raises
    ------
    ModuleNotFoundError
        Ray is not installed (``pip install 'arrow-sparse[ray]'``).

    Examples
    --------
    >>> from arrow_sparse.pipeline import ray as asp_ray          # doctest: +SKIP
    >>> asp_ray.init()                                           # doctest: +SKIP
    True
    """
    import logging

    rd = _ray_data()
    import ray

    if ray.is_initialized():
        return False
    if verbose:
        ray.init()
        return True
    for name in _RAY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    rd.DataContext.get_current().enable_progress_bars = False
    ray.init(log_to_driver=False, logging_level=logging.ERROR, include_dashboard=False)
    for name in _RAY_LOGGERS:  # ray.init configures its loggers anew
        logging.getLogger(name).setLevel(logging.ERROR)
    context = rd.DataContext.get_current()
    context.enable_progress_bars = False
    if hasattr(context, "enable_operator_progress_bars"):
        context.enable_operator_progress_bars = False
    return True


def read_parquet(paths: Any, **kwargs: Any) -> ray.data.Dataset:
    """``ray.data.read_parquet`` of a path, a directory or a list of paths (hive partitions read).

    Parameters
    ----------
    paths
        File, directory or list of files (``str`` or ``os.PathLike``).
    **kwargs
        Passed to ``ray.data.read_parquet`` (``columns=``, ``override_num_blocks=``).

    Returns
    -------
    ray.data.Dataset

    Raises
    ------
    ModuleNotFoundError
        Ray is not installed (``pip install 'arrow-sparse[ray]'``).
    """
    rd = _ray_data()
    if isinstance(paths, (list, tuple)):
        paths = [os.fspath(p) for p in paths]
    elif isinstance(paths, (str, os.PathLike)):
        paths = os.fspath(paths)
    else:
        msg = f"read_parquet: paths must be a path or a list of paths, got {type(paths).__name__}"
        raise ArrowSparseTypeError(msg)
    return rd.read_parquet(paths, **kwargs)


def map_batches(ds: ray.data.Dataset, pipeline: Pipeline, *,
                batch_size: int | None = DEFAULT_BATCH_ROWS, concurrency: Any = None,
                num_cpus: float = 1.0, **kwargs: Any) -> ray.data.Dataset:
    """Transform a Ray dataset with a fitted pipeline, on an actor pool, Arrow to Arrow.

    Wraps ``ds.map_batches(..., batch_format="pyarrow", zero_copy_batch=True)`` with a
    callable class, so each actor receives the pipeline once (its vocabularies
    included) and compiles or loads its kernels once.

    Parameters
    ----------
    ds
        The input ``ray.data.Dataset`` (``ray.data.read_parquet(...)``).
    pipeline
        A fitted :class:`~arrow_sparse.Pipeline` (:func:`fit` it first, on the cluster,
        or locally).
    batch_size
        Rows per batch handed to the pipeline (None: one block per call).
    concurrency
        Actors: an int, or a ``(min, max)`` pair for an autoscaling pool. Default:
        from 1 to the cluster's CPUs minus one.
    num_cpus
        CPUs each actor reserves.
    **kwargs
        Passed on to ``Dataset.map_batches``.

    Returns
    -------
    ray.data.Dataset
        Lazy: nothing runs until it is consumed (``iter_batches``, ``write_parquet``,
        ``streaming_split``). Rows come out in batches of the input's order within
        each batch, but batches may be reordered; sort by a key to compare.

    Raises
    ------
    TypeError
        ``ds`` or ``pipeline`` of another kind.
    ValueError
        A pipeline with unfitted stateful steps; a bad ``concurrency``.

    Notes
    -----
    The output schema is cast to ``pipeline.output_schema(ds.schema())`` when Ray
    knows the input schema without running (Parquet input), so every block has
    the same schema. Embedding tables are loaded by each actor from their paths,
    which must be readable on every node.

    Examples
    --------
    >>> import ray                                               # doctest: +SKIP
    >>> from arrow_sparse.pipeline import ray as asp_ray        # doctest: +SKIP
    >>> ds = ray.data.read_parquet("data/sample_clicks.parquet")  # doctest: +SKIP
    >>> pipe = asp_ray.fit(ds, asp.Pipeline.load("data/example_pipeline.toml"))  # doctest: +SKIP
    >>> out = asp_ray.map_batches(ds, pipe)                      # doctest: +SKIP
    >>> out.write_parquet("/tmp/features")                       # doctest: +SKIP
    """
    func = "map_batches"
    rd = _check(func, ds, pipeline)
    if not pipeline.fitted:
        names = ", ".join(s.label for s in pipeline.steps if not s.fitted)
        msg = (f"{func}: the pipeline has unfitted steps ({names}); fit it first with "
               "arrow_sparse.pipeline.ray.fit(ds, pipeline) or Pipeline.fit")
        raise ArrowSparseValueError(msg)
    schema = _known_schema(ds)
    out_schema = pipeline.output_schema(schema) if schema is not None else None
    return ds.map_batches(_Transform, fn_constructor_kwargs={"pipeline": pipeline,
                                                             "schema": out_schema},
                          batch_size=batch_size, batch_format="pyarrow",
                          zero_copy_batch=True, compute=_actor_pool(func, rd, concurrency),
                          num_cpus=num_cpus, **kwargs)


def fit(ds: ray.data.Dataset, pipeline: Pipeline, *,
        batch_size: int | None = DEFAULT_BATCH_ROWS, concurrency: Any = None,
        num_cpus: float = 1.0, refit: bool = False) -> Pipeline:
    """Fit a pipeline's stateful steps on a Ray cluster, merging partial states on the driver.

    One pass over ``ds`` per stateful step, as :meth:`Pipeline.fit
    <arrow_sparse.Pipeline.fit>`: the workers apply the steps before it and compute
    each batch's partial state (a vocabulary's counts, a normalizer's moments); the
    driver merges them with the step's ``merge_states``. Only the states cross the
    network, never the data.

    Parameters
    ----------
    ds
        The input dataset.
    pipeline
        The pipeline; fitted in place.
    batch_size, concurrency, num_cpus
        As for :func:`map_batches`.
    refit
        Refit steps that are already fitted.

    Returns
    -------
    Pipeline
        ``pipeline``.

    Raises
    ------
    TypeError
        ``ds`` or ``pipeline`` of another kind.
    ValueError
        An empty dataset.

    Notes
    -----
    Vocabulary merges are exact, so a pipeline fitted here equals one fitted
    locally. Statistics (``normalize``) merge moments in whatever order the
    batches finish, which can change the last bits of the mean and deviation.

    Examples
    --------
    >>> from arrow_sparse.pipeline import ray as asp_ray        # doctest: +SKIP
    >>> pipe = asp_ray.fit(ds, asp.Pipeline.load("data/example_pipeline.toml"))  # doctest: +SKIP
    >>> pipe.fitted                                              # doctest: +SKIP
    True
    """
    func = "fit"
    rd = _check(func, ds, pipeline)
    for index, step in enumerate(pipeline.steps):
        if not step.stateful or (step.fitted and not refit):
            continue
        parts = ds.map_batches(_PartialState, fn_constructor_kwargs={"pipeline": pipeline,
                                                                     "index": index},
                               batch_size=batch_size, batch_format="pyarrow",
                               zero_copy_batch=True,
                               compute=_actor_pool(func, rd, concurrency), num_cpus=num_cpus)
        merger = StateMerger(step)
        for table in parts.iter_batches(batch_format="pyarrow", batch_size=None):
            for blob in table.column("state").to_pylist():
                merger.add(pickle.loads(blob))  # noqa: S301 - made by our own workers
        if not merger:
            msg = f"{func}: no batches to fit {step.label} on"
            raise ArrowSparseValueError(msg)
        step.set_state(merger.result())
    return pipeline


def output_batches(ds: ray.data.Dataset) -> Iterator[pa.RecordBatch]:
    """Stream a dataset's blocks to this process as Arrow record batches (no copy).

    Examples
    --------
    >>> batches = output_batches(map_batches(ds, pipe))          # doctest: +SKIP
    """
    for table in ds.iter_batches(batch_format="pyarrow", batch_size=None):
        yield from table.to_batches()


def iter_keyed_jagged(batches: Iterable[Any], keys: list[Hashable] | None = None,
                      weights: str | Mapping[Hashable, str] | None = None,
                      ) -> Iterator[KeyedJagged]:
    """Turn Arrow batches (a Ray iterator's) into :class:`~arrow_sparse.KeyedJagged` batches.

    Parameters
    ----------
    batches
        Tables or RecordBatches: ``ds.iter_batches(batch_format="pyarrow")``, or an
        iterator of ``ds.streaming_split(n)`` in a trainer.
    keys, weights
        As for :meth:`KeyedJagged.from_arrow <arrow_sparse.KeyedJagged.from_arrow>`:
        the list columns to take (default every list column) and their weights.

    Yields
    ------
    KeyedJagged
        One per batch, zero-copy where the columns' value types already agree.

    Raises
    ------
    TypeError
        A batch that is not a pyarrow Table or RecordBatch (iterate with
        ``batch_format="pyarrow"``).

    Examples
    --------
    Any iterable of Arrow batches works, so this runs without Ray:

    >>> t = pa.table({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]], "label": [1, 0, 1]})
    >>> for kj in iter_keyed_jagged(t.to_batches(max_chunksize=2), keys=["ids"]):
    ...     print(kj.keys(), kj["ids"].to_list())
    ['ids'] [[1, 2, 3], [2, 4, 6, 7]]
    ['ids'] [[3, 6]]
    """
    from ..keyed import KeyedJagged

    for position, batch in enumerate(batches):
        if not isinstance(batch, (pa.Table, pa.RecordBatch)):
            msg = (f"iter_keyed_jagged: batches must be pyarrow Tables or RecordBatches "
                   f"(iterate with batch_format='pyarrow') (first at position {position}: "
                   f"{type(batch).__name__})")
            raise ArrowSparseTypeError(msg)
        yield KeyedJagged.from_arrow(batch, keys=keys, weights=weights)


def _parquet_units(func: str, paths: Any) -> list[tuple[str, int, int]]:
    """``(file, row group, rows)`` of every row group of a file, directory or list of files."""
    import pyarrow.parquet as pq

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not isinstance(paths, (list, tuple)) or not paths:
        msg = f"{func}: paths must be a path or a non-empty list of paths, got {paths!r}"
        raise ArrowSparseTypeError(msg)
    files: list[str] = []
    for path in map(os.fspath, paths):
        if os.path.isdir(path):
            found = sorted(os.path.join(root, name) for root, _, names in os.walk(path)
                           for name in names if name.endswith(".parquet"))
            if not found:
                msg = f"{func}: paths has a directory with no .parquet file: {path!r}"
                raise ArrowSparseValueError(msg)
            files += found
        else:
            files.append(path)
    units = []
    for file in files:
        meta = pq.ParquetFile(file).metadata
        units += [(file, g, meta.row_group(g).num_rows) for g in range(meta.num_row_groups)]
    return units


def _read_keyed(units: list[tuple[str, int, int]], keys: list[Hashable] | None,
                weights: Any, pipeline: Pipeline | None, batch_rows: int) -> Iterator[pa.Table]:
    """Read the row groups' batches, through the pipeline, in the KeyedJagged layout."""
    import pyarrow.parquet as pq

    from ..keyed import KeyedJagged

    for file, group, _ in units:
        for batch in pq.ParquetFile(file).iter_batches(batch_size=batch_rows,
                                                        row_groups=[group]):
            table = pipeline.transform_table(batch) if pipeline is not None else batch
            kj = KeyedJagged.from_arrow(table, keys=keys, weights=weights)
            yield pa.Table.from_batches([kj.to_arrow()])


_DATASOURCE: list[type] = []


def _datasource_class() -> type:
    """Return the ``ray.data.Datasource`` subclass (made on first use: Ray is optional)."""
    if _DATASOURCE:
        return _DATASOURCE[0]
    rd = _ray_data()
    from ray.data.block import BlockMetadata

    class KeyedJaggedDatasource(rd.Datasource):
        """Parquet row groups -> fitted pipeline -> blocks in the KeyedJagged layout."""

        def __init__(self, units: list[tuple[str, int, int]], keys: Any, weights: Any,
                     pipeline: Pipeline | None, batch_rows: int) -> None:
            self.units, self.keys, self.weights = units, keys, weights
            self.pipeline, self.batch_rows = pipeline, batch_rows

        def get_name(self) -> str:
            return "KeyedJagged"

        def estimate_inmemory_data_size(self) -> int | None:
            return None

        def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                           data_context: Any = None) -> list[Any]:
            from functools import partial

            n = max(1, min(parallelism, len(self.units)))
            tasks = []
            for i in range(n):  # contiguous runs of row groups, in file order
                part = self.units[i * len(self.units) // n:(i + 1) * len(self.units) // n]
                meta = BlockMetadata(num_rows=sum(rows for *_, rows in part), size_bytes=None,
                                     exec_stats=None,
                                     input_files=tuple(dict.fromkeys(f for f, *_ in part)))
                read = partial(_read_keyed, part, self.keys, self.weights, self.pipeline,
                               self.batch_rows)
                tasks.append(rd.ReadTask(read, meta, per_task_row_limit=per_task_row_limit))
            return tasks

    _DATASOURCE.append(KeyedJaggedDatasource)
    return KeyedJaggedDatasource


def read_keyed_jagged(paths: Any, keys: list[Hashable] | None = None, *,
                      weights: str | Mapping[Hashable, str] | None = None,
                      pipeline: Pipeline | None = None,
                      batch_rows: int = DEFAULT_BATCH_ROWS, **kwargs: Any) -> ray.data.Dataset:
    """Read Parquet through a fitted pipeline into a Ray dataset of KeyedJagged batches.

    A ``ray.data.Datasource`` (``ray.data.read_datasource``): each read task reads a run
    of the input's row groups, ``batch_rows`` rows at a time, applies ``pipeline`` (if
    any) and makes each batch a :class:`~arrow_sparse.KeyedJagged` of ``keys``; its
    blocks are that KeyedJagged's Arrow layout (:meth:`KeyedJagged.to_arrow
    <arrow_sparse.KeyedJagged.to_arrow>`: one list column per key, value types made
    one, weights as ``KEY_weights`` columns). :func:`iter_keyed_jagged` of
    ``ds.iter_batches(batch_format="pyarrow")`` gives the KeyedJagged batches back
    without a copy.

    Parameters
    ----------
    paths
        A Parquet file, a directory of them (read recursively, in name order) or a list.
        Every worker must read them under the same names.
    keys, weights
        As for :meth:`KeyedJagged.from_arrow <arrow_sparse.KeyedJagged.from_arrow>`, of
        the pipeline's output.
    pipeline
        A fitted :class:`~arrow_sparse.Pipeline`, or None.
    batch_rows
        Rows per batch read and transformed (a row group's last batch may be shorter).
        Ray may join a read task's batches into one block (up to its target block
        size); the trainer's batch size is ``iter_batches(batch_size=...)``'s.
    **kwargs
        Passed to ``ray.data.read_datasource`` (``override_num_blocks=``, ``num_cpus=``).

    Returns
    -------
    ray.data.Dataset

    Raises
    ------
    TypeError
        ``paths`` or ``pipeline`` of another kind.
    ValueError
        An unfitted pipeline; a directory with no Parquet file; ``batch_rows`` below 1.

    Examples
    --------
    >>> ds = read_keyed_jagged("data/sample_clicks.parquet", keys=["item_ids"])  # doctest: +SKIP
    >>> batches = ds.iter_batches(batch_format="pyarrow")        # doctest: +SKIP
    >>> next(iter_keyed_jagged(batches)).keys()                  # doctest: +SKIP
    ['item_ids']
    """
    func = "read_keyed_jagged"
    if pipeline is not None and not isinstance(pipeline, Pipeline):
        msg = f"{func}: pipeline must be an arrow_sparse Pipeline, got {type(pipeline).__name__}"
        raise ArrowSparseTypeError(msg)
    if pipeline is not None and not pipeline.fitted:
        names = ", ".join(s.label for s in pipeline.steps if not s.fitted)
        msg = f"{func}: the pipeline has unfitted steps ({names}); fit it first"
        raise ArrowSparseValueError(msg)
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        msg = f"{func}: batch_rows must be a positive int, got {batch_rows!r}"
        raise ArrowSparseValueError(msg)
    units = _parquet_units(func, paths)
    source = _datasource_class()(units, keys, weights, pipeline, batch_rows)
    return _ray_data().read_datasource(source, **kwargs)
