"""The report's renderer on synthetic analyses: a file that stands alone (no script, nothing
from a network), every sensitivity figure of the analysis JSON on the page, texts escaped,
the sections that depend on judges and on a baseline, the caveats and methods."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any

import pytest
from markupsafe import escape

from valuerank.analysis import CODE_VERSION, analyze_basic, compare
from valuerank.analysis.synthetic import SyntheticSpec, synthetic_run
from valuerank.report import ComparisonPart, ReportDocument, RunHeader, render_report
from valuerank.report.figures import report_figures

EVIL = "<script>alert('x')</script>"
HEADER = RunHeader(
    id="0193a1b2-c3d4-7e5f-8a9b-0123456789ab",
    name=f"run {EVIL}",
    status="completed",
    created_at="2026-01-02 10:00 UTC",
    finished_at="2026-01-02 10:05 UTC",
    models=["provider:model-00", "provider:model-01", "provider:model-02"],
    synthetic=True,
    definition_id="def-1",
    definition_name="Whistleblower",
    definition_version="v2",
)


class Page(HTMLParser):
    """Every element's attributes, the texts of cells that carry a `data-field`, and the
    tags seen."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.attrs: list[tuple[str, dict[str, str | None]]] = []
        self.cells: dict[tuple[str, str, str], tuple[dict[str, str | None], str]] = {}
        self._row: dict[str, str | None] = {}
        self._cell: dict[str, str | None] | None = None
        self._text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.attrs.append((tag, found))
        if tag == "tr":
            self._row = found
        elif tag == "td" and "data-field" in found:
            self._cell, self._text = found, []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            key = (
                str(self._row.get("data-model")),
                str(self._row.get("data-dimension") or self._row.get("data-value-name")),
                str(self._cell["data-field"]),
            )
            self.cells[key] = (self._cell, "".join(self._text).strip())
            self._cell = None


def _doc(basic: dict[str, Any], **changes: Any) -> ReportDocument:
    doc = ReportDocument(
        run=HEADER,
        basic=basic,
        generated_at=datetime(2026, 1, 3, 9, 30, tzinfo=UTC),
        figures=report_figures(basic),
    )
    return replace(doc, **changes)


@pytest.fixture(scope="module")
def basic() -> dict[str, Any]:
    return analyze_basic(synthetic_run(SyntheticSpec(models=3, scenarios=40, seed=3)))


@pytest.fixture(scope="module")
def html(basic: dict[str, Any]) -> str:
    return render_report(_doc(basic))


def test_the_file_loads_nothing_and_runs_nothing(html: str) -> None:
    page = Page(html)
    tags = {tag for tag, _ in page.attrs}
    assert "script" not in tags and "link" not in tags and "iframe" not in tags
    assert "<script" not in html  # not even escaped-away inline script: no script at all
    assert "@import" not in html and "url(http" not in html and "@font-face" not in html
    for tag, attrs in page.attrs:
        for name in ("src", "href", "xlink:href", "action", "poster"):
            value = attrs.get(name)
            if value is not None:
                assert not value.startswith(("http:", "https:", "//")), (tag, name, value)
                assert value.startswith(("#", "data:")), (tag, name, value)
    # The figures are inline SVG, each with its accessible label.
    labels = [a.get("aria-label") for tag, a in page.attrs if tag == "svg"]
    assert "Value sensitivity: decision points per score unit, 95% intervals" in labels
    assert any(label and label.startswith("Decision distribution") for label in labels)


def test_every_sensitivity_figure_of_the_analysis_is_on_the_page(
    basic: dict[str, Any], html: str
) -> None:
    cells = Page(html).cells
    checked = 0
    for model, dims in basic["valueSensitivity"].items():
        for dim, entry in dims.items():
            attrs, text = cells[(model, dim, "coefficient")]
            assert json.loads(str(attrs["data-value"])) == entry["coefficient"]
            assert text == f"{entry['coefficient']:.2f}"
            ci_attrs, ci_text = cells[(model, dim, "ci95")]
            assert json.loads(str(ci_attrs["data-lower"])) == entry["ci95"][0]
            assert json.loads(str(ci_attrs["data-upper"])) == entry["ci95"][1]
            assert ci_text == f"{entry['ci95'][0]:.2f} – {entry['ci95'][1]:.2f}"
            p_attrs, _ = cells[(model, dim, "pValue")]
            assert json.loads(str(p_attrs["data-value"])) == entry["pValue"]
            assert cells[(model, dim, "n")][1] == str(entry["n"])
            checked += 1
    assert checked == 3 * 4
    # The finding in words, with the value's name, for each row.
    assert "a stronger Dim1 stake moves provider:model-00 towards" in html


def test_win_rates_decisions_and_agreement_come_from_the_json(
    basic: dict[str, Any], html: str
) -> None:
    cells = Page(html).cells
    for model, stats in basic["perModel"].items():
        for value, entry in stats["values"].items():
            attrs, text = cells[(model, value, "winRate")]
            assert json.loads(str(attrs["data-value"])) == entry["winRate"]
            assert text == f"{entry['winRate']:.2f}"
    assert 'id="win-rates"' in html and 'id="no-win-rates"' not in html
    for model, counts in basic["visualizationData"]["decisionDistribution"].items():
        for code, count in counts.items():
            assert f'<td class="num" data-code="{code}">{count}</td>' in html, (model, code)
    overall = basic["modelAgreement"]["overallAgreement"]
    assert f'<strong id="overall-agreement">{overall:.2f}</strong>' in html


def test_texts_are_escaped(html: str) -> None:
    assert EVIL not in html
    assert "run &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html


def test_header_caveats_methods_and_versions(basic: dict[str, Any], html: str) -> None:
    assert "Whistleblower v2" in html and HEADER.id in html
    codes = {a.get("data-code") for tag, a in Page(html).attrs if tag == "li"}
    assert {"SAMPLE_BASIS", "SYNTHETIC_MODELS"} <= codes
    assert {w["code"] for w in basic["warnings"]} <= codes
    for key in basic["methodsUsed"]:
        if key != "variants":
            assert f"<th>{key}</th>" in html
    assert f'<span id="code-version">{CODE_VERSION}</span>' in html
    # Each figure's explanation quotes the method the analysis recorded (and the table too).
    assert html.count(str(escape(basic["methodsUsed"]["valueSensitivity"]))) == 2
    assert 'id="comparison-section"' not in html  # no baseline asked


def test_without_judges_the_win_rates_say_why(basic: dict[str, Any]) -> None:
    unjudged = analyze_basic(synthetic_run(SyntheticSpec(models=2, scenarios=30, judged=False)))
    html = render_report(_doc(unjudged, run=replace(HEADER, synthetic=False)))
    assert 'id="no-win-rates"' in html and 'id="win-rates"' not in html
    codes = {a.get("data-code") for tag, a in Page(html).attrs if tag == "li"}
    assert "NO_VALUE_JUDGMENTS" in codes and "SYNTHETIC_MODELS" not in codes


def test_the_comparison_with_a_baseline(basic: dict[str, Any]) -> None:
    spec = SyntheticSpec(models=3, scenarios=40, seed=3)
    result = compare(synthetic_run(replace(spec, seed=4)), synthetic_run(spec), bootstrap=200)
    baseline = replace(HEADER, id="0193a1b2-0000-7000-8000-000000000000", name="baseline")
    part = ComparisonPart(baseline=baseline, comparison_id="cmp-1", result=result)
    figures = report_figures(basic, None, result)
    html = render_report(_doc(basic, comparison=part, figures=figures))
    assert 'id="comparison-section"' in html and 'id="fig-forest"' in html
    cells = Page(html).cells
    for model, entry in result["perModel"].items():
        attrs, text = cells[(model, "None", "delta")]
        assert json.loads(str(attrs["data-value"])) == entry["delta"]
        assert text == f"{entry['delta']:.2f}"
    assert f"<th>{'deltaInterval'}</th>" in html  # the comparison's own methods


def test_degenerate_runs_render_with_dashes_and_their_warnings() -> None:
    refused = analyze_basic(synthetic_run(SyntheticSpec(models=2, scenarios=3, refusal_rate=1.0)))
    html = render_report(_doc(refused))
    cells = Page(html).cells
    for model, dims in refused["valueSensitivity"].items():
        for dim in dims:
            assert cells[(model, dim, "coefficient")][1] == "–"
    codes = {a.get("data-code") for tag, a in Page(html).attrs if tag == "li"}
    assert {"NO_DECISIONS", "UNDEFINED_CORRELATION"} <= codes
    assert "no decided transcripts" in html  # the distribution bars say it in words
    single = analyze_basic(synthetic_run(SyntheticSpec(models=1, scenarios=2)))
    assert "Agreement needs at least two models." in render_report(_doc(single))
