"""Exports and imports through a server: `valuerank export …` and `valuerank import …` when
VALUERANK_API_URL is set. An export's bytes are streamed from the API into the user's file
(the caller opens it: atomically); an import's file (a folder zipped here) is uploaded.

The headers below tell the CLI what it reports locally from the database (ids, counts)
without reading the file back; the routes of api/routes_exchange.py set them."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import IO, Any
from urllib.parse import unquote

from valuerank.client.api import ApiClient, ApiError, with_query

RUN_ID_HEADER = "X-Run-Id"  # the run's id (a run or table export)
CLI_RUN_ID_HEADER = "X-Cli-Run-Id"  # the CLI run id in the run ZIP's manifest, %-quoted
TRANSCRIPTS_HEADER = "X-Run-Transcripts"  # how many transcripts the run ZIP holds
ROWS_HEADER = "X-Table-Rows"  # how many rows a table export holds

CHUNK = 1 << 16
_FILENAME = re.compile(r'filename="([^"]*)"')


@dataclass(frozen=True)
class Saved:
    """An export written to the user's file: the server's name for it, its type, size and
    the answer's headers (lower-case names)."""

    file_name: str | None
    media_type: str
    size: int
    headers: dict[str, str]

    def header(self, name: str) -> str:
        """A header the route sets; BAD_API_RESPONSE when an older server did not."""
        value = self.headers.get(name.lower())
        if value is None:
            raise ApiError(
                f"the server's export has no {name} header",
                code="BAD_API_RESPONSE",
                hint="upgrade the server to this version of ValueRank",
            )
        return unquote(value)


def save_download(
    client: ApiClient,
    path: str,
    open_file: Callable[[str | None], AbstractContextManager[IO[bytes]]],
) -> Saved:
    """POST `path` (an export route) and copy the file it answers into
    `open_file(server's file name)`, chunk by chunk: memory does not grow with the file.
    The file is opened only once the server has answered with one (an error writes none)."""
    with client.download("POST", path) as answer:
        headers = {k.lower(): v for k, v in answer.headers.items()}
        found = _FILENAME.search(headers.get("content-disposition", ""))
        size = 0
        with open_file(found.group(1) if found else None) as out:
            while chunk := _read(client, answer):
                out.write(chunk)
                size += len(chunk)
    media_type = headers.get("content-type", "application/octet-stream")
    return Saved(found.group(1) if found else None, media_type, size, headers)


def _read(client: ApiClient, answer: Any) -> bytes:
    try:
        chunk: bytes = answer.read(CHUNK)
    except OSError as exc:  # not the file's error: the connection's
        raise ApiError(
            f"the answer of the ValueRank server at {client.base_url} broke off: {exc}",
            code="API_UNAVAILABLE",
            hint="try again; nothing was written",
        ) from None
    return chunk


def zip_files(files: Mapping[str, bytes]) -> bytes:
    """A ZIP of `files` (relative POSIX path → bytes) in memory: a folder as one upload."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def upload_import(client: ApiClient, data: bytes, *, filename: str) -> dict[str, Any]:
    """POST /api/import: what the file held (`kind`) and what became of it."""
    answer: dict[str, Any] = client.upload(
        with_query("/api/import", filename=filename), data, "application/zip"
    )
    return answer


def upload_table(
    client: ApiClient,
    data: bytes,
    *,
    filename: str,
    name: str | None,
    preamble: str | None,
) -> dict[str, Any]:
    """POST /api/import/table: the table of dilemmas stored as a definition (its summary,
    `created`, `scenarios`, `table_dimensions`)."""
    path = with_query("/api/import/table", filename=filename, name=name, preamble=preamble)
    answer: dict[str, Any] = client.upload(path, data, "application/octet-stream")
    return answer
