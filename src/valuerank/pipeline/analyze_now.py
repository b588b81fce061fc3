"""A run's analysis computed now, as `valuerank analyze` asks for it (locally, or through
`POST /api/runs/{id}/analysis`): the basic one, the deep one when asked (computed here, not
queued), and the narrative asked for (queued for a worker unless the deep analysis has one).
One function, so the command prints the same JSON whichever of the two answered it."""

from __future__ import annotations

from typing import Any

from valuerank.db.engine import Database
from valuerank.findings.analyses import run_analysis


async def analyze_now(
    db: Database,
    org_id: str,
    ref: str,
    *,
    deep: bool = False,
    force: bool = False,
    narrative_model: str | None = None,
    allow_unknown_model: bool = False,
) -> dict[str, Any]:
    """`{cached, deep_cached, analysis, narrative?, current_deep}`: what `analyze --json`
    prints (without `success`), `narrative` only when a model was named (it implies `deep`),
    `current_deep` the stored deep result matching the run's inputs (or None), which the
    CLI's plots draw the PCA from. The narrative model is checked before anything is
    computed."""
    if narrative_model is not None:
        # The narrative's checks load the registry and the model calls: only when asked.
        from valuerank.pipeline.analyze import check_narrative_model

        async with db.transaction(immediate=True) as conn:  # seeds the registry
            await check_narrative_model(
                conn, org_id, narrative_model, allow_unknown=allow_unknown_model
            )
    wants_deep = deep or narrative_model is not None
    outcome = await run_analysis(db, org_id, ref, deep=wants_deep, force=force)
    data: dict[str, Any] = {
        "cached": outcome.cached,
        "deep_cached": outcome.deep_cached,
        "analysis": outcome.analysis,
    }
    if narrative_model is not None:
        from valuerank.pipeline.analyze import narrate

        async with db.transaction(immediate=True) as conn:
            queued = await narrate(conn, org_id, outcome, narrative_model)
        if queued is None:
            data["narrative"] = {"model": narrative_model, "status": "exists", "job_id": None}
        else:
            status = "queued" if queued.enqueued else "already queued"
            data["narrative"] = {
                "model": narrative_model,
                "status": status,
                "job_id": queued.job_id,
            }
    data["current_deep"] = outcome.current_deep
    return data
