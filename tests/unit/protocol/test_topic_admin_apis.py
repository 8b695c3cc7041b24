"""Admin APIs on a lone broker (combined mode, lone_broker.py): DeleteTopics,
CreatePartitions, Describe/Alter configs, DeleteRecords, DescribeLogDirs; the configs take
effect, bad input gets Kafka's codes."""

from __future__ import annotations

import uuid

from broker_app.protocol.apis import ApiKey
from broker_app.protocol.error_codes import Errors
from broker_app.storage.records import build_batch


def _handle(broker, api_key: int, version: int, data: dict):
    return broker.call(api_key, version, data)


def _topic(broker, name: str = "t", partitions: int = 1, **configs: str) -> None:
    broker.create_topic(name, partitions, **{k.replace(".", "_"): v for k, v in configs.items()})


def _configs(broker, name: str) -> dict[str, str]:
    return dict(broker.topic(name).configs)


def _incremental(broker, name: str, *ops: tuple[str, int, str | None], rtype: int = 2):
    return _handle(broker, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": False,
        "resources": [{"resource_type": rtype, "resource_name": name, "configs": [
            {"name": n, "config_operation": op, "value": v} for n, op, v in ops]}]}
    ).responses[0]  # fmt: skip


def _produce(broker, acks: int):
    return _handle(broker, ApiKey.PRODUCE, 9, {"transactional_id": None, "acks": acks,
        "timeout": 100, "topic_data": [{"name": "t", "partition_data": [
            {"index": 0, "records": build_batch([(None, b"v")] * 3)}]}]})  # fmt: skip


def test_delete_topic_removes_its_log_and_error_codes(broker) -> None:
    _topic(broker, "a", 2)
    log_dir = broker.replica_manager.get_partition("a", 0).log.dir
    resp = _handle(broker, ApiKey.DELETE_TOPICS, 6, {"timeout": 1000, "topics": [
        {"name": "a", "topic_id": None}, {"name": "nope", "topic_id": None},
        {"name": None, "topic_id": uuid.UUID(int=7)}, {"name": "", "topic_id": None}]})  # fmt: skip
    codes = [r.error_code.value for r in resp.responses]
    assert codes == [Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_ID,
                     Errors.UNKNOWN_TOPIC_ID]  # fmt: skip
    assert broker.topic("a") is None and broker.replica_manager.get_partition("a", 1) is None
    assert not log_dir.exists()
    dup = _handle(broker, ApiKey.DELETE_TOPICS, 1, {"timeout": 1000, "topic_names": ["x", "x"]})
    assert {r.error_code.value for r in dup.responses} == {Errors.INVALID_REQUEST}


def test_create_partitions_hosts_the_new_ones_and_rejects_bad_counts(broker) -> None:
    _topic(broker, "t", 1)

    def create(count: int, assignments=None, name: str = "t") -> int:
        return _handle(broker, ApiKey.CREATE_PARTITIONS, 3, {"timeout": 1, "validate_only": False,
            "topics": [{"name": name, "count": count, "assignments": assignments}]}
        ).results[0].error_code.value  # fmt: skip

    assert create(3) == Errors.NONE and broker.replica_manager.get_partition("t", 2) is not None
    assert create(3) == Errors.INVALID_PARTITIONS
    assert create(-5) == Errors.INVALID_PARTITIONS
    assert create(2**31 - 1) == Errors.INVALID_PARTITIONS
    assert create(4, [{"broker_ids": [9]}]) == Errors.INVALID_REPLICA_ASSIGNMENT
    assert create(5, [{"broker_ids": [1]}]) == Errors.INVALID_REPLICA_ASSIGNMENT  # 1 of 2
    assert create(2, name="nope") == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_describe_configs_topic_broker_and_unknowns(broker) -> None:
    _topic(broker, "t", **{"retention.ms": "1000"})
    resp = _handle(broker, ApiKey.DESCRIBE_CONFIGS, 4, {"include_synonyms": False,
        "include_documentation": False, "resources": [
            {"resource_type": 2, "resource_name": "t", "configuration_keys": None},
            {"resource_type": 4, "resource_name": "1", "configuration_keys": ["num.partitions"]},
            {"resource_type": 2, "resource_name": "nope", "configuration_keys": None},
            {"resource_type": 4, "resource_name": "7", "configuration_keys": None},
            {"resource_type": 99, "resource_name": "x", "configuration_keys": None}]})  # fmt: skip
    topic, broker, *bad = resp.results
    by_name = {c.name: c for c in topic.configs}
    assert (by_name["retention.ms"].value, by_name["retention.ms"].config_source) == ("1000", 1)
    assert by_name["cleanup.policy"].config_source == 5  # DEFAULT_CONFIG
    assert [(c.name, c.value) for c in broker.configs] == [("num.partitions", "1")]
    assert [r.error_code.value for r in bad] == [Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                                  Errors.INVALID_REQUEST, Errors.INVALID_REQUEST]


def test_min_insync_change_changes_acks_all(broker_pre37) -> None:
    # Kafka 3.5's rules: from 3.7 min.insync.replicas is capped at the replica count (1 here).
    broker = broker_pre37
    _topic(broker, "t")
    assert _produce(broker, -1).responses[0].partition_responses[0].error_code.value == 0
    assert _incremental(broker, "t", ("min.insync.replicas", 0, "2")).error_code.value == 0
    resp = _produce(broker, -1)
    assert resp.responses[0].partition_responses[0].error_code.value == \
        Errors.NOT_ENOUGH_REPLICAS  # one broker < min ISR 2
    assert _incremental(broker, "t", ("min.insync.replicas", 1, None)).error_code.value == 0
    assert _produce(broker, -1).responses[0].partition_responses[0].error_code.value == 0


def test_alter_configs_rejects_unknown_names_bad_values_and_broker_resources(broker) -> None:
    _topic(broker, "t", **{"retention.ms": "7"})
    bad = [
        (("no.such.config", 0, "1"), Errors.INVALID_CONFIG, "no.such.config"),
        (("min.insync.replicas", 0, "zero"), Errors.INVALID_CONFIG, "min.insync.replicas"),
        (("min.insync.replicas", 0, "0"), Errors.INVALID_CONFIG, "min.insync.replicas"),
        (("cleanup.policy", 0, "shred"), Errors.INVALID_CONFIG, "cleanup.policy"),
        (("retention.ms", 2, "5"), Errors.INVALID_CONFIG, "retention.ms"),  # APPEND, not a list
        (("retention.ms", 9, "5"), Errors.INVALID_REQUEST, "operation"),
        (("retention.ms", 0, None), Errors.INVALID_CONFIG, "null"),
    ]
    for op, code, named in bad:
        r = _incremental(broker, "t", op)
        assert r.error_code.value == code and named in r.error_message, (op, r)
    assert _configs(broker, "t") == {"retention.ms": "7"}  # nothing half-applied
    # a static broker config: not dynamically updatable (Kafka's answer too)
    r = _incremental(broker, "1", ("num.partitions", 0, "3"), rtype=4)
    assert r.error_code.value == Errors.INVALID_CONFIG and "num.partitions" in r.error_message
    assert _incremental(broker, "nope", ("retention.ms", 0, "3")).error_code.value == \
        Errors.UNKNOWN_TOPIC_OR_PARTITION
    # cleanup.policy is a list: APPEND / SUBTRACT
    assert _incremental(broker, "t", ("cleanup.policy", 2, "compact")).error_code.value == 0
    assert _configs(broker, "t")["cleanup.policy"] == "compact"
    # legacy AlterConfigs replaces the whole set: retention.ms reverts to its default
    resp = _handle(broker, ApiKey.ALTER_CONFIGS, 2, {"validate_only": False, "resources": [
        {"resource_type": 2, "resource_name": "t", "configs": [
            {"name": "segment.bytes", "value": "100000"}]}]})  # fmt: skip
    assert resp.responses[0].error_code.value == 0
    assert _configs(broker, "t") == {"segment.bytes": "100000"}
    assert broker.replica_manager.get_partition("t", 0).log.config.segment_bytes == 100000


def test_delete_records_moves_the_log_start_and_bad_offsets_are_out_of_range(broker) -> None:
    _topic(broker, "t")
    for _ in range(3):
        _produce(broker, 1)

    def delete(offset: int, partition: int = 0, topic: str = "t"):
        return _handle(broker, ApiKey.DELETE_RECORDS, 2, {"timeout": 1000, "topics": [
            {"name": topic, "partitions": [{"partition_index": partition, "offset": offset}]}]}
        ).topics[0].partitions[0]  # fmt: skip

    r = delete(4)
    assert (r.error_code.value, r.low_watermark) == (0, 4)
    assert delete(100).error_code.value == Errors.OFFSET_OUT_OF_RANGE  # beyond the HW
    assert delete(-7).error_code.value == Errors.OFFSET_OUT_OF_RANGE
    assert delete(0, partition=5).error_code.value == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert delete(0, topic="nope").error_code.value == Errors.UNKNOWN_TOPIC_OR_PARTITION
    earliest = _handle(broker, ApiKey.LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -2,
                                                 "current_leader_epoch": -1}]}]})  # fmt: skip
    assert earliest.topics[0].partitions[0].offset == 4
    fetch = _handle(broker, ApiKey.FETCH, 12, {"replica_id": -1, "max_wait": 0, "min_bytes": 0,
        "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 1,
            "partition_max_bytes": 1 << 20, "current_leader_epoch": -1,
            "last_fetched_epoch": -1, "log_start_offset": -1}]}],
        "forgotten_topics_data": [], "rack_id": ""})  # fmt: skip
    p = fetch.responses[0].partitions[0]
    assert (p.error_code.value, p.log_start_offset) == (Errors.OFFSET_OUT_OF_RANGE, 4)
    assert delete(-1).low_watermark == 9  # -1: up to the HW


def test_describe_log_dirs_lists_hosted_partitions_with_sizes(broker) -> None:
    _topic(broker, "t", 2)
    _produce(broker, 1)
    wanted = [{"topic": "t", "partitions": [0, 1, 7]}, {"topic": "nope", "partitions": [0]}]
    resp = _handle(broker, ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": wanted})
    [d] = resp.results
    parts = {p.partition_index: p for t in d.topics for p in t.partitions}
    assert sorted(parts) == [0, 1] and parts[0].partition_size > 0 == parts[1].partition_size
    assert d.log_dir == str(broker.config.data_dir) and d.total_bytes > 0
