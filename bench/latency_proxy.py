"""A loopback TCP proxy that adds a one-way delay in each direction, for benchmarks of workers
that reach PostgreSQL across a network (the kernel here has no `netem` qdisc to do it).

Every chunk read from one side is written to the other `delay_ms` after it was read. Each
direction is a queue of (release time, bytes) drained in order by one writer, so chunks keep
their order and a burst of chunks is delayed once, not once per chunk: a round trip costs
2 x delay, whatever the number of packets in flight.

    with latency_proxy(delay_ms=5) as proxy:   # 127.0.0.1:proxy.port → 127.0.0.1:5432
        ...                                     # +5 ms each way; proxy.counts() so far

    python -m bench.latency_proxy --delay-ms 5   # prints the port, serves until killed

By default the proxy runs in its own process, so its CPU does not share the benchmark's
interpreter (and its GIL) with the system under test; `in_thread=True` runs it in threads of
this process instead. Two threads per direction of each connection (one reads, one writes at
the release times): a thread's sleep is precise to a few microseconds where an event loop's
timers round up to the millisecond.

It counts, over all connections, the chunks each way and the *flights*: the times a client
spoke after hearing from the server (or first), i.e. the round trips its connections waited
for, whatever number of statements a flight pipelined.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

CHUNK = 65536
Counts = dict[str, int]


class _Counter:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: Counts = {"connections": 0, "flights": 0, "chunks_up": 0, "chunks_down": 0}

    def add(self, **deltas: int) -> None:
        with self.lock:
            for key, delta in deltas.items():
                self.values[key] += delta

    def snapshot(self) -> Counts:
        with self.lock:
            return dict(self.values)


class _Turn:
    """Who spoke last on one connection: a client chunk after the server's starts a flight."""

    def __init__(self) -> None:
        self.server_spoke = True


def _pipe(
    src: socket.socket,
    dst: socket.socket,
    delay: float,
    done: threading.Event,
    on_chunk: Callable[[], None],
) -> None:
    """Copy `src` to `dst`, each chunk released `delay` seconds after it was read: one thread
    reads and stamps, this one writes in order. Threads sleep precisely (clock_nanosleep);
    an event loop's timers round up to the millisecond, which would add most of a 1 ms delay
    again."""
    pending: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()

    def read() -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(CHUNK):
                pending.put((time.monotonic() + delay, data))
                on_chunk()
        pending.put((time.monotonic() + delay, b""))  # end of stream, delayed like the rest

    threading.Thread(target=read, daemon=True).start()
    try:
        while True:
            release, data = pending.get()
            wait = release - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not data:
                dst.shutdown(socket.SHUT_WR)
                return
            dst.sendall(data)
    except OSError:
        return
    finally:
        done.set()


class _Proxy:
    """Listens on 127.0.0.1:0 and forwards each connection to `target` with `delay_ms`."""

    def __init__(self, delay_ms: float, target: tuple[str, int]) -> None:
        self.delay = delay_ms / 1000
        self.target = target
        self.counter = _Counter()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]

    def serve_forever(self) -> None:
        with contextlib.suppress(OSError):  # the listener was closed: stop
            while True:
                client, _ = self.listener.accept()
                threading.Thread(target=self._connection, args=(client,), daemon=True).start()

    def _connection(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self.target, timeout=10)
        except OSError:
            client.close()
            return
        server.settimeout(None)
        for s in (client, server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.counter.add(connections=1)
        turn = _Turn()

        def up() -> None:
            self.counter.add(chunks_up=1, flights=int(turn.server_spoke))
            turn.server_spoke = False

        def down() -> None:
            self.counter.add(chunks_down=1)
            turn.server_spoke = True

        ends = threading.Event(), threading.Event()
        pipes = ((client, server, ends[0], up), (server, client, ends[1], down))
        for src, dst, done, on_chunk in pipes:
            args = (src, dst, self.delay, done, on_chunk)
            threading.Thread(target=_pipe, args=args, daemon=True).start()
        for done in ends:
            done.wait()
        client.close()
        server.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()


@dataclass(frozen=True)
class Proxy:
    """A running proxy: its port on 127.0.0.1 and its counts so far (see the module doc)."""

    port: int
    counts: Callable[[], Counts]
    delay_ms: float


@contextlib.contextmanager
def _in_thread(delay_ms: float, target: tuple[str, int]) -> Iterator[Proxy]:
    proxy = _Proxy(delay_ms, target)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield Proxy(proxy.port, proxy.counter.snapshot, delay_ms)
    finally:
        proxy.close()  # open connections end with their clients
        thread.join(10)


@contextlib.contextmanager
def _in_process(delay_ms: float, target: tuple[str, int]) -> Iterator[Proxy]:
    args = ["--delay-ms", str(delay_ms), "--target", f"{target[0]}:{target[1]}", "--control"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.latency_proxy", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def counts() -> Counts:
        stdin.write("counts\n")
        stdin.flush()
        values: Counts = json.loads(stdout.readline())
        return values

    try:
        line = stdout.readline()
        if not line.strip().isdigit():
            raise RuntimeError(f"latency proxy did not start (exit {proc.poll()}): {line!r}")
        yield Proxy(int(line), counts, delay_ms)
    finally:
        stdin.close()  # the proxy exits at the end of its input
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        stdout.close()


def latency_proxy(
    delay_ms: float, target: tuple[str, int] = ("127.0.0.1", 5432), *, in_thread: bool = False
) -> contextlib.AbstractContextManager[Proxy]:
    """A proxy 127.0.0.1:port → `target` adding `delay_ms` each way (see `Proxy`)."""
    return (_in_thread if in_thread else _in_process)(delay_ms, target)


def via(url: str, port: int) -> str:
    """`url` (libpq or SQLAlchemy style) with its host and port replaced by 127.0.0.1:port."""
    parts = urlsplit(url)
    userinfo, _, _ = parts.netloc.rpartition("@")
    netloc = f"{userinfo}@127.0.0.1:{port}" if userinfo else f"127.0.0.1:{port}"
    return urlunsplit(parts._replace(netloc=netloc))


def target_of(url: str) -> tuple[str, int]:
    """The (host, port) a PostgreSQL URL names (5432 when it names none)."""
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 5432


def _control(proxy: _Proxy) -> None:
    """`--control`: answer each `counts` line of stdin with the counts as one JSON line; exit
    at the end of stdin (the parent is done, or gone)."""
    for line in sys.stdin:
        if line.strip() == "counts":
            print(json.dumps(proxy.counter.snapshot()), flush=True)
    os._exit(0)  # daemon threads hold open connections: nothing to wait for


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay-ms", type=float, required=True, help="one-way delay")
    parser.add_argument("--target", default="127.0.0.1:5432", help="host:port to forward to")
    parser.add_argument(
        "--control", action="store_true", help="answer `counts` on stdin; exit at its end"
    )
    args = parser.parse_args()
    host, _, port = args.target.rpartition(":")
    # A thread woken from its sleep must not wait 5 ms (the default) for the interpreter.
    sys.setswitchinterval(0.0002)
    proxy = _Proxy(args.delay_ms, (host, int(port)))
    print(proxy.port, flush=True)
    if args.control:
        threading.Thread(target=_control, args=(proxy,), daemon=True).start()
    with contextlib.suppress(KeyboardInterrupt):
        proxy.serve_forever()


if __name__ == "__main__":
    main()
