"""A consumer in a consumer group (subscribe), recording polls with generations, and commits.

Contract (the ops are docs/history-groups.md's; HISTORY.md's rules hold: one op in flight per
process, every op completes before its method returns):
- `GroupConsumerClient(process, bootstrap, history, topics, group)` subscribes to `topics` in
  `group` with confluent-kafka (classic protocol; `assignor` picks the partition assignment
  strategy, eager or cooperative-sticky as librdkafka negotiates it).
- `poll()` is one poll op. It reads with single-message `Consumer.poll` calls, so a rebalance
  callback served by one call precedes the message that call returns: each record is tagged
  with the `generation` of the assignment it was read under and `rebalance`, the number of that
  assignment among this member's (1 for its first), exactly. The completion carries
  `group`, the op-level `generation` (after the poll) and, when the assignment changed during
  the poll, `assignment` (the partitions held after it).
- `commit()` commits the position (next offset to read) of every partition read since the last
  commit, synchronously: one commit op with `offsets`. `ok` when the coordinator accepted every
  offset; anything else is `info` (librdkafka retries a commit internally, so a final error says
  nothing certain about an earlier attempt, the same reasoning as harness.client.classify).
- confluent-kafka's synchronous commit takes no timeout: it is bounded by librdkafka's own
  request timeouts (socket.timeout.ms, 10 s here) and commit retries, not by us.
- A poll that raised makes the client `crashed` (the workload replaces it with a new process,
  hence a new member); a commit that failed does not: nothing of it is left in flight.

The generation is read from librdkafka's serialized consumer group metadata (the bytes of
`rd_kafka_consumer_group_metadata_write`: magic `CGMDv2:` then the generation id as a native
int32), the only place confluent-kafka exposes it; unknown bytes give generation None, and the
checker then leaves that consumer's reads out of the group checks.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from harness.client import decode_value, error_name
from harness.store.history import HistoryWriter

_CGMD_MAGIC = b"CGMDv2:"
STRATEGIES = {"range": "range", "roundrobin": "roundrobin",
              "cooperative-sticky": "cooperative-sticky"}


def generation_of(metadata: Any) -> int | None:
    """The generation id in librdkafka's serialized group metadata, or None if unknown."""
    raw = bytes(metadata) if isinstance(metadata, bytes | bytearray) else None
    if raw is None or not raw.startswith(_CGMD_MAGIC) or len(raw) < len(_CGMD_MAGIC) + 4:
        return None
    (gen,) = struct.unpack_from("=i", raw, len(_CGMD_MAGIC))
    return gen if gen >= 0 else None


class GroupConsumerClient:
    """One group member = one history process; see the module contract."""

    def __init__(
        self, process: int, bootstrap: str, history: HistoryWriter, topics: Iterable[str],
        group: str, assignor: str = "range", max_records: int = 500,
        config: dict[str, Any] | None = None,
    ) -> None:
        if assignor not in STRATEGIES:
            raise ValueError(f"assignor must be one of {sorted(STRATEGIES)}, got {assignor!r}")
        self.process = process
        self.history = history
        self.group = group
        self._assignor = assignor
        self.max_records = max_records
        self.crashed = False
        self.generation: int | None = None
        #: how many assignments (on_assign callbacks) this member received: with the
        #: generation it names a tenure even when a coordinator hands out a generation twice
        self.rebalances = 0
        self.assignment: set[tuple[str, int]] = set()
        self._changed = False
        #: partition -> next offset to read, for partitions read since the last commit
        self._uncommitted: dict[tuple[str, int], int] = {}
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": STRATEGIES[assignor],
            "socket.timeout.ms": 10_000,
            "session.timeout.ms": 10_000,
            "heartbeat.interval.ms": 1_000,
            "reconnect.backoff.max.ms": 1_000,
            "topic.metadata.refresh.interval.ms": 5_000,
            "client.id": f"highwater-member-{process}",
        }
        conf.update(config or {})
        self._consumer = Consumer(conf)
        self._consumer.subscribe(sorted(set(topics)), on_assign=self._on_assign,
                                 on_revoke=self._on_revoke, on_lost=self._on_revoke)

    # Callbacks run inside Consumer.poll (during our poll op): they only update state.
    def _cooperative(self) -> bool:
        # confluent-kafka has no rebalance_protocol(): librdkafka picks COOPERATIVE exactly
        # when every configured strategy is cooperative, here when the assignor is one.
        return self._assignor == "cooperative-sticky"

    def _on_assign(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        got = {(tp.topic, tp.partition) for tp in partitions}
        self.assignment = self.assignment | got if self._cooperative() else got
        self.generation = generation_of(consumer.consumer_group_metadata())
        self.rebalances += 1
        self._changed = True

    def _on_revoke(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        gone = {(tp.topic, tp.partition) for tp in partitions}
        self.assignment = self.assignment - gone if self._cooperative() else set()
        for key in gone:
            self._uncommitted.pop(key, None)  # no longer ours to commit
        self._changed = True

    def poll(self, timeout_s: float = 0.5) -> dict[str, Any]:
        """One poll op: up to max_records within timeout_s; returns the completion written."""
        if self.crashed:
            raise RuntimeError(f"process {self.process} crashed; start a new client")
        invoke = self.history.invoke(self.process, "poll", final=False, group=self.group)
        records: list[dict[str, Any]] = []
        errors: list[str] = []
        deadline = time.monotonic() + timeout_s
        try:
            while len(records) < self.max_records:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                m = self._consumer.poll(left if not records else min(left, 0.01))
                if m is None:
                    if records:
                        break  # nothing more buffered: end the op with what it read
                    continue
                err = m.error()
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        errors.append(err.name())
                    continue
                value = decode_value(m.value())
                if value is None:
                    self.crashed = True
                    return self.history.complete(
                        invoke, "info",
                        error=f"_NON_INTEGER_VALUE at {m.topic()}-{m.partition()}@{m.offset()}",
                    )
                records.append({"topic": m.topic(), "partition": m.partition(),
                                "offset": m.offset(), "value": value,
                                "generation": self.generation,
                                "rebalance": self.rebalances})
                self._uncommitted[(m.topic(), m.partition())] = m.offset() + 1
        except (KafkaException, RuntimeError) as e:
            self.crashed = True
            return self.history.complete(invoke, "info", error=error_name(e))
        extra: dict[str, Any] = {"generation": self.generation}
        if self._changed:
            extra["assignment"] = [{"topic": t, "partition": p}
                                   for t, p in sorted(self.assignment)]
            self._changed = False
        if errors and not records:
            return self.history.complete(invoke, "fail", error=errors[0], **extra)
        return self.history.complete(invoke, "ok", records=records, **extra)

    def commit(self) -> dict[str, Any] | None:
        """Commit what was read since the last commit (one op), or None when nothing was."""
        if not self._uncommitted or self.crashed:
            return None
        offsets = [{"topic": t, "partition": p, "offset": o}
                   for (t, p), o in sorted(self._uncommitted.items())]
        invoke = self.history.invoke(self.process, "commit", group=self.group, offsets=offsets)
        tps = [KafkaTopicPartition(o["topic"], o["partition"], o["offset"]) for o in offsets]
        try:
            result = self._consumer.commit(offsets=tps, asynchronous=False)
        except (KafkaException, RuntimeError) as e:
            return self.history.complete(invoke, "info", error=error_name(e))
        bad = [tp.error for tp in result or [] if tp.error is not None]
        if bad:
            return self.history.complete(invoke, "info", error=error_name(bad[0]))
        self._uncommitted.clear()
        return self.history.complete(invoke, "ok")

    def close(self) -> None:
        try:
            self._consumer.close()
        except (KafkaException, RuntimeError):
            pass
