"""The `run_manifest.yaml` of an exported run, built from what the database holds (pure).

Keys as the CLI writes them (probe.create_run_manifest):

* `run_id`: the run's CLI run id; a run created here without one gets its creation time in
  the CLI's `YYYY-MM-DD.HH-MM` form (UTC). `created_at`: the same value (the CLI writes one
  timestamp to both; it also keeps an imported run's manifest stable).
* `probe_model`: the probe model of the run's transcripts (`static` when there are none).
* `prompt_templates`: 12-hex sha256 of the preamble text, stripped (as the CLI's preamble
  hash), and of the follow-up prompts (turns 2… of the first transcript, joined by a blank
  line; null without follow-ups). A single follow-up hashes exactly like the CLI's.
* `scenario_list`, `runtime_config` {temperature, max_tokens, followup_turns, threads: null —
  the worker pool is not part of a run here; `phrasings` and `scale_order` when not the
  defaults}, `models` {anon_model_001: {true_model, provider}}
  in the run's model order, `judge_model` (the first judge; all of them under an extra key
  `judge_models` when there are several).
* `sample_percentage`, `sample_seed` (extra keys, a sampled run only): the share of the
  definition's scenarios the run asked and the seed of its nested sample, so an import knows
  its scenarios are a sample of the definition's (analysis/sampling.py).
* `version_hashes`: `scenarios_hash` = 12-hex sha256 of the exported scenarios YAML file's
  bytes; `values_rubric_hash` = the same of the exported `config/values_rubric.yaml`
  (null when the run has no rubric). Both files are in the export, so the hashes can be
  checked with `sha256sum`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from valuerank.exchange.naming import cli_run_id
from valuerank.exchange.run_data import RunSnapshot
from valuerank.formats import (
    ManifestModel,
    PromptTemplates,
    RunManifest,
    RuntimeConfigSnapshot,
    Transcript,
    VersionHashes,
)
from valuerank.providers.model_id import InvalidModelId, parse_model_id
from valuerank.runs.config import RunConfig

DEFAULT_PROBE_MODEL = "static"
_DEFAULTS = RunConfig.model_fields


def short_hash(data: str | bytes) -> str:
    """The CLI's version hash: the first 12 hex digits of a sha256."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()[:12]


def export_run_id(run: RunSnapshot) -> str:
    return run.cli_run_id or cli_run_id(run.created_at)


def setting(run: RunSnapshot, key: str) -> Any:
    """A RunConfig value of the stored config, or RunConfig's default."""
    if key in run.config:
        return run.config[key]
    return _DEFAULTS[key].default


def _provider(model: str) -> str:
    try:
        return parse_model_id(model).provider
    except InvalidModelId:
        return model.partition(":")[0]


def _number(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


# How the run asked its scenarios, written only when not the default (a CLI run's manifest
# stays as the CLI writes it; the CLI keeps unknown runtime_config keys).
PRESENTATION_KEYS = ("phrasings", "scale_order")


def presentation_settings(run: RunSnapshot) -> tuple[tuple[str, Any], ...]:
    return tuple(
        (key, setting(run, key))
        for key in PRESENTATION_KEYS
        if setting(run, key) != _DEFAULTS[key].default
    )


def sample_keys(run: RunSnapshot) -> tuple[tuple[str, Any], ...]:
    """A sampled run's `sample_percentage` and `sample_seed` (our keys): with the definition
    in the export they say the scenarios are a sample of the definition's, not all of it."""
    percentage = setting(run, "sample_percentage")
    if percentage >= 100:
        return ()
    seed = setting(run, "sample_seed")
    return (("sample_percentage", _number(percentage)), ("sample_seed", seed))


def build_manifest(
    run: RunSnapshot,
    first: Transcript | None,
    models: Sequence[str],
    scenarios_yaml: str,
    rubric_yaml: str | None,
) -> RunManifest:
    """The manifest of `run`. `first`: its first transcript in export order that parses;
    `models`: the run's models, then those of its transcripts that the run does not list,
    in the order their first transcripts are exported."""
    run_id = export_run_id(run)
    followups = [turn.probe for turn in first.turns[1:]] if first else []
    judges = [str(j) for j in setting(run, "judge_models") or ()]
    extra: tuple[tuple[str, Any], ...] = (("judge_models", judges),) if len(judges) > 1 else ()
    extra += sample_keys(run)
    return RunManifest(
        run_id=run_id,
        created_at=run_id,
        probe_model=(first.probe_model if first else None) or DEFAULT_PROBE_MODEL,
        prompt_templates=PromptTemplates(
            preamble=short_hash(str(setting(run, "preamble") or "").strip()),
            followups=short_hash("\n\n".join(followups)) if followups else None,
        ),
        scenario_list=tuple(sid for sid, _ in run.scenarios),
        runtime_config=RuntimeConfigSnapshot(
            temperature=_number(setting(run, "temperature")),
            max_tokens=setting(run, "max_tokens"),
            followup_turns=setting(run, "followup_turns"),
            threads=None,
            extra=presentation_settings(run),
        ),
        version_hashes=VersionHashes(
            values_rubric_hash=short_hash(rubric_yaml) if rubric_yaml is not None else None,
            scenarios_hash=short_hash(scenarios_yaml),
        ),
        models=tuple(
            ManifestModel(f"anon_model_{i:03d}", true_model=model, provider=_provider(model))
            for i, model in enumerate(models, start=1)
        ),
        judge_model=judges[0] if judges else None,
        extra=extra,
    )


__all__ = [
    "PRESENTATION_KEYS",
    "build_manifest",
    "export_run_id",
    "sample_keys",
    "setting",
    "short_hash",
]
