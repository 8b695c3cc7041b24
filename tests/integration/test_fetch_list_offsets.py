"""Fetch waiting (delayed fetch), empty-partition records, ListOffsets and clean SIGTERM."""

from __future__ import annotations

import signal
import struct
import threading
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from broker_app.protocol.apis import SUPPORTED_APIS
from broker_app.protocol.codec import request_class
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors

from .clients import create_topic, produce
from .rawclient import RawClient


def _fetch_body(topic: str, offset: int, max_wait_ms: int):
    return build(
        request_class(1, 12),
        {
            "replica_id": -1,
            "max_wait": max_wait_ms,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {"partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                         "last_fetched_epoch": -1, "log_start_offset": -1,
                         "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )  # fmt: skip


def test_empty_partition_fetch_times_out_with_empty_records(broker) -> None:
    create_topic(broker.bootstrap, "empty")
    with RawClient(broker.port) as raw:
        resp = raw.request(_fetch_body("empty", 0, 200))
    p = resp.responses[0].partitions[0]
    assert p.error_code.value == Errors.NONE
    assert p.records == b""  # empty bytes, never null
    assert (p.high_watermark, p.last_stable_offset, p.log_start_offset) == (0, 0, 0)


def test_waiting_fetch_is_completed_by_a_produce(broker) -> None:
    create_topic(broker.bootstrap, "wake")
    with RawClient(broker.port, timeout=60) as raw:
        # max_wait 30 s: the response can only arrive early if the append wakes the fetch
        raw.send(_fetch_body("wake", 0, 30_000))
        producer = threading.Thread(
            target=produce, args=(broker.bootstrap, "wake", [b"wake-up"]), kwargs={"acks": 1}
        )
        producer.start()
        try:
            corr, resp = raw.recv(1, 12)
        finally:
            producer.join(timeout=60)
    p = resp.responses[0].partitions[0]
    assert p.high_watermark == 1 and b"wake-up" in p.records


def test_fetch_beyond_log_end_is_offset_out_of_range(broker) -> None:
    create_topic(broker.bootstrap, "oor")
    produce(broker.bootstrap, "oor", [b"a"], acks=1)
    with RawClient(broker.port) as raw:
        p = raw.request(_fetch_body("oor", 5, 0)).responses[0].partitions[0]
    assert p.error_code.value == Errors.OFFSET_OUT_OF_RANGE and p.records == b""


def test_list_offsets_earliest_and_latest(broker) -> None:
    create_topic(broker.bootstrap, "lo")
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "lo"})
    try:
        assert c.get_watermark_offsets(TopicPartition("lo", 0), timeout=10) == (0, 0)
        produce(broker.bootstrap, "lo", [b"x"] * 42, acks=1)
        assert c.get_watermark_offsets(TopicPartition("lo", 0), timeout=10) == (0, 42)
        # offsets_for_times with a timestamp far in the future finds nothing (-1)
        (tp,) = c.offsets_for_times([TopicPartition("lo", 0, 2**62)], timeout=10)
        assert tp.offset == -1
        (tp,) = c.offsets_for_times([TopicPartition("lo", 0, 0)], timeout=10)
        assert tp.offset == 0
    finally:
        c.close()


def test_sigterm_is_a_clean_shutdown(broker) -> None:
    create_topic(broker.bootstrap, "clean")
    produce(broker.bootstrap, "clean", [b"a", b"b"], acks=1)
    assert broker.signal(signal.SIGTERM) == 0
    data = Path(broker.data_dir)
    assert (data / ".kafka_cleanshutdown").exists()
    assert "clean 0 2" in (data / "replication-offset-checkpoint").read_text()
    assert "clean shutdown complete" in broker.log()


def test_highwater_broker_command_serves_and_stops(tmp_path: Path) -> None:
    from kio.schema.api_versions.v3 import ApiVersionsRequest

    from .conftest import BrokerProcess

    b = BrokerProcess(tmp_path / "cli-data", node_id=7, via_cli=True)
    try:
        b.start()
        with RawClient(b.port) as raw:
            resp = raw.request(
                ApiVersionsRequest(client_software_name="t", client_software_version="1")
            )
        assert resp.error_code.value == Errors.NONE and len(resp.api_keys) == len(SUPPORTED_APIS)
        assert b.signal(signal.SIGTERM) == 0
    finally:
        b.stop()


def test_list_offsets_max_timestamp_with_a_real_client(broker) -> None:
    """KIP-734 (-3) through confluent-kafka's AdminClient.list_offsets, including a batch whose
    header maxTimestamp matches none of its records (issue 18: it closed the connection)."""
    from confluent_kafka.admin import AdminClient, OffsetSpec

    from broker_app.storage.records import CRC_OFFSET, build_batch, compute_crc

    create_topic(broker.bootstrap, "maxts")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def max_ts() -> tuple[int, int]:
        tp = TopicPartition("maxts", 0)
        info = admin.list_offsets({tp: OffsetSpec.max_timestamp()}, request_timeout=10)[tp]
        r = info.result(timeout=30)
        return r.offset, r.timestamp

    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50})
    for i, ts in enumerate((1000, 3000, 2000)):
        p.produce("maxts", f"v{i}".encode(), timestamp=ts)
    assert p.flush(30) == 0
    assert max_ts() == (1, 3000)

    lying = bytearray(build_batch([(None, b"a"), (None, b"b")], timestamp=2500))
    struct.pack_into(">q", lying, 35, 9000)  # header maxTimestamp: no record has it
    struct.pack_into(">I", lying, CRC_OFFSET, compute_crc(lying))
    with RawClient(broker.port) as raw:
        resp = raw.request(
            build(
                request_class(0, 9),
                {"transactional_id": None, "acks": 1, "timeout": 5000,
                 "topic_data": [{"name": "maxts",
                                 "partition_data": [{"index": 0, "records": bytes(lying)}]}]},
            )  # fmt: skip
        )
    assert resp.responses[0].partition_responses[0].error_code.value == Errors.NONE
    # Kafka's LogValidator would have rewritten the header to 2500; either way the answer is
    # the first record of that batch, at the largest timestamp it really holds.
    assert max_ts() == (3, 2500)
