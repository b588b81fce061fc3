"""`valuerank transcripts read|readings|unread|read-next` on both databases: a person's
reading round-trips through the CLI, is the API's (the same service and rows), reaches
`valuerank analyze --json` as `judgeAgreement.withPeople`, and bad names or a viewer are
refused with a code and write nothing."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.readings_seeding import FREEDOM, JUDGES, LOYALTY, judged_run

from valuerank.accounts import Role, add_member
from valuerank.accounts.users import LOCAL_ADMIN_EMAIL
from valuerank.db import Database

from .conftest import Invoke


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
