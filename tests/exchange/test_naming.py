"""File and run names of exported runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from valuerank.exchange.naming import (
    cli_run_id,
    exp_file_name,
    safe_part,
    sample_from_name,
    transcript_export_name,
)
from valuerank.formats import parse_transcript_file_name


def test_cli_run_ids_are_utc_minutes() -> None:
    assert cli_run_id(datetime(2025, 11, 16, 10, 29, 59, tzinfo=UTC)) == "2025-11-16.10-29"
    paris = timezone(timedelta(hours=1))
    assert cli_run_id(datetime(2025, 11, 16, 11, 29, tzinfo=paris)) == "2025-11-16.10-29"


def test_sample_zero_keeps_the_cli_name() -> None:
    name = transcript_export_name("scenario_001", "openai:gpt-4.1", "static", 0, "2025-11-16.10-29")
    assert name == "transcript.scenario_001.openai:gpt-4.1.static.2025-11-16.10-29.md"
    assert sample_from_name(name) is None


def test_later_samples_name_their_index() -> None:
    model = "anthropic:claude-3.5-haiku"
    name = transcript_export_name("s", model, "static", 3, "2025-01-02.03-04")
    assert name == "transcript.s.anthropic:claude-3.5-haiku.static.sample3.2025-01-02.03-04.md"
    assert sample_from_name(name) == 3
    parsed = parse_transcript_file_name(name)
    assert parsed is not None and parsed.run_id == "2025-01-02.03-04"


def test_a_model_id_with_a_slash_stays_one_file_name() -> None:
    name = transcript_export_name("s", "openrouter:meta/llama-3", None, 0, "r")
    assert "/" not in name and name == "transcript.s.openrouter:meta_llama-3.r.md"


@given(st.text(), st.integers(min_value=1, max_value=10_000))
def test_sample_indices_survive_any_ids(model: str, sample: int) -> None:
    name = transcript_export_name("s1", "p:" + model, "static", sample, "2025-01-02.03-04")
    assert sample_from_name(name) == sample


@given(st.text())
def test_safe_parts_are_plain_names(text: str) -> None:
    part = safe_part(text)
    assert part and part not in (".", "..") and "/" not in part and "\\" not in part
    assert not part.startswith(".")


def test_exp_file_names_have_one_prefix() -> None:
    assert exp_file_name("exp-Demo_Lifeboat_Rules", ".md") == "exp-Demo_Lifeboat_Rules.md"
    assert exp_file_name("whistle run", ".yaml") == "exp-whistle_run.yaml"


def test_a_run_id_with_a_dot_keeps_the_sample_part() -> None:
    # Issue 31: a run id that is no timestamp but holds a dot ("pilot.v2") was split at its
    # last dot, so `sample1` was taken for part of the models and every sample for sample 0.
    name = transcript_export_name("s", "openai:gpt-4.1", "static", 1, "pilot.v2")
    assert name == "transcript.s.openai:gpt-4.1.static.sample1.pilot.v2.md"
    parsed = parse_transcript_file_name(name, run_id="pilot.v2")
    assert parsed is not None and parsed.run_id == "pilot.v2"
    assert parsed.models == "openai:gpt-4.1.static.sample1"
    assert sample_from_name(name, run_id="pilot.v2") == 1
    assert sample_from_name(name.replace(".sample1", ""), run_id="pilot.v2") is None
