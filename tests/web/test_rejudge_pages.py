"""Judging a run again and the organisation's default judges, in a browser (Chromium, SQLite):
the settings page sets the defaults and shows them; a run created without judges says so and
how to add them; its page's Judge form judges the stored transcripts (a real worker), after
which the page names the judges. What is asserted is what the user reads."""

from __future__ import annotations

import pytest

from valuerank.db import Database
from valuerank.refs import short_id

from .conftest import Browsing
from .test_runs_pages import demo_definition, launch, worker

JUDGES = "scripted:centrist, scripted:deontologist"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a browser: one DB
async def test_judge_a_run_and_set_default_judges_in_a_browser(
    ui: Browsing, db: Database, org_id: str
) -> None:
    definition = await demo_definition(db, org_id)
    run = await launch(
        db, org_id, definition, models=("scripted:utilitarian",), sample_percentage=10,
        sample_seed=0, followup_turns=0,
    )  # fmt: skip
    async with worker(db):
        page = await ui.open(f"/runs/{run.id}")
        await page.locator("#run-status", has_text="completed").wait_for()
        hint = await page.locator("#no-judges").inner_text()
        assert "No judges: this run has no value win rates" in hint
        assert f"valuerank runs judge {short_id(run.id)} --judge MODEL" in hint
        analysis = await ui.open(f"/runs/{run.id}/analysis")
        where_win_rates_would_be = await analysis.locator("#no-judges").inner_text()
        assert "No judge has read this run, so it has no value win rates" in (
            where_win_rates_would_be
        )
        assert f"valuerank runs judge {short_id(run.id)} --judge MODEL" in (
            where_win_rates_would_be
        )
        page = await ui.open(f"/runs/{run.id}")
        await page.get_by_label("Judges", exact=True).fill(JUDGES)
        await page.get_by_role("button", name="Judge", exact=True).click()
        await page.locator("#action-status", has_text="Judge: done").wait_for()
        await ui.screenshot("run-judged-again")
        await page.locator("#run-status", has_text="completed").wait_for()
        await page.reload()
        await page.locator("#run-status", has_text="completed").wait_for()
    judges = await page.locator("#run-judges").inner_text()
    assert judges == f"judges {JUDGES}"
    assert await page.locator("#no-judges").count() == 0

    settings = await ui.open("/settings")
    shown = settings.locator("#run-defaults")
    assert "judges none · summary model none" in " ".join((await shown.inner_text()).split())
    await settings.fill("#default-judges", JUDGES)
    await settings.fill("#default-summary", "scripted:utilitarian")
    await settings.get_by_role("button", name="Save the defaults").click()
    await settings.locator("#default-judges-shown", has_text="scripted:centrist").wait_for()
    assert await settings.locator("#default-judges-shown").inner_text() == JUDGES
    assert await settings.locator("#default-summary-shown").inner_text() == "scripted:utilitarian"

    defaulted = await launch(
        db, org_id, definition, models=("scripted:utilitarian",), sample_percentage=10,
        sample_seed=0, followup_turns=0, start=False,
    )  # fmt: skip
    page = await ui.open(f"/runs/{defaulted.id}")
    assert await page.locator("#run-judges").inner_text() == (
        f"judges {JUDGES} (the organisation's default judges)"
    )
    assert await page.get_by_label("Judges", exact=True).input_value() == JUDGES
