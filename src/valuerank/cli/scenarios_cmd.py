"""`valuerank scenarios …`: expand a definition version into scenario variants."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from valuerank.cli.common import (
    JsonOption,
    console,
    err_console,
    local_or_server,
    print_json,
    run,
    session,
    write_atomically,
)
from valuerank.client import definitions as remote
from valuerank.definitions import service
from valuerank.formats import serialize_scenarios

app = typer.Typer(help="Scenario variants generated from definitions.", no_args_is_help=True)


class Mode(StrEnum):
    first = "first"
    all = "all"
    random = "random"


@app.command("expand")
def expand(
    ref: str = typer.Argument(..., help="Definition version id (or a unique prefix)."),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="Scenarios file to write (default: stdout)."
    ),
    sample_percentage: float | None = typer.Option(
        None,
        "--sample-percentage",
        min=0.0,
        max=100.0,
        help="Keep only this percentage (nested: the 10% sample is inside the 50% one).",
    ),
    sample_seed: int | None = typer.Option(
        None,
        "--sample-seed",
        min=0,
        help="Seed of the sample (default: a random one, printed so the sample can be redrawn).",
    ),
    mode: Mode = typer.Option(
        Mode.first,
        "--mode",
        help="first: first option of each level (as the CLI); all: every option; "
        "random: one random option per level.",
    ),
    seed: int | None = typer.Option(None, "--seed", help="Seed of --mode random."),
    as_json: bool = JsonOption,
) -> None:
    """Write the scenarios YAML (exp-NNN.*.yaml) of a definition version. With
    VALUERANK_API_URL set, the server expands it."""

    async def _local() -> dict[str, Any]:
        async with session() as s:
            result = await service.expand_scenarios(
                s.conn,
                s.org_id,
                ref,
                mode=mode.value,
                seed=seed,
                sample_percentage=sample_percentage,
                sample_seed=sample_seed,
            )
        return {
            "total": result.total,
            "sample_seed": result.sample_seed,
            "scenario_ids": [sc.id for sc in result.file.scenarios],
            "yaml": serialize_scenarios(result.file),
        }

    body = {
        "definition_id": ref,
        "mode": mode.value,
        "seed": seed,
        "sample_percentage": sample_percentage,
        "sample_seed": sample_seed,
    }
    result = local_or_server(_local, lambda server: remote.expand(server, body), as_json=as_json)
    text: str = result["yaml"]
    if output is not None:
        run(_write(output, text), as_json=as_json)
    selected = len(result["scenario_ids"])
    if as_json:
        print_json(
            {
                "definition": ref,
                "mode": mode.value,
                "total": result["total"],
                "selected": selected,
                "sample_percentage": sample_percentage,
                "sample_seed": result["sample_seed"],
                "output": str(output) if output else None,
                "scenario_ids": result["scenario_ids"],
            }
        )
    elif output is None:
        console.file.write(text)
    else:
        note = ""
        if sample_percentage is not None:
            note = f" ({sample_percentage:g}% sample, seed {result['sample_seed']})"
        err_console.print(f"wrote {selected} of {result['total']} scenarios{note} to {output}")


async def _write(path: Path, text: str) -> None:
    write_atomically(path, text)  # in `run`: a failure is OUTPUT_NOT_WRITTEN, exit 1
