"""The new-run page's phrasings and scale order: chosen in two selects, counted in the
estimate, stored on the run and shown on its page."""

from __future__ import annotations

import httpx
import pytest

from valuerank.db import Database

from .conftest import Browsing
from .test_runs_pages import demo_definition


async def test_the_form_offers_both_settings_with_the_defaults_chosen(
    browser: httpx.AsyncClient, db: Database, org_id: str
) -> None:
    await demo_definition(db, org_id)
    html = (await browser.get("/runs/new")).text
    assert '<select id="nr-phrasings" name="phrasings"' in html
    assert '<select id="nr-scale-order" name="scale_order"' in html
    assert '<option value="first" selected>' in html
    assert '<option value="as-written" selected>' in html
    assert '<option value="both">' in html and '<option value="random">' in html


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a browser: one DB
async def test_a_run_created_on_the_page_keeps_and_shows_them(
    ui: Browsing, db: Database, org_id: str
) -> None:
    from playwright.async_api import expect

    await demo_definition(db, org_id)
    page = await ui.open("/runs/new")
    await page.locator('input[name="models"][value="scripted:utilitarian"]').check()
    await page.select_option("#nr-phrasings", "all")
    await page.select_option("#nr-scale-order", "both")
    await page.get_by_role("button", name="Estimate the cost").click()
    plan = page.locator("#est-plan")
    await expect(plan).to_have_text(
        "All 72 scenarios × 1 model (phrasings all, scale order both) → 72 probe jobs, "
        "144 model calls."
    )
    await page.get_by_role("button", name="Start the run").click()
    await page.wait_for_url("**/runs/*")
    await expect(page.locator("#run-presentations")).to_have_text(
        "phrasings all · scale order both"
    )
    await ui.screenshot("run-new-presentations")
