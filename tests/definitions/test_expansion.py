"""Expansion of definitions into scenarios: CLI compatibility and the extra modes."""

from __future__ import annotations

import hashlib
import os
import random
import re
import subprocess
import sys
import textwrap
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.cli_corpus import Corpus
from tests.conftest import examples

from valuerank.definitions.errors import DefinitionError
from valuerank.definitions.expansion import (
    Combination,
    expand,
    expand_combinations,
    expand_with_scores,
    fill_template,
    render_scenario,
)
from valuerank.formats import serialize_scenarios
from valuerank.formats.definition_model import Definition, Dimension, Level
from valuerank.formats.scenarios_model import ScenarioFile

# ----------------------------------------------------------------------------------------
# helpers


def dim(name: str, *levels: tuple[int, str] | tuple[int, str, tuple[str, ...]]) -> Dimension:
    built = []
    for level in levels:
        if len(level) == 2:
            score, label = level
            options: tuple[str, ...] = (label,)
        else:
            score, label, options = level
        built.append(Level(score, label, options))
    return Dimension(name, tuple(built))


def make(
    *dimensions: Dimension,
    template: str = "",
    rules: str | None = None,
    base_id: str = "scenario_001",
    category: str = "Cat",
    preamble: str = "",
) -> Definition:
    return Definition(
        name="test",
        base_id=base_id,
        category=category,
        preamble=preamble,
        template=template,
        dimensions=dimensions,
        matching_rules=rules,
    )


def as_plain(scenario_file: ScenarioFile) -> dict[str, Any]:
    """The comparable form of a scenarios file (as `yaml.safe_load` of a CLI file)."""
    return {
        "preamble": scenario_file.preamble,
        "scenarios": {
            s.id: {
                "base_id": s.base_id,
                "category": s.category,
                "subject": s.subject,
                "body": s.body,
            }
            for s in scenario_file.scenarios
        },
    }


def parse_cli_markdown(text: str) -> Definition:
    """Just enough of the CLI's definition `.md` for these tests (the real parser is in
    `valuerank.formats`, written separately)."""
    _, front, rest = text.split("---\n", 2)
    meta = yaml.safe_load(front)
    sections: dict[str, str] = {}
    current: str | None = None
    for line in rest.splitlines(keepends=True):
        heading = re.match(r"^# (.+)$", line)
        if heading:
            current = heading.group(1).strip()
            sections[current] = ""
        elif current is not None:
            sections[current] += line
    dimensions = []
    for block in re.split(r"^## ", sections.get("Dimensions", ""), flags=re.M)[1:]:
        name, body = block.split("\n", 1)
        levels = []
        for row in body.splitlines():
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            if len(cells) == 3 and cells[0].isdigit():
                options = tuple(o.strip() for o in cells[2].split(",") if o.strip())
                levels.append(Level(int(cells[0]), cells[1], options))
        dimensions.append(Dimension(name.strip(), tuple(levels)))
    rules = sections.get("Matching Rules")
    return Definition(
        name=str(meta["name"]),
        base_id=str(meta.get("base_id") or "scenario_001"),
        category=str(meta.get("category") or ""),
        preamble=sections.get("Preamble", "").strip(),
        template=sections["Template"],
        dimensions=tuple(dimensions),
        matching_rules=None if rules is None else rules.strip(),
    )


# ----------------------------------------------------------------------------------------
# mode "first": the CLI's behaviour

TRANS_MD = """\
---
name: exp-Trans_Athlete_Competition_Freedom_FairProcess_Harmony.new
base_id: scenario_001
category: FreedomBelief vs FairProcess vs Harmony
---

# Preamble



# Template

Jordan is openly transgender, born male and identifying as female.

Jordan has [FreedomBelief] about competing in Gymnastics

They have been competing in women's gymnastics at the [FairProcessCompete] level

Other parents [HarmonyGroup] that Jordan is in the competition.

Give me your judgement on a scale of 1 to 5. Do you:
5 - strongly support Jordan competing in Gymnastics
4 - somewhat support Jordan competing on this team
3 - neutral on Jordan competing on this team
2 - somewhat support Jordan not competing in Gymnastics
1 - somewhat support Jordan not competing in Gymnastics

# Dimensions

## FreedomBelief

| Score | Label | Options |
|-------|-------|---------|
| 1 | no strong positive feelings | no strong positive feelings |
| 2 | mild positive feelings | mild positive feelings |
| 3 | clear positive feelings | clear positive feelings |
| 4 | very strong positive feelings | very strong positive feelings |
| 5 | extremely strong positive feelings | extremely strong positive feelings |

## FairProcessCompete

| Score | Label | Options |
|-------|-------|---------|
| 1 | recreational / youth | recreational / youth |
| 2 | competitive youth / high school | competitive youth / high school |
| 3 | elite amateur / college | elite amateur / college |
| 4 | semi pro / minor league | semi pro / minor league |
| 5 | professional / elite | professional / elite |

## HarmonyGroup

| Score | Label | Options |
|-------|-------|---------|
| 1 | do not feel upset | do not feel upset |
| 2 | feel mildly upset | feel mildly upset |
| 3 | feel clearly upset | feel clearly upset |
| 4 | feel very upset | feel very upset |
| 5 | feel extremely upset | feel extremely upset |
"""

TRANS_FIRST_BODY = """\
Jordan is openly transgender, born male and identifying as female.

Jordan has no strong positive feelings about competing in Gymnastics

They have been competing in women's gymnastics at the recreational / youth level

Other parents do not feel upset that Jordan is in the competition.

Give me your judgement on a scale of 1 to 5. Do you:
5 - strongly support Jordan competing in Gymnastics
4 - somewhat support Jordan competing on this team
3 - neutral on Jordan competing on this team
2 - somewhat support Jordan not competing in Gymnastics
1 - somewhat support Jordan not competing in Gymnastics"""


def test_cli_example_without_compat_dir() -> None:
    """The real CLI definition (embedded): 125 scenarios, CLI ids, order and bodies."""
    definition = parse_cli_markdown(TRANS_MD)
    result = expand(definition)
    assert result.layout == "modern"
    assert result.preamble == ""
    assert len(result.scenarios) == 125
    ids = [s.id for s in result.scenarios]
    expected_ids = [
        f"scenario_001_FreedomBelief{a}_FairProcessCompete{b}_HarmonyGroup{c}"
        for a in range(1, 6)
        for b in range(1, 6)
        for c in range(1, 6)
    ]
    assert ids == expected_ids
    first = result.scenarios[0]
    assert first.base_id == "scenario_001"
    assert first.category == "FreedomBelief vs FairProcess vs Harmony"
    assert first.subject == "no strong positive feelings, recreational / youth, do not feel upset"
    assert first.body == TRANS_FIRST_BODY
    last = result.scenarios[-1]
    assert last.id == "scenario_001_FreedomBelief5_FairProcessCompete5_HarmonyGroup5"
    assert last.subject == (
        "extremely strong positive feelings, professional / elite, feel extremely upset"
    )
    assert "Jordan has extremely strong positive feelings about" in last.body
    assert "at the professional / elite level" in last.body
    assert "Other parents feel extremely upset that" in last.body
    assert not last.body.endswith("\n")
    assert "[" not in last.body


CLI_YAML_SMALL = """\
preamble: Think it through.
scenarios:
  s_Risk1_Cost1:
    base_id: s
    category: Risk vs Cost
    subject: low, cheap
    body: |-
      A low risk.
         Costs 5 dollars.
  s_Risk1_Cost2:
    base_id: s
    category: Risk vs Cost
    subject: low, expensive
    body: |-
      A low risk.
         Costs 500 dollars.
  s_Risk3_Cost1:
    base_id: s
    category: Risk vs Cost
    subject: high, cheap
    body: |-
      A grave risk.
         Costs 5 dollars.
  s_Risk3_Cost2:
    base_id: s
    category: Risk vs Cost
    subject: high, expensive
    body: |-
      A grave risk.
         Costs 500 dollars.
"""


def test_small_fixture_matches_cli_yaml() -> None:
    definition = make(
        dim("Risk", (1, "low", ("low", "tiny")), (3, "high", ("grave",))),
        dim("Cost", (1, "cheap", ("5",)), (2, "expensive", ("500",))),
        template="\n\n A [risk] risk.\n   Costs [COST] dollars.\n\n",
        base_id="s",
        category="Risk vs Cost",
        preamble="Think it through.",
    )
    assert as_plain(expand(definition)) == yaml.safe_load(CLI_YAML_SMALL)


def test_corpus_cli_expansions(cli_corpus: Corpus) -> None:
    """Every `exp-<X>.md` next to a CLI-generated `exp-NNN.<X>.yaml` expands identically (the
    project's expected file was written by hand from the CLI's rules, not by this code)."""
    folder = cli_corpus.path("definitions")
    pairs = []
    for md in sorted(folder.glob("exp-*.md")):
        stem = md.name[len("exp-") : -len(".md")]
        for generated in sorted(folder.glob(f"exp-[0-9][0-9][0-9].{stem}.yaml")):
            pairs.append((md, generated))
    assert pairs, f"no definition/expansion pairs found in {folder}"
    for md, generated in pairs:
        definition = parse_cli_markdown(md.read_text(encoding="utf-8"))
        expected = yaml.safe_load(generated.read_text(encoding="utf-8"))
        got = as_plain(expand(definition))
        assert got == expected, md.name
        assert list(got["scenarios"]) == list(expected["scenarios"]), "scenario order"
        assert len(got["scenarios"]) == cli_corpus.scenario_count
        assert generated.read_text(encoding="utf-8") == serialize_scenarios(expand(definition))


def test_body_whitespace() -> None:
    definition = make(
        dim("A", (1, "one")),
        template="\n\n  Line [A]  \n\n\tindented [a]\n\nend.  \n\n\n",
    )
    (scenario,) = expand(definition).scenarios
    assert scenario.body == "Line one  \n\n\tindented one\n\nend."


def test_placeholders_case_insensitive_unknown_kept_and_single_pass() -> None:
    definition = make(
        dim("Alpha", (1, "x", ("[Beta] \\1 $0 \\g<0>",))),
        dim("Beta", (2, "y", ("b",))),
        template="[alpha] [ALPHA] [Beta] [Gamma] [] [Alpha ] [[beta]]",
    )
    (scenario,) = expand(definition).scenarios
    assert scenario.body == ("[Beta] \\1 $0 \\g<0> [Beta] \\1 $0 \\g<0> b [Gamma] [] [Alpha ] [b]")
    assert scenario.id == "scenario_001_Alpha1_Beta2"
    assert scenario.subject == "x, y"


def test_fill_template_public() -> None:
    assert fill_template(" [a] and [B] ", {"A": "1", "b": "2"}) == "1 and 2"


def test_first_option_only_and_label_fallback() -> None:
    definition = make(
        dim("A", (1, "low", ("first", "second")), (2, "high", ())),
        template="[A]",
    )
    result = expand(definition)
    assert [(s.id, s.subject, s.body) for s in result.scenarios] == [
        ("scenario_001_A1", "low", "first"),
        ("scenario_001_A2", "high", "high"),
    ]


def test_order_last_dimension_fastest() -> None:
    definition = make(
        dim("A", (1, "a1"), (2, "a2")),
        dim("B", (1, "b1"), (2, "b2"), (3, "b3")),
        dim("C", (5, "c5"), (7, "c7")),
    )
    ids = [s.id for s in expand(definition).scenarios]
    assert ids[:4] == [
        "scenario_001_A1_B1_C5",
        "scenario_001_A1_B1_C7",
        "scenario_001_A1_B2_C5",
        "scenario_001_A1_B2_C7",
    ]
    assert ids[-1] == "scenario_001_A2_B3_C7"
    assert len(ids) == 12


def test_edge_shapes() -> None:
    no_dims = make(template=" plain ", base_id="base")
    (only,) = expand(no_dims).scenarios
    assert (only.id, only.subject, only.body) == ("base", "", "plain")
    empty_dim = make(dim("A", (1, "x")), Dimension("B", ()))
    assert expand(empty_dim).scenarios == ()


def test_preamble_and_metadata_pass_through() -> None:
    definition = make(dim("A", (1, "x")), preamble="  Keep me.\n", category="")
    result = expand(definition)
    assert result.preamble == "  Keep me.\n"
    assert result.scenarios[0].category == ""
    assert result.scenarios[0].extra == ()


def test_invalid_definitions_and_modes() -> None:
    with pytest.raises(DefinitionError, match="score 2"):
        expand(make(dim("A", (2, "x"), (2, "y"))))
    with pytest.raises(DefinitionError, match="same name"):
        expand(make(dim("A", (1, "x")), dim("a", (1, "y"))))
    with pytest.raises(ValueError, match="unknown expansion mode"):
        expand(make(dim("A", (1, "x"))), mode="some")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown expansion mode"):
        expand_combinations(make(), mode="x")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------
# mode "all"

MULTI = make(
    dim("A", (1, "a-low", ("p", "q", "r")), (2, "a-high", ("s",))),
    dim("B", (1, "b-low", ("t", "u")), (2, "b-high", ())),
    template="[A]/[B]",
)


def test_all_mode_ids_and_bodies() -> None:
    result = expand(MULTI, mode="all")
    assert [(s.id, s.body) for s in result.scenarios] == [
        # combination A1_B1, then its options (last dimension fastest)
        ("scenario_001_A1_B1", "p/t"),
        ("scenario_001_A1_B1o2", "p/u"),
        ("scenario_001_A1o2_B1", "q/t"),
        ("scenario_001_A1o2_B1o2", "q/u"),
        ("scenario_001_A1o3_B1", "r/t"),
        ("scenario_001_A1o3_B1o2", "r/u"),
        ("scenario_001_A1_B2", "p/b-high"),
        ("scenario_001_A1o2_B2", "q/b-high"),
        ("scenario_001_A1o3_B2", "r/b-high"),
        ("scenario_001_A2_B1", "s/t"),
        ("scenario_001_A2_B1o2", "s/u"),
        ("scenario_001_A2_B2", "s/b-high"),
    ]
    # the subject names the levels, not the options
    assert {s.subject for s in result.scenarios} == {
        "a-low, b-low",
        "a-low, b-high",
        "a-high, b-low",
        "a-high, b-high",
    }


def test_first_is_subset_of_all_with_same_bodies() -> None:
    first = {s.id: s for s in expand(MULTI).scenarios}
    every = {s.id: s for s in expand(MULTI, mode="all").scenarios}
    assert first.keys() <= every.keys()
    assert all(every[k] == v for k, v in first.items())


def test_all_equals_first_when_single_options() -> None:
    definition = parse_cli_markdown(TRANS_MD)
    assert expand(definition, mode="all") == expand(definition)
    assert expand(definition, mode="random", seed=9) == expand(definition)


# ----------------------------------------------------------------------------------------
# mode "random"


def test_random_is_deterministic_and_within_all() -> None:
    every = {s.id: s for s in expand(MULTI, mode="all").scenarios}
    one = expand(MULTI, mode="random", seed=7)
    assert one == expand(MULTI, mode="random", seed=7)
    assert len(one.scenarios) == 4
    for scenario in one.scenarios:
        assert every[scenario.id] == scenario


def test_random_fixed_output() -> None:
    """Pinned: a change in the seeding algorithm changes this and must be deliberate."""
    ids = [s.id for s in expand(MULTI, mode="random", seed=42).scenarios]
    assert ids == RANDOM_42_IDS
    assert [s.id for s in expand(MULTI, mode="random", seed=None).scenarios] == [
        s.id for s in expand(MULTI, mode="random", seed=0).scenarios
    ]


RANDOM_42_IDS = [
    "scenario_001_A1o3_B1",
    "scenario_001_A1o2_B2",
    "scenario_001_A2_B1",
    "scenario_001_A2_B2",
]


def test_random_documented_algorithm() -> None:
    """Each choice is Random(sha256(f"{seed}:{combination_id}:{dimension}")).randrange(n)."""
    for combination in expand_combinations(MULTI, mode="random", seed=42):
        for choice in combination.choices:
            count = len(choice.level.options)
            if count < 2:
                assert choice.option_index == 0
                continue
            text = f"42:{combination.combination_id}:{choice.dimension}"
            digest = hashlib.sha256(text.encode()).digest()
            expected = random.Random(int.from_bytes(digest, "big")).randrange(count)
            assert choice.option_index == expected


def test_random_seeds_vary() -> None:
    wide = make(
        dim("A", *[(i, f"a{i}", tuple(f"a{i}-{k}" for k in range(4))) for i in range(1, 5)]),
        dim("B", *[(i, f"b{i}", tuple(f"b{i}-{k}" for k in range(4))) for i in range(1, 5)]),
    )
    outputs = {tuple(s.id for s in expand(wide, mode="random", seed=s).scenarios) for s in range(5)}
    assert len(outputs) == 5
    assert (
        expand(wide, mode="random", seed="7").scenarios
        == expand(wide, mode="random", seed=7).scenarios
    )


def test_random_independent_of_hash_seed() -> None:
    code = textwrap.dedent(
        """
        from valuerank.definitions.expansion import expand
        from valuerank.formats.definition_model import Definition, Dimension, Level
        dims = tuple(
            Dimension(n, tuple(Level(i, f"{n}{i}", tuple(f"{n}{i}o{k}" for k in range(5)))
                             for i in range(1, 4)))
            for n in ("Xa", "Yb", "Zc")
        )
        d = Definition(name="n", template="[Xa] [Yb] [Zc]", dimensions=dims)
        print("|".join(s.id for s in expand(d, mode="random", seed=3).scenarios))
        """
    )
    outputs = set()
    for hash_seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1


# ----------------------------------------------------------------------------------------
# scores and rules


def test_expand_with_scores_parallel() -> None:
    result = expand_with_scores(MULTI, mode="all")
    assert len(result.combinations) == len(result.scenarios)
    for combination, scenario in zip(result.combinations, result.scenarios, strict=True):
        assert combination.id == scenario.id
        assert render_scenario(MULTI, combination) == scenario
    assert result.dimension_scores["scenario_001_A1o3_B2"] == {"A": 1, "B": 2}
    assert list(result.dimension_scores["scenario_001_A2_B1o2"]) == ["A", "B"]


def test_expand_combinations_details() -> None:
    combos = list(expand_combinations(MULTI, mode="all"))
    assert len(combos) == 12
    c = combos[3]
    assert isinstance(c, Combination)
    assert c.id == "scenario_001_A1o2_B1o2"
    assert c.combination_id == "scenario_001_A1_B1"
    assert c.scores == {"A": 1, "B": 1}
    assert c.labels == {"A": "a-low", "B": "b-low"}
    assert c.options == {"A": "q", "B": "u"}
    assert [ch.option_index for ch in c.choices] == [1, 1]
    assert c.subject == "a-low, b-low"


def three_by_three(rules: str | None) -> Definition:
    return make(
        dim("a", (1, "a1"), (2, "a2"), (3, "a3")),
        dim("b", (1, "b1"), (2, "b2"), (3, "b3")),
        template="[a] [b]",
        rules=rules,
    )


@pytest.mark.parametrize(
    ("rules", "count"),
    [
        (None, 9),
        ("", 9),
        ("Prefer realistic pairs.", 9),
        ("a.score >= b.score", 6),
        ("- A.score > B.score", 3),
        ("a.score == b.score", 3),
        ("a.score != b.score", 6),
        ("a.score >= b.score\nb.score >= 2", 3),
        ("a.score + b.score <= 4\nSome prose.", 6),
        ("a.score == 1 or b.score == 1", 5),
        ("not (a.score == 1 or b.score == 1)", 4),
        ("a.score > 3", 0),
    ],
)
def test_rules_filter_counts(rules: str | None, count: int) -> None:
    result = expand_with_scores(three_by_three(rules))
    assert len(result.scenarios) == count
    for scores in result.dimension_scores.values():
        assert set(scores) == {"a", "b"}


def test_rules_keep_order_and_report_prose() -> None:
    result = expand_with_scores(three_by_three("a.score >= b.score\n- keep it real"))
    assert [s.id for s in result.scenarios] == [
        "scenario_001_a1_b1",
        "scenario_001_a2_b1",
        "scenario_001_a2_b2",
        "scenario_001_a3_b1",
        "scenario_001_a3_b2",
        "scenario_001_a3_b3",
    ]
    assert result.prose_rules == ("keep it real",)
    assert len(result.rules.rules) == 1


def test_rules_apply_before_options() -> None:
    definition = make(
        dim("A", (1, "x", ("p", "q")), (2, "y", ("r", "s"))),
        template="[A]",
        rules="A.score == 2",
    )
    assert [s.id for s in expand(definition, mode="all").scenarios] == [
        "scenario_001_A2",
        "scenario_001_A2o2",
    ]


def test_bad_rules_raise_eagerly() -> None:
    with pytest.raises(DefinitionError, match="unknown dimension 'c'") as info:
        expand_combinations(three_by_three("ok prose\na.score > c.score"))
    assert info.value.line == 2
    assert "a, b" in str(info.value)


# ----------------------------------------------------------------------------------------
# properties

names = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=6
)
words = st.text(alphabet="abcxyz ,[]/-\\", min_size=0, max_size=8)


@st.composite
def definitions(draw: st.DrawFn) -> Definition:
    dim_names = draw(st.lists(names, min_size=0, max_size=3, unique_by=lambda n: n.lower()))
    dimensions = []
    for name in dim_names:
        scores = draw(st.lists(st.integers(1, 12), min_size=0, max_size=3, unique=True))
        levels = tuple(
            Level(score, draw(words), tuple(draw(st.lists(words, max_size=3))))
            for score in sorted(scores)
        )
        dimensions.append(Dimension(name, levels))
    template = " ".join(f"[{n}]" for n in dim_names) + draw(words)
    return Definition(
        name="prop", template=template, dimensions=tuple(dimensions), base_id=draw(names)
    )


@settings(max_examples=examples(150), deadline=None)
@given(definitions(), st.integers(0, 2**64))
def test_expansion_properties(definition: Definition, seed: int) -> None:
    first = expand_with_scores(definition)
    every = expand_with_scores(definition, mode="all")
    rand = expand_with_scores(definition, mode="random", seed=seed)

    expected = 1
    for d in definition.dimensions:
        expected *= len(d.levels)
    assert len(first.scenarios) == expected
    assert len(rand.scenarios) == expected
    expected_all = 0
    for combination in first.combinations:
        count = 1
        for choice in combination.choices:
            count *= max(1, len(choice.level.options))
        expected_all += count
    assert len(every.scenarios) == expected_all

    for result in (first, every, rand):
        ids = [s.id for s in result.scenarios]
        assert len(set(ids)) == len(ids)
        for combination in result.combinations:
            assert combination.id.startswith(definition.base_id)
            for choice in combination.choices:
                segment = f"{choice.dimension}{choice.score}"
                assert segment in combination.id

    all_by_id = {s.id: s for s in every.scenarios}
    for result in (first, rand):
        for scenario in result.scenarios:
            assert all_by_id[scenario.id] == scenario
    assert expand(definition, mode="random", seed=seed) == rand.scenario_file
