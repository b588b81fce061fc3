"""The model registry and provider tools (writes are for admins of the default organisation:
the API refuses anyone else with FORBIDDEN)."""

from __future__ import annotations

from valuerank.mcp.spec import ToolSpec

MODEL_ROUTE = "/api/models/{model_id}"

MODEL_TOOLS = (
    ToolSpec(
        "list_llm_providers",
        "Every provider: paused or not, its rate-limit state, limits, concurrency caps and "
        "the organisation's queued and running jobs.",
        "GET",
        "/api/providers",
    ),
    ToolSpec(
        "list_llm_models",
        "The registered models by provider then name, with weights, capabilities and prices "
        "(USD per million tokens; null: unknown).",
        "GET",
        "/api/models",
    ),
    ToolSpec(
        "get_llm_model",
        "One registered model by id (`provider:name`).",
        "GET",
        MODEL_ROUTE,
    ),
    ToolSpec(
        "create_llm_model",
        "Admins: register a model the catalog lacks, or change the given fields of a "
        "registered one (like `valuerank models add`).",
        "PUT",
        MODEL_ROUTE,
        admin=True,
    ),
    ToolSpec(
        "update_llm_model",
        "Admins: change the given fields of a registered model (weight, active, prices, "
        "name, category).",
        "PATCH",
        MODEL_ROUTE,
        admin=True,
    ),
    ToolSpec(
        "deprecate_llm_model",
        "Admins: mark a model inactive: new runs refuse it, past runs keep their results.",
        "PATCH",
        MODEL_ROUTE,
        admin=True,
        fixed_body={"active": False},
        drop_arguments=("*body",),
    ),
    ToolSpec(
        "reactivate_llm_model",
        "Admins: mark a deprecated model active again.",
        "PATCH",
        MODEL_ROUTE,
        admin=True,
        fixed_body={"active": True},
        drop_arguments=("*body",),
    ),
    ToolSpec(
        "set_provider_limits",
        "Admins: create or replace a provider's (or, with `model`, one model's) rate "
        "limits, shared by every worker: requests and tokens per minute, spacing, adaptive "
        "concurrency.",
        "PUT",
        "/api/providers/{provider}/limits",
        admin=True,
    ),
)
