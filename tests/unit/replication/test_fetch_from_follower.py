"""KIP-392 fetch from follower: the replica selector's choice, and a follower serving a
consumer up to its own high watermark (the leader's redirect is exercised end to end by the
`fetch from follower (client.rack)` row of tests/integration/cluster/test_client_compat.py)."""

from __future__ import annotations

import pytest
from replication_sim import values

from broker_app.replication.errors import Errors
from broker_app.replication.messages import FetchIsolation
from broker_app.replication.replica_selector import ReplicaView, candidates, select_read_replica
from broker_app.storage.records import decode_records

LEADER = ReplicaView(1, "a", 100, 0)
B_BEHIND = ReplicaView(2, "b", 90, 50)
B_AHEAD = ReplicaView(3, "b", 95, 10)
C = ReplicaView(4, "c", 100, 0)


def test_rack_aware_prefers_the_most_caught_up_replica_in_the_clients_rack() -> None:
    pick = select_read_replica
    assert pick("rack-aware", "b", LEADER, [B_BEHIND, B_AHEAD, C]) == 3
    assert pick("rack-aware", "c", LEADER, [B_BEHIND, C]) == 4
    # the leader's own rack, an unknown rack, or no rack: the leader
    assert pick("rack-aware", "a", LEADER, [B_AHEAD, C]) == 1
    assert pick("rack-aware", "z", LEADER, [B_AHEAD, C]) == 1
    assert pick("rack-aware", "", LEADER, [B_AHEAD, C]) == 1
    assert pick("rack-aware", None, LEADER, [B_AHEAD, C]) == 1
    # Kafka's default selector never moves a consumer
    assert pick("leader", "b", LEADER, [B_AHEAD]) == 1
    with pytest.raises(ValueError, match="replica selector must be one of"):
        pick("nearest", "b", LEADER, [])


def test_candidates_hold_the_fetch_offset_and_are_in_the_isr() -> None:
    starts = {2: 0, 3: 50, 4: 0}
    assert candidates([B_BEHIND, B_AHEAD, C], 40, starts, {1, 2, 3, 4}) == [B_BEHIND, C]
    assert candidates([B_BEHIND, B_AHEAD, C], 92, starts, {1, 3, 4}) == [B_AHEAD, C]
    assert candidates([B_BEHIND, B_AHEAD, C], 99, starts, {1, 2, 3}) == []  # 4 out of ISR
    assert candidates([C], 0, {}, {4}) == []  # log start unknown: not offered


def test_a_follower_serves_a_consumer_up_to_its_own_high_watermark(make_cluster) -> None:
    cluster = make_cluster([1, 2])
    cluster.elect(1, isr=[1, 2])
    cluster.produce(["m0", "m1"])
    cluster.replicate(2, rounds=2)  # the follower has both and learned HW 2
    cluster.produce(["m2"])
    cluster.replicate(2, rounds=1)  # it holds m2, but the leader's HW 3 is not known yet
    follower = cluster.brokers[2].partition
    assert values(follower.log) == ["m0", "m1", "m2"]
    # Old consumers (before Fetch v11) and replicas are served by the leader only.
    assert follower.read_for_fetch(0, 1 << 20, FetchIsolation.HIGH_WATERMARK).error == \
        Errors.NOT_LEADER_OR_FOLLOWER
    got = follower.read_for_fetch(0, 1 << 20, FetchIsolation.HIGH_WATERMARK,
                                  fetch_only_from_leader=False)
    assert got.error == Errors.NONE and got.high_watermark == 2
    assert [r.value for r in decode_records(got.records)] == [b"m0", b"m1"]
    cluster.replicate(2, rounds=2)  # now it learns HW 3
    got = follower.read_for_fetch(2, 1 << 20, FetchIsolation.HIGH_WATERMARK,
                                  fetch_only_from_leader=False)
    assert [r.value for r in decode_records(got.records)] == [b"m2"]
