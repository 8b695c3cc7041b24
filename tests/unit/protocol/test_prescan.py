"""Request pre-scan: unknown tagged fields skipped (KIP-482), lengths bounded by the frame,
nulls refused where the schema forbids them — before kio's native decoder sees the bytes."""

from __future__ import annotations

import dataclasses
import io
import random
import struct

import pytest
from kio.schema.metadata.v12 import MetadataRequest as MetadataRequestV12
from kio.schema.metadata.v12.request import MetadataRequestTopic as TopicV12
from kio.schema.produce.v9 import ProduceRequest as ProduceRequestV9

from broker_app.controller.apis import CONTROLLER_APIS
from broker_app.protocol import prescan
from broker_app.protocol.apis import SUPPORTED_APIS
from broker_app.protocol.codec import _writer, decode_request, encode_request, request_class
from broker_app.protocol.errors import MalformedRequest
from harness.fuzz.sample import sample_entity


def _payload(frame: bytes) -> bytes:
    return frame[4:]


def _metadata_v12() -> MetadataRequestV12:
    return MetadataRequestV12(
        topics=(TopicV12(name="zz", topic_id=None),),
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )


@pytest.mark.parametrize("apis", [SUPPORTED_APIS, CONTROLLER_APIS], ids=["broker", "controller"])
def test_scan_agrees_with_kio_on_every_advertised_request(apis: dict) -> None:
    rng = random.Random(7)
    for key, vr in apis.items():
        for version in range(vr.min_version, vr.max_version + 1):
            cls = request_class(key, version)
            for _ in range(5):
                entity = sample_entity(cls, rng)
                buf = io.BytesIO()
                _writer(cls)(buf, entity)
                data = buf.getvalue()
                assert prescan.scan(cls, data, 0) == (len(data), 0), (key, version, entity)
                assert prescan.strip(cls, data, 0) == data


def test_unknown_tag_in_request_header_is_skipped() -> None:
    frame = _payload(encode_request("c", 5, _metadata_v12()))
    header_end = 8 + 2 + 1  # prefix, client_id length, "c"
    assert frame[header_end] == 0  # empty header tagged fields
    tagged = bytes([2, 7, 1, 0xAA, 9, 0])  # two unknown tags: 7 (1 byte), 9 (empty)
    req = decode_request(frame[:header_end] + tagged + frame[header_end + 1 :])
    assert (req.correlation_id, req.client_id, req.body) == (5, "c", _metadata_v12())


def test_unknown_tags_in_body_and_nested_entity_are_skipped() -> None:
    frame = _payload(encode_request("c", 6, _metadata_v12()))
    nested = b"\x03zz\x00"  # compact string "zz" then the topic's empty tagged fields
    assert frame.count(nested) == 1 and frame.endswith(b"\x00")
    frame = frame.replace(nested, b"\x03zz\x01\x09\x02\xff\xff")  # topic: unknown tag 9
    frame = frame[:-1] + bytes([1, 0x7F, 0])  # request: unknown tag 127, empty
    req = decode_request(frame)
    assert req.body == _metadata_v12()


def test_known_tag_survives_when_an_unknown_one_is_stripped() -> None:
    cls = request_class(1, 12)  # Fetch v12: cluster_id is tag 0
    body = sample_entity(cls, random.Random(3))
    body = dataclasses.replace(body, cluster_id="abc")
    frame = _payload(encode_request("c", 1, body))
    assert frame.endswith(b"\x01\x00\x04\x04abc")  # one tag: 0, size 4, compact "abc"
    frame = frame[: -len(b"\x01\x00\x04\x04abc")] + b"\x02\x00\x04\x04abc\x05\x01\x00"
    assert decode_request(frame).body == body


def test_known_tag_whose_value_overruns_its_declared_size_is_malformed() -> None:
    cls = request_class(1, 12)
    body = sample_entity(cls, random.Random(3))
    body = dataclasses.replace(body, cluster_id="abc")
    frame = _payload(encode_request("c", 1, body))
    frame = frame[: -len(b"\x01\x00\x04\x04abc")] + b"\x01\x00\x02\x04abc"
    with pytest.raises(MalformedRequest, match="cluster_id"):
        decode_request(frame)


def _produce_v9_frame(topic_count: bytes) -> bytes:
    """Produce v9 with transactional_id null, acks -1, timeout 1000, then `topic_count`."""
    header = struct.pack(">hhih", 0, 9, 77, 1) + b"c" + b"\x00"
    return header + b"\x00" + struct.pack(">hi", -1, 1000) + topic_count


def test_huge_array_count_is_refused_before_kio_allocates() -> None:
    # 2^31-2 topics claimed in a 20-byte request: kio alone would abort the process.
    frame = _produce_v9_frame(bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x07]) + b"\x00")
    with pytest.raises(MalformedRequest, match=r"topic_data: array of 2147483646 elements"):
        decode_request(frame)


def test_null_for_a_non_nullable_array_is_malformed_not_a_handler_crash() -> None:
    frame = _produce_v9_frame(b"\x00" + b"\x00")  # compact array length 0 = null
    with pytest.raises(MalformedRequest, match="non-nullable field ProduceRequest.topic_data"):
        decode_request(frame)


def test_varint_longer_than_five_bytes_is_malformed() -> None:
    frame = _produce_v9_frame(b"\x81\x80\x80\x80\x80\x00")
    with pytest.raises(MalformedRequest, match="longer than 5 bytes"):
        decode_request(frame)


def test_string_longer_than_the_frame_is_malformed() -> None:
    frame = struct.pack(">hhih", 3, 1, 1, -1) + struct.pack(">i", 1) + struct.pack(">h", 30000)
    with pytest.raises(MalformedRequest, match=r"needs 30000 bytes"):
        decode_request(frame)


def test_client_id_longer_than_the_frame_is_malformed() -> None:
    frame = struct.pack(">hhih", 3, 1, 1, 500) + b"abc"
    with pytest.raises(MalformedRequest, match="client_id of 500 bytes"):
        decode_request(frame)


def test_min_size_counts_required_fields_only() -> None:
    # ProduceRequest v9: transactional_id(1) acks(2) timeout(4) topic_data(1) tags(1)
    assert prescan.min_size(ProduceRequestV9) == 9


def test_response_decoding_skips_unknown_tags_and_bounds_lengths() -> None:
    from broker_app.protocol.codec import decode_response, encode_response, response_class
    from broker_app.protocol.entities import build

    body = build(response_class(18, 3), {"error_code": 0, "api_keys": [
        {"api_key": 0, "min_version": 3, "max_version": 9}], "throttle_time": 0})  # fmt: skip
    payload = encode_response(4, 18, body)[4:]  # ApiVersions: header v0 even when flexible
    assert payload.endswith(b"\x00")
    tagged = payload[:-1] + bytes([1, 77, 1, 0x01])  # unknown tag in the body
    assert decode_response(18, 3, tagged) == (4, body)
    meta = build(response_class(3, 12), {"throttle_time": 0, "brokers": [], "cluster_id": None,
                                         "controller_id": 1, "topics": []})  # fmt: skip
    payload = encode_response(5, 3, meta)[4:]
    assert payload[4] == 0  # response header v1: empty tagged fields
    with_header_tag = payload[:4] + bytes([1, 3, 2, 0xAA, 0xBB]) + payload[5:]
    assert decode_response(3, 12, with_header_tag) == (5, meta)
    lying = payload[:5] + struct.pack(">i", 0) + b"\xff\xff\xff\xff\x0f"  # brokers: 2^32-2
    with pytest.raises(ValueError, match="brokers"):
        decode_response(3, 12, lying)
