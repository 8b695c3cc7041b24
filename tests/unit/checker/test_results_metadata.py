"""results.json carries the metadata check stored in run.json (no Spark: build_results and the
run.json reader are plain functions; test_cli covers `highwater check` end to end)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.checker.check import RunResult, build_results, stored_metadata_divergence
from harness.checker.expectations import METADATA_DIVERGENCE, parse_expected, run_verdict

DIVERGED = {"count": 1, "by_partition": {"t-0": 1}, "examples": [["controller-2", 40, "ab"]],
            "reference": {"node": "controller-1", "digest": "cd"}, "unknown": []}


def test_build_results_keeps_the_metadata_check_and_judges_it() -> None:
    res = build_results({"sends": 0}, [], [], {METADATA_DIVERGENCE: DIVERGED})
    assert res["metadata-divergence"] == DIVERGED
    # results.json's `valid` and `verdict` stay the history's (HISTORY.md: without expectations
    # verdict is as-expected exactly when valid); the run's verdict includes the metadata check.
    assert (res["valid"], res["verdict"]) == (True, "as-expected")
    assert run_verdict(res).misses == ("metadata-divergence == 0 (got 1)",)
    assert RunResult(Path("r"), results=res).verdict == "unexpected"
    expected = parse_expected({"metadata-divergence": "> 0"})
    res = build_results({"sends": 0}, [], expected, {METADATA_DIVERGENCE: DIVERGED})
    assert res["expected"] == {"metadata-divergence": "> 0"}
    assert (res["verdict"], run_verdict(res).verdict) == ("as-expected", "as-expected")
    # Without a metadata check results.json is as before: no entry, verdict from `valid`.
    res = build_results({"sends": 0}, [], [])
    assert "metadata-divergence" not in res and res["verdict"] == "as-expected"


def test_stored_metadata_divergence_reads_run_json(tmp_path: Path) -> None:
    assert stored_metadata_divergence(tmp_path) is None  # no run.json
    (tmp_path / "run.json").write_text(json.dumps({"seed": 1}))
    assert stored_metadata_divergence(tmp_path) is None  # a run without the check
    (tmp_path / "run.json").write_text(json.dumps({"metadata_divergence": DIVERGED}))
    assert stored_metadata_divergence(tmp_path) == DIVERGED
    (tmp_path / "run.json").write_text("{not json")
    assert stored_metadata_divergence(tmp_path) is None  # unreadable: the history still checked


def test_a_scenario_run_is_judged_on_its_metadata_check() -> None:
    from harness.plan.model import ModeSpec
    from harness.scenario.outcome import judge

    results = build_results({"sends": 0}, [], [], {METADATA_DIVERGENCE: DIVERGED})
    out = judge(ModeSpec("fixed"), results)
    assert not out.reproduced and "metadata-divergence == 0 (got 1)" in out.why
    results = build_results({"sends": 0}, [], [], {METADATA_DIVERGENCE: {**DIVERGED, "count": 0}})
    assert judge(ModeSpec("fixed"), results).reproduced


def test_gather_run_checks_prefers_what_the_run_measured(tmp_path: Path) -> None:
    """The one gatherer of both runtimes: a check given (the simulator's, in memory) wins over
    run.json (highwater run's), and a check neither made nor computable is left out."""
    from harness.checker.expectations import UNCONVERGED_REPLICAS
    from harness.checker.results import gather_run_checks, with_run_checks

    stored = {"count": 2, "partitions": {}}
    (tmp_path / "run.json").write_text(json.dumps({"unconverged_replicas": stored,
                                                   "metadata_divergence": DIVERGED}))
    checks = gather_run_checks(tmp_path)
    assert checks[UNCONVERGED_REPLICAS] == stored and checks[METADATA_DIVERGENCE] == DIVERGED
    assert checks["diverged-offsets"] is None  # no collected data dirs
    mine = {"count": 0, "partitions": {}}
    checks = gather_run_checks(tmp_path, {UNCONVERGED_REPLICAS: mine})
    assert checks[UNCONVERGED_REPLICAS] == mine
    results = with_run_checks({}, checks)
    assert results[UNCONVERGED_REPLICAS] == mine and "diverged-offsets" not in results
