"""The UI in a real browser (Debian's chromium, headless, through Playwright)."""

from __future__ import annotations

from typing import Any

from .conftest import Browsing


async def test_the_runs_page_opens_signed_in_without_errors(
    ui: Browsing, org_id: str, make_run: Any
) -> None:
    run = await make_run(org_id, name="first run")
    page = await ui.open("/")
    assert await page.locator("h1").inner_text() == "Runs"
    await page.get_by_role("link", name="first run").click()
    await page.wait_for_url(f"**/runs/{run.id}")
    await ui.screenshot("run-page")
