"""A run's figures are drawn once per analysis and kept beside it (`analysis_figures`), so a
new process (a `valuerank report` of a cached analysis) draws nothing: on SQLite and
PostgreSQL, the stored set is served while the inputs and the drawing code match, and drawn
again (and replaced) when either changes; deleting the run deletes them."""

from __future__ import annotations

from sqlalchemy import func, select, update
from tests.findings.test_cached_analysis import _a_run

from valuerank.db import Database
from valuerank.db.tables import analysis_figures
from valuerank.findings.analyses import run_analysis
from valuerank.findings.figure_rows import stored_figures
from valuerank.orgs import ensure_org
from valuerank.report.figures import analysis_figures as figures_of
from valuerank.report.svg import figures_version, svg_cache
from valuerank.runs.service import delete_run

BASIC_FIGURES = {"value_sensitivity", "win_rates", "agreement_heatmap", "dimension_effects"}


async def _rows(db: Database, run_id: str) -> dict[str, dict[str, object]]:
    async with db.transaction() as conn:
        rows = await conn.execute(
            select(analysis_figures).where(analysis_figures.c.run_id == run_id)
        )
        return {row.kind: dict(row._mapping) for row in rows}


async def test_figures_are_drawn_once_and_served_from_the_database(
    db: Database, org_id: str
) -> None:
    run, _ = await _a_run(db, org_id)
    outcome = await run_analysis(db, org_id, run.id, deep=True)
    svg_cache.clear()
    drawn = await figures_of(
        db, org_id, run.id, outcome.input_hash, outcome.analysis, outcome.current_deep
    )
    assert set(drawn) == BASIC_FIGURES | {"pca_scatter"}
    rows = await _rows(db, run.id)
    assert set(rows) == {"basic", "deep"}
    assert rows["basic"]["input_hash"] == outcome.input_hash
    assert rows["basic"]["version"] == figures_version()
    assert rows["deep"]["svgs"] == {"pca_scatter": drawn["pca_scatter"]}
    again = await figures_of(
        db, org_id, run.id, outcome.input_hash, outcome.analysis, outcome.current_deep
    )
    assert again is drawn  # this process keeps them in memory too

    # A new process (no figures in memory) serves what is stored: mark it to see it served.
    async with db.transaction() as conn:
        await conn.execute(
            update(analysis_figures)
            .where(analysis_figures.c.run_id == run.id, analysis_figures.c.kind == "basic")
            .values(svgs={name: f"<svg>stored {name}</svg>" for name in BASIC_FIGURES})
        )
    svg_cache.clear()
    served = await figures_of(
        db, org_id, run.id, outcome.input_hash, outcome.analysis, outcome.current_deep
    )
    assert served["win_rates"] == "<svg>stored win_rates</svg>"
    assert served["pca_scatter"] == drawn["pca_scatter"]

    # Figures drawn by other code are drawn again and replaced.
    async with db.transaction() as conn:
        await conn.execute(
            update(analysis_figures)
            .where(analysis_figures.c.run_id == run.id)
            .values(version="older drawing code")
        )
    svg_cache.clear()
    redrawn = await figures_of(
        db, org_id, run.id, outcome.input_hash, outcome.analysis, outcome.current_deep
    )
    assert redrawn["win_rates"] == drawn["win_rates"]
    assert {row["version"] for row in (await _rows(db, run.id)).values()} == {figures_version()}


async def test_new_inputs_draw_new_figures_and_a_deleted_run_keeps_none(
    db: Database, org_id: str
) -> None:
    run, _ = await _a_run(db, org_id)
    outcome = await run_analysis(db, org_id, run.id)
    svg_cache.clear()
    await figures_of(db, org_id, run.id, outcome.input_hash, outcome.analysis, None)
    assert set(await _rows(db, run.id)) == {"basic"}  # no deep analysis, no deep figures

    async with db.transaction() as conn:  # drawn from other inputs than the run's now
        await conn.execute(update(analysis_figures).values(input_hash="an older input hash"))
    svg_cache.clear()
    again = await run_analysis(db, org_id, run.id)
    figures = await figures_of(db, org_id, run.id, again.input_hash, again.analysis, None)
    assert set(figures) == BASIC_FIGURES
    assert (await _rows(db, run.id))["basic"]["input_hash"] == again.input_hash

    async with db.transaction() as conn:
        await delete_run(conn, org_id, run.id)
    async with db.transaction() as conn:
        left = await conn.scalar(select(func.count()).select_from(analysis_figures))
    assert left == 0


async def test_another_organisations_figures_are_not_served(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        other_org_id = await ensure_org(conn, "other")
    run, _ = await _a_run(db, org_id)
    outcome = await run_analysis(db, org_id, run.id)
    svg_cache.clear()
    await figures_of(db, org_id, run.id, outcome.input_hash, outcome.analysis, None)
    async with db.transaction() as conn:
        assert (
            await stored_figures(conn, other_org_id, run.id, outcome.input_hash, figures_version())
            == {}
        )
        assert set(
            await stored_figures(conn, org_id, run.id, outcome.input_hash, figures_version())
        ) == {"basic"}
