"""ISR shrink after replica.lag.time.max.ms, expansion rules, and L6 (maximal vs eager ISR)."""

from __future__ import annotations

from replication_sim import LAG_MS, values

from broker_app.replication.errors import Errors
from broker_app.replication.messages import AlterPartitionResponse
from broker_app.replication.partition import (
    CommittedPartitionState,
    PendingExpandIsr,
    PendingShrinkIsr,
)

A, B, C = 1, 2, 3


def _l6(cluster) -> tuple[bool, list[str]]:
    """SCENARIOS.md L6: returns (was m2 acknowledged, the elected dropped replica's log)."""
    cluster.elect(B, isr=[A, B])
    cluster.produce(["m1"])
    cluster.replicate(A, rounds=3)
    assert cluster.leader.high_watermark == 1
    cluster.produce(["m2"])  # A is cut off from now on
    cluster.now_ms += LAG_MS + 1
    request = cluster.leader.maybe_shrink_isr(cluster.now_ms)
    assert request is not None and request.new_isr == (B,)
    # The controller has not committed the shrink: its ISR is still {A, B}.
    acked = cluster.leader.check_enough_replicas_reach_offset(2) == (True, Errors.NONE)
    cluster.crash(B)
    cluster.elect(A, isr=[A])  # a replica in the controller's ISR: a clean election
    return acked, values(cluster.brokers[A].log)


def test_l6_eager_isr_acknowledges_what_the_elected_replica_lacks(make_cluster) -> None:
    cluster = make_cluster([A, B], isr_update="eager")
    acked, a_log = _l6(cluster)
    assert acked
    assert a_log == ["m1"]  # acknowledged m2 is lost


def test_l6_maximal_isr_keeps_waiting_for_the_dropped_replica(make_cluster) -> None:
    cluster = make_cluster([A, B])
    acked, a_log = _l6(cluster)
    assert not acked  # m2 was never acknowledged, so losing it breaks no promise
    assert a_log == ["m1"]


def test_maximal_isr_hw_advances_only_after_controller_commits_shrink(make_cluster) -> None:
    cluster = make_cluster([A, B])
    cluster.elect(B, isr=[A, B])
    cluster.produce(["m1"])
    cluster.now_ms += LAG_MS + 1
    request = cluster.leader.maybe_shrink_isr(cluster.now_ms)
    assert isinstance(cluster.leader.partition_state, PendingShrinkIsr)
    assert cluster.leader.maximal_isr == {A, B}
    assert cluster.leader.high_watermark == 0
    # No second change while one is in flight.
    assert cluster.leader.maybe_shrink_isr(cluster.now_ms) is None
    assert cluster.commit(request) is True
    assert cluster.leader.isr == {B}
    assert cluster.leader.high_watermark == 1


def test_shrink_waits_exactly_for_the_lag_time(make_cluster) -> None:
    cluster = make_cluster([A, B])
    cluster.elect(B, isr=[A, B])
    start = cluster.now_ms
    cluster.produce(["m1"])
    assert cluster.leader.maybe_shrink_isr(start + LAG_MS) is None
    assert cluster.leader.maybe_shrink_isr(start + LAG_MS + 1) is not None


def test_follower_fetching_but_never_reaching_leader_end_is_dropped(make_cluster) -> None:
    cluster = make_cluster([A, B])
    cluster.elect(B, isr=[A, B])
    cluster.replicate(A, rounds=1)  # caught up (both empty) at t0
    t0 = cluster.now_ms
    cluster.produce(["m1"])
    for i in range(1, 4):
        # The leader gains a record before each fetch is answered; the follower always
        # fetches from an offset below the leader's end at the previous fetch.
        cluster.now_ms = t0 + i * (LAG_MS // 2)
        cluster.leader.update_follower_fetch_state(A, 0, cluster.now_ms)
        cluster.produce([f"n{i}"])
    assert cluster.leader.out_of_sync_replicas(cluster.now_ms) == {A}


def test_follower_that_keeps_up_with_previous_leader_end_stays(make_cluster) -> None:
    cluster = make_cluster([A, B])
    cluster.elect(B, isr=[A, B])
    t0 = cluster.now_ms
    for i in range(1, 6):
        cluster.produce([f"m{i}"])
        cluster.now_ms = t0 + i * (LAG_MS // 2)
        # Each fetch reaches the leader's end as of the previous fetch, never the current one.
        cluster.leader.update_follower_fetch_state(A, i - 1, cluster.now_ms)
    assert cluster.leader.log_end_offset == 5
    assert cluster.leader.out_of_sync_replicas(cluster.now_ms) == frozenset()


def test_expansion_needs_hw_and_current_epoch_start(make_cluster) -> None:
    cluster = make_cluster([A, B, C])
    cluster.elect(A, isr=[A, B, C])  # epoch 0
    for v in ["m0", "m1", "m2", "m3", "m4"]:
        cluster.produce([v])
    cluster.replicate(B, rounds=2)  # B has all five
    cluster.brokers[C].fetcher.max_bytes = 1  # one batch per fetch
    cluster.fetch_round(C)
    cluster.fetch_round(C)  # C holds m0, m1; A's HW is 1
    cluster.fetch_round(B)  # B learns HW 1
    cluster.crash(A)
    cluster.elect(B, isr=[A, B], followers=[])  # epoch 1 starts at 5; A (dead) keeps HW low
    leader = cluster.leader
    assert leader.leader_epoch_start_offset == 5
    assert leader.high_watermark == 1
    cluster.make_follower(C)
    c_fetcher = cluster.brokers[C].fetcher
    c_fetcher.max_bytes = 1
    cluster.fetch_round(C)  # fetch offset 2: C is past the HW, short of the epoch start
    assert leader.remote_replicas[C].log_end_offset == 2
    assert not leader.is_follower_in_sync(C)
    assert isinstance(leader.partition_state, CommittedPartitionState)
    while cluster.brokers[C].log.log_end_offset < 5:
        cluster.fetch_round(C)
    assert c_fetcher.state == "fetching"
    outcome = cluster.fetch_round(C)  # this fetch tells B that C holds offset 5
    assert outcome.error == Errors.NONE
    update = cluster.last_update
    assert update.alter_partition is not None and update.alter_partition.new_isr == (A, B, C)
    # A pending expansion counts at once.
    assert isinstance(leader.partition_state, PendingExpandIsr)
    assert leader.maximal_isr == {A, B, C}
    assert leader.isr == {A, B}
    cluster.commit(update.alter_partition)
    assert leader.isr == {A, B, C}


def _kafka_7128(cluster) -> tuple[list[str], object]:
    """KAFKA-7128's interleaving: A leads with ISR {A, B} (C outside, idle) and acknowledges
    m0..m4; B holds them all, but the fetch that told A so was the last one, so B's HW is 2.
    A dies; B leads epoch 1 (which starts at 5) with A still in its ISR, so its HW stays 2.
    C catches up one batch per fetch; returns (C's log, B's update after C's fetch at 2)."""
    cluster.elect(A, isr=[A, B], followers=[B])
    for v in ["m0", "m1"]:
        cluster.produce([v])
    cluster.replicate(B, rounds=2)  # B has m0, m1 and HW 2
    for v in ["m2", "m3", "m4"]:
        cluster.produce([v])
    cluster.fetch_round(B)  # B has m0..m4, HW 2
    cluster.leader.update_follower_fetch_state(B, 5, cluster.now_ms)  # its answer is lost
    assert cluster.leader.high_watermark == 5  # m0..m4 acknowledged
    assert cluster.brokers[B].log.high_watermark == 2
    cluster.crash(A)
    cluster.elect(B, isr=[A, B], followers=[])
    leader = cluster.leader
    assert (leader.leader_epoch_start_offset, leader.high_watermark) == (5, 2)
    cluster.make_follower(C)
    cluster.brokers[C].fetcher.max_bytes = 1  # one batch per fetch
    cluster.fetch_round(C)
    cluster.fetch_round(C)  # C holds m0, m1
    cluster.fetch_round(C)  # ... and this fetch, at offset 2, reached B's HW
    return values(cluster.brokers[C].log), cluster.last_update


def test_kafka_7128_legacy_adds_a_follower_that_only_reached_the_lagging_hw(make_cluster):
    """Kafka 2.0 (isr-join high-watermark, L15): C joins at offset 2 although A acknowledged
    up to 5; if B dies now, C is a clean choice and m2..m4 are gone."""
    cluster = make_cluster([A, B, C], isr_join="high-watermark")
    c_log, update = _kafka_7128(cluster)
    assert update.alter_partition is not None and update.alter_partition.new_isr == (A, B, C)
    cluster.commit(update.alter_partition)
    assert cluster.leader.isr == {A, B, C}
    assert c_log[:2] == ["m0", "m1"] and cluster.leader.remote_replicas[C].log_end_offset == 2


def test_kafka_7128_fixed_waits_for_the_epoch_start(make_cluster):
    """Kafka 2.1 and later (isr-join epoch-start): not before C reached offset 5."""
    cluster = make_cluster([A, B, C])
    _kafka_7128(cluster)
    assert cluster.last_update.alter_partition is None
    while cluster.brokers[C].log.log_end_offset < 5:
        cluster.fetch_round(C)
        assert cluster.last_update.alter_partition is None
    cluster.fetch_round(C)  # this fetch tells B that C holds offset 5
    assert cluster.last_update.alter_partition.new_isr == (A, B, C)


def test_alter_partition_rejection_reverts_or_stays_pending(make_cluster) -> None:
    cluster = make_cluster([A, B])
    cluster.elect(B, isr=[A, B])
    cluster.now_ms += LAG_MS + 1
    leader = cluster.leader
    request = leader.maybe_shrink_isr(cluster.now_ms)
    # An unclear error (the controller may or may not have applied it): stay pending.
    leader.on_alter_partition_response(
        request, AlterPartitionResponse(error=Errors.INVALID_UPDATE_VERSION), cluster.now_ms
    )
    assert isinstance(leader.partition_state, PendingShrinkIsr)
    # "Not applied, your state is right": back to the last committed ISR.
    leader.on_alter_partition_response(
        request, AlterPartitionResponse(error=Errors.OPERATION_NOT_ATTEMPTED), cluster.now_ms
    )
    assert leader.partition_state == CommittedPartitionState(frozenset({A, B}))


def test_stale_alter_partition_response_after_new_epoch_is_ignored(make_cluster) -> None:
    cluster = make_cluster([A, B])
    cluster.elect(B, isr=[A, B])
    cluster.now_ms += LAG_MS + 1
    request = cluster.leader.maybe_shrink_isr(cluster.now_ms)
    cluster.elect(B, isr=[A, B])  # new epoch before the answer arrives
    hw_moved = cluster.leader.on_alter_partition_response(
        request,
        AlterPartitionResponse(leader_epoch=request.leader_epoch, isr=(B,), partition_epoch=99),
        cluster.now_ms,
    )
    assert hw_moved is False
    assert cluster.leader.isr == {A, B}


def test_stale_leader_and_isr_is_ignored(make_cluster) -> None:
    cluster = make_cluster([A, B])
    cluster.elect(B, isr=[A, B])
    cluster.elect(B, isr=[A, B])
    p = cluster.leader
    assert p.make_leader(0, [B], [A, B], 0, cluster.now_ms) is False
    assert p.leader_epoch == 1 and p.isr == {A, B}


def test_fenced_follower_is_not_proposed_for_the_isr(make_cluster) -> None:
    """KIP-841: a caught-up follower whose broker the metadata says is fenced (or shutting
    down) is not proposed; the controller would refuse it and the next fetch would ask again."""
    cluster = make_cluster([A, B])
    cluster.elect(A, isr=[A])
    cluster.produce(["m0"])
    fenced = {B}
    cluster.leader.is_replica_isr_eligible = lambda replica_id: replica_id not in fenced
    cluster.replicate(B, rounds=3)  # B holds everything, yet stays out
    assert cluster.leader.remote_replicas[B].log_end_offset == 1
    assert cluster.leader.isr == {A}
    assert isinstance(cluster.leader.partition_state, CommittedPartitionState)
    fenced.clear()  # B registered again
    cluster.fetch_round(B)
    update = cluster.last_update
    assert update.alter_partition is not None and update.alter_partition.new_isr == (A, B)


def test_hw_does_not_wait_for_a_fenced_replica_that_left_the_isr(make_cluster) -> None:
    """A follower dies right after catching up; the controller fences it and takes it out of
    the ISR (same leader epoch, new partition epoch). Within replica.lag.time.max.ms of its
    last fetch it still looks caught up; Kafka waits for such a replica only while it may join
    the ISR (isReplicaIsrEligible, KIP-841), so a fenced one no longer holds the HW back
    (group-coordinator-kill: acks=all sends to live leaders timed out until it returned)."""
    cluster = make_cluster([A, B, C])
    cluster.elect(A, isr=[A, B, C])
    cluster.produce(["m0"])
    cluster.replicate(B, C, rounds=3)
    assert cluster.leader.high_watermark == 1
    cluster.crash(C)
    cluster.produce(["m1"])
    cluster.replicate(B, rounds=3)
    fenced = {C}
    cluster.leader.is_replica_isr_eligible = lambda replica_id: replica_id not in fenced
    cluster.partition_epoch += 1  # the controller's ISR change on fencing C
    cluster.leader.make_leader(cluster.leader_epoch, [A, B], [A, B, C],
                               cluster.partition_epoch, cluster.now_ms)
    assert cluster.leader.isr == {A, B}
    assert cluster.leader.high_watermark == 2  # m1 is on every replica that may be in the ISR


def test_hw_still_waits_for_a_live_caught_up_replica_outside_the_isr(make_cluster) -> None:
    """The rule the eligibility check narrows: a registered replica that is caught up but not
    (yet) in the ISR is waited for, so the HW cannot run away from it."""
    cluster = make_cluster([A, B, C])
    cluster.elect(A, isr=[A, B, C])
    cluster.produce(["m0"])
    cluster.replicate(B, C, rounds=3)
    cluster.crash(C)
    cluster.produce(["m1"])
    cluster.replicate(B, rounds=3)
    cluster.partition_epoch += 1
    cluster.leader.make_leader(cluster.leader_epoch, [A, B], [A, B, C],
                               cluster.partition_epoch, cluster.now_ms)
    assert cluster.leader.high_watermark == 1  # C (not fenced) counts as caught up: waited for
