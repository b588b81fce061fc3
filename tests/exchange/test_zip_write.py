"""ZipStream writes the bytes zipfile writes, whole or streamed, past the ZIP64 limits too,
without keeping a record per entry in memory."""

from __future__ import annotations

import errno
import gc
import io
import sys
import tracemalloc
import zipfile
from datetime import UTC, datetime
from typing import Any

import pytest

from valuerank.exchange.zip_write import ZipStream, build_zip, zip_time

MOMENT = datetime(2026, 11, 25, 16, 51, 7, tzinfo=UTC)


def _reference(entries: list[tuple[str, bytes]]) -> bytes:
    """The same entries through zipfile alone."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, data in entries:
            info = zipfile.ZipInfo(path, date_time=zip_time(MOMENT))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def _streamed(entries: list[tuple[str, bytes]], piece: int) -> bytes:
    buffer = io.BytesIO()
    stream = ZipStream(buffer)
    for path, data in entries:
        with stream.open(path, MOMENT) as entry:
            for at in range(0, len(data), piece):
                entry.write(data[at : at + piece])
    stream.close()
    return buffer.getvalue()


def test_whole_or_in_pieces_the_bytes_are_zipfiles() -> None:
    entries = [
        ("run_manifest.yaml", b"run_id: 2026-11-25.16-51\n" * 40),
        ("transcripts/transcript.é-ü.m.static.2026.md", "Rating: 4 — naïve\n".encode() * 500),
        ("empty.txt", b""),
        ("summary.csv", b"".join(f"r,{i},m,{i % 5}\r\n".encode() for i in range(5000))),
    ]
    expected = _reference(entries)
    assert build_zip([(p, d, MOMENT) for p, d in entries]) == expected
    assert _streamed(entries, piece=7) == expected
    assert _streamed(entries, piece=1 << 16) == expected
    assert build_zip([]) == _reference([])


def test_past_65535_entries_the_zip64_end_records_are_zipfiles() -> None:
    entries = [(f"t/{i}.md", b"") for i in range(66_000)]
    data = build_zip([(p, d, MOMENT) for p, d in entries])
    assert data == _reference(entries)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = archive.namelist()
        assert archive.testzip() is None
    assert len(names) == 66_000 and names[-1] == "t/65999.md"


def _traced_growth(write: object, n: int) -> int:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        write(n)  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_entries() -> None:
    name = "transcripts/transcript.scale_001_Harm1_Honesty2_Loyalty3.scripted:x.static.{}.md"

    def ours(n: int) -> None:
        stream = ZipStream(io.BytesIO())
        for i in range(n):
            stream.write(name.format(i), b"Rating: 3\n", MOMENT)
        globals()["_keep"] = stream  # still open: what it holds before close

    def theirs(n: int) -> None:
        archive = zipfile.ZipFile(io.BytesIO(), "w", compression=zipfile.ZIP_DEFLATED)
        for i in range(n):
            archive.writestr(name.format(i), b"Rating: 3\n")
        globals()["_keep"] = archive

    # The output buffer grows in both; what zipfile adds is a ZipInfo per entry.
    held_ours = _traced_growth(ours, 20_000)
    held_theirs = _traced_growth(theirs, 20_000)
    assert held_theirs - held_ours > 20_000 * 300


class _FullDisk(io.BytesIO):
    """A file on a disk that fills up after `room` bytes, then is closed by its owner."""

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = room

    def write(self, data: Any) -> int:
        if self.tell() + len(data) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(data)


def test_a_failed_archive_is_given_up_without_a_stray_traceback() -> None:
    unraisable: list[Any] = []
    previous, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        out = _FullDisk(room=2_000)
        with pytest.raises(OSError, match="No space left"), ZipStream(out) as stream:
            for n in range(100):
                stream.write(f"transcript.{n}.md", bytes(range(256)) * 20, MOMENT)
        out.close()  # what atomic_output does with its temporary file
        del stream
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert unraisable == []  # zipfile's __del__ no longer finishes it into the closed file
