"""DescribeTopicPartitions (KIP-966): ELR from the image, Kafka's paging by cursor."""

from __future__ import annotations

import uuid

from broker_app.metadata.image import MetadataImage
from broker_app.metadata.records import (
    PartitionChange,
    PartitionRecord,
    RegisterBroker,
    TopicRecord,
    UnfenceBroker,
)
from broker_app.protocol.error_codes import Errors
from broker_app.server.describe_topic_partitions import describe, image_partitions

A, B = str(uuid.UUID(int=1)), str(uuid.UUID(int=2))


def _image() -> MetadataImage:
    recs = [RegisterBroker(b, b - 1, f"i{b}", "h", 9000 + b) for b in (1, 2, 3)]
    recs += [UnfenceBroker(b, b - 1) for b in (1, 2)]  # 3 stays fenced
    recs += [TopicRecord("a", A), TopicRecord("b", B)]
    recs += [PartitionRecord(A, i, (1, 2, 3), (1, 2, 3), 1) for i in range(3)]
    recs += [PartitionRecord(B, 0, (2, 3), (2,), 2)]
    recs += [PartitionChange(A, 1, isr=(1,), eligible_leader_replicas=(2,))]
    return MetadataImage().apply_all(enumerate(recs))


def _topics(image: MetadataImage):
    return {t.name: (t.topic_id, image_partitions(image, t)) for t in image.topics.values()}


def test_elr_and_offline_replicas_come_from_the_image():
    out = describe(_topics(_image()), ["a"], 2000, None)
    parts = out["topics"][0]["partitions"]
    assert [p["partition_index"] for p in parts] == [0, 1, 2] and out["next_cursor"] is None
    assert parts[1]["isr_nodes"] == [1] and parts[1]["eligible_leader_replicas"] == [2]
    assert parts[0]["eligible_leader_replicas"] == [] and parts[0]["offline_replicas"] == [3]


def test_paging_by_cursor_covers_everything_once():
    topics = _topics(_image())
    seen, cursor = [], None
    for _ in range(10):
        out = describe(topics, [], 2, cursor)
        seen += [(t["name"], p["partition_index"]) for t in out["topics"] for p in t["partitions"]]
        c = out["next_cursor"]
        if c is None:
            break
        cursor = (c["topic_name"], c["partition_index"])
    assert seen == [("a", 0), ("a", 1), ("a", 2), ("b", 0)]


def test_unknown_topic_and_bad_cursor():
    topics = _topics(_image())
    out = describe(topics, ["nope", "b"], 10, None)
    assert [(t["name"], t["error_code"]) for t in out["topics"]] == [
        ("b", Errors.NONE), ("nope", Errors.UNKNOWN_TOPIC_OR_PARTITION)]
    bad = describe(topics, ["a"], 10, ("b", 0))
    assert bad["topics"][0]["error_code"] == Errors.INVALID_REQUEST
