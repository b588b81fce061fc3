"""The `valuerank` command line: Typer commands over the same services the API uses.

Each command's module is imported when the command runs, not at start-up: `valuerank runs
status` loads the database and the runs, never the statistics stack (scipy, scikit-learn,
matplotlib) that `valuerank analyze` needs, so a short command starts in a fraction of the
time and memory. `valuerank --help`, and completing a command's name, use the commands'
summaries without importing any.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any, NamedTuple

import typer
from typer.core import TyperCommand, TyperGroup

from valuerank import __version__
from valuerank.cli.help_text import reflow_command
from valuerank.cli.invoked import note_command


class Entry(NamedTuple):
    """A top-level command: the module under valuerank.cli defining it (a Typer `app` for a
    group, or `register(app)` for commands), and what the root's `--help` lists for it."""

    module: str
    # The first paragraph of the command's own help, so that `valuerank --help` need not
    # import every command's module (seconds) to list them; a test holds the two equal.
    summary: str


# Every top-level command, in the order `--help` lists them.
COMMANDS: dict[str, Entry] = {
    "worker": Entry(
        "worker_cmd",
        "Claim and run jobs until stopped (SIGTERM/SIGINT), then finish them and exit 0.",
    ),
    "serve": Entry(
        "serve_cmd", "Serve the web UI and the JSON API. Prints the URL to open and how to sign in."
    ),
    "mcp": Entry(
        "mcp_cmd",
        "Serve the MCP tools and resources over stdio, for an AI assistant (Claude Code…).",
    ),
    "demo": Entry(
        "demo_cmd", "Run a sampled example run on the embedded default and show the results."
    ),
    "analyze": Entry(
        "analyze_cmd",
        "Findings of a run: value profiles, agreement, dimension effects (cached by input).",
    ),
    "compare": Entry(
        "analyze_cmd",
        "Compare two runs paired on scenario identity: deltas, intervals, tests, divergences.",
    ),
    "report": Entry(
        "report_cmd",
        "A run's findings as one self-contained HTML file (inline SVG, no network, printable).",
    ),
    "db": Entry("db_cmd", "Database schema: upgrade and inspect."),
    "formats": Entry("formats_cmd", "The original ValueRank CLI's file formats."),
    "definitions": Entry(
        "definitions_cmd", "Versioned scenario definitions: import, fork, compare, export."
    ),
    "scenarios": Entry("scenarios_cmd", "Scenario variants generated from definitions."),
    "rubrics": Entry("rubrics_cmd", "Values rubrics (values_rubric.yaml), versioned."),
    "transcripts": Entry(
        "transcripts_cmd",
        "Transcripts read by people: record a reading, list them, the next one to read.",
    ),
    "runs": Entry("runs_cmd", "Runs: send a definition's scenarios to models."),
    "export": Entry(
        "export_cmd",
        "Export runs, definitions and the workspace as the original CLI's files (ZIP/.md),"
        " and a run as a table (CSV, JSON Lines, Parquet).",
    ),
    "import": Entry(
        "import_cmd",
        "Import the original CLI's files (run folders, transcripts, run ZIPs) and workspaces,"
        " and tables of dilemmas.",
    ),
    "queue": Entry("queue_cmd", "The job queue: status, pause/resume, enqueue, retry."),
    "maintenance": Entry(
        "maintenance_cmd", "Queue hygiene: prune finished jobs, reap stale work and stale runs."
    ),
    "credentials": Entry(
        "credentials_cmd",
        "Provider API keys of this organisation, stored encrypted (VALUERANK_SECRET_KEY).",
    ),
    "models": Entry(
        "models_cmd",
        "The model registry: which models exist, their weights, prices and active flags.",
    ),
    "webhooks": Entry(
        "webhooks_cmd",
        "Webhooks of this organisation: add, list, remove; deliveries, dead letters, retry.",
    ),
    "orgs": Entry("orgs_cmd", "Organisations: create, list, defaults for new runs."),
    "users": Entry(
        "users_cmd",
        "Users and their roles per organisation: create, list, set-role, remove, invitations,"
        " set-password.",
    ),
    "tokens": Entry("tokens_cmd", "API tokens: create (shown once), list, revoke."),
    "validation": Entry(
        "validation_cmd",
        "Multi-model validation: tasks, their RA tags, models' validations and consensus.",
    ),
    "experiments": Entry(
        "analyze_cmd",
        "Experiments: a hypothesis, a baseline run and variants that change one thing.",
    ),
    "lineage": Entry("analyze_cmd", "Results across a definition's fork tree."),
}


def load_command(name: str) -> Any:
    """The Click command `name`, built from its module (imported now)."""
    module = importlib.import_module(f"valuerank.cli.{COMMANDS[name].module}")
    holder = typer.Typer(rich_markup_mode="rich")
    register = getattr(module, "register", None)
    if register is not None:
        register(holder)
    else:
        holder.add_typer(module.app, name=name)
    return reflow_command(typer.main.get_group(holder).commands[name])


class _LazyCommands(MutableMapping[str, Any]):
    """The root's commands, each loaded on first access."""

    def __init__(self, static: MutableMapping[str, Any]) -> None:
        self._loaded: dict[str, Any] = dict(static)

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            if name not in COMMANDS:
                raise KeyError(name)
            self._loaded[name] = load_command(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        yield from COMMANDS
        yield from (name for name in self._loaded if name not in COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS.keys() | self._loaded.keys())

    def listing(self, name: str) -> Any:
        """What a listing (`--help`, completion) shows for `name`: the command if loaded,
        else a stand-in carrying its summary (the module stays unimported)."""
        if name in self._loaded or name not in COMMANDS:
            return self._loaded.get(name)
        return TyperCommand(name=name, help=COMMANDS[name].summary)


class LazyGroup(TyperGroup):
    """The root group: its commands are imported when used."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = self._lazy = _LazyCommands(self.commands)
        self._listing = False

    @contextmanager
    def _summaries_only(self) -> Iterator[None]:
        self._listing = True
        try:
            yield
        finally:
            self._listing = False

    # Listing the commands, in `--help` or to complete a name (Tab), needs their names and
    # summaries only.
    def format_help(self, ctx: Any, formatter: Any) -> None:
        with self._summaries_only():
            super().format_help(ctx, formatter)

    def shell_complete(self, ctx: Any, incomplete: str) -> list[Any]:
        with self._summaries_only():
            return list(super().shell_complete(ctx, incomplete))

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self._lazy)  # the names, without loading the commands

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if self._listing:
            return self._lazy.listing(cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: Any) -> Any:
        note_command(_command_words(self, ctx, [*ctx._protected_args, *ctx.args]))
        return super().invoke(ctx)


def _command_words(group: Any, ctx: Any, args: list[str]) -> list[str]:
    """The leading words of `args` that name a command and its subcommands."""
    words: list[str] = []
    command = group
    for word in args:
        lookup = getattr(command, "get_command", None)  # a group (Typer's own Click)
        found = lookup(ctx, word) if lookup is not None else None
        if found is None:
            break
        words.append(word)
        command = found
    return words


app = typer.Typer(
    name="valuerank",
    cls=LazyGroup,
    help="Measure how AI models prioritise human values in moral dilemmas.\n\n"
    "Data lives in VALUERANK_DATABASE_URL (default: sqlite:///./valuerank.db).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


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


__all__ = ["COMMANDS", "app", "load_command"]
