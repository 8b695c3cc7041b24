"""GroupCoordinator state machine: exact interleavings of joins, syncs, heartbeats, leaves,
timeouts, commits and coordinator moves, driven by now_ms. The offsets log is a recorder whose
appends the test completes (or fails) explicitly, as the DelayedProduce path would."""

from __future__ import annotations

from typing import Any

import pytest

from broker_app.coordinator.group_coordinator import (
    GroupCoordinator,
    GroupCoordinatorConfig,
    OffsetAndMetadata,
)
from broker_app.coordinator.group_metadata import GroupState
from broker_app.coordinator.records import (
    CoordinatorRecordError,
    java_string_hash,
    parse_key,
    partition_for,
)
from broker_app.protocol.error_codes import Errors as E

SESSION, REBALANCE, DELAY = 10_000, 30_000, 3_000
G = "g"


class RecordingLog:
    """Appends wait until the test calls complete(); `auto` completes them at once."""

    def __init__(self, auto: bool = True) -> None:
        self.auto = auto
        self.records: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self.waiting: list[tuple[int, list, Any]] = []

    def append(self, partition: int, records: list, done: Any) -> None:
        self.waiting.append((partition, records, done))
        if self.auto:
            self.complete()

    def complete(self, code: int = E.NONE) -> None:
        waiting, self.waiting = self.waiting, []
        for partition, records, done in waiting:
            if code == E.NONE:
                self.records.setdefault(partition, []).extend(records)
            done(code)


class Client:
    """One consumer's view: the responses it got, in order."""

    def __init__(self, coord: GroupCoordinator, name: str) -> None:
        self.coord, self.name = coord, name
        self.member_id = ""
        self.generation = -1
        self.joins: list[dict] = []
        self.syncs: list[dict] = []

    def join(self, now: int, protocols: list[tuple[str, bytes]] | None = None,
             session: int = SESSION, kip394: bool = True) -> None:  # fmt: skip
        def got(resp: dict) -> None:
            self.joins.append(resp)
            if resp["error_code"] in (E.NONE, E.MEMBER_ID_REQUIRED):
                self.member_id = resp["member_id"]
            if resp["error_code"] == E.NONE:
                self.generation = resp["generation_id"]

        self.coord.join_group(
            now, got, group_id=G, member_id=self.member_id, group_instance_id=None,
            client_id=self.name, client_host="/127.0.0.1", session_timeout_ms=session,
            rebalance_timeout_ms=REBALANCE, protocol_type="consumer",
            protocols=[("range", b"r-" + self.name.encode())] if protocols is None else protocols,
            require_known_member=kip394,
        )  # fmt: skip

    def sync(self, now: int, assignments: dict[str, bytes] | None = None,
             generation: int | None = None) -> None:  # fmt: skip
        self.coord.sync_group(
            now, self.syncs.append, group_id=G,
            generation_id=self.generation if generation is None else generation,
            member_id=self.member_id, protocol_type="consumer", protocol_name=None,
            assignments=assignments or {},
        )  # fmt: skip

    def heartbeat(self, now: int) -> int:
        return self.coord.heartbeat(now, group_id=G, generation_id=self.generation,
                                    member_id=self.member_id)  # fmt: skip

    @property
    def last_join(self) -> dict:
        return self.joins[-1]


def make(auto: bool = True, delay: int = DELAY) -> tuple[GroupCoordinator, RecordingLog]:
    log = RecordingLog(auto)
    config = GroupCoordinatorConfig(num_partitions=3, initial_rebalance_delay_ms=delay)
    coord = GroupCoordinator(config, log)
    for p in range(3):
        coord.become_leader(p)
        coord.load(p, [], 0)
    return coord, log


def stable_pair(coord: GroupCoordinator) -> tuple[Client, Client]:
    a, b = Client(coord, "a"), Client(coord, "b")
    a.join(0)
    assert a.last_join["error_code"] == E.MEMBER_ID_REQUIRED
    a.join(1)
    b.join(2)
    b.join(3)
    assert not a.joins[1:] and not b.joins[1:]  # parked in the initial delay
    coord.tick(2 + DELAY)
    assert not a.joins[1:]  # b's join at 3 extended the delay to 3 + DELAY
    coord.tick(3 + DELAY)
    b.sync(DELAY + 3)
    a.sync(DELAY + 3, {a.member_id: b"A", b.member_id: b"B"})
    assert a.syncs[-1]["assignment"] == b"A" and b.syncs[-1]["assignment"] == b"B"
    return a, b


# -- records -----------------------------------------------------------------------------


def test_partition_for_uses_java_string_hashcode() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("abc") == 96354
    assert java_string_hash("polygenelubricants") == -(2**31)  # Utils.abs maps it to 0
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("abc", 50) == 96354 % 50
    assert java_string_hash("\u00e9t\u00e9") == (233 * 31 * 31 + 116 * 31 + 233)


def test_bad_key_names_the_field() -> None:
    with pytest.raises(CoordinatorRecordError, match="field group"):
        parse_key(b"\x00\x02\x00\x09ab")
    with pytest.raises(CoordinatorRecordError, match="unknown version 7"):
        parse_key(b"\x00\x07")


# -- join / sync ---------------------------------------------------------------------------


def test_two_members_join_in_initial_delay_then_sync_relays_leader_assignment() -> None:
    coord, _ = make()
    a, b = stable_pair(coord)
    ja, jb = a.last_join, b.last_join
    assert ja["generation_id"] == jb["generation_id"] == 1
    assert ja["leader"] == jb["leader"] == a.member_id
    assert {m["member_id"] for m in ja["members"]} == {a.member_id, b.member_id}
    assert jb["members"] == []  # only the leader gets the member list
    assert ja["protocol_name"] == "range"
    assert coord.groups[G].state is GroupState.STABLE
    assert a.heartbeat(DELAY + 4) == E.NONE


def test_follower_sync_waits_for_leader_and_leader_store_must_replicate() -> None:
    coord, log = make(auto=False)
    a, b = Client(coord, "a"), Client(coord, "b")
    a.join(0, kip394=False)
    b.join(1, kip394=False)
    coord.tick(DELAY + 1)
    b.sync(DELAY + 1)
    assert b.syncs == []
    a.sync(DELAY + 2, {a.member_id: b"A", b.member_id: b"B"})
    assert a.syncs == [] and b.syncs == []  # group metadata not yet replicated
    assert coord.groups[G].state is GroupState.COMPLETING_REBALANCE
    log.complete()
    assert [s["assignment"] for s in a.syncs + b.syncs] == [b"A", b"B"]


def test_failed_group_store_fails_syncs_and_rebalances() -> None:
    coord, log = make(auto=False)
    a = Client(coord, "a")
    a.join(0, kip394=False)
    coord.tick(DELAY)
    a.sync(DELAY + 1, {a.member_id: b"A"})
    log.complete(E.NOT_ENOUGH_REPLICAS)
    assert a.syncs[-1]["error_code"] == E.COORDINATOR_NOT_AVAILABLE
    assert coord.groups[G].state is GroupState.PREPARING_REBALANCE


def test_new_member_triggers_rebalance_which_completes_when_all_rejoined() -> None:
    coord, _ = make()
    a, b = stable_pair(coord)
    c = Client(coord, "c")
    c.join(10_000, kip394=False)
    assert c.joins == []
    assert a.heartbeat(10_001) == E.REBALANCE_IN_PROGRESS
    a.join(10_002)
    assert len(a.joins) == 2  # still waiting for b
    b.join(10_003)  # the last one: no initial delay outside an empty group
    assert [x.last_join["generation_id"] for x in (a, b, c)] == [2, 2, 2]
    assert a.last_join["leader"] == a.member_id and len(a.last_join["members"]) == 3


def test_cooperative_protocol_chosen_when_every_member_supports_it() -> None:
    coord, _ = make()
    a, b = Client(coord, "a"), Client(coord, "b")
    a.join(0, [("cooperative-sticky", b"x"), ("range", b"y")], kip394=False)
    b.join(1, [("range", b"z"), ("cooperative-sticky", b"w")], kip394=False)
    coord.tick(DELAY + 1)
    # one vote each; the first member's wins the tie
    assert a.last_join["protocol_name"] == "cooperative-sticky"
    assert {m["metadata"] for m in a.last_join["members"]} == {b"x", b"w"}
    c = Client(coord, "c")
    c.join(DELAY + 1, [("roundrobin", b"")], kip394=False)
    assert c.last_join["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL


def test_session_timeout_removes_silent_member_and_rebalances() -> None:
    coord, _ = make()
    a, b = stable_pair(coord)
    t = DELAY + 3
    assert a.heartbeat(t + SESSION - 1) == E.NONE
    coord.tick(t + SESSION - 1)
    assert coord.groups[G].state is GroupState.STABLE
    coord.tick(t + SESSION)  # b's last contact was its sync at DELAY + 2
    g = coord.groups[G]
    assert set(g.members) == {a.member_id} and g.state is GroupState.PREPARING_REBALANCE
    assert b.heartbeat(t + SESSION + 1) == E.UNKNOWN_MEMBER_ID
    a.join(t + SESSION + 2)
    assert a.last_join["generation_id"] == 2 and len(a.last_join["members"]) == 1


def test_member_not_rejoining_within_rebalance_timeout_is_removed() -> None:
    coord, _ = make()
    a, b = stable_pair(coord)
    a.join(20_000, [("range", b"changed")])  # new metadata: rebalance
    for t in range(20_000, 20_000 + REBALANCE, 5_000):
        assert a.heartbeat(t) == E.REBALANCE_IN_PROGRESS or a.joins
        b.heartbeat(t)  # b stays alive but never rejoins
        coord.tick(t)
    assert len(a.joins) == 2
    coord.tick(20_000 + REBALANCE)
    assert a.last_join["generation_id"] == 2 and len(a.last_join["members"]) == 1
    assert b.heartbeat(20_000 + REBALANCE + 1) == E.UNKNOWN_MEMBER_ID


def test_leader_not_syncing_within_rebalance_timeout_is_removed() -> None:
    coord, _ = make()
    a, b = Client(coord, "a"), Client(coord, "b")
    a.join(0, kip394=False)
    b.join(1, kip394=False)
    coord.tick(DELAY + 1)
    b.sync(DELAY + 1)
    for t in range(DELAY + 1, DELAY + 1 + REBALANCE, 5_000):
        assert a.heartbeat(t) == E.NONE  # alive, but never sends its SyncGroup
        coord.tick(t)
    assert b.syncs == []
    coord.tick(DELAY + 1 + REBALANCE)
    g = coord.groups[G]
    assert set(g.members) == {b.member_id}
    assert b.syncs[-1]["error_code"] == E.REBALANCE_IN_PROGRESS


def test_leave_group_rebalances_and_unknown_members_are_named() -> None:
    coord, _ = make()
    a, b = stable_pair(coord)
    top, per = coord.leave_group(10_000, G, [b.member_id, "nobody"])
    assert (top, per) == (E.NONE, [E.NONE, E.UNKNOWN_MEMBER_ID])
    assert coord.groups[G].state is GroupState.PREPARING_REBALANCE
    a.join(10_001)
    assert a.last_join["generation_id"] == 2
    coord.leave_group(10_002, G, [a.member_id])  # the last one: the join phase ends at once
    assert coord.groups[G].state is GroupState.EMPTY and coord.groups[G].generation_id == 3


def test_last_member_leaving_empties_group() -> None:
    coord, _ = make()
    a = Client(coord, "a")
    a.join(0, kip394=False)
    coord.tick(DELAY)
    a.sync(DELAY, {a.member_id: b""})
    coord.leave_group(DELAY + 1, G, [a.member_id])
    g = coord.groups[G]
    assert g.state is GroupState.EMPTY and g.generation_id == 2 and g.leader_id is None


# -- errors of each request ------------------------------------------------------------------


def test_join_errors() -> None:
    coord, _ = make()
    a = Client(coord, "a")
    a.join(0, session=1_000)
    assert a.last_join["error_code"] == E.INVALID_SESSION_TIMEOUT
    a.join(0, session=2_000_000)
    assert a.last_join["error_code"] == E.INVALID_SESSION_TIMEOUT
    a.member_id = "made-up"
    a.join(0)
    assert a.last_join["error_code"] == E.UNKNOWN_MEMBER_ID
    b = Client(coord, "b")
    b.join(0, [])
    assert b.last_join["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
    coord.join_group(0, b.joins.append, group_id="", member_id="", group_instance_id=None,
                     client_id="b", client_host="h", session_timeout_ms=SESSION,
                     rebalance_timeout_ms=REBALANCE, protocol_type="consumer",
                     protocols=[("range", b"")], require_known_member=False)  # fmt: skip
    assert b.last_join["error_code"] == E.INVALID_GROUP_ID


def test_pending_member_id_expires_after_session_timeout() -> None:
    coord, _ = make()
    a = Client(coord, "a")
    a.join(0)
    assert a.last_join["error_code"] == E.MEMBER_ID_REQUIRED
    coord.tick(SESSION)
    a.join(SESSION + 1)
    assert a.last_join["error_code"] == E.UNKNOWN_MEMBER_ID


def test_sync_and_heartbeat_errors() -> None:
    coord, _ = make()
    a, b = stable_pair(coord)
    a.sync(10_000, generation=7)
    assert a.syncs[-1]["error_code"] == E.ILLEGAL_GENERATION
    stranger = Client(coord, "s")
    stranger.member_id, stranger.generation = "s-1", 1
    stranger.sync(10_000)
    assert stranger.syncs[-1]["error_code"] == E.UNKNOWN_MEMBER_ID
    assert stranger.heartbeat(10_000) == E.UNKNOWN_MEMBER_ID
    b.generation = 0
    assert b.heartbeat(10_000) == E.ILLEGAL_GENERATION
    b.generation = 1
    Client(coord, "c").join(10_001, kip394=False)
    b.sync(10_002)
    assert b.syncs[-1]["error_code"] == E.REBALANCE_IN_PROGRESS
    coord.sync_group(10_003, a.syncs.append, group_id=G, generation_id=1,
                     member_id=a.member_id, protocol_type="connect", protocol_name=None,
                     assignments={})  # fmt: skip
    assert a.syncs[-1]["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL


# -- offsets -----------------------------------------------------------------------------------


def _commit(coord: GroupCoordinator, now: int, generation: int = -1, member: str = "",
            offset: int = 5) -> list[dict]:  # fmt: skip
    out: list[dict] = []
    coord.commit_offsets(now, out.append, group_id=G, generation_id=generation, member_id=member,
                         offsets={("t", 0): OffsetAndMetadata(offset, 3, "m", now)})  # fmt: skip
    return out


def test_commit_is_answered_only_once_replicated() -> None:
    coord, log = make(auto=False)
    out = _commit(coord, 0)
    assert out == [] and coord.fetch_offsets(G, [("t", 0)]) == (E.NONE, {("t", 0): None})
    log.complete()
    assert out == [{("t", 0): E.NONE}]
    assert coord.fetch_offsets(G, None)[1][("t", 0)].offset == 5


@pytest.mark.parametrize("append_error,client_error", [
    (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE),
    (E.REQUEST_TIMED_OUT, E.COORDINATOR_NOT_AVAILABLE),
    (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
    (E.MESSAGE_TOO_LARGE, E.INVALID_COMMIT_OFFSET_SIZE),
])  # fmt: skip
def test_failed_commit_maps_error_and_keeps_old_offset(append_error: int, client_error: int):
    coord, log = make(auto=False)
    out = _commit(coord, 0)
    log.complete(append_error)
    assert out == [{("t", 0): client_error}]
    assert coord.fetch_offsets(G, [("t", 0)])[1][("t", 0)] is None


def test_commit_membership_checks() -> None:
    coord, _ = make()
    assert _commit(coord, 0, generation=3, member="x") == [{("t", 0): E.ILLEGAL_GENERATION}]
    a, b = stable_pair(coord)
    assert _commit(coord, 10_000) == [{("t", 0): E.UNKNOWN_MEMBER_ID}]
    assert _commit(coord, 10_000, 9, a.member_id) == [{("t", 0): E.ILLEGAL_GENERATION}]
    assert _commit(coord, 10_000, 1, a.member_id) == [{("t", 0): E.NONE}]
    Client(coord, "c").join(10_001, kip394=False)  # PreparingRebalance: commits still allowed
    assert _commit(coord, 10_002, 1, b.member_id, 9) == [{("t", 0): E.NONE}]


# -- coordinator moves -------------------------------------------------------------------------


def test_not_coordinator_and_load_in_progress_then_load_restores_group_and_offsets() -> None:
    coord, log = make()
    a, b = stable_pair(coord)
    assert _commit(coord, 10_000, 1, a.member_id, 42) == [{("t", 0): E.NONE}]
    p = coord.partition_for(G)
    fresh = GroupCoordinator(GroupCoordinatorConfig(num_partitions=3), RecordingLog())
    assert fresh.heartbeat(0, group_id=G, generation_id=1, member_id=a.member_id) == (
        E.NOT_COORDINATOR
    )
    fresh.become_leader(p)
    assert fresh.fetch_offsets(G, None)[0] == E.COORDINATOR_LOAD_IN_PROGRESS
    fresh.load(p, log.records[p], 50_000)
    assert fresh.fetch_offsets(G, None)[1][("t", 0)].offset == 42
    g = fresh.groups[G]
    assert g.state is GroupState.STABLE and g.generation_id == 1
    assert fresh.heartbeat(50_001, group_id=G, generation_id=1, member_id=b.member_id) == E.NONE
    assert g.members[b.member_id].assignment == b"B"
    # the old coordinator resigns: waiting requests are told to find the new one
    a.join(60_000)  # leader rejoins: rebalance, parked
    coord.resign(p)
    assert a.last_join["error_code"] == E.NOT_COORDINATOR
    assert coord.heartbeat(60_001, group_id=G, generation_id=1, member_id=b.member_id) == (
        E.NOT_COORDINATOR
    )


def test_delete_groups() -> None:
    coord, log = make()
    a, b = stable_pair(coord)
    out: list[int] = []
    coord.delete_group(10_000, G, out.append)
    coord.delete_group(10_000, "nope", out.append)
    assert out == [E.NON_EMPTY_GROUP, E.GROUP_ID_NOT_FOUND]
    coord.leave_group(10_001, G, [a.member_id, b.member_id])
    assert _commit(coord, 10_002) == [{("t", 0): E.NONE}]
    coord.delete_group(10_003, G, out.append)
    assert out[-1] == E.NONE and G not in coord.groups
    p = coord.partition_for(G)
    fresh = GroupCoordinator(GroupCoordinatorConfig(num_partitions=3), RecordingLog())
    fresh.become_leader(p)
    fresh.load(p, log.records[p], 0)
    assert G not in fresh.groups and fresh.fetch_offsets(G, None) == (E.NONE, {})


def test_list_and_describe() -> None:
    coord, _ = make()
    stable_pair(coord)
    _commit(coord, 0)  # group "g" is the only one
    assert [g.group_id for g in coord.list_groups()] == [G]
    assert coord.list_groups({"Empty"}) == []
    err, g = coord.describe_group(G)
    assert err == E.NONE and g is not None and g.state.value == "Stable"
    assert coord.describe_group("other") == (E.NONE, None)
