"""The night's schedule: entries -> planned runs (fresh seeds) -> carried out within a budget.

Contract:
- `expand(suite, rng)` gives one `PlannedRun` per (entry, seed), in suite order.
- `within_budget(elapsed_s, budget_s)` is THE budget rule: a run starts only while the time
  spent so far is below the budget; a run that would start later is recorded as skipped
  (status "skipped", reason names the budget), never run. A started run is not cut short by
  the budget (the launcher has its own hard limit).
- `carry_out(planned, budget_s, launch, clock)` runs them in order with `launch(run,
  remaining_s) -> RunRecord` and returns one record per planned run, same order. Launchers
  and clocks are parameters so the rule is testable without containers.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from harness.nightly.suite import Entry, Suite

RAN, SKIPPED = "ran", "skipped"


@dataclass(frozen=True)
class PlannedRun:
    index: int  # position in the night, 0-based
    entry: Entry
    seed: int

    @property
    def label(self) -> str:
        return self.entry.label


@dataclass
class RunRecord:
    """What happened to one planned run; serialized into summary.json's `runs`."""

    index: int
    label: str
    kind: str  # "plan" | "scenario" | "min-isr" | "rdkafka-suite"
    seed: int
    status: str  # RAN | SKIPPED
    plan: str | None = None  # the plan file
    mode: str | None = None
    exit_code: int | None = None
    run_dir: str | None = None
    reason: str | None = None
    started_s: float | None = None  # seconds into the night
    elapsed_s: float | None = None
    log: str | None = None  # the run's console output
    # A scenario's own verdict (reproduced / nothing lost), which wins over results.json's.
    verdict: str | None = None
    # Every run dir behind the record (min-isr: one per min.insync value) for the summary.
    run_dirs: list[str] | None = None
    report: str | None = None  # <store>/scenarios/... the scenario's own summary file

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def expand(suite: Suite, rng: random.Random | None = None) -> list[PlannedRun]:
    # SystemRandom: fresh seeds every night unless a test passes a seeded Random.
    rng = rng or random.SystemRandom()
    out: list[PlannedRun] = []
    for entry in suite.entries:
        for _ in range(entry.seeds):
            out.append(PlannedRun(len(out), entry, rng.randrange(2**31)))
    return out


def within_budget(elapsed_s: float, budget_s: float) -> bool:
    return elapsed_s < budget_s


def skipped(run: PlannedRun, reason: str) -> RunRecord:
    e = run.entry
    return RunRecord(run.index, run.label, e.kind, run.seed, SKIPPED,
                     plan=str(getattr(e, "plan", "")) or None, mode=getattr(e, "mode", None),
                     reason=reason)


def carry_out(
    planned: Sequence[PlannedRun],
    budget_s: float,
    launch: Callable[[PlannedRun, float], RunRecord],
    clock: Callable[[], float] = time.monotonic,
    on_record: Callable[[RunRecord], None] | None = None,
) -> list[RunRecord]:
    start = clock()
    records: list[RunRecord] = []
    for run in planned:
        elapsed = clock() - start
        if within_budget(elapsed, budget_s):
            record = launch(run, budget_s - elapsed)
            record.started_s = round(elapsed, 3)
        else:
            record = skipped(run, f"budget {budget_s:g}s spent ({elapsed:.0f}s elapsed) "
                                  "before this run could start")
        records.append(record)
        if on_record:
            on_record(record)
    return records
