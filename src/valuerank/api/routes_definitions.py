"""/api/definitions: versioned scenario definitions, as `valuerank definitions …` has them.

Create (JSON fields or the CLI's markdown), import an `exp-*.md` upload, list (newest first,
by name/label), show, fork, lineage, diff and the version tree. Ids may be unique prefixes
(at least 4 characters) as in the CLI. Reads need the viewer role, writes the member role;
another organisation's version is 404 DEFINITION_NOT_FOUND like an unknown one.
(`GET /api/definitions/{id}/lineage/results` is in routes_analysis.)
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field, model_validator

from valuerank.api.deps import Member, Viewer
from valuerank.api.envelope import ok
from valuerank.api.fields import (
    NO_NUL,
    Body,
    LabelFilter,
    NameFilter,
    WholeNumber,
    forbid_nul_in_schema,
)
from valuerank.api.limits import MAX_JSON_TEXT
from valuerank.api.pagination import Cursor, Limit, after_created, page
from valuerank.api.schemas import SuccessEnvelope, also
from valuerank.api.uploads import read_upload, upload_openapi
from valuerank.definitions import service
from valuerank.definitions.check import check_definition
from valuerank.definitions.edit import EDITABLE_FIELDS
from valuerank.definitions.service import StoredDefinition

router = APIRouter(prefix="/api/definitions", tags=["definitions"])
STORED = also(SuccessEnvelope, 200, description="The same content was stored: nothing written.")

MAX_TEXT = MAX_JSON_TEXT  # characters of a template, preamble or markdown file

Label = Annotated[
    str | None,
    Field(min_length=1, max_length=100, description="Version label (e.g. v2)."),
]


class LevelBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    score: WholeNumber = Field(ge=1, le=1_000_000)
    label: str = Field(min_length=1, max_length=1000)
    options: list[Annotated[str, Field(max_length=5000)]] = Field(
        default_factory=list, max_length=200
    )


class DimensionBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(min_length=1, max_length=200)
    levels: list[LevelBody] = Field(min_length=1, max_length=100)


def _one_form_schema(schema: dict[str, Any]) -> None:
    """What CreateBody._one_form enforces (a null is "not given"): `markdown` and none of
    the fields, or `name`, `template` and `dimensions` (and maybe more fields) but no
    `markdown`."""
    forbid_nul_in_schema(schema)  # what Body's own schema hook does
    schema["oneOf"] = [
        {
            "required": ["markdown"],
            "properties": {
                "markdown": {"type": "string"},
                **{field: {"type": "null"} for field in EDITABLE_FIELDS},
            },
        },
        {
            "required": ["name", "template", "dimensions"],
            "properties": {
                "markdown": {"type": "null"},
                "name": {"type": "string"},
                "template": {"type": "string"},
                "dimensions": {"type": "array"},
            },
        },
    ]


class CreateBody(Body):
    """Either `markdown` (a CLI definition file) or the definition's fields."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=_one_form_schema)
    file_fields = frozenset({"markdown"})

    markdown: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT)
    source_file: str | None = Field(default=None, min_length=1, max_length=255, pattern=NO_NUL)
    label: Label = None
    name: str | None = Field(default=None, min_length=1, max_length=300)
    template: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT)
    dimensions: list[DimensionBody] | None = Field(default=None, min_length=1, max_length=50)
    base_id: str | None = Field(default=None, min_length=1, max_length=200)
    category: str | None = Field(default=None, max_length=300)
    preamble: str | None = Field(default=None, max_length=MAX_TEXT)
    matching_rules: str | None = Field(default=None, max_length=MAX_TEXT)

    @model_validator(mode="after")
    def _one_form(self) -> CreateBody:
        given = [f for f in EDITABLE_FIELDS if getattr(self, f) is not None]
        if self.markdown is not None and given:
            raise ValueError(f"give markdown or the fields, not both (also got {given[0]})")
        if self.markdown is None:
            missing = [f for f in ("name", "template", "dimensions") if getattr(self, f) is None]
            if missing:
                raise ValueError(f"give markdown, or the fields (missing: {', '.join(missing)})")
        return self

    def fields(self) -> dict[str, Any]:
        return self.model_dump(include=set(EDITABLE_FIELDS), exclude_none=True)


class ChangesBody(Body):
    """Fields of the parent to change; those left out keep the parent's value."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str | None = Field(default=None, min_length=1, max_length=300)
    template: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT)
    dimensions: list[DimensionBody] | None = Field(default=None, min_length=1, max_length=50)
    base_id: str | None = Field(default=None, min_length=1, max_length=200)
    category: str | None = Field(default=None, max_length=300)
    preamble: str | None = Field(default=None, max_length=MAX_TEXT)
    matching_rules: str | None = Field(default=None, max_length=MAX_TEXT)


def _changes_or_markdown_schema(schema: dict[str, Any]) -> None:
    forbid_nul_in_schema(schema)  # what Body's own schema hook does
    # What ForkBody._one_form enforces: not both (a null is "not given").
    schema["not"] = {
        "required": ["changes", "markdown"],
        "properties": {"changes": {"type": "object"}, "markdown": {"type": "string"}},
    }


class ForkBody(Body):
    """Without `changes` or `markdown` the child is a copy of the parent."""

    label: Label = None
    changes: ChangesBody | None = None
    markdown: str | None = Field(
        default=None, min_length=1, max_length=MAX_TEXT, description="The child's whole file."
    )
    source_file: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        pattern=NO_NUL,
        description="The name of the file `markdown` came from.",
    )

    model_config = ConfigDict(
        extra="forbid", strict=True, json_schema_extra=_changes_or_markdown_schema
    )
    file_fields = frozenset({"markdown"})

    @model_validator(mode="after")
    def _one_form(self) -> ForkBody:
        if self.changes is not None and self.markdown is not None:
            raise ValueError("give changes or markdown, not both")
        return self


class CheckBody(Body):
    model_config = ConfigDict(extra="forbid", strict=True)
    file_fields = frozenset({"markdown"})

    markdown: str = Field(min_length=1, max_length=MAX_TEXT, description="A definition file.")
    source_file: str | None = Field(default=None, min_length=1, max_length=255, pattern=NO_NUL)


def _created(stored: StoredDefinition, created: bool) -> JSONResponse:
    """201 with the new version, or 200 with the stored one that has the same content."""
    return ok({**stored.detail(), "created": created}, status_code=201 if created else 200)


@router.get("")
async def list_definitions_route(
    ctx: Viewer,
    limit: Limit = 50,
    cursor: Cursor = None,
    name: NameFilter = None,
    label: LabelFilter = None,
) -> JSONResponse:
    """Definition versions, newest first, each with its dimensions (not its content)."""
    async with ctx.db.transaction() as conn:
        found = await service.list_definitions_page(
            conn, ctx.org_id, limit=limit + 1, after=after_created(cursor), name=name, label=label
        )
    return ok(
        page(
            "definitions",
            [s.summary() for s in found],
            limit=limit,
            key=lambda item: [item["created_at"], item["id"]],
        )
    )


@router.post("", status_code=201, responses=STORED)
async def create_definition_route(body: CreateBody, ctx: Member) -> JSONResponse:
    """Store a definition as a new lineage (`v1` unless `label` says otherwise), from its
    fields or from `markdown` (the CLI's file). The same content under the same name is not
    stored twice: that answers 200 with the stored version and `created: false`. A file or
    fields that do not parse are 422 INVALID_FILE (naming the line), fields the CLI's file
    cannot hold 422 INVALID_INPUT."""
    async with ctx.db.transaction(immediate=True) as conn:
        if body.markdown is not None:
            stored, created = await service.import_definition(
                conn, ctx.org_id, body.markdown, source_file=body.source_file, label=body.label
            )
        else:
            stored, created = await service.create_definition(
                conn, ctx.org_id, body.fields(), label=body.label
            )
    return _created(stored, created)


@router.post(
    "/import",
    status_code=201,
    responses=STORED,
    openapi_extra=upload_openapi("text/markdown", "text/plain"),
)
async def import_definition_route(
    request: Request,
    ctx: Member,
    label: Annotated[str | None, Query(min_length=1, max_length=100)] = None,
    filename: Annotated[
        str | None, Query(max_length=255, description="The file's name (raw body).")
    ] = None,
) -> JSONResponse:
    """Import a CLI definition file (`exp-*.md`): the raw body, or a multipart form's `file`.
    Like `valuerank definitions import`; answers as `POST /api/definitions`."""
    upload = await read_upload(request, filename=filename)
    text = upload.text()
    service.parse_and_check(text, upload.filename)  # fail before opening a transaction
    async with ctx.db.transaction(immediate=True) as conn:
        stored, created = await service.import_definition(
            conn, ctx.org_id, text, source_file=upload.filename, label=label
        )
    return _created(stored, created)


@router.post("/validate")
async def validate_definition_route(body: CheckBody, ctx: Viewer) -> JSONResponse:
    """Check a definition file without storing it (the editor's live check): 200 with
    `valid` and, when it is not, the parser's `error` (message, 1-based line, hint)."""
    del ctx  # any member may check a file; nothing is read or stored
    return ok(check_definition(body.markdown, body.source_file).to_dict())


@router.get("/{definition_id}")
async def get_definition_route(definition_id: str, ctx: Viewer) -> JSONResponse:
    """One version (id or unique prefix): content and matching rules (machine and prose)."""
    async with ctx.db.transaction() as conn:
        stored = await service.get_definition(conn, ctx.org_id, definition_id)
    return ok(stored.detail())


@router.post("/{definition_id}/fork", status_code=201)
async def fork_definition_route(definition_id: str, body: ForkBody, ctx: Member) -> JSONResponse:
    """A child version of this one: with `changes` (some fields replaced), with `markdown`
    (a whole new file), or a copy. Its label is the parent's + `.N` unless `label` is given
    (409 CONFLICT if the tree has it)."""
    async with ctx.db.transaction(immediate=True) as conn:
        if body.changes is not None:
            changes = body.changes.model_dump(exclude_none=True)
            stored = await service.fork_with_changes(
                conn, ctx.org_id, definition_id, changes, label=body.label
            )
        else:
            definition = None
            if body.markdown is not None:
                definition = service.parse_and_check(body.markdown)
            stored = await service.fork_definition(
                conn,
                ctx.org_id,
                definition_id,
                definition=definition,
                label=body.label,
                source_file=body.source_file if definition is not None else None,
            )
    return ok(stored.detail(), status_code=201)


@router.get("/{definition_id}/lineage")
async def lineage_route(definition_id: str, ctx: Viewer) -> JSONResponse:
    """Ancestors (root first) and every descendant (with its depth) of a version."""
    async with ctx.db.transaction() as conn:
        found = await service.lineage(conn, ctx.org_id, definition_id)
    return ok(found.to_dict())


@router.get("/{definition_id}/tree")
async def tree_route(definition_id: str, ctx: Viewer) -> JSONResponse:
    """The whole version tree the version belongs to, from its root (children nested)."""
    async with ctx.db.transaction() as conn:
        root = await service.tree(conn, ctx.org_id, definition_id)
    return ok(root.to_dict())


@router.get("/{definition_id}/diff/{other_id}")
async def diff_route(definition_id: str, other_id: str, ctx: Viewer) -> JSONResponse:
    """What changed from this version to `other_id`: front matter, preamble and template
    (unified diffs), dimensions and levels, matching rules."""
    async with ctx.db.transaction() as conn:
        a = await service.get_definition(conn, ctx.org_id, definition_id)
        b = await service.get_definition(conn, ctx.org_id, other_id)
        result = await service.diff(conn, ctx.org_id, a.version.id, b.version.id)
    return ok({"from": a.version.summary(), "to": b.version.summary(), **result.to_dict()})
