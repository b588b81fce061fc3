"""The lineage page and a definition's leaderboard in Debian's chromium: every number and
choice the pages show (the run representing each version or why none does, the means, the
models compared and dropped, each change's deltas and intervals, the aligned scenarios; each
leaderboard cell's win rate, interval, runs and transcripts) is read from the page and
compared with what the JSON API answers for the same choices, after choosing runs, leaving
versions out and sorting by a value; axe finds no serious or critical violation; screenshots
at 1280 and 390 px. Over HTTP on both databases: the empty pages say why, another
organisation's definition is 404."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from tests.lineage_seeding import HONESTY, seed_tree

from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.orgs import ensure_org

from .conftest import DEMO, Browsing
from .test_matrix_pages import LAPTOP, PHONE, api, check_accessible, fmt
from .test_matrix_pages import screenshots as matrix_screenshots

READ_LINEAGE = """() => {
  const text = (root, selector) => root.querySelector(selector)?.textContent.trim() ?? null;
  return {
    versions: [...document.querySelectorAll('#lineage-versions tbody tr')].map(tr => ({
      id: tr.dataset.version,
      label: text(tr, '[data-f=label]'),
      relation: text(tr, '[data-f=relation]'),
      run: tr.querySelector('[data-f=run-id]')?.dataset.run ?? null,
      chosenBy: text(tr, '[data-f=chosen-by]'),
      reason: text(tr, '[data-f=reason]'),
      means: [...tr.querySelectorAll('td[data-model]')].map(td =>
        [td.dataset.model, text(td, '[data-f=mean]')]),
    })),
    compared: [...document.querySelectorAll('#models-compared [data-model]')]
      .map(e => e.dataset.model),
    dropped: [...document.querySelectorAll('#models-dropped li')].map(li => li.dataset.model),
    noModels: text(document, '#no-models'),
    changes: [...document.querySelectorAll('.lineage-change')].map(s => ({
      from: s.dataset.from, to: s.dataset.to,
      rows: [...s.querySelectorAll('tbody tr')].map(tr => [tr.dataset.model,
        text(tr, '[data-f=delta]'), text(tr, '[data-f=interval]'), text(tr, '[data-f=n]'),
        text(tr, '[data-f=significant]')]),
    })),
    noChanges: text(document, '#no-changes'),
    aligned: [...document.querySelectorAll('#aligned tbody tr')].map(tr => [tr.dataset.scenario,
      [...tr.querySelectorAll('td')].map(td =>
        [td.dataset.version, td.dataset.model, td.textContent.trim()])]),
    noAligned: text(document, '#no-aligned'),
  };
}"""


async def screenshots(ui: Browsing, name: str) -> None:
    """At 1280 and 390 px (axe on both); on a phone nothing sticks out sideways: wide tables
    scroll inside their own region."""
    await matrix_screenshots(ui, name)
    await ui.page.set_viewport_size(PHONE)
    width = await ui.page.evaluate("() => document.documentElement.scrollWidth")
    await ui.page.set_viewport_size(LAPTOP)
    assert width <= PHONE["width"], f"{name} is {width} px wide on a phone"


CHOSEN_BY = {"explicit": "chosen", "latest_completed": "latest completed"}


def interval(entry: dict[str, Any]) -> str:
    found = entry["interval"]
    return "–" if not found else f"{found['lower']:.2f} – {found['upper']:.2f}"


async def assert_lineage_matches(ui: Browsing, data: dict[str, Any]) -> None:
    shown = await ui.page.evaluate(READ_LINEAGE)
    compared = data["models"]["compared"]
    with_runs = [v for v in data["versions"] if v["representative_run_id"]]
    assert shown["versions"] == [
        {
            "id": v["definition_id"],
            "label": v["label"],
            "relation": "this version" if v["relation"] == "this" else v["relation"],
            "run": v["representative_run_id"],
            "chosenBy": CHOSEN_BY.get(v["chosen_by"] or ""),
            "reason": v["no_run_reason"],
            "means": [[m, fmt(v.get("results", {}).get(m, {}).get("mean"))] for m in compared],
        }
        for v in data["versions"]
    ]
    assert shown["compared"] == compared
    assert shown["dropped"] == [d["model"] for d in data["models"]["dropped"]]
    assert shown["noModels"] == data["empty"]["models"]
    assert shown["changes"] == [
        {
            "from": c["from"],
            "to": c["to"],
            "rows": [
                [
                    m,
                    fmt(e["delta"]),
                    interval(e),
                    str(e["n"]),
                    "yes" if e["wilcoxon"].get("significant") else "no",
                ]
                for m, e in c["comparison"]["perModel"].items()
            ],
        }
        for c in data["changes"]
    ]
    assert (shown["noChanges"] or "").startswith(data["empty"]["changes"] or "")
    assert bool(shown["noChanges"]) == (data["empty"]["changes"] is not None)
    assert shown["aligned"] == [
        [
            row["scenarioId"],
            [
                [v["definition_id"], m, fmt(row["versions"].get(v["definition_id"], {}).get(m))]
                for v in with_runs
                for m in compared
            ],
        ]
        for row in data["aligned"]
    ]
    assert shown["noAligned"] == data["empty"]["aligned"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a browser: one DB
async def test_the_lineage_page_shows_the_apis_choices_and_numbers(
    ui: Browsing, db: Database, org_id: str
) -> None:
    tree = await seed_tree(db, org_id)
    page = await ui.open(f"/definitions/{tree.child}")
    await page.locator("#lineage-link").click()
    await page.wait_for_url(f"**/compare/lineage/{tree.child}")
    url = f"/api/definitions/{tree.child}/lineage/results"
    data = await api(ui, url)
    assert len(data["changes"]) == 1 and data["models"]["dropped"]  # the seeded tree
    await assert_lineage_matches(ui, data)
    assert "this version" in await page.locator("tr.relation-this").inner_text()
    await check_accessible(ui)
    await screenshots(ui, "lineage")

    # Chosen runs: v1's older run, v1.2's running one.
    rows = page.locator("#lineage-versions tbody tr")
    await rows.nth(0).locator("select").select_option(tree.root_old)
    await rows.nth(3).locator("select").select_option(tree.sibling_running)
    await page.get_by_role("button", name="Apply").click()
    await page.wait_for_url(f"**run={tree.sibling_running}**")
    chosen = await api(ui, url, run=[tree.root_old, tree.sibling_running])
    assert len(chosen["changes"]) == 2 and chosen["models"]["dropped"] == []
    await assert_lineage_matches(ui, chosen)
    assert await rows.nth(0).locator("select").input_value() == tree.root_old
    await check_accessible(ui)
    await screenshots(ui, "lineage-chosen")

    # Leave out every version but v1: the changes say why there are none.
    await page.goto(f"{ui.site.url}/compare/lineage/{tree.child}")
    for i in (2, 3):
        await rows.nth(i).get_by_label("leave out").check()
    await page.get_by_role("button", name="Apply").click()
    await page.wait_for_url("**exclude=**")
    alone = await api(ui, url, exclude=[tree.grandchild, tree.sibling])
    assert alone["changes"] == [] and alone["empty"]["changes"].startswith("Only v1")
    await assert_lineage_matches(ui, alone)
    await screenshots(ui, "lineage-one-version")

    await page.locator("#leaderboard-link").click()
    await page.wait_for_url(f"**/definitions/{tree.child}/leaderboard")


READ_BOARD = """() => {
  const text = (root, selector) => root.querySelector(selector)?.textContent.trim() ?? null;
  return {
    values: [...document.querySelectorAll('#leaderboard th.value-head')]
      .map(th => th.dataset.value),
    rows: [...document.querySelectorAll('#leaderboard tbody tr')].map(tr => ({
      model: tr.dataset.model, runs: text(tr, '[data-f=runs]'), judged: text(tr, '[data-f=judged]'),
      cells: [...tr.querySelectorAll('td.board-cell')].map(td => [td.dataset.value,
        text(td, '[data-f=rate]'), text(td, '[data-f=interval]'), text(td, '[data-f=behind]'),
        text(td, '[data-f=counts]')]),
    })),
    runs: [...document.querySelectorAll('#pooled-runs tbody tr')].map(tr => [tr.dataset.run,
      text(tr, '[data-f=transcripts]'), text(tr, '[data-f=judged]')]),
    counts: ['runs', 'models', 'values'].map(k => text(document, '#count-' + k)),
    method: text(document, '#method'),
  };
}"""


def cell_texts(value: str, cell: dict[str, Any] | None) -> list[str | None]:
    if cell is None:
        return [value, "–", None, None, None]
    runs = f"{cell['runs']} {'run' if cell['runs'] == 1 else 'runs'}"
    bounds = f"{fmt(cell['lower'])} – {fmt(cell['upper'])}"
    return [
        value,
        fmt(cell["win_rate"]),
        "no decisive verdict" if cell["lower"] is None else bounds,
        f"{runs} · {cell['transcripts']} transcripts",
        f"{cell['prioritized']} won · {cell['deprioritized']} lost · {cell['neutral']} neutral",
    ]


async def assert_board_matches(ui: Browsing, data: dict[str, Any]) -> None:
    shown = await ui.page.evaluate(READ_BOARD)
    assert shown["values"] == data["values"]
    assert shown["rows"] == [
        {
            "model": row["model"],
            "runs": str(row["runs"]),
            "judged": f"{row['judged']} / {row['transcripts']}",
            "cells": [cell_texts(v, row["values"][v]) for v in data["values"]],
        }
        for row in data["models"]
    ]
    assert shown["runs"] == [
        [r["id"], str(r["transcripts"]), str(r["judged"])] for r in data["runs"]
    ]
    assert shown["counts"] == [str(len(data[k])) for k in ("runs", "models", "values")]
    assert shown["method"] == data["how"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a browser: one DB
async def test_the_leaderboard_page_shows_the_apis_numbers_sorted_by_a_value(
    ui: Browsing, db: Database, org_id: str
) -> None:
    tree = await seed_tree(db, org_id)
    page = await ui.open(f"/definitions/{tree.root}")
    await page.locator("#leaderboard-link").click()
    await page.wait_for_url(f"**/definitions/{tree.root}/leaderboard")
    url = f"/api/definitions/{tree.root}/leaderboard"
    data = await api(ui, url)
    assert len(data["runs"]) == 3 and len(data["models"]) == 3  # the seeded tree
    await assert_board_matches(ui, data)
    await check_accessible(ui)
    await screenshots(ui, "leaderboard")

    header = page.locator(f'#leaderboard th[data-value="{HONESTY}"]')
    await header.get_by_role("link", name=HONESTY).click()
    await page.wait_for_url(f"**sort=value%3A{HONESTY}")
    assert await header.get_attribute("aria-sort") == "descending"
    ranked = await api(ui, url, sort=f"value:{HONESTY}")
    await assert_board_matches(ui, ranked)
    rates = [r["values"][HONESTY]["win_rate"] for r in ranked["models"]]
    assert rates == sorted(rates, reverse=True)
    await header.get_by_role("link", name=HONESTY).click()
    await page.wait_for_url(f"**sort=-value%3A{HONESTY}")
    assert await header.get_attribute("aria-sort") == "ascending"
    await assert_board_matches(ui, await api(ui, url, sort=f"-value:{HONESTY}"))
    await check_accessible(ui)
    await screenshots(ui, "leaderboard-sorted")

    await page.locator("#lineage-link").click()
    await page.wait_for_url(f"**/compare/lineage/{tree.root}")


async def test_empty_pages_say_why_and_other_organisations_are_not_found(
    browser: httpx.AsyncClient, db: Database, org_id: str
) -> None:
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text())
        other = await ensure_org(conn, "other")
    lonely = stored.version.id
    board = (await browser.get(f"/definitions/{lonely}/leaderboard")).text
    assert 'id="no-leaderboard"' in board and "has a completed run yet" in board
    assert 'id="no-runs"' in board
    lineage = (await browser.get(f"/compare/lineage/{lonely}")).text
    assert 'id="no-changes"' in lineage and 'id="no-models"' in lineage
    assert "no run uses this version" in lineage

    theirs = await seed_tree(db, other)
    for path in (
        f"/definitions/{theirs.root}/leaderboard",
        f"/compare/lineage/{theirs.root}",
        f"/compare/lineage/{lonely}?run={theirs.root_latest}",
    ):
        missing = await browser.get(path)
        assert missing.status_code == 404, path
        assert theirs.grandchild not in missing.text and "v1.1.1 run" not in missing.text
    wrong = await browser.get(f"/definitions/{lonely}/leaderboard", params={"sort": "value:X"})
    assert wrong.status_code == 422
