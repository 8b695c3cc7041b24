"""The subscribe workload on a local 3-broker cluster: a group of three members polls and commits
while the leader of the group's __consumer_offsets partition (its coordinator) is killed.

The history must validate (docs/history-groups.md), show commits and several generations, and
the reference checker must find no group anomaly and no lost write: the coordinator moved, the
group rebalanced, and nobody went back past an acknowledged commit.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from broker_app.coordinator.records import partition_for
from harness.bench.reference_checker import reference_check
from harness.checker.history import validate_history
from harness.client import ProcessIds, drain
from harness.plan.model import ConsumerSpec
from harness.store import Store
from harness.workload import ProducerJob, Workload

from .conftest import Cluster
from .helpers import create_topic, wait_until
from .test_groups import BROKER_ARGS, OFFSETS_PARTITIONS, _offsets_leader

pytestmark = pytest.mark.timeout(240)

TOPIC, PARTITIONS, GROUP = "gw", 4, "hw-group"
GROUP_ANOMALIES = ("commit-regression", "rebalance-skip", "double-assignment")


def test_group_members_commit_through_a_coordinator_failover(cluster_factory, tmp_path: Path):
    cluster: Cluster = cluster_factory(3, BROKER_ARGS)
    create_topic(cluster.bootstrap, TOPIC, partitions=PARTITIONS, rf=3)
    run = Store(tmp_path / "store").create_run("group", {"name": "group"})
    ids = ProcessIds()
    parts = [(TOPIC, p) for p in range(PARTITIONS)]
    history = run.history_writer()
    try:
        jobs = [ProducerJob(slot=0, acks="all", rate=40, partitions=tuple(parts), duration_s=12)]
        members = ConsumerSpec(count=3, poll_interval_ms=100, mode="subscribe", group=GROUP)
        wl = Workload(lambda: cluster.bootstrap, history, jobs, members,
                      consumer_topics=[TOPIC], new_process=ids)
        wl.start()
        try:
            wait_until(lambda: wl.stats["commit:ok"] >= 10, 60, "members committing")
            coordinator = _offsets_leader(cluster, partition_for(GROUP, OFFSETS_PARTITIONS))
            history.nemesis("kill", "start", {"node": coordinator})
            cluster.brokers[coordinator].stop(signal.SIGKILL)
            before = wl.stats["commit:ok"]
            wait_until(lambda: wl.stats["commit:ok"] >= before + 10, 90,
                       "commits through the new coordinator")
            history.nemesis("kill", "stop", {"node": coordinator})
            assert wl.wait_producers(timeout_s=60), "producers did not finish"
            time.sleep(1.0)  # let the members read the tail before they stop
        finally:
            assert wl.stop(timeout_s=30), "threads did not stop"
        assert wl.errors == []
        result = drain(cluster.bootstrap, history, parts, ids, timeout_s=60, idle_s=0.5)
    finally:
        history.close()
    assert result.complete, result.failed
    assert validate_history(run.history_path) == []

    ops = [json.loads(line) for line in run.history_path.read_text().splitlines()]
    reads = [(o["process"], r) for o in ops if o["f"] == "poll" and o["type"] == "ok"
             and not o["final"] for r in o["records"]]
    assert len({p for p, _ in reads}) >= 2, "the group's work was not shared"
    assert all(r["generation"] is not None and r["generation"] >= 1 for _, r in reads)
    assert len({r["generation"] for _, r in reads}) >= 2, "no rebalance was recorded"
    assert any(o["f"] == "commit" and o["type"] == "ok" for o in ops)

    found = reference_check(run.history_path)["anomalies"]
    counts = {a: found[a]["count"] for a in (*GROUP_ANOMALIES, "lost-write")}
    assert counts == dict.fromkeys(counts, 0), {a: found[a] for a in counts}
