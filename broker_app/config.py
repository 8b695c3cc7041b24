"""BrokerConfig: every setting of one broker process, with Kafka's names in the comments.

Built from `highwater broker` arguments (server/main.py). Topic-level settings such as
min.insync.replicas live with each topic in the metadata log; the values here are the
broker-wide defaults a topic gets when it does not set them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from broker_app.protocol.framing import DEFAULT_MAX_FRAME_BYTES
from broker_app.replication.behaviour import ReplicationBehaviour

FLUSH_POLICIES = ("every-batch", "interval", "never")


@dataclass(frozen=True)
class BrokerConfig:
    node_id: int
    data_dir: Path
    port: int
    host: str = "127.0.0.1"
    advertised_host: str | None = None  # advertised.listeners host; defaults to host
    advertised_port: int | None = None  # advertised.listeners port; defaults to port
    cluster_id: str = "highwater-cluster"
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES  # socket.request.max.bytes
    auto_create_topics: bool = True  # auto.create.topics.enable
    num_partitions: int = 1  # num.partitions
    default_replication_factor: int = 1  # default.replication.factor
    min_insync_replicas: int = 1  # min.insync.replicas (broker default)
    segment_bytes: int = 16 * 1024 * 1024  # log.segment.bytes
    log_retention_check_interval_ms: int = 300_000  # log.retention.check.interval.ms
    max_message_bytes: int = 1024 * 1024 + 12  # message.max.bytes
    flush_every_batch: bool = False  # log.flush.interval.messages=1 when True
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
    # --- group coordinator (Kafka's defaults) ---
    offsets_topic_num_partitions: int = 50  # offsets.topic.num.partitions
    offsets_topic_replication_factor: int = 3  # offsets.topic.replication.factor (capped)
    offsets_commit_required_acks: int = -1  # offsets.commit.required.acks; 1 = legacy switch
    offsets_commit_timeout_ms: int = 5_000  # offsets.commit.timeout.ms
    group_min_session_timeout_ms: int = 6_000  # group.min.session.timeout.ms
    group_max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    group_initial_rebalance_delay_ms: int = 3_000  # group.initial.rebalance.delay.ms
    # Upper bound on a fetch's max_wait, so a bad client value cannot park a connection forever.
    fetch_max_wait_ms_cap: int = 30_000
    # KIP-392 fetch from follower: this broker's rack, and replica.selector.class
    # (broker_app/replication/replica_selector.py: "leader" is Kafka's default).
    broker_rack: str | None = None  # broker.rack
    replica_selector: str = "leader"  # replica.selector.class
    extra: dict[str, str] = field(default_factory=dict)
    # --- cluster mode (all unused without `controller`) ---
    controller: tuple[str, int] | None = None  # where the KRaft-style controller listens
    # A quorum of controllers (issue 13): `controller` is the first; the broker moves on to
    # the next when one is unreachable or answers NOT_CONTROLLER.
    controller_bootstrap: tuple[tuple[str, int], ...] = ()
    # Where THIS broker connects for replica fetches to broker id N (e.g. a Toxiproxy proxy);
    # a peer not listed is reached at its registered (advertised) address.
    peer_addresses: dict[int, tuple[str, int]] = field(default_factory=dict)
    behaviour: ReplicationBehaviour = field(default_factory=ReplicationBehaviour)
    replica_lag_time_max_ms: int = 30_000  # replica.lag.time.max.ms
    # log.flush policy: fsync every batch (L3's fix), on a timer, or never (page cache only).
    flush: str = "never"
    flush_interval_ms: int = 1000  # log.flush.interval.ms when flush == "interval"
    heartbeat_interval_ms: int = 500  # broker.heartbeat.interval.ms
    replica_fetch_wait_max_ms: int = 500  # replica.fetch.wait.max.ms
    replica_fetch_max_bytes: int = 1024 * 1024  # replica.fetch.max.bytes
    replica_fetch_backoff_ms: int = 200  # replica.fetch.backoff.ms (doubles up to 10x on errors)
    request_timeout_ms: int = 30_000  # upper bound on any request to a peer or the controller
    admin_port: int | None = None  # HTTP GET /state; None = no admin endpoint
    # --- hostile input (issue 15); see server/limits.py for where these differ from Kafka ---
    max_connections: int | None = None  # max.connections; None = half the fd ulimit
    max_connections_per_ip: int = 2**31 - 1  # max.connections.per.ip (Kafka: unlimited)
    connections_max_idle_ms: int = 600_000  # connections.max.idle.ms
    # Partitions one CreateTopics or auto-creating Metadata request may create (not a Kafka
    # setting: Kafka throttles with controller_mutation_rate quotas, KIP-599).
    max_partitions_per_create_request: int = 10_000

    def __post_init__(self) -> None:
        if self.flush not in FLUSH_POLICIES:
            raise ValueError(f"flush={self.flush!r} is not one of {', '.join(FLUSH_POLICIES)}")
        if self.offsets_commit_required_acks not in (-1, 1):
            raise ValueError(
                f"offsets_commit_required_acks must be -1 or 1, got "
                f"{self.offsets_commit_required_acks}"
            )
        if self.offsets_topic_num_partitions < 1:
            raise ValueError(
                f"offsets_topic_num_partitions must be >= 1, "
                f"got {self.offsets_topic_num_partitions}"
            )
        if self.replica_lag_time_max_ms <= 0:
            raise ValueError(
                f"replica_lag_time_max_ms must be > 0, got {self.replica_lag_time_max_ms}"
            )

    @property
    def clustered(self) -> bool:
        return self.controller is not None

    @property
    def advertised(self) -> tuple[str, int]:
        return (self.advertised_host or self.host, self.advertised_port or self.port)
