"""MemoryLogStore: one broker's logs in memory (the LogStore seam), for the simulator and tests.

`BrokerDisk` is what survives the broker process: one MemoryDisk per partition, the two
offset checkpoints and the clean-shutdown marker. `MemoryLogStore.open(disk)` is LogManager.open:
it reopens every partition's log, restores each HW from the HW checkpoint, and consumes the
clean-shutdown marker. `disk.crash()` is a power loss: every partition loses what was not
flushed (MemoryDisk.crash); checkpoints are written atomically, so they survive as written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .errors import KafkaStorageError
from .log import LogConfig
from .memory_log import MemoryDisk, MemoryLog
from .topic_partition import TopicPartition


@dataclass
class BrokerDisk:
    partitions: dict[TopicPartition, MemoryDisk] = field(default_factory=dict)
    high_watermarks: dict[TopicPartition, int] = field(default_factory=dict)
    recovery_points: dict[TopicPartition, int] = field(default_factory=dict)
    clean_shutdown: bool = False
    clean_shutdown_epoch: int = -1  # the broker epoch the clean-shutdown marker holds (KIP-966)

    def crash(self) -> int:
        """Power loss on every partition; returns the number of batches lost."""
        self.clean_shutdown = False
        self.clean_shutdown_epoch = -1
        return sum(d.crash() for d in self.partitions.values())


class MemoryLogStore:
    def __init__(self, disk: BrokerDisk, config: LogConfig | None = None,
                 wall_clock_ms: Callable[[], int] | None = None) -> None:  # fmt: skip
        self.disk = disk
        self.config = config or LogConfig()
        self.wall_clock_ms = wall_clock_ms  # every log's, when given (the simulator's clock)
        self._logs: dict[TopicPartition, MemoryLog] = {}
        self.checkpointed_high_watermarks: dict[TopicPartition, int] = {}
        self.had_clean_shutdown = False
        self.previous_broker_epoch = -1
        self._closed = False

    @classmethod
    def open(cls, disk: BrokerDisk, config: LogConfig | None = None,
             wall_clock_ms: Callable[[], int] | None = None) -> MemoryLogStore:  # fmt: skip
        store = cls(disk, config, wall_clock_ms)
        store.had_clean_shutdown = disk.clean_shutdown
        store.previous_broker_epoch = disk.clean_shutdown_epoch if disk.clean_shutdown else -1
        disk.clean_shutdown = False  # a crash from here on is unclean
        disk.clean_shutdown_epoch = -1
        for tp, pdisk in sorted(disk.partitions.items()):
            log = store._adopt(MemoryLog.open(pdisk, store.config))
            log.update_high_watermark(disk.high_watermarks.get(tp, log.log_start_offset))
            store._logs[tp] = log
        store.checkpointed_high_watermarks = dict(disk.high_watermarks)
        return store

    def get_log(self, tp: TopicPartition | tuple[str, int]) -> MemoryLog | None:
        return self._logs.get(TopicPartition(*tp))

    def get_or_create_log(self, topic: str, partition: int) -> MemoryLog:
        tp = TopicPartition(topic, partition)
        log = self._logs.get(tp)
        if log is None:
            if self._closed:
                raise KafkaStorageError(f"memory log store for {self.disk!r} is shut down")
            pdisk = self.disk.partitions.setdefault(tp, MemoryDisk(tp.dir_name))
            log = self._logs[tp] = self._adopt(MemoryLog.open(pdisk, self.config))
        return log

    def _adopt(self, log: MemoryLog) -> MemoryLog:
        if self.wall_clock_ms is not None:
            log.wall_clock_ms = self.wall_clock_ms
        return log

    def all_logs(self) -> Mapping[TopicPartition, MemoryLog]:
        return dict(self._logs)

    def delete_log(self, tp: TopicPartition | tuple[str, int]) -> bool:
        key = TopicPartition(*tp)
        log = self._logs.pop(key, None)
        if log is None:
            return False
        log.close()
        del self.disk.partitions[key]
        return True

    def checkpoint_high_watermarks(self) -> None:
        self.write_high_watermarks(self.snapshot_high_watermarks())

    def snapshot_high_watermarks(self) -> dict[TopicPartition, int]:
        return {tp: log.high_watermark for tp, log in self._logs.items()}

    def write_high_watermarks(self, hws: dict[TopicPartition, int]) -> None:
        self.disk.high_watermarks = dict(hws)
        self.checkpointed_high_watermarks = hws

    def checkpoint_recovery_points(self) -> None:
        self.disk.recovery_points = {tp: log.recovery_point for tp, log in self._logs.items()}

    def flush_all(self) -> None:
        for log in self._logs.values():
            log.flush()

    def shutdown(self, broker_epoch: int = -1) -> None:
        if self._closed:
            return
        self.flush_all()
        self.checkpoint_recovery_points()
        self.checkpoint_high_watermarks()
        for log in self._logs.values():
            log.close()
        self.disk.clean_shutdown = True
        self.disk.clean_shutdown_epoch = broker_epoch
        self._closed = True
