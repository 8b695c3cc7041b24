"""harness.checker.convergence: what `unconverged-replicas` counts, on constructed states."""

from __future__ import annotations

from harness.checker.convergence import ConvergenceWatch, converged, unconverged
from harness.plan.state import ClusterState, PartitionState, ReplicaState


def _state(leader: int | None = 1, isr: tuple[int, ...] = (1, 2, 3),
           leos: dict[int, int] | None = None, leader_hw: int = 10,
           alive: frozenset[int] = frozenset({1, 2, 3})) -> ClusterState:  # fmt: skip
    leos = {1: 10, 2: 10, 3: 10} if leos is None else leos
    states = {b: ReplicaState(b, "leader" if b == leader else "follower", leo,
                              leader_hw if b == leader else min(leo, leader_hw))
              for b, leo in leos.items()}  # fmt: skip
    p = PartitionState("t", 0, leader, 3, (1, 2, 3), isr, states)
    return ClusterState(brokers=(1, 2, 3), alive=alive, partitions={"t-0": p})


def test_a_full_isr_at_the_leaders_log_end_has_converged() -> None:
    assert converged(_state())
    assert unconverged(_state()) == {"count": 0, "by_partition": {}, "examples": []}


def test_each_unconverged_pair_counts_once() -> None:
    # Broker 3 is out of the ISR, broker 2 is in it but behind the leader's log end.
    r = unconverged(_state(isr=(1, 2), leos={1: 10, 2: 7, 3: 10}))
    assert r["count"] == 2 and r["by_partition"] == {"t-0": 2}
    assert r["examples"] == ["t-0: broker 2 log end 7 below the leader's 10",
                             "t-0: broker 3 not in the ISR [1, 2]"]
    # A replica in the ISR whose broker did not answer cannot be called caught up.
    r = unconverged(_state(leos={1: 10, 2: 10}))
    assert r["count"] == 1 and "could not be read" in r["examples"][0]


def test_no_live_leader_counts_the_partition() -> None:
    r = unconverged(_state(leader=None))
    assert r["count"] == 1 and "no live leader" in r["examples"][0]
    dead = unconverged(_state(isr=(1,), alive=frozenset({2, 3}), leos={2: 10, 3: 10}))
    # The dead leader (and its unreadable replica), and two replicas out of the ISR.
    assert dead["count"] == 4, dead


def test_a_leader_that_has_not_learned_its_followers_caught_up_is_one_round_away() -> None:
    r = unconverged(_state(leader_hw=8))
    assert r["count"] == 1 and "high watermark 8 below its log end 10" in r["examples"][0]


def test_no_state_at_all_counts_every_replica_and_partition() -> None:
    r = unconverged(None, [("t-0", 3), ("t-1", 3)])
    assert r["count"] == 8 and r["by_partition"] == {"t-0": 4, "t-1": 4}


def test_watch_records_since_when_a_partition_stayed_converged() -> None:
    w = ConvergenceWatch([("t-0", 3)])
    assert not w.observe(_state(isr=(1, 2)), 0.5)
    assert w.observe(_state(), 1.25)
    assert not w.observe(_state(leos={1: 10, 2: 9, 3: 10}), 2.0)  # flapped: starts over
    assert w.observe(_state(), 3.5)
    r = w.result(60.0)
    assert r["count"] == 0 and r["recovery_s"] == {"t-0": 3.5} and r["window_s"] == 60.0
    stuck = ConvergenceWatch([("t-0", 3)])
    stuck.observe(_state(isr=(1, 2)), 0.2)
    assert stuck.result(0.5)["recovery_s"] == {"t-0": None}
