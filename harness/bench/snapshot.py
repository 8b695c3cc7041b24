"""`highwater bench snapshot`: KIP-630 metadata snapshot size and time (issue 13).

One voter of a Raft quorum (1 voter: it leads at once) with its log on disk
(FileReplicatedLog in a temporary directory) and the real RaftQuorumController: register
--brokers brokers, create --topics topics of --partitions partitions each (RF up to 3),
then move every partition's ISR --changes times (PartitionChange records appended straight to
the Raft log, 500 to a batch, as AlterPartition would write them), so the log holds many more
records than the image. Then:
- snapshot: the controller writes its committed image (encode + write + fsync + dropping the
  log prefix), timed, with the payload size and the log size it replaced;
- restart from the snapshot: reopen the log and load it into a new controller, timed;
- replay instead: the same metadata log replayed record by record (no snapshot), timed.
Figures, never assertions.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from broker_app.controller.config import ControllerConfig
from broker_app.controller.messages import (
    CreateTopicsRequest,
    HeartbeatRequest,
    NewTopic,
    RegisterBrokerRequest,
)
from broker_app.controller.raft_controller import RaftQuorumController
from broker_app.metadata import MetadataImage, PartitionChange
from broker_app.raft import KafkaRaftClient, RaftConfig
from broker_app.raft.file_log import FileQuorumStateStore, FileReplicatedLog

NODE = 3000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--changes", type=int, default=5, help="ISR changes per partition")


def _open(data_dir: Path, now_ms: int) -> RaftQuorumController:
    log = FileReplicatedLog(data_dir)
    client = KafkaRaftClient(RaftConfig(node_id=NODE, voters=frozenset({NODE})), log,
                             FileQuorumStateStore(data_dir), random.Random(1), now_ms)
    # No time trigger and no size trigger: the bench decides when to snapshot.
    config = ControllerConfig(node_id=NODE, snapshot_max_new_record_bytes=1 << 62,
                              snapshot_max_interval_ms=0)
    return RaftQuorumController(config, client)


def _until_active(ctl: RaftQuorumController, now_ms: int) -> int:
    for _ in range(10_000):
        now_ms = max(now_ms, ctl.deadline_ms())
        ctl.poll(now_ms)
        if ctl.is_active:
            return now_ms
    raise RuntimeError("the single voter did not become active")


def _commit(ctl: RaftQuorumController, now_ms: int) -> None:
    for _ in range(100):
        ctl.poll(now_ms)
        if ctl.committed_offset >= ctl.metadata_log.end_offset:
            return
    raise RuntimeError("records did not commit")


def _fill(ctl: RaftQuorumController, args: argparse.Namespace, now_ms: int) -> int:
    for b in range(1, args.brokers + 1):  # register, then a heartbeat unfences each broker
        reg = ctl.submit(lambda c, b=b: c.register_broker(
            RegisterBrokerRequest(b, f"inc-{b}", "127.0.0.1", 9091 + b), now_ms)[0])
        _commit(ctl, now_ms)
        epoch = reg.value.broker_epoch
        ctl.submit(lambda c, b=b, e=epoch: c.heartbeat(HeartbeatRequest(b, e, e + 1),
                                                       now_ms)[0])
        _commit(ctl, now_ms)
    rf = min(3, args.brokers)
    for t in range(args.topics):
        ctl.submit(lambda c, t=t: c.create_topics(CreateTopicsRequest(
            [NewTopic(f"topic-{t}", args.partitions, rf)]), now_ms)[0])
        _commit(ctl, now_ms)
    assert ctl.active is not None
    rng = random.Random(2)
    for _round in range(args.changes):
        records = []
        for topic, p, reg in ctl.active.image.all_partitions():
            isr = tuple(r for r in reg.replicas if r == reg.leader or rng.random() < 0.5)
            records.append(PartitionChange(str(topic.topic_id), p, isr=isr))
        for i in range(0, len(records), 500):  # batches of a plausible size
            ctl.metadata_log.append(records[i:i + 500])
        _commit(ctl, now_ms)
    return ctl.metadata_log.end_offset


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="hw-snapshot-") as tmp:
        data_dir = Path(tmp)
        ctl = _open(data_dir, 0)
        now = _until_active(ctl, 0)
        t0 = time.perf_counter()
        end = _fill(ctl, args, now)
        fill_s = time.perf_counter() - t0
        log_dir = data_dir / "__cluster_metadata-0"
        log_bytes = sum(f.stat().st_size for f in log_dir.glob("*.log"))
        records = sum(1 for _ in ctl.metadata_log.replay())

        t0 = time.perf_counter()  # what a restart costs without a snapshot
        replayed = MetadataImage().apply_all(ctl.metadata_log.replay())
        replay_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        snap = ctl.create_snapshot(now)
        snapshot_s = time.perf_counter() - t0
        ctl.client.log.close()  # type: ignore[attr-defined]

        t0 = time.perf_counter()
        again = _open(data_dir, now)
        again.sync(now)
        load_s = time.perf_counter() - t0
        same = again.committed_image.topics == replayed.topics and \
            again.committed_image.brokers == replayed.brokers
        again.client.log.close()  # type: ignore[attr-defined]
    partitions = args.topics * args.partitions
    print(f"brokers={args.brokers} partitions={partitions} metadata_records={records} "
          f"log_end_offset={end} log_bytes={log_bytes} (filled in {fill_s:.1f} s)")
    print(f"snapshot: end_offset={snap.snapshot_id.offset} bytes={len(snap.payload)} "
          f"write_s={snapshot_s:.3f} (encode + fsync + drop the log prefix)")
    print(f"restart: load snapshot + open log {load_s:.3f} s; replay the whole log instead "
          f"{replay_s:.3f} s; same image: {same}")
    return 0
