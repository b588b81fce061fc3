"""People as judges in Debian's chromium: the "read a random sample" queue opens the
transcript the API names next, the reading form records what the person chose (the API then
holds it), the queue moves on and counts it, the form shows a saved reading again and deletes
it; the analysis page's judge agreement figures are the API's; axe finds no serious or
critical violation, on a laptop and on a phone; a viewer sees the page without the form."""

from __future__ import annotations

from typing import Any

import httpx
from tests.readings_seeding import FREEDOM, LOYALTY, judged_run

from valuerank.accounts import Role, add_member, create_token
from valuerank.db import Database

from .accessibility import serious_violations
from .conftest import TOKEN, Browsing

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 860}
VIEWER_TOKEN = "vrt_web-viewer-0123456789-abcdefghijklmnopqrstuvwxyz"


async def api(ui: Browsing, method: str, path: str, token: str = TOKEN) -> Any:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=ui.site.url, headers=headers, timeout=10) as client:
        response = await client.request(method, path)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def two(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def interval(figure: dict[str, Any]) -> str:
    ci = figure.get("ci95")
    return "–" if not ci else f"{ci[0]:.2f} – {ci[1]:.2f}"


async def test_read_a_sample_record_and_see_the_agreement(
    ui: Browsing, db: Database, org_id: str
) -> None:
    seeded = await judged_run(db, org_id)
    run_id = seeded.run.id
    expected = await api(ui, "GET", f"/api/runs/{run_id}/read-next")
    page = await ui.open(f"/runs/{run_id}/read")
    first = expected["next_transcript_id"]
    assert page.url.endswith(f"/transcripts/{first}/read?queue=true")
    assert await page.text_content("#read-count") == "0"
    assert await page.text_content("#read-total") == str(len(seeded.transcript_ids))
    assert await serious_violations(page) == []
    await page.set_viewport_size(PHONE)
    assert await serious_violations(page) == []
    # On a phone the choices fit the width: nothing scrolls sideways.
    assert await page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    await ui.screenshot("read-transcript-phone")
    await page.set_viewport_size(LAPTOP)

    await page.check(f'fieldset[data-value="{FREEDOM}"] input[value="prioritized"]')
    await page.check(f'fieldset[data-value="{LOYALTY}"] input[value="deprioritized"]')
    await page.fill("#reading-note", "plainly")
    async with page.expect_navigation(url=lambda url: first not in url):
        await page.click("#save-reading")
    assert "/read?queue=true" in page.url
    assert await page.text_content("#read-count") == "1"
    stored = await api(ui, "GET", f"/api/transcripts/{first}/readings")
    assert [
        (r["reader"], r["prioritized_values"], r["deprioritized_values"], r["note"])
        for r in stored["readings"]
    ] == [("human:admin@example.test", [FREEDOM], [LOYALTY], "plainly")]

    # The analysis page shows the API's figures.
    analysis = (await api(ui, "GET", f"/api/runs/{run_id}/analysis"))["judgeAgreement"]
    page = await ui.open(f"/runs/{run_id}/analysis")
    for value, entry in analysis["values"].items():
        row = f'#judge-values tr[data-value="{value}"]'
        assert await page.text_content(f'{row} [data-field="alpha"]') == two(
            entry["alpha"]["value"]
        )
        assert await page.text_content(f'{row} [data-field="alphaCi"]') == interval(entry["alpha"])
    for table, section in (("judge-consensus", "withConsensus"), ("judge-people", "withPeople")):
        for judge, entry in analysis[section].items():
            row = f'#{table} tr[data-judge="{judge}"]'
            assert await page.text_content(f'{row} [data-field="transcripts"]') == str(
                entry["transcripts"]
            )
            assert await page.text_content(f'{row} [data-field="share"]') == two(
                entry["share"]["value"]
            )
            assert await page.text_content(f'{row} [data-field="kappa"]') == two(
                entry["kappa"]["value"]
            )
            assert await page.text_content(f'{row} [data-field="kappaCi"]') == interval(
                entry["kappa"]
            )
    assert analysis["withPeople"] and analysis["people"] == ["human:admin@example.test"]
    assert await serious_violations(page) == []

    # The saved reading is shown again, and deleted from the page.
    page = await ui.open(f"/transcripts/{first}/read")
    assert await page.is_checked(f'fieldset[data-value="{FREEDOM}"] input[value="prioritized"]')
    assert await page.is_checked(f'fieldset[data-value="{LOYALTY}"] input[value="deprioritized"]')
    async with page.expect_navigation():
        await page.click("#delete-reading")
    assert (await api(ui, "GET", f"/api/transcripts/{first}/readings"))["readings"] == []
    assert await page.is_checked(f'fieldset[data-value="{FREEDOM}"] input[value="neither"]')

    # A viewer reads the page without the form, and has no queue.
    async with db.transaction() as conn:
        viewer = await add_member(conn, org_id, "viewer@example.test", Role.VIEWER)
        await create_token(conn, org_id, viewer.user.id, name="viewer", token=VIEWER_TOKEN)
    headers = {"Authorization": f"Bearer {VIEWER_TOKEN}", "Accept": "text/html"}
    async with httpx.AsyncClient(base_url=ui.site.url, headers=headers, timeout=10) as client:
        shown = await client.get(f"/transcripts/{first}/read")
        assert shown.status_code == 200 and 'id="read-only"' in shown.text
        assert 'id="reading-form"' not in shown.text
        assert (await client.get(f"/runs/{run_id}/read")).status_code == 403
