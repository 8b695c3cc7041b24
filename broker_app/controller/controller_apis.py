"""ControllerApis: Kafka wire requests -> the controller's operations (RaftQuorumController:
on the active controller, answered once committed) -> Kafka wire responses.

`handle(request, now_ms)` returns a kio response entity, or a DelayedMetadataFetch (a Fetch of
`__cluster_metadata-0` at the log end, which the network edge parks until the log grows or
max_wait passes, then calls `complete()`). No sockets here.

Metadata answered by the controller lists the unfenced brokers AND the controller itself
(node id = --node-id, its own address) as controller_id, so an AdminClient bootstrapped on the
controller sends CreateTopics and ElectLeaders to it. Leaders, replicas, ISR and leader epochs
are exactly as committed in the metadata log; offline_replicas are replicas that are fenced.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker_app.metadata.records import METADATA_PARTITION, METADATA_TOPIC
from broker_app.protocol.codec import Request
from broker_app.raft.kio_codec import from_kio, to_kio
from broker_app.raft.messages import Errors as RaftErrors
from broker_app.raft.messages import FetchSnapshotRequest, FetchSnapshotResponse
from broker_app.reject_log import RejectLog
from broker_app.server.api_common import (
    api_versions_response,
    image_topic_metadata,
    ms,
    requested_topic_names,
    respond,
    unknown_topic_entry,
)
from broker_app.storage.errors import OffsetOutOfRangeError

from .apis import CONTROLLER_APIS, ControllerApiKey
from .errors import Errors
from .messages import (
    AlterPartitionItem,
    AlterPartitionRequest,
    CreateTopicsRequest,
    ElectLeadersRequest,
    HeartbeatRequest,
    NewTopic,
    ReassignPartitionsRequest,
    RegisterBrokerRequest,
)
from .topic_admin_apis import (
    handle_alter_configs,
    handle_create_partitions,
    handle_delete_topics,
    handle_incremental_alter_configs,
)

if TYPE_CHECKING:
    from .raft_controller import PendingResponse, RaftQuorumController

log = logging.getLogger(__name__)
_REJECTS = RejectLog(log)  # rate-limited lines for rejected requests (issue 15)

CONFIG_SOURCE_TOPIC = 1
FETCH_MAX_WAIT_CAP_MS = 30_000


@dataclass
class DelayedMetadataFetch:
    max_wait_ms: int
    complete: Callable[[bool], Any]  # complete(force) -> response, or None to keep waiting


class ControllerApis:
    def __init__(
        self,
        controller: RaftQuorumController,
        advertised: tuple[str, int],
    ) -> None:
        self.controller = controller
        self.metadata_log = controller.metadata_log
        self.advertised = advertised
        # Quorum mode: (node id, host, port) of the active controller as far as we know, so
        # Metadata sends an AdminClient on a standby to the active one (default: ourselves).
        self.controller_endpoint: Callable[[], tuple[int, str, int]] | None = None
        k = ControllerApiKey
        self._handlers: dict[int, Callable[[Request, int], Any]] = {
            k.API_VERSIONS: self.handle_api_versions,
            k.METADATA: self.handle_metadata,
            k.CREATE_TOPICS: self.handle_create_topics,
            k.BROKER_REGISTRATION: self.handle_broker_registration,
            k.BROKER_HEARTBEAT: self.handle_broker_heartbeat,
            k.ALTER_PARTITION: self.handle_alter_partition,
            k.ELECT_LEADERS: self.handle_elect_leaders,
            k.ALTER_PARTITION_REASSIGNMENTS: self.handle_alter_partition_reassignments,
            k.FETCH: self.handle_fetch,
            k.FETCH_SNAPSHOT: self.handle_fetch_snapshot,
        }
        for key, fn in ((k.DELETE_TOPICS, handle_delete_topics),
                        (k.CREATE_PARTITIONS, handle_create_partitions),
                        (k.ALTER_CONFIGS, handle_alter_configs),
                        (k.INCREMENTAL_ALTER_CONFIGS, handle_incremental_alter_configs)):
            self._handlers[key] = lambda r, now, fn=fn: fn(self.controller, r, now)  # fmt: skip

    def handle(self, request: Request, now_ms: int) -> Any:
        return self._handlers[request.api_key](request, now_ms)

    def handle_pending(self, request: Request, now_ms: int) -> tuple[Any, PendingResponse | None]:
        """`handle`, and the commit its answer must wait for (None: answer at once). Both
        runtimes' edges call this; if the pending answer fails, they answer
        `refused(request, now_ms)` instead."""
        ctl = self.controller
        ctl.last_pending = None
        result = self.handle(request, now_ms)
        pending, ctl.last_pending = ctl.last_pending, None
        return result, pending

    def refused(self, request: Request, now_ms: int) -> Any:
        """The same request answered NOT_CONTROLLER (its commit failed: leadership lost)."""
        self.controller.refuse = True
        try:
            return self.handle(request, now_ms)
        finally:
            self.controller.refuse = False

    @staticmethod
    def _respond(request: Request, data: dict[str, Any]) -> Any:
        return respond(request, data)

    # --- ApiVersions / Metadata ---------------------------------------------------------

    def handle_api_versions(self, request: Request, now_ms: int) -> Any:
        return api_versions_response(request, CONTROLLER_APIS)

    def handle_metadata(self, request: Request, now_ms: int) -> Any:
        image = self.controller.image
        cfg = self.controller.config
        node_id, host, port = (self.controller_endpoint() if self.controller_endpoint
                               else (cfg.node_id, *self.advertised))
        brokers = [{"node_id": node_id, "host": host, "port": port, "rack": None}]
        for b in image.live_brokers():
            reg = image.brokers[b]
            brokers.append({"node_id": b, "host": reg.host, "port": reg.port, "rack": reg.rack})
        topics = []
        for name, topic_id in requested_topic_names(request, image):
            topic = image.topics.get(name) if name is not None else None
            if topic is None:
                topics.append(unknown_topic_entry(name, topic_id))
                continue
            topics.append(image_topic_metadata(image, topic))
        return self._respond(
            request,
            {
                "throttle_time": 0,
                "brokers": brokers,
                "cluster_id": cfg.cluster_id,
                "controller_id": node_id,
                "topics": topics,
            },
        )

    # --- broker lifecycle -----------------------------------------------------------------

    def handle_broker_registration(self, request: Request, now_ms: int) -> Any:
        body = request.body
        listener = body.listeners[0] if body.listeners else None
        req = RegisterBrokerRequest(
            broker_id=body.broker_id,
            incarnation_id=str(body.incarnation_id or ""),
            host=listener.host if listener else "",
            port=int(listener.port) if listener else 0,
            rack=body.rack,
            cluster_id=body.cluster_id,
            previous_broker_epoch=int(getattr(body, "previous_broker_epoch", -1)),
        )
        resp, _ = self.controller.register_broker(req, now_ms)
        if resp.message:
            _REJECTS.warning("BrokerRegistration rejected: %s", resp.message)
        return self._respond(
            request,
            {"throttle_time": 0, "error_code": resp.error, "broker_epoch": resp.broker_epoch},
        )

    def handle_broker_heartbeat(self, request: Request, now_ms: int) -> Any:
        body = request.body
        resp, _ = self.controller.heartbeat(
            HeartbeatRequest(
                body.broker_id,
                body.broker_epoch,
                body.current_metadata_offset,
                body.want_fence,
                body.want_shut_down,
            ),
            now_ms,
        )
        if resp.message:
            log.info("BrokerHeartbeat rejected: %s", resp.message)
        return self._respond(
            request,
            {
                "throttle_time": 0,
                "error_code": resp.error,
                "is_caught_up": resp.is_caught_up,
                "is_fenced": resp.is_fenced,
                "should_shut_down": resp.should_shutdown,
            },
        )

    # --- topics ---------------------------------------------------------------------------

    def handle_create_topics(self, request: Request, now_ms: int) -> Any:
        body = request.body
        topics = []
        for t in body.topics:
            assignments = (
                {a.partition_index: tuple(a.broker_ids) for a in t.assignments}
                if t.assignments
                else None
            )
            configs = {c.name: c.value for c in t.configs}
            topics.append(
                NewTopic(t.name, t.num_partitions, t.replication_factor, assignments, configs)
            )
        resp, _ = self.controller.create_topics(
            CreateTopicsRequest(topics, getattr(body, "validate_only", False)), now_ms
        )
        results = [
            {
                "name": r.name,
                "topic_id": r.topic_id or uuid.UUID(int=0),
                "error_code": r.error,
                "error_message": r.message,
                "num_partitions": r.num_partitions,
                "replication_factor": r.replication_factor,
                "configs": [
                    {
                        "name": k,
                        "value": v,
                        "read_only": False,
                        "config_source": CONFIG_SOURCE_TOPIC,
                        "is_sensitive": False,
                    }
                    for k, v in sorted(r.configs.items())
                ],
            }
            for r in resp.results
        ]
        return self._respond(request, {"throttle_time": 0, "topics": results})

    # --- AlterPartition -------------------------------------------------------------------

    def handle_alter_partition(self, request: Request, now_ms: int) -> Any:
        body = request.body
        items = []
        for t in body.topics:
            for p in t.partitions:
                if hasattr(p, "new_isr_with_epochs"):
                    isr = tuple(s.broker_id for s in p.new_isr_with_epochs)
                    epochs: tuple[int, ...] | None = tuple(
                        s.broker_epoch for s in p.new_isr_with_epochs
                    )
                else:
                    isr, epochs = tuple(p.new_isr), None
                items.append(
                    AlterPartitionItem(
                        t.topic_id or uuid.UUID(int=0),
                        p.partition_index,
                        p.leader_epoch,
                        p.partition_epoch,
                        isr,
                        epochs,
                    )
                )
        resp, _ = self.controller.alter_partition(
            AlterPartitionRequest(body.broker_id, body.broker_epoch, items), now_ms
        )
        if resp.message:
            log.info("AlterPartition rejected: %s", resp.message)
        by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
        for r in resp.results:
            by_topic.setdefault(r.topic_id, []).append(
                {
                    "partition_index": r.partition,
                    "error_code": r.error,
                    "leader_id": r.leader,
                    "leader_epoch": r.leader_epoch,
                    "isr": list(r.isr),
                    "leader_recovery_state": 0,
                    "partition_epoch": r.partition_epoch,
                }
            )
        return self._respond(
            request,
            {
                "throttle_time": 0,
                "error_code": resp.error,
                "topics": [{"topic_id": tid, "partitions": ps} for tid, ps in by_topic.items()],
            },
        )

    # --- ElectLeaders / reassignment -----------------------------------------------------

    def handle_elect_leaders(self, request: Request, now_ms: int) -> Any:
        body = request.body
        wanted = (
            None
            if body.topic_partitions is None
            else [(t.topic, p) for t in body.topic_partitions for p in t.partitions]
        )
        resp, _ = self.controller.elect_leaders(
            ElectLeadersRequest(getattr(body, "election_type", 0), wanted), now_ms
        )
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for r in resp.results:
            by_topic.setdefault(r.topic, []).append(
                {"partition_id": r.partition, "error_code": r.error, "error_message": r.message}
            )
        return self._respond(
            request,
            {
                "throttle_time": 0,
                "error_code": resp.error,
                "replica_election_results": [
                    {"topic": t, "partition_result": ps} for t, ps in by_topic.items()
                ],
            },
        )

    def handle_alter_partition_reassignments(self, request: Request, now_ms: int) -> Any:
        body = request.body
        wanted = [
            (t.name, p.partition_index, None if p.replicas is None else tuple(p.replicas))
            for t in body.topics
            for p in t.partitions
        ]
        resp, _ = self.controller.reassign_partitions(ReassignPartitionsRequest(wanted), now_ms)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for r in resp.results:
            by_topic.setdefault(r.topic, []).append(
                {"partition_index": r.partition, "error_code": r.error, "error_message": r.message}
            )
        return self._respond(
            request,
            {
                "throttle_time": 0,
                "error_code": Errors.NONE,
                "error_message": None,
                "responses": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
            },
        )

    # --- Fetch of the metadata log ----------------------------------------------------------

    def handle_fetch(self, request: Request, now_ms: int) -> Any:
        body = request.body
        wanted = [
            (t.topic, p.partition, p.fetch_offset, max(p.partition_max_bytes, 0))
            for t in body.topics
            for p in t.partitions
        ]
        max_wait_ms = min(ms(body.max_wait), FETCH_MAX_WAIT_CAP_MS)

        def complete(force: bool) -> Any:
            parts = [self._fetch_one(*w, snapshot_ok=request.api_version >= 12)
                     for w in wanted]
            has_data = any(p["records"] or "snapshot_id" in p for _, p in parts)
            errors = any(p["error_code"] != Errors.NONE for _, p in parts)
            if not force and not has_data and not errors:
                return None
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for topic, p in parts:
                by_topic.setdefault(topic, []).append(p)
            return self._respond(
                request,
                {
                    "throttle_time": 0,
                    "error_code": Errors.NONE,
                    "session_id": 0,
                    "responses": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
                },
            )

        response = complete(max_wait_ms <= 0 or body.min_bytes <= 0 or not wanted)
        if response is not None:
            return response
        return DelayedMetadataFetch(max_wait_ms, complete)

    def handle_fetch_snapshot(self, request: Request, now_ms: int) -> Any:
        """A broker whose metadata fetch offset is below the log start (a snapshot holds it)
        fetches that snapshot whole (the simulator's voters; over sockets RaftManager answers
        FetchSnapshot, a Raft request)."""
        req = from_kio(request.body)
        if not isinstance(req, FetchSnapshotRequest):
            raise ValueError(f"not a FetchSnapshot request: {type(req).__name__}")
        snapshot = self.metadata_log.latest_snapshot()
        epoch, node_id = self.metadata_log.epoch, self.controller.config.node_id
        if snapshot is None or snapshot.snapshot_id != req.snapshot_id:
            return to_kio(FetchSnapshotResponse(epoch, node_id, RaftErrors.SNAPSHOT_NOT_FOUND))
        return to_kio(FetchSnapshotResponse(epoch, node_id, snapshot=snapshot))

    def _fetch_one(
        self, topic: str, partition: int, offset: int, max_bytes: int, snapshot_ok: bool
    ) -> tuple[str, dict[str, Any]]:
        mlog = self.metadata_log
        out: dict[str, Any] = {
            "partition_index": partition,
            "error_code": Errors.NONE,
            "high_watermark": -1,
            "last_stable_offset": -1,
            "log_start_offset": -1,
            "aborted_transactions": [],
            "preferred_read_replica": -1,
            "records": b"",
        }
        if topic != METADATA_TOPIC or partition != METADATA_PARTITION:
            out["error_code"] = Errors.UNKNOWN_TOPIC_OR_PARTITION
            return topic, out
        # Committed data only: up to Raft's high watermark.
        end = mlog.high_watermark
        out.update(high_watermark=end, last_stable_offset=end,
                   log_start_offset=mlog.log_start_offset)  # fmt: skip
        snapshot = mlog.latest_snapshot()
        if offset < mlog.log_start_offset and snapshot is not None and snapshot_ok:
            # KIP-630: below the log start the broker must load the snapshot first; the
            # SnapshotId tells it which one to FetchSnapshot (Fetch v12+; older versions
            # get OFFSET_OUT_OF_RANGE from read()).
            sid = snapshot.snapshot_id
            out["snapshot_id"] = {"end_offset": sid.offset, "epoch": sid.epoch}
            return topic, out
        try:
            out["records"] = mlog.read(offset, max(max_bytes, 1))
        except OffsetOutOfRangeError:
            out["error_code"] = Errors.OFFSET_OUT_OF_RANGE
        return topic, out
