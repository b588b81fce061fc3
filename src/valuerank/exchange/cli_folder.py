"""Finding the runs in a CLI folder or run ZIP, and parsing their files (pure, no database).

Layout understood (any depth; a workspace ZIP is several of these under `runs/`):

    <run root>/run_manifest.yaml        one run; its folder is the run's root
    <run root>/transcripts/transcript.*.md   (or directly in the run root, as the CLI writes)
    <run root>/scenarios/*.yaml         the run's scenarios (modern or legacy layout)
    <run root>/definition.md            the definition the run used (our exports)
    <run root>/config/values_rubric.yaml     the rubric the run used (our exports)
    <run root>/results.jsonl            per-transcript metadata (our exports): tokens, cost…

A transcript belongs to the deepest run root above it. Transcripts under no manifest (a
folder of CLI transcripts, the CLI's `transcripts/` folder) are grouped by the `run_id` of
their front matter: one run per run id, with the `scenarios/*.yaml` files that are under no
manifest. Files in hidden folders and `__MACOSX/` are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from valuerank.exchange.archive_safety import SourceTree
from valuerank.exchange.errors import ImportFormatError
from valuerank.exchange.naming import sample_from_name
from valuerank.formats import (
    FormatError,
    RunManifest,
    ScenarioFile,
    Transcript,
    parse_run_manifest,
    parse_scenarios,
    parse_transcript,
)

MANIFEST = "run_manifest.yaml"
DEFINITION = "definition.md"
RESULTS = "results.jsonl"
RUBRIC = "config/values_rubric.yaml"


def wanted(path: str) -> bool:
    """Whether an import reads this file (relative POSIX path)."""
    parts = PurePosixPath(path).parts
    if not parts or any(p.startswith(".") or p == "__MACOSX" for p in parts):
        return False
    name = parts[-1]
    if name.startswith("transcript.") and name.endswith(".md"):
        return True
    if name in (MANIFEST, DEFINITION, RESULTS) or path == RUBRIC or path.endswith("/" + RUBRIC):
        return True
    return len(parts) >= 2 and parts[-2] == "scenarios" and name.endswith((".yaml", ".yml"))


@dataclass(frozen=True)
class TranscriptFile:
    path: str  # relative to the import's root
    where: str  # how errors name it
    content: str  # the file's text, exactly (decoded from strict UTF-8)
    transcript: Transcript
    sample_index: int

    @property
    def name(self) -> str:
        return PurePosixPath(self.path).name


@dataclass(frozen=True)
class RunBundle:
    """Everything an import found for one run."""

    cli_run_id: str
    root: str  # folder of the run inside the import ("" = the top)
    transcripts: tuple[TranscriptFile, ...]
    manifest: RunManifest | None = None
    manifest_where: str | None = None
    scenario_files: tuple[tuple[str, ScenarioFile], ...] = ()
    definition_text: str | None = None
    definition_where: str | None = None
    rubric_text: str | None = None
    rubric_where: str | None = None
    # results.jsonl records by transcript file name
    results: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def decode(data: bytes, where: str) -> str:
    """Strict UTF-8 text; an error names the line of the first bad byte. NUL is refused."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportFormatError(
            f"{where}:{line}: not UTF-8 text (byte {exc.start}: {data[exc.start]:#04x})",
            hint="save the file as UTF-8; nothing was imported",
        ) from exc
    nul = text.find("\x00")
    if nul >= 0:
        raise ImportFormatError(
            f"{where}:{text[:nul].count(chr(10)) + 1}: the text holds a NUL character",
            hint="remove it; nothing was imported",
        )
    return text


def _format_error(exc: FormatError, where: str) -> ImportFormatError:
    line = f":{exc.line}" if exc.line is not None else ""
    return ImportFormatError(
        f"{where}{line}: {exc.message}",
        hint=(exc.hint + "; nothing was imported") if exc.hint else "nothing was imported",
    )


def _sample_index(transcript: Transcript, path: str, where: str) -> int:
    declared = dict(transcript.extra_front_matter).get("sample_index")
    if declared is None:
        return sample_from_name(path, transcript.run_id) or 0
    if isinstance(declared, bool) or not isinstance(declared, int) or declared < 0:
        raise ImportFormatError(
            f"{where}: front matter `sample_index` must be a whole number >= 0, not {declared!r}",
            hint="fix or remove the key; nothing was imported",
        )
    return declared


def parse_transcript_file(tree: SourceTree, path: str) -> TranscriptFile:
    where = tree.where(path)
    content = decode(tree.files[path], where)
    try:
        transcript = parse_transcript(content, source=where)
    except FormatError as exc:
        raise _format_error(exc, where) from exc
    return TranscriptFile(path, where, content, transcript, _sample_index(transcript, path, where))


def _parent(path: str) -> str:
    parent = PurePosixPath(path).parent.as_posix()
    return "" if parent == "." else parent


def _under(path: str, root: str) -> bool:
    return root == "" or path.startswith(root + "/")


def _results(tree: SourceTree, path: str) -> dict[str, Mapping[str, Any]]:
    where = tree.where(path)
    found: dict[str, Mapping[str, Any]] = {}
    for number, line in enumerate(decode(tree.files[path], where).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(
                f"{where}:{number}: not a JSON object ({exc.msg})",
                hint="each line of results.jsonl is one JSON object; nothing was imported",
            ) from exc
        if not isinstance(record, dict) or not isinstance(record.get("file"), str):
            raise ImportFormatError(
                f"{where}:{number}: a record needs a `file` naming its transcript",
                hint="nothing was imported",
            )
        found[PurePosixPath(record["file"]).name] = record
    return found


def _scenario_files(tree: SourceTree, paths: list[str]) -> tuple[tuple[str, ScenarioFile], ...]:
    files: list[tuple[str, ScenarioFile]] = []
    for path in sorted(paths):
        where = tree.where(path)
        try:
            files.append((path, parse_scenarios(decode(tree.files[path], where), source=where)))
        except FormatError as exc:
            raise _format_error(exc, where) from exc
    return tuple(files)


def _text(tree: SourceTree, path: str) -> tuple[str | None, str | None]:
    if path not in tree.files:
        return None, None
    where = tree.where(path)
    return decode(tree.files[path], where), where


def _join(root: str, name: str) -> str:
    return f"{root}/{name}" if root else name


def find_runs(tree: SourceTree) -> list[RunBundle]:
    """The runs of an import, in a stable order (manifest runs by folder, then loose run ids)."""
    paths = sorted(tree.files)
    manifests: dict[str, RunManifest] = {}
    for path in paths:
        if PurePosixPath(path).name == MANIFEST:
            where = tree.where(path)
            try:
                manifests[_parent(path)] = parse_run_manifest(
                    decode(tree.files[path], where), where
                )
            except FormatError as exc:
                raise _format_error(exc, where) from exc
    roots = sorted(manifests, key=len, reverse=True)  # deepest first

    def owner(path: str) -> str | None:
        return next((root for root in roots if _under(path, root)), None)

    transcripts: dict[str | None, list[TranscriptFile]] = {}
    scenario_paths: dict[str | None, list[str]] = {}
    for path in paths:
        name = PurePosixPath(path).name
        if name.startswith("transcript.") and name.endswith(".md"):
            transcripts.setdefault(owner(path), []).append(parse_transcript_file(tree, path))
        elif PurePosixPath(path).parent.name == "scenarios":
            scenario_paths.setdefault(owner(path), []).append(path)
    if not manifests and not transcripts:
        raise ImportFormatError(
            f"{tree.label}: no run_manifest.yaml and no transcript.*.md files found",
            hint="give a run folder or ZIP written by the CLI or by `valuerank export run`",
        )
    bundles: list[RunBundle] = []
    for root in sorted(manifests):
        definition, definition_where = _text(tree, _join(root, DEFINITION))
        rubric, rubric_where = _text(tree, _join(root, RUBRIC))
        results_path = _join(root, RESULTS)
        bundles.append(
            RunBundle(
                cli_run_id=manifests[root].run_id,
                root=root,
                transcripts=tuple(transcripts.get(root, [])),
                manifest=manifests[root],
                manifest_where=tree.where(_join(root, MANIFEST)),
                scenario_files=_scenario_files(tree, scenario_paths.get(root, [])),
                definition_text=definition,
                definition_where=definition_where,
                rubric_text=rubric,
                rubric_where=rubric_where,
                results=_results(tree, results_path) if results_path in tree.files else {},
            )
        )
    loose: dict[str, list[TranscriptFile]] = {}
    for item in transcripts.get(None, []):
        loose.setdefault(item.transcript.run_id, []).append(item)
    shared_scenarios = _scenario_files(tree, scenario_paths.get(None, []))
    # Without a manifest, the folder's own definition.md, rubric and results.jsonl belong to
    # the runs of its transcripts (they were ignored without a word): each run gets the
    # definition and rubric, and the results of its own files (keyed by file name).
    definition, definition_where = _text(tree, DEFINITION) if loose else (None, None)
    rubric, rubric_where = _text(tree, RUBRIC) if loose else (None, None)
    results = _results(tree, RESULTS) if loose and RESULTS in tree.files else {}
    for run_id in sorted(loose):
        bundles.append(
            RunBundle(
                run_id,
                "",
                tuple(loose[run_id]),
                scenario_files=shared_scenarios,
                definition_text=definition,
                definition_where=definition_where,
                rubric_text=rubric,
                rubric_where=rubric_where,
                results=results,
            )
        )
    return bundles


__all__ = [
    "DEFINITION",
    "MANIFEST",
    "RESULTS",
    "RUBRIC",
    "RunBundle",
    "TranscriptFile",
    "decode",
    "find_runs",
    "parse_transcript_file",
    "wanted",
]
