"""The CLI's transcript markdown (`transcript.<scenario>.<target>.<probe>.<run_id>.md`).

The CLI writes (probe.py / utils.py):

    ---
    <yaml.safe_dump of file_version, run_id, scenario_id, target_model, probe_model,
     timestamp, context_pairs>---

    # Scenario <id>: <subject>

    ## Dialogue
    #### Turn 1 (<label>)
    **Probe:** <prompt, stripped>

    **Target:** <response, stripped>

    #### Turn 2 ...

and strips the whole text and adds one newline. We reproduce that byte for byte. Models
are read from the front matter only: model ids contain dots (`openai:gpt-4.1`), so the file
name cannot be split reliably.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from pydantic.dataclasses import dataclass as pydantic_dataclass

from valuerank.shapes import SHAPE

from .errors import FormatWarning, ParseContext
from .yaml_io import dump_cli, split_front_matter

FILE_VERSION = "v0.1"
FRONT_MATTER_KEYS = (
    "file_version",
    "run_id",
    "scenario_id",
    "target_model",
    "probe_model",
    "timestamp",
    "context_pairs",
)
REQUIRED_KEYS = ("run_id", "scenario_id", "target_model")

_TURN_HEADING = re.compile(r"^#### Turn (\d+)(?: \((.*)\))?\s*$")
_SCENARIO_HEADING = re.compile(r"^# Scenario (.*)$")
_PROBE = "**Probe:**"
_TARGET = "**Target:**"
# Run ids of the CLI's timestamp formats (utils.generate_run_id), at the end of a file name.
_RUN_ID_AT_END = re.compile(r"(\d{4}-\d{2}-\d{2}[.T-]\d{2}-\d{2}|\d{8}-\d{6}-\d{4}|\d{8}-\d{4})$")


@pydantic_dataclass(frozen=True, config=SHAPE)
class Turn:
    """One probe/target exchange. `probe` and `target` are stripped, as the CLI writes them.
    An answer shape too (`valuerank.shapes`): a stored transcript's turns as the API shows
    them."""

    number: int
    label: str
    probe: str
    target: str


@dataclass(frozen=True)
class Transcript:
    """A transcript file. `context_pairs` is derived: it is the number of turns."""

    run_id: str
    scenario_id: str
    target_model: str
    subject: str
    turns: tuple[Turn, ...]
    probe_model: str | None = None
    timestamp: str | None = None
    file_version: str = FILE_VERSION
    extra_front_matter: tuple[tuple[str, Any], ...] = ()

    @property
    def context_pairs(self) -> int:
        return len(self.turns)


@dataclass(frozen=True)
class TranscriptFileName:
    """What a transcript's file name tells, best effort.

    `models` is the raw middle part (target model, then the probe model in the CLI's
    naming); it cannot be split reliably because model ids contain dots.
    """

    scenario_id: str
    run_id: str
    models: str


def _turns_markdown(turns: tuple[Turn, ...]) -> str:
    blocks: list[str] = []
    for turn in turns:
        title = f"#### Turn {turn.number}"
        if turn.label:
            title += f" ({turn.label})"
        blocks += [
            title,
            f"{_PROBE} {turn.probe.strip()}",
            "",
            f"{_TARGET} {turn.target.strip()}",
            "",
        ]
    return "\n".join(blocks).strip()


def serialize_transcript(transcript: Transcript) -> str:
    """The transcript exactly as the CLI writes it."""
    t = transcript
    front: dict[str, Any] = {
        "file_version": t.file_version,
        "run_id": t.run_id,
        "scenario_id": t.scenario_id,
        "target_model": t.target_model,
    }
    if t.probe_model is not None:
        front["probe_model"] = t.probe_model
    if t.timestamp is not None:
        front["timestamp"] = t.timestamp
    front["context_pairs"] = t.context_pairs
    for key, value in t.extra_front_matter:
        front.setdefault(key, value)
    parts = [
        "---\n" + dump_cli(front) + "---\n",
        f"# Scenario {t.scenario_id}: {t.subject}",
        "",
        "## Dialogue",
        _turns_markdown(t.turns),
    ]
    return "\n".join(parts).strip() + "\n"


class _Reader(ParseContext):
    def turn(self, number: int, label: str, line: int, block: str) -> Turn:
        if not block.startswith(_PROBE):
            raise self.error(
                f"turn {number} does not start with `{_PROBE}`",
                line + 1,
                f"write the prompt as `{_PROBE} ...` on the line after the turn heading",
            )
        split = block.find(f"\n\n{_TARGET}")
        if split < 0:
            raise self.error(
                f"turn {number} has no `{_TARGET}` answer",
                line,
                f"add a blank line and `{_TARGET} ...` after the prompt",
            )
        probe = block[len(_PROBE) : split]
        target = block[split + 2 + len(_TARGET) :]
        return Turn(number, label, probe.strip(), target.strip())


def parse_transcript(
    text: str, source: str | None = None, *, warnings: list[FormatWarning] | None = None
) -> Transcript:
    """Parse a transcript file; the dialogue is split on `#### Turn N` headings in sequence."""
    reader = _Reader(source, warnings)
    text = text.lstrip("\ufeff")
    if text.startswith("---\r\n"):  # a whole file with Windows line ends; else keep "\r"
        text = text.replace("\r\n", "\n")  # that a model's answer may hold verbatim
    front = split_front_matter(text, source)
    if front is None:
        raise reader.error(
            "a transcript must start with `---` front matter",
            1,
            "start the file with the `---` block (run_id, scenario_id, target_model, ...)",
        )
    data = front.data
    for key in REQUIRED_KEYS:
        if data.get(key) is None:
            raise reader.error(
                f"front matter has no `{key}`", 2, f"add `{key}: ...` to the front matter"
            )
    lines = front.body.split("\n")
    first = front.body_line
    scenario_id = str(data["scenario_id"])
    subject = ""
    index = 0
    while index < len(lines) and not lines[index].strip():
        index += 1
    heading = _SCENARIO_HEADING.match(lines[index]) if index < len(lines) else None
    if heading is None:
        raise reader.error(
            "missing the `# Scenario <id>: <subject>` heading",
            first + index,
            "put `# Scenario <id>: <subject>` after the front matter",
        )
    rest = heading.group(1)
    if rest.startswith(scenario_id + ":"):
        subject = rest[len(scenario_id) + 1 :].strip()
    else:
        head_id, _, subject = rest.partition(":")
        subject = subject.strip()
        reader.warn(
            f"heading names scenario `{head_id.strip()}` but the front matter says `{scenario_id}`",
            first + index,
        )
    dialogue = next(
        (i for i in range(index + 1, len(lines)) if lines[i].strip() == "## Dialogue"), None
    )
    if dialogue is None:
        raise reader.error(
            "missing the `## Dialogue` heading",
            first + index + 1,
            "put `## Dialogue` above the first `#### Turn 1` heading",
        )
    turns: list[Turn] = []
    starts: list[tuple[int, int, str]] = []  # (line index, number, label)
    for i in range(dialogue + 1, len(lines)):
        match = _TURN_HEADING.match(lines[i])
        if match and int(match.group(1)) == len(starts) + 1:
            starts.append((i, int(match.group(1)), match.group(2) or ""))
    stray = "\n".join(lines[dialogue + 1 : starts[0][0] if starts else len(lines)]).strip()
    if stray:
        raise reader.error(
            "text between `## Dialogue` and the first turn",
            first + dialogue + 1,
            "start the dialogue with `#### Turn 1 (label)`",
        )
    for n, (start, number, label) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        block = "\n".join(lines[start + 1 : end]).strip()
        turns.append(reader.turn(number, label, first + start, block))
    declared = data.get("context_pairs")
    if declared is not None and declared != len(turns):
        reader.warn(f"context_pairs is {declared!r} but the dialogue has {len(turns)} turns", 2)
    extra = tuple((str(k), v) for k, v in data.items() if k not in FRONT_MATTER_KEYS)
    probe_model = data.get("probe_model")
    timestamp = data.get("timestamp")
    return Transcript(
        run_id=str(data["run_id"]),
        scenario_id=scenario_id,
        target_model=str(data["target_model"]),
        subject=subject,
        turns=tuple(turns),
        probe_model=None if probe_model is None else str(probe_model),
        timestamp=None if timestamp is None else str(timestamp),
        file_version=str(data.get("file_version") or FILE_VERSION),
        extra_front_matter=extra,
    )


def transcript_file_name(transcript: Transcript) -> str:
    """`transcript.<scenario_id>.<target_model>.<probe_model>.<run_id>.md`, as the CLI names it."""
    t = transcript
    middle = t.target_model if t.probe_model is None else f"{t.target_model}.{t.probe_model}"
    return f"transcript.{t.scenario_id}.{middle}.{t.run_id}.md"


def parse_transcript_file_name(
    file_name: str, run_id: str | None = None
) -> TranscriptFileName | None:
    """Scenario id and run id from a transcript file name, best effort; None if not one.

    The scenario id is the first dot-separated part (the CLI's ids have no dots); the run
    id is `run_id` when the name ends with it (the front matter's: a run id may hold dots,
    "pilot.v2", and must not be split), else one of the CLI's timestamp formats at the end,
    else the last dot-separated part.
    """
    name = PurePath(file_name).name
    if not (name.startswith("transcript.") and name.endswith(".md")):
        return None
    inner = name[len("transcript.") : -len(".md")]
    scenario_id, _, rest = inner.partition(".")
    if not scenario_id or not rest:
        return None
    if run_id and rest.endswith("." + run_id):
        return TranscriptFileName(scenario_id, run_id, rest[: -len(run_id) - 1])
    match = _RUN_ID_AT_END.search(rest)
    if match and (match.start() == 0 or rest[match.start() - 1] == "."):
        run_id = match.group(1)
        models = rest[: max(match.start() - 1, 0)]
    else:
        models, _, run_id = rest.rpartition(".")
    return TranscriptFileName(scenario_id, run_id, models)


__all__ = [
    "Transcript",
    "TranscriptFileName",
    "Turn",
    "parse_transcript",
    "parse_transcript_file_name",
    "serialize_transcript",
    "transcript_file_name",
]
