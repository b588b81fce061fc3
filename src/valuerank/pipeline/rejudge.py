"""Judging a finished run again (`valuerank runs judge`, `POST /api/runs/{id}/judge`): judges
read the run's stored transcripts; the target models are never asked again.

- Adding (the default): the judges given join the run's. A judge the run already has keeps
  its judgments and reads only the transcripts it has not read (after a cancel, say).
- `replace`: the run's judges become exactly the ones given. The judgments of judges no longer
  listed are deleted (with their jobs), and every transcript's consensus is recomputed from
  what is left; judges still listed keep theirs.

Either way the run reopens in a new generation (`runs.service.reopen_run`, as rerun-failed
does), one judge job per (transcript, judge) without a judgment is enqueued, and the run's
finalize job waits for them, stores the consensus and closes the run, which enqueues its
analysis; the write bumps the run's inputs version, so a cached analysis is stale at once.
A run created without judges gets its first ones (and the values rubric they read) this way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.credentials.store import require_credentials
from valuerank.db.tables import judgments, runs, transcripts
from valuerank.default_rubric import rubric_for_judges
from valuerank.errors import ConflictError, InvalidInputError
from valuerank.org_defaults import checked_models
from valuerank.pipeline.finalize import enqueue_followers
from valuerank.pipeline.run_results import store_consensus
from valuerank.queue.partitions import delete_jobs, has_running_jobs
from valuerank.queue.states import JobStatus
from valuerank.refs import short_id
from valuerank.registry.check import check_models
from valuerank.registry.service import seed_models
from valuerank.runs.finalizing import ensure_finalize
from valuerank.runs.kinds import JUDGE
from valuerank.runs.records import bump_inputs
from valuerank.runs.service import Run, get_run, reopen_run
from valuerank.runs.states import TERMINAL, refuse

# A judge job of a listed judge in one of these states is enqueued again (its item key is
# taken, so the old row goes): a cancel or a failure left its transcript unread.
_UNFINISHED = (JobStatus.CANCELLED, JobStatus.FAILED)


@dataclass(frozen=True)
class Rejudged:
    run: Run
    judges: tuple[str, ...]  # the run's judges now
    added: tuple[str, ...]
    removed: tuple[str, ...]
    judgments_removed: int
    enqueued: int  # judge jobs (and summaries a cancel left undone)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.run.summary_dict(),
            "judge_models": list(self.judges),
            "added": list(self.added),
            "removed": list(self.removed),
            "judgments_removed": self.judgments_removed,
            "enqueued": self.enqueued,
        }


def new_judges(
    current: Sequence[str], given: Sequence[str], *, replace: bool
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(the run's judges after, added, removed): `given` replaces `current` or joins it."""
    after = tuple(given) if replace else (*current, *(j for j in given if j not in current))
    added = tuple(j for j in after if j not in current)
    removed = tuple(j for j in current if j not in after)
    return after, added, removed


async def _check_judgeable(conn: AsyncConnection, run: Run) -> None:
    if run.status not in TERMINAL:
        raise refuse(run.id, run.status, "judge it again until it has ended (or cancel it)")
    if await has_running_jobs(conn, run.id, org_id=run.org_id):
        raise refuse(run.id, run.status, "judge it again while its jobs are stopping")
    written = await conn.scalar(
        select(func.count())
        .select_from(transcripts)
        .where(transcripts.c.org_id == run.org_id, transcripts.c.run_id == run.id)
    )
    if not written:
        raise ConflictError(
            f"run {short_id(run.id)} has no transcript to judge",
            hint="rerun its failed probes first: valuerank runs rerun-failed RUN",
        )


async def _forget(conn: AsyncConnection, run: Run, removed: Sequence[str]) -> int:
    """Delete the judgments and judge jobs of judges no longer listed; how many judgments."""
    if not removed:
        return 0
    of_run = select(transcripts.c.id).where(
        transcripts.c.org_id == run.org_id, transcripts.c.run_id == run.id
    )
    deleted = await conn.execute(
        delete(judgments).where(
            judgments.c.org_id == run.org_id,
            judgments.c.transcript_id.in_(of_run.scalar_subquery()),
            judgments.c.judge_model.in_(removed),
        )
    )
    # Finished judge jobs of the judges gone (as pruning deletes them: errors, counters).
    await delete_jobs(conn, run.org_id, run.id, kind=JUDGE, models=removed)
    # The consensus is recomputed from the judgments left; a transcript with none has none.
    await conn.execute(
        update(transcripts)
        .where(transcripts.c.org_id == run.org_id, transcripts.c.run_id == run.id)
        .values(consensus=None)
    )
    await store_consensus(conn, run)
    return int(deleted.rowcount or 0)


async def judge_run(
    conn: AsyncConnection,
    org_id: str,
    ref: str,
    judges: Sequence[str],
    *,
    replace: bool = False,
    environ: Mapping[str, str] | None = None,
    allow_unknown_models: bool = False,
) -> Rejudged:
    """Judge a finished run (again) with `judges`, added to its own or (`replace`) instead of
    them. The models are checked as `runs create` checks them, before anything is written."""
    if not judges:
        raise InvalidInputError("name at least one judge", hint="--judge provider:model")
    given = checked_models(judges)
    run = await get_run(conn, org_id, ref)
    await _check_judgeable(conn, run)
    await seed_models(conn)
    await check_models(conn, given, allow_unknown=allow_unknown_models)
    await require_credentials(
        conn, org_id, given, environ=os.environ if environ is None else environ
    )
    after, added, removed = new_judges(run.config.judge_models, given, replace=replace)
    await bump_inputs(conn, run.id)  # first (see bump_inputs): the judges are analysis inputs
    judgments_removed = await _forget(conn, run, removed)
    values: dict[str, Any] = {
        "config": run.config.model_copy(
            update={"judge_models": after, "default_judges": False}
        ).to_json()
    }
    if run.rubric_id is None:  # a run created without judges: they read the org's rubric
        values["rubric_id"] = (await rubric_for_judges(conn, org_id, store=True)).id
    await conn.execute(
        update(runs).where(runs.c.org_id == org_id, runs.c.id == run.id).values(values)
    )
    await delete_jobs(conn, org_id, run.id, kind=JUDGE, statuses=_UNFINISHED, models=after)
    run = await reopen_run(conn, await get_run(conn, org_id, run.id))
    enqueued = await enqueue_followers(conn, run)
    await ensure_finalize(conn, run)
    return Rejudged(run, after, added, removed, judgments_removed, enqueued)
