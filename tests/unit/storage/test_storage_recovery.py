"""Recovery: torn tails and flipped bytes are cut on reopen; LogManager checkpoints."""

from __future__ import annotations

import os

from broker_app.storage import Log, LogConfig, LogManager, TopicPartition
from broker_app.storage.log_manager import CLEAN_SHUTDOWN_FILE
from broker_app.storage.records import iter_batches

CFG = LogConfig(segment_bytes=1024, index_interval_bytes=100)


def offsets(data: bytes) -> list[int]:
    return [h.base_offset for h, _ in iter_batches(data, allow_partial_tail=False)]


def all_offsets(log: Log) -> list[int]:
    return [h.base_offset for h, _ in log.batches()]


def _write(log_dir, mkbatch, epochs=(1, 2, 3), per_epoch=8) -> list[int]:
    log = Log.open(log_dir, CFG)
    for e in epochs:
        for _ in range(per_epoch):
            log.append_as_leader(mkbatch(2, value=b"r" * 30), e)
    bases = all_offsets(log)
    log.close()
    return bases


def test_torn_tail_is_cut_and_everything_before_is_intact(log_dir, mkbatch):
    bases = _write(log_dir, mkbatch)
    last = sorted(log_dir.glob("*.log"))[-1]
    size = last.stat().st_size
    os.truncate(last, size - 5)  # tear the last batch mid-way
    log = Log.open(log_dir, CFG, recovery_point=0)
    try:
        assert log.log_end_offset == bases[-1]  # the torn batch is gone
        assert all_offsets(log) == bases[:-1]
        assert log.active_segment.size == size - len(mkbatch(2, value=b"r" * 30))
        assert log.leader_epoch_cache.epoch_entries == [(1, 0), (2, 16), (3, 32)]
        info = log.append_as_leader(mkbatch(1), 3)  # appends continue at the new LEO
        assert info.first_offset == bases[-1]
    finally:
        log.close()


def test_flipped_byte_truncates_there_and_drops_later_segments(log_dir, mkbatch):
    _write(log_dir, mkbatch)
    segs = sorted(log_dir.glob("*.log"))
    assert len(segs) >= 3
    victim = segs[1]
    data = bytearray(victim.read_bytes())
    # Corrupt the 3rd batch's payload: its CRC no longer matches.
    third = [v for _, v in iter_batches(bytes(data), allow_partial_tail=False)][2]
    pos = sum(h.size for h, _ in list(iter_batches(bytes(data), allow_partial_tail=False))[:2])
    data[pos + len(third) - 1] ^= 0x55
    victim.write_bytes(bytes(data))
    (log_dir / victim.name.replace(".log", ".index")).write_bytes(b"")
    base1 = int(victim.stem)
    log = Log.open(log_dir, CFG, recovery_point=0)
    try:
        kept = all_offsets(log)
        assert kept[-1] == base1 + 2  # the two good batches of segment 1 survive
        assert log.log_end_offset == base1 + 4
        assert [s.base_offset for s in log.segments] == [0, base1]  # later segments deleted
        assert not any(int(p.stem) > base1 for p in log_dir.glob("*.log"))
        assert all(
            e.start_offset < log.log_end_offset for e in log.leader_epoch_cache.epoch_entries
        )
        # the rebuilt index points at batch starts
        for off, pos in log.active_segment.index.entries:
            assert log.active_segment.translate_offset(off).position == pos
    finally:
        log.close()


def test_corruption_below_recovery_point_is_not_rescanned(log_dir, mkbatch):
    _write(log_dir, mkbatch, epochs=(1,), per_epoch=20)
    first = sorted(log_dir.glob("*.log"))[0]
    data = bytearray(first.read_bytes())
    data[-1] ^= 0x55  # flip the last byte of the first (flushed, rolled) segment
    first.write_bytes(bytes(data))
    log = Log.open(log_dir, CFG, recovery_point=40)
    try:
        assert log.log_end_offset == 40  # trusted: Kafka does not rescan below the point
    finally:
        log.close()


def test_log_manager_clean_and_unclean_restart(tmp_path, mkbatch):
    mgr = LogManager.open(tmp_path, CFG)
    a = mgr.get_or_create_log("orders", 0)
    b = mgr.get_or_create_log("my-topic", 3)
    for _ in range(5):
        a.append_as_leader(mkbatch(2), 1)
    b.append_as_leader(mkbatch(1), 0)
    a.update_high_watermark(6)
    b.update_high_watermark(1)
    mgr.shutdown()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    assert (tmp_path / "replication-offset-checkpoint").read_text() == (
        "0\n2\nmy-topic 3 1\norders 0 6\n"
    )
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == (
        "0\n2\nmy-topic 3 1\norders 0 10\n"
    )

    mgr = LogManager.open(tmp_path, CFG)
    assert mgr.had_clean_shutdown and not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    a = mgr.get_log(TopicPartition("orders", 0))
    assert (a.log_end_offset, a.high_watermark, a.recovery_point) == (10, 6, 10)
    assert mgr.read_high_watermarks() == {("orders", 0): 6, ("my-topic", 3): 1}
    assert mgr.checkpointed_high_watermarks == {("orders", 0): 6, ("my-topic", 3): 1}
    a.append_as_leader(mkbatch(2), 1)  # offsets 10..11, never flushed
    a.update_high_watermark(8)
    assert mgr.checkpointed_high_watermarks[("orders", 0)] == 6  # the live HW is not on disk
    mgr.checkpoint_high_watermarks()
    assert mgr.checkpointed_high_watermarks[("orders", 0)] == 8
    # crash: no shutdown, tear the unflushed tail
    seg = a.active_segment.log_path
    for lg in mgr.all_logs().values():
        lg.close()
    os.truncate(seg, seg.stat().st_size - 3)

    mgr = LogManager.open(tmp_path, CFG)
    try:
        assert not mgr.had_clean_shutdown
        a = mgr.get_log(("orders", 0))
        assert a.log_end_offset == 10 and a.high_watermark == 8
        assert mgr.delete_log(("my-topic", 3)) and not (tmp_path / "my-topic-3").exists()
        assert set(mgr.all_logs()) == {("orders", 0)}
    finally:
        mgr.shutdown()


def test_log_manager_rejects_bad_topic_names(tmp_path):
    import pytest

    from broker_app.storage import InvalidTopicError

    mgr = LogManager.open(tmp_path, CFG)
    try:
        for bad in ("", "a b", "../x", "x" * 250, ".."):
            with pytest.raises(InvalidTopicError):
                mgr.get_or_create_log(bad, 0)
        with pytest.raises(InvalidTopicError, match="negative"):
            mgr.get_or_create_log("ok", -1)
        assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == []
    finally:
        mgr.shutdown()


def test_log_manager_leaves_other_dirs_alone(tmp_path):
    (tmp_path / "groups").mkdir()
    (tmp_path / "groups" / "state.json").write_text("{}")
    (tmp_path / "orders-0.0123456789abcdef0123456789abcdef-delete").mkdir()
    mgr = LogManager.open(tmp_path, CFG)
    try:
        assert mgr.all_logs() == {}
        assert (tmp_path / "groups" / "state.json").exists()
        assert not (tmp_path / "orders-0.0123456789abcdef0123456789abcdef-delete").exists()
    finally:
        mgr.shutdown()


def test_clean_shutdown_still_recovers_a_torn_segment(tmp_path, mkbatch):
    mgr = LogManager.open(tmp_path, CFG)
    log = mgr.get_or_create_log("t", 0)
    for _ in range(20):
        log.append_as_leader(mkbatch(2, value=b"q" * 30), 1)
    mgr.shutdown()
    first = sorted((tmp_path / "t-0").glob("*.log"))[0]
    os.truncate(first, first.stat().st_size - 3)  # damage below the recovery point
    mgr = LogManager.open(tmp_path, CFG)
    try:
        log = mgr.get_log(("t", 0))
        assert len(log.segments) == 1  # later segments would follow a hole: deleted
        assert log.log_end_offset == log.segments[0].next_offset < 40
        offs = all_offsets(log)
        assert offs == list(range(0, log.log_end_offset, 2))
    finally:
        mgr.shutdown()


def test_clean_shutdown_marker_carries_the_broker_epoch(tmp_path):
    """KIP-966: the marker holds the epoch the broker had; the next start reads it back and
    removes the marker, so a crash after that start registers with -1."""
    mgr = LogManager.open(tmp_path, CFG)
    assert mgr.previous_broker_epoch == -1  # first start: no marker
    mgr.shutdown(broker_epoch=42)
    mgr = LogManager.open(tmp_path, CFG)
    assert mgr.previous_broker_epoch == 42 and not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    for lg in mgr.all_logs().values():  # crash: no shutdown, no marker
        lg.close()
    mgr = LogManager.open(tmp_path, CFG)
    assert mgr.previous_broker_epoch == -1 and not mgr.had_clean_shutdown
    mgr.shutdown()
    (tmp_path / CLEAN_SHUTDOWN_FILE).write_text("")  # an old, empty marker vouches for nothing
    mgr = LogManager.open(tmp_path, CFG)
    assert mgr.had_clean_shutdown and mgr.previous_broker_epoch == -1
    mgr.shutdown()
