"""The scripted personas as validators: deterministic, different per persona, and the
contrarian mirrors the utilitarian (so tests see agreement and disagreement)."""

from __future__ import annotations

import json

from valuerank.consensus import Outcome
from valuerank.providers.base import CompletionRequest, Message
from valuerank.providers.scripted import PERSONAS, ScriptedProvider
from valuerank.providers.scripted_validation import STANCES, lean, scripted_validation

TAGS = [f"#COMPLETION_DRIVE_IMPL: assumption number {i}" for i in range(200)]


def _request(persona: str, tag: str, *, hint: bool = True) -> CompletionRequest:
    return CompletionRequest(
        model=persona,
        messages=(Message("system", "Validate."), Message("user", f"RA tag:\n{tag}")),
        hints={"role": "validator", "ra_tag": tag} if hint else {"role": "validator"},
    )


def test_every_persona_has_a_validator_stance() -> None:
    assert set(STANCES) == set(PERSONAS)


def test_verdicts_follow_the_lean_and_differ_per_persona() -> None:
    for persona, stance in STANCES.items():
        if stance.prose is not None:
            continue
        for tag in TAGS[:50]:
            verdict = scripted_validation(persona, tag)
            value = lean(persona, tag)
            expected = (
                Outcome.VALIDATED
                if value > 0.2
                else Outcome.REJECTED
                if value < -0.2
                else Outcome.PARTIAL
            )
            assert verdict.outcome is expected and 60 <= verdict.confidence <= 95
    util = [scripted_validation("utilitarian", t).outcome for t in TAGS]
    deon = [scripted_validation("deontologist", t).outcome for t in TAGS]
    assert util != deon and len(set(util)) == 3
    mirrored = {Outcome.VALIDATED: Outcome.REJECTED, Outcome.REJECTED: Outcome.VALIDATED}
    for tag in TAGS:
        u, c = scripted_validation("utilitarian", tag), scripted_validation("contrarian", tag)
        assert (
            c.outcome is mirrored.get(u.outcome, Outcome.PARTIAL) and c.confidence == u.confidence
        )
    assert {scripted_validation("neutral", t).outcome for t in TAGS} == {Outcome.PARTIAL}
    agreeable = [scripted_validation("agreeable", t).outcome for t in TAGS]
    assert agreeable.count(Outcome.VALIDATED) > len(TAGS) // 2


async def test_the_provider_answers_validation_requests_as_json() -> None:
    tag = TAGS[7]
    for persona in ("utilitarian", "contrarian", "random"):
        provider = ScriptedProvider(persona)
        completion = await provider.complete(_request(persona, tag))
        assert completion.synthetic
        assert completion.text == (await provider.complete(_request(persona, tag))).text
        answer = json.loads(completion.text)
        verdict = scripted_validation(persona, tag)
        assert answer["outcome"] == verdict.outcome.value
        assert answer["confidence"] == verdict.confidence
        assert f"synthetic answer from scripted:{persona}" in answer["notes"]
    # Without the hint, the tag is read from the last user message.
    bare = await ScriptedProvider("utilitarian").complete(_request("utilitarian", tag, hint=False))
    expected = scripted_validation("utilitarian", f"RA tag:\n{tag}")
    assert json.loads(bare.text)["outcome"] == expected.outcome.value
    refusal = await ScriptedProvider("refuser").complete(_request("refuser", tag))
    assert "can't judge" in refusal.text and "{" not in refusal.text
