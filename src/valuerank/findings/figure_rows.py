"""The figures drawn from a run's stored analyses (`analysis_figures`): SVG text by figure
name, opaque here, read back only while drawn from the same inputs by the same drawing code
(report/figure_store.py decides both)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.engine import Database
from valuerank.db.tables import analysis_figures
from valuerank.queue.dialect import upsert


async def stored_figures(
    conn: AsyncConnection, org_id: str, run_id: str, input_hash: str, version: str
) -> dict[str, dict[str, str]]:
    """The run's stored figure sets by analysis kind (basic, deep), drawn from `input_hash`
    by drawing code `version`; a set drawn from other inputs or code is left out."""
    rows = await conn.execute(
        select(analysis_figures.c.kind, analysis_figures.c.svgs).where(
            analysis_figures.c.org_id == org_id,
            analysis_figures.c.run_id == run_id,
            analysis_figures.c.input_hash == input_hash,
            analysis_figures.c.version == version,
        )
    )
    return {row.kind: dict(row.svgs) for row in rows}


async def store_figures(
    db: Database,
    org_id: str,
    run_id: str,
    kind: str,
    input_hash: str,
    version: str,
    svgs: dict[str, str],
) -> None:
    """Keep the figures drawn from the run's `kind` analysis (replacing older ones). A run
    deleted meanwhile has nothing to keep them for: that is not an error."""
    values = {"org_id": org_id, "input_hash": input_hash, "version": version, "svgs": svgs}
    try:
        async with db.transaction(immediate=True) as conn:
            await conn.execute(
                upsert(conn)(analysis_figures)
                .values(run_id=run_id, kind=kind, **values)
                .on_conflict_do_update(
                    index_elements=[analysis_figures.c.run_id, analysis_figures.c.kind],
                    set_=values,
                )
            )
    except IntegrityError:  # the run (its foreign key) is gone
        return
