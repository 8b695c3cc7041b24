"""RaftMetadataLog: the controller's MetadataLog over a KafkaRaftClient (issue 13, step 2).

The MetadataLog of QuorumController (quorum_controller.py) over Raft, as every controller
keeps it (a lone one is a one-voter quorum). Where it differs from a plain log:
- `append(records)` works only on the Raft leader (NotControllerError otherwise) and returns
  the batch's base offset at once: the batch is NOT durable or committed yet. The caller
  (RaftQuorumController) holds any answer until the high watermark passes it.
- Offsets include Raft's own control records (LeaderChange), which `replay()` and
  `read_committed()` skip; metadata offsets are therefore not dense, which nothing relies on
  (broker epochs are record offsets, so only their order matters).
- `replay()` yields every metadata record in the log, committed or not (a new leader, whose
  whole log is committed once its LeaderChange is, rebuilds its image from it).
- `read(offset, max_bytes)` serves brokers' Fetch of `__cluster_metadata-0`: v2 record batches
  of committed metadata records only (it stops at the high watermark, so a deposed leader's
  uncommitted record never reaches a broker). Control batches are left out; a broker sees an
  offset gap there, as after compaction.

- Snapshots (KIP-630): once a controller snapshotted its committed image the log starts at
  the snapshot's end offset (`log_start_offset`); `latest_snapshot()` is what a broker whose
  fetch offset is below it must load first (ControllerApis answers its Fetch with the
  SnapshotId), `read()` below the log start raises OffsetOutOfRangeError, and `replay()`
  refuses such a log (the image is the snapshot's plus the records after it, which
  RaftQuorumController keeps as its committed image).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from broker_app.metadata.image import MetadataImage
from broker_app.metadata.records import MetadataRecord, decode_record, encode_record
from broker_app.raft import KafkaRaftClient, NotLeaderError, Snapshot
from broker_app.storage import build_batch
from broker_app.storage.errors import OffsetOutOfRangeError

from .errors import ControllerError, Errors

READ_MAX_BATCHES = 1024


class NotControllerError(ControllerError):
    """This controller is not the active one (Kafka: NOT_CONTROLLER); leader_id is the hint."""

    def __init__(self, message: str, leader_id: int | None = None) -> None:
        super().__init__(Errors.NOT_CONTROLLER, message)
        self.leader_id = leader_id


class RaftMetadataLog:
    def __init__(self, client: KafkaRaftClient) -> None:
        self.client = client

    @property
    def end_offset(self) -> int:
        return self.client.log.end_offset

    @property
    def high_watermark(self) -> int:
        return self.client.high_watermark or 0

    @property
    def log_start_offset(self) -> int:
        return self.client.log.start_offset

    @property
    def epoch(self) -> int:
        return self.client.epoch

    def latest_snapshot(self) -> Snapshot | None:
        return self.client.log.latest_snapshot()

    def append(self, records: Sequence[MetadataRecord]) -> int:
        try:
            return self.client.append([encode_record(r) for r in records])
        except NotLeaderError as e:
            raise NotControllerError(str(e), self.client.leader_id) from None

    def _records(self, offset: int, end: int) -> Iterator[tuple[int, int, bytes]]:
        """(offset, epoch, value) of metadata (non-control) records in [offset, end)."""
        while offset < end:
            batches = self.client.log.read(offset, READ_MAX_BATCHES)
            if not batches:
                return
            for b in batches:
                for i, value in enumerate(b.records):
                    off = b.base_offset + i
                    if off >= end:
                        return
                    if off >= offset and not b.control:
                        yield off, b.epoch, value
                offset = b.next_offset

    def snapshot_image(self) -> MetadataImage:
        """Not used: RaftQuorumController keeps the committed image itself (replay refuses a
        log that starts after a snapshot)."""
        return MetadataImage()

    def replay(self) -> Iterator[tuple[int, MetadataRecord]]:
        start = self.client.log.start_offset
        if start > 0:
            raise ValueError(f"the Raft metadata log starts at {start} after a snapshot: "
                             f"load the snapshot first (RaftQuorumController.committed_image)")
        for off, _epoch, value in self._records(0, self.end_offset):
            yield off, decode_record(value, f"offset {off} of the Raft metadata log")

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Committed metadata records from `offset` as v2 record batches (one per Raft
        batch), at most about max_bytes (always at least one batch if there is one).
        OffsetOutOfRangeError below the log start, and past the log end (an offset this log
        never had; Kafka's leader answers such a fetch with a diverging epoch, which the
        metadata Fetch versions brokers send here cannot carry). Between the high watermark
        and the log end: nothing yet."""
        if offset < self.log_start_offset:
            raise OffsetOutOfRangeError(f"metadata fetch offset {offset} is below the log start "
                                        f"{self.log_start_offset} (a snapshot holds it)")
        if offset > self.end_offset:
            raise OffsetOutOfRangeError(f"metadata fetch offset {offset} is past the log end "
                                        f"{self.end_offset}")
        out = bytearray()
        run: list[tuple[int, int, bytes]] = []

        def flush() -> None:
            if run:
                out.extend(build_batch([(None, v) for _o, _e, v in run],
                                       base_offset=run[0][0], epoch=run[0][1]))
                run.clear()

        for off, epoch, value in self._records(offset, self.high_watermark):
            # A batch holds consecutive offsets of one epoch (a control record breaks it).
            if run and (off != run[-1][0] + 1 or epoch != run[-1][1]):
                flush()
                if len(out) >= max_bytes:
                    break
            run.append((off, epoch, value))
        else:
            flush()
        return bytes(out)
