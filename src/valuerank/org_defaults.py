"""An organisation's defaults for new runs: the judges and the summary model a run gets when
it is created without naming any (`valuerank orgs defaults`, `GET/PUT /api/orgs/defaults`,
the settings page). Stored in `org_defaults`, one row per organisation, absent until set.

A run that took its judges from here says so (`RunConfig.default_judges`), and so does the
answer that created it (`defaults_used`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import Field
from pydantic.dataclasses import dataclass
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import org_defaults
from valuerank.errors import InvalidInputError
from valuerank.providers.model_id import InvalidModelId, parse_model_id
from valuerank.queue.dialect import upsert
from valuerank.shapes import SHAPE

MAX_JUDGES = 20  # as many as a run's body accepts


@dataclass(frozen=True, config=SHAPE)
class OrgDefaults:
    """What the organisation's new runs get when they name none (an answer shape: `GET/PUT
    /api/orgs/defaults` and `valuerank orgs defaults --json` write it as `judges`)."""

    judge_models: Annotated[
        tuple[str, ...],
        Field(serialization_alias="judges", description="Default judges (empty: none)."),
    ] = ()
    summary_model: Annotated[
        str | None, Field(description="Default summary model (null: none).")
    ] = None


def checked_models(models: Sequence[str], *, what: str = "judge") -> tuple[str, ...]:
    """Model ids as given, stripped; INVALID_INPUT for a malformed id or one listed twice."""
    cleaned = tuple(m.strip() for m in models)
    for model in cleaned:
        try:
            parse_model_id(model)
        except InvalidModelId as exc:
            raise InvalidInputError(
                f"{what} {model!r}: {exc}", hint="name models as provider:model"
            ) from None
    if len(set(cleaned)) != len(cleaned):
        raise InvalidInputError(f"a {what} is listed twice", hint="name each model once")
    if len(cleaned) > MAX_JUDGES:
        raise InvalidInputError(f"at most {MAX_JUDGES} {what}s", hint="name fewer models")
    return cleaned


async def get_org_defaults(conn: AsyncConnection, org_id: str) -> OrgDefaults:
    row = (await conn.execute(select(org_defaults).where(org_defaults.c.org_id == org_id))).first()
    if row is None:
        return OrgDefaults()
    return OrgDefaults(tuple(row.judge_models or ()), row.summary_model)


async def set_org_defaults(
    conn: AsyncConnection, org_id: str, defaults: OrgDefaults, *, allow_unknown: bool = False
) -> OrgDefaults:
    """Store the organisation's defaults (replacing them). Every model is checked as a run's
    are (a known provider, a valid persona, in the registry unless `allow_unknown`): a typo
    fails here, not in every run created later. Keys are checked when a run uses them."""
    from valuerank.registry.check import check_models
    from valuerank.registry.service import seed_models

    judges = checked_models(defaults.judge_models)
    summary = defaults.summary_model.strip() if defaults.summary_model else None
    if summary is not None:
        checked_models([summary], what="summary model")
    await seed_models(conn)
    await check_models(
        conn, [*judges, *([summary] if summary else [])], allow_unknown=allow_unknown
    )
    values = {"judge_models": list(judges), "summary_model": summary, "updated_at": func.now()}
    await conn.execute(
        upsert(conn)(org_defaults)
        .values(org_id=org_id, **values)
        .on_conflict_do_update(index_elements=["org_id"], set_=values)
    )
    return OrgDefaults(judges, summary)
