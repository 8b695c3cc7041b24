"""The ReplicatedLog contract on both implementations (memory, file): offsets, epochs,
flush, truncation, snapshots; the file log's recovery; the quorum voters config."""

import pytest

from broker_app.raft import MemoryReplicatedLog, OffsetAndEpoch, RaftConfig, parse_quorum_voters
from broker_app.raft.file_log import FileReplicatedLog
from broker_app.raft.log import UNKNOWN, log_up_to_date


@pytest.fixture(params=["memory", "file"])
def new_log(request, tmp_path):
    made = []

    def make(name: str = "a"):
        log = MemoryReplicatedLog() if request.param == "memory" \
            else FileReplicatedLog(tmp_path / name)
        made.append(log)
        return log
    yield make
    for log in made:
        if hasattr(log, "close"):
            log.close()


def three_epochs(new_log):
    log = new_log()
    log.append_as_leader([b"a", b"b"], 1)  # 0, 1
    log.append_as_leader([b"c"], 3)  # 2
    log.append_as_leader([b"d", b"e"], 5)  # 3, 4
    return log


def test_offsets_epochs_and_flush(new_log):
    log = three_epochs(new_log)
    assert (log.start_offset, log.end_offset, log.last_fetched_epoch) == (0, 5, 5)
    assert log.flushed_end_offset == 0  # appended is not durable
    log.flush()
    assert log.flushed_end_offset == 5
    assert [(b.base_offset, b.epoch, b.records) for b in log.read(3, 10)] == [
        (3, 5, (b"d", b"e"))]
    assert [b.records for b in log.read(4, 10)] == [(b"e",)]  # from inside a batch


def test_memory_log_crash_loses_the_unflushed_tail():
    log = MemoryReplicatedLog()
    log.append_as_leader([b"a"], 1)
    log.flush()
    log.append_as_leader([b"f"], 1)
    log.lose_unflushed()  # a crash
    assert log.end_offset == 1


def test_end_offset_for_epoch_finds_the_largest_epoch_not_above(new_log):
    log = three_epochs(new_log)
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)  # nothing yet: empty log epoch
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 1)  # epoch 2 wrote nothing
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(3, 3)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(5, 5)


def test_truncate_inside_a_batch_and_refuse_old_epochs(new_log):
    log = three_epochs(new_log)
    log.flush()
    log.truncate_to(4)
    assert [b.records for b in log.read(0, 10)] == [(b"a", b"b"), (b"c",), (b"d",)]
    assert log.flushed_end_offset == 4
    with pytest.raises(ValueError):
        log.append_as_leader([b"x"], 4)  # epochs never go back


def test_snapshot_moves_log_start_and_keeps_the_epoch(new_log):
    log = three_epochs(new_log)
    snap = log.create_snapshot(3, b"state")
    assert snap.snapshot_id == OffsetAndEpoch(3, 3)
    assert log.start_offset == 3 and log.end_offset == 5
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(3, 3)  # the snapshot's epoch
    assert log.end_offset_for_epoch(1) == UNKNOWN  # inside the snapshot
    with pytest.raises(ValueError):
        log.read(2, 1)
    assert [b.records for b in log.read(3, 10)] == [(b"d", b"e")]
    other = new_log("b")
    other.append_as_leader([b"zz"], 2)
    other.load_snapshot(snap)
    assert (other.start_offset, other.end_offset, other.last_fetched_epoch) == (3, 3, 3)


def test_log_up_to_date_is_last_epoch_then_offset():
    assert log_up_to_date(OffsetAndEpoch(1, 3), OffsetAndEpoch(9, 2))
    assert not log_up_to_date(OffsetAndEpoch(9, 2), OffsetAndEpoch(1, 3))
    assert log_up_to_date(OffsetAndEpoch(5, 3), OffsetAndEpoch(5, 3))
    assert not log_up_to_date(OffsetAndEpoch(4, 3), OffsetAndEpoch(5, 3))


def test_parse_quorum_voters_and_config_checks():
    assert parse_quorum_voters("1@c1:9093, 2@c2:9093,3@[::1]:9094") == {
        1: ("c1", 9093), 2: ("c2", 9093), 3: ("[::1]", 9094)}
    for bad in ("", "1@c1", "c1:9093", "1@c1:1,1@c2:2"):
        with pytest.raises(ValueError):
            parse_quorum_voters(bad)
    assert not RaftConfig(node_id=4, voters=frozenset({1, 2, 3})).is_voter  # an observer
    with pytest.raises(ValueError):
        RaftConfig(node_id=4, voters=frozenset())
    assert RaftConfig(node_id=1, voters=frozenset({1, 2, 3, 4, 5})).majority == 3


def test_file_log_reopens_with_its_batches_epochs_and_snapshot(tmp_path):
    log = FileReplicatedLog(tmp_path)
    log.append_as_leader([b"a", b"b"], 1)
    log.append_as_leader([b"lc"], 2, control=True)
    log.append_as_leader([b"c"], 2)
    log.flush()
    log.create_snapshot(2, b"image@2")
    log.close()
    again = FileReplicatedLog(tmp_path)
    assert (again.start_offset, again.end_offset, again.flushed_end_offset) == (2, 4, 4)
    assert again.latest_snapshot().snapshot_id == OffsetAndEpoch(2, 1)
    assert again.latest_snapshot().payload == b"image@2"
    assert [(b.epoch, b.records, b.control) for b in again.read(2, 10)] == [
        (2, (b"lc",), True), (2, (b"c",), False)]
    assert again.end_offset_for_epoch(2) == OffsetAndEpoch(4, 2)
    assert again.end_offset_for_epoch(1) == OffsetAndEpoch(2, 1)
    again.close()


def test_file_log_finishes_a_snapshot_interrupted_before_the_log_start_moved(tmp_path):
    log = FileReplicatedLog(tmp_path)
    log.append_as_leader([b"a", b"b", b"c"], 1)
    log.flush()
    (log.dir / f"{2:020d}-{1:010d}.checkpoint").write_bytes(b"image@2")  # then a crash
    log.close()
    again = FileReplicatedLog(tmp_path)
    assert (again.start_offset, again.end_offset) == (2, 3)
    assert [b.records for b in again.read(2, 10)] == [(b"c",)]
    again.close()


def test_file_quorum_state_store_round_trips(tmp_path):
    from broker_app.raft.file_log import FileQuorumStateStore
    from broker_app.raft.quorum_state import ElectionState
    store = FileQuorumStateStore(tmp_path)
    assert store.read() is None
    store.write(ElectionState(7, None, 2))
    assert FileQuorumStateStore(tmp_path).read() == ElectionState(7, None, 2)
    store.write(ElectionState(8, 3, None))
    assert FileQuorumStateStore(tmp_path).read() == ElectionState(8, 3, None)
