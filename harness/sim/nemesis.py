"""Plan steps on a SimCluster: targets resolved on a simulated ClusterState, actions applied
with the simulator's fault primitives, and the same nemesis ops in the history.

`SimNemesis.tick()` is the run's fault loop (harness/plan/timing.step_status on every tick,
targets through harness/plan/targets.resolve with step_rng(seed, i), so a schedule means
what it means in a container run). Supported: partition, isolate, latency, blackhole (without
close_after_ms: the one-way cut of broker_app/sim/network.py), heal, heal-all,
kill (lose_unsynced), stop, start, restart, pause, resume, disk-sync, elect-preferred,
replace-consumer (on the run's SimConsumers, `consumers`).
Not simulated (refused up front by `check_supported`): bandwidth, disk-stall, reassign, rebalance,
clock, replace-member, hold-commits (the simulator has no consumer groups).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from broker_app.metadata.image import MetadataImage
from broker_app.sim.cluster import CLIENT, SimCluster
from broker_app.sim.quorum import CONTROLLER_ID_BASE
from broker_app.storage.topic_partition import TopicPartition
from harness.plan.errors import ResolutionError
from harness.plan.model import Step
from harness.plan.state import (
    ClusterState,
    ControllerState,
    Node,
    PartitionState,
    ReplicaState,
    active_controller,
)
from harness.plan.targets import Target, resolve, step_rng
from harness.plan.timing import FIRE, TIMED_OUT, step_status
from harness.store.history import HistoryWriter

UNSUPPORTED = ("bandwidth", "disk-stall", "reassign", "rebalance", "clock", "replace-member",
               "hold-commits")
STATE_INTERVAL_S = 0.2  # harness/state_poller.py's interval: `when` sees state this fresh
RESTART_GAP_MS = 100


class SimUnsupported(ValueError):
    pass


def check_supported(steps: Sequence[Step]) -> None:
    for s in steps:
        if s.action in UNSUPPORTED:
            raise SimUnsupported(f"step {s.name}: action {s.action!r} is not simulated")
        if s.action == "blackhole" and int(s.params.get("close_after_ms") or 0) > 0:
            raise SimUnsupported(f"step {s.name}: blackhole close_after_ms is not simulated")


def node_name(n: Node) -> str:
    return CLIENT if n.kind == "client" else f"{n.kind}-{n.id}"


def controller_image(cluster: SimCluster) -> MetadataImage | None:
    """The active controller's image as its /state serves it: a quorum's committed image (the
    uncommitted tail may still be undone by a failover), else the one controller's; None when
    no controller is active."""
    ctl = cluster.controller
    if not ctl.process.up or ctl.controller is None:
        return None
    raft = getattr(ctl, "raft", None)
    return raft.committed_image if raft is not None else ctl.controller.image


def cluster_state(cluster: SimCluster, elapsed_s: float) -> ClusterState:
    """What the run's state poller would see: the controller's partitions, and each live,
    unpaused broker's own replicas."""
    image = controller_image(cluster)
    if image is None:  # the harness would see the brokers' (possibly stale) metadata
        images = [b.loader.image for b in cluster.brokers.values() if b.up]
        image = max(images, key=lambda i: i.offset) if images else None
    partitions: dict[str, PartitionState] = {}
    if image is not None:
        for t, idx, reg in image.all_partitions():
            states = {}
            for bid in reg.replicas:
                b = cluster.brokers.get(bid)
                if b is None or not b.up or b.process.paused or b.replica_manager is None:
                    continue
                p = b.replica_manager.get_partition(t.name, idx)
                if p is None:
                    continue
                hwc = b.store.checkpointed_high_watermarks.get(TopicPartition(t.name, idx), -1)
                states[bid] = ReplicaState(bid, p.role, p.log_end_offset, p.high_watermark,
                                           p.leader_epoch, hwc)  # fmt: skip
            leader = reg.leader if reg.leader >= 0 else None
            ps = PartitionState(t.name, idx, leader, reg.leader_epoch, reg.replicas, reg.isr,
                                states, reg.elr)  # fmt: skip
            partitions[ps.name] = ps
    alive = frozenset(i for i, b in cluster.brokers.items() if b.up)
    quorum = _quorum_view(cluster)
    if quorum:
        known = active_controller(quorum)
        ids, active = tuple(sorted(int(n.split("-")[1]) for n in cluster.controllers)), \
            (known[0] if known else None)
    else:
        ids, active = (1,), (1 if cluster.controller.process.up else None)
    return ClusterState(
        brokers=tuple(sorted(cluster.brokers)), alive=alive, partitions=partitions,
        controllers=ids, controller=active, elapsed_s=elapsed_s, quorum=quorum,
    )  # fmt: skip


def _quorum_view(cluster: SimCluster) -> dict[int, ControllerState]:
    """Each live, unpaused quorum voter's /state "quorum" view."""
    out = {}
    for c in cluster.controllers.values():
        client = getattr(c, "client", None)
        if client is None or not c.process.up or c.process.paused or c.raft is None:
            continue
        base = CONTROLLER_ID_BASE  # Raft node ids -> the plan's controller numbers
        leader = None if client.leader_id is None else client.leader_id - base
        out[c.config.node_id - base] = ControllerState(
            c.config.node_id - base, client.epoch, leader, c.raft.is_active,
            c.raft.committed_offset, client.high_watermark, client.log.end_offset,
            tuple(sorted(v - base for v in client.config.voters)))
    return out


@dataclass
class FiredStep:
    step: Step
    at_s: float
    nodes: tuple[Node, ...]
    skipped: bool = False
    detail: dict[str, Any] = field(default_factory=dict)


class SimNemesis:
    def __init__(self, cluster: SimCluster, history: HistoryWriter, steps: Sequence[Step],
                 seed: int) -> None:  # fmt: skip
        self.cluster = cluster
        self.history = history
        self.steps = list(steps)
        self.seed = seed
        self.index = 0
        self.previous_fired_s = 0.0
        self.fired: list[FiredStep] = []
        self.aborted: str | None = None
        self._resolved: dict[str, tuple[Node, ...]] = {}
        self.pending_undo = 0
        self.consumers: list[Any] = []  # the run's SimConsumers (replace-consumer)
        self._state: ClusterState | None = None
        self._state_at = -1.0

    def _polled_state(self, elapsed_s: float) -> ClusterState:
        """The state as the run's StatePoller would hold it: refreshed every 200 ms."""
        if self._state is None or elapsed_s - self._state_at >= STATE_INTERVAL_S - 1e-9:
            self._state = cluster_state(self.cluster, elapsed_s)
            self._state_at = elapsed_s
        return self._state

    @property
    def done(self) -> bool:
        return self.index >= len(self.steps) or self.aborted is not None

    def tick(self, elapsed_s: float) -> None:
        while not self.done:
            step = self.steps[self.index]
            state = self._polled_state(elapsed_s) if step.when is not None else None
            status = step_status(step, elapsed_s, self.previous_fired_s, state)
            if status == TIMED_OUT:
                if step.on_timeout == "fail":
                    self.aborted = f"step {step.name}: `when` did not hold within {step.timeout}s"
                    return
                self.fired.append(FiredStep(step, elapsed_s, (), skipped=True))
                self.index += 1
                self.previous_fired_s = elapsed_s
                continue
            if status != FIRE:
                return
            state = state or cluster_state(self.cluster, elapsed_s)
            try:
                self._fire(self.index, step, state, elapsed_s)
            except ResolutionError as e:
                self.fired.append(FiredStep(step, elapsed_s, (), skipped=True,
                                            detail={"error": str(e)}))  # fmt: skip
            self.index += 1
            self.previous_fired_s = elapsed_s

    # --- actions ----------------------------------------------------------------------------

    def _resolve(self, target: Target | None, state: ClusterState, rng: Any,
                 other: Sequence[Node] = ()) -> tuple[Node, ...]:  # fmt: skip
        if target is None:
            return ()
        return resolve(target, state, rng, other_side=other, steps=self._resolved)

    def _fire(self, i: int, step: Step, state: ClusterState, elapsed_s: float) -> None:
        rng = step_rng(self.seed, i)
        c = self.cluster
        a = step.action
        nodes = self._resolve(step.target, state, rng)
        undo: Any = None
        value: dict[str, Any] = {"step": step.name}
        if a in ("partition", "isolate"):
            if a == "partition":
                peers = (self._resolve(step.peers, state, rng, nodes) if step.peers
                         else resolve(Target("rest"), state, rng, other_side=nodes))  # fmt: skip
            else:
                peers = tuple(n for n in _everyone(state) if n not in nodes) + (Node("client"),)
            pairs = [(node_name(x), node_name(y)) for x in nodes for y in peers if x != y]
            for x, y in pairs:
                c.net.cut(x, y)
            value["cut"] = [f"{x}<->{y}" for x, y in pairs]

            def undo() -> None:
                for x, y in pairs:
                    c.net.uncut(x, y)
        elif a == "latency":
            src = self._resolve(step.src, state, rng)
            dst = self._resolve(step.dst, state, rng, src)
            ms, jitter = int(step.params["ms"]), int(step.params.get("jitter_ms") or 0)
            pairs = [(node_name(x), node_name(y)) for x in src for y in dst if x != y]
            for x, y in pairs:
                c.latency(x, y, ms, jitter)
            value["links"] = [f"{x}->{y}" for x, y in pairs]
            value["ms"] = ms
            nodes = src + dst

            def undo() -> None:
                for x, y in pairs:
                    c.latency(x, y, 0, 0)
        elif a == "blackhole":
            src = self._resolve(step.src, state, rng)
            dst = self._resolve(step.dst, state, rng, src)
            pairs = [(node_name(x), node_name(y)) for x in src for y in dst if x != y]
            for x, y in pairs:
                c.net.cut(x, y, both=False)
            value["links"] = [f"{x}->{y}" for x, y in pairs]
            nodes = src + dst

            def undo() -> None:
                for x, y in pairs:
                    c.net.uncut(x, y, both=False)
        elif a == "heal":
            c.heal()
        elif a == "heal-all":
            c.heal_all()
        elif a in ("kill", "stop"):
            lose = bool(step.params.get("lose_unsynced"))
            for n in nodes:
                if a == "kill":
                    value.setdefault("lost_batches", 0)
                    value["lost_batches"] += c.kill(node_name(n), lose)
                else:
                    c.stop(node_name(n))

            def undo() -> None:
                for n in nodes:
                    c.start_node(node_name(n))
        elif a == "start":
            for n in nodes:
                c.start_node(node_name(n))
        elif a == "restart":
            lose = bool(step.params.get("lose_unsynced"))
            for n in nodes:
                if step.params.get("signal") == "KILL":
                    c.kill(node_name(n), lose)
                else:
                    c.stop(node_name(n))
            c.client.call_later(RESTART_GAP_MS,
                                lambda: [c.start_node(node_name(n)) for n in nodes])  # fmt: skip
        elif a == "pause":
            for n in nodes:
                c.pause(node_name(n))

            def undo() -> None:
                for n in nodes:
                    c.resume(node_name(n))
        elif a == "resume":
            for n in nodes:
                c.resume(node_name(n))
        elif a == "disk-sync":
            for n in nodes:
                c.disk_sync(node_name(n))
        elif a == "elect-preferred":
            _elect_preferred(c, step.params.get("partitions") or ())
        elif a == "replace-consumer":
            slot = int(step.params.get("consumer") or 0)
            if slot >= len(self.consumers):
                raise SimUnsupported(f"replace-consumer: no consumer {slot}")
            self.consumers[slot].replace()
            value["consumer"] = slot
        else:
            raise SimUnsupported(f"action {a!r} is not simulated")
        self._resolved[step.name] = nodes
        value["nodes"] = [str(n) for n in nodes]
        self.history.nemesis(a, "start", value)
        self.fired.append(FiredStep(step, elapsed_s, nodes, detail=value))
        if step.duration is not None and undo is not None:
            self.pending_undo += 1

            def stop() -> None:
                undo()
                self.pending_undo -= 1
                self.history.nemesis(a, "stop", {"step": step.name})

            c.client.call_later(int(step.duration * 1000), stop)


def _everyone(state: ClusterState) -> tuple[Node, ...]:
    return tuple(Node("broker", b) for b in state.brokers) + tuple(
        Node("controller", c) for c in state.controllers)  # fmt: skip


def _elect_preferred(c: SimCluster, partitions: Sequence[str]) -> None:
    from broker_app.controller.messages import ElectLeadersRequest
    from harness.workload import parse_partition

    ctl = c.controller
    if not ctl.process.up or ctl.controller is None:
        return
    wanted = [parse_partition(p) for p in partitions] or None
    request = ElectLeadersRequest(0, wanted)
    # As the controller's ElectLeaders API does: it appends to the Raft log and wakes the
    # client to replicate.
    assert ctl.raft is not None
    ctl.raft.elect_leaders(request, c.loop.now_ms)
