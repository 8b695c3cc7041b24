"""Metadata snapshots (KIP-630): a MetadataImage written as the records that rebuild it.

Contract:
- `encode_snapshot(image) -> bytes`: v2 record batches (base offset 0, SNAPSHOT_BATCH_RECORDS
  records each) holding, in order, every broker's RegisterBroker (with its fenced flag; a
  broker in controlled shutdown gets a FenceBroker(controlled_shutdown=True) after it), then
  per topic (by name) its TopicRecord with the topic's configs and a PartitionRecord per
  partition with the full registration (epochs, ISR, ELR, reassignment). Replaying these
  records onto an empty image gives back the same brokers and topics.
- `decode_snapshot(payload, end_offset, where) -> MetadataImage`: the image of metadata-log
  offsets [0, end_offset); its `offset` is end_offset - 1 (Kafka's MetadataProvenance: the
  last contained offset), even when that offset is a Raft control record. A payload that
  does not frame, decode or replay raises MetadataRecordError naming `where`.
- `snapshot_record_bytes(values)`: the size measure of metadata.log.max.record.bytes.between
  .snapshots (sum of record values).

Deviation from Kafka: the records are this project's JSON metadata records (records.py), and
there is no SnapshotHeader/SnapshotFooter control record; the snapshot id (end offset, epoch)
lives in the file name / the FetchSnapshot response instead.
"""

from __future__ import annotations

from collections.abc import Iterable

from broker_app.storage import build_batch, decode_records, iter_batches
from broker_app.storage.errors import CorruptRecordError

from .image import MetadataImage
from .records import (
    BrokerConfig,
    FenceBroker,
    GroupConfig,
    MetadataRecord,
    MetadataRecordError,
    PartitionRecord,
    RegisterBroker,
    TopicRecord,
    decode_record,
    encode_record,
)

SNAPSHOT_BATCH_RECORDS = 1000


def image_records(image: MetadataImage) -> list[MetadataRecord]:
    """The records that rebuild `image` from an empty one (in a deterministic order)."""
    out: list[MetadataRecord] = []
    for b in sorted(image.brokers.values(), key=lambda b: b.id):
        out.append(RegisterBroker(b.id, b.epoch, b.incarnation_id, b.host, b.port, b.rack,
                                  b.fenced))
        if b.in_controlled_shutdown:  # only FenceBroker sets it (and it implies fenced)
            out.append(FenceBroker(b.id, b.epoch, controlled_shutdown=True))
    for name in sorted(image.topics):
        t = image.topics[name]
        out.append(TopicRecord(name, str(t.topic_id), dict(t.configs)))
        for p in sorted(t.partitions):
            r = t.partitions[p]
            out.append(PartitionRecord(
                str(t.topic_id), p, r.replicas, r.isr, r.leader, r.leader_epoch,
                r.partition_epoch, r.adding_replicas, r.removing_replicas, r.elr,
                r.last_known_elr))
    for broker in sorted(image.broker_configs):
        for name, value in sorted(image.broker_configs[broker].items()):
            out.append(BrokerConfig(broker, name, value))
    for group in sorted(image.group_configs):
        for name, value in sorted(image.group_configs[group].items()):
            out.append(GroupConfig(group, name, value))
    return out


def encode_snapshot(image: MetadataImage) -> bytes:
    values = [encode_record(r) for r in image_records(image)]
    out = bytearray()
    for i in range(0, len(values), SNAPSHOT_BATCH_RECORDS):
        chunk = values[i:i + SNAPSHOT_BATCH_RECORDS]
        out += build_batch([(None, v) for v in chunk], base_offset=i, timestamp=0)
    return bytes(out)


def decode_snapshot(payload: bytes | memoryview, end_offset: int,
                    where: str = "snapshot") -> MetadataImage:
    if end_offset < 0:
        raise MetadataRecordError(f"metadata {where}: negative snapshot end offset {end_offset}")
    records: list[tuple[int, MetadataRecord]] = []
    try:
        for _header, view in iter_batches(payload, allow_partial_tail=False):
            for rec in decode_records(view):
                records.append((rec.offset, decode_record(
                    rec.value, f"{where} record {rec.offset}")))
    except CorruptRecordError as e:
        raise MetadataRecordError(f"metadata {where}: {e}") from e
    image = MetadataImage().apply_all(records)  # raises MetadataRecordError naming the record
    return MetadataImage(image.brokers, image.topics, end_offset - 1, image.broker_configs,
                         image.group_configs)


def snapshot_record_bytes(values: Iterable[bytes]) -> int:
    return sum(len(v) for v in values)
