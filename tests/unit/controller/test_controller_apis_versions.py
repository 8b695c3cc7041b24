"""Every advertised (api, version) of the controller goes through ControllerApis and the codec.

No sockets: requests are built with the project's entity builder, encoded, decoded with
decode_controller_request, handled, and the response is encoded and decoded again.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from broker_app.controller.apis import CONTROLLER_APIS, ControllerApiKey, decode_controller_request
from broker_app.controller.controller_apis import DelayedMetadataFetch
from broker_app.metadata import METADATA_TOPIC
from broker_app.protocol.codec import decode_response, encode_request, encode_response
from broker_app.protocol.codec import request_class as kio_request_class
from broker_app.protocol.entities import build
from broker_app.protocol.errors import UnsupportedRequest
from tests.unit.controller.one_voter import OneVoter

K = ControllerApiKey
INCARNATION = uuid.UUID(int=5)


def _data(api: int, version: int, topic_id: uuid.UUID, epoch: int) -> dict[str, Any]:
    if api == K.FETCH:
        return {
            "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "cluster_id": None,
            "topics": [{"topic": METADATA_TOPIC, "partitions": [{
                "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": "",
        }  # fmt: skip
    if api == K.METADATA:
        return {
            "topics": [] if version == 0 else None,
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        }
    if api == K.API_VERSIONS:
        return {"client_software_name": "t", "client_software_version": "1"}
    if api == K.CREATE_TOPICS:
        return {
            "topics": [{"name": f"v{version}", "num_partitions": 1, "replication_factor": 1,
                        "assignments": [], "configs": []}],
            "timeout": 1000, "validate_only": False,
        }  # fmt: skip
    if api == K.ELECT_LEADERS:
        return {"election_type": 0, "timeout": 1000,
                "topic_partitions": [{"topic": "t", "partitions": [0]}]}  # fmt: skip
    if api == K.ALTER_PARTITION_REASSIGNMENTS:
        return {"timeout": 1000, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "replicas": [1]}]}]}  # fmt: skip
    if api == K.ALTER_PARTITION:
        return {"broker_id": 1, "broker_epoch": epoch, "topics": [{
            "topic_id": topic_id, "partitions": [{
                "partition_index": 0, "leader_epoch": 0, "new_isr": [1],
                "new_isr_with_epochs": [{"broker_id": 1, "broker_epoch": epoch}],
                "leader_recovery_state": 0, "partition_epoch": 0}]}]}  # fmt: skip
    if api == K.BROKER_REGISTRATION:
        return {
            "broker_id": 1, "cluster_id": "highwater-cluster", "incarnation_id": INCARNATION,
            "listeners": [{"name": "P", "host": "127.0.0.1", "port": 9092,
                           "security_protocol": 0}],
            "features": [], "rack": None,
        }  # fmt: skip
    if api == K.BROKER_HEARTBEAT:
        return {"broker_id": 1, "broker_epoch": epoch, "current_metadata_offset": 10**6,
                "want_fence": False, "want_shut_down": False}  # fmt: skip
    if api == K.DELETE_TOPICS:  # an unknown topic: answered per topic, nothing deleted
        return {"topic_names": ["nope"], "topics": [{"name": "nope", "topic_id": None}],
                "timeout": 1000}  # fmt: skip
    if api == K.CREATE_PARTITIONS:  # "t" has 1 partition: asking for 1 is INVALID_PARTITIONS
        return {"topics": [{"name": "t", "count": 1, "assignments": None}], "timeout": 1000,
                "validate_only": False}  # fmt: skip
    if api in (K.ALTER_CONFIGS, K.INCREMENTAL_ALTER_CONFIGS):
        return {"resources": [{"resource_type": 2, "resource_name": "t", "configs": [
            {"name": "retention.ms", "value": str(1000 + version), "config_operation": 0}]}],
            "validate_only": False}  # fmt: skip
    if api == K.FETCH_SNAPSHOT:  # no snapshot yet: answered SNAPSHOT_NOT_FOUND
        return {"cluster_id": None, "replica_id": 1, "max_bytes": 1 << 20, "topics": [{
            "name": METADATA_TOPIC, "partitions": [{
                "partition": 0, "current_leader_epoch": -1,
                "snapshot_id": {"end_offset": 5, "epoch": 1}, "position": 0}]}]}  # fmt: skip
    raise AssertionError(api)


@pytest.fixture
def apis() -> OneVoter:
    """A lone controller (a one-voter quorum), answering each request once committed."""
    return OneVoter()


def _roundtrip(apis: OneVoter, api: int, version: int, data: dict[str, Any]) -> Any:
    frame = encode_request("test", 11, build(kio_request_class(api, version), data))[4:]
    request = decode_controller_request(frame)
    response = apis.handle(request)
    assert not isinstance(response, DelayedMetadataFetch)
    wire = encode_response(request.correlation_id, api, response)
    corr, body = decode_response(api, version, wire[4:])
    assert corr == 11
    return body


def test_every_advertised_version(apis):
    reg = _roundtrip(apis, K.BROKER_REGISTRATION, 4, _data(K.BROKER_REGISTRATION, 4, None, 0))
    epoch = reg.broker_epoch
    _roundtrip(apis, K.BROKER_HEARTBEAT, 1, _data(K.BROKER_HEARTBEAT, 1, None, epoch))
    _roundtrip(apis, K.CREATE_TOPICS, 7, {**_data(K.CREATE_TOPICS, 7, None, 0), "topics": [
        {"name": "t", "num_partitions": 1, "replication_factor": 1, "assignments": [],
         "configs": []}]})  # fmt: skip
    topic_id = apis.image.topics["t"].topic_id
    seen = 0
    for api, vr in sorted(CONTROLLER_APIS.items()):
        for version in range(vr.min_version, vr.max_version + 1):
            body = _roundtrip(apis, api, version, _data(api, version, topic_id, epoch))
            seen += 1
            if api == K.CREATE_TOPICS:
                assert body.topics[0].error_code == 0, (version, body)
            if api == K.BROKER_REGISTRATION:
                assert body.error_code == 0 and body.broker_epoch == epoch  # same incarnation
            if api == K.METADATA:
                assert {b.node_id for b in body.brokers} == {1, 3000}
            if api == K.FETCH:
                assert body.responses[0].partitions[0].records
            if api == K.DELETE_TOPICS:
                assert body.responses[0].error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION
            if api == K.CREATE_PARTITIONS:
                assert body.results[0].error_code == 37  # INVALID_PARTITIONS
            if api in (K.ALTER_CONFIGS, K.INCREMENTAL_ALTER_CONFIGS):
                assert body.responses[0].error_code == 0
                assert apis.image.topics["t"].configs["retention.ms"] == str(
                    1000 + version)
    assert seen == sum(vr.max_version - vr.min_version + 1 for vr in CONTROLLER_APIS.values())


def test_unsupported_version_and_unknown_api_are_refused(apis):
    frame = encode_request("t", 1, build(kio_request_class(0, 9), {
        "transactional_id": None, "acks": 1, "timeout": 1000, "topic_data": []}))[4:]  # fmt: skip
    with pytest.raises(UnsupportedRequest):
        decode_controller_request(frame)  # Produce is a broker API
    frame = encode_request("t", 1, build(kio_request_class(18, 4), {
        "client_software_name": "t", "client_software_version": "1"}))[4:]  # fmt: skip
    request = decode_controller_request(frame)
    assert request.unsupported_api_versions
    body = apis.handle(request)
    assert int(body.error_code) == 35 and len(body.api_keys) == len(CONTROLLER_APIS)
