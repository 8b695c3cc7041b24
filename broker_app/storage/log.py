"""Log: one topic-partition's log (Kafka's UnifiedLog + LocalLog), in `<topic>-<partition>/`.

Contract:
- `Log.open(dir, config, recovery_point)` loads segments; every segment that may hold data
  at or after the recovery point is re-validated (`LogSegment.recover`), a torn or corrupt
  tail is cut and all later segments are deleted; the epoch cache is truncated to the LEO
  and the producer state is rebuilt by scanning the log.
- `append_as_leader` validates every batch first (nothing is written if one is bad), assigns
  offsets from the LEO, stamps the leader epoch, checks idempotent producers; a retried
  duplicate returns the original offsets with `duplicate=True` and writes nothing.
- `append_as_follower` keeps offsets and epochs as sent (first offset must be >= LEO).
- The epoch cache is updated (and checkpointed) before the data is written, so a crash in
  between leaves an entry beyond the LEO, which the next open truncates away.
- `read` returns whole batches only; `max_offset` is an exclusive bound on batch last offsets.
- The high watermark lives here (like UnifiedLog) but is persisted by LogManager.
- Single-threaded: the caller serialises access (the asyncio server's one thread).
"""

from __future__ import annotations

import bisect
import functools
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from .checkpoints import LEADER_EPOCH_CHECKPOINT, LeaderEpochCheckpointFile, fsync_dir
from .epoch_cache import LeaderEpochCache
from .errors import (
    CorruptRecordError,
    DuplicateSequenceError,
    InvalidRecordError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    UnexpectedAppendOffsetError,
)
from .producer_state import ProducerStateManager
from .records import BatchHeader, decode_records, iter_batches, stamp_batch, validate_batch
from .segment import LogSegment
from .topic_partition import TopicPartition

__all__ = ["Log", "LogAppendInfo", "LogConfig", "TimestampAndOffset", "TopicPartition"]

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3


_F = TypeVar("_F", bound=Callable[..., Any])


def _io_guard(fn: _F) -> _F:
    """Turn OSError into KafkaStorageError and take the log offline (Kafka's behaviour)."""

    @functools.wraps(fn)
    def wrapper(self: Log, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(self, *args, **kwargs)
        except OSError as exc:
            self.offline_reason = f"{fn.__name__}: {exc}"
            raise KafkaStorageError(f"I/O error in {fn.__name__} on {self.dir}: {exc}") from exc

    return wrapper  # type: ignore[return-value]


@dataclass
class LogConfig:
    segment_bytes: int = 16 * 1024 * 1024
    index_interval_bytes: int = 4096
    max_batch_bytes: int = 1024 * 1024
    # fsync after every append (Kafka's flush.messages=1); default relies on replication.
    flush_every_batch: bool = False


@dataclass(frozen=True, slots=True)
class LogAppendInfo:
    first_offset: int
    last_offset: int
    num_records: int
    max_timestamp: int
    duplicate: bool = False


class TimestampAndOffset(NamedTuple):
    timestamp: int
    offset: int
    leader_epoch: int | None


class Log:
    def __init__(
        self,
        dir: Path,
        config: LogConfig,
        segments: list[LogSegment],
        recovery_point: int,
    ) -> None:
        self.dir = Path(dir)
        self.config = config
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        try:
            self.topic_partition: TopicPartition | None = TopicPartition.parse_dir_name(
                self.dir.name
            )
        except ValueError:
            self.topic_partition = None
        self.leader_epoch_cache = LeaderEpochCache(
            LeaderEpochCheckpointFile(self.dir / LEADER_EPOCH_CHECKPOINT)
        )
        self.producer_state = ProducerStateManager()
        self.recovery_point = min(recovery_point, self.log_end_offset)
        self.high_watermark = self.log_start_offset
        self._closed = False
        # Set on the first I/O error: like Kafka taking the log dir offline, the log refuses
        # further work until the broker restarts and recovers it.
        self.offline_reason: str | None = None

    # --- opening ---------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        dir: Path,
        config: LogConfig | None = None,
        recovery_point: int = 0,
        *,
        had_clean_shutdown: bool = False,
    ) -> Log:
        """Load (or create) the log in `dir`, recovering everything after `recovery_point`.

        With `had_clean_shutdown` no segment is re-validated (indexes are still checked).
        """
        config = config or LogConfig()
        dir = Path(dir)
        dir.mkdir(parents=True, exist_ok=True)
        for stray in dir.glob("*.tmp"):
            stray.unlink(missing_ok=True)  # half-written checkpoints from a crash
        bases = sorted(
            int(p.stem) for p in dir.glob("*.log") if len(p.stem) == 20 and p.stem.isdigit()
        )
        log_names = {f"{b:020d}" for b in bases}
        for idx in dir.glob("*.index"):
            if idx.stem not in log_names:
                idx.unlink(missing_ok=True)  # index without its log: Kafka deletes it too
        segments: list[LogSegment] = []
        for i, base in enumerate(bases):
            next_base = bases[i + 1] if i + 1 < len(bases) else None
            may_hold_unflushed = next_base is None or next_base > recovery_point
            if had_clean_shutdown or not may_hold_unflushed:
                # Trusted, but a file that does not frame cleanly is recovered anyway.
                seg = LogSegment.open(dir, base, config.index_interval_bytes)
                truncated = seg.truncated_on_open
            else:
                seg = LogSegment(dir, base, config.index_interval_bytes)
                truncated = seg.recover()
            segments.append(seg)
            if truncated and next_base is not None:
                # Everything after a corrupt batch is unreachable: delete later segments.
                for later in bases[i + 1 :]:
                    LogSegment(dir, later, config.index_interval_bytes).delete()
                break
        # An empty last segment beyond a truncated predecessor would leave a hole in the
        # offsets (a crash right after a roll, then a torn tail): drop it.
        while (
            len(segments) > 1
            and segments[-1].is_empty
            and segments[-2].next_offset < segments[-1].base_offset
        ):
            segments.pop().delete()
        if not segments:
            segments.append(LogSegment(dir, 0, config.index_interval_bytes))
            fsync_dir(dir)
        log = cls(dir, config, segments, recovery_point)
        if had_clean_shutdown:
            log.recovery_point = log.log_end_offset
        log.leader_epoch_cache.truncate_from_end(log.log_end_offset)
        log.leader_epoch_cache.truncate_from_start(log.log_start_offset)
        log._rebuild_producer_state()
        return log

    # --- state -----------------------------------------------------------------------

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def log_start_offset(self) -> int:
        return self._segments[0].base_offset

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def size(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch; see LeaderEpochCache.end_offset_for."""
        return self.leader_epoch_cache.end_offset_for(epoch, self.log_end_offset)

    def update_high_watermark(self, hw: int) -> int:
        """Set the HW, clamped to [log_start_offset, LEO]; returns the value stored."""
        self.high_watermark = max(self.log_start_offset, min(hw, self.log_end_offset))
        return self.high_watermark

    def maybe_increment_high_watermark(self, hw: int) -> bool:
        """Move the HW forward only (leader side); True if it moved."""
        old = self.high_watermark
        if hw > old:
            return self.update_high_watermark(hw) > old
        return False

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"log {self.dir} is closed")
        if self.offline_reason is not None:
            raise KafkaStorageError(f"log {self.dir} is offline after an I/O error: "
                                    f"{self.offline_reason}")  # fmt: skip

    # --- append ----------------------------------------------------------------------

    def _analyze(
        self, records: bytes | memoryview, *, leader: bool
    ) -> list[tuple[BatchHeader, memoryview]]:
        """Frame and validate every batch before anything is written."""
        where = f"in append to {self.dir.name}"
        try:
            batches = list(iter_batches(records, allow_partial_tail=not leader))
        except CorruptRecordError as exc:
            raise type(exc)(f"{exc} {where}") from exc
        total = sum(h.size for h, _ in batches)
        if leader and total > self.config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"batch size {total} bytes {where} exceeds the segment size "
                f"{self.config.segment_bytes}"
            )
        for h, view in batches:
            if leader and h.size > self.config.max_batch_bytes:
                raise RecordBatchTooLargeError(
                    f"batch at position of baseOffset {h.base_offset} is {h.size} bytes {where}, "
                    f"above max_batch_bytes {self.config.max_batch_bytes}"
                )
            try:
                validate_batch(view, h)
            except CorruptRecordError as exc:
                raise type(exc)(f"{exc} {where}") from exc
            if leader and h.is_control:
                raise InvalidRecordError(f"clients may not write control batches {where}")
            if h.is_transactional and h.producer_id < 0:
                raise InvalidRecordError(f"transactional batch without a producer id {where}")
        return batches

    @_io_guard
    def append_as_leader(self, records: bytes | memoryview, leader_epoch: int) -> LogAppendInfo:
        self._check_open()
        batches = self._analyze(records, leader=True)
        if not batches:
            raise InvalidRecordError(f"append to {self.dir.name} holds no record batch")
        first_offset = offset = self.log_end_offset
        staged = self.producer_state.begin(origin_client=True)
        out: list[bytes] = []
        num_records = 0
        max_ts = -1
        for h, view in batches:
            last = offset + h.last_offset_delta
            try:
                staged.check_and_update(h, offset, last)
            except DuplicateSequenceError as dup:
                if len(batches) == 1:
                    return LogAppendInfo(dup.first_offset, dup.last_offset, h.records_count,
                                         h.max_timestamp, duplicate=True)  # fmt: skip
                raise
            out.append(stamp_batch(view, offset, leader_epoch))
            num_records += h.records_count
            max_ts = max(max_ts, h.max_timestamp)
            offset = last + 1
        last_offset = offset - 1
        latest = self.leader_epoch_cache.latest_epoch
        if leader_epoch >= 0 and (latest is None or leader_epoch > latest):
            self.leader_epoch_cache.assign(leader_epoch, first_offset)
        self._append(b"".join(out), first_offset, last_offset)
        staged.commit()
        return LogAppendInfo(first_offset, last_offset, num_records, max_ts)

    @_io_guard
    def append_as_follower(self, records: bytes | memoryview) -> LogAppendInfo:
        """Append batches replicated from the leader verbatim.

        A trailing partial batch (fetch responses may end mid-batch) is ignored; if no whole
        batch is present nothing happens and first/last offset are -1.
        """
        self._check_open()
        batches = self._analyze(records, leader=False)
        if not batches:
            return LogAppendInfo(-1, -1, 0, -1)
        leo = self.log_end_offset
        first_offset = batches[0][0].base_offset
        if first_offset < leo:
            raise UnexpectedAppendOffsetError(
                f"follower append to {self.dir.name} starts at offset {first_offset}, "
                f"below the log end offset {leo}"
            )
        prev_last = first_offset - 1
        for h, _ in batches:
            if h.base_offset <= prev_last:
                raise InvalidRecordError(
                    f"follower append to {self.dir.name}: batch at offset {h.base_offset} does "
                    f"not follow offset {prev_last}"
                )
            prev_last = h.last_offset
        staged = self.producer_state.begin(origin_client=False)
        for h, _ in batches:
            staged.check_and_update(h, h.base_offset, h.last_offset)
            epoch = h.partition_leader_epoch
            latest = self.leader_epoch_cache.latest_epoch
            if epoch >= 0 and (latest is None or epoch > latest):
                self.leader_epoch_cache.assign(epoch, h.base_offset)
        total = sum(h.size for h, _ in batches)
        data = bytes(memoryview(records)[:total])
        self._append(data, first_offset, prev_last)
        staged.commit()
        return LogAppendInfo(
            first_offset,
            prev_last,
            sum(h.records_count for h, _ in batches),
            max(h.max_timestamp for h, _ in batches),
        )

    def _append(self, data: bytes, first_offset: int, last_offset: int) -> None:
        seg = self.active_segment
        # An empty active segment takes any offset (a follower may skip a gap, as in Kafka).
        if not seg.is_empty and (
            seg.size + len(data) > self.config.segment_bytes
            or not seg.index.can_append_offset(last_offset)
        ):
            seg = self._roll(first_offset)
        seg.append(data, last_offset)
        if self.config.flush_every_batch:
            self.flush()

    def _add_segment(self, base_offset: int) -> LogSegment:
        seg = LogSegment(self.dir, base_offset, self.config.index_interval_bytes)
        fsync_dir(self.dir)
        self._segments.append(seg)
        self._bases.append(base_offset)
        return seg

    @_io_guard
    def roll(self) -> LogSegment:
        """Start a new active segment at the LEO (no-op if the active one is empty)."""
        self._check_open()
        if self.active_segment.is_empty:
            return self.active_segment
        return self._roll(self.log_end_offset)

    def _roll(self, base_offset: int) -> LogSegment:
        # Kafka flushes the finished segment when rolling, so the recovery point advances.
        self.flush(self.log_end_offset)
        return self._add_segment(base_offset)

    # --- read ------------------------------------------------------------------------

    @_io_guard
    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> bytes:
        """Whole batches from the one containing `start_offset` (one segment per call)."""
        self._check_open()
        leo = self.log_end_offset
        if start_offset < self.log_start_offset or start_offset > leo:
            raise OffsetOutOfRangeError(
                f"offset {start_offset} is out of range for {self.dir.name}: "
                f"log start offset {self.log_start_offset}, log end offset {leo}"
            )
        if start_offset == leo or (max_offset is not None and start_offset >= max_offset):
            return b""
        i = bisect.bisect_right(self._bases, start_offset) - 1
        for seg in self._segments[max(i, 0) :]:
            if start_offset >= seg.next_offset:
                continue  # offset falls in a gap after this segment's last batch
            return seg.read(start_offset, max_bytes, max_offset, min_one_batch)
        return b""

    def batches(self, start_offset: int = 0) -> Iterator[tuple[BatchHeader, memoryview]]:
        """Every whole batch with last offset >= `start_offset`, in order (tests, tools)."""
        for seg in self._segments:
            if seg.next_offset <= start_offset:
                continue
            for h, view, _ in seg.batches():
                if h.last_offset >= start_offset:
                    yield h, view

    @_io_guard
    def fetch_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: -2 earliest, -1 latest, -3 max timestamp, else first record >= ts."""
        self._check_open()
        cache = self.leader_epoch_cache
        if timestamp == EARLIEST_TIMESTAMP:
            start = self.log_start_offset
            return TimestampAndOffset(-1, start, cache.epoch_for_offset(start))
        if timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(-1, self.log_end_offset, cache.latest_epoch)
        if timestamp == MAX_TIMESTAMP:
            best: tuple[BatchHeader, bytes] | None = None
            for h, view in self.batches():
                if best is None or h.max_timestamp > best[0].max_timestamp:
                    best = (h, bytes(view))
            if best is None:
                return None
            rec = next(r for r in decode_records(best[1]) if r.timestamp == best[0].max_timestamp)
            return TimestampAndOffset(rec.timestamp, rec.offset, best[0].partition_leader_epoch)
        for h, view in self.batches():
            if h.max_timestamp >= timestamp:
                for rec in decode_records(view):
                    if rec.timestamp >= timestamp:
                        return TimestampAndOffset(rec.timestamp, rec.offset,
                                                  h.partition_leader_epoch)  # fmt: skip
        return None

    # --- truncation ------------------------------------------------------------------

    @_io_guard
    def truncate_to(self, offset: int) -> bool:
        """Drop every offset >= `offset`. Returns False if there was nothing to drop.

        As in Kafka, the whole batch containing `offset` goes, so the LEO may end up below
        `offset` if it falls inside a batch.
        """
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate {self.dir.name} to negative offset {offset}")
        if offset >= self.log_end_offset:
            return False
        if offset < self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        while len(self._segments) > 1 and self._segments[-1].base_offset > offset:
            self._segments.pop().delete()
            self._bases.pop()
        self.active_segment.truncate_to(offset)
        self._after_truncation()
        return True

    @_io_guard
    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete everything; the log restarts empty at `offset` (follower far behind)."""
        self._check_open()
        for seg in self._segments:
            seg.delete()
        self._segments, self._bases = [], []
        self._add_segment(offset)
        self.leader_epoch_cache.clear_and_flush()
        self.producer_state.truncate_fully()
        self.high_watermark = offset
        self.recovery_point = offset

    def _after_truncation(self) -> None:
        leo = self.log_end_offset
        self.leader_epoch_cache.truncate_from_end(leo)
        self._rebuild_producer_state()
        self.high_watermark = min(self.high_watermark, leo)
        self.recovery_point = min(self.recovery_point, leo)

    def _rebuild_producer_state(self) -> None:
        self.producer_state.rebuild(
            h for seg in self._segments for h in seg.headers(with_producer_id=True)
        )

    # --- durability / lifecycle ------------------------------------------------------

    @_io_guard
    def flush(self, up_to: int | None = None) -> None:
        """fsync segments holding offsets in [recovery_point, up_to); advance the recovery point."""
        self._check_open()
        target = self.log_end_offset if up_to is None else min(up_to, self.log_end_offset)
        if target <= self.recovery_point:
            return
        for seg in self._segments:
            if seg.base_offset < target and seg.next_offset > self.recovery_point:
                seg.flush()
        self.recovery_point = target

    def close(self) -> None:
        if self._closed:
            return
        for seg in self._segments:
            seg.close()
        self._closed = True

    def delete(self) -> None:
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        parent = self.dir.parent
        if parent.exists():
            fsync_dir(parent)

    def __repr__(self) -> str:
        return (
            f"Log({self.dir.name}, start={self.log_start_offset}, leo={self.log_end_offset}, "
            f"hw={self.high_watermark}, segments={len(self._segments)})"
        )
