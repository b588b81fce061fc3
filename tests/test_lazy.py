"""The packages whose names load from their submodules on first use (valuerank/lazy.py):
every exported name is its submodule's object, an unknown name is an AttributeError, and the
type checker's imports are the runtime's table."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import valuerank.formats
import valuerank.queue
import valuerank.queue.outbox

PACKAGES = [valuerank.formats, valuerank.queue, valuerank.queue.outbox]


def fresh_json(code: str) -> object:
    """What `code` prints last (JSON), run in a new interpreter: nothing imported yet."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_every_exported_name_is_its_submodules_object(package: ModuleType) -> None:
    exports: dict[str, str] = package._EXPORTS
    assert sorted(package.__all__) == sorted(exports)
    for name, module in exports.items():
        submodule = importlib.import_module(f"{package.__name__}.{module}")
        assert getattr(package, name) is getattr(submodule, name), name
    assert not hasattr(package, "no_such_name")


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_the_type_checkers_imports_are_the_lazy_table(package: ModuleType) -> None:
    # mypy reads the `if TYPE_CHECKING:` imports; the runtime reads `_SUBMODULE_EXPORTS`.
    tree = ast.parse(Path(str(package.__file__)).read_text(encoding="utf-8"))
    (block,) = [n for n in tree.body if isinstance(n, ast.If)]
    imported = {
        str(node.module).removeprefix(f"{package.__name__}."): tuple(a.name for a in node.names)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
    }
    assert imported == package._SUBMODULE_EXPORTS
