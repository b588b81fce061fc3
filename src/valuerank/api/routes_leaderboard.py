"""`GET /api/definitions/{id}/leaderboard`: a definition's models × values, the value win
rates pooled over every completed run of any version of its tree (findings/leaderboard.py).
Another organisation's definition is 404, like an unknown one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse

from valuerank.api.deps import Viewer
from valuerank.api.envelope import ok
from valuerank.api.schemas import Envelope
from valuerank.api.schemas.lineage import Leaderboard
from valuerank.findings.leaderboard import SORT_MODEL, definition_leaderboard

router = APIRouter(prefix="/api/definitions", tags=["definitions"])

Sort = Annotated[
    str,
    Query(
        max_length=400,
        pattern=r"^(model|-?value:.+)$",
        description="Row order: `model` (by name), `value:NAME` (highest win rate on that "
        "value first) or `-value:NAME` (lowest first); models without a rate last.",
    ),
]


@router.get("/{definition_id}/leaderboard", response_model=Envelope[Leaderboard])
async def leaderboard_route(
    definition_id: Annotated[str, Path(max_length=100)], ctx: Viewer, sort: Sort = SORT_MODEL
) -> JSONResponse:
    """Models × values of the definition's whole tree: each value's win rate per model pooled
    over every completed run of any version (judged counts added, a scenario-clustered
    Wilson interval), with the runs, transcripts and scenarios behind each cell."""
    return ok(await definition_leaderboard(ctx.db, ctx.org_id, definition_id, sort=sort))
