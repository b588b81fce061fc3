"""Tasks, their RA tags and the validations of them, scoped by organisation.

Every write to a task takes its row first (`UPDATE … SET version = version + 1`): that
locks it on PostgreSQL (SQLite writers are serialised anyway), so a task's writes happen one
at a time, and bumps the version the cache of its reads is keyed by (see `reads.py`).
Recording a validation is one transaction: the validation, the model's earlier validation of
the tag made history, the tag's new consensus, and the two live updates — all or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.consensus import ConsensusResult, Outcome, consensus
from valuerank.db.tables import models, ra_tags, validation_tasks, validations
from valuerank.errors import NotFoundError
from valuerank.queue.dialect import as_utc
from valuerank.registry import RegisteredModel, get_model, seed_models
from valuerank.registry.service import UnknownModelError, check_text
from valuerank.shapes import dump
from valuerank.validation import events
from valuerank.validation.errors import (
    ConsensusCalculationError,
    RaTagExistsError,
    RaTagNotFoundError,
    TaskNotFoundError,
)
from valuerank.validation.model import (
    MAX_DESCRIPTION,
    MAX_NAME,
    MAX_NOTES,
    MAX_TAG_TEXT,
    MAX_VALIDATOR_ID,
    TAG_ID,
    RaTag,
    Task,
    Validation,
    ValidatorInfo,
    check_confidence,
    check_outcome,
    check_tag_id,
)
from valuerank.validation.rules import consensus_dict

DEFAULT_WEIGHT = 1.0  # a validator whose registry entry is gone


def task_not_found(task_id: int) -> TaskNotFoundError:
    return TaskNotFoundError(
        f"no validation task {task_id}",
        hint="`valuerank validation tasks list` (or GET /api/assumptions/tasks) lists them",
    )


def _tag_not_found(task_id: int, tag_id: str) -> RaTagNotFoundError:
    return RaTagNotFoundError(
        f"task {task_id} has no RA tag {tag_id[:120]!r}",
        hint=f"`valuerank validation tags list {task_id}` lists the task's tags",
    )


_TAG_COUNT = (
    select(func.count())
    .where(ra_tags.c.task_id == validation_tasks.c.id)
    .correlate(validation_tasks)
    .scalar_subquery()
)


def _task(row: Row[Any]) -> Task:
    return Task(
        id=int(row.id),
        org_id=row.org_id,
        name=row.name,
        description=row.description,
        version=int(row.version),
        created_at=as_utc(row.created_at),
        tag_count=int(row.tag_count),
    )


def _tag(row: Row[Any]) -> RaTag:
    return RaTag(
        task_id=int(row.task_id),
        id=row.id,
        text=row.text,
        position=int(row.position),
        created_at=as_utc(row.created_at),
    )


# --- tasks -----------------------------------------------------------------------------------


async def create_task(conn: AsyncConnection, org_id: str, name: str, description: str = "") -> Task:
    values = {
        "org_id": org_id,
        "name": check_text("name", name, MAX_NAME),
        "description": check_text("description", description, MAX_DESCRIPTION, allow_empty=True),
    }
    task_id = (
        await conn.execute(
            insert(validation_tasks).values(**values).returning(validation_tasks.c.id)
        )
    ).scalar_one()
    return await get_task(conn, org_id, int(task_id))


async def get_task(conn: AsyncConnection, org_id: str, task_id: int) -> Task:
    row = (
        await conn.execute(
            select(validation_tasks, _TAG_COUNT.label("tag_count")).where(
                validation_tasks.c.id == task_id, validation_tasks.c.org_id == org_id
            )
        )
    ).first()
    if row is None:
        raise task_not_found(task_id)
    return _task(row)


async def list_tasks(
    conn: AsyncConnection, org_id: str, *, limit: int, before_id: int | None = None
) -> list[Task]:
    """The organisation's tasks, newest first; `before_id` continues a page (keyset)."""
    query = select(validation_tasks, _TAG_COUNT.label("tag_count")).where(
        validation_tasks.c.org_id == org_id
    )
    if before_id is not None:
        query = query.where(validation_tasks.c.id < before_id)
    rows = await conn.execute(query.order_by(validation_tasks.c.id.desc()).limit(limit))
    return [_task(r) for r in rows]


async def touch_task(conn: AsyncConnection, org_id: str, task_id: int) -> tuple[int, str]:
    """Lock the task's row and bump its version (TASK_NOT_FOUND if it is not the org's);
    returns the new version and the task's name."""
    row = (
        await conn.execute(
            update(validation_tasks)
            .where(validation_tasks.c.id == task_id, validation_tasks.c.org_id == org_id)
            .values(version=validation_tasks.c.version + 1)
            .returning(validation_tasks.c.version, validation_tasks.c.name)
        )
    ).first()
    if row is None:
        raise task_not_found(task_id)
    return int(row.version), str(row.name)


# --- RA tags ---------------------------------------------------------------------------------


async def add_tag(
    conn: AsyncConnection, org_id: str, task_id: int, text: str, tag_id: str | None = None
) -> tuple[RaTag, bool]:
    """Add an RA tag to a task; returns it and whether it is new. Adding the same id with the
    same text again returns the existing tag (a retried request); another text is RA_TAG_EXISTS."""
    tag_id = check_tag_id(tag_id)
    text = check_text("RA tag text", text, MAX_TAG_TEXT)
    await touch_task(conn, org_id, task_id)
    existing = await _find_tag(conn, org_id, task_id, tag_id)
    if existing is not None:
        if existing.text == text:
            return existing, False
        raise RaTagExistsError(
            f"task {task_id} already has an RA tag {tag_id!r} with another text",
            hint="choose another id, or leave it out to get a fresh one",
        )
    position = (
        await conn.execute(
            select(func.coalesce(func.max(ra_tags.c.position), 0) + 1).where(
                ra_tags.c.task_id == task_id
            )
        )
    ).scalar_one()
    await conn.execute(
        insert(ra_tags).values(
            task_id=task_id, id=tag_id, org_id=org_id, text=text, position=int(position)
        )
    )
    return await get_tag(conn, org_id, task_id, tag_id), True


async def _find_tag(conn: AsyncConnection, org_id: str, task_id: int, tag_id: str) -> RaTag | None:
    if not TAG_ID.match(tag_id):
        return None  # no tag can have this id (and it may hold what a query cannot bind)
    row = (
        await conn.execute(
            select(ra_tags).where(
                ra_tags.c.org_id == org_id, ra_tags.c.task_id == task_id, ra_tags.c.id == tag_id
            )
        )
    ).first()
    return None if row is None else _tag(row)


async def get_tag(conn: AsyncConnection, org_id: str, task_id: int, tag_id: str) -> RaTag:
    """The tag (TASK_NOT_FOUND when the task is not the org's, else RA_TAG_NOT_FOUND)."""
    found = await _find_tag(conn, org_id, task_id, tag_id)
    if found is None:
        await get_task(conn, org_id, task_id)
        raise _tag_not_found(task_id, tag_id)
    return found


async def list_tags(
    conn: AsyncConnection,
    org_id: str,
    task_id: int,
    *,
    limit: int | None = None,
    after_position: int = 0,
) -> list[RaTag]:
    """A task's tags in the order they were added (TASK_NOT_FOUND for another org's task)."""
    query = (
        select(ra_tags)
        .where(
            ra_tags.c.org_id == org_id,
            ra_tags.c.task_id == task_id,
            ra_tags.c.position > after_position,
        )
        .order_by(ra_tags.c.position)
    )
    if limit is not None:
        query = query.limit(limit)
    found = [_tag(r) for r in await conn.execute(query)]
    if not found:  # no tag (more): is there such a task at all?
        await get_task(conn, org_id, task_id)
    return found


# --- validations -----------------------------------------------------------------------------


_VALIDATION_COLUMNS = (
    validations.c.id,
    validations.c.task_id,
    validations.c.ra_tag_id,
    validations.c.validator_id,
    validations.c.outcome,
    validations.c.confidence,
    validations.c.notes,
    validations.c.validated_at,
    validations.c.source,
    models.c.provider,
    models.c.name.label("model_name"),
    models.c.display_name,
    models.c.version,
    models.c.category,
    models.c.weight,
)
_WITH_MODEL = validations.outerjoin(models, validations.c.model_id == models.c.id)


def _validation(row: Row[Any]) -> Validation:
    registered = row.provider is not None
    return Validation(
        id=int(row.id),
        task_id=int(row.task_id),
        ra_tag_id=row.ra_tag_id,
        validator_id=row.validator_id,
        outcome=Outcome(row.outcome),
        confidence=float(row.confidence),
        notes=row.notes,
        validated_at=as_utc(row.validated_at),
        source=row.source,
        model=ValidatorInfo(
            id=f"{row.provider}:{row.model_name}" if registered else None,
            provider=row.provider,
            display_name=row.display_name,
            version=row.version,
            category=row.category,
            weight=float(row.weight) if registered else DEFAULT_WEIGHT,
        ),
    )


async def current_validations(
    conn: AsyncConnection, org_id: str, task_id: int, tag_id: str | None = None
) -> list[Validation]:
    """The current validation of each model, of one tag or of every tag of the task, in the
    order they were recorded."""
    query = (
        select(*_VALIDATION_COLUMNS)
        .select_from(_WITH_MODEL)
        .where(
            validations.c.org_id == org_id,
            validations.c.task_id == task_id,
            validations.c.is_current.is_(True),
        )
    )
    if tag_id is not None:
        query = query.where(validations.c.ra_tag_id == tag_id)
    return [_validation(r) for r in await conn.execute(query.order_by(validations.c.id))]


def tag_consensus(found: list[Validation]) -> ConsensusResult:
    """The consensus of a tag's current validations (CONSENSUS_CALCULATION_ERROR when stored
    data cannot be a vote, e.g. a registry weight set to a negative number by hand)."""
    try:
        return consensus(v.vote() for v in found)
    except (TypeError, ValueError) as exc:
        raise consensus_error(exc) from exc


def consensus_error(exc: Exception) -> ConsensusCalculationError:
    return ConsensusCalculationError(
        f"cannot calculate the consensus: {exc}",
        hint="check the validations' data and the validators' registry weights "
        "(`valuerank models show ID`; fix with `valuerank models set ID --weight W`)",
    )


def validator_id(model: RegisteredModel, given: str) -> str:
    """The id a validator is known by: the registry's spelling (an alias becomes the model's
    name), keeping a query string (`scripted:centrist?seed=3` is another configuration)."""
    _, _, query = given.strip().partition("?")
    return f"{model.id}?{query}" if query else model.id


async def resolve_validator(conn: AsyncConnection, given: str) -> RegisteredModel:
    """The registry entry of a validator (UNKNOWN_MODEL if it has none). The built-in
    catalog's models are known without a `valuerank models seed`: a miss seeds them."""
    text = check_text("validator_id", given, MAX_VALIDATOR_ID)
    try:
        return await get_model(conn, text)
    except NotFoundError:
        await seed_models(conn)  # inserts only the catalog's models the registry lacks
    try:
        return await get_model(conn, text)
    except NotFoundError as exc:
        raise UnknownModelError(exc.message, hint=exc.hint) from None


@dataclass(frozen=True)
class NewValidation:
    validator_id: str
    outcome: Outcome | str
    confidence: float
    notes: str = ""


@dataclass(frozen=True)
class Recorded:
    validation: Validation
    consensus: ConsensusResult
    created: bool  # False: this request key had recorded it already


async def _by_request_key(conn: AsyncConnection, org_id: str, key: str) -> Validation | None:
    row = (
        await conn.execute(
            select(*_VALIDATION_COLUMNS)
            .select_from(_WITH_MODEL)
            .where(validations.c.org_id == org_id, validations.c.request_key == key)
        )
    ).first()
    return None if row is None else _validation(row)


async def record_validation(
    conn: AsyncConnection,
    org_id: str,
    task_id: int,
    tag_id: str,
    new: NewValidation,
    *,
    source: str = "api",
    request_key: str | None = None,
) -> Recorded:
    """Record one model's validation of a tag, recompute the tag's consensus and publish
    both updates, in this transaction. The model's earlier validation of the tag stays as
    history; this one counts. With a `request_key` already recorded (a job executed twice),
    nothing is written and the recorded validation is returned (`created=False`)."""
    outcome = check_outcome(new.outcome.value if isinstance(new.outcome, Outcome) else new.outcome)
    confidence = check_confidence(new.confidence)
    notes = check_text("notes", new.notes, MAX_NOTES, allow_empty=True)
    await touch_task(conn, org_id, task_id)  # locks the task: one writer at a time
    if request_key is not None:
        done = await _by_request_key(conn, org_id, request_key)
        if done is not None:
            found = await current_validations(conn, org_id, task_id, done.ra_tag_id)
            return Recorded(done, tag_consensus(found), created=False)
    await get_tag(conn, org_id, task_id, tag_id)
    model = await resolve_validator(conn, new.validator_id)
    validator = validator_id(model, new.validator_id)
    await conn.execute(
        update(validations)
        .where(
            validations.c.task_id == task_id,
            validations.c.ra_tag_id == tag_id,
            validations.c.validator_id == validator,
            validations.c.is_current.is_(True),
        )
        .values(is_current=False)
    )
    new_id = (
        await conn.execute(
            insert(validations)
            .values(
                org_id=org_id,
                task_id=task_id,
                ra_tag_id=tag_id,
                validator_id=validator,
                model_id=model.row_id,
                outcome=outcome.value,
                confidence=confidence,
                notes=notes,
                source=source,
                request_key=request_key,
            )
            .returning(validations.c.id)
        )
    ).scalar_one()
    found = await current_validations(conn, org_id, task_id, tag_id)
    result = tag_consensus(found)
    recorded = next(v for v in found if v.id == new_id)
    where = events.context(task_id, tag_id)
    await events.publish(
        conn,
        org_id,
        events.VALIDATION_ADDED,
        where,
        {
            "validation": dump(recorded),
            "model": {**dump(recorded.model), "validator_id": validator},
            "action": "validation_created",
        },
    )
    await events.publish(
        conn,
        org_id,
        events.CONSENSUS_UPDATED,
        where,
        {
            "consensus": consensus_dict(result),
            "trigger": {
                "validation_id": recorded.id,
                "validator_id": validator,
                "source": source,
                "event": events.VALIDATION_ADDED,
            },
            "action": "consensus_recalculated",
        },
    )
    return Recorded(recorded, result, created=True)
