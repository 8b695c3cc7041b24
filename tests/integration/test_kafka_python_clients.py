"""kafka-python 3.x producer, consumer (assign mode, group offsets) and admin against the broker."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError

N = 300


def _consume(bootstrap: str, topic: str, count: int, group: str | None) -> list[tuple[int, bytes]]:
    c = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        consumer_timeout_ms=1000,
    )
    out: list[tuple[int, bytes]] = []
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        deadline = time.monotonic() + 30
        while len(out) < count and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=500).values():
                out += [(r.offset, r.value) for r in records]
    finally:
        c.close()
    return out


@pytest.mark.parametrize(
    "acks,compression,idempotence",
    [
        (0, None, False),
        (1, None, False),
        ("all", None, False),
        ("all", None, True),
        (1, "gzip", False),
        (1, "lz4", False),
        ("all", "zstd", True),
        (1, "snappy", False),
    ],
)
def test_kafka_python_produce_and_consume(broker, acks, compression, idempotence) -> None:
    topic = f"kp-{acks}-{compression}-{idempotence}"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    finally:
        admin.close()
    p = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        acks=acks,
        compression_type=compression,
        enable_idempotence=idempotence,
        linger_ms=5,
    )
    values = [b"kp-%05d" % i for i in range(N)]
    try:
        futures = [p.send(topic, v, partition=0) for v in values]
        p.flush(timeout=30)
        metas = [f.get(timeout=30) for f in futures]
    finally:
        p.close(timeout=10)
    if acks != 0:
        assert [m.offset for m in metas] == list(range(N))
    read = _consume(broker.bootstrap, topic, N, group="kp-group")
    assert [v for _, v in read] == values
    assert [o for o, _ in read] == list(range(N))


def test_kafka_python_offsets_commit_and_fetch(broker) -> None:
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=1)
    try:
        for i in range(10):
            p.send("kp-offsets", b"%d" % i, partition=0)  # auto-creates via Metadata
        p.flush(timeout=30)
    finally:
        p.close(timeout=10)
    tp = TopicPartition("kp-offsets", 0)
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="kp-g", enable_auto_commit=False)
    try:
        c.assign([tp])
        from kafka.structs import OffsetAndMetadata

        c.commit({tp: OffsetAndMetadata(7, "meta", -1)})
        assert c.committed(tp) == 7
    finally:
        c.close()
    c = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id="kp-g",
        enable_auto_commit=False,
        consumer_timeout_ms=1000,
    )
    try:
        c.assign([tp])  # resumes from the committed offset
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=500).values():
                got += [r.value for r in records]
        assert got == [b"7", b"8", b"9"]
    finally:
        c.close()


def test_kafka_python_admin_create_and_describe(broker) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("kp-adm", 2, 1, topic_configs={"min.insync.replicas": "1"})])
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("kp-adm", 2, 1)])
        assert "kp-adm" in admin.list_topics()
        (desc,) = admin.describe_topics(["kp-adm"])
        assert desc["error_code"] == 0
        assert sorted(p["partition_index"] for p in desc["partitions"]) == [0, 1]
    finally:
        admin.close()
