"""What an assistant can read besides calling tools: the guide to writing definitions, the
bundled example definitions, the default values rubric (packaged files), and each run's
analysis (asked of the API as the caller, like a tool)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources

from valuerank.default_rubric import default_rubric_text
from valuerank.mcp.calls import ApiRequest, ToolFailure, failure_of
from valuerank.mcp.gateway import Gateway

GUIDE_URI = "valuerank://guide/definitions"
RUBRIC_URI = "valuerank://rubrics/default"
EXAMPLE_PREFIX = "valuerank://examples/"
ANALYSIS_TEMPLATE = "valuerank://runs/{run_id}/analysis"
ANALYSIS_URI = re.compile(r"^valuerank://runs/([^/?#]+)/analysis$")


@dataclass(frozen=True)
class StaticResource:
    uri: str
    name: str
    title: str
    description: str
    mime_type: str

    def text(self) -> str:
        if self.uri == GUIDE_URI:
            return (
                resources.files("valuerank.mcp")
                .joinpath("definition_guide.md")
                .read_text(encoding="utf-8")
            )
        if self.uri == RUBRIC_URI:
            return default_rubric_text()
        name = self.uri.removeprefix(EXAMPLE_PREFIX)
        return resources.files("valuerank.demo").joinpath(name).read_text(encoding="utf-8")


def _examples() -> list[StaticResource]:
    files = sorted(
        f.name for f in resources.files("valuerank.demo").iterdir() if f.name.endswith(".md")
    )
    return [
        StaticResource(
            EXAMPLE_PREFIX + name,
            name.removesuffix(".md"),
            f"Example definition {name}",
            "A complete definition file (the one `valuerank demo` runs): a model for "
            "create_definition's `markdown`.",
            "text/markdown",
        )
        for name in files
    ]


def static_resources() -> list[StaticResource]:
    return [
        StaticResource(
            GUIDE_URI,
            "definition-guide",
            "Writing a definition",
            "The definition format: front matter, preamble, template with placeholders, "
            "dimensions with scored levels and phrasings, the 1-5 scale, matching rules, "
            "and how definitions become scenarios and runs.",
            "text/markdown",
        ),
        *_examples(),
        StaticResource(
            RUBRIC_URI,
            "default-values-rubric",
            "The default values rubric",
            "The values the judges name (the CLI's canonical values) with their definitions: "
            "what a run's judges read when the organisation has no rubric of its own.",
            "application/yaml",
        ),
    ]


async def read_run_analysis(gateway: Gateway, uri: str) -> str | None:
    """The run's analysis as JSON text, or None when `uri` is not a run's analysis."""
    match = ANALYSIS_URI.match(uri)
    if match is None:
        return None
    from urllib.parse import quote

    status, body = await gateway.send(
        ApiRequest("GET", f"/api/runs/{quote(match.group(1), safe='')}/analysis")
    )
    if status != 200 or not isinstance(body, dict) or body.get("success") is not True:
        raise failure_of(status, body)
    return json.dumps(body["data"], ensure_ascii=False, indent=1)


def read_static(uri: str) -> str:
    for resource in static_resources():
        if resource.uri == uri:
            return resource.text()
    raise ToolFailure(
        "RESOURCE_NOT_FOUND",
        f"no resource {uri}",
        hint="list the resources (and the template valuerank://runs/{run_id}/analysis)",
    )
