"""Client helpers for cluster tests: AdminClient topic creation, acks producers, waits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed


class NotYet(Exception):
    pass


def wait_until(check: Callable[[], Any], timeout: float = 30, what: str = "condition") -> Any:
    """Poll `check` (truthy = done; exceptions = not yet) for at most `timeout` seconds."""
    last: list[Any] = [None]

    def attempt() -> Any:
        try:
            value = check()
        except (OSError, KafkaException, KeyError, TypeError) as e:
            last[0] = e
            raise NotYet(str(e)) from e
        if not value:
            last[0] = value
            raise NotYet(what)
        return value

    for a in Retrying(stop=stop_after_delay(timeout), wait=wait_fixed(0.2),
                      retry=retry_if_exception_type(NotYet), reraise=True):  # fmt: skip
        with a:
            return attempt()
    raise AssertionError(f"{what}: last {last[0]!r}")  # unreachable


def create_topic(bootstrap: str, name: str, partitions: int = 1, rf: int = 3,
                 config: dict[str, str] | None = None) -> None:  # fmt: skip
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, partitions, rf, config=config or {})], request_timeout=15
    )
    futures[name].result(timeout=30)


def produce(bootstrap: str, topic: str, values: list[bytes], acks: str = "all",
            timeout: float = 30) -> list[Any]:  # fmt: skip
    """Produce `values` one by one; returns each delivery's (error or None, offset)."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": False,
                  "message.timeout.ms": int(timeout * 1000), "retries": 0,
                  "linger.ms": 0})  # fmt: skip
    out: list[Any] = []
    for v in values:
        p.produce(topic, v, partition=0,
                  on_delivery=lambda err, msg: out.append((err, msg.offset() if msg else -1)))
        p.flush(timeout)
    return out


def consume_all(bootstrap: str, topic: str, expected: int, timeout: float = 30) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "t", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})  # fmt: skip
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got: list[bytes] = []

        def more() -> bool:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
            return len(got) >= expected

        wait_until(more, timeout, f"{expected} records from {topic}")
        return got
    finally:
        c.close()
