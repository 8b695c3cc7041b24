"""min.insync.replicas: NOT_ENOUGH_REPLICAS before append, NOT_ENOUGH_REPLICAS_AFTER_APPEND
while waiting in the purgatory, acks=1 untouched, strict min ISR keeps the HW still (L7)."""

from __future__ import annotations

import pytest
from replication_sim import LAG_MS, TOPIC, Cluster

from broker_app.replication.delayed_produce import DelayedProduce, ProducePartitionStatus
from broker_app.replication.errors import Errors, NotEnoughReplicasError
from broker_app.replication.purgatory import Purgatory

L, F1, F2 = 1, 2, 3
KEY = (TOPIC, 0)
TIMEOUT_MS = 30_000


def _three(make_cluster, **behaviour) -> Cluster:
    cluster = make_cluster([L, F1, F2], min_isr=2, **behaviour)
    cluster.elect(L, isr=[L, F1, F2])
    return cluster


def _shrink_to(cluster: Cluster, keep: list[int]) -> None:
    """Let the followers not in `keep` fall behind, shrink and commit."""
    cluster.now_ms += LAG_MS + 1
    for f in keep:
        if f != cluster.leader_id:
            cluster.leader.update_follower_fetch_state(
                f, cluster.leader.log_end_offset, cluster.now_ms
            )
    request = cluster.leader.maybe_shrink_isr(cluster.now_ms)
    assert request is not None and set(request.new_isr) == set(keep)
    cluster.commit(request)


def _delayed(cluster: Cluster, purgatory: Purgatory, results: list) -> None:
    info = cluster.produce(["x"], acks=-1).info
    local = cluster.leader  # the ReplicaManager looks up its own broker's Partition
    op = DelayedProduce(
        cluster.now_ms + TIMEOUT_MS,
        {KEY: ProducePartitionStatus(info.last_offset + 1, info.first_offset)},
        lambda key: local if key == KEY else None,
        results.append,
    )
    purgatory.try_complete_else_watch(op, [KEY])


@pytest.mark.parametrize("isr_size, rejected", [(3, False), (2, False), (1, True)])
def test_not_enough_replicas_exactly_when_isr_below_min_before_append(
    make_cluster, isr_size, rejected
) -> None:
    cluster = _three(make_cluster)
    if isr_size < 3:
        _shrink_to(cluster, [L, F1, F2][:isr_size])
    leo = cluster.leader.log_end_offset
    if rejected:
        with pytest.raises(NotEnoughReplicasError, match="min.insync.replicas=2"):
            cluster.produce(["m"], acks=-1)
        assert cluster.leader.log_end_offset == leo  # nothing was appended
    else:
        cluster.produce(["m"], acks=-1)
        assert cluster.leader.log_end_offset == leo + 1


@pytest.mark.parametrize("acks", [0, 1])
def test_acks_0_and_1_never_get_not_enough_replicas(make_cluster, acks) -> None:
    cluster = _three(make_cluster)
    _shrink_to(cluster, [L])
    cluster.produce(["m"], acks=acks)
    assert cluster.leader.log_end_offset == 1


def test_pending_shrink_does_not_reject_before_the_controller_commits(make_cluster) -> None:
    cluster = _three(make_cluster)
    cluster.now_ms += LAG_MS + 1
    request = cluster.leader.maybe_shrink_isr(cluster.now_ms)
    assert request.new_isr == (L,)
    cluster.produce(["m"], acks=-1)  # committed ISR is still 3
    cluster.commit(request)
    with pytest.raises(NotEnoughReplicasError):
        cluster.produce(["n"], acks=-1)


def test_after_append_error_when_isr_shrinks_while_waiting(make_cluster) -> None:
    cluster = _three(make_cluster, strict_min_isr=False, eligible_leader_replicas=False)
    purgatory: Purgatory[DelayedProduce] = Purgatory("produce")
    results: list = []
    _delayed(cluster, purgatory, results)
    assert results == [] and purgatory.watched(KEY) == 1
    _shrink_to(cluster, [L])  # followers never fetched it; ISR is now the leader alone
    assert cluster.leader.high_watermark == 1  # non-strict: the lone leader commits it
    assert purgatory.check_and_complete(KEY) == 1
    assert results[0][KEY].error == Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_strict_min_isr_keeps_hw_still_and_produce_times_out(make_cluster) -> None:
    cluster = _three(make_cluster)  # strict_min_isr=True is the default
    purgatory: Purgatory[DelayedProduce] = Purgatory("produce")
    results: list = []
    _delayed(cluster, purgatory, results)
    _shrink_to(cluster, [L])
    assert cluster.leader.high_watermark == 0  # never acknowledged, so L7 loses nothing acked
    assert purgatory.check_and_complete(KEY) == 0
    assert purgatory.expire_due(cluster.now_ms + TIMEOUT_MS) != []
    assert results[0][KEY].error == Errors.REQUEST_TIMED_OUT


def test_strict_min_isr_hw_resumes_when_isr_grows_back(make_cluster) -> None:
    cluster = _three(make_cluster)
    _shrink_to(cluster, [L])
    cluster.produce(["a"], acks=1)
    cluster.fetch_round(F1)  # F1 reaches the HW: pending expansion, committed ISR still {L}
    request = cluster.last_update.alter_partition
    assert request is not None and cluster.leader.maximal_isr == {L, F1}
    cluster.fetch_round(F1)  # F1 now holds "a" too, yet the HW may not move
    assert cluster.leader.remote_replicas[F1].log_end_offset == 1
    assert cluster.leader.high_watermark == 0
    cluster.commit(request)
    assert cluster.leader.isr == {L, F1}
    assert cluster.leader.high_watermark == 1


def test_l4_lone_leader_acknowledges_with_min_isr_1(make_cluster) -> None:
    cluster = make_cluster([L, F1, F2], min_isr=1)
    cluster.elect(L, isr=[L, F1, F2])
    _shrink_to(cluster, [L])
    result = cluster.produce(["m"], acks=-1)
    assert result.hw_advanced
    assert cluster.leader.check_enough_replicas_reach_offset(1) == (True, Errors.NONE)


def test_delayed_produce_completes_when_hw_covers_it(make_cluster) -> None:
    cluster = _three(make_cluster)
    purgatory: Purgatory[DelayedProduce] = Purgatory("produce")
    results: list = []
    _delayed(cluster, purgatory, results)
    cluster.fetch_round(F1)
    assert purgatory.check_and_complete(KEY) == 0  # F2 (in ISR) has not got it yet
    cluster.fetch_round(F1)
    cluster.fetch_round(F2)
    cluster.fetch_round(F2)
    assert cluster.leader.high_watermark == 1
    assert purgatory.check_and_complete(KEY) == 1
    assert results[0][KEY].error == Errors.NONE and results[0][KEY].base_offset == 0


def test_delayed_produce_fails_when_leadership_moves(make_cluster) -> None:
    cluster = _three(make_cluster)
    purgatory: Purgatory[DelayedProduce] = Purgatory("produce")
    results: list = []
    _delayed(cluster, purgatory, results)
    old_leader = cluster.leader
    cluster.elect(F1, isr=[L, F1, F2])
    assert old_leader.check_enough_replicas_reach_offset(1) == (
        True,
        Errors.NOT_LEADER_OR_FOLLOWER,
    )
    assert old_leader.role == "follower"
    assert purgatory.check_and_complete(KEY) == 1
    assert results[0][KEY].error == Errors.NOT_LEADER_OR_FOLLOWER


@pytest.mark.parametrize("strict, refused", [(True, False), (False, True)])
def test_min_isr_above_the_replica_count_is_capped_from_3_7(make_cluster, strict,
                                                            refused) -> None:  # fmt: skip
    """KAFKA-15583 (3.7, strict min ISR): effectiveMinIsr = min(min.insync.replicas, replicas)
    before the append and for the HW; before 3.7 min.insync=4 on RF=3 refuses every acks=all
    write, even with a full ISR."""
    cluster = make_cluster([L, F1, F2], min_isr=4, strict_min_isr=strict,
                           eligible_leader_replicas=False)
    cluster.elect(L, isr=[L, F1, F2])
    if refused:
        with pytest.raises(NotEnoughReplicasError, match="min.insync.replicas=4"):
            cluster.produce(["m"], acks=-1)
        return
    cluster.produce(["m"], acks=-1)
    cluster.replicate(F1, F2, rounds=2)
    assert cluster.leader.high_watermark == 1
    assert cluster.leader.check_enough_replicas_reach_offset(1) == (True, Errors.NONE)
