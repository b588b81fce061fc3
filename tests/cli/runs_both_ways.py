"""What the `runs` and `transcripts` tests share to run both ways (`cli_both`): a definition
stored without the CLI (its import is another command's), and `--work` only where the CLI
may run the jobs itself (not through a server, whose own workers run them: tests that wait
for a run to end are marked `server_worker`)."""

from __future__ import annotations

import os

from tests.api.conftest import import_demo

from valuerank.client import API_URL_ENV
from valuerank.db import Database
from valuerank.definitions.service import import_definition


def through_a_server() -> bool:
    """True when `cli_both` asks a server (its `server` half)."""
    return bool(os.environ.get(API_URL_ENV))


def work_here() -> tuple[str, ...]:
    """`runs wait`'s `--work` on the database; nothing through a server."""
    return () if through_a_server() else ("--work",)


async def demo_definition(db: Database, org_id: str) -> str:
    """The demo definition's version id, stored as `definitions import` stores it."""
    return await import_demo(db, org_id)


async def definition_of(db: Database, org_id: str, markdown: str) -> str:
    """A definition's version id, stored from its text."""
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, markdown)
    return stored.version.id
