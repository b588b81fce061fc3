"""One typed settings path: the routes use the settings given to `create_app` (through the
app's context, `valuerank.api.context.AppContext`), whatever the process's environment says;
no route reads the environment's settings itself, and only the context reads `app.state`."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet
from tests.servers import running, serving

import valuerank
from valuerank.api import create_app
from valuerank.config import get_settings
from valuerank.db import Database
from valuerank.queue.settings import QueueSettings

from .conftest import TOKEN, api_settings, provision_admin

sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
SRC = Path(valuerank.__file__).parent
SCHEDULE = "/api/system/queue/maintenance/schedule-summary"
LOOPBACK_HOOK = "http://127.0.0.1:9/hook"


@pytest.fixture
def contrary_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An environment that says the opposite of what the tests' apps are given, and a
    process settings cache that would hand it to anyone who asked."""
    monkeypatch.setenv("VALUERANK_SECRET_KEY", Fernet.generate_key().decode())
    monkeypatch.setenv("VALUERANK_WEBHOOK_PRIVATE_TARGETS", "false")
    monkeypatch.setenv("VALUERANK_MAX_UPLOAD_BYTES", str(99 * 1024 * 1024))
    monkeypatch.setenv("VALUERANK_WORKER_MAINTENANCE_INTERVAL_SECONDS", "60")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _client(url: str) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    return httpx.AsyncClient(base_url=url, headers=headers, timeout=10, verify=False)


@sqlite_only
async def test_routes_use_the_settings_given_to_create_app_not_the_environment(
    db: Database, org_id: str, contrary_environment: None, assert_error: Any
) -> None:
    await provision_admin(db, org_id)
    settings = api_settings(
        secret_key=None, webhook_private_targets=True, max_upload_bytes=123 * 1024
    )
    given = QueueSettings(maintenance_interval_seconds=3600)
    app = create_app(db, org_id=org_id, settings=settings, queue_settings=given)
    async with running(app) as url, _client(url) as admin:
        # No key was given (the environment has one): a webhook secret cannot be stored.
        secret = await admin.post("/api/webhooks", json={"url": LOOPBACK_HOOK, "secret": "s3"})
        assert_error(secret, 503, "SECRET_KEY_MISSING")
        # Private targets were allowed (the environment refuses them).
        made = await admin.post("/api/webhooks", json={"url": LOOPBACK_HOOK})
        assert made.status_code == 201, made.text
        # The queue settings given, not the workers' environment.
        summary = (await admin.get(SCHEDULE)).json()["data"]
        assert summary["interval_seconds"] == 3600
        # The import page states the upload limit given.
        page = await admin.get("/exchange", headers={"Accept": "text/html"})
        assert page.status_code == 200 and f'data-max-bytes="{123 * 1024}"' in page.text


@sqlite_only
async def test_valuerank_serve_hands_the_app_the_workers_queue_settings(
    db: Database, org_id: str, contrary_environment: None
) -> None:
    await provision_admin(db, org_id)
    async with serving(db, org_id, settings=api_settings()) as served, _client(served.url) as c:
        summary = (await c.get(SCHEDULE)).json()["data"]
    assert summary["interval_seconds"] == 60  # VALUERANK_WORKER_MAINTENANCE_INTERVAL_SECONDS


# --- static: the routes' code ----------------------------------------------------------------

FACTORY = SRC / "api" / "app.py"  # create_app: the process's settings when none are given
CONTEXT = SRC / "api" / "context.py"  # the one reader of app.state


def _modules(*packages: str) -> list[Path]:
    return sorted(p for package in packages for p in (SRC / package).rglob("*.py"))


def _calls_get_settings(tree: ast.AST) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "get_settings")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "get_settings")
        )
    ]


def _app_state_uses(tree: ast.AST) -> list[int]:
    """`app.state` or `<…>.app.state`, read, written or handed to getattr: the app's
    untyped state."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "state"
        and (
            (isinstance(node.value, ast.Name) and node.value.id == "app")
            or (isinstance(node.value, ast.Attribute) and node.value.attr == "app")
        )
    ]


def test_no_route_reads_the_environments_settings() -> None:
    offenders = {
        str(path.relative_to(SRC)): lines
        for path in _modules("api", "web")
        if path != FACTORY and (lines := _calls_get_settings(ast.parse(path.read_text())))
    }
    assert offenders == {}, "routes take their settings from the app's context (ctx.settings)"


def test_only_the_context_reads_the_apps_state() -> None:
    offenders = {
        str(path.relative_to(SRC)): lines
        for path in _modules("api", "web", "cli")
        if path != CONTEXT and (lines := _app_state_uses(ast.parse(path.read_text())))
    }
    assert offenders == {}, "use valuerank.api.context.app_context(app) or the deps"


def test_the_api_imports_nothing_from_the_cli() -> None:
    offenders = []
    for path in _modules("api", "web"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            offenders += [
                f"{path.relative_to(SRC)}: {n}"
                for n in names
                if n == "valuerank.cli" or n.startswith("valuerank.cli.")  # not `client`
            ]
    assert offenders == []


def test_the_static_checks_see_what_they_look_for() -> None:
    """The readers above find the shapes they refuse (so an empty answer means something)."""
    sample = ast.parse(
        "s = get_settings()\nt = config.get_settings()\n"
        "a = request.app.state.valuerank\nb = getattr(app.state, 'x')\n"
        "c = request.state.principal\n"
    )
    assert _calls_get_settings(sample) == [1, 2]
    assert _app_state_uses(sample) == [3, 4]
    assert _app_state_uses(ast.parse(CONTEXT.read_text())) != []  # the one that does
