"""MetadataImage: the cluster state obtained by replaying metadata records, plus MetadataDelta.

Contract:
- A MetadataImage is immutable. `image.apply(record, offset)` returns a new image;
  `apply_all([(offset, record), ...])` replays many records with one copy (start-up replay).
  `offset` is the metadata-log offset of the last applied record (-1 for the empty image); a
  broker reports it as `current_metadata_offset` in its heartbeats.
- Both the controller and every broker use this class, so "what the metadata says" is computed
  in one place. Replay rules (Kafka's): RegisterBroker replaces the broker's previous
  registration; PartitionChange bumps partition_epoch by one and, when it carries `leader`,
  leader_epoch by one.
- A record that does not fit the image (a change to an unknown topic or partition, a fence of an
  unknown broker epoch...) raises MetadataRecordError naming the offset; the image is unchanged.
- `MetadataDelta(old, new).local_changes(broker_id)` lists, for one broker, the partitions it
  must now lead, follow or delete (what ReplicaManager turns into make_leader/make_follower):
  every partition whose registration changed (partition_epoch moved) and that lists the broker
  as a replica, split by whether the broker is the leader; `deletes` are replicas the broker no
  longer has (topic removed, or reassigned away), whose logs it deletes as Kafka's
  StopReplica(deletePartition=true) does. `changed_topic_configs()` names topics whose configs
  changed, so brokers re-read per-topic settings (min.insync.replicas) of partitions they host.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .records import (
    NO_LEADER,
    BrokerConfig,
    FenceBroker,
    GroupConfig,
    MetadataRecord,
    MetadataRecordError,
    PartitionChange,
    PartitionRecord,
    RegisterBroker,
    RemoveTopic,
    TopicConfig,
    TopicRecord,
    UnfenceBroker,
)


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    id: int
    epoch: int
    incarnation_id: str
    host: str
    port: int
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    elr: tuple[int, ...] = ()  # KIP-966 eligible leader replicas
    last_known_elr: tuple[int, ...] = ()

    @property
    def preferred_leader(self) -> int:
        return self.replicas[0] if self.replicas else NO_LEADER

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    @property
    def is_reassigning(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """The replicas once an ongoing reassignment completes (KIP-455)."""
        return tuple(r for r in self.replicas if r not in self.removing_replicas)


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    configs: Mapping[str, str] = field(default_factory=dict)
    partitions: Mapping[int, PartitionRegistration] = field(default_factory=dict)


class MetadataImage:
    __slots__ = ("brokers", "topics", "topics_by_id", "offset", "broker_configs",
                 "group_configs")

    def __init__(
        self,
        brokers: Mapping[int, BrokerRegistration] | None = None,
        topics: Mapping[str, TopicImage] | None = None,
        offset: int = -1,
        broker_configs: Mapping[str, Mapping[str, str]] | None = None,
        group_configs: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        #: dynamic broker configs (BrokerConfig records): broker id as a string, or "" for
        #: the cluster default -> name -> value
        self.broker_configs: Mapping[str, Mapping[str, str]] = {
            k: dict(v) for k, v in (broker_configs or {}).items() if v}
        #: group configs (GroupConfig records): group id -> name -> value
        self.group_configs: Mapping[str, Mapping[str, str]] = {
            k: dict(v) for k, v in (group_configs or {}).items() if v}
        self.brokers: Mapping[int, BrokerRegistration] = dict(brokers or {})
        self.topics: Mapping[str, TopicImage] = dict(topics or {})
        self.topics_by_id: Mapping[uuid.UUID, TopicImage] = {
            t.topic_id: t for t in self.topics.values()
        }
        self.offset = offset

    # --- queries -----------------------------------------------------------------------

    def partition(self, topic: str, partition: int) -> PartitionRegistration | None:
        t = self.topics.get(topic)
        return None if t is None else t.partitions.get(partition)

    def topic_by_id(self, topic_id: uuid.UUID | str) -> TopicImage | None:
        try:
            key = topic_id if isinstance(topic_id, uuid.UUID) else uuid.UUID(topic_id)
        except ValueError:
            return None
        return self.topics_by_id.get(key)

    def is_live(self, broker_id: int) -> bool:
        """Registered, unfenced and not shutting down: eligible to lead (and, KIP-841, to join
        an ISR: may_join_isr)."""
        b = self.brokers.get(broker_id)
        return b is not None and not b.fenced and not b.in_controlled_shutdown

    def may_join_isr(self, broker_id: int, fenced_ok: bool = False) -> bool:
        """KIP-841 (Kafka 3.3): registered, unfenced and not in controlled shutdown.
        fenced_ok (isr-eligibility false, before 3.3): a fenced broker too; one in controlled
        shutdown still not. That models ZooKeeper-era Kafka, whose controlled shutdown
        stopped the broker's fetchers (StopReplica), so it never looked caught up again;
        KRaft's 3.0-3.2, whose shutting-down brokers kept fetching and could rejoin, is not
        modelled."""
        if not fenced_ok:
            return self.is_live(broker_id)
        b = self.brokers.get(broker_id)
        return b is not None and not b.in_controlled_shutdown

    def broker_config(self, broker_id: int, name: str) -> str | None:
        """Dynamic broker config `name` as broker `broker_id` sees it (KIP-226): its own,
        else the cluster-wide default, else None (the static setting applies)."""
        mine = self.broker_configs.get(str(broker_id), {})
        return mine[name] if name in mine else self.broker_configs.get("", {}).get(name)

    def live_brokers(self) -> list[int]:
        return sorted(b for b in self.brokers if self.is_live(b))

    def all_partitions(self) -> Iterable[tuple[TopicImage, int, PartitionRegistration]]:
        for name in sorted(self.topics):
            t = self.topics[name]
            for p in sorted(t.partitions):
                yield t, p, t.partitions[p]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, MetadataImage)
            and self.brokers == other.brokers
            and self.topics == other.topics
            and self.offset == other.offset
            and self.broker_configs == other.broker_configs
            and self.group_configs == other.group_configs
        )

    def __repr__(self) -> str:
        return (
            f"MetadataImage(offset={self.offset}, brokers={sorted(self.brokers)}, "
            f"topics={sorted(self.topics)})"
        )

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-able form (the controller's GET /state, broker admin endpoints)."""
        return {
            "offset": self.offset,
            "brokers": {
                str(b.id): {
                    "epoch": b.epoch,
                    "incarnation_id": b.incarnation_id,
                    "host": b.host,
                    "port": b.port,
                    "rack": b.rack,
                    "fenced": b.fenced,
                    "in_controlled_shutdown": b.in_controlled_shutdown,
                }
                for b in sorted(self.brokers.values(), key=lambda b: b.id)
            },
            "topics": {
                t.name: {
                    "topic_id": str(t.topic_id),
                    "configs": dict(t.configs),
                    "partitions": {
                        str(p): {
                            "replicas": list(r.replicas),
                            "isr": list(r.isr),
                            "leader": r.leader,
                            "leader_epoch": r.leader_epoch,
                            "partition_epoch": r.partition_epoch,
                            "adding_replicas": list(r.adding_replicas),
                            "removing_replicas": list(r.removing_replicas),
                            "elr": list(r.elr),
                            "last_known_elr": list(r.last_known_elr),
                        }
                        for p, r in sorted(t.partitions.items())
                    },
                }
                for t in sorted(self.topics.values(), key=lambda t: t.name)
            },
            "broker_configs": {k: dict(v) for k, v in sorted(self.broker_configs.items())},
            "group_configs": {k: dict(v) for k, v in sorted(self.group_configs.items())},
        }

    def digest(self) -> str:
        """A hash of the image's content without its offset (sha256 of its canonical JSON):
        two nodes whose images agree have the same digest, whatever offset each applied up
        to (a snapshot's image ends at the snapshot's end offset - 1, a replayed one at its
        last metadata record). The metadata-divergence check compares these."""
        content = self.to_json()
        del content["offset"]
        for key in ("broker_configs", "group_configs"):
            if not content.get(key):
                content.pop(key, None)  # images without any keep their digest
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    # --- replay ------------------------------------------------------------------------

    def apply(self, record: MetadataRecord, offset: int | None = None) -> MetadataImage:
        return self.apply_all([(self.offset + 1 if offset is None else offset, record)])

    def apply_all(self, records: Iterable[tuple[int, MetadataRecord]]) -> MetadataImage:
        brokers = dict(self.brokers)
        topics = dict(self.topics)
        by_id = {t.topic_id: t.name for t in topics.values()}
        configs = {k: dict(v) for k, v in self.broker_configs.items()}
        groups = {k: dict(v) for k, v in self.group_configs.items()}
        offset = self.offset
        for off, rec in records:
            if isinstance(rec, BrokerConfig | GroupConfig):
                table, owner = ((configs, rec.broker) if isinstance(rec, BrokerConfig)
                                else (groups, rec.group))  # fmt: skip
                entry = table.setdefault(owner, {})
                if rec.value is None:
                    entry.pop(rec.name, None)
                else:
                    entry[rec.name] = rec.value
            else:
                _apply(brokers, topics, by_id, rec, f"offset {off}")
            offset = off
        return MetadataImage(brokers, topics, offset, configs, groups)


def _topic_for(topics: dict[str, TopicImage], by_id: dict[uuid.UUID, str], topic_id: str,
               where: str, type_name: str) -> TopicImage:  # fmt: skip
    try:
        name = by_id.get(uuid.UUID(topic_id))
    except ValueError:
        raise MetadataRecordError(
            f"metadata {where}: {type_name}: bad topic id {topic_id!r}"
        ) from None
    if name is None:
        raise MetadataRecordError(f"metadata {where}: {type_name} for unknown topic id {topic_id}")
    return topics[name]


def _apply(
    brokers: dict[int, BrokerRegistration],
    topics: dict[str, TopicImage],
    by_id: dict[uuid.UUID, str],
    rec: MetadataRecord,
    where: str,
) -> None:
    if isinstance(rec, RegisterBroker):
        brokers[rec.broker_id] = BrokerRegistration(
            rec.broker_id, rec.broker_epoch, rec.incarnation_id, rec.host, rec.port, rec.rack,
            rec.fenced,
        )  # fmt: skip
    elif isinstance(rec, FenceBroker | UnfenceBroker):
        b = brokers.get(rec.broker_id)
        if b is None or b.epoch != rec.broker_epoch:
            raise MetadataRecordError(
                f"metadata {where}: {rec.TYPE} for broker {rec.broker_id} epoch "
                f"{rec.broker_epoch}, registered: {None if b is None else b.epoch}"
            )
        if isinstance(rec, FenceBroker):
            brokers[rec.broker_id] = replace(
                b, fenced=True, in_controlled_shutdown=rec.controlled_shutdown
            )
        else:
            brokers[rec.broker_id] = replace(b, fenced=False, in_controlled_shutdown=False)
    elif isinstance(rec, TopicRecord):
        try:
            tid = uuid.UUID(rec.topic_id)
        except ValueError:
            raise MetadataRecordError(
                f"metadata {where}: Topic: bad topic id {rec.topic_id!r}"
            ) from None
        if rec.name in topics or tid in by_id:
            raise MetadataRecordError(
                f"metadata {where}: Topic {rec.name!r} ({rec.topic_id}) already exists"
            )
        topics[rec.name] = TopicImage(rec.name, tid, dict(rec.configs), {})
        by_id[tid] = rec.name
    elif isinstance(rec, TopicConfig):
        t = _topic_for(topics, by_id, rec.topic_id, where, rec.TYPE)
        configs = dict(t.configs)
        if rec.value is None:
            configs.pop(rec.name, None)
        else:
            configs[rec.name] = rec.value
        topics[t.name] = replace(t, configs=configs)
    elif isinstance(rec, RemoveTopic):
        t = _topic_for(topics, by_id, rec.topic_id, where, rec.TYPE)
        del topics[t.name]
        del by_id[t.topic_id]
    elif isinstance(rec, PartitionRecord):
        t = _topic_for(topics, by_id, rec.topic_id, where, rec.TYPE)
        if rec.partition < 0 or rec.partition in t.partitions:
            raise MetadataRecordError(
                f"metadata {where}: Partition {t.name}-{rec.partition} is invalid or exists"
            )
        parts = dict(t.partitions)
        parts[rec.partition] = PartitionRegistration(
            rec.replicas, rec.isr, rec.leader, rec.leader_epoch, rec.partition_epoch,
            rec.adding_replicas, rec.removing_replicas, rec.eligible_leader_replicas,
            rec.last_known_elr,
        )  # fmt: skip
        topics[t.name] = replace(t, partitions=parts)
    elif isinstance(rec, PartitionChange):
        t = _topic_for(topics, by_id, rec.topic_id, where, rec.TYPE)
        old = t.partitions.get(rec.partition)
        if old is None:
            raise MetadataRecordError(
                f"metadata {where}: PartitionChange for unknown partition {t.name}-{rec.partition}"
            )
        new = replace(
            old,
            leader=old.leader if rec.leader is None else rec.leader,
            leader_epoch=old.leader_epoch + (0 if rec.leader is None else 1),
            partition_epoch=old.partition_epoch + 1,
            isr=old.isr if rec.isr is None else rec.isr,
            replicas=old.replicas if rec.replicas is None else rec.replicas,
            adding_replicas=(
                old.adding_replicas if rec.adding_replicas is None else rec.adding_replicas
            ),
            removing_replicas=(
                old.removing_replicas if rec.removing_replicas is None else rec.removing_replicas
            ),
            elr=old.elr if rec.eligible_leader_replicas is None else rec.eligible_leader_replicas,
            last_known_elr=old.last_known_elr if rec.last_known_elr is None else rec.last_known_elr,
        )
        parts = dict(t.partitions)
        parts[rec.partition] = new
        topics[t.name] = replace(t, partitions=parts)
    else:  # pragma: no cover - decode_record only yields the types above
        raise MetadataRecordError(f"metadata {where}: cannot apply {type(rec).__name__}")


# --- delta -------------------------------------------------------------------------------


@dataclass
class LocalReplicaChanges:
    """What one broker must do after a metadata update. Keys are (topic, partition)."""

    leaders: dict[tuple[str, int], PartitionRegistration] = field(default_factory=dict)
    followers: dict[tuple[str, int], PartitionRegistration] = field(default_factory=dict)
    deletes: set[tuple[str, int]] = field(default_factory=set)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.leaders or self.followers or self.deletes)


class MetadataDelta:
    def __init__(self, old: MetadataImage, new: MetadataImage) -> None:
        self.old = old
        self.new = new

    def changed_partitions(self) -> dict[tuple[str, int], PartitionRegistration | None]:
        """(topic, partition) -> new registration (None if gone) for every change."""
        out: dict[tuple[str, int], PartitionRegistration | None] = {}
        for name, t in self.new.topics.items():
            before = self.old.topics.get(name)
            for p, reg in t.partitions.items():
                if before is None or before.partitions.get(p) != reg:
                    out[(name, p)] = reg
        for name, t in self.old.topics.items():
            after = self.new.topics.get(name)
            for p in t.partitions:
                if after is None or p not in after.partitions:
                    out[(name, p)] = None
        return out

    def changed_topic_configs(self) -> list[str]:
        """Topics present in both images whose configs differ (ConfigRecords applied)."""
        old = self.old.topics
        return [n for n, t in self.new.topics.items() if n in old and old[n].configs != t.configs]

    def changed_brokers(self) -> dict[int, BrokerRegistration | None]:
        out: dict[int, BrokerRegistration | None] = {
            b: reg for b, reg in self.new.brokers.items() if self.old.brokers.get(b) != reg
        }
        for b in self.old.brokers:
            if b not in self.new.brokers:
                out[b] = None
        return out

    def local_changes(self, broker_id: int) -> LocalReplicaChanges:
        changes = LocalReplicaChanges()
        for (topic, p), reg in self.changed_partitions().items():
            if reg is not None and broker_id in reg.replicas:
                target = changes.leaders if reg.leader == broker_id else changes.followers
                target[(topic, p)] = reg
                changes.topic_ids[topic] = self.new.topics[topic].topic_id
                continue
            old = self.old.partition(topic, p)
            if old is not None and broker_id in old.replicas:
                changes.deletes.add((topic, p))
        return changes
