"""Kafka's text checkpoint files.

Format (Kafka's CheckpointFile): line 1 the version (0), line 2 the entry count, then one
entry per line, every line ending in "\\n":
- OffsetCheckpointFile (replication-offset-checkpoint, recovery-point-offset-checkpoint):
  "topic partition offset"
- LeaderEpochCheckpointFile (leader-epoch-checkpoint): "epoch startOffset"

Writes are atomic: write `<name>.tmp`, fsync, rename over the file, fsync the directory.
A missing file reads as empty. A malformed file raises CheckpointError naming file and line.
All I/O goes through a FileSystem (fs.py), the machine's unless one is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from .errors import CheckpointError
from .fs import OS_FS, FileSystem
from .topic_partition import TopicPartition

CURRENT_VERSION = 0
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_OFFSET_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


def fsync_dir(path: Path, fs: FileSystem = OS_FS) -> None:
    fs.fsync_dir(path)


def write_atomically(path: Path, text: str, fs: FileSystem = OS_FS) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    data = text.encode("utf-8")
    fd = fs.open(tmp)
    try:
        fs.truncate(fd, 0)
        fs.pwrite(fd, data, 0)
        fs.fsync(fd)
    finally:
        fs.close(fd)
    fs.replace(tmp, path)
    fs.fsync_dir(path.parent)


def _read_lines(path: Path, fs: FileSystem) -> list[str] | None:
    try:
        text = fs.read_bytes(path).decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise CheckpointError(f"{path}: not UTF-8 text ({exc})") from exc
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _parse_header(path: Path, lines: list[str]) -> int:
    if len(lines) < 2:
        raise CheckpointError(f"{path}: line {len(lines) + 1}: missing version/count header")
    try:
        version = int(lines[0])
    except ValueError:
        raise CheckpointError(f"{path}: line 1: version {lines[0]!r} is not an integer") from None
    if version != CURRENT_VERSION:
        raise CheckpointError(
            f"{path}: line 1: unsupported version {version} (expected {CURRENT_VERSION})"
        )
    try:
        count = int(lines[1])
    except ValueError:
        raise CheckpointError(f"{path}: line 2: count {lines[1]!r} is not an integer") from None
    if count != len(lines) - 2:
        raise CheckpointError(
            f"{path}: line 2: expected {count} entries but found {len(lines) - 2}"
        )
    return count


def _ints(path: Path, lineno: int, fields: list[str], names: list[str]) -> list[int]:
    out = []
    for field, name in zip(fields, names, strict=True):
        try:
            out.append(int(field))
        except ValueError:
            raise CheckpointError(
                f"{path}: line {lineno}: {name} {field!r} is not an integer"
            ) from None
    return out


class OffsetCheckpointFile:
    """(topic, partition) -> offset: replication-offset- and recovery-point-offset-checkpoint."""

    def __init__(self, path: Path, fs: FileSystem = OS_FS) -> None:
        self.path = Path(path)
        self.fs = fs

    def write(self, offsets: dict[tuple[str, int], int]) -> None:
        lines = [str(CURRENT_VERSION), str(len(offsets))]
        for (topic, partition), offset in sorted(offsets.items()):
            if not topic or any(c.isspace() for c in topic):
                raise CheckpointError(f"{self.path}: topic name {topic!r} cannot be written")
            lines.append(f"{topic} {partition} {offset}")
        write_atomically(self.path, "\n".join(lines) + "\n", self.fs)

    def read(self) -> dict[tuple[str, int], int]:
        lines = _read_lines(self.path, self.fs)
        if lines is None:
            return {}
        _parse_header(self.path, lines)
        out: dict[tuple[str, int], int] = {}
        for i, line in enumerate(lines[2:], start=3):
            fields = line.split(" ")
            if len(fields) != 3:
                raise CheckpointError(
                    f"{self.path}: line {i}: expected 'topic partition offset', got {line!r}"
                )
            partition, offset = _ints(self.path, i, fields[1:], ["partition", "offset"])
            out[TopicPartition(fields[0], partition)] = offset
        return out


class LeaderEpochCheckpointFile:
    """leader-epoch-checkpoint: ordered (epoch, start_offset) entries."""

    def __init__(self, path: Path, fs: FileSystem = OS_FS) -> None:
        self.path = Path(path)
        self.fs = fs

    def write(self, entries: list[EpochEntry] | list[tuple[int, int]]) -> None:
        lines = [str(CURRENT_VERSION), str(len(entries))]
        lines += [f"{epoch} {offset}" for epoch, offset in entries]
        write_atomically(self.path, "\n".join(lines) + "\n", self.fs)

    def read(self) -> list[EpochEntry]:
        lines = _read_lines(self.path, self.fs)
        if lines is None:
            return []
        _parse_header(self.path, lines)
        out: list[EpochEntry] = []
        for i, line in enumerate(lines[2:], start=3):
            fields = line.split(" ")
            if len(fields) != 2:
                raise CheckpointError(
                    f"{self.path}: line {i}: expected 'epoch startOffset', got {line!r}"
                )
            epoch, offset = _ints(self.path, i, fields, ["epoch", "startOffset"])
            out.append(EpochEntry(epoch, offset))
        return out
