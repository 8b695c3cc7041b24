"""GroupCoordinator: consumer groups (classic protocol) and their committed offsets, sans-I/O.

As in Kafka, the coordinator of a group is the leader of the group's `__consumer_offsets`
partition (records.partition_for). Everything a group must keep across a coordinator failover —
committed offsets and the group's generation, members and assignment — is written as records to
that partition through `OffsetsLog.append`, which the edge implements with an acks=all produce
(ReplicaManager's DelayedProduce purgatory), so an OffsetCommit or a leader's SyncGroup is
answered only once the records are replicated to the ISR (offsets.commit.required.acks = -1, the
`commit_required_acks` setting; 1 is the legacy switch that answers before replication).

Ownership follows leadership: `become_leader(p)` marks partition p loading (requests for its
groups get COORDINATOR_LOAD_IN_PROGRESS), the edge reads the partition's log and calls
`load(p, records, now_ms)`; `resign(p)` drops its groups and answers waiting requests with
NOT_COORDINATOR. Groups of a partition this broker does not lead get NOT_COORDINATOR.

Membership follows Kafka's classic GroupCoordinator: JoinGroup (KIP-394 MEMBER_ID_REQUIRED for
v4+ joins without a member id; group.initial.rebalance.delay.ms for an empty group's first
join phase), SyncGroup (the leader's assignment is relayed as is: eager and cooperative-sticky
are the clients' business), Heartbeat, LeaveGroup, session and rebalance timeouts in `tick`.
Responses are plain dicts given to a `respond` callback (JoinGroup and SyncGroup wait for other
members; commits wait for replication). Time is always the caller's `now_ms`.

Differences from Kafka (say so when it matters): no static membership (KIP-345: a
group.instance.id is stored and reported but gives no fencing or id reuse); no group.max.size;
`__consumer_offsets` is not compacted (cleanup.policy=compact is set but this broker has no log
cleaner), so loading replays the whole partition; offsets never expire (offsets.retention.minutes).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from broker_app.protocol.error_codes import Errors

from .group_metadata import ClassicGroup, GroupState, Member, Respond
from .records import (
    CoordinatorRecordError,
    GroupKey,
    OffsetAndMetadata,
    OffsetKey,
    group_metadata_key,
    group_metadata_value,
    offset_commit_key,
    offset_commit_value,
    parse_group_value,
    parse_key,
    parse_offset_value,
    partition_for,
)

log = logging.getLogger(__name__)

__all__ = ["GroupCoordinator", "GroupCoordinatorConfig", "OffsetAndMetadata", "OffsetsLog"]

Record = tuple[bytes, bytes | None]
TopicPartition = tuple[str, int]


class OffsetsLog(Protocol):
    def append(self, partition: int, records: list[Record], done: Callable[[int], None]) -> None:
        """Append to __consumer_offsets-<partition> as leader; done(error_code) once the records
        are replicated (acks=all) or failed. May call done before returning."""


@dataclass(frozen=True)
class GroupCoordinatorConfig:
    num_partitions: int = 50  # offsets.topic.num.partitions
    min_session_timeout_ms: int = 6_000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3_000  # group.initial.rebalance.delay.ms
    commit_required_acks: int = -1  # offsets.commit.required.acks (1 = legacy, unreplicated)


def store_error(code: int, for_offsets: bool) -> int:
    """Kafka's mapping of a failed __consumer_offsets append to the client's error."""
    if code in (Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_ENOUGH_REPLICAS,
                Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Errors.REQUEST_TIMED_OUT):  # fmt: skip
        return Errors.COORDINATOR_NOT_AVAILABLE
    if code in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.KAFKA_STORAGE_ERROR):
        return Errors.NOT_COORDINATOR
    if code in (Errors.MESSAGE_TOO_LARGE, Errors.RECORD_LIST_TOO_LARGE):
        return Errors.INVALID_COMMIT_OFFSET_SIZE if for_offsets else Errors.UNKNOWN_SERVER_ERROR
    return code if code == Errors.NONE else Errors.UNKNOWN_SERVER_ERROR


class GroupCoordinator:
    def __init__(self, config: GroupCoordinatorConfig, log: OffsetsLog) -> None:
        self.config = config
        self.log = log
        self.loading: set[int] = set()
        self.owned: set[int] = set()
        self.groups: dict[str, ClassicGroup] = {}

    # -- ownership ----------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.num_partitions)

    def become_leader(self, partition: int) -> None:
        self.owned.discard(partition)
        self._drop_groups(partition)
        self.loading.add(partition)

    def load(self, partition: int, records: Iterable[Record], now_ms: int) -> int:
        """Replay the partition's records (oldest first); returns how many were applied. A
        record that does not parse is skipped (logged by the edge), as Kafka skips unknown keys."""
        offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        groups: dict[str, Any] = {}
        applied = 0
        for key, value in records:
            try:
                k = parse_key(key)
                if isinstance(k, OffsetKey):
                    per = offsets.setdefault(k.group, {})
                    if value is None:
                        per.pop((k.topic, k.partition), None)
                    else:
                        per[(k.topic, k.partition)] = parse_offset_value(value)
                elif isinstance(k, GroupKey):
                    groups[k.group] = None if value is None else parse_group_value(value)
            except CoordinatorRecordError:
                continue
            applied += 1
        self._drop_groups(partition)
        for gid in set(offsets) | set(groups):
            if self.partition_for(gid) != partition:
                continue
            v = groups.get(gid)
            g = ClassicGroup.from_record(gid, v, now_ms) if v else ClassicGroup(gid)
            g.offsets = offsets.get(gid, {})
            if g.offsets or g.members or v is not None:
                self.groups[gid] = g
        self.loading.discard(partition)
        self.owned.add(partition)
        return applied

    def resign(self, partition: int) -> None:
        self.loading.discard(partition)
        self.owned.discard(partition)
        self._drop_groups(partition)

    def _drop_groups(self, partition: int) -> None:
        for gid in [g for g in self.groups if self.partition_for(g) == partition]:
            g = self.groups.pop(gid)
            for m in g.members.values():
                self._answer_join(m, Errors.NOT_COORDINATOR, g)
                self._answer_sync(m, Errors.NOT_COORDINATOR)
            g.transition(GroupState.DEAD, g.state_timestamp_ms)

    def coordinator_error(self, group_id: str | None) -> int:
        if not group_id:
            return Errors.INVALID_GROUP_ID
        p = self.partition_for(group_id)
        if p in self.loading:
            return Errors.COORDINATOR_LOAD_IN_PROGRESS
        if p not in self.owned:
            return Errors.NOT_COORDINATOR
        return Errors.NONE

    # -- JoinGroup ------------------------------------------------------------------------

    def join_group(self, now_ms: int, respond: Respond, *, group_id: str, member_id: str,
                   group_instance_id: str | None, client_id: str, client_host: str,
                   session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
                   protocols: list[tuple[str, bytes]],
                   require_known_member: bool) -> None:  # fmt: skip
        err = self.coordinator_error(group_id)
        if err == Errors.NONE and not (
            self.config.min_session_timeout_ms <= session_timeout_ms
            <= self.config.max_session_timeout_ms
        ):
            err = Errors.INVALID_SESSION_TIMEOUT
        if err != Errors.NONE:
            respond(self._join_error(err, member_id))
            return
        g = self.groups.get(group_id)
        if g is None:
            if member_id:  # a member id the coordinator never gave (or forgot on failover)
                respond(self._join_error(Errors.UNKNOWN_MEMBER_ID, member_id))
                return
            g = self.groups[group_id] = ClassicGroup(group_id, state_timestamp_ms=now_ms)
        names = [n for n, _ in protocols]
        if not g.supports(protocol_type, names):
            respond(self._join_error(Errors.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if not member_id:
            new_id = f"{client_id}-{uuid.uuid4()}"
            if require_known_member:  # KIP-394: the client must come back with this id
                g.pending_members[new_id] = now_ms + session_timeout_ms
                respond(self._join_error(Errors.MEMBER_ID_REQUIRED, new_id))
                return
            member_id = new_id
        elif member_id in g.pending_members:
            del g.pending_members[member_id]
        elif member_id not in g.members:
            respond(self._join_error(Errors.UNKNOWN_MEMBER_ID, member_id))
            return
        m = g.members.get(member_id)
        if m is None:
            m = Member(member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                       session_timeout_ms, protocol_type, list(protocols), now_ms)  # fmt: skip
            g.members[member_id] = m
            if g.leader_id is None:
                g.leader_id = member_id
            g.protocol_type = protocol_type
            m.join_respond = respond
            self._prepare_rebalance(g, now_ms, new_member=True,
                                    reason=f"new member {member_id}")  # fmt: skip
            self._maybe_complete_join(g, now_ms)
            return
        changed = m.protocols != list(protocols)
        m.protocols = list(protocols)
        m.rebalance_timeout_ms, m.session_timeout_ms = rebalance_timeout_ms, session_timeout_ms
        m.last_heartbeat_ms = now_ms
        if g.is_(GroupState.PREPARING_REBALANCE):
            self._answer_join(m, Errors.REBALANCE_IN_PROGRESS, g)  # a duplicate join replaces
            m.join_respond = respond
            self._maybe_complete_join(g, now_ms)
        elif g.is_(GroupState.COMPLETING_REBALANCE, GroupState.STABLE) and not changed and not (
            g.is_(GroupState.STABLE) and member_id == g.leader_id
        ):
            # Same metadata: the member missed the join response; give it the current one.
            respond(self._join_response(g, m))
        else:
            m.join_respond = respond
            why = "changed protocols" if changed else "the leader rejoined"
            self._prepare_rebalance(g, now_ms, reason=f"{member_id}: {why}")
            self._maybe_complete_join(g, now_ms)

    def _join_error(self, err: int, member_id: str) -> dict[str, Any]:
        return {"error_code": err, "generation_id": -1, "protocol_type": None,
                "protocol_name": None, "leader": "", "member_id": member_id, "members": [],
                "skip_assignment": False, "throttle_time": 0}  # fmt: skip

    def _join_response(self, g: ClassicGroup, m: Member) -> dict[str, Any]:
        members = []
        if m.member_id == g.leader_id:
            members = [{"member_id": x.member_id, "group_instance_id": x.group_instance_id,
                        "metadata": x.metadata_for(g.protocol_name)}
                       for x in g.members.values()]  # fmt: skip
        return {"error_code": Errors.NONE, "generation_id": g.generation_id,
                "protocol_type": g.protocol_type, "protocol_name": g.protocol_name,
                "leader": g.leader_id or "", "member_id": m.member_id, "members": members,
                "skip_assignment": False, "throttle_time": 0}  # fmt: skip

    def _answer_join(self, m: Member, err: int, g: ClassicGroup) -> None:
        if m.join_respond is not None:
            respond, m.join_respond = m.join_respond, None
            respond(self._join_error(err, m.member_id))

    def _answer_sync(self, m: Member, err: int) -> None:
        if m.sync_respond is not None:
            respond, m.sync_respond = m.sync_respond, None
            respond({"error_code": err, "protocol_type": None, "protocol_name": None,
                     "assignment": b"", "throttle_time": 0})  # fmt: skip

    def _prepare_rebalance(self, g: ClassicGroup, now_ms: int, new_member: bool = False,
                           reason: str = "") -> None:  # fmt: skip
        if g.is_(GroupState.COMPLETING_REBALANCE):
            for m in g.members.values():  # their generation is gone: they must rejoin
                self._answer_sync(m, Errors.REBALANCE_IN_PROGRESS)
        if g.is_(GroupState.PREPARING_REBALANCE):
            if g.initial_join and new_member:  # InitialDelayedJoin: each new member extends it
                g.join_deadline_ms = min(now_ms + self.config.initial_rebalance_delay_ms,
                                         g.initial_join_limit_ms)  # fmt: skip
            return
        g.initial_join = g.is_(GroupState.EMPTY) and self.config.initial_rebalance_delay_ms > 0
        timeout = g.max_rebalance_timeout_ms()
        if g.initial_join:
            g.initial_join_limit_ms = now_ms + timeout
            g.join_deadline_ms = min(now_ms + self.config.initial_rebalance_delay_ms,
                                     g.initial_join_limit_ms)  # fmt: skip
        else:
            g.join_deadline_ms = now_ms + timeout
        g.sync_deadline_ms = None
        g.transition(GroupState.PREPARING_REBALANCE, now_ms)
        log.info("group %s: preparing rebalance from generation %d (%d members): %s",
                 g.group_id, g.generation_id, len(g.members), reason)  # fmt: skip

    def _maybe_complete_join(self, g: ClassicGroup, now_ms: int, expired: bool = False) -> None:
        if not g.is_(GroupState.PREPARING_REBALANCE):
            return
        if g.initial_join and g.members:
            if not expired:
                return  # InitialDelayedJoin: wait out the delay even if everyone is here
            g.initial_join = False
            if not g.all_members_joined():  # then wait as a normal join phase would
                g.join_deadline_ms = g.initial_join_limit_ms
                if now_ms < g.initial_join_limit_ms:
                    return
        elif not expired and not g.all_members_joined():
            return
        for m in [m for m in g.members.values() if m.join_respond is None]:
            self._remove_member(g, m.member_id)  # did not rejoin within the rebalance timeout
        g.pending_members.clear()
        g.join_deadline_ms, g.initial_join = None, False
        g.generation_id += 1
        if not g.members:
            g.protocol_name, g.leader_id = None, None
            g.transition(GroupState.EMPTY, now_ms)
            self._store_group(g, now_ms, lambda err: None)
            return
        g.protocol_name = g.select_protocol()
        if g.leader_id not in g.members:
            g.leader_id = next(iter(g.members))
        g.transition(GroupState.COMPLETING_REBALANCE, now_ms)
        g.sync_deadline_ms = now_ms + g.max_rebalance_timeout_ms()
        log.info("group %s: generation %d, protocol %s, leader %s, members %s", g.group_id,
                 g.generation_id, g.protocol_name, g.leader_id, list(g.members))  # fmt: skip
        for m in g.members.values():
            m.last_heartbeat_ms = now_ms
            m.assignment = b""
            respond, m.join_respond = m.join_respond, None
            assert respond is not None
            respond(self._join_response(g, m))

    def _remove_member(self, g: ClassicGroup, member_id: str) -> None:
        m = g.members.pop(member_id, None)
        if m is None:
            return
        log.info("group %s: member %s removed", g.group_id, member_id)
        self._answer_join(m, Errors.UNKNOWN_MEMBER_ID, g)
        self._answer_sync(m, Errors.UNKNOWN_MEMBER_ID)
        if g.leader_id == member_id:
            g.leader_id = next(iter(g.members), None)

    # -- SyncGroup / Heartbeat / LeaveGroup ------------------------------------------------

    def sync_group(self, now_ms: int, respond: Respond, *, group_id: str, generation_id: int,
                   member_id: str, protocol_type: str | None, protocol_name: str | None,
                   assignments: dict[str, bytes]) -> None:  # fmt: skip
        def fail(err: int) -> None:
            respond({"error_code": err, "protocol_type": None, "protocol_name": None,
                     "assignment": b"", "throttle_time": 0})  # fmt: skip

        err = self.coordinator_error(group_id)
        g = self.groups.get(group_id)
        if err != Errors.NONE:
            return fail(err)
        if g is None or member_id not in g.members:
            return fail(Errors.UNKNOWN_MEMBER_ID)
        if generation_id != g.generation_id:
            return fail(Errors.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != g.protocol_type) or (
            protocol_name is not None and protocol_name != g.protocol_name
        ):
            return fail(Errors.INCONSISTENT_GROUP_PROTOCOL)
        m = g.members[member_id]
        m.last_heartbeat_ms = now_ms
        if g.is_(GroupState.PREPARING_REBALANCE):
            return fail(Errors.REBALANCE_IN_PROGRESS)
        if g.is_(GroupState.STABLE):
            respond(self._sync_response(g, m))
            return
        self._answer_sync(m, Errors.REBALANCE_IN_PROGRESS)  # a duplicate sync replaces the first
        m.sync_respond = respond
        if member_id != g.leader_id:
            return
        for mid, member in g.members.items():
            member.assignment = assignments.get(mid, b"")
        generation = g.generation_id

        def stored(err: int) -> None:
            if self.groups.get(group_id) is not g or g.generation_id != generation or not g.is_(
                GroupState.COMPLETING_REBALANCE
            ):
                return  # the group moved on while the write was in flight
            if err != Errors.NONE:
                code = store_error(err, for_offsets=False)
                for x in g.members.values():
                    x.assignment = b""
                    self._answer_sync(x, code)
                self._prepare_rebalance(g, now_ms)
                return
            g.sync_deadline_ms = None
            g.transition(GroupState.STABLE, now_ms)
            for x in g.members.values():
                if x.sync_respond is not None:
                    r, x.sync_respond = x.sync_respond, None
                    r(self._sync_response(g, x))

        self._store_group(g, now_ms, stored)

    def _sync_response(self, g: ClassicGroup, m: Member) -> dict[str, Any]:
        return {"error_code": Errors.NONE, "protocol_type": g.protocol_type,
                "protocol_name": g.protocol_name, "assignment": m.assignment,
                "throttle_time": 0}  # fmt: skip

    def heartbeat(self, now_ms: int, *, group_id: str, generation_id: int, member_id: str) -> int:
        err = self.coordinator_error(group_id)
        if err != Errors.NONE:
            return err
        g = self.groups.get(group_id)
        if g is None or member_id not in g.members:
            return Errors.UNKNOWN_MEMBER_ID
        if generation_id != g.generation_id:
            return Errors.ILLEGAL_GENERATION
        g.members[member_id].last_heartbeat_ms = now_ms
        if g.is_(GroupState.PREPARING_REBALANCE):
            return Errors.REBALANCE_IN_PROGRESS
        return Errors.NONE

    def leave_group(
        self, now_ms: int, group_id: str, member_ids: list[str]
    ) -> tuple[int, list[int]]:
        """(top-level error, one error per member id)."""
        err = self.coordinator_error(group_id)
        if err != Errors.NONE:
            return err, [err] * len(member_ids)
        g = self.groups.get(group_id)
        if g is None:
            return Errors.NONE, [Errors.UNKNOWN_MEMBER_ID] * len(member_ids)
        results = []
        left = False
        for mid in member_ids:
            if mid in g.pending_members:
                del g.pending_members[mid]
                results.append(Errors.NONE)
            elif mid in g.members:
                self._remove_member(g, mid)
                results.append(Errors.NONE)
                left = True
            else:
                results.append(Errors.UNKNOWN_MEMBER_ID)
        if left or g.is_(GroupState.PREPARING_REBALANCE):
            self._member_gone(g, now_ms)
        return Errors.NONE, results

    def _member_gone(self, g: ClassicGroup, now_ms: int) -> None:
        if g.is_(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(g, now_ms)
        self._maybe_complete_join(g, now_ms, expired=not g.members)

    # -- offsets ---------------------------------------------------------------------------

    def commit_offsets(self, now_ms: int, respond: Callable[[dict[TopicPartition, int]], None],
                       *, group_id: str, generation_id: int, member_id: str,
                       offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:  # fmt: skip
        err = self._commit_error(group_id, generation_id, member_id, now_ms)
        if err != Errors.NONE or not offsets:
            respond({tp: err for tp in offsets})
            return
        g = self.groups.setdefault(group_id, ClassicGroup(group_id, state_timestamp_ms=now_ms))
        records: list[Record] = [
            (offset_commit_key(group_id, t, p), offset_commit_value(o))
            for (t, p), o in offsets.items()
        ]

        def stored(code: int) -> None:
            if code == Errors.NONE and self.groups.get(group_id) is g:
                g.offsets.update(offsets)
            respond({tp: store_error(code, for_offsets=True) for tp in offsets})

        self.log.append(self.partition_for(group_id), records, stored)

    def _commit_error(self, group_id: str, generation_id: int, member_id: str, now_ms: int) -> int:
        err = self.coordinator_error(group_id)
        if err != Errors.NONE:
            return err
        g = self.groups.get(group_id)
        if g is None or (generation_id < 0 and g.is_(GroupState.EMPTY)):
            # A group only using Kafka to store offsets (assign mode, or admin tools).
            return Errors.NONE if generation_id < 0 else Errors.ILLEGAL_GENERATION
        # Kafka's ClassicGroup.validateOffsetCommit: member and generation first, so a member
        # of an older generation learns it must rejoin (ILLEGAL_GENERATION), and only a
        # current member committing before its SyncGroup hears REBALANCE_IN_PROGRESS.
        if generation_id >= 0 or member_id:
            if member_id not in g.members:
                return Errors.UNKNOWN_MEMBER_ID
            if generation_id != g.generation_id:
                return Errors.ILLEGAL_GENERATION
        elif not g.is_(GroupState.EMPTY):
            return Errors.UNKNOWN_MEMBER_ID  # v0-style commit to a group with members
        if g.is_(GroupState.COMPLETING_REBALANCE):
            return Errors.REBALANCE_IN_PROGRESS
        if member_id in g.members:
            g.members[member_id].last_heartbeat_ms = now_ms  # a commit counts as a heartbeat
        return Errors.NONE

    def fetch_offsets(
        self, group_id: str, partitions: list[TopicPartition] | None
    ) -> tuple[int, dict[TopicPartition, OffsetAndMetadata | None]]:
        err = self.coordinator_error(group_id)
        if err != Errors.NONE:
            return err, {}
        g = self.groups.get(group_id)
        stored = g.offsets if g else {}
        if partitions is None:
            return Errors.NONE, dict(sorted(stored.items()))
        return Errors.NONE, {tp: stored.get(tp) for tp in partitions}

    # -- ListGroups / DescribeGroups / DeleteGroups ----------------------------------------

    def list_groups(self, states: set[str] | None = None) -> list[ClassicGroup]:
        return [g for gid, g in sorted(self.groups.items())
                if self.partition_for(gid) in self.owned
                and (not states or g.state.value in states)]  # fmt: skip

    def describe_group(self, group_id: str) -> tuple[int, ClassicGroup | None]:
        err = self.coordinator_error(group_id)
        return (err, None) if err != Errors.NONE else (Errors.NONE, self.groups.get(group_id))

    def delete_group(self, now_ms: int, group_id: str, respond: Callable[[int], None]) -> None:
        err = self.coordinator_error(group_id)
        g = self.groups.get(group_id)
        if err == Errors.NONE and g is None:
            err = Errors.GROUP_ID_NOT_FOUND
        elif err == Errors.NONE and not g.is_(GroupState.EMPTY):  # type: ignore[union-attr]
            err = Errors.NON_EMPTY_GROUP
        if err != Errors.NONE:
            respond(err)
            return
        assert g is not None
        records: list[Record] = [(offset_commit_key(group_id, t, p), None) for t, p in g.offsets]
        records.append((group_metadata_key(group_id), None))

        def stored(code: int) -> None:
            if code == Errors.NONE and self.groups.get(group_id) is g and g.is_(GroupState.EMPTY):
                del self.groups[group_id]
                g.transition(GroupState.DEAD, now_ms)
            respond(store_error(code, for_offsets=False))

        self.log.append(self.partition_for(group_id), records, stored)

    def delete_offsets(self, group_id: str, partitions: list[TopicPartition],
                       respond: Callable[[int, dict[TopicPartition, int]], None]) -> None:
        """OffsetDelete (KIP-496), as Kafka's OffsetMetadataManager.deleteOffsets: a group that
        is not empty may lose offsets only if it is a consumer group and only of topics no
        member subscribes to (GROUP_SUBSCRIBED_TO_TOPIC per partition otherwise); the others
        become tombstones in __consumer_offsets. respond(top-level error, error per partition)."""
        err = self.coordinator_error(group_id)
        g = self.groups.get(group_id)
        if err == Errors.NONE and (g is None or g.is_(GroupState.DEAD)):
            err = Errors.GROUP_ID_NOT_FOUND
        elif err == Errors.NONE and not g.is_(GroupState.EMPTY) \
                and g.protocol_type != "consumer":  # type: ignore[union-attr]
            err = Errors.NON_EMPTY_GROUP
        if err != Errors.NONE:
            respond(err, {})
            return
        assert g is not None
        subscribed = g.subscribed_topics()
        results = {tp: Errors.GROUP_SUBSCRIBED_TO_TOPIC if tp[0] in subscribed else Errors.NONE
                   for tp in partitions}  # fmt: skip
        gone = [tp for tp, e in results.items() if e == Errors.NONE and tp in g.offsets]
        if not gone:
            respond(Errors.NONE, results)
            return

        def stored(code: int) -> None:
            if code == Errors.NONE and self.groups.get(group_id) is g:
                for tp in gone:
                    g.offsets.pop(tp, None)
            code = store_error(code, for_offsets=False)
            respond(code, results if code == Errors.NONE else {})

        self.log.append(self.partition_for(group_id),
                        [(offset_commit_key(group_id, t, p), None) for t, p in gone], stored)

    def _store_group(self, g: ClassicGroup, now_ms: int, done: Callable[[int], None]) -> None:
        value = group_metadata_value(g.to_record(now_ms))
        self.log.append(self.partition_for(g.group_id), [(group_metadata_key(g.group_id), value)],
                        done)  # fmt: skip

    # -- timers ------------------------------------------------------------------------------

    def tick(self, now_ms: int) -> None:
        """Session timeouts, the end of join phases, leaders that never synced."""
        for g in list(self.groups.values()):
            for mid, expiry in list(g.pending_members.items()):
                if now_ms >= expiry:
                    del g.pending_members[mid]
                    self._maybe_complete_join(g, now_ms)
            expired = [m.member_id for m in g.members.values()
                       if m.join_respond is None and m.sync_respond is None
                       and now_ms - m.last_heartbeat_ms >= m.session_timeout_ms]  # fmt: skip
            for mid in expired:
                self._remove_member(g, mid)
            if expired:
                self._member_gone(g, now_ms)
            if (g.is_(GroupState.PREPARING_REBALANCE) and g.join_deadline_ms is not None
                    and now_ms >= g.join_deadline_ms):  # fmt: skip
                self._maybe_complete_join(g, now_ms, expired=True)
            if (g.is_(GroupState.COMPLETING_REBALANCE) and g.sync_deadline_ms is not None
                    and now_ms >= g.sync_deadline_ms):  # fmt: skip
                for m in [m for m in g.members.values() if m.sync_respond is None]:
                    self._remove_member(g, m.member_id)
                self._member_gone(g, now_ms)
