"""Validation pages fetched like a browser, on SQLite and PostgreSQL: the task list, a task's
RA tags with consensus, agreement level and dissenting models; escaping and isolation."""

from __future__ import annotations

import httpx
import pytest

from valuerank.consensus.consensus import Outcome
from valuerank.db import Database
from valuerank.orgs import ensure_org
from valuerank.registry import upsert_model
from valuerank.validation.store import NewValidation, add_tag, create_task, record_validation

from .conftest import Browsing

EVIL = "<script>alert('x')</script>"


async def test_tasks_and_a_task_with_consensus_and_dissent(
    browser: httpx.AsyncClient, db: Database, org_id: str
) -> None:
    empty = await browser.get("/validation")
    assert empty.status_code == 200 and 'id="no-tasks"' in empty.text
    async with db.transaction() as conn:
        for model in ("openai:a", "openai:b", "openai:c"):
            await upsert_model(conn, model, display_name=model, weight=1.0)
        task = await create_task(conn, org_id, f"Task {EVIL}", "checks")
        tag, _ = await add_tag(conn, org_id, task.id, "The user is an adult", None)
        await add_tag(conn, org_id, task.id, "Nobody validated this", None)
        for model, outcome in (("openai:a", Outcome.VALIDATED), ("openai:b", Outcome.VALIDATED)):
            await record_validation(
                conn, org_id, task.id, tag.id, NewValidation(model, outcome, 0.9, "ok")
            )
        await record_validation(
            conn, org_id, task.id, tag.id, NewValidation("openai:c", Outcome.REJECTED, 0.6, EVIL)
        )
        other = await ensure_org(conn, "other")
        foreign = await create_task(conn, other, "not yours", "")

    listing = (await browser.get("/validation")).text
    assert f'href="/validation/{task.id}"' in listing and EVIL not in listing
    assert "not yours" not in listing

    page = await browser.get(f"/validation/{task.id}")
    assert page.status_code == 200
    html = page.text
    assert EVIL not in html and "Task &lt;script&gt;" in html
    assert 'id="overall"' in html and "The user is an adult" in html
    assert html.count('class="dissent"') == 1 and "openai:c" in html
    assert "No model has validated this tag yet." in html

    for path in (f"/validation/{foreign.id}", "/validation/999999"):
        missing = await browser.get(path)
        assert missing.status_code == 404 and "not yours" not in missing.text
    assert (await browser.get("/validation/abc")).status_code == 422


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a browser: one DB
async def test_a_task_in_a_browser(ui: Browsing, db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        for model in ("openai:a", "openai:b"):
            await upsert_model(conn, model, display_name=model, weight=1.0)
        task = await create_task(conn, org_id, "Authentication API", "RA tags of a change")
        tag, _ = await add_tag(conn, org_id, task.id, "#SUGGEST: add rate limiting", None)
        await record_validation(
            conn, org_id, task.id, tag.id, NewValidation("openai:a", Outcome.VALIDATED, 0.9, "")
        )
        await record_validation(
            conn, org_id, task.id, tag.id, NewValidation("openai:b", Outcome.PARTIAL, 0.5, "")
        )
    page = await ui.open("/validation")
    await ui.screenshot("validation")
    await page.get_by_role("link", name="Authentication API").click()
    await page.wait_for_url(f"**/validation/{task.id}")
    assert await page.locator("section.ra-tag").count() == 1
    await ui.screenshot("validation-task")
