"""`highwater topics describe --bootstrap HOST:PORT [--topic T]`: like kafka-topics --describe.

Prints one line per partition, `Topic: T Partition: 0 Leader: 1 Replicas: 1,2,3 Isr: 1,2,3`,
from a broker's Metadata (confluent-kafka AdminClient.list_topics, which reports the ISR as the
controller committed it). Exit 1 when the cluster cannot be reached or the topic is unknown.
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
    lines = []
    for name in sorted(md.topics):
        t = md.topics[name]
        if t.error is not None:
            raise LookupError(f"topic {name!r}: {t.error.str()}")
        for pid in sorted(t.partitions):
            p = t.partitions[pid]
            lines.append(
                f"Topic: {name} Partition: {pid} Leader: {p.leader} "
                f"Replicas: {','.join(map(str, p.replicas))} Isr: {','.join(map(str, p.isrs))}"
            )
    return lines


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
