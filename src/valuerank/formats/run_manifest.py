"""The CLI's `run_manifest.yaml`: parse and serialize.

The CLI (probe.create_run_manifest) writes, with `yaml.safe_dump(sort_keys=False,
allow_unicode=True)`, the keys run_id, created_at, probe_model, prompt_templates
{preamble, followups}, scenario_list, runtime_config {temperature, max_tokens,
followup_turns, threads}, version_hashes {values_rubric_hash, scenarios_hash},
models {anon_model_001: {true_model, provider}, ...} and judge_model. Hashes are the first
12 hex digits of a sha256.

Missing keys are tolerated (a top-level key that was missing stays missing when written
back) and unknown keys are kept in file order, at every level.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import FormatError, FormatWarning
from .yaml_io import Loaded, dump_cli, load

Extra = tuple[tuple[str, Any], ...]
Number = int | float


@dataclass(frozen=True)
class PromptTemplates:
    preamble: str | None = None
    followups: str | None = None
    extra: Extra = ()


@dataclass(frozen=True)
class RuntimeConfigSnapshot:
    temperature: Number | None = None
    max_tokens: int | None = None
    followup_turns: int | None = None
    threads: int | None = None
    extra: Extra = ()


@dataclass(frozen=True)
class VersionHashes:
    values_rubric_hash: str | None = None
    scenarios_hash: str | None = None
    extra: Extra = ()


@dataclass(frozen=True)
class ManifestModel:
    """One target model of the run, under its anonymous id (`anon_model_001`)."""

    anon_id: str
    true_model: str | None = None
    provider: str | None = None
    extra: Extra = ()


@dataclass(frozen=True)
class RunManifest:
    """A run manifest. None means the key is absent from the file."""

    run_id: str
    created_at: str | None = None
    probe_model: str | None = None
    prompt_templates: PromptTemplates | None = None
    scenario_list: tuple[str, ...] | None = None
    runtime_config: RuntimeConfigSnapshot | None = None
    version_hashes: VersionHashes | None = None
    models: tuple[ManifestModel, ...] | None = None
    judge_model: str | None = None
    extra: Extra = ()
    key_order: tuple[str, ...] = field(default=(), compare=False)

    def model_for(self, anon_id: str) -> ManifestModel | None:
        for model in self.models or ():
            if model.anon_id == anon_id:
                return model
        return None


TOP_LEVEL_KEYS = (
    "run_id",
    "created_at",
    "probe_model",
    "prompt_templates",
    "scenario_list",
    "runtime_config",
    "version_hashes",
    "models",
    "judge_model",
)


class _Reader:
    def __init__(self, loaded: Loaded, source: str | None) -> None:
        self.loaded = loaded
        self.source = source

    def fail(self, path: tuple[Any, ...], message: str, hint: str) -> FormatError:
        return FormatError(message, source=self.source, line=self.loaded.line(*path), hint=hint)

    def mapping(self, value: Any, path: tuple[Any, ...]) -> dict[str, Any] | None:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(
                path,
                f"`{'.'.join(map(str, path))}` must be a mapping",
                "indent its `key: value` lines under it",
            )
        return {str(k): v for k, v in value.items()}

    def text(self, value: Any) -> str | None:
        return None if value is None else str(value)

    def integer(self, value: Any, path: tuple[Any, ...]) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(
                path,
                f"`{'.'.join(map(str, path))}` must be a whole number, not {value!r}",
                "write a whole number such as 1000",
            )
        return value

    def number(self, value: Any, path: tuple[Any, ...]) -> Number | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(
                path,
                f"`{'.'.join(map(str, path))}` must be a number, not {value!r}",
                "write a number such as 0 or 0.7",
            )
        return value


def _extra(data: dict[str, Any], known: tuple[str, ...]) -> Extra:
    return tuple((k, v) for k, v in data.items() if k not in known)


def parse_run_manifest(
    text: str, source: str | None = None, *, warnings: list[FormatWarning] | None = None
) -> RunManifest:
    """Parse a run manifest; only `run_id` is required."""
    loaded = load(text.lstrip("\ufeff"), source)
    r = _Reader(loaded, source)
    data = loaded.data
    if not isinstance(data, dict):
        raise FormatError(
            "a run manifest must be a YAML mapping",
            source=source,
            line=1,
            hint="see the CLI's run_manifest.yaml for the layout",
        )
    data = {str(k): v for k, v in data.items()}
    if data.get("run_id") is None:
        raise FormatError(
            "the manifest has no `run_id`",
            source=source,
            line=1,
            hint="add `run_id: <timestamp>` as the first line",
        )
    templates = r.mapping(data.get("prompt_templates"), ("prompt_templates",))
    runtime = r.mapping(data.get("runtime_config"), ("runtime_config",))
    hashes = r.mapping(data.get("version_hashes"), ("version_hashes",))
    models_map = r.mapping(data.get("models"), ("models",))
    scenario_list = data.get("scenario_list")
    if scenario_list is not None and not isinstance(scenario_list, list):
        raise r.fail(
            ("scenario_list",),
            "`scenario_list` must be a list of scenario ids",
            "write one `- scenario_id` line per scenario",
        )
    models: list[ManifestModel] | None = None
    if models_map is not None:
        models = []
        for anon_id, entry in models_map.items():
            fields = r.mapping(entry, ("models", anon_id)) or {}
            models.append(
                ManifestModel(
                    anon_id=anon_id,
                    true_model=r.text(fields.get("true_model")),
                    provider=r.text(fields.get("provider")),
                    extra=_extra(fields, ("true_model", "provider")),
                )
            )
        if warnings is not None and "models" in data and not models:
            warnings.append(FormatWarning("the manifest lists no models", loaded.line("models")))
    return RunManifest(
        run_id=str(data["run_id"]),
        created_at=r.text(data.get("created_at")),
        probe_model=r.text(data.get("probe_model")),
        prompt_templates=None
        if templates is None
        else PromptTemplates(
            preamble=r.text(templates.get("preamble")),
            followups=r.text(templates.get("followups")),
            extra=_extra(templates, ("preamble", "followups")),
        ),
        scenario_list=None if scenario_list is None else tuple(str(s) for s in scenario_list),
        runtime_config=None
        if runtime is None
        else RuntimeConfigSnapshot(
            temperature=r.number(runtime.get("temperature"), ("runtime_config", "temperature")),
            max_tokens=r.integer(runtime.get("max_tokens"), ("runtime_config", "max_tokens")),
            followup_turns=r.integer(
                runtime.get("followup_turns"), ("runtime_config", "followup_turns")
            ),
            threads=r.integer(runtime.get("threads"), ("runtime_config", "threads")),
            extra=_extra(runtime, ("temperature", "max_tokens", "followup_turns", "threads")),
        ),
        version_hashes=None
        if hashes is None
        else VersionHashes(
            values_rubric_hash=r.text(hashes.get("values_rubric_hash")),
            scenarios_hash=r.text(hashes.get("scenarios_hash")),
            extra=_extra(hashes, ("values_rubric_hash", "scenarios_hash")),
        ),
        models=None if models is None else tuple(models),
        judge_model=r.text(data.get("judge_model")),
        extra=_extra(data, TOP_LEVEL_KEYS),
        key_order=tuple(data),
    )


def _with_extra(base: dict[str, Any], extra: Extra) -> dict[str, Any]:
    for key, value in extra:
        base.setdefault(key, value)
    return base


def serialize_run_manifest(manifest: RunManifest) -> str:
    """The manifest as the CLI writes it, keys in the file's order (else the CLI's)."""
    m = manifest
    values: dict[str, Any] = {"run_id": m.run_id}
    if m.created_at is not None:
        values["created_at"] = m.created_at
    if m.probe_model is not None:
        values["probe_model"] = m.probe_model
    if m.prompt_templates is not None:
        pt = m.prompt_templates
        values["prompt_templates"] = _with_extra(
            {"preamble": pt.preamble, "followups": pt.followups}, pt.extra
        )
    if m.scenario_list is not None:
        values["scenario_list"] = list(m.scenario_list)
    if m.runtime_config is not None:
        rc = m.runtime_config
        values["runtime_config"] = _with_extra(
            {
                "temperature": rc.temperature,
                "max_tokens": rc.max_tokens,
                "followup_turns": rc.followup_turns,
                "threads": rc.threads,
            },
            rc.extra,
        )
    if m.version_hashes is not None:
        vh = m.version_hashes
        values["version_hashes"] = _with_extra(
            {"values_rubric_hash": vh.values_rubric_hash, "scenarios_hash": vh.scenarios_hash},
            vh.extra,
        )
    if m.models is not None:
        values["models"] = {
            model.anon_id: _with_extra(
                {"true_model": model.true_model, "provider": model.provider}, model.extra
            )
            for model in m.models
        }
    if m.judge_model is not None:
        values["judge_model"] = m.judge_model
    for key, value in m.extra:
        values.setdefault(key, value)
    order = [k for k in m.key_order if k in values]
    order += [k for k in values if k not in order]
    return dump_cli({k: values[k] for k in order})


__all__ = [
    "ManifestModel",
    "PromptTemplates",
    "RunManifest",
    "RuntimeConfigSnapshot",
    "VersionHashes",
    "parse_run_manifest",
    "serialize_run_manifest",
]
