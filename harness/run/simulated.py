"""The simulator's runtime of the one run pipeline (harness/run/pipeline.py), and
`simulate(plan, steps, seed, out_dir)`: one schedule of a plan on the simulator.

SimRuntime carries the pipeline's phases on a SimCluster (broker_app/sim) on the virtual clock:
the cluster starts and registers (STARTUP_TIMEOUT_MS), the plan's topics are created through
the controller and led with a full ISR; time 0 of the history and of the plan's `at` is when
the workload starts; the fault loop ticks the one Nemesis every TICK_MS of virtual time (and
runs the clock to an undo's due time in between), the producers run their jobs; then the
pipeline heals, waits for convergence and drains with a fresh consumer. The clients are
harness/sim/workload.py's (the simulator's own network, no librdkafka). The history is
written by HistoryWriter on the virtual clock and checked by the reference checker
(harness/checker/reference.py, HISTORY.md's definitions, differential-tested against the
Spark checker); results.json carries the run checks as a container run's does
(`unconverged-replicas`, `diverged-offsets`: in-sync replicas' disks compared after the
settle, `metadata-divergence` and `controller-commit-while-cut` for a quorum,
`unexpected-exits`) and the simulator's own `invariant-violations` (broker_app/sim/
invariants.py, checked after every event: a violation the mode's switches do not promise is
reported under `tolerated`, not counted); `SimResult.verdict` is the one verdict
(expectations.run_verdict) against the plan's `expected`. Everything is a function of (plan,
steps, seed): the same seed gives the same history byte for byte.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker_app.controller.messages import NewTopic
from broker_app.sim.cluster import SimCluster
from broker_app.sim.invariants import InvariantChecker
from broker_app.sim.quorum import CONTROLLER_ID_BASE
from harness.checker.exits import exits_result
from harness.checker.expectations import (
    AS_EXPECTED,
    DIVERGED_OFFSETS,
    INVARIANT_VIOLATIONS,
    METADATA_DIVERGENCE,
    UNCONVERGED_REPLICAS,
    UNEXPECTED,
    UNEXPECTED_EXITS,
    Judgement,
    run_verdict,
)
from harness.checker.metadata_check import committed_log_divergence, committed_records
from harness.checker.replica_logs import divergence_check
from harness.checker.results import check_run
from harness.cluster.simulated import SimulatedCluster
from harness.nemesis import FiredStep, Nemesis, NemesisError
from harness.plan.model import Plan, Step
from harness.plan.state import ClusterState
from harness.run.pipeline import RunAborted, carry_out
from harness.sim.config import broker_configs, controller_config
from harness.sim.workload import ClientContext, Drainer, SimConsumer, SimProducer, SimWorkload
from harness.store.history import HISTORY_FILE, HistoryWriter
from harness.store.quorum import QUORUM_FILE, QuorumWriter
from harness.workload import all_partitions, parse_partition, producer_jobs

TICK_MS = 50  # the fault loop's poll interval (virtual)
STARTUP_TIMEOUT_MS = 30_000
__all__ = ["AS_EXPECTED", "UNEXPECTED", "simulate"]


class SimAborted(RunAborted):
    """The schedule could not be carried out (a `when` with on_timeout fail, no start-up)."""


@dataclass
class SimResult:
    seed: int
    results: dict[str, Any]
    fired: list[FiredStep] = field(default_factory=list)
    virtual_ms: int = 0
    events: int = 0
    history_path: Path | None = None
    # partition -> offset -> {node: value}: offsets where ISR members' logs differ at the end
    # (replica divergence no client needs to have read; the container run's diverged_offsets)
    diverged: dict[str, dict[int, dict[str, str]]] = field(default_factory=dict)
    # broker id -> records the workload's consumers read from it as a follower (KIP-392)
    follower_reads: dict[int, int] = field(default_factory=dict)

    @property
    def judgement(self) -> Judgement:
        """The run's verdict (expectations.run_verdict: the history and every run check)."""
        return run_verdict(self.results)

    @property
    def verdict(self) -> str:
        return self.judgement.verdict


def _all_registered(cluster: SimulatedCluster) -> bool:
    image = cluster.controller_image()
    return image is not None and all(
        (b := image.brokers.get(i)) is not None and not b.fenced for i in cluster.sim.brokers
    )


def _settled(cluster: SimulatedCluster, partitions: int = 0) -> bool:
    """Every partition (at least `partitions` of them: a quorum's committed image may not
    hold the topics just created yet) led, with every replica in the ISR, in the
    controller's (committed) image."""
    image = cluster.controller_image()
    if image is None or sum(1 for _ in image.all_partitions()) < partitions:
        return False
    for _t, _i, reg in image.all_partitions():
        if reg.leader < 0 or set(reg.isr) != set(reg.replicas):
            return False
    return True


class SimRuntime:
    """harness.run.pipeline.Runtime on the simulator (see the module docstring). `history`
    exists once create_topics returned: its time 0 is the workload's start."""

    def __init__(self, plan: Plan, seed: int, out_dir: Path) -> None:
        self.plan = plan
        self.out_dir = out_dir
        ctl_config, tick_ms = controller_config(plan.cluster)
        self.sim = SimCluster(seed, broker_configs(plan.cluster), ctl_config,
                              controllers=plan.cluster.controllers, tick_interval_ms=tick_ms)
        self.loop = self.sim.loop
        self.cluster = SimulatedCluster(self.sim)
        # Checked after every event from the first on (docs/liveness.md: invariant-violations).
        self.invariants = InvariantChecker(self.sim).attach()
        self.start_ms = 0
        self.history: HistoryWriter | None = None
        self.ctx: ClientContext | None = None
        self.quorum: QuorumSampler | None = None
        self.notes: list[str] = []
        self.sim.start()
        if not self._wait(lambda: _all_registered(self.cluster), STARTUP_TIMEOUT_MS):
            raise SimAborted("brokers did not register within 30 s (virtual)")

    # --- clock and state --------------------------------------------------------------------

    def now(self) -> float:
        return self.loop.now_ms / 1000

    def elapsed(self) -> float:
        return (self.loop.now_ms - self.start_ms) / 1000

    def state(self) -> ClusterState:
        return self.cluster.polled_state(self.elapsed())

    def fresh_state(self) -> ClusterState:
        return self.cluster.state(self.elapsed())

    def say(self, text: str) -> None:
        self.notes.append(text)

    def _wait(self, condition: Any, timeout_ms: int) -> bool:
        """Poll `condition` every TICK_MS of virtual time until it holds or timeout_ms passed
        (and once more then)."""
        loop = self.loop
        deadline = loop.now_ms + timeout_ms
        while loop.now_ms < deadline:
            if condition():
                return True
            loop.run_until(min(loop.now_ms + TICK_MS, deadline))
        return bool(condition())

    def wait_for(self, pred: Any, timeout_s: float) -> ClusterState | None:
        loop = self.loop
        deadline = loop.now_ms + int(timeout_s * 1000)
        while loop.now_ms < deadline:
            state = self.fresh_state()
            if pred(state):
                return state
            loop.run_until(min(loop.now_ms + TICK_MS, deadline))
        return None

    # --- phases -----------------------------------------------------------------------------

    def create_topics(self, topics: Sequence[Any], timeout_s: float) -> None:
        resp = self.sim.controller.create_topics([
            NewTopic(t.name, t.partitions, t.replication_factor, None,
                     {**t.configs, "min.insync.replicas": str(t.min_insync_replicas)})
            for t in topics
        ])  # fmt: skip
        bad = [r for r in resp.results if r.error != 0]
        if bad:
            raise SimAborted(f"CreateTopics failed: {bad}")
        expected = sum(t.partitions for t in topics)
        if not self._wait(lambda: _settled(self.cluster, expected), STARTUP_TIMEOUT_MS):
            raise SimAborted("topics did not get leaders within 30 s (virtual)")
        loop = self.loop
        self.start_ms = start_ms = loop.now_ms
        self.history = HistoryWriter(self.out_dir / HISTORY_FILE,
                                     clock=lambda: (loop.now_ms - start_ms) * 1_000_000,
                                     flush_lines=False)
        self.ctx = ClientContext(self.sim, self.history)
        self.quorum = QuorumSampler(self.sim, self.out_dir / QUORUM_FILE,
                                    lambda: (loop.now_ms - start_ms) * 1_000_000)

    def workload(self) -> SimWorkload:
        """The plan's producers and consumers; they begin on the virtual clock, which stands
        still until run_faults runs it."""
        plan, ctx = self.plan, self.ctx
        assert ctx is not None
        wl = SimWorkload(plan.workload.consumers, [])
        for job in producer_jobs(plan.workload.producers, plan.cluster):
            wl.running += 1
            SimProducer(ctx, job, wl.producer_done).start()
        cspec = plan.workload.consumers
        parts = [parse_partition(p) for p in cspec.partitions] or all_partitions(plan.cluster)
        wl.consumers.extend(SimConsumer(ctx, parts, cspec.poll_interval_ms, cspec.rack(i),
                                        cspec.auto_offset_reset) for i in range(cspec.count))
        for c in wl.consumers:
            c.start()
        return wl

    def run_faults(self, wl: SimWorkload, nemesis: Nemesis) -> None:
        """The fault loop: until the producers finished and every step fired and healed."""
        loop, start_ms = self.loop, self.start_ms
        assert self.quorum is not None
        horizon_ms = int((self.plan.workload.duration_s() + 600) * 1000)
        while loop.now_ms - start_ms < horizon_ms:
            try:
                nemesis.tick()
            except NemesisError as e:
                raise SimAborted(str(e)) from e
            self.quorum.sample()
            if nemesis.failure:
                raise SimAborted(nemesis.failure)
            if wl.running == 0 and nemesis.finished():
                break
            _run_to_next_tick(loop, loop.now_ms + TICK_MS, start_ms, nemesis)
        for c in wl.consumers:
            c.stopped = True

    def drain(self, timeout_s: float, idle_s: float) -> bool:
        assert self.ctx is not None
        drainer = Drainer(self.ctx, all_partitions(self.plan.cluster), int(idle_s * 1000))
        drainer.start()
        self._wait(lambda: drainer.finished, int(timeout_s * 1000))
        drainer.stopped = True
        return drainer.finished

    def close(self) -> None:
        for thing in (self.history, self.quorum):
            if thing is not None:
                thing.close()


def _run_to_next_tick(loop: Any, tick_ms: int, start_ms: int, nemesis: Nemesis) -> None:
    """Run the virtual clock to the fault loop's next tick, stopping on the way wherever an
    undo is due (a step's duration is a timer, not a poll: it ends on time, as the
    containers' nemesis thread ends it within one of its ticks)."""
    while True:
        due = nemesis.next_due()
        due_ms = None if due is None else start_ms + round(due * 1000)
        if due_ms is None or due_ms >= tick_ms:
            loop.run_until(tick_ms)
            return
        loop.run_until(max(loop.now_ms, due_ms))
        nemesis.undo_due()


def check_simulable(plan: Plan, steps: Sequence[Step]) -> None:
    """NemesisError, before anything runs, for what the simulator cannot carry out: a step
    the action table marks not simulated, or a subscribe workload (no consumer groups)."""
    from harness.nemesis import check_supported

    check_supported(steps, simulated=True)
    if plan.workload.consumers.mode != "assign":
        raise NemesisError("workload.consumers.mode subscribe: consumer groups are not "
                           "simulated (run the plan in containers)")


def simulate(plan: Plan, steps: Sequence[Step], seed: int, out_dir: Path) -> SimResult:
    logging.getLogger("broker_app").setLevel(logging.ERROR)
    out_dir.mkdir(parents=True, exist_ok=True)
    rt = SimRuntime(plan, seed, out_dir)
    try:
        carried = carry_out(plan, steps, seed, rt)
    finally:
        rt.close()
    cluster, loop = rt.sim, rt.loop
    diverged = replica_divergence(rt.cluster)
    # The one way a run's records become results.json (harness/checker/results.py); what
    # only the simulator measures is given here, the controller cut is read from the files.
    measured = {UNCONVERGED_REPLICAS: carried.convergence,
                INVARIANT_VIOLATIONS: rt.invariants.result(),
                DIVERGED_OFFSETS: divergence_check(diverged),
                UNEXPECTED_EXITS: exits_result(cluster.unexpected_exits())}
    if len(cluster.controllers) > 1:
        measured[METADATA_DIVERGENCE] = quorum_metadata_check(cluster)
    results = check_run(out_dir, list(plan.expected.values()), measured)
    assert rt.ctx is not None
    return SimResult(seed, results, carried.nemesis.fired, loop.now_ms, loop.events_run,
                     out_dir / HISTORY_FILE, diverged, dict(rt.ctx.follower_reads))


class QuorumSampler:
    """quorum.jsonl on the simulator: what the container run's state poller writes
    (harness/store/quorum.py), sampled every fault-loop tick on the virtual clock, one line
    per controller whose (epoch, leader, active, hw, committed) changed since its last line
    (a dead controller writes nothing, as one that cannot be asked)."""

    def __init__(self, cluster: SimCluster, path: Path, clock_ns: Any) -> None:
        self.cluster = cluster
        self.quorum = list(cluster.controllers.values())
        self.writer = QuorumWriter(path, start_ns=0, clock=clock_ns) if len(self.quorum) > 1 \
            else None
        self._last: dict[int, tuple[Any, ...]] = {}

    def sample(self) -> None:
        if self.writer is None:
            return
        for c in self.quorum:
            raft = c.raft
            if raft is None or not c.process.up:
                continue
            client = raft.client
            me = c.config.node_id - CONTROLLER_ID_BASE
            leader = client.leader_id
            row = (client.epoch, None if leader is None else leader - CONTROLLER_ID_BASE,
                   raft.is_active, client.high_watermark, raft.committed_offset)
            leo = client.log.end_offset
            if self._last.get(me) != (*row, leo):
                self._last[me] = (*row, leo)
                self.writer.write(me, *row, leo=leo)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def replica_divergence(simulated: SimulatedCluster) -> dict[str, dict[int, dict[str, str]]]:
    """Offsets where two ISR members of a partition (the controller's ISR, after the settle)
    hold different values, from the segment files on their simulated disks (what a container
    run collects): harness/checker/replica_logs.py's valid_batches and diverged_offsets. Followers
    copy the leader's batches byte for byte, so replicas whose batches agree (base offset ->
    CRC) are not decoded."""
    from broker_app.storage.topic_partition import TopicPartition
    from harness.checker.replica_logs import diverged_offsets, valid_batches, values

    cluster = simulated.sim
    image = simulated.controller_image()
    if image is None:
        return {}
    out: dict[str, dict[int, dict[str, str]]] = {}
    for t, idx, reg in image.all_partitions():
        tp = TopicPartition(t.name, idx)
        disks = {}
        for b in reg.isr:
            broker = cluster.brokers[b]
            d = broker.data_dir / tp.dir_name
            if broker.fs.isdir(d):
                disks[f"broker-{b}"] = valid_batches(
                    [broker.fs.read_bytes(d / n) for n in broker.fs.listdir(d)
                     if n.endswith(".log")])  # fmt: skip
        if _batches_agree([[(h.base_offset, h.last_offset, h.crc) for h, _ in batches]
                           for batches in disks.values()]):  # fmt: skip
            continue
        diverged = diverged_offsets({node: values(batches) for node, batches in disks.items()})
        if diverged:
            out[f"{t.name}-{idx}"] = diverged
    return out


def tune_gc() -> None:
    """For a process that runs many schedules (sim CLI, explore workers, bench sim): what
    is alive now (modules, plans) moves out of the collector's view (gc.freeze), and the
    young generation is collected every 10,000 allocations instead of 700. A schedule
    makes few reference cycles (requests and callbacks are freed by reference counting), so
    the collector only costs time: 0.96 vs 1.05 CPU s per 30-s schedule. Forked workers
    inherit it."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def quorum_metadata_check(cluster: SimCluster) -> dict[str, Any]:
    """The metadata-divergence result (results.json `metadata-divergence`, judged like a
    container run's) of a simulated controller quorum: every voter's applied committed records
    over the run against the final committed logs (harness/checker/metadata_check)."""
    applied, final = {}, {}
    for name, c in cluster.controllers.items():
        applied[name] = list(getattr(c, "applied", ()))
        client = getattr(c, "client", None)
        final[name] = committed_records(client.log, client.high_watermark) \
            if client is not None and c.process.up else {}
    return committed_log_divergence(applied, final)


def _batches_agree(replicas: list[list[tuple[int, int, int]]]) -> bool:
    """True when every replica's (base, last, crc) batches are the same batches as the
    others' over the offsets it holds (then no offset can hold two values)."""
    union: dict[int, tuple[int, int]] = {}
    for batches in replicas:
        for base, last, crc in batches:
            if union.setdefault(base, (last, crc)) != (last, crc):
                return False
    for batches in replicas:
        if batches:
            start, end = batches[0][0], batches[-1][1]
            mine = {b for b, _l, _c in batches}
            if any(start <= base <= end and base not in mine for base in union):
                return False
    return True
