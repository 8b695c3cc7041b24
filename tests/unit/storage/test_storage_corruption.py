"""Damage on disk (the `corrupt-file` nemesis, issue 17): found at start-up even after a clean
shutdown, repaired or read around safely, and never served."""

from __future__ import annotations

import logging
import os

import pytest

from broker_app.storage import KafkaStorageError, Log, LogConfig, LogManager, build_batch
from broker_app.storage.records import iter_batches

CFG = LogConfig(segment_bytes=1024, index_interval_bytes=100)
VALUE = b"r" * 30


def _batch_starts(path) -> list[tuple[int, int]]:
    """(position, baseOffset) of every batch in a segment file."""
    out, pos = [], 0
    for h, _ in iter_batches(path.read_bytes(), allow_partial_tail=False):
        out.append((pos, h.base_offset))
        pos += h.size
    return out


def _flip(path, position: int, bit: int = 3) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 1 << bit
    path.write_bytes(bytes(data))


def _fill(mgr: LogManager, batches: int, epochs=(1,)) -> Log:
    log = mgr.get_or_create_log("t", 0)
    per_epoch = batches // len(epochs)
    for e in epochs:
        for _ in range(per_epoch):
            log.append_as_leader(_mk(2), e)
    return log


def _mk(n: int) -> bytes:
    return build_batch([(None, VALUE + str(i).encode()) for i in range(n)], timestamp=1000)


def test_clean_shutdown_still_finds_flipped_bits_in_the_active_segment(tmp_path, caplog):
    mgr = LogManager.open(tmp_path, CFG)
    _fill(mgr, 24)
    mgr.shutdown(broker_epoch=7)
    active = sorted((tmp_path / "t-0").glob("*.log"))[-1]
    starts = _batch_starts(active)
    assert len(starts) >= 3
    pos, victim_offset = starts[2]
    _flip(active, pos + 70)  # inside the third batch's records: its CRC no longer matches
    caplog.set_level(logging.ERROR)
    mgr = LogManager.open(tmp_path, CFG)
    try:
        assert mgr.had_clean_shutdown
        # KIP-966: the marker cannot vouch for records recovery cut; register as unclean
        assert mgr.previous_broker_epoch == -1
        log = mgr.get_log(("t", 0))
        assert log.log_end_offset == victim_offset  # cut at the corrupt batch
        assert log.recovery_point == victim_offset
        assert active.stat().st_size == pos
        text = caplog.text
        assert str(active) in text and f"position {pos}" in text and "CRC32C" in text
        assert log.recovery_problems and str(active) in log.recovery_problems[0]
        # what is left is whole and readable; appends continue at the cut (follower refetch)
        assert log.read(0, 1 << 20)
        assert log.append_as_follower(_refetched(victim_offset)).first_offset == victim_offset
    finally:
        mgr.shutdown()


def _refetched(base_offset: int) -> bytes:
    return build_batch([(None, b"again")], base_offset=base_offset, epoch=1, timestamp=1000)


def test_a_flipped_base_offset_outside_the_crc_is_cut_too(tmp_path, caplog):
    mgr = LogManager.open(tmp_path, CFG)
    _fill(mgr, 24)
    mgr.shutdown()
    active = sorted((tmp_path / "t-0").glob("*.log"))[-1]
    pos, victim_offset = _batch_starts(active)[2]
    _flip(active, pos + 6, bit=4)  # baseOffset += 4096: the CRC does not cover it
    mgr = LogManager.open(tmp_path, CFG)
    try:
        log = mgr.get_log(("t", 0))
        assert log.log_end_offset == victim_offset
        assert f"do not follow offset {victim_offset - 1}" in log.recovery_problems[0]
    finally:
        mgr.shutdown()


def test_a_corrupt_batch_in_a_trusted_segment_is_never_served(tmp_path, caplog):
    """Below the recovery point nothing is rescanned at start-up; the read path checks the CRC
    of what this process has not checked and takes the log offline instead of serving it."""
    d = tmp_path / "t-0"
    log = Log.open(d, CFG)
    for _ in range(30):
        log.append_as_leader(_mk(2), 1)
    log.flush()
    log.close()
    first = sorted(d.glob("*.log"))[0]
    starts = _batch_starts(first)
    pos, victim_offset = starts[1]
    _flip(first, pos + 70)
    log = Log.open(d, CFG, recovery_point=60)
    caplog.set_level(logging.ERROR)
    try:
        assert log.log_end_offset == 60  # trusted at open, as in Kafka
        one = log.read(0, 1)  # the first batch alone is intact and served
        assert [h.base_offset for h, _ in iter_batches(one, allow_partial_tail=False)] == [0]
        with pytest.raises(KafkaStorageError, match=f"baseOffset {victim_offset}"):
            log.read(victim_offset, 1 << 20)
        assert log.offline_reason and str(first) in log.offline_reason
        assert f"refusing to serve offset {victim_offset}" in caplog.text
        with pytest.raises(KafkaStorageError, match="offline"):
            log.read(0, 1)  # offline until a restart recovers it
    finally:
        log.close()


def test_reads_of_appended_batches_are_not_rechecked(log_dir, mkbatch):
    log = Log.open(log_dir, CFG)
    try:
        log.append_as_leader(mkbatch(2), 1)
        seg = log.active_segment
        assert seg.verified_end == seg.size  # validated on append: reads need no CRC pass
        log.read(0, 1 << 20)
    finally:
        log.close()


def test_malformed_leader_epoch_checkpoint_is_rebuilt_from_the_batches(tmp_path, caplog):
    mgr = LogManager.open(tmp_path, CFG)
    _fill(mgr, 24, epochs=(1, 2, 3))
    mgr.shutdown()
    cp = tmp_path / "t-0" / "leader-epoch-checkpoint"
    cp.write_text("0\n2\n1 0\n2 1x\n")
    caplog.set_level(logging.ERROR)
    mgr = LogManager.open(tmp_path, CFG)
    try:
        log = mgr.get_log(("t", 0))
        assert log.leader_epoch_cache.epoch_entries == [(1, 0), (2, 16), (3, 32)]
        assert cp.read_text() == "0\n3\n1 0\n2 16\n3 32\n"
        assert f"{cp}: line 4" in caplog.text
    finally:
        mgr.shutdown()


def test_missing_leader_epoch_checkpoint_beside_records_is_rebuilt(tmp_path, caplog):
    mgr = LogManager.open(tmp_path, CFG)
    _fill(mgr, 24, epochs=(1, 2, 3))
    mgr.shutdown()
    (tmp_path / "t-0" / "leader-epoch-checkpoint").unlink()
    mgr = LogManager.open(tmp_path, CFG)
    try:
        log = mgr.get_log(("t", 0))
        assert log.leader_epoch_cache.epoch_entries == [(1, 0), (2, 16), (3, 32)]
        assert "missing beside records" in caplog.text
    finally:
        mgr.shutdown()


@pytest.mark.parametrize("name", ["replication-offset-checkpoint",
                                  "recovery-point-offset-checkpoint"])  # fmt: skip
def test_malformed_offset_checkpoint_is_read_as_empty(tmp_path, caplog, name):
    mgr = LogManager.open(tmp_path, CFG)
    log = _fill(mgr, 4)
    log.update_high_watermark(6)
    for lg in mgr.all_logs().values():
        lg.flush()
    mgr.checkpoint_high_watermarks()
    mgr.checkpoint_recovery_points()
    for lg in mgr.all_logs().values():  # crash: the recovery points count
        lg.close()
    (tmp_path / name).write_bytes(b"0\n1\nt 0 \xff\n")
    caplog.set_level(logging.ERROR)
    mgr = LogManager.open(tmp_path, CFG)
    try:
        log = mgr.get_log(("t", 0))
        assert log.log_end_offset == 8  # recovered from 0 if need be: nothing lost
        expected_hw = 0 if name == "replication-offset-checkpoint" else 6
        assert log.high_watermark == expected_hw
        assert f"{tmp_path / name}" in caplog.text and "read as empty" in caplog.text
    finally:
        mgr.shutdown()


def test_index_with_a_cut_tail_is_rebuilt_and_logged(tmp_path, caplog):
    mgr = LogManager.open(tmp_path, CFG)
    _fill(mgr, 24)
    mgr.shutdown(broker_epoch=7)
    first_index = sorted((tmp_path / "t-0").glob("*.index"))[0]
    assert first_index.stat().st_size >= 8
    os.truncate(first_index, first_index.stat().st_size - 3)  # not whole entries any more
    caplog.set_level(logging.ERROR)
    mgr = LogManager.open(tmp_path, CFG)
    try:
        log = mgr.get_log(("t", 0))
        assert log.log_end_offset == 48
        assert mgr.previous_broker_epoch == 7  # no record was lost: still a clean restart
        assert first_index.stat().st_size % 8 == 0
        assert "rebuilt the index" in caplog.text and str(first_index) in caplog.text
    finally:
        mgr.shutdown()
