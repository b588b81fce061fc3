"""Transcript retention (issue 21, item 15): with VALUERANK_TRANSCRIPT_RETENTION_DAYS set,
maintenance exports a run finished before it (the CLI's run ZIP) into
VALUERANK_TRANSCRIPT_EXPORT_DIR, then deletes its transcripts; an export that fails, or no
folder, deletes nothing; 0 (the default) keeps everything. Real runs, real maintenance
passes, both backends."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from valuerank.config import get_settings
from valuerank.db import Database
from valuerank.db.tables import runs, transcripts
from valuerank.pipeline.maintenance import TRANSCRIPT_RETENTION, Retention, maintain
from valuerank.queue import QueueSettings
from valuerank.queue.dialect import db_now_plus
from valuerank.runs.results import model_results
from valuerank.runs.service import get_run
from valuerank.runs.states import RunStatus
from valuerank.shapes import dump

DAY = 86400.0


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    yield monkeypatch
    get_settings.cache_clear()


def _set(env: pytest.MonkeyPatch, days: str, folder: Path | None) -> None:
    env.setenv("VALUERANK_TRANSCRIPT_RETENTION_DAYS", days)
    if folder is None:
        env.delenv("VALUERANK_TRANSCRIPT_EXPORT_DIR", raising=False)
    else:
        env.setenv("VALUERANK_TRANSCRIPT_EXPORT_DIR", str(folder))
    get_settings.cache_clear()


async def _finished_run(db: Database, org_id: str, stale_run: Any, days_ago: float) -> str:
    """A completed run with transcripts, finished `days_ago` days ago."""
    run_id: str = await stale_run(org_id, write=True)
    await maintain(db, QueueSettings(), Retention.of(get_settings()), trigger="cli")  # reaped
    async with db.transaction() as conn:
        await conn.execute(
            update(runs)
            .where(runs.c.id == run_id)
            .values(finished_at=db_now_plus(conn.dialect.name, -days_ago * DAY))
        )
    return run_id


async def _transcripts(db: Database, run_id: str) -> dict[str, str]:
    """The run's transcripts: scenario id → stored text."""
    async with db.transaction() as conn:
        rows = await conn.execute(
            select(transcripts.c.scenario_id, transcripts.c.content).where(
                transcripts.c.run_id == run_id
            )
        )
        return {str(sid): str(content) for sid, content in rows}


async def _pass(db: Database) -> dict[str, Any]:
    record = await maintain(db, QueueSettings(), Retention.of(get_settings()), trigger="cli")
    assert record is not None and record.status == "succeeded", record
    result: dict[str, Any] = record.actions[TRANSCRIPT_RETENTION]
    return result


async def test_an_old_run_is_exported_then_its_transcripts_deleted(
    db: Database, org_id: str, stale_run: Any, env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    old = await _finished_run(db, org_id, stale_run, days_ago=100)
    recent = await _finished_run(db, org_id, stale_run, days_ago=10)
    before_old, before_recent = await _transcripts(db, old), await _transcripts(db, recent)
    async with db.transaction() as conn:
        results_before = dump(await model_results(conn, org_id, old))
    assert before_old and before_recent

    _set(env, "90", tmp_path / "archive")
    result = await _pass(db)

    assert result["error"] is None and result["deleted"] == len(before_old)
    [done] = result["runs"]
    assert done["run_id"] == old
    exported = Path(done["export"])
    assert exported.parent == tmp_path / "archive" / org_id
    with zipfile.ZipFile(exported) as archive:
        names = archive.namelist()
        written = {n: archive.read(n).decode() for n in names if n.startswith("transcripts/")}
    assert "run_manifest.yaml" in names and "summary.csv" in names
    assert sorted(written.values()) == sorted(before_old.values())  # byte for byte
    assert not [p for p in exported.parent.iterdir() if p.name.startswith(".export-")]
    assert await _transcripts(db, old) == {}
    assert await _transcripts(db, recent) == before_recent  # within the retention: kept
    async with db.transaction() as conn:
        run = await get_run(conn, org_id, old)
        results_after = dump(await model_results(conn, org_id, old))
    assert run.status is RunStatus.COMPLETED
    assert results_after == results_before  # the run's results stay (its tallies)
    assert (await _pass(db))["runs"] == []  # nothing left to export


async def test_nothing_is_deleted_when_the_export_fails(
    db: Database, org_id: str, stale_run: Any, env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    old = await _finished_run(db, org_id, stale_run, days_ago=100)
    before = await _transcripts(db, old)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the export folder should be")

    _set(env, "90", blocker)
    result = await _pass(db)
    assert result["deleted"] == 0 and result["runs"] == []
    assert old in result["error"] and "nothing deleted" in result["error"]
    assert await _transcripts(db, old) == before

    _set(env, "90", None)  # no folder: kept, and the pass says why
    result = await _pass(db)
    assert result["deleted"] == 0 and "VALUERANK_TRANSCRIPT_EXPORT_DIR" in result["error"]
    assert await _transcripts(db, old) == before


async def test_the_default_keeps_transcripts_forever(
    db: Database, org_id: str, stale_run: Any, env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    old = await _finished_run(db, org_id, stale_run, days_ago=3650)
    before = await _transcripts(db, old)
    env.delenv("VALUERANK_TRANSCRIPT_RETENTION_DAYS", raising=False)
    env.setenv("VALUERANK_TRANSCRIPT_EXPORT_DIR", str(tmp_path / "archive"))
    get_settings.cache_clear()
    result = await _pass(db)
    assert result["retention_days"] is None and result["deleted"] == 0
    assert await _transcripts(db, old) == before
    assert not (tmp_path / "archive").exists()
