"""BrokerLifecycle driven against a real QuorumController through ControllerApis (no sockets)."""

from __future__ import annotations

from broker_app.controller.broker_lifecycle import BrokerLifecycle, BrokerState
from broker_app.controller.config import ControllerConfig
from broker_app.controller.controller_apis import ControllerApis
from broker_app.controller.metadata_log import FileMetadataLog
from broker_app.controller.quorum_controller import QuorumController
from broker_app.protocol.codec import Request


def _exchange(apis: ControllerApis, lc: BrokerLifecycle, now: int, offset: int) -> bool:
    body = lc.next_request(now, offset)
    if body is None:
        return False
    req = Request(body.__api_key__, body.__version__, 1, "t", body)
    lc.on_response(apis.handle(req, now), now)
    return True


def test_register_unfence_heartbeat_and_reregister(tmp_path):
    log = FileMetadataLog(tmp_path)
    try:
        controller = QuorumController(ControllerConfig(session_timeout_ms=1000), log)
        apis = ControllerApis(controller, log, ("127.0.0.1", 9000))
        lc = BrokerLifecycle(1, "127.0.0.1", 9001, heartbeat_interval_ms=300,
                             retry_backoff_ms=50)  # fmt: skip
        assert _exchange(apis, lc, 0, -1)
        assert lc.state is BrokerState.RECOVERY and lc.broker_epoch == 0
        assert _exchange(apis, lc, 0, -1)  # not caught up: still fenced
        assert lc.state is BrokerState.RECOVERY
        assert not _exchange(apis, lc, 10, -1)  # backoff
        assert _exchange(apis, lc, 50, controller.image.offset)
        assert lc.state is BrokerState.RUNNING and not lc.is_fenced
        assert not _exchange(apis, lc, 200, controller.image.offset)  # interval not reached
        # The controller fences us (no heartbeat for > 1000 ms): the next answer says fenced.
        controller.tick(60)
        controller.tick(1200)
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
    finally:
        log.close()


def test_failure_backs_off():
    lc = BrokerLifecycle(1, "h", 1, retry_backoff_ms=100)
    assert lc.next_request(0, -1) is not None
    assert lc.next_request(0, -1) is None  # in flight
    lc.on_failure(5, "connection refused")
    assert lc.next_request(50, -1) is None and lc.next_request(105, -1) is not None
