"""A fake LLM provider on loopback that enforces a true rolling request window, as real
providers' "requests per minute" do: at most `limit` requests in any `window` seconds.

It keeps a sliding log of the times of the requests it allowed. A request finding `limit` of
them in the last `window` seconds gets a 429 at once, with OpenAI's headers: `retry-after`
(whole seconds, rounded up, until the oldest request in the window leaves it: the next one
allowed), `x-ratelimit-limit-requests`, `x-ratelimit-remaining-requests: 0` and
`x-ratelimit-reset-requests` (the same wait as a duration, "1.234s"), and OpenAI's error body.
An allowed request is answered after `latency` seconds with the same headers (remaining
after it). Refused requests do not enter the log. HTTP/1.1 with keep-alive, on asyncio.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
import math
import time
from collections import deque


class FakeProvider:
    def __init__(self, limit: int, window: float = 60.0, latency: float = 0.05) -> None:
        self.limit, self.window, self.latency = limit, window, latency
        self._log: deque[float] = deque()  # allowed requests in the window (monotonic)
        self.allowed: list[float] = []  # every allowed request's time (monotonic)
        self.refused: list[float] = []  # every 429's time
        self._server: asyncio.Server | None = None
        self.url = ""

    # -- the window --------------------------------------------------------------------------

    def decide(self, now: float) -> tuple[int, dict[str, str]]:
        """Allow or refuse a request arriving at `now`: (status, rate-limit headers)."""
        log = self._log
        while log and log[0] <= now - self.window:
            log.popleft()
        headers = {"x-ratelimit-limit-requests": str(self.limit)}
        if len(log) < self.limit:
            log.append(now)
            self.allowed.append(now)
            status = 200
        else:
            self.refused.append(now)
            status = 429
        wait = max(log[0] + self.window - now, 0.0)  # until the oldest one leaves the window
        headers["x-ratelimit-remaining-requests"] = str(self.limit - len(log))
        headers["x-ratelimit-reset-requests"] = f"{wait:.3f}s"
        if status == 429:
            headers["retry-after"] = str(max(1, math.ceil(wait)))
        return status, headers

    def allowed_between(self, start: float, end: float) -> int:
        return sum(1 for t in self.allowed if start <= t < end)

    def window_use(self, start: float, end: float, step: float = 0.05) -> float:
        """How full the window was kept from `start` to `end`: the mean over that time (sampled
        every `step` s) of the requests allowed in the `window` seconds before each instant,
        over `limit`. 1.0: every place that freed in the window was taken again at once."""
        times = self.allowed  # in arrival order
        samples = max(1, round((end - start) / step))
        total = 0
        for i in range(samples):
            t = start + (i + 1) * (end - start) / samples
            total += bisect.bisect_right(times, t) - bisect.bisect_right(times, t - self.window)
        return total / samples / self.limit

    def peak_calls(self, start: float, end: float) -> int:
        """The most calls (allowed and refused) that arrived in any `window` seconds starting
        at a call between `start` and `end`."""
        times = sorted(t for t in (*self.allowed, *self.refused) if start <= t < end)
        return max(
            (bisect.bisect_left(times, t + self.window) - i for i, t in enumerate(times)),
            default=0,
        )

    def refused_between(self, start: float, end: float) -> int:
        return sum(1 for t in self.refused if start <= t < end)

    @property
    def first_request(self) -> float | None:
        times = [*self.allowed[:1], *self.refused[:1]]
        return min(times) if times else None

    # -- HTTP --------------------------------------------------------------------------------

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/v1/chat/completions"

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                if length:
                    await reader.readexactly(length)
                status, headers = self.decide(time.monotonic())
                if status == 200:
                    await asyncio.sleep(self.latency)
                    body = b'{"choices": [{"message": {"content": "ok"}}]}'
                else:
                    body = self._error_body()
                lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Too Many Requests'}"]
                lines += [f"{k}: {v}" for k, v in headers.items()]
                lines += ["content-type: application/json", f"content-length: {len(body)}"]
                writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    def _error_body(self) -> bytes:
        message = (
            f"Rate limit reached for requests. Limit: {self.limit} / {self.window:g}s. "
            "Please try again later."
        )
        error = {"message": message, "type": "requests", "code": "rate_limit_exceeded"}
        return json.dumps({"error": error}).encode()


class LoopbackClient:
    """A minimal HTTP/1.1 keep-alive client for the fake provider: at most `connections`
    connections, each used by one request at a time. (httpx's pool bookkeeping costs more CPU
    per request than the rest of a job here, and the benchmark measures the queue.)"""

    def __init__(self, url: str, connections: int) -> None:
        rest = url.split("://", 1)[1]
        hostport, _, path = rest.partition("/")
        host, _, port = hostport.partition(":")
        self.host, self.port, self.path = host, int(port), "/" + path
        self._idle: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
            asyncio.Queue()
        )
        self._free = asyncio.Semaphore(connections)

    async def post(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """(status, headers with lower-case names, body)."""
        async with self._free:
            if self._idle.empty():
                reader, writer = await asyncio.open_connection(self.host, self.port)
            else:
                reader, writer = self._idle.get_nowait()
            try:
                writer.write(
                    (
                        f"POST {self.path} HTTP/1.1\r\nhost: {self.host}\r\n"
                        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
                    ).encode()
                    + body
                )
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                status = int(lines[0].split(" ", 2)[1])
                headers = {}
                for line in lines[1:]:
                    if line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                data = await reader.readexactly(int(headers.get("content-length", "0")))
            except BaseException:
                writer.close()
                raise
            self._idle.put_nowait((reader, writer))
            return status, headers, data

    async def aclose(self) -> None:
        while not self._idle.empty():
            _, writer = self._idle.get_nowait()
            writer.close()
