"""The settings page fetched like a browser, on SQLite and PostgreSQL: models registry,
masked credentials, members and roles, tokens (never the token itself); admin controls only
for admins; nothing of another organisation."""

from __future__ import annotations

import httpx
import pytest

from valuerank.accounts import Role, add_member, create_token
from valuerank.db import Database
from valuerank.orgs import ensure_org
from valuerank.registry.service import seed_models

from .conftest import TOKEN, Browsing


async def test_settings_show_registry_credentials_members_tokens(
    browser: httpx.AsyncClient, db: Database, org_id: str
) -> None:
    async with db.transaction() as conn:
        await seed_models(conn)
        viewer = await add_member(conn, org_id, "viewer@example.test", Role.VIEWER)
        mine = await create_token(conn, org_id, viewer.user.id, name="viewer's")
        other = await ensure_org(conn, "other")
        stranger = await add_member(conn, other, "stranger@example.test", Role.ADMIN)
        await create_token(conn, other, stranger.user.id, name="stranger token")

    page = await browser.get("/settings")
    assert page.status_code == 200
    html = page.text
    assert 'id="models"' in html and "Weight" in html
    assert "viewer@example.test" in html and "admin@example.test" in html
    assert "stranger" not in html
    assert TOKEN not in html and mine.token not in html  # tokens are shown once, at creation
    assert "viewer&#39;s" in html and 'data-api="POST /api/tokens"' in html
    assert 'data-api="PUT /api/credentials/{provider}"' in html  # admin controls
    assert 'data-api="PATCH /api/users/{uid}"' in html
    # The install's admin (of the default organisation) changes the shared registry.
    assert 'data-api="PATCH /api/models/{mid}"' in html and 'id="model-form"' in html

    async with httpx.AsyncClient(
        base_url=str(browser.base_url), headers={"Accept": "text/html"}
    ) as as_viewer:
        assert (await as_viewer.get("/", params={"token": mine.token})).status_code == 303
        seen = (await as_viewer.get("/settings")).text
    assert "Signed in as viewer" in seen
    assert "PUT /api/credentials" not in seen and "PATCH /api/users" not in seen
    assert "/api/models/{mid}" not in seen and "an admin of the default organisation" in seen
    assert "viewer&#39;s" in seen and "web tests" not in seen  # only their own tokens


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a browser: one DB
async def test_create_a_token_and_add_a_member_in_a_browser(ui: Browsing) -> None:
    page = await ui.open("/settings")
    await page.fill("#token-name", "from the page")
    await page.get_by_role("button", name="Create a token").click()
    shown = page.locator("#new-token")
    await shown.wait_for(state="visible")
    assert (await shown.inner_text()).startswith("vrt_")
    await ui.screenshot("settings-token")

    await page.fill("#member-email", "new.member@example.test")
    await page.select_option("#member-role", "member")
    await page.get_by_role("button", name="Add a member").click()
    await page.locator("#members", has_text="new.member@example.test").wait_for()
    await page.reload()
    assert "from the page" in await page.locator("#tokens").inner_text()

    # The registry: a weight and the active flag changed in place, a model registered.
    row = page.locator('tr[data-model="scripted:contrarian"]')
    await row.get_by_label("Weight of scripted:contrarian").fill("0.25")
    await row.get_by_label("active (scripted:contrarian)").uncheck()
    await row.get_by_role("button", name="Save scripted:contrarian").click()
    await page.wait_for_load_state("load")
    await page.locator('tr[data-model="scripted:contrarian"]', has_text="0.25").wait_for()
    cells = await page.locator('tr[data-model="scripted:contrarian"] td').all_inner_texts()
    assert cells[2] == "0.25" and cells[3] == "no"
    await page.fill("#model-id", "openai:gpt-house-tuned")
    await page.fill("#model-weight", "0.5")
    await page.get_by_role("button", name="Register").click()
    await page.locator('tr[data-model="openai:gpt-house-tuned"]').wait_for()
    await page.fill("#model-id", "nowhere:thing")
    await page.get_by_role("button", name="Register").click()
    error = page.locator("#model-form [data-error]")
    await error.wait_for(state="visible")
    assert "unknown provider" in await error.inner_text()
    # The refused request is the one error the browser logged (the 422 it was shown).
    assert len(ui.errors) == 1 and "422" in ui.errors[0], ui.errors
    ui.errors.clear()
    await ui.screenshot("settings")
