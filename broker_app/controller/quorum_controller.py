"""QuorumController: the control plane's state machine, sans-I/O.

Contract:
- State is the metadata log. On construction the controller replays the whole log into its
  MetadataImage, so a restart recovers exactly the state it had (heartbeat times excepted:
  they are in memory, as in Kafka, and every unfenced broker gets a fresh session after a
  restart).
- Every operation is `op(request, now_ms) -> (response, records)`: it computes the records,
  appends them to the metadata log as one batch (durable before the response exists), replays
  them into the image, and returns the response plus the records it wrote.
- Broker lifecycle (KIP-631): a registration appends RegisterBroker (fenced) and the broker
  epoch is that record's offset, so every registration, including a restart's, gets a new,
  larger epoch. A retry with the same incarnation id gets the same epoch and writes nothing.
  A heartbeat from a fenced broker whose metadata offset has reached its registration record
  unfences it (UnfenceBroker) and leaderless partitions it replicates get a leader.
  `tick(now_ms)` fences brokers whose last heartbeat is older than session_timeout_ms.
- Fencing (session expiry, want_fence, controlled shutdown, re-registration of a new
  incarnation while the old one is live) removes the broker from every ISR unless it is the
  last member (KIP-841) and
  moves its leaderships by the election rule in election.py. With eligible leader replicas
  (KIP-966) the last member is removed too (the ISR may be empty) and joins the ELR.
- Unclean-shutdown recovery (KIP-966, KAFKA-15582/15586): a new incarnation registers with
  the broker epoch its predecessor wrote in the clean-shutdown marker; when that is not the
  registered epoch (-1: the marker was missing) the shutdown was unclean, and with ELR
  enabled the broker is removed from every ISR and ELR in the registration's own batch, so
  it cannot lead before it has caught up again. That is Kafka 4.1's rule: between
  KAFKA-16952 (every new incarnation counted as unclean, Kafka 3.9 development) and
  KAFKA-18635 (the epoch comparison re-enabled, merged 2025-02 for 4.0) Kafka briefly did
  otherwise; 4.1 compares the epoch, so a cleanly restarted ELR member stays eligible.
  Without ELR nothing is removed at registration (Kafka's handleBrokerUncleanShutdown
  returns at once unless the metadata version supports ELR).
- Deviation from Kafka: a new incarnation may register while the old one's session is still
  live (Kafka answers DUPLICATE_BROKER_REGISTRATION until the session expires); here the new
  registration supersedes the old one at once and the old incarnation is treated as fenced, so
  a restart does not have to sit out the session timeout. The data-plane effect is the same.
- AlterPartition validation order (Kafka's): broker epoch (STALE_BROKER_EPOCH), topic and
  partition, leader epoch (FENCED_LEADER_EPOCH), sender is leader (INVALID_REQUEST), partition
  epoch (INVALID_UPDATE_VERSION), ISR shape (INVALID_REQUEST), ISR members registered, unfenced
  and not shutting down (KIP-841; fenced allowed with config.isr_eligibility off, the
  `isr-eligibility` switch, before 3.3) and with current broker epochs (INELIGIBLE_REPLICA;
  the epochs of AlterPartition v3, KIP-903, compared only with config.isr_broker_epochs, the
  `isr-broker-epochs` switch).
- Reassignment (KIP-455, simplified): replicas become target + removing, adding/removing are
  recorded; when the leader's AlterPartition puts every target replica in the ISR the
  reassignment completes (replicas = target, ISR restricted to it, leader re-elected if it was
  removed). A target already fully in the ISR completes at once. None cancels.
- Topic admin: DeleteTopics writes RemoveTopic (brokers then delete the replicas' logs);
  CreatePartitions writes PartitionRecords for the new partitions (placed like CreateTopics, or
  as assigned); AlterConfigs writes one TopicConfig (ConfigRecord) per changed name. Each is
  validated against the image first and answers Kafka's error codes per topic. Deviation:
  deleting an internal topic (__consumer_offsets) answers INVALID_REQUEST.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Protocol

from broker_app.controller.topic_rules import TopicError, validate_configs, validate_topic_name
from broker_app.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from broker_app.metadata.records import (
    BrokerConfig,
    FenceBroker,
    GroupConfig,
    MetadataRecord,
    PartitionRecord,
    RegisterBroker,
    RemoveTopic,
    TopicConfig,
    TopicRecord,
    UnfenceBroker,
)

from .config import ControllerConfig
from .election import ElectionType, PartitionChangeBuilder
from .errors import ControllerError, Errors
from .messages import (
    AlterPartitionItem,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResult,
    CreateTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    NewPartitions,
    NewTopic,
    PartitionResult,
    ReassignPartitionsRequest,
    ReassignPartitionsResponse,
    RegisterBrokerRequest,
    RegisterBrokerResponse,
    TopicResult,
)
from .placement import place_replicas

log = logging.getLogger(__name__)

UNCLEAN_CONFIG = "unclean.leader.election.enable"
MIN_ISR_CONFIG = "min.insync.replicas"
# One CreateTopics must not freeze the controller or outgrow one metadata batch (~160 bytes of
# JSON per partition): a topic gets at most this many partitions per request.
MAX_PARTITIONS_PER_TOPIC = 10_000
# Partitions one CreateTopics request may create in total (issue 15; Kafka throttles with
# controller mutation quotas instead, KIP-599).


class _Pending:
    """Records of one operation, applied to a scratch image as they are added."""

    def __init__(self, image: MetadataImage, base_offset: int) -> None:
        self.image = image
        self.base_offset = base_offset
        self.records: list[MetadataRecord] = []

    @property
    def next_offset(self) -> int:
        return self.base_offset + len(self.records)

    def add(self, record: MetadataRecord) -> None:
        self.image = self.image.apply(record, self.next_offset)
        self.records.append(record)


class MetadataLog(Protocol):
    """What QuorumController needs of its log: RaftMetadataLog in every process (a lone
    controller is a one-voter quorum); an in-memory one in the state machine's unit tests."""

    @property
    def end_offset(self) -> int: ...

    def append(self, records: Sequence[MetadataRecord]) -> int: ...

    def snapshot_image(self) -> MetadataImage: ...

    def replay(self) -> Iterator[tuple[int, MetadataRecord]]: ...


class QuorumController:
    def __init__(
        self,
        config: ControllerConfig,
        metadata_log: MetadataLog,
        new_topic_id: Callable[[], uuid.UUID] = uuid.uuid4,
        image: MetadataImage | None = None,
    ) -> None:
        """`image`: the state the caller already replayed (a Raft leader, whose log also
        holds control records, so its end offset is not the last metadata record's + 1)."""
        self.config = config
        self.log = metadata_log
        self.new_topic_id = new_topic_id
        if image is not None:
            self.image = image
        else:
            # The log may start after a snapshot (KIP-630): its image, then the records.
            self.image = metadata_log.snapshot_image().apply_all(metadata_log.replay())
        if image is None and self.image.offset + 1 != metadata_log.end_offset:
            raise ControllerError(
                Errors.UNKNOWN_SERVER_ERROR,
                f"metadata log replay ended at offset {self.image.offset}, "
                f"log end offset is {metadata_log.end_offset}",
            )
        self._last_contact_ms: dict[int, int] = {}
        # From heartbeats, in memory as in Kafka: each broker's metadata offset, and the
        # offset a broker in controlled shutdown waits for the others to reach.
        self._metadata_offsets: dict[int, int] = {}
        self._shutdown_offsets: dict[int, int] = {}
        self._next_rebalance_ms: int | None = None

    # --- plumbing ----------------------------------------------------------------------

    def _begin(self) -> _Pending:
        return _Pending(self.image, self.log.end_offset)

    def _commit(self, p: _Pending) -> list[MetadataRecord]:
        if p.records:
            base = self.log.append(p.records)
            if base != p.base_offset:  # someone else wrote the log: a bug, never ignore it
                raise RuntimeError(f"metadata log appended at {base}, expected {p.base_offset}")
            self.image = p.image
            for r in p.records:
                log.info("metadata: %s", r)
        return p.records

    def _unclean(self, topic: TopicImage) -> bool:
        """The topic's unclean.leader.election.enable, else the dynamic cluster default
        (KIP-226, BrokerConfig ""), else the controller's static default."""
        value = topic.configs.get(UNCLEAN_CONFIG)
        if value is None:
            value = self.image.broker_configs.get("", {}).get(UNCLEAN_CONFIG)
        if value is None:
            return self.config.unclean_leader_election
        return value.lower() == "true"

    def _builder(
        self, p: _Pending, topic: TopicImage, partition: int, reg: PartitionRegistration,
        *, unclean: bool | None = None,
    ) -> PartitionChangeBuilder:  # fmt: skip
        return PartitionChangeBuilder(
            str(topic.topic_id), partition, reg, p.image.is_live,
            unclean=self._unclean(topic) if unclean is None else unclean,
            elr_enabled=self.config.eligible_leader_replicas,
            min_isr=self._min_isr(topic),
        )  # fmt: skip

    def _min_isr(self, topic: TopicImage) -> int:
        """Kafka's getTopicEffectiveMinIsr: the topic's min.insync.replicas, else the cluster's
        dynamic default, else the static one, capped at the topic's replication factor (the
        ELR rules compare the ISR with it: an ISR as large as the replica set is never below
        min ISR)."""
        value = topic.configs.get(MIN_ISR_CONFIG)
        if value is None:
            value = self.image.broker_configs.get("", {}).get(MIN_ISR_CONFIG)
        wanted = self.config.min_insync_replicas if value is None else int(value)
        first = topic.partitions.get(0) or next(iter(topic.partitions.values()), None)
        rf = len(first.replicas) if first is not None else 0
        return min(wanted, rf) if rf > 0 else wanted

    def _fence(self, p: _Pending, broker_id: int, controlled: bool, why: str) -> None:
        b = p.image.brokers[broker_id]
        log.info("fencing broker %d (epoch %d): %s", broker_id, b.epoch, why)
        p.add(FenceBroker(broker_id, b.epoch, controlled))
        self._move_away(p, broker_id)

    def _move_away(self, p: _Pending, broker_id: int, *, unclean_shutdown: bool = False) -> None:
        """Leaderships, ISR and ELR membership of a broker that is no longer live.

        Without ELR the last ISR member stays (KIP-841); with ELR it leaves the ISR and joins
        the ELR, unless its shutdown was unclean: then it leaves the ISR and ELR (KIP-966)."""
        elr = self.config.eligible_leader_replicas
        for topic, idx, reg in list(p.image.all_partitions()):
            if reg.leader != broker_id and broker_id not in reg.isr and broker_id not in reg.elr:
                continue
            builder = self._builder(p, topic, idx, reg)
            if unclean_shutdown:
                builder.set_unclean_shutdown_replicas([broker_id])
            if broker_id in reg.isr and (len(reg.isr) > 1 or elr):
                builder.set_target_isr([r for r in reg.isr if r != broker_id])
            change = builder.build()
            if change is not None:
                p.add(change)

    def _elect_leaderless(self, p: _Pending, replica: int | None = None) -> None:
        for topic, idx, reg in list(p.image.all_partitions()):
            if reg.has_leader or (replica is not None and replica not in reg.replicas):
                continue
            change = self._builder(p, topic, idx, reg).build()
            if change is not None:
                p.add(change)

    def session_ages_ms(self, now_ms: int) -> dict[int, int]:
        """Milliseconds since each broker's last registration or heartbeat (in memory only)."""
        return {b: now_ms - t for b, t in sorted(self._last_contact_ms.items())}

    # --- brokers -----------------------------------------------------------------------

    def register_broker(
        self, req: RegisterBrokerRequest, now_ms: int
    ) -> tuple[RegisterBrokerResponse, list[MetadataRecord]]:
        bad = self._check_registration(req)
        if bad is not None:
            return bad, []
        existing = self.image.brokers.get(req.broker_id)
        if existing is not None and existing.incarnation_id == req.incarnation_id:
            self._last_contact_ms[req.broker_id] = now_ms
            return RegisterBrokerResponse(Errors.NONE, existing.epoch), []
        p = self._begin()
        epoch = p.next_offset
        p.add(RegisterBroker(req.broker_id, epoch, req.incarnation_id, req.host, req.port,
                             req.rack, fenced=True))  # fmt: skip
        if existing is not None:
            # The old incarnation is gone; it shut down cleanly only if it wrote the epoch it
            # had into the clean-shutdown marker and the new process read it back (KIP-966).
            unclean = (self.config.eligible_leader_replicas
                       and req.previous_broker_epoch != existing.epoch)  # fmt: skip
            if unclean:
                log.info("broker %d: unclean shutdown (previous epoch %d, registered %d): "
                         "removed from every ISR and ELR", req.broker_id,
                         req.previous_broker_epoch, existing.epoch)  # fmt: skip
            if unclean or not existing.fenced:
                # A live old incarnation is fenced now (our deviation from
                # DUPLICATE_BROKER_REGISTRATION); a fenced one was moved away when it was
                # fenced, and Kafka's registration changes no ISR without ELR: a fenced
                # broker an ISR still names (its last member, or before KIP-841 one the
                # leader re-added, L20) stays there.
                self._move_away(p, req.broker_id, unclean_shutdown=unclean)
        records = self._commit(p)
        self._last_contact_ms[req.broker_id] = now_ms
        return RegisterBrokerResponse(Errors.NONE, epoch), records

    def _check_registration(self, req: RegisterBrokerRequest) -> RegisterBrokerResponse | None:
        def err(code: Errors, msg: str) -> RegisterBrokerResponse:
            return RegisterBrokerResponse(code, -1, f"broker {req.broker_id}: {msg}")

        if req.cluster_id is not None and req.cluster_id != self.config.cluster_id:
            return err(
                Errors.INCONSISTENT_CLUSTER_ID,
                f"cluster id {req.cluster_id!r} is not this cluster's {self.config.cluster_id!r}",
            )
        if req.broker_id < 0:
            return err(Errors.INVALID_REQUEST, "broker id must be >= 0")
        if not req.host or not 0 < req.port < 65536:
            return err(Errors.INVALID_REQUEST, f"bad listener {req.host!r}:{req.port}")
        if not req.incarnation_id:
            return err(Errors.INVALID_REQUEST, "empty incarnation id")
        return None

    def heartbeat(
        self, req: HeartbeatRequest, now_ms: int
    ) -> tuple[HeartbeatResponse, list[MetadataRecord]]:
        b = self.image.brokers.get(req.broker_id)
        if b is None:
            return HeartbeatResponse(
                Errors.BROKER_ID_NOT_REGISTERED, message=f"broker {req.broker_id} not registered"
            ), []
        if b.epoch != req.broker_epoch:
            return HeartbeatResponse(
                Errors.STALE_BROKER_EPOCH,
                message=f"broker {req.broker_id}: epoch {req.broker_epoch}, "
                f"registered epoch is {b.epoch}",
            ), []
        self._last_contact_ms[req.broker_id] = now_ms
        self._metadata_offsets[req.broker_id] = req.current_metadata_offset
        caught_up = req.current_metadata_offset >= b.epoch
        p = self._begin()
        if req.want_shutdown:
            if not b.in_controlled_shutdown:
                led = any(reg.leader == b.id for _, _, reg in p.image.all_partitions())
                self._fence(p, b.id, True, "controlled shutdown requested")
                # Kafka's controlledShutdownOffset: the last record of this batch; a broker
                # that led nothing may go at once (BrokerHeartbeatManager: SHUTDOWN_NOW).
                self._shutdown_offsets[b.id] = p.next_offset - 1 if led else -1
        elif req.want_fence:
            if not b.fenced:
                self._fence(p, b.id, False, "the broker asked to be fenced")
        elif b.fenced and caught_up:
            log.info("unfencing broker %d (epoch %d)", b.id, b.epoch)
            p.add(UnfenceBroker(b.id, b.epoch))
            self._elect_leaderless(p, b.id)
        records = self._commit(p)
        now = self.image.brokers[b.id]
        return HeartbeatResponse(
            Errors.NONE,
            is_caught_up=caught_up,
            is_fenced=now.fenced,
            should_shutdown=req.want_shutdown and self._may_shut_down(b.id),
        ), records

    def _may_shut_down(self, broker_id: int) -> bool:
        """Kafka's BrokerHeartbeatManager (CONTROLLED_SHUTDOWN -> SHUTDOWN_NOW): the broker
        asking to shut down may go once every active broker (unfenced, not shutting down) has
        reported a metadata offset at or past the batch that moved its leaderships, so the new
        leaders know they lead before the old one disappears. A broker that has not
        heartbeated to this controller yet counts as offset -1 (it holds the grant back until
        it heartbeats or its session expires)."""
        offset = self._shutdown_offsets.get(broker_id, -1)
        active = [self._metadata_offsets.get(i, -1) for i in self.image.brokers
                  if self.image.is_live(i)]  # fmt: skip
        return offset <= min(active, default=offset)

    def tick(self, now_ms: int) -> tuple[None, list[MetadataRecord]]:
        """Timers: session expiry, leaderless partitions, automatic leader rebalance."""
        p = self._begin()
        timeout = self.config.session_timeout_ms
        for b in list(p.image.brokers.values()):
            if b.fenced:
                continue
            last = self._last_contact_ms.setdefault(b.id, now_ms)
            if now_ms - last > timeout:
                self._fence(p, b.id, False, f"no heartbeat for {now_ms - last} ms > {timeout} ms")
        self._elect_leaderless(p)
        if self.config.auto_leader_rebalance:
            if self._next_rebalance_ms is None:
                self._next_rebalance_ms = now_ms + self.config.leader_imbalance_check_interval_ms
            elif now_ms >= self._next_rebalance_ms:
                self._next_rebalance_ms = now_ms + self.config.leader_imbalance_check_interval_ms
                self._rebalance(p)
        return None, self._commit(p)

    def _rebalance(self, p: _Pending) -> None:
        """Preferred elections for brokers whose share of lost preferred leaderships is too big."""
        by_preferred: dict[int, list[tuple[TopicImage, int, PartitionRegistration]]]
        by_preferred = defaultdict(list)
        for topic, idx, reg in p.image.all_partitions():
            if reg.replicas:
                by_preferred[reg.preferred_leader].append((topic, idx, reg))
        for broker, parts in sorted(by_preferred.items()):
            if not p.image.is_live(broker):
                continue
            lost = [x for x in parts if x[2].leader != broker]
            limit = self.config.leader_imbalance_per_broker_percentage * len(parts)
            if not lost or len(lost) * 100 <= limit:
                continue
            for topic, idx, _ in lost:
                reg = p.image.topics[topic.name].partitions[idx]
                change = self._builder(p, topic, idx, reg).set_preferred_election().build()
                if change is not None and change.leader == broker:
                    p.add(change)

    # --- topics ------------------------------------------------------------------------

    def create_topics(
        self, req: CreateTopicsRequest, now_ms: int
    ) -> tuple[CreateTopicsResponse, list[MetadataRecord]]:
        p = self._begin()
        counts: dict[str, int] = defaultdict(int)
        for t in req.topics:
            counts[t.name] += 1
        results = []
        budget = cap = self.config.max_partitions_per_create_request
        for t in req.topics:
            try:
                if counts[t.name] > 1:
                    raise ControllerError(
                        Errors.INVALID_REQUEST, f"topic {t.name!r} appears more than once"
                    )
                wanted = len(t.assignments) if t.assignments else (
                    self.config.num_partitions if t.num_partitions == -1 else t.num_partitions)
                if wanted > budget:
                    raise ControllerError(
                        Errors.INVALID_PARTITIONS,
                        f"{wanted} more partitions exceed this request's limit of "
                        f"{cap}",
                    )
                results.append(self._create_topic(p, t, req.validate_only))
                budget -= max(wanted, 0)
            except ControllerError as e:
                log.info("CreateTopics %r rejected: %s", t.name, e)
                results.append(CreateTopicResult(t.name, e.error, str(e)))
        return CreateTopicsResponse(results), self._commit(p)

    def _create_topic(self, p: _Pending, t: NewTopic, validate_only: bool) -> CreateTopicResult:
        try:
            validate_topic_name(t.name)
            configs = validate_configs(dict(t.configs))
        except TopicError as e:
            raise ControllerError(Errors(e.error_code), str(e)) from None
        if UNCLEAN_CONFIG in configs and configs[UNCLEAN_CONFIG].lower() not in ("true", "false"):
            raise ControllerError(
                Errors.INVALID_CONFIG,
                f"{UNCLEAN_CONFIG} must be true or false, got {configs[UNCLEAN_CONFIG]!r}",
            )
        if t.name in p.image.topics:
            raise ControllerError(Errors.TOPIC_ALREADY_EXISTS, f"topic {t.name!r} already exists")
        if t.assignments:
            assignment = self._manual_assignment(p.image, t)
        else:
            assignment = self._placement(p.image, t)
        topic_id = self.new_topic_id()
        if not validate_only:
            p.add(TopicRecord(t.name, str(topic_id), configs))
            for idx, replicas in enumerate(assignment):
                isr = tuple(r for r in replicas if p.image.is_live(r))
                p.add(PartitionRecord(str(topic_id), idx, replicas, isr, isr[0]))
        return CreateTopicResult(
            t.name, Errors.NONE, None, None if validate_only else topic_id,
            len(assignment), len(assignment[0]), configs,
        )  # fmt: skip

    def _placement(self, image: MetadataImage, t: NewTopic) -> list[tuple[int, ...]]:
        n = self.config.num_partitions if t.num_partitions == -1 else t.num_partitions
        rf = t.replication_factor
        if rf == -1:
            rf = self.config.default_replication_factor
        if not 1 <= n <= MAX_PARTITIONS_PER_TOPIC:
            raise ControllerError(
                Errors.INVALID_PARTITIONS,
                f"num_partitions must be 1..{MAX_PARTITIONS_PER_TOPIC}, got {n}",
            )
        if rf < 1:
            raise ControllerError(
                Errors.INVALID_REPLICATION_FACTOR, f"replication factor must be >= 1, got {rf}"
            )
        live = image.live_brokers()
        if rf > len(live):
            raise ControllerError(
                Errors.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {rf} time(s): the target replication factor "
                f"of {rf} cannot be reached because only {len(live)} broker(s) are unfenced "
                f"({live})",
            )
        existing = sum(len(x.partitions) for x in image.topics.values())
        return place_replicas(live, n, rf, start_index=existing)

    @staticmethod
    def _manual_assignment(image: MetadataImage, t: NewTopic) -> list[tuple[int, ...]]:
        assert t.assignments is not None
        if t.num_partitions != -1 or t.replication_factor != -1:
            raise ControllerError(
                Errors.INVALID_REQUEST,
                "both replica assignments and num_partitions/replication_factor were given",
            )
        if len(t.assignments) > MAX_PARTITIONS_PER_TOPIC:
            raise ControllerError(
                Errors.INVALID_PARTITIONS,
                f"{len(t.assignments)} partitions exceed {MAX_PARTITIONS_PER_TOPIC}",
            )
        indexes = sorted(t.assignments)
        if indexes != list(range(len(indexes))):
            raise ControllerError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"assignment partitions must be 0..{len(indexes) - 1}, got {indexes}",
            )
        out = []
        for idx in indexes:
            replicas = tuple(t.assignments[idx])
            _check_replica_list(image, replicas, f"partition {idx}")
            if len(replicas) != len(t.assignments[0]):
                raise ControllerError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"partition {idx} has {len(replicas)} replicas, partition 0 has "
                    f"{len(t.assignments[0])}",
                )
            if not any(image.is_live(r) for r in replicas):
                raise ControllerError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"all brokers of partition {idx} ({list(replicas)}) are fenced",
                )
            out.append(replicas)
        return out

    # --- AlterPartition ----------------------------------------------------------------

    def alter_partition(
        self, req: AlterPartitionRequest, now_ms: int
    ) -> tuple[AlterPartitionResponse, list[MetadataRecord]]:
        b = self.image.brokers.get(req.broker_id)
        if b is None or b.epoch != req.broker_epoch:
            registered = "not registered" if b is None else f"registered epoch {b.epoch}"
            return AlterPartitionResponse(
                Errors.STALE_BROKER_EPOCH,
                f"AlterPartition from broker {req.broker_id} epoch {req.broker_epoch}: "
                f"{registered}",
            ), []
        p = self._begin()
        results = []
        for item in req.partitions:
            try:
                results.append(self._alter_one(p, req.broker_id, item))
            except ControllerError as e:
                log.info("AlterPartition from broker %d rejected: %s", req.broker_id, e)
                results.append(AlterPartitionResult(item.topic_id, item.partition, e.error, str(e)))
        return AlterPartitionResponse(Errors.NONE, None, results), self._commit(p)

    def _alter_one(
        self, p: _Pending, broker_id: int, item: AlterPartitionItem
    ) -> AlterPartitionResult:
        topic = p.image.topic_by_id(item.topic_id)
        if topic is None:
            raise ControllerError(Errors.UNKNOWN_TOPIC_ID, f"unknown topic id {item.topic_id}")
        where = f"{topic.name}-{item.partition}"
        reg = topic.partitions.get(item.partition)
        if reg is None:
            raise ControllerError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"unknown partition {where}")
        if item.leader_epoch < reg.leader_epoch:
            raise ControllerError(
                Errors.FENCED_LEADER_EPOCH,
                f"{where}: leader epoch {item.leader_epoch} < current {reg.leader_epoch}",
            )
        if item.leader_epoch > reg.leader_epoch:
            raise ControllerError(
                Errors.NOT_CONTROLLER,
                f"{where}: leader epoch {item.leader_epoch} > current {reg.leader_epoch}",
            )
        if reg.leader != broker_id:
            raise ControllerError(
                Errors.INVALID_REQUEST,
                f"{where}: broker {broker_id} is not the leader (leader is {reg.leader})",
            )
        if item.partition_epoch != reg.partition_epoch:
            raise ControllerError(
                Errors.INVALID_UPDATE_VERSION if item.partition_epoch < reg.partition_epoch
                else Errors.NOT_CONTROLLER,
                f"{where}: partition epoch {item.partition_epoch}, current {reg.partition_epoch}",
            )  # fmt: skip
        new_isr = tuple(item.new_isr)
        if not new_isr or len(set(new_isr)) != len(new_isr) or broker_id not in new_isr:
            raise ControllerError(
                Errors.INVALID_REQUEST,
                f"{where}: ISR {list(new_isr)} must be non-empty, without duplicates and "
                f"contain the leader {broker_id}",
            )
        epochs = item.isr_broker_epochs
        for i, r in enumerate(new_isr):
            if r not in reg.replicas:
                raise ControllerError(
                    Errors.INVALID_REQUEST,
                    f"{where}: ISR member {r} is not a replica ({list(reg.replicas)})",
                )
            rb = p.image.brokers.get(r)
            if not p.image.may_join_isr(r, fenced_ok=not self.config.isr_eligibility):
                state = "not registered" if rb is None else "fenced or shutting down"
                raise ControllerError(
                    Errors.INELIGIBLE_REPLICA, f"{where}: ISR member {r} is {state}"
                )
            # KIP-903: a member that restarted since the leader saw it caught up may hold an
            # emptied log; it must catch up again under its new epoch. Legacy (< 3.5): unchecked.
            if (self.config.isr_broker_epochs and epochs is not None and i < len(epochs)
                    and epochs[i] not in (-1, rb.epoch)):
                raise ControllerError(
                    Errors.INELIGIBLE_REPLICA,
                    f"{where}: ISR member {r} has broker epoch {epochs[i]}, registered {rb.epoch}",
                )
        builder = self._builder(p, topic, item.partition, reg).set_target_isr(new_isr)
        if reg.adding_replicas and all(r in new_isr for r in reg.target_replicas):
            target = reg.target_replicas
            builder.set_target_replicas(target).set_target_isr([r for r in new_isr if r in target])
        change = builder.build()
        if change is not None:
            p.add(change)
        now = p.image.topics[topic.name].partitions[item.partition]
        return AlterPartitionResult(
            topic.topic_id, item.partition, Errors.NONE, None,
            now.leader, now.leader_epoch, now.isr, now.partition_epoch,
        )  # fmt: skip

    # --- elections and reassignment ------------------------------------------------------

    def elect_leaders(
        self, req: ElectLeadersRequest, now_ms: int
    ) -> tuple[ElectLeadersResponse, list[MetadataRecord]]:
        try:
            kind = ElectionType(req.election_type)
        except ValueError:
            return ElectLeadersResponse(
                Errors.INVALID_REQUEST, message=f"unknown election type {req.election_type}"
            ), []
        p = self._begin()
        everything = req.partitions is None
        wanted = (
            [(t.name, idx) for t, idx, _ in p.image.all_partitions()]
            if req.partitions is None
            else req.partitions
        )
        results = []
        for name, idx in wanted:
            r = self._elect_one(p, kind, name, idx)
            if everything and r.error == Errors.ELECTION_NOT_NEEDED:
                continue  # Kafka lists only what it tried when asked for "all partitions"
            results.append(r)
        return ElectLeadersResponse(Errors.NONE, results), self._commit(p)

    def _elect_one(self, p: _Pending, kind: ElectionType, name: str, idx: int) -> PartitionResult:
        topic = p.image.topics.get(name)
        reg = None if topic is None else topic.partitions.get(idx)
        if topic is None or reg is None:
            return PartitionResult(name, idx, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                   f"unknown partition {name}-{idx}")  # fmt: skip
        if kind == ElectionType.PREFERRED:
            pref = reg.preferred_leader
            if reg.leader == pref:
                return PartitionResult(name, idx, Errors.ELECTION_NOT_NEEDED,
                                       f"{name}-{idx}: {pref} already leads")  # fmt: skip
            if pref not in reg.isr or not p.image.is_live(pref):
                return PartitionResult(
                    name, idx, Errors.PREFERRED_LEADER_NOT_AVAILABLE,
                    f"{name}-{idx}: preferred replica {pref} is not live and in the ISR "
                    f"{list(reg.isr)}",
                )  # fmt: skip
            change = self._builder(p, topic, idx, reg).set_preferred_election().build()
        else:
            if reg.has_leader and p.image.is_live(reg.leader):
                return PartitionResult(name, idx, Errors.ELECTION_NOT_NEEDED,
                                       f"{name}-{idx}: {reg.leader} leads")  # fmt: skip
            change = self._builder(p, topic, idx, reg, unclean=True).build()
            if change is None or change.leader in (None, -1):
                return PartitionResult(
                    name, idx, Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                    f"{name}-{idx}: no live replica among {list(reg.replicas)}",
                )  # fmt: skip
        if change is not None:
            p.add(change)
        return PartitionResult(name, idx, Errors.NONE)

    def reassign_partitions(
        self, req: ReassignPartitionsRequest, now_ms: int
    ) -> tuple[ReassignPartitionsResponse, list[MetadataRecord]]:
        p = self._begin()
        results = []
        for name, idx, replicas in req.partitions:
            try:
                self._reassign_one(p, name, idx, replicas)
                results.append(PartitionResult(name, idx, Errors.NONE))
            except ControllerError as e:
                results.append(PartitionResult(name, idx, e.error, str(e)))
        return ReassignPartitionsResponse(results), self._commit(p)

    def _reassign_one(
        self, p: _Pending, name: str, idx: int, replicas: tuple[int, ...] | None
    ) -> None:
        topic = p.image.topics.get(name)
        reg = None if topic is None else topic.partitions.get(idx)
        if topic is None or reg is None:
            raise ControllerError(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                  f"unknown partition {name}-{idx}")  # fmt: skip
        original = tuple(r for r in reg.replicas if r not in reg.adding_replicas)
        if replicas is None:
            if not reg.is_reassigning:
                raise ControllerError(Errors.NO_REASSIGNMENT_IN_PROGRESS,
                                      f"{name}-{idx} is not being reassigned")  # fmt: skip
            target = original
        else:
            target = tuple(replicas)
            _check_replica_list(p.image, target, f"{name}-{idx}")
        adding = tuple(r for r in target if r not in original)
        removing = tuple(r for r in original if r not in target)
        full = target + removing
        isr = [r for r in reg.isr if r in full]
        builder = self._builder(p, topic, idx, reg)
        if all(r in isr for r in target):
            builder.set_target_replicas(target).set_target_isr([r for r in isr if r in target])
        elif not isr:
            raise ControllerError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"{name}-{idx}: no member of the ISR {list(reg.isr)} would remain a replica",
            )
        else:
            builder.set_target_replicas(full, adding, removing).set_target_isr(isr)
        change = builder.build()
        if change is not None:
            p.add(change)


    # --- topic admin: DeleteTopics, CreatePartitions, AlterConfigs -------------------------

    def delete_topics(
        self, topics: list[tuple[str | None, uuid.UUID | None]], now_ms: int
    ) -> tuple[list[TopicResult], list[MetadataRecord]]:
        """Each entry names a topic by name or by id (DeleteTopics v6); results in order."""
        p = self._begin()
        results = []
        names = [n for n, _ in topics if n]
        for name, topic_id in topics:
            try:
                if name and topic_id is not None and topic_id.int != 0:
                    raise ControllerError(Errors.INVALID_REQUEST,
                                          "give a topic name or a topic id, not both")  # fmt: skip
                if name and names.count(name) > 1:
                    raise ControllerError(Errors.INVALID_REQUEST, f"duplicate topic name {name!r}")
                if name:
                    topic = p.image.topics.get(name)
                    if topic is None:
                        raise ControllerError(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                              f"topic {name!r} does not exist")  # fmt: skip
                else:
                    topic = None if topic_id is None else p.image.topic_by_id(topic_id)
                    if topic is None:
                        raise ControllerError(Errors.UNKNOWN_TOPIC_ID,
                                              f"no topic has id {topic_id}")  # fmt: skip
                if topic.name.startswith("__"):
                    raise ControllerError(Errors.INVALID_REQUEST,
                                          f"internal topic {topic.name!r} cannot be deleted")
                p.add(RemoveTopic(str(topic.topic_id)))
                results.append(TopicResult(topic.name, Errors.NONE, None, topic.topic_id))
            except ControllerError as e:
                log.info("DeleteTopics %r rejected: %s", name or topic_id, e)
                results.append(TopicResult(name, e.error, str(e), topic_id))
        return results, self._commit(p)

    def create_partitions(
        self, items: list[NewPartitions], validate_only: bool, now_ms: int
    ) -> tuple[list[TopicResult], list[MetadataRecord]]:
        p = self._begin()
        results = []
        counts: dict[str, int] = defaultdict(int)
        for it in items:
            counts[it.name] += 1
        for it in items:
            try:
                if counts[it.name] > 1:
                    raise ControllerError(Errors.INVALID_REQUEST,
                                          f"topic {it.name!r} appears more than once")  # fmt: skip
                self._create_partitions_one(p, it, validate_only)
                results.append(TopicResult(it.name, Errors.NONE))
            except ControllerError as e:
                log.info("CreatePartitions %r rejected: %s", it.name, e)
                results.append(TopicResult(it.name, e.error, str(e)))
        return results, self._commit(p)

    def _create_partitions_one(self, p: _Pending, it: NewPartitions, validate_only: bool) -> None:
        topic = p.image.topics.get(it.name)
        if topic is None:
            raise ControllerError(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                  f"topic {it.name!r} does not exist")  # fmt: skip
        have = len(topic.partitions)
        if it.count <= have:
            raise ControllerError(
                Errors.INVALID_PARTITIONS,
                f"Topic already has {have} partitions." if it.count == have else
                f"Topic currently has {have} partitions, which is higher than the requested "
                f"{it.count}.",
            )  # fmt: skip
        if it.count > MAX_PARTITIONS_PER_TOPIC:
            raise ControllerError(Errors.INVALID_PARTITIONS,
                                  f"{it.count} partitions exceed {MAX_PARTITIONS_PER_TOPIC}")
        rf = len(topic.partitions[0].replicas) if 0 in topic.partitions else 1
        new = it.count - have
        if it.assignments is not None:
            if len(it.assignments) != new:
                raise ControllerError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"{len(it.assignments)} assignments given for {new} new partitions",
                )
            for i, replicas in enumerate(it.assignments):
                _check_replica_list(p.image, tuple(replicas), f"partition {have + i}")
                if len(replicas) != rf:
                    raise ControllerError(
                        Errors.INVALID_REPLICA_ASSIGNMENT,
                        f"partition {have + i} has {len(replicas)} replicas, the topic has {rf}",
                    )
            assignment = [tuple(r) for r in it.assignments]
        else:
            live = p.image.live_brokers()
            if rf > len(live):
                raise ControllerError(
                    Errors.INVALID_REPLICATION_FACTOR,
                    f"replication factor {rf} needs {rf} unfenced brokers, have {live}",
                )
            existing = sum(len(x.partitions) for x in p.image.topics.values())
            assignment = place_replicas(live, new, rf, start_index=existing)
        if validate_only:
            return
        for i, replicas in enumerate(assignment):
            isr = tuple(r for r in replicas if p.image.is_live(r))
            if not isr:
                raise ControllerError(Errors.INVALID_REPLICA_ASSIGNMENT,
                                      f"all brokers of partition {have + i} are fenced")
            p.add(PartitionRecord(str(topic.topic_id), have + i, replicas, isr, isr[0]))

    def alter_topic_configs(
        self, items: list[tuple[str, dict[str, str | None]]], validate_only: bool, now_ms: int
    ) -> tuple[list[TopicResult], list[MetadataRecord]]:
        """`items`: (topic, changes) with values already validated (server/configs.py);
        None deletes a setting. One ConfigRecord per name whose value changes."""
        p = self._begin()
        results = []
        for name, changes in items:
            topic = p.image.topics.get(name)
            if topic is None:
                results.append(TopicResult(name, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                           f"topic {name!r} does not exist"))  # fmt: skip
                continue
            if not validate_only:
                for key, value in sorted(changes.items()):
                    if topic.configs.get(key) != value:
                        p.add(TopicConfig(str(topic.topic_id), key, value))
            results.append(TopicResult(name, Errors.NONE))
        return results, self._commit(p)

    def alter_broker_configs(self, broker: str, changes: dict[str, str | None],
                             validate_only: bool, now_ms: int) -> list[MetadataRecord]:
        """KIP-226: dynamic configs of broker `broker` ("" = the cluster-wide default), values
        already validated (server/configs.py); None deletes. One BrokerConfig record per name
        whose value changes."""
        return self._alter_resource_configs(
            lambda image: image.broker_configs.get(broker, {}),
            lambda key, value: BrokerConfig(broker, key, value), changes, validate_only)

    def alter_group_configs(self, group: str, changes: dict[str, str | None],
                            validate_only: bool, now_ms: int) -> list[MetadataRecord]:
        """KIP-848 group configs of group `group`, values already validated
        (server/configs.py); None deletes. One GroupConfig record per name whose value
        changes."""
        return self._alter_resource_configs(
            lambda image: image.group_configs.get(group, {}),
            lambda key, value: GroupConfig(group, key, value), changes, validate_only)

    def _alter_resource_configs(
        self, current_of: Callable[[MetadataImage], Mapping[str, str]],
        record: Callable[[str, str | None], MetadataRecord], changes: dict[str, str | None],
        validate_only: bool,
    ) -> list[MetadataRecord]:
        p = self._begin()
        current = current_of(p.image)
        if not validate_only:
            for key, value in sorted(changes.items()):
                if current.get(key) != value:
                    p.add(record(key, value))
        return self._commit(p)


def _check_replica_list(image: MetadataImage, replicas: tuple[int, ...], where: str) -> None:
    if not replicas or len(set(replicas)) != len(replicas):
        raise ControllerError(
            Errors.INVALID_REPLICA_ASSIGNMENT,
            f"{where}: replicas {list(replicas)} must be non-empty and without duplicates",
        )
    unknown = [r for r in replicas if r not in image.brokers]
    if unknown:
        raise ControllerError(
            Errors.INVALID_REPLICA_ASSIGNMENT, f"{where}: brokers {unknown} are not registered"
        )
