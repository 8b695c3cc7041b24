"""When a new Raft leader starts acting as the active controller (the real
RaftQuorumController, three voters on the seeded in-test network).

Exact interleaving: both followers' fetches are parked at the active controller, then their
links to it are cut one way (follower -> leader); it appends a CreateTopics record and the
parked fetches bring it to both followers, whose next fetches never arrive: the record is in
every log, not committed (the followers' high watermarks are below it). The leader dies. A
follower wins; its LeaderChange commits the record of the old epoch (Raft 5.4.2).
activate_caught_up=True (Kafka: the controller is told it leads only once it has read up to
its epoch start): its active image has the topic. False (`--controller-activation
on-election`, a hypothetical bug switch): active at once on the image it had applied, without
the topic, which its committed image gets later and the active image never (an active
controller does not replay the log). 10 seeds each.
"""

from __future__ import annotations

import pytest

from tests.unit.raft.controller_net import ControllerNet, create, setup_topic


def failover_with_a_record_in_flight(seed: int, caught_up: bool):
    net = ControllerNet(seed, activate_caught_up=caught_up)
    ctl = setup_topic(net, "t")
    leader = ctl.config.node_id
    b, c = (i for i in sorted(net.nodes) if i != leader)

    def parked() -> set[int]:
        return {p.src for p in getattr(ctl.client.quorum.state, "parked", [])}

    assert net.run_until(lambda: parked() == {b, c})
    net.blocked = {(b, leader), (c, leader)}
    x = create(ctl, "x")
    end = ctl.client.log.end_offset
    assert net.run_until(lambda: all(net.nodes[i].log.end_offset >= end for i in (b, c)))
    assert not x.done and ctl.client.high_watermark < end
    net.crash(leader)
    net.partition({leader}, {b, c})
    for i in (b, c):
        hw = net.nodes[i].client.high_watermark
        assert hw is None or hw < end  # neither follower knows it is committed
    new = net.active()
    assert net.run_until(lambda: new.committed_offset >= end)
    assert "x" in new.committed_image.topics  # committed by the new leader's epoch
    return new


@pytest.mark.parametrize("seed", range(10))
def test_caught_up_activation_acts_on_the_record_of_the_old_epoch(seed):
    new = failover_with_a_record_in_flight(seed, caught_up=True)
    assert "x" in new.controller().image.topics


@pytest.mark.parametrize("seed", range(10))
def test_on_election_activation_never_sees_it(seed):
    new = failover_with_a_record_in_flight(seed, caught_up=False)
    assert "x" not in new.controller().image.topics
