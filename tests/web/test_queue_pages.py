"""The queue page: global and per-provider status, pause/resume of the organisation's jobs,
the whole queue and a provider, dead jobs (failed by a real worker running the pipeline on a
scripted model that always errs) retried one by one or a run's at once, and the notification
outbox (a webhook receiver that fails) retried and delivered — fetched like a browser on
SQLite and PostgreSQL (roles; another organisation's data never shows), and driven in
Chromium with the page refreshing itself."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from tests.conftest import Receiver

from valuerank.accounts import Role, add_member, create_token
from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.orgs import ensure_org
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.pipeline.launch import launch_run
from valuerank.queue import JobStatus, QueueSettings, Worker, get_job, pause_provider, queue_status
from valuerank.queue.job import list_failed_jobs
from valuerank.queue.outbox import deliver_due, enqueue_notifications, list_outbox, register_webhook
from valuerank.queue.providers import set_limits
from valuerank.queue.ratelimit import block_bucket, bucket_key
from valuerank.runs.config import RunConfig

from .conftest import DEMO, TOKEN, Browsing, Site

FAST = QueueSettings(
    poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0, retry_cap_seconds=0.0
)
ALWAYS_FAILS = "scripted:utilitarian?error_rate=1"  # a synthetic transient error every call


async def start_run(db: Database, org_id: str, model: str, name: str) -> str:
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text(), source_file=DEMO.name)
        config = RunConfig(models=(model,), sample_percentage=10, sample_seed=0)
        launched = await launch_run(conn, org_id, stored.version.id, config, name=name)
    return launched.created.run.id


async def work(db: Database) -> None:
    """A real worker runs the pipeline's jobs until nothing is runnable."""
    worker = Worker(db, settings=FAST)
    context = PipelineContext(db, providers=ProviderPool(environ={}))
    register_pipeline_handlers(worker, context)
    try:
        await worker.run_until_idle()
    finally:
        await context.aclose()


async def broken_run(db: Database, org_id: str, name: str) -> str:
    """A run whose probes all died: every attempt met the provider's error."""
    run_id = await start_run(db, org_id, ALWAYS_FAILS, name)
    await work(db)
    async with db.transaction() as conn:
        dead = await list_failed_jobs(conn, org_id=org_id, partitions=[run_id])
    assert dead and all(job.attempts == job.max_attempts for job in dead)
    return run_id


async def dead_notification(db: Database, org_id: str, receiver: Receiver) -> str:
    """A notification whose webhook answered 500 until its attempts were spent."""
    receiver.default = 500
    async with db.transaction() as conn:
        await register_webhook(conn, org_id, receiver.url, event_types=["partition_complete"])
        (outbox_id,) = await enqueue_notifications(
            conn, org_id, "partition_complete", {"partition": "p", "type": "partition_complete"},
            max_attempts=1,
        )  # fmt: skip
    assert (await deliver_due(db, limit=10, timeout=5, org_id=org_id)).dead == 1
    return outbox_id


@asynccontextmanager
async def signed_in(
    site: Site, db: Database, org_id: str, role: Role
) -> AsyncIterator[httpx.AsyncClient]:
    """A browser-like client signed in (through `/?token=`) as a new member with `role`."""
    async with db.transaction() as conn:
        member = await add_member(conn, org_id, f"{role.value}-{org_id[:6]}@example.test", role)
        token = (await create_token(conn, org_id, member.user.id, name="page")).token
    async with site.browser() as client:
        assert (await client.get("/", params={"token": token})).status_code == 303
        yield client


ADMIN_ACTIONS = (
    'data-action="POST /api/queue/pause"',
    "POST /api/system/queue/pause",
    "POST /api/providers/scripted/pause",
    "/outbox/drain",
)


async def test_the_queue_page_by_role_and_organisation(
    site: Site, browser: httpx.AsyncClient, db: Database, org_id: str, receiver: Receiver
) -> None:
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
    broken = await broken_run(db, org_id, "broken run")
    foreign = await broken_run(db, other, "foreign broken run")
    waiting = await start_run(db, org_id, "scripted:deontologist", "waiting run")  # no worker
    notification = await dead_notification(db, org_id, receiver)
    foreign_note = await dead_notification(db, other, receiver)

    page = await browser.get("/queue")
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
    html = page.text
    # The provider's queue: the waiting run's jobs, counted for this organisation only.
    async with db.transaction() as conn:
        status = await queue_status(conn, org_id=org_id)
    queued = status.providers["scripted"].queue_length
    assert queued > 0
    row = re.search(r'<tr id="provider-scripted".*?</tr>', html, re.S)
    assert row and f'data-label="Queued">{queued}</td>' in row.group(0)
    assert 'id="providers"' in html and 'id="idle-providers"' in html  # busy ones first
    assert 'id="count-failed">' + str(status.counts["failed"]) in html
    # Dead jobs with their errors, their run, and the retries; the waiting run is under way.
    assert "broken run" in html and "synthetic transient error" in html
    assert f'data-action="POST /api/runs/{broken}/rerun-failed"' in html
    assert html.count('data-action="POST /api/queue/jobs/') == status.counts["failed"]
    assert f'href="/runs/{waiting}"' in html and "waiting run" in html
    # The notification outbox: the dead one with its error and a retry.
    assert f"/api/system/notifications/outbox/{notification}/retry" in html
    assert "HTTP 500" in html
    for control in ADMIN_ACTIONS:
        assert control in html  # an admin of the default organisation has them all
    # Nothing of the other organisation.
    assert "foreign broken run" not in html and foreign not in html and foreign_note not in html

    async with signed_in(site, db, org_id, Role.VIEWER) as viewer:
        seen = (await viewer.get("/queue")).text
    assert "broken run" in seen and 'id="provider-scripted"' in seen  # the status
    assert "data-action" not in seen  # no button at all
    assert 'id="outbox-admins-only"' in seen and notification not in seen

    async with signed_in(site, db, org_id, Role.MEMBER) as member:
        seen = (await member.get("/queue")).text
    assert f"/api/runs/{broken}/rerun-failed" in seen and "/api/queue/jobs/" in seen
    assert not any(control in seen for control in ADMIN_ACTIONS)

    # An admin of another organisation: its own jobs and outbox; the shared queue and the
    # providers are read-only for them (they belong to the default organisation's admins).
    async with signed_in(site, db, other, Role.ADMIN) as foreign_admin:
        seen = (await foreign_admin.get("/queue")).text
    assert "foreign broken run" in seen and foreign_note in seen
    assert "broken run</a>" not in seen.replace("foreign broken run</a>", "")
    assert notification not in seen and waiting not in seen
    assert 'data-action="POST /api/queue/pause"' in seen
    assert "POST /api/system/queue/pause" not in seen and "/api/providers/" not in seen


async def test_an_empty_queue_says_so(browser: httpx.AsyncClient) -> None:
    html = (await browser.get("/queue")).text
    assert 'id="nothing-under-way"' in html and 'id="no-dead-jobs"' in html
    assert 'id="outbox-empty"' in html and 'id="count-queued">0' in html


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a browser: one DB
async def test_pause_resume_and_retry_on_the_live_queue_page(
    ui: Browsing, db: Database, org_id: str, receiver: Receiver
) -> None:
    broken = await broken_run(db, org_id, "broken run")
    await start_run(db, org_id, "scripted:deontologist", "waiting run")
    notification = await dead_notification(db, org_id, receiver)
    page = await ui.open("/queue")
    page.on("dialog", lambda dialog: dialog.accept())
    await page.evaluate("window.__sameDocument = true")
    scripted = page.locator("#provider-scripted")
    assert int(await scripted.locator("td.queued").inner_text()) > 0
    await ui.screenshot("queue")
    # A phone: nothing scrolls sideways; the wide tables become one card per row.
    await page.set_viewport_size({"width": 390, "height": 844})
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways on a phone ({width}px)"
    await ui.screenshot("queue-phone")
    await page.set_viewport_size({"width": 1280, "height": 860})

    async def state_of(selector: str) -> str:
        return str(await page.locator(f"{selector} [data-state]").get_attribute("data-state"))

    # The organisation's jobs: paused and resumed, the page updated in place.
    await page.get_by_role("button", name="Pause this organisation's jobs").click()
    await page.get_by_role("button", name="Resume this organisation's jobs").wait_for()
    assert await state_of("#org-state") == "paused"
    async with db.transaction() as conn:
        assert (await queue_status(conn, org_id=org_id)).org_paused
    await page.get_by_role("button", name="Resume this organisation's jobs").click()
    await page.get_by_role("button", name="Pause this organisation's jobs").wait_for()
    assert await state_of("#org-state") == "active"
    # The whole queue (with a confirmation) and one provider.
    await page.get_by_role("button", name="Pause the whole queue").click()
    await page.get_by_role("button", name="Resume the whole queue").click()
    await page.get_by_role("button", name="Pause the whole queue").wait_for()
    await page.get_by_role("button", name="Pause the provider scripted").click()
    await page.get_by_role("button", name="Resume the provider scripted").wait_for()
    assert await state_of("#provider-scripted") == "paused"
    async with db.transaction() as conn:
        status = await queue_status(conn, org_id=org_id)
    assert status.providers["scripted"].paused and not status.paused
    await ui.screenshot("queue-provider-paused")
    await page.get_by_role("button", name="Resume the provider scripted").click()
    await page.get_by_role("button", name="Pause the provider scripted").wait_for()
    # The keyboard: the focused toggle keeps the focus through the update.
    toggle = page.locator("#provider-toggle-scripted")
    await toggle.focus()
    await page.keyboard.press("Enter")
    await page.get_by_role("button", name="Resume the provider scripted").wait_for()
    assert await page.evaluate("document.activeElement.id") == "provider-toggle-scripted"
    await page.keyboard.press("Enter")
    await page.get_by_role("button", name="Pause the provider scripted").wait_for()

    # Live: a change made elsewhere (the CLI, another admin) shows up without a reload.
    async with db.transaction() as conn:
        await pause_provider(conn, "scripted")
    await page.get_by_role("button", name="Resume the provider scripted").wait_for(timeout=10_000)
    await page.get_by_role("button", name="Resume the provider scripted").click()

    # A dead job retried alone: it leaves the list and is queued again.
    rows = page.locator("#dead-jobs tbody tr")
    before = await rows.count()
    first = rows.first
    job_id = str(await first.get_attribute("id")).removeprefix("dead-")
    await first.get_by_role("button", name=re.compile("^Retry the probe job")).click()
    await page.locator(f"#dead-{job_id}").wait_for(state="detached")
    assert await rows.count() == before - 1
    async with db.transaction() as conn:
        assert (await get_job(conn, job_id)).status is JobStatus.QUEUED
    # The rest of the run's failed jobs at once.
    await page.locator(f"#rerun-{broken}").click()
    await page.locator("#no-dead-jobs").wait_for()
    async with db.transaction() as conn:
        assert await list_failed_jobs(conn, org_id=org_id) == []

    # The dead notification: retried, then delivered once the receiver answers.
    await page.locator(f"#retry-notification-{notification}").click()
    await page.locator(f"#notification-{notification} .status", has_text="pending").wait_for()
    receiver.default = 200
    await page.get_by_role("button", name="Deliver due notifications now").click()
    await page.locator("#outbox-empty").wait_for()
    async with db.transaction() as conn:
        assert [n.status for n in await list_outbox(conn, org_id)] == ["delivered"]
    assert await page.evaluate("window.__sameDocument") is True  # never reloaded
    await ui.screenshot("queue-after-retries")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_refused_action_is_shown_with_its_code(
    ui: Browsing, db: Database, org_id: str
) -> None:
    """A retry of a job that a worker (or another admin) retried meanwhile: 409, shown."""
    await broken_run(db, org_id, "broken run")
    page = await ui.open("/queue")
    first = page.locator("#dead-jobs tbody tr").first
    job_id = str(await first.get_attribute("id")).removeprefix("dead-")
    # As in a background tab, the page stops refreshing itself: the row stays.
    await page.evaluate("Object.defineProperty(document, 'hidden', {value: true})")
    async with httpx.AsyncClient(
        base_url=ui.site.url, headers={"Authorization": f"Bearer {TOKEN}"}
    ) as api:
        assert (await api.post(f"/api/queue/jobs/{job_id}/retry")).status_code == 200
    await first.get_by_role("button", name=re.compile("^Retry")).click()
    error = page.locator("#dead-section [data-error]")
    await error.wait_for()
    assert "INVALID_TRANSITION" in await error.inner_text()
    # The 409 is the expected console message of the refused request; nothing else.
    assert [e for e in ui.errors if "409" not in e] == []
    ui.errors.clear()
    await ui.screenshot("queue-refused")


async def test_a_providers_limits_and_rate_limit_state(
    browser: httpx.AsyncClient, db: Database
) -> None:
    async with db.transaction() as conn:
        await set_limits(conn, "openai", rpm=600, tpm=90000, concurrency=4)
        await set_limits(conn, "anthropic", "anthropic:claude-x", rpm=50)
        await block_bucket(conn, bucket_key("anthropic", "anthropic:claude-x"), 120)
    html = (await browser.get("/queue")).text
    openai = re.search(r'<tr id="provider-openai".*?</tr>', html, re.S)
    assert openai and "all models:" in openai.group(0)
    assert "600 req/min · 90000 tok/min · 4 at once" in openai.group(0)
    assert 'class="rate rate-open">open<' in openai.group(0)
    anthropic = re.search(r'<tr id="provider-anthropic".*?</tr>', html, re.S)
    assert anthropic and "anthropic:claude-x:" in anthropic.group(0)
    assert 'class="rate rate-blocked">blocked<' in anthropic.group(0)
    assert "until 20" in anthropic.group(0)  # the reset the provider asked for
    # Both are notable now: in the main table, not among the idle ones.
    idle = html.split('id="idle-providers"', 1)[1]
    assert 'id="provider-openai"' not in idle and 'id="provider-anthropic"' not in idle
