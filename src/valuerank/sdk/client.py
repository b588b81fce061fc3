"""`valuerank.Client`: ValueRank from Python, on a local database or through a server.

    from valuerank import Client

    client = Client()                                  # the embedded default database
    client = Client("sqlite:///path/valuerank.db")     # a database of your own
    client = Client(url="https://vr.example.org", token="vrt_…")   # a server

Both ways give the same results and the same dataframes for the same run: the local one
calls the services the CLI and the API call, and its answers go through the API's JSON.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import TracebackType
from typing import TypeVar
from urllib.parse import urlsplit

from valuerank.client.api import API_TOKEN_ENV, ApiError
from valuerank.errors import ValueRankError
from valuerank.sdk.backend import Backend
from valuerank.sdk.results import (
    DefinitionInfo,
    RunComparison,
    RunInfo,
    TranscriptInfo,
)

T = TypeVar("T")


def _shown(url: str) -> str:
    """A URL without its credentials (a PostgreSQL password), for a repr."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]).geturl()


class ServerError(ValueRankError):
    """The server refused or could not answer: `code` and `hint` are the server's (or
    API_UNAVAILABLE, BAD_API_RESPONSE, INVALID_API_URL when there was no server to ask)."""

    def __init__(self, message: str, *, code: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.code = code


class Client:
    """ValueRank's runs, definitions, transcripts and analyses, from Python.

    `Client(database_url)` opens a database (SQLite or PostgreSQL; none: the embedded
    default, VALUERANK_DATABASE_URL when set) as the CLI does, in organisation `org` (the
    CLI's, VALUERANK_DEFAULT_ORG, when not given).
    `Client(url=…, token=…)` asks a server instead, as the token's user (the token defaults to
    VALUERANK_API_TOKEN). Errors are `valuerank.errors.ValueRankError`s with a `code` and a
    `hint`, the same codes whichever way."""

    def __init__(
        self,
        database_url: str | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        org: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        if database_url is not None and url is not None:
            raise ValueRankError(
                "give a database URL or a server URL, not both",
                hint="Client('sqlite:///valuerank.db') or Client(url='https://…', token='…')",
            )
        self.backend: Backend
        if url is not None:
            from valuerank.sdk.remote import RemoteBackend

            token = token if token is not None else os.environ.get(API_TOKEN_ENV)
            self.backend = self._asking(lambda: RemoteBackend(url, token, timeout))
            self.where = url
        else:
            from valuerank.config import get_settings
            from valuerank.sdk.local import LocalBackend

            settings = get_settings()
            database_url = database_url or settings.database_url
            self.backend = LocalBackend(database_url, org or settings.default_org)
            self.where = _shown(database_url)
        self.timeout = timeout

    @staticmethod
    def _asking(call: Callable[[], T]) -> T:
        try:
            return call()
        except ApiError as exc:
            raise ServerError(exc.message, code=exc.code, hint=exc.hint) from None

    # --- Definitions ---------------------------------------------------------------------

    def definitions(self, limit: int = 100) -> list[DefinitionInfo]:
        """Definition versions, newest first (without their content)."""
        return [DefinitionInfo(d) for d in self._asking(lambda: self.backend.definitions(limit))]

    def definition(self, ref: str) -> DefinitionInfo:
        """One definition version (id or unique prefix), with its content."""
        return DefinitionInfo(self._asking(lambda: self.backend.definition(ref)))

    # --- Runs ----------------------------------------------------------------------------

    def runs(self, limit: int = 100) -> list[RunInfo]:
        """The newest runs first, each with its status and progress."""
        return [RunInfo(r, self) for r in self._asking(lambda: self.backend.runs(limit))]

    def run(self, ref: str) -> RunInfo:
        """A run by its id or a unique prefix of it (at least 4 characters)."""
        return RunInfo(self._asking(lambda: self.backend.run(ref)), self)

    def transcript(self, transcript_id: str) -> TranscriptInfo:
        """One transcript: its markdown, turns, decision and every judge's reading."""
        return TranscriptInfo(self._asking(lambda: self.backend.transcript(transcript_id)))

    def compare(self, baseline: str, other: str) -> RunComparison:
        """Two runs compared, paired on scenario identity (`valuerank compare`); a server's
        workers compute it and this waits for them (up to the client's timeout)."""
        return RunComparison(
            self._asking(lambda: self.backend.compare(baseline, other, self.timeout))
        )

    # --- Life ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the database (a server's client holds nothing open)."""
        self.backend.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.where!r})"
