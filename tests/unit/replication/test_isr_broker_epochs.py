"""KIP-903 on the leader: an ISR proposal carries each member's broker epoch as of the fetch
that showed it caught up (AlterPartition v3), so the controller can tell a restarted replica
from the one the leader saw; with the switch off (before Kafka 3.5) it carries none (v2)."""

from __future__ import annotations

import uuid

from replication_sim import LAG_MS

from broker_app.replication.alter_partition_manager import build_alter_partition

A, B = 1, 2


def _expansion(cluster, epochs: dict[int, int]):
    """B falls out of the ISR, then catches up while the metadata says B's epoch is epochs[B];
    returns the expansion the leader proposes."""
    cluster.elect(A, isr=[A, B])
    leader = cluster.leader
    leader.replica_broker_epoch = lambda r: epochs.get(r, -1)
    cluster.produce(["m1"])
    cluster.now_ms += LAG_MS + 1
    assert cluster.commit(leader.maybe_shrink_isr(cluster.now_ms)) is not None
    assert leader.isr == {A}
    cluster.replicate(B, rounds=3)
    return cluster.last_update.alter_partition or leader.pending_alter_partition


def test_the_proposal_carries_the_epoch_of_the_fetch_not_the_current_one(make_cluster):
    cluster = make_cluster([A, B])
    epochs = {A: 10, B: 20}
    request = _expansion(cluster, epochs)
    assert request.new_isr == (A, B) and request.isr_broker_epochs == (-1, 20)
    epochs[B] = 30  # B re-registers while the proposal is in flight (a retry or a delay)
    assert cluster.leader.pending_alter_partition.isr_broker_epochs == (-1, 20)
    body = build_alter_partition(request, 10, uuid.UUID(int=1))
    [p] = body.topics[0].partitions
    assert [(s.broker_id, s.broker_epoch) for s in p.new_isr_with_epochs] == [(A, -1), (B, 20)]


def test_legacy_sends_bare_ids_as_alter_partition_v2(make_cluster):
    cluster = make_cluster([A, B], isr_broker_epochs=False)
    request = _expansion(cluster, {A: 10, B: 20})
    assert request.new_isr == (A, B) and request.isr_broker_epochs is None
    [p] = build_alter_partition(request, 10, uuid.UUID(int=1)).topics[0].partitions
    assert tuple(p.new_isr) == (A, B) and not hasattr(p, "new_isr_with_epochs")
