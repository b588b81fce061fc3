"""Tasks, tags and validations on SQLite and PostgreSQL: organisation scoping, history,
idempotent recording, the version the cache is keyed by, the updates written with them, and
all-or-nothing writes."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from valuerank.db import Database
from valuerank.db.tables import events, validations
from valuerank.orgs import ensure_org
from valuerank.registry.service import UnknownModelError
from valuerank.validation import events as updates
from valuerank.validation.cache import CachedRead, ReadCache
from valuerank.validation.errors import RaTagNotFoundError, TaskNotFoundError
from valuerank.validation.model import Task
from valuerank.validation.reads import multi_model_view
from valuerank.validation.store import (
    NewValidation,
    add_tag,
    create_task,
    current_validations,
    get_task,
    list_tags,
    list_tasks,
    record_validation,
)

JWT = "#COMPLETION_DRIVE_IMPL: Using JWT tokens for stateless authentication"
UTIL = "scripted:utilitarian"


async def _count(db: Database, table: object) -> int:
    async with db.transaction() as conn:
        return int(await conn.scalar(select(func.count()).select_from(table)))  # type: ignore[arg-type]


async def test_another_organisations_task_is_not_found(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
        theirs = await create_task(conn, other, "Theirs")
        await add_tag(conn, other, theirs.id, JWT, "ra_1")
    async with db.transaction() as conn:
        with pytest.raises(TaskNotFoundError):
            await get_task(conn, org_id, theirs.id)
        with pytest.raises(TaskNotFoundError):
            await list_tags(conn, org_id, theirs.id)
        with pytest.raises(TaskNotFoundError):
            await add_tag(conn, org_id, theirs.id, JWT)
        assert await list_tasks(conn, org_id, limit=10) == []
    async with db.transaction() as conn:
        with pytest.raises(TaskNotFoundError):
            await record_validation(
                conn, org_id, theirs.id, "ra_1", NewValidation(UTIL, "validated", 90)
            )
    with pytest.raises(TaskNotFoundError):
        await multi_model_view(db, org_id, theirs.id, "ra_1")
    assert await _count(db, validations) == 0


async def test_recording_is_idempotent_per_request_key_and_keeps_history(
    db: Database, org_id: str
) -> None:
    async with db.transaction() as conn:
        task = await create_task(conn, org_id, "Auth")
        await add_tag(conn, org_id, task.id, JWT, "ra_1")
    vote = NewValidation(UTIL, "validated", 90, "looks right")
    async with db.transaction() as conn:
        first = await record_validation(conn, org_id, task.id, "ra_1", vote, request_key="k1")
    async with db.transaction() as conn:  # the same job executed again
        again = await record_validation(
            conn, org_id, task.id, "ra_1", NewValidation(UTIL, "rejected", 10), request_key="k1"
        )
    assert first.created and not again.created
    assert again.validation == first.validation
    assert await _count(db, validations) == 1
    assert await _count(db, events) == 2  # one validation_added, one consensus_updated

    async with db.transaction() as conn:  # a new round by the same model replaces its vote
        third = await record_validation(
            conn, org_id, task.id, "ra_1", NewValidation(UTIL, "partial", 70), request_key="k2"
        )
        current = await current_validations(conn, org_id, task.id, "ra_1")
    assert [v.id for v in current] == [third.validation.id]
    assert third.consensus.score == 0.5 and third.consensus.total == 1
    assert await _count(db, validations) == 2
    async with db.transaction() as conn:
        seen = await updates.updates_after(conn, org_id, 0)
    assert [u.type for u in seen] == [
        updates.VALIDATION_ADDED,
        updates.CONSENSUS_UPDATED,
    ] * 2
    assert seen[-1].data["consensus"]["consensus"] == 0.5
    assert seen[0].data["validation"]["notes"] == "looks right"


async def test_a_failed_recording_writes_nothing(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        task = await create_task(conn, org_id, "Auth")
        await add_tag(conn, org_id, task.id, JWT, "ra_1")
    version = (await _get(db, org_id, task.id)).version
    for tag, vote, error in (
        ("ra_nope", NewValidation(UTIL, "validated", 90), RaTagNotFoundError),
        ("ra_1", NewValidation("openai:no-such-model", "validated", 90), UnknownModelError),
    ):
        with pytest.raises(error):
            async with db.transaction() as conn:
                await record_validation(conn, org_id, task.id, tag, vote)
    assert await _count(db, validations) == 0 and await _count(db, events) == 0
    assert (await _get(db, org_id, task.id)).version == version  # rolled back with it


async def _get(db: Database, org_id: str, task_id: int) -> Task:
    async with db.transaction() as conn:
        return await get_task(conn, org_id, task_id)


async def test_writes_bump_the_version_reads_are_cached_under(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        task = await create_task(conn, org_id, "Auth")
        tag, created = await add_tag(conn, org_id, task.id, JWT)
        same, again = await add_tag(conn, org_id, task.id, JWT, tag.id)
    assert created and not again and same == tag and tag.position == 1
    cache = ReadCache()
    first = await multi_model_view(db, org_id, task.id, tag.id, cache=cache)
    assert (
        not first.cached
        and (await multi_model_view(db, org_id, task.id, tag.id, cache=cache)).cached
    )
    before = (await _get(db, org_id, task.id)).version
    async with db.transaction() as conn:
        await record_validation(conn, org_id, task.id, tag.id, NewValidation(UTIL, "validated", 90))
    assert (await _get(db, org_id, task.id)).version == before + 1
    fresh = await multi_model_view(db, org_id, task.id, tag.id, cache=cache)
    assert not fresh.cached and fresh.data()["model_count"] == 1


async def test_cache_entries_expire_after_the_ttl() -> None:
    now = [1000.0]
    cache = ReadCache(ttl_seconds=300, timer=lambda: now[0])
    cache.put("k", CachedRead(b"{}", 1))
    now[0] += 299
    assert cache.get("k") is not None
    now[0] += 2
    assert cache.get("k") is None and len(cache) == 0
