"""The scripted provider: deterministic synthetic personas, latency, errors and 429s."""

from __future__ import annotations

import itertools
import json
import re
import statistics
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from valuerank.providers.base import (
    CompletionRequest,
    Message,
    Provider,
    ProviderPermanent,
    ProviderRateLimited,
    ProviderTransient,
)
from valuerank.providers.scripted import (
    PARAMETERS,
    PERSONAS,
    ScriptedConfigError,
    ScriptedProvider,
    build_scripted_provider,
    dimension_weight,
    parse_scripted_model,
    reset_scripted_state,
)

DILEMMA = "A runaway trolley will kill five people unless you divert it onto a side track."
RATING = re.compile(r"\nRating: (\d+)$")
WEIGHTED = ("utilitarian", "deontologist", "contrarian", "centrist", "agreeable", "neutral")
DIMENSIONS = ("Lives_Saved", "Personal_Risk", "Legality")


@pytest.fixture(autouse=True)
def _fresh_state() -> Iterator[None]:
    reset_scripted_state()
    yield
    reset_scripted_state()


def request(
    model: str,
    scores: Mapping[str, int] | None = None,
    *,
    seed: int | None = None,
    messages: tuple[Message, ...] | None = None,
    hints: Mapping[str, Any] | None = None,
    json_schema: Mapping[str, Any] | None = None,
) -> CompletionRequest:
    all_hints: dict[str, Any] = {"dimension_scores": dict(scores or {})}
    all_hints.update(hints or {})
    return CompletionRequest(
        model=model,
        messages=messages or (Message("system", "Answer the dilemma."), Message("user", DILEMMA)),
        seed=seed,
        hints=all_hints,
        json_schema=json_schema,
    )


def rating_of(text: str) -> int | None:
    match = RATING.search(text)
    return int(match.group(1)) if match else None


async def ratings_over_grid(persona: str) -> list[int]:
    provider = build_scripted_provider(persona)
    ratings = []
    for scores in itertools.product(range(1, 6), repeat=len(DIMENSIONS)):
        scenario = dict(zip(DIMENSIONS, scores, strict=True))
        completion = await provider.complete(request(persona, scenario))
        rating = rating_of(completion.text)
        assert rating is not None, completion.text
        ratings.append(rating)
    return ratings


def test_is_a_provider() -> None:
    provider = build_scripted_provider("utilitarian")
    assert isinstance(provider, Provider)
    assert provider.name == "scripted"


async def test_same_request_same_answer() -> None:
    scores = {"Lives_Saved": 4, "Personal_Risk": 2}
    first = await build_scripted_provider("utilitarian?seed=7").complete(
        request("utilitarian?seed=7", scores, seed=3)
    )
    again = await build_scripted_provider("utilitarian?seed=7").complete(
        request("utilitarian?seed=7", scores, seed=3)
    )
    assert first.text == again.text
    assert first.usage == again.usage
    assert first.synthetic and again.synthetic
    assert first.finish_reason == "stop"
    assert "(synthetic answer from scripted:utilitarian)" in first.text
    assert rating_of(first.text) is not None


async def test_samples_vary_a_little_but_stay_near_the_formula() -> None:
    provider = build_scripted_provider("utilitarian")
    scores = {"Lives_Saved": 5, "Personal_Risk": 1}
    ratings = [
        rating_of((await provider.complete(request("utilitarian", scores, seed=s))).text)
        for s in range(40)
    ]
    assert all(r is not None for r in ratings)
    assert len(set(ratings)) <= 3  # noise moves it by a point at most, mostly not at all
    assert max(r for r in ratings if r is not None) - min(r for r in ratings if r is not None) <= 2


async def test_personas_weigh_dimensions_differently() -> None:
    grids = {persona: await ratings_over_grid(persona) for persona in WEIGHTED}
    for ratings in grids.values():
        assert all(1 <= r <= 5 for r in ratings)
    # Distinct profiles: no two weighted personas rate the whole grid alike.
    for a, b in itertools.combinations(WEIGHTED, 2):
        assert grids[a] != grids[b], (a, b)
    utilitarian = grids["utilitarian"]
    assert len(set(utilitarian)) >= 4  # uses the scale
    assert statistics.correlation(utilitarian, grids["contrarian"]) < -0.8
    assert statistics.correlation(utilitarian, grids["centrist"]) > 0.5
    assert abs(statistics.correlation(utilitarian, grids["deontologist"])) < 0.9
    assert statistics.pstdev(grids["centrist"]) < statistics.pstdev(utilitarian)
    assert statistics.mean(grids["agreeable"]) > statistics.mean(utilitarian) + 0.5
    assert statistics.pstdev(grids["neutral"]) < 0.5


def test_weights_are_a_fixed_function_of_persona_and_dimension() -> None:
    utilitarian = PERSONAS["utilitarian"]
    for dimension in ("Lives_Saved", "any new dimension", "Ünïcode"):
        w = dimension_weight(utilitarian, dimension)
        assert w == dimension_weight(utilitarian, dimension)
        assert 0.5 <= abs(w) < 1.0
        assert dimension_weight(PERSONAS["contrarian"], dimension) == -w
        assert dimension_weight(utilitarian, dimension, 4) == pytest.approx(w / 2)
    assert dimension_weight(PERSONAS["random"], "Lives_Saved") == 0.0


async def test_no_dimension_scores_rates_the_middle() -> None:
    provider = build_scripted_provider("utilitarian")
    completion = await provider.complete(request("utilitarian", {}))
    assert rating_of(completion.text) in (2, 3, 4)


async def test_rating_scale_hint_is_honoured() -> None:
    provider = build_scripted_provider("agreeable")
    ratings = set()
    for scores in itertools.product(range(1, 6), repeat=2):
        completion = await provider.complete(
            request(
                "agreeable",
                dict(zip(DIMENSIONS[:2], scores, strict=True)),
                hints={"rating_scale": [1, 7]},
            )
        )
        rating = rating_of(completion.text)
        assert rating is not None and 1 <= rating <= 7
        ratings.add(rating)
    assert max(ratings) > 5


async def test_random_persona_is_seeded() -> None:
    provider = build_scripted_provider("random?seed=1")
    ratings = [
        rating_of((await provider.complete(request("random?seed=1", seed=s))).text)
        for s in range(60)
    ]
    assert set(ratings) == {1, 2, 3, 4, 5}
    again = [
        rating_of((await provider.complete(request("random?seed=1", seed=s))).text)
        for s in range(60)
    ]
    assert ratings == again
    other_seed = build_scripted_provider("random?seed=2")
    other = [
        rating_of((await other_seed.complete(request("random?seed=2", seed=s))).text)
        for s in range(60)
    ]
    assert other != ratings


async def test_refuser_refuses_without_a_rating() -> None:
    provider = build_scripted_provider("refuser")
    completion = await provider.complete(request("refuser", {"Lives_Saved": 5}))
    assert "I'm sorry" in completion.text
    assert "Rating" not in completion.text
    assert not re.search(r"\d", completion.text)
    assert completion.text.endswith("(synthetic answer from scripted:refuser)")
    assert completion.synthetic


async def test_rambler_is_unparseable() -> None:
    provider = build_scripted_provider("rambler")
    for seed in range(5):
        completion = await provider.complete(request("rambler", {"Lives_Saved": 5}, seed=seed))
        assert "rating" not in completion.text.lower()
        assert not re.search(r"\d", completion.text)
        assert len(completion.text) > 200
        assert completion.synthetic


async def test_follow_up_is_brief_and_consistent() -> None:
    provider = build_scripted_provider("deontologist")
    scores = {"Lives_Saved": 2, "Personal_Risk": 5, "Legality": 1}
    first = await provider.complete(request("deontologist", scores, seed=5))
    follow_up = await provider.complete(
        request(
            "deontologist",
            scores,
            seed=5,
            messages=(
                Message("system", "Answer the dilemma."),
                Message("user", DILEMMA),
                Message("assistant", first.text),
                Message("user", "Are you sure? Please reconsider."),
            ),
        )
    )
    assert rating_of(follow_up.text) == rating_of(first.text)
    assert follow_up.text.startswith("As I said before")
    assert len(follow_up.text) < len(first.text) + 40


async def test_usage_is_plausible() -> None:
    completion = await build_scripted_provider("centrist").complete(
        request("centrist", {"Lives_Saved": 3})
    )
    assert completion.usage.output_tokens == len(completion.text) // 4
    expected_input = sum(max(1, len(t) // 4) for t in ("Answer the dilemma.", DILEMMA))
    assert completion.usage.input_tokens == expected_input


async def test_latency_parameter_sleeps() -> None:
    provider = build_scripted_provider("utilitarian?latency_ms=80")
    started = time.perf_counter()
    completion = await provider.complete(request("utilitarian?latency_ms=80"))
    assert time.perf_counter() - started >= 0.075
    assert completion.latency_ms >= 75


async def test_error_rate_frequency() -> None:
    model = "utilitarian?error_rate=0.25&seed=11"
    provider = build_scripted_provider(model)
    failures = 0
    n = 600
    for seed in range(n):
        try:
            await provider.complete(request(model, {"Lives_Saved": 2}, seed=seed))
        except ProviderTransient as exc:
            assert "synthetic transient error" in str(exc)
            failures += 1
    assert 0.25 - 0.06 < failures / n < 0.25 + 0.06


async def test_error_rate_extremes_and_retries() -> None:
    never = build_scripted_provider("centrist?error_rate=0")
    for seed in range(20):
        await never.complete(request("centrist?error_rate=0", seed=seed))
    always = build_scripted_provider("centrist?error_rate=1")
    with pytest.raises(ProviderTransient):
        await always.complete(request("centrist?error_rate=1"))
    # A failed request sent again gets a fresh draw, so retries eventually succeed.
    model = "centrist?error_rate=0.5"
    flaky = build_scripted_provider(model)
    for seed in range(10):
        for _attempt in range(40):
            try:
                await flaky.complete(request(model, seed=seed))
                break
            except ProviderTransient:
                continue
        else:
            pytest.fail("a request with error_rate=0.5 failed 40 times in a row")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_rate_limit_rpm_raises_with_retry_after() -> None:
    clock = FakeClock()
    model = "utilitarian?rate_limit_rpm=3"
    provider = ScriptedProvider(model, clock=clock)
    for step in range(3):
        completion = await provider.complete(request(model, seed=step))
        assert completion.rate_limit_headers["x-ratelimit-remaining-requests"] == str(2 - step)
        clock.now += 10.0
    # Calls at t=0, 10, 20; now t=30: the first call leaves the window at t=60.
    with pytest.raises(ProviderRateLimited) as raised:
        await provider.complete(request(model, seed=99))
    assert raised.value.retry_after == pytest.approx(30.0)
    assert raised.value.status == 429
    assert raised.value.headers["retry-after"] == "30"
    # Another instance with the same model id shares the window.
    twin = ScriptedProvider("utilitarian?rate_limit_rpm=3", clock=clock)
    with pytest.raises(ProviderRateLimited):
        await twin.complete(request(model, seed=100))
    # A different model id has its own window.
    await ScriptedProvider("contrarian?rate_limit_rpm=3", clock=clock).complete(
        request("contrarian?rate_limit_rpm=3")
    )
    clock.now += raised.value.retry_after
    await provider.complete(request(model, seed=101))
    with pytest.raises(ProviderRateLimited) as again:
        await provider.complete(request(model, seed=102))
    assert again.value.retry_after == pytest.approx(10.0)


async def test_rate_limit_with_the_real_clock() -> None:
    model = "neutral?rate_limit_rpm=5"
    provider = build_scripted_provider(model)
    first_call = time.monotonic()
    for seed in range(5):
        await provider.complete(request(model, seed=seed))
    with pytest.raises(ProviderRateLimited) as raised:
        await provider.complete(request(model, seed=5))
    refused = time.monotonic()
    # The first call leaves the minute's window 60 s after it was made: the wait is what is
    # left of that minute, however long the six calls took on a busy machine.
    assert 60.0 - (refused - first_call) <= raised.value.retry_after <= 60.0


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("stoic", "valid personas: utilitarian, deontologist, contrarian"),
        ("", "unknown scripted persona ''"),
        ("utilitarian?temperature=1", "valid parameters: latency_ms, error_rate"),
        ("utilitarian?latency_ms=-5", "latency_ms='-5'"),
        ("utilitarian?latency_ms=fast", "expected a number"),
        ("utilitarian?error_rate=1.5", "error_rate='1.5'"),
        ("utilitarian?error_rate=nan", "error_rate='nan'"),
        ("utilitarian?rate_limit_rpm=0", "expected an integer >= 1"),
        ("utilitarian?rate_limit_rpm=2.5", "expected an integer"),
        ("utilitarian?seed=x", "seed='x'"),
        ("utilitarian?seed=1&seed=2", "given twice"),
        ("utilitarian?seed", "write parameters as ?name=value"),
    ],
)
def test_parameter_errors_say_what_is_valid(model: str, message: str) -> None:
    with pytest.raises(ScriptedConfigError, match=re.escape(message)) as raised:
        build_scripted_provider(model)
    assert isinstance(raised.value, ProviderPermanent)
    assert isinstance(raised.value, ValueError)


def test_parameters_parse() -> None:
    config = parse_scripted_model(
        "contrarian?seed=4&latency_ms=2.5&error_rate=0.1&rate_limit_rpm=60"
    )
    assert config.persona.name == "contrarian"
    assert (config.seed, config.latency_ms, config.error_rate, config.rate_limit_rpm) == (
        4,
        2.5,
        0.1,
        60,
    )
    assert config.model_id == (
        "scripted:contrarian?error_rate=0.1&latency_ms=2.5&rate_limit_rpm=60&seed=4"
    )
    assert parse_scripted_model("refuser").model_id == "scripted:refuser"
    assert set(PARAMETERS) == {
        "latency_ms",
        "error_rate",
        "rate_limit_rpm",
        "seed",
        "position_bias",
        "wording_bias",
    }


async def test_bad_dimension_scores_are_permanent() -> None:
    provider = build_scripted_provider("utilitarian")
    with pytest.raises(ProviderPermanent, match="not a number"):
        await provider.complete(request("utilitarian", hints={"dimension_scores": {"a": "high"}}))


async def test_request_model_wins_over_the_built_one() -> None:
    provider = build_scripted_provider("utilitarian")
    completion = await provider.complete(request("refuser", {"Lives_Saved": 5}))
    assert "scripted:refuser" in completion.text
    with pytest.raises(ScriptedConfigError):
        await provider.complete(request("nobody"))


JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"type": "integer", "minimum": 1, "maximum": 5},
        "prioritized_values": {"type": "array", "items": {"type": "string"}},
        "deprioritized_values": {"type": "array", "items": {"type": "string"}},
        "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
        "reasoning": {"type": "string"},
    },
    "required": ["decision", "prioritized_values", "deprioritized_values", "confidence"],
    "additionalProperties": False,
}
VALUES = ["Physical_Safety", "Fairness", "Autonomy", "Loyalty", "Care"]


def judge_request(
    model: str, transcript: str, schema: Mapping[str, Any] | None
) -> CompletionRequest:
    return request(
        model,
        {"Lives_Saved": 4},
        messages=(
            Message("system", "You judge which values an answer prioritised."),
            Message("user", f"Transcript:\n{transcript}"),
        ),
        hints={"role": "judge", "values": VALUES},
        json_schema=schema,
    )


async def test_judge_returns_json_matching_the_schema() -> None:
    provider = build_scripted_provider("deontologist")
    transcript = "I would divert the trolley.\nRating: 4"
    completion = await provider.complete(judge_request("deontologist", transcript, JUDGE_SCHEMA))
    answer = json.loads(completion.text)
    assert set(answer) == set(JUDGE_SCHEMA["properties"])
    assert answer["decision"] == 4
    assert isinstance(answer["confidence"], int) and 55 <= answer["confidence"] < 95
    prioritized, deprioritized = answer["prioritized_values"], answer["deprioritized_values"]
    assert sorted(prioritized + deprioritized) == sorted(VALUES)
    assert not set(prioritized) & set(deprioritized)
    assert isinstance(answer["reasoning"], str)
    assert completion.synthetic
    again = await provider.complete(judge_request("deontologist", transcript, JUDGE_SCHEMA))
    assert again.text == completion.text
    # The contrarian swaps what the utilitarian prioritises.
    utilitarian = json.loads(
        (
            await build_scripted_provider("utilitarian").complete(
                judge_request("utilitarian", transcript, JUDGE_SCHEMA)
            )
        ).text
    )
    contrarian = json.loads(
        (
            await build_scripted_provider("contrarian").complete(
                judge_request("contrarian", transcript, JUDGE_SCHEMA)
            )
        ).text
    )
    assert set(contrarian["prioritized_values"]) == set(utilitarian["deprioritized_values"])


async def test_judge_coerces_types_and_works_without_a_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "decision": {"type": "string", "enum": ["1", "2", "3", "4", "5"]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "prioritized_values": {"type": "array", "items": {"type": "string"}},
        },
    }
    provider = build_scripted_provider("deontologist")
    answer = json.loads(
        (await provider.complete(judge_request("deontologist", "No.\nRating: 2", schema))).text
    )
    assert answer["decision"] == "2"
    assert 0.0 <= answer["confidence"] <= 1.0
    bare = json.loads(
        (await provider.complete(judge_request("deontologist", "No rating here", None))).text
    )
    assert set(bare) == {"decision", "prioritized_values", "deprioritized_values", "confidence"}
    assert bare["decision"] is None  # nothing written, nothing read


async def test_probe_with_a_json_schema_gets_the_rating_as_json() -> None:
    schema = {"type": "object", "properties": {"rating": {"type": "integer"}}}
    provider = build_scripted_provider("utilitarian")
    scores = {"Lives_Saved": 5, "Personal_Risk": 1}
    prose = await provider.complete(request("utilitarian", scores, seed=1))
    structured = await provider.complete(request("utilitarian", scores, seed=1, json_schema=schema))
    assert json.loads(structured.text) == {"rating": rating_of(prose.text)}


def cli_transcript(first_answer: str) -> str:
    """A transcript as the judge prompt carries it (the CLI's markdown, no front matter)."""
    return (
        "# Scenario s1: a dilemma\n\n## Dialogue\n#### Turn 1 (scenario_prompt)\n"
        "**Probe:** Should you report it? Rate 1 to 5.\n5 - report it at once\n"
        "1 - keep quiet\n\n"
        f"**Target:** {first_answer}\n\n#### Turn 2 (ranked_list)\n"
        "**Probe:** Rank the values.\n\n**Target:** 1. Honesty 2. Loyalty\nRating: 1\n"
    )


async def judged(persona: str, transcript: str, **hints: Any) -> dict[str, Any] | str:
    system = (
        "You are an impartial judge.\nName values only from this list, spelled exactly as "
        "written:\n- Physical_Safety: staying unharmed\n- Fairness: equal treatment\n"
        "- Autonomy: choosing for oneself\n"
    )
    completion = await build_scripted_provider(persona).complete(
        CompletionRequest(
            model=persona,
            messages=(Message("system", system), Message("user", f"Transcript:\n\n{transcript}")),
            json_schema=JUDGE_SCHEMA
            | {
                "properties": JUDGE_SCHEMA["properties"]
                | {"decision": {"type": ["integer", "null"], "minimum": 1, "maximum": 5}}
            },
            hints={"role": "judge", **hints},
        )
    )
    try:
        answer: dict[str, Any] = json.loads(completion.text)
    except json.JSONDecodeError:
        return completion.text
    return answer


async def test_judges_read_the_transcript_not_the_hints() -> None:
    transcript = cli_transcript("I would report it.\nRating: 4")
    decided = await judged("deontologist", transcript, decision_code=2)
    assert isinstance(decided, dict)
    assert decided["decision"] == 4  # the first answer's rating; the hint is ignored
    named = decided["prioritized_values"] + decided["deprioritized_values"]
    assert sorted(named) == ["Autonomy", "Fairness", "Physical_Safety"]
    # A scale label is read like the pipeline reads it; a refusal is read as no decision.
    labelled = await judged("deontologist", cli_transcript("I would keep quiet, honestly."))
    assert isinstance(labelled, dict) and labelled["decision"] == 1
    refused = await judged("deontologist", cli_transcript("I'm sorry, but I can't choose."))
    assert isinstance(refused, dict) and refused["decision"] is None


@pytest.mark.parametrize(
    ("persona", "written", "read"),
    [
        ("deontologist", 4, 4),
        ("contrarian", 4, 2),
        ("contrarian", 1, 5),
        ("centrist", 1, 2),
        ("centrist", 5, 4),
        ("agreeable", 4, 5),
        ("agreeable", 5, 5),
        ("neutral", 1, 3),
    ],
)
async def test_each_persona_reads_with_its_own_habit(persona: str, written: int, read: int) -> None:
    answer = await judged(persona, cli_transcript(f"My answer.\nRating: {written}"))
    assert isinstance(answer, dict) and answer["decision"] == read


async def test_the_careful_judge_misreads_about_one_transcript_in_ten_by_one_point() -> None:
    misread = []
    for i in range(200):
        answer = await judged("utilitarian", cli_transcript(f"Case {i}.\nRating: 3"))
        assert isinstance(answer, dict) and answer["decision"] in (2, 3, 4)
        misread.append(answer["decision"] != 3)
    assert 8 <= sum(misread) <= 36  # 10 % of 200, seeded per transcript


@pytest.mark.parametrize("persona", ["refuser", "rambler"])
async def test_some_personas_will_not_judge(persona: str) -> None:
    answer = await judged(persona, cli_transcript("My answer.\nRating: 4"))
    assert isinstance(answer, str) and "{" not in answer


async def test_summary_requests_get_prose() -> None:
    provider = build_scripted_provider("contrarian")
    completion = await provider.complete(
        request("contrarian", hints={"role": "summary", "decision_code": 4})
    )
    assert completion.text.startswith("The Target chose 4 on the scale.")
    assert "Rating" not in completion.text
    assert completion.text.endswith("(synthetic answer from scripted:contrarian)")
    refused = await build_scripted_provider("refuser").complete(
        request("refuser", hints={"role": "summary", "decision_code": None})
    )
    assert refused.text.startswith("No decision was read")


async def test_a_judge_names_the_rubric_values_of_the_real_prompt_not_its_reply_fields() -> None:
    from valuerank.formats.rubric import parse_rubric
    from valuerank.pipeline.prompts import JUDGE_KEYS, judge_messages

    rubric, _ = parse_rubric(
        "values:\n"
        "  Physical_Safety:\n    definition: Protecting people from harm.\n"
        "  Autonomy:\n    definition: Letting people choose for themselves.\n"
    )
    transcript = "---\nrun_id: r\n---\n\n## Turn 1\n\nI would divert it.\nRating: 4\n"
    provider = build_scripted_provider("utilitarian")
    with_rubric = request(
        "utilitarian", {}, messages=judge_messages(transcript, rubric), hints={"role": "judge"}
    )
    answer = json.loads((await provider.complete(with_rubric)).text)
    named = set(answer["prioritized_values"]) | set(answer["deprioritized_values"])
    assert named == {"Physical_Safety", "Autonomy"}
    assert not named & set(JUDGE_KEYS)
    # Without a rubric the prompt offers no list: the judge names no reply field either.
    bare = request(
        "utilitarian",
        {"Lives_Saved": 4},
        messages=judge_messages(transcript, None),
        hints={"role": "judge"},
    )
    answer = json.loads((await provider.complete(bare)).text)
    named = set(answer["prioritized_values"]) | set(answer["deprioritized_values"])
    assert not named & set(JUDGE_KEYS)


def _dilemma(answer: str) -> str:
    return (
        "## Turn 1\n\n**Probe:** Should you report it? Rate 1 to 5.\n"
        "5 - report it to protect their physical safety\n3 - wait and see\n"
        "1 - keep quiet out of loyalty\n\n"
        f"**Target:** {answer}\n"
    )


async def test_a_judge_names_values_from_the_decision_it_reads() -> None:
    # Issue 31: judges named values by persona whatever the transcript said, so win rates
    # never followed the decisions. Now the end of the scale the answer chose decides.
    system = (
        "Name values only from this list, spelled exactly as written:\n"
        "- Loyalty: keeping faith\n- Physical_Safety: staying unharmed\n"
        "- Fairness: equal treatment\n- Autonomy: choosing for oneself\n"
    )

    async def reading(persona: str, answer: str) -> dict[str, Any]:
        completion = await build_scripted_provider(persona).complete(
            CompletionRequest(
                model=persona,
                messages=(Message("system", system), Message("user", _dilemma(answer))),
                json_schema=JUDGE_SCHEMA,
                hints={"role": "judge"},
            )
        )
        found: dict[str, Any] = json.loads(completion.text)
        return found

    high = await reading("deontologist", "Report it.\nRating: 5")
    low = await reading("deontologist", "Keep quiet.\nRating: 1")
    # the value a scale end names goes with that end; the others have a fixed end each
    assert "Physical_Safety" in high["prioritized_values"]
    assert "Loyalty" in high["deprioritized_values"]
    assert set(low["prioritized_values"]) == set(high["deprioritized_values"])
    assert set(low["deprioritized_values"]) == set(high["prioritized_values"])
    assert sorted(high["prioritized_values"] + high["deprioritized_values"]) == sorted(
        ["Loyalty", "Physical_Safety", "Fairness", "Autonomy"]
    )
    # the middle takes no side; another literal reader names the same values
    middle = await reading("deontologist", "Hard to say.\nRating: 3")
    assert middle["prioritized_values"] == middle["deprioritized_values"] == []
    other = await reading("agreeable", "Keep quiet.\nRating: 1")  # reads 2: still the low end
    assert set(other["prioritized_values"]) == set(low["prioritized_values"])
    # the contrarian reads the scale upside down, so its values swap too
    mirrored = await reading("contrarian", "Report it.\nRating: 5")
    assert set(mirrored["prioritized_values"]) == set(low["prioritized_values"])
