"""FileReplicatedLog and FileQuorumStateStore: the Raft log and election state on disk.

FileReplicatedLog keeps the batches with the project's storage layer (broker_app.storage.Log)
in `<data-dir>/__cluster_metadata-0/`, one v2 record batch per Raft batch with the leader
epoch as partitionLeaderEpoch (the epoch cache follows). Contract as ReplicatedLog, and:
- Opening recovers the whole log (it is small; a torn tail is cut) and treats what survived
  as flushed.
- Snapshots are files `<end offset:020d>-<epoch:010d>.checkpoint` (Kafka's naming) in the same
  directory, written to a temporary file, fsynced and renamed. After a snapshot the log start
  moves to its end offset. Deviation: Kafka deletes whole segments lazily; here the surviving
  suffix is rewritten at once (the metadata log is small), and opening redoes it if a crash
  came between the snapshot and the rewrite. Older snapshot files are deleted.
- A read from inside a batch returns that batch's tail as a Batch (records are re-encoded
  on append, so the follower's batch boundaries may differ from the leader's; offsets and
  epochs do not).

FileQuorumStateStore writes `<data-dir>/quorum-state` (JSON with Kafka's field names,
leaderEpoch/leaderId/votedId) atomically and fsynced before returning.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from broker_app.storage import Log, LogConfig, build_batch, decode_records
from broker_app.storage.checkpoints import write_atomically
from broker_app.storage.fs import OS_FS, FileSystem

from .log import UNKNOWN, Batch, OffsetAndEpoch, Snapshot
from .quorum_state import ElectionState

METADATA_DIR = "__cluster_metadata-0"
SNAPSHOT_SUFFIX = ".checkpoint"


def _snapshot_name(sid: OffsetAndEpoch) -> str:
    return f"{sid.offset:020d}-{sid.epoch:010d}{SNAPSHOT_SUFFIX}"


def write_snapshot_file(directory: Path, snapshot: Snapshot, fs: FileSystem = OS_FS) -> None:
    """`<end offset>-<epoch>.checkpoint` in directory: temporary file, fsync, rename, fsync the
    directory; older snapshot files are deleted."""
    path = directory / _snapshot_name(snapshot.snapshot_id)
    tmp = path.with_name(path.name + ".tmp")
    fd = fs.open(tmp)
    try:
        fs.truncate(fd, 0)
        fs.pwrite(fd, snapshot.payload, 0)
        fs.fsync(fd)
    finally:
        fs.close(fd)
    fs.replace(tmp, path)
    for name in fs.listdir(directory):
        if name.endswith(SNAPSHOT_SUFFIX) and name != path.name:
            fs.unlink(directory / name)
    fs.fsync_dir(directory)


def read_latest_snapshot(directory: Path, fs: FileSystem = OS_FS) -> Snapshot | None:
    found: list[tuple[OffsetAndEpoch, Path]] = []
    for name in fs.listdir(directory) if fs.isdir(directory) else ():
        if not name.endswith(SNAPSHOT_SUFFIX):
            continue
        offset, _, epoch = name[: -len(SNAPSHOT_SUFFIX)].partition("-")
        if offset.isdigit() and epoch.isdigit():
            found.append((OffsetAndEpoch(int(offset), int(epoch)), directory / name))
    if not found:
        return None
    sid, path = max(found)
    return Snapshot(sid, fs.read_bytes(path))


class FileReplicatedLog:
    def __init__(self, data_dir: Path, config: LogConfig | None = None,
                 fs: FileSystem = OS_FS, wall_clock_ms: Callable[[], int] | None = None) -> None:
        """fs and wall_clock_ms: the machine's, or the simulator's disk of this controller and
        its virtual clock."""
        self.dir = Path(data_dir) / METADATA_DIR
        self.fs = fs
        self.log = Log.open(self.dir, config or LogConfig(max_batch_bytes=8 * 1024 * 1024),
                            recovery_point=0, fs=fs)
        if wall_clock_ms is not None:
            self.log.wall_clock_ms = wall_clock_ms
        self.log.flush()  # what survived recovery is on disk: count it as flushed
        self._snapshot = self._load_latest_snapshot()
        if self._snapshot is not None and self.log.log_start_offset != \
                self._snapshot.snapshot_id.offset:
            self._drop_prefix(self._snapshot.snapshot_id.offset)

    # -- positions --------------------------------------------------------------------------
    @property
    def start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def flushed_end_offset(self) -> int:
        return self.log.recovery_point

    @property
    def _base_epoch(self) -> int:
        return self._snapshot.snapshot_id.epoch if self._snapshot else 0

    @property
    def last_fetched_epoch(self) -> int:
        latest = self.log.leader_epoch_cache.latest_epoch
        return latest if latest is not None and self.end_offset > self.start_offset \
            else self._base_epoch

    def end_offset_and_epoch(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.end_offset, self.last_fetched_epoch)

    # -- writes -----------------------------------------------------------------------------
    def _append(self, batch: Batch) -> None:
        data = build_batch([(None, r) for r in batch.records], base_offset=batch.base_offset,
                           epoch=batch.epoch, control=batch.control, timestamp=0)
        self.log.append_as_follower(data)

    def append_as_leader(self, records: Sequence[bytes], epoch: int,
                         control: bool = False) -> Batch:
        if epoch < self.last_fetched_epoch:
            raise ValueError(f"epoch {epoch} is older than the log's {self.last_fetched_epoch}")
        batch = Batch(self.end_offset, epoch, tuple(records), control)
        self._append(batch)
        return batch

    def append_as_follower(self, batches: Sequence[Batch]) -> None:
        for batch in batches:
            if batch.base_offset != self.end_offset:
                raise ValueError(f"batch at {batch.base_offset}, log ends at {self.end_offset}")
            if batch.epoch < self.last_fetched_epoch:
                raise ValueError(f"batch epoch {batch.epoch} < log epoch {self.last_fetched_epoch}")
            self._append(batch)

    def flush(self) -> None:
        self.log.flush()

    def truncate_to(self, offset: int) -> None:
        if offset < self.start_offset:
            raise ValueError(f"cannot truncate to {offset} below the log start {self.start_offset}")
        head: Batch | None = None
        for h, view in self.log.batches(offset):  # the batch holding `offset`, if any
            if h.base_offset < offset:
                values = tuple(bytes(r.value or b"") for r in decode_records(view)
                               if r.offset < offset)
                head = Batch(h.base_offset, h.partition_leader_epoch, values, h.is_control)
            break
        was_flushed = self.flushed_end_offset
        self.log.truncate_to(offset)  # the storage layer drops that whole batch
        if head is not None:  # put back its part below `offset`, as durable as it was
            self._append(head)
            if was_flushed > head.base_offset:
                self.log.flush()

    # -- reads ------------------------------------------------------------------------------
    def read(self, offset: int, max_batches: int) -> tuple[Batch, ...]:
        if offset < self.start_offset or offset > self.end_offset:
            raise ValueError(f"offset {offset} outside [{self.start_offset}, {self.end_offset}]")
        out: list[Batch] = []
        for h, view in self.log.batches(offset):
            values = tuple(bytes(r.value or b"") for r in decode_records(view)
                           if r.offset >= offset)
            if values:
                out.append(Batch(max(h.base_offset, offset), h.partition_leader_epoch, values,
                                 h.is_control))
            if len(out) >= max_batches:
                break
        return tuple(out)

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        if epoch < self._base_epoch:
            return UNKNOWN
        best = OffsetAndEpoch(self.start_offset, self._base_epoch)
        for entry in self.log.leader_epoch_cache.epoch_entries:
            if entry.start_offset >= self.end_offset or entry.start_offset < self.start_offset:
                continue
            if entry.epoch > epoch:
                return OffsetAndEpoch(entry.start_offset, best.epoch)
            best = OffsetAndEpoch(self.end_offset, entry.epoch)
        return best

    # -- snapshots --------------------------------------------------------------------------
    def latest_snapshot(self) -> Snapshot | None:
        return self._snapshot

    def create_snapshot(self, end_offset: int, payload: bytes) -> Snapshot:
        if not self.start_offset <= end_offset <= self.end_offset:
            raise ValueError(f"snapshot end {end_offset} outside [{self.start_offset}, "
                             f"{self.end_offset}]")
        epoch = self._base_epoch
        for b in self.read(self.start_offset, 1 << 30):
            if b.base_offset < end_offset:
                epoch = b.epoch
        snapshot = Snapshot(OffsetAndEpoch(end_offset, epoch), payload)
        self._write_snapshot(snapshot)
        self._drop_prefix(end_offset)
        return snapshot

    def load_snapshot(self, snapshot: Snapshot) -> None:
        self._write_snapshot(snapshot)
        self.log.truncate_fully_and_start_at(snapshot.snapshot_id.offset)

    def _write_snapshot(self, snapshot: Snapshot) -> None:
        write_snapshot_file(self.dir, snapshot, self.fs)
        self._snapshot = snapshot

    def _load_latest_snapshot(self) -> Snapshot | None:
        return read_latest_snapshot(self.dir, self.fs)

    def _drop_prefix(self, start: int) -> None:
        """Move the log start to `start`, keeping the suffix (see the module docstring)."""
        suffix = self.read(start, 1 << 30) if start < self.end_offset else ()
        self.log.truncate_fully_and_start_at(start)
        for b in suffix:
            self._append(b)
        self.log.flush()

    def close(self) -> None:
        self.log.close()


class FileQuorumStateStore:
    def __init__(self, data_dir: Path, fs: FileSystem = OS_FS) -> None:
        self.path = Path(data_dir) / "quorum-state"
        self.fs = fs
        fs.mkdirs(Path(data_dir))

    def read(self) -> ElectionState | None:
        try:
            data = json.loads(self.fs.read_bytes(self.path).decode("utf-8"))
        except FileNotFoundError:
            return None
        leader, voted = data.get("leaderId", -1), data.get("votedId", -1)
        return ElectionState(int(data["leaderEpoch"]), None if leader < 0 else leader,
                             None if voted < 0 else voted)

    def write(self, state: ElectionState) -> None:
        write_atomically(self.path, json.dumps({
            "leaderEpoch": state.epoch,
            "leaderId": -1 if state.leader_id is None else state.leader_id,
            "votedId": -1 if state.voted_id is None else state.voted_id,
            "data_version": 0,
        }), self.fs)
