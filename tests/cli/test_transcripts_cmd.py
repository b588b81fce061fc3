"""`valuerank transcripts read|readings|unread|read-next` on both databases: a person's
reading round-trips through the CLI, is the API's (the same service and rows), reaches
`valuerank analyze --json` as `judgeAgreement.withPeople`, and bad names or a viewer are
refused with a code and write nothing; the four commands both ways (on the database and
through a server)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.api.conftest import ADMIN_EMAIL
from tests.readings_seeding import FREEDOM, JUDGES, LOYALTY, ReadRun, judged_run

from valuerank.accounts import Role, add_member
from valuerank.accounts.users import LOCAL_ADMIN_EMAIL
from valuerank.db import Database

from .conftest import Invoke, Outcome
from .runs_both_ways import through_a_server


async def test_a_reading_round_trips_through_the_cli(
    cli: Invoke, db: Database, org_id: str
) -> None:
    seeded = await judged_run(db, org_id)
    async with db.transaction() as conn:
        await add_member(conn, org_id, "ann@example.org", Role.MEMBER)
        await add_member(conn, org_id, "vic@example.org", Role.VIEWER)

    async def call(*args: str) -> Any:
        return await asyncio.to_thread(cli, "transcripts", *args)

    queue = await call("read-next", seeded.run.id, "--user", "ann@example.org", "--json")
    assert queue.exit_code == 0, queue.stdout + queue.stderr
    first = queue.json()["next_transcript_id"]
    assert queue.json()["read"] == 0 and queue.json()["total"] == len(seeded.transcript_ids)
    made = await call(
        "read", first, "-p", FREEDOM, "--deprioritized", LOYALTY,
        "--user", "ann@example.org", "--json",
    )  # fmt: skip
    assert made.exit_code == 0, made.stdout + made.stderr
    assert made.json()["reader"] == "human:ann@example.org"
    mine = await call("read", first, "-p", LOYALTY, "--json")  # the local admin
    assert mine.json()["reader"] == f"human:{LOCAL_ADMIN_EMAIL}"
    listed = (await call("readings", first, "--json")).json()
    assert [(r["reader"], r["prioritized_values"]) for r in listed["readings"]] == [
        ("human:ann@example.org", [FREEDOM]),
        (f"human:{LOCAL_ADMIN_EMAIL}", [LOYALTY]),
    ]
    words = await call("readings", first)
    assert "human:ann@example.org" in words.stdout and FREEDOM in words.stdout
    after = (await call("read-next", seeded.run.id, "--user", "ann@example.org", "--json")).json()
    assert after["read"] == 1 and after["next_transcript_id"] != first

    analysis = await asyncio.to_thread(cli, "analyze", seeded.run.id, "--json")
    assert analysis.exit_code == 0, analysis.stderr
    agreement = analysis.json()["analysis"]["judgeAgreement"]
    assert agreement["judges"] == sorted(JUDGES)
    assert agreement["people"] == ["human:ann@example.org", f"human:{LOCAL_ADMIN_EMAIL}"]
    assert agreement["withPeople"][JUDGES[0]]["transcripts"] == 1
    shown = await asyncio.to_thread(cli, "analyze", seeded.run.id)
    assert "Judge agreement" in shown.stdout

    unknown = await call("read", first, "-p", "Honesty", "--user", "ann@example.org", "--json")
    assert unknown.exit_code == 1 and unknown.json()["code"] == "UNKNOWN_VALUE"
    viewer = await call("read", first, "-p", FREEDOM, "--user", "vic@example.org", "--json")
    assert viewer.exit_code == 1 and viewer.json()["code"] == "FORBIDDEN"
    nobody = await call("read", first, "-p", FREEDOM, "--user", "no@example.org", "--json")
    assert nobody.exit_code == 1 and nobody.json()["code"] == "NOT_FOUND"
    missing = await call("read", "no-such-id", "-p", FREEDOM, "--json")
    assert missing.json()["code"] == "TRANSCRIPT_NOT_FOUND"
    listed_again = (await call("readings", first, "--json")).json()["readings"]
    assert [r["prioritized_values"] for r in listed_again] == [[FREEDOM], [LOYALTY]]

    gone = await call("unread", first, "--user", "ann@example.org", "--json")
    assert gone.exit_code == 0 and gone.json()["deleted"] is True
    again = await call("unread", first, "--user", "ann@example.org", "--json")
    assert again.json()["code"] == "READING_NOT_FOUND"


@pytest.fixture
async def seeded(db: Database, org_id: str) -> ReadRun:
    return await judged_run(db, org_id)


def test_readings_both_ways(seeded: ReadRun, cli_both: Invoke) -> None:
    """Without --user the reader is the local admin on the database, the token's user
    through a server (which refuses --user: a token reads as its own user only)."""
    email = ADMIN_EMAIL if through_a_server() else LOCAL_ADMIN_EMAIL

    def call(*args: str) -> Outcome:
        return cli_both("transcripts", *args)

    queue = call("read-next", seeded.run.id, "--json")
    assert queue.exit_code == 0, queue.stdout + queue.stderr
    assert queue.json()["read"] == 0 and queue.json()["total"] == len(seeded.transcript_ids)
    first = queue.json()["next_transcript_id"]
    made = call("read", first, "-p", FREEDOM, "-d", LOYALTY, "--note", "why", "--json")
    assert made.exit_code == 0, made.stdout + made.stderr
    assert made.json()["reader"] == f"human:{email}" and made.json()["note"] == "why"
    words = call("read", first, "-p", FREEDOM)
    assert " ".join(words.stdout.split()) == (
        f"human:{email} read {first}: prioritises {FREEDOM}; deprioritises -"
    )
    listed = call("readings", first, "--json").json()
    assert listed["run_id"] == seeded.run.id and listed["rubric"] == "values_rubric"
    assert FREEDOM in listed["values"] and LOYALTY in listed["values"]
    assert [(r["reader"], r["prioritized_values"]) for r in listed["readings"]] == [
        (f"human:{email}", [FREEDOM])
    ]
    assert f"human:{email}: + {FREEDOM}  − -" in call("readings", first).stdout
    shown = call("read-next", seeded.run.id)
    assert " ".join(shown.stdout.split()).startswith(
        f"1 of {len(seeded.transcript_ids)} read; next: "
    )

    unknown = call("read", first, "-p", "Honesty", "--json")
    assert unknown.exit_code == 1 and unknown.json()["code"] == "UNKNOWN_VALUE"
    missing = call("read", "no-such-id", "-p", FREEDOM, "--json")
    assert missing.exit_code == 1 and missing.json()["code"] == "TRANSCRIPT_NOT_FOUND"
    assert " ".join(call("unread", first).stdout.split()) == f"deleted your reading of {first}"
    again = call("unread", first, "--json")
    assert again.exit_code == 1 and again.json()["code"] == "READING_NOT_FOUND"
    assert call("readings", first).stdout.endswith("nobody has read it yet\n")

    if through_a_server():
        for args in (
            ("read", first, "-p", FREEDOM), ("unread", first), ("read-next", seeded.run.id)
        ):  # fmt: skip
            refused = call(*args, "--user", "ann@example.org", "--json")
            assert refused.exit_code == 1 and refused.json()["code"] == "LOCAL_ONLY_OPTION"
            assert "VALUERANK_API_TOKEN" in refused.json()["hint"]
