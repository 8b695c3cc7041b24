"""RaftManager: the edge of a controller's Raft quorum (Kafka's KafkaRaftManager with its
KafkaNetworkChannel), behind `--controller-quorum-voters`. Written once against
broker_app/env.py's Env: asyncio in production (quorum_main.py), the simulator's virtual time
in sim/quorum.py, where the same requests travel as entities over the simulated network.

- One driver task polls the RaftQuorumController when the client's deadline_ms() comes (or
  at once when woken: a request arrived, an operation appended records) and sends what
  it returns.
- Outbound requests go over Kafka's protocol (kio_codec + the project's codec) to the peer's
  Kafka listener, on two connections per peer: one for Fetch (a leader parks it up to
  fetch_max_wait_ms) and one for everything else, so a parked Fetch never delays a Vote or
  BeginQuorumEpoch. The KafkaClient gives each its own correlation id; the answer goes back
  into Raft under the Raft client's id. A failed request is dropped: Raft resends on its own
  timers (request_timeout_ms).
- Inbound requests (Vote, BeginQuorumEpoch, EndQuorumEpoch, FetchSnapshot, Fetch v18 from a
  voter) are handed to Raft with a local correlation id; the listener awaits the matching
  response (a parked Fetch answers later, from a poll). A broker's FetchSnapshot is answered
  here from the latest snapshot (`_observer_snapshot`).
- Every time the high watermark may have moved, `on_commit` is called (the server wakes the
  brokers' parked metadata fetches).
- A fatal error (RaftFatalError from the client anywhere, or any error of a poll: Kafka's raft
  IO thread hands every error to its fatal fault handler, which halts the process) calls
  `on_fatal(reason)` once and stops driving; quorum_main halts the process with status 1.
  An inbound request the client refuses otherwise (ValueError, TypeError: a malformed or
  misrouted message) only closes that connection.

Not done: TLS/SASL, a separate CONTROLLER listener (voters use the Kafka listener), backoff
per peer beyond Raft's own timers, dynamic voters (KIP-853).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from broker_app.aio import cancel_and_wait
from broker_app.env import AsyncioEnv, Env, Future, Handle
from broker_app.protocol.apis import VersionRange
from broker_app.protocol.codec import Request
from broker_app.raft import RaftFatalError
from broker_app.raft.kio_codec import from_kio, to_kio
from broker_app.raft.messages import (
    Envelope,
    Errors,
    FetchRequest,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
)
from broker_app.server.network_client import ClientError

from .raft_controller import RaftQuorumController

log = logging.getLogger(__name__)

VOTE, BEGIN_QUORUM_EPOCH, END_QUORUM_EPOCH, FETCH_SNAPSHOT, FETCH = 52, 53, 54, 59, 1
RAFT_FETCH_VERSION = 18
SHUTDOWN_TIMEOUT_MS = 5000  # Kafka: KafkaRaftClientDriver shuts its client down with 5000 ms
SHUTDOWN_POLL_MS = 20
DRIVER_MAX_SLEEP_MS = 1000  # the driver polls at least this often, woken or not
# The API table a quorum controller listens with (CONTROLLER_APIS plus these); Fetch 13-17
# are refused at decode time by the handler (brokers fetch metadata with <= 12).
RAFT_APIS: dict[int, VersionRange] = {
    VOTE: VersionRange(2, 2),
    BEGIN_QUORUM_EPOCH: VersionRange(0, 0),
    END_QUORUM_EPOCH: VersionRange(0, 0),
    FETCH_SNAPSHOT: VersionRange(0, 0),
}


def is_raft_request(request: Request) -> bool:
    return request.api_key in RAFT_APIS or (
        request.api_key == FETCH and request.api_version == RAFT_FETCH_VERSION)


def _sender_id(body: Message) -> int:
    for name in ("replica_id", "candidate_id", "leader_id"):
        value = getattr(body, name, None)
        if value is not None:
            return int(value)
    raise ValueError(f"cannot tell who sent {body!r}")


class RaftManager:
    def __init__(self, raft: RaftQuorumController, voters: dict[int, Any],
                 cluster_id: str, on_commit: Callable[[], None],
                 on_fatal: Callable[[str], None] = lambda _reason: None,
                 env: Env | None = None) -> None:
        """voters: each voter's address for env.connect ((host, port) in production)."""
        self.env: Env = env or AsyncioEnv()
        self.raft = raft
        self.voters = voters
        self.cluster_id = cluster_id
        self.on_commit = on_commit
        self.on_fatal = on_fatal
        self.failed: str | None = None  # the fatal error's reason, once there was one
        cfg = raft.client.config
        self._timeout_ms = cfg.request_timeout_ms + cfg.fetch_max_wait_ms
        self._clients: dict[tuple[int, bool], Any] = {}
        self._inbound: dict[int, Future] = {}
        self._next_inbound = 0
        self._wake = self.env.event()
        self._sends: dict[int, Handle] = {}  # outbound requests in flight (stop() cancels)
        self._send_seq = 0
        self._driver: Handle | None = None
        self._hw: int | None = None

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        self._driver = self.env.spawn(self._drive())

    async def stop(self, timeout_ms: int = SHUTDOWN_TIMEOUT_MS) -> None:
        """Shut down gracefully as Kafka's KafkaRaftClient does: the active controller resigns
        (EndQuorumEpoch, resent until answered) and no voter stands for election again; the
        driver keeps answering the survivors (their Votes, the new leader's BeginQuorumEpoch)
        until another voter leads or timeout_ms passes (Kafka: 5000, KafkaRaftClientDriver),
        then stops."""
        env = self.env
        self._dispatch(self.raft.shutdown(env.now_ms()))
        self.wakeup()
        deadline = env.now_ms() + timeout_ms
        while not self.raft.client.shutdown_complete and env.now_ms() < deadline:
            await env.sleep(SHUTDOWN_POLL_MS)
        if not self.raft.client.shutdown_complete:
            log.warning("raft: graceful shutdown timed out after %d ms (no new leader)",
                        timeout_ms)
        await env.sleep(SHUTDOWN_POLL_MS)  # let the last answers leave
        tasks = list(self._sends.values()) + ([self._driver] if self._driver else [])
        await cancel_and_wait(tasks)  # type: ignore[arg-type]  # production: asyncio tasks
        for c in self._clients.values():
            c.close()

    def wakeup(self) -> None:
        self._wake.set()

    # -- driver -----------------------------------------------------------------------------
    async def _drive(self) -> None:
        env = self.env
        while self.failed is None:
            try:
                self._dispatch(self.raft.poll(env.now_ms()))
            except Exception as e:
                self._fatal("poll", e)
                return
            self._after()
            delay = max(0, self.raft.deadline_ms() - env.now_ms())
            self._wake.clear()
            await env.wait(self._wake, min(delay, DRIVER_MAX_SLEEP_MS))

    def _after(self) -> None:
        hw = self.raft.client.high_watermark
        if hw != self._hw:
            self._hw = hw
            self.on_commit()

    def _dispatch(self, envelopes: list[Envelope]) -> None:
        for envelope in envelopes:
            if type(envelope.body).__name__.endswith("Response"):
                fut = self._inbound.pop(envelope.correlation_id, None)
                if fut is not None:
                    fut.set_result(envelope.body)
            else:
                self._send_seq += 1
                key = self._send_seq
                self._sends[key] = self.env.spawn(self._send(envelope, key))

    def _client(self, peer: int, fetch: bool) -> Any:
        key = (peer, fetch)
        if key not in self._clients:
            self._clients[key] = self.env.connect(
                self.voters[peer], f"controller-{self.raft.config.node_id}-raft",
                self._timeout_ms)  # fmt: skip
        return self._clients[key]

    async def _send(self, envelope: Envelope, key: int) -> None:
        try:
            await self._send_one(envelope)
        finally:
            self._sends.pop(key, None)

    async def _send_one(self, env: Envelope) -> None:
        client = self._client(env.dst, isinstance(env.body, FetchRequest))
        try:
            response = await client.send(to_kio(env.body, self.cluster_id))
            body = from_kio(response)
        except (ClientError, ValueError) as e:
            log.debug("raft %s to %d failed: %s", type(env.body).__name__, env.dst, e)
            return
        reply = Envelope(env.dst, env.src, env.correlation_id, body)
        if self.failed is not None:
            return
        try:
            self._dispatch(self.raft.handle(reply, self.env.now_ms()))
        except RaftFatalError as e:
            self._fatal(f"handling {type(body).__name__} from {env.dst}", e)
            return
        except Exception:
            log.exception("raft: handling %s from %d failed", type(body).__name__, env.dst)
        self._after()
        self.wakeup()

    def _fatal(self, what: str, error: Exception) -> None:
        if self.failed is not None:
            return
        self.failed = f"raft {what}: {type(error).__name__}: {error}"
        log.critical("fatal error in the raft IO thread (%s); the controller halts",
                     self.failed, exc_info=error)
        self.on_fatal(self.failed)

    # -- inbound ----------------------------------------------------------------------------
    def _observer_snapshot(self, req: FetchSnapshotRequest) -> FetchSnapshotResponse:
        """A broker's FetchSnapshot (its metadata fetch offset was below our log start): our
        latest snapshot, if it is the one asked for. Deviation: Kafka answers FetchSnapshot
        only on the leader (brokers are Raft observers there); brokers here fetch metadata
        from any controller's committed log, and a snapshot holds only committed data."""
        c = self.raft.client
        snapshot = c.log.latest_snapshot()
        if snapshot is None or snapshot.snapshot_id != req.snapshot_id:
            return FetchSnapshotResponse(c.epoch, c.leader_id, Errors.SNAPSHOT_NOT_FOUND)
        return FetchSnapshotResponse(c.epoch, c.leader_id, snapshot=snapshot)

    async def handle_request(self, request: Request) -> Any:
        """A Raft request from a peer -> its kio response entity (None: no answer, close)."""
        body = from_kio(request.body)
        src = _sender_id(body)
        if isinstance(body, FetchSnapshotRequest) and src not in self.voters:
            return to_kio(self._observer_snapshot(body))
        if src not in self.voters and not isinstance(body, FetchRequest):
            raise ValueError(f"{type(body).__name__} from {src}, not a voter")
        if self.failed is not None:
            raise ValueError(f"raft stopped after a fatal error ({self.failed})")
        self._next_inbound += 1
        corr = self._next_inbound
        fut = self.env.future()
        self._inbound[corr] = fut
        timer = self.env.call_later(self._timeout_ms, lambda: fut.set_result(None))
        try:
            try:
                self._dispatch(self.raft.handle(
                    Envelope(src, self.raft.config.node_id, corr, body), self.env.now_ms()))
            except RaftFatalError as e:
                self._fatal(f"handling {type(body).__name__} from {src}", e)
                raise
            self._after()
            self.wakeup()
            answer: Message | None = await fut
        finally:
            timer.cancel()
            self._inbound.pop(corr, None)
        if answer is None:
            raise TimeoutError(f"no answer to {type(body).__name__} from {src} "
                               f"in {self._timeout_ms} ms")
        return to_kio(answer)
