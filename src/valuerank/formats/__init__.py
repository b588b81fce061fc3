"""The original ValueRank CLI's file formats: pure parse/serialize functions, no I/O.

Every parser takes the file's text and, optionally, its name (used in errors), returns a
model and raises `FormatError` (naming the line and the fix) on bad input; every
serializer returns text that parses back to an equal model. Files the CLI generates
(definitions, generated scenarios, transcripts, run manifests) come out byte-identical.

Each name below is imported from its submodule when first used (PEP 562), not with the
package: importing any submodule runs this file, and the commands that only catch
`FormatError` (every one, through the CLI's error handling) would otherwise load YAML and
every format with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from valuerank.lazy import exports_by_name, load_export

if TYPE_CHECKING:
    from valuerank.formats.definition_md import parse_definition, serialize_definition
    from valuerank.formats.definition_model import DEFAULT_BASE_ID, Definition, Dimension, Level
    from valuerank.formats.detect import KINDS, CheckReport, Kind, check_file, detect_kind
    from valuerank.formats.errors import FormatError, FormatWarning
    from valuerank.formats.rubric import (
        DisambiguationRule,
        Rubric,
        RubricValue,
        parse_rubric,
        serialize_rubric,
    )
    from valuerank.formats.run_manifest import (
        ManifestModel,
        PromptTemplates,
        RunManifest,
        RuntimeConfigSnapshot,
        VersionHashes,
        parse_run_manifest,
        serialize_run_manifest,
    )
    from valuerank.formats.scenarios_model import Scenario, ScenarioFile
    from valuerank.formats.scenarios_yaml import (
        DEFAULT_STATUS,
        parse_scenarios,
        scenario_status,
        serialize_scenarios,
    )
    from valuerank.formats.transcript_md import (
        Transcript,
        TranscriptFileName,
        Turn,
        parse_transcript,
        parse_transcript_file_name,
        serialize_transcript,
        transcript_file_name,
    )

# Each submodule → the names the package exports from it: the imports above, for the type
# checker (tests/formats/test_package.py holds these, the imports and `__all__` equal).
_SUBMODULE_EXPORTS: dict[str, tuple[str, ...]] = {
    "definition_md": ("parse_definition", "serialize_definition"),
    "definition_model": ("DEFAULT_BASE_ID", "Definition", "Dimension", "Level"),
    "detect": ("KINDS", "CheckReport", "Kind", "check_file", "detect_kind"),
    "errors": ("FormatError", "FormatWarning"),
    "rubric": ("DisambiguationRule", "Rubric", "RubricValue", "parse_rubric", "serialize_rubric"),
    "run_manifest": (
        "ManifestModel",
        "PromptTemplates",
        "RunManifest",
        "RuntimeConfigSnapshot",
        "VersionHashes",
        "parse_run_manifest",
        "serialize_run_manifest",
    ),
    "scenarios_model": ("Scenario", "ScenarioFile"),
    "scenarios_yaml": (
        "DEFAULT_STATUS",
        "parse_scenarios",
        "scenario_status",
        "serialize_scenarios",
    ),
    "transcript_md": (
        "Transcript",
        "TranscriptFileName",
        "Turn",
        "parse_transcript",
        "parse_transcript_file_name",
        "serialize_transcript",
        "transcript_file_name",
    ),
}
_EXPORTS = exports_by_name(_SUBMODULE_EXPORTS)


def __getattr__(name: str) -> Any:
    return load_export(__name__, globals(), _EXPORTS, name)


__all__ = [
    "DEFAULT_BASE_ID",
    "DEFAULT_STATUS",
    "KINDS",
    "CheckReport",
    "Definition",
    "Dimension",
    "DisambiguationRule",
    "FormatError",
    "FormatWarning",
    "Kind",
    "Level",
    "ManifestModel",
    "PromptTemplates",
    "Rubric",
    "RubricValue",
    "RunManifest",
    "RuntimeConfigSnapshot",
    "Scenario",
    "ScenarioFile",
    "Transcript",
    "TranscriptFileName",
    "Turn",
    "VersionHashes",
    "check_file",
    "detect_kind",
    "parse_definition",
    "parse_rubric",
    "parse_run_manifest",
    "parse_scenarios",
    "parse_transcript",
    "parse_transcript_file_name",
    "scenario_status",
    "serialize_definition",
    "serialize_rubric",
    "serialize_run_manifest",
    "serialize_scenarios",
    "serialize_transcript",
    "transcript_file_name",
]
