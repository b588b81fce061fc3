"""Importing CLI runs (a run ZIP, a CLI run folder, a folder of CLI transcripts) into the database.

Everything is read, checked and parsed before the first row is written, and all rows are
written on the caller's connection: run `import_runs` inside `db.transaction()` and a
failure leaves nothing behind.

Each run found becomes a run with origin "imported" and status "completed"; its
transcripts are stored byte for byte (the exact text of the file), its definition
(`definition.md`) through `definitions.service.import_definition` (the same content is
stored once), its rubric (`config/values_rubric.yaml`) as an existing rubric version with the
same content or else as a version of the rubric named `values_rubric`.

Importing the same run again is idempotent: when a run of the organisation (imported before,
or exported from here) has the same CLI run id and exactly the same transcripts (scenario,
model, sample and bytes), it is reported (`created=False`) and nothing is written. A run id
imported before with *different* transcripts (say the CLI has written more since) is
imported as a new run next to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import rubrics, runs, transcripts
from valuerank.definitions.service import import_definition
from valuerank.exchange.archive_safety import SourceTree
from valuerank.exchange.cli_folder import find_runs
from valuerank.exchange.import_plan import PlannedRun, content_digest, plan_run
from valuerank.queue.dialect import to_db
from valuerank.rubrics import import_rubric, rubric_content_hash
from valuerank.runs.records import NewRun, insert_run, insert_run_scenarios, insert_transcript

IMPORTED = "imported"
COMPLETED = "completed"
RUBRIC_NAME = "values_rubric"


@dataclass(frozen=True)
class ImportedRun:
    """One run of an import. `created` is False when it was already there (nothing written)."""

    id: str
    cli_run_id: str
    transcripts: int
    created: bool
    name: str
    definition_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "cli_run_id": self.cli_run_id,
            "transcripts": self.transcripts,
            "created": self.created,
            "name": self.name,
            "definition_id": self.definition_id,
        }


async def identical_run(
    conn: AsyncConnection, org_id: str, plan: PlannedRun, given: RunOverrides | None = None
) -> ImportedRun | None:
    """A run of the organisation (imported, restored or created here) with the same CLI run
    id and exactly the same transcripts (and, for a restore, the same status and time)."""
    wanted_keys = plan.keys()
    query = select(runs.c.id, runs.c.name, runs.c.definition_id).where(
        runs.c.org_id == org_id, runs.c.cli_run_id == plan.bundle.cli_run_id
    )
    if given is not None and given.status is not None:
        query = query.where(runs.c.status == given.status)
    if given is not None and given.created_at is not None:
        query = query.where(runs.c.created_at == to_db(conn.dialect.name, given.created_at))
    candidates = (await conn.execute(query.order_by(runs.c.created_at, runs.c.id))).all()
    for run_id, name, definition_id in candidates:
        rows = await conn.execute(
            select(
                transcripts.c.scenario_id,
                transcripts.c.model,
                transcripts.c.sample_index,
                transcripts.c.content,
            ).where(transcripts.c.org_id == org_id, transcripts.c.run_id == run_id)
        )
        have = frozenset((s, m, int(i), content_digest(c)) for s, m, i, c in rows)
        if have == wanted_keys:
            return ImportedRun(
                run_id, plan.bundle.cli_run_id, len(have), False, name, definition_id
            )
    return None


async def _rubric_id(conn: AsyncConnection, org_id: str, plan: PlannedRun) -> str | None:
    if plan.rubric is None or plan.bundle.rubric_text is None:
        return None
    digest = rubric_content_hash(plan.rubric.to_dict())
    found = await conn.scalar(
        select(rubrics.c.id)
        .where(rubrics.c.org_id == org_id, rubrics.c.content_hash == digest)
        .order_by(rubrics.c.created_at, rubrics.c.id)
        .limit(1)
    )
    if found is not None:
        return str(found)
    result = await import_rubric(
        conn, org_id, plan.bundle.rubric_text, name=RUBRIC_NAME, source_file="values_rubric.yaml"
    )
    return result.version.id


@dataclass(frozen=True)
class RunOverrides:
    """What a workspace restore knows of a run beyond its files (None: as a plain import)."""

    run_id: str | None = None
    definition_id: str | None = None
    rubric_id: str | None = None
    name: str | None = None
    status: str | None = None
    origin: str | None = None
    created_at: datetime | None = None


async def write_planned(
    conn: AsyncConnection, org_id: str, plan: PlannedRun, given: RunOverrides
) -> ImportedRun:
    """Write one checked run as a new run (callers decide it is not there already)."""
    definition_id = given.definition_id
    if definition_id is None and plan.bundle.definition_text is not None:
        stored, _ = await import_definition(
            conn, org_id, plan.bundle.definition_text, source_file="definition.md"
        )
        definition_id = stored.version.id
    name = given.name if given.name is not None else plan.name
    run_id = await insert_run(
        conn,
        org_id,
        NewRun(
            definition_id=definition_id,
            config=plan.config.to_json(),
            name=name,
            cli_run_id=plan.bundle.cli_run_id,
            status=given.status or COMPLETED,
            rubric_id=given.rubric_id or await _rubric_id(conn, org_id, plan),
            origin=given.origin or IMPORTED,
            synthetic=plan.synthetic,
            id=given.run_id,
            created_at=given.created_at,
        ),
    )
    await insert_run_scenarios(conn, org_id, run_id, plan.scenarios)
    written = 0
    for record in plan.records:
        if await insert_transcript(conn, org_id, run_id, record) is not None:
            written += 1
    return ImportedRun(run_id, plan.bundle.cli_run_id, written, True, name, definition_id)


async def import_planned(
    conn: AsyncConnection, org_id: str, plan: PlannedRun, given: RunOverrides | None = None
) -> ImportedRun:
    """Write one checked run, unless the same run was imported before."""
    existing = await identical_run(conn, org_id, plan)
    if existing is not None:
        return existing
    return await write_planned(conn, org_id, plan, given or RunOverrides())


async def import_tree(conn: AsyncConnection, org_id: str, tree: SourceTree) -> list[ImportedRun]:
    """Import every run of an already-read source (all checks first, then the writes)."""
    plans = [plan_run(bundle) for bundle in find_runs(tree)]
    return [await import_planned(conn, org_id, plan) for plan in plans]


__all__ = [
    "ImportedRun",
    "RunOverrides",
    "identical_run",
    "import_planned",
    "import_tree",
    "write_planned",
]
