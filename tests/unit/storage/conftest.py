"""Fixtures for storage tests: temp log dirs and small batch helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker_app.storage import Log, LogConfig, build_batch


def batch(n: int = 1, value: bytes = b"v", **kw) -> bytes:
    """A batch of `n` records with distinct values value0..value{n-1}."""
    kw.setdefault("timestamp", 1000)
    return build_batch([(None, value + str(i).encode()) for i in range(n)], **kw)


@pytest.fixture
def mkbatch():
    return batch


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "topic-0"


@pytest.fixture
def small_config() -> LogConfig:
    # Small segments and index interval so rolls and index entries happen in tests.
    return LogConfig(segment_bytes=1024, index_interval_bytes=100, max_batch_bytes=4096)


@pytest.fixture
def log(log_dir: Path, small_config: LogConfig):
    lg = Log.open(log_dir, small_config)
    try:
        yield lg
    finally:
        lg.close()
