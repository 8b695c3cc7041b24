"""Real-client helpers shared by the integration tests (confluent-kafka, kafka-python).

Every loop is bounded by a deadline; helpers return what the client reported so the tests
can compare acknowledged writes with what a consumer reads back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


@dataclass(frozen=True)
class Acked:
    partition: int
    offset: int
    value: bytes


def create_topic(
    bootstrap: str, topic: str, partitions: int = 1, config: dict[str, str] | None = None
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=1, config=config or {})],
        operation_timeout=10,
    )
    futures[topic].result(timeout=30)


def produce(
    bootstrap: str, topic: str, values: list[bytes], **config: object
) -> tuple[list[Acked], list[KafkaError]]:
    """Produce `values` in order; returns (acknowledged, errors) from the delivery reports."""
    acked: list[Acked] = []
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, msg) -> None:  # noqa: ANN001
        if err is not None:
            errors.append(err)
        else:
            acked.append(Acked(msg.partition(), msg.offset(), msg.value()))

    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5, "message.timeout.ms": 20000}
    conf.update(config)
    p = Producer(conf)
    for v in values:
        while True:
            try:
                p.produce(topic, v, partition=0, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    remaining = p.flush(60)
    assert remaining == 0, f"{remaining} messages still in flight after flush"
    return acked, errors


def consume_assigned(
    bootstrap: str,
    topic: str,
    count: int,
    *,
    partition: int = 0,
    offset: int = 0,
    group: str = "g1",
    timeout_s: float = 30.0,
    **config: object,
) -> list[tuple[int, bytes]]:
    """Consumer in assign() mode with a group.id; returns (offset, value) pairs read."""
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    conf.update(config)
    c = Consumer(conf)
    out: list[tuple[int, bytes]] = []
    try:
        c.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + timeout_s
        while len(out) < count and time.monotonic() < deadline:
            msgs = c.consume(num_messages=1000, timeout=0.5)
            for m in msgs:
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise AssertionError(f"consumer error: {m.error()}")
                out.append((m.offset(), m.value()))
    finally:
        c.close()
    return out
