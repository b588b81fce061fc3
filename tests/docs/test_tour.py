"""The README's quick tour runs as written: its commands in order, in an empty directory on a
fresh SQLite database, each `<NAME>` replaced by the id that the command marked `→ <NAME>`
printed first."""

from __future__ import annotations

import itertools
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.docs.doc_parsing import README, REPO, Shown, commands_in, fenced_blocks
from typer.testing import CliRunner

from valuerank.cli import app
from valuerank.config import get_settings

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
BINDS = re.compile(r"→\s*<([A-Z_]+)>")
PLACEHOLDER = re.compile(r"<([A-Z_]+)>")


def tour() -> list[Shown]:
    """The `valuerank` commands of the first block under the README's "Quick tour"."""
    lines = README.read_text(encoding="utf-8").splitlines()
    heading = lines.index("## Quick tour") + 1
    block = next(b for b in fenced_blocks(README) if b.lines and b.lines[0][0] > heading)
    return commands_in(block)


@pytest.fixture
def tour_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory holding only the examples, as a checkout's root would, and a database
    that does not exist yet (the first command creates and migrates it)."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VALUERANK_DATABASE_URL", f"sqlite:///{tmp_path / 'tour.db'}")
    monkeypatch.delenv("VALUERANK_API_URL", raising=False)
    yield tmp_path
    get_settings.cache_clear()


def _substitute(arg: str, ids: dict[str, str], shown: Shown) -> str:
    def known(match: re.Match[str]) -> str:
        name = match.group(1)
        assert name in ids, f"{shown.where}: <{name}> is used before a command printed it"
        return ids[name]

    return PLACEHOLDER.sub(known, arg)


def test_the_quick_tour_runs_as_written(tour_dir: Path) -> None:
    commands = tour()
    assert len(commands) >= 8, "the quick tour lost its commands"
    runner = CliRunner()
    ids: dict[str, str] = {}
    for shown in commands:
        args = [_substitute(arg, ids, shown) for arg in shown.args]
        get_settings.cache_clear()
        result = runner.invoke(app, args, catch_exceptions=False)
        said = f"{shown.where}: valuerank {' '.join(args)}\n{result.stdout}{result.stderr}"
        assert result.exit_code == 0, said
        for name in BINDS.findall(shown.comment):
            printed = UUID.search(result.stdout)
            assert printed, f"{said}\nprinted no id for <{name}>"
            ids[name] = printed.group(0)
        for flag, target in itertools.pairwise(args):
            if flag in {"-o", "--output"}:
                assert (tour_dir / target).is_file(), f"{said}\nwrote no {target}"
    assert {"ID", "CHILD_ID"} <= ids.keys()
    # The tour's fork is a child of its import.
    lineage = runner.invoke(app, ["definitions", "lineage", ids["CHILD_ID"], "--json"])
    assert ids["ID"] in lineage.stdout
