"""The report's HTML from its parts (pure): the template with autoescape on, the figures
(already-rendered SVG) marked safe, every other text escaped.

The file stands alone: its CSS is inline (print CSS included), its figures are inline SVG,
there is no script and nothing that loads from a network, so it opens offline and prints.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from valuerank import __version__
from valuerank.analysis import CODE_VERSION
from valuerank.refs import short_id
from valuerank.report import sections
from valuerank.report.distribution_svg import distribution_svg

TEMPLATE_DIR = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class RunHeader:
    """What the report's header says about a run."""

    id: str
    name: str
    status: str
    created_at: str
    finished_at: str | None
    models: Sequence[str]
    judge_models: Sequence[str] = ()
    synthetic: bool = False
    origin: str = ""
    definition_id: str | None = None
    definition_name: str | None = None
    definition_version: str | None = None

    @property
    def short_id(self) -> str:
        return short_id(self.id)


@dataclass(frozen=True)
class ComparisonPart:
    """The comparison of the run with a baseline run (`compare_runs`' result JSON)."""

    baseline: RunHeader
    comparison_id: str
    result: Mapping[str, Any]


@dataclass(frozen=True)
class ReportDocument:
    run: RunHeader
    basic: Mapping[str, Any]
    generated_at: datetime
    # Inline SVG by figure name (report/figures.py); a missing figure is left out.
    figures: Mapping[str, str] = field(default_factory=dict)
    comparison: ComparisonPart | None = None
    version: str = __version__
    code_version: str = CODE_VERSION

    def figure_bytes(self) -> dict[str, int]:
        """Each figure's size in the file (what `report --json` and the API's header say)."""
        return {name: len(svg.encode("utf-8")) for name, svg in self.figures.items()}


def fmt_number(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def fmt_pvalue(value: float | None) -> str:
    return "–" if value is None else "< 0.001" if value < 0.001 else f"{value:.3f}"


def fmt_when(value: str | None) -> str:
    """An ISO-8601 time of the JSON as `YYYY-MM-DD HH:MM UTC` (as given when unreadable)."""
    if not value:
        return "–"
    try:
        return datetime.fromisoformat(value).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return value


def raw(value: Any) -> str:
    """A number exactly as the analysis JSON has it (the cells' `data-value`)."""
    return "" if value is None else json.dumps(value)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=fmt_number, pvalue=fmt_pvalue, raw=raw, when=fmt_when)
    return env


_ENV = _environment()


def render_report(doc: ReportDocument) -> str:
    """The whole report as one HTML string."""
    basic = doc.basic
    decisions = sections.decision_rows(basic)
    scale = sections.scale_codes(basic)
    result = doc.comparison.result if doc.comparison is not None else None
    methods, variants = sections.methods(basic.get("methodsUsed") or {})
    compare_methods = sections.methods(result.get("methodsUsed") or {})[0] if result else []
    # The SVGs escape their own texts (report/svg.py, distribution_svg): safe to embed.
    figures = {name: Markup(svg) for name, svg in doc.figures.items()}
    figures["decisions"] = Markup(distribution_svg(decisions, scale))
    return _ENV.get_template("report.html").render(
        doc=doc,
        run=doc.run,
        basic=basic,
        meta=basic.get("meta") or {},
        basis=sections.sample_basis(basic),
        judged=sections.judged(basic),
        sensitivity=sections.by_model(sections.sensitivity_rows(basic)),
        win_rates=sections.win_rate_rows(basic),
        decisions=decisions,
        scale=scale,
        labelled=any(label for _, label in scale),
        agreement=sections.agreement_rows(basic),
        overall_agreement=(basic.get("modelAgreement") or {}).get("overallAgreement"),
        outliers=(basic.get("modelAgreement") or {}).get("outlierModels") or [],
        dimensions=sections.dimension_rows(basic),
        comparison=doc.comparison,
        comparison_rows=sections.comparison_rows(result) if result else [],
        value_deltas=sections.value_delta_rows(result) if result else [],
        caveats=sections.caveats(basic, synthetic=doc.run.synthetic, comparison=result),
        methods=methods,
        variants=variants,
        compare_methods=compare_methods,
        how={
            name: sections.how(
                (result or {}).get("methodsUsed") or {}
                if name == "comparison"
                else basic.get("methodsUsed") or {},
                name,
            )
            for name in sections.HOW
        },
        figures=figures,
        generated=doc.generated_at.strftime("%Y-%m-%d %H:%M UTC"),
    )
