"""The disk seam (storage/fs.py): the machine's file system and the simulated one answer the
same calls the same way; the simulated one also loses what was not fsynced on a power loss,
by the containers' FUSE layer's rule (harness/cluster/diskfs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker_app.storage import build_batch
from broker_app.storage.checkpoints import LeaderEpochCheckpointFile, write_atomically
from broker_app.storage.fs import OS_FS, FileSystem, MemoryFileSystem
from broker_app.storage.log_manager import LogManager
from broker_app.storage.topic_partition import TopicPartition


@pytest.fixture(params=["os", "memory"])
def disk(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[FileSystem, Path]:
    if request.param == "os":
        return OS_FS, tmp_path
    return MemoryFileSystem(), Path("/sim/disk")


def test_both_answer_the_same(disk) -> None:
    fs, root = disk
    fs.mkdirs(root / "a" / "b")
    assert fs.isdir(root / "a") and fs.isdir(root / "a" / "b")
    fd = fs.open(root / "a" / "f")
    assert fs.pwrite(fd, b"hello", 0) == 5
    fs.pwrite(fd, b"XY", 7)  # past the end: the gap reads as zeros
    assert fs.pread(fd, 100, 0) == b"hello\0\0XY" and fs.size(fd) == 9
    fs.truncate(fd, 4)
    assert fs.pread(fd, 100, 0) == b"hell"
    dup = fs.dup(fd)
    fs.close(fd)
    assert fs.pread(dup, 2, 2) == b"ll"
    fs.fsync(dup)
    fs.close(dup)
    assert fs.listdir(root / "a") == ["b", "f"]
    assert fs.read_bytes(root / "a" / "f") == b"hell"
    fs.write_bytes(root / "a" / "g", b"one")
    fs.replace(root / "a" / "g", root / "a" / "f")
    assert fs.read_bytes(root / "a" / "f") == b"one" and not fs.exists(root / "a" / "g")
    fs.fsync_dir(root / "a")
    fs.unlink(root / "a" / "f")
    fs.unlink(root / "a" / "f")  # missing: fine
    with pytest.raises(FileNotFoundError):
        fs.read_bytes(root / "a" / "f")
    with pytest.raises(FileNotFoundError):
        fs.replace(root / "a" / "nothing", root / "a" / "f")
    with pytest.raises(FileNotFoundError):
        fs.open(root / "missing-dir" / "f")
    fs.rmtree(root / "a")
    fs.rmtree(root / "a")
    assert not fs.exists(root / "a") and not fs.exists(root / "a" / "b")


def test_an_unlinked_file_lives_on_in_its_open_descriptors(disk) -> None:
    fs, root = disk
    fs.mkdirs(root)
    fd = fs.open(root / "f")
    fs.pwrite(fd, b"data", 0)
    fs.unlink(root / "f")
    assert fs.pread(fd, 4, 0) == b"data" and "f" not in fs.listdir(root)
    fs.close(fd)


def test_power_loss_keeps_only_what_was_fsynced() -> None:
    fs = MemoryFileSystem()
    root = Path("/sim/disk")
    fs.mkdirs(root)
    fd = fs.open(root / "f")
    fs.pwrite(fd, b"synced", 0)
    fs.fsync(fd)
    fs.pwrite(fd, b"-lost", 6)
    fs.truncate(fd, 3)  # lazy too: undone by the power loss
    fd2 = fs.open(root / "new")
    fs.pwrite(fd2, b"never synced", 0)
    assert fs.power_loss() > 0
    assert fs.read_bytes(root / "f") == b"synced"
    # Directory operations are durable at once (as in the FUSE layer): the file is there, empty.
    assert fs.read_bytes(root / "new") == b""
    with pytest.raises(OSError):
        fs.pread(fd, 1, 0)  # descriptors die with the machine
    fd = fs.open(root / "f")
    fs.pwrite(fd, b"S", 0)
    fs.sync_all()  # writeback
    assert fs.power_loss() == 0 and fs.read_bytes(root / "f") == b"Synced"


def test_checkpoints_are_atomic_across_a_power_loss() -> None:
    fs = MemoryFileSystem()
    root = Path("/sim/disk")
    fs.mkdirs(root)
    cp = LeaderEpochCheckpointFile(root / "leader-epoch-checkpoint", fs)
    cp.write([(0, 0), (3, 10)])
    write_atomically(root / "other", "x\n", fs)
    fs.power_loss()
    assert cp.read() == [(0, 0), (3, 10)]
    assert fs.read_bytes(root / "other") == b"x\n"


def test_log_manager_on_the_simulated_disk_tells_clean_from_unclean() -> None:
    fs = MemoryFileSystem()
    root = Path("/sim/broker-1/data")
    tp = TopicPartition("t", 0)
    mgr = LogManager.open(root, fs=fs)
    log = mgr.get_or_create_log("t", 0)
    log.append_as_leader(build_batch([(None, b"a"), (None, b"b")]), 0)
    mgr.shutdown(broker_epoch=7)
    fs.sync_all()  # the FUSE layer writes the page cache out when the broker exits
    fs.power_loss()
    mgr = LogManager.open(root, fs=fs)
    assert mgr.had_clean_shutdown and mgr.previous_broker_epoch == 7
    log = mgr.get_log(tp)
    assert log is not None and log.log_end_offset == 2
    log.append_as_leader(build_batch([(None, b"c")]), 0)  # not flushed
    fs.power_loss()
    mgr = LogManager.open(root, fs=fs)
    assert not mgr.had_clean_shutdown and mgr.previous_broker_epoch == -1
    assert mgr.get_log(tp).log_end_offset == 2  # type: ignore[union-attr]
