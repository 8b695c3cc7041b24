"""Checkpoint files: Kafka's exact text format, atomic writes, clear errors."""

from __future__ import annotations

import pytest

from broker_app.storage.checkpoints import LeaderEpochCheckpointFile, OffsetCheckpointFile
from broker_app.storage.errors import CheckpointError
from broker_app.storage.topic_partition import TopicPartition


def test_offset_checkpoint_exact_text(tmp_path):
    f = OffsetCheckpointFile(tmp_path / "replication-offset-checkpoint")
    f.write({TopicPartition("orders", 1): 42, TopicPartition("my-topic", 0): 7})
    assert f.path.read_text() == "0\n2\nmy-topic 0 7\norders 1 42\n"
    assert f.read() == {("my-topic", 0): 7, ("orders", 1): 42}
    assert not list(tmp_path.glob("*.tmp"))


def test_epoch_checkpoint_exact_text(tmp_path):
    f = LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")
    assert f.read() == []
    f.write([(0, 0), (3, 120)])
    assert f.path.read_text() == "0\n2\n0 0\n3 120\n"
    assert f.read() == [(0, 0), (3, 120)]


def test_empty_checkpoint(tmp_path):
    f = OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint")
    f.write({})
    assert f.path.read_text() == "0\n0\n"
    assert f.read() == {}


@pytest.mark.parametrize(
    "text, message",
    [
        ("1\n0\n", "line 1: unsupported version 1"),
        ("0\nx\n", "line 2: count 'x' is not an integer"),
        ("0\n2\nt 0 1\n", "line 2: expected 2 entries but found 1"),
        ("0\n1\nt 0\n", "line 3: expected 'topic partition offset'"),
        ("0\n1\nt zero 1\n", "line 3: partition 'zero' is not an integer"),
        ("0\n", "line 2: missing version/count header"),
    ],
)
def test_malformed_offset_checkpoint_names_file_and_line(tmp_path, text, message):
    path = tmp_path / "replication-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(CheckpointError, match=message) as exc:
        OffsetCheckpointFile(path).read()
    assert str(path) in str(exc.value)


def test_malformed_epoch_checkpoint(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text("0\n1\n3 abc\n")
    with pytest.raises(CheckpointError, match="line 3: startOffset 'abc'"):
        LeaderEpochCheckpointFile(path).read()
