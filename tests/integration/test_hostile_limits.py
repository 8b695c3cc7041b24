"""Resource limits and KIP-482 tagged fields on a real broker process: max.connections.per.ip,
connections.max.idle.ms, the per-request partition budget, unknown tagged fields skipped."""

from __future__ import annotations

import time

from kio.schema.metadata.v1 import MetadataRequest as MetadataRequestV1
from kio.schema.metadata.v1.request import MetadataRequestTopic
from kio.schema.metadata.v12 import MetadataRequest as MetadataRequestV12
from kio.schema.metadata.v12.request import MetadataRequestTopic as TopicV12

from broker_app.protocol.codec import decode_response, encode_request, request_class
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors

from .rawclient import RawClient


def _metadata(client: RawClient, name: str = "lim") -> None:
    resp = client.request(MetadataRequestV1(topics=(MetadataRequestTopic(name=name),)))
    assert resp.topics[0].name == name


def _admitted(port: int) -> RawClient:
    """A connection the broker serves. A slot is freed when the broker has seen the previous
    holder's EOF (the fixture's readiness probe, a closed client), hence a bounded retry."""
    deadline = time.monotonic() + 10
    while True:
        c = RawClient(port)
        try:
            _metadata(c)
            return c
        except ConnectionError:
            c.close()
            assert time.monotonic() < deadline, "no connection slot was ever free"
            time.sleep(0.1)


def test_connections_per_ip_are_limited_and_freed(broker_factory) -> None:
    b = broker_factory(["--max-connections-per-ip", "2"])
    with _admitted(b.port) as c1, _admitted(b.port) as c2:
        with RawClient(b.port, timeout=5) as c3:
            assert c3.is_closed_by_peer()
        _metadata(c1)  # the admitted ones are untouched
        _metadata(c2)
    _admitted(b.port).close()  # closing c1/c2 freed their slots
    assert "max.connections.per.ip=2 reached" in b.log()
    assert "max.connections.per.ip=2 reached" in b.log()


def test_idle_connection_is_closed(broker_factory) -> None:
    b = broker_factory(["--connections-max-idle-ms", "300"])
    with RawClient(b.port, timeout=10) as idle:
        idle.send_raw(b"\x00\x00")  # half a size prefix, then nothing
        assert idle.is_closed_by_peer()
    with RawClient(b.port) as fresh:
        _metadata(fresh)


def test_create_topics_partition_budget_per_request(broker_factory) -> None:
    b = broker_factory(["--max-partitions-per-create-request", "5"])
    body = build(request_class(19, 7), {
        "topics": [
            {"name": "small", "num_partitions": 3, "replication_factor": 1,
             "assignments": [], "configs": []},
            {"name": "over", "num_partitions": 3, "replication_factor": 1,
             "assignments": [], "configs": []},
        ],
        "timeout": 5000, "validate_only": False,
    })  # fmt: skip
    with RawClient(b.port) as c:
        resp = c.request(body)
    codes = {t.name: int(t.error_code) for t in resp.topics}
    assert codes == {"small": Errors.NONE, "over": Errors.INVALID_PARTITIONS}


def test_unknown_tagged_fields_in_header_and_body_are_skipped(broker) -> None:
    body = MetadataRequestV12(
        topics=(TopicV12(name="tagged", topic_id=None),),
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )
    frame = encode_request("c", 9, body)[4:]
    header_end = 8 + 2 + 1
    frame = frame[:header_end] + bytes([1, 42, 1, 0x55]) + frame[header_end + 1 :]
    frame = frame[:-1] + bytes([1, 99, 2, 0xAB, 0xCD])
    with RawClient(broker.port) as c:
        c.send_raw(len(frame).to_bytes(4, "big") + frame)
        corr, resp = decode_response(3, 12, c.recv_payload())
    assert corr == 9 and resp.topics[0].name == "tagged"
    # allow_auto_topic_creation (the field before the body's tagged fields) was read: the topic
    # is being created, which clients are told as Kafka's KRaft brokers tell them
    assert int(resp.topics[0].error_code) == Errors.LEADER_NOT_AVAILABLE
