"""Definition versions in the database: import, fork, edit (while unused), lineage, diff, expand.

Everything here is scoped by `org_id`; the pure work (parsing, rules, expansion, diff,
hashing) is done by the modules beside this one and by `valuerank.formats`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import exists, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank import versioning
from valuerank.db.tables import definitions, runs
from valuerank.definitions.diff import DefinitionDiff, diff_definitions
from valuerank.definitions.edit import check_representable, definition_from_fields, with_changes
from valuerank.definitions.errors import DefinitionError
from valuerank.definitions.expansion import ExpansionMode, expand, scenario_bound
from valuerank.definitions.hashing import content_hash
from valuerank.definitions.rules import parse_rules, rules_for
from valuerank.definitions.sampling import draw_seed, sample, sample_count
from valuerank.errors import ImmutableVersionError, InvalidInputError
from valuerank.formats import parse_definition, serialize_definition
from valuerank.formats.definition_model import Definition
from valuerank.formats.errors import FormatError
from valuerank.formats.scenarios_model import ScenarioFile

_RULES_HEADING = re.compile(r"^#\s+matching\s+rules\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class StoredDefinition:
    """A definition version and its parsed content."""

    version: versioning.Version
    definition: Definition

    def summary(self) -> dict[str, Any]:
        return {
            **self.version.summary(),
            "dimensions": [d.name for d in self.definition.dimensions],
        }

    def detail(self) -> dict[str, Any]:
        """The version with its content and its matching rules as interpreted."""
        rules = rules_for(self.definition)
        return {
            **self.version.summary(),
            "source_file": self.version.source_file,
            "content": self.version.content,
            "matching_rules": {
                "machine": [r.text for r in rules.rules],
                "prose": list(rules.prose),
            },
        }


def _stored(version: versioning.Version) -> StoredDefinition:
    return StoredDefinition(version, Definition.from_dict(version.content))


def _rules_first_line(text: str) -> int:
    """The file line where the matching rules' text starts, so rule errors name file lines."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if _RULES_HEADING.match(line.strip()):
            for offset, following in enumerate(lines[index + 1 :], start=index + 2):
                if following.strip():
                    return offset
    return 1


def has_nul(content: Any) -> bool:
    """Whether JSON-ready content holds a NUL anywhere (PostgreSQL's JSON cannot)."""
    return "\\u0000" in json.dumps(content, default=str)


def check_no_nul(text: str, source: str | None) -> None:
    """A NUL character is no text a CLI file holds, and PostgreSQL cannot store it."""
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise FormatError(
            "the file holds a NUL character", source=source, line=line, hint="remove it"
        )


def parse_and_check(text: str, source: str | None = None) -> Definition:
    """Parse a definition file and check its matching rules against its dimensions.

    Raises `FormatError` or `DefinitionError`, both naming the line and the fix.
    """
    check_no_nul(text, source)
    definition = parse_definition(text, source=source)
    if has_nul(definition.to_dict()):  # written as an escape (YAML's "\0") in the file
        raise FormatError(
            "a value holds a NUL character", source=source, hint="remove the \\0 escape"
        )
    try:
        parse_rules(
            definition.matching_rules,
            [d.name for d in definition.dimensions],
            first_line=_rules_first_line(text),
        )
    except DefinitionError as exc:
        raise DefinitionError(
            f"# Matching Rules: {exc.message}",
            line=exc.line,
            column=exc.column,
            hint=exc.hint,
            source=source,
        ) from exc
    return definition


async def import_definition(
    conn: AsyncConnection,
    org_id: str,
    text: str,
    *,
    source_file: str | None = None,
    label: str | None = None,
) -> tuple[StoredDefinition, bool]:
    """Store a definition file as a new lineage (`v1`).

    Importing the same content under the same name again returns the existing version
    and `False` instead of storing a duplicate.
    """
    definition = parse_and_check(text, source_file)
    digest = content_hash(definition)
    existing = await versioning.find_by_hash(conn, definitions, org_id, definition.name, digest)
    if existing is not None:
        return _stored(existing), False
    version = await versioning.create_root(
        conn,
        definitions,
        org_id,
        name=definition.name,
        content=definition.to_dict(),
        content_hash=digest,
        label=label,
        source_file=source_file,
    )
    return _stored(version), True


def checked_text(definition: Definition) -> str:
    """The CLI file of a definition given as fields, checked like an imported file and
    refused (naming the field) when the file would not hold it as given."""
    try:
        text = serialize_definition(definition)
    except ValueError as exc:  # a comma in an option, a line break in a cell
        raise InvalidInputError(
            f"cannot be written in the CLI's definition format: {exc}",
            hint="an option cannot hold a comma; a label or option cannot hold a line break",
        ) from None
    check_representable(definition, parse_and_check(text))
    return text


async def create_definition(
    conn: AsyncConnection,
    org_id: str,
    fields: dict[str, Any],
    *,
    label: str | None = None,
) -> tuple[StoredDefinition, bool]:
    """Store a definition given as fields (the API's JSON) as a new lineage, exactly as
    importing its CLI file would; the same content under the same name is not stored twice."""
    text = checked_text(definition_from_fields(fields))
    return await import_definition(conn, org_id, text, label=label)


async def get_definition(conn: AsyncConnection, org_id: str, ref: str) -> StoredDefinition:
    return _stored(await versioning.get_version(conn, definitions, org_id, ref))


async def list_definitions(conn: AsyncConnection, org_id: str) -> list[StoredDefinition]:
    return [_stored(v) for v in await versioning.list_versions(conn, definitions, org_id)]


async def list_definitions_page(
    conn: AsyncConnection,
    org_id: str,
    *,
    limit: int,
    after: tuple[str, str] | None = None,
    name: str | None = None,
    label: str | None = None,
) -> list[StoredDefinition]:
    """Newest first, `limit + 1` versions after the cursor (see `versioning.list_versions_page`)."""
    found = await versioning.list_versions_page(
        conn, definitions, org_id, limit=limit, after=after, name=name, label=label
    )
    return [_stored(v) for v in found]


async def fork_definition(
    conn: AsyncConnection,
    org_id: str,
    parent_ref: str,
    *,
    definition: Definition | None = None,
    label: str | None = None,
    source_file: str | None = None,
) -> StoredDefinition:
    """A child version of `parent_ref`, with new content or a copy of the parent's."""
    version = await versioning.fork(
        conn,
        definitions,
        org_id,
        parent_ref,
        content=None if definition is None else definition.to_dict(),
        content_hash=None if definition is None else content_hash(definition),
        name=None if definition is None else definition.name,
        label=label,
        source_file=source_file,
    )
    return _stored(version)


async def fork_with_changes(
    conn: AsyncConnection,
    org_id: str,
    parent_ref: str,
    changes: dict[str, Any],
    *,
    label: str | None = None,
) -> StoredDefinition:
    """A child of `parent_ref` whose content is the parent's with `changes` (some of its
    fields) applied, checked like an imported file."""
    parent = await get_definition(conn, org_id, parent_ref)
    text = checked_text(with_changes(parent.definition, changes))
    return await fork_definition(
        conn, org_id, parent.version.id, definition=parse_and_check(text), label=label
    )


async def has_runs(conn: AsyncConnection, org_id: str, version_id: str) -> bool:
    query = select(exists().where(runs.c.org_id == org_id, runs.c.definition_id == version_id))
    return bool(await conn.scalar(query))


async def update_definition(
    conn: AsyncConnection, org_id: str, ref: str, definition: Definition
) -> StoredDefinition:
    """Edit a version in place — only while no run uses it; afterwards an edit is a fork."""
    version = await versioning.get_version(conn, definitions, org_id, ref)
    if await has_runs(conn, org_id, version.id):
        raise ImmutableVersionError(
            f"definition {version.name} {version.version_label} has runs and cannot change",
            hint=f"fork it instead: `valuerank definitions fork {version.id} --from-file FILE.md`",
        )
    updated = await versioning.replace_content(
        conn,
        definitions,
        version,
        content=definition.to_dict(),
        content_hash=content_hash(definition),
    )
    return _stored(updated)


async def lineage(conn: AsyncConnection, org_id: str, ref: str) -> versioning.Lineage:
    """Ancestors (root first) and descendants of a definition version."""
    stored = await get_definition(conn, org_id, ref)
    return await versioning.lineage(conn, definitions, stored.version)


async def tree(conn: AsyncConnection, org_id: str, ref: str) -> versioning.TreeNode:
    return await versioning.tree(conn, definitions, org_id, ref)


async def diff(conn: AsyncConnection, org_id: str, ref_a: str, ref_b: str) -> DefinitionDiff:
    a = await get_definition(conn, org_id, ref_a)
    b = await get_definition(conn, org_id, ref_b)
    return diff_definitions(a.definition, b.definition)


async def export_markdown(conn: AsyncConnection, org_id: str, ref: str) -> str:
    return serialize_definition((await get_definition(conn, org_id, ref)).definition)


class TooManyScenariosError(InvalidInputError):
    code = "TOO_MANY_SCENARIOS"


@dataclass(frozen=True)
class ExpandedScenarios:
    """The scenarios of a version (`file`, sampled when asked) and how many there are in all."""

    file: ScenarioFile
    total: int
    sample_seed: int | None = None  # the seed of the sample (drawn if none was given)


async def expand_scenarios(
    conn: AsyncConnection,
    org_id: str,
    ref: str,
    *,
    mode: ExpansionMode = "first",
    seed: int | None = None,
    sample_percentage: float | None = None,
    sample_seed: int | None = None,
    sample_size: int | None = None,
    max_scenarios: int | None = None,
) -> ExpandedScenarios:
    """The scenarios of a version; optionally the nested deterministic sample of them, of a
    percentage or of `sample_size` scenarios (with a random seed, reported in the result,
    when none is given). `max_scenarios` refuses (TOO_MANY_SCENARIOS) a definition that could
    expand to more, before expanding it."""
    stored = await get_definition(conn, org_id, ref)
    bound = scenario_bound(stored.definition, mode)
    if max_scenarios is not None and bound > max_scenarios:
        raise TooManyScenariosError(
            f"{stored.version.name} {stored.version.version_label} can expand to {bound} "
            f"scenarios in mode {mode!r}; at most {max_scenarios} are expanded here",
            hint="expand it with `valuerank scenarios expand`, or use mode 'first'",
        )
    full = expand(stored.definition, mode=mode, seed=seed)
    if sample_percentage is None and sample_size is None:
        return ExpandedScenarios(full, len(full.scenarios))
    if sample_seed is None:
        sample_seed = draw_seed()
    if sample_size is not None:
        chosen = sample_count(full.scenarios, sample_size, sample_seed)
    else:
        assert sample_percentage is not None
        chosen = sample(full.scenarios, sample_percentage, sample_seed)
    sampled = ScenarioFile(preamble=full.preamble, scenarios=tuple(chosen), layout=full.layout)
    return ExpandedScenarios(sampled, len(full.scenarios), sample_seed)
