"""`valuerank validation …` on SQLite and PostgreSQL: tasks, tags, a validation recorded
directly, models asked through the queue (run here with --work), the view and the consensus;
errors as one JSON document."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from valuerank.db import Database
from valuerank.orgs import ensure_org
from valuerank.validation.store import create_task

from .conftest import Invoke

RETRY = "#PATTERN_MOMENTUM: Retry failed requests three times"


@pytest.mark.server_worker  # against a server, its worker runs the validations
def test_the_validation_commands(cli_both: Any) -> None:
    cli = cli_both
    created = cli("validation", "tasks", "create", "Auth API", "--description", "Login", "--json")
    assert created.exit_code == 0, created.stdout + created.stderr
    task = str(created.json()["id"])
    added = cli("validation", "tags", "add", task, RETRY, "--id", "ra_retry", "--json")
    assert added.json()["id"] == "ra_retry" and added.json()["created"] is True
    assert (
        cli("validation", "tags", "add", task, RETRY, "--id", "ra_retry", "--json").json()[
            "created"
        ]
        is False
    )
    listed = cli("validation", "tags", "list", task, "--json").json()
    assert [t["id"] for t in listed] == ["ra_retry"]
    tasks = cli("validation", "tasks", "list", "--json").json()
    assert [(t["id"], t["tag_count"]) for t in tasks] == [(int(task), 1)]

    recorded = cli(
        "validation", "record", task, "ra_retry", "--validator", "scripted:deontologist",
        "--outcome", "rejected", "--confidence", "70", "--notes", "by hand", "--json",
    )  # fmt: skip
    assert recorded.exit_code == 0, recorded.stdout
    assert recorded.json()["consensus"]["consensus"] == 0.0

    asked = cli(
        "validation", "validate", task, "ra_retry", "-m", "scripted:utilitarian",
        "-m", "scripted:agreeable", "--work", "--timeout", "60", "--json",
    )  # fmt: skip
    assert asked.exit_code == 0, asked.stdout + asked.stderr
    data = asked.json()
    assert data["enqueued"] == 2
    assert {r["status"] for r in data["results"].values()} == {"succeeded"}
    view = data["view"]
    assert view["model_count"] == 3
    outcomes = {v["validator_id"]: v["outcome"] for v in view["validations"]}
    assert outcomes == {
        "scripted:deontologist": "rejected",
        "scripted:utilitarian": "validated",
        "scripted:agreeable": "validated",
    }
    assert view["consensus"]["model_disagreement"] is True  # validated and rejected

    shown = cli("validation", "view", task, "ra_retry", "--json").json()
    assert shown["consensus"] == view["consensus"]
    summary = cli("validation", "consensus", task, "--json").json()
    assert summary["contentious_tags"] == ["ra_retry"]
    assert summary["overall_consensus"]["total_validations"] == 3

    human = cli("validation", "consensus", task)
    assert human.exit_code == 0 and "Auth API" in human.stdout and "ra_retry" in human.stdout
    assert "scripted:utilitarian" in cli("validation", "view", task, "ra_retry").stdout


def test_errors_are_one_json_document(cli_both: Any) -> None:
    cli = cli_both
    task = str(cli("validation", "tasks", "create", "T", "--json").json()["id"])
    cli("validation", "tags", "add", task, RETRY, "--id", "ra_1", "--json")
    for args, code in (
        (("validation", "view", "abc", "ra_1"), "INVALID_TASK_ID"),
        (("validation", "consensus", "999999"), "TASK_NOT_FOUND"),
        (("validation", "view", task, "ra_nope"), "RA_TAG_NOT_FOUND"),
        (("validation", "validate", task, "ra_1", "-m", "openai:no-such-model"), "UNKNOWN_MODEL"),
        (
            ("validation", "record", task, "ra_1", "--validator", "scripted:utilitarian",
             "--outcome", "perhaps", "--confidence", "50"),
            "INVALID_INPUT",
        ),
    ):  # fmt: skip
        result = cli(*args, "--json")
        assert result.exit_code == 1
        assert result.json()["success"] is False and result.json()["code"] == code
    queued = cli("validation", "validate", task, "ra_1", "-m", "scripted:utilitarian")
    assert queued.exit_code == 0 and "valuerank worker" in queued.stdout


async def test_another_organisations_task_is_not_found(db: Database, cli_both: Invoke) -> None:
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
        task = str((await create_task(conn, other, "theirs")).id)
    for args in (
        ("validation", "consensus", task),
        ("validation", "tags", "list", task),
        ("validation", "tags", "add", task, RETRY),
    ):
        out = await asyncio.to_thread(cli_both, *args, "--json")  # the CLI runs its own loop
        assert out.exit_code == 1 and out.json()["code"] == "TASK_NOT_FOUND", (args, out.stdout)
    listed = await asyncio.to_thread(cli_both, "validation", "tasks", "list", "--json")
    assert [t["id"] for t in listed.json()] == []
