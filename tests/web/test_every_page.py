"""Every page of the site in Debian's chromium, at 1280×900 and at 390×844 (a phone): signed
out (the sign-in page), then signed in with a password as a member of two organisations (so
the header carries the organisation switcher), every page route with data on it, and the
error page. On each: a full-page screenshot under `test-artifacts/screenshots/every-page/`,
no serious or critical axe violation, nothing wider than the window (lists become cards,
wide tables scroll inside a focusable region), model ids wrapping only after a ':' or '/',
and at 1280 the navigation on one line. Failures name the page and what is wrong with it;
a page route of `valuerank.web.pages_*` that the seeded site does not open fails the test."""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import Any
from urllib.parse import urlsplit

import pytest

import valuerank.web
from valuerank.db import Database

from .accessibility import serious_violations
from .conftest import Browsing
from .site_seeding import Credentials, seed_site

SIZES = {1280: {"width": 1280, "height": 900}, 390: {"width": 390, "height": 844}}
# GET routes of the page routers that are not pages: the fragment the run page swaps in, and
# the report, a file to download.
NOT_PAGES = {"/runs/{run_id}/sections", "/runs/{run_id}/report.html"}


def page_routes() -> list[str]:
    """Every page route: the GET routes of each `valuerank.web.pages_*` router."""
    routes = []
    for found in pkgutil.iter_modules(valuerank.web.__path__):
        if found.name.startswith("pages_"):
            module = importlib.import_module(f"valuerank.web.{found.name}")
            routes += [r.path for r in module.router.routes if "GET" in r.methods]
    return [route for route in routes if route not in NOT_PAGES]


def unvisited(routes: list[str], paths: list[str]) -> list[str]:
    """The routes none of `paths` opens (a `{parameter}` stands for one path segment)."""
    visited = {urlsplit(path).path for path in paths}

    def opened(route: str) -> bool:
        pattern = re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(route))
        return any(re.fullmatch(pattern, path) for path in visited)

    return [route for route in routes if not opened(route)]


LAYOUT = """() => {
  const width = window.innerWidth;
  const all = [...document.body.querySelectorAll('*')];
  const overflowX = (e) => getComputedStyle(e).overflowX;
  const name = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
    (e.classList.length ? '.' + [...e.classList].join('.') : '');
  // What sticks out past the window's right edge, unless a box that clips or scrolls holds it.
  const clips = (e) => ['auto', 'scroll', 'hidden', 'clip'].includes(overflowX(e));
  const held = (e) => {
    for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      if (clips(p)) return true;
    }
    return false;
  };
  const past = all.filter(e => e.getBoundingClientRect().right > width + 1 && !held(e));
  // A box that scrolls sideways is a region a keyboard can reach and a screen reader names.
  const region = (e) => e.getAttribute('tabindex') === '0' &&
    e.getAttribute('role') === 'region' &&
    (e.hasAttribute('aria-label') || e.hasAttribute('aria-labelledby'));
  const sideways = all.filter(e => ['auto', 'scroll'].includes(overflowX(e)) &&
    !e.matches('textarea, select, input') && e.scrollWidth > e.clientWidth + 1 && !region(e));
  // A model id's parts (provider, name) never break inside: one line each.
  const broken = [...document.querySelectorAll('.model-id > span:not(.long)')].filter(
    s => s.getBoundingClientRect().height > 1.8 * parseFloat(getComputedStyle(s).fontSize));
  const nav = document.querySelector('header.top nav');
  const link = nav && nav.querySelector('a');
  const header = document.querySelector('header.top');
  return {
    scrollWidth: document.documentElement.scrollWidth,
    width,
    past: past.map(name).slice(0, 6),
    sideways: sideways.map(name).slice(0, 6),
    brokenIds: broken.map(s => s.textContent).slice(0, 6),
    navLines: link ? nav.getBoundingClientRect().height / link.getBoundingClientRect().height : 0,
    header: header ? header.scrollWidth - header.clientWidth : 0,
  };
}"""


async def check_page(ui: Browsing, name: str, width: int) -> list[str]:
    """Screenshot the page as it is, then list what is wrong with it."""
    page = ui.page
    await ui.screenshot(f"every-page/{name}-{width}")
    problems = list(await serious_violations(page))
    layout: dict[str, Any] = await page.evaluate(LAYOUT)
    if layout["scrollWidth"] > layout["width"]:
        problems.append(
            f"the page is {layout['scrollWidth']} px wide in a {layout['width']} px window; "
            f"past the edge: {layout['past']}"
        )
    if layout["sideways"]:
        problems.append(
            f"clipped: scrolls sideways outside a labelled region: {layout['sideways']}"
        )
    if layout["header"] > 0:
        problems.append(f"the header overflows by {layout['header']} px")
    if layout["brokenIds"]:
        problems.append(f"model ids broken mid-word: {layout['brokenIds']}")
    if width >= 1280 and layout["navLines"] >= 1.5:
        problems.append(f"the navigation wraps ({layout['navLines']:.1f} link heights tall)")
    problems += [f"console: {error}" for error in ui.errors]
    ui.errors.clear()  # each page answers for its own
    return problems


async def sign_in(ui: Browsing, account: Credentials) -> None:
    page = ui.page
    await page.get_by_label("Email").fill(account.email)
    await page.get_by_label("Password").fill(account.password)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url(ui.site.url + "/")


async def open_signed_in(ui: Browsing, path: str) -> None:
    """The page loaded, its scripts done, the header filled in (the switcher shown)."""
    page = await ui.open(path)
    await page.locator("#org-select").wait_for(state="visible")
    await page.wait_for_load_state("networkidle")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a browser: one DB
@pytest.mark.parametrize("width", sorted(SIZES, reverse=True))
async def test_every_page_at_laptop_and_phone_width(
    ui: Browsing, db: Database, org_id: str, width: int
) -> None:
    pages, account = await seed_site(db, org_id)
    assert unvisited(page_routes(), ["/login", *pages.values()]) == []  # a new page: seed it
    page = ui.page
    await page.set_viewport_size(SIZES[width])
    problems: dict[str, list[str]] = {}

    await page.context.clear_cookies()  # signed out: the sign-in page
    await ui.open("/login")
    problems["login"] = await check_page(ui, "login", width)
    await sign_in(ui, account)

    for name, path in pages.items():
        await open_signed_in(ui, path)
        problems[name] = await check_page(ui, name, width)

    await open_signed_in(ui, "/runs/no-such-run")
    assert await page.locator("h1").inner_text() != ""
    # Chromium logs the 404 of the page itself as a console error: the only one expected.
    assert len(ui.errors) == 1 and "404" in ui.errors[0], ui.errors
    ui.errors.clear()
    problems["not-found"] = await check_page(ui, "not-found", width)

    assert {name: found for name, found in problems.items() if found} == {}
