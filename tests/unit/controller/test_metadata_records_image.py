"""Metadata records (JSON), MetadataImage replay rules, MetadataDelta and MetadataLoader."""

from __future__ import annotations

import json
import uuid

import pytest

from broker_app.metadata import (
    FenceBroker,
    MetadataDelta,
    MetadataImage,
    MetadataLoader,
    MetadataRecordError,
    PartitionChange,
    PartitionRecord,
    RegisterBroker,
    TopicConfig,
    TopicRecord,
    UnfenceBroker,
    decode_record,
    encode_record,
)
from broker_app.storage import build_batch

TID = str(uuid.UUID(int=7))

RECORDS = [
    RegisterBroker(1, 0, "a", "h1", 9091),
    RegisterBroker(2, 1, "b", "h2", 9092, rack="r2"),
    UnfenceBroker(1, 0),
    UnfenceBroker(2, 1),
    TopicRecord("t", TID, {"min.insync.replicas": "2"}),
    PartitionRecord(TID, 0, (1, 2), (1, 2), 1),
    PartitionRecord(TID, 1, (2, 1), (2, 1), 2),
    PartitionChange(TID, 0, isr=(1,)),
    FenceBroker(2, 1),
    PartitionChange(TID, 1, leader=1, isr=(1,)),
    TopicConfig(TID, "retention.ms", "1000"),
]


def test_every_record_type_round_trips_through_json():
    for rec in RECORDS:
        raw = encode_record(rec)
        assert json.loads(raw)["type"] == rec.TYPE
        assert decode_record(raw) == rec
    assert "leader" not in json.loads(encode_record(PartitionChange(TID, 0, isr=(1,))))


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (None, "null value"),
        (b"\xff\xfe", "not JSON"),
        (b"{not json", "not JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (b'{"type": "Bogus"}', "unknown record type 'Bogus'"),
        (b'{"broker_id": 1}', "unknown record type None"),
        (b'{"type": "FenceBroker", "broker_id": 1}', "lacks field 'broker_epoch'"),
        (b'{"type": "FenceBroker", "broker_id": "1", "broker_epoch": 0}', "FenceBroker.broker_id"),
        (b'{"type": "FenceBroker", "broker_id": true, "broker_epoch": 0}', "expected an integer"),
        (b'{"type": "Partition", "topic_id": "x", "partition": 0, "replicas": [1, "2"],'
         b' "isr": [1], "leader": 1}', "Partition.replicas"),
        (b'{"type": "Topic", "name": "t", "topic_id": "x", "configs": {"a": 1}}', "Topic.configs"),
    ],
)  # fmt: skip
def test_malformed_records_say_where_and_what(raw, fragment):
    with pytest.raises(MetadataRecordError) as e:
        decode_record(raw, "offset 17")
    assert "offset 17" in str(e.value) and fragment in str(e.value)


def test_unknown_extra_fields_are_ignored():
    raw = b'{"type": "UnfenceBroker", "broker_id": 3, "broker_epoch": 9, "future": [1]}'
    assert decode_record(raw) == UnfenceBroker(3, 9)


def test_replay_rules_bump_epochs():
    image = MetadataImage().apply_all(enumerate(RECORDS))
    assert image.offset == len(RECORDS) - 1
    p0, p1 = image.partition("t", 0), image.partition("t", 1)
    assert (p0.leader, p0.isr, p0.leader_epoch, p0.partition_epoch) == (1, (1,), 0, 1)
    assert (p1.leader, p1.isr, p1.leader_epoch, p1.partition_epoch) == (1, (1,), 1, 1)
    assert image.brokers[2].fenced and not image.brokers[1].fenced
    assert image.topics["t"].configs == {"min.insync.replicas": "2", "retention.ms": "1000"}
    assert image.live_brokers() == [1]
    # One record at a time gives the same image as a bulk replay.
    step = MetadataImage()
    for off, rec in enumerate(RECORDS):
        step = step.apply(rec, off)
    assert step == image
    assert image.to_json()["topics"]["t"]["partitions"]["1"]["leader_epoch"] == 1


@pytest.mark.parametrize(
    "bad",
    [
        PartitionChange(str(uuid.UUID(int=99)), 0, leader=1),  # unknown topic
        PartitionChange(TID, 5, leader=1),  # unknown partition
        FenceBroker(1, 42),  # wrong epoch
        UnfenceBroker(9, 0),  # unknown broker
        TopicRecord("t", str(uuid.UUID(int=8))),  # duplicate name
        PartitionRecord(TID, 0, (1,), (1,), 1),  # duplicate partition
        TopicRecord("u", "not-a-uuid"),
    ],
)
def test_records_that_do_not_fit_the_image_are_rejected(bad):
    image = MetadataImage().apply_all(enumerate(RECORDS))
    with pytest.raises(MetadataRecordError) as e:
        image.apply(bad, 100)
    assert "offset 100" in str(e.value)
    assert image.offset == len(RECORDS) - 1  # unchanged


def test_delta_local_changes():
    before = MetadataImage().apply_all(enumerate(RECORDS[:7]))
    after = before.apply(PartitionChange(TID, 1, leader=1), 7)
    delta = MetadataDelta(before, after)
    assert set(delta.changed_partitions()) == {("t", 1)}
    one, two = delta.local_changes(1), delta.local_changes(2)
    assert set(one.leaders) == {("t", 1)} and not one.followers
    assert set(two.followers) == {("t", 1)} and not two.leaders
    moved = after.apply(PartitionChange(TID, 1, replicas=(1,), isr=(1,)), 8)
    gone = MetadataDelta(after, moved).local_changes(2)
    assert gone.deletes == {("t", 1)} and not gone.leaders and not gone.followers and gone
    assert not MetadataDelta(moved, moved).local_changes(1)
    first = MetadataDelta(MetadataImage(), before)
    assert set(first.changed_brokers()) == {1, 2}
    assert set(first.local_changes(1).leaders) == {("t", 0)}


def test_loader_applies_fetched_batches_and_skips_what_it_has():
    values = [encode_record(r) for r in RECORDS]
    b1 = build_batch([(None, v) for v in values[:4]], base_offset=0)
    b2 = build_batch([(None, v) for v in values[4:]], base_offset=4)
    loader = MetadataLoader()
    delta = loader.apply_fetched(b1 + b2[:20])  # a partial tail batch waits for the next fetch
    assert loader.next_offset == 4 and set(delta.changed_brokers()) == {1, 2}
    delta = loader.apply_fetched(b1 + b2)  # re-fetch from 0: the first batch is skipped
    assert loader.next_offset == len(RECORDS)
    assert loader.image == MetadataImage().apply_all(enumerate(RECORDS))
    assert set(delta.local_changes(1).leaders) == {("t", 0), ("t", 1)}
    bad = build_batch([(None, b"garbage")], base_offset=len(RECORDS))
    with pytest.raises(MetadataRecordError, match=f"offset {len(RECORDS)}"):
        loader.apply_fetched(bad)
    assert loader.next_offset == len(RECORDS)
