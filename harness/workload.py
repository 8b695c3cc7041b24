"""The workload: which op runs when (producers at a rate over the plan's partitions, consumers
polling), and the threads that run them. (Named harness/generator.py before: it is not a
generator in the Jepsen sense, it runs client threads at a pace.)

Contract:
- Pure scheduling (no threads, no clients; unit-testable with a fake clock): `Values` hands out
  integers unique across the run; `Pacer` says how long to wait for the next op at a rate,
  never bursting to catch up after a slow op; `PartitionCycle` picks partitions round robin;
  `ProducerJob.finished` says when a producer is done (value count or duration).
- `Workload` runs one thread per client process slot: each producer slot sends with its own
  client and acks; each consumer slot polls every `poll_interval_ms`. A client whose op ended
  `info` (or that raised) is closed and replaced by a new process number. Threads stop on
  their own when their job is finished (producers) or when `stop()` is called; every wait is
  bounded (the stop event's wait, join with timeout). `stats` counts completions for a live
  progress display; `errors` lists slots that could not run at all (e.g. a bad client config).
- A `subscribe` ConsumerSpec runs group members instead (harness.group_client): each polls
  once per `poll_interval_ms` (at most `max_poll_records` per poll) and, unless `commit: none`,
  commits what it read after every poll that read something (`sync`, `async`: one commit op
  each; `auto`: the offsets are stored for librdkafka's auto-commit, see group_client);
  `restart_member(slot)` replaces
  a member by a new process (a rebalance on demand); `restart_consumer(slot)` replaces an
  assign-mode consumer by a new process reading from the beginning.
- `consumers.racks` gives consumer slot i the client.rack racks[i % len] (KIP-392 fetch from
  follower: with a rack-aware replica selector it reads from a replica in that rack).
- `workload_from_plan(plan, ...)` builds a Workload from a plan's WorkloadSpec/ClusterSpec.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from harness.client import ConsumerClient, ProcessIds, ProducerClient
from harness.group_client import GroupConsumerClient
from harness.plan.model import ClusterSpec, ConsumerSpec, Plan, ProducerSpec
from harness.store.history import HistoryWriter

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

# ------------------------------------------------------------------ pure scheduling


class Values:
    """Integers unique across the run (thread-safe), handed out in increasing order."""

    def __init__(self, start: int = 0) -> None:
        self._next = itertools.count(start)
        self._lock = threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            return next(self._next)


class Pacer:
    """Ops at `rate` per second: op k is due at start + k/rate, unless we fell behind.

    When an op starts late (a send waited for a timeout), the next one is due one interval
    after the late start, not at once: a slow op must not be followed by a burst.
    """

    def __init__(self, rate: float, start: float) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be > 0 ops/s, got {rate}")
        self.interval = 1.0 / rate
        self.due = start

    def delay(self, now: float) -> float:
        """Seconds to wait before the next op may start (0 when it is due)."""
        return max(0.0, self.due - now)

    def started(self, now: float) -> None:
        """Record that the due op started at `now` (>= due)."""
        behind = now - self.due > self.interval
        self.due = (now if behind else self.due) + self.interval


class PartitionCycle:
    """Round robin over partitions, starting at `offset` so producers spread their load."""

    def __init__(self, partitions: Sequence[TopicPartition], offset: int = 0) -> None:
        if not partitions:
            raise ValueError("a producer needs at least one partition")
        self.partitions = list(partitions)
        self._i = offset % len(self.partitions)

    def __call__(self) -> TopicPartition:
        tp = self.partitions[self._i]
        self._i = (self._i + 1) % len(self.partitions)
        return tp


@dataclass(frozen=True)
class ProducerJob:
    """One producer slot: its acks, rate, partitions and when it is finished."""

    slot: int
    acks: str
    rate: float
    partitions: tuple[TopicPartition, ...]
    values: int | None = None  # send this many values ...
    duration_s: float | None = None  # ... or for this long
    idempotence: bool = False
    timeout_ms: int = 10_000

    def finished(self, sent: int, elapsed_s: float) -> bool:
        if self.values is not None and sent >= self.values:
            return True
        return self.duration_s is not None and elapsed_s >= self.duration_s


def parse_partition(name: str) -> TopicPartition:
    """`t-0` -> ("t", 0); topic names may themselves contain `-`."""
    topic, sep, num = name.rpartition("-")
    if not sep or not topic or not num.isdigit():
        raise ValueError(f"partition names are '<topic>-<n>', got {name!r}")
    return topic, int(num)


def all_partitions(cluster: ClusterSpec) -> list[TopicPartition]:
    return [(t.name, i) for t in cluster.topics for i in range(t.partitions)]


def producer_jobs(specs: Iterable[ProducerSpec], cluster: ClusterSpec) -> list[ProducerJob]:
    """Expand each ProducerSpec's `count` into slots; slot numbers are global."""
    jobs: list[ProducerJob] = []
    everything = all_partitions(cluster)
    for spec in specs:
        parts = [parse_partition(p) for p in spec.partitions] or everything
        for _ in range(spec.count):
            jobs.append(ProducerJob(
                slot=len(jobs), acks=spec.acks, rate=spec.rate, partitions=tuple(parts),
                values=spec.values, duration_s=spec.duration_s,
                idempotence=spec.idempotence, timeout_ms=spec.timeout_ms,
            ))
    return jobs


# ------------------------------------------------------------------ threads


class Workload:
    """Producer and consumer threads around real clients; see the module contract."""

    JOIN_TIMEOUT_S = 30.0

    def __init__(
        self, bootstrap: str | Callable[[], str], history: HistoryWriter,
        producers: Sequence[ProducerJob], consumers: ConsumerSpec | None = None,
        consumer_partitions: Sequence[TopicPartition] = (),
        consumer_topics: Sequence[str] = (),
        new_process: Callable[[], int] | None = None, values: Values | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # A callable bootstrap lets a replaced client pick up a changed address list.
        self._bootstrap = bootstrap if callable(bootstrap) else (lambda: bootstrap)
        self.history = history
        self.producer_jobs = list(producers)
        self.consumer_spec = consumers
        self.consumer_partitions = list(consumer_partitions)
        self.consumer_topics = list(consumer_topics)
        self.new_process = new_process or ProcessIds()
        self.values = values or Values()
        self.clock = clock
        self.stop_event = threading.Event()
        self.stats: Counter[str] = Counter()  # "send:ok", "poll:info", ...
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._producers: list[threading.Thread] = []
        self._consumers: list[threading.Thread] = []
        self._restart: set[int] = set()  # member slots asked to rejoin as new processes
        self._restart_consumers: set[int] = set()  # assign slots asked to start over
        #: while set, members read but do not commit (an application that commits only now
        #: and then, e.g. auto-commit every few seconds)
        self.commits_held = threading.Event()
        #: member slot -> the generation of its assignment after its last poll
        self.member_generations: dict[int, int | None] = {}

    # -------------------------------------------------------------- control

    def start(self) -> None:
        for job in self.producer_jobs:
            self._producers.append(self._thread(f"producer-{job.slot}", self._produce, job))
        spec = self.consumer_spec
        if spec is not None and spec.mode == "subscribe" and self.consumer_topics:
            for slot in range(spec.count):
                self._consumers.append(
                    self._thread(f"member-{slot}", self._member, (slot, spec)))
        elif spec is not None and self.consumer_partitions:
            for slot in range(spec.count):
                self._consumers.append(
                    self._thread(f"consumer-{slot}", self._consume, (slot, spec)))

    def _thread(self, name: str, target: Callable, arg: object) -> threading.Thread:
        t = threading.Thread(target=self._guard, args=(name, target, arg), name=name, daemon=True)
        t.start()
        return t

    def _guard(self, name: str, target: Callable, arg: object) -> None:
        try:
            target(arg)
        except Exception as e:  # a slot that cannot run is reported, not silently lost
            log.exception("%s stopped", name)
            with self._lock:
                self.errors.append(f"{name}: {type(e).__name__}: {e}")

    def wait_producers(self, timeout_s: float) -> bool:
        """Wait (bounded) for every producer to finish its job; True when they all did."""
        deadline = self.clock() + timeout_s
        for t in self._producers:
            t.join(max(0.0, deadline - self.clock()))
        return not any(t.is_alive() for t in self._producers)

    def stop(self, timeout_s: float | None = None) -> bool:
        """Stop every thread and wait (bounded); True when all of them ended."""
        self.stop_event.set()
        deadline = self.clock() + (self.JOIN_TIMEOUT_S if timeout_s is None else timeout_s)
        for t in self._producers + self._consumers:
            t.join(max(0.0, deadline - self.clock()))
        return not any(t.is_alive() for t in self._producers + self._consumers)

    def _count(self, op: dict) -> None:
        with self._lock:
            self.stats[f"{op['f']}:{op['type']}"] += 1

    # -------------------------------------------------------------- loops

    def _produce(self, job: ProducerJob) -> None:
        start = self.clock()
        pacer = Pacer(job.rate, start)
        choose = PartitionCycle(job.partitions, offset=job.slot)
        client: ProducerClient | None = None
        sent = 0
        try:
            while not self.stop_event.is_set() and not job.finished(sent, self.clock() - start):
                if self.stop_event.wait(pacer.delay(self.clock())):
                    break
                if job.finished(sent, self.clock() - start):
                    break
                if client is None:
                    client = ProducerClient(
                        self.new_process(), self._bootstrap(), self.history, acks=job.acks,
                        idempotence=job.idempotence, timeout_ms=job.timeout_ms,
                    )
                pacer.started(self.clock())
                topic, partition = choose()
                self._count(client.send(topic, partition, self.values()))
                sent += 1
                if client.crashed:
                    client.close()
                    client = None
        finally:
            if client is not None:
                client.close()

    def _take_restart(self, pending: set[int], slot: int) -> bool:
        """Whether `slot` was asked to restart; the request is consumed."""
        with self._lock:
            asked = slot in pending
            pending.discard(slot)
        return asked

    def _consume(self, arg: tuple[int, ConsumerSpec]) -> None:
        slot, spec = arg
        interval = spec.poll_interval_ms / 1000
        client: ConsumerClient | None = None
        try:
            while not self.stop_event.is_set():
                restart = self._take_restart(self._restart_consumers, slot)
                if restart and client is not None:
                    client.close()
                    client = None
                if client is None:
                    client = ConsumerClient(
                        self.new_process(), self._bootstrap(), self.history,
                        self.consumer_partitions, config=_consumer_config(spec, slot),
                    )
                self._count(client.poll(timeout_s=max(0.05, interval)))
                if client.crashed:
                    client.close()
                    client = None
                    # A crashed consumer restarts from the beginning: not in a tight loop.
                    self.stop_event.wait(interval)
        finally:
            if client is not None:
                client.close()

    def restart_consumer(self, slot: int) -> None:
        """Assign-mode consumer `slot` is replaced by a new process reading its partitions from
        the beginning (the replace-consumer action)."""
        with self._lock:
            self._restart_consumers.add(slot)

    def restart_member(self, slot: int) -> None:
        """Member `slot` closes its consumer (LeaveGroup) and joins again as a new process:
        a replaced consumer, and a rebalance, on demand."""
        with self._lock:
            self._restart.add(slot)

    def _member(self, arg: tuple[int, ConsumerSpec]) -> None:
        """A group member: poll, commit what it read (unless commit: none), replaced when it crashes
        or when restart_member asks."""
        slot, spec = arg
        interval = spec.poll_interval_ms / 1000
        # A member polls once per interval (not back to back): with max_poll_records it reads
        # at a known pace, so a plan can keep a backlog for it during a fault.
        pacer = Pacer(1 / interval, self.clock())
        client: GroupConsumerClient | None = None
        try:
            while not self.stop_event.is_set():
                if self.stop_event.wait(pacer.delay(self.clock())):
                    break
                pacer.started(self.clock())
                restart = self._take_restart(self._restart, slot)
                if restart and client is not None:
                    client.close()
                    client = None
                if client is None:
                    client = GroupConsumerClient(
                        self.new_process(), self._bootstrap(), self.history,
                        self.consumer_topics, spec.group, assignor=spec.assignor,
                        max_records=spec.max_poll_records, config=_rack_config(spec, slot),
                        commit=spec.commit,
                    )
                self._count(client.poll(timeout_s=max(0.05, interval)))
                with self._lock:
                    self.member_generations[slot] = client.generation
                if not client.crashed and spec.commit != "none" and not self.commits_held.is_set():
                    op = client.commit()
                    if op is not None:
                        self._count(op)
                if client.crashed:
                    client.close()
                    client = None
                    self.stop_event.wait(interval)
        finally:
            if client is not None:
                client.close()


def _rack_config(spec: ConsumerSpec, slot: int) -> dict[str, str]:
    """librdkafka's client.rack for consumer `slot` (KIP-392), when the plan gives racks."""
    rack = spec.rack(slot)
    return {"client.rack": rack} if rack else {}


def _consumer_config(spec: ConsumerSpec, slot: int) -> dict[str, str]:
    """Assign-mode consumer `slot`'s librdkafka settings from the plan: client.rack, and
    auto.offset.reset (ConsumerSpec.auto_offset_reset)."""
    return {**_rack_config(spec, slot), "auto.offset.reset": spec.auto_offset_reset}


def workload_from_plan(
    plan: Plan, bootstrap: str | Callable[[], str], history: HistoryWriter,
    new_process: Callable[[], int] | None = None, duration_s: float | None = None,
) -> Workload:
    """The plan's producers and consumers; `duration_s` (from --duration) overrides durations."""
    specs = plan.workload.producers
    if duration_s is not None:
        specs = tuple(
            ProducerSpec(**{**s.__dict__, "duration_s": duration_s, "values": None})
            for s in specs
        )
    consumers = plan.workload.consumers
    parts = [parse_partition(p) for p in consumers.partitions] or all_partitions(plan.cluster)
    topics = [t.name for t in plan.cluster.topics] if consumers.mode == "subscribe" else []
    return Workload(
        bootstrap, history, producer_jobs(specs, plan.cluster), consumers, parts, topics,
        new_process,
    )
