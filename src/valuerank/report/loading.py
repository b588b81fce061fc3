"""Everything a report shows, gathered: the run and its definition version, its analysis
(the cached one while the inputs match: `run_analysis`), the comparison with a baseline run
when asked (a completed one of the same inputs is reused: `compare_runs`), and the figures,
drawn once. The CLI and the web download both call `build_report`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

from valuerank.db.engine import Database
from valuerank.definitions.service import get_definition
from valuerank.errors import NotFoundError
from valuerank.findings.analyses import run_analysis
from valuerank.queue.dialect import as_utc
from valuerank.refs import short_id
from valuerank.report.errors import NoTranscriptsError
from valuerank.report.figures import analysis_figures, comparison_figure
from valuerank.report.render import ComparisonPart, ReportDocument, RunHeader, render_report
from valuerank.runs.service import Run, get_run

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


def _when(value: datetime | None) -> str | None:
    return None if value is None else as_utc(value).strftime("%Y-%m-%d %H:%M UTC")


async def _header(db: Database, org_id: str, run: Run) -> RunHeader:
    name = version = None
    if run.definition_id is not None:
        async with db.transaction() as conn:
            try:
                stored = await get_definition(conn, org_id, run.definition_id)
                name, version = stored.version.name, stored.version.version_label
            except NotFoundError:  # the version was deleted since: its id still says which
                pass
    return RunHeader(
        id=run.id,
        name=run.name,
        status=run.status.value,
        created_at=_when(run.created_at) or "",
        finished_at=_when(run.finished_at),
        models=list(run.config.models),
        judge_models=list(run.config.judge_models),
        synthetic=run.synthetic,
        origin=run.origin,
        definition_id=run.definition_id,
        definition_name=name,
        definition_version=version,
    )


async def gather_report(
    db: Database,
    org_id: str,
    ref: str,
    *,
    baseline: str | None = None,
    progress: Progress = _quiet,
) -> ReportDocument:
    """The report's parts for run `ref` (id or prefix) of the organisation; NOT_FOUND for an
    unknown run (or baseline), NO_TRANSCRIPTS for a run with nothing to report."""
    progress("analysis")
    outcome = await run_analysis(db, org_id, ref)
    basic = outcome.analysis
    async with db.transaction() as conn:
        run = await get_run(conn, org_id, outcome.run_id)
    if not (basic.get("meta") or {}).get("transcripts"):
        raise NoTranscriptsError(
            f"run {run.id} has no transcripts: there is nothing to report yet",
            hint=f"start it and let a worker finish it (`valuerank runs wait {short_id(run.id)} "
            "--work`), then report",
        )
    header = await _header(db, org_id, run)
    comparison = None
    if baseline is not None:
        # Comparing loads the runs (numpy); a report without one needs none of it.
        from valuerank.findings.comparisons import compare_runs

        progress("comparison")
        compared = (await compare_runs(db, org_id, baseline, run.id)).comparison
        async with db.transaction() as conn:
            base_run = await get_run(conn, org_id, compared.baseline_run_id)
        comparison = ComparisonPart(
            baseline=await _header(db, org_id, base_run),
            comparison_id=compared.id,
            result=compared.result or {},
        )
    progress("figures")
    figures = await analysis_figures(
        db, org_id, run.id, outcome.input_hash, basic, outcome.current_deep
    )
    if comparison is not None:
        forest = await asyncio.to_thread(
            comparison_figure, comparison.result, comparison.comparison_id
        )
        figures = {**figures, "comparison_forest": forest}
    return ReportDocument(
        run=header,
        basic=basic,
        generated_at=datetime.now(UTC),
        figures=figures,
        comparison=comparison,
    )


async def build_report(
    db: Database,
    org_id: str,
    ref: str,
    *,
    baseline: str | None = None,
    progress: Progress = _quiet,
) -> tuple[ReportDocument, str]:
    """The report's parts and its HTML."""
    doc = await gather_report(db, org_id, ref, baseline=baseline, progress=progress)
    progress("rendering")
    return doc, render_report(doc)
