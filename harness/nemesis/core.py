"""Nemesis: interprets a plan's steps against a running cluster, containers or simulated.

What each action does (and undoes) lives in harness/nemesis/handlers.py, one handler per
action kind of the action table; this module is the schedule: when steps fire, when their
undo is due, and the history ops and events that record them.

Contract (the semantics of harness/plan/model.py):
- `Nemesis(cluster, steps, history, state, seed)`: `cluster` is a harness.cluster.protocol
  .RunCluster (containers or simulated: processes, disks, admin requests; its `net` for
  links), `state()` returns the latest ClusterState (or None), `steps` come from
  timing.steps_for. Time 0 is `start()` (the workload's start) or what `elapsed` counts from.
- Steps fire in order (timing.step_status); targets are resolved when a step fires, with
  targets.step_rng(seed, index). A step with `duration` is undone that many seconds later on
  the nodes it resolved to, without blocking later steps. Each fault writes a nemesis op pair
  to the history: phase "start" when it begins, "stop" when it is undone (or, for an action
  with no duration, as soon as it completed); value = {"step", "nodes", ...params}.
- A `when` that times out: on_timeout "skip" records it in `events` and goes on; "fail" sets
  `failure` (the run could not be carried out) and ends the thread.
- A step that cannot act now (no leader to resolve, container already down...) is recorded
  in `events` as an error and skipped: faults hit a moving cluster.
- `heal_all()` (also the `heal-all` action): heal every link, resume paused and start stopped
  containers, unstall disks; pending undos are then closed with their "stop" op.
- `check_supported(steps, simulated)` raises NemesisError, before anything starts, for a step
  the runtime cannot carry out (the action table's `not_simulated` column on the simulator).
- One schedule for both runtimes: `tick()` undoes what is due and fires what is due, on the
  run's clock (`elapsed`); on containers `start()` runs it every TICK_S in a thread of its own,
  the simulator calls it from its fault loop on the virtual clock (running that clock to
  `next_due()` so an undo happens when it is due). `fired` lists every step as it fired or
  was skipped, with the nodes its targets resolved to.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.nemesis.handlers import (
    UNSUPPORTED,
    Fault,
    NemesisError,
    StepContext,
    handler_for,
    heal_everything,
)
from harness.plan.actions import ACTIONS
from harness.plan.errors import ResolutionError
from harness.plan.model import Step
from harness.plan.state import ClusterState, Node
from harness.plan.targets import Target, resolve, step_rng
from harness.plan.timing import FIRE, TIMED_OUT, step_status
from harness.store.history import HistoryWriter

log = logging.getLogger(__name__)

TICK_S = 0.1
# Due times are float sums of seconds (fired at + duration): an undo due at 14.350000000000001
# is due at 14.35 on a millisecond clock.
DUE_SLACK_S = 1e-6


def check_supported(steps: Sequence[Step], simulated: bool = False) -> None:
    """NemesisError for the first step this runtime cannot carry out: an action no handler
    has, or on the simulator one the action table marks `not_simulated` (or with a param it
    cannot honour, `sim_unset`)."""
    for s in steps:
        where = f"line {s.line}: " if s.line else ""
        if s.action in UNSUPPORTED:
            raise NemesisError(f"{where}step {s.name!r}: {UNSUPPORTED[s.action]}")
        spec = ACTIONS.get(s.action)
        if not simulated or spec is None:
            continue
        if spec.not_simulated:
            raise NemesisError(f"{where}step {s.name!r}: action {s.action!r} is not simulated "
                               f"({spec.not_simulated}); run the plan in containers")
        for param in spec.sim_unset:
            if s.params.get(param):
                raise NemesisError(f"{where}step {s.name!r}: {s.action} {param} is not "
                                   f"simulated; run the plan in containers")


@dataclass
class _Active:
    step: Step
    nodes: tuple[str, ...]
    value: dict[str, Any]
    undo: Callable[[], None]
    due: float  # seconds since start


@dataclass
class Event:
    elapsed_s: float
    step: str
    kind: str  # start | stop | skip | error | timeout | note (what a fault did, e.g. bits)
    text: str


@dataclass
class FiredStep:
    """A step when it fired (or was skipped): the nodes its targets resolved to, and what the
    history's start op recorded (`detail`), or the error that skipped it."""

    step: Step
    at_s: float
    nodes: tuple[Node, ...]
    skipped: bool = False
    detail: dict[str, Any] = field(default_factory=dict)


class Nemesis:
    def __init__(
        self,
        cluster: Any,
        steps: Sequence[Step],
        history: HistoryWriter,
        state: Callable[[], ClusterState | None],
        seed: int,
        on_event: Callable[[Event], None] | None = None,
        workload: Any = None,
        elapsed: Callable[[], float] | None = None,
        fire_state: Callable[[], ClusterState | None] | None = None,
    ) -> None:
        self.cluster = cluster
        self.steps = list(steps)
        self.history = history
        self.state = state
        # What targets resolve on when a step fires (default: `state`; the simulator reads
        # the cluster afresh, where a poller's state is one interval old).
        self.fire_state = fire_state or state
        self.seed = seed
        self.on_event = on_event
        self.workload = workload  # what the group actions (replace-member ...) act on
        self.events: list[Event] = []
        self.fired: list[FiredStep] = []
        self.failure: str | None = None
        self.faults_started = 0
        self._active: list[_Active] = []
        self._resolved: dict[str, tuple[Node, ...]] = {}
        self._index = 0
        self._previous = 0.0  # when the last step fired or was skipped
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._elapsed = elapsed
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ control

    def elapsed(self) -> float:
        """Seconds since time 0 (the workload's start), on the run's clock."""
        return self._elapsed() if self._elapsed is not None else time.monotonic() - self._t0

    @property
    def steps_done(self) -> bool:
        return self._index >= len(self.steps)

    def finished(self) -> bool:
        """Every step fired (or was skipped) and every undo ran, or the schedule failed."""
        with self._lock:
            return self.failure is not None or (self.steps_done and not self._active)

    def next_due(self) -> float | None:
        """When (elapsed seconds) the next undo is due, or None: a virtual-time runtime runs
        its clock to min(next tick, next_due) so undos happen when they are due."""
        with self._lock:
            return min((a.due for a in self._active), default=None)

    def start(self, t0: float | None = None) -> Nemesis:
        """Run `tick` every TICK_S in a thread of its own (the containers' wall clock)."""
        self._t0 = time.monotonic() if t0 is None else t0
        self._thread = threading.Thread(target=self._guarded, name="nemesis", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 120.0) -> bool:
        """Stop firing steps (bounded wait for an action in progress); True when ended."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        return self._thread is None or not self._thread.is_alive()

    @property
    def active(self) -> list[str]:
        with self._lock:
            return [a.step.name for a in self._active]

    def done(self) -> bool:
        """The schedule is over: finished, or its thread ended (stopped or crashed)."""
        if self._thread is not None and not self._thread.is_alive():
            return True
        return self.finished()

    def _event(self, step: str, kind: str, text: str) -> None:
        ev = Event(round(self.elapsed(), 3), step, kind, text)
        self.events.append(ev)
        log.info("nemesis %s %s: %s", kind, step, text)
        if self.on_event is not None:
            self.on_event(ev)

    # ------------------------------------------------------------------ the loop

    def _guarded(self) -> None:
        try:
            while not self._stop.is_set() and not self.finished():
                self.tick()
                self._stop.wait(TICK_S)
        except Exception as exc:  # the run must learn why the nemesis died
            log.exception("nemesis crashed")
            self.failure = f"nemesis crashed: {type(exc).__name__}: {exc}"

    def tick(self) -> None:
        """Undo what is due, then fire every step whose time (or `when`) has come, in order.
        The one schedule of both runtimes: a thread calls it every TICK_S on containers, the
        simulator from its fault loop on the virtual clock."""
        self.undo_due()
        while self.failure is None and not self.steps_done and not self._stop.is_set():
            step = self.steps[self._index]
            st = self.state() if step.when is not None else None
            status = step_status(step, self.elapsed(), self._previous, st)
            if status == FIRE:
                self._fire(self._index, step, st)
            elif status == TIMED_OUT:
                text = f"`when: {step.when.text if step.when else ''}` did not hold " \
                       f"within {step.timeout:g}s"
                if step.on_timeout == "fail":
                    self.failure = f"step {step.name!r} (line {step.line}): {text}"
                    self._event(step.name, "timeout", text)
                    return
                self._event(step.name, "skip", text)
                self.fired.append(FiredStep(step, self.elapsed(), (), skipped=True,
                                            detail={"error": text}))
            else:
                return
            self._previous = self.elapsed()
            self._index += 1

    def undo_due(self) -> None:
        """Undo every active step whose duration has ended."""
        now = self.elapsed()
        with self._lock:
            due = [a for a in self._active if a.due <= now + DUE_SLACK_S]
            self._active = [a for a in self._active if a.due > now + DUE_SLACK_S]
        for a in due:
            self._undo(a)

    def _undo(self, a: _Active) -> None:
        try:
            a.undo()
            text = "undone"
        except Exception as exc:  # a failed undo is reported; heal_all at the end repairs
            text = f"undo failed: {type(exc).__name__}: {exc}"
        self.history.nemesis(a.step.action, "stop", a.value)
        self._event(a.step.name, "stop", f"{a.step.action} {' '.join(a.nodes)}: {text}")

    # ------------------------------------------------------------------ firing

    def _fire(self, index: int, step: Step, when_state: ClusterState | None) -> None:
        """Fire `step`: its targets resolve on the state its `when` held on, else on
        fire_state() now."""
        at = self.elapsed()
        state = when_state if when_state is not None else self.fire_state()
        try:
            fault = self._plan(index, step, state)
        except (ResolutionError, ValueError) as exc:
            self._event(step.name, "error", f"{step.describe()}: {exc}")
            self.fired.append(FiredStep(step, at, (), skipped=True, detail={"error": str(exc)}))
            return
        nodes, act, undo = fault.nodes, fault.act, fault.undo
        value = {"step": step.name, "nodes": list(nodes), **step.params, **fault.extra}
        if step.duration is not None:
            value["duration"] = step.duration
        self.history.nemesis(step.action, "start", value)
        self.faults_started += 1
        self.fired.append(FiredStep(step, at, self._resolved.get(step.name, ()), detail=value))
        self._event(step.name, "start", f"{step.action} {' '.join(nodes)}")
        try:
            act()
        except Exception as exc:
            self.history.nemesis(step.action, "stop", value)
            self._event(step.name, "error", f"{step.action} failed: {type(exc).__name__}: {exc}")
            return
        for note in fault.notes:
            self._event(step.name, "note", note)
        if step.duration is not None and undo is not None:
            with self._lock:
                self._active.append(_Active(step, nodes, value, undo,
                                            self.elapsed() + step.duration))
        else:
            self.history.nemesis(step.action, "stop", value)

    def _resolve(self, index: int, target: Target, state: ClusterState | None,
                 other_side: Sequence[Node] = ()) -> tuple[Node, ...]:
        if state is None and target.kind not in ("broker", "brokers", "client", "step"):
            raise ResolutionError("no cluster state yet")
        return resolve(target, state or _EMPTY, step_rng(self.seed, index),
                       other_side=other_side, steps=self._resolved)

    def _plan(self, index: int, step: Step, state: ClusterState | None) -> Fault:
        """The fault `step` makes on `state`, from the handler of its action's kind."""
        handler = handler_for(step.action)
        targets: tuple[Node, ...] = ()
        if step.target is not None:
            targets = self._resolve(index, step.target, state)
            self._resolved[step.name] = targets

        def remember(nodes: tuple[Node, ...]) -> None:
            self._resolved[step.name] = nodes

        ctx = StepContext(self.cluster,
                          lambda t, other: self._resolve(index, t, state, other),
                          remember, lambda: step_rng(self.seed, index), workload=self.workload)
        return handler.fault(step, targets, ctx)

    # ------------------------------------------------------------------ repairs

    def heal_all(self) -> None:
        """Undo everything now (the end of the faults): network, processes, disks."""
        with self._lock:
            pending, self._active = self._active, []
        value: dict[str, Any] = {"step": "final-heal", "nodes": []}
        self.history.nemesis("heal-all", "start", value)
        self._event("final-heal", "start", "heal-all")
        try:
            heal_everything(self.cluster)
        finally:
            for a in pending:
                self.history.nemesis(a.step.action, "stop", a.value)
                self._event(a.step.name, "stop", f"{a.step.action}: healed at the end")
            self.history.nemesis("heal-all", "stop", value)
            self._event("final-heal", "stop", "heal-all done")


_EMPTY = ClusterState(brokers=(), alive=frozenset(), partitions={})

