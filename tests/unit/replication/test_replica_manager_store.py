"""ReplicaManager over LogManager on a simulated disk with a hand-moved clock: no files, no
wall time.

Shows the storage seam end to end: logs come from the store, the HW checkpoint goes through it,
and a simulated power loss keeps exactly what was flushed and checkpointed.
"""

from __future__ import annotations

from pathlib import Path

from broker_app.replication.replica_manager import ACKS_ALL, ACKS_LEADER, ReplicaManager
from broker_app.storage.fs import MemoryFileSystem
from broker_app.storage.log_manager import LogManager, batches_not_synced
from broker_app.storage.records import build_batch

ROOT = Path("/sim/broker-1/data")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def batch(value: str) -> bytes:
    return build_batch([(None, value.encode())], timestamp=0)


def test_replica_manager_runs_on_memory_store_and_restarts_from_checkpoints() -> None:
    disk = MemoryFileSystem()
    clock = Clock()
    rm = ReplicaManager(1, LogManager.open(ROOT, fs=disk), clock=clock)
    rm.host_single_node("t", 0, 1)
    answers: list[dict] = []
    assert rm.append_records(ACKS_ALL, {("t", 0): batch("a")}, 500, answers.append) is None
    assert answers and answers[0][("t", 0)].base_offset == 0  # single node: HW = LEO at once
    rm.log_manager.flush_all()
    rm.log_manager.checkpoint_high_watermarks()
    rm.append_records(ACKS_LEADER, {("t", 0): batch("b")})  # in the page cache only
    log = rm.get_partition("t", 0).log
    assert (log.log_end_offset, log.high_watermark) == (2, 2)

    assert batches_not_synced(disk, ROOT) == {("t", 0): 1}
    disk.power_loss()
    rm2 = ReplicaManager(1, LogManager.open(ROOT, fs=disk), clock=clock)
    assert rm2.log_manager.had_clean_shutdown is False
    p = rm2.host_single_node("t", 0, 1)
    assert (p.log.log_end_offset, p.log.high_watermark) == (1, 1)
    assert p.log.epoch_entries == [(0, 0)]

    rm2.log_manager.shutdown()
    rm3 = ReplicaManager(1, LogManager.open(ROOT, fs=disk), clock=clock)
    assert rm3.log_manager.had_clean_shutdown is True


def test_acks_all_expiry_follows_the_given_clock() -> None:
    clock = Clock()
    rm = ReplicaManager(1, LogManager.open(ROOT, fs=MemoryFileSystem()), clock=clock)
    rm.apply_partition("t", 0, leader=1, leader_epoch=0, isr=(1, 2), replicas=(1, 2),
                       partition_epoch=0, min_isr=1)  # fmt: skip
    answers: list[dict] = []
    rm.append_records(ACKS_ALL, {("t", 0): batch("a")}, 500, answers.append)
    clock.now += 499
    rm.tick()
    assert answers == []  # follower 2 has not fetched: the HW waits
    clock.now += 1
    rm.tick()
    assert [r.error_code for r in answers[0].values()] == [7]  # REQUEST_TIMED_OUT
