"""The deployment files (`deploy/`) cannot drift from the CLI, the settings or the docs: every
`valuerank` command they run parses against the real command tree, every VALUERANK_* variable
they name is a real setting, the systemd units parse and restart, and docs/deployment.md
shows each file as it is."""

from __future__ import annotations

import configparser
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.docs.doc_parsing import DOCS, REPO, fenced_blocks
from tests.docs.test_docs import _make_contexts

from valuerank.cli.worker_settings import ENV_PREFIX, WorkerSettings
from valuerank.config import Settings

DEPLOY = REPO / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
UNITS = sorted((DEPLOY / "systemd").glob("*.service"))
# systemd's specifiers in the units, as one instance would have them.
SPECIFIERS = {"%i": "8001", "%H": "worker-1", "%%": "%"}


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return loaded


def _unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
    parser.read_string(path.read_text(encoding="utf-8"), source=str(path))
    return parser


def _command_words(command: str | list[str]) -> list[str]:
    return shlex.split(command) if isinstance(command, str) else [str(w) for w in command]


def _valuerank_commands() -> list[tuple[str, list[str]]]:
    """(where, arguments) of every `valuerank …` the compose file and the units run."""
    found = []
    for name, service in _compose()["services"].items():
        words = _command_words(service.get("command", []))
        if words and Path(words[0]).name == "valuerank":
            found.append((f"compose.yaml: {name}", words[1:]))
    for path in UNITS:
        for key in ("ExecStart", "ExecStartPre", "ExecStop", "ExecReload"):
            line = _unit(path)["Service"].get(key)
            if line is None:
                continue
            for specifier, value in SPECIFIERS.items():
                line = line.replace(specifier, value)
            words = shlex.split(line.lstrip("-@:+!"))
            if Path(words[0]).name == "valuerank":
                found.append((f"{path.name}: {key}", words[1:]))
    return found


def test_the_files_run_worker_serve_and_migrations() -> None:
    """The parser below finds what it should (an empty list would pass everything)."""
    run = {(place.split(":")[0], words[0]) for place, words in _valuerank_commands()}
    assert {
        ("compose.yaml", "worker"),
        ("compose.yaml", "serve"),
        ("compose.yaml", "db"),
        ("valuerank-worker@.service", "worker"),
        ("valuerank-serve@.service", "serve"),
    } <= run


@pytest.mark.parametrize(
    ("place", "args"), _valuerank_commands(), ids=[p for p, _ in _valuerank_commands()]
)
def test_every_valuerank_command_parses(place: str, args: list[str]) -> None:
    _make_contexts(args)  # a usage error (unknown command or option, bad value) raises


def test_the_compose_file_scales_workers_and_servers_behind_a_balancer() -> None:
    services = _compose()["services"]
    assert services["worker"]["deploy"]["replicas"] >= 2
    assert services["serve"]["deploy"]["replicas"] >= 2
    assert "--no-work" in _command_words(services["serve"]["command"])
    assert "./Caddyfile:/etc/caddy/Caddyfile:ro" in services["lb"]["volumes"]
    # Workers and servers wait for the migrations, which wait for PostgreSQL.
    for name in ("worker", "serve"):
        assert services[name]["depends_on"]["migrate"]["condition"] == (
            "service_completed_successfully"
        )
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    # Every ValueRank process gets the same database URL and, but the migration, the same key.
    urls = {services[n]["environment"]["VALUERANK_DATABASE_URL"] for n in ("worker", "serve")}
    assert urls == {services["migrate"]["environment"]["VALUERANK_DATABASE_URL"]}
    keys = {services[n]["environment"]["VALUERANK_SECRET_KEY"] for n in ("worker", "serve")}
    assert len(keys) == 1


def _setting_names() -> set[str]:
    names = {f"VALUERANK_{field.upper()}" for field in Settings.model_fields}
    return names | {f"{ENV_PREFIX}{field.upper()}" for field in WorkerSettings.model_fields}


@pytest.mark.parametrize("path", sorted(p for p in DEPLOY.rglob("*") if p.is_file()), ids=str)
def test_every_variable_named_is_a_setting(path: Path) -> None:
    named = set(re.findall(r"\bVALUERANK_[A-Z0-9_]+", path.read_text(encoding="utf-8")))
    variables = {name for name in named if not name.endswith("_")}  # not `VALUERANK_WORKER_*`
    assert variables - _setting_names() == set(), f"{path.relative_to(REPO)}: not settings"


@pytest.mark.parametrize("path", UNITS, ids=lambda p: p.name)
def test_the_units_parse_and_restart(path: Path) -> None:
    unit = _unit(path)
    assert {"Unit", "Service", "Install"} <= set(unit.sections())
    service = unit["Service"]
    assert service["ExecStart"].startswith("/")  # systemd wants an absolute path
    assert service["Restart"] in {"always", "on-failure"}
    assert service["EnvironmentFile"] == "/etc/valuerank/valuerank.env"
    assert unit["Install"]["WantedBy"] == "multi-user.target"


def test_the_worker_unit_waits_longer_than_the_workers_grace() -> None:
    """systemd kills a worker still draining after TimeoutStopSec: it must exceed the grace
    the worker gives its running jobs on SIGTERM."""
    stop = float(_unit(DEPLOY / "systemd/valuerank-worker@.service")["Service"]["TimeoutStopSec"])
    assert stop > WorkerSettings().shutdown_grace_seconds


def test_the_deployment_page_shows_every_file_as_it_is() -> None:
    """Each file is quoted in docs/deployment.md in a block titled with its path."""
    shown = {}
    for block in fenced_blocks(DOCS / "deployment.md"):
        title = re.search(r'title="(deploy/[^"]+)"', block.info)
        if title:
            shown[title.group(1)] = "\n".join(line for _, line in block.lines) + "\n"
    files = sorted(p for p in DEPLOY.rglob("*") if p.is_file())
    assert sorted(shown) == [str(p.relative_to(REPO)) for p in files]
    for path in files:
        name = str(path.relative_to(REPO))
        assert shown[name] == path.read_text(encoding="utf-8"), f"{name} differs from its quote"
