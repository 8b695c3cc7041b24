"""ReplicaManager applying admin metadata: a ConfigRecord changes min.insync.replicas of hosted
partitions (no registration changes), and RemoveTopic deletes the replicas' logs."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from broker_app.metadata.image import MetadataDelta, MetadataImage
from broker_app.metadata.records import (
    PartitionRecord,
    RegisterBroker,
    RemoveTopic,
    TopicConfig,
    TopicRecord,
    UnfenceBroker,
)
from broker_app.replication.replica_manager import ReplicaManager
from broker_app.storage.fs import MemoryFileSystem
from broker_app.storage.log_manager import LogManager
from broker_app.storage.records import build_batch

TID = str(uuid.UUID(int=9))


def _step(rm: ReplicaManager, image: MetadataImage, *records) -> MetadataImage:
    new = image.apply_all([(image.offset + 1 + i, r) for i, r in enumerate(records)])
    rm.apply_metadata_delta(MetadataDelta(image, new), default_min_isr=1)
    return new


def test_config_change_and_topic_removal_reach_the_broker() -> None:
    store = LogManager(Path("/sim/broker/data"), fs=MemoryFileSystem())
    rm = ReplicaManager(1, store, clock=lambda: 0)
    image = _step(rm, MetadataImage(), RegisterBroker(1, 0, "i", "h", 1), UnfenceBroker(1, 0),
                  TopicRecord("t", TID), PartitionRecord(TID, 0, (1,), (1,), 1))  # fmt: skip
    assert rm.get_partition("t", 0).min_insync_replicas == 1
    image = _step(rm, image, TopicConfig(TID, "min.insync.replicas", "2"))
    assert rm.get_partition("t", 0).min_insync_replicas == 2
    image = _step(rm, image, TopicConfig(TID, "min.insync.replicas", None))
    assert rm.get_partition("t", 0).min_insync_replicas == 1
    assert store.get_log(("t", 0)) is not None
    _step(rm, image, RemoveTopic(TID))
    assert rm.get_partition("t", 0) is None and store.get_log(("t", 0)) is None
    assert "t" not in rm.topic_ids


def test_topic_configs_reach_the_logs_retention_and_segment_size() -> None:
    store = LogManager(Path("/sim/broker/data"), fs=MemoryFileSystem())
    rm = ReplicaManager(1, store, clock=lambda: 0, retention_check_interval_ms=1000)
    image = _step(rm, MetadataImage(), RegisterBroker(1, 0, "i", "h", 1), UnfenceBroker(1, 0),
                  TopicRecord("t", TID, {"segment.bytes": "100"}),
                  PartitionRecord(TID, 0, (1,), (1,), 1))  # fmt: skip
    log = rm.get_partition("t", 0).log
    # A segment per batch: retention deletes whole segments, never the active one.
    assert log.config.segment_bytes == 100 and store.config.segment_bytes != 100
    now = int(time.time() * 1000)
    for age_s in (300, 200, 100, 0):  # four batches, the oldest first
        log.append_as_leader(build_batch([(None, b"v")], timestamp=now - age_s * 1000), 0)
    log.update_high_watermark(log.log_end_offset)
    rm.tick(0)  # arms the retention timer
    rm.tick(1000)
    assert log.log_start_offset == 0  # 7 days by default: nothing is old enough
    image = _step(rm, image, TopicConfig(TID, "retention.ms", "150000"))
    rm.tick(2000)
    assert log.log_start_offset == 2  # the batches 300 s and 200 s old are gone
    _step(rm, image, TopicConfig(TID, "cleanup.policy", "compact"),
          TopicConfig(TID, "retention.ms", "0"))  # fmt: skip
    rm.tick(3000)
    assert log.log_start_offset == 2  # compact-only topics are never trimmed by retention
