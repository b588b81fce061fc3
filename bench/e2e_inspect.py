"""Reading Inspect AI's durable result for `bench.e2e`: its `.eval` log, a ZIP file with one
`samples/<id>_epoch_<n>.json` member per sample that Inspect has flushed so far."""

from __future__ import annotations

import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any


def _log(logs: Path) -> Path | None:
    found = sorted(logs.glob("*.eval")) if logs.exists() else []
    return found[-1] if found else None


def _sample_members(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as z:
        return [n for n in z.namelist() if n.startswith("samples/")]


def inspect_first_result(logs: Path) -> bool:
    """Is a sample in the eval log on disk yet? (Inspect rewrites the ZIP's directory at each
    flush; a read that meets a half-written file raises and is tried again.)"""
    path = _log(logs)
    return path is not None and bool(_sample_members(path))


def inspect_log_check(logs: Path) -> dict[str, Any]:
    """The finished log's status, how many samples it holds (and how many were scored), and
    when the last one completed (Unix time, from the samples' own `completed_at`)."""
    from inspect_ai.log import read_eval_log

    path = _log(logs)
    if path is None:
        return {"status": "missing", "samples": 0}
    log = read_eval_log(str(path))
    finished = [
        datetime.fromisoformat(s.completed_at).timestamp()
        for s in log.samples or []
        if s.completed_at
    ]
    # Scored: a sample whose scorer returned a value (the judged configuration's grade).
    scored = sum(
        1
        for s in log.samples or []
        if s.scores and any(v.value is not None for v in s.scores.values())
    )
    return {
        "status": log.status,
        "samples": len(_sample_members(path)),
        "scored": scored,
        "log": path.name,
        "last_completed_at": max(finished) if finished else None,
    }
