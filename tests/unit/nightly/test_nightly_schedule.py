"""The budget rule: runs start only while the budget lasts; later ones are recorded as skipped."""

from __future__ import annotations

import random
from pathlib import Path

from harness.nightly.launcher import Launcher
from harness.nightly.schedule import (
    RAN,
    SKIPPED,
    PlannedRun,
    RunRecord,
    carry_out,
    expand,
    within_budget,
)
from harness.nightly.suite import parse_suite

PLANS = Path(__file__).resolve().parents[3] / "chaos_plans"
SUITE = parse_suite(
    "entries:\n"
    "  - plan: smoke.yaml\n"
    "  - plan: random.yaml\n    seeds: 3\n    duration: 20\n"
    "  - plan: smoke.yaml\n    mode: fixed\n"
    "  - min-isr: {}\n",
    "night.yaml", PLANS,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_expand_gives_one_run_per_seed_in_suite_order_with_fresh_seeds() -> None:
    planned = expand(SUITE, random.Random(7))
    assert [p.label for p in planned] == ["smoke", "random", "random", "random", "smoke-fixed",
                                          "min-isr"]
    assert [p.index for p in planned] == list(range(6))
    assert len({p.seed for p in planned}) == 6
    assert [p.seed for p in expand(SUITE, random.Random(7))] == [p.seed for p in planned]
    assert [p.seed for p in expand(SUITE, random.Random(8))] != [p.seed for p in planned]


def test_within_budget_is_strict() -> None:
    assert within_budget(0, 60) and within_budget(59.9, 60)
    assert not within_budget(60, 60) and not within_budget(61, 60)


def test_runs_after_the_budget_are_skipped_not_run() -> None:
    clock = FakeClock()
    launched: list[tuple[int, float]] = []

    def launch(run: PlannedRun, remaining_s: float) -> RunRecord:
        launched.append((run.index, remaining_s))
        clock.now += 25  # every run takes 25 s
        return RunRecord(run.index, run.label, run.entry.kind, run.seed, RAN, exit_code=0)

    planned = expand(SUITE, random.Random(1))
    seen: list[RunRecord] = []
    records = carry_out(planned, 60, launch, clock, on_record=seen.append)
    # Starts at 0, 25, 50 s; the 4th would start at 75 s > 60 s budget.
    assert [i for i, _ in launched] == [0, 1, 2]
    assert [r for _, r in launched] == [60, 35, 10]
    assert [r.status for r in records] == [RAN, RAN, RAN, SKIPPED, SKIPPED, SKIPPED]
    assert [r.started_s for r in records[:3]] == [0, 25, 50]
    assert "budget 60s spent (75s elapsed)" in records[3].reason
    assert records[4].mode == "fixed" and records[5].kind == "min-isr"
    assert seen == records


def test_launcher_skips_entries_whose_command_does_not_exist(tmp_path: Path) -> None:
    launcher = Launcher(tmp_path / "store", tmp_path / "logs")
    planned = expand(SUITE, random.Random(1))
    fixed, min_isr = planned[4], planned[5]
    for run, needle in ((fixed, "highwater scenario run"), (min_isr, "scenario min-isr")):
        rec = launcher(run, 100)
        assert rec.status == SKIPPED and needle in rec.reason
    assert not (tmp_path / "store").exists()


def test_launcher_argv_carries_seed_duration_overrides_and_run_id(tmp_path: Path) -> None:
    suite = parse_suite("entries:\n  - plan: smoke.yaml\n    duration: 12\n"
                        "    set: {workload.producers.rate: 20}\n", "n.yaml", PLANS)
    [run] = expand(suite, random.Random(3))
    argv = Launcher(tmp_path, tmp_path, run_id_prefix="tx-n", python="py").argv(run)
    assert argv[:5] == ["py", "-m", "harness.cli", "run", str(PLANS / "smoke.yaml")]
    joined = " ".join(argv)
    assert f"--seed {run.seed}" in joined and "--duration 12" in joined
    assert "--set workload.producers.rate=20" in joined and "--run-id tx-n0" in joined
    assert f"--store {tmp_path}" in joined
