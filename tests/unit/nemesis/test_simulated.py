"""The nemesis's one handler table on the simulated cluster (harness/cluster/simulated.py): a
step does there what it does to containers, links follow the containers' topology, and what
the simulator cannot do is refused up front from the action table's column."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster.simulated import SimulatedCluster
from harness.nemesis import Nemesis, NemesisError, check_supported
from harness.plan.actions import ACTIONS
from harness.plan.model import Step
from harness.plan.targets import Target
from harness.store.history import HistoryWriter
from tests.unit.sim.plans import SMALL, started_cluster


def _nemesis(cluster: SimulatedCluster, steps: list[Step], tmp_path: Path) -> Nemesis:
    loop = cluster.sim.loop
    start = loop.now_ms
    history = HistoryWriter(tmp_path / "history.jsonl",
                            clock=lambda: (loop.now_ms - start) * 1_000_000)
    return Nemesis(cluster, steps, history, lambda: cluster.state(0.0), seed=1,
                   elapsed=lambda: (loop.now_ms - start) / 1000)


def test_the_simulator_refuses_what_the_table_says_it_cannot_do() -> None:
    for name, spec in ACTIONS.items():
        step = Step(action=name, name="s", at=0, line=7)
        if spec.not_simulated:
            with pytest.raises(NemesisError, match=r"line 7: step 's'.*not simulated"):
                check_supported([step], simulated=True)
            check_supported([step])  # the containers can
        else:
            check_supported([step], simulated=True)
    closing = Step(action="blackhole", name="b", at=0, params={"close_after_ms": 100})
    with pytest.raises(NemesisError, match="close_after_ms is not simulated"):
        check_supported([closing], simulated=True)
    check_supported([Step(action="blackhole", name="b", at=0, params={"close_after_ms": 0})],
                    simulated=True)


def test_links_follow_the_container_topology() -> None:
    sim = SimulatedCluster(started_cluster(SMALL))
    links = sim.net
    assert links.linked("client", "broker-1") and links.linked("broker-1", "controller-1")
    assert not links.linked("client", "controller-1")  # clients never reach a controller
    assert not links.linked("broker-1", "broker-1")
    assert sorted(links.isolate("broker-2")) == ["broker-1", "broker-3", "client",
                                                 "controller-1"]
    net = sim.sim.net
    assert net.is_cut("client", "broker-2") and net.is_cut("broker-2", "controller-1")
    assert not net.is_cut("broker-1", "broker-3")
    links.rejoin("broker-2")
    assert not any(net.is_cut(a, b) for a in net.processes for b in net.processes)


def test_a_partition_and_a_kill_run_and_undo_through_the_shared_handlers(
        tmp_path: Path) -> None:
    sim = SimulatedCluster(started_cluster(SMALL))
    leader = sim.state(0.0).partitions["t-0"].leader
    steps = [Step(action="partition", name="cut", at=0, target=Target("leader",
                                                                      partition="t-0"),
                  duration=1.0),
             Step(action="kill", name="kill", at=0.5, target=Target("broker", brokers=(3,)),
                  duration=1.0, params={"lose_unsynced": True})]
    n = _nemesis(sim, steps, tmp_path)
    loop = sim.sim.loop
    n.tick()
    net = sim.sim.net
    others = [f"broker-{b}" for b in (1, 2, 3) if b != leader] + ["controller-1"]
    assert all(net.is_cut(f"broker-{leader}", o) for o in others)
    assert not net.is_cut("client", f"broker-{leader}")  # clients still reach it
    loop.run_until(loop.now_ms + 600)
    n.tick()
    assert sim.status("broker-3") == "exited"
    loop.run_until(loop.now_ms + 500)
    n.tick()  # the partition's second is over
    assert not any(net.is_cut(f"broker-{leader}", o) for o in others)
    loop.run_until(loop.now_ms + 600)
    n.tick()
    assert sim.status("broker-3") == "running" and n.finished()
    assert [f.step.name for f in n.fired] == ["cut", "kill"]
    assert n.fired[0].detail["peers"] == sorted(others)
    assert [e.kind for e in n.events].count("stop") == 2
