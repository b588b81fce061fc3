"""The analysis page's answer time: `python -m bench.analysis_page --json`.

The goal (issue 20): the analysis page of a run whose analysis is cached answers in under
300 ms; it took 0.6–2.3 s while the figures were re-rendered on every load. A judged run of
`--transcripts` transcripts (10 scripted models over the scale benchmark's 1,000-scenario
definition, two judges' readings and their consensus on each: bench/analysis_memory.seed)
is written into a fresh PostgreSQL database; its basic and deep analyses are computed and
stored before the server starts, as a worker would have. The server is `valuerank serve
--no-work` in a child process on 127.0.0.1. The client signs in as a person does (the
`/?token=` URL) and loads `/runs/{id}/analysis` once cold (the figures not yet rendered in
this server process: what every load cost before) and then `--warm` times; each answer must
be 200, say "cached" and carry the five figures. Only the HTTP answer is timed, not the
browser's rendering of the page. For reference the same run's `/api/runs/{id}/analysis`
(the cached analysis as JSON, no figures) is timed too: the floor the page stands on.

    python -m bench.analysis_page --json [--transcripts 5000 --warm 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any

import httpx

from bench.analysis_memory import BASE_URL, seed
from bench.scale import fresh_database
from bench.server import start_server
from valuerank.accounts.hashing import new_api_token

BUDGET_MS = 300.0
FIGURES = 5  # value sensitivity, win rates, agreement, dimension effects, PCA
TOKEN = new_api_token()

SERVE = """
import asyncio, sys
from valuerank.cli.serve_cmd import serve
from valuerank.config import get_settings
from valuerank.db import create_database

async def main() -> None:
    db = create_database(get_settings().database_url)
    await serve(db, sys.argv[2], host="127.0.0.1", port=int(sys.argv[1]), work=False,
                log_level="warning")
    await db.dispose()

asyncio.run(main())
"""


async def _prepare(url: str, org_id: str, run_id: str) -> None:
    """An admin with the benchmark's token, and the run's analyses stored (basic and deep)."""
    from valuerank.accounts import Role, add_member, create_token
    from valuerank.db import create_database
    from valuerank.findings.analyses import run_analysis

    db = create_database(url)
    try:
        async with db.transaction() as conn:
            admin = await add_member(conn, org_id, "bench@example.test", Role.ADMIN)
            await create_token(conn, org_id, admin.user.id, name="bench", token=TOKEN)
        await run_analysis(db, org_id, run_id, deep=True)
    finally:
        await db.dispose()


def _start(url: str, org_id: str) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "VALUERANK_DATABASE_URL": url, "VALUERANK_RATE_LIMITS_ENABLED": "false"}
    return start_server(lambda port: [sys.executable, "-c", SERVE, str(port), org_id], env)


def _timed_get(client: httpx.Client, path: str, check: Any) -> float:
    started = time.perf_counter()
    answer = client.get(path)
    elapsed = (time.perf_counter() - started) * 1000
    problem = check(answer)
    if problem:
        raise RuntimeError(f"{path}: {answer.status_code} {problem}: {answer.text[:300]!r}")
    return elapsed


def _page_problem(answer: httpx.Response) -> str | None:
    if answer.status_code != 200:
        return "not 200"
    if "· cached</p>" not in answer.text:
        return "the analysis was not served from the cache"
    if answer.text.count('<svg class="chart figure"') != FIGURES:
        return f"not {FIGURES} figures"
    return None


def _api_problem(answer: httpx.Response) -> str | None:
    return None if answer.status_code == 200 and answer.json()["cached"] else "not cached"


def latency_summary(ms: list[float]) -> dict[str, Any]:
    p95 = statistics.quantiles(ms, n=100, method="inclusive")[94] if len(ms) > 1 else ms[0]
    return {
        "requests": len(ms),
        "p50_ms": round(statistics.median(ms), 1),
        "p95_ms": round(p95, 1),
        "max_ms": round(max(ms), 1),
    }


def measure(base: str, run_id: str, warm: int) -> dict[str, Any]:
    with httpx.Client(base_url=base, headers={"Accept": "text/html"}, timeout=60) as client:
        login = client.get("/", params={"token": TOKEN})
        if login.status_code != 303:
            raise RuntimeError(f"signing in answered {login.status_code}")
        page = f"/runs/{run_id}/analysis"
        cold = _timed_get(client, page, _page_problem)
        warm_ms = [_timed_get(client, page, _page_problem) for _ in range(warm)]
        size = len(client.get(page).content)
        api = f"/api/runs/{run_id}/analysis"
        api_ms = [_timed_get(client, api, _api_problem) for _ in range(max(5, warm // 2))]
    warm_summary = latency_summary(warm_ms)
    return {
        "cold_ms": round(cold, 1),
        "warm": warm_summary,
        "api_analysis": latency_summary(api_ms),
        "page_bytes": size,
        "budget_ms": BUDGET_MS,
        "ratio_to_budget": round(warm_summary["p95_ms"] / BUDGET_MS, 3),
        "cold_ratio_to_budget": round(cold / BUDGET_MS, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transcripts", type=int, default=5000)
    parser.add_argument("--judges", type=int, default=2, help="judge readings per transcript")
    parser.add_argument("--warm", type=int, default=30, help="warm loads measured")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with fresh_database(BASE_URL) as url:
        seeded = asyncio.run(seed(url, args.transcripts, args.judges))
        asyncio.run(_prepare(url, seeded["org_id"], seeded["run_id"]))
        child, base = _start(url, seeded["org_id"])
        try:
            figures = measure(base, seeded["run_id"], args.warm)
        finally:
            child.terminate()
            child.wait(timeout=30)
    report = {
        "benchmark": "analysis_page",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "run": seeded,
        **figures,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        warm = figures["warm"]
        print(
            f"{seeded['transcripts']:,} transcripts: cold {figures['cold_ms']} ms, warm p50 "
            f"{warm['p50_ms']} ms, p95 {warm['p95_ms']} ms ({figures['ratio_to_budget']} of "
            f"the {BUDGET_MS:.0f} ms budget); the API's cached analysis p50 "
            f"{figures['api_analysis']['p50_ms']} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
