"""Exporting a run as the CLI's files: a run ZIP, or a run folder inside a workspace ZIP.

Layout (paths relative to the run's folder; a run ZIP holds them at its top):

    run_manifest.yaml                    see exchange.manifest
    scenarios/exp-<name>.yaml            the run's scenarios and its preamble (modern layout);
                                         <name> = the definition's name, else the run's name
    transcripts/transcript.<scenario>.<target>.<probe>[.sample<k>].<run_id>.md
                                         each transcript's stored text, byte for byte
    definition.md                        when the run has a definition
    config/values_rubric.yaml            when the run has a rubric
    summary.csv, results.jsonl           see exchange.reports

The export streams: transcripts are read a batch at a time in export order and written to
the archive as they come, their lines of summary.csv and results.jsonl go to temporary
files copied in at the end, so the memory an export needs does not grow with the run (a
set of 8-byte digests keeps the file names unique: ~70 bytes per transcript).
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import rubrics, transcripts
from valuerank.definitions.service import get_definition
from valuerank.exchange.manifest import build_manifest, export_run_id, setting
from valuerank.exchange.naming import scenarios_file_name, transcript_export_name
from valuerank.exchange.reports import result_line, result_record, summary_header, summary_line
from valuerank.exchange.run_data import (
    RunSnapshot,
    TranscriptRow,
    load_run,
    ordered_rows,
    transcript_batches,
)
from valuerank.exchange.zip_write import ZipStream
from valuerank.formats import (
    FormatError,
    Rubric,
    ScenarioFile,
    Transcript,
    parse_transcript,
    serialize_definition,
    serialize_rubric,
    serialize_run_manifest,
    serialize_scenarios,
)
from valuerank.formats.scenarios_model import CORE_SCENARIO_KEYS, Scenario
from valuerank.refs import short_id

MANIFEST = "run_manifest.yaml"
COPY_CHUNK = 1 << 20


@dataclass(frozen=True)
class RunExport:
    """What was written of one run."""

    run_id: str  # the CLI run id written in the manifest
    db_id: str
    created_at: datetime
    transcripts: int


def scenario_from_content(scenario_id: str, content: Mapping[str, Any]) -> Scenario:
    def text(key: str) -> str:
        value = content.get(key)
        return "" if value is None else str(value)

    return Scenario(
        id=scenario_id,
        base_id=text("base_id"),
        category=text("category"),
        subject=text("subject"),
        body=text("body"),
        extra=tuple((k, v) for k, v in content.items() if k not in CORE_SCENARIO_KEYS),
        key_order=tuple(content),
    )


def _parsed(content: str) -> Transcript | None:
    try:
        return parse_transcript(content)
    except FormatError:
        return None


class _UniqueNames:
    """Transcript file names, unique within the run: only ids that contain dots can make
    two names equal; the later one then gets its transcript's id prefix (kept both)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._seen: set[bytes] = set()

    def take(self, row: TranscriptRow, probe_model: str | None) -> str:
        name = transcript_export_name(
            row.scenario_id, row.model, probe_model, row.sample_index, self.run_id
        )
        if self._digest(name) in self._seen:
            name = name[: -len(".md")] + f".{short_id(row.id)}.md"
        self._seen.add(self._digest(name))
        return name

    @staticmethod
    def _digest(name: str) -> bytes:
        return hashlib.blake2b(name.encode("utf-8"), digest_size=8).digest()


async def _first_parsed(
    conn: AsyncConnection, org_id: str, run_id: str, models: list[str]
) -> Transcript | None:
    """The first transcript in export order that parses (normally the very first)."""
    async for rows in ordered_rows(conn, org_id, run_id, models, transcripts.c.content, batch=16):
        for (content,) in rows:
            if (parsed := _parsed(content)) is not None:
                return parsed
    return None


async def _all_models(
    conn: AsyncConnection, org_id: str, run_id: str, models: list[str]
) -> list[str]:
    """The run's models, then its transcripts' other models in the order they are exported."""
    found = await conn.execute(
        select(transcripts.c.model)
        .where(transcripts.c.org_id == org_id, transcripts.c.run_id == run_id)
        .distinct()
    )
    others = {str(m) for (m,) in found} - set(models)
    if not others:
        return models
    ordered = list(models)
    async for rows in ordered_rows(conn, org_id, run_id, models, transcripts.c.model):
        for (model,) in rows:
            if model in others and model not in ordered:
                ordered.append(model)
    return ordered


async def _rubric_yaml(conn: AsyncConnection, org_id: str, rubric_id: str | None) -> str | None:
    if rubric_id is None:
        return None
    content = await conn.scalar(
        select(rubrics.c.content).where(rubrics.c.org_id == org_id, rubrics.c.id == rubric_id)
    )
    return None if content is None else serialize_rubric(Rubric.from_dict(dict(content)))


def _copy_in(archive: ZipStream, path: str, spool: IO[bytes], moment: datetime) -> None:
    spool.seek(0)
    with archive.open(path, moment) as entry:
        shutil.copyfileobj(spool, entry, COPY_CHUNK)


async def write_run(
    conn: AsyncConnection,
    org_id: str,
    run: RunSnapshot,
    archive: ZipStream,
    *,
    prefix: str = "",
) -> RunExport:
    """Every file of the run's export (see the module docstring) into `archive`, under
    `prefix` (a workspace's run folder, ending with `/`)."""
    run_id = export_run_id(run)
    moment = run.created_at
    definition_md: str | None = None
    name = run.name or run_id
    if run.definition_id is not None:
        stored = await get_definition(conn, org_id, run.definition_id)
        definition_md = serialize_definition(stored.definition)
        name = stored.definition.name or name
    scenario_file = ScenarioFile(
        preamble=str(setting(run, "preamble") or ""),
        scenarios=tuple(scenario_from_content(sid, c) for sid, c in run.scenarios),
        layout="modern",
    )
    scenarios_yaml = serialize_scenarios(scenario_file)
    rubric_yaml = await _rubric_yaml(conn, org_id, run.rubric_id)
    models = [str(m) for m in setting(run, "models") or ()]
    first = await _first_parsed(conn, org_id, run.id, models)
    manifest = build_manifest(
        run, first, await _all_models(conn, org_id, run.id, models), scenarios_yaml, rubric_yaml
    )
    archive.write(prefix + MANIFEST, serialize_run_manifest(manifest).encode("utf-8"), moment)
    archive.write(
        f"{prefix}scenarios/{scenarios_file_name(name)}", scenarios_yaml.encode("utf-8"), moment
    )
    names = _UniqueNames(run_id)
    count = 0
    with tempfile.TemporaryFile() as summary, tempfile.TemporaryFile() as results:
        summary_text = io.TextIOWrapper(summary, encoding="utf-8", newline="")
        results_text = io.TextIOWrapper(results, encoding="utf-8", newline="")
        summary_text.write(summary_header())
        async for batch in transcript_batches(conn, org_id, run, models):
            for row in batch:
                parsed = _parsed(row.content)
                file_name = names.take(row, None if parsed is None else parsed.probe_model)
                archive.write(f"{prefix}transcripts/{file_name}", row.content.encode(), moment)
                summary_text.write(summary_line(run_id, row))
                results_text.write(result_line(result_record(run_id, file_name, row)))
                count += 1
        summary_text.detach()  # flushed into the files, which stay open
        results_text.detach()
        if definition_md is not None:
            archive.write(prefix + "definition.md", definition_md.encode("utf-8"), moment)
        if rubric_yaml is not None:
            archive.write(prefix + "config/values_rubric.yaml", rubric_yaml.encode("utf-8"), moment)
        _copy_in(archive, prefix + "summary.csv", summary, moment)
        _copy_in(archive, prefix + "results.jsonl", results, moment)
    return RunExport(run_id, run.id, run.created_at, count)


async def write_run_zip(
    conn: AsyncConnection, org_id: str, run: RunSnapshot, out: IO[bytes]
) -> RunExport:
    """The run (`load_run`) as a ZIP in the CLI's layout, written into `out` (a seekable
    binary file)."""
    with ZipStream(out) as archive:
        return await write_run(conn, org_id, run, archive)


async def export_run(conn: AsyncConnection, org_id: str, ref: str) -> bytes:
    """The run (id or unique prefix) ZIP in memory (`write_run_zip` streams it)."""
    buffer = io.BytesIO()
    await write_run_zip(conn, org_id, await load_run(conn, org_id, ref), buffer)
    return buffer.getvalue()


__all__ = [
    "RunExport",
    "export_run",
    "scenario_from_content",
    "write_run",
    "write_run_zip",
]
