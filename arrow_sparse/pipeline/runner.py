"""The local runner: stream a Parquet input through a pipeline into Parquet, IPC or Flight."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import pyarrow as pa

from .._progress import Progress, _si
from ..errors import (
    ArrowSparseError,
    ArrowSparseIOError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)
from ..io import read_parquet, serve_flight, write_ipc, write_parquet, write_parquet_dataset
from ..io.parquet import check_partition_by
from ._parallel import background, default_threads, ordered_map
from .core import Pipeline, call_in_context, located_batches, with_context

__all__ = ["DEFAULT_BATCH_ROWS", "RunSummary", "run"]

logger = logging.getLogger(__name__)

DEFAULT_BATCH_ROWS = 65_536
_PARQUET = (".parquet", ".pq")
_IPC_FILE = (".arrow", ".ipc", ".feather")
_IPC_STREAM = (".arrows",)


@dataclasses.dataclass
class RunSummary:
    """What a :func:`run` did.

    Attributes
    ----------
    input, output
        The resolved paths (output may be a ``grpc://`` location: the real one).
    engine, threads
        The engine (``"local"`` or ``"ray"``) and the local engine's threads.
    rows_in, rows_out
        Rows read and written (for Flight: sent, summed over the readers' shards).
        When leading filters are applied in the scan (``Pipeline.pushdown_filter``),
        ``rows_in`` of a file output is the input's row count from the Parquet
        footers, rows skipped by the scan included.
    bytes_in
        Arrow (in-memory) bytes of the batches read. With the Ray engine the input is
        read by the workers, and this is the uncompressed size in the Parquet footers.
    bytes_out
        Size of the output file, or of all the files of a directory output (Arrow
        bytes of the batches sent, for Flight).
    seconds, fit_seconds
        Wall time of the whole run, and of the fitting passes within it.
    stream_seconds
        Flight: from the start of the first reader's stream to the end of the last
        one (the rates use it, not the idle serving time); 0 otherwise.
    readers
        Flight: one dict per stream served (``ticket``, ``rows_in``, ``rows_out``,
        ``bytes_out``, ``seconds``, ``complete``), in the order they ended.
    """

    input: str
    output: str
    engine: str = "local"
    threads: int = 1
    rows_in: int = 0
    rows_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    seconds: float = 0.0
    fit_seconds: float = 0.0
    stream_seconds: float = 0.0
    readers: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def _busy_seconds(self) -> float:
        return self.stream_seconds if self.readers else self.seconds

    @property
    def mb_per_s(self) -> float:
        """Input megabytes (10**6 bytes, Arrow in memory) per second of the run."""
        s = self._busy_seconds
        return self.bytes_in / 1e6 / s if s > 0 else 0.0

    @property
    def rows_per_s(self) -> float:
        """Input rows per second of the run."""
        s = self._busy_seconds
        return self.rows_in / s if s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Return the fields plus ``mb_per_s`` and ``rows_per_s``."""
        out = dataclasses.asdict(self)
        out.update(mb_per_s=self.mb_per_s, rows_per_s=self.rows_per_s)
        return out

    def __str__(self) -> str:
        readers = f" ({len(self.readers)} streams)" if self.readers else ""
        return (f"{self.rows_in:,} rows in, {self.rows_out:,} rows out -> {self.output}"
                f"{readers}  {self.seconds:.2f} s (fit {self.fit_seconds:.2f} s)  "
                f"{_si(self.rows_per_s)} rows/s  {self.mb_per_s:.1f} MB/s")


class _RunProgress(Progress):
    """A Progress bar that also shows the Arrow megabytes per second."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bytes = 0

    def render(self, elapsed: float, bar_width: int = 20) -> str:  # noqa: D102
        text = super().render(elapsed, bar_width)
        if elapsed > 0 and self.bytes:
            text += f"  {self.bytes / 1e6 / elapsed:.1f} MB/s"
        return text


def _output_kind(output: str, dataset: bool = False) -> str:
    flight = output.startswith(("flight://", "grpc://", "grpc+tcp://"))
    lower = output.lower()
    if dataset:
        if flight or lower.endswith(_IPC_FILE + _IPC_STREAM):
            msg = (f"run: partition_by and max_rows_per_file write a directory of Parquet "
                   f"files, not {output!r}; give a directory path as the output")
            raise ArrowSparseValueError(msg)
        return "dataset"
    if flight:
        return "flight"
    if lower.endswith(_PARQUET):
        return "parquet"
    if lower.endswith(_IPC_FILE):
        return "ipc"
    if lower.endswith(_IPC_STREAM):
        return "ipc-stream"
    msg = (f"run: cannot tell the output format of {output!r}; end it in .parquet, "
           ".arrow/.ipc/.feather (IPC file) or .arrows (IPC stream), or give "
           "flight://HOST:PORT; or, for a directory of Parquet files, give "
           "partition_by or max_rows_per_file")
    raise ArrowSparseValueError(msg)


def _check_threads(threads: Any) -> int:
    if threads is None:
        return default_threads()
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        msg = f"run: threads must be a positive integer or None, got {threads!r}"
        raise ArrowSparseValueError(msg)
    return threads


def _prepare_save(path: str | os.PathLike[str] | None) -> str | None:
    """Create the directory of ``save_pipeline`` now, before any fitting pass."""
    if path is None:
        return None
    text = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(text))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        msg = f"run: cannot create the directory of save_pipeline {text!r} ({exc})"
        raise ArrowSparseIOError(msg) from None
    if not os.access(parent, os.W_OK):
        msg = f"run: cannot write save_pipeline {text!r} (permission denied)"
        raise ArrowSparseIOError(msg)
    return text


def _input_paths(src: Any) -> list[str]:
    """Return the paths a run's input names (a path or a list of them; a dataset: none)."""
    items = src if isinstance(src, (list, tuple)) else [src]
    return [os.fsdecode(os.fspath(p)) for p in items if isinstance(p, (str, os.PathLike))]


def _check_not_input(arg: str, path: str, src: Any, files: list[str]) -> None:
    """Refuse a path to be written that is, or lies inside, one of the input paths.

    Links are resolved first (``realpath``), and an existing file that is the same file
    as an input file under another name (a hard link) is refused as well: writing it
    would replace the data while it is being read.
    """
    target = os.path.realpath(path)
    for given in _input_paths(src):
        real = os.path.realpath(given)
        if target == real or os.path.commonpath([target, real]) == real \
                and os.path.isdir(real):
            where = "is" if target == real else "lies inside"
            msg = (f"run: {arg} {path!r} {where} the input {given!r}; writing it would "
                   "change the input while it is read; choose a path outside the input")
            raise ArrowSparseValueError(msg)
    if os.path.exists(target):
        for name in files:
            try:
                same = os.path.samefile(target, name)
            except OSError:
                continue
            if same:
                msg = (f"run: {arg} {path!r} is the input file {name!r} (a link to it); "
                       "writing it would change the input while it is read; choose a "
                       "path outside the input")
                raise ArrowSparseValueError(msg)


def _stale_temporaries(path: str, directories: bool = False) -> list[str]:
    """Return the temporaries a killed writer of ``path`` left beside it.

    Exactly the names :func:`arrow_sparse.io._common.atomic_path` gives them,
    ``.<name>.<12 hex digits>.tmp`` in the output's directory, and nothing else:
    files, or with ``directories`` the directories
    :func:`arrow_sparse.io._common.atomic_directory` writes (and the ``.old`` name
    it moves a replaced output to).
    """
    path = path.rstrip(os.sep) or path
    directory = os.path.dirname(os.path.abspath(path))
    ends = r"\.(tmp|old)" if directories else r"\.tmp"
    pattern = re.compile(r"\." + re.escape(os.path.basename(path)) + r"\.[0-9a-f]{12}" + ends)
    is_kind = os.path.isdir if directories else os.path.isfile
    try:
        names = os.listdir(directory)
    except OSError:  # no directory yet: nothing left behind
        return []
    return [os.path.join(directory, n) for n in sorted(names) if pattern.fullmatch(n)
            and is_kind(os.path.join(directory, n))
            and not os.path.islink(os.path.join(directory, n))]


def _remove_stale_temporaries(path: str, directories: bool = False) -> None:
    """Remove what :func:`_stale_temporaries` finds (a SIGKILL, a crash or a power cut).

    An interrupted or terminated write removes its own temporary; these are the ones
    of a process that was killed outright, one per retry. Two runs writing the same
    output at the same time are not supported (the second would remove the first's
    temporary, and the first would then fail).
    """
    for stale in _stale_temporaries(path, directories):
        try:
            if directories:
                shutil.rmtree(stale)
            else:
                os.unlink(stale)
        except FileNotFoundError:
            continue
        except OSError as exc:
            msg = f"run: cannot remove the stale temporary {stale!r} ({exc.strerror or exc})"
            raise ArrowSparseIOError(msg) from None
        logger.info("run: removed %s, left by an earlier run that was killed", stale)


def _check_input_exists(src: Any) -> None:
    """Refuse an input path that does not exist, naming it as the run's input."""
    for given in _input_paths(src):
        if "://" not in given and not os.path.exists(given):
            msg = f"run: input {given!r} does not exist"
            raise ArrowSparseIOError(msg)


def _check_output_writable(path: str) -> None:
    """Create the output's directory and make sure a file can be created in it.

    Done before any pass over the data, so that an unwritable output fails at once
    (and says it is the output) instead of after the fitting passes.
    """
    import tempfile

    parent = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(parent, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=parent, prefix=f".{os.path.basename(path)}.",
                                         suffix=".probe"):
            pass
    except OSError as exc:
        msg = f"run: cannot write the output {path!r} ({exc.strerror or exc})"
        raise ArrowSparseIOError(msg) from None


def _input_schema_check(pipe: Pipeline, data: Any, src: Any) -> pa.Schema:
    try:
        return pipe.output_schema(data.schema)
    except ArrowSparseError as exc:
        files = data.files
        name = files[0] if len(files) == 1 else str(src)
        new = with_context(exc, f"input {name!r}")
        raise new from exc


def run(spec_or_pipeline: Any, input: Any = None, output: str | None = None, *,
        engine: str = "local", batch_rows: int | None = None, threads: int | None = None,
        progress: Any = None, save_pipeline: str | os.PathLike[str] | None = None,
        block: bool = True, partition_by: str | list[str] | None = None,
        max_rows_per_file: int | None = None, verbose: bool = False,
        allow_python_steps: bool = False,
        flight_security: dict[str, Any] | None = None) -> RunSummary:
    """Run a pipeline over a Parquet input, streaming batch by batch, and write the output.

    Unfitted stateful steps (categorify, normalize) are fitted first, by streaming
    passes over the input; then a last pass transforms and writes. Memory holds a few
    batches at a time (plus a Parquet row group being written), never the data set.

    Parameters
    ----------
    spec_or_pipeline
        A :class:`Pipeline`, or the path of a TOML spec.
    input
        Parquet file, directory or list of files; default the spec's ``input``.
    output
        ``*.parquet``, ``*.arrow`` / ``*.ipc`` / ``*.feather`` (IPC file), ``*.arrows``
        (IPC stream), or ``flight://HOST:PORT`` to serve the output over Arrow Flight;
        default the spec's ``output``. The parent directory is created. With
        ``partition_by`` or ``max_rows_per_file``: a directory of Parquet files.
    engine
        ``"local"``: this process, ``threads`` batches at a time. ``"ray"``: fit and
        transform on Ray Data (:mod:`arrow_sparse.pipeline.ray`; connects to the
        cluster of ``RAY_ADDRESS`` or starts a local one), the output written here.
        Ray may reorder rows; Flight output needs the local engine.
    batch_rows
        Rows per batch read (default the spec's ``batch_rows``, else 65,536).
    threads
        Local engine: batches transformed at once on threads (default: the cores
        this process may use, at most 8). The output order is the input order.
    progress
        None: no bar; True: a bar on stderr when it is a terminal or a Jupyter
        notebook cell's output (the one-line bar, rewritten in place; no ipywidgets
        needed); or a :class:`~arrow_sparse._progress.Progress`-like object with
        ``update(rows)``.
    save_pipeline
        Write the fitted pipeline (spec + vocabularies) to this TOML path; its
        directory is created before fitting.
    block
        For Flight output: print the listening location to stderr and serve until
        interrupted (True), or return at once with the server in ``summary.server``
        (False).
    partition_by
        Output columns whose values name hive directories of the output
        (``day=mon/part-0.parquet``); they are stored in the directory names, not in
        the files (see :func:`~arrow_sparse.io.write_parquet_dataset`).
    max_rows_per_file
        Start a new output file every this many rows (of a partition).
    verbose
        With ``engine="ray"``: let Ray print its own logs (its INFO lines, its
        workers' output, Ray Data's progress). By default a Ray instance this run
        starts is quiet: only errors reach stderr.
    allow_python_steps
        With a spec path: accept its ``type = "python"`` steps, which run Python code
        (:func:`~arrow_sparse.pipeline.register_step`); refused by default.
    flight_security
        For Flight output: ``tls_cert_file``, ``tls_key_file``, ``token`` and
        ``token_file``, passed to :func:`~arrow_sparse.io.serve_flight` (without a
        token, ``ARROW_SPARSE_FLIGHT_TOKEN`` is read; docs/io.md, "Securing a server").

    Returns
    -------
    RunSummary
        Rows in/out, bytes, seconds and rates (``str()`` gives one line).

    Raises
    ------
    KeyError, TypeError
        The input lacks a column a step needs, or holds it with the wrong type; the
        message names the input and the step.
    ValueError
        No input or output; an unknown output format or engine; an output that is or
        lies inside the input; bad data in a batch (the message names the file, row
        group and rows, then the step).
    ArrowSparseIOError
        A missing or unreadable input, an unwritable output or ``save_pipeline``
        directory (checked before any pass over the data).

    Notes
    -----
    A file output is written to a hidden temporary beside it and renamed when
    complete; an exception (Ctrl-C included) removes the temporary. Temporaries of
    the same output that a killed run left behind (``.<name>.<12 hex>.tmp``) are
    removed at the start, so two runs must not write one output at once. An output
    or ``save_pipeline`` that is, links to or lies inside an input is refused. A
    directory output is written the same way (a temporary directory, renamed); it
    replaces an existing directory only when that holds Parquet files alone, and
    it must not hold the input.

    Examples
    --------
    >>> import tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "f.parquet")
    >>> s = run("data/example_pipeline.toml", output=out)
    >>> s.rows_in, s.rows_out
    (100000, 100000)
    """
    start = time.perf_counter()
    pipe = spec_or_pipeline
    if isinstance(pipe, (str, os.PathLike)):
        pipe = Pipeline.load(pipe, allow_python_steps=allow_python_steps)
    if not isinstance(pipe, Pipeline):
        msg = f"run: expected a Pipeline or a spec path, got {type(pipe).__name__}"
        raise ArrowSparseTypeError(msg)
    if engine not in ("local", "ray"):
        msg = f"run: engine must be 'local' or 'ray', got {engine!r}"
        raise ArrowSparseValueError(msg)
    src = input if input is not None else pipe.resolve(pipe.input)
    dst = output if output is not None else pipe.resolve(pipe.output)
    if src is None:
        msg = "run: no input; give one or set 'input' in the spec's [pipeline] table"
        raise ArrowSparseValueError(msg)
    if dst is None:
        msg = "run: no output; give one or set 'output' in the spec's [pipeline] table"
        raise ArrowSparseValueError(msg)
    dataset = partition_by is not None or max_rows_per_file is not None
    kind = _output_kind(str(dst), dataset)
    if max_rows_per_file is not None and (isinstance(max_rows_per_file, bool) or not
                                          isinstance(max_rows_per_file, int)
                                          or max_rows_per_file < 1):
        msg = f"run: max_rows_per_file must be a positive integer, got {max_rows_per_file!r}"
        raise ArrowSparseValueError(msg)
    if kind == "flight" and engine == "ray":
        msg = ("run: Flight output needs engine='local' (each reader's shard is "
               "transformed here); with Ray, write Parquet, or hand Ray's own "
               "streaming_split iterators to the trainers")
        raise ArrowSparseValueError(msg)
    threads = _check_threads(threads)
    rows = batch_rows or pipe.batch_rows or DEFAULT_BATCH_ROWS
    _check_input_exists(src)
    data = read_parquet(src, batch_rows=rows)
    if kind != "flight":  # before any pass: the output must not replace the input
        _check_not_input("output", os.fsdecode(os.fspath(dst)), src, list(data.files))
        if kind == "dataset":
            _check_input_not_inside(os.fsdecode(os.fspath(dst)), src, list(data.files))
        _remove_stale_temporaries(os.fsdecode(os.fspath(dst)), kind == "dataset")
        _check_output_writable(os.fsdecode(os.fspath(dst)))
    if save_pipeline is not None:
        _check_not_input("save_pipeline", os.fsdecode(os.fspath(save_pipeline)), src,
                         list(data.files))
    out_schema = _input_schema_check(pipe, data, src)  # fail early on a bad spec
    if kind == "dataset":
        check_partition_by("run", partition_by, out_schema)
    rows_total = data.num_rows
    if engine == "local":
        # Leading filters run in the scan: row groups their statistics rule out are
        # never read (the filter steps still run, on rows they keep).
        pushed = pipe.pushdown_filter(data.schema)
        if pushed is not None:
            data = read_parquet(src, batch_rows=rows, filter=pushed)
    data = data.with_columns(pipe.input_columns(data.schema))  # decode only what is used
    save_path = _prepare_save(save_pipeline)

    def bar(label: str, total: int | None) -> Any:
        if progress is None or progress is False:
            return None
        if progress is True:
            return _RunProgress(total, label=label)
        return progress

    summary = RunSummary(input=str(src), output=str(dst), engine=engine, threads=threads)
    ray_data = None
    if engine == "ray":
        from . import ray as pipeline_ray

        pipeline_ray.init(verbose=verbose)
        ray_data = pipeline_ray.read_parquet(src)
    passes = pipe.passes()
    if passes:
        t0 = time.perf_counter()
        p = bar("fit", data.num_rows * passes if data.num_rows else None)
        try:
            if ray_data is not None:
                pipeline_ray.fit(ray_data, pipe, batch_size=rows)
            else:
                pipe.fit(data, progress=p, threads=threads)
        finally:
            _close(p, progress)
        summary.fit_seconds = time.perf_counter() - t0
    if save_path is not None:
        pipe.save(save_path)

    if kind == "flight":
        return _serve(pipe, data, out_schema, str(dst), summary, threads, block, start,
                      flight_security or {})

    def stream(p: Any) -> Iterator[pa.RecordBatch]:
        if ray_data is not None:
            pairs: Iterator[tuple[pa.RecordBatch | None, pa.RecordBatch]] = (
                (None, out) for out in pipeline_ray.output_batches(
                    pipeline_ray.map_batches(ray_data, pipe, batch_size=rows)))
        else:
            pairs = ordered_map(partial(_transform_at, pipe), located_batches(data), threads)
            if threads > 1:  # read and transform on another thread while this one writes
                pairs = background(pairs, depth=threads)
        sent = 0
        for batch, out in pairs:
            n = batch.num_rows if batch is not None else 0
            summary.rows_in += n
            summary.bytes_in += batch.nbytes if batch is not None else 0
            summary.rows_out += out.num_rows
            if p is not None:
                if hasattr(p, "bytes") and batch is not None:
                    p.bytes += batch.nbytes
                p.update(n if batch is not None else out.num_rows)
            sent += 1
            yield out.cast(out_schema) if out.schema != out_schema else out
        if not sent:
            yield pa.RecordBatch.from_pylist([], schema=out_schema)

    os.makedirs(os.path.dirname(os.path.abspath(str(dst))), exist_ok=True)
    p = bar("run" if engine == "local" else "run (ray)", data.num_rows)
    try:
        if kind == "parquet":
            write_parquet(stream(p), str(dst))
        elif kind == "dataset":
            write_parquet_dataset(stream(p), str(dst), partition_by=partition_by,
                                  max_rows_per_file=max_rows_per_file)
        else:
            write_ipc(stream(p), str(dst), stream=kind == "ipc-stream")
    finally:
        _close(p, progress)
    if ray_data is not None:  # the input was read by the workers: totals from the footers
        summary.rows_in = data.num_rows or 0
        summary.bytes_in = _footer_bytes(data)
    elif data.num_rows is None and rows_total is not None:
        summary.rows_in = rows_total  # a pushed-down filter skipped some: count them in
    summary.bytes_out = _size(str(dst))
    summary.seconds = time.perf_counter() - start
    return summary


def _size(path: str) -> int:
    """Bytes of a file, or of the files under a directory."""
    if not os.path.isdir(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(root, n))
               for root, _, names in os.walk(path) for n in names)


def _check_input_not_inside(path: str, src: Any, files: list[str]) -> None:
    """Refuse a directory output that holds an input (replacing it would delete the input)."""
    target = os.path.realpath(path)
    for given in [*_input_paths(src), *files]:
        real = os.path.realpath(given)
        if os.path.commonpath([target, real]) == target:
            msg = (f"run: output {path!r} holds the input {given!r}; writing the output "
                   "directory would replace the input; choose a directory outside it")
            raise ArrowSparseValueError(msg)


def _close(p: Any, progress: Any) -> None:
    if p is not None and progress is True:
        p.close()


def _footer_bytes(data: Any) -> int:
    """Uncompressed bytes of the input's row groups, from the Parquet footers."""
    import pyarrow.parquet as pq

    total = 0
    for path in data.files:
        meta = pq.read_metadata(path)
        total += sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    return total


def _serve(pipe: Pipeline, data: Any, out_schema: pa.Schema, dst: str, summary: RunSummary,
           threads: int, block: bool, start: float,
           security: dict[str, Any]) -> RunSummary:
    """Serve the pipeline's output over Flight: each reader's shard is transformed for it."""
    lock = threading.Lock()
    window: list[float] = []

    def shard(i: int, n: int) -> Iterator[pa.RecordBatch]:
        reader = {"ticket": f"shard={i}/{n}", "rows_in": 0, "rows_out": 0, "bytes_out": 0,
                  "seconds": 0.0, "complete": False}
        t0 = time.perf_counter()
        try:
            for batch, out in ordered_map(partial(_transform_at, pipe),
                                          located_batches(data, i, n), threads):
                if out.schema != out_schema:
                    out = out.cast(out_schema)
                with lock:
                    reader["rows_in"] += batch.num_rows
                    reader["rows_out"] += out.num_rows
                    reader["bytes_out"] += out.nbytes
                    summary.rows_in += batch.num_rows
                    summary.bytes_in += batch.nbytes
                    summary.rows_out += out.num_rows
                    summary.bytes_out += out.nbytes
                yield out
            reader["complete"] = True
        finally:
            t1 = time.perf_counter()
            reader["seconds"] = t1 - t0
            with lock:
                summary.readers.append(reader)
                window.extend((t0, t1))
                summary.stream_seconds = max(window) - min(window)
            if block:
                state = "" if reader["complete"] else " (ended early)"
                print(f"run: sent {reader['ticket']}: {reader['rows_out']:,} rows, "
                      f"{reader['bytes_out'] / 1e6:.1f} MB in {reader['seconds']:.2f} s{state}",
                      file=sys.stderr, flush=True)

    location = "grpc://" + dst.split("://", 1)[1]
    server = serve_flight(shard, location, schema=out_schema, batch_rows=None, sharded=True,
                          **security)
    summary.output = server.location
    if not block:
        summary.seconds = time.perf_counter() - start
        summary.server = server  # type: ignore[attr-defined]
        return summary
    tickets = ", ".join(t.decode() for t in server.tickets)
    print(f"run: serving the output of {summary.input} at {server.location} "
          f"(tickets {tickets}, or shard=i/n for n readers); Ctrl-C to stop",
          file=sys.stderr, flush=True)
    server.serve()
    summary.seconds = time.perf_counter() - start
    return summary


def _transform_at(pipe: Pipeline, item: tuple[pa.RecordBatch, str],
                  ) -> tuple[pa.RecordBatch, pa.RecordBatch]:
    batch, where = item
    return batch, call_in_context(pipe.transform_batch, batch, where)
