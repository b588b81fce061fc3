"""Issue 22 defect 1: live pages that stay right.

A run page watched to its end must show what a fresh load of the same URL shows, whatever else
the browser has open, without tripping the rate limit: it learns of changes from its one event
stream (snapshots of the run, api/sse.py) and fetches the server-drawn sections only when
they changed, dropping an answer older than one already drawn; a browser session's requests
have a budget of their own; a failed update shows a "stale, retrying" mark until the next
success. Real server (rate limits on), real worker, Debian's chromium; no request is faked —
a slow network is made by holding a real answer back (Playwright's routing)."""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from tests.servers import running
from tests.waiting import run_report_when

from valuerank.accounts import Role, add_member, create_token
from valuerank.api import create_app
from valuerank.config import Settings
from valuerank.db import Database
from valuerank.runs.progress import read_report

from .conftest import SCREENSHOTS, TOKEN, chromium_path
from .test_runs_pages import DEON, UTIL, demo_definition, launch, worker

SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a browser: one DB
CENTRIST = "scripted:centrist"
SECTIONS_SECONDS = 5  # run.js: the sections are redrawn at most this often while a run moves
STANDARD_LIMIT = 100  # requests a minute: the default `rate_limit_standard`


@dataclass
class Tabs:
    """A signed-in browser (one session) whose tabs' requests and answers are recorded."""

    url: str
    context: Any
    errors: list[str] = field(default_factory=list)
    requests: list[tuple[str, float, str]] = field(default_factory=list)  # tab, time, URL
    statuses: list[tuple[str, int, str]] = field(default_factory=list)  # tab, status, URL

    async def open(self, name: str, path: str) -> Any:
        page = await self.context.new_page()
        page.set_default_timeout(30_000)
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("request", lambda r: self.requests.append((name, time.monotonic(), r.url)))
        page.on("response", lambda r: self.statuses.append((name, r.status, r.url)))
        await page.goto(self.url + path)
        return page

    def counted(self, tab: str, since: float = 0.0) -> list[str]:
        """The tab's requests the rate limit counts (static files are not)."""
        return [u for t, at, u in self.requests if t == tab and at >= since and "/static/" not in u]

    def refused(self) -> list[str]:
        return [u for _, status, u in self.statuses if status == 429]


@asynccontextmanager
async def limited_site(db: Database, org_id: str, **limits: Any) -> AsyncIterator[str]:
    """The app with its rate limits on (the defaults unless overridden), on a real server."""
    async with db.transaction() as conn:
        admin = await add_member(conn, org_id, "admin@example.test", Role.ADMIN)
        await create_token(conn, org_id, admin.user.id, name="live pages", token=TOKEN)
    settings = Settings(
        auto_login=False,
        public_read_prefixes=(),
        redis_url=None,
        rate_limits_enabled=True,
        **limits,
    )
    async with running(create_app(db, org_id=org_id, settings=settings)) as url:
        yield url


@asynccontextmanager
async def signed_in(url: str, first: str = "/") -> AsyncIterator[Tabs]:
    """Chromium headless with a session opened from the printed `?token=` URL at `first`."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium_path(), headless=True)
        try:
            context = await browser.new_context(viewport={"width": 1280, "height": 860})
            tabs = Tabs(url, context)
            jump = await context.request.get(f"{url}{first}?token={TOKEN}", max_redirects=0)
            assert jump.status == 303  # the session cookie is set; nothing counted yet
            yield tabs
        finally:
            await browser.close()


def api_client(url: str) -> httpx.AsyncClient:
    """An API client with the token: a budget apart from the browser session's."""
    return httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30, verify=False
    )


async def settled(page: Any) -> None:
    """Until the page's stream has ended and its sections are drawn with nothing still due."""
    from playwright.async_api import expect

    run = page.locator("#run")
    await expect(run).to_have_attribute("data-stream", "ended", timeout=60_000)
    await expect(run).to_have_attribute("data-sections", "current", timeout=60_000)


async def results_table(page: Any) -> list[list[str]]:
    rows: list[list[str]] = await page.locator("#results tbody tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells, c => c.textContent.trim()))"
    )
    return rows


def expected_rows(detail: dict[str, Any]) -> list[list[str]]:
    """The results table's numbers as the JSON API gives them (cost aside)."""
    return [
        [
            r["transcripts"],
            r["decided"],
            r["refusals"],
            "–" if r["mean_decision"] is None else f"{r['mean_decision']:.2f}",
            *(r["decision_counts"].get(str(k), 0) for k in range(1, 6)),
        ]
        for r in detail["results"]
    ]


def numbers(rows: list[list[str]]) -> list[list[str | int]]:
    return [[int(c) if c.isdigit() else c for c in row[1:10]] for row in rows]


async def assert_page_is_the_api(page: Any, api: httpx.AsyncClient, run_id: str) -> list[Any]:
    """The page's results, counts and per-model progress are the API's; returns its table."""
    from playwright.async_api import expect

    detail = (await api.get(f"/api/runs/{run_id}")).json()["data"]
    table = await results_table(page)
    assert [re.sub(r"\s+synthetic$", "", row[0]) for row in table] == [
        r["model"] for r in detail["results"]
    ]
    assert numbers(table) == expected_rows(detail)
    await expect(page.locator("#run-status")).to_have_text(detail["status"])
    await expect(page.locator("#count-transcripts")).to_have_text(str(detail["transcripts"]))
    assert sum(r["transcripts"] for r in detail["results"]) == detail["transcripts"]
    breakdown = (await api.get(f"/api/runs/{run_id}/breakdown")).json()["data"]
    for group in breakdown["models"]:
        row = page.locator(f'#per-model tr[data-key="{group["model"]}"]')
        await expect(row.locator("td[data-f=done]")).to_have_text(
            f"{group['completed']}/{group['total']}"
        )
    return table


@SQLITE
async def test_a_run_watched_to_its_end_with_the_dashboard_open_shows_what_a_reload_shows(
    db: Database, org_id: str
) -> None:
    from playwright.async_api import expect

    definition = await demo_definition(db, org_id)
    models = tuple(f"{m}?latency_ms=1500" for m in (UTIL, DEON, CENTRIST))
    run = await launch(db, org_id, definition, models=models, sample_percentage=23, sample_seed=3)
    async with limited_site(db, org_id) as url, signed_in(url) as tabs, api_client(url) as api:
        run_page = await tabs.open("run", f"/runs/{run.id}")
        dashboard = await tabs.open("dashboard", "/")
        await expect(run_page.locator("#run")).to_have_attribute("data-stream", "open")
        started = time.monotonic()
        async with worker(db):
            report = await run_report_when(db, org_id, run.id)
            await settled(run_page)
        watched = time.monotonic() - started
        assert report.run.status.value == "completed" and report.progress.total == 18
        row = dashboard.locator(f'tr[data-run-id="{run.id}"]')
        await expect(row.locator("[data-field=status]")).to_have_text("completed", timeout=30_000)
        await expect(row.locator("[data-field=count]")).to_have_text("18/18")

        live = await assert_page_is_the_api(run_page, api, run.id)
        fresh_page = await tabs.open("reload", f"/runs/{run.id}")
        assert await results_table(fresh_page) == live
        assert await assert_page_is_the_api(fresh_page, api, run.id) == live

        # Nothing refused; few requests: the stream, and the sections when they changed.
        assert tabs.refused() == [] and tabs.errors == []
        run_requests = tabs.counted("run", since=started)
        both = run_requests + tabs.counted("dashboard", since=started)
        per_minute = len(both) * 60 / max(watched, 60)
        print(
            f"\nwatched {watched:.1f} s: the run page made {len(run_requests)} counted "
            f"requests, with the dashboard {len(both)} ({per_minute:.0f}/minute)"
        )
        sections = [u for u in run_requests if u.endswith("/sections")]
        assert len(sections) <= math.ceil(watched / SECTIONS_SECONDS) + 2, run_requests
        assert len(run_requests) - len(sections) <= 2, run_requests  # its one stream (+ one)
        assert per_minute <= STANDARD_LIMIT / 2, both
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        await run_page.screenshot(path=str(SCREENSHOTS / "run-live-end.png"), full_page=True)


@SQLITE
async def test_an_older_answer_landing_after_a_newer_one_is_not_drawn(
    db: Database, org_id: str
) -> None:
    definition = await demo_definition(db, org_id)
    models = tuple(f"{m}?latency_ms=700" for m in (UTIL, DEON))
    run = await launch(db, org_id, definition, models=models, sample_percentage=23, sample_seed=4)
    async with limited_site(db, org_id) as url, signed_in(url) as tabs, api_client(url) as api:
        # The first answer of the sections is read at once but handed over only after the
        # answer to a request made once the run had ended: a slow network that reorders them.
        final_answered = asyncio.Event()
        seen: list[int] = []

        async def reorder(route: Any) -> None:
            seen.append(len(seen) + 1)
            number = seen[-1]
            ended = (await read_report(db, org_id, run.id)).run.status.terminal
            answer = await route.fetch()
            if number == 1:
                await asyncio.wait_for(final_answered.wait(), timeout=60)
            await route.fulfill(response=answer)
            if number > 1 and ended:
                final_answered.set()

        await tabs.context.route(re.compile(r".*/runs/[^/]+/sections$"), reorder)
        run_page = await tabs.open("run", f"/runs/{run.id}")
        async with worker(db):
            await run_report_when(db, org_id, run.id)
            await settled(run_page)
        assert len(seen) >= 2 and final_answered.is_set()
        live = await assert_page_is_the_api(run_page, api, run.id)
        await tabs.context.unroute(re.compile(r".*/runs/[^/]+/sections$"))
        fresh_page = await tabs.open("reload", f"/runs/{run.id}")
        assert await results_table(fresh_page) == live
        assert tabs.refused() == [] and tabs.errors == []


@SQLITE
async def test_a_refused_update_shows_the_stale_mark_until_a_retry_succeeds(
    db: Database, org_id: str
) -> None:
    from playwright.async_api import expect

    definition = await demo_definition(db, org_id)
    models = tuple(f"{m}?latency_ms=300" for m in (UTIL, DEON))
    run = await launch(db, org_id, definition, models=models, sample_percentage=15, sample_seed=6)
    # A window long enough that the run moves on while the budget is spent, even on a slow
    # machine.
    limits = {"rate_limit_standard": "8/30 seconds"}
    async with (
        limited_site(db, org_id, **limits) as url,
        signed_in(url, f"/runs/{run.id}") as tabs,
        api_client(url) as api,
    ):
        run_page = await tabs.open("run", f"/runs/{run.id}")
        dashboard = await tabs.open("dashboard", "/")
        await expect(run_page.locator("#run")).to_have_attribute("data-stream", "open")
        # Spend the session's budget from the page itself, then let the run move on.
        refused = await run_page.evaluate(
            """async () => {
                for (let i = 0; i < 20; i++) {
                    const r = await fetch('/api/runs?limit=1');
                    if (r.status === 429) { return Number(r.headers.get('Retry-After')); }
                }
                return 0;
            }"""
        )
        assert 1 <= refused <= 30
        stale = run_page.get_by_role("status").filter(has_text="may be out of date")
        dashboard_stale = dashboard.get_by_role("status").filter(has_text="may be out of date")
        async with worker(db):
            await expect(stale).to_be_visible(timeout=60_000)
            await expect(stale).to_contain_text("HTTP 429")
            await expect(stale).to_contain_text(re.compile(r"retrying in \d+ s"))
            await expect(dashboard_stale).to_be_visible(timeout=60_000)
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            await run_page.screenshot(path=str(SCREENSHOTS / "run-live-stale.png"))
            await run_report_when(db, org_id, run.id)
            # Retried when Retry-After said: the marks go, the page ends right.
            await expect(stale).to_be_hidden(timeout=60_000)
            await settled(run_page)
        await expect(dashboard_stale).to_be_hidden(timeout=60_000)
        live = await assert_page_is_the_api(run_page, api, run.id)
        assert any(u.endswith("/sections") for u in tabs.refused()), tabs.refused()
        # A fresh load, by another browser session (a budget of its own): the same table.
        async with signed_in(url, f"/runs/{run.id}") as other:
            fresh_page = await other.open("reload", f"/runs/{run.id}")
            assert await results_table(fresh_page) == live
            assert other.errors == []
    # Chrome logs each refused request as a console error: those, and nothing else.
    assert [e for e in tabs.errors if "status of 429" not in e] == []
