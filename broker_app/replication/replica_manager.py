"""ReplicaManager: the broker's Partitions, and the entry points for produce and fetch.

Sans-I/O glue between the request handlers (server/kafka_apis.py), the replication core
(partition.Partition, the DelayedProduce purgatory) and the I/O edges (the controller link, the
replica fetchers, timers). Every time is a `now_ms` from `self.clock` (required: production
passes `BrokerClock.monotonic_ms`, the simulator its virtual clock); nothing here awaits.
Logs come from the LogStore it is given (storage.replica_log): LogManager on the machine's
disk in production, on a simulated one (storage/fs.py) in the simulator and unit tests.

- `apply_local_changes(changes, image)` (every broker is a KRaft cluster member; a lone one
  runs its own controller, server/combined.py) turns the controller's committed metadata into
  `Partition.make_leader` / `make_follower`; listeners registered with `on_follower_change` start
  or stop replica fetchers.
- `append_records(acks, entries, timeout_ms, callback)`: acks 0/1 answer now; acks=all parks a
  DelayedProduce in `produce_purgatory`, completed when the HW covers the batch (check_and_complete
  on every HW move) or expired by `tick(now_ms)` with REQUEST_TIMED_OUT. NOT_ENOUGH_REPLICAS and
  NOT_ENOUGH_REPLICAS_AFTER_APPEND are the core's decisions.
- `fetch_messages(..., replica_id)`: consumers read up to the HW (or the LEO under the legacy
  consumer_visibility switch); replicas (replica_id >= 0) go through
  `Partition.fetch_records_for_follower`, which may advance the HW and propose an ISR change.
- ISR changes go to `alter_partition_manager` (retries with backoff until answered or
  superseded); the controller link polls it, sends, and reports `on_alter_partition_response`
  or `on_alter_partition_failure`; `alter_partition_sink(request)` tells it a new one waits.
  `tick(now_ms)` runs the ISR shrink check and expiry.
- `park_fetch(...)`: a Fetch short of min_bytes waits in `fetch_purgatory` (the only fetch
  parking), re-checked on every append and HW/leadership change of its partitions.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from broker_app.metadata.image import MetadataDelta
from broker_app.protocol.error_codes import Errors
from broker_app.reject_log import RejectLog
from broker_app.replication.alter_partition_manager import AlterPartitionManager
from broker_app.replication.behaviour import ReplicationBehaviour
from broker_app.replication.delayed_fetch import DelayedFetch, FetchPartitionStatus
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
from broker_app.replication.replica_selector import ReplicaView, candidates, select_read_replica
from broker_app.storage.errors import StorageError
from broker_app.storage.replica_log import LogStore
from broker_app.storage.retention import retention_start_offset

log = logging.getLogger(__name__)
# A flood of bad produce requests costs a few lines a second, not one line each (issue 15).
_REJECTS = RejectLog(log)
log_retention = logging.getLogger(__name__ + ".retention")
DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000  # log.retention.hours=168, Kafka's default

TopicPartition = tuple[str, int]

ACKS_NONE, ACKS_LEADER, ACKS_ALL = 0, 1, -1


def cleanup_policies(configs: Mapping[str, str]) -> set[str]:
    """A topic's cleanup.policy as a set ("delete", "compact"); Kafka's default is delete."""
    return {v.strip() for v in configs.get("cleanup.policy", "delete").lower().split(",")}


@dataclass
class PartitionAppendResult:
    error_code: int = Errors.NONE
    base_offset: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    # (batch index, message) of each record refused (Produce v8+ RecordErrors, KIP-467)
    record_errors: list[tuple[int, str]] = field(default_factory=list)


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
    preferred_read_replica: int = -1  # KIP-392: read from this broker instead (no records)


class ReplicaManager:
    def __init__(
        self,
        node_id: int,
        log_manager: LogStore,
        behaviour: ReplicationBehaviour | None = None,
        replica_lag_time_max_ms: int = 30_000,
        *,
        clock: Callable[[], int],
        alter_partition_backoff_ms: tuple[int, int] = (100, 2_000),
        retention_check_interval_ms: int = 300_000,
    ) -> None:
        """`log_manager` is the log factory (LogManager, on any FileSystem);
        `clock()` is milliseconds on a monotonic clock (wall or simulated);
        `alter_partition_backoff_ms` = (first retry backoff, cap) for lost ISR proposals;
        `retention_check_interval_ms` = log.retention.check.interval.ms (retention.ms/bytes)."""
        self.node_id = node_id
        self.log_manager = log_manager
        self.behaviour = behaviour or ReplicationBehaviour()
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.clock = clock
        self.partitions: dict[TopicPartition, Partition] = {}
        self.topic_ids: dict[str, Any] = {}
        # This broker's registered epoch (Kafka's brokerEpochSupplier), sent in its replica
        # fetches (KIP-903); the controller link points it at the broker lifecycle.
        self.broker_epoch: Callable[[], int] = lambda: -1
        self.produce_purgatory: Purgatory[DelayedProduce] = Purgatory("Produce")
        # The one place a Fetch waits (consumers and replicas alike), keyed by partition.
        self.fetch_purgatory: Purgatory[DelayedFetch] = Purgatory("Fetch")
        # ISR proposals to the controller, retried with backoff until answered or superseded.
        self.alter_partition_manager = AlterPartitionManager(
            self._is_pending_proposal, *alter_partition_backoff_ms
        )
        # Told about every new proposal, so the I/O edge can poll the manager at once.
        self.alter_partition_sink: Callable[[AlterPartitionRequest], None] | None = None
        self._follower_listeners: list[Callable[[Partition, bool], None]] = []
        # Which brokers may join an ISR (KIP-841), from the latest metadata image; every
        # replica until metadata arrives.
        self._isr_eligible: Callable[[int], bool] = lambda _broker_id: True
        self._broker_epoch: Callable[[int], int] = lambda _broker_id: -1  # KIP-903
        # Per-topic configs from the metadata image: what the logs
        # honour besides min.insync.replicas (segment.bytes, max.message.bytes, retention.*).
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.retention_check_interval_ms = retention_check_interval_ms
        self._next_retention_ms: int | None = None
        # KIP-392: replica.selector.class (replica_selector.SELECTORS) and each broker's
        # broker.rack, from the latest metadata image (this broker's own until it arrives).
        self.replica_selector = "leader"
        self.local_rack: str | None = None
        self._rack_of: Callable[[int], str | None] = (
            lambda b: self.local_rack if b == self.node_id else None)
        #: consumer Fetch answers with records this broker served as a follower (KIP-392)
        self.follower_reads: Counter[TopicPartition] = Counter()

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
            p.is_replica_isr_eligible = lambda replica_id: self._isr_eligible(replica_id)
            p.replica_broker_epoch = lambda replica_id: self._broker_epoch(replica_id)
            self.partitions[tp] = p
        p.min_insync_replicas = max(min_isr, 1)
        self._apply_log_configs(p)
        return p

    def set_topic_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        """The topic's configs (from the metadata image) for its logs."""
        self.topic_configs[topic] = dict(configs)
        for (name, _), part in self.partitions.items():
            if name == topic:
                self._apply_log_configs(part)

    def unclean_leader_election_enabled(self, topic: str) -> bool:
        """unclean.leader.election.enable for `topic`: its own config, else the cluster
        default (the behaviour's switch). Dynamic broker configs are not consulted."""
        value = self.topic_configs.get(topic, {}).get("unclean.leader.election.enable")
        if value is None:
            return self.behaviour.unclean_leader_election
        return value.strip().lower() == "true"

    def _apply_log_configs(self, p: Partition) -> None:
        """The topic's settings of its logs (segment.bytes, max.message.bytes, cleanup.policy,
        message.timestamp.before/after.max.ms), else the broker's (LogConfig)."""
        configs = self.topic_configs.get(p.topic, {})
        base = self.log_manager.config
        wanted = {
            "segment_bytes": int(configs.get("segment.bytes", base.segment_bytes)),
            "max_batch_bytes": int(configs.get("max.message.bytes", base.max_batch_bytes)),
            "compacted": "compact" in cleanup_policies(configs),
            "timestamp_before_max_ms": int(configs.get("message.timestamp.before.max.ms",
                                                       base.timestamp_before_max_ms)),
            "timestamp_after_max_ms": int(configs.get("message.timestamp.after.max.ms",
                                                      base.timestamp_after_max_ms)),
        }  # fmt: skip
        cfg = p.log.config
        if any(getattr(cfg, k) != v for k, v in wanted.items()):
            # replace, never mutate: the LogStore's LogConfig is shared by every log
            p.log.config = replace(cfg, **wanted)

    def cleanup_logs(self) -> int:
        """Time and size retention on every hosted log (Kafka's LogManager.cleanupLogs, on
        leaders and followers alike, never past the HW); returns how many logs moved. A topic
        whose cleanup.policy lacks "delete" (compact only, e.g. __consumer_offsets) is never
        trimmed by time or size, as in Kafka."""
        moved = 0
        for (topic, _), p in list(self.partitions.items()):
            configs = self.topic_configs.get(topic, {})
            if "delete" not in cleanup_policies(configs):
                continue
            retention_ms = int(configs.get("retention.ms", DEFAULT_RETENTION_MS))
            retention_bytes = int(configs.get("retention.bytes", -1))
            log = p.log
            try:
                start = retention_start_offset(log.retention_units(), log.size, retention_ms,
                                               retention_bytes, log.wall_clock_ms())  # fmt: skip
                if start is not None and log.maybe_increment_log_start_offset(start):
                    moved += 1
                    log_retention.info("%s: retention moved the log start to %d", p.name,
                                       log.log_start_offset)  # fmt: skip
            except StorageError as e:
                log_retention.warning("%s: retention failed: %s", p.name, e)
        return moved

    def host_single_node(self, topic: str, partition: int, min_insync_replicas: int) -> Partition:
        """Lead `topic-partition` alone at epoch 0 (creating its log) without metadata:
        for tests of the replication core; brokers host partitions from the metadata image
        (apply_metadata_delta). Idempotent."""
        p = self._get_or_create(topic, partition, min_insync_replicas)
        if not p.is_leader:
            p.make_leader(0, [self.node_id], [self.node_id], 0, self.clock())
        return p

    def get_partition(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def on_follower_change(self, listener: Callable[[Partition, bool], None]) -> None:
        """listener(partition, fetch) — fetch=True: (re)start its fetcher; False: stop it."""
        self._follower_listeners.append(listener)

    def _hw_moved(self, tp: TopicPartition) -> None:
        """HW, leadership or ISR of `tp` changed: parked produces and fetches re-check."""
        self.produce_purgatory.check_and_complete(tp)
        self.fetch_purgatory.check_and_complete(tp)

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

    def apply_metadata_delta(self, delta: MetadataDelta, default_min_isr: int) -> None:
        """Apply the controller's committed metadata (one fetched batch of records): become
        leader or follower of every changed partition listing this broker, stop deleted ones.
        Shared by the controller link and the simulator, so both apply metadata the same way."""
        changes = delta.local_changes(self.node_id)
        image = delta.new
        static_min_isr = default_min_isr
        # KIP-226: a dynamic min.insync.replicas (this broker's, else the cluster default)
        # replaces the static default of topics that do not set their own.
        default_min_isr = self._dynamic_min_isr(image, static_min_isr)
        default_changed = default_min_isr != self._dynamic_min_isr(delta.old, static_min_isr)
        fenced_ok = not self.behaviour.isr_eligibility  # before KIP-841 (Kafka 3.3)
        self._isr_eligible = lambda b: image.may_join_isr(b, fenced_ok=fenced_ok)
        brokers = image.brokers
        self._broker_epoch = lambda b: brokers[b].epoch if b in brokers else -1
        self._rack_of = lambda b: brokers[b].rack if b in brokers else None
        for (topic, p), reg in list(changes.leaders.items()) + list(changes.followers.items()):
            t = image.topics[topic]
            self.topic_ids[topic] = t.topic_id
            self.topic_configs[topic] = dict(t.configs)
            min_isr = int(t.configs.get("min.insync.replicas", default_min_isr))
            self.apply_partition(
                topic, p, reg.leader, reg.leader_epoch, tuple(reg.isr), tuple(reg.replicas),
                reg.partition_epoch, min_isr,
            )  # fmt: skip
        for topic, p in changes.deletes:
            self.stop_replica(topic, p, delete=True)
            if topic not in image.topics:
                self.topic_ids.pop(topic, None)
                self.topic_configs.pop(topic, None)
        # A ConfigRecord changes no registration: re-read min.insync.replicas of what we host,
        # so an AlterConfigs takes effect on the next acks=all produce (Kafka's
        # DynamicConfigPublisher -> LogManager.updateTopicConfig).
        changed = set(delta.changed_topic_configs())
        if default_changed:
            changed |= {t for t, _ in self.partitions if t in image.topics}
        for topic in sorted(changed):
            configs = image.topics[topic].configs
            self.set_topic_configs(topic, configs)
            min_isr = max(int(configs.get("min.insync.replicas", default_min_isr)), 1)
            for (name, _), part in self.partitions.items():
                if name == topic and part.min_insync_replicas != min_isr:
                    part.min_insync_replicas = min_isr
                    self._hw_moved((name, part.partition))

    def _dynamic_min_isr(self, image: Any, static: int) -> int:
        value = image.broker_config(self.node_id, "min.insync.replicas")
        return int(value) if value is not None else static

    def stop_replica(self, topic: str, partition: int, *, delete: bool = False) -> None:
        """Stop replicating `topic-partition`; with `delete` its log goes too (the topic was
        deleted or the replica reassigned away, Kafka's StopReplica deletePartition=true)."""
        p = self.partitions.pop((topic, partition), None)
        if p is not None:
            was_follower = p.role == "follower"
            p.make_offline()
            if was_follower:
                self._tell_followers(p, False)
            self._hw_moved((topic, partition))
        if delete:
            self.log_manager.delete_log((topic, partition))

    def _tell_followers(self, p: Partition, fetch: bool) -> None:
        for listener in self._follower_listeners:
            listener(p, fetch)

    def _is_pending_proposal(self, request: AlterPartitionRequest) -> bool:
        p = self.partitions.get((request.topic, request.partition))
        return p is not None and p.is_leader and p.pending_alter_partition == request

    def on_alter_partition_response(
        self,
        request: AlterPartitionRequest,
        response: AlterPartitionResponse,
        top_level_error: Errors = Errors.NONE,
    ) -> None:
        """The controller answered `request` (a retriable top-level error: retried later)."""
        now = self.clock()
        answer = self.alter_partition_manager.on_response(request, top_level_error, response, now)
        if answer is None:
            log.info("%s-%d: AlterPartition answered %s; retrying", request.topic,
                     request.partition, top_level_error.name)  # fmt: skip
            return
        p = self.partitions.get((request.topic, request.partition))
        if p is None:
            return
        p.on_alter_partition_response(request, answer, now)
        self._hw_moved((request.topic, request.partition))

    def on_alter_partition_failure(self, request: AlterPartitionRequest, reason: str) -> None:
        """No answer to `request` (lost, cut, timed out): the manager retries after backoff."""
        log.warning("%s-%d: AlterPartition got no answer (%s); retrying after backoff",
                    request.topic, request.partition, reason)  # fmt: skip
        self.alter_partition_manager.on_failure(request, self.clock())

    def _send_alter_partition(self, request: AlterPartitionRequest | None) -> None:
        if request is None:
            return
        log.info("%s-%d: proposing ISR %s (partition epoch %d)", request.topic,
                 request.partition, list(request.new_isr), request.partition_epoch)  # fmt: skip
        self.alter_partition_manager.submit(request, self.clock())
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
        self.fetch_purgatory.expire_due(now)
        if self._next_retention_ms is None:
            self._next_retention_ms = now + self.retention_check_interval_ms
        elif now >= self._next_retention_ms:
            self._next_retention_ms = now + self.retention_check_interval_ms
            self.cleanup_logs()

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
        for tp in ends:  # new data: replica fetches (and log-end consumers) may now complete
            self.fetch_purgatory.check_and_complete(tp)
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
                    pr.error, pr.base_offset, prev.log_start_offset, msg,
                    prev.record_errors if pr.error == prev.error_code else [],
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
                _REJECTS.warning("append to %s-%d rejected: %s", tp[0], tp[1], e)
            return PartitionAppendResult(
                code, log_start_offset=lg.log_start_offset, error_message=str(e),
                record_errors=getattr(e, "record_errors", []),
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
        client_rack: str | None = None,
        replica_epoch: int = -1,
    ) -> dict[TopicPartition, FetchPartitionResult]:
        """Kafka's `readFromLog` (KIP-74): each partition reads at most the smaller of its
        own limit and what is left of the response's `max_bytes`; only the first partition with
        data may exceed that, by its first whole batch, so a consumer always makes progress and a
        response is never much larger than `max_bytes`.

        `client_rack` is a consumer's Fetch v11+ rack_id (None before v11): with it a follower
        serves the consumer (up to its own high watermark, KIP-392), and a leader whose
        replica selector prefers another replica answers with `preferred_read_replica` and no
        records. Without it (old consumers, replicas) only the leader serves. `replica_epoch` is
        a replica's broker epoch from Fetch v15 (KIP-903; -1 before)."""
        results: dict[TopicPartition, FetchPartitionResult] = {}
        budget = max_bytes
        first_with_data = True
        now = self.clock()
        for tp, req in requests.items():
            p = self.partitions.get(tp)
            if p is None:
                results[tp] = FetchPartitionResult(Errors.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            limit = max(0, min(req.max_bytes, budget))
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
                            min_one_batch=first_with_data,
                            replica_epoch=replica_epoch,
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
                        fetch_only_from_leader=client_rack is None,
                        min_one_batch=first_with_data,
                    )
                    preferred = self._preferred_read_replica(p, req.fetch_offset, client_rack,
                                                             now)
                    if core.records and not p.is_leader:
                        self.follower_reads[tp] += 1
                    if core.error == Errors.NONE and preferred is not None:
                        # KIP-392: skip the read, send the consumer to the preferred replica.
                        results[tp] = FetchPartitionResult(
                            high_watermark=core.high_watermark,
                            last_stable_offset=core.high_watermark,
                            log_start_offset=core.log_start_offset,
                            leader_id=p.leader_id, leader_epoch=p.leader_epoch,
                            preferred_read_replica=preferred)
                        continue
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

    def _preferred_read_replica(self, p: Partition, fetch_offset: int, client_rack: str | None,
                                now_ms: int) -> int | None:
        """The replica a consumer should read `p` from instead of this leader (KIP-392), or
        None to read here; see replication/replica_selector.py."""
        if client_rack is None or self.replica_selector == "leader" or not p.is_leader:
            return None
        leader = ReplicaView(self.node_id, self._rack_of(self.node_id), p.log.log_end_offset, 0)
        followers = [
            ReplicaView(rid, self._rack_of(rid), st.log_end_offset,
                        now_ms - st.last_caught_up_time_ms
                        if st.last_caught_up_time_ms is not None else 2**62)
            for rid, st in p.remote_replicas.items()]
        starts = {rid: st.log_start_offset for rid, st in p.remote_replicas.items()}
        chosen = select_read_replica(self.replica_selector, client_rack, leader,
                                     candidates(followers, fetch_offset, starts, p.isr))
        return None if chosen == self.node_id else chosen

    def park_fetch(
        self,
        requests: dict[TopicPartition, FetchRequestPartition],
        replica_id: int,
        min_bytes: int,
        max_wait_ms: int,
        on_ready: Callable[[], None],
        client_rack: str | None = None,
    ) -> DelayedFetch:
        """Park a Fetch that found fewer than `min_bytes`: `on_ready()` is called once, when
        enough is readable, when a partition can no longer be served as asked (error,
        leadership moved, diverging epoch), or at `tick` past the deadline. The I/O edge may
        also give up itself (its own timer) with `op.force_complete()`. The caller then reads
        again to build the response, as Kafka does. `client_rack` as in fetch_messages. A
        follower serving a consumer is not woken when its high watermark moves: the fetch
        answers at its deadline (the consumer's fetch.max.wait.ms) or on new data."""
        isolation = FetchIsolation.LOG_END if replica_id >= 0 else FetchIsolation.HIGH_WATERMARK
        statuses = {
            tp: FetchPartitionStatus(
                r.fetch_offset, isolation, r.current_leader_epoch, r.last_fetched_epoch,
                fetch_only_from_leader=client_rack is None,
            )
            for tp, r in requests.items()
        }
        op = DelayedFetch(
            self.clock() + max_wait_ms,
            min_bytes,
            statuses,
            lambda key: self.partitions.get(key),  # type: ignore[arg-type]
            on_ready,
        )
        self.fetch_purgatory.try_complete_else_watch(op, list(statuses))
        return op

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
