"""BrokerLifecycle: the broker side of registration and heartbeats (KIP-631), sans-I/O.

The broker's I/O loop asks `next_request(now_ms, metadata_offset)` for the request to send to
the controller (a kio BrokerRegistrationRequest v4 or BrokerHeartbeatRequest v1, or None when
nothing is due or a request is in flight), sends it, and feeds the answer to
`on_response(response, now_ms)` or a connection failure to `on_failure(now_ms)`.

States (Kafka's BrokerState): STARTING (not registered) -> RECOVERY (registered, fenced, waiting
to catch up on metadata) -> RUNNING (unfenced) -> PENDING_CONTROLLED_SHUTDOWN ->
SHUTTING_DOWN. A fenced heartbeat answer moves RUNNING back to RECOVERY (the controller fenced
us, e.g. after a partition from it). STALE_BROKER_EPOCH or BROKER_ID_NOT_REGISTERED means the
registration is gone: register again (same incarnation id; the controller hands out a new epoch
only to a new incarnation, so a retried registration is idempotent). Heartbeats go every
heartbeat_interval_ms (broker.heartbeat.interval.ms); while fenced every retry_backoff_ms, so
unfencing does not wait a whole interval; failures retry after retry_backoff_ms.

Start-up (Kafka's BrokerServer.startup): the runtime answers no client request before
`ready_to_serve` (unfenced once); requests that arrive earlier wait, as connections wait in the
listen backlog of a Kafka broker whose acceptors are not started yet.

Controlled shutdown (Kafka's BrokerServer.shutdown): on SIGTERM the runtime calls
`begin_controlled_shutdown()` and keeps serving; heartbeats then ask to shut down, the
controller moves the broker's leaderships and ISR memberships away and answers
should_shut_down once the other brokers have learned of it; the state becomes SHUTTING_DOWN and
the runtime goes on with the clean stop once `stop_now(now_ms)`. It waits at most
CONTROLLED_SHUTDOWN_MS for that (Kafka waits up to the shutdown's own deadline, minutes; ours
must fit in docker stop's 10 s grace with the clean stop after it), then stops anyway, as
Kafka does on its timeout.
"""

from __future__ import annotations

import uuid
from enum import Enum
from typing import Any

from broker_app.protocol.codec import request_class
from broker_app.protocol.entities import build

from .errors import Errors

REGISTRATION_VERSION = 4
CONTROLLED_SHUTDOWN_MS = 3000
HEARTBEAT_VERSION = 1


class BrokerState(Enum):
    STARTING = "STARTING"
    RECOVERY = "RECOVERY"
    RUNNING = "RUNNING"
    PENDING_CONTROLLED_SHUTDOWN = "PENDING_CONTROLLED_SHUTDOWN"
    SHUTTING_DOWN = "SHUTTING_DOWN"


class BrokerLifecycle:
    def __init__(
        self,
        broker_id: int,
        host: str,
        port: int,
        *,
        cluster_id: str = "highwater-cluster",
        rack: str | None = None,
        incarnation_id: uuid.UUID | None = None,
        heartbeat_interval_ms: int = 2000,
        retry_backoff_ms: int = 250,
        previous_broker_epoch: int = -1,
    ) -> None:
        self.broker_id = broker_id
        self.host = host
        self.port = port
        self.cluster_id = cluster_id
        self.rack = rack
        self.incarnation_id = incarnation_id or uuid.uuid4()
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.retry_backoff_ms = retry_backoff_ms
        # KIP-966: the epoch in the clean-shutdown marker, -1 after an unclean shutdown.
        self.previous_broker_epoch = previous_broker_epoch
        self.state = BrokerState.STARTING
        self.broker_epoch = -1
        self.last_error: str | None = None
        self._next_send_ms = 0
        self._in_flight: str | None = None
        self._served = False
        self._shutdown_deadline_ms: int | None = None

    @property
    def next_send_ms(self) -> int:
        """When next_request may next return a request (if none is in flight)."""
        return self._next_send_ms

    @property
    def is_fenced(self) -> bool:
        return self.state is not BrokerState.RUNNING

    @property
    def ready_to_serve(self) -> bool:
        """Unfenced at least once since this process started: Kafka's BrokerServer opens its
        client listener only then (after the controller acknowledged it caught up and
        unfenced it), so no client reads metadata or data from a broker still replaying the
        metadata log. Later fencing does not close it again."""
        return self._served

    @property
    def may_shut_down(self) -> bool:
        """The controller granted the controlled shutdown (or there is nothing to ask:
        the broker never registered)."""
        return self.state is BrokerState.SHUTTING_DOWN or self.broker_epoch < 0

    def begin_controlled_shutdown(self, now_ms: int = 0) -> None:
        """SIGTERM: ask to shut down from the next heartbeat on; `stop_now` says when the
        runtime goes on with its clean stop."""
        if self._shutdown_deadline_ms is None:
            self._shutdown_deadline_ms = now_ms + CONTROLLED_SHUTDOWN_MS
        if self.state is not BrokerState.SHUTTING_DOWN and self.broker_epoch >= 0:
            self.state = BrokerState.PENDING_CONTROLLED_SHUTDOWN
            self._next_send_ms = 0

    def stop_now(self, now_ms: int) -> bool:
        """After begin_controlled_shutdown: granted, nothing to ask, or CONTROLLED_SHUTDOWN_MS
        passed without a grant (Kafka stops anyway on its timeout too)."""
        deadline = self._shutdown_deadline_ms
        return self.may_shut_down or (deadline is not None and now_ms >= deadline)

    def next_request(self, now_ms: int, metadata_offset: int) -> Any | None:
        if self._in_flight or now_ms < self._next_send_ms:
            return None
        if self.state is BrokerState.SHUTTING_DOWN:
            return None
        if self.broker_epoch < 0:
            self._in_flight = "register"
            return build(
                request_class(62, REGISTRATION_VERSION),
                {
                    "broker_id": self.broker_id,
                    "cluster_id": self.cluster_id,
                    "incarnation_id": self.incarnation_id,
                    "listeners": [
                        {
                            "name": "PLAINTEXT",
                            "host": self.host,
                            "port": self.port,
                            "security_protocol": 0,
                        }
                    ],  # fmt: skip
                    "features": [],
                    "rack": self.rack,
                    "previous_broker_epoch": self.previous_broker_epoch,
                },
            )
        self._in_flight = "heartbeat"
        return build(
            request_class(63, HEARTBEAT_VERSION),
            {
                "broker_id": self.broker_id,
                "broker_epoch": self.broker_epoch,
                "current_metadata_offset": metadata_offset,
                "want_fence": False,
                "want_shut_down": self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN,
            },
        )

    def on_failure(self, now_ms: int, reason: str = "request failed") -> None:
        self._in_flight = None
        self.last_error = reason
        self._next_send_ms = now_ms + self.retry_backoff_ms

    def on_response(self, response: Any, now_ms: int) -> None:
        kind, self._in_flight = self._in_flight, None
        error = Errors(int(response.error_code))
        if kind == "register":
            if error != Errors.NONE:
                self.on_failure(now_ms, f"registration failed: {error.name}")
                return
            self.broker_epoch = int(response.broker_epoch)
            self.state = BrokerState.RECOVERY
            self._next_send_ms = now_ms  # first heartbeat right away
            return
        if kind != "heartbeat":
            raise RuntimeError("response without a request in flight")
        if error in (Errors.STALE_BROKER_EPOCH, Errors.BROKER_ID_NOT_REGISTERED):
            self.broker_epoch = -1
            self.state = BrokerState.STARTING
            self.on_failure(now_ms, f"heartbeat: {error.name}; registering again")
            self._next_send_ms = now_ms
            return
        if error != Errors.NONE:
            self.on_failure(now_ms, f"heartbeat failed: {error.name}")
            return
        self.last_error = None
        if self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            if response.should_shut_down:
                self.state = BrokerState.SHUTTING_DOWN
        else:
            self.state = BrokerState.RECOVERY if response.is_fenced else BrokerState.RUNNING
            self._served = self._served or self.state is BrokerState.RUNNING
        fast = self.state is not BrokerState.RUNNING
        self._next_send_ms = now_ms + (
            self.retry_backoff_ms if fast else self.heartbeat_interval_ms
        )
