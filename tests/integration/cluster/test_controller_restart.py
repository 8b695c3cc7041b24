"""The controller restarts (SIGKILL, same port and data dir) under running brokers, losing nothing.

Issue 3, "the controller restarts without losing metadata": topics, assignment, leader, ISR, leader
and partition epochs come back from the metadata log; brokers keep their broker epochs and simply
resume heartbeating (no fencing, no re-registration); acks=all, CreateTopics and a leader failover
all work against the restarted controller.
"""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from .conftest import SESSION_MS, Cluster
from .helpers import consume_all, create_topic, produce, wait_until

pytestmark = pytest.mark.timeout(240)


def registration(cluster: Cluster, topic: str, partition: int = 0) -> dict[str, Any]:
    return cluster.controller.state()["image"]["topics"][topic]["partitions"][str(partition)]


def client_metadata(bootstrap: str, topic: str) -> tuple[int, list[int], list[int]]:
    """(leader, replicas, isr) of partition 0 as a real client sees it through a broker."""
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic=topic, timeout=10)
    p = md.topics[topic].partitions[0]
    return p.leader, list(p.replicas), sorted(p.isrs)


def brokers_attached(cluster: Cluster) -> bool:
    """Every broker heartbeated the (restarted) controller recently and is unfenced there."""
    st = cluster.controller.state()
    ages = st["ms_since_heartbeat"]
    return all(
        str(i) in ages and ages[str(i)] < SESSION_MS // 2
        and not st["image"]["brokers"][str(i)]["fenced"]
        for i, b in cluster.brokers.items() if b.running
    )  # fmt: skip


def test_controller_sigkill_restart_keeps_metadata_and_cluster_keeps_working(cluster) -> None:
    create_topic(cluster.bootstrap, "t", rf=3)
    values = [f"m{i}".encode() for i in range(10)]
    assert [e for e, _ in produce(cluster.bootstrap, "t", values, acks="all")] == [None] * 10
    wait_until(lambda: sorted(registration(cluster, "t")["isr"]) == [1, 2, 3], 30, "full ISR")
    before = cluster.controller.state()
    topic_before = before["image"]["topics"]["t"]
    epochs_before = {b: r["epoch"] for b, r in before["image"]["brokers"].items()}
    md_before = client_metadata(cluster.bootstrap, "t")
    reg = topic_before["partitions"]["0"]
    assert md_before == (reg["leader"], reg["replicas"], sorted(reg["isr"]))

    # SIGKILL: no clean shutdown, the metadata log on disk is all that survives.
    assert cluster.controller.stop(signal.SIGKILL) == -signal.SIGKILL
    cluster.controller.start()  # same port, same data dir

    after = cluster.controller.state()
    assert after["image"]["topics"]["t"] == topic_before, "metadata lost or changed on restart"
    assert after["metadata_offset"] >= before["metadata_offset"]
    # Brokers re-attach: heartbeats resume, and they are still unfenced after a full session
    # timeout has passed since the restart (a broker that did not heartbeat would be fenced).
    restarted = time.monotonic()
    wait_until(lambda: time.monotonic() - restarted > 1.5 * SESSION_MS / 1000
               and brokers_attached(cluster), 30, "brokers heartbeating, unfenced")  # fmt: skip
    now = cluster.controller.state()
    assert {b: r["epoch"] for b, r in now["image"]["brokers"].items()} == epochs_before, (
        "a broker had to re-register after the controller restart"
    )
    assert now["image"]["topics"]["t"] == topic_before, cluster.logs()
    assert client_metadata(cluster.bootstrap, "t") == md_before
    assert all(b.running for b in cluster.brokers.values())

    # acks=all again, and CreateTopics goes through the restarted controller.
    assert produce(cluster.bootstrap, "t", [b"after-restart"], acks="all")[0][0] is None
    create_topic(cluster.bootstrap, "t2", rf=3)
    wait_until(lambda: "t2" in cluster.controller.state()["image"]["topics"], 30, "t2 created")
    assert produce(cluster.bootstrap, "t2", [b"new"], acks="all")[0][0] is None
    assert consume_all(cluster.bootstrap, "t2", 1) == [b"new"]

    # A leader failover is still decided by the restarted controller: higher epoch, no loss.
    old = registration(cluster, "t")
    cluster.brokers[old["leader"]].stop(signal.SIGKILL)

    def failed_over() -> dict[str, Any] | None:
        r = registration(cluster, "t")
        ok = r["leader"] not in (old["leader"], -1) and r["leader_epoch"] > old["leader_epoch"]
        return r if ok else None

    new = wait_until(failed_over, 30, "a new leader elected by the restarted controller")
    assert old["leader"] not in new["isr"]
    wait_until(lambda: cluster.brokers[new["leader"]].partition("t")["role"] == "leader", 30,
               "new leader serving")  # fmt: skip
    assert produce(cluster.bootstrap, "t", [b"after-failover"], acks="all")[0][0] is None
    got = consume_all(cluster.bootstrap, "t", 12)
    assert got == values + [b"after-restart", b"after-failover"]
    assert cluster.controller.proc is not None and cluster.controller.proc.poll() is None
