"""Hypothesis strategies that build sensible models of every CLI format.

"Sensible" means what the format can carry: text the format strips has no surrounding
whitespace, table cells hold no line breaks or backslashes, options hold no commas, and so
on. Free-form YAML values (extras, raw sections) are arbitrary JSON-like data.
"""

from __future__ import annotations

import string
from typing import Any, Literal

from hypothesis import strategies as st

from valuerank.formats import (
    Definition,
    Dimension,
    DisambiguationRule,
    Level,
    ManifestModel,
    PromptTemplates,
    Rubric,
    RubricValue,
    RunManifest,
    RuntimeConfigSnapshot,
    Scenario,
    ScenarioFile,
    Transcript,
    Turn,
    VersionHashes,
)
from valuerank.formats.scenarios_model import CORE_SCENARIO_KEYS

# Any text YAML must carry (arbitrary unicode, control characters, line breaks).
any_text = st.text(max_size=40)

_WORD_CHARS = string.ascii_letters + string.digits + "éüß–’_"
_PROSE_CHARS = _WORD_CHARS + " .,;:!?'\"()-*/"


def _stripped(chars: str, *, min_size: int = 0, max_size: int = 30) -> st.SearchStrategy[str]:
    return (
        st.text(alphabet=chars, min_size=min_size, max_size=max_size)
        .map(str.strip)
        .filter(lambda s: len(s) >= min_size)
    )


single_line = st.text(
    alphabet=st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp")), max_size=30
).map(str.strip)


def _section_text() -> st.SearchStrategy[str]:
    """Markdown section text: no leading blank lines, no trailing whitespace, no headings."""
    line = st.text(alphabet=_PROSE_CHARS, max_size=40)
    return st.lists(line, max_size=5).map(lambda lines: _drop_leading_blank_lines("\n".join(lines)))


def _drop_leading_blank_lines(text: str) -> str:
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines).rstrip()


# JSON-like values YAML round-trips exactly (lists and dicts, not tuples).
json_like: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | any_text,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(any_text, children, max_size=3)
    ),
    max_leaves=8,
)


def _extras(
    exclude: set[str], *, keys: st.SearchStrategy[str] = any_text
) -> st.SearchStrategy[tuple[tuple[str, Any], ...]]:
    return st.lists(
        st.tuples(keys.filter(lambda k: k not in exclude), json_like),
        max_size=3,
        unique_by=lambda kv: kv[0],
    ).map(tuple)


# -- definitions -------------------------------------------------------------------------

_cell_chars = _PROSE_CHARS.replace(",", "") + "|"
label_text = _stripped(_PROSE_CHARS + "|", min_size=1)
option_text = _stripped(_cell_chars, min_size=1)
dimension_name = _stripped(string.ascii_letters + string.digits + "_ ", min_size=1, max_size=15)


@st.composite
def levels(draw: st.DrawFn) -> tuple[Level, ...]:
    scores = draw(st.lists(st.integers(1, 20), min_size=1, max_size=4, unique=True))
    return tuple(
        Level(score, draw(label_text), tuple(draw(st.lists(option_text, min_size=1, max_size=3))))
        for score in sorted(scores)
    )


@st.composite
def definitions(draw: st.DrawFn) -> Definition:
    names = draw(st.lists(dimension_name, max_size=3, unique_by=str.lower))
    dims = tuple(Dimension(name, draw(levels())) for name in names)
    pieces = draw(st.lists(_section_text(), min_size=len(dims) + 1, max_size=len(dims) + 1))
    template = pieces[0]
    for dim, piece in zip(dims, pieces[1:], strict=True):
        spelled = draw(st.sampled_from([dim.name, dim.name.upper(), dim.name.lower()]))
        template += f" [{spelled}] {piece}"
    template = _drop_leading_blank_lines(template) or "x"
    return Definition(
        name=draw(_stripped(_PROSE_CHARS, min_size=1)),
        template=template,
        dimensions=dims,
        base_id=draw(_stripped(_WORD_CHARS, min_size=1)),
        category=draw(single_line),
        preamble=draw(_section_text()),
        matching_rules=draw(st.none() | _section_text()),
        extra_front_matter=draw(_extras({"name", "base_id", "category"})),
    )


# -- scenarios ---------------------------------------------------------------------------

scenario_id = st.from_regex(r"scenario_[a-z0-9_]{1,12}", fullmatch=True)


@st.composite
def scenarios(draw: st.DrawFn, sid: str) -> Scenario:
    return Scenario(
        id=sid,
        base_id=draw(any_text),
        category=draw(any_text),
        subject=draw(any_text),
        body=draw(st.text(max_size=200)),
        extra=draw(_extras(set(CORE_SCENARIO_KEYS))),
    )


LAYOUTS: tuple[Literal["modern", "legacy"], ...] = ("modern", "legacy")


@st.composite
def scenario_files(draw: st.DrawFn) -> ScenarioFile:
    layout = draw(st.sampled_from(LAYOUTS))
    ids = draw(
        st.lists(scenario_id, min_size=1 if layout == "legacy" else 0, max_size=4, unique=True)
    )
    reserved = {"version", "preamble", "followups", "golden_runs", "scenarios"}
    extra_keys = any_text.filter(lambda k: layout == "modern" or not k.startswith("scenario_"))
    return ScenarioFile(
        preamble=draw(st.text(max_size=80)),
        scenarios=tuple(draw(scenarios(sid)) for sid in ids),
        layout=layout,
        version=draw(st.none() | st.integers(0, 9) | any_text),
        followups=tuple(
            draw(st.lists(st.tuples(any_text, any_text), max_size=3, unique_by=lambda kv: kv[0]))
        ),
        golden_runs=draw(_extras(set())),
        extra_top_level=draw(_extras(reserved, keys=extra_keys)),
    )


# -- transcripts -------------------------------------------------------------------------

_dialogue_text = (
    st.text(
        alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\r"), max_size=120
    )
    .map(str.strip)
    .filter(lambda s: "**Target:**" not in s and "#### Turn" not in s)
)
_front_value = single_line.filter(bool)


@st.composite
def transcripts(draw: st.DrawFn) -> Transcript:
    count = draw(st.integers(0, 4))
    turns = tuple(
        Turn(n, draw(single_line), draw(_dialogue_text), draw(_dialogue_text))
        for n in range(1, count + 1)
    )
    return Transcript(
        run_id=draw(_front_value),
        scenario_id=draw(_front_value),
        target_model=draw(_front_value),
        subject=draw(single_line),
        turns=turns,
        probe_model=draw(st.none() | single_line),
        timestamp=draw(st.none() | single_line),
        file_version=draw(_front_value),
        extra_front_matter=draw(
            _extras(
                {
                    "file_version",
                    "run_id",
                    "scenario_id",
                    "target_model",
                    "probe_model",
                    "timestamp",
                    "context_pairs",
                }
            )
        ),
    )


# -- run manifests -----------------------------------------------------------------------

opt_text = st.none() | any_text
opt_int = st.none() | st.integers(0, 10**6)


@st.composite
def run_manifests(draw: st.DrawFn) -> RunManifest:
    models = draw(
        st.none()
        | st.lists(
            st.builds(
                ManifestModel,
                anon_id=any_text,
                true_model=opt_text,
                provider=opt_text,
                extra=_extras({"true_model", "provider"}),
            ),
            max_size=3,
            unique_by=lambda m: m.anon_id,
        ).map(tuple)
    )
    return RunManifest(
        run_id=draw(any_text),
        created_at=draw(opt_text),
        probe_model=draw(opt_text),
        prompt_templates=draw(
            st.none()
            | st.builds(
                PromptTemplates,
                preamble=opt_text,
                followups=opt_text,
                extra=_extras({"preamble", "followups"}),
            )
        ),
        scenario_list=draw(st.none() | st.lists(any_text, max_size=4).map(tuple)),
        runtime_config=draw(
            st.none()
            | st.builds(
                RuntimeConfigSnapshot,
                temperature=st.none() | st.integers(0, 2) | st.floats(0, 2),
                max_tokens=opt_int,
                followup_turns=opt_int,
                threads=opt_int,
                extra=_extras({"temperature", "max_tokens", "followup_turns", "threads"}),
            )
        ),
        version_hashes=draw(
            st.none()
            | st.builds(
                VersionHashes,
                values_rubric_hash=opt_text,
                scenarios_hash=opt_text,
                extra=_extras({"values_rubric_hash", "scenarios_hash"}),
            )
        ),
        models=models,
        judge_model=draw(opt_text),
        extra=draw(
            _extras(
                {
                    "run_id",
                    "created_at",
                    "probe_model",
                    "prompt_templates",
                    "scenario_list",
                    "runtime_config",
                    "version_hashes",
                    "models",
                    "judge_model",
                }
            )
        ),
    )


# -- rubrics -----------------------------------------------------------------------------

value_name = st.from_regex(r"[A-Z][A-Za-z]{0,8}(_[A-Z][a-z]{0,6})?", fullmatch=True).filter(
    lambda s: "_vs_" not in s
)


@st.composite
def rubric_values(draw: st.DrawFn, name: str) -> RubricValue:
    return RubricValue(
        name=name,
        definition=draw(any_text),
        indicators=tuple(draw(st.lists(any_text, max_size=3))),
        contrasts=tuple(draw(st.lists(st.tuples(value_name, any_text), max_size=3))),
        extra=draw(_extras({"definition", "indicators", "contrasts"})),
    )


@st.composite
def rubrics(draw: st.DrawFn) -> Rubric:
    names = draw(st.lists(value_name, max_size=4, unique=True))
    rules = draw(
        st.lists(
            st.builds(DisambiguationRule, name=any_text, rule=any_text, extra=_extras({"rule"})),
            max_size=3,
            unique_by=lambda r: r.name,
        )
    )
    return Rubric(
        values=tuple(draw(rubric_values(n)) for n in names),
        disambiguation=tuple(rules),
        sections=draw(_extras({"values", "disambiguation", "_layout"})),
    )
