"""`valuerank demo --no-serve` on both backends: the bundled definition, a sampled run with the
jobs run in-process, and the per-model results. Scripted models keep it fast; the local
model's own tests are in tests/providers/test_local.py."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from importlib.util import find_spec
from typing import Any

import httpx
import pytest
from tests.conftest import missing_prerequisite

from valuerank.cli.demo_cmd import DEMO_MODELS
from valuerank.providers.local_model import DEFAULT_MODEL_PACKAGE

from .conftest import Invoke


@pytest.fixture(autouse=True)
def _fast_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VALUERANK_WORKER_POLL_SECONDS", "0.05")


def test_demo_runs_a_sampled_run_and_reports_per_model(cli: Invoke) -> None:
    out = cli(
        "demo", "--no-serve", "--json",
        "--model", "scripted:utilitarian", "--model", "scripted:refuser",
    )  # fmt: skip
    assert out.exit_code == 0, out.stderr
    data = out.json()
    assert data["status"] == "completed" and data["synthetic"] is True
    # 15 % of 27 scenarios, each asked in both scale orders, × 2 models
    assert data["progress"]["completed"] == data["progress"]["total"] == 16
    results = {r["model"]: r for r in data["results"]}
    assert results["scripted:utilitarian"]["decided"] == 8
    assert results["scripted:refuser"]["refusals"] == 8
    # The completed run was analysed by its own job before the demo went on.
    assert data["analysed"] is True
    # …and its value sensitivities are part of the report (4 scenarios: no intervals yet).
    stakes = data["valueSensitivity"]["scripted:utilitarian"]
    assert {d: e["value"] for d, e in stakes.items()} == {
        "Tenure": "Loyalty",
        "Harm": "Physical safety",
        "Cost": "Economics",
    }
    # 4 scenarios, each decided in both orders (8 transcripts), the order a covariate
    assert all((e["scenarios"], e["n"]) == (4, 8) for e in stakes.values())
    # No position bias in a scripted persona: the two orders agree exactly.
    order = data["robustness"]["scripted:utilitarian"]["orderEffect"]
    assert (order["value"], order["n"]) == (0.0, 4)
    entropy = data["robustness"]["scripted:utilitarian"]["consistency"]["entropy"]
    assert all(str(bits) == "0.0" for bits in entropy["perScenario"].values())
    assert all(
        e["coefficient"] is None for e in data["valueSensitivity"]["scripted:refuser"].values()
    )
    analysis = cli("analyze", data["id"], "--json").json()
    assert analysis["analysis"]["meta"]["cached"] is True
    # a second demo reuses the imported definition and adds a second run
    again = cli("demo", "--no-serve", "--json", "--model", "scripted:utilitarian")
    assert again.exit_code == 0, again.stderr
    assert len(cli("definitions", "list", "--json").json()) == 1
    assert len(cli("runs", "list", "--json").json()) == 2


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_demo_with_its_default_models_runs_the_local_model_through_the_pipeline(
    cli: Invoke,
) -> None:
    """The embedded default as a new user gets it: SQLite, the local model and two synthetic
    models, nothing passed but --no-serve."""
    missing = [name for name in ("xllamacpp", DEFAULT_MODEL_PACKAGE) if find_spec(name) is None]
    if missing:
        missing_prerequisite(f"the `local` extra is not installed (missing {missing})")
    out = cli("demo", "--no-serve", "--json")
    assert out.exit_code == 0, out.stderr
    data = out.json()
    assert data["models"] == list(DEMO_MODELS)
    assert data["status"] == "completed", data
    # 15 % of 27 scenarios, each asked in both scale orders, × 3 models
    assert data["progress"]["completed"] == data["progress"]["total"] == 24
    assert data["sample_seed"] is not None  # drawn, stored and shown
    results = {r["model"]: r for r in data["results"]}
    local = results["local:gemma3-270m"]
    assert local["synthetic"] is False  # a real model answered, not a script
    assert local["transcripts"] == 8
    # Every answer was parsed into a decision or recorded as a refusal: none lost on the way.
    assert local["decided"] + local["refusals"] == 8
    assert sum(local["decision_counts"].values()) == local["decided"]


def test_demo_without_the_key_of_a_hosted_model_says_what_to_set(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    out = cli("demo", "--no-serve", "--json", "--model", "anthropic:claude-sonnet-4-5")
    assert out.exit_code == 1
    assert out.json()["code"] == "MISSING_CREDENTIAL"
    assert "ANTHROPIC_API_KEY" in out.json()["error"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_demo_prints_a_url_that_lands_on_the_runs_analysis_logged_in(
    database_url: Any,
) -> None:
    """Zero set-up: no user, no token; the printed URL opens the demo run's analysis signed
    in (the demo serves on 127.0.0.1 with auto-login), computed already by the job the
    completed run queued (the page serves it from the cache)."""
    env = {**os.environ, "VALUERANK_DATABASE_URL": database_url.url}
    env["VALUERANK_WORKER_POLL_SECONDS"] = "0.05"
    env.pop("VALUERANK_AUTO_LOGIN", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "valuerank", "demo", "--model", "scripted:utilitarian",
        "--port", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    try:
        line, printed = "", []
        async with asyncio.timeout(120):
            while "to explore the run" not in line:
                raw = await proc.stdout.readline()
                assert raw, (await proc.stderr.read()).decode()
                line = raw.decode()
                printed.append(line)
        # The value sensitivities are printed before the URL (the table's title may wrap).
        assert "Value sensitivity" in "".join(printed) and "Loyalty" in "".join(printed)
        url = line.split("open ", 1)[1].split()[0]
        assert url.startswith("http://127.0.0.1:") and "token" not in url
        base, path = url.split("/runs/", 1)
        async with httpx.AsyncClient(base_url=base, timeout=10) as browser:
            runs = (await browser.get("/api/runs")).json()["data"]["runs"]
            assert [r["status"] for r in runs] == ["completed"]
            assert path == f"{runs[0]['id']}/analysis"
            page = await browser.get(url, headers={"Accept": "text/html"})
            assert page.status_code == 200 and "<h1>Analysis: " in page.text
            assert 'id="per-model"' in page.text and "scripted:utilitarian" in page.text
            assert "· cached" in page.text  # the analysis job ran before the URL was printed
            me = (await browser.get("/api/auth/me")).json()["data"]
            assert me["via"] == "local" and me["role"] == "admin"
        proc.send_signal(signal.SIGINT)
        async with asyncio.timeout(20):
            await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0
