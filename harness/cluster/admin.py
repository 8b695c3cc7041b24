"""Admin requests a fault plan sends through the client proxies, as an operator's tools would:
ElectLeaders (preferred), AlterPartitionReassignments for one partition, and a
`kafka-reassign-partitions --generate`/`--execute` rebalance. The container cluster's
`elect_preferred`/`reassign`/`rebalance` (harness/cluster/cluster.py) call these with its
bootstrap; the simulated cluster does the same through its active controller."""

from __future__ import annotations

import random
from collections.abc import Sequence


class AdminError(RuntimeError):
    """An admin request the cluster refused (a topic it does not know...)."""


def reassign(bootstrap: str, partition: str, replicas: Sequence[int],
             timeout_s: float = 30.0) -> None:
    """AlterPartitionReassignments through the client proxies (kafka-python's admin: the one
    client library here that sends it). Returns once the controller accepted the target; the
    move itself (adding replicas, catching up, dropping the old ones) runs on its own, as
    `kafka-reassign-partitions --execute` leaves it."""
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KpTopicPartition

    from harness.workload import parse_partition

    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","),
                             request_timeout_ms=int(timeout_s * 1000))
    try:
        admin.alter_partition_reassignments(
            {KpTopicPartition(*parse_partition(partition)): [int(r) for r in replicas]})
    finally:
        admin.close()


def rebalance(bootstrap: str, topics: Sequence[str], brokers: Sequence[int],
              rng: random.Random, timeout_s: float = 30.0) -> dict[tuple[str, int], list[int]]:
    """`kafka-reassign-partitions --generate` then `--execute`: the topics' current replicas
    (metadata), the placement Kafka's tool would propose over `brokers` (nemesis.placement),
    and one AlterPartitionReassignments for the partitions that move; returns those moves.
    No topics: every topic but the internal ones (`__…`); no brokers: every registered one."""
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KpTopicPartition

    from harness.client import LIBRDKAFKA_LOG
    from harness.nemesis.placement import propose

    md = AdminClient({"bootstrap.servers": bootstrap, "logger": LIBRDKAFKA_LOG}).list_topics(
        timeout=timeout_s)
    topics = list(topics) or sorted(t for t in md.topics if not t.startswith("__"))
    brokers = list(brokers) or sorted(md.brokers)
    current: dict[str, dict[int, list[int]]] = {}
    for topic in topics:
        t = md.topics.get(topic)
        if t is None or t.error is not None or not t.partitions:
            raise AdminError(f"rebalance: topic {topic!r} is not in the cluster's metadata")
        current[topic] = {p: list(pm.replicas) for p, pm in t.partitions.items()}
    moves = propose(current, brokers, rng)
    if moves:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","),
                                 request_timeout_ms=int(timeout_s * 1000))
        try:
            admin.alter_partition_reassignments(
                {KpTopicPartition(t, p): r for (t, p), r in moves.items()})
        finally:
            admin.close()
    return moves


def elect_preferred(bootstrap: str, partitions: Sequence[str] = (), timeout_s: float = 30.0
                    ) -> None:
    """ElectLeaders (preferred) through the client proxies; every partition when none given."""
    from confluent_kafka import ElectionType, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient
    from tenacity import Retrying, retry_if_exception, stop_after_attempt

    from harness.client import LIBRDKAFKA_LOG
    from harness.workload import parse_partition

    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": LIBRDKAFKA_LOG})
    tps = [TopicPartition(*parse_partition(p)) for p in partitions] or None

    def transient(exc: BaseException) -> bool:
        # The client sends ElectLeaders to a random live broker (Metadata's controller_id, as
        # KRaft brokers answer it), which forwards it; one cut off from the controllers never
        # answers. Another attempt usually lands on another broker.
        return isinstance(exc, KafkaException) and ("_TRANSPORT" in str(exc)
                                                    or "TIMED_OUT" in str(exc))

    for attempt in Retrying(stop=stop_after_attempt(3), retry=retry_if_exception(transient),
                            reraise=True):
        with attempt:
            # No request_timeout/operation_timeout: confluent-kafka 2.16.1's elect_leaders
            # raises SystemError ("more argument specifiers than keyword list entries") on
            # either; the future's own timeout bounds the wait.
            fut = admin.elect_leaders(ElectionType.PREFERRED, tps)
            try:
                fut.result(timeout=timeout_s)
            except KafkaException as exc:
                # ELECTION_NOT_NEEDED: the preferred replica already leads (or an attempt
                # whose answer was lost did it): not a failure.
                if "ELECTION_NOT_NEEDED" not in str(exc):
                    raise
