"""The records the group coordinator keeps in `__consumer_offsets`, in Kafka's own layouts.

Key and value bytes follow Kafka's (non-flexible) coordinator record schemas, so Kafka's own
tooling could read them: OffsetCommitKey v1 (group, topic, partition) with OffsetCommitValue v3
(offset, leader epoch, metadata, commit timestamp); GroupMetadataKey v2 (group) with
GroupMetadataValue v3 (protocol type, generation, protocol, leader, state timestamp, members).
A null value is a tombstone: the offset or group was deleted. `partition_for` is Kafka's
GroupCoordinator.partitionFor: Utils.abs(groupId.hashCode) % partitions, with Java's hashCode.
Pure functions, no I/O.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

OFFSETS_TOPIC = "__consumer_offsets"
OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3


class CoordinatorRecordError(ValueError):
    """A key or value in __consumer_offsets that does not parse (says which field, which byte)."""


def java_string_hash(s: str) -> int:
    """java.lang.String.hashCode: over UTF-16 code units, wrapping at 32 bits (signed)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions  # Kafka's Utils.abs


@dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int


@dataclass(frozen=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberMetadata, ...] = field(default_factory=tuple)


# --- writers -----------------------------------------------------------------------------


def _str(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _bytes(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return (struct.pack(">h", OFFSET_COMMIT_KEY_VERSION) + _str(group) + _str(topic)
            + struct.pack(">i", partition))  # fmt: skip


def offset_commit_value(o: OffsetAndMetadata) -> bytes:
    return (struct.pack(">hqi", OFFSET_COMMIT_VALUE_VERSION, o.offset, o.leader_epoch)
            + _str(o.metadata) + struct.pack(">q", o.commit_timestamp_ms))  # fmt: skip


def group_metadata_key(group: str) -> bytes:
    return struct.pack(">h", GROUP_METADATA_KEY_VERSION) + _str(group)


def group_metadata_value(v: GroupMetadataValue) -> bytes:
    out = [struct.pack(">h", GROUP_METADATA_VALUE_VERSION), _str(v.protocol_type),
           struct.pack(">i", v.generation), _str(v.protocol), _str(v.leader),
           struct.pack(">qi", v.current_state_timestamp_ms, len(v.members))]  # fmt: skip
    for m in v.members:
        out += [_str(m.member_id), _str(m.group_instance_id), _str(m.client_id),
                _str(m.client_host), struct.pack(">ii", m.rebalance_timeout_ms,
                                                 m.session_timeout_ms),
                _bytes(m.subscription), _bytes(m.assignment)]  # fmt: skip
    return b"".join(out)


# --- readers -----------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = data, 0, what

    def _take(self, fmt: str, name: str) -> tuple:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise CoordinatorRecordError(
                f"{self.what}: field {name} at byte {self.pos} runs past the end "
                f"({len(self.data)} bytes)"
            )
        vals = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return vals

    def int16(self, name: str) -> int:
        return self._take(">h", name)[0]

    def int32(self, name: str) -> int:
        return self._take(">i", name)[0]

    def int64(self, name: str) -> int:
        return self._take(">q", name)[0]

    def string(self, name: str) -> str | None:
        n = self.int16(name)
        if n < 0:
            return None
        raw = self._take(f">{n}s", name)[0]
        try:
            return raw.decode()
        except UnicodeDecodeError as e:
            raise CoordinatorRecordError(f"{self.what}: field {name} is not UTF-8: {e}") from e

    def bytes_(self, name: str) -> bytes:
        n = self.int32(name)
        if n < 0:
            return b""
        return self._take(f">{n}s", name)[0]


@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    group: str


def parse_key(key: bytes) -> OffsetKey | GroupKey:
    r = _Reader(key, "__consumer_offsets key")
    version = r.int16("version")
    if version in (0, 1):
        return OffsetKey(r.string("group") or "", r.string("topic") or "", r.int32("partition"))
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupKey(r.string("group") or "")
    raise CoordinatorRecordError(f"__consumer_offsets key has unknown version {version}")


def parse_offset_value(value: bytes) -> OffsetAndMetadata:
    r = _Reader(value, "OffsetCommitValue")
    version = r.int16("version")
    if version != OFFSET_COMMIT_VALUE_VERSION:
        raise CoordinatorRecordError(f"OffsetCommitValue version {version} is not supported")
    offset, epoch = r.int64("offset"), r.int32("leader_epoch")
    metadata = r.string("metadata") or ""
    return OffsetAndMetadata(offset, epoch, metadata, r.int64("commit_timestamp"))


def parse_group_value(value: bytes) -> GroupMetadataValue:
    r = _Reader(value, "GroupMetadataValue")
    version = r.int16("version")
    if version != GROUP_METADATA_VALUE_VERSION:
        raise CoordinatorRecordError(f"GroupMetadataValue version {version} is not supported")
    ptype = r.string("protocol_type") or ""
    generation = r.int32("generation")
    protocol, leader = r.string("protocol"), r.string("leader")
    ts, n = r.int64("current_state_timestamp"), r.int32("members")
    members = []
    for i in range(max(n, 0)):
        members.append(MemberMetadata(
            r.string(f"members[{i}].member_id") or "", r.string(f"members[{i}].group_instance_id"),
            r.string(f"members[{i}].client_id") or "", r.string(f"members[{i}].client_host") or "",
            r.int32(f"members[{i}].rebalance_timeout"), r.int32(f"members[{i}].session_timeout"),
            r.bytes_(f"members[{i}].subscription"), r.bytes_(f"members[{i}].assignment"),
        ))  # fmt: skip
    return GroupMetadataValue(ptype, generation, protocol, leader, ts, tuple(members))
