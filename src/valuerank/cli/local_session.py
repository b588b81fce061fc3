"""A transaction for the few commands that work on the database only, never through a server
(they administer the install itself, which the API does not let anyone do remotely): with
VALUERANK_API_URL set they say so on stderr and go on (`configured_database(local_only=True)`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from valuerank.cli.common import Session, database


@asynccontextmanager
async def local_session() -> AsyncIterator[Session]:
    """As `common.session()` (one immediate transaction), for a local-only command."""
    async with database(local_only=True) as opened, opened.db.transaction(immediate=True) as conn:
        yield Session(db=opened.db, conn=conn, org_id=opened.org_id, settings=opened.settings)
