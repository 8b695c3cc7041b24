"""harness.group_client: the generation in librdkafka's group metadata bytes, and the commit
modes' own bookkeeping."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as TP

from harness.group_client import GroupConsumerClient, generation_of
from harness.store.history import HistoryWriter


def test_a_consumer_outside_any_group_has_no_generation() -> None:
    # A real librdkafka object (no broker needed: the consumer never joined, generation -1).
    c = Consumer({"group.id": "g", "bootstrap.servers": "127.0.0.1:1"})
    try:
        raw = c.consumer_group_metadata()
    finally:
        c.close()
    assert raw.startswith(b"CGMDv2:")
    assert generation_of(raw) is None


def test_generation_is_read_after_the_magic() -> None:
    raw = b"CGMDv2:" + struct.pack("=i", 7) + b"g\x00\x00\x01"
    assert generation_of(raw) == 7


def test_unknown_bytes_give_none() -> None:
    assert generation_of(b"CGMDv3:\x07\x00\x00\x00") is None
    assert generation_of(b"CGMDv2:\x07") is None
    assert generation_of("CGMDv2:") is None


# --- commit modes (the broker-facing behaviour is tests/integration/cluster/
# test_group_commit_modes.py; here the client's own bookkeeping, with real librdkafka objects
# that never reach a broker)

def _client(tmp_path: Path, commit: str) -> tuple[GroupConsumerClient, HistoryWriter]:
    history = HistoryWriter(tmp_path / "h.jsonl")
    return GroupConsumerClient(1, "127.0.0.1:1", history, ["t"], "g", commit=commit), history


def test_an_unknown_commit_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="commit must be one of sync, async, auto, none"):
        _client(tmp_path, "later")


def test_the_async_outcome_is_taken_only_for_the_awaited_offsets(tmp_path: Path) -> None:
    c, history = _client(tmp_path, "async")
    try:
        c._awaited = [("t", 0, 5)]
        c._on_commit(None, [TP("t", 0, 4)])  # another commit's (a late callback): not ours
        assert c._outcome is None
        c._on_commit(None, [TP("t", 0, 5)])
        assert c._outcome == (None,)
        c._outcome = None
        c._on_commit(KafkaError(KafkaError.REBALANCE_IN_PROGRESS), [TP("t", 0, 5)])
        assert c._outcome == ("REBALANCE_IN_PROGRESS",)
    finally:
        c.close()
        history.close()


def test_nothing_read_means_no_commit_op_in_any_mode(tmp_path: Path) -> None:
    for mode in ("sync", "async", "auto", "none"):
        c, history = _client(tmp_path, mode)
        try:
            assert c.commit() is None
        finally:
            c.close()
            history.close()
