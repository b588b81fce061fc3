"""Reading an uploaded file from a request: a multipart form (its `file` field) or the raw
body (the file name then comes from `?filename=`). The size is bounded before this runs, by
`limits.BodyLimitMiddleware` (the upload paths have their own, larger limit)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from starlette.datastructures import UploadFile
from starlette.requests import Request

from valuerank.errors import ValueRankError

MAX_FILENAME = 255


class InvalidUploadError(ValueRankError):
    code = "INVALID_UPLOAD"
    http_status = 400


@dataclass(frozen=True)
class Upload:
    filename: str | None  # the base name the client gave, if any
    data: bytes

    def text(self) -> str:
        """The file as UTF-8 text (a definition, a rubric); INVALID_UPLOAD if it is not."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidUploadError(
                f"the upload is not UTF-8 text (byte {exc.start})", hint="save the file as UTF-8"
            ) from None


def _base_name(name: str | None) -> str | None:
    """The last part of a client's file name (never a path), or None."""
    if not name:
        return None
    base = PurePosixPath(name.replace("\\", "/")).name.strip()
    if not base or "\x00" in base:
        return None
    return base[:MAX_FILENAME]


async def read_upload(request: Request, *, filename: str | None = None) -> Upload:
    """The uploaded file; INVALID_UPLOAD when there is none or the form is malformed."""
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        try:
            form = await request.form(max_files=1, max_fields=16)
        except ValueRankError:
            raise
        except Exception as exc:  # python-multipart's and starlette's parse errors
            if getattr(exc, "status_code", None) == 413:
                raise  # the body limit: answered 413 by the app
            raise InvalidUploadError(
                "the multipart form could not be read",
                hint="send the file in a form field named `file`",
            ) from None
        part: Any = form.get("file")
        if not isinstance(part, UploadFile):
            raise InvalidUploadError(
                "the form has no file in a field named `file`",
                hint="e.g. curl -F file=@exp-demo.md …",
            )
        data = await part.read()
        await form.close()
        upload = Upload(_base_name(part.filename) or _base_name(filename), data)
    else:
        upload = Upload(_base_name(filename), await request.body())
    if not upload.data:
        raise InvalidUploadError(
            "the upload is empty",
            hint="send the file as the body (with ?filename=NAME) or in a form field `file`",
        )
    return upload


def upload_openapi(*media_types: str) -> dict[str, Any]:
    """The OpenAPI `requestBody` of an upload route: the raw file, or a form with `file`."""
    raw = {"schema": {"type": "string", "format": "binary"}}
    form = {
        "schema": {
            "type": "object",
            "properties": {"file": {"type": "string", "format": "binary"}},
            "required": ["file"],
        }
    }
    content: dict[str, Any] = {media: raw for media in media_types}
    content["multipart/form-data"] = form
    return {"requestBody": {"required": True, "content": content}}
