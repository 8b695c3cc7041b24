"""Topic and broker configs: names, validation, defaults and what DescribeConfigs shows.

One catalogue, used by CreateTopics (the controller), AlterConfigs /
IncrementalAlterConfigs (controller_apis / admin_apis) and DescribeConfigs (admin_apis).
Validation follows Kafka's ConfigDef types and ranges; a rejected entry raises ConfigError
with Kafka's error code (INVALID_CONFIG) and a message naming the config and value.

What takes effect (say it plainly, the charter asks for it):
- min.insync.replicas: acks=all produce checks it; a change applies to hosted partitions at
  once (ReplicaManager re-reads it when the metadata delta changes the topic's configs);
- unclean.leader.election.enable: the controller's election reads it on every election;
- retention.ms / retention.bytes: every log_retention_check_interval_ms each broker moves the
  log start of its logs past expired whole segments, never past the HW (storage/retention.py;
  ReplicaManager.cleanup_logs), as Kafka's LogManager.cleanupLogs does;
- segment.bytes and max.message.bytes: the topic's logs roll at / reject leader batches above
  them (ReplicaManager._apply_log_configs replaces each log's LogConfig);
- message.timestamp.before.max.ms / message.timestamp.after.max.ms: the leader's LogValidator
  window for the topic's record timestamps;
- cleanup.policy: with "compact", a leader refuses client records without a key (KIP-467);
- stored, validated, described but NOT enforced yet: compaction itself (there is no log cleaner:
  delete.retention.ms, min/max.compaction.lag.ms, min.cleanable.dirty.ratio),
  compression.type and its levels (batches are stored as produced), message.timestamp.type
  (LogAppendTime is not stamped), flush.messages / flush.ms (flushing follows the broker's
  --flush), segment.ms / segment.jitter.ms (segments roll by size only), segment.index.bytes,
  index.interval.bytes, file.delete.delay.ms, preallocate, the replication throttles, and the
  tiered-storage configs (there is no remote storage). Every topic config of Kafka 4.1
  (LogConfig) is in the catalogue, so a client setting one is never refused for its name;
  the ones Kafka 4.0 removed (message.format.version, message.downconversion.enable,
  message.timestamp.difference.max.ms, KIP-724) are unknown, as in 4.0+.
Broker resources (KIP-226 dynamic broker configs, cluster mode): AlterConfigs /
IncrementalAlterConfigs on a broker id (that broker) or "" (the cluster-wide default) set the
names in DYNAMIC_BROKER_CONFIGS; the controller stores them as BrokerConfig records in the
metadata log and every broker applies them:
- min.insync.replicas: the default of every topic without its own (per broker, else the
  cluster default, else the static --min-insync-replicas), re-read by hosted partitions at once;
- unclean.leader.election.enable: the controller's default for topics without their own (the
  cluster-wide "" resource only; Kafka also consults the controller node's own broker config).
Every other broker config is read-only (DescribeConfigs shows it as static); an unknown or
read-only name is INVALID_CONFIG naming it (a lone broker's own controller stores them too:
server/combined.py).
Group resources (KIP-848's group configs, Kafka 4.0+; cluster mode): AlterConfigs /
IncrementalAlterConfigs on a group id set the names in GROUP_CONFIGS, checked against the
group coordinator's default bounds as Kafka's GroupConfig.validate does (unknown name or
out-of-range value: INVALID_CONFIG; an empty group id: INVALID_REQUEST). Those bounds are
fixed here (Kafka's group.*.min/max.* broker settings are not), and they never overlap, so
GroupConfig's "session timeout above heartbeat interval" rule always holds and is not checked.
The controller stores them as GroupConfig records. DescribeConfigs on any group id (existing
or not) shows them, GROUP_CONFIG where set, else the default. Stored and described, NOT
enforced: they tune KIP-848 consumer, share and streams groups, which this broker does not have
yet (classic groups take their timeouts from JoinGroup, as in Kafka).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker_app.protocol.error_codes import Errors

# DescribeConfigs ConfigSource values (Kafka's DescribeConfigsResponse.ConfigSource).
SOURCE_TOPIC = 1
SOURCE_DYNAMIC_BROKER = 2
SOURCE_DYNAMIC_DEFAULT_BROKER = 3
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5
SOURCE_GROUP = 8
# ConfigType (DescribeConfigs v3+): the documented type of each config.
TYPE_BOOLEAN, TYPE_STRING, TYPE_INT, TYPE_LONG, TYPE_DOUBLE, TYPE_LIST = 1, 2, 3, 5, 6, 7

# ConfigResource types
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8
RESOURCE_GROUP = 32

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class ConfigError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def _integer(low: int, high: int) -> Callable[[str], None]:
    def check(value: str) -> None:
        try:
            n = int(value.strip())
        except ValueError:
            raise ValueError(f"not an integer: {value!r}") from None
        if not low <= n <= high:
            raise ValueError(f"{n} is outside [{low}, {high}]")

    return check


def _one_of(*allowed: str, many: bool = False) -> Callable[[str], None]:
    def check(value: str) -> None:
        items = [v.strip() for v in value.split(",")] if many else [value.strip()]
        bad = [v for v in items if v.lower() not in allowed]
        if bad or not items:
            raise ValueError(f"{value!r} is not {'a list of ' if many else ''}one of "
                             f"{', '.join(allowed)}")  # fmt: skip

    return check


def _double(low: float, high: float) -> Callable[[str], None]:
    def check(value: str) -> None:
        try:
            x = float(value.strip())
        except ValueError:
            raise ValueError(f"not a number: {value!r}") from None
        if not low <= x <= high:
            raise ValueError(f"{x} is outside [{low}, {high}]")

    return check


def _gzip_level(value: str) -> None:
    """Kafka's GZIP level validator: -1 (the codec's default) or 1..9."""
    _integer(-1, 9)(value)
    if int(value.strip()) == 0:
        raise ValueError("0 is not -1 or within [1, 9]")


_THROTTLED = re.compile(r"^\s*(\*|\d+\s*:\s*\d+(\s*,\s*\d+\s*:\s*\d+)*)?\s*$")


def _throttled_replicas(value: str) -> None:
    """Kafka's ThrottledReplicaListValidator: empty, "*", or partition:broker pairs."""
    if not _THROTTLED.match(value):
        raise ValueError(f"{value!r} is not empty, * or a list of partitionId:brokerId")


@dataclass(frozen=True)
class TopicConfigSpec:
    check: Callable[[str], None]
    config_type: int
    default: Callable[[Any], str]  # (BrokerConfig) -> the value a topic without it gets


TOPIC_CONFIGS: dict[str, TopicConfigSpec] = {
    "min.insync.replicas": TopicConfigSpec(
        _integer(1, INT_MAX), TYPE_INT, lambda c: str(c.min_insync_replicas)),
    "unclean.leader.election.enable": TopicConfigSpec(
        _one_of("true", "false"), TYPE_BOOLEAN, lambda c: "false"),
    "cleanup.policy": TopicConfigSpec(
        _one_of("delete", "compact", many=True), TYPE_LIST, lambda c: "delete"),
    "retention.ms": TopicConfigSpec(_integer(-1, LONG_MAX), TYPE_LONG, lambda c: "604800000"),
    "retention.bytes": TopicConfigSpec(_integer(-1, LONG_MAX), TYPE_LONG, lambda c: "-1"),
    "segment.bytes": TopicConfigSpec(
        _integer(14, INT_MAX), TYPE_INT, lambda c: str(c.segment_bytes)),
    "max.message.bytes": TopicConfigSpec(
        _integer(0, INT_MAX), TYPE_INT, lambda c: str(c.max_message_bytes)),
    "compression.type": TopicConfigSpec(
        _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), TYPE_STRING,
        lambda c: "producer"),
    "message.timestamp.type": TopicConfigSpec(
        _one_of("createtime", "logappendtime"), TYPE_STRING, lambda c: "CreateTime"),
    "flush.messages": TopicConfigSpec(
        _integer(1, LONG_MAX), TYPE_LONG,
        lambda c: "1" if c.flush_every_batch else str(LONG_MAX)),
    "message.timestamp.before.max.ms": TopicConfigSpec(
        _integer(0, LONG_MAX), TYPE_LONG, lambda c: str(LONG_MAX)),
    "message.timestamp.after.max.ms": TopicConfigSpec(
        _integer(0, LONG_MAX), TYPE_LONG, lambda c: "3600000"),
    # Kafka 4.1's other topic configs (LogConfig): stored and described, not enforced.
    "segment.ms": TopicConfigSpec(_integer(1, LONG_MAX), TYPE_LONG, lambda c: "604800000"),
    "segment.jitter.ms": TopicConfigSpec(_integer(0, LONG_MAX), TYPE_LONG, lambda c: "0"),
    "segment.index.bytes": TopicConfigSpec(_integer(4, INT_MAX), TYPE_INT, lambda c: "10485760"),
    "flush.ms": TopicConfigSpec(_integer(0, LONG_MAX), TYPE_LONG, lambda c: str(LONG_MAX)),
    "index.interval.bytes": TopicConfigSpec(_integer(0, INT_MAX), TYPE_INT, lambda c: "4096"),
    "delete.retention.ms": TopicConfigSpec(
        _integer(0, LONG_MAX), TYPE_LONG, lambda c: "86400000"),
    "min.compaction.lag.ms": TopicConfigSpec(_integer(0, LONG_MAX), TYPE_LONG, lambda c: "0"),
    "max.compaction.lag.ms": TopicConfigSpec(
        _integer(1, LONG_MAX), TYPE_LONG, lambda c: str(LONG_MAX)),
    "file.delete.delay.ms": TopicConfigSpec(_integer(0, LONG_MAX), TYPE_LONG, lambda c: "60000"),
    "min.cleanable.dirty.ratio": TopicConfigSpec(_double(0, 1), TYPE_DOUBLE, lambda c: "0.5"),
    "compression.gzip.level": TopicConfigSpec(_gzip_level, TYPE_INT, lambda c: "-1"),
    "compression.lz4.level": TopicConfigSpec(_integer(1, 17), TYPE_INT, lambda c: "9"),
    "compression.zstd.level": TopicConfigSpec(_integer(-131072, 22), TYPE_INT, lambda c: "3"),
    "preallocate": TopicConfigSpec(_one_of("true", "false"), TYPE_BOOLEAN, lambda c: "false"),
    "leader.replication.throttled.replicas": TopicConfigSpec(
        _throttled_replicas, TYPE_LIST, lambda c: ""),
    "follower.replication.throttled.replicas": TopicConfigSpec(
        _throttled_replicas, TYPE_LIST, lambda c: ""),
    "remote.storage.enable": TopicConfigSpec(
        _one_of("true", "false"), TYPE_BOOLEAN, lambda c: "false"),
    "local.retention.ms": TopicConfigSpec(_integer(-2, LONG_MAX), TYPE_LONG, lambda c: "-2"),
    "local.retention.bytes": TopicConfigSpec(_integer(-2, LONG_MAX), TYPE_LONG, lambda c: "-2"),
    "remote.log.copy.disable": TopicConfigSpec(
        _one_of("true", "false"), TYPE_BOOLEAN, lambda c: "false"),
    "remote.log.delete.on.disable": TopicConfigSpec(
        _one_of("true", "false"), TYPE_BOOLEAN, lambda c: "false"),
}  # fmt: skip
KNOWN_TOPIC_CONFIGS = frozenset(TOPIC_CONFIGS)


# KIP-226: the broker configs AlterConfigs may change (see the module docstring).
DYNAMIC_BROKER_CONFIGS: dict[str, TopicConfigSpec] = {
    "min.insync.replicas": TOPIC_CONFIGS["min.insync.replicas"],
    "unclean.leader.election.enable": TOPIC_CONFIGS["unclean.leader.election.enable"],
}


# Kafka's GroupConfig (group-coordinator GroupConfig.java; the share and streams ones from
# KIP-932 and KIP-1071, Kafka 4.0 / 4.1): default and the group coordinator's default bounds
# (group.consumer.min/max.session.timeout.ms and the like).
GROUP_CONFIGS: dict[str, TopicConfigSpec] = {
    "consumer.session.timeout.ms": TopicConfigSpec(
        _integer(45000, 60000), TYPE_INT, lambda c: "45000"),
    "consumer.heartbeat.interval.ms": TopicConfigSpec(
        _integer(5000, 15000), TYPE_INT, lambda c: "5000"),
    "share.session.timeout.ms": TopicConfigSpec(
        _integer(45000, 60000), TYPE_INT, lambda c: "45000"),
    "share.heartbeat.interval.ms": TopicConfigSpec(
        _integer(5000, 15000), TYPE_INT, lambda c: "5000"),
    "share.record.lock.duration.ms": TopicConfigSpec(
        _integer(15000, 60000), TYPE_INT, lambda c: "30000"),
    "share.auto.offset.reset": TopicConfigSpec(
        _one_of("latest", "earliest"), TYPE_STRING, lambda c: "latest"),
    "streams.session.timeout.ms": TopicConfigSpec(
        _integer(45000, 60000), TYPE_INT, lambda c: "45000"),
    "streams.heartbeat.interval.ms": TopicConfigSpec(
        _integer(5000, 15000), TYPE_INT, lambda c: "5000"),
    "streams.num.standby.replicas": TopicConfigSpec(_integer(0, 2), TYPE_INT, lambda c: "0"),
}  # fmt: skip

_CATALOGUES = {"topic": TOPIC_CONFIGS, "broker": DYNAMIC_BROKER_CONFIGS, "group": GROUP_CONFIGS}


def validate_topic_config(name: str, value: str | None, kind: str = "topic") -> str:
    """The value to store for `kind` ("topic", "broker" or "group") config `name`;
    ConfigError naming what is wrong."""
    spec = _CATALOGUES[kind].get(name)
    if spec is None and kind == "broker" and name in BROKER_CONFIG_NAMES:
        raise ConfigError(Errors.INVALID_CONFIG,
                          f"Cannot update these configs dynamically: [{name}] (dynamic: "
                          f"{', '.join(sorted(DYNAMIC_BROKER_CONFIGS))})")
    if spec is None:
        raise ConfigError(Errors.INVALID_CONFIG, f"Unknown {kind} config name: {name}")
    if value is None:
        raise ConfigError(Errors.INVALID_CONFIG, f"{kind} config {name!r} has a null value")
    try:
        spec.check(value)
    except ValueError as e:
        msg = f"Invalid value {value!r} for configuration {name}: {e}"
        raise ConfigError(Errors.INVALID_CONFIG, msg) from None
    return value.strip()


def validate_topic_configs(configs: dict[str, str | None]) -> dict[str, str]:
    return {k: validate_topic_config(k, v) for k, v in configs.items()}


def broker_configs(config: Any) -> dict[str, tuple[str | None, int]]:
    """A broker's settings as DescribeConfigs shows them: name -> (value, config type)."""
    return {
        "broker.id": (str(config.node_id), TYPE_INT),
        "node.id": (str(config.node_id), TYPE_INT),
        "min.insync.replicas": (str(config.min_insync_replicas), TYPE_INT),
        "num.partitions": (str(config.num_partitions), TYPE_INT),
        "default.replication.factor": (str(config.default_replication_factor), TYPE_INT),
        "auto.create.topics.enable": (str(config.auto_create_topics).lower(), TYPE_BOOLEAN),
        "log.segment.bytes": (str(config.segment_bytes), TYPE_INT),
        "message.max.bytes": (str(config.max_message_bytes), TYPE_INT),
        "log.dirs": (str(config.data_dir), TYPE_STRING),
        "replica.lag.time.max.ms": (str(config.replica_lag_time_max_ms), TYPE_LONG),
        "offsets.topic.num.partitions": (str(config.offsets_topic_num_partitions), TYPE_INT),
        "offsets.topic.replication.factor": (
            str(config.offsets_topic_replication_factor), TYPE_INT),
        "socket.request.max.bytes": (str(config.max_frame_bytes), TYPE_INT),
        # null when unset, as Kafka describes it (librdkafka's 0101 finds racks this way)
        "broker.rack": (config.broker_rack, TYPE_STRING),
    }  # fmt: skip


def describe_entry(name: str, value: str | None, source: int, config_type: int,
                   read_only: bool = False) -> dict[str, Any]:  # fmt: skip
    """One DescribeConfigs result entry (fields of every version; build() keeps the right ones)."""
    return {
        "name": name, "value": value, "read_only": read_only,
        "is_default": source == SOURCE_DEFAULT, "config_source": source,
        "is_sensitive": False, "synonyms": [], "config_type": config_type,
        "documentation": None,
    }  # fmt: skip


def describe_topic(stored: dict[str, str], broker_config: Any,
                   wanted: list[str] | None) -> list[dict[str, Any]]:  # fmt: skip
    """A topic's configs: what it set (TOPIC_CONFIG), else the default; `wanted` None = all.
    Names asked for that do not exist are left out, as Kafka does."""
    out = []
    for name, spec in sorted(TOPIC_CONFIGS.items()):
        if wanted is not None and name not in wanted:
            continue
        if name in stored:
            out.append(describe_entry(name, stored[name], SOURCE_TOPIC, spec.config_type))
        else:
            out.append(describe_entry(name, spec.default(broker_config), SOURCE_DEFAULT,
                                      spec.config_type))  # fmt: skip
    return out


BROKER_CONFIG_NAMES = frozenset({
    "broker.id", "node.id", "min.insync.replicas", "num.partitions", "default.replication.factor",
    "auto.create.topics.enable", "log.segment.bytes", "message.max.bytes", "log.dirs",
    "replica.lag.time.max.ms", "offsets.topic.num.partitions", "offsets.topic.replication.factor",
    "socket.request.max.bytes", "unclean.leader.election.enable", "broker.rack"})  # fmt: skip


def describe_broker(broker_config: Any, wanted: list[str] | None,
                    dynamic: dict[str, dict[str, str]] | None = None) -> list[dict[str, Any]]:
    """A broker's configs: a dynamic per-broker value (`dynamic[str(node_id)]`), else the
    dynamic cluster default (`dynamic[""]`), else the static setting."""
    dynamic = dynamic or {}
    mine = dynamic.get(str(broker_config.node_id), {})
    cluster = dynamic.get("", {})
    static = broker_configs(broker_config)
    static.setdefault("unclean.leader.election.enable", ("false", TYPE_BOOLEAN))
    out = []
    for n, (v, t) in sorted(static.items()):
        if wanted is not None and n not in wanted:
            continue
        ro = n not in DYNAMIC_BROKER_CONFIGS
        if n in mine:
            out.append(describe_entry(n, mine[n], SOURCE_DYNAMIC_BROKER, t, read_only=ro))
        elif n in cluster:
            out.append(describe_entry(n, cluster[n], SOURCE_DYNAMIC_DEFAULT_BROKER, t,
                                      read_only=ro))
        else:
            out.append(describe_entry(n, v, SOURCE_STATIC_BROKER, t, read_only=ro))
    return out


def describe_group(stored: dict[str, str], wanted: list[str] | None) -> list[dict[str, Any]]:
    """A group's configs as DescribeConfigs shows them: GROUP_CONFIG where set, else the
    default (any group id, existing or not, as Kafka does)."""
    return [describe_entry(n, stored[n], SOURCE_GROUP, spec.config_type) if n in stored else
            describe_entry(n, spec.default(None), SOURCE_DEFAULT, spec.config_type)
            for n, spec in sorted(GROUP_CONFIGS.items())
            if wanted is None or n in wanted]  # fmt: skip


# IncrementalAlterConfigs operations (KIP-339)
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3


def incremental_update(
    current: dict[str, str], ops: list[tuple[str, int, str | None]], kind: str = "topic"
) -> dict[str, str | None]:
    """The changes (name -> new value, None = delete) that IncrementalAlterConfigs `ops`
    make to a topic's `current` configs; ConfigError for unknown names, bad values or ops."""
    changes: dict[str, str | None] = {}
    seen: set[str] = set()
    for name, op, value in ops:
        if name in seen:
            raise ConfigError(Errors.INVALID_REQUEST, f"config {name} appears more than once")
        seen.add(name)
        spec = _CATALOGUES[kind].get(name)
        if spec is None:
            validate_topic_config(name, value, kind)  # raises, naming the config
            raise AssertionError("unreachable")
        if op == OP_SET:
            changes[name] = validate_topic_config(name, value, kind)
        elif op == OP_DELETE:
            changes[name] = None
        elif op in (OP_APPEND, OP_SUBTRACT):
            if spec.config_type != TYPE_LIST:
                raise ConfigError(
                    Errors.INVALID_CONFIG, f"config {name} is not a list; APPEND/SUBTRACT need one"
                )
            have = [v for v in (current.get(name) or "").split(",") if v]
            given = [v.strip() for v in (value or "").split(",") if v.strip()]
            items = (have + [v for v in given if v not in have] if op == OP_APPEND
                     else [v for v in have if v not in given])  # fmt: skip
            changes[name] = validate_topic_config(name, ",".join(items), kind) if items else None
        else:
            raise ConfigError(Errors.INVALID_REQUEST, f"unknown config operation {op} for {name}")
    return changes


def topic_changes(current: dict[str, str], configs: Any, incremental: bool,
                  kind: str = "topic") -> dict[str, str | None]:  # fmt: skip
    """What an AlterConfigs (every setting replaced: unnamed ones revert to their default) or
    IncrementalAlterConfigs request does to a topic's (or, kind "broker" / "group", a broker
    or group resource's dynamic) configs; ConfigError when it is bad. `configs` None (a null
    array, as some clients send for "no settings") is an empty list."""
    configs = configs or ()
    if incremental:
        ops = [(c.name, int(c.config_operation), c.value) for c in configs]
        return incremental_update(current, ops, kind)
    names = [c.name for c in configs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ConfigError(Errors.INVALID_REQUEST, f"duplicate config names {sorted(dup)}")
    changes: dict[str, str | None] = {k: None for k in current if k not in names}
    for c in configs:
        changes[c.name] = validate_topic_config(c.name, c.value, kind)
    return changes
