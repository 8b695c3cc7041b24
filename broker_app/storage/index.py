"""OffsetIndex: Kafka's sparse `.index` file, 8-byte entries (relative offset i32, position i32).

Contract:
- Entries are (offset, position) with strictly increasing offsets and positions; the offset is
  the last offset of the batch starting at `position` (as Kafka's LogSegment.append does), so
  `lookup(t)` = the greatest entry with offset <= t is a safe place to start scanning for t.
- `lookup` on an empty index (or below the first entry) returns (base_offset, 0).
- The file holds exactly the entries (no preallocation); `truncate_to(o)` drops entries with
  offset >= o. `load()` refuses an inconsistent file with IndexCorruptError, and the segment
  then rebuilds the index from the log (Kafka's sanity check + rebuild on recovery).
- Writes go to the page cache of its FileSystem (fs.py); `flush()` fsyncs. Not thread-safe.
"""

from __future__ import annotations

import bisect
import struct
from pathlib import Path

from .errors import StorageError
from .file_cache import CachedFile
from .fs import OS_FS, FileSystem

ENTRY = struct.Struct(">ii")
ENTRY_SIZE = ENTRY.size  # 8
INT32_MAX = 2**31 - 1


class IndexCorruptError(StorageError):
    """An index file that does not describe its segment; rebuild it."""


class OffsetIndex:
    def __init__(self, path: Path, base_offset: int, fs: FileSystem = OS_FS) -> None:
        self.path = Path(path)
        self.base_offset = base_offset
        self._fs = fs
        self._offsets: list[int] = []
        self._positions: list[int] = []
        # Opened on demand through the bounded fd cache (file_cache.py); touched now so the
        # file exists from construction on, as before.
        self._file = CachedFile(self.path, fs.files)
        self._file.fd  # noqa: B018 - creates the file

    @property
    def _fd(self) -> int:
        return self._file.fd

    # --- loading ---------------------------------------------------------------------

    def load(self, max_position: int) -> None:
        """Read entries from disk, checking them against a log of `max_position` bytes."""
        size = self._fs.size(self._fd)
        if size % ENTRY_SIZE:
            raise IndexCorruptError(f"{self.path}: size {size} is not a multiple of {ENTRY_SIZE}")
        data = self._fs.pread(self._fd, size, 0)
        offsets: list[int] = []
        positions: list[int] = []
        for i, (rel, pos) in enumerate(ENTRY.iter_unpack(data)):
            off = self.base_offset + rel
            if rel < 0 or pos < 0 or pos >= max(max_position, 1):
                raise IndexCorruptError(
                    f"{self.path}: entry {i} (relative offset {rel}, position {pos}) is outside "
                    f"the segment ({max_position} bytes)"
                )
            if offsets and (off <= offsets[-1] or pos <= positions[-1]):
                raise IndexCorruptError(f"{self.path}: entry {i} is not increasing")
            offsets.append(off)
            positions.append(pos)
        self._offsets, self._positions = offsets, positions

    def reset(self) -> None:
        """Drop all entries (before a rebuild)."""
        self._offsets.clear()
        self._positions.clear()
        self._fs.truncate(self._fd, 0)

    # --- queries ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._offsets, self._positions, strict=True))

    @property
    def last_entry(self) -> tuple[int, int]:
        if not self._offsets:
            return self.base_offset, 0
        return self._offsets[-1], self._positions[-1]

    def lookup(self, offset: int) -> tuple[int, int]:
        """Greatest entry with entry offset <= `offset`, else (base_offset, 0)."""
        i = bisect.bisect_right(self._offsets, offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self._offsets[i], self._positions[i]

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    # --- mutation --------------------------------------------------------------------

    def append(self, offset: int, position: int) -> None:
        if self._offsets and (offset <= self._offsets[-1] or position <= self._positions[-1]):
            raise IndexCorruptError(
                f"{self.path}: entry ({offset}, {position}) is not after "
                f"({self._offsets[-1]}, {self._positions[-1]})"
            )
        if not self.can_append_offset(offset):
            raise IndexCorruptError(f"{self.path}: offset {offset} does not fit a relative i32")
        self._fs.pwrite(self._fd, ENTRY.pack(offset - self.base_offset, position),
                  len(self._offsets) * ENTRY_SIZE)  # fmt: skip
        self._offsets.append(offset)
        self._positions.append(position)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= `offset`."""
        keep = bisect.bisect_left(self._offsets, offset)
        del self._offsets[keep:]
        del self._positions[keep:]
        self._fs.truncate(self._fd, keep * ENTRY_SIZE)

    def flush(self) -> None:
        with self._file.pinned() as fd:
            self._fs.fsync(fd)

    def dup_fd(self) -> int:
        return self._fs.dup(self._fd)

    def close(self) -> None:
        self._file.close()
