"""Issue 22 defect 2: progress bars count completed work only, with one segment per outcome.

A real run ends with completed, failed and cancelled jobs; the run page, its per-model rows and
the dashboard row must show the JSON API's numbers — the server's first paint and the live
page's redraw alike (web/progress_bar.py and static/api.js draw the same bar)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from tests.waiting import run_report_when

from valuerank.db import Database
from valuerank.runs import service
from valuerank.runs.progress import Progress
from valuerank.web.progress_bar import segments, value_text

from .conftest import Browsing
from .test_runs_pages import FAILING, UTIL, demo_definition, launch, worker

SLOW = f"{UTIL}?latency_ms=250"  # slow enough that jobs are still queued when we cancel


def test_segments_and_percent_count_completed_work_only() -> None:
    # The cases: 50 cancelled and 4 completed is 7 %, not 93 %; 6 failed is 0 %.
    p = Progress(total=54, queued=0, running=0, completed=4, failed=0, cancelled=50)
    assert p.completed_percent == 7
    assert [(s.outcome, s.x, s.count) for s in segments(p)] == [
        ("completed", 0, 4),
        ("failed", 4, 0),
        ("cancelled", 4, 50),
    ]
    failed = Progress(total=6, queued=0, running=0, completed=0, failed=6, cancelled=0)
    assert failed.completed_percent == 0
    assert value_text(failed) == "0 % completed: 0 of 6 jobs; 6 failed, 0 cancelled"
    # Rounded down: 100 % only when every job completed.
    assert Progress(200, 0, 0, 199, 1, 0).completed_percent == 99
    assert Progress(0, 0, 0, 0, 0, 0).completed_percent == 0


async def _bar(locator: Any) -> dict[str, Any]:
    """What a segmented bar shows: its ARIA numbers, and each segment's offset and width."""
    found: dict[str, Any] = await locator.evaluate(
        """svg => ({
            now: svg.getAttribute('aria-valuenow'), max: svg.getAttribute('aria-valuemax'),
            text: svg.getAttribute('aria-valuetext'), box: svg.getAttribute('viewBox'),
            segs: Object.fromEntries(Array.from(svg.querySelectorAll('[data-seg]')).map(r => [
                r.dataset.seg, [Number(r.getAttribute('x')), Number(r.getAttribute('width'))]
            ]))
        })"""
    )
    return found


def _expected(p: dict[str, int]) -> dict[str, Any]:
    """The bar the API's counts call for."""
    percent = 100 * p["completed"] // p["total"] if p["total"] else 0
    return {
        "now": str(p["completed"]),
        "max": str(p["total"]),
        "text": f"{percent} % completed: {p['completed']} of {p['total']} jobs; "
        f"{p['failed']} failed, {p['cancelled']} cancelled",
        "box": f"0 0 {p['total'] or 1} 1",
        "segs": {
            "completed": [0, p["completed"]],
            "failed": [p["completed"], p["failed"]],
            "cancelled": [p["completed"] + p["failed"], p["cancelled"]],
        },
    }


async def _assert_pages_match_api(
    ui: Browsing, run_page: Any, dashboard: Any, browser: httpx.AsyncClient, run_id: str
) -> dict[str, int]:
    from playwright.async_api import expect

    detail = (await browser.get(f"/api/runs/{run_id}")).json()["data"]
    p = detail["progress"]
    percent = 100 * p["completed"] // p["total"]
    await expect(run_page.locator("#progress-percent")).to_have_text(f"{percent} %")
    await expect(run_page.locator("#progress-text")).to_have_text(f"{p['completed']}/{p['total']}")
    assert await _bar(run_page.locator("#run-progress")) == _expected(p)
    for state in ("queued", "running", "completed", "failed", "cancelled"):
        await expect(run_page.locator(f"#count-{state}")).to_have_text(str(p[state]))

    breakdown = (await browser.get(f"/api/runs/{run_id}/breakdown")).json()["data"]
    for group in breakdown["models"]:
        row = run_page.locator(f'#per-model tr[data-key="{group["model"]}"]')
        await expect(row.locator("td[data-f=done]")).to_have_text(
            f"{group['completed']}/{group['total']}"
        )
        assert await _bar(row.locator("[data-f=bar]")) == _expected(group)

    listed = (await browser.get("/api/runs")).json()["data"]["runs"]
    [entry] = [r for r in listed if r["id"] == run_id]
    assert entry["progress"] == {k: p[k] for k in entry["progress"]}
    row = dashboard.locator(f'tr[data-run-id="{run_id}"]')
    await expect(row.locator("[data-field=count]")).to_have_text(f"{p['completed']}/{p['total']}")
    await expect(row.locator("[data-field=percent]")).to_have_text(f"{percent} %")
    for outcome in ("failed", "cancelled"):
        tag = row.locator(f"[data-field={outcome}]")
        if p[outcome]:
            await expect(tag).to_have_text(f"{p[outcome]} {outcome}")
        else:
            await expect(tag).to_be_hidden()
    assert await _bar(row.locator("[data-field=bar]")) == _expected(p)
    return dict(p)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a browser: one DB
async def test_bars_show_completed_failed_and_cancelled_jobs_as_the_api_counts_them(
    ui: Browsing, browser: httpx.AsyncClient, db: Database, org_id: str
) -> None:
    from playwright.async_api import expect

    definition = await demo_definition(db, org_id)
    run = await launch(
        db, org_id, definition, models=(SLOW, FAILING), sample_percentage=30, sample_seed=5
    )
    async with worker(db):  # until some jobs completed and some failed, then no worker
        await run_report_when(
            db,
            org_id,
            run.id,
            lambda r: r.progress.completed >= 2 and r.progress.failed >= 2,
            what="2 jobs completed and 2 failed",
        )

    run_page = await ui.open(f"/runs/{run.id}")
    dashboard = await ui.page.context.new_page()
    await dashboard.goto(ui.site.url + "/")
    first = await _assert_pages_match_api(ui, run_page, dashboard, browser, run.id)
    assert first["cancelled"] == 0 and first["queued"] > 0  # the first paint, mid-run

    # Cancelled while both pages are open: they redraw from the API, without a reload.
    await run_page.evaluate("window.__kept = 'kept'")
    async with db.transaction() as conn:
        await service.cancel_run(conn, org_id, run.id)
    await expect(run_page.locator("#run-status")).to_have_text("cancelled", timeout=15_000)
    await expect(dashboard.locator(f'tr[data-run-id="{run.id}"] [data-field=status]')).to_have_text(
        "cancelled", timeout=15_000
    )
    final = await _assert_pages_match_api(ui, run_page, dashboard, browser, run.id)
    assert final["completed"] >= 2 and final["failed"] >= 2 and final["cancelled"] > 0
    assert final["completed"] < final["total"]  # the old bar was full here; this one is not
    assert await run_page.evaluate("window.__kept") == "kept"

    # The server's first paint of the finished run: the same numbers.
    fresh = await ui.open(f"/runs/{run.id}")
    await dashboard.reload()
    assert await _assert_pages_match_api(ui, fresh, dashboard, browser, run.id) == final
    await ui.screenshot("run-cancelled-progress")
    await dashboard.close()
