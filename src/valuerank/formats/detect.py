"""Tell which CLI format a file is in, and check it (for `valuerank formats check`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Literal

from .definition_md import parse_definition
from .errors import FormatError, FormatWarning
from .rubric import parse_rubric
from .run_manifest import parse_run_manifest
from .scenarios_yaml import parse_scenarios
from .transcript_md import parse_transcript, parse_transcript_file_name
from .yaml_io import load, split_front_matter

Kind = Literal["definition", "scenarios", "transcript", "run_manifest", "rubric"]
KINDS: tuple[Kind, ...] = ("definition", "scenarios", "transcript", "run_manifest", "rubric")

_YAML_SUFFIXES = (".yaml", ".yml")
_TEMPLATE_HEADING = re.compile(r"^#\s*template\s*$", re.IGNORECASE | re.MULTILINE)


def kind_from_name(file_name: str) -> Kind | None:
    """The kind the CLI's file naming implies, or None."""
    name = PurePath(file_name).name.lower()
    if name.startswith("transcript.") and name.endswith(".md"):
        return "transcript"
    if name.endswith(_YAML_SUFFIXES):
        if name.startswith("run_manifest"):
            return "run_manifest"
        if "rubric" in name:
            return "rubric"
        if name.startswith(("exp-", "scenarios")):
            return "scenarios"
    if name.startswith("exp-") and name.endswith(".md"):
        return "definition"
    return None


def kind_from_content(text: str) -> Kind | None:
    """The kind the text looks like, or None."""
    try:
        data = load(text.lstrip("\ufeff")).data
    except FormatError:
        data = None
    if isinstance(data, dict):
        values = data.get("values")
        if isinstance(values, dict) and any(
            k in data for k in ("disambiguation", "scoring rules", "meta", "unmatched_values")
        ):
            return "rubric"
        if "run_id" in data and any(
            k in data for k in ("models", "scenario_list", "runtime_config", "version_hashes")
        ):
            return "run_manifest"
        if isinstance(data.get("scenarios"), dict) or any(
            str(k).startswith("scenario_") and isinstance(v, dict) for k, v in data.items()
        ):
            return "scenarios"
        if isinstance(values, dict):
            return "rubric"
        return None
    try:
        front = split_front_matter(text.lstrip("\ufeff").replace("\r\n", "\n"))
    except FormatError:
        front = None
    if front is not None and ("target_model" in front.data or "## Dialogue" in front.body):
        return "transcript"
    if _TEMPLATE_HEADING.search(text):
        return "definition"
    return None


def detect_kind(file_name: str, text: str) -> Kind | None:
    """The file's kind: by its name when that follows the CLI's naming, else by content."""
    return kind_from_name(file_name) or kind_from_content(text)


@dataclass(frozen=True)
class CheckReport:
    """The outcome of checking one file. `error` is set exactly when `ok` is False."""

    file_name: str
    kind: Kind | None
    ok: bool
    summary: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[FormatWarning, ...] = ()
    error: FormatError | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: warnings and the error rendered as text (for `--json` output)."""
        return {
            "file": self.file_name,
            "kind": self.kind,
            "ok": self.ok,
            "summary": self.summary,
            "warnings": [w.render(self.file_name) for w in self.warnings],
            "error": None
            if self.error is None
            else self.error.with_source(self.file_name).render(),
        }

    def render(self) -> list[str]:
        """Human-readable lines: a status line, then warnings / the error."""
        status = "ok" if self.ok else "error"
        facts = ", ".join(f"{k}={v}" for k, v in self.summary.items())
        lines = [
            f"{self.file_name}: {self.kind or 'unknown'}: {status}"
            + (f" ({facts})" if facts else "")
        ]
        lines += [w.render(self.file_name) for w in self.warnings]
        if self.error is not None:
            lines.append(self.error.with_source(self.file_name).render())
        return lines


def _summarize(
    kind: Kind, file_name: str, text: str, warnings: list[FormatWarning]
) -> dict[str, Any]:
    if kind == "definition":
        d = parse_definition(text, file_name, warnings=warnings)
        levels = {dim.name: len(dim.levels) for dim in d.dimensions}
        return {
            "name": d.name,
            "dimensions": len(d.dimensions),
            "levels": levels,
            "combinations": math.prod(levels.values()) if levels else 1,
            "matching_rules": d.matching_rules is not None,
        }
    if kind == "scenarios":
        f = parse_scenarios(text, file_name, warnings=warnings)
        return {
            "layout": f.layout,
            "scenarios": len(f.scenarios),
            "base_ids": sorted({s.base_id for s in f.scenarios if s.base_id}),
            "extra_keys": sorted({k for s in f.scenarios for k, _ in s.extra}),
        }
    if kind == "transcript":
        t = parse_transcript(text, file_name, warnings=warnings)
        named = parse_transcript_file_name(file_name, t.run_id)
        if named is not None and named.scenario_id != t.scenario_id:
            warnings.append(
                FormatWarning(
                    f"file name says scenario `{named.scenario_id}` but the front matter says "
                    f"`{t.scenario_id}`"
                )
            )
        if named is not None and named.run_id != t.run_id:
            warnings.append(
                FormatWarning(
                    f"file name says run `{named.run_id}` but the front matter says `{t.run_id}`"
                )
            )
        return {
            "scenario_id": t.scenario_id,
            "run_id": t.run_id,
            "target_model": t.target_model,
            "turns": len(t.turns),
        }
    if kind == "run_manifest":
        m = parse_run_manifest(text, file_name, warnings=warnings)
        return {
            "run_id": m.run_id,
            "models": len(m.models or ()),
            "scenarios": len(m.scenario_list or ()),
        }
    rubric, found = parse_rubric(text, file_name)
    warnings.extend(found)
    return {
        "values": len(rubric.values),
        "disambiguation_rules": len(rubric.disambiguation),
        "sections": [k for k, _ in rubric.sections],
    }


def check_file(file_name: str, text: str, kind: Kind | None = None) -> CheckReport:
    """Detect (unless `kind` is given) and parse one file; never raises FormatError."""
    kind = kind or detect_kind(file_name, text)
    if kind is None:
        return CheckReport(
            file_name,
            None,
            False,
            error=FormatError(
                "cannot tell which ValueRank file format this is",
                source=file_name,
                hint="name it like the CLI does: exp-*.md (definition), exp-*.yaml "
                "(scenarios), transcript.*.md, run_manifest.yaml or values_rubric.yaml",
            ),
        )
    warnings: list[FormatWarning] = []
    try:
        summary = _summarize(kind, file_name, text, warnings)
    except FormatError as exc:
        return CheckReport(file_name, kind, False, warnings=tuple(warnings), error=exc)
    return CheckReport(file_name, kind, True, summary, tuple(warnings))


__all__ = ["KINDS", "CheckReport", "Kind", "check_file", "detect_kind"]
