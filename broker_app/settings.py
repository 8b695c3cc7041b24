"""The settings of the broker and controller processes as one table, like
kafka_versions.SWITCHES. The flags of `highwater broker` and `highwater controller`, the values
BrokerConfig and ControllerConfig get, and docs/settings.md are all made from it.

Contract:
- Each Setting names its process, a field of that process's config class, Kafka's name for it
  ("" where Kafka has none), the flag's type, group and one line of doc. Its default is the
  config class's own: the dataclasses are the one place defaults live.
- `add_arguments(parser, process)` adds one flag per row of the process, in the groups the
  help shows. A bool is a --flag / --no-flag pair.
- `values(args, process)` is the config class's keyword arguments of the parsed flags.
- `render_markdown()` is the docs page; a test keeps docs/settings.md equal to it.
- Flags that are not one config field each stay in the processes' main.py: the addresses
  (--controller, --controller-quorum-bootstrap-servers, --peer-address,
  --controller-quorum-voters), --flush / --flush-every-batch, --no-auto-create-topics,
  --log-level, the controller's listener, admin port and Raft timings, and the version
  switches (kafka_versions.py).
"""

from __future__ import annotations

import argparse
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

from broker_app.config import BrokerConfig
from broker_app.controller.config import ControllerConfig
from broker_app.replication.replica_selector import SELECTORS

BROKER, GROUPS, CLUSTER = "broker", "group coordinator", "cluster mode"
CONFIGS: dict[str, type] = {"broker": BrokerConfig, "controller": ControllerConfig}


@dataclass(frozen=True)
class Setting:
    field: str  # the field of the process's config class
    kafka: str  # Kafka's name for it, "" where Kafka has none
    type: type
    doc: str
    group: str = BROKER
    flag: str = ""  # "" = --<field with dashes>
    choices: tuple[Any, ...] = ()
    process: str = "broker"

    @property
    def option(self) -> str:
        return self.flag or "--" + self.field.replace("_", "-")

    @property
    def default(self) -> Any:
        """The config class's default (MISSING for the required ones)."""
        f = next(f for f in fields(CONFIGS[self.process]) if f.name == self.field)
        return f.default


SETTINGS: tuple[Setting, ...] = (
    Setting("node_id", "node.id", int, "this broker's id"),
    Setting("port", "listeners (port)", int, "the client port; 0 picks a free one"),
    Setting("data_dir", "log.dirs", Path, "where the logs and checkpoints live"),
    Setting("host", "listeners (host)", str, "the address to listen on"),
    Setting("advertised_host", "advertised.listeners (host)", str,
            "the host clients are told (default: --host)"),
    Setting("advertised_port", "advertised.listeners (port)", int,
            "the port clients are told (default: --port)"),
    Setting("max_frame_bytes", "socket.request.max.bytes", int, "the largest request accepted"),
    Setting("min_insync_replicas", "min.insync.replicas", int,
            "the default of topics that set none"),
    Setting("num_partitions", "num.partitions", int, "partitions of an auto-created topic"),
    Setting("segment_bytes", "log.segment.bytes", int, "a log segment rolls at this size"),
    Setting("log_retention_check_interval_ms", "log.retention.check.interval.ms", int,
            "how often retention.ms / retention.bytes are applied"),
    Setting("flush_interval_ms", "log.flush.interval.ms", int, "the timer of --flush interval"),
    Setting("max_connections", "max.connections", int,
            "connections at once (default: half the process's fd limit)"),
    Setting("max_connections_per_ip", "max.connections.per.ip", int,
            "connections at once from one address"),
    Setting("connections_max_idle_ms", "connections.max.idle.ms", int,
            "an idle connection is closed after this"),
    Setting("max_partitions_per_create_request", "", int,
            "partitions one CreateTopics or auto-creating Metadata may create (Kafka has "
            "quotas instead, KIP-599)"),
    Setting("fetch_max_wait_ms_cap", "", int,
            "upper bound on a client fetch's max_wait (the fuzzer lowers it)",
            flag="--fetch-max-wait-cap-ms"),
    Setting("broker_rack", "broker.rack", str, "this broker's rack (KIP-392)"),
    Setting("replica_selector", "replica.selector.class", str,
            "rack-aware = RackAwareReplicaSelector: consumers with client.rack read from a "
            "replica in their rack", choices=SELECTORS),
    Setting("offsets_topic_num_partitions", "offsets.topic.num.partitions", int,
            "partitions of __consumer_offsets", GROUPS),
    Setting("offsets_topic_replication_factor", "offsets.topic.replication.factor", int,
            "replicas of __consumer_offsets (capped at the brokers there are)", GROUPS),
    Setting("offsets_commit_required_acks", "offsets.commit.required.acks", int,
            "1 = legacy: answer OffsetCommit before the ISR has it", GROUPS, choices=(-1, 1)),
    Setting("group_initial_rebalance_delay_ms", "group.initial.rebalance.delay.ms", int,
            "how long a new group waits for more members", GROUPS),
    Setting("group_min_session_timeout_ms", "group.min.session.timeout.ms", int,
            "the smallest session timeout a member may ask for", GROUPS),
    Setting("admin_port", "", int, "HTTP GET /state (none: no admin endpoint)", CLUSTER),
    Setting("cluster_id", "cluster.id", str, "the cluster this broker belongs to", CLUSTER),
    Setting("default_replication_factor", "default.replication.factor", int,
            "replicas of an auto-created topic", CLUSTER),
    Setting("replica_lag_time_max_ms", "replica.lag.time.max.ms", int,
            "a follower that has not caught up for this long leaves the ISR", CLUSTER),
    Setting("heartbeat_interval_ms", "broker.heartbeat.interval.ms", int,
            "heartbeats to the controller", CLUSTER),
    Setting("replica_fetch_wait_max_ms", "replica.fetch.wait.max.ms", int,
            "how long a replica fetch waits at the leader for data", CLUSTER),
    Setting("replica_fetch_max_bytes", "replica.fetch.max.bytes", int,
            "what a replica fetch asks of each partition (at least one batch comes back)",
            CLUSTER),
    Setting("replica_fetch_backoff_ms", "replica.fetch.backoff.ms", int,
            "the wait after a failed fetch (doubles on errors, up to 10x; metadata fetches "
            "up to 2 s)", CLUSTER),
) + tuple(Setting(*row, process="controller") for row in (
    ("node_id", "node.id", int, "this controller's id (controllers use 3000 and up)"),
    ("cluster_id", "cluster.id", str, "the cluster it runs"),
    ("session_timeout_ms", "broker.session.timeout.ms", int,
     "a broker without a heartbeat for this long is fenced"),
    ("min_insync_replicas", "min.insync.replicas", int,
     "cluster default of min.insync.replicas (a topic config wins)"),
    ("auto_leader_rebalance", "auto.leader.rebalance.enable", bool,
     "move leaderships back to the preferred replicas (Kafka's default: on)"),
    ("leader_imbalance_check_interval_ms", "leader.imbalance.check.interval.seconds (x1000)",
     int, "how often the imbalance is checked"),
    ("leader_imbalance_per_broker_percentage", "leader.imbalance.per.broker.percentage", int,
     "a broker's share of misplaced leaderships that triggers the move"),
    ("num_partitions", "num.partitions", int, "partitions of a CreateTopics with -1"),
    ("max_partitions_per_create_request", "", int,
     "partitions one CreateTopics may create (Kafka has quotas instead, KIP-599)"),
    ("default_replication_factor", "default.replication.factor", int,
     "replicas of a CreateTopics with -1"),
    ("snapshot_max_new_record_bytes", "metadata.log.max.record.bytes.between.snapshots", int,
     "snapshot the committed image after this many bytes of new records (KIP-630); the log "
     "then starts there", BROKER, "--metadata-log-max-record-bytes-between-snapshots"),
    ("snapshot_max_interval_ms", "metadata.log.max.snapshot.interval.ms", int,
     "... or after this long with any new record (KIP-876); 0: no time trigger", BROKER,
     "--metadata-log-max-snapshot-interval-ms"),
))  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser, process: str = "broker") -> dict[str, Any]:
    """One flag per setting of `process`; returns the argument groups by name (main.py adds
    the flags that are not one field each to them)."""
    groups: dict[str, Any] = {BROKER: parser}
    for s in SETTINGS:
        if s.process != process:
            continue
        if s.group not in groups:
            groups[s.group] = parser.add_argument_group(
                "group coordinator (Kafka's names and defaults)" if s.group == GROUPS
                else s.group)  # fmt: skip
        kwargs: dict[str, Any] = {"type": s.type, "help": s.doc,
                                  "dest": s.field}  # fmt: skip
        if s.default is MISSING:
            kwargs["required"] = True
        else:
            kwargs["default"] = s.default
        if s.choices:
            kwargs["choices"] = s.choices
        if s.type is bool:
            del kwargs["type"]
            kwargs["action"] = argparse.BooleanOptionalAction
        groups[s.group].add_argument(s.option, **kwargs)
    return groups


def values(args: argparse.Namespace, process: str = "broker") -> dict[str, Any]:
    """The config class's keyword arguments from the parsed flags of the table."""
    return {s.field: getattr(args, s.field) for s in SETTINGS if s.process == process}


def render_markdown() -> str:
    """The settings as docs/settings.md shows them."""
    rows = ["| process | flag | Kafka's name | default | meaning |", "|---|---|---|---|---|"]
    for s in SETTINGS:
        default = "(required)" if s.default is MISSING else (
            "none" if s.default is None else str(s.default))  # fmt: skip
        choices = f" ({' / '.join(str(c) for c in s.choices)})" if s.choices else ""
        rows.append(f"| {s.process} | `{s.option}` | {s.kafka or '-'} | {default} | "
                    f"{s.doc}{choices} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(render_markdown(), end="")
