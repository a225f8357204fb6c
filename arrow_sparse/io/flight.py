"""Arrow Flight: stream a source's record batches to trainer processes, one shard per ticket.

``serve_flight`` starts a Flight server on background threads and returns a
:class:`FlightServer` handle; ``flight_batches`` is the client, an iterator of record
batches (or :class:`~arrow_sparse.KeyedJagged` batches). A ticket ``b"shard=i/n"``
asks for shard ``i`` of ``n``: the batches ``i, i+n, i+2n, ...`` of the source's
batch stream. ``pyarrow.flight`` is imported on first use, not with the package.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pyarrow as pa

from .. import _validate as v
from ..errors import ArrowSparseError, ArrowSparseTypeError, ArrowSparseValueError
from ._common import ArrowSparseIOError, as_batches, stamp_schema
from .parquet import DEFAULT_BATCH_ROWS, _check_keyed, _check_names, read_parquet

if TYPE_CHECKING:
    import pyarrow.flight as fl

__all__ = [
    "DEFAULT_TIMEOUT",
    "FLIGHT_PATH",
    "ArrowSparseFlightError",
    "FlightBatches",
    "FlightServer",
    "flight_batches",
    "serve_flight",
]

logger = logging.getLogger(__name__)

#: Default ``timeout`` of :func:`flight_batches`: seconds to wait for the server to
#: answer, and then for each batch.
DEFAULT_TIMEOUT = 60.0
#: The path of the one flight a :func:`serve_flight` server offers
#: (``FlightDescriptor.for_path("arrow_sparse")``).
FLIGHT_PATH = "arrow_sparse"
#: Default seconds :meth:`FlightServer.shutdown` waits for the streams in flight to end.
SHUTDOWN_TIMEOUT = 10.0

_TICKET = re.compile(rb"shard=(\d{1,9})/(\d{1,9})")


class ArrowSparseFlightError(ArrowSparseError, RuntimeError):
    """A Flight request or stream that failed (also a ``RuntimeError``).

    A server that cannot be reached or stopped answering, a source that raised while
    producing batches (the message carries its message), or a server shutting down
    while the stream was in flight.
    """


# --------------------------------------------------------------------------- tickets
def shard_ticket(shard: int, num_shards: int) -> bytes:
    """Return the ticket ``b"shard=i/n"`` for shard ``shard`` of ``num_shards``.

    Parameters
    ----------
    shard
        Which shard, ``0 <= shard < num_shards``.
    num_shards
        How many shards the batch stream is dealt into.

    Returns
    -------
    bytes
        The ticket to pass to :func:`flight_batches`.

    Raises
    ------
    TypeError
        Arguments that are not integers.
    ValueError
        ``num_shards`` below 1, or ``shard`` outside ``[0, num_shards)``.

    Examples
    --------
    >>> asp.io.flight.shard_ticket(1, 4)
    b'shard=1/4'
    """
    func = "shard_ticket"
    n = v.check_count(func, "num_shards", num_shards)
    i = v.check_count(func, "shard", shard)
    if n == 0:
        msg = f"{func}: num_shards must be positive, got 0"
        raise ArrowSparseValueError(msg)
    if i >= n:
        msg = f"{func}: shard must be in [0, num_shards={n}), got {i}"
        raise ArrowSparseValueError(msg)
    return f"shard={i}/{n}".encode()


def _parse_ticket(raw: bytes, num_shards: int | None) -> tuple[int, int]:
    """Return ``(shard, n)`` of a ticket, or raise the error the client will see."""
    match = _TICKET.fullmatch(raw)
    if match is None:
        msg = (f"serve_flight: ticket {raw[:80]!r} is not of the form b'shard=i/n' "
               f"(for example b'shard=0/1' for the whole stream)")
        raise ArrowSparseValueError(msg)
    shard, n = int(match.group(1)), int(match.group(2))
    if n == 0 or shard >= n:
        msg = f"serve_flight: ticket {raw!r} asks for shard {shard} of {n}; need 0 <= i < n"
        raise ArrowSparseValueError(msg)
    if num_shards is not None and n != num_shards:
        tickets = ", ".join(repr(shard_ticket(i, num_shards)) for i in range(min(num_shards, 4)))
        more = ", ..." if num_shards > 4 else ""
        msg = (f"serve_flight: ticket {raw!r} asks for {n} shards but this server deals its "
               f"batches into {num_shards} (tickets {tickets}{more})")
        raise ArrowSparseValueError(msg)
    return shard, n


# --------------------------------------------------------------------------- sources
class _Source:
    """What a server streams: its schema and a way to open a fresh batch stream.

    ``kind`` is ``"table"`` (batches known up front: sharding is slicing a list),
    ``"factory"`` (a callable, called once per request), ``"iterable"`` (a
    re-iterable: iterated anew per request) or ``"once"`` (a one-shot iterator,
    consumed by the first request).
    """

    def __init__(self, kind: str, schema: pa.Schema, batch_rows: int | None, *,
                 batches: list[pa.RecordBatch] | None = None, data: Any = None,
                 num_rows: int | None = None, num_bytes: int | None = None) -> None:
        self.kind = kind
        self.schema = schema
        self.batch_rows = batch_rows
        self.batches = batches
        self.data = data
        self.num_rows = num_rows
        self.num_bytes = num_bytes
        self.consumed = False

    def open(self) -> Iterator[pa.RecordBatch]:
        """Return a fresh stream of the batches, split to ``batch_rows`` (not for tables)."""
        func = "serve_flight"
        if self.kind == "once":
            stream = self.data
        elif self.kind == "factory":
            stream = as_batches(func, self.data())[1]
        else:
            stream = as_batches(func, self.data)[1]
        return _split(stream, self.batch_rows)


def _split(batches: Iterator[pa.RecordBatch], batch_rows: int | None) -> Iterator[pa.RecordBatch]:
    try:
        for batch in batches:
            if batch_rows is None or batch.num_rows <= batch_rows:
                yield batch
            else:
                for start in range(0, batch.num_rows, batch_rows):
                    yield batch.slice(start, batch_rows)
    finally:
        _close(batches)


def _close(stream: Any) -> None:
    close = getattr(stream, "close", None)
    if callable(close):
        close()


def _is_paths(source: Any) -> bool:
    if isinstance(source, (str, os.PathLike)):
        return True
    if isinstance(source, (list, tuple)) and source:
        return all(isinstance(p, (str, os.PathLike)) for p in source)
    try:
        import pyarrow.dataset as ds
    except ImportError:  # pragma: no cover - pyarrow always ships dataset
        return False
    return isinstance(source, ds.Dataset)


def _prepare(source: Any, batch_rows: int | None, schema: pa.Schema | None) -> _Source:
    func = "serve_flight"
    from ..keyed import KeyedJagged

    if isinstance(source, KeyedJagged):
        source = source.to_arrow()
    if isinstance(source, pa.RecordBatch):
        source = pa.Table.from_batches([source])
    if isinstance(source, pa.Table):
        batches = source.to_batches(max_chunksize=batch_rows)
        prepared = _Source("table", source.schema, batch_rows, batches=batches,
                           num_rows=source.num_rows, num_bytes=source.nbytes)
    elif _is_paths(source):
        parquet = read_parquet(source)
        prepared = _Source("iterable", parquet.schema, batch_rows, data=parquet,
                           num_rows=parquet.num_rows)
    elif isinstance(source, Iterator):  # a generator, a RecordBatchReader
        found, stream = as_batches(func, source)
        prepared = _Source("once", found, batch_rows, data=stream)
    elif callable(source):
        found = schema
        if found is None:
            found, stream = as_batches(func, source())
            _close(stream)
        prepared = _Source("factory", found, batch_rows, data=source)
    elif isinstance(source, (bytes, bytearray, dict)) or not (
            hasattr(source, "__iter__") or hasattr(source, "__arrow_c_stream__")):
        msg = (f"{func}: source must be a Table, RecordBatch, KeyedJagged, Parquet path or "
               "dataset, an iterable of batches, a RecordBatchReader or a callable returning "
               f"one, got {type(source).__name__}")
        raise ArrowSparseTypeError(msg)
    else:
        found, stream = as_batches(func, source)
        _close(stream)
        prepared = _Source("iterable", found, batch_rows, data=source)
    if schema is not None and not schema.equals(prepared.schema, check_metadata=False):
        msg = (f"{func}: schema differs from the source's ({_schema_text(schema)} given, "
               f"{_schema_text(prepared.schema)} found)")
        raise ArrowSparseTypeError(msg)
    return prepared


def _schema_text(schema: pa.Schema) -> str:
    return "{" + ", ".join(f"{f.name}: {f.type}" for f in schema) + "}"


# --------------------------------------------------------------------------- server
@functools.cache
def _server_class() -> type:
    """Build the ``FlightServerBase`` subclass (here, so ``pyarrow.flight`` loads lazily)."""
    import pyarrow.flight as fl

    class _Server(fl.FlightServerBase):  # type: ignore[misc]
        def __init__(self, location: str, handle: FlightServer) -> None:
            self._handle = handle  # set first: requests may arrive during super().__init__
            super().__init__(location)

        def list_flights(self, context: Any, criteria: Any) -> Iterator[fl.FlightInfo]:
            yield self._handle._info()

        def get_flight_info(self, context: Any, descriptor: Any) -> fl.FlightInfo:
            self._handle._check_descriptor(descriptor)
            return self._handle._info()

        def get_schema(self, context: Any, descriptor: Any) -> fl.SchemaResult:
            self._handle._check_descriptor(descriptor)
            return fl.SchemaResult(self._handle.schema)

        def list_actions(self, context: Any) -> list[Any]:
            return []

        def do_get(self, context: Any, ticket: Any) -> fl.FlightDataStream:
            return self._handle._do_get(context, ticket)

    return _Server


class FlightServer:
    """A running :func:`serve_flight` server: its location, tickets, and how to stop it.

    Built by :func:`serve_flight`. The server answers on gRPC's background threads
    from the moment it is built; :meth:`serve` blocks the calling thread until it
    stops, :meth:`shutdown` stops it, and ``with`` stops it on leaving the block.

    Examples
    --------
    >>> table = pa.table({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]]})
    >>> with asp.io.serve_flight(table, num_shards=3, batch_rows=1) as server:
    ...     print(server.tickets, server.running)
    ...     rows = asp.io.flight_batches(server, b"shard=1/3", timeout=10).read_all()
    [b'shard=0/3', b'shard=1/3', b'shard=2/3'] True
    >>> rows.column("ids").to_pylist(), server.running
    ([[2, 4, 6, 7]], False)
    """

    def __init__(self, source: _Source, location: str, host: str,
                 num_shards: int | None) -> None:
        self._source = source
        self._schema = stamp_schema(source.schema)
        self._num_shards = num_shards
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._stopper: threading.Thread | None = None
        self._server: Any = None
        try:
            self._server = _server_class()(location, self)
        except pa.ArrowException as exc:
            msg = (f"serve_flight: cannot listen on {location} ({_detail(exc)}); is the port "
                   "in use, or the host not an address of this machine?")
            raise ArrowSparseIOError(msg) from None
        netloc = f"[{host}]" if ":" in host else host
        self._location = f"grpc://{netloc}:{self._server.port}"

    # -- what it serves
    @property
    def location(self) -> str:
        """The URI clients connect to, with the real port (``grpc://127.0.0.1:41237``)."""
        return self._location

    @property
    def port(self) -> int:
        """The TCP port the server listens on (the one chosen when port 0 was asked for)."""
        return int(self._server.port)

    @property
    def schema(self) -> pa.Schema:
        """The schema of every stream (with the ``b"arrow_sparse"`` metadata key)."""
        return self._schema

    @property
    def num_shards(self) -> int | None:
        """Shards the stream is dealt into; None when each ticket chooses its own ``n``."""
        return self._num_shards

    @property
    def tickets(self) -> list[bytes]:
        """The advertised tickets, one per shard (``[b"shard=0/1"]`` if ``num_shards`` is None)."""
        n = self._num_shards or 1
        return [shard_ticket(i, n) for i in range(n)]

    @property
    def descriptor(self) -> fl.FlightDescriptor:
        """``FlightDescriptor.for_path("arrow_sparse")``, the server's one flight."""
        import pyarrow.flight as fl

        return fl.FlightDescriptor.for_path(FLIGHT_PATH)

    @property
    def running(self) -> bool:
        """False once :meth:`shutdown` was called."""
        return not self._stopping.is_set()

    # -- stopping
    def shutdown(self, timeout: float | None = SHUTDOWN_TIMEOUT) -> bool:
        """Stop the server: refuse new requests, end the streams in flight, free the port.

        Parameters
        ----------
        timeout
            Seconds to wait for the streams in flight to end (None: for ever).

        Returns
        -------
        bool
            True when the server has stopped. False when a reader still holds a stream
            after ``timeout`` without reading it (its next batch is stuck in the
            network buffers): the port is closed all the same, and the server finishes
            stopping in the background when that reader reads or disconnects.

        Raises
        ------
        TypeError
            ``timeout`` that is not a number.
        ValueError
            A negative or NaN ``timeout``.

        Notes
        -----
        The listening socket closes at once (new connections are refused). Each stream
        in flight ends with an error at its next batch, so a reader never mistakes a
        cut stream for the end of the data. Calling it again waits again; it is
        called by ``with`` on leaving the block.

        Examples
        --------
        >>> server = asp.io.serve_flight(pa.table({"ids": [[1, 2, 3]]}))
        >>> server.shutdown()
        True
        >>> server.running
        False
        """
        timeout = _check_timeout("FlightServer.shutdown", timeout, zero_ok=True)
        with self._lock:
            if self._stopper is None:
                self._stopping.set()
                self._stopper = threading.Thread(target=self._stop, daemon=True,
                                                 name=f"FlightServer.shutdown {self.location}")
                self._stopper.start()
        self._stopper.join(timeout)
        if self._stopper.is_alive():
            logger.warning("serve_flight: %s: a reader holds a stream without reading it; "
                           "the server stops when it reads or disconnects", self.location)
            return False
        return True

    def _stop(self) -> None:
        try:
            self._server.shutdown()
        finally:
            self._stopped.set()
            logger.info("serve_flight: stopped serving at %s", self.location)

    def serve(self) -> None:
        """Block until the server stops; on Ctrl-C (``KeyboardInterrupt``) stop it and return.

        What ``serve_flight(..., block=True)`` does, and what a command-line tool
        calls after printing :attr:`location`.

        Examples
        --------
        >>> import threading
        >>> server = asp.io.serve_flight(pa.table({"ids": [[1, 2, 3]]}))
        >>> timer = threading.Timer(0.2, server.shutdown)
        >>> timer.start()
        >>> server.serve()
        >>> server.running
        False
        """
        try:
            while not self._stopped.wait(0.25):
                pass
        except KeyboardInterrupt:
            logger.info("serve_flight: interrupted; shutting down %s", self.location)
            self.shutdown()

    def __enter__(self) -> FlightServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return (f"FlightServer(location={self.location!r}, num_shards={self._num_shards}, "
                f"source={self._source.kind}, {state})")

    # -- request handlers (called on gRPC threads)
    def _check_descriptor(self, descriptor: Any) -> None:
        path = list(descriptor.path or [])
        if path != [FLIGHT_PATH.encode()]:
            msg = (f"serve_flight: no flight {descriptor}; this server offers one, "
                   f"FlightDescriptor.for_path({FLIGHT_PATH!r})")
            raise ArrowSparseValueError(msg)

    def _info(self) -> fl.FlightInfo:
        import pyarrow.flight as fl

        endpoints = [fl.FlightEndpoint(t, []) for t in self.tickets]  # []: this server
        rows = self._source.num_rows
        size = self._source.num_bytes
        return fl.FlightInfo(self._schema, self.descriptor, endpoints,
                             -1 if rows is None else rows, -1 if size is None else size)

    def _do_get(self, context: Any, ticket: Any) -> fl.FlightDataStream:
        import pyarrow.flight as fl

        raw = bytes(ticket.ticket)
        if self._stopping.is_set():
            msg = f"serve_flight: the server at {self.location} is shutting down"
            raise fl.FlightUnavailableError(msg)
        shard, n = _parse_ticket(raw, self._num_shards)
        if self._source.kind == "once":
            with self._lock:
                if self._source.consumed:
                    msg = ("serve_flight: the source was a one-shot iterator and an earlier "
                           "request read it; serve a callable returning a fresh iterator, "
                           "or a Table, to serve it again")
                    raise fl.FlightServerError(msg)
                self._source.consumed = True
        return fl.GeneratorStream(self._schema, self._stream(context, raw, shard, n))

    def _stream(self, context: Any, raw: bytes, shard: int,
                n: int) -> Iterator[pa.RecordBatch]:
        import pyarrow.flight as fl

        metadata = self._schema.metadata
        position = -1
        stream: Iterator[pa.RecordBatch] | None = None
        try:
            if self._source.kind == "table":
                assert self._source.batches is not None
                stream = iter(self._source.batches[shard::n])
                shard, n = 0, 1  # already dealt
            else:
                stream = self._source.open()
            for position, batch in enumerate(stream):
                if self._stopping.is_set():
                    msg = (f"serve_flight: the server at {self.location} is shutting down; "
                           f"the stream for ticket {raw!r} ended before its last batch")
                    raise fl.FlightUnavailableError(msg)
                if context.is_cancelled():
                    return
                if position % n != shard:
                    continue
                if not batch.schema.equals(self._schema, check_metadata=False):
                    msg = (f"serve_flight: source batch {position} has schema "
                           f"{_schema_text(batch.schema)}, not the stream's "
                           f"{_schema_text(self._schema)}")
                    raise ArrowSparseTypeError(msg)
                yield batch.replace_schema_metadata(metadata)
        except fl.FlightError:
            raise
        except Exception as exc:
            where = "before the first batch" if position < 0 else f"after batch {position}"
            logger.exception("serve_flight: source failed %s for ticket %r", where, raw)
            msg = (f"serve_flight: the source raised {type(exc).__name__} {where} of its "
                   f"stream for ticket {raw!r}: {exc}")
            raise fl.FlightServerError(msg) from exc
        finally:
            if stream is not None:
                _close(stream)


def _parse_location(func: str, location: Any) -> tuple[str, str]:
    """Return ``(uri, host)`` for a ``grpc://host:port`` string or a ``(host, port)`` pair."""
    if isinstance(location, tuple) and len(location) == 2:
        host, port = location
        if not isinstance(host, str) or isinstance(port, bool) or not isinstance(port, int):
            msg = f"{func}: location must be a (host: str, port: int) pair, got {location!r}"
            raise ArrowSparseTypeError(msg)
        netloc = f"[{host}]" if ":" in host else host
        location = f"grpc://{netloc}:{port}"
    if not isinstance(location, str):
        msg = (f"{func}: location must be a URI such as 'grpc://127.0.0.1:0' or a "
               f"(host, port) pair, got {type(location).__name__}")
        raise ArrowSparseTypeError(msg)
    parts = urlsplit(location)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme not in ("grpc", "grpc+tcp") or not parts.hostname or port is None \
            or not 0 <= port < 65536:
        msg = (f"{func}: location must be 'grpc://HOST:PORT' (PORT 0 picks a free port), "
               f"got {location!r}")
        raise ArrowSparseValueError(msg)
    return f"grpc://{parts.netloc}", parts.hostname


def _check_timeout(func: str, timeout: Any, *, zero_ok: bool) -> float | None:
    """Return ``timeout`` as float seconds, or None for none (None or infinity)."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        msg = f"{func}: timeout must be a number of seconds or None, got {type(timeout).__name__}"
        raise ArrowSparseTypeError(msg)
    if math.isnan(timeout) or timeout < 0 or (timeout == 0 and not zero_ok):
        kind = "non-negative" if zero_ok else "positive"
        msg = f"{func}: timeout must be a {kind} number of seconds or None, got {timeout}"
        raise ArrowSparseValueError(msg)
    return None if math.isinf(timeout) else float(timeout)


def serve_flight(source: Any, location: Any = "grpc://127.0.0.1:0", *,
                 num_shards: int | None = None, batch_rows: int | None = DEFAULT_BATCH_ROWS,
                 schema: pa.Schema | None = None, block: bool = False) -> FlightServer:
    """Serve a source's record batches over Arrow Flight, one shard per ticket.

    Parameters
    ----------
    source
        What to stream. A ``pyarrow.Table``, ``RecordBatch`` or
        :class:`~arrow_sparse.KeyedJagged`; a Parquet file, directory, list of files
        or ``pyarrow.dataset.Dataset`` (read with :func:`read_parquet`); a
        re-iterable of batches or Tables (a list, a :class:`ParquetBatches`, an object
        with ``__arrow_c_stream__``), iterated anew for each request; a callable
        returning any of these, called once per request so each reader gets a fresh
        stream (a pipeline's output); or a one-shot iterator (a generator, a
        ``RecordBatchReader``), which only one request can read.
    location
        Where to listen: ``"grpc://HOST:PORT"`` or ``(host, port)``. Port 0 (the
        default) takes a free port; :attr:`FlightServer.location` tells which.
    num_shards
        How many shards the batch stream is dealt into; tickets must then say
        ``n = num_shards``. None (default): any ``n`` is accepted, each reader
        choosing its own, and ``b"shard=0/1"`` is advertised (a one-shot source is
        always 1 shard).
    batch_rows
        Batches longer than this are cut into slices of at most ``batch_rows`` rows
        (zero-copy) before they are dealt to shards, so a one-chunk Table still
        spreads over readers. None: keep the source's batches as they are.
    schema
        The stream's schema. Only needed to keep a callable source from being called
        once at start to learn it (its first batch is read and dropped).
    block
        False (default): return at once; the server runs on background threads.
        True: serve until interrupted (Ctrl-C) or shut down from another thread, then
        return the stopped server; for a command-line tool. The location is logged
        at INFO level on the ``arrow_sparse.io.flight`` logger.

    Returns
    -------
    FlightServer
        The running server (stopped, with ``block=True``): ``location``,
        ``tickets``, ``shutdown()``, and a context manager that shuts it down.

    Raises
    ------
    TypeError
        ``source``, ``location`` or another argument of the wrong kind; a ``schema``
        that differs from the source's.
    ValueError
        ``num_shards`` or ``batch_rows`` below 1; a malformed location; a one-shot
        iterator with ``num_shards`` above 1; an empty iterable.
    ArrowSparseIOError
        The address cannot be listened on (port in use, host not of this machine), or
        a Parquet path that does not exist (as :func:`read_parquet` raises).

    See Also
    --------
    flight_batches : The client.
    write_ipc : The same batches to a file, pipe or socket, for one reader.

    Notes
    -----
    Tickets are ASCII ``b"shard=i/n"`` with ``0 <= i < n``: shard ``i`` gets batches
    ``i, i+n, i+2n, ...`` of the batch stream (after ``batch_rows`` cutting), in
    order, so ``n`` readers together read every batch exactly once.
    ``list_flights`` and ``get_flight_info(FlightDescriptor.for_path("arrow_sparse"))``
    advertise one endpoint per shard, with its ticket and no location (meaning this
    server), the schema, and the row and byte totals when known.

    A Table is dealt by slicing its list of batches; any other source is produced
    in full for every request and each reader keeps its own batches, so ``n``
    readers of a Parquet source decode it ``n`` times (one row group at a time).
    Batches are sent as they are produced, never buffered whole, and are not copied
    before the network (IPC framing of the same buffers). An exception raised by
    the source reaches the reader as an error carrying its message (and is logged
    here with its traceback); the schema metadata gets the ``b"arrow_sparse"`` key,
    as with :func:`write_ipc`. Plain gRPC, no TLS or authentication: listen on
    loopback or a trusted network.

    Examples
    --------
    Serve the Caffe2 batch one row per batch, in two shards, and read shard 0:

    >>> table = pa.table({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]]})
    >>> server = asp.io.serve_flight(table, "grpc://127.0.0.1:0", num_shards=2,
    ...                              batch_rows=1)
    >>> server.tickets
    [b'shard=0/2', b'shard=1/2']
    >>> for batch in asp.io.flight_batches(server.location, b"shard=0/2", timeout=10):
    ...     print(batch.column("ids").to_pylist())
    [[1, 2, 3]]
    [[3, 6]]
    >>> server.shutdown()
    True

    A callable source gives each request a fresh stream:

    >>> def batches():
    ...     yield from table.to_batches()
    >>> with asp.io.serve_flight(batches) as server:
    ...     print(asp.io.flight_batches(server, b"shard=0/1", timeout=10).read_all().num_rows)
    3
    """
    func = "serve_flight"
    uri, host = _parse_location(func, location)
    if num_shards is not None:
        num_shards = v.check_count(func, "num_shards", num_shards)
        if num_shards == 0:
            msg = f"{func}: num_shards must be positive (or None), got 0"
            raise ArrowSparseValueError(msg)
    if batch_rows is not None:
        batch_rows = v.check_count(func, "batch_rows", batch_rows)
        if batch_rows == 0:
            msg = f"{func}: batch_rows must be positive (or None), got 0"
            raise ArrowSparseValueError(msg)
    if schema is not None and not isinstance(schema, pa.Schema):
        msg = f"{func}: schema must be a pyarrow.Schema or None, got {type(schema).__name__}"
        raise ArrowSparseTypeError(msg)
    block = v.check_bool(func, "block", block)
    prepared = _prepare(source, batch_rows, schema)
    if prepared.kind == "once":
        if num_shards is not None and num_shards > 1:
            _close(prepared.data)
            msg = (f"{func}: source is a one-shot iterator, which one reader can read, but "
                   f"num_shards={num_shards}; pass a callable returning a fresh iterator "
                   "(each reader calls it), or a Table or list of batches")
            raise ArrowSparseValueError(msg)
        num_shards = 1
    server = FlightServer(prepared, uri, host, num_shards)
    logger.info("serve_flight: serving %s at %s (tickets %s)", prepared.kind,
                server.location, ", ".join(map(repr, server.tickets)))
    if block:
        server.serve()
    return server


# --------------------------------------------------------------------------- client
def _detail(exc: BaseException) -> str:
    """Return the server's message of a Flight error, without gRPC's context or tracebacks."""
    text = str(exc)
    for marker in (". gRPC client debug context:", ". Detail: "):
        cut = text.find(marker)
        if cut >= 0:
            text = text[:cut]
    return text.strip() or type(exc).__name__


class _Watchdog:
    """Calls ``on_expire`` when armed for longer than ``timeout`` seconds (one thread)."""

    def __init__(self, timeout: float, on_expire: Callable[[], None]) -> None:
        self._timeout = timeout
        self._on_expire = on_expire
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._closed = False
        self.expired = False
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="flight_batches timeout")
        self._thread.start()

    def arm(self) -> None:
        with self._cond:
            self._deadline = time.monotonic() + self._timeout
            self._cond.notify()

    def disarm(self) -> None:
        with self._cond:
            self._deadline = None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                self.expired = True
                self._deadline = None
                self._closed = True
        if self.expired:
            self._on_expire()


class FlightBatches:
    """The batches of one Flight ticket, as they arrive; built by :func:`flight_batches`.

    An iterator (read once) of ``pyarrow.RecordBatch``, or of
    :class:`~arrow_sparse.KeyedJagged` with ``keyed``. The stream is open from the
    moment it is built; it is closed at its end, on an error, by :meth:`close`, or
    on leaving a ``with`` block.

    Examples
    --------
    >>> table = pa.table({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]]})
    >>> with asp.io.serve_flight(table) as server:
    ...     with asp.io.flight_batches(server, b"shard=0/1", timeout=10) as batches:
    ...         print(batches.schema.names, sum(b.num_rows for b in batches))
    ['ids'] 3
    """

    def __init__(self, location: str, ticket: bytes, timeout: float | None,
                 keyed: bool | list[str] | None, weights: Any) -> None:
        import pyarrow.flight as fl

        func = "flight_batches"
        self._location = location
        self._ticket = ticket
        self._timeout = timeout
        self._keyed = keyed
        self._keys: list[str] | None = None  # the keyed columns, once the schema is known
        self._weights = weights
        self._num_batches = 0
        self._done = False
        self._reader: Any = None
        self._watchdog: _Watchdog | None = None
        try:
            self._client = fl.connect(location)
        except pa.ArrowException as exc:
            msg = f"{func}: cannot connect to {location!r} ({_detail(exc)})"
            raise ArrowSparseValueError(msg) from None
        try:
            self._open(fl)
        except BaseException:
            self.close()
            raise

    def _open(self, fl: Any) -> None:
        func = "flight_batches"
        where = f"{self._location} (ticket {self._ticket!r})"
        try:  # a cheap call, bounded: an unreachable or hung server fails here
            list(self._client.list_actions(options=fl.FlightCallOptions(timeout=self._timeout)))
        except (fl.FlightUnavailableError, fl.FlightTimedOutError) as exc:
            limit = "" if self._timeout is None else f" within {self._timeout:g} s"
            msg = f"{func}: no Flight server answered at {self._location}{limit} ({_detail(exc)})"
            raise ArrowSparseFlightError(msg) from None
        except pa.ArrowException:
            pass  # it answered (other servers may not implement list_actions)
        try:
            self._reader = self._client.do_get(fl.Ticket(self._ticket))
            self._schema = self._reader.schema
        except fl.FlightError as exc:
            msg = f"{func}: the server at {where} failed: {_detail(exc)}"
            raise ArrowSparseFlightError(msg) from None
        except pa.ArrowException as exc:  # ArrowInvalid: a ticket the server refused
            msg = f"{func}: the server at {self._location} refused ticket: {_detail(exc)}"
            raise ArrowSparseValueError(msg) from None
        if self._keyed is not None:
            self._keys = _check_keyed(func, self._keyed, list(self._schema.names), False,
                                       self._schema, self._location, self._weights)
            extra = [self._weights] if isinstance(self._weights, str) else \
                list(self._weights.values()) if isinstance(self._weights, Mapping) else []
            _check_names(func, "weights", extra, self._schema, self._location)
        if self._timeout is not None:
            self._watchdog = _Watchdog(self._timeout, self._reader.cancel)

    @property
    def schema(self) -> pa.Schema:
        """The stream's schema (known before the first batch)."""
        return self._schema

    @property
    def ticket(self) -> bytes:
        """The ticket read."""
        return self._ticket

    @property
    def location(self) -> str:
        """The server's location."""
        return self._location

    @property
    def num_batches(self) -> int:
        """Batches received so far."""
        return self._num_batches

    def __iter__(self) -> FlightBatches:
        return self

    def __next__(self) -> Any:  # RecordBatch, or KeyedJagged with keyed=
        while True:
            if self._done:
                raise StopIteration
            if self._watchdog is not None:
                self._watchdog.arm()
            try:
                chunk = self._reader.read_chunk()
            except StopIteration:
                self.close()
                raise
            except pa.ArrowException as exc:
                raise self._failure(exc) from None
            finally:
                if self._watchdog is not None:
                    self._watchdog.disarm()
            if chunk.data is not None:
                break
        self._num_batches += 1
        if self._keys is None:
            return chunk.data
        from ..keyed import KeyedJagged

        return KeyedJagged.from_arrow(chunk.data, keys=self._keys, weights=self._weights)

    def _failure(self, exc: BaseException) -> ArrowSparseFlightError:
        expired = self._watchdog is not None and self._watchdog.expired
        self.close()
        func = "flight_batches"
        where = f"ticket {self._ticket!r} from {self._location}"
        if expired:
            msg = (f"{func}: no batch for {where} within timeout={self._timeout:g} s "
                   f"(after {self._num_batches} batches); the stream was cancelled (pass a "
                   "larger timeout, or None to wait for ever)")
        else:
            msg = (f"{func}: the stream for {where} failed after {self._num_batches} "
                   f"batches: {_detail(exc)}")
        return ArrowSparseFlightError(msg)

    def read_all(self) -> pa.Table:
        """Read the rest of the stream into a Table (record batches only, not ``keyed``).

        Returns
        -------
        pyarrow.Table
            The batches not yet read, in order, with the stream's schema.

        Raises
        ------
        ArrowSparseFlightError
            The stream failed or timed out.
        TypeError
            With ``keyed``: gather the KeyedJagged batches by iterating instead.

        Examples
        --------
        >>> with asp.io.serve_flight(pa.table({"ids": [[1, 2, 3], [3, 6]]})) as server:
        ...     print(asp.io.flight_batches(server, b"shard=0/1", timeout=10).read_all().num_rows)
        2
        """
        if self._keys is not None:
            msg = "flight_batches: read_all gives a Table; with keyed=, iterate instead"
            raise ArrowSparseTypeError(msg)
        return pa.Table.from_batches(list(self), schema=self._schema)

    def close(self) -> None:
        """Stop reading: cancel the stream if it is unfinished and close the connection.

        Examples
        --------
        >>> with asp.io.serve_flight(pa.table({"ids": [[1, 2, 3], [3, 6]]})) as server:
        ...     batches = asp.io.flight_batches(server, b"shard=0/1", timeout=10)
        ...     batches.close()
        ...     print(list(batches))
        []
        """
        if self._done:
            return
        self._done = True
        if self._watchdog is not None:
            self._watchdog.close()
        reader, self._reader = self._reader, None
        if reader is not None:
            try:
                reader.cancel()
            except pa.ArrowException:  # pragma: no cover - cancel of a finished stream
                pass
        client = getattr(self, "_client", None)
        if client is not None:
            client.close()

    def __enter__(self) -> FlightBatches:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # nothing to report to at collection time
            pass

    def __repr__(self) -> str:
        state = "done" if self._done else "open"
        return (f"FlightBatches(location={self._location!r}, ticket={self._ticket!r}, "
                f"num_batches={self._num_batches}, {state})")


def flight_batches(location: Any, ticket: Any, *, timeout: float | None = DEFAULT_TIMEOUT,
                   keyed: bool | Sequence[str] | None = None,
                   weights: str | Mapping[Hashable, str] | None = None) -> FlightBatches:
    """Read one ticket's record batches from an Arrow Flight server, as they arrive.

    Parameters
    ----------
    location
        The server: ``"grpc://HOST:PORT"`` (:attr:`FlightServer.location`), or a
        :class:`FlightServer` of this process.
    ticket
        Which stream: ``b"shard=i/n"`` (``str`` is encoded as ASCII) for a
        :func:`serve_flight` server, whose ``tickets`` lists them; any other Flight
        server's tickets are passed through as they are.
    timeout
        Seconds to wait for the server to answer, and then for each batch (not for
        the whole stream, which may take hours); past it the stream is cancelled and
        an error raised. None: wait for ever.
    keyed
        None or False: yield ``pyarrow.RecordBatch``. True (every list-of-integers
        column) or a list of list-column names: yield
        :class:`~arrow_sparse.KeyedJagged` batches of those features, as
        :func:`read_parquet` does.
    weights
        With ``keyed``: per-value weight columns (one name, or ``{key: name}``), as
        for :meth:`KeyedJagged.from_arrow <arrow_sparse.KeyedJagged.from_arrow>`.

    Returns
    -------
    FlightBatches
        An iterator of batches with ``schema``, ``read_all()`` and ``close()``.
        The request is made here: errors about the server or ticket raise now.

    Raises
    ------
    ArrowSparseFlightError
        No server answers within ``timeout``; the server failed; and while
        iterating: the source raised (the message is the server's, naming the
        exception and its message), no batch came within ``timeout``, or the server
        shut down before the end of the stream. A ``RuntimeError``.
    ValueError
        A ticket the server refused (malformed, shard out of range, a shard count
        other than the server's); a location that is not a Flight URI.
    TypeError
        Arguments of the wrong kind; a ``keyed`` column that is not a list of
        numbers.
    KeyError
        A ``keyed`` or ``weights`` column not in the stream.

    See Also
    --------
    serve_flight : The server.
    read_ipc : Batches from a file, pipe or socket.

    Notes
    -----
    Each call opens its own connection, so readers in threads or processes do not
    share one. A stream that ends early never looks like the end of the data: a
    server shutting down, a failing source and a timeout all raise. Batches are
    received from gRPC without a further copy.

    Examples
    --------
    >>> table = pa.table({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]],
    ...                   "label": [1, 0, 1]})
    >>> with asp.io.serve_flight(table) as server:
    ...     batches = asp.io.flight_batches(server, "shard=0/1", keyed=True, timeout=10)
    ...     print(next(batches))
    KeyedJagged(num_keys=1, batch_size=3, dtype=int64, lengths=int32, weights=None)
      'ids': [[1, 2, 3], [2, 4, 6, 7], [3, 6]]

    A ticket the server does not serve raises at once:

    >>> with asp.io.serve_flight(table, num_shards=2) as server:
    ...     asp.io.flight_batches(server, b"shard=0/3", timeout=10)
    Traceback (most recent call last):
    ...
    arrow_sparse.errors.ArrowSparseValueError: flight_batches: the server at
    grpc://127.0.0.1:... refused ticket: serve_flight: ticket b'shard=0/3' asks for 3 shards
    but this server deals its batches into 2 (tickets b'shard=0/2', b'shard=1/2')
    """
    func = "flight_batches"
    if isinstance(location, FlightServer):
        location = location.location
    if not isinstance(location, str):
        uri = getattr(location, "uri", None)  # a pyarrow.flight.Location
        if not isinstance(uri, bytes):
            msg = (f"{func}: location must be a URI such as 'grpc://127.0.0.1:8815' or a "
                   f"FlightServer, got {type(location).__name__}")
            raise ArrowSparseTypeError(msg)
        location = uri.decode()
    if isinstance(ticket, str):
        try:
            ticket = ticket.encode("ascii")
        except UnicodeEncodeError:
            msg = f"{func}: ticket must be ASCII text or bytes, got {ticket!r}"
            raise ArrowSparseValueError(msg) from None
    elif not isinstance(ticket, bytes):
        raw = getattr(ticket, "ticket", None)  # a pyarrow.flight.Ticket
        if not isinstance(raw, bytes):
            msg = (f"{func}: ticket must be bytes such as b'shard=0/1', got "
                   f"{type(ticket).__name__}")
            raise ArrowSparseTypeError(msg)
        ticket = raw
    timeout = _check_timeout(func, timeout, zero_ok=False)
    if keyed is None or keyed is False:
        if weights is not None:
            msg = f"{func}: weights is only used with keyed=; pass keyed=True or a list of columns"
            raise ArrowSparseValueError(msg)
        keyed_arg: bool | list[str] | None = None
    elif keyed is True:
        keyed_arg = True
    elif isinstance(keyed, (list, tuple)):
        keyed_arg = list(keyed)
    else:
        msg = f"{func}: keyed must be None, True or a list of column names, got {keyed!r}"
        raise ArrowSparseTypeError(msg)
    return FlightBatches(location, ticket, timeout, keyed_arg, weights)
