"""The UI's Jinja2 environment: package templates, autoescape always on, a few filters."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from valuerank import __version__
from valuerank.queue.dialect import as_utc
from valuerank.refs import short_id
from valuerank.web.progress_bar import segments, value_text

WEB_DIR = Path(__file__).parent
TEMPLATE_DIR = WEB_DIR / "templates"
STATIC_DIR = WEB_DIR / "static"


def fmt_mean(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def fmt_cost(value: float | None) -> str:
    return "–" if value is None else f"${value:.4f}"


def fmt_time(value: datetime | None) -> str:
    """A stored time (naive ones are UTC, as the database clock writes them) in UTC."""
    return "–" if value is None else as_utc(value).strftime("%Y-%m-%d %H:%M:%S UTC")


def fmt_seconds(value: float | None) -> str:
    if value is None:
        return "–"
    minutes, seconds = divmod(round(value), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {seconds:02d}s"


def fmt_number(value: float | None, digits: int = 3) -> str:
    """A statistic with `digits` decimals; "–" when undefined."""
    return "–" if value is None else f"{value:.{digits}f}"


def fmt_pvalue(value: float | None) -> str:
    return "–" if value is None else "< 0.001" if value < 0.001 else f"{value:.3f}"


# A model id's parts: each ends after its ':' or '/' (`openrouter:` `meta-llama/` `llama-3`).
_MODEL_ID_PART = re.compile(r"[^:/]*[:/]|[^:/]+")
# A part longer than this may also wrap at its hyphens: kept whole, it would not fit a phone.
LONG_PART = 30


def fmt_model_id(value: str) -> Markup:
    """A model id that wraps only after its ':' or '/': each part in a span that does not
    break (app.css `.model-id > span`), `<wbr/>` between them; the text is unchanged."""
    whole, long = Markup("<span>{}</span>"), Markup('<span class="long">{}</span>')
    parts = [
        (long if len(p) > LONG_PART else whole).format(p)
        for p in _MODEL_ID_PART.findall(str(value))
    ]
    # `<wbr/>`: well-formed XML too, for the tests that parse a table with ElementTree.
    return Markup('<span class="model-id">{}</span>').format(Markup("<wbr/>").join(parts))


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,  # every template, whatever its file name
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(mean=fmt_mean, cost=fmt_cost, when=fmt_time, duration=fmt_seconds)
    env.filters.update(num=fmt_number, pvalue=fmt_pvalue, short=short_id, model_id=fmt_model_id)
    env.globals["version"] = __version__
    # templates/_progress.html draws the segmented progress bars from these.
    env.globals.update(progress_segments=segments, progress_value_text=value_text)
    return env


templates = Jinja2Templates(env=_environment())
