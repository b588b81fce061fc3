"""People as judges: /api/transcripts/{id}/readings (a person's reading of a transcript:
the values it prioritises and deprioritises, from the run's rubric) and /api/runs/{id}/read-next
(the next transcript of the run's random sample this person has not read). Recording and
deleting need the member role (a viewer reads only); another organisation's transcript or run
is 404; a name that is not the rubric's is 422 UNKNOWN_VALUE. runs/human_readings.py is the
service."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field

from valuerank.api.deps import ForbiddenError, Member, RequestContext, Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import NO_NUL, Body
from valuerank.runs.human_readings import (
    MAX_NOTE,
    delete_reading,
    list_readings,
    next_unread,
    read_target,
    record_reading,
)
from valuerank.runs.service import get_run

router = APIRouter(tags=["transcripts"])

ValueName = Annotated[str, Field(min_length=1, max_length=300, pattern=NO_NUL)]


class ReadingBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    prioritized_values: list[ValueName] = Field(
        default_factory=list, max_length=100, description="Values the answer prioritises."
    )
    deprioritized_values: list[ValueName] = Field(
        default_factory=list, max_length=100, description="Values the answer deprioritises."
    )
    note: str = Field(default="", max_length=MAX_NOTE, pattern=NO_NUL)


def _user(ctx: RequestContext) -> str:
    if ctx.principal.user_id is None:
        raise ForbiddenError("only a signed-in person can read transcripts as a judge")
    return ctx.principal.user_id


@router.get("/api/transcripts/{transcript_id}/readings")
async def list_readings_route(transcript_id: str, ctx: Viewer) -> JSONResponse:
    """People's readings of the transcript (`reader` is `human:<email>`), with the values of
    the run's rubric a reading may name."""
    async with ctx.db.transaction() as conn:
        target = await read_target(conn, ctx.org_id, transcript_id)
        found = await list_readings(conn, ctx.org_id, target.transcript_id)
    return ok(
        {
            "transcript_id": target.transcript_id,
            "run_id": target.run_id,
            "rubric": target.rubric,
            "values": list(target.values),
            "readings": [r.to_dict() for r in found],
        }
    )


@router.post("/api/transcripts/{transcript_id}/readings", status_code=201)
async def record_reading_route(transcript_id: str, body: ReadingBody, ctx: Member) -> JSONResponse:
    """Record your reading of the transcript (replacing your earlier one): the values of the
    run's rubric it prioritises and deprioritises. Stored beside the judges' judgments, never
    among them; the run's analysis compares the judges with it (`judgeAgreement.withPeople`)."""
    async with ctx.db.transaction(immediate=True) as conn:
        reading = await record_reading(
            conn,
            ctx.org_id,
            transcript_id,
            _user(ctx),
            body.prioritized_values,
            body.deprioritized_values,
            body.note,
        )
    return ok(reading.to_dict(), status_code=201)


@router.delete("/api/transcripts/{transcript_id}/readings")
async def delete_reading_route(transcript_id: str, ctx: Member) -> JSONResponse:
    """Delete your reading of the transcript (404 READING_NOT_FOUND when you have none)."""
    async with ctx.db.transaction(immediate=True) as conn:
        await delete_reading(conn, ctx.org_id, transcript_id, _user(ctx))
    return ok({"deleted": True, "transcript_id": transcript_id})


@router.get("/api/runs/{run_id}/read-next")
async def read_next_route(run_id: str, ctx: Member) -> JSONResponse:
    """The next transcript of the run you have not read, in an order fixed for you and the
    run (the same every time), and how many of its transcripts you have read."""
    async with ctx.db.transaction() as conn:
        run = await get_run(conn, ctx.org_id, run_id)
        state = await next_unread(conn, ctx.org_id, run.id, _user(ctx))
    return ok(state.to_dict())
