"""File and run names of exported runs, as the CLI writes them (pure).

* Run ids: the CLI's `utils.generate_run_id` form `YYYY-MM-DD.HH-MM` (we use UTC).
* Transcripts: `transcript.<scenario>.<target>.<probe>.<run_id>.md` as the CLI names them
  (`formats.transcript_file_name`). Repeated samples (sample k > 0, which the CLI does not
  have) insert `sample<k>` before the run id:
  `transcript.<scenario>.<target>.<probe>.sample<k>.<run_id>.md`; sample 0 keeps the CLI
  name. On import the sample index is read from the front matter key `sample_index` first,
  else from that part of the name, else 0.
* Scenario and definition files: `exp-<name>.yaml` / `.md` (no second `exp-` when the name
  has one), the name made safe for every file system.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import PurePosixPath

from valuerank.formats.transcript_md import parse_transcript_file_name

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SAMPLE = re.compile(r"(?:^|\.)sample(\d+)$")
MAX_PART = 120


def cli_run_id(moment: datetime) -> str:
    """`2025-11-16.10-29`: the CLI's run id for a moment (taken in UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d.%H-%M")


def safe_part(text: str, fallback: str = "run") -> str:
    """`text` as one file-name part: letters, digits, `.`, `_`, `-` only; never empty or `..`."""
    cleaned = _UNSAFE.sub("_", text).strip("._")[:MAX_PART]
    return cleaned or fallback


def exp_file_name(name: str, extension: str) -> str:
    """`exp-<name><extension>` as the CLI names definition and scenarios files.

    Definition names often start with `exp-` already (`exp-Demo_Lifeboat_Rules`): then the
    name is the file name, as in the CLI's own folders.
    """
    base = name if name.startswith("exp-") else f"exp-{name}"
    return safe_part(base, "exp-run") + extension


def scenarios_file_name(name: str) -> str:
    return exp_file_name(name, ".yaml")


def transcript_export_name(
    scenario_id: str, model: str, probe_model: str | None, sample_index: int, run_id: str
) -> str:
    """The file name of one transcript in an exported run folder (see module docstring)."""
    parts = [scenario_id, model]
    if probe_model is not None:
        parts.append(probe_model)
    if sample_index > 0:
        parts.append(f"sample{sample_index}")
    parts.append(run_id)
    name = "transcript." + ".".join(parts) + ".md"
    # Never a path: a `/` in an id would make a folder (and `..` could climb out of it).
    return name.replace("/", "_").replace("\\", "_")


def sample_from_name(file_name: str, run_id: str | None = None) -> int | None:
    """The `sample<k>` part of a transcript file name, if it has one; `run_id` (the
    transcript's own) keeps a run id with dots whole."""
    parsed = parse_transcript_file_name(PurePosixPath(file_name).name, run_id)
    if parsed is None:
        return None
    match = _SAMPLE.search(parsed.models)
    return int(match.group(1)) if match else None


__all__ = [
    "cli_run_id",
    "exp_file_name",
    "safe_part",
    "sample_from_name",
    "scenarios_file_name",
    "transcript_export_name",
]
