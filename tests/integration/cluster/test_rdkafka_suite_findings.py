"""What librdkafka's own suite found on a cluster (issue 29), with a real client: 1 controller
+ 3 brokers as local processes (auto-create on, as the suite's default scenario has it)."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, Producer

from broker_app.protocol.apis import ApiKey
from broker_app.protocol.codec import request_class
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors

from ..rawclient import RawClient


def test_0057_illegal_topic_name_fails_at_once_and_is_never_created(cluster) -> None:
    """Kafka answers Metadata for an illegal name INVALID_TOPIC_EXCEPTION whether or not it
    may auto-create, and never asks the controller; LEADER_NOT_AVAILABLE made librdkafka
    retry until its message timeout."""
    bad = "bad/topic!"
    body = build(request_class(ApiKey.METADATA, 12), {
        "topics": [{"name": bad, "topic_id": None}], "allow_auto_topic_creation": True,
        "include_topic_authorized_operations": False})  # fmt: skip
    broker = next(iter(cluster.brokers.values()))
    with RawClient(broker.port) as raw:
        topic = raw.request(body).topics[0]
    assert topic.error_code.value == Errors.INVALID_TOPIC_EXCEPTION
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "message.timeout.ms": 30_000})
    producer.produce(bad, b"v", on_delivery=lambda err, _msg: errors.append(err))
    assert producer.flush(40) == 0
    # The broker's answer, not the message timeout (_MSG_TIMED_OUT), ended the send.
    assert [e.code() for e in errors] == [KafkaError.TOPIC_EXCEPTION], errors
    with RawClient(broker.port) as raw:
        assert raw.request(body).topics[0].error_code.value == Errors.INVALID_TOPIC_EXCEPTION
