"""Replication through the proxies: ISR leave/rejoin on a follower partition, leader isolation.

Needs brokers wired to the controller and to each other through their proxies (`--controller`,
`--peer ID=HOST:PORT`); skipped, with that reason, while the broker image lacks those flags.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest
from hw_docker_util import produce_ok

from harness.cluster import Cluster

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


@pytest.fixture(scope="module")
def cluster(cluster_images: dict[str, str], run_id_factory) -> Iterator[Cluster]:
    out = subprocess.run(["docker", "run", "--rm", cluster_images["broker"], "broker", "--help"],
                         capture_output=True, text=True, timeout=120).stdout
    missing = [f for f in ("--controller", "--peer") if f not in out]
    if missing:
        pytest.skip(f"the broker has no {' / '.join(missing)} yet: no replication to test")
    with Cluster(run_id_factory("repl"), brokers=3, controller=True,
                 images=cluster_images) as c:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        def registered() -> bool:  # the quorum elects itself, then unfences the brokers
            try:
                probe = AdminClient({"bootstrap.servers": c.bootstrap})
                return len(probe.list_topics(timeout=5).brokers) == 3
            except KafkaException:
                return False

        # librdkafka's admin waits for a controller id it learnt before any broker was unfenced
        # (Metadata says -1 then) longer than our wait: create only once all three are in.
        assert _wait(registered)
        admin = AdminClient({"bootstrap.servers": c.bootstrap})

        def created() -> bool:  # brokers register one by one: retry (bounded) until all are in
            try:
                admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(timeout=30)
                return True
            except KafkaException as exc:
                return "TOPIC_ALREADY_EXISTS" in str(exc)

        assert _wait(created)
        assert _wait(lambda: len(_isr(c.bootstrap)[1]) == 3)
        yield c


def test_topics_describe_through_the_proxies_shows_the_full_isr(cluster: Cluster) -> None:
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "topics", "describe",
         "--bootstrap", cluster.bootstrap, "--topic", TOPIC],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith(f"Topic: {TOPIC} Partition: 0"))
    leader, isr = _isr(cluster.bootstrap)
    assert f"Leader: {leader}" in line
    assert "Replicas: " in line and "Isr: " in line
    assert sorted(int(x) for x in line.split("Isr: ")[1].split()[0].split(",")) == [1, 2, 3]
    assert isr == [1, 2, 3]


def test_partitioned_follower_leaves_and_rejoins_the_isr(cluster: Cluster) -> None:
    leader, _ = _isr(cluster.bootstrap)
    follower = next(i for i in (1, 2, 3) if i != leader)
    cluster.net.partition(f"broker-{leader}", f"broker-{follower}")
    produce_ok(cluster.bootstrap, TOPIC, [b"a"])
    assert _wait(lambda: follower not in _isr(cluster.bootstrap)[1])
    cluster.net.heal(f"broker-{leader}", f"broker-{follower}")
    assert _wait(lambda: follower in _isr(cluster.bootstrap)[1])


def test_isolated_leader_is_replaced_and_rejoins_as_follower(cluster: Cluster) -> None:
    old, _ = _isr(cluster.bootstrap)
    cluster.net.isolate(f"broker-{old}")
    others = ",".join(cluster.client_address(f"broker-{i}") for i in (1, 2, 3) if i != old)
    assert _wait(lambda: _isr(others)[0] not in (old, -1))
    cluster.net.rejoin(f"broker-{old}")
    assert _wait(lambda: old in _isr(cluster.bootstrap)[1] and _isr(cluster.bootstrap)[0] != old)
