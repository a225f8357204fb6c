"""Flight security shared by the server and the client: TLS files, the bearer token, loopback.

A :func:`~arrow_sparse.io.serve_flight` server can encrypt its connections (TLS from
a certificate and key file) and refuse every call that does not carry its bearer
token (``authorization: Bearer <token>``, checked by a server middleware before any
handler runs). The token comes from ``token=``, from ``token_file=`` (first line,
surrounding whitespace stripped), or from the environment variable
:data:`TOKEN_ENV` (``ARROW_SPARSE_FLIGHT_TOKEN``), in that order; the client,
:func:`~arrow_sparse.io.flight_batches`, reads it the same way. ``pyarrow.flight``
is imported on first use.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import os
import socket
from typing import Any

from .._files import check_path
from ..errors import ArrowSparseIOError, ArrowSparseTypeError, ArrowSparseValueError

__all__ = ["TOKEN_ENV", "InsecureFlightWarning"]

#: Environment variable read for the bearer token when neither ``token=`` nor
#: ``token_file=`` is given, by the server and by the client.
TOKEN_ENV = "ARROW_SPARSE_FLIGHT_TOKEN"

#: ``extra_info`` of the errors a server sends for a request it refuses (a malformed
#: ticket, an unknown flight): the client raises ``ValueError`` for them.
REFUSED = b"arrow_sparse:refused"


class InsecureFlightWarning(UserWarning):
    """Flight data or a token would cross the network unprotected.

    Warned by :func:`~arrow_sparse.io.serve_flight` when it listens on an address
    other than loopback without both TLS and a bearer token (anyone who reaches the
    port reads the data), and by :func:`~arrow_sparse.io.flight_batches` when it would
    send a token without TLS to another machine. Silence it with
    ``warnings.filterwarnings("ignore", category=InsecureFlightWarning)`` on a
    trusted network.

    Examples
    --------
    >>> issubclass(asp.io.InsecureFlightWarning, UserWarning)
    True
    """


def read_token(func: str, token: Any, token_file: Any) -> bytes | None:
    """Return the bearer token from ``token``, ``token_file`` or :data:`TOKEN_ENV`, or None."""
    if token is not None and token_file is not None:
        msg = f"{func}: pass token or token_file, not both"
        raise ArrowSparseValueError(msg)
    if token is not None:
        if not isinstance(token, (str, bytes)):
            msg = f"{func}: token must be str or bytes, got {type(token).__name__}"
            raise ArrowSparseTypeError(msg)
        return _checked_token(func, "token", token)
    if token_file is not None:
        path = check_path(func, "token_file", token_file)
        try:
            with open(path, "rb") as f:
                text = f.read(64 * 1024)
        except OSError as exc:
            msg = f"{func}: cannot read token_file {path!r} ({exc.strerror or exc})"
            raise ArrowSparseIOError(msg) from None
        lines = text.strip().splitlines()
        return _checked_token(func, f"token_file {path!r}", lines[0] if lines else b"")
    env = os.environ.get(TOKEN_ENV)
    if env:
        return _checked_token(func, f"environment variable {TOKEN_ENV}", env)
    return None


def _checked_token(func: str, where: str, token: str | bytes) -> bytes:
    raw = token.encode("utf-8", "replace") if isinstance(token, str) else token
    raw = raw.strip()
    if not raw:
        msg = f"{func}: {where} holds an empty token"
        raise ArrowSparseValueError(msg)
    bad = next((i for i, c in enumerate(raw) if c <= 0x20 or c >= 0x7F), None)
    if bad is not None:  # it goes in an HTTP/2 header: visible ASCII only
        msg = (f"{func}: {where} holds a character a bearer token cannot hold (first at "
               f"position {bad}: {raw[bad:bad + 1]!r}); use visible ASCII, such as the output "
               "of secrets.token_urlsafe()")
        raise ArrowSparseValueError(msg)
    return raw


def read_pem(func: str, arg: str, path: Any) -> bytes:
    """Return the PEM text of ``path`` (a certificate or key), checking that it is PEM."""
    text_path = check_path(func, arg, path)
    try:
        with open(text_path, "rb") as f:
            data = f.read()
    except OSError as exc:
        msg = f"{func}: cannot read {arg} {text_path!r} ({exc.strerror or exc})"
        raise ArrowSparseIOError(msg) from None
    if b"-----BEGIN " not in data:
        msg = f"{func}: {arg} {text_path!r} is not a PEM file (no '-----BEGIN' line)"
        raise ArrowSparseValueError(msg)
    return data


def read_tls(func: str, cert_file: Any, key_file: Any) -> tuple[bytes, bytes] | None:
    """Return ``(certificate, key)`` PEM bytes, or None when neither file is given."""
    if cert_file is None and key_file is None:
        return None
    if cert_file is None or key_file is None:
        msg = f"{func}: TLS needs both tls_cert_file and tls_key_file"
        raise ArrowSparseValueError(msg)
    return read_pem(func, "tls_cert_file", cert_file), read_pem(func, "tls_key_file", key_file)


def bearer_headers(token: bytes | None) -> list[tuple[bytes, bytes]] | None:
    """Return the call headers that carry ``token`` (None without one)."""
    return None if token is None else [(b"authorization", b"Bearer " + token)]


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine's loopback interface only.

    ``0.0.0.0`` and ``::`` (every interface) are not; a name counts as loopback when
    every address it resolves to is.
    """
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(
        ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in addresses)


@functools.cache
def token_middleware_class() -> type:
    """Build the server middleware factory that checks the bearer token (lazy pyarrow.flight)."""
    import pyarrow.flight as fl

    class _BearerToken(fl.ServerMiddlewareFactory):  # type: ignore[misc]
        """Refuses every call whose ``authorization`` header is not ``Bearer <token>``."""

        def __init__(self, token: bytes, log: Any) -> None:
            super().__init__()
            self._expected = b"Bearer " + token
            self._log = log

        def start_call(self, info: Any, headers: dict[str, list[Any]]) -> None:
            values = headers.get("authorization", [])
            for value in values:
                given = value.encode("utf-8", "replace") if isinstance(value, str) else value
                if hmac.compare_digest(given, self._expected):
                    return None
            self._log.warning("serve_flight: refused a %s call: %s bearer token",
                              getattr(info.method, "name", info.method),
                              "wrong" if values else "no")
            what = "a wrong" if values else "no"
            msg = (f"serve_flight: the request carries {what} bearer token; this server "
                   f"needs one (token= or token_file=, or the {TOKEN_ENV} environment "
                   "variable, on the client)")
            raise fl.FlightUnauthenticatedError(msg)

    return _BearerToken
