"""The subscribe workload on a local 3-broker cluster, through a coordinator failover.

A group of three members works through a backlog (3 records per poll), committing after every
poll. The followers of the group's `__consumer_offsets` partition are paused for a second while
the members commit, the partition's leader (the coordinator) is killed, the followers resume,
one member is replaced (a rebalance), and the members go on through the new coordinator. The
members hold their commits from the kill until the rebalance is over, as an application that
commits only every few seconds would: a later commit would otherwise overwrite a lost one
before anybody read it.

- fixed (offsets.commit.required.acks=-1, Kafka's only behaviour since 4.0): commits made while
  the followers were paused are not answered before the coordinator dies, so nothing
  acknowledged is lost: the checker finds no group anomaly.
- legacy (offsets.commit.required.acks=1: answered by the leader alone, possible until Kafka 3.x;
  deprecated by KIP-1041 / KAFKA-16735 in 3.8, removed in 4.0 by KAFKA-16736): the commits
  acknowledged in that second are gone with the coordinator; after the rebalance the members
  start below them, and the checker names it: commit-regression > 0.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from broker_app.coordinator.records import partition_for
from harness.checker.history import validate_history
from harness.checker.reference import reference_check
from harness.client import ProcessIds, drain
from harness.plan.model import ConsumerSpec
from harness.store import Store
from harness.workload import ProducerJob, Workload

from .conftest import Cluster
from .helpers import create_topic as create
from .helpers import wait_until
from .test_groups import BROKER_ARGS, OFFSETS_PARTITIONS, _offsets_leader

pytestmark = pytest.mark.timeout(240)

TOPIC, PARTITIONS, GROUP = "gw", 4, "hw-group"
GROUP_ANOMALIES = ("commit-regression", "rebalance-skip", "double-assignment",
                   "generation-reuse")
PAUSE_S = 1.0  # below replica.lag.time.max.ms (1.5 s) and the controller session (2 s)


def _commits(wl: Workload) -> int:
    return wl.stats["commit:ok"]


def _generation(wl: Workload) -> int | None:
    """The generation every member is in, or None while they differ (or do not know)."""
    gens = set(wl.member_generations.values())
    return gens.pop() if len(gens) == 1 and len(wl.member_generations) == 3 else None


@pytest.mark.parametrize("mode", ["fixed", "legacy"])
def test_coordinator_failover_with_a_group_committing(cluster_factory, tmp_path: Path,
                                                      mode: str) -> None:
    legacy = ["--offsets-commit-required-acks", "1"] if mode == "legacy" else []
    cluster: Cluster = cluster_factory(3, BROKER_ARGS + legacy)
    create(cluster.bootstrap, TOPIC, partitions=PARTITIONS, rf=3)
    run = Store(tmp_path / "store").create_run("group", {"name": "group"})
    ids = ProcessIds()
    parts = [(TOPIC, p) for p in range(PARTITIONS)]
    history = run.history_writer()
    try:
        backlog = [ProducerJob(slot=0, acks="all", rate=2000, partitions=tuple(parts),
                               values=1200)]
        members = ConsumerSpec(count=3, poll_interval_ms=100, mode="subscribe", group=GROUP,
                               max_poll_records=3)
        wl = Workload(lambda: cluster.bootstrap, history, backlog, members,
                      consumer_topics=[TOPIC], new_process=ids)
        wl.start()
        try:
            assert wl.wait_producers(timeout_s=60), "the backlog was not produced"
            wait_until(lambda: _commits(wl) >= 15 and _generation(wl), 60,
                       "three members of one generation committing")
            offsets_p = partition_for(GROUP, OFFSETS_PARTITIONS)
            coordinator = _offsets_leader(cluster, offsets_p)
            followers = [b for i, b in cluster.brokers.items() if i != coordinator]
            history.nemesis("pause", "start", {"nodes": [b.node_id for b in followers]})
            for b in followers:
                b.send_signal(signal.SIGSTOP)
            try:
                time.sleep(PAUSE_S)  # the members commit to a coordinator alone
                wl.commits_held.set()  # their next commit comes after the rebalance
                history.nemesis("kill", "start", {"node": coordinator})
                cluster.brokers[coordinator].stop(signal.SIGKILL)
            finally:
                for b in followers:
                    b.send_signal(signal.SIGCONT)
            history.nemesis("pause", "stop", {"nodes": [b.node_id for b in followers]})
            wait_until(lambda: _offsets_leader(cluster, offsets_p) != coordinator, 30,
                       "a new coordinator")
            settled = wait_until(lambda: _generation(wl), 60, "the group settled")
            wl.restart_member(0)  # a replaced member: every partition is assigned again
            wait_until(lambda: (_generation(wl) or 0) > settled, 60,
                       "every member in a newer generation")
            wl.commits_held.clear()
            before = _commits(wl)
            wait_until(lambda: _commits(wl) >= before + 20, 60, "commits after the rebalance")
            history.nemesis("kill", "stop", {"node": coordinator})
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
    assert len({p for p, _ in reads}) >= 3, "the group's work was not shared"
    assert all(r["generation"] is not None and r["generation"] >= 1 for _, r in reads)
    assert len({r["generation"] for _, r in reads}) >= 2, "no rebalance was recorded"

    found = reference_check(run.history_path)["anomalies"]
    counts = {a: found[a]["count"] for a in (*GROUP_ANOMALIES, "lost-write")}
    if mode == "fixed":
        assert counts == dict.fromkeys(counts, 0), {a: found[a] for a in counts}
    else:
        assert counts["commit-regression"] > 0, {a: found[a] for a in counts}
        assert counts["lost-write"] == 0  # the records are fine; the group's offsets are not
