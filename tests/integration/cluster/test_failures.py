"""Cluster behaviour under process faults: ISR shrink/expand, leader failover, min ISR, elect."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient

from .conftest import REPO, Cluster
from .helpers import consume_all, create_topic, produce, wait_until

pytestmark = pytest.mark.timeout(240)


def leader_of(cluster: Cluster, topic: str = "t") -> int:
    """The leader as the controller committed it (any running broker's view of the leader)."""
    for b in cluster.brokers.values():
        if b.running:
            p = b.partition(topic)
            if p and p["role"] == "leader":
                return b.node_id
    raise KeyError("no leader yet")


def describe(cluster: Cluster) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "topics", "describe",
         "--bootstrap", cluster.bootstrap, "--topic", "t"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_describe_shows_full_isr_and_paused_follower_leaves_and_rejoins(cluster) -> None:
    create_topic(cluster.bootstrap, "t", rf=3)
    assert [e for e, _ in produce(cluster.bootstrap, "t", [b"a", b"b"])] == [None, None]
    wait_until(lambda: "Isr: 1,2,3" in describe(cluster), 30, "full ISR in describe")
    line = describe(cluster)
    assert line.startswith("Topic: t Partition: 0 Leader: ") and "Replicas: " in line
    leader = leader_of(cluster)
    follower = next(i for i in cluster.brokers if i != leader)
    lb = cluster.brokers[leader]
    cluster.brokers[follower].send_signal(signal.SIGSTOP)
    try:
        wait_until(lambda: follower not in lb.partition("t")["isr"], 30, "paused follower out")
        # Data acknowledged by the remaining ISR while it is out.
        assert [e for e, _ in produce(cluster.bootstrap, "t", [b"c"])] == [None]
    finally:
        cluster.brokers[follower].send_signal(signal.SIGCONT)
    wait_until(lambda: sorted(lb.partition("t")["isr"]) == [1, 2, 3], 30, "follower back in ISR")
    wait_until(lambda: cluster.brokers[follower].partition("t")["leo"] == 3, 30, "caught up")


def test_leader_kill_new_leader_higher_epoch_no_acked_loss_old_leader_rejoins(cluster) -> None:
    create_topic(cluster.bootstrap, "t", rf=3)
    values = [f"m{i}".encode() for i in range(30)]
    acked = produce(cluster.bootstrap, "t", values, acks="all")
    assert [e for e, _ in acked] == [None] * 30
    old = leader_of(cluster)
    old_epoch = cluster.brokers[old].partition("t")["leader_epoch"]
    cluster.brokers[old].stop(signal.SIGKILL)

    def new_leader() -> int | None:
        n = leader_of(cluster)
        p = cluster.brokers[n].partition("t")
        return n if n != old and p["leader_epoch"] > old_epoch else None

    new = wait_until(new_leader, 30, "a new leader with a higher epoch")
    more = produce(cluster.bootstrap, "t", [b"after"], acks="all")
    assert more[0][0] is None, cluster.logs()
    assert consume_all(cluster.bootstrap, "t", 31) == values + [b"after"]
    # The old leader restarts and rejoins as a follower with everything.
    cluster.brokers[old].start()
    ob = cluster.brokers[old]
    wait_until(lambda: ob.partition("t")["role"] == "follower" and ob.partition("t")["leo"] == 31,
               40, "old leader back as follower, caught up")  # fmt: skip
    wait_until(lambda: sorted(cluster.brokers[new].partition("t")["isr"]) == [1, 2, 3], 40,
               "old leader back in the ISR")  # fmt: skip
    # Preferred leader election moves leadership back to the first replica.
    preferred = cluster.brokers[new].partition("t")["replicas"][0]
    if preferred != new:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        from confluent_kafka import ElectionType

        fut = admin.elect_leaders(ElectionType.PREFERRED, [CkTopicPartition("t", 0)])
        fut.result(timeout=30)
        wait_until(lambda: leader_of(cluster) == preferred, 30, "preferred leader back")


def test_min_isr_two_followers_stopped_not_enough_replicas(cluster) -> None:
    create_topic(cluster.bootstrap, "t", rf=3, config={"min.insync.replicas": "2"})
    assert produce(cluster.bootstrap, "t", [b"ok"], acks="all")[0][0] is None
    leader = leader_of(cluster)
    lb = cluster.brokers[leader]
    for i, b in cluster.brokers.items():
        if i != leader:
            b.stop(signal.SIGKILL)
    wait_until(lambda: lb.partition("t")["isr"] == [leader], 30, "ISR shrunk to the leader")
    res = produce(lb.bootstrap, "t", [b"x"], acks="all", timeout=10)
    assert res[0][0] is not None and res[0][0].name() == "NOT_ENOUGH_REPLICAS", res
    res = produce(lb.bootstrap, "t", [b"y"], acks="1", timeout=10)
    assert res[0][0] is None
