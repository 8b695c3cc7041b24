"""Nemesis: interprets a plan's steps against a running cluster, in a thread of its own.

What each action does (and undoes) lives in harness/nemesis/handlers.py, one handler per
action kind of the action table; this module is the schedule: when steps fire, when their
undo is due, and the history ops and events that record them.

Contract (the semantics of harness/plan/model.py):
- `Nemesis(cluster, steps, history, state, seed)`: `cluster` is a harness.cluster.Cluster
  (process and disk faults; its `net` for links), `state()` returns the latest ClusterState
  (or None), `steps` come from timing.steps_for. Time 0 is `start()` (the workload's start).
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
- `check_supported(steps)` raises NemesisError for actions this cluster cannot do (reassign:
  no client here speaks AlterPartitionReassignments), before anything starts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.nemesis.handlers import (
    UNSUPPORTED,
    Fault,
    NemesisError,
    StepContext,
    handler_for,
    heal_everything,
)
from harness.plan.errors import ResolutionError
from harness.plan.model import Step
from harness.plan.state import ClusterState, Node
from harness.plan.targets import Target, resolve, step_rng
from harness.plan.timing import FIRE, TIMED_OUT, step_status
from harness.store.history import HistoryWriter

log = logging.getLogger(__name__)

TICK_S = 0.1


def check_supported(steps: Sequence[Step]) -> None:
    for s in steps:
        if s.action in UNSUPPORTED:
            where = f"line {s.line}: " if s.line else ""
            raise NemesisError(f"{where}step {s.name!r}: {UNSUPPORTED[s.action]}")


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


class Nemesis:
    def __init__(
        self,
        cluster: Any,
        steps: Sequence[Step],
        history: HistoryWriter,
        state: Callable[[], ClusterState | None],
        seed: int,
        bootstrap: Callable[[], str] | None = None,
        on_event: Callable[[Event], None] | None = None,
        workload: Any = None,
    ) -> None:
        self.cluster = cluster
        self.steps = list(steps)
        self.history = history
        self.state = state
        self.seed = seed
        self.bootstrap = bootstrap or (lambda: cluster.bootstrap)
        self.on_event = on_event
        self.workload = workload  # what the group actions (replace-member ...) act on
        self.events: list[Event] = []
        self.failure: str | None = None
        self.faults_started = 0
        self._active: list[_Active] = []
        self._resolved: dict[str, tuple[Node, ...]] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._thread: threading.Thread | None = None
        self.steps_done = False

    # ------------------------------------------------------------------ control

    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    def start(self, t0: float | None = None) -> Nemesis:
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
        """Every step fired (or skipped) and every undo ran, or the thread ended."""
        return self._thread is not None and not self._thread.is_alive()

    def _event(self, step: str, kind: str, text: str) -> None:
        ev = Event(round(self.elapsed(), 3), step, kind, text)
        self.events.append(ev)
        log.info("nemesis %s %s: %s", kind, step, text)
        if self.on_event is not None:
            self.on_event(ev)

    # ------------------------------------------------------------------ the loop

    def _guarded(self) -> None:
        try:
            self._run()
        except Exception as exc:  # the run must learn why the nemesis died
            log.exception("nemesis crashed")
            self.failure = f"nemesis crashed: {type(exc).__name__}: {exc}"

    def _run(self) -> None:
        previous = 0.0
        for i, step in enumerate(self.steps):
            while not self._stop.is_set():
                self._undo_due()
                now = self.elapsed()
                st = self.state() if step.when is not None else None
                status = step_status(step, now, previous, st)
                if status == FIRE:
                    self._fire(i, step)
                    previous = self.elapsed()
                    break
                if status == TIMED_OUT:
                    text = f"`when: {step.when.text if step.when else ''}` did not hold " \
                           f"within {step.timeout:g}s"
                    if step.on_timeout == "fail":
                        self.failure = f"step {step.name!r} (line {step.line}): {text}"
                        self._event(step.name, "timeout", text)
                        return
                    self._event(step.name, "skip", text)
                    previous = self.elapsed()
                    break
                self._stop.wait(TICK_S)
            if self._stop.is_set():
                return
        self.steps_done = True
        while not self._stop.is_set():
            with self._lock:
                if not self._active:
                    return
            self._undo_due()
            self._stop.wait(TICK_S)

    def _undo_due(self) -> None:
        now = self.elapsed()
        with self._lock:
            due = [a for a in self._active if a.due <= now]
            self._active = [a for a in self._active if a.due > now]
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

    def _fire(self, index: int, step: Step) -> None:
        state = self.state()
        try:
            fault = self._plan(index, step, state)
        except (ResolutionError, ValueError) as exc:
            self._event(step.name, "error", f"{step.describe()}: {exc}")
            return
        nodes, act, undo = fault.nodes, fault.act, fault.undo
        value = {"step": step.name, "nodes": list(nodes), **step.params, **fault.extra}
        if step.duration is not None:
            value["duration"] = step.duration
        self.history.nemesis(step.action, "start", value)
        self.faults_started += 1
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
                          remember, self.bootstrap, lambda: step_rng(self.seed, index),
                          workload=self.workload)
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

