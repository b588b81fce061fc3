"""One definition per answer shape (`valuerank.shapes`): the class that writes an answer is
the one /openapi.json documents, so no answer shape's name is defined twice in src/valuerank.

An answer shape, read with `ast`: a class of `src/valuerank/api/schemas/` or
`src/valuerank/api/views.py`, a pydantic dataclass made with `config=SHAPE`, or a class with
a `to_dict` method (an answer still written by hand).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from pydantic.dataclasses import dataclass

from valuerank.shapes import SHAPE, Timestamp, dump

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "valuerank"

# Different concepts that share a name, each with why it is not one shape.
DIFFERENT_CONCEPTS = {
    "Progress": "queue.events.Progress counts a partition's jobs per queue status for events; "
    "runs.progress.Progress is a run's answer (succeeded read as `completed`)",
    "Task": "queue.tasks.Task is a job kind registered with its handler; "
    "validation.model.Task is a validation task (an answer)",
    "Enqueued": "queue.enqueue.Enqueued is one job put on the queue; runs.starting.Enqueued is "
    "a run started (its summary and how many jobs)",
    "Comparison": "definitions.rule_syntax.Comparison is a node of a matching rule "
    "(`a <= b`); findings.comparisons.Comparison is a comparison of two runs (an answer)",
}
# Answer shapes still written twice (a dataclass with `to_dict` and a pydantic mirror in
# api/schemas/): every family is now one definition; a new duplicate fails above.
NOT_YET_ONE: set[str] = set()


def _is_shape(node: ast.ClassDef, path: Path) -> bool:
    relative = path.relative_to(PACKAGE).as_posix()
    if relative.startswith("api/schemas/") or relative == "api/views.py":
        return True
    decorated = any("config=SHAPE" in ast.unparse(d) for d in node.decorator_list)
    has_to_dict = any(
        isinstance(item, ast.FunctionDef) and item.name == "to_dict" for item in node.body
    )
    return decorated or has_to_dict


def _classes() -> dict[str, list[tuple[str, bool]]]:
    """Every class name of src/valuerank → (module path, is it an answer shape) per definition."""
    found: dict[str, list[tuple[str, bool]]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found[node.name].append(
                    (path.relative_to(PACKAGE).as_posix(), _is_shape(node, path))
                )
    return found


def _twice() -> dict[str, list[str]]:
    return {
        name: [where for where, _ in places]
        for name, places in _classes().items()
        if len(places) > 1 and any(shape for _, shape in places)
    }


def test_no_answer_shape_is_defined_twice() -> None:
    listed = set(DIFFERENT_CONCEPTS) | NOT_YET_ONE
    unexpected = {name: where for name, where in _twice().items() if name not in listed}
    assert not unexpected, f"answer shapes defined twice (one definition each): {unexpected}"


def test_the_lists_name_only_names_still_defined_twice() -> None:
    """A name made one definition leaves the lists, so they cannot hide a new duplicate."""
    stale = (set(DIFFERENT_CONCEPTS) | NOT_YET_ONE) - set(_twice())
    assert not stale, f"no longer defined twice, take them off the lists: {sorted(stale)}"


def test_the_scan_sees_shapes() -> None:
    """The scan finds the runs family as shapes (an empty scan would pass everything)."""
    classes = _classes()
    for name in ("RunReport", "RunDetail", "ModelResult", "Breakdown", "Failure"):
        assert [shape for _, shape in classes[name]] == [True], name


@dataclass(frozen=True, config=SHAPE)
class _Stamped:
    at: Timestamp
    until: Timestamp | None


def test_a_timestamp_is_written_as_the_api_always_wrote_it() -> None:
    naive = datetime(2024, 5, 1, 12, 30)  # SQLite's: UTC without an offset
    assert dump(_Stamped(naive, None)) == {"at": "2024-05-01T12:30:00+00:00", "until": None}
    aware = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    assert dump([_Stamped(aware, aware)])[0]["until"] == "2024-05-01T12:30:00+00:00"
