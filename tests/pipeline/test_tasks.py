"""The pipeline's task registry: every registered kind round-trips its typed payload through
the JSON a job stores, the seed's kind names resolve to ours, a payload that does not fit
fails for good, and a narrative queued under `summarize` before `summarize:analysis` existed
still reads as a narrative."""

from __future__ import annotations

import json
from typing import Any

import pytest

from valuerank.pipeline.analyze import (
    NARRATE,
    SUMMARIZE_READS,
    AnalyzePayload,
    ComparePayload,
    NarrativePayload,
)
from valuerank.pipeline.handlers import PIPELINE_TASKS
from valuerank.queue import Permanent
from valuerank.queue.tasks import JobKind, TaskRegistry
from valuerank.runs.kinds import (
    FinalizePayload,
    JudgePayload,
    ProbePayload,
    SummaryPayload,
    job_kind,
)
from valuerank.validation.requests import ValidateItem

MODEL = "scripted:centrist"
RUN = "0190f0c2-7a1b-7000-8000-000000000001"

# Payloads of every kind as the pipeline writes them (a new kind without one fails below).
EXAMPLES: dict[str, list[Any]] = {
    "probe": [
        ProbePayload(run_id=RUN, scenario_id="s-1", model=MODEL, sample=2, estimated_tokens=900)
    ],
    "judge": [JudgePayload(run_id=RUN, transcript_id="t-1", judge_model=MODEL)],
    "summarize": [
        SummaryPayload(run_id=RUN, transcript_id="t-1", summary_model=MODEL),
        NarrativePayload(run_id=RUN, analysis="deep", input_hash="h1", summary_model=MODEL),
    ],
    "summarize:analysis": [
        NarrativePayload(run_id=RUN, analysis="deep", input_hash="h1", summary_model=MODEL)
    ],
    "finalize": [FinalizePayload(run_id=RUN, generation=3)],
    "analyze:basic": [AnalyzePayload(run_id=RUN), AnalyzePayload(run_id=RUN, force=True)],
    "analyze:deep": [AnalyzePayload(run_id=RUN, narrative_model=MODEL)],
    "analyze:compare": [ComparePayload(comparison_id="c-1")],
    "validate": [ValidateItem(task_id=7, ra_tag_id="tag-1", model=MODEL)],
}


def test_every_registered_kind_has_an_example() -> None:
    assert sorted(k.name for k in PIPELINE_TASKS.kinds) == sorted(EXAMPLES)


@pytest.mark.parametrize("kind", PIPELINE_TASKS.kinds, ids=lambda k: k.name)
def test_every_registered_kind_round_trips_its_payload(kind: JobKind[Any]) -> None:
    for example in EXAMPLES[kind.name]:
        stored = json.loads(json.dumps(kind.to_payload(example)))  # as the jobs table keeps it
        read = kind.from_payload(stored)
        assert read == example and type(read) is type(example)
        assert kind.to_payload(read) == stored


def test_the_seeds_names_resolve_to_ours_wherever_a_kind_is_named() -> None:
    seed = {
        "probe:scenario": "probe",
        "summarize:run": "summarize",
        "analyze:basic": "analyze:basic",
        "analyze:deep": "analyze:deep",
        "analyze:compare": "analyze:compare",
    }
    for given, ours in seed.items():
        assert PIPELINE_TASKS.resolve(given) == ours
        assert PIPELINE_TASKS.resolve(f"  {given} ") == ours
        assert given in PIPELINE_TASKS
        assert PIPELINE_TASKS.get(given).kind.name == ours
    for given in ("probe:scenario", "summarize:run", "judge", "finalize"):
        assert job_kind(given) == PIPELINE_TASKS.resolve(given)  # the runs' filters agree
    assert PIPELINE_TASKS.resolve("noop") == "noop"  # not ours: as given (a built-in kind)


def test_a_payload_that_does_not_fit_fails_for_good() -> None:
    probe = PIPELINE_TASKS.get("probe").kind
    with pytest.raises(Permanent, match="malformed probe payload: scenario_id"):
        probe.from_payload({"run_id": RUN, "model": MODEL})
    with pytest.raises(Permanent, match="malformed validate payload"):
        PIPELINE_TASKS.get("validate").kind.from_payload({"task_id": "seven"})
    with pytest.raises(Permanent):
        ProbePayload.from_payload(["not", "an", "object"])


def test_a_narrative_queued_under_summarize_still_reads_as_one() -> None:
    # As enqueue_narrative wrote it before `summarize:analysis` existed.
    old = {"run_id": RUN, "analysis": "deep", "input_hash": "h1", "summary_model": MODEL}
    assert isinstance(SUMMARIZE_READS.from_payload(old), NarrativePayload)
    summary = {"run_id": RUN, "transcript_id": "t-1", "summary_model": MODEL}
    assert isinstance(SUMMARIZE_READS.from_payload(summary), SummaryPayload)
    assert PIPELINE_TASKS.get(NARRATE).kind.name == "summarize:analysis"


def test_a_registry_refuses_a_name_taken_twice() -> None:
    registry: TaskRegistry[None] = TaskRegistry()

    async def handler(ctx: None, job: Any) -> None:
        return None

    registry.add(JobKind("one", ComparePayload, aliases=("uno",)), handler)
    with pytest.raises(ValueError, match="'uno' is taken by 'one'"):
        registry.add(JobKind("two", ComparePayload, aliases=("uno",)), handler)
    assert [k.name for k in registry.kinds] == ["one"]
