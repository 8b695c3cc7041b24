"""ReplicaManager: the broker's partitions, and the entry points for produce and fetch.

Single-node version. It owns the LogManager and one PartitionState per hosted partition.
KafkaApis calls `append_records` and `fetch_messages`; every acks / ISR / min.insync.replicas /
high-watermark decision is made here, in the methods named after Kafka's (`check_enough_replicas`,
`maybe_increment_high_watermark`), so the replication work can replace them with the multi-node
rules (followers, ISR shrink/expand, DelayedProduce) without touching the request handlers.

Single node: ISR = {this broker}; after a leader append HW = LEO, so acks=1 and acks=all
complete at once. Consumers read only below the HW (max_offset = HW).
No sockets, no asyncio: waiting (delayed fetch) is the network edge's job; listeners
registered with `on_append` are told when new data may satisfy a waiting fetch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from broker_app.protocol.error_codes import Errors
from broker_app.storage.errors import DuplicateSequenceError, StorageError
from broker_app.storage.log import Log
from broker_app.storage.log_manager import LogManager

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

ACKS_NONE, ACKS_LEADER, ACKS_ALL = 0, 1, -1


@dataclass
class PartitionState:
    """What this broker knows about one partition it hosts (Kafka's Partition, minimal)."""

    topic: str
    partition: int
    log: Log
    leader_id: int
    leader_epoch: int = 0
    isr: set[int] = field(default_factory=set)
    min_insync_replicas: int = 1


@dataclass
class PartitionAppendResult:
    error_code: int = Errors.NONE
    base_offset: int = -1
    log_start_offset: int = -1
    error_message: str | None = None


@dataclass
class FetchRequestPartition:
    fetch_offset: int
    max_bytes: int


@dataclass
class FetchPartitionResult:
    error_code: int = Errors.NONE
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes = b""  # never None: clients treat null records as an error


class ReplicaManager:
    def __init__(self, node_id: int, log_manager: LogManager) -> None:
        self.node_id = node_id
        self.log_manager = log_manager
        self.partitions: dict[TopicPartition, PartitionState] = {}
        self._append_listeners: list[Callable[[], None]] = []

    # -- partitions -------------------------------------------------------------------

    def make_leader(self, topic: str, partition: int, min_insync_replicas: int) -> PartitionState:
        """Host `topic-partition` as leader (creating its log); idempotent."""
        tp = (topic, partition)
        state = self.partitions.get(tp)
        if state is None:
            lg = self.log_manager.get_or_create_log(topic, partition)
            state = PartitionState(
                topic,
                partition,
                lg,
                leader_id=self.node_id,
                isr={self.node_id},
                min_insync_replicas=min_insync_replicas,
            )
            self.partitions[tp] = state
            # Single node: everything in the log was acknowledged by the whole ISR.
            self.maybe_increment_high_watermark(state)
        state.min_insync_replicas = min_insync_replicas
        return state

    def get_partition(self, topic: str, partition: int) -> PartitionState | None:
        return self.partitions.get((topic, partition))

    def on_append(self, listener: Callable[[], None]) -> None:
        self._append_listeners.append(listener)

    # -- the acks / ISR / HW rules ----------------------------------------------------

    def check_enough_replicas(self, state: PartitionState, required_acks: int) -> bool:
        """Kafka checks min.insync.replicas only for acks=all, before (and after) the append."""
        return required_acks != ACKS_ALL or len(state.isr) >= state.min_insync_replicas

    def maybe_increment_high_watermark(self, state: PartitionState) -> None:
        """HW = min LEO over the ISR; with ISR = {self} that is our LEO."""
        lg = state.log
        if lg.log_end_offset > lg.high_watermark:
            lg.update_high_watermark(lg.log_end_offset)

    # -- produce ----------------------------------------------------------------------

    def append_records(
        self, required_acks: int, entries: dict[TopicPartition, bytes | None]
    ) -> dict[TopicPartition, PartitionAppendResult]:
        results: dict[TopicPartition, PartitionAppendResult] = {}
        appended = False
        for tp, records in entries.items():
            results[tp] = self._append_one(tp, required_acks, records)
            appended = appended or results[tp].error_code == Errors.NONE
        if appended:
            for listener in self._append_listeners:
                listener()
        return results

    def _append_one(
        self, tp: TopicPartition, required_acks: int, records: bytes | None
    ) -> PartitionAppendResult:
        if required_acks not in (ACKS_NONE, ACKS_LEADER, ACKS_ALL):
            return PartitionAppendResult(
                Errors.INVALID_REQUIRED_ACKS,
                error_message=f"acks={required_acks} is not 0, 1 or -1",
            )
        state = self.partitions.get(tp)
        if state is None:
            return PartitionAppendResult(
                Errors.UNKNOWN_TOPIC_OR_PARTITION,
                error_message=f"{tp[0]}-{tp[1]} is not hosted here",
            )
        lg = state.log
        if not records:
            return PartitionAppendResult(
                Errors.CORRUPT_MESSAGE,
                log_start_offset=lg.log_start_offset,
                error_message="produce request carries no records",
            )
        if not self.check_enough_replicas(state, required_acks):
            return PartitionAppendResult(
                Errors.NOT_ENOUGH_REPLICAS,
                log_start_offset=lg.log_start_offset,
                error_message=(
                    f"ISR size {len(state.isr)} < min.insync.replicas "
                    f"{state.min_insync_replicas} for {tp[0]}-{tp[1]}"
                ),
            )
        try:
            info = lg.append_as_leader(bytes(records), state.leader_epoch)
        except DuplicateSequenceError as e:
            # A retry of a batch already in the log: acknowledge it with its original offset.
            log.info(
                "duplicate batch for %s-%d acknowledged at offset %d", tp[0], tp[1], e.first_offset
            )
            return PartitionAppendResult(
                Errors.NONE, base_offset=e.first_offset, log_start_offset=lg.log_start_offset
            )
        except StorageError as e:
            log.warning("append to %s-%d rejected: %s", tp[0], tp[1], e)
            return PartitionAppendResult(
                e.kafka_error_code, log_start_offset=lg.log_start_offset, error_message=str(e)
            )
        self.maybe_increment_high_watermark(state)
        return PartitionAppendResult(
            Errors.NONE, base_offset=info.first_offset, log_start_offset=lg.log_start_offset
        )

    # -- fetch ------------------------------------------------------------------------

    def fetch_isolation_bound(self, state: PartitionState, replica_id: int) -> int:
        """Exclusive upper offset a fetcher may read: consumers stop at the HW, followers
        (replica_id >= 0) read up to the LEO. The multi-node version adds the follower's
        LEO bookkeeping and the "serve consumers beyond the HW" historical switch here."""
        return state.log.log_end_offset if replica_id >= 0 else state.log.high_watermark

    def fetch_messages(
        self,
        requests: dict[TopicPartition, FetchRequestPartition],
        max_bytes: int,
        replica_id: int = -1,
    ) -> dict[TopicPartition, FetchPartitionResult]:
        """Reads up to fetch_isolation_bound; stops adding data once max_bytes is used,
        but always returns at least one batch for the first partition with data (KIP-74)."""
        results: dict[TopicPartition, FetchPartitionResult] = {}
        budget = max_bytes
        first_with_data = True
        for tp, req in requests.items():
            state = self.partitions.get(tp)
            if state is None:
                results[tp] = FetchPartitionResult(Errors.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            lg = state.log
            hw = lg.high_watermark
            bound = self.fetch_isolation_bound(state, replica_id)
            res = FetchPartitionResult(
                high_watermark=hw, last_stable_offset=hw, log_start_offset=lg.log_start_offset
            )
            if req.fetch_offset < lg.log_start_offset or req.fetch_offset > lg.log_end_offset:
                res.error_code = Errors.OFFSET_OUT_OF_RANGE
            elif req.fetch_offset < bound and (budget > 0 or first_with_data):
                limit = max(0, min(req.max_bytes, budget))
                try:
                    data = lg.read(
                        req.fetch_offset, limit, max_offset=bound, min_one_batch=first_with_data
                    )
                except StorageError as e:
                    res.error_code = e.kafka_error_code
                    data = b""
                res.records = bytes(data) if data else b""
                if res.records:
                    first_with_data = False
                    budget -= len(res.records)
            results[tp] = res
        return results
