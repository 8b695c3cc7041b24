"""What librdkafka's own integration suite found (issue 29), each rule as Kafka has it, on a
lone broker's KafkaApis (combined mode, lone_broker.py): the test number of the suite is in
each test's name."""

from __future__ import annotations

from typing import Any

from broker_app.protocol.apis import ApiKey
from broker_app.protocol.codec import request_class
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors
from broker_app.storage.records import build_batch
from tests.unit.protocol.lone_broker import LoneBroker
from tests.unit.protocol.test_kafka_apis import request_data, roundtrip


def _produce(broker: LoneBroker, topic: str, partition: int, batch: bytes) -> Any:
    body = build(request_class(ApiKey.PRODUCE, 9), request_data(ApiKey.PRODUCE, batch) | {
        "topic_data": [{"name": topic, "partition_data": [{"index": partition,
                                                           "records": batch}]}],
    })  # fmt: skip
    return roundtrip(broker, body).responses[0].partition_responses[0]


def _fetch(broker: LoneBroker, topic: str, partitions: int, max_bytes: int,
           partition_max_bytes: int) -> list[bytes]:  # fmt: skip
    data = request_data(ApiKey.FETCH, b"") | {"max_bytes": max_bytes}
    data["topics"][0]["topic"] = topic
    data["topics"][0]["partitions"] = [
        data["topics"][0]["partitions"][0] | {"partition": i,
                                              "partition_max_bytes": partition_max_bytes}
        for i in range(partitions)]  # fmt: skip
    resp = roundtrip(broker, build(request_class(ApiKey.FETCH, 12), data))
    by_index = {p.partition_index: p for p in resp.responses[0].partitions}
    return [by_index[i].records for i in range(partitions)]


def test_0082_fetch_response_capped_at_max_bytes_with_one_batch_at_least(broker) -> None:
    """KIP-74: the response's max_bytes bounds the whole response; only the first partition
    with data may exceed it, by its first batch. The partition limit alone did before."""
    broker.create_topic("t", 2)
    batch = build_batch([(None, b"v" * 1000)])
    for p in (0, 1):
        for _ in range(3):
            assert _produce(broker, "t", p, batch).error_code.value == Errors.NONE
    size = len(batch)
    # Room for one batch and a half: the first partition gets one, the second none.
    assert [len(r) for r in _fetch(broker, "t", 2, size + size // 2, 1 << 20)] == [size, 0]
    # Less than one batch: the first partition still gets exactly one.
    assert [len(r) for r in _fetch(broker, "t", 2, 10, 1 << 20)] == [size, 0]
    # Room for everything: both partitions whole.
    assert [len(r) for r in _fetch(broker, "t", 2, 1 << 20, 1 << 20)] == [3 * size, 3 * size]
    # The partition limit still bounds each partition.
    assert [len(r) for r in _fetch(broker, "t", 2, 1 << 20, 2 * size)] == [2 * size, 2 * size]


def test_0011_compacted_topic_refuses_keyless_records_each_named(broker) -> None:
    """KIP-467 / LogValidator.validateKey: a compacted topic takes no record without a key;
    the produce answer is INVALID_RECORD with the index of every keyless record, which
    librdkafka turns into INVALID_RECORD for those and _INVALID_DIFFERENT_RECORD for the rest."""
    broker.create_topic("c", cleanup_policy="compact")
    log = broker.replica_manager.get_partition("c", 0).log
    mixed = build_batch([(b"k0", b"a"), (None, b"b"), (b"k2", b"c"), (None, b"d")])
    part = _produce(broker, "c", 0, mixed)
    assert part.error_code.value == Errors.INVALID_RECORD
    assert [(e.batch_index, e.batch_index_error_message) for e in part.record_errors] == [
        (1, "Compacted topic cannot accept message without key"),
        (3, "Compacted topic cannot accept message without key")]
    assert "2 record errors" in part.error_message
    assert log.log_end_offset == 0  # nothing of the batch was written
    keyed = build_batch([(b"k0", b"a"), (b"k1", b"b")])
    assert _produce(broker, "c", 0, keyed).error_code.value == Errors.NONE
    # cleanup.policy=delete (the default) takes keyless records.
    broker.create_topic("d")
    part = _produce(broker, "d", 0, mixed)
    assert (part.error_code.value, list(part.record_errors)) == (Errors.NONE, [])


def test_0011_compaction_switched_on_by_alter_configs_applies_to_the_next_produce(broker) -> None:
    broker.create_topic("t")
    keyless = build_batch([(None, b"a")])
    assert _produce(broker, "t", 0, keyless).error_code.value == Errors.NONE
    body = build(request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1), {
        "resources": [{"resource_type": 2, "resource_name": "t", "configs": [
            {"name": "cleanup.policy", "config_operation": 2, "value": "compact"}]}],
        "validate_only": False})  # fmt: skip
    assert roundtrip(broker, body).responses[0].error_code.value == Errors.NONE
    part = _produce(broker, "t", 0, keyless)
    assert part.error_code.value == Errors.INVALID_RECORD
    assert [e.batch_index for e in part.record_errors] == [0]


def _create(broker: LoneBroker, name: str, configs: dict[str, str]) -> Any:
    data = request_data(ApiKey.CREATE_TOPICS, b"")
    data["topics"][0] |= {"name": name, "configs": [{"name": k, "value": v}
                                                    for k, v in configs.items()]}
    return roundtrip(broker, build(request_class(ApiKey.CREATE_TOPICS, 5), data)).topics[0]


def _alter(broker: LoneBroker, topic: str, name: str, value: str, op: int = 0) -> Any:
    body = build(request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1), {
        "resources": [{"resource_type": 2, "resource_name": topic, "configs": [
            {"name": name, "config_operation": op, "value": value}]}],
        "validate_only": False})  # fmt: skip
    return roundtrip(broker, body).responses[0]


def test_0081_every_kafka_topic_config_is_accepted_and_removed_ones_refused(broker) -> None:
    """Kafka 4.1's topic configs (LogConfig) are all known; the suite's CreateTopics with
    delete.retention.ms and AlterConfigs with flush.ms were INVALID_CONFIG before."""
    t = _create(broker, "t", {"delete.retention.ms": "1000", "min.cleanable.dirty.ratio": "0.2",
                            "leader.replication.throttled.replicas": "0:1,1:2"})
    assert t.error_code.value == Errors.NONE, t.error_message
    assert _alter(broker, "t", "flush.ms", "10").error_code.value == Errors.NONE
    # Values are still checked, with Kafka's ranges, naming the config.
    bad = _alter(broker, "t", "min.cleanable.dirty.ratio", "1.5")
    assert bad.error_code.value == Errors.INVALID_CONFIG
    assert "min.cleanable.dirty.ratio" in bad.error_message
    assert _alter(broker, "t", "compression.gzip.level", "0").error_code.value == \
        Errors.INVALID_CONFIG
    # Removed in Kafka 4.0 (KIP-724): unknown, as there.
    gone = _create(broker, "u", {"message.format.version": "3.0"})
    assert gone.error_code.value == Errors.INVALID_CONFIG
    described = roundtrip(broker, build(request_class(ApiKey.DESCRIBE_CONFIGS, 4), {
        "resources": [{"resource_type": 2, "resource_name": "t", "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False}))  # fmt: skip
    configs = {c.name: c.value for c in described.results[0].configs}
    assert (configs["delete.retention.ms"], configs["flush.ms"]) == ("1000", "10")
    assert configs["segment.ms"] == "604800000"  # Kafka's default where the topic set none


def test_topic_timestamp_window_is_the_leaders_validator_window(broker) -> None:
    """message.timestamp.after.max.ms of the topic bounds how far ahead a record may be."""
    assert _create(broker, "t", {"message.timestamp.after.max.ms": "0"}).error_code.value == 0
    future = build_batch([(None, b"a")], timestamp=2**62)
    part = _produce(broker, "t", 0, future)
    assert part.error_code.value == Errors.INVALID_TIMESTAMP
    assert _alter(broker, "t", "message.timestamp.after.max.ms", str(2**62)).error_code.value == 0
    assert _produce(broker, "t", 0, future).error_code.value == Errors.NONE


def _describe_broker(broker: LoneBroker) -> dict[str, str | None]:
    described = roundtrip(broker, build(request_class(ApiKey.DESCRIBE_CONFIGS, 4), {
        "resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False}))  # fmt: skip
    assert described.results[0].error_code.value == Errors.NONE
    return {c.name: c.value for c in described.results[0].configs}


def test_0101_broker_rack_is_described(tmp_path: Any, broker: LoneBroker) -> None:
    """librdkafka's fetch-from-follower test finds each broker's rack with DescribeConfigs
    and skipped itself when broker.rack was missing; null when unset, as Kafka has it."""
    from broker_app.config import BrokerConfig

    assert "broker.rack" in _describe_broker(broker)
    assert _describe_broker(broker)["broker.rack"] is None
    racked = LoneBroker(BrokerConfig(node_id=1, data_dir=tmp_path / "r", port=9092,
                                     broker_rack="RACK1"))
    try:
        assert _describe_broker(racked)["broker.rack"] == "RACK1"
    finally:
        racked.close()


def test_0081_authorized_operations_when_asked(broker) -> None:
    """KIP-430: a client asking for authorized operations (DescribeTopics / DescribeCluster /
    DescribeConsumerGroups with include_authorized_operations) gets, as from Kafka without an
    authorizer, every operation the resource type supports; not asking gets INT32_MIN."""
    from broker_app.server.api_common import (
        CLUSTER_OPERATIONS,
        GROUP_OPERATIONS,
        OPERATIONS_NOT_ASKED,
        TOPIC_OPERATIONS,
    )

    broker.create_topic("t")
    # READ(3) WRITE(4) CREATE(5) DELETE(6) ALTER(7) DESCRIBE(8) DESCRIBE_CONFIGS(10)
    # ALTER_CONFIGS(11): Kafka's AclEntry.supportedOperations(TOPIC)
    assert TOPIC_OPERATIONS == 0b110111111000
    for asked, want in ((True, TOPIC_OPERATIONS), (False, OPERATIONS_NOT_ASKED)):
        data = request_data(ApiKey.METADATA, b"") | {
            "include_topic_authorized_operations": asked}
        topic = roundtrip(broker, build(request_class(ApiKey.METADATA, 12), data)).topics[0]
        assert topic.topic_authorized_operations == want
    for asked, want in ((True, CLUSTER_OPERATIONS), (False, OPERATIONS_NOT_ASKED)):
        body = build(request_class(ApiKey.DESCRIBE_CLUSTER, 1), {
            "include_cluster_authorized_operations": asked, "endpoint_type": 1})
        assert roundtrip(broker, body).cluster_authorized_operations == want
    body = build(request_class(ApiKey.DESCRIBE_GROUPS, 5), {
        "groups": ["g"], "include_authorized_operations": True})
    assert roundtrip(broker, body).groups[0].authorized_operations == GROUP_OPERATIONS
