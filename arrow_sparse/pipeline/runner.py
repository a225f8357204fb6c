"""The local runner: stream a Parquet input through a pipeline into Parquet, IPC or Flight."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from .._progress import Progress, _si
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ..io import read_parquet, serve_flight, write_ipc, write_parquet
from .core import Pipeline

__all__ = ["DEFAULT_BATCH_ROWS", "RunSummary", "run"]

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
        The resolved paths (output may be a ``grpc://`` location).
    rows_in, rows_out
        Rows read and written.
    bytes_in
        Arrow (in-memory) bytes of the batches read.
    bytes_out
        Size of the output file (Arrow bytes of the batches sent, for Flight).
    seconds, fit_seconds
        Wall time of the whole run, and of the fitting passes within it.
    """

    input: str
    output: str
    rows_in: int = 0
    rows_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    seconds: float = 0.0
    fit_seconds: float = 0.0

    @property
    def mb_per_s(self) -> float:
        """Input megabytes (10**6 bytes, Arrow in memory) per second of the run."""
        return self.bytes_in / 1e6 / self.seconds if self.seconds > 0 else 0.0

    @property
    def rows_per_s(self) -> float:
        """Input rows per second of the run."""
        return self.rows_in / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Return the fields plus ``mb_per_s`` and ``rows_per_s``."""
        out = dataclasses.asdict(self)
        out.update(mb_per_s=self.mb_per_s, rows_per_s=self.rows_per_s)
        return out

    def __str__(self) -> str:
        return (f"{self.rows_in:,} rows in, {self.rows_out:,} rows out -> {self.output}  "
                f"{self.seconds:.2f} s (fit {self.fit_seconds:.2f} s)  "
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


def _output_kind(output: str) -> str:
    if output.startswith(("flight://", "grpc://", "grpc+tcp://")):
        return "flight"
    lower = output.lower()
    if lower.endswith(_PARQUET):
        return "parquet"
    if lower.endswith(_IPC_FILE):
        return "ipc"
    if lower.endswith(_IPC_STREAM):
        return "ipc-stream"
    msg = (f"run: cannot tell the output format of {output!r}; end it in .parquet, "
           ".arrow/.ipc/.feather (IPC file) or .arrows (IPC stream), or give "
           "flight://HOST:PORT")
    raise ArrowSparseValueError(msg)


def run(spec_or_pipeline: Any, input: str | None = None, output: str | None = None, *,
        batch_rows: int | None = None, progress: Any = None, save_pipeline: str | None = None,
        block: bool = True) -> RunSummary:
    """Run a pipeline over a Parquet input, streaming batch by batch, and write the output.

    Unfitted stateful steps (categorify) are fitted first, by streaming passes over
    the input; then a last pass transforms and writes. Only one batch is in memory
    at a time (plus a Parquet row group being written).

    Parameters
    ----------
    spec_or_pipeline
        A :class:`Pipeline`, or the path of a TOML spec.
    input
        Parquet file, directory or list of files; default the spec's ``input``.
    output
        ``*.parquet``, ``*.arrow`` / ``*.ipc`` / ``*.feather`` (IPC file), ``*.arrows``
        (IPC stream), or ``flight://HOST:PORT`` to serve the output over Arrow Flight
        (each reader gets a fresh transformed stream); default the spec's ``output``.
        The parent directory is created.
    batch_rows
        Rows per batch read (default the spec's ``batch_rows``, else 65,536).
    progress
        None: no bar; True: a bar on stderr when it is a terminal; or a
        :class:`~arrow_sparse._progress.Progress`-like object with ``update(rows)``.
    save_pipeline
        Write the fitted pipeline (spec + vocabularies) to this TOML path.
    block
        For Flight output: serve until interrupted (True), or return at once with the
        server in ``summary.server`` (False).

    Returns
    -------
    RunSummary
        Rows in/out, bytes, seconds and rates (``str()`` gives one line).

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
        pipe = Pipeline.load(pipe)
    if not isinstance(pipe, Pipeline):
        msg = f"run: expected a Pipeline or a spec path, got {type(pipe).__name__}"
        raise ArrowSparseTypeError(msg)
    src = input if input is not None else pipe.resolve(pipe.input)
    dst = output if output is not None else pipe.resolve(pipe.output)
    if src is None:
        msg = "run: no input; give one or set 'input' in the spec's [pipeline] table"
        raise ArrowSparseValueError(msg)
    if dst is None:
        msg = "run: no output; give one or set 'output' in the spec's [pipeline] table"
        raise ArrowSparseValueError(msg)
    kind = _output_kind(str(dst))
    rows = batch_rows or pipe.batch_rows or DEFAULT_BATCH_ROWS
    data = read_parquet(src, batch_rows=rows)
    out_schema = pipe.output_schema(data.schema)  # fail early on a bad spec

    def bar(label: str) -> Any:
        if progress is None or progress is False:
            return None
        if progress is True:
            return _RunProgress(data.num_rows, label=label)
        return progress

    summary = RunSummary(input=str(src), output=str(dst))
    if not pipe.fitted:
        t0 = time.perf_counter()
        p = bar("fit")
        try:
            pipe.fit(data, progress=p)
        finally:
            if p is not None and hasattr(p, "close") and progress is True:
                p.close()
        summary.fit_seconds = time.perf_counter() - t0
    if save_pipeline is not None:
        pipe.save(save_pipeline)

    def counted(p: Any) -> Iterator[pa.RecordBatch]:
        for batch in data:
            summary.rows_in += batch.num_rows
            summary.bytes_in += batch.nbytes
            if p is not None:
                if hasattr(p, "bytes"):
                    p.bytes += batch.nbytes
                p.update(batch.num_rows)
            yield batch

    def stream(p: Any) -> Iterator[pa.RecordBatch]:
        sent = 0
        for out in pipe.transform_batches(counted(p)):
            summary.rows_out += out.num_rows
            sent += 1
            if kind == "flight":
                summary.bytes_out += out.nbytes
            yield out.cast(out_schema) if out.schema != out_schema else out
        if not sent:
            yield pa.RecordBatch.from_pylist([], schema=out_schema)

    if kind == "flight":
        location = "grpc://" + str(dst).split("://", 1)[1]
        server = serve_flight(lambda: stream(None), location, schema=out_schema,
                              batch_rows=None, block=block)
        summary.output = server.location if not block else location
        summary.seconds = time.perf_counter() - start
        if not block:
            summary.server = server  # type: ignore[attr-defined]
        return summary

    parent = os.path.dirname(os.path.abspath(str(dst)))
    os.makedirs(parent, exist_ok=True)
    p = bar("run")
    try:
        if kind == "parquet":
            write_parquet(stream(p), str(dst))
        else:
            write_ipc(stream(p), str(dst), stream=kind == "ipc-stream")
    finally:
        if p is not None and hasattr(p, "close") and progress is True:
            p.close()
    summary.bytes_out = os.path.getsize(str(dst))
    summary.seconds = time.perf_counter() - start
    return summary
