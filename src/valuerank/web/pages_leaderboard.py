"""A definition's leaderboard page, `/definitions/{id}/leaderboard`: models × values, each
value's win rate pooled over every completed run of any version of the definition's tree,
with its interval and the runs and transcripts behind it, sorted by model or by a value's
win rate (links, no script). It reads what `GET /api/definitions/{id}/leaderboard` answers,
through the same service."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from valuerank.api.deps import Viewer
from valuerank.findings.leaderboard import SORT_MODEL, VALUE_SORT, definition_leaderboard
from valuerank.web.templating import templates

router = APIRouter(include_in_schema=False)


def sort_link(definition_id: str, current: str, value: str | None) -> tuple[str, str | None]:
    """(the link a column heading sorts by, its aria-sort now): a value sorts highest first,
    then lowest first; `None` is the model column."""
    base = f"/definitions/{definition_id}/leaderboard"
    if value is None:
        target, aria = SORT_MODEL, "ascending" if current == SORT_MODEL else None
    else:
        key = VALUE_SORT + value
        target = "-" + key if current == key else key
        aria = {key: "descending", "-" + key: "ascending"}.get(current)
    return base + ("" if target == SORT_MODEL else "?" + urlencode({"sort": target})), aria


@router.get("/definitions/{definition_id}/leaderboard", response_class=HTMLResponse)
async def leaderboard_page(
    request: Request,
    definition_id: str,
    ctx: Viewer,
    sort: Annotated[str, Query(max_length=400)] = SORT_MODEL,
) -> Response:
    board = await definition_leaderboard(ctx.db, ctx.org_id, definition_id, sort=sort)

    def sorted_by(value: str | None) -> tuple[str, str | None]:
        return sort_link(board["definition_id"], board["sort"], value)

    return templates.TemplateResponse(
        request, "leaderboard.html", {"board": board, "sorted_by": sorted_by}
    )
