"""RaftQuorumController over the seeded in-test Raft network (tests/unit/raft/net.py):
the active controller answers only committed metadata, failover keeps it, and a deposed
leader's uncommitted record never reaches a broker."""

from __future__ import annotations

import pytest

from broker_app.controller.errors import Errors
from broker_app.controller.messages import (
    CreateTopicsRequest,
    HeartbeatRequest,
    NewTopic,
    RegisterBrokerRequest,
)
from broker_app.controller.raft_metadata_log import NotControllerError
from tests.unit.raft.controller_net import (
    BROKER,
    ControllerNet,
    broker_view,
    create,
    register,
    setup_topic,
)


def test_answers_wait_for_commit_and_standbys_apply_committed_data() -> None:
    net = ControllerNet(seed=1)
    ctl = setup_topic(net)
    net.run_for(200)
    for c in net.controllers.values():
        assert "t" in c.committed_image.topics
        assert c.committed_image.brokers[BROKER].fenced is False
        assert "t" in broker_view(c).image.topics  # standbys serve committed metadata too
    standby = next(c for c in net.controllers.values() if c is not ctl)
    with pytest.raises(NotControllerError) as e:
        create(standby, "u")
    assert e.value.error == Errors.NOT_CONTROLLER and e.value.leader_id == ctl.config.node_id


def test_failover_of_the_active_controller_keeps_committed_metadata() -> None:
    net = ControllerNet(seed=2)
    old = setup_topic(net)
    epoch_before = old.committed_image.brokers[BROKER].epoch
    net.crash(old.config.node_id)
    new = net.active()
    assert new is not old and new.client.epoch > old.client.epoch
    assert "t" in new.active.image.topics and new.active.image == new.committed_image
    # The same incarnation re-registering keeps its epoch: the registration survived.
    again = register(new)
    assert net.run_until(lambda: again.done)
    assert again.value.broker_epoch == epoch_before
    more = create(new, "u")
    assert net.run_until(lambda: more.done) and more.error is None
    net.restart(old.config.node_id)
    net.run_for(3000)
    back = net.controllers[old.config.node_id]
    assert not back.is_active and {"t", "u"} <= set(back.committed_image.topics)


def test_a_deposed_leaders_uncommitted_record_never_reaches_brokers() -> None:
    net = ControllerNet(seed=3)
    old = setup_topic(net)
    old_id = old.config.node_id
    net.isolate(old_id)
    doomed = create(old, "doomed")  # appended on the old leader only
    net.run_for(50)
    assert not doomed.done
    assert "doomed" in old.active.image.topics  # its own uncommitted view
    assert "doomed" not in broker_view(old).image.topics  # fetches stop at the HW
    assert "doomed" not in old.committed_image.topics
    others = [c for i, c in net.controllers.items() if i != old_id]
    assert net.run_until(lambda: any(c.is_active for c in others))
    new = next(c for c in others if c.is_active)
    assert net.run_until(lambda: doomed.done)  # check quorum deposes it, or the new epoch
    assert doomed.error is not None and doomed.error.error == Errors.NOT_CONTROLLER
    assert not old.is_active
    net.heal()
    kept = create(new, "kept")
    assert net.run_until(lambda: kept.done) and kept.error is None
    net.run_for(2000)
    for c in net.controllers.values():
        assert "doomed" not in c.committed_image.topics
        assert "doomed" not in broker_view(c).image.topics
        assert {"t", "kept"} <= set(broker_view(c).image.topics)


def test_only_the_active_controller_ticks() -> None:
    net = ControllerNet(seed=4)
    ctl = setup_topic(net)
    standby = next(c for c in net.controllers.values() if c is not ctl)
    end = standby.metadata_log.end_offset
    standby.tick(10**9)  # far past any session: a standby must not fence anybody
    assert standby.metadata_log.end_offset == end
    ctl.tick(0)
    ctl.tick(10**9)
    net.run_for(500)
    for c in net.controllers.values():
        assert c.committed_image.brokers[BROKER].fenced is True


def test_operations_answer_not_controller_on_a_standby_and_hold_the_actives_answers() -> None:
    net = ControllerNet(seed=5)
    ctl = setup_topic(net)
    net.run_for(200)  # followers learn the new high watermark on their next fetch
    standby = next(c for c in net.controllers.values() if c is not ctl)
    woken: list[int] = []
    standby.on_write = ctl.on_write = lambda: woken.append(1)
    resp, _ = standby.create_topics(CreateTopicsRequest([NewTopic("x", 1, 1)]), 0)
    assert [r.error for r in resp.results] == [Errors.NOT_CONTROLLER]
    resp, _ = standby.register_broker(RegisterBrokerRequest(11, "i", "h", 1), 0)
    assert resp.error == Errors.NOT_CONTROLLER and standby.last_pending is None and not woken
    assert "t" in standby.image.topics  # a standby shows its committed image
    active = ctl
    resp, _ = active.create_topics(CreateTopicsRequest([NewTopic("x", 1, 1)]), 0)
    assert resp.results[0].error == Errors.NONE and woken == [1]
    pending = active.last_pending
    assert pending is not None and not pending.done
    assert "x" in ctl.active.image.topics and "x" not in active.image.topics  # reads: committed
    assert net.run_until(lambda: pending.done) and pending.error is None
    assert "x" in active.image.topics
    active.refuse = True  # re-running a request whose commit failed answers NOT_CONTROLLER
    resp, _ = active.heartbeat(HeartbeatRequest(BROKER, 0, 0), 0)
    assert resp.error == Errors.NOT_CONTROLLER
