"""Restoring a workspace ZIP (`exchange.workspace`) into an organisation.

Everything is read, parsed and checked before the first row is written, on the caller's
connection (one transaction: all or nothing):

1. `workspace.yaml` names the format; `definitions/lineage.yaml` and `rubrics/lineage.yaml`
   list every version with its file, parent, root, label and creation time. Each file must
   parse (as a CLI definition or values rubric) to exactly the content hash the index gives,
   and every parent must be in the index: a damaged or edited archive is refused, naming
   the file.
2. The trees are written parents first (`versioning.restore`): same labels, names, forks and
   creation times; the same ids where the database does not hold them yet (a restore into a
   fresh install reproduces the workspace exactly), new ids otherwise.
3. Every run of `runs/` is imported as a run ZIP would be (`run_import`), attached to the
   restored version of its definition and rubric, with its id (when free), name, status,
   origin and creation time from the index.

Restoring the same workspace again writes nothing: versions and runs restored before (the
same ids in this organisation) are reported as already there. So an export of
a restored workspace equals the original export (in a fresh database, byte for byte in every
file but the ZIP's entry times of nothing: those are the versions' and runs' own times).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank import versioning
from valuerank.db.tables import definitions, rubrics, runs
from valuerank.definitions.errors import DefinitionError
from valuerank.definitions.hashing import content_hash
from valuerank.definitions.service import parse_and_check
from valuerank.exchange.archive_safety import SourceTree
from valuerank.exchange.cli_folder import decode, find_runs
from valuerank.exchange.errors import ImportFormatError
from valuerank.exchange.import_plan import PlannedRun, plan_run
from valuerank.exchange.run_import import (
    ImportedRun,
    RunOverrides,
    identical_run,
    write_planned,
)
from valuerank.exchange.workspace import FORMAT, FORMAT_VERSION
from valuerank.formats import FormatError, parse_rubric, yaml_io
from valuerank.rubrics import rubric_content_hash
from valuerank.runs.states import RunStatus

HEADER = "workspace.yaml"
TREES = (("definitions", definitions), ("rubrics", rubrics))


def is_workspace(tree: SourceTree) -> bool:
    return HEADER in tree.files


def workspace_file(path: str) -> bool:
    """The files of a workspace besides its runs' (which `cli_folder.wanted` selects)."""
    if path == HEADER:
        return True
    top, _, rest = path.partition("/")
    return top in ("definitions", "rubrics") and rest.endswith((".md", ".yaml"))


@dataclass(frozen=True)
class WorkspaceImport:
    definitions: int  # versions written
    rubrics: int
    reused_versions: int  # restored before: nothing written
    runs: list[ImportedRun] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "definitions": self.definitions,
            "rubrics": self.rubrics,
            "reused_versions": self.reused_versions,
            "runs": [r.to_dict() for r in self.runs],
        }


def _yaml(tree: SourceTree, path: str) -> Any:
    where = tree.where(path)
    if path not in tree.files:
        raise ImportFormatError(f"{where} is missing", hint="export the workspace again")
    try:
        return yaml_io.load(decode(tree.files[path], where), where).data
    except FormatError as exc:
        where_line = FormatError(exc.message, source=exc.source, line=exc.line).render()
        raise ImportFormatError(where_line, hint=exc.hint) from exc


def _header(tree: SourceTree) -> Mapping[str, Any]:
    header = _yaml(tree, HEADER)
    if not isinstance(header, Mapping) or header.get("format") != FORMAT:
        raise ImportFormatError(
            f"{tree.where(HEADER)}: not a ValueRank workspace (format {FORMAT!r} expected)"
        )
    version = header.get("format_version")
    if not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
        raise ImportFormatError(
            f"{tree.where(HEADER)}: workspace format version {version!r} is not one this "
            f"ValueRank reads (1 to {FORMAT_VERSION})",
            hint="upgrade ValueRank to import it",
        )
    return header


def _moment(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    try:
        moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    except ValueError as exc:
        raise ImportFormatError(f"{where}: {value!r} is not an ISO-8601 time") from exc
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _definition_content(text: str, where: str) -> tuple[dict[str, Any], str]:
    try:
        definition = parse_and_check(text, where)
    except (FormatError, DefinitionError) as exc:
        raise ImportFormatError(f"{where}: {exc}") from exc
    return definition.to_dict(), content_hash(definition)


def _rubric_content(text: str, where: str) -> tuple[dict[str, Any], str]:
    try:
        rubric, _ = parse_rubric(text, source=where)
    except FormatError as exc:
        raise ImportFormatError(f"{where}: {exc}") from exc
    content = rubric.to_dict()
    return content, rubric_content_hash(content)


Reader = Callable[[str, str], tuple[dict[str, Any], str]]
_READERS: dict[str, Reader] = {"definitions": _definition_content, "rubrics": _rubric_content}


def _records(tree: SourceTree, folder: str) -> list[versioning.VersionRecord]:
    """The versions of one tree folder, parents before children, all checked."""
    index_path = f"{folder}/lineage.yaml"
    if index_path not in tree.files:
        return []
    listed = _yaml(tree, index_path)
    entries = listed.get("versions") if isinstance(listed, Mapping) else None
    if not isinstance(entries, list):
        raise ImportFormatError(f"{tree.where(index_path)}: no `versions` list")
    records: dict[str, versioning.VersionRecord] = {}
    for number, entry in enumerate(entries, start=1):
        where = f"{tree.where(index_path)}: version {number}"
        if not isinstance(entry, Mapping) or not all(
            isinstance(entry.get(k), str) for k in ("id", "file", "root_id", "name", "label")
        ):
            raise ImportFormatError(f"{where}: needs id, file, root_id, name and label")
        path = str(entry["file"])
        if path not in tree.files:
            raise ImportFormatError(f"{where}: its file {path} is not in the archive")
        content, digest = _READERS[folder](decode(tree.files[path], tree.where(path)), path)
        if digest != entry.get("content_hash"):
            raise ImportFormatError(
                f"{tree.where(path)} does not match the content hash its index gives",
                hint="the file was changed after the export: export the workspace again",
            )
        records[str(entry["id"])] = versioning.VersionRecord(
            id=str(entry["id"]),
            parent_id=str(entry["parent_id"]) if entry.get("parent_id") else None,
            root_id=str(entry["root_id"]),
            name=str(entry["name"]),
            version_label=str(entry["label"]),
            content=content,
            content_hash=digest,
            created_at=_moment(entry.get("created_at"), where),
            source_file=path.rsplit("/", 1)[-1],
        )
    return _parents_first(records, tree.where(index_path))


def _parents_first(
    records: Mapping[str, versioning.VersionRecord], where: str
) -> list[versioning.VersionRecord]:
    ordered: list[versioning.VersionRecord] = []
    placed: set[str] = set()

    def place(record: versioning.VersionRecord, chain: tuple[str, ...]) -> None:
        if record.id in placed:
            return
        if record.id in chain:
            raise ImportFormatError(f"{where}: version {record.id} is its own ancestor")
        for needed in (record.parent_id, record.root_id):
            if needed is None or needed == record.id:
                continue
            if needed not in records:
                raise ImportFormatError(f"{where}: version {record.id} names {needed}, not listed")
            place(records[needed], (*chain, record.id))
        placed.add(record.id)
        ordered.append(record)

    for record in records.values():
        place(record, ())
    return ordered


ORIGINS = ("created", "imported")


def _mapped(ids: Mapping[str, str], exported: Any) -> str | None:
    return ids.get(str(exported)) if exported else None


def _text(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ImportFormatError(f"{where}: name {value!r} is not text")


def _choice(value: Any, allowed: Sequence[str], where: str) -> str | None:
    if value is None or value in allowed:
        return None if value is None else str(value)
    raise ImportFormatError(f"{where}: {value!r} is not one of {', '.join(allowed)}")


async def _restored_run(
    conn: AsyncConnection, org_id: str, run_id: Any, plan: PlannedRun
) -> ImportedRun | None:
    """The run this workspace restored into this organisation before (same id), if any."""
    if not run_id:
        return None
    row = (
        await conn.execute(
            select(runs.c.id, runs.c.name, runs.c.definition_id).where(
                runs.c.org_id == org_id, runs.c.id == str(run_id)
            )
        )
    ).first()
    if row is None:
        return None
    return ImportedRun(
        row.id, plan.bundle.cli_run_id, len(plan.records), False, row.name, row.definition_id
    )


async def _free(conn: AsyncConnection, table: Table, row_id: str | None) -> bool:
    if not row_id:
        return False
    return await conn.scalar(select(table.c.id).where(table.c.id == row_id)) is None


async def import_workspace_tree(
    conn: AsyncConnection, org_id: str, tree: SourceTree
) -> WorkspaceImport:
    """Restore a workspace already read from its ZIP or folder (module docstring)."""
    header = _header(tree)
    trees = {folder: _records(tree, folder) for folder, _ in TREES}
    index = {
        str(entry.get("folder")): entry
        for entry in header.get("runs") or []
        if isinstance(entry, Mapping)
    }
    plans = [plan_run(bundle) for bundle in find_runs(tree)]  # every check before any write
    ids: dict[str, dict[str, str]] = {folder: {} for folder, _ in TREES}
    written = {folder: 0 for folder, _ in TREES}
    reused = 0
    for folder, table in TREES:
        for record in trees[folder]:
            _, created = await versioning.restore(conn, table, org_id, record, ids[folder])
            written[folder] += created
            reused += not created
    results: list[ImportedRun] = []
    for plan in plans:
        entry = index.get(plan.bundle.root, {})
        where = f"{tree.where(HEADER)}: run {plan.bundle.root}"
        run_id = entry.get("id")
        overrides = RunOverrides(
            run_id=str(run_id) if await _free(conn, runs, run_id) else None,
            definition_id=_mapped(ids["definitions"], entry.get("definition_id")),
            rubric_id=_mapped(ids["rubrics"], entry.get("rubric_id")),
            name=_text(entry.get("name"), where),
            status=_choice(entry.get("status"), [s.value for s in RunStatus], where),
            origin=_choice(entry.get("origin"), ORIGINS, where),
            created_at=_moment(entry.get("created_at"), where),
        )
        restored = await _restored_run(conn, org_id, run_id, plan)
        if restored is None:  # restored before under a new id (its own was taken)?
            restored = await identical_run(conn, org_id, plan, overrides)
        if restored is None:
            restored = await write_planned(conn, org_id, plan, overrides)
        results.append(restored)
    return WorkspaceImport(written["definitions"], written["rubrics"], reused, results)


__all__ = ["WorkspaceImport", "import_workspace_tree", "is_workspace", "workspace_file"]
