"""Controllers for the controller's unit tests, driven by hand (no sockets, no timers).

- `OneVoter`: a lone controller as every process runs it since issue 26 (Raft always): a
  one-voter KafkaRaftClient on an in-memory Raft log, the RaftQuorumController, the
  real ControllerApis. `handle(request)` answers as
  ControllerServer does: the operation runs, the voter flushes and commits, then the answer.
- `MemoryMetadataLog`: QuorumController's MetadataLog contract in memory, for tests of the
  state machine alone (Kafka's own controller tests run it over a local log the same way).
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from broker_app.controller.config import ControllerConfig
from broker_app.controller.controller_apis import ControllerApis
from broker_app.controller.messages import HeartbeatRequest, RegisterBrokerRequest
from broker_app.controller.raft_controller import RaftQuorumController
from broker_app.metadata.image import MetadataImage
from broker_app.metadata.records import MetadataRecord, decode_record, encode_record
from broker_app.protocol.codec import Request
from broker_app.raft import KafkaRaftClient, MemoryQuorumStateStore, MemoryReplicatedLog, RaftConfig


class OneVoter:
    def __init__(self, config: ControllerConfig | None = None, raft_log: Any = None,
                 store: Any = None) -> None:
        """raft_log / store: the Raft log and election state (default in memory; pass
        FileReplicatedLog / FileQuorumStateStore to test on files and restart on them)."""
        self.config = config or ControllerConfig()
        node = self.config.node_id
        self.now = 0
        ids = itertools.count(1)
        self.raft_log = raft_log if raft_log is not None else MemoryReplicatedLog()
        self.client = KafkaRaftClient(
            RaftConfig(node_id=node, voters=frozenset({node})), self.raft_log,
            store if store is not None else MemoryQuorumStateStore(), random.Random(0),
            self.now)  # fmt: skip
        self.raft = RaftQuorumController(self.config, self.client,
                                         lambda: uuid.UUID(int=next(ids)))
        self.apis = ControllerApis(self.raft, ("127.0.0.1", 9093))
        for _ in range(10):  # the only voter leads at once and commits its LeaderChange
            self.raft.poll(self.now)
            if self.raft.is_active:
                break
        assert self.raft.is_active, "the lone voter did not become active"

    @property
    def image(self) -> MetadataImage:
        """The committed image (what brokers fetch and /state shows)."""
        return self.raft.committed_image

    def commit(self) -> None:
        """Flush and commit everything appended (one voter: its own flush commits)."""
        for _ in range(100):
            self.raft.poll(self.now)
            if self.raft.committed_offset >= self.raft.metadata_log.end_offset:
                return
        raise AssertionError("the lone voter did not commit its records")

    def start_brokers(self, *ids: int) -> None:
        """Register brokers `ids` and unfence them with a caught-up heartbeat."""
        for b in ids:
            reg, _ = self.raft.register_broker(
                RegisterBrokerRequest(b, f"inc-{b}", "127.0.0.1", 9000 + b), self.now)
            self.commit()
            self.raft.heartbeat(HeartbeatRequest(b, reg.broker_epoch, self.image.offset),
                                  self.now)
            self.commit()
            assert not self.image.brokers[b].fenced

    def handle(self, request: Request, now_ms: int | None = None) -> Any:
        result = self.apis.handle(request, self.now if now_ms is None else now_ms)
        self.commit()
        return result


class MemoryMetadataLog:
    def __init__(self) -> None:
        self.entries: list[bytes] = []

    @property
    def end_offset(self) -> int:
        return len(self.entries)

    def append(self, records: Sequence[MetadataRecord]) -> int:
        base = len(self.entries)
        self.entries.extend(encode_record(r) for r in records)
        return base

    def snapshot_image(self) -> MetadataImage:
        return MetadataImage()

    def replay(self) -> Iterator[tuple[int, MetadataRecord]]:
        for off, value in enumerate(self.entries):
            yield off, decode_record(value, f"offset {off}")
