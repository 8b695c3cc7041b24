"""KIP-903 (Kafka 3.5): a stale AlterPartition must not add a restarted replica to the ISR.

The exact interleaving of KAFKA-14139, driven by hand against one QuorumController: leader 1
sees follower 2 caught up (under 2's broker epoch e1) and proposes ISR [1, 2]; before the
proposal arrives, broker 2 restarts with an emptied log faster than its session timeout,
registers a new incarnation (epoch e2) and is unfenced at once (KIP-380's fast bounce). The
proposal then arrives. Fixed (isr_broker_epochs, AlterPartition v3): INELIGIBLE_REPLICA, the
ISR stays [1]. Legacy (< 3.5: no epochs compared): ISR [1, 2], and when 1 fails the controller
elects 2 with its empty log: every record acknowledged by 1 alone is lost.
"""

from __future__ import annotations

import pytest

from broker_app.controller.config import ControllerConfig
from broker_app.controller.errors import Errors
from broker_app.controller.messages import AlterPartitionItem, AlterPartitionRequest


def _stale_expansion(make_cluster, isr_broker_epochs: bool):
    cluster = make_cluster(ControllerConfig(isr_broker_epochs=isr_broker_epochs))
    cluster.start_brokers(1, 2)
    cluster.create("t", 1, 2)
    reg = cluster.part("t")
    assert reg.leader == 1
    # 2 fell behind and left the ISR (committed), then caught up again under epoch e1.
    shrink = AlterPartitionItem(reg_topic_id(cluster), 0, reg.leader_epoch, reg.partition_epoch,
                                (1,), (-1,))
    resp, _ = cluster.controller.alter_partition(
        AlterPartitionRequest(1, cluster.epochs[1], [shrink]), cluster.now)
    assert resp.results[0].error == Errors.NONE and cluster.part("t").isr == (1,)
    reg = cluster.part("t")
    e1 = cluster.epochs[2]
    stale = AlterPartitionItem(reg_topic_id(cluster), 0, reg.leader_epoch, reg.partition_epoch,
                               (1, 2), (-1, e1))
    # ... the proposal is on its way; broker 2 restarts with an empty disk, registers a new
    # incarnation and catches up on metadata before the session timeout would have fenced it.
    cluster.now += 100
    cluster.register(2, incarnation="inc-2-restarted")
    assert cluster.epochs[2] != e1
    resp, _ = cluster.heartbeat(2)
    assert not resp.is_fenced
    resp, recs = cluster.controller.alter_partition(
        AlterPartitionRequest(1, cluster.epochs[1], [stale]), cluster.now)
    return cluster, resp.results[0], recs


def reg_topic_id(cluster):
    return cluster.image.topics["t"].topic_id


def test_fixed_refuses_the_stale_broker_epoch_with_ineligible_replica(make_cluster):
    cluster, result, recs = _stale_expansion(make_cluster, isr_broker_epochs=True)
    assert result.error == Errors.INELIGIBLE_REPLICA and recs == []
    assert cluster.part("t").isr == (1,)
    # 1 fails: 2 is not in the ISR, so it is not elected (no unclean election by default).
    cluster.heartbeat(1, want_fence=True)
    assert cluster.part("t").leader != 2


def test_legacy_accepts_it_and_elects_the_emptied_replica_when_the_leader_fails(make_cluster):
    cluster, result, recs = _stale_expansion(make_cluster, isr_broker_epochs=False)
    assert result.error == Errors.NONE and recs
    assert cluster.part("t").isr == (1, 2)
    cluster.heartbeat(1, want_fence=True)
    assert cluster.part("t").leader == 2  # the replica whose log the restart emptied


@pytest.mark.parametrize("isr_broker_epochs", [True, False])
def test_a_current_epoch_is_accepted_either_way(make_cluster, isr_broker_epochs):
    cluster = make_cluster(ControllerConfig(isr_broker_epochs=isr_broker_epochs))
    cluster.start_brokers(1, 2)
    cluster.create("t", 1, 2)
    reg = cluster.part("t")
    item = AlterPartitionItem(reg_topic_id(cluster), 0, reg.leader_epoch, reg.partition_epoch,
                              (1, 2), (-1, cluster.epochs[2]))
    resp, _ = cluster.controller.alter_partition(
        AlterPartitionRequest(1, cluster.epochs[1], [item]), cluster.now)
    assert resp.results[0].error == Errors.NONE
