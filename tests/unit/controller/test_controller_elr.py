"""KIP-966 eligible leader replicas and unclean-shutdown registration, with exact interleavings.

The QuorumController is driven directly (explicit now_ms, no sockets, no sleeping). Each test
states the order of events the way a scenario would produce them: AlterPartition shrinks from
the leader, session expiry (tick past the timeout), re-registration of a new incarnation with
or without the clean-shutdown epoch, heartbeats that unfence.
"""

from __future__ import annotations

import pytest

from broker_app.controller.config import ControllerConfig
from broker_app.controller.errors import Errors
from broker_app.controller.messages import (
    AlterPartitionItem,
    AlterPartitionRequest,
    RegisterBrokerRequest,
)
from broker_app.controller.quorum_controller import QuorumController
from broker_app.metadata.image import MetadataImage
from broker_app.metadata.records import PartitionChange, decode_record, encode_record

TIMEOUT = ControllerConfig().session_timeout_ms


@pytest.fixture
def elr(make_cluster):
    """RF=3 topic t (replicas 1,2,3, leader 1), min.insync.replicas=2, ELR on."""
    c = make_cluster(ControllerConfig(eligible_leader_replicas=True))
    c.start_brokers(1, 2, 3)
    c.create("t", 1, 3, **{"min.insync.replicas": "2"})
    assert c.part("t").leader == 1 and c.part("t").isr == (1, 2, 3)
    return c


def alter(c, isr):
    reg = c.part("t")
    leader = reg.leader
    resp, recs = c.controller.alter_partition(
        AlterPartitionRequest(leader, c.epochs[leader], [AlterPartitionItem(
            c.image.topics["t"].topic_id, 0, reg.leader_epoch, reg.partition_epoch,
            tuple(isr))]), c.now,
    )  # fmt: skip
    assert resp.results[0].error == Errors.NONE, resp
    return recs


def expire(c, *dead):
    """Advance past the session timeout with every broker but `dead` heartbeating."""
    alive = [b for b in (1, 2, 3) if b not in dead]
    c.now += TIMEOUT // 2
    c.heartbeat_all(*alive)
    c.now += TIMEOUT // 2 + 1
    c.heartbeat_all(*alive)
    return c.tick(0)


def restart(c, broker, *, clean: bool):
    """A new incarnation of `broker` registers; a clean one carries its old epoch (marker)."""
    old = c.image.brokers[broker].epoch
    n = sum(1 for _ in c.log.replay())
    resp, recs = c.controller.register_broker(
        RegisterBrokerRequest(broker, f"inc-{broker}-{n}", "127.0.0.1", 9000 + broker,
                              previous_broker_epoch=old if clean else -1), c.now,
    )  # fmt: skip
    assert resp.error == Errors.NONE
    c.epochs[broker] = resp.broker_epoch
    return recs


def test_shrink_below_min_isr_moves_removed_replicas_to_elr(elr):
    alter(elr, (1, 2))  # 3 leaves: ISR 2 >= min 2, no ELR
    assert elr.part("t").elr == ()
    recs = alter(elr, (1,))  # 2 leaves: ISR 1 < min 2 -> 2 holds everything below the HW
    reg = elr.part("t")
    assert reg.isr == (1,) and reg.elr == (2,) and reg.leader == 1
    change = recs[-1]
    assert isinstance(change, PartitionChange) and change.eligible_leader_replicas == (2,)


def test_elr_member_elected_when_isr_is_empty(elr):
    alter(elr, (1, 2))
    alter(elr, (1,))
    expire(elr, 1)  # the last ISR member's session expires: ISR empty, 1 joins the ELR
    reg = elr.part("t")
    # 2 (ELR) is live: it is elected in the same batch, becomes the ISR alone, leaves the ELR.
    assert reg.leader == 2 and reg.isr == (2,) and reg.elr == (1,)
    assert 3 not in reg.elr  # 3 left the ISR while it was still at min.insync: not eligible


def test_elr_member_elected_when_it_comes_back_after_everything_was_fenced(elr):
    alter(elr, (1, 2))
    alter(elr, (1,))
    expire(elr, 1, 2, 3)
    reg = elr.part("t")
    assert reg.leader == -1 and reg.isr == () and set(reg.elr) == {1, 2}
    elr.heartbeat(3)  # not in ISR or ELR: stays a follower of nobody
    assert elr.part("t").leader == -1
    elr.heartbeat(2)  # an ELR member unfences: elected
    reg = elr.part("t")
    assert reg.leader == 2 and reg.isr == (2,) and reg.elr == (1,)


def test_unclean_shutdown_never_elected_while_an_elr_member_is_alive(elr):
    """L10: leader 1 alone in the ISR loses its tail in a crash and restarts before its
    session expires; 2 (ELR) holds the acknowledged records and must be the one elected."""
    alter(elr, (1, 2))
    alter(elr, (1,))  # 2 joins the ELR
    recs = restart(elr, 1, clean=False)  # the marker was missing: previous epoch -1
    reg = elr.part("t")
    assert reg.leader == 2 and reg.isr == (2,)
    assert 1 not in reg.elr and reg.last_known_elr == ()  # it has a leader
    assert any(isinstance(r, PartitionChange) for r in recs)
    elr.heartbeat(1)  # 1 unfences: it is live, but neither ISR nor ELR
    elr.tick(100)
    assert elr.part("t").leader == 2
    # Even when 2 is fenced later, 1 (unclean) is not elected: the partition waits for 2.
    expire(elr, 2)
    reg = elr.part("t")
    assert reg.leader == -1 and reg.isr == () and reg.elr == (2,)
    elr.heartbeat(2)
    assert elr.part("t").leader == 2


def test_unclean_shutdown_after_session_expiry_leaves_the_elr(elr):
    alter(elr, (1, 2))
    alter(elr, (1,))
    expire(elr, 1)  # fenced first (clean): 1 in the ELR, 2 elected
    assert elr.part("t").elr == (1,)
    restart(elr, 1, clean=False)
    reg = elr.part("t")
    assert reg.leader == 2 and reg.elr == ()


def test_clean_restart_keeps_elr_membership(elr):
    alter(elr, (1, 2))
    alter(elr, (1,))
    expire(elr, 1)
    restart(elr, 1, clean=True)  # the marker held the registered epoch
    assert elr.part("t").elr == (1,)


def test_last_known_leader_elected_when_isr_and_elr_are_empty(make_cluster):
    """Kafka 4.x balanced recovery: min.insync 1, the lone leader restarts uncleanly; nobody is
    in the ISR or ELR, so the last known leader leads again once it is back (unclean)."""
    c = make_cluster(ControllerConfig(eligible_leader_replicas=True))
    c.start_brokers(1, 2, 3)
    c.create("t", 1, 3, **{"min.insync.replicas": "1"})
    alter(c, (1,))  # 2 and 3 leave while the ISR stays at min.insync 1: not eligible
    restart(c, 1, clean=False)
    reg = c.part("t")
    assert reg.leader == -1 and reg.isr == () and reg.elr == () and reg.last_known_elr == (1,)
    c.heartbeat(2)
    c.tick(100)
    assert c.part("t").leader == -1  # 2 is live but was never eligible
    c.heartbeat(1)
    reg = c.part("t")
    assert reg.leader == 1 and reg.isr == (1,) and reg.last_known_elr == ()


def test_elr_cleared_as_isr_grows_back_to_min_insync(elr):
    alter(elr, (1, 2))
    alter(elr, (1,))
    expire(elr, 1)
    assert elr.part("t").isr == (2,) and elr.part("t").elr == (1,)
    alter(elr, (2, 3))  # 3 caught up with leader 2: ISR reaches min.insync 2
    reg = elr.part("t")
    assert reg.isr == (2, 3) and reg.elr == () and reg.last_known_elr == ()


def test_pre_elr_keeps_last_isr_member_and_elects_it_after_an_unclean_restart(make_cluster):
    """Kafka 3.9 (no ELR): L10's loss. The last ISR member restarts uncleanly and is the only
    eligible leader; the replica holding the acknowledged tail is not."""
    c = make_cluster(ControllerConfig(eligible_leader_replicas=False))
    c.start_brokers(1, 2, 3)
    c.create("t", 1, 3, **{"min.insync.replicas": "2"})
    alter(c, (1, 2))
    alter(c, (1,))
    assert c.part("t").elr == ()
    restart(c, 1, clean=False)
    reg = c.part("t")
    assert reg.leader == -1 and reg.isr == (1,)
    c.heartbeat(1)
    assert c.part("t").leader == 1


def test_unclean_election_clears_elr(make_cluster):
    c = make_cluster(ControllerConfig(eligible_leader_replicas=True))
    c.start_brokers(1, 2, 3)
    c.create("t", 1, 3, **{"min.insync.replicas": "2",
                           "unclean.leader.election.enable": "true"})  # fmt: skip
    alter(c, (1, 2))
    alter(c, (1,))
    restart(c, 1, clean=False)  # 2 (ELR) elected before unclean is ever considered
    assert c.part("t").leader == 2
    expire(c, 2)  # 2 gone: ISR empty, ELR {2} fenced; 1 and 3 are live but not eligible
    reg = c.part("t")
    assert reg.leader in (1, 3) and reg.isr == (reg.leader,) and reg.elr == ()


def test_elr_fields_survive_the_metadata_log_and_replay(elr):
    alter(elr, (1, 2))
    alter(elr, (1,))
    expire(elr, 1)
    replayed = MetadataImage().apply_all(elr.log.replay())
    assert replayed == elr.image
    for _, rec in elr.log.replay():
        assert decode_record(encode_record(rec)) == rec
    state = elr.image.to_json()["topics"]["t"]["partitions"]["0"]
    assert state["elr"] == [1] and "last_known_elr" in state
    restarted = QuorumController(elr.controller.config, elr.log)
    assert restarted.image == elr.image


def test_old_records_without_elr_fields_still_decode():
    raw = b'{"type":"Partition","topic_id":"00000000-0000-0000-0000-000000000001",' \
          b'"partition":0,"replicas":[1],"isr":[1],"leader":1}'
    rec = decode_record(raw)
    assert rec.eligible_leader_replicas == () and rec.last_known_elr == ()



def test_builder_keeps_a_live_elr_leader_and_makes_it_the_isr():
    from broker_app.controller.election import PartitionChangeBuilder
    from broker_app.metadata.image import PartitionRegistration

    reg = PartitionRegistration((1, 2, 3), (), 2, elr=(2, 3))
    change = PartitionChangeBuilder("t", 0, reg, lambda r: r != 1, elr_enabled=True,
                                    min_isr=2).build()  # fmt: skip
    assert change is not None and change.leader is None  # 2 keeps leading
    assert change.isr == (2,) and change.eligible_leader_replicas == (3,)
    off = PartitionChangeBuilder("t", 0, PartitionRegistration((1, 2), (1,), 1), lambda r: False,
                                 elr_enabled=False, min_isr=2).build()  # fmt: skip
    assert off is not None and off.leader == -1 and off.isr is None  # KIP-841 without ELR


def test_min_isr_above_the_replication_factor_is_capped_for_the_elr(make_cluster):
    """Kafka's getTopicEffectiveMinIsr (KAFKA-15583): min(min.insync.replicas, RF). With
    min.insync=5 on RF=3 uncapped, a shrink to 2 would be "below min ISR" and move the
    leaver to the ELR; capped at 3 it is below too, but a full ISR of 3 is not."""
    c = make_cluster(ControllerConfig(eligible_leader_replicas=True))
    c.start_brokers(1, 2, 3)
    c.create("t", 1, 3, **{"min.insync.replicas": "5"})
    assert c.controller._min_isr(c.image.topics["t"]) == 3
    alter(c, (1, 2))  # 2 < 3: the leaver holds everything below the HW
    assert c.part("t").elr == (3,)


def test_min_isr_falls_back_to_the_cluster_dynamic_default(make_cluster):
    """A topic without min.insync.replicas takes the cluster-wide dynamic config (KIP-226)
    before the static default, as Kafka's ConfigurationControlManager resolves it."""
    c = make_cluster(ControllerConfig(eligible_leader_replicas=True, min_insync_replicas=1))
    c.start_brokers(1, 2, 3)
    c.create("t", 1, 3)
    topic = c.image.topics["t"]
    assert c.controller._min_isr(topic) == 1
    c.controller.image.broker_configs = {"": {"min.insync.replicas": "2"}}
    assert c.controller._min_isr(topic) == 2
