"""BrokerLifecycle driven against a lone controller (a one-voter quorum: the real
QuorumController behind ControllerApis), no sockets."""

from __future__ import annotations

from broker_app.controller.broker_lifecycle import BrokerLifecycle, BrokerState
from broker_app.controller.config import ControllerConfig
from broker_app.protocol.codec import Request
from tests.unit.controller.one_voter import OneVoter


def _exchange(voter: OneVoter, lc: BrokerLifecycle, now: int, offset: int) -> bool:
    body = lc.next_request(now, offset)
    if body is None:
        return False
    req = Request(body.__api_key__, body.__version__, 1, "t", body)
    voter.now = max(voter.now, now)
    lc.on_response(voter.handle(req, now), now)
    return True


def test_register_unfence_heartbeat_and_reregister():
    apis = OneVoter(ControllerConfig(session_timeout_ms=1000))
    controller = apis.raft
    lc = BrokerLifecycle(1, "127.0.0.1", 9001, heartbeat_interval_ms=300,
                         retry_backoff_ms=50)  # fmt: skip
    assert _exchange(apis, lc, 0, -1)
    # The epoch is the RegisterBroker record's offset; offset 0 is the voter's LeaderChange.
    assert lc.state is BrokerState.RECOVERY and lc.broker_epoch == 1
    assert _exchange(apis, lc, 0, -1)  # not caught up: still fenced
    assert lc.state is BrokerState.RECOVERY
    assert not _exchange(apis, lc, 10, -1)  # backoff
    assert _exchange(apis, lc, 50, controller.image.offset)
    assert lc.state is BrokerState.RUNNING and not lc.is_fenced
    assert not _exchange(apis, lc, 200, controller.image.offset)  # interval not reached
    # The controller fences us (no heartbeat for > 1000 ms): the next answer says fenced.
    controller.tick(60)
    controller.tick(1200)
    apis.commit()
    assert controller.image.brokers[1].fenced
    assert _exchange(apis, lc, 1300, -1)  # a broker that lost its metadata: stays fenced
    assert lc.state is BrokerState.RECOVERY
    assert _exchange(apis, lc, 1350, controller.image.offset)  # caught up: unfenced again
    assert lc.state is BrokerState.RUNNING and not controller.image.brokers[1].fenced
    # A newer incarnation took our id: STALE_BROKER_EPOCH -> register again.
    other = BrokerLifecycle(1, "127.0.0.1", 9001)
    assert _exchange(apis, other, 1300, -1)
    assert _exchange(apis, lc, 1700, controller.image.offset)
    assert lc.state is BrokerState.STARTING and lc.broker_epoch == -1
    assert lc.last_error and "STALE_BROKER_EPOCH" in lc.last_error
    assert _exchange(apis, lc, 1700, controller.image.offset)
    assert lc.broker_epoch > other.broker_epoch
    # Controlled shutdown.
    assert _exchange(apis, lc, 1700, controller.image.offset)
    lc.begin_controlled_shutdown()
    assert _exchange(apis, lc, 1701, controller.image.offset)
    assert lc.state is BrokerState.SHUTTING_DOWN
    assert lc.next_request(10**6, 0) is None


def test_failure_backs_off():
    lc = BrokerLifecycle(1, "h", 1, retry_backoff_ms=100)
    assert lc.next_request(0, -1) is not None
    assert lc.next_request(0, -1) is None  # in flight
    lc.on_failure(5, "connection refused")
    assert lc.next_request(50, -1) is None and lc.next_request(105, -1) is not None


def test_previous_broker_epoch_on_the_wire_decides_clean_or_unclean():
    """BrokerRegistration v4 carries PreviousBrokerEpoch through ControllerApis: the epoch the
    old incarnation had keeps a restarted ELR member eligible, -1 removes it (KIP-966)."""
    from broker_app.controller.messages import (
        AlterPartitionItem,
        AlterPartitionRequest,
        CreateTopicsRequest,
        NewTopic,
    )

    apis = OneVoter()
    controller = apis.raft
    brokers = {b: BrokerLifecycle(b, "127.0.0.1", 9000 + b) for b in (1, 2, 3)}
    for lc in brokers.values():
        _exchange(apis, lc, 0, -1)
    for lc in brokers.values():
        _exchange(apis, lc, 0, controller.image.offset)
    assert all(lc.state is BrokerState.RUNNING for lc in brokers.values())
    controller.create_topics(CreateTopicsRequest([NewTopic(
        "t", 1, 3, configs={"min.insync.replicas": "2"})]), 0)  # fmt: skip
    apis.commit()

    def shrink(isr: tuple[int, ...]) -> None:
        reg = controller.image.partition("t", 0)
        assert reg is not None
        controller.alter_partition(AlterPartitionRequest(1, brokers[1].broker_epoch, [
            AlterPartitionItem(controller.image.topics["t"].topic_id, 0, reg.leader_epoch,
                               reg.partition_epoch, isr)]), 0)  # fmt: skip
        apis.commit()

    shrink((1, 3))
    shrink((1,))  # 3 joins the ELR
    reg = controller.image.partition("t", 0)
    assert reg is not None and reg.elr == (3,)
    # 3 restarts cleanly: its marker held its epoch; it stays in the ELR.
    clean = BrokerLifecycle(3, "127.0.0.1", 9003,
                            previous_broker_epoch=brokers[3].broker_epoch)  # fmt: skip
    _exchange(apis, clean, 10, -1)
    reg = controller.image.partition("t", 0)
    assert reg is not None and reg.elr == (3,)
    # 1, the last ISR member, crashes (no marker: -1): out of ISR and ELR, 2 is not
    # eligible either (it left while the ISR was at min.insync), so nobody leads yet.
    crashed = BrokerLifecycle(1, "127.0.0.1", 9001)
    _exchange(apis, crashed, 20, -1)
    reg = controller.image.partition("t", 0)
    assert reg is not None and reg.isr == () and 1 not in reg.elr and reg.leader == -1
    _exchange(apis, clean, 30, controller.image.offset)  # 3 unfences: the ELR member leads
    reg = controller.image.partition("t", 0)
    assert reg is not None and reg.leader == 3 and reg.isr == (3,)
