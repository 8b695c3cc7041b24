"""LogSegment: one `<20-digit base offset>.log` file of verbatim v2 batches plus its `.index`.

Contract:
- `append(records, last_offset)` writes one or more already-stamped batches at the end; an
  index entry (batch last offset, batch position) is added whenever more than
  `index_interval_bytes` were written since the previous entry (Kafka's rule).
- `translate_offset(o)` finds the first batch whose last offset >= o (index floor + scan).
- `read(start_offset, max_bytes, max_offset, min_one_batch)` returns whole batches only.
- `truncate_to(o)` removes the batch containing o and everything after it.
- `recover()` re-validates every batch (framing, magic, CRC32C, contiguous offsets), cuts the
  file at the first bad or torn batch, rebuilds the index and returns the bytes cut;
  `recovery_problem` then says what was found where (file, position, offset). Deviation:
  Kafka's LogSegment.recover accepts gaps between batches (a compacted log has them); no log
  here is compacted, and baseOffset is not covered by the CRC, so a gap marks a damaged
  baseOffset. A log cleaner, if one is added, must relax this.
- `read` never returns a batch whose CRC fails: bytes not yet checked in this process
  (`verified_end` is the checked prefix: recovered or appended batches) are validated before
  they are served, and a bad one raises CorruptRecordError naming file, position and offset.
  Deviation: Kafka serves stored bytes unchecked (zero-copy sendfile) and leaves detection
  to the consumer's check.crcs and to the follower's append validation.
- Plain synchronous I/O via pread/pwrite on one descriptor of its FileSystem (fs.py);
  `flush()` fsyncs. Not thread-safe.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import CorruptRecordError, KafkaStorageError
from .file_cache import CachedFile
from .fs import OS_FS, FileSystem
from .index import IndexCorruptError, OffsetIndex
from .records import (
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    BatchHeader,
    iter_batches,
    parse_header,
    validate_batch,
)

_PREFIX = struct.Struct(">qi")
# What _scan_positions reads of each batch: baseOffset, batchLength, partitionLeaderEpoch,
# magic, crc, attributes, lastOffsetDelta.
_BATCH_PREFIX = struct.Struct(">qiiBIhi")
_SCAN_PREFIX = _BATCH_PREFIX.size  # 27
_SCAN_CHUNK = 1 << 16
_HEADER_CHUNK = 1 << 20
_PRODUCER_ID = struct.Struct(">q")


def segment_file_name(base_offset: int, suffix: str = ".log") -> str:
    return f"{base_offset:020d}{suffix}"


@dataclass(frozen=True, slots=True)
class BatchPosition:
    """Where a batch starts in a segment, its offset range, and its prefix's leader epoch and
    CRC (what tells two replicas' batches apart without reading their bodies)."""

    base_offset: int
    last_offset: int
    position: int
    size: int
    leader_epoch: int = -1
    crc: int = 0


class LogSegment:
    def __init__(self, dir: Path, base_offset: int, index_interval_bytes: int = 4096,
                 fs: FileSystem = OS_FS) -> None:  # fmt: skip
        self.dir = Path(dir)
        self.fs = fs
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.log_path = self.dir / segment_file_name(base_offset, ".log")
        self.index_path = self.dir / segment_file_name(base_offset, ".index")
        # Opened on demand through the bounded fd cache (file_cache.py); touched now so the
        # file exists from construction on, as before.
        self._file = CachedFile(self.log_path, fs.files)
        self.size = fs.size(self._fd)
        self.index = OffsetIndex(self.index_path, base_offset, fs)
        self._bytes_since_last_index_entry = 0
        self.next_offset = base_offset  # exact after load()/recover()/append
        self.max_timestamp = -1
        self.truncated_on_open = 0  # bytes cut by open() when the file did not frame cleanly
        self.recovery_problem: str | None = None  # what the last recover() cut, and where
        self.index_problem: str | None = None  # why open() rebuilt the index, if it did
        # Bytes [0, verified_end) were CRC-checked by this process (recovered or appended);
        # read() checks anything beyond before serving it.
        self.verified_end = 0
        # Every batch from the index's last entry on, kept in memory (None: not built since
        # the last truncation or recovery): what translate_offset would otherwise scan for
        # each read near the log end. Bounded by index_interval_bytes plus one batch.
        self._tail: list[BatchPosition] | None = None
        self._tail_lasts: list[int] = []
        self._tail_positions: list[int] = []

    @property
    def _fd(self) -> int:
        """An open descriptor for immediate use (never kept: the cache may close it), -1 once
        the segment is closed."""
        return self._file.fd

    # --- opening ---------------------------------------------------------------------

    @classmethod
    def open(cls, dir: Path, base_offset: int, index_interval_bytes: int = 4096,
             fs: FileSystem = OS_FS) -> LogSegment:  # fmt: skip
        """Open an existing (or new, empty) segment trusting its contents (clean part of a log).

        The index is sanity-checked and rebuilt if it does not fit the log file.
        """
        seg = cls(dir, base_offset, index_interval_bytes, fs)
        try:
            seg.index.load(seg.size)
            seg.next_offset = seg._read_next_offset()
        except (IndexCorruptError, CorruptRecordError) as exc:
            seg.truncated_on_open = seg.recover()
            seg.index_problem = str(exc)
        return seg

    def _read_next_offset(self) -> int:
        """Scan from the last index entry to the end: the offset after the last batch.

        Raises if the walk does not end exactly at the end of the file (torn tail or an
        index entry pointing into the middle of a batch), so the caller recovers instead.
        """
        _, pos = self.index.last_entry
        next_offset = self.base_offset
        end = pos
        for bp in self._scan_positions(pos):
            next_offset = bp.last_offset + 1
            end = bp.position + bp.size
        if end != self.size:
            raise CorruptRecordError(
                f"{self.log_path}: batches end at position {end} but the file has {self.size} bytes"
            )
        return next_offset

    # --- scanning --------------------------------------------------------------------

    def _scan_positions(self, start: int, end: int | None = None) -> Iterator[BatchPosition]:
        """Walk batch prefixes from `start` without reading bodies. Stops at a torn tail.

        Reads up to _SCAN_CHUNK bytes at a time and parses the prefixes in memory: a read near
        the log end scans from the index entry before it (up to index_interval_bytes of small
        batches), one read instead of one per batch."""
        end = self.size if end is None else end
        pos = start
        while pos + RECORD_BATCH_OVERHEAD <= end:
            chunk = self.fs.pread(self._fd, min(_SCAN_CHUNK, end - pos), pos)
            n = len(chunk)
            cpos = 0
            while cpos + _SCAN_PREFIX <= n and pos + cpos + RECORD_BATCH_OVERHEAD <= end:
                base, length, epoch, _magic, crc, _attrs, delta = _BATCH_PREFIX.unpack_from(
                    chunk, cpos)
                size = LOG_OVERHEAD + length
                if length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD:
                    raise CorruptRecordError(
                        f"{self.log_path}: batchLength {length} out of range at position "
                        f"{pos + cpos}"
                    )
                if pos + cpos + size > end:
                    return
                yield BatchPosition(base, base + delta, pos + cpos, size, epoch, crc)
                cpos += size
            if cpos == 0:
                return  # the file is shorter than its size says: a torn tail
            pos += cpos

    def batches(self, start_position: int = 0) -> Iterator[tuple[BatchHeader, memoryview, int]]:
        """Yield (header, batch view, position) for whole batches from `start_position`.

        Reads in chunks; stops silently at a torn tail (use recover() to validate).
        """
        pos = start_position
        while pos + LOG_OVERHEAD <= self.size:
            chunk = self.fs.pread(self._fd, min(_SCAN_CHUNK, self.size - pos), pos)
            _, length = _PREFIX.unpack_from(chunk, 0)
            if LOG_OVERHEAD + length > len(chunk) and pos + LOG_OVERHEAD + length <= self.size:
                chunk = self.fs.pread(self._fd, LOG_OVERHEAD + length, pos)  # one large batch
            consumed = 0
            for h, view in iter_batches(chunk, allow_partial_tail=True):
                yield h, view, pos + consumed
                consumed += h.size
            if consumed == 0:
                return
            pos += consumed

    def headers(self, *, with_producer_id: bool = False) -> Iterator[BatchHeader]:
        """Headers of whole batches, reading 1 MiB chunks and skipping bodies.

        With `with_producer_id` only batches with producerId >= 0 are parsed (producer-state
        rebuild). Stops silently at a torn tail.
        """
        pos = 0
        while pos + RECORD_BATCH_OVERHEAD <= self.size:
            chunk = self.fs.pread(self._fd, min(_HEADER_CHUNK, self.size - pos), pos)
            cpos = 0
            while cpos + RECORD_BATCH_OVERHEAD <= len(chunk):
                _, length = _PREFIX.unpack_from(chunk, cpos)
                size = LOG_OVERHEAD + length
                if length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD or pos + cpos + size > self.size:
                    return
                if not with_producer_id or _PRODUCER_ID.unpack_from(chunk, cpos + 43)[0] >= 0:
                    yield parse_header(chunk, cpos)
                cpos += size
            if cpos == 0:
                return
            pos += cpos

    # --- append ----------------------------------------------------------------------

    def append(self, records: bytes, last_offset: int) -> None:
        """Append stamped batches whose final offset is `last_offset`."""
        if self._file.closed:
            raise KafkaStorageError(f"{self.log_path}: segment is closed")
        position = self.size
        pos = 0
        view = memoryview(records)
        while pos < len(view):
            base, length, epoch, _magic, crc, _attrs, delta = _BATCH_PREFIX.unpack_from(view, pos)
            size = LOG_OVERHEAD + length
            if self._bytes_since_last_index_entry > self.index_interval_bytes:
                self.index.append(base + delta, position + pos)
                self._bytes_since_last_index_entry = 0
                if self._tail is not None:
                    self._tail, self._tail_lasts, self._tail_positions = [], [], []
            if self._tail is not None:
                self._tail.append(BatchPosition(base, base + delta, position + pos, size, epoch,
                                                crc))  # fmt: skip
                self._tail_lasts.append(base + delta)
                self._tail_positions.append(position + pos)
            self._bytes_since_last_index_entry += size
            (max_ts,) = struct.unpack_from(">q", view, pos + 35)
            self.max_timestamp = max(self.max_timestamp, max_ts)
            pos += size
        written = self.fs.pwrite(self._fd, records, position)
        if written != len(records):
            raise KafkaStorageError(f"{self.log_path}: short write {written}/{len(records)}")
        if self.verified_end == position:
            # Appended batches were validated (CRC included) by the leader or follower path.
            self.verified_end = position + len(records)
        self.size += len(records)
        self.next_offset = last_offset + 1

    # --- read ------------------------------------------------------------------------

    def translate_offset(self, offset: int, starting_position: int = 0) -> BatchPosition | None:
        """First batch with last_offset >= `offset`, at or after `starting_position`."""
        _, pos = self.index.lookup(offset)
        if pos == self.index.last_entry[1]:  # the scan would walk the tail: look it up
            tail = self._tail_batches()
            i = max(bisect.bisect_left(self._tail_lasts, offset),
                    bisect.bisect_left(self._tail_positions, starting_position))  # fmt: skip
            return tail[i] if i < len(tail) else None
        for bp in self._scan_positions(max(pos, starting_position)):
            if bp.last_offset >= offset:
                return bp
        return None

    def _tail_batches(self) -> list[BatchPosition]:
        if self._tail is None:
            tail = list(self._scan_positions(self.index.last_entry[1]))
            self._tail = tail
            self._tail_lasts = [bp.last_offset for bp in tail]
            self._tail_positions = [bp.position for bp in tail]
        return self._tail

    def _positions_from(self, first: BatchPosition, end: int) -> Iterator[BatchPosition]:
        """The batches from `first` (found by translate_offset) on, ending before `end`."""
        tail = self._tail
        if tail and first.position >= tail[0].position:
            i = bisect.bisect_left(self._tail_positions, first.position)
            for bp in tail[i:]:
                if bp.position + bp.size > end:
                    return
                yield bp
            return
        yield from self._scan_positions(first.position, end)

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
        max_position: int | None = None,
    ) -> bytes:
        """Whole batches from the one containing `start_offset`.

        At most `max_bytes` (but the first batch whole if `min_one_batch`); no batch whose
        last offset is >= `max_offset`; nothing at or beyond `max_position`.
        """
        first = self.translate_offset(start_offset)
        if first is None:
            return b""
        limit = self.size if max_position is None else min(max_position, self.size)
        budget = max(max_bytes, first.size) if min_one_batch else max_bytes
        out_end = first.position
        for bp in self._positions_from(first, limit):
            if max_offset is not None and bp.last_offset >= max_offset:
                break
            if bp.position + bp.size - first.position > budget:
                break
            out_end = bp.position + bp.size
        if out_end == first.position:
            return b""
        data = self.fs.pread(self._fd, out_end - first.position, first.position)
        if out_end > self.verified_end:
            self._verify(data, first.position)
        return data

    def _verify(self, data: bytes, position: int) -> None:
        """CRC-check the batches of `data` (read from `position`) beyond `verified_end`."""
        view = memoryview(data)
        pos = 0
        while pos < len(view):
            h = parse_header(view, pos)
            if position + pos >= self.verified_end:
                try:
                    validate_batch(view[pos : pos + h.size], h)
                except CorruptRecordError as exc:
                    raise CorruptRecordError(
                        f"{self.log_path}: corrupt batch at position {position + pos} "
                        f"(baseOffset {h.base_offset}): {exc}"
                    ) from exc
            pos += h.size
        if position <= self.verified_end:  # contiguous with the checked prefix: extend it
            self.verified_end = max(self.verified_end, position + len(view))

    def read_all(self) -> bytes:
        return self.fs.pread(self._fd, self.size, 0)

    # --- truncation / recovery -------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Drop the batch containing `offset` and all after it; returns bytes removed."""
        bp = self.translate_offset(offset)
        if bp is None:
            return 0
        removed = self.size - bp.position
        self._truncate_at(bp.position)
        self.index.truncate_to(offset)
        self._tail = None
        self.next_offset = self._read_next_offset()
        return removed

    def _truncate_at(self, position: int) -> None:
        self._tail = None
        self.fs.truncate(self._fd, position)
        self.size = position
        self.verified_end = min(self.verified_end, position)
        # Conservative: the next append gets an index entry soon after truncation.
        self._bytes_since_last_index_entry = 0

    def recover(self, max_batch_bytes: int | None = None) -> int:
        """Validate every batch, cut at the first bad/torn one, rebuild the index.

        Returns the number of bytes truncated; `recovery_problem` says why and where.
        """
        self.recovery_problem = None
        self._tail = None
        self.index.reset()
        self._bytes_since_last_index_entry = 0
        self.max_timestamp = -1
        valid_end = 0
        next_offset = self.base_offset
        problem = None
        try:
            for h, view, pos in self._validated_batches():
                if (h.base_offset < next_offset or h.last_offset < h.base_offset
                        or (valid_end and h.base_offset != next_offset)):
                    # Offsets are contiguous within a segment here (no log cleaner); the
                    # baseOffset field lies outside the CRC, so this is its only check.
                    problem = (f"batch offsets {h.base_offset}..{h.last_offset} do not follow "
                               f"offset {next_offset - 1}")  # fmt: skip
                    break
                if max_batch_bytes is not None and h.size > max_batch_bytes:
                    problem = f"batch of {h.size} bytes exceeds {max_batch_bytes}"
                    break
                validate_batch(view, h)
                if self._bytes_since_last_index_entry > self.index_interval_bytes:
                    self.index.append(h.last_offset, pos)
                    self._bytes_since_last_index_entry = 0
                self._bytes_since_last_index_entry += h.size
                self.max_timestamp = max(self.max_timestamp, h.max_timestamp)
                next_offset = h.last_offset + 1
                valid_end = pos + h.size
        except CorruptRecordError as exc:
            problem = str(exc)
        truncated = self.size - valid_end
        if truncated:
            self.recovery_problem = (
                f"{self.log_path}: {problem or 'torn batch (shorter than its length field)'} "
                f"at position {valid_end}, after offset {next_offset - 1}; cut {truncated} bytes"
            )
            self._truncate_at(valid_end)
            self._bytes_since_last_index_entry = 0
        self.verified_end = self.size
        self.next_offset = next_offset
        self._tail = None
        return truncated

    def _validated_batches(self) -> Iterator[tuple[BatchHeader, memoryview, int]]:
        """Like batches() but raises on a corrupt length instead of stopping silently."""
        pos = 0
        while pos + LOG_OVERHEAD <= self.size:
            head = self.fs.pread(self._fd, RECORD_BATCH_OVERHEAD, pos)
            if len(head) < RECORD_BATCH_OVERHEAD:
                return
            _, length = _PREFIX.unpack_from(head, 0)
            size = LOG_OVERHEAD + length
            if length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD or pos + size > self.size:
                return
            data = self.fs.pread(self._fd, size, pos)
            h = parse_header(data)
            yield h, memoryview(data), pos
            pos += size

    # --- lifecycle -------------------------------------------------------------------

    @property
    def is_empty(self) -> bool:
        return self.size == 0

    def flush(self) -> None:
        with self._file.pinned() as fd:  # safe if a caller runs it off the event loop
            self.fs.fsync(fd)
        self.index.flush()

    def dup_fds(self) -> list[int]:
        """Duplicates of the log and index descriptors, for an fsync in another thread (the
        caller closes them; they stay valid if this segment is closed or deleted meanwhile)."""
        return [self.fs.dup(self._fd), self.index.dup_fd()]

    def close(self) -> None:
        self._file.close()
        self.index.close()

    def delete(self) -> None:
        self.close()
        for p in (self.log_path, self.index_path):
            self.fs.unlink(p)

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path.name}, size={self.size}, next_offset={self.next_offset})"
