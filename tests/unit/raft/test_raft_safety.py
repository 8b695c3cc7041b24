"""Raft's safety properties under random faults, and the legacy vote switch that breaks them.

The property test runs chaos schedules (tests/unit/raft/chaos.py) over many seeds; the
network's checker fails on: two leaders in one epoch (election safety), a leader of a later
epoch missing a committed entry (leader completeness), two voters with different entries
below their high watermarks (log matching), two state machines applying different records
at one offset (state machine safety). Long runs: `python -m tests.unit.raft.chaos 0 5000`.
"""

import pytest

from .chaos import chaos
from .net import SafetyViolation, SimNetwork


@pytest.mark.parametrize("first_seed", range(0, 120, 15))
def test_raft_safety_holds_under_random_faults(first_seed):
    for seed in range(first_seed, first_seed + 15):
        net, converged = chaos(seed, pre_vote=seed % 3 != 0)  # a third as Kafka 3.x
        assert converged, f"seed {seed}: the quorum did not converge after healing"
        leader = net.leader()
        committed = leader.applied
        assert all(n.applied == committed for n in net.nodes.values()), f"seed {seed}"


def test_the_checker_catches_the_legacy_vote_switch_in_random_runs():
    """The same schedules with raft_vote_log_check=False: the checker must fire (so the
    property test above is able to fail)."""
    caught = 0
    for seed in range(40):  # 5 of these 40 seeds violate safety (Kafka's EndQuorumEpoch backoff)
        try:
            chaos(seed, voters=3, raft_vote_log_check=False)
        except SafetyViolation:
            caught += 1
    assert caught >= 4


def lose_a_committed_record(seed: int, vote_log_check: bool) -> bool:
    """Voter C is cut off long enough to inflate its epoch by failed elections; the leader
    commits X with B; the leader dies before B learns X is committed; C and B meet again.
    True when X is gone from every voter (observed with the checker off). Without pre-vote
    (Kafka 3.x): pre-vote would keep C's epoch from climbing (see the next test)."""
    net = SimNetwork(3, seed=seed, raft_vote_log_check=vote_log_check, pre_vote=False)
    net.check_safety = False
    leader = net.elect()
    b, c = (i for i in sorted(net.nodes) if i != leader.node_id)
    net.append(b"a")
    net.run_for(200)
    net.isolate(c)
    net.run_for(5000)  # C's elections fail: its epoch climbs, its log stays behind
    assert net.nodes[c].client.epoch > leader.client.epoch
    _, x = net.append(b"X")
    assert net.run_until(lambda: leader.client.high_watermark > x, 1000)  # X is committed
    net.partition({leader.node_id}, {b, c})  # the commit news to B is cut; B and C meet
    net.crash(leader.node_id)
    assert net.run_until(lambda: (ld := net.leader()) is not None
                         and ld.client.high_watermark is not None, 20_000)
    net.heal()
    net.restart(leader.node_id)
    net.append(b"after")
    net.run_for(3000)
    kept = [any(r == b"X" for bl in n.log.read(n.log.start_offset, 1 << 20) for r in bl.records)
            for n in net.nodes.values()]
    return not any(kept)


def test_legacy_vote_without_log_check_loses_a_committed_record_and_the_fix_does_not():
    legacy = sum(lose_a_committed_record(seed, vote_log_check=False) for seed in range(10))
    fixed = sum(lose_a_committed_record(seed, vote_log_check=True) for seed in range(10))
    assert (legacy, fixed) == (10, 0)


def test_figure_8_an_old_epoch_entry_on_a_majority_is_not_committed_without_the_leaders_own():
    """Raft paper, figure 8, with one batch per fetch so the old entry can reach a majority
    before the new leader's LeaderChange does. X (epoch e1) ends up on 3 of 5 voters under a
    leader p of a later epoch; p dies; s5, holding a newer-epoch record at X's offset, wins
    and overwrites X. Legal only because X was never committed: p must not have counted it
    (and the checker fails if any voter did: leader completeness)."""
    net = SimNetwork(5, seed=21, fetch_max_batches=1, pre_vote=False)  # scripted elections
    s1 = net.elect()
    net.append(b"a")
    net.run_for(300)
    s2, s3, s4, s5 = (i for i in sorted(net.nodes) if i != s1.node_id)
    net.partition({s1.node_id, s2}, {s3, s4, s5})
    _, x = net.append(b"X")  # reaches s2 only
    net.run_for(100)
    assert net.nodes[s2].log.end_offset == x + 1
    net.crash(s1.node_id)
    net.partition({s1.node_id, s2}, {s3, s4, s5})
    net.expire(s5)
    assert net.run_until(lambda: net.nodes[s5].client.is_leader, 1000)
    net.isolate(s5)  # its LeaderChange (a newer epoch) sits at X's offset, on s5 alone
    net.crash(s5)
    assert net.nodes[s5].log.end_offset == x + 1
    # s1 comes back; s1 or s2 (the voters holding X) lead a later epoch with s3
    net.restart(s1.node_id)
    net.partition({s1.node_id, s2, s3}, {s4, s5})
    assert net.run_until(lambda: (ld := net.leader()) is not None
                         and ld.node_id in (s1.node_id, s2), 20_000)
    p = net.leader()
    assert net.run_until(lambda: sum(end > x for end in p.client.quorum.state.replica_end
                                     .values()) >= 2, 5000)
    assert (p.client.high_watermark or 0) <= x  # X is on 3 of 5, not committed
    net.isolate(p.node_id)
    net.crash(p.node_id)
    net.restart(s5)
    net.partition({p.node_id}, set(net.nodes) - {p.node_id})
    for _ in range(5):  # s5 runs first; its first epoch may be too old to win
        net.expire(s5)
        net.run_for(50)
    assert net.nodes[s5].client.is_leader  # s5 overwrites X: figure 8 reached
    net.run_for(100)
    net.heal()
    net.restart(p.node_id)
    net.append(b"end")
    assert net.run_until(lambda: all(n.applied and n.applied[-1][1] == b"end"
                                     for n in net.nodes.values()), 20_000)
    assert all([r for _o, r in n.applied] == [b"a", b"end"] for n in net.nodes.values())


@pytest.mark.parametrize("pre_vote", [True, False])
def test_pre_vote_keeps_a_returning_voter_from_deposing_a_healthy_leader(pre_vote):
    """KIP-996: cut off, C asks for pre-votes that nobody grants (they hear the leader), so
    its epoch stays put and, healed, it rejoins as a follower. Without pre-vote its epoch
    climbs and its return forces an election."""
    net = SimNetwork(3, seed=4, pre_vote=pre_vote)
    leader = net.elect()
    epoch = leader.client.epoch
    c = next(i for i in sorted(net.nodes) if i != leader.node_id)
    net.isolate(c)
    net.run_for(6000)
    net.heal()
    net.run_for(3000)
    if pre_vote:
        assert net.nodes[c].client.epoch == epoch
        assert leader.client.is_leader and leader.client.epoch == epoch
        assert net.nodes[c].client.leader_id == leader.node_id
    else:
        assert net.leader().client.epoch > epoch
