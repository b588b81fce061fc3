"""The new-run page says which values rubric the judges will read, before anything is
created: the default (not stored yet) in an organisation without a rubric, the organisation's
own once it has one; in a browser, the note appears when a judge is chosen and the estimate
names the stored version."""

from __future__ import annotations

import re

import httpx
import pytest

from valuerank.db import Database
from valuerank.rubrics import import_rubric

from .conftest import Browsing
from .test_runs_pages import RUBRIC, demo_definition

NOTE = re.compile(r'<p class="meta" id="judge-rubric" hidden>(.*?)</p>', re.S)


def note(html: str) -> str:
    found = NOTE.search(html)
    assert found, "no rubric note on the page"
    return re.sub(r"<[^>]+>", "", " ".join(found.group(1).split()))


async def test_the_form_names_the_rubric_judges_will_read(
    browser: httpx.AsyncClient, db: Database, org_id: str
) -> None:
    await demo_definition(db, org_id)
    html = (await browser.get("/runs/new")).text
    assert note(html) == (
        "The judges will read the values rubric valuerank-default (14 values; the default "
        "rubric, as the organisation has none), stored in this organisation when the run is "
        "created. To use your own, import it first (valuerank rubrics import FILE.yaml)."
    )
    async with db.transaction() as conn:
        await import_rubric(conn, org_id, RUBRIC.read_text(), name="values")
    html = (await browser.get("/runs/new")).text
    assert note(html) == "The judges will read the values rubric values v1 (5 values)."


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a browser: one DB
async def test_choosing_a_judge_shows_the_rubric(ui: Browsing, db: Database, org_id: str) -> None:
    from playwright.async_api import expect

    await demo_definition(db, org_id)
    page = await ui.open("/runs/new")
    rubric_note = page.locator("#judge-rubric")
    await page.locator("#judges-box summary").click()
    await expect(rubric_note).to_be_hidden()  # no judge chosen: no rubric is read
    judge = page.locator('input[name="judges"][value="scripted:centrist"]')
    await judge.check()
    await expect(rubric_note).to_be_visible()
    await expect(rubric_note).to_contain_text("valuerank-default (14 values")
    await judge.uncheck()
    await expect(rubric_note).to_be_hidden()
    await page.fill("#nr-extra-judges", "scripted:agreeable")
    await expect(rubric_note).to_be_visible()

    await page.locator('input[name="models"][value="scripted:utilitarian"]').check()
    await page.fill("#nr-sample", "10")
    await page.get_by_role("button", name="Estimate the cost").click()
    await expect(page.locator("#est-rubric")).to_have_text(
        "The judges will read the values rubric valuerank-default v1 (14 values; the default "
        "rubric, as the organisation has none)."
    )
    await ui.screenshot("run-new-rubric")
