"""The queue behind its own API: nothing outside `src/valuerank/queue/` touches the queue's
tables. Read from the source itself: no module outside the queue imports their table objects
(`from valuerank.db.tables import jobs`, or `tables.jobs` through the module), and no SQL text
outside it names them. `db/` is exempt: it defines the tables and migrates them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import valuerank

SRC = Path(valuerank.__file__).parent
QUEUE_TABLES = frozenset({"jobs", "job_errors", "events", "queue_controls"})
OWNERS = ("queue", "db")
# A statement naming one of the tables where SQL names a table.
_SQL = re.compile(
    r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE|EXISTS)\s+\"?(" + "|".join(sorted(QUEUE_TABLES)) + r")\b",
    re.IGNORECASE,
)
# What makes a string SQL rather than prose that happens to say "from jobs".
_SQL_WORDS = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE)\b", re.IGNORECASE)


def _outside_the_queue() -> list[Path]:
    return [
        path for path in sorted(SRC.rglob("*.py")) if path.relative_to(SRC).parts[0] not in OWNERS
    ]


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes (prose, not SQL)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def table_imports(source: str) -> list[str]:
    """The queue's table objects a module's source reaches through `valuerank.db.tables`."""
    tree = ast.parse(source)
    found = []
    module_names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "valuerank.db.tables":
            found += [a.name for a in node.names if a.name in QUEUE_TABLES or a.name == "*"]
        elif isinstance(node, ast.ImportFrom) and node.module == "valuerank.db":
            module_names |= {a.asname or a.name for a in node.names if a.name == "tables"}
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "valuerank.db.tables":
                    module_names.add(alias.asname or "valuerank.db.tables")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in QUEUE_TABLES:
            owner = ast.unparse(node.value)
            if owner in module_names or owner == "valuerank.db.tables":
                found.append(node.attr)
    return found


def sql_naming_tables(source: str) -> list[str]:
    """The string constants (docstrings aside) of a module's source that are SQL naming one
    of the queue's tables."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    texts = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):  # an f-string: its literal parts joined
            parts = [v.value for v in node.values if isinstance(v, ast.Constant)]
            texts.append(" ? ".join(str(p) for p in parts))
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
        ):
            texts.append(node.value)
    return [t for t in texts if _SQL.search(t) and _SQL_WORDS.search(t)]


def test_the_checks_see_what_they_look_for() -> None:
    # Each way of reaching the tables is caught, so the test below cannot pass by blindness.
    assert table_imports("from valuerank.db.tables import jobs, runs") == ["jobs"]
    assert table_imports("from valuerank.db import tables\ntables.events.c.seq") == ["events"]
    assert table_imports("import valuerank.db.tables as t\nt.queue_controls") == ["queue_controls"]
    assert table_imports("import valuerank.db.tables\nvaluerank.db.tables.job_errors") == [
        "job_errors"
    ]
    assert table_imports("from valuerank.db.tables import runs\nruns.c.jobs") == []
    assert sql_naming_tables('x = text("DELETE FROM jobs WHERE id = :id")') != []
    assert sql_naming_tables('x = f"SELECT 1 FROM queue_controls WHERE key = {k}"') != []
    assert sql_naming_tables('x = "select count(*) from events e"') != []
    assert sql_naming_tables('"""Delete the jobs from jobs of a run."""') == []
    assert sql_naming_tables('x = "the run\'s jobs from jobs it owns"') == []


def test_nothing_outside_the_queue_imports_its_tables_or_names_them_in_sql() -> None:
    imports, sql = {}, {}
    for path in _outside_the_queue():
        source = path.read_text(encoding="utf-8")
        name = str(path.relative_to(SRC))
        if found := table_imports(source):
            imports[name] = found
        if texts := sql_naming_tables(source):
            sql[name] = texts
    assert imports == {}, "ask valuerank.queue.partitions (or another queue module) instead"
    assert sql == {}, "ask valuerank.queue.partitions (or another queue module) instead"
