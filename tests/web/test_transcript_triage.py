"""Transcript triage in Debian's chromium: the list's rows, answer openings and total are read
from the page and compared with what /api/transcripts answers for the same search, filters
and sort (a non-ASCII search, the judges' consensus filters, every sort, the next page);
from a filtered, sorted list a transcript's "next" and "previous" walk exactly the API's order
and keep the list's query; axe finds no serious or critical violation; screenshots at 1280
and 390 px."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from tests.triage_seeding import seed_triage_run

from valuerank.db import Database

from .accessibility import serious_violations
from .conftest import TOKEN, Browsing

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 860}

READ_LIST = """() => ({
  ids: [...document.querySelectorAll('#transcripts tbody tr')].map(tr => tr.dataset.id),
  previews: [...document.querySelectorAll('#transcripts td.preview')].map(td => td.textContent),
  total: document.querySelector('#total')?.textContent.trim() ?? null,
})"""
# An answer's opening stays on one line: its cell is no taller than a one-line cell.
ONE_LINE = """() => [...document.querySelectorAll('#transcripts tbody tr')].every(tr => {
  const preview = tr.querySelector('td.preview').getBoundingClientRect().height;
  const decision = tr.querySelector('td[data-label=Decision]').getBoundingClientRect().height;
  return preview <= decision * 1.2;
})"""


async def api(ui: Browsing, path: str, **params: Any) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=ui.site.url, headers=headers, timeout=10) as client:
        response = await client.get(path, params=params)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def assert_list_matches(ui: Browsing, **params: Any) -> dict[str, Any]:
    """The page's rows, openings and total are the API's for the same query."""
    data = await api(ui, "/api/transcripts", **params)
    shown = await ui.page.evaluate(READ_LIST)
    assert shown == {
        "ids": [t["id"] for t in data["transcripts"]],
        "previews": [t["answer_preview"] or "–" for t in data["transcripts"]],
        "total": f"{data['total']:,}" + ("" if data["total_exact"] else "+"),
    }
    return data


async def screenshots(ui: Browsing, name: str) -> None:
    """Both widths, axe at both; at 390 px the rows are cards, openings still one line."""
    assert await serious_violations(ui.page) == []
    await ui.screenshot(name)
    await ui.page.set_viewport_size(PHONE)
    assert await serious_violations(ui.page) == []
    if await ui.page.locator("#transcripts").count():
        assert await ui.page.evaluate(ONE_LINE)
    await ui.screenshot(f"{name}-phone")
    await ui.page.set_viewport_size(LAPTOP)


def query_of(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


async def test_the_list_shows_the_apis_rows_openings_and_totals_filtered_and_sorted(
    ui: Browsing, db: Database, org_id: str
) -> None:
    await seed_triage_run(db, org_id)
    page = await ui.open("/transcripts")
    everything = await assert_list_matches(ui)
    assert everything["total"] == 9
    assert await page.evaluate(ONE_LINE)
    await screenshots(ui, "transcripts-triage")

    # A search in another script's letters, typed in another case.
    await page.fill("#t-q", "CAFÉ")
    await page.get_by_role("button", name="Search").click()
    await page.wait_for_url("**q=CAF%C3%89**")
    found = await assert_list_matches(ui, q="CAFÉ")
    assert found["total"] == 3

    # The judges' consensus filters and every sort, from the form.
    await page.fill("#t-q", "")
    await page.select_option("#t-disagreement", "no")
    for sort in ("oldest", "decision", "model", "scenario", "newest"):
        await page.select_option("#t-sort", sort)
        await page.get_by_role("button", name="Search").click()
        await page.wait_for_url(f"**sort={sort}**")
        agreeing = await assert_list_matches(ui, disagreement="false", sort=sort)
        assert 1 < agreeing["total"] < 9
    await page.select_option("#t-disagreement", "")
    await page.select_option("#t-agreement", "unjudged")
    await page.get_by_role("button", name="Search").click()
    await page.wait_for_url("**agreement=unjudged**")
    assert (await assert_list_matches(ui, agreement="unjudged", sort="newest"))["total"] == 2
    await screenshots(ui, "transcripts-triage-filtered")

    # The next page keeps the sort, and its rows are the API's next page.
    await page.goto(f"{ui.site.url}/transcripts?sort=decision&limit=4")
    first = await assert_list_matches(ui, sort="decision", limit=4)
    await page.get_by_role("link", name="Older transcripts").click()
    await page.wait_for_url("**cursor=**")
    second = await assert_list_matches(ui, sort="decision", limit=4, cursor=first["next_cursor"])
    assert second["total"] == 9
    assert not {t["id"] for t in first["transcripts"]} & {t["id"] for t in second["transcripts"]}


async def test_next_and_previous_walk_a_filtered_sorted_list_in_the_apis_order(
    ui: Browsing, db: Database, org_id: str
) -> None:
    await seed_triage_run(db, org_id)
    listed = await api(ui, "/api/transcripts", disagreement="false", sort="model")
    order = [t["id"] for t in listed["transcripts"]]
    assert len(order) == listed["total"] >= 3

    page = await ui.open("/transcripts?disagreement=no&sort=model")
    await page.locator(f'#transcripts tr[data-id="{order[0]}"] a').first.click()
    visited = []
    for n, expected in enumerate(order, start=1):
        await page.wait_for_url(f"**/transcripts/{expected}?**")
        assert query_of(page.url) == {"disagreement": ["no"], "sort": ["model"]}
        position = await page.locator("#position").inner_text()
        assert position.startswith(f"{n} of {len(order)}")
        visited.append(expected)
        if n == 1:
            assert await page.locator("#previous").count() == 0
            await screenshots(ui, "transcript-in-list")
        if n < len(order):
            await page.get_by_role("link", name="Next transcript").click()
    assert visited == order
    assert await page.locator("#next").count() == 0  # the last of the list
    for expected in reversed(order[:-1]):
        await page.get_by_role("link", name="Previous transcript").click()
        await page.wait_for_url(f"**/transcripts/{expected}?**")
    await page.get_by_role("link", name="Back to the list").click()
    await page.wait_for_url("**/transcripts?disagreement=no&sort=model")
    await assert_list_matches(ui, disagreement="false", sort="model")

    # Opened directly (not from a list), a transcript has no list to walk.
    await page.goto(f"{ui.site.url}/transcripts/{order[0]}")
    assert await page.locator(".list-nav").count() == 0
