"""`valuerank runs create`: a run of a definition version, checked, estimated and (unless
--no-start) started; on the database, or through a server's POST /api/queue/runs."""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape

from valuerank.cli import runs_judge_cmd
from valuerank.cli.common import JsonOption, console, local_or_server, print_json, session
from valuerank.client import ApiClient, ApiError
from valuerank.client import runs as remote_runs
from valuerank.errors import ValueRankError
from valuerank.queue.enqueue import priority_value
from valuerank.refs import short_id
from valuerank.runs.config import RunConfig, build_config


def create(
    definition: str = typer.Option(..., "--definition", "-d", help="Definition version id."),
    model: list[str] = typer.Option(
        ..., "--model", "-m", help="Target model `provider:model`; repeat for several."
    ),
    sample_percentage: float = typer.Option(
        100.0, "--sample-percentage", help="Share of the scenarios to run (nested sample)."
    ),
    sample_seed: int | None = typer.Option(
        None,
        "--sample-seed",
        min=0,
        help="Seed of the sample (default: a random one, stored on the run and shown).",
    ),
    samples_per_scenario: int = typer.Option(
        1, "--samples-per-scenario", help="Conversations per scenario and model."
    ),
    phrasings: str = typer.Option(
        "first",
        "--phrasings",
        help="Wordings of each sampled level combination: first (each level's first option), "
        "all (every option: one scenario per phrasing) or random (one option per level, "
        "seeded by the sample seed). As `scenarios expand --mode`.",
    ),
    scale_order: str = typer.Option(
        "as-written",
        "--scale-order",
        help="Order of the scale's numbered lines: as-written, reversed (each number shows "
        "the mirrored line's text; decisions are mapped back) or both (every scenario asked "
        "twice, as `<id>` and `<id>-reversed`).",
    ),
    judge: list[str] = typer.Option([], "--judge", help="Judge model; repeat for a consensus."),
    summary_model: str | None = typer.Option(
        None, "--summary-model", help="Model writing per-transcript rationales and the summary."
    ),
    temperature: float = typer.Option(0.0, "--temperature"),
    max_tokens: int = typer.Option(1000, "--max-tokens", help="Answer limit per turn."),
    followup_turns: int = typer.Option(
        1, "--followup-turns", help="Follow-up turns after the scenario (the CLI's default: 1)."
    ),
    system_prompt: str | None = typer.Option(None, "--system-prompt"),
    reuse_cache: bool = typer.Option(
        False,
        "--reuse-cache",
        help="Answer requests identical to any earlier run's (same model, messages, "
        "parameters, sample) from the organisation's response cache: no call, cost 0.",
    ),
    name: str = typer.Option("", "--name", help="A name for the run."),
    priority: str = typer.Option("normal", "--priority", help="low, normal, high or a number."),
    no_start: bool = typer.Option(False, "--no-start", help="Create only; start it later."),
    no_default_judges: bool = typer.Option(
        False,
        "--no-default-judges",
        help="Without --judge, no judges (not the organisation's defaults); likewise for "
        "the summary model.",
    ),
    allow_unknown_model: bool = typer.Option(
        False,
        "--allow-unknown-model",
        help="Use models the registry does not know (e.g. a new model, or one served by a "
        "local Ollama); they must still name a known provider.",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Create a run (and start it): one probe job per (scenario, model, sample).

    Every model (targets, judges, summary model) is checked first: a known provider, a valid
    scripted persona or local model file, a key for the provider, and a model the registry
    knows (`valuerank models list`) unless --allow-unknown-model. Any problem exits 1 naming
    the model and the valid choices, and nothing is written.

    With VALUERANK_API_URL set, the server there creates it (its POST /api/queue/runs, with
    the server's keys and registry), not the database."""

    level = int(priority) if priority.lstrip("-").isdigit() else priority
    # The API's body (POST /api/queue/runs): `runs create`'s settings, under its names.
    settings: dict[str, Any] = {
        "definition_id": definition,
        "models": list(model),
        "judges": list(judge),
        "summary_model": summary_model,
        "sample_percentage": sample_percentage,
        "sample_seed": sample_seed,
        "samples_per_scenario": samples_per_scenario,
        "phrasings": phrasings,
        "scale_order": scale_order,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "followup_turns": followup_turns,
        "system_prompt": system_prompt,
        "reuse_cache": reuse_cache,
        "name": name,
        "priority": level,
        "allow_unknown_models": allow_unknown_model,
        "use_default_judges": not no_default_judges,
        "start": not no_start,
    }

    def _config() -> RunConfig:
        return build_config(
            models=tuple(model),
            sample_percentage=sample_percentage,
            sample_seed=sample_seed,
            samples_per_scenario=samples_per_scenario,
            phrasings=phrasings,
            scale_order=scale_order,
            judge_models=tuple(judge),
            summary_model=summary_model,
            temperature=temperature,
            max_tokens=max_tokens,
            followup_turns=followup_turns,
            system_prompt=system_prompt,
            reuse_cache=reuse_cache,
        )

    async def _go() -> dict[str, Any]:
        # Here, not with the module: the credentials, the registry and the cost estimate are
        # for creating a run on the database only.
        from valuerank.pipeline.launch import launch_run

        config = _config()
        async with session() as s:
            launched = await launch_run(
                s.conn,
                s.org_id,
                definition,
                config,
                name=name,
                priority=priority_value(level),
                start=not no_start,
                allow_unknown_models=allow_unknown_model,
                use_org_defaults=not no_default_judges,
            )
        return launched.to_dict()

    def _remote(client: ApiClient) -> dict[str, Any]:
        # The settings checked here first, as on the database: the same INVALID_INPUT (the
        # API's body check says VALIDATION_ERROR in its own terms); the server checks again.
        try:
            _config()
        except ValueRankError as exc:
            raise ApiError(exc.message, code=exc.code, hint=exc.hint) from None
        return remote_runs.create_run(client, settings)

    data = local_or_server(_go, _remote, as_json=as_json)
    if as_json:
        print_json(data)
        return
    cost = data["estimate"]["cost_usd"]
    unknown = data["estimate"]["unknown_price_models"]
    console.print(
        f"run [bold]{data['id']}[/] ({data['status']}): {data['scenarios']} of "
        f"{data['total_scenarios']} scenarios × {len(data['models'])} models → {data['jobs']} jobs"
        f" (sample {data['sample_percentage']:g}%, seed {data['sample_seed']})"
    )
    if (data["phrasings"], data["scale_order"]) != ("first", "as-written"):
        console.print(f"asked in phrasings {data['phrasings']}, scale order {data['scale_order']}")
    bound = data["estimate"].get("upper_bound", True)  # an older server sends none: a bound
    estimate = "unknown" if cost is None else f"{'≤' if bound else '≈'} ${cost:.4f}"
    roles = sorted({m["role"] for m in data["estimate"]["models"]} - {"probe"})
    learned = [
        f"{m['model']} from {m['learned_from']} earlier transcripts"
        for m in data["estimate"]["models"]
        if m.get("learned_from")
    ]
    console.print(
        f"estimated cost: {estimate}"
        + (f", {' and '.join(roles)} calls included" if roles else "")
        + (f" (no price for {', '.join(unknown)})" if unknown else ""),
        soft_wrap=True,
    )
    if learned:
        console.print(
            f"answers sized as before: {'; '.join(learned)} (the rest at their max tokens)",
            soft_wrap=True,
            highlight=False,
        )
    for line in runs_judge_cmd.defaults_lines(data):
        console.print(line, highlight=False, soft_wrap=True)
    rubric = data.get("rubric")
    if rubric is not None:
        console.print(f"judges read the values rubric {_rubric_line(rubric)}")
    if data["status"] == "pending":
        console.print(f"not started: valuerank runs start {short_id(data['id'])}")
    else:
        console.print(f"watch it: {runs_judge_cmd.wait_command(short_id(data['id']))}")


def _rubric_line(rubric: dict[str, Any]) -> str:
    from valuerank.default_rubric import describe_rubric

    own = " (import your own with `valuerank rubrics import FILE.yaml`)"
    hint = own if rubric["default"] else ""
    return escape(describe_rubric(rubric) + hint)


def register(app: typer.Typer) -> None:
    app.command("create")(create)
