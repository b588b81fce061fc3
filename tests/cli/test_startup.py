"""Start-up: the CLI and the worker's pipeline load without the statistics and the web API
(numpy/scipy/scikit-learn/statsmodels/matplotlib/FastAPI cost seconds and ~150 MB), which
only `analyze`, `compare`, `serve` and the analysis jobs need; and those still get them."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("numpy", "scipy", "sklearn", "statsmodels", "matplotlib", "pandas", "fastapi")


def _loaded(code: str) -> list[str]:
    report = f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    probe = f"{code}\nimport json, sys\n{report}"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def test_the_cli_and_the_pipeline_start_without_the_statistics_or_the_api() -> None:
    assert _loaded("import valuerank.cli, valuerank.pipeline.handlers") == []


def test_the_commands_and_jobs_that_analyse_load_them_when_they_run() -> None:
    loaded = _loaded(
        "from valuerank.cli.analyze_cmd import _plots\n"
        "import tempfile, pathlib\n"
        "_plots({}, pathlib.Path(tempfile.mkdtemp()))\n"
        "from valuerank.pipeline import analyze\n"
        "import valuerank.findings.analyses"
    )
    assert {"numpy", "scipy", "sklearn", "matplotlib"} <= set(loaded)
