"""The matrix page and the side-by-side page in Debian's chromium: every number the page shows
(cells, counts, disagreement, odd ones out, column means, pairs; each sample's decision, the
judges' readings) is read from the page and compared with what the JSON API answers for the
same view, after sorting, filtering, switching to the judges' basis and adding a second run;
axe finds no serious or critical violation on any of them; screenshots at 1280 and 390 px."""

from __future__ import annotations

import html
import re
from typing import Any

import httpx
from tests.matrix_seeding import U, seed_matrix_run

from valuerank.db import Database

from .accessibility import serious_violations
from .conftest import TOKEN, Browsing

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 860}


def fmt(value: float | None) -> str:
    """A mean as the pages print it."""
    return "–" if value is None else f"{value:.2f}"


async def api(ui: Browsing, path: str, **params: Any) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=ui.site.url, headers=headers, timeout=10) as client:
        response = await client.get(path, params=params)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def check_accessible(ui: Browsing) -> None:
    assert await serious_violations(ui.page) == []


async def screenshots(ui: Browsing, name: str) -> None:
    await ui.screenshot(name)
    await ui.page.set_viewport_size(PHONE)
    await check_accessible(ui)  # the phone layout too
    await ui.screenshot(f"{name}-phone")
    await ui.page.set_viewport_size(LAPTOP)


READ_MATRIX = """() => {
  const texts = (root, selector) =>
    [...root.querySelectorAll(selector)].map(e => e.textContent.trim());
  const one = (root, selector) => root.querySelector(selector).textContent.trim();
  return {
    rows: [...document.querySelectorAll('#matrix tbody tr[data-scenario]')].map(tr => ({
      id: tr.dataset.scenario,
      cells: texts(tr, 'td.cell .value'),
      n: texts(tr, 'td.cell .n'),
      odd: [...tr.querySelectorAll('td.cell')].findIndex(td => td.classList.contains('odd')),
      disagreement: one(tr, 'td.disagreement .value'),
      split: tr.querySelector('td.disagreement .split') !== null,
    })),
    columns: texts(document, '#matrix thead th.model-head'),
    means: texts(document, '#column-means td.cell .value'),
    odd: texts(document, '#odd-counts td[data-column]'),
    counts: ['scenarios', 'differ', 'split'].map(k => one(document, '#count-' + k)),
    pairs: Object.fromEntries([...document.querySelectorAll('#pairs tbody tr')].map(tr => [
      tr.dataset.pair, [one(tr, '[data-f=gap]'), one(tr, '[data-f=differ]')],
    ])),
  };
}"""


async def assert_matrix_matches(ui: Browsing, data: dict[str, Any]) -> None:
    shown = await ui.page.evaluate(READ_MATRIX)
    expected_rows = [
        {
            "id": r["scenario_id"],
            "cells": [fmt(c["mean"]) for c in r["cells"]],
            "n": [f"{c['decided']}/{c['n']}" for c in r["cells"]],
            "odd": -1 if r["odd_one_out"] is None else r["odd_one_out"],
            "disagreement": fmt(r["disagreement"]),
            "split": r["split"],
        }
        for r in data["rows"]
    ]
    assert shown["rows"] == expected_rows
    assert [c.split()[0] for c in shown["columns"]] == [c["model"] for c in data["columns"]]
    assert shown["means"] == [fmt(c["mean"]) for c in data["columns"]]
    assert shown["odd"] == [str(c["odd"]) for c in data["columns"]]
    assert shown["counts"] == [str(data[k]) for k in ("scenarios", "differ", "split")]
    assert shown["pairs"] == {
        f"{p['a']}-{p['b']}": [fmt(p["mean_gap"]), str(p["differ"])] for p in data["pairs"]
    }


async def test_the_matrix_page_shows_the_apis_numbers_sorted_filtered_and_compared(
    ui: Browsing, db: Database, org_id: str
) -> None:
    run = await seed_matrix_run(db, org_id, name="baseline")
    later = await seed_matrix_run(db, org_id, name="later", codes=[{U: [1]}], models=(U,))
    page = await ui.open(f"/runs/{run.id}")
    await page.get_by_role("link", name="Where models differ").click()
    await page.wait_for_url(f"**/runs/{run.id}/matrix")
    url = f"/api/runs/{run.id}/matrix"
    data = await api(ui, url)
    assert data["differ"] == 2 and data["rows"][0]["disagreement"] == 4  # the seeded run
    await assert_matrix_matches(ui, data)
    legend = page.locator("#legend li")
    assert await legend.count() == 5
    assert "report the defect to the regulator now" in await legend.nth(4).inner_text()
    await check_accessible(ui)
    await screenshots(ui, "matrix")

    # Where models differ: the filter's rows are the API's.
    await page.locator(".views").get_by_role("link", name="Where models differ (2)").click()
    await page.wait_for_url("**show=differ**")
    await assert_matrix_matches(ui, await api(ui, url, show="differ"))
    current = page.locator(".views a[aria-current=page]")
    assert (await current.inner_text()).startswith("Where models differ")
    await check_accessible(ui)
    await screenshots(ui, "matrix-differ")

    # Sorted by a dimension's level, then the other way round.
    await page.locator(".views").get_by_role("link", name="All scenarios").click()
    await page.wait_for_url(f"**/runs/{run.id}/matrix")
    header = page.locator("#matrix thead th", has=page.get_by_role("link", name="Harm"))
    await header.get_by_role("link", name="Harm").click()
    await page.wait_for_url("**sort=dimension%3AHarm")
    assert await header.get_attribute("aria-sort") == "ascending"
    await assert_matrix_matches(ui, await api(ui, url, sort="dimension:Harm"))
    await header.get_by_role("link", name="Harm").click()
    await page.wait_for_url("**sort=-dimension%3AHarm")
    assert await header.get_attribute("aria-sort") == "descending"
    await assert_matrix_matches(ui, await api(ui, url, sort="-dimension:Harm"))

    # The judges' reading instead of the answers' own, from the settings form.
    await page.select_option("#m-basis", "judges")
    await page.get_by_role("button", name="Apply").click()
    await page.wait_for_url("**basis=judges**")
    await assert_matrix_matches(ui, await api(ui, url, sort="-dimension:Harm", basis="judges"))

    # Beside the later run of the same definition: its model is one more column.
    await page.goto(f"{ui.site.url}/runs/{run.id}/matrix")
    await page.locator("#other-runs").get_by_role("link", name="Add later").click()
    await page.wait_for_url(f"**compare={later.id}")
    compared = await api(ui, url, compare=later.id)
    assert len(compared["columns"]) == 4
    await assert_matrix_matches(ui, compared)
    await check_accessible(ui)
    await screenshots(ui, "matrix-compare")

    # A cell of one sample opens its transcript; a cell of several lists them.
    first = compared["rows"][0]
    alone = first["cells"][3]["transcript_ids"]
    assert len(alone) == 1
    row = page.locator(f'#matrix tbody tr[data-scenario="{first["scenario_id"]}"]')
    assert await row.locator("td.cell[data-column='3'] a").get_attribute("href") == (
        f"/transcripts/{alone[0]}"
    )
    await row.locator("td.cell[data-column='0'] a").click()
    await page.wait_for_url("**/transcripts?run=**")
    assert await page.locator("#transcripts tbody tr").count() == first["cells"][0]["n"]


READ_ANSWERS = """() => ({
  table: [...document.querySelectorAll('#decisions tbody tr')].map(tr => ({
    model: tr.dataset.model,
    samples: [...tr.querySelectorAll('[data-f=sample]')].map(e => e.textContent.trim()),
    mean: tr.querySelector('[data-f=mean]').textContent.trim(),
    judged: tr.querySelector('[data-f=judged]').textContent.trim(),
  })),
  columns: [...document.querySelectorAll('#answers article')].map(a => ({
    model: a.dataset.model,
    samples: [...a.querySelectorAll('section.sample')].map(s => ({
      id: s.dataset.transcript,
      decision: s.querySelector('[data-f=decision]').textContent.trim(),
      agreed: s.querySelector('[data-f=agreed]')?.textContent.trim() ?? null,
      apart: s.querySelector('.read-apart') !== null,
      said: s.querySelector('.said').textContent.trim(),
      readings: Object.fromEntries([...s.querySelectorAll('[data-judge]')].map(li => [
        li.dataset.judge, li.querySelector('[data-f=reading]').textContent.trim()])),
    })),
  })),
})"""


def code(value: int | None) -> str:
    return "–" if value is None else str(value)


async def assert_answers_match(ui: Browsing, data: dict[str, Any]) -> None:
    shown = await ui.page.evaluate(READ_ANSWERS)
    assert shown["table"] == [
        {
            "model": c["model"],
            "samples": [code(t["decision_code"]) for t in c["transcripts"]],
            "mean": fmt(c["mean"]),
            "judged": fmt(c["judged_mean"]),
        }
        for c in data["columns"]
    ]

    def agreed(t: dict[str, Any]) -> str | None:
        return None if t["consensus"] is None else code(t["consensus"]["decision"])

    assert shown["columns"] == [
        {
            "model": c["model"],
            "samples": [
                {
                    "id": t["id"],
                    "decision": code(t["decision_code"]),
                    "agreed": agreed(t),
                    "apart": t["consensus"] is not None
                    and t["consensus"]["decision"] != t["decision_code"],
                    "said": t["turns"][0]["target"],
                    "readings": {j["judge_model"]: code(j["decision"]) for j in t["judgments"]},
                }
                for t in c["transcripts"]
            ],
        }
        for c in data["columns"]
    ]


async def test_the_side_by_side_page_shows_every_models_answers_and_the_judges(
    ui: Browsing, db: Database, org_id: str
) -> None:
    run = await seed_matrix_run(db, org_id, name="baseline")
    later = await seed_matrix_run(db, org_id, name="later", codes=[{U: [1]}], models=(U,))
    matrix = await api(ui, f"/api/runs/{run.id}/matrix")
    top = matrix["rows"][0]  # the most disputed scenario
    sid, transcript = top["scenario_id"], top["cells"][0]["transcript_ids"][0]

    # From one transcript to every model's answer on its scenario.
    page = await ui.open(f"/transcripts/{transcript}")
    await page.locator("#other-models").click()
    await page.wait_for_url(f"**/runs/{run.id}/scenarios/{sid}")
    data = await api(ui, f"/api/runs/{run.id}/scenarios/{sid}/answers")
    assert len(data["columns"]) == 3 and data["columns"][0]["transcripts"][0]["id"] == transcript
    await assert_answers_match(ui, data)
    assert await page.locator(".read-apart").count() >= 2  # a 5 the second judge read as 4
    await check_accessible(ui)
    await ui.screenshot("scenario-answers")

    # On a phone the columns stack; on a laptop they stand side by side.
    columns = page.locator("#answers article")
    wide = [(await columns.nth(i).bounding_box() or {})["x"] for i in range(3)]
    assert len(set(wide)) == 3
    await page.set_viewport_size(PHONE)
    narrow = [(await columns.nth(i).bounding_box() or {})["x"] for i in range(3)]
    assert len(set(narrow)) == 1
    await check_accessible(ui)
    await ui.screenshot("scenario-answers-phone")
    await page.set_viewport_size(LAPTOP)

    # From the matrix's row to the same page, then beside the later run.
    await page.goto(f"{ui.site.url}/runs/{run.id}/matrix")
    await page.locator(f'#matrix tbody tr[data-scenario="{sid}"] th a').click()
    await page.wait_for_url(f"**/runs/{run.id}/scenarios/{sid}")
    await page.locator("#other-runs").get_by_role("link", name="later").click()
    await page.wait_for_url(f"**compare={later.id}")
    both = await api(ui, f"/api/runs/{run.id}/scenarios/{sid}/answers", compare=later.id)
    assert [c["run_id"] for c in both["columns"]][-1] == later.id
    await assert_answers_match(ui, both)
    await check_accessible(ui)
    await screenshots(ui, "scenario-answers-compare")


async def test_the_matrix_page_draws_its_first_rows_and_links_to_the_rest(
    browser: httpx.AsyncClient, db: Database, org_id: str
) -> None:
    """A big run's matrix draws its first rows in the chosen order (`?rows=`, 100 by default)
    and says how many there are, with a link that draws them all; out-of-range counts are
    refused."""
    run = await seed_matrix_run(db, org_id, name="baseline")
    every = await browser.get(f"/runs/{run.id}/matrix")
    assert every.status_code == 200 and 'id="rows-capped"' not in every.text
    total = every.text.count("<tr data-scenario=")
    assert total > 1

    first = await browser.get(f"/runs/{run.id}/matrix", params={"rows": 1})
    assert first.text.count("<tr data-scenario=") == 1
    assert f"The first 1 of {total} rows in this order" in first.text
    more = re.search(r'<a href="([^"]+)" id="more-rows">show all</a>', first.text)
    assert more is not None and f"rows={total}" in more.group(1)
    shown = await browser.get(html.unescape(more.group(1)))
    assert shown.text.count("<tr data-scenario=") == total
    for bad in (0, 1001, "many"):
        refused = await browser.get(f"/runs/{run.id}/matrix", params={"rows": bad})
        assert refused.status_code in (400, 422)
