"""The validation API's reads: one tag across models (the multi-model view), a task's
consensus summary, and the models available to validate. The API serves them from a
`ReadCache` (see cache.py); the CLI reads without one.

A read looks the task's version up first, then (on a miss) the data: data read after the
version is at least as new as it, so an entry is never older than the version it is filed
under (a validation committed in between files newer data under the older version, which no
later reader asks for).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic.dataclasses import dataclass as pydantic_dataclass
from sqlalchemy import bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db import Database
from valuerank.db.tables import models as models_table
from valuerank.db.tables import validation_tasks
from valuerank.providers.catalog import catalog_model
from valuerank.queue.dialect import iso
from valuerank.registry import list_models, seed_models
from valuerank.shapes import SHAPE, Timestamp, dump
from valuerank.validation.cache import CachedRead, ReadCache, TaskHead, summary_key, view_key
from valuerank.validation.errors import CacheError
from valuerank.validation.model import Validation
from valuerank.validation.rules import (
    TagVotes,
    consensus_dict,
    summarize_task,
)
from valuerank.validation.store import (
    consensus_error,
    current_validations,
    get_tag,
    list_tags,
    tag_consensus,
    task_not_found,
)

_TASK_HEAD = select(validation_tasks.c.version, validation_tasks.c.name).where(
    validation_tasks.c.id == bindparam("task_id"),
    validation_tasks.c.org_id == bindparam("org_id"),
)


@dataclass
class ReadStats:
    """What `?debug=true` shows: time in queries and in the consensus, and the models read."""

    query_ms: float = 0.0
    consensus_ms: float = 0.0
    cache_hit: bool = False
    models: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "query_time_ms": round(self.query_ms, 3),
            "cache_hit": self.cache_hit,
            "models_queried": self.models,
            "consensus_calculation_time_ms": round(self.consensus_ms, 3),
        }


@dataclass(frozen=True)
class Read:
    """A read's data as JSON (served as is) and its stats."""

    body: bytes
    cached: bool
    stats: ReadStats = field(default_factory=ReadStats)

    def data(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.body)
        return value


def _encode(data: dict[str, Any]) -> bytes:
    """Compact JSON without the trailing `}`, so `cached` can be appended per answer."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.encode("utf-8")[:-1]


def _finish(body: bytes, cached: bool) -> bytes:
    return body + (b',"cached":true}' if cached else b',"cached":false}')


def _now() -> str:
    return iso(datetime.now(UTC)) or ""


class _Clock:
    def __init__(self, stats: ReadStats) -> None:
        self.stats = stats
        self.started = time.perf_counter()

    def queried(self) -> None:
        now = time.perf_counter()
        self.stats.query_ms += (now - self.started) * 1000
        self.started = now

    def calculated(self) -> None:
        now = time.perf_counter()
        self.stats.consensus_ms += (now - self.started) * 1000
        self.started = now


async def _head(conn: AsyncConnection, org_id: str, task_id: int) -> tuple[int, str]:
    """The task's version and name (TASK_NOT_FOUND unless it is the organisation's)."""
    row = (await conn.execute(_TASK_HEAD, {"task_id": task_id, "org_id": org_id})).first()
    if row is None:
        raise task_not_found(task_id)
    return int(row.version), str(row.name)


def _hit(cache: ReadCache | None, key: Any, stats: ReadStats) -> Read | None:
    found = cache.get(key) if cache is not None else None
    if found is None:
        return None
    stats.cache_hit, stats.models = True, found.models
    return Read(_finish(found.body, True), cached=True, stats=stats)


def _miss(only_if_cached: bool) -> None:
    if only_if_cached:
        raise CacheError(
            "no cached answer is fresh for this request (Cache-Control: only-if-cached)",
            hint="retry without only-if-cached to have it computed",
        )


# A read's builder: the data and how many models it covers, from what was loaded (pure).
Build = Callable[[], tuple[dict[str, Any], int]]
# A read's loader: given the task's name, the I/O of a miss; returns the builder.
Load = Callable[[AsyncConnection, str], Awaitable[Build]]


async def _cached_read(
    db: Database,
    org_id: str,
    task_id: int,
    key_of: Callable[[int], Any],
    load: Load,
    *,
    cache: ReadCache | None,
    only_if_cached: bool,
) -> Read:
    """The task's version (kept by the cache while trusted, else read), then the cached
    entry of `key_of(version)`, else the data (`load`, then its builder), filed under that
    key."""
    stats = ReadStats()
    clock = _Clock(stats)
    kept = cache.head(org_id, task_id) if cache is not None else None
    if kept is not None and (hit := _hit(cache, key_of(kept.version), stats)) is not None:
        clock.queried()
        return hit  # no query at all: the cache was told of every change since
    generation = cache.generation if cache is not None else 0
    async with db.transaction() as conn:
        version, task_name = await _head(conn, org_id, task_id)
        if cache is not None:
            cache.keep_head(task_id, TaskHead(org_id, version, task_name), generation)
        key = key_of(version)
        hit = _hit(cache, key, stats)
        if hit is not None:
            clock.queried()
            return hit
        _miss(only_if_cached)
        build = await load(conn, task_name)
    clock.queried()
    data, stats.models = build()
    clock.calculated()
    data["generated_at"] = _now()
    body = _encode(data)
    if cache is not None:
        cache.put(key, CachedRead(body, stats.models))
    return Read(_finish(body, False), cached=False, stats=stats)


async def multi_model_view(
    db: Database,
    org_id: str,
    task_id: int,
    tag_id: str,
    *,
    cache: ReadCache | None = None,
    only_if_cached: bool = False,
) -> Read:
    """Every model's current validation of one RA tag, with their consensus (the seed's
    multi-model view; `no_data` with consensus 0.0 and model_count 0 before any)."""

    async def load(conn: AsyncConnection, task_name: str) -> Build:
        tag = await get_tag(conn, org_id, task_id, tag_id)
        found = await current_validations(conn, org_id, task_id, tag_id)

        def build() -> tuple[dict[str, Any], int]:
            models = len({v.validator_id for v in found})
            data = {
                "task_id": task_id,
                "ra_tag_id": tag.id,
                "consensus": consensus_dict(tag_consensus(found)),
                "validations": dump(found),
                "model_count": models,
                "task_name": task_name,
                "ra_tag_text": tag.text,
            }
            return data, models

        return build

    key = functools.partial(view_key, org_id, task_id, tag_id)
    return await _cached_read(
        db, org_id, task_id, key, load, cache=cache, only_if_cached=only_if_cached
    )


async def task_consensus(
    db: Database,
    org_id: str,
    task_id: int,
    *,
    cache: ReadCache | None = None,
    only_if_cached: bool = False,
) -> Read:
    """The consensus of every RA tag of a task, the overall consensus, and the contentious
    and high-confidence tags (rules in rules.py)."""

    async def load(conn: AsyncConnection, task_name: str) -> Build:
        tags = await list_tags(conn, org_id, task_id)
        found = await current_validations(conn, org_id, task_id)

        def build() -> tuple[dict[str, Any], int]:
            by_tag: dict[str, list[Validation]] = {}
            for v in found:
                by_tag.setdefault(v.ra_tag_id, []).append(v)
            try:
                summary = summarize_task(
                    [
                        TagVotes(t.id, t.text, tuple(v.vote() for v in by_tag.get(t.id, [])))
                        for t in tags
                    ]
                )
            except (TypeError, ValueError) as exc:
                raise consensus_error(exc) from exc
            data = {
                "task_id": task_id,
                "task_name": task_name,
                "overall_consensus": summary.overall_dict(),
                "ra_tag_summaries": dump(list(summary.tags)),
                "contentious_tags": summary.contentious_tags,
                "high_confidence_tags": summary.high_confidence_tags,
            }
            return data, len({v.validator_id for v in found})

        return build

    key = functools.partial(summary_key, org_id, task_id)
    return await _cached_read(
        db, org_id, task_id, key, load, cache=cache, only_if_cached=only_if_cached
    )


@pydantic_dataclass(frozen=True, config=SHAPE)
class ValidatorModel:
    """A model of the registry, as validators are chosen from (the seed's model list)."""

    id: str
    name: str
    version: str
    provider: str
    category: str
    capabilities: list[str]
    weight: float
    active: bool
    description: str


@pydantic_dataclass(frozen=True, config=SHAPE)
class ValidatorModels:
    """The whole registry in one answer (not paginated: it holds tens of models)."""

    models: list[ValidatorModel]
    total_models: int
    active_models: int
    last_updated: Timestamp | None


async def available_models(conn: AsyncConnection) -> ValidatorModels:
    """The registry as the seed's model list (seeded from the catalog when still empty)."""
    found = await list_models(conn)
    if not found:
        await seed_models(conn)
        found = await list_models(conn)
    updated = await conn.scalar(select(func.max(models_table.c.created_at)))
    items = []
    for m in found:
        entry = catalog_model(m.id)
        items.append(
            ValidatorModel(
                id=m.id,
                name=m.display_name,
                version=m.version,
                provider=m.provider,
                category=m.category,
                capabilities=list(m.capabilities),
                weight=m.weight,
                active=m.active,
                description=entry.description if entry is not None else "",
            )
        )
    return ValidatorModels(
        models=items,
        total_models=len(items),
        active_models=sum(1 for m in found if m.active),
        last_updated=updated,
    )
