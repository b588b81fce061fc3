"""Paths to the project's own CLI-format fixtures and to the original CLI's files."""

from __future__ import annotations

from pathlib import Path

CLI_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cli"
RUN_DIR = CLI_FIXTURES / "runs" / "2025-03-02.14-05"


def read(path: Path) -> str:
    # newline="" keeps the bytes as they are: several tests compare output byte for byte.
    with path.open(encoding="utf-8", newline="") as handle:
        return handle.read()


def fixture(relative: str) -> tuple[str, str]:
    """(file name, text) of a fixture under tests/fixtures/cli."""
    path = CLI_FIXTURES / relative
    return path.name, read(path)
