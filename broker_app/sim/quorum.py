"""SimQuorumController: one voter of a simulated KRaft controller quorum (issue 13).

The real sans-I/O parts on virtual time, as `highwater controller --controller-quorum-voters`
runs them over sockets (quorum_main.py), in the manner of Kafka's RaftEventSimulationTest:
KafkaRaftClient (votes, the replicated `__cluster_metadata` log) under RaftQuorumController
(the metadata state machine, active only on the leader, and the operations the real
ControllerApis calls for the brokers' requests). Raft messages (Envelopes) travel between voters
over the simulated network one way each (a response is its own message), so cuts, latency,
kills and pauses of controllers act on them like on any other link.

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
- A RaftFatalError (two leaders in an epoch, a truncation below the high watermark) halts the
  voter as Kafka's fatal fault handler halts the process (production: quorum_main.halt): it
  is killed (its page cache kept) and the halt is recorded in `exits`, which the run check
  `unexpected-exits` reports. Any other error propagates and aborts the simulation.
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
from broker_app.controller.respond import TIMED_OUT, ParkedMetadataFetches, answer_request
from broker_app.protocol.codec import Request
from broker_app.raft import KafkaRaftClient, RaftConfig, RaftFatalError
from broker_app.raft.file_log import FileQuorumStateStore, FileReplicatedLog
from broker_app.raft.messages import Envelope
from broker_app.storage.fs import MemoryFileSystem

from .env import SimEnv
from .events import EventLoop, Process, Timer
from .network import Network

RAFT_MESSAGE_TIMEOUT_MS = 60_000  # one-way Raft messages: never answered through the rpc
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
        self._timer: Timer | None = None
        self.env = SimEnv(loop, net, self.process, self.name)
        self._parked = ParkedMetadataFetches(self.env)
        self._hw: int | None = None
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
        self.raft.on_write = self._wake
        self.apis = ControllerApis(self.raft, (self.name, 9093))
        self._parked.clear()
        self._hw, self._timer = None, None
        self.process.every(self.tick_interval_ms, self._tick)
        self._poll()

    def kill(self) -> None:
        """SIGKILL: the process is gone; its disk keeps everything written (page cache)."""
        self.process.kill()
        self.raft = self.apis = None
        self._parked.clear()
        self._timer = None

    def _new_topic_id(self) -> uuid.UUID:
        return uuid.UUID(int=self.loop.rng.getrandbits(128), version=4)

    # -- driving the Raft client ------------------------------------------------------------
    def _drive(self, out: list[Envelope]) -> None:
        """Send what the client produced, wake parked fetches if the HW moved, and set the
        timer for the client's next deadline."""
        for env in out:
            self.net.rpc(self.name, controller_name(env.dst), env, None, None,
                         RAFT_MESSAGE_TIMEOUT_MS)
        assert self.raft is not None
        hw = self.raft.client.high_watermark
        if hw != self._hw:
            self._hw = hw
            self._parked.wake()
        if self._timer is not None:
            self._timer.cancel()
        delay = max(self.raft.deadline_ms() - self.loop.now_ms, 0)
        self._timer = self.process.call_later(delay, self._poll)

    def _poll(self) -> None:
        self._timer = None
        if self.raft is not None:
            try:
                out = self.raft.poll(self.loop.now_ms)
            except RaftFatalError as e:
                self.halt(str(e))
                return
            self._drive(out)

    def halt(self, reason: str) -> None:
        """A fatal Raft error: the process halts (SIGKILL's effect: its page cache survives)."""
        self.exits.append(f"{self.name} halted at {self.loop.now_ms / 1000:.1f} s: {reason}")
        self.net.reset_node(self.name)
        self.kill()

    def _wake(self) -> None:
        """Records were appended (an operation wrote): flush and replicate them now."""
        if self.raft is not None:
            self._drive([])

    def _tick(self) -> None:
        if self.raft is not None:
            self.raft.tick(self.loop.now_ms)
            # A write that bypassed the operations (the harness appending directly) moved the
            # client's deadline: re-arm the timer on it.
            self._drive([])

    # -- the network handler ----------------------------------------------------------------
    def handle(self, src: str, body: Any, reply: Callable[[Any], None]) -> None:
        if self.raft is None:
            return
        if isinstance(body, Envelope):
            try:
                out = self.raft.handle(body, self.loop.now_ms)
            except RaftFatalError as e:
                self.halt(str(e))
                return
            self._drive(out)
            return
        self._handle_request(src, body, reply)

    def _handle_request(self, src: str, body: Any, reply: Callable[[Any], None]) -> None:
        assert self.apis is not None
        request = Request(body.__api_key__, body.__version__, 0, src, body)
        incarnation = self._incarnation

        def answer(response: Any) -> None:
            if incarnation != self._incarnation or not self.process.up:
                return  # died before the commit: the broker's request times out
            if response is not TIMED_OUT:  # production closes the connection: no answer
                reply(response)

        answer_request(self.env, self.apis, request, self._parked, answer)

    def create_topics(self, topics: list[Any]) -> Any:
        """CreateTopics as an admin client would send it to this (active) controller; the
        answer is the active controller's (not yet committed) result."""
        from broker_app.controller.messages import CreateTopicsRequest

        assert self.raft is not None
        resp, _ = self.raft.create_topics(CreateTopicsRequest(topics), self.loop.now_ms)
        return resp
