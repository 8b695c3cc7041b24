"""QuorumController with explicit now_ms: registration, fencing, elections, ISR commits."""

from __future__ import annotations

import pytest

from broker_app.controller.config import ControllerConfig
from broker_app.controller.errors import Errors
from broker_app.controller.messages import (
    AlterPartitionItem,
    AlterPartitionRequest,
    CreateTopicsRequest,
    ElectLeadersRequest,
    NewTopic,
    ReassignPartitionsRequest,
)
from broker_app.metadata.records import FenceBroker, RegisterBroker, UnfenceBroker
from broker_app.raft.file_log import FileQuorumStateStore, FileReplicatedLog
from tests.unit.controller.one_voter import OneVoter

# --- registration and heartbeats -------------------------------------------------------------


def test_registration_epoch_is_record_offset_and_restart_gets_a_larger_one(make_cluster):
    c = make_cluster()
    r1, recs = c.register(1)
    assert r1.error == Errors.NONE and r1.broker_epoch == 0
    assert recs == [RegisterBroker(1, 0, "inc-1", "127.0.0.1", 9001)]
    assert c.image.brokers[1].fenced
    # A retry of the same incarnation (lost response) gets the same epoch, writes nothing.
    again, recs = c.register(1)
    assert again.broker_epoch == 0 and recs == []
    c.register(2)
    restarted, _ = c.register(1, incarnation="inc-1-restarted")
    assert restarted.broker_epoch > r1.broker_epoch
    assert c.image.brokers[1].epoch == restarted.broker_epoch


def test_unfenced_only_once_caught_up_to_its_registration(make_cluster):
    c = make_cluster()
    c.register(1)
    resp, recs = c.heartbeat(1, offset=-1)
    assert resp.is_fenced and not resp.is_caught_up and recs == []
    resp, recs = c.heartbeat(1, offset=0)
    assert resp.error == Errors.NONE and resp.is_caught_up and not resp.is_fenced
    assert recs == [UnfenceBroker(1, 0)]


def test_heartbeat_errors_for_unknown_broker_and_stale_epoch(cluster):
    resp, _ = cluster.heartbeat(9, epoch=0)
    assert resp.error == Errors.BROKER_ID_NOT_REGISTERED
    resp, recs = cluster.heartbeat(1, epoch=cluster.epochs[1] + 100)
    assert resp.error == Errors.STALE_BROKER_EPOCH and recs == []


def test_bad_registrations_are_rejected_with_a_reason(make_cluster):
    c = make_cluster()
    from broker_app.controller.messages import RegisterBrokerRequest

    for req, code in [
        (RegisterBrokerRequest(-1, "i", "h", 1), Errors.INVALID_REQUEST),
        (RegisterBrokerRequest(1, "i", "", 1), Errors.INVALID_REQUEST),
        (RegisterBrokerRequest(1, "i", "h", 70000), Errors.INVALID_REQUEST),
        (RegisterBrokerRequest(1, "i", "h", 1, cluster_id="other"), Errors.INCONSISTENT_CLUSTER_ID),
    ]:
        resp, recs = c.controller.register_broker(req, 0)
        assert resp.error == code and resp.message and recs == []
    assert c.image.brokers == {}


def test_a_broker_may_share_the_controllers_node_id(make_cluster):
    """Combined mode (server/combined.py): one node.id for both roles, as Kafka allows (its
    ClusterControlManager.registerBroker has no such check)."""
    c = make_cluster()
    from broker_app.controller.messages import RegisterBrokerRequest

    resp, recs = c.controller.register_broker(
        RegisterBrokerRequest(c.controller.config.node_id, "i", "h", 1), 0)
    assert resp.error == Errors.NONE and recs


# --- fencing on session expiry --------------------------------------------------------------


def test_session_expiry_fences_moves_leadership_and_shrinks_isr(cluster):
    res = cluster.create("t", 1, 3)
    assert res.error == Errors.NONE
    before = cluster.part("t")
    assert before.leader == before.replicas[0] == 1 and before.isr == (1, 2, 3)
    cluster.tick(5000)
    cluster.heartbeat_all(2, 3)
    assert cluster.tick(4000) == []  # 9000 ms since broker 1's heartbeat: not yet > timeout
    recs = cluster.tick(1)
    assert recs[0] == FenceBroker(1, cluster.epochs[1], False)
    after = cluster.part("t")
    assert cluster.image.brokers[1].fenced
    assert after.leader == 2 and after.isr == (2, 3)
    assert after.leader_epoch == before.leader_epoch + 1
    assert after.partition_epoch == before.partition_epoch + 1


def test_last_isr_member_stays_in_isr_and_leads_again_on_unfence(cluster_pre_elr):
    cluster = cluster_pre_elr  # KIP-841 without ELR (Kafka 3.x); ELR: test_controller_elr.py
    cluster.create("t", 1, 3)
    for b in (2, 3, 1):  # fence 2, then 3, then 1: the ISR shrinks to [1], then leaderless
        cluster.heartbeat(b, want_fence=True)
    reg = cluster.part("t")
    assert reg.leader == -1 and reg.isr == (1,)  # KIP-841: the last member is kept
    epoch = reg.leader_epoch
    resp, _ = cluster.heartbeat(2)  # 2 is back, but not in the ISR: no clean leader
    assert not resp.is_fenced and cluster.part("t").leader == -1
    cluster.heartbeat(1)
    reg = cluster.part("t")
    assert reg.leader == 1 and reg.leader_epoch == epoch + 1


def test_unclean_election_off_leaves_partition_offline(cluster):
    cluster.create("t", 1, 3)
    cluster.heartbeat(2, want_fence=True)
    cluster.heartbeat(3, want_fence=True)
    cluster.heartbeat(1, want_fence=True)
    cluster.heartbeat(2)
    cluster.tick(100)
    assert cluster.part("t").leader == -1


def test_unclean_election_topic_config_elects_out_of_sync_replica(cluster):
    cluster.create("t", 1, 3, **{"unclean.leader.election.enable": "true"})
    cluster.heartbeat(2, want_fence=True)
    cluster.heartbeat(3, want_fence=True)
    cluster.heartbeat(1, want_fence=True)
    assert cluster.part("t").leader == -1
    cluster.heartbeat(3)  # out of sync replica comes back: unclean election
    reg = cluster.part("t")
    assert reg.leader == 3 and reg.isr == (3,)


def test_unclean_election_controller_default(make_cluster):
    c = make_cluster(ControllerConfig(unclean_leader_election=True))
    c.start_brokers(1, 2)
    c.create("t", 1, 2)
    c.heartbeat(2, want_fence=True)  # ISR [1]
    c.heartbeat(1, want_fence=True)  # leaderless, ISR [1]
    c.heartbeat(2)
    assert c.part("t").leader == 2 and c.part("t").isr == (2,)


def test_restart_of_a_leader_reregisters_fenced_and_loses_leadership(cluster):
    cluster.create("t", 1, 3)
    resp, _ = cluster.register(1, incarnation="second-life")
    assert resp.broker_epoch == cluster.epochs[1]
    reg = cluster.part("t")
    assert cluster.image.brokers[1].fenced
    assert reg.leader == 2 and reg.isr == (2, 3)


def test_controlled_shutdown_moves_leadership_then_waits_for_the_others_to_learn_it(cluster):
    # Kafka's BrokerHeartbeatManager: SHUTDOWN_NOW only once every active broker's metadata
    # offset reached the batch that moved the leaderships (controlledShutdownOffset).
    cluster.create("t", 3, 3)
    before = cluster.controller.image.offset
    resp, recs = cluster.heartbeat(2, want_shutdown=True)
    assert recs and resp.is_fenced and not resp.should_shutdown
    for p in range(3):
        reg = cluster.part("t", p)
        assert reg.leader != 2 and 2 not in reg.isr
    cluster.heartbeat(1)  # broker 1 has the moved leaderships, broker 3 not yet
    cluster.heartbeat(3, offset=before)
    resp, recs = cluster.heartbeat(2, want_shutdown=True)
    assert not resp.should_shutdown and recs == []
    cluster.heartbeat(3)
    resp, _ = cluster.heartbeat(2, want_shutdown=True)
    assert resp.should_shutdown


def test_controlled_shutdown_of_a_broker_that_leads_nothing_is_granted_at_once(cluster):
    cluster.create("t", 1, 3)
    follower = cluster.part("t").replicas[2]
    resp, recs = cluster.heartbeat(follower, want_shutdown=True)
    assert resp.should_shutdown and follower not in cluster.part("t").isr and recs


def test_controlled_shutdown_of_a_sole_replica_leaves_its_partition_leaderless(cluster):
    # No other replica may lead: the partition goes leaderless (Kafka elects among active
    # brokers only), so the shutdown is not held back forever.
    cluster.create("solo", 1, 1)
    owner = cluster.part("solo").leader
    cluster.heartbeat_all(1, 2, 3)
    resp, _ = cluster.heartbeat(owner, want_shutdown=True)
    assert cluster.part("solo").leader == -1
    cluster.heartbeat_all(*(b for b in (1, 2, 3) if b != owner))
    resp, _ = cluster.heartbeat(owner, want_shutdown=True)
    assert resp.should_shutdown


# --- topics ------------------------------------------------------------------------------


def test_placement_spreads_leaders_and_replicas_evenly(cluster):
    res = cluster.create("t", 6, 3)
    assert res.num_partitions == 6 and res.replication_factor == 3
    leaders = [cluster.part("t", p).leader for p in range(6)]
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3]
    followers_of_1 = {cluster.part("t", p).replicas[1] for p in range(6) if leaders[p] == 1}
    assert followers_of_1 == {2, 3}  # the shift varies the first follower
    # One-partition topics do not all land on broker 1.
    for name in ("a", "b", "c"):
        cluster.create(name, 1, 1)
    assert {cluster.part(n).leader for n in ("a", "b", "c")} == {1, 2, 3}


def test_create_topics_validation(cluster):
    bad = {
        "rf": cluster.create("x", 1, 4),
        "parts": cluster.create("y", 0, 1),
        "huge": cluster.create("h", 2**31 - 1, 1),
        "name": cluster.create("bad name", 1, 1),
        "cfg": cluster.create("z", 1, 1, **{"no.such.config": "1"}),
        "unclean": cluster.create("w", 1, 1, **{"unclean.leader.election.enable": "maybe"}),
    }
    assert bad["rf"].error == Errors.INVALID_REPLICATION_FACTOR and "only 3" in bad["rf"].message
    assert bad["parts"].error == Errors.INVALID_PARTITIONS == bad["huge"].error
    assert bad["name"].error == Errors.INVALID_TOPIC_EXCEPTION
    assert bad["cfg"].error == Errors.INVALID_CONFIG
    assert bad["unclean"].error == Errors.INVALID_CONFIG
    assert cluster.image.topics == {}
    assert cluster.create("ok", 1, 1).error == Errors.NONE
    assert cluster.create("ok", 1, 1).error == Errors.TOPIC_ALREADY_EXISTS


def test_rf_counts_only_unfenced_brokers(cluster):
    cluster.heartbeat(3, want_fence=True)
    assert cluster.create("t", 1, 3).error == Errors.INVALID_REPLICATION_FACTOR
    assert cluster.create("t", 1, 2).error == Errors.NONE
    assert 3 not in cluster.part("t").replicas


def test_manual_assignment_and_validate_only(cluster):
    resp, recs = cluster.controller.create_topics(
        CreateTopicsRequest([NewTopic("m", assignments={0: (3, 1), 1: (2, 3)})]), 0
    )
    assert resp.results[0].error == Errors.NONE
    assert cluster.part("m", 0).replicas == (3, 1) and cluster.part("m", 0).leader == 3
    resp, recs = cluster.controller.create_topics(
        CreateTopicsRequest([NewTopic("bad", assignments={0: (1, 1)})]), 0
    )
    assert resp.results[0].error == Errors.INVALID_REPLICA_ASSIGNMENT and recs == []
    resp, recs = cluster.controller.create_topics(
        CreateTopicsRequest([NewTopic("v", 2, 2)], validate_only=True), 0
    )
    assert resp.results[0].error == Errors.NONE and recs == [] and "v" not in cluster.image.topics


# --- AlterPartition ----------------------------------------------------------------------


def _alter(cluster, broker, isr, topic="t", p=0, **over):
    reg = cluster.part(topic, p)
    item = AlterPartitionItem(
        cluster.image.topics[topic].topic_id,
        p,
        over.pop("leader_epoch", reg.leader_epoch),
        over.pop("partition_epoch", reg.partition_epoch),
        tuple(isr),
        over.pop("epochs", None),
    )
    resp, recs = cluster.controller.alter_partition(
        AlterPartitionRequest(broker, over.pop("broker_epoch", cluster.epochs.get(broker, -1)),
                              [item]),
        cluster.now,
    )  # fmt: skip
    return resp, recs


def test_alter_partition_commits_isr_and_bumps_partition_epoch_only(cluster):
    cluster.create("t", 1, 3)
    before = cluster.part("t")
    resp, recs = _alter(cluster, 1, [1, 2])
    r = resp.results[0]
    assert resp.error == Errors.NONE and r.error == Errors.NONE
    after = cluster.part("t")
    assert after.isr == (1, 2) and r.isr == (1, 2)
    assert after.partition_epoch == before.partition_epoch + 1 == r.partition_epoch
    assert after.leader_epoch == before.leader_epoch  # no leader change, no leader epoch bump
    resp, _ = _alter(cluster, 1, [1, 2, 3])  # expansion
    assert resp.results[0].error == Errors.NONE and cluster.part("t").isr == (1, 2, 3)


def test_alter_partition_validation(cluster):
    cluster.create("t", 1, 3)
    reg = cluster.part("t")
    cases = [
        (dict(broker=1, isr=[1, 2], broker_epoch=999), "top", Errors.STALE_BROKER_EPOCH),
        (dict(broker=9, isr=[1, 2]), "top", Errors.STALE_BROKER_EPOCH),
        (dict(broker=1, isr=[1], leader_epoch=reg.leader_epoch - 1), 0,
         Errors.FENCED_LEADER_EPOCH),
        (dict(broker=2, isr=[2, 1]), 0, Errors.INVALID_REQUEST),  # not the leader
        (dict(broker=1, isr=[1], partition_epoch=reg.partition_epoch - 1), 0,
         Errors.INVALID_UPDATE_VERSION),
        (dict(broker=1, isr=[2, 3]), 0, Errors.INVALID_REQUEST),  # leader missing
        (dict(broker=1, isr=[1, 1]), 0, Errors.INVALID_REQUEST),
        (dict(broker=1, isr=[1, 7]), 0, Errors.INVALID_REQUEST),  # not a replica
        (dict(broker=1, isr=[1, 2], epochs=(cluster.epochs[1], 12345)), 0,
         Errors.INELIGIBLE_REPLICA),
    ]  # fmt: skip
    for kw, level, code in cases:
        broker, isr = kw.pop("broker"), kw.pop("isr")
        resp, recs = _alter(cluster, broker, isr, **kw)
        got = resp.error if level == "top" else resp.results[0].error
        assert got == code, (broker, isr, kw, resp)
        assert recs == []
    assert cluster.part("t") == reg


def test_alter_partition_rejects_fenced_member(cluster):
    cluster.create("t", 1, 3)
    _alter(cluster, 1, [1, 2])
    cluster.heartbeat(3, want_fence=True)
    resp, recs = _alter(cluster, 1, [1, 2, 3])
    assert resp.results[0].error == Errors.INELIGIBLE_REPLICA and recs == []


def test_unknown_topic_id_in_alter_partition(cluster):
    import uuid

    resp, _ = cluster.controller.alter_partition(
        AlterPartitionRequest(1, cluster.epochs[1],
                              [AlterPartitionItem(uuid.uuid4(), 0, 0, 0, (1,))]),
        0,
    )  # fmt: skip
    assert resp.results[0].error == Errors.UNKNOWN_TOPIC_ID


# --- elections -------------------------------------------------------------------------------


def test_preferred_election_moves_leadership_back(cluster):
    cluster.create("t", 1, 3)
    cluster.heartbeat(1, want_fence=True)
    assert cluster.part("t").leader == 2
    resp, _ = cluster.controller.elect_leaders(ElectLeadersRequest(0, [("t", 0)]), 0)
    assert resp.results[0].error == Errors.PREFERRED_LEADER_NOT_AVAILABLE  # 1 is fenced
    cluster.heartbeat(1)
    resp, _ = cluster.controller.elect_leaders(ElectLeadersRequest(0, [("t", 0)]), 0)
    assert resp.results[0].error == Errors.PREFERRED_LEADER_NOT_AVAILABLE  # not in the ISR
    _alter(cluster, 2, [2, 3, 1])
    epoch = cluster.part("t").leader_epoch
    resp, recs = cluster.controller.elect_leaders(ElectLeadersRequest(0, [("t", 0)]), 0)
    assert resp.results[0].error == Errors.NONE and len(recs) == 1
    assert cluster.part("t").leader == 1 and cluster.part("t").leader_epoch == epoch + 1
    resp, recs = cluster.controller.elect_leaders(ElectLeadersRequest(0, [("t", 0), ("u", 0)]), 0)
    assert [r.error for r in resp.results] == [
        Errors.ELECTION_NOT_NEEDED, Errors.UNKNOWN_TOPIC_OR_PARTITION,
    ]  # fmt: skip
    assert recs == []


def test_unclean_elect_leaders_request(cluster):
    cluster.create("t", 1, 3)
    for b in (2, 3, 1):
        cluster.heartbeat(b, want_fence=True)
    cluster.heartbeat(3)
    assert cluster.part("t").leader == -1
    resp, _ = cluster.controller.elect_leaders(ElectLeadersRequest(1, None), 0)
    assert [(r.topic, r.partition, r.error) for r in resp.results] == [("t", 0, Errors.NONE)]
    assert cluster.part("t").leader == 3 and cluster.part("t").isr == (3,)
    resp, _ = cluster.controller.elect_leaders(ElectLeadersRequest(7, None), 0)
    assert resp.error == Errors.INVALID_REQUEST


def test_automatic_rebalance_is_on_by_default_every_300_s() -> None:
    """auto.leader.rebalance.enable is true and leader.imbalance.check.interval.seconds 300 in
    every Kafka release (issue 27 item 6: it was off here)."""
    config = ControllerConfig()
    assert config.auto_leader_rebalance is True
    assert config.leader_imbalance_check_interval_ms == 300_000
    assert config.leader_imbalance_per_broker_percentage == 10


@pytest.mark.parametrize("interval_ms", [1000, None])
def test_automatic_rebalance_on_timer(make_cluster, interval_ms):
    c = make_cluster(ControllerConfig() if interval_ms is None else
                     ControllerConfig(leader_imbalance_check_interval_ms=interval_ms))
    interval_ms = interval_ms or 300_000
    c.start_brokers(1, 2, 3)
    c.create("t", 3, 3)
    c.heartbeat(1, want_fence=True)
    c.heartbeat(1)
    for p in range(3):
        reg = c.part("t", p)
        leader = reg.leader
        c.controller.alter_partition(
            AlterPartitionRequest(leader, c.epochs[leader], [AlterPartitionItem(
                c.image.topics["t"].topic_id, p, reg.leader_epoch, reg.partition_epoch,
                reg.isr + (1,))]), 0,
        )  # fmt: skip
    moved = [p for p in range(3) if c.part("t", p).preferred_leader == 1]
    assert all(c.part("t", p).leader != 1 for p in moved)
    c.tick(0)  # arms the timer
    armed = c.now
    while c.now + 900 < armed + interval_ms:  # heartbeats keep the brokers' sessions
        c.heartbeat_all(1, 2, 3)
        c.tick(900)
        assert all(c.part("t", p).leader != 1 for p in moved)  # not yet
    c.heartbeat_all(1, 2, 3)
    c.tick(armed + interval_ms - c.now)
    assert all(c.part("t", p).leader == 1 for p in moved)


# --- reassignment -----------------------------------------------------------------------------


def test_reassignment_adds_waits_for_isr_then_removes(make_cluster):
    c = make_cluster()
    c.start_brokers(1, 2, 3, 4)
    c.controller.create_topics(CreateTopicsRequest([NewTopic("t", assignments={0: (1, 2)})]), 0)
    resp, _ = c.controller.reassign_partitions(ReassignPartitionsRequest([("t", 0, (3, 4))]), 0)
    assert resp.results[0].error == Errors.NONE
    reg = c.part("t")
    assert reg.replicas == (3, 4, 1, 2) and reg.adding_replicas == (3, 4)
    assert reg.removing_replicas == (1, 2) and reg.leader == 1
    _alter(c, 1, [1, 2, 3])
    assert c.part("t").is_reassigning
    _alter(c, 1, [1, 2, 3, 4])
    reg = c.part("t")
    assert reg.replicas == (3, 4) and not reg.is_reassigning
    assert reg.isr == (3, 4) and reg.leader == 3
    resp, _ = c.controller.reassign_partitions(ReassignPartitionsRequest([("t", 0, None)]), 0)
    assert resp.results[0].error == Errors.NO_REASSIGNMENT_IN_PROGRESS
    resp, _ = c.controller.reassign_partitions(ReassignPartitionsRequest([("t", 0, (9,))]), 0)
    assert resp.results[0].error == Errors.INVALID_REPLICA_ASSIGNMENT


# --- durability --------------------------------------------------------------------------------


def test_largest_topic_fits_one_metadata_batch(tmp_path):
    """On the Raft log's files, as a controller process keeps it (8 MiB batches)."""
    from broker_app.controller.quorum_controller import MAX_PARTITIONS_PER_TOPIC

    voter = OneVoter(raft_log=FileReplicatedLog(tmp_path))
    voter.start_brokers(1, 2, 3)
    resp, _ = voter.raft.create_topics(
        CreateTopicsRequest([NewTopic("wide", MAX_PARTITIONS_PER_TOPIC, 3)]), 0)
    voter.commit()
    assert resp.results[0].error == Errors.NONE
    assert len(voter.image.topics["wide"].partitions) == MAX_PARTITIONS_PER_TOPIC
    voter.raft_log.close()


def test_restart_replays_the_log_to_the_same_image(tmp_path):
    """A lone controller restarted on its files: the same committed image, the next Raft
    epoch, and live brokers get a fresh session instead of being fenced at once."""
    voter = OneVoter(raft_log=FileReplicatedLog(tmp_path), store=FileQuorumStateStore(tmp_path))
    voter.start_brokers(1, 2, 3)
    voter.raft.create_topics(CreateTopicsRequest([NewTopic(
        "t", 3, 3, configs={"min.insync.replicas": "2"})]), 0)  # fmt: skip
    voter.commit()
    image, epoch = voter.image, voter.client.epoch
    voter.raft_log.close()
    again = OneVoter(raft_log=FileReplicatedLog(tmp_path), store=FileQuorumStateStore(tmp_path))
    assert again.image == image
    assert again.image.topics["t"].configs == {"min.insync.replicas": "2"}
    assert again.client.epoch == epoch + 1
    end = again.raft.metadata_log.end_offset
    again.raft.tick(10**9)
    assert again.raft.metadata_log.end_offset == end  # nobody fenced
    again.raft_log.close()


def test_one_create_topics_request_creates_at_most_its_partition_budget(cluster):
    cap = cluster.controller.config.max_partitions_per_create_request
    topics = [NewTopic("a", cap - 10, 1), NewTopic("b", 10, 1), NewTopic("c", 1, 1)]
    resp, _recs = cluster.controller.create_topics(CreateTopicsRequest(topics), 0)
    errors = {r.name: r.error for r in resp.results}
    assert errors == {"a": Errors.NONE, "b": Errors.NONE, "c": Errors.INVALID_PARTITIONS}
