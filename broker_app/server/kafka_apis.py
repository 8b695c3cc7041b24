"""KafkaApis: one handler per API; a decoded request in, a response entity out. No sockets.

`handle(request)` returns one of:
  - a kio response entity, to be encoded and sent;
  - NO_RESPONSE (a Produce with acks=0: Kafka sends nothing back);
  - a DelayedFetch, parked in ReplicaManager's fetch purgatory until enough data is readable
    (or something changed) or its max_wait expires; the edge then calls `complete(True)`;
  - CloseConnection(reason), when the only correct reaction is to drop the client
    (e.g. a failed acks=0 produce, which the client can notice only that way);
  - a Deferred (an acks=all produce parked in the DelayedProduce purgatory): the edge waits for
    `resolve(response)`;
  - a coroutine (CreateTopics / ElectLeaders and the other controller requests forwarded to
    the controller), which the edge awaits for the response.
Every broker is a KRaft cluster member (`cluster`, see server/cluster_link.py; a broker started
without a controller runs one in its process: server/combined.py): Metadata comes from the
controller's committed MetadataImage (leader, replicas, ISR, the brokers' registered
addresses), topics are created by the controller, and controller_id is a random alive broker as
in Kafka's KRaft mode, so admin clients send CreateTopics/ElectLeaders to a broker, which
forwards them.
Handlers build responses as plain dicts valid for every advertised version and protocol.entities
turns them into the requested version's classes. Unknown api keys/versions never reach here
(codec raises UnsupportedRequest; the network edge closes the connection).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from broker_app.config import BrokerConfig
from broker_app.controller.topic_rules import TopicError, validate_topic_name
from broker_app.coordinator.producer_ids import ProducerIdManager
from broker_app.environment import new_rng
from broker_app.protocol.apis import ApiKey, advertised_apis
from broker_app.protocol.codec import Request
from broker_app.protocol.error_codes import Errors
from broker_app.reject_log import RejectLog
from broker_app.replication.replica_manager import (
    ACKS_ALL,
    ACKS_NONE,
    FetchRequestPartition,
    ReplicaManager,
)
from broker_app.storage.errors import StorageError

from .admin_apis import AdminApis
from .api_common import (
    CLUSTER_OPERATIONS,
    TOPIC_OPERATIONS,
    BrokerContext,
    api_versions_response,
    authorized_operations,
    image_topic_metadata,
    metadata_topic_error,
    ms,
    requested_topic_names,
    respond,
    unknown_topic_entry,
)
from .group_apis import GroupApis
from .topic_admin_apis import TopicAdminApis

log = logging.getLogger(__name__)
_REJECTS = RejectLog(log)  # rate-limited lines for rejected requests (issue 15)



class _NoResponse:
    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE = _NoResponse()


@dataclass
class CloseConnection:
    reason: str


class Deferred:
    """A response that becomes available later (resolve() is called exactly once)."""

    def __init__(self) -> None:
        self.done = False
        self.value: Any = None
        self._callbacks: list[Callable[[Any], None]] = []

    def resolve(self, value: Any) -> None:
        if self.done:
            return
        self.done, self.value = True, value
        for cb in self._callbacks:
            cb(value)
        self._callbacks.clear()

    def add_callback(self, cb: Callable[[Any], None]) -> None:
        if self.done:
            cb(self.value)
        else:
            self._callbacks.append(cb)


@dataclass
class DelayedFetch:
    """A fetch waiting for min_bytes of data or max_wait_ms, whichever comes first.

    Parked in ReplicaManager's fetch purgatory, which resolves `ready`; the edge then (or
    after max_wait_ms, calling `give_up()` first) builds the response with complete(True)."""

    max_wait_ms: int
    complete: Callable[[bool], Any]  # complete(force) -> response entity, or None to keep waiting
    ready: Deferred = field(default_factory=Deferred)
    give_up: Callable[[], object] = lambda: None  # completes the purgatory operation


class KafkaApis:
    def __init__(
        self,
        config: BrokerConfig,
        replica_manager: ReplicaManager,
        groups: GroupApis,
        producer_ids: ProducerIdManager,
        cluster: Any,
        rng: random.Random | None = None,
    ) -> None:
        # The one source of randomness of the request handlers (the simulator passes a seeded
        # one; production its own, environment.new_rng).
        self.context = BrokerContext(config, replica_manager, cluster, rng or new_rng())
        self.groups = groups
        admin = AdminApis(self.context)
        self.producer_ids = producer_ids
        self._handlers: dict[int, Callable[[Request], Any]] = {
            ApiKey.API_VERSIONS: self.handle_api_versions,
            ApiKey.METADATA: self.handle_metadata,
            ApiKey.CREATE_TOPICS: self.handle_create_topics,
            ApiKey.PRODUCE: self.handle_produce,
            ApiKey.FETCH: self.handle_fetch,
            ApiKey.LIST_OFFSETS: self.handle_list_offsets,
            ApiKey.FIND_COORDINATOR: self.handle_find_coordinator,
            ApiKey.OFFSET_COMMIT: self.handle_offset_commit,
            ApiKey.OFFSET_FETCH: self.handle_offset_fetch,
            ApiKey.INIT_PRODUCER_ID: self.handle_init_producer_id,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self.handle_offset_for_leader_epoch,
            ApiKey.ELECT_LEADERS: self.handle_elect_leaders,
            ApiKey.DESCRIBE_TOPIC_PARTITIONS: self.handle_describe_topic_partitions,
            ApiKey.JOIN_GROUP: groups.handle_join_group,
            ApiKey.SYNC_GROUP: groups.handle_sync_group,
            ApiKey.HEARTBEAT: groups.handle_heartbeat,
            ApiKey.LEAVE_GROUP: groups.handle_leave_group,
            ApiKey.LIST_GROUPS: groups.handle_list_groups,
            ApiKey.DESCRIBE_GROUPS: groups.handle_describe_groups,
            ApiKey.DELETE_GROUPS: groups.handle_delete_groups,
            ApiKey.OFFSET_DELETE: groups.handle_offset_delete,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: admin.handle_alter_partition_reassignments,
            ApiKey.LIST_PARTITION_REASSIGNMENTS: admin.handle_list_partition_reassignments,
            ApiKey.DESCRIBE_CLUSTER: admin.handle_describe_cluster,
            ApiKey.DELETE_RECORDS: admin.handle_delete_records,
            ApiKey.DESCRIBE_LOG_DIRS: admin.handle_describe_log_dirs,
            **TopicAdminApis(self.context).handlers(),
        }

    # What the handlers use of the broker: api_common.BrokerContext, shared with AdminApis and
    # TopicAdminApis (GroupApis gets the cluster link alone).
    @property
    def config(self) -> BrokerConfig:
        return self.context.config

    @property
    def replica_manager(self) -> ReplicaManager:
        return self.context.replica_manager

    @property
    def cluster(self) -> Any:
        return self.context.cluster

    @property
    def rng(self) -> random.Random:
        return self.context.rng

    # -- dispatch ---------------------------------------------------------------------

    def handle(self, request: Request) -> Any:
        return self._handlers[request.api_key](request)

    def _respond(self, request: Request, data: dict[str, Any]) -> Any:
        return respond(request, data)

    # -- ApiVersions --------------------------------------------------------------------

    def handle_api_versions(self, request: Request) -> Any:
        if request.unsupported_api_versions:
            log.info(
                "ApiVersions v%d unsupported; replying UNSUPPORTED_VERSION in v0",
                request.api_version,
            )
        return api_versions_response(
            request, advertised_apis(self.config.behaviour.client_leader_epochs))

    # -- Metadata -----------------------------------------------------------------------

    def handle_metadata(self, request: Request) -> Any:
        image = self.cluster.image
        body = request.body
        host, port = self.config.advertised
        me = self.config.node_id
        brokers = {me: {"node_id": me, "host": host, "port": port,
                        "rack": self.config.broker_rack}}
        for b in image.live_brokers():
            reg = image.brokers[b]
            brokers.setdefault(b, {"node_id": b, "host": reg.host, "port": reg.port,
                                   "rack": reg.rack})  # fmt: skip
        names = requested_topic_names(request, image)
        allow_auto = getattr(body, "allow_auto_topic_creation", True)
        topics = []
        budget = self.config.max_partitions_per_create_request
        for name, topic_id in names:
            topic = image.topics.get(name) if name is not None else None
            if topic is None and name is None:
                topics.append(unknown_topic_entry(None, topic_id))
                continue
            if topic is None:
                invalid = _invalid_topic_name(name)
                code = invalid or Errors.UNKNOWN_TOPIC_OR_PARTITION
                if not invalid and allow_auto and self.config.auto_create_topics:
                    try:
                        budget = self._spend_partitions(budget, self.config.num_partitions)
                        self.cluster.auto_create_topic(name)
                        code = Errors.LEADER_NOT_AVAILABLE  # clients retry until it exists
                    except TopicError as e:
                        code = e.error_code
                topics.append(metadata_topic_error(name, None, code))
                continue
            topics.append(image_topic_metadata(image, topic))
        return self._respond(
            request,
            {
                "throttle_time": 0,
                "brokers": list(brokers.values()),
                "cluster_id": self.config.cluster_id,
                "controller_id": self._metadata_controller_id(image),
                "topics": topics,
                **_metadata_authorized_operations(body, topics),
            },
        )

    def _metadata_controller_id(self, image: Any) -> int:
        """What Kafka's KRaft brokers report as controller: a random alive (unfenced) broker,
        not the quorum leader (KafkaApis uses metadataCache.getRandomAliveBrokerId; clients
        cannot reach KRaft controllers, KIP-590, and send controller requests to a broker, which
        forwards them, as this one does). -1 (NO_CONTROLLER_ID) when no broker is alive."""
        alive = image.live_brokers()
        return self.rng.choice(alive) if alive else -1

    # -- DescribeTopicPartitions (KIP-966) ------------------------------------------------

    def handle_describe_topic_partitions(self, request: Request) -> Any:
        from broker_app.server.describe_topic_partitions import describe, image_partitions

        body = request.body
        image = self.cluster.image
        topics = {t.name: (t.topic_id, image_partitions(image, t))
                  for t in image.topics.values()}  # fmt: skip
        cursor = body.cursor
        return self._respond(request, describe(
            topics, [t.name for t in body.topics], int(body.response_partition_limit),
            None if cursor is None else (cursor.topic_name, int(cursor.partition_index)),
        ))  # fmt: skip

    # -- CreateTopics ---------------------------------------------------------------------

    def handle_create_topics(self, request: Request) -> Any:
        names = [t.name for t in request.body.topics]
        return self.cluster.forward_create_topics(request.body, names)

    def _spend_partitions(self, budget: int, num_partitions: int) -> int:
        """What is left of this request's partition budget after creating `num_partitions`;
        TopicError (INVALID_PARTITIONS) when it does not fit, so one request cannot create
        millions of partitions (and their files)."""
        if num_partitions > budget:
            raise TopicError(
                Errors.INVALID_PARTITIONS,
                f"creating {num_partitions} more partitions exceeds this request's limit "
                f"(max_partitions_per_create_request="
                f"{self.config.max_partitions_per_create_request})",
            )
        return budget - max(num_partitions, 0)

    # -- Produce ----------------------------------------------------------------------------

    def handle_produce(self, request: Request) -> Any:
        body = request.body
        acks = body.acks
        entries: dict[tuple[str, int], bytes | None] = {}
        txn_rejected: set[tuple[str, int]] = set()
        for t in body.topic_data:
            for p in t.partition_data:
                tp = (t.name, p.index)
                if body.transactional_id is not None:
                    txn_rejected.add(tp)
                else:
                    entries[tp] = p.records
        deferred: Deferred | None = None
        if acks == ACKS_ALL:
            deferred = Deferred()
            sync = self.replica_manager.append_records(
                acks,
                entries,
                timeout_ms=max(ms(body.timeout), 1),
                callback=lambda res: deferred.resolve(
                    self._produce_response(request, res, txn_rejected)
                ),
            )
            if sync is None:
                return deferred.value if deferred.done else deferred
            return self._produce_response(request, sync, txn_rejected)
        results = self.replica_manager.append_records(acks, entries)
        assert results is not None
        if acks == ACKS_NONE:
            failed = [(tp, r) for tp, r in results.items() if r.error_code != Errors.NONE]
            if failed or txn_rejected:
                # Kafka closes the connection so an acks=0 producer notices something failed.
                tp, r = failed[0] if failed else (next(iter(txn_rejected)), None)
                return CloseConnection(
                    f"acks=0 produce to {tp[0]}-{tp[1]} failed"
                    + (f": error {r.error_code} {r.error_message}" if r else ": transactional")
                )
            return NO_RESPONSE
        return self._produce_response(request, results, txn_rejected)

    def _produce_response(
        self, request: Request, results: dict, txn_rejected: set[tuple[str, int]]
    ) -> Any:
        body = request.body
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for t in body.topic_data:
            for p in t.partition_data:
                tp = (t.name, p.index)
                if tp in txn_rejected:
                    part = {
                        "index": p.index,
                        "error_code": Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        "base_offset": -1,
                        "log_append_time": -1,
                        "log_start_offset": -1,
                        "record_errors": [],
                        "error_message": "transactions are not supported by this broker",
                    }
                else:
                    r = results[tp]
                    part = {
                        "index": p.index,
                        "error_code": r.error_code,
                        "base_offset": r.base_offset,
                        "log_append_time": -1,
                        "log_start_offset": r.log_start_offset,
                        "record_errors": [
                            {"batch_index": i, "batch_index_error_message": m}
                            for i, m in r.record_errors],
                        "error_message": r.error_message,
                    }
                by_topic.setdefault(t.name, []).append(part)
        return self._respond(
            request,
            {
                "responses": [
                    {"name": n, "partition_responses": parts} for n, parts in by_topic.items()
                ],
                "throttle_time": 0,
            },
        )

    # -- Fetch --------------------------------------------------------------------------

    def handle_fetch(self, request: Request) -> Any:
        body = request.body
        reqs: dict[tuple[str, int], FetchRequestPartition] = {}
        # v13+ names topics by id (KIP-516): an id nobody has is UNKNOWN_TOPIC_ID per partition.
        by_id = request.api_version >= 13
        ids: dict[str, Any] = {}
        unknown: list[tuple[Any, int]] = []
        for t in body.topics:
            name = self._topic_name_by_id(t.topic_id) if by_id else t.topic
            if name is None:
                unknown += [(t.topic_id, p.partition) for p in t.partitions]
                continue
            if by_id:
                ids[name] = t.topic_id
            for p in t.partitions:
                reqs[(name, p.partition)] = FetchRequestPartition(
                    p.fetch_offset,
                    max(p.partition_max_bytes, 0),
                    current_leader_epoch=getattr(p, "current_leader_epoch", -1),
                    last_fetched_epoch=getattr(p, "last_fetched_epoch", -1),
                    log_start_offset=getattr(p, "log_start_offset", -1),
                )
        max_bytes = body.max_bytes if body.max_bytes > 0 else 0x7FFFFFFF
        min_bytes = body.min_bytes
        max_wait_ms = min(ms(body.max_wait), self.config.fetch_max_wait_ms_cap)
        # v15+: the replica's id and broker epoch in ReplicaState (KIP-903), before: replica_id.
        state = getattr(body, "replica_state", None)
        replica_id = state.replica_id if state is not None else body.replica_id
        replica_epoch = state.replica_epoch if state is not None else -1
        # KIP-392: a consumer's Fetch v11+ says its client.rack (maybe ""): a follower may then
        # serve it, and the leader may send it to a preferred read replica.
        rack = getattr(body, "rack_id", None)
        client_rack = (rack or "") if request.api_version >= 11 and replica_id < 0 else None

        def complete(force: bool) -> Any:
            results = self.replica_manager.fetch_messages(reqs, max_bytes, replica_id,
                                                          client_rack, replica_epoch)
            size = sum(len(r.records) for r in results.values())
            errors = bool(unknown) or any(
                r.error_code != Errors.NONE or r.preferred_read_replica >= 0
                for r in results.values())  # fmt: skip
            if not force and not errors and size < max(min_bytes, 1):
                return None
            return self._fetch_response(request, results, ids if by_id else None, unknown)

        response = complete(max_wait_ms <= 0 or min_bytes <= 0 or not reqs)
        if response is not None:
            return response
        delayed = DelayedFetch(max_wait_ms, complete)
        op = self.replica_manager.park_fetch(
            reqs, replica_id, min_bytes, max_wait_ms, lambda: delayed.ready.resolve(None),
            client_rack,
        )
        delayed.give_up = op.force_complete
        return delayed

    def _topic_name_by_id(self, topic_id: Any) -> str | None:
        """A hosted partition's topic first (the ReplicaManager has its id from the metadata, or
        from whoever applied the partition), else the metadata's."""
        for name, hosted in self.replica_manager.topic_ids.items():
            if hosted == topic_id:
                return name
        topic = self.cluster.image.topics_by_id.get(topic_id)
        return None if topic is None else topic.name

    def _fetch_response(self, request: Request, results: dict, ids: dict[str, Any] | None = None,
                        unknown: Sequence[tuple[Any, int]] = ()) -> Any:  # fmt: skip
        """`ids` (Fetch v13+): each topic's id, which the response names it by; `unknown`:
        the (topic id, partition) pairs whose id names no topic."""
        by_topic: dict[Any, list[dict[str, Any]]] = {}
        for (topic, partition), r in results.items():
            part = {
                "partition_index": partition,
                "error_code": self.context.unhosted_error(topic, partition, r.error_code),
                "high_watermark": r.high_watermark,
                "last_stable_offset": r.last_stable_offset,
                "log_start_offset": r.log_start_offset,
                "aborted_transactions": [],
                "preferred_read_replica": r.preferred_read_replica,
                "records": r.records,
            }
            if r.diverging_epoch is not None:  # Fetch v12+ tagged field
                part["diverging_epoch"] = {
                    "epoch": r.diverging_epoch.leader_epoch,
                    "end_offset": r.diverging_epoch.end_offset,
                }
            if r.error_code in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH):
                part["current_leader"] = {"leader_id": r.leader_id, "leader_epoch": r.leader_epoch}
            by_topic.setdefault(topic if ids is None else ids[topic], []).append(part)
        for topic_id, partition in unknown:
            by_topic.setdefault(topic_id, []).append({
                "partition_index": partition, "error_code": Errors.UNKNOWN_TOPIC_ID,
                "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
                "aborted_transactions": [], "preferred_read_replica": -1, "records": b""})
        key = "topic" if ids is None else "topic_id"
        return self._respond(
            request,
            {
                "throttle_time": 0,
                "error_code": Errors.NONE,
                # Session id 0: no incremental fetch sessions; every request is a full fetch.
                "session_id": 0,
                "responses": [{key: t, "partitions": ps} for t, ps in by_topic.items()],
            },
        )

    # -- ListOffsets ----------------------------------------------------------------------

    def handle_list_offsets(self, request: Request) -> Any:
        topics = []
        for t in request.body.topics:
            parts = []
            for p in t.partitions:
                parts.append(self._list_offset(t.name, p, request.body.replica_id))
            topics.append({"name": t.name, "partitions": parts})
        return self._respond(request, {"throttle_time": 0, "topics": topics})

    def _list_offset(self, topic: str, p: Any, replica_id: int = -1) -> dict[str, Any]:
        out: dict[str, Any] = {
            "partition_index": p.partition_index,
            "error_code": Errors.NONE,
            "timestamp": -1,
            "offset": -1,
            "leader_epoch": -1,
        }
        state = self.replica_manager.get_partition(topic, p.partition_index)
        if state is None:
            out["error_code"] = Errors.UNKNOWN_TOPIC_OR_PARTITION
            return out
        if not state.is_leader:
            out["error_code"] = Errors.NOT_LEADER_OR_FOLLOWER
            return out
        current = getattr(p, "current_leader_epoch", -1)
        if current >= 0 and current != state.leader_epoch:
            out["error_code"] = (
                Errors.FENCED_LEADER_EPOCH
                if current < state.leader_epoch
                else Errors.UNKNOWN_LEADER_EPOCH
            )
            return out
        lg = state.log
        ts = p.timestamp
        out["leader_epoch"] = state.leader_epoch
        if ts == -2:  # EARLIEST_TIMESTAMP
            out["offset"] = lg.log_start_offset
        elif ts == -1 and replica_id >= 0:
            # A replica (the fetcher after OFFSET_OUT_OF_RANGE) gets the log end, as in Kafka:
            # a ListOffsets with a replica id has no isolation level.
            out["offset"] = lg.log_end_offset
        elif ts == -1:  # LATEST_TIMESTAMP: consumers see the HW (= LSO, no transactions)
            out["offset"] = lg.high_watermark
        else:
            try:
                found = lg.fetch_offset_by_timestamp(ts)
            except StorageError as e:
                out["error_code"] = e.kafka_error_code
                return out
            if found is not None:
                out["timestamp"], out["offset"] = _timestamp_and_offset(found)
        return out

    # -- FindCoordinator / OffsetCommit / OffsetFetch: the group coordinator (group_apis) --

    def handle_find_coordinator(self, request: Request) -> Any:
        return self.groups.handle_find_coordinator(request)

    def handle_offset_commit(self, request: Request) -> Any:
        return self.groups.handle_offset_commit(request)

    def handle_offset_fetch(self, request: Request) -> Any:
        return self.groups.handle_offset_fetch(request)

    # -- InitProducerId -----------------------------------------------------------------

    def handle_init_producer_id(self, request: Request) -> Any:
        body = request.body
        if body.transactional_id is not None:
            _REJECTS.warning("InitProducerId for transactional id %r refused",
                             body.transactional_id)  # fmt: skip
            return self._respond(
                request,
                {
                    "throttle_time": 0,
                    "error_code": Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                    "producer_id": -1,
                    "producer_epoch": -1,
                },
            )
        # Idempotent-only producers (also when re-initialising after an error, KIP-360)
        # get a fresh producer id with epoch 0, as Kafka does without a transactional id.
        pid = self.producer_ids.generate()
        return self._respond(
            request,
            {
                "throttle_time": 0,
                "error_code": Errors.NONE,
                "producer_id": pid,
                "producer_epoch": 0,
            },
        )

    # -- OffsetForLeaderEpoch / ElectLeaders -----------------------------------------------

    def handle_offset_for_leader_epoch(self, request: Request) -> Any:
        topics = []
        for t in request.body.topics:
            parts = []
            for p in t.partitions:
                r = self.replica_manager.last_offset_for_leader_epoch(
                    t.topic, p.partition, p.leader_epoch, p.current_leader_epoch
                )
                parts.append(
                    {
                        "error_code": self.context.unhosted_error(
                            t.topic, p.partition, int(r.error)),
                        "partition": p.partition,
                        "leader_epoch": r.leader_epoch,
                        "end_offset": r.end_offset,
                    }
                )
            topics.append({"topic": t.topic, "partitions": parts})
        return self._respond(request, {"throttle_time": 0, "topics": topics})

    def handle_elect_leaders(self, request: Request) -> Any:
        return self.cluster.forward(request.body)


def _timestamp_and_offset(found: Any) -> tuple[int, int]:
    """Log.fetch_offset_by_timestamp may return (timestamp, offset), an object, or an offset."""
    if isinstance(found, tuple):
        return int(found[0]), int(found[1])
    if hasattr(found, "offset"):
        return int(getattr(found, "timestamp", -1)), int(found.offset)
    return -1, int(found)


def _invalid_topic_name(name: str | None) -> Errors | None:
    """INVALID_TOPIC_EXCEPTION for a Metadata request naming an illegal topic, as Kafka's
    KafkaApis and AutoTopicCreationManager answer it, auto-creation allowed or not (it is never
    sent to the controller, so a client's sends to it fail at once instead of retrying)."""
    if name is None:
        return None
    try:
        validate_topic_name(name)
    except TopicError:
        return Errors.INVALID_TOPIC_EXCEPTION
    return None


def _metadata_authorized_operations(body: Any, topics: list[dict[str, Any]]) -> dict[str, int]:
    """KIP-430 in Metadata: each topic's operations when asked (v8+), the cluster's when asked
    (v8-v10); as Kafka without an authorizer, every supported operation."""
    for t in topics:
        t["topic_authorized_operations"] = authorized_operations(
            getattr(body, "include_topic_authorized_operations", False), TOPIC_OPERATIONS)
    return {"cluster_authorized_operations": authorized_operations(
        getattr(body, "include_cluster_authorized_operations", False), CLUSTER_OPERATIONS)}
