"""The one writer of output files: the whole file or nothing, and never a temporary file left
behind, whatever goes wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from valuerank.cli.common import OutputNotWrittenError, write_atomically

from .conftest import Invoke


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_text_and_bytes_replace_the_target_whole(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "out.md"
    write_atomically(target, "first\n")
    write_atomically(target, b"second\n")
    assert target.read_bytes() == b"second\n"
    assert _leftovers(target.parent) == []


def test_a_failed_rename_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "is-a-folder"
    target.mkdir()
    (target / "keep").write_text("x")
    with pytest.raises(OutputNotWrittenError) as info:
        write_atomically(target, "data")
    assert info.value.code == "OUTPUT_NOT_WRITTEN" and str(target) in info.value.message
    assert _leftovers(tmp_path) == []
    assert (target / "keep").read_text() == "x"  # the target is untouched


def test_text_that_cannot_be_encoded_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out.md"
    target.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        write_atomically(target, "a lone surrogate \udc80")
    assert target.read_text() == "old" and _leftovers(tmp_path) == []


def test_an_unwritable_folder_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputNotWrittenError):
        write_atomically(blocker / "sub" / "out.md", "data")  # a file where a folder should be


def test_the_export_command_reports_a_bad_output_path(cli: Invoke, tmp_path: Path) -> None:
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "cli" / "runs" / "2025-03-02.14-05"
    [run] = cli("import", "run", str(fixture), "--json").json()["runs"]
    folder = tmp_path / "taken"
    folder.mkdir()
    out = cli("export", "run", run["id"], "-o", str(folder), "--json")
    assert out.exit_code == 1 and out.json()["code"] == "OUTPUT_NOT_WRITTEN"
    assert _leftovers(tmp_path) == []
