"""The queue package's names load from their submodules on first use: every exported name is
the submodule's object, whichever order modules are imported in, and a submodule imported
alone (the dialect helpers) loads no other part of the queue."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import valuerank.queue as queue


def _fresh(code: str) -> object:
    """What `code` prints last (JSON), run in a new interpreter: nothing imported yet."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_exported_name_is_its_submodules_object() -> None:
    assert sorted(queue.__all__) == sorted(queue._EXPORTS)
    for name, module in queue._EXPORTS.items():
        assert getattr(queue, name) is getattr(
            importlib.import_module(f"valuerank.queue.{module}"), name
        ), name
    assert not hasattr(queue, "no_such_name")


def test_the_type_checkers_imports_are_the_lazy_table() -> None:
    # mypy reads the `if TYPE_CHECKING:` imports; the runtime reads `_SUBMODULE_EXPORTS`.
    tree = ast.parse(Path(str(queue.__file__)).read_text(encoding="utf-8"))
    (block,) = [n for n in tree.body if isinstance(n, ast.If)]
    imported = {
        str(node.module).removeprefix("valuerank.queue."): tuple(a.name for a in node.names)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
    }
    assert imported == queue._SUBMODULE_EXPORTS


def test_a_name_shared_with_its_submodule_stays_the_function() -> None:
    # `claim` and `enqueue` are both submodules and exported functions; the submodules are
    # imported first here (by the worker, and directly), and the package still gives the
    # functions, as when it imported everything at once.
    loaded = _fresh(
        "import json, inspect\n"
        "import valuerank.queue.worker, valuerank.queue.enqueue\n"
        "from valuerank.queue import Enqueued, claim, enqueue\n"
        "import valuerank.queue as q\n"
        "from valuerank.queue import lease as leases\n"
        "print(json.dumps([inspect.isfunction(claim), inspect.isfunction(enqueue),\n"
        "                  inspect.isfunction(q.claim), inspect.ismodule(leases)]))"
    )
    assert loaded == [True, True, True, True]


def test_the_dialect_helpers_load_without_the_rest_of_the_queue_or_psycopg() -> None:
    loaded = _fresh(
        "import json, sys\n"
        "import valuerank.queue.dialect\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "    if m.startswith('valuerank.queue.') or m.split('.')[0] == 'psycopg')))"
    )
    assert loaded == ["valuerank.queue.dialect"]
