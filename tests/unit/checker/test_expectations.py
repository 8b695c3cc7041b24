"""Expectations: parsing errors and verdicts (no Spark)."""

from __future__ import annotations

import pytest

from harness.checker.expectations import (
    AS_EXPECTED,
    UNEXPECTED,
    ExpectationError,
    parse_expected,
    verdict,
)


def test_parse_and_evaluate() -> None:
    exps = parse_expected({"lost-write": "> 0", "inconsistent-offset": "== 0", "duplicate": 0})
    assert [(e.anomaly, e.op, e.n) for e in exps] == [
        ("lost-write", ">", 0),
        ("inconsistent-offset", "==", 0),
        ("duplicate", "==", 0),
    ]
    assert verdict(False, {"lost-write": 3}, exps) == AS_EXPECTED
    assert verdict(True, {"lost-write": 0}, exps) == UNEXPECTED
    assert verdict(False, {"lost-write": 3, "inconsistent-offset": 1}, exps) == UNEXPECTED


@pytest.mark.parametrize("op", ["==", "!=", ">=", "<=", ">", "<"])
def test_every_operator(op: str) -> None:
    (e,) = parse_expected({"poll-skip": f"{op} 2"})
    truth = {"==": [2], "!=": [0, 3], ">=": [2, 3], "<=": [0, 2], ">": [3], "<": [0]}[op]
    assert [n for n in (0, 2, 3) if e.holds(n)] == truth


def test_without_expectations_verdict_follows_valid() -> None:
    assert verdict(True, {}, []) == AS_EXPECTED
    assert verdict(False, {"lost-write": 1}, []) == UNEXPECTED
    assert parse_expected(None) == []


@pytest.mark.parametrize(
    ("expected", "words"),
    [
        ({"lost-writes": "> 0"}, "unknown anomaly 'lost-writes'"),
        ({"lost-write": "more than 0"}, "lost-write: cannot parse 'more than 0'"),
        ({"lost-write": "> -1"}, "cannot parse"),
        ({"lost-write": ["> 0"]}, "must be a string"),
        ({"lost-write": True}, "must be a string"),
        (["lost-write"], "must be a mapping"),
    ],
)
def test_bad_expectations_name_what_is_wrong(expected, words) -> None:
    with pytest.raises(ExpectationError, match="^plan.yaml: ") as err:
        parse_expected(expected, "plan.yaml")
    assert words in str(err.value)


def test_judge_covers_lost_by_acks_and_divergence_and_names_misses() -> None:
    from harness.checker.expectations import Expectation, judge

    exps = parse_expected({"lost-write": "> 0"})
    lost = {"1": Expectation("lost:1", ">", 0), "all": Expectation("lost:all", "==", 0)}
    ok = judge(False, {"lost-write": 2}, exps, lost_by_acks={"1": 2, "all": 0},
               lost_expectations=lost)
    assert (ok.verdict, ok.misses) == (AS_EXPECTED, ())
    bad = judge(False, {"lost-write": 2}, [*exps, Expectation("diverged-offsets", ">", 0)],
                lost_by_acks={"1": 2, "all": 1}, lost_expectations=lost,
                run_checks={"diverged-offsets": 0})
    assert bad.verdict == UNEXPECTED
    assert bad.misses == ("lost acks=all == 0 (got 1)", "diverged-offsets > 0 (got 0)")
    # No expectations: the history's validity decides, and the miss says so.
    assert judge(False, {}, []).misses == ("a valid history (it is not)",)
    # A plan-built expectation (no text given) records its normalized text.
    assert Expectation("lost-write", ">", 0).text == "> 0"


def test_a_metadata_divergence_fails_the_run_unless_expected() -> None:
    from harness.checker.expectations import judge

    # The metadata check ran and found 2 differing nodes: no expectation names it, so the
    # run fails even though the history is valid.
    bad = judge(True, {}, [], run_checks={"metadata-divergence": 2})
    assert (bad.verdict, bad.misses) == (UNEXPECTED, ("metadata-divergence == 0 (got 2)",))
    # results.json's `verdict` is the history's alone (HISTORY.md: with no expectations it is
    # as-expected exactly when `valid` is), even when the plan names the metadata check.
    assert verdict(True, {}, []) == AS_EXPECTED
    assert verdict(True, {}, parse_expected({"metadata-divergence": "> 0"})) == AS_EXPECTED
    # A plan expecting it (a legacy Raft mode) passes; the anomaly part still follows `valid`.
    exps = parse_expected({"metadata-divergence": "> 0"})
    assert judge(True, {}, exps, run_checks={"metadata-divergence": 2}).verdict == AS_EXPECTED
    assert judge(False, {"lost-write": 1}, exps, run_checks={"metadata-divergence": 2}).misses == (
        "a valid history (it is not)",)
    assert judge(True, {}, exps, run_checks={"metadata-divergence": 0}).misses == (
        "metadata-divergence > 0 (got 0)",)
    # Beside an anomaly expectation, each is judged on its own count.
    both = parse_expected({"lost-write": "> 0", "metadata-divergence": "== 0"})
    for n, want in ((0, AS_EXPECTED), (1, UNEXPECTED)):
        got = judge(False, {"lost-write": 1}, both, run_checks={"metadata-divergence": n})
        assert got.verdict == want


def test_metadata_check_absent_changes_nothing_but_cannot_meet_its_expectation() -> None:
    from harness.checker.expectations import judge

    # No metadata check (the simulator, a history-only run): the verdict is as before.
    assert judge(True, {}, []).verdict == AS_EXPECTED
    exps = parse_expected({"metadata-divergence": "== 0"})
    assert judge(True, {}, exps).misses == (
        "metadata-divergence == 0 (not checked in this run)",)


def test_a_controller_commit_while_cut_is_judged_like_the_metadata_check() -> None:
    from harness.checker.expectations import judge, run_verdict

    # Found and not expected: the run fails on it alone, whatever the history says.
    bad = judge(True, {}, [], run_checks={"controller-commit-while-cut": 1,
                                          "metadata-divergence": 0})
    assert bad.misses == ("controller-commit-while-cut == 0 (got 1)",)
    # Expected as found; absent from a run that cut no controller: its expectation misses.
    exps = parse_expected({"controller-commit-while-cut": "== 0"})
    assert judge(True, {}, exps, run_checks={"controller-commit-while-cut": 0}).misses == ()
    assert judge(True, {}, exps).misses == (
        "controller-commit-while-cut == 0 (not checked in this run)",)
    # From a results.json: its own entry (count) is what run_verdict judges.
    results = {"valid": True, "anomalies": {}, "expected": {},
               "controller-commit-while-cut": {"count": 2, "by_partition": {}, "examples": []}}
    assert run_verdict(results).misses == ("controller-commit-while-cut == 0 (got 2)",)


def test_liveness_fails_the_run_unless_expected_and_old_histories_keep_their_verdict() -> None:
    from harness.checker.expectations import judge, run_verdict

    # Issue 24: an unconverged replica fails a valid run; a legacy mode may tolerate it.
    bad = judge(True, {}, [], run_checks={"unconverged-replicas": 1})
    assert (bad.verdict, bad.misses) == (UNEXPECTED, ("unconverged-replicas == 0 (got 1)",))
    tolerant = parse_expected({"unconverged-replicas": ">= 0"})
    assert judge(True, {}, tolerant, run_checks={"unconverged-replicas": 1}).verdict \
        == AS_EXPECTED
    # A results.json written before the check existed (no entry): judged as it was.
    old = {"valid": True, "anomalies": {}, "expected": {}, "verdict": AS_EXPECTED}
    assert run_verdict(old).verdict == AS_EXPECTED
    assert run_verdict({**old, "unconverged-replicas": {"count": 2}}).verdict == UNEXPECTED
