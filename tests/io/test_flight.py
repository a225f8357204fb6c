"""Tests of arrow_sparse.io.flight (serve_flight, FlightServer) and io.flight_client
(flight_batches, FlightBatches), each against the other over loopback gRPC.

Every blocking call is bounded (``timeout=`` on each Flight read, ``FlightCallOptions
(timeout=...)`` on raw pyarrow calls, timeouts on thread joins and subprocess waits), so
a broken server fails a test instead of hanging the suite. Only 127.0.0.1 is used.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
import select
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.flight as fl
import pytest

import arrow_sparse as asp
from arrow_sparse.errors import (
    ArrowSparseError,
    ArrowSparseKeyError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)
from arrow_sparse.io import ArrowSparseFlightError, ArrowSparseIOError, FlightServer

LOOPBACK = "grpc://127.0.0.1:0"
TIMEOUT = 20.0  # per read: generous for a loaded CI machine, still bounded
OPTIONS = fl.FlightCallOptions(timeout=TIMEOUT)


def make_table(rows: int, seed: int = 0) -> pa.Table:
    """Deterministic recommender-shaped rows: an id per row, a jagged id list, scores."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 8, rows)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    ids = pa.ListArray.from_arrays(pa.array(offsets), pa.array(rng.integers(0, 1000, offsets[-1])))
    scores = pa.ListArray.from_arrays(pa.array(offsets),
                                      pa.array(rng.random(offsets[-1], dtype=np.float32)))
    return pa.table({"row": pa.array(np.arange(rows)), "ids": ids, "scores": scores})


def read_shard(location: Any, ticket: Any, **kwargs: Any) -> list[pa.RecordBatch]:
    kwargs.setdefault("timeout", TIMEOUT)
    return list(asp.io.flight_batches(location, ticket, **kwargs))


def as_table(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_batches(batches, schema=schema)


def assert_port_closed(port: int) -> None:
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def run_threads(targets: list[Any], timeout: float = 60) -> None:
    threads = [threading.Thread(target=t, daemon=True) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    assert not any(t.is_alive() for t in threads), "a reader thread did not finish"


# --------------------------------------------------------------------------- another process
SERVER_SCRIPT = """
import logging, sys
import numpy as np, pyarrow as pa
import arrow_sparse as asp
{make_table}
logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
asp.io.serve_flight(make_table({rows}), "grpc://127.0.0.1:0", num_shards=2,
                    batch_rows={batch_rows}, block=True)
print("exited serve_flight", flush=True)
"""
SERVER_ROWS = 20_000
SERVER_BATCH_ROWS = 1_500


def read_line(proc: subprocess.Popen[str], pattern: str, timeout: float) -> re.Match[str]:
    """Read the child's stdout until a line matches ``pattern`` (bounded by ``timeout``)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        match = re.search(pattern, line)
        if match:
            return match
    proc.kill()
    _, err = proc.communicate(timeout=10)
    raise AssertionError(f"no line matching {pattern!r} in {seen!r}; stderr: {err[-2000:]}")


@pytest.fixture
def server_process() -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A serve_flight(..., block=True) server in a child process; yields it and its location."""
    code = SERVER_SCRIPT.format(make_table=inspect.getsource(make_table), rows=SERVER_ROWS,
                                batch_rows=SERVER_BATCH_ROWS)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        match = read_line(proc, r"serving table at (grpc://127\.0\.0\.1:\d+)", timeout=60)
        yield proc, match.group(1)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)


def test_shards_of_a_server_in_another_process_cover_the_source_exactly(
        server_process: tuple[subprocess.Popen[str], str]) -> None:
    proc, location = server_process
    table = make_table(SERVER_ROWS)
    shards: dict[int, list[pa.RecordBatch]] = {}

    def reader(i: int) -> Any:
        return lambda: shards.__setitem__(i, read_shard(location, f"shard={i}/2"))

    run_threads([reader(0), reader(1)])
    assert sorted(shards) == [0, 1]
    # round robin over the batch stream: shard i holds batches i, i+2, i+4, ...
    source = table.to_batches(max_chunksize=SERVER_BATCH_ROWS)
    assert len(source) == 14
    for i in (0, 1):
        assert [b.num_rows for b in shards[i]] == [b.num_rows for b in source[i::2]]
        assert as_table(shards[i], table.schema).equals(as_table(source[i::2], table.schema))
    rows = [set(as_table(shards[i], table.schema).column("row").to_pylist()) for i in (0, 1)]
    assert not rows[0] & rows[1]
    union = pa.concat_tables([as_table(shards[i], table.schema) for i in (0, 1)])
    assert union.sort_by("row").equals(table)
    # Ctrl-C: serve() shuts down cleanly, serve_flight returns, the port is released
    port = int(location.rsplit(":", 1)[1])
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-2000:]
    assert "stopped serving at " + location in out
    assert "exited serve_flight" in out
    assert_port_closed(port)


READER_SCRIPT = """
import json, sys
import arrow_sparse as asp
batches = asp.io.flight_batches(sys.argv[1], sys.argv[2], timeout=20)
print(json.dumps([b.column("row").to_pylist() for b in batches]))
"""


def test_reader_in_another_process() -> None:
    table = make_table(1_000)
    with asp.io.serve_flight(table, LOOPBACK, num_shards=2, batch_rows=100) as server:
        procs = [subprocess.Popen([sys.executable, "-c", READER_SCRIPT, server.location, t],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for t in ("shard=0/2", "shard=1/2")]
        try:
            results = [p.communicate(timeout=120) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.communicate(timeout=10)
    for p, (_, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err[-2000:]
    batches = [json.loads(out) for out, _ in results]
    assert batches[0] == [list(range(s, s + 100)) for s in range(0, 1000, 200)]
    assert batches[1] == [list(range(s, s + 100)) for s in range(100, 1000, 200)]


# --------------------------------------------------------------------------- in process
def test_in_process_round_robin_over_three_shards() -> None:
    table = make_table(50)
    source = table.to_batches(max_chunksize=7)
    with asp.io.serve_flight(table, LOOPBACK, num_shards=3, batch_rows=7) as server:
        assert isinstance(server, FlightServer)
        assert server.tickets == [b"shard=0/3", b"shard=1/3", b"shard=2/3"]
        assert server.location.startswith("grpc://127.0.0.1:") and server.port > 0
        assert server.location == f"grpc://127.0.0.1:{server.port}"
        shards = [read_shard(server.location, t) for t in server.tickets]
        for i, shard in enumerate(shards):
            assert [b.num_rows for b in shard] == [b.num_rows for b in source[i::3]]
            assert as_table(shard, table.schema).equals(as_table(source[i::3], table.schema))
        assert sum(len(s) for s in shards) == len(source) == 8
        # the metadata key is stamped, as by write_ipc
        assert b"arrow_sparse" in shards[0][0].schema.metadata


def test_readers_in_threads_of_one_process_with_any_shard_count() -> None:
    table = make_table(3_000)
    out: dict[int, pa.Table] = {}
    with asp.io.serve_flight(table, LOOPBACK, batch_rows=64) as server:
        assert server.num_shards is None and server.tickets == [b"shard=0/1"]

        def reader(i: int) -> Any:
            return lambda: out.__setitem__(
                i, as_table(read_shard(server, f"shard={i}/4"), table.schema))

        run_threads([reader(i) for i in range(4)])
    union = pa.concat_tables([out[i] for i in range(4)])
    assert union.num_rows == table.num_rows
    assert union.sort_by("row").equals(table)


def test_list_flights_and_flight_info_advertise_one_endpoint_per_shard() -> None:
    table = make_table(100)
    with asp.io.serve_flight(table, LOOPBACK, num_shards=2, batch_rows=10) as server:
        client = fl.connect(server.location)
        try:
            infos = list(client.list_flights(options=OPTIONS))
            assert len(infos) == 1
            info = client.get_flight_info(server.descriptor, options=OPTIONS)
            assert info.descriptor.path == [b"arrow_sparse"]
            assert [e.ticket.ticket for e in info.endpoints] == [b"shard=0/2", b"shard=1/2"]
            assert all(list(e.locations) == [] for e in info.endpoints)  # this server
            assert info.total_records == 100 and info.total_bytes == table.nbytes
            assert info.schema.equals(table.schema)
            schema = client.get_schema(server.descriptor, options=OPTIONS).schema
            assert schema.equals(table.schema)
            with pytest.raises(fl.FlightServerError, match="this server offers one") as info_err:
                client.get_flight_info(fl.FlightDescriptor.for_path("other"), options=OPTIONS)
            assert info_err.value.extra_info == b"arrow_sparse:refused"
            assert "Traceback" not in str(info_err.value)
            # each advertised endpoint's ticket reads its shard through plain pyarrow
            got = [client.do_get(e.ticket, options=OPTIONS).read_all() for e in info.endpoints]
        finally:
            client.close()
    assert [t.num_rows for t in got] == [50, 50]
    assert pa.concat_tables(got).sort_by("row").equals(table)


def test_location_as_pair_server_pyarrow_location_and_ticket_objects() -> None:
    table = make_table(20)
    with asp.io.serve_flight(table, ("127.0.0.1", 0)) as server:
        by_uri = read_shard(fl.Location.for_grpc_tcp("127.0.0.1", server.port),
                            fl.Ticket(b"shard=0/1"))
        by_server = read_shard(server, "shard=0/1")
    assert as_table(by_uri, table.schema).equals(table)
    assert as_table(by_server, table.schema).equals(table)


# --------------------------------------------------------------------------- sources
def test_callable_source_is_called_once_per_request() -> None:
    table = make_table(200)
    calls = []

    def source() -> Iterator[pa.RecordBatch]:
        calls.append(1)
        yield from table.to_batches(max_chunksize=30)

    with asp.io.serve_flight(source, LOOPBACK, num_shards=2, schema=table.schema) as server:
        shards = [as_table(read_shard(server, t), table.schema) for t in server.tickets]
        assert len(calls) == 2
    assert pa.concat_tables(shards).sort_by("row").equals(table)
    with asp.io.serve_flight(source, LOOPBACK) as server:  # learns the schema: one more call
        assert len(calls) == 3
        assert server.schema.equals(table.schema)
        assert as_table(read_shard(server, "shard=0/1"), table.schema).equals(table)


def test_sharded_source_produces_only_its_shard() -> None:
    table = make_table(200)
    calls: list[tuple[int, int]] = []

    def source(shard: int, num_shards: int) -> Iterator[pa.Table]:
        calls.append((shard, num_shards))
        yield from (pa.Table.from_batches([b]) for b in
                    table.to_batches(max_chunksize=30)[shard::num_shards])

    with asp.io.serve_flight(source, LOOPBACK, schema=table.schema, sharded=True,
                             batch_rows=None) as server:
        shards = [as_table(read_shard(server, f"shard={i}/3"), table.schema) for i in range(3)]
        assert as_table(read_shard(server, "shard=0/1"), table.schema).equals(table)
        empty = read_shard(server, "shard=9/10")  # a shard with no batch is empty
    assert sorted(calls) == [(0, 1), (0, 3), (1, 3), (2, 3), (9, 10)]  # never called to learn
    assert [t.num_rows for t in shards] == [80, 60, 60]
    assert pa.concat_tables(shards).sort_by("row").equals(table)
    assert empty == []


def test_sharded_source_errors() -> None:
    table = make_table(10)
    with pytest.raises(ArrowSparseTypeError, match="sharded=True needs a callable source"):
        asp.io.serve_flight(table, LOOPBACK, sharded=True, schema=table.schema)
    with pytest.raises(ArrowSparseValueError, match="sharded=True needs the stream's schema="):
        asp.io.serve_flight(lambda i, n: [], LOOPBACK, sharded=True)
    with asp.io.serve_flight(lambda i, n: [1, 2], LOOPBACK, sharded=True,
                             schema=table.schema) as server:
        with pytest.raises(ArrowSparseFlightError, match="must yield RecordBatches or Tables, "
                                                         "got int"):
            read_shard(server, "shard=0/1")


def shard_rows(location: Any, n: int, **kwargs: Any) -> list[list[int]]:
    """The ``row`` values each of ``n`` shards reads, in order."""
    return [[r for b in read_shard(location, f"shard={i}/{n}", **kwargs)
             for r in b.column("row").to_pylist()] for i in range(n)]


def test_small_table_spreads_over_every_reader_issue_17() -> None:
    # A 10,000-row table with the default batch_rows of 65,536 went whole to the first
    # of 2 readers (10,000 and 0 rows): runs are now ceil(N / n) rows when N is known.
    table = make_table(10_000)
    with asp.io.serve_flight(table, LOOPBACK) as server:
        two = shard_rows(server, 2)
        three = shard_rows(server, 3)
    assert [len(s) for s in two] == [5_000, 5_000]
    assert two == [list(range(5_000)), list(range(5_000, 10_000))]
    assert [len(s) for s in three] == [3_334, 3_334, 3_332]
    assert sorted(r for s in three for r in s) == list(range(10_000))


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_shards_differ_by_at_most_one_batch_of_rows_issue_17(n: int) -> None:
    # A stream of unknown length whose batches vary in size (a filtered Parquet scan):
    # it is dealt in runs of exactly batch_rows rows, each shard's row count within one
    # run of the others', and every row read exactly once.
    rng = np.random.default_rng(n)
    table = make_table(5_000)
    cuts = np.unique(np.concatenate([[0, 5_000], rng.integers(1, 5_000, 60)]))
    batches = [table.slice(a, b - a).to_batches()[0] for a, b in zip(cuts[:-1], cuts[1:],
                                                                      strict=True)]
    with asp.io.serve_flight(batches, LOOPBACK, batch_rows=300) as server:
        shards = [read_shard(server, f"shard={i}/{n}") for i in range(n)]
    counts = [sum(b.num_rows for b in s) for s in shards]
    assert max(counts) - min(counts) <= 300, counts
    assert all(b.num_rows <= 300 for s in shards for b in s)
    rows = [r for s in shards for b in s for r in b.column("row").to_pylist()]
    assert sorted(rows) == list(range(5_000))
    for i, shard in enumerate(shards):  # shard i holds the runs i, i+n, ... in order
        got = [r for b in shard for r in b.column("row").to_pylist()]
        want = [r for k in range(i, 17, n) for r in range(300 * k, min(300 * (k + 1), 5_000))]
        assert got == want


def test_batch_rows_cuts_long_batches_of_any_source() -> None:
    table = make_table(100)
    batches = table.to_batches()  # one batch of 100 rows
    with asp.io.serve_flight(batches, LOOPBACK, num_shards=2, batch_rows=30) as server:
        sizes = [[b.num_rows for b in read_shard(server, t)] for t in server.tickets]
    assert sizes == [[30, 30], [30, 10]]
    with asp.io.serve_flight(batches, LOOPBACK, num_shards=2, batch_rows=None) as server:
        sizes = [[b.num_rows for b in read_shard(server, t)] for t in server.tickets]
    assert sizes == [[100], []]


def test_one_shot_iterator_serves_one_reader() -> None:
    table = make_table(100)
    with pytest.raises(ArrowSparseValueError, match="one-shot iterator.*num_shards=2"):
        asp.io.serve_flight(iter(table.to_batches()), LOOPBACK, num_shards=2)
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=40))
    with asp.io.serve_flight(reader, LOOPBACK) as server:
        assert server.tickets == [b"shard=0/1"]
        assert [b.num_rows for b in read_shard(server, b"shard=0/1")] == [40, 40, 20]
        with pytest.raises(ArrowSparseFlightError, match="one-shot iterator and an earlier"):
            read_shard(server, b"shard=0/1")


def test_parquet_path_source(tmp_path: Path) -> None:
    table = make_table(5_000)
    path = tmp_path / "rows.parquet"
    asp.io.write_parquet(table, path, row_group_rows=1_000)
    with asp.io.serve_flight(str(path), LOOPBACK, num_shards=2) as server:
        client = fl.connect(server.location)
        try:
            assert client.get_flight_info(server.descriptor, options=OPTIONS).total_records \
                == 5_000
        finally:
            client.close()
        shards = [read_shard(server, t) for t in server.tickets]
    # 5,000 rows known from the footers: runs of 2,500 rows, one per shard, each sent
    # as the slices of the row groups it spans (1,000 + 1,000 + 500; 500 + 1,000 + 1,000)
    assert [[b.num_rows for b in s] for s in shards] == [[1000, 1000, 500], [500, 1000, 1000]]
    union = pa.concat_tables([as_table(s, shards[0][0].schema) for s in shards])
    assert union.sort_by("row").equals(table)
    with pytest.raises(ArrowSparseIOError, match="does not exist"):
        asp.io.serve_flight(tmp_path / "missing.parquet", LOOPBACK)


def test_keyed_batches() -> None:
    table = make_table(40)
    with asp.io.serve_flight(table, LOOPBACK, batch_rows=25) as server:
        kjs = read_shard(server, b"shard=0/1", keyed=True)
        assert [kj.keys() for kj in kjs] == [["ids"], ["ids"]]
        assert kjs[0]["ids"].to_list() == table.column("ids").to_pylist()[:25]
        weighted = read_shard(server, b"shard=0/1", keyed=["ids"], weights="scores")
        assert np.array_equal(weighted[1].weights,
                              table.column("scores").chunk(0)[25:].flatten().to_numpy())
        with pytest.raises(ArrowSparseKeyError, match="names a column not in the data"):
            asp.io.flight_batches(server, b"shard=0/1", keyed=["nope"], timeout=TIMEOUT)
        with pytest.raises(ArrowSparseTypeError, match="not a list of numbers"):
            asp.io.flight_batches(server, b"shard=0/1", keyed=["row"], timeout=TIMEOUT)
        with pytest.raises(ArrowSparseValueError, match="weights is only used with keyed"):
            asp.io.flight_batches(server, b"shard=0/1", weights="scores", timeout=TIMEOUT)
        with pytest.raises(ArrowSparseTypeError, match="read_all gives a Table"):
            asp.io.flight_batches(server, b"shard=0/1", keyed=True, timeout=TIMEOUT).read_all()


# --------------------------------------------------------------------------- errors
def test_error_in_the_source_reaches_the_reader_with_its_message(
        caplog: pytest.LogCaptureFixture) -> None:
    table = make_table(30)

    def source() -> Iterator[pa.RecordBatch]:
        yield from table.to_batches(max_chunksize=10)[:2]
        raise RuntimeError("row 27 has a negative id")

    caplog.set_level(logging.ERROR, logger="arrow_sparse.io.flight")
    with asp.io.serve_flight(source, LOOPBACK, schema=table.schema) as server:
        batches = asp.io.flight_batches(server, b"shard=0/1", timeout=TIMEOUT)
        got = [next(batches), next(batches)]
        start = time.monotonic()
        with pytest.raises(ArrowSparseFlightError) as info:
            next(batches)
        assert time.monotonic() - start < 5
        assert [b.num_rows for b in got] == [10, 10]
    message = str(info.value)
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, ArrowSparseError)
    assert message.startswith("flight_batches: the stream for ticket b'shard=0/1' from grpc://")
    assert "failed after 2 batches" in message
    assert "the source raised RuntimeError after batch 1" in message
    assert message.endswith("row 27 has a negative id")
    assert "Traceback" not in message and "gRPC" not in message
    assert list(batches) == []  # closed
    assert "row 27 has a negative id" in caplog.text  # logged by the server, with traceback
    assert "Traceback" in caplog.text


def test_error_opening_a_callable_source() -> None:
    def broken() -> Iterator[pa.RecordBatch]:
        raise OSError("feature store is down")

    with pytest.raises(OSError, match="feature store is down"):  # learning the schema
        asp.io.serve_flight(broken, LOOPBACK)
    schema = pa.schema([("x", pa.int64())])
    with asp.io.serve_flight(broken, LOOPBACK, schema=schema) as server:
        batches = asp.io.flight_batches(server, b"shard=0/1", timeout=TIMEOUT)
        with pytest.raises(ArrowSparseFlightError,
                           match="raised OSError before the first batch.*feature store is down"):
            next(batches)


def test_source_batches_with_another_schema() -> None:
    first = pa.record_batch({"x": pa.array([1, 2])})
    other = pa.record_batch({"x": pa.array([1.5])})
    with asp.io.serve_flight([first, other], LOOPBACK) as server:
        batches = asp.io.flight_batches(server, b"shard=0/1", timeout=TIMEOUT)
        assert next(batches).num_rows == 2
        with pytest.raises(ArrowSparseFlightError, match="ArrowSparseTypeError.*schema differs"):
            next(batches)


@pytest.mark.parametrize("ticket,match", [
    (b"nonsense", r"ticket b'nonsense' is not of the form b'shard=i/n'"),
    (b"shard=2/2", r"asks for shard 2 of 2; need 0 <= i < n"),
    (b"shard=0/0", r"asks for shard 0 of 0"),
    (b"shard=0/3", r"asks for 3 shards but this server deals its batches into 2 \(tickets "
                   r"b'shard=0/2', b'shard=1/2'\)"),
    ("shard=-1/2", r"is not of the form"),
])
def test_bad_ticket(ticket: Any, match: str) -> None:
    with asp.io.serve_flight(make_table(10), LOOPBACK, num_shards=2) as server:
        start = time.monotonic()
        with pytest.raises(ArrowSparseValueError, match="^flight_batches: the server at grpc://"
                           r"127\.0\.0\.1:\d+ refused ticket: serve_flight: .*" + match):
            asp.io.flight_batches(server.location, ticket, timeout=TIMEOUT)
        assert time.monotonic() - start < 5


def test_timeout_waiting_for_a_batch() -> None:
    table = make_table(10)
    release = threading.Event()

    def stalls() -> Iterator[pa.RecordBatch]:
        yield table.to_batches()[0]
        release.wait(10)  # bounded, so the server can stop even if the test fails
        yield table.to_batches()[0]

    with asp.io.serve_flight(stalls, LOOPBACK, schema=table.schema) as server:
        batches = asp.io.flight_batches(server, b"shard=0/1", timeout=0.5)
        assert next(batches).num_rows == 10
        start = time.monotonic()
        with pytest.raises(ArrowSparseFlightError, match=r"no batch for ticket b'shard=0/1' "
                           r"from grpc://.* within timeout=0\.5 s \(after 1 batches\)"):
            next(batches)
        assert time.monotonic() - start < 5
        release.set()


def test_no_server_or_a_hung_one() -> None:
    with asp.io.serve_flight(make_table(10), LOOPBACK) as server:
        location, port = server.location, server.port
    assert not server.running
    assert_port_closed(port)
    start = time.monotonic()
    with pytest.raises(ArrowSparseFlightError, match="no Flight server answered at grpc://"):
        asp.io.flight_batches(location, b"shard=0/1", timeout=TIMEOUT)
    assert time.monotonic() - start < 5
    # a port that accepts TCP connections but never speaks gRPC
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        start = time.monotonic()
        with pytest.raises(ArrowSparseFlightError, match=r"no Flight server answered.*within 1 s"):
            asp.io.flight_batches(f"grpc://127.0.0.1:{listener.getsockname()[1]}", b"shard=0/1",
                                  timeout=1)
        assert time.monotonic() - start < 10


# --------------------------------------------------------------------------- shutdown
def test_shutdown_releases_the_port_and_is_idempotent() -> None:
    server = asp.io.serve_flight(make_table(10), LOOPBACK)
    port = server.port
    assert server.running and "running" in repr(server)
    socket.create_connection(("127.0.0.1", port), timeout=5).close()  # listening
    assert server.shutdown() is True
    assert not server.running and "stopped" in repr(server)
    assert_port_closed(port)
    assert server.shutdown() is True
    # the port can be listened on again at once
    with asp.io.serve_flight(make_table(10), f"grpc://127.0.0.1:{port}") as again:
        assert again.port == port
        assert len(read_shard(again, b"shard=0/1")) == 1


def test_shutdown_ends_streams_in_flight_with_an_error() -> None:
    batch = make_table(1).to_batches()[0]

    def endless() -> Iterator[pa.RecordBatch]:
        for _ in range(10_000_000):  # bounded all the same
            yield batch

    server = asp.io.serve_flight(endless, LOOPBACK, schema=batch.schema)
    try:
        batches = asp.io.flight_batches(server, b"shard=0/1", timeout=TIMEOUT)
        assert next(batches).num_rows == 1
        result: list[bool] = []
        stopper = threading.Thread(target=lambda: result.append(server.shutdown()), daemon=True)
        stopper.start()
        start = time.monotonic()
        with pytest.raises(ArrowSparseFlightError, match="is shutting down; the stream for "
                           "ticket b'shard=0/1' ended before its last batch"):
            for _ in batches:
                pass
        assert time.monotonic() - start < 10
        stopper.join(TIMEOUT)
        assert result == [True]
        assert_port_closed(server.port)
        with pytest.raises(ArrowSparseFlightError, match="no Flight server answered"):
            asp.io.flight_batches(server, b"shard=0/1", timeout=TIMEOUT)
    finally:
        server.shutdown()


def test_shutdown_with_a_reader_that_does_not_read(caplog: pytest.LogCaptureFixture) -> None:
    big = pa.record_batch({"x": pa.array(np.zeros(4_000_000))})  # 32 MB: fills the buffers
    server = asp.io.serve_flight([big] * 50, LOOPBACK, batch_rows=None)
    try:
        batches = asp.io.flight_batches(server, b"shard=0/1", timeout=TIMEOUT)
        assert next(batches).num_rows == 4_000_000
        time.sleep(1.0)  # let the network buffers fill: the server then waits on the reader
        with caplog.at_level(logging.WARNING, logger="arrow_sparse.io.flight"):
            stopped = server.shutdown(timeout=0.3)
        # Usually False: the reader's next batch is stuck in the network buffers. gRPC
        # sometimes ends such a call itself (about 1 run in 10); the reader must then
        # see an error all the same, never a clean end of the stream.
        assert stopped or "holds a stream without reading it" in caplog.text
        assert_port_closed(server.port)  # closed at once all the same
        with pytest.raises(ArrowSparseFlightError, match="is shutting down|failed after"):
            for _ in batches:
                pass
        assert server.shutdown(timeout=TIMEOUT) is True
    finally:
        server.shutdown(timeout=TIMEOUT)


def test_refused_requests_send_the_message_only_issue_14(
        caplog: pytest.LogCaptureFixture) -> None:
    # pyarrow sends the client the full Python traceback (file paths, source lines) of
    # any exception a handler raises that is not a Flight error: every refusal did.
    caplog.set_level(logging.INFO, logger="arrow_sparse.io.flight")
    with asp.io.serve_flight(make_table(10), LOOPBACK, num_shards=2) as server:
        client = fl.connect(server.location)
        schema = pa.schema([("x", pa.int64())])
        calls = {
            "do_get": lambda: client.do_get(fl.Ticket(b"shard=5/2"), options=OPTIONS).read_all(),
            "get_flight_info": lambda: client.get_flight_info(
                fl.FlightDescriptor.for_path("nope"), options=OPTIONS),
            "do_action": lambda: list(client.do_action(fl.Action("drop", b""),
                                                       options=OPTIONS)),
            "do_put": lambda: client.do_put(fl.FlightDescriptor.for_path("x"), schema,
                                            options=OPTIONS)[0].close(),
            "do_exchange": lambda: client.do_exchange(fl.FlightDescriptor.for_path("x"),
                                                      options=OPTIONS)[1].read_all(),
        }
        try:
            # get_schema never refuses: pyarrow would send the traceback of its error
            assert client.get_schema(fl.FlightDescriptor.for_path("nope"),
                                     options=OPTIONS).schema.equals(server.schema)
            for name, call in calls.items():
                with pytest.raises(fl.FlightServerError) as info:
                    call()
                text = str(info.value)
                assert text.startswith("serve_flight: "), (name, text)
                assert "Traceback" not in text and "flight.py" not in text, (name, text)
                assert info.value.extra_info == b"arrow_sparse:refused", name
            # a handler that fails unexpectedly: the message goes out, the traceback is
            # logged here
            def broken(descriptor: Any = None) -> Any:
                raise RuntimeError("footer cache is gone")

            server._info = broken  # type: ignore[method-assign]
            with pytest.raises(fl.FlightInternalError) as info:
                client.get_flight_info(server.descriptor, options=OPTIONS)
            text = str(info.value)
            assert text.startswith("serve_flight: get_flight_info failed: RuntimeError: "
                                   "footer cache is gone")
            assert "Traceback" not in text and "flight.py" not in text
        finally:
            client.close()
    assert "refused a do_get request: serve_flight: ticket b'shard=5/2'" in caplog.text
    assert "Traceback" in caplog.text and "footer cache is gone" in caplog.text


def _slow_source(table: pa.Table, opened: list[int], closed: list[int],
                 pause: float = 0.0) -> Any:
    """A callable source counting the streams it opened and closed."""

    def source() -> Iterator[pa.RecordBatch]:
        opened.append(1)
        try:
            for batch in table.to_batches(max_chunksize=10):
                time.sleep(pause)
                yield batch
        finally:
            closed.append(1)

    return source


def wait_until(condition: Any, timeout: float = TIMEOUT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


@pytest.mark.parametrize("pause", [0.0, 0.01], ids=["fast", "slow"])
def test_readers_that_close_early_release_their_streams_issue_14(pause: float) -> None:
    # 20 readers each read one batch and close: their streams must be released (the
    # source closed, nothing left in flight), so that shutdown succeeds at once.
    table = make_table(20_000)
    opened: list[int] = []
    closed: list[int] = []
    server = asp.io.serve_flight(_slow_source(table, opened, closed, pause), LOOPBACK,
                                 schema=table.schema)
    try:
        def one() -> None:
            with asp.io.flight_batches(server, b"shard=0/1", timeout=TIMEOUT) as batches:
                assert next(batches).num_rows == 10

        run_threads([one] * 20)
        assert wait_until(lambda: server.active_streams == 0), server.active_streams
        assert len(opened) == len(closed) == 20
        start = time.monotonic()
        assert server.shutdown(timeout=10) is True
        assert time.monotonic() - start < 5
    finally:
        server.shutdown(timeout=TIMEOUT)


DROPPED_READER = """
import os, sys
import pyarrow.flight as fl
client = fl.connect(sys.argv[1])
reader = client.do_get(fl.Ticket(b"shard=0/1"))
reader.read_chunk()
print("read", flush=True)
sys.stdin.read()  # killed while holding the stream
"""


def test_killed_readers_release_their_streams_issue_14() -> None:
    table = make_table(20_000)
    opened: list[int] = []
    closed: list[int] = []
    with asp.io.serve_flight(_slow_source(table, opened, closed), LOOPBACK,
                             schema=table.schema) as server:
        procs = [subprocess.Popen([sys.executable, "-c", DROPPED_READER, server.location],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                 for _ in range(5)]
        try:
            for proc in procs:
                assert read_line(proc, "read", timeout=60)
        finally:
            for proc in procs:
                proc.kill()
                proc.communicate(timeout=30)
        assert wait_until(lambda: server.active_streams == 0), server.active_streams
        assert len(opened) == len(closed) == 5
        assert server.shutdown(timeout=10) is True


def test_port_in_use() -> None:
    with asp.io.serve_flight(make_table(10), LOOPBACK) as server:
        with pytest.raises(ArrowSparseIOError, match=r"cannot listen on grpc://127\.0\.0\.1:"
                           f"{server.port} .*is the port in use"):
            asp.io.serve_flight(make_table(10), f"grpc://127.0.0.1:{server.port}")


def test_reader_closed_early_lets_the_server_stop() -> None:
    batch = make_table(1).to_batches()[0]
    with asp.io.serve_flight([batch] * 1_000, LOOPBACK) as server:
        with asp.io.flight_batches(server, b"shard=0/1", timeout=TIMEOUT) as batches:
            assert next(batches).num_rows == 1
            assert batches.num_batches == 1 and "open" in repr(batches)
        assert "done" in repr(batches)
        assert list(batches) == []
        assert server.shutdown(timeout=TIMEOUT) is True


# --------------------------------------------------------------------------- arguments
def test_argument_errors() -> None:
    table = make_table(10)
    with pytest.raises(ArrowSparseTypeError, match="^serve_flight: source must be a Table"):
        asp.io.serve_flight(object(), LOOPBACK)
    with pytest.raises(ArrowSparseTypeError, match="^serve_flight: source must be a Table"):
        asp.io.serve_flight(b"bytes", LOOPBACK)
    with pytest.raises(ArrowSparseValueError, match="empty iterable"):
        asp.io.serve_flight([], LOOPBACK)
    with pytest.raises(ArrowSparseValueError, match="num_shards must be positive"):
        asp.io.serve_flight(table, LOOPBACK, num_shards=0)
    with pytest.raises(ArrowSparseTypeError, match="num_shards must be an integer"):
        asp.io.serve_flight(table, LOOPBACK, num_shards=1.5)  # type: ignore[arg-type]
    with pytest.raises(ArrowSparseValueError, match="batch_rows must be positive"):
        asp.io.serve_flight(table, LOOPBACK, batch_rows=0)
    with pytest.raises(ArrowSparseValueError, match="location must be 'grpc://HOST:PORT'"):
        asp.io.serve_flight(table, "http://127.0.0.1:0")
    with pytest.raises(ArrowSparseValueError, match="location must be 'grpc://HOST:PORT'"):
        asp.io.serve_flight(table, "grpc://127.0.0.1")
    with pytest.raises(ArrowSparseTypeError, match="location must be a URI"):
        asp.io.serve_flight(table, 8815)
    with pytest.raises(ArrowSparseTypeError, match="block must be True or False"):
        asp.io.serve_flight(table, LOOPBACK, block="yes")  # type: ignore[arg-type]
    with pytest.raises(ArrowSparseTypeError, match="schema differs from the source's"):
        asp.io.serve_flight(table, LOOPBACK, schema=pa.schema([("x", pa.int8())]))
    with pytest.raises(ArrowSparseTypeError, match="schema must be a pyarrow.Schema"):
        asp.io.serve_flight(table, LOOPBACK, schema="x")
    with pytest.raises(ArrowSparseTypeError, match="^flight_batches: location must be a URI"):
        asp.io.flight_batches(8815, b"shard=0/1")
    with pytest.raises(ArrowSparseTypeError, match="^flight_batches: ticket must be bytes"):
        asp.io.flight_batches("grpc://127.0.0.1:1", 0)
    for bad in (-1, 0, float("nan")):
        with pytest.raises(ArrowSparseValueError, match="timeout must be a positive number"):
            asp.io.flight_batches("grpc://127.0.0.1:1", b"shard=0/1", timeout=bad)
    server = asp.io.serve_flight(table, LOOPBACK)
    with pytest.raises(ArrowSparseValueError, match="^FlightServer.shutdown: timeout must be a "
                       "non-negative number"):
        server.shutdown(timeout=-1)
    server.shutdown(timeout=float("inf"))
    with pytest.raises(ArrowSparseTypeError, match="timeout must be a number"):
        asp.io.flight_batches("grpc://127.0.0.1:1", b"shard=0/1", timeout="1")  # type: ignore[arg-type]
    with pytest.raises(ArrowSparseTypeError, match="keyed must be None, True or a list"):
        asp.io.flight_batches("grpc://127.0.0.1:1", b"shard=0/1", keyed="ids")
    with pytest.raises(ArrowSparseValueError, match="cannot connect to 'nope://x:1'"):
        asp.io.flight_batches("nope://x:1", b"shard=0/1", timeout=TIMEOUT)
    with pytest.raises(ArrowSparseValueError, match=r"shard must be in \[0, num_shards=2\)"):
        asp.io.shard_ticket(2, 2)
    assert asp.io.shard_ticket(0, 1) == b"shard=0/1"


def test_flight_is_imported_lazily() -> None:
    code = textwrap.dedent("""
        import sys
        import arrow_sparse
        print("pyarrow.flight" in sys.modules, "pyarrow._flight" in sys.modules)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, env={**os.environ, "PYTHONWARNINGS": "error"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]
