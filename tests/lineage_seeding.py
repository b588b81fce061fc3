"""A fork tree of the demo definition with runs whose answers and judges' readings are known,
for the lineage and leaderboard tests (findings, API and pages):

    v1 ─┬─ v1.1 ── v1.1.1
        └─ v1.2

- v1: an older completed run (U, D), the latest completed run (U, D, C; C refused once) and
  a newer failed one (U);
- v1.1: no run; v1.1.1: a completed run (U, D); v1.2: a run still running (U, D).

Every run asks about the same scenarios (one sample seed). Each decided answer is read by two
judges: a 4 or 5 prioritises Honesty over Loyalty, a 1 or 2 the reverse, a 3 neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncConnection

import valuerank
from valuerank.consensus import decision_consensus
from valuerank.db import Database
from valuerank.db.tables import runs
from valuerank.definitions.service import fork_definition, import_definition, parse_and_check
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.queue.dialect import to_db
from valuerank.runs.config import RunConfig
from valuerank.runs.records import JudgmentRecord, TranscriptRecord, insert_transcript
from valuerank.runs.service import Run, create_run, run_scenario_ids

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
U, D, C = "scripted:utilitarian", "scripted:deontologist", "scripted:contrarian"
HONESTY, LOYALTY = "Honesty", "Loyalty"
JUDGES = ("scripted:centrist", "scripted:agreeable")
Codes = dict[str, list[int | None]]

ROOT_OLD: Codes = {U: [4, 5, 4, 3], D: [2, 1, 2, 3]}
ROOT_LATEST: Codes = {U: [5, 4, 4, 2, 5], D: [1, 2, 3, 2, 1], C: [3, 3, None, 4, 2]}
ROOT_FAILED: Codes = {U: [1]}
GRANDCHILD: Codes = {U: [2, 2, 3, 1, 2], D: [4, 5, 4, 4, 3]}
SIBLING: Codes = {U: [3, 3], D: [3, 3]}
COMPLETED = (ROOT_OLD, ROOT_LATEST, GRANDCHILD)  # what the leaderboard pools


@dataclass(frozen=True)
class Tree:
    root: str
    child: str
    grandchild: str
    sibling: str
    root_old: str
    root_latest: str
    root_failed: str
    grandchild_run: str
    sibling_running: str


def verdict(code: int | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(prioritised, deprioritised) values the judges read in an answer of `code`."""
    if code is None or code == 3:
        return (), ()
    return ((HONESTY,), (LOYALTY,)) if code >= 4 else ((LOYALTY,), (HONESTY,))


async def seed_run(
    db: Database,
    org: str,
    definition_id: str,
    codes: Codes,
    *,
    status: str,
    name: str,
    minute: int,
    judged: bool = True,
) -> str:
    """A run of the version with these answers (read by the judges unless not `judged`), in
    `status`, created `minute` minutes after a fixed moment (so "the latest" never depends
    on the clock)."""
    created_at = datetime(2025, 3, 1, 12, 0, tzinfo=UTC) + timedelta(minutes=minute)
    config = RunConfig(
        models=tuple(codes),
        judge_models=JUDGES if judged else (),
        sample_percentage=20,
        sample_seed=7,
    )
    async with db.transaction() as conn:
        run = (await create_run(conn, org, definition_id, config, name=name)).run
        scenario_ids = await run_scenario_ids(conn, run.id)
        for model, answers in codes.items():
            for i, code in enumerate(answers):
                sid = scenario_ids[i % len(scenario_ids)]
                read = code if judged else None
                await _insert(conn, org, run, sid, model, i // len(scenario_ids), code, read)
        await conn.execute(
            update(runs)
            .where(runs.c.id == run.id)
            .values(status=status, created_at=to_db(db.dialect, created_at))
        )
    return run.id


async def _insert(
    conn: AsyncConnection,
    org: str,
    run: Run,
    sid: str,
    model: str,
    sample: int,
    code: int | None,
    read: int | None,
) -> None:
    """One answer of `code`; the judges read `read` (None: no judge read it)."""
    prioritized, deprioritized = verdict(read)
    judgments = tuple(
        JudgmentRecord(judge, read, prioritized, deprioritized, 80.0, rationale="read")
        for judge in (JUDGES if read is not None else ())
    )
    consensus = (
        decision_consensus(j.judgement() for j in judgments).to_dict() if judgments else None
    )
    answer = "I decline." if code is None else f"{model} weighs it. Rating: {code}"
    transcript = Transcript(
        run.cli_run_id, sid, model, "demo", (Turn(1, "scenario", "Decide.", answer),)
    )
    record = TranscriptRecord(
        transcript=transcript,
        model=model,
        sample_index=sample,
        decision_code=code,
        decision_reason=None if code is not None else "refusal",
        synthetic=True,
        consensus=consensus,
        judgments=judgments,
    )
    await insert_transcript(conn, org, run.id, record)


async def seed_tree(db: Database, org: str) -> Tree:
    text = DEMO.read_text()
    async with db.transaction() as conn:
        root, _ = await import_definition(conn, org, text, source_file=DEMO.name)
        child = await fork_definition(
            conn,
            org,
            root.version.id,
            definition=parse_and_check(text.replace("Give me your", "Tell me your")),
        )
        grandchild = await fork_definition(
            conn,
            org,
            child.version.id,
            definition=parse_and_check(text.replace("Give me your", "Share your")),
        )
        sibling = await fork_definition(
            conn,
            org,
            root.version.id,
            definition=parse_and_check(text.replace("Give me your", "Offer your")),
        )
    r, g, s = root.version.id, grandchild.version.id, sibling.version.id
    return Tree(
        root=r,
        child=child.version.id,
        grandchild=g,
        sibling=s,
        root_old=await seed_run(db, org, r, ROOT_OLD, status="completed", name="v1 old", minute=0),
        root_latest=await seed_run(
            db, org, r, ROOT_LATEST, status="completed", name="v1 latest", minute=10
        ),
        root_failed=await seed_run(
            db, org, r, ROOT_FAILED, status="failed", name="v1 failed", minute=20
        ),
        grandchild_run=await seed_run(
            db, org, g, GRANDCHILD, status="completed", name="v1.1.1 run", minute=30
        ),
        sibling_running=await seed_run(
            db, org, s, SIBLING, status="running", name="v1.2 running", minute=40
        ),
    )
