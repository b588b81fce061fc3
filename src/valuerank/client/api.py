"""Ask a ValueRank server's API: the envelope's `data` (or a file, streamed), or an
`ApiError` with the server's code and hint (or one of ours when the server cannot be reached
or is not a ValueRank server).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

# The settings' names (valuerank.config.Settings.api_url / api_token with the VALUERANK_
# prefix), read here from the environment without loading pydantic-settings.
API_URL_ENV = "VALUERANK_API_URL"
API_TOKEN_ENV = "VALUERANK_API_TOKEN"
TIMEOUT_SECONDS = 30.0
# A larger answer is refused rather than held in memory (a run's detail is a few KB).
MAX_ANSWER_BYTES = 64 * 1024 * 1024
PAGE = 500  # the API's largest page (api/pagination.py): a listing takes fewest requests


class ApiError(Exception):
    """A request that got no usable answer: `code` is UPPER_SNAKE (the server's own when it
    sent one), `hint` says what to do."""

    def __init__(self, message: str, *, code: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.hint = hint


@dataclass(frozen=True)
class Raw:
    """A request body sent as it is (a file's bytes), not as JSON."""

    data: bytes
    content_type: str


@dataclass(frozen=True)
class ApiClient:
    """One server: its base URL (`https://valuerank.example.org`, or with a path prefix) and
    the API token sent as `Authorization: Bearer` (none: the server must let the request in
    without one, e.g. a loopback client of a server with auto-login)."""

    base_url: str
    token: str | None = field(default=None, repr=False)  # a secret: never in a repr or log
    timeout: float = TIMEOUT_SECONDS

    @classmethod
    def configured(cls, url: str | None, token: str | None) -> ApiClient | None:
        """The server the settings name, or None: a blank URL or token is unset."""
        url = (url or "").strip()
        return cls(url, (token or "").strip() or None) if url else None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ApiClient | None:
        """The server named by VALUERANK_API_URL in `environ`, with VALUERANK_API_TOKEN."""
        return cls.configured(environ.get(API_URL_ENV), environ.get(API_TOKEN_ENV))

    def url(self, path: str) -> str:
        """The full URL of `path`; INVALID_API_URL unless the base is an http(s) URL."""
        base = self.base_url.strip()
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ApiError(
                f"{API_URL_ENV} must be an http:// or https:// URL, not {self.base_url!r}",
                code="INVALID_API_URL",
                hint="e.g. VALUERANK_API_URL=http://127.0.0.1:8000 (what `valuerank serve` "
                "prints when it starts)",
            )
        return base.rstrip("/") + path

    def get(self, path: str) -> Any:
        """GET `path` (below the base URL; segments already quoted, see `segment`)."""
        return self._envelope(self._send("GET", path))

    def post(self, path: str, body: Any = None) -> Any:
        """POST `body` as JSON to `path`: the envelope's `data`."""
        return self._envelope(self._send("POST", path, body))

    def items(self, path: str, key: str, *, most: int | None = None, **query: Any) -> list[Any]:
        """Every item of a paginated list (`key` in each page), following `next_cursor`, in
        the API's order; at most `most`. `query`: filters (None ones left out)."""
        found: list[Any] = []
        cursor: str | None = None
        while True:
            params = {k: v for k, v in query.items() if v is not None}
            params["limit"] = PAGE if most is None else min(PAGE, most - len(found))
            if cursor:
                params["cursor"] = cursor
            data = self.get(f"{path}?{urlencode(params)}")
            found.extend(data[key])
            cursor = data.get("next_cursor")
            if not cursor or (most is not None and len(found) >= most):
                return found

    def created(self, path: str, body: Any = None) -> tuple[Any, bool]:
        """POST `body` as JSON to `path`: the envelope's `data`, and whether the server
        answered 201 Created (200: it was there already)."""
        with self._open("POST", path, body) as response:
            status = int(response.status)
            data: bytes = response.read(MAX_ANSWER_BYTES + 1)
        return self._envelope(data), status == 201

    def put(self, path: str, body: Any = None) -> Any:
        """PUT `body` as JSON to `path`: the envelope's `data`."""
        return self._envelope(self._send("PUT", path, body))

    def patch(self, path: str, body: Any = None) -> Any:
        """PATCH `body` as JSON to `path`: the envelope's `data`."""
        return self._envelope(self._send("PATCH", path, body))

    def delete(self, path: str) -> Any:
        """DELETE `path`: the envelope's `data`."""
        return self._envelope(self._send("DELETE", path))

    def upload(self, path: str, data: bytes, content_type: str) -> Any:
        """POST a file's bytes as the raw body (`content_type`) to `path`, as the API's
        upload routes take them (`?filename=` in `path` names it): the envelope's `data`."""
        return self._envelope(self._send("POST", path, Raw(data, content_type)))

    @contextmanager
    def download(self, method: str, path: str, body: Any = None) -> Iterator[Any]:
        """The answer of a route that sends a file (an export), open to be read as it
        comes (its `headers`; iterate it for lines), closed when the block ends."""
        response = self._open(method, path, body)
        with response:
            yield response

    def _send(self, method: str, path: str, body: Any = None) -> bytes:
        with self._open(method, path, body) as response:
            data: bytes = response.read(MAX_ANSWER_BYTES + 1)
        return data

    def _open(self, method: str, path: str, body: Any) -> Any:
        """The server's answer, open; an ApiError when there is none or it refuses. `body`:
        sent as JSON, or as it is when `Raw`."""
        # Here, not with the module: every CLI command imports this class, few send requests.
        import urllib.error
        import urllib.request

        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if isinstance(body, Raw):
            data = body.data
            headers["Content-Type"] = body.content_type
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.url(path), data=data, headers=headers, method=method)
        try:
            return urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            with exc:
                raise self._refusal(exc.code, exc.read(MAX_ANSWER_BYTES)) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise ApiError(
                f"cannot reach the ValueRank server at {self.base_url}: {reason}",
                code="API_UNAVAILABLE",
                hint=f"check {API_URL_ENV} and that `valuerank serve` is running there",
            ) from None

    def _envelope(self, body: bytes) -> Any:
        if len(body) > MAX_ANSWER_BYTES:
            raise self._not_valuerank("an answer over 64 MiB")
        envelope = _json(body)
        if not isinstance(envelope, dict) or envelope.get("success") is not True:
            raise self._not_valuerank("an answer without the API's envelope")
        return envelope.get("data")

    def _refusal(self, status: int, body: bytes) -> ApiError:
        """The server's error envelope as an ApiError (its message, code and hint)."""
        envelope = _json(body)
        if not isinstance(envelope, dict) or not isinstance(envelope.get("code"), str):
            return self._not_valuerank(f"HTTP {status} without the API's error envelope")
        code = envelope["code"]
        hint = envelope.get("hint")
        if status == 401:  # say how to fix it here, in the CLI's terms
            hint = (
                f"set {API_TOKEN_ENV} to a valid API token of this server "
                "(`valuerank tokens create` on it)"
            )
        return ApiError(
            str(envelope.get("error") or f"HTTP {status}"),
            code=code,
            hint=hint if isinstance(hint, str) else None,
        )

    def _not_valuerank(self, what: str) -> ApiError:
        return ApiError(
            f"{self.base_url} sent {what}: is it a ValueRank server?",
            code="BAD_API_RESPONSE",
            hint=f"point {API_URL_ENV} at the address `valuerank serve` prints",
        )


def with_query(path: str, **params: Any) -> str:
    """`path` with the parameters given (None: left out; booleans as true/false)."""
    given = {
        k: ("true" if v else "false") if isinstance(v, bool) else v
        for k, v in params.items()
        if v is not None
    }
    return f"{path}?{urlencode(given)}" if given else path


def segment(value: str) -> str:
    """`value` as one path segment: a run reference with `/` or `?` stays one segment."""
    return quote(value, safe="")


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
