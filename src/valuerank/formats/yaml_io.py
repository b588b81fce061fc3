"""Shared YAML reading and writing for the CLI file formats.

Two ways of writing:

* `dump_cli` is what the original CLI called
  (`yaml.safe_dump(data, sort_keys=False, allow_unicode=True)`); transcripts' front matter and
  `run_manifest.yaml` use it so our files are byte-identical to the CLI's. The one exception
  is text holding U+0085/U+2028/U+2029, which that call corrupts (see CliDumper).
* `dump_readable` is the configuration that reproduces the CLI's generated scenarios files
  byte for byte: multi-line strings as literal block scalars (`|-`, `|`, `|+`) and no line
  folding (`width=inf`). It also writes strings with spaces before a line break as literal
  blocks, where plain PyYAML would fall back to one long double-quoted line: hand-written
  bodies (such as the folded `>` bodies of the cafe file) often have such spaces.

Reading goes through `load`, which returns the data together with the 1-based line of every
mapping key and sequence item, so errors can name the line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.emitter import ScalarAnalysis
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .errors import FormatError
from .yaml_bounds import PurePythonBoundedLoader, YamlTooComplex, bounded_loader

KeyPath = tuple[Any, ...]

_STR_TAG = "tag:yaml.org,2002:str"
# Characters PyYAML treats as line breaks besides "\n": never put them in a literal block.
_EXOTIC_BREAKS = frozenset("\x85\u2028\u2029")


def _printable(ch: str) -> bool:
    """PyYAML's notion of a printable character (with allow_unicode=True)."""
    return (
        ch == "\n"
        or "\x20" <= ch <= "\x7e"
        or ("\xa0" <= ch <= "\ud7ff")
        or ("\ue000" <= ch <= "\ufffd" and ch != "\ufeff")
        or ("\U00010000" <= ch < "\U0010ffff")
    )


def _literal_safe(text: str) -> bool:
    """True when `text` can be written as a literal block scalar without loss."""
    return all(_printable(ch) and ch not in _EXOTIC_BREAKS for ch in text)


class ReadableDumper(yaml.SafeDumper):
    """SafeDumper that prefers literal blocks for multi-line strings.

    PyYAML refuses block scalars for text with a space before a line break or a trailing
    space, although a literal block keeps both exactly; we allow them for literal blocks
    (and only when every character is printable), which the property tests check.
    """

    def analyze_scalar(self, scalar: str) -> ScalarAnalysis:
        analysis = super().analyze_scalar(scalar)
        if (
            not analysis.allow_block
            and "\n" in scalar
            and getattr(self.event, "style", None) == "|"
            and _literal_safe(scalar)
        ):
            analysis.allow_block = True
        return analysis


def _has_exotic_breaks(data: str) -> bool:
    return any(ch in _EXOTIC_BREAKS for ch in data)


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = '"' if _has_exotic_breaks(data) else "|" if "\n" in data else None
    return dumper.represent_scalar(_STR_TAG, data, style=style)


ReadableDumper.add_representer(str, _represent_str)


class CliDumper(yaml.SafeDumper):
    """The CLI's SafeDumper, minus a PyYAML bug.

    With allow_unicode=True PyYAML writes NEL/LS/PS (U+0085, U+2028, U+2029) raw inside
    single-quoted or plain scalars, and reading the text back turns them into spaces or
    line breaks. Strings holding them are written double-quoted (escaped) instead; every
    other string comes out exactly as the CLI wrote it.
    """


def _represent_str_cli(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = '"' if _has_exotic_breaks(data) else None
    return dumper.represent_scalar(_STR_TAG, data, style=style)


CliDumper.add_representer(str, _represent_str_cli)


def dump_readable(data: Any) -> str:
    """YAML in the layout of the CLI's generated scenarios files (see module docstring)."""
    return yaml.dump(
        data,
        Dumper=ReadableDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=math.inf,
    )


def dump_cli(data: Any) -> str:
    """YAML as the original CLI wrote it (`yaml.safe_dump(sort_keys=False, allow_unicode=True)`).

    Byte-identical to the CLI except for strings the CLI would have corrupted (CliDumper).
    """
    return yaml.dump(data, Dumper=CliDumper, sort_keys=False, allow_unicode=True)


@dataclass(frozen=True)
class Loaded:
    """Parsed YAML plus the 1-based line of each key/item, addressed by its path."""

    data: Any
    lines: dict[KeyPath, int]

    def line(self, *path: Any) -> int | None:
        return self.lines.get(tuple(path))


def _walk(node: Node, path: KeyPath, lines: dict[KeyPath, int]) -> None:
    if isinstance(node, MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, ScalarNode) else None
            child = (*path, key)
            lines.setdefault(child, key_node.start_mark.line + 1)
            _walk(value_node, child, lines)
    elif isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            child = (*path, index)
            lines.setdefault(child, item.start_mark.line + 1)
            _walk(item, child, lines)


def load(text: str, source: str | None = None, *, line_offset: int = 0) -> Loaded:
    """Parse YAML text (safe loader, bounded: see yaml_bounds); raise FormatError naming the
    line on bad syntax or a document past the bounds.

    `line_offset` is added to every line (for YAML embedded in a larger file, e.g. front
    matter). Keys appear in `lines` as their scalar text, as written in the file.
    """
    loader: PurePythonBoundedLoader | None = None
    try:
        loader = bounded_loader(text)
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.reader.ReaderError as exc:
        raise FormatError(
            f"character {_char(exc.character)} is not allowed in YAML",
            source=source,
            line=text[: exc.position].count("\n") + 1 + line_offset,
            hint="remove the control character (or write it as an escape in double quotes)",
        ) from exc
    except YamlTooComplex as exc:
        mark = exc.problem_mark
        raise FormatError(
            f"YAML too complex: {exc.problem}",
            source=source,
            line=mark.line + 1 + line_offset if mark is not None else None,
            hint="write the document out plainly: no deep nesting, few aliases",
        ) from exc
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 + line_offset if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise FormatError(
            f"invalid YAML: {problem}",
            source=source,
            line=line,
            hint="check the indentation and quoting on that line",
        ) from exc
    except yaml.YAMLError as exc:
        raise FormatError(f"invalid YAML: {exc}", source=source, hint="fix the YAML") from exc
    finally:
        if loader is not None:
            loader.dispose()
    lines: dict[KeyPath, int] = {}
    if node is not None:
        _walk(node, (), lines)
    if line_offset:
        lines = {k: v + line_offset for k, v in lines.items()}
    return Loaded(data, lines)


_COMMENT_LINE = re.compile(r"^\s*(#.*)?$")


def header_comment(text: str) -> str | None:
    """The `#` comment lines a YAML file starts with (blank lines between them kept).

    YAML drops comments, so this is how a file's header survives a round trip. The text
    itself is still parsed whole, so line numbers stay right.
    """
    comment: list[str] = []
    for line in text.split("\n"):
        if not _COMMENT_LINE.match(line):
            break
        comment.append(line.rstrip())
    while comment and not comment[-1]:
        comment.pop()
    while comment and not comment[0]:
        comment.pop(0)
    return "\n".join(comment) if comment else None


def render_header_comment(comment: str | None) -> str:
    """The header comment followed by a blank line ("" when there is none)."""
    if not comment:
        return ""
    lines = [
        ln if (not ln.strip() or ln.lstrip().startswith("#")) else f"# {ln}"
        for ln in comment.split("\n")
    ]
    return "\n".join(lines) + "\n\n"


@dataclass(frozen=True)
class FrontMatter:
    """A `---` delimited YAML block at the top of a markdown file."""

    data: dict[str, Any]
    lines: dict[KeyPath, int]
    body: str
    body_line: int  # 1-based line where `body` starts in the file


def split_front_matter(text: str, source: str | None = None) -> FrontMatter | None:
    """Parse the front matter of a markdown file, or None if it has none.

    Raises FormatError when the block is unterminated, is not valid YAML or is not a mapping.
    """
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return None
    for index in range(1, len(lines)):
        if lines[index].rstrip() == "---":
            break
    else:
        raise FormatError(
            "front matter starts with `---` but is never closed",
            source=source,
            line=1,
            hint="end the front matter with a line containing only `---`",
        )
    yaml_text = "\n".join(lines[1:index])
    loaded = load(yaml_text, source, line_offset=1)
    data = loaded.data
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FormatError(
            f"front matter must be a YAML mapping of `key: value` lines, not {_kind(data)}",
            source=source,
            line=2,
            hint="write the front matter as `name: ...` lines between the `---` lines",
        )
    body = "\n".join(lines[index + 1 :])
    return FrontMatter(data, loaded.lines, body, index + 2)


def _char(character: Any) -> str:
    return f"U+{character:04X}" if isinstance(character, int) else repr(character)


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__
