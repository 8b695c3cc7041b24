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
