"""Asking models to validate a tag: one `validate` job per model, through the queue.

Every model is checked before anything is enqueued — registered (UNKNOWN_MODEL), active
(MODEL_INACTIVE), its provider has a key (MISSING_CREDENTIAL) — so a request is all or
nothing. Item keys make it idempotent: a model is asked once per tag, and asking again (a
retried request) enqueues nothing; a `request_id` starts a new round (each round once).
The jobs of an organisation share the partition `validation:<org id>`; the handler is
`valuerank.pipeline.validate`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import Annotated

from pydantic import Field, computed_field
from pydantic.dataclasses import dataclass
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.credentials.store import require_credentials
from valuerank.errors import InvalidInputError
from valuerank.providers.model_id import parse_model_id
from valuerank.queue import enqueue_many
from valuerank.queue.partitions import jobs_of
from valuerank.queue.states import JobStatus
from valuerank.queue.tasks import JobKind, TaskPayload
from valuerank.registry.service import check_text
from valuerank.shapes import SHAPE
from valuerank.validation.errors import InactiveModelError
from valuerank.validation.store import get_tag, resolve_validator

MAX_MODELS = 20
MAX_REQUEST_ID = 100


def jobs_partition(org_id: str) -> str:
    return f"validation:{org_id}"


def item_key(task_id: int, tag_id: str, model: str, request_id: str | None) -> str:
    """`validate:<task>:<tag>:<digest of model and round>`: readable and at most 150 chars."""
    digest = hashlib.sha256(json.dumps([model, request_id]).encode()).hexdigest()[:24]
    return f"{VALIDATE}:{task_id}:{tag_id}:{digest}"


class ValidateItem(TaskPayload):
    """A `validate` job's payload."""

    task_id: int
    ra_tag_id: str
    model: str


VALIDATE_KIND: JobKind[ValidateItem] = JobKind("validate", ValidateItem)
VALIDATE = VALIDATE_KIND.name


@dataclass(frozen=True, config=SHAPE)
class QueuedValidation:
    model: str
    job_id: str
    enqueued: Annotated[
        bool, Field(description="False: this model was asked already in this round.")
    ]


@dataclass(frozen=True, config=SHAPE)
class ValidationRequest:
    task_id: int
    ra_tag_id: str
    request_id: str | None
    jobs: tuple[QueuedValidation, ...]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def enqueued(self) -> int:
        return sum(1 for j in self.jobs if j.enqueued)


def _models(given: Sequence[str]) -> list[str]:
    chosen = list(dict.fromkeys(m.strip() for m in given if m.strip()))
    if not chosen:
        raise InvalidInputError("name at least one model", hint="e.g. openai:gpt-4.1")
    if len(chosen) > MAX_MODELS:
        raise InvalidInputError(f"at most {MAX_MODELS} models per request, got {len(chosen)}")
    return chosen


async def request_validation(
    conn: AsyncConnection,
    org_id: str,
    task_id: int,
    tag_id: str,
    models: Sequence[str],
    *,
    request_id: str | None = None,
    environ: Mapping[str, str] | None = None,
    priority: int = 0,
) -> ValidationRequest:
    """Enqueue one `validate` job per model (see the module for the checks and keys)."""
    chosen = _models(models)
    if request_id is not None:
        request_id = check_text("request_id", request_id, MAX_REQUEST_ID)
    await get_tag(conn, org_id, task_id, tag_id)
    for model in chosen:
        registered = await resolve_validator(conn, model)
        if not registered.active:
            raise InactiveModelError(
                f"model {registered.id!r} is inactive in the registry",
                hint=f"`valuerank models set {registered.id} --active` offers it again",
            )
    await require_credentials(
        conn, org_id, chosen, environ=os.environ if environ is None else environ
    )
    specs = [
        VALIDATE_KIND.spec(
            ValidateItem(task_id=task_id, ra_tag_id=tag_id, model=model),
            org_id=org_id,
            partition=jobs_partition(org_id),
            item_key=item_key(task_id, tag_id, model, request_id),
            priority=priority,
            provider=parse_model_id(model).provider,
            model=model,
        )
        for model in chosen
    ]
    queued = await enqueue_many(conn, specs)
    return ValidationRequest(
        task_id=task_id,
        ra_tag_id=tag_id,
        request_id=request_id,
        jobs=tuple(
            QueuedValidation(model, q.job_id, q.enqueued)
            for model, q in zip(chosen, queued, strict=True)
        ),
    )


@dataclasses.dataclass(frozen=True)
class AskedValidation:
    """A `validate` job of a task that has not (yet) recorded its validation."""

    job_id: str
    ra_tag_id: str
    model: str
    status: str  # queued, running, failed (its attempts spent) or cancelled
    attempts: int
    max_attempts: int
    last_error: str | None

    @property
    def pending(self) -> bool:
        return self.status in (JobStatus.QUEUED, JobStatus.RUNNING)


async def unfinished_validations(
    conn: AsyncConnection, org_id: str, task_id: int, *, limit: int = 200
) -> list[AskedValidation]:
    """The task's `validate` jobs that did not succeed, oldest first (the pages show what
    is still queued and what failed; a succeeded job's answer is a recorded validation)."""
    rows = await jobs_of(
        conn,
        org_id,
        jobs_partition(org_id),
        kinds=[VALIDATE],
        # The item key starts with the task (see item_key): the partition's index serves it.
        item_key_prefix=f"{VALIDATE}:{task_id}:",
        not_status=JobStatus.SUCCEEDED,
        limit=limit,
    )
    found = []
    for row in rows:
        item = ValidateItem.from_payload(row.payload)
        found.append(
            AskedValidation(
                job_id=row.id,
                ra_tag_id=item.ra_tag_id,
                model=item.model,
                status=row.status.value,
                attempts=row.attempts,
                max_attempts=row.max_attempts,
                last_error=row.last_error,
            )
        )
    return found
