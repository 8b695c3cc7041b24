"""Fixtures shared by the request-handler tests: one single-node broker's KafkaApis."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker_app.config import BrokerConfig
from broker_app.server.main import build_broker


@pytest.fixture
def apis(tmp_path: Path):
    """KafkaApis of a single-node broker on a fresh data dir, shut down after the test."""
    config = BrokerConfig(node_id=1, data_dir=tmp_path / "data", port=9092)
    apis, log_manager = build_broker(config)
    try:
        yield apis
    finally:
        log_manager.shutdown()


@pytest.fixture
def apis_pre37(tmp_path: Path):
    """The same broker with Kafka 3.5's min-ISR rules (no strict min ISR, so no cap of
    min.insync.replicas at the replica count: KAFKA-15583 came with 3.7)."""
    from broker_app.replication.behaviour import ReplicationBehaviour

    config = BrokerConfig(node_id=1, data_dir=tmp_path / "data", port=9092,
                          behaviour=ReplicationBehaviour(strict_min_isr=False,
                                                         eligible_leader_replicas=False))
    apis, log_manager = build_broker(config)
    try:
        yield apis
    finally:
        log_manager.shutdown()
