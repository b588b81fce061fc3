"""Writing ZIP archives that are the same bytes every time for the same content.

`ZipStream` writes entries one after the other into a seekable binary file, each either
whole (`write`) or piece by piece (`open`): an archive of any size is written with the
memory of one piece. Pieces compress exactly as the whole would (zlib's output does not
depend on how its input is cut), so both ways give the same bytes; `build_zip` is the
in-memory shorthand.

The central directory (one record per entry, written after the last entry) is where
`zipfile` would keep memory: it holds a ZipInfo per entry until it closes (~0.5 KB each,
~47 MB for 100,000 transcripts). Here each entry's record is written to a temporary file
as soon as the entry is complete and copied in at the end, with the end records (ZIP64 ones
past 65,535 entries or 2 GiB), exactly as `zipfile` writes them (APPNOTE 4.3.12-4.3.16).
"""

from __future__ import annotations

import io
import shutil
import struct
import tempfile
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


# Record layouts and limits of the ZIP format (APPNOTE.TXT), as zipfile writes them.
CENTRAL_DIR = struct.Struct("<4s4B4HL2L5H2L")
CENTRAL_DIR_SIGNATURE = b"PK\x01\x02"
END = struct.Struct("<4s4H2LH")
END_SIGNATURE = b"PK\x05\x06"
END64 = struct.Struct("<4sQ2H2L4Q")
END64_SIGNATURE = b"PK\x06\x06"
END64_LOCATOR = struct.Struct("<4sLQL")
END64_LOCATOR_SIGNATURE = b"PK\x06\x07"
ZIP64_LIMIT = (1 << 31) - 1
FILE_COUNT_LIMIT = (1 << 16) - 1
ZIP64_VERSION = 45
UTF8_NAME = 0x800


def central_record(info: zipfile.ZipInfo) -> bytes:
    """The central directory record of a written entry (zipfile's `_write_end_record`)."""
    year, month, day, hour, minute, second = info.date_time
    dosdate = (year - 1980) << 9 | month << 5 | day
    dostime = hour << 11 | minute << 5 | (second // 2)
    zip64: list[int] = []
    file_size, compress_size, offset = info.file_size, info.compress_size, info.header_offset
    if file_size > ZIP64_LIMIT or compress_size > ZIP64_LIMIT:
        zip64 += [file_size, compress_size]
        file_size = compress_size = 0xFFFFFFFF
    if offset > ZIP64_LIMIT:
        zip64.append(offset)
        offset = 0xFFFFFFFF
    extra = info.extra
    min_version = 0
    if zip64:
        extra = struct.pack(f"<HH{len(zip64)}Q", 1, 8 * len(zip64), *zip64) + extra
        min_version = ZIP64_VERSION
    try:
        name, flags = info.filename.encode("ascii"), info.flag_bits
    except UnicodeEncodeError:
        name, flags = info.filename.encode("utf-8"), info.flag_bits | UTF8_NAME
    record = CENTRAL_DIR.pack(
        CENTRAL_DIR_SIGNATURE,
        max(min_version, info.create_version),
        info.create_system,
        max(min_version, info.extract_version),
        info.reserved,
        flags,
        info.compress_type,
        dostime,
        dosdate,
        info.CRC,
        compress_size,
        file_size,
        len(name),
        len(extra),
        len(info.comment),
        0,
        info.internal_attr,
        info.external_attr,
        offset,
    )
    return record + name + extra + info.comment


class ZipStream:
    """A deflated ZIP written entry by entry into `out` (seekable: each entry's header is
    completed in place, so the bytes do not depend on how an entry was written), in memory
    that does not grow with the number of entries (see the module)."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._archive = zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED)
        self._central = tempfile.TemporaryFile()  # noqa: SIM115  (closed by close())
        self._entries = 0

    def _spool_record(self) -> None:
        """Move the entry just completed out of zipfile's memory, into the spooled directory."""
        info = self._archive.filelist.pop()
        self._archive.NameToInfo.pop(info.filename, None)
        self._central.write(central_record(info))
        self._entries += 1

    def write(self, path: str, data: bytes, moment: datetime | None = None) -> None:
        self._archive.writestr(_info(path, moment), data)
        self._spool_record()

    @contextmanager
    def open(self, path: str, moment: datetime | None = None) -> Iterator[IO[bytes]]:
        """An entry written piece by piece: write to the file object it gives."""
        with self._archive.open(_info(path, moment), "w") as entry:
            yield entry
        self._spool_record()

    def __enter__(self) -> ZipStream:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        """Complete the archive, or give it up when the block failed."""
        if kind is None:
            self.close()
        else:
            self.discard()

    def discard(self) -> None:
        """Give the archive up after a failure (a full disk, an error of the caller): nothing
        more is written. Without it zipfile finished the archive when it was collected, into
        a file already closed, and printed a stray traceback after the failure's own error."""
        self._archive.fp = None  # what ZipFile.close() checks before writing anything
        self._central.close()

    def close(self) -> None:
        """Write the central directory and the end records (the archive is complete then)."""
        start = self._archive.start_dir
        # zipfile writes its end record (of no entry: all were moved out) at `start`; the
        # real directory and end records are written over it.
        self._archive.close()
        self._out.seek(start)
        self._central.seek(0)
        shutil.copyfileobj(self._central, self._out, 1 << 20)
        self._central.close()
        end = self._out.tell()
        count, size, offset = self._entries, end - start, start
        if count > FILE_COUNT_LIMIT or offset > ZIP64_LIMIT or size > ZIP64_LIMIT:
            self._out.write(
                END64.pack(END64_SIGNATURE, 44, 45, 45, 0, 0, count, count, size, offset)
            )
            self._out.write(END64_LOCATOR.pack(END64_LOCATOR_SIGNATURE, 0, end, 1))
            count, size, offset = min(count, 0xFFFF), min(size, 0xFFFFFFFF), min(offset, 0xFFFFFFFF)
        self._out.write(END.pack(END_SIGNATURE, 0, 0, count, count, size, offset, 0))
        self._out.flush()


def build_zip(entries: Iterable[tuple[str, bytes, datetime | None]]) -> bytes:
    """A deflated ZIP of (path, data, modification time) entries, in the given order."""
    buffer = io.BytesIO()
    with ZipStream(buffer) as stream:
        for path, data, moment in entries:
            stream.write(path, data, moment)
    return buffer.getvalue()


__all__ = ["ZipStream", "build_zip", "zip_time"]
