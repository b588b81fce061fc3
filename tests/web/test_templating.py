"""The templates' `model_id` filter: a model id that wraps only after its ':' or '/'."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from valuerank.web.templating import LONG_PART, fmt_model_id


def parts(html: str) -> list[tuple[str | None, str]]:
    root = ET.fromstring(html)  # well-formed: the pages' tests parse tables with ElementTree
    assert root.get("class") == "model-id"
    return [(span.get("class"), span.text or "") for span in root.findall("span")]


def test_a_model_id_breaks_only_after_its_separators() -> None:
    html = str(fmt_model_id("openrouter:meta-llama/llama-3.1-405b-instruct"))
    assert parts(html) == [
        (None, "openrouter:"),
        (None, "meta-llama/"),
        (None, "llama-3.1-405b-instruct"),
    ]
    assert html.count("<wbr/>") == 2
    assert re.sub(r"<[^>]+>", "", html) == "openrouter:meta-llama/llama-3.1-405b-instruct"
    assert parts(str(fmt_model_id("plain"))) == [(None, "plain")]


def test_a_part_too_long_for_a_phone_may_wrap_and_text_is_escaped() -> None:
    long = "x" * (LONG_PART + 1)
    assert parts(str(fmt_model_id(f"a:{long}"))) == [(None, "a:"), ("long", long)]
    html = str(fmt_model_id("<script>:&x"))
    assert "<script>" not in html and parts(html) == [(None, "<script>:"), (None, "&x")]
