"""The CLI imports a command's module when the command runs: `valuerank runs status` and
`valuerank worker` start without the statistics stack, and every command is still there."""

from __future__ import annotations

import json
import subprocess
import sys

import typer
from typer.testing import CliRunner

from valuerank.cli import COMMAND_MODULES, app

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
    assert "numpy" in _heavy_imported("analyze", "--help", preload=("valuerank.findings.analyses",))


def test_every_command_of_every_module_is_listed_and_runs() -> None:
    for module_name in sorted(set(COMMAND_MODULES.values())):
        module = __import__(f"valuerank.cli.{module_name}", fromlist=["app"])
        holder = typer.Typer()
        if hasattr(module, "register"):
            module.register(holder)
            names = [c.name for c in holder.registered_commands]
            names += [g.name for g in holder.registered_groups]
        else:
            names = [n for n, m in COMMAND_MODULES.items() if m == module_name]
        for name in names:
            assert COMMAND_MODULES.get(str(name)) == module_name, (name, module_name)
    runner = CliRunner()
    listing = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert listing.exit_code == 0
    for name in COMMAND_MODULES:
        assert f" {name} " in listing.output, name
        assert runner.invoke(app, [name, "--help"]).exit_code == 0, name
    unknown = runner.invoke(app, ["stauts"])
    assert unknown.exit_code != 0 and "No such command" in unknown.output
