"""When a step fires: the pure decision the run's fault loop makes on every tick.

The run keeps the time the previous step fired (0.0 = workload start, for the first step),
polls a ClusterState only for `when` steps, and asks `step_status`. `steps_for` gives the
steps a plan runs: its scripted faults, or the schedule its random nemesis draws.
"""

from __future__ import annotations

import dataclasses

from harness.plan.model import Plan, Step
from harness.plan.state import ClusterState

FIRE, WAIT, TIMED_OUT = "fire", "wait", "timed-out"


def step_status(step: Step, now_s: float, previous_fired_s: float,
                state: ClusterState | None = None) -> str:
    """FIRE, WAIT or TIMED_OUT for `step` at `now_s` seconds since the workload started.

    `state` is needed (and only read) for `when` steps; None counts as "condition unknown".
    A condition's `elapsed` is `now_s`, not the snapshot's own clock: the snapshot may have been
    polled before the workload started (the cluster start counted then), and `elapsed >= 30`
    would fire at once.
    """
    if step.at is not None:
        return FIRE if now_s >= step.at else WAIT
    if step.after is not None:
        return FIRE if now_s >= previous_fired_s + step.after else WAIT
    assert step.when is not None and step.timeout is not None
    if state is not None and step.when.holds(dataclasses.replace(state, elapsed_s=now_s)):
        return FIRE
    return TIMED_OUT if now_s - previous_fired_s >= step.timeout else WAIT


def steps_for(plan: Plan, seed: int | None = None, duration_s: float | None = None
              ) -> tuple[Step, ...]:
    """The steps a run of `plan` executes (seed/duration as given to `highwater run`)."""
    if plan.nemesis.mode == "random":
        from harness.plan.random_nemesis import generate

        return generate(plan, seed=seed, duration_s=duration_s)
    return plan.faults
