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
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

from broker_app.metadata.records import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    MetadataRecord,
    decode_record,
    encode_record,
)
from broker_app.storage import Log, LogConfig, build_batch, decode_records


class MetadataLog(Protocol):
    @property
    def end_offset(self) -> int: ...

    def append(self, records: Sequence[MetadataRecord]) -> int: ...

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

    def replay(self) -> Iterator[tuple[int, MetadataRecord]]:
        for off, value in enumerate(self.entries):
            yield off, decode_record(value, f"offset {off}")


class FileMetadataLog:
    def __init__(self, data_dir: Path) -> None:
        self.dir = Path(data_dir) / f"{METADATA_TOPIC}-{METADATA_PARTITION}"
        # Recover from offset 0 every time: the metadata log is small, and a torn tail must go.
        config = LogConfig(max_batch_bytes=8 * 1024 * 1024, flush_every_batch=True)
        self.log = Log.open(self.dir, config, recovery_point=0)
        self.epoch = (self.log.latest_epoch or 0) + 1

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
        batch = build_batch([(None, encode_record(r)) for r in records], epoch=self.epoch)
        info = self.log.append_as_leader(batch, self.epoch)
        self.log.update_high_watermark(self.log.log_end_offset)
        return info.first_offset

    def replay(self) -> Iterator[tuple[int, MetadataRecord]]:
        for _header, view in self.log.batches(0):
            for rec in decode_records(view):
                yield rec.offset, decode_record(rec.value, f"offset {rec.offset} in {self.dir}")

    def read(self, offset: int, max_bytes: int) -> bytes:
        return self.log.read(offset, max_bytes)

    def latest_snapshot(self) -> None:
        """A single controller never snapshots (only the Raft quorum does, issue 13)."""
        return None

    def close(self) -> None:
        self.log.close()
