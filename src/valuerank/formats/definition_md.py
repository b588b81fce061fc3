"""The CLI's scenario definition markdown (`exp-*.md`): parse and serialize.

Layout (see the compat file): YAML front matter (`name`, `base_id`, `category`, anything
else kept), then the sections `# Preamble`, `# Template`, `# Dimensions` (one `## Name`
heading and one `| Score | Label | Options |` table per dimension) and an optional
`# Matching Rules`. Section headings are matched case-insensitively; a `# Something` line
that is not one of those headings is ordinary text of the section it is in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

from .definition_model import DEFAULT_BASE_ID, Definition, Dimension, Level
from .errors import FormatWarning, ParseContext
from .yaml_io import dump_readable, split_front_matter

PREAMBLE = "preamble"
TEMPLATE = "template"
DIMENSIONS = "dimensions"
MATCHING_RULES = "matching rules"
SECTION_TITLES = {
    PREAMBLE: "Preamble",
    TEMPLATE: "Template",
    DIMENSIONS: "Dimensions",
    MATCHING_RULES: "Matching Rules",
}
FRONT_MATTER_KEYS = ("name", "base_id", "category")

_H1 = re.compile(r"^#(?!#)\s*(\S.*?)\s*$")
_H2 = re.compile(r"^##(?!#)\s*(.*?)\s*$")
_PIPE_SPLIT = re.compile(r"(?<!\\)\|")
_SEPARATOR_CELL = re.compile(r"^:?-+:?$")
_INTEGER = re.compile(r"^[+-]?\d+$")
# `[Name]` placeholders; `[text](url)` markdown links are not placeholders.
PLACEHOLDER = re.compile(r"\[([^\[\]\n]+)\](?!\()")

Line = tuple[int, str]


def _normalize_newlines(text: str) -> str:
    return text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _section_text(lines: Sequence[Line]) -> str:
    """The section's text without surrounding blank lines or trailing whitespace."""
    texts = [line for _, line in lines]
    while texts and not texts[0].strip():
        texts.pop(0)
    return "\n".join(texts).rstrip()


def _split_row(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [cell.strip().replace("\\|", "|") for cell in _PIPE_SPLIT.split(body)]


def _is_separator(cells: list[str]) -> bool:
    return bool(cells) and all(_SEPARATOR_CELL.match(c.replace(" ", "")) for c in cells)


class _Parser(ParseContext):
    # -- sections -------------------------------------------------------------------------

    def split_sections(self, body: str, first_line: int) -> dict[str, tuple[int, list[Line]]]:
        sections: dict[str, tuple[int, list[Line]]] = {}
        current: str | None = None
        for offset, line in enumerate(body.split("\n")):
            number = first_line + offset
            match = _H1.match(line)
            key = " ".join(match.group(1).split()).lower() if match else None
            if key in SECTION_TITLES:
                assert key is not None
                if key in sections:
                    raise self.error(
                        f"section `# {SECTION_TITLES[key]}` appears twice "
                        f"(first at line {sections[key][0]})",
                        number,
                        f"merge the two `# {SECTION_TITLES[key]}` sections into one",
                    )
                sections[key] = (number, [])
                current = key
                continue
            if current is None:
                if line.strip():
                    raise self.error(
                        "text before the first section",
                        number,
                        "start the body with `# Preamble` (may be empty) or `# Template`",
                    )
                continue
            sections[current][1].append((number, line))
        return sections

    # -- dimensions -----------------------------------------------------------------------

    def parse_dimensions(self, lines: Sequence[Line]) -> tuple[Dimension, ...]:
        blocks: list[tuple[str, int, list[Line]]] = []
        for number, line in lines:
            heading = _H2.match(line)
            if heading:
                name = heading.group(1)
                if not name:
                    raise self.error(
                        "dimension heading without a name", number, "write `## DimensionName`"
                    )
                blocks.append((name, number, []))
            elif not line.strip():
                continue
            elif line.lstrip().startswith("|"):
                if not blocks:
                    raise self.error(
                        "table before the first dimension heading",
                        number,
                        "put a `## DimensionName` heading above the table",
                    )
                blocks[-1][2].append((number, line))
            else:
                raise self.error(
                    f"unexpected text in `# Dimensions`: {line.strip()[:60]!r}",
                    number,
                    "a dimension is a `## Name` heading and a `| Score | Label | Options |` "
                    "table; keep notes in the front matter (e.g. `notes: ...`), which is kept",
                )
        seen: dict[str, tuple[str, int]] = {}
        dimensions: list[Dimension] = []
        for name, number, rows in blocks:
            previous = seen.get(name.lower())
            if previous is not None:
                raise self.error(
                    f"dimension `{name}` is defined twice (also `{previous[0]}` at line "
                    f"{previous[1]}; names are compared case-insensitively)",
                    number,
                    "rename one of the dimensions or merge their tables",
                )
            seen[name.lower()] = (name, number)
            dimensions.append(Dimension(name, self.parse_table(name, number, rows)))
        return tuple(dimensions)

    def parse_table(self, dim: str, heading_line: int, rows: Sequence[Line]) -> tuple[Level, ...]:
        no_levels_hint = (
            "add a table `| Score | Label | Options |` with at least one row scored above 0"
        )
        if not rows:
            raise self.error(f"dimension `{dim}` has no levels", heading_line, no_levels_hint)
        header_line, header_text = rows[0]
        header = [c.lower() for c in _split_row(header_text)]
        columns: dict[str, int] = {
            name: header.index(name) for name in ("score", "label") if name in header
        }
        for name in ("options", "option"):
            if name in header and "options" not in columns:
                columns["options"] = header.index(name)
        if "score" not in columns:
            raise self.error(
                f"dimension `{dim}`: the table has no Score column "
                f"(columns: {', '.join(_split_row(header_text)) or 'none'})",
                header_line,
                "make the first row `| Score | Label | Options |`",
            )
        if "label" not in columns and "options" not in columns:
            raise self.error(
                f"dimension `{dim}`: the table needs a Label or an Options column",
                header_line,
                "make the first row `| Score | Label | Options |`",
            )
        levels: dict[int, tuple[int, Level]] = {}
        for number, text in rows[1:]:
            cells = _split_row(text)
            if _is_separator(cells):
                continue
            cells += [""] * (len(header) - len(cells))
            raw_score = cells[columns["score"]]
            if not _INTEGER.match(raw_score):
                raise self.error(
                    f"dimension `{dim}`: score {raw_score!r} is not a whole number",
                    number,
                    "write the score as a whole number (1, 2, 3, ...); rows scored 0 or "
                    "below are ignored",
                )
            score = int(raw_score)
            if score <= 0:
                continue
            label = cells[columns["label"]] if "label" in columns else ""
            options_cell = cells[columns["options"]] if "options" in columns else ""
            options = tuple(o.strip() for o in options_cell.split(",") if o.strip())
            if not label and not options:
                raise self.error(
                    f"dimension `{dim}`: the row with score {score} has no label or options",
                    number,
                    "fill in the Label (and Options) cells of that row",
                )
            label = label or ", ".join(options)
            options = options or (label,)
            if score in levels:
                raise self.error(
                    f"dimension `{dim}`: score {score} is used twice (also at line "
                    f"{levels[score][0]})",
                    number,
                    "give each row its own score, or list alternatives as comma-separated "
                    "options of one row",
                )
            levels[score] = (number, Level(score, label, options))
        if not levels:
            raise self.error(f"dimension `{dim}` has no levels", heading_line, no_levels_hint)
        return tuple(level for _, (_, level) in sorted(levels.items()))

    # -- template -------------------------------------------------------------------------

    def check_placeholders(
        self, template_lines: Sequence[Line], dimensions: Sequence[Dimension]
    ) -> None:
        known = {d.name.lower() for d in dimensions}
        used: set[str] = set()
        for number, line in template_lines:
            for match in PLACEHOLDER.finditer(line):
                name = match.group(1).strip()
                if name.lower() not in known:
                    names = ", ".join(d.name for d in dimensions) or "none"
                    raise self.error(
                        f"template placeholder [{name}] has no matching dimension "
                        f"(dimensions: {names})",
                        number,
                        f"add a `## {name}` dimension under `# Dimensions` or correct the "
                        "placeholder's spelling (matching ignores case)",
                    )
                used.add(name.lower())
        for dim in dimensions:
            if dim.name.lower() not in used:
                self.warn(f"dimension `{dim.name}` is not used in the template", None)


def _default_name(source: str | None) -> str | None:
    if not source:
        return None
    name = PurePath(source).name
    return name[:-3] if name.lower().endswith(".md") else name


def parse_definition(
    text: str, source: str | None = None, *, warnings: list[FormatWarning] | None = None
) -> Definition:
    """Parse a definition markdown file.

    `source` is the file name, used in errors and as the default `name`. Tolerated oddities
    (a dimension the template never uses) are appended to `warnings` when it is given.
    """
    parser = _Parser(source, warnings)
    text = _normalize_newlines(text)
    front = split_front_matter(text, source)
    if front is not None:
        data, body, body_line = front.data, front.body, front.body_line
    else:
        data, body, body_line = {}, text, 1

    sections = parser.split_sections(body, body_line)
    if TEMPLATE not in sections:
        dims_at = sections.get(DIMENSIONS, (None, []))[0]
        raise parser.error(
            "no `# Template` section",
            dims_at,
            "add a `# Template` heading followed by the scenario text (before `# Dimensions`)",
        )
    template_heading, template_lines = sections[TEMPLATE]
    template = _section_text(template_lines)
    if not template:
        raise parser.error(
            "the `# Template` section is empty",
            template_heading,
            "write the scenario text with [Dimension] placeholders under `# Template`",
        )
    dimensions = parser.parse_dimensions(sections.get(DIMENSIONS, (0, []))[1])
    parser.check_placeholders(template_lines, dimensions)

    name = data.get("name")
    if name is None:
        name = _default_name(source)
    if name is None or not str(name).strip():
        raise parser.error(
            "the definition has no name",
            1,
            "add `name: ...` to the front matter (between `---` lines at the top)",
        )
    base_id = data.get("base_id")
    category = data.get("category")
    extra = tuple((str(k), v) for k, v in data.items() if k not in FRONT_MATTER_KEYS)
    rules = sections.get(MATCHING_RULES)
    return Definition(
        name=str(name),
        template=template,
        dimensions=dimensions,
        base_id=DEFAULT_BASE_ID if base_id is None or base_id == "" else str(base_id),
        category="" if category is None else str(category),
        preamble=_section_text(sections[PREAMBLE][1]) if PREAMBLE in sections else "",
        matching_rules=_section_text(rules[1]) if rules is not None else None,
        extra_front_matter=extra,
    )


def _cell(text: str) -> str:
    if "\n" in text:
        raise ValueError(f"a table cell cannot hold a line break: {text!r}")
    return text.replace("|", "\\|")


def _table(dimension: Dimension) -> str:
    rows = ["| Score | Label | Options |", "|-------|-------|---------|"]
    for level in dimension.levels:
        for option in level.options:
            if "," in option:
                raise ValueError(
                    f"option {option!r} of dimension {dimension.name!r} contains a comma, "
                    "which the Options column uses as separator"
                )
        options = ", ".join(_cell(o) for o in level.options) or _cell(level.label)
        rows.append(f"| {level.score} | {_cell(level.label)} | {options} |")
    return "\n".join(rows)


def serialize_definition(definition: Definition) -> str:
    """The definition as markdown in the CLI's layout (parse_definition reads it back)."""
    front: dict[str, Any] = {"name": definition.name, "base_id": definition.base_id}
    if definition.category:
        front["category"] = definition.category
    for key, value in definition.extra_front_matter:
        front.setdefault(key, value)
    dims = "\n\n".join(f"## {d.name}\n\n{_table(d)}" for d in definition.dimensions)
    text = (
        f"---\n{dump_readable(front)}---\n\n"
        f"# Preamble\n\n{definition.preamble}\n\n"
        f"# Template\n\n{definition.template}\n\n"
        f"# Dimensions\n\n{dims}"
    )
    if definition.matching_rules is not None:
        text += f"\n\n# Matching Rules\n\n{definition.matching_rules}"
    return text + "\n"


__all__ = ["PLACEHOLDER", "parse_definition", "serialize_definition"]
