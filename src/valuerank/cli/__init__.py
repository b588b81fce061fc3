"""The `valuerank` command line: Typer commands over the same services the API uses.

Each command's module is imported when the command is run (or listed in `--help`), not at
start-up: `valuerank runs status` loads the database and the runs, never the statistics
stack (scipy, scikit-learn, matplotlib) that `valuerank analyze` needs, so a short command
starts in a fraction of the time and memory.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from typing import Any

import typer
from typer.core import TyperGroup

from valuerank import __version__

# Every top-level command: its name → the module under valuerank.cli defining it (a Typer
# `app` for a group, or `register(app)` for commands), in the order `--help` lists them.
COMMAND_MODULES: dict[str, str] = {
    "worker": "worker_cmd",
    "serve": "serve_cmd",
    "demo": "demo_cmd",
    "analyze": "analyze_cmd",
    "compare": "analyze_cmd",
    "db": "db_cmd",
    "formats": "formats_cmd",
    "definitions": "definitions_cmd",
    "scenarios": "scenarios_cmd",
    "rubrics": "rubrics_cmd",
    "runs": "runs_cmd",
    "export": "export_cmd",
    "import": "import_cmd",
    "queue": "queue_cmd",
    "maintenance": "maintenance_cmd",
    "credentials": "credentials_cmd",
    "models": "models_cmd",
    "webhooks": "webhooks_cmd",
    "orgs": "orgs_cmd",
    "users": "users_cmd",
    "tokens": "tokens_cmd",
    "validation": "validation_cmd",
    "experiments": "analyze_cmd",
    "lineage": "analyze_cmd",
}


def load_command(name: str) -> Any:
    """The Click command `name`, built from its module (imported now)."""
    module = importlib.import_module(f"valuerank.cli.{COMMAND_MODULES[name]}")
    holder = typer.Typer(rich_markup_mode="rich")
    register = getattr(module, "register", None)
    if register is not None:
        register(holder)
    else:
        holder.add_typer(module.app, name=name)
    return typer.main.get_group(holder).commands[name]


class _LazyCommands(MutableMapping[str, Any]):
    """The root's commands, each loaded on first access."""

    def __init__(self, static: MutableMapping[str, Any]) -> None:
        self._loaded: dict[str, Any] = dict(static)

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            if name not in COMMAND_MODULES:
                raise KeyError(name)
            self._loaded[name] = load_command(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        yield from COMMAND_MODULES
        yield from (name for name in self._loaded if name not in COMMAND_MODULES)

    def __len__(self) -> int:
        return len(COMMAND_MODULES.keys() | self._loaded.keys())


class LazyGroup(TyperGroup):
    """The root group: its commands are imported when used."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _LazyCommands(self.commands)


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


__all__ = ["COMMAND_MODULES", "app", "load_command"]
