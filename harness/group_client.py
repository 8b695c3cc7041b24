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
  commit: one commit op with `offsets`, made as `commit` (the constructor's) says:
  - `sync`: `Consumer.commit(asynchronous=False)`. `ok` when the coordinator accepted every
    offset; anything else is `info` (librdkafka retries a commit internally, so a final error
    says nothing certain about an earlier attempt, the same reasoning as
    harness.client.classify). confluent-kafka's synchronous commit takes no timeout: it is
    bounded by librdkafka's own request timeouts (socket.timeout.ms, 10 s here) and commit
    retries, not by us.
  - `async`: `Consumer.commit(asynchronous=True)`; the op completes with the outcome the
    `on_commit` callback reports (`ok`/`info` as for sync). librdkafka serves that callback
    only inside `Consumer.poll`, so to keep one op in flight the commit op waits for it itself:
    it polls until the callback for these offsets arrived (at most ASYNC_COMMIT_WAIT_S, then
    `info` `_TIMED_OUT` and the client is `crashed`: a callback still owed could be taken for
    the next commit's). A record those polls dequeue is kept, tagged with the generation it was
    read under, and handed out by the next poll op, every one of them (that op may return more
    than max_records). The assignment is not paused during the wait: a pause right after a
    rebalance assigned a partition can lose the assign's start offset (confluentinc/librdkafka#2190,
    open), and a resume after a rebalance during the wait can restart a fetch from a stale
    position (#4686, #1802). Either re-delivers records to the same member within one generation;
    that is the likely cause of the nonmonotonic-poll CI saw once in this mode with the pausing
    version (reproduced locally: a member re-read cm-0 offsets 0-3 in generation 2 right after
    pausing a partition assigned a moment before).
  - `auto`: the consumer runs with `enable.auto.commit` (every AUTO_COMMIT_INTERVAL_MS) and
    `enable.auto.offset.store=false`; `commit()` records a commit op, then stores the offsets
    (`Consumer.store_offsets`) for librdkafka's auto-commit to send at some later time (on its
    timer, on a revoke, on close), and completes the op at once as `info` with error
    `_OFFSETS_STORED`: its outcome is never observed (the auto-commit happens inside
    librdkafka, not as an op of ours). The invoke precedes every auto-commit of those offsets,
    which is what the checker's rebalance-skip needs; commit-regression counts only `ok`
    commits, so it cannot fire for auto commits (nothing acknowledged is known to be lost).
  The op carries `mode` (`async` or `auto`) for these two; a sync commit op has none (as before).
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

from harness.client import LIBRDKAFKA_LOG, decode_value, error_name
from harness.store.history import HistoryWriter

_CGMD_MAGIC = b"CGMDv2:"
COMMIT_MODES = ("sync", "async", "auto", "none")
#: how long an async commit op waits for its on_commit callback (librdkafka retries a commit
#: within socket.timeout.ms per attempt; a coordinator move takes a few seconds)
ASYNC_COMMIT_WAIT_S = 30.0
#: auto.commit.interval.ms for `auto` (Kafka's default is 5 s; short so a test sees many)
AUTO_COMMIT_INTERVAL_MS = 200
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
        config: dict[str, Any] | None = None, commit: str = "sync",
    ) -> None:
        if assignor not in STRATEGIES:
            raise ValueError(f"assignor must be one of {sorted(STRATEGIES)}, got {assignor!r}")
        if commit not in COMMIT_MODES:
            raise ValueError(f"commit must be one of {', '.join(COMMIT_MODES)}, got {commit!r}")
        self.commit_mode = commit
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
        #: async: the on_commit outcome of the commit in flight ((error or None) once it came)
        self._awaited: list[tuple[str, int, int]] | None = None
        self._outcome: tuple[str | None] | None = None
        #: records dequeued while an async commit waited (see the contract), oldest first
        self._early: list[dict[str, Any]] = []
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
            "logger": LIBRDKAFKA_LOG,
        }
        if commit == "async":
            conf["on_commit"] = self._on_commit
        elif commit == "auto":
            conf.update({"enable.auto.commit": True,
                         "auto.commit.interval.ms": AUTO_COMMIT_INTERVAL_MS,
                         "enable.auto.offset.store": False})
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
        # All of them, even beyond max_records: a backlog carried over would be recorded ever
        # later than it was read (seen: a generation-1 record reported after generation 3's
        # commits, a false commit-regression).
        records, self._early = self._early, []
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
        """Commit what was read since the last commit (one op), or None when nothing was (or
        the client does not commit: `none`)."""
        if not self._uncommitted or self.crashed or self.commit_mode == "none":
            return None
        offsets = [{"topic": t, "partition": p, "offset": o}
                   for (t, p), o in sorted(self._uncommitted.items())]
        how = {} if self.commit_mode == "sync" else {"mode": self.commit_mode}
        invoke = self.history.invoke(self.process, "commit", group=self.group, offsets=offsets,
                                     **how)
        tps = [KafkaTopicPartition(o["topic"], o["partition"], o["offset"]) for o in offsets]
        if self.commit_mode == "auto":
            try:
                self._consumer.store_offsets(offsets=tps)
            except (KafkaException, RuntimeError) as e:
                return self.history.complete(invoke, "info", error=error_name(e), **how)
            self._uncommitted.clear()
            return self.history.complete(invoke, "info", error="_OFFSETS_STORED", **how)
        if self.commit_mode == "async":
            return self._commit_async(invoke, tps, how)
        try:
            result = self._consumer.commit(offsets=tps, asynchronous=False)
        except (KafkaException, RuntimeError) as e:
            return self.history.complete(invoke, "info", error=error_name(e))
        bad = [tp.error for tp in result or [] if tp.error is not None]
        if bad:
            return self.history.complete(invoke, "info", error=error_name(bad[0]))
        self._uncommitted.clear()
        return self.history.complete(invoke, "ok")

    # ---------------------------------------------------------------- async commits

    def _on_commit(self, err: KafkaError | None, partitions: list[KafkaTopicPartition]) -> None:
        """librdkafka's offset_commit_cb (inside Consumer.poll): the outcome of the awaited
        commit when the offsets are the ones it sent; anything else is not ours to record."""
        got = sorted((tp.topic, tp.partition, tp.offset) for tp in partitions or [])
        if self._awaited is None or got != self._awaited:
            return
        if err is not None and err.code() == KafkaError.NO_ERROR:
            err = None
        bad = [tp.error for tp in partitions if tp.error is not None]
        first = err if err is not None else (bad[0] if bad else None)
        self._outcome = (None if first is None else error_name(first),)

    def _commit_async(self, invoke: dict[str, Any], tps: list[KafkaTopicPartition],
                      how: dict[str, str]) -> dict[str, Any]:
        self._awaited = sorted((tp.topic, tp.partition, tp.offset) for tp in tps)
        self._outcome = None
        try:
            try:
                self._consumer.commit(offsets=tps, asynchronous=True)
            except (KafkaException, RuntimeError) as e:
                return self.history.complete(invoke, "info", error=error_name(e), **how)
            deadline = time.monotonic() + ASYNC_COMMIT_WAIT_S
            while self._outcome is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.crashed = True  # its callback is still owed: a fresh client is clean
                    return self.history.complete(invoke, "info", error="_TIMED_OUT", **how)
                try:
                    m = self._consumer.poll(min(left, 0.1))
                except (KafkaException, RuntimeError) as e:
                    self.crashed = True
                    return self.history.complete(invoke, "info", error=error_name(e), **how)
                if m is not None and m.error() is None:
                    self._keep_early(m)
        finally:
            self._awaited = None
        (error,) = self._outcome
        if error is not None:
            return self.history.complete(invoke, "info", error=error, **how)
        for tp in tps:  # positions read during the wait are newer: still to be committed
            if self._uncommitted.get((tp.topic, tp.partition)) == tp.offset:
                del self._uncommitted[(tp.topic, tp.partition)]
        return self.history.complete(invoke, "ok", **how)

    def _keep_early(self, m: Any) -> None:
        """A record dequeued during a commit op: kept for the next poll op, tagged now."""
        value = decode_value(m.value())
        if value is None:
            self.crashed = True  # as poll does: not a harness value
            return
        self._early.append({"topic": m.topic(), "partition": m.partition(),
                            "offset": m.offset(), "value": value,
                            "generation": self.generation, "rebalance": self.rebalances})
        # Its position is ours to commit from now on, unless a revoke later in this wait pops
        # it: judged at the next poll op instead, a partition revoked and assigned again in
        # between would commit a position read under the old generation (seen: a false
        # commit-regression).
        self._uncommitted[(m.topic(), m.partition())] = m.offset() + 1

    def close(self) -> None:
        try:
            self._consumer.close()
        except (KafkaException, RuntimeError):
            pass
