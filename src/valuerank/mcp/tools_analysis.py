"""The result tools: a run's summary, dimensions, value sensitivity; transcripts; comparisons.

The three analysis tools read the run's basic analysis (`valuerank analyze RUN --json`'s
`analysis`, computed on first read and cached) and return its parts; the whole of it is the
resource valuerank://runs/{run_id}/analysis.
"""

from __future__ import annotations

from valuerank.mcp.spec import ToolSpec

ANALYSIS_ROUTE = "/api/runs/{run_id}/analysis"
COMPARISON_ROUTE = "/api/comparisons/{comparison_id}"
# Arguments of the analysis route that the summary tools do not offer (the deep analysis is
# queued work, the timings are for debugging).
ANALYSIS_ONLY = ("deep", "debug")

ANALYSIS_TOOLS = (
    ToolSpec(
        "get_run_summary",
        "The run's results per model (decisions, win rates of values, refusals), how far "
        "the models agree, the most contested scenarios, the analysis' warnings and what it "
        "counted (`meta`): the numbers of `valuerank analyze RUN --json`.",
        "GET",
        ANALYSIS_ROUTE,
        pick=(
            "perModel",
            "modelAgreement",
            "mostContestedScenarios",
            "scaleLabels",
            "warnings",
            "meta",
            "sample",
            "computedAt",
        ),
        drop_arguments=ANALYSIS_ONLY,
    ),
    ToolSpec(
        "get_dimension_analysis",
        "How each dimension of the definition moves the models' decisions (effect sizes, "
        "variance explained, the most divisive dimensions).",
        "GET",
        ANALYSIS_ROUTE,
        pick=("dimensionAnalysis", "scaleLabels", "meta"),
        drop_arguments=ANALYSIS_ONLY,
    ),
    ToolSpec(
        "get_value_sensitivity",
        "Per model and dimension: decision points per unit of the dimension's level score "
        "(coefficient, 95 % interval, p-value, n), and the robustness of each model's "
        "ranking of values.",
        "GET",
        ANALYSIS_ROUTE,
        pick=("valueSensitivity", "robustness", "scaleLabels", "meta"),
        drop_arguments=ANALYSIS_ONLY,
    ),
    ToolSpec(
        "get_transcript",
        "One transcript: the conversation verbatim, its turns with tokens and latency, the "
        "decision, cost, consensus and every judge's reading.",
        "GET",
        "/api/transcripts/{transcript_id}",
    ),
    ToolSpec(
        "search_transcripts",
        "The organisation's transcripts (without their text), filtered by `run_id`, "
        "`model`, `scenario`, `decision`, full text `query`, consensus `agreement` or "
        "`disagreement`; pass `next_cursor` back as `cursor` for the next page.",
        "GET",
        "/api/transcripts",
        renames={"run_id": "run", "query": "q"},
    ),
    ToolSpec(
        "compare_runs",
        "Compare two runs (`baseline_run_id`, `comparison_run_id`): queues the comparison "
        "and waits up to `wait_seconds` (default 20) for its deltas, tests and most "
        "divergent scenarios; or, with `comparison_id`, reads a comparison queued before.",
        "POST",
        "/api/runs/compare",
        answers_as=COMPARISON_ROUTE,
        optional=("baseline_run_id", "comparison_run_id"),  # not with `comparison_id`
        arguments={
            "comparison_id": {
                "type": "string",
                "description": "Read this comparison instead of queueing one.",
            },
            "wait_seconds": {
                "type": "number",
                "minimum": 0,
                "maximum": 120,
                "description": "How long to wait for the comparison (default 20).",
            },
        },
    ),
)
