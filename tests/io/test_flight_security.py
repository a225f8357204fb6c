"""Tests of ``arrow_sparse.io.flight_security``: TLS and the bearer token of Flight servers.

A self-signed certificate for 127.0.0.1 is made for the module, with the
``cryptography`` package when it is installed and the ``openssl`` command otherwise;
without either, only the TLS tests are skipped. Only 127.0.0.1 is listened on: the
warning about other addresses is tested by making loopback look like another address.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import shutil
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.flight as fl
import pytest

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseIOError, ArrowSparseTypeError, ArrowSparseValueError
from arrow_sparse.io import ArrowSparseFlightError, InsecureFlightWarning
from arrow_sparse.io import flight_security as security

LOOPBACK = "grpc://127.0.0.1:0"
TIMEOUT = 20.0
TABLE = pa.table({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]]})


def _with_cryptography(cert: Path, key: Path) -> bool:
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        return False
    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(private.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
            critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(private, hashes.SHA256()))
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(private.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return True


def _with_openssl(cert: Path, key: Path) -> bool:
    openssl = shutil.which("openssl")
    if openssl is None:
        return False
    result = subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        capture_output=True, text=True, timeout=60, check=False)
    return result.returncode == 0 and cert.exists() and key.exists()


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate and key for 127.0.0.1 (PEM files)."""
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "server.crt", directory / "server.key"
    if not (_with_cryptography(cert, key) or _with_openssl(cert, key)):
        pytest.skip("making a test certificate needs the cryptography package or openssl")
    return cert, key


def rows(batches: Any) -> int:
    return sum(b.num_rows for b in batches)


# ---------------------------------------------------------------------------- token
def test_token_is_checked_by_the_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        caplog: pytest.LogCaptureFixture) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    caplog.set_level(logging.WARNING, logger="arrow_sparse.io.flight")
    with asp.io.serve_flight(TABLE, LOOPBACK, token_file=token_file) as server:
        assert server.needs_token and not server.tls
        location = server.location
        for kwargs, problem in (({}, "no"), ({"token": "wrong"}, "a wrong")):
            with pytest.raises(ArrowSparseFlightError, match=rf"^flight_batches: the server at "
                               rf"{location} refused the request: serve_flight: the request "
                               rf"carries {problem} bearer token; this server needs one"):
                asp.io.flight_batches(location, b"shard=0/1", timeout=TIMEOUT, **kwargs)
        assert rows(asp.io.flight_batches(location, b"shard=0/1", timeout=TIMEOUT,
                                          token="s3cret-token")) == 3
        assert rows(asp.io.flight_batches(location, b"shard=0/1", timeout=TIMEOUT,
                                          token_file=token_file)) == 3
        monkeypatch.setenv("ARROW_SPARSE_FLIGHT_TOKEN", "s3cret-token")
        assert rows(asp.io.flight_batches(location, b"shard=0/1", timeout=TIMEOUT)) == 3
        monkeypatch.delenv("ARROW_SPARSE_FLIGHT_TOKEN")
        # a FlightServer of this process lends its token
        assert rows(asp.io.flight_batches(server, b"shard=0/1", timeout=TIMEOUT)) == 3
        # every call is checked, not only do_get; the refusal carries no traceback
        client = fl.connect(location)
        try:
            for call in (lambda: list(client.list_flights()),
                         lambda: client.get_schema(server.descriptor),
                         lambda: client.do_get(fl.Ticket(b"shard=0/1")).read_all()):
                # (pyarrow's client raises OSError, not a Flight error, for get_schema)
                with pytest.raises((fl.FlightUnauthenticatedError, OSError)) as info:
                    call()
                assert "carries no bearer token" in str(info.value)
                assert "Traceback" not in str(info.value)
            options = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer s3cret-token")])
            assert client.do_get(fl.Ticket(b"shard=0/1"), options).read_all().num_rows == 3
        finally:
            client.close()
    assert "refused a GET_SCHEMA call: no bearer token" in caplog.text
    assert "s3cret-token" not in caplog.text


def test_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(asp.io.TOKEN_ENV, "from-env")
    with asp.io.serve_flight(TABLE, LOOPBACK) as server:
        assert server.needs_token
        assert rows(asp.io.flight_batches(server.location, b"shard=0/1", timeout=TIMEOUT)) == 3
        monkeypatch.setenv(asp.io.TOKEN_ENV, "other")
        with pytest.raises(ArrowSparseFlightError, match="a wrong bearer token"):
            asp.io.flight_batches(server.location, b"shard=0/1", timeout=TIMEOUT)
    monkeypatch.setenv(asp.io.TOKEN_ENV, "")  # empty: no token
    with asp.io.serve_flight(TABLE, LOOPBACK) as server:
        assert not server.needs_token


def test_token_errors(tmp_path: Path) -> None:
    with pytest.raises(ArrowSparseValueError, match="^serve_flight: pass token or token_file, "
                                                    "not both"):
        asp.io.serve_flight(TABLE, LOOPBACK, token="a", token_file=tmp_path / "t")
    with pytest.raises(ArrowSparseIOError, match=r"^serve_flight: token_file '.*nope' does not "
                                                 "exist"):
        asp.io.serve_flight(TABLE, LOOPBACK, token_file=tmp_path / "nope")
    (tmp_path / "empty").write_text("\n\n")
    with pytest.raises(ArrowSparseValueError, match=r"token_file '.*empty' holds an empty token"):
        asp.io.serve_flight(TABLE, LOOPBACK, token_file=tmp_path / "empty")
    with pytest.raises(ArrowSparseValueError, match=r"^flight_batches: token holds a character "
                       r"a bearer token cannot hold \(first at position 3: b' '\)"):
        asp.io.flight_batches("grpc://127.0.0.1:1", b"shard=0/1", token="abc def")
    with pytest.raises(ArrowSparseValueError, match="first at position 1"):
        asp.io.serve_flight(TABLE, LOOPBACK, token="a\u00e9")
    with pytest.raises(ArrowSparseTypeError, match="^serve_flight: token must be str or bytes"):
        asp.io.serve_flight(TABLE, LOOPBACK, token=123)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- TLS
def test_tls_with_a_self_signed_certificate(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    with asp.io.serve_flight(TABLE, LOOPBACK, tls_cert_file=cert, tls_key_file=key,
                             token="t0ken") as server:
        assert server.tls and server.location.startswith("grpc+tls://127.0.0.1:")
        got = asp.io.flight_batches(server.location, b"shard=0/1", timeout=TIMEOUT,
                                    token="t0ken", tls_root_cert_file=cert).read_all()
        assert got.column("ids").to_pylist() == TABLE.column("ids").to_pylist()
        assert rows(asp.io.flight_batches(server, b"shard=0/1", timeout=TIMEOUT)) == 3
        # without the root certificate the handshake fails: the system roots do not
        # know a self-signed one
        with pytest.raises(ArrowSparseFlightError, match="no Flight server answered at "
                           "grpc\\+tls://.*is tls_root_cert_file the root"):
            asp.io.flight_batches(server.location, b"shard=0/1", timeout=5, token="t0ken")
        # a plain-text client gets nothing
        with pytest.raises(ArrowSparseFlightError):
            asp.io.flight_batches(server.location.replace("grpc+tls", "grpc"), b"shard=0/1",
                                  timeout=5, token="t0ken")


def test_tls_errors(certificate: tuple[Path, Path], tmp_path: Path) -> None:
    cert, key = certificate
    with pytest.raises(ArrowSparseValueError, match="^serve_flight: TLS needs both "
                                                    "tls_cert_file and tls_key_file"):
        asp.io.serve_flight(TABLE, LOOPBACK, tls_cert_file=cert)
    text = tmp_path / "plain.txt"
    text.write_text("not a certificate")
    with pytest.raises(ArrowSparseValueError, match=r"^serve_flight: tls_key_file '.*plain\.txt' "
                                                    r"is not a PEM file"):
        asp.io.serve_flight(TABLE, LOOPBACK, tls_cert_file=cert, tls_key_file=text)
    with pytest.raises(ArrowSparseValueError, match="^serve_flight: location "
                       "'grpc\\+tls://127.0.0.1:0' asks for TLS; pass tls_cert_file"):
        asp.io.serve_flight(TABLE, "grpc+tls://127.0.0.1:0")
    with pytest.raises(ArrowSparseIOError, match="cannot listen on .*not a pair"):
        asp.io.serve_flight(TABLE, LOOPBACK, tls_cert_file=key, tls_key_file=cert)
    with pytest.raises(ArrowSparseValueError, match="^flight_batches: tls_root_cert_file is for a "
                                                    "grpc\\+tls:// location"):
        asp.io.flight_batches("grpc://127.0.0.1:1", b"shard=0/1", tls_root_cert_file=cert)


# ---------------------------------------------------------------------------- warnings
@pytest.mark.parametrize("host,loopback", [
    ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("0.0.0.0", False), ("::", False), ("10.1.2.3", False),
    ("192.168.0.7", False), ("no-such-host.invalid", False)])
def test_is_loopback(host: str, loopback: bool) -> None:
    assert security.is_loopback(host) is loopback


def test_warning_when_other_machines_can_reach_the_server(
        certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    # Listening on 127.0.0.1 while the check believes it is another address: the test
    # never opens a port to the network.
    cert, key = certificate
    monkeypatch.setattr(security, "is_loopback", lambda host: False)
    for kwargs, missing in (({}, "TLS and a token"), ({"token": "t"}, "TLS"),
                            ({"tls_cert_file": cert, "tls_key_file": key}, "a token")):
        with pytest.warns(InsecureFlightWarning, match=rf"^serve_flight: listening on 127.0.0.1, "
                          rf"which other machines can reach, without {missing}: "):
            asp.io.serve_flight(TABLE, LOOPBACK, **kwargs).shutdown()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with asp.io.serve_flight(TABLE, LOOPBACK, tls_cert_file=cert, tls_key_file=key,
                                 token="t") as server:
            assert rows(asp.io.flight_batches(server, b"shard=0/1", timeout=TIMEOUT)) == 3
    with pytest.warns(InsecureFlightWarning, match="without TLS"):
        server = asp.io.serve_flight(TABLE, LOOPBACK, token="t")
    with server:
        with pytest.warns(InsecureFlightWarning, match="^flight_batches: sending a bearer token "
                          "to 127.0.0.1 without TLS"):
            batches = asp.io.flight_batches(server.location, b"shard=0/1", timeout=TIMEOUT,
                                            token="t")
        assert rows(batches) == 3


def test_no_warning_on_loopback() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for location in (LOOPBACK, "grpc://localhost:0", ("127.0.0.1", 0)):
            asp.io.serve_flight(TABLE, location).shutdown()
