"""The `validate` job: one model validates one RA tag of a task (see valuerank.validation).

The model answers the prompt of `validation_prompts` as strict JSON; the validation is then
recorded with the job's item key, which makes the job idempotent: an execution that finds
its validation already recorded (the worker died after writing it) asks nothing and writes
nothing. Recording recomputes the tag's consensus and publishes the live updates in the same
transaction (`valuerank.validation.store.record_validation`).
"""

from __future__ import annotations

from sqlalchemy import select

from valuerank.db.tables import validations
from valuerank.errors import ValueRankError
from valuerank.pipeline.calls import call_model
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.validation_prompts import (
    VALIDATION_SCHEMA,
    parse_validation_reply,
    validation_messages,
)
from valuerank.providers.base import CompletionRequest
from valuerank.providers.model_id import parse_model_id
from valuerank.queue import HandlerResult, Job, Permanent
from valuerank.validation.requests import VALIDATE_KIND
from valuerank.validation.store import NewValidation, get_tag, get_task, record_validation

VALIDATE_MAX_TOKENS = 400


async def run_validate(ctx: PipelineContext, job: Job) -> HandlerResult:
    item = VALIDATE_KIND.payload(job)
    where = {"task_id": item.task_id, "ra_tag_id": item.ra_tag_id, "validator": item.model}
    async with ctx.db.transaction() as conn:
        done = await conn.scalar(
            select(validations.c.id).where(
                validations.c.org_id == job.org_id, validations.c.request_key == job.item_key
            )
        )
        if done is not None:
            return HandlerResult({"validation_id": done, "reused": True}, event_data=where)
        try:
            task = await get_task(conn, job.org_id, item.task_id)
            tag = await get_tag(conn, job.org_id, item.task_id, item.ra_tag_id)
        except ValueRankError as exc:
            raise Permanent(f"{exc.message} (deleted since the request?)") from exc
    request = CompletionRequest(
        model=parse_model_id(item.model).name,
        messages=validation_messages(task.name, task.description, tag.text),
        temperature=0.0,
        max_tokens=VALIDATE_MAX_TOKENS,
        json_schema=VALIDATION_SCHEMA,
        hints={"role": "validator", "ra_tag": tag.text},
    )
    answer = await call_model(
        ctx.db, ctx.providers, org_id=job.org_id, model_id=item.model, request=request
    )
    try:
        reply = parse_validation_reply(answer.completion.text)
    except ValueError as exc:
        raise Permanent(f"validator {item.model} gave no usable validation: {exc}") from exc
    async with ctx.db.transaction(immediate=True) as conn:
        try:
            recorded = await record_validation(
                conn,
                job.org_id,
                item.task_id,
                item.ra_tag_id,
                NewValidation(item.model, reply.outcome, reply.confidence, reply.notes),
                source="job",
                request_key=job.item_key,
            )
        except ValueRankError as exc:
            raise Permanent(exc.message) from exc
    return HandlerResult(
        {
            "validation_id": recorded.validation.id,
            "outcome": reply.outcome.value,
            "confidence": reply.confidence,
            "reused": not recorded.created,
        },
        event_data=where,
        usage_tokens=float(
            answer.completion.usage.input_tokens + answer.completion.usage.output_tokens
        ),
    )
