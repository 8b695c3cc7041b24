"""Nemesis handlers: one per action kind of the action table (harness/plan/actions.py).

Contract: `HANDLERS[kind]` handles every action whose `ActionSpec.kind` is `kind`;
`handler_for(action)` finds it. A handler turns a fired step into a `Fault`: the node names the
history records, `act` (the fault), `undo` (what the run does when the step's duration ends, or
None for an action with nothing to undo) and extra history fields. Each handler's `undoes` maps
its actions to what their undo does; for every action with a duration that is the
`ActionSpec.undo` the table documents (tests/unit/nemesis checks the two agree), so the table
says what a plan can ask for and the handler is the one place that does it. The random nemesis
draws its kinds from the same table (`ActionSpec.random`), so a kind it can draw always has a
handler here.

Handlers get a `StepContext`: the cluster (harness.cluster.protocol.RunCluster: kill, stop,
start, restart, pause, resume, status, node_names, disk_*, the admin requests; `net` for links;
the containers' or the simulator's, the same handler acting on either), a resolver for the
step's other targets (peers, from, to) on the state the step fired on, and the run's workload
(the consumer and group actions replace a consumer or a member, or hold commits).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.plan.actions import ACTIONS
from harness.plan.errors import ResolutionError
from harness.plan.model import Step
from harness.plan.state import Node
from harness.plan.targets import Target

UNSUPPORTED: dict[str, str] = {}


class NemesisError(RuntimeError):
    """A step the run cannot carry out on this cluster."""


def node_name(n: Node) -> str:
    """The cluster's name for a plan node: broker-<id>, controller-<id>, client (the history's
    nemesis ops carry these names; a run before issue 13 step 2 wrote "controller")."""
    return str(n)


@dataclass
class Fault:
    nodes: tuple[str, ...]
    act: Callable[[], None]
    undo: Callable[[], None] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # in both history ops: fixed at fire
    # What `act` found out or did, for the run's events (the history ops must not change
    # between start and stop: the report pairs them by value).
    notes: list[str] = field(default_factory=list)


@dataclass
class StepContext:
    cluster: Any
    # resolve(target, other_side): the target's nodes on the state the step fired on.
    resolve: Callable[[Target, Sequence[Node]], tuple[Node, ...]]
    # remember(nodes): what `target: {step: <this step>}` later refers to.
    remember: Callable[[tuple[Node, ...]], None]
    # The step's own RNG (targets.step_rng): what a fault draws (bits to flip) is reproducible.
    rng: Callable[[], random.Random] = random.Random
    # The run's harness.workload.Workload (group actions act on its members), or None.
    workload: Any = None


class Handler:
    kind = ""
    undoes: dict[str, str | None] = {}

    def fault(self, step: Step, targets: tuple[Node, ...], ctx: StepContext) -> Fault:
        """The fault `step` makes; `targets` are the nodes its `target:` resolved to (none for
        an action without one)."""
        raise NotImplementedError


# ---------------------------------------------------------------------------------- repairs

def start_all(cluster: Any, names: Sequence[str]) -> None:
    """Bring each node back whatever stopped it: resume a paused one, start an exited one."""
    for n in names:
        status = cluster.status(n)
        if status == "paused":
            cluster.resume(n)
        elif status in ("exited", "created", "dead"):
            cluster.start(n)


def resume_all(cluster: Any, names: Sequence[str]) -> None:
    for n in names:
        if cluster.status(n) == "paused":
            cluster.resume(n)


def heal_everything(cluster: Any) -> None:
    """Network healed, every node running, every disk unstalled, every skewed clock reset."""
    cluster.net.heal_all()
    nodes = list(cluster.node_names())
    start_all(cluster, nodes)
    if getattr(cluster, "disk_faults", False):
        for n in nodes:
            if n.startswith("broker-"):
                cluster.disk_unstall(n)
    reset_clocks = getattr(cluster, "reset_skewed_clocks", None)
    if reset_clocks is not None:
        reset_clocks()


# ---------------------------------------------------------------------------------- handlers

# Link actions: how each one's params become a harness.net.Net call on one (src, dst) pair.
LINK_FAULTS: dict[str, Callable[[Any, str, str, dict[str, Any]], None]] = {
    "latency": lambda net, x, y, p: net.latency(x, y, int(p["ms"]), int(p.get("jitter_ms") or 0)),
    "bandwidth": lambda net, x, y, p: net.bandwidth(x, y, int(p["kbps"])),
    "blackhole": lambda net, x, y, p: net.blackhole(x, y, int(p.get("close_after_ms") or 0)),
    "reset": lambda net, x, y, p: net.reset(x, y, int(p.get("after_ms") or 0)),
    "slice": lambda net, x, y, p: net.slice(x, y, int(p["bytes"]), int(p.get("variation") or 0),
                                            int(p.get("delay_us") or 0)),
    "limit-data": lambda net, x, y, p: net.limit_data(x, y, int(p["bytes"])),
}


class NetworkHandler(Handler):
    """Partitions (both directions, Toxiproxy timeout toxics) and one-direction link toxics."""

    kind = "network"
    undoes = {"partition": "heal those links", "isolate": "heal those links",
              **{a: "remove the toxic" for a in LINK_FAULTS}}

    def fault(self, step: Step, targets: tuple[Node, ...], ctx: StepContext) -> Fault:
        net, names = ctx.cluster.net, _names(targets)
        if step.action == "partition":
            peers = ctx.resolve(step.peers or Target("rest"), targets)
            pairs = [(x, node_name(y)) for x in names for y in peers
                     if node_name(y) != x and net.linked(x, node_name(y))]
            return Fault(names, lambda: [net.partition(x, y) for x, y in pairs],
                         lambda: [net.heal(x, y) for x, y in pairs],
                         {"peers": sorted({y for _, y in pairs})})
        if step.action == "isolate":
            return Fault(names, lambda: [net.isolate(n) for n in names],
                         lambda: [net.rejoin(n) for n in names])
        return self._link(step, ctx)

    @staticmethod
    def _link(step: Step, ctx: StepContext) -> Fault:
        apply = LINK_FAULTS[step.action]
        net, a, p = ctx.cluster.net, step.action, step.params
        assert step.src is not None and step.dst is not None
        if step.src.kind == "rest":
            dst = ctx.resolve(step.dst, ())
            src = ctx.resolve(step.src, dst)
        else:
            src = ctx.resolve(step.src, ())
            dst = ctx.resolve(step.dst, src)
        ctx.remember(tuple(dict.fromkeys((*src, *dst))))
        pairs = [(node_name(x), node_name(y)) for x in src for y in dst
                 if x != y and net.linked(node_name(x), node_name(y))]
        if not pairs:
            raise ResolutionError(f"no proxied link from {step.src} to {step.dst}")
        links = [f"{x}->{y}" for x, y in pairs]
        return Fault(tuple(links), lambda: [apply(net, x, y, p) for x, y in pairs],
                     lambda: [net.clear(x, y, kinds=(a,)) for x, y in pairs], {"links": links})


class ProcessHandler(Handler):
    """Signals to a node's container: KILL, TERM, STOP/CONT, and starting it again."""

    kind = "process"
    undoes = {"kill": "start", "stop": "start", "pause": "resume", "start": None,
              "restart": None, "resume": None}

    def fault(self, step: Step, targets: tuple[Node, ...], ctx: StepContext) -> Fault:
        c, p, names = ctx.cluster, step.params, _names(targets)
        a = step.action
        if a == "kill":
            lose = bool(p.get("lose_unsynced"))
            lost: list[str] = []

            def kill() -> None:
                for n in names:
                    dropped = c.kill(n, lose_unsynced=lose)
                    if dropped:  # the simulator counts what a power loss dropped
                        lost.append(f"{n}: the power loss dropped {dropped} unsynced batches")

            return Fault(names, kill, lambda: start_all(c, names), notes=lost)
        if a == "stop":
            return Fault(names, lambda: [c.stop(n) for n in names], lambda: start_all(c, names))
        if a == "start":
            return Fault(names, lambda: start_all(c, names))
        if a == "restart":
            sig, lose = str(p.get("signal", "TERM")), bool(p.get("lose_unsynced"))
            return Fault(names, lambda: [c.restart(n, signal=sig, lose_unsynced=lose)
                                         for n in names])
        if a == "pause":
            return Fault(names, lambda: [c.pause(n) for n in names],
                         lambda: resume_all(c, names))
        if a == "resume":
            return Fault(names, lambda: resume_all(c, names))
        raise NemesisError(f"the process handler has no action {a!r}")


class DiskHandler(Handler):
    """The broker's fault-injecting filesystem (harness/cluster/diskfs.py)."""

    kind = "disk"
    undoes = {"disk-stall": "unstall", "disk-sync": None}

    def fault(self, step: Step, targets: tuple[Node, ...], ctx: StepContext) -> Fault:
        c, names = ctx.cluster, _names(targets)
        if step.action == "disk-stall":
            seconds = float(step.duration or 0)
            ops = str(step.params.get("ops", "all"))
            return Fault(names, lambda: [c.disk_stall(n, seconds, ops) for n in names],
                         lambda: [c.disk_unstall(n) for n in names])
        if step.action == "disk-sync":
            return Fault(names, lambda: [c.disk_sync(n) for n in names])
        raise NemesisError(f"the disk handler has no action {step.action!r}")


class FileHandler(Handler):
    """Damage to a stopped broker's files (harness.cluster.corrupt); nothing to undo: what the
    broker makes of it when it starts again is what the run shows."""

    kind = "file"
    undoes = {"corrupt-file": None}

    def fault(self, step: Step, targets: tuple[Node, ...], ctx: StepContext) -> Fault:
        c, p, names = ctx.cluster, step.params, _names(targets)
        rng = ctx.rng()
        done: list[str] = []

        def act() -> None:
            for n in names:
                done.append(f"{n}: " + c.corrupt_file(n, str(p["file"]), p.get("partition"),
                                                      str(p.get("how", "flip")),
                                                      int(p.get("bytes") or 1), rng))

        return Fault(names, act, None, notes=done)


class ClockHandler(Handler):
    """The broker's clock seam (broker_app/clock.py) through its admin POST /clock."""

    kind = "clock"
    undoes = {"clock": "reset the clock"}

    def fault(self, step: Step, targets: tuple[Node, ...], ctx: StepContext) -> Fault:
        c, p, names = ctx.cluster, step.params, _names(targets)
        ms, period = int(p["ms"]), int(p.get("strobe_period_ms") or 0)
        return Fault(names, lambda: [c.skew_clock(n, ms, period) for n in names],
                     lambda: [c.skew_clock(n, 0) for n in names],
                     {"ms": ms, "strobe_period_ms": period})


class LeadershipHandler(Handler):
    """Admin requests to the cluster (containers: through the client proxies,
    harness/cluster/admin.py)."""

    kind = "leadership"
    undoes = {"elect-preferred": None, "reassign": None, "rebalance": None}

    def fault(self, step: Step, targets: tuple[Node, ...], ctx: StepContext) -> Fault:
        c = ctx.cluster
        if step.action == "elect-preferred":
            parts = list(step.params.get("partitions") or ())
            return Fault((), lambda: c.elect_preferred(parts))
        if step.action == "reassign":
            part, replicas = str(step.params["partition"]), list(step.params["replicas"])
            return Fault((), lambda: c.reassign(part, replicas))
        if step.action == "rebalance":
            brokers = list(step.params.get("brokers") or ())
            topics = list(step.params.get("topics") or ())
            rng = ctx.rng()
            return Fault((), lambda: c.rebalance(topics, brokers, rng))
        raise NemesisError(UNSUPPORTED.get(step.action, f"unknown action {step.action!r}"))


class GroupHandler(Handler):
    """The subscribe workload's group members (harness.workload.Workload): replace one (a
    rebalance on demand) or hold every member's commits for the step's duration."""

    kind = "group"
    undoes = {"replace-member": None, "hold-commits": "release commits"}

    def fault(self, step: Step, targets: tuple[Node, ...], ctx: StepContext) -> Fault:
        wl = ctx.workload
        spec = getattr(wl, "consumer_spec", None)
        if wl is None or spec is None or spec.mode != "subscribe":
            raise NemesisError(f"{step.action} needs a subscribe workload (consumers.mode: "
                               f"subscribe) in this run")
        if step.action == "replace-member":
            slot = int(step.params.get("member") or 0)
            if slot >= spec.count:
                raise NemesisError(f"replace-member: no member {slot} (the group has "
                                   f"{spec.count}: 0..{spec.count - 1})")
            return Fault((f"member-{slot}",), lambda: wl.restart_member(slot),
                         extra={"group": spec.group})
        if step.action == "hold-commits":
            return Fault(("members",), wl.commits_held.set, wl.commits_held.clear,
                         {"group": spec.group})
        raise NemesisError(f"the group handler has no action {step.action!r}")


class ConsumerHandler(Handler):
    """The workload's assign-mode consumers (harness.workload.Workload): replace one by a new
    process reading from the beginning."""

    kind = "consumer"
    undoes = {"replace-consumer": None}

    def fault(self, step: Step, targets: tuple[Node, ...], ctx: StepContext) -> Fault:
        wl = ctx.workload
        spec = getattr(wl, "consumer_spec", None)
        if wl is None or spec is None or spec.mode != "assign":
            raise NemesisError(f"{step.action} needs an assign-mode consumer workload in this run")
        slot = int(step.params.get("consumer") or 0)
        if slot >= spec.count:
            raise NemesisError(f"replace-consumer: no consumer {slot} (the workload has "
                               f"{spec.count}: 0..{spec.count - 1})")
        return Fault((f"consumer-{slot}",), lambda: wl.restart_consumer(slot))


class HealHandler(Handler):
    """Repairs: the network alone, or everything (network, processes, disks)."""

    kind = "heal"
    undoes = {"heal": None, "heal-all": None}

    def fault(self, step: Step, targets: tuple[Node, ...], ctx: StepContext) -> Fault:
        c = ctx.cluster
        if step.action == "heal":
            return Fault((), c.net.heal_all)
        return Fault((), lambda: heal_everything(c))


HANDLERS: dict[str, Handler] = {h.kind: h for h in (
    NetworkHandler(), ProcessHandler(), DiskHandler(), FileHandler(), ClockHandler(),
    LeadershipHandler(), GroupHandler(), ConsumerHandler(), HealHandler())}


def handler_for(action: str) -> Handler:
    spec = ACTIONS.get(action)
    if spec is None or action in UNSUPPORTED or spec.kind not in HANDLERS:
        raise NemesisError(UNSUPPORTED.get(action, f"unknown action {action!r}"))
    return HANDLERS[spec.kind]


def _names(nodes: Sequence[Node]) -> tuple[str, ...]:
    return tuple(node_name(n) for n in nodes)
