"""Helpers for driving a QuorumController with explicit clocks (no sockets, no threads)."""

from __future__ import annotations

import itertools
import uuid

import pytest

from broker_app.controller.config import ControllerConfig
from broker_app.controller.messages import (
    CreateTopicsRequest,
    HeartbeatRequest,
    NewTopic,
    RegisterBrokerRequest,
)
from broker_app.controller.quorum_controller import QuorumController
from tests.unit.controller.one_voter import MemoryMetadataLog


class Cluster:
    """A controller plus the bookkeeping a set of brokers would do (epochs, heartbeats)."""

    def __init__(self, config: ControllerConfig | None = None, log=None) -> None:
        self.log = log if log is not None else MemoryMetadataLog()
        ids = itertools.count(1)
        self.controller = QuorumController(
            config or ControllerConfig(), self.log, new_topic_id=lambda: uuid.UUID(int=next(ids))
        )
        self.epochs: dict[int, int] = {}
        self.now = 0

    @property
    def image(self):
        return self.controller.image

    def register(self, broker_id: int, incarnation: str | None = None):
        resp, records = self.controller.register_broker(
            RegisterBrokerRequest(broker_id, incarnation or f"inc-{broker_id}", "127.0.0.1",
                                  9000 + broker_id),
            self.now,
        )  # fmt: skip
        if resp.broker_epoch >= 0:
            self.epochs[broker_id] = resp.broker_epoch
        return resp, records

    def heartbeat(self, broker_id: int, **kw):
        return self.controller.heartbeat(
            HeartbeatRequest(
                broker_id,
                kw.pop("epoch", self.epochs.get(broker_id, -1)),
                kw.pop("offset", self.controller.image.offset),
                **kw,
            ),
            self.now,
        )

    def start_brokers(self, *ids: int) -> None:
        for b in ids:
            self.register(b)
        for b in ids:
            resp, _ = self.heartbeat(b)
            assert not resp.is_fenced, resp

    def heartbeat_all(self, *ids: int) -> None:
        for b in ids:
            self.heartbeat(b)

    def create(self, name: str, partitions: int = 1, rf: int = 3, **configs: str):
        resp, _ = self.controller.create_topics(
            CreateTopicsRequest([NewTopic(name, partitions, rf, configs=dict(configs))]), self.now
        )
        return resp.results[0]

    def part(self, topic: str, p: int = 0):
        reg = self.image.partition(topic, p)
        assert reg is not None
        return reg

    def tick(self, advance_ms: int = 0):
        self.now += advance_ms
        return self.controller.tick(self.now)[1]


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster()
    c.start_brokers(1, 2, 3)
    return c


@pytest.fixture
def cluster_pre_elr() -> Cluster:
    """Three live brokers and a controller without eligible leader replicas (Kafka 3.x)."""
    c = Cluster(ControllerConfig(eligible_leader_replicas=False))
    c.start_brokers(1, 2, 3)
    return c


@pytest.fixture
def make_cluster():
    """Cluster(config=None, log=None), for tests that need their own settings or log."""
    return Cluster
