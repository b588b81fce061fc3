"""The UI served by the real app on a real uvicorn server (127.0.0.1, ephemeral port; see
tests/servers.py), seeded through the services."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import update
from tests.conftest import missing_prerequisite
from tests.servers import running

import valuerank
from valuerank.accounts import Role, add_member, create_token
from valuerank.api import create_app
from valuerank.config import Settings
from valuerank.db import Database
from valuerank.db.tables import runs
from valuerank.definitions.service import import_definition
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.runs.config import RunConfig
from valuerank.runs.records import TranscriptRecord, insert_transcript
from valuerank.runs.service import Run, create_run, run_scenario_ids

# An admin's API token of the default organisation (provisioned by `site`).
TOKEN = "vrt_web-token-0123456789-abcdefghijklmnopqrstuvwxyz"
DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"


@dataclass
class Site:
    url: str

    def browser(self) -> httpx.AsyncClient:
        """A client that behaves like a browser: keeps cookies, asks for text/html."""
        return httpx.AsyncClient(
            base_url=self.url, headers={"Accept": "text/html"}, timeout=10, verify=False
        )


@pytest.fixture
async def site(db: Database, org_id: str) -> AsyncIterator[Site]:
    async with db.transaction() as conn:
        admin = await add_member(conn, org_id, "admin@example.test", Role.ADMIN)
        await create_token(conn, org_id, admin.user.id, name="web tests", token=TOKEN)
    settings = Settings(
        auto_login=False, public_read_prefixes=(), rate_limits_enabled=False, redis_url=None
    )
    app = create_app(db, org_id=org_id, settings=settings)
    async with running(app) as url:
        yield Site(url)


@pytest.fixture
async def browser(site: Site) -> AsyncIterator[httpx.AsyncClient]:
    """Logged in the way a person is: opening the printed `/?token=…` URL once."""
    async with site.browser() as client:
        login = await client.get("/", params={"token": TOKEN})
        assert login.status_code == 303 and client.cookies
        yield client


@pytest.fixture
def make_run(db: Database) -> Callable[..., Awaitable[Run]]:
    async def make(
        org: str,
        *,
        models: tuple[str, ...] = ("scripted:utilitarian",),
        name: str = "",
        decisions: dict[str, list[int | None]] | None = None,
        summary: str | None = None,
    ) -> Run:
        async with db.transaction() as conn:
            stored, _ = await import_definition(conn, org, DEMO.read_text(), source_file=DEMO.name)
            created = await create_run(
                conn,
                org,
                stored.version.id,
                RunConfig(models=models, sample_percentage=10),
                name=name,
            )
            run = created.run
            scenario_ids = await run_scenario_ids(conn, run.id)
            for model, codes in (decisions or {}).items():
                for i, code in enumerate(codes):
                    transcript = Transcript(
                        run_id=run.cli_run_id,
                        scenario_id=scenario_ids[i % len(scenario_ids)],
                        target_model=model,
                        subject="demo",
                        turns=(Turn(1, "scenario", "Decide.", f"Rating: {code}"),),
                    )
                    await insert_transcript(
                        conn,
                        org,
                        run.id,
                        TranscriptRecord(
                            transcript=transcript,
                            model=model,
                            sample_index=i // len(scenario_ids),
                            cost_usd=0.002,
                            decision_code=code,
                            decision_reason=None if code is not None else "refusal",
                            synthetic=model.startswith("scripted:"),
                        ),
                    )
            if summary is not None:
                await conn.execute(update(runs).where(runs.c.id == run.id).values(summary=summary))
        return run

    return make


# --- A real browser: Debian's chromium driven by Playwright (its own download is unreachable).

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
# Screenshots of every page a browser test visits, kept as CI artefacts (gitignored).
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


def chromium_path() -> str:
    """The browser to drive: VALUERANK_CHROMIUM, else Debian's chromium package."""
    chosen = os.environ.get("VALUERANK_CHROMIUM")
    candidates = (chosen,) if chosen else CHROMIUM_CANDIDATES
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    if importlib.util.find_spec("playwright") is None:
        missing_prerequisite("playwright is not installed (pip install -e '.[dev]')")
    missing_prerequisite("no chromium: apt-get install -y chromium, or set VALUERANK_CHROMIUM")


@dataclass
class Browsing:
    """A signed-in browser page on the site, which fails the test on any console error or
    uncaught exception, and saves screenshots by name."""

    site: Site
    page: Any  # playwright.async_api.Page
    errors: list[str]

    async def open(self, path: str) -> Any:
        await self.page.goto(self.site.url + path)
        return self.page

    async def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        target = SCREENSHOTS / f"{name}.png"
        await self.page.screenshot(path=str(target), full_page=True)
        return target


@pytest.fixture
async def ui(site: Site) -> AsyncIterator[Browsing]:
    """Chromium headless, signed in as the admin (through the printed `/?token=` URL), on a
    laptop-sized window."""
    executable = chromium_path()
    from playwright.async_api import async_playwright

    errors: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            context = await browser.new_context(viewport={"width": 1280, "height": 860})
            page = await context.new_page()
            page.set_default_timeout(15_000)
            page.on(
                "console",
                lambda message: errors.append(message.text) if message.type == "error" else None,
            )
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            await page.goto(f"{site.url}/?token={TOKEN}")
            yield Browsing(site, page, errors)
        finally:
            await browser.close()
    assert errors == [], f"the browser reported errors: {errors}"
