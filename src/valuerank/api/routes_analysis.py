"""Analyses, comparisons, experiments and lineage results.

`GET /api/runs/{id}/analysis` serves the basic analysis (computed on a cache miss: it is
fast) and, with `?deep=true`, the deep one when it is current — otherwise it queues
`analyze:deep` and answers 202 with the job. Like the consensus reads, `cached: true` says
the stored analysis was served and `?debug=true` adds the read's timings (`debug`).
Writes (`POST`) need the member role; another organisation's ids are 404 like unknown ones
(every service call is scoped by org).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field

from valuerank.api.deps import Member, Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import Body
from valuerank.api.pagination import Cursor, Limit, after_created, page
from valuerank.api.schemas import Debugged, Envelope, also
from valuerank.api.schemas.findings import (
    Analysis,
    AnalysisTimings,
    AnalyzedNow,
    ComparedNow,
    ComparisonPage,
    ExperimentPage,
    ExperimentReport,
    QueuedAnalysis,
    QueuedComparison,
    VariantRun,
)
from valuerank.api.schemas.lineage import LineageResults
from valuerank.findings.analyses import AnalysisOutcome, Kind, run_analysis
from valuerank.findings.comparisons import (
    CORRECTIONS,
    Comparison,
    compare_runs,
    create_comparison,
    get_comparison,
    list_comparisons,
)
from valuerank.findings.lineage import lineage_results
from valuerank.pipeline.analyze import enqueue_analysis, enqueue_comparison
from valuerank.pipeline.analyze_now import analyze_now
from valuerank.pipeline.experiments import (
    CHANGEABLE,
    Experiment,
    add_variant,
    create_experiment,
    experiment_report,
    list_experiments,
)
from valuerank.providers.model_id import MODEL_ID_PATTERN
from valuerank.queue import get_job
from valuerank.queue.dialect import iso
from valuerank.runs.service import get_run
from valuerank.shapes import dump

router = APIRouter(tags=["analysis"])


class AnalyzeBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)
    deep: bool = False
    force: bool = False
    narrative_model: str | None = Field(
        default=None,
        max_length=300,
        pattern=MODEL_ID_PATTERN,
        description="A model that narrates the deep analysis (checked like a run's models: "
        "422 UNKNOWN_MODEL, MISSING_CREDENTIAL); queued whenever the deep analysis of the "
        "run's current inputs has no narrative.",
    )
    allow_unknown_models: bool = Field(
        default=False, description="Allow a narrative model the registry does not know."
    )


class CompareBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)
    baseline_run_id: str = Field(min_length=1, max_length=100)
    comparison_run_id: str = Field(min_length=1, max_length=100)
    correction: Literal["fdr_bh", "holm"] = Field(
        default="fdr_bh", description="fdr_bh (default) or holm"
    )


class AnalyzeNowBody(AnalyzeBody):
    current_deep: bool = Field(
        default=False,
        description="Also answer the stored deep analysis of the run's current inputs (or "
        "null) as `current_deep`.",
    )


class CompareNowBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)
    baseline_run_id: str = Field(min_length=1, max_length=100)
    comparison_run_id: str = Field(min_length=1, max_length=100)
    # Checked by the service (INVALID_INPUT with the choices, as the CLI says it); the enum
    # documents them.
    correction: str = Field(
        default="fdr_bh",
        max_length=20,
        description="fdr_bh (Benjamini–Hochberg, default) or holm, across all tests.",
        json_schema_extra={"enum": list(CORRECTIONS)},
    )
    force: bool = Field(default=False, description="Recompute even if a result is current.")


class ExperimentBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(min_length=1, max_length=300)
    hypothesis: str = Field(default="", max_length=10_000)
    baseline_run_id: str = Field(min_length=1, max_length=100)


class VariantBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)
    # The settings' values are checked as a run's are (422 INVALID_INPUT naming the field).
    changes: dict[str, Any] = Field(
        description="What differs from the baseline's settings.",
        json_schema_extra={"minProperties": 1, "propertyNames": {"enum": list(CHANGEABLE)}},
    )
    start: bool = Field(default=True, description="false: create the run without starting it.")


def _debug(outcome: AnalysisOutcome, wanted: bool) -> dict[str, Any] | None:
    return outcome.debug_dict() if wanted else None


def _job(job_id: str, status: str, **extra: Any) -> dict[str, Any]:
    return {"job_id": job_id, "status": status, **extra}


@router.get(
    "/api/runs/{run_id}/analysis",
    response_model=Debugged[Analysis, AnalysisTimings],
    responses=also(
        Debugged[Analysis, AnalysisTimings],
        202,
        description="`deep` was not current: it is queued (`deep` is the job).",
    ),
)
async def get_analysis_route(
    run_id: str,
    ctx: Viewer,
    deep: Annotated[
        bool, Query(description="Also the deep analysis (queued if not current).")
    ] = False,
    debug: Annotated[bool, Query(description="Add the read's timings as `debug`.")] = False,
) -> JSONResponse:
    """The run's analysis (`analysis` of `valuerank analyze RUN --json`); `cached: true`
    when it was served from the stored analysis, `?debug=true` adds the read's timings. With
    `deep`, `meta.deepCached` says whether the deep result was served from the cache (true)
    or is queued (false, 202 with the job)."""
    outcome = await run_analysis(ctx.db, ctx.org_id, run_id)
    data = outcome.analysis
    if not deep:
        return ok(data, cached=outcome.cached, debug=_debug(outcome, debug))
    if outcome.current_deep is not None:
        data["deep"] = outcome.current_deep
        data["meta"]["deepCached"] = True
        return ok(data, cached=outcome.cached, debug=_debug(outcome, debug))
    with outcome.timings.measure("query"):
        async with ctx.db.transaction(immediate=True) as conn:
            run = await get_run(conn, ctx.org_id, outcome.run_id)
            queued = await enqueue_analysis(conn, run, "deep", key=outcome.input_hash)
            job = await get_job(conn, queued.job_id, org_id=ctx.org_id)
    data["deep"] = _job(job.id, job.status.value, error=job.last_error)
    data["meta"]["deepCached"] = False
    return ok(data, status_code=202, cached=outcome.cached, debug=_debug(outcome, debug))


@router.post("/api/runs/{run_id}/analyze", status_code=202, response_model=Envelope[QueuedAnalysis])
async def analyze_route(run_id: str, ctx: Member, body: AnalyzeBody | None = None) -> JSONResponse:
    """Queue the run's analysis (`force` recomputes even when the cached one is current); a
    `narrative_model` means the deep one, narrated."""
    body = body or AnalyzeBody()
    kind: Kind = "deep" if body.deep or body.narrative_model else "basic"
    async with ctx.db.transaction(immediate=True) as conn:
        run = await get_run(conn, ctx.org_id, run_id)
        queued = await enqueue_analysis(
            conn,
            run,
            kind,
            force=body.force,
            narrative_model=body.narrative_model,
            allow_unknown_model=body.allow_unknown_models,
        )
    return ok(_job(queued.job_id, "queued", run_id=run.id, kind=kind), status_code=202)


@router.post("/api/runs/compare", status_code=202, response_model=Envelope[QueuedComparison])
async def compare_route(body: CompareBody, ctx: Member) -> JSONResponse:
    """Queue `analyze:compare` of two runs; answers the comparison id to poll."""
    async with ctx.db.transaction(immediate=True) as conn:
        comparison = await create_comparison(
            conn, ctx.org_id, body.baseline_run_id, body.comparison_run_id, body.correction
        )
        queued = await enqueue_comparison(
            conn, ctx.org_id, comparison.id, comparison.baseline_run_id
        )
    return ok(
        {"comparison_id": comparison.id, "status": comparison.status, "job_id": queued.job_id},
        status_code=202,
    )


@router.post("/api/runs/{run_id}/analysis", response_model=Envelope[AnalyzedNow])
async def analyze_now_route(
    run_id: str, ctx: Member, body: AnalyzeNowBody | None = None
) -> JSONResponse:
    """Compute the run's analysis now and answer it, as `valuerank analyze` does: the basic
    one and, with `deep` (or a `narrative_model`), the deep one — each from the cache while
    the run's inputs match, unless `force`. A `narrative_model` is checked first, then its
    narrative queued unless the deep analysis has one (`narrative`)."""
    body = body or AnalyzeNowBody()
    data = await analyze_now(
        ctx.db,
        ctx.org_id,
        run_id,
        deep=body.deep,
        force=body.force,
        narrative_model=body.narrative_model,
        allow_unknown_model=body.allow_unknown_models,
    )
    if not body.current_deep:
        del data["current_deep"]
    return ok(data)


@router.post("/api/comparisons", response_model=Envelope[ComparedNow])
async def compare_now_route(body: CompareNowBody, ctx: Member) -> JSONResponse:
    """Compare two runs now and answer the comparison, as `valuerank compare` does: a
    completed comparison of the same inputs is reused (`cached`) unless `force`."""
    outcome = await compare_runs(
        ctx.db,
        ctx.org_id,
        body.baseline_run_id,
        body.comparison_run_id,
        correction=body.correction,
        force=body.force,
    )
    return ok({"cached": outcome.cached, "comparison": dump(outcome.comparison)})


@router.get("/api/runs/{run_id}/comparisons", response_model=Envelope[ComparisonPage])
async def run_comparisons_route(
    run_id: str, ctx: Viewer, limit: Limit = 50, cursor: Cursor = None
) -> JSONResponse:
    """Comparisons involving the run, newest first (without their results)."""
    after = after_created(cursor)
    async with ctx.db.transaction() as conn:
        run = await get_run(conn, ctx.org_id, run_id)
        found = await list_comparisons(conn, ctx.org_id, run.id, limit=limit, after=after)
    return ok(
        page(
            "comparisons",
            dump(found),
            limit=limit,
            key=lambda c: [c["created_at"], c["id"]],
        )
    )


@router.get("/api/comparisons/{comparison_id}", response_model=Envelope[Comparison])
async def get_comparison_route(comparison_id: str, ctx: Viewer) -> JSONResponse:
    """A comparison of two runs: queued, or its deltas, tests and most divergent scenarios."""
    async with ctx.db.transaction() as conn:
        comparison = await get_comparison(conn, ctx.org_id, comparison_id)
    return ok(dump(comparison))


@router.post("/api/experiments", status_code=201, response_model=Envelope[Experiment])
async def create_experiment_route(body: ExperimentBody, ctx: Member) -> JSONResponse:
    """Create an experiment: a name, a hypothesis and the baseline run its variants face."""
    async with ctx.db.transaction(immediate=True) as conn:
        experiment = await create_experiment(
            conn,
            ctx.org_id,
            name=body.name,
            hypothesis=body.hypothesis,
            baseline_run=body.baseline_run_id,
        )
    return ok(dump(experiment), status_code=201)


@router.get("/api/experiments", response_model=Envelope[ExperimentPage])
async def list_experiments_route(
    ctx: Viewer, limit: Limit = 50, cursor: Cursor = None
) -> JSONResponse:
    """The organisation's experiments, newest first."""
    after = after_created(cursor)
    async with ctx.db.transaction() as conn:
        found = await list_experiments(conn, ctx.org_id, limit=limit, after=after)
    return ok(
        page(
            "experiments",
            dump(found),
            limit=limit,
            key=lambda e: [e["created_at"], e["id"]],
        )
    )


@router.post(
    "/api/experiments/{experiment_id}/runs", status_code=201, response_model=Envelope[VariantRun]
)
async def add_variant_route(experiment_id: str, body: VariantBody, ctx: Member) -> JSONResponse:
    """Create and start (unless `start: false`) a variant run: the baseline's settings with
    `changes` applied."""
    async with ctx.db.transaction(immediate=True) as conn:
        variant = await add_variant(conn, ctx.org_id, experiment_id, body.changes, start=body.start)
    return ok(
        {
            **variant.run.summary_dict(),
            "experiment_id": variant.experiment_id,
            "changes": variant.changes,
            "created_at": iso(variant.created_at),
        },
        status_code=201,
    )


@router.get("/api/experiments/{experiment_id}", response_model=Envelope[ExperimentReport])
async def get_experiment_route(experiment_id: str, ctx: Viewer) -> JSONResponse:
    """The experiment with its report: every variant against the baseline."""
    return ok(await experiment_report(ctx.db, ctx.org_id, experiment_id))


MAX_CHOSEN = 100
Ref = Annotated[str, Field(min_length=1, max_length=100)]
ChosenRuns = Annotated[
    list[Ref] | None,
    Query(
        max_length=MAX_CHOSEN,
        description="A run (id or prefix) to represent its version, repeated: at most one per "
        "version of the tree, any status. Other versions get their latest completed run.",
    ),
]
LeftOut = Annotated[
    list[Ref] | None,
    Query(max_length=MAX_CHOSEN, description="A version of the tree to leave out, repeated."),
]


@router.get(
    "/api/definitions/{definition_id}/lineage/results",
    response_model=Envelope[LineageResults],
)
async def lineage_results_route(
    definition_id: str,
    ctx: Viewer,
    run: ChosenRuns = None,
    exclude: LeftOut = None,
) -> JSONResponse:
    """Results of the whole fork tree of a definition version (root to leaves), one run per
    version (`run`, else its latest completed run), on the models every chosen run has;
    each version is compared with its nearest ancestor that has a run, aligned on scenario
    ids; `empty` says why a table is empty."""
    return ok(
        await lineage_results(
            ctx.db, ctx.org_id, definition_id, run_refs=run or (), exclude=exclude or ()
        )
    )
