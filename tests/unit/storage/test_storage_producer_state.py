"""Idempotent producers: duplicates acked with original offsets, gaps and stale epochs refused."""

from __future__ import annotations

import pytest

from broker_app.storage import (
    DuplicateSequenceError,
    InvalidProducerEpochError,
    Log,
    OutOfOrderSequenceError,
)
from broker_app.storage.producer_state import ProducerStateManager
from broker_app.storage.records import INT32_MAX, parse_header


def pb(mkbatch, seq: int, n: int = 2, epoch: int = 0, pid: int = 42) -> bytes:
    return mkbatch(n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_duplicate_of_recent_batch_returns_original_offsets(log, mkbatch):
    for i in range(6):
        log.append_as_leader(pb(mkbatch, 2 * i), 0)  # offsets 2i..2i+1
    leo = log.log_end_offset
    info = log.append_as_leader(pb(mkbatch, 8), 0)  # retry of the 5th batch
    assert info.duplicate and (info.first_offset, info.last_offset) == (8, 9)
    assert log.log_end_offset == leo  # nothing written
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(pb(mkbatch, 0), 0)  # older than the last 5: not a known duplicate


def test_gap_is_out_of_order(log, mkbatch):
    log.append_as_leader(pb(mkbatch, 0), 0)
    with pytest.raises(OutOfOrderSequenceError, match="4 \\(incoming seq\\), 1"):
        log.append_as_leader(pb(mkbatch, 4), 0)
    assert log.log_end_offset == 2


def test_epoch_bump_and_stale_epoch(log, mkbatch):
    log.append_as_leader(pb(mkbatch, 0, epoch=1), 0)
    with pytest.raises(OutOfOrderSequenceError, match="must be 0"):
        log.append_as_leader(pb(mkbatch, 2, epoch=2), 0)
    log.append_as_leader(pb(mkbatch, 0, epoch=2), 0)
    with pytest.raises(InvalidProducerEpochError, match="smaller than the last seen epoch 2"):
        log.append_as_leader(pb(mkbatch, 2, epoch=1), 0)
    assert log.producer_state.last_entry(42).producer_epoch == 2


def test_rejected_batch_in_multi_batch_append_changes_nothing(log, mkbatch):
    log.append_as_leader(pb(mkbatch, 0), 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(pb(mkbatch, 2) + pb(mkbatch, 9), 0)
    assert log.log_end_offset == 2 and log.producer_state.last_entry(42).last_seq == 1
    log.append_as_leader(pb(mkbatch, 2), 0)  # the state was not advanced by the failed append


def test_sequence_wraps(mkbatch):
    psm = ProducerStateManager()
    psm.check_and_update(parse_header(pb(mkbatch, INT32_MAX - 1)), 0, 1)
    psm.check_and_update(parse_header(pb(mkbatch, 0)), 2, 3)  # MAX-1, MAX then 0
    assert psm.last_entry(42).last_seq == 1


def test_state_rebuilt_on_reopen_and_truncation(log_dir, small_config, mkbatch):
    log = Log.open(log_dir, small_config)
    for i in range(4):
        log.append_as_leader(pb(mkbatch, 2 * i), 0)
    log.close()
    log = Log.open(log_dir, small_config)
    try:
        assert log.append_as_leader(pb(mkbatch, 6), 0).duplicate  # known after a rebuild
        log.truncate_to(4)  # batches seq 4.. and 6.. are gone
        assert log.producer_state.last_entry(42).last_seq == 3
        info = log.append_as_leader(pb(mkbatch, 4), 0)
        assert not info.duplicate and info.first_offset == 4
    finally:
        log.close()


def test_follower_records_without_checks(log, mkbatch):
    from broker_app.storage.records import stamp_batch

    log.append_as_follower(stamp_batch(pb(mkbatch, 10), 0, 1))  # a gap is fine on a follower
    assert log.producer_state.last_entry(42).last_seq == 11


def test_manager_raises_duplicate_with_offsets(mkbatch):
    psm = ProducerStateManager()
    psm.check_and_update(parse_header(pb(mkbatch, 0)), 100, 101)
    with pytest.raises(DuplicateSequenceError) as exc:
        psm.check_and_update(parse_header(pb(mkbatch, 0)), 102, 103)
    assert (exc.value.first_offset, exc.value.last_offset, exc.value.kafka_error_code) == (
        100,
        101,
        46,
    )
