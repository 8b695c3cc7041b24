"""BrokerServer: one broker's parts, built and timed once for both runtimes (Kafka's BrokerServer).

What a broker process is, whichever runtime runs it (production: server/main.py on asyncio;
the simulator: sim/broker.py's SimBroker on virtual time):
- LogManager over the data dir (on `fs`: the machine's file system, or a simulated disk),
  ReplicaManager, ClusterLink (registration, heartbeats, metadata, AlterPartition), KafkaApis
  with GroupApis, and a ReplicaFetcherManager, wired the same way;
- `start()` starts the cluster link and the broker's timers as tasks of its Env:
  ReplicaManager.tick and the group coordinator's tick every TICK_MS, the high-watermark
  checkpoint every HW_CHECKPOINT_MS, and the flush loop (every log at flush.interval.ms under
  the interval policy, else the segment rolls' deferred flushes every ROLL_FLUSH_CHECK_MS);
- fsyncs and checkpoint writes go through a LogFlusher (server/log_flusher.py): its worker
  thread in production, inline on the simulator (`inline_disk=True`: virtual time has no
  thread to wait for; the writes are the same, in the same order).
The runtime's edges stay with each runtime: production's listener (server/network.py), admin
port, signals and clean stop; the simulator's network handler and process lifecycle.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from broker_app.clock import BrokerClock
from broker_app.config import BrokerConfig
from broker_app.env import AsyncioEnv, Env
from broker_app.storage.fs import FileSystem
from broker_app.storage.log import LogConfig
from broker_app.storage.log_manager import LogManager

if TYPE_CHECKING:
    from broker_app.server.replica_fetcher import ReplicaFetcherManager

log = logging.getLogger(__name__)

TICK_MS = 100  # ReplicaManager.tick and the group coordinator's timers
HW_CHECKPOINT_MS = 5_000  # replica.high.watermark.checkpoint.interval.ms
ROLL_FLUSH_CHECK_MS = 1_000  # other flush policies: how often rolled segments are flushed


class BrokerServer:
    def __init__(
        self,
        config: BrokerConfig,
        env: Env | None = None,
        clock: BrokerClock | None = None,
        *,
        fs: FileSystem | None = None,
        inline_disk: bool = False,
        controllers: list[Any] | None = None,
        incarnation_id: uuid.UUID | None = None,
        resolve_address: Callable[[int], object | None] | None = None,
        producer_ids: bool = True,
        rng: Any = None,
        on_fatal: Callable[[str], None] = lambda _reason: None,
    ) -> None:
        """env, clock: production's (AsyncioEnv, a skewable BrokerClock) unless given;
        controllers, incarnation_id: see ClusterLink; resolve_address(node): a leader's
        address for the replica fetchers (default: --peer-address, else its registered
        listener); producer_ids: keep a ProducerIdManager (InitProducerId) in the data dir;
        on_fatal(reason): a replica fetcher found the broker must stop (KAFKA-3410)."""
        if not config.clustered and controllers is None:
            raise ValueError("a broker needs a controller: --controller, or combined mode")
        from broker_app.coordinator.producer_ids import ProducerIdManager
        from broker_app.replication.replica_manager import ReplicaManager
        from broker_app.server.cluster_link import ClusterLink
        from broker_app.server.group_apis import GroupApis
        from broker_app.server.kafka_apis import KafkaApis
        from broker_app.server.log_flusher import LogFlusher

        self.config = config
        self.env: Env = env or AsyncioEnv()
        self.clock = clock or BrokerClock()  # the one seam the `clock` nemesis skews
        if fs is None:
            config.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_manager = LogManager.open(
            config.data_dir,
            LogConfig(
                segment_bytes=config.segment_bytes,
                max_batch_bytes=config.max_message_bytes,
                flush_every_batch=config.flush_every_batch or config.flush == "every-batch",
                defer_roll_flush=True,  # the flush loop runs it (off the event loop)
            ),
            wall_clock_ms=self.clock.wall_ms,
            **({} if fs is None else {"fs": fs}),
        )
        self.flusher = LogFlusher(self.log_manager, inline=inline_disk)
        rm = self.replica_manager = ReplicaManager(
            config.node_id, self.log_manager, config.behaviour, config.replica_lag_time_max_ms,
            clock=self.clock.monotonic_ms,
            retention_check_interval_ms=config.log_retention_check_interval_ms,
        )  # fmt: skip
        # KIP-392: the selector and this broker's rack
        rm.replica_selector = config.replica_selector
        rm.local_rack = config.broker_rack
        self.link = ClusterLink(config, rm, self.env, controllers, incarnation_id)
        self.apis = KafkaApis(
            config, rm, GroupApis(config, rm, self.link, self.clock),
            ProducerIdManager(config.data_dir, config.node_id) if producer_ids else None,
            cluster=self.link, rng=rng,
        )  # fmt: skip
        self._fetcher_settings = (resolve_address or self._registered_address, on_fatal)
        self.fetchers: ReplicaFetcherManager | None = None  # made by start()
        self.tasks: list[Any] = []

    def _registered_address(self, node: int) -> tuple[str, int] | None:
        if node in self.config.peer_addresses:
            return self.config.peer_addresses[node]
        reg = self.link.image.brokers.get(node)
        return None if reg is None else (reg.host, reg.port)

    def start(self) -> None:
        """The replica fetchers, the cluster link and the timers (see the module docstring)."""
        from broker_app.server.replica_fetcher import ReplicaFetcherManager

        config, (resolve, on_fatal) = self.config, self._fetcher_settings
        self.fetchers = ReplicaFetcherManager(
            self.replica_manager, resolve, config.replica_fetch_wait_max_ms,
            config.replica_fetch_max_bytes, config.replica_fetch_backoff_ms,
            config.request_timeout_ms, on_fatal=on_fatal, env=self.env,
        )  # fmt: skip
        spawn = self.env.spawn
        self.link.start()
        self.tasks += [spawn(self._tick_loop()), spawn(self._checkpoint_loop()),
                       spawn(self._flush_loop())]  # fmt: skip

    async def _tick_loop(self) -> None:
        rm, groups = self.replica_manager, self.apis.groups
        while True:
            await self.env.sleep(TICK_MS)
            try:
                rm.tick()
            except Exception:
                log.exception("replica manager tick failed")
            try:
                groups.tick()  # group coordinator: leadership, loading, session timers
            except Exception:
                log.exception("group coordinator tick failed")

    async def _checkpoint_loop(self) -> None:
        while True:
            await self.env.sleep(HW_CHECKPOINT_MS)
            try:
                await self.flusher.checkpoint_high_watermarks()
            except Exception:
                log.exception("high watermark checkpoint failed")

    async def _flush_loop(self) -> None:
        # Interval policy: flush everything; otherwise only the segments rolled meanwhile.
        every_interval = self.config.flush == "interval"
        period = self.config.flush_interval_ms if every_interval else ROLL_FLUSH_CHECK_MS
        while True:
            await self.env.sleep(period)
            try:
                await self.flusher.flush_logs(all_logs=every_interval)
            except Exception:
                log.exception("log flush failed")
