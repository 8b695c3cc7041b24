"""One contract for the ReplicaLog: the Log on the machine's disk and on the simulated disk of
storage/fs.py (what the simulator runs) pass the same tests.

`store.reopen()` is a process restart (the page cache survives): both keep every append.
On the simulated disk a power loss (MemoryFileSystem.power_loss) loses unflushed appends and
keeps flushed ones: the last tests. A truncation, as on a real disk and in the containers'
FUSE layer, is durable only once fsynced, so a power loss can bring truncated batches back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from broker_app.storage import (
    DuplicateSequenceError,
    InvalidRecordError,
    Log,
    LogConfig,
    OffsetOutOfRangeError,
    UnexpectedAppendOffsetError,
)
from broker_app.storage.fs import MemoryFileSystem
from broker_app.storage.records import iter_batches
from broker_app.storage.replica_log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    ReplicaLog,
)
from broker_app.storage.retention import retention_start_offset

CFG = LogConfig(segment_bytes=1024, index_interval_bytes=100, max_batch_bytes=4096)


class FileStore:
    def __init__(self, root: Path, fs=None) -> None:
        self.dir = root / "t-0"
        self.fs = fs
        self.log: Log = self._open(0)

    def _open(self, recovery_point: int) -> Log:
        if self.fs is None:
            return Log.open(self.dir, CFG, recovery_point)
        return Log.open(self.dir, CFG, recovery_point, fs=self.fs)

    def reopen(self) -> ReplicaLog:
        """Process restart without a clean shutdown: recover from the last recovery point."""
        rp = self.log.recovery_point
        self.log.close()
        self.log = self._open(rp)
        return self.log


@pytest.fixture(params=["file", "file-on-memory-fs"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "file":
        s = FileStore(tmp_path)
    else:
        s = FileStore(Path("/sim/broker-1"), MemoryFileSystem())
    try:
        yield s
    finally:
        s.log.close()


def offsets(data: bytes) -> list[tuple[int, int]]:
    return [(h.base_offset, h.last_offset) for h, _ in iter_batches(data, allow_partial_tail=False)]


def read_all(log: ReplicaLog, start: int = 0) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    pos = start
    while pos < log.log_end_offset:
        chunk = offsets(log.read(pos, 1 << 20))
        assert chunk, f"empty read at {pos}"
        out += chunk
        pos = chunk[-1][1] + 1
    return out


def test_both_implement_every_member_of_the_protocols(store, tmp_path) -> None:
    from broker_app.storage.log_manager import LogManager
    from broker_app.storage.replica_log import LogStore

    assert isinstance(store.log, ReplicaLog)
    assert isinstance(LogManager(tmp_path / "x"), LogStore)
    assert isinstance(LogManager(Path("/sim/x"), fs=MemoryFileSystem()), LogStore)


def test_leader_append_assigns_offsets_epochs_and_reads_whole_batches(store, mkbatch) -> None:
    log: ReplicaLog = store.log
    assert (log.log_start_offset, log.log_end_offset, log.latest_epoch) == (0, 0, None)
    info = log.append_as_leader(mkbatch(3), 2)
    assert (info.first_offset, info.last_offset, info.num_records) == (0, 2, 3)
    log.append_as_leader(mkbatch(2) + mkbatch(1), 2)
    log.append_as_leader(mkbatch(1), 4)
    assert log.log_end_offset == 7
    assert log.latest_epoch == 4
    assert log.epoch_entries == [(2, 0), (4, 6)]
    assert read_all(log) == [(0, 2), (3, 4), (5, 5), (6, 6)]
    # A start inside a batch returns that whole batch; max_offset excludes batches ending at/after.
    assert offsets(log.read(4, 1 << 20))[0] == (3, 4)
    assert offsets(log.read(0, 1 << 20, max_offset=5)) == [(0, 2), (3, 4)]
    assert log.read(0, 1 << 20, max_offset=2) == b""
    # min_one_batch: a tiny budget still yields the first batch, and only it.
    assert offsets(log.read(0, 1)) == [(0, 2)]
    assert log.read(0, 1, min_one_batch=False) == b""
    assert log.read(7, 100) == b""
    with pytest.raises(OffsetOutOfRangeError, match="out of range"):
        log.read(8, 100)


def test_epoch_end_offsets(store, mkbatch) -> None:
    log = store.log
    log.append_as_leader(mkbatch(2), 1)
    log.append_as_leader(mkbatch(2), 3)
    log.assign_epoch(5, log.log_end_offset)  # a new leader stamps its epoch at the LEO
    assert log.end_offset_for_epoch(1) == (1, 2)
    assert log.end_offset_for_epoch(2) == (1, 2)  # unknown epoch: floor epoch, next start
    assert log.end_offset_for_epoch(3) == (3, 4)
    assert log.end_offset_for_epoch(5) == (5, 4)  # latest epoch ends at the LEO
    assert log.end_offset_for_epoch(9) == (-1, -1)
    assert log.end_offset_for_epoch(-1) == (-1, -1)


def test_high_watermark_is_clamped_and_only_incremented_forward(store, mkbatch) -> None:
    log = store.log
    log.append_as_leader(mkbatch(5), 0)
    assert log.update_high_watermark(99) == 5
    assert log.update_high_watermark(2) == 2
    assert log.maybe_increment_high_watermark(1) is False and log.high_watermark == 2
    assert log.maybe_increment_high_watermark(4) is True and log.high_watermark == 4


def test_follower_append_keeps_offsets_and_epochs(store, mkbatch) -> None:
    log = store.log
    info = log.append_as_follower(mkbatch(2, base_offset=0, epoch=3) + mkbatch(1, base_offset=2,
                                                                               epoch=4))
    assert (info.first_offset, info.last_offset) == (0, 2)
    assert log.epoch_entries == [(3, 0), (4, 2)]
    with pytest.raises(UnexpectedAppendOffsetError, match="below the log end offset 3"):
        log.append_as_follower(mkbatch(1, base_offset=1, epoch=4))
    # A trailing partial batch is ignored; nothing whole means nothing appended.
    whole = mkbatch(1, base_offset=3, epoch=4)
    assert log.append_as_follower(whole[: len(whole) - 3]).first_offset == -1
    assert log.log_end_offset == 3


def test_invalid_append_writes_nothing(store, mkbatch) -> None:
    log = store.log
    log.append_as_leader(mkbatch(1), 0)
    with pytest.raises(InvalidRecordError, match="no record batch"):
        log.append_as_leader(b"", 0)
    assert log.log_end_offset == 1


def test_idempotent_duplicate_returns_original_offsets(store, mkbatch) -> None:
    log = store.log
    b = mkbatch(2, producer_id=7, producer_epoch=0, base_sequence=0)
    first = log.append_as_leader(b, 0)
    again = log.append_as_leader(b, 0)
    assert again.duplicate and (again.first_offset, again.last_offset) == (0, 1)
    assert log.log_end_offset == 2 and first.duplicate is False
    with pytest.raises(DuplicateSequenceError):
        log.append_as_leader(b + mkbatch(1, producer_id=7, producer_epoch=0, base_sequence=2), 0)


def test_truncate_to_drops_the_whole_batch_and_later_epochs(store, mkbatch) -> None:
    log = store.log
    for epoch in (1, 1, 2, 3):
        log.append_as_leader(mkbatch(2), epoch)
    log.update_high_watermark(8)
    assert log.truncate_to(8) is False
    assert log.truncate_to(5) is True  # offset 5 sits in batch [4, 5]: it goes whole
    assert log.log_end_offset == 4
    assert log.epoch_entries == [(1, 0)]
    assert log.high_watermark == 4
    assert log.recovery_point <= 4
    log.append_as_leader(mkbatch(1), 4)
    assert read_all(log) == [(0, 1), (2, 3), (4, 4)]


def test_truncate_at_the_log_end_drops_epoch_entries_starting_there(store, mkbatch) -> None:
    """KAFKA-10706: a leader stamps its epoch at the log end and may write nothing in it;
    a truncation to (or past) the log end cuts no record but drops that entry."""
    log = store.log
    log.append_as_leader(mkbatch(2), 1)
    log.leader_epoch_cache.assign(3, log.log_end_offset)
    assert log.epoch_entries == [(1, 0), (3, 2)]
    assert log.truncate_to(5) is False
    assert log.epoch_entries == [(1, 0)]
    assert log.log_end_offset == 2
    assert read_all(log) == [(0, 1)]


def test_truncate_fully_and_start_at(store, mkbatch) -> None:
    log = store.log
    log.append_as_leader(mkbatch(3), 1)
    log.truncate_fully_and_start_at(10)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (10, 10, 10)
    assert log.epoch_entries == [] and log.latest_epoch is None
    log.append_as_follower(mkbatch(2, base_offset=10, epoch=2))
    assert read_all(log, 10) == [(10, 11)]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(5, 100)


def test_list_offsets_by_timestamp(store, mkbatch) -> None:
    log = store.log
    log.append_as_leader(mkbatch(2, timestamp=100), 1)
    log.append_as_leader(mkbatch(2, timestamp=300), 2)
    log.append_as_leader(mkbatch(1, timestamp=200), 2)
    assert tuple(log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP)) == (-1, 0, 1)
    assert tuple(log.fetch_offset_by_timestamp(LATEST_TIMESTAMP)) == (-1, 5, 2)
    assert log.fetch_offset_by_timestamp(MAX_TIMESTAMP).timestamp == 300
    assert log.fetch_offset_by_timestamp(250).offset == 2
    assert log.fetch_offset_by_timestamp(999) is None


def test_flush_advances_the_recovery_point(store, mkbatch) -> None:
    log = store.log
    log.append_as_leader(mkbatch(2), 0)
    log.append_as_leader(mkbatch(2), 0)
    assert log.recovery_point == 0
    log.flush(2)
    assert log.recovery_point >= 2
    log.flush()
    assert log.recovery_point == 4


def test_restart_keeps_every_append_and_cuts_epochs_beyond_the_leo(store, mkbatch) -> None:
    log = store.log
    log.append_as_leader(mkbatch(2), 1)
    log.append_as_leader(mkbatch(2), 2)
    log.assign_epoch(3, 4)  # a new leader's epoch, then the process dies before any append
    log.flush(2)
    log = store.reopen()
    assert read_all(log) == [(0, 1), (2, 3)]
    # As Kafka's truncateFromEnd on load: an epoch starting at (or beyond) the LEO goes.
    assert log.epoch_entries == [(1, 0), (2, 2)]
    log.truncate_to(2)
    log = store.reopen()
    assert log.epoch_entries == [(1, 0)] and log.log_end_offset == 2
    # Producer state is rebuilt: a retried idempotent batch is still recognised.
    b = mkbatch(1, producer_id=9, producer_epoch=0, base_sequence=0)
    log.append_as_leader(b, 1)
    log = store.reopen()
    assert log.append_as_leader(b, 1).duplicate


# --- the file Log on the simulated disk: the same page-cache rule -----------------------------

ROOT = Path("/sim/broker-1/t-0")


def test_file_log_power_loss_loses_unflushed_appends_and_keeps_flushed_ones(mkbatch) -> None:
    fs = MemoryFileSystem()
    log = Log.open(ROOT, CFG, fs=fs)
    log.append_as_leader(mkbatch(2), 1)
    log.append_as_leader(mkbatch(2), 1)
    log.flush()
    log.append_as_leader(mkbatch(2), 2)  # epoch 2 starts at 4, checkpointed at once
    log.append_as_leader(mkbatch(2), 2)
    assert fs.power_loss() > 0
    log = Log.open(ROOT, CFG, 4, fs=fs)
    assert read_all(log) == [(0, 1), (2, 3)]
    assert log.recovery_point == 4
    # The epoch checkpoint survived; reopening cut it back to the surviving LEO.
    assert log.epoch_entries == [(1, 0)]
    assert log.high_watermark == 0


def test_file_log_truncation_is_undone_by_a_power_loss_until_fsynced(mkbatch) -> None:
    fs = MemoryFileSystem()
    log = Log.open(ROOT, CFG, fs=fs)
    for _ in range(4):
        log.append_as_leader(mkbatch(2), 0)
    log.flush()
    log.truncate_to(2)
    log.append_as_leader(mkbatch(1), 0)
    fs.power_loss()
    # The segment's last fsync held all four batches: they are back (recovered from 0).
    assert read_all(Log.open(ROOT, CFG, 0, fs=fs)) == [(0, 1), (2, 3), (4, 5), (6, 7)]
    log = Log.open(ROOT, CFG, fs=fs)
    log.truncate_to(2)
    log.flush()  # nothing above the recovery point: the truncation is not synced by this
    log.append_as_leader(mkbatch(1), 0)
    log.flush()  # the segment's fsync makes the truncation and the new batch durable
    fs.power_loss()
    assert read_all(Log.open(ROOT, CFG, 0, fs=fs)) == [(0, 1), (2, 2)]


def test_file_log_flush_every_batch_survives_power_loss(mkbatch) -> None:
    fs = MemoryFileSystem()
    cfg = LogConfig(flush_every_batch=True)
    log = Log.open(ROOT, cfg, fs=fs)
    log.append_as_leader(mkbatch(2), 0)
    log.append_as_follower(mkbatch(1, base_offset=2, epoch=0))
    assert fs.power_loss() == 0
    assert read_all(Log.open(ROOT, cfg, fs=fs)) == [(0, 1), (2, 2)]


def test_delete_records_moves_the_log_start_up_to_the_hw_and_survives_restart(
    store, mkbatch
) -> None:
    log = store.log
    for _ in range(10):
        log.append_as_leader(mkbatch(5), 1)
    log.update_high_watermark(30)
    assert log.maybe_increment_log_start_offset(12) is True
    assert log.log_start_offset == 12
    assert log.maybe_increment_log_start_offset(7) is False  # never backwards
    with pytest.raises(OffsetOutOfRangeError):
        log.read(11, 1 << 20)
    assert offsets(log.read(12, 1 << 20))[0] == (10, 14)  # the batch holding 12, whole
    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP).offset == 12
    assert log.maybe_increment_log_start_offset(99) is True  # capped at the HW
    assert log.log_start_offset == 30 and log.log_end_offset == 50
    log = store.reopen()
    assert log.log_start_offset == 30 and read_all(log, 30)[0] == (30, 34)


def test_both_logs_apply_retention_below_the_hw(store, mkbatch) -> None:
    log = store.log
    for i in range(20):
        log.append_as_leader(mkbatch(5, timestamp=1_000 + 100 * i), 1)
    log.update_high_watermark(60)
    start = retention_start_offset(log.retention_units(), log.size, 800, -1, now_ms=3_000)
    assert start is not None and 0 < start
    log.maybe_increment_log_start_offset(start)
    # every record younger than 800 ms below the HW survived; the start never passes the HW
    assert 0 < log.log_start_offset <= min(60, 5 * 12)
    size = log.size
    start = retention_start_offset(log.retention_units(), size, -1, 0, now_ms=0)
    log.maybe_increment_log_start_offset(start)
    assert log.log_start_offset == 60 and log.log_end_offset == 100
