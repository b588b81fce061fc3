"""Signing in and out in the UI, on SQLite and PostgreSQL: a browser asking for a page without
credentials is sent to `/login` (and back afterwards, never to another site), the sign-in page
and its static files are open, the header says who is signed in; and in Chromium: a wrong
password refused, the right one, switching organisation, signing out."""

from __future__ import annotations

import pytest

from valuerank.accounts import Role, add_member
from valuerank.db import Database
from valuerank.orgs import ensure_org

from .conftest import Browsing, Site

PASSWORD = "correct horse battery staple"


async def make_user(db: Database, org_id: str, email: str = "ada@example.test") -> str:
    """A user with a password, admin of the default organisation and viewer of "lab"."""
    async with db.transaction() as conn:
        member = await add_member(conn, org_id, email, Role.ADMIN, name="Ada", password=PASSWORD)
        lab = await ensure_org(conn, "lab", name="Lab")
        await add_member(conn, lab, email, Role.VIEWER)
    return member.user.id


async def test_browsers_are_sent_to_sign_in_and_come_back(
    site: Site, db: Database, org_id: str
) -> None:
    await make_user(db, org_id)
    async with site.browser() as stranger:
        sent = await stranger.get("/queue", params={"view": "all"})
        assert sent.status_code == 303
        assert sent.headers["location"] == "/login?next=%2Fqueue%3Fview%3Dall"
        page = await stranger.get(sent.headers["location"])
        assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
        assert 'id="login-form"' in page.text and 'data-next="/queue?view=all"' in page.text
        assert 'autocomplete="current-password"' in page.text
        assert 'aria-label="Main"' not in page.text  # no navigation before signing in
        # The page's style and script load without credentials; nothing else does.
        for asset in ("/static/app.css", "/static/shell.css", "/static/auth.js"):
            assert (await stranger.get(asset)).status_code == 200
        api = await stranger.get("/api/runs", headers={"Accept": "application/json"})
        assert api.status_code == 401  # machines get the error, not a redirect
        assert api.json()["code"] == "UNAUTHORIZED"
        # `next` goes back to this site only.
        for target in ("//evil.example/x", "https://evil.example", "/\\evil.example", "x"):
            html = (await stranger.get("/login", params={"next": target})).text
            assert 'data-next="/"' in html, target

        signed = await stranger.post(
            "/api/auth/login", json={"email": "ada@example.test", "password": PASSWORD}
        )
        assert signed.status_code == 200
        queue = await stranger.get("/queue")
        assert queue.status_code == 200 and "<h1>Queue</h1>" in queue.text
        assert 'id="sign-out"' in queue.text and 'data-via="session"' in queue.text
        assert 'aria-current="page">Queue' in queue.text
        already = await stranger.get("/login")
        assert 'id="login-current"' in already.text  # signed in: says so, offers to go on

        # A session that ended (signed out elsewhere): back to the sign-in page, saying why.
        csrf = signed.json()["data"]["csrf_token"]
        cookies = dict(stranger.cookies)
        out = await stranger.post("/api/auth/logout", headers={"X-CSRF-Token": csrf})
        assert out.json()["data"]["signed_out"] is True
    async with site.browser() as stale:
        stale.cookies.update(cookies)
        ended = await stale.get("/settings")
        assert ended.status_code == 303
        assert ended.headers["location"] == "/login?next=%2Fsettings&expired=1"
        assert 'id="login-expired"' in (await stale.get(ended.headers["location"])).text


async def test_a_bad_token_in_the_url_is_an_error_page_with_a_way_to_sign_in(site: Site) -> None:
    async with site.browser() as stranger:
        bad = await stranger.get("/queue", params={"token": "vrt_" + "x" * 43})
        assert bad.status_code == 401 and "invalid access token" in bad.text
        assert 'href="/login"' in bad.text


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a browser: one DB
async def test_sign_in_switch_organisation_and_sign_out_in_a_browser(
    ui: Browsing, db: Database, org_id: str
) -> None:
    await make_user(db, org_id)
    page = ui.page
    await page.context.clear_cookies()  # a new visitor
    await ui.open("/queue")
    await page.wait_for_url("**/login?next=%2Fqueue")
    await ui.screenshot("login")

    # A wrong password: refused, said clearly, the password field emptied and focused.
    await page.get_by_label("Email").fill("ada@example.test")
    await page.get_by_label("Password").fill("not the password")
    await page.keyboard.press("Enter")
    error = page.locator("#login-error")
    await error.wait_for()
    assert "the email or the password is wrong" in await error.inner_text()
    assert await page.get_by_label("Password").input_value() == ""
    assert await page.evaluate("document.activeElement.id") == "login-password"
    # The refused request's 401 is the only console message (Chromium logs failed loads).
    assert len(ui.errors) == 1 and "401" in ui.errors[0]
    ui.errors.clear()
    await ui.screenshot("login-refused")

    # The right one, with the keyboard only: back to the page that asked for it.
    await page.get_by_label("Password").fill(PASSWORD)
    await page.keyboard.press("Enter")
    await page.wait_for_url("**/queue")
    who = page.locator("#account-who")
    await who.get_by_text("ada@example.test").wait_for()
    assert "default (admin)" in await who.inner_text()
    await page.get_by_role("button", name="Pause this organisation's jobs").wait_for()
    await ui.screenshot("signed-in-header")

    # Two organisations: the switcher lists both; switching keeps the section.
    switcher = page.get_by_label("Organisation", exact=True)
    await switcher.wait_for()
    assert await switcher.locator("option").all_inner_texts() == [
        "default (admin)",
        "Lab (viewer)",
    ]
    await switcher.select_option("lab")
    await page.get_by_role("button", name="Switch").click()
    await who.get_by_text("Lab (viewer)").wait_for()
    assert page.url.endswith("/queue")
    assert await page.get_by_role("button", name="Pause this organisation's jobs").count() == 0
    await page.locator("#outbox-admins-only").wait_for()  # a viewer sees the status only
    await ui.screenshot("switched-organisation")

    await page.set_viewport_size({"width": 390, "height": 844})
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390
    await ui.screenshot("signed-in-header-phone")
    await page.set_viewport_size({"width": 1280, "height": 860})

    await page.get_by_role("button", name="Sign out").click()
    await page.wait_for_url("**/login?signed_out=1")
    await page.locator("#login-signed-out").wait_for()
    await ui.open("/settings")  # the session is over
    await page.wait_for_url("**/login?next=%2Fsettings")
    await page.set_viewport_size({"width": 390, "height": 844})
    await ui.screenshot("login-phone")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_one_organisation_shows_no_switcher(ui: Browsing) -> None:
    page = await ui.open("/settings")
    await page.locator("#account-who").get_by_text("admin@example.test").wait_for()
    assert await page.locator("#org-switch").is_hidden()
    assert await page.get_by_role("button", name="Sign out").is_visible()
