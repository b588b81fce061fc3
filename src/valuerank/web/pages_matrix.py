"""Where a run's models differ: `/runs/{id}/matrix`, the model × scenario heat map (a table:
colour and number in every cell, sortable by disagreement, by a dimension's level or by a
model; filtered to the rows where models differ or split; beside other runs of the same
definition with `?compare=`), and `/runs/{id}/scenarios/{scenario_id}`, one scenario's answers
from every model side by side with their decisions and the judges' readings. Both read what
`/api/runs/{id}/matrix` and `/api/runs/{id}/scenarios/{scenario_id}/answers` answer, through
the same services; sorting and filtering are links and a form (no script)."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.api.deps import Viewer
from valuerank.api.routes_matrix import MAX_COMPARED, sorted_rows
from valuerank.db.tables import runs
from valuerank.findings.answers import scenario_answers
from valuerank.findings.matrix import CODES, DEFAULT_THRESHOLD, MAX_RANGE, SORT_DISAGREEMENT
from valuerank.findings.matrix_loading import definition_meaning, load_matrix, matrix_dict
from valuerank.web.templating import templates

router = APIRouter(include_in_schema=False)

# Rows the page draws by default (sorted by disagreement, the ones worth reading first) and at
# most (`?rows=`); each costs ~1 ms to build and render, and the API answers them all.
ROWS_SHOWN = 100
ROWS_MAX = 1000
OTHER_RUNS_OFFERED = 8
HEAT_STEPS = 16  # quarter steps of the 1–5 scale: heat-0 (1.00) … heat-16 (5.00)

Ref = Annotated[str | None, Query(max_length=100)]


def heat_class(mean: float | None) -> str:
    """The cell's colour class: the mean to the nearest quarter of the scale."""
    if mean is None:
        return "heat-none"
    span = CODES[-1] - CODES[0]
    step = round((min(max(mean, CODES[0]), CODES[-1]) - CODES[0]) / span * HEAT_STEPS)
    return f"heat-{step}"


def transcripts_link(run_id: str, model: str, scenario_id: str, ids: list[str]) -> str | None:
    """Where a cell leads: its one transcript, or the list of its samples."""
    if not ids:
        return None
    if len(ids) == 1:
        return f"/transcripts/{ids[0]}"
    return "/transcripts?" + urlencode({"run": run_id, "model": model, "scenario": scenario_id})


def answers_link(run_id: str, scenario_id: str, compare: str | None = None) -> str:
    path = f"/runs/{run_id}/scenarios/{quote(scenario_id, safe='')}"
    return path + ("?" + urlencode({"compare": compare}) if compare else "")


async def other_runs(
    conn: AsyncConnection, org_id: str, definition_id: str | None, shown: list[str]
) -> list[Any]:
    """The newest other runs of a definition version, to put beside the ones shown."""
    if definition_id is None:
        return []
    rows = await conn.execute(
        select(runs.c.id, runs.c.name, runs.c.created_at)
        .where(
            runs.c.org_id == org_id,
            runs.c.definition_id == definition_id,
            runs.c.id.not_in(shown),
        )
        .order_by(runs.c.created_at.desc(), runs.c.id.desc())
        .limit(OTHER_RUNS_OFFERED)
    )
    return list(rows)


# The matrix page's settings and their defaults (left out of its links).
DEFAULTS: dict[str, Any] = {
    "sort": SORT_DISAGREEMENT,
    "show": "all",
    "basis": "model",
    "threshold": DEFAULT_THRESHOLD,
    "rows": ROWS_SHOWN,
}


def matrix_link(run_id: str, state: dict[str, Any], **changes: Any) -> str:
    """The matrix page with some of its settings (`state`, and `compare`: run ids) changed."""
    chosen = {**state, **changes}
    params = [
        (k, f"{v:g}" if isinstance(v, float) else str(v))
        for k, v in chosen.items()
        if k in DEFAULTS and v != DEFAULTS[k]
    ]
    params += [("compare", c) for c in chosen.get("compare", [])]
    return f"/runs/{run_id}/matrix" + (f"?{urlencode(params)}" if params else "")


def sort_state(current: str, key: str) -> tuple[str, str | None]:
    """A sortable header's link target (its key, or the key reversed when the rows are
    already sorted by it) and its `aria-sort` (None when the rows are sorted otherwise)."""
    reversed_ = current.startswith("-")
    if current.lstrip("-") != key:
        return key, None
    high_first = (key == SORT_DISAGREEMENT) != reversed_
    return (key if reversed_ else "-" + key), ("descending" if high_first else "ascending")


@router.get("/runs/{run_id}/matrix", response_class=HTMLResponse)
async def matrix_page(
    request: Request,
    run_id: str,
    ctx: Viewer,
    sort: Annotated[str, Query(max_length=400)] = SORT_DISAGREEMENT,
    show: Literal["all", "differ", "split"] = "all",
    basis: Literal["model", "judges"] = "model",
    threshold: Annotated[float, Query(gt=0, le=MAX_RANGE)] = DEFAULT_THRESHOLD,
    compare: Annotated[list[str] | None, Query(max_length=MAX_COMPARED)] = None,
    rows: Annotated[int, Query(ge=1, le=ROWS_MAX)] = ROWS_SHOWN,
) -> Response:
    async with ctx.db.transaction() as conn:
        loaded = await load_matrix(
            conn, ctx.org_id, run_id, compare=compare or (), basis=basis, threshold=threshold
        )
        shown = [r.id for r in loaded.runs]
        others = await other_runs(conn, ctx.org_id, loaded.runs[0].definition_id, shown)
    ordered = sorted_rows(loaded.matrix, sort, show)
    data = matrix_dict(loaded, ordered[:rows], sort=sort, show=show)
    compared = shown[1:]
    state: dict[str, Any] = {
        "sort": sort,
        "show": show,
        "basis": basis,
        "threshold": threshold,
        "compare": compared,
        "rows": rows,
    }

    def link(**changes: Any) -> str:
        return matrix_link(shown[0], state, **changes)

    return templates.TemplateResponse(
        request,
        "matrix.html",
        {
            "run": loaded.runs[0],
            "m": data,
            "shown_rows": len(ordered),
            "rows_cap": rows,
            "rows_max": ROWS_MAX,
            "several_runs": len(loaded.runs) > 1,
            "run_names": {r.id: r.name or r.id for r in loaded.runs},
            "compared": compared,
            "others": others,
            "link": link,
            "sorted_by": lambda key: sort_state(sort, key),
            "heat": heat_class,
            "cell_link": transcripts_link,
            "answers_link": answers_link,
            "codes": CODES,
            "max_compared": MAX_COMPARED,
        },
    )


@router.get("/runs/{run_id}/scenarios/{scenario_id}", response_class=HTMLResponse)
async def scenario_page(
    request: Request, run_id: str, scenario_id: str, ctx: Viewer, compare: Ref = None
) -> Response:
    async with ctx.db.transaction() as conn:
        data = await scenario_answers(conn, ctx.org_id, run_id, scenario_id, compare or None)
        first = data["runs"][0]
        shown = [r["id"] for r in data["runs"]]
        others = await other_runs(conn, ctx.org_id, first["definition_id"], shown)
        dimensions = sorted(data["scenario"]["levels"])
        meaning = await definition_meaning(conn, ctx.org_id, first["definition_id"], dimensions)
    levels = [
        (name, score, meaning.levels.get(name, {}).get(int(score)))
        for name, score in sorted(data["scenario"]["levels"].items())
    ]
    return templates.TemplateResponse(
        request,
        "scenario_answers.html",
        {
            "a": data,
            "s": data["scenario"],
            "levels": levels,
            "run": first,
            "several_runs": len(data["runs"]) > 1,
            "run_names": {r["id"]: r["name"] or r["id"] for r in data["runs"]},
            "others": others,
            "answers_link": answers_link,
            "heat": heat_class,
        },
    )
