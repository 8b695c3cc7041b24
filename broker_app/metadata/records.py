"""Metadata records: the entries of the `__cluster_metadata` log, as JSON.

Contract:
- One metadata record = one Kafka record (key null) in a RecordBatch v2 of `__cluster_metadata-0`,
  whose value is a JSON object `{"type": <name>, ...fields}`. The record types and their fields
  follow Kafka's KRaft metadata records by name (RegisterBrokerRecord, FenceBrokerRecord,
  UnfenceBrokerRecord, TopicRecord, PartitionRecord, PartitionChangeRecord, ConfigRecord,
  RemoveTopicRecord), but
  the encoding is JSON instead of Kafka's binary metadata schemas: the log is for this project's
  brokers only, and JSON keeps it readable with `highwater dump-log --print-data`.
- `encode_record(r) -> bytes`, `decode_record(value, where) -> MetadataRecord`. Decoding checks
  the JSON, the type name, every field's presence and type, and raises MetadataRecordError
  naming `where` (e.g. "offset 17") and the problem. Unknown extra fields are ignored, so a newer
  writer's optional fields do not break an older reader (the role of Kafka's tagged fields).
- PartitionChange carries only what changed (None = unchanged), like PartitionChangeRecord.
  Replaying it bumps partition_epoch by one, and leader_epoch by one when `leader` is present.
- KIP-966: PartitionRecord and PartitionChange carry `eligible_leader_replicas` (ELR: replicas
  that left the ISR while it was below min.insync.replicas and still hold everything below the
  HW) and `last_known_elr` (Kafka's LastKnownElr: former ELR/ISR members, for unclean recovery).
  Both default to empty/unchanged, so logs written before them replay unchanged (Kafka adds
  them as tagged fields for the same reason).
"""

from __future__ import annotations

import json
import types
import typing
import uuid
from dataclasses import MISSING, asdict, dataclass, field, fields
from functools import cache
from typing import Any, ClassVar

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
# Kafka's Uuid.METADATA_TOPIC_ID ("AAAAAAAAAAAAAAAAAAAAAQ") is the UUID with value 1.
METADATA_TOPIC_ID = uuid.UUID(int=1)
NO_LEADER = -1


class MetadataRecordError(ValueError):
    """A metadata record that cannot be decoded or applied; the message says where and why."""


@dataclass(frozen=True, slots=True)
class RegisterBroker:
    """A broker (re)registered; broker_epoch is the record's own offset in the metadata log."""

    TYPE: ClassVar[str] = "RegisterBroker"
    broker_id: int
    broker_epoch: int
    incarnation_id: str
    host: str
    port: int
    rack: str | None = None
    fenced: bool = True


@dataclass(frozen=True, slots=True)
class FenceBroker:
    TYPE: ClassVar[str] = "FenceBroker"
    broker_id: int
    broker_epoch: int
    # True when the broker asked to shut down (controlled shutdown), False on session expiry.
    controlled_shutdown: bool = False


@dataclass(frozen=True, slots=True)
class UnfenceBroker:
    TYPE: ClassVar[str] = "UnfenceBroker"
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class TopicRecord:
    TYPE: ClassVar[str] = "Topic"
    name: str
    topic_id: str
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """ConfigRecord for a topic: value None deletes the setting."""

    TYPE: ClassVar[str] = "Config"
    topic_id: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """ConfigRecord for a broker resource (KIP-226 dynamic broker configs): `broker` is a
    broker id as a string, or "" for the cluster-wide default; value None deletes it."""

    TYPE: ClassVar[str] = "BrokerConfig"
    broker: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """ConfigRecord for a group resource (KIP-848 group configs): `group` is a group id;
    value None deletes it."""

    TYPE: ClassVar[str] = "GroupConfig"
    group: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True)
class RemoveTopic:
    """RemoveTopicRecord (DeleteTopics): the topic and all its partitions are gone; brokers
    delete the replicas' logs when they apply it."""

    TYPE: ClassVar[str] = "RemoveTopic"
    topic_id: str


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    TYPE: ClassVar[str] = "Partition"
    topic_id: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    eligible_leader_replicas: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class PartitionChange:
    TYPE: ClassVar[str] = "PartitionChange"
    topic_id: str
    partition: int
    leader: int | None = None
    isr: tuple[int, ...] | None = None
    replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    eligible_leader_replicas: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None


MetadataRecord = (
    RegisterBroker
    | FenceBroker
    | UnfenceBroker
    | TopicRecord
    | TopicConfig
    | BrokerConfig
    | GroupConfig
    | RemoveTopic
    | PartitionRecord
    | PartitionChange
)

RECORD_TYPES: dict[str, type] = {
    cls.TYPE: cls
    for cls in (
        RegisterBroker,
        FenceBroker,
        UnfenceBroker,
        TopicRecord,
        TopicConfig,
        BrokerConfig,
        GroupConfig,
        RemoveTopic,
        PartitionRecord,
        PartitionChange,
    )
}


def encode_record(record: MetadataRecord) -> bytes:
    data: dict[str, Any] = {"type": record.TYPE}
    for k, v in asdict(record).items():
        if isinstance(v, tuple):
            v = list(v)
        if v is None and isinstance(record, PartitionChange):
            continue  # absent = unchanged
        data[k] = v
    return json.dumps(data, separators=(",", ":"), sort_keys=False).encode()


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _check(value: Any, hint: Any) -> Any:
    """The value converted to the field's Python type; raises TypeError describing the mismatch."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _check(value, inner)
    if hint is bool:
        if not isinstance(value, bool):
            raise TypeError(f"expected a boolean, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"expected an integer, got {value!r}")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise TypeError(f"expected a string, got {value!r}")
        return value
    if origin is tuple:
        if not isinstance(value, list):
            raise TypeError(f"expected a list of integers, got {value!r}")
        return tuple(_check(v, int) for v in value)
    if origin is dict:
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise TypeError(f"expected an object of string values, got {value!r}")
        return dict(value)
    raise TypeError(f"unsupported field type {hint!r}")  # programming error in this module


def decode_record(value: bytes | None, where: str = "record") -> MetadataRecord:
    if value is None:
        raise MetadataRecordError(f"metadata {where}: null value")
    try:
        data = json.loads(value)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise MetadataRecordError(f"metadata {where}: not JSON ({e})") from e
    if not isinstance(data, dict):
        raise MetadataRecordError(f"metadata {where}: expected a JSON object, got {data!r:.80}")
    type_name = data.get("type")
    cls = RECORD_TYPES.get(type_name) if isinstance(type_name, str) else None
    if cls is None:
        raise MetadataRecordError(
            f"metadata {where}: unknown record type {type_name!r} "
            f"(known: {', '.join(sorted(RECORD_TYPES))})"
        )
    kwargs: dict[str, Any] = {}
    hints = _hints(cls)
    for f in fields(cls):
        if f.name not in data:
            if f.default is MISSING and f.default_factory is MISSING:
                raise MetadataRecordError(f"metadata {where}: {type_name} lacks field {f.name!r}")
            continue
        try:
            kwargs[f.name] = _check(data[f.name], hints[f.name])
        except TypeError as e:
            raise MetadataRecordError(f"metadata {where}: {type_name}.{f.name}: {e}") from None
    return cls(**kwargs)
