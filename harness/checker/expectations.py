"""Expectations and the verdict: the one `Expectation` type and the one verdict function.

Contract:
- An expectation is "<op> <n>" with op one of == != >= <= > < and n a non-negative integer,
  about an anomaly count (`expected` in HISTORY.md, e.g. {"lost-write": "> 0"}), a run check's
  count (RUN_CHECKS, below), or a scenario mode's lost-by-acks count (`lost:<acks>`).
  The plan loader builds them (harness/plan/loader.py, with file:line errors) and the run hands
  them to the checker as they are; `parse_expected` parses a bare mapping (`highwater check
  --expected`, or the `expected` key of a stored plan.yaml) and raises ExpectationError naming
  the bad key or expression. `parse_expression` is the grammar both use.
- `judge(valid, counts, expectations, ...)` is the one verdict function: every entry point
  (`highwater run`, `check`, `sim`, `sim explore`, `scenario`, and through those `nightly`)
  reaches it through `run_verdict` or, for a scenario's lost-by-acks, directly.
  "as-expected" when every anomaly expectation holds on the counts (with none, exactly when
  the history is valid), every lost-by-acks expectation given holds, and every run check holds;
  else "unexpected", with `misses` saying what did not hold. The run checks (RUN_CHECKS):
  `metadata-divergence` (harness.checker.metadata_check), `controller-commit-while-cut`
  (harness.checker.quorum_check: commits by a controller cut from every other voter), the liveness
  check `unconverged-replicas` (harness.checker.convergence), `diverged-offsets` (offsets two
  replicas hold with different values on disk, harness.checker.replica_logs), `unexpected-exits`
  (processes that ended without the nemesis ending them, harness.checker.exits) and, on the
  simulator only, `invariant-violations` (broker_app.sim.invariants: checked after every
  event). Each is judged when it ran (`run_checks` maps a check's name to its count, None or
  absent when it did not run): by that check's expectation when there is one, else by
  "== 0" (a finding fails the run unless the plan expects it); when it did not run, an
  expectation about it cannot hold (a miss saying so) and nothing else changes.
- `verdict` is results.json's `verdict`: the history's part alone (anomaly expectations), so
  HISTORY.md's rule holds — without expectations it is as-expected exactly when `valid` is.
- `run_verdict(results)` is the run's verdict from a results.json: that history verdict plus the
  run checks stored beside it (`run_check_counts`) against the recorded expectations;
  `highwater run`'s and `highwater check`'s exit codes and the scenario judge use it.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.checker.history import ANOMALIES

AS_EXPECTED, UNEXPECTED = "as-expected", "unexpected"
METADATA_DIVERGENCE = "metadata-divergence"
CONTROLLER_COMMIT_WHILE_CUT = "controller-commit-while-cut"
UNCONVERGED_REPLICAS = "unconverged-replicas"
DIVERGED_OFFSETS = "diverged-offsets"
INVARIANT_VIOLATIONS = "invariant-violations"
UNEXPECTED_EXITS = "unexpected-exits"
# Checks of a run beside its history, each under its own name in results.json (HISTORY.md,
# "Extending the format"): docs/metadata-divergence.md, docs/controller-cut.md,
# docs/liveness.md (unconverged-replicas: harness.checker.convergence; invariant-violations:
# the simulator's, broker_app.sim.invariants), diverged-offsets (harness.checker.replica_logs),
# unexpected-exits (harness.checker.exits).
RUN_CHECKS = (METADATA_DIVERGENCE, CONTROLLER_COMMIT_WHILE_CUT, UNCONVERGED_REPLICAS,
              DIVERGED_OFFSETS, INVARIANT_VIOLATIONS, UNEXPECTED_EXITS)
# What an `expected` mapping may name: the history's anomalies and the run checks.
EXPECTABLE = (*ANOMALIES, *RUN_CHECKS)

# The comparison operators an expression may use.
COMPARISONS: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_EXPR = re.compile(r"^\s*(==|!=|>=|<=|>|<)\s*(\d+)\s*$")


class ExpectationError(ValueError):
    """An `expected` mapping that cannot be understood; the message says which part and why."""


@dataclass(frozen=True)
class Expectation:
    anomaly: str  # an anomaly name, "metadata-divergence", "lost:<acks>", "diverged-offsets"
    op: str
    n: int
    text: str = ""  # as written (results.json's `expected` shows it); default "<op> <n>"

    def __post_init__(self) -> None:
        if not self.text:
            object.__setattr__(self, "text", f"{self.op} {self.n}")

    def holds(self, count: int) -> bool:
        return COMPARISONS[self.op](count, self.n)

    def __str__(self) -> str:
        return f"{self.op} {self.n}"


# Without an expectation about it, the metadata check must find no differing node.


def parse_expression(text: str) -> tuple[str, int] | None:
    """("<op>", n) for "<op> <n>", else None."""
    m = _EXPR.match(text)
    return (m.group(1), int(m.group(2))) if m else None


def parse_expected(expected: Any, where: str = "expected") -> list[Expectation]:
    """Parse an `expected` mapping; `where` prefixes error messages (e.g. a plan's path)."""
    if expected is None:
        return []
    if not isinstance(expected, Mapping):
        raise ExpectationError(
            f"{where}: must be a mapping of anomaly name to expression, "
            f"got {type(expected).__name__}"
        )
    out = []
    for name, text in expected.items():
        if name not in EXPECTABLE:
            raise ExpectationError(
                f"{where}: unknown anomaly {name!r}; known: {', '.join(EXPECTABLE)}"
            )
        if isinstance(text, bool) or not isinstance(text, str | int):
            raise ExpectationError(f"{where}: {name}: expression must be a string like '> 0'")
        # A bare number means "== n": a natural shorthand in YAML plans.
        parsed = parse_expression(f"== {text}" if isinstance(text, int) else text)
        if parsed is None:
            raise ExpectationError(
                f"{where}: {name}: cannot parse {text!r}; expected '<op> <n>' with op in "
                f"{' '.join(COMPARISONS)} and n a non-negative integer, e.g. '> 0'"
            )
        out.append(Expectation(name, parsed[0], parsed[1], str(text)))
    return out


@dataclass(frozen=True)
class Judgement:
    verdict: str  # as-expected | unexpected
    misses: tuple[str, ...] = field(default_factory=tuple)  # what did not hold, one phrase each


def judge(
    valid: bool,
    counts: Mapping[str, int],
    expectations: Sequence[Expectation],
    *,
    lost_by_acks: Mapping[str, int] | None = None,
    lost_expectations: Mapping[str, Expectation] | None = None,
    run_checks: Mapping[str, int | None] | None = None,
) -> Judgement:
    """The verdict on one run; see the module docstring."""
    misses: list[str] = []
    by_check = {name: [e for e in expectations if e.anomaly == name] for name in RUN_CHECKS}
    expectations = [e for e in expectations if e.anomaly not in RUN_CHECKS]
    if expectations:
        anomalies_ok = all(e.holds(counts.get(e.anomaly, 0)) for e in expectations)
    else:
        anomalies_ok = valid
    if not anomalies_ok:
        # Every anomaly expectation is named, the ones that held too: the reader sees the set.
        misses += [f"{e.anomaly} {e.text} (got {counts.get(e.anomaly, 0)})"
                   for e in expectations] or ["a valid history (it is not)"]
    lost = lost_by_acks or {}
    for acks, e in (lost_expectations or {}).items():
        if not e.holds(lost.get(acks, 0)):
            misses.append(f"lost acks={acks} {e} (got {lost.get(acks, 0)})")
    for name, wanted in by_check.items():
        got = (run_checks or {}).get(name)
        if got is None:
            misses += [f"{name} {e.text} (not checked in this run)" for e in wanted]
            continue
        for e in wanted or [Expectation(name, "==", 0)]:
            if not e.holds(got):
                misses.append(f"{name} {e.text} (got {got})")
    return Judgement(UNEXPECTED if misses else AS_EXPECTED, tuple(misses))


def verdict(valid: bool, counts: Mapping[str, int], expectations: Sequence[Expectation]) -> str:
    """results.json's `verdict`: the history's anomalies against their expectations (HISTORY.md)."""
    history = [e for e in expectations if e.anomaly not in RUN_CHECKS]
    return judge(valid, counts, history).verdict


def run_check_counts(results: Mapping[str, Any]) -> dict[str, int]:
    """results.json's run-check counts, by name, for the checks the run made."""
    found = {name: results.get(name) for name in RUN_CHECKS}
    return {name: int(f["count"]) for name, f in found.items()
            if isinstance(f, dict) and "count" in f}


def run_verdict(results: Mapping[str, Any]) -> Judgement:
    """The run's verdict from its results.json: the history and the run checks."""
    counts = {k: int(v["count"]) for k, v in results.get("anomalies", {}).items()}
    expected = parse_expected(results.get("expected") or {}, "results.json expected")
    return judge(bool(results.get("valid")), counts, expected,
                 run_checks=run_check_counts(results))
