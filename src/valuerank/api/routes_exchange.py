"""Export and import as the original CLI's files (seed: api-queue-system.md).

`POST /api/export/run/{id}` answers the run ZIP `valuerank export run` writes (the same
bytes), `POST /api/export/table/{id}` the run's table (`valuerank export table`: CSV, JSON
Lines or Parquet; the Python API reads a server's runs through it),
`POST /api/export/definition/{id}` the CLI's `.md` (or, with `with_ancestry`, the lineage
ZIP), `POST /api/export/workspace` the workspace ZIP; each as a download with its file name.
Exports read only (viewer role). `POST /api/import` takes one upload — a run or workspace
ZIP, a CLI run folder zipped, a definition `.md`, a values rubric or a transcript — all or
nothing (member role). Uploads have their own body limit (`max_upload_bytes`, 413).
"""

from __future__ import annotations

import functools
import json
import tempfile
from collections.abc import Awaitable, Callable
from typing import IO, Annotated, TypeVar
from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.background import BackgroundTask

from valuerank.api.deps import Member, Viewer
from valuerank.api.envelope import ok
from valuerank.api.schemas import SuccessEnvelope, also
from valuerank.api.uploads import read_upload, upload_openapi
from valuerank.client.exchange import (
    CLI_RUN_ID_HEADER,
    ROWS_HEADER,
    RUN_ID_HEADER,
    TRANSCRIPTS_HEADER,
)
from valuerank.exchange import export_definition, write_run_zip, write_workspace
from valuerank.exchange.definition_export import ZIP
from valuerank.exchange.naming import safe_part
from valuerank.exchange.run_data import load_run
from valuerank.exchange.run_table import run_table, table_rows
from valuerank.exchange.table_files import MEDIA_TYPES, TableFormat, write_table
from valuerank.exchange.table_import import import_table
from valuerank.exchange.upload import import_read, read_uploaded
from valuerank.formats.run_table import COLUMNS_HEADER

router = APIRouter(tags=["exchange"])

WORKSPACE_FILE = "valuerank-workspace.zip"
SPOOL_BYTES = 16 * 1024 * 1024  # a larger export goes to a temporary file, not memory
CHUNK = 1 << 16
T = TypeVar("T")


def download(data: bytes, file_name: str, media_type: str) -> Response:
    """The bytes as an attachment named `file_name` (safe_part keeps it to plain characters)."""
    return Response(
        content=data,
        media_type=media_type,
        headers={"Content-Disposition": f'attachment; filename="{file_name}"'},
    )


async def spooled(write: Callable[[IO[bytes]], Awaitable[T]]) -> tuple[IO[bytes], T]:
    """A temporary file (in memory up to SPOOL_BYTES) that `write` filled, read from its
    start; closed at once if writing fails."""
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115
    try:
        result = await write(spool)
    except BaseException:
        spool.close()
        raise
    return spool, result


def attachment(spool: IO[bytes], file_name: str, media_type: str) -> StreamingResponse:
    """A spooled export as an attachment, sent in chunks, the file closed once sent."""
    size = spool.seek(0, 2)
    spool.seek(0)
    return StreamingResponse(
        iter(functools.partial(spool.read, CHUNK), b""),
        media_type=media_type,
        headers={
            "Content-Disposition": f'attachment; filename="{file_name}"',
            "Content-Length": str(size),
        },
        background=BackgroundTask(spool.close),
    )


@router.post(
    "/api/export/run/{run_id}",
    response_class=Response,
    responses={200: {"content": {ZIP: {}}, "description": "The run ZIP."}},
)
async def export_run_route(run_id: str, ctx: Viewer) -> Response:
    """The run (id or unique prefix) as the ZIP `valuerank export run` writes:
    run_manifest.yaml, scenarios/, transcripts/, definition.md, summary.csv, results.jsonl."""
    async with ctx.db.transaction() as conn:
        run = await load_run(conn, ctx.org_id, run_id)
        spool, written = await spooled(functools.partial(write_run_zip, conn, ctx.org_id, run))
    answer = attachment(spool, f"run-{safe_part(written.run_id)}.zip", ZIP)
    # What `valuerank export run` reports, without reading the ZIP back (client/exchange.py).
    answer.headers[RUN_ID_HEADER] = written.db_id
    answer.headers[CLI_RUN_ID_HEADER] = quote(written.run_id, safe="")
    answer.headers[TRANSCRIPTS_HEADER] = str(written.transcripts)
    return answer


@router.post(
    "/api/export/table/{run_id}",
    response_class=Response,
    responses={
        200: {
            "content": {media: {} for media in MEDIA_TYPES.values()},
            "description": "The run's table in the format asked.",
            "headers": {
                COLUMNS_HEADER: {
                    "description": "The table's columns, a JSON list (a run without "
                    "transcripts has no row to read them from).",
                    "schema": {"type": "string"},
                }
            },
        }
    },
)
async def export_table_route(
    run_id: str,
    ctx: Viewer,
    format: Annotated[
        TableFormat, Query(description="csv, jsonl (JSON Lines) or parquet.")
    ] = "jsonl",
    with_text: Annotated[
        bool, Query(description="Add each transcript's first answer, turns and rationale.")
    ] = False,
) -> Response:
    """The run (id or unique prefix) as one table, a row per transcript, as `valuerank
    export table` writes it: model, scenario, levels, phrasing, scale order, decision,
    refusal, each judge's values, tokens, cost, latency (the Python API's `decisions_df`)."""
    async with ctx.db.transaction() as conn:
        run = await load_run(conn, ctx.org_id, run_id)
        table = await run_table(conn, ctx.org_id, run, with_text=with_text)
        columns = table.layout.columns()
        spool, written = await spooled(
            lambda out: write_table(out, format, columns, table_rows(conn, ctx.org_id, table))
        )
    answer = attachment(spool, f"run-{safe_part(run.id)}.{format}", MEDIA_TYPES[format])
    answer.headers[COLUMNS_HEADER] = json.dumps(columns, ensure_ascii=True)
    answer.headers[RUN_ID_HEADER] = run.id
    answer.headers[ROWS_HEADER] = str(written.rows)
    return answer


@router.post(
    "/api/export/definition/{definition_id}",
    response_class=Response,
    responses={
        200: {
            "content": {"text/markdown": {}, ZIP: {}},
            "description": "The definition file, or the lineage ZIP.",
        }
    },
)
async def export_definition_route(
    definition_id: str,
    ctx: Viewer,
    with_ancestry: Annotated[
        bool, Query(description="A ZIP of every version from the root, with lineage.yaml.")
    ] = False,
) -> Response:
    """A definition version as the CLI's `exp-*.md`, as `valuerank export definition`."""
    async with ctx.db.transaction() as conn:
        exported = await export_definition(
            conn, ctx.org_id, definition_id, with_ancestry=with_ancestry
        )
    return download(exported.data, exported.file_name, exported.media_type)


@router.post(
    "/api/export/workspace",
    response_class=Response,
    responses={200: {"content": {ZIP: {}}, "description": "The workspace ZIP."}},
)
async def export_workspace_route(ctx: Viewer) -> Response:
    """Every definition and rubric version tree and every run of the organisation as one
    ZIP, as `valuerank export workspace`; `POST /api/import` restores it."""
    async with ctx.db.transaction() as conn:
        spool, _ = await spooled(functools.partial(write_workspace, conn, ctx.org_id))
    return attachment(spool, WORKSPACE_FILE, ZIP)


@router.post(
    "/api/import",
    status_code=201,
    responses=also(SuccessEnvelope, 200, description="It was all there: nothing written."),
    openapi_extra=upload_openapi(ZIP, "text/markdown", "application/yaml"),
)
async def import_route(
    request: Request,
    ctx: Member,
    filename: Annotated[
        str | None,
        Query(max_length=255, description="The file's name (raw body); it helps tell its kind."),
    ] = None,
) -> JSONResponse:
    """Import one file, all or nothing: a run ZIP, a CLI run folder zipped, a workspace ZIP
    (definition and rubric trees, then runs), a definition `.md`, a values rubric, or one
    transcript named as the CLI names them. 201 when anything was written, 200 when it was
    all there already. Broken or unknown files are 422 INVALID_IMPORT / INVALID_FILE, unsafe
    archives 400 UNSAFE_ARCHIVE (413 when they inflate too much)."""
    upload = await read_upload(request, filename=filename)
    read = await read_uploaded(upload.data, filename=upload.filename)  # off the event loop
    async with ctx.db.transaction(immediate=True) as conn:
        result = await import_read(conn, ctx.org_id, read)
    return ok(result.to_dict(), status_code=201 if result.created else 200)


@router.post(
    "/api/import/table",
    status_code=201,
    responses=also(SuccessEnvelope, 200, description="The same table was stored: nothing written."),
    openapi_extra=upload_openapi("text/csv", "application/x-ndjson", "application/octet-stream"),
)
async def import_table_route(
    request: Request,
    ctx: Member,
    filename: Annotated[
        str,
        Query(
            min_length=1,
            max_length=255,
            description="The file's name: its extension (.csv, .jsonl, .parquet) is its format.",
        ),
    ],
    name: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=300,
            description="The definition's name (default: the file's name).",
        ),
    ] = None,
    preamble: Annotated[
        str | None,
        Query(max_length=4000, description="What the models read before each dilemma."),
    ] = None,
) -> JSONResponse:
    """Import a table of dilemmas, a row per scenario, as a definition of fixed scenarios,
    as `valuerank import table` does (docs/notebooks.md): all or nothing, a missing column
    or a bad row is 422 naming the row. 201 with the stored version, or 200 and `created:
    false` when the same table was stored before."""
    upload = await read_upload(request, filename=filename)
    file_name = upload.filename or filename
    async with ctx.db.transaction(immediate=True) as conn:
        imported = await import_table(
            conn, ctx.org_id, upload.data, file_name=file_name, name=name, preamble=preamble
        )
    return ok(imported.to_dict(), status_code=201 if imported.created else 200)
