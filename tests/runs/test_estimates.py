"""The follow-up turns' token estimate is written once (`runs/estimates.py`) and measured from
the prompt the probes send: the cost estimate before a run and each probe's rate-limit
reservation read the same number (they used to be a measured 332 and a fixed 330)."""

from __future__ import annotations

from valuerank.formats.followups import DEFAULT_FOLLOWUPS, RANKED_LIST_PROMPT
from valuerank.providers.costs import conversation_tokens, estimate_tokens
from valuerank.runs.config import RunConfig
from valuerank.runs.estimates import followup_tokens
from valuerank.runs.probes import conversation_estimate


def test_the_estimate_is_the_prompt_the_probes_send() -> None:
    assert followup_tokens(0) == 0
    assert followup_tokens(1) == estimate_tokens(RANKED_LIST_PROMPT) == 332
    # The CLI asks one follow-up: more turns asked send no other prompt.
    assert len(DEFAULT_FOLLOWUPS) == 1 and followup_tokens(3) == followup_tokens(1)


def test_a_probe_reserves_with_the_same_estimate() -> None:
    config = RunConfig(models=("scripted:utilitarian",), preamble="Decide.", max_tokens=100)
    body = "A scenario " * 40
    prompt = estimate_tokens(f"{config.preamble}\n\n{body}")
    expected = sum(conversation_tokens(2, prompt, 100, followup_tokens(1), 0))
    assert conversation_estimate(config, body) == expected
    silent = config.model_copy(update={"followup_turns": 0})
    assert conversation_estimate(silent, body) == sum(conversation_tokens(1, prompt, 100, 0, 0))
