"""Codec: request headers v1/v2, response headers v0/v1, ApiVersions special cases, bad bytes."""

from __future__ import annotations

import struct

import pytest
from kio.schema.api_versions.v0 import ApiVersionsRequest as ApiVersionsRequestV0
from kio.schema.api_versions.v3 import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.metadata.v1 import MetadataRequest as MetadataRequestV1
from kio.schema.metadata.v1.request import MetadataRequestTopic as TopicV1
from kio.schema.metadata.v12 import MetadataRequest as MetadataRequestV12
from kio.schema.metadata.v12.response import MetadataResponse as MetadataResponseV12

from broker_app.protocol.apis import SUPPORTED_APIS, ApiKey
from broker_app.protocol.codec import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_class,
    response_class,
)
from broker_app.protocol.entities import build
from broker_app.protocol.errors import MalformedRequest, UnsupportedRequest


def _payload(frame: bytes) -> bytes:
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    return frame[4:]


def test_non_flexible_request_round_trip_with_header_v1() -> None:
    body = MetadataRequestV1(topics=(TopicV1(name="t1"),))
    req = decode_request(_payload(encode_request("cli", 42, body)))
    assert (req.api_key, req.api_version, req.correlation_id) == (3, 1, 42)
    assert req.client_id == "cli"
    assert req.body == body


def test_flexible_request_round_trip_with_header_v2() -> None:
    body = MetadataRequestV12(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    req = decode_request(_payload(encode_request(None, 7, body)))
    assert req.api_version == 12 and req.client_id is None and req.body == body


def test_flexible_response_has_header_v1_tagged_fields_byte() -> None:
    resp = build(
        MetadataResponseV12,
        {
            "throttle_time": 0,
            "brokers": [{"node_id": 1, "host": "h", "port": 9}],
            "topics": [],
        },
    )
    payload = _payload(encode_response(5, ApiKey.METADATA, resp))
    assert payload[:5] == struct.pack(">i", 5) + b"\x00"
    corr, decoded = decode_response(ApiKey.METADATA, 12, payload)
    assert corr == 5 and decoded.brokers[0].host == "h"


def test_api_versions_v3_response_uses_header_v0() -> None:
    cls = response_class(ApiKey.API_VERSIONS, 3)
    resp = build(cls, {"error_code": 0, "api_keys": [], "throttle_time": 0})
    payload = _payload(encode_response(9, ApiKey.API_VERSIONS, resp))
    # header v0 = correlation id only, then error_code int16 (no tagged-field byte between)
    assert payload[:6] == struct.pack(">ih", 9, 0)


def test_unsupported_api_versions_version_is_flagged_not_rejected() -> None:
    frame = struct.pack(">hhi", ApiKey.API_VERSIONS, 99, 3) + b"\xff\xff"
    req = decode_request(frame)
    assert req.unsupported_api_versions and req.correlation_id == 3 and req.body is None


def test_unknown_api_key_and_version_rejected_with_names() -> None:
    with pytest.raises(UnsupportedRequest, match="api_key=999 api_version=0"):
        decode_request(struct.pack(">hhi", 999, 0, 1))
    with pytest.raises(UnsupportedRequest, match="api_key=3 api_version=99"):
        decode_request(struct.pack(">hhi", 3, 99, 1))


def test_short_and_garbage_bodies_are_malformed() -> None:
    with pytest.raises(MalformedRequest, match="shorter than the 8-byte header"):
        decode_request(b"\x00\x03\x00")
    good = _payload(encode_request("c", 1, MetadataRequestV1(topics=(TopicV1(name="t"),))))
    with pytest.raises(MalformedRequest, match="MetadataRequest"):
        decode_request(good[:-2])
    # trailing bytes are ignored, as Kafka does (librdkafka sends some on Metadata v12)
    assert decode_request(good + b"\x00").body.topics[0].name == "t"
    garbage = struct.pack(">hhi", 3, 1, 1) + b"\x00\x01x" + b"\x7f\xff\xff\xff"
    with pytest.raises(MalformedRequest):
        decode_request(garbage)


def test_api_versions_v0_and_v3_requests_decode() -> None:
    for body in (
        ApiVersionsRequestV0(),
        ApiVersionsRequestV3(client_software_name="x", client_software_version="1"),
    ):
        assert decode_request(_payload(encode_request("c", 1, body))).body == body


def test_every_advertised_version_has_kio_schemas() -> None:
    for key, vr in SUPPORTED_APIS.items():
        for v in range(vr.min_version, vr.max_version + 1):
            assert request_class(key, v).__version__ == v
            assert response_class(key, v).__version__ == v
