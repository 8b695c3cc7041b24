"""Log: leader/follower appends, segment roll, reads, truncation, high watermark."""

from __future__ import annotations

import struct

import pytest

from broker_app.storage import (
    CorruptRecordError,
    InvalidRecordError,
    Log,
    LogConfig,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    UnexpectedAppendOffsetError,
)
from broker_app.storage.records import (
    CRC_OFFSET,
    compute_crc,
    iter_batches,
    parse_header,
    stamp_batch,
)

# baseOffset 8, length 4, epoch 4, magic 1, crc 4, attributes 2, lastOffsetDelta 4, baseTs 8
MAX_TIMESTAMP_OFFSET = 35


def offsets(data: bytes) -> list[tuple[int, int]]:
    return [(h.base_offset, h.last_offset) for h, _ in iter_batches(data, allow_partial_tail=False)]


def fill(log: Log, mkbatch, n: int, epoch: int = 0, per: int = 3) -> None:
    for _ in range(n):
        log.append_as_leader(mkbatch(per, value=b"y" * 30), epoch)


def test_leader_append_assigns_offsets_and_stamps_epoch(log, mkbatch):
    info = log.append_as_leader(mkbatch(3), leader_epoch=5)
    assert (info.first_offset, info.last_offset, info.num_records, info.duplicate) == (
        0,
        2,
        3,
        False,
    )
    info = log.append_as_leader(mkbatch(2) + mkbatch(1), leader_epoch=5)  # two batches at once
    assert (info.first_offset, info.last_offset, info.num_records) == (3, 5, 3)
    assert log.log_end_offset == 6 and log.latest_epoch == 5
    data = log.read(0, 1 << 20)
    assert offsets(data) == [(0, 2), (3, 4), (5, 5)]
    assert {h.partition_leader_epoch for h, _ in iter_batches(data, allow_partial_tail=False)} == {
        5
    }
    assert log.leader_epoch_cache.epoch_entries == [(5, 0)]


def test_roll_segments_and_read_across_them(log, mkbatch):
    fill(log, mkbatch, 40)
    segs = log.segments
    assert len(segs) > 3
    assert [s.base_offset for s in segs] == sorted(s.base_offset for s in segs)
    assert all(s.size <= 1024 for s in segs)
    for s, nxt in zip(segs, segs[1:], strict=False):
        assert s.next_offset == nxt.base_offset  # contiguous
    got = []
    pos = 0
    while pos < log.log_end_offset:
        chunk = offsets(log.read(pos, 500))
        assert chunk, f"empty read at {pos}"
        got += chunk
        pos = chunk[-1][1] + 1
    assert got == [(i, i + 2) for i in range(0, 120, 3)]
    assert log.recovery_point >= segs[-2].next_offset  # rolling flushed the old segments


def test_read_bounds(log, mkbatch):
    fill(log, mkbatch, 5)
    assert offsets(log.read(4, 1 << 20, max_offset=9)) == [(3, 5), (6, 8)]
    assert log.read(9, 1 << 20, max_offset=9) == b""
    assert log.read(15, 100) == b""  # at LEO: empty, not an error
    with pytest.raises(OffsetOutOfRangeError, match="offset 16 is out of range"):
        log.read(16, 100)
    log.truncate_fully_and_start_at(100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(99, 100)


def test_invalid_batch_means_nothing_written(log, mkbatch):
    fill(log, mkbatch, 1)
    bad = bytearray(mkbatch(2))
    bad[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC32C mismatch.*in append to topic-0"):
        log.append_as_leader(mkbatch(1) + bytes(bad), 0)
    with pytest.raises(CorruptRecordError, match="truncated batch"):
        log.append_as_leader(mkbatch(1)[:-1], 0)
    with pytest.raises(RecordBatchTooLargeError):
        log.append_as_leader(mkbatch(200, value=b"z" * 50), 0)
    with pytest.raises(InvalidRecordError, match="control"):
        log.append_as_leader(mkbatch(1, control=True, producer_id=1, producer_epoch=0), 0)
    assert log.log_end_offset == 3 and offsets(log.read(0, 1 << 20)) == [(0, 2)]


def test_follower_append_keeps_offsets_and_epochs(log, mkbatch):
    b1 = stamp_batch(mkbatch(2), 0, 1)
    b2 = stamp_batch(mkbatch(2), 2, 3)
    info = log.append_as_follower(b1 + b2 + b2[:10])  # partial tail ignored
    assert (info.first_offset, info.last_offset, info.num_records) == (0, 3, 4)
    assert log.leader_epoch_cache.epoch_entries == [(1, 0), (3, 2)]
    assert log.log_end_offset == 4
    with pytest.raises(UnexpectedAppendOffsetError, match="below the log end offset 4"):
        log.append_as_follower(stamp_batch(mkbatch(1), 3, 3))
    assert log.append_as_follower(b"").first_offset == -1


def test_truncate_to_across_segments(log, mkbatch):
    fill(log, mkbatch, 10, epoch=1)
    fill(log, mkbatch, 10, epoch=2)  # epoch 2 starts at 30
    fill(log, mkbatch, 10, epoch=4)  # epoch 4 starts at 60
    log.update_high_watermark(80)
    assert log.truncate_to(31)  # inside batch 30..32: the whole batch goes
    assert log.log_end_offset == 30
    assert log.leader_epoch_cache.epoch_entries == [(1, 0)]
    assert log.high_watermark == 30 and log.recovery_point <= 30
    assert all(s.base_offset <= 30 for s in log.segments)
    assert not log.truncate_to(30)  # nothing at/above 30 any more
    assert offsets(log.read(27, 1 << 20)) == [(27, 29)]
    fill(log, mkbatch, 1, epoch=5)
    assert log.leader_epoch_cache.epoch_entries == [(1, 0), (5, 30)]


def test_truncate_fully_and_start_at(log, mkbatch):
    fill(log, mkbatch, 3, epoch=1)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (500, 500, 500)
    assert log.leader_epoch_cache.epoch_entries == []
    assert [s.log_path.name for s in log.segments] == ["00000000000000000500.log"]
    info = log.append_as_leader(mkbatch(1), 2)
    assert info.first_offset == 500 and log.leader_epoch_cache.epoch_entries == [(2, 500)]


def test_high_watermark_is_clamped(log, mkbatch):
    fill(log, mkbatch, 2)
    assert log.update_high_watermark(100) == 6
    assert log.update_high_watermark(-5) == 0
    assert log.maybe_increment_high_watermark(3) and not log.maybe_increment_high_watermark(2)
    assert log.high_watermark == 3


def test_list_offsets(log, mkbatch):
    for ts in (1000, 2000, 3000):
        log.append_as_leader(mkbatch(2, timestamp=ts), 7)
    assert log.fetch_offset_by_timestamp(-2) == (-1, 0, 7)
    assert log.fetch_offset_by_timestamp(-1) == (-1, 6, 7)
    assert log.fetch_offset_by_timestamp(1500) == (2000, 2, 7)
    assert log.fetch_offset_by_timestamp(-3).timestamp == 3000
    assert log.fetch_offset_by_timestamp(9999) is None


def test_flush_advances_recovery_point(log_dir, mkbatch):
    log = Log.open(log_dir, LogConfig(flush_every_batch=True))
    try:
        log.append_as_leader(mkbatch(2), 0)
        assert log.recovery_point == 2
    finally:
        log.close()
    log = Log.open(log_dir, LogConfig())
    try:
        log.append_as_leader(mkbatch(2), 0)
        assert log.recovery_point == 0  # reopened without a recovery point: starts at 0
        log.flush(3)
        assert log.recovery_point == 3
        log.flush()
        assert log.recovery_point == 4
    finally:
        log.close()


def test_stored_batches_are_verbatim(log, mkbatch):
    raw = mkbatch(3, compression=4, producer_id=3, producer_epoch=0, base_sequence=0)
    log.append_as_leader(raw, 9)
    stored = log.read(0, 1 << 20)
    assert stored[17:] == raw[17:] and parse_header(stored).partition_leader_epoch == 9


def test_io_error_takes_log_offline(log, mkbatch):
    import os

    from broker_app.storage import KafkaStorageError

    fill(log, mkbatch, 1)
    seg = log.active_segment
    ro = os.open(seg.log_path, os.O_RDONLY)
    os.dup2(ro, seg._fd)  # the segment's fd becomes read-only: the next write fails (EBADF)
    os.close(ro)
    with pytest.raises(KafkaStorageError, match="I/O error in append_as_leader") as exc:
        log.append_as_leader(mkbatch(1), 0)
    assert exc.value.kafka_error_code == 56
    with pytest.raises(KafkaStorageError, match="offline"):
        log.read(0, 100)


def _lying_max_timestamp(batch: bytes, max_ts: int) -> bytes:
    """The batch with its header's maxTimestamp replaced (CRC recomputed): a client's lie."""
    out = bytearray(batch)
    struct.pack_into(">q", out, MAX_TIMESTAMP_OFFSET, max_ts)
    struct.pack_into(">I", out, CRC_OFFSET, compute_crc(out))
    return bytes(out)


def test_max_timestamp_when_the_header_matches_no_record(log, mkbatch):
    # Issue 18: -3 raised StopIteration and closed the connection. Followers copy batches
    # verbatim, so this is how such a header reaches a log even if the leader validates.
    log.append_as_follower(mkbatch(3, timestamp=1000, base_offset=0, epoch=4))
    log.append_as_follower(
        _lying_max_timestamp(mkbatch(2, timestamp=2000, base_offset=3, epoch=4), 5000)
    )
    log.append_as_follower(mkbatch(1, timestamp=1500, base_offset=5, epoch=4))
    # The batch claiming the largest maxTimestamp wins; inside it no record has 5000, so the
    # answer is its first record with the largest real timestamp.
    assert log.fetch_offset_by_timestamp(-3) == (2000, 3, 4)


def test_max_timestamp_is_the_first_record_carrying_it(log, mkbatch):
    log.append_as_leader(mkbatch(2, timestamp=1000), 3)
    log.append_as_leader(mkbatch(3, timestamp=4000), 3)  # offsets 2..4, all at 4000
    log.append_as_leader(mkbatch(1, timestamp=2000), 3)
    assert log.fetch_offset_by_timestamp(-3) == (4000, 2, 3)
