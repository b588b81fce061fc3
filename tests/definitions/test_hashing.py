"""Content hash of a definition."""

from __future__ import annotations

import dataclasses
import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import examples

from valuerank.definitions.hashing import canonical_json, content_hash
from valuerank.formats.definition_model import Definition, Dimension, Level

FIXED = Definition(
    name="exp-café",
    template="Use [A].",
    dimensions=(Dimension("A", (Level(1, "low", ("tiny", "small")),)),),
    category="A vs B",
    matching_rules=None,
    extra_front_matter=(("z", 1), ("a", [True, None])),
)

FIXED_JSON = (
    '{"base_id":"scenario_001","category":"A vs B","dimensions":[{"levels":[{"label":"low",'
    '"options":["tiny","small"],"score":1}],"name":"A"}],"extra_front_matter":[["z",1],'
    '["a",[true,null]]],"matching_rules":null,"name":"exp-café","preamble":"",'
    '"template":"Use [A]."}'
)


def test_canonical_json_is_pinned() -> None:
    assert canonical_json(FIXED.to_dict()) == FIXED_JSON


def test_fixed_hash() -> None:
    expected = "915cd9b2b335a1b3081ef32858d56953e295bc92512465bb315c2fdaf652f306"
    assert content_hash(FIXED) == expected
    assert hashlib.sha256(FIXED_JSON.encode("utf-8")).hexdigest() == expected


def test_non_ascii_is_not_escaped() -> None:
    assert "café" in canonical_json(FIXED.to_dict())
    assert "\\u" not in canonical_json(FIXED.to_dict())


def test_key_order_does_not_matter() -> None:
    data = FIXED.to_dict()
    assert canonical_json(dict(reversed(list(data.items())))) == canonical_json(data)


def test_round_trip_and_changes() -> None:
    assert content_hash(Definition.from_dict(FIXED.to_dict())) == content_hash(FIXED)
    assert content_hash(dataclasses.replace(FIXED, template="Use [A]!")) != content_hash(FIXED)
    assert content_hash(dataclasses.replace(FIXED, matching_rules="")) != content_hash(FIXED)
    swapped = dataclasses.replace(
        FIXED, dimensions=(Dimension("A", (Level(1, "low", ("small", "tiny")),)),)
    )
    assert content_hash(swapped) != content_hash(FIXED)
    assert len(content_hash(FIXED)) == 64


definitions = st.builds(
    Definition,
    name=st.text(max_size=5),
    template=st.text(max_size=10),
    dimensions=st.lists(
        st.builds(
            Dimension,
            name=st.text(max_size=3),
            levels=st.lists(
                st.builds(
                    Level,
                    score=st.integers(1, 5),
                    label=st.text(max_size=3),
                    options=st.lists(st.text(max_size=3), max_size=2).map(tuple),
                ),
                max_size=2,
            ).map(tuple),
        ),
        max_size=2,
    ).map(tuple),
    preamble=st.text(max_size=5),
    matching_rules=st.one_of(st.none(), st.text(max_size=5)),
)


@settings(max_examples=examples(200), deadline=None)
@given(definitions, definitions)
def test_equal_content_iff_equal_hash(a: Definition, b: Definition) -> None:
    assert content_hash(a) == content_hash(Definition.from_dict(a.to_dict()))
    assert (content_hash(a) == content_hash(b)) == (a.to_dict() == b.to_dict())
