"""Schemathesis against the real server's /openapi.json, authenticated as an admin, with every
check the library has: for every operation, generated requests (valid and invalid) never get
a 5xx; every answer has a status, media type, headers and body the operation documents (the
envelopes of api/schemas: its model of `data` on success, the error envelope on every 4xx);
a request the schema allows is accepted and one it forbids is refused; a request without
credentials is 401; a 405 lists the path's methods in `Allow`. The checks' settings are the
repository's schemathesis.toml, as for `st run` (what no schema can state: opaque cursors,
files' contents, which models this install has). Random ids mostly meet 404s:
test_openapi_contract checks the success bodies with real ids, and that a wrong body fails.
The server runs in this test's event loop; the fuzzer's blocking HTTP calls run in a thread
beside it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import schemathesis
from cryptography.fernet import Fernet
from hypothesis import HealthCheck
from schemathesis import GenerationMode
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.core.result import Err

from valuerank.config import get_settings

from .conftest import TOKEN, Live, MakeRun

# Generated cases per operation and mode: enough to hit each parameter's edges, small enough
# to keep the suite quick (the fuzzer is deterministic: the same cases every run).
EXAMPLES = 6
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CONFIG = Path(__file__).resolve().parents[2] / "schemathesis.toml"
load_all_checks()
ALL_CHECKS = CHECKS.get_all()
# Streams never end on their own (the fuzzer would wait forever); they have their own tests.
STREAMING = ("/events/stream",)


def _fuzz(url: str) -> list[str]:
    """Fuzz every operation; returns the labels of those tested (failures raise)."""
    config = SchemathesisConfig.from_path(CONFIG)
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json", config=config, headers=AUTH)
    tested: list[str] = []
    for result in schema.get_all_operations():
        if isinstance(result, Err):  # the schema describes an operation it cannot load
            pytest.fail(f"invalid operation in /openapi.json: {result.err()}")
        operation = result.ok()
        if operation.path.endswith(STREAMING):
            continue
        # Valid requests and invalid ones (wrong types, missing fields): 4xx, never 5xx.
        strategy = operation.as_strategy(GenerationMode.POSITIVE) | operation.as_strategy(
            GenerationMode.NEGATIVE
        )

        @hypothesis.settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
            phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
        )
        @hypothesis.given(case=strategy)
        def check(case: Any) -> None:
            case.call_and_validate(base_url=url, headers=AUTH, checks=ALL_CHECKS, timeout=30)

        check()
        tested.append(operation.label)
    return tested


async def test_no_operation_answers_5xx_or_breaks_its_schema(
    live: Live, make_run: MakeRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server set up for storing API keys: without a secret key PUT /api/credentials/… is
    # 503 SECRET_KEY_MISSING by design, which not_a_server_error rightly counts as a failure.
    monkeypatch.setenv("VALUERANK_SECRET_KEY", Fernet.generate_key().decode())
    get_settings.cache_clear()
    await make_run(live.org_id, decisions={"scripted:utilitarian": [1, 2, 5]})
    try:
        tested = await asyncio.to_thread(_fuzz, live.url)
    finally:
        get_settings.cache_clear()
    assert len(tested) >= 40, tested  # the schema lists the whole API, not a part of it
    assert "GET /api/runs/{run_id}" in tested
    assert len(ALL_CHECKS) >= 13, ALL_CHECKS  # schemathesis's whole set, not a choice of it
    assert "positive_data_acceptance" in {check.__name__ for check in ALL_CHECKS}


@pytest.mark.parametrize("path", ["/openapi.json"])
async def test_the_schema_is_served_and_valid(live: Live, path: str) -> None:
    async with live.client() as client:
        response = await client.get(path)
    assert response.status_code == 200
    schemathesis.openapi.from_dict(response.json()).validate()  # a valid OpenAPI document
