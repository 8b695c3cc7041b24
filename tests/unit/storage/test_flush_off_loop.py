"""fsyncs off the event loop: FlushJob ordering in the Log, and LogFlusher keeping the loop free.

The stall test blocks the flusher's one worker thread (as a stalled fsync would) and checks that
the event loop keeps running other tasks while a flush and a HW checkpoint wait behind it, and
that neither the recovery point nor the published HW checkpoint moves before the disk answers.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from broker_app.server.log_flusher import LogFlusher
from broker_app.storage import KafkaStorageError, LogConfig
from broker_app.storage.fs import MemoryFileSystem
from broker_app.storage.log import Log
from broker_app.storage.log_manager import LogManager

CFG = LogConfig(segment_bytes=1024, index_interval_bytes=100, max_batch_bytes=4096)


def test_recovery_point_moves_only_when_the_job_completes(tmp_path: Path, mkbatch) -> None:
    log = Log.open(tmp_path / "t-0", CFG)
    log.append_as_leader(mkbatch(3), 0)
    job = log.begin_flush()
    assert job is not None and job.target == 3
    log.append_as_leader(mkbatch(2), 0)  # appended after begin: not covered by this job
    worker = threading.Thread(target=job.run)
    worker.start()
    worker.join(timeout=10)
    assert log.recovery_point == 0
    log.complete_flush(job)
    assert log.recovery_point == 3
    log.close()


def test_truncation_in_between_keeps_the_recovery_point(tmp_path: Path, mkbatch) -> None:
    log = Log.open(tmp_path / "t-0", CFG)
    for _ in range(30):  # several segments, so truncation deletes some of the dup'd files
        log.append_as_leader(mkbatch(2, value=b"x" * 40), 0)
    assert len(log.segments) > 2
    job = log.begin_flush()
    assert job is not None
    log.truncate_to(4)
    log.append_as_leader(mkbatch(30), 1)  # new data above 4 that this job never synced
    job.run()  # the deleted segments' descriptors are duplicates: still valid
    assert job.error is None
    log.complete_flush(job)
    assert job.target == 60
    assert log.recovery_point == 4  # what truncation left; the job's 60 is not this log any more
    log.close()


def test_a_failed_fsync_takes_the_log_offline(tmp_path: Path, mkbatch) -> None:
    log = Log.open(tmp_path / "t-0", CFG)
    log.append_as_leader(mkbatch(1), 0)
    job = log.begin_flush()
    assert job is not None
    job.fds.append(999_999)  # not an open descriptor: fsync fails with EBADF
    job.run()
    with pytest.raises(KafkaStorageError, match="flush"):
        log.complete_flush(job)
    with pytest.raises(KafkaStorageError, match="offline"):
        log.append_as_leader(mkbatch(1), 0)
    log.close()


def test_deferred_roll_flush_is_owed_not_done(tmp_path: Path, mkbatch) -> None:
    cfg = LogConfig(segment_bytes=1024, index_interval_bytes=100, defer_roll_flush=True)
    log = Log.open(tmp_path / "t-0", cfg)
    for _ in range(30):
        log.append_as_leader(mkbatch(2, value=b"x" * 40), 0)
    assert len(log.segments) > 2
    assert log.recovery_point == 0 and log.flush_wanted == log.segments[-1].base_offset
    log.flush(log.flush_wanted)
    assert log.recovery_point >= log.segments[-2].next_offset and log.flush_wanted == 0
    log.close()


def test_the_fsync_makes_data_durable_and_completion_moves_the_recovery_point(mkbatch) -> None:
    fs = MemoryFileSystem()  # a simulated disk: a power loss keeps only what was fsynced
    root = Path("/sim/broker-1/data/t-0")
    log = Log.open(root, CFG, fs=fs)
    log.append_as_leader(mkbatch(2), 0)
    job = log.begin_flush()
    assert job is not None
    fs.power_loss()  # before the job ran: nothing was synced
    log = Log.open(root, CFG, fs=fs)
    assert log.log_end_offset == 0
    log.append_as_leader(mkbatch(2), 0)
    job = log.begin_flush()
    assert job is not None
    job.run()
    assert log.recovery_point == 0  # the core counts it durable only at completion
    log.complete_flush(job)
    assert log.recovery_point == 2
    fs.power_loss()
    assert Log.open(root, CFG, 2, fs=fs).log_end_offset == 2


def test_a_stalled_flush_does_not_stall_the_event_loop(tmp_path: Path, mkbatch) -> None:
    store = LogManager.open(tmp_path, CFG)
    log = store.get_or_create_log("t", 0)
    log.append_as_leader(mkbatch(3), 0)
    log.update_high_watermark(3)
    flusher = LogFlusher(store)
    stall = threading.Event()
    # Occupy the single worker: every job queued behind this waits, like behind a stuck fsync.
    flusher._executor.submit(stall.wait, 30)

    async def scenario() -> None:
        flush = asyncio.create_task(flusher.flush_logs(all_logs=True))
        checkpoint = asyncio.create_task(flusher.checkpoint_high_watermarks())
        ticks = 0
        for _ in range(20):  # a heartbeat-like task keeps running meanwhile
            await asyncio.sleep(0.005)
            ticks += 1
        assert ticks == 20 and not flush.done() and not checkpoint.done()
        assert log.recovery_point == 0
        assert store.checkpointed_high_watermarks == {}
        stall.set()
        assert await asyncio.wait_for(flush, 10) == 1
        await asyncio.wait_for(checkpoint, 10)
        assert log.recovery_point == 3
        assert store.checkpointed_high_watermarks == {("t", 0): 3}
        assert store.read_high_watermarks() == {("t", 0): 3}

    try:
        asyncio.run(scenario())
    finally:
        stall.set()
        flusher.close()
        store.shutdown()
