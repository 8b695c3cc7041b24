"""read_for_fetch / OffsetForLeaderEpoch: fencing errors, DivergingEpoch, consumer visibility."""

from __future__ import annotations

from dataclasses import replace

from replication_sim import values

from broker_app.replication.errors import Errors
from broker_app.replication.fetcher import FENCED, ReplicaFetcherState
from broker_app.replication.messages import FetchIsolation
from broker_app.storage.records import build_batch

A, B = 1, 2


def _with_uncommitted_tail(make_cluster, **behaviour):
    cluster = make_cluster([A, B], **behaviour)
    cluster.elect(B, isr=[A, B])
    cluster.produce(["m1"])
    cluster.replicate(A, rounds=3)
    cluster.produce(["m2"])  # not replicated: above the HW
    return cluster


def test_consumers_see_only_up_to_hw(make_cluster) -> None:
    cluster = _with_uncommitted_tail(make_cluster)
    result = cluster.leader.read_for_fetch(0, 1 << 20, FetchIsolation.HIGH_WATERMARK)
    assert result.error == Errors.NONE and result.high_watermark == 1
    assert result.records and b"m2" not in result.records
    assert cluster.leader.read_for_fetch(1, 1 << 20, FetchIsolation.HIGH_WATERMARK).records == b""


def test_log_end_visibility_serves_uncommitted_data(make_cluster) -> None:
    cluster = _with_uncommitted_tail(make_cluster, consumer_visibility="log-end")
    result = cluster.leader.read_for_fetch(1, 1 << 20, FetchIsolation.HIGH_WATERMARK)
    assert b"m2" in result.records  # L5: a consumer reads what may be lost


def test_current_leader_epoch_fencing(make_cluster) -> None:
    cluster = _with_uncommitted_tail(make_cluster)
    cluster.elect(B, isr=[A, B])  # epoch 1
    leader = cluster.leader
    read = leader.read_for_fetch
    assert read(0, 100, FetchIsolation.LOG_END, current_leader_epoch=0).error == (
        Errors.FENCED_LEADER_EPOCH
    )
    assert read(0, 100, FetchIsolation.LOG_END, current_leader_epoch=2).error == (
        Errors.UNKNOWN_LEADER_EPOCH
    )
    assert read(0, 100, FetchIsolation.LOG_END, current_leader_epoch=1).error == Errors.NONE
    assert leader.last_offset_for_leader_epoch(0, current_leader_epoch=0).error == (
        Errors.FENCED_LEADER_EPOCH
    )
    follower = cluster.brokers[A].partition
    assert follower.read_for_fetch(0, 100, FetchIsolation.HIGH_WATERMARK).error == (
        Errors.NOT_LEADER_OR_FOLLOWER
    )
    assert follower.last_offset_for_leader_epoch(0).error == Errors.NOT_LEADER_OR_FOLLOWER


def test_offset_out_of_range(make_cluster) -> None:
    cluster = _with_uncommitted_tail(make_cluster)
    result = cluster.leader.read_for_fetch(5, 100, FetchIsolation.LOG_END)
    assert result.error == Errors.OFFSET_OUT_OF_RANGE
    assert result.log_end_offset == 2


def test_diverging_epoch_answer(make_cluster) -> None:
    cluster = _with_uncommitted_tail(make_cluster)
    cluster.elect(B, isr=[A, B])  # epoch 1 starts at offset 2 on B
    cluster.produce(["n"])
    leader = cluster.leader
    # A fetcher claiming epoch 0 data up to offset 3 diverges: epoch 0 ends at 2 here.
    result = leader.read_for_fetch(3, 100, FetchIsolation.LOG_END, last_fetched_epoch=0)
    assert result.records == b""
    assert (result.diverging_epoch.leader_epoch, result.diverging_epoch.end_offset) == (0, 2)
    # Consistent: no divergence, records served.
    ok = leader.read_for_fetch(2, 1 << 20, FetchIsolation.LOG_END, last_fetched_epoch=0)
    assert ok.diverging_epoch is None and ok.records


def test_kip101_answer_has_no_epoch(make_cluster) -> None:
    cluster = _with_uncommitted_tail(make_cluster, truncation="kip-101")
    cluster.elect(B, isr=[A, B])
    answer = cluster.leader.last_offset_for_leader_epoch(0)
    assert (answer.leader_epoch, answer.end_offset) == (-1, 2)
    full = _with_uncommitted_tail(make_cluster, truncation="kip-279")
    full.elect(B, isr=[A, B])
    answer = full.leader.last_offset_for_leader_epoch(0)
    assert (answer.leader_epoch, answer.end_offset) == (0, 2)


def test_follower_fenced_by_newer_leader_epoch(make_cluster) -> None:
    cluster = _with_uncommitted_tail(make_cluster)
    stale = cluster.brokers[A].fetcher
    request = stale.build_fetch()
    cluster.elect(B, isr=[A, B], followers=[])  # A has not heard of epoch 1 yet
    result, update = cluster.leader.fetch_records_for_follower(request, cluster.now_ms)
    assert result.error == Errors.FENCED_LEADER_EPOCH and update.alter_partition is None
    stale.on_fetch_response(result)
    assert stale.state == FENCED
    cluster.make_follower(A)  # the new metadata arrives: a fresh fetcher
    assert cluster.brokers[A].fetcher is not stale
    cluster.replicate(A, rounds=2)
    assert values(cluster.brokers[A].log) == values(cluster.brokers[B].log)


def test_follower_hw_is_capped_by_its_own_leo(make_cluster) -> None:
    cluster = _with_uncommitted_tail(make_cluster)
    fetcher: ReplicaFetcherState = cluster.brokers[A].fetcher
    fetcher.max_bytes = 1
    cluster.replicate(A, rounds=3)
    log = cluster.brokers[A].log
    assert log.high_watermark == min(cluster.leader.high_watermark, log.log_end_offset)
    assert log.high_watermark == 2


def test_fetch_from_unassigned_replica_is_rejected(make_cluster) -> None:
    cluster = _with_uncommitted_tail(make_cluster)
    request = cluster.brokers[A].fetcher.build_fetch()
    result, _ = cluster.leader.fetch_records_for_follower(
        replace(request, replica_id=99), cluster.now_ms
    )
    assert result.error == Errors.NOT_LEADER_OR_FOLLOWER


def test_snapshot_is_plain_json(make_cluster) -> None:
    import json

    cluster = _with_uncommitted_tail(make_cluster)
    snap = json.loads(json.dumps(cluster.leader.snapshot()))
    assert snap["role"] == "leader" and snap["isr"] == [A, B]
    assert snap["log_end_offset"] == 2 and snap["high_watermark"] == 1
    assert snap["epoch_cache"] == [[0, 0]]
    assert snap["remote_replicas"][str(A)]["log_end_offset"] == 1


def test_follower_beyond_leader_end_truncates_on_out_of_range(make_cluster) -> None:
    # Pre-epoch protocol (no LastFetchedEpoch): a longer follower log gets OFFSET_OUT_OF_RANGE
    # and is cut back to the leader's end.
    cluster = make_cluster([A, B], truncation="kip-101")
    cluster.elect(A, isr=[A, B])
    cluster.produce(["m1"])
    cluster.replicate(B, rounds=3)
    cluster.produce(["m2"])
    cluster.crash(A)
    cluster.elect(B, isr=[B])
    cluster.restart(A)
    cluster.make_follower(A)
    fetcher = cluster.brokers[A].fetcher
    fetcher.state = "fetching"  # skip OffsetForLeaderEpoch to reach the fetch-path fallback
    outcome = cluster.fetch_round(A)
    # The Fetch answer carries no log end offset: nothing is cut before asking the leader.
    assert outcome.error == Errors.OFFSET_OUT_OF_RANGE and outcome.truncated_to is None
    assert fetcher.state == "out-of-range" and values(cluster.brokers[A].log) == ["m1", "m2"]
    assert fetcher.build_list_offsets().timestamp == -1  # latest first
    assert cluster.list_offsets_round(A) == 1  # the leader's LEO is 1: cut back to it
    assert fetcher.state == "fetching"
    assert values(cluster.brokers[A].log) == ["m1"]


def test_follower_behind_the_leader_log_start_starts_over_there(make_cluster) -> None:
    cluster = make_cluster([A, B])
    cluster.elect(A, isr=[A])
    cluster.produce(["m1", "m2"])
    cluster.produce(["m3"])
    cluster.leader.log.truncate_fully_and_start_at(3)  # as if retention deleted offsets 0..2
    cluster.leader.log.append_as_leader(build_batch([(None, b"m4")], timestamp=0), 0)
    cluster.make_follower(B)
    fetcher = cluster.brokers[B].fetcher
    outcome = cluster.fetch_round(B)
    assert outcome.error == Errors.OFFSET_OUT_OF_RANGE and fetcher.state == "out-of-range"
    assert cluster.list_offsets_round(B) is None  # latest (4) is not below our LEO (0)
    assert fetcher.build_list_offsets().timestamp == -2  # so ask the earliest
    assert cluster.list_offsets_round(B) == 3
    log = cluster.brokers[B].log
    assert (log.log_start_offset, log.log_end_offset, fetcher.state) == (3, 3, "fetching")
    cluster.replicate(B, rounds=1)
    assert log.log_end_offset == 4


def test_out_of_range_answer_from_a_newer_epoch_fences(make_cluster) -> None:
    cluster = make_cluster([A, B], truncation="kip-101")
    cluster.elect(A, isr=[A, B])
    cluster.produce(["m1"])
    cluster.replicate(B, rounds=2)
    cluster.produce(["m2"])
    cluster.crash(A)
    cluster.elect(B, isr=[B])
    cluster.restart(A)
    cluster.make_follower(A)
    fetcher = cluster.brokers[A].fetcher
    fetcher.state = "fetching"
    cluster.fetch_round(A)
    cluster.elect(B, isr=[B], followers=[])  # the leader moves on; A has not heard
    cluster.list_offsets_round(A)
    assert fetcher.state == "fenced" and values(cluster.brokers[A].log) == ["m1", "m2"]
