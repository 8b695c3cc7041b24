"""KIP-841 (Kafka 3.3): the controller refuses to add a fenced broker to an ISR.

Broker 2 left the ISR; its heartbeats stop reaching the controller, which fences it, while
its fetches still reach leader 1, which sees it caught up and proposes ISR [1, 2]. Fixed
(isr_eligibility): INELIGIBLE_REPLICA, the ISR stays [1]. Legacy (< 3.3): the fenced broker is
in the ISR again; if it then loses what it had not flushed and comes back, it is electable
with less than the leader acknowledged (L20).
"""

from __future__ import annotations

from broker_app.controller.config import ControllerConfig
from broker_app.controller.errors import Errors
from broker_app.controller.messages import AlterPartitionItem, AlterPartitionRequest


def _fenced_expansion(make_cluster, isr_eligibility: bool):
    cluster = make_cluster(ControllerConfig(isr_eligibility=isr_eligibility))
    cluster.start_brokers(1, 2)
    cluster.create("t", 1, 2)
    reg = cluster.part("t")
    assert reg.leader == 1 and reg.isr == (1, 2)
    cluster.heartbeat(2, want_fence=True)  # as a session expiry does: 2 leaves the ISR
    reg = cluster.part("t")
    assert reg.isr == (1,)
    topic_id = cluster.image.topics["t"].topic_id
    expand = AlterPartitionItem(topic_id, 0, reg.leader_epoch, reg.partition_epoch, (1, 2),
                                (-1, cluster.epochs[2]))
    resp, recs = cluster.controller.alter_partition(
        AlterPartitionRequest(1, cluster.epochs[1], [expand]), cluster.now)
    return cluster, resp.results[0], recs


def test_fixed_refuses_a_fenced_member_with_ineligible_replica(make_cluster):
    cluster, result, recs = _fenced_expansion(make_cluster, isr_eligibility=True)
    assert result.error == Errors.INELIGIBLE_REPLICA and recs == []
    assert cluster.part("t").isr == (1,)


def test_legacy_admits_the_fenced_member(make_cluster):
    cluster, result, recs = _fenced_expansion(make_cluster, isr_eligibility=False)
    assert result.error == Errors.NONE and recs
    assert cluster.part("t").isr == (1, 2)


def test_before_kip_841_only_a_shutting_down_broker_stays_out(make_cluster):
    """isr-eligibility false lets a fenced broker join; one in controlled shutdown still may
    not (MetadataImage.may_join_isr: ZooKeeper-era controlled shutdown stopped its fetchers).
    The leader's ReplicaManager asks the same question of its image."""
    cluster = make_cluster(ControllerConfig(isr_eligibility=False))
    cluster.start_brokers(1, 2, 3)
    image = cluster.controller.image
    assert image.may_join_isr(2) and image.may_join_isr(2, fenced_ok=True)
    cluster.heartbeat(2, want_fence=True)
    image = cluster.controller.image
    assert not image.may_join_isr(2) and image.may_join_isr(2, fenced_ok=True)
    cluster.heartbeat(3, want_shutdown=True)
    image = cluster.controller.image
    assert not image.may_join_isr(3) and not image.may_join_isr(3, fenced_ok=True)
    assert not image.may_join_isr(9, fenced_ok=True)  # never registered
