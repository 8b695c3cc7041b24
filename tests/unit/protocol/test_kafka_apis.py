"""KafkaApis of a lone broker (combined mode, lone_broker.py): every advertised (api, version)
decodes, is handled and encodes; plus the produce/fetch/offsets rules on a real Log in a tmp
dir."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from broker_app.config import BrokerConfig
from broker_app.protocol.apis import SUPPORTED_APIS, ApiKey
from broker_app.protocol.codec import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_class,
)
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors
from broker_app.server.kafka_apis import NO_RESPONSE, CloseConnection, DelayedFetch
from broker_app.storage.records import build_batch
from tests.unit.protocol.lone_broker import LoneBroker


def request_data(api_key: int, batch: bytes) -> dict[str, Any]:
    """A superset request body valid for every version of `api_key`."""
    return {
        ApiKey.API_VERSIONS: {"client_software_name": "t", "client_software_version": "1"},
        ApiKey.DESCRIBE_TOPIC_PARTITIONS: {"topics": [{"name": "t"}],
                                           "response_partition_limit": 10, "cursor": None},
        ApiKey.METADATA: {
            "topics": [{"name": "t", "topic_id": uuid.UUID(int=0)}],
            "allow_auto_topic_creation": True,
            "include_topic_authorized_operations": False,
            "include_cluster_authorized_operations": False,
        },
        ApiKey.CREATE_TOPICS: {
            "topics": [
                {
                    "name": "t",
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [{"name": "min.insync.replicas", "value": "1"}],
                }
            ],
            "timeout": 1000,
            "validate_only": False,
        },
        ApiKey.PRODUCE: {
            "transactional_id": None,
            "acks": 1,
            "timeout": 1000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}],
        },
        ApiKey.FETCH: {
            "replica_id": -1,
            "replica_state": {"replica_id": -1, "replica_epoch": -1},  # v15+
            "max_wait": 0,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "fetch_offset": 0,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
        ApiKey.LIST_OFFSETS: {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}
                    ],
                }
            ],
        },
        ApiKey.FIND_COORDINATOR: {"key": "g", "key_type": 0},
        ApiKey.OFFSET_COMMIT: {
            "group_id": "g",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "retention_time": -1,
            "group_instance_id": None,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 1,
                            "committed_leader_epoch": -1,
                            "commit_timestamp": -1,
                            "committed_metadata": "m",
                        }
                    ],
                }
            ],
        },
        ApiKey.OFFSET_FETCH: {
            "group_id": "g",
            "topics": [{"name": "t", "partition_indexes": [0]}],
            "require_stable": False,
        },
        ApiKey.INIT_PRODUCER_ID: {
            "transactional_id": None,
            "transaction_timeout": 1000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
        ApiKey.OFFSET_FOR_LEADER_EPOCH: {
            "replica_id": -1,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}],
                }
            ],
        },
        ApiKey.ELECT_LEADERS: {
            "election_type": 0,
            "topic_partitions": [{"topic": "t", "partitions": [0]}],
            "timeout": 1000,
        },
        ApiKey.JOIN_GROUP: {
            "group_id": "g", "session_timeout": 10_000, "rebalance_timeout": 10_000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"m"}], "reason": None,
        },
        ApiKey.SYNC_GROUP: {
            "group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None,
            "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": "m", "assignment": b"a"}],
        },
        ApiKey.HEARTBEAT: {
            "group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None,
        },
        ApiKey.LEAVE_GROUP: {
            "group_id": "g", "member_id": "m",
            "members": [{"member_id": "m", "group_instance_id": None, "reason": None}],
        },
        ApiKey.LIST_GROUPS: {"states_filter": [], "types_filter": []},
        ApiKey.DESCRIBE_GROUPS: {"groups": ["g"], "include_authorized_operations": False},
        ApiKey.DELETE_GROUPS: {"groups_names": ["g"]},
        ApiKey.OFFSET_DELETE: {"group_id": "g",
                               "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]},
        ApiKey.ALTER_PARTITION_REASSIGNMENTS: {
            "timeout": 1000,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "replicas": [1]}]}],
        },
        ApiKey.LIST_PARTITION_REASSIGNMENTS: {"timeout": 1000, "topics": None},
        ApiKey.DESCRIBE_CLUSTER: {"include_cluster_authorized_operations": False,
                                  "endpoint_type": 1},
        ApiKey.DELETE_TOPICS: {"topic_names": ["gone"], "topics": [{"name": "gone",
                               "topic_id": None}], "timeout": 1000},  # fmt: skip
        ApiKey.CREATE_PARTITIONS: {"topics": [{"name": "t", "count": 2, "assignments": None}],
                                   "timeout": 1000, "validate_only": False},  # fmt: skip
        ApiKey.DESCRIBE_CONFIGS: {"resources": [{"resource_type": 2, "resource_name": "t",
                                  "configuration_keys": None}], "include_synonyms": False,
                                  "include_documentation": False},  # fmt: skip
        ApiKey.ALTER_CONFIGS: {"resources": [{"resource_type": 2, "resource_name": "t",
                               "configs": [{"name": "retention.ms", "value": "5"}]}],
                               "validate_only": False},  # fmt: skip
        ApiKey.INCREMENTAL_ALTER_CONFIGS: {"resources": [{"resource_type": 2,
                                           "resource_name": "t", "configs": [
                                           {"name": "retention.ms", "config_operation": 0,
                                            "value": "5"}]}], "validate_only": False},  # fmt: skip
        ApiKey.DELETE_RECORDS: {"topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "offset": -1}]}], "timeout": 1000},  # fmt: skip
        ApiKey.DESCRIBE_LOG_DIRS: {"topics": None},
    }[ApiKey(api_key)]


# CreateTopics first so the other APIs find the topic.
ORDER = [ApiKey.CREATE_TOPICS] + [k for k in SUPPORTED_APIS if k != ApiKey.CREATE_TOPICS]


def roundtrip(broker: LoneBroker, body: Any) -> Any:
    frame = encode_request("test", 11, body)[4:]
    request = decode_request(frame)
    result = broker.handle(request)
    if isinstance(result, DelayedFetch):
        result = result.complete(True)
    wire = encode_response(request.correlation_id, request.api_key, result)[4:]
    corr, decoded = decode_response(request.api_key, request.api_version, wire)
    assert corr == 11
    return decoded


ALL_VERSIONS = [
    (k, v)
    for k in ORDER
    for v in range(SUPPORTED_APIS[k].min_version, SUPPORTED_APIS[k].max_version + 1)
]


@pytest.mark.parametrize("api_key,version", ALL_VERSIONS)
def test_every_advertised_version_round_trips(broker, api_key: int, version: int) -> None:
    batch = build_batch([(None, b"v1"), (b"k", b"v2")])
    if api_key != ApiKey.CREATE_TOPICS:
        broker.create_topic("t")
    data = request_data(api_key, batch)
    if api_key == ApiKey.FETCH:  # v13+ names the topic by id
        data["topics"][0]["topic_id"] = broker.topic("t").topic_id
    body = build(request_class(api_key, version), data)
    resp = roundtrip(broker, body)
    if api_key == ApiKey.PRODUCE:
        part = resp.responses[0].partition_responses[0]
        assert (part.error_code.value, part.base_offset) == (0, 0)
    elif api_key == ApiKey.CREATE_TOPICS:
        assert resp.topics[0].error_code.value == 0
    elif api_key == ApiKey.API_VERSIONS:
        assert {a.api_key for a in resp.api_keys} == set(SUPPORTED_APIS)
    elif api_key == ApiKey.METADATA:
        assert resp.topics[0].name == "t" and resp.topics[0].error_code.value == 0
    elif api_key == ApiKey.FETCH:
        p = resp.responses[0].partitions[0]
        assert p.records == b"" and p.high_watermark == 0  # empty: records, never None
    elif api_key == ApiKey.OFFSET_FETCH:
        assert resp.topics[0].partitions[0].committed_offset == -1
    elif api_key == ApiKey.DELETE_TOPICS:
        assert resp.responses[0].error_code.value == Errors.UNKNOWN_TOPIC_OR_PARTITION
    elif api_key == ApiKey.CREATE_PARTITIONS:
        assert resp.results[0].error_code.value == 0 and len(broker.topic("t").partitions) == 2
    elif api_key == ApiKey.DESCRIBE_CONFIGS:
        configs = {c.name: c.value for c in resp.results[0].configs}
        assert configs["min.insync.replicas"] == "1" and configs["cleanup.policy"] == "delete"
    elif api_key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
        assert resp.responses[0].error_code.value == 0
        assert dict(broker.topic("t").configs) == {"retention.ms": "5"}
    elif api_key == ApiKey.DELETE_RECORDS:
        p = resp.topics[0].partitions[0]
        assert (p.error_code.value, p.low_watermark) == (0, 0)
    elif api_key == ApiKey.DESCRIBE_LOG_DIRS:
        [d] = resp.results
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in d.topics] == [
            ("t", [0])]
    elif api_key == ApiKey.DESCRIBE_TOPIC_PARTITIONS:
        p = resp.topics[0].partitions[0]
        assert resp.topics[0].name == "t" and p.leader_id == 1 and list(p.isr_nodes) == [1]
        assert list(p.eligible_leader_replicas) == []


def _produce(broker: LoneBroker, batch: bytes, acks: int = 1, topic: str = "t") -> Any:
    body = build(request_class(ApiKey.PRODUCE, 9), request_data(ApiKey.PRODUCE, batch) | {
        "acks": acks,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    })  # fmt: skip
    request = decode_request(encode_request("t", 1, body)[4:])
    return broker.handle(request)


def test_idempotent_retry_acknowledged_once_with_original_offset(broker) -> None:
    broker.create_topic("t")
    first = build_batch(
        [(None, b"a"), (None, b"b")], producer_id=7, producer_epoch=0, base_sequence=0
    )
    second = build_batch([(None, b"c")], producer_id=7, producer_epoch=0, base_sequence=2)
    gap = build_batch([(None, b"d")], producer_id=7, producer_epoch=0, base_sequence=9)
    for b, want in [(first, 0), (second, 2), (first, 0)]:
        part = _produce(broker, b).responses[0].partition_responses[0]
        assert (part.error_code.value, part.base_offset) == (0, want)
    part = _produce(broker, gap).responses[0].partition_responses[0]
    assert part.error_code.value == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    log = broker.replica_manager.get_partition("t", 0).log
    assert log.log_end_offset == 3  # the retried batch was not written twice


def test_acks_zero_sends_nothing_and_failures_close(broker) -> None:
    broker.create_topic("t")
    assert _produce(broker, build_batch([(None, b"a")]), acks=0) is NO_RESPONSE
    res = _produce(broker, build_batch([(None, b"a")]), acks=0, topic="missing")
    assert isinstance(res, CloseConnection) and "missing-0" in res.reason


def test_min_insync_replicas_and_invalid_acks(broker_pre37, broker) -> None:
    batch = build_batch([(None, b"a")])
    # Kafka 3.7+ (KAFKA-15583): min.insync.replicas=2 on one replica is capped at 1.
    broker.create_topic("t", min_insync_replicas="2")
    assert _produce(broker, batch, acks=-1).responses[0].partition_responses[0] \
        .error_code.value == Errors.NONE
    # Before 3.7 the configured value stands: every acks=all write is refused.
    broker = broker_pre37
    broker.create_topic("t", min_insync_replicas="2")
    part = _produce(broker, batch, acks=-1).responses[0].partition_responses[0]
    assert part.error_code.value == Errors.NOT_ENOUGH_REPLICAS
    assert "min.insync.replicas 2" in part.error_message
    part = _produce(broker, batch, acks=1).responses[0].partition_responses[0]
    assert part.error_code.value == Errors.NONE
    part = _produce(broker, batch, acks=2).responses[0].partition_responses[0]
    assert part.error_code.value == Errors.INVALID_REQUIRED_ACKS


def test_corrupt_batch_rejected_and_log_untouched(broker) -> None:
    broker.create_topic("t")
    bad = bytearray(build_batch([(None, b"payload")]))
    bad[-1] ^= 0xFF  # inside the CRC-covered part
    part = _produce(broker, bytes(bad)).responses[0].partition_responses[0]
    assert part.error_code.value == Errors.CORRUPT_MESSAGE
    assert broker.replica_manager.get_partition("t", 0).log.log_end_offset == 0


def test_fetch_waits_then_completes_when_data_arrives(broker) -> None:
    broker.create_topic("t")
    data = request_data(ApiKey.FETCH, b"") | {"max_wait": 500}
    request = decode_request(encode_request("t", 1, build(request_class(1, 12), data))[4:])
    delayed = broker.handle(request)
    assert isinstance(delayed, DelayedFetch) and delayed.max_wait_ms == 500
    assert delayed.complete(False) is None  # still nothing to return
    assert not delayed.ready.done and broker.replica_manager.fetch_purgatory.watched(("t", 0)) == 1
    _produce(broker, build_batch([(None, b"x")]))
    assert delayed.ready.done  # the fetch purgatory woke it
    assert broker.replica_manager.fetch_purgatory.watched(("t", 0)) == 0
    resp = delayed.complete(False)
    p = resp.responses[0].partitions[0]
    assert p.high_watermark == 1 and p.records.startswith(b"\0" * 8)


def test_create_topics_validation(broker) -> None:
    def create(**t: Any) -> Any:
        topic = {"name": "x", "num_partitions": 1, "replication_factor": 1,
                 "assignments": [], "configs": []} | t  # fmt: skip
        body = build(
            request_class(19, 7), {"topics": [topic], "timeout": 1, "validate_only": False}
        )
        return roundtrip(broker, body).topics[0]

    assert create(replication_factor=2).error_code.value == Errors.INVALID_REPLICATION_FACTOR
    assert create(num_partitions=0).error_code.value == Errors.INVALID_PARTITIONS
    bad_cfg = create(configs=[{"name": "min.insync.replicas", "value": "zero"}])
    assert bad_cfg.error_code.value == Errors.INVALID_CONFIG and "zero" in bad_cfg.error_message
    assert create(name="a/b").error_code.value == Errors.INVALID_TOPIC_EXCEPTION
    ok = create(num_partitions=-1, replication_factor=-1)
    assert ok.error_code.value == 0 and ok.num_partitions == 1
    assert create().error_code.value == Errors.TOPIC_ALREADY_EXISTS


def test_transactional_produce_refused_per_partition(broker) -> None:
    broker.create_topic("t")
    body = build(request_class(ApiKey.PRODUCE, 9), request_data(ApiKey.PRODUCE, b"") | {
        "transactional_id": "tx",
        "topic_data": [{"name": "t", "partition_data": [
            {"index": 0, "records": build_batch([(None, b"a")])}]}],
    })  # fmt: skip
    part = roundtrip(broker, body).responses[0].partition_responses[0]
    assert part.error_code.value == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert broker.replica_manager.get_partition("t", 0).log.log_end_offset == 0


def test_null_broker_counts_offsets_and_stores_nothing() -> None:
    from broker_app.server.null_broker import NullKafkaApis

    null = NullKafkaApis(1, "127.0.0.1", 9)
    batch = build_batch([(None, b"a"), (None, b"b")]) + build_batch([(None, b"c")])
    for version in (3, 9):
        body = build(request_class(ApiKey.PRODUCE, version), request_data(ApiKey.PRODUCE, batch))
        request = decode_request(encode_request("t", 1, body)[4:])
        resp = null.handle(request)
        encode_response(1, ApiKey.PRODUCE, resp)
    assert resp.responses[0].partition_responses[0].base_offset == 3
    assert null.next_offset[("t", 0)] == 6


def test_null_broker_lists_what_librdkafka_needs_for_v2_batches() -> None:
    """librdkafka writes magic-2 batches only to a broker listing Produce v3+ and Fetch v4+;
    otherwise the benchmark's ceiling would get magic 0/1 message sets, the broker v2."""
    from broker_app.server.null_broker import NullKafkaApis

    body = build(request_class(ApiKey.API_VERSIONS, 3), request_data(ApiKey.API_VERSIONS, b""))
    resp = NullKafkaApis(1, "127.0.0.1", 9).handle(decode_request(encode_request("t", 1, body)[4:]))
    listed = {k.api_key: k.max_version for k in resp.api_keys}
    assert listed[ApiKey.PRODUCE] >= 3 and listed[ApiKey.FETCH] >= 4


def _metadata(broker: LoneBroker, name: str, allow_auto: bool) -> Any:
    data = request_data(ApiKey.METADATA, b"") | {
        "topics": [{"name": name, "topic_id": uuid.UUID(int=0)}],
        "allow_auto_topic_creation": allow_auto,
    }
    return roundtrip(broker, build(request_class(ApiKey.METADATA, 12), data)).topics[0]


def test_metadata_auto_creates_only_when_client_and_broker_allow(tmp_path: Path) -> None:
    for broker_allows in (True, False):
        config = BrokerConfig(
            node_id=1,
            data_dir=tmp_path / f"d-{broker_allows}",
            port=9092,
            auto_create_topics=broker_allows,
            num_partitions=3,
        )
        broker = LoneBroker(config)
        try:
            refused = _metadata(broker, "auto", allow_auto=False)
            assert refused.error_code.value == Errors.UNKNOWN_TOPIC_OR_PARTITION
            t = _metadata(broker, "auto", allow_auto=True)
            if broker_allows:
                # Asked of the controller: clients retry until it has leaders (Kafka's KRaft
                # brokers answer the same).
                assert t.error_code.value == Errors.LEADER_NOT_AVAILABLE
                broker.wait_for_topic("auto")
                t = _metadata(broker, "auto", allow_auto=True)
                assert t.error_code.value == 0 and len(t.partitions) == 3
            else:
                assert t.error_code.value == Errors.UNKNOWN_TOPIC_OR_PARTITION
                assert broker.topic("auto") is None
        finally:
            broker.close()


def test_batch_over_message_max_bytes_is_message_too_large(broker) -> None:
    broker.create_topic("t")
    big = build_batch([(None, b"\x01" * (broker.config.max_message_bytes + 10))])
    part = _produce(broker, big).responses[0].partition_responses[0]
    assert part.error_code.value == Errors.MESSAGE_TOO_LARGE
    assert broker.replica_manager.get_partition("t", 0).log.log_end_offset == 0


def test_offset_commit_rules(broker) -> None:
    broker.create_topic("t")
    assert broker.find_coordinator("g").node_id == 1  # creates and loads __consumer_offsets

    def commit(group: str, topic: str, metadata: str) -> int:
        data = request_data(ApiKey.OFFSET_COMMIT, b"") | {"group_id": group}
        data["topics"][0]["name"] = topic
        data["topics"][0]["partitions"][0]["committed_metadata"] = metadata
        body = build(request_class(ApiKey.OFFSET_COMMIT, 8), data)
        return roundtrip(broker, body).topics[0].partitions[0].error_code.value

    assert commit("g", "t", "ok") == Errors.NONE
    assert commit("", "t", "ok") == Errors.INVALID_GROUP_ID
    assert commit("g", "nope", "ok") == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert commit("g", "t", "m" * 5000) == Errors.OFFSET_METADATA_TOO_LARGE
    _, found = broker.apis.groups.coordinator.fetch_offsets("g", [("t", 0)])
    assert found[("t", 0)].metadata == "ok"


def test_metadata_topic_without_name_or_known_id_is_unknown_topic_id(tmp_path: Path) -> None:
    """Found by the fuzzer: a v12 topic with a null name and the zero id hit an assert."""
    broker = LoneBroker(BrokerConfig(node_id=1, data_dir=tmp_path / "d", port=9092))
    try:
        for topic_id in (uuid.UUID(int=0), uuid.uuid4()):
            data = request_data(ApiKey.METADATA, b"") | {
                "topics": [{"name": None, "topic_id": topic_id}],
            }
            t = roundtrip(broker, build(request_class(ApiKey.METADATA, 12), data)).topics[0]
            assert t.error_code.value == Errors.UNKNOWN_TOPIC_ID, topic_id
    finally:
        broker.close()
