"""The plan actions `reassign` and `rebalance` (harness.nemesis.handlers) on a local 3-broker
cluster: AlterPartitionReassignments moves replicas where the step says, or where
`kafka-reassign-partitions --generate` would put them over the brokers given."""

from __future__ import annotations

import random

from confluent_kafka.admin import AdminClient

from harness.nemesis.handlers import reassign, rebalance

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


def test_rebalance_moves_partitions_off_a_broker(cluster: Cluster) -> None:
    create_topic(cluster.bootstrap, "rb", partitions=6, rf=2)
    moves = rebalance(cluster.bootstrap, ["rb"], [1, 2], random.Random(3))
    assert moves, "broker 3 held replicas: something had to move"

    def placed() -> dict[int, list[int]]:
        return {p: _replicas(cluster.bootstrap, "rb", p) for p in range(6)}

    final = wait_until(lambda: all(set(r) <= {1, 2} for r in placed().values()) and placed(),
                       60, "every replica on brokers 1 and 2")
    for (_, p), r in moves.items():
        assert final[p] == r
