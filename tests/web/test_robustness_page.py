"""The analysis page shows each model's robustness — order effect, phrasing, consistency —
and its values' ranks with intervals, every number the API's analysis JSON; the most
inconsistent scenarios link to their side-by-side answers."""

from __future__ import annotations

from typing import Any

import httpx
from tests.presented_seeding import MODEL, presented_run

from valuerank.db import Database

from .conftest import TOKEN, Browsing


def _span(ci: list[float]) -> str:
    return f"{ci[0]:.2f} – {ci[1]:.2f}"


def expected_robustness_cells(entry: dict[str, Any]) -> dict[str, str]:
    """The text of each `data-field` cell of the model's #robustness row."""
    order, shift, agreed = (
        entry["orderEffect"],
        entry["phrasingEffect"]["shift"],
        entry["consistency"],
    )
    return {
        "orderEffect": f"{order['value']:.2f}",
        "orderEffectCi": _span(order["ci95"]),
        "orderEffectP": "< 0.001" if order["pValue"] < 0.001 else f"{order['pValue']:.3f}",
        "phrasingShift": f"{shift['value']:.2f}",
        "phrasingShiftCi": _span(shift["ci95"]),
        "phrasingShare": f"{entry['phrasingEffect']['varianceShare']['value']:.2f}",
        "consistency": f"{agreed['value']:.2f}",
        "consistencyCi": _span(agreed["ci95"]),
        "entropy": f"{agreed['entropy']['mean']:.2f}",
    }


def expected_rank_rows(entry: dict[str, Any]) -> dict[tuple[str, str], dict[str, str]]:
    """(basis, value) → the texts of its #value-ranks cells."""
    rows = {}
    for basis, ranked in entry["ranking"].items():
        if ranked is None:
            continue
        values = ranked["values"]
        for k, v in enumerate(values):
            after = values[k + 1]["value"] if k + 1 < len(values) else None
            rows[(basis, v["value"])] = {
                "rank": str(v["rank"]),
                "rankCi": f"{v['ci95'][0]} – {v['ci95'][1]}",
                "estimate": f"{v['estimate']:.2f}",
                "pAboveNext": "" if after is None else f"{ranked['pAbove'][v['value']][after]:.2f}",
            }
    return rows


async def test_the_analysis_page_shows_the_api_robustness_and_rank_intervals(
    ui: Browsing, db: Database, org_id: str
) -> None:
    run, _ = await presented_run(db, org_id)
    page = await ui.open(f"/runs/{run.id}/analysis")
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=ui.site.url, headers=headers) as api:
        answer = await api.get(f"/api/runs/{run.id}/analysis")
    assert answer.status_code == 200, answer.text
    entry = answer.json()["data"]["robustness"][MODEL]
    headings = await page.locator("#analysis h2").all_inner_texts()
    assert headings[:2] == ["Value sensitivity", "Robustness"]

    row = page.locator(f'#robustness tbody tr[data-model="{MODEL}"]')
    assert await row.count() == 1
    for field, text in expected_robustness_cells(entry).items():
        assert await row.locator(f'td[data-field="{field}"]').inner_text() == text, field

    expected = expected_rank_rows(entry)
    ranks = page.locator("#value-ranks tbody tr")
    assert await ranks.count() == len(expected) >= 3
    for k in range(await ranks.count()):
        rank_row = ranks.nth(k)
        key = (
            str(await rank_row.get_attribute("data-basis")),
            str(await rank_row.get_attribute("data-value")),
        )
        for field, text in expected[key].items():
            cell = rank_row.locator(f'td[data-field="{field}"]')
            assert await cell.inner_text() == text, (key, field)
    assert expected[("winRate", "Physical_Safety")]["rankCi"] == "1 – 1"

    links = page.locator("#inconsistent-scenarios a")
    worst = entry["consistency"]["mostInconsistent"]
    assert await links.count() == len(worst) >= 1
    href = await links.first.get_attribute("href")
    assert href == f"/runs/{run.id}/scenarios/{worst[0]['scenarioId']}"
    await links.first.click()
    await page.wait_for_url(f"**{href}")
    assert worst[0]["scenarioId"] in await page.content()
    await ui.screenshot("analysis-robustness")
