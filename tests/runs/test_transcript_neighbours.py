"""A transcript's previous and next in a filtered, sorted list (what the transcript page's
links follow), on SQLite and PostgreSQL: walking "next" from the first of a list visits the
list's pages in order, "previous" from the last visits it backwards, each transcript knows its
place and the list's length, and one outside the list has no place."""

from __future__ import annotations

import pytest
from tests.triage_seeding import seed_triage_run

from valuerank.db import Database
from valuerank.runs.transcript_order import TranscriptSort
from valuerank.runs.transcripts import (
    CONTENT_COUNT_CAP,
    COUNT_CAP,
    Total,
    TranscriptFilter,
    count_transcripts,
    get_transcript,
    list_transcripts,
    neighbours,
)

LISTS = [
    TranscriptFilter(),
    TranscriptFilter(text="CAFÉ"),
    TranscriptFilter(disagreement=False),
    TranscriptFilter(agreement="unjudged"),
]


@pytest.mark.parametrize("sort", list(TranscriptSort))
async def test_next_and_previous_walk_the_list_in_its_order(
    db: Database, org_id: str, sort: TranscriptSort
) -> None:
    _, ids = await seed_triage_run(db, org_id)
    async with db.transaction() as conn:
        for filters in LISTS:
            listed = [
                t["id"] for t in await list_transcripts(conn, org_id, filters, sort=sort, limit=99)
            ]
            assert len(listed) >= 2, filters
            assert await count_transcripts(conn, org_id, filters) == Total(len(listed), True)
            forward: list[str] = []
            current: str | None = listed[0]
            while current is not None:
                near = await neighbours(
                    conn, org_id, await get_transcript(conn, org_id, current), filters, sort
                )
                assert near.position == len(forward) + 1 and near.listed
                assert near.total == Total(len(listed), True)
                forward.append(current)
                current = near.next
            assert forward == listed, (filters, sort)
            backward: list[str] = []
            current = listed[-1]
            while current is not None:
                backward.append(current)
                near = await neighbours(
                    conn, org_id, await get_transcript(conn, org_id, current), filters, sort
                )
                current = near.previous
            assert backward == listed[::-1], (filters, sort)

        outside = next(i for i in ids if i not in listed)  # the last list: unjudged ones
        near = await neighbours(
            conn, org_id, await get_transcript(conn, org_id, outside), LISTS[-1], sort
        )
        assert near.position is None and not near.listed
        assert near.total == Total(len(listed), True)


async def test_counts_stop_at_their_cap(db: Database, org_id: str) -> None:
    """A count reads at most `cap` matches: beyond it the total says "more", and a transcript
    past the counted ones has no number (both still walk to their neighbours)."""
    await seed_triage_run(db, org_id)
    async with db.transaction() as conn:
        assert await count_transcripts(conn, org_id, cap=9) == Total(9, True)
        assert await count_transcripts(conn, org_id, cap=4) == Total(4, False)
        listed = await list_transcripts(conn, org_id, limit=99)
        third = await get_transcript(conn, org_id, listed[2]["id"])
        near = await neighbours(conn, org_id, third, cap=1)  # two before it: more than 1
        assert (near.previous, near.next) == (listed[1]["id"], listed[3]["id"])
        assert near.listed and near.position is None and near.total == Total(1, False)
        second = await get_transcript(conn, org_id, listed[1]["id"])
        assert (await neighbours(conn, org_id, second, cap=1)).position == 2


@pytest.mark.parametrize(
    ("filters", "cap"),
    [
        (TranscriptFilter(), COUNT_CAP),
        (TranscriptFilter(run="r", model="m", scenario_id="s", decision_code=3), COUNT_CAP),
        (TranscriptFilter(text="café"), CONTENT_COUNT_CAP),
        (TranscriptFilter(agreement="STRONG"), CONTENT_COUNT_CAP),
        (TranscriptFilter(disagreement=False), CONTENT_COUNT_CAP),
    ],
)
def test_filters_that_read_rows_count_less_far(filters: TranscriptFilter, cap: int) -> None:
    """A count that must read each match (its text, its consensus) stops sooner than one on
    indexed columns: its cost is bounded by the rows it reads."""
    assert filters.count_cap == cap
    assert CONTENT_COUNT_CAP < COUNT_CAP
