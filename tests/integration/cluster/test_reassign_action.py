"""The plan actions `reassign`, `rebalance` and `elect-preferred` (harness.nemesis.handlers) on
a local 3-broker cluster: AlterPartitionReassignments moves replicas where the step says, or
where `kafka-reassign-partitions --generate` would put them over the brokers given;
ElectLeaders gives a partition back to its preferred replica."""

from __future__ import annotations

import random

from confluent_kafka.admin import AdminClient

from harness.cluster.admin import elect_preferred, reassign, rebalance

from .conftest import Cluster
from .helpers import create_topic, wait_until


def _partition(bootstrap: str, topic: str, partition: int = 0):  # PartitionMetadata
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return md.topics[topic].partitions[partition]


def _replicas(bootstrap: str, topic: str, partition: int) -> list[int]:
    return list(_partition(bootstrap, topic, partition).replicas)


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


def test_elect_preferred_gives_the_leadership_back(cluster: Cluster) -> None:
    """confluent-kafka 2.16.1's elect_leaders raised SystemError on a timeout keyword, so the
    step failed in every container run; the partition stayed with the other replica."""
    create_topic(cluster.bootstrap, "ep", partitions=1, rf=3)
    preferred = _replicas(cluster.bootstrap, "ep", 0)[0]
    elect_preferred(cluster.bootstrap, ["ep-0"])  # already led by it: ELECTION_NOT_NEEDED
    cluster.brokers[preferred].stop()  # a controlled shutdown moves the leadership away
    other = wait_until(lambda: (lead := _leader(cluster, "ep")) not in (-1, preferred) and lead, 30,
                       "a leader other than the preferred replica")  # fmt: skip
    cluster.brokers[preferred].start()
    wait_until(lambda: len(_isr(cluster, "ep")) == 3, 30, "the preferred replica back in the ISR")
    assert _leader(cluster, "ep") == other
    elect_preferred(cluster.bootstrap, ["ep-0"])
    wait_until(lambda: _leader(cluster, "ep") == preferred, 30, "the preferred replica leads")


def _leader(cluster: Cluster, topic: str) -> int:
    return _partition(cluster.bootstrap, topic).leader


def _isr(cluster: Cluster, topic: str) -> list[int]:
    return list(_partition(cluster.bootstrap, topic).isrs)
