"""People's readings stored (SQLite and PostgreSQL): recorded, replaced and deleted per person
and transcript, never among the judges' `judgments`; every write bumps the run's inputs
version and changes the analysis input's hash, and the loaded readings mark the person as a
person; refused input writes nothing; the read-next order is fixed per person and run; a
transcript's or a user's deletion takes their readings with it."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, func, select
from tests.readings_seeding import FREEDOM, HARMONY, JUDGES, LOYALTY, judged_run

from valuerank.accounts import Role, add_member
from valuerank.db import Database
from valuerank.db.tables import human_readings, judgments, runs, transcripts, users
from valuerank.errors import ValueRankError
from valuerank.findings.loading import read_run
from valuerank.runs.human_readings import (
    delete_reading,
    list_readings,
    next_unread,
    queue_key,
    record_reading,
)
from valuerank.runs.service import get_run


async def _member(db: Database, org_id: str, email: str) -> str:
    async with db.transaction() as conn:
        return (await add_member(conn, org_id, email, Role.MEMBER)).user.id


async def _version(db: Database, run_id: str) -> int:
    async with db.transaction() as conn:
        return int(await conn.scalar(select(runs.c.inputs_version).where(runs.c.id == run_id)) or 0)


async def _hash(db: Database, org_id: str, run_id: str) -> str:
    async with db.transaction() as conn:
        return (await read_run(conn, await get_run(conn, org_id, run_id))).input_hash


async def test_record_replace_delete_and_what_the_analysis_reads(db: Database, org_id: str) -> None:
    seeded = await judged_run(db, org_id)
    first = seeded.transcript_ids[0]
    ann = await _member(db, org_id, "ann@example.org")
    before_version, before_hash = (
        await _version(db, seeded.run.id),
        await _hash(db, org_id, seeded.run.id),
    )
    async with db.transaction() as conn:
        made = await record_reading(conn, org_id, first, ann, [FREEDOM, FREEDOM], [LOYALTY])
    assert made.prioritized_values == (FREEDOM,)  # duplicates dropped
    assert made.to_dict()["reader"] == "human:ann@example.org"
    assert await _version(db, seeded.run.id) > before_version
    after_hash = await _hash(db, org_id, seeded.run.id)
    assert after_hash != before_hash
    async with db.transaction() as conn:
        judged = await conn.scalar(select(func.count()).select_from(judgments))
        loaded = await read_run(conn, await get_run(conn, org_id, seeded.run.id))
    assert judged == 2 * len(seeded.transcript_ids)  # no person among the judges
    readings = loaded.data.readings
    assert readings is not None
    assert [readings.readers[i] for i in readings.models] == sorted(JUDGES)
    assert [readings.readers[i] for i in readings.people] == ["human:ann@example.org"]

    async with db.transaction() as conn:
        await record_reading(conn, org_id, first, ann, [HARMONY], [], note="again")
        mine = await list_readings(conn, org_id, first)
    assert [(r.prioritized_values, r.deprioritized_values, r.note) for r in mine] == [
        ((HARMONY,), (), "again")
    ]
    assert await _hash(db, org_id, seeded.run.id) not in (before_hash, after_hash)

    async with db.transaction() as conn:
        await delete_reading(conn, org_id, first, ann)
        assert await list_readings(conn, org_id, first) == []
    assert await _hash(db, org_id, seeded.run.id) == before_hash  # as if never read


@pytest.mark.parametrize(
    ("prioritized", "deprioritized", "code"),
    [
        (["Honesty"], [], "UNKNOWN_VALUE"),
        ([FREEDOM], [FREEDOM], "CONFLICTING_VALUES"),
    ],
)
async def test_refused_input_writes_nothing(
    db: Database, org_id: str, prioritized: list[str], deprioritized: list[str], code: str
) -> None:
    seeded = await judged_run(db, org_id)
    ann = await _member(db, org_id, "ann@example.org")
    version = await _version(db, seeded.run.id)
    with pytest.raises(ValueRankError) as raised:
        async with db.transaction() as conn:
            await record_reading(
                conn, org_id, seeded.transcript_ids[0], ann, prioritized, deprioritized
            )
    assert raised.value.code == code and raised.value.hint
    assert await _version(db, seeded.run.id) == version
    async with db.transaction() as conn:
        assert await conn.scalar(select(func.count()).select_from(human_readings)) == 0
    with pytest.raises(ValueRankError) as missing:
        async with db.transaction() as conn:
            await record_reading(conn, org_id, "no-such-transcript", ann, [FREEDOM], [])
    assert missing.value.code == "TRANSCRIPT_NOT_FOUND"


async def test_the_queue_order_is_fixed_per_person(db: Database, org_id: str) -> None:
    seeded = await judged_run(db, org_id)
    ann = await _member(db, org_id, "ann@example.org")
    bob = await _member(db, org_id, "bob@example.org")
    run_id = seeded.run.id
    expected = sorted(seeded.transcript_ids, key=lambda t: queue_key(ann, run_id, t))
    walked = []
    for n in range(len(expected)):
        async with db.transaction() as conn:
            state = await next_unread(conn, org_id, run_id, ann)
            assert state.read == n and state.total == len(expected)
            assert state.next_transcript_id is not None
            walked.append(state.next_transcript_id)
            await record_reading(conn, org_id, state.next_transcript_id, ann, [], [])
    assert walked == expected
    async with db.transaction() as conn:
        assert (await next_unread(conn, org_id, run_id, ann)).next_transcript_id is None
        theirs = await next_unread(conn, org_id, run_id, bob)
    assert theirs.read == 0
    assert sorted(seeded.transcript_ids, key=lambda t: queue_key(bob, run_id, t)) != expected


async def test_deleting_a_transcript_or_a_user_takes_their_readings(
    db: Database, org_id: str
) -> None:
    seeded = await judged_run(db, org_id)
    ann = await _member(db, org_id, "ann@example.org")
    bob = await _member(db, org_id, "bob@example.org")
    async with db.transaction() as conn:
        for transcript_id in seeded.transcript_ids[:2]:
            await record_reading(conn, org_id, transcript_id, ann, [FREEDOM], [])
            await record_reading(conn, org_id, transcript_id, bob, [LOYALTY], [])
        await conn.execute(delete(transcripts).where(transcripts.c.id == seeded.transcript_ids[0]))
        await conn.execute(delete(users).where(users.c.id == bob))
        left = (await conn.execute(select(human_readings.c.transcript_id))).scalars().all()
    assert left == [seeded.transcript_ids[1]]
