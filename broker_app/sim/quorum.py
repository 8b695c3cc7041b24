"""SimQuorumController: one voter of a simulated KRaft controller quorum (issue 13).

What `highwater controller --controller-quorum-voters` runs over sockets (quorum_main.py), on
virtual time: KafkaRaftClient (votes, the replicated `__cluster_metadata` log) under
RaftQuorumController (the metadata state machine, active only on the leader, and the
operations the real ControllerApis calls for the brokers' requests), driven by production's
RaftManager (controller/raft_manager.py) on this voter's SimEnv: the same driver loop, the
same Raft requests (kio entities, request and response, two channels per peer) over the
simulated network, so cuts, latency, kills and pauses of controllers act on them like on any
other link; and controller/server.py's timer (RaftQuorumController.tick).

Contract:
- Durability: the production FileReplicatedLog and FileQuorumStateStore, on this voter's own
  simulated disk (storage/fs.py's MemoryFileSystem, which outlives its processes). A kill is
  SIGKILL: the page cache survives, as in containers, where controllers do not sit on the
  disk-fault layer (only brokers do); `power_loss()` is there for a test that wants more. A
  restart opens the log and the election state from that disk (recovery, as
  `highwater controller` does), a new client and controller, and replays the committed log.
- A broker request that writes is answered only when its records are committed
  (PendingResponse), NOT_CONTROLLER if leadership was lost first; a standby answers
  NOT_CONTROLLER at once (the broker then tries the next voter). Metadata fetches are served
  by every voter up to its high watermark and park at the end; both as production's
  controller/server.py answers them (controller/respond.py).
- A fatal Raft error (RaftManager.on_fatal: a RaftFatalError — two leaders in an epoch, a
  truncation below the high watermark — or any error of a poll) halts the voter as Kafka's
  fatal fault handler halts the process (production: quorum_main.halt): it is killed (its
  page cache kept) and the halt is recorded in `exits`, which the run check
  `unexpected-exits` reports.
- `applied` keeps every committed metadata record this voter's state machine applied, over
  all incarnations: what the end-of-run check compares across voters
  (harness/checker/metadata_check.committed_log_divergence).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker_app.controller.config import ControllerConfig
from broker_app.controller.controller_apis import ControllerApis
from broker_app.controller.quorum_controller import QuorumController
from broker_app.controller.raft_controller import RaftQuorumController
from broker_app.controller.raft_manager import RaftManager, is_raft_request
from broker_app.controller.respond import TIMED_OUT, ParkedMetadataFetches, answer_request
from broker_app.protocol.codec import Request
from broker_app.raft import KafkaRaftClient, RaftConfig, RaftFatalError
from broker_app.raft.file_log import FileQuorumStateStore, FileReplicatedLog
from broker_app.storage.fs import MemoryFileSystem

from .broker import ConnectionClosed
from .env import SimEnv
from .events import EventLoop, Process
from .network import Network

# Plans number controllers 1..N (node names controller-N); their Raft/KRaft node ids are
# CONTROLLER_ID_BASE + N, apart from the brokers' ids as in Kafka (node ids are unique across
# a cluster: a controller refuses a broker registering with its own id).
CONTROLLER_ID_BASE = 3000


def controller_name(node_id: int) -> str:
    """The node name of the controller with Raft node id `node_id`."""
    return f"controller-{node_id - CONTROLLER_ID_BASE}"


class SimQuorumController:
    def __init__(self, loop: EventLoop, net: Network, config: ControllerConfig,
                 voters: tuple[int, ...], tick_interval_ms: int = 100,
                 election_timeout_ms: int = 1000, fetch_timeout_ms: int = 2000) -> None:
        self.loop = loop
        self.net = net
        self.config = config
        self.voters = voters
        self.name = controller_name(config.node_id)
        self.tick_interval_ms = tick_interval_ms
        self.raft_config = RaftConfig(
            node_id=config.node_id, voters=frozenset(voters),
            election_timeout_ms=election_timeout_ms, fetch_timeout_ms=fetch_timeout_ms,
            raft_vote_log_check=config.raft_vote_log_check, pre_vote=config.pre_vote)
        self.process = Process(loop, self.name)
        self.fs = MemoryFileSystem()  # the controller's disk: outlives its processes
        self.data_dir = Path("/sim") / self.name / "data"
        self.raft_log: FileReplicatedLog | None = None
        self.applied: list[tuple[int, bytes]] = []
        #: `unexpected-exits` (harness/checker/exits.py): every time this voter halted itself
        self.exits: list[str] = []
        self.raft: RaftQuorumController | None = None
        self.apis: ControllerApis | None = None
        self.manager: RaftManager | None = None
        self.env = SimEnv(loop, net, self.process, self.name)
        self._parked = ParkedMetadataFetches(self.env)
        self._incarnation = 0
        net.add_node(self.name, self.process, self.handle)

    # -- queries (what the harness reads) ---------------------------------------------------
    @property
    def controller(self) -> QuorumController | None:
        """The active QuorumController, None on a standby or a dead voter."""
        return self.raft.active if self.raft is not None and self.process.up else None

    @property
    def client(self) -> KafkaRaftClient | None:
        return self.raft.client if self.raft is not None else None

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        self.process.start()
        self._incarnation += 1
        seed = self.loop.rng.getrandbits(64)
        self.raft_log = FileReplicatedLog(self.data_dir, fs=self.fs, wall_clock_ms=self.loop.clock)
        client = KafkaRaftClient(self.raft_config, self.raft_log,
                                 FileQuorumStateStore(self.data_dir, self.fs),
                                 random.Random(seed), self.loop.now_ms)
        self.raft = RaftQuorumController(self.config, client, self._new_topic_id)
        self.raft.commit_listener = self.applied.extend
        self.apis = ControllerApis(self.raft, (self.name, 9093))
        self._parked.clear()
        # production's RaftManager on this voter's Env: the same driver, the same requests
        self.manager = RaftManager(
            self.raft, {v: controller_name(v) for v in self.voters}, self.config.cluster_id,
            on_commit=self._parked.wake, on_fatal=self.halt, env=self.env)  # fmt: skip
        self.raft.on_write = self.manager.wakeup  # appended records: flush, replicate now
        self.manager.start()
        self.env.spawn(self._tick_loop(self.raft))

    async def _tick_loop(self, raft: RaftQuorumController) -> None:
        """controller/server.py's timer: RaftQuorumController.tick every tick_interval_ms."""
        while True:
            raft.tick(self.env.now_ms())
            await self.env.sleep(self.tick_interval_ms)

    def kill(self) -> None:
        """SIGKILL: the process is gone; its disk keeps everything written (page cache)."""
        self.process.kill()
        self.raft = self.apis = self.manager = None
        self._parked.clear()

    def _new_topic_id(self) -> uuid.UUID:
        return uuid.UUID(int=self.loop.rng.getrandbits(128), version=4)

    def halt(self, reason: str) -> None:
        """A fatal Raft error: the process halts (SIGKILL's effect: its page cache survives)."""
        self.exits.append(f"{self.name} halted at {self.loop.now_ms / 1000:.1f} s: {reason}")
        self.net.reset_node(self.name)
        self.kill()

    # -- the network handler ----------------------------------------------------------------
    def handle(self, src: str, body: Any, reply: Callable[[Any], None]) -> None:
        if self.raft is None or self.manager is None:
            return
        request = Request(body.__api_key__, body.__version__, 0, src, body)
        if is_raft_request(request):
            # the connection task reads it at once, as production's does
            self.env.run_now(self._answer_raft(self.manager, request, reply))
            return
        incarnation = self._incarnation

        def answer(response: Any) -> None:
            if incarnation != self._incarnation or not self.process.up:
                return  # died before the commit: the broker's request times out
            if response is not TIMED_OUT:  # production closes the connection: no answer
                reply(response)

        assert self.apis is not None
        answer_request(self.env, self.apis, request, self._parked, answer)

    async def _answer_raft(self, manager: RaftManager, request: Request,
                           reply: Callable[[Any], None]) -> None:  # fmt: skip
        try:
            response = await manager.handle_request(request)
        except (ValueError, TypeError, TimeoutError, RaftFatalError) as e:
            # production closes the connection (controller/server.py)
            reply(ConnectionClosed(f"{type(e).__name__}: {e}"))
            return
        reply(response)

    def create_topics(self, topics: list[Any]) -> Any:
        """CreateTopics as an admin client would send it to this (active) controller; the
        answer is the active controller's (not yet committed) result."""
        from broker_app.controller.messages import CreateTopicsRequest

        assert self.raft is not None
        resp, _ = self.raft.create_topics(CreateTopicsRequest(topics), self.loop.now_ms)
        return resp
