"""Bad input on raw sockets: each gets the protocol's error or a closed connection plus a log
line, the broker keeps serving, and acknowledged data is not damaged."""

from __future__ import annotations

import os
import struct

import pytest
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.metadata.v1 import MetadataRequest as MetadataRequestV1
from kio.schema.metadata.v1.request import MetadataRequestTopic
from kio.serial import entity_reader

from broker_app.protocol.apis import ADVERTISED_APIS
from broker_app.protocol.codec import encode_request, request_class
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors
from broker_app.storage.records import build_batch

from .clients import consume_assigned, create_topic, produce
from .rawclient import RawClient

MAX_FRAME = 1024 * 1024


@pytest.fixture
def small_frame_broker(broker_factory):
    return broker_factory(["--max-frame-bytes", str(MAX_FRAME)])


def _produce_body(topic: str, records: bytes, acks: int = 1):
    return build(
        request_class(0, 9),
        {
            "transactional_id": None,
            "acks": acks,
            "timeout": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
        },
    )


def _assert_still_serves(broker, topic: str, expected: list[bytes]) -> None:
    """A normal client still round-trips, and what was acknowledged before is intact."""
    acked, errors = produce(broker.bootstrap, topic, [b"after"], acks=1)
    assert errors == [] and len(acked) == 1
    read = consume_assigned(broker.bootstrap, topic, len(expected) + 1)
    assert [v for _, v in read] == expected + [b"after"]


BAD_STREAMS = {
    "oversized-frame": struct.pack(">i", MAX_FRAME + 1) + b"\0" * 64,
    "negative-size": struct.pack(">i", -1) + b"\0" * 8,
    "garbage": struct.pack(">i", 60) + b"\xde\xad\xbe\xef" * 15,
    "random-bytes": b"\x7f" + os.urandom(63),  # size prefix > max frame, whatever follows
    "unknown-api-key": struct.pack(">ihhi", 10, 9999, 0, 1) + b"\0\0",
    "unknown-version": struct.pack(">ihhi", 10, 3, 99, 1) + b"\0\0",
    "short-header": struct.pack(">i", 3) + b"\0\3\0",
    "bad-body": struct.pack(">ihhihi", 16, 3, 1, 7, 0, 0x7FFFFFFF) + b"\0\0",
    "huge-array-count": struct.pack(">ihhih", 14, 3, 1, 7, -1) + struct.pack(">i", 0x7FFFFFFF),
}


@pytest.mark.parametrize("name", list(BAD_STREAMS))
def test_bad_stream_closes_connection_and_broker_keeps_serving(small_frame_broker, name) -> None:
    b = small_frame_broker
    create_topic(b.bootstrap, "bad")
    good = [b"before-1", b"before-2"]
    produce(b.bootstrap, "bad", good, acks=1)
    with RawClient(b.port) as other:  # a bystander connection opened before the attack
        with RawClient(b.port) as raw:
            raw.send_raw(BAD_STREAMS[name])
            assert raw.is_closed_by_peer(), f"{name}: connection should be closed"
        resp = other.request(MetadataRequestV1(topics=(MetadataRequestTopic(name="bad"),)))
        assert resp.topics[0].name == "bad"
    assert "closing" in b.log()
    _assert_still_serves(b, "bad", good)


def test_truncated_frame_then_eof_is_logged_and_harmless(broker) -> None:
    create_topic(broker.bootstrap, "trunc")
    frame = _produce_body("trunc", build_batch([(None, b"never")]))
    wire = encode_request("raw", 1, frame)
    with RawClient(broker.port) as raw:
        raw.send_raw(wire[: len(wire) // 2])
    _assert_still_serves(broker, "trunc", [])
    assert "closed mid-frame" in broker.log()


def test_api_versions_unsupported_version_gets_v0_error_with_ranges(broker) -> None:
    with RawClient(broker.port) as raw:
        raw.send_raw(struct.pack(">ihhi", 8 + 2, 18, 42, 5) + b"\0\0")
        payload = raw.recv_payload()
    (corr,) = struct.unpack_from(">i", payload)
    body, _ = entity_reader(ApiVersionsResponseV0)(payload, 4)
    assert corr == 5
    assert body.error_code.value == Errors.UNSUPPORTED_VERSION
    ranges = {a.api_key: (a.min_version, a.max_version) for a in body.api_keys}
    assert ranges == {k: tuple(v) for k, v in ADVERTISED_APIS.items()}


@pytest.mark.parametrize(
    "name,mutate,code",
    [
        ("crc-flip", lambda b: b[:-1] + bytes([b[-1] ^ 0xFF]), Errors.CORRUPT_MESSAGE),
        ("not-a-batch", lambda b: os.urandom(len(b)), Errors.CORRUPT_MESSAGE),
        ("torn-batch", lambda b: b[:-5], Errors.CORRUPT_MESSAGE),
    ],
)
def test_invalid_batches_get_corrupt_message_and_log_is_intact(broker, name, mutate, code) -> None:
    create_topic(broker.bootstrap, "inv")
    good = [b"ok-1", b"ok-2", b"ok-3"]
    produce(broker.bootstrap, "inv", good, acks=1)
    bad = mutate(build_batch([(None, b"evil")]))
    with RawClient(broker.port) as raw:
        resp = raw.request(_produce_body("inv", bad))
        part = resp.responses[0].partition_responses[0]
        assert part.error_code.value in (code, Errors.INVALID_RECORD), part
        assert part.error_message  # names what is wrong
        # the connection stays usable after a per-partition error
        ok = raw.request(_produce_body("inv", build_batch([(None, b"ok-4")])), correlation_id=2)
        assert ok.responses[0].partition_responses[0].base_offset == 3
    _assert_still_serves(broker, "inv", good + [b"ok-4"])


def test_pipelined_requests_answered_in_order(broker) -> None:
    create_topic(broker.bootstrap, "pipe")
    with RawClient(broker.port) as raw:
        wire = b"".join(
            encode_request("raw", corr, _produce_body("pipe", build_batch([(None, b"m%d" % corr)])))
            for corr in range(100, 120)
        )
        raw.send_raw(wire)
        got = [raw.recv(0, 9) for _ in range(20)]
    assert [c for c, _ in got] == list(range(100, 120))
    assert [r.responses[0].partition_responses[0].base_offset for _, r in got] == list(range(20))


def test_acks_zero_to_unknown_partition_closes_connection(broker) -> None:
    with RawClient(broker.port) as raw:
        raw.send(_produce_body("no-such-topic", build_batch([(None, b"x")]), acks=0))
        assert raw.is_closed_by_peer()
