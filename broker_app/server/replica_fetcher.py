"""ReplicaFetcherThread / ReplicaFetcherManager: the edge driving a FetcherSession.

One ReplicaFetcherThread (a task of broker_app/env.py's Env: an asyncio task in production, a
task on the simulator's virtual time in SimBroker — the same code) per leader broker. What to
send and how to apply the answers is replication/fetcher_session.py and fetcher_round.py
(sans I/O): a round is ListOffsets for partitions out of range,
OffsetForLeaderEpoch v4 for partitions "truncating" (kip-101 / kip-279), then one Fetch v15
for every partition "fetching"; this module only sends them. The leader address is
`--peer-address ID=HOST:PORT` when given (e.g. a Toxiproxy proxy), else the leader's registered
listener. When a round made no progress (nothing fetchable because every partition is FENCED,
a connection error, a partition error) the thread waits as FetchPacer decides
(replica.fetch.backoff.ms, doubling, capped at 10x), woken early when new metadata re-adds a
partition; after every round it yields to the event loop, so heartbeats, metadata and clients
are served whatever the fetcher's state. A
partition leaves its thread when it stops being a follower of that leader (ReplicaManager's
on_follower_change), and a response is applied only if the partition still has the same fetcher
state object (leadership did not change while the request was in flight). A fetcher that
raises LogTruncationNotAllowedError (follower-ahead "stop", KAFKA-3410) calls `on_fatal` with
the reason, which stops the broker cleanly (server/main.py), as Kafka <= 2.0 exits.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from broker_app.aio import cancel_and_wait
from broker_app.env import AsyncioEnv, Env, Handle
from broker_app.replication.fetcher import ReplicaFetcherState
from broker_app.replication.fetcher_pacing import FetchPacer, RoundOutcome
from broker_app.replication.fetcher_round import FetchRound
from broker_app.replication.fetcher_session import FetcherSession
from broker_app.replication.partition import Partition
from broker_app.replication.replica_manager import ReplicaManager
from broker_app.server.network_client import ClientError

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

IDLE_RECHECK_MS = 5_000  # a thread with no partitions re-checks this often even if never woken


class ReplicaFetcherThread:
    def __init__(
        self,
        leader_id: int,
        address: object,
        replica_manager: ReplicaManager,
        max_wait_ms: int,
        max_bytes: int,
        backoff_ms: int,
        request_timeout_ms: int,
        on_fatal: Callable[[str], None] = lambda _reason: None,
        env: Env | None = None,
    ) -> None:
        self.env: Env = env or AsyncioEnv()
        self.leader_id = leader_id
        self.address = address
        self.on_fatal = on_fatal
        self.replica_manager = replica_manager
        self.node_id = replica_manager.node_id
        self.max_wait_ms = max_wait_ms
        self.max_bytes = max_bytes
        self.backoff_ms = backoff_ms
        self.client = self.env.connect(address, f"replica-fetcher-{self.node_id}-from-{leader_id}",
                                       request_timeout_ms + max_wait_ms)  # fmt: skip
        self.session = FetcherSession(self.node_id, leader_id, max_wait_ms, max_bytes,
                                      topic_ids=replica_manager.topic_ids,
                                      broker_epoch=lambda: replica_manager.broker_epoch(),
                                      unclean_allowed=replica_manager
                                      .unclean_leader_election_enabled)
        self.pacer = FetchPacer(backoff_ms)
        self.rounds = 0  # rounds run, for /state-style introspection and tests
        self._clock = replica_manager.clock
        self._wake = self.env.event()
        self._task: Handle | None = None

    @property
    def states(self) -> dict[TopicPartition, ReplicaFetcherState]:
        return self.session.states

    def add(self, partition: Partition) -> None:
        self.session.add(partition)
        self.pacer.wake(self._clock())
        self._wake.set()

    def remove(self, tp: TopicPartition) -> None:
        self.session.remove(tp)

    def retarget(self, address: object) -> None:
        if address != self.address:
            self.address = address
            self.client.retarget(address)

    def start(self) -> None:
        self._task = self.env.spawn(self._run())

    async def stop(self) -> None:
        """Production's stop (an asyncio task); a simulated thread ends with its process."""
        if self._task is not None:
            await cancel_and_wait([self._task])  # type: ignore[list-item]
        self.client.close()

    async def _run(self) -> None:
        while True:
            if not self.states:
                await self._sleep_unless_woken(IDLE_RECHECK_MS)
                continue
            delay_ms = self.pacer.delay_ms(self._clock())
            if delay_ms > 0:
                await self._sleep_unless_woken(delay_ms)
                continue
            outcome = await self.run_round()
            if self.pacer.round_done(outcome, self._clock()) == 0:
                await self.env.sleep(0)  # a buffered response never suspended: yield anyway

    async def _sleep_unless_woken(self, ms: float) -> None:
        # Nothing awaits between the caller's check and clear(): no wake-up can be lost.
        self._wake.clear()
        await self.env.wait(self._wake, ms)

    async def run_round(self) -> RoundOutcome:
        """One FetchRound (replication/fetcher_round.py: ListOffsets, OffsetForLeaderEpoch,
        Fetch, each built after the previous answer was applied), sent over this thread's
        connection."""
        self.rounds += 1
        self.pacer.round_started()
        rnd = FetchRound(self.session)
        while (pending := rnd.next_request()) is not None:
            try:
                response = await self.client.send(pending.body)
            except ClientError as e:
                log.info("fetch from broker %d failed: %s", self.leader_id, e)
                rnd.failed()
                continue
            except Exception:  # a bug must not silently stop replication for good
                log.exception("replica fetcher for leader %d", self.leader_id)
                rnd.failed()
                continue
            rnd.answered(pending, response)
        if rnd.fatal is not None:
            log.critical("%s: stopping the broker", rnd.fatal)
            self.on_fatal(rnd.fatal)
        return rnd.outcome


class ReplicaFetcherManager:
    """Keeps one ReplicaFetcherThread per leader; listens to ReplicaManager's follower changes."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        resolve_address: Callable[[int], object | None],
        max_wait_ms: int = 500,
        max_bytes: int = 1 << 20,
        backoff_ms: int = 200,
        request_timeout_ms: int = 30_000,
        on_fatal: Callable[[str], None] = lambda _reason: None,
        env: Env | None = None,
    ) -> None:
        """`on_fatal(reason)`: a fetcher found that the broker must stop (KAFKA-3410);
        `resolve_address(node)`: the leader's address for env.connect, None if unknown."""
        self.env = env
        self.replica_manager = replica_manager
        self.on_fatal = on_fatal
        self.resolve_address = resolve_address
        self.settings = (max_wait_ms, max_bytes, backoff_ms, request_timeout_ms)
        self.threads: dict[int, ReplicaFetcherThread] = {}
        self._owner: dict[TopicPartition, int] = {}
        replica_manager.on_follower_change(self.on_follower_change)

    def on_follower_change(self, partition: Partition, fetch: bool) -> None:
        tp = (partition.topic, partition.partition)
        old = self._owner.pop(tp, None)
        if old is not None and old in self.threads:
            self.threads[old].remove(tp)
        if not fetch or partition.leader_id < 0:
            return
        leader = partition.leader_id
        address = self.resolve_address(leader)
        if address is None:
            log.warning("%s: no address known for leader %d; not fetching", partition.name, leader)
            return
        thread = self.threads.get(leader)
        if thread is not None:
            thread.retarget(address)
        else:
            thread = self.threads[leader] = ReplicaFetcherThread(
                leader, address, self.replica_manager, *self.settings, on_fatal=self.on_fatal,
                env=self.env,
            )
            thread.start()
        thread.add(partition)
        self._owner[tp] = leader

    async def stop(self) -> None:
        for thread in self.threads.values():
            await thread.stop()
