"""The validated plan model: what `load_plan` returns and the run interprets.

Semantics the run must keep:
- Steps run in list order, one after another. `at: T` fires at T seconds after the
  workload started (at once if already past); `after: S` fires S seconds after the previous
  step fired; `when: C` fires as soon as C holds on a fresh ClusterState, polled from the
  moment the previous step fired, and gives up after `timeout` seconds (on_timeout "fail":
  the run could not be carried out, exit 2; "skip": record it and go on to the next step).
- Targets are resolved when the step fires. A step with `duration` is undone (ActionSpec.undo)
  that many seconds later, on the nodes it resolved to, without blocking later steps.
- After the last step (and the workload) the run heals everything, waits `settle.timeout_s`
  at most for every partition to have a leader and a full ISR, then drains.
- `modes`: named variants of the plan (a documented scenario's `legacy` and `fixed`), each a set
  of overrides applied exactly like `--set` before the user's, so a run records its mode in its
  overrides and `--replay` repeats it; `mode_overrides` gives them.
- `expected`: anomaly -> Expectation (harness.checker.expectations, the one type; the run
  hands these to the checker as they are). Verdict (HISTORY.md, `expectations.judge`):
  as-expected when every named anomaly matches its expression, whatever the unnamed ones show
  (a scenario names what its story is about; `valid` still reports everything); with no
  expectations, as-expected exactly when valid.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.checker.expectations import Expectation
from harness.plan.conditions import Condition
from harness.plan.targets import Target

CATALOG_SIZE = 25  # entries of ../shared/LOSS-CATALOG.md


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int = 1
    replication_factor: int = 3
    min_insync_replicas: int = 1
    configs: dict[str, str] = field(default_factory=dict)

    def partition_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.partitions)]


@dataclass(frozen=True)
class ClusterSpec:
    brokers: int = 3
    controllers: int = 3  # the KRaft controller quorum's size (issue 13: 3 by default)
    topics: tuple[TopicSpec, ...] = ()
    switches: dict[str, str] = field(default_factory=dict)  # validated by the broker
    # The Kafka release whose behaviour the cluster emulates (broker_app/kafka_versions.py);
    # None: the default (today's Kafka). Explicit version switches override one field each.
    kafka_version: str | None = None

    def emulated_version(self) -> str:
        from broker_app.kafka_versions import DEFAULT_VERSION

        return self.kafka_version or DEFAULT_VERSION

    def version_switches(self) -> dict[str, str]:
        """Every version-governed switch as the brokers and controller will run it."""
        from broker_app.kafka_versions import SWITCH_NAMES, resolve

        return resolve(self.kafka_version,
                       {k: v for k, v in self.switches.items() if k in SWITCH_NAMES})

    def partitions(self) -> dict[str, int]:
        """Every partition name -> its replication factor."""
        return {p: t.replication_factor for t in self.topics for p in t.partition_names()}

    def broker_ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.brokers + 1))

    def controller_ids(self) -> tuple[int, ...]:
        """The KRaft controllers' node ids: 1..controllers (their own id space: controller 1
        and broker 1 are different nodes, as Kafka's separate controller processes are)."""
        return tuple(range(1, self.controllers + 1))


@dataclass(frozen=True)
class ProducerSpec:
    count: int = 1
    acks: str = "all"
    rate: float = 100.0  # sends per second, per producer
    values: int | None = None  # how many values each producer sends ...
    duration_s: float | None = None  # ... or for how long
    partitions: tuple[str, ...] = ()  # empty: every partition, round robin
    idempotence: bool = False
    timeout_ms: int = 10_000  # delivery timeout: past it a send is `info`

    def expected_duration_s(self) -> float:
        if self.duration_s is not None:
            return self.duration_s
        assert self.values is not None
        return self.values / self.rate


@dataclass(frozen=True)
class ConsumerSpec:
    """Consumers: `assign` reads explicit partitions from the start and never commits;
    `subscribe` joins consumer group `group` on every topic of the plan and commits its position
    after each poll that read records, as `commit` says: `sync` (Consumer.commit, waited for),
    `async` (commit(asynchronous=True), the op completes with the on_commit callback's outcome),
    `auto` (enable.auto.commit: the offsets are stored for librdkafka's auto-commit, the op is
    `info`), `none` (never commits); polls record generations and commits are ops
    (docs/history-groups.md, "Commit modes")."""

    count: int = 1
    poll_interval_ms: int = 100
    partitions: tuple[str, ...] = ()  # empty: every partition (assign mode only)
    mode: str = "assign"  # assign | subscribe
    group: str = "highwater"
    commit: str = "sync"  # sync | async | auto | none (subscribe mode)
    assignor: str = "range"  # range | roundrobin | cooperative-sticky
    max_poll_records: int = 500  # records per poll op at most (subscribe mode)
    # librdkafka's auto.offset.reset of assign-mode consumers: where a position that is out of
    # the leader's range goes (earliest: the log start; latest: the end, as a consumer at the
    # tail of a stream is usually set up). A truncation KIP-320 validation detects goes back
    # to where the logs diverged, whatever this says.
    auto_offset_reset: str = "earliest"
    # KIP-392: consumer slot i sets client.rack = racks[i % len(racks)] (empty: no rack). A
    # container broker N is in rack "rack-N", so with `cluster.switches: {replica-selector:
    # rack-aware}` a consumer with rack "rack-N" reads from broker N when it holds a replica
    # in the ISR (up to that replica's HW), else from the leader.
    racks: tuple[str, ...] = ()

    def rack(self, slot: int) -> str | None:
        return self.racks[slot % len(self.racks)] if self.racks else None


@dataclass(frozen=True)
class WorkloadSpec:
    producers: tuple[ProducerSpec, ...] = (ProducerSpec(duration_s=30.0),)
    consumers: ConsumerSpec = ConsumerSpec()

    def duration_s(self) -> float:
        """How long the producers are expected to run (the longest group)."""
        return max((p.expected_duration_s() for p in self.producers), default=0.0)


@dataclass(frozen=True)
class Step:
    action: str
    name: str  # unique within the plan; random steps are "random-<i>-<kind>"
    at: float | None = None
    after: float | None = None
    when: Condition | None = None
    timeout: float | None = None  # seconds; set exactly when `when` is
    on_timeout: str = "fail"  # fail | skip
    target: Target | None = None
    peers: Target | None = None  # partition: the other side (None: rest)
    src: Target | None = None  # link actions: `from`
    dst: Target | None = None  # link actions: `to`
    duration: float | None = None
    params: dict[str, Any] = field(default_factory=dict)  # action parameters, defaults filled
    line: int | None = None  # where the step starts in the plan file

    def describe(self) -> str:
        parts = [self.action]
        if self.target:
            parts.append(str(self.target))
        if self.src and self.dst:
            parts.append(f"{self.src} -> {self.dst}")
        if self.peers:
            parts.append(f"from {self.peers}")
        parts += [f"{k}={v}" for k, v in self.params.items()]
        if self.duration is not None:
            parts.append(f"for {self.duration:g}s")
        return " ".join(parts)


@dataclass(frozen=True)
class NemesisSpec:
    mode: str = "scripted"  # scripted | random
    seed: int | None = None  # random: None means the run picks one and reports it
    kinds: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    interval_s: float = 10.0  # mean quiet time between two faults
    fault_duration_s: float = 5.0  # mean length of one fault
    start_s: float = 5.0  # first fault not before
    duration_s: float | None = None  # schedule horizon; None: the workload's duration
    partitions: tuple[str, ...] = ()  # partitions that leader/follower targets refer to
    params: dict[str, dict[str, Any]] = field(default_factory=dict)  # per kind
    overlap: int = 1  # independent schedules superimposed, so faults overlap in time


@dataclass(frozen=True)
class ModeSpec:
    """One variant of a plan: broker switches, other overrides and what it must show."""

    name: str
    description: str = ""
    overrides: dict[str, str] = field(default_factory=dict)  # --set key -> value text
    # Per acks level, expectations on results.json stats.lost_by_acks (e.g. L3: "1" > 0,
    # "all" == 0); the checker's verdict does not see these, the scenario runner does.
    lost_by_acks: dict[str, Expectation] = field(default_factory=dict)
    # On the replicas' logs collected after the run (data/): offsets held by two replicas with
    # different values (L2's divergence, which clients may never read). None: not checked.
    diverged_offsets: Expectation | None = None
    line: int | None = None  # where the mode starts in the plan file


@dataclass(frozen=True)
class SettleSpec:
    timeout_s: float = 60.0


@dataclass(frozen=True)
class DrainSpec:
    timeout_s: float = 60.0  # give up draining after this long (the partition: no-final-read)
    idle_s: float = 3.0  # a partition is drained once at its end offset and idle this long


@dataclass(frozen=True)
class Plan:
    name: str
    description: str
    source: str  # the file it was loaded from
    cluster: ClusterSpec
    workload: WorkloadSpec
    faults: tuple[Step, ...] = ()
    nemesis: NemesisSpec = NemesisSpec()
    expected: dict[str, Expectation] = field(default_factory=dict)
    settle: SettleSpec = SettleSpec()
    drain: DrainSpec = DrainSpec()
    overrides: dict[str, str] = field(default_factory=dict)  # the --set values applied
    modes: dict[str, ModeSpec] = field(default_factory=dict)
    title: str = ""  # one line, e.g. for `highwater scenario list`
    # The entries of ../shared/LOSS-CATALOG.md (1..CATALOG_SIZE) this plan reproduces.
    catalog: tuple[int, ...] = ()
    # file:line notes the loader wants shown (e.g. a switch overriding the kafka_version preset)
    notes: tuple[str, ...] = ()

    def expected_text(self) -> dict[str, str]:
        """`expected` as results.json writes it, e.g. {"lost-write": "> 0"}."""
        return {k: str(v) for k, v in self.expected.items()}
