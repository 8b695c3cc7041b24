"""A deterministic in-test network for KafkaRaftClient voters (seeded delays, partitions,
drops, crashes) and a checker of Raft's safety properties that runs after every event.

Everything is driven by one simulated clock; the same seed gives the same interleaving.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from broker_app.raft import (
    KafkaRaftClient,
    MemoryQuorumStateStore,
    MemoryReplicatedLog,
    RaftConfig,
)
from broker_app.raft.messages import Envelope


class SafetyViolation(AssertionError):
    pass


def encode_state(applied: list[tuple[int, bytes]]) -> bytes:
    return b"\n".join(f"{off}:{rec.hex()}".encode() for off, rec in applied)


def decode_state(payload: bytes) -> list[tuple[int, bytes]]:
    out = []
    for line in filter(None, payload.split(b"\n")):
        off, rec = line.decode().split(":")
        out.append((int(off), bytes.fromhex(rec)))
    return out


@dataclass
class Node:
    node_id: int
    config: RaftConfig
    log: Any  # a ReplicatedLog
    store: Any  # a QuorumStateStore
    client: KafkaRaftClient
    alive: bool = True
    applied: list[tuple[int, bytes]] = field(default_factory=list)  # the state machine
    next_offset: int = 0
    incarnation: int = 0


class SimNetwork:
    def __init__(self, voters: int = 3, seed: int = 0, min_delay_ms: int = 1,
                 max_delay_ms: int = 10, drop_rate: float = 0.0,
                 open_storage: Callable[[int], tuple[Any, Any]] | None = None,
                 observers: int = 0, **config: object) -> None:
        """Voters are nodes 1..voters, observers the next `observers` ids.
        open_storage(node_id) -> (log, store) opens a node's durable state (default: in
        memory, where a crash loses what was not flushed); it is called again on restart."""
        self.now = 0
        self.seed = seed
        self.rng = random.Random(seed)
        self.min_delay_ms, self.max_delay_ms, self.drop_rate = min_delay_ms, max_delay_ms, \
            drop_rate
        self.queue: list[tuple[int, int, Envelope]] = []
        self._seq = 0
        self.blocked: set[tuple[int, int]] = set()
        ids = frozenset(range(1, voters + 1))
        self.open_storage = open_storage
        self.nodes: dict[int, Node] = {}
        for i in range(1, voters + observers + 1):
            cfg = RaftConfig(node_id=i, voters=ids, **config)  # type: ignore[arg-type]
            log, store = open_storage(i) if open_storage else (MemoryReplicatedLog(),
                                                               MemoryQuorumStateStore())
            self.nodes[i] = Node(i, cfg, log, store, self._client(cfg, log, store, 0))
        # safety bookkeeping
        self.leaders: dict[int, int] = {}  # epoch -> leader
        self.committed: dict[int, tuple[int, bytes]] = {}  # offset -> (epoch, record)
        self.commit_epoch: dict[int, int] = {}  # offset -> epoch it was first seen committed in
        self.applied_ref: dict[int, bytes] = {}
        self.sent = 0
        self.dropped = 0
        self.pending: dict[int, tuple[int, int, int]] = {}  # net id -> (src, corr, incarnation)
        self._next_net_id = 0
        self.delivered: list[tuple[int, Envelope]] = []  # (time, envelope), every delivery
        self.check_safety = True  # False: let a violation happen, to observe its outcome

    def _client(self, cfg, log, store, incarnation: int) -> KafkaRaftClient:
        rng = random.Random(self.seed * 1000 + cfg.node_id * 10 + incarnation)
        return KafkaRaftClient(cfg, log, store, rng, self.now)

    # -- faults -----------------------------------------------------------------------------
    def partition(self, *groups: set[int]) -> None:
        """Cut every link between different groups (both ways)."""
        self.blocked = {(a, b) for g in groups for h in groups if g is not h
                        for a in g for b in h}

    def isolate(self, node_id: int) -> None:
        self.partition({node_id}, set(self.nodes) - {node_id})

    def expire(self, node_id: int) -> None:
        """Fire this voter's election (or fetch) timer now: scripted interleavings."""
        state = self.nodes[node_id].client.quorum.state
        for timer in ("election_deadline_ms", "fetch_deadline_ms", "backoff_until_ms"):
            if hasattr(state, timer):
                setattr(state, timer, self.now)

    def heal(self) -> None:
        self.blocked = set()

    def crash(self, node_id: int) -> None:
        node = self.nodes[node_id]
        node.alive = False
        # Its connections die with it: nothing in flight reaches it, nor its next incarnation
        # (which restarts correlation ids, as a new process with new connections would).
        # A response to a request of the dead incarnation is dropped too (the leader may
        # answer a parked fetch long after): see send().
        self.queue = [q for q in self.queue if q[2].dst != node_id]
        heapq.heapify(self.queue)
        if self.open_storage is None:
            node.log.lose_unflushed()
        else:
            node.log.close()

    def restart(self, node_id: int) -> None:
        node = self.nodes[node_id]
        node.incarnation += 1
        if self.open_storage is not None:
            node.log, node.store = self.open_storage(node_id)
        node.client = self._client(node.config, node.log, node.store, node.incarnation)
        node.applied, node.next_offset, node.alive = [], 0, True

    # -- driving ----------------------------------------------------------------------------
    def send(self, envs: list[Envelope]) -> None:
        """Like a transport with one connection per request: the network gives each request
        its own correlation id and maps the response back, dropping a response whose
        requester has crashed since (its connection died with it)."""
        for env in envs:
            self.sent += 1
            if type(env.body).__name__.endswith("Response"):
                src_corr = self.pending.pop(env.correlation_id, None)
                if src_corr is None:
                    continue
                requester, corr, incarnation = src_corr
                if self.nodes[requester].incarnation != incarnation:
                    continue
                env = replace(env, correlation_id=corr)
            else:
                self._next_net_id += 1
                self.pending[self._next_net_id] = (env.src, env.correlation_id,
                                                   self.nodes[env.src].incarnation)
                env = replace(env, correlation_id=self._next_net_id)
            if (env.src, env.dst) in self.blocked or self.rng.random() < self.drop_rate:
                self.dropped += 1
                continue
            delay = self.rng.randint(self.min_delay_ms, self.max_delay_ms)
            self._seq += 1
            heapq.heappush(self.queue, (self.now + delay, self._seq, env))

    def step(self) -> None:
        alive = [n for n in self.nodes.values() if n.alive]
        node = min(alive, key=lambda n: (n.client.deadline_ms(), n.node_id))
        t_node = node.client.deadline_ms()
        if self.queue and self.queue[0][0] <= t_node:
            t, _, env = heapq.heappop(self.queue)
            self.now = max(self.now, t)
            dst = self.nodes[env.dst]
            if dst.alive and (env.src, env.dst) not in self.blocked:
                self.delivered.append((self.now, env))
                self.send(dst.client.handle(env, self.now))
                self.check(dst)
            return
        self.now = max(self.now, t_node)
        self.send(node.client.poll(self.now))
        self.check(node)

    def run_for(self, ms: int) -> None:
        end = self.now + ms
        while True:
            nxt = min(n.client.deadline_ms() for n in self.nodes.values() if n.alive)
            if self.queue:
                nxt = min(nxt, self.queue[0][0])
            if nxt > end:
                self.now = end
                return
            self.step()

    def run_until(self, pred, max_ms: int = 30_000) -> bool:
        end = self.now + max_ms
        while not pred():
            if self.now > end:
                return False
            self.step()
        return True

    # -- helpers ----------------------------------------------------------------------------
    def leader(self) -> Node | None:
        """The leader of the highest epoch among live nodes, if any."""
        live = [n for n in self.nodes.values() if n.alive and n.client.is_leader]
        return max(live, key=lambda n: n.client.epoch, default=None)

    def elect(self, max_ms: int = 30_000) -> Node:
        assert self.run_until(lambda: self.leader() is not None
                              and self.leader().client.high_watermark is not None, max_ms)
        node = self.leader()
        assert node is not None
        return node

    def append(self, *records: bytes) -> tuple[int, int]:
        node = self.leader()
        assert node is not None, "no leader"
        return node.node_id, node.client.append(list(records))

    def snapshot(self, node_id: int) -> None:
        node = self.nodes[node_id]
        node.client.create_snapshot(node.next_offset, encode_state(node.applied))

    # -- safety -----------------------------------------------------------------------------
    @staticmethod
    def entries(log: Any, upto: int | None = None) -> dict[int, tuple[int, bytes]]:
        end = log.end_offset if upto is None else min(upto, log.end_offset)
        out: dict[int, tuple[int, bytes]] = {}
        for b in log.read(log.start_offset, 1 << 30):
            for i, rec in enumerate(b.records):
                if b.base_offset + i < end:
                    out[b.base_offset + i] = (b.epoch, rec)
        return out

    def check(self, node: Node) -> None:
        if self.check_safety:
            self._check_safety(node)
        update = node.client.poll_committed(node.next_offset)
        if update.snapshot is not None:
            node.applied = decode_state(update.snapshot.payload)
        node.applied.extend(update.records)
        node.next_offset = update.next_offset

    def _check_safety(self, node: Node) -> None:
        c = node.client
        if c.is_leader:  # election safety: one leader per epoch
            if not node.config.is_voter:
                raise SafetyViolation(f"observer {node.node_id} became leader")
            prev = self.leaders.setdefault(c.epoch, node.node_id)
            if prev != node.node_id:
                raise SafetyViolation(f"epoch {c.epoch} has leaders {prev} and {node.node_id}")
            # leader completeness: a leader holds every committed entry
            mine = self.entries(node.log)
            for off, entry in self.committed.items():
                if self.commit_epoch[off] >= c.epoch or off < node.log.start_offset:
                    continue  # Raft promises committed entries to leaders of LATER epochs
                if mine.get(off) != entry:
                    raise SafetyViolation(f"leader {node.node_id} (epoch {c.epoch}) lacks "
                                          f"committed offset {off}: {mine.get(off)} != {entry}")
        hw = c.high_watermark
        if hw is not None:  # log matching up to the high watermark
            for off, entry in self.entries(node.log, hw).items():
                seen = self.committed.setdefault(off, entry)
                self.commit_epoch.setdefault(off, c.epoch)
                if seen != entry:
                    raise SafetyViolation(f"node {node.node_id} committed {entry} at {off}, "
                                          f"another had {seen}")
        update = c.poll_committed(node.next_offset)
        for off, rec in update.records:  # state machine safety
            seen_rec = self.applied_ref.setdefault(off, rec)
            if seen_rec != rec:
                raise SafetyViolation(f"node {node.node_id} applied {rec!r} at {off}, "
                                      f"another applied {seen_rec!r}")
