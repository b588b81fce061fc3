"""The README and the documentation site cannot drift from the CLI or from themselves: every
`valuerank …` command they show parses against the real command tree, the CLI reference's
synopsis names every command with only its real options, and every relative link resolves."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from tests.docs.doc_parsing import (
    DOCS,
    README,
    REPO,
    Block,
    Shown,
    commands_in,
    doc_files,
    fenced_blocks,
    heading_anchors,
    relative_links,
    synopsis_entries,
    where,
)
from typer.core import TyperGroup, TyperOption
from typer.exceptions import TyperException

from valuerank.cli import app

ROOT = typer.main.get_command(app)


def _all_shown() -> list[Shown]:
    blocks = [block for path in doc_files() for block in fenced_blocks(path)]
    return [shown for block in blocks for shown in commands_in(block)]


def _make_contexts(args: list[str]) -> None:
    """Parse `args` down the command tree with `make_context`, as `valuerank ARGS` would
    before running anything; a usage error (unknown command or option, missing argument)
    raises."""
    ctx = ROOT.make_context("valuerank", list(args), resilient_parsing=False)
    command = ROOT
    while isinstance(command, TyperGroup):
        rest = [*ctx._protected_args, *ctx.args]
        assert rest, f"`valuerank {' '.join(args)}` names a group, not a command"
        name, sub, rest = command.resolve_command(ctx, rest)
        assert sub is not None and name is not None
        ctx = sub.make_context(name, rest, parent=ctx, resilient_parsing=False)
        command = sub


@pytest.mark.parametrize("shown", _all_shown(), ids=lambda s: s.where)
def test_every_command_shown_parses(shown: Shown) -> None:
    try:
        _make_contexts(list(shown.args))
    except typer.Exit:
        pass  # `--help` or `--version`: parsed, then Click stops
    except TyperException as error:  # Click's usage errors, from Typer's copy of Click
        pytest.fail(f"{shown.where}: `valuerank {' '.join(shown.args)}`: {error}")


def test_the_pages_show_commands() -> None:
    """The parser above finds what it should (an empty list would pass everything)."""
    by_file = {shown.path.name for shown in _all_shown()}
    assert {"README.md", "runs.md", "queue.md", "validation.md", "deployment.md"} <= by_file
    assert len(_all_shown()) > 80


# --- The CLI reference's synopsis -----------------------------------------------------------


def _synopsis_blocks() -> list[Block]:
    return [block for block in fenced_blocks(DOCS / "cli.md") if block.is_synopsis]


def _leaves(command: object, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(command, TyperGroup):
        ctx = command.context_class(command)
        for name in command.list_commands(ctx):
            yield from _leaves(command.get_command(ctx, name), (*path, name))
    else:
        yield path


def _options_of(command: object) -> set[str]:
    names = {"--help"}
    for param in getattr(command, "params", []):
        if isinstance(param, TyperOption):
            names.update(param.opts, param.secondary_opts)
    return names


def _resolve(words: list[str]) -> tuple[list[tuple[str, ...]], list[object], list[str]]:
    """The commands a synopsis entry names (`a|b` names both) and the words after them."""
    paths: list[tuple[str, ...]] = [()]
    commands: list[object] = [ROOT]
    while words and all(isinstance(c, TyperGroup) for c in commands):
        names = words.pop(0).split("|")
        next_paths: list[tuple[str, ...]] = []
        next_commands: list[object] = []
        for path, group in zip(paths, commands, strict=True):
            assert isinstance(group, TyperGroup)
            ctx = group.context_class(group)
            for name in names:
                sub = group.get_command(ctx, name)
                assert sub is not None, f"there is no command `valuerank {' '.join((*path, name))}`"
                next_paths.append((*path, name))
                next_commands.append(sub)
        paths, commands = next_paths, next_commands
    assert not any(isinstance(c, TyperGroup) for c in commands), f"{paths} are groups"
    return paths, commands, words


def _synopsis() -> list[tuple[str, list[tuple[str, ...]], list[object], list[str]]]:
    resolved = []
    for block in _synopsis_blocks():
        for line, entry in synopsis_entries(block):
            words = [w for w in entry.split() if not re.match(r"^\[?[A-Z_]+=\S*\]?$", w)]
            assert words[0] == "valuerank", f"{where(block.path, line)}: {entry}"
            try:
                paths, commands, rest = _resolve(words[1:])
            except AssertionError as error:
                pytest.fail(f"{where(block.path, line)}: {error}")
            resolved.append((where(block.path, line), paths, commands, rest))
    return resolved


def test_the_synopsis_names_only_real_options() -> None:
    problems = []
    for place, paths, commands, rest in _synopsis():
        shown = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", " ".join(rest)))
        for path, command in zip(paths, commands, strict=True):
            for option in sorted(shown - _options_of(command)):
                problems.append(f"{place}: `valuerank {' '.join(path)}` has no option {option}")
    assert not problems, "\n".join(problems)


def test_the_synopsis_lists_every_command() -> None:
    named = {path for _place, paths, _commands, _rest in _synopsis() for path in paths}
    missing = sorted(" ".join(path) for path in set(_leaves(ROOT)) - named)
    assert not missing, f"docs/cli.md's synopsis lacks: {missing}"


# --- Links ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(path: Path) -> None:
    problems = []
    for line, target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        target_path = (path.parent / file_part).resolve() if file_part else path
        if not target_path.exists():
            problems.append(f"{where(path, line)}: {target}: no such file")
        elif anchor and target_path.suffix == ".md" and anchor not in heading_anchors(target_path):
            problems.append(f"{where(path, line)}: {target}: no such heading")
    assert not problems, "\n".join(problems)


def test_the_readme_links_into_the_docs() -> None:
    targets = {target.partition("#")[0] for _line, target in relative_links(README)}
    assert {
        "docs/cli.md",
        "docs/http-api.md",
        "docs/configuration.md",
        "docs/deployment.md",
        "docs/benchmarks.md",
    } <= targets


# --- Code the pages cite --------------------------------------------------------------------

# `tests/api/test_auth.py::test_x`, `src/valuerank/rubric_data/values_rubric.yaml`, …
REPO_PATH = re.compile(r"`((?:src|tests|bench|scripts|examples|docs)/[\w./-]+?)(?:::(\w+))?`")
# `runs/states.py`, `valuerank/lazy.py`: modules named relative to the package or src/.
PACKAGE_MODULE = re.compile(r"`([a-z_]+/[\w/]*\.py)`")
MODULE_BASES = (REPO, REPO / "src", REPO / "src/valuerank")


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_cited_files_and_tests_exist(path: Path) -> None:
    problems = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for match in REPO_PATH.finditer(line):
            cited, function = REPO / match.group(1), match.group(2)
            if not cited.exists():
                problems.append(f"{where(path, number)}: no file {match.group(1)}")
            elif function and not re.search(rf"def {function}\b", cited.read_text()):
                problems.append(f"{where(path, number)}: {match.group(1)} has no {function}")
        for match in PACKAGE_MODULE.finditer(line):
            if not any((base / match.group(1)).exists() for base in MODULE_BASES):
                problems.append(f"{where(path, number)}: no module {match.group(1)}")
    assert not problems, "\n".join(problems)
