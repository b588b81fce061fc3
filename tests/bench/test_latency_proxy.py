"""`bench.latency_proxy`, run as the benchmarks run it (`python -m bench.latency_proxy`, its
own process): what passes through it arrives intact and in order, and a round trip through it
to PostgreSQL takes at least twice the one-way delay."""

from __future__ import annotations

import contextlib
import os
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import psycopg
import pytest
from tests.bench.bench_support import ROOT
from tests.conftest import PG_URL, _libpq_url, require_postgres


@contextlib.contextmanager
def latency_proxy(delay_ms: float, host: str, port: int) -> Iterator[int]:
    """`python -m bench.latency_proxy`: the port it prints, until it is terminated."""
    command = [sys.executable, "-m", "bench.latency_proxy", "--delay-ms", str(delay_ms)]
    proc = subprocess.Popen(
        [*command, "--target", f"{host}:{port}"], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        yield int(proc.stdout.readline())
    finally:
        proc.terminate()
        proc.wait(10)
        assert proc.stdout is not None
        proc.stdout.close()


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


@pytest.fixture
def echo_server() -> Iterator[int]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def test_bytes_arrive_intact_and_in_order(echo_server: int) -> None:
    payload = os.urandom(2 * 1024 * 1024)
    received = bytearray()
    with (
        latency_proxy(1, "127.0.0.1", echo_server) as port,
        socket.create_connection(("127.0.0.1", port), timeout=30) as conn,
    ):

        def read_all() -> None:
            while len(received) < len(payload) and (data := conn.recv(65536)):
                received.extend(data)

        reader = threading.Thread(target=read_all)
        reader.start()
        # Many writes of varied sizes while the echo flows back: no chunk lost or reordered.
        offset, size = 0, 1
        while offset < len(payload):
            conn.sendall(payload[offset : offset + size])
            offset += size
            size = size * 7 % 40_000 + 1
        reader.join(30)
    assert bytes(received) == payload


def test_a_round_trip_to_postgres_takes_twice_the_delay() -> None:
    require_postgres()
    delay_ms = 25
    url = _libpq_url(PG_URL)
    server = urlsplit(url)
    timings = []
    with (
        latency_proxy(delay_ms, server.hostname or "127.0.0.1", server.port or 5432) as port,
        # Keyword arguments override the URL's host and port: the same database, via the proxy.
        psycopg.connect(url, host="127.0.0.1", port=port, autocommit=True) as conn,
    ):
        for _ in range(3):
            start = time.perf_counter()
            assert conn.execute("SELECT 1").fetchone() == (1,)
            timings.append(time.perf_counter() - start)
    assert min(timings) >= 2 * delay_ms / 1000
