"""Two texts aligned line by line for a side-by-side diff (pure; the template escapes)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    """One row of the view: a line number and text on each side (None: no line there) and
    the kind: `same`, `changed`, `removed` (left only) or `added` (right only)."""

    kind: str
    left_no: int | None
    left: str | None
    right_no: int | None
    right: str | None


def side_by_side(before: str, after: str) -> list[Row]:
    a, b = before.splitlines(), after.splitlines()
    rows: list[Row] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [
                Row("same", i + 1, a[i], j + 1, b[j])
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            ]
            continue
        left, right = list(range(i1, i2)), list(range(j1, j2))
        for k in range(max(len(left), len(right))):
            li = left[k] if k < len(left) else None
            rj = right[k] if k < len(right) else None
            kind = (
                "changed"
                if li is not None and rj is not None
                else "removed"
                if rj is None
                else "added"
            )
            rows.append(
                Row(
                    kind,
                    None if li is None else li + 1,
                    None if li is None else a[li],
                    None if rj is None else rj + 1,
                    None if rj is None else b[rj],
                )
            )
    return rows
