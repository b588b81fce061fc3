"""A run's cost estimate counts every call the run will make (SQLite and PostgreSQL): the
probe conversations, each judge reading each transcript against the run's rubric, the summary
model writing each rationale — with registry prices, and a price it lacks said, not zeroed."""

from __future__ import annotations

from pathlib import Path

import pytest

import valuerank
from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.pipeline.judging import JUDGE_MAX_TOKENS, SUMMARY_MAX_TOKENS, run_rubric
from valuerank.pipeline.launch import launch_run
from valuerank.pipeline.prompts import judge_messages, summary_messages
from valuerank.providers.costs import estimate_message_tokens
from valuerank.rubrics import import_rubric
from valuerank.runs.config import RunConfig

DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
RUBRIC = Path(__file__).parents[2] / "examples" / "values_rubric.yaml"


async def test_judges_and_summaries_are_in_the_estimate(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        await import_rubric(conn, org_id, RUBRIC.read_text(), name="values")
        stored, _ = await import_definition(conn, org_id, DEMO.read_text())
        config = RunConfig(
            models=("scripted:utilitarian", "openai:gpt-4.1"),
            judge_models=("scripted:centrist", "openai:gpt-4.1-mini"),
            summary_model="scripted:agreeable",
            sample_percentage=30,
            sample_seed=3,
            samples_per_scenario=2,
            followup_turns=1,
            max_tokens=400,
        )
        launched = await launch_run(
            conn, org_id, stored.version.id, config, start=False,
            environ={"OPENAI_API_KEY": "sk-test-not-used"},
        )  # fmt: skip
        rubric = await run_rubric(conn, launched.created.run)
    assert rubric is not None and rubric.values
    estimate = launched.estimate
    conversations = launched.created.scenarios * 2
    by_role = {(m.role, m.model): m for m in estimate.models}
    assert list(by_role) == [
        ("probe", "scripted:utilitarian"),
        ("probe", "openai:gpt-4.1"),
        ("judge", "scripted:centrist"),
        ("judge", "openai:gpt-4.1-mini"),
        ("summary", "scripted:agreeable"),
    ]
    probe = by_role[("probe", "openai:gpt-4.1")]
    assert probe.calls == conversations * 2 and probe.output_tokens == conversations * 2 * 400
    judge = by_role[("judge", "openai:gpt-4.1-mini")]
    assert judge.calls == conversations
    assert judge.output_tokens == conversations * JUDGE_MAX_TOKENS
    # A judge reads its instructions with the run's rubric and the whole transcript, every
    # answer at max_tokens: more than the rubric-less instructions and both answers.
    per_call = judge.input_tokens // conversations
    assert per_call > estimate_message_tokens(judge_messages("", rubric)) + 2 * 400
    summary = by_role[("summary", "scripted:agreeable")]
    assert summary.output_tokens == conversations * SUMMARY_MAX_TOKENS
    assert summary.input_tokens // conversations > estimate_message_tokens(
        summary_messages("", None)
    )
    assert judge.cost_usd is not None and judge.cost_usd > 0  # priced in the registry
    assert summary.cost_usd == 0.0  # scripted models are free, not unknown
    assert estimate.cost_usd == pytest.approx(sum(m.cost_usd or 0 for m in estimate.models))
    assert estimate.calls == conversations * (2 * 2 + 2 + 1)
