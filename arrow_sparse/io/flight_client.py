"""The Arrow Flight client: :func:`flight_batches` and the :class:`FlightBatches` iterator.

Re-exported by :mod:`arrow_sparse.io.flight` (and ``arrow_sparse.io``); the server is
there. ``pyarrow.flight`` is imported on first use.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa

from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ..keyed import KeyedJagged
from . import flight_security as security
from .flight import (
    DEFAULT_TIMEOUT,
    ArrowSparseFlightError,
    FlightServer,
    InsecureFlightWarning,
    _check_timeout,
    _detail,
)
from .parquet import _check_keyed, _check_names

__all__ = ["FlightBatches", "flight_batches"]


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
                 keyed: bool | list[str] | None, weights: Any, *, token: bytes | None = None,
                 tls_root: bytes | None = None) -> None:
        import pyarrow.flight as fl

        func = "flight_batches"
        self._location = location
        self._headers = security.bearer_headers(token)
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
            self._client = fl.connect(location, tls_root_certs=tls_root)
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
        options = fl.FlightCallOptions(timeout=self._timeout, headers=self._headers)
        try:  # a cheap call, bounded: an unreachable or hung server fails here
            list(self._client.list_actions(options=options))
        except (fl.FlightUnavailableError, fl.FlightTimedOutError) as exc:
            limit = "" if self._timeout is None else f" within {self._timeout:g} s"
            hint = "" if not self._location.startswith("grpc+tls:") else \
                "; with TLS, is tls_root_cert_file the root of the server's certificate?"
            msg = (f"{func}: no Flight server answered at {self._location}{limit} "
                   f"({_detail(exc)}{hint})")
            raise ArrowSparseFlightError(msg) from None
        except fl.FlightUnauthenticatedError as exc:
            msg = f"{func}: the server at {self._location} refused the request: {_detail(exc)}"
            raise ArrowSparseFlightError(msg) from None
        except pa.ArrowException:
            pass  # it answered (other servers may not implement list_actions)
        try:
            self._reader = self._client.do_get(fl.Ticket(self._ticket),
                                               options=fl.FlightCallOptions(headers=self._headers))
            self._schema = self._reader.schema
        except fl.FlightError as exc:
            if getattr(exc, "extra_info", None) == security.REFUSED:  # a ticket it refused
                msg = f"{func}: the server at {self._location} refused ticket: {_detail(exc)}"
                raise ArrowSparseValueError(msg) from None
            msg = f"{func}: the server at {where} failed: {_detail(exc)}"
            raise ArrowSparseFlightError(msg) from None
        except pa.ArrowException as exc:  # ArrowInvalid: a ticket another server refused
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
                   weights: str | Mapping[Hashable, str] | None = None,
                   token: str | bytes | None = None,
                   token_file: str | os.PathLike[str] | None = None,
                   tls_root_cert_file: str | os.PathLike[str] | None = None) -> FlightBatches:
    """Read one ticket's record batches from an Arrow Flight server, as they arrive.

    Parameters
    ----------
    location
        The server: ``"grpc://HOST:PORT"``, or ``"grpc+tls://HOST:PORT"`` for a server
        with TLS (:attr:`FlightServer.location`); or a :class:`FlightServer` of this
        process, whose certificate and token are then used unless given here.
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
    token, token_file
        The server's bearer token, or a file holding it (first line), sent with
        every call as ``authorization: Bearer <token>``. With neither, the
        environment variable ``ARROW_SPARSE_FLIGHT_TOKEN`` is read (unset or empty:
        no token is sent).
    tls_root_cert_file
        With a ``grpc+tls://`` location: a PEM file of the root certificate(s) the
        server's certificate must chain to (for a self-signed certificate, the
        certificate itself). None: the system's trusted roots.

    Returns
    -------
    FlightBatches
        An iterator of batches with ``schema``, ``read_all()`` and ``close()``.
        The request is made here: errors about the server or ticket raise now.

    Raises
    ------
    ArrowSparseFlightError
        No server answers within ``timeout`` (or the TLS handshake fails); the server
        refused the token (none, or a wrong one); the server failed; and while
        iterating: the source raised (the message is the server's, naming the
        exception and its message), no batch came within ``timeout``, or the server
        shut down before the end of the stream. A ``RuntimeError``.
    ValueError
        A ticket the server refused (malformed, shard out of range, a shard count
        other than the server's); a location that is not a Flight URI;
        ``tls_root_cert_file`` with a location without TLS; a malformed token.
    TypeError
        Arguments of the wrong kind; a ``keyed`` column that is not a list of
        numbers.
    KeyError
        A ``keyed`` or ``weights`` column not in the stream.

    See Also
    --------
    serve_flight : The server.
    read_ipc : Batches from a file, pipe or socket.

    Warns
    -----
    InsecureFlightWarning
        A token would be sent without TLS to a host other than loopback.

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
    server = location if isinstance(location, FlightServer) else None
    if server is not None:
        location = server.location
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
    token_bytes, tls_root = _credentials(func, location, server, token, token_file,
                                         tls_root_cert_file)
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
    return FlightBatches(location, ticket, timeout, keyed_arg, weights, token=token_bytes,
                         tls_root=tls_root)


def _credentials(func: str, location: str, server: FlightServer | None, token: Any,
                 token_file: Any, tls_root_cert_file: Any) -> tuple[bytes | None, bytes | None]:
    """Return the token and TLS root certificate to use, warning if the token goes in clear."""
    tls = location.startswith("grpc+tls:")
    if server is not None and token is None and token_file is None and server.needs_token:
        token_bytes = server._token
    else:
        token_bytes = security.read_token(func, token, token_file)
    if tls_root_cert_file is not None:
        if not tls:
            msg = (f"{func}: tls_root_cert_file is for a grpc+tls:// location, got "
                   f"{location!r}")
            raise ArrowSparseValueError(msg)
        tls_root: bytes | None = security.read_pem(func, "tls_root_cert_file",
                                                   tls_root_cert_file)
    else:
        tls_root = server._certificate if server is not None else None
    host = urlsplit(location).hostname or ""
    if token_bytes is not None and not tls and not security.is_loopback(host):
        msg = (f"{func}: sending a bearer token to {host} without TLS: it crosses the "
               "network in clear (use a grpc+tls:// server)")
        warnings.warn(msg, InsecureFlightWarning, stacklevel=3)
    return token_bytes, tls_root
