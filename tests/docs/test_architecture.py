"""docs/architecture.md matches the code: every source path and dotted name it gives exists,
and the import rules it states hold, with the exceptions it names and no others.

The imports are read with `ast` from src/valuerank (static imports: the few dynamic ones stay
inside their own package). `python tests/docs/test_architecture.py` prints the package →
package edges the page's layer table was measured from.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
PACKAGE = SRC / "valuerank"
DOC = REPO / "docs" / "architecture.md"

# --- What the page names ---------------------------------------------------------------------

# A path the page gives from the repository's root; `<`, `*` or `{` mark a pattern, not a path.
ROOTED_PATH = re.compile(r"(?<![\w/.-])(?:src|tests|docs|scripts|bench)/[\w./<>*{}-]*")
DOTTED = re.compile(r"(?<![\w.])valuerank(?:\.[A-Za-z_]\w*)+")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
# A span naming a file or package relative to src/valuerank (`queue/`, `errors.py`).
PACKAGE_PATH = re.compile(r"^[\w.-]+(?:/[\w.-]+)*(?:\.py|/)$")


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def rooted_paths() -> list[str]:
    found = {m.rstrip(".") for m in ROOTED_PATH.findall(_doc())}
    return sorted(p for p in found if not set("<*{") & set(p))


def package_paths() -> list[str]:
    spans = {s for s in CODE_SPAN.findall(_doc()) if PACKAGE_PATH.match(s)}
    return sorted(s for s in spans if not s.startswith(("src/", "tests/", "docs/")))


def dotted_names() -> list[str]:
    return sorted(set(DOTTED.findall(_doc())))


def test_the_page_names_what_this_test_checks() -> None:
    """The patterns find what they should (an empty list would pass everything)."""
    assert len(rooted_paths()) > 30 and len(dotted_names()) > 60 and len(package_paths()) > 15


@pytest.mark.parametrize("path", rooted_paths())
def test_every_path_exists(path: str) -> None:
    assert (REPO / path).exists(), f"docs/architecture.md names {path}, which does not exist"


@pytest.mark.parametrize("path", package_paths())
def test_every_package_path_exists(path: str) -> None:
    assert (PACKAGE / path).exists(), f"docs/architecture.md names {path}: not in src/valuerank"


def _find_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ModuleNotFoundError, ValueError):  # a parent that is not a package
        return False


@pytest.mark.parametrize("name", dotted_names())
def test_every_dotted_name_exists(name: str) -> None:
    """The longest prefix that is a module exists, and the rest are its attributes."""
    parts = name.split(".")
    cut = max((i for i in range(2, len(parts) + 1) if _find_module(".".join(parts[:i]))), default=0)
    assert cut, f"docs/architecture.md names {name}: no such module"
    value: object = importlib.import_module(".".join(parts[:cut]))
    for attribute in parts[cut:]:
        assert hasattr(value, attribute), f"docs/architecture.md names {name}: no {attribute}"
        value = getattr(value, attribute)


# --- The imports -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, dotted
    target: str  # the imported module, dotted
    lazy: bool  # inside a function or under `if TYPE_CHECKING:`

    @property
    def source_unit(self) -> str:
        return unit(self.source)

    @property
    def target_unit(self) -> str:
        return unit(self.target)


def unit(module: str) -> str:
    """The top-level package or module under valuerank: `queue` for valuerank.queue.claim."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:  # relative: from the module's package, one level up per extra dot
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        origin = ".".join([*base, node.module] if node.module else base)
    else:
        origin = node.module or ""
    # `from valuerank.x import y` imports the module y too when there is one.
    submodules = [f"{origin}.{a.name}" for a in node.names if f"{origin}.{a.name}" in modules()]
    return [origin, *submodules]


def _walk(body: list[ast.stmt], lazy: bool) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append((node, lazy))
            continue
        deferred = lazy or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        type_checking = isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                only_for_types = type_checking and field == "body"
                found += _walk(inner, deferred or only_for_types)
        for handler in getattr(node, "handlers", []):  # try/except
            found += _walk(handler.body, deferred)
    return found


@cache
def all_imports() -> tuple[Import, ...]:
    """Every import of a valuerank module by a valuerank module (external ones left out)."""
    found: list[Import] = []
    for module, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node, lazy in _walk(tree.body, lazy=False):
            for target in _targets(node, module, path.name == "__init__.py"):
                if target.startswith("valuerank.") and unit(target) != unit(module):
                    found.append(Import(module, target, lazy))
    return tuple(found)


@cache
def external_imports(module: str) -> frozenset[str]:
    """The top-level names of the third-party and standard modules `module` imports."""
    tree = ast.parse(modules()[module].read_text(encoding="utf-8"))
    names = set()
    for node, _ in _walk(tree.body, lazy=False):
        if isinstance(node, ast.ImportFrom) and node.level:
            continue
        for target in _targets(node, module, modules()[module].name == "__init__.py"):
            names.add(target.split(".")[0])
    return frozenset(names - {"valuerank"})


def edges() -> dict[str, set[str]]:
    """Package → the packages it imports (lazy imports marked with `~`)."""
    graph: dict[str, set[str]] = defaultdict(set)
    eager = {(i.source_unit, i.target_unit) for i in all_imports() if not i.lazy}
    for i in all_imports():
        pair = (i.source_unit, i.target_unit)
        graph[pair[0]].add(pair[1] if pair in eager else f"~{pair[1]}")
    return graph


def _where(imports: list[Import]) -> list[str]:
    return sorted({f"{i.source} imports {i.target}{' (lazily)' * i.lazy}" for i in imports})


# --- The rules the page states ---------------------------------------------------------------

ENTRY_POINTS = {"api", "web", "mcp", "cli", "entry", "__main__"}
TOP = {"api", "web", "mcp", "cli"}
# The named exceptions among the entry points: (importer, imported) → the modules that may.
# `web` and `mcp` importing `api` is the normal direction (both sit on top of the API).
ON_THE_API = {("web", "api"), ("mcp", "api")}
ENTRY_EXCEPTIONS = {
    ("api", "web"): {"valuerank.api.app"},  # create_app installs the pages
    ("api", "mcp"): {"valuerank.api.app"},  # create_app mounts /mcp
    ("cli", "mcp"): {"valuerank.cli.mcp_cmd"},  # `valuerank mcp` serves it over stdio
    ("cli", "api"): {"valuerank.cli.serve_cmd"},  # `valuerank serve` builds the app
}
# Each package → every ValueRank package it may import (besides itself).
ALLOWED = {
    "queue": {"db", "crypto", "errors", "lazy", "ratelimit_headers", "shapes"},
    "db": {"config", "crypto", "errors"},
    "providers": {"consensus", "scoring", "ratelimit_headers"},
    "analysis": {"shapes"},
    "consensus": set(),
    "scoring": set(),
    "formats": {"lazy", "shapes"},
}
PURE_PACKAGES = ("analysis", "consensus", "scoring", "formats")
PURE_MODULES = (
    "valuerank.definitions.expansion",
    "valuerank.definitions.presentation",
    "valuerank.definitions.sampling",
    "valuerank.definitions.rules",
    "valuerank.definitions.rule_syntax",
    "valuerank.definitions.diff",
    "valuerank.definitions.hashing",
    "valuerank.definitions.edit",
    "valuerank.pipeline.prompts",
    "valuerank.pipeline.validation_prompts",
    "valuerank.providers.costs",
    "valuerank.providers.classify",
    "valuerank.validation.rules",
)
STATISTICS_READERS = {"findings", "report", "web", "cli"}
# The named exception: importer → the statistics module it may import.
STATISTICS_EXCEPTIONS: dict[str, str] = {
    "valuerank.api.schemas.findings": "valuerank.analysis.warning",  # numpy-free: a shape
}
# The one cycle between packages: below `findings`, only its keyset-pagination helper is used.
KEYSET = "valuerank.findings.keyset"
KEYSET_USERS = {"runs", "versioning", "definitions"}


LEVEL_ROW = re.compile(r"^\| (\d+) \| ([^|]+) \|", re.MULTILINE)
# Level 4's cycle (see KEYSET below): these import each other at module level.
CYCLE = {"definitions", "versioning", "findings", "runs"}
CONSOLE_SCRIPT = {"entry", "__main__"}  # the page names them apart, under the table
ROOT = "valuerank"  # the package itself: `valuerank/__init__.py`


def doc_levels() -> dict[str, int]:
    """The page's layer table: package → level."""
    levels: dict[str, int] = {}
    for level, cell in LEVEL_ROW.findall(_doc()):
        for name in CODE_SPAN.findall(cell):
            levels[name.removesuffix("/").removesuffix(".py")] = int(level)
    return levels


def test_the_layer_table_lists_every_package_once() -> None:
    units = {
        p.stem if p.suffix == ".py" else p.name
        for p in PACKAGE.iterdir()
        if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    listed = doc_levels()
    assert set(listed) == units - CONSOLE_SCRIPT - {"__init__"}, set(listed) ^ units


def test_packages_import_only_lower_levels_at_module_level() -> None:
    levels = doc_levels()
    wrong = [
        i
        for i in all_imports()
        if not i.lazy
        and i.source_unit not in CONSOLE_SCRIPT
        and levels[i.target_unit] >= levels[i.source_unit]
        and not {i.source_unit, i.target_unit} <= CYCLE
    ]
    assert not wrong, _where(wrong)


def test_nothing_below_the_entry_points_imports_them() -> None:
    wrong = [i for i in all_imports() if i.target_unit in TOP and i.source_unit not in ENTRY_POINTS]
    assert not wrong, _where(wrong)


def test_the_entry_points_import_each_other_only_where_the_page_says() -> None:
    between = [i for i in all_imports() if {i.source_unit, i.target_unit} <= TOP]
    wrong = [
        i
        for i in between
        if (i.source_unit, i.target_unit) not in ON_THE_API
        and i.source not in ENTRY_EXCEPTIONS.get((i.source_unit, i.target_unit), set())
    ]
    assert not wrong, _where(wrong)
    # An exception that no longer occurs is struck from the page and from ENTRY_EXCEPTIONS.
    seen = {(i.source_unit, i.target_unit, i.source) for i in between}
    for (importer, imported), sources in ENTRY_EXCEPTIONS.items():
        for source in sources:
            assert (importer, imported, source) in seen, f"{source} no longer imports {imported}"


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_the_lower_packages_import_only_what_the_page_allows(package: str) -> None:
    wrong = [
        i
        for i in all_imports()
        if i.source_unit == package and i.target_unit not in ALLOWED[package]
    ]
    assert not wrong, _where(wrong)


def _closure(roots: list[str]) -> set[str]:
    """Every valuerank module importing `roots` may load (their packages' __init__ too)."""
    seen: set[str] = set()
    pending = list(roots)
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        parent = module.rpartition(".")[0]
        if parent in modules():
            pending.append(parent)
        # The package's own `__init__` loads `sdk` only when `Client` is asked of it (named
        # on the page): loading any module runs it, never that import.
        pending += [
            i.target
            for i in all_imports()
            if i.source == module and not (module == ROOT and i.lazy)
        ]
        path = modules()[module]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node, lazy in _walk(tree.body, lazy=False):  # same-package imports too
            for target in _targets(node, module, path.name == "__init__.py"):
                if target in modules() and not (module == ROOT and lazy):
                    pending.append(target)
    return seen


def test_pure_code_loads_no_database_code() -> None:
    roots = [m for m in modules() if unit(m) in PURE_PACKAGES] + list(PURE_MODULES)
    assert set(PURE_MODULES) <= set(modules())
    loaded = _closure(roots)
    storage = sorted(m for m in loaded if unit(m) in ("db", "queue"))
    assert not storage, storage
    sqlalchemy = sorted(m for m in loaded if "sqlalchemy" in external_imports(m))
    assert not sqlalchemy, sqlalchemy


def test_the_statistics_are_imported_only_by_their_readers() -> None:
    imports = [i for i in all_imports() if i.target_unit == "analysis"]
    wrong = [
        i
        for i in imports
        if i.source_unit not in STATISTICS_READERS
        and STATISTICS_EXCEPTIONS.get(i.source) not in (i.target, "valuerank.analysis")
    ]
    assert not wrong, _where(wrong)
    seen = {(i.source, i.target) for i in imports}
    assert set(STATISTICS_EXCEPTIONS.items()) <= seen, "struck an exception? strike it here too"


def test_below_findings_only_its_keyset_helper_is_imported() -> None:
    uses = [i for i in all_imports() if i.target_unit == "findings"]
    uses = [i for i in uses if i.source_unit in KEYSET_USERS]
    wrong = [i for i in uses if i.target not in ("valuerank.findings", KEYSET)]
    assert not wrong, _where(wrong)
    assert {i.source_unit for i in uses} == {"runs", "versioning"}, _where(uses)
    # ...and the helper itself reads nothing above it, so no cycle runs between modules.
    assert {i.target for i in all_imports() if i.source == KEYSET} == {
        "valuerank.errors",
        "valuerank.queue.dialect",
    }


def test_the_import_reader_sees_the_imports() -> None:
    """The reader finds eager and lazy imports and resolves relative ones (else every rule
    above would pass on nothing)."""
    pairs = {(i.source, i.target, i.lazy) for i in all_imports()}
    assert ("valuerank.api.app", "valuerank.web", True) in pairs
    assert ("valuerank.providers.scripted_validation", "valuerank.consensus", False) in pairs
    relative = ast.parse("from .base import Message").body[0]
    assert isinstance(relative, ast.ImportFrom)
    assert _targets(relative, "valuerank.providers.costs", False) == ["valuerank.providers.base"]
    assert "queue" in edges()["pipeline"] and len(all_imports()) > 500


if __name__ == "__main__":
    for package, imported in sorted(edges().items()):
        listed = ", ".join(sorted(imported, key=lambda name: name.strip("~")))
        print(f"{package or 'valuerank'} -> {listed}")
