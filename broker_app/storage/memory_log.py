"""MemoryLog: a ReplicaLog in memory, for the simulator and fast tests; a page-cache model.

`MemoryDisk` is one partition's directory as a crash sees it: the batches written (the page
cache and the platters together), how many leading batches were fsynced, the log start offset
and the leader-epoch checkpoint. `MemoryLog.open(disk)` is the broker process's view of it,
like `Log.open(dir)`; `disk.crash()` is the machine losing power: every batch not yet flushed
is gone, flushed ones stay. A process kill without a crash (`close()` without flush, reopen)
keeps everything, as the kernel's page cache does.

Same contract as the file Log (replica_log.ReplicaLog; one shared test suite): appends are
decided by storage.append (validation, offsets, epochs, producer state), reads return whole
batches. Modelling choices, each the common case of the real thing:
- the epoch checkpoint is written atomically on every change and survives a crash (Kafka's
  LeaderEpochCheckpointFile is fsynced); reopening truncates it to the LEO;
- truncation and log-start changes are durable at once (Kafka fsyncs the directory and the
  truncated segment in the same call); torn batches and reordered writes are not modelled;
- `flush(up_to)` makes whole batches below `up_to` durable; the file Log fsyncs whole
  segments, so it may make more durable than asked, never less.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from broker_app.environment import wall_ms

from .append import AppendLimits, LogAppendInfo, prepare_follower_append, prepare_leader_append
from .checkpoints import EpochEntry
from .epoch_cache import LeaderEpochCache
from .errors import KafkaStorageError
from .log import LogConfig
from .producer_state import ProducerStateManager
from .records import BatchHeader, decode_records, iter_batches
from .replica_log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    EpochsAndHighWatermark,
    FlushJob,
    TimestampAndOffset,
)
from .retention import RetentionUnit


@dataclass
class MemoryEpochCheckpoint:
    """leader-epoch-checkpoint on a MemoryDisk: every write is atomic and durable."""

    entries: list[EpochEntry] = field(default_factory=list)

    def read(self) -> list[EpochEntry]:
        return list(self.entries)

    def write(self, entries: list[EpochEntry]) -> None:
        self.entries = [EpochEntry(e, o) for e, o in entries]


@dataclass
class MemoryDisk:
    """One partition's stored state; survives MemoryLog objects, loses unsynced data on crash."""

    name: str
    start_offset: int = 0
    batches: list[tuple[BatchHeader, bytes]] = field(default_factory=list)
    synced: int = 0  # how many leading batches are on stable storage
    epoch_checkpoint: MemoryEpochCheckpoint = field(default_factory=MemoryEpochCheckpoint)

    def crash(self) -> int:
        """Power loss: drop every batch not flushed; returns how many batches were lost."""
        lost = len(self.batches) - self.synced
        del self.batches[self.synced :]
        return lost

    @property
    def durable_end_offset(self) -> int:
        if not self.synced:
            return self.start_offset
        return self.batches[self.synced - 1][0].last_offset + 1


class MemoryLog(EpochsAndHighWatermark):
    def __init__(self, disk: MemoryDisk, config: LogConfig | None = None) -> None:
        """Wraps `disk` as is; use `open` to recover after a crash or restart."""
        self.disk = disk
        self.config = config or LogConfig()
        self.name = disk.name
        self.leader_epoch_cache = LeaderEpochCache(disk.epoch_checkpoint)
        self.producer_state = ProducerStateManager()
        self._lasts = [h.last_offset for h, _ in disk.batches]
        self._recovery_point = disk.durable_end_offset
        self._generation = 0  # bumped by every truncation (FlushJob ordering)
        self.high_watermark = self.log_start_offset
        self._closed = False
        # Record timestamps are validated against it (LogValidator); the simulator's
        # MemoryLogStore sets its virtual clock.
        self.wall_clock_ms: Callable[[], int] = wall_ms

    @classmethod
    def open(cls, disk: MemoryDisk, config: LogConfig | None = None) -> MemoryLog:
        """What Log.open does after a restart: epochs cut to the LEO, producer state rebuilt."""
        log = cls(disk, config)
        log.leader_epoch_cache.truncate_from_end(log.log_end_offset)
        log.leader_epoch_cache.truncate_from_start(log.log_start_offset)
        log._rebuild_producer_state()
        return log

    # --- state -----------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self.disk.start_offset

    @property
    def log_end_offset(self) -> int:
        return self._lasts[-1] + 1 if self._lasts else self.disk.start_offset

    @property
    def size(self) -> int:
        """Bytes held (DescribeLogDirs' partition size)."""
        return sum(len(data) for _, data in self.disk.batches)

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def flush_wanted(self) -> int:
        return 0  # no segments, so no roll flush is ever owed

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"log {self.name} is closed")

    # --- append ----------------------------------------------------------------------------

    @property
    def _limits(self) -> AppendLimits:
        return AppendLimits.of(self.config, now_ms=self.wall_clock_ms())

    def append_as_leader(self, records: bytes | memoryview, leader_epoch: int) -> LogAppendInfo:
        self._check_open()
        prepared = prepare_leader_append(
            records, leader_epoch, self.log_end_offset, self._limits, self.name,
            self.producer_state, self.leader_epoch_cache,
        )  # fmt: skip
        if prepared.data:
            self._store(prepared.data)
            prepared.commit()
        return prepared.info

    def append_as_follower(self, records: bytes | memoryview) -> LogAppendInfo:
        self._check_open()
        prepared = prepare_follower_append(
            records, self.log_end_offset, self._limits, self.name,
            self.producer_state, self.leader_epoch_cache,
        )  # fmt: skip
        if prepared.data:
            self._store(prepared.data)
            prepared.commit()
        return prepared.info

    def _store(self, data: bytes) -> None:
        for h, view in iter_batches(data, allow_partial_tail=False):
            self.disk.batches.append((h, bytes(view)))
            self._lasts.append(h.last_offset)
        if self.config.flush_every_batch:
            self.flush()

    # --- read ------------------------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> bytes:
        self._check_open()
        self.check_read_start(start_offset, self.name)
        i = bisect.bisect_left(self._lasts, start_offset)
        out: list[bytes] = []
        used = 0
        for h, data in self.disk.batches[i:]:
            if max_offset is not None and h.last_offset >= max_offset:
                break
            if used + len(data) > max_bytes and not (min_one_batch and not out):
                break
            out.append(data)
            used += len(data)
        return b"".join(out)

    def batches(self, start_offset: int = 0) -> Iterator[tuple[BatchHeader, memoryview]]:
        i = bisect.bisect_left(self._lasts, start_offset)
        for h, data in self.disk.batches[i:]:
            yield h, memoryview(data)

    def fetch_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        self._check_open()
        cache = self.leader_epoch_cache
        if timestamp == EARLIEST_TIMESTAMP:
            start = self.log_start_offset
            return TimestampAndOffset(-1, start, cache.epoch_for_offset(start))
        if timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(-1, self.log_end_offset, cache.latest_epoch)
        if timestamp == MAX_TIMESTAMP:
            best: tuple[BatchHeader, bytes] | None = None
            for h, data in self.disk.batches:
                if best is None or h.max_timestamp > best[0].max_timestamp:
                    best = (h, data)
            if best is None:
                return None
            rec = next(r for r in decode_records(best[1]) if r.timestamp == best[0].max_timestamp)
            return TimestampAndOffset(rec.timestamp, rec.offset, best[0].partition_leader_epoch)
        for h, data in self.disk.batches:
            if h.max_timestamp >= timestamp:
                for rec in decode_records(data):
                    if rec.timestamp >= timestamp:
                        return TimestampAndOffset(rec.timestamp, rec.offset,
                                                  h.partition_leader_epoch)  # fmt: skip
        return None

    # --- truncation ------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> bool:
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate {self.name} to negative offset {offset}")
        if offset >= self.log_end_offset:
            self.leader_epoch_cache.truncate_from_end(self.log_end_offset)  # as Log's
            return False
        if offset < self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        keep = bisect.bisect_left(self._lasts, offset)  # the batch holding `offset` goes too
        del self.disk.batches[keep:]
        del self._lasts[keep:]
        self.disk.synced = min(self.disk.synced, keep)
        leo = self.log_end_offset
        self.leader_epoch_cache.truncate_from_end(leo)
        self._rebuild_producer_state()
        self.high_watermark = min(self.high_watermark, leo)
        self._recovery_point = min(self._recovery_point, leo)
        self._generation += 1
        return True

    def retention_units(self) -> list[RetentionUnit]:
        """Every batch but the last (no segments here: retention works batch by batch)."""
        return [RetentionUnit(h.last_offset + 1, len(data), h.max_timestamp)
                for h, data in self.disk.batches[:-1]]  # fmt: skip

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """As Log's: the start moves (capped at the HW), whole batches below it go."""
        self._check_open()
        offset = min(offset, self.high_watermark)
        if offset <= self.log_start_offset:
            return False
        drop = bisect.bisect_left(self._lasts, offset)  # batches ending below the new start
        del self.disk.batches[:drop]
        del self._lasts[:drop]
        self.disk.synced = max(self.disk.synced - drop, 0)
        self.disk.start_offset = offset
        self.leader_epoch_cache.truncate_from_start(offset)
        self._recovery_point = max(self._recovery_point, offset)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._check_open()
        self.disk.batches.clear()
        self.disk.synced = 0
        self.disk.start_offset = offset
        self._lasts.clear()
        self.leader_epoch_cache.clear_and_flush()
        self.producer_state.truncate_fully()
        self.high_watermark = offset
        self._recovery_point = offset
        self._generation += 1

    def _rebuild_producer_state(self) -> None:
        self.producer_state.rebuild(h for h, _ in self.disk.batches)

    # --- durability ------------------------------------------------------------------------

    def flush(self, up_to: int | None = None) -> None:
        """Make every batch starting below `up_to` (default: the LEO) durable."""
        job = self.begin_flush(up_to)
        if job is not None:
            job.run()
            self.complete_flush(job)

    def begin_flush(self, up_to: int | None = None) -> FlushJob | None:
        """Nothing to fsync in memory: durability is granted in complete_flush, so a simulator
        that delays the completion models a slow disk (a crash before it loses the data)."""
        self._check_open()
        target = self.log_end_offset if up_to is None else min(up_to, self.log_end_offset)
        if target <= self._recovery_point:
            return None
        return FlushJob(target, self._generation)

    def complete_flush(self, job: FlushJob) -> None:
        if self._closed or job.generation != self._generation:
            return
        target = min(job.target, self.log_end_offset)
        n = bisect.bisect_left(self._lasts, target)  # batches wholly below the target
        if n < len(self._lasts) and self.disk.batches[n][0].base_offset < target:
            n += 1  # the batch holding `target - 1`
        self.disk.synced = max(self.disk.synced, n)
        self._recovery_point = max(self._recovery_point, self.disk.durable_end_offset)

    def close(self) -> None:
        self._closed = True

    def __repr__(self) -> str:
        return (
            f"MemoryLog({self.name}, start={self.log_start_offset}, leo={self.log_end_offset}, "
            f"hw={self.high_watermark}, synced<{self._recovery_point})"
        )
