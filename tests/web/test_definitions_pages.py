"""Definition pages fetched like a browser, on SQLite and PostgreSQL: the list, one version
with its tree graph and runs, the editor, the side-by-side diff; escaping; another
organisation's ids are the 404 page."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

import httpx
import pytest

from valuerank.db import Database
from valuerank.definitions import service
from valuerank.formats import parse_definition
from valuerank.orgs import ensure_org

from .conftest import DEMO, Browsing

EVIL = "<script>alert('x')</script>"
VERSION_URL = re.compile(r"/definitions/[0-9a-f-]{8,}$")


async def test_list_version_tree_editor_and_diff(
    browser: httpx.AsyncClient, db: Database, org_id: str, make_run: Any
) -> None:
    empty = await browser.get("/definitions")
    assert empty.status_code == 200 and 'id="no-definitions"' in empty.text
    assert 'id="import-form"' in empty.text and 'data-api="POST /api/definitions"' in empty.text

    run = await make_run(org_id, name="demo run")  # imports the demo definition
    text = DEMO.read_text()
    async with db.transaction() as conn:
        root = (await service.list_definitions(conn, org_id))[0]
        changed = text.replace(root.definition.template.splitlines()[0], f"Changed {EVIL}", 1)
        child = await service.fork_definition(
            conn, org_id, root.version.id, definition=parse_definition(changed)
        )
        other = await ensure_org(conn, "other")
        foreign, _ = await service.import_definition(conn, other, text)

    listing = (await browser.get("/definitions")).text
    assert f'href="/definitions/{root.version.id}"' in listing
    assert f'href="/definitions/{child.version.id}"' in listing

    page = await browser.get(f"/definitions/{root.version.id}")
    assert page.status_code == 200
    html = page.text
    assert '<meta name="csrf-token" content="' in html and "/static/research.js" in html
    assert "Version(" not in html  # the page's version does not shadow the app's
    svg = ET.fromstring(html[html.index("<svg") : html.index("</svg>") + 6])
    ns = "{http://www.w3.org/2000/svg}"
    ids = {a.get("data-version-id") for a in svg.iter(f"{ns}a") if a.get("data-version-id")}
    assert ids == {root.version.id, child.version.id}
    assert len(list(svg.iter(f"{ns}path"))) == 1  # the fork's edge
    assert any(a.get("href") == f"/runs/{run.id}" for a in svg.iter(f"{ns}a"))
    assert f'data-api="POST /api/definitions/{root.version.id}/fork"' in html
    assert f'href="/runs/new?definition={root.version.id}"' in html  # a run of this version

    child_page = (await browser.get(f"/definitions/{child.version.id}")).text
    assert EVIL not in child_page and "Changed &lt;script&gt;" in child_page

    editor = (await browser.get(f"/definitions/{child.version.id}/edit")).text
    assert 'id="markdown"' in editor and "Changed &lt;script&gt;" in editor and EVIL not in editor
    assert 'id="fields-form"' in editor and 'class="dim-name"' in editor
    assert 'data-fields="changes"' in editor
    new = (await browser.get("/definitions/new")).text
    assert 'data-api="POST /api/definitions"' in new and 'data-fields="top"' in new

    diff = await browser.get(f"/definitions/{child.version.id}/diff")  # against the parent
    assert diff.status_code == 200
    table = diff.text[diff.text.index('<table class="diff"') : diff.text.index("</table>") + 8]
    rows = ET.fromstring(table).findall("./tbody/tr")
    changed_rows = [r for r in rows if r.get("class") == "diff-changed"]
    assert len(changed_rows) == 1
    cells = ["".join(td.itertext()) for td in changed_rows[0]]
    assert cells[3] == f"Changed {EVIL}"  # parsed back from escaped text
    start = diff.text.index('<ul class="diff-summary"')
    summary = diff.text[start : diff.text.index("</ul>", start)]  # one line per changed part
    assert summary.count("<li>") == 1 and "<li>template: 1 line added, 1 removed</li>" in summary
    explicit = await browser.get(
        f"/definitions/{root.version.id}/diff", params={"to": child.version.id}
    )
    assert explicit.status_code == 200 and "diff-changed" in explicit.text

    for path in (
        f"/definitions/{foreign.version.id}",
        f"/definitions/{foreign.version.id}/edit",
        f"/definitions/{root.version.id}/diff?to={foreign.version.id}",
        "/definitions/no-such-version",
    ):
        missing = await browser.get(path)
        assert missing.status_code == 404, path
        assert "NOT_FOUND" in missing.text

    # Every page's API client (static/api.js, loaded by base.html) sends the CSRF token.
    assert '<script src="/static/api.js' in html
    js = await browser.get("/static/api.js")
    assert js.status_code == 200 and "X-CSRF-Token" in js.text


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a browser: one DB
async def test_import_fork_edit_diff_and_tree_in_a_browser(ui: Browsing) -> None:
    page = await ui.open("/definitions")
    await ui.screenshot("definitions-empty")
    await page.fill("#import-markdown", DEMO.read_text())
    await page.get_by_role("button", name="Import").click()
    await page.wait_for_url(VERSION_URL)
    root_url = page.url
    assert (await page.locator("h1").inner_text()).endswith("demo-whistleblower v1")
    await ui.screenshot("definition")

    await page.get_by_role("button", name="Fork as is").click()
    await page.wait_for_url(lambda url: bool(VERSION_URL.search(url)) and url != root_url)
    fork_url = page.url
    assert await page.locator("#version-tree a.node").count() == 2

    await page.get_by_role("link", name="Edit (saves a fork)").click()
    await page.wait_for_url("**/edit")
    text = await page.input_value("#markdown")
    await page.fill("#markdown", text.replace("[Harm]", "[Harmm]", 1))
    await page.get_by_role("button", name="Save as a fork").click()
    error = page.locator("#panel-markdown [data-error]")
    await error.wait_for(state="visible")
    assert "INVALID_FILE" in await error.inner_text() and "[Harmm]" in await error.inner_text()
    line = text.splitlines().index(next(ln for ln in text.splitlines() if "[Harm]" in ln)) + 1
    assert await page.locator("#error-line").inner_text() == str(line)  # marked in the gutter
    await ui.screenshot("definition-editor-error")

    await page.fill("#markdown", text.replace("[Harm]", "[harm], perhaps,", 1))
    await page.get_by_role("button", name="Save as a fork").click()
    await page.wait_for_url(lambda url: bool(VERSION_URL.search(url)) and url != fork_url)
    assert await page.locator("#version-tree a.node").count() == 3
    await ui.screenshot("definition-tree")
    await page.set_viewport_size({"width": 390, "height": 844})  # a phone
    await ui.screenshot("definition-tree-phone")
    await page.set_viewport_size({"width": 1280, "height": 860})

    await page.get_by_role("link", name="Diff with parent").click()
    await page.wait_for_url("**/diff")
    changed = page.locator("#diff-table tr.diff-changed")
    assert await changed.count() == 1
    assert "[harm], perhaps," in await changed.locator("td.right").inner_text()
    await ui.screenshot("definition-diff")

    await page.goto(fork_url.rsplit("/", 1)[0] + "/new")
    await page.get_by_role("tab", name="Form").click()
    await page.fill("#f-name", "made in the form")
    await page.fill("#f-template", "Choose [Risk].")
    await page.get_by_role("button", name="Add a dimension").click()
    await page.fill(".dimension-field .dim-name", "Risk")
    await page.fill(".dimension-field .lv-score", "1")
    await page.fill(".dimension-field .lv-label", "low")
    await page.fill(".dimension-field .lv-options", "a small risk; a tiny risk")
    await ui.screenshot("definition-form")
    await page.locator("#fields-form").get_by_role("button", name="Save").click()
    await page.wait_for_url(VERSION_URL)
    assert await page.locator("h1").inner_text() == "made in the form v1"
    assert "a small risk; a tiny risk" in await page.locator("table.dimension").inner_text()
