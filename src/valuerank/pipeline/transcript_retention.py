"""Transcript retention: maintenance exports, then deletes, the transcripts of runs finished
longer ago than VALUERANK_TRANSCRIPT_RETENTION_DAYS (0, the default, keeps them).

A run at a time, whole: its export (the run ZIP in the original CLI's layout, the same as
`valuerank export run`) is written to a temporary file in VALUERANK_TRANSCRIPT_EXPORT_DIR/
<org id>/, flushed to disk and renamed into place; only then are its transcripts deleted
(their judgments go with them by cascade). The run, its scenarios and its tallies stay, so
its status and results read the same. If an export fails (no folder set, a folder not
writable, a disk full) nothing of that run is deleted and the pass says why; the next pass
tries again. Runs are taken oldest finished first, `RUNS_PER_PASS` per maintenance pass,
in the pass's transaction: a failed delete rolls back, and the next export overwrites the
file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from sqlalchemy import delete, exists, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import runs, transcripts
from valuerank.errors import ValueRankError
from valuerank.queue.dialect import db_now_plus
from valuerank.runs.records import bump_inputs
from valuerank.runs.states import TERMINAL

RUNS_PER_PASS = 5
EXPORT_DIR_ENV = "VALUERANK_TRANSCRIPT_EXPORT_DIR"


async def _expired_runs(conn: AsyncConnection, older_than_days: float, limit: int) -> list[Any]:
    """Finished runs past the retention that still hold transcripts, oldest finished first."""
    cutoff = db_now_plus(conn.dialect.name, -older_than_days * 86400.0)
    holding = exists().where(
        transcripts.c.org_id == runs.c.org_id, transcripts.c.run_id == runs.c.id
    )
    rows = await conn.execute(
        select(runs.c.org_id, runs.c.id)
        .where(
            runs.c.status.in_([s.value for s in TERMINAL]),
            runs.c.finished_at < cutoff,
            holding,
        )
        .order_by(runs.c.finished_at, runs.c.id)
        .limit(limit)
    )
    return list(rows)


async def export_run_file(conn: AsyncConnection, org_id: str, run_id: str, folder: Path) -> Path:
    """The run's ZIP written to `folder/<org id>/run-<CLI run id>-<run id>.zip`, complete on
    disk before this returns (a temporary file renamed into place: never half a ZIP)."""
    from valuerank.exchange import write_run_zip
    from valuerank.exchange.manifest import export_run_id
    from valuerank.exchange.naming import safe_part
    from valuerank.exchange.run_data import load_run

    snapshot = await load_run(conn, org_id, run_id)
    target_dir = folder / safe_part(org_id)
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / f"run-{safe_part(export_run_id(snapshot))}-{run_id}.zip"
    handle, temporary = tempfile.mkstemp(dir=target_dir, prefix=".export-", suffix=".zip")
    try:
        with os.fdopen(handle, "w+b") as out:
            await write_run_zip(conn, org_id, snapshot, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


async def apply_transcript_retention(
    conn: AsyncConnection,
    *,
    older_than_days: float,
    export_dir: str | None,
    runs_per_pass: int = RUNS_PER_PASS,
) -> dict[str, Any]:
    """One pass (see the module): what was exported and deleted, and an `error` when an
    export failed (nothing of that run deleted)."""
    result: dict[str, Any] = {
        "retention_days": older_than_days,
        "runs": [],
        "deleted": 0,
        "more": False,
        "error": None,
    }
    expired = await _expired_runs(conn, older_than_days, runs_per_pass + 1)
    if not expired:
        return result
    if not export_dir:
        result["error"] = (
            f"{EXPORT_DIR_ENV} is not set: {len(expired)} run(s) past the retention keep "
            "their transcripts (they are deleted only once exported)"
        )
        return result
    result["more"] = len(expired) > runs_per_pass
    for org_id, run_id in expired[:runs_per_pass]:
        try:
            path = await export_run_file(conn, org_id, run_id, Path(export_dir))
        except (OSError, ValueRankError) as exc:
            # Keep the transcripts; the other maintenance work of the pass still commits.
            result["error"] = f"run {run_id}: export failed, nothing deleted: {exc}"
            result["more"] = True
            return result
        await bump_inputs(conn, run_id)
        gone = await conn.execute(
            delete(transcripts).where(
                transcripts.c.org_id == org_id, transcripts.c.run_id == run_id
            )
        )
        deleted = int(gone.rowcount or 0)
        result["deleted"] += deleted
        result["runs"].append({"run_id": run_id, "deleted": deleted, "export": str(path)})
    return result
