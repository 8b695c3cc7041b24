"""What librdkafka's own suite found on a cluster (issue 29), with a real client: 1 controller
+ 3 brokers as local processes (auto-create on, as the suite's default scenario has it)."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

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


def test_0081_group_config_resource_is_stored_described_and_validated(cluster) -> None:
    """KIP-848 group configs (Kafka 4.0+): IncrementalAlterConfigs on a GROUP resource sets
    and deletes them, DescribeConfigs shows them for any group id (GROUP_CONFIG where set,
    the default otherwise), and a value outside the group coordinator's bounds or an unknown
    name is INVALID_CONFIG. librdkafka's 0081 expects this from a 4.x broker; the broker
    answered INVALID_REQUEST."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})

    def alter(group: str, name: str, value: str | None, op: AlterConfigOpType) -> None:
        res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
            ConfigEntry(name, value, incremental_operation=op)])
        admin.incremental_alter_configs([res])[res].result(15)

    def describe(group: str) -> dict[str, Any]:
        res = ConfigResource(ResourceType.GROUP, group)
        return admin.describe_configs([res])[res].result(15)

    fresh = describe("no-such-group")  # any group id, as Kafka answers it
    assert fresh["consumer.session.timeout.ms"].value == "45000"
    assert fresh["consumer.session.timeout.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    alter("my-group", "consumer.session.timeout.ms", "50000", AlterConfigOpType.SET)
    entry = describe("my-group")["consumer.session.timeout.ms"]
    assert (entry.value, entry.source) == ("50000", ConfigSource.GROUP_CONFIG.value)
    assert describe("other-group")["consumer.session.timeout.ms"].value == "45000"

    for name, value in (("consumer.session.timeout.ms", "5000"),  # below the 45 s minimum
                        ("no.such.group.config", "1")):
        try:
            alter("my-group", name, value, AlterConfigOpType.SET)
        except KafkaException as e:
            assert e.args[0].code() == KafkaError.INVALID_CONFIG, e
            assert name in e.args[0].str()
        else:
            raise AssertionError(f"{name}={value} was accepted")
    assert describe("my-group")["consumer.session.timeout.ms"].value == "50000"

    alter("my-group", "consumer.session.timeout.ms", None, AlterConfigOpType.DELETE)
    entry = describe("my-group")["consumer.session.timeout.ms"]
    assert (entry.value, entry.source) == ("45000", ConfigSource.DEFAULT_CONFIG.value)
