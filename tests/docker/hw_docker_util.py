"""Helpers for the docker tests: real clients (confluent-kafka, bounded everywhere) and a
look at what docker still holds for given run ids."""

from __future__ import annotations

import subprocess
import time
import uuid
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition


def producer(bootstrap: str, **conf: Any) -> Producer:
    base = {
        "bootstrap.servers": bootstrap,
        "acks": "1",
        "linger.ms": 0,
        "message.timeout.ms": 10_000,
        "socket.timeout.ms": 5_000,
        "reconnect.backoff.max.ms": 500,
        "log_level": 3,
    }
    return Producer({**base, **conf})


def produce(p: Producer, topic: str, values: list[bytes], timeout_s: float) -> list[Any]:
    """Produce values and wait (bounded) for every delivery report; returns the errors
    (None for each delivered message)."""
    results: list[Any] = []
    for v in values:
        p.produce(topic, v, on_delivery=lambda err, _msg: results.append(err))
    deadline = time.monotonic() + timeout_s
    while len(results) < len(values) and time.monotonic() < deadline:
        p.poll(0.1)
    results += ["no delivery report in time"] * (len(values) - len(results))
    return results


def produce_ok(bootstrap: str, topic: str, values: list[bytes], timeout_s: float = 30) -> None:
    errors = [e for e in produce(producer(bootstrap), topic, values, timeout_s) if e is not None]
    assert not errors, f"produce to {topic} via {bootstrap} failed: {errors[:3]}"


def consume(bootstrap: str, topic: str, n: int, timeout_s: float = 30) -> list[bytes]:
    """Read partition 0 of topic from the start (assign, no group: only Fetch/ListOffsets)."""
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"g-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "log_level": 3,
    })
    got: list[bytes] = []
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        while len(got) < n and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                continue  # transient (e.g. topic not yet known); bounded by the deadline
            got.append(msg.value())
    finally:
        c.close()
    return got


def docker_cli(*args: str) -> str:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=120)
    return proc.stdout


def leftovers(run_ids: list[str]) -> list[str]:
    """Containers and networks labelled with one of run_ids, as `docker ... ls` shows them."""
    found = []
    for rid in run_ids:
        for what in (["ps", "-aq"], ["network", "ls", "-q"]):
            out = docker_cli(*what, "--filter", f"label=highwater.run={rid}").split()
            found += [f"{rid}:{x}" for x in out]
    return found
