"""The simulator's clients: producers and consumers at the request level, on virtual time.

They play harness/workload.py's Workload against SimBrokers, writing the same history ops
(HISTORY.md) through the same HistoryWriter, with generator.py's pure pieces (Pacer,
PartitionCycle, producer_jobs) and client.py's `fail`/`info` classification:
- a producer slot has one send in flight; acks 0/1/all as the plan says. Without idempotence
  a send is one attempt (client.py's retries=0) except for NOT_LEADER_OR_FOLLOWER,
  LEADER_NOT_AVAILABLE and UNKNOWN_TOPIC_OR_PARTITION, which librdkafka retries uncounted
  until the delivery timeout; an error is `fail` only if the broker rejected it before
  appending, else `info`; a timeout or lost connection after sending is `info`. A
  connection refused before sending is retried until the delivery timeout (nothing reached
  a broker). With idempotence the same batch (producer id, sequence) is retried every
  100 ms (retry.backoff.ms) until acknowledged or the delivery timeout: then `info`. After an
  `info` the process is replaced by a new number (and a new producer id).
- a consumer process polls every poll_interval_ms: one Fetch (max_wait 0) per leader for the
  partitions it leads, from the consumer's positions; `ok` with the records read, `fail` when
  every partition answered an error. OFFSET_OUT_OF_RANGE (its position was truncated away)
  ends the poll `info` and the process is replaced (a new one reads from offset 0); with
  auto_offset_reset `latest` the same process asks the leader's latest offset (ListOffsets)
  and goes on from there, the poll `fail`ing with librdkafka's _AUTO_OFFSET_RESET.
- metadata: a client asks Metadata (v12, or the highest the brokers advertise) of the brokers
  in turn, and caches the leaders and their leader epochs (never
  going back to an older epoch); a Fetch carries the cached epoch as current_leader_epoch
  (KIP-320, as librdkafka does), so a replica that is no longer the leader, or not yet,
  answers FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH instead of data; errors that mean "wrong
  leader" refresh the metadata. A broker advertising Kafka 2.0's versions (no KIP-320 for
  clients) gives no leader epochs: every epoch is then -1. Deviation: the versions come from
  SimBroker.advertised_versions (what KafkaApis' ApiVersions answers), not from an
  ApiVersions request: connection setup is not simulated, and an extra message would move
  every schedule found before (found plans replay at the seed they were found at).
- position validation (KIP-320's consumer side, as librdkafka 2.1+ does it,
  rd_kafka_offset_validate): a consumer remembers the leader epoch of the batch its last
  record came from; when the metadata shows a higher leader epoch for the partition it asks
  the leader OffsetForLeaderEpoch(that epoch) before fetching again, and when the answer's
  end offset is below its position it goes back there (the same process: the history shows
  the re-read as nonmonotonic-poll). Without leader epochs (Kafka 2.0's versions) nothing is
  validated, and after an unclean truncation a consumer at the tail reads on from its
  position: the records written at the offsets it had passed are skipped (catalog 9, L22).
- `Drainer`: the final reads (`final: true`) of every partition from offset 0 up to the HW,
  after the run healed everything.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import Any

from broker_app.protocol.codec import request_class
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors
from broker_app.sim.broker import ConnectionClosed
from broker_app.sim.cluster import CLIENT, SimCluster
from broker_app.storage.records import build_batch, decode_records, iter_batches
from harness.client import classify
from harness.store.history import HistoryWriter
from harness.workload import Pacer, PartitionCycle, ProducerJob

TopicPartition = tuple[str, int]
ACKS = {"all": -1, "1": 1, "0": 0}
RETRY_BACKOFF_MS = 100
METADATA_TIMEOUT_MS = 1000
FETCH_TIMEOUT_MS = 1000
# Kafka's protocol error names where librdkafka (the real harness's client) names them
# differently, so sim and container histories carry the same names.
_LIBRDKAFKA_NAMES = {
    "NOT_LEADER_OR_FOLLOWER": "NOT_LEADER_FOR_PARTITION",
    "UNKNOWN_TOPIC_OR_PARTITION": "UNKNOWN_TOPIC_OR_PART",
}
_REFRESH = {Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_LEADER_EPOCH,
            Errors.LEADER_NOT_AVAILABLE, Errors.UNKNOWN_TOPIC_OR_PARTITION}  # fmt: skip
# What librdkafka retries whatever `retries` says, without counting the attempt, until
# message.timeout.ms (rd_kafka_err_action: REFRESH, "no chance of duplicate delivery"): so a
# non-idempotent producer retries them too, and may write a value twice when Kafka answered
# NOT_LEADER_OR_FOLLOWER for a batch it had appended (harness/client.py).
_RETRIED_UNCOUNTED = {Errors.NOT_LEADER_OR_FOLLOWER, Errors.LEADER_NOT_AVAILABLE,
                      Errors.UNKNOWN_TOPIC_OR_PARTITION}  # fmt: skip
_RETRIABLE = _REFRESH | {Errors.NOT_ENOUGH_REPLICAS, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                         Errors.REQUEST_TIMED_OUT}  # fmt: skip


def error_name(code: int) -> str:
    try:
        name = Errors(code).name
    except ValueError:
        name = f"ERROR_{code}"
    return _LIBRDKAFKA_NAMES.get(name, name)


class ClientContext:
    """What every simulated client shares: the cluster, the history, fresh numbers."""

    def __init__(self, cluster: SimCluster, history: HistoryWriter) -> None:
        self.cluster = cluster
        self.history = history
        self.loop = cluster.loop
        self.net = cluster.net
        self.process = cluster.client
        self.start_ms = cluster.loop.now_ms
        self._next_process = 0
        self._next_value = 0
        self._next_producer_id = 1000
        #: records consumers read from a follower (KIP-392), per broker id
        self.follower_reads: Counter[int] = Counter()

    def elapsed_s(self) -> float:
        return (self.loop.now_ms - self.start_ms) / 1000

    def new_process(self) -> int:
        self._next_process += 1
        return self._next_process - 1

    def new_value(self) -> int:
        self._next_value += 1
        return self._next_value - 1

    def new_producer_id(self) -> int:
        self._next_producer_id += 1
        return self._next_producer_id

    def later(self, delay_ms: int, fn: Callable[[], None]) -> None:
        self.process.call_later(delay_ms, fn)


class Metadata:
    """One client's view of partition leaders, refreshed from the brokers in turn."""

    def __init__(self, ctx: ClientContext) -> None:
        self.ctx = ctx
        self.leaders: dict[TopicPartition, int] = {}
        # The leader epoch each leader was learned with: Fetch sends it (KIP-320), and an
        # answer from a broker whose metadata is older is not applied (librdkafka and the
        # Java client skip a partition's metadata whose leader epoch went backwards).
        self.epochs: dict[TopicPartition, int] = {}
        # The highest version of each API the brokers advertise (read once: advertised_versions).
        self.versions: dict[int, int] | None = None
        self._turn = 0
        self._refreshing = False

    def version(self, api_key: int, wanted: int) -> int:
        """The version this client sends: `wanted`, or the broker's highest if lower."""
        return wanted if self.versions is None else min(wanted, self.versions.get(api_key, -1))

    def refresh(self) -> None:
        if self._refreshing:
            return
        self._refreshing = True
        ids = sorted(self.ctx.cluster.brokers)
        target = f"broker-{ids[self._turn % len(ids)]}"
        self._turn += 1
        if self.versions is None:
            self.versions = self.ctx.cluster.brokers[ids[0]].advertised_versions()
        body = build(request_class(3, self.version(3, 12)), {
            "topics": None, "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        })  # fmt: skip

        def ok(resp: Any) -> None:
            self._refreshing = False
            for t in resp.topics:
                for p in t.partitions:
                    tp = (t.name, p.partition_index)
                    epoch = int(getattr(p, "leader_epoch", -1))  # Metadata v7+ (KIP-320)
                    if epoch < self.epochs.get(tp, -1):
                        continue  # stale metadata
                    self.epochs[tp] = epoch
                    if p.leader_id >= 0:
                        self.leaders[tp] = p.leader_id
                    else:
                        self.leaders.pop(tp, None)

        def failed(_reason: str) -> None:
            self._refreshing = False

        self.ctx.net.rpc(CLIENT, target, body, ok, failed, METADATA_TIMEOUT_MS)


class SimProducer:
    def __init__(self, ctx: ClientContext, job: ProducerJob, on_done: Callable[[], None]) -> None:
        self.ctx = ctx
        self.job = job
        self.on_done = on_done
        self.acks = ACKS[job.acks]
        self.pacer = Pacer(job.rate, ctx.elapsed_s())
        self.choose = PartitionCycle(job.partitions, offset=job.slot)
        self.sent = 0
        self.start_s = ctx.elapsed_s()
        self._new_client()

    def _new_client(self) -> None:
        self.process = self.ctx.new_process()
        self.metadata = Metadata(self.ctx)
        self.producer_id = self.ctx.new_producer_id() if self.job.idempotence else -1
        self.sequences: dict[TopicPartition, int] = {}

    def start(self) -> None:
        self.metadata.refresh()
        self.ctx.later(0, self._next)

    def _finished(self) -> bool:
        return self.job.finished(self.sent, self.ctx.elapsed_s() - self.start_s)

    def _next(self) -> None:
        if self._finished():
            self.on_done()
            return
        delay = self.pacer.delay(self.ctx.elapsed_s())
        if delay > 0:
            self.ctx.later(max(1, math.ceil(delay * 1000)), self._next)
            return
        self.pacer.started(self.ctx.elapsed_s())
        tp = self.choose()
        self.sent += 1
        self._send(tp, self.ctx.new_value())

    def _send(self, tp: TopicPartition, value: int) -> None:
        _Send(self, tp, value).attempt()


class _Send:
    """One send of a SimProducer: attempts until answered, failed or past the delivery
    timeout. An object, not closures calling each other: mutually referencing closures are a
    reference cycle that only the cyclic GC frees (it held every request body)."""

    def __init__(self, producer: SimProducer, tp: TopicPartition, value: int) -> None:
        ctx = producer.ctx
        self.ctx = ctx
        self.producer = producer
        self.tp = tp
        self.invoke = ctx.history.invoke(producer.process, "send", topic=tp[0],
                                         partition=tp[1], value=value,
                                         acks=producer.job.acks)  # fmt: skip
        self.deadline = ctx.loop.now_ms + producer.job.timeout_ms
        seq = -1
        if producer.producer_id >= 0:
            seq = producer.sequences.get(tp, 0)
            producer.sequences[tp] = seq + 1
        batch = build_batch([(None, str(value).encode())], timestamp=ctx.loop.now_ms,
                            producer_id=producer.producer_id,
                            producer_epoch=0 if producer.producer_id >= 0 else -1,
                            base_sequence=seq)  # fmt: skip
        self.body = build(request_class(0, 9), {
            "transactional_id": None, "acks": producer.acks, "timeout": producer.job.timeout_ms,
            "topic_data": [{"name": tp[0], "partition_data": [{"index": tp[1],
                                                                "records": batch}]}],
        })  # fmt: skip

    def complete(self, typ: str, **fields: Any) -> None:
        p = self.producer
        self.ctx.history.complete(self.invoke, typ, **fields)
        if typ == "info":
            p._new_client()
            p.metadata.refresh()
        self.ctx.later(0, p._next)

    def attempt(self) -> None:
        ctx, p = self.ctx, self.producer
        now = ctx.loop.now_ms
        if now >= self.deadline:
            self.complete("info", error="_MSG_TIMED_OUT")
            return
        leader = p.metadata.leaders.get(self.tp)
        if leader is None:
            p.metadata.refresh()
            ctx.later(RETRY_BACKOFF_MS, self.attempt)
            return
        if p.acks == 0:
            ctx.net.rpc(CLIENT, f"broker-{leader}", self.body, None, None, 0)
            self.complete("ok")
            return
        ctx.net.rpc(CLIENT, f"broker-{leader}", self.body, self.on_reply, self.on_error,
                    max(1, self.deadline - now))  # fmt: skip

    def on_reply(self, resp: Any) -> None:
        if isinstance(resp, ConnectionClosed):
            self.on_error(resp.reason)
            return
        ctx, p = self.ctx, self.producer
        part = resp.responses[0].partition_responses[0]
        code = int(part.error_code.value)
        if code == Errors.NONE:
            self.complete("ok", offset=int(part.base_offset))
            return
        err = Errors(code) if code in Errors._value2member_map_ else None
        if err in _REFRESH:
            p.metadata.refresh()
        retried = err in _RETRIED_UNCOUNTED or (p.producer_id >= 0 and err in _RETRIABLE)
        if retried and ctx.loop.now_ms < self.deadline:
            ctx.later(RETRY_BACKOFF_MS, self.attempt)
            return
        self.complete(classify(error_name(code), single_attempt=p.producer_id < 0),
                      error=error_name(code))  # fmt: skip

    def on_error(self, reason: str) -> None:
        ctx, p = self.ctx, self.producer
        p.metadata.refresh()
        refused = "refused" in reason
        if (refused or p.producer_id >= 0) and ctx.loop.now_ms < self.deadline:
            # Refused: nothing reached a broker; idempotent: the retry is deduplicated.
            ctx.later(RETRY_BACKOFF_MS, self.attempt)
            return
        self.complete("info", error="_MSG_TIMED_OUT" if "timeout" in reason else "_TRANSPORT")


def decode_values(records: bytes, topic: str, partition: int, from_offset: int = 0
                  ) -> tuple[list[dict[str, Any]], int]:  # fmt: skip
    """The records at or past `from_offset`, and the leader epoch of the batch holding the
    last of them (-1 with none): what a KIP-320 consumer validates its position with."""
    out = []
    epoch = -1
    for h, view in iter_batches(records, allow_partial_tail=True):
        for r in decode_records(view):
            if r.value is not None and r.offset >= from_offset:
                out.append({"topic": topic, "partition": partition, "offset": r.offset,
                            "value": int(r.value)})  # fmt: skip
                epoch = h.partition_leader_epoch
    return out, epoch


class Poller:
    """Fetches every partition of `parts` once (max_wait 0) and reports: from its leader, or,
    for a consumer with a rack (KIP-392), from the replica the leader named as its preferred
    read replica. Like a client, the consumer keeps that replica in `preferred` (tp -> (broker,
    since ms)) until it answers with an error or fails, or PREFERRED_LEASE_MS passed (the Java
    consumer re-asks the leader after metadata.max.age.ms); an error from it is reported as
    `follower:<error>` (a client goes back to the leader; it does not reset its position)."""

    PREFERRED_LEASE_MS = 5_000

    def __init__(self, ctx: ClientContext, metadata: Metadata, rack: str | None = None,
                 preferred: dict[TopicPartition, tuple[int, int]] | None = None) -> None:
        self.ctx = ctx
        self.metadata = metadata
        self.rack = rack
        self.preferred = preferred if preferred is not None else {}

    def _source(self, tp: TopicPartition) -> int | None:
        leader = self.metadata.leaders.get(tp)
        if leader is None or not self.rack:
            return leader
        chosen = self.preferred.get(tp)
        if chosen is None or self.ctx.loop.now_ms - chosen[1] >= self.PREFERRED_LEASE_MS:
            self.preferred.pop(tp, None)
            return leader
        return chosen[0]

    def poll(
        self,
        positions: dict[TopicPartition, int],
        done: Callable[[list[dict[str, Any]], dict[TopicPartition, Any]], None],
    ) -> None:
        """done(records in order, {tp: error name or (hw, had_records, last record's batch
        leader epoch)})."""
        by_source: dict[int, list[TopicPartition]] = {}
        answers: dict[TopicPartition, Any] = {}
        for tp in sorted(positions):
            source = self._source(tp)
            if source is None:
                answers[tp] = "LEADER_NOT_AVAILABLE"
            else:
                by_source.setdefault(source, []).append(tp)
        if any(isinstance(a, str) for a in answers.values()):
            self.metadata.refresh()
        results: dict[TopicPartition, list[dict[str, Any]]] = {}
        waiting = [len(by_source)]

        def finish() -> None:
            recs = [r for tp in sorted(results) for r in results[tp]]
            done(recs, answers)

        if not by_source:
            finish()
            return
        for source, tps in sorted(by_source.items()):
            body = build(request_class(1, self.metadata.version(1, 12)), {
                "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
                "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": t, "partitions": [
                    {"partition": p, "fetch_offset": positions[(t, p)],
                     "current_leader_epoch": self.metadata.epochs.get((t, p), -1),
                     "partition_max_bytes": 1 << 20} for (t2, p) in tps if t2 == t]}
                    for t in sorted({t for t, _ in tps})],
                "forgotten_topics_data": [], "rack_id": self.rack or "",
            })  # fmt: skip
            from_follower = {tp for tp in tps if tp in self.preferred}

            def ok(resp: Any, source: int = source,
                   from_follower: set[TopicPartition] = from_follower) -> None:
                for t in resp.responses:
                    for p in t.partitions:
                        tp = (t.topic, p.partition_index)
                        code = int(p.error_code.value)
                        if code != Errors.NONE:
                            if tp in from_follower:
                                self.preferred.pop(tp, None)
                                answers[tp] = f"follower:{error_name(code)}"
                            else:
                                answers[tp] = error_name(code)
                                self.metadata.refresh()
                            continue
                        redirect = int(getattr(p, "preferred_read_replica", -1))
                        if redirect >= 0 and self.rack:
                            self.preferred[tp] = (redirect, self.ctx.loop.now_ms)
                        recs, epoch = decode_values(bytes(p.records or b""), *tp,
                                                    positions[tp])
                        if tp in from_follower:
                            self.ctx.follower_reads[source] += len(recs)
                        results[tp] = recs
                        answers[tp] = (int(p.high_watermark), bool(recs), epoch)
                waiting[0] -= 1
                if waiting[0] == 0:
                    finish()

            def failed(reason: str, tps: list[TopicPartition] = tps) -> None:
                for tp in tps:
                    answers[tp] = "_TRANSPORT"
                    self.preferred.pop(tp, None)
                self.metadata.refresh()
                waiting[0] -= 1
                if waiting[0] == 0:
                    finish()

            self.ctx.net.rpc(CLIENT, f"broker-{source}", body, ok, failed, FETCH_TIMEOUT_MS)


class SimWorkload:
    """The plan's workload on the simulator, as harness.workload.Workload is in containers:
    how many producers still run, and the assign-mode consumers the nemesis's
    replace-consumer acts on."""

    def __init__(self, consumer_spec: Any, consumers: list[SimConsumer]) -> None:
        self.consumer_spec = consumer_spec
        self.consumers = consumers
        self.running = 0  # producers that have not finished their job

    def producer_done(self) -> None:
        self.running -= 1

    def restart_consumer(self, slot: int) -> None:
        self.consumers[slot].replace()


class SimConsumer:
    """An assign-mode consumer: polls every `interval_ms` from its positions; `rack` is its
    client.rack (KIP-392); `replace()` starts a new process from the beginning (the
    replace-consumer action)."""

    def __init__(self, ctx: ClientContext, parts: list[TopicPartition], interval_ms: int,
                 rack: str | None = None, auto_offset_reset: str = "earliest") -> None:
        self.ctx = ctx
        self.parts = parts
        self.interval_ms = interval_ms
        self.rack = rack
        self.auto_offset_reset = auto_offset_reset
        self.stopped = False
        self._replace = False
        self._new_client()

    def _new_client(self) -> None:
        self.process = self.ctx.new_process()
        self.metadata = Metadata(self.ctx)
        self.positions = dict.fromkeys(self.parts, 0)
        # KIP-320: the leader epoch of the batch each position's last record came from, and
        # the metadata's leader epoch the position was last validated against.
        self.position_epochs: dict[TopicPartition, int] = {}
        self.validated: dict[TopicPartition, int] = {}
        self.to_reset: set[TopicPartition] = set()  # out of range, auto_offset_reset latest
        self.preferred: dict[TopicPartition, tuple[int, int]] = {}

    def replace(self) -> None:
        """A new process from the beginning, from the next poll on (a poll in flight completes
        as the old process's)."""
        self._replace = True

    def start(self) -> None:
        self.metadata.refresh()
        self.ctx.later(self.interval_ms, self._poll)

    def _to_validate(self) -> dict[TopicPartition, tuple[int, int]]:
        """tp -> (metadata leader epoch, position's epoch) for the positions librdkafka would
        validate now: the leader epoch grew since, and the position has an epoch."""
        out = {}
        for tp, epoch in self.metadata.epochs.items():
            if epoch <= self.validated.get(tp, -1) or tp not in self.positions:
                continue
            mine = self.position_epochs.get(tp, -1)
            if mine < 0:  # nothing read yet: no epoch to validate ("no leader epoch set")
                self.validated[tp] = epoch
            else:
                out[tp] = (epoch, mine)
        return out

    def _ask_leaders(self, tps: list[TopicPartition],
                     body_for: Callable[[list[TopicPartition]], Any],
                     on_answer: Callable[[Any], None], then: Callable[[], None]) -> None:
        """One request per leader of `tps` (body_for(its partitions), in order), on_answer for
        each answer, then() once every request was answered or failed (at once with none)."""
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in sorted(tps):
            leader = self.metadata.leaders.get(tp)
            if leader is not None:
                by_leader.setdefault(leader, []).append(tp)
        waiting = [len(by_leader)]
        if not by_leader:
            then()
            return

        def one_done() -> None:
            waiting[0] -= 1
            if waiting[0] == 0:
                then()

        def ok(resp: Any) -> None:
            on_answer(resp)
            one_done()

        for leader, mine in sorted(by_leader.items()):
            self.ctx.net.rpc(CLIENT, f"broker-{leader}", body_for(mine), ok,
                             lambda _r: one_done(), FETCH_TIMEOUT_MS)

    def _validate(self, todo: dict[TopicPartition, tuple[int, int]],
                  then: Callable[[], None]) -> None:
        """OffsetForLeaderEpoch (v2, as librdkafka sends it) to each partition's leader; a
        position past the end offset of its epoch goes back to it (rd_kafka_offset_validate:
        auto.offset.reset is not `error`, so it seeks). A partition whose answer failed stays
        unvalidated and is asked again before the next poll; this poll fetches it from where
        it was (librdkafka would wait for the answer)."""

        def body(tps: list[TopicPartition]) -> Any:
            return build(request_class(23, 2), {"topics": [
                {"topic": t, "partitions": [
                    {"partition": p, "current_leader_epoch": todo[(t, p)][0],
                     "leader_epoch": todo[(t, p)][1]} for (t2, p) in tps if t2 == t]}
                for t in sorted({t for t, _ in tps})]})  # fmt: skip

        def answer(resp: Any) -> None:
            for t in resp.topics:
                for p in t.partitions:
                    tp = (t.topic, p.partition)
                    if int(p.error_code.value) != Errors.NONE or tp not in todo:
                        continue
                    self.validated[tp] = todo[tp][0]
                    end = int(p.end_offset)
                    if 0 <= end < self.positions.get(tp, 0) and int(p.leader_epoch) >= 0:
                        self.positions[tp] = end  # log truncation detected: seek

        self._ask_leaders(list(todo), body, answer, then)

    def _poll(self) -> None:
        if self.stopped:
            return
        if self._replace:
            self._replace = False
            self._new_client()
            self.metadata.refresh()
        todo = self._to_validate()
        if self.to_reset:
            self._reset_latest(lambda: self._validate(todo, self._fetch) if todo
                               else self._fetch())
        elif todo:
            self._validate(todo, self._fetch)
        else:
            self._fetch()

    def _advance(self, records: list[dict[str, Any]], answers: dict[TopicPartition, Any]
                 ) -> None:  # fmt: skip
        """Positions past the records read, with the leader epoch of the last one's batch."""
        for r in records:
            self.positions[(r["topic"], r["partition"])] = r["offset"] + 1
        for tp, a in answers.items():
            if not isinstance(a, str) and a[1]:
                self.position_epochs[tp] = a[2]

    def _reset_latest(self, then: Callable[[], None]) -> None:
        """ListOffsets(latest) to each leader for the partitions out of range: the position
        becomes the end a consumer may read to (the HW). Unanswered ones are asked again."""

        def body(tps: list[TopicPartition]) -> Any:
            return build(request_class(2, 4), {
                "replica_id": -1, "isolation_level": 0,
                "topics": [{"name": t, "partitions": [
                    {"partition_index": p, "current_leader_epoch":
                     self.metadata.epochs.get((t, p), -1), "timestamp": -1}
                    for (t2, p) in tps if t2 == t]} for t in sorted({t for t, _ in tps})],
            })  # fmt: skip

        def answer(resp: Any) -> None:
            for t in resp.topics:
                for p in t.partitions:
                    tp = (t.name, p.partition_index)
                    if int(p.error_code.value) == Errors.NONE and int(p.offset) >= 0:
                        self.positions[tp] = int(p.offset)
                        self.to_reset.discard(tp)

        self._ask_leaders(list(self.to_reset), body, answer, then)

    def _fetch(self) -> None:
        if self.stopped:
            return
        invoke = self.ctx.history.invoke(self.process, "poll", final=False)

        def done(records: list[dict[str, Any]], answers: dict[TopicPartition, Any]) -> None:
            out_of_range = [tp for tp, a in answers.items() if a == "OFFSET_OUT_OF_RANGE"]
            if out_of_range and self.auto_offset_reset == "latest":
                self.to_reset.update(out_of_range)
                self._advance(records, answers)
                if records:
                    self.ctx.history.complete(invoke, "ok", records=records)
                else:
                    self.ctx.history.complete(invoke, "fail", error="_AUTO_OFFSET_RESET")
            elif out_of_range:
                self.ctx.history.complete(invoke, "info", error="OFFSET_OUT_OF_RANGE")
                self._new_client()
                self.metadata.refresh()
            elif records or any(not isinstance(a, str) for a in answers.values()):
                self._advance(records, answers)
                self.ctx.history.complete(invoke, "ok", records=records)
            else:
                errors = sorted({a for a in answers.values() if isinstance(a, str)})
                self.ctx.history.complete(invoke, "fail", error=errors[0] if errors else "")
            if not self.stopped:
                self.ctx.later(self.interval_ms, self._poll)

        Poller(self.ctx, self.metadata, self.rack, self.preferred).poll(dict(self.positions), done)


class Drainer:
    """Final reads: a fresh process reads each partition from 0; a partition is drained once
    its fetches have returned nothing at or past the HW for `idle_ms` (the plan's drain.idle_s,
    as the container run does: a new leader's HW may lag until its followers fetch again);
    `finished` once every partition is drained."""

    def __init__(self, ctx: ClientContext, parts: list[TopicPartition], idle_ms: int,
                 interval_ms: int = 100) -> None:  # fmt: skip
        self.ctx = ctx
        self.process = ctx.new_process()
        self.metadata = Metadata(ctx)
        self.positions = dict.fromkeys(parts, 0)
        self.idle_since: dict[TopicPartition, int] = {}
        self.drained: set[TopicPartition] = set()
        self.idle_ms = idle_ms
        self.interval_ms = interval_ms
        self.stopped = False

    @property
    def finished(self) -> bool:
        return len(self.drained) == len(self.positions)

    def start(self) -> None:
        self.metadata.refresh()
        self.ctx.later(self.interval_ms, self._poll)

    def _poll(self) -> None:
        if self.stopped or self.finished:
            return
        todo = {tp: o for tp, o in self.positions.items() if tp not in self.drained}
        invoke = self.ctx.history.invoke(self.process, "poll", final=True)

        def done(records: list[dict[str, Any]], answers: dict[TopicPartition, Any]) -> None:
            for r in records:
                self.positions[(r["topic"], r["partition"])] = r["offset"] + 1
            now = self.ctx.loop.now_ms
            for tp, a in answers.items():
                if not isinstance(a, str) and not a[1] and self.positions[tp] >= a[0]:
                    since = self.idle_since.setdefault(tp, now)
                    if now - since >= self.idle_ms:
                        self.drained.add(tp)
                else:
                    self.idle_since.pop(tp, None)
            if records or any(not isinstance(a, str) for a in answers.values()):
                self.ctx.history.complete(invoke, "ok", records=records)
            else:
                errors = sorted({a for a in answers.values() if isinstance(a, str)})
                self.ctx.history.complete(invoke, "fail", error=errors[0] if errors else "")
            self.ctx.later(self.interval_ms, self._poll)

        Poller(self.ctx, self.metadata).poll(todo, done)
