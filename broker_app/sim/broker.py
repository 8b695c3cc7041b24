"""SimBroker: one broker of the simulator: production's BrokerServer on virtual time.

What is the broker's own code and what is the simulator's edge:
- own code: server/broker_server.py's BrokerServer, built as production builds it —
  ReplicaManager (Partition, purgatories, AlterPartitionManager) over the production
  LogManager, Log and LogSegment, here on a per-broker simulated disk (storage/fs.py's
  MemoryFileSystem: the containers' page-cache rule, unsynced writes lost on a power loss),
  KafkaApis answering every request, ClusterLink (registration, heartbeats and controlled
  shutdown by BrokerLifecycle, the metadata long-poll, AlterPartition sends), the replica
  fetcher threads, server/respond.py for answers the purgatories park, and the broker's
  timers (ticks, HW checkpoints, flushes) — all written once against broker_app/env.py's Env
  and run here on sim/env.py's SimEnv;
- the edge (this module): the broker's disk and process (start, SIGTERM, SIGKILL), and the
  listener: requests arrive as entities from sim/network.py (never encoded), and one that
  arrives before the broker is first unfenced waits (ClusterLink.serving), as in a listen
  backlog.
`stop()` is SIGTERM (ClusterLink.controlled_shutdown, then flush, checkpoints, clean-shutdown
marker); `kill()` is SIGKILL (the page cache survives: nothing lost); `fs.power_loss()`
afterwards is the power loss. A stopped broker's page cache is written out once it is down, as
the containers' FUSE layer does.
Not modelled: disk stalls, the flusher's worker thread (its jobs run inline, in the same
order), one request at a time per connection (see sim/env.py).
"""

from __future__ import annotations

import dataclasses
import logging
import random
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from broker_app.clock import BrokerClock
from broker_app.config import BrokerConfig
from broker_app.controller.broker_lifecycle import BrokerLifecycle
from broker_app.metadata import MetadataLoader
from broker_app.metadata.image import MetadataImage
from broker_app.protocol.apis import advertised_apis
from broker_app.protocol.codec import Request
from broker_app.replication.replica_manager import ReplicaManager
from broker_app.server.broker_server import BrokerServer
from broker_app.server.cluster_link import ClusterLink
from broker_app.server.kafka_apis import NO_RESPONSE, CloseConnection, KafkaApis
from broker_app.server.replica_fetcher import ReplicaFetcherThread
from broker_app.server.respond import is_parked, respond
from broker_app.storage.fs import MemoryFileSystem

from .env import SimEnv
from .events import EventLoop, Process
from .network import Network

log = logging.getLogger(__name__)

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
        ClusterLink moves to the next on a failure or a NOT_CONTROLLER answer)."""
        self.loop = loop
        self.net = net
        self.config = config
        self.node_id = config.node_id
        self.name = broker_name(config.node_id)
        self.controllers = (controller,) if isinstance(controller, str) else tuple(controller)
        self.process = Process(loop, self.name)
        self.fs = MemoryFileSystem()  # the broker's disk: outlives its processes
        self.data_dir = Path("/sim") / self.name / "data"
        net.add_node(self.name, self.process, self.handle)
        self.replica_manager: ReplicaManager | None = None
        self.link: ClusterLink | None = None
        self.apis: KafkaApis | None = None
        #: the replica fetcher threads by leader id (the invariant checker follows their
        #: rounds after every event: a plain attribute, read a million times a run)
        self.fetchers: dict[int, ReplicaFetcherThread] = {}
        self._stopping = False  # SIGTERMed: in the controlled shutdown
        self._backlog = 0  # requests waiting for the first unfence
        self._after_stop: list[Callable[[], None]] = []
        #: each time the process stopped itself (exit), a line naming it: the run check
        #: `unexpected-exits` (harness/checker/exits.py)
        self.exits: list[str] = []

    # --- what the harness reads ---------------------------------------------------------------

    @property
    def lifecycle(self) -> BrokerLifecycle | None:
        return None if self.link is None else self.link.lifecycle

    @property
    def loader(self) -> MetadataLoader:
        return MetadataLoader() if self.link is None else self.link.loader

    @property
    def image(self) -> MetadataImage:
        return self.loader.image


    def advertised_versions(self) -> dict[int, int]:
        """The highest version of each API its ApiVersions answers (KafkaApis uses the same
        advertised_apis): what a simulated client negotiates, without a message."""
        return {int(k): r.max_version for k, r in
                advertised_apis(self.config.behaviour.client_leader_epochs).items()}

    # --- process lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        cfg = dataclasses.replace(self.config, data_dir=self.data_dir)  # on this broker's disk
        self.process.start()
        env = SimEnv(self.loop, self.net, self.process, self.name)
        incarnation = uuid.UUID(int=self.loop.rng.getrandbits(128), version=4)
        server = BrokerServer(
            cfg, env,
            # virtual time is the simulated wall clock too
            BrokerClock.of_ms(self.loop.clock, self.loop.clock),
            fs=self.fs, inline_disk=True, controllers=list(self.controllers),
            incarnation_id=incarnation, resolve_address=broker_name,
            # Sim producers do not send InitProducerId (the simulator gives them ids).
            producer_ids=False,
            # seeded from this incarnation's id: no extra draw from the loop's stream
            rng=random.Random(incarnation.int),
            on_fatal=self.exit,  # Kafka <= 2.0 exits (KAFKA-3410)
        )  # fmt: skip
        self.server = server
        self.store = server.log_manager
        self.replica_manager = server.replica_manager
        self.link = server.link
        self.apis = server.apis
        self._stopping = False
        self._backlog = 0
        server.start()
        assert server.fetchers is not None
        self.fetchers = server.fetchers.threads

    def kill(self) -> None:
        """SIGKILL: the process is gone; its disk keeps everything written (page cache)."""
        self.process.kill()
        self.fetchers = {}
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
        assert self.link is not None
        self._stopping = True
        self.link.env.spawn(self._shut_down(self.link))

    async def _shut_down(self, link: ClusterLink) -> None:
        await link.controlled_shutdown()
        self.store.shutdown(link.broker_epoch)
        self.net.reset_node(self.name)
        self.kill()
        self.fs.sync_all()  # the FUSE layer writes the page cache out when the broker exits

    def exit(self, reason: str) -> None:
        """The process stops itself on a fatal error: Kafka's Exit.exit runs the shutdown
        hook, so this is stop()'s clean shutdown, recorded in `exits`."""
        self.exits.append(f"{self.name} exited on its own at "
                          f"{self.loop.now_ms / 1000:.1f} s: {reason}")
        self.stop()

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
    def up(self) -> bool:
        return self.process.up

    # --- requests from clients and peers -----------------------------------------------------

    def handle(self, src: str, body: Any, reply: Callable[[Any], None]) -> None:
        link = self.link
        if link is not None and not link.serving.is_set():
            # Not unfenced yet: the request waits, as in a Kafka broker's listen backlog
            # (server/network.py's `serving`); a full backlog drops it (the client times out).
            if self._backlog < BACKLOG:
                self._backlog += 1
                link.env.spawn(self._when_serving(link, src, body, reply))
            return
        assert self.apis is not None
        request = Request(body.__api_key__, body.__version__, 0, src, body)
        result = self.apis.handle(request)
        if is_parked(result):
            respond(link.env, result, partial(_answer, reply))  # type: ignore[union-attr]
        elif result is not NO_RESPONSE:
            _answer(reply, result)

    async def _when_serving(self, link: ClusterLink, src: str, body: Any,
                            reply: Callable[[Any], None]) -> None:  # fmt: skip
        await link.env.wait(link.serving, None)
        self._backlog -= 1
        self.handle(src, body, reply)


def _answer(reply: Callable[[Any], None], result: Any) -> None:
    """What the client gets: the response, or its connection closed (CloseConnection)."""
    reply(ConnectionClosed(result.reason) if isinstance(result, CloseConnection) else result)
