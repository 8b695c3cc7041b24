"""ReplicaLog: what the replication core (Partition, ReplicaFetcherState, ReplicaManager) and
the request handlers need from one partition's log — the storage seam.

The implementation is `storage.log.Log` (segments, Kafka's layout) on a FileSystem
(storage/fs.py): the machine's disk, or the simulator's MemoryFileSystem with a page-cache
model (writes not yet fsynced are lost by a simulated power loss).
tests/unit/storage/test_replica_log_contract.py runs one suite on both. Offsets are ints;
"no epoch" is None for `latest_epoch`; `end_offset_for_epoch` answers (-1, -1) for Kafka's
UNDEFINED cases.

Durability vocabulary: `recovery_point` is the first offset not known to be on stable storage
(Kafka's recoveryPoint); `flush(up_to)` makes everything below `up_to` durable and advances it.
The epoch cache is persisted on every change (a small atomic checkpoint, as in Kafka), so it
survives a crash even when the data it describes does not; reopening truncates it to the LEO.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

from .append import LogAppendInfo
from .checkpoints import EpochEntry
from .epoch_cache import LeaderEpochCache
from .errors import OffsetOutOfRangeError
from .fs import OS_FS, FileSystem
from .records import BatchHeader
from .retention import RetentionUnit
from .topic_partition import TopicPartition

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3


class TimestampAndOffset(NamedTuple):
    timestamp: int
    offset: int
    leader_epoch: int | None


@dataclass
class FlushJob:
    """An fsync split in three so the I/O edge can run the slow part off its event loop.

    `log.begin_flush(up_to)` (loop thread) records what to sync: duplicated file descriptors,
    so a segment deleted or closed meanwhile cannot invalidate them; `job.run()` (any thread,
    no log state touched) fsyncs them; `log.complete_flush(job)` (loop thread again) advances
    the recovery point — the core's record of what is durable — or takes the log offline if
    the fsync failed. Ordering: the recovery point only moves in complete_flush, never past
    `target`, never past the LEO, and not at all if the log was truncated since begin_flush
    (the synced bytes may no longer be the log's); jobs completed out of order cannot move it
    backwards. Data appended after begin_flush may or may not be on disk: it is not counted.
    """

    target: int
    generation: int  # the log's truncation generation at begin_flush
    fds: list[int] = field(default_factory=list)
    error: OSError | None = None
    fs: FileSystem = OS_FS  # whose descriptors `fds` are


    def run(self) -> None:
        try:
            for fd in self.fds:
                self.fs.fsync(fd)
        except OSError as exc:
            self.error = exc
        finally:
            for fd in self.fds:
                with contextlib.suppress(OSError):
                    self.fs.close(fd)
            self.fds = []


class EpochsAndHighWatermark:
    """The epoch-cache and high-watermark part of ReplicaLog (Log, and any other
    implementation): they provide `leader_epoch_cache`, `high_watermark`, `log_start_offset`
    and `log_end_offset`."""

    leader_epoch_cache: LeaderEpochCache
    high_watermark: int

    @property
    def log_start_offset(self) -> int:
        raise NotImplementedError

    @property
    def log_end_offset(self) -> int:
        raise NotImplementedError

    def check_read_start(self, start_offset: int, name: str) -> None:
        """A read must start within [log start, log end] (Kafka: OffsetOutOfRangeException)."""
        leo = self.log_end_offset
        if start_offset < self.log_start_offset or start_offset > leo:
            raise OffsetOutOfRangeError(
                f"offset {start_offset} is out of range for {name}: "
                f"log start offset {self.log_start_offset}, log end offset {leo}"
            )

    @property
    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch

    @property
    def epoch_entries(self) -> list[EpochEntry]:
        return self.leader_epoch_cache.epoch_entries

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        self.leader_epoch_cache.assign(epoch, start_offset)

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
        return hw > old and self.update_high_watermark(hw) > old


@runtime_checkable
class ReplicaLog(Protocol):
    # --- offsets and high watermark ---------------------------------------------------------

    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def high_watermark(self) -> int: ...
    @property
    def recovery_point(self) -> int: ...
    @property
    def flush_wanted(self) -> int:
        """Offset below which a flush is owed (a deferred segment-roll flush), else 0."""
        ...

    def update_high_watermark(self, hw: int) -> int:
        """Set the HW clamped to [log start, LEO]; returns the value stored."""
        ...

    def maybe_increment_high_watermark(self, hw: int) -> bool:
        """Move the HW forward only; True if it moved."""
        ...

    # --- leader epochs -----------------------------------------------------------------------

    @property
    def latest_epoch(self) -> int | None: ...
    @property
    def epoch_entries(self) -> list[EpochEntry]: ...
    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at `start_offset` (persisted before returning)."""
        ...

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch (Kafka's endOffsetFor)."""
        ...

    # --- data ----------------------------------------------------------------------------

    def append_as_leader(self, records: bytes | memoryview, leader_epoch: int) -> LogAppendInfo:
        ...

    def append_as_follower(self, records: bytes | memoryview) -> LogAppendInfo: ...
    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> bytes:
        """Whole batches from the one containing `start_offset`; none with last offset >=
        `max_offset`; at most `max_bytes` (but one whole batch if `min_one_batch`). May return
        fewer batches than fit (the file log reads one segment per call)."""
        ...

    def batches(self, start_offset: int = 0) -> Iterator[tuple[BatchHeader, memoryview]]: ...
    def fetch_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None: ...

    # --- truncation and durability --------------------------------------------------------

    def truncate_to(self, offset: int) -> bool:
        """Drop every offset >= `offset` (the whole batch holding it); False if nothing went.
        Either way epoch-cache entries starting at or past the new log end go (KAFKA-10706)."""
        ...

    def truncate_fully_and_start_at(self, offset: int) -> None: ...
    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """DeleteRecords: the log start moves to `offset` (capped at the HW), durably."""
        ...
    def retention_units(self) -> list[RetentionUnit]:
        """The units time/size retention may delete, oldest first (storage/retention.py)."""
        ...
    @property
    def size(self) -> int: ...
    def flush(self, up_to: int | None = None) -> None:
        """Synchronous begin_flush + run + complete_flush (tests, tools, shutdown)."""
        ...

    def begin_flush(self, up_to: int | None = None) -> FlushJob | None:
        """What to fsync so that offsets below `up_to` (default LEO) are durable; None if
        nothing is to do."""
        ...

    def complete_flush(self, job: FlushJob) -> None: ...
    def close(self) -> None: ...


@runtime_checkable
class LogStore(Protocol):
    """One broker's logs and its per-log-dir checkpoints (Kafka's LogManager): the log factory
    ReplicaManager is given: `LogManager.open(dir, fs=...)`, on the machine's disk or a
    simulated one. HW and recovery-point checkpoints are written only when asked (a timer at the
    edge, and shutdown); `checkpointed_high_watermarks` is what the last HW checkpoint held,
    which is what a crashed broker restarts from."""

    # The broker-wide LogConfig every log starts from (a topic's segment.bytes and
    # max.message.bytes replace it per log: ReplicaManager._apply_log_configs).
    config: Any

    @property
    def checkpointed_high_watermarks(self) -> dict[TopicPartition, int]: ...
    @property
    def had_clean_shutdown(self) -> bool: ...
    @property
    def previous_broker_epoch(self) -> int:
        """The broker epoch the clean-shutdown marker held; -1 after a crash (KIP-966)."""
        ...
    def get_log(self, tp: TopicPartition | tuple[str, int]) -> ReplicaLog | None: ...
    def get_or_create_log(self, topic: str, partition: int) -> ReplicaLog: ...
    def all_logs(self) -> Mapping[TopicPartition, ReplicaLog]: ...
    def delete_log(self, tp: TopicPartition | tuple[str, int]) -> bool: ...
    def checkpoint_high_watermarks(self) -> None: ...
    def snapshot_high_watermarks(self) -> dict[TopicPartition, int]:
        """The HWs to checkpoint (loop thread)."""
        ...

    def write_high_watermarks(self, hws: dict[TopicPartition, int]) -> None:
        """Write a snapshot durably; touches no log, so the edge may call it from a worker
        thread. `checkpoint_high_watermarks()` is snapshot + write in one call."""
        ...

    def checkpoint_recovery_points(self) -> None: ...
    def flush_all(self) -> None: ...
    def shutdown(self, broker_epoch: int = -1) -> None:
        """Flush every log, write both checkpoints, then mark the shutdown clean with the
        broker's epoch (KIP-966: the next start registers with it)."""
        ...
