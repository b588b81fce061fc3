"""`import valuerank` stays instant: the Python API loads when `Client` is first named, and
even then neither pandas, the database stack, the statistics nor the web API until a call
needs them."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "pandas",
    "pyarrow",
    "numpy",
    "scipy",
    "sqlalchemy",
    "fastapi",
    "valuerank.sdk",
    "valuerank.db",
    "valuerank.cli",
)


def _loaded(code: str) -> list[str]:
    report = f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    probe = f"{code}\nimport json, sys\n{report}"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    found: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def test_import_valuerank_loads_nothing_else() -> None:
    assert _loaded("import valuerank\nassert valuerank.__version__") == []


def test_naming_the_client_loads_only_the_python_api() -> None:
    assert _loaded("from valuerank import Client") == ["valuerank.sdk"]
    # A client of a server asks it over HTTP: no database stack, no pandas until a frame.
    assert _loaded("from valuerank import Client\nClient(url='http://127.0.0.1:9', token='t')") == [
        "valuerank.sdk"
    ]
