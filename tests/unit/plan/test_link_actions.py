"""The Toxiproxy link actions (blackhole, reset, slice, limit-data) parse like latency and
bandwidth do, and a bad one fails with the plan file's line and the field's path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.plan import PlanError, load_plan

from .conftest import BASE

WritePlan = Callable[[str], Path]

OLD = "    action: kill\n    target: {leader: t-0}\n    duration: 3\n"


def _plan_with(step: str) -> str:
    assert OLD in BASE
    return BASE.replace(OLD, step)


def test_new_link_actions_parse_with_defaults(write_plan: WritePlan) -> None:
    text = BASE + (
        "  - name: hole\n    after: 1\n    action: blackhole\n"
        "    from: {leader: t-0}\n    to: rest\n    duration: 4\n"
        "  - name: rst\n    after: 1\n    action: reset\n    from: client\n"
        "    to: {broker: 2}\n    after_ms: 50\n    duration: 2\n"
        "  - name: cut\n    after: 1\n    action: slice\n    from: rest\n"
        "    to: {leader: t-1}\n    bytes: 8\n    duration: 2\n"
        "  - name: cap\n    after: 1\n    action: limit-data\n    from: {broker: 1}\n"
        "    to: client\n    bytes: 4096\n"
    )
    plan = load_plan(write_plan(text))
    hole, rst, cut, cap = plan.faults[1:]
    assert (hole.action, hole.params, hole.duration) == ("blackhole", {"close_after_ms": 0}, 4)
    assert hole.src is not None and hole.src.kind == "leader" and hole.dst.kind == "rest"
    assert rst.params == {"after_ms": 50}
    assert cut.params == {"bytes": 8, "variation": 0, "delay_us": 0}
    assert (cap.params, cap.duration) == ({"bytes": 4096}, None)


CASES = [
    ("slice needs bytes", "    action: slice\n    from: client\n    to: {broker: 1}\n",
     "- name: first", "faults[0].bytes", "action 'slice' needs bytes"),
    ("slice bytes >= 1", "    action: slice\n    from: client\n    to: {broker: 1}\n"
     "    bytes: 0\n", "bytes: 0", "faults[0].bytes", ">= 1"),
    ("limit-data bytes is an int", "    action: limit-data\n    from: client\n"
     "    to: {broker: 1}\n    bytes: lots\n", "bytes: lots", "faults[0].bytes",
     "expected an integer"),
    ("reset takes no ms", "    action: reset\n    from: client\n    to: {broker: 1}\n"
     "    ms: 5\n", "ms: 5", "faults[0].ms", "unknown key"),
    ("blackhole needs a direction", "    action: blackhole\n    target: {broker: 1}\n",
     "target:", "faults[0].target", "action 'blackhole' takes no target"),
    ("blackhole close_after_ms not negative", "    action: blackhole\n    from: client\n"
     "    to: {broker: 1}\n    close_after_ms: -1\n", "close_after_ms", "faults[0].close_after_ms",
     ">= 0"),
]


@pytest.mark.parametrize(("step", "line_of", "field", "fragment"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_link_action_names_line_and_field(write_plan: WritePlan, step: str, line_of: str,
                                              field: str, fragment: str) -> None:
    text = _plan_with(step)
    path = write_plan(text)
    with pytest.raises(PlanError) as info:
        load_plan(path)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if line_of in t)
    assert str(info.value).startswith(f"{path}:{line}: {field}: "), str(info.value)
    assert fragment in str(info.value)


def test_random_nemesis_may_draw_the_new_link_actions(write_plan: WritePlan) -> None:
    from harness.plan.random_nemesis import generate

    text = BASE.replace(OLD, "    action: kill\n    target: {leader: t-0}\n").replace(
        "faults:\n  - name: first\n    at: 5\n    action: kill\n    target: {leader: t-0}\n",
        "nemesis: {mode: random, seed: 3, kinds: [blackhole, reset, slice, limit-data], "
        "targets: [leader], interval_s: 1, fault_duration_s: 1}\n")
    plan = load_plan(write_plan(text))
    steps = generate(plan, duration_s=30)
    assert {s.action for s in steps} == {"blackhole", "reset", "slice", "limit-data"}
    for s in steps:
        assert s.src is not None and s.dst is not None and s.duration is not None
    sliced = next(s for s in steps if s.action == "slice")
    assert sliced.params == {"bytes": 64, "variation": 0, "delay_us": 10}
