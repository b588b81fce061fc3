"""The configured database: the settings' pool reaches the engine."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import pytest
from sqlalchemy import text
from tests.conftest import TestDatabase

from valuerank.cli.common import configured_database
from valuerank.config import Settings


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_process_keeps_its_configured_pool_and_closes_the_overflow(
    database_url: TestDatabase,
) -> None:
    """Pool 2 and overflow 1: three transactions at once get connections; when they end, two
    stay open and the third (the overflow) is closed."""
    settings = Settings(database_url=database_url.url, db_pool_size=2, db_pool_overflow=1)
    db = configured_database(settings)
    try:
        async with AsyncExitStack() as stack:
            conns = [await stack.enter_async_context(db.transaction()) for _ in range(3)]
            answers = await asyncio.gather(*(c.scalar(text("SELECT 1")) for c in conns))
            assert answers == [1, 1, 1]
            assert db.engine.pool.checkedout() == 3  # type: ignore[attr-defined]
        assert db.engine.pool.checkedin() == 2  # type: ignore[attr-defined]
    finally:
        await db.dispose()


def test_the_pool_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="db_pool_size"):
        Settings(db_pool_size=0)
