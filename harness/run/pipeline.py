"""A run's phases, written once for both runtimes (Jepsen's `run!`): topics, workload and
faults, heal, settle, drain.

Contract: `carry_out(plan, steps, seed, rt)` drives a `Runtime` (the containers:
harness/run/containers.py; the simulator: harness/run/simulated.py) through
1. `rt.create_topics(topics, timeout_s)`: every topic created and led with a full ISR
   (RunAborted otherwise);
2. `rt.workload()`: the plan's producers and consumers, not started yet; the one Nemesis
   (harness/nemesis: schedule and handlers of both runtimes) over `rt.cluster`, on `rt`'s clock
   and state;
3. `rt.run_faults(workload, nemesis)`: time 0 of the faults; the workload and the schedule until
   the producers finished and every step fired and was undone (RunAborted when a step failed
   or the producers overran), then the workload's clients stop;
4. `nemesis.heal_all()`: every link healed, every node running, a heal-all op pair in the
   history; the settle window starts when the heal does;
5. liveness (issue 24): `rt.wait_for` every partition to converge within settle.timeout_s (a
   live leader, a full ISR, every replica caught up: harness.checker.convergence, the run
   check `unconverged-replicas`);
6. `rt.drain(...)`: final reads of every partition (drain.timeout_s, drain.idle_s).
What each runtime checks after (collected disks, metadata images, its checker) stays with it;
both judge with the one verdict (harness.checker.expectations.run_verdict).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from harness.checker.convergence import ConvergenceWatch
from harness.nemesis import Nemesis
from harness.plan.model import Plan, Step
from harness.plan.state import ClusterState


class RunAborted(Exception):
    """The run could not be carried out; the message is the reason."""


class Runtime(Protocol):
    cluster: Any  # harness.cluster.protocol.RunCluster
    history: Any  # harness.store.history.HistoryWriter

    def now(self) -> float: ...  # seconds, monotonic: the wall clock or the virtual one
    def elapsed(self) -> float: ...  # seconds since the faults' time 0
    def state(self) -> ClusterState | None: ...  # as the state poller holds it
    def fresh_state(self) -> ClusterState | None: ...  # as the cluster is now
    def say(self, text: str) -> None: ...
    def create_topics(self, topics: Sequence[Any], timeout_s: float) -> None: ...
    def wait_for(self, pred: Callable[[ClusterState], bool],
                 timeout_s: float) -> ClusterState | None: ...
    def workload(self) -> Any: ...
    def run_faults(self, workload: Any, nemesis: Nemesis) -> None: ...
    def drain(self, timeout_s: float, idle_s: float) -> Any: ...


@dataclass
class Carried:
    """What the phases leave for the runtime's checks."""

    workload: Any
    nemesis: Nemesis
    convergence: dict[str, Any]  # the `unconverged-replicas` run check
    settled: bool  # converged within the settle window
    drain: Any  # the runtime's drain result


def carry_out(plan: Plan, steps: Sequence[Step], seed: int, rt: Runtime,
              on_event: Callable[[Any], None] | None = None) -> Carried:
    rt.create_topics(plan.cluster.topics, plan.settle.timeout_s)
    wl = rt.workload()
    nemesis = Nemesis(rt.cluster, steps, rt.history, rt.state, seed, on_event=on_event,
                      workload=wl, elapsed=rt.elapsed, fire_state=rt.fresh_state)
    rt.run_faults(wl, nemesis)
    # The settle window starts when the heal does: restarting nodes is part of recovering.
    t_heal = rt.now()
    nemesis.heal_all()
    watch = ConvergenceWatch((n, t.replication_factor) for t in plan.cluster.topics
                             for n in t.partition_names())  # fmt: skip
    window = plan.settle.timeout_s
    converged = rt.wait_for(lambda st: watch.observe(st, rt.now() - t_heal),
                            max(0.0, window - (rt.now() - t_heal)))
    if converged is None:
        last = rt.fresh_state()
        if last is not None:
            watch.observe(last, rt.now() - t_heal)
        rt.say(f"not converged within {window:g}s: {describe(last)}; draining anyway")
    drained = rt.drain(plan.drain.timeout_s, plan.drain.idle_s)
    return Carried(wl, nemesis, watch.result(window), converged is not None, drained)


def describe(state: ClusterState | None) -> str:
    if state is None:
        return "no broker state seen"
    parts = [f"{n}: leader {p.leader} isr {list(p.isr)} of {list(p.replicas)}"
             for n, p in sorted(state.partitions.items())]
    return f"alive {sorted(state.alive)}; " + "; ".join(parts)
