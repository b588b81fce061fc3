"""What importing one run will write, worked out and checked before anything is written (pure).

* Run config (`RunConfig`): models from the manifest's `models` (in order) then any other
  `target_model` of the transcripts; temperature/max_tokens/followup_turns (and
  `phrasings`/`scale_order`) from its `runtime_config` (follow-up turns otherwise from the
  transcripts' turn count); judges from
  `judge_model` (and our `judge_models` key); the preamble of the scenarios file; samples
  per scenario = the highest sample index + 1; a sampled run's `sample_percentage` and
  `sample_seed` (our keys).
* Scenarios: the manifest's `scenario_list` order (else the scenarios files' order, then the
  transcripts' ids sorted). Content from the first scenarios file holding the id, else from
  a transcript: `subject` from its heading and `body` = its first prompt as sent (which
  includes the preamble), `base_id` = the id, `category` empty.
* Decisions: `definitions.presentation.presented_decision` on the first turn's answer, with
  the scale labels of the first prompt, mapped back to the definition's direction for a
  reversed presentation (`…-reversed` ids), as the probe does; the reason is cut to the
  column's 200 characters.
* Tokens, latency, cost, finish reason and flags come back from `results.jsonl` when present.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from pydantic import ValidationError

from valuerank.definitions.errors import DefinitionError
from valuerank.definitions.expansion import expand_with_scores
from valuerank.definitions.presentation import presentation_of, presented_decision
from valuerank.definitions.service import parse_and_check
from valuerank.exchange.cli_folder import RunBundle, TranscriptFile
from valuerank.exchange.errors import ImportFormatError
from valuerank.exchange.manifest import PRESENTATION_KEYS
from valuerank.formats import Definition, FormatError, Rubric, parse_rubric
from valuerank.formats.scenarios_model import Scenario
from valuerank.runs.config import RunConfig
from valuerank.runs.records import JudgmentRecord, RunScenario, TranscriptRecord

REASON_LENGTH = 200  # transcripts.decision_reason is String(200)
ID_LENGTH = 300  # scenario ids and model ids (String(300) columns)
CLI_RUN_ID_LENGTH = 100
NAME_LENGTH = 300
SYNTHETIC_PROVIDERS = ("scripted:",)


@dataclass(frozen=True)
class PlannedRun:
    bundle: RunBundle
    name: str
    config: RunConfig
    scenarios: tuple[RunScenario, ...]
    records: tuple[TranscriptRecord, ...]
    definition: Definition | None
    rubric: Rubric | None
    synthetic: bool

    def keys(self) -> frozenset[tuple[str, str, int, str]]:
        """(scenario, model, sample, sha256 of content) of every transcript: its identity."""
        return frozenset(
            (r.transcript.scenario_id, r.model, r.sample_index, content_digest(r.content or ""))
            for r in self.records
        )


def content_digest(text: str) -> str:
    """sha256 of a transcript's text, to compare imports without holding every text twice."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _where(bundle: RunBundle) -> str:
    if bundle.manifest_where:
        return bundle.manifest_where
    return bundle.transcripts[0].where if bundle.transcripts else bundle.cli_run_id


def _models(bundle: RunBundle) -> list[str]:
    models: list[str] = []
    for entry in (bundle.manifest.models or ()) if bundle.manifest else ():
        if entry.true_model and entry.true_model not in models:
            models.append(entry.true_model)
    for item in bundle.transcripts:
        if item.transcript.target_model not in models:
            models.append(item.transcript.target_model)
    return models


def _judges(bundle: RunBundle) -> list[str]:
    manifest = bundle.manifest
    if manifest is None:
        return []
    listed = dict(manifest.extra).get("judge_models")
    if isinstance(listed, list) and all(isinstance(j, str) for j in listed):
        return list(listed)
    return [manifest.judge_model] if manifest.judge_model else []


def _sample(bundle: RunBundle) -> dict[str, Any]:
    """The manifest's `sample_percentage` and `sample_seed` (written by our export of a
    sampled run); the config's checks refuse values out of range."""
    extra = dict(bundle.manifest.extra) if bundle.manifest else {}
    return {key: extra[key] for key in ("sample_percentage", "sample_seed") if key in extra}


def _config(bundle: RunBundle, preamble: str, samples: int) -> RunConfig:
    values: dict[str, Any] = {
        "models": _models(bundle),
        "judge_models": _judges(bundle),
        "preamble": preamble,
        "samples_per_scenario": samples,
        **_sample(bundle),
    }
    runtime = bundle.manifest.runtime_config if bundle.manifest else None
    if runtime is not None:
        values["temperature"] = runtime.temperature
        if runtime.max_tokens is not None:
            values["max_tokens"] = runtime.max_tokens
        if runtime.followup_turns is not None:
            values["followup_turns"] = runtime.followup_turns
        values.update((k, v) for k, v in runtime.extra if k in PRESENTATION_KEYS)
    if "followup_turns" not in values:
        pairs = [item.transcript.context_pairs for item in bundle.transcripts]
        values["followup_turns"] = max([p - 1 for p in pairs if p > 0], default=0)
    try:
        return RunConfig(**values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'config'}: {e['msg']}" for e in exc.errors()
        )
        raise ImportFormatError(
            f"{_where(bundle)}: run {bundle.cli_run_id} cannot be stored: {problems}",
            hint="fix the manifest's models/runtime_config; nothing was imported",
        ) from exc


def _scenario_order(bundle: RunBundle, from_files: dict[str, Scenario]) -> list[str]:
    if bundle.manifest is not None and bundle.manifest.scenario_list is not None:
        order = list(dict.fromkeys(bundle.manifest.scenario_list))
    else:
        in_transcripts = {t.transcript.scenario_id for t in bundle.transcripts}
        order = [sid for sid in from_files if sid in in_transcripts]
    extra = sorted({t.transcript.scenario_id for t in bundle.transcripts} - set(order))
    return order + extra


def _scenarios(
    bundle: RunBundle, scores: Mapping[str, Mapping[str, int]]
) -> tuple[tuple[RunScenario, ...], str, str | None]:
    """The run's scenarios, its preamble, and the scenarios file that supplied them."""
    from_files: dict[str, Scenario] = {}
    source_of: dict[str, tuple[str, str]] = {}  # id -> (file path, preamble)
    for path, scenario_file in bundle.scenario_files:
        for scenario in scenario_file.scenarios:
            if scenario.id not in from_files:
                from_files[scenario.id] = scenario
                source_of[scenario.id] = (path, scenario_file.preamble)
    by_id: dict[str, TranscriptFile] = {}
    for item in bundle.transcripts:
        by_id.setdefault(item.transcript.scenario_id, item)
    items: list[RunScenario] = []
    used: list[tuple[str, str]] = []
    for position, sid in enumerate(_scenario_order(bundle, from_files)):
        if sid in from_files:
            content: dict[str, Any] = from_files[sid].to_mapping()
            used.append(source_of[sid])
        elif sid in by_id:
            t = by_id[sid].transcript
            body = t.turns[0].probe if t.turns else ""
            content = {"base_id": sid, "category": "", "subject": t.subject, "body": body}
        else:
            content = {"base_id": sid, "category": "", "subject": "", "body": ""}
        # A reversed presentation has the scores of the scenario it presents.
        scored = scores.get(presentation_of(sid)[0], {})
        items.append(RunScenario(sid, position, content, dict(scored)))
    preamble = used[0][1] if used else ""
    return tuple(items), preamble, (used[0][0] if used else None)


def _number(record: Mapping[str, Any], key: str, where: str, *, whole: bool) -> Any:
    value = record.get(key)
    if value is None:
        return None
    number = isinstance(value, int) if whole else isinstance(value, int | float)
    if isinstance(value, bool) or not number or value < 0:
        raise ImportFormatError(
            f"{where}: `{key}` of {record.get('file')} must be a number >= 0, not {value!r}",
            hint="fix or remove it; nothing was imported",
        )
    return value


def _record(item: TranscriptFile, meta: Mapping[str, Any], where: str) -> TranscriptRecord:
    t = item.transcript
    first = t.turns[0] if t.turns else None
    # The same reading as the probe's: on the scale shown, mapped back when it was reversed.
    decision = presented_decision(
        first.target if first else "",
        first.probe if first else "",
        presentation_of(t.scenario_id)[1],
        limit=REASON_LENGTH,
    )
    turns = meta.get("turns")
    detail = [d for d in turns if isinstance(d, dict)] if isinstance(turns, list) else []
    finish = meta.get("finish_reason")
    rationale = meta.get("rationale")
    consensus = meta.get("consensus")
    try:
        judged = tuple(JudgmentRecord.from_mapping(j) for j in meta.get("judgments") or ())
    except (ValueError, AttributeError) as exc:
        raise ImportFormatError(
            f"{where}: judgments of {meta.get('file')}: {exc}",
            hint="fix or remove them; nothing was imported",
        ) from exc
    return TranscriptRecord(
        transcript=t,
        model=t.target_model,
        sample_index=item.sample_index,
        turns_detail=[{k: v for k, v in d.items() if k not in ("probe", "target")} for d in detail],
        input_tokens=_number(meta, "input_tokens", where, whole=True) or 0,
        output_tokens=_number(meta, "output_tokens", where, whole=True) or 0,
        latency_ms=float(_number(meta, "latency_ms", where, whole=False) or 0.0),
        cost_usd=_number(meta, "cost_usd", where, whole=False),
        finish_reason=str(finish)[:64] if finish is not None else None,
        decision_code=decision.code,
        decision_reason=decision.reason,
        synthetic=meta.get("synthetic") is True or t.target_model.startswith(SYNTHETIC_PROVIDERS),
        cached=meta.get("cached") is True,
        rationale=rationale if isinstance(rationale, str) else None,
        consensus=consensus if isinstance(consensus, dict) else None,
        judgments=judged,
        content=item.content,
    )


def _definition(bundle: RunBundle) -> Definition | None:
    if bundle.definition_text is None:
        return None
    where = bundle.definition_where or "definition.md"
    try:
        return parse_and_check(bundle.definition_text, where)
    except (FormatError, DefinitionError) as exc:
        raise ImportFormatError(exc.render(), hint="nothing was imported") from exc


def _dimension_scores(definition: Definition | None) -> dict[str, dict[str, int]]:
    if definition is None:
        return {}
    try:  # mode "all" names every scenario any expansion mode can produce
        return expand_with_scores(definition, "all").dimension_scores
    except DefinitionError:
        return {}


def _rubric(bundle: RunBundle) -> Rubric | None:
    if bundle.rubric_text is None:
        return None
    try:
        return parse_rubric(bundle.rubric_text, source=bundle.rubric_where)[0]
    except FormatError as exc:
        raise ImportFormatError(exc.render(), hint="nothing was imported") from exc


def _too_long(where: str, what: str, value: str, limit: int) -> ImportFormatError:
    return ImportFormatError(
        f"{where}: {what} is longer than {limit} characters: {value[:40]!r}…",
        hint="shorten it; nothing was imported",
    )


def _check_rows(bundle: RunBundle) -> None:
    """Values the tables cannot hold, and two files for one transcript, are refused."""
    if len(bundle.cli_run_id) > CLI_RUN_ID_LENGTH:
        raise _too_long(_where(bundle), "the run id", bundle.cli_run_id, CLI_RUN_ID_LENGTH)
    listed = bundle.manifest.scenario_list if bundle.manifest else None
    for sid in listed or ():
        if len(sid) > ID_LENGTH:
            raise _too_long(_where(bundle), "a scenario id", sid, ID_LENGTH)
    seen: dict[tuple[str, str, int], str] = {}
    for item in bundle.transcripts:
        t = item.transcript
        if len(t.scenario_id) > ID_LENGTH:
            raise _too_long(item.where, "the scenario id", t.scenario_id, ID_LENGTH)
        if len(t.target_model) > ID_LENGTH:
            raise _too_long(item.where, "the target model", t.target_model, ID_LENGTH)
        key = (item.transcript.scenario_id, item.transcript.target_model, item.sample_index)
        if key in seen:
            raise ImportFormatError(
                f"{item.where}: same scenario, model and sample ({key[0]}, {key[1]}, sample "
                f"{key[2]}) as {seen[key]}",
                hint="give repeated samples `sample_index: k` in the front matter; "
                "nothing was imported",
            )
        seen[key] = item.where


def plan_run(bundle: RunBundle) -> PlannedRun:
    """Check and prepare one run's rows; raises ImportFormatError naming the file at fault."""
    _check_rows(bundle)
    definition = _definition(bundle)
    scenarios, preamble, scenarios_path = _scenarios(bundle, _dimension_scores(definition))
    samples = max((t.sample_index for t in bundle.transcripts), default=0) + 1
    config = _config(bundle, preamble, samples)
    results_where = f"{bundle.root}/results.jsonl" if bundle.root else "results.jsonl"
    records = tuple(
        _record(item, bundle.results.get(item.name, {}), results_where)
        for item in bundle.transcripts
    )
    if definition is not None:
        name = definition.name
    elif scenarios_path is not None:
        name = PurePosixPath(scenarios_path).stem.removeprefix("exp-")
    else:
        name = bundle.cli_run_id
    return PlannedRun(
        bundle=bundle,
        name=name[:NAME_LENGTH],
        config=config,
        scenarios=scenarios,
        records=records,
        definition=definition,
        rubric=_rubric(bundle),
        synthetic=any(r.synthetic for r in records),
    )


__all__ = ["PlannedRun", "content_digest", "plan_run"]
