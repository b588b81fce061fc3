"""The setup pages fetched like a browser, on SQLite and PostgreSQL: the validations asked of
models listed while queued and, when they fail, with their error (answered ones are results);
the import and export page listing only the organisation's runs and definitions, escaped,
with the upload limit; the forms of the experiment and validation pages."""

from __future__ import annotations

import re

import httpx

from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.orgs import ensure_org
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.experiments import create_experiment
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.queue import QueueSettings, Worker
from valuerank.validation.requests import request_validation
from valuerank.validation.store import add_tag, create_task

from .conftest import DEMO

EVIL = "<script>alert('x')</script>"
RETRY = "#PATTERN_MOMENTUM: Retry failed requests three times"
FAILING = "scripted:utilitarian?error_rate=1"  # a synthetic transient error every call
FAST = QueueSettings(
    poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0, retry_cap_seconds=0.0
)
ROW = re.compile(r'<tr data-job-id="[^"]+"><td><code>([^<]+)</code></td><td><code>([^<]+)</code>'
                 r'</td><td><span class="status status-(\w+)">')  # fmt: skip


async def work(db: Database) -> None:
    """A real worker runs the queued jobs until nothing is runnable."""
    worker = Worker(db, settings=FAST)
    context = PipelineContext(db, providers=ProviderPool(environ={}))
    register_pipeline_handlers(worker, context)
    try:
        await worker.run_until_idle()
    finally:
        await context.aclose()


async def test_asked_validations_are_listed_until_answered(
    browser: httpx.AsyncClient, db: Database, org_id: str
) -> None:
    async with db.transaction() as conn:
        task = await create_task(conn, org_id, f"Task {EVIL}", "")
        await add_tag(conn, org_id, task.id, RETRY, "ra_retry")
        models = ["scripted:agreeable", FAILING]
        await request_validation(conn, org_id, task.id, "ra_retry", models, environ={})
        other = await ensure_org(conn, "other")
        theirs = await create_task(conn, other, "theirs", "")
        await add_tag(conn, other, theirs.id, RETRY, "ra_retry")
        await request_validation(
            conn, other, theirs.id, "ra_retry", ["scripted:contrarian"], environ={}
        )
    page = await browser.get(f"/validation/{task.id}")
    assert page.status_code == 200
    html = page.text
    assert EVIL not in html and 'data-pending="2"' in html
    assert sorted(ROW.findall(html)) == [
        ("ra_retry", "scripted:agreeable", "queued"),
        ("ra_retry", FAILING, "queued"),
    ]
    assert "scripted:contrarian</code></td>" not in html  # the other organisation's ask
    assert 'data-validate-task="' in html and '<option value="ra_retry">' in html
    assert 'value="scripted:agreeable"' in html  # a model to choose

    await work(db)
    html = (await browser.get(f"/validation/{task.id}")).text
    assert "data-pending" not in html  # nothing left to wait for: the page stops refreshing
    assert ROW.findall(html) == [("ra_retry", FAILING, "failed")]
    assert re.search(r'<td class="num">(\d+) / \1</td>', html)  # every attempt spent
    assert 'data-model="scripted:agreeable"' in html  # the answer, among the results
    assert '<span id="validation-total">1</span>' in html


async def test_the_import_and_export_page(
    browser: httpx.AsyncClient, db: Database, org_id: str, make_run: object
) -> None:
    empty = (await browser.get("/exchange")).text
    assert 'id="no-runs"' in empty and 'id="no-definitions"' in empty
    assert 'data-import="/api/import"' in empty and 'data-max-bytes="52428800"' in empty
    assert "at most 50.0 MiB" in empty
    assert 'data-export="/api/export/workspace"' in empty

    run = await make_run(org_id, name=f"run {EVIL}")  # type: ignore[operator]
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
        text = DEMO.read_text().replace("name: ", "name: theirs-", 1)
        await import_definition(conn, other, text, source_file="theirs.md")
    foreign = await make_run(other, name="not yours")  # type: ignore[operator]
    html = (await browser.get("/exchange")).text
    assert EVIL not in html and "run &lt;script&gt;" in html
    assert f'<option value="{run.id}">' in html and f'<option value="{run.definition_id}">' in html
    assert foreign.id not in html and "not yours" not in html and "theirs-" not in html
    assert 'data-export="/api/export/run/{run}"' in html

    definitions = (await browser.get("/definitions")).text
    assert 'href="/exchange"' in definitions


async def test_the_experiment_and_validation_forms(
    browser: httpx.AsyncClient, db: Database, org_id: str, make_run: object
) -> None:
    compare = (await browser.get("/compare")).text
    assert 'id="experiment-form"' not in compare  # no run to be a baseline yet
    run = await make_run(org_id, name="baseline")  # type: ignore[operator]
    compare = (await browser.get("/compare")).text
    assert 'data-api="POST /api/experiments"' in compare
    assert f'<option value="{run.id}">' in compare and 'data-refresh="experiments-list"' in compare

    async with db.transaction() as conn:
        experiment = await create_experiment(
            conn, org_id, name=f"Exp {EVIL}", hypothesis=EVIL, baseline_run=run.id
        )
    page = (await browser.get(f"/compare/experiments/{experiment.id}")).text
    assert EVIL not in page and "Exp &lt;script&gt;" in page
    assert f'data-variant-experiment="{experiment.id}"' in page and 'id="no-variants"' in page
    assert f'<option value="{run.definition_id}">' in page  # a version a variant may run
    assert "the baseline's: scripted:utilitarian)" in page

    tasks = (await browser.get("/validation")).text
    assert 'data-api="POST /api/assumptions/tasks"' in tasks and 'id="no-tasks"' in tasks
    settings = (await browser.get("/settings")).text
    assert 'id="tokens-section"' in settings and 'data-refresh="tokens-section"' in settings
