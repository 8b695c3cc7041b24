"""LeaderState: commit by majority of durable positions, only past the leader's own epoch."""

from broker_app.raft.leader_state import LeaderState


def leader(voters=(1, 2, 3), epoch_start=5) -> LeaderState:
    return LeaderState(local_id=1, epoch=3, epoch_start_offset=epoch_start,
                       voters=frozenset(voters), now_ms=0)


def test_commit_needs_a_majority():
    s = leader(voters=(1, 2, 3, 4, 5))
    assert not s.update_local(9)
    assert not s.update_replica(2, 9, 0)  # 2 of 5
    assert s.high_watermark is None
    assert s.update_replica(3, 7, 0)  # 3 of 5 at >= 7
    assert s.high_watermark == 7
    assert s.update_replica(4, 8, 0) and s.high_watermark == 8


def test_entries_of_older_epochs_commit_only_with_one_of_the_leaders_own():
    s = leader(epoch_start=5)  # offsets < 5 are older epochs; 5 is our LeaderChange
    s.update_local(6)
    assert not s.update_replica(2, 5, 0)  # a majority holds [0, 5): still not committed
    assert s.high_watermark is None
    assert s.update_replica(2, 6, 0) and s.high_watermark == 6  # our record: all of it


def test_only_flushed_local_records_count():
    s = leader(epoch_start=0)
    s.update_local(0)  # appended 3 records, none flushed
    assert not s.update_replica(2, 3, 0)
    assert s.update_local(3) and s.high_watermark == 3


def test_high_watermark_never_moves_back_and_non_voters_do_not_count():
    s = leader(epoch_start=0)
    s.update_local(4)
    s.update_replica(2, 4, 0)
    assert s.high_watermark == 4
    assert not s.update_replica(2, 2, 0) and s.high_watermark == 4
    assert not s.update_replica(9, 100, 0)  # not a voter
    assert s.high_watermark == 4


def test_check_quorum_needs_a_majority_to_fetch_in_each_window():
    s = leader()
    s.start_check_quorum(0, fetch_timeout_ms=1000)  # window: 1500 ms
    assert s.check_quorum(1000, 1000)
    s.update_replica(2, 0, 1200)
    assert s.check_quorum(1400, 1000)  # majority heard: a new window to 2900
    assert s.check_quorum(2800, 1000)
    assert not s.check_quorum(2900, 1000)  # nobody fetched since 1400
