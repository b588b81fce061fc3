"""Every setup step done in Chromium through the pages, each result checked against the JSON
API: an experiment (hypothesis, baseline) and a variant; a validation task, its RA tags and
validations asked of scripted models that a real worker answers; importing the CLI's files
and downloading exports (the same bytes as the API's); a token that joins the list at once.
axe finds nothing serious on any of these pages, at 1280 and at 390 px."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.cli_corpus import PROJECT as PROJECT_CORPUS

from valuerank.cli.live import in_process_worker
from valuerank.db import Database
from valuerank.pipeline.calls import ProviderPool
from valuerank.queue import QueueSettings
from valuerank.refs import short_id

from .accessibility import serious_violations
from .conftest import DEMO, TOKEN, Browsing

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a browser

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 860}
FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0)
HYPOTHESIS = "A warmer temperature makes the models less consistent"
# What the personas of providers/scripted_validation.py say of these: the three agree on
# RETRY; on JWT the contrarian rejects what the others validate.
RETRY = "#PATTERN_MOMENTUM: Retry failed requests three times"
JWT = "#COMPLETION_DRIVE_IMPL: Using JWT tokens for stateless authentication"
MODELS = ("scripted:utilitarian", "scripted:contrarian", "scripted:agreeable")


def client(ui: Browsing) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    return httpx.AsyncClient(base_url=ui.site.url, headers=headers, timeout=30)


async def api(ui: Browsing, path: str, **params: Any) -> Any:
    async with client(ui) as http:
        response = await http.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()["data"]


async def api_export(ui: Browsing, path: str, **params: Any) -> bytes:
    async with client(ui) as http:
        response = await http.post(path, params=params)
    assert response.status_code == 200, response.text
    return response.content


async def checked(ui: Browsing, name: str) -> None:
    """axe at 1280 px and on a phone, with a screenshot of each."""
    assert await serious_violations(ui.page) == []
    await ui.screenshot(name)
    await ui.page.set_viewport_size(PHONE)
    assert await serious_violations(ui.page) == []
    await ui.screenshot(f"{name}-phone")
    await ui.page.set_viewport_size(LAPTOP)


def refused(ui: Browsing, status: int) -> None:
    """The one request the page was refused is the one error the browser logged."""
    assert len(ui.errors) == 1 and str(status) in ui.errors[0], ui.errors
    ui.errors.clear()


async def test_an_experiment_and_its_variant(ui: Browsing, org_id: str, make_run: Any) -> None:
    baseline = await make_run(org_id, name="baseline run")
    page = await ui.open("/compare")
    assert await page.locator("#no-experiments").count() == 1
    await page.fill("#experiment-name", "Warmer answers")
    await page.fill("#experiment-hypothesis", HYPOTHESIS)
    await page.select_option("#experiment-baseline", baseline.id)
    await page.get_by_role("button", name="Create the experiment").click()
    item = page.locator("#experiments li")
    await item.wait_for()
    [listed] = (await api(ui, "/api/experiments"))["experiments"]
    assert (listed["name"], listed["hypothesis"]) == ("Warmer answers", HYPOTHESIS)
    assert listed["baseline_run_id"] == baseline.id
    assert await item.get_attribute("data-experiment-id") == listed["id"]
    assert await item.inner_text() == (
        f"Warmer answers · baseline {short_id(baseline.id)} — {HYPOTHESIS}"
    )
    status = page.locator("#experiment-form [data-status]")
    assert (
        await status.inner_text() == "Experiment Warmer answers created: open it to add variants."
    )
    assert await page.input_value("#experiment-name") == ""  # ready for the next one
    await checked(ui, "setup-experiment")

    await item.get_by_role("link", name="Warmer answers").click()
    await page.wait_for_url(f"**/compare/experiments/{listed['id']}")
    assert await page.locator("#hypothesis").inner_text() == HYPOTHESIS
    # Nothing changed: the API's refusal, with its code, under the form.
    await page.get_by_role("button", name="Add the variant").click()
    error = page.locator("#variant-form [data-error]")
    await error.wait_for(state="visible")
    assert (await error.inner_text()).startswith("INVALID_INPUT: a variant must state what")
    refused(ui, 422)

    await page.fill("#variant-temperature", "0.7")
    await page.fill("#variant-models", "scripted:utilitarian, scripted:centrist")
    await page.get_by_role("button", name="Add the variant").click()
    row = page.locator("#variants tbody tr")
    await row.wait_for()
    assert await error.is_hidden()
    report = await api(ui, f"/api/experiments/{listed['id']}")
    [variant] = report["variants"]
    changes = {"models": ["scripted:utilitarian", "scripted:centrist"], "temperature": 0.7}
    assert variant["changes"] == changes
    assert await row.get_attribute("data-run-id") == variant["run_id"]
    cells = await row.locator("td").all_inner_texts()
    assert cells[0] == variant["name"] and cells[1] == variant["status"]
    assert json.loads(cells[2]) == changes
    assert baseline.id in variant["waiting_for"] and "(the baseline)" in cells[3]
    status = page.locator("#variant-form [data-status]")
    assert await status.inner_text() == f"Variant run {variant['name']} created and started."
    await checked(ui, "setup-experiment-variant")


async def test_a_validation_task_its_tags_and_the_models_answers(
    ui: Browsing, db: Database
) -> None:
    page = await ui.open("/validation")
    await page.fill("#task-name", "Auth API")
    await page.fill("#task-description", "RA tags of the login change")
    await page.get_by_role("button", name="Create the task").click()
    row = page.locator("#tasks tbody tr")
    await row.wait_for()
    [task] = (await api(ui, "/api/assumptions/tasks"))["tasks"]
    cells = await row.locator("td").all_inner_texts()
    assert cells[:4] == [str(task["id"]), "Auth API", "RA tags of the login change", "0"]
    await checked(ui, "setup-validation-tasks")

    await row.get_by_role("link", name="Auth API").click()
    await page.wait_for_url(f"**/validation/{task['id']}")
    for tag_id, text in (("ra_retry", RETRY), ("ra_jwt", JWT)):
        await page.fill("#tag-text", text)
        await page.fill("#tag-id", tag_id)
        await page.get_by_role("button", name="Add the tag").click()
        await page.locator(f'#ra-tags section[data-tag-id="{tag_id}"]').wait_for()
    tags = (await api(ui, f"/api/assumptions/tasks/{task['id']}/tags"))["tags"]
    shown = page.locator("#ra-tags section.ra-tag")
    assert [await s.get_attribute("data-tag-id") for s in await shown.all()] == [
        t["id"] for t in tags
    ]
    assert await shown.locator("h3").all_inner_texts() == [t["text"] for t in tags]
    assert await page.locator("#tag-total").inner_text() == "2"
    assert (await api(ui, f"/api/assumptions/tasks/{task['id']}"))["tag_count"] == 2
    # The tags added just now can be asked about without a reload.
    options = await page.locator("#validate-tag option").evaluate_all(
        "options => options.map(o => o.value)"
    )
    assert options == ["", "ra_retry", "ra_jwt"]

    # No model chosen: the API's refusal and its code, nothing queued.
    await page.get_by_role("button", name="Ask", exact=True).click()
    error = page.locator("#validate-form [data-error]")
    await error.wait_for(state="visible")
    assert (await error.inner_text()).startswith("VALIDATION_ERROR")
    refused(ui, 422)
    for model in MODELS:
        await page.locator(f'input[name="models"][value="{model}"]').check()
    await page.get_by_role("button", name="Ask", exact=True).click()  # every tag
    asked = page.locator("#asked tbody tr")
    await page.locator("#validate-form [data-status]", has_text="queued").wait_for()
    assert await page.locator("#validate-form [data-status]").inner_text() == (
        "6 validations queued."
    )
    assert await error.is_hidden()
    rows = [await r.locator("td").all_inner_texts() for r in await asked.all()]
    assert sorted((r[0], r[1]) for r in rows) == sorted((t["id"], m) for t in tags for m in MODELS)
    assert {r[2] for r in rows} == {"queued"}
    assert await page.locator("#asked-validations[data-pending]").count() == 1
    await checked(ui, "setup-validation-queued")

    # A real worker asks the scripted models; the page refreshes until every answer is in.
    worker = in_process_worker(db, settings=FAST, providers=ProviderPool(environ={}))
    async with worker:
        await page.wait_for_function(
            "() => !document.querySelector('[data-pending]')", timeout=60_000
        )
    assert await asked.count() == 0
    consensus = await api(ui, f"/api/assumptions/consensus/{task['id']}")
    total = consensus["overall_consensus"]["total_validations"]
    assert total == 6 and await page.locator("#validation-total").inner_text() == "6"
    for tag in tags:
        view = await api(ui, f"/api/assumptions/multi-model/{task['id']}/{tag['id']}")
        section = page.locator(f'#ra-tags section[data-tag-id="{tag["id"]}"]')
        shown_rows = section.locator("table.validations tbody tr")
        shown = {
            await r.get_attribute("data-model"): await r.locator("[data-outcome]").get_attribute(
                "data-outcome"
            )
            for r in await shown_rows.all()
        }
        assert shown == {v["validator_id"]: v["outcome"] for v in view["validations"]}
        assert await section.locator("[data-count]").inner_text() == str(
            view["consensus"]["total_validations"]
        )
        dissent = {v["validator_id"] for v in view["validations"]} - {
            v["validator_id"]
            for v in view["validations"]
            if v["outcome"] == view["consensus"]["outcome"]
        }
        assert await section.locator("tr.dissent").count() == len(dissent)
    await checked(ui, "setup-validation-answers")


def folder_zip(root: Path) -> bytes:
    """The CLI's run folder as a person zips it (under a folder of its own)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.writestr(
                    f"valuerank-cli/{path.relative_to(root).as_posix()}", path.read_bytes()
                )
    return buffer.getvalue()


async def upload(page: Any, name: str, data: bytes, mime: str) -> None:
    await page.set_input_files("#import-file", {"name": name, "mimeType": mime, "buffer": data})
    await page.get_by_role("button", name="Import", exact=True).click()


async def download(page: Any, form: str) -> tuple[str, bytes]:
    async with page.expect_download() as event:
        await page.locator(f"{form} button[type=submit]").click()
    got = await event.value
    return got.suggested_filename, Path(await got.path()).read_bytes()


async def test_import_and_export_the_clis_files(ui: Browsing, org_id: str, make_run: Any) -> None:
    corpus = PROJECT_CORPUS.root  # the CLI's formats; the formats' own tests check the CLI's
    page = await ui.open("/definitions")
    await page.locator("#exchange-link").click()
    await page.wait_for_url("**/exchange")
    result = page.locator("#import-result")

    await upload(page, DEMO.name, DEMO.read_bytes(), "text/markdown")
    await result.locator(".import-kind").wait_for()
    [stored] = (await api(ui, "/api/definitions"))["definitions"]
    assert await result.locator(".import-kind").inner_text() == "Imported: definition."
    link = result.get_by_role("link")
    assert await link.inner_text() == f"{stored['name']} {stored['version_label']}"
    assert await link.get_attribute("href") == f"/definitions/{stored['id']}"

    await upload(page, "valuerank-cli.zip", folder_zip(corpus), "application/zip")
    await result.locator(".import-kind", has_text="runs").wait_for()
    runs = (await api(ui, "/api/runs"))["runs"]
    [imported] = [r for r in runs if r.get("cli_run_id") == PROJECT_CORPUS.run_id]
    line = await result.locator("li").inner_text()
    assert line.endswith(" · 3 transcripts")
    assert await result.get_by_role("link").get_attribute("href") == f"/runs/{imported['id']}"
    # What was imported can be exported without a reload.
    choices = page.locator("#export-run option")
    await choices.first.wait_for(state="attached")
    assert await choices.evaluate_all("o => o.map(x => x.value)") == [r["id"] for r in runs]
    await upload(page, "valuerank-cli.zip", folder_zip(corpus), "application/zip")
    await result.locator(".import-kind", has_text="Already here").wait_for()
    assert (await result.locator("li").inner_text()).endswith("(already here)")

    # A file of no kind the import takes: the API's code and hint, nothing written.
    await upload(page, "notes.txt", b"just some notes\n", "text/plain")
    error = page.locator("#import-upload [data-error]")
    await error.wait_for(state="visible")
    assert (await error.inner_text()).startswith("INVALID_IMPORT: notes.txt")
    assert "Hint:" in await error.inner_text()
    refused(ui, 422)
    assert len((await api(ui, "/api/definitions"))["definitions"]) == 1
    await checked(ui, "setup-import")

    # Downloads: the API's bytes under the API's names.
    run = await make_run(org_id, name="to export", decisions={"scripted:utilitarian": [1, 4]})
    await page.reload()
    await page.select_option("#export-run", run.id)
    name, data = await download(page, "#export-run-form")
    assert data == await api_export(ui, f"/api/export/run/{run.id}")
    assert name == f"run-{run.cli_run_id}.zip"
    await page.select_option("#export-definition", stored["id"])
    name, data = await download(page, "#export-definition-form")
    assert data == await api_export(ui, f"/api/export/definition/{stored['id']}")
    assert name.endswith(".md") and data.decode().startswith("---")
    await page.check("#export-ancestry")
    name, data = await download(page, "#export-definition-form")
    path = f"/api/export/definition/{stored['id']}"
    assert data == await api_export(ui, path, with_ancestry="true") and name.endswith(".zip")
    name, data = await download(page, "#export-workspace-form")
    assert data == await api_export(ui, "/api/export/workspace")
    assert name == "valuerank-workspace.zip"
    done = page.locator("#export-workspace-form [data-status]")
    assert await done.inner_text() == f"{name} downloaded ({len(data)} bytes)."
    await checked(ui, "setup-export")


async def test_a_new_token_joins_the_list_and_is_shown_once(ui: Browsing) -> None:
    page = await ui.open("/settings")
    before = await page.locator("#tokens tbody tr").count()
    await page.fill("#token-name", "from the page")
    await page.get_by_role("button", name="Create a token").click()
    secret = page.locator("#new-token")
    await secret.wait_for(state="visible")
    await page.locator("#tokens tbody tr", has_text="from the page").wait_for()
    listed = (await api(ui, "/api/tokens"))["tokens"]
    rows = page.locator("#tokens tbody tr")
    assert await rows.count() == len(listed) == before + 1
    names = [(await r.locator("td").first.inner_text()) for r in await rows.all()]
    assert names == [t["name"] or "–" for t in listed]
    new = next(t for t in listed if t["name"] == "from the page")
    value = await secret.inner_text()
    assert value.startswith(new["prefix"]) and new["prefix"].startswith("vrt_")
    row = page.locator("#tokens tbody tr", has_text="from the page")
    assert new["prefix"] in await row.inner_text()
    await checked(ui, "setup-token")
    await page.reload()  # shown once: gone from the page for good
    assert await page.locator("#new-token").is_hidden()
    assert value not in await page.content()
