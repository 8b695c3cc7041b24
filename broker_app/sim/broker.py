"""SimBroker: one broker of the simulator, built from the production classes.

What is the broker's own code and what is the simulator's edge:
- own code: ReplicaManager (Partition, purgatories, AlterPartitionManager) over the
  production LogManager, Log and LogSegment on a per-broker simulated disk (storage/fs.py's
  MemoryFileSystem: the containers' page-cache rule, unsynced writes lost on a power loss),
  KafkaApis answering every request (Produce, Fetch, ListOffsets, OffsetForLeaderEpoch,
  Metadata) exactly as in production, BrokerLifecycle for registration and heartbeats,
  MetadataLoader + ReplicaManager.apply_metadata_delta for the controller's metadata, and per
  leader a FetcherSession + FetchPacer for replica fetches;
- the edge (this module, replacing server/network.py, cluster_link.py and replica_fetcher.py):
  callbacks on virtual time instead of asyncio tasks. The loops keep production's timers:
  ReplicaManager.tick every 100 ms, HW checkpoint every 5 s, heartbeats as BrokerLifecycle
  says, metadata long-poll, AlterPartition sends as AlterPartitionManager schedules them,
  a fetcher round as FetchPacer allows.
`stop()` is SIGTERM (controlled shutdown, then flush, checkpoints, clean-shutdown marker);
`kill()` is SIGKILL (the page
cache survives: nothing lost); `fs.power_loss()` afterwards is the power loss. A stopped
broker's page cache is written out once it is down, as the containers' FUSE layer does.
Not modelled: the group coordinator's timers (groups are not part of sim workloads), disk
stalls, the interval flush policy's background thread timing (flushes run inline).
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker_app.clock import BrokerClock
from broker_app.config import BrokerConfig
from broker_app.controller.broker_lifecycle import CONTROLLED_SHUTDOWN_MS, BrokerLifecycle
from broker_app.metadata import MetadataLoader
from broker_app.metadata.image import MetadataImage
from broker_app.metadata.metadata_fetcher import MetadataFetcher, MetadataFetchError
from broker_app.protocol.apis import advertised_apis
from broker_app.protocol.codec import Request
from broker_app.replication.alter_partition_manager import (
    build_alter_partition,
    parse_alter_partition,
)
from broker_app.replication.fetcher_pacing import FetchPacer, RoundOutcome
from broker_app.replication.fetcher_round import FetchRound
from broker_app.replication.fetcher_session import FetcherSession
from broker_app.replication.messages import AlterPartitionRequest
from broker_app.replication.partition import Partition
from broker_app.replication.replica_manager import ReplicaManager
from broker_app.server.cluster_link import answers_not_controller
from broker_app.server.group_apis import GroupApis
from broker_app.server.kafka_apis import (
    NO_RESPONSE,
    CloseConnection,
    Deferred,
    DelayedFetch,
    KafkaApis,
)
from broker_app.storage.fs import MemoryFileSystem
from broker_app.storage.log import LogConfig
from broker_app.storage.log_manager import LogManager

from .events import EventLoop, Process, Timer
from .network import Network

log = logging.getLogger(__name__)

TICK_MS = 100  # server/main.py's ReplicaManager.tick timer
HW_CHECKPOINT_MS = 5_000  # replica.high.watermark.checkpoint.interval.ms
LIFECYCLE_RETRY_BACKOFF_MS = 250  # cluster_link.py's
LIFECYCLE_TICK_MS = 10
BACKLOG = 1024  # requests held before the first unfence (a listen backlog's worth)


class ConnectionClosed:
    """What a client gets back when the broker closes its connection (acks=0 failure)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def broker_name(node_id: int) -> str:
    return f"broker-{node_id}"


class SimBroker:
    def __init__(
        self,
        loop: EventLoop,
        net: Network,
        config: BrokerConfig,
        controller: str | tuple[str, ...] = "controller-1",
    ) -> None:
        """controller: the controller's node name, or a quorum's voters (tried round robin:
        a failure or a NOT_CONTROLLER answer moves to the next, as cluster_link does)."""
        self.loop = loop
        self.net = net
        self.config = config
        self.node_id = config.node_id
        self.name = broker_name(config.node_id)
        self.controllers = (controller,) if isinstance(controller, str) else tuple(controller)
        self._controller_index = 0
        self.process = Process(loop, self.name)
        self.fs = MemoryFileSystem()  # the broker's disk: outlives its processes
        self.data_dir = Path("/sim") / self.name / "data"
        net.add_node(self.name, self.process, self.handle)
        self.replica_manager: ReplicaManager | None = None
        self.loader = MetadataLoader()
        self.lifecycle: BrokerLifecycle | None = None
        self.apis: KafkaApis | None = None
        self.fetchers: dict[int, SimFetcher] = {}
        self._fetcher_of: dict[tuple[str, int], int] = {}
        self._alter_timer: Timer | None = None
        self.metadata_fetcher: MetadataFetcher | None = None
        self._lifecycle_timer: Timer | None = None
        self._stopping = False  # SIGTERMed: in the controlled shutdown
        self._backlog: list[tuple[str, Any, Callable[[Any], None]]] = []
        self._after_stop: list[Callable[[], None]] = []
        #: each time the process stopped itself (exit), a line naming it: the run check
        #: `unexpected-exits` (harness/checker/exits.py)
        self.exits: list[str] = []

    # --- what KafkaApis asks of its cluster link -------------------------------------------

    @property
    def image(self) -> MetadataImage:
        return self.loader.image

    def advertised_versions(self) -> dict[int, int]:
        """The highest version of each API its ApiVersions answers (KafkaApis uses the same
        advertised_apis): what a simulated client negotiates, without a message."""
        return {int(k): r.max_version for k, r in
                advertised_apis(self.config.behaviour.client_leader_epochs).items()}

    def auto_create_topic(self, name: str) -> None:
        log.info("%s: auto-create of %r ignored (the simulator creates topics)", self.name, name)

    # --- process lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        cfg = self.config
        self.process.start()
        store = LogManager.open(
            self.data_dir,
            LogConfig(
                segment_bytes=cfg.segment_bytes,
                max_batch_bytes=cfg.max_message_bytes,
                flush_every_batch=cfg.flush_every_batch or cfg.flush == "every-batch",
            ),
            wall_clock_ms=self.loop.clock,  # virtual time is the simulated wall clock too
            fs=self.fs,
        )
        self.store = store
        rm = ReplicaManager(cfg.node_id, store, cfg.behaviour, cfg.replica_lag_time_max_ms,
                            clock=self.loop.clock)  # fmt: skip
        # KIP-392 as production sets it (server/main.py): the selector and this broker's rack
        rm.replica_selector = cfg.replica_selector
        rm.local_rack = cfg.broker_rack
        self.replica_manager = rm
        self.loader = MetadataLoader()
        host, port = cfg.advertised
        self.lifecycle = BrokerLifecycle(
            cfg.node_id, host, port, cluster_id=cfg.cluster_id,
            incarnation_id=uuid.UUID(int=self.loop.rng.getrandbits(128), version=4),
            heartbeat_interval_ms=cfg.heartbeat_interval_ms,
            retry_backoff_ms=LIFECYCLE_RETRY_BACKOFF_MS,
            previous_broker_epoch=store.previous_broker_epoch, rack=cfg.broker_rack,
        )  # fmt: skip
        rm.broker_epoch = lambda: self.lifecycle.broker_epoch
        # Sim producers do not send InitProducerId (they get producer ids from the
        # simulator): no ProducerIdManager.
        groups = GroupApis(cfg, rm, self, BrokerClock.of_ms(self.loop.clock, self.loop.clock))
        self.apis = KafkaApis(cfg, rm, groups, None, cluster=self,  # type: ignore[arg-type]
                              # seeded from this incarnation's id: no extra draw from the
                              # loop's stream, so schedules found before keep their timing
                              rng=random.Random(self.lifecycle.incarnation_id.int))
        rm.alter_partition_sink = self._on_alter_partition
        rm.on_follower_change(self._on_follower_change)
        self.fetchers = {}
        self._fetcher_of = {}
        self._alter_timer = None
        self.metadata_fetcher = MetadataFetcher(cfg.node_id, cfg.cluster_id, self.loader,
                                                cfg.replica_fetch_backoff_ms)  # fmt: skip
        self._lifecycle_timer = None
        self._stopping = False
        self._backlog = []
        self.process.every(TICK_MS, rm.tick)
        self.process.every(HW_CHECKPOINT_MS, store.checkpoint_high_watermarks)
        if cfg.flush == "interval":
            self.process.every(cfg.flush_interval_ms, store.flush_all)
        self.process.call_later(0, self._lifecycle_step)
        self.process.call_later(0, self._metadata_fetch)

    def kill(self) -> None:
        """SIGKILL: the process is gone; its disk keeps everything written (page cache)."""
        self.process.kill()
        self.replica_manager = None
        self.apis = None
        self._stopping = False
        queued, self._after_stop = self._after_stop, []
        for fn in queued:
            self.loop.call_later(0, fn)

    def stop(self) -> None:
        """SIGTERM: a controlled shutdown as server/main.py does it (keep serving while the
        controller moves our leaderships, at most CONTROLLED_SHUTDOWN_MS), then flush,
        checkpoints and the clean-shutdown marker, and gone. `stopping` until then; what
        `after_stop` queued runs once the process is down."""
        if not self.process.up or self._stopping:
            return
        lc = self.lifecycle
        assert lc is not None
        self._stopping = True
        lc.begin_controlled_shutdown(self.loop.now_ms)
        if not lc.may_shut_down and self._lifecycle_timer is not None:
            # The first request to shut down goes at once.
            self._lifecycle_timer.cancel()
            self._lifecycle_timer = None
            self._lifecycle_step()
        self._await_shutdown_grant()

    def exit(self, reason: str) -> None:
        """The process stops itself on a fatal error: Kafka's Exit.exit runs the shutdown
        hook, so this is stop()'s clean shutdown, recorded in `exits`."""
        self.exits.append(f"{self.name} exited on its own at "
                          f"{self.loop.now_ms / 1000:.1f} s: {reason}")
        self.stop()

    def _await_shutdown_grant(self) -> None:
        lc = self.lifecycle
        assert lc is not None
        if not lc.stop_now(self.loop.now_ms):
            self.process.call_later(LIFECYCLE_TICK_MS, self._await_shutdown_grant)
            return
        if not lc.may_shut_down:
            log.info("%s: controlled shutdown not granted in %d ms: stopping anyway",
                     self.name, CONTROLLED_SHUTDOWN_MS)  # fmt: skip
        self.store.shutdown(lc.broker_epoch)
        self.net.reset_node(self.name)
        self.kill()
        self.fs.sync_all()  # the FUSE layer writes the page cache out when the broker exits

    @property
    def stopping(self) -> bool:
        """SIGTERMed, still in its controlled shutdown."""
        return self._stopping and self.process.up

    def after_stop(self, fn: Callable[[], None]) -> None:
        """Run fn once the process is down (at once if it is)."""
        if self.stopping:
            self._after_stop.append(fn)
        else:
            fn()

    @property
    def controller(self) -> str:
        return self.controllers[self._controller_index]

    def _next_controller(self) -> None:
        self._controller_index = (self._controller_index + 1) % len(self.controllers)

    def _check_controller(self, resp: Any) -> None:
        if len(self.controllers) > 1 and answers_not_controller(resp):
            self._next_controller()

    @property
    def up(self) -> bool:
        return self.process.up

    # --- registration and heartbeats (BrokerLifecycle decides) ------------------------------

    def _lifecycle_step(self) -> None:
        lc = self.lifecycle
        assert lc is not None
        now = self.loop.now_ms
        self._lifecycle_timer = None
        body = lc.next_request(now, self.loader.image.offset)
        if body is None:
            self._lifecycle_timer = self.process.call_later(
                max(lc.next_send_ms - now, LIFECYCLE_TICK_MS), self._lifecycle_step)
            return

        def ok(resp: Any) -> None:
            lc.on_response(resp, self.loop.now_ms)
            self._check_controller(resp)
            if lc.ready_to_serve and self._backlog:
                waiting, self._backlog = self._backlog, []
                for args in waiting:
                    self.process.call_later(0, lambda args=args: self.handle(*args))
            self._lifecycle_step()

        def failed(reason: str) -> None:
            lc.on_failure(self.loop.now_ms, reason)
            self._next_controller()
            self._lifecycle_step()

        timeout = max(2000, 4 * self.config.heartbeat_interval_ms)
        self.net.rpc(self.name, self.controller, body, ok, failed, timeout)

    # --- metadata (MetadataLoader + ReplicaManager.apply_metadata_delta) ---------------------

    def _metadata_fetch(self) -> None:
        fetcher = self.metadata_fetcher
        assert fetcher is not None
        self.net.rpc(self.name, self.controller, fetcher.next_request(), self._on_metadata,
                     self._metadata_failed, self.config.request_timeout_ms)  # fmt: skip

    def _metadata_failed(self, reason: str) -> None:
        assert self.metadata_fetcher is not None
        log.info("%s: metadata fetch failed: %s", self.name, reason)
        self.metadata_fetcher.on_failure()
        self._next_controller()
        self.process.call_later(self.metadata_fetcher.backoff_ms(), self._metadata_fetch)

    def _on_metadata(self, resp: Any) -> None:
        assert self.metadata_fetcher is not None and self.replica_manager is not None
        try:
            delta = self.metadata_fetcher.on_response(resp)
        except MetadataFetchError as e:
            self._metadata_failed(str(e))
            return
        if delta is not None:
            self.replica_manager.apply_metadata_delta(delta, self.config.min_insync_replicas)
        self._metadata_fetch()

    # --- AlterPartition (AlterPartitionManager decides when) ---------------------------------

    def _on_alter_partition(self, request: AlterPartitionRequest) -> None:
        self.process.call_later(0, self._poll_alter)

    def _poll_alter(self) -> None:
        rm = self.replica_manager
        assert rm is not None
        manager = rm.alter_partition_manager
        for request in manager.poll(self.loop.now_ms):
            self._send_alter(request)
        if self._alter_timer is not None:
            self._alter_timer.cancel()
            self._alter_timer = None
        due = manager.next_due_ms()
        if due is not None:
            self._alter_timer = self.process.call_later(max(due - self.loop.now_ms, 1),
                                                        self._poll_alter)  # fmt: skip

    def _send_alter(self, request: AlterPartitionRequest) -> None:
        rm = self.replica_manager
        assert rm is not None and self.lifecycle is not None
        topic_id = rm.topic_ids.get(request.topic)
        if topic_id is None:
            rm.on_alter_partition_failure(request, "no topic id known yet")
            return
        body = build_alter_partition(request, self.lifecycle.broker_epoch, topic_id)

        def ok(resp: Any) -> None:
            self._check_controller(resp)
            top, answer = parse_alter_partition(resp)
            rm.on_alter_partition_response(request, answer, top)
            self._poll_alter()

        def failed(reason: str) -> None:
            rm.on_alter_partition_failure(request, reason)
            self._next_controller()
            self._poll_alter()

        self.net.rpc(self.name, self.controller, body, ok, failed, self.config.request_timeout_ms)

    # --- replica fetchers ----------------------------------------------------------------

    def _on_follower_change(self, partition: Partition, fetch: bool) -> None:
        tp = (partition.topic, partition.partition)
        old = self._fetcher_of.pop(tp, None)
        if old is not None and old in self.fetchers:
            self.fetchers[old].session.remove(tp)
        if not fetch or partition.leader_id < 0:
            return
        leader = partition.leader_id
        fetcher = self.fetchers.get(leader)
        if fetcher is None:
            fetcher = self.fetchers[leader] = SimFetcher(self, leader)
        fetcher.add(partition)
        self._fetcher_of[tp] = leader

    # --- requests from clients and peers -----------------------------------------------------

    def handle(self, src: str, body: Any, reply: Callable[[Any], None]) -> None:
        lc = self.lifecycle
        if lc is not None and not lc.ready_to_serve:
            # Not unfenced yet: the request waits, as in a Kafka broker's listen backlog
            # (server/network.py's `serving`); a full backlog drops it (the client times out).
            if len(self._backlog) < BACKLOG:
                self._backlog.append((src, body, reply))
            return
        assert self.apis is not None
        request = Request(body.__api_key__, body.__version__, 0, src, body)
        result = self.apis.handle(request)
        if isinstance(result, Deferred):
            result.add_callback(reply)
        elif isinstance(result, DelayedFetch):
            self._park_fetch(result, reply)
        elif result is NO_RESPONSE:
            return
        elif isinstance(result, CloseConnection):
            reply(ConnectionClosed(result.reason))
        else:
            reply(result)

    def _park_fetch(self, delayed: DelayedFetch, reply: Callable[[Any], None]) -> None:
        """server/network.py's _await_fetch: answer when the purgatory says ready or at
        max_wait, whichever comes first."""
        done = [False]

        def finish(_v: object = None) -> None:
            if done[0]:
                return
            done[0] = True
            timer.cancel()
            delayed.give_up()
            reply(delayed.complete(True))

        timer = self.process.call_later(delayed.max_wait_ms, finish)
        delayed.ready.add_callback(finish)


class SimFetcher:
    """One leader's replica fetches: server/replica_fetcher.py's ReplicaFetcherThread on
    callbacks, driving the same FetchRound (ListOffsets -> OffsetForLeaderEpoch -> Fetch,
    each built after the previous answer was applied); FetchPacer decides when the next round
    may start."""

    def __init__(self, broker: SimBroker, leader_id: int) -> None:
        cfg = broker.config
        self.broker = broker
        self.leader_id = leader_id
        self.leader = broker_name(leader_id)
        rm = broker.replica_manager
        self.session = FetcherSession(broker.node_id, leader_id, cfg.replica_fetch_wait_max_ms,
                                      cfg.replica_fetch_max_bytes, topic_ids=rm.topic_ids,
                                      broker_epoch=lambda: rm.broker_epoch(),
                                      unclean_allowed=rm.unclean_leader_election_enabled,
                                      )  # fmt: skip
        self.pacer = FetchPacer(cfg.replica_fetch_backoff_ms)
        self.timeout_ms = cfg.request_timeout_ms + cfg.replica_fetch_wait_max_ms
        self.running = False
        self._timer: Timer | None = None
        self._round = FetchRound(self.session)
        self.rounds = 0

    def add(self, partition: Partition) -> None:
        self.session.add(partition)
        self.pacer.wake(self.broker.loop.now_ms)
        if not self.running:
            self._schedule(0)

    def _schedule(self, delay_ms: int) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.broker.process.call_later(delay_ms, self._start_round)

    def _start_round(self) -> None:
        self._timer = None
        if self.running or not self.session.states:
            return
        delay = self.pacer.delay_ms(self.broker.loop.now_ms)
        if delay > 0:
            self._schedule(delay)
            return
        self.running = True
        self.rounds += 1
        self.pacer.round_started()
        self._round = FetchRound(self.session)
        self._next()

    def _next(self) -> None:
        rnd = self._round
        pending = rnd.next_request()
        if pending is None:
            self._done(rnd.outcome)
            if rnd.fatal is not None:  # Kafka <= 2.0 exits (KAFKA-3410), as production's on_fatal
                log.error("%s: %s: stopping the broker", self.broker.name, rnd.fatal)
                self.broker.exit(rnd.fatal)
            return

        def ok(resp: Any) -> None:
            rnd.answered(pending, resp)
            self._next()

        def failed(reason: str) -> None:
            rnd.failed()
            self._next()

        self.broker.net.rpc(self.broker.name, self.leader, pending.body, ok, failed,
                            self.timeout_ms)  # fmt: skip

    def _done(self, outcome: RoundOutcome) -> None:
        self.running = False
        delay = self.pacer.round_done(outcome, self.broker.loop.now_ms)
        if self.session.states:
            self._schedule(delay)
