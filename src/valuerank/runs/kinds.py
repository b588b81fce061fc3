"""The job kinds of a run's partition, with their typed payloads.

One `probe` job per (scenario, model, sample), then `judge`/`summarize` jobs per transcript,
and one `finalize` job per generation that moves the run on when a phase is done (see
pipeline/finalize.py). Their handlers are paired with them in `valuerank.pipeline.tasks`.
"""

from __future__ import annotations

from valuerank.queue.tasks import JobKind, TaskPayload, kind_names


class ProbePayload(TaskPayload):
    """One conversation: a scenario of the run asked of a model (sample k)."""

    run_id: str
    scenario_id: str
    model: str
    sample: int = 0
    # What a rate bucket reserves before the call (see runs/planning.py).
    estimated_tokens: int | None = None


class JudgePayload(TaskPayload):
    """A judge model reads one transcript against the run's rubric."""

    run_id: str
    transcript_id: str
    judge_model: str


class SummaryPayload(TaskPayload):
    """The rationale of one transcript, written by the run's summary model."""

    run_id: str
    transcript_id: str
    summary_model: str


class FinalizePayload(TaskPayload):
    """Move the run's generation on (a job of another generation does nothing)."""

    run_id: str
    generation: int = 0


PROBE_KIND: JobKind[ProbePayload] = JobKind("probe", ProbePayload, aliases=("probe:scenario",))
JUDGE_KIND: JobKind[JudgePayload] = JobKind("judge", JudgePayload)
SUMMARIZE_KIND: JobKind[SummaryPayload] = JobKind(
    "summarize", SummaryPayload, aliases=("summarize:run",)
)
FINALIZE_KIND: JobKind[FinalizePayload] = JobKind("finalize", FinalizePayload)
RUN_KINDS = (PROBE_KIND, JUDGE_KIND, SUMMARIZE_KIND, FINALIZE_KIND)

PROBE = PROBE_KIND.name
JUDGE = JUDGE_KIND.name
SUMMARIZE = SUMMARIZE_KIND.name
FINALIZE = FINALIZE_KIND.name

# The seed's names of two of these kinds (seeds/api-queue-system.md), accepted wherever a kind
# is named (filters, CLI options) and read as ours; jobs are stored under our names.
SEED_KIND_NAMES = {alias: k.name for k in RUN_KINDS for alias in k.aliases}
_NAMES = kind_names(RUN_KINDS)


def job_kind(name: str) -> str:
    """Our name of a job kind given under our name or the seed's."""
    return _NAMES.get(name.strip(), name.strip())


def probe_item_key(scenario_id: str, model: str, sample: int) -> str:
    return f"{PROBE}:{scenario_id}:{model}:{sample}"
