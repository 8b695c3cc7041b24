"""Combined mode: a broker started without a controller runs a one-voter KRaft controller in
its own process and joins it, as a Kafka node with `process.roles=broker,controller` does
(KIP-500; issue 26: one control plane). There is no other single-node metadata path: topics,
configs and leaderships live in the controller's Raft log, which the broker applies like any
cluster member.

Contract:
- The controller keeps its Raft log and election state in `<data-dir>/controller/`: beside
  the partitions on the same disk (Kafka's metadata.log.dir defaults to the first log dir),
  and under a name LogManager does not take for a partition (`__cluster_metadata-0` would
  parse as one).
- It runs on its own thread with its own event loop, as a Kafka combined node runs its
  controller on its own threads: neither role's work (a broker applying 10,000 partitions, a
  controller writing their records) stalls the other's timers and requests.
- It listens on 127.0.0.1 on a free port; only this process's broker dials it (Kafka's
  combined node also serves its controller listener to other voters: a lone node has none).
- Its settings are the broker's where Kafka's one properties file gives both the same name
  (node.id, cluster.id, num.partitions, default.replication.factor, min.insync.replicas), the
  version switches both processes take, and the broker's CreateTopics partition budget; the
  rest are the controller's defaults (controller/config.py).
- A fatal Raft error halts the whole process (quorum_main.halt), as Kafka's fault handler
  halts a combined node's JVM.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from dataclasses import replace
from pathlib import Path

from broker_app.config import BrokerConfig
from broker_app.controller.config import ControllerConfig
from broker_app.controller.quorum_main import QuorumListener, RunningQuorum, start_quorum

log = logging.getLogger(__name__)

CONTROLLER_DIR = "controller"
CONTROLLER_HOST = "127.0.0.1"
START_TIMEOUT_S = 60.0  # opening a long metadata log (replay, snapshot) takes a while
STOP_TIMEOUT_S = 5.0  # the active controller resigns first (RaftManager.stop)


def controller_dir(data_dir: Path) -> Path:
    return data_dir / CONTROLLER_DIR


def controller_config(config: BrokerConfig) -> ControllerConfig:
    """The combined node's controller settings (see the contract above)."""
    b = config.behaviour
    return ControllerConfig(
        node_id=config.node_id,
        cluster_id=config.cluster_id,
        num_partitions=config.num_partitions,
        max_partitions_per_create_request=config.max_partitions_per_create_request,
        default_replication_factor=config.default_replication_factor,
        min_insync_replicas=config.min_insync_replicas,
        unclean_leader_election=b.unclean_leader_election,
        eligible_leader_replicas=b.eligible_leader_replicas,
        isr_eligibility=b.isr_eligibility,
        isr_broker_epochs=b.isr_broker_epochs,
    )


class CombinedController:
    """This node's controller on its own thread: `start` (blocking, bounded) returns the
    broker's config joined to it; `stop` (awaitable from the broker's loop, bounded) resigns
    and closes its log."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self._loop: asyncio.AbstractEventLoop | None = None
        self._quorum: RunningQuorum | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="controller", daemon=True)

    def start(self) -> BrokerConfig:
        self._thread.start()
        if not self._started.wait(START_TIMEOUT_S):
            raise TimeoutError(f"this node's controller did not start in {START_TIMEOUT_S} s")
        if self._error is not None:
            raise self._error
        assert self._quorum is not None
        return replace(self.config, controller=(CONTROLLER_HOST, self._quorum.port))

    def _run(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._serve())
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        try:
            self._quorum = await start_quorum(
                controller_config(self.config),
                QuorumListener(controller_dir(self.config.data_dir), host=CONTROLLER_HOST),
            )
        except BaseException as e:  # handed to start(), which raises it in the broker's thread
            self._error = e
            self._started.set()
            return
        self._started.set()
        try:
            await self._stop.wait()
            await asyncio.wait_for(self._quorum.stop(), STOP_TIMEOUT_S)
        except TimeoutError:
            log.warning("this node's controller took over %g s to stop", STOP_TIMEOUT_S)
        finally:
            self._quorum.close()

    async def stop(self) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # its loop already closed: it has stopped
                loop.call_soon_threadsafe(stop.set)
        await asyncio.to_thread(self._thread.join, STOP_TIMEOUT_S + 1)
