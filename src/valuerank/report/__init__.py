"""A run's findings as one self-contained HTML file (`valuerank report`, the analysis page's
download): inline CSS and SVG, no script, no network, printable.

`sections` turns the analysis JSON (and a comparison's) into the rows the report shows (pure);
`distribution_svg` draws the decision distributions (pure); `render` fills the template
(pure); `figures` draws the analysis package's matplotlib figures (blocking, CPU only);
`loading` gathers a run, its cached analysis and the optional baseline comparison (async I/O).
"""

from valuerank.report.errors import NoTranscriptsError
from valuerank.report.render import ComparisonPart, ReportDocument, RunHeader, render_report

__all__ = ["ComparisonPart", "NoTranscriptsError", "ReportDocument", "RunHeader", "render_report"]
