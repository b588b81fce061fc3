"""run_manifest.yaml: the CLI's layout, missing and unknown keys, bad input."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import yaml
from hypothesis import given, settings

from valuerank.formats import (
    FormatError,
    ManifestModel,
    RunManifest,
    parse_run_manifest,
    serialize_run_manifest,
)

from .helpers import RUN_DIR, read
from .strategies import run_manifests


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _cli_manifest() -> dict[str, Any]:
    """What the CLI's probe.create_run_manifest builds (its key order)."""
    return {
        "run_id": "2025-11-16.10-29",
        "created_at": "2025-11-16.10-29",
        "probe_model": "static",
        "prompt_templates": {"preamble": _digest("p"), "followups": _digest("a||b")},
        "scenario_list": ["scenario_001", "scenario_002"],
        "runtime_config": {"temperature": 0, "max_tokens": 1000, "followup_turns": 1, "threads": 6},
        "version_hashes": {"values_rubric_hash": _digest("r"), "scenarios_hash": _digest("s")},
        "models": {
            "anon_model_001": {"true_model": "openai:gpt-4.1", "provider": "openai"},
            "anon_model_002": {"true_model": "xai:grok-3", "provider": "xai"},
        },
        "judge_model": "mock-judge",
    }


def test_fixture_round_trips_byte_for_byte() -> None:
    text = read(RUN_DIR / "run_manifest.yaml")
    m = parse_run_manifest(text, "run_manifest.yaml")
    assert m.run_id == m.created_at == "2025-03-02.14-05"
    assert m.scenario_list == ("scenario_012_pref_neutral", "scenario_012_pref_lean_tell")
    assert m.runtime_config is not None and m.runtime_config.threads == 4
    assert m.prompt_templates is not None and len(m.prompt_templates.preamble or "") == 12
    gpt = m.model_for("anon_model_001")
    assert gpt == ManifestModel("anon_model_001", "openai:gpt-4.1", "openai")
    assert m.judge_model == "openai:gpt-4.1-mini"
    assert m.extra == (("operator_note", "fixture run: not a real model call"),)
    assert serialize_run_manifest(m) == text


def test_a_cli_manifest_is_written_exactly_as_the_cli_did() -> None:
    cli_text = yaml.safe_dump(_cli_manifest(), sort_keys=False, allow_unicode=True)
    m = parse_run_manifest(cli_text)
    assert serialize_run_manifest(m) == cli_text
    built = RunManifest(
        run_id="2025-11-16.10-29",
        created_at="2025-11-16.10-29",
        probe_model="static",
        prompt_templates=m.prompt_templates,
        scenario_list=("scenario_001", "scenario_002"),
        runtime_config=m.runtime_config,
        version_hashes=m.version_hashes,
        models=(
            ManifestModel("anon_model_001", "openai:gpt-4.1", "openai"),
            ManifestModel("anon_model_002", "xai:grok-3", "xai"),
        ),
        judge_model="mock-judge",
    )
    assert built == m
    assert serialize_run_manifest(built) == cli_text  # key order from the model: the CLI's


def test_missing_keys_stay_missing() -> None:
    m = parse_run_manifest("run_id: r1\nmodels:\n  anon_model_001:\n    true_model: x\n")
    assert m.created_at is None and m.runtime_config is None and m.scenario_list is None
    assert m.models == (ManifestModel("anon_model_001", "x", None),)
    assert yaml.safe_load(serialize_run_manifest(m)) == {
        "run_id": "r1",
        "models": {"anon_model_001": {"true_model": "x", "provider": None}},
    }


def test_unknown_keys_are_kept_in_place_at_every_level() -> None:
    data = _cli_manifest()
    text_data: dict[str, Any] = {}
    for key, value in data.items():
        text_data[key] = value
        if key == "probe_model":
            text_data["summary_model"] = "gpt-5"
    text_data["runtime_config"] = {**data["runtime_config"], "seed": 7}
    text_data["models"]["anon_model_001"]["cost"] = 0.25
    text = yaml.safe_dump(text_data, sort_keys=False, allow_unicode=True)
    m = parse_run_manifest(text)
    assert m.extra == (("summary_model", "gpt-5"),)
    assert m.runtime_config is not None and m.runtime_config.extra == (("seed", 7),)
    assert serialize_run_manifest(m) == text


@settings(deadline=None)
@given(run_manifests())
def test_parse_of_serialize_is_identity(manifest: RunManifest) -> None:
    text = serialize_run_manifest(manifest)
    parsed = parse_run_manifest(text)
    assert parsed == manifest
    assert serialize_run_manifest(parsed) == text


# -- bad input ---------------------------------------------------------------------------


def test_no_run_id() -> None:
    with pytest.raises(FormatError) as info:
        parse_run_manifest("created_at: x\n", "run_manifest.yaml")
    assert info.value.message == "the manifest has no `run_id`"
    assert "run_id:" in (info.value.hint or "")


def test_non_numeric_max_tokens_names_its_line() -> None:
    text = "run_id: r\nruntime_config:\n  temperature: 0\n  max_tokens: lots\n"
    with pytest.raises(FormatError) as info:
        parse_run_manifest(text, "run_manifest.yaml")
    assert "`runtime_config.max_tokens` must be a whole number" in info.value.message
    assert info.value.line == 4


def test_models_must_be_a_mapping() -> None:
    with pytest.raises(FormatError) as info:
        parse_run_manifest("run_id: r\nmodels:\n  - openai:gpt-4.1\n")
    assert "`models` must be a mapping" in info.value.message
    assert info.value.line == 2


def test_not_a_mapping() -> None:
    with pytest.raises(FormatError, match="must be a YAML mapping"):
        parse_run_manifest("just text\n")
