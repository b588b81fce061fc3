"""Calling models from jobs: the response cache (read only when asked), costs from the
registry, and provider errors mapped to the queue's error classes."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from valuerank.db import Database
from valuerank.db.tables import response_cache
from valuerank.pipeline.calls import ProviderPool, as_job_error, call_model, store_in_cache
from valuerank.providers.base import (
    CompletionRequest,
    Message,
    ProviderPermanent,
    ProviderRateLimited,
    ProviderTransient,
)
from valuerank.queue import Permanent, RateLimited, Transient
from valuerank.registry.service import seed_models, update_model

REQUEST = CompletionRequest(
    model="utilitarian",
    messages=(Message("user", "Should I report the defect? Rating 1-5."),),
    temperature=0.0,
    max_tokens=100,
    seed=7,
    hints={"dimension_scores": {"Harm": 3}},
)


async def test_the_cache_is_written_always_and_read_only_when_asked(
    db: Database, org_id: str
) -> None:
    pool = ProviderPool(environ={})
    async with db.transaction() as conn:
        await seed_models(conn)
        await update_model(
            conn, "scripted:utilitarian", input_price_per_mtok=1.0, output_price_per_mtok=2.0
        )
    kwargs = {"org_id": org_id, "model_id": "scripted:utilitarian", "request": REQUEST}
    fresh = await call_model(db, pool, **kwargs)  # type: ignore[arg-type]
    again = await call_model(db, pool, **kwargs)  # type: ignore[arg-type]
    cached = await call_model(db, pool, reuse_cache=True, **kwargs)  # type: ignore[arg-type]
    other_sample = await call_model(db, pool, reuse_cache=True, sample_index=1, **kwargs)  # type: ignore[arg-type]
    await pool.aclose()
    usage = fresh.completion.usage
    assert fresh.cost_usd == pytest.approx((usage.input_tokens * 1 + usage.output_tokens * 2) / 1e6)
    assert not fresh.cached and not again.cached  # not asked: the provider answers
    assert cached.cached and cached.cost_usd == 0.0
    assert cached.completion.text == fresh.completion.text
    assert not other_sample.cached  # the sample index is part of the key
    async with db.transaction() as conn:
        rows = (await conn.execute(select(func.count()).select_from(response_cache))).scalar_one()
    assert rows == 2


def test_provider_errors_become_queue_errors() -> None:
    limited = as_job_error(ProviderRateLimited("slow down", retry_after=12.5))
    assert isinstance(limited, RateLimited) and limited.retry_after == 12.5
    assert isinstance(as_job_error(ProviderTransient("502")), Transient)
    assert isinstance(as_job_error(ProviderPermanent("401")), Permanent)


async def test_a_caller_can_write_the_cache_row_in_its_own_transaction(
    db: Database, org_id: str
) -> None:
    pool = ProviderPool(environ={})
    kwargs = {"org_id": org_id, "model_id": "scripted:utilitarian", "request": REQUEST}
    answer = await call_model(db, pool, write_cache=False, **kwargs)  # type: ignore[arg-type]

    async def rows() -> int:
        async with db.transaction() as conn:
            return int(
                (await conn.execute(select(func.count()).select_from(response_cache))).scalar_one()
            )

    assert answer.cache_entry is not None and await rows() == 0  # not written by call_model
    async with db.transaction() as conn:
        await store_in_cache(conn, [answer.cache_entry])
        await store_in_cache(conn, [answer.cache_entry])  # a second write keeps the row
    assert await rows() == 1
    cached = await call_model(db, pool, reuse_cache=True, write_cache=False, **kwargs)  # type: ignore[arg-type]
    await pool.aclose()
    assert cached.cached and cached.cache_entry is None  # nothing new to write
    assert cached.completion.text == answer.completion.text
