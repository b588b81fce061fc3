"""The `probe` job: one conversation of one scenario with one model, stored as a transcript.

The conversation is the CLI's: turn 1 is the preamble and the scenario body, then the run's
follow-up turns, each sent with the full history. Seeds are fixed per (run, scenario, model,
sample, turn). The transcript is stored verbatim in the CLI's markdown with the structured
turns, usage, latency, cost and the decision code read from turn 1's answer; it is unique per
(run, scenario, model, sample), so a job executed twice writes it once.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import run_scenarios, transcripts
from valuerank.definitions.presentation import phrasing_of, presentation_of, presented_decision
from valuerank.failpoints import PROBE_AFTER_TRANSCRIPT, failpoint
from valuerank.formats.followups import DEFAULT_FOLLOWUPS, FollowUp
from valuerank.formats.transcript_md import Transcript, Turn
from valuerank.pipeline.calls import (
    CacheEntry,
    Prepared,
    call_model,
    prepare_call,
    request_key,
    store_in_cache,
)
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.prompts import probe_messages, turn_prompts, turn_seed
from valuerank.pipeline.run_end import finalize_at_tail, move_on_at_tail
from valuerank.providers.base import CompletionRequest
from valuerank.providers.model_id import parse_model_id
from valuerank.queue import HandlerResult, Job, Permanent
from valuerank.queue.call_reserve import reserve_request
from valuerank.queue.ratelimit import job_credential
from valuerank.refs import short_id
from valuerank.runs.kinds import PROBE_KIND, ProbePayload
from valuerank.runs.records import TranscriptRecord, insert_transcript
from valuerank.runs.run import Run, get_run

RATING_SCALE = (1, 5)
REASON_CHARS = 200  # transcripts.decision_reason


# The statements every probe runs, built once; the item is their parameters.
_EXISTING = select(transcripts.c.id).where(
    transcripts.c.run_id == bindparam("run_id"),
    transcripts.c.scenario_id == bindparam("scenario_id"),
    transcripts.c.model == bindparam("model"),
    transcripts.c.sample_index == bindparam("sample"),
)
# The scenario and, in the same statement, the transcript a previous execution stored.
_SCENARIO = select(
    run_scenarios.c.content,
    run_scenarios.c.dimension_scores,
    _EXISTING.scalar_subquery().label("existing"),
).where(
    run_scenarios.c.run_id == bindparam("run_id"),
    run_scenarios.c.scenario_id == bindparam("scenario_id"),
)


def _params(item: ProbePayload) -> dict[str, Any]:
    return {
        "run_id": item.run_id,
        "scenario_id": item.scenario_id,
        "model": item.model,
        "sample": item.sample,
    }


async def _existing(conn: AsyncConnection, item: ProbePayload) -> str | None:
    return (await conn.execute(_EXISTING, _params(item))).scalar_one_or_none()


def cli_timestamp(moment: datetime) -> str:
    """The CLI's transcript timestamp form: 2025-11-16.10-29."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d.%H-%M")


async def run_probe(ctx: PipelineContext, job: Job) -> HandlerResult:
    item = PROBE_KIND.payload(job)
    prepared = first = None
    prompts: tuple[FollowUp, ...] = ()
    # One read transaction: the run, the scenario (with a transcript already stored, if
    # any), and what turn 1's call reads (provider, prices, cached answer).
    async with ctx.db.transaction() as conn:
        run = await get_run(conn, job.org_id, item.run_id)
        scenario = (await conn.execute(_SCENARIO, _params(item) | {"run_id": run.id})).first()
        existing = scenario.existing if scenario is not None else await _existing(conn, item)
        if existing is None and scenario is not None:
            prompts = _turns(run, scenario)
            first = _request(run, item, scenario, prompts[0].prompt, [], 1)
            key = request_key(parse_model_id(item.model), first, item.sample)
            prepared = await prepare_call(
                conn,
                ctx.providers,
                org_id=job.org_id,
                model_id=item.model,
                cache_key=key if run.config.reuse_cache else None,
            )
    if existing is not None:  # a previous execution wrote it and died before completing
        await move_on_at_tail(ctx.db, job.org_id, run.id)
        return HandlerResult(
            {"transcript_id": existing, "reused": True},
            event_data={"scenario_id": item.scenario_id, "model": item.model},
        )
    if scenario is None or prepared is None or first is None:
        raise Permanent(f"run {short_id(run.id)} has no scenario {item.scenario_id!r}")
    transcript, details, fresh = await _converse(
        ctx, job, run, item, scenario, prompts, first, prepared
    )
    # Read on the scale as shown, stored in the definition's direction (reversed: mapped back).
    decision = presented_decision(
        transcript.turns[0].target,
        str(scenario.content["body"]),
        presentation_of(item.scenario_id)[1],
        limit=REASON_CHARS,
    )
    record = TranscriptRecord(
        transcript=transcript,
        model=item.model,
        sample_index=item.sample,
        turns_detail=details,
        input_tokens=sum(d["input_tokens"] for d in details),
        output_tokens=sum(d["output_tokens"] for d in details),
        latency_ms=sum(d["latency_ms"] for d in details),
        cost_usd=_total_cost(details),
        finish_reason=details[-1]["finish_reason"],
        decision_code=decision.code,
        decision_reason=decision.reason,
        synthetic=any(d["synthetic"] for d in details),
        cached=all(d["cached"] for d in details),
    )
    async with ctx.db.transaction(immediate=True) as conn:
        # The answers go to the response cache with the transcript: one write, not two.
        await store_in_cache(conn, fresh)
        transcript_id = await insert_transcript(conn, job.org_id, run.id, record)
        if transcript_id is None:
            transcript_id = await _existing(conn, item)
        # The last probes of the run enqueue its finalize job (see pipeline/run_end.py).
        await finalize_at_tail(conn, run)
    failpoint(PROBE_AFTER_TRANSCRIPT)  # committed, not yet completed: the retry must reuse it
    return HandlerResult(
        {"transcript_id": transcript_id, "decision_code": decision.code},
        event_data={
            "scenario_id": item.scenario_id,
            "model": item.model,
            "decision_code": decision.code,
        },
        usage_tokens=float(record.input_tokens + record.output_tokens),
    )


def _total_cost(details: list[dict[str, Any]]) -> float | None:
    costs = [d["cost_usd"] for d in details]
    return None if any(c is None for c in costs) else round(sum(costs), 6)


def _turns(run: Run, scenario: Any) -> tuple[FollowUp, ...]:
    config = run.config
    body = str(scenario.content["body"])
    return turn_prompts(config.preamble, body, DEFAULT_FOLLOWUPS[: config.followup_turns])


def _request(
    run: Run,
    item: ProbePayload,
    scenario: Any,
    prompt: str,
    history: list[tuple[str, str]],
    number: int,
) -> CompletionRequest:
    """Turn `number`'s request, after the finished turns in `history`."""
    config = run.config
    scenario_id, order = presentation_of(item.scenario_id)
    return CompletionRequest(
        model=parse_model_id(item.model).name,
        messages=probe_messages(
            config.preamble,
            str(scenario.content["body"]),
            system=config.system_prompt,
            history=history,
            next_prompt=prompt,
        ),
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        # Both orders of a scenario share their seeds: only the order differs between them.
        seed=turn_seed(run.id, scenario_id, item.model, item.sample, number),
        hints={
            "dimension_scores": dict(scenario.dimension_scores),
            # How the scenario is shown (synthetic models only: hints never reach a real one).
            "presentation": {"order": order, "phrasing": phrasing_of(scenario_id)},
            "rating_scale": list(RATING_SCALE) if number == 1 else None,
            "turn": number,
        },
    )


async def _converse(
    ctx: PipelineContext,
    job: Job,
    run: Run,
    item: ProbePayload,
    scenario: Any,
    prompts: tuple[FollowUp, ...],
    first: CompletionRequest,
    prepared: Prepared,
) -> tuple[Transcript, list[dict[str, Any]], list[CacheEntry]]:
    """The conversation of `prompts`, each turn's details, and the fresh answers' cache rows.
    `first` and `prepared`: turn 1's request and reads (built with the run's reads); later
    turns reuse its provider and prices, and read the cache (when the run reuses it) in a
    transaction of their own."""
    config = run.config
    history: list[tuple[str, str]] = []
    details: list[dict[str, Any]] = []
    turns: list[Turn] = []
    fresh: list[CacheEntry] = []
    # The claim reserved turn 1's request; each follow-up turn reserves its own (RPM counts
    # calls, not jobs), from the bucket of the job's model.
    reserve_turn = partial(
        reserve_request,
        ctx.db,
        provider=job.provider,
        model=job.model,
        credential=job_credential(job.payload),
    )
    later = None if config.reuse_cache else Prepared(prepared.provider, prepared.prices)
    for number, prompt in enumerate(prompts, start=1):
        request = (
            first if number == 1 else _request(run, item, scenario, prompt.prompt, history, number)
        )
        answer = await call_model(
            ctx.db,
            ctx.providers,
            org_id=job.org_id,
            model_id=item.model,
            request=request,
            sample_index=item.sample,
            reuse_cache=config.reuse_cache,
            write_cache=False,
            before_call=reserve_turn if number > 1 else None,
            prepared=prepared if number == 1 else later,
        )
        if answer.cache_entry is not None:
            fresh.append(answer.cache_entry)
        text = answer.completion.text
        history.append((prompt.prompt, text))
        turns.append(
            Turn(
                number=number, label=prompt.label, probe=prompt.prompt.strip(), target=text.strip()
            )
        )
        usage = answer.completion.usage
        details.append(
            {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "latency_ms": round(answer.completion.latency_ms, 1),
                "finish_reason": answer.completion.finish_reason,
                "cost_usd": answer.cost_usd,
                "synthetic": answer.completion.synthetic,
                "cached": answer.cached,
            }
        )
    extra: tuple[tuple[str, Any], ...] = ()
    if item.sample:
        extra = (("sample_index", item.sample),)
    if presentation_of(item.scenario_id)[1] == "reversed":  # the scale it was asked in
        extra += (("scale_order", "reversed"),)
    transcript = Transcript(
        run_id=run.cli_run_id or run.id,
        scenario_id=item.scenario_id,
        target_model=item.model,
        subject=str(scenario.content.get("subject", "")),
        turns=tuple(turns),
        probe_model="static",
        timestamp=cli_timestamp(datetime.now(UTC)),
        extra_front_matter=extra,
    )
    return transcript, details, fresh
