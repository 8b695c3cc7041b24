"""BrokerConfig: every setting of one broker process, with Kafka's names in the comments.

Built from `highwater broker` arguments (server/main.py). Topic-level settings such as
min.insync.replicas live with each topic (server/topic_store.py); the values here are the
broker-wide defaults a topic gets when it does not set them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from broker_app.protocol.framing import DEFAULT_MAX_FRAME_BYTES


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

    @property
    def advertised(self) -> tuple[str, int]:
        return (self.advertised_host or self.host, self.advertised_port or self.port)
