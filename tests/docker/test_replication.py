"""Replication through the proxies, on the project's own pytest plugin (`highwater_cluster`, as
a user's test would have it): `topics describe` shows the full ISR, a follower cut from its
leader leaves the ISR and rejoins it, and an isolated leader is replaced and rejoins as a
follower. One cluster for the three steps."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from hw_docker_util import produce_ok

from harness.testing import HighwaterCluster

pytestmark = pytest.mark.docker
TOPIC = "repl"


def _isr(bootstrap: str) -> tuple[int, list[int]]:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(TOPIC, timeout=10)
    p = md.topics[TOPIC].partitions[0]
    return p.leader, sorted(p.isrs)


def _wait(pred, timeout_s: float = 60) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.5)
    return False


def test_isr_through_the_proxies(highwater_cluster: HighwaterCluster) -> None:
    hc = highwater_cluster
    hc.create_topic(TOPIC, partitions=1, replication_factor=3, min_insync_replicas=2)
    bootstrap = hc.bootstrap_servers

    # `highwater topics describe` through the proxies
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "topics", "describe",
         "--bootstrap", bootstrap, "--topic", TOPIC],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    line = next(ln for ln in out.splitlines() if ln.startswith(f"Topic: {TOPIC} Partition: 0"))
    leader, isr = _isr(bootstrap)
    assert f"Leader: {leader}" in line and isr == [1, 2, 3]
    assert sorted(int(x) for x in line.split("Isr: ")[1].split()[0].split(",")) == [1, 2, 3]

    # a follower cut from its leader leaves the ISR, and rejoins once healed
    lead, follower = hc.leader(TOPIC), hc.followers(TOPIC)[0]
    hc.partition(lead, follower)
    produce_ok(bootstrap, TOPIC, [b"a"])
    follower_id = int(follower.split("-")[1])
    assert _wait(lambda: follower_id not in _isr(bootstrap)[1])
    hc.heal()
    assert _wait(lambda: follower_id in _isr(bootstrap)[1])

    # a leader cut from every other node is replaced, and rejoins as a follower once healed
    old = hc.leader(TOPIC)
    for other in ("controller-1", *hc.followers(TOPIC)):
        hc.partition(old, other)
    old_id = int(old.split("-")[1])
    others = ",".join(hc.cluster.client_address(b) for b in hc.followers(TOPIC))
    assert _wait(lambda: _isr(others)[0] not in (old_id, -1))
    hc.heal()
    assert _wait(lambda: old_id in _isr(bootstrap)[1] and _isr(bootstrap)[0] != old_id)
