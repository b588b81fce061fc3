"""The CLI imports a command's module when the command runs: `valuerank runs status` and
`valuerank worker` start without the statistics stack, and every command is still there."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from valuerank.cli import COMMANDS, app

HEAVY = ("numpy", "scipy", "sklearn", "statsmodels", "matplotlib", "pandas")

PROBE = """
import importlib, json, sys
for name in {preload}:
    importlib.import_module(name)
from typer.testing import CliRunner
from valuerank.cli import app
result = CliRunner().invoke(app, sys.argv[1:])
assert result.exit_code == 0, result.output
print(json.dumps(sorted(m for m in {heavy} if m in sys.modules)))
"""


def _heavy_imported(*args: str, preload: tuple[str, ...] = ()) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY, preload=preload), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_short_commands_and_the_worker_do_not_load_the_statistics_stack() -> None:
    assert _heavy_imported("runs", "status", "--help") == []
    assert _heavy_imported("worker", "--help") == []
    assert _heavy_imported("export", "run", "--help") == []
    assert _heavy_imported("analyze", "--help") == []
    # …which the analysis does load when it computes: the probe sees it.
    assert "numpy" in _heavy_imported("analyze", "--help", preload=("valuerank.analysis.basic",))


def test_every_command_of_every_module_is_listed_and_runs() -> None:
    for module_name in sorted({entry.module for entry in COMMANDS.values()}):
        module = __import__(f"valuerank.cli.{module_name}", fromlist=["app"])
        holder = typer.Typer()
        if hasattr(module, "register"):
            module.register(holder)
            names = [c.name for c in holder.registered_commands]
            names += [g.name for g in holder.registered_groups]
        else:
            names = [n for n, entry in COMMANDS.items() if entry.module == module_name]
        for name in names:
            assert name in COMMANDS and COMMANDS[str(name)].module == module_name, name
    runner = CliRunner()
    listing = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert listing.exit_code == 0
    for name in COMMANDS:
        assert f" {name} " in listing.output, name
        assert runner.invoke(app, [name, "--help"]).exit_code == 0, name
    unknown = runner.invoke(app, ["stauts"])
    assert unknown.exit_code != 0 and "No such command" in unknown.output


def _root_help(group: TyperGroup, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    group.get_help(typer.Context(group, info_name="valuerank"))  # Rich prints it
    return capsys.readouterr().out


def test_the_root_help_lists_every_command_as_its_own_help_would_without_loading_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    listed = typer.main.get_group(app)
    assert isinstance(listed, TyperGroup)
    from_summaries = _root_help(listed, capsys)
    loaded = typer.main.get_group(app)
    assert isinstance(loaded, TyperGroup)
    for name in COMMANDS:
        loaded.commands[name]  # imports the module and builds the real command
    # The summaries kept in COMMANDS read exactly as the first paragraph of each command's
    # own help: update COMMANDS when a command's help changes.
    assert _root_help(loaded, capsys) == from_summaries
    assert "Claim and run jobs until stopped" in from_summaries


def test_the_root_help_and_completing_a_name_import_no_command_module() -> None:
    probe = (
        "import sys, typer\n"
        "from typer.testing import CliRunner\n"
        "from valuerank.cli import COMMANDS, app\n"
        "out = CliRunner().invoke(app, ['--help'])\n"
        "assert out.exit_code == 0 and ' lineage ' in out.output, out.output\n"
        "group = typer.main.get_group(app)\n"
        "items = group.shell_complete(typer.Context(group, info_name='valuerank'), 'ru')\n"
        "assert [i.value for i in items] == ['rubrics', 'runs'], items\n"
        "assert items[1].help.startswith('Runs: send'), items[1].help\n"
        "modules = {f'valuerank.cli.{entry.module}' for entry in COMMANDS.values()}\n"
        "print(sorted(modules & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
