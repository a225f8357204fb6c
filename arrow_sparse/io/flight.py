"""Arrow Flight: stream a source's record batches to trainer processes, one shard per ticket.

``serve_flight`` starts a Flight server on background threads and returns a
:class:`FlightServer` handle; ``flight_batches`` is the client, an iterator of record
batches (or :class:`~arrow_sparse.KeyedJagged` batches). A ticket ``b"shard=i/n"``
asks for shard ``i`` of ``n``: the runs ``i, i+n, i+2n, ...`` of ``batch_rows`` rows
of the source's stream (shards differ by at most one run; see :func:`serve_flight`).
A server may encrypt its connections (TLS) and require a bearer token (the
middleware of :mod:`.flight_security`). ``pyarrow.flight`` is imported on first
use, not with the package.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import os
import re
import threading
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pyarrow as pa

from .. import _validate as v
from ..errors import ArrowSparseError, ArrowSparseTypeError, ArrowSparseValueError
from ..keyed import KeyedJagged
from . import flight_security as security
from ._common import ArrowSparseIOError, as_batches, stamp_schema
from .flight_security import TOKEN_ENV, InsecureFlightWarning
from .parquet import DEFAULT_BATCH_ROWS, read_parquet

if TYPE_CHECKING:
    import pyarrow.flight as fl

__all__ = [
    "DEFAULT_TIMEOUT",
    "FLIGHT_PATH",
    "TOKEN_ENV",
    "ArrowSparseFlightError",
    "FlightServer",
    "InsecureFlightWarning",
    "serve_flight",
    "shard_ticket",
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
    """What a server streams: its schema and a way to open a fresh stream of one shard.

    ``kind`` is ``"table"`` (a Table: rows known up front), ``"factory"`` (a callable,
    called once per request), ``"sharded"`` (a callable ``(shard, num_shards)``
    returning that shard's batches only), ``"iterable"`` (a re-iterable: iterated anew
    per request) or ``"once"`` (a one-shot iterator, consumed by the first request).
    """

    def __init__(self, kind: str, schema: pa.Schema, batch_rows: int | None, *,
                 data: Any = None, num_rows: int | None = None,
                 num_bytes: int | None = None) -> None:
        self.kind = kind
        self.schema = schema
        self.batch_rows = batch_rows
        self.data = data
        self.num_rows = num_rows
        self.num_bytes = num_bytes
        self.consumed = False

    def open(self, shard: int, num_shards: int) -> Iterator[pa.RecordBatch]:
        """Return a fresh stream of shard ``shard``'s batches, dealt as :func:`_deal` says."""
        func = "serve_flight"
        if self.kind == "sharded":
            return _deal(_tables_to_batches(self.data(shard, num_shards)), 0, 1,
                         self.batch_rows)
        if self.kind == "table":
            stream: Iterator[pa.RecordBatch] = iter(self.data.to_batches())
        elif self.kind == "once":
            stream = self.data
        elif self.kind == "factory":
            stream = as_batches(func, self.data())[1]
        else:
            stream = as_batches(func, self.data)[1]
        return _deal(stream, shard, num_shards, self.unit(num_shards))

    def unit(self, num_shards: int) -> int | None:
        """Rows per dealt run: ``batch_rows``, or fewer so that every shard gets rows.

        When the row count ``N`` is known up front (a Table, Parquet files), the run is
        ``min(batch_rows, ceil(N / num_shards))``; otherwise ``batch_rows``. None
        (``batch_rows=None``): whole source batches are dealt.
        """
        if self.batch_rows is None:
            return None
        if not self.num_rows:
            return self.batch_rows
        return min(self.batch_rows, -(-self.num_rows // num_shards))


def _deal(batches: Iterator[pa.RecordBatch], shard: int, num_shards: int,
          unit: int | None) -> Iterator[pa.RecordBatch]:
    """Yield shard ``shard``'s part of a stream of batches dealt into ``num_shards``.

    With ``unit`` rows, the stream's rows are cut into consecutive runs of ``unit`` rows
    (the last may be shorter) and run ``k`` goes to shard ``k % num_shards``, as
    zero-copy slices (a run that spans two source batches comes as two batches). So
    the shards' row counts differ by at most one run. With ``unit`` None, whole source
    batches are dealt: batch ``k`` to shard ``k % num_shards``.
    """
    try:
        seen = 0  # rows (batches, with unit None) of the stream before this batch
        for batch in batches:
            if unit is None:
                if seen % num_shards == shard:
                    yield batch
                seen += 1
                continue
            start = 0
            while start < batch.num_rows:
                run, into = divmod(seen, unit)
                take = min(batch.num_rows - start, unit - into)
                if run % num_shards == shard:
                    yield batch.slice(start, take)
                start += take
                seen += take
    finally:
        _close(batches)


def _tables_to_batches(items: Any) -> Iterator[pa.RecordBatch]:
    """Return the RecordBatches of an iterable of batches and Tables (which may be empty)."""
    stream = iter(items)
    try:
        for item in stream:
            if isinstance(item, pa.Table):
                yield from item.to_batches()
            elif isinstance(item, pa.RecordBatch):
                yield item
            else:
                msg = (f"serve_flight: a sharded source must yield RecordBatches or Tables, "
                       f"got {type(item).__name__}")
                raise ArrowSparseTypeError(msg)
    finally:
        _close(stream)


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


def _prepare(source: Any, batch_rows: int | None, schema: pa.Schema | None,
             sharded: bool = False) -> _Source:
    func = "serve_flight"

    if sharded:
        if not callable(source):
            msg = (f"{func}: sharded=True needs a callable source(shard, num_shards), got "
                   f"{type(source).__name__}")
            raise ArrowSparseTypeError(msg)
        if schema is None:
            msg = f"{func}: sharded=True needs the stream's schema= (a shard may be empty)"
            raise ArrowSparseValueError(msg)
        return _Source("sharded", schema, batch_rows, data=source)
    if isinstance(source, KeyedJagged):
        source = source.to_arrow()
    if isinstance(source, pa.RecordBatch):
        source = pa.Table.from_batches([source])
    if isinstance(source, pa.Table):
        prepared = _Source("table", source.schema, batch_rows, data=source,
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
    """Build the ``FlightServerBase`` subclass (here, so ``pyarrow.flight`` loads lazily).

    Every handler goes through :meth:`FlightServer._answer`, so a client only ever gets
    a Flight error carrying a message: pyarrow sends the full Python traceback of any
    other exception (file paths, source lines) to the client.
    """
    import pyarrow.flight as fl

    class _Server(fl.FlightServerBase):  # type: ignore[misc]
        def __init__(self, location: str, handle: FlightServer, tls: tuple[bytes, bytes] | None,
                     middleware: dict[str, Any] | None) -> None:
            self._handle = handle  # set first: requests may arrive during super().__init__
            super().__init__(location, tls_certificates=None if tls is None else [tls],
                             middleware=middleware)

        def list_flights(self, context: Any, criteria: Any) -> list[fl.FlightInfo]:
            return self._handle._answer("list_flights", lambda: [self._handle._info()])

        def get_flight_info(self, context: Any, descriptor: Any) -> fl.FlightInfo:
            return self._handle._answer("get_flight_info", self._handle._info, descriptor)

        def get_schema(self, context: Any, descriptor: Any) -> fl.SchemaResult:
            # Whatever the descriptor: pyarrow sends the server's traceback for any
            # error get_schema raises, Flight errors included (it does not for the
            # other handlers), so it never raises; get_flight_info refuses unknown ones.
            return fl.SchemaResult(self._handle.schema)

        def list_actions(self, context: Any) -> list[Any]:
            return []

        def do_get(self, context: Any, ticket: Any) -> fl.FlightDataStream:
            return self._handle._answer("do_get", self._handle._do_get, context, ticket)

        def do_put(self, context: Any, descriptor: Any, reader: Any, writer: Any) -> None:
            self._handle._answer("do_put", self._handle._unsupported, "do_put")

        def do_exchange(self, context: Any, descriptor: Any, reader: Any, writer: Any) -> None:
            self._handle._answer("do_exchange", self._handle._unsupported, "do_exchange")

        def do_action(self, context: Any, action: Any) -> Iterator[Any]:
            return self._handle._answer(  # type: ignore[no-any-return]
                "do_action", self._handle._unsupported, "do_action")

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
                 num_shards: int | None, *, tls: tuple[bytes, bytes] | None = None,
                 token: bytes | None = None) -> None:
        self._source = source
        self._schema = stamp_schema(source.schema)
        self._num_shards = num_shards
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._stopper: threading.Thread | None = None
        self._streams: dict[int, dict[str, Any]] = {}  # the streams being sent
        self._stream_ids = itertools.count()
        self._certificate = None if tls is None else tls[0]
        self._token = token
        self._server: Any = None
        middleware = None if token is None else {
            "bearer_token": security.token_middleware_class()(token, logger)}
        try:
            self._server = _server_class()(location, self, tls, middleware)
        except pa.ArrowException as exc:
            msg = (f"serve_flight: cannot listen on {location} ({_detail(exc)}); is the port "
                   "in use, the host not an address of this machine, or the TLS certificate "
                   "and key not a pair?")
            raise ArrowSparseIOError(msg) from None
        netloc = f"[{host}]" if ":" in host else host
        scheme = "grpc" if tls is None else "grpc+tls"
        self._location = f"{scheme}://{netloc}:{self._server.port}"

    # -- what it serves
    @property
    def location(self) -> str:
        """The URI clients connect to, with the real port (``grpc://127.0.0.1:41237``).

        ``grpc+tls://`` when the server encrypts its connections.
        """
        return self._location

    @property
    def tls(self) -> bool:
        """Whether connections are encrypted (``tls_cert_file`` and ``tls_key_file`` given)."""
        return self._certificate is not None

    @property
    def needs_token(self) -> bool:
        """Whether every call must carry the server's bearer token."""
        return self._token is not None

    @property
    def active_streams(self) -> int:
        """Streams being sent now: started, neither complete nor ended by their reader.

        A reader that cancels or disconnects releases its stream (the source is
        closed) as soon as the server notices: at the next batch it sends or produces.

        Examples
        --------
        >>> with asp.io.serve_flight(pa.table({"ids": [[1, 2, 3]]})) as server:
        ...     print(server.active_streams)
        0
        """
        with self._lock:
            return len(self._streams)

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
            with self._lock:
                held = [f"ticket {r['ticket']!r} by {r['peer']}, {r['batches']} sent"
                        for r in self._streams.values()]
            who = "a reader holds a stream without reading it" if len(held) <= 1 else \
                f"{len(held)} readers hold streams without reading them"
            logger.warning("serve_flight: %s: %s (%s); the server stops when they read or "
                           "disconnect", self.location, who, "; ".join(held) or "now ending")
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
    def _answer(self, name: str, handler: Any, *args: Any) -> Any:
        """Run a request handler; turn what it raises into a Flight error with a message only.

        A request arrow_sparse refuses (an :class:`~arrow_sparse.errors.ArrowSparseError`:
        a malformed ticket, an unknown flight) goes to the client as a
        ``FlightServerError`` marked refused (the client raises ``ValueError``);
        anything else is logged here with its traceback and sent as a
        ``FlightInternalError`` carrying its message. pyarrow would send the client the
        full Python traceback of any exception that is not a Flight error.
        """
        import pyarrow.flight as fl

        try:
            return handler(*args)
        except fl.FlightError:
            raise
        except ArrowSparseError as exc:
            logger.info("serve_flight: refused a %s request: %s", name, exc)
            raise fl.FlightServerError(str(exc), extra_info=security.REFUSED) from None
        except Exception as exc:
            logger.exception("serve_flight: %s failed", name)
            msg = f"serve_flight: {name} failed: {type(exc).__name__}: {exc}"
            raise fl.FlightInternalError(msg) from None

    def _unsupported(self, name: str) -> None:
        msg = f"serve_flight: this server only serves reads (do_get), not {name}"
        raise ArrowSparseValueError(msg)

    def _check_descriptor(self, descriptor: Any) -> None:
        path = list(descriptor.path or [])
        if path != [FLIGHT_PATH.encode()]:
            msg = (f"serve_flight: no flight {descriptor}; this server offers one, "
                   f"FlightDescriptor.for_path({FLIGHT_PATH!r})")
            raise ArrowSparseValueError(msg)

    def _info(self, descriptor: Any = None) -> fl.FlightInfo:
        import pyarrow.flight as fl

        if descriptor is not None:
            self._check_descriptor(descriptor)
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
        """Send shard ``shard`` of ``n``; registered in :attr:`active_streams` meanwhile.

        Cancellation (the reader closed or went away) is checked before each batch is
        asked of the source, so a cancelled stream costs no more source work than the
        batch in hand; the source is closed on every way out. ``context`` is only
        touched while the call runs (never in ``finally``: the generator may be
        finalised after the call ended).
        """
        import pyarrow.flight as fl

        metadata = self._schema.metadata
        position = -1
        stream: Iterator[pa.RecordBatch] | None = None
        ended = "went away"
        key = next(self._stream_ids)
        record = {"ticket": raw, "peer": _peer(context), "batches": 0}
        with self._lock:
            self._streams[key] = record
        try:
            stream = self._source.open(shard, n)
            while not context.is_cancelled():
                batch = next(stream, None)
                if batch is None:
                    ended = "complete"
                    break
                position += 1
                if self._stopping.is_set():
                    msg = (f"serve_flight: the server at {self.location} is shutting down; "
                           f"the stream for ticket {raw!r} ended before its last batch")
                    raise fl.FlightUnavailableError(msg)
                if not batch.schema.equals(self._schema, check_metadata=False):
                    msg = (f"serve_flight: source batch {position} has schema "
                           f"{_schema_text(batch.schema)}, not the stream's "
                           f"{_schema_text(self._schema)}")
                    raise ArrowSparseTypeError(msg)
                yield batch.replace_schema_metadata(metadata)
                record["batches"] += 1
        except fl.FlightError:
            ended = "failed"
            raise
        except Exception as exc:
            ended = "failed"
            where = "before the first batch" if position < 0 else f"after batch {position}"
            logger.exception("serve_flight: source failed %s for ticket %r", where, raw)
            msg = (f"serve_flight: the source raised {type(exc).__name__} {where} of its "
                   f"stream for ticket {raw!r}: {exc}")
            raise fl.FlightServerError(msg) from None
        finally:
            try:
                if stream is not None:
                    _close(stream)
            finally:
                with self._lock:
                    self._streams.pop(key, None)
                if ended == "went away":
                    logger.info("serve_flight: the reader of ticket %r (%s) went away after "
                                "%d batches; its stream is released", raw, record["peer"],
                                record["batches"])


def _peer(context: Any) -> str:
    """Return the client's address of a call (``ipv4:127.0.0.1:50912``), for log lines."""
    try:
        peer = context.peer()
    except Exception:  # noqa: BLE001 - only for a log line
        return "unknown peer"
    return peer.decode(errors="replace") if isinstance(peer, bytes) else str(peer)


def _parse_location(func: str, location: Any, tls: bool) -> tuple[str, str]:
    """Return ``(uri, host)`` for a ``grpc://host:port`` string or a ``(host, port)`` pair.

    The URI's scheme is ``grpc+tls`` with ``tls``; ``grpc+tls://`` without it raises.
    """
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
    if parts.scheme not in ("grpc", "grpc+tcp", "grpc+tls") or not parts.hostname \
            or port is None or not 0 <= port < 65536:
        msg = (f"{func}: location must be 'grpc://HOST:PORT' (PORT 0 picks a free port), "
               f"got {location!r}")
        raise ArrowSparseValueError(msg)
    if parts.scheme == "grpc+tls" and not tls:
        msg = (f"{func}: location {location!r} asks for TLS; pass tls_cert_file and "
               "tls_key_file")
        raise ArrowSparseValueError(msg)
    return f"{'grpc+tls' if tls else 'grpc'}://{parts.netloc}", parts.hostname


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
                 schema: pa.Schema | None = None, block: bool = False,
                 sharded: bool = False, tls_cert_file: str | os.PathLike[str] | None = None,
                 tls_key_file: str | os.PathLike[str] | None = None,
                 token: str | bytes | None = None,
                 token_file: str | os.PathLike[str] | None = None) -> FlightServer:
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
        default) takes a free port; :attr:`FlightServer.location` tells which. The
        default host, 127.0.0.1, is reachable from this machine only; listening on
        another address (``0.0.0.0``: every interface) without both TLS and a token
        warns (:class:`InsecureFlightWarning`).
    num_shards
        How many shards the stream is dealt into; tickets must then say
        ``n = num_shards``. None (default): any ``n`` is accepted, each reader
        choosing its own, and ``b"shard=0/1"`` is advertised (a one-shot source is
        always 1 shard).
    batch_rows
        The stream is dealt to shards in runs of ``batch_rows`` rows (fewer when the
        source's row count is known and small: see Notes), sent as zero-copy slices of
        at most ``batch_rows`` rows, so shards differ by at most one such run. None:
        deal the source's batches whole, as they are.
    schema
        The stream's schema. Only needed to keep a callable source from being called
        once at start to learn it (its first batch is read and dropped).
    block
        False (default): return at once; the server runs on background threads.
        True: serve until interrupted (Ctrl-C) or shut down from another thread, then
        return the stopped server; for a command-line tool. The location is logged
        at INFO level on the ``arrow_sparse.io.flight`` logger.
    sharded
        True: ``source`` is a callable ``source(shard, num_shards)`` that returns only
        that shard's batches (an iterable of RecordBatches or Tables, possibly empty),
        so ``n`` readers share the work of producing the stream instead of each
        producing all of it; ``schema`` is then required. A pipeline runner serving
        its output uses this to transform each input batch once.
    tls_cert_file, tls_key_file
        PEM files of the server's certificate (chain) and private key: connections
        are then encrypted, and :attr:`FlightServer.location` is ``grpc+tls://``.
        Clients verify the certificate against the root certificate they are given
        (``tls_root_cert_file`` of :func:`flight_batches`; a self-signed certificate
        is its own root).
    token, token_file
        A bearer token every call must carry (``authorization: Bearer <token>``),
        checked by a server middleware before any handler runs; or a file holding
        it (its first line, whitespace stripped). With neither, the environment
        variable ``ARROW_SPARSE_FLIGHT_TOKEN`` is read; when it is unset or empty,
        no token is needed. Visible ASCII only (``secrets.token_urlsafe()``). Send
        a token over TLS, or it crosses the network in clear.

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
        iterator with ``num_shards`` above 1; an empty iterable; one of the two TLS
        files without the other, a file that is not PEM; both ``token`` and
        ``token_file``, an empty token or one with spaces or non-ASCII characters.
    ArrowSparseIOError
        The address cannot be listened on (port in use, host not of this machine, a
        certificate and key that are not a pair), a TLS or token file that cannot be
        read, or a Parquet path that does not exist (as :func:`read_parquet` raises).

    Warns
    -----
    InsecureFlightWarning
        Listening on an address other than loopback without both TLS and a token.

    See Also
    --------
    flight_batches : The client.
    write_ipc : The same batches to a file, pipe or socket, for one reader.

    Notes
    -----
    Tickets are ASCII ``b"shard=i/n"`` with ``0 <= i < n``. The rows of the stream
    are cut into consecutive runs of ``r`` rows (the last may be shorter) and shard
    ``i`` gets runs ``i, i+n, i+2n, ...``, in order, so ``n`` readers together read
    every row exactly once and their row counts differ by at most one run of
    ``batch_rows`` rows. ``r`` is ``batch_rows``, or, when the source's row count
    ``N`` is known up front (a Table, RecordBatch or KeyedJagged; Parquet files),
    ``min(batch_rows, ceil(N / n))``, so that a small table still spreads over all
    readers (10,000 rows to 2 readers: 5,000 each, not 10,000 and 0). A run that
    spans two source batches is sent as two slices. With ``batch_rows=None`` the
    source's batches are dealt whole (batch ``k`` to shard ``k % n``), so shards may
    differ by a whole source batch.
    ``list_flights`` and ``get_flight_info(FlightDescriptor.for_path("arrow_sparse"))``
    advertise one endpoint per shard, with its ticket and no location (meaning this
    server), the schema, and the row and byte totals when known; ``get_schema``
    answers the schema for any descriptor (pyarrow would send the server's traceback
    with any error it raised).

    A Table is dealt by slicing, and a ``sharded`` source deals its own; any other
    source is produced in full for every request and each reader keeps its own
    runs, so ``n`` readers of a Parquet source decode it ``n`` times (one row group
    at a time). A reader that closes its stream or goes away releases it: the
    server notices at the next batch, closes the source and logs it
    (:attr:`FlightServer.active_streams` counts the streams being sent).
    Batches are sent as they are produced, never buffered whole, and are not copied
    before the network (IPC framing of the same buffers). An exception raised by
    the source, and any refused request, reaches the reader as an error carrying
    its message only; the traceback is logged here, on the ``arrow_sparse.io.flight``
    logger, never sent. The schema metadata gets the ``b"arrow_sparse"`` key, as
    with :func:`write_ipc`. Without ``tls_cert_file`` the connection is plain gRPC
    and without a token anyone who reaches the port reads the stream: outside
    loopback, use both (docs/io.md, "Securing a server").

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
    tls = security.read_tls(func, tls_cert_file, tls_key_file)
    token_bytes = security.read_token(func, token, token_file)
    uri, host = _parse_location(func, location, tls is not None)
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
    sharded = v.check_bool(func, "sharded", sharded)
    prepared = _prepare(source, batch_rows, schema, sharded)
    if prepared.kind == "once":
        if num_shards is not None and num_shards > 1:
            _close(prepared.data)
            msg = (f"{func}: source is a one-shot iterator, which one reader can read, but "
                   f"num_shards={num_shards}; pass a callable returning a fresh iterator "
                   "(each reader calls it), or a Table or list of batches")
            raise ArrowSparseValueError(msg)
        num_shards = 1
    server = FlightServer(prepared, uri, host, num_shards, tls=tls, token=token_bytes)
    _warn_if_exposed(func, host, tls is not None, token_bytes is not None)
    logger.info("serve_flight: serving %s at %s (tickets %s%s%s)", prepared.kind,
                server.location, ", ".join(map(repr, server.tickets)),
                "; TLS" if tls is not None else "",
                "; bearer token required" if token_bytes is not None else "")
    if block:
        server.serve()
    return server


def _warn_if_exposed(func: str, host: str, tls: bool, token: bool) -> None:
    """Warn when other machines can reach the server and it lacks TLS or a token."""
    if (tls and token) or security.is_loopback(host):
        return
    if not token:
        risk = "anyone who reaches the port reads the data"
    else:
        risk = "the token and the data cross the network in clear"
    missing = " and ".join(x for x, given in (("TLS", tls), ("a token", token)) if not given)
    msg = (f"{func}: listening on {host}, which other machines can reach, without {missing}: "
           f"{risk} (pass tls_cert_file, tls_key_file and token_file, or listen on 127.0.0.1)")
    warnings.warn(msg, InsecureFlightWarning, stacklevel=3)


# --------------------------------------------------------------------------- client
def _detail(exc: BaseException) -> str:
    """Return the server's message of a Flight error, without gRPC's context or tracebacks."""
    text = str(exc)
    for marker in (". gRPC client debug context:", ". Detail: "):
        cut = text.find(marker)
        if cut >= 0:
            text = text[:cut]
    return text.strip() or type(exc).__name__

