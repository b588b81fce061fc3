"""MCP latency: `get_run_summary` over the streamable HTTP transport (`POST /mcp`) beside the
JSON API's read of the same run's analysis (`GET /api/runs/{id}/analysis`), both cached.

A fresh database (SQLite in a temporary directory unless `--database-url`) gets the demo
definition, a completed run of two scripted models (`valuerank runs wait --work`) and its
analysis stored; an admin's API token is made with the CLI. The server is `valuerank serve
--no-work --no-access-log` in a child process, rate limits off. One client (httpx, keep-alive,
one connection) sends `--requests` requests of each kind, alternating, after `--warmup` of
each; latency is measured by the client. The MCP call is one JSON-RPC `tools/call` (the
transport is stateless and answers JSON: no session to open first), and its answer is checked
to carry the same `perModel` as the JSON API's.

    python -m bench.mcp_latency --json [--requests 200] [--warmup 20] [--database-url URL]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

import valuerank
from bench.analyze_cached import cli_json
from bench.server import start_server

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
MODELS = ("scripted:utilitarian", "scripted:contrarian")
PROTOCOL = "2025-11-25"


def seed(env: dict[str, str]) -> tuple[str, str]:
    """(a completed run's id, an admin's API token), through the CLI."""
    cli_json(env, "db", "upgrade")
    definition = cli_json(env, "definitions", "import", str(DEMO))["id"]
    models = [arg for model in MODELS for arg in ("-m", model)]
    created = cli_json(env, "runs", "create", "--definition", definition, *models,
                   "--sample-percentage", "50", "--sample-seed", "7")  # fmt: skip
    waited = cli_json(env, "runs", "wait", created["id"], "--work", "--timeout", "300")
    if waited["status"] != "completed":
        raise RuntimeError(f"the run ended {waited['status']}")
    cli_json(env, "analyze", created["id"])  # stored: both reads below are cached
    cli_json(env, "users", "create", "bench@example.test", "--role", "admin")
    token = cli_json(env, "tokens", "create", "--user", "bench@example.test")["token"]
    return str(created["id"]), str(token)


def latency(ms: list[float]) -> dict[str, Any]:
    p95 = statistics.quantiles(ms, n=100, method="inclusive")[94] if len(ms) > 1 else ms[0]
    return {
        "requests": len(ms),
        "p50_ms": round(statistics.median(ms), 2),
        "p95_ms": round(p95, 2),
        "max_ms": round(max(ms), 2),
    }


def _api(client: httpx.Client, run_id: str) -> dict[str, Any]:
    answer = client.get(f"/api/runs/{run_id}/analysis")
    if answer.status_code != 200 or answer.json()["cached"] is not True:
        raise RuntimeError(f"the JSON API answered {answer.status_code}: {answer.text[:300]}")
    data: dict[str, Any] = answer.json()["data"]
    return data


def _mcp(client: httpx.Client, run_id: str, call: int) -> dict[str, Any]:
    message = {
        "jsonrpc": "2.0",
        "id": call,
        "method": "tools/call",
        "params": {"name": "get_run_summary", "arguments": {"run_id": run_id}},
    }
    answer = client.post("/mcp", json=message)
    if answer.status_code != 200 or "result" not in answer.json():
        raise RuntimeError(f"/mcp answered {answer.status_code}: {answer.text[:300]}")
    result: dict[str, Any] = answer.json()["result"]
    if result.get("isError"):
        raise RuntimeError(f"get_run_summary failed: {result['content']}")
    content: dict[str, Any] = result["structuredContent"]
    return content


def measure(base: str, token: str, run_id: str, requests: int, warmup: int) -> dict[str, Any]:
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
    }
    timings: dict[str, list[float]] = {"json_api": [], "mcp": []}
    load_before = os.getloadavg()
    with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
        if _mcp(client, run_id, 0)["perModel"] != _api(client, run_id)["perModel"]:
            raise RuntimeError("get_run_summary and the JSON API disagree")
        for i in range(warmup + requests):
            for kind in ("json_api", "mcp"):
                started = time.perf_counter()
                _api(client, run_id) if kind == "json_api" else _mcp(client, run_id, i + 1)
                if i >= warmup:
                    timings[kind].append((time.perf_counter() - started) * 1000)
    summary: dict[str, Any] = {kind: latency(ms) for kind, ms in timings.items()}
    # The machine's load beside the figures: it moves them (see docs/benchmarks.md).
    summary["load_average_before"] = [round(x, 2) for x in load_before]
    summary["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    summary["mcp_to_json_api_p50"] = round(
        summary["mcp"]["p50_ms"] / summary["json_api"]["p50_ms"], 2
    )
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--json", action="store_true", help="Print the report as JSON.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite:///{tmp}/bench.db"
        env = {
            **os.environ,
            "VALUERANK_DATABASE_URL": url,
            "VALUERANK_RATE_LIMITS_ENABLED": "false",
            "VALUERANK_WORKER_POLL_SECONDS": "0.05",
            "HOME": tmp,
        }
        run_id, token = seed(env)
        serve = [sys.executable, "-m", "valuerank", "serve", "--no-work", "--no-access-log"]
        child, base = start_server(lambda port: [*serve, "--port", str(port)], env, quiet=True)
        try:
            report = {
                "database": url.split(":", 1)[0],
                "run_id": run_id,
                **measure(base, token, run_id, args.requests, args.warmup),
            }
        finally:
            child.terminate()
            child.wait(timeout=30)
    print(json.dumps(report, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
