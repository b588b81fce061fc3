"""A run's probe jobs: one per (scenario, model, sample), each with the tokens its
conversation may use (what its rate bucket reserves before the call), enqueued idempotently
(their item keys make enqueueing twice add nothing)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import run_scenarios
from valuerank.providers.costs import conversation_tokens, estimate_tokens
from valuerank.providers.model_id import parse_model_id
from valuerank.queue import JobSpec, enqueue_many
from valuerank.runs.config import RunConfig
from valuerank.runs.estimates import followup_tokens
from valuerank.runs.kinds import PROBE_KIND, ProbePayload, probe_item_key
from valuerank.runs.run import Run


def conversation_estimate(config: RunConfig, body: str) -> int:
    """Tokens one probe conversation may use: what a rate bucket reserves before the call."""
    prompt = estimate_tokens(f"{config.preamble}\n\n{body}")
    input_tokens, output_tokens = conversation_tokens(
        1 + config.followup_turns,
        prompt,
        config.max_tokens,
        followup_tokens(config.followup_turns),
        estimate_tokens(config.system_prompt or ""),
    )
    return input_tokens + output_tokens


def probe_specs(run: Run, scenarios: Sequence[tuple[str, str]]) -> list[JobSpec]:
    """One probe job per (scenario, model, sample); `scenarios` are (id, body) pairs."""
    return [
        PROBE_KIND.spec(
            ProbePayload(
                run_id=run.id,
                scenario_id=sid,
                model=model,
                sample=k,
                estimated_tokens=conversation_estimate(run.config, body),
            ),
            org_id=run.org_id,
            partition=run.id,
            item_key=probe_item_key(sid, model, k),
            priority=run.priority,
            provider=parse_model_id(model).provider,
            model=model,
        )
        for sid, body in scenarios
        for model in run.config.models
        for k in range(run.config.samples_per_scenario)
    ]


async def enqueue_probes(conn: AsyncConnection, run: Run) -> tuple[int, int]:
    """Enqueue the probe jobs of every scenario the run has; returns (added, existing)."""
    rows = await conn.execute(
        select(run_scenarios.c.scenario_id, run_scenarios.c.content)
        .where(run_scenarios.c.run_id == run.id)
        .order_by(run_scenarios.c.position)
    )
    scenarios = [(sid, str(content.get("body", ""))) for sid, content in rows]
    results = await enqueue_many(conn, probe_specs(run, scenarios))
    added = sum(1 for r in results if r.enqueued)
    return added, len(results) - added
