"""LogManager: all logs of one log directory (Kafka's LogManager, one log dir).

Contract:
- `LogManager.open(dir)` opens every `<topic>-<partition>/` directory (the constructor does no
  file I/O). If the
  `.kafka_cleanshutdown` marker is present the shutdown was clean and no segment is
  re-validated; otherwise each log recovers from its entry in
  `recovery-point-offset-checkpoint` (0 if absent). The marker is then removed, so a crash
  from here on is seen as unclean at the next start. The marker holds the broker epoch of the
  process that wrote it (Kafka's CleanShutdownFileHandler, KIP-966): `previous_broker_epoch`
  is that epoch, or -1 when the marker was missing or unreadable (an unclean shutdown); the
  broker registers with it so the controller can tell a crash from a clean stop. A marker
  cannot vouch for a log that recovery had to cut (damage found at start-up): then the epoch
  is -1 too, so the controller treats the restart as unclean (KIP-966: not an eligible
  leader replica with records it no longer has).
- Each Log's high watermark is initialised from `replication-offset-checkpoint`.
- A malformed checkpoint does not stop the broker: it is logged as an error naming the file
  and line and read as empty, which is the safe direction for each (recovery points: every
  log recovers from offset 0; high watermarks: each starts at its log start and the leader's
  fetch responses or the followers' fetches move it up). Deviation: Kafka fails the log dir
  (its only one: the broker halts), needing an operator to delete the file.
- `checkpoint_high_watermarks()` / `checkpoint_recovery_points()` rewrite those files
  atomically; `shutdown()` flushes every log, writes both, then writes the marker.
- Directories marked for deletion by Kafka (`<topic>-<partition>.<uuid>-delete`) are
  removed; other directories whose name is not `<topic>-<partition>` are left alone, so the
  log dir can share a data dir with other broker state.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path

from .checkpoints import (
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
    fsync_dir,
)
from .errors import CheckpointError, CorruptRecordError, InvalidTopicError, KafkaStorageError
from .fs import OS_FS, FileSystem, MemoryFileSystem
from .log import Log, LogConfig
from .records import iter_batches
from .topic_partition import TopicPartition

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
# Kafka renames a log to "<topic>-<partition>.<uuid>-delete" before removing it.
_DELETE_DIR = re.compile(r".+-\d+\.[0-9a-f]{32}-delete")
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_logger = logging.getLogger(__name__)


class LogManager:
    """The file-backed LogStore (storage.replica_log); build it with `LogManager.open`."""

    def __init__(self, log_dir: Path, config: LogConfig | None = None,
                 wall_clock_ms: Callable[[], int] | None = None,
                 fs: FileSystem = OS_FS) -> None:  # fmt: skip
        """State only, no file I/O: `open` loads the directory. `wall_clock_ms` (the broker's
        clock seam, broker_app/clock.py) is every log's wall clock; None keeps Log's own.
        `fs` is the disk (storage/fs.py), the machine's unless given."""
        self.log_dir = Path(log_dir)
        self.config = config or LogConfig()
        self.wall_clock_ms = wall_clock_ms
        self.fs = fs
        self.replication_checkpoint = OffsetCheckpointFile(
            self.log_dir / REPLICATION_OFFSET_CHECKPOINT, fs
        )
        self.recovery_checkpoint = OffsetCheckpointFile(
            self.log_dir / RECOVERY_POINT_OFFSET_CHECKPOINT, fs
        )
        self._logs: dict[TopicPartition, Log] = {}
        # What the last replication-offset-checkpoint held: after a crash each log restarts from
        # this HW, not the live one, so scenarios (L2) wait on it, via the admin /state.
        self.checkpointed_high_watermarks: dict[TopicPartition, int] = {}
        self.had_clean_shutdown = False
        self.previous_broker_epoch = -1
        self._closed = False

    @classmethod
    def open(cls, log_dir: Path, config: LogConfig | None = None,
             wall_clock_ms: Callable[[], int] | None = None,
             fs: FileSystem = OS_FS) -> LogManager:  # fmt: skip
        """Open every log in `log_dir` (recovering after an unclean stop)."""
        mgr = cls(log_dir, config, wall_clock_ms, fs)
        fs.mkdirs(mgr.log_dir)
        marker = mgr.log_dir / CLEAN_SHUTDOWN_FILE
        mgr.had_clean_shutdown = fs.exists(marker)
        mgr.previous_broker_epoch = (_read_marker_epoch(marker, fs) if mgr.had_clean_shutdown
                                     else -1)  # fmt: skip
        mgr._load_logs()
        cut = sorted(tp.dir_name for tp, lg in mgr._logs.items() if lg.recovery_cut_data)
        if mgr.had_clean_shutdown and cut:
            _logger.error("clean shutdown marker ignored for registration: recovery cut data "
                          "from %s", ", ".join(cut))  # fmt: skip
            mgr.previous_broker_epoch = -1
        if mgr.had_clean_shutdown:
            fs.unlink(marker)
            fsync_dir(mgr.log_dir, fs)
        return mgr

    def _load_logs(self) -> None:
        recovery_points = _read_or_empty(self.recovery_checkpoint, "every log recovers from 0")
        high_watermarks = _read_or_empty(
            self.replication_checkpoint, "each high watermark starts at its log start"
        )
        fs = self.fs
        for name in fs.listdir(self.log_dir):
            d = self.log_dir / name
            if not fs.isdir(d):
                continue
            if _DELETE_DIR.fullmatch(name):
                fs.rmtree(d)  # a deletion interrupted by a crash
                continue
            try:
                tp = TopicPartition.parse_dir_name(d.name)
            except ValueError:
                continue
            log = Log.open(
                d,
                self.config,
                recovery_points.get(tp, 0),
                had_clean_shutdown=self.had_clean_shutdown,
                fs=fs,
            )
            log.update_high_watermark(high_watermarks.get(tp, log.log_start_offset))
            self._adopt(log)
            self._logs[tp] = log
        self.checkpointed_high_watermarks = dict(high_watermarks)

    # --- access ----------------------------------------------------------------------

    def get_log(self, tp: TopicPartition | tuple[str, int]) -> Log | None:
        return self._logs.get(TopicPartition(*tp))

    def get_or_create_log(self, topic: str, partition: int) -> Log:
        tp = TopicPartition(topic, partition)
        log = self._logs.get(tp)
        if log is None:
            if self._closed:
                raise KafkaStorageError(f"log manager for {self.log_dir} is shut down")
            if not _LEGAL_TOPIC.fullmatch(topic) or topic in (".", ".."):
                raise InvalidTopicError(
                    f"topic name {topic!r} is not 1-249 characters of [a-zA-Z0-9._-]"
                )
            if partition < 0:
                raise InvalidTopicError(f"partition {partition} of topic {topic!r} is negative")
            log = Log.open(self.log_dir / tp.dir_name, self.config, fs=self.fs)
            self._adopt(log)
            fsync_dir(self.log_dir, self.fs)
            self._logs[tp] = log
        return log

    def _adopt(self, log: Log) -> None:
        if self.wall_clock_ms is not None:
            log.wall_clock_ms = self.wall_clock_ms

    def all_logs(self) -> dict[TopicPartition, Log]:
        return dict(self._logs)

    def delete_log(self, tp: TopicPartition | tuple[str, int]) -> bool:
        log = self._logs.pop(TopicPartition(*tp), None)
        if log is None:
            return False
        log.delete()
        return True

    # --- checkpoints -----------------------------------------------------------------

    def checkpoint_high_watermarks(self) -> None:
        self.write_high_watermarks(self.snapshot_high_watermarks())

    def snapshot_high_watermarks(self) -> dict[TopicPartition, int]:
        return {tp: log.high_watermark for tp, log in self._logs.items()}

    def write_high_watermarks(self, hws: dict[TopicPartition, int]) -> None:
        """Thread-safe: writes the file (atomic rename + fsync) and then publishes `hws`."""
        self.replication_checkpoint.write(hws)  # type: ignore[arg-type]
        self.checkpointed_high_watermarks = hws

    def read_high_watermarks(self) -> dict[TopicPartition, int]:
        return self.replication_checkpoint.read()  # type: ignore[return-value]

    def checkpoint_recovery_points(self) -> None:
        self.recovery_checkpoint.write({tp: log.recovery_point for tp, log in self._logs.items()})

    def flush_all(self) -> None:
        for log in self._logs.values():
            log.flush()

    def shutdown(self, broker_epoch: int = -1) -> None:
        """Flush everything, write both checkpoints, then mark the shutdown clean with the
        broker's current epoch (-1 outside a cluster)."""
        if self._closed:
            return
        self.flush_all()
        self.checkpoint_recovery_points()
        self.checkpoint_high_watermarks()
        for log in self._logs.values():
            log.close()
        marker = self.log_dir / CLEAN_SHUTDOWN_FILE
        self.fs.write_bytes(marker, json.dumps({"version": 0, "broker_epoch": broker_epoch})
                            .encode())  # fmt: skip
        fsync_dir(self.log_dir, self.fs)
        self._closed = True


def _read_or_empty(checkpoint: OffsetCheckpointFile, fallback: str) -> dict[TopicPartition, int]:
    try:
        return checkpoint.read()  # type: ignore[return-value]
    except CheckpointError as exc:
        _logger.error("damaged checkpoint, read as empty (%s): %s", fallback, exc)
        return {}


def _read_marker_epoch(marker: Path, fs: FileSystem) -> int:
    """The broker epoch in a clean-shutdown marker; -1 for an empty or foreign marker (a
    marker without an epoch cannot vouch for the broker's registration)."""
    try:
        data = json.loads(fs.read_bytes(marker).decode("utf-8") or "{}")
    except (OSError, UnicodeDecodeError, ValueError):
        return -1
    epoch = data.get("broker_epoch") if isinstance(data, dict) else None
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else -1


def batches_not_synced(fs: MemoryFileSystem, data_dir: Path) -> dict[tuple[str, int], int]:
    """(topic, partition) -> how many of its batches in the page cache a power loss now would
    drop or change: those of each segment file under `data_dir` that end past what its page
    cache and disk share."""
    out: dict[tuple[str, int], int] = {}
    for path, (cache, disk) in fs.unsynced(data_dir).items():
        p = Path(path)
        if p.suffix != ".log":
            continue
        try:
            tp = TopicPartition.parse_dir_name(p.parent.name)
        except ValueError:
            continue
        same = _common_prefix(cache, disk)
        n, end = 0, 0
        try:
            for h, _ in iter_batches(cache, allow_partial_tail=True):
                end += h.size
                n += end > same
        except CorruptRecordError:
            pass  # a batch the broker never wrote: count what came before it
        if n:
            out[(tp.topic, tp.partition)] = out.get((tp.topic, tp.partition), 0) + n
    return out


def _common_prefix(a: bytes, b: bytes) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # slices compare in C: a binary search beats a Python byte loop
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo
