"""RaftQuorumController: one controller of a Raft quorum, sans-I/O (issue 13, step 2).

It joins a KafkaRaftClient (the vote and the replicated `__cluster_metadata` log) and the
existing QuorumController (the metadata state machine), as Kafka's QuorumController does with
its QuorumMetaLogListener and deferred event queue:
- Every controller applies committed data (`poll_committed`) to `committed_image`, in order.
  A standby answers nothing that writes; its committed image is what it may serve (broker
  metadata fetches stop at the high watermark, RaftMetadataLog.read).
- The Raft leader becomes the ACTIVE controller only once its own LeaderChange record is
  committed (the client reports a high watermark only then); by that time its whole log is
  committed, and it rebuilds a QuorumController image from the whole log. Broker sessions
  start afresh there (heartbeat times are in memory, as after a restart and in Kafka).
  Legacy switch (hypothetical, no Kafka release): ControllerConfig.activate_caught_up=False
  (`--controller-activation on-election`) activates at once when the client leads, on the
  committed image applied so far, which then misses the earlier epochs' records that commit
  with the new LeaderChange.
- `submit(op)` runs an operation on the active QuorumController, which appends its records
  at once and applies them to its (uncommitted) image, as Kafka's active controller does;
  the answer is held (PendingResponse) until the high watermark passes the log end it saw,
  so no client sees a result that a failover could undo. An answer that wrote nothing waits
  too: it may depend on an earlier, still uncommitted record (a registration retry).
- A deposed leader (a higher epoch, or check-quorum resignation) drops its QuorumController
  and every uncommitted change with it, and fails pending answers with NOT_CONTROLLER; the
  committed image it keeps never held them. Raft then truncates its uncommitted tail.
- Only the active controller runs `tick` (session expiry, elections, rebalance).

- Snapshots (KIP-630): every controller, active or standby, snapshots its committed image at
  its committed position (`_next_offset`, just past every record it applied) once
  `snapshot_max_new_record_bytes` of metadata records were committed since its last snapshot,
  or `snapshot_max_interval_ms` passed with at least one (Kafka's
  metadata.log.max.record.bytes.between.snapshots / metadata.log.max.snapshot.interval.ms).
  The Raft log then starts at the snapshot (the client truncates the prefix). A controller
  whose position is below the log start (a restart, or a follower that got the leader's
  snapshot by FetchSnapshot) loads the snapshot into `committed_image`, then applies the log
  after it. A new active controller starts from `committed_image`, not from a replay of the
  log (which may no longer start at 0).
  Deviations: Kafka deletes the log below a snapshot only by retention (metadata.max.retention
  .bytes/ms) and lazily; here the prefix goes at once. Kafka's SnapshotGenerator writes the
  snapshot off the controller's event thread; here it is written inside sync(), blocking the
  controller's event loop for its duration (`highwater bench snapshot` measures it).
  Brokers behind the log start are sent the snapshot (ControllerApis' Fetch answers a
  SnapshotId; they FetchSnapshot it).

- The operations ControllerApis calls (register_broker, heartbeat, create_topics,
  alter_partition, elect_leaders, reassign_partitions, delete_topics, create_partitions,
  alter_*_configs; `image`, the committed image; `session_ages_ms`), as Kafka's ControllerApis
  calls its QuorumController: on the active controller each goes through `submit`, leaves
  its PendingResponse in `last_pending` (the edge awaits it before it writes the answer) and
  calls `on_write` (the edge wakes its Raft driver to flush and replicate); on a standby, or
  with `refuse` set (re-running a request whose commit failed), each answers that
  operation's NOT_CONTROLLER response without writing anything, and the client looks for the
  active controller.

The edge calls `sync(now_ms)` after every `client.handle`/`client.poll` (or uses `handle`/
`poll` here, which do both).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from broker_app.metadata.image import MetadataImage
from broker_app.metadata.records import decode_record
from broker_app.metadata.snapshot import decode_snapshot, encode_snapshot
from broker_app.raft import KafkaRaftClient, Snapshot
from broker_app.raft.messages import Envelope

from .config import ControllerConfig
from .errors import Errors
from .messages import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    CreateTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    PartitionResult,
    ReassignPartitionsRequest,
    ReassignPartitionsResponse,
    RegisterBrokerRequest,
    RegisterBrokerResponse,
    TopicResult,
)
from .quorum_controller import QuorumController
from .raft_metadata_log import NotControllerError, RaftMetadataLog

log = logging.getLogger(__name__)
NC = Errors.NOT_CONTROLLER


@dataclass
class PendingResponse:
    """An operation's answer, held until the high watermark reaches wait_offset."""

    value: Any
    wait_offset: int
    error: NotControllerError | None = None
    done: bool = False
    callbacks: list[Callable[[PendingResponse], None]] = field(default_factory=list)

    def on_done(self, callback: Callable[[PendingResponse], None]) -> None:
        if self.done:
            callback(self)
        else:
            self.callbacks.append(callback)

    def _finish(self, error: NotControllerError | None) -> None:
        self.error, self.done = error, True
        for cb in self.callbacks:
            cb(self)
        self.callbacks.clear()


class RaftQuorumController:
    def __init__(self, config: ControllerConfig, client: KafkaRaftClient,
                 new_topic_id: Callable[[], uuid.UUID] = uuid.uuid4) -> None:
        if config.node_id != client.node_id:
            raise ValueError(f"controller node id {config.node_id} != raft node id "
                             f"{client.node_id}")
        self.config = config
        self.client = client
        self.metadata_log = RaftMetadataLog(client)
        self.new_topic_id = new_topic_id
        self.committed_image = MetadataImage()
        self._next_offset = 0  # poll_committed position
        self.active: QuorumController | None = None
        self.active_epoch: int | None = None
        self._pending: list[PendingResponse] = []
        # Snapshot policy: metadata record bytes committed since the last snapshot, and when
        # that snapshot was taken (None until the first sync: the interval counts from start).
        self._bytes_since_snapshot = 0
        self._last_snapshot_ms: int | None = None
        self.snapshots_created = 0
        self.snapshots_loaded = 0
        # Told every committed batch of metadata records as they are applied, (offset, value)
        # in order (Kafka's RaftClient.Listener.handleCommit): what an end-of-run check
        # compares across voters (harness/checker/metadata_check.committed_log_divergence).
        self.commit_listener: Callable[[tuple[tuple[int, bytes], ...]], None] | None = None
        # The edge's side of an operation (see the module docstring).
        self.on_write: Callable[[], None] = lambda: None
        self.last_pending: PendingResponse | None = None
        self.refuse = False

    # -- queries ----------------------------------------------------------------------------
    @property
    def committed_offset(self) -> int:
        """Everything below this offset is applied to committed_image."""
        return self._next_offset

    @property
    def is_active(self) -> bool:
        return self.active is not None

    def controller(self) -> QuorumController:
        """The active QuorumController, or NotControllerError naming the leader we know."""
        if self.active is None:
            leader = self.client.leader_id
            raise NotControllerError(
                f"controller {self.config.node_id} is not active (raft epoch "
                f"{self.client.epoch}, leader {leader})", leader)
        return self.active

    def quorum_state(self) -> dict[str, Any]:
        """For GET /state."""
        return {
            "node_id": self.config.node_id,
            "voters": sorted(self.client.config.voters),
            "epoch": self.client.epoch,
            "leader_id": self.client.leader_id,
            "state": type(self.client.quorum.state).__name__,
            "active": self.is_active,
            "high_watermark": self.client.high_watermark,
            "log_start_offset": self.metadata_log.log_start_offset,
            "log_end_offset": self.metadata_log.end_offset,
            "committed_offset": self._next_offset,
            "snapshot": self._snapshot_state(),
            "pending_responses": len(self._pending),
        }

    # -- operations -------------------------------------------------------------------------
    def submit(self, op: Callable[[QuorumController], Any]) -> PendingResponse:
        """Run op on the active controller; its answer waits for the commit of everything it
        may depend on. Raises NotControllerError on a standby."""
        value = op(self.controller())
        pending = PendingResponse(value, self.metadata_log.end_offset)
        self._pending.append(pending)
        self._complete()
        return pending

    def tick(self, now_ms: int) -> None:
        """The active controller's timers (session expiry, elections, rebalance); wakes the
        driver if they wrote."""
        if self.active is None:
            return
        before = self.metadata_log.end_offset
        self.active.tick(now_ms)
        if self.metadata_log.end_offset != before:
            self.on_write()

    # -- the operations ControllerApis calls ------------------------------------------------
    @property
    def image(self) -> MetadataImage:
        """The committed image on every controller: the active one's own may hold records a
        failover would undo (Metadata answers and /state show this one)."""
        return self.committed_image

    def session_ages_ms(self, now_ms: int) -> dict[int, int]:
        return self.active.session_ages_ms(now_ms) if self.active is not None else {}

    def _run(self, op: Callable[[QuorumController], tuple[Any, list[Any]]],
             refused: Callable[[str], Any]) -> tuple[Any, list[Any]]:
        if self.refuse or not self.is_active:
            return refused(f"controller {self.config.node_id} is not the active controller "
                           f"(leader {self.client.leader_id})"), []
        try:
            pending = self.submit(lambda c: op(c)[0])
        except NotControllerError as e:
            return refused(str(e)), []
        self.last_pending = pending
        self.on_write()
        return pending.value, []

    def register_broker(self, req: RegisterBrokerRequest, now_ms: int) -> tuple[Any, list[Any]]:
        return self._run(lambda c: c.register_broker(req, now_ms),
                         lambda m: RegisterBrokerResponse(NC, -1, m))

    def heartbeat(self, req: HeartbeatRequest, now_ms: int) -> tuple[Any, list[Any]]:
        return self._run(lambda c: c.heartbeat(req, now_ms),
                         lambda m: HeartbeatResponse(NC, message=m))

    def create_topics(self, req: CreateTopicsRequest, now_ms: int) -> tuple[Any, list[Any]]:
        return self._run(lambda c: c.create_topics(req, now_ms),
                         lambda m: CreateTopicsResponse(
                             [CreateTopicResult(t.name, NC, m) for t in req.topics]))

    def alter_partition(self, req: AlterPartitionRequest, now_ms: int) -> tuple[Any, list[Any]]:
        return self._run(lambda c: c.alter_partition(req, now_ms),
                         lambda m: AlterPartitionResponse(NC, m))

    def elect_leaders(self, req: ElectLeadersRequest, now_ms: int) -> tuple[Any, list[Any]]:
        return self._run(lambda c: c.elect_leaders(req, now_ms),
                         lambda m: ElectLeadersResponse(NC, message=m))

    def reassign_partitions(self, req: ReassignPartitionsRequest,
                            now_ms: int) -> tuple[Any, list[Any]]:
        return self._run(lambda c: c.reassign_partitions(req, now_ms),
                         lambda m: ReassignPartitionsResponse(
                             [PartitionResult(n, i, NC, m) for n, i, _r in req.partitions]))

    # DeleteTopics, CreatePartitions and AlterConfigs (controller/topic_admin_apis.py). Until
    # 2026-11-28 the quorum's adaptor lacked them, and one a broker forwarded closed the
    # connection.
    def delete_topics(self, topics: list[tuple[str | None, Any]],
                      now_ms: int) -> tuple[Any, list[Any]]:
        return self._run(lambda c: c.delete_topics(topics, now_ms),
                         lambda m: [TopicResult(n, NC, m, i) for n, i in topics])

    def create_partitions(self, items: list[Any], validate_only: bool,
                          now_ms: int) -> tuple[Any, list[Any]]:
        return self._run(lambda c: c.create_partitions(items, validate_only, now_ms),
                         lambda m: [TopicResult(it.name, NC, m) for it in items])

    def alter_topic_configs(self, items: list[tuple[str, dict[str, str | None]]],
                            validate_only: bool, now_ms: int) -> tuple[Any, list[Any]]:
        return self._run(lambda c: c.alter_topic_configs(items, validate_only, now_ms),
                         lambda m: [TopicResult(name, NC, m) for name, _ in items])

    def alter_broker_configs(self, broker: str, changes: dict[str, str | None],
                             validate_only: bool, now_ms: int) -> list[Any]:
        return self._run_raising(lambda c: (c.alter_broker_configs(
            broker, changes, validate_only, now_ms), []))

    def alter_group_configs(self, group: str, changes: dict[str, str | None],
                            validate_only: bool, now_ms: int) -> list[Any]:
        return self._run_raising(lambda c: (c.alter_group_configs(
            group, changes, validate_only, now_ms), []))

    def _run_raising(self, op: Callable[[QuorumController], tuple[Any, list[Any]]]) -> Any:
        """An operation whose errors are ConfigErrors (one resource of an AlterConfigs)."""
        from broker_app.server.configs import ConfigError

        def refused(message: str) -> Any:
            raise ConfigError(NC, message)

        return self._run(op, refused)[0]

    # -- driving ----------------------------------------------------------------------------
    def deadline_ms(self) -> int:
        return self.client.deadline_ms()

    def handle(self, env: Envelope, now_ms: int) -> list[Envelope]:
        out = self.client.handle(env, now_ms)
        self.sync(now_ms)
        return out

    def poll(self, now_ms: int) -> list[Envelope]:
        out = self.client.poll(now_ms)
        self.sync(now_ms)
        return out

    def resign(self, now_ms: int) -> list[Envelope]:
        out = self.client.resign(now_ms)
        self.sync(now_ms)
        return out

    def shutdown(self, now_ms: int) -> list[Envelope]:
        """Begin the client's graceful shutdown (a leader resigns; nobody stands again)."""
        out = self.client.shutdown(now_ms)
        self.sync(now_ms)
        return out

    def sync(self, now_ms: int) -> None:
        """Follow the Raft client after it handled a message or a timer."""
        self._apply_committed()
        self._maybe_snapshot(now_ms)
        c = self.client
        if self.active is not None and (not c.is_leader or c.epoch != self.active_epoch):
            self._deactivate()
        if self.active is None and c.is_leader and (
                c.high_watermark is not None or not self.config.activate_caught_up):
            self._activate()
        self._complete()

    def _apply_committed(self) -> None:
        while True:
            update = self.client.poll_committed(self._next_offset)
            if update.snapshot is not None:
                self._load_snapshot(update.snapshot)
            if update.records:
                self.committed_image = self.committed_image.apply_all(
                    (off, decode_record(value, f"committed offset {off}"))
                    for off, value in update.records)
                self._bytes_since_snapshot += sum(len(v) for _o, v in update.records)
                if self.commit_listener is not None:
                    self.commit_listener(update.records)
            if update.next_offset == self._next_offset:
                return
            self._next_offset = update.next_offset

    def _activate(self) -> None:
        # Our LeaderChange is committed, and we appended nothing after it: the whole log is
        # committed and applied (sync applies before it activates), so the committed image
        # is the whole state (the log itself may start after a snapshot). With the
        # hypothetical activate_caught_up=False we get here as soon as we lead: the committed
        # image may lack records of earlier epochs that are in our log and committed by the
        # quorum (our high watermark is not known yet); they never reach self.active.image.
        image = self.committed_image
        self.active = QuorumController(self.config, self.metadata_log, self.new_topic_id,
                                       image=image)
        self.active_epoch = self.client.epoch
        log.info("controller %d is active in epoch %d (metadata offset %d)",
                 self.config.node_id, self.client.epoch, image.offset)

    def _deactivate(self) -> None:
        log.info("controller %d is no longer active (epoch %s -> %d, leader %s): %d pending "
                 "answers fail with NOT_CONTROLLER", self.config.node_id, self.active_epoch,
                 self.client.epoch, self.client.leader_id, len(self._pending))
        self.active, self.active_epoch = None, None
        pending, self._pending = self._pending, []
        for p in pending:
            p._finish(NotControllerError(
                f"controller {self.config.node_id} lost leadership before the answer was "
                f"committed", self.client.leader_id))

    def _complete(self) -> None:
        hw = self.client.high_watermark
        if self.active is None or hw is None:
            return
        while self._pending and self._pending[0].wait_offset <= hw:
            self._pending.pop(0)._finish(None)

    # -- snapshots (KIP-630) ----------------------------------------------------------------
    def _load_snapshot(self, snapshot: Snapshot) -> None:
        sid = snapshot.snapshot_id
        self.committed_image = decode_snapshot(
            snapshot.payload, sid.offset,
            f"snapshot {sid.offset}-{sid.epoch} of controller {self.config.node_id}")
        self._bytes_since_snapshot = 0
        self.snapshots_loaded += 1
        log.info("controller %d loaded the metadata snapshot at offset %d (epoch %d, %d bytes)",
                 self.config.node_id, sid.offset, sid.epoch, len(snapshot.payload))

    def _maybe_snapshot(self, now_ms: int) -> None:
        if self._last_snapshot_ms is None:
            self._last_snapshot_ms = now_ms
        if self._bytes_since_snapshot <= 0 or self._next_offset <= self.client.log.start_offset:
            return
        cfg = self.config
        by_time = cfg.snapshot_max_interval_ms > 0 and \
            now_ms - self._last_snapshot_ms >= cfg.snapshot_max_interval_ms
        if by_time or self._bytes_since_snapshot >= cfg.snapshot_max_new_record_bytes:
            self.create_snapshot(now_ms)

    def create_snapshot(self, now_ms: int) -> Snapshot:
        """Snapshot the committed image at the committed position; the log starts there."""
        end = self._next_offset
        snapshot = self.client.create_snapshot(end, encode_snapshot(self.committed_image))
        self._bytes_since_snapshot = 0
        self._last_snapshot_ms = now_ms
        self.snapshots_created += 1
        log.info("controller %d wrote the metadata snapshot at offset %d (epoch %d, %d bytes)",
                 self.config.node_id, end, snapshot.snapshot_id.epoch, len(snapshot.payload))
        return snapshot

    def _snapshot_state(self) -> dict[str, Any] | None:
        latest = self.client.log.latest_snapshot()
        if latest is None:
            return None
        return {"end_offset": latest.snapshot_id.offset, "epoch": latest.snapshot_id.epoch,
                "bytes": len(latest.payload), "created": self.snapshots_created,
                "loaded": self.snapshots_loaded}
