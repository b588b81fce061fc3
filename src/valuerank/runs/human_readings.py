"""People as judges: a person's reading of a transcript, stored beside the models' judgments.

A reading names the values (of the run's rubric) the answer prioritises and deprioritises.
One per person and transcript: recording again replaces it. It lives in its own table
(`human_readings`), not in `judgments`, so the consensus, the tallies, exports and whatever
counts judge models never meet a person; the analysis reads both (findings/loading.py) and
compares them (analysis/judge_agreement.py). Every write bumps the run's inputs version, so a
cached analysis is recomputed with the new reading.

The "read a random sample" queue (`next_unread`) walks the run's transcripts in an order
fixed by the person and the run (a hash of both with the transcript id): the same person gets
the same sequence every time, two people different ones.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import human_readings, rubrics, runs, transcripts, users
from valuerank.errors import InvalidInputError, NotFoundError, ValueRankError
from valuerank.formats.rubric import Rubric
from valuerank.queue.dialect import iso, upsert
from valuerank.queue.ids import new_id
from valuerank.runs.records import bump_inputs_of_transcript
from valuerank.runs.transcripts import TranscriptNotFoundError

MAX_NOTE = 2000
HUMAN_PREFIX = "human:"  # a person among the readers of the analysis (judge models have none)


def human_reader(email: str) -> str:
    """How a person is named beside the judge models: `human:<email>`."""
    return f"{HUMAN_PREFIX}{email}"


class UnknownValueError(InvalidInputError):
    code = "UNKNOWN_VALUE"


class ConflictingValuesError(InvalidInputError):
    code = "CONFLICTING_VALUES"


class NoRubricError(InvalidInputError):
    code = "NO_RUBRIC"


class ReadingNotFoundError(NotFoundError):
    code = "READING_NOT_FOUND"


class ReaderRoleError(ValueRankError):
    code = "FORBIDDEN"
    http_status = 403


@dataclass(frozen=True)
class HumanReading:
    transcript_id: str
    run_id: str
    user_id: str
    email: str
    prioritized_values: tuple[str, ...]
    deprioritized_values: tuple[str, ...]
    note: str
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "transcript_id": self.transcript_id,
            "run_id": self.run_id,
            "reader": human_reader(self.email),
            "user_email": self.email,
            "prioritized_values": list(self.prioritized_values),
            "deprioritized_values": list(self.deprioritized_values),
            "note": self.note,
            "created_at": iso(self.created_at),
        }


@dataclass(frozen=True)
class ReadTarget:
    """A transcript a person may read: its run and the values of the run's rubric."""

    transcript_id: str
    run_id: str
    values: tuple[str, ...]
    rubric: str | None


async def read_target(conn: AsyncConnection, org_id: str, transcript_id: str) -> ReadTarget:
    """The transcript (of this organisation: another's is not found) and its rubric's values."""
    row = None
    if "\x00" not in transcript_id:
        row = (
            await conn.execute(
                select(transcripts.c.id, transcripts.c.run_id, rubrics.c.name, rubrics.c.content)
                .select_from(
                    transcripts.join(runs, runs.c.id == transcripts.c.run_id).outerjoin(
                        rubrics, rubrics.c.id == runs.c.rubric_id
                    )
                )
                .where(transcripts.c.org_id == org_id, transcripts.c.id == transcript_id)
            )
        ).first()
    if row is None:
        raise TranscriptNotFoundError(
            f"no transcript with id {transcript_id!r}", hint="list them with GET /api/transcripts"
        )
    values = () if row.content is None else Rubric.from_dict(row.content).value_names
    return ReadTarget(row.id, row.run_id, tuple(values), row.name)


def checked_values(
    target: ReadTarget, prioritized: Sequence[str], deprioritized: Sequence[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The two lists, deduplicated, each name one of the rubric's, none on both."""
    if not target.values:
        raise NoRubricError(
            f"the run of transcript {target.transcript_id} has no values rubric to read it with",
            hint="people read the runs created with judges (they carry the rubric)",
        )
    pri = tuple(dict.fromkeys(v.strip() for v in prioritized if v.strip()))
    dep = tuple(dict.fromkeys(v.strip() for v in deprioritized if v.strip()))
    unknown = [v for v in (*pri, *dep) if v not in target.values]
    if unknown:
        raise UnknownValueError(
            f"not a value of the run's rubric: {', '.join(sorted(set(unknown)))}",
            hint=f"the rubric's values: {', '.join(target.values)}",
        )
    both = sorted(set(pri) & set(dep))
    if both:
        raise ConflictingValuesError(
            f"named as both prioritised and deprioritised: {', '.join(both)}",
            hint="a value is on one list or neither",
        )
    return pri, dep


async def record_reading(
    conn: AsyncConnection,
    org_id: str,
    transcript_id: str,
    user_id: str,
    prioritized: Sequence[str],
    deprioritized: Sequence[str],
    note: str = "",
) -> HumanReading:
    """Record (or replace) this person's reading of the transcript; nothing is written when
    a name is not the rubric's."""
    target = await read_target(conn, org_id, transcript_id)
    pri, dep = checked_values(target, prioritized, deprioritized)
    if len(note) > MAX_NOTE:
        raise InvalidInputError(f"the note is {len(note)} characters; at most {MAX_NOTE}")
    await bump_inputs_of_transcript(conn, target.transcript_id)  # before the write: see there
    values = {
        "prioritized_values": list(pri),
        "deprioritized_values": list(dep),
        "note": note,
        "created_at": func.now(),
    }
    await conn.execute(
        upsert(conn)(human_readings)
        .values(
            id=new_id(),
            org_id=org_id,
            transcript_id=target.transcript_id,
            user_id=user_id,
            **values,
        )
        .on_conflict_do_update(
            index_elements=[human_readings.c.transcript_id, human_readings.c.user_id],
            set_=values,
        )
    )
    found = await list_readings(conn, org_id, target.transcript_id, user_id=user_id)
    return found[0]


async def list_readings(
    conn: AsyncConnection, org_id: str, transcript_id: str, *, user_id: str | None = None
) -> list[HumanReading]:
    """People's readings of the transcript (only this person's with `user_id`), by email."""
    target = await read_target(conn, org_id, transcript_id)
    query = (
        select(human_readings, users.c.email)
        .join(users, users.c.id == human_readings.c.user_id)
        .where(
            human_readings.c.org_id == org_id,
            human_readings.c.transcript_id == target.transcript_id,
        )
        .order_by(users.c.email)
    )
    if user_id is not None:
        query = query.where(human_readings.c.user_id == user_id)
    return [
        HumanReading(
            transcript_id=row.transcript_id,
            run_id=target.run_id,
            user_id=row.user_id,
            email=row.email,
            prioritized_values=tuple(row.prioritized_values),
            deprioritized_values=tuple(row.deprioritized_values),
            note=row.note,
            created_at=row.created_at,
        )
        for row in await conn.execute(query)
    ]


async def delete_reading(
    conn: AsyncConnection, org_id: str, transcript_id: str, user_id: str
) -> None:
    """Delete this person's reading of the transcript (READING_NOT_FOUND when there is none)."""
    target = await read_target(conn, org_id, transcript_id)
    mine = (
        human_readings.c.org_id == org_id,
        human_readings.c.transcript_id == target.transcript_id,
        human_readings.c.user_id == user_id,
    )
    if await conn.scalar(select(human_readings.c.id).where(*mine)) is None:
        raise ReadingNotFoundError(
            f"you have not read transcript {target.transcript_id}",
            hint="record a reading first (POST …/readings)",
        )
    await bump_inputs_of_transcript(conn, target.transcript_id)
    await conn.execute(delete(human_readings).where(*mine))


def queue_key(user_id: str, run_id: str, transcript_id: str) -> str:
    """The transcript's place in this person's sample of the run (see the module doc)."""
    return hashlib.sha256(f"{user_id}\x1f{run_id}\x1f{transcript_id}".encode()).hexdigest()


@dataclass(frozen=True)
class QueueState:
    """Where a person is in a run's sample: the next transcript (None: all read)."""

    run_id: str
    next_transcript_id: str | None
    read: int
    total: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "next_transcript_id": self.next_transcript_id,
            "read": self.read,
            "total": self.total,
        }


async def next_unread(conn: AsyncConnection, org_id: str, run_id: str, user_id: str) -> QueueState:
    """The next transcript of the run this person has not read, in their own order."""
    ids = (
        await conn.scalars(
            select(transcripts.c.id).where(
                transcripts.c.org_id == org_id, transcripts.c.run_id == run_id
            )
        )
    ).all()
    done = set(
        (
            await conn.scalars(
                select(human_readings.c.transcript_id)
                .join(transcripts, transcripts.c.id == human_readings.c.transcript_id)
                .where(
                    human_readings.c.org_id == org_id,
                    human_readings.c.user_id == user_id,
                    transcripts.c.run_id == run_id,
                )
            )
        ).all()
    )
    unread = [t for t in ids if t not in done]
    first = min(unread, key=lambda t: queue_key(user_id, run_id, t)) if unread else None
    return QueueState(run_id, first, len(done), len(ids))
