"""`highwater controller [--controller-quorum-voters 1@h:p,2@h:p,3@h:p]`: one voter of a Raft
quorum of controllers (issue 13, step 2); without the flag a one-voter quorum of its own, as a
lone KRaft controller runs (issue 26: Raft always).

Start-up: open the Raft log (`<data-dir>/__cluster_metadata-0/`) and the election state
(`<data-dir>/quorum-state`), listen on --port (Kafka requests from brokers and Raft requests
from the other voters: the address listed for this node in the voters must reach it), start
the Raft driver. Prints `controller <node-id> listening on HOST:PORT admin PORT` once both
listeners accept connections. On SIGTERM the voter shuts down as Kafka's does
(RaftManager.stop): the active controller resigns (EndQuorumEpoch), and the process waits (at
most 5 s) until another voter leads before exiting.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from broker_app.environment import monotonic_ms, new_rng
from broker_app.protocol.apis import VersionRange
from broker_app.raft import KafkaRaftClient, RaftConfig, parse_quorum_voters
from broker_app.raft.file_log import FileQuorumStateStore, FileReplicatedLog
from broker_app.server.liveness import serve_until_signalled

from .apis import CONTROLLER_APIS, ControllerApiKey
from .config import ControllerConfig
from .raft_controller import RaftQuorumController
from .raft_manager import RAFT_APIS, RAFT_FETCH_VERSION, RaftManager
from .server import ControllerServer, QuorumEdge

log = logging.getLogger("broker_app.controller")
FATAL_EXIT_CODE = 1  # Kafka's ProcessTerminatingFaultHandler halts with status 1


def halt(reason: str) -> None:
    """A fatal Raft error (RaftManager.on_fatal): stop at once, as Kafka's fatal fault handler
    halts the JVM (Exit.halt: no shutdown hooks, nothing flushed that was not)."""
    log.critical("halting the controller: %s", reason)
    logging.shutdown()
    os._exit(FATAL_EXIT_CODE)


@dataclass(frozen=True)
class QuorumListener:
    """Where a voter listens and keeps its log, and its Raft timings: the controller
    process's own flags (main.py), or a combined-mode broker's choice (server/combined.py)."""

    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 0
    advertised_host: str | None = None
    admin_port: int | None = None
    voters: str | None = None  # `id@host:port,...`; None: a one-voter quorum of this node
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    tick_interval_ms: int = 100
    fetch_max_wait_cap_ms: int | None = None

    @classmethod
    def of_args(cls, args: argparse.Namespace) -> QuorumListener:
        return cls(args.data_dir, args.host, args.port, args.advertised_host, args.admin_port,
                   args.controller_quorum_voters, args.controller_quorum_election_timeout_ms,
                   args.controller_quorum_fetch_timeout_ms, args.tick_interval_ms,
                   args.fetch_max_wait_cap_ms)  # fmt: skip


@dataclass
class RunningQuorum:
    """A started voter: its listener's port, and how it stops (`stop`: the active controller
    resigns first, as Kafka's RaftManager.stop; `close`: the log's files, last)."""

    server: ControllerServer
    manager: RaftManager
    raft_log: FileReplicatedLog

    @property
    def port(self) -> int:
        return self.server.port

    async def stop(self) -> None:
        await self.manager.stop()  # the active controller resigns (EndQuorumEpoch) first
        await self.server.stop()

    def close(self) -> None:
        self.raft_log.close()


async def start_quorum(config: ControllerConfig, listen: QuorumListener,
                       on_fatal: Callable[[str], None] = halt) -> RunningQuorum:
    """Open the voter's Raft log and election state, listen, start the Raft driver."""
    # Alone, this controller's own address: a one-voter quorum never dials it.
    alone = f"{config.node_id}@{listen.advertised_host or listen.host}:{listen.port}"
    voters = parse_quorum_voters(listen.voters or alone)
    if config.node_id not in voters:
        raise ValueError(f"--node-id {config.node_id} is not among the quorum voters "
                         f"{sorted(voters)}")
    raft_config = RaftConfig(
        node_id=config.node_id, voters=frozenset(voters),
        election_timeout_ms=listen.election_timeout_ms,
        fetch_timeout_ms=listen.fetch_timeout_ms,
        raft_vote_log_check=config.raft_vote_log_check, pre_vote=config.pre_vote)
    raft_log = FileReplicatedLog(listen.data_dir)
    try:
        client = KafkaRaftClient(raft_config, raft_log, FileQuorumStateStore(listen.data_dir),
                                 new_rng(), monotonic_ms())
        raft = RaftQuorumController(config, client)
        server: ControllerServer | None = None

        def on_commit() -> None:
            if server is not None:
                server.wake_parked_fetches()

        manager = RaftManager(raft, voters, config.cluster_id, on_commit, on_fatal=on_fatal)
        raft.on_write = manager.wakeup  # appended records: flush and replicate them now
        apis = {**CONTROLLER_APIS, **RAFT_APIS,
                ControllerApiKey.FETCH: VersionRange(4, RAFT_FETCH_VERSION)}
        server = ControllerServer(
            QuorumEdge(raft, manager, apis), listen.host, listen.port, listen.admin_port,
            listen.advertised_host, listen.tick_interval_ms,
            fetch_max_wait_cap_ms=listen.fetch_max_wait_cap_ms,
        )  # fmt: skip
        await server.start()
        me = (config.node_id, server.advertised_host, server.port)

        def active_endpoint() -> tuple[int, str, int]:
            # The voters' addresses are the ones controllers use for each other; a client
            # sees the same ones (with Toxiproxy in between they would be proxies: step 7).
            leader = client.leader_id
            if leader is None or leader == config.node_id or leader not in voters:
                return me
            return (leader, *voters[leader])

        assert server.apis is not None
        server.apis.controller_endpoint = active_endpoint
        manager.start()
    except BaseException:
        raft_log.close()
        raise
    log.info("controller %d: voter of %s, raft epoch %d, log end offset %d",
             config.node_id, sorted(voters), client.epoch, raft_log.end_offset)
    return RunningQuorum(server, manager, raft_log)


async def serve_quorum(config: ControllerConfig, args: argparse.Namespace) -> None:
    """`highwater controller`: start, print the listening line, serve until signalled."""
    quorum = await start_quorum(config, QuorumListener.of_args(args))
    try:
        print(f"controller {config.node_id} listening on {args.host}:{quorum.port} "
              f"admin {quorum.server.admin_port}", flush=True)

        async def shutdown() -> None:
            log.info("controller %d shutting down", config.node_id)
            await quorum.stop()

        # Bounded like the broker's (broker_app/server/liveness.py): a hung resign or a hogged
        # loop cannot keep a SIGTERMed controller alive past liveness.HARD_EXIT_S.
        await serve_until_signalled(shutdown)
    finally:
        quorum.close()
