"""confluent-kafka (librdkafka) Producer/Consumer/AdminClient against one real broker."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .clients import consume_assigned, create_topic, produce

N = 500


def _values(n: int, tag: str) -> list[bytes]:
    return [f"{tag}-{i:06d}".encode() * 3 for i in range(n)]


@pytest.mark.parametrize(
    "conf",
    [
        {"acks": 0},
        {"acks": 1},
        {"acks": "all"},
        {"acks": "all", "enable.idempotence": True},
        {"acks": 1, "compression.type": "gzip"},
        {"acks": 1, "compression.type": "lz4"},
        {"acks": "all", "compression.type": "zstd", "enable.idempotence": True},
        {"acks": "all", "compression.type": "snappy"},
    ],
    ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()),
)
def test_produce_then_assigned_consumer_reads_exactly_the_acknowledged(broker, conf) -> None:
    topic = "t-" + "-".join(str(v) for v in conf.values()).replace(".", "")
    create_topic(broker.bootstrap, topic)
    values = _values(N, topic)
    acked, errors = produce(broker.bootstrap, topic, values, **conf)
    assert errors == []
    assert [a.value for a in acked] == values  # delivery reports in produce order
    if conf["acks"] != 0:  # acks=0 reports offset -1: the broker never answers
        assert [a.offset for a in acked] == list(range(N))
    read = consume_assigned(broker.bootstrap, topic, N)
    assert [v for _, v in read] == values
    assert [o for o, _ in read] == list(range(N))


def test_committed_offsets_round_trip_and_survive_restart(broker) -> None:
    create_topic(broker.bootstrap, "offs", partitions=2)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "grp-a"})
    try:
        c.assign([TopicPartition("offs", 0, 0)])
        c.commit(
            offsets=[TopicPartition("offs", 0, 17), TopicPartition("offs", 1, 4)],
            asynchronous=False,
        )
        got = c.committed([TopicPartition("offs", 0), TopicPartition("offs", 1)], timeout=10)
        assert [(tp.partition, tp.offset) for tp in got] == [(0, 17), (1, 4)]
    finally:
        c.close()
    broker.stop()
    broker.start()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "grp-a"})
    try:
        got = c.committed([TopicPartition("offs", 0), TopicPartition("offs", 1)], timeout=10)
        assert [(tp.partition, tp.offset) for tp in got] == [(0, 17), (1, 4)]
        other = c.committed([TopicPartition("offs", 0)], timeout=10)
        assert other[0].offset == 17
    finally:
        c.close()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "grp-b"})
    try:
        got = c.committed([TopicPartition("offs", 0)], timeout=10)
        assert got[0].offset < 0  # OFFSET_INVALID: nothing committed by this group
    finally:
        c.close()


def test_consumer_resumes_from_committed_offset(broker) -> None:
    create_topic(broker.bootstrap, "resume")
    values = _values(50, "r")
    produce(broker.bootstrap, "resume", values, acks=1)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-res"})
    try:
        c.commit(offsets=[TopicPartition("resume", 0, 30)], asynchronous=False)
    finally:
        c.close()
    # OFFSET_STORED (-1000): start from the group's committed offset
    read = consume_assigned(broker.bootstrap, "resume", 20, offset=-1000, group="g-res")
    assert [v for _, v in read] == values[30:]


def test_admin_creates_and_describes_topics(broker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    fs = admin.create_topics(
        [
            NewTopic("adm-a", num_partitions=3, replication_factor=1),
            NewTopic("adm-b", num_partitions=1, replication_factor=1,
                     config={"min.insync.replicas": "1"}),
        ],
        operation_timeout=10,
    )  # fmt: skip
    for f in fs.values():
        f.result(timeout=30)
    md = admin.list_topics(timeout=10)
    assert len(md.topics["adm-a"].partitions) == 3
    assert md.topics["adm-a"].partitions[2].leader == 1
    assert md.topics["adm-a"].partitions[2].isrs == [1]
    assert len(md.topics["adm-b"].partitions) == 1
    assert list(md.brokers) == [1]

    again = admin.create_topics([NewTopic("adm-a", 1, 1)], operation_timeout=10)
    with pytest.raises(KafkaException) as ei:
        again["adm-a"].result(timeout=30)
    assert ei.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS

    bad_rf = admin.create_topics([NewTopic("adm-c", 1, 3)], operation_timeout=10)
    with pytest.raises(KafkaException) as ei:
        bad_rf["adm-c"].result(timeout=30)
    assert ei.value.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR

    bad_name = admin.create_topics([NewTopic("bad name!", 1, 1)], operation_timeout=10)
    with pytest.raises(KafkaException) as ei:
        bad_name["bad name!"].result(timeout=30)
    assert ei.value.args[0].code() == KafkaError.TOPIC_EXCEPTION


def test_topics_survive_restart(broker) -> None:
    create_topic(broker.bootstrap, "persist", partitions=4)
    broker.stop()
    broker.start()
    md = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
    assert len(md.topics["persist"].partitions) == 4


def test_min_insync_replicas_above_the_replica_count_is_capped_from_3_7(broker) -> None:
    """Kafka 3.7+ (KAFKA-15583): min.insync.replicas=2 on a one-replica topic is capped at 1,
    so acks=all is served (issue 27's must-show; 3.5 refuses it, the test below)."""
    create_topic(broker.bootstrap, "minisr", config={"min.insync.replicas": "2"})
    acked, errors = produce(
        broker.bootstrap, "minisr", [b"x"], acks="all", retries=0, **{"message.timeout.ms": 5000}
    )
    assert errors == [] and [a.offset for a in acked] == [0]


def test_min_insync_replicas_above_isr_rejects_acks_all_only(broker_factory) -> None:
    broker = broker_factory(["--kafka-version", "3.5"])  # before the cap (3.7)
    create_topic(broker.bootstrap, "minisr", config={"min.insync.replicas": "2"})
    acked, errors = produce(
        broker.bootstrap, "minisr", [b"x"], acks="all", retries=0, **{"message.timeout.ms": 5000}
    )
    assert acked == []
    assert [e.code() for e in errors] == [KafkaError.NOT_ENOUGH_REPLICAS]
    # acks=1 ignores min.insync.replicas, as in Kafka
    acked, errors = produce(broker.bootstrap, "minisr", [b"y"], acks=1)
    assert errors == [] and [a.offset for a in acked] == [0]
