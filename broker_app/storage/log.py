"""Log: one topic-partition's log (Kafka's UnifiedLog + LocalLog), in `<topic>-<partition>/`.

Contract:
- `Log.open(dir, config, recovery_point)` loads segments; every segment that may hold data
  at or after the recovery point is re-validated (`LogSegment.recover`), a torn or corrupt
  tail is cut and all later segments are deleted; the epoch cache is truncated to the LEO
  and the producer state is rebuilt by scanning the log. Each cut and each rebuilt index is
  logged as an error naming file, position and offset (`recovery_problems` keeps them).
- After a clean shutdown the active (last) segment is re-validated too. Deviation: Kafka's
  LogLoader skips recovery entirely when the clean-shutdown marker exists, because reading
  the last segment of every log is costly at start-up (KAFKA-4380, PR #2104). The marker
  says the writes reached the disk, not that the disk kept them: bits flipped in a stopped
  broker's active segment would otherwise be served and replicated (found by the
  `corrupt-file` nemesis). One segment per log is bounded by segment.bytes.
- A malformed leader-epoch-checkpoint, or a missing one beside records, is rebuilt from the
  batches' partitionLeaderEpoch (as Kafka's LogSegment.recover re-assigns epochs); Kafka
  fails the log dir on a malformed file and starts a missing one empty.
- `read` never serves a batch whose CRC fails (LogSegment.read checks what this process has
  not checked yet); on one, the log goes offline (KafkaStorageError, KAFKA_STORAGE_ERROR to
  the fetcher) with an error naming file and offset. Deviation: Kafka serves the bytes and
  relies on the consumer's check.crcs; it takes a log dir offline only on I/O errors.
- `append_as_leader` validates every batch first (nothing is written if one is bad), assigns
  offsets from the LEO, stamps the leader epoch, checks idempotent producers; a retried
  duplicate returns the original offsets with `duplicate=True` and writes nothing.
- `append_as_follower` keeps offsets and epochs as sent (first offset must be >= LEO).
- The epoch cache is updated (and checkpointed) before the data is written, so a crash in
  between leaves an entry beyond the LEO, which the next open truncates away.
- `read` returns whole batches only; `max_offset` is an exclusive bound on batch last offsets.
- The high watermark lives here (like UnifiedLog) but is persisted by LogManager.
- `maybe_increment_log_start_offset(offset)` (DeleteRecords, and a follower copying its
  leader's log start) moves the log start forward, never past the HW, and deletes segments
  entirely below it. Deviation: Kafka checkpoints every partition's log start periodically in
  the directory-wide `log-start-offset-checkpoint`; here each log writes its own
  `log-start-offset` file (atomically) at once, so a crash cannot bring deleted records back.
- Single-threaded: the caller serialises access (the asyncio server's one thread).
"""

from __future__ import annotations

import bisect
import functools
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from broker_app.environment import wall_ms

from .append import AppendLimits, LogAppendInfo, prepare_follower_append, prepare_leader_append
from .checkpoints import (
    LEADER_EPOCH_CHECKPOINT,
    LeaderEpochCheckpointFile,
    fsync_dir,
    write_atomically,
)
from .epoch_cache import LeaderEpochCache
from .errors import CheckpointError, CorruptRecordError, KafkaStorageError
from .fs import OS_FS, FileSystem
from .log_validator import DEFAULT_TIMESTAMP_AFTER_MAX_MS, DEFAULT_TIMESTAMP_BEFORE_MAX_MS
from .producer_state import ProducerStateManager
from .records import DEFAULT_MAX_DECOMPRESSED_BYTES, BatchHeader, decode_records
from .replica_log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    EpochsAndHighWatermark,
    FlushJob,
    TimestampAndOffset,
)
from .retention import RetentionUnit
from .segment import BatchPosition, LogSegment
from .topic_partition import TopicPartition

LOG_START_OFFSET_FILE = "log-start-offset"  # this log's start, when above its first segment

__all__ = ["Log", "LogAppendInfo", "LogConfig", "TimestampAndOffset", "TopicPartition"]

_logger = logging.getLogger(__name__)


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
    # LogValidator bounds for leader appends (see log_validator.py)
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    timestamp_before_max_ms: int = DEFAULT_TIMESTAMP_BEFORE_MAX_MS
    timestamp_after_max_ms: int = DEFAULT_TIMESTAMP_AFTER_MAX_MS
    # cleanup.policy includes "compact": every record a client writes needs a key (KIP-467).
    compacted: bool = False
    # Rolling a segment fsyncs the finished one. False: at once, in roll (tests, tools).
    # True: only record it in `flush_wanted`; the I/O edge (server/log_flusher.py) runs the
    # flush off the event loop, as Kafka schedules it on its scheduler thread.
    defer_roll_flush: bool = False


class Log(EpochsAndHighWatermark):
    def __init__(
        self,
        dir: Path,
        config: LogConfig,
        segments: list[LogSegment],
        recovery_point: int,
        epoch_cache: LeaderEpochCache | None = None,
        fs: FileSystem = OS_FS,
    ) -> None:
        self.dir = Path(dir)
        self.fs = fs
        self.config = config
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._start_offset = 0  # DeleteRecords' log start; the first segment's base if higher
        try:
            self.topic_partition: TopicPartition | None = TopicPartition.parse_dir_name(
                self.dir.name
            )
        except ValueError:
            self.topic_partition = None
        # Log.open reads the checkpoint; a bare constructor does no file I/O.
        self.leader_epoch_cache = epoch_cache or LeaderEpochCache(None)
        self.producer_state = ProducerStateManager()
        self.recovery_point = min(recovery_point, self.log_end_offset)
        self.high_watermark = self.log_start_offset
        self._closed = False
        self._generation = 0  # bumped by every truncation (FlushJob ordering)
        self.flush_wanted = 0  # offset below which a deferred roll flush is still owed
        # Set on the first I/O error: like Kafka taking the log dir offline, the log refuses
        # further work until the broker restarts and recovers it.
        self.offline_reason: str | None = None
        # What Log.open found damaged and repaired (also logged as errors); for tests and tools.
        self.recovery_problems: list[str] = []
        self.recovery_cut_data = False  # Log.open cut records off (damage, or a torn tail)
        # Wall clock for the LogValidator's timestamp window (record timestamps are wall time).
        self.wall_clock_ms: Callable[[], int] = wall_ms  # the LogManager sets the broker's

    # --- opening ---------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        dir: Path,
        config: LogConfig | None = None,
        recovery_point: int = 0,
        *,
        had_clean_shutdown: bool = False,
        fs: FileSystem = OS_FS,
    ) -> Log:
        """Load (or create) the log in `dir`, recovering everything after `recovery_point`.

        With `had_clean_shutdown` only the active segment is re-validated (indexes are still
        checked): see the module docstring for why this differs from Kafka.
        """
        config = config or LogConfig()
        dir = Path(dir)
        fs.mkdirs(dir)
        names = fs.listdir(dir)
        for name in names:
            if name.endswith(".tmp"):
                fs.unlink(dir / name)  # half-written checkpoints from a crash
        stems = [n[: -len(".log")] for n in names if n.endswith(".log")]
        bases = sorted(int(stem) for stem in stems if len(stem) == 20 and stem.isdigit())
        log_names = {f"{b:020d}" for b in bases}
        for name in names:
            if name.endswith(".index") and name[: -len(".index")] not in log_names:
                fs.unlink(dir / name)  # index without its log: Kafka deletes it too
        segments: list[LogSegment] = []
        problems: list[str] = []
        lost_data = False  # a segment was cut: records this replica once held are gone
        for i, base in enumerate(bases):
            next_base = bases[i + 1] if i + 1 < len(bases) else None
            may_hold_unflushed = next_base is None or next_base > recovery_point
            if next_base is not None and (had_clean_shutdown or not may_hold_unflushed):
                # Trusted, but a file that does not frame cleanly is recovered anyway.
                seg = LogSegment.open(dir, base, config.index_interval_bytes, fs)
                truncated = seg.truncated_on_open
                if seg.index_problem and not truncated:
                    problems.append(f"rebuilt the index: {seg.index_problem}")
            else:
                seg = LogSegment(dir, base, config.index_interval_bytes, fs)
                truncated = seg.recover()
            if seg.recovery_problem:
                problems.append(seg.recovery_problem)
                lost_data = True
            segments.append(seg)
            if truncated and next_base is not None:
                # Everything after a corrupt batch is unreachable: delete later segments.
                for later in bases[i + 1 :]:
                    LogSegment(dir, later, config.index_interval_bytes, fs).delete()
                problems.append(f"deleted the segments from offset {next_base} on (they "
                                f"follow the cut)")  # fmt: skip
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
            segments.append(LogSegment(dir, 0, config.index_interval_bytes, fs))
            fsync_dir(dir, fs)
        epoch_checkpoint = LeaderEpochCheckpointFile(dir / LEADER_EPOCH_CHECKPOINT, fs)
        try:
            if not fs.exists(epoch_checkpoint.path) and any(not g.is_empty for g in segments):
                raise CheckpointError(f"{epoch_checkpoint.path}: missing beside records")
            epoch_cache = LeaderEpochCache(epoch_checkpoint)
        except CheckpointError as exc:
            problems.append(f"{exc}; rebuilt the leader epochs from the batches")
            epoch_cache = _epoch_cache_from_batches(epoch_checkpoint, segments)
        log = cls(dir, config, segments, recovery_point, epoch_cache, fs)
        log.recovery_problems = problems
        log.recovery_cut_data = lost_data
        for problem in problems:
            _logger.error("%s: damaged on disk, repaired at start-up: %s", dir.name, problem)
        log._start_offset = _read_start_offset(dir / LOG_START_OFFSET_FILE, fs)
        log.high_watermark = log.log_start_offset
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
        return min(max(self._segments[0].base_offset, self._start_offset), self.log_end_offset)

    def retention_units(self) -> list[RetentionUnit]:
        """Every segment but the active one, oldest first (storage/retention.py); the largest
        timestamp is read from the batch headers, not trusted from memory."""
        return [RetentionUnit(seg.next_offset, seg.size,
                              max((h.max_timestamp for h in seg.headers()), default=-1))
                for seg in self._segments[:-1]]  # fmt: skip

    @_io_guard
    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """Move the log start to `offset` (capped at the HW); False if it would not move."""
        self._check_open()
        offset = min(offset, self.high_watermark)
        if offset <= self.log_start_offset:
            return False
        self._start_offset = offset
        write_atomically(self.dir / LOG_START_OFFSET_FILE, f"{offset}\n", self.fs)
        while len(self._segments) > 1 and self._segments[1].base_offset <= offset:
            self._segments.pop(0).delete()
            self._bases.pop(0)
        self.leader_epoch_cache.truncate_from_start(offset)
        self.recovery_point = max(self.recovery_point, offset)
        return True

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def size(self) -> int:
        return sum(s.size for s in self._segments)

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"log {self.dir} is closed")
        if self.offline_reason is not None:
            raise KafkaStorageError(f"log {self.dir} is offline after an I/O error: "
                                    f"{self.offline_reason}")  # fmt: skip

    # --- append ----------------------------------------------------------------------

    @property
    def _limits(self) -> AppendLimits:
        return AppendLimits.of(self.config, now_ms=self.wall_clock_ms())

    @_io_guard
    def append_as_leader(self, records: bytes | memoryview, leader_epoch: int) -> LogAppendInfo:
        self._check_open()
        prepared = prepare_leader_append(
            records, leader_epoch, self.log_end_offset, self._limits, self.dir.name,
            self.producer_state, self.leader_epoch_cache,
        )  # fmt: skip
        if prepared.data:
            self._append(prepared.data, prepared.info.first_offset, prepared.info.last_offset)
            prepared.commit()
        return prepared.info

    @_io_guard
    def append_as_follower(self, records: bytes | memoryview) -> LogAppendInfo:
        """Append batches replicated from the leader verbatim.

        A trailing partial batch (fetch responses may end mid-batch) is ignored; if no whole
        batch is present nothing happens and first/last offset are -1.
        """
        self._check_open()
        prepared = prepare_follower_append(
            records, self.log_end_offset, self._limits, self.dir.name,
            self.producer_state, self.leader_epoch_cache,
        )  # fmt: skip
        if prepared.data:
            self._append(prepared.data, prepared.info.first_offset, prepared.info.last_offset)
            prepared.commit()
        return prepared.info

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
        seg = LogSegment(self.dir, base_offset, self.config.index_interval_bytes, self.fs)
        fsync_dir(self.dir, self.fs)
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
        if self.config.defer_roll_flush:
            self.flush_wanted = max(self.flush_wanted, self.log_end_offset)
        else:
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
        self.check_read_start(start_offset, self.dir.name)
        leo = self.log_end_offset
        if start_offset == leo or (max_offset is not None and start_offset >= max_offset):
            return b""
        i = bisect.bisect_right(self._bases, start_offset) - 1
        for seg in self._segments[max(i, 0) :]:
            if start_offset >= seg.next_offset:
                continue  # offset falls in a gap after this segment's last batch
            try:
                return seg.read(start_offset, max_bytes, max_offset, min_one_batch)
            except CorruptRecordError as exc:
                # Never serve it: the log goes offline (Kafka's answer to a failed log dir)
                # and the restart recovers from the recovery point.
                self.offline_reason = f"read: {exc}"
                _logger.error("%s: refusing to serve offset %d, the log is now offline: %s",
                          self.dir.name, start_offset, exc)  # fmt: skip
                raise KafkaStorageError(f"corrupt data in {self.dir.name}: {exc}") from exc
        return b""

    def positions(self, start_offset: int, end_offset: int) -> Iterator[BatchPosition]:
        """The batches holding offsets in [start_offset, end_offset), from their prefixes on
        disk only: offsets, place, leader epoch and CRC (tools, the simulator's invariants:
        enough to tell two replicas' batches apart)."""
        for seg in self._segments:
            if seg.next_offset <= start_offset:
                continue
            if seg.base_offset >= end_offset:
                return
            first = seg.translate_offset(start_offset)
            if first is None:
                continue
            for bp in seg._scan_positions(first.position):
                if bp.base_offset >= end_offset:
                    return
                yield bp

    def batches(self, start_offset: int = 0) -> Iterator[tuple[BatchHeader, memoryview]]:
        """Every whole batch with last offset >= `start_offset`, in order (tests, tools)."""
        for seg in self._segments:
            if seg.next_offset <= start_offset:
                continue
            position = 0
            if start_offset > seg.base_offset:
                first = seg.translate_offset(start_offset)  # the index, not a walk from 0
                if first is None:
                    continue
                position = first.position
            for h, view, _ in seg.batches(position):
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
            return None if best is None else _offset_of_max_timestamp(*best)
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
        `offset` if it falls inside a batch. With nothing to drop, epoch-cache entries that
        start at the log end still go (Kafka's UnifiedLog.truncateTo since KAFKA-10706): a
        broker that was leader briefly stamped its epoch there and wrote nothing in it.
        """
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate {self.dir.name} to negative offset {offset}")
        if offset >= self.log_end_offset:
            self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
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
        self._start_offset = offset
        self.fs.unlink(self.dir / LOG_START_OFFSET_FILE)
        self.leader_epoch_cache.clear_and_flush()
        self.producer_state.truncate_fully()
        self.high_watermark = offset
        self.recovery_point = offset
        self.flush_wanted = 0
        self._generation += 1

    def _after_truncation(self) -> None:
        self._generation += 1
        leo = self.log_end_offset
        self.flush_wanted = min(self.flush_wanted, leo)
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
        job = self.begin_flush(up_to)
        if job is not None:
            job.run()
            self.complete_flush(job)

    @_io_guard
    def begin_flush(self, up_to: int | None = None) -> FlushJob | None:
        self._check_open()
        target = self.log_end_offset if up_to is None else min(up_to, self.log_end_offset)
        if target <= self.recovery_point:
            return None
        fds = [
            fd
            for seg in self._segments
            if seg.base_offset < target and seg.next_offset > self.recovery_point
            for fd in seg.dup_fds()
        ]
        return FlushJob(target, self._generation, fds, fs=self.fs)

    def complete_flush(self, job: FlushJob) -> None:
        if job.error is not None:
            self.offline_reason = f"flush: {job.error}"
            raise KafkaStorageError(f"I/O error in flush on {self.dir}: {job.error}")
        if self._closed or job.generation != self._generation:
            return  # truncated meanwhile: what was synced may not be this log any more
        self.recovery_point = max(self.recovery_point, min(job.target, self.log_end_offset))
        if self.flush_wanted <= self.recovery_point:
            self.flush_wanted = 0

    def close(self) -> None:
        if self._closed:
            return
        for seg in self._segments:
            seg.close()
        self._closed = True

    def delete(self) -> None:
        self.close()
        self.fs.rmtree(self.dir)
        parent = self.dir.parent
        if self.fs.exists(parent):
            fsync_dir(parent, self.fs)

    def __repr__(self) -> str:
        return (
            f"Log({self.dir.name}, start={self.log_start_offset}, leo={self.log_end_offset}, "
            f"hw={self.high_watermark}, segments={len(self._segments)})"
        )


def _epoch_cache_from_batches(
    checkpoint: LeaderEpochCheckpointFile, segments: list[LogSegment]
) -> LeaderEpochCache:
    """The epoch cache as the batches' partitionLeaderEpoch fields tell it (each epoch starts
    at its first batch), written back to `checkpoint` in place of the malformed file."""
    entries: list[tuple[int, int]] = []
    for seg in segments:
        for h in seg.headers():
            if h.partition_leader_epoch >= 0 and (
                not entries or h.partition_leader_epoch > entries[-1][0]
            ):
                entries.append((h.partition_leader_epoch, h.base_offset))
    checkpoint.write(entries)
    return LeaderEpochCache(checkpoint)


def _read_start_offset(path: Path, fs: FileSystem) -> int:
    """The log start a DeleteRecords left (0 when none, or the file is unreadable: the first
    segment's base offset then applies, which only ever exposes more records, never fewer)."""
    try:
        return max(int(fs.read_bytes(path).decode().strip() or 0), 0)
    except (FileNotFoundError, ValueError):
        return 0


def _offset_of_max_timestamp(h: BatchHeader, view: bytes) -> TimestampAndOffset:
    """ListOffsets -3 (KIP-734) within the batch whose header has the log's largest maxTimestamp.

    Kafka answers the first record whose timestamp equals the batch's maxTimestamp
    (RecordBatch.offsetOfMaxTimestamp); in a LogAppendTime batch every record carries the
    append time, so that is the first record. Kafka's LogValidator rewrites a CreateTime
    header's maxTimestamp from the records, so a header that matches none of them never reaches
    its log; ours may hold one (the header is the client's). Then Kafka's lookup would find
    nothing, and we answer the first record with the largest timestamp actually in that batch
    (with that record's timestamp) rather than failing. A record elsewhere in the log with a
    larger timestamp than this batch's lying header is not searched for.
    """
    records = decode_records(view)
    epoch = h.partition_leader_epoch
    if not records:
        return TimestampAndOffset(h.max_timestamp, h.last_offset, epoch)
    if h.timestamp_type == "LogAppendTime":
        return TimestampAndOffset(h.max_timestamp, records[0].offset, epoch)
    for r in records:
        if r.timestamp == h.max_timestamp:
            return TimestampAndOffset(r.timestamp, r.offset, epoch)
    top = max(records, key=lambda r: r.timestamp)  # max() keeps the first of equals
    return TimestampAndOffset(top.timestamp, top.offset, epoch)
