"""The budget rule: runs start only while the budget lasts; later ones are recorded as skipped."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from harness.nightly.launcher import Launcher, min_isr_record, scenario_record
from harness.nightly.night import run_verdict
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
    "  - scenario: L1\n    mode: fixed\n"
    "  - min-isr: {min_insync: [2, 3]}\n",
    "night.yaml", PLANS,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_expand_gives_one_run_per_seed_in_suite_order_with_fresh_seeds() -> None:
    planned = expand(SUITE, random.Random(7))
    assert [p.label for p in planned] == ["smoke", "random", "random", "random", "L1-fixed",
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


def test_launcher_argv_for_scenario_and_min_isr_entries(tmp_path: Path) -> None:
    launcher = Launcher(tmp_path / "store", tmp_path / "logs", python="py")
    planned = expand(SUITE, random.Random(1))
    fixed, min_isr = planned[4], planned[5]
    assert launcher.argv(fixed) == [
        "py", "-m", "harness.cli", "scenario", "run", "L1", "--mode", "fixed", "--repeat", "1",
        "--seed", str(fixed.seed), "--store", str(tmp_path / "store")]
    assert launcher.argv(min_isr) == [
        "py", "-m", "harness.cli", "scenario", "min-isr", "--store", str(tmp_path / "store"),
        "--min-isr", "2", "--min-isr", "3"]
    tracked = Launcher(tmp_path / "store", tmp_path / "logs", python="py", run_id_prefix="tn-")
    assert tracked.argv(fixed)[-2:] == ["--run-id", f"tn-{fixed.index}"]
    assert tracked.argv(min_isr)[-2:] == ["--run-id", f"tn-{min_isr.index}"]


def _scenario_report(store: Path, run_dir: Path, **run: object) -> Path:
    report = store / "scenarios" / "L1-fixed-20250102T010000.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps({"scenario": "L1", "mode": "fixed", "runs": [
        {"run": str(run_dir), "seed": 5, "exit_code": 0, **run}]}))
    return report


@pytest.mark.parametrize(("run", "verdict", "needle"), [
    ({"carried_out": True, "reproduced": True, "why": "nothing lost"}, "as-expected", None),
    ({"carried_out": True, "reproduced": False, "why": "lost-write 3"}, "unexpected",
     "not reproduced: lost-write 3"),
    ({"carried_out": False, "reproduced": False, "why": "no results"}, "error",
     "not carried out: no results"),
])
def test_scenario_record_takes_the_run_dir_and_the_scenarios_own_verdict(
        tmp_path: Path, run: dict, verdict: str, needle: str | None) -> None:
    run_dir = tmp_path / "store" / "L1-fixed" / "20250102T010000.000Z"
    run_dir.mkdir(parents=True)
    report = _scenario_report(tmp_path / "store", run_dir, **run)
    rec = RunRecord(4, "L1-fixed", "scenario", 5, RAN, exit_code=0 if run["reproduced"] else 1)
    scenario_record(rec, report)
    assert rec.run_dir == str(run_dir.resolve()) and rec.run_dirs == [rec.run_dir]
    assert rec.report == str(report) and rec.verdict == verdict
    assert run_verdict(rec, "as-expected") == verdict  # wins over the plain checker's verdict
    assert (rec.reason is None) if needle is None else (needle in rec.reason)


def test_scenario_record_without_a_report_is_an_error(tmp_path: Path) -> None:
    rec = scenario_record(RunRecord(4, "L1-fixed", "scenario", 5, RAN, exit_code=2), None)
    assert rec.verdict == "error" and rec.run_dir is None and "no summary" in rec.reason


def test_min_isr_record_keeps_every_matrix_run_dir(tmp_path: Path) -> None:
    dirs = {m: tmp_path / f"min-isr-{m}" / "20250102T010000.000Z" for m in (1, 2)}
    for d in dirs.values():
        d.mkdir(parents=True)
    report = tmp_path / "min-isr-20250102T010000.json"
    report.write_text(json.dumps({"runs": {str(m): str(d) for m, d in dirs.items()},
                                  "not_carried_out": [], "rows": []}))
    rec = min_isr_record(RunRecord(5, "min-isr", "min-isr", 1, RAN, exit_code=1), report)
    assert rec.run_dirs == [str(dirs[1].resolve()), str(dirs[2].resolve())]
    assert rec.run_dir == rec.run_dirs[0] and rec.verdict == "unexpected"


def test_launcher_runs_a_scenario_as_a_subprocess_and_reads_its_report(tmp_path: Path) -> None:
    # A stand-in `python` that prints what `highwater scenario run` prints: the launcher's
    # subprocess, log and report handling are real; only the cluster run is not.
    store = tmp_path / "store"
    run_dir = store / "L1-fixed" / "20250102T010000.000Z"
    run_dir.mkdir(parents=True)
    report = _scenario_report(tmp_path / "elsewhere", run_dir, carried_out=True,
                              reproduced=True, why="nothing lost")
    fake = tmp_path / "fake-python"
    target = store / "scenarios" / report.name
    fake.write_text(f"#!/bin/sh\necho \"$@\"\nmkdir -p {target.parent}\n"
                    f"cp {report} {target}\necho summary {target}\n")
    fake.chmod(0o755)
    planned = expand(SUITE, random.Random(1))
    rec = Launcher(store, tmp_path / "logs", python=str(fake))(planned[4], 100)
    assert rec.status == RAN and rec.exit_code == 0 and rec.kind == "scenario"
    assert rec.run_dir == str(run_dir.resolve()) and rec.verdict == "as-expected"
    assert rec.report == str(target)
    assert "scenario run L1 --mode fixed --repeat 1" in Path(rec.log).read_text()


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


def test_a_plain_run_failed_by_a_run_check_is_unexpected_whatever_its_history_says() -> None:
    """Issue 24: results.json's `verdict` is the history's; a run that exited 1 on
    unconverged-replicas (or another run check) is unexpected in the nightly too."""
    rec = RunRecord(1, "smoke", "run", 5, RAN, exit_code=1)
    assert run_verdict(rec, "as-expected") == "unexpected"
    assert run_verdict(RunRecord(1, "smoke", "run", 5, RAN, exit_code=0),
                       "as-expected") == "as-expected"
