"""What a run leaves when it closes: each transcript's judge consensus, its results per model,
and the plain summary written from those figures.

Both ways a run closes use them (`run_end.py`): the finalize job, which adds a model's
narrative to the plain summary, and stale-run reaping, which keeps the plain one. Kept light
(no model calls, no prompts) so that `run_end` stays cheap to import for `runs status`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.consensus import Judgement, decision_consensus
from valuerank.db.tables import judgments, models, transcripts
from valuerank.runs.records import bump_inputs
from valuerank.runs.results import ModelResult, model_results
from valuerank.runs.service import Run

# Transcripts a step reads (and holds) at a time when it enqueues their judges or stores
# their consensus.
PAGE = 1000


async def transcript_pages(
    conn: AsyncConnection, run: Run, page: int = PAGE
) -> AsyncIterator[list[str]]:
    """The run's transcript ids, `page` at a time in id order (keyset pages, each read whole, so
    the caller may write between pages on either database): memory stays one page."""
    after = ""
    while True:
        ids = list(
            (
                await conn.execute(
                    select(transcripts.c.id)
                    .where(
                        transcripts.c.org_id == run.org_id,
                        transcripts.c.run_id == run.id,
                        transcripts.c.id > after,
                    )
                    .order_by(transcripts.c.id)
                    .limit(page)
                )
            ).scalars()
        )
        if not ids:
            return
        yield ids
        after = ids[-1]


async def _weights(conn: AsyncConnection) -> dict[str, float]:
    """Each judge model's weight in the consensus (the registry's; 1.0 when it is not there)."""
    return {
        f"{p}:{n}": float(w)
        for p, n, w in await conn.execute(select(models.c.provider, models.c.name, models.c.weight))
    }


async def _write_consensus(
    conn: AsyncConnection, org_id: str, ids: list[str], weights: dict[str, float]
) -> int:
    """The consensus of the transcripts `ids` from their judgments; those without a judgment
    are left as they are. Returns how many were written."""
    rows = await conn.execute(
        select(judgments)
        .where(judgments.c.org_id == org_id, judgments.c.transcript_id.in_(ids))
        .order_by(judgments.c.transcript_id, judgments.c.judge_model)
    )
    by_transcript: dict[str, list[Judgement]] = {}
    for row in rows:
        by_transcript.setdefault(row.transcript_id, []).append(
            Judgement(
                model=row.judge_model,
                decision=row.decision,
                confidence=float(row.confidence),
                weight=weights.get(row.judge_model, 1.0),
                prioritized_values=tuple(row.prioritized_values),
                deprioritized_values=tuple(row.deprioritized_values),
            )
        )
    for transcript_id, judged in by_transcript.items():
        await conn.execute(
            update(transcripts)
            .where(transcripts.c.id == transcript_id)
            .values(consensus=decision_consensus(judged).to_dict())
        )
    return len(by_transcript)


async def store_transcript_consensus(
    conn: AsyncConnection, org_id: str, transcript_id: str
) -> None:
    """One transcript's consensus from the judgments written so far, in the judgment's own
    transaction: what the judges read counts at once, also when the run never closes (it was
    cancelled while judging). `insert_judgment` has locked the run's row first (bump_inputs),
    so on PostgreSQL two judges of one transcript write one after the other and the second
    sees the first's judgment."""
    await _write_consensus(conn, org_id, [transcript_id], await _weights(conn))


async def _store_consensus(conn: AsyncConnection, run: Run, page: int) -> int:
    """The judges' consensus per transcript (model weights from the registry), a page of
    transcripts at a time."""
    weights = await _weights(conn)
    await bump_inputs(conn, run.id)  # the consensus is what the analysis reads of judges
    stored = 0
    async for ids in transcript_pages(conn, run, page):
        stored += await _write_consensus(conn, run.org_id, ids, weights)
    return stored


async def store_consensus(conn: AsyncConnection, run: Run, page: int = PAGE) -> list[ModelResult]:
    """The judges' consensus per transcript stored (`page` transcripts at a time); the run's
    results per model."""
    await _store_consensus(conn, run, page)
    return await model_results(conn, run.org_id, run.id)


def plain_summary(results: list[ModelResult]) -> str:
    """The run's summary from its figures alone (also the fallback when no model writes one)."""
    if not results:
        return "No transcript was written."
    lines = []
    for r in results:
        mean = "no decision read" if r.mean_decision is None else f"mean {r.mean_decision:.2f}"
        lines.append(
            f"{r.model}: {r.transcripts} transcripts, {r.decided} decided ({mean}), "
            f"{r.refusals} refusals"
        )
    return "\n".join(lines)
