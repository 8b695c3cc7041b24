"""One run's results.json (HISTORY.md), whichever runtime made the run and whichever checker read
its history: the one way a run's records become its results and its verdict.

- `history_results(anomalies, stats, expectations)`: the history's part (valid, anomalies,
  stats, expected, and results.json's `verdict`, the history's own).
- `gather_run_checks(run_dir, given)`: every run check beside the history, under its
  results.json name (expectations.RUN_CHECKS): what the run measured and passed in `given`
  (the simulator's, in memory), else what `highwater run` stored in run.json
  (`metadata_divergence`, `unconverged_replicas`, `unexpected_exits`), else computed from
  the run dir's files (`controller-commit-while-cut`: quorum.jsonl and the history's nemesis
  ops, harness.checker.quorum_check; `diverged-offsets`: the collected data dirs,
  harness.checker.replica_logs). A check the run did not make is left out.
- `with_run_checks(results, checks)`: the run checks added under their own names.
- `check_run(run_dir, expectations, given)`: the entry point with the reference checker
  (harness.checker.reference: Python, differential-tested against Spark): what the simulator
  calls for every schedule. harness.checker.check.check_runs is the same with Spark, for
  container runs and `highwater check`, many runs in one job. Either way the run's verdict is
  expectations.run_verdict(results).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.checker.expectations import (
    CONTROLLER_COMMIT_WHILE_CUT,
    DIVERGED_OFFSETS,
    METADATA_DIVERGENCE,
    RUN_CHECKS,
    UNCONVERGED_REPLICAS,
    UNEXPECTED_EXITS,
    Expectation,
    verdict,
)
from harness.checker.history import INFORMATIONAL
from harness.store.files import StoreError
from harness.store.history import HISTORY_FILE
from harness.store.meta import read_meta
from harness.store.quorum import QUORUM_FILE
from harness.store.results import write_results

# The run checks `highwater run` stores in run.json, by the key it stores them under.
STORED = {METADATA_DIVERGENCE: "metadata_divergence",
          UNCONVERGED_REPLICAS: "unconverged_replicas", UNEXPECTED_EXITS: "unexpected_exits"}


def history_results(anomalies: dict[str, dict[str, Any]], stats: dict[str, Any],
                    expectations: Sequence[Expectation]) -> dict[str, Any]:
    counts = {name: a["count"] for name, a in anomalies.items()}
    valid = all(n == 0 for name, n in counts.items() if name not in INFORMATIONAL)
    return {
        "valid": valid,
        "anomalies": anomalies,
        "stats": stats,
        "expected": {e.anomaly: e.text for e in expectations},
        "verdict": verdict(valid, counts, expectations),
    }


def stored_run_check(run_dir: Path, key: str) -> dict[str, Any] | None:
    """A run check `highwater run` stored in run.json under `key`, or None (not run, or
    unreadable: an expectation about it then misses)."""
    try:
        found = read_meta(run_dir).get(key)
    except StoreError:  # a run.json that does not parse: no result, said by the miss
        return None
    return found if isinstance(found, dict) and isinstance(found.get("count"), int) else None


def gather_run_checks(run_dir: Path, given: Mapping[str, Any] | None = None
                      ) -> dict[str, Mapping[str, Any] | None]:
    from harness.checker.quorum_check import controller_cut_check
    from harness.checker.replica_logs import run_divergence

    given = dict(given or {})
    checks: dict[str, Mapping[str, Any] | None] = {}
    for name in RUN_CHECKS:
        if name in given:
            checks[name] = given[name]
        elif name in STORED:
            checks[name] = stored_run_check(run_dir, STORED[name])
        elif name == CONTROLLER_COMMIT_WHILE_CUT:
            checks[name] = controller_cut_check(run_dir / HISTORY_FILE, run_dir / QUORUM_FILE)
        elif name == DIVERGED_OFFSETS:
            checks[name] = run_divergence(run_dir)
    return checks


def with_run_checks(results: dict[str, Any], checks: Mapping[str, Mapping[str, Any] | None]
                    ) -> dict[str, Any]:
    for name in RUN_CHECKS:
        found = checks.get(name)
        if found is not None:
            results[name] = dict(found)
    return results


def check_run(run_dir: Path, expectations: Sequence[Expectation],
              given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """results.json of `run_dir` by the reference checker, with its run checks; written into
    the run dir and returned."""
    from harness.checker.reference import reference_check

    checked = reference_check(run_dir / HISTORY_FILE)
    results = with_run_checks(history_results(checked["anomalies"], checked["stats"],
                                               expectations),
                              gather_run_checks(run_dir, given))
    write_results(run_dir, results)
    return results
