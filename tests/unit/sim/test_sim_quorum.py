"""The simulator with a Raft quorum of three controllers (cluster.controllers: 3): the real
KafkaRaftClient + RaftQuorumController + ControllerApis per voter on virtual time. The active
controller is killed and later cut off under acks=all traffic: a new one is elected, brokers
find it (NOT_CONTROLLER / failures move them to the next voter), nothing is lost, and the
committed-log comparison of the voters (results.json `metadata-divergence`) finds nothing."""

from __future__ import annotations

from pathlib import Path

from harness.plan.loader import parse_plan
from harness.plan.timing import steps_for
from harness.run.simulated import simulate

QUORUM = """
name: sim-quorum
description: the active controller killed, then cut off, under acks=all
cluster:
  brokers: 3
  controllers: 3
  topics: [{name: t, partitions: 1, replication_factor: 3, min_insync_replicas: 2}]
workload:
  producers: {count: 2, acks: all, rate: 20, duration_s: 20}
  consumers: {count: 1, poll_interval_ms: 200}
faults:
  - {name: kill-active, at: 2, action: kill, target: active-controller, duration: 3}
  - {name: new-active, when: "controller.epoch >= 2", timeout: 20,
     action: partition, target: active-controller, duration: 4}
  - {name: kill-leader, after: 6, action: kill, target: {leader: t-0}, duration: 2}
expected: {lost-write: "== 0", inconsistent-offset: "== 0"}
settle: {timeout_s: 30}
"""


def test_a_three_controller_quorum_survives_losing_its_active_controller(tmp_path: Path):
    plan = parse_plan(QUORUM, "quorum.yaml")
    r = simulate(plan, steps_for(plan, 3), 3, tmp_path)
    fired = {f.step.name: f for f in r.fired if not f.skipped}
    assert set(fired) == {"kill-active", "new-active", "kill-leader"}
    assert fired["kill-active"].nodes != fired["new-active"].nodes  # a new active controller
    assert r.results["stats"]["acked"] > 100
    assert r.results["verdict"] == "as-expected", r.results["anomalies"]
    md = r.results["metadata-divergence"]
    assert md["count"] == 0 and md["unknown"] == [], md


def test_a_lone_voter_restarts_from_its_simulated_disk_and_a_power_loss_takes_its_page_cache():
    """A lone controller is a one-voter quorum on the production FileReplicatedLog, on its
    own simulated disk: a kill (SIGKILL) keeps the page cache, so the restarted voter has
    every topic; a power loss keeps only what Raft flushed, which is every committed record
    (one voter commits what it has flushed)."""
    from tests.unit.sim.plans import SMALL, started_cluster

    cluster = started_cluster(SMALL, 7)  # SimCluster with its default, one controller
    ctl = cluster.controllers["controller-1"]
    assert len(cluster.controllers) == 1 and ctl.raft is not None
    files = ctl.fs.listdir(ctl.data_dir / "__cluster_metadata-0")
    assert any(f.endswith(".log") for f in files) and ctl.fs.exists(ctl.data_dir / "quorum-state")
    epoch, end = ctl.raft.client.epoch, ctl.raft.metadata_log.end_offset
    cluster.kill("controller-1")
    cluster.start_node("controller-1")
    cluster.loop.run_until(cluster.loop.now_ms + 1_000)
    assert ctl.raft.client.epoch == epoch + 1  # it stood again at once and leads alone
    assert ctl.raft.metadata_log.end_offset > end  # its old log, plus its new LeaderChange
    assert "t" in ctl.raft.committed_image.topics
    committed = ctl.raft.committed_offset
    cluster.kill("controller-1")
    ctl.fs.power_loss()
    cluster.start_node("controller-1")
    cluster.loop.run_until(cluster.loop.now_ms + 1_000)
    assert "t" in ctl.raft.committed_image.topics
    assert ctl.raft.committed_offset >= committed
