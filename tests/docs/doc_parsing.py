"""Reading the README and docs/*.md as a test sees them: fenced blocks, the `valuerank`
command lines in them, links and headings."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
# Blocks in these languages hold data or code, never a command someone types.
NOT_COMMANDS = {"python", "json", "yaml", "yml", "toml", "sql"}
# What separates two commands on one line of shell.
OPERATORS = {"|", "||", "&&", ";", "&"}
REDIRECTS = {">", ">>", "<", "2>", "2>&1", "&>"}
# A line that may run `valuerank` (the rest of a block is output, a tree, a listing…).
RUNS_VALUERANK = re.compile(r"(^|[\s|;&(=])(\S*/)?valuerank(\s|$)")
SUBSTITUTION = re.compile(r"\$\((valuerank\b[^()]*)\)")
ENV_ASSIGNMENT = re.compile(r"^\[?[A-Za-z_][A-Za-z0-9_]*=\S*\]?$")


def doc_files() -> list[Path]:
    """The README and every page of the documentation site."""
    return [README, *sorted(DOCS.glob("*.md"))]


def where(path: Path, line: int) -> str:
    return f"{path.relative_to(REPO)}:{line}"


@dataclass(frozen=True)
class Block:
    """A fenced code block: its info string and its lines, numbered as in the file."""

    path: Path
    info: str
    lines: tuple[tuple[int, str], ...]

    @property
    def language(self) -> str:
        return self.info.split()[0].lower() if self.info else ""

    @property
    def is_synopsis(self) -> bool:
        return 'title="synopsis"' in self.info.lower()


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of a markdown file; a fence indented under a list item is read
    without that indentation."""
    blocks: list[Block] = []
    opened: tuple[str, str, str] | None = None  # indentation, fence, info
    lines: list[tuple[int, str]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = re.match(r"^(\s*)(`{3,})(.*)$", line)
        if opened is None:
            if match:
                opened = (match.group(1), match.group(2), match.group(3).strip())
                lines = []
        elif match and match.group(2) == opened[1] and not match.group(3).strip():
            blocks.append(Block(path, opened[2], tuple(lines)))
            opened = None
        else:
            lines.append((number, line.removeprefix(opened[0])))
    assert opened is None, f"{where(path, 0)}: a fenced block is never closed"
    return blocks


@dataclass(frozen=True)
class Shown:
    """One `valuerank …` command a page shows: its arguments, where it is, what follows `#`."""

    path: Path
    line: int
    args: tuple[str, ...]
    comment: str

    @property
    def where(self) -> str:
        return where(self.path, self.line)


def _logical_lines(block: Block) -> list[tuple[int, str]]:
    """Lines with their `\\` continuations joined, numbered by their first line."""
    joined: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in block.lines:
        start, text = pending if pending else (number, "")
        text = f"{text} {line.strip()}" if text else line.strip()
        if text.endswith("\\"):
            pending = (start, text[:-1].rstrip())
        else:
            joined.append((start, text))
            pending = None
    if pending:
        joined.append(pending)
    return joined


def _comment_of(line: str) -> str:
    """The shell comment of a line (a `#` that starts a word outside quotes), or ''."""
    quote: str | None = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[index + 1 :].strip()
    return ""


def commands_in(block: Block) -> list[Shown]:
    """Every `valuerank` command a shell block runs: after a `$ ` prompt, environment
    assignments, a pipe or `&&`, or inside `$(…)`. Other programs are not ours to check."""
    if block.language in NOT_COMMANDS or block.is_synopsis:
        return []
    found: list[Shown] = []
    for number, text in _logical_lines(block):
        text = text.removeprefix("$ ")
        if not RUNS_VALUERANK.search(text):
            continue
        comment = _comment_of(text)
        for inner in SUBSTITUTION.findall(text):
            found.append(Shown(block.path, number, tuple(shlex.split(inner)[1:]), ""))
        text = SUBSTITUTION.sub("SUBSTITUTED", text)
        try:
            tokens = shlex.split(text, comments=True)
        except ValueError as error:
            raise AssertionError(f"{where(block.path, number)}: {error}: {text}") from error
        segment: list[str] = []
        for token in [*tokens, ";"]:
            if token not in OPERATORS:
                segment.append(token)
                continue
            while segment and ENV_ASSIGNMENT.match(segment[0]):
                segment.pop(0)
            if segment and Path(segment[0]).name == "valuerank":
                args = _without_redirects(segment[1:])
                found.append(Shown(block.path, number, tuple(args), comment))
            segment = []
    return found


def _without_redirects(tokens: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for token in tokens:
        if skip:
            skip = False
        elif token in REDIRECTS:
            skip = not token.endswith("&1")
        else:
            kept.append(token)
    return kept


def synopsis_entries(block: Block) -> list[tuple[int, str]]:
    """The synopsis's commands, one per entry: an indented line continues the one above;
    what follows `  # ` is a comment."""
    entries: list[tuple[int, str]] = []
    for number, line in block.lines:
        text = re.sub(r"\s+#\s.*$", "", line).rstrip()
        if not text.strip():
            continue
        if line[:1].isspace() and entries:
            start, previous = entries[-1]
            entries[-1] = (start, f"{previous} {text.strip()}")
        else:
            entries.append((number, text.strip()))
    return entries


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def relative_links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link and image that is not to another site, outside code."""
    found: list[tuple[int, str]] = []
    fence = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if re.match(r"^\s*```", line):
            fence = not fence
            continue
        if fence:
            continue
        for match in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            target = match.group(1) or match.group(2)
            if not re.match(r"^[a-z]+:", target):
                found.append((number, target))
    return found


def heading_anchors(path: Path) -> set[str]:
    """The anchors of a markdown file's headings, as GitHub and MkDocs both make them."""
    anchors: set[str] = set()
    fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if re.match(r"^\s*```", line):
            fence = not fence
            continue
        match = re.match(r"^#{1,6} (.+?)\s*$", line)
        if match and not fence:
            text = match.group(1).replace("`", "").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return anchors
