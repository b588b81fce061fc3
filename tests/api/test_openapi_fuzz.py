"""Schemathesis against the real server's /openapi.json, authenticated as an admin: for every
operation, generated requests (valid and invalid) never get a 5xx, and every answer has a
status, media type and body the operation documents (the envelopes of api/schemas: its model
of `data` on success, the error envelope on every 4xx). Random ids mostly meet 404s:
test_openapi_contract checks the success bodies with real ids, and that a wrong body fails.
The server runs in this test's event loop; the fuzzer's blocking HTTP calls run in a thread
beside it."""

from __future__ import annotations

import asyncio
from typing import Any

import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from .conftest import TOKEN, Live, MakeRun

# Generated cases per operation and mode: enough to hit each parameter's edges, small enough
# to keep the suite quick (the fuzzer is deterministic: the same cases every run).
EXAMPLES = 6
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
]
# Streams never end on their own (the fuzzer would wait forever); they have their own tests.
STREAMING = ("/events/stream",)


def _fuzz(url: str) -> list[str]:
    """Fuzz every operation; returns the labels of those tested (failures raise)."""
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json", headers=AUTH)
    tested: list[str] = []
    for result in schema.get_all_operations():
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
            case.call_and_validate(base_url=url, headers=AUTH, checks=CHECKS, timeout=30)

        check()
        tested.append(operation.label)
    return tested


async def test_no_operation_answers_5xx_or_breaks_its_schema(live: Live, make_run: MakeRun) -> None:
    await make_run(live.org_id, decisions={"scripted:utilitarian": [1, 2, 5]})
    tested = await asyncio.to_thread(_fuzz, live.url)
    assert len(tested) >= 40, tested  # the schema lists the whole API, not a part of it
    assert "GET /api/runs/{run_id}" in tested


@pytest.mark.parametrize("path", ["/openapi.json"])
async def test_the_schema_is_served_and_valid(live: Live, path: str) -> None:
    async with live.client() as client:
        response = await client.get(path)
    assert response.status_code == 200
    schemathesis.openapi.from_dict(response.json()).validate()  # a valid OpenAPI document
