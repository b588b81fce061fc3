"""What changed between two definitions, one line per changed part, for the diff page's
"What changed" list (the side-by-side text diff under it shows the lines themselves).

`render_diff` (diff.py) writes every unified-diff line for the CLI; here a changed text is
counted instead (`template: 1 line added, 1 removed`), a changed dimension is one line with
its level changes, and no line is ever empty."""

from __future__ import annotations

from valuerank.definitions.diff import (
    DefinitionDiff,
    DimensionChange,
    TextChange,
    front_matter_lines,
)

__all__ = ["summarize_diff"]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _text_summary(name: str, change: TextChange) -> str:
    # After the two file headers: "@@" hunk headers, " x" context, "+x" added, "-x" removed.
    body = [ln for ln in change.lines[2:] if not ln.startswith("@@")]
    added = sum(1 for ln in body if ln.startswith("+"))
    removed = sum(1 for ln in body if ln.startswith("-"))
    if not added and not removed:
        return f"{name}: only line endings or the final newline changed"
    if added and removed:  # a changed line is one removed and one added
        return f"{name}: {_plural(added, 'line')} added, {removed} removed"
    if added:
        return f"{name}: {_plural(added, 'line')} added"
    return f"{name}: {_plural(removed, 'line')} removed"


def _dimension_summary(change: DimensionChange) -> str:
    parts = []
    if change.renamed:
        parts.append(f"renamed from {change.name_before}")
    parts += [f"level {lv.score} {lv.label!r} added" for lv in change.levels_added]
    parts += [f"level {lv.score} {lv.label!r} removed" for lv in change.levels_removed]
    for level in change.levels_changed:
        if level.label_changed:
            parts.append(
                f"level {level.score} label {level.before.label!r} → {level.after.label!r}"
            )
        if level.options_changed:
            parts.append(f"level {level.score} options changed")
    return f"dimension {change.name}: " + "; ".join(parts)


def summarize_diff(diff: DefinitionDiff) -> list[str]:
    """One non-empty line per changed part of the definition (`["no changes"]` if none)."""
    if diff.is_empty:
        return ["no changes"]
    lines = front_matter_lines(diff)
    if diff.preamble is not None:
        lines.append(_text_summary("preamble", diff.preamble))
    if diff.template is not None:
        lines.append(_text_summary("template", diff.template))
    for dim in diff.dimensions_added:
        lines.append(f"dimension {dim.name} added ({_plural(len(dim.levels), 'level')})")
    lines += [f"dimension {dim.name} removed" for dim in diff.dimensions_removed]
    lines += [_dimension_summary(change) for change in diff.dimensions_changed]
    if diff.dimension_order is not None:
        before, after = diff.dimension_order.before, diff.dimension_order.after
        lines.append(f"dimension order: {', '.join(before)} → {', '.join(after)}")
    if diff.matching_rules is not None:
        rules = diff.matching_rules
        kind = "added" if rules.before is None else "removed" if rules.after is None else "changed"
        lines.append(f"matching rules {kind}")
    return lines
