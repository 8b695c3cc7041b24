"""ControllerNet: the seeded in-test Raft network (net.py) whose voters also run a
RaftQuorumController, and helpers that drive it (tests/unit/controller uses them)."""

from __future__ import annotations

import uuid
from typing import Any

from broker_app.controller.config import ControllerConfig
from broker_app.controller.errors import Errors
from broker_app.controller.messages import (
    CreateTopicsRequest,
    HeartbeatRequest,
    NewTopic,
    RegisterBrokerRequest,
)
from broker_app.controller.raft_controller import RaftQuorumController
from broker_app.metadata import MetadataLoader
from tests.unit.raft.net import Node, SimNetwork

BROKER = 10


class ControllerNet(SimNetwork):
    """SimNetwork whose nodes also run a RaftQuorumController, synced after every event."""

    def __init__(self, seed: int = 0, drop_rate: float = 0.0,
                 raft: dict[str, Any] | None = None, **controller_config: Any) -> None:
        """raft: RaftConfig fields of every voter (pre_vote, raft_vote_log_check, ...)."""
        self.controllers: dict[int, RaftQuorumController] = {}
        self.controller_config = controller_config
        super().__init__(voters=3, seed=seed, drop_rate=drop_rate, **(raft or {}))
        for i, node in self.nodes.items():
            self.controllers[i] = self._controller(node)

    def _controller(self, node: Node) -> RaftQuorumController:
        # Deterministic topic ids, distinct per node and incarnation (a restarted controller
        # must not hand out an id it gave before, as uuid4 would not).
        base = (node.node_id * 1000 + node.incarnation) * 1000
        ids = iter(uuid.UUID(int=base + n) for n in range(1, 1000))
        config = ControllerConfig(node_id=node.node_id, **self.controller_config)
        return RaftQuorumController(config, node.client, lambda: next(ids))

    def check(self, node: Node) -> None:
        # The controller is the state machine here (its snapshots are metadata images, which
        # SimNetwork's own toy state machine could not read); the safety checker follows it.
        if self.check_safety:
            self._check_safety(node)
        ctl = self.controllers.get(node.node_id)
        if ctl is not None:
            ctl.sync(self.now)
            node.next_offset = ctl.committed_offset

    def restart(self, node_id: int) -> None:
        super().restart(node_id)
        self.controllers[node_id] = self._controller(self.nodes[node_id])

    def active(self) -> RaftQuorumController:
        assert self.run_until(lambda: any(c.is_active for i, c in self.controllers.items()
                                          if self.nodes[i].alive))
        live = [c for i, c in self.controllers.items() if self.nodes[i].alive and c.is_active]
        return max(live, key=lambda c: c.client.epoch)


def register(ctl: RaftQuorumController, incarnation: str = "inc-1"):
    return ctl.submit(lambda c: c.register_broker(
        RegisterBrokerRequest(BROKER, incarnation, "127.0.0.1", 9092), 0)[0])


def create(ctl: RaftQuorumController, name: str):
    return ctl.submit(lambda c: c.create_topics(
        CreateTopicsRequest([NewTopic(name, 1, 1)]), 0)[0])


def broker_view(ctl: RaftQuorumController) -> MetadataLoader:
    """What a broker fetching __cluster_metadata-0 from this controller would hold."""
    loader = MetadataLoader()
    loader.apply_fetched(ctl.metadata_log.read(0, 1 << 20))
    return loader


def setup_topic(net: ControllerNet, name: str = "t") -> RaftQuorumController:
    ctl = net.active()
    reg = register(ctl)
    assert not reg.done  # appended, not committed yet
    assert net.run_until(lambda: reg.done)
    assert reg.error is None and reg.value.error == Errors.NONE
    hb = ctl.submit(lambda c: c.heartbeat(
        HeartbeatRequest(BROKER, reg.value.broker_epoch, reg.value.broker_epoch + 1), 0)[0])
    assert net.run_until(lambda: hb.done) and not hb.value.is_fenced
    topic = create(ctl, name)
    assert net.run_until(lambda: topic.done)
    assert topic.error is None and topic.value.results[0].error == Errors.NONE
    return ctl
