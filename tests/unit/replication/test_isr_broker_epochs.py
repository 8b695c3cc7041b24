"""KIP-903 on the leader: the broker epoch a follower's Fetch carries (v15 ReplicaState) is
what the leader keeps for it, what makes it eligible to join the ISR (it must match the epoch
the metadata registers now, or be -1) and what an ISR proposal carries (AlterPartition v3),
so neither the leader nor the controller can take an old incarnation's fetch for the
restarted, emptied one; with the switch off (before Kafka 3.5) there are no epochs (v2)."""

from __future__ import annotations

import uuid

from replication_sim import LAG_MS

from broker_app.replication.alter_partition_manager import build_alter_partition

A, B = 1, 2


def _shrunk(cluster, registered: dict[int, int]) -> None:
    """B falls out of the ISR; the metadata registers the epochs in `registered`."""
    cluster.elect(A, isr=[A, B])
    leader = cluster.leader
    leader.replica_broker_epoch = lambda r: registered.get(r, -1)
    cluster.produce(["m1"])
    cluster.now_ms += LAG_MS + 1
    assert cluster.commit(leader.maybe_shrink_isr(cluster.now_ms)) is not None
    assert leader.isr == {A}


def _expansion(cluster):
    cluster.replicate(B, rounds=3)
    return cluster.last_update.alter_partition or cluster.leader.pending_alter_partition


def test_the_proposal_carries_the_epoch_the_fetch_carried(make_cluster):
    cluster = make_cluster([A, B])
    registered = {A: 10, B: 20}
    _shrunk(cluster, registered)
    cluster.brokers[B].epoch = 20
    request = _expansion(cluster)
    assert request.new_isr == (A, B) and request.isr_broker_epochs == (-1, 20)
    registered[B] = 30  # B re-registers while the proposal is in flight (a retry or a delay)
    assert cluster.leader.pending_alter_partition.isr_broker_epochs == (-1, 20)
    body = build_alter_partition(request, 10, uuid.UUID(int=1))
    [p] = body.topics[0].partitions
    assert [(s.broker_id, s.broker_epoch) for s in p.new_isr_with_epochs] == [(A, -1), (B, 20)]


def test_a_fetch_of_the_old_incarnation_does_not_add_the_restarted_replica(make_cluster):
    """The interleaving of issue 27 item 4: B (epoch 20) is caught up and its fetch is in
    flight; B restarts with an empty disk and registers epoch 30; the leader, whose metadata
    already shows 30, then processes the old fetch. Stamping the fetch with the image's epoch
    (what the broker did) proposed B at epoch 30, which the controller accepts: an emptied
    replica in the ISR. Kafka keeps the fetch's own epoch, 20, and does not propose B."""
    cluster = make_cluster([A, B])
    registered = {A: 10, B: 30}  # B's new incarnation is registered
    _shrunk(cluster, registered)
    cluster.brokers[B].epoch = 20  # ... and this fetch is the old one's
    assert _expansion(cluster) is None and cluster.leader.isr == {A}
    # The new incarnation's own fetches (epoch 30) add it once it has caught up.
    cluster.brokers[B].epoch = 30
    request = _expansion(cluster)
    assert request.new_isr == (A, B) and request.isr_broker_epochs == (-1, 30)


def test_a_fetch_without_an_epoch_is_eligible(make_cluster):
    """Fetch before v15 carries no epoch (-1): Kafka's isBrokerEpochIsrEligible lets it by and
    the controller skips the check for -1."""
    cluster = make_cluster([A, B])
    _shrunk(cluster, {A: 10, B: 30})
    request = _expansion(cluster)
    assert request.new_isr == (A, B) and request.isr_broker_epochs == (-1, -1)


def test_legacy_sends_bare_ids_as_alter_partition_v2(make_cluster):
    cluster = make_cluster([A, B], isr_broker_epochs=False)
    _shrunk(cluster, {A: 10, B: 30})
    cluster.brokers[B].epoch = 20  # an old incarnation's fetch: before 3.5, nobody can tell
    request = _expansion(cluster)
    assert request.new_isr == (A, B) and request.isr_broker_epochs is None
    [p] = build_alter_partition(request, 10, uuid.UUID(int=1)).topics[0].partitions
    assert tuple(p.new_isr) == (A, B) and not hasattr(p, "new_isr_with_epochs")
