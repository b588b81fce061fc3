"""/api/assumptions: the multi-model validation API of the seed document, and what a client
needs to feed it (tasks, RA tags, validations recorded directly or asked of models).

Reads need the viewer role, writes the member role. Another organisation's task answers
TASK_NOT_FOUND, like an unknown one. Errors use the seed's codes: TASK_NOT_FOUND and
RA_TAG_NOT_FOUND (404), INVALID_TASK_ID (422, a task id that is not a positive integer),
CONSENSUS_CALCULATION_ERROR (500), CACHE_ERROR (504, `Cache-Control: only-if-cached` without
a fresh cached answer), DATABASE_ERROR (503, every database failure on these routes).
The consensus reads are cached (valuerank.validation.cache): `cached: true` on a hit, and
`?debug=true` adds the read's timings.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import ConfigDict, Field
from sqlalchemy.exc import DataError, DBAPIError, OperationalError

from valuerank.api.deps import Context, Member, Viewer
from valuerank.api.envelope import ok, success_json
from valuerank.api.fields import NOT_BLANK, Body
from valuerank.api.pagination import Cursor, InvalidCursorError, Limit, decode_cursor, page
from valuerank.api.schemas import Debugged, Envelope, also
from valuerank.api.schemas.assumptions import (
    MultiModelView,
    ReadTimings,
    RecordedValidation,
    TagPage,
    TaskConsensus,
    TaskPage,
    ValidationJobs,
)
from valuerank.consensus.consensus import Outcome
from valuerank.providers.model_id import MODEL_ID_PATTERN
from valuerank.queue import get_job
from valuerank.shapes import dump
from valuerank.validation.cache import ReadCache
from valuerank.validation.errors import ValidationDatabaseError
from valuerank.validation.model import (
    MAX_DESCRIPTION,
    MAX_NAME,
    MAX_NOTES,
    MAX_TAG_TEXT,
    MAX_TASK_ID,
    TAG_ID,
    TASK_ID_PATTERN,
    RaTag,
    Task,
    parse_task_id,
)
from valuerank.validation.reads import (
    Read,
    ValidatorModels,
    available_models,
    multi_model_view,
    task_consensus,
)
from valuerank.validation.requests import (
    MAX_MODELS,
    MAX_REQUEST_ID,
    ValidationRequest,
    request_validation,
)
from valuerank.validation.rules import consensus_dict
from valuerank.validation.store import (
    NewValidation,
    add_tag,
    create_task,
    get_task,
    list_tags,
    list_tasks,
    record_validation,
)

log = logging.getLogger("valuerank.api")


class _DatabaseErrors(APIRoute):
    """Routes whose database failures answer DATABASE_ERROR (503), the seed's code."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except DataError:  # a value the database refused: the client's (422), not ours
                raise
            except (OperationalError, DBAPIError) as exc:
                log.warning("database error on %s: %s", request.url.path, exc)
                raise ValidationDatabaseError(
                    "the database failed while serving this request",
                    hint="retry after a delay; if it persists, check VALUERANK_DATABASE_URL "
                    "and that the database is up and migrated (`valuerank db upgrade`)",
                ) from None

        return handle


router = APIRouter(prefix="/api/assumptions", tags=["assumptions"], route_class=_DatabaseErrors)


async def _task_id(  # async: FastAPI would run a plain function in a worker thread
    task_id: Annotated[
        str,
        Path(
            description="A task id: a positive integer.",
            # documented, not enforced by FastAPI: a mismatch is INVALID_TASK_ID below
            json_schema_extra={"pattern": TASK_ID_PATTERN},
        ),
    ],
) -> int:
    # INVALID_TASK_ID (422), not a generic validation error; exactly the documented pattern
    return parse_task_id(task_id, exact=True)


TaskId = Annotated[int, Depends(_task_id)]
Debug = Annotated[bool, Query(description="Add the read's timings as `debug`.")]


async def read_cache(app: Context) -> ReadCache | None:
    """The app's cache of consensus reads (one per app, made on first use; None when
    VALUERANK_VALIDATION_CACHE_SECONDS is 0)."""
    return app.validation_cache


Cache = Annotated[ReadCache | None, Depends(read_cache)]
CacheControl = Annotated[
    str | None,
    Header(
        alias="Cache-Control",
        description="`only-if-cached`: answer from the cache or fail with CACHE_ERROR.",
    ),
]


def _changed(cache: ReadCache | None, task_id: int) -> None:
    """After a write to the task has committed: this process's next read reads its head
    again (other processes are told by NOTIFY, within milliseconds)."""
    if cache is not None:
        cache.forget(str(task_id))


def _only_if_cached(header: str | None) -> bool:
    return header is not None and "only-if-cached" in header.lower()


def _answer(read: Read, debug: bool) -> Response:
    extra = {"debug": read.stats.to_dict()} if debug else None
    return Response(
        success_json(read.body, cached=read.cached, extra=extra), media_type="application/json"
    )


# --- the seed's reads ---------------------------------------------------------------------


@router.get(
    "/multi-model/{task_id}/{ra_tag_id}", response_model=Debugged[MultiModelView, ReadTimings]
)
async def multi_model_route(
    ctx: Viewer,
    task_id: TaskId,
    ra_tag_id: str,
    cache: Cache,
    cache_control: CacheControl = None,
    debug: Debug = False,
) -> Response:
    """Every model's current validation of an RA tag, with their consensus."""
    read = await multi_model_view(
        ctx.db,
        ctx.org_id,
        task_id,
        ra_tag_id,
        cache=cache,
        only_if_cached=_only_if_cached(cache_control),
    )
    return _answer(read, debug)


@router.get("/consensus/{task_id}", response_model=Debugged[TaskConsensus, ReadTimings])
async def consensus_route(
    ctx: Viewer,
    task_id: TaskId,
    cache: Cache,
    cache_control: CacheControl = None,
    debug: Debug = False,
) -> Response:
    """The consensus of every RA tag of a task, overall, contentious and high-confidence tags."""
    read = await task_consensus(
        ctx.db, ctx.org_id, task_id, cache=cache, only_if_cached=_only_if_cached(cache_control)
    )
    return _answer(read, debug)


@router.get("/models", response_model=Envelope[ValidatorModels])
async def models_route(ctx: Viewer) -> JSONResponse:
    """The models of the registry, with their weights in the consensus. Not paginated (the
    seed's shape, with `total_models`): the registry holds tens of models."""
    async with ctx.db.transaction() as conn:
        return ok(dump(await available_models(conn)))


# --- feeding it ---------------------------------------------------------------------------


class _Body(Body):
    model_config = ConfigDict(extra="forbid", strict=True)


class TaskIn(_Body):
    name: str = Field(min_length=1, max_length=MAX_NAME, pattern=NOT_BLANK)
    description: str = Field(default="", max_length=MAX_DESCRIPTION)


class TagIn(_Body):
    text: str = Field(
        min_length=1,
        max_length=MAX_TAG_TEXT,
        pattern=NOT_BLANK,
        description="e.g. `#COMPLETION_DRIVE_IMPL: …`",
    )
    id: str | None = Field(
        default=None,
        max_length=100,
        pattern=TAG_ID.pattern,
        description="Default: a fresh `ra_…`.",
    )


class ValidationIn(_Body):
    validator_id: str = Field(
        min_length=1,
        max_length=300,
        pattern=MODEL_ID_PATTERN,
        description="A registered model id (`provider:name`).",
    )
    # Checked by the service (INVALID_INPUT with the choices); the enum documents them.
    outcome: str = Field(
        max_length=16,
        description="validated, partial or rejected.",
        json_schema_extra={"enum": [o.value for o in Outcome]},
    )
    confidence: float = Field(ge=0, le=100, description="0..100.")
    notes: str = Field(default="", max_length=MAX_NOTES)


class ValidateIn(_Body):
    models: list[Annotated[str, Field(min_length=1, pattern=NOT_BLANK)]] = Field(
        min_length=1, max_length=MAX_MODELS
    )
    request_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_REQUEST_ID,
        pattern=NOT_BLANK,
        description="Starts a new round: each model is asked once per tag and round.",
    )


def _position(cursor: str | None) -> int | None:
    """The id or position a page cursor of these lists holds."""
    if not cursor:
        return None
    (value,) = decode_cursor(cursor, arity=1)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TASK_ID:
        raise InvalidCursorError(
            "the cursor is not one this server wrote",
            hint="pass back the next_cursor of the previous page unchanged, or omit cursor",
        )
    return value


@router.post("/tasks", status_code=201, response_model=Envelope[Task])
async def create_task_route(body: TaskIn, ctx: Member) -> JSONResponse:
    """Create a task to hold RA tags."""
    async with ctx.db.transaction(immediate=True) as conn:
        task = await create_task(conn, ctx.org_id, body.name, body.description)
    return ok(dump(task), status_code=201)


@router.get("/tasks", response_model=Envelope[TaskPage])
async def list_tasks_route(ctx: Viewer, limit: Limit = 50, cursor: Cursor = None) -> JSONResponse:
    """The organisation's tasks, newest first."""
    before = _position(cursor)
    async with ctx.db.transaction() as conn:
        tasks = await list_tasks(conn, ctx.org_id, limit=limit + 1, before_id=before)
    return ok(page("tasks", dump(tasks), limit=limit, key=lambda t: [t["id"]]))


@router.get("/tasks/{task_id}", response_model=Envelope[Task])
async def get_task_route(
    ctx: Viewer,
    task_id: TaskId,
) -> JSONResponse:
    """A task: its name, description and how many RA tags it holds."""
    async with ctx.db.transaction() as conn:
        task = await get_task(conn, ctx.org_id, task_id)
    return ok(dump(task))


@router.post(
    "/tasks/{task_id}/tags",
    status_code=201,
    response_model=Envelope[RaTag],
    responses=also(Envelope[RaTag], 200, description="The same tag was there already."),
)
async def add_tag_route(
    ctx: Member,
    task_id: TaskId,
    body: TagIn,
    cache: Cache,
) -> JSONResponse:
    """Add an RA tag (201); the same id and text again returns the tag (200)."""
    async with ctx.db.transaction(immediate=True) as conn:
        tag, created = await add_tag(conn, ctx.org_id, task_id, body.text, body.id)
    _changed(cache, task_id)
    return ok(dump(tag), status_code=201 if created else 200)


@router.get("/tasks/{task_id}/tags", response_model=Envelope[TagPage])
async def list_tags_route(
    ctx: Viewer, task_id: TaskId, limit: Limit = 50, cursor: Cursor = None
) -> JSONResponse:
    """A task's RA tags in the order they were added."""
    after = _position(cursor) or 0
    async with ctx.db.transaction() as conn:
        tags = await list_tags(conn, ctx.org_id, task_id, limit=limit + 1, after_position=after)
    return ok(page("tags", dump(tags), limit=limit, key=lambda t: [t["position"]]))


@router.post(
    "/tasks/{task_id}/tags/{ra_tag_id}/validations",
    status_code=201,
    response_model=Envelope[RecordedValidation],
)
async def record_validation_route(
    ctx: Member,
    task_id: TaskId,
    ra_tag_id: str,
    body: ValidationIn,
    cache: Cache,
) -> JSONResponse:
    """Record a model's validation of the tag; its consensus is recalculated at once."""
    new = NewValidation(body.validator_id, body.outcome, body.confidence, body.notes)
    async with ctx.db.transaction(immediate=True) as conn:
        recorded = await record_validation(conn, ctx.org_id, task_id, ra_tag_id, new)
    _changed(cache, task_id)
    data = {
        "validation": dump(recorded.validation),
        "consensus": consensus_dict(recorded.consensus),
    }
    return ok(data, status_code=201)


@router.post(
    "/tasks/{task_id}/tags/{ra_tag_id}/validate",
    status_code=202,
    response_model=Envelope[ValidationRequest],
)
async def validate_route(
    ctx: Member,
    task_id: TaskId,
    ra_tag_id: str,
    body: ValidateIn,
) -> JSONResponse:
    """Ask models to validate the tag: one queued `validate` job per model (202). Unknown or
    inactive models, or a provider without a key, are refused before anything is queued."""
    async with ctx.db.transaction(immediate=True) as conn:
        requested = await request_validation(
            conn, ctx.org_id, task_id, ra_tag_id, body.models, request_id=body.request_id
        )
    return ok(dump(requested), status_code=202)


JobIds = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=100)]] | None,
    Query(max_length=MAX_MODELS, description="A job id a validation request answered, repeated."),
]


@router.get("/jobs", response_model=Envelope[ValidationJobs])
async def validation_jobs_route(ctx: Viewer, id: JobIds = None) -> JSONResponse:
    """The state of the jobs `validate` queued (`id` repeated), to wait for their answers
    (`valuerank validation validate --wait`). Another organisation's job is 404, like an
    unknown one."""
    async with ctx.db.transaction() as conn:
        found = [await get_job(conn, job_id, org_id=ctx.org_id) for job_id in id or ()]
    return ok(
        {
            "jobs": {
                j.id: {"model": j.model, "status": j.status.value, "error": j.last_error}
                for j in found
            }
        }
    )
