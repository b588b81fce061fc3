"""The shareable report: the analysis page's download (`/runs/{id}/report.html`, scoped to the
viewer's organisation) and, in a real browser with every network request refused, the file
`valuerank report` writes opened from disk, its numbers those of `valuerank analyze --json`."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import TestDatabase
from typer.testing import CliRunner

from valuerank.cli import app
from valuerank.config import get_settings
from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.findings.analyses import run_analysis
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.orgs import ensure_org
from valuerank.refs import short_id
from valuerank.runs.config import RunConfig
from valuerank.runs.records import TranscriptRecord, insert_transcript
from valuerank.runs.service import Run, create_run, run_scenario_ids

from .conftest import DEMO, SCREENSHOTS, chromium_path

MODELS = ("scripted:utilitarian", "scripted:deontologist", "scripted:contrarian")


async def seeded(db: Database, org: str, name: str, *, shift: int = 0, empty: bool = False) -> Run:
    """A full run of the demo definition (27 scenarios) on three scripted models, each
    deciding by its own rule of the scenario's position, so the sensitivities have intervals."""
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org, DEMO.read_text(), source_file=DEMO.name)
        config = RunConfig(models=MODELS, sample_seed=7)
        run = (await create_run(conn, org, stored.version.id, config, name=name)).run
        if empty:
            return run
        for i, scenario in enumerate(await run_scenario_ids(conn, run.id)):
            for k, model in enumerate(MODELS):
                code = 1 + (i * (k + 2) + shift + i // 5) % 5
                turns = (Turn(1, "scenario", "Decide.", f"Rating: {code}"),)
                record = TranscriptRecord(
                    transcript=Transcript(run.cli_run_id, scenario, model, "demo", turns),
                    model=model,
                    sample_index=0,
                    cost_usd=0.001,
                    decision_code=code,
                    synthetic=True,
                )
                await insert_transcript(conn, org, run.id, record)
    return run


def _coefficients(html: str) -> dict[tuple[str, str], str]:
    return {
        (m.group(1), m.group(2)): m.group(3)
        for m in re.finditer(
            r'<tr data-model="([^"]+)" data-dimension="([^"]+)"[^>]*>.*?'
            r'data-field="coefficient"[^>]*>([^<]*)</td>',
            html,
            re.DOTALL,
        )
    }


async def test_the_download_is_the_report_scoped_to_the_organisation(
    browser: httpx.AsyncClient, db: Database, org_id: str
) -> None:
    run = await seeded(db, org_id, "downloaded <b>run</b>")
    page = await browser.get(f"/runs/{run.id}/analysis")
    assert f'href="/runs/{run.id}/report.html"' in page.text and 'id="report-download"' in page.text

    got = await browser.get(f"/runs/{run.id}/report.html")
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/html")
    assert (
        got.headers["content-disposition"]
        == f'attachment; filename="report-{short_id(run.id)}.html"'
    )
    html = got.text
    assert "downloaded &lt;b&gt;run&lt;/b&gt;" in html and "<script" not in html
    analysis = (await run_analysis(db, org_id, run.id)).analysis
    expected = {
        (model, dim): f"{entry['coefficient']:.2f}"
        for model, dims in analysis["valueSensitivity"].items()
        for dim, entry in dims.items()
        if entry["coefficient"] is not None
    }
    assert expected and {k: v for k, v in _coefficients(html).items() if k in expected} == expected

    baseline = await seeded(db, org_id, "baseline", shift=1)
    compared = await browser.get(f"/runs/{run.id}/report.html", params={"baseline": baseline.id})
    assert compared.status_code == 200 and 'id="comparison-section"' in compared.text

    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
    foreign = await seeded(db, other, "not yours")
    for path, params in (
        (f"/runs/{foreign.id}/report.html", {}),
        ("/runs/nope/report.html", {}),
        (f"/runs/{run.id}/report.html", {"baseline": foreign.id}),
    ):
        missing = await browser.get(path, params=params)
        assert missing.status_code == 404, path
        assert "not yours" not in missing.text
    empty = await seeded(db, org_id, "empty", empty=True)
    nothing = await browser.get(f"/runs/{empty.id}/report.html")
    assert nothing.status_code == 409 and "NO_TRANSCRIPTS" in nothing.text


def _cli(url: str, *args: str) -> Any:
    """`valuerank ARGS… --json` against the test's database (in a thread: it runs its own
    event loop)."""
    get_settings.cache_clear()
    result = CliRunner().invoke(app, [*args, "--json"], env={"VALUERANK_DATABASE_URL": url})
    get_settings.cache_clear()
    assert result.exit_code == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


async def test_the_report_file_opens_offline_with_the_analysis_numbers(
    db: Database, org_id: str, database_url: TestDatabase, tmp_path: Path
) -> None:
    executable = chromium_path()
    from playwright.async_api import Route, async_playwright

    run = await seeded(db, org_id, "shared by mail")
    target = tmp_path / "report.html"
    written = await asyncio.to_thread(_cli, database_url.url, "report", run.id, "-o", str(target))
    analysis = (await asyncio.to_thread(_cli, database_url.url, "analyze", run.id))["analysis"]
    assert written["bytes"] == target.stat().st_size

    refused: list[str] = []

    async def offline(route: Route) -> None:
        if route.request.url.startswith("file:"):
            await route.continue_()
        else:
            refused.append(route.request.url)
            await route.abort()

    errors: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            context = await browser.new_context(
                offline=True, viewport={"width": 1100, "height": 900}
            )
            await context.route("**/*", offline)
            page = await context.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            await page.goto(target.as_uri())
            shown = await page.eval_on_selector_all(
                "#value-sensitivity tr[data-model]",
                """rows => rows.map(r => ({
                    model: r.dataset.model, dimension: r.dataset.dimension,
                    coefficient: r.querySelector('[data-field=coefficient]').innerText,
                    ci: r.querySelector('[data-field=ci95]').innerText,
                    p: r.querySelector('[data-field=pValue]').innerText,
                    n: r.querySelector('[data-field=n]').innerText}))""",
            )
            means = await page.eval_on_selector_all(
                "#decisions tr[data-model]",
                "rows => Object.fromEntries(rows.map(r => [r.dataset.model,"
                " r.querySelector('[data-field=mean]').innerText]))",
            )
            basis = await page.inner_text("#sample-basis")
            overall = await page.inner_text("#overall-agreement")
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            await page.screenshot(path=str(SCREENSHOTS / "report-file.png"), full_page=True)
            await page.emulate_media(media="print")
            pdf = await page.pdf(format="A4")
        finally:
            await browser.close()
    assert refused == [] and errors == []
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") >= 3  # it prints, over pages

    expected = []  # in the run's order of models and dimensions, whatever the JSON's key order
    for model in analysis["meta"]["models"]:
        for dim in analysis["meta"]["dimensions"]:
            e = analysis["valueSensitivity"][model][dim]
            ci = e["ci95"]
            expected.append(
                {
                    "model": model,
                    "dimension": dim,
                    "coefficient": f"{e['coefficient']:.2f}",
                    "ci": f"{ci[0]:.2f} – {ci[1]:.2f}",
                    "p": "< 0.001" if e["pValue"] < 0.001 else f"{e['pValue']:.3f}",
                    "n": str(e["n"]),
                }
            )
    assert shown == expected and len(shown) == len(MODELS) * len(analysis["meta"]["dimensions"])
    assert means == {m: f"{s['overall']['mean']:.2f}" for m, s in analysis["perModel"].items()}
    assert basis == analysis["sample"]["basis"] == "based on all 27 scenarios"
    assert overall == f"{analysis['modelAgreement']['overallAgreement']:.2f}"


@pytest.fixture(autouse=True)
def _settings_cache() -> Any:
    yield
    get_settings.cache_clear()
