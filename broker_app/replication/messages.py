"""Plain data objects exchanged by the sans-I/O replication core.

Contract: frozen dataclasses with Kafka's field meanings, one partition each. The I/O edge turns
them into wire messages (Fetch, OffsetForLeaderEpoch, AlterPartition) and back; nothing here
knows about sockets or encodings. Offsets and epochs use Kafka's sentinels (-1 = undefined).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from broker_app.replication.errors import Errors

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
# Fetch's CurrentLeaderEpoch when the client does not send one (old versions, no fencing).
NO_CURRENT_LEADER_EPOCH = -1


class FetchIsolation(Enum):
    """How far a read may go (Kafka's FetchIsolation)."""

    LOG_END = "log-end"  # replica fetches: up to the log end offset
    HIGH_WATERMARK = "high-watermark"  # consumers, read_uncommitted
    TXN_COMMITTED = "txn-committed"  # consumers, read_committed (no transactions yet: the HW)


@dataclass(frozen=True)
class EpochEndOffset:
    """An OffsetForLeaderEpoch answer, also Fetch's DivergingEpoch."""

    error: Errors = Errors.NONE
    leader_epoch: int = UNDEFINED_EPOCH
    end_offset: int = UNDEFINED_EPOCH_OFFSET


@dataclass(frozen=True)
class OffsetForLeaderEpochRequestData:
    """What a truncating follower asks the leader: where does `leader_epoch` end on your log?"""

    replica_id: int
    current_leader_epoch: int
    leader_epoch: int


@dataclass(frozen=True)
class ListOffsetsRequestData:
    """What a follower asks after OFFSET_OUT_OF_RANGE: the leader's latest (-1, its log end
    offset for a replica) or earliest (-2, log start) offset, as Kafka's fetcher does."""

    replica_id: int
    current_leader_epoch: int
    timestamp: int  # -1 LATEST or -2 EARLIEST


@dataclass(frozen=True)
class ListOffsetsAnswer:
    error: Errors = Errors.NONE
    offset: int = -1


@dataclass(frozen=True)
class FetchRequestData:
    """One partition of a replica Fetch request."""

    replica_id: int
    fetch_offset: int
    current_leader_epoch: int
    log_start_offset: int
    max_bytes: int
    # UNDEFINED_EPOCH unless the diverging-epoch protocol is on (Fetch v12+ LastFetchedEpoch).
    last_fetched_epoch: int = UNDEFINED_EPOCH
    # Kafka's minOneMessage: only the first partition of a response with data may exceed
    # max_bytes by its first whole batch (KIP-74).
    min_one_batch: bool = True
    # KIP-903: the follower's broker epoch (Fetch v15 ReplicaState.ReplicaEpoch); -1 when the
    # request has none (before v15).
    replica_epoch: int = -1


@dataclass(frozen=True)
class FetchPartitionResult:
    """One partition of a Fetch response, as the leader computed it."""

    error: Errors = Errors.NONE
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    records: bytes = b""
    diverging_epoch: EpochEndOffset | None = None
    # Records are readable at the fetch offset (below the HW, or the LEO for a replica),
    # whether or not this answer carries them (DelayedFetch asks with max_bytes 0).
    readable: bool = False


@dataclass(frozen=True)
class AlterPartitionRequest:
    """An ISR change the leader asks the controller to commit (KIP-497)."""

    topic: str
    partition: int
    broker_id: int
    leader_epoch: int
    new_isr: tuple[int, ...]
    partition_epoch: int
    # KIP-903 (AlterPartition v3 NewIsrWithEpochs): the broker epoch of each new_isr member,
    # in the same order, as the leader knew it when it decided; -1 = not checked. None: v2.
    isr_broker_epochs: tuple[int, ...] | None = None


@dataclass(frozen=True)
class AlterPartitionResponse:
    """The controller's answer: on success the committed leader epoch, ISR and partition epoch."""

    error: Errors = Errors.NONE
    leader_id: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = field(default_factory=tuple)
    partition_epoch: int = -1
