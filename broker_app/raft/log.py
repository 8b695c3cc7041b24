"""ReplicatedLog: the Raft log contract (Kafka's org.apache.kafka.raft.ReplicatedLog) and an
in-memory implementation.

Contract:
- Records live in batches; every batch carries the leader epoch that wrote it. Offsets are
  dense: record i of a batch at base offset b has offset b + i.
- `append_as_leader` / `append_as_follower` add batches at the log end WITHOUT making them
  durable; `flush()` makes everything appended so far durable and `flushed_end_offset` says how
  far that is. The leader counts its own log toward the high watermark only up to
  flushed_end_offset, so a record is committed only once a majority holds it durably.
- `end_offset_for_epoch(e)` answers for the largest epoch e' <= e in the log: (e', the first
  offset after e''s records). It is what the leader uses to detect a follower's divergence.
  The snapshot's epoch covers everything before the log start; an empty log has epoch 0.
- Snapshots (KIP-630): `create_snapshot(end_offset, payload)` stores the state machine's image
  of offsets [0, end_offset) and moves the log start to end_offset (Kafka deletes segments
  lazily; here at once). `load_snapshot` replaces the whole log with a leader's snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, order=True)
class OffsetAndEpoch:
    """An end offset and the epoch of the record just before it (Kafka's OffsetAndEpoch).
    Ordered (offset, epoch) by dataclass; compare logs with `log_up_to_date` instead."""

    offset: int
    epoch: int


UNKNOWN = OffsetAndEpoch(-1, -1)


@dataclass(frozen=True)
class Batch:
    base_offset: int
    epoch: int
    records: tuple[bytes, ...]
    control: bool = False  # a control batch (LeaderChange) is Raft's own, not the state machine's

    def __post_init__(self) -> None:
        if not self.records:
            raise ValueError("a batch holds at least one record")

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1

    @property
    def next_offset(self) -> int:
        return self.base_offset + len(self.records)


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: OffsetAndEpoch  # end offset (exclusive) and the epoch of the last record in it
    payload: bytes


def log_up_to_date(a: OffsetAndEpoch, b: OffsetAndEpoch) -> bool:
    """True when a log ending at `a` is at least as up to date as one ending at `b`: Raft's
    rule (section 5.4.1) — the later last epoch wins, equal epochs compare end offsets."""
    return (a.epoch, a.offset) >= (b.epoch, b.offset)


class ReplicatedLog(Protocol):
    @property
    def start_offset(self) -> int: ...
    @property
    def end_offset(self) -> int: ...
    @property
    def flushed_end_offset(self) -> int: ...
    @property
    def last_fetched_epoch(self) -> int: ...
    def end_offset_and_epoch(self) -> OffsetAndEpoch: ...
    def append_as_leader(self, records: Sequence[bytes], epoch: int,
                         control: bool = False) -> Batch: ...
    def append_as_follower(self, batches: Sequence[Batch]) -> None: ...
    def read(self, offset: int, max_batches: int) -> tuple[Batch, ...]: ...
    def truncate_to(self, offset: int) -> None: ...
    def flush(self) -> None: ...
    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch: ...
    def latest_snapshot(self) -> Snapshot | None: ...
    def create_snapshot(self, end_offset: int, payload: bytes) -> Snapshot: ...
    def load_snapshot(self, snapshot: Snapshot) -> None: ...


class MemoryReplicatedLog:
    """ReplicatedLog in memory. Batches are kept whole (a batch is the unit of atomicity); a
    truncation or snapshot inside a batch keeps the batch's surviving records as a batch."""

    def __init__(self) -> None:
        self._batches: list[Batch] = []
        self._start = 0
        self._flushed = 0
        self._snapshot: Snapshot | None = None

    # -- positions --------------------------------------------------------------------------
    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        return self._batches[-1].next_offset if self._batches else self._start

    @property
    def flushed_end_offset(self) -> int:
        return self._flushed

    @property
    def _base_epoch(self) -> int:
        return self._snapshot.snapshot_id.epoch if self._snapshot else 0

    @property
    def last_fetched_epoch(self) -> int:
        return self._batches[-1].epoch if self._batches else self._base_epoch

    def end_offset_and_epoch(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.end_offset, self.last_fetched_epoch)

    # -- writes -----------------------------------------------------------------------------
    def append_as_leader(self, records: Sequence[bytes], epoch: int,
                         control: bool = False) -> Batch:
        if epoch < self.last_fetched_epoch:
            raise ValueError(f"epoch {epoch} is older than the log's {self.last_fetched_epoch}")
        batch = Batch(self.end_offset, epoch, tuple(records), control)
        self._batches.append(batch)
        return batch

    def append_as_follower(self, batches: Sequence[Batch]) -> None:
        for batch in batches:
            if batch.base_offset != self.end_offset:
                raise ValueError(f"batch at {batch.base_offset}, log ends at {self.end_offset}")
            if batch.epoch < self.last_fetched_epoch:
                raise ValueError(f"batch epoch {batch.epoch} < log epoch {self.last_fetched_epoch}")
            self._batches.append(batch)

    def flush(self) -> None:
        self._flushed = self.end_offset

    def truncate_to(self, offset: int) -> None:
        if offset < self._start:
            raise ValueError(f"cannot truncate to {offset} below the log start {self._start}")
        kept: list[Batch] = []
        for b in self._batches:
            if b.next_offset <= offset:
                kept.append(b)
            elif b.base_offset < offset:
                kept.append(Batch(b.base_offset, b.epoch, b.records[: offset - b.base_offset],
                                  b.control))
        self._batches = kept
        self._flushed = min(self._flushed, self.end_offset)

    def lose_unflushed(self) -> None:
        """A crash: whatever was not flushed is gone (tests drive restarts with this)."""
        self.truncate_to(self._flushed)

    # -- reads ------------------------------------------------------------------------------
    def read(self, offset: int, max_batches: int) -> tuple[Batch, ...]:
        if offset < self._start or offset > self.end_offset:
            raise ValueError(f"offset {offset} outside [{self._start}, {self.end_offset}]")
        out: list[Batch] = []
        for b in self._batches:
            if b.next_offset <= offset:
                continue
            if b.base_offset < offset:  # a read from inside a batch returns its tail
                b = Batch(offset, b.epoch, b.records[offset - b.base_offset:], b.control)
            out.append(b)
            if len(out) >= max_batches:
                break
        return tuple(out)

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        if epoch < self._base_epoch:
            return UNKNOWN  # the answer lies inside the snapshot: the follower needs it
        best = OffsetAndEpoch(self._start, self._base_epoch)
        for b in self._batches:
            if b.epoch > epoch:
                return best
            best = OffsetAndEpoch(b.next_offset, b.epoch)
        return best

    # -- snapshots --------------------------------------------------------------------------
    def latest_snapshot(self) -> Snapshot | None:
        return self._snapshot

    def create_snapshot(self, end_offset: int, payload: bytes) -> Snapshot:
        if not self._start <= end_offset <= self.end_offset:
            raise ValueError(f"snapshot end {end_offset} outside [{self._start}, "
                             f"{self.end_offset}]")
        epoch = self._epoch_of(end_offset - 1)
        snapshot = Snapshot(OffsetAndEpoch(end_offset, epoch), payload)
        self._batches = list(self.read(end_offset, len(self._batches) + 1)) \
            if end_offset < self.end_offset else []
        self._snapshot = snapshot
        self._start = end_offset
        self._flushed = max(self._flushed, end_offset)
        return snapshot

    def load_snapshot(self, snapshot: Snapshot) -> None:
        self._batches = []
        self._snapshot = snapshot
        self._start = self._flushed = snapshot.snapshot_id.offset

    def _epoch_of(self, offset: int) -> int:
        for b in self._batches:
            if b.base_offset <= offset <= b.last_offset:
                return b.epoch
        return self._base_epoch
