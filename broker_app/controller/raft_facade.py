"""RaftControllerFacade: what ControllerApis and ControllerServer call in quorum mode.

It has the QuorumController methods the request handlers use (register_broker, heartbeat,
create_topics, alter_partition, elect_leaders, reassign_partitions, tick, image, config,
session_ages_ms), so the handlers stay as they are:
- on the active controller each call goes through RaftQuorumController.submit and the
  PendingResponse is left in `last_pending`; the server awaits it before it writes the answer;
- on a standby (or after a pending answer failed) each call returns that operation's
  NOT_CONTROLLER response without writing anything (Kafka answers NOT_CONTROLLER too, and
  the client looks for the active controller);
- `image` (Metadata answers, /state) is the committed image on every controller: the active
  one's own image may hold records a failover would undo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from broker_app.metadata.image import MetadataImage
from broker_app.server.configs import ConfigError

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
from .raft_controller import PendingResponse, RaftQuorumController
from .raft_metadata_log import NotControllerError

NC = Errors.NOT_CONTROLLER


class RaftControllerFacade:
    def __init__(self, raft: RaftQuorumController, on_write: Callable[[], None]) -> None:
        self.raft = raft
        self.on_write = on_write  # wake the Raft driver: appended records must be flushed
        self.last_pending: PendingResponse | None = None
        self.refuse = False  # answer NOT_CONTROLLER (re-running a request whose commit failed)

    @property
    def config(self) -> ControllerConfig:
        return self.raft.config

    @property
    def image(self) -> MetadataImage:
        return self.raft.committed_image

    def session_ages_ms(self, now_ms: int) -> dict[int, int]:
        active = self.raft.active
        return active.session_ages_ms(now_ms) if active is not None else {}

    def tick(self, now_ms: int) -> tuple[None, list[Any]]:
        before = self.raft.metadata_log.end_offset
        self.raft.tick(now_ms)
        if self.raft.metadata_log.end_offset != before:
            self.on_write()
        return None, []

    def _run(self, op: Callable[[QuorumController], tuple[Any, list[Any]]],
             refused: Callable[[str], Any]) -> tuple[Any, list[Any]]:
        if self.refuse or not self.raft.is_active:
            leader = self.raft.client.leader_id
            return refused(f"controller {self.config.node_id} is not the active controller "
                           f"(leader {leader})"), []
        try:
            pending = self.raft.submit(lambda c: op(c)[0])
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

    # The admin operations brokers forward (DeleteTopics, CreatePartitions, AlterConfigs;
    # topic_admin_apis.py). They were missing here until the lone controller became a
    # one-voter quorum (2026-11-28): a forwarded one closed the connection on every quorum.
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
        def refused(message: str) -> Any:
            raise ConfigError(NC, message)

        return self._run(op, refused)[0]
