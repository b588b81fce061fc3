"""Writing ZIP archives that are the same bytes every time for the same content.

`ZipStream` writes entries one after the other into a seekable binary file, each either
whole (`write`) or piece by piece (`open`): an archive of any size is written with the
memory of one piece. Pieces compress exactly as the whole would (zlib's output does not
depend on how its input is cut), so both ways give the same bytes; `build_zip` is the
in-memory shorthand.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import IO

ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a ZIP entry can hold
FILE_MODE = 0o100644  # a regular file, rw-r--r--
UNIX = 3  # ZipInfo.create_system for Unix, so the mode above is read


def zip_time(moment: datetime | None) -> tuple[int, int, int, int, int, int]:
    if moment is None:
        return ZIP_EPOCH
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    if moment.year < ZIP_EPOCH[0]:
        return ZIP_EPOCH
    return (moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second)


def _info(path: str, moment: datetime | None) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(path, date_time=zip_time(moment))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = UNIX
    info.external_attr = FILE_MODE << 16
    return info


class ZipStream:
    """A deflated ZIP written entry by entry into `out` (seekable: each entry's header is
    completed in place, so the bytes do not depend on how an entry was written)."""

    def __init__(self, out: IO[bytes]) -> None:
        self._archive = zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED)

    def write(self, path: str, data: bytes, moment: datetime | None = None) -> None:
        self._archive.writestr(_info(path, moment), data)

    @contextmanager
    def open(self, path: str, moment: datetime | None = None) -> Iterator[IO[bytes]]:
        """An entry written piece by piece: write to the file object it gives."""
        with self._archive.open(_info(path, moment), "w") as entry:
            yield entry

    def close(self) -> None:
        """Write the central directory (the archive is complete only then)."""
        self._archive.close()


def build_zip(entries: Iterable[tuple[str, bytes, datetime | None]]) -> bytes:
    """A deflated ZIP of (path, data, modification time) entries, in the given order."""
    buffer = io.BytesIO()
    stream = ZipStream(buffer)
    for path, data, moment in entries:
        stream.write(path, data, moment)
    stream.close()
    return buffer.getvalue()


__all__ = ["ZipStream", "build_zip", "zip_time"]
