"""BrokerConfig: every setting of one broker process, with Kafka's names in the comments.

Built from `highwater broker` arguments (server/main.py). Topic-level settings such as
min.insync.replicas live with each topic (server/topic_store.py); the values here are the
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
    max_message_bytes: int = 1024 * 1024 + 12  # message.max.bytes
    flush_every_batch: bool = False  # log.flush.interval.messages=1 when True
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
    # Upper bound on a fetch's max_wait, so a bad client value cannot park a connection forever.
    fetch_max_wait_ms_cap: int = 30_000
    extra: dict[str, str] = field(default_factory=dict)
    # --- cluster mode (all unused without `controller`) ---
    controller: tuple[str, int] | None = None  # where the KRaft-style controller listens
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

    def __post_init__(self) -> None:
        if self.flush not in FLUSH_POLICIES:
            raise ValueError(f"flush={self.flush!r} is not one of {', '.join(FLUSH_POLICIES)}")
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
