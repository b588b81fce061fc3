"""/api/rubrics: values rubrics (the CLI's `values_rubric.yaml`), versioned like definitions.

Importing a rubric whose name is stored adds a version below the latest one; the same content
is not stored twice (as `valuerank rubrics import`). Reads need the viewer role, imports the
member role; another organisation's version is 404 RUBRIC_NOT_FOUND like an unknown one.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field

from valuerank import rubrics as service
from valuerank.api.deps import Member, Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import NO_NUL, Body, LabelFilter, NameFilter
from valuerank.api.limits import MAX_JSON_TEXT
from valuerank.api.pagination import Cursor, Limit, after_created, page
from valuerank.api.schemas import SuccessEnvelope, also
from valuerank.api.uploads import read_upload, upload_openapi
from valuerank.errors import InvalidInputError

router = APIRouter(prefix="/api/rubrics", tags=["rubrics"])
STORED = also(SuccessEnvelope, 200, description="The same content was stored: nothing written.")

MAX_YAML = MAX_JSON_TEXT  # a larger file goes through POST /api/rubrics/import


class RubricBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)
    file_fields = frozenset({"yaml"})

    name: str = Field(min_length=1, max_length=300, pattern=NO_NUL)
    yaml: str = Field(min_length=1, max_length=MAX_YAML, description="The rubric file's text.")
    source_file: str | None = Field(default=None, min_length=1, max_length=255, pattern=NO_NUL)


def _imported(result: service.RubricImport, source: str | None) -> JSONResponse:
    data = {
        **service.rubric_summary(result.version),
        "content": result.version.content,
        "created": result.created,
        "warnings": [w.render(source) for w in result.warnings],
    }
    return ok(data, status_code=201 if result.created else 200)


@router.get("")
async def list_rubrics_route(
    ctx: Viewer,
    limit: Limit = 50,
    cursor: Cursor = None,
    name: NameFilter = None,
    label: LabelFilter = None,
) -> JSONResponse:
    """Rubric versions, newest first, with their value names (not their content)."""
    async with ctx.db.transaction() as conn:
        found = await service.list_rubrics_page(
            conn, ctx.org_id, limit=limit + 1, after=after_created(cursor), name=name, label=label
        )
    return ok(
        page(
            "rubrics",
            [service.rubric_summary(v) for v in found],
            limit=limit,
            key=lambda item: [item["created_at"], item["id"]],
        )
    )


@router.post("", status_code=201, responses=STORED)
async def create_rubric_route(body: RubricBody, ctx: Member) -> JSONResponse:
    """Store a rubric (its YAML text) under `name`: a new lineage, or a new version below the
    latest of that name. Same content: 200 with the stored version and `created: false`.
    A file that does not parse is 422 INVALID_FILE; tolerated quirks come back as `warnings`."""
    async with ctx.db.transaction(immediate=True) as conn:
        result = await service.import_rubric(
            conn, ctx.org_id, body.yaml, name=body.name, source_file=body.source_file
        )
    return _imported(result, body.source_file)


@router.post(
    "/import",
    status_code=201,
    responses=STORED,
    openapi_extra=upload_openapi("application/yaml", "text/plain"),
)
async def import_rubric_route(
    request: Request,
    ctx: Member,
    name: Annotated[
        str | None,
        Query(min_length=1, max_length=300, pattern=NO_NUL, description="Default: file name."),
    ] = None,
    filename: Annotated[
        str | None, Query(max_length=255, description="The file's name (raw body).")
    ] = None,
) -> JSONResponse:
    """Import a values rubric YAML file (raw body or a multipart form's `file`), like
    `valuerank rubrics import`; answers as `POST /api/rubrics`."""
    upload = await read_upload(request, filename=filename)
    text = upload.text()
    chosen = name or (PurePosixPath(upload.filename).stem if upload.filename else None)
    if not chosen:
        raise InvalidInputError(
            "the rubric needs a name", hint="pass ?name=NAME, or upload a file with a name"
        )
    async with ctx.db.transaction(immediate=True) as conn:
        result = await service.import_rubric(
            conn, ctx.org_id, text, name=chosen, source_file=upload.filename
        )
    return _imported(result, upload.filename)


@router.get("/{rubric_id}")
async def get_rubric_route(rubric_id: str, ctx: Viewer) -> JSONResponse:
    """One rubric version (id or unique prefix) with its content."""
    async with ctx.db.transaction() as conn:
        version = await service.get_rubric(conn, ctx.org_id, rubric_id)
    return ok(
        {
            **service.rubric_summary(version),
            "source_file": version.source_file,
            "content": version.content,
        }
    )


@router.get("/{rubric_id}/lineage")
async def rubric_lineage_route(rubric_id: str, ctx: Viewer) -> JSONResponse:
    """Ancestors (root first) and every descendant (with its depth) of a rubric version."""
    async with ctx.db.transaction() as conn:
        found = await service.rubric_lineage(conn, ctx.org_id, rubric_id)
    return ok(found.to_dict())


@router.get("/{rubric_id}/tree")
async def rubric_tree_route(rubric_id: str, ctx: Viewer) -> JSONResponse:
    """The whole version tree of the rubric version, from its root (children nested)."""
    async with ctx.db.transaction() as conn:
        root = await service.rubric_tree(conn, ctx.org_id, rubric_id)
    return ok(root.to_dict())
