"""Run and transcript pages fetched like a browser, on SQLite and PostgreSQL: the dashboard
(filters, cursor pages, the live poll's URL), a run's page (the buttons valid for its status,
progress per model and provider, failures with their errors, the sections its script swaps
in), `/api/runs/{id}/breakdown|failures`, the new-run form, the transcript search and one
transcript with its judges — runs made by a real worker; escaping; another organisation's
ids are 404."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.waiting import run_report_when

from valuerank.cli.live import in_process_worker
from valuerank.db import Database
from valuerank.definitions.service import fork_definition, import_definition
from valuerank.formats import parse_definition
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.orgs import ensure_org
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.launch import launch_run
from valuerank.queue import QueueSettings
from valuerank.refs import short_id
from valuerank.rubrics import import_rubric
from valuerank.runs import service
from valuerank.runs.config import build_config
from valuerank.runs.records import TranscriptRecord, insert_transcript
from valuerank.runs.service import Run
from valuerank.runs.transcripts import TranscriptFilter, list_transcripts

from .conftest import DEMO, SCREENSHOTS, Browsing

RUBRIC = Path(__file__).parents[2] / "examples" / "values_rubric.yaml"

EVIL = "<script>alert('x')</script>"
ESCAPED = "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"
FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0)
UTIL, DEON = "scripted:utilitarian", "scripted:deontologist"
FAILING = "scripted:deontologist?error_rate=1"  # every call a transient error: the job fails


@asynccontextmanager
async def worker(db: Database) -> AsyncIterator[None]:
    """A real queue worker running the pipeline in this process, against the same database."""
    async with in_process_worker(
        db, settings=FAST, concurrency=2, providers=ProviderPool(environ={})
    ):
        yield


async def demo_definition(db: Database, org_id: str) -> str:
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text(), source_file=DEMO.name)
    return stored.version.id


async def launch(
    db: Database, org_id: str, definition: str, *, start: bool = True, **settings: Any
) -> Run:
    """A run created as the API and the new-run page create it (models checked, estimate)."""
    name = settings.pop("name", "")
    async with db.transaction(immediate=True) as conn:
        launched = await launch_run(
            conn, org_id, definition, build_config(**settings), name=name, start=start
        )
    return launched.started.run if launched.started else launched.created.run


def controls(html: str) -> dict[str, bool]:
    """The run page's controls: action -> enabled."""
    found = {}
    for tag in re.findall(r"<(?:button|fieldset)[^>]*data-action=\"\w+\"[^>]*>", html):
        action = re.search(r'data-action="(\w+)"', tag)
        assert action is not None
        found[action.group(1)] = not re.search(r"\sdisabled[\s>]", tag)
    return found


def rows(html: str, table_id: str) -> dict[str, str]:
    """A table's rows keyed by their `data-key` / `data-run-id`, as text without tags."""
    start = html.index(f'id="{table_id}"')
    body = html[start : html.index("</table>", start)]
    found = {}
    for key, row in re.findall(r'<tr data-(?:key|run-id)="([^"]+)"[^>]*>(.*?)</tr>', body, re.S):
        found[key] = " ".join(re.sub(r"<[^>]+>", " ", row).split())
    return found


async def test_dashboard_filters_pages_and_polls_runs(
    browser: httpx.AsyncClient, db: Database, org_id: str, make_run: Any
) -> None:
    empty = (await browser.get("/")).text
    assert 'id="no-runs"' in empty and 'href="/runs/new"' in empty

    first = await make_run(org_id, name=f"alpha {EVIL}")  # pending
    second = await make_run(org_id, models=(DEON,), name="beta")
    async with db.transaction() as conn:
        await service.start_run(conn, org_id, second.id)
        fork = await fork_definition(
            conn,
            org_id,
            first.definition_id or "",
            definition=parse_definition(DEMO.read_text().replace("demo-whistleblower", "forked")),
        )
        other = await ensure_org(conn, "other")
    third = await launch(db, org_id, fork.version.id, start=False, models=(UTIL,), name="gamma")
    await make_run(other, name="someone else's")

    page = await browser.get("/")
    assert page.status_code == 200
    html = page.text
    assert EVIL not in html and ESCAPED in html
    listed = rows(html, "runs")
    assert list(listed) == [third.id, second.id, first.id]  # newest first, ours only
    assert "someone else" not in html
    assert f"running {DEON} 0/2 " in listed[second.id] and "10 % sample" in listed[second.id]
    assert f"pending {UTIL} 0/0 " in listed[first.id]
    assert 'data-poll="/api/runs?limit=50"' in html and 'data-first-page="true"' in html
    assert '<script src="/static/runs.js' in html and "/static/runs.css" in html

    running = (await browser.get("/", params={"status": "running"})).text
    assert list(rows(running, "runs")) == [second.id]
    assert 'data-poll="/api/runs?status=running&amp;limit=50"' in running
    assert "<option selected>running</option>" in running
    by_model = (await browser.get("/", params={"model": DEON})).text
    assert list(rows(by_model, "runs")) == [second.id]
    by_definition = (await browser.get("/", params={"definition": fork.version.id})).text
    assert list(rows(by_definition, "runs")) == [third.id]
    nothing = (await browser.get("/", params={"status": "cancelled", "model": ""})).text
    assert 'id="no-match"' in nothing and 'id="runs"' not in nothing

    # The poll asks the API for the same rows the table shows.
    poll = await browser.get("/api/runs", params={"status": "running", "limit": 50})
    assert [r["id"] for r in poll.json()["data"]["runs"]] == [second.id]

    # Cursor pages.
    one = (await browser.get("/", params={"limit": 1})).text
    assert list(rows(one, "runs")) == [third.id]
    older = re.search(r'<a rel="next" href="/\?([^"]+)">Older runs</a>', one)
    assert older is not None and "Newest runs" not in one
    query = older.group(1).replace("&amp;", "&")
    two = (await browser.get(f"/?{query}")).text
    assert list(rows(two, "runs")) == [second.id]
    assert "Newest runs" in two and 'data-first-page="false"' in two
    assert "cursor=" in re.search(r'data-poll="([^"]+)"', two).group(1)  # type: ignore[union-attr]

    bad = await browser.get("/", params={"status": "sleeping"})
    assert bad.status_code == 422 and bad.headers["content-type"].startswith("text/html")
    assert "INVALID_INPUT" in bad.text and "one of: pending, running" in bad.text
    forged = await browser.get("/", params={"cursor": "not-a-cursor"})
    assert forged.status_code == 400 and "INVALID_CURSOR" in forged.text


async def test_run_page_controls_breakdown_failures_and_sections(
    browser: httpx.AsyncClient, db: Database, org_id: str, make_run: Any
) -> None:
    definition = await demo_definition(db, org_id)
    run = await launch(
        db,
        org_id,
        definition,
        start=False,
        models=(UTIL, FAILING),
        sample_percentage=10,
        sample_seed=3,
        name=f"mixed {EVIL}",
    )
    html = (await browser.get(f"/runs/{run.id}")).text
    assert EVIL not in html and ESCAPED in html
    assert controls(html) == {
        "start": True,
        "pause": False,
        "resume": False,
        "cancel": True,
        "rerun_failed": False,
        "delete": True,
        "expand": True,
        "judge": False,  # not ended yet
    }
    assert 'data-actions="cancel delete expand start"' in html
    assert f'data-call="POST /api/eval/runs/{run.id}/start"' in html
    assert f'data-call="POST /api/queue/runs/{run.id}/pause"' in html
    assert f'data-call="POST /api/runs/{run.id}/expand"' in html
    assert f'data-export="/api/export/run/{run.id}"' in html
    assert f'href="/runs/{run.id}/analysis"' in html and f'href="/transcripts?run={run.id}"' in html
    assert "Based on 10 % sample: 2 of 27 scenarios." in html
    assert rows(html, "per-model") == {
        UTIL: f"{UTIL} 0/0 0 0 0",
        FAILING: f"{FAILING} 0/0 0 0 0",
    }
    assert rows(html, "per-provider") == {"scripted": "scripted 0/0 0 0 0"}
    assert 'id="no-failures"' in html and 'id="no-results"' in html
    detail = (await browser.get(f"/api/runs/{run.id}")).json()["data"]
    assert detail["actions"] == ["start", "cancel", "expand", "delete"]

    async with db.transaction() as conn:
        await service.start_run(conn, org_id, run.id)
    async with worker(db):
        report = await run_report_when(db, org_id, run.id)
    assert report.progress.failed == 2 and report.progress.completed == 2

    html = (await browser.get(f"/runs/{run.id}")).text
    enabled = {action for action, on in controls(html).items() if on}
    assert enabled == {"rerun_failed", "delete", "expand", "judge"}
    # Completed of all jobs: failed jobs are finished but are not done work (issue 22).
    assert rows(html, "per-model") == {UTIL: f"{UTIL} 2/2 0 0 0", FAILING: f"{FAILING} 0/2 0 0 2"}
    assert rows(html, "per-provider") == {"scripted": "scripted 2/4 0 0 2"}
    assert 'id="progress-percent">50 %<' in html
    assert "2 failed jobs." in html and 'id="failures"' in html
    failures = html[
        html.index('id="failures"') : html.index("</table>", html.index('id="failures"'))
    ]
    assert failures.count("<tr>") == 3  # the header and two failed probes
    assert "transient" in failures.lower() and "3/3" in failures
    assert 'id="results"' in html and "<svg" in html

    sections = await browser.get(f"/runs/{run.id}/sections")
    assert sections.status_code == 200 and "<html" not in sections.text
    assert 'id="results"' in sections.text and 'id="failures"' in sections.text
    assert "Based on 10 % sample" in sections.text

    api = (await browser.get(f"/api/runs/{run.id}")).json()["data"]
    assert api["actions"] == ["rerun_failed", "expand", "delete", "judge"]
    breakdown = (await browser.get(f"/api/runs/{run.id}/breakdown")).json()["data"]
    assert breakdown["models"] == [
        {"model": UTIL, "total": 2, "queued": 0, "running": 0, "completed": 2, "failed": 0,
         "cancelled": 0, "done": 2},
        {"model": FAILING, "total": 2, "queued": 0, "running": 0, "completed": 0, "failed": 2,
         "cancelled": 0, "done": 2},
    ]  # fmt: skip
    assert breakdown["providers"] == [
        {"provider": "scripted", "total": 4, "queued": 0, "running": 0, "completed": 2,
         "failed": 2, "cancelled": 0, "done": 4},
    ]  # fmt: skip
    listed = (await browser.get(f"/api/runs/{run.id}/failures")).json()["data"]
    assert listed["count"] == 2 and listed["next_cursor"] is None
    one = listed["failures"][0]
    assert one["kind"] == "probe" and one["model"] == FAILING and one["provider"] == "scripted"
    assert one["attempts"] == one["max_attempts"] == 3 and "transient" in one["error"].lower()
    assert one["scenario_id"] is not None and one["transcript_id"] is None
    page_one = (await browser.get(f"/api/runs/{run.id}/failures", params={"limit": 1})).json()
    cursor = page_one["data"]["next_cursor"]
    assert page_one["data"]["count"] == 1 and cursor is not None
    page_two = await browser.get(
        f"/api/runs/{run.id}/failures", params={"limit": 1, "cursor": cursor}
    )
    ids = [
        page_one["data"]["failures"][0]["job_id"],
        page_two.json()["data"]["failures"][0]["job_id"],
    ]
    assert sorted(ids) == sorted(f["job_id"] for f in listed["failures"])
    assert page_two.json()["data"]["next_cursor"] is None
    bad = await browser.get(f"/api/runs/{run.id}/failures", params={"cursor": "zzz"})
    assert bad.status_code == 400 and bad.json()["code"] == "INVALID_CURSOR"

    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
    foreign = await make_run(other, name="not yours")
    for path in (f"/runs/{foreign.id}", f"/runs/{foreign.id}/sections"):
        missing = await browser.get(path)
        assert missing.status_code == 404 and "not yours" not in missing.text
    for path in (f"/api/runs/{foreign.id}/breakdown", f"/api/runs/{foreign.id}/failures"):
        missing = await browser.get(path)
        assert missing.status_code == 404 and missing.json()["code"] == "NOT_FOUND"


async def test_new_run_page_offers_versions_and_registry_models(
    browser: httpx.AsyncClient, db: Database, org_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    empty = (await browser.get("/runs/new")).text
    assert 'id="no-definitions"' in empty and 'id="new-run"' not in empty

    definition = await demo_definition(db, org_id)
    html = (await browser.get("/runs/new")).text
    assert f'<option value="{definition}" selected>' in html
    assert f'value="{UTIL}"' in html and 'name="judges" value="scripted:centrist"' in html
    groups = dict(re.findall(r"<legend>(\w+)(.*?)</legend>", html, re.S))
    assert "no key" in groups["openai"] and "no key" not in groups["scripted"]
    for field in ("sample_percentage", "sample_seed", "priority", "extra_models", "definition_id"):
        assert f'name="{field}"' in html
    # Every field has a label: its `for`, or (a checkbox) the label around it.
    for input_id in re.findall(r'<(?:input|select|textarea)[^>]* id="([^"]+)"', html):
        assert f'for="{input_id}"' in html, input_id
    boxes = re.findall(r"<input type=\"checkbox\"", html)
    assert len(boxes) == len(re.findall(r"<label class=\"check\"><input type=\"checkbox\"", html))
    assert "/static/runs.js" in html

    async with db.transaction() as conn:
        fork = await fork_definition(conn, org_id, definition, label="v2")
    chosen = (await browser.get("/runs/new", params={"definition": fork.version.id})).text
    assert f'<option value="{fork.version.id}" selected>' in chosen
    assert f'<option value="{definition}">' in chosen


async def judged_run(
    db: Database,
    org_id: str,
    *,
    sample_percentage: int = 10,
    transcripts: int = 2,
    model: str = UTIL,
) -> Run:
    """A run on a scripted model with two scripted judges reading it against the values
    rubric, run by a real worker (`transcripts` of the demo's scenarios at that sample)."""
    definition = await demo_definition(db, org_id)
    async with db.transaction() as conn:
        await import_rubric(conn, org_id, RUBRIC.read_text(), name="values")
    run = await launch(
        db,
        org_id,
        definition,
        models=(model,),
        judge_models=("scripted:centrist", "scripted:agreeable"),
        sample_percentage=sample_percentage,
        sample_seed=5,
        name="judged",
    )
    async with worker(db):
        report = await run_report_when(db, org_id, run.id)
    assert report.run.status.value == "completed" and report.transcripts == transcripts
    return run


async def test_transcript_search_and_one_transcript_with_its_judges(
    browser: httpx.AsyncClient, db: Database, org_id: str, make_run: Any
) -> None:
    empty = (await browser.get("/transcripts")).text
    assert 'id="no-transcripts"' in empty
    run = await judged_run(db, org_id)
    async with db.transaction() as conn:
        evil = Transcript(
            run.cli_run_id,
            "evil-scenario",
            "scripted:contrarian",
            "demo",
            (Turn(1, "scenario", f"Prompt {EVIL}", f"Answer {EVIL}\nRating: 2"),),
        )
        evil_id = await insert_transcript(
            conn,
            org_id,
            run.id,
            TranscriptRecord(
                transcript=evil,
                model="scripted:contrarian",
                sample_index=0,
                decision_code=2,
                synthetic=True,
            ),
        )
        other = await ensure_org(conn, "other")
    assert evil_id is not None
    foreign = await make_run(other, decisions={UTIL: [3]})

    html = (await browser.get("/transcripts")).text
    listed = re.findall(r'href="/transcripts/([^"?]+)[?"]', html)
    assert len(listed) == 3 and evil_id in listed
    assert EVIL not in html
    judged = [t for t in listed if t != evil_id]

    found = (await browser.get("/transcripts", params={"q": "ALERT('X')"})).text
    assert re.findall(r'href="/transcripts/([^"?]+)[?"]', found) == [evil_id]
    assert 'value="ALERT(&#39;X&#39;)"' in found  # the search stays in its field, escaped
    by_decision = (await browser.get("/transcripts", params={"decision": "2"})).text
    assert evil_id in by_decision
    by_model = (await browser.get("/transcripts", params={"model": UTIL})).text
    assert sorted(re.findall(r'href="/transcripts/([^"?]+)[?"]', by_model)) == sorted(judged)
    by_scenario = (await browser.get("/transcripts", params={"scenario": "evil-scenario"})).text
    assert re.findall(r'href="/transcripts/([^"?]+)[?"]', by_scenario) == [evil_id]
    of_run = (await browser.get("/transcripts", params={"run": short_id(run.id)})).text
    assert f'<a href="/runs/{run.id}">judged</a>' in of_run and "Transcripts of judged" in of_run
    assert '<th scope="col">Run</th>' not in of_run
    none = (await browser.get("/transcripts", params={"q": "no such words anywhere"})).text
    assert 'id="no-match"' in none and 'id="transcripts"' not in none
    one = (await browser.get("/transcripts", params={"limit": 1})).text
    assert (
        len(re.findall(r'href="/transcripts/([^"?]+)[?"]', one)) == 1 and "Older transcripts" in one
    )

    bad = await browser.get("/transcripts", params={"decision": "9"})
    assert bad.status_code == 422 and "INVALID_INPUT" in bad.text
    unknown = await browser.get("/transcripts", params={"run": "no-such-run"})
    assert unknown.status_code == 404 and "NOT_FOUND" in unknown.text

    page = (await browser.get(f"/transcripts/{judged[0]}")).text
    assert page.count('class="turn"') == 2  # the scenario and one follow-up
    assert page.count('class="bubble prompt"') == 2 and page.count('class="bubble answer"') == 2
    assert re.search(r'<span class="decision d[1-5]" id="decision">[1-5]</span>', page)
    judges = page[page.index('id="judges"') : page.index("</ul>", page.index('id="judges"'))]
    assert "scripted:agreeable" in judges and "scripted:centrist" in judges
    assert re.search(r'class="vote vote-(validated|partial|rejected)"', judges)
    consensus = page[
        page.index('id="consensus"') : page.index("</dl>", page.index('id="consensus"'))
    ]
    assert re.search(r"(STRONG|MODERATE|WEAK|NO_DATA) \(\d\.\d\d\)", consensus)
    assert (
        f'href="/runs/{run.id}"' in page and "(synthetic answer from scripted:utilitarian)" in page
    )

    escaped = (await browser.get(f"/transcripts/{evil_id}")).text
    assert EVIL not in escaped and f"Prompt {ESCAPED}" in escaped
    assert 'id="no-judges"' in escaped and 'id="no-consensus"' in escaped

    async with db.transaction() as conn:
        theirs = await list_transcripts(conn, foreign.org_id, TranscriptFilter(run=foreign.id))
    for path in (f"/transcripts/{theirs[0]['id']}", "/transcripts/no-such-transcript"):
        missing = await browser.get(path)
        assert missing.status_code == 404 and "TRANSCRIPT_NOT_FOUND" in missing.text


def provoked(ui: Browsing, status: int) -> None:
    """Chrome logs a failed request as a console error: take the one this test caused on
    purpose off the list (the `ui` fixture fails on any other)."""
    expected = f"the server responded with a status of {status}"
    assert [e for e in ui.errors if expected in e], ui.errors
    ui.errors[:] = [e for e in ui.errors if expected not in e]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a browser: one DB
async def test_start_watch_pause_resume_and_read_a_run_in_a_browser(
    ui: Browsing, db: Database, org_id: str
) -> None:
    from playwright.async_api import expect

    definition = await demo_definition(db, org_id)
    async with db.transaction() as conn:
        await import_rubric(conn, org_id, RUBRIC.read_text(), name="values")
    page = await ui.open("/runs/new")
    await ui.screenshot("run-new")

    # Clear errors first: no model chosen, then a model the registry does not know.
    form_error = page.locator("#new-run [data-error]")
    estimate_button = page.get_by_role("button", name="Estimate the cost")
    await estimate_button.click()
    await expect(form_error).to_contain_text("NO_MODEL")
    await page.fill("#nr-extra-models", "scripted:nobody")
    await estimate_button.click()
    await expect(form_error).to_contain_text("UNKNOWN_MODEL")
    await expect(form_error).to_contain_text("valid personas: utilitarian")
    provoked(ui, 422)
    await ui.screenshot("run-new-error")

    await page.select_option("#nr-definition", definition)
    await page.fill("#nr-extra-models", f"{UTIL}?latency_ms=300, {DEON}?latency_ms=300")
    await page.fill("#nr-sample", "30")
    await page.fill("#nr-seed", "11")
    await page.select_option("#nr-priority", "high")
    await page.locator("#judges-box summary").click()
    await page.locator('input[name="judges"][value="scripted:centrist"]').check()
    await page.locator('input[name="judges"][value="scripted:agreeable"]').check()
    await estimate_button.click()
    await expect(page.locator("#estimate")).to_be_visible()
    plan = await page.locator("#est-plan").inner_text()
    assert "8 of 27 scenarios" in plan and "seed 11" in plan and "16 probe jobs" in plan
    assert "At most $" in await page.locator("#est-cost").inner_text()
    rows = page.locator("#est-models tbody tr")
    assert await rows.count() == 4  # the two models answer, the two judges read each answer
    roles = [await rows.nth(i).locator("td").nth(1).inner_text() for i in range(4)]
    assert roles == ["answers", "answers", "judges each transcript", "judges each transcript"]
    sized = [await rows.nth(i).locator("td").nth(6).inner_text() for i in range(4)]
    assert sized == ["max tokens (at most)"] * 4  # no earlier run of this definition
    # The estimate is of these settings: they are locked until it is discarded or started.
    assert await page.evaluate("document.getElementById('run-settings').disabled")
    await ui.screenshot("run-new-estimate")

    bar, status = page.locator("#run-progress"), page.locator("#run-status")
    pause, resume = (page.get_by_role("button", name=n) for n in ("Pause", "Resume"))
    async with worker(db):
        await page.get_by_role("button", name="Start the run").click()
        await page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}$"))
        run_id = page.url.rsplit("/", 1)[1]
        # A marker a reload would wipe, and every value the bar takes.
        await page.evaluate(
            "window.__kept = 'kept'; window.__seen = [];"
            "const bar = document.getElementById('run-progress');"
            "setInterval(() => window.__seen.push(Number(bar.getAttribute('aria-valuenow'))), 40);"
        )
        dashboard = await page.context.new_page()
        dashboard.on("console", lambda m: ui.errors.append(m.text) if m.type == "error" else None)
        dashboard.on("pageerror", lambda exc: ui.errors.append(str(exc)))
        await dashboard.goto(ui.site.url + "/")
        await dashboard.evaluate("window.__kept = 'kept'")
        row = dashboard.locator(f'tr[data-run-id="{run_id}"]')
        assert await row.locator("[data-field=count]").inner_text() != "16/16"

        await expect(bar).not_to_have_attribute("aria-valuenow", re.compile(r"^[01]$"))
        await pause.click()
        await expect(status).to_have_text("paused")
        await expect(resume).to_be_enabled()
        await expect(pause).to_be_disabled()
        await page.wait_for_timeout(800)  # running jobs finish; queued ones wait
        assert int(await bar.get_attribute("aria-valuenow") or 0) < 16
        await ui.screenshot("run-paused")

        await resume.click()
        await expect(status).not_to_have_text("paused")
        await expect(bar).to_have_attribute("aria-valuemax", "16")
        await expect(bar).to_have_attribute("aria-valuenow", "16", timeout=30_000)
        await expect(status).to_have_text("completed", timeout=30_000)
        assert await page.evaluate("window.__kept") == "kept"  # no reload, no navigation
        seen = await page.evaluate("window.__seen")
        assert any(0 < value < 16 for value in seen)  # it moved while we watched
        await expect(page.locator("#progress-percent")).to_have_text("100 %")
        await expect(page.locator("#results")).to_be_visible()  # redrawn without a reload
        done = page.locator("#per-model tr[data-key] td[data-f=done]")
        await expect(done).to_have_text(["8/8", "8/8"])
        await expect(page.locator("#events")).to_contain_text("run complete")
        await expect(pause).to_be_disabled()

        # The dashboard polls every 5 s (runs.js): the run's last states reach it within one poll.
        await expect(row.locator("[data-field=count]")).to_have_text("16/16", timeout=30_000)
        await expect(row.locator("[data-field=status]")).to_have_text("completed", timeout=30_000)
        assert await dashboard.evaluate("window.__kept") == "kept"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        await dashboard.screenshot(path=str(SCREENSHOTS / "runs-dashboard.png"), full_page=True)
        await dashboard.set_viewport_size({"width": 390, "height": 844})
        await dashboard.screenshot(
            path=str(SCREENSHOTS / "runs-dashboard-phone.png"), full_page=True
        )
        await dashboard.close()

        # Expand the sample: the run reopens and the page follows it to its new end.
        await page.fill("#expand-pct", "40")
        await page.get_by_role("button", name="Expand").click()
        await expect(bar).not_to_have_attribute("aria-valuemax", "16")
        await expect(status).to_have_text("completed", timeout=30_000)
        total = await bar.get_attribute("aria-valuemax")
        await expect(bar).to_have_attribute("aria-valuenow", total or "")
        await expect(page.locator("#run-basis")).to_contain_text("40 % sample")
        assert await page.evaluate("window.__kept") == "kept"
    await ui.screenshot("run-completed")

    async with page.expect_download() as download_info:
        await page.get_by_role("button", name="Export (ZIP)").click()
    download = await download_info.value
    assert download.suggested_filename.endswith(".zip")

    # Rename the ended run: what the heading shows is what the API stores (one line).
    await page.fill("#rename-name", "  pilot \t run  ")
    await page.get_by_role("button", name="Rename").click()
    await expect(page.locator("#run-name")).to_have_text("pilot run")
    stored = await page.evaluate(
        "fetch('/api/runs/' + document.getElementById('run').dataset.runId)"
        ".then(r => r.json()).then(j => j.data.name)"
    )
    assert stored == "pilot run" == await page.input_value("#rename-name")
    assert await page.title() == "pilot run · ValueRank"

    await page.set_viewport_size({"width": 390, "height": 844})
    await ui.screenshot("run-phone")
    await page.set_viewport_size({"width": 1280, "height": 860})

    await page.locator(".run-controls").get_by_role("link", name="Transcripts").click()
    await page.wait_for_url(f"**/transcripts?run={run_id}")
    assert await page.locator("#transcripts tbody tr").count() == int(total or 0)
    await page.fill("#t-q", "Rating")
    await page.get_by_role("button", name="Search").click()
    await page.wait_for_url("**q=Rating**")
    await ui.screenshot("transcripts")
    await page.locator("#transcripts tbody tr a[href^='/transcripts/']").first.click()
    await page.wait_for_url(re.compile(r"/transcripts/[0-9a-f-]{36}\?.*sort=newest"))
    await expect(page.locator(".turn")).to_have_count(2)
    await expect(page.locator(".bubble.answer").first).to_contain_text("Rating:")
    assert await page.locator("#decision").inner_text() in {"1", "2", "3", "4", "5"}
    await expect(page.locator("#judges")).to_contain_text("scripted:centrist")
    await expect(page.locator("#judges")).to_contain_text("scripted:agreeable")
    await expect(page.locator("#consensus")).to_be_visible()
    await ui.screenshot("transcript")
    await page.set_viewport_size({"width": 390, "height": 844})
    await ui.screenshot("transcript-phone")
