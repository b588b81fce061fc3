"""The UI's pages on SQLite and PostgreSQL, fetched like a browser: escaped run list, run page
with live-progress hooks, results table, SVG chart and summary; static files; error pages."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

import httpx
import pytest

from valuerank.db import Database
from valuerank.orgs import ensure_org
from valuerank.runs import service

EVIL = "<script>alert('x')</script>"


async def test_index_lists_the_runs_escaped(
    browser: httpx.AsyncClient, db: Database, org_id: str, make_run: Any
) -> None:
    assert "No runs yet" in (await browser.get("/")).text
    run = await make_run(org_id, name=f"whistle {EVIL}")
    started = await make_run(org_id, name="started run")
    async with db.transaction() as conn:
        await service.start_run(conn, org_id, started.id)
        other = await ensure_org(conn, "other")
    await make_run(other, name="someone else's")

    page = await browser.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert EVIL not in html and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    assert f'href="/runs/{run.id}"' in html and f'href="/runs/{started.id}"' in html
    assert "someone else" not in html
    assert "status-running" in html and "status-pending" in html
    assert "scripted:utilitarian" in html and 'class="tag">synthetic' in html
    totals = sorted(
        int(n) for n in re.findall(r'<span class="count" data-field="count">0/(\d+)</span>', html)
    )
    assert totals[0] == 0 and totals[1] > 0  # the pending run, the started one's probe jobs


async def test_run_page_shows_results_chart_summary_and_live_hooks(
    browser: httpx.AsyncClient, org_id: str, make_run: Any
) -> None:
    run = await make_run(
        org_id,
        models=("scripted:utilitarian", "scripted:deontologist"),
        name="demo run",
        decisions={"scripted:utilitarian": [4, 5, 4, 3], "scripted:deontologist": [None, 1]},
        summary=f"Models disagree.\n{EVIL}",
    )
    page = await browser.get(f"/runs/{run.id}")
    assert page.status_code == 200
    html = page.text
    assert f'data-run-id="{run.id}"' in html and 'data-status="pending"' in html
    assert '<script src="/static/run.js' in html  # EventSource on the SSE endpoint
    assert '<script src="/static/research.js' in html  # its API calls (with the CSRF token)
    assert 'id="run-progress"' in html and 'id="count-queued"' in html

    start = html.index('<table class="results cards"')  # cards on a phone
    table = html[start : html.index("</table>", start) + 8]
    rows = ET.fromstring(table).findall("./tbody/tr")
    cells = [["".join(td.itertext()).strip() for td in row] for row in rows]
    # model, transcripts, decided, refusals, mean, 1..5, cost (models sorted by name)
    assert cells[0] == [
        "scripted:deontologist synthetic", "2", "1", "1", "1.00", "1", "0", "0", "0", "0",
        "$0.0040",
    ]  # fmt: skip
    assert cells[1] == [
        "scripted:utilitarian synthetic", "4", "4", "0", "4.00", "0", "0", "1", "2", "1",
        "$0.0080",
    ]  # fmt: skip

    chart = html.index("<svg", start)  # after the results table; the first is the progress bar
    svg_text = html[chart : html.index("</svg>", chart) + 6]
    svg = ET.fromstring(svg_text)
    bars = list(svg.iter("{http://www.w3.org/2000/svg}rect"))
    assert len(bars) == 2 and all(b.get("class") == "bar synthetic" for b in bars)

    assert "Models disagree." in html and EVIL not in html and "&lt;script&gt;" in html

    for asset, kind in (("/static/run.js", "javascript"), ("/static/app.css", "text/css")):
        response = await browser.get(asset)
        assert response.status_code == 200 and kind in response.headers["content-type"]
    js = (await browser.get("/static/run.js")).text
    assert 'new EventSource(api + "/events/stream?snapshots=true&after=" + lastSeq)' in js
    assert "http" not in js.split("\n", 7)[7]  # nothing fetched from elsewhere


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # pages only: one DB
async def test_pages_need_login_and_errors_are_pages(
    site: Any, browser: httpx.AsyncClient, db: Database, make_run: Any
) -> None:
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
    foreign = await make_run(other, name="not yours")
    for ref in ("no-such-run", foreign.id):
        missing = await browser.get(f"/runs/{ref}")
        assert missing.status_code == 404
        assert missing.headers["content-type"].startswith("text/html")
        assert "NOT_FOUND" in missing.text and "not yours" not in missing.text
    async with site.browser() as stranger:
        denied = await stranger.get("/")
        # A browser without credentials is sent to the sign-in page, which brings it back.
        assert denied.status_code == 303 and denied.headers["location"] == "/login?next=%2F"
        assert "<h1>Runs</h1>" not in denied.text
