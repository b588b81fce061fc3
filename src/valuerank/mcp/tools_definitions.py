"""The definition tools: list, read, create, fork, validate, preview scenarios."""

from __future__ import annotations

from valuerank.mcp.spec import ToolSpec, Unsupported

DEFINITION_TOOLS = (
    ToolSpec(
        "list_definitions",
        "Definition versions, newest first, each with its dimensions (not its content). "
        "Filters: `name`, `label`; pass `next_cursor` back as `cursor` for the next page.",
        "GET",
        "/api/definitions",
    ),
    ToolSpec(
        "get_definition",
        "One definition version (id or unique prefix): its content (preamble, template, "
        "dimensions with levels and phrasings) and its matching rules.",
        "GET",
        "/api/definitions/{definition_id}",
    ),
    ToolSpec(
        "create_definition",
        "Store a definition as a new lineage (`v1` unless `label` says otherwise), from its "
        "fields (name, preamble, template, dimensions) or from `markdown` (the CLI's file; "
        "see the resource valuerank://guide/definitions). The same content under the same "
        "name answers the stored version with `created: false`.",
        "POST",
        "/api/definitions",
    ),
    ToolSpec(
        "fork_definition",
        "A child version of a definition: with `changes` (some fields replaced), with "
        "`markdown` (a whole new file), or a plain copy.",
        "POST",
        "/api/definitions/{definition_id}/fork",
    ),
    ToolSpec(
        "validate_definition",
        "Check a definition file (`markdown`) without storing it: `valid`, and when it is "
        "not, the parser's error with its line and a hint.",
        "POST",
        "/api/definitions/validate",
    ),
    ToolSpec(
        "delete_definition",
        "Not available: ValueRank keeps every definition version (runs refer to them); "
        "this tool always answers the error DEFINITION_DELETE_UNSUPPORTED.",
        "DELETE",
        "/api/definitions/{definition_id}",
        unsupported=Unsupported(
            "DEFINITION_DELETE_UNSUPPORTED",
            "ValueRank cannot delete definition versions: they are immutable once stored, "
            "and runs and forks refer to them",
            "fork the definition to change it (fork_definition); delete its runs with delete_run",
        ),
    ),
    ToolSpec(
        "generate_scenarios_preview",
        "The scenarios a definition version expands to, in file order, a page at a time "
        "(each with its id, subject and body); with `sample_percentage` (and `sample_seed`) "
        "only the ones a run with that sample would send.",
        "GET",
        "/api/definitions/{definition_id}/scenarios",
    ),
)
