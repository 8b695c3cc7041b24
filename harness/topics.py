"""`highwater topics describe --bootstrap HOST:PORT [--topic T]`: like kafka-topics --describe.

Prints one line per partition, `Topic: T Partition: 0 Leader: 1 Replicas: 1,2,3 Isr: 1,2,3
Elr: 2 LastKnownElr: ` (Kafka 4.x's format), from a broker's Metadata (confluent-kafka
AdminClient.list_topics, which reports the ISR as the controller committed it) and the ELR
fields from DescribeTopicPartitions (KIP-966; kafka-python's describe_topic_partitions, as
librdkafka does not call that API). Exit 1 when the cluster cannot be reached or the topic is
unknown.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="topics_action", metavar="ACTION", required=True)
    d = sub.add_parser("describe", help="leader, replicas and ISR of each partition")
    d.add_argument("--bootstrap", required=True, help="HOST:PORT of any broker")
    d.add_argument("--topic", default=None, help="only this topic")
    d.add_argument("--timeout", type=float, default=10.0, help="seconds")


def describe_lines(bootstrap: str, topic: str | None = None, timeout: float = 10.0) -> list[str]:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    md = admin.list_topics(topic=topic, timeout=timeout)
    elr = _eligible_leader_replicas(bootstrap, [topic] if topic else [], timeout)
    lines = []
    for name in sorted(md.topics):
        t = md.topics[name]
        if t.error is not None:
            raise LookupError(f"topic {name!r}: {t.error.str()}")
        for pid in sorted(t.partitions):
            p = t.partitions[pid]
            lines.append(
                f"Topic: {name} Partition: {pid} Leader: {p.leader} "
                f"Replicas: {','.join(map(str, p.replicas))} Isr: {','.join(map(str, p.isrs))} "
                + elr.get((name, pid), "Elr: ? LastKnownElr: ?")
            )
    return lines


def _eligible_leader_replicas(bootstrap: str, topics: list[str], timeout: float
                              ) -> dict[tuple[str, int], str]:  # fmt: skip
    """(topic, partition) -> "Elr: ... LastKnownElr: ..." via DescribeTopicPartitions; empty
    when the broker does not answer it (the lines then show "?")."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    def ids(v: list[int] | None) -> str:
        return ",".join(map(str, v or []))

    out: dict[tuple[str, int], str] = {}
    admin = None
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap,
                                 request_timeout_ms=int(timeout * 1000))  # fmt: skip
        cursor = None
        for _ in range(1000):  # bounded paging: 2000 partitions a page
            page = admin.describe_topic_partitions(topics, cursor=cursor)
            for t in page["topics"]:
                for p in t["partitions"]:
                    out[(t["name"], p["partition_index"])] = (
                        f"Elr: {ids(p['eligible_leader_replicas'])} "
                        f"LastKnownElr: {ids(p['last_known_elr'])}")
            cursor = page["next_cursor"]
            if cursor is None:
                break
    except (KafkaError, OSError, ValueError):
        return out
    finally:
        if admin is not None:
            admin.close()
    return out


def run(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException

    try:
        lines = describe_lines(args.bootstrap, args.topic, args.timeout)
    except (KafkaException, LookupError) as e:
        print(f"highwater topics describe: {e}", file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return 0
