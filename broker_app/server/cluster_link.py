"""ClusterLink: a broker's connection to the controller (the edge of the control plane).

- registration and heartbeats: the sans-I/O BrokerLifecycle (controller/broker_lifecycle.py)
  builds every BrokerRegistration / BrokerHeartbeat and reads every answer (registration with
  its advertised listener and a fresh incarnation id; heartbeats with the applied metadata
  offset, faster while fenced; STALE_BROKER_EPOCH / BROKER_ID_NOT_REGISTERED → register
  again); this module only sends them and sleeps until the next is due;
- long-polls Fetch of `__cluster_metadata-0`, applies the records with MetadataLoader and turns
  `delta.local_changes(node_id)` into ReplicaManager.apply_partition / stop_replica; what to
  send and what an answer changes (FetchSnapshot when it names a SnapshotId, KIP-630) is the
  sans-I/O MetadataFetcher (metadata/metadata_fetcher.py), which the simulator drives too;
- sends the ISR changes the leaders propose (AlterPartition v2, topic ids from the image) as
  ReplicaManager's AlterPartitionManager schedules them, retried with backoff when lost, and
  hands the answers back to ReplicaManager;
- forwards CreateTopics / ElectLeaders / DeleteTopics / CreatePartitions / AlterConfigs from
  clients (AdminClient talks to brokers), and waits (bounded) until what the controller
  committed reaches this broker's image, so a following Metadata or DescribeConfigs sees it.
Three connections (metadata long-poll, heartbeats, everything else) so none waits on another.

Written once against broker_app/env.py's Env: production runs it on asyncio (AsyncioEnv), the
simulator's SimBroker on virtual time (sim/env.py's SimEnv), so both runtimes register,
heartbeat, follow the metadata log and send AlterPartition through this code. `serving` is set
once the broker is first unfenced: the client listener's gate (server/network.py in
production, SimBroker's backlog on the simulator).
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable
from typing import Any

from kio.index import load_request_schema
from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_delay,
    wait_exponential,
)

from broker_app.aio import cancel_and_wait
from broker_app.config import BrokerConfig
from broker_app.controller.broker_lifecycle import CONTROLLED_SHUTDOWN_MS, BrokerLifecycle
from broker_app.env import AsyncioEnv, Env, Handle
from broker_app.metadata import MetadataLoader
from broker_app.metadata.image import MetadataImage
from broker_app.metadata.metadata_fetcher import MetadataFetcher, MetadataFetchError
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors
from broker_app.replication.alter_partition_manager import (
    build_alter_partition,
    parse_alter_partition,
)
from broker_app.replication.messages import AlterPartitionRequest
from broker_app.replication.replica_manager import ReplicaManager

from .network_client import ClientError

log = logging.getLogger(__name__)

LIFECYCLE_RETRY_BACKOFF_MS = 250  # a failed registration/heartbeat, and heartbeats while fenced
LIFECYCLE_TICK_MS = 10  # the lifecycle loop's shortest sleep
FORWARD_RETRY_S = 10.0  # a controller restarting or briefly unreachable: keep the client's request
CREATE_WAIT_S = 5.0  # how long a forwarded CreateTopics waits for the topic to reach our image


class _AskedAStandby(Exception):
    """A forwarded request answered NOT_CONTROLLER: retry it at the next controller."""

    def __init__(self, response: Any) -> None:
        super().__init__("NOT_CONTROLLER")
        self.response = response


def answers_not_controller(entity: Any, depth: int = 0) -> bool:
    """Whether any error_code in a controller's response (walked a few levels deep: top level,
    topic and partition results) is NOT_CONTROLLER — Kafka's errorCounts() check."""
    if depth > 3 or not dataclasses.is_dataclass(entity):
        return False
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if f.name == "error_code" and getattr(value, "value", value) == Errors.NOT_CONTROLLER:
            return True
        if isinstance(value, tuple):
            if any(answers_not_controller(v, depth + 1) for v in value):
                return True
        elif dataclasses.is_dataclass(value) and answers_not_controller(value, depth + 1):
            return True
    return False


class ClusterLink:
    def __init__(
        self,
        config: BrokerConfig,
        replica_manager: ReplicaManager,
        env: Env | None = None,
        controllers: list[Any] | None = None,
        incarnation_id: uuid.UUID | None = None,
    ) -> None:
        """controllers: the controllers' addresses to try in turn, first one first (default:
        config.controller, then the rest of config.controller_bootstrap); incarnation_id:
        a fresh random one unless given (the simulator draws it from its seeded rng)."""
        self.config = config
        self.replica_manager = replica_manager
        self.env: Env = env or AsyncioEnv()
        if controllers is None:
            assert config.controller is not None
            # Quorum mode: the controllers to try in turn (see _next_controller).
            controllers = list(config.controller_bootstrap) or [config.controller]
            if config.controller not in controllers:
                controllers.insert(0, config.controller)
            first = controllers.index(config.controller)
            controllers = controllers[first:] + controllers[:first]
        self._controllers = controllers
        self._controller_index = 0
        timeout = config.request_timeout_ms
        cid = f"broker-{config.node_id}"
        address = controllers[0]
        self._meta_client = self.env.connect(address, cid + "-metadata", timeout)
        self._hb_client = self.env.connect(address, cid + "-heartbeat", timeout)
        self._rpc_client = self.env.connect(address, cid, timeout)
        self.loader = MetadataLoader()
        self.metadata_fetcher = MetadataFetcher(config.node_id, config.cluster_id, self.loader,
                                                config.replica_fetch_backoff_ms)  # fmt: skip
        host, port = config.advertised
        # Registration and heartbeats are decided here (sans I/O); a fresh incarnation id per
        # process, so a restart is a new broker epoch.
        self.lifecycle = BrokerLifecycle(
            config.node_id, host, port, cluster_id=config.cluster_id,
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            retry_backoff_ms=LIFECYCLE_RETRY_BACKOFF_MS,
            # KIP-966: the clean-shutdown marker's epoch, -1 after an unclean shutdown.
            previous_broker_epoch=replica_manager.log_manager.previous_broker_epoch,
            rack=config.broker_rack, **({} if incarnation_id is None
                                        else {"incarnation_id": incarnation_id}),
        )  # fmt: skip
        env = self.env
        self.serving = env.event()  # set once first unfenced (lifecycle.ready_to_serve)
        self._image_changed = env.event()
        self._lifecycle_wake = env.event()
        self._tasks: list[Handle] = []
        self._pending_creates: set[str] = set()
        self._alter_wake = env.event()
        self._alter_sends: dict[int, Handle] = {}  # the sends in flight (stop() cancels them)
        self._alter_seq = 0
        replica_manager.alter_partition_sink = self._on_alter_partition
        replica_manager.broker_epoch = lambda: self.lifecycle.broker_epoch

    @property
    def image(self) -> MetadataImage:
        return self.loader.image

    @property
    def broker_epoch(self) -> int:
        return self.lifecycle.broker_epoch

    @property
    def fenced(self) -> bool:
        return self.lifecycle.is_fenced

    @property
    def incarnation_id(self) -> uuid.UUID:
        return self.lifecycle.incarnation_id

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        for coro in (
            self._lifecycle_loop(),
            self._metadata_loop(),
            self._alter_partition_loop(),
        ):
            self._tasks.append(self.env.spawn(coro))

    async def controlled_shutdown(self) -> bool:
        """Ask the controller to move our leaderships away and wait (serving meanwhile) until
        it lets us go, at most CONTROLLED_SHUTDOWN_MS (broker_lifecycle.py). True if granted."""
        lc, env = self.lifecycle, self.env
        lc.begin_controlled_shutdown(env.now_ms())
        self._lifecycle_wake.set()
        while not lc.stop_now(env.now_ms()):
            await env.sleep(LIFECYCLE_TICK_MS)
        if lc.may_shut_down:
            log.info("controlled shutdown granted: leaderships moved")
        else:
            log.warning("controlled shutdown not granted within %d ms (%s): stopping anyway",
                        CONTROLLED_SHUTDOWN_MS, lc.last_error or lc.state.value)  # fmt: skip
        return lc.may_shut_down

    async def stop(self) -> None:
        """Production's stop (AsyncioEnv: its tasks are asyncio tasks). A simulated broker's
        tasks end with its process incarnation."""
        await cancel_and_wait([*self._tasks, *self._alter_sends.values()])  # type: ignore[list-item]
        for c in (self._meta_client, self._hb_client, self._rpc_client):
            c.close()

    async def _lifecycle_loop(self) -> None:
        """Registration and heartbeats: BrokerLifecycle decides, this loop only sends."""
        lc = self.lifecycle
        # The env's monotonic time, not the broker's skewable clock: Kafka paces heartbeats on
        # its event queue's nanoTime, so a wall-clock jump never silences them (clock-skew.yaml
        # saw a leader 30 s behind fenced for "no heartbeat" with the skewable one).
        env = self.env
        clock = env.now_ms
        hb_timeout = max(2000, 4 * self.config.heartbeat_interval_ms)
        while True:
            now = clock()
            body = lc.next_request(now, self.loader.image.offset)
            if body is None:
                # Woken early by controlled_shutdown(): its first heartbeat goes at once.
                await env.wait(self._lifecycle_wake,
                               max(lc.next_send_ms - now, LIFECYCLE_TICK_MS))  # fmt: skip
                self._lifecycle_wake.clear()
                continue
            before = (lc.state, lc.broker_epoch)
            try:
                resp = await self._hb_client.send(body, timeout_ms=hb_timeout)
            except ClientError as e:
                log.info("controller not reachable (%s): %s", lc.state.value, e)
                lc.on_failure(clock(), str(e))
                self._next_controller()
                continue
            lc.on_response(resp, clock())
            if int(resp.error_code) == Errors.NOT_CONTROLLER:
                self._next_controller()
            if lc.ready_to_serve and not self.serving.is_set():
                log.info("unfenced: serving clients")
                self.serving.set()
            if (lc.state, lc.broker_epoch) != before:
                why = f" ({lc.last_error})" if lc.last_error else ""
                log.info("broker %d: %s, broker epoch %d%s", self.config.node_id,
                         lc.state.value, lc.broker_epoch, why)  # fmt: skip

    def _next_controller(self) -> None:
        """Quorum mode: point every controller connection at the next controller (round
        robin; Kafka's brokers ask the quorum for the leader, KIP-853 — a NOT_CONTROLLER
        answer here names only an id, not an address)."""
        if len(self._controllers) < 2:
            return
        self._controller_index = (self._controller_index + 1) % len(self._controllers)
        address = self._controllers[self._controller_index]
        log.info("trying controller %s", address)
        for c in (self._meta_client, self._hb_client, self._rpc_client):
            c.retarget(address)

    # --- metadata ----------------------------------------------------------------------------

    async def _metadata_loop(self) -> None:
        """Send what the MetadataFetcher asks for; apply what it returns."""
        fetcher = self.metadata_fetcher
        while True:
            try:
                delta = fetcher.on_response(await self._meta_client.send(fetcher.next_request()))
            except (ClientError, MetadataFetchError) as e:
                log.info("metadata fetch failed: %s", e)
                fetcher.on_failure()
                await self.env.sleep(fetcher.backoff_ms())
                continue
            if delta is not None:
                self.replica_manager.apply_metadata_delta(delta, self.config.min_insync_replicas)
                self._image_changed.set()
                self._image_changed = self.env.event()

    # --- AlterPartition ------------------------------------------------------------------------

    def _on_alter_partition(self, request: AlterPartitionRequest) -> None:
        self._alter_wake.set()

    async def _alter_partition_loop(self) -> None:
        """Send what ReplicaManager's AlterPartitionManager says is due (new or to retry)."""
        manager = self.replica_manager.alter_partition_manager
        clock = self.replica_manager.clock
        while True:
            self._alter_wake.clear()  # before poll: a proposal submitted later sets it again
            for request in manager.poll(clock()):
                self._alter_seq += 1
                key = self._alter_seq
                self._alter_sends[key] = self.env.spawn(self._send_alter_partition(request, key))
            due = manager.next_due_ms()
            await self.env.wait(self._alter_wake, None if due is None else max(due - clock(), 1))

    async def _send_alter_partition(self, request: AlterPartitionRequest, key: int) -> None:
        rm = self.replica_manager
        try:
            topic_id = rm.topic_ids.get(request.topic)
            if topic_id is None:
                rm.on_alter_partition_failure(request, "no topic id known yet")
                return
            body = build_alter_partition(request, self.broker_epoch, topic_id)
            try:
                resp = await self._rpc_client.send(body)
            except ClientError as e:
                rm.on_alter_partition_failure(request, str(e))
                return
            if answers_not_controller(resp):
                self._next_controller()
            top, answer = parse_alter_partition(resp)
            if answer.error != Errors.NONE:
                log.info("AlterPartition %s-%d answered %s", request.topic, request.partition,
                         answer.error.name)  # fmt: skip
            rm.on_alter_partition_response(request, answer, top)
        finally:
            self._alter_sends.pop(key, None)
            self._alter_wake.set()  # a retry may now be scheduled

    # --- forwarding ----------------------------------------------------------------------------

    async def forward(self, body: Any) -> Any:
        """Send a client's request to the controller unchanged; return its response entity.

        A controller that is restarting or briefly unreachable is retried (bounded) rather than
        failing the client's request: the broker would otherwise close the client's connection.
        A NOT_CONTROLLER answer (we asked a standby of the quorum) moves on to the next controller
        and retries within the same bound, as Kafka's NodeToControllerChannelManager re-discovers
        the active controller (a quorum of one answers it while it elects itself: asked again);
        once the bound is spent that answer goes to the client."""
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_delay(FORWARD_RETRY_S),
                wait=wait_exponential(multiplier=0.05, max=1.0),
                sleep=lambda seconds: self.env.sleep(seconds * 1000),
                retry=retry_if_exception_type((ClientError, _AskedAStandby)),
                reraise=True,
            ):
                with attempt:
                    resp = await self._rpc_client.send(body)
                    if answers_not_controller(resp):
                        # A standby, or a lone voter still electing itself: ask again (the
                        # next controller when there are several).
                        if len(self._controllers) > 1:
                            self._next_controller()
                        raise _AskedAStandby(resp)
                    return resp
        except _AskedAStandby as e:
            return e.response
        raise AssertionError("unreachable")

    async def forward_create_topics(self, body: Any, names: list[str]) -> Any:
        return await self.forward_and_wait(body, lambda resp, image: {
            t.name for t in resp.topics if t.error_code.value == Errors.NONE} <= set(image.topics))

    async def forward_and_wait(self, body: Any, applied: Callable[[Any, MetadataImage], bool]
                               ) -> Any:  # fmt: skip
        """Forward `body`; then wait (bounded) until `applied(response, image)` holds, so the
        client's next request to this broker sees what the controller committed. A request
        with validate_only changed nothing: nothing to wait for."""
        resp = await self.forward(body)
        if not getattr(body, "validate_only", False):
            await self.wait_for_image(lambda image: applied(resp, image))
        return resp

    async def wait_for_image(self, done: Callable[[MetadataImage], bool]) -> None:
        env = self.env
        deadline = env.now_ms() + CREATE_WAIT_S * 1000
        while not done(self.image) and env.now_ms() < deadline:
            await env.wait(self._image_changed, deadline - env.now_ms())

    def create_internal_topic(
        self, name: str, partitions: int, replication_factor: int, configs: dict[str, str]
    ) -> None:
        """An internal topic (__consumer_offsets) the broker needs: ask the controller, once at
        a time; the caller answers COORDINATOR_NOT_AVAILABLE until the topic has leaders."""
        self._create_in_background(name, partitions, replication_factor, configs)

    def auto_create_topic(self, name: str) -> None:
        """Metadata for an unknown topic with auto-create on: ask the controller, once."""
        self._create_in_background(name, -1, -1, {})

    def _create_in_background(
        self, name: str, partitions: int, replication_factor: int, configs: dict[str, str]
    ) -> None:
        if name in self._pending_creates:
            return
        self._pending_creates.add(name)
        body = build(
            load_request_schema(19, 7),
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": partitions,
                        "replication_factor": replication_factor,
                        "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in configs.items()],
                    }
                ],
                "timeout": 5000,
                "validate_only": False,
            },
        )

        async def create() -> None:
            try:
                await self.forward(body)
            except ClientError as e:
                log.info("auto-create of %r failed: %s", name, e)
            finally:
                self._pending_creates.discard(name)

        self.env.spawn(create())
