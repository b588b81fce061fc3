"""The shared YAML configuration: lossless, readable, and the CLI's bytes where it matters."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.cli_corpus import Corpus
from tests.conftest import examples

from valuerank.formats import FormatError
from valuerank.formats.yaml_io import (
    dump_cli,
    dump_readable,
    header_comment,
    load,
    render_header_comment,
    split_front_matter,
)

from .helpers import read
from .strategies import json_like

# Text that stresses block scalars: spaces before/after line breaks, leading and trailing
# blanks, indicators, tabs, and the line breaks YAML knows besides "\n".
tricky_text = st.text(alphabet=" \n\ta#:|>-'\"é\x85\u2028\u2029\r", max_size=30)


@settings(deadline=None, max_examples=examples(400))
@given(st.dictionaries(tricky_text, tricky_text | st.lists(tricky_text, max_size=2), max_size=3))
def test_readable_dump_is_lossless_on_tricky_text(data: dict[str, Any]) -> None:
    assert yaml.safe_load(dump_readable(data)) == data


@settings(deadline=None)
@given(json_like)
def test_both_dumps_are_lossless(data: Any) -> None:
    assert yaml.safe_load(dump_readable(data)) == data
    assert yaml.safe_load(dump_cli(data)) == data


_ordinary = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x85\u2028\u2029"),
    max_size=20,
)


@settings(deadline=None)
@given(st.dictionaries(_ordinary, _ordinary | st.text(alphabet="ab \n"), max_size=3))
def test_cli_dump_is_the_cli_call_for_ordinary_text(data: dict[str, str]) -> None:
    assert dump_cli(data) == yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def test_multi_line_strings_are_literal_blocks() -> None:
    assert dump_readable({"body": "a\n\nb"}) == "body: |-\n  a\n\n  b\n"
    assert dump_readable({"body": "a\n"}) == "body: |\n  a\n"
    assert dump_readable({"body": "a \nb"}) == "body: |-\n  a \n  b\n"  # plain PyYAML: "a \nb"
    assert dump_readable({"s": "one line " * 30}).count("\n") == 1  # never folded


def test_readable_dump_reproduces_the_cli_generated_file(cli_corpus: Corpus) -> None:
    path = cli_corpus.path("definitions")
    files = sorted(path.glob("exp-*.yaml"))
    assert [f.name for f in files] == [cli_corpus.expansion]
    for file in files:
        text = read(file)
        assert dump_readable(yaml.safe_load(text)) == text


def test_load_reports_lines_of_keys_and_items() -> None:
    loaded = load("a: 1\nb:\n  c:\n    - x\n    - y\n", line_offset=10)
    assert loaded.data == {"a": 1, "b": {"c": ["x", "y"]}}
    assert loaded.line("a") == 11
    assert loaded.line("b", "c") == 13
    assert loaded.line("b", "c", 1) == 15
    assert loaded.line("missing") is None


def test_load_names_the_line_of_a_syntax_error() -> None:
    with pytest.raises(FormatError) as info:
        load("a: 1\nb: [x\nc: 2\n", "f.yaml")
    assert info.value.source == "f.yaml"
    assert info.value.line is not None and info.value.line >= 2
    assert info.value.message.startswith("invalid YAML")


def test_header_comment() -> None:
    text = "# one\n#two\n\n# three\n\nkey: 1\n# not header\n"
    assert header_comment(text) == "# one\n#two\n\n# three"
    assert header_comment("key: 1\n") is None
    assert render_header_comment("first\n# second") == "# first\n# second\n\n"
    assert render_header_comment(None) == ""


def test_front_matter() -> None:
    front = split_front_matter("---\na: 1\n---\nbody\n")
    assert front is not None
    assert front.data == {"a": 1}
    assert front.body == "body\n"
    assert front.body_line == 4
    assert front.lines[("a",)] == 2
    assert split_front_matter("no front matter\n---\n") is None
    empty = split_front_matter("---\n---\n")
    assert empty is not None and empty.data == {}
