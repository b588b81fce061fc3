"""The original ValueRank CLI's file formats: pure parse/serialize functions, no I/O.

Every parser takes the file's text and, optionally, its name (used in errors), returns a
model and raises `FormatError` (naming the line and the fix) on bad input; every
serializer returns text that parses back to an equal model. Files the CLI generates
(definitions, generated scenarios, transcripts, run manifests) come out byte-identical.
"""

from .definition_md import parse_definition, serialize_definition
from .definition_model import DEFAULT_BASE_ID, Definition, Dimension, Level
from .detect import KINDS, CheckReport, Kind, check_file, detect_kind
from .errors import FormatError, FormatWarning
from .rubric import DisambiguationRule, Rubric, RubricValue, parse_rubric, serialize_rubric
from .run_manifest import (
    ManifestModel,
    PromptTemplates,
    RunManifest,
    RuntimeConfigSnapshot,
    VersionHashes,
    parse_run_manifest,
    serialize_run_manifest,
)
from .scenarios_model import Scenario, ScenarioFile
from .scenarios_yaml import DEFAULT_STATUS, parse_scenarios, scenario_status, serialize_scenarios
from .transcript_md import (
    Transcript,
    TranscriptFileName,
    Turn,
    parse_transcript,
    parse_transcript_file_name,
    serialize_transcript,
    transcript_file_name,
)

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
