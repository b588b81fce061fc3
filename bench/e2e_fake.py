"""A fake OpenAI-compatible chat-completions server for `bench.e2e`, run as its own process.

`POST …/chat/completions` answers after `--latency` seconds (timed on the event loop, so any
number of requests wait at once) with a short answer ending in `Rating: N`, N from a hash of
the prompt, and token usage. HTTP/1.1 with keep-alive, as the SDKs use it. `GET /stats`
returns how many completions were served and an order-independent digest of the prompts
(the sum of the first 8 bytes of sha256 of each request's last user message, mod 2**64), so
the benchmark can check that each system sent exactly the same prompts.

Judges: each answer carries its prompt's share of the digest as `(ref <16 hex>)`, so a
request whose last user message holds a ref is a judge reading an answer (our judge's
transcript, Inspect's model-graded scorer's `[Submission]`). It is answered in the format
its prompt asks for — `GRADE: C` when the prompt asks for a GRADE (Inspect's
`model_graded_qa`), else our judge's JSON verdict — and counted apart: `judge_completions`
and `judge_digest` (the sum of the refs read), which must equal the prompts' digest when
every answer was judged exactly once.

    python -m bench.e2e_fake --latency 0.05   # prints "port N" on stdout, serves until killed

Kept free of heavy imports (no valuerank): it starts in a fraction of a second.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import signal
import sys

MASK = (1 << 64) - 1
REF = re.compile(r"\(ref ([0-9a-f]{16})\)")
# A rubric's value names as our judge's system prompt lists them ("- Name: definition"),
# after "Name values only from this list".
VALUE_NAME = re.compile(r"^- ([A-Za-z][A-Za-z_]*):", re.MULTILINE)


def prompt_digest(text: str) -> int:
    """One prompt's share of the digest (the benchmark computes the expected sum the same way)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


class Stats:
    def __init__(self) -> None:
        self.completions = 0
        self.digest = 0
        self.bad = 0
        self.judge_completions = 0
        self.judge_digest = 0


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: join their texts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _judge_text(prompt: str, system: str, share: int) -> str:
    """A judge's reply in the format its prompt asks for (the rating read from the answer)."""
    rating = share % 5 + 1
    if "GRADE" in prompt:  # Inspect's model_graded_qa / model_graded_fact instructions
        return (
            "The submission weighs the duties against the outcomes and ends with a rating "
            f"on the 1-5 scale ({rating}), which is what the criterion asks for.\n\nGRADE: C"
        )
    listing = system[max(0, system.rfind("Name values")) :]  # after the report's own keys
    names = VALUE_NAME.findall(listing) or ["Physical_Safety", "Economic_Security"]
    verdict = {
        "decision": rating,
        "prioritized_values": names[:1],
        "deprioritized_values": names[1:2],
        "confidence": 80,
        "rationale": f"The Target weighs both sides and concludes with Rating: {rating}.",
    }
    return json.dumps(verdict)


def _answer(body: bytes, stats: Stats) -> bytes:
    try:
        request = json.loads(body)
        messages = request["messages"]
        prompt = _text(next(m["content"] for m in reversed(messages) if m["role"] == "user"))
        system = "".join(_text(m["content"]) for m in messages if m["role"] == "system")
        model = str(request.get("model", "fake"))
    except (ValueError, KeyError, TypeError, StopIteration, AttributeError):
        stats.bad += 1
        return b'{"error": {"message": "bad request", "type": "invalid_request_error"}}'
    ref = REF.search(prompt)
    if ref is not None:  # a judge reading an answer of ours
        share = int(ref.group(1), 16)
        stats.judge_completions += 1
        stats.judge_digest = (stats.judge_digest + share) & MASK
        text = _judge_text(prompt, system, share)
        completion_tokens = 60
    else:
        share = prompt_digest(prompt)
        stats.completions += 1
        stats.digest = (stats.digest + share) & MASK
        rating = share % 5 + 1
        text = (
            "Weighing the duties against the outcomes in this situation, the considerations on "
            "both sides are real, but one of them carries more weight here "
            f"(ref {share:016x}).\n\nRating: {rating}"
        )
        completion_tokens = 40
    prompt_tokens = max(1, (len(prompt) + len(system)) // 4)
    return json.dumps(
        {
            "id": f"chatcmpl-{stats.completions + stats.judge_completions}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    ).encode()


class FakeOpenAI(asyncio.Protocol):
    def __init__(self, stats: Stats, latency: float) -> None:
        self.stats, self.latency = stats, latency
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].decode("latin-1")
            lines = head.split("\r\n")
            method, path = lines[0].split(" ")[:2]
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4 : end + 4 + length]
            self.buffer = self.buffer[end + 4 + length :]
            self._respond(method, path, body)

    def _respond(self, method: str, path: str, body: bytes) -> None:
        loop = asyncio.get_running_loop()
        if method == "GET" and path.rstrip("/").endswith("/stats"):
            data = {
                "completions": self.stats.completions,
                "digest": self.stats.digest,
                "bad": self.stats.bad,
                "judge_completions": self.stats.judge_completions,
                "judge_digest": self.stats.judge_digest,
            }
            self._send(200, json.dumps(data).encode())
        elif method == "POST" and path.rstrip("/").endswith("/chat/completions"):
            payload = _answer(body, self.stats)
            status = 400 if payload.startswith(b'{"error"') else 200
            loop.call_later(self.latency, self._send, status, payload)
        else:
            self._send(404, b'{"error": {"message": "not found", "type": "not_found"}}')

    def _send(self, status: int, payload: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
        self.transport.write(
            f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(payload)}\r\nconnection: keep-alive\r\n\r\n".encode()
            + payload
        )


async def serve(latency: float, port: int) -> None:
    stats = Stats()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: FakeOpenAI(stats, latency), "127.0.0.1", port, backlog=4096
    )
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    asyncio.run(serve(args.latency, args.port))
    sys.exit(0)


if __name__ == "__main__":
    main()
