"""Fixtures shared by the request-handler tests: a lone broker in combined mode (its own
one-voter controller in this process, tests/unit/protocol/lone_broker.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker_app.config import BrokerConfig
from tests.unit.protocol.lone_broker import LoneBroker


@pytest.fixture
def broker(tmp_path: Path):
    """A lone broker on a fresh data dir, stopped after the test."""
    b = LoneBroker(BrokerConfig(node_id=1, data_dir=tmp_path / "data", port=9092))
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def broker_pre37(tmp_path: Path):
    """The same broker with Kafka 3.5's min-ISR rules (no strict min ISR, so no cap of
    min.insync.replicas at the replica count: KAFKA-15583 came with 3.7)."""
    from broker_app.replication.behaviour import ReplicationBehaviour

    b = LoneBroker(BrokerConfig(node_id=1, data_dir=tmp_path / "pre37", port=9092,
                                behaviour=ReplicationBehaviour(strict_min_isr=False,
                                                               eligible_leader_replicas=False)))
    try:
        yield b
    finally:
        b.close()
