"""The run's analysis page opens with the value sensitivities: in a real browser (chromium),
the chart comes first and every number of its table is the API's analysis JSON."""

from __future__ import annotations

import random
from html.parser import HTMLParser
from typing import Any

import httpx

from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.runs.config import RunConfig
from valuerank.runs.records import TranscriptRecord, insert_transcript
from valuerank.runs.service import Run, create_run, run_scenario_ids

from .conftest import DEMO, TOKEN, Browsing

MODELS = ("scripted:utilitarian", "scripted:contrarian")


async def full_run(db: Database, org: str) -> Run:
    """Every scenario of the demo definition, two samples per model: enough scenarios for
    cluster-robust intervals. Decisions are seeded draws (no judges)."""
    rng = random.Random(3)
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org, DEMO.read_text(), source_file=DEMO.name)
        config = RunConfig(models=MODELS, sample_percentage=100)
        run = (await create_run(conn, org, stored.version.id, config, name="stakes")).run
        for model in MODELS:
            for sample in range(2):
                for k, scenario in enumerate(await run_scenario_ids(conn, run.id)):
                    code = max(1, min(5, 1 + k % 5 + rng.choice((-1, 0, 0, 1))))
                    turns = (Turn(1, "scenario", "Decide.", f"Rating: {code}"),)
                    transcript = Transcript(run.cli_run_id, scenario, model, "demo", turns)
                    record = TranscriptRecord(
                        transcript=transcript,
                        model=model,
                        sample_index=sample,
                        cost_usd=0.0,
                        decision_code=code,
                        synthetic=True,
                    )
                    await insert_transcript(conn, org, run.id, record)
    return run


class _Rows(HTMLParser):
    """The rows of `#value-sensitivity` as (model, dimension, cell texts)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, str, list[str]]] = []
        self.h2: list[str] = []
        self._in_table = self._in_cell = self._in_h2 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table" and found.get("id") == "value-sensitivity":
            self._in_table = True
        elif self._in_table and tag == "tr" and "data-model" in found:
            self.rows.append((str(found["data-model"]), str(found["data-dimension"]), []))
        elif self._in_table and tag == "td":
            self._in_cell = True
            self.rows[-1][2].append("")
        elif tag == "h2":
            self._in_h2 = True
            self.h2.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_table = self._in_table and tag != "table"
        self._in_cell = self._in_cell and tag != "td"
        self._in_h2 = self._in_h2 and tag != "h2"

    def handle_data(self, data: str) -> None:
        if self._in_cell:
            self.rows[-1][2][-1] += data.strip()
        elif self._in_h2:
            self.h2[-1] += data.strip()


def _interval(ci: list[float] | None, status: str) -> str:
    if ci is None:
        return "no interval" if status == "ok" else status.replace("_", " ")
    return f"{ci[0]:.2f} – {ci[1]:.2f}"


def _check_row(entry: dict[str, Any], cells: list[str]) -> None:
    assert cells[1] == entry["value"]
    assert cells[3] == f"{entry['coefficient']:.2f}"
    assert cells[4] == _interval(entry["ci95"], entry["status"])
    assert cells[6] == str(entry["n"]) == "54"


async def test_the_page_served_holds_the_api_numbers(
    browser: httpx.AsyncClient, db: Database, org_id: str
) -> None:
    """The same check without a browser (runs where chromium is missing), both backends."""
    run = await full_run(db, org_id)
    page = await browser.get(f"/runs/{run.id}/analysis")
    assert page.status_code == 200
    api = await browser.get(f"/api/runs/{run.id}/analysis", headers={"Accept": "*/*"})
    analysis = api.json()["data"]
    parsed = _Rows()
    parsed.feed(page.text)
    assert parsed.h2[0] == "Value sensitivity"
    assert 'id="fig-sensitivity"><svg' in page.text
    expected = analysis["valueSensitivity"]
    assert len(parsed.rows) == sum(len(d) for d in expected.values()) == 6
    for model, dim, cells in parsed.rows:
        _check_row(expected[model][dim], cells)
    assert analysis["methodsUsed"]["valueSensitivity"].startswith("ols_cr2_by_scenario")


async def test_the_analysis_page_shows_the_api_value_sensitivities_first(
    ui: Browsing, db: Database, org_id: str
) -> None:
    run = await full_run(db, org_id)
    page = await ui.open(f"/runs/{run.id}/analysis")
    headings = await page.locator("#analysis h2").all_inner_texts()
    assert headings[0] == "Value sensitivity"
    assert await page.locator("#fig-sensitivity svg").count() == 1
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=ui.site.url, headers=headers) as api:
        answer = await api.get(f"/api/runs/{run.id}/analysis")
    assert answer.status_code == 200, answer.text
    analysis = answer.json()["data"]
    expected = analysis["valueSensitivity"]
    rows = page.locator("#value-sensitivity tbody tr")
    assert await rows.count() == sum(len(dims) for dims in expected.values()) == 6
    clear = 0
    for k in range(await rows.count()):
        row = rows.nth(k)
        entry = expected[await row.get_attribute("data-model")][
            await row.get_attribute("data-dimension")
        ]
        _check_row(entry, await row.locator("td").all_inner_texts())
        ci = entry["ci95"]
        clear += bool(ci) and (ci[0] > 0 or ci[1] < 0)
    assert {e["value"] for e in expected[MODELS[0]].values()} == {
        "Loyalty",
        "Physical safety",
        "Economics",
    }
    findings = await page.locator("#sensitivity-findings li").all_inner_texts()
    assert len(findings) == clear
    top = analysis["scaleLabels"]["5"]
    for text in findings:
        assert text.startswith("a stronger ") and "points per score unit" in text
        assert "'" + top + "'" in text or "'stay quiet and keep my loyalty" in text
    await ui.screenshot("analysis-sensitivity")
