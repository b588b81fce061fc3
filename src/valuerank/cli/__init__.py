"""The `valuerank` command line: Typer commands over the same services the API uses."""

from __future__ import annotations

import typer

from valuerank import __version__
from valuerank.cli import (
    analyze_cmd,
    credentials_cmd,
    db_cmd,
    definitions_cmd,
    demo_cmd,
    export_cmd,
    formats_cmd,
    import_cmd,
    maintenance_cmd,
    models_cmd,
    orgs_cmd,
    queue_cmd,
    rubrics_cmd,
    runs_cmd,
    scenarios_cmd,
    serve_cmd,
    tokens_cmd,
    users_cmd,
    validation_cmd,
    webhooks_cmd,
    worker_cmd,
)

app = typer.Typer(
    name="valuerank",
    help="Measure how AI models prioritise human values in moral dilemmas.\n\n"
    "Data lives in VALUERANK_DATABASE_URL (default: sqlite:///./valuerank.db).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
app.add_typer(db_cmd.app, name="db")
app.add_typer(formats_cmd.app, name="formats")
app.add_typer(definitions_cmd.app, name="definitions")
app.add_typer(scenarios_cmd.app, name="scenarios")
app.add_typer(rubrics_cmd.app, name="rubrics")
app.add_typer(runs_cmd.app, name="runs")
app.add_typer(export_cmd.app, name="export")
app.add_typer(import_cmd.app, name="import")
app.add_typer(queue_cmd.app, name="queue")
app.add_typer(maintenance_cmd.app, name="maintenance")
app.add_typer(credentials_cmd.app, name="credentials")
app.add_typer(models_cmd.app, name="models")
app.add_typer(webhooks_cmd.app, name="webhooks")
app.add_typer(orgs_cmd.app, name="orgs")
app.add_typer(users_cmd.app, name="users")
app.add_typer(tokens_cmd.app, name="tokens")
app.add_typer(validation_cmd.app, name="validation")
worker_cmd.register(app)
serve_cmd.register(app)
demo_cmd.register(app)
analyze_cmd.register(app)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"valuerank {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    """ValueRank."""


__all__ = ["app"]
