"""`highwater sim explore`: seeds until one schedule violates the plan's `expected`, then shrink.

Search: seed s = start, start+1, ... draws the random nemesis schedule (or runs the scripted
steps) and simulates it with seed s; the first `unexpected` verdict, or the first schedule
that leaves two in-sync replicas holding different values at one offset (SimResult.diverged),
stops the search.
Shrinking (delta debugging on the fault list, the same seed for the network and clients):
1. drop faults one at a time, keeping each drop that still fails;
2. halve each remaining fault's duration while it still fails (down to 0.5 s, and never
   below a failure-detection floor the fault crossed as drawn, see `DetectionFloors`);
3. move each fault earlier (halfway to the previous fault's `at`) while it still fails.
Steps 2 and 3 keep the schedule timeable in containers (`_timeable`): two fault edges
(a start, an end) that were at least `EDGE_SLACK_S` apart stay that far apart and in
the same order, so shrinking never makes a schedule depend on an interleaving that docker's
kill/pause/iptables latency cannot hit. Every candidate is a full simulated run; the result
is the shortest failing fault timeline found (a local minimum: no single drop/halving of it
still fails). `to_fault_plan` writes it as a plan with scripted `faults:` (`at`/`after`/
`when`, `duration`, role targets, random draws as the brokers drawn), so `highwater run` can
replay it in containers. Shrinking keeps `when` conditions as they are (it does not invent
new ones).
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from harness.plan.model import Plan, Step
from harness.plan.timing import steps_for
from harness.run.simulated import UNEXPECTED, SimAborted, SimResult, simulate

MIN_DURATION_S = 0.5
# How much later than on the simulator a container run detects a fault: a docker kill /
# pause / iptables change takes effect some hundred ms after its scheduled time, the state
# poller's `when` sees the cluster 200 ms late, and process start, AlterPartition and
# metadata round trips take real time. Measured (2026-11-24, targeted-unclean-minimal as
# first shrunk, replica.lag.time.max.ms 3 s): the container saw the paused follower leave
# the ISR 4.6 s after the pause began, 1.6 s past the lag time. A floor is detection time
# plus this, so the fault still holds for a while once detection happened.
CONTAINER_SLACK_S = 2.0
# Fault edges (starts, ends) closer than this cannot be ordered by container actions.
EDGE_SLACK_S = 1.0
# Faults that stop a replica's fetches or a broker's heartbeats: what failure detection sees.
DETECTED_ACTIONS = frozenset({"kill", "stop", "pause", "partition", "isolate", "blackhole"})


@dataclasses.dataclass(frozen=True)
class DetectionFloors:
    """How long a fault must last, in containers, to be detected, from the plan's cluster
    configuration as production parses it (harness/sim/config.py):
    - `isr_out_s`: a follower that stops fetching leaves the ISR (replica.lag.time.max.ms,
      checked on the leader's ReplicaManager.tick, then AlterPartition and the metadata the
      brokers see on their next heartbeat);
    - `fenced_s`: a broker that stops heartbeating is fenced by the controller
      (broker.session.timeout.ms, checked on the controller's tick), which is what unclean
      election, a leader change away from a killed broker and KIP-966's ELR wait on.
    Each plus CONTAINER_SLACK_S. The shrinker keeps a fault's duration at or above the
    largest floor its drawn duration reached (a fault the violation needed to outlast
    detection still outlasts it) and never shortens a fault that did not reach any floor
    below MIN_DURATION_S."""

    isr_out_s: float
    fenced_s: float

    @classmethod
    def of(cls, plan: Plan) -> DetectionFloors:
        from broker_app.server.broker_server import TICK_MS
        from harness.sim.config import broker_configs, controller_config

        brokers = broker_configs(plan.cluster)
        controller, tick_ms = controller_config(plan.cluster)
        lag_ms = max(b.replica_lag_time_max_ms for b in brokers)
        heartbeat_ms = max(b.heartbeat_interval_ms for b in brokers)
        return cls(
            isr_out_s=round((lag_ms + TICK_MS + heartbeat_ms) / 1000 + CONTAINER_SLACK_S, 3),
            fenced_s=round((controller.session_timeout_ms + tick_ms + heartbeat_ms) / 1000
                           + CONTAINER_SLACK_S, 3))  # fmt: skip

    def floor(self, step: Step, drawn: float) -> float:
        """The shortest duration the shrinker may give `step`, whose drawn duration was
        `drawn`."""
        if step.action not in DETECTED_ACTIONS:
            return MIN_DURATION_S
        reached = [f for f in (self.isr_out_s, self.fenced_s) if drawn >= f]
        return max(reached, default=MIN_DURATION_S)


def _edges(steps: Sequence[Step]) -> dict[tuple[str, str], float]:
    """Start and end times of the steps whose times are known without running them: `at`
    steps and the `after` steps chained to them (a `when` step's time is the cluster's)."""
    out: dict[tuple[str, str], float] = {}
    prev: float | None = 0.0
    for s in steps:
        if s.at is not None:
            t: float | None = max(s.at, prev) if prev is not None else None
        elif s.after is not None and prev is not None:
            t = prev + s.after
        else:
            t = None
        if t is not None:
            out[(s.name, "start")] = t
            if s.duration is not None:
                out[(s.name, "end")] = t + s.duration
        prev = t
    return out


def _timeable(before: Sequence[Step], after: Sequence[Step],
              slack: float = EDGE_SLACK_S) -> bool:  # fmt: skip
    """No two fault edges that were `slack` or more apart in `before` are closer than that,
    or swapped, in `after`: containers cannot order edges closer than their action latency."""
    a, b = _edges(before), _edges(after)
    keys = [k for k in a if k in b]
    for i, k in enumerate(keys):
        for m in keys[i + 1 :]:
            gap = a[m] - a[k]
            if abs(gap) >= slack:
                new = b[m] - b[k]
                if new * gap < 0 or abs(new) < slack - 1e-9:
                    return False
    return True


def schedule_for(plan: Plan, seed: int, overlap: int = 1) -> tuple[Step, ...]:
    """The steps of `seed`: the plan's (random nemesis: its schedule for the seed). `overlap`
    k > 1 (the CLI's --overlap) replaces a random nemesis's `overlap` (harness/plan/
    random_nemesis.py: k independent schedules superimposed, so faults overlap in time)."""
    if overlap > 1 and plan.nemesis.mode == "random":
        plan = dataclasses.replace(plan, nemesis=dataclasses.replace(plan.nemesis,
                                                                     overlap=overlap))
    return tuple(steps_for(plan, seed))


@dataclasses.dataclass
class Found:
    seed: int
    schedules: int  # schedules run until the first failure (this one included)
    steps: tuple[Step, ...]
    result: SimResult
    shrunk: tuple[Step, ...] = ()
    shrink_runs: int = 0
    resolved: dict[str, tuple[Any, ...]] = dataclasses.field(default_factory=dict)
    shrunk_counts: dict[str, int] = dataclasses.field(default_factory=dict)  # what it shows


def violation_counts(results: Mapping[str, Any]) -> dict[str, int]:
    """The non-zero anomaly and run-check counts of a results.json-shaped dict."""
    from harness.checker.expectations import run_check_counts

    counts = {k: v["count"] for k, v in results["anomalies"].items() if v["count"]}
    counts.update({k: n for k, n in run_check_counts(results).items() if n})
    return counts


def _violates(plan: Plan, steps: Sequence[Step], seed: int, work: Path) -> SimResult | None:
    """The result if the schedule's verdict (the one verdict: the history and every run
    check, replica divergence, liveness and the invariants among them) is unexpected."""
    try:
        r = simulate(plan, steps, seed, work)
    except SimAborted:
        return None
    return r if r.verdict == UNEXPECTED else None


def _fails(plan: Plan, steps: Sequence[Step], seed: int, work: Path,
           contrast: Plan | None = None) -> SimResult | None:  # fmt: skip
    """A violation of `plan` that `contrast` (the same plan with the behaviour under test
    switched back, `--contrast`) does not show, so the search and the shrinking keep only
    schedules that this behaviour loses (a power loss that every version loses is not one)."""
    r = _violates(plan, steps, seed, work)
    if r is None or contrast is None:
        return r
    try:
        return None if _violates(contrast, steps, seed, work) is not None else r
    except SimAborted:
        return None


def _verdict_of(job: tuple[Plan, int, int, Plan | None]) -> tuple[int, bool]:
    """(seed, violates expected?) of one schedule, in a worker process."""
    plan, seed, overlap, contrast = job
    with tempfile.TemporaryDirectory(prefix="hw-sim-") as tmp:
        steps = schedule_for(plan, seed, overlap)
        return seed, _fails(plan, steps, seed, Path(tmp), contrast) is not None


def search(plan: Plan, schedules: int, start_seed: int = 1,
           progress: Callable[[int, float], None] | None = None, jobs: int = 1,
           overlap: int = 1, contrast: Plan | None = None) -> Found | None:  # fmt: skip
    """The first seed (in seed order, whatever `jobs`) whose schedule violates `expected`
    (and, with `contrast`, passes under the contrast plan)."""
    t0 = time.monotonic()
    seeds = [(plan, start_seed + i, overlap, contrast) for i in range(schedules)]
    if jobs > 1:
        from multiprocessing import get_context

        with get_context("fork").Pool(jobs) as pool:
            for n, (seed, failed) in enumerate(pool.imap(_verdict_of, seeds), 1):
                if progress is not None:
                    progress(n, time.monotonic() - t0)
                if failed:
                    pool.terminate()
                    return _found(plan, seed, n, overlap, contrast)
        return None
    for n, job in enumerate(seeds, 1):
        seed, failed = _verdict_of(job)
        if progress is not None:
            progress(n, time.monotonic() - t0)
        if failed:
            return _found(plan, seed, n, overlap, contrast)
    return None


def _found(plan: Plan, seed: int, n: int, overlap: int, contrast: Plan | None = None) -> Found:
    """Run the failing seed again here (deterministic: the same result) to keep its result."""
    steps = schedule_for(plan, seed, overlap)
    with tempfile.TemporaryDirectory(prefix="hw-sim-") as tmp:
        r = _fails(plan, steps, seed, Path(tmp), contrast)
    assert r is not None, f"seed {seed} failed in a worker but not again: not deterministic"
    return Found(seed, n, tuple(steps), r)


def shrink(plan: Plan, found: Found, budget: int = 200, contrast: Plan | None = None) -> Found:
    steps = list(found.steps)
    runs = 0
    floors = DetectionFloors.of(plan)
    drawn = {s.name: s.duration for s in found.steps}
    with tempfile.TemporaryDirectory(prefix="hw-sim-shrink-") as tmp:
        def still_fails(candidate: list[Step]) -> bool:
            nonlocal runs
            if runs >= budget:
                return False
            runs += 1
            return _fails(plan, candidate, found.seed, Path(tmp), contrast) is not None

        i = 0
        while i < len(steps):  # 1. drop faults
            candidate = steps[:i] + steps[i + 1 :]
            if still_fails(candidate):
                steps = candidate
            else:
                i += 1
        for i in range(len(steps)):  # 2. shorten durations, not below the detection floor
            d0 = drawn.get(steps[i].name)
            least = floors.floor(steps[i], d0) if d0 is not None else MIN_DURATION_S
            while (d := steps[i].duration) is not None and (
                    half := round(max(d / 2, least), 3)) < d and d / 2 >= MIN_DURATION_S:
                candidate = list(steps)
                candidate[i] = dataclasses.replace(steps[i], duration=half)
                if not _timeable(steps, candidate) or not still_fails(candidate):
                    break
                steps = candidate
        for i in range(len(steps)):  # 3. move earlier, never before the step before it
            # (steps fire in list order: an earlier `at` than its predecessor's means nothing)
            floor = max((s.at or 0.0 for s in steps[:i]), default=0.0)
            while (at := steps[i].at) is not None and at >= 1.0 and (at + floor) / 2 < at - 0.01:
                candidate = list(steps)
                candidate[i] = dataclasses.replace(steps[i], at=round((at + floor) / 2, 3))
                if not _timeable(steps, candidate) or not still_fails(candidate):
                    break
                steps = candidate
        final = _fails(plan, steps, found.seed, Path(tmp), contrast)  # deterministic: again
    found.shrunk = tuple(steps)
    found.shrink_runs = runs
    if final is not None:
        found.resolved = {f.step.name: f.nodes for f in final.fired if not f.skipped}
        found.shrunk_counts = violation_counts(final.results)
    return found


def timeline(steps: Sequence[Step]) -> list[str]:
    out = []
    for s in steps:
        when = f"t={s.at:g}s" if s.at is not None else (
            f"+{s.after:g}s" if s.after is not None else f"when {s.when}")
        out.append(f"{when:>10}  {s.describe()}")
    return out


def _target(t: Any) -> Any:
    if t is None:
        return None
    if t.kind in ("leader", "followers"):
        return {t.kind: t.partition}
    if t.kind == "follower":
        return {"follower": t.partition, "index": t.index}
    if t.kind in ("broker", "brokers"):
        return {t.kind: list(t.brokers) if t.kind == "brokers" else t.brokers[0]}
    if t.kind == "step":
        return {"step": t.step}
    return t.kind


_DRAWN = ("random", "majority", "minority")


def to_fault_plan(plan: Plan, steps: Sequence[Step], seed: int, source_text: str,
                  resolved: dict[str, tuple[Any, ...]] | None = None,
                  found: Mapping[str, int] | None = None,
                  contrast: Mapping[str, str] | None = None) -> str:  # fmt: skip
    """The plan file with its nemesis replaced by these steps as scripted faults. Targets
    drawn at random when the step fired (random, majority, minority) are written as the
    brokers the simulator drew (`resolved`: step name -> nodes), so a container run hits the
    same ones; role targets (leader, follower) stay roles.

    With `found` (what the schedule showed: anomaly or run check -> count) and `contrast`
    (explore's --contrast overrides), the file gets the modes every found plan carries:
    `found` expects what was found (each count > 0), `contrast` switches the behaviour back
    and expects nothing lost, so `highwater scenario run FILE --mode found|contrast` runs it."""
    from harness.plan.overrides import apply_override

    # The plan's --set overrides applied as `highwater run` applies them (list items by
    # index, free-form keys such as topic configs), so the exported file needs no --set.
    root = yaml.compose(source_text, Loader=yaml.SafeLoader)
    for key, value in plan.overrides.items():
        if not key.startswith(("nemesis.", "modes.")):
            root = apply_override(root, key, value, plan.source)
    data = yaml.safe_load(yaml.serialize(root))
    data.pop("nemesis", None)
    data.pop("modes", None)
    data["name"] = f"{plan.name}-sim-{seed}"
    data["description"] = (f"Minimal fault schedule found by `highwater sim explore` "
                           f"(seed {seed}) on {plan.source}.")  # fmt: skip
    faults = []
    for s in steps:
        f: dict[str, Any] = {"name": s.name, "action": s.action}
        if s.at is not None:
            f["at"] = s.at
        if s.after is not None:
            f["after"] = s.after
        if s.when is not None:
            f["when"] = s.when.text
            f["timeout"] = s.timeout
            f["on_timeout"] = s.on_timeout
        if s.target is not None:
            f["target"] = _target(s.target)
            nodes = (resolved or {}).get(s.name)
            if s.target.kind in _DRAWN and nodes:
                brokers = sorted(n.id for n in nodes if n.kind == "broker")
                if len(brokers) == len(nodes):
                    f["target"] = {"brokers": brokers}
        if s.peers is not None:
            f["peers"] = _target(s.peers)
        if s.src is not None:
            f["from"] = _target(s.src)
        if s.dst is not None:
            f["to"] = _target(s.dst)
        if s.duration is not None:
            f["duration"] = s.duration
        f.update({k: v for k, v in s.params.items() if v is not None})
        faults.append(f)
    data["faults"] = faults
    if found and contrast:
        data["modes"] = found_modes(plan, found, contrast)
    return yaml.safe_dump(data, sort_keys=False)


NOTHING_LOST = {"lost-write": "== 0", "inconsistent-offset": "== 0", "uncommitted-read": "== 0"}


def found_modes(plan: Plan, found: Mapping[str, int],
                contrast: Mapping[str, str]) -> dict[str, Any]:  # fmt: skip
    """`found` and `contrast` modes for an exported schedule (see to_fault_plan)."""
    setting = ", ".join(f"{k}={v}" for k, v in plan.overrides.items()
                        if k.startswith("cluster.")) or "the plan as written"  # fmt: skip
    mode: dict[str, Any] = {"description": f"as found: {setting}", "expected": {
        k: "> 0" for k, n in found.items() if n and k != "diverged-offsets"}}  # fmt: skip
    if found.get("diverged-offsets"):
        mode["diverged_offsets"] = "> 0"
    return {"found": mode, "contrast": {
        "description": "switched back: " + ", ".join(f"{k}={v}" for k, v in contrast.items()),
        "set": dict(contrast), "expected": dict(NOTHING_LOST), "diverged_offsets": "== 0"}}
