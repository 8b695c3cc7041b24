"""ReplicaManager: the broker's Partitions, and the entry points for produce and fetch.

Sans-I/O glue between the request handlers (server/kafka_apis.py), the replication core
(partition.Partition, the DelayedProduce purgatory) and the I/O edges (the controller link, the
replica fetchers, timers). Every time is a `now_ms` from `self.clock`; nothing here awaits.

- Single node (no controller): `host_single_node` makes this broker leader of a partition with
  replicas = ISR = {self}, leader epoch 0; after an append HW = LEO, so acks=all completes at once.
- Cluster: `apply_local_changes(changes, image)` turns the controller's committed metadata into
  `Partition.make_leader` / `make_follower`; listeners registered with `on_follower_change` start
  or stop replica fetchers.
- `append_records(acks, entries, timeout_ms, callback)`: acks 0/1 answer now; acks=all parks a
  DelayedProduce in `produce_purgatory`, completed when the HW covers the batch (check_and_complete
  on every HW move) or expired by `tick(now_ms)` with REQUEST_TIMED_OUT. NOT_ENOUGH_REPLICAS and
  NOT_ENOUGH_REPLICAS_AFTER_APPEND are the core's decisions.
- `fetch_messages(..., replica_id)`: consumers read up to the HW (or the LEO under the legacy
  consumer_visibility switch); replicas (replica_id >= 0) go through
  `Partition.fetch_records_for_follower`, which may advance the HW and propose an ISR change.
- ISR changes leave through `alter_partition_sink(request)` (the controller link sends them and
  calls `on_alter_partition_response`). `tick(now_ms)` runs the ISR shrink check and expiry.
- Listeners from `on_append` are told whenever data was appended or a HW moved, so parked fetches
  re-check.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker_app.protocol.error_codes import Errors
from broker_app.replication.behaviour import ReplicationBehaviour
from broker_app.replication.delayed_produce import (
    DelayedProduce,
    ProducePartitionResult,
    ProducePartitionStatus,
)
from broker_app.replication.errors import NotEnoughReplicasError, ReplicationError
from broker_app.replication.messages import (
    NO_CURRENT_LEADER_EPOCH,
    UNDEFINED_EPOCH,
    AlterPartitionRequest,
    AlterPartitionResponse,
    EpochEndOffset,
    FetchIsolation,
    FetchRequestData,
)
from broker_app.replication.partition import Partition
from broker_app.replication.purgatory import Purgatory
from broker_app.storage.errors import StorageError
from broker_app.storage.log_manager import LogManager

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

ACKS_NONE, ACKS_LEADER, ACKS_ALL = 0, 1, -1


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


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
    current_leader_epoch: int = NO_CURRENT_LEADER_EPOCH
    last_fetched_epoch: int = UNDEFINED_EPOCH
    log_start_offset: int = -1  # a follower's own log start (replica fetches)


@dataclass
class FetchPartitionResult:
    error_code: int = Errors.NONE
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes = b""  # never None: clients treat null records as an error
    diverging_epoch: EpochEndOffset | None = None
    leader_id: int = -1
    leader_epoch: int = -1


class ReplicaManager:
    def __init__(
        self,
        node_id: int,
        log_manager: LogManager,
        behaviour: ReplicationBehaviour | None = None,
        replica_lag_time_max_ms: int = 30_000,
        clock: Callable[[], int] = monotonic_ms,
    ) -> None:
        self.node_id = node_id
        self.log_manager = log_manager
        self.behaviour = behaviour or ReplicationBehaviour()
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.clock = clock
        self.partitions: dict[TopicPartition, Partition] = {}
        self.topic_ids: dict[str, Any] = {}
        self.produce_purgatory: Purgatory[DelayedProduce] = Purgatory("Produce")
        self.alter_partition_sink: Callable[[AlterPartitionRequest], None] | None = None
        self._append_listeners: list[Callable[[], None]] = []
        self._follower_listeners: list[Callable[[Partition, bool], None]] = []

    # -- partitions -------------------------------------------------------------------

    def _get_or_create(self, topic: str, partition: int, min_isr: int) -> Partition:
        tp = (topic, partition)
        p = self.partitions.get(tp)
        if p is None:
            lg = self.log_manager.get_or_create_log(topic, partition)
            p = Partition(
                topic,
                partition,
                self.node_id,
                lg,
                self.behaviour,
                self.replica_lag_time_max_ms,
                max(min_isr, 1),
            )
            self.partitions[tp] = p
        p.min_insync_replicas = max(min_isr, 1)
        return p

    def host_single_node(self, topic: str, partition: int, min_insync_replicas: int) -> Partition:
        """Single-node mode: lead `topic-partition` alone (creating its log); idempotent."""
        p = self._get_or_create(topic, partition, min_insync_replicas)
        if not p.is_leader:
            p.make_leader(0, [self.node_id], [self.node_id], 0, self.clock())
        return p

    def get_partition(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def on_append(self, listener: Callable[[], None]) -> None:
        self._append_listeners.append(listener)

    def on_follower_change(self, listener: Callable[[Partition, bool], None]) -> None:
        """listener(partition, fetch) — fetch=True: (re)start its fetcher; False: stop it."""
        self._follower_listeners.append(listener)

    def _notify_data(self) -> None:
        for listener in self._append_listeners:
            listener()

    def _hw_moved(self, tp: TopicPartition) -> None:
        self.produce_purgatory.check_and_complete(tp)
        self._notify_data()

    # -- controller decisions ----------------------------------------------------------

    def apply_partition(
        self,
        topic: str,
        partition: int,
        leader: int,
        leader_epoch: int,
        isr: tuple[int, ...],
        replicas: tuple[int, ...],
        partition_epoch: int,
        min_isr: int,
    ) -> None:
        """One committed registration that lists this broker as a replica."""
        p = self._get_or_create(topic, partition, min_isr)
        now = self.clock()
        tp = (topic, partition)
        try:
            if leader == self.node_id:
                was_follower = p.role == "follower"
                if p.make_leader(leader_epoch, isr, replicas, partition_epoch, now):
                    log.info("%s: leader at epoch %d, isr %s", p.name, leader_epoch, list(isr))
                if was_follower:
                    self._tell_followers(p, False)
            else:
                restart = p.make_follower(leader, leader_epoch, isr, replicas, partition_epoch, now)
                if restart:
                    log.info("%s: follower of %d at epoch %d", p.name, leader, leader_epoch)
                    self._tell_followers(p, leader >= 0)
        except ReplicationError as e:
            log.warning("%s: cannot apply metadata (leader %d epoch %d): %s",
                        p.name, leader, leader_epoch, e)  # fmt: skip
        # Leadership or ISR moved: waiting produces may now be answerable either way.
        self._hw_moved(tp)

    def stop_replica(self, topic: str, partition: int) -> None:
        p = self.partitions.pop((topic, partition), None)
        if p is None:
            return
        was_follower = p.role == "follower"
        p.make_offline()
        if was_follower:
            self._tell_followers(p, False)
        self._hw_moved((topic, partition))

    def _tell_followers(self, p: Partition, fetch: bool) -> None:
        for listener in self._follower_listeners:
            listener(p, fetch)

    def on_alter_partition_response(
        self, request: AlterPartitionRequest, response: AlterPartitionResponse
    ) -> None:
        p = self.partitions.get((request.topic, request.partition))
        if p is None:
            return
        p.on_alter_partition_response(request, response, self.clock())
        self._hw_moved((request.topic, request.partition))

    def _send_alter_partition(self, request: AlterPartitionRequest | None) -> None:
        if request is None:
            return
        log.info("%s-%d: proposing ISR %s (partition epoch %d)", request.topic,
                 request.partition, list(request.new_isr), request.partition_epoch)  # fmt: skip
        if self.alter_partition_sink is not None:
            self.alter_partition_sink(request)

    # -- timers -------------------------------------------------------------------------

    def tick(self, now_ms: int | None = None) -> None:
        """ISR shrink check (replica.lag.time.max.ms) and acks=all expiry."""
        now = self.clock() if now_ms is None else now_ms
        for tp, p in list(self.partitions.items()):
            if not p.is_leader or len(p.replicas) <= 1:
                continue
            hw_before = p.high_watermark
            self._send_alter_partition(p.maybe_shrink_isr(now))
            if p.high_watermark != hw_before:
                self._hw_moved(tp)
        self.produce_purgatory.expire_due(now)

    # -- produce ----------------------------------------------------------------------

    def append_records(
        self,
        required_acks: int,
        entries: dict[TopicPartition, bytes | None],
        timeout_ms: int = 30_000,
        callback: Callable[[dict[TopicPartition, PartitionAppendResult]], None] | None = None,
    ) -> dict[TopicPartition, PartitionAppendResult] | None:
        """Append as leader. Returns the results now, or None when an acks=all produce was
        parked: `callback(results)` is then called once, on completion or expiry."""
        now = self.clock()
        results: dict[TopicPartition, PartitionAppendResult] = {}
        ends: dict[TopicPartition, int] = {}
        for tp, records in entries.items():
            results[tp], end = self._append_one(tp, required_acks, records, now)
            if end is not None:
                ends[tp] = end
        if ends:
            self._notify_data()
        if required_acks != ACKS_ALL or not ends or callback is None:
            return results
        statuses = {
            tp: ProducePartitionStatus(
                required_offset=ends[tp] if tp in ends else -1,
                base_offset=r.base_offset,
                error=Errors(r.error_code) if tp not in ends else Errors.NONE,
            )
            for tp, r in results.items()
        }

        def done(by_key: dict[Any, ProducePartitionResult]) -> None:
            out = {}
            for tp, pr in by_key.items():
                prev = results[tp]
                msg = prev.error_message if pr.error == prev.error_code else None
                if pr.error == Errors.REQUEST_TIMED_OUT:
                    msg = f"acks=all: HW did not reach the batch within {timeout_ms} ms"
                out[tp] = PartitionAppendResult(
                    pr.error, pr.base_offset, prev.log_start_offset, msg
                )
            callback(out)

        op = DelayedProduce(now + timeout_ms, statuses, self.partitions.get, done)
        if self.produce_purgatory.try_complete_else_watch(op, list(ends)):
            return None  # the callback already ran
        return None

    def _append_one(
        self, tp: TopicPartition, required_acks: int, records: bytes | None, now: int
    ) -> tuple[PartitionAppendResult, int | None]:
        if required_acks not in (ACKS_NONE, ACKS_LEADER, ACKS_ALL):
            return PartitionAppendResult(
                Errors.INVALID_REQUIRED_ACKS,
                error_message=f"acks={required_acks} is not 0, 1 or -1",
            ), None
        p = self.partitions.get(tp)
        if p is None:
            return PartitionAppendResult(
                Errors.UNKNOWN_TOPIC_OR_PARTITION,
                error_message=f"{tp[0]}-{tp[1]} is not hosted here",
            ), None
        lg = p.log
        if not records:
            return PartitionAppendResult(
                Errors.CORRUPT_MESSAGE,
                log_start_offset=lg.log_start_offset,
                error_message="produce request carries no records",
            ), None
        try:
            res = p.append_records_to_leader(bytes(records), required_acks, now)
        except NotEnoughReplicasError as e:
            return PartitionAppendResult(
                Errors.NOT_ENOUGH_REPLICAS,
                log_start_offset=lg.log_start_offset,
                error_message=f"ISR size {len(p.isr)} < min.insync.replicas "
                f"{p.min_insync_replicas} for {tp[0]}-{tp[1]} ({e})",
            ), None
        except (ReplicationError, StorageError) as e:
            code = int(e.kafka_error_code)
            if code != Errors.NOT_LEADER_OR_FOLLOWER:
                log.info("append to %s-%d rejected: %s", tp[0], tp[1], e)
            return PartitionAppendResult(
                code, log_start_offset=lg.log_start_offset, error_message=str(e)
            ), None
        info = res.info
        if getattr(info, "duplicate", False):
            log.info("duplicate batch for %s-%d acknowledged at offset %d",
                     tp[0], tp[1], info.first_offset)  # fmt: skip
        if res.hw_advanced:
            self.produce_purgatory.check_and_complete(tp)
        result = PartitionAppendResult(
            Errors.NONE, base_offset=info.first_offset, log_start_offset=lg.log_start_offset
        )
        return result, info.last_offset + 1

    # -- fetch ------------------------------------------------------------------------

    def fetch_messages(
        self,
        requests: dict[TopicPartition, FetchRequestPartition],
        max_bytes: int,
        replica_id: int = -1,
    ) -> dict[TopicPartition, FetchPartitionResult]:
        """Stops adding data once max_bytes is used, but returns at least one batch for the
        first partition with data (KIP-74)."""
        results: dict[TopicPartition, FetchPartitionResult] = {}
        budget = max_bytes
        first_with_data = True
        now = self.clock()
        for tp, req in requests.items():
            p = self.partitions.get(tp)
            if p is None:
                results[tp] = FetchPartitionResult(Errors.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            limit = max(0, min(req.max_bytes, budget)) if not first_with_data else req.max_bytes
            try:
                if replica_id >= 0:
                    core, update = p.fetch_records_for_follower(
                        FetchRequestData(
                            replica_id=replica_id,
                            fetch_offset=req.fetch_offset,
                            current_leader_epoch=req.current_leader_epoch,
                            log_start_offset=req.log_start_offset,
                            max_bytes=limit,
                            last_fetched_epoch=req.last_fetched_epoch,
                        ),
                        now,
                    )
                    self._send_alter_partition(update.alter_partition)
                    if update.hw_advanced:
                        self._hw_moved(tp)
                else:
                    core = p.read_for_fetch(
                        req.fetch_offset,
                        limit,
                        FetchIsolation.HIGH_WATERMARK,
                        last_fetched_epoch=req.last_fetched_epoch,
                        current_leader_epoch=req.current_leader_epoch,
                    )
            except StorageError as e:
                results[tp] = FetchPartitionResult(int(e.kafka_error_code))
                continue
            hw = core.high_watermark
            res = FetchPartitionResult(
                error_code=int(core.error),
                high_watermark=hw,
                last_stable_offset=hw,
                log_start_offset=core.log_start_offset,
                records=core.records,
                diverging_epoch=core.diverging_epoch,
                leader_id=p.leader_id,
                leader_epoch=p.leader_epoch,
            )
            if res.records:
                first_with_data = False
                budget -= len(res.records)
            results[tp] = res
        return results

    def last_offset_for_leader_epoch(
        self, topic: str, partition: int, leader_epoch: int, current_leader_epoch: int
    ) -> EpochEndOffset:
        """The OffsetForLeaderEpoch answer for one partition (leader only)."""
        p = self.partitions.get((topic, partition))
        if p is None:
            return EpochEndOffset(error=Errors.UNKNOWN_TOPIC_OR_PARTITION)
        return p.last_offset_for_leader_epoch(leader_epoch, current_leader_epoch)

    # -- observability ------------------------------------------------------------------

    def snapshot(self) -> list[dict[str, Any]]:
        return [p.snapshot() for _, p in sorted(self.partitions.items())]
