"""The CLI's scenarios YAML (`exp-NNN.*.yaml`, `config/scenarios.yaml`): parse and serialize.

Two layouts exist:

* modern: `preamble` and a `scenarios:` map of id -> {base_id, category, subject, body, ...};
* legacy: top-level `version`, `preamble`, `followups` (label -> prompt), `golden_runs` and
  the scenarios as top-level `scenario_*` keys (each may have `status` and `runs`).

Like the CLI, a file is modern when it has a `scenarios` mapping. Every per-scenario and
top-level key we do not know is kept, in file order, and the header comment is re-emitted,
so a round trip loses nothing but other comments and the choice of YAML scalar styles.
Text is kept verbatim (the CLI strips subject/body when it *uses* them, not when it reads).
"""

from __future__ import annotations

from typing import Any

from .errors import FormatError, FormatWarning
from .scenarios_model import CORE_SCENARIO_KEYS, Scenario, ScenarioFile
from .yaml_io import Loaded, dump_readable, header_comment, load, render_header_comment

KNOWN_TOP_LEVEL = ("version", "preamble", "followups", "golden_runs")
LEGACY_PREFIX = "scenario_"
# The status the CLI assumes for a scenario that has none (config_loader.ScenarioConfig).
DEFAULT_STATUS = "in_progress"


def scenario_status(scenario: Scenario) -> str:
    """The scenario's status as the CLI reads it: stripped, `in_progress` when missing."""
    status = (scenario.status or "").strip()
    return status or DEFAULT_STATUS


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _pairs(
    value: Any, loaded: Loaded, key: str, source: str | None, hint: str
) -> list[tuple[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, dict):
        raise FormatError(
            f"`{key}` must be a mapping", source=source, line=loaded.line(key), hint=hint
        )
    return [(str(k), v) for k, v in value.items()]


def _scenario(
    scenario_id: str,
    value: Any,
    path: tuple[str, ...],
    loaded: Loaded,
    source: str | None,
    warnings: list[FormatWarning] | None,
) -> Scenario:
    line = loaded.line(*path)
    if not isinstance(value, dict):
        raise FormatError(
            f"scenario `{scenario_id}` must be a mapping of keys (base_id, category, subject, "
            "body, ...)",
            source=source,
            line=line,
            hint="indent the scenario's keys under its id",
        )
    keys = [str(k) for k in value]
    data = {str(k): v for k, v in value.items()}
    if warnings is not None and not _text(data.get("body")).strip():
        warnings.append(FormatWarning(f"scenario `{scenario_id}` has no body", line))
    return Scenario(
        id=scenario_id,
        base_id=_text(data.get("base_id")),
        category=_text(data.get("category")),
        subject=_text(data.get("subject")),
        body=_text(data.get("body")),
        extra=tuple((k, v) for k, v in data.items() if k not in CORE_SCENARIO_KEYS),
        key_order=tuple(keys),
    )


def parse_scenarios(
    text: str, source: str | None = None, *, warnings: list[FormatWarning] | None = None
) -> ScenarioFile:
    """Parse a scenarios YAML file (either layout)."""
    text = text.lstrip("\ufeff")
    loaded = load(text, source)
    data = loaded.data
    if not isinstance(data, dict):
        raise FormatError(
            "a scenarios file must be a YAML mapping (`preamble:` and `scenarios:`)",
            source=source,
            line=1,
            hint="see the CLI's exp-NNN.*.yaml files for the layout",
        )
    order = tuple(str(k) for k in data)
    block = data.get("scenarios")
    modern = "scenarios" in data
    if modern and block is not None and not isinstance(block, dict):
        raise FormatError(
            "`scenarios` must be a mapping of scenario id -> scenario",
            source=source,
            line=loaded.line("scenarios"),
            hint="write each scenario as `scenario_id:` with its keys indented below it",
        )
    scenarios: list[Scenario] = []
    extra: list[tuple[str, Any]] = []
    if modern:
        for key, value in (block or {}).items():
            scenarios.append(
                _scenario(str(key), value, ("scenarios", key), loaded, source, warnings)
            )
    for key, value in data.items():
        name = str(key)
        if (modern and name == "scenarios") or name in KNOWN_TOP_LEVEL:
            continue
        if not modern and name.startswith(LEGACY_PREFIX):
            if isinstance(value, dict):
                scenarios.append(_scenario(name, value, (key,), loaded, source, warnings))
                continue
            if warnings is not None:
                warnings.append(
                    FormatWarning(
                        f"top-level `{name}` is not a mapping, so it is not read as a scenario",
                        loaded.line(key),
                    )
                )
        extra.append((name, value))
    if not modern and not scenarios:
        raise FormatError(
            "no scenarios found",
            source=source,
            line=1,
            hint="put the scenarios under a `scenarios:` mapping (or, in the legacy layout, "
            "as top-level `scenario_*` keys)",
        )
    followups = _pairs(
        data.get("followups"), loaded, "followups", source, "write `label: prompt` lines"
    )
    golden = _pairs(
        data.get("golden_runs"), loaded, "golden_runs", source, "write `key: value` lines"
    )
    return ScenarioFile(
        preamble=_text(data.get("preamble")),
        scenarios=tuple(scenarios),
        layout="modern" if modern else "legacy",
        version=data.get("version"),
        followups=tuple((k, _text(v)) for k, v in followups),
        golden_runs=tuple(golden),
        extra_top_level=tuple(extra),
        header_comment=header_comment(text),
        top_level_order=order,
    )


def _scenario_mapping(scenario: Scenario) -> dict[str, Any]:
    """The scenario's keys in file order; empty core keys the file did not have stay out."""
    core = {k: getattr(scenario, k) for k in CORE_SCENARIO_KEYS}
    values = {
        k: v
        for k, v in core.items()
        if v != "" or k in scenario.key_order or not scenario.key_order
    }
    values.update(scenario.extra)
    order = [k for k in scenario.key_order if k in values]
    order += [k for k in values if k not in order]
    return {k: values[k] for k in order}


def serialize_scenarios(scenario_file: ScenarioFile) -> str:
    """The file as YAML: generated files come out byte-identical to the CLI's."""
    f = scenario_file
    order = f.top_level_order
    sections: dict[str, Any] = {}
    if f.version is not None:
        sections["version"] = f.version
    if f.preamble or "preamble" in order or not order:
        sections["preamble"] = f.preamble
    if f.followups or "followups" in order:
        sections["followups"] = dict(f.followups)
    if f.golden_runs or "golden_runs" in order:
        sections["golden_runs"] = dict(f.golden_runs)
    scenario_maps = {sc.id: _scenario_mapping(sc) for sc in f.scenarios}
    if f.layout == "modern":
        sections["scenarios"] = scenario_maps
        sections.update(f.extra_top_level)
    else:
        sections.update(f.extra_top_level)
        sections.update(scenario_maps)
    keys = [k for k in order if k in sections]
    keys += [k for k in sections if k not in keys]
    body = dump_readable({k: sections[k] for k in keys})
    return render_header_comment(f.header_comment) + body


__all__ = ["DEFAULT_STATUS", "parse_scenarios", "scenario_status", "serialize_scenarios"]
