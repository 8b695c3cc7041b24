"""ProducerStateManager: idempotent-producer sequence checks (Kafka's ProducerStateManager).

Contract:
- Per producer id: the current producer epoch and the metadata of its last 5 batches
  (first_seq, last_seq, first_offset, last_offset), like Kafka's ProducerStateEntry.
- Leader appends (`origin_client=True`) are checked in Kafka's order:
  1. duplicate of one of the last 5 batches (same epoch, same first and last sequence)
     -> DuplicateSequenceError carrying the original offsets (the caller acks them again);
  2. epoch older than the current one -> InvalidProducerEpochError;
  3. a new epoch must start at sequence 0 -> OutOfOrderSequenceError;
  4. same epoch: first_seq must be last_seq + 1 (wrapping INT32_MAX -> 0), else
     OutOfOrderSequenceError.
  Follower/recovery updates skip the checks and just record the batch.
- `begin()` stages updates for a multi-batch append; nothing changes until `commit()`,
  so a rejected batch leaves the state untouched.
- `rebuild(batches)` recreates everything from the log's batch headers (no snapshots).
Transactions (ongoing/aborted txn tracking, markers) are not modelled: control batches only
update the producer epoch.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from .errors import DuplicateSequenceError, InvalidProducerEpochError, OutOfOrderSequenceError
from .records import INT32_MAX, NO_PRODUCER_EPOCH, NO_SEQUENCE, BatchHeader

NUM_BATCHES_TO_RETAIN = 5


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


@dataclass
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )
    last_timestamp: int = -1

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            deque(self.batches, maxlen=NUM_BATCHES_TO_RETAIN),
            self.last_timestamp,
        )

    def find_duplicate(self, h: BatchHeader) -> BatchMetadata | None:
        if h.producer_epoch != self.producer_epoch:
            return None
        for b in self.batches:
            if b.first_seq == h.base_sequence and b.last_seq == h.last_sequence:
                return b
        return None

    def add_batch(self, epoch: int, first_seq: int, last_seq: int, first_offset: int,
                  last_offset: int, timestamp: int) -> None:  # fmt: skip
        if epoch != self.producer_epoch:
            # A new epoch starts a new sequence space (Kafka clears batchMetadata).
            self.batches.clear()
            self.producer_epoch = epoch
        if first_seq != NO_SEQUENCE:
            self.batches.append(BatchMetadata(first_seq, last_seq, first_offset, last_offset))
        self.last_timestamp = max(self.last_timestamp, timestamp)


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerAppend:
    """Staged producer-state changes for one append (Kafka's ProducerAppendInfo, batched)."""

    def __init__(self, manager: ProducerStateManager, *, origin_client: bool) -> None:
        self._manager = manager
        self._origin_client = origin_client
        self._staged: dict[int, ProducerStateEntry] = {}

    def _entry(self, producer_id: int) -> tuple[ProducerStateEntry, bool]:
        """(staged entry, whether the manager already knew this producer)."""
        if producer_id in self._staged:
            known = producer_id in self._manager.producers
            return self._staged[producer_id], known
        current = self._manager.producers.get(producer_id)
        staged = current.copy() if current else ProducerStateEntry(producer_id)
        self._staged[producer_id] = staged
        return staged, current is not None

    def check_and_update(self, h: BatchHeader, first_offset: int, last_offset: int) -> None:
        """Validate one batch (leader) and stage it. Batches without producer id are ignored."""
        if h.producer_id < 0:
            return
        entry, _ = self._entry(h.producer_id)
        if self._origin_client and not h.is_control:
            dup = entry.find_duplicate(h)
            if dup is not None:
                raise DuplicateSequenceError(
                    f"duplicate batch from producer {h.producer_id} epoch {h.producer_epoch} "
                    f"seq {h.base_sequence}..{h.last_sequence}: already at offsets "
                    f"{dup.first_offset}..{dup.last_offset}",
                    dup.first_offset,
                    dup.last_offset,
                )
            self._check(entry, h, first_offset)
        last_seq = h.last_sequence
        entry.add_batch(h.producer_epoch, h.base_sequence if not h.is_control else NO_SEQUENCE,
                        last_seq, first_offset, last_offset, h.max_timestamp)  # fmt: skip

    def _check(self, entry: ProducerStateEntry, h: BatchHeader, offset: int) -> None:
        if entry.producer_epoch != NO_PRODUCER_EPOCH and h.producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"epoch of producer {h.producer_id} at offset {offset} is {h.producer_epoch}, "
                f"smaller than the last seen epoch {entry.producer_epoch}"
            )
        if h.base_sequence == NO_SEQUENCE:
            return  # not an idempotent batch (transactional markers, old clients)
        if h.producer_epoch != entry.producer_epoch:
            if h.base_sequence != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"invalid sequence number for new epoch {h.producer_epoch} of producer "
                    f"{h.producer_id} at offset {offset}: seq {h.base_sequence} (must be 0), "
                    f"current epoch {entry.producer_epoch}"
                )
            return
        # Same epoch. An unknown producer (state expired or never seen) accepts any sequence,
        # as Kafka does when the current epoch is NO_PRODUCER_EPOCH.
        if entry.producer_epoch == NO_PRODUCER_EPOCH or not entry.batches:
            return
        if not in_sequence(entry.last_seq, h.base_sequence):
            raise OutOfOrderSequenceError(
                f"out of order sequence number for producer {h.producer_id} at offset {offset}: "
                f"{h.base_sequence} (incoming seq), {entry.last_seq} (current end sequence)"
            )

    def commit(self) -> None:
        self._manager.producers.update(self._staged)
        self._staged = {}


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerStateEntry] = {}

    def begin(self, *, origin_client: bool = True) -> ProducerAppend:
        return ProducerAppend(self, origin_client=origin_client)

    def check_and_update(self, h: BatchHeader, first_offset: int, last_offset: int,
                         *, origin_client: bool = True) -> None:  # fmt: skip
        """Single-batch convenience: check, then apply at once."""
        append = self.begin(origin_client=origin_client)
        append.check_and_update(h, first_offset, last_offset)
        append.commit()

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def rebuild(self, headers: Iterable[BatchHeader]) -> None:
        """Recreate the state from the log (every batch, in offset order)."""
        self.producers.clear()
        append = self.begin(origin_client=False)
        for h in headers:
            if h.producer_id >= 0:
                append.check_and_update(h, h.base_offset, h.last_offset)
        append.commit()

    def truncate_fully(self) -> None:
        self.producers.clear()
