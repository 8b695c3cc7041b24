"""GroupApis: the broker's edge of the group coordinator (coordinator/group_coordinator.py).

- FindCoordinator names the leader of the group's `__consumer_offsets` partition. The topic is
  created on the first FindCoordinator as Kafka does (offsets.topic.num.partitions,
  offsets.topic.replication.factor capped by the live brokers, cleanup.policy=compact,
  the broker's default min.insync.replicas); until it has a leader: COORDINATOR_NOT_AVAILABLE.
  Transaction coordinators (key_type 1) are answered with this broker: transactions are refused
  later, by InitProducerId.
- ReplicaOffsetsLog appends the coordinator's records to `__consumer_offsets` as a produce with
  offsets.commit.required.acks (-1: the DelayedProduce purgatory answers once the ISR has them).
- `tick()` (every 100 ms from the broker's timer) follows leadership of `__consumer_offsets`
  partitions (become_leader / resign), loads newly led partitions from the log, and runs the
  coordinator's session and rebalance timers.
- One handler per group API turns the kio request into a coordinator call and the coordinator's
  dict into the response (a Deferred when it waits for other members or for replication).
Differences from Kafka: DescribeGroups reports client_host as "unknown" (the request does not
carry the peer address here); DescribeGroups v6 / OffsetFetch v8+ / FindCoordinator v4+ are not
offered (kio ships them, the batched forms are not implemented).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from broker_app.clock import BrokerClock
from broker_app.coordinator.group_coordinator import (
    GroupCoordinator,
    GroupCoordinatorConfig,
    OffsetAndMetadata,
)
from broker_app.coordinator.records import OFFSETS_TOPIC
from broker_app.protocol.codec import Request
from broker_app.protocol.error_codes import Errors
from broker_app.replication.replica_manager import ReplicaManager
from broker_app.storage.errors import StorageError
from broker_app.storage.records import build_batch, decode_records

from .api_common import GROUP_OPERATIONS, authorized_operations, ms, respond

if TYPE_CHECKING:
    from broker_app.config import BrokerConfig

log = logging.getLogger(__name__)

GROUP_KEY_TYPE = 0
CLIENT_HOST = "unknown"


class ReplicaOffsetsLog:
    """OffsetsLog over ReplicaManager: one batch per coordinator write."""

    def __init__(self, replica_manager: ReplicaManager, acks: int, timeout_ms: int,
                 wall_ms: Callable[[], int]) -> None:  # fmt: skip
        self.replica_manager = replica_manager
        self.acks = acks
        self.timeout_ms = timeout_ms
        self.wall_ms = wall_ms  # the batches' timestamp: the broker's clock, not the machine's

    def append(self, partition: int, records: list, done: Callable[[int], None]) -> None:
        tp = (OFFSETS_TOPIC, partition)
        batch = build_batch(records, timestamp=self.wall_ms())
        res = self.replica_manager.append_records(
            self.acks, {tp: batch}, self.timeout_ms,
            callback=lambda r: done(int(r[tp].error_code)),
        )  # fmt: skip
        if res is not None:
            done(int(res[tp].error_code))


def _same(data: dict) -> dict:
    return data


def _nullable_protocol_name_from_v7(data: dict) -> dict:
    """JoinGroup before v7 has a non-null protocol_name: "" when no protocol was chosen."""
    return {**data, "protocol_name": data["protocol_name"] or ""}


class GroupApis:
    def __init__(self, config: BrokerConfig, replica_manager: ReplicaManager, cluster: Any,
                 clock: BrokerClock | None = None) -> None:  # fmt: skip
        """cluster: the broker's cluster link (api_common.BrokerContext says what it offers):
        the metadata image, and the creation of __consumer_offsets."""
        self.config = config
        self.cluster = cluster
        # Session and rebalance timeouts read clock.monotonic_ms, commit times clock.wall_ms.
        self.clock = clock or BrokerClock()
        self.replica_manager = replica_manager
        self.coordinator = GroupCoordinator(
            GroupCoordinatorConfig(
                num_partitions=config.offsets_topic_num_partitions,
                min_session_timeout_ms=config.group_min_session_timeout_ms,
                max_session_timeout_ms=config.group_max_session_timeout_ms,
                initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                commit_required_acks=config.offsets_commit_required_acks,
            ),
            ReplicaOffsetsLog(replica_manager, config.offsets_commit_required_acks,
                              config.offsets_commit_timeout_ms, self.clock.wall_ms),  # fmt: skip
        )
        self._led: dict[int, int] = {}  # __consumer_offsets partition -> leader epoch we loaded

    # -- leadership and timers -------------------------------------------------------------

    def tick(self, now: int | None = None) -> None:
        now = self.clock.monotonic_ms() if now is None else now
        self.sync_leadership(now)
        self.coordinator.tick(now)

    def sync_leadership(self, now: int) -> None:
        coord = self.coordinator
        hosted = self.replica_manager.partitions  # every 100 ms: a dict read, not a call
        for p in range(coord.config.num_partitions):
            part = hosted.get((OFFSETS_TOPIC, p))
            epoch = part.leader_epoch if part is not None and part.is_leader else None
            if epoch is None:
                if p in self._led:
                    del self._led[p]
                    coord.resign(p)
                    log.info("no longer coordinator for %s-%d", OFFSETS_TOPIC, p)
                continue
            if self._led.get(p) != epoch:
                self._led[p] = epoch
                coord.become_leader(p)  # COORDINATOR_LOAD_IN_PROGRESS until loaded
            if p in coord.loading:
                self._load(p, now)

    def _load(self, p: int, now: int) -> None:
        part = self.replica_manager.get_partition(OFFSETS_TOPIC, p)
        assert part is not None
        records = []
        try:
            for _, view in part.log.batches(part.log.log_start_offset):
                for r in decode_records(view):
                    if r.key is not None:
                        records.append((r.key, r.value))
        except StorageError as e:
            log.error("cannot load %s-%d, will retry: %s", OFFSETS_TOPIC, p, e)
            return
        n = self.coordinator.load(p, records, now)
        log.info("coordinator for %s-%d loaded %d records (%d groups)", OFFSETS_TOPIC, p, n,
                 sum(1 for g in self.coordinator.groups if self.coordinator.partition_for(g) == p))

    # -- helpers -----------------------------------------------------------------------------

    def _respond(self, request: Request, data: dict[str, Any]) -> Any:
        return respond(request, data)

    def _deferred(self, request: Request, call: Callable[[Callable[[dict], None]], None],
                  shape: Callable[[dict], dict] = lambda d: d) -> Any:  # fmt: skip
        from .kafka_apis import Deferred

        deferred = Deferred()
        call(lambda data: deferred.resolve(self._respond(request, shape(data))))
        return deferred.value if deferred.done else deferred

    # -- FindCoordinator ---------------------------------------------------------------------

    def handle_find_coordinator(self, request: Request) -> Any:
        body = request.body
        key_type = getattr(body, "key_type", GROUP_KEY_TYPE)
        host, port = self.config.advertised
        node: tuple[int, str, int] | None = (self.config.node_id, host, port)
        err = Errors.NONE
        if key_type == GROUP_KEY_TYPE:
            self.tick()
            node = self._group_coordinator_node(body.key)
            if node is None:
                err = Errors.COORDINATOR_NOT_AVAILABLE
        elif key_type != 1:
            err, node = Errors.INVALID_REQUEST, None
        node_id, host, port = node if node is not None else (-1, "", -1)
        message = None if err == Errors.NONE else f"{Errors(err).name} for key {body.key!r}"
        return self._respond(request, {
            "throttle_time": 0, "error_code": err, "error_message": message,
            "node_id": node_id, "host": host, "port": port,
        })  # fmt: skip

    def _group_coordinator_node(self, group_id: str) -> tuple[int, str, int] | None:
        p = self.coordinator.partition_for(group_id)
        cluster = self.cluster
        image = cluster.image
        reg = image.partition(OFFSETS_TOPIC, p)
        if reg is None:
            if OFFSETS_TOPIC not in image.topics:
                rf = min(self.config.offsets_topic_replication_factor,
                         max(len(image.live_brokers()), 1))  # fmt: skip
                cluster.create_internal_topic(OFFSETS_TOPIC, self.coordinator.config.num_partitions,
                                              rf, {"cleanup.policy": "compact"})  # fmt: skip
            return None
        if reg.leader < 0 or not image.is_live(reg.leader) or reg.leader not in image.brokers:
            return None
        b = image.brokers[reg.leader]
        return reg.leader, b.host, b.port

    # -- JoinGroup / SyncGroup / Heartbeat / LeaveGroup ----------------------------------------

    def handle_join_group(self, request: Request) -> Any:
        b = request.body
        session = ms(b.session_timeout)
        rebalance = ms(getattr(b, "rebalance_timeout", b.session_timeout))  # v0: the session's
        return self._deferred(request, lambda respond: self.coordinator.join_group(
            self.clock.monotonic_ms(), respond, group_id=b.group_id, member_id=b.member_id,
            group_instance_id=getattr(b, "group_instance_id", None),
            client_id=request.client_id or "", client_host=CLIENT_HOST,
            session_timeout_ms=session, rebalance_timeout_ms=rebalance,
            protocol_type=b.protocol_type,
            protocols=[(p.name, bytes(p.metadata)) for p in b.protocols],
            require_known_member=request.api_version >= 4,
        ), _nullable_protocol_name_from_v7 if request.api_version < 7 else _same)  # fmt: skip

    def handle_sync_group(self, request: Request) -> Any:
        b = request.body
        assignments: dict[str, bytes] = {}
        for a in b.assignments:
            assignments[a.member_id] = bytes(a.assignment)
        return self._deferred(request, lambda respond: self.coordinator.sync_group(
            self.clock.monotonic_ms(), respond, group_id=b.group_id, generation_id=b.generation_id,
            member_id=b.member_id, protocol_type=getattr(b, "protocol_type", None),
            protocol_name=getattr(b, "protocol_name", None), assignments=assignments,
        ))  # fmt: skip

    def handle_heartbeat(self, request: Request) -> Any:
        b = request.body
        err = self.coordinator.heartbeat(self.clock.monotonic_ms(), group_id=b.group_id,
                                         generation_id=b.generation_id, member_id=b.member_id)
        return self._respond(request, {"throttle_time": 0, "error_code": err})

    def handle_leave_group(self, request: Request) -> Any:
        b = request.body
        if request.api_version < 3:
            ids, instances = [b.member_id], [None]
        else:
            ids = [m.member_id for m in b.members]
            instances = [m.group_instance_id for m in b.members]
        top, per = self.coordinator.leave_group(self.clock.monotonic_ms(), b.group_id, ids)
        if request.api_version < 3 and top == Errors.NONE:
            top = per[0]
        members = [{"member_id": i, "group_instance_id": g, "error_code": e}
                   for i, g, e in zip(ids, instances, per, strict=True)]  # fmt: skip
        return self._respond(request, {"throttle_time": 0, "error_code": top, "members": members})

    # -- OffsetCommit / OffsetFetch ------------------------------------------------------------

    def _partition_exists(self, topic: str, partition: int) -> bool:
        return self.cluster.image.partition(topic, partition) is not None

    def handle_offset_commit(self, request: Request) -> Any:
        b = request.body
        now = self.clock.wall_ms()
        rejected: dict[tuple[str, int], int] = {}
        offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        order: list[tuple[str, int]] = []
        for t in b.topics:
            for p in t.partitions:
                tp = (t.name, p.partition_index)
                order.append(tp)
                metadata = p.committed_metadata or ""
                if not self._partition_exists(*tp):
                    rejected[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                elif len(metadata.encode()) > self.config.offset_metadata_max_bytes:
                    rejected[tp] = Errors.OFFSET_METADATA_TOO_LARGE
                else:
                    offsets[tp] = OffsetAndMetadata(p.committed_offset,
                                                    getattr(p, "committed_leader_epoch", -1),
                                                    metadata, now)  # fmt: skip

        def shape(codes: dict) -> dict:
            codes = {**codes, **rejected}
            if not b.group_id:
                codes = dict.fromkeys(codes, Errors.INVALID_GROUP_ID)
            by_topic: dict[str, list[dict]] = {}
            for topic, part in order:
                by_topic.setdefault(topic, []).append(
                    {"partition_index": part, "error_code": codes[(topic, part)]})
            return {"throttle_time": 0, "topics": [{"name": n, "partitions": ps}
                                                   for n, ps in by_topic.items()]}  # fmt: skip

        if not b.group_id:
            return self._respond(request, shape(dict.fromkeys(order, Errors.INVALID_GROUP_ID)))
        return self._deferred(request, lambda respond: self.coordinator.commit_offsets(
            self.clock.monotonic_ms(), respond, group_id=b.group_id,
            generation_id=b.generation_id_or_member_epoch,
            member_id=b.member_id, offsets=offsets,
        ), shape)  # fmt: skip

    def handle_offset_fetch(self, request: Request) -> Any:
        b = request.body
        wanted = None if b.topics is None else [
            (t.name, p) for t in b.topics for p in t.partition_indexes]  # fmt: skip
        err, found = self.coordinator.fetch_offsets(b.group_id, wanted)
        if err != Errors.NONE and wanted is not None:
            found = dict.fromkeys(wanted)
        by_topic: dict[str, list[dict]] = {}
        for (topic, p), o in found.items():
            by_topic.setdefault(topic, []).append({
                "partition_index": p, "committed_offset": o.offset if o else -1,
                "committed_leader_epoch": o.leader_epoch if o else -1,
                "metadata": o.metadata if o else "", "error_code": err,
            })  # fmt: skip
        return self._respond(request, {
            "throttle_time": 0, "error_code": err,
            "topics": [{"name": n, "partitions": ps} for n, ps in by_topic.items()],
        })  # fmt: skip

    # -- ListGroups / DescribeGroups / DeleteGroups --------------------------------------------

    def handle_list_groups(self, request: Request) -> Any:
        self.tick()
        states = set(getattr(request.body, "states_filter", ()) or ())
        # v5 (KIP-848): every group here is "classic"; a filter without it lists none.
        types = {t.lower() for t in getattr(request.body, "types_filter", ()) or ()}
        groups = [{"group_id": g.group_id, "protocol_type": g.protocol_type or "",
                   "group_state": g.state.value, "group_type": "classic"}
                  for g in self.coordinator.list_groups(states)
                  if not types or "classic" in types]  # fmt: skip
        return self._respond(request, {"throttle_time": 0, "error_code": Errors.NONE,
                                       "groups": groups})  # fmt: skip

    def handle_describe_groups(self, request: Request) -> Any:
        out = []
        for gid in request.body.groups:
            err, g = self.coordinator.describe_group(gid)
            entry: dict[str, Any] = {"error_code": err, "group_id": gid, "group_state": "Dead",
                                     "protocol_type": "", "protocol_data": "", "members": [],
                                     "authorized_operations": authorized_operations(
                                         getattr(request.body, "include_authorized_operations",
                                                 False), GROUP_OPERATIONS)}  # fmt: skip
            if g is not None:
                entry.update(group_state=g.state.value, protocol_type=g.protocol_type or "",
                             protocol_data=g.protocol_name or "")  # fmt: skip
                if g.state.value == "Stable":  # Kafka sends metadata/assignment only when stable
                    entry["members"] = [{
                        "member_id": m.member_id, "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id, "client_host": m.client_host,
                        "member_metadata": m.metadata_for(g.protocol_name),
                        "member_assignment": m.assignment,
                    } for m in g.members.values()]  # fmt: skip
                else:
                    entry["members"] = [{
                        "member_id": m.member_id, "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id, "client_host": m.client_host,
                        "member_metadata": b"", "member_assignment": b"",
                    } for m in g.members.values()]  # fmt: skip
            out.append(entry)
        return self._respond(request, {"throttle_time": 0, "groups": out})

    def handle_offset_delete(self, request: Request) -> Any:
        from .kafka_apis import Deferred

        b = request.body
        wanted = [(t.name, p.partition_index) for t in b.topics for p in t.partitions]
        deferred = Deferred()

        def done(err: int, results: dict[tuple[str, int], int]) -> None:
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for tp in wanted if err == Errors.NONE else []:
                by_topic.setdefault(tp[0], []).append(
                    {"partition_index": tp[1], "error_code": results[tp]})
            deferred.resolve(self._respond(request, {
                "error_code": err, "throttle_time": 0,
                "topics": [{"name": n, "partitions": ps} for n, ps in by_topic.items()]}))

        self.coordinator.delete_offsets(b.group_id, wanted, done)
        return deferred.value if deferred.done else deferred

    def handle_delete_groups(self, request: Request) -> Any:
        from .kafka_apis import Deferred

        names = list(request.body.groups_names)
        results: dict[str, int] = {}
        deferred = Deferred()

        def one(gid: str) -> Callable[[int], None]:
            def done(code: int) -> None:
                results[gid] = code
                if len(results) == len(set(names)):
                    deferred.resolve(self._respond(request, {"throttle_time": 0, "results": [
                        {"group_id": n, "error_code": results[n]} for n in dict.fromkeys(names)
                    ]}))  # fmt: skip
            return done

        if not names:
            return self._respond(request, {"throttle_time": 0, "results": []})
        for gid in dict.fromkeys(names):
            self.coordinator.delete_group(self.clock.monotonic_ms(), gid, one(gid))
        return deferred.value if deferred.done else deferred
