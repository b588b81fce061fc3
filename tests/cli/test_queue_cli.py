"""`valuerank queue …`, `valuerank worker --burst` and `valuerank maintenance run` on each
backend, through the real Typer app; status, pause, resume and retry-failed also against a
live server (`cli_both`), over jobs put in the database as a run would (`queue enqueue` works
on the database only)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from sqlalchemy import update

from valuerank.client import API_TOKEN_ENV, API_URL_ENV
from valuerank.config import get_settings
from valuerank.db import Database
from valuerank.db.tables import jobs
from valuerank.orgs import create_org
from valuerank.queue import JobSpec, enqueue_many

from .conftest import Invoke

Enqueue = Callable[..., Coroutine[Any, Any, list[str]]]


@pytest.fixture
def enqueue(db: Database, org_id: str) -> Enqueue:
    """Put `count` jobs of the test's organisation on the queue (their ids); `failed`: as a
    worker leaves a job whose attempts are spent."""

    async def put(
        count: int = 1,
        *,
        kind: str = "noop",
        partition: str | None = None,
        provider: str | None = None,
        failed: bool = False,
        org: str | None = None,
    ) -> list[str]:
        specs = [
            JobSpec(kind=kind, org_id=org or org_id, partition=partition, provider=provider)
            for _ in range(count)
        ]
        async with db.transaction() as conn:
            ids = [r.job_id for r in await enqueue_many(conn, specs)]
            if failed:
                await conn.execute(update(jobs).where(jobs.c.id.in_(ids)).values(status="failed"))
        return ids

    return put


def _status(cli: Invoke) -> dict[str, int]:
    out = cli("queue", "status", "--json")
    assert out.exit_code == 0, out.stderr
    counts: dict[str, int] = out.json()["counts"]
    return counts


def _burst(cli: Invoke) -> dict[str, int]:
    out = cli("worker", "--burst", "--json")
    assert out.exit_code == 0, out.stderr
    summary: dict[str, int] = out.json()
    return summary


def test_enqueue_is_idempotent_with_an_item_key(cli: Invoke) -> None:
    first = cli("queue", "enqueue", "noop", "--item-key", "k1", "--partition", "p", "--json")
    assert first.exit_code == 0, first.stderr
    assert first.json()["enqueued"] == 1
    [job] = first.json()["jobs"]
    assert job["enqueued"] is True and job["item_key"] == "k1" and job["partition"] == "p"

    again = cli("queue", "enqueue", "noop", "--item-key", "k1", "--partition", "p", "--json")
    assert again.exit_code == 0, again.stderr
    assert again.json()["enqueued"] == 0 and again.json()["existing"] == 1
    [same] = again.json()["jobs"]
    assert same["enqueued"] is False and same["job_id"] == job["job_id"]
    assert _status(cli)["queued"] == 1


def test_enqueue_reads_the_seeds_kind_names_as_ours(cli: Invoke) -> None:
    for seed, ours in (("probe:scenario", "probe"), ("summarize:run", "summarize")):
        out = cli("queue", "enqueue", seed, "--partition", "p", "--json")
        assert out.exit_code == 0, out.stderr
        assert out.json()["kind"] == ours
    assert cli("queue", "enqueue", "noop", "--json").json()["kind"] == "noop"


def test_enqueue_count_and_status_counts(cli: Invoke) -> None:
    out = cli("queue", "enqueue", "noop", "--count", "3", "--item-key", "n", "--json")
    assert out.exit_code == 0, out.stderr
    assert [j["item_key"] for j in out.json()["jobs"]] == ["n-0", "n-1", "n-2"]
    counts = _status(cli)
    assert counts["queued"] == 3 and counts["succeeded"] == 0
    text = cli("queue", "status")
    assert text.exit_code == 0 and "queued: 3" in text.stdout


def test_burst_worker_drains_and_reports_counts(cli: Invoke) -> None:
    assert cli("queue", "enqueue", "noop", "--count", "3").exit_code == 0
    assert cli("queue", "enqueue", "sleep", "--payload", '{"seconds": 0.01}').exit_code == 0
    summary = _burst(cli)
    assert summary["burst"] is True
    assert summary["claimed"] == 4 and summary["succeeded"] == 4 and summary["failed"] == 0
    counts = _status(cli)
    assert counts["succeeded"] == 4 and counts["queued"] == 0 and counts["running"] == 0
    assert _burst(cli)["claimed"] == 0  # nothing left


def test_pause_stops_claiming_and_resume_lets_it(cli: Invoke) -> None:
    assert cli("queue", "enqueue", "noop", "--count", "2").exit_code == 0
    paused = cli("queue", "pause", "--json")
    assert paused.exit_code == 0, paused.stderr
    assert paused.json() == {"target": "queue", "paused": True, "changed": True}
    assert cli("queue", "pause", "--json").json()["changed"] is False  # already paused

    assert _burst(cli)["claimed"] == 0
    status = cli("queue", "status", "--json").json()
    assert status["paused"] is True and status["counts"]["queued"] == 2

    assert cli("queue", "resume", "--json").json()["changed"] is True
    assert _burst(cli)["succeeded"] == 2
    assert _status(cli)["succeeded"] == 2


def test_pausing_a_provider_holds_only_its_jobs(cli: Invoke) -> None:
    for provider in ("openai", "anthropic"):
        out = cli("queue", "enqueue", "noop", "--count", "2", "--provider", provider)
        assert out.exit_code == 0, out.stderr
    out = cli("queue", "pause", "--provider", "openai", "--json")
    assert out.exit_code == 0, out.stderr
    assert out.json() == {"target": "provider openai", "paused": True, "changed": True}

    assert _burst(cli)["succeeded"] == 2
    providers = cli("queue", "status", "--json").json()["providers"]
    assert providers["openai"]["queue_length"] == 2 and providers["openai"]["paused"] is True
    assert providers["anthropic"]["queue_length"] == 0

    assert cli("queue", "resume", "--provider", "openai").exit_code == 0
    assert _burst(cli)["succeeded"] == 2
    assert _status(cli)["succeeded"] == 4


def test_retry_failed_requeues_a_poison_job(cli: Invoke) -> None:
    out = cli(
        "queue",
        "enqueue",
        "fail",
        "--payload",
        '{"message": "boom"}',
        "--partition",
        "run-1",
        "--max-attempts",
        "1",
    )
    assert out.exit_code == 0, out.stderr
    assert _burst(cli)["failed"] == 1
    assert _status(cli)["failed"] == 1

    retried = cli("queue", "retry-failed", "--partition", "run-1", "--json")
    assert retried.exit_code == 0, retried.stderr
    assert retried.json()["requeued"] == 1
    counts = _status(cli)
    assert counts["failed"] == 0 and counts["queued"] == 1
    assert _burst(cli)["failed"] == 1  # still poison: fails again, nothing lost

    none_left = cli("queue", "retry-failed", "--partition", "other", "--json")
    assert none_left.exit_code == 0 and none_left.json()["requeued"] == 0


def test_retry_failed_needs_exactly_one_target(cli: Invoke) -> None:
    out = cli("queue", "retry-failed")
    assert out.exit_code == 1
    assert "--partition" in out.stderr


def test_maintenance_run_records_a_run(cli: Invoke) -> None:
    out = cli("maintenance", "run", "--json")
    assert out.exit_code == 0, out.stderr
    run = out.json()
    assert run["status"] == "succeeded" and run["id"]
    assert isinstance(run["actions"], dict)
    text = cli("maintenance", "run")
    assert text.exit_code == 0 and "maintenance succeeded in" in text.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--payload", "{not json"), "--payload is not JSON"),
        (("--payload", "[1, 2]"), "--payload must be a JSON object"),
    ],
)
def test_bad_payload_exits_1_and_writes_nothing(
    cli: Invoke, args: tuple[str, ...], message: str
) -> None:
    out = cli("queue", "enqueue", "noop", *args)
    assert out.exit_code == 1
    assert message in out.stderr
    as_json = cli("queue", "enqueue", "noop", *args, "--json")
    assert as_json.exit_code == 1
    assert as_json.json()["success"] is False and message in as_json.json()["error"]
    assert sum(_status(cli).values()) == 0


def test_unknown_priority_exits_1_and_writes_nothing(cli: Invoke) -> None:
    out = cli("queue", "enqueue", "noop", "--priority", "urgent")
    assert out.exit_code == 1
    assert "urgent" in out.stderr and "priority" in out.stderr.lower()
    assert sum(_status(cli).values()) == 0


def test_enqueue_text_output(cli: Invoke) -> None:
    out = cli("queue", "enqueue", "noop", "--item-key", "t", "--payload", json.dumps({"a": 1}))
    assert out.exit_code == 0, out.stderr
    assert "enqueued 1 noop job(s), 0 already there" in out.stdout


def test_status_shows_each_providers_rate_limit(cli_both: Invoke, enqueue: Enqueue) -> None:
    cli = cli_both
    asyncio.run(enqueue(2, provider="openai"))
    assert cli("queue", "limits", "set", "openai", "--rpm", "500").exit_code == 0
    status = cli("queue", "status", "--json")
    assert status.exit_code == 0, status.stderr
    openai = status.json()["providers"]["openai"]
    assert openai["queue_length"] == 2 and openai["rate_limit"] == "open"
    assert openai["blocked_until"] is None
    assert [(b["model"], b["rpm_limit"]) for b in openai["buckets"]] == [("", 500)]
    table = cli("queue", "status")
    assert table.exit_code == 0 and "rate limit" in table.stdout and "open" in table.stdout


def test_pause_resume_and_status_both_ways(cli_both: Invoke, enqueue: Enqueue) -> None:
    asyncio.run(enqueue(2, provider="openai"))
    paused = cli_both("queue", "pause", "--json")
    assert paused.exit_code == 0, paused.stdout + paused.stderr
    assert paused.json() == {"target": "queue", "paused": True, "changed": True}
    assert cli_both("queue", "pause", "--json").json()["changed"] is False
    status = cli_both("queue", "status", "--json").json()
    assert status["paused"] is True and status["counts"]["queued"] == 2
    text = cli_both("queue", "status")
    assert text.exit_code == 0 and "paused" in text.stdout and "queued: 2" in text.stdout
    assert cli_both("queue", "status", "--all-orgs", "--json").json()["counts"]["queued"] == 2
    resumed = cli_both("queue", "resume")
    assert resumed.exit_code == 0 and "queue resumed" in resumed.stdout

    provider = cli_both("queue", "pause", "--provider", "openai", "--json")
    assert provider.json() == {"target": "provider openai", "paused": True, "changed": True}
    providers = cli_both("queue", "status", "--json").json()["providers"]
    assert providers["openai"]["paused"] is True and providers["openai"]["queue_length"] == 2
    again = cli_both("queue", "resume", "--provider", "openai", "--json").json()
    assert again == {"target": "provider openai", "paused": False, "changed": True}


def test_retry_failed_both_ways(cli_both: Invoke, enqueue: Enqueue) -> None:
    asyncio.run(enqueue(2, kind="fail", partition="part-1", failed=True))
    [one] = asyncio.run(enqueue(kind="fail", partition="part-2", failed=True))
    retried = cli_both("queue", "retry-failed", "--partition", "part-1", "--json")
    assert retried.exit_code == 0, retried.stdout + retried.stderr
    assert retried.json()["requeued"] == 2 and len(retried.json()["job_ids"]) == 2
    alone = cli_both("queue", "retry-failed", "--job", one, "--json")
    assert alone.exit_code == 0, alone.stdout + alone.stderr
    assert alone.json() == {"requeued": 1, "job_ids": [one]}
    counts = cli_both("queue", "status", "--json").json()["counts"]
    assert counts["failed"] == 0 and counts["queued"] == 3
    none_left = cli_both("queue", "retry-failed", "--partition", "other")
    assert none_left.exit_code == 0 and "requeued 0 failed job(s)" in none_left.stdout


def test_another_organisations_job_is_not_found(
    cli_both: Invoke, enqueue: Enqueue, db: Database
) -> None:
    async def other_org() -> str:
        async with db.transaction() as conn:
            return (await create_org(conn, "Other")).id

    [foreign] = asyncio.run(enqueue(kind="fail", failed=True, org=asyncio.run(other_org())))
    out = cli_both("queue", "retry-failed", "--job", foreign, "--json")
    # Another organisation's job is no job of this one, on the database as on a server.
    assert out.exit_code == 1 and out.json()["code"] == "NOT_FOUND", out.stdout
    assert cli_both("queue", "status", "--json").json()["counts"]["failed"] == 0


def test_enqueue_works_on_the_database_with_a_server_set(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(API_URL_ENV, "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv(API_TOKEN_ENV, "vrt_unused")
    get_settings.cache_clear()
    out = cli("queue", "enqueue", "noop", "--json")
    assert out.exit_code == 0, out.stdout + out.stderr
    assert out.json()["enqueued"] == 1
    assert "`valuerank queue enqueue` works on the database" in out.stderr
