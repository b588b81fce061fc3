"""The values rubric shipped with ValueRank, and which rubric a judged run's judges read.

Judges without a rubric name values freely, and three judges rarely agree on free names: the
consensus then holds no value and every win rate is empty. So a run with judges always gets a
rubric: the organisation's newest one, or, when it has none of its own, the packaged default
(`rubric_data/values_rubric.yaml`, the CLI's layout, the CLI's 14 canonical values) stored in
the organisation as the rubric `valuerank-default`. Storing it as an ordinary rubric version
records exactly which text the run's judges read; its content hash makes the import
idempotent, and a changed default in a later release becomes a new version of that lineage.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import resources
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field
from pydantic.dataclasses import dataclass
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank import versioning
from valuerank.db.tables import rubrics
from valuerank.errors import NotFoundError
from valuerank.shapes import SHAPE, dump

if TYPE_CHECKING:
    from valuerank.formats.rubric import Rubric

DEFAULT_RUBRIC_NAME = "valuerank-default"
# `source_file` of the versions imported from the package: tells them from a user's own
# import under the same name (which is the organisation's rubric, and is never replaced).
PACKAGED_SOURCE = "valuerank:rubric_data/values_rubric.yaml"
_PACKAGED_PATH = ("rubric_data", "values_rubric.yaml")


def default_rubric_text() -> str:
    """The packaged rubric file's text (a valid CLI `config/values_rubric.yaml`)."""
    return resources.files("valuerank").joinpath(*_PACKAGED_PATH).read_text(encoding="utf-8")


@functools.cache
def default_rubric() -> Rubric:
    # The parser (and YAML) load only when the default is read: `runs status` never does.
    from valuerank.formats.rubric import parse_rubric

    rubric, _ = parse_rubric(default_rubric_text(), source=PACKAGED_SOURCE)
    return rubric


@functools.cache
def default_rubric_hash() -> str:
    from valuerank.rubrics import rubric_content_hash

    return rubric_content_hash(default_rubric().to_dict())


@dataclass(frozen=True, config=SHAPE)
class JudgeRubric:
    """The values rubric a run's judges read. `id` and `version_label` are None only in a
    preview of the default before it is stored in the organisation (the first judged run
    stores it)."""

    id: Annotated[
        str | None, Field(description="Rubric version id; null in a preview of the default.")
    ]
    name: str
    version_label: str | None
    values: Annotated[int, Field(description="How many values the rubric defines.")]
    default: Annotated[
        bool,
        Field(
            description="True when it is ValueRank's packaged default (the organisation has none)."
        ),
    ]

    def describe(self) -> str:
        return describe_rubric(dump(self))


def describe_rubric(rubric: Mapping[str, Any]) -> str:
    """One line for people, from a `JudgeRubric` as the API answers it:
    `valuerank-default v1 (14 values; the default rubric, as the organisation has none)`."""
    label = f" {rubric['version_label']}" if rubric.get("version_label") else ""
    count = int(rubric["values"])
    which = "; the default rubric, as the organisation has none" if rubric["default"] else ""
    return f"{rubric['name']}{label} ({count} value{'' if count == 1 else 's'}{which})"


def _is_packaged(version: versioning.Version) -> bool:
    return version.name == DEFAULT_RUBRIC_NAME and version.source_file == PACKAGED_SOURCE


def judge_rubric_of(version: versioning.Version) -> JudgeRubric:
    return JudgeRubric(
        id=version.id,
        name=version.name,
        version_label=version.version_label,
        values=len(version.content.get("values") or {}),  # the stored rubric's value map
        default=_is_packaged(version),
    )


async def _newest(
    conn: AsyncConnection, org_id: str, *, packaged: bool
) -> versioning.Version | None:
    """The organisation's newest rubric of its own (`packaged=False`), or its newest import
    of the packaged default. Chosen by kind, not by time alone: an import made in the same
    second as the default must still win (SQLite keeps seconds)."""
    is_packaged = (rubrics.c.name == DEFAULT_RUBRIC_NAME) & (
        rubrics.c.source_file == PACKAGED_SOURCE
    )
    row = (
        await conn.execute(
            select(rubrics.c.id)
            .where(rubrics.c.org_id == org_id, is_packaged if packaged else ~is_packaged)
            .order_by(rubrics.c.created_at.desc(), rubrics.c.id.desc())
            .limit(1)
        )
    ).first()
    return None if row is None else await versioning.get_version(conn, rubrics, org_id, str(row[0]))


async def rubric_for_judges(conn: AsyncConnection, org_id: str, *, store: bool) -> JudgeRubric:
    """The rubric a new judged run uses: the organisation's newest rubric, unless it has none
    of its own (no rubric, or only imports of the packaged default): then the packaged default,
    stored (idempotently) when `store`, else described as it would be (a preview)."""
    own = await _newest(conn, org_id, packaged=False)
    if own is not None:
        return judge_rubric_of(own)
    if store:
        from valuerank.rubrics import import_rubric

        imported = await import_rubric(
            conn,
            org_id,
            default_rubric_text(),
            name=DEFAULT_RUBRIC_NAME,
            source_file=PACKAGED_SOURCE,
        )
        return judge_rubric_of(imported.version)
    stored = await _newest(conn, org_id, packaged=True)
    if stored is not None and stored.content_hash == default_rubric_hash():
        return judge_rubric_of(stored)
    return JudgeRubric(None, DEFAULT_RUBRIC_NAME, None, len(default_rubric().values), True)


async def run_judge_rubric(
    conn: AsyncConnection, org_id: str, rubric_id: str | None
) -> JudgeRubric | None:
    """What a run records about its rubric (None: it has none, e.g. a run without judges)."""
    if rubric_id is None:
        return None
    try:
        return judge_rubric_of(await versioning.get_version(conn, rubrics, org_id, rubric_id))
    except NotFoundError:  # deleted since (the run keeps its id)
        return None
