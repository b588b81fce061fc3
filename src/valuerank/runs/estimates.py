"""Token estimates of a run's follow-up turns, written once: the cost estimate before a run
starts (`valuerank.pipeline.launch.estimate_cost`) and each probe job's rate-limit reservation
(`valuerank.runs.service.conversation_estimate`) both read them here. Pure."""

from __future__ import annotations

import statistics

from valuerank.formats.followups import DEFAULT_FOLLOWUPS
from valuerank.providers.costs import estimate_tokens


def followup_tokens(turns: int) -> int:
    """Tokens of one follow-up prompt of a run that asks `turns` follow-ups: the mean
    estimate of the prompts it sends (the first `turns` follow-ups); 0 when it asks none."""
    asked = DEFAULT_FOLLOWUPS[:turns]
    if not asked:
        return 0
    return round(statistics.fmean(estimate_tokens(f.prompt) for f in asked))
