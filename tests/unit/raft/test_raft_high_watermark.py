"""A voter's high watermark across its states (Kafka's QuorumState, KIP-595 since the first
KRaft release): carried into every new state but Resigned, never persisted, and a follower
refuses a DivergingEpoch below it. Exact interleavings on the seeded in-test network."""

from __future__ import annotations

import pytest

from broker_app.raft.log import OffsetAndEpoch
from broker_app.raft.messages import Envelope, FetchResponse
from broker_app.raft.quorum_state import FollowerState
from tests.unit.raft.net import SimNetwork


def committed_everywhere(seed: int) -> tuple[SimNetwork, int, int]:
    """Three voters, three records committed and known committed by every voter; returns
    the network, the leader's id and the high watermark."""
    net = SimNetwork(3, seed=seed)
    leader = net.elect()
    net.append(b"a", b"b", b"c")
    end = leader.log.end_offset
    assert net.run_until(lambda: all(n.client.high_watermark == end
                                     for n in net.nodes.values()))  # fmt: skip
    return net, leader.node_id, end


@pytest.mark.parametrize("seed", range(5))
def test_carried_through_an_election_and_forgotten_by_a_restart(seed):
    net, old, hw = committed_everywhere(seed)
    net.crash(old)
    survivors = [n for i, n in net.nodes.items() if i != old]
    states: set[str] = set()

    def new_leader() -> bool:
        for n in survivors:
            states.add(type(n.client.quorum.state).__name__)
            if n.client.is_leader:
                continue  # a new leader knows none until it commits in its epoch
            # Until now an election reset it: the voter forgot what it knew was committed.
            assert n.client.high_watermark is not None and n.client.high_watermark >= hw, (
                f"voter {n.node_id} as {type(n.client.quorum.state).__name__}: "
                f"{n.client.high_watermark}")
        return net.leader() is not None and net.leader().node_id != old

    assert net.run_until(new_leader)
    # Both survivors left Follower (pre-vote, then a candidacy or a vote) on the way.
    assert states - {"FollowerState", "LeaderState"}
    follower = next(n for n in survivors if not n.client.is_leader)
    net.crash(follower.node_id)
    net.restart(follower.node_id)
    assert net.nodes[follower.node_id].client.high_watermark is None  # not persisted


def test_a_follower_refuses_to_truncate_below_it():
    net, leader, hw = committed_everywhere(0)
    f = next(n for i, n in net.nodes.items() if i != leader)
    assert net.run_until(lambda: isinstance(f.client.quorum.state, FollowerState)
                         and f.client.quorum.state.inflight is not None)  # fmt: skip
    s = f.client.quorum.state
    epoch = f.client.epoch
    # The leader's answer asks it to drop everything after offset 1 (a leader lacking
    # committed records, which Raft's vote rule prevents): Kafka's KafkaRaftClient throws
    # there and the process halts; here the client raises.
    answer = FetchResponse(epoch, leader, high_watermark=hw,
                           diverging_epoch=OffsetAndEpoch(1, epoch))
    with pytest.raises(RuntimeError, match="below the high watermark"):
        f.client.handle(Envelope(leader, f.node_id, s.inflight, answer), net.now)
    assert f.log.end_offset >= hw  # nothing dropped
