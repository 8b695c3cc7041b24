"""The group APIs through KafkaApis of a lone broker (combined mode, lone_broker.py):
each illegal request gets Kafka's error, and committed offsets and group membership live in
__consumer_offsets, so a restarted broker loads them back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from broker_app.config import BrokerConfig
from broker_app.protocol.apis import ApiKey
from broker_app.protocol.codec import decode_request, encode_request, request_class
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors as E
from broker_app.protocol.errors import ProtocolError
from broker_app.server.kafka_apis import Deferred
from tests.unit.protocol.lone_broker import LoneBroker


def _broker(data: Path) -> LoneBroker:
    return LoneBroker(BrokerConfig(node_id=1, data_dir=data, port=9092,
                                   offsets_topic_num_partitions=3,
                                   group_initial_rebalance_delay_ms=0))  # fmt: skip


def _call(broker: LoneBroker, api_key: int, version: int, data: dict) -> Any:
    body = build(request_class(api_key, version), data)
    result = broker.submit(decode_request(encode_request("client-a", 1, body)[4:]))
    if isinstance(result, Deferred):
        broker.apis.groups.tick()  # the join phase ends on the coordinator's timer
        assert result.done, "the request is still parked"
        return result.value
    return broker.resolve(result)


def _join(broker, member_id: str = "", version: int = 5) -> Any:
    return _call(broker, ApiKey.JOIN_GROUP, version, {
        "group_id": "g", "session_timeout": 10_000, "rebalance_timeout": 10_000,
        "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"sub"}], "reason": None,
    })  # fmt: skip


def _commit(broker, offset: int, generation: int = -1, member: str = "") -> int:
    resp = _call(broker, ApiKey.OFFSET_COMMIT, 8, {
        "group_id": "g", "generation_id_or_member_epoch": generation, "member_id": member,
        "group_instance_id": None, "topics": [{"name": "t", "partitions": [{
            "partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
            "committed_metadata": ""}]}],
    })  # fmt: skip
    return resp.topics[0].partitions[0].error_code.value


def _find(broker: LoneBroker, key: str = "g", key_type: int = 0) -> Any:
    if key_type == 0:  # a group: asked again while __consumer_offsets is created and loaded
        return broker.find_coordinator(key)
    return _call(broker, ApiKey.FIND_COORDINATOR, 3, {"key": key, "key_type": key_type})


def test_group_lifecycle_survives_a_restart(tmp_path: Path) -> None:
    broker = _broker(tmp_path / "d")
    try:
        broker.create_topic("t")
        assert _commit(broker, 1) == E.NOT_COORDINATOR  # no __consumer_offsets yet
        assert _find(broker).error_code.value == E.NONE
        first = _join(broker)
        assert first.error_code.value == E.MEMBER_ID_REQUIRED  # KIP-394 from v4
        joined = _join(broker, first.member_id)
        assert (joined.error_code.value, joined.generation_id) == (E.NONE, 1)
        assert joined.leader == joined.member_id == first.member_id
        assert joined.member_id.startswith("client-a-")
        sync = _call(broker, ApiKey.SYNC_GROUP, 5, {
            "group_id": "g", "generation_id": 1, "member_id": joined.member_id,
            "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": joined.member_id, "assignment": b"all"}],
        })  # fmt: skip
        assert (sync.error_code.value, sync.assignment) == (E.NONE, b"all")
        assert _commit(broker, 7, 1, joined.member_id) == E.NONE
        assert _commit(broker, 8, 2, joined.member_id) == E.ILLEGAL_GENERATION
    finally:
        broker.close()
    broker = _broker(tmp_path / "d")
    try:
        broker.apis.groups.tick()  # leadership of __consumer_offsets: load it
        fetched = _call(broker, ApiKey.OFFSET_FETCH, 7, {
            "group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}],
            "require_stable": False})  # fmt: skip
        assert fetched.topics[0].partitions[0].committed_offset == 7
        hb = _call(broker, ApiKey.HEARTBEAT, 4, {"group_id": "g", "generation_id": 1,
                                               "member_id": joined.member_id,
                                               "group_instance_id": None})  # fmt: skip
        assert hb.error_code.value == E.NONE  # the member survived the restart with its group
        described = _call(broker, ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["g", "none"],
                                                            "include_authorized_operations": False})
        g, none = described.groups
        assert (g.group_state, g.protocol_data, g.members[0].member_assignment) == (
            "Stable", "range", b"all")
        assert (none.error_code.value, none.group_state) == (E.NONE, "Dead")
        listed = _call(broker, ApiKey.LIST_GROUPS, 4, {"states_filter": []})
        assert [(x.group_id, x.group_state) for x in listed.groups] == [("g", "Stable")]
    finally:
        broker.close()


def test_illegal_group_requests(tmp_path: Path) -> None:
    broker = _broker(tmp_path / "d")
    try:
        broker.create_topic("t")
        _find(broker)
        assert _find(broker, key_type=2).error_code.value == E.INVALID_REQUEST
        assert _commit(broker, 1, generation=5, member="m") == E.ILLEGAL_GENERATION
        hb = _call(broker, ApiKey.HEARTBEAT, 0, {"group_id": "g", "generation_id": 1,
                                               "member_id": "m"})  # fmt: skip
        assert hb.error_code.value == E.UNKNOWN_MEMBER_ID
        assert _join(broker, "made-up").error_code.value == E.UNKNOWN_MEMBER_ID
        bad = _call(broker, ApiKey.JOIN_GROUP, 1, {
            "group_id": "g", "session_timeout": 10, "rebalance_timeout": 10, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]})
        assert bad.error_code.value == E.INVALID_SESSION_TIMEOUT and bad.protocol_name == ""
        leave = _call(broker, ApiKey.LEAVE_GROUP, 0, {"group_id": "g", "member_id": "m"})
        assert leave.error_code.value == E.UNKNOWN_MEMBER_ID
        deleted = _call(broker, ApiKey.DELETE_GROUPS, 2, {"groups_names": ["nope"]})
        assert deleted.results[0].error_code.value == E.GROUP_ID_NOT_FOUND
        empty = _call(broker, ApiKey.OFFSET_COMMIT, 2, {
            "group_id": "", "generation_id_or_member_epoch": -1, "member_id": "",
            "retention_time": -1, "topics": [{"name": "t", "partitions": [{
                "partition_index": 0, "committed_offset": 1, "committed_metadata": ""}]}]})
        assert empty.topics[0].partitions[0].error_code.value == E.INVALID_GROUP_ID
        assert _commit(broker, 1) == E.NONE and _call(broker, ApiKey.DELETE_GROUPS, 2, {
            "groups_names": ["g"]}).results[0].error_code.value == E.NONE  # fmt: skip
    finally:
        broker.close()


def _offsets_led_with_follower(tmp_path: Path, acks: int) -> tuple[LoneBroker, Any]:
    config = BrokerConfig(node_id=1, data_dir=tmp_path / "d", port=9092,
                          offsets_topic_num_partitions=1, offsets_commit_required_acks=acks)
    broker = LoneBroker(config)
    broker.create_topic("t")
    rm = broker.replica_manager
    # A follower 2 in the ISR, set by hand: a lone broker has no second broker (and no
    # FindCoordinator here, so the controller never creates __consumer_offsets itself).
    rm.apply_partition("__consumer_offsets", 0, 1, 0, (1, 2), (1, 2), 0, 1)
    broker.apis.groups.tick()
    return broker, rm


def _follower_fetch(rm: Any) -> None:
    from broker_app.replication.replica_manager import FetchRequestPartition

    leo = rm.get_partition("__consumer_offsets", 0).log.log_end_offset
    rm.fetch_messages({("__consumer_offsets", 0): FetchRequestPartition(leo, 1 << 20, 0)},
                      1 << 20, replica_id=2)  # fmt: skip


def test_commit_answered_only_after_the_follower_has_it(tmp_path: Path) -> None:
    broker, rm = _offsets_led_with_follower(tmp_path, -1)
    try:
        body = build(request_class(ApiKey.OFFSET_COMMIT, 8), {
            "group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None, "topics": [{"name": "t", "partitions": [{
                "partition_index": 0, "committed_offset": 3, "committed_leader_epoch": -1,
                "committed_metadata": ""}]}]})  # fmt: skip
        result = broker.submit(decode_request(encode_request("c", 1, body)[4:]))
        assert isinstance(result, Deferred) and not result.done  # parked in DelayedProduce
        _follower_fetch(rm)  # the follower has the record: the HW passes it
        assert result.done and result.value.topics[0].partitions[0].error_code.value == E.NONE
    finally:
        broker.close()


def test_legacy_acks_1_answers_before_replication(tmp_path: Path) -> None:
    broker, rm = _offsets_led_with_follower(tmp_path, 1)
    try:
        assert _commit(broker, 3) == E.NONE  # answered at once; the follower has nothing yet
        part = rm.get_partition("__consumer_offsets", 0)
        assert part.high_watermark < part.log.log_end_offset
    finally:
        broker.close()


def _heartbeat(broker, member: str, generation: int) -> int:
    return _call(broker, ApiKey.HEARTBEAT, 4, {
        "group_id": "g", "generation_id": generation, "member_id": member,
        "group_instance_id": None}).error_code.value  # fmt: skip


def test_group_requests_during_a_rebalance_and_against_a_live_group(tmp_path: Path) -> None:
    broker = _broker(tmp_path / "d")
    try:
        broker.create_topic("t")
        _find(broker)
        m1 = _join(broker, _join(broker).member_id)
        assert (m1.error_code.value, m1.generation_id) == (E.NONE, 1)
        _call(broker, ApiKey.SYNC_GROUP, 5, {
            "group_id": "g", "generation_id": 1, "member_id": m1.member_id,
            "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": m1.member_id, "assignment": b"a"}]})  # fmt: skip
        # A join with another protocol type than the group's: INCONSISTENT_GROUP_PROTOCOL.
        other = _call(broker, ApiKey.JOIN_GROUP, 5, {
            "group_id": "g", "session_timeout": 10_000, "rebalance_timeout": 10_000,
            "member_id": "", "group_instance_id": None, "protocol_type": "connect",
            "protocols": [{"name": "x", "metadata": b""}], "reason": None})  # fmt: skip
        assert other.error_code.value == E.INCONSISTENT_GROUP_PROTOCOL
        # A live group cannot be deleted.
        deleted = _call(broker, ApiKey.DELETE_GROUPS, 2, {"groups_names": ["g"]})
        assert deleted.results[0].error_code.value == E.NON_EMPTY_GROUP
        # A second member starts a rebalance (its join parks until the first rejoins): the
        # first member's heartbeat gets REBALANCE_IN_PROGRESS (rejoin); its commit under the
        # current generation is still accepted, as Kafka accepts it in PreparingRebalance (the
        # commit-before-revoke pattern).
        m2_id = _join(broker).member_id
        body = build(request_class(ApiKey.JOIN_GROUP, 5), {
            "group_id": "g", "session_timeout": 10_000, "rebalance_timeout": 10_000,
            "member_id": m2_id, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"sub"}], "reason": None})  # fmt: skip
        parked = broker.submit(decode_request(encode_request("client-b", 2, body)[4:]))
        assert isinstance(parked, Deferred) and not parked.done
        assert _heartbeat(broker, m1.member_id, 1) == E.REBALANCE_IN_PROGRESS
        assert _commit(broker, 3, 1, m1.member_id) == E.NONE
        rejoined = _join(broker, m1.member_id)
        assert (rejoined.error_code.value, rejoined.generation_id) == (E.NONE, 2)
        # Joined but not synced (CompletingRebalance): a commit is REBALANCE_IN_PROGRESS.
        assert _commit(broker, 4, 2, m1.member_id) == E.REBALANCE_IN_PROGRESS
        # ...but member and generation are checked first (ClassicGroup.validateOffsetCommit):
        # a commit of the old generation is ILLEGAL_GENERATION, so the consumer rejoins
        # (librdkafka's 0113 cooperative rebalance test), and an unknown member is told so.
        assert _commit(broker, 4, 1, m1.member_id) == E.ILLEGAL_GENERATION
        assert _commit(broker, 4, 2, "nobody") == E.UNKNOWN_MEMBER_ID
        assert _commit(broker, 4, -1, "") == E.UNKNOWN_MEMBER_ID  # no member in a live group
        sync_old = _call(broker, ApiKey.SYNC_GROUP, 5, {
            "group_id": "g", "generation_id": 1, "member_id": m1.member_id,
            "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
            "assignments": []})  # fmt: skip
        assert sync_old.error_code.value == E.ILLEGAL_GENERATION
    finally:
        broker.close()


def test_truncated_group_requests_are_refused_not_crashed_on(tmp_path: Path) -> None:
    """Every group API request cut at every length either fails to decode (ProtocolError: the
    network layer closes that connection) or gets an answer; the handler never raises."""
    broker = _broker(tmp_path / "d")
    requests = {
        (ApiKey.JOIN_GROUP, 5): {
            "group_id": "g", "session_timeout": 10_000, "rebalance_timeout": 10_000,
            "member_id": "m", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"sub"}], "reason": None},
        (ApiKey.SYNC_GROUP, 5): {
            "group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None,
            "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": "m", "assignment": b"a"}]},
        (ApiKey.HEARTBEAT, 4): {"group_id": "g", "generation_id": 1, "member_id": "m",
                                "group_instance_id": None},
        (ApiKey.LEAVE_GROUP, 3): {"group_id": "g", "members": [
            {"member_id": "m", "group_instance_id": None}]},
        (ApiKey.OFFSET_COMMIT, 8): {
            "group_id": "g", "generation_id_or_member_epoch": 1, "member_id": "m",
            "group_instance_id": None, "topics": [{"name": "t", "partitions": [{
                "partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                "committed_metadata": ""}]}]},
        (ApiKey.OFFSET_FETCH, 7): {"group_id": "g", "topics": [
            {"name": "t", "partition_indexes": [0]}], "require_stable": False},
    }  # fmt: skip
    try:
        broker.create_topic("t")
        _find(broker)
        answered = refused = 0
        for (key, version), data in requests.items():
            frame = encode_request("client-a", 1, build(request_class(key, version), data))[4:]
            for cut in range(len(frame)):
                try:
                    request = decode_request(frame[:cut])
                except ProtocolError:
                    refused += 1
                    continue
                result = broker.submit(request)  # must not raise
                if isinstance(result, Deferred):
                    broker.apis.groups.tick()
                answered += 1
        assert refused > 0 and refused + answered == sum(
            len(encode_request("client-a", 1, build(request_class(k, v), d))) - 4
            for (k, v), d in requests.items())
    finally:
        broker.close()


def _subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0: version, topics, null user data."""
    import struct

    body = struct.pack(">hi", 0, len(topics))
    for t in topics:
        body += struct.pack(">h", len(t)) + t.encode()
    return body + struct.pack(">i", -1)


def _offset_delete(broker, group: str, *tps: tuple[str, int]) -> tuple[int, dict]:
    resp = _call(broker, ApiKey.OFFSET_DELETE, 0, {"group_id": group, "topics": [
        {"name": t, "partitions": [{"partition_index": p}]} for t, p in tps]})  # fmt: skip
    return resp.error_code.value, {(t.name, p.partition_index): p.error_code.value
                                   for t in resp.topics for p in t.partitions}  # fmt: skip


def test_offset_delete_and_list_groups_type_filter(tmp_path: Path) -> None:
    """OffsetDelete (KIP-496) as Kafka's OffsetMetadataManager.deleteOffsets, which librdkafka's
    admin test (0081 DeleteConsumerGroupOffsets) uses; ListGroups v5's type filter."""
    broker = _broker(tmp_path / "d")
    try:
        for t in ("t", "u"):
            broker.create_topic(t)
        _find(broker)
        assert _offset_delete(broker, "g", ("t", 0)) == (E.GROUP_ID_NOT_FOUND, {})
        # An empty group (offsets only): deleted, and gone from OffsetFetch.
        assert _commit(broker, 5) == E.NONE
        assert _offset_delete(broker, "g", ("t", 0)) == (E.NONE, {("t", 0): E.NONE})
        _, found = broker.apis.groups.coordinator.fetch_offsets("g", [("t", 0)])
        assert found[("t", 0)] is None
        # A live consumer group subscribed to t: t's offsets stay, u's may go.
        _commit(broker, 6)  # t-0 again, while the group is still empty
        joined = _call(broker, ApiKey.JOIN_GROUP, 5, {
            "group_id": "g", "session_timeout": 10_000, "rebalance_timeout": 10_000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": _subscription("t")}], "reason": None})
        joined = _call(broker, ApiKey.JOIN_GROUP, 5, {
            "group_id": "g", "session_timeout": 10_000, "rebalance_timeout": 10_000,
            "member_id": joined.member_id, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": _subscription("t")}], "reason": None})
        assert joined.error_code.value == E.NONE
        err, parts = _offset_delete(broker, "g", ("t", 0), ("u", 0))
        assert (err, parts) == (E.NONE, {("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC,
                                         ("u", 0): E.NONE})  # fmt: skip
        # A live group of another protocol type keeps every offset.
        other = _call(broker, ApiKey.JOIN_GROUP, 5, {
            "group_id": "c", "session_timeout": 10_000, "rebalance_timeout": 10_000,
            "member_id": "", "group_instance_id": None, "protocol_type": "connect",
            "protocols": [{"name": "x", "metadata": b""}], "reason": None})  # fmt: skip
        _call(broker, ApiKey.JOIN_GROUP, 5, {
            "group_id": "c", "session_timeout": 10_000, "rebalance_timeout": 10_000,
            "member_id": other.member_id, "group_instance_id": None, "protocol_type": "connect",
            "protocols": [{"name": "x", "metadata": b""}], "reason": None})  # fmt: skip
        assert _offset_delete(broker, "c", ("t", 0)) == (E.NON_EMPTY_GROUP, {})

        def listed(types: list[str]) -> list[str]:
            resp = _call(broker, ApiKey.LIST_GROUPS, 5, {"states_filter": [],
                                                       "types_filter": types})
            return sorted(g.group_id for g in resp.groups)

        assert listed([]) == listed(["Classic"]) == ["c", "g"]
        assert listed(["consumer"]) == []
    finally:
        broker.close()
