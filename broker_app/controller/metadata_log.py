"""The controller's metadata log: where metadata records are appended and replayed from.

Contract:
- `append(records) -> base offset` writes all records as ONE record batch (atomic: a crash
  leaves all or none, the storage layer truncates a torn tail on open) and makes it durable
  before returning; record i gets offset base + i.
- `replay()` yields (offset, record) for everything in the log, in order; a record that does
  not decode raises MetadataRecordError naming its offset (the controller refuses to start on
  a corrupt log rather than forget topics).
- `read(offset, max_bytes)` returns whole raw batches for Fetch of `__cluster_metadata-0`.
- FileMetadataLog keeps the log with the project's storage layer (broker_app.storage.Log) in
  `<data-dir>/__cluster_metadata-0/`, fsyncing every batch. Batches carry the controller epoch
  as partitionLeaderEpoch; each start of the controller takes the next epoch (as a KRaft leader
  election would). MemoryMetadataLog is the same contract without files (unit tests).
- Snapshots (KIP-630, as the Raft quorum's controllers take them): `snapshot_image()` is the
  image the log starts from (empty without a snapshot) and `replay()` yields the records after
  it; FileMetadataLog's `create_snapshot(image)` writes the image (metadata/snapshot.py) as
  `<end offset>-<epoch>.checkpoint` beside the log at the log end (a single controller has
  committed everything it appended) and then empties the log, which restarts at that offset.
  `bytes_since_snapshot` counts the record bytes appended since, for the size trigger.
  Opening after a crash between the snapshot and the truncation truncates again.
  `latest_snapshot()` is what a broker whose fetch offset is below the log start fetches.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

from broker_app.metadata.image import MetadataImage
from broker_app.metadata.records import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    MetadataRecord,
    decode_record,
    encode_record,
)
from broker_app.metadata.snapshot import decode_snapshot, encode_snapshot
from broker_app.raft.file_log import read_latest_snapshot, write_snapshot_file
from broker_app.raft.log import OffsetAndEpoch, Snapshot
from broker_app.storage import Log, LogConfig, build_batch, decode_records


class MetadataLog(Protocol):
    @property
    def end_offset(self) -> int: ...

    def append(self, records: Sequence[MetadataRecord]) -> int: ...

    def snapshot_image(self) -> MetadataImage: ...

    def replay(self) -> Iterator[tuple[int, MetadataRecord]]: ...


class MemoryMetadataLog:
    def __init__(self) -> None:
        self.entries: list[bytes] = []

    @property
    def end_offset(self) -> int:
        return len(self.entries)

    def append(self, records: Sequence[MetadataRecord]) -> int:
        base = len(self.entries)
        self.entries.extend(encode_record(r) for r in records)
        return base

    def snapshot_image(self) -> MetadataImage:
        return MetadataImage()

    def replay(self) -> Iterator[tuple[int, MetadataRecord]]:
        for off, value in enumerate(self.entries):
            yield off, decode_record(value, f"offset {off}")


class FileMetadataLog:
    def __init__(self, data_dir: Path) -> None:
        self.dir = Path(data_dir) / f"{METADATA_TOPIC}-{METADATA_PARTITION}"
        # Recover from offset 0 every time: the metadata log is small, and a torn tail must go.
        config = LogConfig(max_batch_bytes=8 * 1024 * 1024, flush_every_batch=True)
        self.log = Log.open(self.dir, config, recovery_point=0)
        self._snapshot = read_latest_snapshot(self.dir)
        self.bytes_since_snapshot = 0
        snap_epoch = 0
        if self._snapshot is not None:
            end, snap_epoch = self._snapshot.snapshot_id.offset, self._snapshot.snapshot_id.epoch
            if self.log.log_start_offset < end:  # crashed between snapshot and truncation
                if self.log.log_end_offset != end:
                    raise ValueError(f"{self.dir}: snapshot ends at {end} but the log holds "
                                     f"[{self.log.log_start_offset}, {self.log.log_end_offset})")
                self.log.truncate_fully_and_start_at(end)
        self.epoch = max(self.log.latest_epoch or 0, snap_epoch) + 1

    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def high_watermark(self) -> int:
        return self.log.log_end_offset  # one controller: everything appended is committed

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    def append(self, records: Sequence[MetadataRecord]) -> int:
        values = [encode_record(r) for r in records]
        batch = build_batch([(None, v) for v in values], epoch=self.epoch)
        info = self.log.append_as_leader(batch, self.epoch)
        self.log.update_high_watermark(self.log.log_end_offset)
        self.bytes_since_snapshot += sum(len(v) for v in values)
        return info.first_offset

    def snapshot_image(self) -> MetadataImage:
        snap = self._snapshot
        if snap is None:
            return MetadataImage()
        return decode_snapshot(snap.payload, snap.snapshot_id.offset,
                               f"snapshot {snap.snapshot_id.offset} in {self.dir}")

    def latest_snapshot(self) -> Snapshot | None:
        return self._snapshot

    def create_snapshot(self, image: MetadataImage) -> Snapshot:
        """Snapshot `image`, which must be the state of the whole log, at the log end."""
        end = self.log.log_end_offset
        if image.offset >= end:
            raise ValueError(f"image at offset {image.offset} is ahead of the log end {end}")
        snapshot = Snapshot(OffsetAndEpoch(end, self.epoch), encode_snapshot(image))
        write_snapshot_file(self.dir, snapshot)
        self.log.truncate_fully_and_start_at(end)
        self._snapshot = snapshot
        self.bytes_since_snapshot = 0
        return snapshot

    def replay(self) -> Iterator[tuple[int, MetadataRecord]]:
        for _header, view in self.log.batches(self.log.log_start_offset):
            for rec in decode_records(view):
                yield rec.offset, decode_record(rec.value, f"offset {rec.offset} in {self.dir}")

    def read(self, offset: int, max_bytes: int) -> bytes:
        return self.log.read(offset, max_bytes)

    def close(self) -> None:
        self.log.close()
