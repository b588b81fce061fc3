"""/api/runs/{id}/matrix and /api/runs/{id}/scenarios/{scenario_id}/answers: where a run's
models differ. The matrix is every scenario × every model of the run (and of runs compared
with it) with each cell's decisions, each row's disagreement and the pairs of models' gaps;
the answers are one scenario's transcripts from every model side by side, with the judges'
readings. Another organisation's run (in the path or in `compare`) is 404."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse
from pydantic import Field

from valuerank.api.deps import Viewer
from valuerank.api.envelope import ok
from valuerank.api.schemas import Envelope
from valuerank.api.schemas.matrix import RunMatrix, ScenarioAnswers
from valuerank.errors import InvalidInputError
from valuerank.findings.answers import scenario_answers
from valuerank.findings.matrix import (
    DEFAULT_THRESHOLD,
    MAX_RANGE,
    SORT_DISAGREEMENT,
    Matrix,
    Row,
    SortKeyError,
    shown_rows,
    sort_keys,
    sort_rows,
)
from valuerank.findings.matrix_loading import load_matrix, matrix_dict

router = APIRouter(prefix="/api/runs", tags=["runs"])

MAX_COMPARED = 4
RunRef = Annotated[str, Path(max_length=100)]
Sort = Annotated[
    str,
    Query(
        max_length=400,
        pattern=r"^-?(disagreement|scenario|dimension:.+|column:\d{1,4})$",
        description="Row order: `disagreement` (most first), `scenario` (the run's order), "
        "`dimension:NAME` (lowest level first), `column:I` (that column's lowest mean "
        "first); a leading `-` reverses it.",
    ),
]
Show = Annotated[
    Literal["all", "differ", "split"],
    Query(description="Rows: `all`, where the models `differ`, or `split` across 3."),
]
Basis = Annotated[
    Literal["model", "judges"],
    Query(description="Count the decision read from the answer, or the judges' consensus."),
]
Threshold = Annotated[
    float,
    Query(gt=0, le=MAX_RANGE, description="The disagreement at which models differ."),
]
Compare = Annotated[
    list[Annotated[str, Field(max_length=100)]] | None,
    Query(
        max_length=MAX_COMPARED,
        description="Other runs (ids or prefixes) whose models become more columns.",
    ),
]


def sorted_rows(matrix: Matrix, sort: str, show: str) -> list[Row]:
    try:
        ordered = sort_rows(matrix, sort)
    except SortKeyError:
        raise InvalidInputError(
            f"this matrix has no sort key {sort!r}",
            hint=f"one of: {', '.join(sort_keys(matrix))} (a leading - reverses it)",
        ) from None
    return shown_rows(ordered, show, matrix.threshold)


@router.get("/{run_id}/matrix", response_model=Envelope[RunMatrix])
async def run_matrix_route(
    run_id: RunRef,
    ctx: Viewer,
    sort: Sort = SORT_DISAGREEMENT,
    show: Show = "all",
    basis: Basis = "model",
    threshold: Threshold = DEFAULT_THRESHOLD,
    compare: Compare = None,
) -> JSONResponse:
    """The run's model × scenario matrix: a row per scenario (its dimension levels, the
    range of its models' mean decisions as `disagreement`, whether they `differ` or are
    `split`, the odd one out), a cell per model (decision counts, mean, transcript ids),
    and each pair of models' mean gap. Not paginated: the whole run, sorted and filtered."""
    async with ctx.db.transaction() as conn:
        loaded = await load_matrix(
            conn, ctx.org_id, run_id, compare=compare or (), basis=basis, threshold=threshold
        )
    rows = sorted_rows(loaded.matrix, sort, show)
    return ok(matrix_dict(loaded, rows, sort=sort, show=show))


@router.get("/{run_id}/scenarios/{scenario_id}/answers", response_model=Envelope[ScenarioAnswers])
async def scenario_answers_route(
    run_id: RunRef,
    scenario_id: Annotated[str, Path(max_length=300)],
    ctx: Viewer,
    compare: Annotated[
        str | None,
        Query(max_length=100, description="Another run whose answers stand beside these."),
    ] = None,
) -> JSONResponse:
    """One scenario's answers from every model of the run (and of `compare`), side by side:
    each transcript's turns, decision, the judges' readings and their consensus."""
    async with ctx.db.transaction() as conn:
        data = await scenario_answers(conn, ctx.org_id, run_id, scenario_id, compare)
    return ok(data)
