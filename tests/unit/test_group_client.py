"""harness.group_client.generation_of: the generation in librdkafka's group metadata bytes."""

from __future__ import annotations

import struct

from confluent_kafka import Consumer

from harness.group_client import generation_of


def test_a_consumer_outside_any_group_has_no_generation() -> None:
    # A real librdkafka object (no broker needed: the consumer never joined, generation -1).
    c = Consumer({"group.id": "g", "bootstrap.servers": "127.0.0.1:1"})
    try:
        raw = c.consumer_group_metadata()
    finally:
        c.close()
    assert raw.startswith(b"CGMDv2:")
    assert generation_of(raw) is None


def test_generation_is_read_after_the_magic() -> None:
    raw = b"CGMDv2:" + struct.pack("=i", 7) + b"g\x00\x00\x01"
    assert generation_of(raw) == 7


def test_unknown_bytes_give_none() -> None:
    assert generation_of(b"CGMDv3:\x07\x00\x00\x00") is None
    assert generation_of(b"CGMDv2:\x07") is None
    assert generation_of("CGMDv2:") is None
