"""Real Kafka clients (confluent-kafka) performing HISTORY.md ops and recording them.

Contract:
- One client object = one history `process`. Each op writes its invoke, then exactly one
  completion, through the shared `HistoryWriter`, before the method returns: at most one op
  in flight per process, and every op completes within a bounded time.
- `ProducerClient.send(topic, partition, value)` produces one message (value = the integer as
  ASCII) to an explicit partition and waits for its delivery report, polling with a bounded
  deadline (`message.timeout.ms` + a grace). Completion: `ok` with the acknowledged `offset`
  (absent for acks=0), `fail` with the error name when the message was certainly not written,
  `info` with the error name when it may have been (see `classify`).
- After an `info` completion the client must be discarded (`crashed` is True): its message may
  still be in flight, so its process cannot start another op. The workload replaces it with a
  new process number, as Jepsen does.
- `ConsumerClient.poll()` is one consumer poll: `ok` with `records` ([{topic, partition, offset,
  value}] in the order received) and `final`; `fail` when the poll only returned errors (it read
  nothing); `info` when the client raised (it is then `crashed`).
- `drain(...)` reads every partition from its beginning to its end (high watermark, asked with
  bounded retries) with fresh consumers, every poll marked `final: true`.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_fixed

from harness.store.history import HistoryWriter

# librdkafka's own log lines (`%6|...|FAIL|...| Disconnected`) go here, not to the console: a run
# writes them to its run dir (harness/run/main.py, clients.log); elsewhere they are dropped.
LIBRDKAFKA_LOG = logging.getLogger("highwater.librdkafka")
LIBRDKAFKA_LOG.propagate = False
LIBRDKAFKA_LOG.setLevel(logging.INFO)  # whatever the root logger says: librdkafka says little
LIBRDKAFKA_LOG.addHandler(logging.NullHandler())

# ------------------------------------------------------------------ classification
#
# A produce error is a definite `fail` only when the message was certainly not appended.
# That holds for errors the broker returns *instead of* appending, and for errors librdkafka
# raises before anything was sent — but only if that was the message's one and only attempt:
# with retries, an earlier attempt may have timed out after the broker appended it, and the
# final error says nothing about that attempt. So with retries > 0 every error is `info`
# except the local ones (nothing was ever sent).

# The broker rejects before appending (Kafka's ReplicaManager/Log checks precede the append).
BROKER_REJECTED_BEFORE_APPEND = frozenset({
    "NOT_ENOUGH_REPLICAS",  # min.insync.replicas checked before the append
    "UNKNOWN_TOPIC_OR_PART",
    "LEADER_NOT_AVAILABLE",
    "FENCED_LEADER_EPOCH",
    "UNKNOWN_LEADER_EPOCH",
    "INVALID_REQUIRED_ACKS",
    "MSG_SIZE_TOO_LARGE",
    "RECORD_LIST_TOO_LARGE",
    "INVALID_RECORD",
    "CORRUPT_MESSAGE",
    "INVALID_TIMESTAMP",
    "TOPIC_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED",
    "POLICY_VIOLATION",
    "UNSUPPORTED_VERSION",
    "OUT_OF_ORDER_SEQUENCE_NUMBER",  # idempotent batch rejected by sequence check
    "INVALID_PRODUCER_EPOCH",
    "UNKNOWN_PRODUCER_ID",
})
# librdkafka fails these before sending anything: definite whatever the retries.
LOCAL_BEFORE_SEND = frozenset({
    "_UNKNOWN_PARTITION",
    "_UNKNOWN_TOPIC",
    "_MSG_SIZE_TOO_LARGE",
    "_INVALID_ARG",
    "_QUEUE_FULL",
    "_PURGE_QUEUE",  # purged while still queued: never sent
})
# Everything else is `info`. Notably:
# - NOT_LEADER_FOR_PARTITION (NOT_LEADER_OR_FOLLOWER): Kafka answers it also for an acks=all
#   batch it appended before its leadership moved (DelayedProduce, via
#   Partition.checkEnoughReplicasReachOffset; a controlled shutdown does exactly that), so
#   the record may survive. librdkafka never reports it as a final error anyway: it retries
#   it, uncounted, until message.timeout.ms (rd_kafka_handle_Produce_error, REFRESH action),
#   which is how a non-idempotent producer with retries=0 can write a value twice.
# - NOT_ENOUGH_REPLICAS_AFTER_APPEND: the leader DID append; the ISR shrank before acks=all
#   was satisfied. The record may survive (and be read) or be truncated: unknown.
# - REQUEST_TIMED_OUT: the broker's acks=all wait expired; the record is in the leader's log.
# - _MSG_TIMED_OUT, _TIMED_OUT, _TRANSPORT, NETWORK_EXCEPTION, _ALL_BROKERS_DOWN,
#   _PURGE_INFLIGHT: the request may have reached the broker and been appended.
# - KAFKA_STORAGE_ERROR: the append failed mid-way on the leader's disk; a prefix may persist.
# - DUPLICATE_SEQUENCE_NUMBER: the broker already has it — written, but offset unknown.
# - unknown codes: when unsure, `info` is always sound; a wrong `fail` is a false anomaly.


def classify(error_name: str, single_attempt: bool) -> str:
    """`fail` (certainly not written) or `info` (unknown) for a produce error name."""
    if error_name in LOCAL_BEFORE_SEND:
        return "fail"
    if single_attempt and error_name in BROKER_REJECTED_BEFORE_APPEND:
        return "fail"
    return "info"


def error_name(err: KafkaError | BaseException) -> str:
    if isinstance(err, KafkaException) and err.args and isinstance(err.args[0], KafkaError):
        err = err.args[0]
    if isinstance(err, KafkaError):
        return err.name()
    return type(err).__name__


def encode_value(value: int) -> bytes:
    return str(value).encode("ascii")


def decode_value(raw: bytes | None) -> int | None:
    """The integer a harness producer wrote, or None for anything else."""
    if raw is None:
        return None
    try:
        text = raw.decode("ascii")
        return int(text) if text.lstrip("-").isdigit() else None
    except UnicodeDecodeError:
        return None


class ProcessIds:
    """Thread-safe source of fresh process numbers (a replaced client gets a new one)."""

    def __init__(self, start: int = 0) -> None:
        self._next = itertools.count(start)
        self._lock = threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            return next(self._next)


# ------------------------------------------------------------------ producer


@dataclass
class _Delivery:
    done: bool = False
    error: KafkaError | None = None
    offset: int | None = None


class ProducerClient:
    """One producer process: sends one message at a time and records each send."""

    # Past message.timeout.ms librdkafka must have reported; this is our own safety net.
    GRACE_S = 5.0

    def __init__(
        self, process: int, bootstrap: str, history: HistoryWriter, acks: str = "all",
        idempotence: bool = False, timeout_ms: int = 10_000, retries: int | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        if acks not in ("0", "1", "all"):
            raise ValueError(f"acks must be '0', '1' or 'all', got {acks!r}")
        self.process = process
        self.history = history
        self.acks = acks
        self.timeout_ms = timeout_ms
        # Without idempotence one op = one attempt: a retry after a timed-out attempt could
        # write the value twice, a duplicate made by the harness, not by the broker.
        # Idempotence needs retries (sequence numbers make them safe).
        self.retries = (1_000_000 if idempotence else 0) if retries is None else retries
        self.crashed = False
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "enable.idempotence": idempotence,
            "retries": self.retries,
            "linger.ms": 0,
            "message.timeout.ms": timeout_ms,
            "request.timeout.ms": max(1, min(timeout_ms, 5_000)),
            "socket.timeout.ms": max(10, min(timeout_ms, 10_000)),
            "reconnect.backoff.max.ms": 1_000,
            "topic.metadata.refresh.interval.ms": 5_000,
            "client.id": f"highwater-producer-{process}",
            "logger": LIBRDKAFKA_LOG,
        }
        conf.update(config or {})
        self._producer = Producer(conf)

    def send(self, topic: str, partition: int, value: int) -> dict[str, Any]:
        """Produce `value` to `topic`/`partition`; returns the completion op written."""
        if self.crashed:
            raise RuntimeError(f"process {self.process} crashed; start a new client")
        invoke = self.history.invoke(
            self.process, "send", topic=topic, partition=partition, value=value, acks=self.acks
        )
        delivery = _Delivery()

        def on_delivery(err: KafkaError | None, msg) -> None:  # noqa: ANN001
            delivery.error = err
            delivery.offset = msg.offset() if err is None else None
            delivery.done = True

        try:
            self._producer.produce(
                topic, encode_value(value), partition=partition, on_delivery=on_delivery
            )
        except (KafkaException, BufferError) as e:
            name = "_QUEUE_FULL" if isinstance(e, BufferError) else error_name(e)
            return self._complete(invoke, classify(name, True), name)
        deadline = time.monotonic() + self.timeout_ms / 1000 + self.GRACE_S
        while not delivery.done and time.monotonic() < deadline:
            self._producer.poll(min(0.05, max(0.0, deadline - time.monotonic())))
        if not delivery.done:
            self.crashed = True
            return self.history.complete(invoke, "info", error="_HARNESS_DELIVERY_TIMEOUT")
        if delivery.error is not None:
            name = delivery.error.name()
            return self._complete(invoke, classify(name, self.retries == 0), name)
        if self.acks == "0" or delivery.offset is None or delivery.offset < 0:
            return self.history.complete(invoke, "ok")  # acks=0: no offset is known
        return self.history.complete(invoke, "ok", offset=delivery.offset)

    def _complete(self, invoke: dict[str, Any], typ: str, name: str) -> dict[str, Any]:
        if typ == "info":
            self.crashed = True
        return self.history.complete(invoke, typ, error=name)

    def close(self) -> None:
        """Drop anything still queued (bounded: never waits for a dead cluster)."""
        try:
            self._producer.purge()
            self._producer.flush(0)
        except (KafkaException, RuntimeError):
            pass


# ------------------------------------------------------------------ consumer


def _tp(topic: str, partition: int, offset: int = OFFSET_BEGINNING) -> KafkaTopicPartition:
    return KafkaTopicPartition(topic, partition, offset)


class ConsumerClient:
    """One consumer process: each `poll()` is one recorded poll op.

    mode "assign" reads `partitions` from their beginning (group.id is set, offsets are never
    committed); mode "subscribe" joins `group_id` on the partitions' topics — it needs a broker
    with a group coordinator (JoinGroup/SyncGroup), which broker_app does not have yet.
    """

    def __init__(
        self, process: int, bootstrap: str, history: HistoryWriter,
        partitions: Iterable[tuple[str, int]], mode: str = "assign",
        group_id: str | None = None, final: bool = False, max_records: int = 500,
        config: dict[str, Any] | None = None,
    ) -> None:
        if mode not in ("assign", "subscribe"):
            raise ValueError(f"consumer mode must be 'assign' or 'subscribe', got {mode!r}")
        self.process = process
        self.history = history
        self.final = final
        self.max_records = max_records
        self.partitions = list(partitions)
        self.crashed = False
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group_id or f"highwater-{process}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
            "socket.timeout.ms": 10_000,
            "session.timeout.ms": 10_000,
            "reconnect.backoff.max.ms": 1_000,
            "topic.metadata.refresh.interval.ms": 5_000,
            "client.id": f"highwater-consumer-{process}",
            "logger": LIBRDKAFKA_LOG,
        }
        conf.update(config or {})
        self._consumer = Consumer(conf)
        #: partition -> offset after the last record read (what a drain compares with the end)
        self.positions: dict[tuple[str, int], int] = {}
        #: partitions that reported end-of-partition since their last record
        self.at_eof: set[tuple[str, int]] = set()
        if mode == "assign":
            self._consumer.assign([_tp(t, p) for t, p in self.partitions])
        else:
            self._consumer.subscribe(sorted({t for t, _ in self.partitions}))

    def poll(self, timeout_s: float = 0.5) -> dict[str, Any]:
        """One poll op: up to max_records within timeout_s; returns the completion op written."""
        if self.crashed:
            raise RuntimeError(f"process {self.process} crashed; start a new client")
        invoke = self.history.invoke(self.process, "poll", final=self.final)
        try:
            msgs = self._consumer.consume(num_messages=self.max_records, timeout=timeout_s)
        except (KafkaException, RuntimeError) as e:
            self.crashed = True
            return self.history.complete(invoke, "info", error=error_name(e))
        records: list[dict[str, Any]] = []
        errors: list[str] = []
        for m in msgs:
            err = m.error()
            key = (m.topic(), m.partition())
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    self.at_eof.add(key)
                else:
                    errors.append(err.name())
                continue
            value = decode_value(m.value())
            if value is None:
                # Not a harness value: recording it would break the history contract, and
                # dropping it silently would hide it. Say so; the poll is then unknown.
                self.crashed = True
                return self.history.complete(
                    invoke, "info",
                    error=f"_NON_INTEGER_VALUE at {m.topic()}-{m.partition()}@{m.offset()}",
                )
            records.append(
                {"topic": m.topic(), "partition": m.partition(), "offset": m.offset(),
                 "value": value}
            )
            self.positions[key] = m.offset() + 1
            self.at_eof.discard(key)
        if errors and not records:
            return self.history.complete(invoke, "fail", error=errors[0])
        return self.history.complete(invoke, "ok", records=records)

    def end_offset(self, topic: str, partition: int, timeout_s: float = 5.0,
                   attempts: int = 5) -> int:
        """The partition's high watermark, asked of the leader (bounded retries)."""
        for attempt in Retrying(
            stop=stop_after_attempt(attempts), wait=wait_fixed(0.5), reraise=True,
            retry=retry_if_exception_type(KafkaException),
        ):
            with attempt:
                _, high = self._consumer.get_watermark_offsets(
                    _tp(topic, partition), timeout=timeout_s, cached=False
                )
                return int(high)
        raise AssertionError("unreachable")  # Retrying either returns or reraises

    def close(self) -> None:
        try:
            self._consumer.close()
        except (KafkaException, RuntimeError):
            pass


# ------------------------------------------------------------------ drain


@dataclass
class DrainResult:
    """Per partition name: the end offset reached, or why it was not."""

    drained: dict[str, int] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.failed


def drain(
    bootstrap: str, history: HistoryWriter, partitions: Iterable[tuple[str, int]],
    new_process: Callable[[], int], timeout_s: float = 60.0, idle_s: float = 3.0,
    poll_timeout_s: float = 0.5, stop: threading.Event | None = None,
) -> DrainResult:
    """Read every partition from the beginning to its end with a fresh consumer, final=true.

    A partition is drained once the consumer reached its high watermark (end-of-partition or
    position >= HW) and stayed there for `idle_s` with the HW unchanged when asked again. A
    consumer that crashes is replaced by a new process reading the undrained partitions from
    the beginning again. Past `timeout_s` (overall) the undrained partitions are listed in
    `failed` with the reason.
    """
    remaining = list(dict.fromkeys(partitions))
    result = DrainResult()
    reasons = {tp: "drain did not start" for tp in remaining}
    deadline = time.monotonic() + timeout_s
    while remaining and time.monotonic() < deadline and not (stop and stop.is_set()):
        client = ConsumerClient(
            new_process(), bootstrap, history, remaining, final=True,
            group_id=f"highwater-drain-{history.path.parent.name}",
        )
        try:
            ends = _drain_with(client, deadline, idle_s, poll_timeout_s, stop, reasons)
        finally:
            client.close()
        for tp, end in ends.items():
            result.drained[f"{tp[0]}-{tp[1]}"] = end
        remaining = [tp for tp in remaining if tp not in ends]
    for tp in remaining:
        result.failed[f"{tp[0]}-{tp[1]}"] = reasons[tp]
    return result


def _drain_with(
    client: ConsumerClient, deadline: float, idle_s: float, poll_timeout_s: float,
    stop: threading.Event | None, reasons: dict[tuple[str, int], str],
) -> dict[tuple[str, int], int]:
    """Poll until every partition of `client` is drained, it crashes, or the deadline."""
    ends: dict[tuple[str, int], int | None] = {tp: None for tp in client.partitions}
    at_end_since: dict[tuple[str, int], float] = {}
    drained: dict[tuple[str, int], int] = {}

    def ask(tp: tuple[str, int]) -> int | None:
        try:
            return client.end_offset(*tp)
        except KafkaException as e:
            reasons[tp] = f"high watermark unknown: {error_name(e)}"
            return None

    while len(drained) < len(ends) and time.monotonic() < deadline:
        if stop and stop.is_set():
            break
        client.poll(timeout_s=poll_timeout_s)
        if client.crashed:
            for tp in ends.keys() - drained.keys():
                reasons[tp] = f"consumer {client.process} crashed"
            return drained
        now = time.monotonic()
        for tp in ends:
            if tp in drained:
                continue
            end = ends[tp] if ends[tp] is not None else ask(tp)
            if end is None:
                continue
            ends[tp] = end
            position = client.positions.get(tp, 0)
            at_end = tp in client.at_eof or position >= end
            if not at_end:
                at_end_since.pop(tp, None)
                reasons[tp] = f"drain timed out at offset {position} of {end}"
                continue
            since = at_end_since.setdefault(tp, now)
            if now - since < idle_s:
                continue
            latest = ask(tp)
            if latest is not None and latest == end:
                drained[tp] = latest
            elif latest is not None:
                # The end moved (or this replica is behind it): keep reading.
                ends[tp] = latest
                at_end_since.pop(tp, None)
    return drained
