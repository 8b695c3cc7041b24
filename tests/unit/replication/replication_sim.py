"""A hand-driven replication cluster for exact interleavings: real Logs in tmp dirs, Partition
and ReplicaFetcherState objects, and the test as network and controller.

Nothing is delivered unless the test says so: `fetch_round(f)` is one replica fetch request
and its response; `truncation_round(f)` one OffsetForLeaderEpoch round trip; `elect(...)` is the
controller bumping the leader epoch and telling every live broker.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from broker_app.replication.behaviour import ReplicationBehaviour
from broker_app.replication.errors import Errors
from broker_app.replication.fetcher import (
    FETCHING,
    OUT_OF_RANGE,
    TRUNCATING,
    FetchOutcome,
    ReplicaFetcherState,
)
from broker_app.replication.messages import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    ListOffsetsAnswer,
)
from broker_app.replication.partition import LeaderAppendResult, Partition
from broker_app.storage.fs import MemoryFileSystem
from broker_app.storage.log import Log
from broker_app.storage.log_manager import batches_not_synced
from broker_app.storage.records import build_batch, decode_records
from broker_app.storage.replica_log import ReplicaLog

TOPIC = "t"
LAG_MS = 10_000


@dataclass
class Broker:
    broker_id: int
    dir: Path
    log: ReplicaLog
    partition: Partition
    fetcher: ReplicaFetcherState | None = None
    alive: bool = True
    epoch: int = -1  # its broker epoch, sent in its fetches (Fetch v15, KIP-903)


@dataclass
class Cluster:
    root: Path
    broker_ids: list[int]
    behaviour: ReplicationBehaviour
    min_isr: int = 1
    brokers: dict[int, Broker] = field(default_factory=dict)
    leader_epoch: int = -1
    partition_epoch: int = -1
    leader_id: int = -1
    isr: tuple[int, ...] = ()
    now_ms: int = 1_000
    # True: each broker's Log on a simulated disk (storage/fs.py, the page-cache model):
    # `power_loss` then really loses what it had not flushed, instead of
    # `crash_losing_tail`'s explicit cut.
    memory: bool = False
    disks: dict[int, MemoryFileSystem] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for bid in self.broker_ids:
            self._start(bid, hw=0)

    # --- processes -------------------------------------------------------------------

    def _start(self, bid: int, hw: int) -> None:
        d = self.root / f"broker-{bid}" / f"{TOPIC}-0"
        log: ReplicaLog
        if self.memory:
            log = Log.open(d, fs=self.disks.setdefault(bid, MemoryFileSystem()))
        else:
            log = Log.open(d)
        # What LogManager does from replication-offset-checkpoint.
        log.update_high_watermark(hw)
        partition = Partition(
            TOPIC, 0, bid, log, self.behaviour,
            replica_lag_time_max_ms=LAG_MS, min_insync_replicas=self.min_isr,
        )  # fmt: skip
        self.brokers[bid] = Broker(bid, d, log, partition)

    def crash(self, bid: int) -> None:
        """Process dies; the log keeps what was written (page cache survives a process kill)."""
        b = self.brokers[bid]
        b.alive = False
        b.fetcher = None
        b.partition.make_offline()

    def restart(self, bid: int) -> None:
        """Reopen from disk with the HW it had checkpointed; no role until the controller says."""
        b = self.brokers[bid]
        hw = b.log.high_watermark
        b.log.close()
        self._start(bid, hw)

    def crash_losing_tail(self, bid: int, keep_until: int) -> None:
        """Crash with unflushed data lost: only offsets < keep_until survive on disk."""
        b = self.brokers[bid]
        self.crash(bid)
        b.log.truncate_to(keep_until)

    def power_loss(self, bid: int) -> int:
        """Memory clusters: the machine dies; unflushed batches are gone. Returns how many."""
        assert self.memory, "power_loss needs Cluster(memory=True)"
        self.crash(bid)
        fs = self.disks[bid]
        lost = sum(batches_not_synced(fs, self.root / f"broker-{bid}").values())
        fs.power_loss()
        return lost

    def close(self) -> None:
        for b in self.brokers.values():
            b.log.close()

    # --- controller ------------------------------------------------------------------

    def elect(self, leader: int, isr: list[int], followers: list[int] | None = None) -> None:
        """Bump the epoch, make `leader` lead with `isr`, make every live other a follower."""
        self.leader_epoch += 1
        self.partition_epoch += 1
        self.leader_id = leader
        self.isr = tuple(isr)
        replicas = list(self.broker_ids)
        assert self.brokers[leader].alive, f"cannot elect dead broker {leader}"
        self.brokers[leader].fetcher = None
        self.brokers[leader].partition.make_leader(
            self.leader_epoch, isr, replicas, self.partition_epoch, self.now_ms
        )
        if followers is None:
            followers = [b for b in self.broker_ids if b != leader and self.brokers[b].alive]
        for bid in followers:
            self.make_follower(bid)

    def make_follower(self, bid: int) -> None:
        b = self.brokers[bid]
        b.alive = True
        restart = b.partition.make_follower(
            self.leader_id, self.leader_epoch, self.isr, list(self.broker_ids),
            self.partition_epoch, self.now_ms,
        )  # fmt: skip
        if restart or b.fetcher is None:
            b.fetcher = ReplicaFetcherState(b.partition)

    def commit(self, request: AlterPartitionRequest | None) -> bool:
        """The controller accepts an AlterPartition; returns whether the leader's HW moved."""
        assert request is not None
        self.partition_epoch += 1
        self.isr = request.new_isr
        return self.leader.on_alter_partition_response(
            request,
            AlterPartitionResponse(
                leader_id=self.leader_id, leader_epoch=self.leader_epoch,
                isr=request.new_isr, partition_epoch=self.partition_epoch,
            ),
            self.now_ms,
        )  # fmt: skip

    # --- network ---------------------------------------------------------------------

    @property
    def leader(self) -> Partition:
        return self.brokers[self.leader_id].partition

    def produce(self, values: list[str], acks: int = -1) -> LeaderAppendResult:
        batch = build_batch([(None, v.encode()) for v in values], timestamp=0)
        return self.leader.append_records_to_leader(batch, acks, self.now_ms)

    def truncation_round(self, bid: int) -> int | None:
        f = self.brokers[bid].fetcher
        assert f is not None and f.state == TRUNCATING
        req = f.build_offset_for_leader_epoch()
        answer = self.leader.last_offset_for_leader_epoch(
            req.leader_epoch, req.current_leader_epoch
        )
        return f.on_offset_for_leader_epoch_response(answer)

    def list_offsets_round(self, bid: int) -> int | None:
        """One ListOffsets round trip, answered as KafkaApis answers a replica (LEO / start)."""
        f = self.brokers[bid].fetcher
        assert f is not None and f.state == OUT_OF_RANGE
        req = f.build_list_offsets()
        leader = self.leader
        # -1 (no KIP-320 fencing, before Kafka 2.1) is never checked, as KafkaApis does.
        if req.current_leader_epoch not in (-1, leader.leader_epoch):
            return f.on_list_offsets_response(ListOffsetsAnswer(Errors.FENCED_LEADER_EPOCH))
        log = leader.log
        offset = log.log_end_offset if req.timestamp == -1 else log.log_start_offset
        return f.on_list_offsets_response(ListOffsetsAnswer(offset=offset))

    def fetch_round(self, bid: int) -> FetchOutcome:
        f = self.brokers[bid].fetcher
        assert f is not None, f"broker {bid} has no fetcher"
        while f.state == OUT_OF_RANGE:
            self.list_offsets_round(bid)
        while f.state == TRUNCATING:
            self.truncation_round(bid)
        assert f.state == FETCHING, f.state
        req = replace(f.build_fetch(), replica_epoch=self.brokers[bid].epoch)
        result, _update = self.leader.fetch_records_for_follower(req, self.now_ms)
        self.last_update = _update
        return f.on_fetch_response(result)

    def replicate(self, *bids: int, rounds: int = 2) -> None:
        for _ in range(rounds):
            for bid in bids:
                self.fetch_round(bid)


def values(log: ReplicaLog) -> list[str]:
    """The log's content as offset-ordered values."""
    out: list[str] = []
    for _h, view in log.batches():
        for r in decode_records(view):
            assert r.offset == len(out), f"hole or overlap at offset {r.offset}"
            out.append(r.value.decode() if r.value is not None else "")
    return out
