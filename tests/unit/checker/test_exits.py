"""The run check `unexpected-exits`: its results.json shape and how the verdict judges it."""

from __future__ import annotations

from harness.checker.exits import UNEXPECTED_EXITS, exits_result
from harness.checker.expectations import AS_EXPECTED, UNEXPECTED, judge, parse_expected


def test_shape_counts_each_exit_by_node() -> None:
    lines = ["broker-2 exited on its own (exit code 1, at t1)",
             "broker-2 exited on its own (exit code 1, at t2)",
             "broker-3 exited on its own at 4.0 s: boom"]
    r = exits_result(lines)
    assert r == {"count": 3, "by_node": {"broker-2": 2, "broker-3": 1}, "examples": lines}
    assert exits_result([]) == {"count": 0, "by_node": {}, "examples": []}
    assert len(exits_result([f"broker-1 exit {i}" for i in range(30)])["examples"]) == 10


def test_an_exit_fails_a_run_unless_the_plan_expects_it() -> None:
    one = {UNEXPECTED_EXITS: 1}
    assert judge(True, {}, [], run_checks=one).verdict == UNEXPECTED
    assert judge(True, {}, [], run_checks={UNEXPECTED_EXITS: 0}).verdict == AS_EXPECTED
    expects = parse_expected({UNEXPECTED_EXITS: "> 0"}, "test")
    assert judge(True, {}, expects, run_checks=one).verdict == AS_EXPECTED
    assert judge(True, {}, expects, run_checks={UNEXPECTED_EXITS: 0}).verdict == UNEXPECTED
